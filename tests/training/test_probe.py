"""The probe: bad inputs across the public API, each on tiny models with every model variable
recorded before and after the call. Every case must raise (nothing silent), leave every variable
unchanged (no error after a variable changed), and name the bad argument or array."""

import os

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_svgpvae as gv
from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.models.gpvae import GPVAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.posterior import SVGPVAEPosterior
from gpflow_svgpvae.training import GECO, restore_checkpoint, train
from tests.conftest import make_tiny_model, tiny_data

N, K, V, T = 60, 8, 4, 6


class Context:
    """Tiny models (built, so all their variables exist) and data shared by the cases."""

    def __init__(self, root):
        self.X, self.Y = tiny_data()
        self.Y01 = np.clip(self.Y, 0.0, 1.0)
        self.model = make_tiny_model()
        self.model.objective_terms((self.X[:10], self.Y[:10]), training=False)
        self.bernoulli = make_tiny_model(likelihood=gv.Bernoulli())
        self.bernoulli.objective_terms((self.X[:10], self.Y01[:10]), training=False)
        tf_keras.utils.set_random_seed(0)
        self.Xs = np.tile(np.linspace(0.0, 5.0, T)[None, :, None], (V, 1, 1))
        self.Ys = np.random.default_rng(0).normal(size=(V, T, K)).astype(np.float32)
        self.sequences = GPVAE(
            mlp_encoder(K, 2, hidden_units=(8,)),
            mlp_decoder(2, K, hidden_units=(8,)),
            gpflow.kernels.SquaredExponential(),
            gv.Gaussian(0.1),
            sequence_length=T,
        )
        self.sequences.objective_terms((self.Xs, self.Ys), training=False)
        table = ObjectVectors(5, 2, num_view_features=1, seed=0)
        self.objects = gv.SVGPVAE(
            mlp_encoder(K, 1, hidden_units=(8,)),
            mlp_decoder(1, K, hidden_units=(8,)),
            gpflow.kernels.SquaredExponential(),
            np.random.default_rng(0).normal(size=(6, 3)),
            gv.Gaussian(0.05),
            num_data=N,
            input_transform=table,
        )
        self.angles = np.linspace(0.0, 6.0, N)[:, None]
        self.ids = np.repeat(np.arange(5), 12)[:, None].astype(np.float64)
        self.objects.objective_terms((np.hstack([self.angles, self.ids])[:10], self.Y[:10]), training=False)
        self.posterior = SVGPVAEPosterior.from_data(self.model, (self.X, self.Y))
        # a checkpoint of the tiny model (m = 6, hidden 16, L = 1, Gaussian; batch 20, 3 steps per epoch)
        self.root = str(root)
        self.checkpoints = os.path.join(str(root), "run")
        train(
            make_tiny_model(),
            (self.X, self.Y01),
            epochs=1,
            batch_size=20,
            progress=False,
            checkpoint_dir=self.checkpoints,
        )
        self.models = [self.model, self.bernoulli, self.sequences, self.objects]

    def other(self, **kwargs):
        model = make_tiny_model(**kwargs)
        model.objective_terms((self.X[:10], self.Y01[:10]), training=False)
        self.models.append(model)
        return model

    def values(self):
        return [np.array(v.numpy(), copy=True) for m in self.models for v in m.variables]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    return Context(tmp_path_factory.mktemp("probe"))


def _train(c, data=None, **kwargs):
    options = dict(epochs=1, batch_size=20, progress=False)
    options.update(kwargs)
    return train(c.model if "model" not in kwargs else options.pop("model"), data or (c.X, c.Y), **options)


def _with(array, index, value):
    array = np.array(array, copy=True)
    array[index] = value
    return array


def _ones(c):
    return np.ones_like(c.Y)


CASES = []


def case(name, error, pattern, call):
    CASES.append(pytest.param(call, error, pattern, id=name))


