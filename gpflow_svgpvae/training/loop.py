"""The compiled training loop: ``train(model, data, epochs=...)``.

One ``tf.function`` (optionally XLA-compiled) per training step, the same
step as the Keras path, a progress bar, per-epoch mean logs and optional
checkpointing with resume.
"""

import contextlib
import os
import warnings
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from tqdm.auto import tqdm

from .. import numerics
from ..imputation import ImputationValidation, _observed_layout
from ..models.data import positive_count
from .errors import errors_first
from .objectives import as_objective
from .optimizers import OptimizerGroups, as_optimizer, build_optimizer_for
from .step import evaluation_terms, training_step

__all__ = ["train", "make_dataset", "masked_arrays"]


def make_dataset(
    data,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    drop_remainder: bool = False,
    missing_values: Optional[str] = None,
    frames_per_sequence: Optional[int] = None,
):
    """``(X, Y)`` or ``(X, Y, mask)`` arrays -> a shuffled, batched, prefetching ``tf.data.Dataset``
    of such tuples.

    The shuffle order is fixed by ``seed`` and differs between epochs.

    :param missing_values: ``"nan"``: NaN entries of ``Y`` are missing; they are turned
        into a mask once, here (``Y`` zero-filled, ``mask = ~isnan(Y)``, combined with a
        given mask), so the batches are ``(X, Y, mask)`` without NaN. ``None``: the arrays
        are used as given.
    :param frames_per_sequence: for sequence data (``X [V, T, D]``, ``Y [V, T, ...]``), keep a
        random subset of this many frames of every sequence (drawn anew each epoch, seeded,
        kept in time order): the SVGP-VAE's minibatch over the points of each latent dataset,
        whose cost per sequence no longer grows with ``T``. ``None``: whole sequences.
    """
    if isinstance(data, tf.data.Dataset):
        return data
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise TypeError("data must be (X, Y) or (X, Y, mask) arrays, or a tf.data.Dataset")
    if missing_values not in (None, "nan"):
        raise ValueError(f"missing_values must be None or 'nan'; got {missing_values!r}")
    X, Y = data[:2]
    if len(X) != len(Y):
        raise ValueError(f"X and Y have different lengths: {len(X)} and {len(Y)}")
    if len(X) == 0:
        raise ValueError("The training data are empty (0 points).")
    if len(data) == 3 and len(data[2]) != len(Y):
        raise ValueError(f"The mask and Y have different lengths: {len(data[2])} and {len(Y)}")
    if missing_values == "nan":
        data = masked_arrays(*data)
    dataset = tf.data.Dataset.from_tensor_slices(tuple(data))
    if shuffle:
        dataset = dataset.shuffle(len(X), seed=seed, reshuffle_each_iteration=True)
    if frames_per_sequence is not None:
        dataset = _subsample_frames(dataset, np.shape(X), int(frames_per_sequence), seed)
    batch_size = positive_count(batch_size, "batch_size", "points per batch")
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def _subsample_frames(dataset: tf.data.Dataset, x_shape, frames: int, seed: int) -> tf.data.Dataset:
    """Keep ``frames`` random frames (sorted by index) of every sequence element ``(X [T, D], Y [T, ...], ...)``."""
    if len(x_shape) != 3:
        raise ValueError(f"frames_per_sequence needs sequence data X [V, T, D]; got X of shape {tuple(x_shape)}")
    T = int(x_shape[1])
    if not 1 <= frames <= T:
        raise ValueError(f"frames_per_sequence must be in [1, T={T}]; got {frames}")
    if frames == T:
        return dataset

    def pick(random, element):
        # A stateless draw per element: the same seed gives the same frames, run after run.
        keys = tf.random.stateless_uniform([T], seed=tf.stack([tf.cast(random, tf.int64), tf.constant(seed, tf.int64)]))
        index = tf.sort(tf.argsort(keys)[:frames])
        return tuple(tf.gather(part, index) for part in element)

    randoms = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    return tf.data.Dataset.zip((randoms, dataset)).map(pick, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def masked_arrays(X, Y, mask=None):
    """``(X, Y with NaN for missing entries[, mask])`` -> ``(X, Y zero-filled, mask)`` numpy arrays
    (``mask`` float32 of ``Y``'s shape, 1 = observed: not NaN and, if given, ``mask`` = 1; a
    per-point/frame ``mask`` is broadcast over ``Y``'s trailing axes)."""
    Y = np.asarray(Y)
    observed = ~np.isnan(Y) if np.issubdtype(Y.dtype, np.floating) else np.ones(Y.shape, bool)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != Y.shape:
            lead = np.ndim(X) - 1
            if mask.shape != Y.shape[:lead]:
                raise ValueError(
                    f"mask must have Y's shape {list(Y.shape)} or {list(Y.shape[:lead])} (one flag per "
                    f"point/frame); got shape {list(mask.shape)}."
                )
            mask = np.broadcast_to(mask.reshape(mask.shape + (1,) * (Y.ndim - lead)), Y.shape)
        if not np.isin(mask, (0, 1)).all():
            raise ValueError("mask must hold only 0 (missing) and 1 (observed) (or booleans).")
        observed &= mask.astype(bool)
    return X, np.where(observed, Y, 0).astype(Y.dtype), observed.astype(np.float32)


@contextlib.contextmanager
def _checks(enabled: bool):
    previous = numerics.numerical_checks()
    numerics.set_numerical_checks(enabled)
    try:
        yield
    finally:
        numerics.set_numerical_checks(previous)


def _raise_if_non_finite(loss_sum, epoch: int) -> None:
    if not np.isfinite(float(loss_sum.numpy())):
        raise FloatingPointError(
            f"The training loss became non-finite in epoch {epoch}; with jit_compile=True the "
            "per-step checks are off: rerun without XLA to locate the failing matrix or input."
        )


def train(
    model,
    data,
    *,
    epochs: int,
    optimizer: Optional[Union[tf_keras.optimizers.Optimizer, OptimizerGroups, Sequence]] = None,
    objective=None,
    batch_size: Optional[int] = None,
    seed: int = 0,
    jit_compile: bool = False,
    validation_data=None,
    validate_every: int = 1,
    monitor: Optional[str] = None,
    mode: str = "auto",
    patience: Optional[int] = None,
    restore_best: bool = True,
    checkpoint_dir: Optional[str] = None,
    checkpoint_every: int = 1,
    checkpoint_every_steps: Optional[int] = None,
    steps_per_epoch: Optional[int] = None,
    progress: bool = True,
    callback=None,
    strategy: Optional[tf.distribute.Strategy] = None,
    frames_per_sequence: Optional[int] = None,
) -> Dict[str, object]:
    r"""Train ``model`` for ``epochs`` passes over ``data``.

    :param data: a ``tf.data.Dataset`` of ``(X, Y)`` (or ``(X, Y, mask)``, missing entries)
        batches, or such arrays with ``batch_size`` (shuffled with ``seed``; see :func:`make_dataset`).
        Integer ``Y`` (e.g. uint8 pixels) and masks of any 0/1 dtype are cast to float32 in the
        model, batch by batch: large image arrays can stay uint8 in memory (a quarter of
        float32) and train exactly as their float32 copy would. Arrays are checked whole
        before the first step (the model's ``check_arrays``); a bad batch of a dataset stops
        training before any update is made from it, with an error that leads with the
        package's message and names the epoch and batch.
    :param optimizer: a ``tf_keras`` optimiser (default: Adam, learning rate 1e-3), or
        optimiser groups, one optimiser per group of variables:
        :class:`~gpflow_svgpvae.training.OptimizerGroups` or a list of
        ``(optimizer, variables_or_modules)`` pairs, the last one possibly
        ``(optimizer, None)`` for every remaining variable, e.g.
        ``[(Adam(1e-2), [model.kernel, model.inducing_variable]), (Adam(1e-3), None)]``.
    :param objective: :class:`~gpflow_svgpvae.training.ELBO` (default) or
        :class:`~gpflow_svgpvae.training.GECO`.
    :param jit_compile: compile the step with XLA. Runtime assertions (NaN
        inputs, failed Cholesky) cannot be compiled, so the loop checks the
        loss for finiteness at the end of each epoch instead.
    :param validation_data: scored after every ``validate_every``-th epoch (and the last) and logged
        with a ``val_`` prefix: ``(X, Y[, mask])`` arrays or a ``tf.data.Dataset`` (the ELBO terms,
        ``val_loss``, ``val_elbo``, ...), or an
        :class:`~gpflow_svgpvae.imputation.ImputationValidation` from
        :func:`~gpflow_svgpvae.imputation.hold_out_entries` (``val_mse``, ``val_nll`` of the
        held-out entries; train on its ``train_data``), or any callable ``model -> dict`` of floats
        (its keys logged as ``val_<key>``).
    :param monitor: the logged value that picks the best weights and drives early stopping;
        default ``"val_mse"`` for an ``ImputationValidation`` (or callable), ``"val_loss"`` for arrays
        and datasets.
    :param mode: ``"min"``, ``"max"`` or ``"auto"`` (maximise values ending in ``elbo`` or
        ``reconstruction``, minimise the rest).
    :param patience: ``None`` (default): train all ``epochs``. Else stop after that many
        validations in a row without improvement of ``monitor``.
    :param restore_best: with validation data, end with the weights (every variable of ``model``)
        of the validation with the best ``monitor`` value. The copies are ``tf.Variable``\ s on the
        model's device, assigned at each improvement; they, the best value and the patience count
        are part of ``checkpoint_dir``'s checkpoints, so a resumed run keeps them.
    :param checkpoint_dir: save the model (including its Monte Carlo draw
        counter), optimiser, objective state (GECO), step counter and the data
        iterator's position there every ``checkpoint_every`` epochs (and every
        ``checkpoint_every_steps`` steps if given), and resume from the latest
        checkpoint if one exists: a run killed at any point and restarted with
        the same arguments continues as if uninterrupted.
    :param steps_per_epoch: needed only when the dataset's length is unknown.
    :param callback: called as ``callback(epoch, logs)`` after each epoch.
    :param strategy: a ``tf.distribute`` strategy (default: the one in scope).
        Build the model inside ``strategy.scope()``; each step's batch is the
        global batch, split across replicas, and the GP statistics are summed
        across replicas so the result equals single-device training.
    :param frames_per_sequence: with sequence arrays ``X [V, T, D]``: train on this many
        random frames of each sequence per step (see :func:`make_dataset`); the model's
        ``num_data`` stays ``T``, so the bound is the unbiased minibatch estimate.
    :return: history, a dict of per-epoch mean logs (``loss``, ``elbo``,
        ``reconstruction``, ``kl`` on the whole training set's scale, ``elbo = reconstruction - kl``;
        GECO's keys; ``val_*`` with validation data, one entry per validation) for the
        epochs completed in this call (after a mid-epoch resume, the first
        entry averages only the steps run after resuming). With validation data also
        the scalars ``history["monitor"]`` (its name), ``history["best_epoch"]`` (1-based
        number of epochs trained when it was best, counted over the whole run; ``None``
        before any validation), ``history["best_value"]`` and ``history["stopped_epoch"]``
        (the epoch early stopping ended, or ``None``).
    :raises ValueError: before any variable changes, for ``epochs``, ``batch_size``, ``validate_every``, ``patience``,
        ``steps_per_epoch``, ``checkpoint_every`` or ``checkpoint_every_steps`` that is not a
        positive whole number, and for bad arrays (see the model's ``check_arrays``: masks other
        than 0/1 or of the wrong shape, non-finite observed values, Bernoulli targets outside
        ``[0, 1]``).
    :warns UserWarning: when nothing in the arrays is observed, or when a resumed checkpoint
        leaves zero steps to run.
    """
    # Arguments first, before any data are read or any variable changes.
    epochs = positive_count(epochs, "epochs", "passes over the data")
    scorer, monitor, minimise = _validation_arguments(validation_data, monitor, mode, patience)
    validate_every = positive_count(validate_every, "validate_every", "epochs between validations")
    if patience is not None:
        patience = positive_count(patience, "patience", "validations without improvement before stopping")
    checkpoint_every = positive_count(checkpoint_every, "checkpoint_every", "epochs between checkpoints")
    if checkpoint_every_steps is not None:
        checkpoint_every_steps = positive_count(checkpoint_every_steps, "checkpoint_every_steps", "steps")
    if batch_size is not None:
        batch_size = positive_count(batch_size, "batch_size", "points per step")
    if steps_per_epoch is not None:
        steps_per_epoch = positive_count(steps_per_epoch, "steps_per_epoch", "steps per epoch")
    if not isinstance(data, tf.data.Dataset) and batch_size is None:
        raise ValueError("Pass batch_size when data are arrays (or pass a batched tf.data.Dataset).")
    for arrays in (data, validation_data, getattr(scorer, "data", None)):  # whole arrays checked once
        if isinstance(arrays, (tuple, list)) and hasattr(model, "check_arrays"):
            model.check_arrays(arrays)
    if isinstance(scorer, ImputationValidation):
        _check_not_trained_on_held_out(data, scorer)
    if frames_per_sequence is not None and isinstance(data, tf.data.Dataset):
        raise ValueError("frames_per_sequence applies to arrays; subsample frames in your tf.data pipeline instead.")
    dataset = (
        make_dataset(data, batch_size, shuffle=True, seed=seed, frames_per_sequence=frames_per_sequence)
        if batch_size
        else data
    )
    if scorer is None and validation_data is not None and not isinstance(validation_data, tf.data.Dataset):
        validation_data = make_dataset(validation_data, batch_size or 1024, shuffle=False)
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        optimizer = as_optimizer(optimizer) or tf_keras.optimizers.Adam(1e-3)
        objective = as_objective(objective)
        build_optimizer_for(optimizer, model)
    distributed = strategy.num_replicas_in_sync > 1

    if steps_per_epoch is None:
        cardinality = int(dataset.cardinality().numpy())
        if cardinality == 0:
            raise ValueError("The training data produced no batches.")
        if cardinality < 0:
            raise ValueError("The dataset's length is unknown (or infinite): pass steps_per_epoch.")
        steps_per_epoch = cardinality
    steps_per_epoch = int(steps_per_epoch)
    # One iterator over the repeated dataset for the whole run: its position and
    # shuffle state go into checkpoints, so a resumed run sees the same batches.
    repeated = dataset.repeat()
    iterator = iter(strategy.experimental_distribute_dataset(repeated) if distributed else repeated)

    def first_replica(logs):
        # Logged values are all-reduced, hence identical on every replica.
        return {k: strategy.experimental_local_results(v)[0] for k, v in logs.items()}

    step = tf.function(
        lambda batch: strategy.run(training_step, args=(model, objective, optimizer, batch)),
        jit_compile=jit_compile,
    )
    evaluate = tf.function(lambda batch: evaluation_terms(model, objective, batch))

    global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    best = None if validation_data is None else BestWeights(minimise)
    manager = None
    if checkpoint_dir is not None:
        tracked = dict(model=model, optimizer=optimizer, objective=objective, step=global_step)
        if best is not None:
            tracked["best"] = best  # the best-so-far weights and the patience counter resume too
        if not distributed:
            tracked["iterator"] = iterator
        checkpoint = tf.train.Checkpoint(**tracked)
        checkpoint_dir = os.fspath(checkpoint_dir)
        latest = tf.train.latest_checkpoint(checkpoint_dir)
        if latest:
            checkpoint.restore(latest)
        # Every worker of a multi-worker strategy must take part in saving, but only
        # the chief may write to checkpoint_dir; the others write to private folders.
        write_dir = checkpoint_dir
        if not strategy.extended.should_checkpoint:
            task = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0)
            write_dir = os.path.join(checkpoint_dir, f"_worker_{task}_tmp")
        manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=1 if write_dir != checkpoint_dir else 3)

    history: Dict[str, object] = {}
    total_steps = epochs * steps_per_epoch
    done = int(global_step.numpy())
    if done >= total_steps:
        warnings.warn(
            f"zero training steps to run: the checkpoint in {checkpoint_dir} is already at step {done}, and "
            f"epochs * steps_per_epoch = {epochs} * {steps_per_epoch} = {total_steps}; raise epochs to train on.",
            UserWarning,
            stacklevel=2,
        )
    bar = tqdm(
        total=total_steps,
        initial=min(done, total_steps),
        desc="training",
        disable=not progress,
        unit="step",
        dynamic_ncols=True,
    )
    sums: Dict[str, tf.Tensor] = {}
    count = 0

    def position() -> str:
        epoch, batch = divmod(done, steps_per_epoch)
        return f"in epoch {epoch + 1}, batch {batch + 1} (1-based; step {done + 1})"

    with _checks(not jit_compile), errors_first(position):
        while done < total_steps and not (best is not None and bool(best.stopped.numpy())):
            logs = first_replica(step(next(iterator)))
            for key, value in logs.items():
                sums[key] = sums.get(key, 0.0) + tf.cast(value, tf.float64)
            count += 1
            done += 1
            global_step.assign(done)
            bar.update(1)
            end_of_epoch = done % steps_per_epoch == 0
            epoch = (done - 1) // steps_per_epoch
            if end_of_epoch:
                _raise_if_non_finite(sums["loss"], epoch)
            save = manager is not None and (
                (checkpoint_every_steps and done % int(checkpoint_every_steps) == 0)
                or (end_of_epoch and (done // steps_per_epoch) % checkpoint_every == 0)
                or done == total_steps
            )
            if save and not end_of_epoch:  # at the end of an epoch: after its validation, below
                # Never save a state reached through a non-finite loss.
                _raise_if_non_finite(sums["loss"], epoch)
                manager.save(checkpoint_number=done)  # type: ignore[union-attr]  # save implies a manager
            if not end_of_epoch:
                continue
            epoch_logs = {key: float(value.numpy()) / count for key, value in sums.items()}
            if validation_data is not None and ((epoch + 1) % validate_every == 0 or done == total_steps):
                if scorer is not None:
                    epoch_logs.update(_scores(scorer, model))
                else:
                    val_sums: Dict[str, float] = {}
                    val_count = 0
                    for batch in validation_data:
                        for key, value in evaluate(batch).items():
                            val_sums[key] = val_sums.get(key, 0.0) + float(value.numpy())
                        val_count += 1
                    epoch_logs.update({f"val_{k}": v / max(val_count, 1) for k, v in val_sums.items()})
                assert best is not None  # validation data always come with a BestWeights
                with strategy.scope():
                    best.update(model, _monitored(epoch_logs, monitor), epoch + 1, patience)
                save = save or (manager is not None and bool(best.stopped.numpy()))
            if save:
                _raise_if_non_finite(sums["loss"], epoch)
                manager.save(checkpoint_number=done)  # type: ignore[union-attr]  # save implies a manager
            sums, count = {}, 0
            for key, value in epoch_logs.items():
                history.setdefault(key, []).append(value)  # type: ignore[attr-defined]  # per-epoch keys hold lists
            bar.set_postfix({k: f"{epoch_logs[k]:.4g}" for k in ("elbo", "reconstruction", "kl") if k in epoch_logs})
            if callback is not None:
                callback(epoch, epoch_logs)
    bar.close()
    if best is not None:
        if restore_best:
            with strategy.scope():
                best.restore(model)
        history.update(best.summary(monitor))
    return history


def _validation_arguments(validation_data, monitor, mode, patience):
    """``(scorer or None, monitor key, minimise?)`` for ``train``'s validation arguments."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max' (for the monitored value); got {mode!r}")
    if validation_data is None:
        if patience is not None or monitor is not None:
            raise ValueError(
                "patience and monitor need validation_data: pass validation_data=... (e.g. the validation of "
                "gpflow_svgpvae.imputation.hold_out_entries) or drop patience/monitor."
            )
        return None, None, True
    scorer = None
    if isinstance(validation_data, ImputationValidation) or (
        callable(validation_data) and not isinstance(validation_data, (tf.data.Dataset, tuple, list))
    ):
        scorer, default = validation_data, "val_mse"
    elif isinstance(validation_data, (tf.data.Dataset, tuple, list)):
        if isinstance(validation_data, (tuple, list)) and len(validation_data) not in (2, 3):
            raise TypeError(
                f"validation_data arrays must be (X, Y) or (X, Y, mask); got {len(validation_data)} arrays."
            )
        default = "val_loss"
    else:
        raise TypeError(
            "validation_data must be (X, Y) or (X, Y, mask) arrays, a tf.data.Dataset, an ImputationValidation "
            "(from gpflow_svgpvae.imputation.hold_out_entries) or a callable model -> dict of floats; got "
            f"{type(validation_data).__name__}."
        )
    monitor = default if monitor is None else str(monitor)
    minimise = mode == "min" or (mode == "auto" and not monitor.endswith(("elbo", "reconstruction")))
    return scorer, monitor, minimise


def _scores(scorer, model) -> Dict[str, float]:
    """``scorer(model)`` as ``val_*`` logs."""
    scores = scorer(model)
    if not isinstance(scores, dict):
        raise TypeError(f"validation_data(model) must return a dict of floats; got {type(scores).__name__}.")
    return {f"val_{key}": float(value) for key, value in scores.items()}


def _monitored(logs: Dict[str, float], monitor: str) -> float:
    if monitor not in logs:
        raise ValueError(f"monitor={monitor!r} is not among the logged values {sorted(logs)}; pass one of them.")
    return logs[monitor]


def _check_not_trained_on_held_out(data, validation: ImputationValidation) -> None:
    """Refuse training data in which the validation's held-out entries are observed (the original data
    instead of the ``train_data`` of :func:`~gpflow_svgpvae.imputation.hold_out_entries`)."""
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        return
    if np.shape(data[1]) != validation.held_out.shape:
        return
    observed = _observed_layout(data)[3]
    if np.any(observed & validation.held_out):
        raise ValueError(
            "The training data observe entries that the validation holds out: train on the train_data returned "
            "by hold_out_entries (train_data, validation = hold_out_entries(data)), not on the original data."
        )


class BestWeights(tf.Module):
    r"""The best weights by a monitored validation value, kept on the device, and the early-stopping state.

    ``weights`` are copies (``tf.Variable``\ s) of the float ``model.variables``, made at the first validation
    (lazily built networks exist by then) and assigned at every improvement; ``value`` the best
    monitored value, ``epoch`` its 1-based epoch (0 before any validation), ``wait`` the validations
    since then, ``stopped`` whether patience ran out. All of it is checkpointed with the run.
    """

    def __init__(self, minimise: bool = True):
        super().__init__(name="best_weights")
        self.minimise = bool(minimise)
        self.value = tf.Variable(np.inf if minimise else -np.inf, dtype=tf.float64, trainable=False)
        self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.wait = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.stopped = tf.Variable(False, trainable=False)
        self.stopped_epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.weights: List[tf.Variable] = []

    def _ensure(self, model):
        # Every float variable: weights, GP parameters, inducing inputs, moving statistics (not the
        # integer Monte Carlo draw counter, which only orders the draws).
        variables = [v for v in model.variables if v.dtype.is_floating]
        if not self.weights:
            for variable in variables:
                # Appended one by one: a checkpoint's saved copies restore into them as they are tracked.
                self.weights.append(tf.Variable(variable, trainable=False, name="best"))
        if len(self.weights) != len(variables):
            raise ValueError(
                f"The model has {len(variables)} variables but the best weights hold {len(self.weights)}: "
                "the model changed since the best weights were kept."
            )
        return variables

    def update(self, model, value: float, epoch: int, patience: Optional[int]) -> bool:
        """Keep the weights if ``value`` improves on the best; count towards ``patience`` otherwise.
        Returns whether it improved."""
        variables = self._ensure(model)
        best = float(self.value.numpy())
        improved = bool(np.isfinite(value)) and (value < best if self.minimise else value > best)
        if improved:
            for copy, variable in zip(self.weights, variables):
                copy.assign(variable)
            self.value.assign(value)
            self.epoch.assign(epoch)
            self.wait.assign(0)
        else:
            self.wait.assign_add(1)
            if patience is not None and int(self.wait.numpy()) >= patience:
                self.stopped.assign(True)
                self.stopped_epoch.assign(epoch)
        return improved

    def restore(self, model) -> None:
        """Assign the best weights to ``model`` (nothing before the first validation)."""
        if int(self.epoch.numpy()) == 0:
            return
        for variable, copy in zip(self._ensure(model), self.weights):
            variable.assign(copy)

    def summary(self, monitor: str) -> Dict[str, object]:
        epoch = int(self.epoch.numpy())
        return {
            "monitor": monitor,
            "best_epoch": epoch if epoch > 0 else None,
            "best_value": float(self.value.numpy()) if epoch > 0 else None,
            "stopped_epoch": int(self.stopped_epoch.numpy()) if bool(self.stopped.numpy()) else None,
        }
