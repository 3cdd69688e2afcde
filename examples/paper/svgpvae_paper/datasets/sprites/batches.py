r"""Training batches and initialisations for the SPRITES SVGP-VAE.

Raw auxiliary inputs are ``X_raw = [character id, pose id]``. Because a
frame's style is aggregated over the other frames of its character in the
batch, training batches hold whole characters: :func:`character_batches`
yields ``k`` characters x their ``P`` training frames per step (paper:
``10 x 50 = 500``). The pose table is PCA-initialised from the mean frame
of every pose (:func:`mean_frames_per_pose`, :func:`pca_pose_vectors`), and
:func:`init_sprites_inducing` places the inducing inputs in the GP input
space ``[style, pose]``.
"""

from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf

from gpflow_svgpvae.auxiliary import fit_gaussian, pca_object_vectors

__all__ = ["character_batches", "mean_frames_per_pose", "pca_pose_vectors", "init_sprites_inducing"]


def _raw_inputs(characters: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """``[C * P, 2]`` float64 rows ``[character id, pose id]``, character-major."""
    C, P = poses.shape
    return np.stack([np.repeat(characters, P), poses.reshape(-1)], axis=1).astype(np.float64)


def character_batches(
    characters,
    poses,
    frames=None,
    *,
    render: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None,
    characters_per_batch: int = 10,
    group: bool = True,
    batch_size: Optional[int] = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A ``tf.data`` pipeline of ``(X_raw, Y)`` batches that keeps characters whole.

    With ``group=True`` every batch holds ``characters_per_batch`` characters and
    *all* their ``P`` frames (``X_raw`` rows ``[character id, pose id]``,
    character-major, poses in the order of ``poses``), so the style aggregation
    sees whole characters; characters are shuffled (seeded, a new order each
    epoch) and each appears once per epoch. With ``group=False`` frames are
    shuffled individually into batches of ``batch_size`` (default
    ``characters_per_batch * P``), e.g. for classifier pretraining.

    :param characters: ``[C]`` character ids.
    :param poses: ``[C, P]`` pose ids of each character's frames.
    :param frames: ``[C, P, H, W, 3]`` frames (uint8 0..255 or float in [0, 1]),
        held in memory (uint8: 614 MB for the paper's 1000 x 50), or None to
        render each batch with ``render``.
    :param render: ``render(character_ids [n], pose_ids [n]) -> float32 [n, H, W, 3]``,
        e.g. ``lambda c, p: dataset.frames_for(c, p)``.
    :return: dataset of ``(X_raw [b, 2] float64, Y [b, H, W, 3] float32)``.
    """
    characters = np.asarray(characters, dtype=np.int64)
    poses = np.asarray(poses, dtype=np.int64)
    if poses.ndim != 2 or poses.shape[0] != characters.shape[0]:
        raise ValueError(f"poses must be [C, P] with C = len(characters) = {len(characters)}; got {poses.shape}")
    C, P = poses.shape
    if (frames is None) == (render is None):
        raise ValueError("Pass exactly one of `frames` (an array) and `render` (a callable).")
    k = int(characters_per_batch)
    if k < 1:
        raise ValueError(f"characters_per_batch must be >= 1, got {characters_per_batch}")
    X_all = _raw_inputs(characters, poses)  # [C*P, 2]
    X_tensor = tf.constant(X_all)

    if frames is not None:
        frames = np.asarray(frames)
        if frames.shape[:2] != (C, P):
            raise ValueError(f"frames must be [C, P, H, W, 3] = [{C}, {P}, ...]; got {frames.shape}")
        image_shape = frames.shape[2:]
        frames_tensor = tf.constant(frames.reshape((C * P,) + image_shape))
        is_uint8 = frames.dtype == np.uint8

        def images(rows):
            Y = tf.gather(frames_tensor, rows)
            return tf.cast(Y, tf.float32) / 255.0 if is_uint8 else tf.cast(Y, tf.float32)
    else:
        flat_c, flat_p = X_all[:, 0].astype(np.int64), X_all[:, 1].astype(np.int64)
        probe = np.asarray(render(flat_c[:1], flat_p[:1]))
        image_shape = probe.shape[1:]

        def _render(rows):
            return np.asarray(render(flat_c[rows], flat_p[rows]), dtype=np.float32)

        def images(rows):
            Y = tf.numpy_function(_render, [rows], tf.float32)
            Y.set_shape((None,) + tuple(image_shape))
            return Y

    if group:
        dataset = tf.data.Dataset.range(C)
        if shuffle:
            dataset = dataset.shuffle(C, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.batch(k, drop_remainder=drop_remainder)
        offsets = tf.range(P, dtype=tf.int64)
        dataset = dataset.map(lambda idx: tf.reshape(idx[:, None] * P + offsets[None, :], [-1]))
    else:
        dataset = tf.data.Dataset.range(C * P)
        if shuffle:
            dataset = dataset.shuffle(C * P, seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.batch(int(batch_size or k * P), drop_remainder=drop_remainder)
    dataset = dataset.map(
        lambda rows: (tf.gather(X_tensor, rows), images(rows)), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def mean_frames_per_pose(frames, poses, num_poses: int = 72, chunk: int = 50) -> Tuple[np.ndarray, np.ndarray]:
    """The mean frame of every pose over the characters that show it.

    :param frames: ``[C, P, H, W, 3]`` array, or a callable ``rows -> [len(rows), P, H, W, 3]``
        (``rows`` an index array into the ``C`` characters) rendering on demand.
    :param poses: ``[C, P]`` pose ids of the frames.
    :return: ``(means [num_poses, H, W, 3] float64, counts [num_poses])``; poses
        without any frame have mean 0 and count 0. Float frames are used as given,
        uint8 frames are divided by 255.
    """
    poses = np.asarray(poses, dtype=np.int64)
    C, P = poses.shape
    if not callable(frames):
        frames = np.asarray(frames)
    sums = None
    counts = np.bincount(poses.reshape(-1), minlength=num_poses).astype(np.int64)
    for start in range(0, C, int(chunk)):
        rows = np.arange(start, min(C, start + int(chunk)))
        block = np.asarray(frames(rows) if callable(frames) else frames[rows])
        block = block.astype(np.float64) / 255.0 if block.dtype == np.uint8 else block.astype(np.float64)
        if sums is None:
            sums = np.zeros((num_poses,) + block.shape[2:], dtype=np.float64)
        np.add.at(sums, poses[rows].reshape(-1), block.reshape((-1,) + block.shape[2:]))
    means = sums / np.maximum(counts, 1).reshape((-1,) + (1,) * (sums.ndim - 1))
    return means, counts


def pca_pose_vectors(
    mean_frames: np.ndarray, counts: Optional[np.ndarray] = None, Q: int = 8, whiten: bool = False, seed: int = 0
) -> np.ndarray:
    """PCA initialisation of the pose table: PCA scores of the mean frame per pose.

    :func:`~gpflow_svgpvae.auxiliary.pca_object_vectors` of the (flattened) mean
    frames of the poses that have frames; a pose without any frame (``counts == 0``)
    gets a draw from the Gaussian fitted to the other poses' vectors (seeded).

    :return: ``[num_poses, Q]`` float64.
    """
    mean_frames = np.asarray(mean_frames, dtype=np.float64)
    n = mean_frames.shape[0]
    observed = np.ones(n, bool) if counts is None else np.asarray(counts) > 0
    if observed.sum() < max(2, Q):
        raise ValueError(f"need at least max(2, Q) = {max(2, Q)} poses with frames; got {int(observed.sum())}")
    vectors = np.zeros((n, Q), dtype=np.float64)
    vectors[observed] = pca_object_vectors(mean_frames[observed], Q, whiten=whiten)
    if not observed.all():
        mean, _, chol = fit_gaussian(vectors[observed])
        eps = np.random.default_rng(seed).standard_normal(((~observed).sum(), Q))
        vectors[~observed] = mean + eps @ chol.T
    return vectors


def init_sprites_inducing(
    pose_vectors: np.ndarray, styles: np.ndarray, num_inducing: int = 72, seed: int = 0
) -> np.ndarray:
    """Inducing inputs ``[m, d + Q]`` in the GP input space ``[style, pose]``.

    Point ``i`` takes the pose vector of pose ``i mod num_poses`` (so ``m = 72``
    puts one inducing point at every pose) and a style drawn from the Gaussian
    fitted to ``styles`` (e.g. the initial styles of the training characters).
    """
    pose_vectors = np.asarray(pose_vectors, dtype=np.float64)
    mean, _, chol = fit_gaussian(np.asarray(styles, dtype=np.float64))
    rng = np.random.default_rng(seed)
    style_part = mean + rng.standard_normal((int(num_inducing), mean.shape[0])) @ chol.T
    pose_part = pose_vectors[np.arange(int(num_inducing)) % pose_vectors.shape[0]]
    return np.concatenate([style_part, pose_part], axis=1)
