"""Numerical guards shared by the GP algebra.

A failed Cholesky in TensorFlow (CPU and GPU alike) does not raise: it fills the
factor with NaNs, which then propagate silently into the loss. Every Cholesky
in this package goes through :func:`cholesky`, which turns that into an error
naming the matrix and the usual fix. Network outputs are checked where they are made, unless a
training step records them (:func:`recording_network_outputs`) to check them with its gradients.
"""

import contextlib
import threading
from typing import List, Optional, Tuple

import tensorflow as tf

__all__ = [
    "cholesky",
    "numerical_checks",
    "set_numerical_checks",
    "recording_network_outputs",
    "record_network_output",
]

_NUMERICAL_CHECKS = True


def numerical_checks() -> bool:
    """Whether runtime finiteness assertions are inserted into the graph."""
    return _NUMERICAL_CHECKS


def set_numerical_checks(enabled: bool) -> None:
    """Switch runtime assertions on or off.

    XLA cannot compile them, so the compiled training loop switches them off while it traces
    an XLA step; the step's guard (no update unless all is finite) still runs.
    """
    global _NUMERICAL_CHECKS
    _NUMERICAL_CHECKS = bool(enabled)


def cholesky(matrix: tf.Tensor, name: str, hint: Optional[str] = None) -> tf.Tensor:
    """Lower Cholesky factor of ``matrix`` that fails loudly.

    :param matrix: symmetric positive-definite matrix (or batch of them).
    :param name: what the matrix is, used in the error message.
    :param hint: how to fix a failure (defaults to increasing the jitter).
    :raises tf.errors.InvalidArgumentError: (at run time) if the factor is not
        finite, i.e. the matrix is not numerically positive definite.
    """
    chol = tf.linalg.cholesky(matrix)
    if _NUMERICAL_CHECKS:
        hint = hint or (
            "Increase the model's `jitter` (e.g. 1e-4), spread out or remove duplicate "
            "inducing inputs, or check the kernel hyperparameters for extreme values."
        )
        chol = tf.debugging.assert_all_finite(
            chol,
            f"Cholesky decomposition of {name} failed: the matrix is not numerically "
            f"positive definite (or contains NaN/inf). {hint}",
        )
    return chol


def assert_finite(tensor: tf.Tensor, message: str) -> tf.Tensor:
    """``tensor``, with a run-time check that it has no NaN/inf (when checks are on)."""
    if not _NUMERICAL_CHECKS:
        return tensor
    return tf.debugging.assert_all_finite(tensor, message)


def assert_positive(tensor: tf.Tensor, message: str) -> tf.Tensor:
    """``tensor``, with a run-time check that all entries are > 0 (when checks are on)."""
    if not _NUMERICAL_CHECKS:
        return tensor
    check = tf.debugging.assert_positive(tensor, message=message)
    with tf.control_dependencies([check]):
        return tf.identity(tensor)


# Per thread: each replica of a tf.distribute step traces in its own thread.
_RECORDING = threading.local()


@contextlib.contextmanager
def recording_network_outputs():
    """Collect ``(role, tensor)`` for every network output of the model code run inside
    (``"encoder means"``, ``"encoder variances"``, ``"decoder output"``), in this thread.

    The training step checks them with the loss and the gradients and, while it records,
    :meth:`~gpflow_svgpvae.models.LatentVariableAutoencoder.decode` leaves its finiteness check to the step (which then
    makes no update and restores what the forward pass wrote, such as the draw counter).
    """
    outputs: List[Tuple[str, tf.Tensor]] = []
    stack = _RECORDING.__dict__.setdefault("stack", [])
    stack.append(outputs)
    try:
        yield outputs
    finally:
        stack.pop()


def record_network_output(role: str, tensor: tf.Tensor) -> bool:
    """Record ``tensor`` if a :func:`recording_network_outputs` block is open; whether it was."""
    stack = _RECORDING.__dict__.get("stack")
    if stack:
        stack[-1].append((role, tensor))
    return bool(stack)
