"""``tidy_module_tree``: readable ``print_summary`` rows, never a variable lost to training."""
import contextlib
import os

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.utilities import leaf_components, tabulate_module_summary

import gpflow_svgpvae as gv
from gpflow_svgpvae import networks
from gpflow_svgpvae.networks import tidy_module_tree
from gpflow_svgpvae.training import train

_LAYER_ALIASES = ("_self_tracked_trackables", "_output_layers", "_output_coordinates")
_ALIASES = _LAYER_ALIASES + ("_trainable_weights",)


class ListWeights(tf_keras.layers.Layer):
    """``add_weight`` results kept only in a public list (Keras wraps it in a ListWrapper)."""

    def build(self, input_shape):
        self.ws = [self.add_weight(name=f"w{i}", shape=(int(input_shape[-1]), 2)) for i in range(2)]

    def call(self, x):
        return tf.matmul(x, self.ws[0]) + tf.matmul(x, self.ws[1])


class UnstoredWeights(tf_keras.layers.Layer):
    """``add_weight`` results not stored: Keras' weight lists are their only paths."""

    def build(self, input_shape):
        self.add_weight(name="w", shape=(int(input_shape[-1]), 2))
        self.add_weight(name="count", shape=(), initializer="zeros", trainable=False)

    def call(self, x):
        return tf.matmul(x, self.trainable_weights[0])


class PartlyStoredWeights(tf_keras.layers.Layer):
    """One weight an attribute, one not: ``_trainable_weights`` is not a pure alias."""

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(int(input_shape[-1]), 2))
        self.add_weight(name="hidden", shape=(2,))

    def call(self, x):
        return tf.matmul(x, self.kernel) + self.trainable_weights[1]


class SublayerInBuild(tf_keras.layers.Layer):
    """Creates its sublayer lazily, after the network was tidied."""

    def build(self, input_shape):
        self.inner = tf_keras.layers.Dense(2)

    def call(self, x):
        return self.inner(x)


class Subclassed(tf_keras.Model):
    """Sublayers are attributes (one in a list): no ``layers`` entry is needed."""

    def __init__(self):
        super().__init__()
        self.first = tf_keras.layers.Dense(4)
        self.blocks = [tf_keras.layers.Dense(4), tf_keras.layers.BatchNormalization()]

    def call(self, x):
        h = self.first(x)
        for block in self.blocks:
            h = block(h)
        return h


def _functional():
    x = tf_keras.Input((3,))
    h = tf_keras.layers.Dense(4, activation="relu")(x)
    h = tf_keras.layers.BatchNormalization()(h)
    return tf_keras.Model(x, [tf_keras.layers.Dense(2)(h), tf_keras.layers.Dense(1)(h)])


def _nested():
    inner = tf_keras.Sequential([tf_keras.layers.Dense(4), tf_keras.layers.Dense(4)], name="inner")
    x = tf_keras.Input((3,))
    functional = tf_keras.Model(x, tf_keras.layers.Dense(2)(inner(x)), name="middle")
    return tf_keras.Sequential([functional, tf_keras.layers.Dense(2)])  # lazily built


def _images(shape):
    return tf.random.stateless_uniform((2,) + tuple(shape), [0, 1])


