"""The run machinery of the rotated-MNIST figures (:mod:`svgpvae_paper.experiments.rotated_mnist_figures`):
the values each command sweeps over, the shared context (settings, cache, data), training or
reusing every run of a sweep (:func:`run_sweep`, through
:func:`~svgpvae_paper.experiments.rotated_mnist.run_cached`) and the per-run and per-setting
summaries the commands tabulate and plot."""

import os
import tempfile
import textwrap
import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from svgpvae_paper.experiments import rotated_mnist as rm

from .common import claimed_in_order, mean_sd, waiting_postfix
from .rotated_mnist_report import object_init_text

__all__ = [
    "Sweeps",
    "QUICK",
    "QUICK_CONFIG",
    "NUM_ANGLES",
    "SweepContext",
    "per_angle",
    "run_row",
    "run_sweep",
    "summarise_rows",
    "settings_note",
    "errorbar",
    "time_settings",
    "attach_timings",
]

NUM_ANGLES = 16


@dataclass
class Sweeps:
    """The values each command sweeps over (defaults: the paper's)."""

    runtime_m: Sequence[int] = (16, 32, 48, 64)
    runtime_object_dims: Sequence[int] = (8, 16, 24, 32)  # GPPVAE's Q; rank H = 16 Q
    digit_sets: Sequence[Sequence[int]] = ((3,), (1, 3, 6), (1, 3, 6, 7, 9), tuple(range(10)))
    digits_models: Sequence[str] = ("svgpvae",)
    batch_sizes: Sequence[int] = (64, 128, 256, 512)
    m_values: Sequence[int] = (16, 32, 64, 96)
    bias_m: Sequence[int] = (16, 32, 64, 96)
    bias_epochs: Sequence[int] = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
    bias_passes: int = 1
    curve_every: int = 10
    tsne_digits: Sequence[int] = (1, 3, 6, 7, 9)
    tsne_max_points: int = 5000
    tsne_perplexity: float = 30.0
    tsne_iterations: int = 1000
    init_models: Sequence[str] = ("svgpvae", "gppvae")
    # None: the paper's scales (raw PCA scores; random N(0, 1.5^2)); see rotated_mnist.Config.object_scale
    init_scales: Sequence[Optional[float]] = (None,)
    # runtime / digits: > 0 times every setting again in a fresh run of this many epochs, one
    # setting after the other after the sweep (the sweep's own runs may share the cores)
    timing_epochs: int = 0

    def __post_init__(self):
        if self.timing_epochs == 1 or self.timing_epochs < 0:
            raise ValueError(
                f"timing_epochs must be 0 (off) or at least 2 (the first epoch is not timed); got {self.timing_epochs}"
            )


#: ``--quick``: a tiny data set, 2 epochs, 1 seed, two values per sweep.
QUICK_CONFIG = dict(epochs=2, seeds=(0,), n_per_digit=12, eval_every=1, batch_size=32)
QUICK = dict(
    runtime_m=(16, 32),
    runtime_object_dims=(2, 4),
    digit_sets=((3,), (1, 3, 6)),
    batch_sizes=(32, 64),
    m_values=(16, 32),
    bias_m=(16, 32),
    bias_epochs=(0, 1, 2),
    tsne_digits=(1, 3, 6),
    tsne_max_points=1000,
    tsne_iterations=250,
    curve_every=1,
)


# ------------------------------------------------------------------------------ runs
class SweepContext:
    """What every command needs: base settings, sweep values, cache folder, progress, loaded data."""

    def __init__(
        self, base: rm.Config, sweeps: Sweeps, cache: str, progress: bool, argv: Optional[Sequence[str]] = None
    ):
        self.base, self.sweeps, self.cache, self.progress = base, sweeps, cache, progress
        #: the command line, recorded in the run files the sweeps write
        self.argv = argv
        self._data: Dict[tuple, rm.Data] = {}

    @property
    def seeds(self) -> List[int]:
        return list(self.base.seeds)

    def config(self, **changes) -> rm.Config:
        """The base settings with ``changes``; runs are cached in ``self.cache``."""
        return replace(self.base, out=self.cache, **changes)

    def data(self, cfg: rm.Config) -> rm.Data:
        key = (tuple(cfg.digits), cfg.n_per_digit, cfg.data_seed)
        if key not in self._data:
            self._data[key] = rm.load_data(cfg)
        return self._data[key]


