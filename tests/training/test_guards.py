"""Checks before the first training step: arguments, whole arrays (masks, likelihood range) and
warnings for training that cannot learn; each leaves every model variable unchanged."""

import re
import warnings

import gpflow
import numpy as np
import pytest
import tensorflow as tf

import gpflow_svgpvae as gv
from gpflow_svgpvae.posterior import SVGPVAEPosterior
from gpflow_svgpvae.training import train
from tests.conftest import make_tiny_model, tiny_data


def _built_model(**kwargs):
    """A tiny SVGP-VAE whose networks are built (so all its variables exist before the call)."""
    X, Y = tiny_data()
    model = make_tiny_model(**kwargs)
    model.objective_terms((X[:10], Y[:10]), training=False)
    return model, X, Y


def _named(name, value):
    return re.escape(name) + ".*" + re.escape(repr(value))


def _values(model):
    return [v.numpy().copy() for v in model.trainable_variables]


def _assert_unchanged(model, before):
    after = _values(model)
    assert len(after) == len(before)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ 1. arguments
@pytest.mark.parametrize("name", ["batch_size", "steps_per_epoch", "checkpoint_every", "epochs"])
@pytest.mark.parametrize("bad", [0, -3, 20.5, True])
def test_train_rejects_non_positive_whole_arguments(name, bad, tmp_path):
    model, X, Y = _built_model()
    before = _values(model)
    kwargs = dict(epochs=1, batch_size=20, progress=False, checkpoint_dir=str(tmp_path))
    kwargs[name] = bad
    with pytest.raises(ValueError, match=_named(name, bad)):
        train(model, (X, Y), **kwargs)
    _assert_unchanged(model, before)
    assert not list(tmp_path.iterdir())  # no checkpoint written


def test_train_accepts_whole_floats():
    model, X, Y = _built_model()
    history = train(model, (X, Y), epochs=1.0, batch_size=30.0, progress=False)
    assert len(history["loss"]) == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, False])
def test_posterior_and_prediction_sizes_are_checked(bad):
    model, X, Y = _built_model()
    with pytest.raises(ValueError, match=_named("batch_size", bad)):
        SVGPVAEPosterior.from_data(model, (X, Y), batch_size=bad)
    with pytest.raises(ValueError, match=_named("batch_size", bad)):
        model.encode_all(Y, batch_size=bad)
    posterior = SVGPVAEPosterior.from_data(model, (X, Y))
    with pytest.raises(ValueError, match=_named("num_samples", bad)):
        posterior.predict_y(X[:5], num_samples=bad)
    with pytest.raises(ValueError, match=_named("batch_size", bad)):
        posterior.predict_f(X[:5], data=(X, Y), batch_size=bad)


# ------------------------------------------------------------------ 2. whole-data mask checks
def _mask_cases(Y):
    ones = np.ones_like(Y)
    two = ones.copy()
    two[3, 2] = 2.0
    half = ones.copy()
    half[5, 0] = 0.5
    nan = ones.copy()
    nan[7, 1] = np.nan
    return {
        "values": (two, "mask has values other than 0 and 1"),
        "fraction": (half, "mask has values other than 0 and 1"),
        "nan": (nan, "mask contains NaN"),
        "shape": (ones[:, :5], "mask must have Y's shape"),
    }


@pytest.mark.parametrize("case", ["values", "fraction", "nan", "shape"])
@pytest.mark.parametrize("where", ["data", "validation"])
def test_train_rejects_bad_masks_before_any_step(case, where):
    model, X, Y = _built_model()
    mask, message = _mask_cases(Y)[case]
    good = (X, Y, np.ones_like(Y))
    bad = (X, Y, mask)
    data, validation = (bad, good) if where == "data" else (good, bad)
    before = _values(model)
    with pytest.raises(ValueError, match=message):
        train(model, data, epochs=1, batch_size=20, validation_data=validation, progress=False)
    _assert_unchanged(model, before)


def test_keras_fit_rejects_bad_mask_before_any_step():
    from gpflow.keras import tf_keras

    model, X, Y = _built_model()
    mask, _ = _mask_cases(Y)["values"]
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    before = _values(model)
    with pytest.raises(ValueError, match="mask has values other than 0 and 1"):
        view.fit((X, Y, mask), batch_size=20, epochs=1, verbose=0)
    _assert_unchanged(model, before)


# ------------------------------------------------------------------ 3. likelihood range
@pytest.mark.parametrize(
    "likelihood", [lambda: gv.Bernoulli(), lambda: gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)]
)
def test_bernoulli_refuses_targets_outside_unit_interval(likelihood):
    model, X, Y = _built_model(likelihood=likelihood())
    pixels = np.round(np.clip(Y, 0, 1) * 255).astype(np.uint8)
    before = _values(model)
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*255"):
        train(model, (X, pixels), epochs=1, batch_size=20, progress=False)
    _assert_unchanged(model, before)
    # targets outside [0, 1] only at missing entries are fine (never read)
    Y01 = np.clip(Y, 0.0, 1.0)
    mask = np.ones_like(Y01)
    Y01[0, 0], mask[0, 0] = 7.0, 0.0
    train(model, (X, Y01, mask), epochs=1, batch_size=20, progress=False)


def test_gaussian_accepts_targets_outside_unit_interval():
    model, X, Y = _built_model()
    train(model, (X, 255.0 * Y), epochs=1, batch_size=20, progress=False)


# ------------------------------------------------------------------ 4. warnings
def test_warns_when_nothing_is_observed():
    model, X, Y = _built_model()
    with pytest.warns(UserWarning, match="nothing is observed"):
        train(model, (X, Y, np.zeros_like(Y)), epochs=1, batch_size=20, progress=False)
    nan_model, X, Y = _built_model(missing_values="nan")
    with pytest.warns(UserWarning, match="nothing is observed"):
        train(nan_model, (X, np.full_like(Y, np.nan)), epochs=1, batch_size=20, progress=False)


def test_no_warning_when_something_is_observed():
    model, X, Y = _built_model()
    mask = np.zeros_like(Y)
    mask[4, 2] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        train(model, (X, Y, mask), epochs=1, batch_size=20, progress=False)


def test_warns_when_no_steps_remain(tmp_path):
    model, X, Y = _built_model()
    train(model, (X, Y), epochs=1, batch_size=20, progress=False, checkpoint_dir=str(tmp_path))
    before = _values(model)
    with pytest.warns(UserWarning, match="zero training steps"):
        history = train(model, (X, Y), epochs=1, batch_size=20, progress=False, checkpoint_dir=str(tmp_path))
    assert history == {}
    _assert_unchanged(model, before)
