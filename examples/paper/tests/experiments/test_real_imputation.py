"""Hiding, baselines and scores of the real-data benchmark against numpy and GPflow references."""

import gpflow
import numpy as np
import pytest

from svgpvae_paper.experiments import real_imputation as ri


def test_standardise_uses_training_statistics_of_real_frames():
    rng = np.random.default_rng(0)
    train, test = rng.normal(3.0, 2.0, (4, 5, 2)), rng.normal(size=(3, 5, 2))
    frames_tr = np.ones((4, 5))
    frames_tr[0, 3:] = 0
    frames_te = np.ones((3, 5))
    a, b, (mean, std) = ri.standardise(train, test, frames_tr, frames_te)
    real = train[frames_tr > 0]
    np.testing.assert_allclose(mean, real.mean(0))
    np.testing.assert_allclose(std, real.std(0))
    np.testing.assert_allclose(b, (test - real.mean(0)) / real.std(0))
    np.testing.assert_allclose(a[frames_tr > 0].mean(0), 0.0, atol=1e-12)
    assert np.all(a[0, 3:] == 0)


def test_hide_mcar_rate_and_padding():
    rng = np.random.default_rng(1)
    frames = np.ones((200, 50))
    frames[:, 40:] = 0
    hidden = ri.hide_mcar(frames, 3, 0.5, rng)
    assert not hidden[:, 40:].any()
    assert abs(hidden[:, :40].mean() - 0.5) < 0.01


def test_hide_outages_are_one_stretch_per_channel_of_the_right_width():
    rng = np.random.default_rng(2)
    frames = np.ones((300, 40))
    frames[:, 36:] = 0  # 36 real frames: width round(0.25 * 36) = 9
    hidden = ri.hide_outages(frames, 4, 0.5, 0.25, rng)
    assert not hidden[:, 36:].any()
    counts = hidden.sum(1)  # [V, D]
    assert set(np.unique(counts)) <= {0, 9}
    assert abs((counts > 0).mean() - 0.5) < 0.05
    for v, d in zip(*np.where(counts > 0)):
        idx = np.where(hidden[v, :, d])[0]
        np.testing.assert_array_equal(idx, np.arange(idx[0], idx[0] + 9))  # contiguous


def test_linear_interpolation_matches_np_interp_and_falls_back():
    X = np.arange(6, dtype=float)[None, :, None].repeat(2, 0)
    Y = np.array([[0.0, 9, 2, 9, 4, 9], [1, 1, 1, 1, 1, 1]])[..., None].repeat(2, -1)
    observed = np.zeros(Y.shape, bool)
    observed[0, [1, 3], 0] = True
    observed[0, :, 1] = True
    frames = np.ones((2, 6))
    filled = ri.linear_interpolation(X, Y, observed, frames, fallback=[-5.0, -6.0])
    np.testing.assert_allclose(filled[0, :, 0], np.interp(np.arange(6), [1, 3], [9, 9]))
    np.testing.assert_allclose(filled[0, :, 1], Y[0, :, 1])
    np.testing.assert_allclose(filled[1, :, 0], -5.0)  # nothing observed: the fallback
    np.testing.assert_allclose(filled[1, :, 1], -6.0)


def test_channel_mean_fill():
    Y = np.array([[[1.0, 10], [3, 20], [5, 60]]])
    observed = np.array([[[1, 1], [1, 1], [0, 0]]], bool)
    mean, var = ri.channel_mean_fill(Y, observed, Y, observed)
    np.testing.assert_allclose(mean[0, 2], [2.0, 15.0])
    np.testing.assert_allclose(var[0, 2], [1.0, 25.0])
    np.testing.assert_allclose(mean[0, :2], Y[0, :2])


def test_scores_match_numpy():
    rng = np.random.default_rng(3)
    truth, mean = rng.normal(size=(4, 7, 2)), rng.normal(size=(4, 7, 2))
    var = rng.uniform(0.5, 2.0, size=truth.shape)
    where = rng.uniform(size=truth.shape) < 0.4
    out = ri.scores(truth, mean, where, var)
    e, v = (truth - mean)[where], var[where]
    assert out["mse"] == pytest.approx(np.mean(e**2))
    assert out["nll"] == pytest.approx(np.mean(0.5 * np.log(2 * np.pi * v) + e**2 / (2 * v)))
    assert out["coverage90"] == pytest.approx(np.mean(np.abs(e) <= 1.6448536269514722 * np.sqrt(v)))
    assert out["num_entries"] == where.sum()
    assert ri.scores(truth, mean, where)["nll"] is None


