"""Model selection for imputation, measured: which candidate grid to recommend, and whether to refit.

``python -m svgpvae_paper.experiments.selection --out docs/results/selection`` runs, for each
dataset and seed, :func:`gpflow_svgpvae.training.select` over a grid of latent channels ``L``,
network widths and learning rates (early stopping on held-out training entries), and scores every
candidate on the test entries (hidden from the start, never seen by training or selection), so
that the validation's choice can be compared with the best choice in hindsight, with the
notebook's old fixed settings, with linear interpolation, and with the selected candidate refit
on all observed entries for its best epoch count.

Datasets:

* ``sequences``: the sensor sequences of ``docs/imputation.pct.py`` (same recipe: 2 latent SE-GP
  paths, 10 nonlinear channels, irregular times, 20-40 frames, 15 % of the entries, 8 % of the
  frames and one sensor outage per sequence hidden);
* ``bumps``: :func:`gpflow_svgpvae.datasets.synthetic.gp_bump_images`, one latent dataset of
  1-D bump images along time (``X [N, 1]``, ``Y [N, K]``), 20 % of the pixels hidden at random.
"""

import argparse
import itertools
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.datasets.synthetic import gp_bump_images
from gpflow_svgpvae.imputation import ImputationValidation
from gpflow_svgpvae.kernels import log_spaced_lengthscales
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import IMPUTATION_GRID, select, train

from .common import write_json

__all__ = ["sensor_sequences", "bump_problem", "run", "main"]

GRID = dict(num_latent_gps=(4, 8, 16), width=(64, 128), learning_rate=(1e-3, 3e-3))
#: What docs/imputation.pct.py trained before it selected its settings.
NOTEBOOK_DEFAULT = dict(num_latent_gps=2, width=64, learning_rate=3e-3)


# ----------------------------------------------------------------------------------------- data


def sensor_sequences(seed: int, num_sequences: int = 150) -> Dict[str, np.ndarray]:
    """The sequences of ``docs/imputation.pct.py`` (its recipe, seeded): ``X [V, T, 1]``,
    ``Y [V, T, D]`` with NaN where hidden or padded, ``frames [V, T]``, ``truth`` and the test
    entries ``hidden``."""
    rng = np.random.default_rng(seed)
    V, T_MIN, T_MAX, D, L_TRUE, NOISE = num_sequences, 20, 40, 10, 2, 0.05
    lengths = rng.integers(T_MIN, T_MAX + 1, size=V)
    T = int(lengths.max())
    A = rng.normal(size=(L_TRUE, D)) * 1.2
    b = rng.normal(size=D) * 0.3
    use_sin = np.arange(D) % 3 == 2

    def sensors(z):
        h = z @ A + b
        return np.where(use_sin, np.sin(h), np.tanh(h))

    X = np.zeros((V, T, 1))
    truth = np.zeros((V, T, D))
    frames = np.zeros((V, T), np.float32)
    for v, n in enumerate(lengths):
        t = np.cumsum(rng.uniform(0.1, 0.4, size=n))
        t -= t[0]
        K = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / 1.5**2) + 1e-6 * np.eye(n)
        X[v, :n, 0], X[v, n:, 0] = t, t[-1]
        truth[v, :n] = sensors(np.linalg.cholesky(K) @ rng.normal(size=(n, L_TRUE))) + NOISE * rng.normal(size=(n, D))
        frames[v, :n] = 1.0
    hidden = rng.uniform(size=(V, T, D)) < 0.15
    hidden |= (rng.uniform(size=(V, T)) < 0.08)[..., None]
    outage_channel = rng.integers(D, size=V)
    for v, n in enumerate(lengths):
        width = n // 4
        start = rng.integers(2, n - width - 1)
        hidden[v, start : start + width, outage_channel[v]] = True
    real = np.broadcast_to(frames[..., None] > 0, truth.shape)
    hidden &= real
    Y = np.where(real & ~hidden, truth, np.nan).astype(np.float32)
    return dict(X=X, Y=Y, frames=frames, truth=truth, hidden=hidden, lengths=lengths)


