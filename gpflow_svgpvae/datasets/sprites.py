r"""SPRITES-like cartoon characters (the SVGP-VAE paper's third experiment).

The paper (Jazbec et al., AISTATS 2021, following Casale et al. 2018) uses the
LPC SPRITES data: 1296 cartoon characters ("styles"), each drawn in 72 poses
(9 actions x 8 frames), 64 x 64 RGB. Models train on 1000 characters with 50
random poses each (N = 50,000 images) and are tested on the 296 unseen
characters: condition on 36 poses of a test character, generate the other 36.

The real sprite sheets cannot be downloaded in every environment, so this
module offers two sources of the *same* :class:`SpritesDataset`:

* :func:`sprites` -- a procedural generator of little cartoon people drawn
  with numpy rasterisation of simple shapes (see *Renderer* below);
* :func:`load_sprites_arrays` -- a loader for users who have the real arrays
  (see *On-disk layout* below).

Characters (styles)
-------------------
A style is a :class:`SpriteStyle`: seven discrete attributes, each an index
into the option names below.

=================  ====================================================
attribute          options
=================  ====================================================
``skin``           :data:`SKIN_TONES` (6)
``hair_colour``    :data:`HAIR_COLOURS` (6)
``hair_shape``     :data:`HAIR_SHAPES` (5: short, long, spiky, bun, afro)
``top_colour``     :data:`TOP_COLOURS` (6)
``top_shape``      :data:`TOP_SHAPES` (3: shirt, vest, long sleeves)
``bottom_colour``  :data:`BOTTOM_COLOURS` (6)
``bottom_shape``   :data:`BOTTOM_SHAPES` (3: trousers, shorts, skirt)
=================  ====================================================

That is :data:`NUM_STYLES` = 6 * 6 * 5 * 6 * 3 * 6 * 3 = 58,320 distinct
characters; :func:`character_styles` takes the first ``num_characters`` of a
seeded random permutation of them, so the styles are distinct by construction
and ``character_styles(n, seed)`` is a prefix of ``character_styles(m, seed)``
for ``n <= m``.

Poses
-----
Pose ``p`` is frame ``p % 8`` of action ``p // 8`` of :data:`ACTIONS`::

    0 walk_front   1 walk_left   2 walk_back   3 walk_right   4 spellcast
    5 slash        6 thrust      7 shoot       8 hurt

Walks are gait cycles seen from four sides; ``spellcast`` raises both arms and
grows magic sparkles (front view); ``slash`` swings a sword overhead (facing
right); ``thrust`` pulls back and thrusts a spear (facing left); ``shoot``
raises a bow, draws and releases an arrow (facing right); ``hurt`` flinches,
crouches, kneels and falls over (front view). Every pose changes limb angles
and/or body offsets, and all 72 poses of a character render differently.

Renderer
--------
Images are *pixel art*: a pixel takes exactly one colour (no anti-aliasing),
like the LPC sheets. A pose is a 2-D skeleton (head, torso, two 2-link arms
and legs, props); shapes (circles, ellipses, thick segments = capsules,
polygons) are rasterised at pixel centres ``(i + 0.5)`` into a *label map*
whose entries name a palette slot (skin, hair, top, bottom, their shades,
shoes, eyes, outline, props, background). Each body part is drawn with a
1-pixel dark outline in painter's order (far limbs first, shaded), so
overlapping parts stay readable. Falling and facing left are handled by
transforming the pixel grid into figure coordinates, so every shape can be
defined upright and facing right.

Because the label map depends only on the three *shape* attributes and the
pose (5 * 3 * 3 * 72 = 3240 maps of 64 x 64 uint8 = 13 MB), while colours
enter only through a 16-colour palette per style, rendering a frame is one
palette look-up. The label maps are built lazily per shape combination
(about 0.1 s each) and cached, so the dataset is *rendered on demand*:
:meth:`SpritesDataset.frames_for` renders any set of (character, pose) pairs
directly into the requested dtype, and the full ``[1296, 72, 64, 64, 3]``
array (1.15 GB as uint8, 4.59 GB as float32) exists only when explicitly
asked for via :meth:`SpritesDataset.all_frames` / :attr:`SpritesDataset.frames`.
Training can keep the 50,000 training images as uint8 (614 MB; 2.46 GB as
float32) and convert minibatches to float, or, cheaper still, render each
minibatch on the fly (a batch of 500 float32 frames takes ~30 ms).

Measured on a 2-core CPU: building all 45 shape combinations takes ~3 s;
rendering all 1296 x 72 frames then takes ~9 s as uint8 (1.15 GB output,
peak RSS ~1.3 GB above the interpreter) and ~24 s as float32 (4.59 GB). The
whole paper protocol therefore runs within ~1-2 GB if frames are kept as
uint8 or rendered per batch.

Palette colours are multiples of 1/255, so ``frames_for(..., dtype=uint8)``
is lossless and ``uint8 / 255`` reproduces the float32 frames bit for bit.

Splits and seeding
------------------
:func:`sprites` and :func:`load_sprites_arrays` derive three independent
random streams from ``np.random.SeedSequence(seed)`` (spawn keys 0, 1, 2):
the style permutation, the train/test character split, and the pose splits.
Each training character gets ``train_poses_per_character`` (50) distinct
random poses; each test character gets its own random split of the 72 poses
into ``num_context_poses`` (36) context and 72 - 36 target poses. Index arrays
are sorted along their last axis and read-only.

On-disk layout (real SPRITES)
-----------------------------
:func:`load_sprites_arrays` reads a directory containing

``train.npy``
    ``[num_train, 72, 64, 64, 3]`` uint8 (0..255) or float (values in [0, 1]).
``test.npy``
    ``[num_test, 72, 64, 64, 3]``, same dtype family.
``train_attributes.npy``, ``test_attributes.npy`` (optional, both or none)
    ``[num_train, A]`` / ``[num_test, A]`` integer attribute labels.

Characters ``0 .. num_train - 1`` are the training characters and the rest
the test characters. Axis 1 must follow the pose order above (action-major,
8 frames each); if your sheets use another action order, permute axis 1
before saving (the models only need the order to be consistent across
characters). :func:`save_sprites_arrays` writes this layout, e.g. to export
the procedural data.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "IMAGE_SIZE",
    "ACTIONS",
    "FRAMES_PER_ACTION",
    "NUM_POSES",
    "SKIN_TONES",
    "HAIR_COLOURS",
    "HAIR_SHAPES",
    "TOP_COLOURS",
    "TOP_SHAPES",
    "BOTTOM_COLOURS",
    "BOTTOM_SHAPES",
    "NUM_STYLES",
    "SpriteStyle",
    "SpritesDataset",
    "pose_index",
    "character_styles",
    "render_sprite",
    "render_sprites",
    "sprites",
    "load_sprites_arrays",
    "save_sprites_arrays",
    "save_sprite_sheet",
]

IMAGE_SIZE = 64
ACTIONS: Tuple[str, ...] = (
    "walk_front",
    "walk_left",
    "walk_back",
    "walk_right",
    "spellcast",
    "slash",
    "thrust",
    "shoot",
    "hurt",
)
FRAMES_PER_ACTION = 8
NUM_POSES = len(ACTIONS) * FRAMES_PER_ACTION  # 72

# ---------------------------------------------------------------------------
# Style attributes. Colours are 0..255 so that palettes are exact in uint8.
# ---------------------------------------------------------------------------
_SKIN = {
    "light": (255, 224, 196),
    "peach": (241, 190, 150),
    "tan": (214, 156, 108),
    "brown": (156, 102, 64),
    "dark": (96, 62, 42),
    "green": (150, 196, 110),  # LPC has orcs; also makes skin tones more separable
}
_HAIR = {
    "brown": (110, 64, 30),
    "blonde": (244, 206, 86),
    "ginger": (210, 92, 36),
    "white": (226, 226, 232),
    "black": (44, 40, 52),
    "pink": (240, 120, 180),
}
_TOP = {
    "red": (206, 48, 48),
    "blue": (52, 100, 210),
    "green": (60, 160, 80),
    "yellow": (236, 200, 50),
    "purple": (134, 70, 170),
    "white": (236, 236, 236),
}
_BOTTOM = {
    "navy": (40, 52, 110),
    "brown": (120, 80, 46),
    "charcoal": (62, 62, 70),
    "grey": (150, 150, 160),
    "olive": (104, 118, 52),
    "khaki": (200, 176, 120),
}
SKIN_TONES: Tuple[str, ...] = tuple(_SKIN)
HAIR_COLOURS: Tuple[str, ...] = tuple(_HAIR)
HAIR_SHAPES: Tuple[str, ...] = ("short", "long", "spiky", "bun", "afro")
TOP_COLOURS: Tuple[str, ...] = tuple(_TOP)
TOP_SHAPES: Tuple[str, ...] = ("shirt", "vest", "long_sleeves")
BOTTOM_COLOURS: Tuple[str, ...] = tuple(_BOTTOM)
BOTTOM_SHAPES: Tuple[str, ...] = ("trousers", "shorts", "skirt")

_ATTRIBUTE_SIZES = (
    len(SKIN_TONES),
    len(HAIR_COLOURS),
    len(HAIR_SHAPES),
    len(TOP_COLOURS),
    len(TOP_SHAPES),
    len(BOTTOM_COLOURS),
    len(BOTTOM_SHAPES),
)
NUM_STYLES = int(np.prod(_ATTRIBUTE_SIZES))  # 58,320


class SpriteStyle(NamedTuple):
    """One character: indices into the attribute option tuples."""

    skin: int
    hair_colour: int
    hair_shape: int
    top_colour: int
    top_shape: int
    bottom_colour: int
    bottom_shape: int

    def describe(self) -> str:
        """Human-readable summary, e.g. ``'tan skin, blonde bun hair, ...'``."""
        return (
            f"{SKIN_TONES[self.skin]} skin, {HAIR_COLOURS[self.hair_colour]} "
            f"{HAIR_SHAPES[self.hair_shape]} hair, {TOP_COLOURS[self.top_colour]} "
            f"{TOP_SHAPES[self.top_shape]}, {BOTTOM_COLOURS[self.bottom_colour]} "
            f"{BOTTOM_SHAPES[self.bottom_shape]}"
        )


# Palette slots of a label map.
_BG, _OUTLINE, _SKIN_L, _SKIN_D, _HAIR_L, _HAIR_D, _TOP_L, _TOP_D = range(8)
_BOT_L, _BOT_D, _SHOE_L, _SHOE_D, _EYE, _METAL, _WOOD, _MAGIC = range(8, 16)
_NUM_SLOTS = 16
_SHADE = 0.72  # far limbs are darker so that they read as "behind"
_CONSTANT_COLOURS = {
    _OUTLINE: (30, 24, 30),
    _SHOE_L: (92, 54, 30),
    _SHOE_D: (66, 38, 22),
    _EYE: (24, 24, 40),
    _METAL: (206, 212, 226),
    _WOOD: (140, 92, 46),
    _MAGIC: (255, 236, 110),
}
_DEFAULT_BACKGROUND = (255, 255, 255)


def pose_index(action: Union[str, int], frame: int) -> int:
    """Pose index of ``frame`` (0..7) of ``action`` (name or index)."""
    a = ACTIONS.index(action) if isinstance(action, str) else int(action)
    if not 0 <= a < len(ACTIONS) or not 0 <= frame < FRAMES_PER_ACTION:
        raise ValueError(f"no pose for action={action!r}, frame={frame}")
    return a * FRAMES_PER_ACTION + int(frame)


# ---------------------------------------------------------------------------
# Styles
# ---------------------------------------------------------------------------
def _streams(seed: int):
    """Independent generators for styles, character split and pose split."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def _decode_styles(codes: np.ndarray) -> np.ndarray:
    """Mixed-radix decode of style codes to ``[n, 7]`` attribute indices."""
    return np.stack(np.unravel_index(codes, _ATTRIBUTE_SIZES), axis=-1).astype(np.int64)


