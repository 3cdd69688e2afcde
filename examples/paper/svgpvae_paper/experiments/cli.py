"""``svgpvae``: one entry point for the paper's experiments.

``svgpvae <experiment> [<command>] [options]`` runs
``python -m svgpvae_paper.experiments.<experiment> [<command>] [options]``.
The experiments, their commands and a one-line purpose of each are listed in
one place, :data:`SUBCOMMANDS`, from which ``svgpvae --help`` is printed (a
test checks the list against the experiments' own argument parsers).

``svgpvae --help`` and the checks of the experiment and command names run
without importing TensorFlow, so they answer at once. Running an experiment
(or ``svgpvae <experiment> --help``, which prints the experiment's own
options) imports TensorFlow first, with the lines its C++ side prints while
loading (:data:`STARTUP_NOISE`) kept from the terminal; anything else it
prints, and everything the experiment prints, still reaches stderr.
"""

import importlib
import os
import re
import sys
import tempfile
from typing import Dict, List, NamedTuple, Optional, Sequence

__all__ = [
    "SUBCOMMANDS",
    "EXPERIMENTS",
    "STARTUP_NOISE",
    "help_text",
    "prefer_onednn",
    "import_tensorflow_quietly",
    "main",
]


class Experiment(NamedTuple):
    """One ``svgpvae`` subcommand: the module ``svgpvae_paper.experiments.<name>``."""

    #: One-line purpose.
    summary: str
    #: The experiment's commands (its first positional argument) -> one-line purpose, in the
    #: order ``--help`` lists them; empty when the experiment takes no command.
    commands: Dict[str, str]


#: Every ``svgpvae`` subcommand and its commands; ``--help``, the name checks and the tests
#: read this table only.
SUBCOMMANDS: Dict[str, Experiment] = {
    "moving_ball": Experiment(
        "moving-ball videos (Pearce 2019): latent paths of VAE, GP-VAE and SVGP-VAE",
        {
            "rmse_vs_m": "path RMSE of VAE, GP-VAE, SVGP-VAE against m inducing points",
            "trajectories": "test paths and the affine-aligned latent means",
            "lengthscale": "learned lengthscale over training (SVGP-VAE, GP-VAE)",
            "inducing": "inducing times over training from a bunched start",
            "runs": "chosen --models for every seed: RMSE, lengthscale, ELBO",
        },
    ),
    "rotated_mnist": Experiment(
        "rotated MNIST, Table 1: conditional generation at an unseen angle",
        {
            "table1": "Table 1: CVAE, GPPVAE, SVGP-VAE, Deep SVIGP test MSE",
            "summary": "one table from several table1 folders (DIR ... --out DIR)",
        },
    ),
    "rotated_mnist_figures": Experiment(
        "rotated-MNIST figures beyond Table 1 (the sweeps share a cache of runs)",
        {
            "runtime": "test MSE against seconds per epoch (SVGP-VAE m, GPPVAE Q)",
            "digits": "test MSE, seconds per epoch against the number of digits",
            "batch_size": "test MSE against the batch size b",
            "num_inducing": "test MSE against the number of inducing points m",
            "bias": "relative bias of the minibatch inducing posterior mean",
            "tsne": "t-SNE of the encoder means, by digit and by angle",
            "init": "PCA against random initialisation of the object vectors",
            "convergence": "SVGP-VAE test MSE every few epochs during training",
        },
    ),
    "sprites": Experiment("conditional generation of unseen characters on procedural SPRITES", {}),
    "sprites_diagnostics": Experiment(
        "where a trained sprites run loses the characters' style (--run DIR; or --decoder-study-only)", {}
    ),
    "sprites_context_scale": Experiment("a finished sprites run's context weight, chosen on validation characters", {}),
    "sprites_summary": Experiment("one accuracy table and figure from several finished sprites runs (RUN ...)", {}),
    "hmnist": Experiment("imputation on Healing MNIST (--long: T = 100; --timing: s/epoch vs T)", {}),
    "selection": Experiment("model selection for imputation: select's grid scored on held-out and on test entries", {}),
    "defaults": Experiment(
        "the library's training defaults against their alternatives (generated imputation data)", {}
    ),
    "real_imputation": Experiment(
        "imputation of real sensor sequences (aeon's wheel): baselines, VAE family, PyPOTS", {}
    ),
}

#: The experiment names, in the order ``--help`` lists them.
EXPERIMENTS = tuple(SUBCOMMANDS)

#: Lines TensorFlow's C++ side prints while it loads: informational, and printed before its
#: logging is set up, so ``TF_CPP_MIN_LOG_LEVEL`` does not hide all of them. Only these are
#: dropped; any other line printed during the import (a real error) is passed on.
STARTUP_NOISE = tuple(
    re.compile(pattern)
    for pattern in (
        r"All log messages before absl::InitializeLog\(\) is called are written to STDERR",
        r"\bport\.cc:\d+\] oneDNN custom operations are on",
        r"\bcudart_stub\.cc:\d+\]",
        r"Could not find cuda drivers on your machine",
        # without a GPU driver, when the devices are first listed (done during the import, below)
        r"\bcuda_platform\.cc:\d+\] failed call to cuInit",
        r"\bcpu_feature_guard\.cc:\d+\]",
        # second line of the cpu_feature_guard message
        r"^To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$",
    )
)

