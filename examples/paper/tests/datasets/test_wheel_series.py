"""The .ts parser, the padding and windowing, and the loader's allowed names (aeon only if installed)."""

import importlib.util

import numpy as np
import pytest

from svgpvae_paper.datasets import wheel_series

TINY_TS = """# a comment
@problemName Tiny
@timeStamps false
@univariate false
@dimensions 2
@equalLength false
@classLabel true up down
@data
1.0,2.0,3.0:4.0,5.0,6.0:up
7.5,?:8.5,9.5:down
"""


def test_parse_ts_reads_channels_labels_and_missing_values():
    series, labels = wheel_series.parse_ts(TINY_TS)
    assert labels == ["up", "down"]
    np.testing.assert_array_equal(series[0], [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    assert series[1].shape == (2, 2)
    assert series[1][0, 0] == 7.5 and np.isnan(series[1][1, 0])
    np.testing.assert_array_equal(series[1][:, 1], [8.5, 9.5])


def test_parse_ts_without_labels_keeps_the_last_field_as_a_channel():
    text = "@classLabel false\n@data\n1,2:3,4\n"
    series, labels = wheel_series.parse_ts(text)
    np.testing.assert_array_equal(series[0], [[1, 3], [2, 4]])
    assert labels == [""]


def test_parse_ts_refuses_text_without_data_and_ragged_channels():
    with pytest.raises(ValueError, match="@data"):
        wheel_series.parse_ts("@problemName x\n")
    with pytest.raises(ValueError, match="channels"):
        wheel_series.parse_ts("@data\n1,2:3,4\n1,2\n")


def test_pad_sequences_layout():
    split = wheel_series.pad_sequences([np.ones((3, 2)), 2 * np.ones((1, 2))])
    assert split.Y.shape == (2, 3, 2)
    np.testing.assert_array_equal(split.frames, [[1, 1, 1], [1, 0, 0]])
    np.testing.assert_array_equal(split.X[..., 0], [[0, 1, 2], [0, 0, 0]])
    np.testing.assert_array_equal(split.Y[1], [[2, 2], [0, 0], [0, 0]])


def test_windows_cut_non_overlapping_and_drop_the_rest():
    values = np.arange(14).reshape(7, 2)
    cut = wheel_series.windows(values, 3)
    assert cut.shape == (2, 3, 2)
    np.testing.assert_array_equal(cut[1], values[3:6])


@pytest.mark.parametrize("name", ["JapaneseVowels", "japanese_vowels", "Japanese-Vowels"])
def test_reserved_dataset_is_refused(name):
    with pytest.raises(ValueError, match="reserved"):
        wheel_series.load(name, folder="/nonexistent")


def test_unknown_dataset_is_refused():
    with pytest.raises(ValueError, match="unknown dataset"):
        wheel_series.load("gun_point", folder="/nonexistent")


@pytest.mark.skipif(importlib.util.find_spec("aeon") is None, reason="aeon is not installed")
@pytest.mark.parametrize(
    "name, shape_train, shape_test",
    [("basic_motions", (40, 100, 6), (40, 100, 6)), ("daphnet", (66, 64, 9), (44, 64, 9))],
)
def test_bundled_datasets_load(name, shape_train, shape_test):
    data = wheel_series.load(name)
    assert data.train.Y.shape == shape_train and data.test.Y.shape == shape_test
    assert np.all(np.isfinite(data.train.Y)) and np.all(data.train.frames == 1)
    assert len(data.channels) == shape_train[-1]