def bump_problem(seed: int, num_data: int = 200, num_pixels: int = 32) -> Dict[str, np.ndarray]:
    """``gp_bump_images`` with 20 % of the pixels hidden at random (``Y`` NaN there)."""
    bumps = gp_bump_images(num_data, num_pixels=num_pixels, seed=seed)
    rng = np.random.default_rng(seed + 1000)
    hidden = rng.uniform(size=bumps.images.shape) < 0.2
    Y = np.where(hidden, np.nan, bumps.images).astype(np.float32)
    return dict(X=bumps.times, Y=Y, frames=None, truth=bumps.images.astype(np.float64), hidden=hidden)


def data_tuple(problem):
    return (
        (problem["X"], problem["Y"]) if problem["frames"] is None else (problem["X"], problem["Y"], problem["frames"])
    )


def linear_interpolation(problem) -> np.ndarray:
    """Per channel, linear in time within each sequence, constant beyond the ends; the channel's
    observed mean where a channel of a sequence has nothing observed."""
    X, Y = problem["X"], problem["Y"]
    if X.ndim == 2:
        X, Y, lengths = X[None], Y[None], [len(X)]
    else:
        lengths = problem["lengths"]
    D = Y.shape[-1]
    channel_mean = np.nanmean(Y.reshape(-1, D), axis=0)
    out = np.where(np.isnan(Y), channel_mean, Y).astype(np.float64)
    for v, n in enumerate(lengths):
        t = X[v, :n, 0]
        for d in range(D):
            seen = ~np.isnan(Y[v, :n, d])
            if seen.any():
                out[v, :n, d] = np.interp(t, t[seen], Y[v, :n, d][seen])
    return out[0] if problem["X"].ndim == 2 else out


# ---------------------------------------------------------------------------------------- models


def build(problem, num_latent_gps: int, width: int, learning_rate: float, seed: int, recipe: str = "old"):
    """The notebook's model (for ``bumps``: one latent dataset over time) with these settings.

    ``recipe="old"``: the notebook's former model (one Matern-5/2 kernel, 12 inducing times, no
    dropout); ``"library"``: its current one (one Matern-5/2 per latent channel at lengthscales
    log-spaced from the time stamps' median spacing to ten times it, one inducing time per frame up
    to 100, ``encoder_dropout=0.4``, initial noise variance 0.1)."""
    tf_keras.utils.set_random_seed(seed)
    D = problem["Y"].shape[-1]
    encoder = mlp_encoder(2 * D, num_latent_gps, hidden_units=(width, width))
    decoder = mlp_decoder(num_latent_gps, D, hidden_units=(width, width))
    X = problem["X"]
    extra = {} if X.ndim == 3 else dict(num_data=len(X))
    if recipe == "library":
        frames = problem["frames"] if X.ndim == 3 else np.ones((1, len(X)))
        times = X[..., 0] if X.ndim == 3 else X[None, :, 0]
        gaps = np.diff(times, axis=1)[(frames[:, 1:] > 0) & (frames[:, :-1] > 0)]
        spacing = float(np.median(gaps))
        kernel = log_spaced_lengthscales(gpflow.kernels.Matern52, num_latent_gps, spacing, 10 * spacing)
        Z = np.linspace(times[frames > 0].min(), times[frames > 0].max(), min(times.shape[1], 100))[:, None]
        extra.update(encoder_dropout=0.4)
        noise = 0.1
    elif X.ndim == 3:
        kernel, Z, noise = gpflow.kernels.Matern52(lengthscales=1.5), np.linspace(0.0, X.max(), 12)[:, None], 0.05
    else:
        kernel, Z = gpflow.kernels.Matern52(lengthscales=1.0), np.linspace(X.min(), X.max(), 20)[:, None]
        noise = 0.05
    model = gv.SVGPVAE(
        encoder,
        decoder,
        kernel,
        Z,
        gv.Gaussian(noise, trainable=True),
        missing_values="nan",
        encoder_sees_mask=True,
        seed=seed,
        **extra,
    )
    return model, tf_keras.optimizers.Adam(learning_rate)


def batch_size(problem) -> int:
    return 10 if problem["X"].ndim == 3 else 50


def test_scores(model, problem) -> Dict[str, float]:
    """MSE and NLL on the test entries, the posterior conditioned on every observed entry."""
    test = ImputationValidation(
        data_tuple(problem), problem["hidden"], problem["truth"][problem["hidden"]], num_samples=20, seed=0
    )
    return test(model)


