r"""Rotated-MNIST figures of Jazbec et al. (2021) beyond Table 1.

Usage::

    python -m svgpvae_paper.experiments.rotated_mnist_figures <command> [--quick] [--epochs E]
        [--seeds S ...] [--out DIR] [--cache DIR] ...

Commands (each writes ``<command>.png``, ``<command>.csv`` and ``<command>.json``
-- the configuration, the git commit, the numbers of every run and the summary --
to ``--out``, default ``results/rotated_mnist_figures/<command>``, or
``.../<command>_quick`` with ``--quick``):

``runtime``
    Test MSE against seconds per epoch: SVGP-VAE for ``m`` in {16, 32, 48, 64}
    inducing points (``m / 16`` per angle) and GPPVAE for object-vector
    dimensions ``Q`` in {8, 16, 24, 32}. **GPPVAE's rank.** In
    :class:`~gpflow_svgpvae.models.GPPVAE` the kernel is ``V V^T + alpha I``
    with ``V_i = x_{o(i)} (x) (L_v)_{v(i),:}`` (object vector Kronecker the
    Cholesky row of the view kernel on the 16 angles), so its low-rank
    dimension is ``H = Q * 16``: it is governed by the object-vector dimension
    ``Q`` (the ``M`` of the paper's code, "dimension of GP-LVM vectors"). The
    command therefore varies ``Q``, i.e. ``H = 16 Q`` in {128, 256, 384, 512};
    the paper's values {8, 16, 24, 32} are read as ``Q``. The JSON records
    ``Q`` and ``H`` of every GPPVAE run.
``digits``
    Test MSE and seconds per epoch against the number of digits
    (N = 4050 x digits): digit sets (3), (1, 3, 6), (1, 3, 6, 7, 9) and
    (0, ..., 9), i.e. the paper's 1, 3, 5 and 10 digits (our choice of
    classes; the block of each digit is the same whatever the other digits).
    SVGP-VAE; add GPPVAE with ``--models svgpvae,gppvae``.
``batch_size``
    Test MSE (and seconds per epoch) against the batch size
    b in {64, 128, 256, 512}, SVGP-VAE.
``num_inducing``
    Test MSE (and seconds per epoch) against m in {16, 32, 64, 96}, SVGP-VAE.
``bias``
    Relative bias of the minibatch estimator of the inducing posterior mean
    over training, for m in {16, 32, 64, 96} (:func:`inducing_mean_bias`):
    after the epochs in ``--bias-epochs`` (0: the initial model), the
    full-data mean ``mu`` (all N training points, ``s = 1``) is compared with
    the average of the minibatch means ``mu_b`` (``s = N / b``) over one pass
    of seeded random minibatches of the training batch size,
    ``||avg_b mu_b - mu||_F / ||mu||_F`` (``--bias-passes P`` averages over P
    passes: one pass's average also carries the estimator's spread / number of
    batches). The same average of the minibatch precisions ``Sigma_b``
    reproduces the full-data ``Sigma`` exactly (recorded as a check, ~1e-16):
    ``Sigma_b`` is unbiased, ``mu_b`` is not.
``tsne``
    t-SNE (:class:`sklearn.manifold.TSNE`) of the SVGP-VAE encoder means of
    the training images of a multi-digit run (default digits 1, 3, 6, 7, 9;
    at most ``--tsne-max-points`` images, a seeded subsample), two panels:
    coloured by digit and by angle. The JSON also holds the 10-nearest-neighbour
    digit agreement in the latent space and in the embedding.
``convergence``
    Test MSE of the SVGP-VAE (decoded mean and decoded sample, the current
    model, no model selection) after every ``--curve-every`` epochs (default
    10) of a ``--epochs`` run, mean +- sd over seeds: how fast an epoch
    converges (issue 15). Recorded during training (``on_epoch``); its runs
    live in ``<cache>/convergence/`` with the records in ``records/``.
``init``
    PCA against random (N(0, 1.5^2)) initialisation of the object vectors, for
    SVGP-VAE and GPPVAE: test MSE mean +- sd over seeds, in ``init.md`` and
    ``init.csv`` beside the paper's numbers (SVGP-VAE 0.0251 vs 0.0272;
    GPPVAE 0.0370 vs 0.0374). ``--object-scales paper,0.1`` adds initial scales (PCA
    scores rescaled to that RMS, random vectors of that sd). Each run reports the
    eval-selected checkpoint (the protocol) and the model of the last epoch: the eval
    instances are placed by an affine map from the *initial* vectors, which carries no
    information when these are random, so the eval selection is blind there.

All other settings are Table 1's (:class:`~svgpvae_paper.experiments.rotated_mnist.Config`:
digit 3, L = 16, m = 32, Q = 8, b = 256, Adam 1e-3, GECO kappa^2 = 0.020,
1000 epochs, 5 seeds, model selection on the eval set every 5 epochs, the test
set scored once); a sweep changes only its own setting.
``--quick``: 12 instances per digit (N = 124 per digit), b = 32, 2 epochs, 1 seed, two values per sweep
(a smoke run of about a minute per command on a free 2-core machine).

Runs and the cache (the machinery is in :mod:`~svgpvae_paper.experiments.rotated_mnist_sweeps`;
``bias`` and ``convergence`` are in :mod:`~svgpvae_paper.experiments.rotated_mnist_records`).
Every training run goes through
:func:`~svgpvae_paper.experiments.rotated_mnist.run_cached` with
``cfg.out = --cache`` (default ``results/rotated_mnist_figures/runs_cache``,
shared by all commands): each finished (model, seed, settings) run is saved
under ``<cache>/runs/`` keyed by a hash of its settings, so an interrupted
sweep resumes and runs shared between figures (e.g. SVGP-VAE m = 32, b = 256,
digit 3, PCA init, which is in ``runtime``, ``batch_size``,
``num_inducing``, ``digits`` and ``init``) are trained once. Two processes
may work through the same sweep (one per core, same ``--cache``): a run is
claimed while it trains (``<run>.claim``), the other process trains the next
unclaimed run and later reuses the claimed one once it is saved (the ``bias``,
``convergence`` and ``tsne`` runs are not claimed). Runs of
``table1`` with the same settings can be reused by pointing ``--cache`` at
its ``--out``. Two exceptions need more than a finished run:

* ``bias`` records during training (``on_epoch``), which a reused run cannot
  replay; its runs live in ``<cache>/bias/`` with the recorded values in
  ``<cache>/bias/records/`` (keyed like the run). A run found without a
  complete record (e.g. a crash between the two writes, or new
  ``--bias-epochs``) is trained again.
* ``tsne`` needs the trained model: ``run_cached(..., artifacts=...)`` keeps
  the encoder means of the trained model with the run
  and caches the run's result and the encoder means in ``<cache>/tsne/``.

``run_cached`` keeps each run's best-eval checkpoint in a folder named by the
run's settings (``<cache>/checkpoints/<run key>/``).

A finished run is a ``.json`` (the numbers) and a ``.npz`` (generated images).
The sweeps and ``bias`` need only the numbers, so a ``.json`` alone, such as a
run record committed under ``docs/results/<figure>/runs/``, copied into
``<cache>/runs/`` (``<cache>/bias/runs/`` and ``records/`` for ``bias``), is
reused as it is: a figure can gain seeds without training its old ones again.

Timings (``seconds_per_epoch``) are the median wall time of a training epoch
after the first, on whatever machine runs the command; they are comparable
only between runs made under the same load. A sweep whose runs shared the cores
with other runs cannot be plotted against its own times; ``runtime`` and
``digits`` with ``--timing-epochs K`` time every setting again after the sweep,
in fresh runs of K epochs made one after the other in this process (first seed,
no evaluation until the last epoch), and plot those (``timing`` in the JSON,
with the load average before and after each; ``seconds_per_epoch_timed`` in the
summary).
"""

