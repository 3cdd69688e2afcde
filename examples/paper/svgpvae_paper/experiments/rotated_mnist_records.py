"""Rotated-MNIST figures recorded *during* training (``bias``, ``convergence``): a finished
run cannot replay its epochs, so these commands train with an ``on_epoch`` recorder and keep
the record beside the run (``<cache>/<command>/records/``). The commands are documented in
:mod:`~svgpvae_paper.experiments.rotated_mnist_figures`."""

import os
from dataclasses import replace
from typing import Sequence, Tuple

import numpy as np

from svgpvae_paper.estimators import inducing_mean_bias
from svgpvae_paper.experiments import rotated_mnist as rm

from .common import git_commit, mean_sd, pyplot, read_json, run_key, write_json
from .rotated_mnist_sweeps import SweepContext, per_angle, run_row, settings_note

__all__ = ["cmd_bias", "cmd_convergence", "PAPER_MSE"]

#: Paper, Table 1 (test MSE) for the reference lines of the figures.
PAPER_MSE = {name: values[0] for name, values in rm.PAPER_TABLE1.items()}


def _record_path(cfg: rm.Config, name: str, seed: int) -> str:
    spec = rm.run_spec(name, seed, cfg)
    return os.path.join(cfg.out, "records", run_key(f"{name}_seed{seed}", spec) + ".json")


def cmd_bias(ctx: SweepContext, out: str) -> dict:
    from tqdm.auto import tqdm

    sw = ctx.sweeps
    wanted = sorted({int(e) for e in sw.bias_epochs if 0 <= int(e) <= ctx.base.epochs})
    jobs = [(m, seed) for seed in ctx.seeds for m in sw.bias_m]
    rows, runs = [], []
    bar = tqdm(jobs, desc="bias runs", disable=not ctx.progress, mininterval=1.0)
    for m, seed in bar:
        bar.set_postfix_str(f"m={m} seed {seed}")
        cfg = replace(ctx.config(num_inducing_per_angle=per_angle(m)), out=os.path.join(ctx.cache, "bias"))
        data = ctx.data(cfg)
        record_path = _record_path(cfg, "svgpvae", seed)
        record = read_json(record_path) if os.path.exists(record_path) else None
        if (
            record is None
            or not set(wanted) <= {int(e) for e in record["epochs"]}
            or record.get("passes", 1) != int(sw.bias_passes)
        ):
            record, res = _train_with_bias(ctx, cfg, data, seed, wanted, record_path)
        else:
            res = rm.run_cached("svgpvae", data, cfg, seed, progress=False, images=False)
        res.pop("_images", None)
        runs.append(run_row(res, setting=f"m={m}"))
        for e, value, dev, nb in zip(
            record["epochs"], record["relative_bias"], record["precision_relative_deviation"], record["num_batches"]
        ):
            if int(e) in wanted:
                rows.append(
                    {
                        "m": m,
                        "seed": seed,
                        "epoch": int(e),
                        "relative_bias": value,
                        "passes": record["passes"],
                        "precision_relative_deviation": dev,
                        "num_batches": nb,
                        "batch_size": cfg.batch_size,
                        "num_data": data.num_data,
                    }
                )
    bar.close()
    summary = []
    for m in sw.bias_m:
        for e in wanted:
            vals = [r["relative_bias"] for r in rows if r["m"] == m and r["epoch"] == e]
            summary.append({"m": m, "epoch": e, "relative_bias": mean_sd(vals)})
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for c, m in enumerate(sw.bias_m):
        group = [s for s in summary if s["m"] == m]
        x = np.array([s["epoch"] for s in group], float)
        y = np.array([s["relative_bias"]["mean"] for s in group])
        sd = np.array([s["relative_bias"]["sd"] for s in group])
        ax.plot(x, y, "o-", color=f"C{c}", label=f"m={m}")
        if len(ctx.seeds) > 1:
            ax.fill_between(x, y - sd, y + sd, color=f"C{c}", alpha=0.2)
    if wanted and wanted[-1] > 10:
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("log")
    ax.set_xlabel("epoch (0: initial model)")
    ax.set_ylabel(r"relative bias $\|\mathrm{avg}_b\,\mu_b - \mu\|_F / \|\mu\|_F$")
    fig.suptitle(
        "Bias of the minibatch estimator of the inducing mean (mean ± sd over seeds)\n"
        + settings_note(ctx.base, skip=("m",)),
        fontsize=8,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bias.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "summary": summary, "runs": runs, "bias_m": list(sw.bias_m), "bias_epochs": wanted}


def _train_recording(
    cfg: rm.Config, data: rm.Data, seed: int, record: dict, on_epoch, record_path: str, argv=None
) -> dict:
    """Train the SVGP-VAE again (a finished run cannot replay ``on_epoch``) with ``on_epoch``
    filling ``record``; save the record (with the run record of the command line ``argv``) and
    return the run's result."""
    spec = rm.run_spec("svgpvae", seed, cfg)
    record.update(spec=spec, git_commit=git_commit())
    res = rm.run_cached("svgpvae", data, cfg, seed, progress=False, on_epoch=on_epoch, retrain=True, argv=argv)
    write_json(record_path, record, argv=argv, config=spec)
    return res


