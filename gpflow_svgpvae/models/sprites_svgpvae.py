r"""The SPRITES SVGP-VAE (Jazbec et al., AISTATS 2021, section 5.3).

Data: frames :math:`y_i` (64 x 64 RGB) of characters :math:`c_i` in poses
:math:`p_i`; raw auxiliary inputs ``X_raw = [character id, pose id]``. The GP
prior lives on

.. math::

    x_i = [\,s_{c_i},\ w_{p_i}\,],\qquad
    s_c = \sum_{j\in\text{batch}:\ c_j = c} h_\phi(y_j),

where :math:`h_\phi` is the representation network
(:mod:`gpflow_svgpvae.networks.representation`; the aggregation is over the
character's frames *in the batch*) and :math:`w_p` is the learned pose vector
(GP-LVM table, 72 x 8, :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`,
PCA-initialised by :func:`pca_pose_vectors`). The kernel is
:func:`~gpflow_svgpvae.kernels.sprites_kernel` (cosine-linear(style) x
cosine-linear(pose) + white), :math:`m = 72` inducing points, :math:`L = 64`.

Because the style of a frame depends on the other frames of its character in
the batch, training batches hold whole characters: :func:`character_batches`
yields ``k`` characters x their ``P`` training frames per step (paper:
``10 x 50 = 500``).

Conditional generation (:meth:`SpritesSVGPVAE.generate`): for an unseen
character, its style is computed from its context frames, the GP posterior is
conditioned on exactly those encoded frames (:math:`s = 1`), and the decoder
maps the predictive mean at the target poses to frames.

Networks (:func:`sprites_encoder`, :func:`sprites_decoder`): six conv layers
of 16 filters each; the decoder upsamples with stride-2 ``Conv2DTranspose``
(no ``UpSampling2D``, whose gradient XLA cannot compile on CPU).
"""
import weakref
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from .. import amortized
from ..auxiliary import ObjectVectors, fit_gaussian, pca_object_vectors
from ..likelihoods import DecoderLikelihood
from ..networks.heads import GaussianSiteHead
from ..networks.representation import StyleRepresentation
from .svgpvae import SVGPVAE

__all__ = [
    "SpritesSVGPVAE",
    "SpritesPosterior",
    "sprites_encoder",
    "sprites_decoder",
    "character_batches",
    "mean_frames_per_pose",
    "pca_pose_vectors",
    "init_sprites_inducing",
]


# ----------------------------------------------------------------------------- networks
def sprites_encoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (2, 2, 1, 2, 1, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    min_variance: float = 1e-4,
    name: str = "sprites_encoder",
) -> tf_keras.Model:
    """Frames ``[b, 64, 64, 3] -> (means [b, L], variances [b, L])``.

    One ``Conv2D`` of ``filters`` filters per entry of ``strides`` (default six
    layers of 16: 64 -> 32 -> 16 -> 16 -> 8 -> 8 -> 8), flatten, then a
    :class:`~gpflow_svgpvae.networks.GaussianSiteHead`. About 2.1 M
    multiply-adds per frame.
    """
    frames = tf_keras.Input(shape=tuple(int(d) for d in image_shape), name="frames")
    h = frames
    for i, s in enumerate(strides):
        h = tf_keras.layers.Conv2D(
            int(filters), int(kernel_size), strides=int(s), padding="same", activation=activation, name=f"conv{i}"
        )(h)
    h = tf_keras.layers.Flatten(name="flatten")(h)
    outputs = GaussianSiteHead(int(num_latent), min_variance=min_variance, name="site_head")(h)
    return tf_keras.Model(frames, outputs, name=name)


