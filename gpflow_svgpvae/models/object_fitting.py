r"""Placing new objects in a trained GP-LVM table by fitting their vectors to context images.

A model with an :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table learns one
vector per training object. An object never seen in training has no learned
row; given some images of it (its *context*, raw inputs ``[views..., id]``) its
vector is fitted with everything else frozen:

.. math::

    w^\star = \arg\max_w \sum_{i \in \text{context}}
        E_{q(z_i \mid [v_i,\, w])}\big[\log p(y_i \mid z_i)\big],

where :math:`q(z_i \mid x)` is the model's latent predictive at the GP input
:math:`x = [v_i, w]` (Deep SVIGP: from its free :math:`q(u)`; SVGP-VAE: from its
amortised posterior conditioned on the training data) and :math:`p(y \mid z)` the
decoder. The expectation is the model's own Monte Carlo reconstruction term, the
optimiser Adam from the current (or given) rows; only the rows of the new
objects change.

``objective="decoded_mean"`` replaces the expectation by :math:`\log p(y_i \mid \mu(x))`, the
likelihood of the decoded predictive *mean*. The expectation's bound is looser where the
predictive variance is larger, so it pulls the vectors towards inputs of small prior
variance (with a linear kernel, towards the origin: a copy of a training object gets a
shrunken vector); the decoded mean has no such pull and matches what a prediction decodes.
"""

import contextlib
from typing import Callable, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from ..auxiliary import ObjectVectors
from ..tracing import not_autographed

__all__ = ["fit_object_vectors"]

# The objectives fit_object_vectors can fit new object vectors with.
_OBJECTIVES = ("expected_log_likelihood", "decoded_mean")

# predict_latents(X_gp [n, D], *latent_args) -> (mean [n, L], var [n, L])
_LatentPredictor = Callable[..., tuple]


