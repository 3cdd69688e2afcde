"""`python -m svgpvae_paper.experiments.sprites --quick` on tiny settings."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from svgpvae_paper.experiments import sprites


def test_default_command_is_the_best_committed_run_and_paper_the_papers_protocol():
    """Without options the command runs the settings of the best committed runs (the two-seed
    table; their config.json, the seed and output folder aside), for the SVGP-VAE and the CVAE;
    ``--paper`` gives :class:`Config`'s defaults (the paper's); explicit options win over both."""
    import dataclasses
    import json
    import os

    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results", "sprites")
    for argv, folder in (
        ([], "mix_demod_f32_k002_e40_seed1"),
        (["--model", "cvae"], "cvae_mix_demod_f32_k002_e40_seed1"),
    ):
        committed = json.load(open(os.path.join(root, folder, "config.json")))
        config = dataclasses.asdict(sprites.config_from_args(argv + ["--seed", "1"]))
        for key in set(config) - {"out", "notes"}:
            value = config[key]
            assert (list(value) if isinstance(value, tuple) else value) == committed[key], (folder, key)
    paper = dataclasses.asdict(sprites.config_from_args(["--paper"]))
    assert paper == dataclasses.asdict(sprites.Config())
    explicit = sprites.config_from_args(["--paper", "--filters", "32", "--eval-every", "5"])
    assert (explicit.filters, explicit.eval_every, explicit.kappa_squared) == (32, 5, 0.0075)
    off = sprites.config_from_args(["--decoder-gp-inputs", "none", "--decoder-modulation", "none", "--eval-every", "0"])
    assert (off.decoder_gp_inputs, off.decoder_modulation, off.eval_every, off.style_reduction) == (
        None,
        None,
        None,
        "sum",
    )
    # a fixed context weight replaces the default grid
    fixed = sprites.config_from_args(["--context-scale", "1"])
    assert (fixed.context_scale, fixed.context_scale_grid) == (1.0, None)
    with pytest.raises(SystemExit):
        sprites.config_from_args(["--model", "cvae", "--decoder-gp-inputs", "style"])


def test_quick_defaults_and_paper_defaults():
    quick = sprites.config_from_args(["--quick"])
    assert (quick.num_characters, quick.num_train_characters, quick.epochs, quick.pretrain_epochs) == (24, 18, 3, 2)
    assert quick.num_reconstruction_frames == 300
    assert sprites.config_from_args(["--quick", "--epochs", "5"]).epochs == 5
    paper = sprites.config_from_args(["--paper"])
    assert (paper.num_characters, paper.num_train_characters, paper.epochs) == (1296, 1000, 50)
    assert (paper.num_latent, paper.num_inducing, paper.characters_per_batch, paper.kappa_squared) == (
        64,
        72,
        10,
        0.0075,
    )
    assert paper.pretrain_epochs == 400 and paper.style_reduction == "sum"
    assert paper.num_reconstruction_frames == 1000
    assert sprites.config_from_args(["--num-characters", "130"]).num_train_characters == 100
    assert (paper.model, paper.palette_colours, paper.pose_bias) == ("svgpvae", None, None)  # the paper's networks
    changed = sprites.config_from_args(["--paper", "--model", "cvae", "--palette-colours", "8", "--pose-bias", "0.5"])
    assert (changed.model, changed.palette_colours, changed.pose_bias) == ("cvae", 8, 0.5)
    assert changed.style_reduction == "mean"  # the CVAE's decoder sees the style's size
    assert sprites.config_from_args(["--model", "cvae", "--style-reduction", "sum"]).style_reduction == "sum"
    assert paper.filters == 16 and sprites.config_from_args(["--paper", "--filters", "32"]).filters == 32
    assert paper.style_dim == 16 and sprites.config_from_args(["--paper", "--style-dim", "64"]).style_dim == 64
    for bad in (["--palette-colours", "0"], ["--pose-bias", "-1"], ["--filters", "0"], ["--style-dim", "0"]):
        with pytest.raises(SystemExit):  # argparse's one-line error, no traceback
            sprites.config_from_args(bad)


@pytest.mark.slow  # CLI smoke test (~26 s); `make test-all` (the default suite measured 592-659 s)
def test_quick_cli_smoke_writes_config_metrics_and_grid(tmp_path):
    out = str(tmp_path / "sprites")
    metrics = sprites.main(
        [
            "--paper",
            "--quick",
            "--num-characters",
            "6",
            "--num-train-characters",
            "4",
            "--epochs",
            "2",
            "--pretrain-epochs",
            "1",
            "--characters-per-batch",
            "2",
            "--num-latent-gps",
            "8",
            "--eval-every",
            "1",
            "--num-validation-characters",
            "2",
            "--out",
            out,
            "--quiet",
        ]
    )
    for name in (
        "config.json",
        "metrics.json",
        "sprites_generation.png",
        "generation_examples.npz",
        "model.index",
        "epoch_selection.png",
        "best_epoch_model.index",
    ):
        assert os.path.exists(os.path.join(out, name)), name
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["epochs"] == 2 and config["num_characters"] == 6 and config["num_inducing"] == 72
    assert config["derived"]["num_data"] == 4 * 50 and config["derived"]["batch_size"] == 100
    saved = json.load(open(os.path.join(out, "metrics.json")))
    for key in ("test_mse_mean", "test_mse_sample", "seconds_per_epoch"):
        assert np.isfinite(saved[key]) and saved[key] > 0, key
    assert saved["num_test_characters"] == 2 and len(saved["epoch_seconds"]) == 2
    assert len(saved["history"]["geco_lambda"]) == 2 and saved["pretrain"]["epochs"] == 1
    assert metrics["test_mse_mean"] == saved["test_mse_mean"]
    selection = saved["epoch_selection"]  # scored after both epochs, at the run's s; the best one tested
    assert selection["epochs"] == [1, 2] and selection["scales"] == [2.0] and selection["num_characters"] == 2
    assert selection["best_validation_mse"] == min(selection["validation_mse"])
    assert selection["best_epoch"] == 1 + int(np.argmin(selection["validation_mse"]))
    assert selection["last_epoch"].get("is_best_epoch", False) == (selection["best_epoch"] == 2)
    if selection["best_epoch"] == 2:  # no restore and no second generation: the last epoch's test score is the run's
        np.testing.assert_allclose(selection["last_epoch"]["test_mse_mean"], saved["test_mse_mean"], rtol=1e-6)
    assert saved["grid"] == "sprites_generation.png"  # relative to the run's folder
    assert saved["context_scale"] == 4 * 50 / 100  # N / batch size
    assert np.isfinite(saved["given_context_scale_1"]["test_mse_mean"])
    assert np.isfinite(saved["nearest_context_frame"]["test_mse"])
    # Style accuracy of the generations (2 test characters x 36 target poses) and the diagnostics.
    attributes = ("skin", "hair_colour", "top_colour", "bottom_colour", "hair_shape")
    for variant in ("given_context", "given_train_and_context", "given_context_scale_1", "nearest_context_frame"):
        style = saved["style_accuracy"][variant]
        for name in attributes:
            assert style[name]["num_scored"] + style[name]["num_skipped"] == 2 * 36, (variant, name)
            assert 0.0 <= style[name]["accuracy"] <= 1.0 and style[name]["num_pixels"] > 0
        assert style["skin"]["chance"] == 1 / 6 and style["hair_shape"]["chance"] == 1 / 5
        assert 0.0 <= style["mean_colour_accuracy"] <= 1.0
    reconstruction = saved["diagnostics"]["reconstruction"]
    assert reconstruction["num_frames"] == 4 * 50 and reconstruction["mse"] > 0  # all 200 (< 300 in --quick)
    assert set(attributes) <= set(reconstruction["style_accuracy"])
    # The diagnostics command on the finished run: its own conditioning path reproduces the run's
    # generations at s = 1 and at s = N/b.
    from svgpvae_paper.experiments import sprites_diagnostics

    diagnosed = sprites_diagnostics.main(
        [
            "--run",
            out,
            "--autoencoder-epochs",
            "1",
            "--autoencoder-characters",
            "2",
            "--autoencoder-filters",
            "8",
            "--decoder-study-epochs",
            "1",
            "--sensitivity-characters",
            "2",
            "--quiet",
        ]
    )
    sweep = diagnosed["conditioning_scale"]["scales"]
    np.testing.assert_allclose(sweep["1"]["test_mse"], saved["given_context_scale_1"]["test_mse_mean"], rtol=1e-5)
    np.testing.assert_allclose(sweep["2"]["test_mse"], saved["test_mse_mean"], rtol=1e-5)
    assert os.path.exists(os.path.join(out, "diagnostics", "metrics.json"))
    # The context weight of the finished run chosen on validation characters; at the run's s the
    # test scores are the run's own.
    from svgpvae_paper.experiments import sprites_context_scale

    chosen = sprites_context_scale.main(
        ["--run", out, "--scales", "1", "50", "--num-validation-characters", "2", "--quiet"]
    )
    assert chosen["context_scale_choice"]["chosen"] in (1.0, 50.0)
    assert chosen["test"]["run"]["scale"] == 2.0
    np.testing.assert_allclose(chosen["test"]["run"]["test_mse_mean"], saved["test_mse_mean"], rtol=1e-5)
    assert os.path.exists(os.path.join(out, "context_scale", "metrics.json"))
    assert diagnosed["autoencoder"]["steps"] == 1 * 1  # 2 characters x 50 poses in one batch of 100
    assert diagnosed["autoencoder"]["filters"] == 8
    for name in attributes:
        assert 0.0 <= diagnosed["encoder_probe"][name]["accuracy"] <= 1.0
    assert set(diagnosed["decoder_from_true_codes"]) == {"plain", "scale_shift"}  # no palette unless asked
    blur = diagnosed["metric_sensitivity"]["blur"]
    assert blur["0.5"]["mse"] < blur["1"]["mse"] < blur["1.5"]["mse"]
    probe = saved["diagnostics"]["style_probe"]
    assert probe["num_characters"] == 2 and probe["folds"] == 2
    assert saved["diagnostics"]["inducing_span"]["full"] == 16 * 8
    assert saved["diagnostics"]["inducing_span"]["rank"] <= 72
    fit = saved["diagnostics"]["pose_constant_fit"]
    assert 0.0 <= fit["initial"] <= 1.0 and 0.0 <= fit["learned"] <= 1.0
    assert 0.0 <= diagnosed["pose_constant_fit_learned"] <= 1.0
    tp = diagnosed["training_posterior"]
    assert tp["num_characters"] == 4 and tp["scale"] == 1.0 and tp["mean_predictive_variance"] > 0
    assert (
        tp["decoded_mean"]["style_accuracy"]["skin"]["num_scored"]
        + tp["decoded_mean"]["style_accuracy"]["skin"]["num_skipped"]
        == 200
    )
    for name in attributes:
        assert 0.0 <= probe[name]["accuracy"] <= 1.0 and 0.0 <= probe[name]["majority"] <= 1.0


def test_nearest_context_frames_picks_the_closest_pose_by_cosine():
    rng = np.random.default_rng(0)
    pose_vectors = rng.normal(size=(72, 3))
    context_poses = np.array([[0, 5, 9], [1, 2, 3]])
    target_poses = np.array([[10, 11], [12, 13]])
    frames = rng.uniform(size=(2, 3, 4, 4, 3))
    # numpy reference: scale each vector differently -- cosine similarity ignores the norms
    scaled = pose_vectors * rng.uniform(0.1, 10.0, size=(72, 1))
    got = sprites.nearest_context_frames(frames, context_poses, target_poses, scaled)
    unit = pose_vectors / np.linalg.norm(pose_vectors, axis=1, keepdims=True)
    for v in range(2):
        for t in range(2):
            best = int(np.argmax([unit[target_poses[v, t]] @ unit[c] for c in context_poses[v]]))
            np.testing.assert_array_equal(got[v, t], frames[v, best])
    # a target pose that is a context pose gets that very frame
    same = sprites.nearest_context_frames(frames, context_poses, context_poses, scaled)
    np.testing.assert_array_equal(same, frames)


def test_true_codes_are_one_hot_pose_and_attributes():
    from svgpvae_paper.datasets.sprites import sprites as make
    from svgpvae_paper.experiments.sprites_diagnostics import true_codes

    ds = make(6, seed=0, num_train_characters=4, train_poses_per_character=5, num_context_poses=3)
    codes = true_codes(ds, np.array([0, 3]), np.array([7, 70]))
    attributes = np.asarray(ds.attributes)
    assert codes.shape[1] == 72 + sum(int(attributes[:, j].max()) + 1 for j in range(attributes.shape[1]))
    np.testing.assert_array_equal(codes.sum(axis=1), 1 + attributes.shape[1])  # one 1 per block
    assert codes[0, 7] == 1 and codes[1, 70] == 1


def test_cvae_baseline_generates_from_the_context_code_style_and_pose():
    """The CVAE baseline's frame of an unseen character at a target pose is the decoder at
    [mean encoding of its context frames, sum of their representation features, pose vector];
    chunking the characters does not change it."""
    from svgpvae_paper.datasets.sprites import sprites as make_sprites

    cfg = sprites.Config(
        model="cvae", num_characters=5, num_train_characters=3, pretrain_epochs=0, num_latent=4, num_context_poses=6
    )
    ds = make_sprites(5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)
    context = ds.test_context_frames(dtype=np.float32)  # [2, 6, 64, 64, 3]
    targets = ds.test_target_poses[:, :3]
    out = sprites.generate_cvae(model, context, ds.test_characters, ds.test_context_poses, targets, num_samples=2)
    one_by_one = sprites.generate_cvae(
        model, context, ds.test_characters, ds.test_context_poses, targets, characters_per_chunk=1
    )
    np.testing.assert_allclose(one_by_one["mean"], out["mean"], atol=1e-6)
    assert out["samples"].shape == (2,) + out["mean"].shape
    representation = model.condition.transforms[0].representation
    poses = sprites.pose_table_vectors(model)
    for v in range(2):
        code = model.encoder(context[v])[0].numpy().mean(0)
        style = representation.frame_features(context[v]).numpy().sum(0)
        inputs = np.concatenate([np.tile(code, (3, 1)), np.tile(style, (3, 1)), poses[targets[v]]], 1)
        np.testing.assert_allclose(out["mean"][v], model.decoder(inputs.astype(np.float32)).numpy(), atol=2e-5)
    with pytest.raises(ValueError, match="model must be one of"):
        sprites.build_model(sprites.Config(model="vae", pretrain_epochs=0), frames, ds.train_characters, ds.train_poses)


def test_filters_set_the_width_of_every_conv_layer_of_encoder_and_decoder():
    from svgpvae_paper.datasets.sprites import sprites as make_sprites

    ds = make_sprites(5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    for model_name in sprites.MODELS:
        cfg = sprites.Config(
            model=model_name,
            num_characters=5,
            num_train_characters=3,
            pretrain_epochs=0,
            num_latent=4,
            num_inducing=4,
            num_context_poses=6,
            filters=8,
        )
        model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)
        convs = [
            layer
            for net in (model.encoder, model.decoder)
            for layer in net.layers
            if isinstance(layer, (tf_keras.layers.Conv2D, tf_keras.layers.Conv2DTranspose))
        ]
        assert len(convs) == 13  # six per network and the decoder's output layer
        assert [c.filters for c in convs[:-1]] == [8] * 12 and convs[-1].filters == 3


def test_bfloat16_networks_give_the_float32_loss_with_the_gp_block_in_float64():
    """``--precision mixed_bfloat16``: encoder, decoder and representation compute in bfloat16 with
    float32 weights (the same initial values, so the same function up to rounding), and the
    training loss, a float64 GP quantity, is the float32 model's to bfloat16 rounding."""
    from svgpvae_paper.datasets.sprites import sprites as make_sprites

    ds = make_sprites(5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    X = np.stack([np.repeat(ds.train_characters, 4), ds.train_poses.ravel()], -1).astype(np.float64)
    Y = frames.reshape((-1, 64, 64, 3)).astype(np.float32) / 255
    losses = {}
    for precision in ("float32", "mixed_bfloat16"):
        cfg = sprites.Config(
            num_characters=5,
            num_train_characters=3,
            pretrain_epochs=0,
            num_latent=4,
            num_inducing=4,
            num_context_poses=6,
            style_dim=8,
            style_reduction="mean",
            decoder_gp_inputs="style_pose",
            decoder_modulation="mix",
            precision=precision,
        )
        model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)
        representation = model.input_transform.transforms[0].representation
        for net in (model.encoder, model.decoder, representation.network):
            assert net.compute_dtype == ("bfloat16" if precision != "float32" else "float32")
            assert {w.dtype for w in net.weights} == {tf.float32}
        loss = model.elbo((X, Y), seed=0)
        assert loss.dtype == tf.float64
        losses[precision] = float(loss)
    assert tf_keras.mixed_precision.global_policy().name == "float32"  # restored after building
    assert losses["mixed_bfloat16"] != losses["float32"]
    np.testing.assert_allclose(losses["mixed_bfloat16"], losses["float32"], rtol=1e-2)
    assert sprites.config_from_args(["--precision", "mixed_bfloat16"]).precision == "mixed_bfloat16"
    assert sprites.config_from_args([]).precision == "float32"
    with pytest.raises(SystemExit):
        sprites.config_from_args(["--precision", "float8"])


