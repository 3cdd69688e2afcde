r"""Input transforms: from the raw auxiliary inputs of a batch to the GP's inputs.

One :class:`~gpflow_svgpvae.SVGPVAE` serves every kind of auxiliary data
through a small module that maps the raw inputs ``X_raw [..., b, D_raw]`` of a
batch (and, where it needs them, the batch's observations ``Y``) to the inputs
``X [..., b, D]`` of the kernel, the way GPflow serves every kernel through one
SVGP. The transform's variables are part of the model, so they train with it.

* :class:`Identity` (the default): the raw inputs are the GP inputs (time,
  position, angle).
* :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`: a learned GP-LVM table,
  ``[view features..., object id] -> [view features..., object vector]``
  (objects seen from several views: rotated MNIST).
* :class:`GroupRepresentation`: a representation network applied to the
  observations and aggregated over the rows of the same group (object), so an
  *unseen* object gets its vector from its own observations (SPRITES styles).
* :class:`SelectColumns`, :class:`Chain` (one after the other) and
  :class:`Concatenate` (side by side) compose them.

Queries at prediction time have no observations: a transform that needs them
summarises the conditioning data once (:meth:`InputTransform.context`, e.g. one
style per object) and maps queries through that summary
(:meth:`InputTransform.map_queries`).
"""

import abc
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf

__all__ = [
    "InputTransform",
    "Identity",
    "SelectColumns",
    "Chain",
    "Concatenate",
    "GroupRepresentation",
    "as_input_transform",
    "flatten_leading",
]


def flatten_leading(tensor: tf.Tensor, num_leading: int) -> tf.Tensor:
    """Merge the first ``num_leading`` axes into one."""
    if num_leading == 1:
        return tensor
    rest = tensor.shape[num_leading:]
    if rest.is_fully_defined():
        return tf.reshape(tensor, [-1] + rest.as_list())
    return tf.reshape(tensor, tf.concat([[-1], tf.shape(tensor)[num_leading:]], 0))


