"""How close can m inducing points get to the exact GP on the moving ball's paths? (issue 13)

No networks here: the moving ball's true latent paths (RBF GP, unit variance, true lengthscale
2 over 30 frames) are observed directly with Gaussian noise of standard deviation ``sigma``, the
stand-in for an encoder's site noise. For each ``sigma`` the script computes

* the exact GP posterior mean (GPflow's ``GPR``) and the sparse posterior mean with ``m`` evenly
  spaced inducing times (the library's amortised posterior, :func:`gpflow_svgpvae.amortized.
  minibatch_posterior`, with sites = observations and scale 1: the optimal, Titsias, q(u)), both at
  the *true* lengthscale, scored by the moving-ball metric (affine-aligned path RMSE);
* the lengthscale that maximises the exact log marginal likelihood (GPR) and the sparse bound
  (GPflow's ``SGPR`` ELBO with the inducing times held), on a grid, and the sparse RMSE there.

This is the best any SVGP-VAE with m evenly spaced inducing times can do with sites of that
noise: the gap between the sparse and the exact RMSE here is a property of the approximation, not
of training. Writes ``metrics.json``, ``floor.csv`` and ``floor.png`` to ``--out``.

Run from the repository root::

    python examples/paper/studies/moving_ball_sparse_floor.py --out docs/results/moving_ball_sparse_floor

``--quick``: 10 videos, one noise level, m in {15, 30}, a coarse grid (a few seconds).
"""

import argparse
import json
import os
import sys
import time

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_svgpvae import amortized
from svgpvae_paper.datasets.moving_ball import sample_rbf_paths
from svgpvae_paper.experiments.common import git_commit, pyplot, write_csv, write_json
from svgpvae_paper.metrics import affine_path_rmse


def _inputs_and_kernel(times, lengthscale):
    return times[:, None], gpflow.kernels.SquaredExponential(lengthscales=lengthscale)


def exact_bound(times, Y, lengthscale, noise_variance):
    """GPR's log marginal likelihood, summed over the ``n`` columns of ``Y [T, n]``."""
    X, kernel = _inputs_and_kernel(times, lengthscale)
    return float(gpflow.models.GPR((X, Y), kernel, noise_variance=noise_variance).log_marginal_likelihood())


def exact_mean(times, Y, lengthscale, noise_variance):
    """GPR posterior mean ``[T, n]`` at the observed times and :func:`exact_bound`."""
    X, kernel = _inputs_and_kernel(times, lengthscale)
    model = gpflow.models.GPR((X, Y), kernel, noise_variance=noise_variance)
    return model.predict_f(X)[0].numpy(), float(model.log_marginal_likelihood())


def _inducing_times(times, num_inducing):
    return np.linspace(times[0], times[-1], int(num_inducing))[:, None]


def sparse_bound(times, Y, lengthscale, noise_variance, num_inducing):
    """GPflow's SGPR bound with ``num_inducing`` evenly spaced inducing times (held)."""
    X, kernel = _inputs_and_kernel(times, lengthscale)
    Z = _inducing_times(times, num_inducing)
    return float(gpflow.models.SGPR((X, Y), kernel, Z, noise_variance=noise_variance).elbo())


def sparse_mean(times, Y, lengthscale, noise_variance, num_inducing):
    """Sparse posterior mean ``[T, n]`` from the library's amortised posterior (sites = ``Y`` with
    variance ``noise_variance``, scale 1) and :func:`sparse_bound` with the same inducing times."""
    X, kernel = _inputs_and_kernel(times, lengthscale)
    Z = _inducing_times(times, num_inducing)
    variances = np.full_like(Y, noise_variance)
    post = amortized.minibatch_posterior(
        kernel,
        gpflow.inducing_variables.InducingPoints(Z),
        tf.constant(X),
        tf.constant(Y),
        tf.constant(variances),
        num_data=len(times),
        jitter=1e-6,
    )
    return post.mean.numpy(), sparse_bound(times, Y, lengthscale, noise_variance, num_inducing)


