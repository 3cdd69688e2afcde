"""The summary page ``docs/results.md`` and its metrics files cannot drift apart.

Every number in a table body of the page (the first column, the row label, excepted) is listed in
``docs/results/summary_sources.json`` with where it comes from: a committed metrics file and the
JSON path of the value in it, or a number quoted from a paper. The test reads each value and checks
that the printed number is that value rounded to the printed number of decimals; and that the
manifest lists no table, row or cell that the page does not print. Numbers with a decimal point or
a percent sign outside the tables and code spans (the prose) must be settings or quotes that the
manifest's ``"prose"`` names, so no measured number hides in the text unchecked.
"""

import json
import math
import os
import re
import statistics

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "results.md")
MANIFEST = os.path.join(ROOT, "docs", "results", "summary_sources.json")

#: A printed number: optional sign, digits, optional decimals, optional percent sign; not the tail
#: of a word or of another number ("m2", "1.5.3").
NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?\d+(?:\.\d+)?%?")


def parse_tables(text: str):
    """``{first header cell: (column headers, {row label: [cells]})}`` for every table of ``text``."""
    tables, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[i + 1]):
            header = _cells(lines[i])
            rows = {}
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = _cells(lines[i])
                assert len(cells) == len(header), f"row {cells[0]!r} of table {header[0]!r}: {len(cells)} cells"
                assert cells[0] not in rows, f"row {cells[0]!r} twice in table {header[0]!r}"
                rows[cells[0]] = cells[1:]
                i += 1
            assert header[0] not in tables, f"two tables named {header[0]!r}"
            tables[header[0]] = (header[1:], rows)
        else:
            i += 1
    return tables


def _cells(line: str):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def printed_numbers(cell: str):
    """The numbers printed in a table cell, as strings (bold and code marks ignored)."""
    return NUMBER.findall(re.sub(r"`[^`]*`", "", cell))


def _split(path):
    if isinstance(path, list):
        return path
    return [int(p) if p.isdigit() else p for p in path.split(".")]


def resolve(source: dict) -> float:
    """The value a manifest source stands for (see the manifest's ``"about"``)."""
    if "quoted" in source:
        assert source.get("from"), f"a quoted number needs its source: {source}"
        return float(source["quoted"])
    if "relative" in source:
        a, b = (resolve(s) for s in source["relative"])
        value = a / b - 1.0
    elif "difference" in source:
        a, b = (resolve(s) for s in source["difference"])
        value = a - b
    else:
        path = os.path.join(ROOT, source["file"])
        assert not os.path.isabs(source["file"]) and os.path.exists(path), f"no metrics file {source['file']!r}"
        with open(path) as f:
            value = json.load(f)
        for key in _split(source["path"]):
            value = value[key]
        agg = source.get("agg")
        if agg is not None:
            value = {"median": statistics.median, "min": min, "max": max}[agg](value)
    assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{source}: not a number: {value!r}"
    return float(value) * source.get("scale", 1)


def matches(printed: str, value: float) -> bool:
    """``printed`` is ``value`` rounded to the decimals printed."""
    text = printed.replace("\u2212", "-").rstrip("%")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return math.isfinite(value) and abs(float(text) - value) <= 0.5 * 10**-decimals * (1 + 1e-9) + 1e-12


