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
# # Quickstart: an SVGP-VAE in GPflow
#
# The SVGP-VAE (Jazbec et al., AISTATS 2021) is a variational autoencoder
# whose latent codes get a Gaussian-process prior over *auxiliary inputs*
# (time, angle, object identity). The encoder turns each observation into a
# Gaussian "site" for the latent value; the sites of a minibatch define an
# amortised sparse GP posterior over inducing points, so training costs
# $O(bm^2 + m^3)$ per step instead of $O(N^3)$.
#
# This notebook builds the model from GPflow pieces (a kernel, inducing
# points) and Keras-2 networks, trains it with both training paths, and
# predicts at new inputs. Set the environment variable `QUICK=1` for a short
# run (the test suite does).

# %%
import os

import gpflow
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras  # Keras 2, the Keras GPflow uses

import gpflow_svgpvae as gv
from gpflow_svgpvae.datasets.synthetic import gp_bump_images
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import GECO, train

QUICK = os.environ.get("QUICK", "0") == "1"
EPOCHS = 5 if QUICK else 150
tf_keras.utils.set_random_seed(0)

# %% [markdown]
# ## Data
# Each observation is a 32-pixel "image" of a bump; its position follows a
# latent path $z(t)$ drawn from an RBF GP over time $t$. Only the images and
# the times are given to the model.

# %%
data = gp_bump_images(num_data=400 if QUICK else 1000, num_pixels=32, seed=0)
X, Y = data.times, data.images
print(X.shape, Y.shape)
plt.figure(figsize=(8, 2))
plt.imshow(Y[np.argsort(X[:, 0])][::5].T, aspect="auto", cmap="gray")
plt.xlabel("observation (sorted by t)")
plt.ylabel("pixel")
# %% [markdown]
# ## Model
# A GPflow kernel and inducing inputs, an encoder ending in a
# `GaussianSiteHead` (means and positive variances), a decoder and a decoder
# likelihood. `num_data` sets the minibatch scaling, exactly as in
# `gpflow.models.SVGP`.

# %%
encoder = mlp_encoder(32, num_latent_gps=1, hidden_units=(64, 64))
decoder = mlp_decoder(1, 32, hidden_units=(64, 64))
kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
Z = np.linspace(0, 10, 20)[:, None]
model = gv.SVGPVAE(encoder, decoder, kernel, Z, gv.Gaussian(0.01), num_data=len(X))
gpflow.utilities.print_summary(model.kernel)

# %% [markdown]
# ## Training with Keras `fit`
# `as_training_model()` returns a `tf_keras.Model` view; it logs the loss,
# the ELBO and its two parts. Stock callbacks work.

# %%
dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(len(X), seed=0).batch(100)
keras_model = model.as_training_model()
keras_model.compile(tf_keras.optimizers.Adam(1e-3))
history = keras_model.fit(
    dataset, epochs=EPOCHS, verbose=0, callbacks=[tf_keras.callbacks.ReduceLROnPlateau("loss", patience=20)]
)
print({k: round(v[-1], 2) for k, v in history.history.items() if k != "lr"})

# %% [markdown]
# ## Prediction
# `posterior(data)` streams the whole training set through the encoder in
# chunks, sums the GP statistics, factorises once and then answers
# `predict_f` / `predict_y` for any number of new inputs.

# %%
posterior = model.posterior((X, Y), batch_size=256)
Xnew = np.linspace(-1, 11, 300)[:, None]
mean, var = posterior.predict_f(Xnew)
fitted, _ = posterior.predict_f(X)
coef = np.polyfit(fitted.numpy()[:, 0], data.latent, 1)  # latent is identified up to an affine map
plt.figure(figsize=(8, 3))
plt.plot(X[:, 0], data.latent, "k.", ms=2, label="true path")
m = np.polyval(coef, mean.numpy()[:, 0])
s = 2 * abs(coef[0]) * np.sqrt(var.numpy()[:, 0])
plt.plot(Xnew[:, 0], m, label="posterior mean")
plt.fill_between(Xnew[:, 0], m - s, m + s, alpha=0.3)
plt.legend()
print("correlation with the true path:", abs(np.corrcoef(fitted.numpy()[:, 0], data.latent)[0, 1]))

# %%
images = posterior.predict_y(Xnew[::30])  # decoded mean images at new times
print(images.shape)

# %% [markdown]
# ## The compiled loop, GECO, and saving
# `gpflow_svgpvae.training.train` runs the same training step in a
# `tf.function` (optionally XLA) with a progress bar; `GECO` replaces the
# ELBO by a KL objective under a reconstruction constraint. The cached
# posterior exports to a SavedModel that reloads without this package.

# %%
history = train(
    model, (X, Y), batch_size=100, epochs=2 if QUICK else 20, objective=GECO(kappa_squared=0.01), progress=False
)
print("GECO lambda:", history["geco_lambda"][-1])
posterior = model.posterior((X, Y))
export_dir = os.path.join("results", "quickstart_savedmodel")
posterior.export(export_dir)
loaded = tf.saved_model.load(export_dir)
print(np.allclose(loaded.predict_f(tf.constant(Xnew))["mean"], posterior.predict_f(Xnew)[0]))
