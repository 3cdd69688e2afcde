"""Metrics of the paper's experiments, one module per kind:

* :mod:`.style` -- SPRITES: whether generated frames carry the right discrete style attribute
  (:class:`ChoiceAccuracy`, :func:`palette_colour_accuracy`, :func:`nearest_rendering_accuracy`);
* :mod:`.paths` -- moving ball: latent paths compared after the best affine map
  (:func:`affine_align`, :func:`affine_path_rmse`);
* :mod:`.classification` -- HMNIST: the downstream-classification AUROC (:func:`classification_auroc`).
"""

from .classification import classification_auroc
from .paths import affine_align, affine_path_rmse
from .style import ChoiceAccuracy, nearest_rendering_accuracy, palette_colour_accuracy

__all__ = [
    "ChoiceAccuracy",
    "palette_colour_accuracy",
    "nearest_rendering_accuracy",
    "affine_align",
    "affine_path_rmse",
    "classification_auroc",
]