import argparse
import os
import sys
import time
from dataclasses import asdict, replace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from svgpvae_paper.estimators import inducing_mean_bias
from svgpvae_paper.experiments import rotated_mnist as rm

from .common import command_argv, git_commit, is_positive_number, mean_sd, pyplot, write_csv, write_json
from .rotated_mnist_records import PAPER_MSE, cmd_bias, cmd_convergence
from .rotated_mnist_sweeps import (
    NUM_ANGLES,
    QUICK,
    QUICK_CONFIG,
    SweepContext,
    Sweeps,
    attach_timings,
    errorbar,
    per_angle,
    run_row,
    run_sweep,
    settings_note,
    summarise_rows,
    time_settings,
)

__all__ = [
    "COMMANDS",
    "Sweeps",
    "QUICK",
    "QUICK_CONFIG",
    "PAPER_INIT",
    "inducing_mean_bias",
    "run_sweep",
    "main",
]

COMMANDS = ("runtime", "digits", "batch_size", "num_inducing", "bias", "tsne", "init", "convergence")
#: Paper, "PCA vs random init" (test MSE, mean over 5 runs).
PAPER_INIT = {"svgpvae": {"pca": 0.0251, "random": 0.0272}, "gppvae": {"pca": 0.0370, "random": 0.0374}}


