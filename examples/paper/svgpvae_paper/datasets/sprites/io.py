r"""Real SPRITES arrays on disk: :func:`load_sprites_arrays` and :func:`save_sprites_arrays`.

On-disk layout (real SPRITES)
-----------------------------
:func:`load_sprites_arrays` reads a directory containing

``train.npy``
    ``[num_train, 72, 64, 64, 3]`` uint8 (0..255) or float (values in [0, 1]).
``test.npy``
    ``[num_test, 72, 64, 64, 3]``, same dtype family.
``train_attributes.npy``, ``test_attributes.npy`` (optional, both or none)
    ``[num_train, A]`` / ``[num_test, A]`` integer attribute labels.

Characters ``0 .. num_train - 1`` are the training characters and the rest
the test characters. Axis 1 must follow the pose order of
:mod:`~svgpvae_paper.datasets.sprites.poses` (action-major,
8 frames each); if your sheets use another action order, permute axis 1
before saving (the models only need the order to be consistent across
characters). :func:`save_sprites_arrays` writes this layout, e.g. to export
the procedural data.
"""

from __future__ import annotations

import os
from typing import Sequence, Union

import numpy as np

from .dataset import SpritesDataset, _pose_splits, _readonly
from .poses import IMAGE_SIZE, NUM_POSES
from .styles import _streams

__all__ = ["load_sprites_arrays", "save_sprites_arrays"]