# name -> (network factory, input factory)
NETWORKS = {
    "mlp_encoder": (lambda: networks.mlp_encoder(6, 2, hidden_units=(5, 4)), lambda: tf.zeros([2, 6])),
    "mlp_decoder": (lambda: networks.mlp_decoder(2, 6, hidden_units=(5,)), lambda: tf.zeros([2, 2])),
    "conv_encoder": (lambda: networks.conv_encoder(2, (8, 8, 1), filters=(4, 4)), lambda: _images((8, 8, 1))),
    "conv_encoder_condition": (
        lambda: networks.conv_encoder(2, (8, 8, 1), filters=(4,), condition_dim=2),
        lambda: [_images((8, 8, 1)), tf.zeros([2, 2])],
    ),
    "conv_decoder": (lambda: networks.conv_decoder(2, (8, 8, 1), filters=(4, 4)), lambda: tf.zeros([2, 2])),
    "conv_decoder_transpose": (
        lambda: networks.conv_decoder(2, (8, 8, 1), filters=(4,), upsampling="transpose"),
        lambda: tf.zeros([2, 2]),
    ),
    "sprites_encoder": (lambda: networks.sprites_encoder(3, (16, 16, 3), filters=4), lambda: _images((16, 16, 3))),
    "sprites_decoder": (lambda: networks.sprites_decoder(3, (16, 16, 3), filters=4), lambda: tf.zeros([2, 3])),
    "representation_network": (
        lambda: networks.representation_network(3, (16, 16, 3), filters=(4, 4)),
        lambda: _images((16, 16, 3)),
    ),
    "lazy_sequential": (
        lambda: tf_keras.Sequential(
            [
                tf_keras.layers.Dense(4, activation="relu"),
                tf_keras.layers.BatchNormalization(),
                tf_keras.layers.Dense(2),
            ]
        ),
        lambda: tf.zeros([2, 3]),
    ),
    "functional": (_functional, lambda: tf.zeros([2, 3])),
    "nested": (_nested, lambda: tf.zeros([2, 3])),
    "subclassed": (Subclassed, lambda: tf.zeros([2, 3])),
    "list_weights": (lambda: tf_keras.Sequential([ListWeights(), UnstoredWeights()]), lambda: tf.zeros([2, 3])),
    "unstored_weights": (UnstoredWeights, lambda: tf.zeros([2, 3])),
    "partly_stored_weights": (PartlyStoredWeights, lambda: tf.zeros([2, 3])),
    "sublayer_in_build": (lambda: tf_keras.Sequential([SublayerInBuild()]), lambda: tf.zeros([2, 3])),
}
# Networks whose every weight has a readable path (one summary row each).
READABLE = set(NETWORKS) - {"partly_stored_weights", "sublayer_in_build"}


def _refs(variables):
    return {v.ref() for v in variables}


def _walk(module):
    # In order: optimisers checkpoint their slots by position in trainable_variables.
    return [v.ref() for v in module.trainable_variables], [v.ref() for v in module.variables]


@contextlib.contextmanager
def _untidied(network):
    """Keras' class-level ignore sets apply again (as before tidying); re-tidies on exit."""
    for layer in network._flatten_layers():
        layer.__dict__.pop("_TF_MODULE_IGNORED_PROPERTIES", None)
        if isinstance(layer, tf_keras.Model):
            layer.__dict__.pop("layers", None)
    try:
        yield network
    finally:
        tidy_module_tree(network)


def _summary_lines(module):
    """The body lines of the summary table and their path cells."""
    lines = tabulate_module_summary(module).splitlines()[2:]
    return lines, [line.split()[0] for line in lines]


def _checkpoint_keys(tmp_path, name, **objects):
    path = tf.train.Checkpoint(**objects).write(os.fspath(tmp_path / name))
    return tf.train.list_variables(path)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_variables_and_checkpoints_unchanged_before_and_after_lazy_build(name, tmp_path):
    make_network, make_input = NETWORKS[name]
    network = make_network()
    holder = gpflow.Module()
    holder.network = network
    before = _walk(holder)
    keys = _checkpoint_keys(tmp_path, "untidied", network=network)

    assert tidy_module_tree(network) is network
    assert _walk(holder) == before
    assert _checkpoint_keys(tmp_path, "tidied", network=network) == keys

    network(make_input())  # builds lazily created weights (and sublayers)
    trainable, variables = _walk(holder)
    assert trainable and set(trainable) == _refs(network.trainable_weights)
    assert set(variables) == _refs(network.weights)
    keys = _checkpoint_keys(tmp_path, "tidied_built", network=network)
    with _untidied(network):
        assert _walk(holder) == (trainable, variables)
        assert _checkpoint_keys(tmp_path, "untidied_built", network=network) == keys

    tidy_module_tree(network)  # a second call (leaving _untidied re-tidied): idempotent
    assert _walk(holder) == (trainable, variables)


@pytest.mark.parametrize("name", sorted(READABLE))
def test_summary_has_one_readable_row_per_variable(name):
    make_network, make_input = NETWORKS[name]
    holder = gpflow.Module()
    holder.network = tidy_module_tree(make_network())
    holder.network(make_input())
    summary = tabulate_module_summary(holder)
    lines, paths = _summary_lines(holder)

    assert len(lines) == len(holder.variables) == len(leaf_components(holder))
    assert not any(alias in summary for alias in _LAYER_ALIASES)
    if name not in ("list_weights", "unstored_weights"):  # their weights have no other name
        assert "_trainable_weights" not in summary and "_non_trainable_weights" not in summary
    assert len(set(paths)) == len(paths)


