"""Settings of a rotated-MNIST Table-1 run (:class:`Config`, defaults: the paper's) and the
cache key of a (model, seed) run (:func:`run_spec`, :func:`run_path`)."""

import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional, Sequence

from .common import is_positive_number, run_key

__all__ = ["Config", "MODELS", "EVAL_PLACEMENTS", "run_spec", "run_path"]

MODELS = ("cvae", "gppvae", "svgpvae", "deep_svigp")
EVAL_PLACEMENTS = ("affine", "fit")


@dataclass
class Config:
    """Settings of a Table-1 run (defaults: the paper's)."""

    epochs: int = 1000
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    models: Sequence[str] = MODELS
    digits: Sequence[int] = (3,)
    n_per_digit: int = 400
    data_seed: int = 0
    num_latent: int = 16
    num_inducing_per_angle: int = 2
    object_dim: int = 8
    object_init: str = "pca"
    # Scale of the initial object vectors: None is the paper's (raw PCA scores, whose columns
    # have sd 1.1-2.4 here; random N(0, 1.5^2)); a value s rescales the PCA scores to RMS s,
    # or draws the random vectors from N(0, s^2).
    object_scale: Optional[float] = None
    batch_size: int = 256
    learning_rate: float = 1e-3
    # Adam learning rate of the object vectors alone (their own optimiser); None: learning_rate,
    # as in the paper. Adam moves a parameter by about its learning rate per step, so vectors
    # initialised far from where training takes them need many steps at 1e-3.
    object_learning_rate: Optional[float] = None
    kappa_squared: float = 0.020
    geco_alpha: float = 0.99
    geco_nu: float = 1.0
    geco_lambda_bounds: Sequence[float] = (1e-6, 1e6)
    eval_every: int = 5
    deep_svigp_eval_steps: int = 30
    # How the SVGP-VAE places the eval instances before each evaluation: "affine" (the
    # least-squares map from initial to learned vectors of the training instances; the
    # paper's protocol) or "fit" (that map, then eval_fit_steps Adam steps fitting their
    # vectors to the eval context, SVGPVAE.fit_object_vectors). The map carries no
    # information when the initial vectors are random.
    eval_placement: str = "affine"
    eval_fit_steps: int = 50
    jit_compile: bool = False
    precision: str = "float32"
    num_plot: int = 10
    out: str = "results/rotated_mnist"
    notes: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("object_scale", "object_learning_rate"):
            value = getattr(self, name)
            if value is not None and not is_positive_number(value):
                raise ValueError(f"{name} must be a positive number or None; got {value!r}")
        if self.eval_placement not in EVAL_PLACEMENTS:
            raise ValueError(f"eval_placement must be one of {EVAL_PLACEMENTS}; got {self.eval_placement!r}")
        if self.eval_placement == "fit" and "gppvae" in self.models:
            raise ValueError(
                "eval_placement='fit' is implemented for the SVGP-VAE (Deep SVIGP always fits "
                "its eval vectors); leave gppvae out of models or use eval_placement='affine'."
            )
        if self.eval_fit_steps < 0:
            raise ValueError(f"eval_fit_steps must be >= 0; got {self.eval_fit_steps}")


# Config fields that do not change what a single (model, seed) run computes.
_NOT_RUN_SETTINGS = ("seeds", "models", "out", "notes", "num_plot")
# Options added after runs were cached, with the value every earlier run had: left out of the
# spec at that value, so earlier runs keep their cache keys.
_ADDED_SETTINGS = {
    "precision": "float32",
    "object_scale": None,
    "object_learning_rate": None,
    "eval_placement": "affine",
    "eval_fit_steps": 50,
}


def run_spec(name: str, seed: int, cfg: Config) -> dict:
    """Everything a (model, seed) run depends on; its hash names the run's cache file."""
    settings = {
        k: v
        for k, v in asdict(cfg).items()
        if k not in _NOT_RUN_SETTINGS and not (k in _ADDED_SETTINGS and v == _ADDED_SETTINGS[k])
    }
    return {"model": name, "seed": int(seed), **settings}


def run_path(name: str, seed: int, cfg: Config) -> str:
    """Where :func:`run_cached` keeps the run: ``cfg.out/runs/<model>_seed<s>_<hash of run_spec>``
    (without the ``.json`` / ``.npz`` suffix)."""
    return os.path.join(cfg.out, "runs", run_key(f"{name}_seed{seed}", run_spec(name, seed, cfg)))
