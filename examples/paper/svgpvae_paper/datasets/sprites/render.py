r"""Rendering: label maps + palettes -> RGB frames.

Because the label map depends only on the three *shape* attributes and the
pose (5 * 3 * 3 * 72 = 3240 maps of 64 x 64 uint8 = 13 MB), while colours
enter only through a 16-colour palette per style, rendering a frame is one
palette look-up. The label maps are built lazily per shape combination
(about 0.1 s each) and cached, so the dataset is *rendered on demand*:
:meth:`SpritesDataset.frames_for` renders any set of (character, pose) pairs
directly into the requested dtype, and the full ``[1296, 72, 64, 64, 3]``
array (1.15 GB as uint8, 4.59 GB as float32) exists only when explicitly
asked for via :meth:`SpritesDataset.all_frames` / :attr:`SpritesDataset.frames`.
Training can keep the 50,000 training images as uint8 (614 MB; 2.46 GB as
float32) and convert minibatches to float, or, cheaper still, render each
minibatch on the fly (a batch of 500 float32 frames takes ~30 ms).

Measured on a 2-core CPU: building all 45 shape combinations takes ~3 s;
rendering all 1296 x 72 frames then takes ~9 s as uint8 (1.15 GB output,
peak RSS ~1.3 GB above the interpreter) and ~24 s as float32 (4.59 GB). The
whole paper protocol therefore runs within ~1-2 GB if frames are kept as
uint8 or rendered per batch.

Palette colours are multiples of 1/255, so ``frames_for(..., dtype=uint8)``
is lossless and ``uint8 / 255`` reproduces the float32 frames bit for bit.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from .palettes import _DEFAULT_BACKGROUND, _NUM_SLOTS, _palettes
from .poses import IMAGE_SIZE, NUM_POSES
from .raster import _shape_label_maps
from .styles import _ATTRIBUTE_SIZES

__all__ = ["render_sprites", "render_sprite"]


def _label_bank(styles: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Label maps for the shape combinations used by ``styles``.

    :returns: ``(bank [K, 72, 64, 64] uint8, combo [n] index into bank)``.
    """
    shapes = styles[:, [2, 4, 6]]
    combos, combo_of = np.unique(shapes, axis=0, return_inverse=True)
    bank = np.stack([_shape_label_maps(*map(int, c)) for c in combos])
    return bank, combo_of.reshape(-1)


def _render_into(
    out: np.ndarray, palettes: np.ndarray, bank: np.ndarray, combo: np.ndarray, poses: np.ndarray, chunk: int = 2048
) -> None:
    """Fill ``out[i] = palettes[i][bank[combo[i], poses[i]]]`` in chunks (bounded temporaries)."""
    for s in range(0, out.shape[0], chunk):
        e = min(s + chunk, out.shape[0])
        labels = bank[combo[s:e], poses[s:e]]  # [b, 64, 64]
        flat = palettes[s:e].reshape(-1, 3)
        offsets = (np.arange(e - s) * _NUM_SLOTS)[:, None, None]
        out[s:e] = flat[labels.astype(np.intp) + offsets]


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be uint8, float32 or float64, got {dtype}")
    return dtype


def _palette_as(palettes_u8: np.ndarray, dtype) -> np.ndarray:
    if dtype == np.uint8:
        return palettes_u8
    # Divide in float32 so that uint8 / 255 (the loader's conversion) matches bit for bit.
    return (palettes_u8.astype(np.float32) / np.float32(255.0)).astype(dtype)


def render_sprites(styles, poses, *, dtype=np.float32, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """Render paired ``styles[i]`` in ``poses[i]``.

    :param styles: ``[n, 7]`` attribute indices or a sequence of :class:`SpriteStyle`.
    :param poses: ``[n]`` pose indices in ``0 .. 71`` (a scalar is broadcast).
    :param dtype: ``float32`` / ``float64`` (values in [0, 1]) or ``uint8``.
    :param background: RGB background colour, 0..255.
    :returns: ``[n, 64, 64, 3]`` images.
    """
    styles = np.asarray(styles, dtype=np.int64).reshape(-1, 7)
    poses = np.broadcast_to(np.asarray(poses, dtype=np.int64), (styles.shape[0],))
    _check_styles(styles)
    if np.any((poses < 0) | (poses >= NUM_POSES)):
        raise ValueError(f"pose indices must be in [0, {NUM_POSES})")
    dtype = _check_dtype(dtype)
    bank, combo = _label_bank(styles)
    out = np.empty((styles.shape[0], IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
    _render_into(out, _palette_as(_palettes(styles, background), dtype), bank, combo, poses)
    return out


def _check_styles(styles: np.ndarray) -> None:
    if np.any(styles < 0) or np.any(styles >= np.array(_ATTRIBUTE_SIZES)):
        raise ValueError(f"style attributes out of range; sizes are {_ATTRIBUTE_SIZES}")


def render_sprite(style: Sequence[int], pose: int, *, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """Render one character in one pose as a ``[64, 64, 3]`` float32 image in [0, 1].

    :param style: a :class:`SpriteStyle` (or 7 attribute indices).
    :param pose: pose index, ``pose_index(action, frame)``.
    """
    return render_sprites([tuple(style)], [pose], background=background)[0]
