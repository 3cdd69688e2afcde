r"""The :class:`SpritesDataset` (SVGP-VAE train/test protocol) and the procedural :func:`sprites`.

Splits and seeding
------------------
:func:`sprites` and :func:`load_sprites_arrays` derive three independent
random streams from ``np.random.SeedSequence(seed)`` (spawn keys 0, 1, 2):
the style permutation, the train/test character split, and the pose splits.
Each training character gets ``train_poses_per_character`` (50) distinct
random poses; each test character gets its own random split of the 72 poses
into ``num_context_poses`` (36) context and 72 - 36 target poses. Index arrays
are sorted along their last axis and read-only.

Validation characters (``num_validation_characters`` > 0) take the styles that
follow the first ``num_characters`` in the style permutation, so they are
disjoint from the training and the test characters and the train/test splits
are those of the dataset without them. Their context/target pose splits come
from a fourth stream (spawn key 3), drawn like the test characters'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np

from .palettes import _DEFAULT_BACKGROUND, _palettes
from .poses import IMAGE_SIZE, NUM_POSES
from .render import _check_dtype, _label_bank, _palette_as, _render_into
from .scoring import label_maps as _label_maps
from .scoring import style_accuracy as _style_accuracy
from .styles import NUM_STYLES, SpriteStyle, _streams, _style_array

__all__ = ["SpritesDataset", "sprites"]


class _ProceduralFrames:
    """Frame source rendering on demand from styles."""

    def __init__(self, styles: np.ndarray, background):
        self.styles = styles
        self.background = tuple(int(v) for v in background)
        self.palettes = _palettes(styles, background)
        self._bank = None

    def __call__(self, chars: np.ndarray, poses: np.ndarray, dtype) -> np.ndarray:
        if self._bank is None:
            # Build label maps for all shape combinations of this dataset once.
            self._bank = _label_bank(self.styles)
        bank, combo = self._bank
        out = np.empty(chars.shape + (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
        _render_into(
            out.reshape(-1, IMAGE_SIZE, IMAGE_SIZE, 3),
            _palette_as(self.palettes, dtype)[chars.reshape(-1)],
            bank,
            combo[chars.reshape(-1)],
            poses.reshape(-1),
        )
        return out


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class SpritesDataset:
    """SPRITES characters x poses with the SVGP-VAE train/test protocol.

    Frames are produced on demand by :meth:`frames_for`; nothing of size
    ``[C, 72, 64, 64, 3]`` is held unless :meth:`all_frames` or :attr:`frames`
    is called.

    :ivar num_characters: ``C``, the validation characters included.
    :ivar train_characters: ``[n_train]`` character ids (sorted).
    :ivar test_characters: ``[n_test]`` character ids (sorted, disjoint from train).
    :ivar train_poses: ``[n_train, P]`` distinct pose indices per training character
        (row ``i`` belongs to ``train_characters[i]``).
    :ivar test_context_poses: ``[n_test, Q]`` observed poses per test character.
    :ivar test_target_poses: ``[n_test, 72 - Q]`` the remaining poses, to be generated.
    :ivar attributes: ``[C, A]`` integer labels (procedural: the 7 style
        attributes, see :class:`SpriteStyle`) or ``None``.
    :ivar source: ``"procedural"`` or the directory the arrays were loaded from.
    :ivar validation_characters: ``[n_val]`` held-out character ids for choosing settings
        without looking at the test characters (procedural only; may be empty). Character ids
        run over ``[0, num_characters)``, validation characters included.
    :ivar validation_context_poses: ``[n_val, Q]``; ``validation_target_poses``: ``[n_val, 72 - Q]``.
    """

    num_characters: int
    train_characters: np.ndarray
    test_characters: np.ndarray
    train_poses: np.ndarray
    test_context_poses: np.ndarray
    test_target_poses: np.ndarray
    attributes: Optional[np.ndarray]
    source: str
    _frames: object = field(repr=False)
    validation_characters: np.ndarray = field(default_factory=lambda: _readonly(np.zeros(0, np.int64)))
    validation_context_poses: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((0, 0), np.int64)))
    validation_target_poses: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((0, 0), np.int64)))

    num_poses = NUM_POSES
    image_shape = (IMAGE_SIZE, IMAGE_SIZE, 3)

    def style(self, character: int) -> SpriteStyle:
        """The :class:`SpriteStyle` of a procedural character."""
        if self.source != "procedural":
            raise ValueError("styles exist only for procedural data; see .attributes")
        return SpriteStyle(*map(int, self.attributes[character]))

    def frames_for(self, characters, poses, *, dtype=np.float32) -> np.ndarray:
        """Frames of ``(characters, poses)`` pairs, broadcast against each other.

        :param characters: integer array of character ids.
        :param poses: integer array of pose indices, broadcastable with ``characters``
            (e.g. ``characters[:, None]`` with ``train_poses``).
        :param dtype: ``float32`` (default; values in [0, 1]), ``float64`` or ``uint8``.
        :returns: ``broadcast_shape + (64, 64, 3)``.
        """
        c, p = np.broadcast_arrays(np.asarray(characters, dtype=np.int64), np.asarray(poses, dtype=np.int64))
        if np.any((c < 0) | (c >= self.num_characters)):
            raise ValueError(f"character ids must be in [0, {self.num_characters})")
        if np.any((p < 0) | (p >= NUM_POSES)):
            raise ValueError(f"pose indices must be in [0, {NUM_POSES})")
        return self._frames(c, p, _check_dtype(dtype))

    def _procedural_pairs(self, characters, poses) -> Tuple[np.ndarray, np.ndarray]:
        if self.source != "procedural":
            raise ValueError("label maps and style scores exist only for procedural data")
        c, p = np.broadcast_arrays(np.asarray(characters, dtype=np.int64), np.asarray(poses, dtype=np.int64))
        if np.any((c < 0) | (c >= self.num_characters)):
            raise ValueError(f"character ids must be in [0, {self.num_characters})")
        return self.attributes[c], p

    def label_maps_for(self, characters, poses) -> np.ndarray:
        """True label maps (palette slots, see :mod:`.palettes`) of ``(characters, poses)`` pairs,
        broadcast like :meth:`frames_for`: ``broadcast_shape + (64, 64)`` uint8 (procedural only)."""
        return _label_maps(*self._procedural_pairs(characters, poses))

    def style_accuracy(self, generated, characters, poses, *, hair_shape: bool = True) -> Dict[str, object]:
        """Style scores of ``generated`` frames meant to show ``characters`` in ``poses`` (procedural only).

        :param generated: ``broadcast_shape + (64, 64, 3)`` frames (floats in [0, 1] or uint8).
        :param characters: character ids, broadcast against ``poses`` (e.g. ``test_characters[:, None]``).
        :param poses: pose indices (e.g. ``test_target_poses``).
        :returns: ``{attribute: ChoiceAccuracy}`` for skin, hair/top/bottom colour (and hair shape);
            see :func:`svgpvae_paper.datasets.sprites.scoring.style_accuracy`.
        """
        styles, p = self._procedural_pairs(characters, poses)
        return _style_accuracy(generated, styles, p, hair_shape=hair_shape, background=self._frames.background)

    def all_frames(self, *, dtype=np.uint8) -> np.ndarray:
        """Every frame, ``[C, 72, 64, 64, 3]`` (1.15 GB as uint8 for C = 1296)."""
        chars = np.arange(self.num_characters)[:, None]
        return self.frames_for(chars, np.arange(NUM_POSES)[None, :], dtype=dtype)

    @property
    def frames(self) -> np.ndarray:
        """Every frame as float32 ``[C, 72, 64, 64, 3]`` (4.59 GB for C = 1296; not cached).

        Prefer :meth:`frames_for` or ``all_frames(dtype=np.uint8)`` for the full set.
        """
        return self.all_frames(dtype=np.float32)

    def train_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_train, P, 64, 64, 3]``: training images (paper protocol: 614 MB as uint8, 2.46 GB as float32)."""
        return self.frames_for(self.train_characters[:, None], self.train_poses, dtype=dtype)

    def test_context_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_test, Q, 64, 64, 3]``: the observed poses of the test characters."""
        return self.frames_for(self.test_characters[:, None], self.test_context_poses, dtype=dtype)

    def test_target_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_test, 72 - Q, 64, 64, 3]``: the poses to generate for the test characters."""
        return self.frames_for(self.test_characters[:, None], self.test_target_poses, dtype=dtype)

    def validation_context_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_val, Q, 64, 64, 3]``: the observed poses of the validation characters."""
        return self.frames_for(self.validation_characters[:, None], self.validation_context_poses, dtype=dtype)

    def validation_target_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_val, 72 - Q, 64, 64, 3]``: the poses to generate for the validation characters."""
        return self.frames_for(self.validation_characters[:, None], self.validation_target_poses, dtype=dtype)


