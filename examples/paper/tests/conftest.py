"""Fixtures shared with the library's tests, and the check of the experiments' run records."""

import json
import os

import pytest

from tests.conftest import rng, tiny, tiny_model  # noqa: F401


def _assert_run_record(path: str, argv: list, config=None) -> dict:
    """The file at ``path`` holds the run record of ``argv`` (machine paths dropped): command, commit,
    CPU model and core count, the settings; and no absolute machine path anywhere in the file."""
    with open(path) as f:
        text = f.read()
    record = json.loads(text)["run_record"]
    assert {"command", "argv", "git_commit", "cpu", "cpu_count", "python", "tensorflow", "gpflow", "config"} <= set(
        record
    )
    assert record["argv"] == argv and record["command"].split()[:2] == argv[:2]
    assert record["cpu_count"] == os.cpu_count() and record["cpu"]
    assert record["git_commit"] is None or len(record["git_commit"]) == 40
    if config is not None:
        assert record["config"] == config
    from svgpvae_paper import records

    assert records.find_machine_paths(text) == []
    return record


@pytest.fixture
def assert_run_record():
    """``assert_run_record(path, argv, config=None)``: see :func:`_assert_run_record`."""
    return _assert_run_record
