"""`python -m svgpvae_paper.experiments.rotated_mnist_figures <command> --quick`.

The bias computation itself (:func:`svgpvae_paper.estimators.inducing_mean_bias`) is tested in
``tests/test_estimators.py``.

Smoke tests run every command on a tiny data set (12 instances per digit, 1 epoch), with outputs and the
run cache in ``tmp_path``.
"""

import csv
import glob
import json
import os

import numpy as np
import pytest

from svgpvae_paper.experiments import rotated_mnist_figures as figures


def _run(tmp_path, command, *extra):
    out = str(tmp_path / command)
    payload = figures.main(
        [command, "--quick", "--epochs", "1", "--out", out, "--cache", str(tmp_path / "cache"), "--quiet", *extra]
    )
    for suffix in (".png", ".csv", ".json"):
        assert os.path.getsize(os.path.join(out, command + suffix)) > 0, command + suffix
    saved = json.load(open(os.path.join(out, command + ".json")))
    assert saved["command"] == command and saved["config"]["epochs"] == 1 and "git_commit" in saved
    rows = list(csv.DictReader(open(os.path.join(out, command + ".csv"))))
    assert len(rows) == len(payload["rows"]) > 0
    return payload, rows


def _assert_finite_runs(rows):
    for r in rows:
        for key in ("test_mse_mean", "test_mse_sample", "best_eval_mse", "seconds_per_epoch"):
            assert np.isfinite(r[key]) and r[key] > 0, (key, r)


# ---------------------------------------------------------------------- smoke tests
@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_runtime_and_num_inducing_quick_smoke_share_cached_runs(tmp_path):
    payload, _ = _run(tmp_path, "runtime", "--timing-epochs", "3")
    rows = payload["rows"]
    _assert_finite_runs(rows)
    assert [(r["model"], r["setting"]) for r in rows] == [
        ("svgpvae", "m=16"),
        ("svgpvae", "m=32"),
        ("gppvae", "Q=2 (H=32)"),
        ("gppvae", "Q=4 (H=64)"),
    ]
    # --timing-epochs: every setting timed again in a fresh 3-epoch run, attached to its summary.
    assert [(t["model"], t["setting"], t["epochs"]) for t in payload["timing"]] == [
        (r["model"], r["setting"], 3) for r in rows
    ]
    for s, t in zip(payload["summary"], payload["timing"]):
        assert s["seconds_per_epoch_timed"] == t["seconds_per_epoch"] > 0
    assert [r["gppvae_rank_H"] for r in rows] == [None, None, 32, 64] and "H = 16 Q" in payload["gppvae_rank_note"]
    assert not any(r["cached"] for r in rows)

    # A second command with the same cache reuses the SVGP-VAE runs (m = 16, 32): no retraining.
    again, _ = _run(tmp_path, "num_inducing")
    assert [r["m"] for r in again["rows"]] == [16, 32] and all(r["cached"] for r in again["rows"])
    for new, old in zip(again["rows"], rows[:2]):
        for key in ("test_mse_mean", "test_mse_sample", "seconds_per_epoch", "run"):
            assert new[key] == old[key]


@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_digits_quick_smoke(tmp_path):
    payload, _ = _run(tmp_path, "digits")
    _assert_finite_runs(payload["rows"])
    assert [(r["digits"], r["num_digits"]) for r in payload["rows"]] == [("3", 1), ("1-3-6", 3)]
    assert payload["rows"][1]["num_data"] == 3 * payload["rows"][0]["num_data"]


@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_batch_size_quick_smoke(tmp_path):
    payload, _ = _run(tmp_path, "batch_size")
    _assert_finite_runs(payload["rows"])
    assert [r["batch_size"] for r in payload["rows"]] == [32, 64]


@pytest.mark.slow  # long; run with make test-all (keeps the default suite under 10 minutes)
def test_bias_quick_smoke_and_reuse(tmp_path):
    payload, rows = _run(tmp_path, "bias")
    assert [(r["m"], r["epoch"]) for r in payload["rows"]] == [(16, 0), (16, 1), (32, 0), (32, 1)]
    for r in payload["rows"]:
        assert np.isfinite(r["relative_bias"]) and r["relative_bias"] > 0 and r["num_batches"] == 4
        assert r["precision_relative_deviation"] < 1e-10
    assert not any(r["cached"] for r in payload["runs"])
    # Second invocation: the runs and their bias records are reused, identical numbers.
    again, _ = _run(tmp_path, "bias")
    assert all(r["cached"] for r in again["runs"])
    assert again["rows"] == payload["rows"]
    assert [r["test_mse_mean"] for r in again["runs"]] == [r["test_mse_mean"] for r in payload["runs"]]


