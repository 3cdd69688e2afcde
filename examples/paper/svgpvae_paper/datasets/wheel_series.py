r"""Real multivariate time series that ship inside the ``aeon`` wheel, read without importing aeon.

``aeon``'s wheel bundles a few datasets under ``aeon/datasets/data/``; this module finds that
folder with :func:`importlib.util.find_spec` (which locates the installed package without
running its ``__init__``, so aeon's own imports and version pins play no part) and parses the
files itself:

* ``basic_motions``: BasicMotions, a smart watch's 3-axis accelerometer and 3-axis gyroscope
  (6 channels) at 10 Hz over 10 s (100 frames) while a person stands, walks, runs or plays
  badminton; the archive's split of 40 training and 40 test sequences. ``.ts`` files.
* ``daphnet``: recording S06R02E0 of the Daphnet freezing-of-gait data, three 3-axis
  accelerometers (ankle, thigh, trunk: 9 channels) at 64 Hz for 110 s. The one long recording
  is cut into 110 non-overlapping windows of 64 frames (1 s); a fixed random 60 % of the
  windows (permutation seeded 0) are the training sequences and the rest the test sequences.
  (The last 40 % in time would be a shifted test set: its readings spread 1.2-1.5 times as
  wide as the first 60 %'s, against 1.0-1.2 for the random split.) ``.csv`` file.

``JapaneseVowels`` is also in the wheel and is kept for held-out checks: :func:`load` refuses
it (and any name not in :data:`DATASETS`).

Every dataset comes as :class:`SequenceSplit` arrays in the layout of
:meth:`gpflow_svgpvae.SVGPVAE.impute`: time stamps ``X [V, T, 1]`` in frames (0, 1, ...),
readings ``Y [V, T, D]`` and frame flags ``frames [V, T]`` (1 = real frame, 0 = padding; all
ones for these equal-length datasets). Nothing is downloaded.
"""

import csv
import importlib.util
import io
import os
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "DATASETS",
    "RESERVED",
    "SequenceSplit",
    "SequenceDataset",
    "aeon_data_folder",
    "parse_ts",
    "pad_sequences",
    "windows",
    "load",
]

#: The datasets :func:`load` reads, in the order the benchmark runs them.
DATASETS = ("basic_motions", "daphnet")

#: Datasets of the wheel kept for held-out checks: never loaded here.
RESERVED = ("JapaneseVowels", "japanese_vowels")

_DAPHNET_WINDOW = 64
_DAPHNET_TRAIN_FRACTION = 0.6


class SequenceSplit(NamedTuple):
    """One split: ``X [V, T, 1]`` time stamps, ``Y [V, T, D]`` readings, ``frames [V, T]`` 0/1."""

    X: np.ndarray
    Y: np.ndarray
    frames: np.ndarray


class SequenceDataset(NamedTuple):
    name: str
    train: SequenceSplit
    test: SequenceSplit
    channels: Tuple[str, ...]
    #: what one unit of ``X`` is (``"frame (0.1 s)"``)
    time_unit: str


def aeon_data_folder() -> str:
    """The ``datasets/data`` folder of the installed ``aeon`` package (not imported).

    :raises ImportError: when aeon is not installed, with the command that installs it.
    """
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the real-data benchmark reads datasets bundled in the aeon wheel; install it without its "
            "dependencies: pip install --no-deps 'aeon==1.6.0' (or the paper package's 'bench' extra)"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data")


