r"""Where a SPRITES character's style is lost (issue 12, item 2), measured on a trained run.

Usage::

    python -m svgpvae_paper.experiments.sprites_diagnostics --run results/sprites
        [--out results/sprites/diagnostics] [--num-characters 296] [--autoencoder-epochs 30]

``--run`` is the output folder of :mod:`svgpvae_paper.experiments.sprites`
(its ``config.json`` and ``model`` checkpoint). Written to ``--out``:
``metrics.json`` with

* ``conditioning_scale`` -- the unseen characters generated from their 36
  context frames with each frame weighted by :math:`s` (1: exactly the
  frames; :math:`N/b`: the training minibatches' weight): test MSE, style
  accuracy and the *shrinkage* of the latent predictive mean :math:`m` towards
  the prior mean, :math:`\langle m, \mu\rangle / \langle\mu, \mu\rangle` with
  :math:`\mu` the encoder means of the true target frames (1: no shrinkage);
* ``autoencoded_targets`` -- the true target frames encoded and decoded (no
  GP): what the generation could at best show through this encoder and decoder;
* ``decoder_activations`` -- every decoder layer's mean and largest absolute output on a
  training batch, and the share of output pixels saturated at exactly 0 or 1 (no gradient);
* ``encoder_probe`` -- a cross-validated linear probe from the encoder means
  of training frames to the character's attribute classes (does the latent
  code carry the colours at all?);
* ``metric_sensitivity`` -- the style accuracy of *true* frames blurred or
  mixed with the mean frame, to read the accuracies against;
* ``autoencoder`` (``--autoencoder-epochs`` > 0) -- the same encoder and
  decoder trained as a plain deterministic autoencoder (encoder means ->
  decoder, MSE, Adam, batch 100) on the frames of the first training
  characters, with no GP and no KL: reconstruction MSE and style accuracy on
  training characters and on unseen ones (can these networks learn the
  colours at all, GP aside?);
* ``decoder_from_true_codes`` (``--decoder-study-epochs`` > 0) -- the decoder
  alone, trained from the *true* code of each frame (one-hot pose, one-hot
  colour of each attribute, one-hot hair shape) to the frame, for each of
  ``--decoder-modulations`` (default: the plain decoder and the FiLM-modulated
  one, ``latent_modulation="scale_shift"``; also ``"mix"``, code-generated
  channel mixing), scored on unseen attribute combinations (every
  ``--decoder-study-score-every`` epochs: a learning curve): is the decoder the
  bottleneck? ``--decoder-study-only`` runs this study alone, without ``--run``::

      svgpvae sprites_diagnostics --decoder-study-only --decoder-study-epochs 36 \
          --decoder-study-score-every 6 --decoder-modulations plain scale_shift mix

  (``--decoder-study-filters``: the decoders' conv width, 16 as in the paper by default.)
"""

import argparse
import json
import os
import sys
import time
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from svgpvae_paper.datasets.sprites import STYLE_ATTRIBUTES, SpriteStyle, sprites
from svgpvae_paper.datasets.sprites.palettes import _BOT_D, _SKIN_L, _palettes
from svgpvae_paper.datasets.sprites.styles import _ATTRIBUTE_SIZES
from svgpvae_paper.experiments import sprites as experiment
from svgpvae_paper.networks.sprites import sprites_decoder, sprites_encoder

from .common import command_argv, git_commit, read_json, write_json
from .sprites_style import _cv_accuracy, format_style, pose_constant_fit, style_scores

DECODER_VARIANTS = ("plain", "shift", "scale_shift", "mix", "mix_demodulated")

__all__ = [
    "DECODER_VARIANTS",
    "load_run",
    "conditioning_scale_sweep",
    "gp_code_ablation",
    "encoder_probe",
    "decoder_activation_scales",
    "metric_sensitivity",
    "autoencoder_study",
    "decoder_study",
    "main",
]


def load_run(run_dir: str, *, num_validation_characters: int = 0):
    """``(cfg, ds, train_frames, model)`` of a finished sprites run (the model restored from its checkpoint);
    ``ds`` with ``num_validation_characters`` held-out characters beside the run's own split."""
    with open(os.path.join(run_dir, "config.json")) as f:
        saved = json.load(f)
    fields = {k: v for k, v in saved.items() if k in experiment.Config.__dataclass_fields__}
    cfg = experiment.Config(**{**fields, "pretrain_epochs": 0})  # the checkpoint holds the trained weights
    ds = sprites(
        cfg.num_characters,
        seed=cfg.data_seed,
        num_train_characters=cfg.num_train_characters,
        train_poses_per_character=cfg.train_poses_per_character,
        num_context_poses=cfg.num_context_poses,
        num_validation_characters=num_validation_characters,
    )
    train_frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    model, _ = experiment.build_model(cfg, train_frames, ds.train_characters, ds.train_poses)
    tf.train.Checkpoint(model=model).read(
        os.path.join(run_dir, "model")
    ).expect_partial().assert_existing_objects_matched()
    return cfg, ds, train_frames, model


