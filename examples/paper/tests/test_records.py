"""Run records without machine paths: the rewrite rule, and the committed records under docs/."""

import json
import os
import subprocess

import pytest

from svgpvae_paper import records
from svgpvae_paper.experiments.common import read_json, write_json

ROOT = records.repo_root()


def test_rewrite_rule_on_a_json_file(tmp_path):
    inside = os.path.join(ROOT, "results", "rmf", "cache")
    doc = {
        "argv": ["examples/x.py", "--out", "/tmp/scratch/run1", "--cache", inside],
        "out": "/tmp/scratch/run1",
        "cache": inside,
        "root": ROOT,
        "elsewhere": "/work/other/main/results/mb/cache",
        "anywhere": "/something/repo/docs/results/a.json",
        "snapshot": "/tmp/snap3/gpflow_svgpvae/experiments/moving_ball.py",
        "venv": "/work/other/main/.venv/bin/python",
        "note": "overlays runs.json (there under /tmp/mbn/out)",
        "system": "/proc/self/status",
        "rmse": [0.1234567890123, 1e-05, 3, -2.5e300, True, None],
        "nested": {"lr": 0.001, "steps": 3000},
    }
    text = json.dumps(doc, indent=2) + "\n"
    (tmp_path / "metrics.json").write_text(text)
    (tmp_path / "run.sh").write_text(f"cd /tmp/diag\nPYTHONPATH=/tmp/snap {ROOT}/.venv/bin/python x.py\n")
    changed = records.rewrite_folder(str(tmp_path), records.Rewriter(ROOT))
    assert set(changed) == {str(tmp_path / "metrics.json"), str(tmp_path / "run.sh")}
    new_text = (tmp_path / "metrics.json").read_text()
    new = json.loads(new_text)
    assert new["argv"] == ["examples/x.py", "--out", None, "--cache", "results/rmf/cache"]
    assert new["out"] is None  # scratch outside any checkout
    assert new["cache"] == "results/rmf/cache"  # inside this checkout
    assert new["root"] == "."
    assert new["elsewhere"] == "results/mb/cache"  # another checkout: kept from the marker on
    assert new["anywhere"] == "docs/results/a.json"
    assert new["snapshot"] == "gpflow_svgpvae/experiments/moving_ball.py"
    assert new["venv"] == ".venv/bin/python"  # under a checkout root learned from "elsewhere"
    assert new["note"] == "overlays runs.json (there under $TMPDIR/mbn/out)"
    assert new["system"] == "/proc/self/status"
    # key order, indentation and every non-path leaf unchanged
    assert list(new) == list(doc)
    assert new_text.splitlines()[1].startswith('  "argv"')
    old_leaves = dict(records._leaves(doc))
    for path, value in records._leaves(new):
        if not isinstance(old_leaves[path], str):
            assert type(value) is type(old_leaves[path]) and value == old_leaves[path], path
    assert len(list(records._leaves(new))) == len(old_leaves)
    assert (tmp_path / "run.sh").read_text() == "cd $TMPDIR/diag\nPYTHONPATH=$TMPDIR/snap .venv/bin/python x.py\n"
    # a second run changes nothing
    assert records.rewrite_folder(str(tmp_path), records.Rewriter(ROOT)) == {}


def test_rewrite_keeps_number_spelling_and_indent():
    text = '{\n "a": 1.50,\n "b": [1e-5, NaN],\n "p": "/tmp/x"\n}'
    new = records.rewrite_json_text(text, records.Rewriter(ROOT))
    assert new == '{\n "a": 1.50,\n "b": [1e-5, NaN],\n "p": null\n}'
    compact = '{"a":0.1,"p":"' + ROOT + '/docs/results/x.json"}'
    assert records.rewrite_json_text(compact, records.Rewriter(ROOT)) == '{"a":0.1,"p":"docs/results/x.json"}'


