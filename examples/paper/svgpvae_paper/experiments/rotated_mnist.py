r"""Rotated MNIST, Table 1 of Jazbec et al. (2021): conditional generation at an unseen angle.

Usage::

    python -m svgpvae_paper.experiments.rotated_mnist table1 [--quick] [--seeds 0 1 2 3 4]
        [--epochs 1000] [--models cvae,gppvae,svgpvae,deep_svigp] [--out results/rotated_mnist]
    python -m svgpvae_paper.experiments.rotated_mnist summary FOLDER [FOLDER ...] --out OUT

Protocol (see :mod:`svgpvae_paper.datasets.rotated_mnist`): 400 threes x 16
angles; angle index 5 (112.5 deg) held out; 40 eval instances (all angles);
N = 4050 training images, 270 test images (known instances at the held-out
angle). Auxiliary inputs ``X = [angle, instance id]``.

Models (paper settings: L = 16, m = 32, Q = 8, b = 256, Adam 1e-3, GECO
kappa^2 = 0.020, 1000 epochs): CVAE, GPPVAE (Casale et al.), SVGP-VAE with
GP-LVM object vectors, Deep SVIGP (free q(u), no encoder). All use the same
conv networks (:mod:`gpflow_svgpvae.networks.conv`), the periodic x linear
kernel on ``[angle, object vector]`` (GPPVAE: the same periodic kernel on the
16 angles times a linear kernel on object vectors, in low-rank form), object
vectors initialised by PCA of the unrotated images, and m = 32 inducing
points (2 per angle, object parts drawn from the PCA Gaussian).

Evaluation.

* **Model selection on the eval set only.** Every ``--eval-every`` epochs,
  each model generates the 40 eval instances at the held-out angle from their
  images at the 15 other angles (the *eval context*), and the parameters with
  the lowest eval MSE are checkpointed; the test set is scored once, at the end,
  with the restored best checkpoint. Eval instances never enter training, so
  their object vectors are not learned; the learned vectors of the training
  instances drift away from their PCA initialisation. Before each evaluation
  the eval instances are therefore placed in the learned coordinates by the
  least-squares affine map from initial to current vectors of the training
  instances (:func:`place_new_objects`; a post-hoc linear back-projection).
  With ``--eval-placement fit`` the SVGP-VAE then fits the eval instances' vectors to
  their context images (``--eval-fit-steps`` Adam steps on the decoder likelihood of
  the decoded predictive mean, everything else frozen; :meth:`SVGPVAE.fit_object_vectors`).
  Then SVGP-VAE and GPPVAE condition their GP posterior on train + eval
  context; the CVAE averages the encodings of the context images; Deep SVIGP
  has no encoder, so the eval instances' vectors are further fitted on the
  context (``--deep-svigp-eval-steps`` Adam steps, everything else frozen).
* **Test.** Conditioned on the training set only: decoded posterior mean, and
  a decoded single sample of the latent posterior; MSE per pixel, averaged over
  the 270 test images. The model of the last epoch is scored too
  (``test_mse_mean_final``): with random initial object vectors the affine placement
  of the eval instances carries no information, so the eval selection is not
  meaningful there (unless the placement is fitted).
* **Time.** ``s/epoch`` is the median wall time of a training epoch, excluding
  the first (tracing/compilation) and evaluation; GPPVAE's per-epoch refresh
  (encoding all N images) is included.

Outputs in ``--out``: ``runs/`` (one JSON + NPZ per finished (model, seed) run, named by a hash of
its settings: a rerun reuses finished runs, so an interrupted table resumes and
seeds can be trained in parallel processes, then gathered by ``summary``),
``config.json``, ``metrics.json`` (per model and seed:
test/eval MSE, best epoch, s/epoch, per-epoch logs including GECO's lambda),
``table1.md``, ``table1.csv`` and PNGs of generated test images beside the
ground truth (``generated_<model>_seed<s>.png`` and ``generated_seed<s>.png``).
"""

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.auxiliary import ObjectVectors, init_inducing_per_view, pca_object_vectors, random_object_vectors
from gpflow_svgpvae.kernels import periodic_linear_kernel
from gpflow_svgpvae.models.cvae import CVAE
from gpflow_svgpvae.models.deep_svigp import DeepSVIGP
from gpflow_svgpvae.models.gppvae import GPPVAE
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.networks.conv import conv_decoder, conv_encoder
from gpflow_svgpvae.networks.precision import PRECISIONS, network_precision
from gpflow_svgpvae.training import GECO, OptimizerGroups, train
from svgpvae_paper.datasets.rotated_mnist import RotatedMNISTArrays as Data
from svgpvae_paper.datasets.rotated_mnist import rotated_mnist