def _train_with_bias(
    ctx: SweepContext, cfg: rm.Config, data: rm.Data, seed: int, wanted: Sequence[int], record_path: str
) -> Tuple[dict, dict]:
    """Train the SVGP-VAE with ``on_epoch`` recording :func:`inducing_mean_bias`; save the record and
    return it with the run's result."""
    record = {
        "epochs": [],
        "relative_bias": [],
        "precision_relative_deviation": [],
        "num_batches": [],
        "passes": int(ctx.sweeps.bias_passes),
    }

    def add(epoch, model):
        value = inducing_mean_bias(
            model,
            data.X_train,
            data.Y_train,
            cfg.batch_size,
            seed=seed * 100_003 + epoch,
            passes=ctx.sweeps.bias_passes,
        )
        record["epochs"].append(int(epoch))
        for key in ("relative_bias", "precision_relative_deviation", "num_batches"):
            record[key].append(value[key])

    if 0 in wanted:
        add(0, rm.build_model("svgpvae", data, cfg, seed))  # the same initial model the run starts from

    def on_epoch(epoch, model, logs):
        if epoch + 1 in wanted:
            add(epoch + 1, model)

    return record, _train_recording(cfg, data, seed, record, on_epoch, record_path, argv=ctx.argv)


# --------------------------------------------------------------------- convergence
def cmd_convergence(ctx: SweepContext, out: str) -> dict:
    from tqdm.auto import tqdm

    every = int(ctx.sweeps.curve_every)
    wanted = [e for e in range(every, ctx.base.epochs + 1, every)]
    rows, runs = [], []
    cfg = replace(ctx.config(), out=os.path.join(ctx.cache, "convergence"))
    data = ctx.data(cfg)
    bar = tqdm(ctx.seeds, desc="convergence runs", disable=not ctx.progress, mininterval=1.0)
    for seed in bar:
        record_path = _record_path(cfg, "svgpvae", seed)
        record = read_json(record_path) if os.path.exists(record_path) else None
        if record is None or not set(wanted) <= {int(e) for e in record["epochs"]}:
            record, res = _train_with_curve(cfg, data, seed, wanted, record_path, argv=ctx.argv)
        else:
            res = rm.run_cached("svgpvae", data, cfg, seed, progress=False, images=False)
        res.pop("_images", None)
        runs.append(run_row(res, setting="convergence"))
        for e, mean_mse, sample_mse, lam in zip(
            record["epochs"], record["test_mse_mean"], record["test_mse_sample"], record["geco_lambda"]
        ):
            if int(e) in wanted:
                rows.append(
                    {
                        "seed": seed,
                        "epoch": int(e),
                        "test_mse_mean": mean_mse,
                        "test_mse_sample": sample_mse,
                        "geco_lambda": lam,
                    }
                )
    bar.close()
    summary = [
        {
            "epoch": e,
            **{key: mean_sd([r[key] for r in rows if r["epoch"] == e]) for key in ("test_mse_mean", "test_mse_sample")},
        }
        for e in wanted
    ]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    x = np.array(wanted, float)
    for c, (key, label) in enumerate((("test_mse_mean", "decoded mean"), ("test_mse_sample", "decoded sample"))):
        y = np.array([s[key]["mean"] for s in summary])
        sd = np.array([s[key]["sd"] for s in summary])
        ax.plot(x, y, "o-", ms=3, color=f"C{c}", label=label)
        if len(ctx.seeds) > 1:
            ax.fill_between(x, y - sd, y + sd, color=f"C{c}", alpha=0.2)
    ax.axhline(PAPER_MSE["svgpvae"], color="k", ls="--", lw=1, label=f"paper, 1000 epochs ({PAPER_MSE['svgpvae']})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test MSE (current model)")
    ax.legend(fontsize=8)
    fig.suptitle(
        "Rotated MNIST: SVGP-VAE test MSE during training (mean ± sd over seeds)\n" + settings_note(ctx.base),
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "summary": summary, "runs": runs, "curve_every": every}


def _train_with_curve(
    cfg: rm.Config, data: rm.Data, seed: int, wanted: Sequence[int], record_path: str, argv=None
) -> Tuple[dict, dict]:
    """Train the SVGP-VAE recording the test MSE (decoded mean and sample) after the epochs in
    ``wanted``; save the record and return it with the run's result."""
    record = {"epochs": [], "test_mse_mean": [], "test_mse_sample": [], "geco_lambda": []}

    def on_epoch(epoch, model, logs):
        if epoch + 1 in wanted:
            mean, sample = rm.predict("svgpvae", model, data, "test", seed=seed, cfg=cfg)
            record["epochs"].append(epoch + 1)
            record["test_mse_mean"].append(rm.mse(mean, data.Y_test))
            record["test_mse_sample"].append(rm.mse(sample, data.Y_test))
            record["geco_lambda"].append(float(logs.get("geco_lambda", float("nan"))))

    return record, _train_recording(cfg, data, seed, record, on_epoch, record_path, argv=argv)
