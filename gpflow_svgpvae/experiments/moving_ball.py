r"""Moving-ball experiments of the SVGP-VAE paper (Jazbec et al. 2021, after Pearce 2019).

Usage::

    python -m gpflow_svgpvae.experiments.moving_ball runs --models vae gpvae svgpvae:15 [...]
    python -m gpflow_svgpvae.experiments.moving_ball rmse_vs_m   [--quick] [--seeds 0 1 2] [--steps N] [--out DIR]
    python -m gpflow_svgpvae.experiments.moving_ball trajectories [...]
    python -m gpflow_svgpvae.experiments.moving_ball lengthscale  [...]
    python -m gpflow_svgpvae.experiments.moving_ball inducing     [...]

Every command writes ``<command>.png``, ``<command>.csv`` and ``<command>.json``
(the configuration, per-run timings and the summary numbers) to ``--out``
(default ``results/moving_ball/<command>[_quick]``).

Protocol (paper defaults, used unless overridden): 32x32 binary frames,
T = 30, one GP per video (b = N = 30), 35 fresh videos per step from
:func:`~gpflow_svgpvae.datasets.moving_ball_stream` (seeded by the run's
seed), MLP encoder/decoder 2 x 500 tanh, L = 2, Bernoulli decoder, Adam
1e-3, 25,000 steps, one Monte Carlo sample; RBF kernel with variance fixed
to 1 and a trainable lengthscale (initialised at ``--init-lengthscale``);
SVGP-VAE inducing times trainable, initialised evenly on [0, 29]. The test
set is :func:`~gpflow_svgpvae.datasets.moving_ball_test_set` (350 videos,
seed ``--test-seed``, the same for every run); the metric is the RMSE per
coordinate, in GP path units, between the true paths and the posterior
means after the best affine map fitted per video
(:func:`~gpflow_svgpvae.metrics.affine_path_rmse`).

``--gp-lr`` gives the kernel hyperparameters and inducing inputs their own
Adam learning rate (default: the same as the networks, as in the paper; Adam
is elementwise, so two Adams with equal rates are one Adam). With Adam a
parameter moves by at most about one learning rate per step, so with far
fewer than 25,000 steps a larger ``--gp-lr`` is needed for the lengthscale
and the inducing times to travel as far as in the paper.

``--warm-start-m M --warm-start-steps W`` trains every GP model's first W
steps as an SVGP-VAE with M inducing points, then continues from its networks
and lengthscale (fresh Adam state, same video stream) for the remaining
``--steps`` minus W. From scratch, the exact GP-VAE and the SVGP-VAE with many
inducing points settle in a solution with a short lengthscale and entangled
latents; started from a small-m solution they keep disentangled latents (fully
in two of three seeds measured, partly in the third) and reach a higher ELBO
(docs/results.md). The warm phase is shared by all
models of a seed (its weights are cached under ``<cache>/weights``).

Trained runs are cached in ``--cache`` (default ``results/moving_ball/runs[_quick]``),
keyed by every setting that affects them, so e.g. ``trajectories`` and
``lengthscale`` reuse the runs of an earlier ``rmse_vs_m`` with the same settings.
"""
import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .common import git_commit, mean_sd, pyplot, read_json, write_csv, write_json
from .common import run_key as run_key_from_spec

__all__ = ["Config", "QUICK", "train_run", "main"]

NUM_FRAMES = 30
IMAGE_SIZE = 32
PAPER_M = (2, 4, 6, 8, 10, 12, 15, 20, 30)


