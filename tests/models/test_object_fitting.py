"""Placing new objects by fitting their object vectors to context images
(:mod:`gpflow_svgpvae.models.object_fitting`), through the SVGP-VAE and Deep SVIGP."""

import numpy as np
import pytest
from gpflow.keras import tf_keras

from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.kernels import periodic_linear_kernel
from gpflow_svgpvae.models.deep_svigp import DeepSVIGP
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.networks import GaussianSiteHead, mlp_decoder, mlp_encoder

P, A, Q, L, K = 4, 6, 2, 3, 8  # training objects, views, object dim, latent dim, pixels
NEW = P  # the id of the new object: the table's last row
ANGLES = 2 * np.pi * np.arange(A) / A


def inputs(object_id):
    return np.stack([ANGLES, np.full(A, float(object_id))], axis=1)  # [A, 2]


def svgpvae(rng, num_samples=1):
    tf_keras.utils.set_random_seed(0)
    vectors = rng.standard_normal((P + 1, Q))
    table = ObjectVectors(P + 1, Q, num_view_features=1, initial_vectors=vectors)
    kernel = periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)), lengthscales=0.8)
    Z = np.concatenate([rng.uniform(0, 2 * np.pi, (8, 1)), rng.standard_normal((8, Q))], axis=1)
    model = SVGPVAE(
        mlp_encoder(K, L, hidden_units=(16,)),
        mlp_decoder(L, K, hidden_units=(16,)),
        kernel,
        Z,
        likelihood="gaussian",
        num_data=P * A,
        num_latent_gps=L,
        input_transform=table,
        num_samples=num_samples,
        seed=1,
    )
    X = np.concatenate([inputs(p) for p in range(P)])
    Y = rng.uniform(size=(len(X), K)).astype(np.float32)
    return model, (X, Y)


def sharpen_sites(model, mean_gain=10.0, variance_bias=-4.0):
    """Encoder sites with large means and small variances: the conditioned latents of the training
    objects are then far from zero and nearly certain (a random encoder gives means near zero)."""
    head = [layer for layer in model.encoder.layers if isinstance(layer, GaussianSiteHead)][0]
    kernel, bias = head.dense.get_weights()
    kernel[:, :L] *= mean_gain
    bias[L:] = variance_bias
    head.dense.set_weights([kernel, bias])


def copy_of_object_1(seed):
    """A model with sharp sites, its data, and as context its own decoded predictions for training
    object 1 filed under the new id: object 1's vector is a known optimum of the fit."""
    model, data = svgpvae(np.random.default_rng(seed), num_samples=16)
    sharpen_sites(model)
    model.likelihood.variance.assign(0.05)
    posterior = model.posterior(data)
    target_mean, _ = posterior.predict_f(inputs(1))
    Y_context = np.asarray(posterior.predict_y(inputs(1)), np.float32)
    start_mean, _ = posterior.predict_f(inputs(NEW))
    return model, data, Y_context, np.asarray(target_mean), np.asarray(start_mean)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_svgpvae_fit_recovers_a_copy_of_a_training_object(seed):
    """The decoded-mean fit finds object 1's predictions (and, with the linear kernel, its vector)."""
    model, data, Y_context, target_mean, start_mean = copy_of_object_1(seed)
    model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data, steps=300, learning_rate=0.05)
    fitted_mean, _ = model.posterior(data).predict_f(inputs(NEW))
    start_error = np.sqrt(np.mean((start_mean - target_mean) ** 2))
    fitted_error = np.sqrt(np.mean((fitted_mean - target_mean) ** 2))
    assert fitted_error < 1e-3 * start_error, (start_error, fitted_error)
    vectors = model.input_transform.vectors.numpy()
    np.testing.assert_allclose(vectors[NEW], vectors[1], atol=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expected_log_likelihood_fit_shrinks_the_vector(seed):
    """The Monte Carlo objective rewards small predictive variance: the fitted copy of object 1
    ends with a shorter vector (the reason the SVGP-VAE's default is the decoded mean)."""
    model, data, Y_context, target_mean, start_mean = copy_of_object_1(seed)
    model.fit_object_vectors(
        inputs(NEW), Y_context, [NEW], data=data, steps=300, learning_rate=0.05, objective="expected_log_likelihood"
    )
    vectors = model.input_transform.vectors.numpy()
    assert np.linalg.norm(vectors[NEW]) < 0.95 * np.linalg.norm(vectors[1])


def test_svgpvae_fit_changes_only_the_new_rows_and_lowers_the_loss(rng):
    model, data = svgpvae(rng)
    Y_context = rng.uniform(size=(A, K)).astype(np.float32)
    before = model.input_transform.vectors.numpy().copy()
    first = model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data, steps=1)
    last = model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data, steps=60)
    after = model.input_transform.vectors.numpy()
    np.testing.assert_array_equal(after[:P], before[:P])
    assert not np.allclose(after[NEW], before[NEW])
    assert last < first


