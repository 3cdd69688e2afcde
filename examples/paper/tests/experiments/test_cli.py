"""The ``svgpvae`` command: its list of subcommands (checked against the experiments' own
parsers and the README), a fast ``--help`` without TensorFlow, a quiet TensorFlow start-up,
and the lazy ``gpflow_svgpvae`` namespace that keeps ``--help`` light."""

import argparse
import glob
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from svgpvae_paper.experiments import cli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))  # the repository
EXPERIMENTS_DIR = os.path.join(ROOT, "examples", "paper", "svgpvae_paper", "experiments")

#: Start-up lines of TensorFlow that must not reach the user (the issue's examples).
NOISE_MARKERS = (
    "absl::InitializeLog",
    "oneDNN custom operations",
    "cudart_stub.cc",
    "Could not find cuda drivers",
    "cpu_feature_guard",
    "To enable the following instructions",
    "failed call to cuInit",
)


def _python(code_or_args, env=None, timeout=60):
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else list(code_or_args)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------------ the command line
def test_cli_lists_experiments_and_rejects_unknown(capsys):
    assert cli.main(["--help"]) == 0
    assert "rotated_mnist table1" in capsys.readouterr().out
    assert cli.main(["nonsense"]) == 2
    assert "unknown experiment 'nonsense'" in capsys.readouterr().err


def test_help_lists_every_experiment_and_command_with_its_purpose(capsys):
    for argv in (["--help"], ["-h"]):
        assert cli.main(argv) == 0
        assert capsys.readouterr().out == cli.help_text()
    assert cli.main([]) == 2  # no arguments: the same help, as a usage error
    assert capsys.readouterr().out == cli.help_text()
    text = cli.help_text()
    assert "moving_ball {rmse_vs_m,trajectories,lengthscale,inducing,runs}" in text
    assert "rotated_mnist {table1,summary}" in text
    assert "rotated_mnist_figures {runtime,digits,batch_size,num_inducing,bias,tsne,init,convergence}" in text
    lines = text.splitlines()
    for name, experiment in cli.SUBCOMMANDS.items():
        assert experiment.summary and "\n" not in experiment.summary
        assert any(line.strip() == experiment.summary for line in lines), name
        for command, purpose in experiment.commands.items():
            assert any(re.fullmatch(rf"\s+{name} {command}\s+{re.escape(purpose)}", line) for line in lines), command
    assert max(len(line) for line in lines) <= 100


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["moving_ball", "rmse"],
            "moving_ball: unknown command 'rmse' (did you mean 'rmse_vs_m'?); choose one of "
            "rmse_vs_m, trajectories, lengthscale, inducing, runs",
        ),
        (["rotated_mnist"], "rotated_mnist: missing command; choose one of table1, summary"),
        (
            ["rotated_mnist_figure", "bias"],
            "unknown experiment 'rotated_mnist_figure' (did you mean 'rotated_mnist_figures'?)",
        ),
    ],
)
def test_unknown_or_missing_command_is_a_usage_error(argv, message, capsys):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and captured.err.startswith("usage: svgpvae")


def test_help_and_usage_errors_are_fast_and_import_no_tensorflow():
    """``svgpvae --help`` answers without TensorFlow, GPflow or numpy, well under 2 s."""
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        from svgpvae_paper.experiments import cli
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            codes = [cli.main(["--help"]), cli.main(["nonsense"]), cli.main(["moving_ball", "rmse"])]
        print(json.dumps({"codes": codes, "heavy": [m for m in ("tensorflow", "gpflow", "numpy") if m in sys.modules]}))
    """)
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"codes": [0, 2, 2], "heavy": []}

    script = os.path.join(os.path.dirname(sys.executable), "svgpvae")  # the console script, when installed
    command = [script, "--help"] if os.path.exists(script) else [sys.executable, "-m", cli.__name__, "--help"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    wall = time.perf_counter() - start
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == cli.help_text()
    assert wall < 2.0, f"svgpvae --help took {wall:.2f} s"


@pytest.mark.parametrize("name", cli.EXPERIMENTS)
def test_cli_forwards_to_each_experiment_parser(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"svgpvae_paper.experiments.{name}" in capsys.readouterr().out  # that module's own usage


class _ParserFound(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


@pytest.mark.parametrize("name", cli.EXPERIMENTS)
def test_subcommands_match_the_experiment_parsers(name, monkeypatch):
    """The commands in ``cli.SUBCOMMANDS`` are the choices of each experiment's own argparse."""

    def capture(parser, *args, **kwargs):
        raise _ParserFound(parser)

    module = importlib.import_module(f"svgpvae_paper.experiments.{name}")
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_ParserFound) as found:
        module.main([])  # each main parses its arguments first: stop there with the parser
    choices = []
    for action in found.value.parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices += list(action.choices)
        elif not action.option_strings and action.choices:  # a positional ``command``
            choices += list(action.choices)
    assert sorted(choices) == sorted(cli.SUBCOMMANDS[name].commands)