def run_one(
    name: str,
    seed: int,
    grid: Dict[str, Sequence],
    epochs: int,
    patience: int,
    fraction: float,
    recipe: str = "old",
    validate_every: int = 1,
) -> Dict:
    problem = sensor_sequences(seed) if name == "sequences" else bump_problem(seed)
    data = data_tuple(problem)
    truth, hidden = problem["truth"], problem["hidden"]
    interpolated = linear_interpolation(problem)
    channel_mean = np.nanmean(problem["Y"].reshape(-1, problem["Y"].shape[-1]), axis=0)
    baselines = {
        "linear_interpolation_mse": float(np.mean((interpolated[hidden] - truth[hidden]) ** 2)),
        "channel_mean_mse": float(np.mean((np.broadcast_to(channel_mean, truth.shape)[hidden] - truth[hidden]) ** 2)),
    }

    built = []

    def build_candidate(**candidate):
        model, optimizer = build(problem, seed=seed, recipe=recipe, **candidate)
        built.append(model)
        return model, optimizer

    candidates = _candidates(grid, recipe)
    start = time.perf_counter()
    selected, table = select(
        build_candidate,
        candidates,
        data,
        validation_fraction=fraction,
        epochs=epochs,
        patience=patience,
        validate_every=validate_every,
        seed=seed,
        batch_size=batch_size(problem),
    )
    search_seconds = time.perf_counter() - start
    for row, model in zip(table, built):
        scores = test_scores(model, problem)
        row["test_mse"], row["test_nll"] = scores["mse"], scores.get("nll")
    chosen = next(row for row in table if row["selected"])
    print(f"[{name} seed {seed}] selected {chosen['candidate']}: test MSE {chosen['test_mse']:.4f}", flush=True)

    # Refit: the selected settings trained afresh on every observed entry for the best epoch count.
    model, optimizer = build(problem, seed=seed, recipe=recipe, **chosen["candidate"])
    start = time.perf_counter()
    train(
        model,
        data,
        epochs=int(chosen["best_epoch"]),
        optimizer=optimizer,
        batch_size=batch_size(problem),
        seed=seed,
        progress=False,
    )
    refit = dict(test_scores(model, problem), best_epoch=chosen["best_epoch"], seconds=time.perf_counter() - start)

    # The notebook's former fixed recipe: L = 2, 64 units, Adam 3e-3, all epochs, no validation.
    model, optimizer = build(problem, seed=seed, **NOTEBOOK_DEFAULT)
    start = time.perf_counter()
    train(model, data, epochs=epochs, optimizer=optimizer, batch_size=batch_size(problem), seed=seed, progress=False)
    fixed = dict(
        test_scores(model, problem), candidate=NOTEBOOK_DEFAULT, epochs=epochs, seconds=time.perf_counter() - start
    )

    hindsight = min(table, key=lambda row: row["test_mse"])
    return {
        "dataset": name,
        "seed": seed,
        "table": table,
        "selected": chosen,
        "best_in_hindsight": hindsight,
        "refit": refit,
        "notebook_fixed_settings": fixed,
        "baselines": baselines,
        "search_seconds": search_seconds,
        "num_test_entries": int(hidden.sum()),
        "recipe": recipe,
    }


