"""``svgpvae hmnist --quick`` on tiny settings: files, cache, and the fill baselines' metrics
recomputed independently from the data."""

import json
import os

import numpy as np
import pytest

from svgpvae_paper.datasets.hmnist import hmnist
from svgpvae_paper.experiments import hmnist as experiment

TINY = ["--quick", "--quiet", "--seeds", "3"]


def test_default_command_is_the_best_committed_result_and_paper_the_papers_protocol():
    """Without options the command runs the settings of the best committed table
    (docs/results/hmnist_fixed_inducing_e50/config.json); ``--paper`` the first table's
    (docs/results/hmnist/config.json); explicit options win over both presets."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results")
    keys = ("num_latent", "hidden", "num_inducing", "lengthscale", "epochs", "batch_sequences", "learning_rate")
    keys += ("shared_channels", "kl_warmup_epochs", "site_parametrization", "fixed_inducing", "methods", "seeds")
    for argv, folder in (([], "hmnist_fixed_inducing_e50"), (["--paper"], "hmnist")):
        committed = json.load(open(os.path.join(root, folder, "config.json")))
        config = experiment.config_from_args(argv)
        # options added after a table ran are absent from its config: they had their paper values
        absent = {"shared_channels": 0, "kl_warmup_epochs": 0.0, "site_parametrization": "variance"}
        absent["fixed_inducing"] = False
        for key in keys:
            value = getattr(config, key)
            expected = committed.get(key, absent.get(key))
            assert (list(value) if isinstance(value, tuple) else value) == expected, (argv, key)
        assert config.data_settings() == {k: committed[k] for k in config.data_settings()}
    best = experiment.config_from_args([])
    assert best.run_settings("svgpvae")["fixed_inducing"] is True
    assert experiment.config_from_args(["--no-fixed-inducing"]).fixed_inducing is False
    explicit = experiment.config_from_args(["--paper", "--epochs", "7", "--site-parametrization", "natural"])
    assert (explicit.epochs, explicit.site_parametrization, explicit.lengthscale) == (7, "natural", 2.0)
    # one learned kernel per channel replaces the default's shared prior unless both are asked for
    assert experiment.config_from_args(["--channel-lengthscales", "0.3", "30"]).shared_channels == 0
    # the long preset: the five-seed long table's settings (docs/results/hmnist_long_5seeds/)
    long = experiment.config_from_args(["--long"])
    assert (long.num_frames, long.num_inducing, long.frames_per_sequence, long.epochs) == (100, 34, 50, 10)
    assert (long.shared_channels, long.lengthscale, long.site_parametrization, long.fixed_inducing) == (
        8,
        2.0,
        "natural",
        False,
    )
    long_paper = experiment.config_from_args(["--long", "--paper"])
    assert (long_paper.num_inducing, long_paper.frames_per_sequence, long_paper.epochs) == (20, 20, 10)
    assert (long_paper.shared_channels, long_paper.site_parametrization) == (0, "variance")
    # --quick keeps the best settings' structure at its 4 channels: half of them shared
    quick = experiment.config_from_args(["--quick"])
    assert (quick.num_latent, quick.shared_channels, quick.kl_warmup_epochs, quick.epochs) == (4, 2, 0.5, 1)
    assert experiment.config_from_args(["--quick", "--paper"]).shared_channels == 0


def test_defaults_quick_and_long():
    paper = experiment.config_from_args(["--paper"])
    assert (paper.num_train_per_class, paper.num_test_per_class, paper.sequences_per_digit, paper.num_frames) == (
        400,
        100,
        5,
        10,
    )
    assert paper.seeds == (0, 1, 2, 3, 4) and paper.lengthscale == 2.0 and paper.methods == experiment.METHODS
    long = experiment.config_from_args(["--long", "--paper"])
    assert long.long and long.num_frames == 100 and long.frames_per_sequence == 20
    assert experiment.config_from_args(["--timing"]).timing_frames == (10, 50, 100, 200)
    # Only what a run depends on enters its cache key.
    assert "lengthscale" not in paper.run_settings("vae") and "num_inducing" in paper.run_settings("svgpvae")


def test_quick_cli_fills_match_numpy_and_runs_are_cached(tmp_path, monkeypatch, capsys, assert_run_record):
    out = str(tmp_path / "hmnist")
    args = TINY + ["--methods", "zero", "mean", "--out", out]
    metrics = experiment.main(args)
    for name in ("config.json", "metrics.json", "table.csv", "sequences.png"):
        assert os.path.exists(os.path.join(out, name)), name
    # Every file records its command (the scratch --out is no repository path: dropped).
    command = ["svgpvae", "hmnist", *args[:-1], None]
    settings = json.load(open(os.path.join(out, "metrics.json")))["config"]
    assert_run_record(os.path.join(out, "metrics.json"), command, {**settings, "out": None})
    assert_run_record(os.path.join(out, "config.json"), command)
    for f in os.listdir(os.path.join(out, "runs")):
        run = json.load(open(os.path.join(out, "runs", f)))
        assert_run_record(os.path.join(out, "runs", f), command, json.loads(json.dumps(run["settings"])))
    data = hmnist(**{k: v for k, v in experiment.config_from_args(args).data_settings().items() if k != "long"}, seed=3)
    truth, observed = data.test.Y.astype(float), data.test.mask > 0
    missing = ~observed
    # Zero fill: the squared error of a missing pixel is its value.
    assert metrics["summary"]["zero"]["mse"]["mean"] == pytest.approx(truth[missing].mean(), rel=1e-6)
    # Mean fill: each pixel position's mean over the observed training pixels.
    train_obs = data.train.mask > 0
    sums = np.where(train_obs, data.train.Y, 0).sum(axis=(0, 1))
    counts = train_obs.sum(axis=(0, 1))
    fill = np.where(counts > 0, sums / np.maximum(counts, 1), data.train.Y[train_obs].mean())
    expected = np.mean((np.broadcast_to(fill, truth.shape)[missing] - truth[missing]) ** 2)
    assert metrics["summary"]["mean"]["mse"]["mean"] == pytest.approx(expected, rel=1e-5)
    assert metrics["missing_rate_test"] == pytest.approx(missing.mean())
    # A second call reads the cached runs instead of recomputing.
    run_files = sorted(os.listdir(os.path.join(out, "runs")))
    stamps = [os.path.getmtime(os.path.join(out, "runs", f)) for f in run_files]
    again = experiment.main(args)
    assert again["summary"] == json.loads(json.dumps(metrics["summary"]))
    assert stamps == [os.path.getmtime(os.path.join(out, "runs", f)) for f in run_files]
    # Records without their imputed examples (as committed under docs/results): metrics, no figure.
    for f in run_files:
        path = os.path.join(out, "runs", f)
        record = json.load(open(path))
        assert "examples" in record
        record.pop("examples")
        json.dump(record, open(path, "w"))
    os.remove(os.path.join(out, "sequences.png"))
    monkeypatch.setattr(experiment, "load_data", lambda *a, **k: pytest.fail("cached runs need no data"))
    capsys.readouterr()
    stripped = experiment.main(args)
    assert stripped["summary"] == again["summary"] and not os.path.exists(os.path.join(out, "sequences.png"))
    assert "No figure" in capsys.readouterr().out


@pytest.mark.slow  # long; run with make test-all (keeps the default suite under 10 minutes)
def test_quick_learned_models_smoke(tmp_path):
    """Smoke test: the learned models train one epoch and give finite metrics in range."""
    out = str(tmp_path / "hmnist")
    metrics = experiment.main(TINY + ["--methods", "vae", "gpvae", "svgpvae", "--out", out])
    for method in ("vae", "gpvae", "svgpvae"):
        row = metrics["summary"][method]
        assert 0 < row["mse"]["mean"] < 1 and 0 < row["nll_1"]["mean"] < 5 and 0 <= row["auroc"]["mean"] <= 1
        assert row["nll_4"]["mean"] <= row["nll_1"]["mean"] + 0.05  # averaging samples inside the log


def test_example_sequences_show_different_digits():
    labels = np.repeat(np.arange(10), 5)  # 5 sequences per class, classes in order
    index = experiment.example_sequences(labels, 3)
    assert index == [0, 20, 45] and len(set(labels[index])) == 3
    assert experiment.example_sequences(np.array([4, 4, 2]), 5) == [2, 0]  # no more than the classes


def test_shared_channels_kernel_and_warmup_settings():
    """``--shared-channels K``: K sequence-constant channels, then the Cauchy kernel of
    ``--lengthscale``; ``--kl-warmup-epochs`` enters the learned runs' keys; neither changes
    the keys of the runs cached before they existed."""
    import gpflow

    paper = experiment.config_from_args(["--paper"])
    assert "shared_channels" not in paper.run_settings("gpvae") and "kl_warmup_epochs" not in paper.run_settings("vae")
    config = experiment.config_from_args(
        ["--quick", "--shared-channels", "3", "--lengthscale", "0.5", "--kl-warmup-epochs", "2"]
    )
    assert (
        config.run_settings("svgpvae")["shared_channels"] == 3 and config.run_settings("vae")["kl_warmup_epochs"] == 2
    )
    assert "shared_channels" not in config.run_settings("vae")
    model = experiment.build_model("gpvae", config, seed=0)
    kernels = model.kernel.kernels
    assert [float(k.lengthscales.numpy()) for k in kernels] == [experiment.SHARED_LENGTHSCALE] * 3 + [0.5]
    assert not any(v.trainable for v in gpflow.utilities.parameter_dict(model.kernel).values())
    X = np.arange(10.0)[:, None]
    # within a sequence of 10 frames the shared channels' prior correlation exceeds 0.9999
    K = kernels[0].K(X).numpy()
    assert K.min() / K.max() > 0.9999
    for bad in (
        ["--shared-channels", "5"],
        ["--shared-channels", "2", "--channel-lengthscales", "1", "3"],
        ["--kl-warmup-epochs", "-1"],
    ):
        with pytest.raises(ValueError):
            experiment.config_from_args(["--quick"] + bad)


def test_site_parametrization_reaches_the_gp_models_only():
    """``--site-parametrization natural``: the GP models' encoder head reads natural parameters,
    the VAE's head (its posterior) keeps the variance form; the default keeps the old run keys."""
    from gpflow_svgpvae.networks import GaussianSiteHead

    def head(model):
        return [layer for layer in model.encoder.layers if isinstance(layer, GaussianSiteHead)][0]

    assert "site_parametrization" not in experiment.config_from_args(["--paper"]).run_settings("gpvae")
    config = experiment.config_from_args(["--quick", "--site-parametrization", "natural"])
    assert config.run_settings("svgpvae")["site_parametrization"] == "natural"
    assert "site_parametrization" not in config.run_settings("vae")
    assert head(experiment.build_model("gpvae", config, seed=0)).parametrization == "natural"
    assert head(experiment.build_model("svgpvae", config, seed=0)).parametrization == "natural"
    assert head(experiment.build_model("vae", config, seed=0)).parametrization == "variance"
    with pytest.raises(SystemExit):
        experiment.config_from_args(["--site-parametrization", "precision"])


