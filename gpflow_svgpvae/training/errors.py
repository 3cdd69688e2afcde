"""Errors from inside a compiled training step, restated with the package's message first.

An error raised in a ``tf.function`` reaches the user wrapped by TensorFlow and
Keras: a failed assertion arrives as "Graph execution error: Detected at node
... defined at (most recent call last): ..." followed by ~20 lines of frames,
and a ``ValueError`` raised while tracing as "in user code: File ...". The
message the package wrote comes last. :func:`errors_first` re-raises such errors
(same type) with that message first, where in the run it happened (epoch and
batch), and TensorFlow's full report after it.
"""

import contextlib
import re
from typing import Callable, Optional

import tensorflow as tf

__all__ = ["errors_first"]

# The message is the first bracketed item; later items ("[Condition ...]", "[x ...]") are details.
_ASSERTION = re.compile(r"assertion failed: \[(?P<message>.*?)\](?= \[|\s*$)", re.S)
_CHECK_NUMERICS = re.compile(r"(?P<message>.*) : Tensor had (?P<what>NaN|Inf|NaN and Inf|Inf and NaN) values", re.S)
_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_NODE = re.compile(r"\s*\[\[\{\{node [^}]*\}\}\]\].*$", re.S)
_OP = re.compile(r"\s*\[Op:[^\]]*\]\s*$")
# Several replicas (tf.distribute) fail together: "2 root error(s) found. (0) INVALID_ARGUMENT: ... (1) ...".
_ROOT_ERRORS = re.compile(
    r"^\s*\d+ root error\(s\) found\.\s*\(0\) [A-Z_]+:\s*(?P<first>.*?)(?=\n\s*\(1\) |\n\d+ successful operations|\Z)",
    re.S,
)


def _without_frames(text: str) -> str:
    """Drop TensorFlow's "Graph execution error / Detected at node / File ..." preamble."""
    if "Detected at node" not in text:
        return text
    lines = text.splitlines()
    last_frame = max(
        i for i, line in enumerate(lines) if line.startswith("  File ") or line.startswith("Detected at node")
    )
    rest = [line for line in lines[last_frame + 1 :] if line.strip()]
    return "\n".join(rest)


def _core_message(error: BaseException) -> Optional[str]:
    """The message at the heart of a wrapped TensorFlow/Keras error, or ``None`` if there is no
    wrapping to remove (the error's message is already its own)."""
    text = error.message if isinstance(error, tf.errors.OpError) else str(error)
    if isinstance(error, tf.errors.OpError):
        core = _without_frames(text)
        first = _ROOT_ERRORS.match(core)
        if first:  # the first replica's error (the others report the same check)
            core = first.group("first")
        core = _OP.sub("", _NODE.sub("", _FUNCTION_NODE.sub("", core))).strip()
        match = _ASSERTION.match(core)
        if match:
            core = match.group("message").strip()
        match = _CHECK_NUMERICS.match(core)
        if match:
            core = f"{match.group('message').strip()} (the tensor had {match.group('what')} values)"
        return core if core and core != text else None
    if text.lstrip().startswith("in user code:"):
        name = type(error).__name__
        index = text.rfind(f"{name}: ")
        if index >= 0:
            lines = text[index + len(name) + 2 :].splitlines()
            return "\n".join(line.strip() for line in lines).strip() or None
    return None


def _restate(error: BaseException, message: str) -> BaseException:
    if isinstance(error, tf.errors.OpError):
        try:
            return type(error)(error.node_def, error.op, message)
        except TypeError:  # subclasses that take other arguments
            return tf.errors.OpError(error.node_def, error.op, message, error.error_code)
    try:
        return type(error)(message)
    except Exception:  # an exception type we cannot rebuild: keep the original
        return error


@contextlib.contextmanager
def errors_first(where: Optional[Callable[[], str]] = None):
    """Re-raise wrapped errors from a training/evaluation run with the package's message first.

    :param where: called when an error arrives; returns where in the run it happened
        (e.g. ``"in epoch 1, batch 8"``), added after the message.
    """
    try:
        yield
    except (tf.errors.OpError, ValueError, TypeError) as error:
        core = _core_message(error)
        if core is None:
            raise
        place = where() if where is not None else ""
        original = error.message if isinstance(error, tf.errors.OpError) else str(error)
        # The package's checks feed the loss, and every update waits for the loss.
        untouched = (
            " no variable was updated from this batch;" if isinstance(error, tf.errors.InvalidArgumentError) else ""
        )
        message = (
            f"{core}\n\n(Raised {place + ', ' if place else ''}inside the compiled step;{untouched} "
            f"TensorFlow's report follows.)\n{original}"
        )
        restated = _restate(error, message)
        if restated is error:
            raise
        raise restated from None
