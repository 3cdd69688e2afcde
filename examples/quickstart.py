"""Quickstart: an SVGP-VAE on generated data, trained with Keras ``fit``.

Each observation is a 32-pixel "image" of a bump whose position follows a
latent GP path over time (``gpflow_svgpvae.datasets.synthetic``). The model
must recover the path from the pixels. Writes ``results/quickstart/``:
``config.json``, ``metrics.json`` and ``latent_path.png``.

    python examples/quickstart.py [--epochs 200] [--quick]
"""

import argparse
import json
import os
import time

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.datasets.synthetic import gp_bump_images
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder


class EpochTimer(tf_keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--num-data", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--num-inducing", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/quickstart")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs, args.num_data = 5, 200
    os.makedirs(args.out, exist_ok=True)
    tf_keras.utils.set_random_seed(args.seed)

    data = gp_bump_images(args.num_data, num_pixels=32, seed=args.seed)
    X, Y = data.times, data.images  # [N, 1] times, [N, 32] images

    encoder = mlp_encoder(32, num_latent_gps=1, hidden_units=(64, 64))
    decoder = mlp_decoder(1, 32, hidden_units=(64, 64))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
    Z = np.linspace(X.min(), X.max(), args.num_inducing)[:, None]
    model = gv.SVGPVAE(encoder, decoder, kernel, Z, gv.Gaussian(0.01), num_data=len(X), seed=args.seed)

    dataset = (
        tf.data.Dataset.from_tensor_slices((X, Y))
        .shuffle(len(X), seed=args.seed)
        .batch(args.batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )
    keras_model = model.as_training_model()
    keras_model.compile(tf_keras.optimizers.Adam(1e-3))
    timer = EpochTimer()
    history = keras_model.fit(dataset, epochs=args.epochs, verbose=2, callbacks=[timer])

    posterior = model.posterior((X, Y))
    mean, var = posterior.predict_f(X)
    mean = mean.numpy()[:, 0]
    design = np.c_[mean, np.ones_like(mean)]
    coef, *_ = np.linalg.lstsq(design, data.latent, rcond=None)
    aligned = design @ coef
    metrics = {
        "final_elbo": float(history.history["elbo"][-1]),
        "final_loss": float(history.history["loss"][-1]),
        "latent_path_rmse_after_affine_map": float(np.sqrt(np.mean((aligned - data.latent) ** 2))),
        "latent_path_std": float(np.std(data.latent)),
        "abs_correlation_with_true_path": float(abs(np.corrcoef(mean, data.latent)[0, 1])),
        "median_seconds_per_epoch": float(np.median(timer.times[1:] if len(timer.times) > 1 else timer.times)),
        "first_epoch_seconds_incl_tracing": float(timer.times[0]),
        "learned_lengthscale": float(model.kernel.lengthscales.numpy()),
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(vars(args), f, indent=2)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot(X[:, 0], data.latent, "k-", lw=1, label="true latent path")
    std = np.sqrt(var.numpy()[:, 0]) * abs(coef[0])
    ax.plot(X[:, 0], aligned, "C0-", lw=1, label="SVGP-VAE posterior mean (affine-aligned)")
    ax.fill_between(X[:, 0], aligned - 2 * std, aligned + 2 * std, color="C0", alpha=0.2)
    ax.plot(
        model.inducing_variable.Z.numpy()[:, 0],
        np.full(args.num_inducing, data.latent.min() - 0.3),
        "k|",
        label="inducing inputs",
    )
    ax.set_xlabel("t")
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "latent_path.png"), dpi=120)
    print(json.dumps(metrics, indent=2))
    print(f"wrote {args.out}/config.json, metrics.json, latent_path.png")
    return metrics


if __name__ == "__main__":
    main()
