"""The package namespace and the library/research boundary."""

import ast
import importlib
import os
import subprocess
import sys

import gpflow_svgpvae as gv

LIBRARY = os.path.dirname(gv.__file__)


def test_public_names_are_the_submodules_objects():
    from gpflow_svgpvae.likelihoods import Gaussian
    from gpflow_svgpvae.models.svgpvae import SVGPVAE

    assert gv.SVGPVAE is SVGPVAE and gv.Gaussian is Gaussian
    for name in gv.__all__:
        value = getattr(gv, name)
        if isinstance(value, type(gv)):
            assert value is importlib.import_module(f"gpflow_svgpvae.{name}"), name
    namespace = {}
    exec("from gpflow_svgpvae import *", namespace)
    assert {name: namespace[name] for name in gv.__all__} == {name: getattr(gv, name) for name in gv.__all__}


def _imported_modules(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_the_library_never_imports_the_research_package():
    offenders = []
    for folder, _, files in os.walk(LIBRARY):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                offenders += [
                    (os.path.relpath(path, LIBRARY), m)
                    for m in _imported_modules(path)
                    if m.split(".")[0] == "svgpvae_paper"
                ]
    assert offenders == []
    code = "import sys, gpflow_svgpvae; print('svgpvae_paper' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
