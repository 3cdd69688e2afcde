"""Checks on what users give a model: counts, whole arrays, and the shapes and values of a batch.

Static shape errors are raised at once as ``ValueError``; value checks (NaN, mask values,
batch sizes unknown until run time) become graph assertions that fire before any
variable is updated. :class:`InputChecks` is a mixin of
:class:`~gpflow_svgpvae.models.base.LatentVariableAutoencoder`.
"""

import numbers
from typing import Optional

import gpflow
import numpy as np
import tensorflow as tf

from ..numerics import assert_finite, numerical_checks

__all__ = ["InputChecks", "positive_count"]


def positive_count(value, name: str, what: str) -> int:
    """``value`` as an ``int`` >= 1; a ``ValueError`` for anything else (``2.5``, ``0``, ``True``, ``None``)
    instead of silently truncating."""
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and np.isfinite(value) and float(value).is_integer()
    )
    if isinstance(value, bool) or not integral or int(value) < 1:
        raise ValueError(f"{name} ({what}) must be a positive whole number; got {value!r}.")
    return int(value)


def _report_bad_points(bad: np.ndarray, what: str, hint: str = "") -> None:
    """Raise if any entry of ``bad [N, ...]`` is set, naming the first bad point (index along axis 0)."""
    per_point = bad.reshape(len(bad), -1).any(axis=1) if bad.ndim > 1 else bad
    if per_point.any():
        first = int(np.argmax(per_point))
        count = int(per_point.sum())
        raise ValueError(
            f"{what}, first at point {first} (index along the first axis; {count} bad point(s) in all){hint}."
        )


def static_dim(tensor, axis):
    dim = tensor.shape[axis] if tensor.shape.rank is not None else None
    return None if dim is None else int(dim)


