"""Training paths: compiled loop vs Keras fit, GECO, checkpoints, SavedModel, callbacks."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.models.base import ELBOTerms
from gpflow_svgpvae.training import ELBO, GECO, OptimizerGroups, train
from tests.conftest import make_tiny_model, tiny_data


def _dataset(X, Y, batch_size=20):
    # Unshuffled: both paths must see the same batches in the same order.
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch_size)


def _flat(model):
    return np.concatenate([v.numpy().ravel().astype(np.float64) for v in model.trainable_variables])


@pytest.mark.parametrize(
    "objective_factory",
    [lambda: ELBO(), lambda: ELBO(beta=0.5), lambda: ELBO(warmup_steps=5), lambda: GECO(0.02)],
)
def test_loop_and_keras_fit_agree(objective_factory):
    X, Y = tiny_data()
    epochs = 3
    loop_model = make_tiny_model(seed=0)
    history = train(
        loop_model,
        _dataset(X, Y),
        epochs=epochs,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=objective_factory(),
        progress=False,
    )

    keras_model = make_tiny_model(seed=0)
    view = keras_model.as_training_model(objective=objective_factory())
    view.compile(tf_keras.optimizers.Adam(1e-2))
    fit = view.fit(_dataset(X, Y), epochs=epochs, verbose=0)

    for key in ("loss", "elbo", "reconstruction", "kl"):
        np.testing.assert_allclose(history[key], fit.history[key], rtol=1e-5, err_msg=key)
    np.testing.assert_allclose(_flat(loop_model), _flat(keras_model), rtol=1e-4, atol=1e-6)
    if isinstance(view.objective, GECO):
        np.testing.assert_allclose(history["geco_lambda"], fit.history["geco_lambda"], rtol=1e-6)
    for key in view.objective.log_keys:
        np.testing.assert_allclose(history[key], fit.history[key], rtol=1e-6, err_msg=key)


def test_geco_update_rule_matches_numpy():
    """C, its moving average and lambda follow the notes' recursions step by step."""
    X, Y = tiny_data()
    model = make_tiny_model()
    geco = GECO(0.02, alpha=0.9, nu=0.5, lambda_bounds=(1e-3, 1e3))
    opt = tf_keras.optimizers.Adam(1e-3)
    from gpflow_svgpvae.training.step import training_step

    c_ma, lam = None, 1.0
    for i in range(4):
        batch = (X[i * 10 : (i + 1) * 10], Y[i * 10 : (i + 1) * 10])
        logs = training_step(model, geco, opt, batch)
        C = float(logs["geco_constraint"])
        c_ma = C if c_ma is None else 0.9 * c_ma + 0.1 * C
        assert abs(float(logs["geco_constraint_ma"]) - c_ma) < 1e-12
        assert abs(float(logs["geco_lambda"]) - lam) < 1e-12  # lambda used in this step
        lam = float(np.clip(lam * np.exp(0.5 * c_ma), 1e-3, 1e3))
        assert abs(float(geco.lagrange_multiplier.numpy()) - lam) < 1e-12
        expected_loss = float(logs["kl"]) / float(model.num_data / 10) + float(logs["geco_lambda"]) * c_ma
        assert abs(float(logs["loss"]) - expected_loss) < 1e-8


def test_geco_bounds_hold():
    geco = GECO(0.02, lambda_bounds=(0.5, 2.0))
    geco.constraint_ma.assign(50.0)
    for _ in range(3):
        geco.after_step()
    assert float(geco.lagrange_multiplier.numpy()) == 2.0
    geco.constraint_ma.assign(-50.0)
    geco.after_step()
    assert float(geco.lagrange_multiplier.numpy()) == 0.5
    with pytest.raises(ValueError):
        GECO(0.0)