def test_num_latent_and_hidden_options_set_every_learned_models_widths():
    """``--num-latent L`` and ``--hidden`` reach the encoder's sites and the decoder's input of all three learned
    models and enter their run keys; more shared channels than L are rejected."""
    config = experiment.config_from_args(
        ["--quick", "--num-latent-gps", "6", "--shared-channels", "4", "--hidden", "24", "12"]
    )
    assert all(config.run_settings(m)["num_latent"] == 6 for m in experiment.LEARNED)
    assert all(config.run_settings(m)["hidden"] == [24, 12] for m in experiment.LEARNED)
    models = {method: experiment.build_model(method, config, seed=0) for method in experiment.LEARNED}
    for method, model in models.items():
        assert model.decoder.inputs[0].shape[-1] == 6, method
        dense = [layer.units for layer in model.decoder.layers if hasattr(layer, "units")]
        assert dense[:2] == [24, 12], (method, dense)
    assert len(models["gpvae"].kernel.kernels) == 6
    with pytest.raises(ValueError):
        experiment.config_from_args(["--quick", "--num-latent-gps", "3", "--shared-channels", "4"])


def test_fixed_inducing_keeps_the_inducing_times_on_the_frames():
    """``--fixed-inducing``: the SVGP-VAE's inducing times stay at their evenly spaced start
    through training (trained, Adam moves them), and only the SVGP-VAE's key changes."""
    assert "fixed_inducing" not in experiment.config_from_args(["--paper"]).run_settings("svgpvae")
    config = experiment.config_from_args(["--quick", "--fixed-inducing", "--num-inducing", "4"])
    assert config.run_settings("svgpvae")["fixed_inducing"] is True
    assert "fixed_inducing" not in config.run_settings("gpvae")
    data = experiment.load_data(config, seed=0)
    arrays = experiment.flat_arrays(data.train)
    grid = np.linspace(0.0, config.num_frames - 1.0, 4)
    moved = {}
    for fixed in (True, False):
        cfg = experiment.config_from_args(
            ["--quick", "--num-inducing", "4"] + (["--fixed-inducing"] if fixed else ["--no-fixed-inducing"])
        )
        model = experiment.build_model("svgpvae", cfg, seed=0)
        experiment.train_model(model, "svgpvae", cfg, arrays, seed=0, progress=False)
        inducing = model.inducing_variable
        Z = getattr(inducing, "inducing_variable", inducing).Z.numpy().ravel()
        moved[fixed] = np.abs(Z - grid).max()
    assert moved[True] == 0.0 and moved[False] > 1e-4


