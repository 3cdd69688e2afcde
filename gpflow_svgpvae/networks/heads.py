r"""Encoder output heads.

The SVGP-VAE encoder returns, per data point and latent channel, a Gaussian
site :math:`\tilde q(z_{il} \mid y_i) = \mathcal N(\tilde y_{il}, \tilde v_{il})`.
"""
from gpflow.keras import tf_keras
import tensorflow as tf

__all__ = ["GaussianSiteHead"]


class GaussianSiteHead(tf_keras.layers.Layer):
    r"""Dense layer giving site means and positive variances.

    .. math::

        [\tilde y, a] = W h + c,\qquad \tilde v = \mathrm{softplus}(a) + v_{\min}

    :param num_latent: :math:`L`, the number of latent channels.
    :param min_variance: :math:`v_{\min} > 0`, keeps the sites' precisions bounded.
    :param kernel_initializer: initialiser of :math:`W` (Keras name or object; default Glorot uniform).
    :return: ``(means [b, L], variances [b, L])``.
    """

    def __init__(self, num_latent: int, min_variance: float = 1e-4, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if int(num_latent) < 1:
            raise ValueError(f"num_latent must be a positive integer, got {num_latent}")
        if not min_variance > 0:
            raise ValueError(f"min_variance must be positive, got {min_variance}")
        self.num_latent = int(num_latent)
        self.min_variance = float(min_variance)
        self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
        self.dense = tf_keras.layers.Dense(2 * self.num_latent, kernel_initializer=self.kernel_initializer)

    def call(self, features):
        out = self.dense(features)
        means, raw = out[..., : self.num_latent], out[..., self.num_latent :]
        return means, tf.nn.softplus(raw) + self.min_variance

    def get_config(self):
        return {**super().get_config(), "num_latent": self.num_latent, "min_variance": self.min_variance,
                "kernel_initializer": tf_keras.initializers.serialize(self.kernel_initializer)}
