r"""Style scores of generated frames: what the generator knows about the true frames.

The generator knows every frame's label map (:mod:`.raster`) and palette
(:mod:`.palettes`), so whether a generated frame carries its character's style
can be scored attribute by attribute with the generic metrics of
:mod:`svgpvae_paper.metrics`:

* the four colour attributes (:data:`COLOUR_ATTRIBUTES`: skin, hair, top and
  bottom colour) with :func:`~svgpvae_paper.metrics.palette_colour_accuracy`:
  the mean generated colour over the pixels that the *true* label map assigns
  to the attribute (its light and its shaded slot) against the mean colour
  each of the six options would have rendered there (the shaded slot is the
  base colour times ``_SHADE``, rounded, exactly as rendered); six options,
  chance 1/6;
* the hair shape with :func:`~svgpvae_paper.metrics.nearest_rendering_accuracy`:
  the generated frame against the true frame re-drawn with each of the five
  hair shapes (pose, palette, top and bottom shape true); nearest in squared
  error wins; chance 1/5. The five hair shapes differ on 30 or more pixels in
  every pose and shape combination, so an exact frame is never ambiguous.
  A wrong hair *colour* also moves a frame away from every candidate, so this
  score is "shape given the true colours", not a colour-blind shape score.

:func:`style_accuracy` scores frames given their styles and poses;
:meth:`SpritesDataset.style_accuracy <svgpvae_paper.datasets.sprites.SpritesDataset.style_accuracy>`
given character ids.
"""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from svgpvae_paper.metrics import ChoiceAccuracy, nearest_rendering_accuracy, palette_colour_accuracy

from .palettes import (
    _BOT_D,
    _BOT_L,
    _DEFAULT_BACKGROUND,
    _HAIR_D,
    _HAIR_L,
    _SKIN_D,
    _SKIN_L,
    _TOP_D,
    _TOP_L,
    _palettes,
)
from .poses import IMAGE_SIZE, NUM_POSES
from .render import _check_styles, _label_bank, _palette_as, render_sprites
from .styles import _ATTRIBUTE_SIZES, SpriteStyle

__all__ = [
    "COLOUR_ATTRIBUTES",
    "STYLE_ATTRIBUTES",
    "label_maps",
    "colour_options",
    "hair_shape_candidates",
    "style_accuracy",
    "style_accuracy_summary",
]

COLOUR_ATTRIBUTES: Tuple[str, ...] = ("skin", "hair_colour", "top_colour", "bottom_colour")
STYLE_ATTRIBUTES: Tuple[str, ...] = COLOUR_ATTRIBUTES + ("hair_shape",)
_SLOTS = {
    "skin": (_SKIN_L, _SKIN_D),
    "hair_colour": (_HAIR_L, _HAIR_D),
    "top_colour": (_TOP_L, _TOP_D),
    "bottom_colour": (_BOT_L, _BOT_D),
}
_COLUMN = {name: SpriteStyle._fields.index(name) for name in STYLE_ATTRIBUTES}


def _styles_and_poses(styles, poses) -> Tuple[np.ndarray, np.ndarray]:
    """``styles [..., 7]`` and ``poses [...]`` as int64 arrays of the same leading shape (checked)."""
    styles = np.asarray(styles, dtype=np.int64)
    poses = np.asarray(poses, dtype=np.int64)
    if styles.ndim < 1 or styles.shape[-1] != len(_ATTRIBUTE_SIZES):
        raise ValueError(f"styles must have shape [..., {len(_ATTRIBUTE_SIZES)}]; got {styles.shape}")
    lead = np.broadcast_shapes(styles.shape[:-1], poses.shape)
    styles = np.broadcast_to(styles, lead + styles.shape[-1:])
    poses = np.broadcast_to(poses, lead)
    _check_styles(styles)
    if np.any((poses < 0) | (poses >= NUM_POSES)):
        raise ValueError(f"pose indices must be in [0, {NUM_POSES})")
    return styles, poses