def test_pose_constant_fit():
    from svgpvae_paper.experiments.sprites_style import pose_constant_fit

    rng = np.random.default_rng(0)
    shared = rng.standard_normal((30, 4))
    shared[:, 0] = 5.0  # every pose vector has the same first coordinate
    assert pose_constant_fit(shared) > 0.95
    # unit vectors in antipodal pairs: every linear function sums to 0, the best constant fit is 0
    half = rng.standard_normal((15, 4))
    np.testing.assert_allclose(pose_constant_fit(np.concatenate([half, -half])), 0.0, atol=1e-12)
    # exact: two unit vectors e1, e2 fit 1 exactly with w = (1, 1)
    np.testing.assert_allclose(pose_constant_fit(np.eye(2) * [3.0, 0.5]), 1.0, atol=1e-12)


def test_average_colours_keep_the_shapes_and_lose_the_colours():
    from svgpvae_paper.datasets.sprites import sprites as make_sprites
    from svgpvae_paper.experiments.sprites_diagnostics import metric_sensitivity

    ds = make_sprites(40, seed=1, num_train_characters=20, train_poses_per_character=10, num_context_poses=36)
    r = metric_sensitivity(ds, num_characters=20, num_poses=6)["average_colours"]
    assert r["style_accuracy"]["hair_shape"]["accuracy"] == 1.0  # the label maps are the true ones
    assert r["mse"] > 1e-3
    assert r["style_accuracy"]["mean_colour_accuracy"] < 0.5  # generic colours: near chance (1/6)


