"""GP-LVM auxiliary inputs for object/view datasets.

Each data point is one *object* (a digit, a sprite character) seen under one *view* (a
rotation angle, a pose). The GP prior lives on ``[view features..., object vector]``: the
view features are observed, the object vector is learned per object (a GP-LVM latent,
Lawrence 2005; Casale et al. 2018). :class:`ObjectVectors` is that table, an input transform
``[view features..., object id] -> [view features..., object vector]``;
:func:`pca_object_vectors` and :func:`random_object_vectors` initialise it;
:func:`init_inducing_per_view` places inducing inputs in the mapped space, where the kernel
sees them and the data (``ObjectVectors.mapped_dims`` gives the kernel's ``active_dims``).
"""

from typing import Optional, Tuple

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import Parameter, TensorType

from .transforms import InputTransform

__all__ = [
    "ObjectVectors",
    "split_id_column",
    "pca_object_vectors",
    "random_object_vectors",
    "fit_gaussian",
    "init_inducing_per_view",
]


def _normalise_column(id_column: int, width: int) -> int:
    """Turn a (possibly negative) column index into one in ``[0, width)``."""
    if not -width <= id_column < width:
        raise ValueError(f"id_column={id_column} is out of range for auxiliary inputs with {width} columns.")
    return id_column % width


@check_shapes(
    "X: [batch..., D]",
    "return[0]: [batch..., D_view]",
    "return[1]: [batch...]",
)
def split_id_column(X: TensorType, id_column: int = -1) -> Tuple[tf.Tensor, tf.Tensor]:
    """Split raw auxiliary inputs into the view features and the object ids.

    :param X: raw auxiliary inputs ``[batch..., D]`` (float or integer, ``D`` static); column
        ``id_column`` (negative: from the end) holds the object id, the others (in order)
        are view features, ``D_view = D - 1``.
    :return: ``(view_features, ids_as_stored)``: the ids in the dtype of X, unvalidated.
    """
    X = tf.convert_to_tensor(X)
    width = X.shape[-1]
    if width is None:
        raise ValueError("split_id_column: the last dimension of X must be statically known.")
    col = _normalise_column(id_column, width)
    views = tf.concat([X[..., :col], X[..., col + 1 :]], axis=-1)  # [batch..., D - 1]
    ids = X[..., col]  # [batch...]
    return views, ids