@dataclasses.dataclass
class Config:
    steps: int = 25_000
    batch_videos: int = 35
    test_videos: int = 350
    test_seed: int = 12345
    hidden: Sequence[int] = (500, 500)
    num_latent: int = 2
    learning_rate: float = 1e-3
    gp_learning_rate: Optional[float] = None  # None: = learning_rate
    init_lengthscale: float = 1.0
    train_lengthscale: bool = True
    jitter: float = 1e-6
    record_every: int = 100
    seeds: Sequence[int] = (0, 1, 2)
    m_values: Sequence[int] = PAPER_M
    lengthscale_m: Sequence[int] = (2, 6, 15, 30)
    trajectory_m: int = 15
    inducing_m: int = 10
    inducing_window: Sequence[float] = (13.0, 16.0)
    show_videos: int = 4
    models: Sequence[str] = ("vae", "gpvae", "svgpvae:15")
    warm_start_m: Optional[int] = None
    warm_start_steps: int = 0

    def __post_init__(self):
        if self.warm_start_m is not None:
            if int(self.warm_start_m) < 1:
                raise ValueError(f"warm_start_m must be a positive number of inducing points, got {self.warm_start_m}")
            if not 0 < self.warm_start_steps <= self.steps:
                raise ValueError(
                    f"warm_start_steps must be in [1, steps={self.steps}] when warm_start_m is set, "
                    f"got {self.warm_start_steps}")

    def run_settings(self, kind: Optional[str] = None) -> dict:
        """The settings that change a trained run of model ``kind`` (its cache key)."""
        keys = ("steps", "batch_videos", "test_videos", "test_seed", "hidden", "num_latent", "learning_rate",
                "gp_learning_rate", "init_lengthscale", "jitter", "record_every")
        settings = {k: (list(v) if isinstance(v, (tuple, list)) else v) for k, v in dataclasses.asdict(self).items()
                    if k in keys}
        # Options enter the key only when not at their defaults, so runs cached before
        # they existed stay valid. The VAE has no GP, so the GP options do not apply to it.
        if kind != "vae" and not self.train_lengthscale:
            settings["train_lengthscale"] = False
        if self.warm_starts(kind):
            settings["warm_start"] = [int(self.warm_start_m), int(self.warm_start_steps)]
        return settings

    def warm_starts(self, kind: Optional[str]) -> bool:
        """Whether a run of model ``kind`` begins with the warm phase (GP models only)."""
        return self.warm_start_m is not None and kind != "vae"

    def warm_phase(self) -> "Config":
        """The configuration of the warm-start phase: a plain SVGP-VAE run of ``warm_start_steps``."""
        return dataclasses.replace(self, steps=int(self.warm_start_steps), warm_start_m=None, warm_start_steps=0)


#: ``--quick``: small networks, few steps, few runs; a couple of minutes per command on 2 cores.
QUICK = dict(
    steps=400, test_videos=100, hidden=(128, 128), gp_learning_rate=1e-2, record_every=20, seeds=(0,),
    m_values=(2, 6, 15), lengthscale_m=(2, 15), inducing_m=6, inducing_window=(13.0, 16.0),
)


# --------------------------------------------------------------------------- training
def _times(num_videos: int) -> np.ndarray:
    return np.broadcast_to(np.arange(NUM_FRAMES, dtype=np.float64)[None, :, None], (num_videos, NUM_FRAMES, 1)).copy()


def build_model(kind: str, cfg: Config, seed: int, num_inducing: Optional[int] = None, inducing_init=None):
    """``kind`` in {"vae", "gpvae", "svgpvae"}; networks seeded with ``seed``."""
    import gpflow
    from gpflow.keras import tf_keras

    from ..models.gpvae import GPVAE
    from ..models.vae import VAE
    from ..models.video_svgpvae import VideoSVGPVAE
    from ..networks import mlp_decoder, mlp_encoder

    tf_keras.utils.set_random_seed(int(seed))
    K, L = IMAGE_SIZE * IMAGE_SIZE, cfg.num_latent
    encoder = mlp_encoder(K, L, hidden_units=tuple(cfg.hidden), activation="tanh")
    decoder = mlp_decoder(L, K, hidden_units=tuple(cfg.hidden), activation="tanh")
    if kind == "vae":
        return VAE(encoder, decoder, "bernoulli", num_data=NUM_FRAMES, seed=seed)
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=cfg.init_lengthscale)
    gpflow.set_trainable(kernel.variance, False)
    gpflow.set_trainable(kernel.lengthscales, bool(cfg.train_lengthscale))
    if kind == "gpvae":
        return GPVAE(encoder, decoder, kernel, "bernoulli", num_data=NUM_FRAMES, num_latent_gps=L, seed=seed)
    if kind == "svgpvae":
        Z = np.linspace(0.0, NUM_FRAMES - 1, int(num_inducing)) if inducing_init is None else np.asarray(inducing_init)
        return VideoSVGPVAE(encoder, decoder, kernel, Z[:, None], "bernoulli", num_data=NUM_FRAMES,
                            num_latent_gps=L, jitter=cfg.jitter, seed=seed)
    raise ValueError(f"unknown model kind {kind!r}")


def _gp_variables(model) -> List:
    variables = list(getattr(model, "kernel", None).trainable_variables) if hasattr(model, "kernel") else []
    if hasattr(model, "inducing_variable"):
        variables += list(model.inducing_variable.trainable_variables)
    return variables


