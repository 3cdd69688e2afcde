r"""Character styles of the procedural SPRITES: seven discrete attributes per character.

Characters (styles)
-------------------
A style is a :class:`SpriteStyle`: seven discrete attributes, each an index
into the option names below.

=================  ====================================================
attribute          options
=================  ====================================================
``skin``           :data:`SKIN_TONES` (6)
``hair_colour``    :data:`HAIR_COLOURS` (6)
``hair_shape``     :data:`HAIR_SHAPES` (5: short, long, spiky, bun, afro)
``top_colour``     :data:`TOP_COLOURS` (6)
``top_shape``      :data:`TOP_SHAPES` (3: shirt, vest, long sleeves)
``bottom_colour``  :data:`BOTTOM_COLOURS` (6)
``bottom_shape``   :data:`BOTTOM_SHAPES` (3: trousers, shorts, skirt)
=================  ====================================================

That is :data:`NUM_STYLES` = 6 * 6 * 5 * 6 * 3 * 6 * 3 = 58,320 distinct
characters; :func:`character_styles` takes the first ``num_characters`` of a
seeded random permutation of them, so the styles are distinct by construction
and ``character_styles(n, seed)`` is a prefix of ``character_styles(m, seed)``
for ``n <= m``.

Seeding: the first of the three random streams described in
:mod:`svgpvae_paper.datasets.sprites.dataset` (*Splits and seeding*) permutes the styles.
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

import numpy as np

__all__ = [
    "SKIN_TONES",
    "HAIR_COLOURS",
    "HAIR_SHAPES",
    "TOP_COLOURS",
    "TOP_SHAPES",
    "BOTTOM_COLOURS",
    "BOTTOM_SHAPES",
    "NUM_STYLES",
    "SpriteStyle",
    "character_styles",
]

# ---------------------------------------------------------------------------
# Style attributes. Colours are 0..255 so that palettes are exact in uint8.
# ---------------------------------------------------------------------------
_SKIN = {
    "light": (255, 224, 196),
    "peach": (241, 190, 150),
    "tan": (214, 156, 108),
    "brown": (156, 102, 64),
    "dark": (96, 62, 42),
    "green": (150, 196, 110),  # LPC has orcs; also makes skin tones more separable
}
_HAIR = {
    "brown": (110, 64, 30),
    "blonde": (244, 206, 86),
    "ginger": (210, 92, 36),
    "white": (226, 226, 232),
    "black": (44, 40, 52),
    "pink": (240, 120, 180),
}
_TOP = {
    "red": (206, 48, 48),
    "blue": (52, 100, 210),
    "green": (60, 160, 80),
    "yellow": (236, 200, 50),
    "purple": (134, 70, 170),
    "white": (236, 236, 236),
}
_BOTTOM = {
    "navy": (40, 52, 110),
    "brown": (120, 80, 46),
    "charcoal": (62, 62, 70),
    "grey": (150, 150, 160),
    "olive": (104, 118, 52),
    "khaki": (200, 176, 120),
}
SKIN_TONES: Tuple[str, ...] = tuple(_SKIN)
HAIR_COLOURS: Tuple[str, ...] = tuple(_HAIR)
HAIR_SHAPES: Tuple[str, ...] = ("short", "long", "spiky", "bun", "afro")
TOP_COLOURS: Tuple[str, ...] = tuple(_TOP)
TOP_SHAPES: Tuple[str, ...] = ("shirt", "vest", "long_sleeves")
BOTTOM_COLOURS: Tuple[str, ...] = tuple(_BOTTOM)
BOTTOM_SHAPES: Tuple[str, ...] = ("trousers", "shorts", "skirt")

_ATTRIBUTE_SIZES = (
    len(SKIN_TONES),
    len(HAIR_COLOURS),
    len(HAIR_SHAPES),
    len(TOP_COLOURS),
    len(TOP_SHAPES),
    len(BOTTOM_COLOURS),
    len(BOTTOM_SHAPES),
)
NUM_STYLES = int(np.prod(_ATTRIBUTE_SIZES))  # 58,320


class SpriteStyle(NamedTuple):
    """One character: indices into the attribute option tuples."""

    skin: int
    hair_colour: int
    hair_shape: int
    top_colour: int
    top_shape: int
    bottom_colour: int
    bottom_shape: int

    def describe(self) -> str:
        """Human-readable summary, e.g. ``'tan skin, blonde bun hair, ...'``."""
        return (
            f"{SKIN_TONES[self.skin]} skin, {HAIR_COLOURS[self.hair_colour]} "
            f"{HAIR_SHAPES[self.hair_shape]} hair, {TOP_COLOURS[self.top_colour]} "
            f"{TOP_SHAPES[self.top_shape]}, {BOTTOM_COLOURS[self.bottom_colour]} "
            f"{BOTTOM_SHAPES[self.bottom_shape]}"
        )


# ---------------------------------------------------------------------------
# Styles
# ---------------------------------------------------------------------------
def _streams(seed: int):
    """Independent generators for styles, character split and pose split."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def _decode_styles(codes: np.ndarray) -> np.ndarray:
    """Mixed-radix decode of style codes to ``[n, 7]`` attribute indices."""
    return np.stack(np.unravel_index(codes, _ATTRIBUTE_SIZES), axis=-1).astype(np.int64)


def _style_array(num_characters: int, seed: int) -> np.ndarray:
    if not 1 <= num_characters <= NUM_STYLES:
        raise ValueError(f"num_characters must be in [1, {NUM_STYLES}], got {num_characters}")
    # A full permutation (not rng.choice) makes smaller sets prefixes of larger ones.
    codes = _streams(seed)[0].permutation(NUM_STYLES)[:num_characters]
    return _decode_styles(codes)


def character_styles(num_characters: int = 1296, seed: int = 0) -> Tuple[SpriteStyle, ...]:
    """Return ``num_characters`` distinct styles, deterministically from ``seed``.

    :param num_characters: how many characters (at most :data:`NUM_STYLES`).
    :param seed: seed of the style permutation (see :mod:`~svgpvae_paper.datasets.sprites.dataset`).
    :returns: tuple of :class:`SpriteStyle`, all distinct.
    """
    return tuple(SpriteStyle(*map(int, row)) for row in _style_array(num_characters, seed))