from .common import command_argv, git_commit, read_json, write_json
from .rotated_mnist_objects import object_table, place_new_objects
from .rotated_mnist_report import (
    COMPLEXITY,
    LABELS,
    PAPER_TABLE1,
    plot_generated,
    settings_line,
    summary_rows,
    write_tables,
)
from .rotated_mnist_settings import _NOT_RUN_SETTINGS, EVAL_PLACEMENTS, MODELS, Config, run_path, run_spec

__all__ = [
    "Config",
    "MODELS",
    "EVAL_PLACEMENTS",
    "config_from_args",
    "PROTOCOLS",
    "Protocol",
    "load_data",
    "build_model",
    "object_table",
    "place_new_objects",
    "predict",
    "make_optimizer",
    "run_model",
    "run_spec",
    "run_path",
    "run_cached",
    "load_runs",
    "run_table1",
    "summarise_folders",
    "main",
    "LABELS",
    "COMPLEXITY",
    "PAPER_TABLE1",
]


# ----------------------------------------------------------------------------- data
def load_data(cfg: Config) -> Data:
    return Data(rotated_mnist(digits=tuple(cfg.digits), n_per_digit=cfg.n_per_digit, seed=cfg.data_seed))


# --------------------------------------------------------------------------- models
def _initial_object_vectors(data: Data, cfg: Config, seed: int) -> np.ndarray:
    scale = cfg.object_scale  # checked by Config
    if cfg.object_init == "pca":
        return pca_object_vectors(data.ds.unrotated, cfg.object_dim, scale=scale)
    if cfg.object_init == "random":
        return random_object_vectors(data.num_objects, cfg.object_dim, scale=1.5 if scale is None else scale, seed=seed)
    raise ValueError(f"object_init must be 'pca' or 'random'; got {cfg.object_init!r}")


def build_model(name: str, data: Data, cfg: Config, seed: int):
    """One of :data:`MODELS`, with seeded networks (built under ``cfg.precision``), object
    vectors and inducing inputs."""
    with network_precision(cfg.precision):
        return _build_model(name, data, cfg, seed)


def _build_model(name: str, data: Data, cfg: Config, seed: int):
    tf_keras.utils.set_random_seed(int(seed))
    L, Q, N = cfg.num_latent, cfg.object_dim, data.num_data
    vectors = _initial_object_vectors(data, cfg, seed)

    def table():
        return ObjectVectors(data.num_objects, Q, id_column=-1, num_view_features=1, initial_vectors=vectors)

    def kernel():
        return periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)))

    def inducing():
        return init_inducing_per_view(data.angles, cfg.num_inducing_per_angle, vectors, seed=seed)

    if name == "cvae":
        return CVAE(conv_encoder(L, condition_dim=2), conv_decoder(L + 2), num_data=N, seed=seed)
    if name == "svgpvae":
        return SVGPVAE(
            conv_encoder(L),
            conv_decoder(L),
            kernel(),
            inducing(),
            likelihood="gaussian",
            num_data=N,
            num_latent_gps=L,
            seed=seed,
            input_transform=table(),
        )
    if name == "deep_svigp":
        return DeepSVIGP(
            conv_decoder(L), kernel(), inducing(), num_latent_gps=L, num_data=N, input_transform=table(), seed=seed
        )
    if name == "gppvae":
        view_kernel = gpflow.kernels.Periodic(gpflow.kernels.SquaredExponential(), period=2 * np.pi)
        gpflow.set_trainable(view_kernel.period, False)
        return GPPVAE(
            conv_encoder(L), conv_decoder(L), view_kernel, data.angles, table(), num_data=N, num_latent_gps=L, seed=seed
        )
    raise ValueError(f"unknown model {name!r}; choose from {MODELS}")


# ----------------------------------------------------------------- per-model steps
def _nothing(*args):
    pass


def _refresh(model, data: Data):
    model.refresh(data.X_train, data.Y_train)


def _place(model, data: Data, cfg: Config, seed: int):
    place_new_objects(object_table(model), data, _initial_object_vectors(data, cfg, seed))


