"""Run records without machine paths, in a compact layout: rewrite committed records, write new ones.

``python -m svgpvae_paper.records [FOLDER ...]`` (default ``docs``) rewrites every ``.json``, ``.md``
and ``.sh`` file under the folders so that no absolute machine path is left in them.
``python -m svgpvae_paper.records --compact [FOLDER ...]`` instead rewrites every ``.json`` file
under the folders into the layout :func:`~svgpvae_paper.experiments.common.write_json` writes
(:func:`compact_json_text`): lists of scalars on one line, numeric series to seven significant digits.

What counts as a machine path: an absolute path whose first component is one of
:data:`MACHINE_ROOTS` (``/tmp``, ``/work``, ``/home``, ...), or any path inside this repository's
own checkout, or any other absolute path with a component in :data:`CHECKOUT_MARKERS` below its
first (``/anywhere/repo/results/x``: some machine's checkout). System paths that are the same on
every machine (:data:`SYSTEM_ROOTS`: ``/proc/self/status``, ``/bin/bash``, ``/dev/null``) are left
alone.

The rule, applied to each machine path ``P`` (first match wins):

1. ``P`` inside this checkout's root: relative to the root (``.`` for the root itself).
2. ``P`` has a component that names a top-level folder of the repository (:data:`CHECKOUT_MARKERS`:
   ``docs``, ``results``, ``gpflow_svgpvae``, ``examples``, ``benchmarks``), so ``P`` lies in some
   checkout (another machine's, or a snapshot): kept from the leftmost such component on
   (``/x/main/results/rmf/cache`` -> ``results/rmf/cache``). The part before it is remembered as a
   checkout root of that machine.
3. ``P`` is, or lies under, a checkout root remembered in step 2 (from any file of the same run):
   relative to that root (``/x/main`` -> ``.``, ``/x/main/.venv/bin/python`` -> ``.venv/bin/python``).
4. Otherwise ``P`` is scratch outside any checkout (``/tmp/hm/final_long``):

   - a JSON string that is one such path and nothing else (a value, or an element of a list such
     as ``argv``) becomes ``null``;
   - a path inside longer text (a JSON string with words around it, a line of a ``.md`` or ``.sh``
     file, a JSON key) becomes ``$TMPDIR/<rest>`` if it was under a temporary folder (``/tmp``,
     ``/var/tmp``, ``/private/tmp``) and ``<outside-repo>/<last component>`` otherwise.

JSON files are rewritten token by token: only the string literals that change are replaced, so
indentation (none, 1, 2 or 4 spaces), key order and every number's spelling stay byte for byte as
they were; :func:`rewrite_json_text` checks that the parsed document differs only in those strings.

The compact layout (:func:`compact_folder`) changes numbers only inside numeric series (lists of at
least 20 numbers: histories, curves), which are rounded to seven significant digits; every other
number, every string and the key order stay as they were, and :func:`compact_json_text` checks this
(and that no key is given twice, which a rewrite would lose). The hand-written manifest of the
results page (:data:`NOT_COMPACTED`) is left as it is.

:func:`run_record` gives what a new run should record about itself (command, commit, CPU,
versions), with paths made relative by the same rule.
"""

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .experiments.common import is_series, json_text, round_series_value

__all__ = [
    "MACHINE_ROOTS",
    "CHECKOUT_MARKERS",
    "repo_root",
    "find_machine_paths",
    "Rewriter",
    "rewrite_json_text",
    "rewrite_folder",
    "compact_json_text",
    "compact_folder",
    "clean",
    "run_record",
    "main",
]

#: First components of absolute paths that are particular to one machine.
MACHINE_ROOTS = ("tmp", "work", "home", "root", "Users", "mnt", "scratch", "private", "var/tmp", "var/folders")
#: Top-level folders of the repository; a path containing one lies in some checkout.
CHECKOUT_MARKERS = ("docs", "results", "gpflow_svgpvae", "examples", "benchmarks")
#: First components of system paths, the same on every machine (never rewritten).
SYSTEM_ROOTS = ("proc", "dev", "sys", "bin", "sbin", "usr", "etc", "lib", "lib64", "opt", "run", "var")
TEMP_ROOTS = ("/tmp", "/var/tmp", "/private/tmp")
OUTSIDE = "<outside-repo>"