class InputTransform(gpflow.Module, abc.ABC):
    """Maps raw auxiliary inputs ``[..., b, D_raw]`` to GP inputs ``[..., b, D]`` (float64).

    Subclasses implement :meth:`__call__`; those that read the observations set
    ``needs_observations = True`` and implement :meth:`context` and
    :meth:`map_queries`.
    """

    #: whether :meth:`__call__` reads the observations ``Y`` of the batch
    needs_observations: bool = False

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the raw inputs (None: any)."""
        return None

    @property
    def output_dim(self) -> Optional[int]:
        """Width of the GP inputs (None: unknown)."""
        return None

    def mapped_dim(self, input_dim: Optional[int] = None) -> Optional[int]:
        """Width of the GP inputs given the width of the raw inputs (None: unknown)."""
        return self.output_dim

    @abc.abstractmethod
    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        """GP inputs ``[..., b, D]`` of a batch with raw inputs ``X [..., b, D_raw]``
        and observations ``Y [..., b, ...]``."""

    def check_inputs(self, X: np.ndarray) -> None:
        """Validate the raw inputs of a whole dataset eagerly (numpy); raise ``ValueError``."""

    def context(self, chunks: Iterable[Tuple[Any, Any]]) -> Any:
        """A summary of conditioning data that :meth:`map_queries` needs (default: none).

        :param chunks: a re-iterable of ``(X_raw, Y)`` chunks (all of the data).
        """
        return None

    def map_queries(self, Xnew, context: Any = None) -> tf.Tensor:
        """GP inputs of query inputs (no observations), given :meth:`context`."""
        return self(Xnew)


class Identity(InputTransform):
    """The raw inputs are the GP inputs (cast to ``gpflow.default_float()``)."""

    def mapped_dim(self, input_dim: Optional[int] = None) -> Optional[int]:
        return input_dim

    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        return tf.cast(X, gpflow.default_float())


class SelectColumns(InputTransform):
    """Keep the given columns of the raw inputs, in the given order."""

    def __init__(self, columns: Sequence[int], name: Optional[str] = None):
        super().__init__(name=name)
        self.columns = [int(c) for c in columns]
        if not self.columns:
            raise ValueError("SelectColumns needs at least one column.")

    @property
    def output_dim(self) -> int:
        return len(self.columns)

    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        X = tf.convert_to_tensor(X)
        width = X.shape[-1]
        if width is not None and not all(-width <= c < width for c in self.columns):
            raise ValueError(f"SelectColumns{tuple(self.columns)}: the inputs have only {width} columns.")
        return tf.gather(X, self.columns, axis=-1)

    def check_inputs(self, X: np.ndarray) -> None:
        width = np.shape(X)[-1]
        if not all(-width <= c < width for c in self.columns):
            raise ValueError(f"SelectColumns{tuple(self.columns)}: the inputs have only {width} columns.")


class _Composition(InputTransform):
    """Several transforms; the composition reads the observations if any of them does."""

    def __init__(self, transforms: Sequence[InputTransform], name: Optional[str] = None):
        super().__init__(name=name)
        self.transforms = [as_input_transform(t) for t in transforms]
        if not self.transforms:
            raise ValueError(f"{type(self).__name__} needs at least one transform.")
        self.needs_observations = any(t.needs_observations for t in self.transforms)


class Chain(_Composition):
    """``transforms[-1](...transforms[1](transforms[0](X)))``; each step sees the batch's ``Y``."""

    @property
    def input_dim(self) -> Optional[int]:
        return self.transforms[0].input_dim

    @property
    def output_dim(self) -> Optional[int]:
        return self.mapped_dim(self.input_dim)

    def mapped_dim(self, input_dim: Optional[int] = None) -> Optional[int]:
        for transform in self.transforms:
            input_dim = transform.mapped_dim(input_dim)
        return input_dim

    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        for transform in self.transforms:
            X = transform(X, Y, training=training)
        return X

    def check_inputs(self, X: np.ndarray) -> None:
        self.transforms[0].check_inputs(X)

    def context(self, chunks) -> List[Any]:
        contexts: List[Any] = []
        for i, transform in enumerate(self.transforms):
            done = list(zip(self.transforms[:i], contexts))

            def mapped(done=done):
                for X, Y in chunks:
                    for t, c in done:
                        X = t.map_queries(X, c)
                    yield X, Y

            contexts.append(transform.context(_Reiterable(mapped)) if transform.needs_observations else None)
        return contexts

    def map_queries(self, Xnew, context=None) -> tf.Tensor:
        contexts = context if context is not None else [None] * len(self.transforms)
        for transform, c in zip(self.transforms, contexts):
            Xnew = transform.map_queries(Xnew, c)
        return Xnew


class Concatenate(_Composition):
    """The outputs of several transforms of the same raw inputs, side by side (last axis)."""

    @property
    def output_dim(self) -> Optional[int]:
        return self.mapped_dim(None)

    def mapped_dim(self, input_dim: Optional[int] = None) -> Optional[int]:
        dims = [t.mapped_dim(input_dim) for t in self.transforms]
        known = [d for d in dims if d is not None]
        return int(sum(known)) if len(known) == len(dims) else None

    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        dtype = gpflow.default_float()
        return tf.concat([tf.cast(t(X, Y, training=training), dtype) for t in self.transforms], axis=-1)

    def check_inputs(self, X: np.ndarray) -> None:
        for t in self.transforms:
            t.check_inputs(X)

    def context(self, chunks) -> List[Any]:
        return [t.context(chunks) if t.needs_observations else None for t in self.transforms]

    def map_queries(self, Xnew, context=None) -> tf.Tensor:
        contexts = context if context is not None else [None] * len(self.transforms)
        dtype = gpflow.default_float()
        return tf.concat([tf.cast(t.map_queries(Xnew, c), dtype) for t, c in zip(self.transforms, contexts)], -1)


class _Reiterable:
    def __init__(self, make):
        self._make = make

    def __iter__(self):
        return iter(self._make())


