r"""Model selection for imputation: train candidate settings, keep the one with the best validation score.

:func:`select` hides a fraction of the observed training entries
(:func:`~gpflow_svgpvae.imputation.hold_out_entries`), trains every candidate on the rest with
early stopping on the held-out entries' imputation error, and returns the best model and a table.

:data:`IMPUTATION_GRID` is the grid recommended for imputation: the candidates
``dict(num_latent_gps=L, width=w, learning_rate=lr)`` of a ``build_model(num_latent_gps, width,
learning_rate)`` the user writes (``docs/imputation.pct.py``), with ``L`` in {4, 8, 16}, each with
two 64-unit layers at Adam 3e-3 and with two 128-unit layers at Adam 1e-3. It is what the
real-data imputation benchmark runs (``docs/results/real_imputation/``); ``epochs=300,
patience=4, validate_every=5`` there. Retraining the choice on all entries for its best epoch
count (``refit=True``) was worse on generated sequences and mixed on generated images
(``docs/results/selection/``), so it is off by default.
"""

import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..imputation import ImputationValidation, hold_out_entries
from .loop import train

__all__ = ["select", "IMPUTATION_GRID"]

#: The recommended candidates for imputation (see the module docstring).
IMPUTATION_GRID = tuple(
    dict(num_latent_gps=L, width=width, learning_rate=rate)
    for L in (4, 8, 16)
    for width, rate in ((64, 3e-3), (128, 1e-3))
)


def select(
    build_model: Callable,
    candidates: Sequence[Dict],
    data,
    *,
    validation_fraction: float = 0.1,
    epochs: int,
    patience: Optional[int],
    seed: int = 0,
    monitor: str = "val_mse",
    validation=None,
    refit: bool = False,
    progress: bool = False,
    **train_kwargs,
) -> Tuple[object, List[Dict]]:
    r"""Train each candidate setting with early stopping on held-out entries; return the best.

    One split, :func:`~gpflow_svgpvae.imputation.hold_out_entries` ``(data,
    validation_fraction, seed)``, is shared by all candidates, so their scores compare the
    settings, not the splits. For each ``candidate`` (a dict of keyword arguments),
    ``build_model(**candidate)`` returns a fresh model, or a pair ``(model, optimizer)``; it is
    trained by :func:`~gpflow_svgpvae.training.train` on the reduced training data for at most
    ``epochs`` epochs, validated after each, stopped after ``patience`` validations without
    improvement of ``monitor`` and left at its best weights, then scored once more.

    :param build_model: ``build_model(**candidate) -> model`` or ``(model, optimizer)``.
    :param candidates: the settings to compare, e.g. ``[dict(num_latent_gps=4), dict(num_latent_gps=8)]``.
    :param data: the training data, as :func:`~gpflow_svgpvae.imputation.hold_out_entries` takes them.
    :param validation_fraction: of the observed entries held out.
    :param epochs: at most this many epochs per candidate.
    :param patience: validations without improvement before a candidate stops (``None``: all ``epochs``).
    :param seed: of the split and of each ``train`` call.
    :param monitor: ``"val_mse"`` or ``"val_nll"``: the score that picks the weights and the candidate.
    :param validation: an ``ImputationValidation`` (or callable ``model -> dict``) to use instead of
        a new split; ``data`` must then be the training data it goes with.
    :param refit: after selecting, build the best candidate afresh and train it on all of ``data``
        (nothing held out) for its best epoch count; that model is returned instead.
    :param train_kwargs: passed to ``train`` (``batch_size``, ``optimizer``, ``objective``, ...).
    :return: ``(model, table)``: the selected model, and one row per candidate in the given order:
        ``{"candidate", "val_mse", "val_nll", "best_epoch", "epochs", "seconds", "selected"}``
        (``epochs``: the epochs it trained before it stopped; ``seconds``: its training time;
        ``val_nll`` ``None`` where the validation gives no NLL).
    :raises ValueError: for no candidates or candidates that are not dicts, an ``optimizer`` both
        returned by ``build_model`` and passed, or a ``monitor`` the validation does not give.
    """
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates is empty: pass a list of dicts of build_model's keyword arguments.")
    for candidate in candidates:
        if not isinstance(candidate, dict):
            raise ValueError(f"each candidate must be a dict of build_model's keyword arguments; got {candidate!r}.")
    if validation is None:
        data, validation = hold_out_entries(data, validation_fraction, seed=seed)
    elif not callable(validation):
        raise TypeError(f"validation must be an ImputationValidation or a callable; got {type(validation).__name__}.")
    score_key = monitor[len("val_") :] if monitor.startswith("val_") else monitor

    table: List[Dict] = []
    best_model, best_score, best_index = None, np.inf, None
    for index, candidate in enumerate(candidates):
        model, kwargs = _built(build_model(**candidate), train_kwargs)
        start = time.perf_counter()
        history = train(
            model,
            data,
            epochs=epochs,
            validation_data=validation,
            patience=patience,
            monitor=monitor,
            seed=seed,
            progress=progress,
            **kwargs,
        )
        seconds = time.perf_counter() - start
        scores = validation(model)  # at the restored best weights
        if score_key not in scores:
            raise ValueError(f"monitor={monitor!r}: the validation gives {sorted(scores)}; pick one of them.")
        table.append(
            {
                "candidate": dict(candidate),
                "val_mse": _float(scores.get("mse")),
                "val_nll": _float(scores.get("nll")),
                "best_epoch": history["best_epoch"],
                "epochs": len(history["loss"]),  # type: ignore[arg-type]  # a list of floats
                "seconds": seconds,
                "selected": False,
            }
        )
        score = float(scores[score_key])
        if np.isfinite(score) and score < best_score:
            best_model, best_score, best_index = model, score, index
        del model
    if best_index is None:
        raise FloatingPointError("No candidate reached a finite validation score.")
    table[best_index]["selected"] = True
    if refit:
        best_model = _refit(
            build_model, candidates[best_index], data, validation, table[best_index], seed, train_kwargs
        )
    return best_model, table


def _built(built, train_kwargs):
    """``(model, train kwargs)`` from ``build_model``'s return value."""
    if isinstance(built, tuple):
        if len(built) != 2:
            raise ValueError(f"build_model must return a model or (model, optimizer); got a tuple of {len(built)}.")
        if "optimizer" in train_kwargs:
            raise ValueError("build_model returned an optimizer and select got optimizer=...: pass one of them.")
        return built[0], dict(train_kwargs, optimizer=built[1])
    return built, dict(train_kwargs)


def _float(value) -> Optional[float]:
    return None if value is None else float(value)


def _refit(build_model, candidate, data, validation, row, seed, train_kwargs):
    """The selected candidate built afresh and trained on every observed entry for its best epoch count."""
    if not isinstance(validation, ImputationValidation):
        raise ValueError(
            "refit=True needs the ImputationValidation of hold_out_entries (to restore the held-out entries)."
        )
    full = _with_held_out(data, validation)
    model, kwargs = _built(build_model(**candidate), train_kwargs)
    train(model, full, epochs=int(row["best_epoch"] or 1), seed=seed, progress=False, **kwargs)
    return model


def _with_held_out(data, validation: ImputationValidation):
    """``data`` with the held-out entries observed again (their values put back)."""
    X, Y = data[0], np.array(data[1], copy=True)
    Y[validation.held_out] = validation.targets.astype(Y.dtype)
    if len(data) == 2:
        return (X, Y)
    mask = np.asarray(data[2])
    if mask.shape == Y.shape:
        mask = np.array(mask, copy=True)
        mask[validation.held_out] = 1
    return (X, Y, mask)