def _place_svgpvae(model, data: Data, cfg: Config, seed: int):
    _place(model, data, cfg, seed)
    if cfg.eval_placement == "fit":
        model.fit_object_vectors(
            data.X_eval_ctx, data.Y_eval_ctx, data.eval_ids, data=(data.X_train, data.Y_train), steps=cfg.eval_fit_steps
        )


def _place_and_fit(model, data: Data, cfg: Config, seed: int):
    _place(model, data, cfg, seed)
    model.fit_object_vectors(data.X_eval_ctx, data.Y_eval_ctx, data.eval_ids, steps=cfg.deep_svigp_eval_steps)


def _all_images(data: Data, split: str):
    return (data.X_train, data.Y_train) if split == "test" else (data.X_ctx_all, data.Y_ctx_all)


def _own_images(data: Data, split: str):
    return (data.X_train, data.Y_train) if split == "test" else (data.X_eval_ctx, data.Y_eval_ctx)


def _no_images(data: Data, split: str):
    return None


@dataclass(frozen=True)
class Protocol:
    """The steps of the protocol that differ between the models (one per model in :data:`PROTOCOLS`).

    :param refresh: ``refresh(model, data)`` before training and after every epoch
        (GPPVAE re-linearises its GP term on all training images).
    :param prepare_eval: ``prepare_eval(model, data, cfg, seed)`` before predicting the
        eval set: place the eval instances' object vectors (:func:`place_new_objects`)
        and, without an encoder (Deep SVIGP), fit them on the eval context.
    :param context: ``context(data, split)``, the ``data`` the predictions condition on:
        the training images (test) or also the eval context (eval); the CVAE averages
        only each object's own images, so it gets just the eval context; Deep SVIGP
        conditions on nothing (``None``).
    """

    refresh: Callable = _nothing
    prepare_eval: Callable = _nothing
    context: Callable = _all_images


PROTOCOLS = {
    "cvae": Protocol(context=_own_images),
    "gppvae": Protocol(refresh=_refresh, prepare_eval=_place),
    "svgpvae": Protocol(prepare_eval=_place_svgpvae),
    "deep_svigp": Protocol(prepare_eval=_place_and_fit, context=_no_images),
}


def predict(name: str, model, data: Data, split: str, seed: int = 0, cfg: Optional[Config] = None):
    """Decoded means and one decoded sample ``[n, 28, 28, 1]`` for ``split`` in {"eval", "test"}:
    ``model.predict_y(X_new, data=context, num_samples=1)`` for every model, after the
    model's eval preparation (:class:`Protocol`)."""
    if split not in ("eval", "test"):
        raise ValueError(f"split must be 'eval' or 'test'; got {split!r}")
    protocol = PROTOCOLS[name]
    if split == "eval":
        protocol.prepare_eval(model, data, cfg or Config(), seed)
    X_new = data.X_test if split == "test" else data.X_eval
    mean, samples = model.predict_y(X_new, data=protocol.context(data, split), num_samples=1, seed=seed)
    return np.asarray(mean, np.float32), np.asarray(samples, np.float32)[0]


def mse(pred, target) -> float:
    return float(np.mean((np.asarray(pred, np.float64) - np.asarray(target, np.float64)) ** 2))


# ------------------------------------------------------------------------- training
def make_optimizer(model, cfg: Config):
    """Adam at ``cfg.learning_rate``; with ``cfg.object_learning_rate`` the object vectors get
    their own Adam at that rate (:class:`~gpflow_svgpvae.training.OptimizerGroups`)."""
    if cfg.object_learning_rate is None:
        return tf_keras.optimizers.Adam(cfg.learning_rate)
    try:
        table = object_table(model)
    except TypeError:
        raise ValueError(f"object_learning_rate: {type(model).__name__} has no object vectors") from None
    return OptimizerGroups(
        [
            (tf_keras.optimizers.Adam(cfg.object_learning_rate), table),
            (tf_keras.optimizers.Adam(cfg.learning_rate), None),
        ]
    )


