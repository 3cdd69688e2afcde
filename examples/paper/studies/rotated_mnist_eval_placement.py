"""Rotated MNIST: the eval MSE over training with the eval instances placed by the affine map
(the paper's protocol) and by fitting their vectors to their context (``--eval-placement fit``).

Reads committed run records (``runs/*.json`` of ``rotated_mnist_figures``) and plots, per seed,
both eval-MSE curves and the test MSE of the last epoch; prints a table of the selections::

    python examples/paper/studies/rotated_mnist_eval_placement.py \\
        --affine docs/results/rotated_mnist_object_lr_e300/runs \\
        --fit docs/results/rotated_mnist_eval_fit_e300/runs \\
        --out docs/images/rotated_mnist_eval_placement_e300.png

Records are matched by seed and by the training settings (everything but the evaluation
options), so the two curves of a panel come from the same training. (A record leaves out
``eval_fit_steps`` at its default, :attr:`Config.eval_fit_steps`.)
"""

import argparse
import glob
import json
import os

from svgpvae_paper.experiments.rotated_mnist import Config

EVAL_OPTIONS = ("eval_every", "eval_placement", "eval_fit_steps")


def training_key(spec: dict) -> str:
    return json.dumps({k: v for k, v in spec.items() if k not in EVAL_OPTIONS}, sort_keys=True)


def load(folder: str) -> dict:
    runs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            run = json.load(f)
        runs[training_key(run["spec"])] = run
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--affine", required=True, help="folder of run records with the affine placement")
    parser.add_argument("--fit", required=True, help="folder of run records with the fitted placement")
    parser.add_argument("--out", required=True, help="PNG to write")
    args = parser.parse_args(argv)
    affine, fit = load(args.affine), load(args.fit)
    pairs = [(affine[k], fit[k]) for k in sorted(fit, key=lambda k: fit[k]["seed"]) if k in affine]
    if not pairs:
        raise SystemExit("no run of --fit has a run with the same training settings in --affine")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 3.6), sharey=True, squeeze=False)
    print("| seed | placement | best eval epoch | eval MSE there | test MSE (eval-selected) | test MSE (last epoch) |")
    print("|---|---|---|---|---|---|")
    for ax, (a, f) in zip(axes[0], pairs):
        for run, label, color in ((a, "affine map (paper)", "C0"), (f, "fitted to context", "C1")):
            ax.plot(run["eval_epochs"], run["eval_mse"], color=color, label=f"eval MSE, {label}")
            ax.axvline(run["best_epoch"], color=color, ls=":", lw=1)
            print(
                f"| {run['seed']} | {label} | {run['best_epoch']} | {run['best_eval_mse']:.4f} | "
                f"{run['test_mse_mean']:.4f} | {run['test_mse_mean_final']:.4f} |"
            )
        ax.axhline(f["test_mse_mean_final"], color="k", ls="--", lw=1, label="test MSE, last epoch")
        ax.set_title(f"seed {f['seed']}", fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylim(0.0, 0.08)
    axes[0][0].set_ylabel("MSE (decoded mean)")
    axes[0][0].legend(fontsize=7)
    spec = pairs[0][1]["spec"]
    fig.suptitle(
        f"Rotated MNIST SVGP-VAE, random object vectors (sd 1.5), object vectors' Adam "
        f"{spec.get('object_learning_rate')}, {spec['epochs']} epochs: eval MSE by placement of the eval "
        f"instances\n(dotted: the epoch each placement selects; "
        f"fit: {spec.get('eval_fit_steps', Config.eval_fit_steps)} Adam "
        f"steps on the decoded-mean likelihood of the context)",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(args.out, dpi=130)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