def _style_array(num_characters: int, seed: int) -> np.ndarray:
    if not 1 <= num_characters <= NUM_STYLES:
        raise ValueError(f"num_characters must be in [1, {NUM_STYLES}], got {num_characters}")
    # A full permutation (not rng.choice) makes smaller sets prefixes of larger ones.
    codes = _streams(seed)[0].permutation(NUM_STYLES)[:num_characters]
    return _decode_styles(codes)


def character_styles(num_characters: int = 1296, seed: int = 0) -> Tuple[SpriteStyle, ...]:
    """Return ``num_characters`` distinct styles, deterministically from ``seed``.

    :param num_characters: how many characters (at most :data:`NUM_STYLES`).
    :param seed: seed of the style permutation (see the module docstring).
    :returns: tuple of :class:`SpriteStyle`, all distinct.
    """
    return tuple(SpriteStyle(*map(int, row)) for row in _style_array(num_characters, seed))


def _palettes(styles: np.ndarray, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """``[n, 16, 3]`` uint8 palettes for ``[n, 7]`` style attributes."""
    styles = np.asarray(styles, dtype=np.int64).reshape(-1, 7)
    n = styles.shape[0]
    pal = np.zeros((n, _NUM_SLOTS, 3), dtype=np.float64)
    pal[:, _BG] = background
    for slot, colour in _CONSTANT_COLOURS.items():
        pal[:, slot] = colour
    for light, dark, table, col in (
        (_SKIN_L, _SKIN_D, _SKIN, 0),
        (_HAIR_L, _HAIR_D, _HAIR, 1),
        (_TOP_L, _TOP_D, _TOP, 3),
        (_BOT_L, _BOT_D, _BOTTOM, 5),
    ):
        colours = np.array(list(table.values()), dtype=np.float64)[styles[:, col]]
        pal[:, light] = colours
        pal[:, dark] = colours * _SHADE
    return np.round(pal).astype(np.uint8)


# ---------------------------------------------------------------------------
# Pose skeletons
# ---------------------------------------------------------------------------
# Figure geometry (pixels; x right, y down; figure faces +x in side views).
_HEAD_R = 8.5
_HEAD = (32.0, 15.0)
_NECK_Y = 23.5
_HIP_Y = 39.0
_GROUND_Y = 56.0  # y of the ankle joints when standing
_UPPER_ARM, _FOREARM, _ARM_R, _HAND_R = 7.0, 6.0, 1.8, 2.1
_THIGH, _SHIN, _LEG_R = 8.5, 8.0, 2.3


@dataclass
class _Limb:
    root: np.ndarray
    mid: np.ndarray
    end: np.ndarray
    near: bool = True


@dataclass
class _Pose:
    view: str  # "front", "back" or "side" (side = facing +x before mirroring)
    head: np.ndarray
    neck: np.ndarray
    hip: np.ndarray
    arms: Tuple[_Limb, _Limb]  # side view: (far, near); front/back: (screen-left, screen-right)
    legs: Tuple[_Limb, _Limb]
    mirror: bool = False
    rotation: float = 0.0  # degrees, clockwise on screen, about ``pivot``
    pivot: Tuple[float, float] = (32.0, 56.0)
    shift: Tuple[float, float] = (0.0, 0.0)
    props: list = field(default_factory=list)  # (stage, kind, params)
    eyes_closed: bool = False


def _p(x, y) -> np.ndarray:
    return np.array([x, y], dtype=np.float64)


def _dir(theta_deg: float, facing: float = 1.0) -> np.ndarray:
    """Unit vector at ``theta`` degrees from straight down, turned towards ``facing``."""
    t = np.deg2rad(theta_deg)
    return _p(facing * np.sin(t), np.cos(t))


def _limb_angles(root, a1, a2, l1, l2, facing=1.0, near=True) -> _Limb:
    """Two-link limb from joint angles (``a2`` is relative to ``a1``)."""
    root = np.asarray(root, dtype=np.float64)
    mid = root + l1 * _dir(a1, facing)
    return _Limb(root, mid, mid + l2 * _dir(a1 + a2, facing), near)


def _limb_ik(root, target, l1, l2, bend: float, near=True) -> _Limb:
    """Two-link limb reaching for ``target``; ``bend`` = +1/-1 picks the elbow side."""
    root = np.asarray(root, dtype=np.float64)
    d_vec = np.asarray(target, dtype=np.float64) - root
    d = float(np.clip(np.linalg.norm(d_vec), abs(l1 - l2) + 1e-3, l1 + l2 - 1e-3))
    u = d_vec / max(np.linalg.norm(d_vec), 1e-9)
    beta = np.arccos(np.clip((l1 * l1 + d * d - l2 * l2) / (2 * l1 * d), -1.0, 1.0))
    c, s = np.cos(bend * beta), np.sin(bend * beta)
    mid = root + l1 * _p(c * u[0] - s * u[1], s * u[0] + c * u[1])
    return _Limb(root, mid, root + d * u, near)


def _front_pose(view, k, *, arm_out=(10.0, 10.0), arm_bend=(8.0, 8.0), hand_dy=(0.0, 0.0),
                foot_dy=(0.0, 0.0), bob=0.0, squat=0.0) -> _Pose:
    """Front/back view. Index 0 is the screen-left limb, 1 the screen-right one."""
    dy = bob
    head = _p(_HEAD[0], _HEAD[1] + dy + squat)
    neck = _p(32.0, _NECK_Y + dy + squat)
    hip = _p(32.0, _HIP_Y + dy + squat)
    arms, legs = [], []
    for i, side in enumerate((-1.0, 1.0)):
        shoulder = _p(32.0 + side * 6.8, 26.0 + dy + squat)
        arm = _limb_angles(shoulder, arm_out[i], arm_bend[i], _UPPER_ARM, _FOREARM, facing=side)
        # Hands swinging towards/away from the viewer move up/down on screen.
        arm.mid = arm.mid + _p(0, 0.5 * hand_dy[i])
        arm.end = arm.end + _p(0, hand_dy[i])
        arms.append(arm)
        hip_joint = _p(32.0 + side * 3.6, _HIP_Y + 1.0 + dy + squat)
        foot = _p(32.0 + side * (3.8 + 0.55 * squat), _GROUND_Y + foot_dy[i])
        # Knees bend outwards when squatting (front view of a crouch).
        legs.append(_limb_ik(hip_joint, foot, _THIGH, _SHIN, bend=side * -1.0))
    return _Pose(view, head, neck, hip, tuple(arms), tuple(legs))


def _side_pose(*, far_arm, near_arm, far_leg, near_leg, bob=0.0, ground=True) -> _Pose:
    """Side view facing +x. Limbs are ``(angle, relative angle)`` or ``_Limb``s."""
    head = _p(32.5, _HEAD[1] + bob)
    neck = _p(32.0, _NECK_Y + bob)
    hip = _p(32.0, _HIP_Y + bob)
    shoulder = _p(32.0, 26.0 + bob)
    hip_joint = _p(32.0, _HIP_Y + 1.0 + bob)

    def arm(spec, near):
        if isinstance(spec, _Limb):
            spec.near = near
            return spec
        return _limb_angles(shoulder, spec[0], spec[1], _UPPER_ARM, _FOREARM, near=near)

    def leg(spec, near):
        return _limb_angles(hip_joint, spec[0], spec[1], _THIGH, _SHIN, near=near)

    pose = _Pose("side", head, neck, hip, (arm(far_arm, False), arm(near_arm, True)),
                 (leg(far_leg, False), leg(near_leg, True)))
    if ground:  # keep the lowest foot on the ground: the body bobs with the gait
        lowest = max(pose.legs[0].end[1], pose.legs[1].end[1])
        pose.shift = (0.0, _GROUND_Y - lowest)
    return pose


def _walk_front(k: int, view: str) -> _Pose:
    ph = 2 * np.pi * k / FRAMES_PER_ACTION
    s, c = np.sin(ph), np.cos(ph)
    # Forward foot looks lower (closer), the swinging foot is lifted.
    foot_dy = (1.5 * c - 2.5 * max(0.0, s), -1.5 * c - 2.5 * max(0.0, -s))
    hand_dy = (-2.0 * c, 2.0 * c)
    if view == "back":  # from behind, "forward" is away from the viewer
        foot_dy = (-1.5 * c - 2.5 * max(0.0, s), 1.5 * c - 2.5 * max(0.0, -s))
        hand_dy = (2.0 * c, -2.0 * c)
    return _front_pose(view, k, arm_out=(8.0 + 4 * abs(s), 8.0 + 4 * abs(s)),
                       hand_dy=hand_dy, foot_dy=foot_dy, bob=-abs(s))


def _walk_side(k: int, mirror: bool) -> _Pose:
    ph = 2 * np.pi * k / FRAMES_PER_ACTION
    s, c = np.sin(ph), np.cos(ph)
    thigh = 28.0 * s
    # The knee bends while the leg swings forward (thigh angle increasing).
    near_leg = (thigh, -45.0 * max(0.0, c) - 5.0)
    far_leg = (-thigh, -45.0 * max(0.0, -c) - 5.0)
    pose = _side_pose(far_arm=(28.0 * s, 20.0), near_arm=(-28.0 * s, 20.0),
                      far_leg=far_leg, near_leg=near_leg)
    pose.mirror = mirror
    return pose


def _spellcast(k: int) -> _Pose:
    out = (12.0, 40.0, 75.0, 110.0, 140.0, 155.0, 160.0, 150.0)[k]
    bend = (10.0, 20.0, 25.0, 20.0, 10.0, 5.0, 0.0, -10.0)[k]
    pose = _front_pose("front", k, arm_out=(out, out), arm_bend=(bend, bend), bob=-0.5 * (k >= 4))
    if k >= 3:
        radius = (1.4, 2.2, 3.0, 3.6, 2.6)[k - 3]
        for arm in pose.arms:
            pose.props.append(("last", "sparkle", (arm.end.copy(), radius, k)))
    return pose


def _slash(k: int) -> _Pose:
    upper = (20.0, 100.0, 155.0, 175.0, 120.0, 70.0, 40.0, 25.0)[k]
    fore = (40.0, 50.0, 30.0, 10.0, 0.0, -5.0, -10.0, 0.0)[k]
    stride = (6.0, 4.0, 8.0, 12.0, 20.0, 24.0, 22.0, 12.0)[k]
    pose = _side_pose(far_arm=(35.0, 70.0), near_arm=(upper, fore),
                      far_leg=(-stride, -5.0), near_leg=(stride, -10.0))
    hand, elbow = pose.arms[1].end, pose.arms[1].mid
    fore_dir = (hand - elbow) / np.linalg.norm(hand - elbow)
    ang = np.arctan2(fore_dir[0], fore_dir[1]) + np.deg2rad(45.0)  # blade ahead of the wrist
    blade = _p(np.sin(ang), np.cos(ang))
    pose.props.append(("last", "sword", (hand.copy(), blade)))
    return pose


def _thrust(k: int) -> _Pose:
    reach = (3.0, 1.0, -3.0, -4.0, 4.0, 10.0, 9.0, 2.0)[k]
    stride = (5.0, 5.0, 2.0, 0.0, 14.0, 24.0, 24.0, 10.0)[k]
    shoulder = _p(32.0, 26.0)
    height = 34.0 - 0.1 * reach
    near = _limb_ik(shoulder, (34.0 + reach, height), _UPPER_ARM, _FOREARM, bend=-1.0)
    far = _limb_ik(shoulder, (28.0 + reach, height + 0.5), _UPPER_ARM, _FOREARM, bend=-1.0)
    pose = _side_pose(far_arm=far, near_arm=near, far_leg=(-stride, -5.0),
                      near_leg=(stride, -8.0))
    pose.props.append(("before_near_arm", "spear", (far.end[0] - 16.0, near.end[0] + 17.0, height)))
    pose.mirror = True  # thrust faces left, so both side directions appear in the data
    return pose


def _shoot(k: int) -> _Pose:
    shoulder = _p(32.0, 26.0)
    bow_hand = ((38.0, 35.0), (43.0, 28.0), (44.5, 26.0), (44.5, 26.0), (44.5, 26.0),
                (44.5, 26.0), (44.5, 26.5), (42.0, 29.0))[k]
    draw_hand = ((34.0, 35.0), (37.0, 30.0), (42.5, 26.0), (37.5, 25.5), (33.0, 25.0),
                 (29.5, 24.5), (27.0, 23.0), (33.0, 31.0))[k]
    far = _limb_ik(shoulder, bow_hand, _UPPER_ARM, _FOREARM, bend=1.0)
    near = _limb_ik(shoulder, draw_hand, _UPPER_ARM, _FOREARM, bend=-1.0)
    pose = _side_pose(far_arm=far, near_arm=near, far_leg=(-10.0, -4.0), near_leg=(12.0, -4.0))
    drawn = 2 <= k <= 5
    pose.props.append(("before_near_arm", "bow", (far.end.copy(), near.end.copy() if drawn else None,
                                                   1 <= k <= 5)))
    return pose


def _hurt(k: int) -> _Pose:
    squat = (0.0, 1.5, 4.0, 7.0, 7.0, 6.0, 5.0, 4.0)[k]
    out = (30.0, 45.0, 35.0, 25.0, 30.0, 50.0, 70.0, 80.0)[k]
    pose = _front_pose("front", k, arm_out=(out, out), arm_bend=(30.0, 30.0), squat=squat)
    pose.rotation = (0.0, 0.0, 0.0, 0.0, 20.0, 45.0, 70.0, 90.0)[k]
    pose.pivot = (32.0, 56.0)
    if pose.rotation:
        # Put the falling figure back on the ground and centre it, so that it
        # stays inside the frame while it tips over.
        a = np.deg2rad(pose.rotation)
        rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        blobs = [(pose.head, _HEAD_R + 2.0), (pose.neck, 8.0), (pose.hip, 8.0)]
        for limb in pose.arms + pose.legs:
            blobs += [(limb.mid, 3.5), (limb.end, 3.5)]
        pts = np.array([rot @ (c - _p(*pose.pivot)) for c, _ in blobs])
        rad = np.array([r for _, r in blobs])
        lo, hi = (pts - rad[:, None]).min(0), (pts + rad[:, None]).max(0)
        pose.shift = (32.0 - pose.pivot[0] - 0.5 * (lo[0] + hi[0]), 59.0 - pose.pivot[1] - hi[1])
    pose.eyes_closed = k >= 5
    return pose


def _build_pose(p: int) -> _Pose:
    action, k = ACTIONS[p // FRAMES_PER_ACTION], p % FRAMES_PER_ACTION
    if action == "walk_front":
        return _walk_front(k, "front")
    if action == "walk_back":
        return _walk_front(k, "back")
    if action == "walk_left":
        return _walk_side(k, mirror=True)
    if action == "walk_right":
        return _walk_side(k, mirror=False)
    return {"spellcast": _spellcast, "slash": _slash, "thrust": _thrust,
            "shoot": _shoot, "hurt": _hurt}[action](k)


# ---------------------------------------------------------------------------
# Rasteriser
# ---------------------------------------------------------------------------
class _Canvas:
    """A label map plus pixel-centre coordinates in *figure* space.

    The pose transform (mirror, rotation, shift) is applied by mapping every
    screen pixel centre back into figure coordinates once, so shapes are
    always specified for an upright, right-facing figure.
    """

    def __init__(self, pose: _Pose):
        n = IMAGE_SIZE
        ys, xs = np.mgrid[0:n, 0:n].astype(np.float64) + 0.5
        if pose.mirror:
            xs = n - xs
        xs = xs - pose.shift[0]
        ys = ys - pose.shift[1]
        if pose.rotation:
            a = np.deg2rad(pose.rotation)
            px, py = pose.pivot
            dx, dy = xs - px, ys - py
            # Inverse of a clockwise-on-screen rotation by ``a``.
            xs = px + np.cos(a) * dx + np.sin(a) * dy
            ys = py - np.sin(a) * dx + np.cos(a) * dy
        self.x, self.y = xs, ys
        self.labels = np.full((n, n), _BG, dtype=np.uint8)

    # -- shapes (boolean masks) --------------------------------------------
    def circle(self, c, r):
        return (self.x - c[0]) ** 2 + (self.y - c[1]) ** 2 <= r * r

    def ellipse(self, c, rx, ry):
        return ((self.x - c[0]) / rx) ** 2 + ((self.y - c[1]) / ry) ** 2 <= 1.0

    def rect(self, x0, y0, x1, y1):
        return (self.x >= x0) & (self.x <= x1) & (self.y >= y0) & (self.y <= y1)

    def capsule(self, a, b, r):
        a, b = np.asarray(a, float), np.asarray(b, float)
        ab = b - a
        t = ((self.x - a[0]) * ab[0] + (self.y - a[1]) * ab[1]) / max(ab @ ab, 1e-12)
        t = np.clip(t, 0.0, 1.0)
        return (self.x - a[0] - t * ab[0]) ** 2 + (self.y - a[1] - t * ab[1]) ** 2 <= r * r

    def polyline(self, pts, r):
        mask = np.zeros_like(self.labels, dtype=bool)
        for a, b in zip(pts[:-1], pts[1:]):
            mask |= self.capsule(a, b, r)
        return mask

    def polygon(self, pts):
        """Even-odd point-in-polygon test at every pixel centre."""
        inside = np.zeros_like(self.labels, dtype=bool)
        pts = [np.asarray(p, float) for p in pts]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:] + pts[:1]):
            if y0 == y1:
                continue
            crosses = (y0 > self.y) != (y1 > self.y)
            x_at = x0 + (self.y - y0) * (x1 - x0) / (y1 - y0)
            inside ^= crosses & (self.x < x_at)
        return inside

    # -- drawing -----------------------------------------------------------
    def part(self, pieces, outline=True):
        """Draw ``[(mask, label), ...]`` as one part with a 1-px outline around their union."""
        pieces = [(m, lab) for m, lab in pieces if m is not None]
        if not pieces:
            return
        if outline:
            union = np.logical_or.reduce([m for m, _ in pieces])
            grown = union.copy()
            # 4-neighbour dilation in *screen* space: pixel-art outline.
            grown[1:] |= union[:-1]
            grown[:-1] |= union[1:]
            grown[:, 1:] |= union[:, :-1]
            grown[:, :-1] |= union[:, 1:]
            self.labels[grown & ~union] = _OUTLINE
        for mask, label in pieces:
            self.labels[mask] = label


