"""Missing entries of the observations: what every autoencoder does with ``(X, Y, mask)``
and with NaN in ``Y`` (models that take missing data set :attr:`MissingData.supports_missing`)."""

from typing import Optional

import gpflow
import tensorflow as tf

from ..numerics import assert_finite, numerical_checks

__all__ = ["MissingData"]


class MissingData:
    """The missing-data rules shared by the models: constructor options, the encoder's view of
    masked observations, and the normalisation of a batch's mask."""

    #: Whether :meth:`objective_terms` accepts ``data = (X, Y, mask)`` (missing entries).
    supports_missing = False

    def _set_missing_options(self, missing_values: Optional[str], encoder_sees_mask: bool):
        """Check and store the constructor options ``missing_values`` (``None``: NaN in ``Y`` is an
        error; ``"nan"``: NaN entries are missing) and ``encoder_sees_mask``."""
        if missing_values not in (None, "nan"):
            raise ValueError(f"missing_values must be None or 'nan'; got {missing_values!r}")
        if (missing_values is not None or encoder_sees_mask) and not self.supports_missing:
            raise TypeError(f"{type(self).__name__} does not take missing data (missing_values, encoder_sees_mask).")
        self.missing_values = missing_values
        self.encoder_sees_mask = bool(encoder_sees_mask)

    def encoder_inputs(self, Y, mask=None):
        """What the encoder sees: ``Y`` (zero-filled at missing entries), with
        ``encoder_sees_mask`` concatenated with the mask (ones if ``None``) along the last axis."""
        if not self.encoder_sees_mask:
            return Y
        mask = tf.ones_like(Y) if mask is None else tf.cast(mask, Y.dtype)
        return tf.concat([Y, mask], axis=-1)

    def observed(self, data):
        """``data = (X, Y)`` or ``(X, Y, mask)`` -> ``(X, Y zero-filled, entry mask or None)``:
        the missing-data rules of :meth:`_observed` (``None``: nothing is missing
        and no mask was given)."""
        X, Y, mask = self._split_data(data)
        Y, mask = self._observed(X, Y, mask, nan_missing=self.missing_values == "nan")
        return X, Y, mask

    def _split_data(self, data):
        """``(X, Y)`` or ``(X, Y, mask)`` -> ``(X, Y, mask or None)``."""
        if isinstance(data, (tuple, list)) and len(data) in (2, 3):
            if len(data) == 3 and not self.supports_missing:
                raise TypeError(
                    f"{type(self).__name__} does not take a mask of missing entries: pass data = (X, Y) "
                    "(SVGPVAE takes data = (X, Y, mask))."
                )
            return (tuple(data) + (None,))[:3]
        raise TypeError(f"data must be a pair (X, Y) or a triple (X, Y, mask); got {type(data).__name__}")

    def _observed(self, X, Y, mask=None, nan_missing: bool = False):
        r"""Normalise the missing entries of a batch.

        ``mask`` (1 = observed, 0 = missing; bool or numbers) has ``Y``'s shape, or the
        leading shape of ``X`` without its last axis (one flag per point/frame, e.g.
        ``[V, T]`` marking the real frames of padded sequences), broadcast to ``Y``'s shape.
        ``nan_missing``: NaN entries of ``Y`` are missing too. Without a mask and without
        ``nan_missing`` nothing changes (``(Y, None)``). Otherwise returns ``Y`` with the
        missing entries set to 0 (their values, even NaN, are never read) and the entry
        mask ``[Y's shape]`` in ``Y``'s float dtype. Observed entries must be finite.

        :raises ValueError: for a mask of the wrong shape.
        :raises tf.errors.InvalidArgumentError: (at run time) for mask values other than 0/1.
        """
        if mask is None and not nan_missing:
            return Y, None
        Y = tf.convert_to_tensor(Y)
        if not Y.dtype.is_floating:
            Y = tf.cast(Y, tf.float32)
        num_leading = tf.convert_to_tensor(X).shape.rank - 1
        observed = None
        if mask is not None:
            mask = tf.convert_to_tensor(mask)
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

    @staticmethod
    def point_weights(mask: tf.Tensor, num_leading: int) -> tf.Tensor:
        """``[..., b]`` float64: 1 for a point (frame) with at least one observed entry, 0 otherwise."""
        axes = list(range(num_leading, mask.shape.rank))
        observed = mask > 0
        if axes:
            observed = tf.reduce_any(observed, axis=axes)
        return tf.cast(observed, gpflow.default_float())
