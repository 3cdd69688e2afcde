r"""The SPRITES SVGP-VAE (Jazbec et al., AISTATS 2021, section 5.3).

Data: frames :math:`y_i` (64 x 64 RGB) of characters :math:`c_i` in poses
:math:`p_i`; raw auxiliary inputs ``X_raw = [character id, pose id]``. The GP
prior lives on

.. math::

    x_i = [\,s_{c_i},\ w_{p_i}\,],\qquad
    s_c = \sum_{j\in\text{batch}:\ c_j = c} h_\phi(y_j),

where :math:`h_\phi` is the representation network
(:mod:`gpflow_svgpvae.networks.representation`; the aggregation is over the
character's frames *in the batch*) and :math:`w_p` is the learned pose vector
(GP-LVM table, 72 x 8, :class:`~gpflow_svgpvae.auxiliary.ObjectVectors`,
PCA-initialised by :func:`~gpflow_svgpvae.datasets.sprites.pca_pose_vectors`). The kernel is
:func:`~gpflow_svgpvae.kernels.sprites_kernel` (cosine-linear(style) x
cosine-linear(pose) + white), :math:`m = 72` inducing points, :math:`L = 64`.

Because the style of a frame depends on the other frames of its character in
the batch, training batches hold whole characters:
:func:`~gpflow_svgpvae.datasets.sprites.character_batches` yields ``k``
characters x their ``P`` training frames per step (paper: ``10 x 50 = 500``).

Deprecated: this is :class:`~gpflow_svgpvae.SVGPVAE` with the input transform
:func:`sprites_input_transform` (``Concatenate([GroupRepresentation(...),
Chain([SelectColumns([pose column]), pose table])])``). Conditional generation
for an unseen character is the one prediction interface: with context frames
``(X_ctx [V, Qc, 2], Y_ctx [V, Qc, H, W, C])`` of ``V`` characters,
``model.predict_y(X_tgt [V, T, 2], data=(X_ctx, Y_ctx))`` computes each
character's style from its context frames, conditions its posterior on them
(:math:`s = 1`) and decodes the predictive mean at the target poses;
``model.posterior(train_data).predict_y(X_tgt, data=(X_ctx, Y_ctx))`` conditions
on the training set as well.

Networks (:func:`~gpflow_svgpvae.networks.sprites_encoder`,
:func:`~gpflow_svgpvae.networks.sprites_decoder`): six conv layers of 16
filters each; the decoder upsamples with stride-2 ``Conv2DTranspose`` (no
``UpSampling2D``, whose gradient XLA cannot compile on CPU).

The networks live in :mod:`gpflow_svgpvae.networks.sprites` and the data
helpers (``character_batches``, ``mean_frames_per_pose``,
``pca_pose_vectors``, ``init_sprites_inducing``) in
:mod:`gpflow_svgpvae.datasets.sprites`; both remain importable from here.
"""
import warnings
from typing import Union

from ..auxiliary import ObjectVectors
from ..likelihoods import DecoderLikelihood
from ..networks.representation import StyleRepresentation
from ..networks.sprites import sprites_decoder, sprites_encoder
from ..transforms import representation_and_table
from .svgpvae import SVGPVAE

__all__ = [
    "SpritesSVGPVAE",
    "sprites_input_transform",
    "sprites_encoder",
    "sprites_decoder",
    "character_batches",
    "mean_frames_per_pose",
    "pca_pose_vectors",
    "init_sprites_inducing",
]

# Backwards compatibility: the data helpers moved to gpflow_svgpvae.datasets.sprites.
# They are resolved lazily (PEP 562) so that importing the models never imports datasets.
_MOVED_DATA_HELPERS = ("character_batches", "mean_frames_per_pose", "pca_pose_vectors", "init_sprites_inducing",
                       "_raw_inputs")


def __getattr__(name):
    if name in _MOVED_DATA_HELPERS:
        from ..datasets.sprites import batches

        return getattr(batches, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sprites_input_transform(
    representation: StyleRepresentation, pose_vectors: ObjectVectors, character_column: int = 0, pose_column: int = 1
):
    """Raw ``[character id, pose id]`` (and the frames) -> ``[style, pose vector]``;
    :func:`gpflow_svgpvae.transforms.representation_and_table`."""
    if not isinstance(pose_vectors, ObjectVectors):
        raise TypeError(f"pose_vectors must be an ObjectVectors table; got {type(pose_vectors).__name__}")
    return representation_and_table(representation, pose_vectors, character_column, pose_column)


class SpritesSVGPVAE(SVGPVAE):
    """Deprecated alias: ``SVGPVAE(..., input_transform=sprites_input_transform(representation, pose_vectors))``.

    Other parameters as :class:`~gpflow_svgpvae.SVGPVAE` (``kernel`` and
    ``inducing_variable`` in the mapped space, width ``d + Q``).
    """

    def __init__(
        self,
        encoder,
        decoder,
        kernel,
        inducing_variable,
        representation: StyleRepresentation,
        pose_vectors: ObjectVectors,
        likelihood: Union[str, DecoderLikelihood] = "gaussian",
        *,
        character_column: int = 0,
        pose_column: int = 1,
        **kwargs,
    ):
        warnings.warn(
            "SpritesSVGPVAE is deprecated: use SVGPVAE(..., input_transform="
            "sprites_input_transform(representation, pose_vectors)).",
            DeprecationWarning,
            stacklevel=2,
        )
        if not isinstance(representation, StyleRepresentation):
            raise TypeError(f"representation must be a StyleRepresentation; got {type(representation).__name__}")
        transform = sprites_input_transform(representation, pose_vectors, character_column, pose_column)
        super().__init__(encoder, decoder, kernel, inducing_variable, likelihood, input_transform=transform, **kwargs)

    @property
    def representation(self) -> StyleRepresentation:
        return self.input_transform.transforms[0].representation

    @property
    def pose_vectors(self) -> ObjectVectors:
        return self.input_transform.transforms[1].transforms[1]
