"""Deprecated: :class:`AuxiliarySVGPVAE` is :class:`~gpflow_svgpvae.SVGPVAE` with an
:class:`~gpflow_svgpvae.auxiliary.ObjectVectors` input transform.

Use ``SVGPVAE(encoder, decoder, kernel, inducing_variable, likelihood, num_data=N,
input_transform=object_vectors)``. This alias will be removed in the next release.
"""
import warnings
from typing import Optional, Union

from ..auxiliary import ObjectVectors
from ..likelihoods import DecoderLikelihood
from .svgpvae import SVGPVAE

__all__ = ["AuxiliarySVGPVAE"]


class AuxiliarySVGPVAE(SVGPVAE):
    """Deprecated alias: ``SVGPVAE(..., input_transform=object_vectors)``."""

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
        warnings.warn(
            "AuxiliarySVGPVAE is deprecated: use SVGPVAE(..., input_transform=object_vectors).",
            DeprecationWarning,
            stacklevel=2,
        )
        if not isinstance(object_vectors, ObjectVectors):
            raise TypeError(f"object_vectors must be an ObjectVectors module; got {type(object_vectors).__name__}")
        super().__init__(encoder, decoder, kernel, inducing_variable, likelihood, input_transform=object_vectors, **kwargs)

    @property
    def object_vectors(self) -> ObjectVectors:
        return self.input_transform

    @property
    def raw_input_dim(self) -> Optional[int]:
        return self.input_dim
