r"""One table and one figure from several finished SPRITES runs (issue 12's accuracy table).

Usage::

    python -m svgpvae_paper.experiments.sprites_summary RUN [RUN ...] --labels A B ... --out DIR

Each ``RUN`` is the output folder of :mod:`svgpvae_paper.experiments.sprites` (its
``metrics.json``; the SVGP-VAE's or the CVAE's). Written to ``--out``:

* ``summary.json`` -- one row per run (its label, folder, model, seed, epochs, test MSE given
  the context, the style accuracy per attribute, seconds per epoch), then the
  nearest-context-frame baseline of the first run and chance;
* ``summary.md`` -- the same rows as a Markdown table;
* ``style_accuracy.png`` -- the accuracy per attribute of every row as grouped bars, with
  chance and the issue's target of 0.90;
* ``training.md`` and ``training_curves.png`` (runs that recorded their training history):
  per run GECO's :math:`\kappa^2`, the validation MSE at each scored epoch (the epoch
  selection), the training MSE (GECO's constraint + :math:`\kappa^2`), GECO's
  :math:`\lambda` and the KL term per epoch: where GECO stops weighting the reconstruction.

Runs given the same label are seeds of one setting: their rows are labelled ``"<label>, seed
<s>"`` and followed by a row ``"<label>, mean of <n> seeds"`` holding the mean of each column and,
in ``<column>_sd``, the sample standard deviation (:math:`n - 1` in the denominator); the figure
then shows the means with the standard deviations as error bars instead of the single seeds.

Nothing is recomputed: the numbers are read from the runs' ``metrics.json`` files, so the table
in ``docs/results.md`` can be regenerated from the committed metrics.
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence

from .common import command_argv, mean_sd, pyplot, read_json, write_json

#: The scored attributes, in the order of the table (``metrics.style_accuracy``'s names).
ATTRIBUTES = ("skin", "hair_colour", "top_colour", "bottom_colour", "hair_shape")

#: The issue's colour target (hair shape has none).
TARGET = 0.90

#: The columns a row of several seeds averages.
MEAN_COLUMNS = ("test_mse",) + ATTRIBUTES + ("seconds_per_epoch",)

__all__ = [
    "ATTRIBUTES",
    "TARGET",
    "read_run",
    "summary_rows",
    "seed_means",
    "markdown_table",
    "plot_summary",
    "training_curves",
    "training_table",
    "plot_training_curves",
    "main",
]


def read_run(run_dir: str) -> dict:
    """The ``metrics.json`` and ``config.json`` of a finished sprites run, with a clear error if missing."""
    metrics_path = os.path.join(run_dir, "metrics.json")
    if not os.path.isfile(metrics_path):
        raise FileNotFoundError(f"{run_dir!r} is not a finished sprites run: no metrics.json in it")
    metrics = read_json(metrics_path)
    if "style_accuracy" not in metrics or "given_context" not in metrics["style_accuracy"]:
        raise ValueError(f"{metrics_path} has no style_accuracy.given_context: not a sprites run's metrics")
    config_path = os.path.join(run_dir, "config.json")
    config = read_json(config_path) if os.path.isfile(config_path) else {}
    return {"metrics": metrics, "config": config}


def _read_runs(runs: Sequence[str], labels: Sequence[str]) -> List[tuple]:
    """``(run_dir, label, metrics, config)`` per run, one label per run required."""
    if len(runs) != len(labels):
        raise ValueError(f"{len(runs)} runs but {len(labels)} labels; give one label per run")
    read = [read_run(run_dir) for run_dir in runs]
    return [(run_dir, label, r["metrics"], r["config"]) for run_dir, label, r in zip(runs, labels, read)]


def _accuracies(style: dict) -> dict:
    return {a: float(style[a]["accuracy"]) if a in style else None for a in ATTRIBUTES}


def summary_rows(runs: Sequence[str], labels: Sequence[str]) -> List[dict]:
    """One row per run (given its context), then the first run's nearest-context-frame baseline and chance."""
    if not runs:
        raise ValueError("no runs given")
    rows, first = [], None
    for run_dir, label, m, cfg in _read_runs(runs, labels):
        first = first or m
        rows.append(
            {
                "label": label,
                "run": run_dir,
                "model": m.get("model", cfg.get("model")),
                "seed": cfg.get("seed"),
                "epochs": m.get("epochs", cfg.get("epochs")),
                "test_mse": float(m["test_mse_mean"]),
                **_accuracies(m["style_accuracy"]["given_context"]),
                "seconds_per_epoch": m.get("seconds_per_epoch"),
            }
        )
    rows = seed_means(rows)
    nearest = first["style_accuracy"].get("nearest_context_frame")
    if nearest is not None:
        rows.append(
            {
                "label": "nearest context frame",
                "run": runs[0],
                "model": "baseline",
                "test_mse": float(first["nearest_context_frame"]["test_mse"]),
                **_accuracies(nearest),
            }
        )
    chance = {
        a: float(first["style_accuracy"]["given_context"][a]["chance"])
        for a in ATTRIBUTES
        if a in first["style_accuracy"]["given_context"]
    }
    rows.append({"label": "chance", "model": "chance", "test_mse": None, **{a: chance.get(a) for a in ATTRIBUTES}})
    return rows