def _draw_leg(cv: _Canvas, leg: _Limb, bottom_shape: int, facing_side: bool):
    skin, cloth, shoe = (_SKIN_L, _BOT_L, _SHOE_L) if leg.near else (_SKIN_D, _BOT_D, _SHOE_D)
    pieces = [(cv.capsule(leg.root, leg.mid, _LEG_R), skin),
              (cv.capsule(leg.mid, leg.end, _LEG_R * 0.9), skin)]
    if bottom_shape == 0:  # trousers down to the ankle
        pieces += [(cv.capsule(leg.root, leg.mid, _LEG_R + 0.2), cloth),
                   (cv.capsule(leg.mid, leg.end, _LEG_R * 0.9 + 0.2), cloth)]
    elif bottom_shape == 1:  # shorts: upper 60% of the thigh
        knee_ish = leg.root + 0.6 * (leg.mid - leg.root)
        pieces.append((cv.capsule(leg.root, knee_ish, _LEG_R + 0.4), cloth))
    # Skirts are drawn with the torso (they cover both legs).
    if facing_side:
        shin = leg.end - leg.mid
        toe = leg.end + 2.0 * _p(shin[1], -shin[0]) / max(np.linalg.norm(shin), 1e-9)
        pieces.append((cv.capsule(leg.end + _p(-0.5, 0.5), toe + _p(0, 0.5), 1.9), shoe))
    else:
        pieces.append((cv.ellipse(leg.end + _p(0, 0.8), 2.8, 1.9), shoe))
    cv.part(pieces)


