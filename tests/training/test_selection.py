"""Model selection: validation scores in ``train``, early stopping, best weights, resume, Keras, ``select``."""

import numpy as np
import pytest
from gpflow.keras import tf_keras

from gpflow_svgpvae.training import train
from tests.conftest import make_tiny_model, tiny_data


class Scripted:
    """A validation returning a scripted sequence of scores and remembering the weights it saw."""

    def __init__(self, values, key="mse"):
        self.values, self.key, self.weights = list(values), key, []

    def __call__(self, model):
        self.weights.append(_weights(model))
        return {self.key: self.values[len(self.weights) - 1], "other": 0.0}


def _weights(model):
    return [v.numpy().copy() for v in model.variables if v.dtype.is_floating]


def _assert_weights_equal(model, expected):
    actual = _weights(model)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        np.testing.assert_array_equal(a, b)


def _train(model, validation, epochs, **kwargs):
    X, Y = tiny_data()
    return train(
        model,
        (X, Y),
        epochs=epochs,
        batch_size=30,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        validation_data=validation,
        progress=False,
        **kwargs,
    )


def test_early_stopping_stops_at_patience_and_restores_the_best_epoch_exactly():
    model = make_tiny_model()
    scripted = Scripted([5.0, 4.0, 3.0, 3.5, 3.0, 3.2, 1.0, 0.5])
    history = _train(model, scripted, epochs=8, patience=3)
    # Best 3.0 at epoch 3 (a tie at epoch 5 is no improvement); 3 validations without improvement -> stop after 6.
    assert len(scripted.weights) == 6
    assert len(history["loss"]) == 6 and history["val_mse"] == [5.0, 4.0, 3.0, 3.5, 3.0, 3.2]
    assert history["val_other"] == [0.0] * 6
    assert (history["monitor"], history["best_epoch"], history["best_value"]) == ("val_mse", 3, 3.0)
    assert history["stopped_epoch"] == 6
    _assert_weights_equal(model, scripted.weights[2])
    assert not all(np.array_equal(a, b) for a, b in zip(scripted.weights[2], scripted.weights[5]))


def test_restore_best_false_keeps_the_last_weights_and_no_patience_trains_all_epochs():
    model = make_tiny_model()
    scripted = Scripted([2.0, 1.0, 3.0, 4.0, 5.0])
    history = _train(model, scripted, epochs=5, restore_best=False)
    assert len(history["loss"]) == 5 and history["best_epoch"] == 2 and history["stopped_epoch"] is None
    last = _weights(model)
    _train(model, Scripted([9.0]), epochs=1, restore_best=False)  # moves on from the last weights
    assert not all(np.array_equal(a, b) for a, b in zip(last, _weights(model)))


def test_validate_every_and_max_mode_on_another_key():
    model = make_tiny_model()
    scripted = Scripted([1.0, 3.0, 2.0], key="score")
    history = _train(model, scripted, epochs=5, validate_every=2, monitor="val_score", mode="max")
    # Validations after epochs 2, 4 and the last (5).
    assert len(scripted.weights) == 3 and len(history["loss"]) == 5
    assert history["best_epoch"] == 4 and history["best_value"] == 3.0
    _assert_weights_equal(model, scripted.weights[1])


def test_array_validation_monitors_val_loss_by_default():
    model = make_tiny_model()
    X, Y = tiny_data()
    history = _train(model, (X[:20], Y[:20]), epochs=3)
    assert history["monitor"] == "val_loss"
    best = int(np.argmin(history["val_loss"]))
    assert history["best_epoch"] == best + 1 and history["best_value"] == history["val_loss"][best]


def test_without_validation_the_history_is_unchanged():
    history = _train(make_tiny_model(), None, epochs=2)
    assert set(history) == {"loss", "elbo", "reconstruction", "kl"}


