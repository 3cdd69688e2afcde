"""Settings of a SPRITES run (:class:`Config`, defaults: the paper's), the paper's figures
(:data:`PAPER`), the command line's defaults (:data:`BEST_SETTINGS`; :data:`PAPER_SETTINGS` with
``--paper``), and the rules derived from them: the decoder's GP columns
(:func:`decoder_gp_columns`) and a run's context weight (:func:`run_context_scale`); and the
command line that sets them (:func:`config_from_args`)."""

import argparse
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

from gpflow_svgpvae.networks.precision import PRECISIONS
from svgpvae_paper.networks.sprites import MODULATIONS

from .common import SITE_PARAMETRIZATIONS, is_positive_number

__all__ = [
    "Config",
    "PAPER",
    "BEST_SETTINGS",
    "PAPER_SETTINGS",
    "MODELS",
    "DECODER_GP_INPUTS",
    "LEARNING_RATE_DECAYS",
    "decoder_gp_columns",
    "run_context_scale",
    "learning_rate",
    "config_from_args",
]

MODELS = ("svgpvae", "cvae")

#: ``--learning-rate-decay``: how Adam's rate changes over the run (None: constant, the paper's).
LEARNING_RATE_DECAYS = ("cosine",)

#: ``--decoder-gp-inputs``: which of the GP inputs ``[style (d), pose vector (Q)]`` the SVGP-VAE's decoder reads.
DECODER_GP_INPUTS = ("style", "pose", "style_pose")


def decoder_gp_columns(choice: Optional[str], style_dim: int, pose_dim: int) -> Optional[list]:
    """Columns of the GP inputs ``[style, pose vector]`` for ``decoder_gp_inputs`` (``None``: none)."""
    if choice is None:
        return None
    columns = {
        "style": range(style_dim),
        "pose": range(style_dim, style_dim + pose_dim),
        "style_pose": range(style_dim + pose_dim),
    }
    if choice not in columns:
        raise ValueError(f"decoder_gp_inputs must be None or one of {DECODER_GP_INPUTS}; got {choice!r}")
    return list(columns[choice])


def learning_rate(cfg: "Config", steps_per_epoch: int):
    r"""Adam's learning rate of a run: ``cfg.learning_rate``, or with ``learning_rate_decay="cosine"``
    :math:`\eta_t = \eta_0 (1 + \cos(\pi t / T)) / 2` over the run's :math:`T` steps (to 0 at the end)."""
    if cfg.learning_rate_decay is None:
        return cfg.learning_rate
    if cfg.learning_rate_decay != "cosine":
        raise ValueError(
            f"learning_rate_decay must be None or one of {LEARNING_RATE_DECAYS}; got {cfg.learning_rate_decay!r}"
        )
    from gpflow.keras import tf_keras

    return tf_keras.optimizers.schedules.CosineDecay(cfg.learning_rate, decay_steps=int(cfg.epochs * steps_per_epoch))


def run_context_scale(cfg: "Config", num_train_characters: int) -> float:
    """The context weight of a run: ``cfg.context_scale``, else N / b (the training minibatches')."""
    if cfg.context_scale is not None:
        return float(cfg.context_scale)
    return num_train_characters / cfg.characters_per_batch  # (C P) / (characters per batch x P)


PAPER = {"test_mse": 0.0079, "test_mse_sd": 0.0009, "seconds_per_epoch": 51.8, "hardware": "GPU (paper)"}