def _decode(model, Z, condition=None, batch_size: int = 256) -> np.ndarray:
    """Decoded codes ``Z [..., L]``; ``condition [..., C]``: what a decoder that reads GP inputs
    (``decoder_gp_columns``) reads beside each code."""
    if getattr(model, "decoder_gp_columns", ()) and condition is None:
        raise ValueError("the model's decoder also reads GP inputs (decoder_gp_columns): pass their condition")
    Z = np.asarray(Z)
    flat = Z.reshape(-1, Z.shape[-1])
    flat_condition = None if condition is None else np.asarray(condition).reshape(len(flat), -1)
    out = [
        model.decode_predictions(
            tf.constant(flat[s : s + batch_size]),
            tf.zeros_like(flat[s : s + batch_size]),
            condition=None if flat_condition is None else tf.constant(flat_condition[s : s + batch_size]),
        ).numpy()
        for s in range(0, len(flat), batch_size)
    ]
    out = np.concatenate(out)
    return out.reshape(Z.shape[:-1] + out.shape[1:])


def _encode_means(model, frames, batch_size: int = 500) -> np.ndarray:
    flat = frames.reshape((-1,) + frames.shape[-3:])
    means = model.encode_all(flat, batch_size=batch_size)[0].numpy()
    return means.reshape(frames.shape[:-3] + means.shape[-1:])


def conditioning_scale_sweep(
    model, ds, scales: Sequence[float], num_characters: Optional[int] = None, characters_per_chunk: int = 16
) -> dict:
    """Generations of unseen characters from their context frames, weighted by each ``s`` in ``scales``.

    :returns: ``{"autoencoded_targets": {...}, "scales": {str(s): {"test_mse", "shrinkage", "correlation",
        "predictive_variance_median", "style_accuracy"}}}``.
    """
    V = len(ds.test_characters) if num_characters is None else int(min(num_characters, len(ds.test_characters)))
    ids = ds.test_characters[:V]
    context = ds.test_context_frames(dtype=np.float32)[:V]
    target = ds.test_target_frames(dtype=np.float32)[:V]
    pairs = (ids[:, None], ds.test_target_poses[:V])
    mu_target = _encode_means(model, target).astype(np.float64)  # [V, T, L]
    outputs = {}
    for s in (float(s) for s in scales):
        # the experiment's own generation path (model.predict_f with the context weighted by s)
        outputs[s] = experiment.generate(
            model,
            model,
            context,
            ids,
            ds.test_context_poses[:V],
            ds.test_target_poses[:V],
            characters_per_chunk=characters_per_chunk,
            scale=s,
        )
    # a decoder reading GP inputs reads those of the target poses (the same for every s)
    autoencoded = _decode(model, mu_target, next(iter(outputs.values())).get("condition"))
    result = {
        "num_characters": V,
        "autoencoded_targets": {
            "description": "true target frames encoded (means) and decoded, no GP",
            "test_mse": experiment._mse(autoencoded, target),
            "style_accuracy": style_scores(ds, autoencoded, *pairs),
        },
        "scales": {},
    }
    for s, out in outputs.items():
        m, generated = out["z_mean"], out["mean"]
        result["scales"][f"{s:g}"] = {
            "test_mse": experiment._mse(generated, target),
            "shrinkage": float(np.sum(m * mu_target) / np.sum(mu_target * mu_target)),
            "correlation": float(np.corrcoef(m.ravel(), mu_target.ravel())[0, 1]),
            "predictive_variance_median": float(np.median(out["z_var"])),
            "style_accuracy": style_scores(ds, generated, *pairs),
        }
    return result