def test_resume_keeps_the_best_weights_and_the_patience_count(tmp_path):
    first = Scripted([5.0, 1.0, 4.0, 4.0])
    _train(make_tiny_model(), first, epochs=4, patience=3, checkpoint_dir=tmp_path)
    # A new process: a freshly built model resumes from the checkpoint; its 5th validation is the
    # third in a row without improvement, so it stops there and ends with the weights of epoch 2.
    model = make_tiny_model()
    second = Scripted([4.5, 0.1, 0.1])
    history = _train(model, second, epochs=8, patience=3, checkpoint_dir=tmp_path)
    assert len(second.weights) == 1 and len(history["loss"]) == 1
    assert history["best_epoch"] == 2 and history["best_value"] == 1.0 and history["stopped_epoch"] == 5
    _assert_weights_equal(model, first.weights[1])
    # Resumed again with the same arguments: the run had stopped, nothing more is trained.
    third = Scripted([0.0])
    model = make_tiny_model()
    history = _train(model, third, epochs=8, patience=3, checkpoint_dir=tmp_path)
    assert third.weights == [] and history.get("loss") is None and history["best_epoch"] == 2
    _assert_weights_equal(model, first.weights[1])


def test_validation_argument_errors():
    model = make_tiny_model()
    with pytest.raises(ValueError, match="patience and monitor need validation_data"):
        _train(model, None, epochs=1, patience=2)
    with pytest.raises(ValueError, match=r"patience \(validations without improvement.*positive whole number"):
        _train(model, Scripted([1.0]), epochs=1, patience=0)
    with pytest.raises(ValueError, match=r"validate_every .* positive whole number"):
        _train(model, Scripted([1.0]), epochs=1, validate_every=0)
    with pytest.raises(ValueError, match="mode must be 'auto', 'min' or 'max'"):
        _train(model, Scripted([1.0]), epochs=1, mode="lowest")
    with pytest.raises(TypeError, match="validation_data must be .* an ImputationValidation"):
        _train(model, {"X": 1}, epochs=1)
    with pytest.raises(TypeError, match=r"validation_data arrays must be \(X, Y\) or \(X, Y, mask\)"):
        _train(model, (1, 2, 3, 4), epochs=1)
    with pytest.raises(ValueError, match=r"monitor='val_nll' is not among the logged values .*val_mse"):
        _train(model, Scripted([1.0]), epochs=1, monitor="val_nll")
    with pytest.raises(TypeError, match="must return a dict of floats"):
        _train(model, lambda m: 1.0, epochs=1)


def test_training_on_the_original_data_with_its_validation_is_refused():
    from gpflow_svgpvae.imputation import hold_out_entries

    X, Y = tiny_data()
    model = make_tiny_model()
    Y = np.where(np.random.default_rng(0).random(Y.shape) < 0.2, np.nan, Y).astype(np.float32)
    model = make_tiny_model(missing_values="nan")
    train_data, validation = hold_out_entries((X, Y), 0.1)
    with pytest.raises(ValueError, match="train on the train_data returned by hold_out_entries"):
        train(model, (X, Y), epochs=1, batch_size=30, validation_data=validation, progress=False)
    history = train(model, train_data, epochs=2, batch_size=30, validation_data=validation, progress=False)
    assert history["monitor"] == "val_mse" and len(history["val_nll"]) == 2
    np.testing.assert_allclose(validation(model)["mse"], history["best_value"], rtol=1e-12)


# ------------------------------------------------------------------------------------------ Keras


def test_keras_early_stopping_restores_every_variable_of_the_best_epoch():
    from gpflow_svgpvae.training import ImputationValidationCallback

    X, Y = tiny_data()
    model = make_tiny_model()
    scripted = Scripted([3.0, 1.0, 2.0, 2.5, 0.5])
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    stop = tf_keras.callbacks.EarlyStopping("val_mse", patience=2, restore_best_weights=True)
    # The validation callback is listed after EarlyStopping: fit runs it first anyway.
    fit = view.fit((X, Y), batch_size=30, epochs=5, verbose=0, callbacks=[stop, ImputationValidationCallback(scripted)])
    assert fit.history["val_mse"] == [3.0, 1.0, 2.0, 2.5] and fit.history["val_other"] == [0.0] * 4
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1
    # Networks, kernel, inducing inputs and likelihood: all at their epoch-2 values.
    _assert_weights_equal(model, scripted.weights[1])
    names = {v.name.split("/")[0].split(":")[0] for v in model.trainable_variables}
    assert len(names) > 3
    np.testing.assert_array_equal(
        model.inducing_variable.Z.numpy(), scripted.weights[1][_index(model, model.inducing_variable.Z)]
    )


def _index(model, parameter):
    unconstrained = parameter.unconstrained_variable
    floats = [v for v in model.variables if v.dtype.is_floating]
    return next(i for i, v in enumerate(floats) if v is unconstrained)


