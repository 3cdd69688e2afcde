r"""The data boundary of every model: what ``data`` may be, checked and normalised once.

``data`` is ``(X, Y)`` or ``(X, Y, mask)`` in one of two layouts:

* ``X [b, D]``, ``Y [b, ...]``: a minibatch of ``b`` points of one latent dataset (the
  training set of ``num_data`` points);
* ``X [V, T, D]``, ``Y [V, T, ...]``: ``V`` sequences (videos, subjects), each its own latent
  dataset of ``T`` frames (``num_data`` training sequences, each of ``sequence_length`` frames).

``mask`` (1 = observed, 0 = missing) has ``Y``'s shape, or ``X``'s shape without its last
axis (one flag per point or frame, e.g. ``[V, T]`` marking the real frames of padded
sequences). With ``missing_values="nan"`` NaN entries of ``Y`` are missing as well. A batch
becomes a :class:`Batch`: ``X`` in ``gpflow.default_float()``, ``Y`` with its missing entries
set to 0 (their values, even NaN, are never read), the entry mask and the point weights
(1 for a point with something observed, 0 for one without). Static shape errors raise a
``ValueError`` at once; value checks (NaN, mask values, sizes unknown until run time) become
graph assertions that fire before any variable is updated.
"""

import numbers
import warnings
from typing import Callable, NamedTuple, Optional, Tuple

import gpflow
import numpy as np
import tensorflow as tf

from ..numerics import assert_finite, numerical_checks

__all__ = [
    "Batch",
    "observed_entries",
    "point_weights",
    "check_inputs",
    "check_arrays",
    "positive_count",
    "numeric_array",
    "numeric_tensor",
]

_ROLES = {"X": "auxiliary inputs", "Y": "observations", "mask": "1 = observed, 0 = missing", "Xnew": "query inputs"}


def _ragged(name: str, value) -> ValueError:
    lengths = [len(part) if hasattr(part, "__len__") else 1 for part in value]
    shown = ", ".join(map(str, lengths[:6])) + (", ..." if len(lengths) > 6 else "")
    return ValueError(
        f"{name} is a list of {len(lengths)} parts of different lengths ({shown}), not one array. For sequences of "
        "different lengths, pad the shorter ones to the longest T (any values) so that X is [V, T, D] and Y "
        "[V, T, ...], and pass a frame mask [V, T] as the third array (1 = real frame, 0 = padding): "
        "data = (X, Y, mask)."
    )


def numeric_array(value, name: str) -> np.ndarray:
    """``value`` (array, list, tensor) as a numpy array of numbers or booleans.

    :raises ValueError: naming ``name`` for a ragged list (with the padding and frame-mask recipe)
        or non-numeric values (strings, objects).
    """
    if isinstance(value, (list, tuple)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", np.VisibleDeprecationWarning)
                array = np.asarray(value)
        except (ValueError, np.VisibleDeprecationWarning):
            raise _ragged(name, value) from None
    else:
        array = np.asarray(value)
    if array.dtype == object and array.ndim >= 1 and any(hasattr(part, "__len__") for part in array.ravel()[:1]):
        raise _ragged(name, list(array))
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        example = repr(array.ravel()[0]) if array.size else "empty"
        raise ValueError(
            f"{name} ({_ROLES.get(name, 'data')}) must hold numbers; got an array of dtype {array.dtype} (e.g. "
            f"{example}). Convert it first, e.g. np.asarray({name}, dtype=float) for numbers read as text, or "
            "encode categories (such as object ids) as integers."
        )
    return array


def numeric_tensor(value, name: str) -> tf.Tensor:
    """:func:`numeric_array` for tensors too (a tensor is checked by its dtype)."""
    if isinstance(value, np.ndarray) and (np.issubdtype(value.dtype, np.number) or value.dtype == np.bool_):
        return tf.convert_to_tensor(value)  # numbers already
    if tf.is_tensor(value) or isinstance(value, tf.Variable):
        dtype = tf.as_dtype(value.dtype)
        if not (dtype.is_floating or dtype.is_integer or dtype == tf.bool):
            raise ValueError(
                f"{name} ({_ROLES.get(name, 'data')}) must hold numbers; got a tensor of dtype {dtype.name}."
            )
        return tf.convert_to_tensor(value)
    return tf.convert_to_tensor(numeric_array(value, name))


class Batch(NamedTuple):
    """A checked batch: ``X [..., b, D]`` (float64), ``Y [..., b, ...]`` (zero at missing entries),
    the entry ``mask`` (``Y``'s shape, float) and point ``weights [..., b]`` (float64), both
    ``None`` when nothing is missing."""

    X: tf.Tensor
    Y: tf.Tensor
    mask: Optional[tf.Tensor]
    weights: Optional[tf.Tensor]


def positive_count(value, name: str, what: str) -> int:
    """``value`` as an ``int`` >= 1; a ``ValueError`` naming ``name`` for anything else
    (``2.5``, ``0``, ``True``, ``None``) instead of silently truncating."""
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and np.isfinite(float(value)) and float(value).is_integer()
    )
    if isinstance(value, bool) or not integral or int(value) < 1:
        raise ValueError(f"{name} ({what}) must be a positive whole number; got {value!r}.")
    return int(value)