def test_channel_gp_matches_gpflow_gpr_on_the_observed_frames():
    rng = np.random.default_rng(4)
    V, T, D = 3, 9, 2
    X = np.sort(rng.uniform(0, 10, (V, T, 1)), axis=1)
    Y = rng.normal(size=(V, T, D))
    observed = rng.uniform(size=(V, T, D)) < 0.6
    observed[:, 0] = True
    ell, var, noise = np.array([1.5, 3.0]), np.array([0.7, 1.3]), np.array([0.1, 0.3])
    log_marginals = ri.ChannelGP.log_marginals(ell, var, noise, X, np.where(observed, Y, 0.0), observed * 1.0)
    gp = ri.ChannelGP()
    gp.lengthscales, gp.variances, gp.noise_variances = ell, var, noise
    mean, variance = gp.predict(X, np.where(observed, Y, 0.0), observed)
    for d in range(D):
        total = 0.0
        for v in range(V):
            seen = observed[v, :, d]
            kernel = gpflow.kernels.SquaredExponential(variance=var[d], lengthscales=ell[d])
            model = gpflow.models.GPR((X[v][seen], Y[v, seen, d][:, None]), kernel, noise_variance=noise[d])
            total += float(model.log_marginal_likelihood())
            m, s = model.predict_y(X[v])
            np.testing.assert_allclose(mean[v, :, d], m.numpy()[:, 0], rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(variance[v, :, d], s.numpy()[:, 0], rtol=1e-6, atol=1e-8)
        assert float(log_marginals[d]) == pytest.approx(total, rel=1e-8)


def test_channel_gp_fit_increases_the_marginal_likelihood():
    rng = np.random.default_rng(5)
    t = np.arange(30, dtype=float)
    X = np.broadcast_to(t[None, :, None], (4, 30, 1)).copy()
    Y = np.sin(t / 4.0)[None, :, None] + 0.1 * rng.normal(size=(4, 30, 1))
    observed = rng.uniform(size=Y.shape) < 0.7
    gp = ri.ChannelGP(lengthscale=1.0, noise_variance=1.0)
    before = float(
        ri.ChannelGP.log_marginals(np.array([1.0]), np.array([1.0]), np.array([1.0]), X, Y * observed, observed * 1.0)[
            0
        ]
    )
    gp.fit(X, Y, observed)
    after = float(
        ri.ChannelGP.log_marginals(gp.lengthscales, gp.variances, gp.noise_variances, X, Y * observed, observed * 1.0)[
            0
        ]
    )
    assert after > before + 10
    assert 2.0 < gp.lengthscales[0] < 8.0 and gp.noise_variances[0] < 0.05


def test_config_refuses_bad_settings():
    with pytest.raises(ValueError, match="scenarios"):
        ri.Config(scenarios=("sometimes",))
    with pytest.raises(ValueError, match="mcar_fraction"):
        ri.Config(mcar_fraction=1.0)
    with pytest.raises(ValueError, match="reserved"):
        ri.config_from_args(["--datasets", "JapaneseVowels"])


def test_summarise_means_over_seeds_and_the_ratio_to_the_better_classical_method():
    rows = [
        dict(dataset="d", scenario="mcar", seed=s, method=m, mse=v, nll=None, coverage90=None)
        for s, (a, b, c) in enumerate([(1.0, 0.8, 0.6), (3.0, 1.2, 0.8)])
        for m, v in (("interp", a), ("gp", b), ("svgpvae", c))
    ]
    rows.append(dict(dataset="d", scenario="mcar", seed=0, method="pypots", skipped="not installed"))
    summary = ri.summarise(rows, ri.Config(seeds=(0, 1)))["d"]["mcar"]
    assert summary["interp"]["mse"]["mean"] == pytest.approx(2.0)
    assert summary["gp"]["mse"]["sd"] == pytest.approx(np.std([0.8, 1.2], ddof=1))
    assert summary["svgpvae_over_best_classical"] == pytest.approx(0.7 / 1.0)
    assert "pypots" not in summary


def test_seconds_per_epoch_leaves_out_the_first_epoch():
    assert ri._seconds_per_epoch([10.0, 11.0, 13.0, 14.0], 20.0) == pytest.approx(1.0)
    assert ri._seconds_per_epoch([10.0, 11.0], 8.0) == pytest.approx(4.0)


def test_targets_compare_per_seed_and_average_the_ratio_over_datasets():
    def row(dataset, seed, method, mse, coverage=None):
        return dict(dataset=dataset, scenario="mcar", seed=seed, method=method, mse=mse, coverage90=coverage)

    results = [
        row("a", 0, "interp", 1.0),
        row("a", 0, "gp", 2.0),
        row("a", 0, "svgpvae", 0.5, 0.9),
        row("a", 0, "pypots", 0.4),
        row("b", 0, "interp", 4.0),
        row("b", 0, "gp", 2.0),
        row("b", 0, "svgpvae", 3.0, 0.7),
    ]
    out = ri.targets(results)
    first, second = out["per_seed"]
    assert first["at_or_below_interp"] and first["at_or_below_gp"] and not first["at_or_below_pypots"]
    assert first["coverage_in_85_95"] and not second["coverage_in_85_95"]
    assert not second["at_or_below_gp"] and "at_or_below_pypots" not in second
    assert out["mean_over_datasets_of_svgpvae_over_best_classical"]["mcar"] == pytest.approx(
        (0.5 / 1.0 + 3.0 / 2.0) / 2
    )


def test_the_svgpvae_is_the_candidate_select_chose_and_imputes_only_hidden_entries():
    rng = np.random.default_rng(0)
    V, T, D = 6, 8, 3
    X = np.broadcast_to(np.arange(T, dtype=float)[None, :, None], (V, T, 1)).copy()
    Y = np.sin(X / 2.0 + rng.normal(size=(V, 1, D))) + 0.05 * rng.normal(size=(V, T, D))
    frames = np.ones((V, T), np.float32)
    hidden = rng.uniform(size=Y.shape) < 0.3
    Y_nan = np.where(hidden, np.nan, Y)
    grid = tuple(dict(num_latent_gps=L, width=8, learning_rate=1e-2) for L in (1, 2))
    config = ri.Config(grid=grid, epochs=2, patience=1, validate_every=1, batch_size=3, num_samples=4, num_inducing=4)
    assert config.candidates() == [dict(c) for c in grid]
    mean, variance, info = ri._fit_learned("svgpvae", (X, Y_nan, frames), (X, Y_nan, frames), config, 0)
    rows = info["selection"]
    assert [row["candidate"] for row in rows] == [dict(c) for c in grid]
    best = min(rows, key=lambda row: row["val_mse"])
    assert info["selected"] == best["candidate"] and best["selected"]
    assert info["epochs"] == sum(row["epochs"] for row in rows) and all(row["epochs"] >= 1 for row in rows)
    np.testing.assert_allclose(mean[~hidden], Y[~hidden], rtol=1e-6)  # observed entries kept
    assert np.all(variance[hidden] > 0) and np.all(np.isfinite(mean))
    assert ri.Config(grid="library").candidates()[0] == dict(num_latent_gps=4, width=64, learning_rate=3e-3)


def test_each_variant_changes_exactly_its_library_default():
    """``--variant``: warm-up and kernel hold over a fifth of the epoch budget's steps, the GP part
    at 10 x the rate, the natural site head; without a variant plain Adam and the plain ELBO."""
    from gpflow_svgpvae.training import OptimizerGroups

    # 40 sequences in batches of 5: 8 steps per epoch, 300 epochs, a fifth is 480 steps
    def built(variant):
        config = ri.config_from_args(["--variant", variant] if variant else [])
        model = ri.build_model("gpvae", 3, 10, config, seed=0)
        return model, *ri._optimizer_and_objective(model, 40, config)

    model, optimizer, objective = built(None)
    assert not isinstance(optimizer, OptimizerGroups) and objective.warmup_steps == 0
    assert model.encoder.layers[-1].parametrization == "variance"
    _, _, objective = built("kl_warmup")
    assert objective.warmup_steps == 480
    _, optimizer, _ = built("kernel_hold")
    held = optimizer.optimizers[0]._learning_rate  # the kernel's group: a DelayedStart schedule
    assert [float(held(step)) for step in (0, 479, 480)] == pytest.approx([0.0, 0.0, 3e-3])
    _, optimizer, _ = built("gp_lr_10x")
    rates = [float(o.learning_rate.numpy()) for o in optimizer.optimizers]
    assert rates == pytest.approx([3e-2, 3e-3])
    model, _, _ = built("natural_sites")
    assert model.encoder.layers[-1].parametrization == "natural"
    with pytest.raises(SystemExit):
        ri.config_from_args(["--variant", "output_bias"])


def test_compare_variants_ratio_of_seed_means_and_the_seeds_lower():
    rng = np.random.default_rng(3)
    base, variant = [], []
    mse = {}
    for dataset in ("a", "b"):
        for seed in range(3):
            m0, m1 = rng.uniform(0.4, 0.8, 2)
            mse[(dataset, seed)] = (m0, m1)
            common = dict(dataset=dataset, scenario="mcar", seed=seed, method="gpvae")
            base.append(dict(common, mse=m0, coverage90=0.9))
            variant.append(dict(common, mse=m1, coverage90=0.8 + 0.05 * seed))
    base.append(dict(dataset="a", scenario="mcar", seed=0, method="vae", mse=9.0))  # another method: ignored
    variant.append(dict(dataset="a", scenario="mcar", seed=5, method="gpvae", mse=9.0))  # no base seed: ignored
    out = ri.compare_variants(base, {"kl_warmup": variant})
    for dataset in ("a", "b"):
        cell = out["kl_warmup"][dataset]["mcar"]
        b = np.array([mse[(dataset, s)][0] for s in range(3)])
        v = np.array([mse[(dataset, s)][1] for s in range(3)])
        assert cell["seeds"] == [0, 1, 2]
        np.testing.assert_allclose(cell["ratio"], v.mean() / b.mean())
        assert cell["seeds_lower"] == [s for s in range(3) if v[s] < b[s]]
        np.testing.assert_allclose(cell["coverage90_range"], [0.8, 0.9])
    table = ri.variants_markdown(out)
    assert f"{out['kl_warmup']['a']['mcar']['ratio']:.3f}" in table


def test_compare_variants_refuses_a_missing_benchmark(tmp_path):
    with pytest.raises(ValueError, match="run the benchmark there first"):
        ri.write_variant_comparison(str(tmp_path), str(tmp_path / "nowhere"))


def test_cached_only_assembles_from_the_run_files_without_their_figure_arrays(tmp_path, monkeypatch):
    """A fresh clone has the committed run files but not the .npz imputations the figures draw:
    assembling from it keeps every run's scores and leaves the figures alone."""
    import os

    from svgpvae_paper.datasets import wheel_series

    rng = np.random.default_rng(4)

    def split(V):
        X = np.arange(12.0)[None, :, None].repeat(V, 0)
        return wheel_series.SequenceSplit(X, np.sin(X / 3.0) + rng.normal(0, 0.1, (V, 12, 2)), np.ones((V, 12)))

    toy = wheel_series.SequenceDataset("toy", split(6), split(4), ("a", "b"), "frame")
    monkeypatch.setattr(wheel_series, "load", lambda name: toy)
    config = ri.Config(
        datasets=("toy",), scenarios=("mcar",), seeds=(0, 1), methods=("mean", "interp"), out=str(tmp_path)
    )
    first = ri.run(config, progress=False)
    figure = tmp_path / "sequences_toy.png"
    assert figure.exists()
    for npz in (tmp_path / "runs").glob("*.npz"):
        npz.unlink()
    figure.unlink()
    again = ri.run(ri.Config(**{**config.__dict__, "cached_only": True}), progress=False)
    assert again["missing_runs"] == []
    assert again["results"] == first["results"]
    assert again["summary"] == first["summary"]
    assert not os.path.exists(figure)