def check(text: str, manifest: dict):
    """Every disagreement between the page ``text`` and ``manifest``, as messages (empty: none)."""
    problems = []
    tables = parse_tables(text)
    listed = {t["table"]: t["rows"] for t in manifest["tables"]}
    for name in set(listed) - set(tables):
        problems.append(f"manifest table {name!r} is not on the page")
    for name, (columns, rows) in tables.items():
        if name not in listed:
            problems.append(f"table {name!r} is not in the manifest")
            continue
        sources = listed[name]
        for label in set(sources) - set(rows):
            problems.append(f"{name}: manifest row {label!r} is not on the page")
        for label, cells in rows.items():
            row_sources = sources.get(label, {})
            for column in set(row_sources) - set(columns):
                problems.append(f"{name} / {label}: manifest column {column!r} is not on the page")
            for column, cell in zip(columns, cells):
                numbers, cell_sources = printed_numbers(cell), row_sources.get(column, [])
                where = f"{name} / {label} / {column}"
                if len(numbers) != len(cell_sources):
                    problems.append(f"{where}: {len(numbers)} numbers printed, {len(cell_sources)} in the manifest")
                    continue
                for printed, source in zip(numbers, cell_sources):
                    value = resolve(source)
                    if not matches(printed, value):
                        problems.append(f"{where}: printed {printed}, the file has {value!r} ({source})")
    prose = "\n".join(line for line in text.split("\n") if not line.startswith("|"))
    prose = re.sub(r"`[^`]*`", "", prose)  # code spans, also over line breaks
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    allowed = manifest.get("prose", {})
    for number in NUMBER.findall(prose):
        if ("." in number or number.endswith("%")) and number not in allowed:
            problems.append(f"prose number {number} is neither in a table nor a setting named in the manifest")
    return problems


@pytest.fixture(scope="module")
def page_and_manifest():
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    return text, manifest


def test_every_number_on_the_summary_page_matches_its_file(page_and_manifest):
    text, manifest = page_and_manifest
    assert check(text, manifest) == []
    counted = sum(len(s) for t in manifest["tables"] for row in t["rows"].values() for s in row.values())
    assert counted > 250  # the page's tables are read, not skipped
    assert text.count("\n") <= 400  # a summary, not the history


def test_the_check_catches_a_changed_number_and_an_unlisted_one(page_and_manifest):
    text, manifest = page_and_manifest
    cell = "| SVGP-VAE, m = 10 inducing times held at the frames | **0.0788 ± 0.0017** |"
    assert cell in text
    assert any("printed 0.0789" in p for p in check(text.replace(cell, cell.replace("0.0788", "0.0789")), manifest))
    extra = text.replace(cell, cell.replace("**0.0788 ± 0.0017**", "**0.0788 ± 0.0017 (0.5)**"))
    assert any("3 numbers printed, 2 in the manifest" in p for p in check(extra, manifest))
    assert any("prose number 0.123" in p for p in check(text + "\nThe MSE was 0.123.\n", manifest))


def test_every_metrics_file_of_the_summary_exists_and_holds_no_machine_path(page_and_manifest):
    _, manifest = page_and_manifest
    files = set()

    def walk(source):
        for key in ("relative", "difference"):
            for s in source.get(key, []):
                walk(s)
        if "file" in source:
            files.add(source["file"])

    for t in manifest["tables"]:
        for row in t["rows"].values():
            for sources in row.values():
                for source in sources:
                    walk(source)
    assert files
    for name in files:
        assert name.startswith("docs/results/"), name
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            text = f.read()
        assert not re.search(r'"/(?:tmp|work|home|root|Users|mnt)/', text), name


def test_the_results_pages_show_and_name_only_files_that_exist(page_and_manifest):
    """Every figure on the summary and detail pages exists, and so does every ``docs/...`` path they
    name in backticks, except the folders the manifest lists as written by a command still to run."""
    import glob

    _, manifest = page_and_manifest
    pending = tuple(manifest.get("pending", {}))
    missing = []
    pages = [PAGE] + sorted(glob.glob(os.path.join(ROOT, "docs", "results", "*.md")))
    assert len(pages) >= 6
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text):
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), target))):
                missing.append((os.path.relpath(page, ROOT), target))
        for span in re.findall(r"`([^`]*)`", text):
            if any(c in span for c in "{*<"):  # a pattern, not a path
                continue
            for path in re.findall(r"(?<![\w/])(docs/(?:results|images)/[\w./-]+)", span):
                path = path.rstrip(".")
                if not path.startswith(pending) and not os.path.exists(os.path.join(ROOT, path)):
                    missing.append((os.path.relpath(page, ROOT), path))
    assert missing == []