def test_run_record_has_no_absolute_path(tmp_path):
    rec = records.run_record({"out": os.path.join(ROOT, "results", "x"), "tmp": "/tmp/y", "lr": 0.01}, ["a.py"])
    assert rec["config"] == {"out": "results/x", "tmp": None, "lr": 0.01}
    assert rec["cpu_count"] == os.cpu_count()
    assert rec["git_commit"] is None or len(rec["git_commit"]) == 40
    assert rec["command"] == "a.py"
    assert records.find_machine_paths(json.dumps(rec), ROOT) == []
    write_json(str(tmp_path / "m.json"), {"config": {"seed": 3}, "rmse": 0.5}, argv=["b.py", "--seed", "3"])
    written = read_json(str(tmp_path / "m.json"))
    assert written["rmse"] == 0.5 and written["run_record"]["config"] == {"seed": 3}
    assert written["run_record"]["argv"] == ["b.py", "--seed", "3"]
    # A run record's payload is cleaned as well; a payload key of that name is refused.
    scratch = {"config": {"out": "/tmp/x/y", "cache": os.path.join(ROOT, "results", "c")}, "note": "under /tmp/x/y"}
    write_json(str(tmp_path / "p.json"), scratch, argv=["b.py"])
    written = read_json(str(tmp_path / "p.json"))
    assert written["config"] == {"out": None, "cache": "results/c"} == written["run_record"]["config"]
    assert written["note"] == "under $TMPDIR/x/y"
    with pytest.raises(ValueError, match="run_record"):
        write_json(str(tmp_path / "q.json"), {"run_record": 1}, argv=["b.py"])
    write_json(str(tmp_path / "r.json"), {"out": "/tmp/x"})  # without argv: written as given
    assert read_json(str(tmp_path / "r.json")) == {"out": "/tmp/x"}


def test_compact_rewrites_a_record_into_write_json_layout(tmp_path):
    series = [0.1 * k + 1e-9 for k in range(30)]
    doc = {
        "test_mse": 0.020512345678901234,
        "history": {"loss": series, "epoch": list(range(1, 31))},
        "argv": ["svgpvae", "x"],
        "rows": [{"x": 0.123456789012345}],
    }
    (tmp_path / "run.json").write_text(json.dumps(doc, indent=1))
    (tmp_path / "summary_sources.json").write_text(json.dumps(doc, indent=1))  # hand-written: kept
    (tmp_path / "notes.md").write_text("[\n 1\n]\n")
    before = (tmp_path / "run.json").stat().st_size
    changed = records.compact_folder(str(tmp_path))
    text = (tmp_path / "run.json").read_text()
    assert changed == {str(tmp_path / "run.json"): (before, len(text))} and len(text) < before
    write_json(str(tmp_path / "written.json"), read_json(str(tmp_path / "run.json")))
    assert (tmp_path / "written.json").read_text() == text  # exactly what write_json writes
    new = json.loads(text)
    assert new["history"]["loss"] == [float(f"{v:.7g}") for v in series]
    assert {k: v for k, v in new.items() if k != "history"} == {k: v for k, v in doc.items() if k != "history"}
    assert new["history"]["epoch"] == doc["history"]["epoch"]
    assert (tmp_path / "summary_sources.json").read_text() == json.dumps(doc, indent=1)
    assert records.compact_folder(str(tmp_path)) == {}  # a second run changes nothing
    os.remove(tmp_path / "written.json")
    (tmp_path / "twice.json").write_text('{"a": 1, "a": 2}')  # a key given twice: refused, nothing written
    (tmp_path / "b.json").write_text('{"b": [\n 1\n]}')
    with pytest.raises(ValueError, match="twice"):
        records.compact_folder(str(tmp_path))
    assert (tmp_path / "b.json").read_text() == '{"b": [\n 1\n]}'


def _committed_docs():
    try:
        out = subprocess.run(["git", "ls-files", "docs"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [f for f in out.split() if f.endswith(records.SUFFIXES)]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.relpath(f, ROOT) for f in records._files(os.path.join(ROOT, "docs"))]


def test_committed_records_hold_no_machine_path():
    files = _committed_docs()
    if not files:
        pytest.skip("no docs/ in this checkout")
    assert sum(f.endswith(".json") for f in files) > 100
    offenders = {}
    for f in files:
        with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
            found = records.find_machine_paths(fh.read(), ROOT)
        if found:
            offenders[f] = found[:3]
    assert offenders == {}
