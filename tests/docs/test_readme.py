"""The README's GPflow-user example runs as written (with fewer epochs)."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_examples_run_as_written(tmp_path):
    """The GPflow-user example (with fewer epochs), then the "your data" snippet, which reuses its
    networks and data; one process, as a reader would paste them one after the other."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    first = re.search(r"## For GPflow users\n\n```python\n(.*?)```", readme, re.S).group(1)
    assert "keras_model.fit(dataset, epochs=100)" in first
    first = first.replace("epochs=100", "epochs=2, verbose=0")
    first += "\nassert mean.shape == (200, 1) and var.shape == (200, 1) and images.shape == (5, 32)\n"
    second = re.search(r"### Your data, the same class\n.*?```python\n(.*?)```", readme, re.S).group(1)
    code = (
        first
        + second
        + ("\nassert np.isfinite(float(elbo))\nassert means.shape == (4, 10, 1) and variances.shape == (4, 10, 1)\n")
    )
    _run(code, tmp_path / "readme_examples.py")


def _run(code: str, script) -> None:
    script.write_text(code)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
