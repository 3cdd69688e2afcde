"""Every docs notebook (jupytext percent script) executes in quick mode."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "docs", "*.pct.py")))


def test_there_are_notebooks():
    assert any(path.endswith("quickstart.pct.py") for path in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_valid_jupytext_and_executes(path, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    notebook = jupytext.read(path)
    assert sum(cell.cell_type == "code" for cell in notebook.cells) >= 3
    env = dict(os.environ, QUICK="1", MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, path], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