class InputChecks:
    """Input checks shared by every model (needs ``num_data``, ``missing_values`` and the model's
    :attr:`input_dim`)."""

    def _check_batch(self, X: Optional[tf.Tensor], Y: Optional[tf.Tensor], num_data=None):
        """Static shape checks raise ``ValueError`` at once; value checks become
        graph assertions that fire before any variable is updated."""
        dtype = gpflow.default_float()
        if X is not None:
            X = tf.cast(tf.convert_to_tensor(X), dtype)
            if X.shape.rank != 2:
                raise ValueError(f"X must have shape [batch, input_dim]; got shape {X.shape}")
            X = self._check_input_width(X)
            X = assert_finite(X, "X (auxiliary inputs) contains NaN or inf.")
        if Y is not None:
            Y = tf.convert_to_tensor(Y)
            if Y.shape.rank is not None and Y.shape.rank < 2:
                raise ValueError(f"Y must have shape [batch, ...]; got shape {Y.shape}")
            Y = assert_finite(
                tf.cast(Y, tf.float32) if not Y.dtype.is_floating else Y,
                "Y (observations) contains NaN or inf.",
            )
        if X is not None and Y is not None:
            nx, ny = static_dim(X, 0), static_dim(Y, 0)
            if nx is not None and ny is not None and nx != ny:
                raise ValueError(f"X and Y have different batch sizes: {nx} and {ny}.")
        n = num_data if num_data is not None else self.num_data
        batch = X if X is not None else Y
        b = static_dim(batch, 0)
        if b == 0:
            raise ValueError("The batch is empty (0 points): an ELBO estimate needs at least one point.")
        if b is None and numerical_checks():
            nonempty = tf.debugging.assert_positive(
                tf.shape(batch)[0], "The batch is empty (0 points): an ELBO estimate needs at least one point."
            )
            with tf.control_dependencies([nonempty]):
                X = tf.identity(X) if X is not None else X
                Y = tf.identity(Y) if Y is not None else Y
        if b is not None and b > n:
            raise ValueError(
                f"The batch has {b} points but num_data is {n}: num_data must be the size of the "
                "whole training set (at least the batch size)."
            )
        if b is None and numerical_checks() and np.isfinite(n):
            check = tf.debugging.assert_less_equal(
                tf.shape(batch)[0],
                tf.cast(n, tf.int32),
                "The batch is larger than num_data; num_data must be the training-set size.",
            )
            with tf.control_dependencies([check]):
                X = tf.identity(X) if X is not None else X
                Y = tf.identity(Y) if Y is not None else Y
        return X, Y

    def check_arrays(self, data) -> None:
        """Check a whole array dataset ``(X, Y)`` or ``(X, Y, mask)`` once, before training starts
        (``train`` and the Keras view call this), so that a bad point is reported with its index
        before any variable changes, not as a failed assertion in some later batch.

        Checks: equal lengths; ``X`` finite; ``Y`` finite at observed entries (NaN allowed where
        the mask is 0, or anywhere with ``missing_values="nan"``; inf never); raw inputs accepted
        by the input transform (e.g. object ids in range).

        :raises ValueError: naming the array, the first bad point's index and how many are bad.
        """
        X, Y = np.asarray(data[0]), np.asarray(data[1])
        mask = np.asarray(data[2]) if len(data) > 2 and data[2] is not None else None
        if len(X) == 0 or len(Y) == 0:
            raise ValueError("The training data are empty (0 points).")
        if len(X) != len(Y) or (mask is not None and len(mask) != len(Y)):
            lengths = [len(X), len(Y)] + ([] if mask is None else [len(mask)])
            raise ValueError(f"X, Y{', mask' if mask is not None else ''} have different lengths: {lengths}.")
        if np.issubdtype(X.dtype, np.number):
            _report_bad_points(~np.isfinite(X), "X (auxiliary inputs) contains NaN or inf")
        if np.issubdtype(Y.dtype, np.floating):
            bad = np.isinf(Y)
            nan = np.isnan(Y)
            if mask is not None:
                observed = mask.astype(bool)
                if observed.shape != Y.shape:  # one flag per point/frame
                    observed = observed.reshape(observed.shape + (1,) * (Y.ndim - observed.ndim))
                bad &= observed
                nan &= observed
            if self.missing_values != "nan":
                bad |= nan
            hint = (
                ""
                if self.missing_values == "nan"
                else "; to treat NaN as missing build the model with missing_values='nan' (or pass a mask with 0 there)"
            )
            _report_bad_points(
                bad,
                "Y (observations) contains "
                + ("inf" if self.missing_values == "nan" else "NaN or inf")
                + " at observed entries",
                hint,
            )
        check_inputs = getattr(getattr(self, "input_transform", None), "check_inputs", None)
        if check_inputs is not None:
            check_inputs(X)

    def _check_input_width(self, X: tf.Tensor) -> tf.Tensor:
        """``X [..., D]`` against :attr:`input_dim`: a ``ValueError`` now when the width is static,
        else a run-time assertion. Keras retraces ``fit``'s step with relaxed shapes (``[None, None]``)
        after the first call, so a static check alone would be skipped there."""
        expected = self.input_dim
        if expected is None:
            return X
        origin = self._input_dim_origin()
        width = static_dim(X, -1)
        if width is not None:
            if width != expected:
                raise ValueError(f"X has {width} input dimensions but the model expects {expected} ({origin}).")
            return X
        if not numerical_checks():
            return X
        check = tf.debugging.assert_equal(
            tf.shape(X)[-1],
            expected,
            message=f"X has the wrong number of input dimensions: the model expects {expected} ({origin}).",
        )
        with tf.control_dependencies([check]):
            return tf.identity(X)

    def _check_sequences(self, X, Y, full_sequences: bool = False, num_data=None):
        """Cast and check a batch of many latent datasets (sequences, videos):
        ``X [V, T, D]``, ``Y [V, T, ...]``; ``T <= num_data`` (``== num_data`` if
        ``full_sequences``; ``num_data=np.inf``: any ``T``, for conditioning). Returns ``(X float64, Y)``."""
        limit = self.num_data if num_data is None else num_data
        dtype = gpflow.default_float()
        X = tf.cast(tf.convert_to_tensor(X), dtype)
        Y = tf.convert_to_tensor(Y)
        if not Y.dtype.is_floating:
            Y = tf.cast(Y, tf.float32)
        if X.shape.rank != 3:
            raise ValueError(
                f"X must have shape [num_videos, num_frames, input_dim] (one row of inputs per frame); got {X.shape}"
            )
        if Y.shape.rank is not None and Y.shape.rank < 3:
            raise ValueError(f"Y must have shape [num_videos, num_frames, ...] (frames); got {Y.shape}")
        for axis, what in ((0, "videos"), (1, "frames per video")):
            nx, ny = static_dim(X, axis), static_dim(Y, axis)
            if nx is not None and ny is not None and nx != ny:
                raise ValueError(f"X and Y have different numbers of {what}: {nx} and {ny}.")
        X = self._check_input_width(X)
        T = static_dim(X, 1)
        if T is not None:
            if full_sequences and T != self.num_data:
                raise ValueError(self._full_video_message(T))
            if T > limit:
                raise ValueError(
                    f"The videos have {T} frames but num_data is {limit}: num_data must be the number "
                    "of frames per video (at least the number of frames given)."
                )
        elif numerical_checks() and (full_sequences or np.isfinite(limit)):
            T_dyn = tf.shape(X)[1]
            check = (
                tf.debugging.assert_equal(T_dyn, self.num_data, self._full_video_message("a different number of"))
                if full_sequences
                else tf.debugging.assert_less_equal(
                    T_dyn, tf.cast(limit, T_dyn.dtype), "The videos have more frames than num_data (frames per video)."
                )
            )
            with tf.control_dependencies([check]):
                X = tf.identity(X)
        X = assert_finite(X, "X (auxiliary inputs) contains NaN or inf.")
        Y = assert_finite(Y, "Y (frames) contains NaN or inf.")
        return X, Y

    def _full_video_message(self, T) -> str:
        return (
            f"{type(self).__name__} needs whole videos: got {T} frames per video but num_data (frames per video) "
            f"is {self.num_data}. Its bound is not a sum over frames, so it has no unbiased minibatch "
            "estimate; pass all frames of every video (num_data = frames per video)."
        )

    def _input_dim_origin(self) -> str:
        return "the width of its auxiliary inputs"

    @property
    def input_dim(self) -> Optional[int]:
        """Width of the auxiliary inputs ``X`` expected by the prior (None: unknown)."""
        return None
