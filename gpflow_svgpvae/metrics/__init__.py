r"""Missing-data imputation metrics (pure numpy), on the missing entries only:
:func:`missing_bernoulli_nll` and :func:`imputation_mse` (:mod:`.imputation`)."""

from .imputation import imputation_mse, missing_bernoulli_nll

__all__ = ["missing_bernoulli_nll", "imputation_mse"]