def test_initial_vectors_follow_the_order_of_object_ids(rng):
    """Unsorted ids with zero steps: the rows are exactly the given initial vectors, id by id."""
    model, data = svgpvae(rng)
    X_context = np.concatenate([inputs(3), inputs(NEW)])
    Y_context = rng.uniform(size=(len(X_context), K)).astype(np.float32)
    initial = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert model.fit_object_vectors(X_context, Y_context, [NEW, 3], data=data, steps=0, initial_vectors=initial) is None
    vectors = model.input_transform.vectors.numpy()
    np.testing.assert_array_equal(vectors[NEW], initial[0])
    np.testing.assert_array_equal(vectors[3], initial[1])


def test_fit_refuses_bad_input(rng):
    model, data = svgpvae(rng)
    Y_context = np.zeros((A, K), np.float32)
    with pytest.raises(ValueError, match="not in object_ids"):
        model.fit_object_vectors(inputs(NEW), Y_context, [3], data=data)
    with pytest.raises(ValueError, match="distinct ids"):
        model.fit_object_vectors(inputs(NEW), Y_context, [NEW, NEW], data=data)
    with pytest.raises(ValueError, match="distinct ids"):
        model.fit_object_vectors(inputs(NEW), Y_context, [P + 1], data=data)
    with pytest.raises(ValueError, match="objective"):
        model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data, objective="mode")
    with pytest.raises(ValueError, match="initial_vectors"):
        model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data, initial_vectors=np.zeros((2, Q)))
    with pytest.raises(ValueError, match="one latent dataset"):
        model.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=(data[0][None], data[1][None]))
    no_table = SVGPVAE(
        mlp_encoder(K, L, hidden_units=(8,)),
        mlp_decoder(L, K, hidden_units=(8,)),
        periodic_linear_kernel(angle_dims=[0], object_dims=[1]),
        np.zeros((4, 2)),
        num_data=P * A,
        num_latent_gps=L,
    )
    with pytest.raises(ValueError, match="ObjectVectors"):
        no_table.fit_object_vectors(inputs(NEW), Y_context, [NEW], data=data)


def test_deep_svigp_and_svgpvae_share_the_fit(rng):
    """Deep SVIGP's fit goes through the same function: same checks, one compiled step per size."""
    tf_keras.utils.set_random_seed(0)
    table = ObjectVectors(P + 1, Q, num_view_features=1, initial_vectors=rng.standard_normal((P + 1, Q)))
    kernel = periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)), lengthscales=0.8)
    Z = np.concatenate([rng.uniform(0, 2 * np.pi, (8, 1)), rng.standard_normal((8, Q))], axis=1)
    model = DeepSVIGP(
        mlp_decoder(L, K, hidden_units=(8,)), kernel, Z, num_latent_gps=L, num_data=P * A, input_transform=table
    )
    Y_context = rng.uniform(size=(A, K)).astype(np.float32)
    with pytest.raises(ValueError, match="not in object_ids"):
        model.fit_object_vectors(inputs(NEW), Y_context, [2])
    counter = int(model.sample_counter.numpy())
    first = model.fit_object_vectors(inputs(NEW), Y_context, [NEW], steps=1)
    last = model.fit_object_vectors(inputs(NEW), Y_context, [NEW], steps=40)
    assert last < first
    assert int(model.sample_counter.numpy()) == counter + 41  # fresh draws from the training stream
    assert len(model._object_fitters) == 1


def test_svgpvae_fit_leaves_the_training_draws_alone(rng):
    """The SVGP-VAE's fit uses one fixed draw: the model's draw counter does not move, so a fit
    between epochs cannot change the training that follows; Deep SVIGP's fresh draws advance it."""
    model, data = svgpvae(rng)
    counter = int(model.sample_counter.numpy())
    model.fit_object_vectors(
        inputs(NEW),
        rng.uniform(size=(A, K)).astype(np.float32),
        [NEW],
        data=data,
        steps=5,
        objective="expected_log_likelihood",
    )
    assert int(model.sample_counter.numpy()) == counter