def gp_code_ablation(
    model, ds, scale: float, num_characters: Optional[int] = None, characters_per_chunk: int = 16
) -> dict:
    """What the GP's code adds, for a decoder that also reads GP inputs (``decoder_gp_columns``):
    the unseen characters' target frames decoded at their own condition ``[style, pose]`` with

    * ``"gp_code"``: the GP predictive mean given the character's context frames weighted ``scale``
      (the generation the test scores);
    * ``"prior_mean_code"``: the prior mean, zero, in its place (the condition alone);
    * ``"other_character_code"``: the GP code of the next test character at the same target poses.

    If the last two score as the first, the generation comes from the condition and the GP's code
    carries nothing the decoder uses.

    :returns: ``{variant: {"test_mse", "style_accuracy"}, "num_characters", "scale"}``.
    :raises ValueError: for a decoder that reads the code alone (without a condition, zero decodes
        to one frame for every pose: nothing to compare).
    """
    if not getattr(model, "decoder_gp_columns", ()):
        raise ValueError(
            "the model's decoder reads the GP's code alone (no decoder_gp_columns): "
            "the ablation needs a decoder that also reads the GP inputs"
        )
    V = len(ds.test_characters) if num_characters is None else int(min(num_characters, len(ds.test_characters)))
    if V < 2:
        raise ValueError(f"the ablation needs at least 2 test characters; got {V}")
    ids = ds.test_characters[:V]
    context = ds.test_context_frames(dtype=np.float32)[:V]
    target = ds.test_target_frames(dtype=np.float32)[:V]
    pairs = (ids[:, None], ds.test_target_poses[:V])
    out = experiment.generate(
        model,
        model,
        context,
        ids,
        ds.test_context_poses[:V],
        ds.test_target_poses[:V],
        characters_per_chunk=characters_per_chunk,
        scale=scale,
    )
    z_mean, condition = out["z_mean"], out["condition"]  # [V, T, L], [V, T, C]
    decoded = {
        "gp_code": out["mean"],
        "prior_mean_code": _decode(model, np.zeros_like(z_mean), condition),
        "other_character_code": _decode(model, np.roll(z_mean, -1, axis=0), condition),
    }
    result = {"num_characters": V, "scale": float(scale)}
    for name, frames in decoded.items():
        result[name] = {"test_mse": experiment._mse(frames, target), "style_accuracy": style_scores(ds, frames, *pairs)}
    return result


def _attribute_labels(ds, characters) -> np.ndarray:
    return np.asarray(ds.attributes)[np.asarray(characters)]


def encoder_probe(model, ds, train_frames, *, num_frames: int = 3000, seed: int = 0) -> dict:
    """Cross-validated (5-fold, grouped by character, so that the probe cannot recognise the character
    instead of its colours) linear probe from encoder means of a seeded sample of training frames to
    their character's attribute classes."""
    C, P = ds.train_poses.shape
    rows = np.sort(np.random.default_rng(seed).choice(C * P, size=min(int(num_frames), C * P), replace=False))
    ci, pi = np.divmod(rows, P)
    means = _encode_means(model, train_frames[ci, pi].astype(np.float32) / np.float32(255.0))
    characters = ds.train_characters[ci]
    labels = _attribute_labels(ds, characters)
    result = {
        "description": "encoder means of training frames -> attribute class (standardised logistic "
        "regression, 5-fold cross-validation, the frames of a character in one fold)",
        "num_frames": int(len(rows)),
        "num_characters": int(len(np.unique(characters))),
    }
    folds = int(min(5, result["num_characters"]))
    result["folds"] = folds
    if folds < 2:
        return result
    for name in STYLE_ATTRIBUTES:
        column = SpriteStyle._fields.index(name)
        scores = _cv_accuracy(means, labels[:, column], folds, seed, groups=characters)
        result[name] = {**scores, "chance": 1.0 / _ATTRIBUTE_SIZES[column]}
    return result


def _training_batch(ds, train_frames, num_characters: int):
    """``(rows, X, Y)``: the first ``num_characters`` training characters' frames, ``X [n P, 2]``
    (character id, pose) and ``Y [n P, 64, 64, 3]`` in [0, 1]."""
    C, P = ds.train_poses.shape
    rows = np.arange(min(int(num_characters), C))
    X = np.stack([np.repeat(ds.train_characters[rows], P), ds.train_poses[rows].ravel()], -1).astype(np.float64)
    Y = train_frames[rows].reshape((-1,) + train_frames.shape[2:]).astype(np.float32) / np.float32(255.0)
    return rows, X, Y


