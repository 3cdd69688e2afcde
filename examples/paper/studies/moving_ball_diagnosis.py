"""Diagnostic driver for the moving-ball from-scratch failure (issue 13, item 1).

Builds the model exactly like svgpvae_paper.experiments.moving_ball_runs.build_model (same seed
handling, same networks, same kernel, same two-Adam optimiser, same video stream) and trains with
gpflow_svgpvae.training.train, changing one thing at a time via flags. Tracks RMSE on 100 test
videos, the lengthscale and the encoder's site statistics every --track steps; at the end runs the
experiment's own evaluate() on the 350 test videos.

Run from the repository root, e.g. ``python examples/paper/studies/moving_ball_diagnosis.py --help``; the run records
behind the table of docs/results/moving_ball_from_scratch_diagnosis/ were made with it (queue*.sh there
list the exact command lines; they ran from a frozen checkout of commit 20f5c24).
"""

import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import gpflow  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

from gpflow_svgpvae.models.gpvae import GPVAE  # noqa: E402
from gpflow_svgpvae.models.svgpvae import SVGPVAE  # noqa: E402
from gpflow_svgpvae.models.vae import VAE  # noqa: E402
from gpflow_svgpvae.networks import mlp_decoder  # noqa: E402
from gpflow_svgpvae.training import ELBO, OptimizerGroups, train  # noqa: E402
from svgpvae_paper.datasets.moving_ball import moving_ball_stream, moving_ball_test_set  # noqa: E402
from svgpvae_paper.experiments import moving_ball_runs as mbr  # noqa: E402
from svgpvae_paper.metrics import affine_path_rmse  # noqa: E402

T, K, L = 30, 1024, 2


class SiteHead(tf_keras.layers.Layer):
    """softplus(a) + floor (the library's GaussianSiteHead) or exp(a) (the paper's log variance)."""

    def __init__(self, num_latent, kind="softplus", min_variance=1e-4, **kw):
        super().__init__(**kw)
        self.num_latent, self.kind, self.min_variance = num_latent, kind, min_variance
        self.dense = tf_keras.layers.Dense(2 * num_latent)
        # extra variance added to every site (a schedule sets it between steps; 0 = no floor)
        self.floor = tf.Variable(0.0, trainable=False, dtype=tf.float32, name="site_floor")

    def call(self, h):
        out = self.dense(h)
        mu, raw = out[..., : self.num_latent], out[..., self.num_latent :]
        if self.kind == "exp":
            return mu, tf.exp(raw) + self.floor
        return mu, tf.nn.softplus(raw) + self.min_variance + self.floor


def encoder_net(hidden, head_kind):
    # identical construction order to networks.mlp.mlp_encoder
    inputs = tf_keras.Input(shape=(K,))
    h = inputs
    for u in hidden:
        h = tf_keras.layers.Dense(u, activation="tanh")(h)
    head = SiteHead(L, head_kind)
    enc = tf_keras.Model(inputs, head(h), name="encoder")
    enc.site_head = head
    return enc, head


def build(kind, m, seed, a):
    tf_keras.utils.set_random_seed(int(seed))
    enc, head = encoder_net(a.hidden, a.head)
    dec = mlp_decoder(L, K, hidden_units=tuple(a.hidden), activation="tanh")
    if a.var_init is not None:  # initial site variance of every frame ~ var_init
        W, b = head.dense.get_weights()
        v0 = a.var_init
        raw = np.log(v0) if a.head == "exp" else np.log(np.expm1(v0 - 1e-4))
        b[L:] = raw
        W[:, L:] *= a.var_w_scale
        head.dense.set_weights([W, b])
    if a.dec_bias is not None:
        W, b = dec.layers[-1].get_weights()
        dec.layers[-1].set_weights([W, np.full_like(b, a.dec_bias)])
    if kind == "vae":
        return VAE(enc, dec, "bernoulli", sequence_length=T, seed=seed)
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=a.init_ls)
    gpflow.set_trainable(kernel.variance, False)
    if kind == "gpvae":
        return GPVAE(
            enc, dec, kernel, "bernoulli", sequence_length=T, num_latent_gps=L, seed=seed, num_samples=a.num_samples
        )
    Z = np.linspace(0.0, T - 1, int(m))
    return SVGPVAE(
        enc,
        dec,
        kernel,
        Z[:, None],
        "bernoulli",
        num_data=T,
        num_latent_gps=L,
        jitter=1e-6,
        seed=seed,
        num_samples=a.num_samples,
    )


def gp_modules(model):
    if isinstance(model, SVGPVAE):
        return [model.kernel, model.inducing_variable]
    return [model.kernel] if hasattr(model, "kernel") else []


class ScheduledELBO(ELBO):
    """ELBO with a KL/prior weight held in a variable (changed between steps by the driver)."""

    def __init__(self, beta0):
        super().__init__(1.0)
        self.beta_var = tf.Variable(float(beta0), dtype=gpflow.default_float(), trainable=False)

    def loss(self, terms, Y):
        return -(terms.scale * terms.reconstruction - self.beta_var * terms.kl), {}


def beta_at(step, a):
    if a.anneal <= 0:
        return 1.0
    return min(1.0, a.beta0 + (1.0 - a.beta0) * step / a.anneal)


def floor_at(step, a):
    """a.floor held for a.floor_hold steps, then geometric decay to 1e-6 over a.floor_decay steps, then 0."""
    if a.floor <= 0:
        return 0.0
    if step < a.floor_hold:
        return a.floor
    if a.floor_decay <= 0 or step >= a.floor_hold + a.floor_decay:
        return 0.0
    frac = (step - a.floor_hold) / a.floor_decay
    return float(a.floor * (1e-6 / a.floor) ** frac)