def per_angle(m: int) -> int:
    if m % NUM_ANGLES or m <= 0:
        raise ValueError(f"m must be a positive multiple of {NUM_ANGLES} (inducing points per angle); got {m}")
    return m // NUM_ANGLES


def run_row(res: dict, **labels) -> dict:
    """The numbers of one run, for the CSV and the JSON."""
    spec = res.get("spec", {})
    return {
        **labels,
        "model": res["model"],
        "seed": int(res["seed"]),
        "test_mse_mean": float(res["test_mse_mean"]),
        "test_mse_sample": float(res["test_mse_sample"]),
        "best_eval_mse": float(res["best_eval_mse"]),
        "best_epoch": res["best_epoch"],
        "seconds_per_epoch": float(res["seconds_per_epoch"]),
        "epochs": int(res["epochs"]),
        "num_data": int(res["num_data"]),
        "m": NUM_ANGLES * int(spec["num_inducing_per_angle"]) if res["model"] in ("svgpvae", "deep_svigp") else None,
        "object_dim": int(spec["object_dim"]) if spec else None,
        "batch_size": int(spec["batch_size"]) if spec else None,
        "digits": "-".join(str(d) for d in spec.get("digits", ())),
        "object_init": spec.get("object_init"),
        "object_scale": spec.get("object_scale"),
        # the last epoch's model (runs cached before this was recorded: None)
        "test_mse_mean_final": res.get("test_mse_mean_final"),
        "test_mse_sample_final": res.get("test_mse_sample_final"),
        "cached": bool(res.get("cached", False)),
    }


def _epoch_postfix(bar, label: str, epochs: int) -> Callable[[int, object, dict], None]:
    """An ``on_epoch`` that shows the epoch of the run in training: a 1000-epoch run takes tens of
    minutes, and the bar over runs would otherwise stand still that long."""

    last = {"shown": time.monotonic()}

    def on_epoch(epoch: int, model, logs: dict) -> None:
        now = time.monotonic()
        shown = now - last["shown"] >= bar.mininterval or epoch + 1 == epochs
        bar.set_postfix_str(f"{label}, epoch {epoch + 1}/{epochs}", refresh=shown)
        if shown:
            last["shown"] = now

    return on_epoch


def run_sweep(
    ctx: SweepContext, specs: List[Tuple[str, dict, dict]], desc: str, poll_seconds: float = 30.0
) -> List[dict]:
    """Train (or reuse) every ``(model, config changes, labels)`` for every seed; one row per run.

    Each run is claimed (:class:`~svgpvae_paper.experiments.common.RunClaim`) while it trains, so
    a second process on the same sweep and cache trains the other runs: a run claimed by another
    live process is skipped, and after the pass this process waits for it (polling every
    ``poll_seconds``) and reuses it, or trains it if its owner died.
    """
    from tqdm.auto import tqdm

    jobs = [(name, changes, labels, seed) for seed in ctx.seeds for name, changes, labels in specs]
    bar = tqdm(total=len(jobs), desc=desc, disable=not ctx.progress, mininterval=1.0)

    def work(job) -> dict:
        name, changes, labels, seed = job
        cfg = ctx.config(**changes)
        label = f"{name} {' '.join(f'{k}={v}' for k, v in changes.items())} seed {seed}"
        bar.set_postfix_str(label)
        res = rm.run_cached(
            name,
            ctx.data(cfg),
            cfg,
            seed,
            progress=False,
            images=False,
            on_epoch=_epoch_postfix(bar, label, cfg.epochs) if ctx.progress else None,
            argv=ctx.argv,
        )
        res.pop("_images", None)
        bar.update(1)
        return {**run_row(res, **labels), "run": os.path.basename(rm.run_path(name, seed, cfg))}

    rows = claimed_in_order(
        jobs,
        lambda job: rm.run_path(job[0], job[3], ctx.config(**job[1])),
        work,
        poll_seconds=poll_seconds,
        on_wait=waiting_postfix(bar),
    )
    bar.close()
    return rows


