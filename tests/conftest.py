import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


def make_tiny_model(seed=0, num_data=60, num_pixels=8, num_latent_gps=1, num_inducing=6, hidden=(16,), **kwargs):
    """A small SVGP-VAE on 1-D inputs (shared by model and training tests)."""
    import gpflow
    from gpflow.keras import tf_keras

    import gpflow_svgpvae as gv
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

    tf_keras.utils.set_random_seed(seed)
    encoder = mlp_encoder(num_pixels, num_latent_gps, hidden_units=hidden)
    decoder = mlp_decoder(num_latent_gps, num_pixels, hidden_units=hidden)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=1.0)
    Z = np.linspace(0.0, 10.0, num_inducing)[:, None]
    likelihood = kwargs.pop("likelihood", gv.Gaussian(0.05))
    return gv.SVGPVAE(encoder, decoder, kernel, Z, likelihood, num_data=num_data, seed=seed, **kwargs)


def tiny_data(num_data=60, num_pixels=8, seed=1):
    from gpflow_svgpvae.datasets.synthetic import gp_bump_images

    data = gp_bump_images(num_data, num_pixels=num_pixels, seed=seed)
    return data.times, data.images


@pytest.fixture
def tiny_model():
    return make_tiny_model()


@pytest.fixture
def tiny():
    return tiny_data()