def _seed_label(label: str, seed) -> str:
    """The label of one seed's row or curve among runs that share ``label``."""
    return f"{label}, seed {seed}"


def seed_means(rows: Sequence[dict]) -> List[dict]:
    """Group the run rows by label: a label given to several runs marks seeds of one setting.

    Such rows are relabelled ``"<label>, seed <s>"`` and followed by a row ``"<label>, mean of <n>
    seeds"`` (``"n_seeds"``, ``"seeds"``, the mean of each of :data:`MEAN_COLUMNS` and its sample
    standard deviation as ``"<column>_sd"``). Rows with a label of their own are returned unchanged.
    Two runs with the same label and the same seed are refused: they are not two seeds.
    """
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["label"], []).append(r)
    out: List[dict] = []
    for label, group in groups.items():
        if len(group) == 1:
            out.extend(group)
            continue
        seeds = [r.get("seed") for r in group]
        if None in seeds or len(set(seeds)) != len(seeds):
            raise ValueError(
                f"the runs labelled {label!r} ({', '.join(r['run'] for r in group)}) have seeds "
                f"{seeds}: runs given one label must be different seeds of one setting"
            )
        models = {r["model"] for r in group}
        if len(models) != 1:
            raise ValueError(f"the runs labelled {label!r} are of different models {sorted(models)}")
        out.extend({**r, "label": _seed_label(label, r["seed"]), "in_seed_mean": True} for r in group)
        mean_row = {
            "label": f"{label}, mean of {len(group)} seeds",
            "model": group[0]["model"],
            "n_seeds": len(group),
            "seeds": seeds,
            "epochs": group[0].get("epochs"),
        }
        for column in MEAN_COLUMNS:
            values = [r.get(column) for r in group]
            stats = None if None in values else mean_sd(values)
            mean_row[column] = None if stats is None else stats["mean"]
            mean_row[column + "_sd"] = None if stats is None else stats["sd"]
        out.append(mean_row)
    return out