def test_inducing_span_counts_the_bilinear_functions():
    from svgpvae_paper.datasets.sprites import init_sprites_inducing
    from svgpvae_paper.experiments.sprites_style import inducing_span

    rng = np.random.default_rng(0)
    poses, styles = rng.standard_normal((72, 8)), rng.standard_normal((300, 16))
    assert inducing_span(init_sprites_inducing(poses, styles, 72), 16) == {"rank": 72, "full": 128, "num_inducing": 72}
    assert inducing_span(init_sprites_inducing(poses, styles, 144), 16)["rank"] == 128
    # a product grid of 2 styles x 3 poses spans exactly 2 x 3 bilinear functions
    grid = np.array([np.concatenate([s, p]) for s in np.eye(4)[:2] for p in np.eye(3)])
    assert inducing_span(grid, 4) == {"rank": 6, "full": 12, "num_inducing": 6}


def test_decoder_gp_inputs_option_and_its_refusals():
    assert sprites.config_from_args(["--paper"]).decoder_gp_inputs is None  # the paper's decoder reads the code alone
    reading = sprites.config_from_args(["--decoder-gp-inputs", "style_pose"])
    assert reading.decoder_gp_inputs == "style_pose"
    assert reading.style_reduction == "mean"  # the decoder sees the style's size: 50 training, 36 context frames
    assert sprites.config_from_args(["--decoder-gp-inputs", "pose"]).style_reduction == "sum"
    assert sprites.decoder_gp_columns("style", 3, 2) == [0, 1, 2]
    assert sprites.decoder_gp_columns("pose", 3, 2) == [3, 4]
    assert sprites.decoder_gp_columns(None, 3, 2) is None
    with pytest.raises(ValueError, match="decoder_gp_inputs must be"):
        sprites.decoder_gp_columns("colour", 3, 2)
    for bad in (["--decoder-gp-inputs", "colour"], ["--model", "cvae", "--decoder-gp-inputs", "style"]):
        with pytest.raises(SystemExit):
            sprites.config_from_args(bad)


