# ---
# jupyter:
#   jupytext:
#     formats: ipynb,pct.py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Imputing missing values in your own sequences
#
# You have many recordings (patients, machines, sessions), each a
# multivariate time series with its own time stamps and its own length, and
# some values are missing: single readings dropped at random, whole frames
# lost, a sensor that went silent for a while. The SVGP-VAE imputes them by
# putting a Gaussian-process prior over time on a few latent paths per
# sequence and decoding all channels from them: what a channel did while it
# was missing is inferred from the other channels and from the neighbouring
# frames of the same sequence.
#
# The data are plain numpy arrays:
#
# * `X [V, T, 1]`: the time stamps of `V` sequences, padded to the longest
#   length `T`;
# * `Y [V, T, D]`: the readings, `NaN` where a value is missing;
# * `frames [V, T]`: 1 for a real frame, 0 for padding.
#
# Every sequence is its own latent dataset (its own posterior over the
# shared inducing times); a model built with `missing_values="nan"` treats
# the NaN entries as missing, and the frame mask removes the padding
# exactly. Set `QUICK=1` for a short run (the test suite does).

# %%
import os

import gpflow
import matplotlib.pyplot as plt
import numpy as np
from gpflow.keras import tf_keras  # Keras 2, the Keras GPflow uses

import gpflow_svgpvae as gv
from gpflow_svgpvae.imputation import hold_out_entries
from gpflow_svgpvae.kernels import log_spaced_lengthscales
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import IMPUTATION_GRID, select, train

QUICK = os.environ.get("QUICK", "0") == "1"
EPOCHS = 15 if QUICK else 300  # at most; early stopping ends sooner
EVERY, PATIENCE = (1, 5) if QUICK else (5, 4)  # validate every EVERY epochs; stop after PATIENCE without gain
tf_keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)

# %% [markdown]
# ## Your data
# Here we make it. Each sequence has `L_TRUE = 2` smooth latent paths drawn
# from a squared-exponential GP over time; its `D = 10` sensor channels are
# fixed nonlinear functions of those paths plus noise. The time stamps are
# irregular (gaps between 0.1 and 0.4 time units) and the sequences have
# different lengths (20 to 40 frames). Then we hide values in three ways:
#
# 1. 15 % of the entries at random;
# 2. 8 % of the frames entirely (every channel at once);
# 3. in every sequence one contiguous stretch of a quarter of its frames in
#    one channel (a sensor outage).
#
# We keep the complete array `Y_true` to score the imputation; the model only
# ever sees `Y` with NaN.

# %%
V = 60 if QUICK else 150
T_MIN, T_MAX, D, L_TRUE, NOISE = 20, 40, 10, 2, 0.05
lengths = rng.integers(T_MIN, T_MAX + 1, size=V)
T = int(lengths.max())

# The sensors: y_d = tanh(a_d . z + b_d) or sin(a_d . z + b_d), fixed for all sequences.
A = rng.normal(size=(L_TRUE, D)) * 1.2
b = rng.normal(size=D) * 0.3
use_sin = np.arange(D) % 3 == 2


def sensors(z: np.ndarray) -> np.ndarray:
    h = z @ A + b
    return np.where(use_sin, np.sin(h), np.tanh(h))


def se_gp_paths(t: np.ndarray, lengthscale: float = 1.5) -> np.ndarray:
    K = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / lengthscale**2) + 1e-6 * np.eye(len(t))
    return np.linalg.cholesky(K) @ rng.normal(size=(len(t), L_TRUE))


X = np.zeros((V, T, 1))
Y_true = np.zeros((V, T, D))
frames = np.zeros((V, T), np.float32)
for v, n in enumerate(lengths):
    t = np.cumsum(rng.uniform(0.1, 0.4, size=n))  # irregular time stamps
    t -= t[0]
    X[v, :n, 0] = t
    X[v, n:, 0] = t[-1]  # padding: any value (it is never used)
    Y_true[v, :n] = sensors(se_gp_paths(t)) + NOISE * rng.normal(size=(n, D))
    frames[v, :n] = 1.0

# Hide values: at random, whole frames, and one sensor outage per sequence.
hidden = rng.uniform(size=(V, T, D)) < 0.15
hidden |= (rng.uniform(size=(V, T)) < 0.08)[..., None]
outage_channel = rng.integers(D, size=V)
outage = np.zeros_like(hidden)
for v, n in enumerate(lengths):
    width = n // 4
    start = rng.integers(2, n - width - 1)
    outage[v, start : start + width, outage_channel[v]] = True
