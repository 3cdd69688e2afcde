r"""Metrics (pure numpy), one module per kind:

* :mod:`.paths` -- latent paths compared after the best affine map (:func:`affine_align`, :func:`affine_path_rmse`);
* :mod:`.imputation` -- missing-data imputation on the missing entries only
  (:func:`missing_bernoulli_nll`, :func:`imputation_mse`, :func:`classification_auroc`).
"""

from .imputation import classification_auroc, imputation_mse, missing_bernoulli_nll
from .paths import affine_align, affine_path_rmse

__all__ = [
    "affine_align",
    "affine_path_rmse",
    "missing_bernoulli_nll",
    "imputation_mse",
    "classification_auroc",
]
