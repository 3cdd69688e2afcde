"""Pieces shared by the benchmark tasks; imported only inside a child process of ``run.py``.

Nothing here changes package code: models are built with the package's public
constructors (the rotated-MNIST experiment's ``build_model`` for the SVGP-VAE)
and trained with the package's own :func:`~gpflow_svgpvae.training.step.training_step`,
wrapped in ``tf.function`` exactly as :func:`~gpflow_svgpvae.training.train` wraps it.
"""

import os
import re
import resource
import time
from typing import Dict, List, Optional

import numpy as np


# ------------------------------------------------------------------- memory
def _status_kb(field: str) -> float:
    with open("/proc/self/status") as f:
        match = re.search(rf"^{field}:\s+(\d+)\s+kB", f.read(), re.M)
    return float(match.group(1)) if match else float("nan")


def rss_mb() -> float:
    """Current resident set size (MB)."""
    return _status_kb("VmRSS") / 1024.0


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter (``VmHWM``) of this process (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """Peak RSS since the last :func:`reset_peak_rss` (or since the start), MB."""
    hwm = _status_kb("VmHWM")
    if np.isfinite(hwm):
        return hwm / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --------------------------------------------------------------------- data
ANGLES = 2 * np.pi * np.arange(16) / 16


def rotated_mnist_data(cache_dir: Optional[str]):
    """The real rotated-MNIST training set (digit 3, N = 4050) with the pieces the
    models need, cached as ``.npz`` (the rotation takes ~10 s)."""
    path = os.path.join(cache_dir, "rotated_mnist_3.npz") if cache_dir else None
    if path and os.path.exists(path):
        z = np.load(path)
        return dict(X=z["X"], Y=z["Y"], unrotated=z["unrotated"], num_objects=int(z["num_objects"]))
    from svgpvae_paper.experiments.rotated_mnist import Config, load_data

    data = load_data(Config())
    out = dict(X=data.X_train, Y=data.Y_train, unrotated=np.asarray(data.ds.unrotated), num_objects=data.num_objects)
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        np.savez(path, **out)
    return out


def synthetic_data(N: int, seed: int = 0):
    """``N`` random 28x28 images with rotated-MNIST-like auxiliary inputs
    ``[angle, object id]``: ``N / 11.25`` objects (as 360 digits give 4050
    images), 15 of 16 angles, at most one image per (object, angle)."""
    rng = np.random.default_rng(seed)
    P = int(np.ceil(N / 11.25))
    pairs = rng.choice(P * 15, size=N, replace=False)
    ids, angle_idx = pairs // 15, pairs % 15
    angle_idx = np.where(angle_idx >= 5, angle_idx + 1, angle_idx)  # angle 5 is the held-out one
    X = np.stack([ANGLES[angle_idx], ids.astype(np.float64)], axis=1)
    Y = rng.random((N, 28, 28, 1), dtype=np.float32)
    unrotated = rng.random((P, 28 * 28))
    return dict(X=X, Y=Y, unrotated=unrotated, num_objects=P)


# ------------------------------------------------------------------- models
def build(
    kind: str,
    data: Dict,
    *,
    L: int = 16,
    m: int = 32,
    Q: int = 8,
    seed: int = 0,
    likelihood=None,
    d2s: bool = False,
    check_ids_in_graph: bool = True,
    keras_decoder: bool = False,
):
    """``svgpvae`` (the rotated-MNIST SVGP-VAE with GP-LVM object vectors),
    ``vae`` (the package's plain VAE with the same conv networks) or ``gppvae``;
    ``d2s`` swaps the decoder's upsampling for :func:`depth_to_space_decoder`'s;
    ``keras_decoder`` builds the decoder from plain Keras layers (``RepeatUpsampling2D`` +
    ``Conv2D``, the package's default before its fused layers; same function and weights);
    ``check_ids_in_graph=False``: the object ids of ``data`` are checked once here
    and the ``ObjectVectors`` lookup has no per-step assertion.

    Networks are built right after ``set_random_seed(seed)`` in the same order
    (encoder, decoder), so the three models start from identical network weights.
    """
    import gpflow
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.auxiliary import ObjectVectors, init_inducing_per_view, pca_object_vectors
    from gpflow_svgpvae.kernels import periodic_linear_kernel
    from gpflow_svgpvae.models.gppvae import GPPVAE
    from gpflow_svgpvae.models.svgpvae import SVGPVAE
    from gpflow_svgpvae.models.vae import VAE
    from gpflow_svgpvae.networks.conv import conv_decoder, conv_encoder

    N = len(data["X"])
    likelihood = likelihood if likelihood is not None else "gaussian"
    tf_keras.utils.set_random_seed(int(seed))
    encoder = conv_encoder(L)
    decoder = conv_decoder(L, upsampling="repeat", output_layer="conv") if keras_decoder else conv_decoder(L)
    if d2s:
        decoder = depth_to_space_decoder(L, like=decoder)
    if kind == "vae":
        return VAE(encoder, decoder, likelihood, sequence_length=N, seed=seed)
    vectors = pca_object_vectors(data["unrotated"], Q)
    table = ObjectVectors(
        data["num_objects"],
        Q,
        id_column=-1,
        num_view_features=1,
        initial_vectors=vectors,
        check_ids_in_graph=check_ids_in_graph,
    )
    table.check_inputs(data["X"])
    if kind == "svgpvae":
        if m % 16:
            raise ValueError("m must be a multiple of the 16 angles")
        kernel = periodic_linear_kernel(angle_dims=[0], object_dims=list(range(1, 1 + Q)))
        Z = init_inducing_per_view(ANGLES, m // 16, vectors, seed=seed)
        return SVGPVAE(
            encoder, decoder, kernel, Z, likelihood, num_data=N, num_latent_gps=L, seed=seed, input_transform=table
        )
    if kind == "gppvae":
        view_kernel = gpflow.kernels.Periodic(gpflow.kernels.SquaredExponential(), period=2 * np.pi)
        gpflow.set_trainable(view_kernel.period, False)
        return GPPVAE(encoder, decoder, view_kernel, ANGLES, table, likelihood, num_data=N, num_latent_gps=L, seed=seed)
    raise ValueError(kind)


def depth_to_space_decoder(num_latent: int, like=None):
    """The package's ``conv_decoder`` architecture (dense 7x7x8, [x2 upsampling, 3x3
    conv 8, ELU] x 2, 3x3 conv 1, sigmoid) with the nearest-neighbour upsampling
    computed as ``depth_to_space(tile(x, 4 channels))`` instead of
    :class:`~gpflow_svgpvae.networks.conv.RepeatUpsampling2D` (broadcast + reshape).
    The same function (checked against ``like``, whose weights it copies); both
    compile under XLA."""
    import tensorflow as tf
    from gpflow.keras import tf_keras

    z = tf_keras.Input(shape=(int(num_latent),))
    h = tf_keras.layers.Dense(7 * 7 * 8, activation="elu", name="dense")(z)
    h = tf_keras.layers.Reshape((7, 7, 8))(h)
    for i in range(2):
        h = tf_keras.layers.Lambda(lambda x: tf.nn.depth_to_space(tf.tile(x, [1, 1, 1, 4]), 2), name=f"upsample{i}")(h)
        h = tf_keras.layers.Conv2D(8, 3, padding="same", activation="elu", name=f"conv{i}")(h)
    out = tf_keras.layers.Conv2D(1, 3, padding="same", activation="sigmoid", name="output")(h)
    model = tf_keras.Model(z, out, name="d2s_decoder")
    if like is not None:
        model.set_weights(like.get_weights())
        probe = np.random.default_rng(0).standard_normal((4, int(num_latent))).astype(np.float32)
        if not np.allclose(model(probe).numpy(), like(probe).numpy(), atol=1e-5):
            raise AssertionError("depth_to_space decoder differs from the package's decoder")
    return model


def float32_gaussian(variance: float = 1.0):
    """A Gaussian decoder likelihood whose log density is evaluated in float32
    (the package's evaluates it in float64); used to measure what that costs."""
    import tensorflow as tf

    from gpflow_svgpvae.likelihoods import Gaussian

    class Float32Gaussian(Gaussian):
        def log_prob(self, Y, params):
            Y = tf.reshape(tf.cast(Y, tf.float32), [tf.shape(Y)[0], -1])
            params = tf.reshape(tf.cast(params, tf.float32), [tf.shape(params)[0], -1])
            var = tf.cast(self.variance, tf.float32)
            lp = -0.5 * (np.log(2 * np.pi) + tf.math.log(var) + tf.square(Y - params) / var)
            return tf.cast(tf.reduce_sum(lp, axis=-1), tf.float64)

    return Float32Gaussian(variance)


def dataset(
    data: Dict, batch_size: int, *, video: bool = False, prefetch: bool = True, seed: int = 0, shuffle: bool = True
):
    """Shuffled batches as :func:`gpflow_svgpvae.training.make_dataset` makes them (prefetching
    optional); ``video=True`` adds the leading video axis the package's VAE expects
    (``[1, b, ...]``: one "video" of ``b`` independent frames, ``num_data = N``)."""
    import tensorflow as tf

    X, Y = data["X"], data["Y"]
    ds = tf.data.Dataset.from_tensor_slices((X, Y))
    if shuffle:
        ds = ds.shuffle(len(X), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(int(batch_size))
    if video:
        ds = ds.map(lambda x, y: (x[None], y[None]))
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    return ds


# ------------------------------------------------------------------- timing
class Stepper:
    """The package's training step in a ``tf.function`` (XLA optional), fed from one
    repeated-dataset iterator, as in :func:`gpflow_svgpvae.training.train`.

    ``epoch()`` runs one pass (``steps_per_epoch`` steps) and returns its wall
    time; the loss of the last step is read back, so all work is finished.
    """

    def __init__(
        self,
        model,
        ds,
        *,
        jit: bool = False,
        objective=None,
        lr: float = 1e-3,
        checks: Optional[bool] = None,
        after_epoch=None,
        step_function=None,
    ):
        import tensorflow as tf
        from gpflow.keras import tf_keras

        from gpflow_svgpvae.training.objectives import as_objective
        from gpflow_svgpvae.training.step import training_step

        self.model = model
        self.objective = as_objective(objective)
        self.optimizer = tf_keras.optimizers.Adam(lr)
        self.steps_per_epoch = int(ds.cardinality().numpy())
        self.iterator = iter(ds.repeat())
        self.jit = bool(jit)
        # As the loop: runtime checks are off while an XLA step is traced.
        self.checks = (not self.jit) if checks is None else bool(checks)
        self.after_epoch = after_epoch
        self.cpu_times: List[float] = []
        step_function = training_step if step_function is None else step_function
        self._step = tf.function(
            lambda batch: step_function(self.model, self.objective, self.optimizer, batch), jit_compile=self.jit
        )

    def steps(self, n: int) -> float:
        from gpflow_svgpvae import numerics

        previous = numerics.numerical_checks()
        numerics.set_numerical_checks(self.checks)
        try:
            logs = None
            for _ in range(int(n)):
                logs = self._step(next(self.iterator))
            loss = float(logs["loss"].numpy())
        finally:
            numerics.set_numerical_checks(previous)
        if not np.isfinite(loss):
            raise FloatingPointError("non-finite loss in a benchmark run")
        return loss

    def epoch(self) -> float:
        """Wall time of one epoch; its CPU time (all threads) is appended to ``cpu_times``."""
        t, c = time.perf_counter(), time.process_time()
        self.steps(self.steps_per_epoch)
        if self.after_epoch is not None:
            self.after_epoch()
        self.cpu_times.append(time.process_time() - c)
        return time.perf_counter() - t

    def timed_steps(self, n: int):
        """``(wall, cpu)`` seconds of ``n`` steps."""
        t, c = time.perf_counter(), time.process_time()
        self.steps(n)
        return time.perf_counter() - t, time.process_time() - c


def unguarded_training_step(model, objective, optimizer, batch):
    """The package's training step without its guard (the finiteness flags and the ``tf.cond``
    around the update): the reference of the ``guard`` benchmark, never for training."""
    import tensorflow as tf

    from gpflow_svgpvae.training.step import _logs, _split_batch

    data, Y = _split_batch(model, batch)
    with tf.GradientTape() as tape:
        terms = model.objective_terms(data, training=True)
        loss, extra = objective.loss(terms, Y)
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    with tf.control_dependencies([loss]):
        optimizer.apply_gradients(pairs)
        objective.after_step()
    logs, _ = _logs(loss, terms, extra)
    return logs


def alternate(steppers: Dict[str, "Stepper"], rounds: int, warmup: int = 1) -> Dict[str, List[float]]:
    """Per-epoch wall times of several models, epochs interleaved (order reversed
    every round: ABBA...), after ``warmup`` untimed epochs each (tracing/compilation).
    CPU times of the same epochs are returned under ``"<name>_cpu"``."""
    times = {k: [] for k in steppers}
    for _ in range(int(warmup)):
        for s in steppers.values():
            s.epoch()
    start = {k: len(s.cpu_times) for k, s in steppers.items()}
    names = list(steppers)
    for r in range(int(rounds)):
        order = names if r % 2 == 0 else names[::-1]
        for k in order:
            times[k].append(steppers[k].epoch())
    for k, s in steppers.items():
        times[f"{k}_cpu"] = s.cpu_times[start[k] :]
    return times


GP_STAGES = ("kernels", "statistics", "factorisation", "kl", "predictive")


def gp_block_timer(model, data: Dict, batch_size: int, jit: bool = False, stage: int = 4, gradients: bool = True):
    """A ``tf.function`` running only the SVGP-VAE's GP block on one batch (forward, and
    backward with ``gradients``), from fixed encoder outputs (variables) instead of
    the encoder, up to stage ``stage`` of :data:`GP_STAGES`: 0 mapped inputs (object
    vectors), Kmm, its Cholesky and Kmb; 1 the statistics P, r; 2 the factorisation
    of B and the whitened mean; 3 the KL; 4 the predictive marginals (the whole block).

    Returns ``(timer, num_ops)``; ``timer(n)`` returns ``(wall, cpu)`` seconds per
    call, each the best of 5 blocks of ``n`` calls (the minimum, and CPU time, are
    robust to other load on the machine).
    """
    import tensorflow as tf

    from gpflow_svgpvae import amortized

    b = int(batch_size)
    X, means, raw, variables = _block_inputs(model, data, b)

    def forward():
        Xm = model.map_inputs(X)
        variances = tf.nn.softplus(raw) + 1e-4
        chol = amortized.prior_cholesky(model.kernel, model.inducing_variable, model.jitter)
        Kmb = amortized.cross_covariance(model.kernel, model.inducing_variable, Xm)
        loss = tf.reduce_sum(chol) + tf.reduce_sum(Kmb) + tf.reduce_sum(variances)
        if stage >= 1:
            P, r = amortized.whitened_statistics(chol, Kmb, means, variances)
            loss += tf.reduce_sum(P) + tf.reduce_sum(r)
        if stage >= 2:
            post = amortized.posterior_from_statistics(chol, P, r, model.num_data / b)
            loss += tf.reduce_sum(post.whitened_mean) + tf.reduce_sum(post.upper_chol)
        if stage >= 3:
            loss += tf.reduce_sum(amortized.prior_kl(post))
        if stage >= 4:
            mu, var = amortized.predict_marginals(post, Kmb, amortized.prior_variance_diag(model.kernel, Xm))
            loss += tf.reduce_sum(mu) + tf.reduce_sum(var)
        return loss

    return _block_timer(tf.function(_with_gradients(forward, variables, gradients), jit_compile=bool(jit)))


def _with_gradients(forward, variables, gradients: bool):
    """``forward() -> loss`` as a block returning ``(loss, gradients wrt variables or [])``."""
    import tensorflow as tf

    def block():
        with tf.GradientTape() as tape:
            loss = forward()
        return (loss, tape.gradient(loss, variables)) if gradients else (loss, [])

    return block


def _block_inputs(model, data: Dict, b: int):
    """The first ``b`` raw inputs, fixed encoder means and raw variances (variables, seeded), and
    every variable the GP block differentiates."""
    import gpflow
    import tensorflow as tf

    rng = np.random.default_rng(0)
    L = model.num_latent_gps
    X = tf.constant(data["X"][:b])
    means = tf.Variable(rng.standard_normal((b, L)), dtype=gpflow.default_float())
    raw = tf.Variable(rng.standard_normal((b, L)), dtype=gpflow.default_float())
    variables = (
        list(model.kernel.trainable_variables)
        + list(model.inducing_variable.trainable_variables)
        + list(model.input_transform.trainable_variables)
        + [means, raw]
    )
    return X, means, raw, variables


def gp_step_timer(model, data: Dict, batch_size: int, jit: bool = False, gradients: bool = True):
    """Like :func:`gp_block_timer`, but the block is exactly what a training step runs:
    ``model.map_inputs`` (the object-vector lookup) and
    :func:`gpflow_svgpvae.amortized.minibatch_posterior` (statistics -> posterior -> KL
    -> predictive, ``W`` shared), forward and backward, from fixed encoder outputs.
    Returns ``(timer, num_ops)`` as :func:`gp_block_timer`."""
    import tensorflow as tf

    from gpflow_svgpvae import amortized

    b = int(batch_size)
    X, means, raw, variables = _block_inputs(model, data, b)

    def forward():
        Xm = model.map_inputs(X)
        variances = tf.nn.softplus(raw) + 1e-4
        out = amortized.minibatch_posterior(
            model.kernel, model.inducing_variable, Xm, means, variances, model.num_data, model.jitter
        )
        return tf.reduce_sum(out.mean) + tf.reduce_sum(out.variance) + tf.reduce_sum(out.kl)

    block = _with_gradients(forward, variables, gradients)

    return _block_timer(tf.function(block, jit_compile=bool(jit)))


def layer_timers(network, batch_size: int, seed: int = 0):
    """One timer per layer of the Keras functional ``network`` (input layers skipped): the layer's
    forward pass and its gradient with respect to its input and its weights, on a fixed random input
    of the layer's shape with ``batch_size`` rows, against a fixed random cotangent (so the backward
    pass does the work of training). Returns ``[(name, timer, num_ops, flops, activation_bytes)]``;
    ``timer`` as :func:`_block_timer`'s, ``flops`` forward + backward from the graph's shapes,
    ``activation_bytes`` the float32 bytes of the layer's input and output(s)."""
    import tensorflow as tf
    from gpflow.keras import tf_keras

    rng = np.random.default_rng(seed)
    out = []
    for layer in network.layers:
        if isinstance(layer, tf_keras.layers.InputLayer):
            continue
        shapes = layer.input_shape if isinstance(layer.input_shape, list) else [layer.input_shape]
        inputs = [tf.constant(rng.standard_normal((batch_size,) + tuple(s[1:])), tf.float32) for s in shapes]
        arg = inputs if len(inputs) > 1 else inputs[0]
        outputs = tf.nest.flatten(layer(arg))
        cotangents = [tf.constant(rng.standard_normal(o.shape), o.dtype) for o in outputs]
        variables = list(layer.trainable_variables)

        def block(layer=layer, arg=arg, inputs=inputs, cotangents=cotangents, variables=variables):
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                ys = tf.nest.flatten(layer(arg))
                loss = tf.add_n([tf.reduce_sum(y * c) for y, c in zip(ys, cotangents)])
            return loss, tape.gradient(loss, inputs + variables)

        fn = tf.function(block)
        timer, num_ops = _block_timer(fn)
        nbytes = 4 * (sum(int(np.prod(x.shape)) for x in inputs) + sum(int(np.prod(o.shape)) for o in outputs))
        out.append((layer.name, timer, num_ops, graph_flops(fn), nbytes))
    return out


def elementwise_gbps(megabytes: int = 64, calls: int = 20, repeats: int = 5) -> float:
    """GB per CPU second moved by an elementwise float32 op (``x * c + d``: one read, one write)
    on an array of ``megabytes``; a memory-bandwidth probe at TensorFlow's default threads."""
    import tensorflow as tf

    n = int(megabytes) * 2**20 // 4
    x = tf.constant(np.random.default_rng(0).standard_normal(n), tf.float32)

    @tf.function
    def loop():
        total = tf.zeros((), tf.float32)
        for i in tf.range(calls):
            total += (x * tf.cast(i + 1, tf.float32) + 1.0)[-1]  # the whole array is computed
        return total

    return 2.0 * n * 4 / _best_cpu_seconds(loop, calls, repeats) / 1e9


def graph_flops(fn) -> float:
    """Floating-point operations of one call of the ``tf.function`` ``fn`` (no arguments), as
    TensorFlow's profiler counts them from the graph's shapes (matrix products, triangular
    solves, elementwise arithmetic)."""
    import tensorflow as tf

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    return float(tf.compat.v1.profiler.profile(fn.get_concrete_function().graph, options=options).total_float_ops)


def gemm_gflops(shape_a, shape_b, dtype: str = "float64", calls: int = 100, repeats: int = 5) -> float:
    """GFLOP per CPU second of ``tf.matmul`` of fixed ``[m, k] x [k, n]`` operands in ``dtype`` on this
    CPU (process time, all threads; best of ``repeats`` blocks of ``calls`` products in one compiled
    loop)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    A = tf.constant(rng.standard_normal(shape_a), dtype)
    Bm = tf.constant(rng.standard_normal(shape_b), dtype)

    @tf.function
    def loop():
        total = tf.zeros((), dtype)
        for _ in tf.range(calls):
            total += tf.linalg.matmul(A, Bm)[0, 0]  # every product is computed in full
        return total

    flops = 2.0 * float(np.prod(shape_a)) * shape_b[-1]
    return flops / _best_cpu_seconds(loop, calls, repeats) / 1e9


def _best_cpu_seconds(loop, calls: int, repeats: int) -> float:
    """CPU seconds per call of the compiled ``loop`` of ``calls`` calls (traced first), best of ``repeats``."""
    loop()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        loop().numpy()
        best = min(best, (time.process_time() - start) / calls)
    return best


def time_alternately(records: List[Dict], timers: List, rounds: int, calls: int):
    """``rounds`` rounds of every timer in turn (so a drift of the machine's speed hits all alike),
    each a :func:`_block_timer` timing of ``calls`` calls; appends the ms per call to each record's
    ``cpu_ms`` and ``wall_ms`` lists."""
    for _ in range(int(rounds)):
        for record, timer in zip(records, timers):
            wall, cpu = timer(int(calls))
            record["cpu_ms"].append(1000 * cpu)
            record["wall_ms"].append(1000 * wall)


def _block_timer(fn, repeats: int = 5):
    num_ops = len(fn.get_concrete_function().graph.get_operations())

    def timer(n: int):
        """``(wall, cpu)`` seconds per call, each the best of ``repeats`` blocks of ``n`` calls;
        every block's CPU time per call is kept in ``timer.cpu_blocks``."""
        fn()  # trace / compile
        best, best_cpu = float("inf"), float("inf")
        timer.cpu_blocks = []
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            for _ in range(int(n)):
                out = fn()
            float(out[0].numpy())
            best = min(best, (time.perf_counter() - t) / int(n))
            cpu = (time.process_time() - c) / int(n)
            timer.cpu_blocks.append(cpu)
            best_cpu = min(best_cpu, cpu)
        return best, best_cpu

    timer.function = fn
    return timer, num_ops


def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else float("nan")