@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_tsne_quick_smoke(tmp_path):
    payload, rows = _run(tmp_path, "tsne")
    assert payload["tsne_digits"] == [1, 3, 6] and payload["num_points"] == len(rows) == payload["run"]["num_data"]
    assert {int(r["digit"]) for r in rows} == {1, 3, 6}
    assert all(np.isfinite(float(r["tsne_x"])) and np.isfinite(float(r["tsne_y"])) for r in rows)
    assert 0 <= payload["knn10_digit_agreement"]["tsne"] <= 1
    assert np.isfinite(payload["run"]["test_mse_mean"])


@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_init_quick_smoke(tmp_path):
    payload, _ = _run(tmp_path, "init")
    _assert_finite_runs(payload["rows"])
    assert [(r["model"], r["object_init"]) for r in payload["rows"]] == [
        ("svgpvae", "pca"),
        ("svgpvae", "random"),
        ("gppvae", "pca"),
        ("gppvae", "random"),
    ]
    table = open(tmp_path / "init" / "init.md").read()
    assert "| SVGP-VAE | random | sd 1.5 | 1 |" in table and "0.0272" in table and "0.0374" in table
    # One epoch, evaluated after it: the eval-selected checkpoint is the last epoch's model.
    for r in payload["rows"]:
        assert r["best_epoch"] == 1 and r["test_mse_mean_final"] == r["test_mse_mean"]


@pytest.mark.slow  # figure-command smoke test; `make test-all`
def test_init_object_scales_add_rescaled_runs(tmp_path):
    payload, _ = _run(tmp_path, "init", "--models", "svgpvae", "--object-scales", "paper,0.5")
    assert [(r["object_init"], r["object_scale"]) for r in payload["rows"]] == [
        ("pca", None),
        ("pca", 0.5),
        ("random", None),
        ("random", 0.5),
    ]
    # Other scales are other runs (other initial vectors): other test MSE.
    assert len({round(r["test_mse_mean"], 12) for r in payload["rows"]}) == 4
    table = open(tmp_path / "init" / "init.md").read()
    assert "| SVGP-VAE | pca | RMS 0.5 | 1 |" in table and "| SVGP-VAE | random | sd 0.5 | 1 |" in table
    # the paper's number sits beside the paper's setting only
    assert table.count("0.0272") == 1
    with pytest.raises(SystemExit):
        figures.main(["init", "--quick", "--object-scales", "0,paper"])


@pytest.mark.slow  # trains twice the quick data set (~25 s); `make test-all` keeps the default suite under 10 minutes
def test_convergence_curve_at_the_best_eval_epoch_is_the_runs_test_mse(tmp_path, assert_run_record):
    out = str(tmp_path / "convergence")
    payload = figures.main(
        ["convergence", "--quick", "--epochs", "2", "--out", out, "--cache", str(tmp_path / "cache"), "--quiet"]
    )
    assert os.path.getsize(os.path.join(out, "convergence.png")) > 0
    # The figure's file, the run and the per-epoch record all record the command (scratch paths dropped).
    command = ["svgpvae", "rotated_mnist_figures", "convergence", "--quick", "--epochs", "2"]
    command += ["--out", None, "--cache", None, "--quiet"]
    assert_run_record(os.path.join(out, "convergence.json"), command)
    written = glob.glob(str(tmp_path / "cache" / "**" / "*.json"), recursive=True)
    assert len(written) == 2  # the run and its per-epoch record
    for path in written:
        assert assert_run_record(path, command)["config"]["model"] == "svgpvae"
    rows, run = payload["rows"], payload["runs"][0]
    assert [r["epoch"] for r in rows] == [1, 2]
    # The run reports the test MSE of its best eval epoch's model; the curve scored the same model then.
    at_best = [r for r in rows if r["epoch"] == run["best_epoch"]][0]
    np.testing.assert_allclose(at_best["test_mse_mean"], run["test_mse_mean"], rtol=1e-6)
    # A second call reads the record instead of training again.
    again = figures.main(
        ["convergence", "--quick", "--epochs", "2", "--out", out, "--cache", str(tmp_path / "cache")]
    )  # not quiet: the summary is printed
    assert again["rows"] == rows and again["runs"][0]["cached"]


def test_object_scale_options_reach_the_run_settings():
    parser = figures._parser()
    base, sweeps = figures._configure(parser.parse_args(["convergence", "--object-scale", "0.1"]))
    assert base.object_scale == 0.1 and base.object_init == "pca" and sweeps.init_scales == (None,)
    base, _ = figures._configure(parser.parse_args(["convergence", "--object-init", "random"]))
    assert base.object_init == "random" and base.object_scale is None
    base, _ = figures._configure(parser.parse_args(["convergence", "--object-learning-rate", "0.01"]))
    assert base.object_learning_rate == 0.01 and base.learning_rate == 1e-3
    base, sweeps = figures._configure(parser.parse_args(["init", "--object-scales", "paper,0.1,2"]))
    assert base.object_scale is None and sweeps.init_scales == (None, 0.1, 2.0)
    with pytest.raises(SystemExit):
        figures._configure(parser.parse_args(["convergence", "--object-scale", "-1"]))