def _draw_arm(cv: _Canvas, arm: _Limb, top_shape: int):
    skin, cloth = (_SKIN_L, _TOP_L) if arm.near else (_SKIN_D, _TOP_D)
    pieces = [(cv.capsule(arm.root, arm.mid, _ARM_R), skin),
              (cv.capsule(arm.mid, arm.end, _ARM_R * 0.9), skin)]
    if top_shape == 0:  # short sleeve
        pieces.append((cv.capsule(arm.root, arm.root + 0.55 * (arm.mid - arm.root), _ARM_R + 0.5), cloth))
    elif top_shape == 2:  # long sleeve down to the wrist
        wrist = arm.end + 0.3 * (arm.mid - arm.end)
        pieces += [(cv.capsule(arm.root, arm.mid, _ARM_R + 0.3), cloth),
                   (cv.capsule(arm.mid, wrist, _ARM_R * 0.9 + 0.3), cloth)]
    pieces.append((cv.circle(arm.end, _HAND_R), skin))
    cv.part(pieces)


def _draw_torso(cv: _Canvas, pose: _Pose, top_shape: int, bottom_shape: int):
    side = pose.view == "side"
    n, h = pose.neck, pose.hip
    half_sh, half_waist, half_hip = (4.6, 4.2, 4.6) if side else (7.6, 6.0, 6.8)
    waist_y = h[1] - 4.0
    pieces = []
    pelvis = cv.polygon([(h[0] - half_waist, waist_y), (h[0] + half_waist, waist_y),
                         (h[0] + half_hip, h[1] + 2.5), (h[0] - half_hip, h[1] + 2.5)])
    pieces.append((pelvis, _BOT_L))
    if bottom_shape == 2:  # skirt flaring to just above the knees
        flare = 7.0 if side else 10.0
        pieces.append((cv.polygon([(h[0] - half_waist, waist_y), (h[0] + half_waist, waist_y),
                                   (h[0] + flare, h[1] + 8.5), (h[0] - flare, h[1] + 8.5)]), _BOT_L))
    top = cv.polygon([(n[0] - half_sh, n[1]), (n[0] + half_sh, n[1]),
                      (h[0] + half_waist, waist_y + 0.5), (h[0] - half_waist, waist_y + 0.5)])
    # Round the shoulders a little.
    top |= cv.circle((n[0] - half_sh + 2.0, n[1] + 2.0), 2.5) | cv.circle((n[0] + half_sh - 2.0, n[1] + 2.0), 2.5)
    top &= cv.y >= n[1] - 0.5
    pieces.append((top, _TOP_L))
    if top_shape == 1:  # vest: open neck shows skin (a V at the front, a notch at the back)
        if pose.view == "front":
            pieces.append((cv.polygon([(n[0] - 3.2, n[1] - 0.5), (n[0] + 3.2, n[1] - 0.5),
                                       (n[0], n[1] + 7.0)]), _SKIN_L))
        elif side:
            pieces.append((cv.polygon([(n[0] + 1.0, n[1] - 0.5), (n[0] + half_sh + 0.5, n[1] - 0.5),
                                       (n[0] + half_sh + 0.5, n[1] + 6.0)]), _SKIN_L))
        else:
            pieces.append((cv.rect(n[0] - 2.5, n[1] - 0.5, n[0] + 2.5, n[1] + 1.5), _SKIN_L))
    else:  # collar line of shirts
        if pose.view != "back":
            pieces.append((cv.rect(n[0] - 2.0, n[1] - 0.5, n[0] + 2.0, n[1] + 0.6) if not side else
                           cv.rect(n[0] - 1.0, n[1] - 0.5, n[0] + 2.5, n[1] + 0.6), _SKIN_L))
    cv.part(pieces)


