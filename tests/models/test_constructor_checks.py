"""Constructor arguments checked at once (issue 16): inducing inputs against the kernel's input
dimension (ARD parameters, active dims) and whole-number counts."""

import gpflow
import numpy as np
import pytest
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.kernels import check_input_dim
from gpflow_svgpvae.networks import mlp_encoder


def _model(kernel, Z, **kwargs):
    encoder = mlp_encoder(4, 2, hidden_units=(4,))
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(4)])
    return gv.SVGPVAE(encoder, decoder, kernel, Z, num_data=kwargs.pop("num_data", 50), **kwargs)


def test_inducing_inputs_must_fit_the_kernels_ard_lengthscales():
    with pytest.raises(
        ValueError, match="Matern52 has 2 lengthscales .* GP inputs \\(inducing inputs\\) have 3 columns"
    ):
        _model(gpflow.kernels.Matern52(lengthscales=[1.0, 1.0]), np.zeros((5, 3)))
    _model(gpflow.kernels.Matern52(lengthscales=[1.0, 1.0, 1.0]), np.zeros((5, 3)))  # matches
    _model(gpflow.kernels.Matern52(lengthscales=1.0), np.zeros((5, 3)))  # isotropic: any width


@pytest.mark.parametrize(
    "kernel, columns, ok",
    [
        (lambda: gpflow.kernels.RBF(lengthscales=[1.0, 2.0], active_dims=[0, 2]), 3, True),
        (lambda: gpflow.kernels.RBF(lengthscales=[1.0, 2.0], active_dims=[0, 3]), 3, False),  # dim 3 missing
        (lambda: gpflow.kernels.RBF(active_dims=slice(0, 2), lengthscales=[1.0, 2.0]), 3, True),
        (lambda: gpflow.kernels.Linear(variance=[1.0, 1.0]), 3, False),
        (lambda: gpflow.kernels.RBF(lengthscales=[1.0, 1.0]) + gpflow.kernels.White(), 2, True),
        (lambda: gpflow.kernels.RBF(lengthscales=[1.0, 1.0]) * gpflow.kernels.Linear(active_dims=[1]), 3, False),
        (lambda: gpflow.kernels.Periodic(gpflow.kernels.RBF(lengthscales=[1.0, 1.0])), 3, False),
        (lambda: gpflow.kernels.SharedIndependent(gpflow.kernels.RBF(lengthscales=[1.0, 1.0]), output_dim=2), 3, False),
        (
            lambda: gpflow.kernels.SeparateIndependent(
                [gpflow.kernels.RBF(), gpflow.kernels.RBF(lengthscales=[1.0] * 3)]
            ),
            3,
            True,
        ),
    ],
)
def test_check_input_dim_walks_combinations_and_multioutput_kernels(kernel, columns, ok):
    kernel = kernel()
    if ok:
        check_input_dim(kernel, columns)
    else:
        with pytest.raises(ValueError, match="columns"):
            check_input_dim(kernel, columns)


@pytest.mark.parametrize("num_data", [2.5, 0, -3, True, float("inf"), "100"])
def test_num_data_must_be_a_positive_whole_number(num_data):
    with pytest.raises(ValueError, match="num_data .* must be a positive whole number"):
        _model(gpflow.kernels.RBF(), np.zeros((5, 1)), num_data=num_data)


@pytest.mark.parametrize("num_data", [50, 50.0, np.int64(50)])
def test_integral_num_data_of_any_type_is_accepted(num_data):
    model = _model(gpflow.kernels.RBF(), np.zeros((5, 1)), num_data=num_data)
    assert model.num_data == 50 and isinstance(model.num_data, int)


def test_each_model_builds_its_networks_once_at_construction(monkeypatch):
    from gpflow_svgpvae.models.base import LatentVariableAutoencoder

    calls = []
    original = LatentVariableAutoencoder.build_networks
    monkeypatch.setattr(
        LatentVariableAutoencoder,
        "build_networks",
        lambda self, *a, **k: calls.append(type(self).__name__) or original(self, *a, **k),
    )
    model = _model(gpflow.kernels.Matern52(), np.zeros((5, 1)))
    vae = gv.VAE(mlp_encoder(4, 2, hidden_units=(4,)), tf_keras.Sequential([tf_keras.layers.Dense(4)]), num_data=50)
    assert calls == ["SVGPVAE", "VAE"]
    assert model.decoder.built and vae.decoder.built  # L = 2 known from the encoder / the kernel
