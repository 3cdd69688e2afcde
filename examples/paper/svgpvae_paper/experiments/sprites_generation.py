"""Generating unseen SPRITES characters from their context frames, and the outputs of a run.

* :func:`generate` -- the SVGP-VAE: GP posterior on the context frames (weighted ``scale``),
  decoded at the target poses;
* :func:`choose_context_scale` -- the weight ``scale`` chosen on held-out validation characters;
* :func:`validation_generation` -- the validation characters' generation MSE of either model;
* :class:`EpochSelection` -- the epoch whose model generates the validation characters best, and
  :func:`plot_epoch_selection`, its validation curve beside the training history;
* :func:`generate_cvae` -- the CVAE baseline: decoder at the mean context code, style and pose;
* :func:`nearest_context_frames` -- the copy baseline;
* :func:`plot_generation` -- the grid of truth and generations;
* :func:`pose_table_vectors` -- the learned pose vectors of a model of the experiment.
"""

import textwrap
import time
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.models.cvae import CVAE
from gpflow_svgpvae.posterior import check_scale
from svgpvae_paper.datasets.sprites import character_batches

from .common import pyplot
from .sprites_style import find_transform, reconstruction_style, style_scores, unit_rows

__all__ = [
    "generate",
    "choose_context_scale",
    "validation_generation",
    "EpochSelection",
    "plot_epoch_selection",
    "generate_cvae",
    "nearest_context_frames",
    "plot_generation",
    "pose_table_vectors",
]


# ----------------------------------------------------------------------- generation
def generate(
    model,
    predictor,
    context_frames,
    characters,
    context_poses,
    target_poses,
    *,
    num_samples: Optional[int] = None,
    seed: int = 0,
    characters_per_chunk: int = 16,
    scale: float = 1.0,
) -> Dict[str, np.ndarray]:
    """Frames of unseen characters at target poses, each conditioned on its own context frames.

    :param predictor: the model (condition on the context only) or a posterior of it
        (condition on that posterior's data and the context), anything with
        ``predict_latents(Xnew, data, scale=...)``. A decoder that reads GP inputs
        (``decoder_gp_columns``) gets those of the target poses.
    :param scale: the weight of each context frame (:func:`~gpflow_svgpvae.posterior.check_scale`).
    :param context_frames: ``[V, Qc, H, W, C]`` float frames; ``characters [V]`` their ids;
        ``context_poses [V, Qc]``, ``target_poses [V, T]`` pose ids.
    :return: ``{"mean": [V, T, H, W, C]}`` (decoded latent mean), ``"z_mean"``, ``"z_var"``,
        ``"samples": [S, V, T, H, W, C]`` (decoded latent samples, numpy draws seeded by ``seed``),
        and for a decoder that reads GP inputs the ``"condition": [V, T, C]`` it read.
    """
    characters = np.asarray(characters, dtype=np.float64)
    out = {"mean": [], "z_mean": [], "z_var": [], "samples": [], "condition": []}
    gen = np.random.default_rng(seed)

    def rows(ids, poses):  # [v, n, 2] raw inputs [character id, pose id]
        return np.stack([np.broadcast_to(ids[:, None], poses.shape), poses], -1).astype(np.float64)

    def decode(Z, condition):
        return model.decode_predictions(tf.constant(Z), tf.zeros_like(Z), condition=condition).numpy()

    for start in range(0, len(characters), int(characters_per_chunk)):
        sl = slice(start, min(len(characters), start + int(characters_per_chunk)))
        ids = characters[sl]
        context = (rows(ids, np.asarray(context_poses[sl])), np.asarray(context_frames[sl], np.float32))
        z_mean, z_var, gp_inputs = predictor.predict_latents(
            rows(ids, np.asarray(target_poses[sl])), context, scale=scale
        )
        z_mean, z_var = z_mean.numpy(), z_var.numpy()
        condition = model.decoder_condition(gp_inputs)  # [v, T, C] or None
        out["mean"].append(decode(z_mean, condition))
        out["z_mean"].append(z_mean)
        out["z_var"].append(z_var)
        if condition is not None:
            out["condition"].append(condition.numpy())
        if num_samples:
            eps = gen.standard_normal((int(num_samples),) + z_mean.shape)
            out["samples"].append(decode(z_mean[None] + np.sqrt(np.maximum(z_var, 0.0))[None] * eps, condition))
    result = {key: np.concatenate(vals, axis=0) for key, vals in out.items() if key != "samples" and vals}
    if num_samples:
        result["samples"] = np.concatenate(out["samples"], axis=1)
    return result


