"""The Keras and GPflow user's path (issue 16): stock callbacks, checkpoints into fresh models,
checks that survive retracing and run before any update, error messages, logs on one scale."""

import csv
import glob

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.networks import mlp_encoder
from gpflow_svgpvae.training import train
from tests.conftest import make_tiny_model, tiny_data


def _dataset(X, Y, batch_size=20):
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch_size)


def _values(model):
    """Every variable of the model (trainable or not), as numpy arrays."""
    return [v.numpy().copy() for v in model.variables]


def _assert_same(a, b, atol=0.0):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=atol, rtol=0)


def _view(model, learning_rate=1e-2):
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(learning_rate))
    return view


# ------------------------------------------------------------------ callbacks
def test_model_checkpoint_default_mode_saves_a_restorable_training_state(tmp_path):
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    view = _view(model)
    path = str(tmp_path / "model_{epoch}")
    view.fit(_dataset(X, Y), epochs=2, verbose=0, callbacks=[tf_keras.callbacks.ModelCheckpoint(path)])
    assert glob.glob(str(tmp_path / "model_2.index"))
    other = make_tiny_model(seed=5)
    other_view = _view(other)
    other_view.load_weights(str(tmp_path / "model_2"))
    _assert_same(_values(other), _values(model))
    assert int(other_view.optimizer.iterations.numpy()) == int(view.optimizer.iterations.numpy()) == 6
    with pytest.raises(ValueError, match="checkpoint"):
        view.save(str(tmp_path / "model.keras"))