def observed_entries(X, Y, mask=None, nan_missing: bool = False) -> Tuple[tf.Tensor, Optional[tf.Tensor]]:
    r"""``(Y zero-filled, entry mask)`` of a batch, or ``(Y, None)`` when nothing can be missing.

    :param mask: ``Y``'s shape, or ``X``'s without its last axis (broadcast over ``Y``'s
        trailing axes); 1 = observed, 0 = missing (bool or numbers).
    :param nan_missing: NaN entries of ``Y`` are missing too.
    :raises ValueError: for a mask of the wrong shape.
    :raises tf.errors.InvalidArgumentError: (at run time) for mask values other than 0/1, or
        NaN/inf at observed entries.
    """
    if mask is None and not nan_missing:
        return Y, None
    Y = numeric_tensor(Y, "Y")
    if not Y.dtype.is_floating:
        Y = tf.cast(Y, tf.float32)
    num_leading = numeric_tensor(X, "X").shape.rank - 1
    observed = None
    if mask is not None:
        mask = numeric_tensor(mask, "mask")
        lead_shape = Y.shape[:num_leading]
        if (
            mask.shape.rank is not None
            and Y.shape.rank is not None
            and not (mask.shape.is_compatible_with(Y.shape) or mask.shape.is_compatible_with(lead_shape))
        ):
            raise ValueError(
                f"mask must have Y's shape {Y.shape.as_list()} (1 = observed, 0 = missing) or "
                f"{lead_shape.as_list()} (one flag per point/frame); got shape {mask.shape.as_list()}."
            )
        if mask.dtype != tf.bool:
            mask = tf.cast(mask, Y.dtype)
            if numerical_checks():
                binary = tf.debugging.Assert(
                    tf.reduce_all(tf.logical_or(tf.equal(mask, 0), tf.equal(mask, 1))),
                    ["mask must hold only 0 (missing) and 1 (observed) (or booleans)."],
                )
                with tf.control_dependencies([binary]):
                    mask = tf.identity(mask)
            observed = mask > 0
        else:
            observed = mask
        if observed.shape.rank == num_leading and Y.shape.rank != num_leading:  # per point/frame
            extra = tf.rank(Y) - num_leading
            flags = tf.reshape(observed, tf.concat([tf.shape(observed), tf.ones([extra], tf.int32)], 0))
            observed = tf.broadcast_to(flags, tf.shape(Y))
    if nan_missing:
        not_nan = tf.logical_not(tf.math.is_nan(Y))
        observed = not_nan if observed is None else tf.logical_and(observed, not_nan)
    else:
        Y = assert_finite(
            tf.where(observed, Y, tf.zeros_like(Y)),
            "Y (observations) contains NaN or inf at observed entries (mask = 1); to treat NaN as "
            "missing set its mask entry to 0 or build the model with missing_values='nan'.",
        )
    Y = tf.where(observed, Y, tf.zeros_like(Y))
    return Y, tf.cast(observed, Y.dtype)