def time_settings(ctx: SweepContext, specs: List[Tuple[str, dict, dict]], epochs: int, desc: str) -> List[dict]:
    """Seconds per epoch of every ``(model, config changes, labels)``, timed one setting after the
    other in fresh, uncached runs of ``epochs`` epochs (first seed, evaluated only after the last
    epoch): the median wall time of the epochs after the first. The sweep's own runs may have shared
    the cores with other runs, so their times are comparable only under equal load; these are made
    back to back in one process. Each entry also records the load average before and after.
    """
    import tensorflow as tf
    from tqdm.auto import tqdm

    timed = []
    seed = ctx.seeds[0]
    for name, changes, labels in tqdm(specs, desc=desc, disable=not ctx.progress):
        cfg = replace(ctx.config(**changes), epochs=epochs, eval_every=epochs)
        load_before = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as workdir:
            res = rm.run_model(name, ctx.data(cfg), cfg, seed, workdir)
        timed.append(
            {
                "model": name,
                **labels,
                "seconds_per_epoch": float(res["seconds_per_epoch"]),
                "first_epoch_seconds": res["first_epoch_seconds"],
                "epochs": epochs,
                "seed": seed,
                "num_data": int(res["num_data"]),
                "load_average_before": load_before,
                "load_average_after": os.getloadavg()[0],
                "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            }
        )
    return timed


def attach_timings(summary: List[dict], timed: List[dict], keys: Sequence[str]) -> None:
    """Put each setting's separately timed s/epoch into its summary (``seconds_per_epoch_timed``)."""
    by_key = {tuple(t[k] for k in keys): t["seconds_per_epoch"] for t in timed}
    for s in summary:
        s["seconds_per_epoch_timed"] = by_key[tuple(s[k] for k in keys)]


def summarise_rows(
    rows: List[dict], keys: Sequence[str], extra: Optional[Callable[[List[dict]], dict]] = None
) -> List[dict]:
    """Mean +- sd of the test MSE and median s/epoch per group of ``keys`` (first-seen order);
    ``extra(group_rows)`` adds entries of its own to each group's summary."""
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        out.append(
            {
                **dict(zip(keys, key)),
                "test_mse_mean": mean_sd(r["test_mse_mean"] for r in rs),
                "test_mse_sample": mean_sd(r["test_mse_sample"] for r in rs),
                "seconds_per_epoch": float(np.median([r["seconds_per_epoch"] for r in rs])),
                "num_data": rs[0]["num_data"],
                "seeds": [r["seed"] for r in rs],
                **(extra(rs) if extra is not None else {}),
            }
        )
    return out


def settings_note(cfg: rm.Config, skip: Sequence[str] = ()) -> str:
    parts = {
        "digits": f"digit(s) {','.join(map(str, cfg.digits))}",
        "n": f"n_per_digit={cfg.n_per_digit}",
        "m": f"m={16 * cfg.num_inducing_per_angle}",
        "b": f"b={cfg.batch_size}",
        "Q": f"Q={cfg.object_dim}",
        "epochs": f"{cfg.epochs} epochs",
        "seeds": f"{len(cfg.seeds)} seed(s)",
    }
    kept = ", ".join(v for k, v in parts.items() if k not in skip)
    return textwrap.fill(
        kept
        + f", L={cfg.num_latent}, GECO kappa^2={cfg.kappa_squared}"
        + ("" if cfg.learning_rate == 1e-3 else f", Adam {cfg.learning_rate:g}")
        + ("" if cfg.object_learning_rate is None else f", object vectors Adam {cfg.object_learning_rate:g}")
        + ("" if cfg.eval_placement == "affine" else f", eval vectors fitted ({cfg.eval_fit_steps} steps)")
        + (
            ""
            if (cfg.object_init, cfg.object_scale) == ("pca", None)
            else f", object init {object_init_text(cfg.object_init, cfg.object_scale)}"
        ),
        width=100,
    )


def errorbar(ax, summary: List[dict], x_key: str, label: str, **kwargs):
    x = [s[x_key] for s in summary]
    y = [s["test_mse_mean"]["mean"] for s in summary]
    sd = [s["test_mse_mean"]["sd"] for s in summary]
    ax.errorbar(x, y, yerr=sd, marker="o", capsize=3, label=label, **kwargs)
