"""Run as a script (needs a fresh process to create 2 logical CPU devices).

Compares, on the same global batch and the same initial weights:
loss and gradients on 1 device vs 2 replicas of a MirroredStrategy, then a few
steps of the compiled loop and of Keras fit on 2 replicas vs 1 device.
Prints a JSON dict of maximum deviations.
"""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

sys.path.insert(0, sys.argv[1])
from gpflow_svgpvae.tracing import not_autographed  # noqa: E402
from gpflow_svgpvae.training import GECO, train  # noqa: E402
from tests.conftest import make_tiny_model, tiny_data  # noqa: E402

X, Y = tiny_data()
batch = (tf.constant(X[:24]), tf.constant(Y[:24]))
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {}


def loss_and_grads(model):
    with tf.GradientTape() as tape:
        terms = model.objective_terms(batch)
        loss = -terms.elbo()
    return loss, tape.gradient(loss, model.trainable_variables), terms


single = make_tiny_model(seed=0)
loss1, grads1, terms1 = loss_and_grads(single)

with strategy.scope():
    mirrored = make_tiny_model(seed=0)


@tf.function
@not_autographed  # as the package's own steps: the model code needs no AutoGraph
def distributed_loss_and_grads(global_batch):
    # experimental_distribute_values_from_function: replica r gets rows of the global batch
    def split(ctx):
        n = tf.shape(global_batch[0])[0] // 2
        i = ctx.replica_id_in_sync_group
        return (global_batch[0][i * n : (i + 1) * n], global_batch[1][i * n : (i + 1) * n])

    local = strategy.experimental_distribute_values_from_function(split)

    def replica(local_batch):
        with tf.GradientTape() as tape:
            terms = mirrored.objective_terms(local_batch)
            loss = -terms.elbo()  # this replica's share
        grads = tape.gradient(loss, mirrored.trainable_variables)
        ctx = tf.distribute.get_replica_context()
        grads = [ctx.all_reduce(tf.distribute.ReduceOp.SUM, g) for g in grads]  # mixed dtypes
        loss = ctx.all_reduce(tf.distribute.ReduceOp.SUM, loss)
        return loss, grads, terms.kl, ctx.all_reduce(tf.distribute.ReduceOp.SUM, terms.elbo())

    return strategy.run(replica, args=(local,))


loss2, grads2, kl2, elbo2 = distributed_loss_and_grads(batch)
first = lambda v: strategy.experimental_local_results(v)[0]  # noqa: E731
out["num_replicas"] = strategy.num_replicas_in_sync
out["loss_rel_dev"] = abs(float(first(loss2)) - float(loss1)) / abs(float(loss1))
out["kl_abs_dev"] = abs(float(first(kl2)) - float(terms1.kl))
out["elbo_rel_dev"] = abs(float(first(elbo2)) - float(terms1.elbo())) / abs(float(terms1.elbo()))
out["grad_max_rel_dev"] = max(
    float(np.max(np.abs(first(g2).numpy() - g1.numpy())) / (np.max(np.abs(g1.numpy())) + 1e-30))
    for g1, g2 in zip(grads1, grads2)
)


def flat(model):
    return np.concatenate([v.numpy().ravel().astype(np.float64) for v in model.trainable_variables])


# The compiled loop and Keras fit with GECO on 2 replicas vs 1 device (global batch 20).
dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(20)
ref = make_tiny_model(seed=0)
ref_hist = train(ref, dataset, epochs=2, optimizer=tf_keras.optimizers.Adam(1e-2), objective=GECO(0.02), progress=False)
with strategy.scope():
    dist = make_tiny_model(seed=0)
    opt = tf_keras.optimizers.Adam(1e-2)
    geco = GECO(0.02)
dist_hist = train(dist, dataset, epochs=2, optimizer=opt, objective=geco, progress=False, strategy=strategy)
out["loop_loss_rel_dev"] = max(abs(a - b) / abs(a) for a, b in zip(ref_hist["loss"], dist_hist["loss"]))
out["loop_weights_max_abs_dev"] = float(np.max(np.abs(flat(ref) - flat(dist))))
out["loop_geco_lambda_rel_dev"] = abs(ref_hist["geco_lambda"][-1] - dist_hist["geco_lambda"][-1]) / abs(
    ref_hist["geco_lambda"][-1]
)

with strategy.scope():
    kmodel = make_tiny_model(seed=0)
    view = kmodel.as_training_model(objective=GECO(0.02))
    view.compile(tf_keras.optimizers.Adam(1e-2))
fit = view.fit(dataset, epochs=2, verbose=0)
out["keras_loss_rel_dev"] = max(abs(a - b) / abs(a) for a, b in zip(ref_hist["loss"], fit.history["loss"]))
out["keras_weights_max_abs_dev"] = float(np.max(np.abs(flat(ref) - flat(kmodel))))
print("RESULT " + json.dumps(out))
