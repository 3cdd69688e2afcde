"""examples/paper/studies/moving_ball_sparse_floor.py: the sparse-vs-exact floor on the moving ball's true paths."""

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def floor(load_example):
    return load_example("moving_ball_sparse_floor")


def test_sparse_bound_is_below_the_marginal_likelihood_and_equal_with_inducing_times_at_the_frames(floor):
    rng = np.random.default_rng(3)
    times = np.arange(12, dtype=np.float64)
    Y = rng.standard_normal((12, 4))
    mean_exact, lml = floor.exact_mean(times, Y, 1.7, 0.05)
    mean_sparse, bound = floor.sparse_mean(times, Y, 1.7, 0.05, 5)
    assert bound < lml - 1.0  # Titsias: the bound is below log p(y), strictly with 5 of 12
    mean_full, bound_full = floor.sparse_mean(times, Y, 1.7, 0.05, 12)  # U = X: the exact posterior
    np.testing.assert_allclose(mean_full, mean_exact, atol=1e-4)  # jitter 1e-6 on Kuu
    assert abs(bound_full - lml) < 1e-3 * abs(lml)
    assert np.max(np.abs(mean_sparse - mean_exact)) > 1e-2


def test_quick_run_writes_its_results_and_m_equal_frames_matches_the_exact_gp(floor, tmp_path):
    rows = floor.main(["--quick", "--out", str(tmp_path)])
    (row,) = rows
    assert row["m30_rmse"] == pytest.approx(row["exact_rmse"], rel=1e-5)
    assert row["m30_best_lengthscale"] == row["exact_best_lengthscale"]
    assert row["m15_rmse"] > row["exact_rmse"]
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["rows"][0]["m15_rmse"] == pytest.approx(row["m15_rmse"])
    assert (tmp_path / "floor.png").stat().st_size > 0 and (tmp_path / "floor.csv").exists()