def markdown_table(rows: Sequence[dict]) -> str:
    """The rows as a Markdown table: MSE per pixel and the accuracy of each attribute; a mean over
    seeds as ``mean ± sd``."""
    head = [
        "method",
        "test MSE per pixel",
        "skin",
        "hair colour",
        "top colour",
        "bottom colour",
        "hair shape",
        "s/epoch",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(r: dict, column: str, digits: int) -> str:
        if r.get(column) is None:
            return ""
        sd = r.get(column + "_sd")
        return f"{r[column]:.{digits}f}" + ("" if sd is None else f" ± {sd:.{digits}f}")

    for r in rows:
        cells = [r["label"], cell(r, "test_mse", 5)] + [cell(r, a, 2) for a in ATTRIBUTES]
        cells += [cell(r, "seconds_per_epoch", 1)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_summary(path: str, rows: Sequence[dict]) -> None:
    """Grouped bars: for each attribute, the accuracy of every row but chance; chance and the target as lines.
    Seeds with a mean row are drawn as that mean with the standard deviation as an error bar."""
    plt = pyplot()
    bars = [r for r in rows if r["model"] != "chance" and not r.get("in_seed_mean")]
    chance = next((r for r in rows if r["model"] == "chance"), None)
    width = 0.8 / max(len(bars), 1)
    fig, ax = plt.subplots(figsize=(1.9 * len(ATTRIBUTES) + 3.5, 3.6))
    for i, r in enumerate(bars):
        xs = [k + (i - (len(bars) - 1) / 2) * width for k in range(len(ATTRIBUTES))]
        errors = [r.get(a + "_sd") or 0.0 for a in ATTRIBUTES] if r.get("n_seeds") else None
        ax.bar(xs, [r[a] or 0.0 for a in ATTRIBUTES], width, yerr=errors, capsize=2, label=r["label"])
    if chance is not None:
        for k, a in enumerate(ATTRIBUTES):
            if chance[a] is not None:
                ax.hlines(
                    chance[a],
                    k - 0.45,
                    k + 0.45,
                    colors="k",
                    linestyles=":",
                    zorder=3,
                    label="chance" if k == 0 else None,
                )
    ax.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label=f"target {TARGET:.2f} (colours)")
    ax.set_xticks(range(len(ATTRIBUTES)), [a.replace("_", " ") for a in ATTRIBUTES])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (unseen characters)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: the bars reach 1
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def training_curves(runs: Sequence[str], labels: Sequence[str]) -> List[dict]:
    """Per run with a training history: its label, GECO's ``kappa_squared``, per epoch (1-based) the
    training MSE (GECO's constraint + ``kappa_squared``), ``lambda`` and the KL term, and the scored
    epochs with their validation MSE (``[]`` if the run scored none). Runs without a history are left out."""
    curves = []
    for _, label, m, cfg in _read_runs(runs, labels):
        if list(labels).count(label) > 1:  # seeds of one setting, as in the accuracy table
            label = _seed_label(label, cfg.get("seed"))
        history = m.get("history") or {}
        if "geco_constraint" not in history or cfg.get("kappa_squared") is None:
            continue
        kappa_squared = float(cfg["kappa_squared"])
        selection = m.get("epoch_selection") or {}
        curves.append(
            {
                "label": label,
                "model": m.get("model", cfg.get("model")),
                "kappa_squared": kappa_squared,
                "epochs": list(range(1, len(history["geco_constraint"]) + 1)),
                "train_mse": [float(c) + kappa_squared for c in history["geco_constraint"]],
                "geco_lambda": [float(v) for v in history.get("geco_lambda", [])],
                "kl": [float(v) for v in history.get("kl", [])],
                "validation_epochs": [int(e) for e in selection.get("epochs", [])],
                "validation_mse": [float(v) for v in selection.get("validation_mse", [])],
                "best_epoch": selection.get("best_epoch"),
            }
        )
    return curves


def training_table(curves: Sequence[dict]) -> str:
    """Markdown: per run κ², the best validation MSE and its epoch, and the last epoch's training MSE,
    λ and KL."""
    head = [
        "method",
        "κ²",
        "best validation MSE (epoch)",
        "last validation MSE",
        "final training MSE",
        "final λ",
        "final KL (nats)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in curves:
        val = c["validation_mse"]
        best = "" if not val else f"{min(val):.5f} ({c['validation_epochs'][val.index(min(val))]})"
        cells = [
            c["label"],
            f"{c['kappa_squared']:g}",
            best,
            f"{val[-1]:.5f}" if val else "",
            f"{c['train_mse'][-1]:.4f}",
            f"{c['geco_lambda'][-1]:.3g}" if c["geco_lambda"] else "",
            f"{c['kl'][-1]:.4g}" if c["kl"] else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_training_curves(path: str, curves: Sequence[dict]) -> None:
    """Three panels per epoch, one line per run: validation MSE (scored epochs), training MSE with each
    run's κ² dotted, GECO's λ (log scales)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6))
    for i, c in enumerate(curves):
        colour = f"C{i}"
        if c["validation_mse"]:
            axes[0].plot(c["validation_epochs"], c["validation_mse"], "o-", color=colour, ms=3, label=c["label"])
        axes[1].plot(c["epochs"], c["train_mse"], color=colour, label=c["label"])
        axes[1].axhline(c["kappa_squared"], color=colour, ls=":", lw=1)
        if c["geco_lambda"]:
            axes[2].plot(c["epochs"], c["geco_lambda"], color=colour, label=c["label"])
    for ax, title in zip(
        axes, ("validation MSE (generated, unseen characters)", "training MSE (dotted: GECO's κ²)", "GECO's λ")
    ):
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.sprites_summary",
        description="one accuracy table and figure from several finished sprites runs",
    )
    p.add_argument("runs", nargs="*", metavar="RUN", help="output folders of sprites runs")
    p.add_argument(
        "--labels",
        nargs="+",
        default=None,
        help="one label per run (default: the folder names); runs given the same label are seeds "
        "of one setting and get a row with their mean and standard deviation",
    )
    p.add_argument("--out", default="results/sprites_summary")
    return p


def main(argv: Optional[Sequence[str]] = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.runs:
        parser.error("give at least one RUN folder")
    labels = args.labels or [os.path.basename(os.path.normpath(r)) for r in args.runs]
    try:
        rows = summary_rows(args.runs, labels)
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    os.makedirs(args.out, exist_ok=True)
    command = command_argv("sprites_summary", argv)
    settings = {"runs": args.runs, "labels": labels}
    write_json(os.path.join(args.out, "summary.json"), {"rows": rows, "target": TARGET}, argv=command, config=settings)
    table = markdown_table(rows)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(table)
    plot_summary(os.path.join(args.out, "style_accuracy.png"), rows)
    print(table, end="")
    curves = training_curves(args.runs, labels)
    if curves:
        write_json(os.path.join(args.out, "training.json"), {"runs": curves}, argv=command, config=settings)
        training = training_table(curves)
        with open(os.path.join(args.out, "training.md"), "w") as f:
            f.write(training)
        plot_training_curves(os.path.join(args.out, "training_curves.png"), curves)
        print("\n" + training, end="")
    return {"rows": rows, "training": curves}


if __name__ == "__main__":
    main(sys.argv[1:])