def training_posterior(model, ds, train_frames, *, num_characters: int = 10, seed: int = 0) -> dict:
    """The training path on one batch of training characters: the GP posterior at the batch's own
    frames (weighted s = N/b, as in training), its predictive variance against the spread of its
    means (is the decoder fed noise?), and the MSE and style accuracy of the decoded posterior mean
    and of one decoded sample (are the colours learned on training characters at all?)."""
    C, P = ds.train_poses.shape
    rows, X, Y = _training_batch(ds, train_frames, num_characters)
    mean, var = (t.numpy() for t in model.predict_f(X, (X, Y), scale=C / len(rows)))
    condition = model.decoder_condition(model.map_inputs(X, Y, training=False))  # None: the decoder reads codes only
    condition = None if condition is None else condition.numpy()
    eps = np.random.default_rng(seed).standard_normal(mean.shape)
    decoded = {
        "mean": _decode(model, mean, condition),
        "sample": _decode(model, mean + np.sqrt(np.maximum(var, 0.0)) * eps, condition),
    }
    site_var = model.encode(tf.constant(Y))[1].numpy()
    shape = (len(rows), P) + Y.shape[1:]
    pairs = (ds.train_characters[rows][:, None], ds.train_poses[rows])
    return {
        "num_characters": int(len(rows)),
        "scale": C / len(rows),
        "mean_predictive_variance": float(var.mean()),
        "variance_of_predictive_means": float(mean.var(axis=0).mean()),
        "median_site_variance": float(np.median(site_var)),
        **{
            f"decoded_{k}": {"mse": experiment._mse(v, Y), "style_accuracy": style_scores(ds, v.reshape(shape), *pairs)}
            for k, v in decoded.items()
        },
    }


def decoder_activation_scales(model, ds, train_frames, *, num_characters: int = 2) -> dict:
    """Mean and largest absolute value of every decoder layer's output on the decoder inputs of a
    training batch (its GP posterior means at s = N/b and, if the decoder reads them, its GP inputs),
    and ``saturated``: the share of output pixels whose sigmoid is exactly 0 or 1 in float32, where
    no gradient flows (does the decoder amplify its activations layer by layer?)."""
    C, P = ds.train_poses.shape
    rows, X, Y = _training_batch(ds, train_frames, num_characters)
    mean = model.predict_f(X, (X, Y), scale=C / len(rows))[0].numpy()
    condition = model.decoder_condition(model.map_inputs(X, Y, training=False))
    inputs = mean if condition is None else np.concatenate([mean, condition.numpy()], 1)
    decoder = model.decoder
    layers = [layer for layer in decoder.layers if not isinstance(layer, tf_keras.layers.InputLayer)]
    outputs = tf_keras.Model(decoder.inputs, [layer.output for layer in layers])(inputs.astype(np.float32))
    scales = [
        {"layer": layer.name, "mean_abs": float(np.mean(np.abs(o))), "max_abs": float(np.max(np.abs(o)))}
        for layer, o in zip(layers, (o.numpy() for o in outputs))
    ]
    frames = outputs[-1].numpy()
    return {
        "num_frames": int(len(X)),
        "layers": scales,
        "decoder_input_sd": float(inputs.std()),
        "saturated": float(np.mean((frames == 0.0) | (frames == 1.0))),
    }


def metric_sensitivity(ds, *, num_characters: int = 60, num_poses: int = 20) -> dict:
    """Style accuracy of true test target frames, blurred (Gaussian, sigma in pixels) or mixed with the
    mean frame (weight ``a`` on the mean), with the MSE of each corruption; and ``average_colours``:
    the true label maps painted with every character's skin, hair, top and bottom slots set to
    their mean over all characters (perfect shapes, generic colours)."""
    from scipy.ndimage import gaussian_filter

    ids = ds.test_characters[:num_characters]
    poses = ds.test_target_poses[:num_characters, :num_poses]
    frames = ds.frames_for(ids[:, None], poses, dtype=np.float32)
    pairs = (ids[:, None], poses)
    mean_frame = frames.mean(axis=(0, 1), keepdims=True)
    out = {"num_frames": int(frames.shape[0] * frames.shape[1]), "blur": {}, "mix_with_mean": {}}
    for sigma in (0.5, 1.0, 1.5):
        blurred = gaussian_filter(frames, sigma=(0, 0, sigma, sigma, 0))
        out["blur"][f"{sigma:g}"] = {
            "mse": experiment._mse(blurred, frames),
            "style_accuracy": style_scores(ds, blurred, *pairs),
        }
    for a in (0.3, 0.5, 0.7):
        mixed = (1 - a) * frames + a * mean_frame
        out["mix_with_mean"][f"{a:g}"] = {
            "mse": experiment._mse(mixed, frames),
            "style_accuracy": style_scores(ds, mixed, *pairs),
        }
    labels = ds.label_maps_for(ids[:, None], poses).astype(np.intp)  # [V, T, 64, 64]
    palettes = _palettes(np.asarray(ds.attributes)).astype(np.float64) / 255.0  # [characters, 16, 3]
    generic = palettes[ids].copy()
    styled = slice(_SKIN_L, _BOT_D + 1)  # light and shaded slots of skin, hair, top, bottom
    generic[:, styled] = palettes[:, styled].mean(axis=0)
    painted = np.take_along_axis(generic[:, None, None, None], labels[..., None, None], axis=-2)[..., 0, :]
    out["average_colours"] = {
        "mse": experiment._mse(painted, frames),
        "style_accuracy": style_scores(ds, painted, *pairs),
    }
    return out


