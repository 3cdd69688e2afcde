"""Run as a script (needs a fresh process to create 2 logical CPU devices).

The guarded step on 2 replicas of a MirroredStrategy: a batch with one entry of Y at 1e30
(overflowing gradients) and a decoder returning NaN, in the compiled loop and in Keras fit.
Prints a JSON dict: whether each raised, its message, and whether every variable (model,
optimiser, objective) is unchanged.
"""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

sys.path.insert(0, sys.argv[1])
from gpflow_svgpvae.training import GECO, train  # noqa: E402
from tests.conftest import make_tiny_model, tiny_data  # noqa: E402

X, Y = tiny_data()
bad = Y.copy()
bad[5, 2] = 1e30
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {"num_replicas": strategy.num_replicas_in_sync}


def state(*owners):
    values = []
    for owner in owners:
        for v in owner.variables:
            parts = strategy.experimental_local_results(v) if hasattr(v, "values") else (v,)
            values += [np.array(p.numpy(), copy=True) for p in parts]  # every replica's copy
    return values


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def attempt(key, run, *owners):
    before = state(*owners)
    try:
        run()
        out[f"{key}_raised"], out[f"{key}_message"] = False, ""
    except (tf.errors.InvalidArgumentError, FloatingPointError) as error:
        out[f"{key}_raised"], out[f"{key}_message"] = True, str(error).split("\n")[0]
    out[f"{key}_unchanged"] = same(before, state(*owners))


data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)
with strategy.scope():
    model = make_tiny_model(seed=0)
    optimizer = tf_keras.optimizers.Adam(1e-2)
    geco = GECO(0.02)
train(model, data, epochs=1, optimizer=optimizer, objective=geco, progress=False, strategy=strategy)
bad_data = tf.data.Dataset.from_tensor_slices((X, bad)).batch(20)
attempt(
    "loop",
    lambda: train(model, bad_data, epochs=1, optimizer=optimizer, objective=geco, progress=False, strategy=strategy),
    model,
    optimizer,
    geco,
)

bias = model.decoder.layers[-1].bias
bias.assign(np.full(bias.shape, np.nan, np.float32))
attempt(
    "loop_nan",
    lambda: train(model, data, epochs=1, optimizer=optimizer, objective=geco, progress=False, strategy=strategy),
    model,
    optimizer,
    geco,
)

with strategy.scope():
    kmodel = make_tiny_model(seed=0)
    view = kmodel.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2))
view.fit(data, epochs=1, verbose=0)
attempt("keras", lambda: view.fit(bad_data, epochs=1, verbose=0), kmodel, view.optimizer)
print("RESULT " + json.dumps(out))