def test_tensorboard_callback_writes_the_package_logs(tmp_path):
    X, Y = tiny_data()
    view = _view(make_tiny_model())
    history = view.fit(
        _dataset(X, Y), epochs=2, verbose=0, callbacks=[tf_keras.callbacks.TensorBoard(str(tmp_path / "tb"))]
    )
    scalars = {}
    for path in glob.glob(str(tmp_path / "tb" / "train" / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(float(tf.make_ndarray(value.tensor)))
    for key in ("loss", "elbo", "reconstruction", "kl"):
        np.testing.assert_allclose(scalars[f"epoch_{key}"], history.history[key], rtol=1e-6)


def test_csv_logger_and_progbar_report_the_package_logs(tmp_path, capsys):
    X, Y = tiny_data()
    view = _view(make_tiny_model())
    path = tmp_path / "log.csv"
    history = view.fit(
        _dataset(X, Y),
        epochs=2,
        verbose=1,
        callbacks=[tf_keras.callbacks.CSVLogger(str(path)), tf_keras.callbacks.ProgbarLogger()],
    )
    rows = list(csv.DictReader(open(path)))
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    for key in ("loss", "elbo", "reconstruction", "kl"):
        np.testing.assert_allclose([float(r[key]) for r in rows], history.history[key], rtol=1e-6)
    printed = capsys.readouterr().out
    for key in ("elbo:", "reconstruction:", "kl:"):
        assert key in printed


def test_backup_and_restore_resumes_as_if_uninterrupted(tmp_path):
    X, Y = tiny_data()
    straight = make_tiny_model(seed=0)
    _view(straight).fit(_dataset(X, Y), epochs=4, verbose=0)

    class Interrupt(tf_keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("interrupted")

    backup = str(tmp_path / "backup")
    first = make_tiny_model(seed=0)
    with pytest.raises(RuntimeError, match="interrupted"):
        _view(first).fit(
            _dataset(X, Y), epochs=4, verbose=0, callbacks=[tf_keras.callbacks.BackupAndRestore(backup), Interrupt()]
        )
    resumed = make_tiny_model(seed=3)  # a fresh process: other initial weights
    history = _view(resumed).fit(
        _dataset(X, Y), epochs=4, verbose=0, callbacks=[tf_keras.callbacks.BackupAndRestore(backup)]
    )
    assert len(history.history["loss"]) == 2  # epochs 3 and 4
    _assert_same(_values(resumed), _values(straight), atol=1e-6)


def test_early_stopping_restores_best_weights():
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    view = _view(model, learning_rate=5e-2)
    snapshots = []

    class Snapshot(tf_keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            snapshots.append((logs["loss"], _values(model)))

    stop = tf_keras.callbacks.EarlyStopping(monitor="loss", patience=2, restore_best_weights=True, min_delta=1e9)
    view.fit(_dataset(X, Y), epochs=10, verbose=0, callbacks=[Snapshot(), stop])
    assert len(snapshots) == 3  # min_delta is huge: no epoch improves after the first
    # restore_best_weights puts back the first epoch's weights (the best by definition here).
    trainable = {v.ref() for v in model.trainable_variables}
    best = snapshots[0][1]
    for variable, value in zip(model.variables, best):
        if variable.ref() in trainable:
            np.testing.assert_allclose(variable.numpy(), value, rtol=0, atol=0)


# -------------------------------------------------------- checks before updates
def test_arrays_are_checked_whole_before_the_first_step():
    X, Y = tiny_data()
    Y = Y.copy()
    Y[7 * 6 + 2, 3] = np.nan  # in the 8th of 10 batches of 6
    for fit in ("loop", "keras_xy", "keras_tuple"):
        model = make_tiny_model(seed=0)
        before = _values(model)
        with pytest.raises(ValueError, match=r"^Y \(observations\) contains NaN or inf.*point 44"):
            if fit == "loop":
                train(model, (X, Y), epochs=1, batch_size=6, progress=False)
            elif fit == "keras_xy":
                _view(model).fit(X, Y, batch_size=6, epochs=1, verbose=0)
            else:
                _view(model).fit((X, Y), batch_size=6, epochs=1, verbose=0)
        _assert_same(_values(model), before)


@pytest.mark.parametrize("path", ["loop", pytest.param("keras", marks=pytest.mark.slow)])
def test_a_bad_batch_of_a_dataset_is_named_and_makes_no_update(path):
    X, Y = tiny_data()
    bad = Y.copy()
    bad[7 * 6 + 2, 3] = np.inf  # the 8th batch of 6
    model = make_tiny_model(seed=0)
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        if path == "loop":
            train(model, _dataset(X, bad, 6), epochs=1, optimizer=tf_keras.optimizers.Adam(1e-2), progress=False)
        else:
            _view(model).fit(_dataset(X, bad, 6), epochs=1, verbose=0)
    message = str(error.value)
    assert message.startswith("Y (observations) contains NaN or inf")  # the package's words first
    assert "epoch 1, batch 8" in message
    # The model is exactly the one trained on the 7 good batches before it.
    reference = make_tiny_model(seed=0)
    if path == "loop":
        train(
            reference, _dataset(X[:42], Y[:42], 6), epochs=1, optimizer=tf_keras.optimizers.Adam(1e-2), progress=False
        )
    else:
        _view(reference).fit(_dataset(X[:42], Y[:42], 6), epochs=1, verbose=0)
    _assert_same(_values(model), _values(reference))


def test_retraced_fit_still_checks_the_input_width():
    """Keras retraces fit's step with relaxed shapes after a first fit; the width check holds."""
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    view = _view(model)
    view.fit(_dataset(X, Y), epochs=1, verbose=0)
    before = _values(model)
    wide = np.c_[X, X]
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        view.fit(_dataset(wide, Y), epochs=1, verbose=0)
    assert str(error.value).startswith("X has the wrong number of input dimensions: the model expects 1")
    _assert_same(_values(model), before)


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli"])
def test_decoder_output_width_must_match_the_observations(likelihood):
    X, Y = tiny_data()
    encoder = mlp_encoder(8, 1, hidden_units=(8,))
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(8, activation="tanh"), tf_keras.layers.Dense(1)])
    model = gv.SVGPVAE(
        encoder, decoder, gpflow.kernels.Matern52(), np.linspace(0, 10, 4)[:, None], likelihood, num_data=len(X)
    )
    with pytest.raises(ValueError, match="decoder returned 1 values per point but the observations have 8"):
        model.elbo((X[:10], np.clip(Y[:10], 0, 1)))
    # Also when Keras hides the widths (relaxed shapes): a run-time check, before any weight update.
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    before = [v.numpy().copy() for v in model.trainable_variables]
    spec = (tf.TensorSpec([None, None], tf.float64), tf.TensorSpec([None, None], tf.float32))
    step = tf.function(lambda x, y: view.train_step((x, y)), input_signature=spec)
    with pytest.raises(tf.errors.InvalidArgumentError, match="decoder returns a different number of values"):
        step(X[:10], np.clip(Y[:10], 0, 1).astype(np.float32))
    _assert_same([v.numpy() for v in model.trainable_variables], before)


# ------------------------------------------------------------------ logs, elbo
def test_logs_are_on_one_scale():
    """elbo = reconstruction - kl, all at the whole training set's scale (N/b = 3 here)."""
    X, Y = tiny_data()
    history = train(make_tiny_model(seed=0), _dataset(X, Y), epochs=2, progress=False)
    fit = _view(make_tiny_model(seed=0)).fit(_dataset(X, Y), epochs=2, verbose=0).history
    for logs in (history, fit):
        np.testing.assert_allclose(
            np.array(logs["elbo"]), np.array(logs["reconstruction"]) - np.array(logs["kl"]), rtol=1e-10
        )
        np.testing.assert_allclose(logs["loss"], -np.array(logs["elbo"]), rtol=1e-10)


def test_elbo_is_deterministic_and_training_loss_draws_afresh():
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    batch = (X[:20], Y[:20])
    counter = int(model.sample_counter.numpy())
    first, second = float(model.elbo(batch)), float(model.elbo(batch))
    assert first == second and int(model.sample_counter.numpy()) == counter
    # seed=None is the draw the next step would make: the same number as an evaluation that advances.
    advancing = float(model.objective_terms(batch, training=False).elbo())
    assert advancing == first and int(model.sample_counter.numpy()) == counter + 1
    assert float(model.elbo(batch, seed=3)) == float(model.elbo(batch, seed=3))
    assert float(model.elbo(batch, seed=3)) != float(model.elbo(batch, seed=4))
    losses = [float(model.training_loss(batch)) for _ in range(2)]
    assert losses[0] != losses[1] and int(model.sample_counter.numpy()) == counter + 3


# ------------------------------------------------------- checkpoints, networks
def _user_model(seed, encoder=None):
    tf_keras.utils.set_random_seed(seed)
    encoder = encoder or mlp_encoder(8, 2, hidden_units=(8,))
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(8, activation="relu"), tf_keras.layers.Dense(8)])
    kernel = gpflow.kernels.Matern52()
    return gv.SVGPVAE(encoder, decoder, kernel, np.linspace(0, 10, 4)[:, None], num_data=60)