hidden |= outage
real = np.broadcast_to(frames[..., None] > 0, Y_true.shape)
hidden &= real  # padding is not "hidden": there is nothing to impute there
Y = np.where(real & ~hidden, Y_true, np.nan).astype(np.float32)
print(f"X {X.shape}, Y {Y.shape}, frames {frames.shape}; lengths {lengths.min()}-{lengths.max()}")
print(f"hidden entries: {hidden.sum()} of {real.sum()} real ({hidden.sum() / real.sum():.1%})")

# %% [markdown]
# ## The model
# * **Networks.** `mlp_encoder` maps one frame's readings to a Gaussian
#   *site* (mean and variance) for each of the `L` latent channels;
#   `mlp_decoder` maps a latent code back to the `D` channels. With
#   `encoder_sees_mask=True` the encoder gets the zero-filled readings
#   *and* the mask side by side, so it takes `2 * D` inputs and can tell a
#   missing value from a real 0.
# * **Kernel and inducing times.** One GPflow `Matern52` kernel per latent
#   channel, their lengthscales spread log-evenly from the typical gap between
#   time stamps to ten times it (`kernels.log_spaced_lengthscales`), so some
#   latent paths can follow fast changes and others slow trends; and as many
#   inducing times as the longest sequence has frames (up to 100), evenly
#   spread and shared by all sequences (each sequence gets its own posterior
#   over them). Fewer inducing times than frames smooth away changes faster
#   than their spacing.
# * **Likelihood.** Gaussian, with a trainable noise variance.
# * **`encoder_dropout=0.4`.** In every training step 40 % of the observed
#   entries are hidden from the encoder, and the likelihood still scores them:
#   the model is trained to predict entries it does not see, which is what
#   imputation asks of it. Without it, on real sensor data, the imputation
#   error was 6-32 % higher and the predictive bands too narrow
#   (`docs/results/real_imputation/README.md`).
# * **No `num_data`**: every sequence is given whole in each step, so its
#   posterior conditions on exactly its real, observed frames (`num_data`
#   would be the number of training sequences, for GPflow's minibatch scaling).
#
# How many latent channels `L`, how wide the networks, which learning rate
# and how many epochs are not known in advance: they depend on your data,
# and guessing them can cost a factor of three in error. So the model is
# built by a function of those settings, and we let held-out data choose.


# %%
gaps = np.diff(X[..., 0], axis=1)[(frames[:, 1:] > 0) & (frames[:, :-1] > 0)]
spacing = float(np.median(gaps))  # the typical time between two frames
Z = np.linspace(X[frames > 0].min(), X[frames > 0].max(), min(T, 100))[:, None]


def build(num_latent_gps=8, width=64, learning_rate=3e-3):
    """A fresh model and optimiser with these settings."""
    tf_keras.utils.set_random_seed(0)
    encoder = mlp_encoder(2 * D, num_latent_gps, hidden_units=(width, width))  # 2 * D: readings and mask
    decoder = mlp_decoder(num_latent_gps, D, hidden_units=(width, width))
    kernel = log_spaced_lengthscales(gpflow.kernels.Matern52, num_latent_gps, spacing, 10 * spacing)
    model = gv.SVGPVAE(
        encoder,
        decoder,
        kernel,
        Z,
        gv.Gaussian(0.1, trainable=True),
        missing_values="nan",
        encoder_sees_mask=True,
        encoder_dropout=0.4,
    )
    return model, tf_keras.optimizers.Adam(learning_rate)


# %% [markdown]
# ## Validation data: entries hidden from the training data
# The quantity we care about, the error on entries the model does not see,
# can be measured on the training sequences themselves: `hold_out_entries`
# hides a random 10 % of the *observed* entries (seeded; never a missing or
# padded one, and never the last observed entry of a sequence) and returns
# the reduced training data and a `validation` object. `validation(model)`
# conditions the model on the reduced data, imputes, and returns the MSE and
# the negative log predictive density on the hidden entries.
#
# `train` takes it as `validation_data`: it scores the model every
# `validate_every` epochs (`val_mse`, `val_nll` in the history), stops once
# `val_mse` has not improved for `patience` validations, and ends with the
# weights of the best one. So the number of epochs is chosen too: training too long overfits
# the hidden entries' neighbours and the validation sees it. `train` takes
# the arrays as they are: `(X, Y, frames)` with NaN in `Y`; the NaN entries
# become a mask once, at the data boundary.