def trained_models(path):
    """``{"gpvae": (rmse, lengthscale), "svgpvae": {m: (rmse, lengthscale)}}``, seed means, from the
    metrics.json of `svgpvae moving_ball rmse_vs_m` (keys ``svgpvae_m15``) or `runs` (``svgpvae:15``)."""
    with open(path) as f:
        saved = json.load(f)
    out = {"gpvae": None, "svgpvae": {}}
    for key, rmse in saved["rmse"].items():
        if key not in saved["final_lengthscale"]:  # the VAE has no kernel
            continue
        pair = (rmse["mean"], saved["final_lengthscale"][key]["mean"])
        if key == "gpvae":
            out["gpvae"] = pair
        elif key.startswith("svgpvae"):
            out["svgpvae"][int(key.replace("svgpvae_m", "").replace("svgpvae:", ""))] = pair
    if out["gpvae"] is None:
        raise ValueError(f"{path} has no exact GP-VAE ('gpvae') to compare with")
    return out


def to_paths(columns, num_videos):
    """``[T, V * 2] -> [V, T, 2]``."""
    return columns.reshape(columns.shape[0], num_videos, 2).transpose(1, 0, 2)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--videos", type=int, default=350)
    p.add_argument("--frames", type=int, default=30)
    p.add_argument("--true-lengthscale", type=float, default=2.0)
    p.add_argument("--noise-sds", type=float, nargs="+", default=[0.01, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3])
    p.add_argument("--m-values", type=int, nargs="+", default=[10, 12, 15, 20, 30])
    p.add_argument(
        "--grid",
        type=float,
        nargs=3,
        default=[1.5, 4.0, 0.05],
        metavar=("LO", "HI", "STEP"),
        help="lengthscales searched for the maximum of each bound",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--overlay",
        nargs=2,
        action="append",
        default=[],
        metavar=("LABEL", "METRICS_JSON"),
        help="also plot trained models: a `svgpvae moving_ball rmse_vs_m` or `runs` metrics.json with "
        "the exact GP-VAE and SVGP-VAEs (their RMSE gap and lengthscale, seed means)",
    )
    p.add_argument(
        "--rows-from",
        default=None,
        metavar="METRICS_JSON",
        help="reuse the rows of an earlier run's metrics.json (only re-plot, e.g. with --overlay)",
    )
    p.add_argument("--out", default="results/moving_ball_sparse_floor")
    args = p.parse_args(argv)
    if args.quick:
        args.videos, args.noise_sds, args.grid, args.m_values = 10, [0.05], [1.5, 3.5, 0.5], [15, 30]
    if args.true_lengthscale <= 0 or min(args.noise_sds) <= 0 or min(args.m_values) < 1:
        p.error("--true-lengthscale and --noise-sds must be positive, --m-values at least 1")
    gpflow.config.set_default_float(np.float64)
    t0 = time.perf_counter()
    if args.rows_from:
        with open(args.rows_from) as f:
            rows = json.load(f)["rows"]
    else:
        rows = floor_rows(args)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    exact = np.array([r["exact_rmse"] for r in rows])
    for m in args.m_values:
        axes[0].plot(exact, [r[f"m{m}_rmse"] - r["exact_rmse"] for r in rows], marker="o", label=f"m = {m}")
        axes[1].plot(exact, [r[f"m{m}_best_lengthscale"] for r in rows], marker="o", label=f"m = {m}")
    axes[1].plot(exact, [r["exact_best_lengthscale"] for r in rows], "k--", marker="s", label="exact GP")
    overlays = {}
    for (label, path), marker in zip(args.overlay, "*PXD"):
        trained = trained_models(path)
        overlays[label] = {"path": path, **trained}
        for m, (rmse, lengthscale) in sorted(trained["svgpvae"].items()):
            if m not in args.m_values:
                continue
            colour = f"C{args.m_values.index(m)}"
            axes[0].plot(trained["gpvae"][0], rmse - trained["gpvae"][0], marker, color=colour, ms=11, mec="k")
            axes[1].plot(trained["gpvae"][0], lengthscale, marker, color=colour, ms=11, mec="k")
        axes[1].plot(trained["gpvae"][0], trained["gpvae"][1], marker, color="k", ms=11, label=f"trained: {label}")
    axes[0].axhline(0.02, color="grey", ls=":", label="issue 13: 0.02")
    axes[1].axhspan(
        args.true_lengthscale * 0.85, args.true_lengthscale * 1.15, color="grey", alpha=0.15, label="true ± 15%"
    )
    axes[0].set_ylabel("sparse RMSE − exact RMSE (true lengthscale)")
    axes[1].set_ylabel("lengthscale maximising the bound")
    for ax in axes:
        ax.set_xlabel("exact GP posterior RMSE (set by the noise sd)")
        ax.set_xscale("log")
        ax.legend(fontsize=8)
    axes[0].set_yscale("symlog", linthresh=1e-3)
    axes[0].set_ylim(bottom=0)
    fig.suptitle(
        f"{args.videos} true paths, lengthscale {args.true_lengthscale:g}, {args.frames} frames; "
        f"m evenly spaced inducing times",
        fontsize=10,
    )
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    fig.savefig(os.path.join(args.out, "floor.png"), dpi=120)
    write_csv(os.path.join(args.out, "floor.csv"), rows)
    write_json(
        os.path.join(args.out, "metrics.json"),
        {
            "argv": sys.argv if argv is None else list(argv),
            "config": vars(args),
            "git_commit": git_commit(),
            "description": "true moving-ball paths observed with Gaussian noise; exact GP (GPR) vs the library's "
            "sparse amortised posterior with m evenly spaced inducing times (optimal q(u)); RMSE "
            "affine-aligned per video; best lengthscales maximise the GPR log marginal likelihood "
            "and the SGPR bound on the grid",
            "rows": rows,
            "trained": overlays,
            "wall_seconds": time.perf_counter() - t0,
        },
    )
    return rows