def _draw_head(cv: _Canvas, pose: _Pose, hair_shape: int):
    c, r = pose.head, _HEAD_R
    u, v = cv.x - c[0], cv.y - c[1]
    view = pose.view
    big = cv.circle(c, r + 1.0)

    # Hair behind the head (afro puff, long hair seen from behind).
    back = None
    if hair_shape == 4:
        centre = c + (_p(-2.5, -2.0) if view == "side" else _p(0, -2.0))
        back = cv.circle(centre, r + 3.5)
    elif hair_shape == 1 and view != "front":
        if view == "back":
            back = cv.rect(c[0] - r - 1.0, c[1], c[0] + r + 1.0, c[1] + r + 7.0)
        else:
            back = cv.rect(c[0] - r - 1.5, c[1], c[0] - 0.5, c[1] + r + 7.0)
        back |= big  # one outline around head and hair, drawn with the back layer
    if back is not None:
        cv.part([(back, _HAIR_L)])

    head_pieces = [(cv.circle(c, r), _SKIN_L)]
    if view == "side":  # a small nose and an ear
        head_pieces.append((cv.circle(c + _p(r - 0.3, 1.5), 1.3), _SKIN_L))
    cv.part(head_pieces)

    # Face.
    face = []
    if view == "front":
        if pose.eyes_closed:
            for ex in (-3.5, 3.5):
                face.append((cv.rect(c[0] + ex - 1.0, c[1] + 1.0, c[0] + ex + 1.0, c[1] + 1.8), _EYE))
        else:
            for ex in (-3.5, 3.5):
                face.append((cv.ellipse(c + _p(ex, 1.0), 0.8, 1.3), _EYE))
        face.append((cv.rect(c[0] - 1.0, c[1] + 4.6, c[0] + 1.0, c[1] + 5.4), _SKIN_D))
    elif view == "side":
        face.append((cv.ellipse(c + _p(4.5, 1.0), 0.8, 1.3), _EYE))
        face.append((cv.rect(c[0] + 5.0, c[1] + 4.6, c[0] + 6.5, c[1] + 5.4), _SKIN_D))
        face.append((cv.ellipse(c + _p(-0.5, 2.5), 1.2, 1.6), _SKIN_D))  # ear
    for mask, label in face:
        cv.labels[mask] = label

    # Hair on the head: a cap whose coverage depends on the view.
    if view == "front":
        cap = big & ((v < -2.5) | ((np.abs(u) > r - 2.2) & (v < 1.5)))
        # A fringe with a parting: two small bangs over the forehead.
        cap |= cv.circle(c + _p(-2.5, -3.2), 2.0) | cv.circle(c + _p(2.0, -3.0), 1.6)
    elif view == "back":
        cap = big & (v < 4.5)
    else:
        cap = big & ((v < -2.5) | ((u < 0.5) & (v < 3.5)))
        cap &= ~cv.ellipse(c + _p(-0.5, 2.5), 1.8, 2.2)  # leave the ear free
    pieces = [(cap, _HAIR_L)]
    if hair_shape == 1:  # long: strands down to the shoulders
        if view == "front":
            for s in (-1.0, 1.0):
                strand = (np.abs(u) >= r - 2.6) & (np.abs(u) <= r + 1.6) & (u * s > 0) & (v >= -3) & (v <= r + 6.0)
                pieces.append((strand, _HAIR_L))
        elif view == "side":
            pieces.append((cv.rect(c[0] - r - 1.5, c[1] - 2, c[0] - 1.0, c[1] + r + 6.0), _HAIR_L))
    elif hair_shape == 2:  # spiky: triangles around the crown
        base = 0.0 if view != "side" else -1.0
        for ang in (-70.0, -35.0, 0.0, 35.0, 70.0):
            a = np.deg2rad(ang + base * 15.0)
            tip = c + (r + 5.0) * _p(np.sin(a), -np.cos(a))
            side_dir = _p(np.cos(a), np.sin(a))
            root = c + (r - 1.0) * _p(np.sin(a), -np.cos(a))
            pieces.append((cv.polygon([root - 2.6 * side_dir, root + 2.6 * side_dir, tip]), _HAIR_L))
    elif hair_shape == 3:  # bun on top (front/back), ponytail at the back (side)
        if view == "side":
            pieces.append((cv.circle(c + _p(-r - 1.0, -2.5), 3.2), _HAIR_L))
            pieces.append((cv.capsule(c + _p(-r - 1.5, -1.0), c + _p(-r - 2.5, 6.5), 1.8), _HAIR_L))
        else:
            pieces.append((cv.circle(c + _p(0, -r - 1.5), 3.6), _HAIR_L))
    # When a back layer already outlines the hair, a second outline around the
    # cap would look like a helmet.
    cv.part(pieces, outline=back is None)
    # A shade line gives hair some texture and keeps the shapes readable.
    if view != "back":
        cv.labels[cap & (v < -2.5) & (v > -4.5) & (np.abs(u) > 4.5) & (cv.labels == _HAIR_L)] = _HAIR_D
    else:
        cv.labels[cap & (np.abs(u) < 0.8) & (v > -r + 1.5) & (cv.labels == _HAIR_L)] = _HAIR_D


