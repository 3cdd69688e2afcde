"""`svgpvae sprites_summary`: the accuracy table is read back from the runs' metrics, bad input is refused."""

import json
import os

import numpy as np
import pytest

from svgpvae_paper.experiments import sprites_summary

_OPTIONS = {"skin": 6, "hair_colour": 6, "top_colour": 6, "bottom_colour": 6, "hair_shape": 5}


def _style(accuracies):
    return {a: {"accuracy": v, "chance": 1.0 / _OPTIONS[a]} for a, v in accuracies.items()}


def _run(tmp_path, name, model, mse, given, nearest=None, seed=0, seconds=None):
    folder = tmp_path / name
    folder.mkdir()
    style = {"given_context": _style(given)}
    metrics = {"model": model, "test_mse_mean": mse, "epochs": 40, "style_accuracy": style}
    if nearest is not None:
        style["nearest_context_frame"] = _style(nearest[1])
        metrics["nearest_context_frame"] = {"test_mse": nearest[0]}
    if seconds is not None:
        metrics["seconds_per_epoch"] = seconds
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    return str(folder)


def _acc(*values):
    return dict(zip(sprites_summary.ATTRIBUTES, values))


def test_rows_carry_each_runs_numbers_then_the_first_runs_baseline_and_chance(tmp_path):
    a = _run(
        tmp_path,
        "a",
        "svgpvae",
        0.0064,
        _acc(0.75, 1.0, 0.91, 0.93, 0.997),
        nearest=(0.0257, _acc(0.74, 0.93, 0.95, 0.945, 0.92)),
        seed=0,
        seconds=66.6,
    )
    b = _run(tmp_path, "b", "cvae", 0.0070, _acc(0.5, 0.9, 0.8, 0.7, 1.0), nearest=(0.9, _acc(0, 0, 0, 0, 0)), seed=1)
    rows = sprites_summary.summary_rows([a, b], ["SVGP-VAE", "CVAE"])
    assert [r["label"] for r in rows] == ["SVGP-VAE", "CVAE", "nearest context frame", "chance"]
    assert (rows[0]["test_mse"], rows[0]["top_colour"], rows[0]["seed"], rows[0]["seconds_per_epoch"]) == (
        0.0064,
        0.91,
        0,
        66.6,
    )
    assert (rows[1]["model"], rows[1]["bottom_colour"], rows[1]["seed"]) == ("cvae", 0.7, 1)
    assert rows[2]["test_mse"] == 0.0257 and rows[2]["bottom_colour"] == 0.945  # the first run's baseline
    assert rows[3]["skin"] == pytest.approx(1 / 6) and rows[3]["hair_shape"] == pytest.approx(1 / 5)
    table = sprites_summary.markdown_table(rows).splitlines()
    assert table[2] == "| SVGP-VAE | 0.00640 | 0.75 | 1.00 | 0.91 | 0.93 | 1.00 | 66.6 |"
    assert table[-1] == "| chance |  | 0.17 | 0.17 | 0.17 | 0.17 | 0.20 |  |"


def test_main_writes_table_json_and_figure_and_refuses_bad_input(tmp_path, capsys, assert_run_record):
    a = _run(tmp_path, "a", "svgpvae", 0.0064, _acc(0.75, 1.0, 0.91, 0.93, 1.0))
    out = str(tmp_path / "summary")
    result = sprites_summary.main([a, "--labels", "mix", "--out", out])
    assert [r["label"] for r in result["rows"]] == ["mix", "chance"]  # no baseline in this run's metrics
    with open(os.path.join(out, "summary.json")) as f:
        assert json.load(f)["rows"][0]["skin"] == 0.75
    # scratch paths (the runs, --out) are dropped from the record and from the rows
    assert_run_record(
        os.path.join(out, "summary.json"), ["svgpvae", "sprites_summary", None, "--labels", "mix", "--out", None]
    )
    with open(os.path.join(out, "summary.md")) as f:
        assert f.read() == capsys.readouterr().out
    assert os.path.getsize(os.path.join(out, "style_accuracy.png")) > 10_000
    for argv, message in (
        ([str(tmp_path / "missing")], "no metrics.json"),
        ([a, "--labels", "x", "y"], "1 runs but 2 labels"),
        ([], "at least one RUN"),
    ):
        with pytest.raises(SystemExit):
            sprites_summary.main(argv + ["--out", out])
        assert message in capsys.readouterr().err
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "metrics.json").write_text(json.dumps({"test_mse_mean": 0.1}))
    with pytest.raises(SystemExit):
        sprites_summary.main([str(tmp_path / "other"), "--out", out])
    assert "not a sprites run" in capsys.readouterr().err