def _candidates(grid: Dict[str, Sequence], recipe: str) -> List[Dict]:
    """The product of ``grid``'s values (``recipe="old"``), or the library's ``IMPUTATION_GRID``."""
    if recipe == "library":
        return [dict(c) for c in IMPUTATION_GRID]
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def summarise(runs: List[Dict], grid: Dict[str, Sequence]) -> Dict:
    """Per dataset: test MSE of selection, refit, hindsight, fixed settings and interpolation; and for
    each grid value the mean test MSE rank of the candidates with it (which values help)."""
    summary = {}
    for name in sorted({r["dataset"] for r in runs}):
        mine = [r for r in runs if r["dataset"] == name]
        entry = {
            key: [fn(r) for r in mine]
            for key, fn in {
                "selected_test_mse": lambda r: r["selected"]["test_mse"],
                "refit_test_mse": lambda r: r["refit"]["mse"],
                "hindsight_test_mse": lambda r: r["best_in_hindsight"]["test_mse"],
                "notebook_fixed_test_mse": lambda r: r["notebook_fixed_settings"]["mse"],
                "linear_interpolation_mse": lambda r: r["baselines"]["linear_interpolation_mse"],
                "selected_candidate": lambda r: r["selected"]["candidate"],
                "selected_best_epoch": lambda r: r["selected"]["best_epoch"],
                "val_test_rank_correlation": lambda r: _rank_correlation(
                    [row["val_mse"] for row in r["table"]], [row["test_mse"] for row in r["table"]]
                ),
            }.items()
        }
        ranks = {}
        for key, values in grid.items():
            for value in values:
                per_run = []
                for r in mine:
                    order = np.argsort(np.argsort([row["test_mse"] for row in r["table"]])) + 1
                    per_run += [int(o) for o, row in zip(order, r["table"]) if row["candidate"][key] == value]
                ranks[f"{key}={value}"] = float(np.mean(per_run))
        entry["mean_test_rank_by_value"] = ranks
        summary[name] = entry
    return summary


def _rank_correlation(a, b) -> Optional[float]:
    """Spearman's rank correlation of two lists (``None`` for fewer than 3 entries)."""
    if len(a) < 3:
        return None
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def run(
    out: str,
    datasets: Sequence[str],
    seeds: Sequence[int],
    epochs: int,
    patience: int,
    fraction: float,
    grid: Optional[Dict] = None,
    argv: Optional[Sequence[str]] = None,
    recipe: str = "old",
    validate_every: int = 1,
) -> Dict:
    grid = dict(GRID if grid is None else grid)
    if recipe == "library":  # the values of the library's grid, for the ranks by value
        grid = {key: sorted({c[key] for c in IMPUTATION_GRID}) for key in IMPUTATION_GRID[0]}
    config = dict(
        datasets=list(datasets),
        seeds=list(seeds),
        epochs=epochs,
        patience=patience,
        validation_fraction=fraction,
        grid={k: list(v) for k, v in grid.items()},
        recipe=recipe,
        validate_every=validate_every,
        notebook_fixed_settings=NOTEBOOK_DEFAULT,
        threads=tf.config.threading.get_intra_op_parallelism_threads(),
    )
    runs = []
    path = os.path.join(out, "metrics.json")
    for name in datasets:
        for seed in seeds:
            runs.append(run_one(name, seed, grid, epochs, patience, fraction, recipe, validate_every))
            payload = dict(config=config, runs=runs, summary=summarise(runs, grid))
            write_json(path, payload, argv=argv)  # after every run: a killed sweep keeps what it did
    return payload


def merge(parts: Sequence[str], out: str, argv: Optional[Sequence[str]] = None) -> Dict:
    """One ``metrics.json`` in ``out`` from the ``metrics.json`` of runs made in parallel (one per
    dataset): their runs, a summary over all of them, and each part's own run record."""
    from .common import read_json

    loaded = [read_json(os.path.join(part, "metrics.json")) for part in parts]
    grids = {json_key(p["config"]["grid"]) for p in loaded}
    if len(grids) != 1:
        raise ValueError("the parts were run with different grids; merge only runs of one grid.")
    grid = loaded[0]["config"]["grid"]
    config = dict(loaded[0]["config"], datasets=[d for p in loaded for d in p["config"]["datasets"]], parts=list(parts))
    runs = [r for p in loaded for r in p["runs"]]
    payload = dict(config=config, runs=runs, summary=summarise(runs, grid), part_runs=[p["run"] for p in loaded])
    write_json(os.path.join(out, "metrics.json"), payload, argv=argv)
    return payload