def test_checkpoint_resume_equals_uninterrupted_run(tmp_path):
    X, Y = tiny_data()
    straight = make_tiny_model(seed=0)
    geco = GECO(0.02)
    train(straight, _dataset(X, Y), epochs=4, optimizer=tf_keras.optimizers.Adam(1e-2), objective=geco, progress=False)

    first = make_tiny_model(seed=0)
    train(
        first,
        _dataset(X, Y),
        epochs=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=GECO(0.02),
        checkpoint_dir=tmp_path,
        progress=False,
    )
    # a fresh process would rebuild everything from scratch with a different init:
    resumed = make_tiny_model(seed=123)
    resumed_geco = GECO(0.02)
    history = train(
        resumed,
        _dataset(X, Y),
        epochs=4,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=resumed_geco,
        checkpoint_dir=tmp_path,
        progress=False,
    )
    assert len(history["loss"]) == 2  # epochs 3 and 4 only
    np.testing.assert_allclose(_flat(resumed), _flat(straight), rtol=1e-5, atol=1e-7)
    assert abs(float(resumed_geco.lagrange_multiplier.numpy()) - float(geco.lagrange_multiplier.numpy())) < 1e-9


def test_kl_warmup_weights_follow_the_linear_ramp():
    # beta_t = beta * min(1, (t + 1) / T_w); the loss is -(scale * reconstruction - beta_t * kl).
    objective = ELBO(beta=0.8, warmup_steps=4)
    terms = ELBOTerms(
        tf.constant(-2.0, tf.float64), tf.constant(5.0, tf.float64), tf.constant(3.0, tf.float64), None, None, 1
    )
    for t in range(7):
        weight = 0.8 * min(1.0, (t + 1) / 4)
        loss, logs = objective.loss(terms, None)
        np.testing.assert_allclose(float(logs["kl_weight"]), weight, rtol=1e-12)
        np.testing.assert_allclose(float(loss), -(3.0 * -2.0 - weight * 5.0), rtol=1e-12)
        objective.after_step()
    assert ELBO().log_keys == () and objective.log_keys == ("kl_weight",)


def test_kl_warmup_of_one_step_is_the_elbo():
    X, Y = tiny_data()
    plain, warm = make_tiny_model(seed=0), make_tiny_model(seed=0)
    h1 = train(
        plain, _dataset(X, Y), epochs=2, optimizer=tf_keras.optimizers.Adam(1e-2), objective=ELBO(), progress=False
    )
    h2 = train(
        warm,
        _dataset(X, Y),
        epochs=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=ELBO(warmup_steps=1),
        progress=False,
    )
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-12)
    np.testing.assert_allclose(h2["kl_weight"], [1.0, 1.0])
    np.testing.assert_allclose(_flat(plain), _flat(warm), rtol=1e-12)


def test_kl_warmup_resumes_its_schedule_from_a_checkpoint(tmp_path):
    X, Y = tiny_data()  # 3 steps per epoch: the warm-up of 8 steps spans the interruption
    straight = make_tiny_model(seed=0)
    h = train(
        straight,
        _dataset(X, Y),
        epochs=4,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=ELBO(warmup_steps=8),
        progress=False,
    )
    first = make_tiny_model(seed=0)
    train(
        first,
        _dataset(X, Y),
        epochs=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=ELBO(warmup_steps=8),
        checkpoint_dir=tmp_path,
        progress=False,
    )
    resumed_objective = ELBO(warmup_steps=8)
    resumed = make_tiny_model(seed=123)
    history = train(
        resumed,
        _dataset(X, Y),
        epochs=4,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=resumed_objective,
        checkpoint_dir=tmp_path,
        progress=False,
    )
    assert int(resumed_objective.step.numpy()) == 12
    np.testing.assert_allclose(history["kl_weight"], h["kl_weight"][2:], rtol=1e-12)
    np.testing.assert_allclose(_flat(resumed), _flat(straight), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "3"])
def test_kl_warmup_rejects_bad_steps(bad):
    with pytest.raises((ValueError, TypeError), match="warmup_steps"):
        ELBO(warmup_steps=bad)


def test_savedmodel_export_reloads_without_python_class(tmp_path):
    X, Y = tiny_data()
    model = make_tiny_model()
    train(model, _dataset(X, Y), epochs=1, progress=False)
    posterior = model.posterior((X, Y), batch_size=25)
    Xnew = np.linspace(0, 10, 17)[:, None]
    mean, var = posterior.predict_f(Xnew)
    images = posterior.predict_y(Xnew)
    posterior.export(str(tmp_path / "svgpvae"))
    loaded = tf.saved_model.load(str(tmp_path / "svgpvae"))
    out_f = loaded.predict_f(tf.constant(Xnew))
    np.testing.assert_allclose(out_f["mean"], mean, atol=1e-12)
    np.testing.assert_allclose(out_f["variance"], var, atol=1e-12)
    np.testing.assert_allclose(loaded.predict_y(tf.constant(Xnew))["mean"], images, atol=1e-6)
    serving = loaded.signatures["predict_f"](Xnew=tf.constant(Xnew))
    np.testing.assert_allclose(serving["mean"], mean, atol=1e-12)