def floor_rows(args):
    """One row per noise sd: exact and sparse RMSE at the true lengthscale, bound-maximising lengthscales."""
    times = np.arange(args.frames, dtype=np.float64)
    rng = np.random.default_rng(args.seed)
    paths = sample_rbf_paths(args.videos, times, args.true_lengthscale, rng)  # [V, T, 2]
    grid = np.arange(args.grid[0], args.grid[1] + 1e-9, args.grid[2])
    rows = []
    for sd in args.noise_sds:
        noisy = paths + sd * rng.standard_normal(paths.shape)
        Y = noisy.transpose(1, 0, 2).reshape(args.frames, -1)  # [T, V * 2]
        s2 = sd**2

        def rmse(mean_columns):
            return affine_path_rmse(to_paths(mean_columns, args.videos), paths)

        def best_lengthscale(bound):  # the grid point maximising bound(lengthscale)
            return float(grid[int(np.argmax([bound(ls) for ls in grid]))])

        row = {
            "noise_sd": sd,
            "exact_rmse": rmse(exact_mean(times, Y, args.true_lengthscale, s2)[0]),
            "exact_best_lengthscale": best_lengthscale(lambda ls: exact_bound(times, Y, ls, s2)),
        }
        for m in args.m_values:
            row[f"m{m}_rmse"] = rmse(sparse_mean(times, Y, args.true_lengthscale, s2, m)[0])
            best = best_lengthscale(lambda ls: sparse_bound(times, Y, ls, s2, m))
            row[f"m{m}_best_lengthscale"] = best
            row[f"m{m}_rmse_at_best_lengthscale"] = rmse(sparse_mean(times, Y, best, s2, m)[0])
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" for k, v in row.items()), flush=True)
    return rows


if __name__ == "__main__":
    main()
