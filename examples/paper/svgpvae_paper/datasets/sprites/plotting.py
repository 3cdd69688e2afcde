"""A PNG sprite sheet of procedural characters (:func:`save_sprite_sheet`)."""

from __future__ import annotations

import os
from typing import Iterable, Union

import numpy as np

from .poses import ACTIONS, FRAMES_PER_ACTION, IMAGE_SIZE, pose_index
from .render import render_sprites
from .styles import _style_array

__all__ = ["save_sprite_sheet"]


_SHEET_POSES = tuple(
    pose_index(a, f)
    for a, frames in (
        ("walk_front", (0, 2)),
        ("walk_left", (1,)),
        ("walk_back", (2,)),
        ("walk_right", (0, 2)),
        ("spellcast", (1, 5)),
        ("slash", (1, 3, 5)),
        ("thrust", (2, 5)),
        ("shoot", (1, 5)),
        ("hurt", (3, 5, 7)),
    )
    for f in frames
)


def save_sprite_sheet(
    path: Union[str, os.PathLike],
    num_characters: int = 6,
    poses: Iterable[int] = _SHEET_POSES,
    *,
    seed: int = 0,
    scale: int = 2,
    labels: bool = True,
) -> np.ndarray:
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
        num_characters, len(poses), IMAGE_SIZE, IMAGE_SIZE, 3
    )
    gap = 2
    cell = IMAGE_SIZE + gap
    grid = np.full((num_characters * cell + gap, len(poses) * cell + gap, 3), 0.55, np.float32)
    for i in range(num_characters):
        for j in range(len(poses)):
            grid[gap + i * cell : gap + i * cell + IMAGE_SIZE, gap + j * cell : gap + j * cell + IMAGE_SIZE] = imgs[
                i, j
            ]
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
        ax.text(
            (gap + j * cell + IMAGE_SIZE / 2) * scale, -4, name, ha="center", va="bottom", fontsize=7, clip_on=False
        )
    fig.savefig(os.fspath(path), dpi=dpi)
    plt.close(fig)
    return grid
