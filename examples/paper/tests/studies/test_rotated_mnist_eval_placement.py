"""examples/paper/studies/rotated_mnist_eval_placement.py: runs are paired by their training settings only."""

import json
import os

import pytest


@pytest.fixture(scope="module")
def placement(load_example):
    return load_example("rotated_mnist_eval_placement")


def record(folder, seed, best_epoch, **spec):
    spec = {"model": "svgpvae", "seed": seed, "epochs": 20, "object_learning_rate": 0.01, **spec}
    run = {
        "seed": seed,
        "spec": spec,
        "eval_epochs": [10, 20],
        "eval_mse": [0.05, 0.04],
        "best_epoch": best_epoch,
        "best_eval_mse": 0.04,
        "test_mse_mean": 0.03,
        "test_mse_mean_final": 0.02,
    }
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"svgpvae_seed{seed}_{best_epoch}.json"), "w") as f:
        json.dump(run, f)


def test_runs_are_paired_by_training_settings_not_evaluation_options(placement, tmp_path, capsys):
    affine, fit = str(tmp_path / "affine"), str(tmp_path / "fit")
    record(affine, 0, 10, eval_every=5)
    record(affine, 1, 10, eval_every=5)
    record(fit, 0, 20, eval_every=10, eval_placement="fit", eval_fit_steps=50)
    record(fit, 1, 20, eval_every=10, eval_placement="fit", eval_fit_steps=50, batch_size=64)  # other training
    out = str(tmp_path / "placement.png")
    placement.main(["--affine", affine, "--fit", fit, "--out", out])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0") or line.startswith("| 1")]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| 0", "affine map (paper)", "10"],
        ["| 0", "fitted to context", "20"],
    ]
    assert os.path.getsize(out) > 0
    with pytest.raises(SystemExit, match="same training settings"):
        placement.main(["--affine", str(tmp_path / "none"), "--fit", fit, "--out", out])