def sprites_decoder(
    num_latent: int = 64,
    image_shape: Tuple[int, int, int] = (64, 64, 3),
    filters: int = 16,
    strides: Sequence[int] = (1, 1, 2, 1, 2, 1),
    kernel_size: int = 3,
    activation: str = "elu",
    output_activation: Optional[str] = "sigmoid",
    name: str = "sprites_decoder",
) -> tf_keras.Model:
    """Codes ``[b, L] -> frames [b, 64, 64, 3]`` (the Gaussian mean; sigmoid: in [0, 1]).

    A dense layer to an ``(H / f) x (W / f) x filters`` map (``f`` = product of
    ``strides`` times 2), one layer of ``filters`` filters per entry of
    ``strides`` (stride 1: ``Conv2D``; stride 2: ``Conv2DTranspose``), and a
    stride-2 ``Conv2DTranspose`` output layer with ``C`` channels. Default: six
    layers of 16 filters, 8 -> 8 -> 8 -> 16 -> 16 -> 32 -> 32 -> 64, about 4.4 M
    multiply-adds per frame. No ``UpSampling2D``: the gradient compiles under XLA.
    """
    H, W, C = (int(d) for d in image_shape)
    factor = 2 * int(np.prod([int(s) for s in strides]))
    if H % factor or W % factor:
        raise ValueError(f"image size {H}x{W} must be divisible by {factor} (2 x product of strides)")
    h0, w0 = H // factor, W // factor
    z = tf_keras.Input(shape=(int(num_latent),), name="latents")
    h = tf_keras.layers.Dense(h0 * w0 * int(filters), activation=activation, name="dense")(z)
    h = tf_keras.layers.Reshape((h0, w0, int(filters)))(h)
    for i, s in enumerate(strides):
        if int(s) == 1:
            h = tf_keras.layers.Conv2D(int(filters), kernel_size, padding="same", activation=activation, name=f"conv{i}")(h)
        else:
            h = tf_keras.layers.Conv2DTranspose(
                int(filters), kernel_size, strides=int(s), padding="same", activation=activation, name=f"deconv{i}"
            )(h)
    out = tf_keras.layers.Conv2DTranspose(
        C, kernel_size, strides=2, padding="same", activation=output_activation, name="output"
    )(h)
    return tf_keras.Model(z, out, name=name)


# --------------------------------------------------------------------------------- data
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
    dataset = dataset.map(lambda rows: (tf.gather(X_tensor, rows), images(rows)), num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=True)
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


