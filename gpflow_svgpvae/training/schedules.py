"""Learning-rate schedules for optimiser groups.

:class:`DelayedStart` holds a group of variables at their initial values for the
first steps of training (learning rate 0), then trains them. With
:class:`~gpflow_svgpvae.training.OptimizerGroups` this holds the kernel
hyperparameters while the networks learn a first encoding::

    groups = OptimizerGroups([
        (Adam(DelayedStart(1e-2, start_step=1000)), [model.kernel]),   # held for 1,000 steps
        (Adam(1e-3), None),                                            # everything else from step 0
    ])

Why (moving ball): from random networks the encoder's first sites are entangled, and a
kernel trained from step 0 fits its lengthscale to them (about half the true value) faster
than the encoder untangles them; the model then stays in that poor optimum.
"""

from typing import Union

import tensorflow as tf
from gpflow.keras import tf_keras

__all__ = ["DelayedStart"]


class DelayedStart(tf_keras.optimizers.schedules.LearningRateSchedule):
    r"""Learning rate 0 for the first ``start_step`` optimiser steps, then ``learning_rate``.

    :math:`\eta_t = 0` for :math:`t < t_0`, :math:`\eta_t = \eta` (or ``learning_rate(t - t_0)``
    for a schedule) for :math:`t \ge t_0`. With Adam a zero learning rate leaves the variables
    exactly at their values; the moment estimates still see the gradients, so the first
    steps after the start are not scaled by stale zeros. The optimiser's step counter is
    saved in checkpoints, so a resumed run holds and releases at the same step.

    :param learning_rate: a float or a ``LearningRateSchedule`` (evaluated from the start step on).
    :param start_step: :math:`t_0 \ge 0`.
    """

    def __init__(
        self, learning_rate: Union[float, tf_keras.optimizers.schedules.LearningRateSchedule], start_step: int
    ):
        super().__init__()
        if int(start_step) < 0 or int(start_step) != start_step:
            raise ValueError(f"start_step must be a whole number >= 0, got {start_step!r}")
        if not isinstance(learning_rate, tf_keras.optimizers.schedules.LearningRateSchedule) and not learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {learning_rate!r}")
        self.learning_rate = learning_rate
        self.start_step = int(start_step)

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        start = tf.constant(float(self.start_step), tf.float32)
        if isinstance(self.learning_rate, tf_keras.optimizers.schedules.LearningRateSchedule):
            rate = tf.cast(self.learning_rate(tf.maximum(step - start, 0.0)), tf.float32)
        else:
            rate = tf.constant(float(self.learning_rate), tf.float32)
        return tf.where(step < start, tf.zeros_like(rate), rate)

    def get_config(self):
        """``{"learning_rate": ..., "start_step": ...}`` (a schedule as its Keras serialisation)."""
        rate = self.learning_rate
        if isinstance(rate, tf_keras.optimizers.schedules.LearningRateSchedule):
            rate = tf_keras.optimizers.schedules.serialize(rate)
        return {"learning_rate": rate, "start_step": self.start_step}

    @classmethod
    def from_config(cls, config):
        rate = config["learning_rate"]
        if isinstance(rate, dict):
            rate = tf_keras.optimizers.schedules.deserialize(rate)
        return cls(rate, config["start_step"])
