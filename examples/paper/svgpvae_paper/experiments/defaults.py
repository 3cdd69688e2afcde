r"""Library defaults against their alternatives: ``svgpvae defaults [--quick] [--seeds 0 1]``.

Each training choice the experiments found to matter is measured on its own against the
library's current default, everything else at the default, on two generated imputation
problems, with the MSE on the held-out (hidden) entries as the score:

* ``imputation``: the sequences of ``docs/imputation.pct.py`` (its generator, copied here): 10
  sensor channels from 2 latent SE-GP paths, irregular time stamps, 20-40 frames per sequence;
  15% of the entries, 8% of the frames and one sensor outage per sequence hidden. The model is
  the notebook's: ``mlp_encoder``/``mlp_decoder`` with 64 x 64 units, L = 2, Matern52 with
  lengthscale 1.5, 12 inducing times, trainable Gaussian noise, Adam 3e-3, batches of 10.
* ``moving_ball``: :func:`~svgpvae_paper.datasets.moving_ball` videos (16 x 16 binary frames,
  30 frames, true lengthscale 2), 30% of the pixels of every frame hidden at random; Bernoulli
  decoder, 128 x 128 units, L = 2, RBF kernel (variance held at 1, lengthscale 6), 15 inducing
  times, Adam 1e-3; score: the squared error of the imputed pixel probabilities.

The choices (``--choices``; each a one-line change of the training setup):

* ``site``: the encoder's natural-parameter site head (``site_parametrization="natural"``)
  instead of mean and variance;
* ``bias``: the decoder's output bias at the observed entries' mean
  (:func:`~gpflow_svgpvae.networks.set_output_bias`) instead of zeros;
* ``warmup``: KL warm-up over the first 20% of the steps (``ELBO(warmup_steps=...)``);
* ``hold``: the kernel held at its initial values for the first 20% of the steps
  (:func:`~gpflow_svgpvae.training.gp_optimizer_groups`);
* ``gp_lr``: the GP part (kernel, inducing inputs) at 10 x the networks' Adam rate;
* ``fixed_inducing``: the inducing inputs held where they start (evenly spaced over the times);
* ``widths_500``: the MLPs at the library's default widths (500, 500) instead of the setting's;
* ``latent_8``: L = 8 latent channels instead of the setting's 2 (the data's true number).
* ``dropout``: ``encoder_dropout=0.4`` (40% of the observed entries hidden from the encoder in
  each training step, still scored by the likelihood) instead of 0;
* ``spread``: one kernel per latent channel, lengthscales log-spaced from the inputs' spacing to
  ten times it (:func:`~gpflow_svgpvae.kernels.log_spaced_lengthscales`) instead of one kernel.

``--datasets hmnist_quick moving_ball_quick`` adds the SVGP-VAE of two experiments' quick modes,
scored by their own metrics, for the choices they can express (:data:`EXPERIMENT_CHOICES`).
``--gather DIR ...`` combines finished folders into one.

Writes ``metrics.json`` (every run, and per dataset and choice the mean and sd over the seeds,
the alternative's mean against the default's) and ``table.md`` to ``--out``.
"""

import argparse
import dataclasses
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .common import git_commit, mean_sd, write_json

__all__ = ["Config", "CHOICES", "DATASETS", "imputation_data", "moving_ball_data", "run_one", "run", "main"]

CHOICES = ("site", "bias", "warmup", "hold", "gp_lr", "fixed_inducing", "widths_500", "latent_8", "dropout", "spread")
DATASETS = ("imputation", "moving_ball", "hmnist_quick", "moving_ball_quick")
#: The choices each experiment's quick mode can express (as its own options); the others are skipped there.
EXPERIMENT_CHOICES = {
    "hmnist_quick": ("site", "warmup", "fixed_inducing", "dropout", "spread"),
    "moving_ball_quick": ("site", "bias", "hold", "gp_lr"),
}