def run_model(
    name: str,
    data: Data,
    cfg: Config,
    seed: int,
    workdir: str,
    progress: bool = False,
    on_epoch: Optional[Callable[[int, object, dict], None]] = None,
    keep_model: bool = False,
) -> dict:
    """Train one model with GECO, select on eval MSE, score the test set once.

    :param on_epoch: called as ``on_epoch(epoch, model, logs)`` after every
        epoch (before evaluation), e.g. to record diagnostics during training;
        its time is not counted in ``seconds_per_epoch``.
    :param keep_model: return the trained model (best eval checkpoint restored)
        under the key ``"_model"``.
    """
    if cfg.eval_placement == "fit" and name == "gppvae":
        raise ValueError(
            "eval_placement='fit' is implemented for the SVGP-VAE (Deep SVIGP always fits its "
            "eval vectors); run GPPVAE with eval_placement='affine'."
        )
    model = build_model(name, data, cfg, seed)
    refresh = PROTOCOLS[name].refresh
    objective = GECO(
        cfg.kappa_squared, alpha=cfg.geco_alpha, nu=cfg.geco_nu, lambda_bounds=tuple(cfg.geco_lambda_bounds)
    )
    optimizer = make_optimizer(model, cfg)
    refresh(model, data)
    ckpt = tf.train.Checkpoint(model=model)
    ckpt_path = os.path.join(workdir, f"best_{name}_seed{seed}")
    record = {"epoch_seconds": [], "eval_epochs": [], "eval_mse": []}
    best = {"mse": np.inf, "epoch": None}
    clock = {"start": time.perf_counter()}

    def callback(epoch, logs):
        refresh(model, data)
        record["epoch_seconds"].append(time.perf_counter() - clock["start"])
        if on_epoch is not None:
            on_epoch(epoch, model, logs)
        last = epoch + 1 == cfg.epochs
        if (epoch + 1) % cfg.eval_every == 0 or last:
            mean, _ = predict(name, model, data, "eval", seed=seed, cfg=cfg)
            value = mse(mean, data.Y_eval)
            record["eval_epochs"].append(epoch + 1)
            record["eval_mse"].append(value)
            if value < best["mse"]:
                best.update(mse=value, epoch=epoch + 1)
                ckpt.write(ckpt_path)
            if progress:
                lam = logs.get("geco_lambda", float("nan"))
                print(
                    f"  [{name} seed {seed}] epoch {epoch + 1}: eval MSE {value:.4f} (best {best['mse']:.4f} @ "
                    f"{best['epoch']}), lambda {lam:.3g}, {record['epoch_seconds'][-1]:.2f} s",
                    flush=True,
                )
        clock["start"] = time.perf_counter()

    history = train(
        model,
        (data.X_train, data.Y_train),
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        optimizer=optimizer,
        objective=objective,
        seed=seed,
        jit_compile=cfg.jit_compile,
        progress=False,
        callback=callback,
    )
    # The model of the last epoch, scored before the best checkpoint is restored: the eval
    # selection can only be trusted when new objects can be placed (not with random init).
    final_mean, final_sample = predict(name, model, data, "test", seed=seed, cfg=cfg)
    mean, sample = final_mean, final_sample  # the best checkpoint when it is the last epoch's model
    if best["epoch"] is not None and best["epoch"] != cfg.epochs:
        ckpt.read(ckpt_path).expect_partial()
        mean, sample = predict(name, model, data, "test", seed=seed, cfg=cfg)
    times = record["epoch_seconds"]
    result = {
        "model": name,
        "seed": seed,
        "test_mse_mean": mse(mean, data.Y_test),
        "test_mse_sample": mse(sample, data.Y_test),
        "test_mse_mean_final": mse(final_mean, data.Y_test),
        "test_mse_sample_final": mse(final_sample, data.Y_test),
        "best_eval_mse": float(best["mse"]),
        "best_epoch": best["epoch"],
        "seconds_per_epoch": float(np.median(times[1:] if len(times) > 1 else times)),
        "first_epoch_seconds": float(times[0]) if times else None,
        "epochs": cfg.epochs,
        "num_data": data.num_data,
        "gp_complexity": COMPLEXITY[name],
        "eval_epochs": record["eval_epochs"],
        "eval_mse": record["eval_mse"],
        "history": {k: [float(v) for v in vals] for k, vals in history.items()},
        "_images": (mean[: cfg.num_plot], sample[: cfg.num_plot]),
    }
    if keep_model:
        result["_model"] = model
    return result


