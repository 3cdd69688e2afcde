"""The guarded training step: a step whose loss, terms, network outputs or gradients are not all
finite makes no update (model, optimiser and objective state unchanged), and training stops with
an error naming what went non-finite and where (1-based epoch and batch)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.training import GECO, train
from tests.conftest import make_tiny_model, tiny_data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _state(*owners):
    """Every variable of the model, the optimiser and the objective (numpy copies)."""
    values = []
    for owner in owners:
        values += [np.array(v.numpy(), copy=True) for v in owner.variables]
    return values


def _assert_same(before, after):
    assert len(before) == len(after)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


def _trained(objective=None):
    """A tiny model and Adam state after a few good steps (so m, v and the counters are not at zero)."""
    X, Y = tiny_data()
    model = make_tiny_model()
    optimizer = tf_keras.optimizers.Adam(1e-2)
    train(model, (X, Y), epochs=1, batch_size=20, optimizer=optimizer, objective=objective, progress=False)
    return model, optimizer, X, Y


def _nan_decoder(model):
    bias = model.decoder.layers[-1].bias
    bias.assign(np.full(bias.shape, np.nan, np.float32))


def test_overflowing_gradients_make_no_update():
    """One entry of Y at 1e30 (finite in float32): a finite loss (~1e60 in float64) whose
    gradients overflow float32's square (Adam's second moment); before, train returned with
    every network weight NaN."""
    model, optimizer, X, Y = _trained()
    Y = Y.copy()
    Y[7, 3] = 1e30
    before = _state(model, optimizer)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        train(model, (X, Y), epochs=2, batch_size=60, optimizer=optimizer, progress=False)
    message = str(info.value)
    assert message.startswith("The training step made no update")
    assert "gradients of the decoder" in message and "epoch 1, batch 1 (1-based" in message
    assert "decoder output" not in message.split("\n")[0]  # the outputs were finite
    _assert_same(before, _state(model, optimizer))


def test_position_is_one_based_and_earlier_batches_are_kept():
    model, optimizer, X, Y = _trained()
    Y = Y.copy()
    Y[25, 0] = 1e30  # the second batch of 20, unshuffled
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"in epoch 1, batch 2 \(1-based; step 2\)"):
        train(model, dataset, epochs=1, optimizer=optimizer, progress=False)
    assert int(optimizer.iterations.numpy()) == 3 + 1  # the first batch was applied, the second not


def test_decoder_nan_is_named_in_elbo_predictions_and_training():
    model, optimizer, X, Y = _trained()
    _nan_decoder(model)
    with pytest.raises(tf.errors.InvalidArgumentError, match="The decoder returned non-finite values"):
        model.elbo((X[:20], Y[:20]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="The decoder returned non-finite values"):
        model.posterior((X, Y)).predict_y(X[:5])
    before = _state(model, optimizer)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        train(model, (X, Y), epochs=1, batch_size=60, optimizer=optimizer, progress=False)
    first_line = str(info.value).split("\n")[0]
    assert "non-finite" in first_line and "decoder output" in first_line
    assert "jit_compile" not in str(info.value)  # the old end-of-epoch message blamed XLA
    _assert_same(before, _state(model, optimizer))  # draw counter included


def test_keras_fit_makes_no_update_and_names_the_decoder():
    model, _, X, Y = _trained()
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    view.fit((X, Y), batch_size=20, epochs=1, verbose=0)  # builds the optimiser's state
    _nan_decoder(model)
    before = _state(model, view.optimizer)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        view.fit((X, Y), batch_size=20, epochs=1, verbose=0)
    assert "decoder output" in str(info.value).split("\n")[0]
    assert "in epoch 1, batch 1 (1-based)" in str(info.value)
    _assert_same(before, _state(model, view.optimizer))


def test_keras_fit_overflowing_gradients_make_no_update():
    model, _, X, Y = _trained()
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    view.fit((X, Y), batch_size=60, epochs=1, verbose=0)
    Y = Y.copy()
    Y[3, 3] = 1e30
    before = _state(model, view.optimizer)
    with pytest.raises(tf.errors.InvalidArgumentError, match="made no update.*gradients of the decoder"):
        view.fit((X, Y), batch_size=60, epochs=1, verbose=0)
    _assert_same(before, _state(model, view.optimizer))


def test_geco_state_is_unchanged_by_a_skipped_step():
    geco = GECO(0.02)
    model, optimizer, X, Y = _trained(objective=geco)
    Y = Y.copy()
    Y[0, 0] = 1e30
    before = _state(model, optimizer, geco)
    with pytest.raises(tf.errors.InvalidArgumentError, match="made no update"):
        train(model, (X, Y), epochs=1, batch_size=60, optimizer=optimizer, objective=geco, progress=False)
    _assert_same(before, _state(model, optimizer, geco))  # lambda, moving average, initialised flag


def test_xla_step_is_guarded_and_says_what_it_does_not_check():
    model, optimizer, X, Y = _trained()
    Y = Y.copy()
    Y[7, 3] = 1e30
    before = _state(model, optimizer)
    with pytest.raises(FloatingPointError) as info:
        train(model, (X, Y), epochs=1, batch_size=60, optimizer=optimizer, progress=False, jit_compile=True)
    message = str(info.value)
    assert message.startswith("The training step made no update") and "gradients of the decoder" in message
    assert "in epoch 1, batch 1" in message and "runtime assertions inside the model" in message
    _assert_same(before, _state(model, optimizer))


def test_guard_under_two_replicas():
    script = os.path.join(ROOT, "tests", "training", "guard_distributed_script.py")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, script, ROOT], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [entry for entry in result.stdout.splitlines() if entry.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT ") :])
    assert out["num_replicas"] == 2
    for path in ("loop", "keras"):
        assert out[f"{path}_raised"], out
        assert "made no update" in out[f"{path}_message"] and "gradients of the decoder" in out[f"{path}_message"]
        assert out[f"{path}_unchanged"], out
    assert "decoder output" in out["loop_nan_message"] and out["loop_nan_unchanged"], out
