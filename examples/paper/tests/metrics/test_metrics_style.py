"""Style metrics of generated frames: the generic metrics and the SPRITES glue."""

import importlib
import json

import numpy as np
import pytest

from svgpvae_paper.metrics import ChoiceAccuracy, nearest_rendering_accuracy, palette_colour_accuracy

S = importlib.import_module("svgpvae_paper.datasets.sprites")
COLUMN = {name: i for i, name in enumerate(S.SpriteStyle._fields)}


# ----------------------------------------------------------------------------- generic: colours
def _naive_colour_predictions(generated, labels, slots, choices):
    """Per frame: render each option on the true label map and take its mean over the attribute's pixels."""
    out = []
    for y, lab in zip(generated.reshape((-1,) + generated.shape[-3:]), labels.reshape((-1,) + labels.shape[-2:])):
        mask = np.isin(lab, slots)
        if not mask.any():
            out.append(-1)
            continue
        g = y[mask].mean(axis=0)
        means = []
        for option in choices:
            rendered = np.zeros(lab.shape + (3,))
            for s, colour in zip(slots, option):
                rendered[lab == s] = colour
            means.append(rendered[mask].mean(axis=0))
        out.append(int(np.argmin([np.linalg.norm(g - m) for m in means])))
    return np.array(out).reshape(generated.shape[:-3])


def test_palette_colour_accuracy_uses_the_rendered_shaded_means():
    slots = np.array([1, 2])  # light, shaded
    choices = np.array(
        [
            [[1.0, 0.0, 0.0], [0.5, 0.0, 0.0]],
            [[0.0, 1.0, 0.0], [0.0, 0.5, 0.0]],
            [[0.625, 0.0, 0.0], [0.3, 0.0, 0.0]],  # its *base* colour is option 0's shaded mean
        ]
    )
    labels = np.array([[[1, 2], [2, 2]], [[0, 0], [0, 1]], [[0, 0], [0, 0]]])
    generated = np.ones((3, 2, 2, 3))
    generated[0] = choices[0][labels[0] - 1]  # option 0 exactly: mean red 0.625, nearest base colour: option 2
    generated[1, 1, 1] = [0.0, 0.9, 0.0]  # the only attribute pixel; the others are ignored
    result = palette_colour_accuracy(generated, labels, slots, choices, [0, 2, 1])
    assert isinstance(result, ChoiceAccuracy)
    assert result.predicted.tolist() == [0, 1, -1]
    assert result.correct.tolist() == [True, False, False]
    assert result.scored.tolist() == [True, True, False]
    assert result.pixels.tolist() == [4, 1, 0]
    assert result.accuracy == 0.5 and result.num_scored == 2 and result.num_correct == 1
    summary = result.summary()
    assert summary == {
        "accuracy": 0.5,
        "num_correct": 1,
        "num_scored": 2,
        "num_skipped": 1,
        "num_pixels": 5,
        "mean_pixels_per_scored_frame": 2.5,
        "chance": 1 / 3,
        "confusion": [[1, 0, 0], [0, 0, 0], [0, 1, 0]],  # true 0 -> 0; true 2 -> 1
        "accuracy_per_true_option": [1.0, None, 0.0],
    }
    json.dumps(summary)