def test_keras_callbacks(tmp_path):
    X, Y = tiny_data()
    model = make_tiny_model()
    view = model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
    ckpt = str(tmp_path / "weights.ckpt")
    callbacks = [
        tf_keras.callbacks.ModelCheckpoint(ckpt, save_weights_only=True, monitor="loss"),
        tf_keras.callbacks.EarlyStopping(monitor="loss", patience=1, min_delta=1e9),
        tf_keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=1, min_delta=1e9, factor=0.5),
        tf_keras.callbacks.BackupAndRestore(str(tmp_path / "backup")),
    ]
    hist = view.fit(_dataset(X, Y), epochs=10, verbose=0, callbacks=callbacks)
    # min_delta is huge, so EarlyStopping stops after patience + 1 epochs and the LR was halved once.
    assert len(hist.history["loss"]) == 2
    assert abs(float(view.optimizer.learning_rate.numpy()) - 5e-3) < 1e-9
    # ModelCheckpoint saved the GPflow model's variables: restoring them into a fresh model reproduces it.
    other = make_tiny_model(seed=7)
    other_view = other.as_training_model()
    other_view.compile(tf_keras.optimizers.Adam(1e-2))
    other_view.load_weights(ckpt).expect_partial()
    np.testing.assert_allclose(_flat(other), _flat(model), atol=1e-7)


def test_train_validates_arguments():
    X, Y = tiny_data()
    model = make_tiny_model()
    with pytest.raises(ValueError, match="batch_size"):
        train(model, (X, Y), epochs=1)
    with pytest.raises(ValueError, match="no batches"):
        train(model, tf.data.Dataset.from_tensor_slices((X, Y)).batch(10).take(0), epochs=1, progress=False)
    with pytest.raises(TypeError, match="objective"):
        train(model, (X, Y), batch_size=10, epochs=1, objective="geco")


def test_xla_objective_matches_graph_objective():
    """XLA draws other random numbers (TF's stateless RNG differs between the XLA
    and CPU kernels), so compare the deterministic KL exactly and the Monte Carlo
    reconstruction with many samples."""
    X, Y = tiny_data()
    model = make_tiny_model(seed=0, num_samples=4000)
    batch = (X[:20], Y[:20])
    graph = tf.function(lambda: model.objective_terms(batch))()
    xla = tf.function(lambda: model.objective_terms(batch), jit_compile=True)()
    assert abs(float(graph.kl) - float(xla.kl)) < 1e-6 * abs(float(graph.kl))
    # Two independent 4000-sample estimates: their difference has the standard error
    # sqrt(2) sd / sqrt(4000), sd that of one draw's log-likelihood (estimated from 500 draws).
    marginals = model.batch_posterior(batch, training=False)
    mean, var = marginals.mean.numpy(), marginals.variance.numpy()
    z = mean + np.sqrt(var) * np.random.default_rng(0).standard_normal((500,) + mean.shape)
    params = model.decode(z.reshape(-1, mean.shape[-1]), training=False)
    one_draw = model.likelihood.log_prob(np.tile(batch[1], (500, 1)), params).numpy().reshape(500, -1).sum(1)
    se = np.sqrt(2.0 / 4000) * one_draw.std()
    np.testing.assert_allclose(one_draw.mean(), float(graph.reconstruction), atol=5 * one_draw.std() / np.sqrt(500))
    assert abs(float(graph.reconstruction) - float(xla.reconstruction)) < 5 * se
    assert 5 * se < 0.01 * abs(float(graph.reconstruction))  # tighter than the former 1% of the value


def test_xla_training_follows_graph_training():
    """One epoch with XLA moves every parameter as the graph step does: XLA draws other random
    numbers, so with 2000 Monte Carlo samples the two displacements differ by the Monte Carlo
    noise only (measured 0.3% of the displacement; a missing or wrong gradient would be 100%)."""
    X, Y = tiny_data()
    moves = []
    for jit_compile in (False, True):
        model = make_tiny_model(seed=0, num_samples=2000)
        model.build_networks(observation_shape=(Y.shape[1],))
        start = _flat(model)
        train(
            model,
            _dataset(X, Y),
            epochs=1,
            optimizer=tf_keras.optimizers.SGD(1e-4),
            progress=False,
            jit_compile=jit_compile,
        )
        moves.append(_flat(model) - start)
    graph, xla = moves
    assert np.linalg.norm(graph) > 0.1
    assert np.linalg.norm(xla - graph) < 0.03 * np.linalg.norm(graph)


