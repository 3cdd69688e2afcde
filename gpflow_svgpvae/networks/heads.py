r"""Encoder output heads.

The SVGP-VAE encoder returns, per data point and latent channel, a Gaussian
site :math:`\tilde q(z_{il} \mid y_i) = \mathcal N(\tilde y_{il}, \tilde v_{il})`.
"""

import tensorflow as tf
from gpflow.keras import tf_keras

__all__ = ["GaussianSiteHead"]


class GaussianSiteHead(tf_keras.layers.Layer):
    r"""Dense layer giving site means and positive variances.

    ``parametrization="variance"`` (default, the paper's encoder up to the floor):

    .. math::

        [\tilde y, a] = W h + c,\qquad \tilde v = \mathrm{softplus}(a) + v_{\min}.

    ``parametrization="natural"``: the layer outputs the site's natural parameters, the
    precision-weighted mean :math:`\eta` and the precision :math:`\lambda`,

    .. math::

        [\eta, a] = W h + c,\qquad \lambda = \mathrm{softplus}(a) + \lambda_{\min},\qquad
        \tilde v = 1/\lambda,\quad \tilde y = \eta/\lambda,

    so an uninformative site is the finite point :math:`\eta = 0, \lambda \to \lambda_{\min}`
    (precisions are capped at :math:`1/v_{\min}`). Why: under a unit prior the posterior mean
    is :math:`\tilde y / (1 + \tilde v) = \eta / (1 + \lambda)`; its gradient w.r.t. :math:`\tilde y`
    vanishes as a channel becomes uninformative (:math:`\tilde v \to \infty`), so a channel the
    KL switched off early stays off, while the gradient w.r.t. :math:`\eta` stays near 1.

    :param num_latent_gps: :math:`L`, the number of latent channels.
    :param min_variance: :math:`v_{\min} > 0`, keeps the sites' precisions bounded.
    :param kernel_initializer: initialiser of :math:`W` (Keras name or object; default Glorot uniform).
    :param parametrization: ``"variance"`` or ``"natural"``.
    :param min_precision: :math:`\lambda_{\min} > 0` of the natural form (largest site
        variance :math:`1/\lambda_{\min}`).
    :return: ``(means [b, L], variances [b, L])``.
    """

    PARAMETRIZATIONS = ("variance", "natural")

    def __init__(
        self,
        num_latent_gps: int,
        min_variance: float = 1e-4,
        kernel_initializer="glorot_uniform",
        parametrization: str = "variance",
        min_precision: float = 1e-3,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(num_latent_gps) < 1:
            raise ValueError(f"num_latent_gps must be a positive integer, got {num_latent_gps}")
        if not min_variance > 0:
            raise ValueError(f"min_variance must be positive, got {min_variance}")
        if parametrization not in self.PARAMETRIZATIONS:
            raise ValueError(f"parametrization must be one of {self.PARAMETRIZATIONS}; got {parametrization!r}")
        if not 0 < min_precision < 1.0 / min_variance:
            raise ValueError(f"min_precision must be in (0, 1/min_variance); got {min_precision}")
        self.num_latent_gps = int(num_latent_gps)
        self.min_variance = float(min_variance)
        self.parametrization = parametrization
        self.min_precision = float(min_precision)
        self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
        self.dense = tf_keras.layers.Dense(2 * self.num_latent_gps, kernel_initializer=self.kernel_initializer)

    def call(self, features):
        """The sites of ``features [..., F]``: ``(means [..., L], variances [..., L])`` by the
        formulas of the class docstring, in the layer's compute dtype."""
        out = self.dense(features)
        first, raw = out[..., : self.num_latent_gps], out[..., self.num_latent_gps :]
        if self.parametrization == "variance":
            return first, tf.nn.softplus(raw) + self.min_variance
        # Capped from above at 1/min_variance: the same largest precision as the variance form.
        precision = tf.minimum(tf.nn.softplus(raw) + self.min_precision, 1.0 / self.min_variance)
        return first / precision, 1.0 / precision

    def get_config(self):
        return {
            **super().get_config(),
            "num_latent_gps": self.num_latent_gps,
            "min_variance": self.min_variance,
            "kernel_initializer": tf_keras.initializers.serialize(self.kernel_initializer),
            "parametrization": self.parametrization,
            "min_precision": self.min_precision,
        }
