r"""Moving-ball experiments of the SVGP-VAE paper (Jazbec et al. 2021, after Pearce 2019).

Usage::

    python -m svgpvae_paper.experiments.moving_ball runs --models vae gpvae svgpvae:15 [...]
    python -m svgpvae_paper.experiments.moving_ball rmse_vs_m   [--quick] [--seeds 0 1 2] [--steps N] [--out DIR]
    python -m svgpvae_paper.experiments.moving_ball trajectories [...]
    python -m svgpvae_paper.experiments.moving_ball lengthscale  [...]
    python -m svgpvae_paper.experiments.moving_ball inducing     [...]

Every command writes ``<command>.png``, ``<command>.csv`` and ``<command>.json``
(the configuration, per-run timings and the summary numbers) to ``--out``
(default ``results/moving_ball/<command>[_quick]``).

Protocol (paper defaults, used unless overridden): 32x32 binary frames,
T = 30, one GP per video (b = N = 30), 35 fresh videos per step from
:func:`~svgpvae_paper.datasets.moving_ball_stream` (seeded by the run's
seed), MLP encoder/decoder 2 x 500 tanh (the paper: one hidden layer of
500, weights from a truncated normal with std 1/sqrt(fan_in):
``--hidden 500 --network-init truncated_normal``), L = 2, Bernoulli decoder,
Adam 1e-3, 25,000 steps, one Monte Carlo sample; RBF kernel with variance
fixed to 1 and a trainable lengthscale; SVGP-VAE inducing times trainable,
initialised evenly on [0, 29]. The test
set is :func:`~svgpvae_paper.datasets.moving_ball_test_set` (350 videos,
seed ``--test-seed``, the same for every run); the metric is the RMSE per
coordinate, in GP path units, between the true paths and the posterior
means after the best affine map fitted per video
(:func:`~svgpvae_paper.metrics.affine_path_rmse`).

``--gp-learning-rate`` gives the kernel hyperparameters and inducing inputs their own
Adam learning rate (default 1e-2, as in every committed result of the recipe; ``--paper``: the
same as the networks, as in the paper; Adam is elementwise, so two Adams with equal rates are
one Adam). With Adam a
parameter moves by at most about one learning rate per step, so with far
fewer than 25,000 steps a larger ``--gp-learning-rate`` is needed for the lengthscale
and the inducing times to travel as far as in the paper.

``--paper`` runs the paper's protocol instead (:data:`PAPER`: one hidden layer of 500 with
truncated-normal weights, no hold, zero output bias, initial lengthscale 1, the GP part at the
networks' rate, 25,000 steps); options given explicitly win over it.

Training from random networks (the default): the
lengthscale starts at ``--init-lengthscale`` 6, above the true 2, and is held
there for ``--kernel-hold-steps`` 1000 steps
(:class:`~gpflow_svgpvae.training.DelayedStart`), and the decoder's output
bias starts at the data's mean logit (``--decoder-bias data``,
:func:`~gpflow_svgpvae.networks.set_output_bias`). Without the two (``--kernel-hold-steps 0
--decoder-bias zeros --init-lengthscale 1``) the exact GP-VAE and the SVGP-VAE with m >= 20
fit the lengthscale to the encoder's first, entangled paths and stay in that
optimum; these are the paper's defaults, and the earlier results of docs/results.md.
With the paper's single hidden layer of 500 units the recipe was not enough
within 3,000 steps: those networks learn about three times slower (trained from
the true ball positions, `examples/paper/studies/moving_ball_decoder_capacity.py`), and the
exact GP-VAE reaches the good optimum with them after 12,000 steps
(docs/results.md). The two hidden layers of the default get there in 3,000.

``--warm-start-num-inducing M --warm-start-steps W`` trains every GP model's first W
steps as an SVGP-VAE with M inducing points, then continues from its networks
and lengthscale (fresh Adam state, same video stream) for the remaining
``--steps`` minus W. From scratch, the exact GP-VAE and the SVGP-VAE with many
inducing points settle in a solution with a short lengthscale and entangled
latents; started from a small-m solution they keep disentangled latents (fully
in two of three seeds measured, partly in the third) and reach a higher ELBO
(docs/results.md). The warm phase is shared by all
models of a seed (its weights are cached under ``<cache>/weights``).

Trained runs are cached in ``--cache`` (default ``results/moving_ball/runs[_quick]``),
keyed by every setting that affects them, so e.g. ``trajectories`` and
``lengthscale`` reuse the runs of an earlier ``rmse_vs_m`` with the same settings.
Two processes with the same command and ``--cache`` share the work: each run is claimed
while it trains (``<run key>.claim``), and a process reuses the runs the other trained.
"""

