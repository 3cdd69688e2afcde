r"""Missing-data imputation metrics (pure numpy), computed on the missing entries only.

:func:`missing_bernoulli_nll` and :func:`imputation_mse`, in :mod:`gpflow_svgpvae.metrics.imputation`.
"""

from .imputation import imputation_mse, missing_bernoulli_nll

__all__ = ["missing_bernoulli_nll", "imputation_mse"]