def test_timing_rows_time_the_vae_and_the_svgpvae_on_all_frames_when_it_subsamples(monkeypatch):
    """``time_epochs`` times the VAE (the networks' floor), the exact GP-VAE and the SVGP-VAE, the
    latter also on all T frames when it trains on fewer; ratios are against the exact GP-VAE."""
    timed = []
    cost = {"vae": 1.0, "gpvae": 4.0, "svgpvae": 0.5}

    def fake_train_model(model, method, config, arrays, seed, progress):
        timed.append((method, config.num_frames, config.frames_per_sequence, len(arrays[0])))
        per_frame = cost[method] * (config.frames_per_sequence if method == "svgpvae" else config.num_frames)
        return {"history": {}, "epoch_seconds": [99.0, per_frame]}

    monkeypatch.setattr(experiment, "build_model", lambda method, config, seed: None)
    monkeypatch.setattr(experiment, "train_model", fake_train_model)
    config = experiment.Config(**{**experiment.LONG, "frames_per_sequence": 4, "timing_sequences": 10})
    rows = experiment.time_epochs(config, (3, 8))
    assert [t[:3] for t in timed] == [
        ("vae", 3, 3),
        ("gpvae", 3, 3),
        ("svgpvae", 3, 3),
        ("vae", 8, 4),
        ("gpvae", 8, 4),
        ("svgpvae", 8, 4),
        ("svgpvae", 8, 8),
    ]
    assert all(t[3] == 10 for t in timed)  # one sequence per class and digit
    short, long = rows
    assert short["svgpvae_frames_per_sequence"] == 3 and short["svgpvae_all_frames_s_per_epoch"] == 1.5
    assert long["svgpvae_frames_per_sequence"] == 4 and long["svgpvae_s_per_epoch"] == 2.0
    assert long["svgpvae_all_frames_s_per_epoch"] == 4.0 and long["gpvae_s_per_epoch"] == 32.0
    assert (long["ratio"], long["ratio_all_frames"], long["vae_ratio"]) == (2.0 / 32, 4.0 / 32, 8.0 / 32)


