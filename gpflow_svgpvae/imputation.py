r"""Non-learned imputation baselines (pure numpy).

Data are sequences ``Y [V, T, *F]`` (e.g. ``F = (H, W, C)`` for image
sequences) with an observation ``mask`` of the same shape (1 = observed, 0 =
missing). Every baseline returns a float32 array of ``Y``'s shape in which the
observed entries are ``Y``'s own values (exactly, for float32-representable
data such as binary images) and only the missing entries are filled; the
values of ``Y`` at missing entries are never read (they may be NaN).

* :func:`zero_fill` -- missing entries set to 0.
* :func:`mean_fill` -- missing entries set to the mean of the observed training
  entries at the same position of the frame (:func:`observed_position_means`).
* :func:`forward_fill` -- missing entries set to the last earlier observation
  of the same entry in the same sequence (last observation carried forward),
  or to a ``fallback`` where there is none.

These are the simple baselines of the GP-VAE paper (Fortuin et al. 2020).

Model selection for imputation:

* :func:`hold_out_entries` -- hide a random fraction of the *observed* entries of the
  training data as a validation target; returns the reduced training data and an
* :class:`ImputationValidation` -- ``validation(model)`` scores ``model.impute`` on the
  held-out entries (MSE and NLL), e.g. as ``train(..., validation_data=validation)``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "zero_fill",
    "observed_position_means",
    "mean_fill",
    "forward_fill",
    "hold_out_entries",
    "ImputationValidation",
]


def _check_data(Y, mask, *, name: str = "Y", mask_name: str = "mask", min_rank: int = 1):
    """``Y`` as an array and ``mask`` as a bool array (True = observed) of its shape."""
    Y = np.asarray(Y)
    if Y.ndim < min_rank:
        raise ValueError(f"{name} must have rank >= {min_rank} ([V, T, ...]); got shape {Y.shape}")
    if (not np.issubdtype(Y.dtype, np.number) and Y.dtype != np.bool_) or np.issubdtype(Y.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers; got dtype {Y.dtype}")
    mask = np.asarray(mask)
    if mask.shape != Y.shape:
        raise ValueError(f"{mask_name} must have the shape of {name} {Y.shape}; got {mask.shape}")
    if mask.dtype != np.bool_:
        if not np.issubdtype(mask.dtype, np.number) or np.issubdtype(mask.dtype, np.complexfloating):
            raise ValueError(f"{mask_name} must be boolean or hold 0/1 numbers; got dtype {mask.dtype}")
        if mask.size and not np.all((mask == 0) | (mask == 1)):
            raise ValueError(f"{mask_name} must hold only 0 (missing) and 1 (observed)")
        mask = mask != 0
    if np.issubdtype(Y.dtype, np.floating) and not np.all(np.isfinite(Y[mask])):
        raise ValueError(f"the observed entries of {name} must be finite")
    return Y, mask


def zero_fill(Y, mask) -> np.ndarray:
    """Fill the missing entries with 0.

    :param Y: ``[V, T, ...]`` (any shape) data; missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :returns: float32 array of ``Y``'s shape: ``Y`` where observed, 0 where missing.
    :raises ValueError: on mismatched shapes, a non-0/1 mask or non-finite
        observed values.
    """
    Y, mask = _check_data(Y, mask)
    return np.where(mask, Y, 0).astype(np.float32)


def observed_position_means(Y, mask) -> np.ndarray:
    """Mean of the observed entries at each position of the frame.

    For every position in the frame (the trailing axes after ``[V, T]``), the
    mean over all sequences and frames of the entries observed there; positions
    never observed get the mean of all observed entries.

    :param Y: ``[V, T, *F]`` data (rank >= 2); missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :returns: float64 array of shape ``F`` (``()`` for rank-2 data).
    :raises ValueError: on mismatched shapes, a non-0/1 mask, non-finite
        observed values, or no observed entry at all.
    """
    Y, mask = _check_data(Y, mask, min_rank=2)
    counts = np.sum(mask, axis=(0, 1))
    total = int(np.sum(counts))
    if total == 0:
        raise ValueError("no entry is observed (mask is all 0); the observed means are undefined")
    sums = np.sum(np.where(mask, Y, 0), axis=(0, 1), dtype=np.float64)
    overall = float(np.sum(sums)) / total
    return np.where(counts > 0, sums / np.maximum(counts, 1), overall)


def mean_fill(Y, mask, train_Y, train_mask) -> np.ndarray:
    """Fill the missing entries with the per-position mean of the observed training entries.

    The fill value of each position in the frame is
    :func:`observed_position_means` ``(train_Y, train_mask)``: the mean of the
    training entries observed at that position over all training sequences and
    frames (the overall observed training mean for positions never observed).

    :param Y: ``[V, T, *F]`` data to fill (rank >= 2).
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param train_Y: ``[V', T', *F]`` training data (same frame shape ``F``).
    :param train_mask: ``train_Y``-shaped training observation mask.
    :returns: float32 array of ``Y``'s shape: ``Y`` where observed, the
        position mean where missing.
    :raises ValueError: on mismatched shapes (including different frame
        shapes), non-0/1 masks, non-finite observed values, or no observed
        training entry.
    """
    Y, mask = _check_data(Y, mask, min_rank=2)
    train_Y, train_mask = _check_data(train_Y, train_mask, name="train_Y", mask_name="train_mask", min_rank=2)
    if train_Y.shape[2:] != Y.shape[2:]:
        raise ValueError(f"train_Y must have Y's frame shape {Y.shape[2:]} after [V, T]; got {train_Y.shape[2:]}")
    means = observed_position_means(train_Y, train_mask)
    return np.where(mask, Y, means).astype(np.float32)


def forward_fill(Y, mask, fallback=None) -> np.ndarray:
    """Fill each missing entry with its last earlier observation in the same sequence.

    Along the time axis (axis 1 of ``[V, T, *F]``), a missing entry
    ``Y[v, t, f]`` gets ``Y[v, t', f]`` for the latest ``t' < t`` where that
    entry is observed; entries with no earlier observation get ``fallback[f]``.
    Vectorised over sequences and positions (a loop over the ``T`` frames).

    :param Y: ``[V, T, *F]`` data (rank >= 3); missing entries are ignored.
    :param mask: ``Y``-shaped, 1 = observed, 0 = missing (bool or 0/1).
    :param fallback: finite values broadcastable to one frame ``F``, e.g.
        :func:`observed_position_means` of the training data or a scalar;
        ``None`` means 0.
    :returns: float32 array of ``Y``'s shape.
    :raises ValueError: on mismatched shapes, rank < 3, a non-0/1 mask,
        non-finite observed values, or a bad ``fallback``.
    """
    Y, mask = _check_data(Y, mask, min_rank=3)
    frame_shape = Y.shape[2:]
    if fallback is None:
        fallback = 0.0
    fallback = np.asarray(fallback)
    if (not np.issubdtype(fallback.dtype, np.number) and fallback.dtype != np.bool_) or np.issubdtype(
        fallback.dtype, np.complexfloating
    ):
        raise ValueError(f"fallback must be real numbers; got dtype {fallback.dtype}")
    try:
        fallback = np.broadcast_to(fallback, frame_shape)
    except ValueError:
        raise ValueError(
            f"fallback must be broadcastable to one frame {frame_shape}; got shape {fallback.shape}"
        ) from None
    if not np.all(np.isfinite(fallback)):
        raise ValueError("fallback must be finite")
    out = np.empty(Y.shape, dtype=np.float32)
    last = np.broadcast_to(fallback.astype(np.float32), (Y.shape[0],) + frame_shape)  # [V, *F]
    for t in range(Y.shape[1]):
        last = np.where(mask[:, t], Y[:, t], last).astype(np.float32, copy=False)
        out[:, t] = last
    return out


# --------------------------------------------------------------------------- validation split


def _observed_layout(data):
    """Checked ``(X, Y[, mask])`` arrays -> ``(X, Y, mask or None, observed [Y's shape, bool], lead)``."""
    if hasattr(data, "element_spec") or (
        isinstance(data, (tuple, list)) and any(hasattr(part, "element_spec") for part in data)
    ):
        raise TypeError("hold_out_entries takes arrays, not a tf.data.Dataset: split the arrays, then build datasets.")
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise TypeError(
            "data must be the training arrays as train takes them: (X, Y) with NaN for missing entries, "
            "(X, Y, mask), or sequences (X [V, T, Q], Y [V, T, ...], frames [V, T]); got "
            f"{type(data).__name__}" + (f" of length {len(data)}" if isinstance(data, (tuple, list)) else "")
        )
    X, Y = np.asarray(data[0]), np.asarray(data[1])
    if X.ndim not in (2, 3):
        raise ValueError(
            f"X must have shape [N, Q] (one latent dataset) or [V, T, Q] (sequences); got shape {list(X.shape)}"
        )
    lead = X.ndim - 1
    if Y.ndim < X.ndim or Y.shape[:lead] != X.shape[:lead]:
        layout = "[V, T, ...]" if lead == 2 else "[N, ...]"
        raise ValueError(
            f"Y must have shape {layout} with X's leading axes {list(X.shape[:lead])}; got shape {list(Y.shape)}"
        )
    if (not np.issubdtype(Y.dtype, np.number) and Y.dtype != np.bool_) or np.issubdtype(Y.dtype, np.complexfloating):
        raise ValueError(f"Y must be real numbers; got dtype {Y.dtype}")
    observed = ~np.isnan(Y) if np.issubdtype(Y.dtype, np.floating) else np.ones(Y.shape, bool)
    mask = None
    if len(data) == 3 and data[2] is not None:
        mask = np.asarray(data[2])
        if mask.shape not in (Y.shape, Y.shape[:lead]):
            raise ValueError(
                f"mask must have Y's shape {list(Y.shape)} (1 = observed, 0 = missing) or {list(Y.shape[:lead])} "
                f"(one flag per {'frame' if lead == 2 else 'point'}); got shape {list(mask.shape)}"
            )
        if mask.dtype != np.bool_ and (
            not np.issubdtype(mask.dtype, np.number) or not np.all((mask == 0) | (mask == 1))
        ):
            raise ValueError("mask must hold only 0 (missing) and 1 (observed) (or booleans)")
        flags = mask.astype(bool)
        if flags.shape != Y.shape:
            flags = np.broadcast_to(flags.reshape(flags.shape + (1,) * (Y.ndim - lead)), Y.shape)
        observed &= flags
    return X, Y, mask, observed, lead


def hold_out_entries(data, fraction: float = 0.1, seed: int = 0, *, num_samples: int = 20):
    r"""Hide a random ``fraction`` of the observed entries of the training data as a validation target.

    The validation set of an imputation model is made of what it is asked to do: predict
    entries it does not see. Of the :math:`n` observed entries of ``data`` (not NaN, mask 1,
    not padding), :math:`\operatorname{round}(\text{fraction}\cdot n)` are drawn uniformly
    without replacement (seeded) and hidden in the returned ``train_data``; the model trains on
    the rest and :class:`ImputationValidation` scores its imputations of the hidden ones,
    conditioning on ``train_data``. Entries that were missing or padded are never drawn.

    So that no latent dataset is left with nothing to condition on, one observed entry of
    every sequence (``X [V, T, Q]``; of every point, for ``X [N, Q]``), drawn at random, is
    never hidden; a sequence (point) that had nothing observed stays so.

    :param data: the training data as :func:`~gpflow_svgpvae.training.train` takes them:
        ``(X, Y)`` with NaN for missing entries (a model built with ``missing_values="nan"``),
        ``(X, Y, mask)`` with ``mask`` of ``Y``'s shape or one flag per point/frame (e.g. the
        frame mask ``[V, T]`` of padded sequences ``X [V, T, Q]``, ``Y [V, T, ...]``).
    :param fraction: in ``(0, 1)``, of the observed entries to hide.
    :param seed: seed of the draw (same data and seed, same split).
    :param num_samples: latent samples the validation's NLL averages over (see
        :class:`ImputationValidation`).
    :return: ``(train_data, validation)``. ``train_data`` has ``data``'s layout with the
        held-out entries hidden the way ``data`` marks missing ones: as NaN when ``Y`` holds NaN
        at entries its mask (if any) calls observed, i.e. the model reads NaN as missing;
        otherwise by a mask of ``Y``'s shape set to 0 there (a per-frame mask is widened to
        ``Y``'s shape; ``(X, Y)`` without NaN becomes ``(X, Y, mask)``).
    :raises TypeError: for data that are not such arrays (e.g. a ``tf.data.Dataset``).
    :raises ValueError: for ``fraction`` outside ``(0, 1)``, shapes that do not fit, a mask
        other than 0/1, a fraction that hides no entry, or one that would leave some sequence
        (point) with nothing observed.
    """
    if isinstance(fraction, (bool, np.bool_)) or not isinstance(fraction, (int, float, np.integer, np.floating)):
        raise ValueError(f"fraction (of the observed entries to hold out) must be a number in (0, 1); got {fraction!r}")
    if not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"fraction (of the observed entries to hold out) must lie in (0, 1); got {fraction!r}")
    X, Y, mask, observed, lead = _observed_layout(data)
    num_observed = int(observed.sum())
    num_hidden = int(round(float(fraction) * num_observed))
    if num_hidden == 0:
        raise ValueError(
            f"fraction={fraction} of the {num_observed} observed entries rounds to no held-out entry: "
            "raise fraction or pass more observed data."
        )
    rng = np.random.default_rng(seed)
    flat_observed = np.flatnonzero(observed)
    group_size = int(np.prod(Y.shape[1:], dtype=np.int64))  # entries per sequence (per point for X [N, Q])
    # One random observed entry per sequence (point) is kept: the first of each group in a random order.
    order = rng.permutation(flat_observed)
    _, first = np.unique(order // group_size, return_index=True)
    kept = np.zeros(Y.size, bool)
    kept[order[first]] = True
    candidates = flat_observed[~kept[flat_observed]]
    if num_hidden > len(candidates):
        unit = "sequence" if lead == 2 else "point"
        raise ValueError(
            f"fraction={fraction} would hide {num_hidden} of the {num_observed} observed entries, but only "
            f"{len(candidates)} can be hidden without leaving some {unit} with nothing observed (one observed "
            f"entry per {unit} is kept): lower fraction (at most {len(candidates) / num_observed:.3g})."
        )
    held_out = np.zeros(Y.size, bool)
    held_out[rng.choice(candidates, size=num_hidden, replace=False)] = True
    held_out = held_out.reshape(Y.shape)

    nan_means_missing = np.issubdtype(Y.dtype, np.floating) and bool(
        np.isnan(Y).any() if mask is None else (np.isnan(Y) & _widen(mask.astype(bool), Y.shape, lead)).any()
    )
    if nan_means_missing:
        train_Y = np.array(Y, copy=True)
        train_Y[held_out] = np.nan
        train_data = (data[0], train_Y) if mask is None else (data[0], train_Y, data[2])
    else:
        if mask is not None and mask.shape == Y.shape:
            train_mask = np.array(mask, copy=True)
        else:
            flags = np.ones(Y.shape[:lead], np.float32) if mask is None else mask.astype(np.float32)
            train_mask = np.array(_widen(flags, Y.shape, lead), copy=True)
        train_mask[held_out] = 0
        train_data = (data[0], data[1], train_mask)
    targets = np.asarray(Y[held_out], dtype=np.float64)
    return train_data, ImputationValidation(train_data, held_out, targets, num_samples=num_samples, seed=seed)


def _widen(flags: np.ndarray, shape, lead: int) -> np.ndarray:
    """A per-point/frame array ``[*shape[:lead]]`` (or an entry array) broadcast to ``shape``."""
    if flags.shape == tuple(shape):
        return flags
    return np.broadcast_to(flags.reshape(flags.shape + (1,) * (len(shape) - lead)), shape)


class ImputationValidation:
    r"""A validation target for an imputation model: held-out entries of the training data.

    Made by :func:`hold_out_entries`. ``validation(model)`` (or :meth:`score`) conditions the
    model's posterior on the observed entries of :attr:`data` (``model.impute(data,
    num_samples=S, seed=seed)``) and scores its imputations at the :math:`M` held-out entries
    :math:`\mathcal H` against their true values :math:`y_i`:

    * ``mse``: :math:`M^{-1}\sum_{i\in\mathcal H} (\hat y_i - y_i)^2`, :math:`\hat y` the decoder's
      mean at the latent posterior mean (``impute``'s first output);
    * ``nll``: the negative log predictive density per held-out entry, the predictive being
      the decoder's likelihood averaged over ``S`` latent posterior samples :math:`z_s`
      (a Monte Carlo estimate, averaged inside the log):
      :math:`-M^{-1}\sum_{i\in\mathcal H}\log\big(S^{-1}\sum_s p(y_i\mid z_s)\big)`, with
      :math:`p(y_i\mid z_s) = \mathcal N(y_i; \mu_{s,i}, \sigma_y^2)` for a Gaussian likelihood
      (the latent spread and the noise) and :math:`p_{s,i}^{y_i}(1-p_{s,i})^{1-y_i}` for a
      Bernoulli one (probabilities clipped to :math:`[10^{-6}, 1-10^{-6}]`). Other likelihoods
      give ``mse`` only.

    The same ``seed`` is used at every call, so successive scores of a model in training
    differ by its weights only, not by the Monte Carlo draw.

    :param data: the conditioning data (the training data with the entries hidden).
    :param held_out: bool, ``Y``'s shape: the held-out entries.
    :param targets: their true values, in ``Y[held_out]`` order.
    :param num_samples: ``S``, latent samples for ``nll``.
    :param seed: seed of the latent draws.
    :param impute_options: passed to ``model.impute`` (e.g. ``batch_size`` of the SVGP-VAE).
    """

    def __init__(self, data, held_out, targets, *, num_samples: int = 20, seed: int = 0, impute_options=None):
        held_out = np.asarray(held_out, dtype=bool)
        targets = np.asarray(targets, dtype=np.float64)
        if held_out.shape != np.shape(data[1]):
            raise ValueError(f"held_out must have Y's shape {list(np.shape(data[1]))}; got {list(held_out.shape)}")
        if targets.shape != (int(held_out.sum()),):
            raise ValueError(
                f"targets must hold one value per held-out entry ({int(held_out.sum())}); got {targets.shape}"
            )
        if isinstance(num_samples, bool) or int(num_samples) != num_samples or num_samples < 1:
            raise ValueError(
                f"num_samples (latent samples for the NLL) must be a positive whole number; got {num_samples!r}"
            )
        self.data = tuple(data)
        self.held_out = held_out
        self.targets = targets
        self.num_samples = int(num_samples)
        self.seed = int(seed)
        self.impute_options = dict(impute_options or {})

    @property
    def num_held_out(self) -> int:
        """:math:`M`, the number of held-out entries."""
        return int(self.targets.size)

    def __repr__(self) -> str:
        return f"ImputationValidation({self.num_held_out} held-out entries, num_samples={self.num_samples})"

    def __call__(self, model) -> dict:
        return self.score(model)

    def score(self, model) -> dict:
        """``{"mse": ..., "nll": ...}`` (floats) of ``model``'s imputations of the held-out entries."""
        impute = getattr(model, "impute", None)
        if impute is None:
            raise TypeError(
                f"{type(model).__name__} has no impute method: an ImputationValidation scores models that take "
                "missing entries (e.g. SVGPVAE)."
            )
        imputed, samples = impute(self.data, num_samples=self.num_samples, seed=self.seed, **self.impute_options)
        predicted = np.asarray(imputed, dtype=np.float64)[self.held_out]
        sampled = np.asarray(samples, dtype=np.float64)[:, self.held_out]  # [S, M]
        scores = {"mse": float(np.mean((predicted - self.targets) ** 2))}
        nll = _held_out_nll(model.likelihood, sampled, self.targets)
        if nll is not None:
            scores["nll"] = nll
        return scores


def _log_mean_exp(values: np.ndarray, axis: int = 0) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.mean(np.exp(values - top), axis=axis))


def _held_out_nll(likelihood, sampled: np.ndarray, targets: np.ndarray):
    """Mean negative log predictive density of ``targets [M]`` under decoded samples ``[S, M]``, or None."""
    from .likelihoods import Bernoulli, Gaussian, GPflowBernoulli, GPflowGaussian

    if isinstance(likelihood, (Gaussian, GPflowGaussian)):
        variance = float(np.asarray(likelihood.variance, dtype=np.float64).reshape(()))
        log_density = -0.5 * np.log(2 * np.pi * variance) - 0.5 * (targets - sampled) ** 2 / variance
        return float(-np.mean(_log_mean_exp(log_density, axis=0)))
    if isinstance(likelihood, (Bernoulli, GPflowBernoulli)):
        p = np.clip(sampled, 1e-6, 1 - 1e-6)
        probability = np.mean(p**targets * (1 - p) ** (1 - targets), axis=0)
        return float(-np.mean(np.log(probability)))
    return None