# -------------------------------------------------------------------------- outputs
def load_runs(folder: str) -> List[dict]:
    """All finished runs in a results folder: ``runs/*.json``, or the ``metrics.json`` of older versions.

    Each run dict carries its settings under ``"spec"`` (older folders: from ``config.json``).
    """
    runs_dir = os.path.join(folder, "runs")
    if os.path.isdir(runs_dir):
        return [read_json(os.path.join(runs_dir, f)) for f in sorted(os.listdir(runs_dir)) if f.endswith(".json")]
    metrics, config = os.path.join(folder, "metrics.json"), os.path.join(folder, "config.json")
    if not os.path.exists(metrics):
        raise FileNotFoundError(f"{folder!r} has neither runs/ nor metrics.json: not a table1 results folder")
    settings = read_json(config) if os.path.exists(config) else {}
    runs = []
    for r in read_json(metrics)["results"]:
        spec = {k: v for k, v in settings.items() if k in Config.__dataclass_fields__ and k not in _NOT_RUN_SETTINGS}
        runs.append({**r, "spec": {**spec, "model": r["model"], "seed": r["seed"]}})
    return runs


def _summarise(
    out: str,
    results: List[dict],
    models: Sequence[str],
    progress: bool,
    extra: Optional[dict] = None,
    argv: Optional[Sequence[str]] = None,
):
    rows = summary_rows(results, models)
    table = write_tables(out, rows, settings_line([r["spec"] for r in results]))
    # The per-epoch curves stay in each run's own record (runs/*.json): here the scalars of each run.
    scalars = [{k: v for k, v in r.items() if not isinstance(v, (list, dict)) or k == "spec"} for r in results]
    write_json(
        os.path.join(out, "metrics.json"), {"results": scalars, "summary": rows, **(extra or {})}, argv=argv, config={}
    )
    if progress:
        print(table, flush=True)
    return {"results": results, "summary": rows}


def run_cached(
    name: str,
    data: Data,
    cfg: Config,
    seed: int,
    progress: bool = False,
    on_epoch: Optional[Callable[[int, object, dict], None]] = None,
    retrain: bool = False,
    artifacts: Optional[Callable[[object], Dict[str, np.ndarray]]] = None,
    images: bool = True,
    argv: Optional[Sequence[str]] = None,
) -> dict:
    """:func:`run_model`, or its saved result if ``cfg.out/runs/`` holds a run with the same settings.

    A finished run is saved as ``runs/<model>_seed<s>_<hash of run_spec>.json``
    (the result, with ``spec`` and ``git_commit``) and ``.npz`` (the first
    ``num_plot`` generated test images, ``mean`` and ``sample``). The returned
    dict has ``_images = (mean, sample)`` and ``cached`` (bool). ``on_epoch``
    only runs when the model is trained; record what it collects in the
    result yourself if a reused run must provide it too.

    :param retrain: train even if a finished run with these settings exists
        (e.g. when ``on_epoch`` must run), and overwrite it.
    :param artifacts: ``artifacts(model) -> {name: array}`` of the trained
        model (best eval checkpoint), saved in the run's ``.npz`` and
        returned (also for a reused run) under ``"_artifacts"``.
    :param images: the caller needs ``_images``. With ``images=False`` (and no
        ``artifacts``) a saved ``.json`` is reused without its ``.npz``, and the result
        has no ``_images``: the run records committed under ``docs/results/`` are the
        ``.json`` files alone, and copied into ``runs/`` they let a sweep gather its
        figure without training those runs again.
    :param argv: the command line, recorded in a newly written run file (``"run"``: command,
        commit, CPU model and core count).
    """
    path = run_path(name, seed, cfg)
    runs_dir = os.path.dirname(path)
    with_images = os.path.exists(path + ".npz")
    if not retrain and os.path.exists(path + ".json") and (with_images or (not images and artifacts is None)):
        res = read_json(path + ".json")
        if with_images:
            with np.load(path + ".npz") as f:
                res["_images"] = (f["mean"], f["sample"])
                res["_artifacts"] = {k: f[k] for k in f.files if k not in ("mean", "sample")}
        if progress:
            print(
                f"{LABELS[name]} seed {seed}: reusing the finished run {path}.json"
                + ("" if with_images else " (no images)"),
                flush=True,
            )
        return {**res, "cached": True}
    # One checkpoint folder per run key: concurrent runs with other settings cannot collide.
    workdir = os.path.join(cfg.out, "checkpoints", os.path.basename(path))
    os.makedirs(workdir, exist_ok=True)
    t0 = time.perf_counter()
    res = run_model(
        name, data, cfg, seed, workdir, progress=progress, on_epoch=on_epoch, keep_model=artifacts is not None
    )
    extra = artifacts(res.pop("_model")) if artifacts is not None else {}
    res["wall_seconds"] = time.perf_counter() - t0
    res["spec"] = run_spec(name, seed, cfg)
    res["git_commit"] = git_commit()
    mean_imgs, sample_imgs = res.pop("_images")
    os.makedirs(runs_dir, exist_ok=True)
    np.savez(path + ".npz", mean=mean_imgs, sample=sample_imgs, **extra)
    write_json(path + ".json", res, argv=argv, config=res["spec"])
    if progress:
        print(
            f"{LABELS[name]} seed {seed}: test MSE mean {res['test_mse_mean']:.4f}, sample "
            f"{res['test_mse_sample']:.4f}, best eval {res['best_eval_mse']:.4f} @ {res['best_epoch']}, "
            f"{res['seconds_per_epoch']:.2f} s/epoch, {res['wall_seconds']:.0f} s total",
            flush=True,
        )
    return {**res, "_images": (mean_imgs, sample_imgs), "_artifacts": extra, "cached": False}