def _validation_frames(ds):
    """``context [V, ...], target [V, ...], (characters, context poses, target poses)`` of the validation
    characters (float32 frames); refused when the dataset has none."""
    if len(ds.validation_characters) == 0:
        raise ValueError(
            "the dataset has no validation characters; build it with sprites(..., num_validation_characters=V)"
        )
    rows = (ds.validation_characters, ds.validation_context_poses, ds.validation_target_poses)
    return ds.validation_context_frames(dtype=np.float32), ds.validation_target_frames(dtype=np.float32), rows


def choose_context_scale(model, ds, scales: Sequence[float], *, characters_per_chunk: int = 16) -> dict:
    """The context weight ``s`` among ``scales`` whose generations of the *validation* characters
    (``ds.validation_*``, held out of training and test) have the smallest MSE per pixel of the
    decoded latent mean: the test's protocol (36 context frames, the other poses generated) on
    characters that the test does not score.

    :param ds: a :class:`~svgpvae_paper.datasets.sprites.SpritesDataset` with validation characters
        (``sprites(..., num_validation_characters=V)``).
    :return: ``{"chosen", "scales", "validation_mse", "validation_style_accuracy", "num_characters", ...}``.
    :raises ValueError: without validation characters, or with no or non-positive ``scales``.
    """
    scales = [float(s) for s in np.atleast_1d(np.asarray(scales, dtype=np.float64))]
    if not scales:
        raise ValueError("scales must name at least one context weight")
    for s in scales:
        check_scale(s)
    V = len(ds.validation_characters)
    t0 = time.perf_counter()
    context, target, rows = _validation_frames(ds)
    mse, style = [], []
    for s in scales:
        mean = generate(model, model, context, *rows, scale=s, characters_per_chunk=characters_per_chunk)["mean"]
        mse.append(_mse(mean, target))
        style.append(style_scores(ds, mean, ds.validation_characters[:, None], ds.validation_target_poses))
    return {
        "description": "context weight s with the smallest MSE (decoded mean) on held-out validation characters "
        "(not training, not test), each generated from its own context frames",
        "num_characters": int(V),
        "scales": scales,
        "validation_mse": mse,
        "validation_style_accuracy": style,
        "chosen": scales[int(np.argmin(mse))],
        "seconds": time.perf_counter() - t0,
    }


def validation_generation(model, ds, scales: Optional[Sequence[float]] = None) -> dict:
    """The generation MSE of the validation characters: the SVGP-VAE's at each of ``scales``
    (:func:`choose_context_scale`), or the CVAE's (:func:`generate_cvae`; ``scales`` must be
    ``None``), in the same form (``"validation_mse"`` a list, ``"chosen"`` the weight, ``None`` for the CVAE)."""
    if not isinstance(model, CVAE):
        if scales is None:
            raise ValueError("the SVGP-VAE's validation generation needs the context weights 'scales'")
        return choose_context_scale(model, ds, scales)
    if scales is not None:
        raise ValueError("the CVAE has no context weight; pass scales=None")
    t0 = time.perf_counter()
    context, target, rows = _validation_frames(ds)
    mean = generate_cvae(model, context, *rows)["mean"]
    return {
        "num_characters": int(len(ds.validation_characters)),
        "scales": None,
        "validation_mse": [_mse(mean, target)],
        "validation_style_accuracy": [
            style_scores(ds, mean, ds.validation_characters[:, None], ds.validation_target_poses)
        ],
        "chosen": None,
        "seconds": time.perf_counter() - t0,
    }


class EpochSelection:
    """The model of the epoch whose validation characters are generated best
    (:func:`validation_generation`, the smallest MSE over ``scales``), checkpointed to ``path``.

    Call it after every epoch (0-based ``epoch``); it scores every ``every`` epochs and after the
    last of ``epochs``. :meth:`restore` loads the best epoch's parameters into the model.
    ``record`` holds the validation curve, the weight chosen at each scored epoch and the best epoch.
    """

    def __init__(self, model, ds, scales: Optional[Sequence[float]], *, every: int, epochs: int, path: str):
        if int(every) < 1:
            raise ValueError(f"every must be a positive integer; got {every}")
        self.model, self.ds, self.scales, self.every, self.epochs, self.path = (
            model,
            ds,
            scales,
            int(every),
            int(epochs),
            path,
        )
        self.best_choice: dict = {}
        self.record = {
            "description": "every eval_every epochs (and after the last) the generation MSE of the validation "
            "characters (decoded mean; the SVGP-VAE's at the best of the context weights 'scales'); "
            "the test scores the model of the epoch with the smallest one",
            "eval_every": self.every,
            "scales": None if scales is None else [float(v) for v in scales],
            "num_characters": int(len(ds.validation_characters)),
            "epochs": [],
            "validation_mse": [],
            "chosen_scale": [],
            "seconds": [],
            "best_epoch": None,
            "best_validation_mse": float("inf"),
        }

    def __call__(self, epoch: int) -> Optional[dict]:
        """Score the model after 0-based ``epoch`` if due; returns the :func:`validation_generation` result or None."""
        done = int(epoch) + 1
        if done % self.every and done != self.epochs:
            return None
        choice = validation_generation(self.model, self.ds, self.scales)
        value = min(choice["validation_mse"])
        for key, item in (
            ("epochs", done),
            ("validation_mse", value),
            ("chosen_scale", choice["chosen"]),
            ("seconds", choice["seconds"]),
        ):
            self.record[key].append(item)
        if value < self.record["best_validation_mse"]:
            self.record.update(best_epoch=done, best_validation_mse=value)
            self.best_choice = choice
            tf.train.Checkpoint(model=self.model).write(self.path)
        return choice

    def restore(self) -> None:
        """Load the best epoch's parameters (nothing to do when it is the last scored epoch)."""
        if self.record["best_epoch"] is None:
            raise ValueError("no epoch has been scored yet")
        if self.record["best_epoch"] != self.record["epochs"][-1]:
            tf.train.Checkpoint(model=self.model).read(self.path).expect_partial()


