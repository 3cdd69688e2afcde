"""Pieces the experiment commands share: claims on cached runs (:class:`RunClaim`), the layout of
the JSON files they write (:func:`write_json`)."""

import json
import math
import os
import socket
import subprocess
import sys

import numpy as np

from svgpvae_paper.experiments.common import RunClaim, json_text, read_json, write_json


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_claim_is_exclusive_while_its_owner_lives_and_free_after_release(tmp_path):
    path = str(tmp_path / "runs" / "svgpvae_seed0_0123456789")
    first, second = RunClaim(path), RunClaim(path)
    assert first.acquire()
    assert open(path + ".claim").read() == f"{socket.gethostname()} {os.getpid()}"
    assert not second.acquire() and not second.held  # the owner (this process) is alive
    second.release()  # releasing a claim one does not hold leaves the owner's claim alone
    assert os.path.exists(path + ".claim")
    first.release()
    assert not os.path.exists(path + ".claim")
    with RunClaim(path) as third:
        assert third.acquire()
    assert not os.path.exists(path + ".claim")


def test_claims_of_dead_processes_and_empty_old_claims_are_taken_over(tmp_path):
    path = str(tmp_path / "run")
    with open(path + ".claim", "w") as f:
        f.write(f"{socket.gethostname()} {_dead_pid()}")
    assert RunClaim(path).acquire()
    assert open(path + ".claim").read().endswith(f" {os.getpid()}")

    os.remove(path + ".claim")
    open(path + ".claim", "w").close()  # created, never written
    assert not RunClaim(path, stale_seconds=60).acquire()
    os.utime(path + ".claim", (0, 0))
    assert RunClaim(path, stale_seconds=60).acquire()


def test_claims_made_on_another_host_are_respected(tmp_path):
    path = str(tmp_path / "run")
    with open(path + ".claim", "w") as f:
        f.write(f"not-{socket.gethostname()} {_dead_pid()}")
    assert not RunClaim(path).acquire()


def test_claimed_in_order_defers_jobs_claimed_elsewhere_and_keeps_the_order(tmp_path, monkeypatch):
    import time

    from svgpvae_paper.experiments.common import claimed_in_order

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    path_of = lambda job: str(tmp_path / job)  # noqa: E731
    with open(path_of("b") + ".claim", "w") as f:
        f.write(f"{socket.gethostname()} {other.pid}")
    done, waits = [], []

    def work(job):
        assert os.path.exists(path_of(job) + ".claim")  # held while the work runs
        done.append(job)
        return job.upper()

    def sleep(seconds):  # the other process dies without finishing "b": its claim goes stale
        other.kill()
        other.wait()

    monkeypatch.setattr(time, "sleep", sleep)
    try:
        results = claimed_in_order(["a", "b", "c"], path_of, work, poll_seconds=1.0, on_wait=waits.append)
    finally:
        other.kill()
    assert results == ["A", "B", "C"] and done == ["a", "c", "b"] and waits == [1]
    assert not list(tmp_path.glob("*.claim"))


def test_the_experiment_commands_offer_the_heads_of_the_layer():
    from gpflow_svgpvae.networks import GaussianSiteHead
    from svgpvae_paper.experiments.common import SITE_PARAMETRIZATIONS

    assert SITE_PARAMETRIZATIONS == GaussianSiteHead.PARAMETRIZATIONS


def test_write_json_puts_scalar_lists_on_one_line_and_rounds_only_long_series(tmp_path):
    series = [1.0 / 3.0 * 10.0**k for k in range(-10, 10)]  # 20 floats: a series
    payload = {
        "test_mse": 0.020512345678901234,  # a headline number: kept to the last bit
        "short": [0.1234567890123, 1e-05, -2.5e300, 3],  # 4 numbers: not a series
        "history": {"loss": series, "step": list(range(25)), "elbo": [None, float("nan"), *series]},
        "nineteen": series[:19],
        "argv": ["svgpvae", "rotated_mnist", "--seed", "0"],
        "mixed": [1, "a", True, None, 2.0000000001],
        "rows": [{"x": 0.123456789012345, "ids": [1, 2]}, {}, []],
        "grid": np.array([[0.5, 1.5], [2.5, 3.5]]),
        "empty": {},
        "negative_zero": -0.0,
    }
    write_json(str(tmp_path / "m.json"), payload)
    text = (tmp_path / "m.json").read_text()
    lines = text.split("\n")
    assert ' "argv": ["svgpvae", "rotated_mnist", "--seed", "0"],' in lines
    assert ' "mixed": [1, "a", true, null, 2.0000000001],' in lines
    assert '  "step": [' + ", ".join(str(i) for i in range(25)) + "]," in lines
    assert "  [0.5, 1.5]," in lines and '  "ids": [1, 2]' not in lines and '   "ids": [1, 2]' in lines
    assert lines[:2] == ["{", f' "test_mse": {payload["test_mse"]!r},'] and lines[-1] == "}"
    assert ' "empty": {},' in lines and "  {}," in lines and "  []" in lines
    # The dicts and lists of containers are laid out as json.dump(indent=1) does.
    nested = {"a": {"b": [{"c": 1}, {"d": {"e": None}}]}}
    assert json_text(nested) == json.dumps(nested, indent=1)

    back = read_json(str(tmp_path / "m.json"))
    rounded = [float(f"{v:.7g}") for v in series]
    assert back["history"]["loss"] == rounded != series
    assert max(abs(a - b) / abs(b) for a, b in zip(rounded, series)) <= 5e-7
    assert all(len(repr(v).split("e")[0].replace(".", "").strip("0")) <= 7 for v in rounded)
    assert back["history"]["elbo"][0] is None and math.isnan(back["history"]["elbo"][1])
    assert back["history"]["elbo"][2:] == rounded
    assert back["history"]["step"] == list(range(25))
    # Everything outside series round-trips exactly.
    assert back["nineteen"] == series[:19]
    assert back["test_mse"] == payload["test_mse"]
    assert back["short"] == payload["short"] and type(back["short"][3]) is int
    assert back["mixed"] == payload["mixed"] and back["rows"] == payload["rows"]
    assert back["grid"] == [[0.5, 1.5], [2.5, 3.5]] and back["empty"] == {}
    assert math.copysign(1.0, back["negative_zero"]) == -1.0
    # Writing what was read gives the same file (the rounding is idempotent).
    write_json(str(tmp_path / "again.json"), back)
    assert (tmp_path / "again.json").read_text() == text


def test_read_json_reads_the_old_layout_as_well(tmp_path):
    payload = {"loss": [0.1, 0.2] * 15, "argv": ["a", "b"], "nested": {"x": [1, {"y": 2}]}}
    (tmp_path / "old.json").write_text(json.dumps(payload, indent=1))
    (tmp_path / "flat.json").write_text(json.dumps(payload))
    assert read_json(str(tmp_path / "old.json")) == payload == read_json(str(tmp_path / "flat.json"))