class _HalfELBO(ELBO):
    """A user-defined objective: half the ELBO loss, logging the KL it saw."""

    log_keys = ("seen_kl",)

    def loss(self, terms, Y):
        loss, _ = super().loss(terms, Y)
        return 0.5 * loss, {"seen_kl": terms.kl}


def test_custom_objective_logs_its_declared_keys_in_fit_and_loop():
    X, Y = tiny_data()
    view = make_tiny_model(seed=0).as_training_model(objective=_HalfELBO())
    view.compile(tf_keras.optimizers.Adam(1e-2))
    fit = view.fit(_dataset(X, Y), epochs=2, verbose=0)
    # The tracker exists from compile() on, and it averages what the objective returned.
    np.testing.assert_allclose(fit.history["seen_kl"], fit.history["kl"], rtol=1e-10)
    assert "geco_lambda" not in fit.history
    history = train(
        make_tiny_model(seed=0),
        _dataset(X, Y),
        epochs=2,
        optimizer=tf_keras.optimizers.Adam(1e-2),
        objective=_HalfELBO(),
        progress=False,
    )
    np.testing.assert_allclose(history["seen_kl"], fit.history["seen_kl"], rtol=1e-5)
    np.testing.assert_allclose(history["loss"], fit.history["loss"], rtol=1e-5)


def test_objective_without_log_keys_is_rejected():
    class NoKeys:
        def loss(self, terms, Y):
            return -terms.elbo(), {}

        def after_step(self):
            return None

    X, Y = tiny_data()
    with pytest.raises(TypeError, match="log_keys"):
        train(make_tiny_model(), (X, Y), batch_size=10, epochs=1, objective=NoKeys(), progress=False)


# ------------------------------------------------------------------ optimizer groups
def _gp_and_rest(model, gp_lr=1e-2, net_lr=1e-3):
    return OptimizerGroups(
        [
            (tf_keras.optimizers.Adam(gp_lr), [model.kernel, model.inducing_variable]),
            (tf_keras.optimizers.Adam(net_lr), None),
        ]
    )


def test_optimizer_groups_step_equals_two_optimizers_by_hand():
    X, Y = tiny_data()
    batch = (X[:20], Y[:20])
    model = make_tiny_model(seed=0)
    groups = _gp_and_rest(model)
    train(model, _dataset(*batch), epochs=1, optimizer=groups, progress=False)
    assert [int(o.iterations.numpy()) for o in groups.optimizers] == [1, 1]

    # By hand: one loss, one tape, two Adams on disjoint variable sets.
    ref = make_tiny_model(seed=0)
    gp_opt, net_opt = tf_keras.optimizers.Adam(1e-2), tf_keras.optimizers.Adam(1e-3)
    with tf.GradientTape() as tape:
        loss, _ = ELBO().loss(ref.objective_terms(batch, training=True), batch[1])
    variables = ref.trainable_variables
    before = [v.numpy().copy() for v in variables]
    grads = tape.gradient(loss, variables)
    gp = {v.ref() for v in ref.kernel.trainable_variables + ref.inducing_variable.trainable_variables}
    assert 0 < len(gp) < len(variables)
    gp_opt.apply_gradients([(g, v) for g, v in zip(grads, variables) if v.ref() in gp])
    net_opt.apply_gradients([(g, v) for g, v in zip(grads, variables) if v.ref() not in gp])

    assert len(model.trainable_variables) == len(variables)
    for mine, theirs in zip(model.trainable_variables, variables):
        assert mine.shape == theirs.shape
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7, err_msg=mine.name)
    # Adam's first step moves each parameter by about its learning rate: the rates really differ.
    step = {v.ref(): np.max(np.abs(v.numpy() - b)) for v, b in zip(variables, before)}
    np.testing.assert_allclose(max(s for r, s in step.items() if r in gp), 1e-2, rtol=1e-3)
    np.testing.assert_allclose(max(s for r, s in step.items() if r not in gp), 1e-3, rtol=1e-3)