# ------------------------------------------------------------------ train: arguments
for arg in ("epochs", "batch_size", "steps_per_epoch", "checkpoint_every", "checkpoint_every_steps"):
    for bad in (0, -3, 2.5, True, "4", None if arg == "epochs" else float("nan")):
        case(
            f"train-{arg}={bad!r}",
            (ValueError, TypeError),
            arg,
            lambda c, arg=arg, bad=bad: _train(c, **{arg: bad}),
        )
case("train-no-batch-size", ValueError, "batch_size", lambda c: _train(c, batch_size=None))
case("train-frames-on-points", ValueError, "frames_per_sequence", lambda c: _train(c, frames_per_sequence=2))
case("train-optimizer-type", TypeError, "optimi", lambda c: _train(c, optimizer="sgd-please"))
case("train-objective-type", TypeError, "objective", lambda c: _train(c, objective="elbo"))
case(
    "train-frames-dataset",
    ValueError,
    "frames_per_sequence",
    lambda c: _train(
        c, tf.data.Dataset.from_tensor_slices((c.X, c.Y)).batch(20), batch_size=None, frames_per_sequence=2
    ),
)

# ------------------------------------------------------------------ train: data
case("data-dict", TypeError, "data must be", lambda c: _train(c, {"X": c.X, "Y": c.Y}))
case("data-one-array", TypeError, "data must be", lambda c: _train(c, (c.X,)))
case("data-four-arrays", TypeError, "data must be", lambda c: _train(c, (c.X, c.Y, _ones(c), _ones(c))))
case("data-lengths", ValueError, "different lengths", lambda c: _train(c, (c.X[:50], c.Y)))
case("data-empty", ValueError, "empty", lambda c: _train(c, (c.X[:0], c.Y[:0])))
case(
    "X-nan", ValueError, r"X \(auxiliary inputs\) contains NaN", lambda c: _train(c, (_with(c.X, (4, 0), np.nan), c.Y))
)
case(
    "X-inf",
    ValueError,
    r"X \(auxiliary inputs\) contains NaN or inf",
    lambda c: _train(c, (_with(c.X, (9, 0), np.inf), c.Y)),
)
case("Y-nan", ValueError, r"Y \(observations\) contains NaN", lambda c: _train(c, (c.X, _with(c.Y, (3, 1), np.nan))))
case(
    "Y-inf",
    ValueError,
    r"Y \(observations\) contains NaN or inf",
    lambda c: _train(c, (c.X, _with(c.Y, (3, 1), -np.inf))),
)
case("X-strings", ValueError, r"X \(auxiliary inputs\) must hold numbers", lambda c: _train(c, (c.X.astype(str), c.Y)))
case("Y-strings", ValueError, r"Y \(observations\) must hold numbers", lambda c: _train(c, (c.X, c.Y.astype(str))))
case(
    "X-objects", ValueError, r"X \(auxiliary inputs\) must hold numbers", lambda c: _train(c, (c.X.astype(object), c.Y))
)
case("X-width", ValueError, "X has 2 input dimensions", lambda c: _train(c, (np.hstack([c.X, c.X]), c.Y)))
case("X-rank", ValueError, "X must have shape", lambda c: _train(c, (c.X[:, 0], c.Y)))
case("Y-width", (ValueError, tf.errors.InvalidArgumentError), r"decoder|Y", lambda c: _train(c, (c.X, c.Y[:, :5])))
case(
    "num-data-too-small",
    (ValueError, tf.errors.InvalidArgumentError),
    "num_data",
    lambda c: _train(c, (np.vstack([c.X, c.X]), np.vstack([c.Y, c.Y])), batch_size=120),
)
for name, mask, pattern in (
    ("mask-two", lambda c: _with(_ones(c), (3, 2), 2.0), "mask has values other than 0 and 1"),
    ("mask-half", lambda c: _with(_ones(c), (5, 0), 0.5), "mask has values other than 0 and 1"),
    ("mask-negative", lambda c: _with(_ones(c), (5, 0), -1.0), "mask has values other than 0 and 1"),
    ("mask-nan", lambda c: _with(_ones(c), (7, 1), np.nan), "mask contains NaN"),
    ("mask-width", lambda c: _ones(c)[:, :5], "mask must have Y's shape"),
    ("mask-length", lambda c: _ones(c)[:50], "different lengths"),
    ("mask-strings", lambda c: _ones(c).astype(str), r"mask .*must hold numbers"),
):
    case(f"train-{name}", ValueError, pattern, lambda c, mask=mask: _train(c, (c.X, c.Y, mask(c))))
    case(
        f"validation-{name}",
        ValueError,
        pattern,
        lambda c, mask=mask: _train(c, validation_data=(c.X, c.Y, mask(c))),
    )