class _ArrayFrames:
    """Frame source indexing stored (possibly memory-mapped) arrays."""

    def __init__(self, parts: Sequence[np.ndarray]):
        self.parts = list(parts)
        self.starts = np.cumsum([0] + [p.shape[0] for p in self.parts])

    def __call__(self, chars: np.ndarray, poses: np.ndarray, dtype) -> np.ndarray:
        flat_c, flat_p = chars.reshape(-1), poses.reshape(-1)
        out = np.empty((flat_c.size, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
        part_of = np.searchsorted(self.starts, flat_c, side="right") - 1
        for j, arr in enumerate(self.parts):
            sel = np.nonzero(part_of == j)[0]
            if sel.size == 0:
                continue
            frames = arr[flat_c[sel] - self.starts[j], flat_p[sel]]
            out[sel] = _convert(frames, dtype)
        return out.reshape(chars.shape + (IMAGE_SIZE, IMAGE_SIZE, 3))


def _convert(frames: np.ndarray, dtype) -> np.ndarray:
    if frames.dtype == dtype:
        return frames
    if frames.dtype == np.uint8:
        return (frames.astype(np.float32) / np.float32(255.0)).astype(dtype)
    if dtype == np.uint8:
        return np.round(np.clip(frames, 0.0, 1.0) * 255.0).astype(np.uint8)
    return frames.astype(dtype)


def _load_frames_file(path: str, mmap: bool, check_range: bool) -> np.ndarray:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"SPRITES frames file not found: {path}")
    arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    expected = (NUM_POSES, IMAGE_SIZE, IMAGE_SIZE, 3)
    if arr.ndim != 5 or tuple(arr.shape[1:]) != expected:
        raise ValueError(
            f"{path}: expected shape [num_characters, {', '.join(map(str, expected))}], got {list(arr.shape)}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{path}: contains no characters")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f":
        raise ValueError(f"{path}: expected dtype uint8 (0..255) or float (0..1), got {arr.dtype}")
    if check_range and arr.dtype.kind == "f":
        # Chunked so that a memory-mapped multi-GB file is not read into memory at once.
        for s in range(0, arr.shape[0], 64):
            block = np.asarray(arr[s : s + 64])
            if not np.all(np.isfinite(block)) or block.min() < 0.0 or block.max() > 1.0:
                raise ValueError(
                    f"{path}: float frames must be finite and in [0, 1] "
                    f"(characters {s}..{s + block.shape[0] - 1} are not)"
                )
    return arr


def _load_attributes(path: str, n: int) -> np.ndarray:
    attrs = np.load(path, allow_pickle=False)
    if attrs.ndim != 2 or attrs.shape[0] != n or attrs.dtype.kind not in "iu":
        raise ValueError(
            f"{path}: expected integer attributes of shape [{n}, A], got {attrs.dtype} {list(attrs.shape)}"
        )
    return attrs.astype(np.int64)


def load_sprites_arrays(
    path: Union[str, os.PathLike],
    *,
    seed: int = 0,
    train_poses_per_character: int = 50,
    num_context_poses: int = 36,
    mmap: bool = True,
    check_range: bool = True,
) -> SpritesDataset:
    """Load real SPRITES arrays (layout in the module docstring) into a :class:`SpritesDataset`.

    :param path: directory containing ``train.npy`` and ``test.npy`` (and
        optionally ``train_attributes.npy`` / ``test_attributes.npy``).
    :param seed: seeds the random pose splits exactly as in :func:`sprites`.
    :param train_poses_per_character: random poses per training character.
    :param num_context_poses: observed poses per test character.
    :param mmap: memory-map the arrays (frames are then read lazily).
    :param check_range: verify float frames lie in [0, 1] (reads the file once).
    :raises FileNotFoundError: if ``path`` or a required file does not exist.
    :raises ValueError: on wrong shapes, dtypes, value ranges or attribute files.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"SPRITES directory not found: {path}")
    train = _load_frames_file(os.path.join(path, "train.npy"), mmap, check_range)
    test = _load_frames_file(os.path.join(path, "test.npy"), mmap, check_range)
    if (train.dtype == np.uint8) != (test.dtype == np.uint8):
        raise ValueError(f"train.npy ({train.dtype}) and test.npy ({test.dtype}) must both be uint8 or both float")
    n_train, n_test = train.shape[0], test.shape[0]
    attr_files = [os.path.join(path, f"{s}_attributes.npy") for s in ("train", "test")]
    present = [os.path.isfile(f) for f in attr_files]
    attributes = None
    if any(present):
        if not all(present):
            missing = attr_files[present.index(False)]
            raise FileNotFoundError(f"attribute files must come in pairs; missing {missing}")
        a_tr = _load_attributes(attr_files[0], n_train)
        a_te = _load_attributes(attr_files[1], n_test)
        if a_tr.shape[1] != a_te.shape[1]:
            raise ValueError(f"train/test attributes have different widths: {a_tr.shape[1]} vs {a_te.shape[1]}")
        attributes = _readonly(np.concatenate([a_tr, a_te]))
    pose_rng = _streams(seed)[2]
    tr, ctx, tgt = _pose_splits(pose_rng, n_train, n_test, train_poses_per_character, num_context_poses)
    return SpritesDataset(
        num_characters=n_train + n_test,
        train_characters=_readonly(np.arange(n_train)),
        test_characters=_readonly(np.arange(n_train, n_train + n_test)),
        train_poses=_readonly(tr),
        test_context_poses=_readonly(ctx),
        test_target_poses=_readonly(tgt),
        attributes=attributes,
        source=path,
        _frames=_ArrayFrames([train, test]),
    )


def save_sprites_arrays(dataset: SpritesDataset, path: Union[str, os.PathLike], *, dtype=np.uint8) -> None:
    """Write ``dataset`` in the :func:`load_sprites_arrays` layout.

    Training characters go to ``train.npy`` and test characters to ``test.npy``
    (in id order), with their attributes if any. Memory: one split at a time,
    e.g. 886 MB for 1000 uint8 training characters.
    """
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    for name, ids in (("train", dataset.train_characters), ("test", dataset.test_characters)):
        frames = dataset.frames_for(ids[:, None], np.arange(NUM_POSES)[None, :], dtype=dtype)
        np.save(os.path.join(path, f"{name}.npy"), frames)
        if dataset.attributes is not None:
            np.save(os.path.join(path, f"{name}_attributes.npy"), dataset.attributes[ids])