#: The command's defaults (without ``--paper``): the settings of the best committed SPRITES result,
#: two seeds (docs/results.md "Where SPRITES stands"; ``docs/results/sprites/mix_demod_f32_k002_e40_seed*/``),
#: where the SVGP-VAE keeps the characters' colours and is at or below the CVAE in MSE: the decoder
#: reads the style and pose vector and mixes its channels by the code (demodulated), 32 filters, a
#: 64-dim style, GECO's kappa^2 = 0.002, the context weight chosen on validation characters, the
#: model of the best validation epoch tested, 40 epochs after 20 of representation pretraining. The
#: two options of the SVGP-VAE alone (``decoder_gp_inputs``, ``context_scale_grid``) are left out
#: for ``--model cvae``, as its runs of that table were.
BEST_SETTINGS = dict(
    epochs=40,
    pretrain_epochs=20,
    style_dim=64,
    decoder_gp_inputs="style_pose",
    decoder_modulation="mix_demodulated",
    filters=32,
    kappa_squared=0.002,
    context_scale_grid=(1000.0, 3000.0, 10000.0),
    eval_every=5,
)
#: ``--paper``: the paper's protocol (the defaults of :class:`Config`).
PAPER_SETTINGS = dict(
    epochs=50,
    pretrain_epochs=400,
    style_dim=16,
    decoder_gp_inputs=None,
    decoder_modulation=None,
    filters=16,
    kappa_squared=0.0075,
    context_scale_grid=None,
    eval_every=None,
)


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
    decoder_modulation: Optional[str] = (
        None  # the code also enters every decoder layer: "shift", "scale_shift", "mix", "mix_demodulated"
    )
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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.sprites",
        description="SVGP-VAE conditional generation on (procedural) SPRITES",
    )
    p.add_argument(
        "--model",
        choices=MODELS,
        default="svgpvae",
        help="svgpvae (default) or cvae: the conditional-VAE baseline (decoder on [code, style of the "
        "context frames, pose vector]; same networks, condition and GECO)",
    )
    p.add_argument(
        "--paper",
        action="store_true",
        help="the paper's protocol (50 epochs, 400 pretraining epochs, 16 filters, 16-dim style, the decoder "
        "on the code alone, kappa^2 = 0.0075, s = N/b, the last epoch's model) instead of the default, the "
        "best committed settings (BEST_SETTINGS); options given explicitly still win",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="24 characters (18 train), 3 epochs, 2 pretraining epochs, 6 characters per batch (~1-2 min)",
    )
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default 40; --paper: 50; --quick: 3)")
    p.add_argument("--num-characters", type=int, default=None, help="total characters (default 1296; --quick: 24)")
    p.add_argument(
        "--num-train-characters",
        type=int,
        default=None,
        help="training characters (default 1000 of 1296, else the same fraction)",
    )
    p.add_argument(
        "--pretrain-epochs",
        type=int,
        default=None,
        help="classifier pretraining (default 20; --paper: 400; --quick: 2)",
    )
    p.add_argument("--characters-per-batch", type=int, default=None, help="default 10 (x 50 poses = 500); --quick: 6")
    p.add_argument("--num-latent-gps", type=int, default=64, dest="latent_dim", help="latent channels L")
    p.add_argument("--num-inducing", type=int, default=72)
    p.add_argument(
        "--style-dim",
        type=int,
        default=None,
        help="size of the representation network's style vector (default 64; --paper: 16)",
    )
    p.add_argument(
        "--filters",
        type=int,
        default=None,
        help="conv filters per layer of the encoder and decoder (default 32; --paper: 16)",
    )
    p.add_argument(
        "--style-reduction",
        choices=("sum", "mean"),
        default=None,
        help="style = sum (default, the paper's) or mean of the frames' representations; the CVAE's "
        "default is the mean, since its decoder sees the style's size and a test character has "
        "36 context frames against 50 frames in training",
    )
    p.add_argument(
        "--decoder-modulation",
        choices=[m for m in MODULATIONS if m] + ["none"],
        default=None,
        help="feed the decoder's input to every decoder layer: shift, scale and shift (FiLM) or a "
        "full channel mix generated by it (mix: networks.LatentMixing; mix_demodulated: its "
        "kernel's columns scaled to unit length, so that it cannot amplify); "
        "networks.sprites_decoder; not in the paper (default mix_demodulated; --paper: none; "
        "--decoder-modulation none: none)",
    )
    p.add_argument(
        "--palette-colours",
        type=int,
        default=None,
        help="decoder output as a per-pixel mixture of K colours computed from the code "
        "(networks.sprites_decoder; not in the paper)",
    )
    p.add_argument(
        "--decoder-gp-inputs",
        choices=DECODER_GP_INPUTS + ("none",),
        default=None,
        help="the SVGP-VAE's decoder also reads these GP inputs beside the code, as the CVAE's decoder "
        "reads its condition (SVGPVAE(decoder_gp_columns=...); not in the paper; the style is then "
        "mean-reduced by default; default style_pose; --paper or none: the code alone)",
    )
    p.add_argument(
        "--pose-bias",
        type=float,
        default=None,
        help="initial constant added to the pose kernel so that pose-invariant attributes (colours) "
        "are representable (kernels.sprites_kernel; not in the paper)",
    )
    p.add_argument(
        "--context-scale",
        type=float,
        default=None,
        help="weight s of each test context frame in the posterior (default: N / batch size, the "
        "training minibatches' weight; 1 conditions on exactly the 36 frames)",
    )
    p.add_argument(
        "--context-scale-grid",
        type=float,
        nargs="+",
        default=None,
        metavar="S",
        help="choose the context weight s among these by the generation MSE of held-out validation "
        "characters (not training, not test; --num-validation-characters; default 1000 3000 10000; "
        "--paper, or --context-scale given: none)",
    )
    p.add_argument(
        "--num-validation-characters",
        type=int,
        default=None,
        help="validation characters for --context-scale-grid and --eval-every (default 100; --quick: 6)",
    )
    p.add_argument(
        "--eval-every",
        type=int,
        default=None,
        metavar="K",
        help="score the generations of the validation characters every K epochs and after the last "
        "(the SVGP-VAE's at the best s of --context-scale-grid, else at the run's s), and test the "
        "model of the epoch with the smallest validation MSE (default 5; --paper: no selection, the last "
        "epoch's model; 0: no selection)",
    )
    p.add_argument(
        "--site-parametrization",
        choices=SITE_PARAMETRIZATIONS,
        default="variance",
        help="SVGP-VAE encoder head: site mean and variance (the paper's) or natural parameters",
    )
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument(
        "--learning-rate-decay",
        choices=LEARNING_RATE_DECAYS,
        default=None,
        help="cosine: Adam's rate decays from --learning-rate to 0 over the run's steps (default: "
        "constant, the paper's; not in the paper)",
    )
    p.add_argument("--kappa-squared", type=float, default=None, help="GECO's kappa^2 (default 0.002; --paper: 0.0075)")
    p.add_argument("--geco-nu", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument(
        "--frames",
        choices=("memory", "render"),
        default="memory",
        help="keep training frames in RAM as uint8 (614 MB for the paper) or render per batch",
    )
    p.add_argument("--jit", action="store_true", help="compile the training step with XLA (slower on CPU here)")
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="Keras policy of the encoder, decoder and representation networks (mixed_bfloat16: "
        "bfloat16 convolutions on CPUs with AVX512-BF16 or AMX; the GP block stays float64)",
    )
    p.add_argument("--out", default="results/sprites")
    p.add_argument("--quiet", action="store_true")
    return p