def test_optimizer_groups_reject_overlapping_and_missing_variables():
    X, Y = tiny_data()
    adam = tf_keras.optimizers.Adam
    model = make_tiny_model(seed=0)
    overlapping = OptimizerGroups([(adam(), [model.kernel]), (adam(), model.kernel.lengthscales), (adam(), None)])
    with pytest.raises(ValueError, match="in optimizer groups 0 and 1"):
        train(model, _dataset(X, Y), epochs=1, optimizer=overlapping, progress=False)
    # No catch-all group: the decoder's variables are in no group.
    missing = [(adam(), [model.kernel, model.inducing_variable]), (adam(), [model.encoder])]
    with pytest.raises(ValueError, match=r"in no optimizer group.*decoder|in no optimizer group"):
        train(model, _dataset(X, Y), epochs=1, optimizer=missing, progress=False)
    with pytest.raises(ValueError, match="only the last group"):
        OptimizerGroups([(adam(), None), (adam(), [model.kernel])])
    shared = adam()
    with pytest.raises(ValueError, match="its own"):
        OptimizerGroups([(shared, [model.kernel]), (shared, None)])
    with pytest.raises(TypeError, match="optimizer"):
        train(model, _dataset(X, Y), epochs=1, optimizer="adam", progress=False)


def test_optimizer_groups_checkpoint_round_trip_continues_identically(tmp_path):
    X, Y = tiny_data()
    two_batches = _dataset(X[:40], Y[:40])
    straight = make_tiny_model(seed=0)
    straight_groups = _gp_and_rest(straight)
    train(straight, two_batches, epochs=1, optimizer=straight_groups, progress=False)

    first = make_tiny_model(seed=0)
    groups = _gp_and_rest(first)
    train(first, two_batches.take(1), epochs=1, optimizer=groups, progress=False)
    path = tf.train.Checkpoint(model=first, optimizer=groups).write(str(tmp_path / "ckpt"))

    resumed = make_tiny_model(seed=123)  # fresh objects, other initial weights
    resumed_groups = _gp_and_rest(resumed)
    tf.train.Checkpoint(model=resumed, optimizer=resumed_groups).read(path).assert_existing_objects_matched()
    train(resumed, two_batches.skip(1), epochs=1, optimizer=resumed_groups, progress=False)
    np.testing.assert_allclose(_flat(resumed), _flat(straight), rtol=1e-6, atol=1e-7)
    for restored, reference in zip(resumed_groups.optimizers, straight_groups.optimizers):
        assert int(restored.iterations.numpy()) == int(reference.iterations.numpy()) == 2
        slots, expected = restored.variables()[1:], reference.variables()[1:]  # after the step counter
        assert len(slots) == len(expected) > 0
        for slot, want in zip(slots, expected):
            np.testing.assert_allclose(slot.numpy(), want.numpy(), rtol=1e-6, atol=1e-9, err_msg=want.name)