def conditions_of(model, ds, frames, num_characters):
    """[style (mean features of the character's training frames), pose vector] of the training
    frames of the first characters, assembled from the representation and the pose table."""
    representation = model.input_transform.transforms[0].representation
    poses = sprites.pose_table_vectors(model)
    rows = []
    for c in range(num_characters):
        style = representation.frame_features(frames[c].astype(np.float32) / 255).numpy().mean(0)
        rows += [np.r_[style, poses[p]] for p in ds.train_poses[c]]
    return np.array(rows)


def test_svgpvae_decoder_reading_style_and_pose_generates_and_reconstructs_from_them():
    """With --decoder-gp-inputs style_pose the frame of an unseen character at a target pose is the
    decoder at [GP predictive mean, mean representation features of its context frames, pose vector],
    and a training frame is reconstructed at [encoder mean, mean features of its character's training
    frames, its pose vector]: both assembled here from the pieces."""
    from svgpvae_paper.datasets.sprites import sprites as make_sprites
    from svgpvae_paper.experiments.sprites_style import _training_decoder_conditions

    cfg = sprites.Config(
        num_characters=5,
        num_train_characters=3,
        pretrain_epochs=0,
        num_latent=4,
        num_context_poses=6,
        num_inducing=8,
        style_reduction="mean",
        decoder_gp_inputs="style_pose",
    )
    ds = make_sprites(5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)
    d, Q = cfg.style_dim, cfg.pose_dim
    assert model.decoder_gp_columns == tuple(range(d + Q))
    context = ds.test_context_frames(dtype=np.float32)  # [2, 6, 64, 64, 3]
    targets = ds.test_target_poses[:, :3]
    out = sprites.generate(model, model, context, ds.test_characters, ds.test_context_poses, targets, num_samples=2)
    assert out["samples"].shape == (2,) + out["mean"].shape
    representation = model.input_transform.transforms[0].representation
    poses = sprites.pose_table_vectors(model)
    for v in range(2):
        style = representation.frame_features(context[v]).numpy().mean(0)
        inputs = np.concatenate([out["z_mean"][v], np.tile(style, (3, 1)), poses[targets[v]]], 1)
        np.testing.assert_allclose(out["mean"][v], model.decoder(inputs.astype(np.float32)).numpy(), atol=2e-5)
        np.testing.assert_allclose(out["condition"][v], inputs[:, 4:], rtol=1e-5, atol=1e-6)
    ci, pi = np.array([2, 0, 2]), np.array([1, 3, 0])
    conditions = _training_decoder_conditions(model, ds, frames, ci, pi)
    for row, (c, p) in enumerate(zip(ci, pi)):
        style = representation.frame_features(frames[c].astype(np.float32) / 255).numpy().mean(0)
        np.testing.assert_allclose(conditions[row], np.r_[style, poses[ds.train_poses[c, p]]], rtol=1e-5, atol=1e-6)
    # The load-run diagnostics decode with the same conditions: the true targets' encoder means at
    # the target poses' GP inputs, and a training batch's GP posterior mean at its own.
    from svgpvae_paper.experiments import sprites_diagnostics

    sweep = sprites_diagnostics.conditioning_scale_sweep(model, ds, [1.0, 5.0])
    target = ds.test_target_frames()
    codes = model.encode_all(target.reshape((-1, 64, 64, 3)))[0].numpy()
    full = sprites.generate(model, model, context, ds.test_characters, ds.test_context_poses, ds.test_target_poses)
    decoded = model.decoder(np.concatenate([codes, full["condition"].reshape(len(codes), -1)], 1).astype(np.float32))
    np.testing.assert_allclose(
        sweep["autoencoded_targets"]["test_mse"],
        np.mean((decoded.numpy().reshape(target.shape) - target) ** 2),
        rtol=1e-4,
    )
    plain, _ = sprites.build_model(
        dataclasses.replace(cfg, decoder_gp_inputs=None), frames, ds.train_characters, ds.train_poses
    )
    assert "condition" not in sprites.generate(
        plain, plain, context[:1], ds.test_characters[:1], ds.test_context_poses[:1], targets[:1]
    )
    posterior = sprites_diagnostics.training_posterior(model, ds, frames, num_characters=2)
    X = np.stack([np.repeat(ds.train_characters[:2], 4), ds.train_poses[:2].ravel()], -1).astype(np.float64)
    Y = frames[:2].reshape((-1, 64, 64, 3)).astype(np.float32) / 255
    mean = model.predict_f(X, (X, Y), scale=1.5)[0].numpy()
    own = np.concatenate([mean, conditions_of(model, ds, frames, 2)], 1).astype(np.float32)
    np.testing.assert_allclose(
        posterior["decoded_mean"]["mse"], np.mean((model.decoder(own).numpy() - Y) ** 2), rtol=1e-4
    )
    # The activation scales are read at the same decoder inputs: the last layer's is the decoded frames'.
    act = sprites_diagnostics.decoder_activation_scales(model, ds, frames, num_characters=2)
    frames_out = model.decoder(own).numpy()
    assert act["num_frames"] == 8 and act["layers"][-1]["layer"] == model.decoder.layers[-1].name
    np.testing.assert_allclose(act["layers"][-1]["mean_abs"], np.abs(frames_out).mean(), rtol=1e-4)
    np.testing.assert_allclose(
        act["layers"][0]["max_abs"], np.abs(model.decoder.layers[1](own).numpy()).max(), rtol=1e-4
    )
    assert act["saturated"] == np.mean((frames_out == 0) | (frames_out == 1))