def test_palette_colour_accuracy_matches_a_naive_implementation(rng):
    slots = np.array([3, 5])
    choices = rng.uniform(size=(6, 2, 3))
    labels = rng.integers(0, 7, size=(2, 3, 5, 5))
    labels[1, 2] = 0  # a frame without the attribute
    generated = rng.uniform(size=(2, 3, 5, 5, 3)).astype(np.float32)
    true = rng.integers(0, 6, size=(2, 3))
    result = palette_colour_accuracy(generated, labels, slots, choices, true)
    expected = _naive_colour_predictions(generated.astype(np.float64), labels, slots, choices)
    assert result.predicted.shape == (2, 3)
    assert np.array_equal(result.predicted, expected)
    assert np.array_equal(result.correct, (expected == true) & (expected >= 0))
    assert np.array_equal(result.pixels, np.isin(labels, slots).sum(axis=(-1, -2)))
    assert result.summary()["num_skipped"] == 1
    # Confusion matrix counted in numpy: rows true, columns predicted, scored frames only.
    expected_confusion = np.zeros((6, 6), int)
    for t, p in zip(true.ravel(), expected.ravel()):
        if p >= 0:
            expected_confusion[t, p] += 1
    assert np.array_equal(result.confusion(), expected_confusion)
    summary = result.summary()
    assert summary["confusion"] == expected_confusion.tolist()
    for k, a in enumerate(summary["accuracy_per_true_option"]):
        n = expected_confusion[k].sum()
        assert (a is None) if n == 0 else a == expected_confusion[k, k] / n
    # No scored frame: accuracy NaN, summary None.
    empty = palette_colour_accuracy(generated[:1, :1], np.zeros((1, 1, 5, 5), int), slots, choices, true[:1, :1])
    assert np.isnan(empty.accuracy) and empty.summary()["accuracy"] is None


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(labels=np.zeros((2, 4, 5), int)), "label_maps must have shape"),
        (dict(labels=np.zeros((2, 4, 4))), "integer palette slots"),
        (dict(slots=np.array([[1, 2]])), "slots must be"),
        (dict(slots=np.array([1, 1])), "distinct"),
        (dict(choices=np.zeros((6, 3, 3))), "choices must have shape"),
        (dict(choices=np.zeros((1, 2, 3))), "at least 2 options"),
        (dict(choices=np.full((6, 2, 3), np.nan)), "choices must be finite"),
        (dict(true=np.array([0, 6])), r"true_choice must be in \[0, 6\)"),
        (dict(true=np.array([0])), "leading shape"),
        (dict(true=np.array([0.0, 1.0])), "integer option indices"),
        (dict(generated=np.full((2, 4, 4, 3), np.inf)), "generated must be finite"),
        (dict(generated=np.zeros((4, 3))), r"\[\.\.\., H, W, C\]"),
    ],
)
def test_palette_colour_accuracy_errors(change, match):
    args = dict(
        generated=np.zeros((2, 4, 4, 3)),
        labels=np.zeros((2, 4, 4), int),
        slots=np.array([1, 2]),
        choices=np.zeros((6, 2, 3)),
        true=np.array([0, 5]),
    )
    args.update(change)
    with pytest.raises(ValueError, match=match):
        palette_colour_accuracy(args["generated"], args["labels"], args["slots"], args["choices"], args["true"])


# ----------------------------------------------------------------------------- generic: renderings
def test_nearest_rendering_accuracy_array_and_callable(rng):
    candidates = np.repeat(rng.uniform(size=(4, 3, 1, 6, 6, 3)), 3, axis=2)  # [V, T, K=3, ...], all equal ...
    candidates[:, :, 1, :2] += 0.5  # ... except on rows 0-1 (option 1) and pixel (5, 5) (option 2)
    candidates[:, :, 2, 5, 5] -= 0.5
    true = rng.integers(0, 3, size=(4, 3))
    exact = np.take_along_axis(candidates, true[:, :, None, None, None, None], axis=2)[:, :, 0]
    noisy = exact + rng.normal(scale=0.01, size=exact.shape)
    result = nearest_rendering_accuracy(noisy, candidates, true)
    assert result.accuracy == 1.0 and result.predicted.shape == (4, 3) and result.scored.all()
    assert (result.pixels == 13).all()  # 12 pixels of rows 0-1 and pixel (5, 5)
    flat = candidates.reshape((12,) + candidates.shape[2:])
    via_callable = nearest_rendering_accuracy(noisy, lambda rows: flat[rows], true, chunk_size=5)
    assert np.array_equal(via_callable.predicted, result.predicted)
    assert np.array_equal(via_callable.pixels, result.pixels)
    # Brute force over all pixels agrees on arbitrary frames.
    frames = rng.uniform(size=exact.shape)
    brute = np.argmin(((candidates - frames[:, :, None]) ** 2).sum(axis=(-1, -2, -3)), axis=-1)
    assert np.array_equal(nearest_rendering_accuracy(frames, candidates, true).predicted, brute)