def test_keras_fit_with_optimizer_groups_matches_loop():
    X, Y = tiny_data()
    loop_model = make_tiny_model(seed=0)
    history = train(loop_model, _dataset(X, Y), epochs=2, optimizer=_gp_and_rest(loop_model), progress=False)
    keras_model = make_tiny_model(seed=0)
    view = keras_model.as_training_model()
    adam = tf_keras.optimizers.Adam
    view.compile([(adam(1e-2), [keras_model.kernel, keras_model.inducing_variable]), (adam(1e-3), None)])
    assert isinstance(view.optimizer, OptimizerGroups)
    fit = view.fit(_dataset(X, Y), epochs=2, verbose=0)
    np.testing.assert_allclose(history["loss"], fit.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(_flat(loop_model), _flat(keras_model), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ tracing once
def test_step_is_traced_once_and_trains_as_with_a_lazily_built_optimizer(monkeypatch):
    """The optimiser's state (here two optimisers, one per variable group) is created before the
    first compiled step (a ``tf.function`` that creates variables is traced twice); the updates
    are those of optimisers built on first use."""
    import gpflow_svgpvae.training.keras as keras_view
    import gpflow_svgpvae.training.loop as loop
    from gpflow_svgpvae.training import optimizers

    X, Y = tiny_data()
    traces = []

    def counting(module):
        original = module.training_step
        monkeypatch.setattr(module, "training_step", lambda *a: traces.append(module.__name__) or original(*a))

    counting(loop)
    counting(keras_view)

    def trained(path):
        model = make_tiny_model(seed=0)
        if path == "loop":
            train(model, _dataset(X, Y), epochs=2, optimizer=_gp_and_rest(model), progress=False)
        else:
            view = model.as_training_model()
            view.compile(_gp_and_rest(model))
            view.fit(_dataset(X, Y), epochs=2, verbose=0)
        return [v.numpy() for v in model.trainable_variables]

    built = {path: trained(path) for path in ("loop", "keras")}
    assert traces == ["gpflow_svgpvae.training.loop", "gpflow_svgpvae.training.keras"]
    for mine, theirs in zip(built["loop"], built["keras"]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(optimizers, "build_optimizer", lambda *a: None)  # the optimisers build in the step
    for mine, lazy in zip(built["loop"], trained("loop")):
        np.testing.assert_allclose(mine, lazy, rtol=1e-6, atol=1e-7)  # float32 networks
    assert traces.count("gpflow_svgpvae.training.loop") == 3  # traced twice without the prebuilt state


class _ClippingEncoder(tf_keras.Model):
    """A user encoder with Python control flow on a tensor in ``call``: it needs AutoGraph."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def call(self, inputs):
        if tf.reduce_max(tf.abs(inputs)) > 1e6:
            inputs = tf.clip_by_value(inputs, -1e6, 1e6)
        return self.body(inputs)


def test_user_layers_with_python_control_flow_on_tensors_still_train():
    """The package's own step runs without AutoGraph's rewriting (its tracing cost), while the
    user's Keras layers inside it are converted by Keras as in any Keras model: the wrapped
    encoder (whose clip never fires on these inputs) trains exactly as the bare one in the loop,
    and Keras ``fit`` trains it as the loop does."""
    from gpflow_svgpvae.networks import mlp_encoder

    X, Y = tiny_data()
    trained = {}
    for path, wrapped in (("loop", True), ("loop", False), ("keras", True)):
        model = make_tiny_model(seed=0)
        tf_keras.utils.set_random_seed(0)
        body = mlp_encoder(8, 1, hidden_units=(16,))
        model.encoder = _ClippingEncoder(body) if wrapped else body
        model.build_networks(observation_shape=(8,))
        before = [v.numpy().copy() for v in model.encoder.trainable_variables]
        if path == "loop":
            train(model, _dataset(X, Y), epochs=1, optimizer=tf_keras.optimizers.Adam(1e-2), progress=False)
        else:
            view = model.as_training_model()
            view.compile(tf_keras.optimizers.Adam(1e-2))
            view.fit(_dataset(X, Y), epochs=1, verbose=0)
        assert all(np.any(v.numpy() != b) for v, b in zip(model.encoder.trainable_variables, before))
        trained[path, wrapped] = _flat(model)
    np.testing.assert_allclose(trained["loop", True], trained["loop", False], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trained["keras", True], trained["loop", True], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("with_mask", [False, True])
def test_uint8_arrays_train_exactly_as_float32(with_mask):
    """Integer images and masks may stay uint8 in memory (a quarter of float32): every batch is
    cast to float32 in the model, so the training is the same (up to float32 round-off)."""
    X, Y = tiny_data()
    Y8 = (np.asarray(Y) > np.median(Y)).astype(np.uint8)
    mask8 = (np.random.default_rng(3).random(Y8.shape) < 0.7).astype(np.uint8)
    runs = []
    for dtype in (np.uint8, np.float32):
        data = (X, Y8.astype(dtype)) + ((mask8.astype(dtype),) if with_mask else ())
        model = make_tiny_model(seed=0)
        history = train(model, data, epochs=2, batch_size=20, optimizer=tf_keras.optimizers.Adam(1e-2), progress=False)
        runs.append((history, _flat(model)))
    # The same computation twice; compared with a float32 tolerance rather than bitwise, since
    # TensorFlow does not promise the same bits across runs without op determinism.
    assert sorted(runs[0][0]) == sorted(runs[1][0])
    for key in runs[0][0]:
        np.testing.assert_allclose(runs[0][0][key], runs[1][0][key], rtol=1e-6, err_msg=key)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6, atol=1e-7)
