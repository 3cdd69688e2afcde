"""Optimiser groups: a separate ``tf_keras`` optimiser (e.g. learning rate) per group of variables.

Example: the GP part (kernel and inducing inputs) at a higher learning rate
than the networks::

    groups = OptimizerGroups([(Adam(1e-2), [model.kernel, model.inducing_variable]),
                              (Adam(1e-3), None)])   # None: every other variable
    train(model, data, epochs=..., optimizer=groups)
    # or: model.as_training_model().compile(optimizer=groups)
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import tensorflow as tf
from gpflow.keras import tf_keras

__all__ = ["OptimizerGroups", "as_optimizer", "gp_optimizer_groups"]

_KERAS_OPTIMIZERS = (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer)


def _resolve(targets) -> List[tf.Variable]:
    """The variables named by a group's targets: variables as given, modules
    (GPflow modules and parameters, Keras layers and models) by their
    ``trainable_variables`` at the time of the call."""
    items = [targets] if isinstance(targets, (tf.Variable, tf.Module)) else list(targets)
    variables: List[tf.Variable] = []
    for item in items:
        if isinstance(item, tf.Variable):
            variables.append(item)
        elif isinstance(item, tf.Module):
            variables.extend(item.trainable_variables)
        else:
            raise TypeError(
                f"An optimizer group holds variables and modules (tf.Variable, tf.Module: GPflow modules and "
                f"parameters, Keras layers/models), not {type(item).__name__}."
            )
    return variables


class OptimizerGroups(tf.__internal__.tracking.AutoTrackable):
    """Several ``tf_keras`` optimisers, each updating its own group of variables.

    Accepted wherever a single optimiser is (:func:`~gpflow_svgpvae.training.train`,
    ``KerasTrainingModel.compile``, :func:`~gpflow_svgpvae.training.training_step`).

    :param groups: ``(optimizer, targets)`` pairs. ``targets`` is a variable, a
        ``tf.Module`` (a GPflow module or parameter, a Keras layer or model: its
        trainable variables) or a sequence of these. The last group's ``targets``
        may be ``None``: every variable not in an earlier group.

    Groups are resolved by variable identity each time gradients are applied (after the
    forward pass, so lazily built networks are covered). Every variable with a gradient must
    be in exactly one group (:class:`ValueError` otherwise); a group without gradients is
    skipped in that step. ``tf.train.Checkpoint(optimizer=groups)`` saves every group's state.
    """

    def __init__(self, groups: Sequence[Tuple[Any, Optional[Any]]]):
        groups = list(groups)
        if not groups:
            raise ValueError("OptimizerGroups needs at least one (optimizer, variables) group.")
        optimizers: List[Any] = []
        targets: List[Optional[Any]] = []
        for i, group in enumerate(groups):
            if not (isinstance(group, (tuple, list)) and len(group) == 2):
                raise TypeError(
                    f"Optimizer group {i} must be an (optimizer, variables_or_modules) pair, got {group!r}."
                )
            optimizer, target = group
            if not isinstance(optimizer, _KERAS_OPTIMIZERS):
                raise TypeError(f"Optimizer group {i}: expected a tf_keras optimizer, got {type(optimizer).__name__}.")
            if any(optimizer is other for other in optimizers):
                raise ValueError(
                    f"Optimizer group {i} reuses the optimizer of an earlier group; give each group its own."
                )
            if target is None and i != len(groups) - 1:
                raise ValueError(
                    f"Optimizer group {i} has variables None (every remaining variable); only the last group may."
                )
            optimizers.append(optimizer)
            targets.append(target)
        self._optimizers = optimizers  # tracked: checkpoints hold every group's state
        self._targets = _Untracked(tuple(targets))

    @property
    def optimizers(self) -> Tuple:
        """The groups' optimisers, in group order."""
        return tuple(self._optimizers)

    def __len__(self) -> int:
        return len(self._optimizers)

    def split(self, variables: Iterable[tf.Variable]) -> List[List[tf.Variable]]:
        """``variables`` by group (in the order given).

        :raises ValueError: if a variable is named by two groups, or a given variable
            is in no group (and there is no catch-all group).
        """
        variables = list(variables)
        owner: Dict[Any, int] = {}  # variable ref -> index of its group
        for i, target in enumerate(self._targets.value):
            if target is None:
                continue
            for v in _resolve(target):
                j = owner.setdefault(v.ref(), i)
                if j != i:
                    raise ValueError(
                        f"Variable {v.name!r} is in optimizer groups {j} and {i}: every variable must be updated "
                        "by exactly one optimizer."
                    )
        catch_all = len(self) - 1 if self._targets.value[-1] is None else None
        out: List[List[tf.Variable]] = [[] for _ in range(len(self))]
        missing: List[str] = []
        for v in variables:
            group = owner.get(v.ref(), catch_all)
            if group is None:
                missing.append(v.name)
            else:
                out[group].append(v)
        if missing:
            shown = ", ".join(repr(n) for n in missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            raise ValueError(
                f"{len(missing)} trainable variable(s) are in no optimizer group: {shown}. Add them to a group, or "
                "end the groups with (optimizer, None) for every remaining variable."
            )
        return out

    def apply_gradients(self, grads_and_vars, **kwargs):
        """Apply each group's gradients with its optimiser (keyword arguments,
        e.g. ``skip_gradients_aggregation``, are passed to every optimiser)."""
        pairs = list(grads_and_vars)
        index = {v.ref(): k for k, (_, v) in enumerate(pairs)}
        for optimizer, group in zip(self._optimizers, self.split([v for _, v in pairs])):
            if group:
                optimizer.apply_gradients([pairs[index[v.ref()]] for v in group], **kwargs)

    def build(self, var_list):
        """Create every group's optimiser state (slots) for its share of ``var_list``."""
        for optimizer, group in zip(self._optimizers, self.split(var_list)):
            if group:
                optimizer.build(group)

    def __repr__(self) -> str:
        parts = [f"{type(o).__name__}(learning_rate={_learning_rate(o)})" for o in self._optimizers]
        return f"OptimizerGroups([{', '.join(parts)}])"


class _Untracked:
    """Holds the groups' targets without making them checkpoint dependencies of the
    optimiser (the model's variables belong to the model)."""

    def __init__(self, value):
        self.value = value


def _learning_rate(optimizer):
    try:
        return float(tf_keras.backend.get_value(optimizer.learning_rate))
    except Exception:  # a schedule
        return optimizer.learning_rate


def as_optimizer(optimizer):
    """A ``tf_keras`` optimiser or :class:`OptimizerGroups` as given; a list/tuple of
    ``(optimizer, variables_or_modules)`` pairs as :class:`OptimizerGroups`; ``None`` as ``None``."""
    if optimizer is None or isinstance(optimizer, (OptimizerGroups,) + _KERAS_OPTIMIZERS):
        return optimizer
    if isinstance(optimizer, (list, tuple)):
        return OptimizerGroups(optimizer)
    raise TypeError(
        "optimizer must be a tf_keras optimizer, OptimizerGroups or a list of (optimizer, variables) pairs, "
        f"got {type(optimizer).__name__}."
    )


def build_optimizer(optimizer, variables: Sequence[tf.Variable]) -> None:
    """Create the optimiser's state (slots, step counter) for ``variables`` now.

    A ``tf.function`` whose first call creates variables is traced twice, so this halves the
    first compiled step's tracing time. A no-op for a built optimiser and for legacy ones.
    Pass every variable the step will update: a built optimiser rejects others.
    """
    if isinstance(optimizer, OptimizerGroups):
        for member, group in zip(optimizer.optimizers, optimizer.split(variables)):
            if group:
                build_optimizer(member, group)
        return
    if isinstance(optimizer, tf_keras.optimizers.Optimizer) and not getattr(optimizer, "_built", False):
        optimizer.build(list(variables))


def build_optimizer_for(optimizer, model) -> bool:
    """:func:`build_optimizer` for every trainable variable of ``model`` if its networks have
    their weights (else the first step creates them, and the optimiser's state with them).
    Returns whether it built."""
    layers = [m for m in model.submodules if isinstance(m, tf_keras.layers.Layer)]
    if not all(layer.built for layer in layers):
        return False
    build_optimizer(optimizer, model.trainable_variables)
    return True


def gp_optimizer_groups(
    model, learning_rate: float = 1e-3, gp_learning_rate: Optional[float] = None, kernel_hold_steps: int = 0
) -> OptimizerGroups:
    r"""Adam for the networks at ``learning_rate``, Adam for the GP part at ``gp_learning_rate``,
    with the kernel hyperparameters optionally held at their initial values for the first
    ``kernel_hold_steps`` steps (:class:`~gpflow_svgpvae.training.DelayedStart`).

    The GP part is ``model.kernel`` and, for a sparse model, ``model.inducing_variable``; every
    other variable (networks, input transforms) is in the networks' group. The inducing inputs
    train from the first step.

    Why the hold: see :mod:`~gpflow_svgpvae.training.schedules`; starting the lengthscale *above*
    the true one and holding it while the encoder learns (with the decoder's output bias at the
    data's mean, :func:`~gpflow_svgpvae.networks.set_output_bias`) reaches the good optimum on
    the moving ball from random networks (``docs/results.md``). Use it with
    ``train(..., optimizer=...)`` or ``model.as_training_model().compile(optimizer=...)``.

    :param gp_learning_rate: default: ``learning_rate``.
    :param kernel_hold_steps: :math:`\ge 0` optimiser steps (0: no hold).
    """
    from .schedules import DelayedStart

    kernel = getattr(model, "kernel", None)
    if kernel is None:
        raise ValueError(f"{type(model).__name__} has no kernel: gp_optimizer_groups is for GP-prior models.")
    if int(kernel_hold_steps) < 0 or int(kernel_hold_steps) != kernel_hold_steps:
        raise ValueError(f"kernel_hold_steps must be a whole number >= 0, got {kernel_hold_steps!r}")
    gp_rate = learning_rate if gp_learning_rate is None else gp_learning_rate
    for name, rate in (("learning_rate", learning_rate), ("gp_learning_rate", gp_rate)):
        if not rate > 0:
            raise ValueError(f"{name} must be positive, got {rate!r}")
    inducing = getattr(model, "inducing_variable", None)
    groups: List[Tuple[Any, Optional[List[Any]]]] = []
    if kernel_hold_steps:
        groups.append((tf_keras.optimizers.Adam(DelayedStart(gp_rate, int(kernel_hold_steps))), [kernel]))
        gp = [inducing] if inducing is not None else []
    else:
        gp = [kernel] + ([inducing] if inducing is not None else [])
    if gp:
        groups.append((tf_keras.optimizers.Adam(gp_rate), gp))
    groups.append((tf_keras.optimizers.Adam(learning_rate), None))
    return OptimizerGroups(groups)
