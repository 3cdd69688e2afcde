r"""SPRITES conditional generation (Jazbec et al. 2021, section 5.3) on procedural sprites.

Usage::

    python -m gpflow_svgpvae.experiments.sprites [--quick] [--epochs 50]
        [--num-characters 1296] [--pretrain-epochs 400] [--out results/sprites]

Data: :func:`gpflow_svgpvae.datasets.sprites` -- *procedural* SPRITES-like
characters (the real LPC sprites cannot be downloaded here), 1296 characters x
72 poses, 64 x 64 RGB. Protocol of the paper: 1000 training characters x 50
random poses (N = 50,000 frames); 296 unseen test characters, each with 36
context poses and 36 target poses.

Model (paper settings, the defaults): :class:`~gpflow_svgpvae.SVGPVAE` with the input transform
:func:`~gpflow_svgpvae.transforms.representation_and_table`
with GP inputs ``[style (16), pose vector (8)]``; the style is the sum of the
representation network's outputs over the character's frames in the batch
(3 conv layers of 16 filters 2x2, one pooling layer, 16-dim output), optionally
pretrained as a character classifier (``--pretrain-epochs``, paper 400) and
then trained jointly; the pose vectors are a GP-LVM table (72 x 8) initialised
by PCA of the mean frame per pose over the training frames; kernel
:func:`~gpflow_svgpvae.kernels.sprites_kernel`; m = 72 inducing points (one
per pose, styles drawn from the Gaussian fitted to the initial training
styles); L = 64; encoder and decoder of six conv layers of 16 filters each;
Gaussian decoder; GECO with kappa^2 = 0.0075; Adam 1e-3; batches of 10
characters x 50 frames = 500; 50 epochs.

Baseline (``--model cvae``): :class:`~gpflow_svgpvae.models.CVAE` with the same
encoder, the same decoder on ``[code, style, pose vector]``, the same
representation network, pose table, GECO and batches; the condition is the same
input transform (style mean-reduced by default). An unseen character is
generated from the mean encoding of its context frames and their style.

Options that are not in the paper (default off): ``--decoder-modulation``
(FiLM by the code), ``--palette-colours K`` (frames as a mixture of K colours
computed from the code), ``--pose-bias`` (a constant in the pose kernel, so
pose-invariant functions are representable), ``--decoder-gp-inputs`` (the
decoder reads ``[code, style]``, ``[code, pose vector]`` or ``[code, style, pose
vector]``: :class:`~gpflow_svgpvae.SVGPVAE` with ``decoder_gp_columns``; the
style is then the *mean* of the representation over the character's frames, so
that the decoder sees the same scale with 50 training and 36 context frames;
the cosine kernel does not see the difference).

Evaluation. After training (by default no model selection: the test set is scored
once, with the final parameters; with ``--eval-every K`` the parameters of the epoch
whose validation characters were generated best, see below), every test character is generated on its own:
style from its 36 context frames, GP posterior conditioned on those encoded
frames, each weighted :math:`s` (``test_mse_*``), decoder mean at the predictive
mean for the 36 target poses. The weight is :math:`s = N/b` (the training
minibatches'), or ``--context-scale``, or the one of ``--context-scale-grid``
with the smallest generation MSE on held-out *validation* characters (styles
that are neither training nor test characters, split into context and target
poses the same way; ``context_scale_choice`` in the metrics), so the test
characters still select nothing. With ``--eval-every K`` the validation
characters are generated every K epochs and after the last (at each weight of the grid,
or at the run's s), the model of the epoch with the smallest validation MSE is kept
(``best_epoch_model.*``) and tested, with its s; ``epoch_selection`` in the metrics holds
the validation curve and the last epoch's test scores, ``epoch_selection.png`` plots it. Reported: MSE per pixel over all test target
frames for the decoded mean and for one decoded sample of the latent posterior,
and the *style accuracy* of the decoded means (``style_accuracy``; see
:mod:`~gpflow_svgpvae.experiments.sprites_style`): per frame and colour
attribute (skin, hair, top, bottom), is the mean generated colour over the
pixels the true label map assigns to the attribute nearest to the true one of
the six options (chance 1/6); and the hair shape (nearest of the five
re-drawn candidates, chance 1/5). ``diagnostics``: the style accuracy of
decoded encoder means of training frames (``reconstruction``) and a
cross-validated linear probe from the unseen characters' style vectors to
their attribute classes (``style_probe``). A variant
(``train_and_context``) conditions each test character's posterior on the
whole training set *and* its context frames (statistics summed, s = 1): the
posterior that the training-time minibatch estimate (s = N/b) approximates.

Time. ``seconds_per_epoch`` is the median wall time of a training epoch,
excluding the first (tracing) when there is more than one epoch; pretraining,
rendering and evaluation are timed separately.

Outputs in ``--out``: ``config.json``, ``metrics.json``, ``sprites_generation.png``
(per shown test character: ground-truth target poses, then the generation), the
plotted arrays (``generation_examples.npz``) and the trained model
(``model.index`` / ``model.data-*``, a ``tf.train.Checkpoint(model=...)``).
"""
import argparse
import os
import sys
import time
from dataclasses import asdict
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from ..auxiliary import ObjectVectors
from ..datasets.sprites import (
    character_batches,
    init_sprites_inducing,
    mean_frames_per_pose,
    pca_pose_vectors,
    sprites,
)
from ..kernels import sprites_kernel
from ..models.cvae import CVAE
from ..models.svgpvae import SVGPVAE
from ..transforms import representation_and_table
from ..networks.representation import StyleRepresentation, pretrain_representation, representation_network
from ..networks.sprites import sprites_decoder, sprites_encoder
from ..training import GECO, train
from .common import SITE_PARAMETRIZATIONS, git_commit, is_positive_number, write_json
from .sprites_generation import (  # re-exported: generation is part of the experiment's API
    _mse,
    choose_context_scale,
    generate,
    generate_cvae,
    nearest_context_frames,
    plot_generation,
    pose_table_vectors,
    EpochSelection,
    plot_epoch_selection,
    svgpvae_variants,
)
from .sprites_style import (
    STYLE_RULE,
    format_style,
    inducing_span,
    pose_constant_fit,
    style_probe,
    style_scores,
)

