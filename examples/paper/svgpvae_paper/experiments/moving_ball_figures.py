"""Moving-ball experiment: the commands (runs, figures, tables) of
:mod:`svgpvae_paper.experiments.moving_ball`."""

import os
from typing import Dict, List

import numpy as np

from .common import claimed_in_order, mean_sd, pyplot, waiting_postfix
from .moving_ball_runs import NUM_FRAMES, Config, _run_summary, run_path, train_run

__all__ = ["COMMANDS", "cmd_runs", "cmd_rmse_vs_m", "cmd_trajectories", "cmd_lengthscale", "cmd_inducing"]


def _settings_note(cfg: Config) -> str:
    gp_lr = cfg.gp_learning_rate or cfg.learning_rate
    init = "truncated-normal" if cfg.network_init == "truncated_normal" else "Glorot"
    return (
        f"{cfg.steps} steps x {cfg.batch_videos} videos, MLP {'x'.join(map(str, cfg.hidden))} ({init} init), "
        f"Adam {cfg.learning_rate:g} (GP {gp_lr:g}), "
        + (
            f"init lengthscale {cfg.init_lengthscale:g}"
            if cfg.train_lengthscale
            else f"lengthscale fixed at {cfg.init_lengthscale:g}"
        )
        + (
            ""
            if cfg.warm_start_m is None
            else f"; GP models warm-started by {cfg.warm_start_steps} steps of SVGP-VAE m={cfg.warm_start_m}"
        )
        + (f"; kernel held for {cfg.kernel_hold_steps} steps" if cfg.kernel_hold_steps else "")
        + ("; decoder bias at the data's mean logit" if cfg.decoder_bias == "data" else "")
        + ("" if cfg.data_lengthscale == 2.0 else f"; true lengthscale {cfg.data_lengthscale:g}")
    )


def _train_runs(jobs: List[tuple], cfg: Config, cache: str, test, desc: str) -> List[dict]:
    """:func:`train_run` for every ``(kind, seed, m[, inducing_init])`` of ``jobs``, in order; each run
    is claimed while it trains, so two processes with the same ``--cache`` share a sweep."""
    from tqdm.auto import tqdm

    jobs = [tuple(job) + (None,) * (4 - len(job)) for job in jobs]
    bar = tqdm(total=len(jobs), desc=desc, position=0)

    def work(job) -> dict:
        kind, seed, m, init = job
        run = train_run(kind, cfg, seed, m=m, inducing_init=init, cache_dir=cache, test=test)
        bar.update(1)
        return run

    runs = claimed_in_order(
        jobs, lambda job: run_path(cache, job[0], job[2], job[1], cfg, job[3]), work, on_wait=waiting_postfix(bar)
    )
    bar.close()
    return runs


def _caption(fig, cfg: Config):
    """The run settings, wrapped to the figure's width below the axes; then ``tight_layout``."""
    import textwrap

    width_chars = int(fig.get_figwidth() * 15)
    lines = textwrap.wrap(_settings_note(cfg), width_chars)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7, va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.025 + 0.035 * len(lines) * 4 / fig.get_figheight(), 1, 1))


def _summaries(groups: Dict[str, List[dict]]) -> dict:
    """Mean/sd per group of runs: ``rmse``, ``final_lengthscale`` (GP models) and ``test_elbo``
    (over the runs that have it; older cached runs do not)."""
    return {
        "rmse": {name: mean_sd(r["rmse"] for r in g) for name, g in groups.items()},
        "final_lengthscale": {
            name: mean_sd(r["final_lengthscale"] for r in g)
            for name, g in groups.items()
            if any(r["kind"] != "vae" for r in g)
        },
        "test_elbo": {
            name: mean_sd(r["test_elbo"] for r in g if "test_elbo" in r)
            for name, g in groups.items()
            if any("test_elbo" in r for r in g)
        },
    }


def _groups(runs: List[dict], m_values) -> Dict[str, List[dict]]:
    """Runs by model: ``vae``, ``gpvae``, ``svgpvae_m<m>``."""
    groups = {"vae": [r for r in runs if r["kind"] == "vae"], "gpvae": [r for r in runs if r["kind"] == "gpvae"]}
    for m in m_values:
        groups[f"svgpvae_m{m}"] = [r for r in runs if r["kind"] == "svgpvae" and r["m"] == m]
    return groups