@dataclasses.dataclass
class Config:
    """Settings of the comparison (defaults: the full run; :data:`QUICK` for a smoke run)."""

    datasets: Sequence[str] = ("imputation", "moving_ball")
    choices: Sequence[str] = CHOICES
    seeds: Sequence[int] = (0, 1)
    imputation_sequences: int = 150
    imputation_epochs: int = 60
    ball_videos: int = 200
    ball_epochs: int = 30
    out: str = "results/defaults"


QUICK = dict(imputation_sequences=40, imputation_epochs=3, ball_videos=20, ball_epochs=2, seeds=(0,))


# ------------------------------------------------------------------------------ data
def imputation_data(num_sequences: int, seed: int):
    """``(X [V, T, 1], Y [V, T, D] with NaN hidden, frames [V, T], Y_true, hidden)``: the
    generator of ``docs/imputation.pct.py`` (there with seed 0 and V = 150)."""
    from .selection import sensor_sequences  # one generator for both experiments (it imports TensorFlow)

    data = sensor_sequences(seed, num_sequences)
    return data["X"], data["Y"], data["frames"], data["truth"], data["hidden"]


def moving_ball_data(num_videos: int, seed: int, hidden_fraction: float = 0.3):
    """``(X [V, T, 1], Y [V, T, P] with NaN hidden, frames [V, T] of ones, Y_true, hidden)``:
    16 x 16 moving-ball videos with ``hidden_fraction`` of the pixels hidden at random."""
    from svgpvae_paper.datasets.moving_ball import moving_ball

    data = moving_ball(num_videos, image_size=16, radius=2.0, pixels_per_unit=3.2, seed=seed)
    Y_true = np.asarray(data.videos, np.float64)  # [V, T, S * S]
    V, T = Y_true.shape[:2]
    hidden = np.random.default_rng(seed + 1000).uniform(size=Y_true.shape) < hidden_fraction
    Y = np.where(hidden, np.nan, Y_true).astype(np.float32)
    X = np.broadcast_to(np.arange(T, dtype=np.float64)[None, :, None], (V, T, 1)).copy()
    return X, Y, np.ones((V, T), np.float32), Y_true, hidden


# ---------------------------------------------------------------------------- models
def _setup(dataset: str, cfg: Config):
    if dataset == "imputation":
        return dict(
            hidden=(64, 64),
            L=2,
            lengthscale=1.5,
            kernel="matern52",
            num_inducing=12,
            likelihood="gaussian",
            learning_rate=3e-3,
            batch_size=10,
            epochs=cfg.imputation_epochs,
            num=cfg.imputation_sequences,
        )
    if dataset == "moving_ball":
        return dict(
            hidden=(128, 128),
            L=2,
            lengthscale=6.0,
            kernel="rbf",
            num_inducing=15,
            likelihood="bernoulli",
            learning_rate=1e-3,
            batch_size=10,
            epochs=cfg.ball_epochs,
            num=cfg.ball_videos,
        )
    raise ValueError(f"dataset must be one of {DATASETS}; got {dataset!r}")