def _pose_splits(
    rng: np.random.Generator, n_train: int, n_test: int, train_poses_per_character: int, num_context_poses: int
):
    if not 1 <= train_poses_per_character <= NUM_POSES:
        raise ValueError(f"train_poses_per_character must be in [1, {NUM_POSES}], got {train_poses_per_character}")
    if not 1 <= num_context_poses < NUM_POSES:
        raise ValueError(f"num_context_poses must be in [1, {NUM_POSES - 1}], got {num_context_poses}")
    train = np.sort(
        rng.permuted(np.tile(np.arange(NUM_POSES), (n_train, 1)), axis=1)[:, :train_poses_per_character], axis=1
    )
    perm = rng.permuted(np.tile(np.arange(NUM_POSES), (n_test, 1)), axis=1)
    context = np.sort(perm[:, :num_context_poses], axis=1)
    target = np.sort(perm[:, num_context_poses:], axis=1)
    return train, context, target


def sprites(
    num_characters: int = 1296,
    *,
    seed: int = 0,
    num_train_characters: int = 1000,
    train_poses_per_character: int = 50,
    num_context_poses: int = 36,
    num_validation_characters: int = 0,
    background: Tuple[int, int, int] = _DEFAULT_BACKGROUND,
) -> SpritesDataset:
    """Procedural SPRITES-like data with the SVGP-VAE protocol.

    :param num_characters: number of distinct characters ``C`` (paper: 1296).
    :param seed: seeds styles, character split and pose splits (see module docstring).
    :param num_train_characters: training characters (paper: 1000); the other
        ``C - num_train_characters`` are test characters.
    :param train_poses_per_character: random poses per training character (paper: 50).
    :param num_context_poses: observed poses per test character (paper: 36).
    :param num_validation_characters: extra held-out characters (ids ``num_characters`` and up),
        split into context and target poses like the test characters; training and test
        characters, styles and pose splits are unchanged by them (module docstring).
    :param background: RGB background, 0..255 (default white).
    :returns: a :class:`SpritesDataset` that renders frames on demand.
    """
    if not 1 <= num_train_characters <= num_characters:
        raise ValueError(
            f"num_train_characters must be in [1, num_characters={num_characters}], got {num_train_characters}"
        )
    V = int(num_validation_characters)
    if V < 0:
        raise ValueError(f"num_validation_characters must be >= 0, got {num_validation_characters}")
    if num_characters + V > NUM_STYLES:
        raise ValueError(
            f"num_characters + num_validation_characters must be at most {NUM_STYLES} (the distinct "
            f"styles), got {num_characters} + {V}"
        )
    styles = _style_array(num_characters + V, seed)  # smaller sets are prefixes: the first C unchanged
    _, split_rng, pose_rng = _streams(seed)
    perm = split_rng.permutation(num_characters)
    train_c = np.sort(perm[:num_train_characters])
    test_c = np.sort(perm[num_train_characters:])
    tr, ctx, tgt = _pose_splits(pose_rng, train_c.size, test_c.size, train_poses_per_character, num_context_poses)
    validation_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3,)))
    _, val_ctx, val_tgt = _pose_splits(validation_rng, 0, V, train_poses_per_character, num_context_poses)
    return SpritesDataset(
        num_characters=num_characters + V,
        train_characters=_readonly(train_c),
        test_characters=_readonly(test_c),
        train_poses=_readonly(tr),
        test_context_poses=_readonly(ctx),
        test_target_poses=_readonly(tgt),
        attributes=_readonly(styles),
        source="procedural",
        _frames=_ProceduralFrames(styles, background),
        validation_characters=_readonly(np.arange(num_characters, num_characters + V)),
        validation_context_poses=_readonly(val_ctx),
        validation_target_poses=_readonly(val_tgt),
    )
