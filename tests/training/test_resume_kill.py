"""Resume after SIGKILL: a training process killed mid-epoch and restarted with the
same command ends with the weights of an uninterrupted run.

Three processes run ``resume_script.py`` (the compiled loop ``train`` on shuffled
arrays with GECO and ``checkpoint_every_steps=4``; 6 steps per epoch, 30 steps):
an uninterrupted reference, a run that the test kills with SIGKILL as soon as
its checkpoint directory holds the checkpoint of step 8 (mid-epoch 2), and the
same command restarted on the killed run's directory.
"""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "training", "resume_script.py")
STEPS_PER_EPOCH, TOTAL_STEPS, KILL_AFTER = 6, 30, 8


def _latest_step(checkpoint_dir):
    """Step of the latest *complete* checkpoint (the state file is written after the data)."""
    try:
        with open(os.path.join(checkpoint_dir, "checkpoint")) as f:
            match = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', f.read(), re.M)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _command(checkpoint_dir, out):
    return [sys.executable, SCRIPT, ROOT, str(checkpoint_dir), str(out)]


@pytest.mark.slow  # a minute of two processes; test_training.py keeps the in-process resume test
def test_sigkill_mid_epoch_then_restart_equals_uninterrupted_run(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", RESUME_TEST_STEP_DELAY="0.1")
    ckpt = tmp_path / "ckpt"
    # The reference and the run to be killed start together (2 cores).
    reference = subprocess.Popen(
        _command(tmp_path / "ref_ckpt", tmp_path / "ref.npz"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    victim = subprocess.Popen(
        _command(ckpt, tmp_path / "killed.npz"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 240
        while (_latest_step(ckpt) or 0) < KILL_AFTER:
            assert victim.poll() is None, "the run ended before it could be killed:\n" + victim.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.005)
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=60)
    finally:
        if victim.poll() is None:
            victim.kill()
    assert victim.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed.npz").exists()
    resumed_from = _latest_step(ckpt)
    assert KILL_AFTER <= resumed_from < TOTAL_STEPS
    assert resumed_from % STEPS_PER_EPOCH != 0, f"checkpoint {resumed_from} is at an epoch boundary"

    _, err = reference.communicate(timeout=240)
    assert reference.returncode == 0, err[-3000:]
    restarted = subprocess.run(
        _command(ckpt, tmp_path / "resumed.npz"), env=env, capture_output=True, text=True, timeout=240
    )
    assert restarted.returncode == 0, restarted.stderr[-3000:]

    ref, res = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "resumed.npz")
    weights = [k for k in ref.files if k.startswith("w")]
    assert weights and sorted(weights) == sorted(k for k in res.files if k.startswith("w"))
    max_dev = max(float(np.max(np.abs(ref[k].astype(np.float64) - res[k].astype(np.float64)))) for k in weights)
    print(f"resumed from step {resumed_from}: max |weight difference| = {max_dev:.3g}")
    assert max_dev < 1e-6
    assert int(res["optimizer_iterations"]) == int(ref["optimizer_iterations"]) == TOTAL_STEPS
    assert int(res["sample_counter"]) == int(ref["sample_counter"])
    assert abs(float(res["geco_lambda"]) - float(ref["geco_lambda"])) <= 1e-9 * abs(float(ref["geco_lambda"]))
    assert abs(float(res["geco_constraint_ma"]) - float(ref["geco_constraint_ma"])) < 1e-9
