"""Helper of ``test_multiworker.py``: one worker of a 2-worker MultiWorkerMirroredStrategy.

    TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:P0", "127.0.0.1:P1"]}, "task": {"type": "worker", "index": I}}' \
        python multiworker_script.py ROOT OUT_JSON [--reference] [--checkpoint-dir DIR]

Trains the tiny SVGP-VAE of ``tests/conftest.py`` for 3 epochs x 3 global
batches of 20 (10 per worker) with the compiled loop and GECO, the model,
optimiser and objective built inside ``strategy.scope()``, and writes the
per-epoch logs and the final weights to ``OUT_JSON``. With ``--reference`` the
worker then trains a fresh copy on one device (no strategy) on the same global
batches and writes that too. With ``--checkpoint-dir`` the distributed run
checkpoints there every 2 steps (every worker gets the same directory, as a
user calling ``train(..., checkpoint_dir=DIR)`` on every worker would).
"""

import json
import os
import sys

root, out_path = sys.argv[1:3]
reference = "--reference" in sys.argv[3:]
checkpoint_dir = sys.argv[sys.argv.index("--checkpoint-dir") + 1] if "--checkpoint-dir" in sys.argv else None
sys.path.insert(0, root)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

# Created first, before any other TensorFlow op (it configures the collective runtime).
strategy = tf.distribute.MultiWorkerMirroredStrategy()

import numpy as np  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

from gpflow_svgpvae.training import GECO, train  # noqa: E402
from tests.conftest import make_tiny_model, tiny_data  # noqa: E402

EPOCHS, GLOBAL_BATCH = 3, 20
X, Y = tiny_data()


def global_batches():
    """The global batches, shuffled with a fixed seed; every worker builds the same
    pipeline and ``experimental_distribute_dataset`` gives worker w (replica w) the
    w-th consecutive slice of each global batch (DATA sharding after rebatching)."""
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(len(X), seed=5, reshuffle_each_iteration=True)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return ds.batch(GLOBAL_BATCH).with_options(options)


def flat(model):
    return np.concatenate([v.numpy().ravel().astype(np.float64) for v in model.trainable_variables]).tolist()


def run(strategy_or_none, **train_kwargs):
    if strategy_or_none is None:
        model, optimizer, geco = make_tiny_model(seed=0), tf_keras.optimizers.Adam(1e-2), GECO(0.02)
    else:
        with strategy_or_none.scope():
            model, optimizer, geco = make_tiny_model(seed=0), tf_keras.optimizers.Adam(1e-2), GECO(0.02)
    history = train(
        model,
        global_batches(),
        epochs=EPOCHS,
        optimizer=optimizer,
        objective=geco,
        progress=False,
        strategy=strategy_or_none,
        **train_kwargs,
    )
    return dict(
        history={k: list(map(float, v)) for k, v in history.items()},
        weights=flat(model),
        geco_lambda=float(geco.lagrange_multiplier.numpy()),
        sample_counter=int(model.sample_counter.numpy()),
    )


result = dict(
    task=json.loads(os.environ["TF_CONFIG"])["task"],
    num_replicas=strategy.num_replicas_in_sync,
    distributed=run(
        strategy, **(dict(checkpoint_dir=checkpoint_dir, checkpoint_every_steps=2) if checkpoint_dir else {})
    ),
)
if reference:
    result["single"] = run(None)
with open(out_path, "w") as f:
    json.dump(result, f)
print("DONE", flush=True)