def run_experiment_quick(dataset: str, choice: Optional[str], seed: int, cfg: Config) -> dict:
    """One SVGP-VAE of an experiment's quick mode at the library's defaults (``choice`` None) or with
    one choice changed, scored by the experiment's metric: HMNIST's MSE on the missing pixels
    (``svgpvae hmnist --quick --paper --methods svgpvae``), the moving ball's affine-aligned path
    RMSE (``svgpvae moving_ball runs --quick --models svgpvae:15`` with the recipe off: lengthscale
    from 1, no hold, zero bias, the GP part at the networks' rate)."""
    start = time.perf_counter()
    if dataset == "hmnist_quick":
        from . import hmnist

        flags = {
            None: [],
            "site": ["--site-parametrization", "natural"],
            "warmup": ["--kl-warmup-epochs", "0.2"],
            "fixed_inducing": ["--fixed-inducing"],
            "dropout": ["--encoder-dropout", "0.4"],
            "spread": ["--channel-lengthscales", "1", "10"],
        }[choice]
        out = os.path.join(cfg.out, "hmnist_quick_runs")
        argv = ["--quick", "--paper", "--methods", "svgpvae", "--seeds", str(seed), "--out", out] + flags
        config = hmnist.config_from_args(argv)
        record = hmnist.run_method("svgpvae", config, seed, progress=False)
        score, metric = float(record["mse"]), "mse_missing_pixels"
    elif dataset == "moving_ball_quick":
        from . import moving_ball_runs as mb

        settings = dict(
            mb.QUICK, init_lengthscale=1.0, kernel_hold_steps=0, decoder_bias="zeros", gp_learning_rate=None
        )
        settings.update(
            {
                None: {},
                "site": {"site_parametrization": "natural"},
                "bias": {"decoder_bias": "data"},
                "hold": {"init_lengthscale": 6.0, "kernel_hold_steps": 80},
                "gp_lr": {"gp_learning_rate": 1e-2},
            }[choice]
        )
        mcfg = mb.Config(**settings)
        run = mb.train_run("svgpvae", mcfg, seed, m=15, cache_dir=os.path.join(cfg.out, "moving_ball_quick_runs"))
        score, metric = float(run["rmse"]), "path_rmse"
        argv = ["moving_ball runs --quick --models svgpvae:15", f"--seeds {seed}", repr(settings)]
    else:
        raise ValueError(f"not an experiment's quick mode: {dataset!r}")
    return {
        "dataset": dataset,
        "choice": choice or "default",
        "seed": int(seed),
        "mse" if metric.startswith("mse") else "rmse": score,
        "score": score,
        "metric": metric,
        "settings": " ".join(argv),
        "seconds": time.perf_counter() - start,
    }