def parse_ts(text: str) -> Tuple[List[np.ndarray], List[str]]:
    r"""Parse a time-series file in the ``.ts`` format of the UEA/UCR archive.

    Header lines start with ``@`` (``@univariate``, ``@dimensions``, ``@classLabel``, ...),
    comments with ``#``; after ``@data`` each line is one series: its channels separated by
    ``:``, each channel's values separated by ``,`` (``?`` for a missing value, read as NaN),
    and, when the header declares ``@classLabel true`` or ``@targetLabel true``, the label as
    the last ``:`` field. Channels of one series may differ in length (variable-length files);
    the shorter ones are padded with NaN at the end.

    :param text: the file's contents.
    :returns: ``(series, labels)``: one float64 array ``[T_i, D]`` per series, and its label
        (``""`` when the file has none).
    :raises ValueError: without an ``@data`` line, or when the series have different numbers
        of channels.
    """
    labelled = False
    in_data = False
    series: List[np.ndarray] = []
    labels: List[str] = []
    for number, raw in enumerate(io.StringIO(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            words = line.lower().split()
            if words[0] in ("@classlabel", "@targetlabel") and len(words) > 1:
                labelled = words[1] == "true"
            elif words[0] == "@data":
                in_data = True
            continue
        fields = line.split(":")
        label = fields.pop().strip() if labelled else ""
        columns = [
            np.array([np.nan if v.strip() == "?" else float(v) for v in field.split(",")], dtype=np.float64)
            for field in fields
        ]
        length = max(len(c) for c in columns)
        values = np.full((length, len(columns)), np.nan)
        for d, c in enumerate(columns):
            values[: len(c), d] = c
        if series and values.shape[1] != series[0].shape[1]:
            raise ValueError(
                f"line {number}: {values.shape[1]} channels, but the first series has {series[0].shape[1]}"
            )
        series.append(values)
        labels.append(label)
    if not in_data:
        raise ValueError("not a .ts file: no @data line")
    return series, labels


def pad_sequences(series: Sequence[np.ndarray]) -> SequenceSplit:
    """Stack ``[T_i, D]`` series into the padded layout: frames ``0..T_i-1`` real, the rest padding
    (``Y`` 0 and ``X`` the last real time there, as :meth:`~gpflow_svgpvae.SVGPVAE.impute` expects)."""
    lengths = np.array([len(s) for s in series])
    V, T, D = len(series), int(lengths.max()), series[0].shape[1]
    X = np.zeros((V, T, 1))
    Y = np.zeros((V, T, D))
    frames = np.zeros((V, T), np.float32)
    for v, s in enumerate(series):
        n = len(s)
        X[v, :, 0] = np.minimum(np.arange(T), n - 1)
        Y[v, :n] = s
        frames[v, :n] = 1.0
    return SequenceSplit(X, Y, frames)


def windows(values: np.ndarray, length: int) -> np.ndarray:
    """Non-overlapping windows ``[len(values) // length, length, D]`` of a ``[N, D]`` recording
    (the remainder at the end is dropped)."""
    count = len(values) // length
    return np.asarray(values[: count * length]).reshape(count, length, values.shape[1])


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _check_name(name: str) -> str:
    key = name.lower().replace("-", "_")
    if name in RESERVED or key in RESERVED or key.replace("_", "") == "japanesevowels":
        raise ValueError(
            f"dataset {name!r} is reserved for held-out checks and is not loaded by the benchmark; "
            f"choose one of {', '.join(DATASETS)}"
        )
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return key


def load(name: str, folder: Optional[str] = None) -> SequenceDataset:
    """Load one dataset of :data:`DATASETS` from aeon's data folder (or ``folder``).

    :raises ValueError: for a reserved or unknown name.
    :raises ImportError: when aeon is not installed and no ``folder`` is given.
    """
    key = _check_name(name)
    folder = folder or aeon_data_folder()
    if key == "basic_motions":
        splits = []
        for part in ("TRAIN", "TEST"):
            series, _ = parse_ts(_read(os.path.join(folder, "BasicMotions", f"BasicMotions_{part}.ts")))
            splits.append(pad_sequences(series))
        channels = ("acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z")
        return SequenceDataset("basic_motions", splits[0], splits[1], channels, "frame (0.1 s)")
    # daphnet
    with open(os.path.join(folder, "Daphnet_S06R02E0", "S06R02E0.csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    channels = tuple(header[1:-1])  # drop the time stamp and the anomaly flag
    values = np.array([[float(v) for v in row[1:-1]] for row in body])
    cut = windows(values, _DAPHNET_WINDOW)
    num_train = int(round(_DAPHNET_TRAIN_FRACTION * len(cut)))
    order = np.random.default_rng(0).permutation(len(cut))
    return SequenceDataset(
        "daphnet",
        pad_sequences(list(cut[np.sort(order[:num_train])])),
        pad_sequences(list(cut[np.sort(order[num_train:])])),
        channels,
        "frame (1/64 s)",
    )
