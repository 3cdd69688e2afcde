"""The object vectors of the rotated-MNIST models: where a model keeps its table, and how
eval instances, unseen in training, are placed in the learned coordinates."""

import numpy as np

from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.models.deep_svigp import DeepSVIGP
from gpflow_svgpvae.models.gppvae import GPPVAE
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from svgpvae_paper.datasets.rotated_mnist import RotatedMNISTArrays as Data

__all__ = ["object_table", "place_new_objects"]


def object_table(model) -> ObjectVectors:
    """The learned object vectors of a GP model of this experiment.

    The SVGP-VAE and Deep SVIGP map their raw inputs through the table (their
    ``input_transform``); GPPVAE looks up the rows of its low-rank kernel
    features in it (``object_vectors``; it never maps inputs through it).
    """
    if isinstance(model, GPPVAE):
        return model.object_vectors
    if isinstance(model, (SVGPVAE, DeepSVIGP)) and isinstance(model.input_transform, ObjectVectors):
        return model.input_transform
    raise TypeError(f"{type(model).__name__} has no table of object vectors")


def place_new_objects(table: ObjectVectors, data: Data, initial: np.ndarray) -> np.ndarray:
    """Set the eval instances' object vectors to ``[x0, 1] W``, where ``W`` is the least-squares
    affine map from the initial vectors ``x0`` to the current ones over the training instances.

    :param table: the model's :func:`object_table`.
    Returns ``W`` (``[Q + 1, Q]``). Only eval rows change; they never enter a training loss.
    """
    vectors = table.vectors
    current = vectors.numpy()
    fit, new = data.fit_ids, data.eval_ids
    design = np.concatenate([initial, np.ones((len(initial), 1))], axis=1)
    W, *_ = np.linalg.lstsq(design[fit], current[fit], rcond=None)
    current[new] = design[new] @ W
    vectors.assign(current)
    return W
