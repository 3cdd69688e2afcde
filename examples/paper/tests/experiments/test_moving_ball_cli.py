"""The moving-ball experiment: run cache, fixed lengthscale, warm start (tiny settings)."""

import dataclasses
import json
import os

import numpy as np
import pytest

from svgpvae_paper.experiments import moving_ball as mb

# The settings before the from-random-networks recipe became the default (issue 13); the cached
# runs quoted in docs/results.md before it were trained with these.
LEGACY = dict(init_lengthscale=1.0, kernel_hold_steps=0, decoder_bias="zeros")


def tiny(**kwargs) -> mb.Config:
    settings = dict(
        steps=4,
        batch_videos=3,
        test_videos=12,
        hidden=(8,),
        record_every=2,
        gp_learning_rate=0.05,
        seeds=(0,),
        **LEGACY,
    )
    settings.update(kwargs)
    return mb.Config(**settings)


@pytest.fixture(scope="module")
def test_set():
    from svgpvae_paper.datasets.moving_ball import moving_ball_test_set

    return moving_ball_test_set(12, seed=12345)


def test_run_keys_of_documented_runs_are_stable():
    # The reduced grid in docs/results.md is cached under these keys; new options at their
    # defaults must not change them, or every cached run would be retrained.
    cfg = mb.Config(steps=1500, hidden=(256, 256), gp_learning_rate=0.01, record_every=50, **LEGACY)
    assert mb.run_key("gpvae", None, 0, cfg) == "gpvae_seed0_067d4fea4c"
    assert mb.run_key("svgpvae", 10, 1, cfg) == "svgpvae_m10_seed1_159f470108"
    warm = dataclasses.replace(cfg, warm_start_m=10, warm_start_steps=500)
    fixed = dataclasses.replace(cfg, train_lengthscale=False)
    for other in (warm, fixed):
        assert mb.run_key("gpvae", None, 0, other) != mb.run_key("gpvae", None, 0, cfg)
        assert mb.run_key("vae", None, 0, other) == mb.run_key("vae", None, 0, cfg)  # no GP: same run


@pytest.mark.parametrize("steps, message", [(0, "warm_start_steps"), (9, "warm_start_steps")])
def test_config_rejects_bad_warm_start(steps, message):
    with pytest.raises(ValueError, match=message):
        tiny(steps=8, warm_start_m=3, warm_start_steps=steps)
    with pytest.raises(ValueError, match="warm_start_m"):
        tiny(warm_start_m=0, warm_start_steps=2)


def test_cached_run_is_reused_with_identical_results(tmp_path, test_set):
    cfg = tiny()
    first = mb.train_run("svgpvae", cfg, 0, m=3, cache_dir=str(tmp_path), test=test_set)
    again = mb.train_run("svgpvae", cfg, 0, m=3, cache_dir=str(tmp_path), test=test_set)
    assert not first["cached"] and again["cached"]
    assert again["rmse"] == first["rmse"]
    np.testing.assert_array_equal(again["means"], first["means"])
    np.testing.assert_array_equal(again["history"]["lengthscale"], first["history"]["lengthscale"])
    assert list(first["history"]["step"]) == [0, 2, 4]


def test_fixed_lengthscale_stays_at_its_initial_value(test_set):
    fixed = mb.train_run("gpvae", tiny(init_lengthscale=2.0, train_lengthscale=False), 0, test=test_set)
    trained = mb.train_run("gpvae", tiny(init_lengthscale=2.0), 0, test=test_set)
    assert fixed["final_lengthscale"] == 2.0
    assert abs(trained["final_lengthscale"] - 2.0) > 1e-3


def test_warm_start_without_further_steps_reproduces_the_warm_phase_run(tmp_path, test_set):
    # With warm_start_steps == steps the target SVGP-VAE (same m) only inherits the warm model:
    # networks, lengthscale and inducing times must all carry over for its predictions to match.
    scratch = mb.train_run("svgpvae", tiny(), 0, m=3, test=test_set)
    warm = mb.train_run(
        "svgpvae", tiny(warm_start_m=3, warm_start_steps=4), 0, m=3, cache_dir=str(tmp_path), test=test_set
    )
    assert warm["key"] != scratch["key"]
    assert warm["rmse"] == scratch["rmse"]
    np.testing.assert_array_equal(warm["means"], scratch["means"])
    np.testing.assert_array_equal(warm["history"]["lengthscale"], scratch["history"]["lengthscale"])
    assert warm["warm_start"]["m"] == 3 and warm["warm_start"]["steps"] == 4
    assert os.path.exists(os.path.join(str(tmp_path), "weights", scratch["key"] + ".json"))