_PATH_CHARS = r"[A-Za-z0-9_.+=,@%~-]"
# An absolute path: not preceded by a character that would make it the tail of a longer word,
# URL or relative path; components of the usual file-name characters (a trailing "..." is kept
# as prose, not as a component).
_PATH = re.compile(r"(?<![A-Za-z0-9_.~/\\-])(/" + _PATH_CHARS + r"+(?:/" + _PATH_CHARS + r"+)*/?)")


def repo_root() -> str:
    """The root of the checkout this file is in (three folders up)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _is_machine_path(path: str, root: str) -> bool:
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return True
    if any(path == "/" + r or path.startswith("/" + r + "/") for r in MACHINE_ROOTS):
        return True
    parts = path.split("/")
    return parts[1] not in SYSTEM_ROOTS and any(p in CHECKOUT_MARKERS for p in parts[2:])


def find_machine_paths(text: str, root: Optional[str] = None) -> List[str]:
    """Every absolute machine path in ``text`` (see the module docstring), in order."""
    root = repo_root() if root is None else root
    return [m.group(1) for m in _PATH.finditer(text) if _is_machine_path(m.group(1).rstrip("./"), root)]


class Rewriter:
    """The rule of the module docstring, for one repository root and the other checkouts' roots
    learned so far (:meth:`learn`)."""

    def __init__(self, root: Optional[str] = None, checkout_roots: Iterable[str] = ()):
        self.root = os.path.normpath(repo_root() if root is None else root)
        self.checkout_roots: Set[str] = set(checkout_roots)

    def learn(self, text: str) -> None:
        """Remember the checkout roots (step 2) of the machine paths in ``text``."""
        for path in find_machine_paths(text, self.root):
            split = self._split_at_marker(path)
            if split is not None and split[0].count("/") >= 2:  # never a bare "/tmp" as a checkout
                self.checkout_roots.add(split[0])

    @staticmethod
    def _split_at_marker(path: str) -> Optional[Tuple[str, str]]:
        parts = path.split("/")
        for i, part in enumerate(parts[1:], start=1):
            if part in CHECKOUT_MARKERS:
                return "/".join(parts[:i]), "/".join(parts[i:])
        return None

    def relative(self, path: str) -> Optional[str]:
        """Steps 1-3: the repository-relative form of ``path``, or ``None`` (step 4)."""
        trail = "/" if path.endswith("/") and len(path) > 1 else ""
        norm = os.path.normpath(path)
        if norm == self.root or norm.startswith(self.root + "/"):
            return os.path.relpath(norm, self.root) + trail
        split = self._split_at_marker(norm)
        if split is not None:
            return split[1] + trail
        for croot in sorted(self.checkout_roots, key=len, reverse=True):
            if norm == croot or norm.startswith(croot + "/"):
                return os.path.relpath(norm, croot) + trail
        return None

    def in_text(self, path: str) -> str:
        """The replacement of ``path`` inside longer text."""
        rel = self.relative(path)
        if rel is not None:
            return rel
        norm = os.path.normpath(path)
        for t in TEMP_ROOTS:
            if norm == t or norm.startswith(t + "/"):
                return "$TMPDIR" + norm[len(t) :]
        return OUTSIDE + "/" + os.path.basename(norm)

    def text(self, text: str) -> str:
        """``text`` with every machine path replaced (the in-text form of the rule)."""

        def sub(m: "re.Match") -> str:
            path = m.group(1)
            if not _is_machine_path(path.rstrip("./"), self.root):
                return path
            return self.in_text(path)

        return _PATH.sub(sub, text)

    def value(self, s: str):
        """A JSON string value: a lone machine path becomes its relative form or ``None``; other
        strings get the in-text form."""
        if _PATH.fullmatch(s) and _is_machine_path(s.rstrip("./"), self.root):
            return self.relative(s)
        return self.text(s)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, path + (i,))
    else:
        yield path, obj


def rewrite_json_text(text: str, rw: Rewriter) -> str:
    """``text`` (a JSON document) with its string literals rewritten; everything else is kept byte
    for byte. Raises ``ValueError`` if the result is not the same document up to those strings."""
    out: List[str] = []
    pos = 0
    for m in _JSON_STRING.finditer(text):
        token = m.group(0)
        s = json.loads(token)
        is_key = text[m.end() :].lstrip().startswith(":")
        new = rw.text(s) if is_key else rw.value(s)
        if new != s:
            out.append(text[pos : m.start()])
            out.append("null" if new is None else json.dumps(new, ensure_ascii=token.isascii()))
            pos = m.end()
    out.append(text[pos:])
    result = "".join(out)
    before, after = json.loads(text), json.loads(result)
    old_leaves, new_leaves = list(_leaves(before)), list(_leaves(after))
    if len(old_leaves) != len(new_leaves):
        raise ValueError("rewrite changed the document's shape")
    for (p0, v0), (p1, v1) in zip(old_leaves, new_leaves):
        if isinstance(v0, str):
            if v0 != v1 and rw.value(v0) != v1:
                raise ValueError(f"string at {p0} changed by more than its paths")
        elif not (type(v0) is type(v1) and (v0 == v1 or (v0 != v0 and v1 != v1))):
            raise ValueError(f"non-string value at {p0} changed: {v0!r} -> {v1!r}")
        if [k for k in p0 if isinstance(k, int)] != [k for k in p1 if isinstance(k, int)]:
            raise ValueError("rewrite changed list positions")
    return result


SUFFIXES = (".json", ".md", ".sh")


def _files(folder: str) -> List[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(SUFFIXES))
    return found


def rewrite_folder(folder: str, rw: Optional[Rewriter] = None, dry_run: bool = False) -> Dict[str, int]:
    """Rewrite every ``.json``/``.md``/``.sh`` under ``folder``; returns ``{file: paths replaced}``
    for the files that changed. Checkout roots are learned from all files first (step 3)."""
    rw = Rewriter() if rw is None else rw
    files = _files(folder)
    texts = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            texts[f] = fh.read()
        rw.learn(texts[f])
    changed = {}
    for f in files:
        text = texts[f]
        new = rewrite_json_text(text, rw) if f.endswith(".json") else rw.text(text)
        if new != text:
            changed[f] = len(find_machine_paths(text, rw.root))
            if not dry_run:
                with open(f, "w", encoding="utf-8") as fh:
                    fh.write(new)
    return changed


#: JSON files under docs/ that are written by hand, not by a run: never compacted.
NOT_COMPACTED = ("summary_sources.json",)


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key is given twice: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def _same_number(a, b) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)  # bit for bit (also -0.0 and NaN)


def _numbers(obj) -> int:
    return sum(isinstance(v, (int, float)) and not isinstance(v, bool) for _, v in _leaves(obj))


def _check_compacted(old, new, path=()) -> None:
    """Raise ``ValueError`` unless ``new`` is ``old`` with only the floats of its numeric series
    rounded (:func:`~svgpvae_paper.experiments.common.round_series_value`)."""
    if isinstance(old, dict):
        if not isinstance(new, dict) or list(old) != list(new):
            raise ValueError(f"keys changed at {path}")
        for k, v in old.items():
            _check_compacted(v, new[k], path + (k,))
        return
    if isinstance(old, list):
        if not isinstance(new, list) or len(old) != len(new):
            raise ValueError(f"list changed at {path}")
        if is_series(old):
            for i, (a, b) in enumerate(zip(old, new)):
                if not _same_number(round_series_value(a), b) or (isinstance(a, float) and abs(a - b) > 1e-6 * abs(a)):
                    raise ValueError(f"series value at {path + (i,)} changed by more than rounding: {a!r} -> {b!r}")
            return
        for i, v in enumerate(old):
            _check_compacted(v, new[i], path + (i,))
        return
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        if not _same_number(old, new):
            raise ValueError(f"number at {path} changed: {old!r} -> {new!r}")
    elif type(old) is not type(new) or old != new:
        raise ValueError(f"value at {path} changed: {old!r} -> {new!r}")


def compact_json_text(text: str) -> str:
    """``text`` (a JSON document) in the layout :func:`~svgpvae_paper.experiments.common.write_json`
    writes (:func:`~svgpvae_paper.experiments.common.json_text`). Raises ``ValueError`` if the new
    document differs from the old in anything but the rounding of its numeric series, or if the old
    one gives a key twice."""
    old = json.loads(text, object_pairs_hook=_unique_keys)
    result = json_text(old)
    new = json.loads(result)
    _check_compacted(old, new)
    if _numbers(old) != _numbers(new):
        raise ValueError("the number of numeric values changed")
    return result


def compact_folder(folder: str, dry_run: bool = False) -> Dict[str, Tuple[int, int]]:
    """Rewrite every ``.json`` under ``folder`` (but :data:`NOT_COMPACTED`) by
    :func:`compact_json_text`; returns ``{file: (bytes before, bytes after)}`` for the files that
    changed. Every file is checked before any is written; a second run changes nothing."""
    new_texts, changed = {}, {}
    for f in _files(folder):
        if not f.endswith(".json") or os.path.basename(f) in NOT_COMPACTED:
            continue
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        try:
            new = compact_json_text(text)
        except ValueError as error:
            raise ValueError(f"{f}: {error}") from error
        if new != text:
            new_texts[f] = new
            changed[f] = (len(text.encode("utf-8")), len(new.encode("utf-8")))
    for f, new in new_texts.items():
        if not dry_run:
            tmp = f"{f}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(new)
            os.replace(tmp, f)
    return changed


def _git_commit(root: str) -> Optional[str]:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except Exception:  # noqa: BLE001 - provenance only
        return None


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version(dist: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - not installed
        return None


def _clean(obj, rw: Rewriter):
    if isinstance(obj, dict):
        return {k: _clean(v, rw) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v, rw) for v in obj]
    if isinstance(obj, str):
        return rw.value(obj)
    return obj


def clean(obj):
    """``obj`` (JSON-like: dicts, lists, strings, numbers) with every machine path rewritten by the
    module's rule: a string that is one scratch path becomes ``None``, paths in text are shortened."""
    return _clean(obj, Rewriter())