def _make_step(model, cfg: Config):
    import tensorflow as tf
    from gpflow.keras import tf_keras

    from ..training import ELBO

    objective = ELBO()
    net_opt = tf_keras.optimizers.Adam(cfg.learning_rate)
    gp_opt = tf_keras.optimizers.Adam(cfg.gp_learning_rate or cfg.learning_rate)

    @tf.function
    def step(X, Y):
        with tf.GradientTape() as tape:
            terms = model.objective_terms((X, Y), training=True)
            loss, _ = objective.loss(terms, Y)
        variables = model.trainable_variables
        gp_ids = {id(v) for v in _gp_variables(model)}
        grads = tape.gradient(loss, variables)
        net = [(g, v) for g, v in zip(grads, variables) if id(v) not in gp_ids]
        gp = [(g, v) for g, v in zip(grads, variables) if id(v) in gp_ids]
        net_opt.apply_gradients(net)
        if gp:
            gp_opt.apply_gradients(gp)
        return terms["elbo"]

    return step


def _lengthscale(model) -> float:
    kernel = getattr(model, "kernel", None)
    return float(kernel.lengthscales.numpy()) if kernel is not None else float("nan")


def evaluate(model, test) -> Dict[str, np.ndarray]:
    """Posterior means/variances of the test videos' latents, the affine-aligned RMSE and the
    model's own bound per test video (``test_elbo``; one Monte Carlo sample per frame)."""
    from ..metrics import affine_path_rmse

    means, variances, elbo = [], [], 0.0
    X = _times(test.num_videos)
    for start in range(0, test.num_videos, 50):
        data = (X[start:start + 50], test.videos[start:start + 50])
        m, v = model.predict_f(data)
        means.append(m.numpy())
        variances.append(v.numpy())
        elbo += float(model.objective_terms(data, training=False)["elbo"])
    means, variances = np.concatenate(means), np.concatenate(variances)
    return {"means": means, "variances": variances, "rmse": affine_path_rmse(means, test.paths, per_video=True),
            "test_elbo": elbo / test.num_videos}


def run_key(kind: str, m: Optional[int], seed: int, cfg: Config, inducing_init=None) -> str:
    spec = {"kind": kind, "m": m, "seed": int(seed), "inducing_init": None if inducing_init is None
            else [round(float(z), 8) for z in inducing_init], **cfg.run_settings(kind)}
    return run_key_from_spec(f"{kind}{'' if m is None else f'_m{m}'}_seed{seed}", spec)


class _Progress:
    """Training history and per-step timings of a run, shared by its phases."""

    def __init__(self):
        self.history = {"step": [], "elbo": [], "lengthscale": [], "inducing": []}
        self.elbo_window: List[float] = []
        self.step_times: List[float] = []
        self.data_times: List[float] = []

    def record(self, step: int, model):
        h = self.history
        h["step"].append(int(step))
        h["elbo"].append(float(np.mean(self.elbo_window)) if self.elbo_window else float("nan"))
        h["lengthscale"].append(_lengthscale(model))
        if hasattr(model, "inducing_variable"):
            h["inducing"].append(np.sort(model.inducing_variable.Z.numpy()[:, 0]))
        self.elbo_window.clear()

    def arrays(self) -> Dict[str, np.ndarray]:
        """The history as arrays; ``inducing`` rows are NaN-padded to the largest ``m`` (a
        warm-started SVGP-VAE records the warm model's inducing times, then its own)."""
        hist = {k: np.asarray(self.history[k], dtype=float) for k in ("step", "elbo", "lengthscale")}
        hist["step"] = hist["step"].astype(int)
        rows = [np.asarray(r, dtype=float) for r in self.history["inducing"]]
        if rows:
            width = max(len(r) for r in rows)
            hist["inducing"] = np.stack([np.pad(r, (0, width - len(r)), constant_values=np.nan) for r in rows])
        return hist

    def to_json(self) -> dict:
        return {"step_times": self.step_times, "data_times": self.data_times,
                "history": {k: v.tolist() for k, v in self.arrays().items()}}

    @classmethod
    def from_json(cls, saved: dict) -> "_Progress":
        """Inverse of :meth:`to_json` (the NaN padding of ``inducing`` rows is dropped)."""
        progress = cls()
        progress.step_times, progress.data_times = list(saved["step_times"]), list(saved["data_times"])
        for k, v in saved["history"].items():
            rows = np.asarray(v, dtype=float)
            progress.history[k] = [r[~np.isnan(r)] for r in rows] if k == "inducing" else list(rows)
        return progress