def _with_history(folder, kappa_squared, constraint, lam, kl, val_epochs=(), val_mse=()):
    metrics_path = os.path.join(folder, "metrics.json")
    with open(metrics_path) as f:
        metrics = json.load(f)
    metrics["history"] = {"geco_constraint": constraint, "geco_lambda": lam, "kl": kl}
    metrics["epoch_selection"] = {"epochs": list(val_epochs), "validation_mse": list(val_mse)}
    with open(metrics_path, "w") as f:
        json.dump(metrics, f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model": metrics["model"], "seed": 0, "kappa_squared": kappa_squared}, f)


def test_training_curves_add_kappa_squared_back_and_find_the_best_scored_epoch(tmp_path, capsys):
    a = _run(tmp_path, "a", "svgpvae", 0.0025, _acc(0.93, 1.0, 0.97, 0.97, 1.0))
    _with_history(
        a,
        0.004,
        [0.01, -0.001, -0.0017],
        [1e6, 9e5, 5.6e4],
        [2947.5, 1600.0, 1702.25],
        val_epochs=(1, 2, 3),
        val_mse=(0.004, 0.0024, 0.00242),
    )
    b = _run(tmp_path, "b", "cvae", 0.0023, _acc(0.95, 1.0, 0.97, 0.97, 1.0))  # no history: left out
    curves = sprites_summary.training_curves([a, b], ["k 0.004", "CVAE"])
    assert [c["label"] for c in curves] == ["k 0.004"]
    c = curves[0]
    assert c["epochs"] == [1, 2, 3]
    assert c["train_mse"] == pytest.approx([0.014, 0.003, 0.0023])  # constraint + kappa^2
    table = sprites_summary.training_table(curves).splitlines()
    assert table[2] == "| k 0.004 | 0.004 | 0.00240 (2) | 0.00242 | 0.0023 | 5.6e+04 | 1702 |"
    out = str(tmp_path / "summary")
    result = sprites_summary.main([a, b, "--labels", "k 0.004", "CVAE", "--out", out])
    assert [c["label"] for c in result["training"]] == ["k 0.004"]
    with open(os.path.join(out, "training.md")) as f:
        assert f.read().splitlines() == table
    assert "0.00240 (2)" in capsys.readouterr().out
    assert os.path.getsize(os.path.join(out, "training_curves.png")) > 10_000
    with pytest.raises(ValueError, match="2 runs but 1 labels"):
        sprites_summary.training_curves([a, b], ["x"])


def test_runs_sharing_a_label_are_seeds_with_a_mean_and_sample_sd_row(tmp_path, capsys):
    s0 = _run(
        tmp_path,
        "s0",
        "svgpvae",
        0.00183,
        _acc(0.934, 1.0, 0.982, 0.995, 1.0),
        nearest=(0.0257, _acc(0.74, 0.93, 0.95, 0.94, 0.92)),
        seed=0,
        seconds=168.3,
    )
    s1 = _run(tmp_path, "s1", "svgpvae", 0.00172, _acc(0.953, 1.0, 0.986, 0.961, 1.0), seed=1, seconds=71.8)
    s2 = _run(tmp_path, "s2", "svgpvae", 0.00190, _acc(0.940, 0.99, 0.970, 0.980, 1.0), seed=2, seconds=80.0)
    c0 = _run(tmp_path, "c0", "cvae", 0.00181, _acc(0.958, 1.0, 0.983, 0.970, 1.0), seed=0)
    rows = sprites_summary.summary_rows([s0, s1, s2, c0], ["GP", "GP", "GP", "CVAE"])
    assert [r["label"] for r in rows] == [
        "GP, seed 0",
        "GP, seed 1",
        "GP, seed 2",
        "GP, mean of 3 seeds",
        "CVAE",
        "nearest context frame",
        "chance",
    ]
    mean = rows[3]
    assert (mean["n_seeds"], mean["seeds"], mean["model"]) == (3, [0, 1, 2], "svgpvae")
    for column, values in (
        ("test_mse", [0.00183, 0.00172, 0.00190]),
        ("skin", [0.934, 0.953, 0.940]),
        ("bottom_colour", [0.995, 0.961, 0.980]),
        ("seconds_per_epoch", [168.3, 71.8, 80.0]),
    ):
        assert mean[column] == pytest.approx(np.mean(values))
        assert mean[column + "_sd"] == pytest.approx(np.std(values, ddof=1))
    assert rows[0]["skin"] == 0.934 and rows[4]["label"] == "CVAE" and "n_seeds" not in rows[4]
    line = sprites_summary.markdown_table(rows).splitlines()[2 + 3]
    assert line.startswith(
        f"| GP, mean of 3 seeds | {np.mean([0.00183, 0.00172, 0.00190]):.5f} ± "
        f"{np.std([0.00183, 0.00172, 0.00190], ddof=1):.5f} | 0.94 ± 0.01 |"
    )
    out = str(tmp_path / "summary")
    sprites_summary.main([s0, s1, c0, "--labels", "GP", "GP", "CVAE", "--out", out])
    assert "| GP, mean of 2 seeds | 0.00178 ± 0.00008 |" in capsys.readouterr().out
    # the same seed twice under one label is not two seeds; nor are two models
    twice = _run(tmp_path, "twice", "svgpvae", 0.002, _acc(0.9, 1.0, 0.9, 0.9, 1.0), seed=1)
    with pytest.raises(ValueError, match="different seeds of one setting"):
        sprites_summary.summary_rows([s1, twice], ["GP", "GP"])
    with pytest.raises(ValueError, match="different models"):
        sprites_summary.summary_rows(
            [s1, _run(tmp_path, "c2", "cvae", 0.002, _acc(0.9, 1, 0.9, 0.9, 1), seed=2)], ["GP", "GP"]
        )
    with pytest.raises(SystemExit):
        sprites_summary.main([s1, twice, "--labels", "GP", "GP", "--out", out])
    assert "different seeds of one setting" in capsys.readouterr().err