def test_gp_code_ablation_decodes_the_condition_with_the_gp_code_zero_and_another_characters_code():
    """gp_code_ablation: the generation's frames, the decoder at [0, style, pose] and at [the next
    character's GP code, own style, own pose], each scored against the true targets; refused for a
    decoder that reads the code alone."""
    from svgpvae_paper.datasets.sprites import sprites as make_sprites
    from svgpvae_paper.experiments import sprites_diagnostics

    cfg = sprites.Config(
        num_characters=6,
        num_train_characters=3,
        pretrain_epochs=0,
        num_latent=4,
        num_context_poses=6,
        num_inducing=8,
        decoder_gp_inputs="style_pose",
    )
    ds = make_sprites(6, seed=1, num_train_characters=3, train_poses_per_character=4, num_context_poses=6)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)
    ab = sprites_diagnostics.gp_code_ablation(model, ds, scale=7.0, characters_per_chunk=2)
    assert ab["num_characters"] == 3 and ab["scale"] == 7.0
    context, target = ds.test_context_frames(dtype=np.float32), ds.test_target_frames(dtype=np.float32)
    out = sprites.generate(
        model, model, context, ds.test_characters, ds.test_context_poses, ds.test_target_poses, scale=7.0
    )
    cond = out["condition"]
    L = out["z_mean"].shape[-1]

    def decoded_mse(codes):
        inputs = np.concatenate([codes, cond], -1).reshape(-1, L + cond.shape[-1]).astype(np.float32)
        return np.mean((model.decoder(inputs).numpy().reshape(target.shape) - target) ** 2)

    np.testing.assert_allclose(ab["gp_code"]["test_mse"], np.mean((out["mean"] - target) ** 2), rtol=1e-5)
    np.testing.assert_allclose(ab["gp_code"]["test_mse"], decoded_mse(out["z_mean"]), rtol=1e-4)
    np.testing.assert_allclose(ab["prior_mean_code"]["test_mse"], decoded_mse(np.zeros_like(out["z_mean"])), rtol=1e-4)
    other = out["z_mean"][[1, 2, 0]]
    np.testing.assert_allclose(ab["other_character_code"]["test_mse"], decoded_mse(other), rtol=1e-4)
    assert ab["other_character_code"]["test_mse"] != ab["gp_code"]["test_mse"]
    assert set(ab["gp_code"]["style_accuracy"]) >= {"skin", "hair_colour", "top_colour", "bottom_colour"}
    plain, _ = sprites.build_model(
        dataclasses.replace(cfg, decoder_gp_inputs=None), frames, ds.train_characters, ds.train_poses
    )
    with pytest.raises(ValueError, match="decoder_gp_columns"):
        sprites_diagnostics.gp_code_ablation(plain, ds, scale=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        sprites_diagnostics.gp_code_ablation(model, ds, scale=1.0, num_characters=1)


def test_context_scale_is_chosen_on_validation_characters_only():
    """choose_context_scale: per s, the MSE of the decoded generations of the validation characters
    (from their own context frames, rendered here by the dataset), the s with the smallest one, and
    the test characters never read."""
    from svgpvae_paper.datasets.sprites import sprites as make_sprites
    from svgpvae_paper.experiments.sprites_generation import choose_context_scale
    from svgpvae_paper.experiments.sprites_style import style_scores

    cfg = sprites.Config(
        num_characters=5, num_train_characters=3, pretrain_epochs=0, num_latent=4, num_context_poses=6, num_inducing=8
    )
    ds = make_sprites(
        5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6, num_validation_characters=3
    )
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    model, _ = sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)

    def refuse(*args, **kwargs):
        raise AssertionError("the test characters were read")

    for name in ("test_context_frames", "test_target_frames"):
        object.__setattr__(ds, name, refuse)
    scales = [1.0, 30.0, 1000.0]
    choice = choose_context_scale(model, ds, scales, characters_per_chunk=2)
    ids = np.arange(5, 8)
    context = ds.frames_for(ids[:, None], ds.validation_context_poses)
    target = ds.frames_for(ids[:, None], ds.validation_target_poses)
    expected = []
    for s, style in zip(scales, choice["validation_style_accuracy"]):
        mean = sprites.generate(
            model, model, context, ids, ds.validation_context_poses, ds.validation_target_poses, scale=s
        )["mean"]
        expected.append(np.mean((mean.astype(np.float64) - target) ** 2))
        assert style == style_scores(ds, mean, ids[:, None], ds.validation_target_poses)
    np.testing.assert_allclose(choice["validation_mse"], expected, rtol=1e-6)
    assert len(set(np.round(expected, 12))) == 3  # the weight matters, so a wrong s would show
    assert choice["chosen"] == scales[int(np.argmin(expected))]
    assert choice["num_characters"] == 3 and choice["scales"] == scales
    with pytest.raises(ValueError, match="no validation characters"):
        choose_context_scale(model, make_sprites(5, num_train_characters=3), [1.0])
    for bad in ([], [0.0], [-2.0]):
        with pytest.raises(ValueError):
            choose_context_scale(model, ds, bad)


