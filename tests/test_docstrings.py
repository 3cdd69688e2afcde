"""Every public name of the library has a docstring (what the API reference shows)."""

import ast
import functools
import importlib
import inspect
import pkgutil
import types

import pytest

import gpflow_svgpvae


def _public_modules():
    names = [gpflow_svgpvae.__name__] + [
        info.name
        for info in pkgutil.walk_packages(gpflow_svgpvae.__path__, gpflow_svgpvae.__name__ + ".")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return [importlib.import_module(name) for name in names]


MODULES = _public_modules()


@functools.lru_cache(maxsize=None)
def _doc_commented_names(module) -> frozenset:
    """Module-level names whose assignment has a ``#:`` comment above it (Sphinx's doc comment)."""
    lines = inspect.getsource(module).splitlines()
    names = set()
    for node in ast.parse("\n".join(lines)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and lines[node.lineno - 2].lstrip().startswith("#:"):
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def _exported(module):
    for name in module.__all__:
        obj = getattr(module, name)
        if not isinstance(obj, types.ModuleType):
            yield name, obj


def _own_classes():
    seen = {}
    for module in MODULES:
        for _, obj in _exported(module):
            if inspect.isclass(obj) and obj.__module__.startswith(gpflow_svgpvae.__name__):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(seen.items())


def test_the_walk_finds_the_subpackages_modules():
    names = {module.__name__ for module in MODULES}
    assert {"gpflow_svgpvae", "gpflow_svgpvae.models.svgpvae", "gpflow_svgpvae.training.loop"} <= names
    assert len(names) >= 40


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_module_has_docstring_and_all(module):
    assert (module.__doc__ or "").strip(), f"{module.__name__} has no module docstring"
    assert isinstance(getattr(module, "__all__", None), (list, tuple)), f"{module.__name__} has no __all__"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_exported_name_has_a_docstring(module):
    undocumented = []
    for name, obj in _exported(module):
        if inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj):
            if not (obj.__doc__ or "").strip():
                undocumented.append(name)
        elif not any(vars(m).get(name) is obj and name in _doc_commented_names(m) for m in MODULES):
            undocumented.append(name)  # a constant: documented by a ``#:`` comment where it is defined
    assert not undocumented, f"{module.__name__}: no docstring for {undocumented}"


@pytest.mark.parametrize("name,cls", _own_classes(), ids=lambda x: x if isinstance(x, str) else "")
def test_public_methods_and_properties_have_docstrings(name, cls):
    """A public method the class defines has its own docstring or overrides a documented one."""
    undocumented = []
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if not callable(function) or (function.__doc__ or "").strip():
            continue
        inherited = [inspect.getattr_static(base, attr, None) for base in cls.__mro__[1:]]
        inherited = [v.fget if isinstance(v, property) else getattr(v, "__func__", v) for v in inherited]
        if not any(callable(v) and (v.__doc__ or "").strip() for v in inherited):
            undocumented.append(attr)
    assert not undocumented, f"{name}: no docstring for {undocumented}"