def test_nearest_rendering_accuracy_errors():
    frames, candidates, true = np.zeros((2, 4, 4, 3)), np.zeros((2, 3, 4, 4, 3)), np.array([0, 2])
    with pytest.raises(ValueError, match="candidates must have shape"):
        nearest_rendering_accuracy(frames, candidates[:, :, :3], true)
    with pytest.raises(ValueError, match="at least 2 candidates"):
        nearest_rendering_accuracy(frames, candidates[:, :1], np.array([0, 0]))
    with pytest.raises(ValueError, match=r"true_choice must be in \[0, 3\)"):
        nearest_rendering_accuracy(frames, candidates, np.array([0, 3]))
    with pytest.raises(ValueError, match="leading shape"):
        nearest_rendering_accuracy(frames, candidates, np.array([0]))
    with pytest.raises(ValueError, match="candidates for 2 frames"):
        nearest_rendering_accuracy(frames, lambda rows: np.zeros((len(rows), 3, 4, 5, 3)), true)
    with pytest.raises(ValueError, match="chunk_size"):
        nearest_rendering_accuracy(frames, candidates, true, chunk_size=0)
    with pytest.raises(ValueError, match="candidates must be finite"):
        nearest_rendering_accuracy(frames, np.full((2, 3, 4, 4, 3), np.nan), true)


# ----------------------------------------------------------------------------- SPRITES
@pytest.fixture(scope="module")
def many():
    """The paper's 1296 characters; the tests draw characters of 10 of the 45 shape combinations
    (top shape 0, bottom shape 0 or 1; every hair shape), so that few label maps are built."""
    ds = S.sprites(1296, seed=0)
    styles = ds.attributes
    chars = np.flatnonzero((styles[:, COLUMN["top_shape"]] == 0) & (styles[:, COLUMN["bottom_shape"]] < 2))
    return ds, chars


def _frames(ds, chars, poses):
    """Generator frames of ``chars`` in ``poses`` (rendering only the shape combinations they use)."""
    c, p = np.broadcast_arrays(chars, poses)
    return S.render_sprites(ds.attributes[c.reshape(-1)], p.reshape(-1)).reshape(c.shape + (64, 64, 3))


def test_colour_options_are_the_rendered_palette_with_its_shade():
    for name, table in (
        ("skin", S._SKIN),
        ("hair_colour", S._HAIR),
        ("top_colour", S._TOP),
        ("bottom_colour", S._BOTTOM),
    ):
        slots, choices = S.colour_options(name)
        base = np.array(list(table.values()), np.float64)
        assert slots.shape == (2,) and choices.shape == (6, 2, 3)
        np.testing.assert_array_equal(choices[:, 0], (base / 255).astype(np.float32))
        np.testing.assert_array_equal(choices[:, 1], (np.round(base * S._SHADE) / 255).astype(np.float32))
    with pytest.raises(ValueError, match="attribute must be one of"):
        S.colour_options("hair_shape")


def test_test_targets_of_the_generator_score_100_percent_and_label_maps_reproduce_them():
    ds = S.sprites(5, seed=0, num_train_characters=3)  # 2 test characters x 36 target poses
    pairs = (ds.test_characters[:, None], ds.test_target_poses)
    maps = ds.label_maps_for(*pairs)
    assert maps.shape == (2, 36, 64, 64) and maps.dtype == np.uint8
    palettes = S._palettes(ds.attributes[ds.test_characters])
    rendered = np.stack([palettes[v][maps[v]] for v in range(2)])
    assert np.array_equal(rendered, ds.test_target_frames(dtype=np.uint8))
    results = ds.style_accuracy(ds.test_target_frames(), *pairs)
    assert set(results) == set(S.STYLE_ATTRIBUTES)
    assert all(r.accuracy == 1.0 and r.predicted.shape == (2, 36) for r in results.values())


