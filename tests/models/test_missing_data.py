"""Missing data in the SVGP-VAE: masked likelihoods, masked data path, fully missing points,
padded sequences, imputation, training with masked batches, GECO on observed entries."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import norm

import gpflow_svgpvae as gv
from gpflow_svgpvae import amortized
from gpflow_svgpvae.likelihoods import as_likelihood
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import ELBO, GECO, evaluation_terms, make_dataset, train
from gpflow_svgpvae.training.loop import masked_arrays
from tests.conftest import make_tiny_model, tiny_data


def _log_sigmoid(f):
    return -np.logaddexp(0.0, -f)


# ------------------------------------------------------------------------- likelihoods
LIKELIHOODS = {
    "gaussian": (lambda: gv.Gaussian(0.3), lambda y, f: -0.5 * (np.log(2 * np.pi * 0.3) + (y - f) ** 2 / 0.3)),
    "bernoulli": (lambda: gv.Bernoulli(), lambda y, f: y * _log_sigmoid(f) + (1 - y) * _log_sigmoid(-f)),
    "gpflow_gaussian": (
        lambda: gpflow.likelihoods.Gaussian(variance=0.2),
        lambda y, f: -0.5 * (np.log(2 * np.pi * 0.2) + (y - f) ** 2 / 0.2),
    ),
    "gpflow_bernoulli_logistic": (
        lambda: gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
        lambda y, f: y * _log_sigmoid(f) + (1 - y) * _log_sigmoid(-f),
    ),
    "gpflow_bernoulli_probit": (
        lambda: gpflow.likelihoods.Bernoulli(),
        lambda y, f: y * norm.logcdf(f) + (1 - y) * norm.logcdf(-f),
    ),
}


@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_masked_log_prob_matches_numpy(name, rng):
    make, reference = LIKELIHOODS[name]
    likelihood = as_likelihood(make())
    shape = (5, 3, 2, 2)  # images [b, H, W, C]
    Y = (rng.uniform(size=shape) > 0.5).astype(np.float64)
    params = rng.normal(scale=2.0, size=shape)
    mask = (rng.uniform(size=shape) > 0.4).astype(np.float64)
    mask[1] = 0.0  # a point with nothing observed
    Y_nan = np.where(mask > 0, Y, np.nan)  # missing values are never read
    params_t = tf.constant(params)
    with tf.GradientTape() as tape:
        tape.watch(params_t)
        got = likelihood.log_prob(Y_nan, params_t, mask=mask)
    expected = np.sum((mask * np.nan_to_num(reference(np.nan_to_num(Y_nan), params))).reshape(5, -1), axis=1)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    assert got.numpy()[1] == 0.0
    gradient = tape.gradient(got, params_t).numpy()
    assert np.all(np.isfinite(gradient)) and np.all(gradient[mask == 0] == 0.0)
    # A mask of ones: exactly the unmasked numbers.
    np.testing.assert_array_equal(
        likelihood.log_prob(Y, params, mask=np.ones(shape)).numpy(), likelihood.log_prob(Y, params).numpy()
    )


# ------------------------------------------------------------------ mask of ones == today
def _elbo_and_gradients(model, data):
    with tf.GradientTape() as tape:
        elbo = model.objective_terms(data).elbo()
    return elbo.numpy(), [g.numpy() for g in tape.gradient(elbo, model.trainable_variables)]


@pytest.mark.parametrize("layout", ["one_dataset", "sequences"])
@pytest.mark.parametrize("how", ["mask_of_ones", "nan_flag_without_nan", "frame_mask_of_ones"])
def test_fully_observed_data_give_todays_numbers(layout, how):
    X, Y = tiny_data()
    if layout == "sequences":
        X, Y = X[:48].reshape(4, 12, 1), Y[:48].reshape(4, 12, -1)
        kwargs = dict(num_data=12)
    else:
        X, Y = X[:20], Y[:20]
        kwargs = {}
    plain = make_tiny_model(**kwargs)
    masked = make_tiny_model(missing_values="nan" if how == "nan_flag_without_nan" else None, **kwargs)
    if how == "mask_of_ones":
        data = (X, Y, np.ones_like(Y))
    elif how == "frame_mask_of_ones":
        data = (X, Y, np.ones(Y.shape[:-1], bool))
    else:
        data = (X, Y)
    elbo, grads = _elbo_and_gradients(plain, (X, Y))
    elbo_m, grads_m = _elbo_and_gradients(masked, data)
    assert elbo == elbo_m
    assert len(grads) == len(grads_m)
    for g, g_m in zip(grads, grads_m):
        np.testing.assert_allclose(g_m, g, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------- fully missing points
class LinearSites(tf.Module):
    """A float64 encoder (row by row exact, whatever the batch layout)."""

    compute_dtype = tf.float64

    def __init__(self, K, L, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.A = tf.Variable(rng.normal(size=(K, L)) / np.sqrt(K))
        self.B = tf.Variable(rng.normal(size=(K, L)) / np.sqrt(K))

    def __call__(self, Y):
        Y = tf.cast(Y, tf.float64)
        return Y @ self.A, tf.nn.softplus(Y @ self.B) + 0.05


class LinearDecoder(tf.Module):
    compute_dtype = tf.float64

    def __init__(self, L, K, seed):
        super().__init__()
        self.W = tf.Variable(np.random.default_rng(seed).normal(size=(L, K)))

    def __call__(self, Z):
        return tf.cast(Z, tf.float64) @ self.W


def _float64_model(num_data, K=8, L=2, **kwargs):
    """An SVGP-VAE with float64 networks (row by row exact, whatever the batch layout)."""
    kernel = gpflow.kernels.Matern32(lengthscales=2.0)
    Z = np.linspace(0.0, 10.0, 6)[:, None]
    return gv.SVGPVAE(
        LinearSites(K, L, 1), LinearDecoder(L, K, 2), kernel, Z, gv.Gaussian(0.1), num_data=num_data, **kwargs
    )


def test_weighted_statistics_drop_zero_weight_points(rng):
    M, N, L = 4, 7, 2
    W = rng.normal(size=(1, M, N))
    means, variances = rng.normal(size=(N, L)), rng.uniform(0.1, 1.0, size=(N, L))
    weights = np.array([1, 0, 1, 1, 0, 1, 1], np.float64)
    means[1], variances[4] = np.inf, 0.0  # never used: weight 0
    P, r = amortized.statistics_from_whitened(W, means, variances, weights=weights)
    keep = weights > 0
    for j in range(L):
        lam = 1.0 / variances[keep, j]
        np.testing.assert_allclose(P[j], (W[0][:, keep] * lam) @ W[0][:, keep].T, rtol=1e-12)
        np.testing.assert_allclose(r[j], (W[0][:, keep] * lam) @ means[keep, j], rtol=1e-12)


def test_fully_missing_point_leaves_posterior_unchanged():
    tiny_model = _float64_model(60)
    X, Y = tiny_data()
    X, Y = X[:20], Y[:20]
    mask = (np.random.default_rng(3).uniform(size=Y.shape) > 0.3).astype(np.float32)
    missing = np.array([2, 9, 15])
    mask[missing] = 0.0
    keep = np.setdiff1d(np.arange(20), missing)
    Y_nan = np.where(mask > 0, Y, np.nan)
    # The minibatch posterior with s = 1 (b = 20 points, 3 of them with nothing observed) ...
    with_missing = tiny_model.batch_posterior((X, Y_nan, mask), num_data=20)
    without = tiny_model.batch_posterior((X[keep], Y[keep], mask[keep]), num_data=17)
    for a, b in zip(with_missing.posterior[1:], without.posterior[1:]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(with_missing.kl.numpy(), without.kl.numpy(), rtol=1e-10)
    np.testing.assert_allclose(with_missing.mean.numpy()[keep], without.mean.numpy(), rtol=1e-9, atol=1e-12)
    # ... and the cached posterior: the same statistics; the missing points still get a prediction.
    post = tiny_model.posterior((X, Y_nan, mask))
    post_ref = tiny_model.posterior((X[keep], Y[keep], mask[keep]))
    np.testing.assert_allclose(post.P.numpy(), post_ref.P.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(post.r.numpy(), post_ref.r.numpy(), rtol=1e-12, atol=1e-14)
    assert post.num_conditioned == 17
    mean, var = tiny_model.predict_f(X[missing], data=(X, Y_nan, mask))
    mean_ref, var_ref = post_ref.predict_f(X[missing])
    np.testing.assert_allclose(mean.numpy(), mean_ref.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var.numpy(), var_ref.numpy(), rtol=1e-10)
    assert np.all(np.isfinite(mean.numpy())) and np.all(var.numpy() > 0)


# --------------------------------------------------------------------- padded sequences
def _padded_problem(entry_mask: bool):
    rng = np.random.default_rng(11)
    lengths, T, K, L = [5, 8, 3], 8, 4, 2
    encoder, decoder = LinearSites(K, L, 1), LinearDecoder(L, K, 2)
    kernel = gpflow.kernels.Matern32(lengthscales=2.0)
    Z = np.linspace(0.0, 8.0, 5)[:, None]
    model = gv.SVGPVAE(encoder, decoder, kernel, Z, gv.Gaussian(0.1), sequence_length=T)
    sequences = []
    for n in lengths:
        X = np.sort(rng.uniform(0, 8, size=(n, 1)), axis=0)
        Y = rng.normal(size=(n, K))
        mask = (rng.uniform(size=(n, K)) > 0.3).astype(np.float64) if entry_mask else np.ones((n, K))
        sequences.append((X, Y, mask))
    V = len(lengths)
    Xp, Yp = np.full((V, T, 1), 3.0), np.full((V, T, K), np.nan)  # padded frames: any inputs, NaN values
    Mp = np.zeros((V, T, K)) if entry_mask else np.zeros((V, T), bool)
    for v, (X, Y, mask) in enumerate(sequences):
        n = len(X)
        Xp[v, :n], Yp[v, :n] = X, np.where(mask > 0, Y, np.nan)
        Mp[v, :n] = mask if entry_mask else True
    one_by_one = [
        gv.SVGPVAE(encoder, decoder, kernel, model.inducing_variable, model.likelihood, num_data=len(X))
        for X, _, _ in sequences
    ]
    return model, (Xp, Yp, Mp), one_by_one, sequences


@pytest.mark.parametrize("entry_mask", [True, False], ids=["entry_mask", "frame_mask"])
def test_padded_sequences_equal_one_by_one(entry_mask, monkeypatch):
    model, padded, singles, sequences = _padded_problem(entry_mask)
    # Fix the Monte Carlo draws in both layouts: the codes are the posterior means.
    for m in [model] + singles:
        monkeypatch.setattr(m, "_sample_normal", lambda mean, var: mean[None])

    batch = model.batch_posterior(padded)
    with tf.GradientTape() as tape:
        elbo = model.objective_terms(padded).elbo()
    grad = tape.gradient(elbo, model.kernel.trainable_variables)
    elbo_ref, kl_ref, grad_ref = 0.0, 0.0, [0.0 for _ in grad]
    for v, (single, (X, Y, mask)) in enumerate(zip(singles, sequences)):
        n = len(X)
        ref = single.batch_posterior((X, Y, mask))
        np.testing.assert_allclose(batch.kl.numpy()[v], ref.kl.numpy(), rtol=1e-8)
        np.testing.assert_allclose(batch.mean.numpy()[v, :n], ref.mean.numpy(), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(batch.variance.numpy()[v, :n], ref.variance.numpy(), rtol=1e-8)
        with tf.GradientTape() as tape:
            terms = single.objective_terms((X, Y, mask))
            terms_elbo = terms.elbo()
        elbo_ref += terms.elbo().numpy()
        kl_ref += terms.kl.numpy()
        grad_ref = [
            a + b.numpy() for a, b in zip(grad_ref, tape.gradient(terms_elbo, single.kernel.trainable_variables))
        ]
    np.testing.assert_allclose(elbo.numpy(), elbo_ref, rtol=1e-8)
    np.testing.assert_allclose(model.objective_terms(padded).kl.numpy(), kl_ref, rtol=1e-8)
    for g, g_ref in zip(grad, grad_ref):
        np.testing.assert_allclose(g.numpy(), g_ref, rtol=1e-8)

    # Posterior predictions: each padded sequence conditioned on its own real frames.
    Xq = np.broadcast_to(np.linspace(0.0, 8.0, 6)[None, :, None], (3, 6, 1))
    mean, var = model.predict_f(Xq, data=padded)
    for v, (X, Y, mask) in enumerate(sequences):
        mean_ref, var_ref = model.predict_f(Xq[v], data=(X, Y, mask))
        np.testing.assert_allclose(mean.numpy()[v], mean_ref.numpy(), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(var.numpy()[v], var_ref.numpy(), rtol=1e-8)


# -------------------------------------------------------------------------------- impute
def _masked_tiny(seed=5, n=30):
    X, Y = tiny_data()
    X, Y = X[:n], Y[:n]
    mask = (np.random.default_rng(seed).uniform(size=Y.shape) > 0.4).astype(np.float32)
    mask[[4, 17]] = 0.0
    return X, Y, mask


def test_impute_keeps_observed_entries_and_fills_the_decoded_mean(tiny_model):
    X, Y, mask = _masked_tiny()
    Y_nan = np.where(mask > 0, Y, np.nan).astype(np.float32)
    imputed, samples = tiny_model.impute((X, Y_nan, mask), num_samples=4, seed=3)
    imputed, samples = imputed.numpy(), samples.numpy()
    assert imputed.shape == Y.shape and samples.shape == (4,) + Y.shape
    observed = mask > 0
    np.testing.assert_array_equal(imputed[observed], Y[observed])
    for s in samples:
        np.testing.assert_array_equal(s[observed], Y[observed])
    decoded = tiny_model.predict_y(X, data=(X, Y_nan, mask)).numpy()  # conditioned on all observed entries
    np.testing.assert_allclose(imputed[~observed], decoded[~observed], rtol=1e-6)
    assert np.all(np.isfinite(samples)) and np.std(samples[:, ~observed], axis=0).mean() > 0
    # Stateless: the same seed gives the same samples; NaN as missing (model flag) is the same.
    np.testing.assert_array_equal(tiny_model.impute((X, Y_nan, mask), num_samples=4, seed=3)[1].numpy(), samples)
    flagged = make_tiny_model(missing_values="nan")
    np.testing.assert_allclose(flagged.impute((X, Y_nan)).numpy(), imputed, rtol=1e-6)


def test_impute_sequences_each_conditioned_on_its_own_frames():
    X, Y, mask = _masked_tiny(n=36)
    model = make_tiny_model(num_data=12)
    Xs, Ys, Ms = X.reshape(3, 12, 1), Y.reshape(3, 12, -1), mask.reshape(3, 12, -1)
    Ms[1, 9:] = 0.0  # a shorter sequence: padded frames
    imputed = model.impute((Xs, Ys, Ms)).numpy()
    assert imputed.shape == Ys.shape
    np.testing.assert_array_equal(imputed[Ms > 0], Ys[Ms > 0])
    for v in range(3):
        one = model.impute((Xs[v], Ys[v], Ms[v])).numpy()  # one latent dataset, s = 1
        np.testing.assert_allclose(imputed[v], one, rtol=1e-5, atol=1e-6)
    _, samples = model.impute((Xs, Ys, Ms), num_samples=2)
    assert samples.shape == (2,) + Ys.shape


# ------------------------------------------------------------------ encoder sees the mask
def test_encoder_sees_mask_as_extra_channels():
    X, Y, mask = _masked_tiny()
    K = Y.shape[-1]
    model = gv.SVGPVAE(
        mlp_encoder(2 * K, 1, hidden_units=(16,)),
        mlp_decoder(1, K, hidden_units=(16,)),
        gpflow.kernels.SquaredExponential(),
        np.linspace(0.0, 10.0, 6)[:, None],
        gv.Gaussian(0.05),
        num_data=60,
        encoder_sees_mask=True,
    )
    inputs = model.encoder_inputs(tf.constant(np.where(mask > 0, Y, 0)), tf.constant(mask)).numpy()
    np.testing.assert_array_equal(inputs, np.concatenate([np.where(mask > 0, Y, 0), mask], -1))
    assert np.isfinite(model.objective_terms((X[:20], Y[:20], mask[:20])).elbo().numpy())
    assert np.isfinite(model.objective_terms((X[:20], Y[:20])).elbo().numpy())  # a mask of ones
    images = tf.zeros([2, 5, 5, 3])
    assert model.encoder_inputs(images).shape == (2, 5, 5, 6)
    # An encoder built for width K receives [Y, mask] of width 2K: Keras names both widths.
    with pytest.raises(ValueError, match=rf"expected shape=\(None, {K}\), found shape=\(20, {2 * K}\)"):
        make_tiny_model(encoder_sees_mask=True).objective_terms((X[:20], Y[:20], mask[:20]))


# ----------------------------------------------------------------------------- errors
def test_nan_needs_a_mask_or_the_model_flag(tiny_model):
    X, Y, mask = _masked_tiny()
    Y_nan = np.where(mask > 0, Y, np.nan)
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN or inf"):
        tiny_model.objective_terms((X, Y_nan))
    with pytest.raises(tf.errors.InvalidArgumentError, match="observed entries"):
        tiny_model.objective_terms((X, Y_nan, np.ones_like(mask)))
    flagged = make_tiny_model(missing_values="nan")
    explicit = make_tiny_model()
    np.testing.assert_allclose(
        flagged.objective_terms((X, Y_nan)).elbo().numpy(),
        explicit.objective_terms((X, Y_nan, mask)).elbo().numpy(),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="missing_values"):
        make_tiny_model(missing_values="zero")


def test_bad_masks_raise_clear_errors(tiny_model):
    X, Y, mask = _masked_tiny()
    with pytest.raises(ValueError, match="mask must have Y's shape"):
        tiny_model.objective_terms((X, Y, mask[:, :3]))
    with pytest.raises(ValueError, match="mask must have Y's shape"):
        tiny_model.posterior((X, Y, mask[:, :3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="only 0 .missing. and 1"):
        tiny_model.objective_terms((X, Y, 0.5 * mask))
    with pytest.raises(ValueError, match="different lengths"):
        tiny_model.posterior((X, Y, mask[:-1]))

    class NoMasks:
        supports_missing = False

    with pytest.raises(TypeError, match="does not take a mask"):
        evaluation_terms(NoMasks(), ELBO(), (X, Y, mask))


# ------------------------------------------------------------------ training with masks
def test_geco_constraint_uses_observed_entries_only(tiny_model):
    X, Y, mask = _masked_tiny()
    Y_nan = np.where(mask > 0, Y, np.nan)
    terms = tiny_model.objective_terms((X, Y_nan, mask))
    np.testing.assert_array_equal(terms.mask.numpy(), mask)
    geco = GECO(kappa_squared=0.01)
    decoded = terms.decoded.numpy()
    expected = np.sum(mask * np.nan_to_num(Y_nan - decoded) ** 2) / mask.sum() - 0.01
    np.testing.assert_allclose(geco.constraint(Y_nan, decoded, mask).numpy(), expected, rtol=1e-6)
    loss, logs = geco.loss(terms, tf.constant(Y_nan))
    np.testing.assert_allclose(logs["geco_constraint"].numpy(), expected, rtol=1e-6)
    assert np.isfinite(loss.numpy())


def test_train_keras_and_datasets_take_masked_batches():
    """NaN as missing (arrays or a dataset) trains exactly as the zero-filled arrays with their
    mask: the loop with GECO, the loop with validation data, and Keras ``fit``, each against an
    identical twin given the explicit arrays. The batches carry no NaN."""
    X, Y, mask = _masked_tiny(n=40)
    Y_nan = np.where(mask > 0, Y, np.nan).astype(np.float32)
    Y0 = np.where(mask > 0, Y, 0).astype(np.float32)

    def close(a, b):
        assert sorted(a) == sorted(b)
        for key in a:
            if isinstance(a[key], str) or a[key] is None:  # history["monitor"], ["stopped_epoch"]
                assert a[key] == b[key], key
            else:
                np.testing.assert_allclose(a[key], b[key], rtol=1e-5, err_msg=key)

    runs = []
    for Yx in (Y_nan, Y0):
        model = make_tiny_model()
        runs.append(train(model, (X, Yx, mask), epochs=2, batch_size=20, progress=False, objective=GECO(0.01)))
    close(*runs)
    assert runs[0]["geco_lambda"][-1] != 1.0  # the multiplier was updated from the observed entries
    # NaN -> mask once at the data boundary: the batches carry no NaN.
    dataset = make_dataset((X, Y_nan), batch_size=20, missing_values="nan")
    for Xb, Yb, Mb in dataset:
        assert np.all(np.isfinite(Yb.numpy())) and set(np.unique(Mb.numpy())) <= {0.0, 1.0}
    _, Y0_, M0 = masked_arrays(X, Y_nan, mask)
    np.testing.assert_array_equal(M0, mask)
    np.testing.assert_array_equal(Y0_, Y0)
    datasets = {  # fresh datasets: the shuffle order moves on with every pass
        "nan": lambda: make_dataset((X, Y_nan), batch_size=20, missing_values="nan"),
        "explicit": lambda: make_dataset((X, Y0, mask), batch_size=20),
    }
    runs = [
        train(make_tiny_model(), datasets[name](), epochs=1, progress=False, validation_data=val)
        for name, val in (("nan", (X, Y_nan, mask)), ("explicit", (X, Y0, mask)))
    ]
    close(*runs)
    assert "val_elbo" in runs[0]
    fits = []
    for name in ("nan", "explicit"):
        keras_model = make_tiny_model().as_training_model()
        keras_model.compile(optimizer="adam")
        fits.append(keras_model.fit(datasets[name](), epochs=1, verbose=0).history)
    close(*fits)
    # A frame mask [V, T] broadcasts over the pixels.
    _, _, frames = masked_arrays(X.reshape(4, 10, 1), Y.reshape(4, 10, -1), np.ones((4, 10)))
    assert frames.shape == (4, 10, Y.shape[-1])
    with pytest.raises(ValueError, match="only 0"):
        masked_arrays(X, Y, 2 * mask)


def test_posterior_from_a_dataset_of_masked_batches_equals_arrays(tiny_model):
    X, Y, mask = _masked_tiny()
    dataset = tf.data.Dataset.from_tensor_slices((X, Y, mask)).batch(7)
    from_arrays = tiny_model.posterior((X, Y, mask))
    from_dataset = tiny_model.posterior(dataset)
    # float32 encoder: its outputs may differ in the last bit between chunk sizes
    np.testing.assert_allclose(from_dataset.P.numpy(), from_arrays.P.numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(from_dataset.r.numpy(), from_arrays.r.numpy(), rtol=1e-6, atol=1e-8)
