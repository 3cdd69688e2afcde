"""Mixed-precision networks (issue 15): the networks compute in 16 bits, the GP block stays float64."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.networks import network_precision
from gpflow_svgpvae.training import train
from tests.amortized.test_amortized import numpy_kl, numpy_posterior, rbf
from tests.conftest import make_tiny_model, tiny_data


def test_network_precision_restores_the_global_policy_and_rejects_unknown():
    before = tf_keras.mixed_precision.global_policy().name
    with network_precision("mixed_bfloat16"):
        assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"
        layer = tf_keras.layers.Dense(2)
    assert tf_keras.mixed_precision.global_policy().name == before
    assert layer.compute_dtype == "bfloat16" and layer.variable_dtype == "float32"
    with pytest.raises(ValueError, match="precision must be one of"):
        with network_precision("bfloat16_please"):
            pass


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_gp_block_stays_float64_under_a_mixed_policy(policy):
    """The KL from 16-bit sites equals the notes' float64 formulas to 1e-9 (a GP block in 16 or 32
    bits would miss by 1e-3 or more)."""
    X, Y = tiny_data()
    with network_precision(policy):
        model = make_tiny_model(seed=0)
    assert model.encoder.compute_dtype == model.decoder.compute_dtype == policy.split("_")[1]
    b = 20
    batch = (X[:b], Y[:b])
    means, variances = model.encode(tf.constant(Y[:b]), training=False)
    assert means.dtype == variances.dtype == tf.float64
    posterior = model.batch_posterior(batch)
    for tensor in (posterior.mean, posterior.variance, posterior.kl):
        assert tensor.dtype == tf.float64
    Z = model.inducing_variable.Z.numpy()
    Kmm = rbf(Z, Z, 1.0, 1.0) + model.jitter * np.eye(len(Z))
    Kmb = rbf(Z, X[:b], 1.0, 1.0)
    expected = 0.0
    for j in range(means.shape[1]):
        mu, A, _ = numpy_posterior(Kmm, Kmb, means.numpy()[:, j], variances.numpy()[:, j], model.num_data / b)
        expected += numpy_kl(mu, A, Kmm)
    np.testing.assert_allclose(float(tf.reduce_sum(posterior.kl)), expected, rtol=1e-9)
    terms = model.objective_terms(batch)
    assert terms.elbo().dtype == terms.kl.dtype == tf.float64


def test_mixed_precision_model_trains_and_predicts_in_float32_or_wider():
    X, Y = tiny_data()
    with network_precision("mixed_bfloat16"):
        model = make_tiny_model(seed=0)
    before = [v.numpy().copy() for v in model.trainable_variables]
    history = train(model, (X, Y), epochs=2, batch_size=20, progress=False)
    assert np.isfinite(history["loss"]).all()
    network_weights = model.encoder.trainable_weights + model.decoder.trainable_weights
    assert {w.dtype for w in network_weights} == {tf.float32}  # master weights stay float32
    changed = [not np.array_equal(v.numpy(), b) for v, b in zip(model.trainable_variables, before)]
    assert all(changed)
    images = model.predict_y(X[:5], (X, Y))
    assert images.dtype == tf.float32 and images.shape == (5, Y.shape[1])
    mean, var = model.predict_f(X[:5], (X, Y))
    assert mean.dtype == var.dtype == gpflow.default_float()
