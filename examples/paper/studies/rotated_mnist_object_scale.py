"""Diagnostic driver for the object-vector initial scale on rotated MNIST (issues 13 and 15).

Trains the Table-1 SVGP-VAE (``svgpvae_paper.experiments.rotated_mnist.run_model``: same model,
GECO, eval selection every 10 epochs) with the chosen initial object vectors and records the test
MSE of the *current* model (decoded mean and one decoded sample) every 10 epochs, next to the
run's eval-selected result. Unlike ``svgpvae rotated_mnist_figures convergence`` it takes any
digits.

Run from the repository root, e.g.::

    python examples/paper/studies/rotated_mnist_object_scale.py --init pca --scale 0.1 --epochs 300 --seed 0 --digits 6

The records of ``docs/results/rotated_mnist_object_scale_diagnostic/`` were made with it (their
command lines are in its ``metrics.json``).
"""

import argparse
import json
import os

import numpy as np

from svgpvae_paper.experiments import rotated_mnist as rm


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", choices=("pca", "random"), default="pca")
    p.add_argument("--scale", default="none", help="'none' (the paper's) or a positive number")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--digits", default="3")
    p.add_argument("--out", default="results/rotated_mnist_object_scale")
    args = p.parse_args()
    scale = None if args.scale == "none" else float(args.scale)
    digits = tuple(int(d) for d in args.digits.split(","))
    name = (
        f"{args.init}_s{args.scale}_e{args.epochs}_lr{args.learning_rate}_d{'-'.join(map(str, digits))}_seed{args.seed}"
    )
    cfg = rm.Config(
        models=("svgpvae",),
        epochs=args.epochs,
        eval_every=10,
        object_init=args.init,
        object_scale=scale,
        learning_rate=args.learning_rate,
        digits=digits,
        out=os.path.join(args.out, "work_" + name),
    )
    data = rm.load_data(cfg)
    record = {"epoch": [], "test_mean": [], "test_sample": [], "lambda": []}

    def on_epoch(epoch, model, logs):
        if (epoch + 1) % 10 == 0:
            mean, sample = rm.predict("svgpvae", model, data, "test", seed=args.seed, cfg=cfg)
            record["epoch"].append(epoch + 1)
            record["test_mean"].append(rm.mse(mean, data.Y_test))
            record["test_sample"].append(rm.mse(sample, data.Y_test))
            record["lambda"].append(float(logs.get("geco_lambda", np.nan)))
            print(epoch + 1, record["test_mean"][-1], flush=True)

    os.makedirs(cfg.out, exist_ok=True)
    result = rm.run_model("svgpvae", data, cfg, args.seed, cfg.out, on_epoch=on_epoch)
    result.pop("_images", None)
    result = {k: v for k, v in result.items() if k != "history"}
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump({"args": vars(args), "record": record, "result": result}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
