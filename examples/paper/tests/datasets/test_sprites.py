"""Tests for the procedural SPRITES generator and the real-array loader."""

import importlib
import os

import numpy as np
import pytest

# The package re-exports the `sprites` *function*; the tests need the module.
S = importlib.import_module("svgpvae_paper.datasets.sprites")


def _colours(img: np.ndarray) -> set:
    return {tuple(c) for c in np.unique(img.reshape(-1, 3), axis=0)}


def _u8(rgb) -> tuple:
    return tuple(int(v) for v in rgb)


# ---------------------------------------------------------------------------
# Styles and poses
# ---------------------------------------------------------------------------
def test_character_styles_distinct_deterministic_and_prefix_stable():
    styles = S.character_styles(1296, seed=0)
    assert len(styles) == 1296
    assert len(set(styles)) == 1296
    assert all(isinstance(s, S.SpriteStyle) for s in styles)
    arr = np.array(styles)
    assert arr.min() >= 0
    assert np.all(arr.max(axis=0) < np.array([6, 6, 5, 6, 3, 6, 3]))
    # Every option of every attribute is used, so all attributes vary.
    assert [len(np.unique(arr[:, j])) for j in range(7)] == [6, 6, 5, 6, 3, 6, 3]
    assert S.character_styles(1296, seed=0) == styles
    assert S.character_styles(1296, seed=1) != styles
    assert S.character_styles(10, seed=0) == styles[:10]
    assert S.NUM_STYLES == 58320 >= 1296
    with pytest.raises(ValueError):
        S.character_styles(S.NUM_STYLES + 1)


def test_pose_index_layout():
    assert S.NUM_POSES == 72 and len(S.ACTIONS) == 9 and len(set(S.ACTIONS)) == 9
    assert S.pose_index("walk_front", 0) == 0
    assert S.pose_index("hurt", 7) == 71
    assert S.pose_index(5, 3) == 43
    with pytest.raises(ValueError):
        S.pose_index("dance", 0)
    with pytest.raises(ValueError):
        S.pose_index("slash", 8)


def test_all_1296_characters_render_pairwise_distinct():
    styles = np.array(S.character_styles(1296, seed=0))
    # One front view and one side view show every attribute.
    for pose in (S.pose_index("walk_front", 0), S.pose_index("walk_right", 2)):
        imgs = S.render_sprites(styles, pose, dtype=np.uint8)
        assert imgs.shape == (1296, 64, 64, 3)
        assert len(np.unique(imgs.reshape(1296, -1), axis=0)) == 1296


def test_render_sprite_shape_dtype_range_and_background():
    style = S.character_styles(1, seed=0)[0]
    img = S.render_sprite(style, S.pose_index("spellcast", 5))
    assert img.shape == (64, 64, 3) and img.dtype == np.float32
    assert img.min() >= 0.0 and img.max() <= 1.0
    # Plain white background at the corners, a figure in the middle.
    assert np.all(img[0, 0] == 1.0) and np.all(img[-1, -1] == 1.0)
    figure = np.any(img < 1.0, axis=-1)
    assert 0.08 < figure.mean() < 0.5
    with pytest.raises(ValueError):
        S.render_sprite(style, 72)
    with pytest.raises(ValueError):
        S.render_sprite((6, 0, 0, 0, 0, 0, 0), 0)


def test_every_shape_combination_has_72_distinct_poses():
    for h in range(len(S.HAIR_SHAPES)):
        for t in range(len(S.TOP_SHAPES)):
            for b in range(len(S.BOTTOM_SHAPES)):
                maps = S._shape_label_maps(h, t, b).reshape(72, -1)
                assert len(np.unique(maps, axis=0)) == 72, (h, t, b)


