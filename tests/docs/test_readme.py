"""The README and the training guide: the first example runs, the README keeps its limits, and
every package name and relative link they mention exists."""

import importlib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_first_example_runs_as_written(tmp_path):
    """The README's first example, with 2 epochs instead of 100 (as written it takes about a minute)."""
    readme = _read("README.md")
    first = re.search(r"## A first example\n\n```python\n(.*?)```", readme, re.S).group(1)
    assert "keras_model.fit(dataset, epochs=100)" in first
    first = first.replace("epochs=100", "epochs=2, verbose=0")
    first += "\nassert mean.shape == (200, 1) and var.shape == (200, 1) and images.shape == (5, 32)\n"
    _run(first, tmp_path / "readme_example.py")


def _run(code: str, script) -> None:
    script.write_text(code)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]


# ------------------------------------------------------------------ limits and names
README_LIMITS = {"lines": 150, "words": 1200, "line_length": 120}
DOCUMENTS = ("README.md", os.path.join("docs", "training_guide.md"))


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def test_readme_is_within_its_limits():
    """At most 150 lines, 1,200 words and 120 characters a line, and no measured result or host detail."""
    readme = _read("README.md")
    lines = readme.splitlines()
    assert len(lines) <= README_LIMITS["lines"], len(lines)
    assert len(readme.split()) <= README_LIMITS["words"], len(readme.split())
    long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > README_LIMITS["line_length"]]
    assert long == [], long
    # Measured results belong to docs/results.md and its metrics files, not to the README.
    for pattern in (r"\bMSE\b\s*(of|=|:)?\s*\d", r"\d+(\.\d+)?\s*(ms|s/epoch|seconds)\b", r"\bAVX", r"\bcores?\b"):
        assert not re.search(pattern, readme), pattern


def _mentioned_names(text):
    """Every dotted ``gpflow_svgpvae.a.b`` name in the text, and ``gv.a.b`` (the README's alias)."""
    names = re.findall(r"\bgpflow_svgpvae(?:\.[A-Za-z_][A-Za-z_0-9]*)+", text)
    names += ["gpflow_svgpvae" + name[2:] for name in re.findall(r"\bgv(?:\.[A-Za-z_][A-Za-z_0-9]*)+", text)]
    return sorted(set(names))


def _resolve(dotted):
    """Import the longest module prefix of ``dotted``, then walk the remaining attributes."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)  # AttributeError: the name does not exist
        return obj
    raise ImportError(dotted)


def test_every_package_name_in_the_readme_and_the_training_guide_exists():
    names = {name: document for document in DOCUMENTS for name in _mentioned_names(_read(document))}
    assert len(names) >= 10  # the guide names the API it recommends
    missing = []
    for name, document in sorted(names.items()):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as error:
            missing.append(f"{document}: {name} ({error})")
    assert missing == []


def test_relative_links_of_the_readme_and_the_training_guide_exist():
    for document in DOCUMENTS:
        base = os.path.dirname(os.path.join(ROOT, document))
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", _read(document)):
            if "://" in target:
                continue
            assert os.path.exists(os.path.normpath(os.path.join(base, target))), f"{document}: {target}"
