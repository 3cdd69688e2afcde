"""DelayedStart: a group of variables held for the first steps, then trained (issue 13)."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.training import DelayedStart, OptimizerGroups, train
from tests.conftest import make_tiny_model, tiny_data


def test_delayed_start_values():
    schedule = DelayedStart(1e-2, start_step=3)
    np.testing.assert_allclose([float(schedule(t)) for t in range(6)], [0, 0, 0, 1e-2, 1e-2, 1e-2], rtol=1e-6)
    decay = tf_keras.optimizers.schedules.ExponentialDecay(1.0, decay_steps=1, decay_rate=0.5)
    inner = DelayedStart(decay, start_step=2)
    np.testing.assert_allclose([float(inner(t)) for t in range(5)], [0, 0, 1, 0.5, 0.25], rtol=1e-6)
    again = DelayedStart.from_config(inner.get_config())
    np.testing.assert_allclose([float(again(t)) for t in range(5)], [0, 0, 1, 0.5, 0.25], rtol=1e-6)
    with pytest.raises(ValueError, match="start_step"):
        DelayedStart(1e-2, start_step=-1)
    with pytest.raises(ValueError, match="learning_rate"):
        DelayedStart(0.0, start_step=1)


def _held_run(model, X, Y, steps, checkpoint_dir=None):
    groups = OptimizerGroups(
        [
            (tf_keras.optimizers.Adam(DelayedStart(5e-2, start_step=4)), [model.kernel]),
            (tf_keras.optimizers.Adam(1e-2), None),
        ]
    )
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)  # 3 steps per epoch
    lengthscales = []
    train(
        model,
        dataset,
        epochs=steps // 3,
        optimizer=groups,
        progress=False,
        checkpoint_dir=checkpoint_dir,
        callback=lambda epoch, logs: lengthscales.append(float(model.kernel.lengthscales.numpy())),
    )
    return lengthscales


def test_the_held_group_stays_put_until_its_start_step_and_the_rest_trains(tmp_path):
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    start = float(model.kernel.lengthscales.numpy())
    decoder_before = [w.copy() for w in model.decoder.get_weights()]
    lengthscales = _held_run(model, X, Y, steps=9)
    assert lengthscales[0] == start  # after 3 steps: held
    assert lengthscales[1] != start and lengthscales[2] != lengthscales[1]  # released at step 4
    assert all(not np.array_equal(a, b) for a, b in zip(decoder_before, model.decoder.get_weights()))
    # A run checkpointed during the hold and resumed releases at the same step: it equals the straight run.
    first = make_tiny_model(seed=0)
    _held_run(first, X, Y, steps=3, checkpoint_dir=tmp_path)
    resumed = make_tiny_model(seed=5)
    resumed_lengthscales = _held_run(resumed, X, Y, steps=9, checkpoint_dir=tmp_path)
    np.testing.assert_allclose(resumed_lengthscales, lengthscales[1:], rtol=1e-6)


def test_gp_optimizer_groups_holds_the_kernel_and_trains_the_inducing_inputs_at_the_gp_rate():
    from gpflow_svgpvae.training import gp_optimizer_groups

    X, Y = tiny_data()
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)  # 3 steps per epoch
    model = make_tiny_model(seed=0)
    start = float(model.kernel.lengthscales.numpy())
    Z0 = model.inducing_variable.Z.numpy().copy()
    lengthscales = []
    train(
        model,
        dataset,
        epochs=3,
        optimizer=gp_optimizer_groups(model, 1e-2, 5e-2, kernel_hold_steps=4),
        progress=False,
        callback=lambda epoch, logs: lengthscales.append(float(model.kernel.lengthscales.numpy())),
    )
    assert lengthscales[0] == start and lengthscales[1] != start  # held 4 steps, released at step 4
    assert not np.allclose(model.inducing_variable.Z.numpy(), Z0)
    # The same three groups written by hand give the same run.
    manual = make_tiny_model(seed=0)
    train(
        manual,
        dataset,
        epochs=3,
        progress=False,
        optimizer=OptimizerGroups(
            [
                (tf_keras.optimizers.Adam(DelayedStart(5e-2, start_step=4)), [manual.kernel]),
                (tf_keras.optimizers.Adam(5e-2), [manual.inducing_variable]),
                (tf_keras.optimizers.Adam(1e-2), None),
            ]
        ),
    )
    np.testing.assert_allclose(manual.kernel.lengthscales.numpy(), model.kernel.lengthscales.numpy(), rtol=1e-10)
    np.testing.assert_allclose(manual.inducing_variable.Z.numpy(), model.inducing_variable.Z.numpy(), rtol=1e-10)
    # The Keras view takes the same groups.
    view_model = make_tiny_model(seed=0)
    view = view_model.as_training_model()
    view.compile(optimizer=gp_optimizer_groups(view_model, 1e-2, 5e-2, kernel_hold_steps=4))
    view.fit(dataset, epochs=1, verbose=0)
    assert float(view_model.kernel.lengthscales.numpy()) == start


def test_gp_optimizer_groups_rejects_bad_input():
    from gpflow_svgpvae.training import gp_optimizer_groups

    model = make_tiny_model(seed=0)
    with pytest.raises(ValueError, match="kernel_hold_steps"):
        gp_optimizer_groups(model, kernel_hold_steps=-1)
    with pytest.raises(ValueError, match="gp_learning_rate"):
        gp_optimizer_groups(model, gp_learning_rate=0.0)

    class NoKernel:
        pass

    with pytest.raises(ValueError, match="no kernel"):
        gp_optimizer_groups(NoKernel())