from .sprites_settings import (  # re-exported: the settings are part of the experiment's API
    DECODER_GP_INPUTS,
    MODELS,
    PAPER,
    Config,
    decoder_gp_columns,
    run_context_scale,
)

__all__ = ["Config", "PAPER", "MODELS", "build_model", "generate", "generate_cvae", "run", "main"]


# ----------------------------------------------------------------------------- model
def build_model(cfg: Config, train_frames: np.ndarray, train_characters, train_poses, progress: bool = False):
    """Pose table (PCA), representation (pretrained), inducing inputs and the model.

    :param train_frames: ``[C, P, 64, 64, 3]`` uint8 training frames.
    :return: ``(model, info)``; ``info`` holds pretraining logs and timings.
    """
    tf_keras.utils.set_random_seed(int(cfg.seed))
    info = {}
    t0 = time.perf_counter()
    mean_frames, counts = mean_frames_per_pose(train_frames, train_poses)
    pose_init = pca_pose_vectors(mean_frames, counts, cfg.pose_dim, seed=cfg.seed)
    info["pose_pca_seconds"] = time.perf_counter() - t0
    info["poses_without_training_frames"] = int(np.sum(counts == 0))
    info["pose_constant_fit_initial"] = pose_constant_fit(pose_init)
    representation = StyleRepresentation(representation_network(cfg.style_dim), reduction=cfg.style_reduction)
    if cfg.pretrain_epochs > 0:
        frames_ds = character_batches(
            train_characters, train_poses, train_frames, group=False, batch_size=cfg.pretrain_batch_size,
            seed=cfg.seed + 1,
        )
        history = pretrain_representation(
            representation, frames_ds, train_characters, epochs=cfg.pretrain_epochs,
            learning_rate=cfg.pretrain_learning_rate, seed=cfg.seed, progress=progress,
        )
        secs = history["seconds"]
        info["pretrain"] = {
            "epochs": cfg.pretrain_epochs,
            "final_loss": history["loss"][-1],
            "final_accuracy": history["accuracy"][-1],
            "seconds_per_epoch": float(np.median(secs[1:] if len(secs) > 1 else secs)),
            "history": history,
        }
    C, P = train_poses.shape
    d, Q = cfg.style_dim, cfg.pose_dim
    table = ObjectVectors(72, Q, id_column=0, num_view_features=0, initial_vectors=pose_init, name="pose_vectors")
    transform = representation_and_table(representation, table, group_column=0, id_column=1)
    decoder_options = dict(latent_modulation=cfg.decoder_modulation, palette_colours=cfg.palette_colours,
                           filters=cfg.filters)
    if cfg.model == "cvae":
        # The baseline: the decoder gets [code, style of the character's frames, pose vector].
        model = CVAE(sprites_encoder(cfg.num_latent, filters=cfg.filters),
                     sprites_decoder(cfg.num_latent + d + Q, **decoder_options),
                     num_data=C * P, id_column=0, condition=transform, encoder_sees_condition=False, seed=cfg.seed)
        return model, info
    if cfg.model != "svgpvae":
        raise ValueError(f"model must be one of {MODELS}; got {cfg.model!r}")
    _, styles = representation.styles(
        train_frames.reshape((C * P,) + train_frames.shape[2:]), np.repeat(train_characters, P)
    )
    Z = init_sprites_inducing(pose_init, styles, cfg.num_inducing, seed=cfg.seed)
    kernel = sprites_kernel(list(range(d)), list(range(d, d + Q)), noise_variance=cfg.noise_variance,
                            pose_bias=cfg.pose_bias)
    columns = decoder_gp_columns(cfg.decoder_gp_inputs, d, Q)
    model = SVGPVAE(
        sprites_encoder(cfg.num_latent, filters=cfg.filters, site_parametrization=cfg.site_parametrization),
        sprites_decoder(cfg.num_latent + len(columns or ()), **decoder_options),
        kernel,
        Z,
        num_data=C * P,
        input_transform=transform,
        num_latent_gps=cfg.num_latent,
        jitter=cfg.jitter,
        seed=cfg.seed,
        decoder_gp_columns=columns,
    )
    return model, info