case("validation-lengths", ValueError, "different lengths", lambda c: _train(c, validation_data=(c.X[:10], c.Y)))
case(
    "validation-Y-nan",
    ValueError,
    r"Y \(observations\) contains NaN",
    lambda c: _train(c, validation_data=(c.X, _with(c.Y, (0, 0), np.nan))),
)
case(
    "validation-X-strings",
    ValueError,
    r"X \(auxiliary inputs\) must hold numbers",
    lambda c: _train(c, validation_data=(c.X.astype(str), c.Y)),
)
case(
    "bernoulli-255",
    ValueError,
    r"outside \[0, 1\].*Y / 255",
    lambda c: _train(c, (c.X, np.round(c.Y01 * 255).astype(np.uint8)), model=c.bernoulli),
)
case(
    "bernoulli-negative",
    ValueError,
    r"Y has values outside \[0, 1\]",
    lambda c: _train(c, (c.X, c.Y), model=c.bernoulli),
)
case(
    "bernoulli-validation",
    ValueError,
    r"Y has values outside \[0, 1\]",
    lambda c: _train(c, (c.X, c.Y01), validation_data=(c.X, c.Y01 * 2), model=c.bernoulli),
)

# ------------------------------------------------------------------ train: non-finite steps (the guard)
case(
    "Y-1e30",
    tf.errors.InvalidArgumentError,
    "made no update.*gradients of the decoder",
    lambda c: _train(c, (c.X, _with(c.Y, (7, 3), 1e30)), batch_size=60),
)
case(
    "Y-1e30-geco",
    tf.errors.InvalidArgumentError,
    "made no update",
    lambda c: _train(c, (c.X, _with(c.Y, (7, 3), 1e30)), batch_size=60, objective=GECO(0.02)),
)
case(
    "Y-1e30-keras",
    tf.errors.InvalidArgumentError,
    "made no update.*gradients of the decoder",
    lambda c: _fit(c, (c.X, _with(c.Y, (7, 3), 1e30))),
)

# ------------------------------------------------------------------ sequences
case(
    "seq-ragged-train",
    ValueError,
    r"X is a list of 2 parts.*frame mask",
    lambda c: train(
        c.sequences, ([c.Xs[0], c.Xs[1][:4]], [c.Ys[0], c.Ys[1][:4]]), epochs=1, batch_size=2, progress=False
    ),
)
case(
    "seq-ragged-elbo",
    ValueError,
    r"X is a list of 2 parts.*frame mask",
    lambda c: c.sequences.elbo(([c.Xs[0], c.Xs[1][:4]], [c.Ys[0], c.Ys[1][:4]])),
)
case(
    "seq-frame-mask-width",
    ValueError,
    "mask must have Y's shape",
    lambda c: train(c.sequences, (c.Xs, c.Ys, np.ones((V, T + 1))), epochs=1, batch_size=2, progress=False),
)
case(
    "seq-query-other-V",
    ValueError,
    r"Xnew has 2 sequences but data has 4",
    lambda c: c.sequences.predict_f(c.Xs[:2], (c.Xs, c.Ys)),
)
case(
    "seq-query-other-V-y",
    ValueError,
    r"Xnew has 3 sequences but data has 4",
    lambda c: c.sequences.predict_y(c.Xs[:3], (c.Xs, c.Ys)),
)
case(
    "seq-query-width",
    ValueError,
    r"Xnew has 2 input dimensions",
    lambda c: c.sequences.predict_f(np.concatenate([c.Xs, c.Xs], -1), (c.Xs, c.Ys)),
)
case(
    "seq-too-many-frames",
    (ValueError, tf.errors.InvalidArgumentError),
    "sequence_length",
    lambda c: train(
        c.sequences, (np.tile(c.Xs, (1, 2, 1)), np.tile(c.Ys, (1, 2, 1))), epochs=1, batch_size=2, progress=False
    ),
)
case(
    "seq-frames-too-many",
    ValueError,
    "frames_per_sequence",
    lambda c: train(c.sequences, (c.Xs, c.Ys), epochs=1, batch_size=2, progress=False, frames_per_sequence=T + 1),
)

