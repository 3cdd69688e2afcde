"""A representation network with per-group aggregation (a style per group, computed from its frames)."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.representation import StyleRepresentation, aggregate_by_group


def _network():
    return tf_keras.Sequential([tf_keras.Input((8, 8, 3)), tf_keras.layers.Flatten(), tf_keras.layers.Dense(16)])


@pytest.fixture(scope="module")
def rep():
    tf_keras.utils.set_random_seed(3)
    return StyleRepresentation(_network())


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return rng.uniform(size=(12, 8, 8, 3)).astype(np.float32)


# three characters, frames interleaved (4 frames each)
IDS = np.array([7, 2, 7, 9, 2, 2, 9, 7, 9, 2, 7, 9])


def test_style_is_sum_of_per_frame_outputs_and_invariant_to_frame_order(rep, frames):
    styles = rep(frames, IDS).numpy()
    assert styles.dtype == np.float64 and styles.shape == (12, 16)
    per_frame = np.stack([rep.network(frames[i : i + 1]).numpy()[0] for i in range(12)]).astype(np.float64)
    for c in np.unique(IDS):
        expected = per_frame[IDS == c].sum(axis=0)
        np.testing.assert_allclose(styles[IDS == c], np.broadcast_to(expected, (4, 16)), rtol=1e-5, atol=1e-5)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(12)
        permuted = rep(frames[perm], IDS[perm]).numpy()
        np.testing.assert_allclose(permuted, styles[perm], rtol=1e-12, atol=1e-12)  # frame order is irrelevant


def test_mean_reduction(rep, frames):
    mean_rep = StyleRepresentation(rep.network, reduction="mean")
    np.testing.assert_allclose(mean_rep(frames, IDS).numpy() * 4, rep(frames, IDS).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        aggregate_by_group(rep.frame_features(frames), IDS, "max")


def test_aggregation_compiles_under_xla_and_passes_gradients():
    features = tf.Variable(np.random.default_rng(1).normal(size=(6, 3)))
    ids = tf.constant([0, 1, 0, 1, 2, 0])

    @tf.function(jit_compile=True)
    def f():
        with tf.GradientTape() as tape:
            out = tf.reduce_sum(aggregate_by_group(features, ids) ** 2)
        return out, tape.gradient(out, features)

    value, grad = f()
    agg = aggregate_by_group(features, ids).numpy()
    np.testing.assert_allclose(value.numpy(), np.sum(agg**2))
    sizes = np.array([3, 2, 3, 2, 1, 3])[:, None]
    np.testing.assert_allclose(grad.numpy(), 2 * sizes * agg)  # d/df_j sum_i a_i^2 = 2 (G a)_j = 2 |g_j| a_j


def test_rejects_non_networks():
    with pytest.raises(TypeError):
        StyleRepresentation(network=lambda x: x)
    with pytest.raises(ValueError, match="reduction"):
        StyleRepresentation(_network(), reduction="median")