def svgpvae_variants(model, cfg, ds, train_frames, context, test_rows, target, generated, context_scale: float):
    """What only the SVGP-VAE has beside generation from the context (the CVAE has no posterior):
    the context weighted s = 1, the whole training set plus the context, and reconstructions of
    training frames (no GP: where the style is lost). Returns the generated means by variant, their
    metrics, and the reconstruction diagnostic."""
    generated_s1 = generated if context_scale == 1.0 else generate(model, model, context, *test_rows, seed=cfg.seed)
    t0 = time.perf_counter()
    train_posterior = model.posterior(
        character_batches(
            ds.train_characters,
            ds.train_poses,
            train_frames,
            characters_per_batch=cfg.characters_per_batch,
            shuffle=False,
        )
    )
    with_train = generate(model, train_posterior, context, *test_rows, num_samples=1, seed=cfg.seed)
    extra = {
        "given_context_scale_1": {
            "description": "each test character conditioned on its 36 context frames with scale s = 1",
            "test_mse_mean": _mse(generated_s1["mean"], target),
        },
        "train_and_context": {
            "description": "each test character conditioned on the whole training set and its 36 context frames",
            "test_mse_mean": _mse(with_train["mean"], target),
            "test_mse_sample": _mse(with_train["samples"][0], target),
            "eval_seconds": time.perf_counter() - t0,
        },
    }
    t0 = time.perf_counter()
    reconstruction = reconstruction_style(
        model, ds, train_frames, num_frames=cfg.num_reconstruction_frames, seed=cfg.seed
    )
    reconstruction["seconds"] = time.perf_counter() - t0
    variants = {"given_train_and_context": with_train["mean"], "given_context_scale_1": generated_s1["mean"]}
    return variants, extra, reconstruction


def generate_cvae(
    model: CVAE,
    context_frames,
    characters,
    context_poses,
    target_poses,
    *,
    num_samples: Optional[int] = None,
    seed: int = 0,
    characters_per_chunk: int = 16,
) -> Dict[str, np.ndarray]:
    """The CVAE baseline's frames of unseen characters (arguments as :func:`generate`): the decoder
    at ``[mean code of the character's context frames, style of the context frames, target pose
    vector]``; ``"samples"`` decode code samples (the context encodings' mean variance).

    :return: ``{"mean": [V, T, H, W, C]}`` and, with ``num_samples``, ``"samples": [S, V, T, H, W, C]``.
    """
    characters = np.asarray(characters, dtype=np.float64)
    means, samples = [], []
    for start in range(0, len(characters), int(characters_per_chunk)):
        sl = slice(start, min(len(characters), start + int(characters_per_chunk)))
        ids, cp, tp = characters[sl], np.asarray(context_poses[sl]), np.asarray(target_poses[sl])
        Xc = np.stack([np.repeat(ids, cp.shape[1]), cp.ravel()], -1)
        Xq = np.stack([np.repeat(ids, tp.shape[1]), tp.ravel()], -1)
        Yc = np.asarray(context_frames[sl], np.float32).reshape((-1,) + context_frames.shape[2:])
        out = model.predict_y(Xq, (Xc, Yc), num_samples=num_samples, seed=seed + start)
        mean = (out[0] if num_samples else out).numpy()
        means.append(mean.reshape(tp.shape + mean.shape[1:]))
        if num_samples:
            draws = out[1].numpy()
            samples.append(draws.reshape((draws.shape[0],) + tp.shape + draws.shape[2:]))
    result = {"mean": np.concatenate(means, axis=0)}
    if num_samples:
        result["samples"] = np.concatenate(samples, axis=1)
    return result


