r"""The one training step both training paths (compiled loop and Keras ``fit``) run.

The step is guarded: it is applied only if the loss, the logged terms, every network output
and every gradient are finite,

.. math::

    \text{ok} = \bigwedge_t \operatorname{all}(\operatorname{isfinite}(t))
    \wedge \bigwedge_g \operatorname{isfinite}\big(\textstyle\sum g^2\big),

(a gradient whose square overflows would make Adam's second moment inf), one reduction per
tensor and one ``tf.cond`` around the update, with no read-back to the host. A step that is
not ok changes nothing: optimiser and objective state stay, and what the forward pass wrote
(draw counter, GECO's moving average, normalisation statistics) is written back. It then
raises (graph mode) or reports its flags (XLA; the compiled loop reads them), naming what
went non-finite.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf

from .. import distribute
from ..numerics import recording_network_outputs
from ..tracing import not_autographed

__all__ = ["training_step", "evaluation_terms", "LOG_KEYS", "FINITE_KEY", "non_finite_message"]

#: The keys every training and evaluation step logs (objectives add their own ``log_keys``).
LOG_KEYS = ("loss", "elbo", "reconstruction", "kl")

#: Key of the step's finiteness flags (one per entry of the model's check labels) in the logs of
#: :func:`training_step`; the training paths remove it before logging.
FINITE_KEY = "_finite"

_PREFIX = (
    "The training step made no update (variables and optimiser state unchanged): non-finite (NaN, inf, or for "
    "gradients a squared norm beyond the float range) "
)
_HINT = (
    ". A NaN or inf network output points at its weights or its inputs; finite outputs with "
    "non-finite terms or gradients usually mean values too large for float32, e.g. an entry of Y "
    "far beyond the others (check the scale of the data), or a learning rate so high that training diverged."
)


def _logs(loss, terms, extra, also: Sequence[tf.Tensor] = ()) -> Tuple[Dict[str, tf.Tensor], Tuple[tf.Tensor, ...]]:
    r"""The logged numbers. ``elbo``, ``reconstruction`` and ``kl`` are on one scale, the whole
    training set's (GPflow's units): ``reconstruction`` is :math:`\tfrac{N}{b}\sum_{i\in b}
    E_q[\log p(y_i\mid z_i)]`, so ``elbo = reconstruction - kl``. ``loss`` is what the optimiser
    minimises: ``-elbo`` for :class:`~gpflow_svgpvae.training.ELBO` (with ``beta``: ``-(reconstruction
    - beta kl)``), GECO's Lagrangian for :class:`~gpflow_svgpvae.training.GECO`.

    ``also``: more float64 tensors summed across replicas in the same all-reduce (returned second)."""
    # Each replica's loss, bound and reconstruction are its shares; the logged ones are global.
    shares = [
        tf.stop_gradient(loss),
        tf.stop_gradient(terms.elbo()),
        tf.stop_gradient(terms.scale * terms.reconstruction),
    ] + list(also)
    summed = distribute.sum_across_replicas(shares)
    loss, elbo, reconstruction = summed[:3]
    logs = {"loss": loss, "elbo": elbo, "reconstruction": reconstruction, "kl": terms.kl}
    logs.update(extra)
    return logs, tuple(summed[3:])


def _split_batch(model, batch):
    """``(X, Y)`` or ``(X, Y, mask)`` -> (the data tuple for the model, ``Y``)."""
    if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
        got = (
            f"a {type(batch).__name__} of {len(batch)}"
            if isinstance(batch, (tuple, list))
            else f"a {type(batch).__name__}"
        )
        raise TypeError(f"A batch must be (X, Y) or (X, Y, mask); got {got}.")
    if len(batch) == 3 and not getattr(model, "supports_missing", False):
        raise TypeError(
            f"{type(model).__name__} does not take a mask of missing entries: batches must be (X, Y) "
            "(SVGPVAE takes (X, Y, mask))."
        )
    return tuple(batch), batch[1]


def _all_finite(tensor) -> tf.Tensor:
    return tf.reduce_all(tf.math.is_finite(tensor))


def _finite_norm(gradient) -> tf.Tensor:
    """Whether ``sum(g^2)`` is finite: no NaN or inf in ``g``, and no entry so large that its square
    overflows (in float32 above ~1.8e19, where Adam's second moment would become inf and then NaN)."""
    if isinstance(gradient, tf.IndexedSlices):
        gradient = gradient.values
    return tf.math.is_finite(tf.nn.l2_loss(gradient))


def _gradient_labels(model, variables) -> List[str]:
    """What each variable is, in the model's terms: "the encoder", "the decoder" or its parameter path."""
    owner: Dict[object, str] = {}
    for role in ("encoder", "decoder"):
        network = getattr(model, role, None)
        for v in getattr(network, "trainable_variables", ()):
            owner.setdefault(v.ref(), f"the {role}")
    for path, parameter in gpflow.utilities.parameter_dict(model).items():
        variable = getattr(parameter, "unconstrained_variable", parameter)
        if isinstance(variable, tf.Variable):
            owner.setdefault(variable.ref(), path.lstrip("."))
    return [owner.get(v.ref(), v.name) for v in variables]


def _forward_state(model, objective) -> List[tf.Variable]:
    """The non-trainable variables of the model and the objective: what a forward pass may write
    (draw counter, GECO's moving average, normalisation statistics) and a skipped step restores."""
    state, seen = [], set()
    for module in (model, objective):
        for v in getattr(module, "variables", ()):
            if not v.trainable and v.ref() not in seen:
                seen.add(v.ref())
                state.append(v)
    return state


def _check_labels(model) -> Tuple[str, ...]:
    """The names of the flags under :data:`FINITE_KEY` of ``model``'s last traced training step."""
    return model.__dict__.get("_step_checks", ())


def non_finite_message(model, finite) -> str:
    """The guard's message for the flags ``finite`` (numpy booleans) of ``model``'s step."""
    labels = _check_labels(model)
    bad = [label for label, ok in zip(labels, np.asarray(finite).ravel()) if not ok]
    return _PREFIX + ", ".join(bad or ["values"]) + _HINT


def _in_xla_context() -> bool:
    try:  # TensorFlow's own test of whether the graph being built will be XLA-compiled
        from tensorflow.python.ops import control_flow_util

        return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))
    except Exception:  # the private helper moved: assume a graph that can run assertions
        return False


