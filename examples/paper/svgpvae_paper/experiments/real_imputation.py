r"""Imputation of real multivariate time series: classical baselines, the VAE family and PyPOTS.

``svgpvae real_imputation [--quick] [--datasets ...] [--seeds ...] [--out DIR]`` runs, on each
dataset of :mod:`svgpvae_paper.datasets.wheel_series` (real recordings shipped inside the
``aeon`` wheel; nothing is downloaded) and each way of hiding entries, for every seed:

* **data**: each channel standardised with the mean and standard deviation of all its training
  entries (one fixed transform per dataset, so every score is in the same standardised units);
* **hiding** (the same in the training and the test split, from the seed):

  - ``mcar``: every entry hidden independently with probability 0.5 (:func:`hide_mcar`);
  - ``outage``: sensor outages (:func:`hide_outages`): in every sequence each channel, with
    probability 0.5, loses one contiguous stretch of a quarter of the sequence's frames, at a
    uniformly drawn start; about 12.5 % of the entries (the measured fraction is recorded);

* **methods**, all scored on the same hidden test entries (:func:`scores`): MSE, the mean
  Gaussian negative log predictive density (NLL, where a method gives a variance) and the
  fraction of hidden entries inside the central 90 % predictive band (mean :math:`\pm 1.645`
  standard deviations):

  - ``mean``: the channel's mean over the observed training entries (variance: their variance);
  - ``interp``: linear interpolation in time within each sequence and channel, constant beyond
    the first and last observed value (no variance);
  - ``gp``: per-channel GP regression (:class:`ChannelGP`): one GPflow squared-exponential GP per
    sequence and channel, its variance, lengthscale and noise per channel fit by maximising the
    marginal likelihood summed over the training sequences, then held for the test sequences;
  - ``vae``, ``gpvae``, ``svgpvae``: the masked VAE, the exact GP-VAE and the SVGP-VAE of
    ``gpflow_svgpvae`` with the same MLP networks (:func:`build_model`), trained on the training
    split with its hidden entries as NaN, then conditioned on each test sequence's observed
    entries (``model.impute``); predictive variance = variance of the decoder means over 50
    latent samples + the learned noise variance;
  - ``pypots``: PyPOTS' ``GPVAE`` with the same sizes, validation entries and patience
    (optional: skipped with a message when PyPOTS is not installed). It imputes with the
    decoder at the encoder's mean only, so it has no predictive variance (no NLL, no coverage).

The learned models use one recipe for every dataset (:data:`RECIPE`): nothing is chosen per
dataset. Each holds out 10 % of its observed training entries
(:func:`gpflow_svgpvae.imputation.hold_out_entries`), trains for at most ``epochs`` epochs,
validates every ``validate_every`` epochs, stops after ``patience`` validations without a better
validation MSE and keeps the weights of the best one. The SVGP-VAE gets one inducing time per
frame (up to 100; ``num_inducing=0``): the per-channel GPs find lengthscales of about one
frame, which a few inducing times spread over the sequence cannot follow. The kernels start at
a lengthscale of two frames. ``metrics.json`` (configuration, command, commit, CPU),
``table.md`` and one figure of test sequences per dataset go to ``--out`` (default
``docs/results/real_imputation``). Each finished (dataset, scenario, seed, method) is cached
under ``<out>/runs`` so an interrupted run resumes.
"""

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .common import mean_sd, pyplot, read_json, run_key, write_json

__all__ = [
    "METHODS",
    "SCENARIOS",
    "RECIPE",
    "QUICK",
    "Config",
    "standardise",
    "hide_mcar",
    "hide_outages",
    "hide",
    "channel_mean_fill",
    "linear_interpolation",
    "scores",
    "ChannelGP",
    "build_model",
    "run",
    "main",
]

METHODS = ("mean", "interp", "gp", "vae", "gpvae", "svgpvae", "pypots")
SCENARIOS = ("mcar", "outage")
LEARNED = ("vae", "gpvae", "svgpvae")

#: 1.645: the 95 % quantile of the standard normal; mean +- this many sds is the central 90 % band.
Z90 = 1.6448536269514722

#: The one recipe of the VAE-family models, for every dataset.
RECIPE = dict(
    num_latent=8,
    hidden=(64, 64),
    learning_rate=3e-3,
    epochs=300,
    validate_every=5,
    patience=4,
    batch_size=5,
    num_inducing=0,
    lengthscale_frames=2.0,
    noise_variance=0.1,
    num_samples=50,
    encoder_dropout=0.4,
    lengthscale_range=(1.0, 10.0),
)

#: One library default changed at a time for the defaults table (``--variant``): the natural-parameter
#: site head, KL warm-up over the first 20 % of the epoch budget, the kernel held for that long, the GP
#: part at 10 x the networks' learning rate. (The decoder's output bias from the data is not a choice
#: here: every channel is standardised, so the observed mean the bias would start at is 0.)
VARIANTS = ("natural_sites", "kl_warmup", "kernel_hold", "gp_lr_10x")

#: The SVGP-VAE's candidates for ``select``: the library's recommended
#: :data:`gpflow_svgpvae.training.selection.IMPUTATION_GRID` (the imputation notebook's).
GRID = "library"

#: ``--quick``: one seed, few epochs, small networks (a smoke run of every piece).
QUICK = dict(
    seeds=(0,),
    epochs=15,
    patience=2,
    hidden=(32, 32),
    num_latent=4,
    num_samples=10,
    pypots_epochs=5,
    num_inducing=10,
    grid=tuple(dict(num_latent_gps=L, width=32, learning_rate=3e-3) for L in (2, 4)),
)


