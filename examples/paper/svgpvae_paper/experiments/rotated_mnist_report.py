"""Tables and figures of the rotated-MNIST Table 1 (:mod:`svgpvae_paper.experiments.rotated_mnist`):
labels and the paper's numbers, the summary rows of finished runs, ``table1.md`` /
``table1.csv`` and the PNGs of generated images."""

import os
from typing import Dict, List, Sequence

import numpy as np

from .common import mean_sd, pyplot, write_csv

__all__ = [
    "LABELS",
    "COMPLEXITY",
    "PAPER_TABLE1",
    "plot_generated",
    "summary_rows",
    "object_init_text",
    "settings_line",
    "write_tables",
]

LABELS = {"cvae": "CVAE", "gppvae": "GPPVAE (Casale)", "svgpvae": "SVGP-VAE", "deep_svigp": "Deep SVIGP (Hensman)"}
COMPLEXITY = {"cvae": "-", "gppvae": "O(N H^2)", "svgpvae": "O(b m^2 + m^3)", "deep_svigp": "O(b m^2 + m^3)"}
PAPER_TABLE1 = {  # MSE mean, sd, s/epoch (11 GB GPU)
    "cvae": (0.0796, 0.0023, 0.39),
    "gppvae": (0.0370, 0.0012, 19.10),
    "svgpvae": (0.0251, 0.0005, 1.90),
    "deep_svigp": (0.0233, 0.0014, 1.15),
}


def plot_generated(path: str, truth, rows: Dict[str, np.ndarray]):
    """A PNG of the ground truth images ``[n, 28, 28, 1]`` above each row of ``rows`` (label -> images)."""
    plt = pyplot()

    names = ["ground truth"] + list(rows)
    images = [truth] + list(rows.values())
    n = truth.shape[0]
    fig, axes = plt.subplots(len(names), n, figsize=(n * 0.9, len(names) * 1.0), squeeze=False)
    for r, (label, imgs) in enumerate(zip(names, images)):
        for c in range(n):
            ax = axes[r, c]
            ax.imshow(np.clip(imgs[c, ..., 0], 0, 1), cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r, 0].set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def summary_rows(results: List[dict], models: Sequence[str]):
    """One row per model of ``models`` with runs in ``results``: mean +- sd over the runs, beside the paper."""
    rows = []
    for name in models:
        rs = [r for r in results if r["model"] == name]
        if not rs:
            continue

        def stat(key):  # (mean, sd): the format of metrics.json
            st = mean_sd(r[key] for r in rs)
            return st["mean"], st["sd"]

        paper = PAPER_TABLE1[name]
        rows.append(
            {
                "model": LABELS[name],
                "runs": len(rs),
                "seeds": sorted(int(r["seed"]) for r in rs),
                "epochs": sorted({int(r["epochs"]) for r in rs}),
                "test_mse_mean": stat("test_mse_mean"),
                "test_mse_sample": stat("test_mse_sample"),
                "best_eval_mse": stat("best_eval_mse"),
                "best_epochs": [r["best_epoch"] for r in rs],
                "gp_complexity": COMPLEXITY[name],
                "seconds_per_epoch": float(np.median([r["seconds_per_epoch"] for r in rs])),
                "paper_mse": f"{paper[0]:.4f} +- {paper[1]:.4f}",
                "paper_seconds_per_epoch": paper[2],
            }
        )
    return rows


def object_init_text(object_init: str, object_scale=None) -> str:
    """How the object vectors were initialised, e.g. ``"pca"`` or ``"random (scale 0.1)"``."""
    return object_init + ("" if object_scale is None else f" (scale {object_scale:g})")


def settings_line(specs: List[dict]) -> str:
    """One sentence with the settings shared by all runs, and the ones that differ."""
    keys = [k for k in specs[0] if k not in ("model", "seed")]
    common = {k: specs[0][k] for k in keys if all(s.get(k) == specs[0][k] for s in specs)}
    differ = [k for k in keys if k not in common]
    m = common.get("num_inducing_per_angle")
    text = (
        f"Rotated MNIST (digit(s) {common.get('digits', '?')}, n_per_digit={common.get('n_per_digit', '?')}), "
        f"L={common.get('num_latent', '?')}, m={'?' if m is None else 16 * m}, b={common.get('batch_size', '?')}, "
        f"Adam {common.get('learning_rate', '?')}"
        + ("" if common.get("object_learning_rate") is None else f" (object vectors {common['object_learning_rate']})")
        + f", GECO kappa^2={common.get('kappa_squared', '?')}, "
        f"object init {object_init_text(common.get('object_init', '?'), common.get('object_scale'))}"
        f", eval every {common.get('eval_every', '?')} epochs"
        + (
            ""
            if common.get("eval_placement", "affine") == "affine"
            else f" (eval vectors fitted, {common.get('eval_fit_steps', 50)} steps)"
        )
        + ", "
        f"jit_compile={common.get('jit_compile', '?')}."
    )
    if differ:
        text += " Settings that differ between runs: " + ", ".join(differ) + "."
    return text + " Mean +- sd over runs; test scored once with the checkpoint of best eval MSE."


def write_tables(out: str, rows, header_text: str):
    """``table1.md`` and ``table1.csv`` in ``out`` from :func:`summary_rows`; returns the Markdown."""

    def pm(t):
        return f"{t[0]:.4f} +- {t[1]:.4f}"

    header = [
        "model",
        "runs",
        "epochs",
        "test MSE (decoded mean)",
        "test MSE (decoded sample)",
        "best eval MSE",
        "best epoch(s)",
        "GP complexity",
        "s/epoch (this machine)",
        "paper MSE",
        "paper s/epoch (GPU)",
    ]
    lines = [header_text, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    csv_rows = []
    for r in rows:
        cells = [
            r["model"],
            str(r["runs"]),
            ",".join(str(e) for e in r["epochs"]),
            pm(r["test_mse_mean"]),
            pm(r["test_mse_sample"]),
            pm(r["best_eval_mse"]),
            ",".join(str(e) for e in r["best_epochs"]),
            r["gp_complexity"],
            f"{r['seconds_per_epoch']:.2f}",
            r["paper_mse"],
            f"{r['paper_seconds_per_epoch']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
        csv_rows.append(dict(zip(header, cells)))
    with open(os.path.join(out, "table1.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_csv(os.path.join(out, "table1.csv"), csv_rows)
    return "\n".join(lines)
