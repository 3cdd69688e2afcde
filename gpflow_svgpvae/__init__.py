"""gpflow_svgpvae: scalable Gaussian-process-prior variational autoencoders for GPflow.

The SVGP-VAE of Jazbec et al. (AISTATS 2021) as a GPflow model: one class,
:class:`SVGPVAE`, for every kind of auxiliary input (input transforms in
:mod:`gpflow_svgpvae.transforms`), with the pure math in
:mod:`gpflow_svgpvae.amortized`, training in
:mod:`gpflow_svgpvae.training` and data in :mod:`gpflow_svgpvae.datasets`.
"""
# The package namespace is lazy (PEP 562): ``import gpflow_svgpvae`` does not
# import TensorFlow or GPflow; a public name imports its submodule on first
# access. This keeps light entry points light (``svgpvae --help`` only needs
# ``gpflow_svgpvae.experiments.cli``, and importing it runs this file first),
# while ``gv.SVGPVAE``, ``from gpflow_svgpvae import Gaussian`` and
# ``gv.networks.mlp_encoder`` give the same objects as the eager imports did.
import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

#: Submodules available as attributes of the package (imported on first access).
_SUBMODULES = (
    "amortized",
    "auxiliary",
    "covariances",
    "datasets",
    "distribute",
    "estimators",
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
)

#: Public classes and functions re-exported here -> the submodule that defines them.
_OBJECTS = {
    "SVGPVAE": "models",
    "AuxiliarySVGPVAE": "models",
    "SpritesSVGPVAE": "models",
    "GPVAE": "models",
    "VideoSVGPVAE": "models",
    "SparseGPVAE": "models",
    "HensmanGPVAE": "models",
    "VAE": "models",
    "CVAE": "models",
    "GPPVAE": "models",
    "DeepSVIGP": "models",
    "SVGPVAEPosterior": "posterior",
    "amortized_inducing_posterior": "amortized",
    "Gaussian": "likelihoods",
    "Bernoulli": "likelihoods",
}

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

if _typing.TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from . import (  # noqa: F401
        amortized, auxiliary, covariances, datasets, distribute, estimators, imputation, kernels, likelihoods, lowrank,
        metrics, models, networks, numerics, posterior, training, transforms,
    )
    from .amortized import amortized_inducing_posterior  # noqa: F401
    from .likelihoods import Bernoulli, Gaussian  # noqa: F401
    from .models import (  # noqa: F401
        CVAE, GPPVAE, GPVAE, SVGPVAE, VAE, AuxiliarySVGPVAE, DeepSVIGP, HensmanGPVAE, SparseGPVAE, SpritesSVGPVAE,
        VideoSVGPVAE,
    )
    from .posterior import SVGPVAEPosterior  # noqa: F401


def __getattr__(name: str):
    """Import a public submodule or object of the package on first access (PEP 562).

    :raises AttributeError: ``name`` is neither a submodule nor a public object.
    """
    if name in _SUBMODULES:
        # import_module also binds the submodule as an attribute of the package.
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _OBJECTS:
        value = getattr(_importlib.import_module(f"{__name__}.{_OBJECTS[name]}"), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    message = f"module {__name__!r} has no attribute {name!r}"
    if not name.startswith("__"):  # dunder probes (copy, pickle, pytest) need no advice
        import difflib

        close = difflib.get_close_matches(name, list(_SUBMODULES) + list(_OBJECTS), n=1)
        message += f"; did you mean {close[0]!r}?" if close else f"; see {__name__}.__all__ for the public names"
    raise AttributeError(message)


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_OBJECTS))