def cmd_rmse_vs_m(cfg: Config, cache: str, out: str, test) -> dict:
    specs = [(s, "vae", None) for s in cfg.seeds] + [(s, "gpvae", None) for s in cfg.seeds]
    specs += [(s, "svgpvae", m) for s in cfg.seeds for m in cfg.m_values]
    runs = _train_runs([(kind, seed, m) for seed, kind, m in specs], cfg, cache, test, "rmse_vs_m runs")
    rows = [_run_summary(r) for r in runs]
    summary = _summaries(_groups(runs, cfg.m_values))
    table = summary["rmse"]

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ms = np.asarray(cfg.m_values)
    mean = np.array([table[f"svgpvae_m{m}"]["mean"] for m in ms])
    sd = np.array([table[f"svgpvae_m{m}"]["sd"] for m in ms])
    ax.errorbar(ms, mean, yerr=sd, marker="o", capsize=3, label="SVGP-VAE")
    for kind, colour, label in (("gpvae", "C2", "exact GP-VAE"), ("vae", "C3", "VAE")):
        st = table[kind]
        ax.axhline(st["mean"], color=colour, ls="--", label=label)
        ax.axhspan(st["mean"] - st["sd"], st["mean"] + st["sd"], color=colour, alpha=0.15)
    ax.set_xlabel("number of inducing points m")
    ax.set_ylabel("test RMSE (affine-aligned, path units)")
    ax.set_title(f"Moving ball: {len(cfg.seeds)} seed(s), mean ± sd", fontsize=10)
    ax.legend()
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "rmse_vs_m.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, **summary}


def cmd_trajectories(cfg: Config, cache: str, out: str, test) -> dict:
    from svgpvae_paper.metrics import affine_align

    seed = cfg.seeds[0]
    specs = [("vae", None), ("gpvae", None), ("svgpvae", cfg.trajectory_m)]
    runs = _train_runs([(k, seed, m) for k, m in specs], cfg, cache, test, "trajectory runs")
    n = min(cfg.show_videos, test.num_videos)
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), n, figsize=(2.6 * n, 2.6 * len(runs)), squeeze=False)
    rows = []
    for i, run in enumerate(runs):
        aligned = affine_align(run["means"][:n], test.paths[:n], per_video=True)
        name = "VAE" if run["kind"] == "vae" else "GP-VAE" if run["kind"] == "gpvae" else f"SVGP-VAE (m={run['m']})"
        for v in range(n):
            ax = axes[i, v]
            ax.plot(test.paths[v, :, 0], test.paths[v, :, 1], "k.-", lw=1, ms=3, label="true")
            ax.plot(aligned[v, :, 0], aligned[v, :, 1], ".-", color=f"C{i}", lw=1, ms=3, label="aligned posterior mean")
            ax.set_xlim(-2.3, 2.3)
            ax.set_ylim(2.3, -2.3)  # image convention: y points down
            ax.set_xticks([])
            ax.set_yticks([])
            if v == 0:
                ax.set_ylabel(f"{name}\nRMSE {run['rmse']:.3f}", fontsize=9)
            if i == 0:
                ax.set_title(f"test video {v}", fontsize=9)
            for t in range(NUM_FRAMES):
                rows.append(
                    {
                        "model": run["kind"],
                        "m": run["m"],
                        "seed": seed,
                        "video": v,
                        "t": t,
                        "true_x": test.paths[v, t, 0],
                        "true_y": test.paths[v, t, 1],
                        "aligned_x": aligned[v, t, 0],
                        "aligned_y": aligned[v, t, 1],
                    }
                )
    axes[0, 0].legend(fontsize=6, loc="upper left")
    fig.suptitle("Moving ball test paths (black) and affine-aligned latent means", fontsize=9)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "trajectories.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "runs": [_run_summary(r) for r in runs]}


def cmd_lengthscale(cfg: Config, cache: str, out: str, test) -> dict:
    specs = [(s, "svgpvae", m) for m in cfg.lengthscale_m for s in cfg.seeds] + [(s, "gpvae", None) for s in cfg.seeds]
    runs = _train_runs([(k, s, m) for s, k, m in specs], cfg, cache, test, "lengthscale runs")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4))
    rows = []
    labels = [("svgpvae", m) for m in cfg.lengthscale_m] + [("gpvae", None)]
    for c, (kind, m) in enumerate(labels):
        group = [r for r in runs if r["kind"] == kind and r["m"] == m]
        steps = group[0]["history"]["step"]
        ls = np.stack([r["history"]["lengthscale"] for r in group])
        label = "exact GP-VAE" if kind == "gpvae" else f"SVGP-VAE m={m}"
        ax.plot(steps, ls.mean(0), color=f"C{c}", label=label)
        if len(group) > 1:
            ax.fill_between(steps, ls.min(0), ls.max(0), color=f"C{c}", alpha=0.2)
        for r in group:
            for s, value in zip(r["history"]["step"], r["history"]["lengthscale"]):
                rows.append({"model": kind, "m": m, "seed": r["seed"], "step": int(s), "lengthscale": float(value)})
    ax.axhline(2.0, color="k", ls=":", label="true lengthscale 2")
    if cfg.warm_start_m is not None:
        ax.axvline(cfg.warm_start_steps, color="0.5", ls="--", lw=1, label=f"end of warm start (m={cfg.warm_start_m})")
    ax.set_xlabel("training step")
    ax.set_ylabel("kernel lengthscale (frames)")
    ax.set_title(f"Learned lengthscale ({len(cfg.seeds)} seed(s): mean, min-max band)", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "lengthscale.png"), dpi=130)
    plt.close(fig)
    final = {
        ("gpvae" if k == "gpvae" else f"svgpvae_m{m}"): mean_sd(
            [r["final_lengthscale"] for r in runs if r["kind"] == k and r["m"] == m]
        )
        for k, m in labels
    }
    return {"rows": rows, "final_lengthscale": final, "runs": [_run_summary(r) for r in runs]}


