"""Missing data in the video-family baselines (VAE, exact GP-VAE, sparse/Titsias, Hensman).

The same API as the SVGP-VAE (``tests/models/test_missing_data.py``): ``data = (X, Y, mask)``
with an entry mask or a frame mask ``[V, T]``, ``missing_values="nan"``,
``encoder_sees_mask``, masked reconstruction, frames with nothing observed dropping out of
the posterior, and ``impute``. References are numpy formulas or the same model on the
sequences without the missing frames.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

import gpflow_svgpvae as gv
from gpflow_svgpvae.models.gpvae import GPVAE
from gpflow_svgpvae.models.hensman_gpvae import HensmanGPVAE, whitened_gauss_kl
from gpflow_svgpvae.models.sparse_gpvae import SparseGPVAE
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.models.vae import VAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import GECO, train

V, T, K, L = 3, 7, 4, 2
NOISE = 0.1
TIMES = np.linspace(0.0, 6.0, T)
Z_INDUCING = np.linspace(0.0, 6.0, 4)[:, None]


# ----------------------------------------------------------------------------- helpers
class LinearSites(tf.Module):
    """A float64 encoder (row by row exact, whatever the batch layout); records its input width."""

    compute_dtype = tf.float64

    def __init__(self, K_in, L_out, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.A = tf.Variable(rng.normal(size=(K_in, L_out)) / np.sqrt(K_in))
        self.B = tf.Variable(rng.normal(size=(K_in, L_out)) / np.sqrt(K_in))
        self.input_widths = []

    def __call__(self, Y):
        Y = tf.cast(Y, tf.float64)
        self.input_widths.append(int(Y.shape[-1]))
        return Y @ self.A, tf.nn.softplus(Y @ self.B) + 0.05


class LinearDecoder(tf.Module):
    compute_dtype = tf.float64

    def __init__(self, L_in, K_out, seed):
        super().__init__()
        self.W = tf.Variable(np.random.default_rng(seed).normal(size=(L_in, K_out)))

    def __call__(self, Z):
        return tf.cast(Z, tf.float64) @ self.W


def _term(terms, key):
    """A term of ELBOTerms by name (the bound for "elbo")."""
    return terms.elbo() if key == "elbo" else getattr(terms, key)


def _kernel():
    return gpflow.kernels.Matern32(lengthscales=2.0)


def _build(name, encoder, decoder, kernel=None, num_data=T, **kwargs):
    kernel = kernel if kernel is not None else _kernel()
    likelihood = kwargs.pop("likelihood", gv.Gaussian(NOISE))
    if name == "vae":
        return VAE(encoder, decoder, likelihood, sequence_length=num_data, **kwargs)
    if name == "gpvae":
        return GPVAE(encoder, decoder, kernel, likelihood, sequence_length=num_data, **kwargs)
    if name == "sparse":
        return SparseGPVAE(encoder, decoder, kernel, Z_INDUCING, likelihood, sequence_length=num_data, **kwargs)
    if name == "hensman":
        q_mu = np.random.default_rng(4).normal(size=(1, len(Z_INDUCING), L))
        return HensmanGPVAE(
            encoder,
            decoder,
            kernel,
            Z_INDUCING,
            likelihood,
            sequence_length=num_data,
            num_latent_gps=L,
            q_mu=q_mu,
            **kwargs,
        )
    raise ValueError(name)


def _linear_model(name, num_data=T, **kwargs):
    return _build(name, LinearSites(K, L, 1), LinearDecoder(L, K, 2), num_data=num_data, **kwargs)


def _videos(seed=0, num_videos=V, num_frames=T):
    rng = np.random.default_rng(seed)
    X = np.broadcast_to(TIMES[None, :num_frames, None], (num_videos, num_frames, 1)).copy()
    Y = rng.normal(size=(num_videos, num_frames, K)).astype(np.float32)
    return X, Y


def _entry_mask(seed=1, fully_missing=((0, 2), (2, 0), (2, 5))):
    mask = (np.random.default_rng(seed).uniform(size=(V, T, K)) > 0.3).astype(np.float32)
    mask[mask.reshape(V * T, K).sum(-1).reshape(V, T) == 0, 0] = 1.0  # no accidental empty frames
    for v, t in fully_missing:
        mask[v, t] = 0.0
    return mask


def _fixed_codes(monkeypatch, *models):
    """Deterministic codes: the sampled z is the posterior mean."""
    for model in models:
        monkeypatch.setattr(model, "_sample_normal", lambda mean, var: mean[None])


def _numpy_exact(K_, y, v):
    """Exact GP regression with heteroscedastic noise (dense numpy solves)."""
    Kn = K_ + np.diag(v)
    mean = K_ @ np.linalg.solve(Kn, y)
    cov = K_ - K_ @ np.linalg.solve(Kn, K_)
    log_z = -0.5 * (len(y) * np.log(2 * np.pi) + np.linalg.slogdet(Kn)[1] + y @ np.linalg.solve(Kn, y))
    return mean, cov, log_z


def _matern32(a, b, lengthscale=2.0):
    r = np.abs(a[:, None] - b[None, :]) / lengthscale
    return (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)


def _expected_log_site(m, s, y, v):
    return -0.5 * (np.log(2 * np.pi * v) + ((m - y) ** 2 + s) / v)


MODELS = ["vae", "gpvae", "sparse", "hensman"]


# ------------------------------------------------------------- a mask of ones == today
def _terms_and_gradients(model, data):
    with tf.GradientTape() as tape:
        terms = model.objective_terms(data)
        terms_elbo = terms.elbo()
    grads = tape.gradient(terms_elbo, model.trainable_variables)
    return terms, [g.numpy() if g is not None else None for g in grads]


@pytest.mark.parametrize("how", ["mask_of_ones", "frame_mask_of_ones", "nan_flag_without_nan"])
@pytest.mark.parametrize("name", MODELS)
def test_fully_observed_data_give_todays_numbers(name, how):
    X, Y = _videos()
    tf.random.set_seed(0)
    encoder, decoder = mlp_encoder(K, L, hidden_units=(8,)), mlp_decoder(L, K, hidden_units=(8,))
    plain = _build(name, encoder, decoder, kernel=_kernel())
    masked = _build(
        name, encoder, decoder, kernel=_kernel(), missing_values="nan" if how == "nan_flag_without_nan" else None
    )
    data = {
        "mask_of_ones": (X, Y, np.ones_like(Y)),
        "frame_mask_of_ones": (X, Y, np.ones((V, T), bool)),
        "nan_flag_without_nan": (X, Y),
    }[how]
    terms, grads = _terms_and_gradients(plain, (X, Y))
    terms_m, grads_m = _terms_and_gradients(masked, data)
    for key in ("elbo", "reconstruction", "kl", "scale"):
        assert _term(terms, key).numpy() == _term(terms_m, key).numpy(), key
    np.testing.assert_array_equal(terms.decoded.numpy(), terms_m.decoded.numpy())
    np.testing.assert_array_equal(terms_m.mask.numpy(), np.ones_like(Y))  # the NaN flag: a mask of ones
    assert len(grads) == len(grads_m)
    for g, g_m in zip(grads, grads_m):
        assert (g is None) == (g_m is None)
        if g is not None:
            np.testing.assert_array_equal(g_m, g)
    # Predictions too.
    for a, b in zip(plain.predict_f(None, (X, Y)), masked.predict_f(None, data)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", ["gpvae", "sparse", "hensman"])
def test_weights_of_ones_are_exactly_no_weights(name, rng):
    model = _linear_model(name)
    X = tf.constant(_videos()[0])
    means = tf.constant(rng.normal(size=(V, T, L)))
    variances = tf.constant(rng.uniform(0.05, 2.0, size=(V, T, L)))
    a = model.latent_posterior(X, means, variances, num_data=T)
    b = model.latent_posterior(X, means, variances, num_data=T, weights=tf.ones([V, T], tf.float64))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


# ------------------------------------------------------ masked reconstruction (numpy)
@pytest.mark.parametrize("name", MODELS)
def test_masked_reconstruction_is_the_sum_over_observed_entries(name, monkeypatch):
    X, Y = _videos()
    mask = _entry_mask()
    Y_nan = np.where(mask > 0, Y, np.nan)  # the missing values are never read
    model = _linear_model(name)
    _fixed_codes(monkeypatch, model)
    terms = model.objective_terms((X, Y_nan, mask))
    mean, _ = model.predict_f(None, (X, Y_nan, mask))  # the same posterior (no num_data dependence)
    f = mean.numpy() @ model.decoder.W.numpy()  # [V, T, K]
    log_density = -0.5 * (np.log(2 * np.pi * NOISE) + (np.nan_to_num(Y_nan) - f) ** 2 / NOISE)
    expected = np.sum(np.where(mask > 0, log_density, 0.0))
    np.testing.assert_allclose(terms.reconstruction.numpy(), expected, rtol=1e-10)
    np.testing.assert_allclose(terms.decoded.numpy(), f, rtol=1e-10)
    np.testing.assert_array_equal(terms.mask.numpy(), mask)
    np.testing.assert_allclose(terms.elbo().numpy(), expected - terms.kl.numpy(), rtol=1e-12)
    # The encoder saw the zero-filled frames.
    means_ref = np.where(mask > 0, Y, 0.0).reshape(-1, K) @ model.encoder.A.numpy()
    if name == "vae":
        keep = mask.reshape(V * T, K).any(-1)
        np.testing.assert_allclose(mean.numpy().reshape(-1, L)[keep], means_ref[keep], rtol=1e-12)


# ---------------------------------------------- exact GP-VAE: fully missing frames
def test_exact_gpvae_drops_fully_missing_frames_numpy(rng):
    """Weight-0 frames: KL and posterior of the sequence without them; GP prediction at them."""
    X = np.broadcast_to(TIMES[None, :, None], (V, T, 1)).copy()
    means = rng.normal(size=(V, T, L))
    variances = rng.uniform(0.05, 2.0, size=(V, T, L))
    weights = np.ones((V, T))
    weights[0, 2] = weights[2, [0, 5, 6]] = 0.0
    means[weights == 0] = np.nan  # never used
    variances[weights == 0] = np.inf
    model = _linear_model("gpvae")
    post = model.latent_posterior(
        tf.constant(X), tf.constant(means), tf.constant(variances), num_data=T, weights=tf.constant(weights)
    )
    Xnew = np.linspace(-1.0, 7.0, 5)
    pred_mean, pred_var = model._predict_at(
        tf.constant(X),
        tf.constant(means),
        tf.constant(variances),
        tf.constant(np.broadcast_to(Xnew[None, :, None], (V, 5, 1)).copy()),
        weights=tf.constant(weights),
    )
    for v in range(V):
        obs, M = weights[v] > 0, weights[v] == 0
        kl_ref = 0.0
        for j in range(L):
            K_OO = _matern32(TIMES[obs], TIMES[obs])
            mean_O, cov_O, log_z = _numpy_exact(K_OO, means[v, obs, j], variances[v, obs, j])
            kl_ref += _expected_log_site(mean_O, np.diag(cov_O), means[v, obs, j], variances[v, obs, j]).sum() - log_z
            np.testing.assert_allclose(post.mean.numpy()[v, obs, j], mean_O, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(post.variance.numpy()[v, obs, j], np.diag(cov_O), rtol=1e-9, atol=1e-12)
            Kn = K_OO + np.diag(variances[v, obs, j])
            for ts, m_got, s_got in (
                (TIMES[M], post.mean.numpy()[v, M, j], post.variance.numpy()[v, M, j]),
                (Xnew, pred_mean.numpy()[v, :, j], pred_var.numpy()[v, :, j]),
            ):
                K_sO = _matern32(ts, TIMES[obs])
                np.testing.assert_allclose(m_got, K_sO @ np.linalg.solve(Kn, means[v, obs, j]), rtol=1e-9, atol=1e-12)
                s_ref = 1.0 - np.einsum("ij,ji->i", K_sO, np.linalg.solve(Kn, K_sO.T))
                np.testing.assert_allclose(s_got, s_ref, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(post.kl.numpy()[v], kl_ref, rtol=1e-10)
    assert np.all(np.isfinite(post.mean.numpy())) and np.all(post.variance.numpy() > 0)


def test_exact_gpvae_missing_frame_equals_the_sequence_without_it(monkeypatch):
    """End to end: a video with a fully missing frame = the same video without the frame."""
    X, Y = _videos()
    mask = _entry_mask(fully_missing=[(1, 4)])
    keep = np.arange(T) != 4
    model = _linear_model("gpvae")
    short = GPVAE(model.encoder, model.decoder, model.kernel, model.likelihood, sequence_length=T - 1)
    _fixed_codes(monkeypatch, model, short)
    full_kl = model.log_marginal_likelihood((X[1:2], Y[1:2], mask[1:2])).numpy()
    short_kl = short.log_marginal_likelihood((X[1:2, keep], Y[1:2, keep], mask[1:2, keep])).numpy()
    np.testing.assert_allclose(full_kl, short_kl, rtol=1e-12)
    data, short_data = (X[1:2], Y[1:2], mask[1:2]), (X[1:2, keep], Y[1:2, keep], mask[1:2, keep])
    terms, short_terms = model.objective_terms(data), short.objective_terms(short_data)
    np.testing.assert_allclose(terms.kl.numpy(), short_terms.kl.numpy(), rtol=1e-10)
    # Reconstruction: the missing frame has no observed entries, so it adds nothing.
    np.testing.assert_allclose(terms.reconstruction.numpy(), short_terms.reconstruction.numpy(), rtol=1e-10)
    mean, var = model.predict_f(None, data)
    mean_s, var_s = short.predict_f(None, short_data)
    np.testing.assert_allclose(mean.numpy()[:, keep], mean_s.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var.numpy()[:, keep], var_s.numpy(), rtol=1e-9)
    # At the missing frame: the GP prediction from the others.
    m4, v4 = short.predict_f(X[1:2, 4:5], short_data)
    np.testing.assert_allclose(mean.numpy()[:, 4], m4.numpy()[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var.numpy()[:, 4], v4.numpy()[:, 0], rtol=1e-9)


def _padded_problem(entry_mask, name="gpvae"):
    rng = np.random.default_rng(11)
    lengths, Tp = [5, 8, 3], 8
    encoder, decoder, kernel = LinearSites(K, L, 1), LinearDecoder(L, K, 2), _kernel()
    model = _build(name, encoder, decoder, kernel=kernel, num_data=Tp)
    sequences = []
    for n in lengths:
        X = np.sort(rng.uniform(0, 8, size=(n, 1)), axis=0)[None]
        Y = rng.normal(size=(1, n, K))
        mask = (rng.uniform(size=(1, n, K)) > 0.3).astype(np.float64) if entry_mask else np.ones((1, n, K))
        sequences.append((X, Y, mask))
    Vp = len(lengths)
    Xp, Yp = np.full((Vp, Tp, 1), 3.0), np.full((Vp, Tp, K), np.nan)  # padding: any inputs, NaN values
    Mp = np.zeros((Vp, Tp, K)) if entry_mask else np.zeros((Vp, Tp), bool)
    for v, (X, Y, mask) in enumerate(sequences):
        n = X.shape[1]
        Xp[v, :n], Yp[v, :n] = X[0], np.where(mask[0] > 0, Y[0], np.nan)
        Mp[v, :n] = mask[0] if entry_mask else True
    singles = [_build(name, encoder, decoder, kernel=kernel, num_data=X.shape[1]) for X, _, _ in sequences]
    return model, (Xp, Yp, Mp), singles, sequences


@pytest.mark.parametrize("name", ["gpvae", "sparse"])
@pytest.mark.parametrize("entry_mask", [True, False], ids=["entry_mask", "frame_mask"])
def test_padded_sequences_equal_one_by_one(entry_mask, name, monkeypatch):
    model, padded, singles, sequences = _padded_problem(entry_mask, name)
    _fixed_codes(monkeypatch, model, *singles)
    with tf.GradientTape() as tape:
        terms = model.objective_terms(padded)
        terms_elbo = terms.elbo()
    grad = tape.gradient(terms_elbo, model.kernel.trainable_variables)
    elbo_ref, kl_ref, grad_ref = 0.0, 0.0, [0.0 for _ in grad]
    mean, var = model.predict_f(None, padded)
    Xq = np.broadcast_to(np.linspace(0.0, 8.0, 6)[None, :, None], (3, 6, 1))
    mean_q, var_q = model.predict_f(Xq, padded)
    for v, (single, (X, Y, mask)) in enumerate(zip(singles, sequences)):
        n = X.shape[1]
        with tf.GradientTape() as tape:
            single_terms = single.objective_terms((X, Y, mask))
            single_terms_elbo = single_terms.elbo()
        elbo_ref += single_terms.elbo().numpy()
        kl_ref += single_terms.kl.numpy()
        grads = tape.gradient(single_terms_elbo, single.kernel.trainable_variables)
        grad_ref = [a + b.numpy() for a, b in zip(grad_ref, grads)]
        m_ref, v_ref = single.predict_f(None, (X, Y, mask))
        np.testing.assert_allclose(mean.numpy()[v, :n], m_ref.numpy()[0], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(var.numpy()[v, :n], v_ref.numpy()[0], rtol=1e-8)
        mq_ref, vq_ref = single.predict_f(Xq[v : v + 1], (X, Y, mask))
        np.testing.assert_allclose(mean_q.numpy()[v], mq_ref.numpy()[0], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(var_q.numpy()[v], vq_ref.numpy()[0], rtol=1e-8)
    np.testing.assert_allclose(terms.elbo().numpy(), elbo_ref, rtol=1e-9)
    np.testing.assert_allclose(terms.kl.numpy(), kl_ref, rtol=1e-9)
    for g, g_ref in zip(grad, grad_ref):
        np.testing.assert_allclose(g.numpy(), g_ref, rtol=1e-8)


# ---------------------------------------------- sparse: weighted Titsias == SVGP-VAE
def test_sparse_weighted_titsias_equals_svgpvae_and_the_shorter_video(rng):
    X = np.broadcast_to(TIMES[None, :, None], (V, T, 1)).copy()
    means = rng.normal(size=(V, T, L))
    variances = rng.uniform(0.05, 2.0, size=(V, T, L))
    weights = np.ones((V, T))
    weights[1, [1, 3]] = 0.0
    titsias = _linear_model("sparse")
    svgp = SVGPVAE(titsias.encoder, titsias.decoder, titsias.kernel, Z_INDUCING, sequence_length=T)
    args = (tf.constant(X), tf.constant(means), tf.constant(variances))
    a = titsias.latent_posterior(*args, num_data=T, weights=tf.constant(weights))
    b = svgp.latent_posterior(*args, num_data=T, weights=tf.constant(weights))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-9, atol=1e-11)
    keep = weights[1] > 0
    short = SparseGPVAE(titsias.encoder, titsias.decoder, titsias.kernel, Z_INDUCING, sequence_length=int(keep.sum()))
    c = short.latent_posterior(
        tf.constant(X[1:2, keep]),
        tf.constant(means[1:2, keep]),
        tf.constant(variances[1:2, keep]),
        num_data=int(keep.sum()),
    )
    np.testing.assert_allclose(a.kl.numpy()[1], c.kl.numpy()[0], rtol=1e-10)
    np.testing.assert_allclose(a.mean.numpy()[1, keep], c.mean.numpy()[0], rtol=1e-9, atol=1e-12)
    bound = titsias._titsias(*args, weights=tf.constant(weights))[-1].numpy()
    np.testing.assert_allclose(
        bound[1],
        short._titsias(tf.constant(X[1:2, keep]), tf.constant(means[1:2, keep]), tf.constant(variances[1:2, keep]))[
            -1
        ].numpy()[0],
        rtol=1e-11,
    )


def test_sparse_predictions_equal_svgpvae_with_masks():
    """Titsias' optimal q(u) = the SVGP-VAE's amortised q(u) at b = N, also with missing frames."""
    X, Y = _videos()
    mask = _entry_mask()
    data = (X, np.where(mask > 0, Y, np.nan), mask)
    titsias = _linear_model("sparse")
    svgp = SVGPVAE(titsias.encoder, titsias.decoder, titsias.kernel, Z_INDUCING, gv.Gaussian(NOISE), sequence_length=T)
    Xq = np.linspace(-1.0, 8.0, 5)[:, None]
    for query in (None, Xq):
        for a, b in zip(titsias.predict_f(query, data), svgp.predict_f(query, data)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(titsias.impute(data).numpy(), svgp.impute(data).numpy(), rtol=1e-6, atol=1e-6)


def test_hensman_terms_still_cancel_with_missing_frames():
    X, Y = _videos()
    mask = _entry_mask()
    model = _linear_model("hensman")
    with tf.GradientTape() as tape:
        terms = model.objective_terms((X, Y, mask))
        terms_elbo = terms.elbo()
    grads = tape.gradient(terms_elbo, model.encoder.trainable_variables)
    kl_u = whitened_gauss_kl(model.q_mu, model.q_sqrt).numpy().sum()
    assert terms.kl.numpy() == pytest.approx(V * kl_u, rel=1e-12)
    assert all(np.all(g.numpy() == 0.0) for g in grads)


# --------------------------------------------------------------------- VAE: the prior
def test_vae_fully_missing_frame_gets_the_prior_and_zero_kl():
    X, Y = _videos()
    mask = _entry_mask()
    model = _linear_model("vae")
    data = (X, np.where(mask > 0, Y, np.nan), mask)
    mean, var = (t.numpy() for t in model.predict_f(None, data))
    empty = ~mask.any(-1)  # [V, T]
    assert empty.sum() == 3
    np.testing.assert_array_equal(mean[empty], 0.0)
    np.testing.assert_array_equal(var[empty], 1.0)
    Y0 = np.where(mask > 0, Y, 0.0).reshape(-1, K)
    enc_mean = Y0 @ model.encoder.A.numpy()
    enc_var = np.log1p(np.exp(Y0 @ model.encoder.B.numpy())) + 0.05
    seen = ~empty.reshape(-1)
    np.testing.assert_allclose(mean.reshape(-1, L)[seen], enc_mean[seen], rtol=1e-12)
    np.testing.assert_allclose(var.reshape(-1, L)[seen], enc_var[seen], rtol=1e-12)
    kl_ref = 0.5 * np.sum((enc_var + enc_mean**2 - 1 - np.log(enc_var))[seen])
    np.testing.assert_allclose(model.objective_terms(data).kl.numpy(), kl_ref, rtol=1e-12)


# -------------------------------------------------------------------------- impute
@pytest.mark.parametrize("name", MODELS)
def test_impute_keeps_observed_entries_and_fills_the_decoded_mean(name):
    X, Y = _videos()
    mask = _entry_mask()
    Y_nan = np.where(mask > 0, Y, np.nan).astype(np.float32)
    model = _linear_model(name)
    imputed, samples = model.impute((X, Y_nan, mask), num_samples=4, seed=3)
    imputed, samples = imputed.numpy(), samples.numpy()
    assert imputed.shape == Y.shape and samples.shape == (4,) + Y.shape
    assert imputed.dtype == np.float32 and samples.dtype == np.float32
    observed = mask > 0
    np.testing.assert_array_equal(imputed[observed], Y[observed])
    for s in samples:
        np.testing.assert_array_equal(s[observed], Y[observed])
    mean, _ = model.predict_f(None, (X, Y_nan, mask))
    decoded = mean.numpy() @ model.decoder.W.numpy()  # the Gaussian decoder's mean at the latent mean
    np.testing.assert_allclose(imputed[~observed], decoded[~observed], rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite(samples)) and np.std(samples[:, ~observed], axis=0).mean() > 0
    # Stateless draws: the same seed gives the same samples, another seed others.
    np.testing.assert_array_equal(model.impute((X, Y_nan, mask), num_samples=4, seed=3)[1].numpy(), samples)
    assert not np.allclose(model.impute((X, Y_nan, mask), num_samples=4, seed=4)[1].numpy(), samples)
    # The conditioned model offers the same interface (num_samples, seed).
    bound = model.posterior((X, Y_nan, mask)).predict_y(None, num_samples=4, seed=3)
    direct = model.predict_y(None, (X, Y_nan, mask), num_samples=4, seed=3)
    for a, b in zip(bound, direct):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # NaN as missing via the model flag: the same imputation.
    flagged = _build(name, model.encoder, model.decoder, kernel=getattr(model, "kernel", None), missing_values="nan")
    if name == "hensman":
        flagged.q_mu.assign(model.q_mu.numpy())
    np.testing.assert_allclose(flagged.impute((X, Y_nan)).numpy(), imputed, rtol=1e-12)


def test_impute_of_fully_observed_data_returns_the_data():
    X, Y = _videos()
    model = _linear_model("gpvae")
    np.testing.assert_array_equal(model.impute((X, Y)).numpy(), Y)


# ------------------------------------------------------- encoder sees mask; NaN flag
@pytest.mark.parametrize("name", MODELS)
def test_encoder_sees_mask_doubles_its_input_width(name):
    X, Y = _videos()
    mask = _entry_mask()
    encoder = LinearSites(2 * K, L, 1)
    model = _build(name, encoder, LinearDecoder(L, K, 2), encoder_sees_mask=True)
    assert model.encoder_sees_mask and not _linear_model(name).encoder_sees_mask
    inputs = model.encoder_inputs(tf.constant(np.where(mask > 0, Y, 0)), tf.constant(mask)).numpy()
    np.testing.assert_array_equal(inputs, np.concatenate([np.where(mask > 0, Y, 0), mask], -1))
    assert np.isfinite(model.objective_terms((X, Y, mask)).elbo().numpy())
    assert np.isfinite(model.objective_terms((X, Y)).elbo().numpy())  # a mask of ones
    assert set(encoder.input_widths) == {2 * K}
    # The sites come from [Y zero-filled, mask].
    means, _ = model.encode_videos(tf.constant(np.where(mask > 0, Y, 0)), mask=tf.constant(mask))
    ref = np.concatenate([np.where(mask > 0, Y, 0), mask], -1).reshape(-1, 2 * K) @ encoder.A.numpy()
    np.testing.assert_allclose(means.numpy().reshape(-1, L), ref, rtol=1e-12)
    with pytest.raises(Exception):  # an encoder of width K does not accept 2K
        _build(
            name, mlp_encoder(K, L, hidden_units=(4,)), LinearDecoder(L, K, 2), encoder_sees_mask=True
        ).objective_terms((X, Y, mask))


@pytest.mark.parametrize("name", MODELS)
def test_nan_flag_equals_an_explicit_mask(name):
    X, Y = _videos()
    mask = _entry_mask()
    Y_nan = np.where(mask > 0, Y, np.nan)
    explicit = _linear_model(name)
    flagged = _build(
        name, explicit.encoder, explicit.decoder, kernel=getattr(explicit, "kernel", None), missing_values="nan"
    )
    if name == "hensman":
        flagged.q_mu.assign(explicit.q_mu.numpy())
    a, b = explicit.objective_terms((X, Y_nan, mask)), flagged.objective_terms((X, Y_nan))
    for key in ("elbo", "kl", "reconstruction"):
        assert _term(a, key).numpy() == _term(b, key).numpy(), key
    np.testing.assert_array_equal(a.mask.numpy(), b.mask.numpy())
    for x, y in zip(explicit.predict_f(None, (X, Y_nan, mask)), flagged.predict_f(None, (X, Y_nan))):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN or inf"):
        explicit.objective_terms((X, Y_nan))
    with pytest.raises(ValueError, match="missing_values"):
        _build(name, explicit.encoder, explicit.decoder, missing_values="zero")
    with pytest.raises(ValueError, match="mask must have Y's shape"):
        explicit.objective_terms((X, Y, mask[..., :2]))


# ------------------------------------------------------------------ training with masks
def test_training_and_geco_take_masked_video_batches():
    X, Y = _videos(num_videos=4)
    mask = (np.random.default_rng(2).uniform(size=Y.shape) > 0.3).astype(np.float32)
    mask[1, 3:] = 0.0  # padded tail
    Y_nan = np.where(mask > 0, Y, np.nan).astype(np.float32)
    tf.random.set_seed(0)
    model = GPVAE(
        mlp_encoder(K, L, hidden_units=(8,)),
        mlp_decoder(L, K, hidden_units=(8,)),
        _kernel(),
        gv.Gaussian(NOISE),
        sequence_length=T,
    )
    terms = model.objective_terms((X, Y_nan, mask))
    geco = GECO(kappa_squared=0.01)
    decoded = terms.decoded.numpy()
    expected = np.sum(mask * np.nan_to_num(Y_nan - decoded) ** 2) / mask.sum() - 0.01
    _, logs = geco.loss(terms, tf.constant(Y_nan))
    np.testing.assert_allclose(logs["geco_constraint"].numpy(), expected, rtol=1e-5)
    history = train(model, (X, Y_nan, mask), epochs=2, batch_size=2, progress=False)
    assert np.all(np.isfinite(history["elbo"]))


# ------------------------------------------------ test sequences longer than training's
@pytest.mark.parametrize("name", MODELS)
def test_impute_sequences_longer_than_the_training_length(name):
    """``sequence_length`` sets the training scale only: a model built for T-frame training
    sequences imputes longer test sequences exactly as a model without it does, and the VAE
    (frames independent) imputes the first T frames as it imputes the T-frame sequences."""
    rng = np.random.default_rng(5)
    longer = T + 5
    X = np.broadcast_to(np.linspace(0.0, 11.0, longer)[None, :, None], (V, longer, 1)).copy()
    Y = rng.normal(size=(V, longer, K)).astype(np.float32)
    mask = (rng.uniform(size=Y.shape) > 0.3).astype(np.float32)
    Y_nan = np.where(mask > 0, Y, np.nan).astype(np.float32)
    model = _linear_model(name)  # sequence_length = T
    unscaled = _build(name, model.encoder, model.decoder, kernel=getattr(model, "kernel", None), num_data=None)
    if name == "hensman":
        unscaled.q_mu.assign(model.q_mu.numpy())
    imputed = model.impute((X, Y_nan, mask)).numpy()
    assert imputed.shape == Y.shape
    np.testing.assert_array_equal(imputed[mask > 0], Y[mask > 0])
    np.testing.assert_allclose(imputed, unscaled.impute((X, Y_nan, mask)).numpy(), rtol=1e-12)
    if name == "vae":
        short = model.impute((X[:, :T], Y_nan[:, :T], mask[:, :T])).numpy()
        np.testing.assert_allclose(imputed[:, :T], short, rtol=1e-6)