# %%
train_data, validation = hold_out_entries((X, Y, frames), fraction=0.1, seed=0)
print(validation)
model, optimizer = build()
history = train(
    model,
    train_data,
    epochs=EPOCHS,
    batch_size=10,
    seed=0,
    progress=False,
    optimizer=optimizer,
    validation_data=validation,
    validate_every=EVERY,
    patience=PATIENCE,
)
fig, (ax_elbo, ax_val) = plt.subplots(1, 2, figsize=(9, 2.5))
ax_elbo.plot(history["elbo"])
ax_elbo.set(xlabel="epoch", ylabel="ELBO")
validated = [min(EVERY * k, len(history["loss"])) for k in range(1, len(history["val_mse"]) + 1)]
ax_val.plot(validated, history["val_mse"], "o-", ms=3)
ax_val.axvline(history["best_epoch"], color="k", ls=":", lw=1)
ax_val.set(xlabel="epoch", ylabel="validation MSE")
fig.tight_layout()
print(
    f"best validation MSE {history['best_value']:.4f} after {history['best_epoch']} epochs "
    f"(stopped after {history['stopped_epoch'] or len(history['loss'])})"
)

# %% [markdown]
# ## Choosing the settings
# `select` does this for a grid of settings: one split shared by all
# candidates, each candidate trained with early stopping, and the one with
# the lowest validation MSE returned, with a table of every candidate's
# validation scores, best epoch and training time. `IMPUTATION_GRID` is the
# grid we recommend for imputation: `L` of 4, 8 and 16, each with two
# 64-unit layers at Adam 3e-3 and with two 128-unit layers at Adam 1e-3, as
# keyword arguments of a `build(num_latent_gps, width, learning_rate)` like
# ours. It is what the real-data imputation benchmark runs
# (`docs/results/real_imputation/README.md`), with at most 300 epochs and a
# validation every 5 epochs that stops a candidate after 4 validations
# without improvement. With `QUICK=1` only two candidates are tried, briefly.
#
# The model `select` returns was trained without the held-out entries and
# stopped at its best epoch; retraining it on all entries for that many
# epochs (`select(..., refit=True)`) did not help in our measurements
# (`docs/results/selection/metrics.json`).

# %%
grid = [dict(num_latent_gps=L, width=32, learning_rate=3e-3) for L in (2, 8)] if QUICK else IMPUTATION_GRID
model, table = select(
    build, grid, (X, Y, frames), epochs=EPOCHS, patience=PATIENCE, validate_every=EVERY, seed=0, batch_size=10
)
for row in table:
    print(
        f"{str(row['candidate']):58s} val MSE {row['val_mse']:.4f}  val NLL {row['val_nll']:7.3f}  "
        f"best epoch {row['best_epoch']:3d}  {row['seconds']:5.0f} s" + ("  <- selected" if row["selected"] else "")
    )
print(
    f"kernel lengthscales {[round(float(k.lengthscales.numpy()), 2) for k in model.kernel.kernels]}; "
    f"noise std {float(np.sqrt(model.likelihood.variance.numpy())):.3f}"
)

# %% [markdown]
# ## Imputation
# The selected model was trained without the held-out 10 %; to impute, it
# conditions on *all* observed entries. `model.impute(data, num_samples=S)`
# conditions each sequence's posterior on its own observed entries and returns
#
# * `imputed`: `Y` with every missing entry replaced by the decoder's output
#   at the posterior mean of the latent paths (observed entries unchanged);
# * `samples [S, V, T, D]`: the same from `S` draws of the latent paths: the
#   spread over the samples is the model's uncertainty about the latent
#   paths. The samples are decoder *means*; for a predictive band of the
#   readings themselves we add the learned Gaussian noise to the missing
#   entries.
#
# We score it on the hidden entries against two simple fills computed from
# the same observed entries: each channel's mean, and linear interpolation
# in time within each sequence and channel. (With `QUICK=1` the model trains
# only briefly and its imputations are rougher; the text below describes the
# full run.)

# %%
imputed, samples = model.impute((X, Y, frames), num_samples=50, seed=0)
imputed, samples = imputed.numpy(), samples.numpy()
channel_mean = np.nanmean(Y.reshape(-1, D), axis=0)  # per-channel mean of the observed entries
mean_fill = np.where(np.isnan(Y), channel_mean, Y)
interpolated = mean_fill.copy()
for v, n in enumerate(lengths):
    t = X[v, :n, 0]
    for d in range(D):
        seen = ~np.isnan(Y[v, :n, d])
        interpolated[v, :n, d] = np.interp(t, t[seen], Y[v, :n, d][seen])  # constant beyond the ends


