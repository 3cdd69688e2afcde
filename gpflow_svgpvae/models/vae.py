r"""The standard VAE baseline on videos: an i.i.d. :math:`\mathcal N(0, I)` prior per frame.

The encoder's sites are the posterior, :math:`q(z_{vt}) = \mathcal N(\tilde y_{vt}, \mathrm{diag}\,\tilde v_{vt})`,
and the ELBO of a video is

.. math::

    \sum_t E_q[\log p(y_{vt}\mid z_{vt})] - \sum_{t,l}\mathrm{KL}\big(\mathcal N(\tilde y_{vtl}, \tilde v_{vtl})
        \,\|\,\mathcal N(0, 1)\big).

The inputs ``X`` are checked for shape but otherwise ignored (frames are
independent), so the same ``(X, Y)`` batches train every model of the family.

Missing data (``data = (X, Y, mask)``): the encoder sees the zero-filled frames,
the decoder's log density counts the observed entries only, and a frame with
nothing observed (weight :math:`w_{vt} = 0`) gets the prior as its posterior,
:math:`q(z_{vt}) = \mathcal N(0, I)` (the encoder's output for it is not used), so
it adds exactly 0 to the KL.
"""

import tensorflow as tf

from .video import LatentPosterior, VideoAutoencoder

__all__ = ["VAE"]


class VAE(VideoAutoencoder):
    """Standard VAE with the same networks and data format as the GP-VAEs; arguments as
    :class:`~gpflow_svgpvae.models.video.VideoAutoencoder` (``encoder``, ``decoder``,
    ``likelihood``, ``num_data``, ``sequence_length``, ``missing_values``, ``encoder_dropout``, ...)."""

    def latent_posterior(self, X, means, variances, num_data=None, weights=None) -> LatentPosterior:
        if weights is not None:  # frames with nothing observed: the prior N(0, I), KL 0
            used = tf.broadcast_to(tf.cast(weights, means.dtype)[..., None] > 0, tf.shape(means))
            means = tf.where(used, means, tf.zeros_like(means))
            variances = tf.where(used, variances, tf.ones_like(variances))
        kl_frames = 0.5 * (variances + tf.square(means) - 1.0 - tf.math.log(variances))  # [V, b, L]
        b = tf.cast(tf.shape(means)[1], means.dtype)
        scale = tf.ones([], means.dtype) if num_data is None else tf.cast(num_data, means.dtype) / b
        return LatentPosterior(means, variances, scale * tf.reduce_sum(kl_frames, axis=[-2, -1]))