def test_warm_started_gpvae_continues_from_the_cached_warm_phase(tmp_path, test_set):
    import gpflow

    from gpflow_svgpvae.models.gpvae import GPVAE

    cfg = tiny(steps=6, warm_start_m=3, warm_start_steps=4)
    # Independent assembly: train the warm SVGP-VAE by hand, move its networks into a GPVAE.
    warm_cfg = cfg.warm_phase()
    warm = mb.build_model("svgpvae", warm_cfg, 0, num_inducing=3)
    mb._fit(warm, warm_cfg, 0, 0, 4, mb._Progress(), "warm", 0)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=warm.kernel.lengthscales.numpy())
    by_hand = GPVAE(warm.encoder, warm.decoder, kernel, "bernoulli", sequence_length=mb.NUM_FRAMES, num_latent_gps=2)
    expected = mb.evaluate(by_hand, test_set)

    at_switch = mb.train_run(
        "gpvae", tiny(steps=4, warm_start_m=3, warm_start_steps=4), 0, cache_dir=str(tmp_path), test=test_set
    )
    np.testing.assert_allclose(at_switch["means"], expected["means"], rtol=1e-6, atol=1e-8)

    # A second model of the same seed reuses the cached warm phase (same history up to the
    # switch) and then trains on.
    longer = mb.train_run("gpvae", cfg, 0, cache_dir=str(tmp_path), test=test_set)
    assert list(longer["history"]["step"]) == [0, 2, 4, 6]
    np.testing.assert_array_equal(longer["history"]["lengthscale"][:3], at_switch["history"]["lengthscale"])
    assert longer["history"]["lengthscale"][3] != longer["history"]["lengthscale"][2]
    assert not np.allclose(longer["means"], at_switch["means"])


@pytest.mark.slow  # CLI smoke test; `make test-all`
def test_smoke_cli_rmse_vs_m_with_warm_start(tmp_path):
    out, cache = str(tmp_path / "out"), str(tmp_path / "cache")
    payload = mb.main(
        [
            "rmse_vs_m",
            "--steps",
            "4",
            "--hidden",
            "8",
            "--test-videos",
            "12",
            "--num-inducing",
            "3",
            "--seeds",
            "0",
            "--record-every",
            "2",
            "--warm-start-num-inducing",
            "3",
            "--warm-start-steps",
            "2",
            "--out",
            out,
            "--cache",
            cache,
        ]
    )
    assert payload["config"]["warm_start_m"] == 3
    with open(os.path.join(out, "rmse_vs_m.json")) as f:
        written = json.load(f)
    assert set(written["rmse"]) == {"vae", "gpvae", "svgpvae_m3"}
    assert os.path.exists(os.path.join(out, "rmse_vs_m.png"))

    # `runs` with the same settings finds the same cached runs.
    again = mb.main(
        [
            "runs",
            "--models",
            "vae",
            "gpvae",
            "svgpvae:3",
            "--steps",
            "4",
            "--hidden",
            "8",
            "--test-videos",
            "12",
            "--seeds",
            "0",
            "--record-every",
            "2",
            "--warm-start-num-inducing",
            "3",
            "--warm-start-steps",
            "2",
            "--out",
            out,
            "--cache",
            cache,
        ]
    )
    for name in ("vae", "gpvae"):
        assert again["rmse"][name]["values"] == written["rmse"][name]["values"]
    assert again["rmse"]["svgpvae:3"]["values"] == written["rmse"]["svgpvae_m3"]["values"]
    assert os.path.exists(os.path.join(out, "runs.png"))


@pytest.mark.parametrize("spec", ["svgpvae", "gpvae:3", "cvae"])
def test_runs_rejects_malformed_model_names(spec, tmp_path):
    with pytest.raises(SystemExit, match="--models"):
        mb.main(["runs", "--models", spec, "--out", str(tmp_path)])