def _draw_prop(cv: _Canvas, kind: str, params):
    if kind == "sword":
        hand, blade = params
        guard = _p(blade[1], -blade[0])
        tip = hand + 15.0 * blade
        cv.part([(cv.capsule(hand + 1.5 * blade, tip, 1.1), _METAL),
                 (cv.capsule(hand + 2.0 * blade - 2.8 * guard, hand + 2.0 * blade + 2.8 * guard, 0.9), _WOOD)])
    elif kind == "spear":
        x0, x1, y = params
        cv.part([(cv.capsule((x0, y), (x1, y), 0.8), _WOOD),
                 (cv.polygon([(x1 - 0.5, y - 2.2), (x1 + 5.0, y), (x1 - 0.5, y + 2.2)]), _METAL)])
    elif kind == "bow":
        hand, draw_hand, nocked = params
        ts = np.linspace(-1.0, 1.0, 11)
        arc = [hand + _p(2.0 - 5.0 * t * t, 11.0 * t) for t in ts]
        top, bottom = arc[0], arc[-1]
        pieces = [(cv.polyline(arc, 1.2), _WOOD)]
        string_pieces = []
        if draw_hand is not None:
            string_pieces += [(cv.capsule(top, draw_hand, 0.55), _OUTLINE),
                              (cv.capsule(draw_hand, bottom, 0.55), _OUTLINE)]
        else:
            # The string is dark: light grey vanishes against a light background.
            string_pieces.append((cv.capsule(top, bottom, 0.55), _OUTLINE))
        if nocked:
            start = draw_hand if draw_hand is not None else hand + _p(-5.0, 0)
            end = hand + _p(6.0, 0.0)
            string_pieces += [(cv.capsule(start, end, 0.6), _WOOD),
                              (cv.polygon([end + _p(0, -1.8), end + _p(3.0, 0), end + _p(0, 1.8)]), _METAL)]
        cv.part(pieces)
        for mask, label in string_pieces:
            cv.labels[mask] = label
    elif kind == "sparkle":
        centre, radius, k = params
        rays = []
        for i in range(4):
            a = np.deg2rad(45.0 * i + 22.5 * (k % 2))
            d = (radius + 2.0) * _p(np.cos(a), np.sin(a))
            rays.append((cv.capsule(centre - d, centre + d, 0.6), _MAGIC))
        cv.part([(cv.circle(centre, radius), _MAGIC)] + rays)


def _label_map(pose_id: int, hair_shape: int, top_shape: int, bottom_shape: int) -> np.ndarray:
    pose = _POSES()[pose_id]
    cv = _Canvas(pose)
    side = pose.view == "side"
    props = {stage: [(k, prm) for s, k, prm in pose.props if s == stage]
             for stage in ("before_near_arm", "last")}
    if side:  # painter's order: far limbs, near leg, body, head, props, near arm
        _draw_arm(cv, pose.arms[0], top_shape)
        _draw_leg(cv, pose.legs[0], bottom_shape, True)
        _draw_leg(cv, pose.legs[1], bottom_shape, True)
        _draw_torso(cv, pose, top_shape, bottom_shape)
        _draw_head(cv, pose, hair_shape)
        for kind, prm in props["before_near_arm"]:
            _draw_prop(cv, kind, prm)
        _draw_arm(cv, pose.arms[1], top_shape)
    else:
        for leg in pose.legs:
            _draw_leg(cv, leg, bottom_shape, False)
        _draw_torso(cv, pose, top_shape, bottom_shape)
        _draw_head(cv, pose, hair_shape)
        for kind, prm in props["before_near_arm"]:
            _draw_prop(cv, kind, prm)
        for arm in pose.arms:
            _draw_arm(cv, arm, top_shape)
    for kind, prm in props["last"]:
        _draw_prop(cv, kind, prm)
    return cv.labels


@functools.lru_cache(maxsize=1)
def _POSES() -> Tuple[_Pose, ...]:
    return tuple(_build_pose(p) for p in range(NUM_POSES))


@functools.lru_cache(maxsize=None)
def _shape_label_maps(hair_shape: int, top_shape: int, bottom_shape: int) -> np.ndarray:
    """``[72, 64, 64]`` uint8 label maps of one shape combination (cached, read-only)."""
    maps = np.stack([_label_map(p, hair_shape, top_shape, bottom_shape) for p in range(NUM_POSES)])
    maps.setflags(write=False)
    return maps


