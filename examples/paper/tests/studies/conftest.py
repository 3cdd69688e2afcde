"""Shared fixture of the study tests: load a script of ``examples/paper/studies/`` as a module."""

import importlib.util
import os

import pytest

STUDIES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "studies")


def _load(name: str):
    """``examples/paper/studies/<name>.py`` as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(STUDIES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_example():
    """``load_example(name)``: the module of ``examples/paper/studies/<name>.py``."""
    return _load
