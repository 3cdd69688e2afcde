"""gpflow_svgpvae: scalable Gaussian-process-prior variational autoencoders for GPflow.

The SVGP-VAE of Jazbec et al. (AISTATS 2021) as a GPflow model: one class,
:class:`SVGPVAE`, for every kind of auxiliary input (input transforms in
:mod:`gpflow_svgpvae.transforms`), with the pure math in
:mod:`gpflow_svgpvae.amortized`, training in :mod:`gpflow_svgpvae.training`
and generated data in :mod:`gpflow_svgpvae.datasets`.
"""

from . import (
    amortized,
    auxiliary,
    covariances,
    datasets,
    distribute,
    imputation,
    kernels,
    likelihoods,
    lowrank,
    metrics,
    models,
    networks,
    numerics,
    posterior,
    training,
    transforms,
)
from .likelihoods import Bernoulli, Gaussian
from .models import CVAE, GPPVAE, GPVAE, SVGPVAE, VAE, DeepSVIGP, HensmanGPVAE, SparseGPVAE
from .posterior import SVGPVAEPosterior

__version__ = "0.1.0"

__all__ = [
    "SVGPVAE",
    "SVGPVAEPosterior",
    "GPVAE",
    "SparseGPVAE",
    "HensmanGPVAE",
    "VAE",
    "CVAE",
    "GPPVAE",
    "DeepSVIGP",
    "Gaussian",
    "Bernoulli",
    "amortized",
    "auxiliary",
    "covariances",
    "datasets",
    "distribute",
    "imputation",
    "kernels",
    "likelihoods",
    "lowrank",
    "metrics",
    "models",
    "networks",
    "numerics",
    "posterior",
    "training",
    "transforms",
]
