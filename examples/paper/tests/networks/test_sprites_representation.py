"""The SPRITES representation network, the characters' styles and the network's pretraining."""

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks.representation import StyleRepresentation
from svgpvae_paper.networks.representation import (
    character_styles,
    group_styles,
    pretrain_representation,
    representation_network,
)

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


def test_group_styles_in_order_of_first_appearance_and_in_chunks():
    tf_keras.utils.set_random_seed(3)
    rep = StyleRepresentation(representation_network())
    frames = np.random.default_rng(0).uniform(size=(12, 64, 64, 3)).astype(np.float32)
    features = rep.frame_features(frames).numpy()
    ids, styles = group_styles(features, IDS)
    assert list(ids) == [7, 2, 9]  # order of first appearance
    for c, s in zip(ids, styles):
        np.testing.assert_allclose(s, features[IDS == c].astype(np.float64).sum(0), rtol=1e-12)
    ids2, styles2 = character_styles(rep, frames, IDS, batch_size=5)  # chunked network passes
    np.testing.assert_allclose(styles2, styles, rtol=1e-5, atol=1e-6)


def test_pretraining_learns_to_classify_characters():
    tf_keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    colours = rng.uniform(size=(3, 1, 1, 3)).astype(np.float32)
    Y = np.repeat(colours, 4, axis=0) * np.ones((12, 64, 64, 3), np.float32)
    Y += 0.05 * rng.normal(size=Y.shape).astype(np.float32)
    ids = np.repeat([11, 5, 8], 4)
    X = np.stack([ids, np.tile(np.arange(4), 3)], 1).astype(np.float64)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(12, seed=0).batch(6)
    rep = StyleRepresentation(representation_network())
    before = [w.numpy().copy() for w in rep.network.trainable_variables]
    history = pretrain_representation(rep, dataset, np.array([5, 8, 11]), epochs=40, learning_rate=1e-2, progress=False)
    assert history["accuracy"][-1] == 1.0 and history["loss"][-1] < history["loss"][0]
    assert any(not np.allclose(b, w.numpy()) for b, w in zip(before, rep.network.trainable_variables))