def test_keras_layers_attribute_is_unchanged():
    network = NETWORKS["nested"][0]()
    network(tf.zeros([2, 3]))
    middle = network.layers[0]
    outer_layers, middle_layers = network.layers, middle.layers

    tidy_module_tree(network)
    # The readable entries exist only in vars(); attribute access is Keras' property.
    assert list(vars(network)["layers"]) == [layer.name for layer in outer_layers]
    assert list(vars(middle)["layers"]) == ["inner", middle_layers[-1].name]  # no InputLayer
    assert network.layers == outer_layers and middle.layers == middle_layers
    assert isinstance(network.layers, list) and isinstance(middle.layers[0], tf_keras.layers.InputLayer)


def _svgpvae(decoder, num_data=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((num_data, 2))
    Y = rng.standard_normal((num_data, 16)).astype("float32")
    encoder = networks.mlp_encoder(16, num_latent=2, hidden_units=(32,))
    model = gv.SVGPVAE(
        encoder, decoder, gpflow.kernels.Matern52(lengthscales=[1.0, 1.0]), X[:10], gv.Gaussian(0.1), num_data=num_data
    )
    return model, X, Y


DECODERS = {
    "sequential": lambda: tf_keras.Sequential(
        [tf_keras.layers.Dense(32, activation="relu"), tf_keras.layers.Dense(16)]
    ),
    "mlp_decoder": lambda: networks.mlp_decoder(2, 16, hidden_units=(32,)),
}


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_svgpvae_summary_is_one_line_per_variable(decoder):
    model, X, Y = _svgpvae(DECODERS[decoder]())
    train(model, (X, Y), epochs=1, batch_size=50, progress=False)  # builds the Sequential lazily
    summary = tabulate_module_summary(model)
    lines, paths = _summary_lines(model)

    num_variables = len(_refs(model.variables))
    assert len(lines) == num_variables == len(paths) == len(set(paths))
    # Every network weight has its row, under a readable path.
    network_weights = model.encoder.weights + model.decoder.weights
    assert len(network_weights) == 8
    assert sum(path.startswith(("SVGPVAE.encoder.layers[", "SVGPVAE.decoder.layers[")) for path in paths) == 8
    for alias in _ALIASES:
        assert alias not in summary
    for path in ("SVGPVAE.kernel.lengthscales", "SVGPVAE.inducing_variable.Z", "SVGPVAE.likelihood.variance"):
        assert path in paths
    head = model.encoder.layers[-1].name  # auto-named: gaussian_site_head_<n>
    assert f"SVGPVAE.encoder.layers['{head}'].dense.kernel" in paths


def test_svgpvae_checkpoint_keys_unchanged(tmp_path, monkeypatch):
    tidied, X, _ = _svgpvae(DECODERS["mlp_decoder"]())
    monkeypatch.setattr(gv.networks.validation, "tidy_module_tree", lambda network: network)
    untidied, _, _ = _svgpvae(DECODERS["mlp_decoder"]())
    assert "_TF_MODULE_IGNORED_PROPERTIES" not in vars(untidied.encoder)
    assert "_TF_MODULE_IGNORED_PROPERTIES" in vars(tidied.encoder)
    keys = _checkpoint_keys(tmp_path, "tidied", model=tidied)
    assert keys == _checkpoint_keys(tmp_path, "untidied", model=untidied)
    assert any("encoder" in key for key, _ in keys) and any("decoder" in key for key, _ in keys)


def test_training_updates_every_network_weight():
    decoder = DECODERS["sequential"]()
    model, X, Y = _svgpvae(decoder, num_data=50)
    decoder(tf.zeros([1, 2]))  # build now so that the initial values can be recorded
    weights = model.encoder.weights + model.decoder.weights
    assert _refs(weights) <= _refs(model.trainable_variables)
    initial = [w.numpy().copy() for w in weights]
    train(model, (X, Y), epochs=1, batch_size=50, progress=False)  # one optimiser step
    unchanged = [w.name for w, w0 in zip(weights, initial) if np.array_equal(w.numpy(), w0)]
    assert not unchanged


def test_variable_order_is_keras_own_order():
    """Optimisers checkpoint their slots by position in ``trainable_variables``: tidying must not
    reorder them, or a run checkpointed before tidying existed would resume with another
    variable's slots (silently, for variables of equal shape)."""
    layers = [tf_keras.layers.Dense(2, name="b"), tf_keras.layers.Dense(2, name="a")]
    network = tidy_module_tree(tf_keras.Sequential(layers))
    network(tf.zeros([1, 3]))
    holder = gpflow.Module()
    holder.network = network
    tidied = [v.name for v in holder.trainable_variables]
    with _untidied(network):
        untidied = [v.name for v in holder.trainable_variables]
    assert tidied == untidied and sorted(tidied) == sorted(v.name for v in network.trainable_weights)