def _label_bank(styles: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Label maps for the shape combinations used by ``styles``.

    :returns: ``(bank [K, 72, 64, 64] uint8, combo [n] index into bank)``.
    """
    shapes = styles[:, [2, 4, 6]]
    combos, combo_of = np.unique(shapes, axis=0, return_inverse=True)
    bank = np.stack([_shape_label_maps(*map(int, c)) for c in combos])
    return bank, combo_of.reshape(-1)


def _render_into(out: np.ndarray, palettes: np.ndarray, bank: np.ndarray,
                 combo: np.ndarray, poses: np.ndarray, chunk: int = 2048) -> None:
    """Fill ``out[i] = palettes[i][bank[combo[i], poses[i]]]`` in chunks (bounded temporaries)."""
    for s in range(0, out.shape[0], chunk):
        e = min(s + chunk, out.shape[0])
        labels = bank[combo[s:e], poses[s:e]]  # [b, 64, 64]
        flat = palettes[s:e].reshape(-1, 3)
        offsets = (np.arange(e - s) * _NUM_SLOTS)[:, None, None]
        out[s:e] = flat[labels.astype(np.intp) + offsets]


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be uint8, float32 or float64, got {dtype}")
    return dtype


def _palette_as(palettes_u8: np.ndarray, dtype) -> np.ndarray:
    if dtype == np.uint8:
        return palettes_u8
    # Divide in float32 so that uint8 / 255 (the loader's conversion) matches bit for bit.
    return (palettes_u8.astype(np.float32) / np.float32(255.0)).astype(dtype)


def render_sprites(styles, poses, *, dtype=np.float32, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """Render paired ``styles[i]`` in ``poses[i]``.

    :param styles: ``[n, 7]`` attribute indices or a sequence of :class:`SpriteStyle`.
    :param poses: ``[n]`` pose indices in ``0 .. 71`` (a scalar is broadcast).
    :param dtype: ``float32`` / ``float64`` (values in [0, 1]) or ``uint8``.
    :param background: RGB background colour, 0..255.
    :returns: ``[n, 64, 64, 3]`` images.
    """
    styles = np.asarray(styles, dtype=np.int64).reshape(-1, 7)
    poses = np.broadcast_to(np.asarray(poses, dtype=np.int64), (styles.shape[0],))
    _check_styles(styles)
    if np.any((poses < 0) | (poses >= NUM_POSES)):
        raise ValueError(f"pose indices must be in [0, {NUM_POSES})")
    dtype = _check_dtype(dtype)
    bank, combo = _label_bank(styles)
    out = np.empty((styles.shape[0], IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
    _render_into(out, _palette_as(_palettes(styles, background), dtype), bank, combo, poses)
    return out


def _check_styles(styles: np.ndarray) -> None:
    if np.any(styles < 0) or np.any(styles >= np.array(_ATTRIBUTE_SIZES)):
        raise ValueError(f"style attributes out of range; sizes are {_ATTRIBUTE_SIZES}")


def render_sprite(style: Sequence[int], pose: int, *, background=_DEFAULT_BACKGROUND) -> np.ndarray:
    """Render one character in one pose as a ``[64, 64, 3]`` float32 image in [0, 1].

    :param style: a :class:`SpriteStyle` (or 7 attribute indices).
    :param pose: pose index, ``pose_index(action, frame)``.
    """
    return render_sprites([tuple(style)], [pose], background=background)[0]


# ---------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------
class _ProceduralFrames:
    """Frame source rendering on demand from styles."""

    def __init__(self, styles: np.ndarray, background):
        self.styles = styles
        self.palettes = _palettes(styles, background)
        self._bank = None

    def __call__(self, chars: np.ndarray, poses: np.ndarray, dtype) -> np.ndarray:
        if self._bank is None:
            # Build label maps for all shape combinations of this dataset once.
            self._bank = _label_bank(self.styles)
        bank, combo = self._bank
        out = np.empty(chars.shape + (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
        _render_into(out.reshape(-1, IMAGE_SIZE, IMAGE_SIZE, 3),
                     _palette_as(self.palettes, dtype)[chars.reshape(-1)], bank,
                     combo[chars.reshape(-1)], poses.reshape(-1))
        return out


class _ArrayFrames:
    """Frame source indexing stored (possibly memory-mapped) arrays."""

    def __init__(self, parts: Sequence[np.ndarray]):
        self.parts = list(parts)
        self.starts = np.cumsum([0] + [p.shape[0] for p in self.parts])

    def __call__(self, chars: np.ndarray, poses: np.ndarray, dtype) -> np.ndarray:
        flat_c, flat_p = chars.reshape(-1), poses.reshape(-1)
        out = np.empty((flat_c.size, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=dtype)
        part_of = np.searchsorted(self.starts, flat_c, side="right") - 1
        for j, arr in enumerate(self.parts):
            sel = np.nonzero(part_of == j)[0]
            if sel.size == 0:
                continue
            frames = arr[flat_c[sel] - self.starts[j], flat_p[sel]]
            out[sel] = _convert(frames, dtype)
        return out.reshape(chars.shape + (IMAGE_SIZE, IMAGE_SIZE, 3))


def _convert(frames: np.ndarray, dtype) -> np.ndarray:
    if frames.dtype == dtype:
        return frames
    if frames.dtype == np.uint8:
        return (frames.astype(np.float32) / np.float32(255.0)).astype(dtype)
    if dtype == np.uint8:
        return np.round(np.clip(frames, 0.0, 1.0) * 255.0).astype(np.uint8)
    return frames.astype(dtype)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class SpritesDataset:
    """SPRITES characters x poses with the SVGP-VAE train/test protocol.

    Frames are produced on demand by :meth:`frames_for`; nothing of size
    ``[C, 72, 64, 64, 3]`` is held unless :meth:`all_frames` or :attr:`frames`
    is called.

    :ivar num_characters: ``C``.
    :ivar train_characters: ``[n_train]`` character ids (sorted).
    :ivar test_characters: ``[n_test]`` character ids (sorted, disjoint from train).
    :ivar train_poses: ``[n_train, P]`` distinct pose indices per training character
        (row ``i`` belongs to ``train_characters[i]``).
    :ivar test_context_poses: ``[n_test, Q]`` observed poses per test character.
    :ivar test_target_poses: ``[n_test, 72 - Q]`` the remaining poses, to be generated.
    :ivar attributes: ``[C, A]`` integer labels (procedural: the 7 style
        attributes, see :class:`SpriteStyle`) or ``None``.
    :ivar source: ``"procedural"`` or the directory the arrays were loaded from.
    """

    num_characters: int
    train_characters: np.ndarray
    test_characters: np.ndarray
    train_poses: np.ndarray
    test_context_poses: np.ndarray
    test_target_poses: np.ndarray
    attributes: Optional[np.ndarray]
    source: str
    _frames: object = field(repr=False)

    num_poses = NUM_POSES
    image_shape = (IMAGE_SIZE, IMAGE_SIZE, 3)

    def style(self, character: int) -> SpriteStyle:
        """The :class:`SpriteStyle` of a procedural character."""
        if self.source != "procedural":
            raise ValueError("styles exist only for procedural data; see .attributes")
        return SpriteStyle(*map(int, self.attributes[character]))

    def frames_for(self, characters, poses, *, dtype=np.float32) -> np.ndarray:
        """Frames of ``(characters, poses)`` pairs, broadcast against each other.

        :param characters: integer array of character ids.
        :param poses: integer array of pose indices, broadcastable with ``characters``
            (e.g. ``characters[:, None]`` with ``train_poses``).
        :param dtype: ``float32`` (default; values in [0, 1]), ``float64`` or ``uint8``.
        :returns: ``broadcast_shape + (64, 64, 3)``.
        """
        c, p = np.broadcast_arrays(np.asarray(characters, dtype=np.int64),
                                   np.asarray(poses, dtype=np.int64))
        if np.any((c < 0) | (c >= self.num_characters)):
            raise ValueError(f"character ids must be in [0, {self.num_characters})")
        if np.any((p < 0) | (p >= NUM_POSES)):
            raise ValueError(f"pose indices must be in [0, {NUM_POSES})")
        return self._frames(c, p, _check_dtype(dtype))

    def all_frames(self, *, dtype=np.uint8) -> np.ndarray:
        """Every frame, ``[C, 72, 64, 64, 3]`` (1.15 GB as uint8 for C = 1296)."""
        chars = np.arange(self.num_characters)[:, None]
        return self.frames_for(chars, np.arange(NUM_POSES)[None, :], dtype=dtype)

    @property
    def frames(self) -> np.ndarray:
        """Every frame as float32 ``[C, 72, 64, 64, 3]`` (4.59 GB for C = 1296; not cached).

        Prefer :meth:`frames_for` or ``all_frames(dtype=np.uint8)`` for the full set.
        """
        return self.all_frames(dtype=np.float32)

    def train_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_train, P, 64, 64, 3]``: training images (paper protocol: 614 MB as uint8, 2.46 GB as float32)."""
        return self.frames_for(self.train_characters[:, None], self.train_poses, dtype=dtype)

    def test_context_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_test, Q, 64, 64, 3]``: the observed poses of the test characters."""
        return self.frames_for(self.test_characters[:, None], self.test_context_poses, dtype=dtype)

    def test_target_frames(self, *, dtype=np.float32) -> np.ndarray:
        """``[n_test, 72 - Q, 64, 64, 3]``: the poses to generate for the test characters."""
        return self.frames_for(self.test_characters[:, None], self.test_target_poses, dtype=dtype)


def _pose_splits(rng: np.random.Generator, n_train: int, n_test: int,
                 train_poses_per_character: int, num_context_poses: int):
    if not 1 <= train_poses_per_character <= NUM_POSES:
        raise ValueError(f"train_poses_per_character must be in [1, {NUM_POSES}], "
                         f"got {train_poses_per_character}")
    if not 1 <= num_context_poses < NUM_POSES:
        raise ValueError(f"num_context_poses must be in [1, {NUM_POSES - 1}], got {num_context_poses}")
    train = np.sort(rng.permuted(np.tile(np.arange(NUM_POSES), (n_train, 1)), axis=1)
                    [:, :train_poses_per_character], axis=1)
    perm = rng.permuted(np.tile(np.arange(NUM_POSES), (n_test, 1)), axis=1)
    context = np.sort(perm[:, :num_context_poses], axis=1)
    target = np.sort(perm[:, num_context_poses:], axis=1)
    return train, context, target


def sprites(num_characters: int = 1296, *, seed: int = 0, num_train_characters: int = 1000,
            train_poses_per_character: int = 50, num_context_poses: int = 36,
            background: Tuple[int, int, int] = _DEFAULT_BACKGROUND) -> SpritesDataset:
    """Procedural SPRITES-like data with the SVGP-VAE protocol.

    :param num_characters: number of distinct characters ``C`` (paper: 1296).
    :param seed: seeds styles, character split and pose splits (see module docstring).
    :param num_train_characters: training characters (paper: 1000); the other
        ``C - num_train_characters`` are test characters.
    :param train_poses_per_character: random poses per training character (paper: 50).
    :param num_context_poses: observed poses per test character (paper: 36).
    :param background: RGB background, 0..255 (default white).
    :returns: a :class:`SpritesDataset` that renders frames on demand.
    """
    if not 1 <= num_train_characters <= num_characters:
        raise ValueError(f"num_train_characters must be in [1, num_characters={num_characters}], "
                         f"got {num_train_characters}")
    styles = _style_array(num_characters, seed)
    _, split_rng, pose_rng = _streams(seed)
    perm = split_rng.permutation(num_characters)
    train_c = np.sort(perm[:num_train_characters])
    test_c = np.sort(perm[num_train_characters:])
    tr, ctx, tgt = _pose_splits(pose_rng, train_c.size, test_c.size,
                                train_poses_per_character, num_context_poses)
    return SpritesDataset(
        num_characters=num_characters,
        train_characters=_readonly(train_c),
        test_characters=_readonly(test_c),
        train_poses=_readonly(tr),
        test_context_poses=_readonly(ctx),
        test_target_poses=_readonly(tgt),
        attributes=_readonly(styles),
        source="procedural",
        _frames=_ProceduralFrames(styles, background),
    )


# ---------------------------------------------------------------------------
# Real arrays on disk
# ---------------------------------------------------------------------------
def _load_frames_file(path: str, mmap: bool, check_range: bool) -> np.ndarray:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"SPRITES frames file not found: {path}")
    arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    expected = (NUM_POSES, IMAGE_SIZE, IMAGE_SIZE, 3)
    if arr.ndim != 5 or tuple(arr.shape[1:]) != expected:
        raise ValueError(f"{path}: expected shape [num_characters, {', '.join(map(str, expected))}], "
                         f"got {list(arr.shape)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{path}: contains no characters")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f":
        raise ValueError(f"{path}: expected dtype uint8 (0..255) or float (0..1), got {arr.dtype}")
    if check_range and arr.dtype.kind == "f":
        # Chunked so that a memory-mapped multi-GB file is not read into memory at once.
        for s in range(0, arr.shape[0], 64):
            block = np.asarray(arr[s:s + 64])
            if not np.all(np.isfinite(block)) or block.min() < 0.0 or block.max() > 1.0:
                raise ValueError(f"{path}: float frames must be finite and in [0, 1] "
                                 f"(characters {s}..{s + block.shape[0] - 1} are not)")
    return arr


def _load_attributes(path: str, n: int) -> np.ndarray:
    attrs = np.load(path, allow_pickle=False)
    if attrs.ndim != 2 or attrs.shape[0] != n or attrs.dtype.kind not in "iu":
        raise ValueError(f"{path}: expected integer attributes of shape [{n}, A], "
                         f"got {attrs.dtype} {list(attrs.shape)}")
    return attrs.astype(np.int64)


def load_sprites_arrays(path: Union[str, os.PathLike], *, seed: int = 0,
                        train_poses_per_character: int = 50, num_context_poses: int = 36,
                        mmap: bool = True, check_range: bool = True) -> SpritesDataset:
    """Load real SPRITES arrays (layout in the module docstring) into a :class:`SpritesDataset`.

    :param path: directory containing ``train.npy`` and ``test.npy`` (and
        optionally ``train_attributes.npy`` / ``test_attributes.npy``).
    :param seed: seeds the random pose splits exactly as in :func:`sprites`.
    :param train_poses_per_character: random poses per training character.
    :param num_context_poses: observed poses per test character.
    :param mmap: memory-map the arrays (frames are then read lazily).
    :param check_range: verify float frames lie in [0, 1] (reads the file once).
    :raises FileNotFoundError: if ``path`` or a required file does not exist.
    :raises ValueError: on wrong shapes, dtypes, value ranges or attribute files.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"SPRITES directory not found: {path}")
    train = _load_frames_file(os.path.join(path, "train.npy"), mmap, check_range)
    test = _load_frames_file(os.path.join(path, "test.npy"), mmap, check_range)
    if (train.dtype == np.uint8) != (test.dtype == np.uint8):
        raise ValueError(f"train.npy ({train.dtype}) and test.npy ({test.dtype}) must both be "
                         "uint8 or both float")
    n_train, n_test = train.shape[0], test.shape[0]
    attr_files = [os.path.join(path, f"{s}_attributes.npy") for s in ("train", "test")]
    present = [os.path.isfile(f) for f in attr_files]
    attributes = None
    if any(present):
        if not all(present):
            missing = attr_files[present.index(False)]
            raise FileNotFoundError(f"attribute files must come in pairs; missing {missing}")
        a_tr = _load_attributes(attr_files[0], n_train)
        a_te = _load_attributes(attr_files[1], n_test)
        if a_tr.shape[1] != a_te.shape[1]:
            raise ValueError(f"train/test attributes have different widths: "
                             f"{a_tr.shape[1]} vs {a_te.shape[1]}")
        attributes = _readonly(np.concatenate([a_tr, a_te]))
    pose_rng = _streams(seed)[2]
    tr, ctx, tgt = _pose_splits(pose_rng, n_train, n_test, train_poses_per_character, num_context_poses)
    return SpritesDataset(
        num_characters=n_train + n_test,
        train_characters=_readonly(np.arange(n_train)),
        test_characters=_readonly(np.arange(n_train, n_train + n_test)),
        train_poses=_readonly(tr),
        test_context_poses=_readonly(ctx),
        test_target_poses=_readonly(tgt),
        attributes=attributes,
        source=path,
        _frames=_ArrayFrames([train, test]),
    )


