"""examples/paper/studies/moving_ball_decoder_capacity.py: moving-ball decoders trained from the true positions."""

import json

import numpy as np
import pytest
from gpflow.keras import tf_keras

from gpflow_svgpvae.likelihoods import Bernoulli


@pytest.fixture(scope="module")
def capacity(load_example):
    return load_example("moving_ball_decoder_capacity")


def test_nll_per_video_matches_a_numpy_bernoulli_log_likelihood(capacity):
    rng = np.random.default_rng(0)
    V, T, K = 3, 4, 6
    paths = rng.standard_normal((V, T, 2))
    videos = (rng.random((V, T, K)) < 0.3).astype(np.float32)
    decoder = tf_keras.Sequential([tf_keras.Input((2,)), tf_keras.layers.Dense(K)])
    W, b = (w.astype(np.float64) for w in decoder.get_weights())
    logits = paths.reshape(-1, 2).astype(np.float32).astype(np.float64) @ W + b  # [V T, K]
    y = videos.reshape(-1, K)
    reference = np.sum(np.logaddexp(0.0, logits) - y * logits) / V
    assert capacity.bernoulli_nll_per_video(decoder, Bernoulli(), paths, videos) == pytest.approx(reference, rel=1e-5)


def test_quick_run_lowers_the_test_nll_and_writes_it(capacity, tmp_path):
    curves = capacity.main(["--quick", "--out", str(tmp_path)])
    assert set(curves) == {"1x16", "2x16"}
    for curve in curves.values():
        assert sorted(curve) == [0, 10, 20]
        assert curve[20] < curve[0]  # Adam on the same likelihood, 20 steps from the data-mean bias
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["test_nll_per_video"]["2x16"]["20"] == pytest.approx(curves["2x16"][20])
    assert (tmp_path / "decoder_capacity.png").stat().st_size > 0