_PROG = "svgpvae"
_USAGE = f"usage: {_PROG} <experiment> [<command>] [--quick] [--paper] [options ...]"


def help_text() -> str:
    """The text of ``svgpvae --help``: every experiment and command, with its purpose."""
    width = 2 + max(len(f"{name} {command}") for name, e in SUBCOMMANDS.items() for command in e.commands)
    lines = [
        _USAGE,
        f"       {_PROG} <experiment> --help    all options of one experiment (imports TensorFlow)",
        "",
        "The experiments of the SVGP-VAE paper (Jazbec et al., AISTATS 2021). Each writes a",
        "results folder (configuration, metrics as JSON and CSV, figures) and caches its",
        "training runs; --quick runs small settings in a few minutes. The default settings of",
        "hmnist, sprites, moving_ball and rotated_mnist are those of their best committed results",
        "(docs/results.md); --paper runs the paper's protocol instead.",
        "",
        "experiments and their commands:",
    ]
    for name, experiment in SUBCOMMANDS.items():
        choices = " {" + ",".join(experiment.commands) + "}" if experiment.commands else ""
        lines += [f"  {name}{choices}", f"      {experiment.summary}"]
        lines += [f"    {f'{name} {command}':<{width}}{purpose}" for command, purpose in experiment.commands.items()]
    return "\n".join(lines) + "\n"


def prefer_onednn() -> None:
    """Ask TensorFlow for its oneDNN CPU kernels (``TF_ENABLE_ONEDNN_OPTS=1``) unless the user chose.

    TensorFlow 2.21 turns them on by default only on CPUs with AVX-512 and similar
    features; on an AVX2 CPU (as on one host type of this project's machines) they are
    off, and the SPRITES training step then takes about twice as long: 1095 against
    561 ms (``benchmarks/README.md``). Takes effect only before TensorFlow is imported.
    oneDNN may change float32 results by round-off (a different order of operations).
    """
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def import_tensorflow_quietly() -> None:
    """Import TensorFlow without its start-up lines on stderr.

    Those lines are written by C++ straight to file descriptor 2, below Python's
    ``sys.stderr``, so fd 2 itself points to a temporary file during the import; then the
    captured lines other than :data:`STARTUP_NOISE` are written to ``sys.stderr``. Sets
    ``TF_CPP_MIN_LOG_LEVEL=2`` unless the user chose a level, which quietens TensorFlow's
    later informational logging in the same way, and :func:`prefer_onednn`.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        return
    prefer_onednn()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (stderr closed): nothing can reach the user anyway
        import tensorflow  # noqa: F401

        return
    with tempfile.TemporaryFile() as captured:
        try:
            sys.stderr.flush()  # what Python printed before belongs before the import
            os.dup2(captured.fileno(), 2)
            try:
                import tensorflow

                # Listing the devices initialises the CUDA platform, which logs a failure on
                # machines without a GPU driver; doing it here keeps that line with the other
                # start-up noise. It does not initialise the runtime, so an experiment can
                # still set thread counts or GPU memory growth.
                tensorflow.config.list_physical_devices()
            finally:
                sys.stderr.flush()  # Python-level warnings of the import go to the file too
                os.dup2(saved, 2)
        finally:
            os.close(saved)
            captured.seek(0)
            kept = [
                line
                for line in captured.read().decode(errors="replace").splitlines(keepends=True)
                if line.strip() and not any(pattern.search(line.rstrip("\n")) for pattern in STARTUP_NOISE)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def _error(message: str, valid: Sequence[str], given: str) -> int:
    import difflib

    close = difflib.get_close_matches(given, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    print(
        f"{_USAGE}\n{_PROG}: error: {message}{hint}; choose one of {', '.join(valid)}\n"
        f"({_PROG} --help lists them with their purpose)",
        file=sys.stderr,
    )
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``svgpvae`` with the arguments ``argv`` (default ``sys.argv[1:]``).

    :returns: the exit code: 0, or 2 for a missing or unknown experiment or command (the
        experiment's own parser exits with 2 on its options, through :class:`SystemExit`).
    """
    args: List[str] = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(help_text(), end="")
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        return _error(f"unknown experiment {name!r}", EXPERIMENTS, name)
    commands = list(SUBCOMMANDS[name].commands)
    # The command is the first positional argument, so a first word that is not an option must
    # be one; checked here so that a typo does not wait for TensorFlow to load.
    if commands and not rest:
        return _error(f"{name}: missing command", commands, "")
    if commands and not rest[0].startswith("-") and rest[0] not in commands:
        return _error(f"{name}: unknown command {rest[0]!r}", commands, rest[0])
    import_tensorflow_quietly()
    module = importlib.import_module(f"svgpvae_paper.experiments.{name}")
    module.main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