def test_frames_change_with_pose_but_colours_stay_those_of_the_character():
    ds = S.sprites(8, seed=2, num_train_characters=6)
    for c in range(8):
        frames = ds.frames_for(c, np.arange(72), dtype=np.uint8)
        assert len(np.unique(frames.reshape(72, -1), axis=0)) == 72
        style = ds.style(c)
        skin = _u8(S._SKIN[S.SKIN_TONES[style.skin]])
        hair = _u8(S._HAIR[S.HAIR_COLOURS[style.hair_colour]])
        top = _u8(S._TOP[S.TOP_COLOURS[style.top_colour]])
        bottom = _u8(S._BOTTOM[S.BOTTOM_COLOURS[style.bottom_colour]])
        palette = {_u8(rgb) for rgb in S._palettes(np.array([style]))[0]}
        for f in frames:
            used = _colours(f)
            # Only the character's palette is used, and its four main colours are visible in every pose.
            assert used <= palette
            assert {skin, hair, top, bottom} <= used


def test_changing_one_colour_attribute_changes_only_those_pixels():
    base = S.SpriteStyle(2, 1, 3, 0, 0, 4, 1)
    other = base._replace(top_colour=3)
    poses = np.arange(72)
    a = S.render_sprites([base] * 72, poses, dtype=np.uint8)
    b = S.render_sprites([other] * 72, poses, dtype=np.uint8)
    top = np.array(S._TOP["red"])
    top_shade = np.round(top * S._SHADE)
    is_top = np.all(a == top, axis=-1) | np.all(a == top_shade, axis=-1)
    changed = np.any(a != b, axis=-1)
    assert np.array_equal(changed, is_top)
    assert changed.any(axis=(1, 2)).all()  # the top is visible in every pose


# ---------------------------------------------------------------------------
# Dataset protocol
# ---------------------------------------------------------------------------
def test_paper_protocol_split_sizes():
    ds = S.sprites()  # renders nothing until frames are requested
    assert ds.num_characters == 1296
    assert ds.train_characters.shape == (1000,) and ds.test_characters.shape == (296,)
    assert np.intersect1d(ds.train_characters, ds.test_characters).size == 0
    assert np.array_equal(np.union1d(ds.train_characters, ds.test_characters), np.arange(1296))
    assert ds.train_poses.shape == (1000, 50)
    assert all(len(np.unique(row)) == 50 for row in ds.train_poses)
    assert ds.train_poses.min() >= 0 and ds.train_poses.max() < 72
    assert ds.test_context_poses.shape == (296, 36) and ds.test_target_poses.shape == (296, 36)
    both = np.concatenate([ds.test_context_poses, ds.test_target_poses], axis=1)
    assert all(np.array_equal(np.sort(row), np.arange(72)) for row in both)
    # Pose draws are random per character, not one shared subset.
    assert len({tuple(r) for r in ds.train_poses}) > 990
    assert len({tuple(r) for r in ds.test_context_poses}) > 290
    assert ds.attributes.shape == (1296, 7)
    assert not ds.train_poses.flags.writeable
    with pytest.raises(ValueError):
        ds.train_poses[0, 0] = 1


def test_validation_characters_leave_the_paper_split_unchanged():
    plain = S.sprites(60, num_train_characters=40)
    ds = S.sprites(60, num_train_characters=40, num_validation_characters=7, num_context_poses=30)
    ref = S.sprites(60, num_train_characters=40, num_context_poses=30)
    for name in ("train_characters", "test_characters", "train_poses", "test_context_poses", "test_target_poses"):
        assert np.array_equal(getattr(ds, name), getattr(ref, name)), name
    assert np.array_equal(ds.train_poses, plain.train_poses)
    assert plain.validation_characters.shape == (0,)
    # ids after the first 60; styles the next ones of the same permutation, so distinct from all 60
    assert np.array_equal(ds.validation_characters, np.arange(60, 67)) and ds.num_characters == 67
    assert np.array_equal(ds.attributes[:60], plain.attributes)
    assert np.array_equal(ds.attributes, S.sprites(67, num_train_characters=40).attributes)
    assert len({tuple(a) for a in ds.attributes}) == 67
    assert ds.validation_context_poses.shape == (7, 30) and ds.validation_target_poses.shape == (7, 42)
    both = np.concatenate([ds.validation_context_poses, ds.validation_target_poses], axis=1)
    assert all(np.array_equal(np.sort(row), np.arange(72)) for row in both)
    assert not ds.validation_context_poses.flags.writeable
    # frames are those of the characters' styles, rendered independently
    frames = ds.validation_target_frames(dtype=np.uint8)
    c, p = 3, ds.validation_target_poses[3, 5]
    expected = S.render_sprites([S.SpriteStyle(*ds.attributes[63])], [p], dtype=np.uint8)[0]
    assert np.array_equal(frames[c, 5], expected)
    assert ds.validation_context_frames().shape == (7, 30, 64, 64, 3)