def run_table1(cfg: Config, progress: bool = True, argv: Optional[Sequence[str]] = None) -> dict:
    """Train every model for every seed; write config, metrics, tables and figures to ``cfg.out``.

    Each finished (model, seed) run is saved under ``runs/`` keyed by its
    settings; a rerun with the same settings loads it instead of training, so
    an interrupted table resumes, and seeds can be trained in separate
    processes and then gathered with one more ``table1`` call (or
    :func:`summarise_folders`). ``argv`` (the command line) is recorded in every file written.
    """
    unknown = [m for m in cfg.models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown models {unknown}; choose from {MODELS}")
    os.makedirs(cfg.out, exist_ok=True)
    write_json(
        os.path.join(cfg.out, "config.json"), {**asdict(cfg), "git_commit": git_commit()}, argv=argv, config=asdict(cfg)
    )
    data = load_data(cfg)
    if progress:
        print(data.ds.summary(), flush=True)
    results = []
    for seed in cfg.seeds:
        per_seed = {}
        for name in cfg.models:
            res = run_cached(name, data, cfg, seed, progress=progress, argv=argv)
            res.pop("_artifacts")
            mean_imgs, sample_imgs = res.pop("_images")
            per_seed[name] = mean_imgs
            plot_generated(
                os.path.join(cfg.out, f"generated_{name}_seed{seed}.png"),
                data.Y_test[: cfg.num_plot],
                {f"{LABELS[name]} mean": mean_imgs, f"{LABELS[name]} sample": sample_imgs},
            )
            results.append(res)
        plot_generated(
            os.path.join(cfg.out, f"generated_seed{seed}.png"),
            data.Y_test[: cfg.num_plot],
            {LABELS[n]: imgs for n, imgs in per_seed.items()},
        )
    return _summarise(cfg.out, results, cfg.models, progress, argv=argv)


def summarise_folders(
    folders: Sequence[str], out: str, progress: bool = True, argv: Optional[Sequence[str]] = None
) -> dict:
    """Gather the finished runs of several ``table1`` results folders into one table in ``out``.

    Runs are identified by (model, seed, settings); the same run found twice is
    counted once. Settings that differ between the gathered runs (e.g. epochs)
    are named in the table's caption.
    """
    results, seen = [], set()
    for folder in folders:
        for r in load_runs(folder):
            key = json.dumps(r["spec"], sort_keys=True)
            if key not in seen:
                seen.add(key)
                results.append({**r, "source": folder})
    if not results:
        raise ValueError(f"no finished runs in {list(folders)}")
    results.sort(key=lambda r: (MODELS.index(r["model"]), r["seed"]))
    os.makedirs(out, exist_ok=True)
    extra = {"sources": list(folders), "git_commit": git_commit()}
    return _summarise(out, results, MODELS, progress, extra=extra, argv=argv)


# ------------------------------------------------------------------------------ CLI
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m svgpvae_paper.experiments.rotated_mnist")
    sub = parser.add_subparsers(dest="command", required=True)
    t1 = sub.add_parser("table1", help="Table 1: CVAE, GPPVAE, SVGP-VAE, Deep SVIGP on rotated MNIST")
    t1.add_argument(
        "--paper",
        action="store_true",
        help="the paper's protocol; the default already is: it gave the best committed Table 1 (the "
        "SVGP-VAE-only variants measured since, e.g. --object-init random --object-learning-rate 1e-2 "
        "--eval-placement fit, are within about one seed sd of it and leave the GPPVAE out)",
    )
    t1.add_argument("--quick", action="store_true", help="3 epochs, 1 seed (a smoke run, ~2 min)")
    t1.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds to run (default 0 1 2 3 4; --quick: 0)")
    t1.add_argument("--epochs", type=int, default=None, help="epochs (default 1000; --quick: 3)")
    t1.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    t1.add_argument("--out", default="results/rotated_mnist")
    t1.add_argument("--n-per-digit", type=int, default=400, help="instances per digit (reduce for tests)")
    t1.add_argument("--digits", default="3")
    t1.add_argument("--batch-size", type=int, default=256)
    t1.add_argument("--num-latent-gps", type=int, default=16, dest="latent_dim", help="latent channels L")
    t1.add_argument("--learning-rate", type=float, default=1e-3)
    t1.add_argument(
        "--object-learning-rate",
        type=float,
        default=None,
        help="Adam learning rate of the object vectors (default: --learning-rate, the paper's)",
    )
    t1.add_argument("--kappa-squared", type=float, default=0.020)
    t1.add_argument("--geco-nu", type=float, default=1.0)
    t1.add_argument("--object-init", choices=("pca", "random"), default="pca")
    t1.add_argument(
        "--object-scale",
        type=float,
        default=None,
        help="initial object vectors: PCA scores rescaled to this RMS, or random N(0, s^2) "
        "(default: the paper's raw PCA scores; random: 1.5)",
    )
    t1.add_argument(
        "--eval-every", type=int, default=None, help="epochs between eval-set evaluations (default 5; --quick: 1)"
    )
    t1.add_argument("--deep-svigp-eval-steps", type=int, default=30)
    t1.add_argument(
        "--eval-placement",
        choices=EVAL_PLACEMENTS,
        default="affine",
        help="SVGP-VAE eval instances: the affine map from initial to learned vectors (the paper's), "
        "or that map then a fit of their vectors to the eval context",
    )
    t1.add_argument("--eval-fit-steps", type=int, default=50, help="Adam steps of --eval-placement fit")
    t1.add_argument("--jit", action="store_true", help="compile the training step with XLA")
    t1.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="Keras policy of the networks (the GP block is float64 always)",
    )
    t1.add_argument("--quiet", action="store_true")
    summary = sub.add_parser("summary", help="gather the runs of several table1 folders into one table")
    summary.add_argument("folders", nargs="+", help="table1 results folders")
    summary.add_argument("--out", required=True)
    summary.add_argument("--quiet", action="store_true")
    return parser


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The :class:`Config` of a ``table1`` command line (the defaults: the paper's protocol); a bad
    setting exits with its message."""
    args = _parser().parse_args(argv)
    if args.command != "table1":
        raise ValueError(f"config_from_args reads a table1 command line; got {args.command!r}")
    quick = args.quick
    try:
        cfg = Config(
            epochs=args.epochs if args.epochs is not None else (3 if quick else 1000),
            seeds=tuple(args.seeds) if args.seeds is not None else ((0,) if quick else (0, 1, 2, 3, 4)),
            models=tuple(m.strip() for m in args.models.split(",") if m.strip()),
            digits=tuple(int(d) for d in args.digits.split(",")),
            n_per_digit=args.n_per_digit,
            batch_size=args.batch_size,
            num_latent=args.latent_dim,
            learning_rate=args.learning_rate,
            object_learning_rate=args.object_learning_rate,
            kappa_squared=args.kappa_squared,
            geco_nu=args.geco_nu,
            object_init=args.object_init,
            object_scale=args.object_scale,
            eval_every=args.eval_every if args.eval_every is not None else (1 if quick else 5),
            deep_svigp_eval_steps=args.deep_svigp_eval_steps,
            eval_placement=args.eval_placement,
            eval_fit_steps=args.eval_fit_steps,
            jit_compile=args.jit,
            precision=args.precision,
            out=args.out,
        )
    except ValueError as error:  # Config's checks (e.g. --object-scale)
        raise SystemExit(f"rotated_mnist: {error}")
    return cfg


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = _parser().parse_args(argv)
    command = command_argv("rotated_mnist", argv)
    if args.command == "summary":
        return summarise_folders(args.folders, args.out, progress=not args.quiet, argv=command)
    return run_table1(config_from_args(argv), progress=not args.quiet, argv=command)


if __name__ == "__main__":
    main(sys.argv[1:])