# ---------------------------------------------------------------------- commands
def cmd_runtime(ctx: SweepContext, out: str) -> dict:
    sw = ctx.sweeps
    specs = [("svgpvae", {"num_inducing_per_angle": per_angle(m)}, {"setting": f"m={m}"}) for m in sw.runtime_m]
    specs += [
        ("gppvae", {"object_dim": int(q)}, {"setting": f"Q={q} (H={NUM_ANGLES * q})"}) for q in sw.runtime_object_dims
    ]
    rows = run_sweep(ctx, specs, "runtime runs")
    for r in rows:
        r["gppvae_rank_H"] = NUM_ANGLES * r["object_dim"] if r["model"] == "gppvae" else None
    summary = summarise_rows(rows, ("model", "setting"))
    timed, time_key = _timings(ctx, specs, summary, ("model", "setting"), "runtime timing")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for c, name in enumerate(("svgpvae", "gppvae")):
        group = [s for s in summary if s["model"] == name]
        x = [s[time_key] for s in group]
        y = [s["test_mse_mean"]["mean"] for s in group]
        sd = [s["test_mse_mean"]["sd"] for s in group]
        ax.errorbar(x, y, yerr=sd, marker="o", capsize=3, color=f"C{c}", label=rm.LABELS[name])
        for s, xi, yi in zip(group, x, y):
            ax.annotate(s["setting"], (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel(_time_label(timed))
    ax.set_ylabel("test MSE (decoded mean)")
    fig.suptitle(
        "Rotated MNIST: MSE vs runtime (mean ± sd over seeds)\n"
        + settings_note(ctx.base, skip=("m", "Q"))
        + "\n"
        + _timing_note(ctx, timed),
        fontsize=8,
    )
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "runtime.png"), dpi=130)
    plt.close(fig)
    note = (
        "GPPVAE's kernel V V^T + alpha I has rank H = Q x 16 (object vector (x) view-kernel Cholesky row), "
        "so the GPPVAE sweep varies the object-vector dimension Q; H = 16 Q."
    )
    return {
        "rows": rows,
        "summary": summary,
        "timing": timed,
        "gppvae_rank_note": note,
        "svgpvae_m": list(sw.runtime_m),
        "gppvae_object_dims": list(sw.runtime_object_dims),
        "gppvae_rank_H": [NUM_ANGLES * int(q) for q in sw.runtime_object_dims],
    }


