"""Every public function of the posterior math, the models' bound and predictions and the
objectives carries a ``check_shapes`` contract, and the contracts reject what they should."""

import inspect

import numpy as np
import pytest
import tensorflow as tf
from check_shapes import get_check_shapes
from check_shapes.exceptions import ShapeMismatchError

from gpflow_svgpvae import CVAE, GPPVAE, SVGPVAE, DeepSVIGP, amortized, posterior
from gpflow_svgpvae.models.base import ELBOTerms, LatentVariableAutoencoder
from gpflow_svgpvae.models.video import VideoAutoencoder
from gpflow_svgpvae.training.objectives import ELBO, GECO

# Public names without tensors in or out (types, constructors of GPflow objects, a float check).
_NO_TENSORS = {"as_inducing_variable", "check_scale", "WhitenedPosterior", "BatchPosterior", "SVGPVAEPosterior"}


def _public_functions(module):
    for name, obj in vars(module).items():
        if name.startswith("_") or name in _NO_TENSORS or not inspect.isfunction(obj):
            continue
        if obj.__module__ == module.__name__:
            yield name, obj


@pytest.mark.parametrize("module", [amortized, posterior], ids=lambda m: m.__name__)
def test_public_functions_of_the_posterior_math_have_shape_contracts(module):
    missing = [name for name, f in _public_functions(module) if get_check_shapes(f) is None]
    assert not missing, f"{module.__name__}: no check_shapes on {missing}"


@pytest.mark.parametrize(
    "method",
    [
        LatentVariableAutoencoder.elbo,
        LatentVariableAutoencoder.objective_terms,
        ELBOTerms.elbo,
        SVGPVAE.objective_terms,
        SVGPVAE.predict_f,
        SVGPVAE.predict_latents,
        SVGPVAE.predict_y,
        VideoAutoencoder.objective_terms,
        VideoAutoencoder.predict_f,
        CVAE.objective_terms,
        CVAE.predict_f,
        CVAE.predict_y,
        GPPVAE.objective_terms,
        GPPVAE.predict_f,
        GPPVAE.predict_y,
        DeepSVIGP.objective_terms,
        DeepSVIGP.predict_f,
        DeepSVIGP.predict_y,
        posterior.SVGPVAEPosterior.predict_f,
        posterior.SVGPVAEPosterior.predict_latents,
        posterior.SVGPVAEPosterior.predict_y,
        posterior.SVGPVAEPosterior.inducing_distribution,
        ELBO.kl_weight,
        ELBO.loss,
        GECO.constraint,
        GECO.loss,
    ],
    ids=lambda m: m.__qualname__,
)
def test_models_and_objectives_have_shape_contracts(method):
    assert get_check_shapes(method) is not None


def test_the_bound_of_non_scalar_terms_is_refused():
    """ELBOTerms.elbo must be one number: a KL left per channel ([L]) would broadcast silently."""
    terms = ELBOTerms(
        reconstruction=tf.constant(-3.0, tf.float64),
        kl=tf.constant([1.0, 2.0], tf.float64),
        scale=tf.constant(2.0, tf.float64),
        decoded=tf.zeros([4, 3], tf.float64),
        mask=None,
        num_replicas=1,
    )
    with pytest.raises(ShapeMismatchError):
        terms.elbo()
    scalar = terms._replace(kl=tf.constant(3.0, tf.float64))
    np.testing.assert_allclose(scalar.elbo(kl_weight=0.5).numpy(), 2.0 * -3.0 - 0.5 * 3.0)


def test_the_whitened_posterior_refuses_a_prior_factor_without_channel_axis():
    """with_batch_rank takes Lm as [C, M, M]; a bare [M, M] factor is a caller's error."""
    with pytest.raises(ShapeMismatchError):
        amortized.with_batch_rank(tf.eye(3, dtype=tf.float64), 1)
    np.testing.assert_array_equal(amortized.with_batch_rank(tf.eye(3, batch_shape=[1]), 2).shape, [1, 1, 1, 3, 3])