def _run_if(ok, apply, skip, args) -> tf.Tensor:
    """``apply(*args)`` if ``ok`` else ``skip(*args)``, as one ``tf.cond``; returns ``ok``.

    In a replica context of several replicas the branches must not be inside the replica
    function (an optimiser's update leaves it through ``merge_call``, which control flow inside
    the replica function cannot contain): the decision goes to the cross-replica context, where
    each branch runs its function on every replica (``ok`` is the same on all of them).
    """
    if distribute.num_replicas() == 1:
        return tf.cond(ok, lambda: _done(apply(*args), True), lambda: _done(skip(*args), False))

    def merge(strategy, ok, *args):
        first = strategy.experimental_local_results(ok)[0]
        return tf.cond(
            first,
            lambda: _done(strategy.run(apply, args=args), True),
            lambda: _done(strategy.run(skip, args=args), False),
        )

    return tf.distribute.get_replica_context().merge_call(merge, args=(ok,) + tuple(args))


def _done(_, value: bool) -> tf.Tensor:
    return tf.constant(value)


def _assert_applied(applied, finite, labels) -> tf.Tensor:
    """Raise (at run time, after the skipped step restored its state) naming what went non-finite."""

    def fail():
        bad = tf.strings.reduce_join(tf.boolean_mask(tf.constant(labels), tf.logical_not(finite)), separator=", ")
        check = tf.debugging.Assert(False, [tf.strings.join([_PREFIX, bad, _HINT])], summarize=1)
        with tf.control_dependencies([check]):
            return tf.constant(False)

    return tf.cond(applied, lambda: tf.constant(True), fail)


