"""``svgpvae defaults``: the generated problems hide what they say, and the summary's arithmetic."""

import os
import re

import numpy as np
import pytest

from svgpvae_paper.experiments import defaults

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")


def test_imputation_data_is_the_notebooks_generator():
    """The copy draws what docs/imputation.pct.py draws: run the notebook's data cell (seed 0) and
    compare."""
    with open(os.path.join(ROOT, "docs", "imputation.pct.py")) as f:
        text = f.read()
    cell = re.search(r"# %%\nV = 60 if QUICK else 150\n(.*?)\n# %% \[markdown\]", text, re.S).group(0)
    scope = {"np": np, "QUICK": False, "rng": np.random.default_rng(0), "print": lambda *a, **k: None}
    exec(cell, scope)  # noqa: S102 - the repository's own notebook cell
    X, Y, frames, Y_true, hidden = defaults.imputation_data(150, seed=0)
    np.testing.assert_array_equal(X, scope["X"])
    np.testing.assert_array_equal(Y, scope["Y"])
    np.testing.assert_array_equal(frames, scope["frames"])
    np.testing.assert_array_equal(Y_true, scope["Y_true"])
    np.testing.assert_array_equal(hidden, scope["hidden"])


def test_hidden_entries_are_nan_and_real():
    X, Y, frames, Y_true, hidden = defaults.imputation_data(12, seed=3)
    real = np.broadcast_to(frames[..., None] > 0, Y.shape)
    assert not np.any(hidden & ~real)
    np.testing.assert_array_equal(np.isnan(Y), hidden | ~real)
    np.testing.assert_array_equal(Y[~np.isnan(Y)], Y_true[~np.isnan(Y)].astype(np.float32))
    X, Y, frames, Y_true, hidden = defaults.moving_ball_data(20, seed=1)
    assert Y.shape == (20, 30, 256) and frames.min() == 1.0
    np.testing.assert_array_equal(np.isnan(Y), hidden)
    assert abs(hidden.mean() - 0.3) < 0.01
    assert set(np.unique(Y_true)) <= {0.0, 1.0}
    np.testing.assert_array_equal(X[0, :, 0], np.arange(30.0))


def test_summary_compares_each_choice_with_the_default_on_the_same_seeds():
    records = [
        {"dataset": "d", "choice": "default", "seed": 0, "score": 2.0, "metric": "mse"},
        {"dataset": "d", "choice": "default", "seed": 1, "score": 4.0, "metric": "mse"},
        {"dataset": "d", "choice": "site", "seed": 0, "score": 1.0, "metric": "mse"},
        {"dataset": "d", "choice": "site", "seed": 1, "score": 2.0, "metric": "mse"},
    ]
    summary = defaults.summarise(records)["d"]
    assert summary["default"]["score"]["mean"] == 3.0 and "ratio_to_default" not in summary["default"]
    assert summary["site"]["ratio_to_default"] == pytest.approx(1.5 / 3.0)
    assert summary["site"]["difference_per_seed"] == [-1.0, -2.0]
    assert summary["site"]["score"]["sd"] == pytest.approx(np.std([1.0, 2.0], ddof=1))
    assert "| d | site | mse | 1.50000 ± 0.70711 | 1.00000, 2.00000 | 0.500 |" in defaults.table_markdown(
        defaults.summarise(records)
    )


def test_options():
    quick = defaults.config_from_args(["--quick"])
    assert quick.seeds == (0,) and quick.imputation_epochs == defaults.QUICK["imputation_epochs"]
    full = defaults.config_from_args(["--choices", "site", "bias", "--datasets", "imputation"])
    assert full.seeds == (0, 1) and full.choices == ("site", "bias") and full.datasets == ("imputation",)
    with pytest.raises(SystemExit):
        defaults.config_from_args(["--choices", "widths"])
    assert set(defaults.EXPERIMENT_CHOICES["hmnist_quick"]) <= set(defaults.CHOICES)


def test_a_run_is_fixed_by_its_seed_and_scores_the_hidden_entries():
    """Two runs with one seed give the same MSE to the last bit; the record counts the hidden
    entries the generator hid, and a changed choice trains a different model."""
    cfg = defaults.Config(imputation_sequences=12, imputation_epochs=1)
    first = defaults.run_one("imputation", None, 0, cfg)
    again = defaults.run_one("imputation", None, 0, cfg)
    assert first["mse"] == again["mse"] and np.isfinite(first["mse"]) and first["score"] == first["mse"]
    assert first["num_hidden"] == int(defaults.imputation_data(12, seed=0)[4].sum())
    assert defaults.run_one("imputation", "latent_8", 0, cfg)["mse"] != first["mse"]