@pytest.mark.slow  # long; run with make test-all (keeps the default suite under 10 minutes)
def test_warm_started_svgpvae_with_other_m_records_both_inducing_sets(tmp_path, test_set):
    cfg = tiny(steps=6, warm_start_m=3, warm_start_steps=4)
    run = mb.train_run("svgpvae", cfg, 0, m=2, cache_dir=str(tmp_path), test=test_set)
    Z = run["history"]["inducing"]  # [records, 3]: the warm model's 3 times, then the target's 2 (+ NaN)
    assert Z.shape == (4, 3)
    assert not np.isnan(Z[:3]).any()
    assert np.isnan(Z[3, 2]) and not np.isnan(Z[3, :2]).any()
    np.testing.assert_allclose(Z[3, :2], run["final_inducing"])
    # The exact GP-VAE has no inducing inputs; its record keeps none of the warm model's.
    gp = mb.train_run("gpvae", cfg, 0, cache_dir=str(tmp_path), test=test_set)
    assert "inducing" not in gp["history"]
    again = mb.train_run("svgpvae", dataclasses.replace(cfg, steps=8), 0, m=2, cache_dir=str(tmp_path), test=test_set)
    assert again["history"]["inducing"].shape == (5, 3)


def test_kernel_hold_and_decoder_bias_options(test_set):
    base = mb.Config(steps=1500, hidden=(256, 256), gp_learning_rate=0.01, record_every=50, **LEGACY)
    held = dataclasses.replace(base, kernel_hold_steps=1000)
    biased = dataclasses.replace(base, decoder_bias="data")
    assert mb.run_key("gpvae", None, 0, held) != mb.run_key("gpvae", None, 0, base)
    assert mb.run_key("vae", None, 0, held) == mb.run_key("vae", None, 0, base)  # no kernel to hold
    assert mb.run_key("vae", None, 0, biased) != mb.run_key("vae", None, 0, base)  # every decoder
    # The lengthscale stays at its initial value through the hold (2 of 4 steps), then trains.
    run = mb.train_run("gpvae", tiny(init_lengthscale=2.0, kernel_hold_steps=2, decoder_bias="data"), 0, test=test_set)
    lengthscales = list(run["history"]["lengthscale"])  # steps 0, 2, 4
    assert lengthscales[0] == lengthscales[1] == 2.0 and lengthscales[2] != 2.0


def test_defaults_are_the_paper_networks_with_the_from_random_networks_recipe(test_set):
    cfg = mb.Config()
    assert tuple(cfg.hidden) == (500, 500) and cfg.network_init == "glorot"
    assert (cfg.init_lengthscale, cfg.kernel_hold_steps, cfg.decoder_bias) == (6.0, 1000, "data")
    # Each option enters the run key, so runs cached under the old defaults are not reused.
    legacy = dataclasses.replace(cfg, **LEGACY)
    for name, value in LEGACY.items():
        changed = dataclasses.replace(cfg, **{name: value})
        assert mb.run_key("gpvae", None, 0, changed) != mb.run_key("gpvae", None, 0, cfg), name
    assert mb.run_key("gpvae", None, 0, legacy) != mb.run_key("gpvae", None, 0, cfg)
    paper_init = dataclasses.replace(cfg, network_init="truncated_normal")
    assert mb.run_key("vae", None, 0, paper_init) != mb.run_key("vae", None, 0, cfg)
    # With the defaults the lengthscale is held at 6 through a short run.
    run = mb.train_run("gpvae", tiny(**{k: getattr(cfg, k) for k in LEGACY}), 0, test=test_set)
    assert set(run["history"]["lengthscale"]) == {6.0}


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("network_init", "he", "network_init"),
        ("decoder_bias", "mean", "decoder_bias"),
        ("kernel_hold_steps", -1, "kernel_hold_steps"),
        ("site_parametrization", "log", "site_parametrization"),
    ],
)
def test_config_rejects_bad_recipe_options(option, value, message):
    with pytest.raises(ValueError, match=message):
        tiny(**{option: value})


def test_cli_reports_a_bad_setting_without_a_traceback(tmp_path):
    with pytest.raises(SystemExit, match="kernel_hold_steps must be >= 0"):
        mb.main(["runs", "--kernel-hold-steps", "-3", "--out", str(tmp_path)])


