"""The objective a reader follows: one ``training_loss`` of the README's model runs few of the
package's functions, in few files (counted with ``sys.setprofile``)."""

import collections
import os
import sys

import gpflow
import numpy as np
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.networks import GaussianSiteHead

_ROOT = os.path.dirname(gv.__file__)


def _package_calls(fn):
    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(_ROOT):
            code = frame.f_code
            calls[(os.path.relpath(code.co_filename, _ROOT), code.co_name, code.co_firstlineno)] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def test_training_loss_of_the_readme_model_runs_at_most_40_functions_in_8_files():
    rng = np.random.default_rng(0)
    X, Y = np.linspace(0, 10, 100)[:, None], rng.normal(size=(100, 32))
    pixels = tf_keras.Input(shape=(32,))
    encoder = tf_keras.Model(pixels, GaussianSiteHead(num_latent_gps=1)(tf_keras.layers.Dense(64, "tanh")(pixels)))
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(64, "tanh"), tf_keras.layers.Dense(32)])
    kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
    model = gv.SVGPVAE(encoder, decoder, kernel, np.linspace(0, 10, 20)[:, None], gv.Gaussian(0.01), num_data=1000)
    model.training_loss((X, Y))  # first call: Keras builds the layers
    calls = _package_calls(lambda: model.training_loss((X, Y)))
    files = {path for path, _, _ in calls}
    listing = "\n".join(f"{n} {path}:{line} {name}" for (path, name, line), n in sorted(calls.items()))
    assert len(calls) <= 40, f"{len(calls)} functions:\n{listing}"
    assert len(files) <= 8, f"{len(files)} files: {sorted(files)}"
    assert ("models/base.py", "maximum_log_likelihood_objective") in {(p, n) for p, n, _ in calls}