def point_weights(mask: tf.Tensor, num_leading: int) -> tf.Tensor:
    """``[..., b]`` float64: 1 for a point (frame) with at least one observed entry, 0 otherwise."""
    axes = list(range(num_leading, mask.shape.rank))
    observed = mask > 0
    if axes:
        observed = tf.reduce_any(observed, axis=axes)
    return tf.cast(observed, gpflow.default_float())


def _with_check(tensors, check):
    with tf.control_dependencies([check]):
        return [None if t is None else tf.identity(t) for t in tensors]


def _check_size(X, Y, axis: int, size: Optional[int], bound: Optional[int], message, at_most: bool = False):
    """``X.shape[axis] == bound`` (``<= bound`` with ``at_most``), ``size`` its static value or ``None``:
    a ``ValueError`` at once when the size is static, else a run-time assertion (Keras retraces
    ``fit``'s step with relaxed shapes, ``[None, None]``, after the first call). ``message(size)``
    is the error (``size`` is ``None`` at run time)."""
    if bound is None:
        return X, Y
    if size is not None:
        if (size > bound) if at_most else (size != bound):
            raise ValueError(message(size))
        return X, Y
    if not numerical_checks():
        return X, Y
    assertion = tf.debugging.assert_less_equal if at_most else tf.debugging.assert_equal
    return _with_check([X, Y], assertion(tf.shape(X)[axis], tf.cast(bound, tf.int32), message=message(None)))


