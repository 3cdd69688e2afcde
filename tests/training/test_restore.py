"""Restores are atomic: a checkpoint that does not fit the model (other m, widths, L, likelihood)
or a resume with other run settings is refused before any variable changes, with a message in
the model's terms."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.training import check_checkpoint, restore_checkpoint, train
from tests.conftest import make_tiny_model, tiny_data


def _values(model):
    return [np.array(v.numpy(), copy=True) for v in model.variables]


def _assert_unchanged(model, before):
    after = _values(model)
    assert len(after) == len(before)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint directory of a trained tiny model (m = 6, hidden 16, L = 1, Gaussian), and its data."""
    directory = tmp_path_factory.mktemp("run")
    X, Y = tiny_data()
    Y = np.clip(Y, 0.0, 1.0)  # also valid Bernoulli targets
    train(make_tiny_model(), (X, Y), epochs=1, batch_size=20, progress=False, checkpoint_dir=str(directory))
    return str(directory), X, Y


MISMATCHES = {
    "inducing inputs": (dict(num_inducing=10), [r"inducing inputs: checkpoint has 6, model has 10"]),
    "widths": (
        dict(hidden=(32,)),
        [
            r"encoder layer '[^']+': width 16 in the checkpoint, 32 in the model",
            r"decoder layer '[^']+': input width 16",
        ],
    ),
    "latent channels": (dict(num_latent_gps=2), [r"L \(latent channels.*checkpoint has 1, model has 2"]),
    "likelihood": (dict(likelihood=gv.Bernoulli()), [r"likelihood parameter variance.*likelihood is Bernoulli"]),
}


def _built(kwargs):
    X, Y = tiny_data()
    model = make_tiny_model(**kwargs)
    model.objective_terms((X[:10], np.clip(Y[:10], 0, 1)), training=False)  # every variable exists
    return model


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_resuming_into_another_model_is_refused_before_any_change(saved, case):
    directory, X, Y = saved
    kwargs, patterns = MISMATCHES[case]
    model = _built(kwargs)
    before = _values(model)
    with pytest.raises(ValueError, match="does not fit the model, so nothing was restored") as info:
        train(model, (X, Y), epochs=2, batch_size=20, progress=False, checkpoint_dir=directory)
    for pattern in patterns:
        assert any(__import__("re").search(pattern, line) for line in str(info.value).splitlines()), str(info.value)
    _assert_unchanged(model, before)


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_restore_checkpoint_and_load_weights_refuse_another_model(saved, case, tmp_path):
    directory, X, Y = saved
    kwargs, patterns = MISMATCHES[case]
    model = _built(kwargs)
    before = _values(model)
    with pytest.raises(ValueError, match=patterns[0]):
        restore_checkpoint(directory, model=model)
    _assert_unchanged(model, before)
    # the Keras view: a checkpoint written by view.save into the view of another model
    source = _built({})
    view = source.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-3))
    view.fit((X, Y), batch_size=20, epochs=1, verbose=0)
    view.save(str(tmp_path / "weights"))
    other = model.as_training_model()
    other.compile(tf_keras.optimizers.Adam(1e-3))
    with pytest.raises(ValueError, match=patterns[0]):
        other.load_weights(str(tmp_path / "weights"))
    _assert_unchanged(model, before)


def test_fitting_checkpoint_restores_and_round_trips(saved):
    directory, X, Y = saved
    model = _built({})
    assert check_checkpoint(directory, model=model) == tf.train.latest_checkpoint(directory)
    restore_checkpoint(directory, model=model).assert_existing_objects_matched()
    reader = tf.train.load_checkpoint(directory)
    saved_Z = reader.get_tensor("model/inducing_variable/Z/_pretransformed_input/.ATTRIBUTES/VARIABLE_VALUE")
    np.testing.assert_array_equal(model.inducing_variable.Z.numpy(), saved_Z)


def test_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(ValueError, match="No checkpoint in the directory"):
        restore_checkpoint(str(tmp_path), model=_built({}))


@pytest.mark.parametrize(
    "change, pattern",
    [
        (dict(batch_size=30), r"batch_size: the checkpoint's run used batch_size=20, this call batch_size=30"),
        (dict(steps_per_epoch=2), r"steps_per_epoch: the checkpoint's run used 3, this call 2"),
    ],
)
def test_resuming_with_other_run_settings_is_refused(saved, change, pattern):
    directory, X, Y = saved
    model = _built({})
    before = _values(model)
    kwargs = dict(epochs=3, batch_size=20, progress=False, checkpoint_dir=directory)
    kwargs.update(change)
    with pytest.raises(ValueError, match=pattern) as info:
        train(model, (X, Y), **kwargs)
    assert "Pass the saved values to continue that run, or give another checkpoint_dir" in str(info.value)
    _assert_unchanged(model, before)