def _fit(model, cfg: Config, seed: int, first_step: int, last_step: int, progress: _Progress, label: str,
         position: int):
    """Train ``model`` on batches ``first_step .. last_step - 1`` of the run's video stream,
    recording into ``progress`` at every ``record_every``-th step and at ``cfg.steps``."""
    import tensorflow as tf
    from tqdm.auto import tqdm

    from ..datasets.moving_ball import moving_ball_stream

    if first_step >= last_step:
        return
    step = _make_step(model, cfg)
    stream = moving_ball_stream(cfg.batch_videos, seed=int(seed), start_step=first_step)
    X = tf.constant(_times(cfg.batch_videos))
    bar = tqdm(range(first_step + 1, last_step + 1), desc=f"{label} seed={seed}", position=position, leave=False,
               mininterval=2.0, unit="step")
    for i in bar:
        t0 = time.perf_counter()
        Y = next(stream).videos
        t1 = time.perf_counter()
        elbo = float(step(X, Y))
        t2 = time.perf_counter()
        progress.data_times.append(t1 - t0)
        progress.step_times.append(t2 - t1)
        if not np.isfinite(elbo):
            raise FloatingPointError(f"{label} seed={seed}: the ELBO became non-finite at step {i}")
        progress.elbo_window.append(elbo / cfg.batch_videos)
        if i % cfg.record_every == 0 or i == cfg.steps:
            progress.record(i, model)
            bar.set_postfix(elbo_per_video=f"{progress.history['elbo'][-1]:.1f}",
                            ls=f"{progress.history['lengthscale'][-1]:.2f}")
    bar.close()


def _trained_model(kind: str, cfg: Config, seed: int, m: Optional[int], inducing_init, cache_dir: Optional[str],
                   position: int):
    """The model of a run after training, with its training record: ``(model, progress, seconds)``.

    Final weights and the record are cached under ``<cache_dir>/weights/<run key>``, so a later
    run can start from them; a warm-started run (``cfg.warm_start_m``, GP models) begins as the
    plain SVGP-VAE run of ``cfg.warm_phase()`` (trained here or loaded), then moves its networks
    and lengthscale (and, for an SVGP-VAE with the same ``m`` and no ``inducing_init``, its
    inducing times) into the model ``kind`` and trains on the following batches of the stream.
    """
    import tensorflow as tf

    model = build_model(kind, cfg, seed, num_inducing=m, inducing_init=inducing_init)
    checkpoint = tf.train.Checkpoint(model=model)
    key = run_key(kind, m, seed, cfg, inducing_init)
    path = os.path.join(cache_dir, "weights", key) if cache_dir else None
    if path and os.path.exists(path + ".json"):
        checkpoint.read(path).assert_existing_objects_matched().expect_partial()
        saved = read_json(path + ".json")
        return model, _Progress.from_json(saved), float(saved["train_seconds"])

    if cfg.warm_starts(kind):
        warm_m = int(cfg.warm_start_m)
        warm, progress, warm_seconds = _trained_model("svgpvae", cfg.warm_phase(), seed, warm_m, None, cache_dir,
                                                      position)
        model.encoder.set_weights(warm.encoder.get_weights())
        model.decoder.set_weights(warm.decoder.get_weights())
        model.kernel.lengthscales.assign(warm.kernel.lengthscales)
        if kind == "svgpvae" and int(m) == warm_m and inducing_init is None:
            model.inducing_variable.Z.assign(warm.inducing_variable.Z)
        if not hasattr(model, "inducing_variable"):
            progress.history["inducing"] = []
        first_step = cfg.warm_start_steps
    else:
        progress, warm_seconds, first_step = _Progress(), 0.0, 0
        progress.record(0, model)
    start = time.perf_counter()
    _fit(model, cfg, seed, first_step, cfg.steps, progress, kind if m is None else f"{kind} m={m}", position)
    seconds = warm_seconds + time.perf_counter() - start
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        checkpoint.write(path)
        write_json(path + ".json", {"key": key, "train_seconds": seconds, **progress.to_json()})
    return model, progress, seconds