# -------------------------------------------------------------------------------- model
_COMPILED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class SpritesSVGPVAE(SVGPVAE):
    r""":class:`~gpflow_svgpvae.models.SVGPVAE` on ``x = [style from frames, pose vector]``.

    ``data = (X_raw, Y)``: ``X_raw [b, >= 2]`` holds the character id (column
    ``character_column``) and the pose id (column ``pose_column``), ``Y`` the
    frames. :meth:`map_inputs` turns them into GP inputs ``[b, d + Q]``
    (float64): the style of each frame's character, aggregated over that
    character's frames in ``Y`` (:class:`~gpflow_svgpvae.networks.representation.StyleRepresentation`),
    and the pose vector from the table. Everything else (amortised posterior,
    ELBO, KL) is the parent's, on the mapped inputs; gradients reach the
    encoder, decoder, kernel, inducing inputs, representation network and
    pose table.

    :param representation: the style network and aggregation.
    :param pose_vectors: :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`
        table of pose vectors (72 x Q), looked up by pose id.
    Other parameters as :class:`~gpflow_svgpvae.models.SVGPVAE` (``kernel``
    and ``inducing_variable`` in the mapped space, width ``d + Q``).
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel,
        inducing_variable,
        representation: StyleRepresentation,
        pose_vectors: ObjectVectors,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        character_column: int = 0,
        pose_column: int = 1,
        **kwargs,
    ):
        super().__init__(encoder, decoder, kernel, inducing_variable, likelihood, **kwargs)
        if not isinstance(representation, StyleRepresentation):
            raise TypeError(f"representation must be a StyleRepresentation; got {type(representation).__name__}")
        if not isinstance(pose_vectors, ObjectVectors):
            raise TypeError(f"pose_vectors must be an ObjectVectors table; got {type(pose_vectors).__name__}")
        self.representation = representation
        self.pose_vectors = pose_vectors
        self.character_column = int(character_column)
        self.pose_column = int(pose_column)
        d = representation.output_dim
        if d is not None and self.input_dim is not None and self.input_dim != d + pose_vectors.Q:
            raise ValueError(
                f"The inducing inputs have {self.input_dim} columns but style + pose vectors have "
                f"{d} + {pose_vectors.Q} = {d + pose_vectors.Q}."
            )

    # ---------------------------------------------------------------- inputs
    def _split_raw(self, X_raw):
        X_raw = tf.convert_to_tensor(X_raw)
        if X_raw.shape.rank != 2 or (X_raw.shape[-1] is not None and X_raw.shape[-1] < 2):
            raise ValueError(f"X_raw must have shape [batch, >= 2] ([character id, pose id]); got {X_raw.shape}")
        return X_raw[:, self.character_column], X_raw[:, self.pose_column]

    def map_inputs(self, X_raw, Y, training: Optional[bool] = None) -> tf.Tensor:
        """Raw ``[b, 2]`` and frames ``[b, H, W, C]`` -> GP inputs ``[b, d + Q]`` (float64)."""
        characters, poses = self._split_raw(X_raw)
        styles = self.representation(Y, characters, training=training)  # [b, d]
        pose = self.pose_vectors.lookup(poses)  # [b, Q]
        return tf.concat([styles, tf.cast(pose, styles.dtype)], axis=-1)

    def objective_terms(self, data, training: Optional[bool] = True):
        X_raw, Y = data
        return super().objective_terms((self.map_inputs(X_raw, Y, training=training), Y), training=training)

    def inducing_posterior(self, X_raw, Y, num_data: Optional[int] = None):
        """As :meth:`SVGPVAE.inducing_posterior`, from raw inputs (whole characters in ``Y``)."""
        return super().inducing_posterior(self.map_inputs(X_raw, Y, training=False), Y, num_data=num_data)

    def prior_kl(self, X_raw, Y, num_data: Optional[int] = None):
        return super().prior_kl(self.map_inputs(X_raw, Y, training=False), Y, num_data=num_data)

    # ------------------------------------------------------------ generation
    def _batch_statistics(self, X_raw, Y):
        X = self.map_inputs(X_raw, Y, training=False)
        X, Y = self._check_batch(X, Y, num_data=np.inf)
        means, variances = self.encode(Y, training=False)
        self._check_num_latent(means)
        prior_chol = amortized.prior_cholesky(self.kernel, self.inducing_variable, self.jitter)
        Kmb = amortized.cross_covariance(self.kernel, self.inducing_variable, X)
        return amortized.whitened_statistics(prior_chol, Kmb, means, variances)

    def statistics(self, dataset: tf.data.Dataset) -> Tuple[tf.Tensor, tf.Tensor, int]:
        r"""Whitened statistics :math:`P_l = \sum_i w_i\lambda_{il}w_i^\top`,
        :math:`r_l = \sum_i w_i\lambda_{il}\tilde y_{il}` summed over a dataset.

        :param dataset: ``(X_raw, Y)`` batches that hold whole characters (e.g.
            :func:`character_batches` with ``shuffle=False``), so each frame's
            style is its character's style.
        :return: ``(P [L, M, M], r [L, M], number of frames)``; pass ``(P, r)``
            as ``prior_statistics`` to :meth:`generate` to condition on this data too.
        """
        fn = tf.function(self._batch_statistics)
        P = r = None
        count = 0
        for X_raw, Y in dataset:
            P_b, r_b = fn(X_raw, Y)
            P = P_b if P is None else P + P_b
            r = r_b if r is None else r + r_b
            count += int(tf.shape(Y)[0])
        if P is None:
            raise ValueError("The dataset produced no batches.")
        return P, r, count

    def _generate_chunk(self, context_frames, context_poses, target_poses, prior_P=None, prior_r=None):
        shape = tf.shape(context_frames)
        V, Qc = shape[0], shape[1]
        T = tf.shape(target_poses)[1]
        flat = tf.reshape(context_frames, tf.concat([[V * Qc], shape[2:]], 0))
        groups = tf.repeat(tf.range(V), Qc)
        style_rows = self.representation(flat, groups, training=False)  # [V*Qc, d]
        X_ctx = tf.concat([style_rows, self.pose_vectors.lookup(tf.reshape(context_poses, [-1]))], -1)
        means, variances = self.encode(flat, training=False)  # [V*Qc, L]
        self._check_num_latent(means)
        L = tf.shape(means)[-1]
        prior_chol = amortized.prior_cholesky(self.kernel, self.inducing_variable, self.jitter)  # [1, M, M]
        M = tf.shape(prior_chol)[-1]

        def per_character(K, n):  # [1, M, V*n] -> [V, 1, M, n]
            return tf.transpose(tf.reshape(K, [1, M, V, n]), [2, 0, 1, 3])

        Kmb = per_character(amortized.cross_covariance(self.kernel, self.inducing_variable, X_ctx), Qc)
        P, r = amortized.whitened_statistics(
            prior_chol, Kmb, tf.reshape(means, [V, Qc, L]), tf.reshape(variances, [V, Qc, L])
        )
        if prior_P is not None:  # also condition on other data (e.g. the training set), s = 1 for all
            P, r = P + prior_P[None], r + prior_r[None]
        posterior = amortized.posterior_from_statistics(prior_chol, P, r, scale=1.0)
        styles = tf.reshape(style_rows, [V, Qc, -1])[:, 0]  # [V, d]
        X_tgt = tf.concat([tf.repeat(styles, T, axis=0), self.pose_vectors.lookup(tf.reshape(target_poses, [-1]))], -1)
        Kmr = per_character(amortized.cross_covariance(self.kernel, self.inducing_variable, X_tgt), T)
        prior_var = tf.reshape(amortized.prior_variance_diag(self.kernel, X_tgt), [V, T, -1])
        z_mean, z_var = amortized.predict_marginals(posterior, Kmr, prior_var)  # [V, T, L]
        return z_mean, z_var

    def _decode_mean(self, Z):
        params = self.decode(Z, training=False)
        return tf.cast(self.likelihood.mean(tf.cast(params, gpflow.default_float())), tf.float32)

    def generate(
        self,
        context_frames,
        context_poses,
        target_poses,
        *,
        num_samples: Optional[int] = None,
        seed: int = 0,
        characters_per_chunk: int = 16,
        prior_statistics: Optional[Tuple[tf.Tensor, tf.Tensor]] = None,
    ) -> Dict[str, np.ndarray]:
        r"""Conditional generation for characters seen only through their context frames.

        For each character ``v`` independently: style from its context frames
        (the representation's aggregation), GP posterior :math:`q(u)`
        conditioned on exactly its encoded context frames (:math:`s = 1`; plus
        ``prior_statistics`` if given), predictive :math:`q(z)` at
        ``[style, pose vector]`` of each target pose, decoded.

        :param context_frames: ``[V, Qc, H, W, C]`` (float in [0, 1] or uint8).
        :param context_poses: ``[V, Qc]`` pose ids of the context frames.
        :param target_poses: ``[V, T]`` pose ids to generate.
        :param num_samples: also decode this many samples of :math:`z` per frame.
        :param prior_statistics: ``(P, r)`` from :meth:`statistics`: condition each
            character's posterior on that data as well as on its context frames
            (all with :math:`s = 1`). Default: the context frames only.
        :return: ``{"mean": [V, T, H, W, C]}`` (decoder mean at the latent
            posterior mean), ``"z_mean"``, ``"z_var"`` ``[V, T, L]``, and
            ``"samples": [S, V, T, H, W, C]`` with ``num_samples``.
        """
        context_frames = np.asarray(context_frames)
        if context_frames.dtype == np.uint8:
            context_frames = context_frames.astype(np.float32) / 255.0
        context_frames = context_frames.astype(np.float32)
        context_poses = np.asarray(context_poses, dtype=np.int64)
        target_poses = np.asarray(target_poses, dtype=np.int64)
        V = context_frames.shape[0]
        if context_poses.shape != context_frames.shape[:2] or target_poses.shape[0] != V:
            raise ValueError(
                f"shapes do not match: context_frames {context_frames.shape}, context_poses "
                f"{context_poses.shape}, target_poses {target_poses.shape}"
            )
        if self not in _COMPILED:  # compiled once per model, kept off the module (not tracked or copied)
            _COMPILED[self] = (tf.function(self._generate_chunk), tf.function(self._decode_mean))
        generate_chunk, decode = _COMPILED[self]
        out = {"mean": [], "z_mean": [], "z_var": [], "samples": []}
        gen = np.random.default_rng(seed)
        for start in range(0, V, int(characters_per_chunk)):
            sl = slice(start, min(V, start + int(characters_per_chunk)))
            extra = () if prior_statistics is None else tuple(prior_statistics[:2])
            z_mean, z_var = generate_chunk(
                tf.constant(context_frames[sl]), tf.constant(context_poses[sl]), tf.constant(target_poses[sl]), *extra
            )
            v, t, L = z_mean.shape
            frames = decode(tf.reshape(z_mean, [v * t, L])).numpy()
            out["mean"].append(frames.reshape((v, t) + frames.shape[1:]))
            out["z_mean"].append(z_mean.numpy())
            out["z_var"].append(z_var.numpy())
            if num_samples:
                eps = gen.standard_normal((int(num_samples),) + tuple(z_mean.shape))
                Z = z_mean.numpy()[None] + np.sqrt(np.maximum(z_var.numpy(), 0.0))[None] * eps
                s = decode(tf.constant(Z.reshape(-1, L))).numpy()
                out["samples"].append(s.reshape((int(num_samples), v, t) + s.shape[1:]))
        result = {key: np.concatenate(vals, axis=0) for key, vals in out.items() if key != "samples"}
        if num_samples:
            result["samples"] = np.concatenate(out["samples"], axis=1)
        return result

    # -------------------------------------------------------------- posterior
    def posterior(self, data, batch_size: int = 1024) -> "SpritesPosterior":
        """A cached posterior conditioned on all of ``data = (X_raw, Y)`` (arrays, :math:`s = 1`).

        Styles are aggregated over *all* frames of each character in ``data``;
        the returned posterior predicts at raw inputs of those characters.
        """
        if isinstance(data, tf.data.Dataset):
            raise TypeError("SpritesSVGPVAE.posterior takes (X_raw, Y) arrays (styles need whole characters).")
        X_raw, Y = data
        X_raw = np.asarray(X_raw)
        characters = X_raw[:, self.character_column].astype(np.int64)
        ids, styles = self.representation.styles(Y, characters, batch_size=batch_size)
        table = dict(zip(ids.tolist(), styles))
        poses = self.pose_vectors.lookup(X_raw[:, self.pose_column].astype(np.int64)).numpy()
        X = np.concatenate([np.stack([table[c] for c in characters]), poses], axis=1)
        return SpritesPosterior(self, super().posterior((X, Y), batch_size=batch_size), table)


class SpritesPosterior(tf.Module):
    """An :class:`~gpflow_svgpvae.posterior.SVGPVAEPosterior` in the mapped space
    (``.mapped``) with the styles of the conditioning characters, predicting at
    raw inputs ``[character id, pose id]`` of those characters."""

    def __init__(self, model: SpritesSVGPVAE, mapped_posterior, styles: Dict[int, np.ndarray]):
        super().__init__(name="sprites_svgpvae_posterior")
        self.mapped = mapped_posterior
        self.styles = styles
        self.pose_vectors = model.pose_vectors
        self.character_column = model.character_column
        self.pose_column = model.pose_column

    def _map(self, X_raw):
        X_raw = np.asarray(X_raw)
        chars = X_raw[:, self.character_column].astype(np.int64)
        missing = sorted(set(chars.tolist()) - set(self.styles))
        if missing:
            raise KeyError(f"no style for characters {missing[:5]}: they are not in the conditioning data")
        style = np.stack([self.styles[c] for c in chars])
        pose = self.pose_vectors.lookup(X_raw[:, self.pose_column].astype(np.int64)).numpy()
        return np.concatenate([style, pose], axis=1)

    def predict_f(self, X_raw):
        return self.mapped.predict_f(self._map(X_raw))

    def predict_y(self, X_raw, num_samples: Optional[int] = None, seed: int = 0):
        return self.mapped.predict_y(self._map(X_raw), num_samples=num_samples, seed=seed)
