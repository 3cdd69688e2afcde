"""Palettes: the 16 colour slots of a label map and each character's colours for them.

A label map (:mod:`~svgpvae_paper.datasets.sprites.raster`) names a palette
slot per pixel; a character's palette maps the slots to RGB (0..255, exact in
uint8). Skin, hair, top and bottom come from the character's style, each with
a darker shade (far limbs, hair texture); outline, shoes, eyes and props are
the same for everyone.
"""

from __future__ import annotations

import numpy as np

from .styles import _BOTTOM, _HAIR, _SKIN, _TOP

# Palette slots of a label map.
_BG, _OUTLINE, _SKIN_L, _SKIN_D, _HAIR_L, _HAIR_D, _TOP_L, _TOP_D = range(8)
_BOT_L, _BOT_D, _SHOE_L, _SHOE_D, _EYE, _METAL, _WOOD, _MAGIC = range(8, 16)
_NUM_SLOTS = 16
_SHADE = 0.72  # far limbs are darker so that they read as "behind"
_CONSTANT_COLOURS = {
    _OUTLINE: (30, 24, 30),
    _SHOE_L: (92, 54, 30),
    _SHOE_D: (66, 38, 22),
    _EYE: (24, 24, 40),
    _METAL: (206, 212, 226),
    _WOOD: (140, 92, 46),
    _MAGIC: (255, 236, 110),
}
_DEFAULT_BACKGROUND = (255, 255, 255)


def _palettes(styles: np.ndarray, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """``[n, 16, 3]`` uint8 palettes for ``[n, 7]`` style attributes."""
    styles = np.asarray(styles, dtype=np.int64).reshape(-1, 7)
    n = styles.shape[0]
    pal = np.zeros((n, _NUM_SLOTS, 3), dtype=np.float64)
    pal[:, _BG] = background
    for slot, colour in _CONSTANT_COLOURS.items():
        pal[:, slot] = colour
    for light, dark, table, col in (
        (_SKIN_L, _SKIN_D, _SKIN, 0),
        (_HAIR_L, _HAIR_D, _HAIR, 1),
        (_TOP_L, _TOP_D, _TOP, 3),
        (_BOT_L, _BOT_D, _BOTTOM, 5),
    ):
        colours = np.array(list(table.values()), dtype=np.float64)[styles[:, col]]
        pal[:, light] = colours
        pal[:, dark] = colours * _SHADE
    return np.round(pal).astype(np.uint8)