def _unseen_test_frames(ds):
    """40 unseen characters x 25 target poses: ``(ids [40], poses [40, 25], frames [40, 25, 64, 64, 3])``."""
    ids, poses = ds.test_characters[:40], ds.test_target_poses[:40, :25]
    return ids, poses, ds.frames_for(ids[:, None], poses, dtype=np.float32)


def _fit_epochs(network, inputs, targets, *, epochs: int, batch_size: int, label: str, progress: bool):
    """Keras ``fit`` one epoch at a time (shuffled); the training MSE of each epoch."""
    history = []
    for epoch in range(int(epochs)):
        fitted = network.fit(inputs, targets, batch_size=int(batch_size), epochs=1, verbose=0, shuffle=True)
        history.append(float(fitted.history["loss"][0]))
        if progress:
            print(f"  {label} epoch {epoch + 1}/{epochs}: train MSE {history[-1]:.5f}", flush=True)
    return history


def autoencoder_study(
    ds,
    *,
    epochs: int = 30,
    num_characters: int = 200,
    batch_size: int = 100,
    num_latent: int = 64,
    learning_rate: float = 1e-3,
    seed: int = 0,
    palette_colours: Optional[int] = None,
    filters: int = 16,
    progress: bool = True,
) -> dict:
    """The SPRITES encoder and decoder as a plain deterministic autoencoder (no GP): can they learn colours?

    ``filters``: conv width of both networks (16: the paper's).

    Trained on all training poses of the first ``num_characters`` training characters; scored on
    1,000 of those frames and on 40 unseen characters x 25 target poses.
    """
    tf_keras.utils.set_random_seed(int(seed))
    characters, poses = ds.train_characters[:num_characters], ds.train_poses[:num_characters]
    frames = ds.frames_for(characters[:, None], poses, dtype=np.float32)  # [c, P, 64, 64, 3]
    flat = frames.reshape((-1,) + frames.shape[2:])
    test_ids, test_poses, test = _unseen_test_frames(ds)
    encoder = sprites_encoder(num_latent, filters=filters)
    decoder = sprites_decoder(num_latent, palette_colours=palette_colours, filters=filters)
    frames_in = tf_keras.Input(frames.shape[2:])
    autoencoder = tf_keras.Model(frames_in, decoder(encoder(frames_in)[0]))
    autoencoder.compile(tf_keras.optimizers.Adam(learning_rate), "mse")
    n_score = min(20, len(characters))
    t0 = time.perf_counter()
    history = _fit_epochs(
        autoencoder, flat, flat, epochs=epochs, batch_size=batch_size, label="autoencoder", progress=progress
    )
    train_rec = autoencoder.predict(frames[:n_score].reshape((-1,) + frames.shape[2:]), batch_size=500, verbose=0)
    test_rec = autoencoder.predict(test.reshape((-1,) + test.shape[2:]), batch_size=500, verbose=0)
    train_rec, test_rec = train_rec.reshape(frames[:n_score].shape), test_rec.reshape(test.shape)
    return {
        "description": "sprites_encoder means -> sprites_decoder trained as a deterministic autoencoder (MSE, Adam, "
        "no GP, no KL) on all training poses of the first training characters",
        "palette_colours": palette_colours,
        "filters": int(filters),
        "epochs": int(epochs),
        "num_characters": int(len(characters)),
        "num_frames": int(len(flat)),
        "batch_size": int(batch_size),
        "steps": int(epochs) * int(np.ceil(len(flat) / batch_size)),
        "seconds": time.perf_counter() - t0,
        "train_mse_history": history,
        "training_characters": {
            "mse": experiment._mse(train_rec, frames[:n_score]),
            "style_accuracy": style_scores(ds, train_rec, characters[:n_score, None], poses[:n_score]),
        },
        "unseen_characters": {
            "mse": experiment._mse(test_rec, test),
            "style_accuracy": style_scores(ds, test_rec, test_ids[:, None], test_poses),
        },
    }


def true_codes(ds, characters, poses) -> np.ndarray:
    """``[n, 72 + sum of attribute sizes]`` float32: one-hot pose and one-hot value of every style attribute."""
    attributes = np.asarray(ds.attributes)
    sizes = [int(attributes[:, j].max()) + 1 for j in range(attributes.shape[1])]
    values = attributes[np.asarray(characters)]
    parts = [np.eye(72)[np.asarray(poses)]] + [np.eye(n)[values[:, j]] for j, n in enumerate(sizes)]
    return np.concatenate(parts, -1).astype(np.float32)