import argparse
import dataclasses
import os
import time
from typing import List, Optional, Sequence

from .common import SITE_PARAMETRIZATIONS, command_argv, git_commit, write_csv, write_json
from .moving_ball_figures import (  # noqa: F401  (re-exported)
    COMMANDS,
    _caption,
    _groups,
    _parse_model,
    _settings_note,
    _summaries,
    cmd_inducing,
    cmd_lengthscale,
    cmd_rmse_vs_m,
    cmd_runs,
    cmd_trajectories,
)
from .moving_ball_runs import (  # noqa: F401  (re-exported)
    IMAGE_SIZE,
    NUM_FRAMES,
    PAPER,
    PAPER_M,
    QUICK,
    Config,
    _fit,
    _gp_modules,
    _lengthscale,
    _optimizer,
    _Progress,
    _run_summary,
    _times,
    _trained_model,
    build_model,
    evaluate,
    run_key,
    train_run,
)

__all__ = ["Config", "PAPER", "QUICK", "train_run", "config_from_args", "main"]


def _write(out: str, name: str, rows: List[dict], payload: dict, argv: Optional[Sequence[str]] = None):
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, f"{name}.csv"), rows)
    write_json(os.path.join(out, f"{name}.json"), payload, argv=argv)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.moving_ball",
        description="Moving-ball experiments of the SVGP-VAE paper.",
    )
    p.add_argument("command", choices=sorted(COMMANDS))
    p.add_argument(
        "--paper",
        action="store_true",
        help="the paper's protocol (one hidden layer of 500, truncated-normal weights, no kernel hold, zero "
        "output bias, initial lengthscale 1, GP part at the networks' rate) instead of the default recipe",
    )
    p.add_argument("--quick", action="store_true", help="small, fast settings (a couple of minutes)")
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--steps", type=int)
    p.add_argument("--models", nargs="+", help="models for `runs`: vae, gpvae, svgpvae:<m> (e.g. svgpvae:15)")
    p.add_argument("--num-inducing", type=int, nargs="+", dest="m_values", help="inducing-point counts m for rmse_vs_m")
    p.add_argument(
        "--lengthscale-num-inducing",
        type=int,
        nargs="+",
        dest="lengthscale_m",
        help="inducing-point counts m for lengthscale",
    )
    p.add_argument("--trajectory-num-inducing", type=int, dest="trajectory_m")
    p.add_argument("--inducing-num-inducing", type=int, dest="inducing_m")
    p.add_argument("--inducing-window", type=float, nargs=2)
    p.add_argument("--hidden", type=int, nargs="+", help="hidden layer widths (default: 500 500; the paper's: 500)")
    p.add_argument(
        "--network-init",
        choices=("truncated_normal", "glorot"),
        help="weights: Keras' Glorot uniform (default) or the paper's truncated normal, std 1/sqrt(fan_in)",
    )
    p.add_argument("--learning-rate", type=float, dest="learning_rate")
    p.add_argument(
        "--gp-learning-rate",
        type=float,
        dest="gp_learning_rate",
        help="Adam rate of the kernel and inducing inputs (default 1e-2; --paper: the networks' rate)",
    )
    p.add_argument("--init-lengthscale", type=float)
    p.add_argument(
        "--fix-lengthscale",
        action="store_false",
        dest="train_lengthscale",
        default=None,
        help="keep the kernel lengthscale fixed at --init-lengthscale (default: trained)",
    )
    p.add_argument(
        "--warm-start-num-inducing",
        type=int,
        dest="warm_start_m",
        help="warm start: train an SVGP-VAE with this many inducing points first, then each GP model "
        "from its networks and lengthscale",
    )
    p.add_argument("--warm-start-steps", type=int, help="steps of the warm-start phase (part of --steps)")
    p.add_argument(
        "--kernel-hold-steps",
        type=int,
        help="hold the kernel hyperparameters at their initial values for this many steps "
        "(GP models; default 1000, 0: train them from the first step)",
    )
    p.add_argument(
        "--data-lengthscale", type=float, help="true lengthscale of the ball's paths in frames (default 2, the paper's)"
    )
    p.add_argument(
        "--decoder-bias",
        choices=("zeros", "data"),
        help="decoder output bias: the data's mean logit (default) or zeros",
    )
    p.add_argument(
        "--site-parametrization",
        choices=SITE_PARAMETRIZATIONS,
        help="GP models' encoder head: site mean and variance (default) or natural parameters",
    )
    p.add_argument("--test-videos", type=int)
    p.add_argument("--test-seed", type=int)
    p.add_argument("--record-every", type=int)
    p.add_argument("--threads", type=int, default=None, help="TensorFlow intra-op threads")
    p.add_argument("--out")
    p.add_argument("--cache")
    return p.parse_args(argv)


