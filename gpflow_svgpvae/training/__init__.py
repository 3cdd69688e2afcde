"""Training: objectives (ELBO, GECO), the shared step, the compiled loop and the Keras view."""

from .checkpoints import check_checkpoint, restore_checkpoint
from .keras import ImputationValidationCallback, KerasTrainingModel
from .loop import make_dataset, train
from .objectives import ELBO, GECO
from .optimizers import OptimizerGroups, gp_optimizer_groups
from .schedules import DelayedStart
from .selection import IMPUTATION_GRID, select
from .step import evaluation_terms, training_step

__all__ = [
    "train",
    "make_dataset",
    "ELBO",
    "GECO",
    "OptimizerGroups",
    "gp_optimizer_groups",
    "DelayedStart",
    "KerasTrainingModel",
    "ImputationValidationCallback",
    "select",
    "IMPUTATION_GRID",
    "training_step",
    "evaluation_terms",
    "check_checkpoint",
    "restore_checkpoint",
]
