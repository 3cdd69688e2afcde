r"""Helpers for ``tf.distribute`` (MirroredStrategy, MultiWorkerMirroredStrategy).

The SVGP-VAE posterior depends on the batch only through sums over data
points (:func:`gpflow_svgpvae.amortized.whitened_statistics`). Summing those
statistics across replicas before factorising gives exactly the posterior of
the *global* batch, so training on :math:`R` replicas equals training on one
device with the global batch (not an average of per-replica posteriors).

Outside a replica context, or with one replica, every helper is the identity.
"""

from typing import Sequence, Tuple

import tensorflow as tf

__all__ = ["num_replicas", "sum_across_replicas", "sum_across_replicas_by_dtype", "batch_offset_and_total"]


def num_replicas() -> int:
    """Number of replicas in sync (1 outside a distributed step)."""
    ctx = tf.distribute.get_replica_context()
    return 1 if ctx is None else int(ctx.num_replicas_in_sync)


def sum_across_replicas(values: Sequence[tf.Tensor]) -> Tuple[tf.Tensor, ...]:
    """All-reduce (sum) each tensor across replicas; differentiable."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return tuple(values)
    return tuple(ctx.all_reduce(tf.distribute.ReduceOp.SUM, list(values)))


def sum_across_replicas_by_dtype(values: Sequence[tf.Tensor]) -> Tuple[tf.Tensor, ...]:
    """:func:`sum_across_replicas` with one all-reduce per dtype (TensorFlow packs
    a batched all-reduce into one concatenation, which needs a single dtype)."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return tuple(values)
    out = list(values)
    for dtype in {v.dtype for v in values}:
        idx = [i for i, v in enumerate(values) if v.dtype == dtype]
        reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [values[i] for i in idx])
        for i, r in zip(idx, reduced):
            out[i] = r
    return tuple(out)


def batch_offset_and_total(local_size: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """Where this replica's rows start in the global batch, and the global batch size.

    Replica :math:`r` holds rows ``offset : offset + local_size`` of the global
    batch (replicas take consecutive slices in replica order).
    """
    local_size = tf.cast(local_size, tf.int32)
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return tf.constant(0, tf.int32), local_size
    sizes = ctx.all_gather(tf.reshape(local_size, [1]), axis=0)  # [R]
    replica = ctx.replica_id_in_sync_group
    offset = tf.reduce_sum(tf.where(tf.range(tf.shape(sizes)[0]) < replica, sizes, tf.zeros_like(sizes)))
    return offset, tf.reduce_sum(sizes)