def config_from_args(args) -> Config:
    """The :class:`Config` of parsed arguments: the defaults (the recipe), :data:`PAPER` with
    ``--paper`` (with ``--quick``, :data:`QUICK`'s sizes and the paper's training choices), then
    every option given explicitly; a bad setting exits with its message."""
    settings = dict(QUICK) if args.quick else {}
    if args.paper:
        sizes = ("steps", "hidden") if args.quick else ()
        settings.update({k: v for k, v in PAPER.items() if k not in sizes})
    cfg = Config(**settings)
    for field in dataclasses.fields(Config):
        value = getattr(args, field.name, None)
        if value is not None:
            setattr(cfg, field.name, tuple(value) if isinstance(value, list) else value)
    try:
        cfg = dataclasses.replace(cfg)  # re-runs the checks of Config.__post_init__
    except ValueError as error:
        raise SystemExit(f"moving_ball: {error}")
    for spec in cfg.models:
        try:
            _parse_model(spec)
        except ValueError as error:
            raise SystemExit(f"--models: {error}")
    return cfg


def main(argv=None) -> dict:
    args = parse_args(argv)
    command = command_argv("moving_ball", argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    cfg = config_from_args(args)
    suffix = "_quick" if args.quick else ""
    out = args.out or os.path.join("results", "moving_ball", args.command + suffix)
    cache = args.cache or os.path.join("results", "moving_ball", "runs" + suffix)
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    test = cfg.test_set()
    result = COMMANDS[args.command](cfg, cache, out, test)
    wall = time.perf_counter() - start
    rows = result.pop("rows")
    payload = {
        "command": args.command,
        "argv": command,
        "quick": args.quick,
        "config": dataclasses.asdict(cfg),
        "git_commit": git_commit(),
        "wall_seconds": wall,
        "cache_dir": cache,
        **result,
    }
    _write(out, args.command, rows, payload, argv=command)
    for name in ("rmse", "final_lengthscale", "test_elbo"):
        for key, st in payload.get(name, {}).items():
            print(f"{name:>17} {key:>14}: {st['mean']:.4f} +- {st['sd']:.4f} (n={st['n']})")
    if "final_spacing_cv" in payload:
        print("final inducing spacing (sd/mean of gaps):", payload["final_spacing_cv"])
    print(f"wall time {wall:.0f} s")
    print(f"wrote {out}/{args.command}.png, .csv, .json")
    return payload


if __name__ == "__main__":
    main()