# ----------------------------------------------------------------------------- run
def run(cfg: Config, progress: bool = True) -> dict:
    """Data, pretraining, training, test generation; writes config, metrics and the grid."""
    os.makedirs(cfg.out, exist_ok=True)
    t_start = time.perf_counter()
    np.random.seed(cfg.seed)
    tf_keras.utils.set_random_seed(int(cfg.seed))
    ds = sprites(
        cfg.num_characters,
        seed=cfg.data_seed,
        num_train_characters=cfg.num_train_characters,
        train_poses_per_character=cfg.train_poses_per_character,
        num_context_poses=cfg.num_context_poses,
        num_validation_characters=cfg.num_validation_characters if cfg.context_scale_grid or cfg.eval_every else 0,
    )
    C, P = ds.train_poses.shape
    steps_per_epoch = int(np.ceil(C / cfg.characters_per_batch))
    derived = {
        "num_data": int(C * P),
        "batch_size": int(cfg.characters_per_batch * P),
        "steps_per_epoch": steps_per_epoch,
        "num_test_characters": int(len(ds.test_characters)),
        "data": "procedural SPRITES-like characters (gpflow_svgpvae.datasets.sprites), not the LPC sprites",
    }
    write_json(os.path.join(cfg.out, "config.json"), {**asdict(cfg), "derived": derived, "git_commit": git_commit()})

    t0 = time.perf_counter()
    train_frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)  # [C, P, 64, 64, 3]
    render_seconds = time.perf_counter() - t0
    if progress:
        print(f"SPRITES (procedural): {C} training characters x {P} poses = {C * P} frames, "
              f"{derived['num_test_characters']} test characters; rendered in {render_seconds:.1f} s", flush=True)

    model, info = build_model(cfg, train_frames, ds.train_characters, ds.train_poses, progress=progress)
    if cfg.frames == "memory":
        data = character_batches(ds.train_characters, ds.train_poses, train_frames,
                                 characters_per_batch=cfg.characters_per_batch, seed=cfg.seed)
    elif cfg.frames == "render":
        data = character_batches(ds.train_characters, ds.train_poses,
                                 render=lambda c, p: ds.frames_for(c, p, dtype=np.float32),
                                 characters_per_batch=cfg.characters_per_batch, seed=cfg.seed)
    else:
        raise ValueError(f"frames must be 'memory' or 'render'; got {cfg.frames!r}")

    objective = GECO(cfg.kappa_squared, alpha=cfg.geco_alpha, nu=cfg.geco_nu,
                     lambda_bounds=tuple(cfg.geco_lambda_bounds))
    optimizer = tf_keras.optimizers.Adam(cfg.learning_rate)
    epoch_seconds = []
    clock = {"start": time.perf_counter()}
    is_cvae = isinstance(model, CVAE)
    scales = None if is_cvae else (cfg.context_scale_grid or [run_context_scale(cfg, C)])
    selection = None if not cfg.eval_every else EpochSelection(
        model, ds, scales, every=cfg.eval_every, epochs=cfg.epochs, path=os.path.join(cfg.out, "best_epoch_model"))

    def callback(epoch, logs):
        epoch_seconds.append(time.perf_counter() - clock["start"])
        line = (f"  epoch {epoch + 1}/{cfg.epochs}: {epoch_seconds[-1]:.1f} s, train MSE "
                f"{logs.get('geco_constraint', np.nan) + cfg.kappa_squared:.4f}, KL {logs['kl']:.4g}, "
                f"lambda {logs.get('geco_lambda', np.nan):.3g}")
        choice = None if selection is None else selection(epoch)
        if choice is not None:
            best = selection.record
            line += (f", validation MSE {min(choice['validation_mse']):.5f}"
                     + ("" if is_cvae else f" (s = {choice['chosen']:g})")
                     + f" (best {best['best_validation_mse']:.5f} @ {best['best_epoch']})")
        if progress:
            print(line, flush=True)
        clock["start"] = time.perf_counter()

    t_train = time.perf_counter()
    history = train(model, data, epochs=cfg.epochs, optimizer=optimizer, objective=objective, seed=cfg.seed,
                    jit_compile=cfg.jit_compile, progress=progress, callback=callback)
    train_seconds = time.perf_counter() - t_train

    # Test: each unseen character conditioned on its own 36 context frames.
    context = ds.test_context_frames(dtype=np.float32)
    target = ds.test_target_frames(dtype=np.float32)
    test_rows = (ds.test_characters, ds.test_context_poses, ds.test_target_poses)
    context_scale = run_context_scale(cfg, C)
    context_choice = None
    selected = selection is not None and selection.record["best_epoch"] is not None
    last_is_best = selected and selection.record["best_epoch"] == cfg.epochs
    if selected and not last_is_best:
        # What the selection changes: the last epoch's model scored on the test as well, before the restore
        # (when the last epoch is the best, the run's own test scores below are the last epoch's).
        final_scale = selection.record["chosen_scale"][-1]
        if is_cvae:
            final_mean = generate_cvae(model, context, *test_rows)["mean"]
        else:
            final_mean = generate(model, model, context, *test_rows, scale=final_scale)["mean"]
        selection.record["last_epoch"] = {
            "test_mse_mean": _mse(final_mean, target), "context_scale": final_scale,
            "style_accuracy": style_scores(ds, final_mean, ds.test_characters[:, None], ds.test_target_poses),
        }
        del final_mean
        selection.restore()
    if selected and cfg.context_scale_grid and not is_cvae:
        context_choice = selection.best_choice
        context_scale = context_choice["chosen"]
    elif cfg.context_scale_grid and not is_cvae:
        context_choice = choose_context_scale(model, ds, cfg.context_scale_grid)
        context_scale = context_choice["chosen"]
        if progress:
            print(f"context weight s chosen on {context_choice['num_characters']} validation characters: "
                  f"{context_scale:g} (validation MSE " + ", ".join(
                      f"s={sc:g}: {m:.5f}" for sc, m in zip(context_choice["scales"], context_choice["validation_mse"]))
                  + ")", flush=True)
    t0 = time.perf_counter()
    if is_cvae:
        generated = generate_cvae(model, context, *test_rows, num_samples=1, seed=cfg.seed)
    else:
        generated = generate(model, model, context, *test_rows, num_samples=1, seed=cfg.seed, scale=context_scale)
    eval_seconds = time.perf_counter() - t0
    pose_vectors = pose_table_vectors(model)  # [72, Q] learned
    nearest = nearest_context_frames(context, ds.test_context_poses, ds.test_target_poses, pose_vectors)
    per_character = np.mean((generated["mean"].astype(np.float64) - target) ** 2, axis=(1, 2, 3, 4))
    test_pairs = (ds.test_characters[:, None], ds.test_target_poses)
    t0 = time.perf_counter()
    style = {
        "rule": STYLE_RULE,
        "given_context": style_scores(ds, generated["mean"], *test_pairs),
        "nearest_context_frame": style_scores(ds, nearest, *test_pairs),
    }
    style_seconds = time.perf_counter() - t0
    npc, npp = min(cfg.num_plot_characters, len(target)), min(cfg.num_plot_poses, target.shape[1])
    test_mse = _mse(generated["mean"], target)
    if last_is_best:
        selection.record["last_epoch"] = {"test_mse_mean": test_mse, "context_scale": None if is_cvae else context_scale,
                                          "style_accuracy": style["given_context"], "is_best_epoch": True}
    shown = {"given context": generated["mean"][:npc, :npp]}
    examples = {"generated": generated["mean"][:npc, :npp]}
    extra, reconstruction = {}, None
    if not is_cvae:
        variants, extra, reconstruction = svgpvae_variants(model, cfg, ds, train_frames, context, test_rows, target,
                                                            generated, context_scale)
        t0 = time.perf_counter()
        for name, mean in variants.items():
            style[name] = style_scores(ds, mean, *test_pairs)
        style_seconds += time.perf_counter() - t0
        shown["given train+ctx"] = variants["given_train_and_context"][:npc, :npp]
        examples["generated_with_train"] = variants["given_train_and_context"][:npc, :npp]
        examples["generated_scale_1"] = variants["given_context_scale_1"][:npc, :npp]
    t0 = time.perf_counter()
    probe = style_probe(model, ds, context, seed=cfg.seed)
    probe["seconds"] = time.perf_counter() - t0
    shown["nearest ctx frame"] = nearest[:npc, :npp]

    tf.train.Checkpoint(model=model).write(os.path.join(cfg.out, "model"))
    np.savez_compressed(
        os.path.join(cfg.out, "generation_examples.npz"),
        truth=(target[:npc, :npp] * 255).round().astype(np.uint8),
        **examples,
        nearest_context_frame=nearest[:npc, :npp],
        characters=ds.test_characters[:npc],
        target_poses=ds.test_target_poses[:npc, :npp],
    )
    grid = os.path.join(cfg.out, "sprites_generation.png")
    name = "CVAE" if is_cvae else "SVGP-VAE"
    given = "the 36 context frames" + ("" if is_cvae else f" (s = {context_scale:g})")
    title = (f"{name}, procedural SPRITES, unseen test characters, {npp} of {target.shape[1]} target poses; "
             f"test MSE given {given} {test_mse:.4f}")
    if not is_cvae:
        title += f", given training set + context {extra['train_and_context']['test_mse_mean']:.4f}"
    plot_generation(grid, target[:npc, :npp], shown, title=title + f" ({cfg.epochs} epochs, N={derived['num_data']})")
    times = epoch_seconds
    metrics = {
        "model": cfg.model,
        "test_mse_mean": test_mse,
        "test_mse_sample": _mse(generated["samples"][0], target),
        "test_mse_per_character_sd": float(np.std(per_character, ddof=1)) if len(per_character) > 1 else 0.0,
        "context_scale": None if is_cvae else context_scale,
        **({} if context_choice is None else {"context_scale_choice": context_choice}),
        **({} if selection is None else {"epoch_selection": selection.record}),
        **extra,
        "nearest_context_frame": {
            "description": "baseline: per target pose the character's context frame with the closest learned "
                           "pose vector (cosine)",
            "test_mse": _mse(nearest, target),
        },
        "style_accuracy": {**style, "seconds": style_seconds},
        "diagnostics": {
            "style_probe": probe,
            **({} if reconstruction is None else {"reconstruction": reconstruction}),
            **({} if is_cvae else {"inducing_span": {
                "description": "dimension of the bilinear functions u(s)^T W u(p) that the inducing points span "
                               "(sprites_style.inducing_span), against all d x Q of them",
                **inducing_span(model.inducing_variable.Z.numpy(), cfg.style_dim)}}),
            "pose_constant_fit": {
                "description": "R^2 of the best least-squares fit of a constant by the unit pose vectors "
                               "(sprites_style.pose_constant_fit): how far a pose-invariant latent function is "
                               "representable by the paper's kernel",
                "initial": info["pose_constant_fit_initial"],
                "learned": pose_constant_fit(pose_vectors),
            },
        },
        "seconds_per_epoch": float(np.median(times[1:] if len(times) > 1 else times)) if times else None,
        "first_epoch_seconds": float(times[0]) if times else None,
        "epoch_seconds": [float(t) for t in times],
        "train_seconds": train_seconds,
        "render_seconds": render_seconds,
        "eval_seconds": eval_seconds,
        "wall_seconds": time.perf_counter() - t_start,
        "epochs": cfg.epochs,
        **derived,
        "pretrain": info.get("pretrain"),
        "pose_pca_seconds": info["pose_pca_seconds"],
        "poses_without_training_frames": info["poses_without_training_frames"],
        "final_train_mse": (history["geco_constraint"][-1] + cfg.kappa_squared) if history else None,
        "history": {k: [float(v) for v in vals] for k, vals in history.items()},
        "paper": PAPER,
        "grid": os.path.basename(grid),  # in the run's folder (the folder may move)
    }
    write_json(os.path.join(cfg.out, "metrics.json"), metrics)
    if selection is not None:
        plot_epoch_selection(os.path.join(cfg.out, "epoch_selection.png"), selection.record, metrics["history"],
                             cfg.kappa_squared, title=f"{name}, validation characters scored every "
                                                      f"{cfg.eval_every} epochs")
    if progress:
        print(f"{name}: test MSE per pixel ({derived['num_test_characters']} characters x {target.shape[1]} poses), "
              f"given {given}: decoded mean {metrics['test_mse_mean']:.5f}, decoded sample "
              f"{metrics['test_mse_sample']:.5f}; {metrics['seconds_per_epoch']:.1f} s/epoch; grid: {grid}", flush=True)
        print(f"nearest context frame (baseline): {metrics['nearest_context_frame']['test_mse']:.5f}", flush=True)
        print(f"style accuracy (chance: colours 1/6, hair shape 1/5), given the context frames: "
              f"{format_style(style['given_context'])}; nearest context frame: "
              f"{format_style(style['nearest_context_frame'])}", flush=True)
        if not is_cvae:
            print(f"given the context frames with s = 1: MSE {extra['given_context_scale_1']['test_mse_mean']:.5f}, "
                  f"{format_style(style['given_context_scale_1'])}; given training set + context: MSE "
                  f"{extra['train_and_context']['test_mse_mean']:.5f}, {format_style(style['given_train_and_context'])}; "
                  f"reconstructed training frames: {format_style(reconstruction['style_accuracy'])}",
                  flush=True)
        print(f"linear probe from the style vector ({probe['num_characters']} test characters, {probe['folds']}-fold): "
              f"{format_style(probe) if probe['folds'] >= 2 else '-'}", flush=True)
    return metrics