def run_one(dataset: str, choice: Optional[str], seed: int, cfg: Config) -> dict:
    """Train one model (``choice`` None: every library default) and score its imputation of the
    hidden entries; the data are drawn with ``seed`` and the networks seeded by it."""
    import gpflow
    from gpflow.keras import tf_keras

    import gpflow_svgpvae as gv
    from gpflow_svgpvae.kernels import log_spaced_lengthscales
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder, set_output_bias
    from gpflow_svgpvae.training import ELBO, gp_optimizer_groups, train

    if dataset in EXPERIMENT_CHOICES:
        return run_experiment_quick(dataset, choice, seed, cfg)
    s = _setup(dataset, cfg)
    make = imputation_data if dataset == "imputation" else moving_ball_data
    X, Y, frames, Y_true, hidden = make(s["num"], seed)
    D = Y.shape[-1]
    tf_keras.utils.set_random_seed(int(seed))
    site = "natural" if choice == "site" else "variance"
    widths = (500, 500) if choice == "widths_500" else s["hidden"]
    L = 8 if choice == "latent_8" else s["L"]
    encoder = mlp_encoder(2 * D, L, hidden_units=widths, site_parametrization=site)
    decoder = mlp_decoder(L, D, hidden_units=widths)
    if choice == "bias":
        observed_mean = np.nanmean(Y.reshape(-1, D), axis=0)
        set_output_bias(decoder, observed_mean[None, :], s["likelihood"])
    kernel_class = gpflow.kernels.Matern52 if s["kernel"] == "matern52" else gpflow.kernels.SquaredExponential
    if choice == "spread":
        gaps = np.diff(X[..., 0], axis=1)[(frames[:, 1:] > 0) & (frames[:, :-1] > 0)]
        spacing = float(np.median(gaps))
        kernel = log_spaced_lengthscales(kernel_class, L, spacing, 10 * spacing)
    else:
        kernel = kernel_class(lengthscales=s["lengthscale"])
    if s["kernel"] == "matern52":
        likelihood = gv.Gaussian(0.05, trainable=True)
    else:
        for k in getattr(kernel, "kernels", [kernel]):
            gpflow.set_trainable(k.variance, False)
        likelihood = "bernoulli"
    Z = np.linspace(float(X.min()), float(X.max()), s["num_inducing"])[:, None]
    model = gv.SVGPVAE(
        encoder,
        decoder,
        kernel,
        Z,
        likelihood,
        missing_values="nan",
        encoder_sees_mask=True,
        encoder_dropout=0.4 if choice == "dropout" else 0.0,
        seed=seed,
    )
    if choice == "fixed_inducing":
        gpflow.set_trainable(model.inducing_variable, False)
    steps = s["epochs"] * -(-len(X) // s["batch_size"])
    rate = s["learning_rate"]
    if choice == "hold":
        optimizer = gp_optimizer_groups(model, rate, kernel_hold_steps=max(1, steps // 5))
    elif choice == "gp_lr":
        optimizer = gp_optimizer_groups(model, rate, gp_learning_rate=10 * rate)
    else:
        optimizer = tf_keras.optimizers.Adam(rate)
    objective = ELBO(warmup_steps=max(1, steps // 5)) if choice == "warmup" else ELBO()
    start = time.perf_counter()
    history = train(
        model,
        (X, Y, frames),
        epochs=s["epochs"],
        batch_size=s["batch_size"],
        seed=seed,
        progress=False,
        optimizer=optimizer,
        objective=objective,
    )
    seconds = time.perf_counter() - start
    imputed = model.impute((X, Y, frames))
    imputed = np.asarray(imputed, np.float64)
    mse = float(np.mean((imputed[hidden] - Y_true[hidden]) ** 2))
    return {
        "dataset": dataset,
        "choice": choice or "default",
        "seed": int(seed),
        "mse": mse,
        "score": mse,
        "metric": "mse_hidden_entries",
        "final_elbo": float(history["elbo"][-1]),
        "steps": int(steps),
        "seconds": seconds,
        "num_hidden": int(hidden.sum()),
    }


def mean_fill_mse(dataset: str, seed: int, cfg: Config) -> float:
    """The MSE on the hidden entries of filling each channel (pixel) with its observed mean."""
    s = _setup(dataset, cfg)
    make = imputation_data if dataset == "imputation" else moving_ball_data
    X, Y, frames, Y_true, hidden = make(s["num"], seed)
    fill = np.broadcast_to(np.nanmean(Y.reshape(-1, Y.shape[-1]), axis=0), Y.shape)
    return float(np.mean((fill[hidden] - Y_true[hidden]) ** 2))


# ---------------------------------------------------------------------------- report
def summarise(records: List[dict]) -> Dict[str, dict]:
    """Per dataset and choice: mean and sd of the MSE over seeds, and the alternative against the
    default on the same seeds (ratio of means; per seed the differences)."""
    out: Dict[str, dict] = {}
    for dataset in dict.fromkeys(r["dataset"] for r in records):
        rows = [r for r in records if r["dataset"] == dataset]
        base = {r["seed"]: r["score"] for r in rows if r["choice"] == "default"}
        table = {}
        for choice in dict.fromkeys(r["choice"] for r in rows):
            mine = {r["seed"]: r["score"] for r in rows if r["choice"] == choice}
            entry = {"metric": rows[0]["metric"], "score": mean_sd(mine.values())}
            common = sorted(set(mine) & set(base))
            if choice != "default" and common:
                entry["ratio_to_default"] = float(
                    np.mean([mine[s] for s in common]) / np.mean([base[s] for s in common])
                )
                entry["difference_per_seed"] = [mine[s] - base[s] for s in common]
            table[choice] = entry
        out[dataset] = table
    return out


def table_markdown(summary: Dict[str, dict]) -> str:
    lines = [
        "| dataset | setting | metric | mean ± sd | per seed | / default (same seeds) |",
        "|---|---|---|---|---|---|",
    ]
    for dataset, table in summary.items():
        for choice, entry in table.items():
            m = entry["score"]
            ratio = f"{entry['ratio_to_default']:.3f}" if "ratio_to_default" in entry else "–"
            per_seed = ", ".join(f"{v:.5f}" for v in m["values"])
            lines.append(
                f"| {dataset} | {choice} | {entry['metric']} | {m['mean']:.5f} ± {m['sd']:.5f} | {per_seed} | {ratio} |"
            )
    return "\n".join(lines) + "\n"


def run(cfg: Config, argv: Sequence[str], progress: bool = True) -> dict:
    os.makedirs(cfg.out, exist_ok=True)
    records = []
    partial = os.path.join(cfg.out, "runs.json")
    for dataset in cfg.datasets:
        for seed in cfg.seeds:
            allowed = EXPERIMENT_CHOICES.get(dataset, CHOICES)
            for choice in (None, *[c for c in cfg.choices if c in allowed]):
                record = run_one(dataset, choice, seed, cfg)
                records.append(record)
                write_json(partial, {"records": records})
                if progress:
                    print(
                        f"{dataset:12s} seed {seed} {record['choice']:15s} mse {record['mse']:.5f} "
                        f"({record['seconds']:.0f} s)",
                        flush=True,
                    )
    summary = summarise(records)
    metrics = {"summary": summary, "records": records, "config": dataclasses.asdict(cfg), "commit": git_commit()}
    write_json(os.path.join(cfg.out, "metrics.json"), metrics, argv=["svgpvae", "defaults", *argv])
    with open(os.path.join(cfg.out, "table.md"), "w") as f:
        f.write(table_markdown(summary))
    if progress:
        print(table_markdown(summary))
    return metrics


def gather(folders: Sequence[str], out: str, argv: Sequence[str], progress: bool = True) -> dict:
    """One ``metrics.json`` and ``table.md`` from the records of several finished folders (e.g. one
    process per dataset), each folder's own run record kept under ``sources``."""
    from .common import read_json

    records, sources = [], {}
    for folder in folders:
        metrics = read_json(os.path.join(folder, "metrics.json"))
        for record in metrics["records"]:
            record.setdefault("score", record.get("mse"))
            record.setdefault("metric", "mse_hidden_entries")
            records.append(record)
        sources[os.path.basename(os.path.normpath(folder))] = {k: metrics.get(k) for k in ("config", "commit", "run")}
    summary = summarise(records)
    baselines: Dict[str, dict] = {}
    for dataset in ("imputation", "moving_ball"):
        seeds = sorted({r["seed"] for r in records if r["dataset"] == dataset})
        if seeds:
            baselines[dataset] = {"mean_fill": mean_sd(mean_fill_mse(dataset, seed, Config()) for seed in seeds)}
    payload = {
        "summary": summary,
        "baselines": baselines,
        "records": records,
        "sources": sources,
        "config": {"folders": list(folders)},
    }
    write_json(os.path.join(out, "metrics.json"), payload, argv=["svgpvae", "defaults", *argv])
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table_markdown(summary))
    if progress:
        print(table_markdown(summary))
    return payload


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.defaults", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    p.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    p.add_argument("--choices", nargs="+", choices=CHOICES, default=None)
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    p.add_argument("--out", default=None, help="results folder (default results/defaults[_quick])")
    p.add_argument("--gather", nargs="+", metavar="DIR", default=None, help="only gather finished folders into --out")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    args = _parser().parse_args(argv)
    settings: dict = dict(QUICK) if args.quick else {}
    for name in ("datasets", "choices", "seeds"):
        if getattr(args, name) is not None:
            settings[name] = tuple(getattr(args, name))
    settings["out"] = args.out or ("results/defaults_quick" if args.quick else "results/defaults")
    return Config(**settings)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.gather:
        return gather(args.gather, args.out or "results/defaults", argv, progress=not args.quiet)
    return run(config_from_args(argv), argv, progress=not args.quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