# -------------------------------------------------------------------------- outputs
def plot_generation(path: str, truth: np.ndarray, generated, context: Optional[np.ndarray] = None, title: str = ""):
    """Grid: per character a row of ground-truth target frames and a row per generation
    (and, if given, a row of context frames above them).

    :param generated: ``[V, T, H, W, C]``, or a dict ``{label: [V, T, H, W, C]}``.
    """
    if not isinstance(generated, dict):
        generated = {"generated": generated}
    plt = pyplot()
    V, T = truth.shape[:2]
    rows, labels = [], []
    for v in range(V):
        if context is not None:
            rows.append(context[v, :T])
            labels.append(f"#{v} context")
        rows.append(truth[v])
        labels.append(f"#{v} truth")
        for name, images in generated.items():
            rows.append(images[v])
            labels.append(f"#{v} {name}")
    fig, axes = plt.subplots(len(rows), T, figsize=(T * 0.8 + 1.4, len(rows) * 0.8 + 0.4), squeeze=False)
    for r, (row, label) in enumerate(zip(rows, labels)):
        for c in range(T):
            ax = axes[r, c]
            if c < row.shape[0]:
                ax.imshow(np.clip(row[c], 0.0, 1.0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
        axes[r, 0].set_ylabel(label, rotation=0, ha="right", va="center", fontsize=7)
    width, height = fig.get_size_inches()
    lines = textwrap.wrap(title, width=int(width * 14)) if title else []
    if lines:
        fig.suptitle("\n".join(lines), fontsize=8, y=1 - 0.05 / height, va="top")
    fig.subplots_adjust(
        left=1.4 / width,
        right=0.995,
        bottom=0.05 / height,
        top=1 - (0.1 + 0.16 * len(lines)) / height,
        wspace=0.04,
        hspace=0.04,
    )
    fig.savefig(path, dpi=100)
    plt.close(fig)


def pose_table_vectors(model) -> np.ndarray:
    """The learned pose vectors ``[72, Q]`` of a model built by :func:`build_model`."""
    table = find_transform(model, ObjectVectors)
    return np.asarray(table(tf.constant(np.arange(72, dtype=np.float64)[:, None])))


def nearest_context_frames(context_frames, context_poses, target_poses, pose_vectors) -> np.ndarray:
    """Baseline: for each target pose, the character's context frame whose pose vector is the
    closest in cosine similarity (the SPRITES kernel's pose similarity).

    :param context_frames: ``[V, Qc, H, W, C]``; ``context_poses [V, Qc]``, ``target_poses [V, T]`` pose ids.
    :return: ``[V, T, H, W, C]``.
    """
    unit = unit_rows(pose_vectors)
    similarity = np.einsum("vtq,vcq->vtc", unit[np.asarray(target_poses)], unit[np.asarray(context_poses)])
    nearest = np.argmax(similarity, axis=-1)  # [V, T]
    return np.take_along_axis(context_frames, nearest[:, :, None, None, None], axis=1)


def _mse(a, b) -> float:
    return float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))


def plot_epoch_selection(
    path: str, selection: dict, history: Dict[str, Sequence[float]], kappa_squared: float, title: str = ""
):
    """The validation curve of an :class:`EpochSelection` (``selection``: its ``record``) beside the
    training history: validation generation MSE per scored epoch (best epoch marked), training MSE
    (GECO's constraint + ``kappa_squared``) and GECO's lambda per epoch."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    epochs = np.asarray(selection["epochs"])
    left.plot(epochs, selection["validation_mse"], "o-", label="validation generation MSE (given the context)")
    if "geco_constraint" in history:
        train_mse = np.asarray(history["geco_constraint"]) + kappa_squared
        left.plot(np.arange(1, len(train_mse) + 1), train_mse, "-", color="grey", label="training MSE (epoch mean)")
        left.axhline(kappa_squared, color="grey", ls=":", lw=1, label=r"GECO $\kappa^2$")
    if selection.get("best_epoch") is not None:
        left.axvline(selection["best_epoch"], color="C3", ls="--", lw=1, label=f"best epoch {selection['best_epoch']}")
    left.set_xlabel("epoch")
    left.set_ylabel("MSE per pixel")
    left.legend(fontsize=7)
    if "geco_lambda" in history:
        lam = np.asarray(history["geco_lambda"])
        right.semilogy(np.arange(1, len(lam) + 1), lam, "-", color="C2")
        right.set_ylabel(r"GECO $\lambda$")
    right.set_xlabel("epoch")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