def test_site_parametrization_enters_the_gp_run_keys_only():
    natural = tiny(site_parametrization="natural")
    assert natural.run_settings("gpvae")["site_parametrization"] == "natural"
    assert "site_parametrization" not in natural.run_settings("vae")
    assert "site_parametrization" not in tiny().run_settings("svgpvae")
    encoder = mb.build_model("svgpvae", natural, seed=0, num_inducing=3).encoder
    assert encoder.layers[-1].parametrization == "natural"


def test_runs_claimed_by_another_process_are_left_to_it(tmp_path, monkeypatch):
    """Two processes on one moving-ball sweep: a run another live process has claimed (its cache key
    plus ``.claim``) is not trained here but taken, once finished, from the cache."""
    import socket
    import subprocess
    import sys
    import time

    from svgpvae_paper.experiments import moving_ball_figures as figures
    from svgpvae_paper.experiments.moving_ball_runs import run_key

    cfg = mb.Config(steps=2, seeds=(0, 1))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    claim = os.path.join(str(tmp_path), run_key("gpvae", None, 0, cfg)) + ".claim"
    with open(claim, "w") as f:
        f.write(f"{socket.gethostname()} {other.pid}")
    trained, finished = [], set()

    def fake_train_run(kind, cfg, seed, m=None, inducing_init=None, cache_dir=None, test=None, **kwargs):
        if (kind, seed) not in finished:
            trained.append((kind, seed))
        return {"kind": kind, "seed": seed, "m": m, "cached": (kind, seed) in finished}

    def other_finishes(seconds):
        finished.add(("gpvae", 0))
        os.remove(claim)

    monkeypatch.setattr(figures, "train_run", fake_train_run)
    monkeypatch.setattr(time, "sleep", other_finishes)
    try:
        runs = figures._train_runs([("gpvae", 0, None), ("gpvae", 1, None)], cfg, str(tmp_path), None, "runs")
    finally:
        other.kill()
    assert trained == [("gpvae", 1)]
    assert [(r["seed"], r["cached"]) for r in runs] == [(0, True), (1, False)]


def test_default_command_is_the_recipe_of_the_committed_grid_and_paper_the_papers_protocol():
    """The command's defaults train as the committed recipe grid did
    (docs/results/moving_ball_recipe_grid/, whose command set only the steps, the widths and the
    GP part's rate; the rate is now the default); ``--paper`` is the paper's protocol; explicit
    options win over both."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results")
    committed = json.load(open(os.path.join(root, "moving_ball_recipe_grid", "rmse_vs_m.json")))["config"]
    cfg = mb.config_from_args(
        mb.parse_args(["runs", "--steps", "3000", "--hidden", "256", "256", "--record-every", "50"])
    )
    for field in dataclasses.fields(mb.Config):
        if field.name in committed and field.name not in ("seeds", "m_values", "models"):
            value = getattr(cfg, field.name)
            assert (list(value) if isinstance(value, tuple) else value) == committed[field.name], field.name
    assert (cfg.site_parametrization, cfg.network_init) == ("variance", "glorot")
    assert mb.config_from_args(mb.parse_args(["runs"])) == mb.Config()
    paper = mb.config_from_args(mb.parse_args(["runs", "--paper"]))
    assert (paper.steps, tuple(paper.hidden), paper.network_init, paper.learning_rate) == (
        25_000,
        (500,),
        "truncated_normal",
        1e-3,
    )
    assert (paper.gp_learning_rate, paper.init_lengthscale, paper.kernel_hold_steps, paper.decoder_bias) == (
        None,
        1.0,
        0,
        "zeros",
    )
    explicit = mb.config_from_args(mb.parse_args(["runs", "--paper", "--kernel-hold-steps", "500", "--hidden", "64"]))
    assert (explicit.kernel_hold_steps, tuple(explicit.hidden), explicit.decoder_bias) == (500, (64,), "zeros")
    quick_paper = mb.config_from_args(mb.parse_args(["runs", "--paper", "--quick"]))
    assert (quick_paper.steps, tuple(quick_paper.hidden), quick_paper.kernel_hold_steps) == (400, (128, 128), 0)