def decoder_study(
    ds,
    *,
    modulation: Optional[str] = None,
    epochs: int = 12,
    num_characters: int = 200,
    batch_size: int = 100,
    learning_rate: float = 1e-3,
    seed: int = 0,
    palette_colours: Optional[int] = None,
    filters: int = 16,
    score_every: Optional[int] = None,
    progress: bool = True,
) -> dict:
    """The SPRITES decoder alone, trained (MSE, Adam) from each frame's true code (:func:`true_codes`) on
    all training poses of the first ``num_characters`` training characters; scored on 40 unseen
    characters x 25 target poses (attribute combinations not seen together).

    :param modulation: ``sprites_decoder``'s ``latent_modulation`` (``None``: the paper's decoder).
    :param score_every: also score the unseen characters every this many epochs (``curve``).
    """
    tf_keras.utils.set_random_seed(int(seed))
    characters, poses = ds.train_characters[:num_characters], ds.train_poses[:num_characters]
    frames = ds.frames_for(characters[:, None], poses, dtype=np.float32).reshape(-1, 64, 64, 3)
    codes = true_codes(ds, np.repeat(characters, poses.shape[1]), poses.ravel())
    test_ids, test_poses, test = _unseen_test_frames(ds)
    test_codes = true_codes(ds, np.repeat(test_ids, test_poses.shape[1]), test_poses.ravel())
    decoder = sprites_decoder(
        codes.shape[1], latent_modulation=modulation, palette_colours=palette_colours, filters=filters
    )
    decoder.compile(tf_keras.optimizers.Adam(learning_rate), "mse")
    steps_per_epoch = int(np.ceil(len(frames) / batch_size))
    label = f"decoder ({modulation or 'plain'})"

    def unseen_scores():
        generated = decoder.predict(test_codes, batch_size=500, verbose=0).reshape(test.shape)
        return {
            "mse": experiment._mse(generated, test),
            "style_accuracy": style_scores(ds, generated, test_ids[:, None], test_poses),
        }

    t0 = time.perf_counter()
    history, curve, train_seconds = [], [], 0.0
    every = int(score_every) if score_every else int(epochs)
    for start in range(0, int(epochs), every):
        block = min(every, int(epochs) - start)
        t_block = time.perf_counter()
        history += _fit_epochs(
            decoder, codes, frames, epochs=block, batch_size=batch_size, label=label, progress=progress
        )
        train_seconds += time.perf_counter() - t_block
        curve.append(
            {
                "epoch": start + block,
                "steps": (start + block) * steps_per_epoch,
                "train_mse": history[-1],
                **unseen_scores(),
            }
        )
        if progress and score_every:
            print(
                f"  {label} epoch {start + block}: unseen MSE {curve[-1]['mse']:.5f}, "
                f"{format_style(curve[-1]['style_accuracy'])}",
                flush=True,
            )
    return {
        "modulation": modulation,
        "palette_colours": palette_colours,
        "filters": int(filters),
        "epochs": int(epochs),
        "num_frames": int(len(frames)),
        "batch_size": int(batch_size),
        "steps": int(epochs) * steps_per_epoch,
        "seconds": time.perf_counter() - t0,
        "train_seconds": train_seconds,
        "train_mse_history": history,
        "unseen_characters": {k: v for k, v in curve[-1].items() if k in ("mse", "style_accuracy")},
        **({"curve": curve} if score_every else {}),
    }