def run_record(config: dict, argv: Optional[Sequence[str]] = None) -> dict:
    """What a run records about itself: the command (``argv``, default ``sys.argv``), the git
    commit (``None`` outside a checkout), CPU model and core count, Python/TensorFlow/GPflow
    versions, and ``config``; absolute paths rewritten by the module's rule (none is left)."""
    rw = Rewriter()
    argv = list(sys.argv if argv is None else argv)
    clean_argv = [rw.value(str(a)) for a in argv]
    return {
        "command": " ".join(shlex.quote(a) if a is not None else "null" for a in clean_argv),
        "argv": clean_argv,
        "git_commit": _git_commit(rw.root),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow") or _version("tensorflow-cpu"),
        "gpflow": _version("gpflow"),
        "config": _clean(config, rw),
    }


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", default=["docs"], help="folders to rewrite (default: docs)")
    parser.add_argument("--dry-run", action="store_true", help="count, do not write")
    parser.add_argument(
        "--compact", action="store_true", help="rewrite the .json files into write_json's layout (not the paths)"
    )
    args = parser.parse_args(argv)
    verb = "would change" if args.dry_run else "changed"
    if args.compact:
        sizes: Dict[str, Tuple[int, int]] = {}
        for folder in args.folders:
            sizes.update(compact_folder(folder, dry_run=args.dry_run))
        for f, (before, after) in sizes.items():
            print(f"{before:9d} -> {after:9d} {f}")
        before, after = sum(b for b, _ in sizes.values()), sum(a for _, a in sizes.values())
        print(f"{len(sizes)} files {verb}, {before} -> {after} bytes")
        return {f: before - after for f, (before, after) in sizes.items()}
    rw = Rewriter()
    changed: Dict[str, int] = {}
    for folder in args.folders:
        changed.update(rewrite_folder(folder, rw, dry_run=args.dry_run))
    for f, n in changed.items():
        print(f"{n:4d} {f}")
    print(f"{len(changed)} files {verb}, {sum(changed.values())} paths")
    return changed


if __name__ == "__main__":
    main(sys.argv[1:])
