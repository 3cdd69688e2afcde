r"""The context weight :math:`s` of a finished SPRITES run, chosen on validation characters.

Usage::

    svgpvae sprites_context_scale --run results/sprites --scales 100 300 1000 3000
        [--num-validation-characters 100] [--out results/sprites/context_scale]

An unseen character is generated from the GP posterior on its 36 encoded context
frames, each weighted :math:`s`; the run used :math:`s = N/b` (or
``--context-scale``). This command restores the run's model (``config.json`` and
the ``model`` checkpoint), picks :math:`s` among ``--scales`` by the generation
MSE of *validation* characters (styles neither in training nor in the test set,
:func:`~svgpvae_paper.datasets.sprites.sprites` with ``num_validation_characters``;
:func:`~svgpvae_paper.experiments.sprites_generation.choose_context_scale`), and
then scores the test characters once, at the chosen :math:`s`, as the run does
(MSE of the decoded mean, style accuracy). The same choice inside a run:
``svgpvae sprites --context-scale-grid ...``.

Written to ``--out``: ``metrics.json`` (the validation curve, the chosen
:math:`s`, the test scores at it and at the run's :math:`s`, the git commit).
"""

import argparse
import json
import os
import sys
import time
from typing import Optional, Sequence

import numpy as np

from .common import command_argv, git_commit, is_positive_number, write_json
from .sprites_diagnostics import load_run
from .sprites_generation import _mse, choose_context_scale, generate
from .sprites_settings import run_context_scale
from .sprites_style import format_style, style_scores

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m svgpvae_paper.experiments.sprites_context_scale",
        description="choose a finished sprites run's context weight s on validation "
        "characters, then score the test characters at it",
    )
    p.add_argument("--run", required=True, help="output folder of a sprites run (config.json, model checkpoint)")
    p.add_argument("--scales", type=float, nargs="+", required=True, metavar="S", help="candidate weights s > 0")
    p.add_argument("--num-validation-characters", type=int, default=100)
    p.add_argument("--out", default=None, help="default: <run>/context_scale")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: Optional[Sequence[str]] = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if not all(map(is_positive_number, args.scales)):
        parser.error(f"--scales takes positive numbers; got {args.scales}")
    if args.num_validation_characters < 1:
        parser.error(f"--num-validation-characters must be a positive integer; got {args.num_validation_characters}")
    if not os.path.isfile(os.path.join(args.run, "config.json")):
        parser.error(f"--run {args.run}: no config.json (not the folder of a sprites run)")
    with open(os.path.join(args.run, "config.json")) as f:
        if json.load(f).get("model", "svgpvae") != "svgpvae":
            parser.error("the run is not an SVGP-VAE run (the CVAE has no context weight)")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    out = args.out or os.path.join(args.run, "context_scale")
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    cfg, ds, _, model = load_run(args.run, num_validation_characters=args.num_validation_characters)
    choice = choose_context_scale(model, ds, args.scales)
    for s, mse, style in zip(choice["scales"], choice["validation_mse"], choice["validation_style_accuracy"]):
        say(f"validation, s = {s:g}: MSE {mse:.5f}; {format_style(style)}")
    run_scale = run_context_scale(cfg, len(ds.train_characters))
    context = ds.test_context_frames(dtype=np.float32)
    target = ds.test_target_frames(dtype=np.float32)
    rows = (ds.test_characters, ds.test_context_poses, ds.test_target_poses)
    test = {}
    for label, s in (("chosen", choice["chosen"]), ("run", run_scale)):
        mean = generate(model, model, context, *rows, scale=s)["mean"]
        test[label] = {
            "scale": s,
            "test_mse_mean": _mse(mean, target),
            "style_accuracy": style_scores(ds, mean, ds.test_characters[:, None], ds.test_target_poses),
        }
        say(
            f"test ({len(ds.test_characters)} characters), {label} s = {s:g}: MSE {test[label]['test_mse_mean']:.5f}; "
            f"{format_style(test[label]['style_accuracy'])}"
        )
    metrics = {
        "run": os.path.basename(os.path.normpath(args.run)),
        "git_commit": git_commit(),
        "context_scale_choice": choice,
        "test": test,
        "seconds": time.perf_counter() - t0,
    }
    write_json(
        os.path.join(out, "metrics.json"), metrics, argv=command_argv("sprites_context_scale", argv), config=vars(args)
    )
    return metrics


if __name__ == "__main__":
    main(sys.argv[1:])