class GroupRepresentation(InputTransform):
    r"""A representation of each row's group computed from the group's observations.

    .. math::

        x_i = s_{g_i},\qquad s_g = \sum_{j:\ g_j = g} h_\phi(y_j)
        \quad(\text{or the mean, with } \texttt{reduction="mean"}),

    where :math:`g_i` is the group id in column ``group_column`` of the raw
    inputs (a SPRITES character) and :math:`h_\phi` the network of a
    :class:`~gpflow_svgpvae.networks.representation.StyleRepresentation`.
    In training the sum runs over the group's rows *in the batch* (batches
    should hold whole groups); for queries it runs over all of the group's
    rows in the conditioning data (:meth:`context`), so a group unseen in
    training is placed by its own observations.
    """

    needs_observations = True

    def __init__(self, representation, group_column: int = 0, name: Optional[str] = None):
        super().__init__(name=name)
        from .networks.representation import StyleRepresentation  # networks sit beside this layer

        if not isinstance(representation, StyleRepresentation):
            raise TypeError(f"representation must be a StyleRepresentation; got {type(representation).__name__}")
        self.representation = representation
        self.group_column = int(group_column)

    @property
    def output_dim(self) -> Optional[int]:
        return self.representation.output_dim

    def _groups(self, X) -> tf.Tensor:
        X = tf.convert_to_tensor(X)
        width = X.shape[-1]
        if width is not None and not -width <= self.group_column < width:
            raise ValueError(
                f"GroupRepresentation: group_column={self.group_column} but the inputs have {width} columns."
            )
        return X[..., self.group_column]

    def __call__(self, X, Y=None, training: Optional[bool] = None) -> tf.Tensor:
        if Y is None:
            raise ValueError(
                "GroupRepresentation needs the observations of the batch (the group's vector is computed "
                "from them); for queries use the model's posterior(data), which summarises the data."
            )
        X = tf.convert_to_tensor(X)
        lead = X.shape.rank - 1
        groups = tf.reshape(self._groups(X), [-1])  # [n]
        styles = self.representation(flatten_leading(tf.convert_to_tensor(Y), lead), groups, training=training)
        return tf.reshape(styles, tf.concat([tf.shape(X)[:-1], tf.shape(styles)[-1:]], 0))  # [..., b, d]

    def context(self, chunks) -> Tuple[tf.Tensor, tf.Tensor]:
        """``(group ids [G], vectors [G, d])`` of every group in the data (network run per chunk)."""
        sums: Dict[Any, np.ndarray] = {}  # group id -> sum of its frames' features [d]
        counts: Dict[Any, int] = {}
        for X, Y in chunks:
            X = np.asarray(X)
            lead = X.ndim - 1
            groups = X[..., self.group_column].reshape(-1)
            Y = np.asarray(Y)
            Y = Y.reshape((-1,) + Y.shape[lead:])
            if Y.dtype == np.uint8:
                Y = Y.astype(np.float32) / 255.0
            features = self.representation.frame_features(tf.constant(Y), training=False).numpy().astype(np.float64)
            for g in np.unique(groups):
                rows = groups == g
                sums[g] = sums.get(g, 0.0) + features[rows].sum(axis=0)
                counts[g] = counts.get(g, 0) + int(rows.sum())
        if not sums:
            raise ValueError("GroupRepresentation: the conditioning data are empty.")
        ids = np.array(sorted(sums), dtype=np.float64)
        vectors = np.stack(
            [sums[g] / (counts[g] if self.representation.reduction == "mean" else 1) for g in sorted(sums)]
        )
        return tf.constant(ids), tf.constant(vectors, dtype=gpflow.default_float())

    def map_queries(self, Xnew, context=None) -> tf.Tensor:
        if context is None:
            raise ValueError("GroupRepresentation: queries need the context of the conditioning data.")
        ids, vectors = context
        groups = tf.cast(self._groups(Xnew), ids.dtype)  # [..., R]
        match = tf.equal(groups[..., None], ids)  # [..., R, G]
        tf.debugging.assert_equal(
            tf.reduce_all(tf.reduce_any(match, axis=-1)),
            True,
            message="GroupRepresentation: a query's group is not in the conditioning data (no observations of it).",
        )
        return tf.gather(vectors, tf.argmax(tf.cast(match, tf.int32), axis=-1))  # [..., R, d]


def as_input_transform(transform) -> InputTransform:
    """``None`` -> :class:`Identity`; an :class:`InputTransform` as it is; anything else: ``TypeError``."""
    if transform is None:
        return Identity()
    if not isinstance(transform, InputTransform):
        raise TypeError(
            "input_transform must be a gpflow_svgpvae.transforms.InputTransform (Identity, ObjectVectors, "
            f"GroupRepresentation, SelectColumns, Chain, Concatenate); got {type(transform).__name__}"
        )
    return transform