def test_generator_frames_score_100_percent_for_every_attribute(many):
    ds, pool = many
    rng = np.random.default_rng(6)
    chars, poses = rng.choice(pool, size=(30, 1), replace=False), rng.integers(0, 72, size=(30, 12))
    frames = _frames(ds, chars, poses)
    results = ds.style_accuracy(frames, chars, poses)
    assert set(results) == set(S.STYLE_ATTRIBUTES)
    for name, result in results.items():
        assert result.predicted.shape == (30, 12)
        assert result.accuracy == 1.0, name
        assert result.num_scored + result.summary()["num_skipped"] == 30 * 12
        assert result.num_scored > 0.99 * 30 * 12 and (result.pixels[result.scored] > 0).all()
    as_uint8 = ds.style_accuracy(np.round(frames * 255).astype(np.uint8), chars, poses, hair_shape=False)
    assert set(as_uint8) == set(S.COLOUR_ATTRIBUTES)
    assert all(r.accuracy == 1.0 for r in as_uint8.values())
    summary = S.style_accuracy_summary(results)
    assert summary["mean_colour_accuracy"] == 1.0 and summary["hair_shape"]["chance"] == 0.2
    json.dumps(summary)


def _binomial_ok(rate, p, n, sds=4.0):
    return abs(rate - p) <= sds * np.sqrt(p * (1 - p) / n)


def test_another_character_of_the_same_shapes_scores_exactly_the_shared_colours(many):
    """A random other character with the same shapes has the same label maps, so its frames are
    exactly its own option on the true attribute pixels: the prediction is its colour, and the
    accuracy is the (deterministic) fraction of frames whose two characters share the colour,
    which over many characters is near chance (1/6)."""
    ds, pool = many
    rng = np.random.default_rng(7)
    styles = ds.attributes
    shape_key = styles[:, 2] * 9 + styles[:, 4] * 3 + styles[:, 6]
    chars = pool
    partners = np.array(
        [rng.choice(np.flatnonzero((shape_key == shape_key[c]) & (np.arange(len(styles)) != c))) for c in chars]
    )
    poses = rng.integers(0, 72, size=(len(chars), 2))
    frames = _frames(ds, partners[:, None], poses)
    results = ds.style_accuracy(frames, chars[:, None], poses, hair_shape=False)
    for name in S.COLOUR_ATTRIBUTES:
        result, col = results[name], COLUMN[name]
        partner_colour = np.broadcast_to(styles[partners, col][:, None], poses.shape)
        assert np.array_equal(result.predicted[result.scored], partner_colour[result.scored]), name
        shared = (styles[partners, col] == styles[chars, col])[:, None] & result.scored
        assert result.num_correct == shared.sum() and result.accuracy == shared.sum() / result.num_scored
        confusion = np.zeros((6, 6), int)  # true colour x the partner's colour, over scored frames
        np.add.at(
            confusion,
            (np.broadcast_to(styles[chars, col][:, None], poses.shape)[result.scored], partner_colour[result.scored]),
            1,
        )
        assert np.array_equal(result.confusion(), confusion), name
        assert _binomial_ok(np.mean(styles[partners, col] == styles[chars, col]), 1 / 6, len(chars)), name


def test_another_hair_shape_scores_exactly_the_shared_shapes(many):
    """Same colours and top/bottom shapes, a random hair shape: the frame *is* the candidate of
    its hair shape, so the prediction is that shape; near chance (1/5) over many characters."""
    ds, pool = many
    rng = np.random.default_rng(8)
    true_styles = ds.attributes[pool]
    other_styles = true_styles.copy()
    other_styles[:, COLUMN["hair_shape"]] = rng.integers(0, 5, size=len(pool))
    poses = rng.integers(0, 72, size=len(pool))
    frames = S.render_sprites(other_styles, poses)
    result = S.style_accuracy(frames, true_styles, poses)["hair_shape"]
    assert np.array_equal(result.predicted, other_styles[:, COLUMN["hair_shape"]])
    same = other_styles[:, COLUMN["hair_shape"]] == true_styles[:, COLUMN["hair_shape"]]
    assert result.num_correct == same.sum() and result.accuracy == same.mean()
    assert _binomial_ok(result.accuracy, 1 / 5, len(pool))