def train_run(kind: str, cfg: Config, seed: int, m: Optional[int] = None, inducing_init=None,
              cache_dir: Optional[str] = None, test=None, position: int = 1) -> dict:
    """Train one model (or load it from ``cache_dir``) and evaluate it on the test set.

    With ``cfg.warm_start_m`` set (GP models only) the first ``cfg.warm_start_steps`` of the
    ``cfg.steps`` training steps train an SVGP-VAE with ``warm_start_m`` inducing points; the
    model ``kind`` then starts from its networks and lengthscale (fresh optimiser state) and
    trains on the following batches of the same video stream.

    :return: dict with ``rmse``, ``test_elbo``, ``final_lengthscale``, ``sec_per_step`` (median
        over steps after the first, training step only), ``data_sec_per_step``,
        ``train_seconds`` (including a warm phase), ``wall_seconds``, ``history`` (``step``,
        ``elbo``, ``lengthscale``, ``inducing`` arrays), ``means`` (test posterior means), ``cached``.
    """
    from ..datasets.moving_ball import moving_ball_test_set

    key = run_key(kind, m, seed, cfg, inducing_init)
    path = os.path.join(cache_dir, key + ".npz") if cache_dir else None
    if path and os.path.exists(path):
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"]))
            out = {**meta, "means": f["means"], "cached": True,
                   "history": {k[2:]: f[k] for k in f.files if k.startswith("h_")}}
        return out

    test = test if test is not None else moving_ball_test_set(cfg.test_videos, seed=cfg.test_seed)
    start = time.perf_counter()
    model, progress, train_seconds = _trained_model(kind, cfg, seed, m, inducing_init, cache_dir, position)
    result = evaluate(model, test)
    step_times, data_times = progress.step_times, progress.data_times
    meta = {
        "kind": kind, "m": m, "seed": int(seed), "key": key, "rmse": float(result["rmse"]),
        "test_elbo": float(result["test_elbo"]), "final_lengthscale": _lengthscale(model),
        "final_inducing": None if not hasattr(model, "inducing_variable") else
        np.sort(model.inducing_variable.Z.numpy()[:, 0]).tolist(),
        "sec_per_step": float(np.median(step_times[1:])) if len(step_times) > 1 else float("nan"),
        "data_sec_per_step": float(np.median(data_times)) if data_times else float("nan"),
        "first_step_seconds": float(step_times[0]) if step_times else float("nan"),
        "wall_seconds": float(time.perf_counter() - start), "train_seconds": float(train_seconds),
        "steps": cfg.steps, "inducing_init": None if inducing_init is None else [float(z) for z in inducing_init],
        "warm_start": {"m": int(cfg.warm_start_m), "steps": int(cfg.warm_start_steps)} if cfg.warm_starts(kind)
        else None,
    }
    hist = progress.arrays()
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = path + ".tmp.npz"
        np.savez(tmp, meta=json.dumps(meta), means=result["means"], **{"h_" + k: v for k, v in hist.items()})
        os.replace(tmp, path)
    return {**meta, "means": result["means"], "history": hist, "cached": False}


# ----------------------------------------------------------------------------- output
def _run_summary(r: dict) -> dict:
    return {k: r[k] for k in ("kind", "m", "seed", "rmse", "test_elbo", "final_lengthscale", "sec_per_step",
                              "data_sec_per_step", "wall_seconds", "cached", "key", "final_inducing",
                              "inducing_init") if k in r}


def _write(out: str, name: str, rows: List[dict], payload: dict):
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, f"{name}.csv"), rows)
    write_json(os.path.join(out, f"{name}.json"), payload)


def _settings_note(cfg: Config) -> str:
    gp_lr = cfg.gp_learning_rate or cfg.learning_rate
    return (f"{cfg.steps} steps x {cfg.batch_videos} videos, MLP {'x'.join(map(str, cfg.hidden))}, "
            f"Adam {cfg.learning_rate:g} (GP {gp_lr:g}), "
            + (f"init lengthscale {cfg.init_lengthscale:g}" if cfg.train_lengthscale
               else f"lengthscale fixed at {cfg.init_lengthscale:g}")
            + ("" if cfg.warm_start_m is None else
               f"; GP models warm-started by {cfg.warm_start_steps} steps of SVGP-VAE m={cfg.warm_start_m}"))


# --------------------------------------------------------------------------- commands
def _caption(fig, cfg: Config):
    """The run settings, wrapped to the figure's width below the axes; then ``tight_layout``."""
    import textwrap

    width_chars = int(fig.get_figwidth() * 15)
    lines = textwrap.wrap(_settings_note(cfg), width_chars)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7, va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.025 + 0.035 * len(lines) * 4 / fig.get_figheight(), 1, 1))


def _summaries(groups: Dict[str, List[dict]]) -> dict:
    """Mean/sd per group of runs: ``rmse``, ``final_lengthscale`` (GP models) and ``test_elbo``
    (over the runs that have it; older cached runs do not)."""
    return {
        "rmse": {name: mean_sd(r["rmse"] for r in g) for name, g in groups.items()},
        "final_lengthscale": {name: mean_sd(r["final_lengthscale"] for r in g) for name, g in groups.items()
                              if any(r["kind"] != "vae" for r in g)},
        "test_elbo": {name: mean_sd(r["test_elbo"] for r in g if "test_elbo" in r) for name, g in groups.items()
                      if any("test_elbo" in r for r in g)},
    }


def _groups(runs: List[dict], m_values) -> Dict[str, List[dict]]:
    """Runs by model: ``vae``, ``gpvae``, ``svgpvae_m<m>``."""
    groups = {"vae": [r for r in runs if r["kind"] == "vae"], "gpvae": [r for r in runs if r["kind"] == "gpvae"]}
    for m in m_values:
        groups[f"svgpvae_m{m}"] = [r for r in runs if r["kind"] == "svgpvae" and r["m"] == m]
    return groups