def label_maps(styles, poses) -> np.ndarray:
    """True label maps (palette slots) of ``styles [..., 7]`` in ``poses [...]`` (broadcast).

    :returns: ``[..., 64, 64]`` uint8.
    """
    styles, poses = _styles_and_poses(styles, poses)
    lead = poses.shape
    flat_styles, flat_poses = styles.reshape(-1, styles.shape[-1]), poses.reshape(-1)
    if flat_poses.size == 0:
        return np.zeros(lead + (IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    bank, combo = _label_bank(flat_styles)
    return bank[combo, flat_poses].reshape(lead + (IMAGE_SIZE, IMAGE_SIZE))


def colour_options(attribute: str) -> Tuple[np.ndarray, np.ndarray]:
    """The palette slots of a colour attribute and the colours of its options in them.

    :param attribute: one of :data:`COLOUR_ATTRIBUTES`.
    :returns: ``(slots [2] (light, shaded), choices [6, 2, 3] float64)``: option
        ``k``'s colour in each slot, in [0, 1] exactly as the float32 frames hold
        it (``uint8 / 255``), shade rounding included.
    """
    if attribute not in _SLOTS:
        raise ValueError(f"attribute must be one of {COLOUR_ATTRIBUTES}; got {attribute!r}")
    column = _COLUMN[attribute]
    styles = np.zeros((_ATTRIBUTE_SIZES[column], len(_ATTRIBUTE_SIZES)), np.int64)
    styles[:, column] = np.arange(_ATTRIBUTE_SIZES[column])
    slots = np.array(_SLOTS[attribute], np.int64)
    palettes = _palette_as(_palettes(styles), np.float32).astype(np.float64)  # [6, 16, 3]
    return slots, palettes[:, slots]


def hair_shape_candidates(styles, poses, *, background=_DEFAULT_BACKGROUND, dtype=np.float32) -> np.ndarray:
    """Each frame re-drawn with each of the five hair shapes, everything else as given.

    :returns: ``[..., 5, 64, 64, 3]`` (``dtype`` as in :func:`render_sprites`).
    """
    styles, poses = _styles_and_poses(styles, poses)
    lead = poses.shape
    K = _ATTRIBUTE_SIZES[_COLUMN["hair_shape"]]
    variants = np.repeat(styles.reshape(-1, 1, styles.shape[-1]), K, axis=1)  # [n, K, 7]
    variants[:, :, _COLUMN["hair_shape"]] = np.arange(K)
    frames = render_sprites(
        variants.reshape(-1, styles.shape[-1]), np.repeat(poses.reshape(-1), K), dtype=dtype, background=background
    )
    return frames.reshape(lead + (K, IMAGE_SIZE, IMAGE_SIZE, 3))


def style_accuracy(
    generated, styles, poses, *, hair_shape: bool = True, background=_DEFAULT_BACKGROUND
) -> Dict[str, ChoiceAccuracy]:
    """Score the style of generated frames of known ``styles`` in known ``poses``.

    :param generated: ``[..., 64, 64, 3]`` frames, floats in [0, 1] or uint8 (divided by 255).
    :param styles: ``[..., 7]`` the true characters' attributes (broadcast against ``poses``).
    :param poses: ``[...]`` the true pose indices.
    :param hair_shape: also score the hair shape (renders 5 candidates per frame, in chunks).
    :param background: the background the frames were rendered on (hair-shape candidates).
    :returns: ``{attribute: ChoiceAccuracy}`` for :data:`COLOUR_ATTRIBUTES` (and ``"hair_shape"``);
        see the module docstring for the rules.
    """
    generated = np.asarray(generated)
    if generated.dtype == np.uint8:
        generated = generated.astype(np.float32) / np.float32(255.0)
    styles, poses = _styles_and_poses(styles, poses)
    if generated.shape != poses.shape + (IMAGE_SIZE, IMAGE_SIZE, 3):
        raise ValueError(
            f"generated must have shape {poses.shape + (IMAGE_SIZE, IMAGE_SIZE, 3)} "
            f"(the poses' shape + frame); got {generated.shape}"
        )
    maps = label_maps(styles, poses)
    results = {}
    for name in COLOUR_ATTRIBUTES:
        slots, choices = colour_options(name)
        results[name] = palette_colour_accuracy(generated, maps, slots, choices, styles[..., _COLUMN[name]])
    if hair_shape:
        flat_styles, flat_poses = styles.reshape(-1, styles.shape[-1]), poses.reshape(-1)
        results["hair_shape"] = nearest_rendering_accuracy(
            generated,
            lambda rows: hair_shape_candidates(flat_styles[rows], flat_poses[rows], background=background),
            styles[..., _COLUMN["hair_shape"]],
        )
    return results


def style_accuracy_summary(results: Dict[str, ChoiceAccuracy]) -> dict:
    """JSON-ready ``{attribute: ChoiceAccuracy.summary()}`` plus ``"mean_colour_accuracy"``
    (the unweighted mean of the colour attributes' accuracies)."""
    summary = {name: result.summary() for name, result in results.items()}
    colour = [results[name].accuracy for name in COLOUR_ATTRIBUTES if name in results and results[name].num_scored]
    summary["mean_colour_accuracy"] = float(np.mean(colour)) if colour else None
    return summary
