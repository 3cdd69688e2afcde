"""Input transforms and the one SVGPVAE that serves them (numpy references)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.networks import GaussianSiteHead
from gpflow_svgpvae.networks.representation import StyleRepresentation
from gpflow_svgpvae.transforms import (
    Chain,
    Concatenate,
    GroupRepresentation,
    Identity,
    SelectColumns,
    as_input_transform,
)

K = 6  # observation width


def _networks(L=2, seed=0):
    tf_keras.utils.set_random_seed(seed)
    pixels = tf_keras.Input(shape=(K,))
    encoder = tf_keras.Model(pixels, GaussianSiteHead(L)(tf_keras.layers.Dense(8, "tanh")(pixels)))
    decoder = tf_keras.Sequential([tf_keras.layers.Dense(8, "tanh"), tf_keras.layers.Dense(K)])
    return encoder, decoder


def _representation(d=3, seed=1):
    tf_keras.utils.set_random_seed(seed)
    frames = tf_keras.Input(shape=(K,))
    return StyleRepresentation(tf_keras.Model(frames, tf_keras.layers.Dense(d)(frames)))


def test_identity_select_chain_concatenate_against_numpy(rng):
    table = rng.normal(size=(4, 2))
    vectors = ObjectVectors(4, 2, id_column=0, num_view_features=0, initial_vectors=table)
    X = np.array([[3.0, 0.5, 9.0], [1.0, -2.0, 9.0]])
    np.testing.assert_array_equal(Identity()(X).numpy(), X)
    np.testing.assert_array_equal(SelectColumns([2, 0])(X).numpy(), X[:, [2, 0]])
    chained = Chain([SelectColumns([0]), vectors])(X).numpy()
    np.testing.assert_allclose(chained, table[[3, 1]])
    both = Concatenate([SelectColumns([1]), Chain([SelectColumns([0]), vectors])])
    np.testing.assert_allclose(both(X).numpy(), np.c_[X[:, 1], table[[3, 1]]])
    assert both.output_dim == 3 and not both.needs_observations
    # leading batch dimension (many latent datasets)
    np.testing.assert_allclose(both(np.stack([X, X[::-1]])).numpy()[1], np.c_[X[::-1, 1], table[[1, 3]]])
    with pytest.raises(TypeError, match="InputTransform"):
        as_input_transform(lambda X: X)


def test_group_representation_sums_over_the_group_in_batch_and_in_context(rng):
    rep = _representation()
    transform = GroupRepresentation(rep, group_column=0)
    X = np.array([[5.0, 0.0], [7.0, 1.0], [5.0, 2.0], [5.0, 3.0]])
    Y = rng.normal(size=(4, K)).astype(np.float32)
    features = rep.frame_features(Y).numpy().astype(np.float64)
    expected = np.stack(
        [features[[0, 2, 3]].sum(0), features[1], features[[0, 2, 3]].sum(0), features[[0, 2, 3]].sum(0)]
    )
    np.testing.assert_allclose(transform(X, Y).numpy(), expected, rtol=1e-6)
    # queries: the context sums all of a group's rows over all chunks
    context = transform.context([(X[:2], Y[:2]), (X[2:], Y[2:])])
    queries = np.array([[7.0, 9.0], [5.0, 9.0]])
    np.testing.assert_allclose(transform.map_queries(queries, context).numpy(), expected[[1, 0]], rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the conditioning data"):
        transform.map_queries(np.array([[6.0, 0.0]]), context)
    with pytest.raises(ValueError, match="needs the observations"):
        transform(X)


def _object_model(rng, num_objects=5, Q=2, L=2):
    table = ObjectVectors(
        num_objects, Q, id_column=-1, num_view_features=1, initial_vectors=rng.normal(size=(num_objects, Q))
    )
    kernel = gv.kernels.periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)))
    Z = np.c_[np.linspace(0, 6, 6), rng.normal(size=(6, Q))]
    encoder, decoder = _networks(L)
    return gv.SVGPVAE(encoder, decoder, kernel, Z, gv.Gaussian(0.1), num_data=40, input_transform=table)


def test_svgpvae_with_object_vectors_equals_svgpvae_on_mapped_inputs(rng):
    """The transform only moves the inputs: the same model on pre-mapped inputs gives the same bound,
    posterior and predictions."""
    model = _object_model(rng)
    X = np.c_[rng.uniform(0, 6, 20), rng.integers(0, 5, 20)]
    Y = rng.normal(size=(20, K)).astype(np.float32)
    mapped = model.input_transform(X).numpy()
    plain = gv.SVGPVAE(
        model.encoder, model.decoder, model.kernel, model.inducing_variable, model.likelihood, num_data=40
    )
    for a, b in zip(model.inducing_posterior(X, Y, num_data=40), plain.inducing_posterior(mapped, Y, num_data=40)):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    np.testing.assert_allclose(model.prior_kl(X, Y), plain.prior_kl(mapped, Y), rtol=1e-10)
    Xnew = np.c_[np.linspace(0, 6, 3), [0, 4, 2]]
    for a, b in zip(model.predict_f(Xnew, (X, Y)), plain.predict_f(model.input_transform(Xnew).numpy(), (mapped, Y))):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
    with pytest.raises(ValueError, match="object ids must be in"):
        model.posterior((np.c_[X[:, 0], np.full(20, 7.0)], Y))
    with pytest.raises(ValueError, match="pass data"):
        model.predict_f(Xnew)


def test_object_vectors_receive_gradients_through_the_model(rng):
    model = _object_model(rng)
    X = np.c_[rng.uniform(0, 6, 20), rng.integers(0, 3, 20)]  # objects 3, 4 absent
    Y = rng.normal(size=(20, K)).astype(np.float32)
    with tf.GradientTape() as tape:
        loss = -model.objective_terms((X, Y)).elbo()
    grad = tf.convert_to_tensor(tape.gradient(loss, model.input_transform.vectors.unconstrained_variable)).numpy()
    assert np.all(np.abs(grad[:3]).sum(1) > 0) and np.all(grad[3:] == 0)
    assert any(v is model.input_transform.vectors.unconstrained_variable for v in model.trainable_variables)


def test_posterior_conditions_on_more_data_by_adding_statistics(rng):
    """posterior(A).predict_f(x, data=B) == posterior(A u B).predict_f(x) (statistics are sums;
    the float32 encoder run in other chunks differs in the last bits)."""
    encoder, decoder = _networks()
    model = gv.SVGPVAE(
        encoder,
        decoder,
        gpflow.kernels.SquaredExponential(lengthscales=2.0),
        np.linspace(0, 10, 7)[:, None],
        num_data=50,
    )
    X = rng.uniform(0, 10, (30, 1))
    Y = rng.normal(size=(30, K)).astype(np.float32)
    Xnew = np.linspace(0, 10, 5)[:, None]
    joint = model.posterior((X, Y)).predict_f(Xnew)
    split = model.posterior((X[:18], Y[:18])).predict_f(Xnew, data=(X[18:], Y[18:]))
    for a, b in zip(joint, split):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)
    # per dataset: V datasets each added to the cached statistics
    Xv, Yv = np.stack([X[18:24], X[24:]]), np.stack([Y[18:24], Y[24:]])
    mean, var = model.posterior((X[:18], Y[:18])).predict_f(np.stack([Xnew, Xnew]), data=(Xv, Yv))
    for v, rows in enumerate((slice(0, 24), np.r_[0:18, 24:30])):
        ref_mean, ref_var = model.posterior((X[rows], Y[rows])).predict_f(Xnew)
        np.testing.assert_allclose(mean[v], ref_mean, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(var[v], ref_var, rtol=1e-5, atol=1e-8)


def test_unseen_group_is_placed_by_its_own_observations(rng):
    """Style x pose data: the posterior conditioned on a new group's context predicts at its other
    inputs with that group's representation, equal to conditioning on pre-mapped inputs."""
    rep = _representation(d=2)
    poses = ObjectVectors(4, 2, id_column=0, num_view_features=0, initial_vectors=rng.normal(size=(4, 2)))
    transform = Concatenate([GroupRepresentation(rep, group_column=0), Chain([SelectColumns([1]), poses])])
    encoder, decoder = _networks()
    Z = rng.normal(size=(5, 4))
    model = gv.SVGPVAE(
        encoder,
        decoder,
        gpflow.kernels.SquaredExponential(lengthscales=2.0),
        Z,
        num_data=100,
        input_transform=transform,
    )
    X_ctx = np.array([[[9.0, 0.0], [9.0, 1.0]], [[8.0, 2.0], [8.0, 0.0]]])  # two unseen groups
    Y_ctx = rng.normal(size=(2, 2, K)).astype(np.float32)
    X_tgt = np.array([[[9.0, 3.0]], [[8.0, 3.0]]])
    mean, var = model.predict_f(X_tgt, (X_ctx, Y_ctx))
    plain = gv.SVGPVAE(encoder, decoder, model.kernel, model.inducing_variable, num_data=100)
    for v in range(2):
        ctx_gp = transform(X_ctx[v], Y_ctx[v]).numpy()
        style = ctx_gp[0, :2]
        tgt_gp = np.c_[style[None], poses(X_tgt[v][:, 1:]).numpy()]
        ref_mean, ref_var = plain.predict_f(tgt_gp, (ctx_gp, Y_ctx[v]))
        np.testing.assert_allclose(mean[v], ref_mean, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(var[v], ref_var, rtol=1e-6, atol=1e-9)


def test_width_mismatch_between_transform_and_inducing_inputs_is_refused(rng):
    encoder, decoder = _networks()
    table = ObjectVectors(3, 2, num_view_features=1)
    with pytest.raises(ValueError, match="input transform"):
        gv.SVGPVAE(
            encoder, decoder, gpflow.kernels.SquaredExponential(), np.zeros((4, 2)), num_data=10, input_transform=table
        )
