"""How fast can each moving-ball decoder learn to draw the ball from its *true* position? (issue 13)

The GP-VAE's decoder must learn to render a ball at the latent position while the encoder learns
to place it. This script takes the encoder and the GP out: each decoder, built exactly as the
experiment builds it (`moving_ball_runs.build_model`: same hidden widths, initialisation, tanh,
output bias at the data's mean logit, same seed), is trained by Adam on the Bernoulli
log-likelihood of the frames given the ball's true path coordinates (the GP draw, the scale of the
latent prior), on the experiment's stream of 35 fresh videos per step. The held-out negative
log-likelihood per video (350 test videos x 30 frames, in nats) after a given number of steps says
how quickly each architecture can follow an untangled latent at all.

Writes ``metrics.json`` (config, test NLL per video at each checkpoint, per architecture) and
``decoder_capacity.png`` to ``--out``. Run from the repository root::

    python examples/paper/studies/moving_ball_decoder_capacity.py --out docs/results/moving_ball_decoder_capacity

``--quick``: two small architectures, 20 steps, 20 test videos (seconds).
"""

import argparse
import dataclasses
import os
import sys
import time

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from svgpvae_paper.datasets.moving_ball import moving_ball_stream
from svgpvae_paper.experiments.common import git_commit, pyplot, write_json
from svgpvae_paper.experiments.moving_ball_runs import IMAGE_SIZE, Config, build_model

# name: (hidden widths, network init); "paper": one layer of 500 tanh units, truncated normal.
ARCHITECTURES = {
    "paper": ((500,), "truncated_normal"),
    "1x500_glorot": ((500,), "glorot"),
    "2x256_glorot": ((256, 256), "glorot"),
    "2x500_glorot": ((500, 500), "glorot"),
}
QUICK_ARCHITECTURES = {"1x16": ((16,), "truncated_normal"), "2x16": ((16, 16), "glorot")}


def bernoulli_nll_per_video(decoder, likelihood, paths: np.ndarray, videos: np.ndarray) -> float:
    """Mean over videos of the negative Bernoulli log-likelihood of the frames given the logits
    ``decoder(path)`` (the experiment's own ``likelihood``, summed over frames and pixels).

    :param paths: ``[V, T, 2]`` true coordinates; :param videos: ``[V, T, K]`` binary frames.
    """
    V, T, K = videos.shape
    logits = decoder(tf.constant(paths.reshape(V * T, 2), tf.float32))
    y = tf.constant(videos.reshape(V * T, K), logits.dtype)
    return -float(tf.reduce_sum(likelihood.log_prob(y, logits))) / V


def train_decoder(hidden, network_init, steps, checkpoints, seed, test, learning_rate=1e-3):
    """Train one decoder on the true paths; ``{step: test NLL per video}`` at ``checkpoints`` (and 0)."""
    cfg = dataclasses.replace(Config(), hidden=tuple(hidden), network_init=network_init)
    model = build_model("vae", cfg, seed)
    decoder, likelihood = model.decoder, model.likelihood
    optimizer = tf_keras.optimizers.Adam(learning_rate)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = -tf.reduce_mean(likelihood.log_prob(y, decoder(x)))
        grads = tape.gradient(loss, decoder.trainable_variables)
        optimizer.apply_gradients(zip(grads, decoder.trainable_variables))

    K = IMAGE_SIZE * IMAGE_SIZE
    curve = {0: bernoulli_nll_per_video(decoder, likelihood, test.paths, test.videos)}
    stream = moving_ball_stream(cfg.batch_videos, seed=seed, **cfg.data_options())
    for i in range(1, steps + 1):
        batch = next(stream)
        step(tf.constant(batch.paths.reshape(-1, 2), tf.float32), tf.constant(batch.videos.reshape(-1, K)))
        if i in checkpoints:
            curve[i] = bernoulli_nll_per_video(decoder, likelihood, test.paths, test.videos)
    return curve


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--architectures", nargs="+", default=list(ARCHITECTURES), choices=list(ARCHITECTURES))
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--checkpoints", type=int, nargs="+", default=[300, 1000, 2000, 3000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--test-videos", type=int, default=350)
    p.add_argument("--out", default="results/moving_ball_decoder_capacity")
    args = p.parse_args(argv)
    architectures = {k: ARCHITECTURES[k] for k in args.architectures}
    if args.quick:
        architectures, args.steps, args.checkpoints, args.test_videos = QUICK_ARCHITECTURES, 20, [10, 20], 20
    if args.steps < 1 or min(args.checkpoints) < 1:
        p.error("--steps and --checkpoints must be positive")
    checkpoints = sorted({c for c in args.checkpoints if c <= args.steps} | {args.steps})
    cfg = Config(test_videos=args.test_videos)
    test = cfg.test_set()
    t0 = time.perf_counter()
    curves, seconds = {}, {}
    for name, (hidden, init) in architectures.items():
        start = time.perf_counter()
        curves[name] = train_decoder(hidden, init, args.steps, set(checkpoints), args.seed, test)
        seconds[name] = time.perf_counter() - start
        print(name, {k: round(v, 1) for k, v in curves[name].items()}, f"{seconds[name]:.0f} s", flush=True)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, curve in curves.items():
        hidden, init = architectures[name]
        steps = [s for s in curve if s > 0]
        ax.plot(
            steps, [curve[s] for s in steps], marker="o", label=f"{name}: {'x'.join(map(str, hidden))} tanh, {init}"
        )
    ax.set_xlabel("Adam steps (35 fresh videos each)")
    ax.set_ylabel("test NLL per video (nats), from true positions")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title(f"moving-ball decoders given the true ball positions (seed {args.seed})", fontsize=10)
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    fig.savefig(os.path.join(args.out, "decoder_capacity.png"), dpi=120)
    write_json(
        os.path.join(args.out, "metrics.json"),
        {
            "argv": sys.argv if argv is None else list(argv),
            "config": vars(args),
            "git_commit": git_commit(),
            "architectures": {k: {"hidden": list(h), "network_init": i} for k, (h, i) in architectures.items()},
            "description": "decoders built as in the moving-ball experiment, trained on the Bernoulli likelihood "
            "of the frames given the true path coordinates; test NLL per video (30 frames) on "
            f"{args.test_videos} held-out videos",
            "test_nll_per_video": {k: {str(s): v for s, v in c.items()} for k, c in curves.items()},
            "train_seconds": seconds,
            "wall_seconds": time.perf_counter() - t0,
        },
    )
    return curves


if __name__ == "__main__":
    main()