def cmd_inducing(cfg: Config, cache: str, out: str, test) -> dict:
    lo, hi = cfg.inducing_window
    init = np.linspace(lo, hi, cfg.inducing_m)
    runs = _train_runs([("svgpvae", s, cfg.inducing_m, init) for s in cfg.seeds], cfg, cache, test, "inducing runs")
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(max(6, 5 * len(runs)), 4.3), squeeze=False)
    rows = []
    for ax, r in zip(axes[0], runs):
        steps, Z = r["history"]["step"], r["history"]["inducing"]
        ax.plot(steps, Z, color="C0", lw=1)
        ax.axhspan(lo, hi, color="C3", alpha=0.15, label="initial window")
        ax.set_ylim(-1, NUM_FRAMES)
        ax.set_xlabel("training step")
        ax.set_ylabel("inducing time (frames 0-29)")
        ax.set_title(f"m={cfg.inducing_m}, seed {r['seed']}: test RMSE {r['rmse']:.3f}", fontsize=9)
        ax.legend(fontsize=8, loc="upper left")
        for s, z in zip(steps, Z):
            rows.append({"seed": r["seed"], "step": int(s), **{f"z{j}": float(v) for j, v in enumerate(z)}})
    fig.suptitle("Inducing times during training from a bunched initialisation", fontsize=9)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "inducing.png"), dpi=130)
    plt.close(fig)
    spacing = [
        float(np.diff(np.sort(r["final_inducing"])).std() / np.diff(np.sort(r["final_inducing"])).mean()) for r in runs
    ]
    return {
        "rows": rows,
        "runs": [_run_summary(r) for r in runs],
        "initial_inducing": init.tolist(),
        "final_spacing_cv": spacing,
    }


def _parse_model(spec: str):
    kind, _, m = spec.partition(":")
    if kind not in ("vae", "gpvae", "svgpvae") or (kind == "svgpvae") != bool(m):
        raise ValueError(f"model {spec!r}: use vae, gpvae or svgpvae:<m>")
    return kind, (int(m) if m else None)


def cmd_runs(cfg: Config, cache: str, out: str, test) -> dict:
    """Selected models (``--models vae gpvae svgpvae:10``) for every seed: RMSE, lengthscale, test ELBO."""
    parsed = [(spec, *_parse_model(spec)) for spec in cfg.models]
    specs = [(seed, spec, kind, m) for seed in cfg.seeds for spec, kind, m in parsed]
    trained = _train_runs([(kind, seed, m) for seed, spec, kind, m in specs], cfg, cache, test, "runs")
    runs = [{**run, "model": spec} for run, (seed, spec, kind, m) in zip(trained, specs)]
    groups = {spec: [r for r in runs if r["model"] == spec] for spec in cfg.models}
    summary = _summaries(groups)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * len(groups) + 2), 3.8))
    names = list(groups)
    ax.bar(
        range(len(names)),
        [summary["rmse"][n]["mean"] for n in names],
        yerr=[summary["rmse"][n]["sd"] for n in names],
        capsize=4,
        color=[f"C{i}" for i in range(len(names))],
    )
    for i, n in enumerate(names):
        ax.plot([i] * len(groups[n]), [r["rmse"] for r in groups[n]], "k.", ms=5)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylabel("test RMSE (affine-aligned, path units)")
    ax.set_title(f"Moving ball: {len(cfg.seeds)} seed(s), mean ± sd (dots: seeds)", fontsize=10)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "runs.png"), dpi=130)
    plt.close(fig)
    return {"rows": [{"model": r["model"], **_run_summary(r)} for r in runs], **summary}


COMMANDS = {
    "runs": cmd_runs,
    "rmse_vs_m": cmd_rmse_vs_m,
    "trajectories": cmd_trajectories,
    "lengthscale": cmd_lengthscale,
    "inducing": cmd_inducing,
}
