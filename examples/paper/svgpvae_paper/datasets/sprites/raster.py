r"""Rasteriser: one pose of one shape combination -> a 64 x 64 label map.

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
"""

from __future__ import annotations

import functools

import numpy as np

from .palettes import (
    _BG,
    _BOT_D,
    _BOT_L,
    _EYE,
    _HAIR_D,
    _HAIR_L,
    _MAGIC,
    _METAL,
    _OUTLINE,
    _SHOE_D,
    _SHOE_L,
    _SKIN_D,
    _SKIN_L,
    _TOP_D,
    _TOP_L,
    _WOOD,
)
from .poses import (
    _ARM_R,
    _HAND_R,
    _HEAD_R,
    _LEG_R,
    _POSES,
    IMAGE_SIZE,
    NUM_POSES,
    _Limb,
    _p,
    _Pose,
)


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
    pieces = [(cv.capsule(leg.root, leg.mid, _LEG_R), skin), (cv.capsule(leg.mid, leg.end, _LEG_R * 0.9), skin)]
    if bottom_shape == 0:  # trousers down to the ankle
        pieces += [
            (cv.capsule(leg.root, leg.mid, _LEG_R + 0.2), cloth),
            (cv.capsule(leg.mid, leg.end, _LEG_R * 0.9 + 0.2), cloth),
        ]
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
    pieces = [(cv.capsule(arm.root, arm.mid, _ARM_R), skin), (cv.capsule(arm.mid, arm.end, _ARM_R * 0.9), skin)]
    if top_shape == 0:  # short sleeve
        pieces.append((cv.capsule(arm.root, arm.root + 0.55 * (arm.mid - arm.root), _ARM_R + 0.5), cloth))
    elif top_shape == 2:  # long sleeve down to the wrist
        wrist = arm.end + 0.3 * (arm.mid - arm.end)
        pieces += [
            (cv.capsule(arm.root, arm.mid, _ARM_R + 0.3), cloth),
            (cv.capsule(arm.mid, wrist, _ARM_R * 0.9 + 0.3), cloth),
        ]
    pieces.append((cv.circle(arm.end, _HAND_R), skin))
    cv.part(pieces)


def _draw_torso(cv: _Canvas, pose: _Pose, top_shape: int, bottom_shape: int):
    side = pose.view == "side"
    n, h = pose.neck, pose.hip
    half_sh, half_waist, half_hip = (4.6, 4.2, 4.6) if side else (7.6, 6.0, 6.8)
    waist_y = h[1] - 4.0
    pieces = []
    pelvis = cv.polygon(
        [
            (h[0] - half_waist, waist_y),
            (h[0] + half_waist, waist_y),
            (h[0] + half_hip, h[1] + 2.5),
            (h[0] - half_hip, h[1] + 2.5),
        ]
    )
    pieces.append((pelvis, _BOT_L))
    if bottom_shape == 2:  # skirt flaring to just above the knees
        flare = 7.0 if side else 10.0
        pieces.append(
            (
                cv.polygon(
                    [
                        (h[0] - half_waist, waist_y),
                        (h[0] + half_waist, waist_y),
                        (h[0] + flare, h[1] + 8.5),
                        (h[0] - flare, h[1] + 8.5),
                    ]
                ),
                _BOT_L,
            )
        )
    top = cv.polygon(
        [
            (n[0] - half_sh, n[1]),
            (n[0] + half_sh, n[1]),
            (h[0] + half_waist, waist_y + 0.5),
            (h[0] - half_waist, waist_y + 0.5),
        ]
    )
    # Round the shoulders a little.
    top |= cv.circle((n[0] - half_sh + 2.0, n[1] + 2.0), 2.5) | cv.circle((n[0] + half_sh - 2.0, n[1] + 2.0), 2.5)
    top &= cv.y >= n[1] - 0.5
    pieces.append((top, _TOP_L))
    if top_shape == 1:  # vest: open neck shows skin (a V at the front, a notch at the back)
        if pose.view == "front":
            pieces.append(
                (cv.polygon([(n[0] - 3.2, n[1] - 0.5), (n[0] + 3.2, n[1] - 0.5), (n[0], n[1] + 7.0)]), _SKIN_L)
            )
        elif side:
            pieces.append(
                (
                    cv.polygon(
                        [
                            (n[0] + 1.0, n[1] - 0.5),
                            (n[0] + half_sh + 0.5, n[1] - 0.5),
                            (n[0] + half_sh + 0.5, n[1] + 6.0),
                        ]
                    ),
                    _SKIN_L,
                )
            )
        else:
            pieces.append((cv.rect(n[0] - 2.5, n[1] - 0.5, n[0] + 2.5, n[1] + 1.5), _SKIN_L))
    else:  # collar line of shirts
        if pose.view != "back":
            pieces.append(
                (
                    cv.rect(n[0] - 2.0, n[1] - 0.5, n[0] + 2.0, n[1] + 0.6)
                    if not side
                    else cv.rect(n[0] - 1.0, n[1] - 0.5, n[0] + 2.5, n[1] + 0.6),
                    _SKIN_L,
                )
            )
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
        cv.part(
            [
                (cv.capsule(hand + 1.5 * blade, tip, 1.1), _METAL),
                (cv.capsule(hand + 2.0 * blade - 2.8 * guard, hand + 2.0 * blade + 2.8 * guard, 0.9), _WOOD),
            ]
        )
    elif kind == "spear":
        x0, x1, y = params
        cv.part(
            [
                (cv.capsule((x0, y), (x1, y), 0.8), _WOOD),
                (cv.polygon([(x1 - 0.5, y - 2.2), (x1 + 5.0, y), (x1 - 0.5, y + 2.2)]), _METAL),
            ]
        )
    elif kind == "bow":
        hand, draw_hand, nocked = params
        ts = np.linspace(-1.0, 1.0, 11)
        arc = [hand + _p(2.0 - 5.0 * t * t, 11.0 * t) for t in ts]
        top, bottom = arc[0], arc[-1]
        pieces = [(cv.polyline(arc, 1.2), _WOOD)]
        string_pieces = []
        if draw_hand is not None:
            string_pieces += [
                (cv.capsule(top, draw_hand, 0.55), _OUTLINE),
                (cv.capsule(draw_hand, bottom, 0.55), _OUTLINE),
            ]
        else:
            # The string is dark: light grey vanishes against a light background.
            string_pieces.append((cv.capsule(top, bottom, 0.55), _OUTLINE))
        if nocked:
            start = draw_hand if draw_hand is not None else hand + _p(-5.0, 0)
            end = hand + _p(6.0, 0.0)
            string_pieces += [
                (cv.capsule(start, end, 0.6), _WOOD),
                (cv.polygon([end + _p(0, -1.8), end + _p(3.0, 0), end + _p(0, 1.8)]), _METAL),
            ]
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
    props = {stage: [(k, prm) for s, k, prm in pose.props if s == stage] for stage in ("before_near_arm", "last")}
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


@functools.lru_cache(maxsize=None)
def _shape_label_maps(hair_shape: int, top_shape: int, bottom_shape: int) -> np.ndarray:
    """``[72, 64, 64]`` uint8 label maps of one shape combination (cached, read-only)."""
    maps = np.stack([_label_map(p, hair_shape, top_shape, bottom_shape) for p in range(NUM_POSES)])
    maps.setflags(write=False)
    return maps