def test_validation_characters_bad_counts():
    with pytest.raises(ValueError, match="num_validation_characters must be >= 0"):
        S.sprites(10, num_train_characters=5, num_validation_characters=-1)
    with pytest.raises(ValueError, match="at most 58320"):
        S.sprites(58320, num_train_characters=5, num_validation_characters=1)


def test_generator_is_deterministic_by_seed():
    kw = dict(num_train_characters=15, train_poses_per_character=10, num_context_poses=30)
    a, b, c = S.sprites(20, seed=3, **kw), S.sprites(20, seed=3, **kw), S.sprites(20, seed=4, **kw)
    for name in (
        "train_characters",
        "test_characters",
        "train_poses",
        "test_context_poses",
        "test_target_poses",
        "attributes",
    ):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.train_frames(), b.train_frames())
    assert not np.array_equal(a.attributes, c.attributes)
    assert not np.array_equal(a.train_poses, c.train_poses)
    assert not np.array_equal(a.train_characters, c.train_characters)
    assert not np.array_equal(a.frames_for(np.arange(20), 0), c.frames_for(np.arange(20), 0))
    assert a.test_context_poses.shape == (5, 30) and a.test_target_poses.shape == (5, 42)


def test_frames_for_broadcasting_dtypes_and_helpers():
    ds = S.sprites(6, seed=0, num_train_characters=4, train_poses_per_character=3, num_context_poses=2)
    f32 = ds.frames_for(np.arange(6)[:, None], np.arange(72)[None, :])
    assert f32.shape == (6, 72, 64, 64, 3) and f32.dtype == np.float32
    assert f32.min() >= 0.0 and f32.max() <= 1.0
    u8 = ds.all_frames()
    assert u8.dtype == np.uint8
    # Palette colours are multiples of 1/255: uint8 is lossless and reproduces float32 exactly.
    assert np.array_equal(u8.astype(np.float32) / np.float32(255.0), f32)
    assert np.array_equal(ds.frames, f32)
    assert ds.train_frames().shape == (4, 3, 64, 64, 3)
    assert np.array_equal(ds.train_frames()[1, 2], f32[ds.train_characters[1], ds.train_poses[1, 2]])
    assert ds.test_context_frames(dtype=np.uint8).shape == (2, 2, 64, 64, 3)
    assert ds.test_target_frames().shape == (2, 70, 64, 64, 3)
    assert np.array_equal(ds.frames_for(3, 10), f32[3, 10])
    with pytest.raises(ValueError):
        ds.frames_for(6, 0)
    with pytest.raises(ValueError):
        ds.frames_for(0, -1)
    with pytest.raises(ValueError):
        ds.frames_for(0, 0, dtype=np.int32)


def test_sprites_argument_errors():
    with pytest.raises(ValueError, match="num_train_characters"):
        S.sprites(10, num_train_characters=11)
    with pytest.raises(ValueError, match="train_poses_per_character"):
        S.sprites(10, num_train_characters=5, train_poses_per_character=73)
    with pytest.raises(ValueError, match="num_context_poses"):
        S.sprites(10, num_train_characters=5, num_context_poses=72)


