"""The rotated-MNIST models: GPPVAE vs the exact low-rank GP term, GP-LVM gradients through
the SVGP-VAE and Deep SVIGP, the CVAE's terms, and few-epoch smoke runs of each model."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from check_shapes.exceptions import ShapeMismatchError
from gpflow.keras import tf_keras

from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.kernels import periodic_linear_kernel
from gpflow_svgpvae.models.cvae import CVAE, angle_condition
from gpflow_svgpvae.models.deep_svigp import DeepSVIGP
from gpflow_svgpvae.models.gppvae import GPPVAE
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

P, A, Q, L, K = 4, 5, 2, 3, 6  # objects, views, object dim, latent dim, pixels
ANGLES = 2 * np.pi * np.arange(A) / A


def _term(terms, key):
    """A term of ELBOTerms by name (the bound for "elbo")."""
    return terms.elbo() if key == "elbo" else getattr(terms, key)


def toy_data(rng, drop=3):
    pairs = [(p, a) for p in range(P) for a in range(A)]
    keep = sorted(rng.permutation(len(pairs))[: len(pairs) - drop])
    X = np.array([[ANGLES[pairs[i][1]], pairs[i][0]] for i in keep], dtype=np.float64)
    Y = rng.uniform(size=(len(X), K)).astype(np.float32)
    return X, Y


def table(rng):
    return ObjectVectors(P, Q, num_view_features=1, initial_vectors=rng.standard_normal((P, Q)))


def networks(seed=0, decoder_inputs=L):
    tf_keras.utils.set_random_seed(seed)
    return mlp_encoder(K, L, hidden_units=(8,)), mlp_decoder(decoder_inputs, K, hidden_units=(8,))


def kernel():
    return periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)), lengthscales=0.8)


def inducing(rng, M=6):
    return np.concatenate([rng.uniform(0, 2 * np.pi, (M, 1)), rng.standard_normal((M, Q))], axis=1)


# ---------------------------------------------------------------------------- GPPVAE
def exact_lowrank_nll(Z, V, alpha):
    """sum_l -log N(Z[:, l] | 0, V V^T + alpha I) with a dense Cholesky."""
    N = tf.shape(Z)[0]
    Kmat = tf.matmul(V, V, transpose_b=True) + alpha * tf.eye(N, dtype=Z.dtype)
    chol = tf.linalg.cholesky(Kmat)
    white = tf.linalg.triangular_solve(chol, Z, lower=True)
    logdet = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))
    n, num_latent = tf.cast(N, Z.dtype), tf.cast(tf.shape(Z)[1], Z.dtype)
    return 0.5 * (num_latent * (n * np.log(2 * np.pi) + logdet) + tf.reduce_sum(tf.square(white)))


def make_gppvae(rng, X, noise_variance=0.3):
    encoder, decoder = networks()
    view_kernel = gpflow.kernels.Periodic(gpflow.kernels.SquaredExponential(lengthscales=0.7), period=2 * np.pi)
    gpflow.set_trainable(view_kernel.period, False)
    return GPPVAE(
        encoder,
        decoder,
        view_kernel,
        ANGLES,
        table(rng),
        num_data=len(X),
        num_latent_gps=L,
        noise_variance=noise_variance,
        seed=3,
    )


def test_gppvae_objective_matches_autodiff_of_exact_gp_term(rng):
    X, Y = toy_data(rng)
    model = make_gppvae(rng, X)
    model.refresh(X, Y)
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        kl = model.objective_terms((X, Y)).kl  # full batch: scale = 1
    grads = tape.gradient(kl, variables)

    ids, views = model.split_inputs(X)
    eps = tf.gather_nd(model.eps_table, tf.stack([ids, views], 1))
    with tf.GradientTape() as tape:
        means, variances = model.encode(Y)
        Z = means + tf.sqrt(variances) * eps
        V = model.features(ids, views)
        entropy = 0.5 * tf.reduce_sum(np.log(2 * np.pi * np.e) + tf.math.log(variances))
        exact = exact_lowrank_nll(Z, V, tf.convert_to_tensor(model.noise_variance)) - entropy
    exact_grads = tape.gradient(exact, variables)

    np.testing.assert_allclose(kl.numpy(), exact.numpy(), rtol=1e-10)
    checked = 0
    for v, g, e in zip(variables, grads, exact_grads):
        if e is None:  # the decoder does not enter the GP term
            assert g is None or np.allclose(tf.convert_to_tensor(g).numpy(), 0.0), v.name
            continue
        g, e = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(e).numpy()
        assert np.abs(e).max() > 0, v.name
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-8 * np.abs(e).max(), err_msg=v.name)
        checked += 1
    # encoder weights, object vectors, view-kernel lengthscale and variance, alpha
    assert checked >= 6


def test_gppvae_gradient_descent_on_surrogate_improves_exact_gp_term(rng):
    """Sign check: a small step along -grad of the Taylor term lowers the exact NLL."""
    X, Y = toy_data(rng)
    model = make_gppvae(rng, X)
    model.refresh(X, Y)
    ids, views = model.split_inputs(X)
    eps = tf.gather_nd(model.eps_table, tf.stack([ids, views], 1))

    def exact_nll():
        means, variances = model.encode(Y)
        Z = means + tf.sqrt(variances) * eps
        return float(model.gp_nll(Z, ids, views).numpy())

    before = exact_nll()
    encoder_vars = model.encoder.trainable_variables
    with tf.GradientTape() as tape:
        kl = model.objective_terms((X, Y)).kl
        means, variances = model.encode(Y)
        entropy = 0.5 * tf.reduce_sum(np.log(2 * np.pi * np.e) + tf.math.log(variances))
        gp_part = kl + entropy  # the GP part only
    for v, g in zip(encoder_vars, tape.gradient(gp_part, encoder_vars)):
        v.assign_sub(1e-3 * g)
    assert exact_nll() < before


def test_gppvae_prediction_is_gp_posterior(rng):
    X, Y = toy_data(rng)
    model = make_gppvae(rng, X)
    Xnew = np.array([[ANGLES[1], 2.0], [ANGLES[3], 0.0]])
    mean, var = model.predict_f(Xnew, data=(X, Y))
    means, _ = model.encode(Y)
    ids, views = model.split_inputs(X)
    idn, vwn = model.split_inputs(Xnew)
    V, Vn = model.features(ids, views).numpy(), model.features(idn, vwn).numpy()
    alpha = float(model.noise_variance.numpy())
    Kc = V @ V.T + alpha * np.eye(len(V))
    Kx = Vn @ V.T
    np.testing.assert_allclose(mean.numpy(), Kx @ np.linalg.solve(Kc, means.numpy()), rtol=1e-8, atol=1e-10)
    expected_var = np.sum(Vn**2, 1) + alpha - np.einsum("ij,ji->i", Kx, np.linalg.solve(Kc, Kx.T))
    np.testing.assert_allclose(var.numpy()[:, 0], expected_var, rtol=1e-8)
    assert np.all(var.numpy() >= alpha * (1 - 1e-8))


def test_gppvae_predict_y_decodes_predict_f_and_needs_data(rng):
    X, Y = toy_data(rng)
    model = make_gppvae(rng, X)
    Xnew = np.array([[ANGLES[1], 2.0], [ANGLES[3], 0.0], [ANGLES[0], 1.0]])
    mean_f, var_f = model.predict_f(Xnew, (X, Y))
    mean, samples = model.predict_y(Xnew, (X, Y), num_samples=4, seed=7)
    assert mean.shape == (3, K) and samples.shape == (4, 3, K)
    np.testing.assert_allclose(mean.numpy(), model.decode(mean_f).numpy(), rtol=1e-6)
    eps = tf.random.stateless_normal([4, 3, L], tf.constant([7, 3], tf.int64), dtype=tf.float64)  # stream 3
    expected = model.decode(tf.reshape(mean_f + tf.sqrt(var_f) * eps, [-1, L])).numpy().reshape(4, 3, K)
    np.testing.assert_allclose(samples.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(model.predict_y(Xnew, (X, Y)).numpy(), mean.numpy(), rtol=1e-6, atol=1e-7)
    for method in (model.predict_f, model.predict_y):
        with pytest.raises(ValueError, match="pass data"):
            method(Xnew)
        with pytest.raises(ShapeMismatchError):
            method(Xnew[0], (X, Y))  # [D] instead of [N, D]


def test_gppvae_requires_refresh(rng):
    X, Y = toy_data(rng)
    model = make_gppvae(rng, X)
    with pytest.raises(RuntimeError, match="refresh"):
        model.objective_terms((X, Y))


# ---------------------------------------------------------------------- SVGP-VAE + GP-LVM
def make_aux_svgpvae(rng, X, seed=5):
    encoder, decoder = networks()
    return SVGPVAE(encoder, decoder, kernel(), inducing(rng), num_data=len(X), seed=seed, input_transform=table(rng))


def test_object_vectors_get_gradients_through_svgpvae(rng):
    X, Y = toy_data(rng)
    batch = np.flatnonzero(X[:, 1] != 3)  # object 3 not in the batch
    model = make_aux_svgpvae(rng, X)
    with tf.GradientTape() as tape:
        elbo = model.objective_terms((X[batch], Y[batch])).elbo()
    vectors = model.input_transform.vectors
    lengthscale = model.kernel.kernels[0].base_kernel.lengthscales
    g_vec, g_len = tape.gradient(elbo, [vectors.unconstrained_variable, lengthscale.unconstrained_variable])
    g_vec = tf.convert_to_tensor(g_vec).numpy()
    assert np.all(np.abs(g_vec[:3]).sum(1) > 0)  # objects in the batch
    np.testing.assert_array_equal(g_vec[3], 0.0)  # object not in the batch
    assert abs(float(g_len)) > 0
    assert any(v is vectors.unconstrained_variable for v in model.trainable_variables)


def test_auxiliary_svgpvae_equals_svgpvae_on_mapped_inputs(rng):
    X, Y = toy_data(rng)
    model = make_aux_svgpvae(rng, X, seed=11)
    mapped = model.map_inputs(X)
    plain = SVGPVAE(model.encoder, model.decoder, model.kernel, model.inducing_variable, num_data=len(X), seed=11)
    a = model.objective_terms((X, Y))
    b = plain.objective_terms((mapped, Y))
    for key in ("elbo", "reconstruction", "kl"):
        np.testing.assert_allclose(_term(a, key).numpy(), _term(b, key).numpy(), rtol=1e-12)
    post, post_plain = model.posterior((X, Y)), plain.posterior((mapped.numpy(), Y))
    Xnew = np.array([[0.3, 1.0], [2.0, 3.0]])
    for u, v in zip(post.predict_f(Xnew), post_plain.predict_f(model.map_inputs(Xnew))):
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-10)
    assert post.predict_y(Xnew).shape == (2, K)


def test_auxiliary_svgpvae_training_step_compiles_with_xla(rng):
    """The whole step, GP-LVM lookup (with its id assertions) included, compiles with XLA."""
    from gpflow_svgpvae.training import train

    X, Y = toy_data(rng)
    model = make_aux_svgpvae(rng, X)
    before = model.input_transform.vectors.numpy().copy()
    history = train(model, (X, Y), epochs=1, batch_size=len(X), jit_compile=True, progress=False)
    assert np.isfinite(history["loss"][0])
    assert not np.allclose(model.input_transform.vectors.numpy(), before)


def test_auxiliary_svgpvae_checks_raw_width(rng):
    X, Y = toy_data(rng)
    model = make_aux_svgpvae(rng, X)
    assert model.gp_input_dim == 1 + Q and model.input_dim == 2
    with pytest.raises(ValueError, match="3 input dimensions but the model expects 2.*ObjectVectors"):
        model.objective_terms((np.concatenate([X, X[:, :1]], 1), Y))
    with pytest.raises(ValueError, match="inducing inputs have 2 columns but the input transform"):
        SVGPVAE(*networks(), kernel(), inducing(rng)[:, :2], num_data=len(X), input_transform=table(rng))


# ---------------------------------------------------------------------------- Deep SVIGP
def test_deep_svigp_matches_gpflow_svgp_and_trains_object_vectors(rng):
    X, Y = toy_data(rng)
    _, decoder = networks()
    model = DeepSVIGP(decoder, kernel(), inducing(rng), num_latent_gps=L, num_data=len(X), input_transform=table(rng))
    model.q_mu.assign(rng.standard_normal(model.q_mu.shape))
    svgp = gpflow.models.SVGP(
        model.kernel,
        gpflow.likelihoods.Gaussian(),
        model.inducing_variable,
        num_latent_gps=L,
        q_mu=model.q_mu.numpy(),
        q_sqrt=model.q_sqrt.numpy(),
        whiten=True,
    )
    for u, v in zip(model.predict_f(X), svgp.predict_f(model.map_inputs(X))):
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-10)
    np.testing.assert_allclose(model.prior_kl().numpy(), svgp.prior_kl().numpy(), rtol=1e-10)
    assert model.encoder is None
    with tf.GradientTape() as tape:
        elbo = model.objective_terms((X, Y)).elbo()
    g = tape.gradient(elbo, model.input_transform.vectors.unconstrained_variable)
    assert np.all(np.abs(tf.convert_to_tensor(g).numpy()).sum(1) > 0)


def test_deep_svigp_predicts_without_data(rng):
    X, Y = toy_data(rng)
    _, decoder = networks()
    model = DeepSVIGP(decoder, kernel(), inducing(rng), num_latent_gps=L, num_data=len(X), input_transform=table(rng))
    model.q_mu.assign(rng.standard_normal(model.q_mu.shape))
    mean_f, var_f = model.predict_f(X[:4])
    mean, samples = model.predict_y(X[:4], num_samples=3, seed=5)
    assert mean.shape == (4, K) and samples.shape == (3, 4, K)
    np.testing.assert_allclose(mean.numpy(), model.decode(mean_f).numpy(), rtol=1e-6)
    eps = tf.random.stateless_normal([3, 4, L], tf.constant([5, 2], tf.int64), dtype=tf.float64)  # stream 2
    expected = model.decode(tf.reshape(mean_f + tf.sqrt(var_f) * eps, [-1, L])).numpy().reshape(3, 4, K)
    np.testing.assert_allclose(samples.numpy(), expected, rtol=1e-6)
    # leading batch dimensions, and full covariances
    batched, _ = model.predict_f(np.stack([X[:4], X[4:8]]))
    np.testing.assert_allclose(batched.numpy()[0], mean_f.numpy(), rtol=1e-10)
    assert model.predict_y(np.stack([X[:4], X[4:8]])).shape == (2, 4, K)
    _, cov = model.predict_f(X[:4], full_cov=True)
    assert cov.shape == (L, 4, 4)
    # it conditions on nothing: data are refused with a pointer to fit_object_vectors
    for method in (model.predict_f, model.predict_y):
        with pytest.raises(ValueError, match="fit_object_vectors"):
            method(X[:4], (X, Y))
    with pytest.raises(ShapeMismatchError):
        model.predict_f(X[0])  # [D] instead of [N, D]


def test_deep_svigp_fit_object_vectors_touches_only_new_objects(rng):
    X, Y = toy_data(rng)
    _, decoder = networks()
    model = DeepSVIGP(decoder, kernel(), inducing(rng), num_latent_gps=L, num_data=len(X), input_transform=table(rng))
    before = model.input_transform.vectors.numpy().copy()
    ctx = X[:, 1] == 2
    first = model.fit_object_vectors(X[ctx], Y[ctx], [2], steps=1)
    last = model.fit_object_vectors(X[ctx], Y[ctx], [2], steps=40, learning_rate=0.05)
    after = model.input_transform.vectors.numpy()
    np.testing.assert_array_equal(after[[0, 1, 3]], before[[0, 1, 3]])
    assert not np.allclose(after[2], before[2])
    assert last < first


# --------------------------------------------------------------------------------- CVAE
def make_cvae(X):
    tf_keras.utils.set_random_seed(0)
    inputs = [tf_keras.Input((K,)), tf_keras.Input((2,))]
    h = tf_keras.layers.Dense(8, activation="tanh")(tf_keras.layers.Concatenate()(inputs))
    from gpflow_svgpvae.networks import GaussianSiteHead

    encoder = tf_keras.Model(inputs, GaussianSiteHead(L)(h))
    _, decoder = networks(decoder_inputs=L + 2)
    return CVAE(encoder, decoder, num_data=len(X), seed=2)


def test_cvae_terms_and_object_codes(rng):
    X, Y = toy_data(rng)
    model = make_cvae(X)
    terms = model.objective_terms((X[:8], Y[:8]))
    m, v = model.encode_conditional(X[:8], Y[:8])
    kl = 0.5 * np.sum(v.numpy() + m.numpy() ** 2 - 1 - np.log(v.numpy()))
    np.testing.assert_allclose(terms.kl.numpy(), len(X) / 8 * kl, rtol=1e-10)
    np.testing.assert_allclose(terms.elbo().numpy(), len(X) / 8 * (terms.reconstruction.numpy() - kl), rtol=1e-10)
    np.testing.assert_allclose(angle_condition([np.pi / 2]).numpy(), [[0.0, 1.0]], atol=1e-7)
    # the code of an object is the average of its context encodings
    means, variances, counts = model.object_codes(X, Y, P)
    m_all, _ = model.encode_conditional(X, Y)
    for p in range(P):
        np.testing.assert_allclose(means[p], m_all.numpy()[X[:, 1] == p].mean(0), rtol=1e-6)
    assert counts.sum() == len(X)
    Xnew = np.array([[0.1, 0.0], [0.2, 3.0]])
    mean, samples = model.predict_y(Xnew, (X, Y), num_samples=2)
    assert mean.shape == (2, K) and samples.shape == (2, 2, K)
    expected = model.decode_conditional(means[[0, 3]], angle_condition(Xnew[:, 0])).numpy()
    np.testing.assert_allclose(mean.numpy(), expected, rtol=1e-5)
    # predict_f: the object codes; samples decode code + sd * eps (stream 1) with each row's view
    code_mean, code_var = model.predict_f(Xnew, data=(X, Y))
    np.testing.assert_allclose(code_mean.numpy(), means[[0, 3]], rtol=1e-12)
    np.testing.assert_allclose(code_var.numpy(), variances[[0, 3]], rtol=1e-12)
    eps = tf.random.stateless_normal([2, 2, L], tf.constant([0, 1], tf.int64), dtype=tf.float64)
    Z = code_mean + tf.sqrt(code_var) * eps
    condition = tf.tile(angle_condition(Xnew[:, 0]), [2, 1])
    expected = model.decode_conditional(tf.reshape(Z, [-1, L]), condition).numpy().reshape(2, 2, K)
    np.testing.assert_allclose(samples.numpy(), expected, rtol=1e-5)


def test_cvae_prediction_needs_context_and_checks_shapes(rng):
    X, Y = toy_data(rng)
    model = make_cvae(X)
    Xnew = np.array([[0.1, 0.0], [0.2, 3.0]])
    for method in (model.predict_f, model.predict_y):
        with pytest.raises(ValueError, match="pass data"):
            method(Xnew)
        with pytest.raises(ShapeMismatchError):
            method(Xnew[0], (X, Y))  # [D] instead of [N, D]
        with pytest.raises(ShapeMismatchError):
            method(Xnew, (X, Y[:-1]))  # context X and Y of different lengths
    with pytest.raises(ValueError, match="no context images"):
        model.predict_y(Xnew, (X[X[:, 1] != 3], Y[X[:, 1] != 3]))


def make_style_cvae(X, encoder_sees_condition):
    """A CVAE whose condition is [style of the object's images, view vector] (SPRITES-like)."""
    from gpflow_svgpvae.networks import GaussianSiteHead
    from gpflow_svgpvae.networks.representation import StyleRepresentation
    from gpflow_svgpvae.transforms import Chain, Concatenate, GroupRepresentation, SelectColumns

    tf_keras.utils.set_random_seed(0)
    rep = StyleRepresentation(tf_keras.Sequential([tf_keras.Input((K,)), tf_keras.layers.Dense(2)]))
    views = ObjectVectors(
        A, 2, id_column=0, num_view_features=0, initial_vectors=np.random.default_rng(0).standard_normal((A, 2))
    )
    condition = Concatenate([GroupRepresentation(rep, group_column=1), Chain([SelectColumns([0]), views])])
    H = 4
    inputs = [tf_keras.Input((K,)), tf_keras.Input((H,))] if encoder_sees_condition else [tf_keras.Input((K,))]
    h = tf_keras.layers.Concatenate()(inputs) if encoder_sees_condition else inputs[0]
    encoder = tf_keras.Model(inputs, GaussianSiteHead(L)(tf_keras.layers.Dense(8, activation="tanh")(h)))
    _, decoder = networks(decoder_inputs=L + H)
    return CVAE(
        encoder,
        decoder,
        num_data=len(X),
        seed=2,
        id_column=1,
        condition=condition,
        encoder_sees_condition=encoder_sees_condition,
    )


@pytest.mark.parametrize("encoder_sees_condition", [False, True])
def test_cvae_with_a_style_condition_uses_the_context_style(rng, encoder_sees_condition):
    X, Y = toy_data(rng)
    Xv = np.stack([np.round(X[:, 0] / (2 * np.pi / A)) % A, X[:, 1]], 1)  # [view id, object id]
    model = make_style_cvae(Xv, encoder_sees_condition)
    rep = model.condition.transforms[0].representation
    features = rep.frame_features(Y).numpy().astype(np.float64)
    views = model.condition.transforms[1].transforms[1].vectors.numpy()
    # training: the style sums the features of the object's images in the batch
    batch = slice(0, 9)
    c = model._condition(Xv[batch], Y[batch]).numpy()
    ids = Xv[batch, 1]
    expected_style = np.stack([features[batch][ids == g].sum(0) for g in ids])
    np.testing.assert_allclose(c[:, :2], expected_style, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c[:, 2:], views[Xv[batch, 0].astype(int)], rtol=1e-6)
    terms = model.objective_terms((Xv[batch], Y[batch]))
    assert np.isfinite(terms.elbo().numpy())
    # prediction: style from *all* of the object's context images, the code their average encoding
    ctx = Xv[:, 1] == 2
    Xnew = np.array([[1.0, 2.0], [4.0, 2.0]])
    style = features[ctx].sum(0)
    qc = model.query_condition(Xnew, (Xv[ctx], Y[ctx])).numpy()
    np.testing.assert_allclose(qc, np.concatenate([np.tile(style, (2, 1)), views[[1, 4]]], 1), rtol=1e-5, atol=1e-6)
    condition = np.tile(style.astype(np.float32), (int(ctx.sum()), 1))
    m_ctx, _ = model._encode_with(Y[ctx], np.concatenate([condition, views[Xv[ctx, 0].astype(int)]], 1))
    code, _ = model.predict_f(Xnew, (Xv[ctx], Y[ctx]))
    np.testing.assert_allclose(code.numpy(), np.tile(m_ctx.numpy().mean(0), (2, 1)), rtol=1e-5)
    mean = model.predict_y(Xnew, (Xv[ctx], Y[ctx]))
    np.testing.assert_allclose(mean.numpy(), model.decode_conditional(code, qc).numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="pass data"):
        model.query_condition(Xnew)


def test_cvae_rejects_a_bad_condition():
    encoder, decoder = networks()
    with pytest.raises(TypeError, match="condition must be an InputTransform"):
        CVAE(encoder, decoder, num_data=10, condition=lambda X: X)


# ------------------------------------------------------- one query row
def test_every_model_predicts_y_for_a_single_query_row(rng):
    """predict_y at one query row returns ``[1, K]`` (and ``[S, 1, K]`` samples) equal to row 0 of a
    two-row query: the declared return shapes must not index a single-row tensor as a pair."""
    X, Y = toy_data(rng)
    encoder, decoder = networks()
    svgpvae = SVGPVAE(encoder, decoder, kernel(), inducing(rng), num_data=len(X), input_transform=table(rng))
    deep = DeepSVIGP(
        networks()[1], kernel(), inducing(rng), num_latent_gps=L, num_data=len(X), input_transform=table(rng)
    )
    gppvae = make_gppvae(rng, X)
    cvae = make_cvae(X)
    Xnew = np.array([[ANGLES[1], 2.0], [ANGLES[3], 0.0]])
    cases = {
        "svgpvae": (svgpvae.predict_y, (X, Y)),
        "posterior": (svgpvae.posterior((X, Y)).predict_y, None),
        "deep_svigp": (deep.predict_y, None),
        "gppvae": (gppvae.predict_y, (X, Y)),
        "cvae": (cvae.predict_y, (X, Y)),
    }
    for name, (predict_y, data) in cases.items():
        both = predict_y(Xnew, data).numpy()
        one = predict_y(Xnew[:1], data)
        assert one.shape == (1, K), name
        np.testing.assert_allclose(one.numpy()[0], both[0], rtol=1e-6, err_msg=name)
        mean, samples = predict_y(Xnew[:1], data, num_samples=3, seed=4)
        assert mean.shape == (1, K) and samples.shape == (3, 1, K), name
        np.testing.assert_allclose(mean.numpy(), one.numpy(), rtol=1e-6, err_msg=name)
