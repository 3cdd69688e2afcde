r"""SVGP-VAE with GP-LVM auxiliary inputs (rotated MNIST, SPRITES).

The data carry raw auxiliary inputs ``[view features..., object id]`` (e.g.
``[angle, digit instance]``) while the GP prior lives on
``[view features..., object vector]``: the object vectors are learned
(a GP-LVM, :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`). This model maps
the raw inputs through the table *before* the kernel, everywhere the parent
:class:`~gpflow_svgpvae.models.SVGPVAE` sees inputs:

* :meth:`objective_terms`, :meth:`inducing_posterior`, :meth:`prior_kl` map the
  batch and call the parent, so every check of the parent (width against the
  inducing inputs, finiteness, batch size) runs on the *mapped* inputs;
* :meth:`posterior` streams the mapped data into the parent's cached posterior
  and returns an :class:`AuxiliaryPosterior` whose ``predict_f`` /
  ``predict_y`` take raw inputs.

Inducing inputs live in the mapped space (``input_dim = Dv + Q``); build them
with :func:`~gpflow_svgpvae.auxiliary.init_inducing_per_view`. The object
vectors get gradients from the kernel through ``tf.gather`` (only the rows of
the objects in a batch).
"""
from typing import Optional, Union

import numpy as np
import tensorflow as tf

from ..auxiliary import ObjectVectors
from ..likelihoods import DecoderLikelihood
from .svgpvae import SVGPVAE

__all__ = ["AuxiliarySVGPVAE", "AuxiliaryPosterior"]


class AuxiliarySVGPVAE(SVGPVAE):
    """:class:`~gpflow_svgpvae.models.SVGPVAE` whose auxiliary inputs pass through an
    :class:`~gpflow_svgpvae.auxiliary.ObjectVectors` table before the kernel.

    :param object_vectors: the GP-LVM table, mapping raw ``[Dv + 1]`` inputs to
        ``[Dv + Q]``; construct it with ``num_view_features=Dv`` so the raw
        width is checked.
    Other parameters as :class:`~gpflow_svgpvae.models.SVGPVAE`; ``kernel`` and
    ``inducing_variable`` are in the mapped space.
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel,
        inducing_variable,
        object_vectors: ObjectVectors,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        **kwargs,
    ):
        super().__init__(encoder, decoder, kernel, inducing_variable, likelihood, **kwargs)
        if not isinstance(object_vectors, ObjectVectors):
            raise TypeError(f"object_vectors must be an ObjectVectors module; got {type(object_vectors).__name__}")
        self.object_vectors = object_vectors
        mapped = self.input_dim
        if mapped is not None and object_vectors.num_view_features is not None:
            if mapped != object_vectors.num_view_features + object_vectors.Q:
                raise ValueError(
                    f"The inducing inputs have {mapped} columns but the mapped inputs have "
                    f"num_view_features + Q = {object_vectors.num_view_features + object_vectors.Q}."
                )

    @property
    def raw_input_dim(self) -> Optional[int]:
        """Width of the raw inputs ``[view features..., object id]`` (None: unknown)."""
        dv = self.object_vectors.num_view_features
        return None if dv is None else dv + 1

    def map_inputs(self, X) -> tf.Tensor:
        """Raw ``[b, Dv + 1]`` -> mapped ``[b, Dv + Q]`` (float64)."""
        X = tf.convert_to_tensor(X)
        if X.shape.rank != 2:
            raise ValueError(f"X must have shape [batch, {self.raw_input_dim}]; got {X.shape}")
        return self.object_vectors(X)

    # The parent's methods that take auxiliary inputs, on mapped inputs.
    def objective_terms(self, data, training: Optional[bool] = True):
        X, Y = data
        return super().objective_terms((self.map_inputs(X), Y), training=training)

    def inducing_posterior(self, X, Y, num_data: Optional[int] = None):
        return super().inducing_posterior(self.map_inputs(X), Y, num_data=num_data)

    def prior_kl(self, X, Y, num_data: Optional[int] = None):
        return super().prior_kl(self.map_inputs(X), Y, num_data=num_data)

    def posterior(self, data, batch_size: int = 1024) -> "AuxiliaryPosterior":
        """A cached posterior conditioned on all of ``data`` (raw ``(X, Y)`` arrays or a
        ``tf.data.Dataset``); its ``predict_*`` take raw inputs."""
        if isinstance(data, tf.data.Dataset):
            mapped = data.map(lambda X, Y: (self.map_inputs(X), Y))
        else:
            X, Y = data
            ids = np.asarray(X)[:, self.object_vectors.id_column]
            self.object_vectors.check_ids(ids)
            mapped = (self.map_inputs(np.asarray(X)).numpy(), Y)
        return AuxiliaryPosterior(self, super().posterior(mapped, batch_size=batch_size))


class AuxiliaryPosterior(tf.Module):
    """Wraps an :class:`~gpflow_svgpvae.posterior.SVGPVAEPosterior` (in the mapped
    space, available as ``.mapped``) so that predictions take raw inputs.

    The inner cache is a snapshot of :math:`q(u)`; the object vectors are read
    live from the model's table at prediction time (they are inputs, not part
    of the cache).
    """

    def __init__(self, model: AuxiliarySVGPVAE, mapped_posterior):
        super().__init__(name="auxiliary_svgpvae_posterior")
        self.object_vectors = model.object_vectors
        self.mapped = mapped_posterior
        self.num_conditioned = mapped_posterior.num_conditioned

    def _map(self, Xnew):
        return self.object_vectors(tf.convert_to_tensor(Xnew))

    def inducing_distribution(self):
        return self.mapped.inducing_distribution()

    def predict_f(self, Xnew):
        """Latent predictive mean and variance ``[n, L]`` at raw inputs."""
        return self.mapped.predict_f(self._map(Xnew))

    def predict_y(self, Xnew, num_samples: Optional[int] = None, seed: int = 0):
        """As :meth:`SVGPVAEPosterior.predict_y`, at raw inputs."""
        return self.mapped.predict_y(self._map(Xnew), num_samples=num_samples, seed=seed)