# ------------------------------------------------------------------ object vectors
case(
    "objects-forgotten-id-column",
    ValueError,
    r"X \(raw auxiliary inputs\).*id column",
    lambda c: train(c.objects, (c.angles, c.Y), epochs=1, batch_size=20, progress=False),
)
case(
    "objects-id-out-of-range",
    ValueError,
    r"object ids must be in \[0, 5\)",
    lambda c: train(c.objects, (np.hstack([c.angles, c.ids + 3]), c.Y), epochs=1, batch_size=20, progress=False),
)
case(
    "objects-id-fractional",
    ValueError,
    r"object ids must be integral.*column",
    lambda c: train(c.objects, (np.hstack([c.angles, c.ids + 0.5]), c.Y), epochs=1, batch_size=20, progress=False),
)
case(
    "objects-id-negative",
    ValueError,
    r"object ids must be in \[0, 5\)",
    lambda c: train(c.objects, (np.hstack([c.angles, -c.ids - 1]), c.Y), epochs=1, batch_size=20, progress=False),
)


# ------------------------------------------------------------------ evaluation and predictions
def _nan_decoder_elbo(c):
    model = c.other()
    model.decoder.layers[-1].bias.assign(np.full([K], np.nan, np.float32))
    c.models[-1] = model  # compared from now on: the NaN is set, nothing after may change
    c._snapshot = c.values()
    return model.elbo((c.X[:20], c.Y[:20]))


case("elbo-dict", TypeError, "data must be", lambda c: c.model.elbo({"X": c.X}))
case(
    "elbo-Y-strings",
    ValueError,
    r"Y \(observations\) must hold numbers",
    lambda c: c.model.elbo((c.X, c.Y.astype(str))),
)
case(
    "elbo-X-nan",
    tf.errors.InvalidArgumentError,
    r"X \(auxiliary inputs\) contains NaN",
    lambda c: c.model.elbo((_with(c.X, (0, 0), np.nan), c.Y)),
)
case("elbo-empty", ValueError, "empty", lambda c: c.model.elbo((c.X[:0], c.Y[:0])))
case("elbo-lengths", ValueError, "different batch sizes", lambda c: c.model.elbo((c.X[:10], c.Y[:11])))
for bad in (0, -1, 2.5, True):
    case(
        f"posterior-batch_size={bad!r}",
        ValueError,
        "batch_size",
        lambda c, bad=bad: SVGPVAEPosterior.from_data(c.model, (c.X, c.Y), batch_size=bad),
    )
    case(
        f"predict_y-num_samples={bad!r}",
        ValueError,
        "num_samples",
        lambda c, bad=bad: c.posterior.predict_y(c.X[:5], num_samples=bad),
    )
    case(
        f"encode_all-batch_size={bad!r}",
        ValueError,
        "batch_size",
        lambda c, bad=bad: c.model.encode_all(c.Y, batch_size=bad),
    )
    case(
        f"model.posterior-batch_size={bad!r}",
        ValueError,
        "batch_size",
        lambda c, bad=bad: c.model.posterior((c.X, c.Y), batch_size=bad),
    )