def test_every_runnable_experiment_module_is_listed():
    runnable = set()
    for path in glob.glob(os.path.join(EXPERIMENTS_DIR, "*.py")):
        with open(path) as f:
            if 'if __name__ == "__main__":' in f.read():
                runnable.add(os.path.splitext(os.path.basename(path))[0])
    assert runnable - {"cli"} == set(cli.EXPERIMENTS)


def test_readme_and_docs_commands_name_listed_subcommands():
    """Every ``svgpvae <experiment> [<command>]`` in README.md and docs/*.md exists (and the
    README's ``# also: ...`` lists name commands of the same experiment)."""
    # A command starts a line, a code span, or follows ``bin/``; ``--models svgpvae`` is not one.
    pattern = re.compile(r"(?:^|`|bin/)svgpvae[ \t]+([^`#\n]*)(?:#\s*also:([^\n]*))?", re.M)
    seen = set()
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path) as f:
            for match in pattern.finditer(f.read()):
                words = match.group(1).split()
                where = f"{os.path.basename(path)}: svgpvae {match.group(1).strip()}"
                assert words and words[0] in cli.SUBCOMMANDS, where
                commands = cli.SUBCOMMANDS[words[0]].commands
                if commands and len(words) > 1 and not words[1].startswith("-"):
                    assert words[1] in commands, where
                    seen.add((words[0], words[1]))
                else:
                    assert not commands, f"{where}: no command"
                    seen.add((words[0], None))
                for also in (match.group(2) or "").split(","):
                    if also.strip() and not also.strip().startswith("("):
                        assert also.split()[0] in commands, f"{where}: also {also.strip()}"
    # The README's experiment block is found (the pattern did not silently miss it).
    assert {
        ("moving_ball", "rmse_vs_m"),
        ("rotated_mnist", "table1"),
        ("rotated_mnist", "summary"),
        ("rotated_mnist_figures", "bias"),
        ("sprites", None),
        ("hmnist", None),
    } <= seen


# -------------------------------------------------------------- quiet TensorFlow start-up
def test_experiment_help_is_quiet_through_python_m():
    """A real TensorFlow import, at the noisiest log level: no start-up lines on stderr."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
    result = _python(["-m", cli.__name__, "hmnist", "--help"], env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m svgpvae_paper.experiments.hmnist")
    assert not [marker for marker in NOISE_MARKERS if marker in result.stderr], result.stderr


FAKE_TENSORFLOW = """
import os, sys
os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\\n")
os.write(2, b"I0000 00:00:1.5 28282 port.cc:153] oneDNN custom operations are on. You may see ...\\n")
os.write(2, b"I0000 00:00:1.5 28282 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
            b"GPU will not be used.\\n")
os.write(2, b"I0000 00:00:1.6 28282 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use ...\\n"
            b"To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the "
            b"appropriate compiler flags.\\n")
os.write(2, b"E0000 00:00:1.7 28282 some_op.cc:12] a real error\\n")
print("a Python warning", file=sys.stderr)


class config:
    @staticmethod
    def list_physical_devices():
        os.write(2, b"E0000 00:00:1.8 28282 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error\\n")
        return []
"""


def test_quiet_import_drops_only_startup_noise(tmp_path):
    """With a stand-in ``tensorflow`` that prints the real start-up lines to fd 2 (no TF cost)."""
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text(FAKE_TENSORFLOW)
    code = textwrap.dedent("""
        import os, sys
        from svgpvae_paper.experiments import cli
        print("before", file=sys.stderr)
        cli.import_tensorflow_quietly()
        print("after", file=sys.stderr, flush=True)
        os.write(2, b"fd 2 restored\\n")
        print(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    """)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    result = _python(code, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "before",
        "E0000 00:00:1.7 28282 some_op.cc:12] a real error",
        "a Python warning",
        "after",
        "fd 2 restored",
    ]
    assert result.stdout.strip() == "2"  # the default level when the user chose none


def test_prefer_onednn_sets_the_default_and_keeps_the_users_choice(monkeypatch):
    from svgpvae_paper.experiments import cli as cli_module

    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    cli_module.prefer_onednn()
    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "1"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    cli_module.prefer_onednn()
    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"