class ObjectVectors(InputTransform):
    r"""A learned table of object vectors (GP-LVM latents),
    :math:`W \in \mathbb{R}^{n_{\mathrm{obj}} \times Q}`, stored as a trainable
    :class:`gpflow.Parameter` in :func:`gpflow.default_float` (no transform).

    Calling the module maps raw auxiliary inputs to GP inputs:

    .. math::
        [\mathbf{v}, j] \mapsto [\mathbf{v}, W_{j,:}],

    where :math:`j` is the object id (column ``id_column`` of the raw inputs,
    stored as an integer or as an integral float) and :math:`\mathbf{v}` are
    the remaining columns (view features) in their original order. The result
    is in float64 with the view features first and the object vector in the
    last ``Q`` columns. Gradients of anything computed from the output flow to
    exactly the table rows whose ids appear in the input (``tf.gather``).

    Errors: a wrong static width (when ``num_view_features`` is given) or an
    impossible ``id_column`` raise :class:`ValueError` at call time; by default
    (``check_ids_in_graph=True``) ids that are negative, ``>= num_objects`` or not
    integral raise :class:`tf.errors.InvalidArgumentError` (one assertion per call,
    also inside ``tf.function``). XLA compiles assertions away and ``tf.gather``
    clamps out-of-range indices silently: validate a dataset's ids once, eagerly, with
    :meth:`check_inputs` (:func:`gpflow_svgpvae.training.train` does this for arrays).
    Unchecked (``check_ids_in_graph=False``), an out-of-range id still raises in
    ``tf.gather`` on CPU, but a non-integral id is rounded silently and on GPU an
    out-of-range id gives zeros.
    """

    def __init__(
        self,
        num_objects: int,
        Q: int,
        id_column: int = -1,
        num_view_features: Optional[int] = None,
        initial_vectors: Optional[np.ndarray] = None,
        init_scale: float = 0.1,
        seed: Optional[int] = None,
        name: Optional[str] = None,
        check_ids_in_graph: bool = True,
    ) -> None:
        """
        :param num_objects: number of objects (rows of the table).
        :param Q: dimension of an object vector.
        :param id_column: the column of the raw inputs that holds the object id
            (negative values count from the end; default: the last column).
        :param num_view_features: if given, raw inputs must have exactly
            ``num_view_features + 1`` columns.
        :param initial_vectors: initial table ``[num_objects, Q]``, e.g. from
            :func:`pca_object_vectors`. If None, the table is drawn from
            :func:`random_object_vectors` with ``scale=init_scale`` and ``seed``.
        :param init_scale: standard deviation of the random initialisation (default 0.1:
            on rotated MNIST, random vectors of sd 0.1 reach a lower test MSE in 300 epochs than
            the paper's sd 1.5 and than raw PCA scores; see ``docs/results.md``).
        :param seed: seed of the random initialisation.
        :param name: module name.
        :param check_ids_in_graph: assert in the graph (every call, every step) that the
            ids are integral and in range; ``False``: a few ops less per step, for ids
            validated once beforehand (see the class docstring).
        """
        super().__init__(name=name)
        self.check_ids_in_graph = bool(check_ids_in_graph)
        num_objects = int(num_objects)
        Q = int(Q)
        if num_objects < 1 or Q < 1:
            raise ValueError(f"ObjectVectors: need num_objects >= 1 and Q >= 1, got {num_objects}, {Q}.")
        if num_view_features is not None and int(num_view_features) < 0:
            raise ValueError(f"num_view_features must be >= 0, got {num_view_features}.")
        if initial_vectors is None:
            initial_vectors = random_object_vectors(num_objects, Q, scale=init_scale, seed=seed)
        initial_vectors = np.asarray(initial_vectors, dtype=np.float64)
        if initial_vectors.shape != (num_objects, Q):
            raise ValueError(
                f"initial_vectors has shape {initial_vectors.shape}, expected (num_objects, Q) = {(num_objects, Q)}."
            )
        self.num_objects = num_objects
        self.Q = Q
        self.id_column = int(id_column)
        self.num_view_features = None if num_view_features is None else int(num_view_features)
        self.vectors = Parameter(
            initial_vectors, dtype=gpflow.default_float(), name="object_vectors"
        )  # [num_objects, Q]

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the raw inputs, ``num_view_features + 1`` (None: not fixed)."""
        return None if self.num_view_features is None else self.num_view_features + 1

    @property
    def output_dim(self) -> Optional[int]:
        """Width of the mapped inputs, ``num_view_features + Q`` (None: not fixed)."""
        return None if self.num_view_features is None else self.num_view_features + self.Q

    def mapped_dim(self, input_dim: Optional[int] = None) -> Optional[int]:
        """``input_dim - 1 + Q`` (the id column becomes the object vector)."""
        if self.output_dim is not None:
            return self.output_dim
        return None if input_dim is None else int(input_dim) - 1 + self.Q

    def _check_width(self, width: int) -> None:
        if self.num_view_features is not None and width != self.num_view_features + 1:
            raise ValueError(
                f"ObjectVectors: X (raw auxiliary inputs) must have num_view_features + 1 = "
                f"{self.num_view_features + 1} columns (view features and the object id), got {width}"
                + (
                    ": the object id column seems to be missing (append the ids as column id_column)."
                    if width == self.num_view_features
                    else "."
                )
            )

    def check_inputs(self, X: np.ndarray) -> None:
        """Validate the width and the ids of a whole dataset's raw inputs (see :meth:`check_ids`)."""
        X = np.asarray(X)
        width = X.shape[-1] if X.ndim else 0
        self._check_width(width)
        column = _normalise_column(self.id_column, width)
        try:
            self.check_ids(X[..., column])
        except ValueError as error:
            raise ValueError(
                f"{error} The ids are read from column {self.id_column} of X (raw auxiliary inputs, {width} "
                "column(s)): if X has no id column (e.g. only angles), append the object ids as that column."
            ) from None

    def mapped_dims(self, num_view_features: Optional[int] = None) -> Tuple[list, list]:
        """Column indices of the *mapped* inputs, for kernels' ``active_dims``: ``(view_dims,
        object_dims)``, ``[0, .., Dv-1]`` and ``[Dv, .., Dv+Q-1]`` (``Dv``: ``num_view_features``,
        by default the one given at construction)."""
        dv = self.num_view_features if num_view_features is None else int(num_view_features)
        if dv is None:
            raise ValueError("mapped_dims: num_view_features is unknown; pass it.")
        return list(range(dv)), list(range(dv, dv + self.Q))

    def check_ids(self, ids: np.ndarray) -> np.ndarray:
        """Validate object ids (integer or integral float, any shape; e.g. a whole dataset's id
        column) eagerly in numpy, and return them as int64.

        :raises ValueError: for non-integral, negative or ``>= num_objects`` ids.
        """
        ids = np.asarray(ids)
        if ids.dtype.kind in "iu":
            int_ids = ids.astype(np.int64)
        else:
            rounded = np.round(ids.astype(np.float64))
            bad = np.abs(ids - rounded) > 1e-6
            if np.any(bad):
                raise ValueError(f"ObjectVectors: object ids must be integral; got e.g. {ids[bad][:5]}.")
            int_ids = rounded.astype(np.int64)
        bad = (int_ids < 0) | (int_ids >= self.num_objects)
        if np.any(bad):
            raise ValueError(
                f"ObjectVectors: object ids must be in [0, {self.num_objects}); got e.g. {int_ids[bad][:5]}."
            )
        return int_ids

    @check_shapes(
        "ids: [batch...]",
        "return: [batch..., Q]",
    )
    def lookup(self, ids: TensorType) -> tf.Tensor:
        """The table rows (float64) of ``ids`` (integer or integral float), validated as in the
        class docstring."""
        ids = self._validated_ids(tf.convert_to_tensor(ids))
        return tf.gather(self.vectors, ids)  # [batch..., Q]

    def _validated_ids(self, ids: tf.Tensor) -> tf.Tensor:
        if ids.dtype.is_integer:
            int_ids = tf.cast(ids, tf.int64)
            valid = None
        else:
            ids64 = tf.cast(ids, tf.float64)
            rounded = tf.round(ids64)
            int_ids = tf.cast(rounded, tf.int64)
            valid = tf.abs(ids64 - rounded) <= 1e-6
        if not self.check_ids_in_graph:
            return int_ids
        # One assertion for the three conditions (each tf.debugging assertion is a
        # conditional in the graph, run every step).
        in_range = (int_ids >= 0) & (int_ids < self.num_objects)
        valid = in_range if valid is None else valid & in_range
        check = tf.debugging.Assert(
            tf.reduce_all(valid),
            [
                f"ObjectVectors: object ids must be integers (integral values), >= 0 and "
                f"< num_objects={self.num_objects}; ids:",
                ids,
            ],
            summarize=10,
        )
        with tf.control_dependencies([check]):
            return tf.identity(int_ids)

    @check_shapes(
        "X: [batch..., D_raw]",
        "return: [batch..., D_mapped]",
    )
    def __call__(self, X: TensorType, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        """Raw inputs ``[view features..., object id]`` ``[batch..., Dv + 1]`` ->
        ``[view features..., object vector]`` ``[batch..., Dv + Q]`` (float64)."""
        X = tf.convert_to_tensor(X)
        width = X.shape[-1]
        if width is None:
            raise ValueError("ObjectVectors: the last dimension of X must be statically known.")
        self._check_width(width)
        views, ids = split_id_column(X, self.id_column)  # [batch..., Dv], [batch...]
        obj = self.lookup(ids)  # [batch..., Q]
        views = tf.cast(views, obj.dtype)
        return tf.concat([views, obj], axis=-1)  # [batch..., Dv + Q]


def pca_object_vectors(
    unrotated_images: np.ndarray,
    Q: int,
    seed: Optional[int] = None,
    whiten: bool = False,
    scale: Optional[float] = None,
) -> np.ndarray:
    r"""PCA scores of canonical ("unrotated") object images, the paper's
    initialisation of the object vectors.

    With :math:`Y \in \mathbb{R}^{n \times P}` the flattened images and
    :math:`Y_c = Y - \bar{\mathbf{y}}` the centred data, the thin SVD
    :math:`Y_c = U S V^\top` gives the scores

    .. math::
        T = Y_c V_{:, :Q} = U_{:, :Q} S_{:Q},

    i.e. the projections onto the top-``Q`` eigenvectors of the sample
    covariance (descending variance). Each component is defined up to sign; the
    sign is fixed so that the largest-magnitude entry of each loading vector
    :math:`V_{:, q}` is positive, which makes the result deterministic.

    Rescaling. By default the raw scores are returned (column variances are the
    top-``Q`` eigenvalues of the sample covariance, ``ddof=1``). With
    ``whiten=True`` each column is divided by its sample standard deviation
    :math:`S_q / \sqrt{n-1}` so every component has unit variance; zero-variance
    components are left at 0.

    :param unrotated_images: ``[n, ...]``, one canonical image per object.
    :param Q: number of components, ``1 <= Q <= min(n, P)``.
    :param seed: accepted for a signature uniform with
        :func:`random_object_vectors`; unused (the full SVD is deterministic).
    :param whiten: rescale each component to unit variance.
    :param scale: if given, multiply the (possibly whitened) scores by one factor so that
        their root mean square over all entries is ``scale`` (directions and ratios kept).
        Small initial vectors train much faster on rotated MNIST (``docs/results.md``): Adam's
        steps move large raw scores (column sds 1-2.5) slowly relative to their size.
    :return: float64 array ``[n, Q]``.
    """
    del seed  # deterministic
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number or None; got {scale!r}")
    Y = np.asarray(unrotated_images, dtype=np.float64)
    if Y.ndim < 2:
        raise ValueError(f"unrotated_images must be [n, ...] with n objects, got shape {Y.shape}.")
    n = Y.shape[0]
    Y = Y.reshape(n, -1)  # [n, P]
    if not 1 <= Q <= min(Y.shape):
        raise ValueError(f"Q must be in [1, min(n, P)] = [1, {min(Y.shape)}], got {Q}.")
    Yc = Y - Y.mean(axis=0, keepdims=True)  # [n, P]
    U, S, Vt = np.linalg.svd(Yc, full_matrices=False)  # [n, r], [r], [r, P]
    Vt = Vt[:Q]  # [Q, P]
    signs = np.sign(Vt[np.arange(Q), np.argmax(np.abs(Vt), axis=1)])  # [Q]
    signs[signs == 0] = 1.0
    scores = U[:, :Q] * (S[:Q] * signs)  # [n, Q]
    if whiten:
        if n < 2:
            raise ValueError("whiten=True needs at least 2 objects.")
        sd = S[:Q] / np.sqrt(n - 1)  # [Q]
        scores = np.where(sd > 0, scores / np.where(sd > 0, sd, 1.0), 0.0)
    if scale is not None:
        rms = np.sqrt(np.mean(np.square(scores)))
        if rms > 0:
            scores = scores * (scale / rms)
    return scores


def random_object_vectors(n: int, Q: int, scale: float = 0.1, seed: Optional[int] = None) -> np.ndarray:
    """Random object vectors ``[n, Q]`` (float64), i.i.d. :math:`\\mathcal{N}(0, \\mathrm{scale}^2)`
    from ``numpy.random.default_rng(seed)``. The paper's ablation of the PCA initialisation uses
    ``scale=1.5``; the default 0.1 trains much faster (rotated MNIST, ``docs/results.md``).
    """
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((int(n), int(Q)))


def fit_gaussian(vectors: np.ndarray, max_jitter: float = 1e-3) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Fit a Gaussian to the rows of ``vectors``: sample mean, sample covariance
    (``ddof=1``, as :func:`numpy.cov`) and its lower Cholesky factor.

    If the covariance is singular (e.g. fewer objects than dimensions), jitter
    :math:`\epsilon\,\mathrm{mean}(\mathrm{diag}\,\Sigma)\,I` is added with
    :math:`\epsilon = 10^{-10}, 10^{-9}, \dots` up to ``max_jitter`` before the
    factorisation; the returned covariance is the un-jittered one.

    :param vectors: ``[n, Q]`` with ``n >= 2``.
    :return: ``(mean [Q], cov [Q, Q], chol [Q, Q])``.
    """
    V = np.asarray(vectors, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] < 2:
        raise ValueError(f"need vectors of shape [n >= 2, Q], got {V.shape}.")
    mean = V.mean(axis=0)  # [Q]
    cov = np.atleast_2d(np.cov(V, rowvar=False))  # [Q, Q]
    scale = max(float(np.mean(np.diag(cov))), float(np.finfo(np.float64).tiny))
    eye = np.eye(cov.shape[0])
    try:
        return mean, cov, np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        pass
    eps = 1e-10
    while eps <= max_jitter:
        try:
            return mean, cov, np.linalg.cholesky(cov + eps * scale * eye)
        except np.linalg.LinAlgError:
            eps *= 10.0
    raise np.linalg.LinAlgError(
        f"fit_gaussian: covariance not positive definite even with relative jitter {max_jitter}."
    )


def init_inducing_per_view(
    views: np.ndarray,
    num_per_view: int,
    object_vectors: np.ndarray,
    seed: Optional[int] = None,
) -> np.ndarray:
    r"""Inducing inputs with ``num_per_view`` points at every view value, whose
    object parts are drawn from the Gaussian fitted to the object vectors,

    .. math::
        \mathbf{z}_{v,k} = [\mathbf{v}_v, \boldsymbol{\mu} + L \boldsymbol{\varepsilon}_{v,k}],
        \qquad \boldsymbol{\varepsilon}_{v,k} \sim \mathcal{N}(0, I),

    with :math:`\boldsymbol{\mu}, LL^\top` the sample mean and covariance of
    ``object_vectors`` (:func:`fit_gaussian`). Rows are view-major: rows
    ``v * num_per_view .. (v + 1) * num_per_view - 1`` belong to ``views[v]``.
    Rotated MNIST: 16 angles x 2 per angle = 32 inducing points.

    :param views: ``[V, Dv]`` view feature values (``[V]`` is read as ``Dv = 1``).
    :param num_per_view: points per view value.
    :param object_vectors: ``[n, Q]``, e.g. from :func:`pca_object_vectors`.
    :param seed: seed for :func:`numpy.random.default_rng`.
    :return: float64 array ``[V * num_per_view, Dv + Q]``.
    """
    views = np.asarray(views, dtype=np.float64)
    if views.ndim == 1:
        views = views[:, None]
    if views.ndim != 2:
        raise ValueError(f"views must be [V, Dv] or [V], got shape {views.shape}.")
    if int(num_per_view) < 1:
        raise ValueError(f"num_per_view must be >= 1, got {num_per_view}.")
    num_per_view = int(num_per_view)
    mean, _, chol = fit_gaussian(object_vectors)
    V = views.shape[0]
    Q = mean.shape[0]
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((V * num_per_view, Q))  # [M, Q]
    obj = mean + eps @ chol.T  # [M, Q]
    view_part = np.repeat(views, num_per_view, axis=0)  # [M, Dv]
    return np.concatenate([view_part, obj], axis=1)  # [M, Dv + Q]
