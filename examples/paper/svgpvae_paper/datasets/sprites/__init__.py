r"""SPRITES-like cartoon characters (the SVGP-VAE paper's third experiment).

The paper (Jazbec et al., AISTATS 2021, following Casale et al. 2018) uses the
LPC SPRITES data: 1296 cartoon characters ("styles"), each drawn in 72 poses
(9 actions x 8 frames), 64 x 64 RGB. Models train on 1000 characters with 50
random poses each (N = 50,000 images) and are tested on the 296 unseen
characters: condition on 36 poses of a test character, generate the other 36.

The real sprite sheets cannot be downloaded in every environment, so this
package offers two sources of the *same* :class:`SpritesDataset`:

* :func:`sprites` -- a procedural generator of little cartoon people drawn
  with numpy rasterisation of simple shapes (see :mod:`.raster` and :mod:`.render`);
* :func:`load_sprites_arrays` -- a loader for users who have the real arrays
  (see the on-disk layout in :mod:`.io`).

Modules (each imports only those above it):

=============  ==============================================================
``styles``     character styles: attribute options, :class:`SpriteStyle`,
               :func:`character_styles`
``palettes``   the 16 palette slots of a label map and per-style palettes
``poses``      pose layout (:data:`ACTIONS`, :func:`pose_index`) and skeletons
``raster``     rasteriser: pose + shape attributes -> label map (cached)
``render``     label maps + palettes -> frames (:func:`render_sprites`)
``scoring``    style scores of generated frames from the true label maps and
               palettes (:func:`style_accuracy`, :func:`label_maps`)
``dataset``    :class:`SpritesDataset`, splits and seeding, :func:`sprites`
``io``         real arrays on disk (:func:`load_sprites_arrays`, :func:`save_sprites_arrays`)
``plotting``   :func:`save_sprite_sheet`
``batches``    SVGP-VAE training batches and initialisations
               (:func:`character_batches`, :func:`mean_frames_per_pose`,
               :func:`pca_pose_vectors`, :func:`init_sprites_inducing`)
=============  ==============================================================
"""

from .batches import character_batches, init_sprites_inducing, mean_frames_per_pose, pca_pose_vectors
from .dataset import SpritesDataset, sprites
from .io import load_sprites_arrays, save_sprites_arrays
from .palettes import _SHADE as _SHADE
from .palettes import _palettes as _palettes
from .plotting import save_sprite_sheet
from .poses import ACTIONS, FRAMES_PER_ACTION, IMAGE_SIZE, NUM_POSES, pose_index
from .raster import _shape_label_maps as _shape_label_maps
from .render import render_sprite, render_sprites
from .scoring import (
    COLOUR_ATTRIBUTES,
    STYLE_ATTRIBUTES,
    colour_options,
    hair_shape_candidates,
    label_maps,
    style_accuracy,
    style_accuracy_summary,
)
from .styles import _BOTTOM as _BOTTOM
from .styles import _HAIR as _HAIR
from .styles import _SKIN as _SKIN
from .styles import _TOP as _TOP
from .styles import (
    BOTTOM_COLOURS,
    BOTTOM_SHAPES,
    HAIR_COLOURS,
    HAIR_SHAPES,
    NUM_STYLES,
    SKIN_TONES,
    TOP_COLOURS,
    TOP_SHAPES,
    SpriteStyle,
    character_styles,
)

__all__ = [
    "IMAGE_SIZE",
    "ACTIONS",
    "FRAMES_PER_ACTION",
    "NUM_POSES",
    "SKIN_TONES",
    "HAIR_COLOURS",
    "HAIR_SHAPES",
    "TOP_COLOURS",
    "TOP_SHAPES",
    "BOTTOM_COLOURS",
    "BOTTOM_SHAPES",
    "NUM_STYLES",
    "SpriteStyle",
    "SpritesDataset",
    "pose_index",
    "character_styles",
    "render_sprite",
    "render_sprites",
    "COLOUR_ATTRIBUTES",
    "STYLE_ATTRIBUTES",
    "label_maps",
    "colour_options",
    "hair_shape_candidates",
    "style_accuracy",
    "style_accuracy_summary",
    "sprites",
    "load_sprites_arrays",
    "save_sprites_arrays",
    "save_sprite_sheet",
    "character_batches",
    "mean_frames_per_pose",
    "pca_pose_vectors",
    "init_sprites_inducing",
]