@dataclasses.dataclass
class Config:
    datasets: Tuple[str, ...] = ("basic_motions", "daphnet")
    scenarios: Tuple[str, ...] = SCENARIOS
    seeds: Tuple[int, ...] = (0, 1, 2)
    methods: Tuple[str, ...] = METHODS
    mcar_fraction: float = 0.5
    outage_probability: float = 0.5
    outage_fraction: float = 0.25
    num_latent: int = RECIPE["num_latent"]
    hidden: Tuple[int, ...] = RECIPE["hidden"]
    learning_rate: float = RECIPE["learning_rate"]
    epochs: int = RECIPE["epochs"]
    batch_size: int = RECIPE["batch_size"]
    num_inducing: int = RECIPE["num_inducing"]
    lengthscale_frames: float = RECIPE["lengthscale_frames"]
    noise_variance: float = RECIPE["noise_variance"]
    num_samples: int = RECIPE["num_samples"]
    encoder_dropout: float = RECIPE["encoder_dropout"]
    # (shortest, longest) initial lengthscales in frames of one Matern-5/2 kernel per latent
    # channel (kernels.log_spaced_lengthscales); None: one kernel at lengthscale_frames.
    lengthscale_range: Optional[Tuple[float, float]] = RECIPE["lengthscale_range"]
    # The SVGP-VAE's candidates for gpflow_svgpvae.training.select (dicts of num_latent_gps, width,
    # learning_rate; "library": the library's IMPUTATION_GRID); empty: the recipe's single setting,
    # as the other learned models.
    grid: Union[str, Tuple[dict, ...]] = GRID
    # one of VARIANTS: a library default changed for the learned models ("" : none)
    variant: str = ""

    def candidates(self) -> List[dict]:
        """The SVGP-VAE's candidates for ``select`` (empty: no selection)."""
        if self.grid == "library":
            from gpflow_svgpvae.training.selection import IMPUTATION_GRID

            return [dict(c) for c in IMPUTATION_GRID]
        return [dict(c) for c in self.grid]

    validation_fraction: float = 0.1
    validate_every: int = RECIPE["validate_every"]
    patience: int = RECIPE["patience"]
    pypots_epochs: int = 150  # its finished runs were made at this cap (early stopping ends sooner)
    threads: int = 0
    cached_only: bool = False
    quick: bool = False
    out: str = "docs/results/real_imputation"

    def __post_init__(self):
        for name, allowed in (("scenarios", SCENARIOS), ("methods", METHODS)):
            bad = [v for v in getattr(self, name) if v not in allowed]
            if bad:
                raise ValueError(f"--{name}: unknown {bad}; choose from {', '.join(allowed)}")
        if not 0 < self.mcar_fraction < 1:
            raise ValueError(f"mcar_fraction must be in (0, 1); got {self.mcar_fraction}")
        if not 0 < self.outage_fraction < 1 or not 0 < self.outage_probability <= 1:
            raise ValueError("outage_fraction must be in (0, 1) and outage_probability in (0, 1]")


# ---------------------------------------------------------------------------------------------
# data, hiding and scores (numpy)


def standardise(train_Y, test_Y, train_frames, test_frames):
    """Each channel minus its mean, over its standard deviation, both from all real training entries.

    :returns: ``(train, test, (mean [D], std [D]))``; padding entries are set to 0.
    """
    real = train_frames > 0
    values = train_Y[real]  # [n, D]
    mean, std = values.mean(0), values.std(0)
    std = np.where(std > 0, std, 1.0)
    train = np.where(real[..., None], (train_Y - mean) / std, 0.0)
    test = np.where(test_frames[..., None] > 0, (test_Y - mean) / std, 0.0)
    return train, test, (mean, std)