def _chosen_context_scale(run_dir: str, cfg, ds) -> float:
    """The context weight a finished run tested at (its ``metrics.json``; chosen on validation
    characters with ``--context-scale-grid``), else the run's setting."""
    path = os.path.join(run_dir, "metrics.json")
    chosen = read_json(path).get("context_scale") if os.path.exists(path) else None
    return float(chosen) if chosen is not None else experiment.run_context_scale(cfg, len(ds.train_characters))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.sprites_diagnostics",
        description="where a trained SPRITES SVGP-VAE loses the characters' style",
    )
    p.add_argument(
        "--run",
        default=None,
        help="output folder of a sprites run (config.json, model checkpoint); required unless --decoder-study-only",
    )
    p.add_argument("--out", default=None, help="default: <run>/diagnostics")
    p.add_argument("--num-characters", type=int, default=None, help="unseen characters to generate (default all)")
    p.add_argument(
        "--scales", type=float, nargs="+", default=None, help="conditioning scales (default 1, 4, 16, N/b, 10 N/b)"
    )
    p.add_argument("--autoencoder-epochs", type=int, default=30, help="0 skips the plain-autoencoder study")
    p.add_argument("--autoencoder-characters", type=int, default=200)
    p.add_argument(
        "--autoencoder-filters",
        type=int,
        default=16,
        help="conv width of the plain autoencoder's encoder and decoder (16: the paper's)",
    )
    p.add_argument(
        "--sensitivity-characters",
        type=int,
        default=60,
        help="unseen characters (x 20 poses) for the metric-sensitivity check",
    )
    p.add_argument(
        "--decoder-study-epochs",
        type=int,
        default=12,
        help="0 skips training the plain and the modulated decoder from true codes",
    )
    p.add_argument(
        "--decoder-modulations",
        nargs="+",
        choices=DECODER_VARIANTS,
        default=["plain", "scale_shift"],
        help="decoders of the true-code study (sprites_decoder's latent_modulation; plain: the paper's)",
    )
    p.add_argument(
        "--decoder-study-filters", type=int, default=16, help="conv width of the true-code decoders (16: the paper's)"
    )
    p.add_argument(
        "--decoder-study-score-every",
        type=int,
        default=None,
        metavar="K",
        help="score the true-code decoders on the unseen characters every K epochs (a learning curve)",
    )
    p.add_argument(
        "--decoder-study-only",
        action="store_true",
        help="run only the true-code decoder study, on the paper's data split (no --run needed)",
    )
    p.add_argument(
        "--palette-colours",
        type=int,
        default=None,
        help="also run the autoencoder and decoder studies with a palette decoder of K colours",
    )
    p.add_argument("--quiet", action="store_true")
    return p


def _decoder_studies(ds, args, seed: int, say) -> dict:
    """The true-code decoder study for every ``--decoder-modulations`` entry (and the palette decoder)."""
    results = {}
    variants = [(None if m == "plain" else m, None) for m in args.decoder_modulations]
    variants += [(None, args.palette_colours)] if args.palette_colours else []
    for modulation, palette in variants:
        r = decoder_study(
            ds,
            modulation=modulation,
            epochs=args.decoder_study_epochs,
            num_characters=args.autoencoder_characters,
            seed=seed,
            palette_colours=palette,
            score_every=args.decoder_study_score_every,
            filters=args.decoder_study_filters,
            progress=not args.quiet,
        )
        label = f"palette{palette}" if palette else (modulation or "plain")
        results[label] = r
        say(
            f"decoder from true codes ({label}, {r['filters']} filters, {r['steps']} steps, "
            f"{r['train_seconds']:.0f} s): unseen MSE "
            f"{r['unseen_characters']['mse']:.5f}, {format_style(r['unseen_characters']['style_accuracy'])}"
        )
    return results