case("predict_f-no-data", ValueError, "data", lambda c: c.model.predict_f(c.X[:5]))
case(
    "predict_f-Xnew-width",
    ValueError,
    r"Xnew|input dimensions|width",
    lambda c: c.posterior.predict_f(np.hstack([c.X, c.X])[:5]),
)
case(
    "predict_y-Xnew-strings",
    ValueError,
    r"must hold numbers|Xnew",
    lambda c: c.posterior.predict_y(c.X[:5].astype(str)),
)
case(
    "impute-dataset",
    TypeError,
    "impute takes arrays",
    lambda c: c.model.impute(tf.data.Dataset.from_tensor_slices((c.X, c.Y))),
)


def _nan_encoder_elbo(c):
    model = c.other()
    for v in model.encoder.trainable_variables:
        v.assign(np.full(v.shape, np.nan, v.dtype.as_numpy_dtype))
    c._snapshot = c.values()
    return model.elbo((c.X[:20], c.Y[:20]))


def _export_and_call(c, width):
    path = os.path.join(c.root, f"exported_{width}")
    if not os.path.exists(path):
        c.posterior.export(path)
    loaded = tf.saved_model.load(path)
    return loaded.signatures["predict_f"](Xnew=tf.zeros((3, width), tf.float64))


case("encoder-nan-elbo", tf.errors.InvalidArgumentError, "The encoder returned non-finite means", _nan_encoder_elbo)
case(
    "export-signature-width",
    tf.errors.InvalidArgumentError,
    r"Xnew \(query inputs\) must be float64 \[n, 1\]",
    lambda c: _export_and_call(c, 2),
)
case("decoder-nan-elbo", tf.errors.InvalidArgumentError, "The decoder returned non-finite values", _nan_decoder_elbo)


# ------------------------------------------------------------------ construction
def _svgpvae(c, Z=None, encoder_L=1, decoder_L=1, **kwargs):
    Z = np.linspace(0.0, 10.0, 6)[:, None] if Z is None else Z
    return gv.SVGPVAE(
        mlp_encoder(K, encoder_L, hidden_units=(8,)),
        mlp_decoder(decoder_L, K, hidden_units=(8,)),
        gpflow.kernels.SquaredExponential(),
        Z,
        kwargs.pop("likelihood", gv.Gaussian(0.05)),
        **kwargs,
    )


case(
    "Z-nan",
    ValueError,
    r"inducing inputs \(inducing_variable\) contain NaN or inf.*row 2",
    lambda c: _svgpvae(c, Z=_with(np.linspace(0, 10, 6)[:, None], (2, 0), np.nan), num_data=N),
)
case(
    "Z-inf",
    ValueError,
    r"inducing inputs \(inducing_variable\) contain NaN or inf.*row 4",
    lambda c: _svgpvae(c, Z=_with(np.linspace(0, 10, 6)[:, None], (4, 0), np.inf), num_data=N),
)
case(
    "Z-rank",
    ValueError,
    r"inducing inputs \(inducing_variable\) must have shape",
    lambda c: _svgpvae(c, Z=np.linspace(0, 10, 6), num_data=N),
)
case(
    "Z-strings",
    ValueError,
    r"inducing inputs \(inducing_variable\) must be numbers",
    lambda c: _svgpvae(c, Z=np.array([["a"], ["b"]]), num_data=N),
)
case(
    "latent-width-mismatch",
    ValueError,
    r"decoder takes inputs of width 1.*L = 2",
    lambda c: _svgpvae(c, encoder_L=2, decoder_L=1, num_data=N),
)
for arg in ("num_data", "num_samples"):
    for bad in (0, -2, 1.5):
        case(f"model-{arg}={bad!r}", ValueError, arg, lambda c, arg=arg, bad=bad: _svgpvae(c, **{arg: bad}))
case("model-missing_values", ValueError, "missing_values", lambda c: _svgpvae(c, num_data=N, missing_values="zero"))
case(
    "model-likelihood-name",
    (ValueError, TypeError),
    "likelihood",
    lambda c: _svgpvae(c, num_data=N, likelihood="poisson"),
)
case(
    "sequence_length=0",
    ValueError,
    "sequence_length",
    lambda c: GPVAE(mlp_encoder(K, 2), mlp_decoder(2, K), gpflow.kernels.SquaredExponential(), sequence_length=0),
)