def test_context_scale_grid_option_and_its_refusals():
    cfg = sprites.config_from_args(["--context-scale-grid", "100", "1000"])
    assert cfg.context_scale_grid == [100.0, 1000.0] and cfg.num_validation_characters == 100
    assert cfg.context_scale is None
    assert sprites.config_from_args(["--quick", "--context-scale-grid", "1"]).num_validation_characters == 6
    assert (
        sprites.config_from_args(
            ["--context-scale-grid", "1", "--num-validation-characters", "9"]
        ).num_validation_characters
        == 9
    )
    assert sprites.config_from_args(["--paper"]).context_scale_grid is None
    for bad in (
        ["--model", "cvae", "--context-scale-grid", "1"],
        ["--context-scale", "3", "--context-scale-grid", "1"],
        ["--context-scale-grid", "0"],
        ["--context-scale-grid", "-1", "2"],
        ["--context-scale-grid"],
        ["--context-scale-grid", "1", "--num-validation-characters", "0"],
    ):
        with pytest.raises(SystemExit):
            sprites.config_from_args(bad)


def test_context_scale_command_refuses_bad_input(tmp_path, capsys):
    from svgpvae_paper.experiments import sprites_context_scale

    run = tmp_path / "run"
    run.mkdir()
    cases = [
        (["--run", str(tmp_path / "missing"), "--scales", "1"], "no config.json"),
        (["--run", str(run), "--scales", "0"], "positive numbers"),
        (["--run", str(run), "--scales", "1", "--num-validation-characters", "0"], "positive integer"),
    ]
    (run / "config.json").write_text(json.dumps({"model": "cvae"}))
    cases.append((["--run", str(run), "--scales", "1"], "not an SVGP-VAE run"))
    for argv, message in cases:
        with pytest.raises(SystemExit):
            sprites_context_scale.main(argv)
        assert message in capsys.readouterr().err


