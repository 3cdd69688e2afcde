"""Pieces the experiment commands share: claims on cached runs (:class:`RunClaim`)."""

import os
import socket
import subprocess
import sys

from svgpvae_paper.experiments.common import RunClaim


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