def test_uniform_grey_frame_scores_the_nearest_rendered_option(many):
    """A uniform grey frame is classified, per frame, as the option whose rendering on the true
    attribute pixels has the nearest mean colour to grey (hair shape: the nearest re-drawn frame),
    computed here by rendering every option; its accuracy is the fraction of frames whose true
    option is that one -- deterministic, and not a property of the model."""
    ds, pool = many
    rng = np.random.default_rng(9)
    chars, poses = rng.choice(pool, size=40, replace=False), rng.integers(0, 72, size=40)
    grey = np.full((40, 64, 64, 3), 0.5, np.float32)
    results = ds.style_accuracy(grey, chars, poses)
    styles, maps = ds.attributes[chars], ds.label_maps_for(chars, poses)
    for name in S.COLOUR_ATTRIBUTES:
        col = COLUMN[name]
        slots, _ = S.colour_options(name)
        variants = np.repeat(styles[:, None], 6, axis=1)
        variants[:, :, col] = np.arange(6)
        rendered = S.render_sprites(variants.reshape(-1, 7), np.repeat(poses, 6)).reshape(40, 6, 64, 64, 3)
        expected = []
        for i in range(40):
            mask = np.isin(maps[i], slots)
            means = rendered[i][:, mask].astype(np.float64).mean(axis=1)  # [6, 3]
            expected.append(int(np.argmin(np.linalg.norm(means - 0.5, axis=1))) if mask.any() else -1)
        expected = np.array(expected)
        assert np.array_equal(results[name].predicted, expected), name
        scored = expected >= 0
        assert results[name].accuracy == np.mean(expected[scored] == styles[scored, col])
    candidates = S.hair_shape_candidates(styles, poses).astype(np.float64)
    expected = np.argmin(((candidates - 0.5) ** 2).sum(axis=(2, 3, 4)), axis=1)
    assert np.array_equal(results["hair_shape"].predicted, expected)
    assert results["hair_shape"].accuracy == np.mean(expected == styles[:, COLUMN["hair_shape"]])


def test_style_accuracy_errors(many, tmp_path):
    ds, pool = many
    chars = pool[:2]
    frames = _frames(ds, chars, np.array([0, 1]))
    with pytest.raises(ValueError, match="generated must have shape"):
        ds.style_accuracy(frames[:, :32], chars, [0, 1])
    with pytest.raises(ValueError, match="generated must have shape"):
        ds.style_accuracy(frames, pool[:3], [0, 1, 2])
    with pytest.raises(ValueError, match="character ids"):
        ds.style_accuracy(frames, [0, 5000], [0, 1])
    with pytest.raises(ValueError, match="pose indices"):
        ds.style_accuracy(frames, chars, [0, 72])
    with pytest.raises(ValueError, match=r"styles must have shape \[\.\.\., 7\]"):
        S.style_accuracy(frames, np.zeros((2, 6), int), [0, 1])
    with pytest.raises(ValueError, match="out of range"):
        S.label_maps([[0, 0, 5, 0, 0, 0, 0]], [0])
    small = S.sprites(3, seed=0, num_train_characters=2)
    S.save_sprites_arrays(small, tmp_path)
    loaded = S.load_sprites_arrays(tmp_path)
    with pytest.raises(ValueError, match="only for procedural data"):
        loaded.style_accuracy(frames, [0, 1], [0, 1])
    with pytest.raises(ValueError, match="only for procedural data"):
        loaded.label_maps_for([0], [0])