def _tiny(model="svgpvae"):
    from svgpvae_paper.datasets.sprites import sprites as make_sprites

    cfg = sprites.Config(
        model=model,
        num_characters=5,
        num_train_characters=3,
        pretrain_epochs=0,
        num_latent=4,
        num_context_poses=6,
        num_inducing=8,
        filters=4,
        style_reduction="mean",
    )
    ds = make_sprites(
        5, seed=0, num_train_characters=3, train_poses_per_character=4, num_context_poses=6, num_validation_characters=2
    )
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    return sprites.build_model(cfg, frames, ds.train_characters, ds.train_poses)[0], ds


def test_validation_generation_of_the_cvae_is_its_generation_of_the_validation_characters():
    from svgpvae_paper.experiments.sprites_generation import validation_generation

    model, ds = _tiny("cvae")
    ids = np.arange(5, 7)
    context = ds.frames_for(ids[:, None], ds.validation_context_poses)
    target = ds.frames_for(ids[:, None], ds.validation_target_poses)
    mean = sprites.generate_cvae(model, context, ids, ds.validation_context_poses, ds.validation_target_poses)["mean"]
    result = validation_generation(model, ds)
    np.testing.assert_allclose(result["validation_mse"], [np.mean((mean.astype(np.float64) - target) ** 2)], rtol=1e-6)
    assert result["chosen"] is None and result["num_characters"] == 2
    with pytest.raises(ValueError, match="no context weight"):
        validation_generation(model, ds, [1.0])
    svgpvae, _ = _tiny()
    with pytest.raises(ValueError, match="needs the context weights"):
        validation_generation(svgpvae, ds)


