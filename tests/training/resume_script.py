"""Helper of ``test_resume_kill.py`` (run as a script, one process per training run).

    python resume_script.py ROOT CHECKPOINT_DIR OUT_NPZ

Trains the tiny SVGP-VAE of ``tests/conftest.py`` with the compiled loop
(``train``: shuffled arrays, GECO, ``checkpoint_every_steps=4``), resuming from
``CHECKPOINT_DIR`` if it holds a checkpoint, and writes the final trainable
weights, GECO state, Monte Carlo draw counter and optimiser step to ``OUT_NPZ``.

``RESUME_TEST_STEP_DELAY`` (seconds, default 0) paces the host loop: the
progress bar's ``update`` (called once per step, outside the compiled step)
sleeps that long, so that a test can kill the process between two steps. It
changes no number: the bar is host-side bookkeeping.
"""

import os
import sys
import time

root, checkpoint_dir, out_path = sys.argv[1:4]
sys.path.insert(0, root)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

import gpflow_svgpvae.training.loop as loop  # noqa: E402
from gpflow_svgpvae.training import GECO, train  # noqa: E402
from tests.conftest import make_tiny_model, tiny_data  # noqa: E402

EPOCHS, BATCH, EVERY_STEPS = 5, 10, 4  # 6 steps per epoch, 30 steps, checkpoints at 4, 8, 12, ...

delay = float(os.environ.get("RESUME_TEST_STEP_DELAY", "0"))
if delay > 0:

    class PacedBar(loop.tqdm):
        def update(self, n=1):
            time.sleep(delay)
            return super().update(n)

    loop.tqdm = PacedBar

X, Y = tiny_data()
model = make_tiny_model(seed=0)
optimizer = tf_keras.optimizers.Adam(1e-2)
geco = GECO(0.02)
train(
    model,
    (X, Y),
    batch_size=BATCH,
    seed=3,
    epochs=EPOCHS,
    optimizer=optimizer,
    objective=geco,
    checkpoint_dir=checkpoint_dir,
    checkpoint_every=1000,  # only the step-based checkpoints (and the final one)
    checkpoint_every_steps=EVERY_STEPS,
    progress=False,
)
arrays = {f"w{i}": v.numpy() for i, v in enumerate(model.trainable_variables)}
arrays.update(
    geco_lambda=geco.lagrange_multiplier.numpy(),
    geco_constraint_ma=geco.constraint_ma.numpy(),
    sample_counter=model.sample_counter.numpy(),
    optimizer_iterations=optimizer.iterations.numpy(),
)
np.savez(out_path, **arrays)
print("DONE", flush=True)