def save_sprites_arrays(dataset: SpritesDataset, path: Union[str, os.PathLike], *,
                        dtype=np.uint8) -> None:
    """Write ``dataset`` in the :func:`load_sprites_arrays` layout.

    Training characters go to ``train.npy`` and test characters to ``test.npy``
    (in id order), with their attributes if any. Memory: one split at a time,
    e.g. 886 MB for 1000 uint8 training characters.
    """
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    for name, ids in (("train", dataset.train_characters), ("test", dataset.test_characters)):
        frames = dataset.frames_for(ids[:, None], np.arange(NUM_POSES)[None, :], dtype=dtype)
        np.save(os.path.join(path, f"{name}.npy"), frames)
        if dataset.attributes is not None:
            np.save(os.path.join(path, f"{name}_attributes.npy"), dataset.attributes[ids])


# ---------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------
_SHEET_POSES = tuple(pose_index(a, f) for a, frames in (
    ("walk_front", (0, 2)), ("walk_left", (1,)), ("walk_back", (2,)), ("walk_right", (0, 2)),
    ("spellcast", (1, 5)), ("slash", (1, 3, 5)), ("thrust", (2, 5)), ("shoot", (1, 5)),
    ("hurt", (3, 5, 7))) for f in frames)


def save_sprite_sheet(path: Union[str, os.PathLike], num_characters: int = 6,
                      poses: Iterable[int] = _SHEET_POSES, *, seed: int = 0,
                      scale: int = 2, labels: bool = True) -> np.ndarray:
    """Write a PNG grid: one row per character, one column per pose.

    :param path: output PNG file.
    :param num_characters: rows (the first characters of ``character_styles(., seed)``).
    :param poses: pose indices for the columns (default: frames of every action).
    :param scale: integer pixel magnification (nearest neighbour, keeps pixel art crisp).
    :param labels: write action names above the columns.
    :returns: the ``[H, W, 3]`` float32 grid image (before scaling).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    poses = [int(p) for p in poses]
    styles = _style_array(num_characters, seed)
    chars = np.repeat(styles, len(poses), axis=0)
    imgs = render_sprites(chars, np.tile(poses, num_characters)).reshape(
        num_characters, len(poses), IMAGE_SIZE, IMAGE_SIZE, 3)
    gap = 2
    cell = IMAGE_SIZE + gap
    grid = np.full((num_characters * cell + gap, len(poses) * cell + gap, 3), 0.55, np.float32)
    for i in range(num_characters):
        for j in range(len(poses)):
            grid[gap + i * cell: gap + i * cell + IMAGE_SIZE,
                 gap + j * cell: gap + j * cell + IMAGE_SIZE] = imgs[i, j]
    big = np.repeat(np.repeat(grid, scale, axis=0), scale, axis=1)
    if not labels:
        plt.imsave(os.fspath(path), big)
        return grid
    dpi = 100
    top = 30
    fig = plt.figure(figsize=(big.shape[1] / dpi, (big.shape[0] + top) / dpi), dpi=dpi)
    ax = fig.add_axes([0, 0, 1, big.shape[0] / (big.shape[0] + top)])
    ax.imshow(big, interpolation="nearest")
    ax.set_axis_off()
    for j, p in enumerate(poses):
        name = f"{ACTIONS[p // FRAMES_PER_ACTION]} {p % FRAMES_PER_ACTION}"
        ax.text((gap + j * cell + IMAGE_SIZE / 2) * scale, -4, name, ha="center", va="bottom",
                fontsize=7, clip_on=False)
    fig.savefig(os.fspath(path), dpi=dpi)
    plt.close(fig)
    return grid