def test_epoch_selection_scores_every_k_epochs_and_restores_the_best_epochs_parameters(tmp_path, monkeypatch):
    """With scripted validation MSEs, the selection scores epochs K, 2K, ... and the last, keeps the
    smallest, and restore() puts back the parameters the model had at that epoch."""
    from svgpvae_paper.experiments import sprites_generation

    model, ds = _tiny()
    variable = model.decoder.trainable_variables[0]
    script = iter([(0.3, 1.0), (0.1, 30.0), (0.2, 1000.0)])
    seen = {}

    def scripted(m, d, scales):
        assert m is model and d is ds and scales == [1.0, 30.0, 1000.0]
        value, chosen = next(script)
        return {"validation_mse": [value + 0.5, value], "chosen": chosen, "seconds": 0.0}

    monkeypatch.setattr(sprites_generation, "validation_generation", scripted)
    selection = sprites_generation.EpochSelection(
        model, ds, [1.0, 30.0, 1000.0], every=2, epochs=5, path=str(tmp_path / "best")
    )
    for epoch in range(5):  # 0-based; a "training epoch" changes the parameters
        variable.assign(tf.fill(variable.shape, float(epoch)))
        choice = selection(epoch)
        assert (choice is None) == (epoch not in (1, 3, 4))
        if choice is not None:
            seen[epoch + 1] = variable.numpy().copy()
    record = selection.record
    assert record["epochs"] == [2, 4, 5] and record["validation_mse"] == [0.3, 0.1, 0.2]
    assert record["chosen_scale"] == [1.0, 30.0, 1000.0]
    assert record["best_epoch"] == 4 and record["best_validation_mse"] == 0.1
    assert selection.best_choice["chosen"] == 30.0
    selection.restore()
    np.testing.assert_array_equal(variable.numpy(), seen[4])
    with pytest.raises(ValueError, match="positive integer"):
        sprites_generation.EpochSelection(model, ds, [1.0], every=0, epochs=5, path=str(tmp_path / "x"))


def test_eval_every_option_and_its_refusals():
    assert sprites.config_from_args(["--paper"]).eval_every is None
    cfg = sprites.config_from_args(["--eval-every", "2", "--model", "cvae"])
    assert cfg.eval_every == 2 and cfg.num_validation_characters == 100
    for bad in (["--eval-every", "-1"], ["--eval-every", "2", "--num-validation-characters", "0"]):
        with pytest.raises(SystemExit):
            sprites.config_from_args(bad)


def test_decoder_study_records_a_learning_curve_and_the_cli_refuses_bad_input(tmp_path):
    from svgpvae_paper.datasets.sprites import sprites as procedural_sprites
    from svgpvae_paper.experiments import sprites_diagnostics

    with pytest.raises(SystemExit):  # without a run, only the decoder study can run
        sprites_diagnostics.main(["--out", str(tmp_path), "--quiet"])
    for bad in (
        ["--decoder-modulations", "film"],
        ["--decoder-study-score-every", "0"],
        ["--decoder-study-epochs", "0"],
        ["--decoder-study-filters", "0"],
    ):
        with pytest.raises(SystemExit):
            sprites_diagnostics.main(["--decoder-study-only", *bad, "--out", str(tmp_path), "--quiet"])
    ds = procedural_sprites(24, seed=0, num_train_characters=18, train_poses_per_character=50, num_context_poses=36)
    studies = {
        m: sprites_diagnostics.decoder_study(
            ds, modulation=m, epochs=2, num_characters=2, score_every=1, filters=4, progress=False
        )
        for m in (None, "mix")
    }
    for study in studies.values():
        assert [c["epoch"] for c in study["curve"]] == [1, 2]
        assert [c["steps"] for c in study["curve"]] == [1, 2]  # 2 characters x 50 poses: one batch of 100
        assert study["curve"][-1]["mse"] == study["unseen_characters"]["mse"]
        assert [c["train_mse"] for c in study["curve"]] == study["train_mse_history"]
    # Same seed and start (the mixing layers start as the identity), apart after training.
    assert studies[None]["curve"][-1]["mse"] != studies["mix"]["curve"][-1]["mse"]
    # The CLI passes the width through: 1 epoch of a 4-filter decoder, recorded in the metrics.
    metrics = sprites_diagnostics.main(
        [
            "--decoder-study-only",
            "--decoder-study-epochs",
            "1",
            "--decoder-study-filters",
            "4",
            "--decoder-modulations",
            "mix",
            "--autoencoder-characters",
            "2",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert metrics["decoder_from_true_codes"]["mix"]["filters"] == 4


def test_learning_rate_decay_is_cosine_to_zero_over_the_run_and_constant_by_default():
    constant = sprites.config_from_args(["--quick"])
    assert constant.learning_rate_decay is None and sprites.learning_rate(constant, 100) == 1e-3
    cfg = sprites.config_from_args(
        ["--quick", "--epochs", "4", "--learning-rate", "2e-3", "--learning-rate-decay", "cosine"]
    )
    schedule = sprites.learning_rate(cfg, steps_per_epoch=25)  # 100 steps in all
    values = [float(schedule(t)) for t in (0, 25, 50, 75, 100)]
    expected = [2e-3 * (1 + np.cos(np.pi * t / 100)) / 2 for t in (0, 25, 50, 75, 100)]
    np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-12)
    with pytest.raises(SystemExit):
        sprites.config_from_args(["--quick", "--learning-rate-decay", "linear"])
    with pytest.raises(ValueError, match="learning_rate_decay"):
        sprites.learning_rate(dataclasses.replace(cfg, learning_rate_decay="step"), 10)
