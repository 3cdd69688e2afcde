import numpy as np
import pytest

from svgpvae_paper.metrics import affine_align, affine_path_rmse


def _random_affine_targets(rng, predicted, shared: bool):
    """true = predicted @ A + b, with one (A, b) per video unless shared."""
    num_videos, _, num_latents = predicted.shape
    n_maps = 1 if shared else num_videos
    A = rng.normal(size=(n_maps, num_latents, 2))
    b = rng.normal(size=(n_maps, 1, 2)) * 3.0
    return predicted @ A + b


def _normal_equation_residuals(X, Y):
    """Independent least squares: solve (X^T X) W = X^T Y."""
    X1 = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
    W = np.linalg.solve(X1.T @ X1, X1.T @ Y)
    return X1 @ W - Y


@pytest.mark.parametrize("num_latents", [1, 2, 3])
@pytest.mark.parametrize("per_video", [True, False])
def test_exact_affine_transform_gives_zero(rng, num_latents, per_video):
    predicted = rng.normal(size=(20, 30, num_latents))
    # With L = 1 the truth lies on a line per video (A is 1 x 2), as it must.
    true = _random_affine_targets(rng, predicted, shared=not per_video)
    assert affine_path_rmse(predicted, true, per_video=per_video) < 1e-10
    np.testing.assert_allclose(affine_align(predicted, true, per_video=per_video), true, atol=1e-10)


def test_per_video_and_global_differ_when_maps_differ(rng):
    predicted = rng.normal(size=(20, 30, 2))
    true = _random_affine_targets(rng, predicted, shared=False)
    per_video = affine_path_rmse(predicted, true, per_video=True)
    global_ = affine_path_rmse(predicted, true, per_video=False)
    assert per_video < 1e-10
    assert global_ > 0.5


def test_per_video_never_worse_than_global(rng):
    # A per-video fit nests the global one.
    for _ in range(5):
        predicted = rng.normal(size=(10, 30, 2))
        true = rng.normal(size=(10, 30, 2))
        assert affine_path_rmse(predicted, true) <= affine_path_rmse(predicted, true, per_video=False)


def test_known_noise_gives_expected_rmse(rng):
    num_videos, num_frames, num_latents, sigma = 400, 30, 2, 0.1
    predicted = rng.normal(size=(num_videos, num_frames, num_latents))
    noise = sigma * rng.normal(size=(num_videos, num_frames, 2))
    true = _random_affine_targets(rng, predicted, shared=False) + noise
    rmse = affine_path_rmse(predicted, true)
    # Per video the fit absorbs p = L + 1 of the T residual dimensions:
    # E[RMSE^2] = sigma^2 (T - p) / T. RMSE^2 / that is chi^2 with
    # n = V * 2 * (T - p) = 21600 dof over n, relative sd sqrt(2 / n) ~ 1%,
    # so RMSE has relative sd ~0.5%; allow 3%.
    expected = sigma * np.sqrt((num_frames - num_latents - 1) / num_frames)
    assert rmse == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize("num_latents", [1, 2, 4])
def test_matches_normal_equations(rng, num_latents):
    predicted = rng.normal(size=(15, 30, num_latents))
    true = rng.normal(size=(15, 30, 2)).cumsum(axis=1)  # path-like targets
    # Per video.
    residuals = np.stack([_normal_equation_residuals(p, y) for p, y in zip(predicted, true)])
    expected = np.sqrt(np.mean(residuals**2))
    assert affine_path_rmse(predicted, true) == pytest.approx(expected, rel=1e-10)
    np.testing.assert_allclose(affine_align(predicted, true), true + residuals, atol=1e-10)
    # Global.
    residuals = _normal_equation_residuals(predicted.reshape(-1, num_latents), true.reshape(-1, 2))
    expected = np.sqrt(np.mean(residuals**2))
    assert affine_path_rmse(predicted, true, per_video=False) == pytest.approx(expected, rel=1e-10)


def test_invariant_to_affine_transform_of_predictions(rng):
    predicted = rng.normal(size=(10, 30, 2))
    true = rng.normal(size=(10, 30, 2))
    B = np.array([[2.0, 0.5], [-1.0, 3.0]])  # invertible
    transformed = predicted @ B + np.array([4.0, -7.0])
    for per_video in (True, False):
        assert affine_path_rmse(transformed, true, per_video=per_video) == pytest.approx(
            affine_path_rmse(predicted, true, per_video=per_video), rel=1e-9
        )


def test_constant_predictions_give_spread_of_truth(rng):
    # A collapsed encoder: rank-deficient design, handled by lstsq's min-norm
    # solution; the best affine image is the per-video mean of the truth.
    predicted = np.ones((8, 30, 2))
    true = rng.normal(size=(8, 30, 2))
    expected = np.sqrt(np.mean((true - true.mean(axis=1, keepdims=True)) ** 2))
    assert affine_path_rmse(predicted, true) == pytest.approx(expected, rel=1e-10)


def test_rmse_is_per_coordinate(rng):
    # Normalisation: mean over videos, frames and both coordinates.
    predicted = np.zeros((1, 4, 1))
    predicted[0, :, 0] = [0.0, 1.0, 2.0, 3.0]
    true = np.zeros((1, 4, 2))
    true[0, :, 0] = [0.0, 1.0, 2.0, 3.0]
    true[0, :, 1] = [1.0, -1.0, -1.0, 1.0]  # orthogonal to [1, t]: residual is all of it
    assert affine_path_rmse(predicted, true) == pytest.approx(np.sqrt(4 / 8))


def test_accepts_float32_and_returns_float(rng):
    predicted = rng.normal(size=(3, 30, 2)).astype(np.float32)
    true = rng.normal(size=(3, 30, 2))
    value = affine_path_rmse(predicted, true)
    assert isinstance(value, float)
    assert affine_align(predicted, true).dtype == np.float64


@pytest.mark.parametrize(
    "pred_shape, true_shape, per_video",
    [
        ((30, 2), (3, 30, 2), True),  # predicted not 3-D
        ((3, 30, 2), (30, 2), True),  # true not 3-D
        ((3, 30, 2), (4, 30, 2), True),  # num_videos mismatch
        ((3, 30, 2), (3, 29, 2), True),  # num_frames mismatch
        ((3, 3, 2), (3, 3, 2), True),  # T <= L + 1: fit is always exact
        ((1, 3, 2), (1, 3, 2), False),
        ((0, 30, 2), (0, 30, 2), True),  # empty
    ],
)
def test_bad_shapes_raise(pred_shape, true_shape, per_video):
    with pytest.raises(ValueError):
        affine_path_rmse(np.zeros(pred_shape), np.zeros(true_shape), per_video=per_video)


def test_global_fit_allows_short_videos(rng):
    # Short videos are fine globally as long as V * T > L + 1.
    predicted = rng.normal(size=(10, 3, 2))
    true = predicted @ np.array([[1.0, 2.0], [0.0, 1.0]]) + 1.0
    assert affine_path_rmse(predicted, true, per_video=False) < 1e-10


def test_non_finite_raises(rng):
    predicted = rng.normal(size=(2, 30, 2))
    predicted[1, 5, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        affine_path_rmse(predicted, np.zeros((2, 30, 2)))