# ------------------------------------------------------------------ Keras view
def _fit(c, data, **kwargs):
    view = c.model.as_training_model()
    view.compile(tf_keras.optimizers.Adam(1e-2), **kwargs)
    return view.fit(data, batch_size=60, epochs=1, verbose=0)


case(
    "fit-mask-two",
    ValueError,
    "mask has values other than 0 and 1",
    lambda c: _fit(c, (c.X, c.Y, _with(_ones(c), (3, 2), 2.0))),
)
case("fit-mask-width", ValueError, "mask must have Y's shape", lambda c: _fit(c, (c.X, c.Y, _ones(c)[:, :5])))
case("fit-Y-nan", ValueError, r"Y \(observations\) contains NaN", lambda c: _fit(c, (c.X, _with(c.Y, (1, 1), np.nan))))
case(
    "fit-X-strings", ValueError, r"X \(auxiliary inputs\) must hold numbers", lambda c: _fit(c, (c.X.astype(str), c.Y))
)
case(
    "fit-validation-mask",
    ValueError,
    "mask has values other than 0 and 1",
    lambda c: c.model.as_training_model().fit((c.X, c.Y), validation_data=(c.X, c.Y, _with(_ones(c), (0, 0), 3.0))),
)
case("compile-loss", ValueError, "do not pass `loss`", lambda c: _fit(c, (c.X, c.Y), loss="mse"))


# ------------------------------------------------------------------ checkpoints
def _resume(c, **kwargs):
    options = dict(epochs=2, batch_size=20, progress=False, checkpoint_dir=c.checkpoints)
    model = c.other(
        **{k: kwargs.pop(k) for k in list(kwargs) if k in ("num_inducing", "hidden", "num_latent_gps", "likelihood")}
    )
    c._snapshot = c.values()
    options.update(kwargs)
    return train(model, (c.X, c.Y01), **options)


def _restore(c, **kwargs):
    model = c.other(**kwargs)
    c._snapshot = c.values()
    return restore_checkpoint(c.checkpoints, model=model)


for name, kwargs, pattern in (
    ("m", dict(num_inducing=10), "inducing inputs: checkpoint has 6, model has 10"),
    ("width", dict(hidden=(32,)), r"encoder layer '[^']+': width 16 in the checkpoint, 32 in the model"),
    ("L", dict(num_latent_gps=2), r"L \(latent channels"),
    ("likelihood", dict(likelihood=gv.Bernoulli()), "likelihood is Bernoulli"),
):
    case(f"resume-other-{name}", ValueError, pattern, lambda c, kwargs=kwargs: _resume(c, **dict(kwargs)))
    case(f"restore-other-{name}", ValueError, pattern, lambda c, kwargs=kwargs: _restore(c, **dict(kwargs)))
case(
    "resume-batch_size",
    ValueError,
    r"batch_size: the checkpoint's run used batch_size=20",
    lambda c: _resume(c, batch_size=30),
)
case(
    "resume-steps_per_epoch",
    ValueError,
    r"steps_per_epoch: the checkpoint's run used 3",
    lambda c: _resume(c, steps_per_epoch=2),
)
case(
    "restore-missing",
    ValueError,
    "No checkpoint",
    lambda c: restore_checkpoint(c.checkpoints + "_nowhere", model=c.model),
)


@pytest.mark.parametrize("call, error, pattern", CASES)
def test_bad_input_raises_naming_it_and_changes_nothing(ctx, call, error, pattern):
    ctx._snapshot = None
    del ctx.models[4:]  # models built by earlier cases
    before = ctx.values()
    with pytest.raises(error) as info:
        call(ctx)
    message = str(info.value)
    import re

    assert re.search(pattern, message, re.S), message[:2000]
    before = ctx._snapshot if ctx._snapshot is not None else before
    after = ctx.values()
    assert len(after) == len(before)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


def test_the_probe_is_large():
    assert len(CASES) >= 100
