"""gpflow_svgpvae: scalable Gaussian-process-prior variational autoencoders for GPflow.

The SVGP-VAE of Jazbec et al. (AISTATS 2021) as a GPflow model: one class,
:class:`SVGPVAE`, for every kind of auxiliary input (input transforms in
:mod:`gpflow_svgpvae.transforms`), with the pure math in
:mod:`gpflow_svgpvae.amortized`, training in
:mod:`gpflow_svgpvae.training` and data in :mod:`gpflow_svgpvae.datasets`.
"""
from . import amortized, auxiliary, covariances, distribute, estimators, kernels, likelihoods, lowrank, metrics, networks, numerics, transforms
from .amortized import amortized_inducing_posterior
from .likelihoods import Bernoulli, Gaussian
from .models import (
    CVAE,
    GPPVAE,
    GPVAE,
    SVGPVAE,
    VAE,
    AuxiliarySVGPVAE,
    DeepSVIGP,
    HensmanGPVAE,
    SparseGPVAE,
    SpritesSVGPVAE,
    VideoSVGPVAE,
)
from .posterior import SVGPVAEPosterior

__version__ = "0.1.0"

__all__ = [
    "SVGPVAE",
    "SVGPVAEPosterior",
    "AuxiliarySVGPVAE",
    "SpritesSVGPVAE",
    "GPVAE",
    "VideoSVGPVAE",
    "SparseGPVAE",
    "HensmanGPVAE",
    "VAE",
    "CVAE",
    "GPPVAE",
    "DeepSVIGP",
    "amortized_inducing_posterior",
    "Gaussian",
    "Bernoulli",
    "amortized",
    "auxiliary",
    "covariances",
    "estimators",
    "transforms",
    "distribute",
    "kernels",
    "likelihoods",
    "lowrank",
    "metrics",
    "networks",
    "numerics",
]
