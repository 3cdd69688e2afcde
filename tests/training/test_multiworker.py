"""Two-worker MultiWorkerMirroredStrategy on localhost equals one-device training.

Two processes (``multiworker_script.py``) form a 2-worker cluster through
``TF_CONFIG`` on free 127.0.0.1 ports and train the tiny SVGP-VAE with the
compiled loop (``train(..., strategy=strategy)``) for 9 steps; worker 0 then
trains a fresh copy on one device on the same global batches. Because the
model all-reduces the GP statistics (not the posteriors), the two runs must
agree up to float32 round-off of the networks.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "training", "multiworker_script.py")


def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _run_cluster(tmp_path, extra_args=()):
    """Start both workers, wait for them; returns [(returncode, stderr)] per worker."""
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for index in range(2):
        env = dict(
            os.environ,
            TF_CPP_MIN_LOG_LEVEL="2",
            TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
        )
        cmd = [sys.executable, SCRIPT, ROOT, str(tmp_path / f"worker{index}.json")] + list(extra_args)
        if index == 0 and not extra_args:
            cmd.append("--reference")
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return [(p.returncode, err) for p, (_, err) in zip(procs, outputs)]


@pytest.mark.slow  # long; run with make test-all (keeps the default suite under 10 minutes)
def test_two_workers_equal_one_device(tmp_path):
    for returncode, err in _run_cluster(tmp_path):
        assert returncode == 0, err[-4000:]
    w0, w1 = (json.loads((tmp_path / f"worker{i}.json").read_text()) for i in range(2))
    assert w0["num_replicas"] == w1["num_replicas"] == 2

    dist0, dist1, single = w0["distributed"], w1["distributed"], w0["single"]
    # both workers hold the same (mirrored) model
    assert np.max(np.abs(np.subtract(dist0["weights"], dist1["weights"]))) == 0.0
    loss_dev = max(abs(a - b) / abs(b) for a, b in zip(dist0["history"]["loss"], single["history"]["loss"]))
    elbo_dev = max(abs(a - b) / abs(b) for a, b in zip(dist0["history"]["elbo"], single["history"]["elbo"]))
    weight_dev = float(np.max(np.abs(np.subtract(dist0["weights"], single["weights"]))))
    print(
        f"2 workers vs 1 device: loss rel dev {loss_dev:.3g}, elbo rel dev {elbo_dev:.3g}, "
        f"max |weight dev| {weight_dev:.3g}"
    )
    assert len(dist0["history"]["loss"]) == 3
    assert loss_dev < 1e-6 and elbo_dev < 1e-6
    assert weight_dev < 1e-5
    assert abs(dist0["geco_lambda"] - single["geco_lambda"]) < 1e-7 * abs(single["geco_lambda"])
    assert dist0["sample_counter"] == single["sample_counter"] == 9


@pytest.mark.slow
def test_two_workers_with_checkpoints_resume(tmp_path):
    """Every worker passes the same checkpoint_dir: only the chief writes there (the
    others write to private folders), the run completes, and the same command started
    again restores every worker from it (all steps done: nothing left to train) with
    the weights of the first run."""
    checkpoint_dir = tmp_path / "ckpt"
    args = ["--checkpoint-dir", str(checkpoint_dir)]
    for returncode, err in _run_cluster(tmp_path, args):
        assert returncode == 0, err[-3000:]
    first = [json.loads((tmp_path / f"worker{i}.json").read_text())["distributed"] for i in range(2)]
    assert (checkpoint_dir / "checkpoint").exists()
    assert len(first[0]["history"]["loss"]) == 3
    for returncode, err in _run_cluster(tmp_path, args):
        assert returncode == 0, err[-3000:]
    second = [json.loads((tmp_path / f"worker{i}.json").read_text())["distributed"] for i in range(2)]
    for a, b in zip(first, second):
        assert not b["history"].get("loss")  # restored at the last step
        assert np.max(np.abs(np.subtract(a["weights"], b["weights"]))) == 0.0
        assert a["geco_lambda"] == b["geco_lambda"] and a["sample_counter"] == b["sample_counter"]
