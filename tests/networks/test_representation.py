"""The SPRITES representation network and the per-character style aggregation."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.representation import (
    StyleRepresentation,
    aggregate_by_group,
    group_styles,
    pretrain_representation,
    representation_network,
)


@pytest.fixture(scope="module")
def rep():
    tf_keras.utils.set_random_seed(3)
    return StyleRepresentation(representation_network())


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return rng.uniform(size=(12, 64, 64, 3)).astype(np.float32)


# three characters, frames interleaved (4 frames each)
IDS = np.array([7, 2, 7, 9, 2, 2, 9, 7, 9, 2, 7, 9])


def test_architecture_three_2x2_convs_of_16_one_pooling_16_outputs():
    net = representation_network()
    convs = [layer for layer in net.layers if isinstance(layer, tf_keras.layers.Conv2D)]
    pools = [layer for layer in net.layers if isinstance(layer, tf_keras.layers.MaxPooling2D)]
    assert [c.filters for c in convs] == [16, 16, 16]
    assert [c.kernel_size for c in convs] == [(2, 2)] * 3
    assert len(pools) == 1
    out = net(tf.zeros([2, 64, 64, 3]))
    assert out.shape == (2, 16) and out.dtype == tf.float32


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


def test_mean_reduction_and_group_styles(rep, frames):
    mean_rep = StyleRepresentation(rep.network, reduction="mean")
    np.testing.assert_allclose(mean_rep(frames, IDS).numpy() * 4, rep(frames, IDS).numpy(), rtol=1e-12)
    features = rep.frame_features(frames).numpy()
    ids, styles = group_styles(features, IDS)
    assert list(ids) == [7, 2, 9]  # order of first appearance
    for c, s in zip(ids, styles):
        np.testing.assert_allclose(s, features[IDS == c].astype(np.float64).sum(0), rtol=1e-12)
    ids2, styles2 = rep.styles(frames, IDS, batch_size=5)  # chunked network passes
    np.testing.assert_allclose(styles2, styles, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        aggregate_by_group(features, IDS, "max")


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
        StyleRepresentation(reduction="median")


def test_pretraining_learns_to_classify_characters():
    tf_keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    colours = rng.uniform(size=(3, 1, 1, 3)).astype(np.float32)
    Y = np.repeat(colours, 4, axis=0) * np.ones((12, 64, 64, 3), np.float32)
    Y += 0.05 * rng.normal(size=Y.shape).astype(np.float32)
    ids = np.repeat([11, 5, 8], 4)
    X = np.stack([ids, np.tile(np.arange(4), 3)], 1).astype(np.float64)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(12, seed=0).batch(6)
    rep = StyleRepresentation()
    before = [w.numpy().copy() for w in rep.network.trainable_variables]
    history = pretrain_representation(rep, dataset, np.array([5, 8, 11]), epochs=40, learning_rate=1e-2, progress=False)
    assert history["accuracy"][-1] == 1.0 and history["loss"][-1] < history["loss"][0]
    assert any(not np.allclose(b, w.numpy()) for b, w in zip(before, rep.network.trainable_variables))