def test_table_header_and_figure_titles_state_the_object_initialisation_alike():
    from svgpvae_paper.experiments import rotated_mnist as rm
    from svgpvae_paper.experiments.rotated_mnist_report import settings_line
    from svgpvae_paper.experiments.rotated_mnist_sweeps import settings_note

    scaled = rm.Config(object_init="random", object_scale=0.1)
    spec = rm.run_spec("svgpvae", 0, scaled)
    assert "object init random (scale 0.1)" in settings_line([spec, dict(spec, seed=1)])
    assert "object init random (scale 0.1)" in settings_note(scaled).replace("\n", " ")
    assert "object init" not in settings_note(rm.Config())  # the paper's PCA init goes unstated
    assert "object init pca," in settings_line([rm.run_spec("svgpvae", 0, rm.Config())])


@pytest.mark.parametrize("progress", [True, False])
def test_sweep_bar_shows_the_epoch_of_the_run_in_training(monkeypatch, capsys, tmp_path, progress):
    """A full-size run takes tens of minutes: the bar over runs names the current epoch (the last one at
    least, the others at most once per ``mininterval``); without progress no epoch hook is passed."""
    from svgpvae_paper.experiments import rotated_mnist as rm
    from svgpvae_paper.experiments.rotated_mnist_sweeps import SweepContext, Sweeps, run_sweep

    hooks = []

    def fake_run_cached(name, data, cfg, seed, progress=False, on_epoch=None, **kwargs):
        hooks.append(on_epoch)
        for epoch in range(cfg.epochs):
            if on_epoch is not None:
                on_epoch(epoch, None, {})
        return {
            "model": name,
            "seed": seed,
            "test_mse_mean": 0.1,
            "test_mse_sample": 0.2,
            "best_eval_mse": 0.3,
            "best_epoch": cfg.epochs,
            "seconds_per_epoch": 1.0,
            "epochs": cfg.epochs,
            "num_data": 10,
            "spec": rm.run_spec(name, seed, cfg),
        }

    monkeypatch.setattr(rm, "run_cached", fake_run_cached)
    ctx = SweepContext(rm.Config(epochs=7, seeds=(0, 1)), Sweeps(), cache=str(tmp_path), progress=progress)
    monkeypatch.setattr(ctx, "data", lambda cfg: None)
    rows = run_sweep(ctx, [("svgpvae", {"batch_size": 64}, {"batch_size": 64})], desc="batch_size runs")
    assert [r["seed"] for r in rows] == [0, 1] and len(hooks) == 2
    err = capsys.readouterr().err
    if progress:
        assert all(h is not None for h in hooks)
        assert "svgpvae batch_size=64 seed 0, epoch 7/7" in err and "seed 1, epoch 7/7" in err
    else:
        assert hooks == [None, None] and "epoch" not in err


def test_a_run_claimed_by_another_process_is_skipped_then_reused(monkeypatch, tmp_path):
    """Two processes on one sweep: the run another live process has claimed is not trained here; this
    process trains the rest first, waits, and reuses the other's finished run (rows in sweep order)."""
    import subprocess
    import sys

    from svgpvae_paper.experiments import rotated_mnist as rm
    from svgpvae_paper.experiments import rotated_mnist_sweeps as sweeps

    ctx = sweeps.SweepContext(rm.Config(epochs=3, seeds=(0, 1)), sweeps.Sweeps(), cache=str(tmp_path), progress=False)
    monkeypatch.setattr(ctx, "data", lambda cfg: None)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    claim_of_seed0 = rm.run_path("svgpvae", 0, ctx.config()) + ".claim"
    os.makedirs(os.path.dirname(claim_of_seed0))
    with open(claim_of_seed0, "w") as f:
        f.write(f"{__import__('socket').gethostname()} {other.pid}")
    trained, finished_elsewhere, sleeps = [], set(), []

    def fake_run_cached(name, data, cfg, seed, progress=False, on_epoch=None, **kwargs):
        assert os.path.exists(rm.run_path(name, seed, cfg) + ".claim")  # held while it trains
        if seed not in finished_elsewhere:
            trained.append(seed)
        return {
            "model": name,
            "seed": seed,
            "test_mse_mean": 0.1 + seed,
            "test_mse_sample": 0.2,
            "best_eval_mse": 0.3,
            "best_epoch": 3,
            "seconds_per_epoch": 1.0,
            "epochs": 3,
            "num_data": 10,
            "spec": rm.run_spec(name, seed, cfg),
            "cached": seed in finished_elsewhere,
        }

    def other_finishes(seconds):  # the other process finishes seed 0 and releases its claim
        sleeps.append(seconds)
        finished_elsewhere.add(0)
        os.remove(claim_of_seed0)

    monkeypatch.setattr(rm, "run_cached", fake_run_cached)
    monkeypatch.setattr(sweeps.time, "sleep", other_finishes)
    try:
        rows = sweeps.run_sweep(ctx, [("svgpvae", {}, {})], desc="runs", poll_seconds=5.0)
    finally:
        other.kill()
    assert trained == [1] and sleeps == [5.0]
    assert [(r["seed"], r["cached"]) for r in rows] == [(0, True), (1, False)]
    assert not any(f.endswith(".claim") for f in os.listdir(os.path.dirname(claim_of_seed0)))