# ----------------------------------------------------------------------------- CLI
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpflow_svgpvae.experiments.sprites",
                                description="SVGP-VAE conditional generation on (procedural) SPRITES")
    p.add_argument("--model", choices=MODELS, default="svgpvae",
                   help="svgpvae (default) or cvae: the conditional-VAE baseline (decoder on [code, style of the "
                        "context frames, pose vector]; same networks, condition and GECO)")
    p.add_argument("--quick", action="store_true",
                   help="24 characters (18 train), 3 epochs, 2 pretraining epochs, 6 characters per batch (~1-2 min)")
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default 50; --quick: 3)")
    p.add_argument("--num-characters", type=int, default=None, help="total characters (default 1296; --quick: 24)")
    p.add_argument("--num-train-characters", type=int, default=None,
                   help="training characters (default 1000 of 1296, else the same fraction)")
    p.add_argument("--pretrain-epochs", type=int, default=None, help="classifier pretraining (default 400; --quick: 2)")
    p.add_argument("--characters-per-batch", type=int, default=None, help="default 10 (x 50 poses = 500); --quick: 6")
    p.add_argument("--latent-dim", type=int, default=64)
    p.add_argument("--num-inducing", type=int, default=72)
    p.add_argument("--style-dim", type=int, default=16,
                   help="size of the representation network's style vector (default 16)")
    p.add_argument("--filters", type=int, default=16,
                   help="conv filters per layer of the encoder and decoder (default 16, the paper's)")
    p.add_argument("--style-reduction", choices=("sum", "mean"), default=None,
                   help="style = sum (default, the paper's) or mean of the frames' representations; the CVAE's "
                        "default is the mean, since its decoder sees the style's size and a test character has "
                        "36 context frames against 50 frames in training")
    p.add_argument("--decoder-modulation", choices=("shift", "scale_shift", "mix"), default=None,
                   help="feed the decoder's input to every decoder layer: shift, scale and shift (FiLM) or a "
                        "full channel mix generated by it (mix: networks.LatentMixing); networks.sprites_decoder; "
                        "not in the paper")
    p.add_argument("--palette-colours", type=int, default=None,
                   help="decoder output as a per-pixel mixture of K colours computed from the code "
                        "(networks.sprites_decoder; not in the paper)")
    p.add_argument("--decoder-gp-inputs", choices=DECODER_GP_INPUTS, default=None,
                   help="the SVGP-VAE's decoder also reads these GP inputs beside the code, as the CVAE's decoder "
                        "reads its condition (SVGPVAE(decoder_gp_columns=...); not in the paper; the style is then "
                        "mean-reduced by default)")
    p.add_argument("--pose-bias", type=float, default=None,
                   help="initial constant added to the pose kernel so that pose-invariant attributes (colours) "
                        "are representable (kernels.sprites_kernel; not in the paper)")
    p.add_argument("--context-scale", type=float, default=None,
                   help="weight s of each test context frame in the posterior (default: N / batch size, the "
                        "training minibatches' weight; 1 conditions on exactly the 36 frames)")
    p.add_argument("--context-scale-grid", type=float, nargs="+", default=None, metavar="S",
                   help="choose the context weight s among these by the generation MSE of held-out validation "
                        "characters (not training, not test; --num-validation-characters)")
    p.add_argument("--num-validation-characters", type=int, default=None,
                   help="validation characters for --context-scale-grid and --eval-every (default 100; --quick: 6)")
    p.add_argument("--eval-every", type=int, default=None, metavar="K",
                   help="score the generations of the validation characters every K epochs and after the last "
                        "(the SVGP-VAE's at the best s of --context-scale-grid, else at the run's s), and test the "
                        "model of the epoch with the smallest validation MSE (default: no selection, the last "
                        "epoch's model)")
    p.add_argument("--site-parametrization", choices=SITE_PARAMETRIZATIONS, default="variance",
                   help="SVGP-VAE encoder head: site mean and variance (the paper's) or natural parameters")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--kappa-squared", type=float, default=0.0075)
    p.add_argument("--geco-nu", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--frames", choices=("memory", "render"), default="memory",
                   help="keep training frames in RAM as uint8 (614 MB for the paper) or render per batch")
    p.add_argument("--jit", action="store_true", help="compile the training step with XLA (slower on CPU here)")
    p.add_argument("--out", default="results/sprites")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.palette_colours is not None and args.palette_colours < 1:
        parser.error(f"--palette-colours must be a positive integer; got {args.palette_colours}")
    if args.filters < 1:
        parser.error(f"--filters must be a positive integer; got {args.filters}")
    if args.style_dim < 1:
        parser.error(f"--style-dim must be a positive integer; got {args.style_dim}")
    if args.decoder_gp_inputs is not None and args.model != "svgpvae":
        parser.error("--decoder-gp-inputs is an option of the SVGP-VAE (the CVAE's decoder reads its condition)")
    if args.context_scale_grid is not None:
        if args.model != "svgpvae":
            parser.error("--context-scale-grid is an option of the SVGP-VAE (the CVAE has no context weight)")
        if args.context_scale is not None:
            parser.error("give --context-scale or --context-scale-grid, not both")
        if not all(map(is_positive_number, args.context_scale_grid)):
            parser.error(f"--context-scale-grid takes positive numbers; got {args.context_scale_grid}")
    if args.eval_every is not None and args.eval_every < 1:
        parser.error(f"--eval-every must be a positive integer; got {args.eval_every}")
    if args.num_validation_characters is not None and args.num_validation_characters < 1:
        parser.error(f"--num-validation-characters must be a positive integer; got {args.num_validation_characters}")
    if args.pose_bias is not None and not args.pose_bias > 0:
        parser.error(f"--pose-bias must be a positive number; got {args.pose_bias}")
    quick = args.quick
    n = args.num_characters if args.num_characters is not None else (24 if quick else 1296)
    if args.num_train_characters is not None:
        n_train = args.num_train_characters
    elif quick and args.num_characters is None:
        n_train = 18
    else:
        n_train = 1000 if n == 1296 else int(round(n * 1000 / 1296))
    n_train = int(min(max(n_train, 1), n - 1))
    return Config(
        model=args.model,
        epochs=args.epochs if args.epochs is not None else (3 if quick else 50),
        num_characters=n,
        num_train_characters=n_train,
        pretrain_epochs=args.pretrain_epochs if args.pretrain_epochs is not None else (2 if quick else 400),
        characters_per_batch=args.characters_per_batch if args.characters_per_batch is not None else (6 if quick else 10),
        num_latent=args.latent_dim,
        filters=args.filters,
        style_dim=args.style_dim,
        num_inducing=args.num_inducing,
        style_reduction=args.style_reduction or (
            "mean" if args.model == "cvae" or (args.decoder_gp_inputs or "").startswith("style") else "sum"),
        decoder_gp_inputs=args.decoder_gp_inputs,
        decoder_modulation=args.decoder_modulation,
        palette_colours=args.palette_colours,
        pose_bias=args.pose_bias,
        context_scale=args.context_scale,
        context_scale_grid=args.context_scale_grid,
        eval_every=args.eval_every,
        num_validation_characters=(args.num_validation_characters if args.num_validation_characters is not None
                                   else (6 if quick else 100)),
        site_parametrization=args.site_parametrization,
        learning_rate=args.learning_rate,
        kappa_squared=args.kappa_squared,
        geco_nu=args.geco_nu,
        seed=args.seed,
        data_seed=args.data_seed,
        frames=args.frames,
        jit_compile=args.jit,
        num_reconstruction_frames=300 if quick else 1000,
        num_plot_characters=4 if quick else 6,
        out=args.out,
    )


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = _parser().parse_args(argv)
    return run(config_from_args(argv), progress=not args.quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
