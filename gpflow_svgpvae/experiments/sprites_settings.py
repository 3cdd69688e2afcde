"""Settings of a SPRITES run (:class:`Config`, defaults: the paper's), the paper's figures
(:data:`PAPER`), and the rules derived from them: the decoder's GP columns
(:func:`decoder_gp_columns`) and a run's context weight (:func:`run_context_scale`)."""
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

__all__ = ["Config", "PAPER", "MODELS", "DECODER_GP_INPUTS", "LEARNING_RATE_DECAYS", "decoder_gp_columns",
           "run_context_scale", "learning_rate"]

MODELS = ("svgpvae", "cvae")

#: ``--learning-rate-decay``: how Adam's rate changes over the run (None: constant, the paper's).
LEARNING_RATE_DECAYS = ("cosine",)

#: ``--decoder-gp-inputs``: which of the GP inputs ``[style (d), pose vector (Q)]`` the SVGP-VAE's decoder reads.
DECODER_GP_INPUTS = ("style", "pose", "style_pose")


def decoder_gp_columns(choice: Optional[str], style_dim: int, pose_dim: int) -> Optional[list]:
    """Columns of the GP inputs ``[style, pose vector]`` for ``decoder_gp_inputs`` (``None``: none)."""
    if choice is None:
        return None
    columns = {"style": range(style_dim), "pose": range(style_dim, style_dim + pose_dim),
               "style_pose": range(style_dim + pose_dim)}
    if choice not in columns:
        raise ValueError(f"decoder_gp_inputs must be None or one of {DECODER_GP_INPUTS}; got {choice!r}")
    return list(columns[choice])

def learning_rate(cfg: "Config", steps_per_epoch: int):
    """Adam's learning rate of a run: ``cfg.learning_rate``, or with ``learning_rate_decay="cosine"``
    :math:`\eta_t = \eta_0 (1 + \cos(\pi t / T)) / 2` over the run's :math:`T` steps (to 0 at the end)."""
    if cfg.learning_rate_decay is None:
        return cfg.learning_rate
    if cfg.learning_rate_decay != "cosine":
        raise ValueError(f"learning_rate_decay must be None or one of {LEARNING_RATE_DECAYS}; "
                         f"got {cfg.learning_rate_decay!r}")
    from gpflow.keras import tf_keras

    return tf_keras.optimizers.schedules.CosineDecay(cfg.learning_rate, decay_steps=int(cfg.epochs * steps_per_epoch))


def run_context_scale(cfg: "Config", num_train_characters: int) -> float:
    """The context weight of a run: ``cfg.context_scale``, else N / b (the training minibatches')."""
    if cfg.context_scale is not None:
        return float(cfg.context_scale)
    return num_train_characters / cfg.characters_per_batch  # (C P) / (characters per batch x P)


PAPER = {"test_mse": 0.0079, "test_mse_sd": 0.0009, "seconds_per_epoch": 51.8, "hardware": "GPU (paper)"}


@dataclass
class Config:
    """Settings of a SPRITES run (defaults: the paper's)."""

    model: str = "svgpvae"  # or "cvae": the conditional-VAE baseline with the same networks and condition
    epochs: int = 50
    num_characters: int = 1296
    num_train_characters: int = 1000
    train_poses_per_character: int = 50
    num_context_poses: int = 36
    data_seed: int = 0
    seed: int = 0
    num_latent: int = 64
    filters: int = 16  # conv filters per layer of encoder and decoder (the paper's 16)
    num_inducing: int = 72
    style_dim: int = 16
    pose_dim: int = 8
    style_reduction: str = "sum"
    characters_per_batch: int = 10
    learning_rate: float = 1e-3
    learning_rate_decay: Optional[str] = None  # None: constant (the paper's); "cosine": to 0 over the run's steps
    kappa_squared: float = 0.0075
    geco_alpha: float = 0.99
    geco_nu: float = 1.0
    geco_lambda_bounds: Sequence[float] = (1e-6, 1e6)
    pretrain_epochs: int = 400
    pretrain_batch_size: int = 500
    pretrain_learning_rate: float = 1e-3
    noise_variance: float = 1e-3
    pose_bias: Optional[float] = None  # constant added to the pose kernel (kernels.sprites_kernel); None: paper
    jitter: float = 1e-6
    jit_compile: bool = False
    precision: str = "float32"  # Keras policy of the networks (networks.PRECISIONS); the GP block stays float64
    decoder_modulation: Optional[str] = None  # the code also enters every decoder layer: "shift", "scale_shift", "mix", "mix_demodulated"
    palette_colours: Optional[int] = None  # decoder output: softmax mixture of K colours from the code; None: paper
    decoder_gp_inputs: Optional[str] = None  # the decoder also reads these GP inputs: "style", "pose", "style_pose"
    site_parametrization: str = "variance"  # SVGP-VAE encoder head (networks.GaussianSiteHead): or "natural"
    context_scale: Optional[float] = None  # weight of each context frame at test; None: N / batch size (training's)
    context_scale_grid: Optional[Sequence[float]] = None  # choose the weight among these on validation characters
    num_validation_characters: int = 100  # held-out characters (not train, not test) for context_scale_grid, eval_every
    eval_every: Optional[int] = None  # score the validation characters every K epochs; test the best epoch's model
    frames: str = "memory"  # "memory": uint8 array in RAM; "render": render each batch
    num_reconstruction_frames: int = 1000  # training frames sampled for the reconstruction style diagnostic
    num_plot_characters: int = 6
    num_plot_poses: int = 12
    out: str = "results/sprites"
    notes: Dict[str, str] = field(default_factory=dict)