def fit_object_vectors(
    model,
    predict_latents: _LatentPredictor,
    latent_args: Sequence[tf.Tensor],
    X_context,
    Y_context,
    object_ids,
    steps: int,
    learning_rate: float,
    initial_vectors: Optional[np.ndarray] = None,
    objective: str = "expected_log_likelihood",
    draw_seed: Optional[int] = None,
) -> Optional[float]:
    """Fit the rows ``object_ids`` of ``model.input_transform`` to the context images (module docstring).

    :param predict_latents: ``predict_latents(X_gp, *latent_args)``, the frozen latent predictive
        at mapped inputs ``[views..., object vector]``; compiled once per model, number of rows
        and learning rate, so ``latent_args`` (tensors of fixed shapes) may change between calls.
    :param X_context: raw inputs ``[n, D]`` with the object id in the last column; every id
        must be one of ``object_ids``.
    :param Y_context: the context images ``[n, ...]``.
    :param object_ids: the new objects (distinct ids of the table).
    :param initial_vectors: ``[len(object_ids), Q]`` starting rows; default: the current rows.
    :param objective: ``"expected_log_likelihood"`` or ``"decoded_mean"`` (module docstring).
    :param draw_seed: ``None``: every step makes a fresh Monte Carlo draw from the model's training
        stream (advancing its draw counter); an integer: one fixed draw keyed by the seed for all
        steps, and the model's training stream is left alone (fitting during evaluation then
        cannot change the training that follows).
    :return: the last step's loss (minus the reconstruction term), or None for ``steps = 0``.
    """
    table = model.input_transform
    if not isinstance(table, ObjectVectors):
        raise ValueError("fit_object_vectors needs input_transform=ObjectVectors(...) (a GP-LVM table).")
    X_context = np.asarray(X_context, dtype=np.float64)
    if X_context.ndim != 2 or len(X_context) != len(Y_context) or len(X_context) == 0:
        raise ValueError(
            f"X_context must be [n, D] with n = len(Y_context) > 0; got shapes "
            f"{X_context.shape} and {np.shape(Y_context)}."
        )
    if table.id_column not in (-1, X_context.shape[1] - 1):
        raise ValueError("fit_object_vectors expects the object id in the last column of X.")
    ids = np.asarray(object_ids, dtype=np.int64).reshape(-1)
    if len(np.unique(ids)) != len(ids) or ids.min(initial=0) < 0 or ids.max(initial=0) >= table.num_objects:
        raise ValueError(f"object_ids must be distinct ids in [0, {table.num_objects}); got {ids.tolist()}.")
    raw_ids = np.round(X_context[:, -1]).astype(np.int64)
    unknown = np.setdiff1d(raw_ids, ids)
    if unknown.size:
        raise ValueError(f"context inputs have object ids not in object_ids: {unknown[:10].tolist()}")
    if objective not in _OBJECTIVES:
        raise ValueError(f"objective must be one of {_OBJECTIVES}; got {objective!r}")
    if int(steps) < 0 or not learning_rate > 0:
        raise ValueError(f"need steps >= 0 and learning_rate > 0; got {steps}, {learning_rate}.")
    lookup = tf.constant(np.searchsorted(np.sort(ids), raw_ids))
    order = np.argsort(ids)  # rows of the fitter are in sorted-id order
    ids = ids[order]
    vectors = table.vectors
    if initial_vectors is None:
        start = tf.gather(tf.convert_to_tensor(vectors), ids)
    else:
        initial_vectors = np.asarray(initial_vectors, dtype=np.float64)
        if initial_vectors.shape != (len(ids), table.Q):
            raise ValueError(f"initial_vectors must have shape {(len(ids), table.Q)}; got {initial_vectors.shape}.")
        start = tf.constant(initial_vectors[order], gpflow.default_float())
    views = tf.constant(X_context[:, :-1], gpflow.default_float())
    Y_context = tf.constant(np.asarray(Y_context))
    rows, optimizer, step = _fitter(model, predict_latents, len(ids), float(learning_rate), objective, draw_seed)
    rows.assign(start)
    for v in optimizer.variables():  # fresh Adam state for every call
        v.assign(tf.zeros_like(v))
    loss = None
    with contextlib.nullcontext() if draw_seed is None else model._fixed_draw(draw_seed):
        for _ in range(int(steps)):
            loss = step(views, lookup, Y_context, *latent_args)
    vectors.assign(tf.tensor_scatter_nd_update(tf.convert_to_tensor(vectors), ids[:, None], rows))
    return None if loss is None else float(loss.numpy())


def _fitter(
    model,
    predict_latents: _LatentPredictor,
    num_rows: int,
    learning_rate: float,
    objective: str,
    draw_seed: Optional[int],
):
    """(rows variable, optimiser, compiled step), built once per model, size, learning rate, objective
    and draw (the draw is fixed when the step is traced)."""
    cache = model.__dict__.setdefault("_object_fitters", {})
    key = (num_rows, learning_rate, objective, draw_seed)
    if key not in cache:
        rows = tf.Variable(tf.zeros([num_rows, model.input_transform.Q], gpflow.default_float()), trainable=False)
        optimizer = tf_keras.optimizers.Adam(learning_rate)
        optimizer.build([rows])

        @tf.function
        @not_autographed
        def step(views, lookup, Y, *latent_args):
            with tf.GradientTape() as tape:
                tape.watch(rows)
                X_gp = tf.concat([views, tf.gather(rows, lookup)], axis=-1)  # [n, D - 1 + Q]
                mean, var = predict_latents(X_gp, *latent_args)  # [n, L]
                if objective == "decoded_mean":  # every Monte Carlo sample is the mean
                    var = tf.zeros_like(var)
                condition = model.decoder_condition(X_gp)  # [n, C] or None
                reconstruction, _ = model.reconstruct(Y, mean, var, training=False, condition=condition)
                loss = -reconstruction
            optimizer.apply_gradients([(tape.gradient(loss, rows), rows)])
            return loss

        cache[key] = (rows, optimizer, step)
    return cache[key]