def hide_mcar(frames, num_channels: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Hidden entries ``[V, T, D]``: each real entry independently with probability ``fraction``."""
    hidden = rng.uniform(size=frames.shape + (num_channels,)) < fraction
    return hidden & (frames[..., None] > 0)


def hide_outages(
    frames, num_channels: int, probability: float, fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """Sensor outages ``[V, T, D]``: in every sequence of ``n`` real frames, each channel with
    probability ``probability`` loses the frames ``start .. start + w - 1``, ``w = max(1, round(fraction n))``,
    ``start`` uniform on ``0 .. n - w``."""
    V, T = frames.shape
    hidden = np.zeros((V, T, num_channels), bool)
    lengths = (frames > 0).sum(1)
    for v in range(V):
        n = int(lengths[v])
        width = max(1, int(round(fraction * n)))
        out = rng.uniform(size=num_channels) < probability
        starts = rng.integers(0, n - width + 1, size=num_channels)
        for d in np.where(out)[0]:
            hidden[v, starts[d] : starts[d] + width, d] = True
    return hidden


def hide(config: Config, scenario: str, frames, num_channels: int, rng: np.random.Generator) -> np.ndarray:
    if scenario == "mcar":
        return hide_mcar(frames, num_channels, config.mcar_fraction, rng)
    return hide_outages(frames, num_channels, config.outage_probability, config.outage_fraction, rng)


def channel_mean_fill(train_Y, train_observed, test_Y, test_observed):
    """Fill with each channel's mean over the observed training entries; variance: their variance.

    :returns: ``(mean [V, T, D], variance [V, T, D])`` for the test split (observed entries kept,
        variance 0 there).
    """
    D = train_Y.shape[-1]
    values = [train_Y[..., d][train_observed[..., d]] for d in range(D)]
    mu = np.array([v.mean() for v in values])
    var = np.array([v.var() for v in values])
    mean = np.where(test_observed, test_Y, mu)
    return mean, np.where(test_observed, 0.0, np.broadcast_to(var, test_Y.shape))


def linear_interpolation(X, Y, observed, frames, fallback) -> np.ndarray:
    """Linear interpolation in time within each sequence and channel (``np.interp``: constant beyond
    the first and last observed value); a channel with nothing observed in a sequence gets
    ``fallback[d]``. Observed entries are kept."""
    filled = np.where(observed, Y, np.asarray(fallback, dtype=float))
    lengths = (frames > 0).sum(1)
    for v in range(Y.shape[0]):
        n = int(lengths[v])
        t = X[v, :n, 0]
        for d in range(Y.shape[-1]):
            seen = observed[v, :n, d]
            if seen.any():
                filled[v, :n, d] = np.interp(t, t[seen], Y[v, :n, d][seen])
    return filled


def scores(truth, mean, where, variance=None) -> Dict[str, Optional[float]]:
    r"""MSE, Gaussian NLL and 90 % band coverage over the entries ``where``.

    :math:`\mathrm{NLL} = \frac{1}{n}\sum \tfrac12\log(2\pi\sigma^2) + \frac{(y - \mu)^2}{2\sigma^2}`,
    coverage :math:`= \frac{1}{n}\sum [\,|y - \mu| \le 1.645\,\sigma\,]`; both ``None`` without a variance.
    """
    err = (truth - mean)[where]
    out = {"mse": float(np.mean(err**2)), "nll": None, "coverage90": None, "num_entries": int(err.size)}
    if variance is not None:
        var = np.maximum(variance[where], 1e-12)
        out["nll"] = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * err**2 / var))
        out["coverage90"] = float(np.mean(np.abs(err) <= Z90 * np.sqrt(var)))
    return out


# ---------------------------------------------------------------------------------------------
# per-channel GP regression (GPflow)


class ChannelGP:
    r"""One GP regression per sequence and channel, :math:`y_{vtd} = f_{vd}(t) + \epsilon`,
    :math:`f_{vd} \sim \mathcal{GP}(0, k_d)`, :math:`k_d(t, t') = s_d \exp(-(t - t')^2 / 2\ell_d^2)`,
    :math:`\epsilon \sim \mathcal N(0, \sigma_d^2)`: a variance, lengthscale and noise per channel
    ``d``, shared by all sequences (GPflow parameters with positive transforms, fit with
    ``gpflow.optimizers.Scipy``).

    The sequences' observed entries are handled batched with a mask: with flags
    :math:`w \in \{0,1\}^T` (1 = observed), :math:`K_n = (w w^\top)\odot K + \mathrm{diag}(w\sigma^2 + 1 - w)`
    and targets :math:`w \odot y`; the Cholesky factor of :math:`K_n` is that of :math:`K_{OO} + \sigma^2 I`
    with unit rows at the unobserved frames, so
    :math:`\log p(y_O) = -\tfrac{|O|}{2}\log 2\pi - \log|L_n| - \tfrac12\|L_n^{-1}(w\odot y)\|^2`,
    and at every frame the prediction is :math:`\mu = K_{\cdot O}K_n^{-1}(w\odot y)`,
    :math:`\mathrm{var} = s - \mathrm{diag}(K_{\cdot O}K_n^{-1}K_{O\cdot}) + \sigma^2`.
    """

    def __init__(self, lengthscale: float = 5.0, variance: float = 1.0, noise_variance: float = 0.1):
        self.init = (lengthscale, variance, noise_variance)
        self.lengthscales = self.variances = self.noise_variances = None
        self.optimisation: dict = {}

    def _parameters(self, num_channels: int):
        import gpflow

        lengthscale, variance, noise = self.init
        positive = gpflow.utilities.positive
        return (
            gpflow.Parameter(np.full(num_channels, lengthscale), transform=positive()),
            gpflow.Parameter(np.full(num_channels, variance), transform=positive()),
            gpflow.Parameter(np.full(num_channels, noise), transform=positive(lower=1e-6)),
        )

    @staticmethod
    def _factors(lengthscales, variances, noises, X, Y, W):
        """``K [D, V, T, T]``, ``L_n`` and ``alpha = L_n^{-1}(w y) [D, V, T, 1]``; ``Y, W [V, T, D]``."""
        import tensorflow as tf

        t = tf.convert_to_tensor(X[..., 0], tf.float64)  # [V, T]
        r2 = tf.square(t[:, :, None] - t[:, None, :])  # [V, T, T]
        ell = tf.reshape(lengthscales, [-1, 1, 1, 1])
        K = tf.reshape(variances, [-1, 1, 1, 1]) * tf.exp(-0.5 * r2[None] / tf.square(ell))
        w = tf.transpose(tf.convert_to_tensor(W, tf.float64), [2, 0, 1])  # [D, V, T]
        y = tf.transpose(tf.convert_to_tensor(Y, tf.float64), [2, 0, 1]) * w
        Kn = K * w[..., :, None] * w[..., None, :] + tf.linalg.diag(w * noises[:, None, None] + (1.0 - w))
        Ln = tf.linalg.cholesky(Kn)
        alpha = tf.linalg.triangular_solve(Ln, y[..., None], lower=True)
        return K, Ln, alpha, w

    @classmethod
    def log_marginals(cls, lengthscales, variances, noises, X, Y, W):
        r""":math:`\log p(y_O)` per channel, summed over the sequences: ``[D]``."""
        import tensorflow as tf

        _, Ln, alpha, w = cls._factors(lengthscales, variances, noises, X, Y, W)
        return (
            -0.5 * tf.reduce_sum(w, axis=[1, 2]) * np.log(2 * np.pi)
            - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(Ln)), axis=[1, 2])
            - 0.5 * tf.reduce_sum(tf.square(alpha), axis=[1, 2, 3])
        )

    def fit(self, X, Y, observed, maxiter: int = 100) -> "ChannelGP":
        """Fit the channels' variances, lengthscales and noises on ``(X [V, T, 1], Y [V, T, D])``
        (the channels' objectives are independent, so one optimisation of their sum fits all)."""
        import gpflow
        import tensorflow as tf

        ell, var, noise = self._parameters(Y.shape[-1])
        Yt = tf.constant(np.where(observed, Y, 0.0), tf.float64)
        Wt = tf.constant(observed.astype(np.float64))
        Xt = tf.constant(X, tf.float64)

        def loss():
            return -tf.reduce_sum(self.log_marginals(ell, var, noise, Xt, Yt, Wt))

        variables = ell.variables + var.variables + noise.variables
        result = gpflow.optimizers.Scipy().minimize(loss, variables, options=dict(maxiter=maxiter))
        self.optimisation = dict(iterations=int(result.nit), converged=bool(result.success))
        self.lengthscales, self.variances, self.noise_variances = ell.numpy(), var.numpy(), noise.numpy()
        return self

    def predict(self, X, Y, observed):
        """Predictive mean and variance ``[V, T, D]`` of every entry given each sequence's observed entries."""
        import tensorflow as tf

        ell, var, noise = (
            tf.constant(a, tf.float64) for a in (self.lengthscales, self.variances, self.noise_variances)
        )
        K, Ln, alpha, w = self._factors(ell, var, noise, X, np.where(observed, Y, 0.0), observed.astype(np.float64))
        Kso = K * w[..., None, :]  # [D, V, T*, T]: covariances with the observed frames only
        A = tf.linalg.triangular_solve(Ln, tf.linalg.matrix_transpose(Kso), lower=True)  # [D, V, T, T*]
        mean = tf.einsum("dvts,dvt->dvs", A, alpha[..., 0])
        variance = var[:, None, None] - tf.reduce_sum(tf.square(A), axis=-2) + noise[:, None, None]
        return np.transpose(mean.numpy(), [1, 2, 0]), np.transpose(variance.numpy(), [1, 2, 0])

    @property
    def hyperparameters(self) -> List[dict]:
        return [
            dict(lengthscale=float(a), variance=float(b), noise_variance=float(c))
            for a, b, c in zip(self.lengthscales, self.variances, self.noise_variances)
        ]


# ---------------------------------------------------------------------------------------------
# the VAE family


def build_model(
    method: str,
    num_channels: int,
    num_frames: int,
    config: Config,
    seed: int,
    num_latent: Optional[int] = None,
    hidden: Optional[Sequence[int]] = None,
):
    """The masked VAE, exact GP-VAE or SVGP-VAE with ``mlp_encoder``/``mlp_decoder`` networks,
    a Matern-5/2 kernel over time (in frames), a trainable Gaussian likelihood,
    ``missing_values="nan"``, ``encoder_sees_mask=True`` and ``encoder_dropout``, as in
    ``docs/imputation.pct.py``; ``num_latent`` and ``hidden`` override the config's."""
    import gpflow
    from gpflow.keras import tf_keras

    import gpflow_svgpvae as gv
    from gpflow_svgpvae.kernels import log_spaced_lengthscales
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

    tf_keras.utils.set_random_seed(seed)
    L, D = num_latent or config.num_latent, num_channels
    hidden = tuple(hidden or config.hidden)
    site = "natural" if config.variant == "natural_sites" else "variance"
    encoder = mlp_encoder(2 * D, L, hidden_units=hidden, site_parametrization=site)
    decoder = mlp_decoder(L, D, hidden_units=hidden)
    likelihood = gv.Gaussian(config.noise_variance, trainable=True)
    options = dict(missing_values="nan", encoder_sees_mask=True, encoder_dropout=config.encoder_dropout)
    if method == "vae":
        return gv.VAE(encoder, decoder, likelihood, seed=seed, **options)
    if config.lengthscale_range:
        kernel = log_spaced_lengthscales(gpflow.kernels.Matern52, L, *config.lengthscale_range)
    else:
        kernel = gpflow.kernels.Matern52(lengthscales=config.lengthscale_frames)
    if method == "gpvae":
        return gv.GPVAE(encoder, decoder, kernel, likelihood, seed=seed, **options)
    num_inducing = config.num_inducing or min(num_frames, 100)  # 0: one inducing time per frame
    Z = np.linspace(0.0, num_frames - 1.0, num_inducing)[:, None]
    return gv.SVGPVAE(encoder, decoder, kernel, Z, likelihood, seed=seed, **options)


def _validation_split(data, config: Config, seed: int):
    """``(training data, extra train() arguments)``: a ``validation_fraction`` of the observed
    training entries held out as the validation target, with early stopping on it (the library's
    :func:`~gpflow_svgpvae.imputation.hold_out_entries`), when the library has it and
    ``patience`` is set; else all the data and a fixed number of epochs."""
    from gpflow_svgpvae import imputation

    if not config.patience or not hasattr(imputation, "hold_out_entries"):
        return data, {}
    train_data, validation = imputation.hold_out_entries(data, fraction=config.validation_fraction, seed=seed)
    return train_data, dict(validation_data=validation, patience=config.patience, validate_every=config.validate_every)


def _seconds_per_epoch(stamps: Sequence[float], total: float) -> float:
    """Median time between the ends of consecutive epochs: the first epoch, which traces the
    training step, is left out (``total / epochs`` when there are fewer than three epochs)."""
    if len(stamps) < 3:
        return total / max(len(stamps), 1)
    return float(np.median(np.diff(stamps)))


def _optimizer_and_objective(model, num_sequences: int, config: Config):
    """Adam at the recipe's rate and the plain ELBO, or the ``config.variant``'s change; a warm-up
    or a hold lasts the first 20 % of the steps of the epoch budget (early stopping may end sooner)."""
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.training import ELBO, gp_optimizer_groups

    if config.variant and config.variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {config.variant!r}")
    rate = config.learning_rate
    fifth = max(1, config.epochs * -(-num_sequences // config.batch_size) // 5)
    optimizer = tf_keras.optimizers.Adam(rate)
    if config.variant == "kernel_hold" and hasattr(model, "kernel"):
        optimizer = gp_optimizer_groups(model, rate, kernel_hold_steps=fifth)
    elif config.variant == "gp_lr_10x" and hasattr(model, "kernel"):
        optimizer = gp_optimizer_groups(model, rate, gp_learning_rate=10 * rate)
    return optimizer, ELBO(warmup_steps=fifth) if config.variant == "kl_warmup" else ELBO()


def _fit_learned(method, train, test, config: Config, seed: int):
    """Train on ``train = (X, Y with NaN, frames)``; impute ``test``: mean, variance, s/epoch."""
    from gpflow_svgpvae.training import train as train_model

    X, Y, frames = train
    if method == "svgpvae" and config.candidates():
        if config.variant:
            raise ValueError("--variant changes the recipe's one setting: add --no-select for the SVGP-VAE")
        return _fit_selected(train, test, config, seed)
    model = build_model(method, Y.shape[-1], Y.shape[1], config, seed)
    data, extra = _validation_split((X, Y.astype(np.float32), frames), config, seed)
    optimizer, objective = _optimizer_and_objective(model, len(X), config)
    stamps: List[float] = []
    start = time.perf_counter()
    history = train_model(
        model,
        data,
        epochs=config.epochs,
        batch_size=config.batch_size,
        seed=seed,
        progress=False,
        optimizer=optimizer,
        objective=objective,
        callback=lambda epoch, logs: stamps.append(time.perf_counter()),
        **extra,
    )
    seconds = time.perf_counter() - start
    return _imputed(model, history, test, config, seed, _seconds_per_epoch(stamps, seconds), seconds, len(stamps))


def _fit_selected(train, test, config: Config, seed: int):
    """The SVGP-VAE chosen by :func:`gpflow_svgpvae.training.select` among ``config.grid`` on held-out
    training entries (one split for all candidates), each candidate stopped early as the recipe says."""
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.imputation import hold_out_entries
    from gpflow_svgpvae.training import select

    X, Y, frames = train
    data, validation = hold_out_entries(
        (X, Y.astype(np.float32), frames), fraction=config.validation_fraction, seed=seed
    )

    def build(num_latent_gps, width, learning_rate):
        model = build_model(
            "svgpvae", Y.shape[-1], Y.shape[1], config, seed, num_latent=num_latent_gps, hidden=(width, width)
        )
        return model, tf_keras.optimizers.Adam(learning_rate)

    start = time.perf_counter()
    model, table = select(
        build,
        config.candidates(),
        data,
        epochs=config.epochs,
        patience=config.patience,
        validate_every=config.validate_every,
        validation=validation,
        seed=seed,
        batch_size=config.batch_size,
    )
    seconds = time.perf_counter() - start
    chosen = next(row for row in table if row["selected"])
    epochs = sum(row["epochs"] for row in table)
    info_extra = {"selection": table, "selected": chosen["candidate"]}
    history = {"best_epoch": chosen["best_epoch"], "best_value": chosen["val_mse"], "monitor": "val_mse"}
    mean, variance, info = _imputed(model, history, test, config, seed, seconds / max(epochs, 1), seconds, epochs)
    info.update(info_extra)
    return mean, variance, info


def _imputed(model, history, test, config: Config, seed: int, seconds_per_epoch, seconds, epochs):
    """The trained ``model``'s imputation of ``test``: mean, variance (latent samples + noise), info."""
    Xt, Yt, ft = test
    imputed, samples = model.impute((Xt, Yt.astype(np.float32), ft), num_samples=config.num_samples, seed=seed)
    imputed, samples = np.asarray(imputed, float), np.asarray(samples, float)
    noise = float(np.asarray(model.likelihood.variance.numpy()).mean())
    variance = samples.var(0) + noise
    info = {
        "seconds_per_epoch": seconds_per_epoch,
        "train_seconds": seconds,
        "epochs": epochs,
        "noise_variance": noise,
    }
    if "elbo" in history:
        info["final_elbo"] = float(history["elbo"][-1])
    for key in ("best_epoch", "best_value", "stopped_epoch", "monitor"):
        if history.get(key) is not None:
            info[key] = history[key]
    return imputed, variance, info


def _fit_pypots(train, test, config: Config, seed: int):
    """PyPOTS' ``GPVAE`` with the same latent size and widths; ``None`` when PyPOTS is missing."""
    try:
        from pypots.imputation import GPVAE as PyPOTSGPVAE
        from pypots.utils.random import set_random_seed
    except ImportError as error:
        return None, None, {"skipped": f"PyPOTS is not installed ({error}); pip install pypots to include it"}
    import torch

    if config.threads:
        torch.set_num_threads(config.threads)
    set_random_seed(seed)
    X, Y, frames = train
    Xt, Yt, ft = test
    data, extra = _validation_split((X, Y.astype(np.float32), frames), config, seed)
    model = PyPOTSGPVAE(
        n_steps=Y.shape[1],
        n_features=Y.shape[-1],
        latent_size=config.num_latent,
        encoder_sizes=tuple(config.hidden),
        decoder_sizes=tuple(config.hidden),
        batch_size=config.batch_size,
        epochs=config.pypots_epochs,
        patience=extra["patience"] * extra["validate_every"] if extra else None,  # in epochs
        device="cpu",
        verbose=False,
    )
    fit_options = {}
    if extra:  # the same validation entries and patience as the other learned models
        _, Y_fit, _ = data[:3]
        fit_options["val_set"] = {"X": np.asarray(Y_fit, np.float32), "X_ori": Y.astype(np.float32)}
    else:
        Y_fit = Y
    start = time.perf_counter()
    model.fit({"X": np.asarray(Y_fit, np.float32)}, **fit_options)
    seconds = time.perf_counter() - start
    # PyPOTS' GPVAE imputes with the decoder at the encoder's mean: every "sample" is the same,
    # so it gives no predictive variance (no NLL or coverage).
    out = model.predict({"X": Yt.astype(np.float32)})
    imputation = np.asarray(out["imputation"], float)
    mean = np.where(~np.isnan(Yt), Yt, imputation.reshape(Yt.shape))
    variance = None
    # with early stopping, training ran until ``patience`` epochs after the best one
    best = int(getattr(model, "best_epoch", -1))
    patience = extra["patience"] * extra["validate_every"] if extra else 0
    epochs = min(config.pypots_epochs, best + 1 + patience) if extra and best >= 0 else config.pypots_epochs
    info = {"seconds_per_epoch": seconds / epochs, "train_seconds": seconds, "epochs": epochs}
    return mean, variance, info


# ---------------------------------------------------------------------------------------------
# the benchmark


def _run_one(method, data, scenario, seed, config: Config):
    """Scores of one method on one dataset, scenario and seed; and the test imputation."""
    (Xtr, Ytr, ftr), (Xte, Yte, fte), hidden_tr, hidden_te = data
    obs_tr = (ftr[..., None] > 0) & ~hidden_tr
    obs_te = (fte[..., None] > 0) & ~hidden_te
    nan_tr = np.where(obs_tr, Ytr, np.nan)
    nan_te = np.where(obs_te, Yte, np.nan)
    info: dict = {}
    variance = None
    start = time.perf_counter()
    if method == "mean":
        mean, variance = channel_mean_fill(Ytr, obs_tr, Yte, obs_te)
    elif method == "interp":
        fallback, _ = channel_mean_fill(Ytr, obs_tr, Yte[:1, :1], np.zeros_like(obs_te[:1, :1]))
        mean = linear_interpolation(Xte, Yte, obs_te, fte, fallback[0, 0])
    elif method == "gp":
        gp = ChannelGP(lengthscale=config.lengthscale_frames).fit(Xtr, Ytr, obs_tr)
        mean, variance = gp.predict(Xte, Yte, obs_te)
        info.update(hyperparameters=gp.hyperparameters, optimisation=gp.optimisation)
    elif method == "pypots":
        mean, variance, info = _fit_pypots((Xtr, nan_tr, ftr), (Xte, nan_te, fte), config, seed)
        if mean is None:
            return {"method": method, **info}, None, None
    else:
        mean, variance, info = _fit_learned(method, (Xtr, nan_tr, ftr), (Xte, nan_te, fte), config, seed)
    info["seconds"] = time.perf_counter() - start
    result = {"method": method, **scores(Yte, mean, hidden_te, variance), **info}
    return result, mean, variance


def _prepare(dataset, scenario: str, seed: int, config: Config):
    train_Y, test_Y, _ = standardise(dataset.train.Y, dataset.test.Y, dataset.train.frames, dataset.test.frames)
    D = train_Y.shape[-1]
    rng = np.random.default_rng([seed, SCENARIOS.index(scenario)])
    hidden_tr = hide(config, scenario, dataset.train.frames, D, rng)
    hidden_te = hide(config, scenario, dataset.test.frames, D, rng)
    return (
        (dataset.train.X, train_Y, dataset.train.frames),
        (dataset.test.X, test_Y, dataset.test.frames),
        hidden_tr,
        hidden_te,
    )


def _cache_spec(config: Config, method: str) -> dict:
    from gpflow_svgpvae import imputation

    spec = dict(mcar=config.mcar_fraction, outage=(config.outage_probability, config.outage_fraction))
    if method in LEARNED or method == "pypots":
        early = bool(config.patience) and hasattr(imputation, "hold_out_entries")
        spec["early_stopping"] = (config.validation_fraction, config.patience, config.validate_every) if early else None
    if method in LEARNED or method == "pypots":
        spec.update(
            {k: getattr(config, k) for k in ("num_latent", "hidden", "learning_rate", "epochs", "batch_size")},
            num_samples=config.num_samples,
        )
    if method in ("gpvae", "svgpvae", "gp"):
        spec["lengthscale"] = config.lengthscale_frames
    if method in ("gpvae", "svgpvae") and config.lengthscale_range:
        spec["lengthscale_range"] = list(config.lengthscale_range)
    if method in LEARNED:
        spec["noise_variance"] = config.noise_variance
        if config.encoder_dropout:  # absent when 0: the runs cached before keep their keys
            spec["encoder_dropout"] = config.encoder_dropout
    if method in LEARNED and config.variant:  # absent when unset: the runs cached before keep their keys
        spec["variant"] = config.variant
    if method == "svgpvae":
        spec["num_inducing"] = config.num_inducing
        if config.candidates():
            spec["grid"] = config.candidates()
    if method == "pypots":
        spec["pypots_epochs"] = config.pypots_epochs
    return spec


def _set_threads(threads: int) -> None:
    if threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def run(config: Config, progress: bool = True, argv: Optional[Sequence[str]] = None) -> dict:
    from ..datasets import wheel_series

    _set_threads(config.threads)
    runs_dir = os.path.join(config.out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    results: List[dict] = []
    hidden_fractions: Dict[str, Dict[str, float]] = {}
    examples: Dict[str, dict] = {}
    figures_complete = True
    for name in config.datasets:
        dataset = wheel_series.load(name)
        for scenario in config.scenarios:
            for seed in config.seeds:
                data = _prepare(dataset, scenario, seed, config)
                hidden_fractions.setdefault(name, {})[f"{scenario}_seed{seed}"] = float(data[3].mean())
                for method in config.methods:
                    spec = dict(_cache_spec(config, method), dataset=name, scenario=scenario, seed=seed, method=method)
                    path = os.path.join(runs_dir, run_key(f"{name}_{scenario}_s{seed}_{method}", spec) + ".json")
                    keep = seed == config.seeds[0] and method in ("interp", "gp", "svgpvae")
                    arrays_path = path[:-5] + ".npz"
                    have_arrays = os.path.exists(arrays_path)
                    mean = variance = None
                    # The arrays only draw the figure (and are not committed): assembling from the
                    # committed runs alone keeps their scores and leaves the figures as they are.
                    if os.path.exists(path) and (not keep or have_arrays or config.cached_only):
                        result = read_json(path)
                        if keep and have_arrays:
                            saved = np.load(arrays_path)
                            mean, variance = saved["mean"], saved["variance"] if "variance" in saved else None
                        figures_complete &= not keep or have_arrays
                    elif config.cached_only:
                        results.append(dict(method=method, dataset=name, scenario=scenario, seed=seed, missing=True))
                        continue
                    else:
                        result, mean, variance = _run_one(method, data, scenario, seed, config)
                        result.update(dataset=name, scenario=scenario, seed=seed)
                        write_json(path, result)
                        if keep and mean is not None:
                            extra = {} if variance is None else {"variance": variance.astype(np.float32)}
                            np.savez_compressed(arrays_path, mean=mean.astype(np.float32), **extra)
                    if keep and mean is not None:
                        examples.setdefault(name, {}).setdefault(scenario, {"data": data})[method] = (mean, variance)
                    results.append(result)
                    if progress:
                        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items()}
                        shown.pop("hyperparameters", None)
                        print(json.dumps(shown), flush=True)
    summary = summarise(results, config)
    metrics = {
        "config": dataclasses.asdict(config),
        "hidden_fraction_test": hidden_fractions,
        "results": [r for r in results if not r.get("missing")],
        "missing_runs": [
            {k: r[k] for k in ("dataset", "scenario", "seed", "method")} for r in results if r.get("missing")
        ],
        "summary": summary,
        "targets": targets(results),
    }
    write_json(os.path.join(config.out, "metrics.json"), metrics, argv=argv if argv is not None else sys.argv)
    with open(os.path.join(config.out, "table.md"), "w") as f:
        f.write(table_markdown(summary, config))
    if figures_complete:
        for name, by_scenario in examples.items():
            plot_sequences(name, by_scenario, os.path.join(config.out, f"sequences_{name}.png"))
    elif progress:
        print("figures left as they were: the imputations they draw (runs/*.npz) are not all here")
    if progress:
        print(table_markdown(summary, config))
    return metrics


def summarise(results: List[dict], config: Config) -> dict:
    """Mean and sd over the seeds of each metric, per dataset, scenario and method; and the
    SVGP-VAE's MSE relative to the better of linear interpolation and the per-channel GP."""
    out: dict = {}
    for r in results:
        if "mse" not in r:
            continue
        cell = out.setdefault(r["dataset"], {}).setdefault(r["scenario"], {}).setdefault(r["method"], {})
        for key in ("mse", "nll", "coverage90", "seconds_per_epoch"):
            if r.get(key) is not None:
                cell.setdefault(key, []).append(r[key])
    for by_scenario in out.values():
        for by_method in by_scenario.values():
            for method, cell in by_method.items():
                by_method[method] = {k: mean_sd(v) for k, v in cell.items()}
            if {"svgpvae", "interp", "gp"} <= set(by_method):
                best = min(by_method["interp"]["mse"]["mean"], by_method["gp"]["mse"]["mean"])
                by_method["svgpvae_over_best_classical"] = by_method["svgpvae"]["mse"]["mean"] / best
    return out


def _runs_by_cell(results: List[dict]) -> Dict[Tuple[str, str, int], Dict[str, dict]]:
    """The scored results keyed by ``(dataset, scenario, seed)``, then by method."""
    by_cell: Dict[Tuple[str, str, int], Dict[str, dict]] = {}
    for r in results:
        if "mse" in r:
            by_cell.setdefault((r["dataset"], r["scenario"], r["seed"]), {})[r["method"]] = r
    return by_cell


def targets(results: List[dict]) -> dict:
    """The benchmark's checks of the SVGP-VAE, from the per-seed results: on each (dataset,
    scenario, seed) its MSE against linear interpolation, the per-channel GP and PyPOTS; its
    coverage in [0.85, 0.95]; and per scenario the mean over datasets of its MSE over the better
    of interpolation and GP (averaged over seeds first)."""
    by_cell = _runs_by_cell(results)
    checks = []
    for (name, scenario, seed), cell in sorted(by_cell.items()):
        if "svgpvae" not in cell:
            continue
        ours = cell["svgpvae"]
        row = dict(dataset=name, scenario=scenario, seed=seed, svgpvae_mse=ours["mse"])
        for other in ("interp", "gp", "pypots"):
            if other in cell:
                row[f"at_or_below_{other}"] = bool(ours["mse"] <= cell[other]["mse"])
        if ours.get("coverage90") is not None:
            row["coverage_in_85_95"] = bool(0.85 <= ours["coverage90"] <= 0.95)
        checks.append(row)
    ratios: dict = {}
    for (name, scenario, _), cell in by_cell.items():
        if {"svgpvae", "interp", "gp"} <= set(cell):
            ratios.setdefault(scenario, {}).setdefault(name, []).append(
                (cell["svgpvae"]["mse"], min(cell["interp"]["mse"], cell["gp"]["mse"]))
            )
    mean_ratio = {
        scenario: float(np.mean([np.mean([a for a, _ in v]) / np.mean([b for _, b in v]) for v in by_name.values()]))
        for scenario, by_name in ratios.items()
    }
    return {"per_seed": checks, "mean_over_datasets_of_svgpvae_over_best_classical": mean_ratio}


def table_markdown(summary: dict, config: Config) -> str:
    lines = [
        "MSE on the hidden test entries (standardised units), mean +- sd over seeds "
        f"{', '.join(map(str, config.seeds))}; NLL and 90% band coverage where the method gives a variance.",
        "",
        "| dataset | hiding | method | seeds | MSE | NLL | 90% coverage | s/epoch |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def fmt(cell, key, digits=3):
        if key not in cell:
            return "-"
        m = cell[key]
        return f"{m['mean']:.{digits}f} +- {m['sd']:.{digits}f}"

    for name, by_scenario in summary.items():
        for scenario, by_method in by_scenario.items():
            for method in METHODS:
                if method not in by_method:
                    continue
                cell = by_method[method]
                lines.append(
                    f"| {name} | {scenario} | {method} | {cell['mse']['n']} | {fmt(cell, 'mse')} | {fmt(cell, 'nll')} "
                    f"| {fmt(cell, 'coverage90')} | {fmt(cell, 'seconds_per_epoch', 2)} |"
                )
            ratio = by_method.get("svgpvae_over_best_classical")
            if ratio is not None:
                lines.append(f"| {name} | {scenario} | SVGP-VAE / min(interp, gp) | | {ratio:.3f} | | | |")
    return "\n".join(lines) + "\n"


def plot_sequences(name: str, by_scenario: dict, path: str, sequence: Optional[int] = None, num_channels: int = 3):
    """Rows: hiding scenarios; columns: channels of one test sequence (default: the one whose
    readings vary most). Truth (black line), observed entries (dots), SVGP-VAE imputation with
    its 90 % band at the hidden entries (blue), linear interpolation (dashed grey)."""
    plt = pyplot()
    rows = list(by_scenario)
    if sequence is None:
        _, (_, Y0, frames0), _, _ = by_scenario[rows[0]]["data"]
        sequence = int(np.argmax([Y0[v][frames0[v] > 0].std(0).mean() for v in range(len(Y0))]))
    fig, axes = plt.subplots(len(rows), num_channels, figsize=(3.6 * num_channels, 2.4 * len(rows)), squeeze=False)
    for i, scenario in enumerate(rows):
        entry = by_scenario[scenario]
        _, (X, Y, frames), _, hidden = entry["data"]
        n = int(frames[sequence].sum())
        t = X[sequence, :n, 0]
        # the channels with the most hidden entries in this sequence
        channels = np.argsort(-hidden[sequence, :n].sum(0), kind="stable")[:num_channels]
        for j, d in enumerate(channels):
            ax = axes[i, j]
            seen = ~hidden[sequence, :n, d]
            if "svgpvae" in entry:
                mean, variance = entry["svgpvae"]
                m = mean[sequence, :n, d]
                s = np.sqrt(variance[sequence, :n, d]) * hidden[sequence, :n, d]
                ax.fill_between(t, m - Z90 * s, m + Z90 * s, color="C0", alpha=0.25, lw=0, label="SVGP-VAE 90% band")
                ax.plot(t, m, "C0-", lw=1.2, label="SVGP-VAE")
            if "interp" in entry:
                ax.plot(t, entry["interp"][0][sequence, :n, d], "--", color="0.5", lw=1, label="linear interp.")
            ax.plot(t, Y[sequence, :n, d], "k-", lw=0.8, label="truth")
            ax.plot(t[seen], Y[sequence, :n, d][seen], "k.", ms=3.5, label="observed")
            ax.set_title(f"{scenario}: channel {d}", fontsize=9)
            ax.set_xlabel("frame", fontsize=8)
    axes[0, 0].legend(fontsize=6, loc="best")
    fig.suptitle(f"{name}, test sequence {sequence} (standardised units)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def compare_variants(base: List[dict], variants: Dict[str, List[dict]], method: str = "gpvae") -> dict:
    """Each ``--variant`` against the benchmark's own runs of ``method``, per (dataset, scenario):
    the mean MSE over the seeds both have, the variant's mean over the base's (below 1: the variant
    is better), the seeds on which the variant's MSE is lower, and the range of its 90 % coverage.
    ``base`` and each value of ``variants`` are the ``results`` lists of two ``metrics.json``."""
    reference = _runs_by_cell(base)
    out: dict = {}
    for variant, results in variants.items():
        pairs: Dict[Tuple[str, str], List[Tuple[int, dict, dict]]] = {}
        for (dataset, scenario, seed), cell in sorted(_runs_by_cell(results).items()):
            if method in cell and method in reference.get((dataset, scenario, seed), {}):
                pairs.setdefault((dataset, scenario), []).append(
                    (seed, cell[method], reference[(dataset, scenario, seed)][method])
                )
        for (dataset, scenario), rows in pairs.items():
            seeds = [seed for seed, _, _ in rows]
            mse = [run["mse"] for _, run, _ in rows]
            base_mse = [run["mse"] for _, _, run in rows]
            coverage = [run["coverage90"] for _, run, _ in rows if run.get("coverage90") is not None]
            out.setdefault(variant, {}).setdefault(dataset, {})[scenario] = {
                "seeds": seeds,
                "mse": float(np.mean(mse)),
                "base_mse": float(np.mean(base_mse)),
                "ratio": float(np.mean(mse) / np.mean(base_mse)),
                "seeds_lower": [seed for seed, a, b in zip(seeds, mse, base_mse) if a < b],
                "coverage90_range": [float(min(coverage)), float(max(coverage))] if coverage else None,
            }
    return out


def variants_markdown(comparison: dict, method: str = "gpvae") -> str:
    """One row per variant, one column per (dataset, scenario): ratio (seeds lower / seeds)."""
    cells = sorted({(d, s) for v in comparison.values() for d, by in v.items() for s in by})
    head = " | ".join(f"{d} {s}" for d, s in cells)
    lines = [
        f"{method}'s MSE with one library default changed, over its MSE in the benchmark (mean over seeds; "
        "below 1: the change is better); in brackets the seeds on which the change is lower.",
        "",
        f"| variant | {head} |",
        "|---" * (len(cells) + 1) + "|",
    ]
    for variant, by_dataset in comparison.items():
        row = []
        for d, s in cells:
            c = by_dataset.get(d, {}).get(s)
            row.append("–" if c is None else f"{c['ratio']:.3f} ({len(c['seeds_lower'])}/{len(c['seeds'])})")
        lines.append(f"| {variant} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_variant_comparison(folder: str, base_folder: str, argv: Optional[Sequence[str]] = None) -> dict:
    """Read ``<base_folder>/metrics.json`` and ``<folder>/<variant>/metrics.json`` of every variant
    run so far; write the comparison to ``<folder>/metrics.json`` and ``<folder>/table.md``."""
    base_path = os.path.join(base_folder, "metrics.json")
    if not os.path.exists(base_path):
        raise ValueError(f"no benchmark results at {base_path}: run the benchmark there first")
    variants = {
        v: read_json(os.path.join(folder, v, "metrics.json"))["results"]
        for v in VARIANTS
        if os.path.exists(os.path.join(folder, v, "metrics.json"))
    }
    if not variants:
        raise ValueError(f"no variant results under {folder}: run with --variant V --out {folder}/V first")
    comparison = compare_variants(read_json(base_path)["results"], variants)
    metrics = {"base": base_folder, "variants": sorted(variants), "comparison": comparison}
    write_json(os.path.join(folder, "metrics.json"), metrics, argv=argv if argv is not None else sys.argv)
    with open(os.path.join(folder, "table.md"), "w") as f:
        f.write(variants_markdown(comparison))
    return metrics


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.real_imputation",
        description=__doc__.split("\n\n")[0].replace("``", ""),
    )
    p.add_argument("--quick", action="store_true", help="one seed, 15 epochs, small networks (about a minute)")
    p.add_argument("--datasets", nargs="+", default=None, help="default: basic_motions daphnet")
    p.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=None)
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="default 0 1 2")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=None)
    p.add_argument("--epochs", type=int, default=None, help=f"learned models (default {RECIPE['epochs']})")
    p.add_argument(
        "--num-inducing", type=int, default=None, help="SVGP-VAE inducing times (default: one per frame, up to 100)"
    )
    p.add_argument(
        "--lengthscale-frames",
        type=float,
        default=None,
        help=f"initial kernel lengthscale in frames (default {RECIPE['lengthscale_frames']})",
    )
    p.add_argument(
        "--encoder-dropout",
        type=float,
        default=None,
        help=f"learned models' encoder_dropout (default {RECIPE['encoder_dropout']}; 0: off)",
    )
    p.add_argument(
        "--single-kernel",
        action="store_true",
        help="one Matern-5/2 kernel at --lengthscale-frames for all latent channels, instead of one per "
        "channel at lengthscales log-spaced over 1-10 frames",
    )
    p.add_argument(
        "--no-select",
        action="store_true",
        help="train the SVGP-VAE at the recipe's one setting instead of choosing among GRID with select",
    )
    p.add_argument(
        "--variant",
        choices=VARIANTS,
        default=None,
        help="change one library default for the learned models (for the defaults table)",
    )
    p.add_argument("--pypots-epochs", type=int, default=None, help="PyPOTS GPVAE epochs (default 150)")
    p.add_argument("--threads", type=int, default=None, help="TensorFlow/torch threads (default: all)")
    p.add_argument("--out", default=None, help="results folder (default docs/results/real_imputation[_quick])")
    p.add_argument(
        "--cached-only",
        action="store_true",
        help="train nothing: assemble the results folder from the finished runs in <out>/runs (lists the missing)",
    )
    p.add_argument(
        "--compare-variants",
        metavar="BASE",
        default=None,
        help="train nothing: compare the --variant runs in <out>/<variant>/ with the benchmark's runs in BASE "
        "(e.g. docs/results/real_imputation); writes <out>/metrics.json and <out>/table.md",
    )
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    from ..datasets import wheel_series

    args = _parser().parse_args(argv)
    settings: dict = {}
    if args.quick:
        settings.update(QUICK, quick=True)
    if args.datasets is not None:
        for name in args.datasets:
            wheel_series._check_name(name)
        settings["datasets"] = tuple(args.datasets)
    for name in ("scenarios", "seeds", "methods"):
        if getattr(args, name) is not None:
            settings[name] = tuple(getattr(args, name))
    for name in (
        "epochs",
        "pypots_epochs",
        "threads",
        "num_inducing",
        "lengthscale_frames",
        "cached_only",
        "encoder_dropout",
        "variant",
    ):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.no_select:
        settings["grid"] = ()
    if args.single_kernel:
        settings["lengthscale_range"] = None
    settings["out"] = args.out or ("results/real_imputation_quick" if args.quick else "docs/results/real_imputation")
    return Config(**settings)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.compare_variants is not None:
        if args.out is None:
            raise SystemExit("real_imputation: --compare-variants needs --out, the folder holding the variant folders")
        try:
            metrics = write_variant_comparison(args.out, args.compare_variants, ["svgpvae", "real_imputation", *argv])
        except ValueError as error:
            raise SystemExit(f"real_imputation: {error}")
        if not args.quiet:
            print(variants_markdown(metrics["comparison"]))
        return metrics
    try:
        config = config_from_args(argv)
    except ValueError as error:
        raise SystemExit(f"real_imputation: {error}")
    return run(config, progress=not args.quiet, argv=["svgpvae", "real_imputation", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
