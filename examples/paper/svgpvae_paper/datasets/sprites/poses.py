r"""Pose layout and 2-D pose skeletons of the procedural SPRITES.

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

A pose is a 2-D skeleton (:class:`_Pose`: head, torso, two 2-link arms and
legs, props) in pixel coordinates of an ``IMAGE_SIZE`` x ``IMAGE_SIZE``
frame; :mod:`~svgpvae_paper.datasets.sprites.raster` draws it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Tuple, Union

import numpy as np

__all__ = ["IMAGE_SIZE", "ACTIONS", "FRAMES_PER_ACTION", "NUM_POSES", "pose_index"]

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


def pose_index(action: Union[str, int], frame: int) -> int:
    """Pose index of ``frame`` (0..7) of ``action`` (name or index)."""
    a = ACTIONS.index(action) if isinstance(action, str) else int(action)
    if not 0 <= a < len(ACTIONS) or not 0 <= frame < FRAMES_PER_ACTION:
        raise ValueError(f"no pose for action={action!r}, frame={frame}")
    return a * FRAMES_PER_ACTION + int(frame)


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


def _front_pose(
    view, k, *, arm_out=(10.0, 10.0), arm_bend=(8.0, 8.0), hand_dy=(0.0, 0.0), foot_dy=(0.0, 0.0), bob=0.0, squat=0.0
) -> _Pose:
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

    pose = _Pose(
        "side", head, neck, hip, (arm(far_arm, False), arm(near_arm, True)), (leg(far_leg, False), leg(near_leg, True))
    )
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
    return _front_pose(
        view, k, arm_out=(8.0 + 4 * abs(s), 8.0 + 4 * abs(s)), hand_dy=hand_dy, foot_dy=foot_dy, bob=-abs(s)
    )


def _walk_side(k: int, mirror: bool) -> _Pose:
    ph = 2 * np.pi * k / FRAMES_PER_ACTION
    s, c = np.sin(ph), np.cos(ph)
    thigh = 28.0 * s
    # The knee bends while the leg swings forward (thigh angle increasing).
    near_leg = (thigh, -45.0 * max(0.0, c) - 5.0)
    far_leg = (-thigh, -45.0 * max(0.0, -c) - 5.0)
    pose = _side_pose(far_arm=(28.0 * s, 20.0), near_arm=(-28.0 * s, 20.0), far_leg=far_leg, near_leg=near_leg)
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
    pose = _side_pose(far_arm=(35.0, 70.0), near_arm=(upper, fore), far_leg=(-stride, -5.0), near_leg=(stride, -10.0))
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
    pose = _side_pose(far_arm=far, near_arm=near, far_leg=(-stride, -5.0), near_leg=(stride, -8.0))
    pose.props.append(("before_near_arm", "spear", (far.end[0] - 16.0, near.end[0] + 17.0, height)))
    pose.mirror = True  # thrust faces left, so both side directions appear in the data
    return pose


def _shoot(k: int) -> _Pose:
    shoulder = _p(32.0, 26.0)
    bow_hand = (
        (38.0, 35.0),
        (43.0, 28.0),
        (44.5, 26.0),
        (44.5, 26.0),
        (44.5, 26.0),
        (44.5, 26.0),
        (44.5, 26.5),
        (42.0, 29.0),
    )[k]
    draw_hand = (
        (34.0, 35.0),
        (37.0, 30.0),
        (42.5, 26.0),
        (37.5, 25.5),
        (33.0, 25.0),
        (29.5, 24.5),
        (27.0, 23.0),
        (33.0, 31.0),
    )[k]
    far = _limb_ik(shoulder, bow_hand, _UPPER_ARM, _FOREARM, bend=1.0)
    near = _limb_ik(shoulder, draw_hand, _UPPER_ARM, _FOREARM, bend=-1.0)
    pose = _side_pose(far_arm=far, near_arm=near, far_leg=(-10.0, -4.0), near_leg=(12.0, -4.0))
    drawn = 2 <= k <= 5
    pose.props.append(("before_near_arm", "bow", (far.end.copy(), near.end.copy() if drawn else None, 1 <= k <= 5)))
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
    return {"spellcast": _spellcast, "slash": _slash, "thrust": _thrust, "shoot": _shoot, "hurt": _hurt}[action](k)


@functools.lru_cache(maxsize=1)
def _POSES() -> Tuple[_Pose, ...]:
    return tuple(_build_pose(p) for p in range(NUM_POSES))