def rmse(fill: np.ndarray, where: np.ndarray) -> float:
    return float(np.sqrt(np.mean((fill[where] - Y_true[where]) ** 2)))


for name, where in [("all hidden entries", hidden), ("sensor outages", outage)]:
    print(
        f"RMSE on {name + ':':20s} SVGP-VAE {rmse(imputed, where):.3f}, "
        f"linear interpolation {rmse(interpolated, where):.3f}, channel mean {rmse(mean_fill, where):.3f}"
    )

noise_std = float(np.sqrt(model.likelihood.variance.numpy()))
predictive = np.where(np.isnan(Y)[None], samples + noise_std * rng.normal(size=samples.shape), samples)
low, high = np.percentile(predictive, [5, 95], axis=0)
inside = (Y_true[hidden] >= low[hidden]) & (Y_true[hidden] <= high[hidden])
print(f"hidden entries inside the 90% predictive band: {inside.mean():.1%}")

# %% [markdown]
# ## What the imputation looks like
# Three sequences (rows) and three channels each (columns), the first of them
# the channel with the sequence's outage. The black line is the complete
# truth, the dots the readings the model saw, the blue line the imputed
# sequence (equal to the readings where they were seen) and the band the
# 5-95 % predictive range at the missing entries. Grey columns are frames
# that were lost entirely and the orange span is the outage: there the
# imputed channel follows the truth although none of its values in that
# stretch were seen, because the other channels of the same frames pin down
# the latent paths. The sequences end at different times: the padding after
# the end is not drawn.

# %%
shown = [0, 1, 2]
fig, axes = plt.subplots(len(shown), 3, figsize=(11, 6.5), sharex="row")
for row, v in enumerate(shown):
    n, t = lengths[v], X[v, : lengths[v], 0]
    channels = [outage_channel[v]] + [d for d in range(D) if d != outage_channel[v]][:2]
    lost = np.isnan(Y[v, :n]).all(-1)
    span = np.where(outage[v, :n].any(-1))[0]
    for col, d in enumerate(channels):
        ax = axes[row, col]
        for i in np.where(lost)[0]:
            ax.axvspan(t[i] - 0.08, t[i] + 0.08, color="0.85", lw=0)
        if col == 0 and len(span):
            ax.axvspan(t[span[0]], t[span[-1]], color="orange", alpha=0.15, lw=0)
        ax.fill_between(t, low[v, :n, d], high[v, :n, d], color="C0", alpha=0.25, lw=0, label="90% band")
        ax.plot(t, Y_true[v, :n, d], "k-", lw=1, label="truth")
        ax.plot(t, imputed[v, :n, d], "C0-", lw=1.2, label="imputed mean")
        seen = ~np.isnan(Y[v, :n, d])
        ax.plot(t[seen], Y[v, :n, d][seen], "k.", ms=5, label="observed")
        ax.set_title(f"sequence {v}, channel {d}" + (" (outage)" if col == 0 else ""), fontsize=9)
    axes[row, 0].set_ylabel("reading")
for ax in axes[-1]:
    ax.set_xlabel("time")
axes[0, 0].legend(fontsize=7, loc="best")
fig.tight_layout()
os.makedirs("results", exist_ok=True)
fig.savefig(os.path.join("results", "imputation.png"), dpi=110)
print("figure written to", os.path.abspath(os.path.join("results", "imputation.png")))

# %% [markdown]
# ## Image sequences
# Nothing above is specific to sensor channels. For sequences of images,
# `Y [V, T, H, W, C]` with a mask of the same shape (or NaN and
# `missing_values="nan"`), swap the MLPs for convolutional networks whose
# encoder takes `2 * C` input channels when `encoder_sees_mask=True` (the
# mask is concatenated along the channel axis), and use a Bernoulli
# likelihood for binary pixels; `train` and `impute` are called exactly as
# here. Healing MNIST, the GP-VAE imputation benchmark of rotating digits
# with missing pixels, is in `svgpvae_paper.datasets.hmnist` (its
# `observed_arrays(split)` gives `(X, Y, mask)` in this layout), and the
# command-line benchmark `svgpvae hmnist` trains and scores the models on it
# (`svgpvae hmnist --quick` for a short run; results in `docs/results.md`).
