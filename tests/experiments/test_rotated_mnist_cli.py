"""`python -m gpflow_svgpvae.experiments.rotated_mnist table1 --quick` on a reduced data set."""
import csv
import json
import os

import numpy as np

from gpflow_svgpvae.experiments import rotated_mnist


def test_table1_quick_smoke_writes_all_outputs(tmp_path):
    out = str(tmp_path / "rm")
    result = rotated_mnist.main(
        ["table1", "--quick", "--epochs", "1", "--n-per-digit", "12", "--batch-size", "64",
         "--deep-svigp-eval-steps", "2", "--out", out, "--quiet"]
    )
    for name in ("config.json", "metrics.json", "table1.md", "table1.csv", "generated_seed0.png"):
        assert os.path.exists(os.path.join(out, name)), name
    for model in rotated_mnist.MODELS:
        assert os.path.exists(os.path.join(out, f"generated_{model}_seed0.png"))
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["epochs"] == 1 and config["seeds"] == 1 and config["n_per_digit"] == 12
    metrics = json.load(open(os.path.join(out, "metrics.json")))
    assert [r["model"] for r in metrics["results"]] == list(rotated_mnist.MODELS)
    for r in metrics["results"]:
        assert np.isfinite(r["test_mse_mean"]) and np.isfinite(r["test_mse_sample"]) and r["seconds_per_epoch"] > 0
        assert r["eval_epochs"] == [1]
    rows = list(csv.reader(open(os.path.join(out, "table1.csv"))))
    assert len(rows) == 5 and rows[0][0] == "model"
    assert [row[6] for row in rows[1:]] == ["-", "O(N H^2)", "O(b m^2 + m^3)", "O(b m^2 + m^3)"]
    assert "| SVGP-VAE |" in open(os.path.join(out, "table1.md")).read()
    assert len(result["summary"]) == 4


def test_place_new_objects_follows_the_learned_coordinates(rng):
    """Eval objects get the affine map that takes the initial training vectors to the learned ones."""
    from types import SimpleNamespace

    from gpflow_svgpvae.auxiliary import ObjectVectors

    initial = rng.standard_normal((10, 3))
    model = SimpleNamespace(object_vectors=ObjectVectors(10, 3, initial_vectors=initial))
    data = SimpleNamespace(fit_ids=np.arange(7), eval_ids=np.arange(7, 10))
    rotated_mnist.place_new_objects(model, data, initial)  # nothing learned yet: unchanged
    np.testing.assert_allclose(model.object_vectors.vectors.numpy(), initial, atol=1e-12)
    A, c = rng.standard_normal((3, 3)), rng.standard_normal(3)
    learned = initial.copy()
    learned[:7] = initial[:7] @ A + c
    learned[7:] = 99.0  # whatever the eval rows hold is overwritten
    model.object_vectors.vectors.assign(learned)
    W = rotated_mnist.place_new_objects(model, data, initial)
    np.testing.assert_allclose(W, np.vstack([A, c]), atol=1e-10)
    np.testing.assert_allclose(model.object_vectors.vectors.numpy(), initial @ A + c, atol=1e-10)