def test_imputation_validation_callback_every_and_errors():
    from gpflow_svgpvae.training import ImputationValidationCallback

    X, Y = tiny_data()
    view = make_tiny_model().as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    scripted = Scripted([1.0, 2.0])
    fit = view.fit(
        (X, Y), batch_size=30, epochs=4, verbose=0, callbacks=[ImputationValidationCallback(scripted, every=2)]
    )
    assert len(scripted.weights) == 2 and len(fit.history["loss"]) == 4
    with pytest.raises(TypeError, match="validation must be an ImputationValidation"):
        ImputationValidationCallback((X, Y))
    with pytest.raises(ValueError, match=r"every \(epochs between validations\) must be a positive whole number"):
        ImputationValidationCallback(scripted, every=0)


# ------------------------------------------------------------------------------------------ select


def test_select_picks_the_candidate_with_the_lowest_score_and_reports_each():
    from gpflow_svgpvae.training import select

    X, Y = tiny_data()
    scores = {}

    def build(level, width):
        model = make_tiny_model(hidden=(width,))
        scores[id(model)] = level
        return model, tf_keras.optimizers.Adam(1e-2)

    def validation(model):
        return {"mse": scores[id(model)], "nll": -scores[id(model)]}

    candidates = [dict(level=3.0, width=4), dict(level=1.0, width=6), dict(level=2.0, width=4)]
    model, table = select(
        build, candidates, (X, Y), validation=validation, epochs=2, patience=None, batch_size=30, seed=0
    )
    assert scores[id(model)] == 1.0
    assert [row["candidate"] for row in table] == candidates
    assert [row["selected"] for row in table] == [False, True, False]
    assert [row["val_mse"] for row in table] == [3.0, 1.0, 2.0] and table[0]["val_nll"] == -3.0
    assert all(row["best_epoch"] == 1 and row["seconds"] > 0 for row in table)  # constant scores: the first
    assert [row["epochs"] for row in table] == [2, 2, 2]  # patience None: every epoch runs
    model, _ = select(
        build, candidates[:2], (X, Y), validation=validation, epochs=1, patience=None, monitor="val_nll", batch_size=30
    )
    assert scores[id(model)] == 3.0


def test_select_errors():
    from gpflow_svgpvae.training import select

    X, Y = tiny_data()
    with pytest.raises(ValueError, match="candidates is empty"):
        select(make_tiny_model, [], (X, Y), epochs=1, patience=None)
    with pytest.raises(ValueError, match="each candidate must be a dict"):
        select(make_tiny_model, [4], (X, Y), epochs=1, patience=None)
    with pytest.raises(ValueError, match="fraction .* must lie in"):
        select(make_tiny_model, [{}], (X, Y), validation_fraction=1.0, epochs=1, patience=None)
    with pytest.raises(ValueError, match="build_model returned an optimizer and select got optimizer"):
        select(
            lambda: (make_tiny_model(), tf_keras.optimizers.Adam()),
            [{}],
            (X, Y),
            validation=Scripted([1.0]),
            epochs=1,
            patience=None,
            batch_size=30,
            optimizer=tf_keras.optimizers.Adam(),
        )


def test_select_refit_trains_on_all_observed_entries_for_the_best_epoch_count(monkeypatch):
    from gpflow_svgpvae.imputation import hold_out_entries
    from gpflow_svgpvae.training import selection

    X, Y = tiny_data()
    train_data, validation = hold_out_entries((X, Y), 0.1, seed=0)
    full = selection._with_held_out(train_data, validation)
    np.testing.assert_array_equal(full[1], Y)
    np.testing.assert_array_equal(full[2], np.ones_like(Y))
    calls = []

    def recording_train(model, data, **kwargs):
        calls.append((data, kwargs))
        return train(model, data, **kwargs)

    monkeypatch.setattr(selection, "train", recording_train)
    model, table = selection.select(
        lambda: make_tiny_model(), [{}], (X, Y), epochs=3, patience=None, batch_size=30, refit=True
    )
    assert len(calls) == 2 and table[0]["selected"]
    (searched, first), (refitted, second) = calls
    assert first["validation_data"] is not None and "validation_data" not in second
    assert second["epochs"] == table[0]["best_epoch"]
    np.testing.assert_array_equal(refitted[1], Y)
    np.testing.assert_array_equal(refitted[2], np.ones_like(Y))
    assert np.sum(searched[2] == 0) == round(0.1 * Y.size)