def cmd_digits(ctx: SweepContext, out: str) -> dict:
    sw = ctx.sweeps
    specs = [
        (name, {"digits": tuple(int(d) for d in ds)}, {"num_digits": len(ds)})
        for ds in sw.digit_sets
        for name in sw.digits_models
    ]
    rows = run_sweep(ctx, specs, "digits runs")
    summary = summarise_rows(rows, ("model", "num_digits", "digits"))
    timed, time_key = _timings(ctx, specs, summary, ("model", "num_digits"), "digits timing")
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for c, name in enumerate(sw.digits_models):
        group = [s for s in summary if s["model"] == name]
        errorbar(ax1, group, "num_digits", rm.LABELS[name], color=f"C{c}")
        ax2.plot(
            [s["num_data"] for s in group], [s[time_key] for s in group], "o-", color=f"C{c}", label=rm.LABELS[name]
        )
    ax1.set_xlabel("number of digits")
    ax1.set_ylabel("test MSE (decoded mean)")
    ax1.set_xticks([len(ds) for ds in sw.digit_sets])
    ax2.set_xlabel("number of training images N")
    ax2.set_ylabel(_time_label(timed))
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
    fig.suptitle(
        "Rotated MNIST: scaling with the number of digits\n"
        + settings_note(ctx.base, skip=("digits",))
        + "; digit sets "
        + " | ".join(",".join(map(str, ds)) for ds in sw.digit_sets)
        + "\n"
        + _timing_note(ctx, timed),
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(os.path.join(out, "digits.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "summary": summary, "timing": timed, "digit_sets": [list(ds) for ds in sw.digit_sets]}


def _timings(ctx: SweepContext, specs, summary: List[dict], keys: Sequence[str], desc: str) -> Tuple[List[dict], str]:
    """``--timing-epochs``: time every setting again, back to back, and attach the times to ``summary``;
    returns the timings and the summary key of the times to plot."""
    if not ctx.sweeps.timing_epochs:
        return [], "seconds_per_epoch"
    timed = time_settings(ctx, specs, ctx.sweeps.timing_epochs, desc)
    attach_timings(summary, timed, keys)
    return timed, "seconds_per_epoch_timed"


def _time_label(timed: List[dict]) -> str:
    return "seconds per epoch (timed separately)" if timed else "seconds per epoch (the runs' own)"


def _timing_note(ctx: SweepContext, timed: List[dict]) -> str:
    """One line for the figure's title: how the plotted times were made."""
    if not timed:
        return "times: the runs' own medians, under whatever load they ran"
    loads = [t["load_average_before"] for t in timed]
    threads = timed[0]["intra_op_threads"] or "all"
    return (
        f"times: {ctx.sweeps.timing_epochs}-epoch runs back to back, {threads} threads, "
        f"load average {min(loads):.1f}-{max(loads):.1f} before each"
    )


def _one_setting_figure(
    ctx: SweepContext, out: str, command: str, rows: List[dict], x_key: str, xlabel: str, skip: Sequence[str]
):
    summary = summarise_rows(rows, ("model", x_key))
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    errorbar(ax1, summary, x_key, "SVGP-VAE", color="C0")
    ax1.axhline(PAPER_MSE["svgpvae"], color="k", ls=":", label="paper, m=32, b=256 (Table 1)")
    ax2.plot([s[x_key] for s in summary], [s["seconds_per_epoch"] for s in summary], "o-", color="C0")
    for ax in (ax1, ax2):
        ax.set_xlabel(xlabel)
        ax.set_xticks([s[x_key] for s in summary])
    ax1.set_ylabel("test MSE (decoded mean)")
    ax2.set_ylabel("seconds per epoch (this machine)")
    ax1.legend(fontsize=8)
    fig.suptitle(
        f"Rotated MNIST: SVGP-VAE vs {xlabel} (mean ± sd over seeds)\n" + settings_note(ctx.base, skip), fontsize=8
    )
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{command}.png"), dpi=130)
    plt.close(fig)
    return summary


def cmd_batch_size(ctx: SweepContext, out: str) -> dict:
    specs = [("svgpvae", {"batch_size": int(b)}, {}) for b in ctx.sweeps.batch_sizes]
    rows = run_sweep(ctx, specs, "batch_size runs")
    summary = _one_setting_figure(ctx, out, "batch_size", rows, "batch_size", "batch size b", ("b",))
    return {"rows": rows, "summary": summary, "batch_sizes": list(ctx.sweeps.batch_sizes)}


def cmd_num_inducing(ctx: SweepContext, out: str) -> dict:
    specs = [("svgpvae", {"num_inducing_per_angle": per_angle(m)}, {}) for m in ctx.sweeps.m_values]
    rows = run_sweep(ctx, specs, "num_inducing runs")
    summary = _one_setting_figure(ctx, out, "num_inducing", rows, "m", "number of inducing points m", ("m",))
    return {"rows": rows, "summary": summary, "m_values": list(ctx.sweeps.m_values)}


# --------------------------------------------------------------------------- bias
# --------------------------------------------------------------------------- t-SNE
def _tsne_latents(ctx: SweepContext, cfg: rm.Config, data: rm.Data, seed: int) -> Tuple[dict, np.ndarray]:
    """The trained run's result and the encoder means ``[N, L]`` of its training images (cached in
    ``<cache>/tsne/``, beside the run)."""

    def latents(model) -> Dict[str, np.ndarray]:
        means, _ = model.encode_all(data.Y_train)
        return {"latents": means.numpy()}

    cfg = replace(cfg, out=os.path.join(ctx.cache, "tsne"))
    res = rm.run_cached("svgpvae", data, cfg, seed, progress=False, artifacts=latents, argv=ctx.argv)
    res.pop("_images", None)
    return res, res.pop("_artifacts")["latents"]


def _knn_agreement(points: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Fraction of each point's ``k`` nearest neighbours (itself excluded) with its label."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(points) - 1)
    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points)
    return float(np.mean(labels[idx[:, 1:]] == labels[:, None]))


def cmd_tsne(ctx: SweepContext, out: str) -> dict:
    from sklearn.manifold import TSNE

    sw = ctx.sweeps
    seed = ctx.seeds[0]
    cfg = ctx.config(digits=tuple(int(d) for d in sw.tsne_digits))
    data = ctx.data(cfg)
    if ctx.progress:
        print(f"t-SNE: SVGP-VAE on digits {cfg.digits} (N = {data.num_data}), seed {seed}", flush=True)
    res, latents = _tsne_latents(ctx, cfg, data, seed)
    train = data.ds.train
    digits, angles, instance = np.asarray(train.digit), np.asarray(train.angles), np.asarray(train.instance)
    rng = np.random.default_rng([seed, 7])
    n = min(int(sw.tsne_max_points), len(latents))
    pick = np.sort(rng.choice(len(latents), size=n, replace=False))
    perplexity = float(min(sw.tsne_perplexity, (n - 1) / 3.0))
    t0 = time.perf_counter()
    embedding = TSNE(
        n_components=2, perplexity=perplexity, init="pca", max_iter=int(sw.tsne_iterations), random_state=seed
    ).fit_transform(latents[pick].astype(np.float64))
    tsne_seconds = time.perf_counter() - t0
    agreement = {"latent": _knn_agreement(latents[pick], digits[pick]), "tsne": _knn_agreement(embedding, digits[pick])}

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    for c, d in enumerate(sorted(set(digits[pick].tolist()))):
        sel = digits[pick] == d
        ax1.scatter(embedding[sel, 0], embedding[sel, 1], s=3, color=f"C{c}", label=str(d))
    ax1.legend(title="digit", markerscale=4, fontsize=8)
    ax1.set_title("coloured by digit", fontsize=10)
    sc = ax2.scatter(
        embedding[:, 0], embedding[:, 1], s=3, c=np.degrees(angles[pick]), cmap="twilight", vmin=0, vmax=360
    )
    fig.colorbar(sc, ax=ax2, label="angle (degrees)")
    ax2.set_title("coloured by angle", fontsize=10)
    for ax in (ax1, ax2):
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(
        f"t-SNE of SVGP-VAE encoder means of {n} training images (test MSE {res['test_mse_mean']:.4f})\n"
        + settings_note(cfg),
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tsne.png"), dpi=130)
    plt.close(fig)
    rows = [
        {
            "index": int(i),
            "digit": int(digits[i]),
            "angle_degrees": float(np.degrees(angles[i])),
            "instance": int(instance[i]),
            "tsne_x": float(x),
            "tsne_y": float(y),
        }
        for i, (x, y) in zip(pick, embedding)
    ]
    return {
        "rows": rows,
        "run": run_row(res),
        "tsne_digits": list(cfg.digits),
        "num_points": n,
        "perplexity": perplexity,
        "tsne_seconds": tsne_seconds,
        "knn10_digit_agreement": agreement,
    }


# ---------------------------------------------------------------------------- init
def _scale_label(init: str, scale) -> str:
    if scale is None:
        return "raw scores" if init == "pca" else "sd 1.5"
    return f"RMS {scale:g}" if init == "pca" else f"sd {scale:g}"


def cmd_init(ctx: SweepContext, out: str) -> dict:
    sw = ctx.sweeps
    specs = [
        (name, {"object_init": init, "object_scale": scale}, {})
        for name in sw.init_models
        for init in ("pca", "random")
        for scale in sw.init_scales
    ]
    rows = run_sweep(ctx, specs, "init runs")

    def final_and_best(group):
        finals = [r["test_mse_mean_final"] for r in group if r["test_mse_mean_final"] is not None]
        return {
            "test_mse_mean_final": mean_sd(finals) if finals else None,
            "best_epochs": [r["best_epoch"] for r in group],
        }

    summary = summarise_rows(rows, ("model", "object_init", "object_scale"), extra=final_and_best)
    header = [
        "model",
        "object init",
        "initial scale",
        "runs",
        "test MSE (eval-selected)",
        "test MSE (last epoch)",
        "test MSE (sample, eval-selected)",
        "best eval epochs",
        "s/epoch (this machine)",
        "paper MSE",
    ]
    lines = [
        "Rotated MNIST, PCA vs random object-vector initialisation: "
        + settings_note(ctx.base)
        + ". Mean +- sd over seeds; the paper's numbers (raw PCA scores, random N(0, 1.5^2)) are means over "
        "5 runs. Eval-selected: the protocol's checkpoint (lowest eval MSE); last epoch: the final model.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    table = []

    def fmt(stat):
        return "-" if stat is None else f"{stat['mean']:.4f} +- {stat['sd']:.4f}"

    for s in summary:
        paper = PAPER_INIT.get(s["model"], {}).get(s["object_init"]) if s["object_scale"] is None else None
        cells = [
            rm.LABELS[s["model"]],
            s["object_init"],
            _scale_label(s["object_init"], s["object_scale"]),
            str(s["test_mse_mean"]["n"]),
            fmt(s["test_mse_mean"]),
            fmt(s["test_mse_mean_final"]),
            fmt(s["test_mse_sample"]),
            ", ".join(str(e) for e in s["best_epochs"]),
            f"{s['seconds_per_epoch']:.2f}",
            "-" if paper is None else f"{paper:.4f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
        table.append(dict(zip(header, cells)))
    with open(os.path.join(out, "init.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    plt = pyplot()
    settings = [(init, scale) for init in ("pca", "random") for scale in sw.init_scales]
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 * len(settings) * len(sw.init_models)), 4))
    width = 0.8 / len(settings)
    for i, name in enumerate(sw.init_models):
        for j, (init, scale) in enumerate(settings):
            s = next(s for s in summary if (s["model"], s["object_init"], s["object_scale"]) == (name, init, scale))
            x = i + (j - (len(settings) - 1) / 2) * width
            label = f"{init}, {_scale_label(init, scale)}" if i == 0 else None
            ax.bar(
                x,
                s["test_mse_mean"]["mean"],
                width * 0.9,
                yerr=s["test_mse_mean"]["sd"],
                capsize=3,
                color=f"C{j}",
                alpha=0.45,
                label=None if label is None else label + " (eval-selected)",
            )
            final = s["test_mse_mean_final"]
            if final is not None:
                ax.errorbar(
                    x,
                    final["mean"],
                    yerr=final["sd"],
                    fmt="D",
                    color=f"C{j}",
                    mec="k",
                    capsize=3,
                    label=None if label is None else label + " (last epoch)",
                )
            paper = PAPER_INIT.get(name, {}).get(init) if scale is None else None
            if paper is not None:
                ax.plot(
                    [x - width / 2, x + width / 2],
                    [paper] * 2,
                    "k-",
                    lw=2,
                    label="paper" if (i, init) == (0, "pca") else None,
                )
    ax.set_xticks(range(len(sw.init_models)))
    ax.set_xticklabels([rm.LABELS[n] for n in sw.init_models])
    ax.set_ylabel("test MSE (decoded mean)")
    top = max(s["test_mse_mean"]["mean"] + s["test_mse_mean"]["sd"] for s in summary)
    ax.set_ylim(0, 1.7 * top)  # room for the legend above the bars
    fig.suptitle(
        "Object-vector initialisation (mean ± sd over seeds): bars eval-selected checkpoint, "
        "diamonds last epoch, black paper\n" + settings_note(ctx.base),
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "init.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "summary": summary, "table": table, "paper": PAPER_INIT}


COMMAND_FUNCTIONS = {
    "runtime": cmd_runtime,
    "digits": cmd_digits,
    "batch_size": cmd_batch_size,
    "num_inducing": cmd_num_inducing,
    "bias": cmd_bias,
    "tsne": cmd_tsne,
    "init": cmd_init,
    "convergence": cmd_convergence,
}


# ----------------------------------------------------------------------------- CLI
def _ints(text: str) -> Tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def _scales(text: str) -> Tuple[Optional[float], ...]:
    values = []
    for v in (v.strip() for v in text.split(",") if v.strip()):
        value = None if v == "paper" else float(v)
        if value is not None and not is_positive_number(value):
            raise argparse.ArgumentTypeError(f"object scales must be 'paper' or positive numbers; got {v!r}")
        values.append(value)
    return tuple(values)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.rotated_mnist_figures",
        description="Rotated-MNIST figures of the SVGP-VAE paper (beyond Table 1).",
    )
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("--quick", action="store_true", help="a tiny smoke run (12 instances per digit, 2 epochs, 1 seed)")
    p.add_argument("--epochs", type=int, help="training epochs (default 1000; --quick: 2)")
    p.add_argument("--seeds", type=int, nargs="+", help="seeds to run (default 0 1 2 3 4; --quick: 0)")
    p.add_argument("--out", help="output folder (default results/rotated_mnist_figures/<command>[_quick])")
    p.add_argument(
        "--cache",
        default=os.path.join("results", "rotated_mnist_figures", "runs_cache"),
        help="folder of cached runs shared by all commands (default %(default)s)",
    )
    p.add_argument("--n-per-digit", type=int, help="instances per digit (default 400; --quick: 12)")
    p.add_argument("--batch-size", type=int, help="batch size of runs that do not sweep it (default 256)")
    p.add_argument("--eval-every", type=int, help="epochs between eval-set evaluations (default 5; --quick: 1)")
    p.add_argument("--learning-rate", type=float, help="Adam learning rate (default 1e-3)")
    p.add_argument(
        "--object-learning-rate",
        type=float,
        help="Adam learning rate of the object vectors (default: --learning-rate, the paper's)",
    )
    p.add_argument("--jit", action="store_true", help="compile the training step with XLA")
    p.add_argument(
        "--eval-placement",
        choices=rm.EVAL_PLACEMENTS,
        help="SVGP-VAE eval instances: 'affine' (default, the paper's) or 'fit' to their context",
    )
    p.add_argument("--eval-fit-steps", type=int, help="Adam steps of --eval-placement fit (default 50)")
    p.add_argument(
        "--num-inducing",
        type=_ints,
        dest="m",
        help="runtime / num_inducing / bias: inducing-point counts (multiples of 16)",
    )
    p.add_argument("--object-dims", type=_ints, help="runtime: GPPVAE object-vector dimensions Q (rank H = 16 Q)")
    p.add_argument(
        "--timing-epochs",
        type=int,
        help="runtime / digits: after the sweep, time every setting again in a fresh run of this many "
        "epochs, back to back, and plot those times (default 0: the runs' own s/epoch)",
    )
    p.add_argument("--digit-sets", help="digits: sets separated by ';', e.g. '3;1,3,6'")
    p.add_argument("--models", help="digits / init: comma-separated models (svgpvae, gppvae)")
    p.add_argument(
        "--object-init",
        choices=("pca", "random"),
        help="initial object vectors of every run (default pca); init sweeps both",
    )
    p.add_argument(
        "--object-scale",
        type=float,
        help="initial object-vector scale of every run (PCA scores at this RMS; default: the paper's raw "
        "scores); init sweeps --object-scales instead",
    )
    p.add_argument(
        "--object-scales",
        type=_scales,
        help="init: initial object-vector scales, comma-separated; 'paper' = the paper's (raw PCA "
        "scores, random sd 1.5), a number s = PCA scores at RMS s / random sd s (default: paper)",
    )
    p.add_argument("--batch-sizes", type=_ints, help="batch_size: the batch sizes")
    p.add_argument("--bias-epochs", type=_ints, help="bias: epochs after which to record (0: initial model)")
    p.add_argument("--bias-passes", type=int, help="bias: minibatch passes averaged per record (default 1)")
    p.add_argument("--curve-every", type=int, help="convergence: epochs between test-MSE records (default 10)")
    p.add_argument("--tsne-digits", type=_ints, help="tsne: the digits of the run")
    p.add_argument("--tsne-max-points", type=int)
    p.add_argument("--perplexity", type=float, help="tsne: t-SNE perplexity (default 30)")
    p.add_argument("--quiet", action="store_true")
    return p


def _configure(args) -> Tuple[rm.Config, Sweeps]:
    quick = QUICK_CONFIG if args.quick else {}
    base = rm.Config(seeds=(0, 1, 2, 3, 4), models=("svgpvae",))
    changes = {k: v for k, v in quick.items()}
    for key, value in (
        ("epochs", args.epochs),
        ("seeds", tuple(args.seeds) if args.seeds is not None else None),
        ("n_per_digit", args.n_per_digit),
        ("batch_size", args.batch_size),
        ("eval_every", args.eval_every),
        ("learning_rate", args.learning_rate),
        ("object_learning_rate", args.object_learning_rate),
        ("object_init", args.object_init),
        ("object_scale", args.object_scale),
        ("eval_placement", args.eval_placement),
        ("eval_fit_steps", args.eval_fit_steps),
    ):
        if value is not None:
            changes[key] = value
    try:
        base = replace(base, jit_compile=args.jit, **changes)
    except ValueError as error:  # Config's checks (e.g. --object-scale)
        raise SystemExit(f"rotated_mnist_figures: {error}")
    sweeps = Sweeps(**(QUICK if args.quick else {}))
    overrides = {}
    if args.m is not None:
        overrides.update(runtime_m=args.m, m_values=args.m, bias_m=args.m)
    if args.object_dims is not None:
        overrides["runtime_object_dims"] = args.object_dims
    if args.digit_sets is not None:
        overrides["digit_sets"] = tuple(_ints(s) for s in args.digit_sets.split(";") if s.strip())
    if args.models is not None:
        models = tuple(m.strip() for m in args.models.split(",") if m.strip())
        unknown = [m for m in models if m not in ("svgpvae", "gppvae")]
        if unknown:
            raise SystemExit(f"--models: unknown {unknown}; choose from svgpvae, gppvae")
        overrides.update(digits_models=models, init_models=models)
    for key, value in (
        ("batch_sizes", args.batch_sizes),
        ("init_scales", args.object_scales),
        ("bias_epochs", args.bias_epochs),
        ("bias_passes", args.bias_passes),
        ("curve_every", args.curve_every),
        ("tsne_digits", args.tsne_digits),
        ("tsne_max_points", args.tsne_max_points),
        ("tsne_perplexity", args.perplexity),
        ("timing_epochs", args.timing_epochs),
    ):
        if value is not None:
            overrides[key] = value
    try:
        return base, replace(sweeps, **overrides)
    except ValueError as error:  # Sweeps' checks (e.g. --timing-epochs)
        raise SystemExit(f"rotated_mnist_figures: {error}")


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """Run one figure command; returns the payload written to ``<command>.json``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = _parser().parse_args(argv)
    base, sweeps = _configure(args)
    out = args.out or os.path.join("results", "rotated_mnist_figures", args.command + ("_quick" if args.quick else ""))
    os.makedirs(out, exist_ok=True)
    command = command_argv("rotated_mnist_figures", argv)
    ctx = SweepContext(base, sweeps, args.cache, progress=not args.quiet, argv=command)
    start = time.perf_counter()
    result = COMMAND_FUNCTIONS[args.command](ctx, out)
    wall = time.perf_counter() - start
    rows = result.pop("rows")
    payload = {
        "command": args.command,
        "argv": command[2:],
        "quick": args.quick,
        "out": out,
        "cache": args.cache,
        "config": asdict(replace(base, out=args.cache)),
        "sweeps": asdict(sweeps),
        "git_commit": git_commit(),
        "wall_seconds": wall,
        **result,
        "rows": rows,
    }
    write_csv(os.path.join(out, f"{args.command}.csv"), rows)
    write_json(os.path.join(out, f"{args.command}.json"), payload, argv=command)
    if not args.quiet:
        for s in payload.get("summary", []):
            if "test_mse_mean" in s and "epoch" in s:  # convergence
                print(
                    f"epoch {s['epoch']}: test MSE {s['test_mse_mean']['mean']:.4f} +- {s['test_mse_mean']['sd']:.4f}"
                    f" (sample {s['test_mse_sample']['mean']:.4f})",
                    flush=True,
                )
            elif "test_mse_mean" in s:
                label = ", ".join(
                    f"{k}={s[k]}"
                    for k in s
                    if k
                    not in (
                        "test_mse_mean",
                        "test_mse_sample",
                        "seconds_per_epoch",
                        "num_data",
                        "seeds",
                        "test_mse_mean_final",
                        "best_epochs",
                        "seconds_per_epoch_timed",
                    )
                )
                st = s["test_mse_mean"]
                timed = (
                    f" (runs), {s['seconds_per_epoch_timed']:.2f} s/epoch (timed)"
                    if "seconds_per_epoch_timed" in s
                    else ""
                )
                print(
                    f"{label}: test MSE {st['mean']:.4f} +- {st['sd']:.4f} (n={st['n']}), "
                    f"{s['seconds_per_epoch']:.2f} s/epoch{timed}",
                    flush=True,
                )
            elif "relative_bias" in s:
                st = s["relative_bias"]
                print(f"m={s['m']} epoch {s['epoch']}: relative bias {st['mean']:.3g} +- {st['sd']:.2g}", flush=True)
        print(f"wall time {wall:.0f} s; wrote {out}/{args.command}.png, .csv, .json", flush=True)
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
