"""Pieces every experiment command shares: provenance, run keys, result files, plotting backend.

Experiments write a results folder (``config.json``, ``metrics.json``,
tables, figures). Long sweeps cache one file per training run under a key
that hashes everything the run depends on, so an interrupted or extended
sweep retrains only what is missing, and several processes can fill one sweep
in parallel: a process claims a run before training it (:class:`RunClaim`), and
the others skip the claimed run and come back to it once it is finished.
"""

import csv
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import time
from typing import Callable, Iterable, List, Optional, Sequence, TypeVar

import numpy as np

__all__ = [
    "SITE_PARAMETRIZATIONS",
    "git_commit",
    "run_key",
    "RunClaim",
    "claimed_in_order",
    "waiting_postfix",
    "RUN_RECORD",
    "command_argv",
    "SERIES_LENGTH",
    "SERIES_DIGITS",
    "is_series",
    "round_series_value",
    "json_text",
    "write_json",
    "read_json",
    "write_csv",
    "mean_sd",
    "is_positive_number",
    "pyplot",
]

#: The encoder heads the experiment commands offer (``--site-parametrization``): those of
#: :class:`~gpflow_svgpvae.networks.GaussianSiteHead`, named here so that parsing a command line
#: does not import TensorFlow (a test keeps the two equal).
SITE_PARAMETRIZATIONS = ("variance", "natural")

T = TypeVar("T")
R = TypeVar("R")


def git_commit() -> Optional[str]:
    """Short hash of the checkout the package runs from (``None`` outside a git checkout)."""
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except Exception:  # noqa: BLE001 - provenance only
        return None


def run_key(prefix: str, spec: dict) -> str:
    """``<prefix>_<10 hex digits>``: a file name that changes whenever ``spec`` (JSON-able) changes."""
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True, default=_jsonable).encode()).hexdigest()[:10]
    return f"{prefix}_{digest}"


class RunClaim:
    """This process's claim on training one cached run, so that processes filling the same sweep
    (say one per core) do not train the same run twice.

    The claim is the file ``<path>.claim``, created exclusively (``O_CREAT | O_EXCL``, atomic on a
    local file system) and holding the owner's host name and process id. A claim is stale, and is
    taken over, when its owner is a process of this host that no longer exists (a killed sweep),
    or when the file is still empty ``stale_seconds`` after it was made (its owner died between
    creating and writing it). Claims made on another host are respected: their owner cannot be
    checked from here.
    """

    def __init__(self, path: str, stale_seconds: float = 60.0):
        self.file = path + ".claim"
        self.stale_seconds = stale_seconds
        self.held = False

    def acquire(self) -> bool:
        """Claim the run; ``False`` if another live process holds it."""
        os.makedirs(os.path.dirname(self.file) or ".", exist_ok=True)
        for _ in range(2):  # one retry, after removing a stale claim
            try:
                fd = os.open(self.file, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                if self._owner_alive():
                    return False
                try:
                    os.remove(self.file)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as f:
                f.write(f"{socket.gethostname()} {os.getpid()}")
            self.held = True
            return True
        return False

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.remove(self.file)
            except FileNotFoundError:
                pass

    def _owner_alive(self) -> bool:
        try:
            with open(self.file) as f:
                owner = f.read().split()
            age = time.time() - os.path.getmtime(self.file)
        except FileNotFoundError:
            return False
        if len(owner) != 2 or not owner[1].isdigit():
            return age < self.stale_seconds
        host, pid = owner[0], int(owner[1])
        if host != socket.gethostname():
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by another user
            return True
        return True

    def __enter__(self) -> "RunClaim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claimed_in_order(
    jobs: Sequence[T],
    path_of: Callable[[T], str],
    work: Callable[[T], R],
    poll_seconds: float = 30.0,
    on_wait: Optional[Callable[[int], None]] = None,
) -> List[R]:
    """``[work(job) for job in jobs]``, each job under a :class:`RunClaim` on ``path_of(job)``.

    A job another live process has claimed is skipped; after the pass this process sleeps
    ``poll_seconds`` (calling ``on_wait(number of such jobs)`` first) and tries those again, so
    ``work`` finds the other's finished run in the cache, or trains it if the other died. The
    results are in the order of ``jobs``.
    """
    results: List[Optional[R]] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    while pending:
        claimed_elsewhere = []
        for i in pending:
            with RunClaim(path_of(jobs[i])) as claim:
                if not claim.acquire():
                    claimed_elsewhere.append(i)
                    continue
                results[i] = work(jobs[i])
        if claimed_elsewhere:
            if on_wait is not None:
                on_wait(len(claimed_elsewhere))
            time.sleep(poll_seconds)
        pending = claimed_elsewhere
    return results


def waiting_postfix(bar) -> Callable[[int], None]:
    """An ``on_wait`` for :func:`claimed_in_order` that says so on a tqdm ``bar``."""
    return lambda count: bar.set_postfix_str(f"waiting for {count} run(s) another process is training")


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)