def cmd_rmse_vs_m(cfg: Config, cache: str, out: str, test) -> dict:
    from tqdm.auto import tqdm

    specs = [(s, "vae", None) for s in cfg.seeds] + [(s, "gpvae", None) for s in cfg.seeds]
    specs += [(s, "svgpvae", m) for s in cfg.seeds for m in cfg.m_values]
    runs = []
    for seed, kind, m in tqdm(specs, desc="rmse_vs_m runs", position=0):
        runs.append(train_run(kind, cfg, seed, m=m, cache_dir=cache, test=test))
    rows = [_run_summary(r) for r in runs]
    summary = _summaries(_groups(runs, cfg.m_values))
    table = summary["rmse"]

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ms = np.asarray(cfg.m_values)
    mean = np.array([table[f"svgpvae_m{m}"]["mean"] for m in ms])
    sd = np.array([table[f"svgpvae_m{m}"]["sd"] for m in ms])
    ax.errorbar(ms, mean, yerr=sd, marker="o", capsize=3, label="SVGP-VAE")
    for kind, colour, label in (("gpvae", "C2", "exact GP-VAE"), ("vae", "C3", "VAE")):
        st = table[kind]
        ax.axhline(st["mean"], color=colour, ls="--", label=label)
        ax.axhspan(st["mean"] - st["sd"], st["mean"] + st["sd"], color=colour, alpha=0.15)
    ax.set_xlabel("number of inducing points m")
    ax.set_ylabel("test RMSE (affine-aligned, path units)")
    ax.set_title(f"Moving ball: {len(cfg.seeds)} seed(s), mean ± sd", fontsize=10)
    ax.legend()
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "rmse_vs_m.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, **summary}


def cmd_trajectories(cfg: Config, cache: str, out: str, test) -> dict:
    from tqdm.auto import tqdm

    from ..metrics import affine_align

    seed = cfg.seeds[0]
    specs = [("vae", None), ("gpvae", None), ("svgpvae", cfg.trajectory_m)]
    runs = [train_run(k, cfg, seed, m=m, cache_dir=cache, test=test) for k, m in tqdm(specs, desc="trajectory runs", position=0)]
    n = min(cfg.show_videos, test.num_videos)
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), n, figsize=(2.6 * n, 2.6 * len(runs)), squeeze=False)
    rows = []
    for i, run in enumerate(runs):
        aligned = affine_align(run["means"][:n], test.paths[:n], per_video=True)
        name = "VAE" if run["kind"] == "vae" else "GP-VAE" if run["kind"] == "gpvae" else f"SVGP-VAE (m={run['m']})"
        for v in range(n):
            ax = axes[i, v]
            ax.plot(test.paths[v, :, 0], test.paths[v, :, 1], "k.-", lw=1, ms=3, label="true")
            ax.plot(aligned[v, :, 0], aligned[v, :, 1], ".-", color=f"C{i}", lw=1, ms=3, label="aligned posterior mean")
            ax.set_xlim(-2.3, 2.3)
            ax.set_ylim(2.3, -2.3)  # image convention: y points down
            ax.set_xticks([])
            ax.set_yticks([])
            if v == 0:
                ax.set_ylabel(f"{name}\nRMSE {run['rmse']:.3f}", fontsize=9)
            if i == 0:
                ax.set_title(f"test video {v}", fontsize=9)
            for t in range(NUM_FRAMES):
                rows.append({"model": run["kind"], "m": run["m"], "seed": seed, "video": v, "t": t,
                             "true_x": test.paths[v, t, 0], "true_y": test.paths[v, t, 1],
                             "aligned_x": aligned[v, t, 0], "aligned_y": aligned[v, t, 1]})
    axes[0, 0].legend(fontsize=6, loc="upper left")
    fig.suptitle("Moving ball test paths (black) and affine-aligned latent means", fontsize=9)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "trajectories.png"), dpi=130)
    plt.close(fig)
    return {"rows": rows, "runs": [_run_summary(r) for r in runs]}