def test_uint8_training_arrays_train_exactly_as_float32():
    """The experiment passes its training arrays as uint8 (a quarter of the memory); the model
    casts each batch, so training is the same to the last bit as with float32 arrays."""
    config = experiment.config_from_args(["--quick", "--num-inducing", "3", "--frames-per-sequence", "4"])
    data = experiment.load_data(config, seed=0)
    results = {}
    for dtype in (np.uint8, np.float32):
        arrays = experiment.flat_arrays(data.train, dtype)
        assert arrays[1].dtype == dtype and arrays[2].dtype == dtype
        model = experiment.build_model("svgpvae", config, seed=0)
        timed = experiment.train_model(model, "svgpvae", config, arrays, seed=0, progress=False)
        results[dtype] = (timed["history"], [w.numpy() for w in model.trainable_variables])
    (history_u8, weights_u8), (history_f32, weights_f32) = results[np.uint8], results[np.float32]
    assert history_u8 == history_f32
    assert len(weights_u8) == len(weights_f32) > 0
    for a, b in zip(weights_u8, weights_f32):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["vae", "gpvae", "svgpvae"])
def test_build_model_weights_are_fixed_by_the_seed(method):
    """Same seed, same initial networks (also after other draws in the process); another seed,
    other networks. (With only ``tf.random.set_seed`` Keras' unseeded initialisers differed.)"""
    config = experiment.config_from_args(["--quick"])

    def weights(seed):
        return [w.numpy() for w in experiment.build_model(method, config, seed).trainable_variables]

    first = weights(0)
    weights(1)
    again = weights(0)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    other = weights(1)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other) if a.size > 1)


def test_learning_rate_option_keys_the_learned_runs_only():
    """``--learning-rate`` changes the cache key of the learned models (so runs at another rate are
    not read back as the default's) and leaves the fills' keys and the default key as before."""
    default = experiment.config_from_args([])
    assert default.learning_rate == 1e-3
    faster = experiment.config_from_args(["--learning-rate", "2e-3"])
    assert faster.learning_rate == 2e-3
    for method in ("vae", "gpvae", "svgpvae"):
        assert faster.run_settings(method)["learning_rate"] == 2e-3
        assert experiment.run_path(faster, method, 0) != experiment.run_path(default, method, 0)
    for method in ("zero", "mean", "forward"):
        assert faster.run_settings(method) == default.run_settings(method)
    for bad in (["--learning-rate", "0"], ["--learning-rate=-1e-3"], ["--learning-rate", "nan"]):
        with pytest.raises(ValueError):
            experiment.config_from_args(bad)