# ---------------------------------------------------------------------------
# Loader
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_loader_round_trip(tmp_path, dtype):
    ds = S.sprites(7, seed=1, num_train_characters=5, train_poses_per_character=8, num_context_poses=20)
    S.save_sprites_arrays(ds, tmp_path, dtype=dtype)
    assert sorted(os.listdir(tmp_path)) == ["test.npy", "test_attributes.npy", "train.npy", "train_attributes.npy"]
    loaded = S.load_sprites_arrays(tmp_path, seed=1, train_poses_per_character=8, num_context_poses=20)
    assert isinstance(loaded, S.SpritesDataset)
    assert loaded.source == os.fspath(tmp_path)
    assert np.array_equal(loaded.train_characters, np.arange(5))
    assert np.array_equal(loaded.test_characters, np.arange(5, 7))
    assert loaded.train_poses.shape == (5, 8)
    assert loaded.test_context_poses.shape == (2, 20) and loaded.test_target_poses.shape == (2, 52)
    original = np.concatenate([ds.train_characters, ds.test_characters])
    assert np.array_equal(loaded.attributes, ds.attributes[original])
    want = ds.frames_for(original[:, None], np.arange(72)[None, :])
    got = loaded.all_frames(dtype=np.float32)
    assert got.dtype == np.float32
    assert np.array_equal(got, want)  # exact: palette colours are k / 255
    assert np.array_equal(loaded.all_frames(dtype=np.uint8), np.round(want * 255).astype(np.uint8))
    # Mixed train/test ids in one request.
    assert np.array_equal(loaded.frames_for([6, 0], [3, 70]), want[[6, 0], [3, 70]])


def _write(path, train, test):
    os.makedirs(path, exist_ok=True)
    np.save(os.path.join(path, "train.npy"), train)
    np.save(os.path.join(path, "test.npy"), test)


def test_loader_errors(tmp_path):
    missing = tmp_path / "no_such_dir"
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        S.load_sprites_arrays(missing)

    good = np.zeros((2, 72, 64, 64, 3), np.uint8)
    d = tmp_path / "only_train"
    os.makedirs(d)
    np.save(d / "train.npy", good)
    with pytest.raises(FileNotFoundError, match="test.npy"):
        S.load_sprites_arrays(d)

    d = tmp_path / "shape"
    _write(d, good, np.zeros((2, 72, 32, 32, 3), np.uint8))
    with pytest.raises(ValueError, match=r"expected shape .*got \[2, 72, 32, 32, 3\]"):
        S.load_sprites_arrays(d)

    d = tmp_path / "dtype"
    _write(d, good.astype(np.int32), good)
    with pytest.raises(ValueError, match="dtype"):
        S.load_sprites_arrays(d)

    d = tmp_path / "range"
    bad = np.zeros((2, 72, 64, 64, 3), np.float32)
    bad[1, 3, 5, 5, 0] = 1.5
    _write(d, bad, np.zeros_like(bad))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        S.load_sprites_arrays(d)

    d = tmp_path / "mixed"
    _write(d, good, good.astype(np.float32))
    with pytest.raises(ValueError, match="both"):
        S.load_sprites_arrays(d)

    d = tmp_path / "attributes"
    _write(d, good, good)
    np.save(d / "train_attributes.npy", np.zeros((3, 4), np.int64))
    np.save(d / "test_attributes.npy", np.zeros((2, 4), np.int64))
    with pytest.raises(ValueError, match="attributes"):
        S.load_sprites_arrays(d)
    os.remove(d / "test_attributes.npy")
    with pytest.raises(FileNotFoundError, match="test_attributes.npy"):
        S.load_sprites_arrays(d)

    # Without attribute files the loader works and the style accessor explains itself.
    d = tmp_path / "plain"
    _write(d, good, good)
    ds = S.load_sprites_arrays(d)
    assert ds.attributes is None and ds.num_characters == 4
    with pytest.raises(ValueError, match="procedural"):
        ds.style(0)


# ---------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------
def test_save_sprite_sheet(tmp_path):
    out = tmp_path / "sheet.png"
    poses = [0, 20, 43, 71]
    grid = S.save_sprite_sheet(out, num_characters=2, poses=poses, scale=1)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert grid.shape == (2 * 66 + 2, 4 * 66 + 2, 3)
    styles = S.character_styles(2, seed=0)
    assert np.array_equal(grid[2 + 66 : 2 + 66 + 64, 2 + 2 * 66 : 2 + 2 * 66 + 64], S.render_sprite(styles[1], 43))