def site_stats(model, data):
    mu, var = model.encode(tf.constant(data[1]), training=False, num_leading=2)
    mu, var = mu.numpy(), var.numpy()
    return float(np.median(var)), float(np.mean(np.std(mu, axis=1)))  # within-video spread of site means


def fit(model, a, seed, first, last, track, hist, t_small, label):
    X = mbr._times(35)

    def batches():
        for b in moving_ball_stream(35, seed=int(seed), start_step=first):
            yield X, b.videos

    ds = tf.data.Dataset.from_generator(
        batches, output_signature=(tf.TensorSpec((35, T, 1), tf.float64), tf.TensorSpec((35, T, K), tf.float32))
    )
    gp_lr = a.ls_lr if a.ls_lr else a.gp_lr
    opt = OptimizerGroups(
        [(tf_keras.optimizers.Adam(gp_lr), gp_modules(model)), (tf_keras.optimizers.Adam(1e-3), None)]
    )
    obj = ScheduledELBO(beta_at(first, a))
    model.encoder.site_head.floor.assign(floor_at(first, a))
    window = []
    Xs = mbr._times(t_small.num_videos)
    small = (Xs, t_small.videos)

    def cb(epoch, logs):
        i = first + epoch + 1
        window.append(logs["elbo"] / 35)
        obj.beta_var.assign(beta_at(i, a))
        model.encoder.site_head.floor.assign(floor_at(i, a))
        if a.fix_ls_steps and i <= a.fix_ls_steps and hasattr(model, "kernel"):
            model.kernel.lengthscales.assign(a.init_ls)
        if i % track == 0 or i == last:
            mean, _ = model.predict_f(None, small)
            rmse = affine_path_rmse(mean.numpy(), t_small.paths, per_video=True)
            mv, spread = site_stats(model, small)
            ls = float(model.kernel.lengthscales.numpy()) if hasattr(model, "kernel") else float("nan")
            hist.append(
                dict(
                    step=i,
                    phase=label,
                    rmse100=rmse,
                    ls=ls,
                    med_var=mv,
                    mu_spread=spread,
                    train_elbo=float(np.mean(window)),
                    beta=float(obj.beta_var.numpy()),
                    floor=float(model.encoder.site_head.floor.numpy()),
                )
            )
            window.clear()
            h = hist[-1]
            print(
                f"[{label}] step {i:5d} rmse100 {rmse:.3f} ls {ls:.3f} medvar {mv:.4f} muspread {spread:.3f} "
                f"elbo {h['train_elbo']:.1f} beta {h['beta']:.2f} floor {h['floor']:.2g}",
                flush=True,
            )

    train(model, ds, epochs=last - first, steps_per_epoch=1, optimizer=opt, objective=obj, progress=False, callback=cb)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--model", default="gpvae")  # gpvae | svgpvae:M | vae
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--gp-learning-rate", type=float, default=1e-2)
    p.add_argument("--ls-lr", type=float, default=None)
    p.add_argument("--init-ls", type=float, default=1.0)
    p.add_argument("--fix-ls-steps", type=int, default=0)
    p.add_argument("--head", default="softplus", choices=["softplus", "exp"])
    p.add_argument("--var-init", type=float, default=None)
    p.add_argument("--var-w-scale", type=float, default=1.0)
    p.add_argument("--dec-bias", type=float, default=None)
    p.add_argument("--num-samples", type=int, default=1)
    p.add_argument("--anneal", type=int, default=0, help="linear beta schedule beta0 -> 1 over this many steps")
    p.add_argument("--beta0", type=float, default=0.0)
    p.add_argument("--floor", type=float, default=0.0, help="extra site variance early in training")
    p.add_argument("--floor-hold", type=int, default=0)
    p.add_argument("--floor-decay", type=int, default=0)
    p.add_argument("--warm", default=None, help="M:STEPS, SVGP-VAE warm phase")
    p.add_argument("--track", type=int, default=50)
    a = p.parse_args()
    os.makedirs("/tmp/diag/runs", exist_ok=True)
    t0 = time.time()
    test = moving_ball_test_set(350, seed=12345)
    t_small = moving_ball_test_set(100, seed=12345)  # first 100 are not the same draws; separate set is fine
    kind, m = (a.model.split(":") + [None])[:2]
    hist = []
    model = build(kind, m, a.seed, a)
    first = 0
    if a.warm:
        wm, ws = map(int, a.warm.split(":"))
        warm = build("svgpvae", wm, a.seed, a)
        fit(warm, a, a.seed, 0, ws, a.track, hist, t_small, f"warm m={wm}")
        model.encoder.set_weights(warm.encoder.get_weights())
        model.decoder.set_weights(warm.decoder.get_weights())
        model.kernel.lengthscales.assign(warm.kernel.lengthscales)
        first = ws
    fit(model, a, a.seed, first, a.steps, a.track, hist, t_small, a.model)
    res = mbr.evaluate(model, test)
    mv, spread = site_stats(model, (mbr._times(100), test.videos[:100]))
    out = dict(
        args=vars(a),
        rmse=float(res["rmse"]),
        test_elbo=float(res["test_elbo"]),
        ls=float(model.kernel.lengthscales.numpy()) if hasattr(model, "kernel") else None,
        med_var_final=mv,
        seconds=time.time() - t0,
        history=hist,
    )
    with open(f"/tmp/diag/runs/{a.name}.json", "w") as f:
        json.dump(out, f, indent=1)
    print(
        f"FINAL {a.name}: rmse {out['rmse']:.3f} ls {out['ls']} test_elbo {out['test_elbo']:.1f} "
        f"medvar {mv:.4f} sec {out['seconds']:.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