def check_inputs(
    X,
    Y,
    *,
    input_dim: Optional[int] = None,
    input_origin: Callable[[], str] = str,
    num_data: Optional[int] = None,
    sequence_length: Optional[int] = None,
    whole_sequences: Optional[str] = None,
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Cast and check a batch of either layout: ``X`` to ``gpflow.default_float()``, integer ``Y``
    to float32.

    :param input_dim: the width ``D`` the model expects (``input_origin()`` says why, in an error).
    :param num_data: at most this many points (``X [b, D]``) or sequences (``X [V, T, D]``).
    :param sequence_length: at most this many frames per sequence.
    :param whole_sequences: the model's name if its bound has no minibatch estimate over
        frames: then ``T`` must equal ``sequence_length`` when that is given.
    """
    X = tf.cast(numeric_tensor(X, "X"), gpflow.default_float())
    Y = numeric_tensor(Y, "Y")
    if not Y.dtype.is_floating:
        Y = tf.cast(Y, tf.float32)
    if X.shape.rank not in (2, 3):
        raise ValueError(
            "X must have shape [batch, input_dim] (one latent dataset) or [num_sequences, num_frames, input_dim] "
            f"(many: sequences, videos); got shape {X.shape}"
        )
    sequences = X.shape.rank == 3
    if Y.shape.rank is not None and Y.shape.rank < X.shape.rank:
        layout = "[num_sequences, num_frames, ...]" if sequences else "[batch, ...]"
        raise ValueError(f"Y must have shape {layout}; got shape {Y.shape}")
    x_shape = X.shape.as_list()  # static sizes, None where unknown
    y_shape = Y.shape.as_list() if Y.shape.rank is not None else [None] * X.shape.rank
    names = ("numbers of sequences", "numbers of frames per sequence") if sequences else ("batch sizes",)
    for axis, what in enumerate(names):
        nx, ny = x_shape[axis], y_shape[axis]
        if nx is not None and ny is not None and nx != ny:
            raise ValueError(f"X and Y have different {what}: {nx} and {ny}.")
    X, Y = _check_size(
        X,
        Y,
        -1,
        x_shape[-1],
        input_dim,
        lambda D: (
            f"X has {D} input dimensions but the model expects {input_dim} ({input_origin()})."
            if D is not None
            else f"X has the wrong number of input dimensions: the model expects {input_dim} ({input_origin()})."
        ),
    )
    if x_shape[0] == 0 or (sequences and x_shape[1] == 0):
        raise ValueError("The batch is empty (0 points): an ELBO estimate needs at least one point.")
    if x_shape[0] is None and numerical_checks():
        message = "The batch is empty (0 points): an ELBO estimate needs at least one point."
        X, Y = _with_check([X, Y], tf.debugging.assert_positive(tf.shape(X)[0], message))
    if not sequences:
        X, Y = _check_size(
            X,
            Y,
            0,
            x_shape[0],
            num_data,
            lambda b: (
                f"The batch has {b} points but num_data is {num_data}: num_data must be the size of the "
                "whole training set (at least the batch size)."
                if b is not None
                else "The batch is larger than num_data; num_data must be the training-set size."
            ),
            at_most=True,
        )
    else:
        X, Y = _check_size(
            X,
            Y,
            0,
            x_shape[0],
            num_data,
            lambda V: (
                f"The batch has {V if V is not None else 'more'} sequences but num_data is {num_data}: num_data "
                "must be the number of training sequences (at least the sequences of a batch)."
            ),
            at_most=True,
        )
        X, Y = _check_size(
            X,
            Y,
            1,
            x_shape[1],
            sequence_length if whole_sequences else None,
            lambda T: (
                f"{whole_sequences} needs whole sequences: got {T if T is not None else 'another number of'} "
                f"frames per sequence but sequence_length is {sequence_length}. Its bound is not a sum over "
                "frames, so it has no unbiased minibatch estimate; pass all frames of every sequence."
            ),
        )
        X, Y = _check_size(
            X,
            Y,
            1,
            x_shape[1],
            sequence_length,
            lambda T: (
                f"The sequences have {T if T is not None else 'more'} frames but sequence_length is "
                f"{sequence_length}: sequence_length must be the number of frames per sequence (at least the "
                "frames given)."
            ),
            at_most=True,
        )
    X = assert_finite(X, "X (auxiliary inputs) contains NaN or inf.")
    Y = assert_finite(Y, "Y (observations) contains NaN or inf.")
    return X, Y


def _report_bad_points(bad: np.ndarray, what: str, hint: str = "") -> None:
    """Raise if any entry of ``bad [N, ...]`` is set, naming the first bad point (index along axis 0)."""
    per_point = bad.reshape(len(bad), -1).any(axis=1) if bad.ndim > 1 else bad
    if per_point.any():
        first = int(np.argmax(per_point))
        count = int(per_point.sum())
        raise ValueError(
            f"{what}, first at point {first} (index along the first axis; {count} bad point(s) in all){hint}."
        )


def _check_mask(mask: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The whole ``mask`` checked (shape, NaN, 0/1 values) -> bool ``observed`` of ``Y``'s shape."""
    lead = Y.shape[: np.ndim(X) - 1]
    if mask.shape != Y.shape and mask.shape != lead:
        raise ValueError(
            f"mask must have Y's shape {list(Y.shape)} (1 = observed, 0 = missing) or {list(lead)} (one flag "
            f"per point/frame); got shape {list(mask.shape)}."
        )
    if mask.dtype != bool:
        if np.issubdtype(mask.dtype, np.floating):
            _report_bad_points(np.isnan(mask), "mask contains NaN (it must hold only 0 = missing and 1 = observed)")
        if not np.issubdtype(mask.dtype, np.number):
            raise ValueError(f"mask must be booleans or numbers 0/1; got dtype {mask.dtype}.")
        _report_bad_points(
            (mask != 0) & (mask != 1),
            "mask has values other than 0 and 1 (it must hold only 0 = missing and 1 = observed, or booleans)",
        )
    observed = mask.astype(bool)
    if observed.shape != Y.shape:  # one flag per point/frame
        observed = np.broadcast_to(observed.reshape(observed.shape + (1,) * (Y.ndim - observed.ndim)), Y.shape)
    return observed


def check_arrays(
    data,
    missing_values: Optional[str] = None,
    input_transform=None,
    target_range: Optional[Tuple[float, float]] = None,
    likelihood: str = "the likelihood",
) -> None:
    """Check a whole array dataset ``(X, Y)`` or ``(X, Y, mask)`` once, before training starts, so
    that a bad point is reported with its index before any variable changes, not as a failed
    assertion in some later batch.

    Checks: equal lengths; ``mask`` of ``Y``'s shape (or one flag per point/frame) holding only
    0 and 1 (no NaN); ``X`` finite; ``Y`` finite at observed entries (NaN allowed where the
    mask is 0, or anywhere with ``missing_values="nan"``; inf never); observed ``Y`` inside
    ``target_range`` (a Bernoulli likelihood's ``[0, 1]``); raw inputs accepted by the input
    transform (e.g. object ids in range). Warns (``UserWarning``) when nothing is observed.

    :param likelihood: the likelihood's name, for the ``target_range`` message.
    :raises ValueError: naming the array, the first bad point's index and how many are bad.
    """
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        got = f"a {type(data).__name__} of {len(data)}" if isinstance(data, (tuple, list)) else type(data).__name__
        raise TypeError(f"data must be (X, Y) or (X, Y, mask) arrays, or a tf.data.Dataset; got {got}.")
    X, Y = numeric_array(data[0], "X"), numeric_array(data[1], "Y")
    mask = numeric_array(data[2], "mask") if len(data) > 2 and data[2] is not None else None
    if len(X) == 0 or len(Y) == 0:
        raise ValueError("The training data are empty (0 points).")
    if len(X) != len(Y) or (mask is not None and len(mask) != len(Y)):
        lengths = [len(X), len(Y)] + ([] if mask is None else [len(mask)])
        raise ValueError(f"X, Y{', mask' if mask is not None else ''} have different lengths: {lengths}.")
    observed = None if mask is None else _check_mask(mask, X, Y)
    if np.issubdtype(X.dtype, np.number):
        _report_bad_points(~np.isfinite(X), "X (auxiliary inputs) contains NaN or inf")
    if np.issubdtype(Y.dtype, np.floating):
        bad, nan = np.isinf(Y), np.isnan(Y)
        if observed is not None:
            bad &= observed
            nan &= observed
        nan_missing = missing_values == "nan"
        if not nan_missing:
            bad |= nan
        hint = (
            ""
            if nan_missing
            else "; to treat NaN as missing build the model with missing_values='nan' (or pass a mask with 0 there)"
        )
        what = "Y (observations) contains " + ("inf" if nan_missing else "NaN or inf") + " at observed entries"
        _report_bad_points(bad, what, hint)
    seen = np.ones(Y.shape, bool) if observed is None else observed
    if np.issubdtype(Y.dtype, np.floating):
        seen = seen & ~np.isnan(Y)
    if not seen.any():
        warnings.warn(
            "The training data have nothing observed (the mask is all 0 or Y is all NaN): nothing is observed, "
            "so the reconstruction term is 0 and training cannot learn from these data.",
            UserWarning,
            stacklevel=3,
        )
    elif target_range is not None and np.issubdtype(Y.dtype, np.number):
        low, high = target_range
        values = Y[seen]
        if values.min() < low or values.max() > high:
            outside = np.zeros(Y.shape, bool)
            outside[seen] = (values < low) | (values > high)
            hint = (
                f"; {likelihood} takes targets in [{low:g}, {high:g}] (probabilities): scale uint8 pixels to "
                f"[0, 1] (e.g. Y / 255) or use a Gaussian likelihood"
            )
            _report_bad_points(
                outside,
                f"Y has values outside [{low:g}, {high:g}] at observed entries (min {values.min():g}, max "
                f"{values.max():g})",
                hint,
            )
    check = getattr(input_transform, "check_inputs", None)
    if check is not None:
        check(X)