def cmd_lengthscale(cfg: Config, cache: str, out: str, test) -> dict:
    from tqdm.auto import tqdm

    specs = [(s, "svgpvae", m) for m in cfg.lengthscale_m for s in cfg.seeds] + [(s, "gpvae", None) for s in cfg.seeds]
    runs = [train_run(k, cfg, s, m=m, cache_dir=cache, test=test) for s, k, m in tqdm(specs, desc="lengthscale runs", position=0)]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4))
    rows = []
    labels = [("svgpvae", m) for m in cfg.lengthscale_m] + [("gpvae", None)]
    for c, (kind, m) in enumerate(labels):
        group = [r for r in runs if r["kind"] == kind and r["m"] == m]
        steps = group[0]["history"]["step"]
        ls = np.stack([r["history"]["lengthscale"] for r in group])
        label = "exact GP-VAE" if kind == "gpvae" else f"SVGP-VAE m={m}"
        ax.plot(steps, ls.mean(0), color=f"C{c}", label=label)
        if len(group) > 1:
            ax.fill_between(steps, ls.min(0), ls.max(0), color=f"C{c}", alpha=0.2)
        for r in group:
            for s, value in zip(r["history"]["step"], r["history"]["lengthscale"]):
                rows.append({"model": kind, "m": m, "seed": r["seed"], "step": int(s), "lengthscale": float(value)})
    ax.axhline(2.0, color="k", ls=":", label="true lengthscale 2")
    if cfg.warm_start_m is not None:
        ax.axvline(cfg.warm_start_steps, color="0.5", ls="--", lw=1,
                   label=f"end of warm start (m={cfg.warm_start_m})")
    ax.set_xlabel("training step")
    ax.set_ylabel("kernel lengthscale (frames)")
    ax.set_title(f"Learned lengthscale ({len(cfg.seeds)} seed(s): mean, min-max band)", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "lengthscale.png"), dpi=130)
    plt.close(fig)
    final = {("gpvae" if k == "gpvae" else f"svgpvae_m{m}"): mean_sd([r["final_lengthscale"] for r in runs
                                                                    if r["kind"] == k and r["m"] == m])
             for k, m in labels}
    return {"rows": rows, "final_lengthscale": final, "runs": [_run_summary(r) for r in runs]}


def cmd_inducing(cfg: Config, cache: str, out: str, test) -> dict:
    from tqdm.auto import tqdm

    lo, hi = cfg.inducing_window
    init = np.linspace(lo, hi, cfg.inducing_m)
    runs = [train_run("svgpvae", cfg, s, m=cfg.inducing_m, inducing_init=init, cache_dir=cache, test=test)
            for s in tqdm(cfg.seeds, desc="inducing runs", position=0)]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(max(6, 5 * len(runs)), 4.3), squeeze=False)
    rows = []
    for ax, r in zip(axes[0], runs):
        steps, Z = r["history"]["step"], r["history"]["inducing"]
        ax.plot(steps, Z, color="C0", lw=1)
        ax.axhspan(lo, hi, color="C3", alpha=0.15, label="initial window")
        ax.set_ylim(-1, NUM_FRAMES)
        ax.set_xlabel("training step")
        ax.set_ylabel("inducing time (frames 0-29)")
        ax.set_title(f"m={cfg.inducing_m}, seed {r['seed']}: test RMSE {r['rmse']:.3f}", fontsize=9)
        ax.legend(fontsize=8, loc="upper left")
        for s, z in zip(steps, Z):
            rows.append({"seed": r["seed"], "step": int(s), **{f"z{j}": float(v) for j, v in enumerate(z)}})
    fig.suptitle("Inducing times during training from a bunched initialisation", fontsize=9)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "inducing.png"), dpi=130)
    plt.close(fig)
    spacing = [float(np.diff(np.sort(r["final_inducing"])).std() / np.diff(np.sort(r["final_inducing"])).mean())
               for r in runs]
    return {"rows": rows, "runs": [_run_summary(r) for r in runs], "initial_inducing": init.tolist(),
            "final_spacing_cv": spacing}


def _parse_model(spec: str):
    kind, _, m = spec.partition(":")
    if kind not in ("vae", "gpvae", "svgpvae") or (kind == "svgpvae") != bool(m):
        raise ValueError(f"model {spec!r}: use vae, gpvae or svgpvae:<m>")
    return kind, (int(m) if m else None)


def cmd_runs(cfg: Config, cache: str, out: str, test) -> dict:
    """Selected models (``--models vae gpvae svgpvae:10``) for every seed: RMSE, lengthscale, test ELBO."""
    from tqdm.auto import tqdm

    parsed = [(spec, *_parse_model(spec)) for spec in cfg.models]
    specs = [(seed, spec, kind, m) for seed in cfg.seeds for spec, kind, m in parsed]
    runs = []
    for seed, spec, kind, m in tqdm(specs, desc="runs", position=0):
        runs.append({**train_run(kind, cfg, seed, m=m, cache_dir=cache, test=test), "model": spec})
    groups = {spec: [r for r in runs if r["model"] == spec] for spec in cfg.models}
    summary = _summaries(groups)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * len(groups) + 2), 3.8))
    names = list(groups)
    ax.bar(range(len(names)), [summary["rmse"][n]["mean"] for n in names],
           yerr=[summary["rmse"][n]["sd"] for n in names], capsize=4, color=[f"C{i}" for i in range(len(names))])
    for i, n in enumerate(names):
        ax.plot([i] * len(groups[n]), [r["rmse"] for r in groups[n]], "k.", ms=5)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_ylabel("test RMSE (affine-aligned, path units)")
    ax.set_title(f"Moving ball: {len(cfg.seeds)} seed(s), mean ± sd (dots: seeds)", fontsize=10)
    _caption(fig, cfg)
    fig.savefig(os.path.join(out, "runs.png"), dpi=130)
    plt.close(fig)
    return {"rows": [{"model": r["model"], **_run_summary(r)} for r in runs], **summary}