def test_timing_epochs_must_time_at_least_one_epoch_after_the_first():
    with pytest.raises(SystemExit, match="timing_epochs must be 0 .off. or at least 2"):
        figures.main(["runtime", "--quick", "--timing-epochs", "1", "--quiet"])


def test_attach_timings_matches_settings_not_order():
    from svgpvae_paper.experiments.rotated_mnist_sweeps import attach_timings

    summary = [{"model": "svgpvae", "setting": "m=16"}, {"model": "gppvae", "setting": "Q=8 (H=128)"}]
    timed = [
        {"model": "gppvae", "setting": "Q=8 (H=128)", "seconds_per_epoch": 2.5},
        {"model": "svgpvae", "setting": "m=16", "seconds_per_epoch": 0.7},
    ]
    attach_timings(summary, timed, ("model", "setting"))
    assert [s["seconds_per_epoch_timed"] for s in summary] == [0.7, 2.5]


def test_table_header_and_figure_titles_state_the_object_learning_rate():
    from svgpvae_paper.experiments import rotated_mnist as rm
    from svgpvae_paper.experiments.rotated_mnist_report import settings_line
    from svgpvae_paper.experiments.rotated_mnist_sweeps import settings_note

    fast = rm.Config(object_learning_rate=0.01)
    assert "Adam 0.001 (object vectors 0.01), GECO" in settings_line([rm.run_spec("svgpvae", 0, fast)])
    assert "object vectors Adam 0.01" in settings_note(fast).replace("\n", " ")
    assert "Adam 0.001, GECO" in settings_line([rm.run_spec("svgpvae", 0, rm.Config())])
    assert "object vectors" not in settings_note(rm.Config())
    fitted = rm.Config(models=("svgpvae",), eval_placement="fit")
    assert "(eval vectors fitted, 50 steps)" in settings_line([rm.run_spec("svgpvae", 0, fitted)])
    assert "eval vectors fitted (50 steps)" in settings_note(fitted).replace("\n", " ")
    assert "fitted" not in settings_line([rm.run_spec("svgpvae", 0, rm.Config())])


def test_a_run_record_without_images_is_reused_only_where_images_are_not_needed(monkeypatch, tmp_path):
    """A ``.json`` run record alone (as committed under docs/results/) stands for the finished run
    when the caller does not need the images (the sweeps, ``bias``); with ``images=True`` or
    ``artifacts`` the run is trained again, since the record cannot provide them."""
    from svgpvae_paper.experiments import rotated_mnist as rm
    from svgpvae_paper.experiments.common import write_json

    class Trained(Exception):
        pass

    def run_model(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(rm, "run_model", run_model)
    cfg = rm.Config(epochs=3, out=str(tmp_path))
    path = rm.run_path("svgpvae", 1, cfg)
    os.makedirs(os.path.dirname(path))
    record = {"model": "svgpvae", "seed": 1, "test_mse_mean": 0.0238, "spec": rm.run_spec("svgpvae", 1, cfg)}
    write_json(path + ".json", record)

    res = rm.run_cached("svgpvae", None, cfg, 1, images=False)
    assert res == {**json.loads(json.dumps(record)), "cached": True} and "_images" not in res
    for kwargs in ({}, {"images": False, "artifacts": lambda model: {}}, {"images": False, "retrain": True}):
        with pytest.raises(Trained):
            rm.run_cached("svgpvae", None, cfg, 1, **kwargs)
    # With its images saved too, the run is reused with them, as before.
    np.savez(path + ".npz", mean=np.zeros((2, 3)), sample=np.ones((2, 3)))
    for images in (True, False):
        res = rm.run_cached("svgpvae", None, cfg, 1, images=images)
        assert res["cached"] and res["test_mse_mean"] == 0.0238 and res["_images"][1].sum() == 6
