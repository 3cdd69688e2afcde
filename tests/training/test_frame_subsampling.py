"""Random frame subsets of sequences (``frames_per_sequence``): the SVGP-VAE's minibatch over the
points of each latent dataset."""

import numpy as np
import pytest

from gpflow_svgpvae.training import make_dataset


def _sequences(V=6, T=10):
    X = np.tile(np.arange(T, dtype=np.float64)[None, :, None], (V, 1, 1))
    Y = 100.0 * np.arange(V)[:, None] + np.arange(T)[None, :]  # frame t of sequence v holds 100 v + t
    mask = (np.arange(V)[:, None] + np.arange(T)[None, :]) % 3 != 0
    return X, Y[..., None], mask[..., None].astype(np.float32)


def _epochs(dataset, epochs):
    return [[tuple(part.numpy() for part in batch) for batch in dataset] for _ in range(epochs)]


def test_subsets_keep_aligned_sorted_frames_and_cover_every_sequence():
    X, Y, mask = _sequences()
    seen = {v: set() for v in range(6)}
    for batches in _epochs(make_dataset((X, Y, mask), 4, seed=3, frames_per_sequence=4), 5):
        sequences = 0
        for Xb, Yb, Mb in batches:
            assert Xb.shape[1:] == (4, 1) and Yb.shape[1:] == (4, 1) and Mb.shape[1:] == (4, 1)
            for x, y, m in zip(Xb[..., 0], Yb[..., 0], Mb[..., 0]):
                v = int(y[0] // 100)
                assert np.all(np.diff(x) > 0)  # distinct frames in time order
                np.testing.assert_array_equal(y, 100 * v + x)  # X, Y, mask rows of the same frames
                np.testing.assert_array_equal(m, ((v + x) % 3 != 0).astype(np.float32))
                seen[v].update(x.astype(int).tolist())
                sequences += 1
        assert sequences == 6  # every sequence once per epoch
    assert all(len(frames) > 4 for frames in seen.values())  # new subsets each epoch


def test_subsets_are_seeded():
    X, Y, _ = _sequences()
    first = _epochs(make_dataset((X, Y), 3, seed=7, frames_per_sequence=5), 2)
    again = _epochs(make_dataset((X, Y), 3, seed=7, frames_per_sequence=5), 2)
    other = _epochs(make_dataset((X, Y), 3, seed=8, frames_per_sequence=5), 2)

    def flat(runs):
        return np.concatenate([b[1].ravel() for epoch in runs for b in epoch])

    np.testing.assert_array_equal(flat(first), flat(again))
    assert not np.array_equal(flat(first), flat(other))
    assert not np.array_equal(np.sort(flat(first[:1])), np.sort(flat(first[1:])))  # epochs differ


def test_all_frames_is_the_plain_dataset_and_bad_values_raise():
    X, Y, _ = _sequences()
    plain = _epochs(make_dataset((X, Y), 3, seed=1), 1)
    full = _epochs(make_dataset((X, Y), 3, seed=1, frames_per_sequence=10), 1)
    for a, b in zip(plain[0], full[0]):
        np.testing.assert_array_equal(a[1], b[1])
    for bad in (0, 11):
        with pytest.raises(ValueError, match="frames_per_sequence"):
            make_dataset((X, Y), 3, frames_per_sequence=bad)
    with pytest.raises(ValueError, match="sequence data"):
        make_dataset((X[:, 0], Y[:, 0]), 3, frames_per_sequence=2)
