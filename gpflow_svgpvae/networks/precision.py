"""Network precision: Keras mixed precision for the encoder and decoder, the GP block in float64.

The models cast what enters a network to the network's compute dtype and what
leaves it to ``gpflow.default_float()`` before any GP algebra (site means and
variances, decoder outputs for the likelihood), so a network built under a
Keras mixed-precision policy runs in 16 bits while kernels, Cholesky factors,
the posterior and the KL stay float64. Variables of mixed-precision layers stay
float32 (Keras keeps master weights in float32), so optimisers and checkpoints
are unchanged. On CPUs with AVX512-BF16 or AMX, ``"mixed_bfloat16"`` uses
oneDNN's bfloat16 kernels; on a GPU the same switch is ``"mixed_float16"``.
"""

import contextlib
from typing import Iterator

from gpflow.keras import tf_keras

__all__ = ["PRECISIONS", "network_precision"]

#: Keras policies the networks may be built under.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16", "float64")


@contextlib.contextmanager
def network_precision(policy: str) -> Iterator[None]:
    """Build networks under the Keras dtype ``policy`` (one of :data:`PRECISIONS`); the global
    policy is restored on exit, so later networks (and other code) are unaffected.

    .. code-block:: python

        with network_precision("mixed_bfloat16"):
            encoder, decoder = conv_encoder(16), conv_decoder(16)
        model = SVGPVAE(encoder, decoder, ...)   # GP block in float64 as always

    :raises ValueError: for an unknown policy.
    """
    if policy not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}; got {policy!r}")
    previous = tf_keras.mixed_precision.global_policy()
    tf_keras.mixed_precision.set_global_policy(policy)
    try:
        yield
    finally:
        tf_keras.mixed_precision.set_global_policy(previous)