def test_checkpoint_restores_into_a_fresh_model_with_a_lazy_sequential_decoder(tmp_path):
    X, Y = tiny_data()
    model = _user_model(0)
    assert model.decoder.built  # built at construction: L = 2 is known from the encoder
    train(model, (X, Y), epochs=1, batch_size=20, progress=False)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    fresh = _user_model(1)
    tf.train.Checkpoint(model=fresh).read(path).assert_consumed()
    _assert_same(_values(fresh), _values(model))
    np.testing.assert_allclose(fresh.predict_y(X[:5], (X, Y)), model.predict_y(X[:5], (X, Y)), rtol=1e-6)


def test_build_networks_builds_an_encoder_without_input_shape(tmp_path):
    """A user encoder without an input shape: build_networks(observation_shape) before restoring."""
    X, Y = tiny_data()

    def lazy_encoder():
        body = tf_keras.Sequential([tf_keras.layers.Dense(8, activation="relu")])
        return _LazyEncoder(body, gv.networks.GaussianSiteHead(2))  # input width unknown until called

    model = _user_model(0, encoder=lazy_encoder())
    model.build_networks(observation_shape=(8,))
    train(model, (X, Y), epochs=1, batch_size=20, progress=False)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    fresh = _user_model(1, encoder=lazy_encoder()).build_networks(observation_shape=(8,), num_latent_gps=2)
    tf.train.Checkpoint(model=fresh).read(path).assert_consumed()
    _assert_same(_values(fresh), _values(model))
    with pytest.raises(ValueError, match="decoder cannot take inputs of shape"):
        gv.SVGPVAE(
            mlp_encoder(8, 2, hidden_units=(8,)),
            tf_keras.Sequential([tf_keras.layers.Reshape((3, 3))]),
            gpflow.kernels.Matern52(),
            np.zeros((4, 1)),
            num_data=60,
        )