#: The key of the run record in a file written by :func:`write_json` with ``argv``.
RUN_RECORD = "run_record"


def command_argv(experiment: str, argv: Optional[Sequence[str]] = None) -> List[str]:
    """The command line that reruns an experiment: ``["svgpvae", experiment, *argv]``.

    :param argv: the experiment's own arguments (default ``sys.argv[1:]``, as its ``main`` reads them).
    """
    return ["svgpvae", experiment, *(sys.argv[1:] if argv is None else argv)]


#: A list of at least this many numbers (``None`` allowed between them) is a numeric series: a
#: history, a curve. Its floats are written to :data:`SERIES_DIGITS` significant digits.
SERIES_LENGTH = 20
#: Significant digits of the floats of a numeric series in a file written by :func:`write_json`.
SERIES_DIGITS = 7


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_series(items: list) -> bool:
    """Whether ``items`` is a numeric series: only numbers and ``None``, at least
    :data:`SERIES_LENGTH` numbers."""
    return sum(_is_number(v) for v in items) >= SERIES_LENGTH and all(v is None or _is_number(v) for v in items)


def round_series_value(value):
    """A float of a numeric series to :data:`SERIES_DIGITS` significant digits (idempotent);
    integers, ``None`` and non-finite floats as they are."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{SERIES_DIGITS}g}")
    return value


def _layout(obj, level: int) -> str:
    if isinstance(obj, (dict, list)) and not obj:
        return "{}" if isinstance(obj, dict) else "[]"
    if isinstance(obj, list) and all(_is_scalar(v) for v in obj):
        if is_series(obj):
            obj = [round_series_value(v) for v in obj]
        return "[" + ", ".join(json.dumps(v) for v in obj) + "]"
    indent = "\n" + " " * (level + 1)
    if isinstance(obj, dict):
        items = [json.dumps(k) + ": " + _layout(v, level + 1) for k, v in obj.items()]
        return "{" + indent + ("," + indent).join(items) + "\n" + " " * level + "}"
    if isinstance(obj, list):
        return "[" + indent + ("," + indent).join(_layout(v, level + 1) for v in obj) + "\n" + " " * level + "]"
    return json.dumps(obj)


def json_text(payload) -> str:
    """``payload`` as :func:`write_json` writes it: dicts, and lists holding dicts or lists, one item a
    line (indented by one space a level, as ``json.dump(indent=1)``); a list of scalars (numbers,
    strings, booleans, ``None``) on one line; the floats of a numeric series (:func:`is_series`)
    rounded to :data:`SERIES_DIGITS` significant digits, every other number exactly as given.
    Numpy values become lists and numbers (as ``json.dump`` with :func:`_jsonable` makes them)."""
    plain = json.loads(json.dumps(payload, default=_jsonable))  # numpy, tuples, non-string keys
    return _layout(plain, 0)


def write_json(path: str, payload, argv: Optional[Sequence[str]] = None, config: Optional[dict] = None) -> None:
    """Write ``payload`` atomically (a reader never sees a half-written file), in the layout of
    :func:`json_text` (numeric series to seven significant digits; numpy values become lists).

    With ``argv`` (a command line, e.g. :func:`command_argv`) the file is a run record: it gets
    ``"run_record"``, the :func:`svgpvae_paper.records.run_record` of ``config`` (default
    ``payload["config"]``: command, commit, CPU model and core count, versions), and every absolute
    machine path in ``payload`` is rewritten (:func:`svgpvae_paper.records.clean`: repository paths
    become relative, scratch paths ``None``), so the file can be committed as it is.
    """
    if argv is not None:
        from ..records import clean, run_record

        if RUN_RECORD in payload:
            raise ValueError(f"write_json: the payload has a key {RUN_RECORD!r} of its own; rename it")
        settings = payload.get("config", {}) if config is None else config
        payload = {**clean(json.loads(json.dumps(payload, default=_jsonable))), RUN_RECORD: run_record(settings, argv)}
    text = json_text(payload)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_json(path: str):
    """A JSON file, in the layout of :func:`write_json` or any other (``json.dump`` with any indent)."""
    with open(path) as f:
        return json.load(f)


def write_csv(path: str, rows: List[dict]) -> None:
    """Rows of dicts as CSV; the header is the union of keys in first-seen order."""
    if not rows:
        return
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def mean_sd(values: Iterable[float]) -> dict:
    """Mean, sample standard deviation (0 for one value), count and the values themselves."""
    values = np.asarray(list(values), dtype=float)
    return {
        "mean": float(values.mean()) if values.size else float("nan"),
        "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
        "n": int(values.size),
        "values": values.tolist(),
    }


def is_positive_number(value) -> bool:
    """Whether a command-line setting is a finite number above 0 (NaN and inf are not)."""
    return bool(np.isfinite(value) and value > 0)


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (experiments run headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