def _resolve_presets(args: argparse.Namespace) -> None:
    """Fill the options not given on the command line from :data:`BEST_SETTINGS` (or
    :data:`PAPER_SETTINGS` with ``--paper``; ``--quick``'s epochs over both), in place; ``none``
    and ``--eval-every 0`` switch an option of the best settings off."""
    preset = dict(PAPER_SETTINGS if args.paper else BEST_SETTINGS)
    if args.model != "svgpvae":  # the SVGP-VAE's own options
        preset.update(decoder_gp_inputs=None, context_scale_grid=None)
    if args.quick:
        preset.update(epochs=3, pretrain_epochs=2)
    if args.context_scale is not None:  # a fixed weight replaces the grid
        preset["context_scale_grid"] = None
    for name, value in preset.items():
        if getattr(args, name) is None:
            setattr(args, name, list(value) if isinstance(value, tuple) else value)
    for name in ("decoder_gp_inputs", "decoder_modulation"):
        if getattr(args, name) == "none":
            setattr(args, name, None)
    if args.eval_every == 0:
        args.eval_every = None


def config_from_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The :class:`Config` of a command line: :data:`BEST_SETTINGS` (:data:`PAPER_SETTINGS` with
    ``--paper``), the ``--quick`` sizes, then every option given explicitly."""
    parser = _parser()
    args = parser.parse_args(argv)
    explicit_gp_inputs = args.decoder_gp_inputs not in (None, "none")
    if args.eval_every is not None and args.eval_every < 0:
        parser.error(f"--eval-every must be a positive integer (0: no selection); got {args.eval_every}")
    _resolve_presets(args)
    if args.palette_colours is not None and args.palette_colours < 1:
        parser.error(f"--palette-colours must be a positive integer; got {args.palette_colours}")
    if args.filters < 1:
        parser.error(f"--filters must be a positive integer; got {args.filters}")
    if args.style_dim < 1:
        parser.error(f"--style-dim must be a positive integer; got {args.style_dim}")
    if explicit_gp_inputs and args.model != "svgpvae":
        parser.error("--decoder-gp-inputs is an option of the SVGP-VAE (the CVAE's decoder reads its condition)")
    if args.context_scale_grid is not None:
        if args.model != "svgpvae":
            parser.error("--context-scale-grid is an option of the SVGP-VAE (the CVAE has no context weight)")
        if args.context_scale is not None:
            parser.error("give --context-scale or --context-scale-grid, not both")
        if not all(map(is_positive_number, args.context_scale_grid)):
            parser.error(f"--context-scale-grid takes positive numbers; got {args.context_scale_grid}")
    if args.num_validation_characters is not None and args.num_validation_characters < 1:
        parser.error(f"--num-validation-characters must be a positive integer; got {args.num_validation_characters}")
    if args.pose_bias is not None and not args.pose_bias > 0:
        parser.error(f"--pose-bias must be a positive number; got {args.pose_bias}")
    quick = args.quick
    n = args.num_characters if args.num_characters is not None else (24 if quick else 1296)
    if args.num_train_characters is not None:
        n_train = args.num_train_characters
    elif quick and args.num_characters is None:
        n_train = 18
    else:
        n_train = 1000 if n == 1296 else int(round(n * 1000 / 1296))
    n_train = int(min(max(n_train, 1), n - 1))
    return Config(
        model=args.model,
        epochs=args.epochs,
        num_characters=n,
        num_train_characters=n_train,
        pretrain_epochs=args.pretrain_epochs,
        characters_per_batch=args.characters_per_batch
        if args.characters_per_batch is not None
        else (6 if quick else 10),
        num_latent=args.latent_dim,
        filters=args.filters,
        style_dim=args.style_dim,
        num_inducing=args.num_inducing,
        style_reduction=args.style_reduction
        or ("mean" if args.model == "cvae" or (args.decoder_gp_inputs or "").startswith("style") else "sum"),
        decoder_gp_inputs=args.decoder_gp_inputs,
        decoder_modulation=args.decoder_modulation,
        palette_colours=args.palette_colours,
        pose_bias=args.pose_bias,
        context_scale=args.context_scale,
        context_scale_grid=args.context_scale_grid,
        eval_every=args.eval_every,
        num_validation_characters=(
            args.num_validation_characters if args.num_validation_characters is not None else (6 if quick else 100)
        ),
        site_parametrization=args.site_parametrization,
        learning_rate=args.learning_rate,
        learning_rate_decay=args.learning_rate_decay,
        kappa_squared=args.kappa_squared,
        geco_nu=args.geco_nu,
        seed=args.seed,
        data_seed=args.data_seed,
        frames=args.frames,
        jit_compile=args.jit,
        precision=args.precision,
        num_reconstruction_frames=300 if quick else 1000,
        num_plot_characters=4 if quick else 6,
        out=args.out,
    )