def main(argv: Optional[Sequence[str]] = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.run is None and not args.decoder_study_only:
        parser.error("--run is required (unless --decoder-study-only)")
    if args.decoder_study_epochs < 1 and args.decoder_study_only:
        parser.error("--decoder-study-only needs --decoder-study-epochs >= 1")
    if args.decoder_study_filters < 1:
        parser.error(f"--decoder-study-filters must be a positive integer; got {args.decoder_study_filters}")
    if args.decoder_study_score_every is not None and args.decoder_study_score_every < 1:
        parser.error(f"--decoder-study-score-every must be a positive integer; got {args.decoder_study_score_every}")
    command = command_argv("sprites_diagnostics", argv)
    out = args.out or (os.path.join(args.run, "diagnostics") if args.run else "results/sprites_decoder_study")
    os.makedirs(out, exist_ok=True)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    if args.decoder_study_only:
        cfg = experiment.Config()
        ds = sprites(
            cfg.num_characters,
            seed=cfg.data_seed,
            num_train_characters=cfg.num_train_characters,
            train_poses_per_character=cfg.train_poses_per_character,
            num_context_poses=cfg.num_context_poses,
        )
        t0 = time.perf_counter()
        metrics = {
            "git_commit": git_commit(),
            "argv": command[2:],
            "decoder_from_true_codes": _decoder_studies(ds, args, cfg.seed, say),
        }
        metrics["seconds"] = time.perf_counter() - t0
        write_json(os.path.join(out, "metrics.json"), metrics, argv=command, config=vars(args))
        return metrics
    cfg, ds, train_frames, model = load_run(args.run)
    C, P = ds.train_poses.shape
    n_over_b = C * P / (cfg.characters_per_batch * P)
    scales = args.scales or [1.0, 4.0, 16.0, n_over_b, 10 * n_over_b]
    metrics = {"run": args.run, "git_commit": git_commit(), "num_data_over_batch_size": n_over_b}
    t0 = time.perf_counter()
    metrics["conditioning_scale"] = conditioning_scale_sweep(model, ds, scales, args.num_characters)
    auto = metrics["conditioning_scale"]["autoencoded_targets"]
    say(f"autoencoded true targets (no GP): MSE {auto['test_mse']:.5f}; {format_style(auto['style_accuracy'])}")
    for s, r in metrics["conditioning_scale"]["scales"].items():
        say(
            f"context weighted s = {s}: MSE {r['test_mse']:.5f}, shrinkage {r['shrinkage']:.3f}, "
            f"correlation {r['correlation']:.3f}; {format_style(r['style_accuracy'])}"
        )
    if getattr(model, "decoder_gp_columns", ()):
        scale = _chosen_context_scale(args.run, cfg, ds)
        metrics["gp_code_ablation"] = ab = gp_code_ablation(model, ds, scale, args.num_characters)
        for name in ("gp_code", "prior_mean_code", "other_character_code"):
            say(
                f"decoded at [{name.replace('_', ' ')}, style, pose] (s = {scale:g}): MSE {ab[name]['test_mse']:.5f}, "
                f"{format_style(ab[name]['style_accuracy'])}"
            )
    metrics["training_posterior"] = tp = training_posterior(model, ds, train_frames, seed=cfg.seed)
    say(
        f"training batch ({tp['num_characters']} characters) through the GP posterior: predictive variance "
        f"{tp['mean_predictive_variance']:.4g} vs variance of the means {tp['variance_of_predictive_means']:.4g}; "
        f"decoded mean MSE {tp['decoded_mean']['mse']:.5f}, {format_style(tp['decoded_mean']['style_accuracy'])}"
    )
    metrics["decoder_activations"] = act = decoder_activation_scales(model, ds, train_frames)
    say(
        "decoder layers' mean |output| on a training batch: "
        + ", ".join(f"{r['layer']} {r['mean_abs']:.3g}" for r in act["layers"])
        + f"; saturated output pixels {act['saturated']:.3f}"
    )
    metrics["pose_constant_fit_learned"] = pose_constant_fit(experiment.pose_table_vectors(model))
    say(
        f"R^2 of a pose-constant function in the span of the learned unit pose vectors: "
        f"{metrics['pose_constant_fit_learned']:.3f}"
    )
    metrics["encoder_probe"] = encoder_probe(model, ds, train_frames, seed=cfg.seed)
    say(f"linear probe from encoder means of training frames: {format_style(metrics['encoder_probe'])}")
    metrics["metric_sensitivity"] = metric_sensitivity(ds, num_characters=args.sensitivity_characters)
    for kind in ("blur", "mix_with_mean"):
        for k, r in metrics["metric_sensitivity"][kind].items():
            say(f"true frames, {kind} {k}: MSE {r['mse']:.4f}; {format_style(r['style_accuracy'])}")
    r = metrics["metric_sensitivity"]["average_colours"]
    say(f"true shapes with average colours: MSE {r['mse']:.4f}; {format_style(r['style_accuracy'])}")
    if args.autoencoder_epochs > 0:
        metrics["autoencoder"] = autoencoder_study(
            ds,
            epochs=args.autoencoder_epochs,
            filters=args.autoencoder_filters,
            num_characters=args.autoencoder_characters,
            seed=cfg.seed,
            progress=not args.quiet,
        )
        runs = [("autoencoder", metrics["autoencoder"])]
        if args.palette_colours:
            metrics["autoencoder_palette"] = autoencoder_study(
                ds,
                epochs=args.autoencoder_epochs,
                num_characters=args.autoencoder_characters,
                seed=cfg.seed,
                palette_colours=args.palette_colours,
                progress=not args.quiet,
            )
            runs.append((f"palette ({args.palette_colours} colours) autoencoder", metrics["autoencoder_palette"]))
        for label, a in runs:
            say(
                f"{label} ({a['steps']} steps): training characters MSE {a['training_characters']['mse']:.5f}, "
                f"{format_style(a['training_characters']['style_accuracy'])}; unseen MSE "
                f"{a['unseen_characters']['mse']:.5f}, {format_style(a['unseen_characters']['style_accuracy'])}"
            )
    if args.decoder_study_epochs > 0:
        metrics["decoder_from_true_codes"] = _decoder_studies(ds, args, cfg.seed, say)
    metrics["seconds"] = time.perf_counter() - t0
    write_json(os.path.join(out, "metrics.json"), metrics, argv=command, config=vars(args))
    return metrics


if __name__ == "__main__":
    main(sys.argv[1:])