class _LazyEncoder(tf_keras.Model):
    def __init__(self, body, head):
        super().__init__()
        self.body, self.head = body, head

    def call(self, inputs, training=None):
        return self.head(self.body(inputs))


def test_trace_time_errors_in_fit_lead_with_the_package_message():
    """A ValueError raised while Keras traces the step arrives as "in user code: File ..."; restated."""
    X, Y = tiny_data()
    view = _view(make_tiny_model(seed=0))
    with pytest.raises(ValueError) as error:
        view.fit(_dataset(np.c_[X, X], Y), epochs=1, verbose=0)
    assert str(error.value).startswith("X has 2 input dimensions but the model expects 1")
    assert "epoch 1, batch 1" in str(error.value)


def test_a_sequential_encoder_ending_in_the_site_head_gets_advice():
    X, Y = tiny_data()
    encoder = tf_keras.Sequential([tf_keras.layers.Dense(8), gv.networks.GaussianSiteHead(1)])
    model = gv.SVGPVAE(
        encoder,
        tf_keras.Sequential([tf_keras.layers.Dense(8)]),
        gpflow.kernels.RBF(),
        np.linspace(0, 10, 4)[:, None],
        num_data=60,
    )
    with pytest.raises(ValueError, match="Sequential ending in a layer with two outputs.*functional API"):
        model.elbo((X[:10], Y[:10]))


# ------------------------------------------------------------------ validation and evaluate
class _ELBOAtValidation(tf_keras.callbacks.Callback):
    """Records the model's own ``elbo`` of the validation data just before Keras evaluates it."""

    def __init__(self, model, data):
        super().__init__()
        self.gpflow_model, self.data, self.values = model, data, []

    def on_test_begin(self, logs=None):
        self.values.append(float(self.gpflow_model.elbo(self.data)))  # the next draw; no counter step


def test_fit_validation_and_evaluate_report_the_models_elbo():
    """``fit(validation_data=...)``'s ``val_elbo`` / ``val_loss`` and ``evaluate``'s ``elbo`` / ``loss``
    are the model's own ``elbo`` of the same data (one batch), at the state Keras evaluates:
    ``elbo(data)`` uses the draw that the next evaluation makes, in inference mode (float32
    networks, eager against compiled: a relative 1e-6)."""
    X, Y = tiny_data()
    model = make_tiny_model()
    view = _view(model)
    val = (X[40:], Y[40:])
    probe = _ELBOAtValidation(model, val)
    history = view.fit(_dataset(X[:40], Y[:40]), epochs=2, verbose=0, validation_data=_dataset(*val), callbacks=[probe])
    assert len(probe.values) == 2
    np.testing.assert_allclose(history.history["val_elbo"], probe.values, rtol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"], -np.array(probe.values), rtol=1e-6)
    assert probe.values[0] != probe.values[1]  # the model trained in between
    expected = float(model.elbo(val))
    logs = view.evaluate(_dataset(*val), verbose=0, return_dict=True)
    np.testing.assert_allclose([logs["elbo"], -logs["loss"]], [expected, expected], rtol=1e-6)
    np.testing.assert_allclose(logs["reconstruction"] - logs["kl"], expected, rtol=1e-6)
    # The evaluation made its draw: the next elbo uses a new one.
    assert float(model.elbo(val)) != expected