@not_autographed
def training_step(model, objective, optimizer, batch, check_in_graph: Optional[bool] = None) -> Dict[str, tf.Tensor]:
    """Loss, gradients for ``model.trainable_variables``, and, if the loss, the terms, the
    networks' outputs and all gradients are finite, one optimiser update and the objective's
    state update (GECO's lambda). Returns the logs.

    ``optimizer`` is a ``tf_keras`` optimiser or an
    :class:`~gpflow_svgpvae.training.OptimizerGroups` (resolved after the forward pass).
    A bad batch or a non-finite step leaves the model unchanged (see the module docstring).

    :param check_in_graph: raise from inside the step when it was not applied (an
        ``InvalidArgumentError`` naming what went non-finite). ``None``: unless the step is
        being compiled with XLA, which cannot compile the assertion; the caller then reads the
        flags (:data:`FINITE_KEY`, :func:`non_finite_message`).
    :return: the logs of :func:`_logs` (one scale: the whole training set's), and under
        :data:`FINITE_KEY` the step's finiteness flags, named by the model's check labels.

    ``batch`` is ``(X, Y)`` or, for models with missing data (``SVGPVAE``),
    ``(X, Y, mask)``; the model's entry mask reaches the objective as ``terms.mask``.
    """
    data, Y = _split_batch(model, batch)
    state = _forward_state(model, objective)
    saved = [v.read_value() for v in state]  # before the forward pass writes any of them
    with recording_network_outputs() as outputs, tf.GradientTape() as tape:
        terms = model.objective_terms(data, training=True)
        loss, extra = objective.loss(terms, Y)
    # Collected after the forward pass so that lazily built networks are included.
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    grads = [g for g, _ in pairs]
    if distribute.num_replicas() > 1:
        # Keras all-reduces all gradients in one concatenation, which fails for a
        # float64 GP block beside float32 networks: reduce per dtype instead.
        grads = list(distribute.sum_across_replicas_by_dtype(grads))

    # Network outputs differ between replicas: their counts of non-finite tensors are summed
    # in the logs' all-reduce, so every replica takes the same decision.
    roles = list(dict.fromkeys(role for role, _ in outputs))
    local_bad = [
        tf.reduce_sum([1.0 - tf.cast(_all_finite(t), tf.float64) for r, t in outputs if r == role]) for role in roles
    ]
    logs, network_bad = _logs(loss, terms, extra, also=local_bad)
    labels = list(roles) + ["loss", "reconstruction term", "KL term"]
    flags = [tf.equal(n, 0.0) for n in network_bad] + [_all_finite(logs[k]) for k in ("loss", "reconstruction", "kl")]
    by_label: Dict[str, List[tf.Tensor]] = {}
    for label, g in zip(_gradient_labels(model, [v for _, v in pairs]), grads):
        by_label.setdefault(f"gradients of {label}", []).append(_finite_norm(g))
    for label, group in by_label.items():
        labels.append(label)
        flags.append(tf.reduce_all(group))
    finite = tf.stack(flags)
    ok = tf.reduce_all(finite)
    model.__dict__["_step_checks"] = tuple(labels)  # outside tf.Module tracking: names for the host

    trained = [v for _, v in pairs]
    distributed = distribute.num_replicas() > 1

    def apply(grads, saved):
        if distributed:
            optimizer.apply_gradients(zip(grads, trained), skip_gradients_aggregation=True)
        else:
            optimizer.apply_gradients(zip(grads, trained))
        objective.after_step()

    def skip(grads, saved):
        for v, value in zip(state, saved):
            v.assign(value)

    applied = _run_if(ok, apply, skip, (grads, saved))
    if check_in_graph is None:
        check_in_graph = not _in_xla_context()
    if check_in_graph:
        applied = _assert_applied(applied, finite, labels)
    with tf.control_dependencies([applied]):
        logs[FINITE_KEY] = tf.identity(finite)
    return logs


@not_autographed
def evaluation_terms(model, objective, batch) -> Dict[str, tf.Tensor]:
    """The same logs without an update (for validation data; ``(X, Y)`` or ``(X, Y, mask)``)."""
    data, _ = _split_batch(model, batch)
    terms = model.objective_terms(data, training=False)
    loss = -terms.elbo()
    logs, _ = _logs(loss, terms, {})
    return logs
