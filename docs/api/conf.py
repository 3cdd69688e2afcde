"""Sphinx configuration of the gpflow_svgpvae API reference (``make docs``)."""

import os
import sys

# Document the source tree this file lives in, not an installed copy.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import importlib  # noqa: E402
import pkgutil  # noqa: E402

import gpflow_svgpvae  # noqa: E402  (after the path and logging set-up above)

project = "gpflow_svgpvae"
author = "gpflow_svgpvae contributors"
copyright = "the gpflow_svgpvae contributors, Apache-2.0"
release = version = gpflow_svgpvae.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",  # the docstrings' :math: roles
    "sphinx.ext.viewcode",
]
templates_path = ["_templates"]
exclude_patterns = ["_build"]

# One page per module, generated at build time into generated/ (not committed), listing
# what the module's __all__ exports.
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"


def _reexports() -> dict:
    """``{"package.Name": "defining.module.Name"}`` for the names a module's ``__all__`` imports from
    another module of the library: its page links to the one place each is documented."""
    out = {}
    modules = [gpflow_svgpvae] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(gpflow_svgpvae.__path__, "gpflow_svgpvae.")
        if not info.name.rsplit(".", 1)[-1].startswith("_")
    ]
    for module in modules:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            home = getattr(obj, "__module__", None)
            if home and home != module.__name__ and home.startswith("gpflow_svgpvae") and hasattr(obj, "__qualname__"):
                out[f"{module.__name__}.{name}"] = f"{home}.{obj.__qualname__}"
    return out


def _submodules() -> dict:
    """``{"package": ["package.sub", ...]}``: every public submodule of each package (also those its
    ``__all__`` does not name), so each gets a page."""
    out = {}
    for info in pkgutil.walk_packages(gpflow_svgpvae.__path__, "gpflow_svgpvae."):
        package, name = info.name.rsplit(".", 1)
        if not name.startswith("_"):
            out.setdefault(package, []).append(info.name)
    return out


_REEXPORTS = _reexports()
autosummary_context = {"reexports": _REEXPORTS, "submodules": _submodules()}

# Cross-references to TensorFlow, GPflow and numpy stay plain text (no intersphinx: the build
# reads nothing from the network), so unresolved references are not warnings.
nitpicky = False


def _resolve_reexport(app, env, node, contnode):
    """Resolve ``:class:`gpflow_svgpvae.SVGPVAE``` (a re-exported name, or its members) to the
    object's one documented place."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip("~.")
    module = node.get("py:module")
    for name in [target] + ([f"{module}.{target}"] if module else []):
        for alias, home in _REEXPORTS.items():
            if name == alias or name.startswith(alias + "."):
                return env.get_domain("py").resolve_xref(
                    env, node["refdoc"], app.builder, node["reftype"], home + name[len(alias) :], node, contnode
                )
    return None


def setup(app):
    app.connect("missing-reference", _resolve_reexport)


html_theme = "alabaster"
html_static_path: list = []