COMMANDS = {"runs": cmd_runs, "rmse_vs_m": cmd_rmse_vs_m, "trajectories": cmd_trajectories, "lengthscale": cmd_lengthscale,
            "inducing": cmd_inducing}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m gpflow_svgpvae.experiments.moving_ball",
                                description="Moving-ball experiments of the SVGP-VAE paper.")
    p.add_argument("command", choices=sorted(COMMANDS))
    p.add_argument("--quick", action="store_true", help="small, fast settings (a couple of minutes)")
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--steps", type=int)
    p.add_argument("--models", nargs="+", help="models for `runs`: vae, gpvae, svgpvae:<m> (e.g. svgpvae:15)")
    p.add_argument("--m", type=int, nargs="+", dest="m_values", help="inducing-point counts for rmse_vs_m")
    p.add_argument("--lengthscale-m", type=int, nargs="+", help="inducing-point counts for lengthscale")
    p.add_argument("--trajectory-m", type=int)
    p.add_argument("--inducing-m", type=int)
    p.add_argument("--inducing-window", type=float, nargs=2)
    p.add_argument("--hidden", type=int, nargs="+")
    p.add_argument("--lr", type=float, dest="learning_rate")
    p.add_argument("--gp-lr", type=float, dest="gp_learning_rate")
    p.add_argument("--init-lengthscale", type=float)
    p.add_argument("--fix-lengthscale", action="store_false", dest="train_lengthscale", default=None,
                   help="keep the kernel lengthscale fixed at --init-lengthscale (default: trained)")
    p.add_argument("--warm-start-m", type=int,
                   help="warm start: train an SVGP-VAE with this many inducing points first, then each GP model "
                        "from its networks and lengthscale")
    p.add_argument("--warm-start-steps", type=int, help="steps of the warm-start phase (part of --steps)")
    p.add_argument("--test-videos", type=int)
    p.add_argument("--test-seed", type=int)
    p.add_argument("--record-every", type=int)
    p.add_argument("--threads", type=int, default=None, help="TensorFlow intra-op threads")
    p.add_argument("--out")
    p.add_argument("--cache")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from ..datasets.moving_ball import moving_ball_test_set

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    cfg = Config(**(QUICK if args.quick else {}))
    for field in dataclasses.fields(Config):
        value = getattr(args, field.name, None)
        if value is not None:
            setattr(cfg, field.name, tuple(value) if isinstance(value, list) else value)
    cfg = dataclasses.replace(cfg)  # re-runs the checks of Config.__post_init__
    for spec in cfg.models:
        try:
            _parse_model(spec)
        except ValueError as error:
            raise SystemExit(f"--models: {error}")
    suffix = "_quick" if args.quick else ""
    out = args.out or os.path.join("results", "moving_ball", args.command + suffix)
    cache = args.cache or os.path.join("results", "moving_ball", "runs" + suffix)
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    test = moving_ball_test_set(cfg.test_videos, seed=cfg.test_seed)
    result = COMMANDS[args.command](cfg, cache, out, test)
    wall = time.perf_counter() - start
    rows = result.pop("rows")
    payload = {"command": args.command, "argv": sys.argv if argv is None else list(argv), "quick": args.quick,
               "config": dataclasses.asdict(cfg), "git_commit": git_commit(), "wall_seconds": wall,
               "cache_dir": cache, **result}
    _write(out, args.command, rows, payload)
    for name in ("rmse", "final_lengthscale", "test_elbo"):
        for key, st in payload.get(name, {}).items():
            print(f"{name:>17} {key:>14}: {st['mean']:.4f} +- {st['sd']:.4f} (n={st['n']})")
    if "final_spacing_cv" in payload:
        print("final inducing spacing (sd/mean of gaps):", payload["final_spacing_cv"])
    print(f"wall time {wall:.0f} s")
    print(f"wrote {out}/{args.command}.png, .csv, .json")
    return payload


if __name__ == "__main__":
    main()