def report(paths: Sequence[str]) -> str:
    """Markdown tables of the runs in the ``metrics.json`` files at ``paths``: per dataset and seed the
    test MSE of the selected candidate, of its refit, of the best candidate in hindsight, of the
    notebook's former fixed settings and of linear interpolation; then every candidate's scores."""
    from .common import read_json

    runs = [r for path in paths for r in read_json(path)["runs"]]
    lines = [
        "| dataset | seed | selected (L, width, lr) | best epoch | selected | refit on all | best in hindsight "
        "| fixed L=2, 64, 3e-3 | linear interpolation | val/test rank corr. |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        c = r["selected"]["candidate"]
        corr = _rank_correlation([x["val_mse"] for x in r["table"]], [x["test_mse"] for x in r["table"]])
        lines.append(
            f"| {r['dataset']} | {r['seed']} | {c['num_latent_gps']}, {c['width']}, {c['learning_rate']:g} "
            f"| {r['selected']['best_epoch']} | {r['selected']['test_mse']:.4f} | {r['refit']['mse']:.4f} "
            f"| {r['best_in_hindsight']['test_mse']:.4f} | {r['notebook_fixed_settings']['mse']:.4f} "
            f"| {r['baselines']['linear_interpolation_mse']:.4f} | {'-' if corr is None else f'{corr:.2f}'} |"
        )
    lines += [
        "",
        "| dataset | seed | L | width | lr | val MSE | test MSE | best epoch | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        for x in r["table"]:
            c = x["candidate"]
            lines.append(
                f"| {r['dataset']} | {r['seed']} | {c['num_latent_gps']} | {c['width']} | {c['learning_rate']:g} "
                f"| {x['val_mse']:.4f} | {x['test_mse']:.4f} | {x['best_epoch']} | {x['seconds']:.0f} |"
            )
    # Runs of one dataset and seed from several files (grids run apart, e.g. a further L): one split, one
    # test set, so their candidates compare directly; the selection over the union of the grids.
    groups: Dict[tuple, List[Dict]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["seed"]), []).append(r)
    if any(len(g) > 1 for g in groups.values()):
        lines += [
            "",
            "| dataset | seed | candidates | selected over the union (L, width, lr) | its test MSE "
            "| best in hindsight |",
            "|---|---|---|---|---|---|",
        ]
        for (name, seed), group in groups.items():
            rows = [x for r in group for x in r["table"]]
            chosen = min(rows, key=lambda x: x["val_mse"])
            c = chosen["candidate"]
            lines.append(
                f"| {name} | {seed} | {len(rows)} | {c['num_latent_gps']}, {c['width']}, {c['learning_rate']:g} "
                f"| {chosen['test_mse']:.4f} | {min(x['test_mse'] for x in rows):.4f} |"
            )
    return "\n".join(lines)


def json_key(obj) -> str:
    import json

    return json.dumps(obj, sort_keys=True)


def main(argv: Optional[Sequence[str]] = None) -> Dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.selection", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default=os.path.join("docs", "results", "selection"))
    parser.add_argument("--datasets", nargs="+", default=["sequences", "bumps"], choices=["sequences", "bumps"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--patience", type=int, default=30)
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--latents", nargs="+", type=int, default=list(GRID["num_latent_gps"]))
    parser.add_argument("--widths", nargs="+", type=int, default=list(GRID["width"]))
    parser.add_argument("--learning-rates", nargs="+", type=float, default=list(GRID["learning_rate"]))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--recipe",
        choices=["old", "library"],
        default="old",
        help="old: the notebook's former model and the --latents/--widths/--learning-rates grid; library: "
        "its current model (log-spaced lengthscales, one inducing time per frame, encoder_dropout 0.4) "
        "and the library's IMPUTATION_GRID",
    )
    parser.add_argument("--validate-every", type=int, default=1, help="epochs between validations")
    parser.add_argument("--merge", nargs="+", metavar="FOLDER", help="merge these folders' metrics.json into --out")
    parser.add_argument("--report", nargs="+", metavar="JSON", help="print markdown tables of these metrics files")
    args = parser.parse_args(argv)
    if args.report:
        print(report(args.report))
        return {}
    command = ["python", "-m", "svgpvae_paper.experiments.selection"] + argv
    if args.merge:
        return merge(args.merge, args.out, argv=command)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    grid = dict(num_latent_gps=args.latents, width=args.widths, learning_rate=args.learning_rates)
    return run(
        args.out,
        args.datasets,
        args.seeds,
        args.epochs,
        args.patience,
        args.fraction,
        grid,
        argv=command,
        recipe=args.recipe,
        validate_every=args.validate_every,
    )


if __name__ == "__main__":
    main()
