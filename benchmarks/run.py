#!/usr/bin/env python
"""Benchmarks of gpflow_svgpvae: speed against a plain VAE, scaling, posterior, GPPVAE, training paths.

Usage::

    python benchmarks/run.py [--quick] [--out DIR] \
        [all|ratio|gpblock|networks|speed|precision|scaling|posterior|gppvae|paths|sprites|startup]

Every measurement runs in a child process of this script (``run.py _child
TASK SPEC``) so that TensorFlow's thread settings and the peak RSS belong to
that measurement alone; within a child, models compared with each other are
timed epoch by epoch in alternation (ABBA order) after an untimed warm-up
epoch (tracing / XLA compilation), and medians are reported. The parent prints
a table per task and writes ``DIR/<task>.json`` (default ``results/benchmarks``)
with the machine description (CPU count and model, load average before and
after, TensorFlow/GPflow versions) and every raw time.

Tasks (see benchmarks/README.md for the numbers measured here):

* ``ratio``: s/epoch of the SVGP-VAE against the package's plain VAE with the
  same conv networks, likelihood and batch size on rotated MNIST
  (N = 4050, L = 16, m = 32, b = 256), plus the GP block alone (forward and
  backward) per step; the ratio is printed last.
* ``gpblock``: the GP block of one training step alone (object-vector lookup,
  kernels, statistics, posterior, KL, predictive; forward and backward, b = 256,
  m = 32, L = 16, Q = 8) at the rotated-MNIST setting: CPU ms per step (median
  of several best-of-5 timings) and the number of graph ops, for the step's own
  path (``minibatch_posterior``) and the stage-by-stage path of ``ratio``.
* ``networks``: where the plain VAE's training step goes at the Table-1 setting
  (the conv encoder and decoder shared with the SVGP-VAE, b = 256): CPU ms per
  step of the whole step (from whole epochs) and of each layer's forward pass
  with its gradient, each layer's FLOPs and activation bytes, against this
  CPU's float32 matrix-product rate and elementwise memory bandwidth: the
  floor under the median-epoch target.
* ``speed``: what each option gives, for both models: XLA, prefetching, the
  runtime checks, float32 vs float64 networks, a float32 likelihood, and TF
  thread settings (intra/inter-op).
* ``scaling``: s/epoch, s/step and peak RSS for N, m and b (synthetic images of
  MNIST shape), with log-log slopes.
* ``posterior``: ``model.posterior(data)`` (streamed statistics) time and
  memory for up to 10^6 points with a one-Dense-layer encoder.
* ``gppvae``: GPPVAE against the SVGP-VAE at N = 4050 and as N grows.
* ``paths``: the compiled loop (``train``) against Keras ``fit``, with and
  without XLA.
* ``sprites``: where a SPRITES training step goes (paper setting: batch 500 =
  10 characters x 50 poses, L = 64, m = 72): the whole compiled step (GECO,
  Adam) and, each compiled alone with its gradient, the encoder, the decoder,
  the representation network (frames -> styles) and the GP block (kernels,
  statistics, posterior, KL, predictive, at fixed GP inputs); ms per step and the epoch this implies at N = 50,000
  (100 steps); then whole epochs. For each of ``SPRITES_VARIANTS``: the paper setting with TensorFlow's oneDNN
  kernels off and on, and the setting of the quoted SPRITES run.
* ``startup``: the time to the end of the first training step (tracing included) of
  the rotated-MNIST SVGP-VAE, each in a fresh process (AutoGraph caches what it
  converted), with the compiled loop and with Keras ``fit``: the package's step as
  shipped (traced as written, optimiser state created before the step) against the
  step rewritten by AutoGraph with the optimiser built inside it (two traces).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TASKS = (
    "ratio",
    "gpblock",
    "networks",
    "speed",
    "precision",
    "scaling",
    "posterior",
    "gppvae",
    "paths",
    "sprites",
    "startup",
)


# =========================================================================== parent
def machine() -> dict:
    info = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "niceness": os.nice(0),
        "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1 (benchmark default)"),
    }
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        info["cpu_model"] = names[0] if names else None
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        info["cpu_avx512f"] = "avx512f" in flags  # TensorFlow's oneDNN default follows such features
        with open("/proc/meminfo") as f:
            info["mem_total_gb"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


_MEMO = {}


def child(task: str, spec: dict, timeout: float = 1800) -> dict:
    """Run one measurement in a fresh process and return its result dict (an identical
    request made earlier in this invocation, e.g. by ``ratio`` and ``speed`` under
    ``--quick``, is answered from that run)."""
    key = (task, json.dumps(spec, sort_keys=True))
    if key in _MEMO:
        return _MEMO[key]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONHASHSEED="0")
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # as the svgpvae command (experiments.cli.prefer_onednn)
    if spec.get("onednn") is not None:  # a measurement of its own setting
        env["TF_ENABLE_ONEDNN_OPTS"] = str(spec["onednn"])
    cmd = [sys.executable, os.path.abspath(__file__), "_child", task, json.dumps(spec)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark child {task} {spec} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads(lines[-1][len("RESULT ") :])
    out["process_wall_s"] = time.perf_counter() - t
    _MEMO[key] = out
    return out


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        if x != x:
            return "nan"
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:.0f}"
    return str(x)


def table(headers, rows) -> str:
    rows = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def _med(values):
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def _slope(xs, ys):
    import math

    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


# ---------------------------------------------------------------- task drivers
def _pair_rows(label, variants):
    rows = []
    for name, v in variants.items():
        ratios = [a / b for a, b in zip(v["svgpvae"], v["vae"])]
        cpu_ratios = [a / b for a, b in zip(v["svgpvae_cpu"], v["vae_cpu"])]
        rows.append(
            [
                name if label is None else f"{label}: {name}",
                _med(v["svgpvae"]),
                min(v["svgpvae"]),
                _med(v["vae"]),
                min(v["vae"]),
                _med(ratios),
                _med(v["svgpvae_cpu"]),
                _med(v["vae_cpu"]),
                _med(cpu_ratios),
                v["trace_s"]["svgpvae"],
                v["trace_s"]["vae"],
            ]
        )
    return rows


PAIR_HEADERS = [
    "option",
    "SVGP-VAE s/epoch",
    "(min)",
    "VAE s/epoch",
    "(min)",
    "ratio",
    "SVGP-VAE CPU s/epoch",
    "VAE CPU s/epoch",
    "CPU ratio",
    "SVGP-VAE 1st epoch s",
    "VAE 1st epoch s",
]


QUICK_PAIR = dict(
    rounds=3,
    order=["vae", "svgpvae"],
    variants=[dict(name="default"), dict(name="checks_off", checks=False)],
    gp_block=True,
    gp_stages=False,
    gp_xla=False,
)


def run_ratio(quick: bool, cache: str):
    if quick:
        results = [child("pair", dict(QUICK_PAIR, cache=cache))]
    else:
        results = []
        for p in range(2):  # two processes, the models' order swapped
            spec = dict(
                cache=cache,
                rounds=10,
                order=["vae", "svgpvae"] if p % 2 == 0 else ["svgpvae", "vae"],
                variants=[dict(name="default")],
                gp_block=p == 0,
                gp_stages=True,
                gp_xla=True,
            )
            results.append(child("pair", spec))
    merged = {
        k: [t for r in results for t in r["variants"]["default"][k]]
        for k in ("svgpvae", "vae", "svgpvae_cpu", "vae_cpu")
    }
    merged["trace_s"] = results[0]["variants"]["default"]["trace_s"]
    ratios = [a / b for a, b in zip(merged["svgpvae"], merged["vae"])]
    cpu_ratios = [a / b for a, b in zip(merged["svgpvae_cpu"], merged["vae_cpu"])]
    gp = results[0]["gp_block"]
    spe = results[0]["steps_per_epoch"]
    summary = dict(
        svgpvae_s_per_epoch=_med(merged["svgpvae"]),
        vae_s_per_epoch=_med(merged["vae"]),
        ratio=_med(ratios),
        cpu_ratio=_med(cpu_ratios),
        svgpvae_cpu_s_per_epoch=_med(merged["svgpvae_cpu"]),
        vae_cpu_s_per_epoch=_med(merged["vae_cpu"]),
        overhead_percent=100 * (_med(ratios) - 1),
        steps_per_epoch=spe,
        epochs_timed=len(ratios),
        gp_block_ms_per_step=gp["graph"]["ms"],
        gp_block_xla_ms_per_step=gp.get("xla", {}).get("ms"),
        svgpvae_min_s_per_epoch=min(merged["svgpvae"]),
        vae_min_s_per_epoch=min(merged["vae"]),
    )
    text = table(PAIR_HEADERS, _pair_rows(None, {"default": merged}))
    summary["gp_block_percent_of_vae_epoch"] = 100 * gp["graph"]["ms"] * spe / 1000 / summary["vae_cpu_s_per_epoch"]
    text += (
        f"\n\nGP block alone (forward + backward, b = 256, CPU time, best of 5 x 20 calls): "
        f"{gp['graph']['ms']:.2f} ms/step in graph mode ({gp['graph']['ops']} graph ops)"
    )
    if "xla" in gp:
        text += f", {gp['xla']['ms']:.2f} ms/step with XLA"
    text += (
        f"; x {spe} steps = {summary['gp_block_percent_of_vae_epoch']:.1f}% of the VAE's CPU time per epoch "
        f"(the measured SVGP-VAE overhead is {summary['overhead_percent']:.1f}% wall, "
        f"{100 * (summary['cpu_ratio'] - 1):.1f}% CPU)."
    )
    if "stages" in gp:
        rows = [[st["stage"], st["fwd_ms"], st["fwd_ops"], st["fwd_bwd_ms"], st["fwd_bwd_ops"]] for st in gp["stages"]]
        text += "\n\nGP block, cumulative by stage (graph mode, runtime checks on as in the loop, CPU ms):\n\n" + table(
            ["up to stage", "forward ms", "forward ops", "forward+backward ms", "forward+backward ops"], rows
        )
    text += (
        f"\n\nratio SVGP-VAE / VAE (median of {len(ratios)} paired epochs): {summary['ratio']:.3f} wall, "
        f"{summary['cpu_ratio']:.3f} CPU"
    )
    return dict(summary=summary, runs=results), text


#: The GP block's own matrix products at the Table-1 setting ([L, b] x [b, M (M + 1) / 2] pair
#: statistics and its gradient) and a large product, for ``gpblock``'s float64 rates.
GEMM_BLOCK_SHAPES = (((16, 256), (256, 528)), ((528, 16), (16, 256)))
GEMM_LARGE = ((1024, 1024), (1024, 1024))


def _shapes_key(a, b) -> str:
    return f"[{a[0]},{a[1]}]x[{b[0]},{b[1]}]"


def run_gpblock(quick: bool, cache: str):
    res = child("gp_block", dict(cache=cache, rounds=3 if quick else 7, calls=20))
    rows = []
    for name in ("step", "step_ids_checked_once", "stages", "step_xla"):
        if name in res:
            r = res[name]
            rows.append(
                [name, _med(r["cpu_ms"]), min(r["cpu_ms"]), max(r["cpu_ms"]), r["ops"], r["fwd_ops"], len(r["cpu_ms"])]
            )
    text = table(
        ["path", "CPU ms/step (median)", "(min)", "(max)", "graph ops fwd+bwd", "graph ops fwd", "timings"], rows
    )
    text += (
        "\n\nstep: `model.map_inputs` + `amortized.minibatch_posterior` (what a training step runs); "
        "step_ids_checked_once: the same with `ObjectVectors(check_ids_in_graph=False)` (ids checked once "
        "at the data boundary); stages: the stage-by-stage block of `ratio` (`predict_marginals` re-solves "
        "W). Each timing is the best of 5 blocks of 20 calls, the paths alternated; runtime checks "
        "(`numerics`) on, as in the loop."
    )
    step = res.get("step", {})
    if "flops_fwd_bwd" in step:
        gemm = res["gemm_gflops_float64"]
        peak = max(gemm.values())
        own = max(gemm[_shapes_key(a, b)] for a, b in GEMM_BLOCK_SHAPES)
        text += (
            f"\n\nArithmetic of the step's block (TensorFlow profiler): {step['flops_fwd'] / 1e6:.1f} MFLOP forward, "
            f"{step['flops_fwd_bwd'] / 1e6:.1f} MFLOP forward + backward. float64 matrix products on this CPU "
            f"(GFLOP per CPU second, TensorFlow's default threads): "
            + ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in gemm.items())
            + f". The block's arithmetic alone takes {step['flops_fwd_bwd'] / own / 1e6:.2f} ms of CPU per "
            f"step at the rate of its own product shapes and {step['flops_fwd_bwd'] / peak / 1e6:.2f} ms at "
            f"the large product's, against {_med(step['cpu_ms']):.2f} ms measured."
        )
    return res, text


def run_networks(quick: bool, cache: str):
    res = child(
        "networks", dict(cache=cache, rounds=3 if quick else 7, calls=10 if quick else 20, epochs=3 if quick else 8)
    )
    steps = res["steps_per_epoch"]
    step_ms = {k: 1000 * _med(res[f"{k}_cpu_s_per_epoch"]) / steps for k in ("vae", "vae_keras_decoder")}
    rows, totals = [], {}
    for r in res["layers"]:
        ms = _med(r["cpu_ms"])
        t = totals.setdefault(r["network"], [0.0, 0.0, 0.0])
        t[0], t[1], t[2] = t[0] + ms, t[1] + r["flops"], t[2] + r["activation_bytes"]
        rows.append(
            [
                f"{r['network']}/{r['layer']}",
                ms,
                r["flops"] / 1e6,
                r["flops"] / ms / 1e6,
                r["activation_bytes"] / 2**20,
                r["ops"],
            ]
        )
    for name, (ms, flops, nbytes) in totals.items():
        rows.append([f"{name}: all layers", ms, flops / 1e6, flops / ms / 1e6, nbytes / 2**20, None])
    text = table(
        ["layer (forward + gradient, b = 256)", "CPU ms/step", "MFLOP", "GFLOP/s", "activations MB", "graph ops"], rows
    )
    gemm, bandwidth = res["gemm_gflops_float32"], res["elementwise_gbps"]
    ms, flops, nbytes = (totals["encoder"][i] + totals["decoder"][i] for i in range(3))
    text += (
        f"\n\nThe VAE's whole training step (Adam, likelihood; input pipeline overlapped), median of "
        f"{len(res['vae_cpu_s_per_epoch'])} alternated epochs of {steps} steps: {step_ms['vae']:.1f} CPU ms "
        f"({_med(res['vae_s_per_epoch']):.3f} s/epoch wall) with the package's decoder, "
        f"{step_ms['vae_keras_decoder']:.1f} CPU ms ({_med(res['vae_keras_decoder_s_per_epoch']):.3f} s/epoch) "
        f"with the same decoder built from Keras layers. This CPU: float32 [1024, 1024] x [1024, 1024] "
        f"products at {gemm:.1f} GFLOP per CPU second, an elementwise float32 op at {bandwidth:.1f} GB per CPU "
        f"second. The encoder's and decoder's {flops / 1e6:.0f} MFLOP (forward + backward) at the product rate "
        f"would take {flops / gemm / 1e6:.1f} ms; their {nbytes / 2**20:.0f} MB of activations, read once "
        f"forward and about twice backward, {3 * nbytes / bandwidth / 1e6:.1f} ms at the elementwise rate; "
        f"measured layer by layer, {ms:.1f} ms. A 0.25 s epoch of {steps} steps leaves {1000 * 0.25 / steps:.1f} "
        f"ms per step for everything."
    )
    return res, text


SPEED_VARIANTS = [
    dict(name="default"),
    dict(name="no_prefetch", prefetch=False),
    dict(name="checks_off", checks=False),
    dict(name="float32_likelihood", lik32=True),
    dict(name="depth_to_space_upsampling", d2s=True),
    dict(name="keras_layers_decoder", keras_decoder=True),
    dict(name="d2s+float32_lik+checks_off", d2s=True, lik32=True, checks=False),
    dict(name="xla", jit=True),
    dict(name="xla+float32_likelihood", jit=True, lik32=True),
]


def run_speed(quick: bool, cache: str):
    rounds = 6
    if quick:
        specs = [("main", dict(QUICK_PAIR, cache=cache))]
    else:
        specs = [
            ("main", dict(cache=cache, rounds=rounds, variants=SPEED_VARIANTS)),
            ("float64 networks", dict(cache=cache, rounds=rounds, floatx="float64", variants=[dict(name="default")])),
            (
                "threads intra=1 inter=1",
                dict(cache=cache, rounds=rounds, threads=[1, 1], variants=[dict(name="default")]),
            ),
            (
                "threads intra=2 inter=1",
                dict(cache=cache, rounds=rounds, threads=[2, 1], variants=[dict(name="default")]),
            ),
            (
                "threads intra=1 inter=2",
                dict(cache=cache, rounds=rounds, threads=[1, 2], variants=[dict(name="default")]),
            ),
        ]
    rows, raw = [], []
    for label, spec in specs:
        spec.setdefault("order", ["vae", "svgpvae"])
        res = child("pair", spec)
        raw.append(dict(label=label, spec=spec, result=res))
        rows += _pair_rows(None if label == "main" else label, res["variants"])
    return dict(rows=rows, runs=raw), table(PAIR_HEADERS, rows)


PRECISION_VARIANTS = [
    dict(name="float32"),
    dict(name="mixed_bfloat16", precision="mixed_bfloat16"),
]


def run_precision(quick: bool, cache: str):
    """s/epoch of the SVGP-VAE and the VAE (same networks) per network precision; the GP block is
    float64 in every variant (``gpflow_svgpvae.networks.network_precision``)."""
    spec = dict(cache=cache, rounds=2 if quick else 6, order=["vae", "svgpvae"], variants=PRECISION_VARIANTS)
    res = child("pair", spec)
    return dict(runs=[dict(spec=spec, result=res)]), table(PAIR_HEADERS, _pair_rows(None, res["variants"]))


def run_scaling(quick: bool, cache: str):
    if quick:
        series = {"N": [4050, 8100], "m": [32, 64], "b": [256, 512]}
    else:
        series = {"N": [4050, 12150, 20250, 40500], "m": [16, 32, 64, 128, 256], "b": [64, 128, 256, 512, 1024]}
    epochs = 1 if quick else 3
    configs = {
        "N": [dict(N=N, m=32, b=256) for N in series["N"]],
        "m": [dict(N=4050, m=m, b=256) for m in series["m"]],
        "b": [dict(N=4050, m=32, b=b) for b in series["b"]],
    }
    out = {}
    if quick:  # one process; peak RSS is reset (VmHWM) before each configuration
        unique = []
        for c in (c for k in "Nmb" for c in configs[k]):
            if c not in unique:
                unique.append(c)
        done = child("steps", dict(configs=unique, epochs=epochs))["configs"]
        find = lambda c: next(r for r in done if all(r[k] == c[k] for k in c))  # noqa: E731
        out = {k: [find(c) for c in configs[k]] for k in "Nmb"}
    else:
        out["N"] = [child("steps", dict(configs=[c], epochs=epochs))["configs"][0] for c in configs["N"]]
        out["m"] = child("steps", dict(configs=configs["m"], epochs=epochs))["configs"]
        out["b"] = child("steps", dict(configs=configs["b"], epochs=epochs))["configs"]
    rows = []
    for key in ("N", "m", "b"):
        for c in out[key]:
            rows.append(
                [
                    key,
                    c["N"],
                    c["m"],
                    c["b"],
                    c["steps_per_epoch"],
                    c["s_per_epoch"],
                    1000 * c["s_per_step"],
                    c["cpu_s_per_epoch"],
                    c["rss_before_mb"],
                    c["peak_rss_mb"],
                ]
            )
    slopes = {}
    for key, x in (("N", "N"), ("m", "m"), ("b", "b")):
        xs = [c[x] for c in out[key]]
        for y in ("s_per_epoch", "s_per_step", "cpu_s_per_epoch", "peak_rss_mb"):
            slopes[f"{y}_vs_{x}"] = _slope(xs, [c[y] for c in out[key]])
    text = table(
        ["series", "N", "m", "b", "steps/epoch", "s/epoch", "ms/step", "CPU s/epoch", "RSS before MB", "peak RSS MB"],
        rows,
    )
    text += "\n\nlog-log slopes: " + ", ".join(f"{k} {v:.2f}" for k, v in slopes.items())
    return dict(results=out, slopes=slopes), text


def run_posterior(quick: bool, cache: str):
    Ns = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    res = child("posterior", dict(Ns=Ns, batch_sizes=[1024] if quick else [1024, 16384], L=16, m=32, input_dim=8))
    rows = [
        [
            c["N"],
            c["batch_size"],
            c["s"],
            1e6 * c["s"] / c["N"],
            c["rss_before_mb"],
            c["peak_rss_mb"],
            c["peak_rss_mb"] - c["rss_before_mb"],
            c["predict_f_10k_s"],
        ]
        for c in res["configs"]
    ]
    text = table(
        ["N", "chunk", "posterior s", "us/point", "RSS before MB", "peak RSS MB", "extra MB", "predict_f(10^4) s"], rows
    )
    big = [c for c in res["configs"] if c["N"] == max(Ns)]
    slopes = {
        "s_vs_N": _slope(
            [c["N"] for c in res["configs"] if c["batch_size"] == 1024],
            [c["s"] for c in res["configs"] if c["batch_size"] == 1024],
        )
    }
    text += "\n\nlog-log slope of time vs N (chunk 1024): " + f"{slopes['s_vs_N']:.2f}"
    return dict(res, slopes=slopes, largest=big), text


def run_gppvae(quick: bool, cache: str):
    rounds = 4
    real = None if quick else child("gppvae_real", dict(cache=cache, rounds=rounds))
    Ns = [4050, 8100] if quick else [4050, 12150, 20250, 40500]
    grow = child("gppvae_grow", dict(Ns=Ns, steps=4 if quick else 8))
    rows = []
    if real is not None:
        rows.append(
            [
                "4050 (rotated MNIST)",
                "measured epochs (alternated)",
                _med(real["gppvae"]),
                _med(real["svgpvae"]),
                _med([a / b for a, b in zip(real["gppvae"], real["svgpvae"])]),
                _med(real["gppvae_cpu"]),
                _med(real["svgpvae_cpu"]),
                _med([a / b for a, b in zip(real["gppvae_cpu"], real["svgpvae_cpu"])]),
                real["gppvae_refresh_s"],
            ]
        )
    for c in grow["configs"]:
        rows.append(
            [
                f"{c['N']} (synthetic)",
                "ms/step x steps + refresh",
                c["gppvae_s_per_epoch"],
                c["svgpvae_s_per_epoch"],
                c["gppvae_s_per_epoch"] / c["svgpvae_s_per_epoch"],
                c["gppvae_cpu_s_per_epoch"],
                c["svgpvae_cpu_s_per_epoch"],
                c["gppvae_cpu_s_per_epoch"] / c["svgpvae_cpu_s_per_epoch"],
                c["gppvae_refresh_s"],
            ]
        )
    Nall = [c["N"] for c in grow["configs"]]
    slopes = {
        f"{k}_vs_N": _slope(Nall, [c[k] for c in grow["configs"]])
        for k in (
            "gppvae_cpu_s_per_step",
            "svgpvae_cpu_s_per_step",
            "gppvae_cpu_s_per_epoch",
            "svgpvae_cpu_s_per_epoch",
            "gppvae_s_per_epoch",
            "svgpvae_s_per_epoch",
        )
    }
    text = table(
        [
            "N",
            "how",
            "GPPVAE s/epoch",
            "SVGP-VAE s/epoch",
            "ratio",
            "GPPVAE CPU s/epoch",
            "SVGP-VAE CPU s/epoch",
            "CPU ratio",
            "GPPVAE refresh s",
        ],
        rows,
    )
    text += "\n\nlog-log slopes: " + ", ".join(f"{k} {v:.2f}" for k, v in slopes.items())
    return dict(real=real, grow=grow, slopes=slopes), text


def run_paths(quick: bool, cache: str):
    epochs = 3 if quick else 6
    paths = ["loop", "fit"] if quick else ["loop", "fit", "loop_xla", "fit_xla"]
    runs = [child("paths", dict(cache=cache, epochs=epochs, paths=paths))]
    if not quick:
        runs.append(child("paths", dict(cache=cache, epochs=epochs, paths=paths[::-1])))
    rows = []
    for p in paths:
        per_epoch = [t for r in runs for t in r["paths"][p]["epochs"][1:]]
        cpu = [t for r in runs for t in r["paths"][p]["cpu"][1:]]
        first = _med([r["paths"][p]["epochs"][0] for r in runs])
        rows.append([p, _med(per_epoch), _med(cpu), first, len(per_epoch)])
    text = table(["path", "s/epoch", "CPU s/epoch", "first epoch s (trace/compile)", "epochs timed"], rows)
    return dict(rows=rows, runs=runs), text


_MIX = dict(style_dim=64, style_reduction="mean", decoder_gp_inputs="style_pose", decoder_modulation="mix")

#: ``sprites`` variants: (label, TF_ENABLE_ONEDNN_OPTS, Config overrides). From the third on: the setting of
#: the SPRITES runs quoted in docs/results.md (64-dim style, decoder on [code, style, pose] with channel
#: mixing), at 16 and 32 filters, with float32 and with bfloat16 networks.
SPRITES_VARIANTS = (
    ("paper setting, oneDNN off (TensorFlow's default on AVX2 CPUs)", "0", {}),
    ("paper setting, oneDNN on", "1", {}),
    ("64-dim style, decoder on [code, style, pose], mixing; oneDNN on", "1", _MIX),
    ("the same, bfloat16 networks", "1", dict(_MIX, precision="mixed_bfloat16")),
    ("the same, 32 filters, float32 networks", "1", dict(_MIX, filters=32)),
    ("the same, 32 filters, bfloat16 networks", "1", dict(_MIX, filters=32, precision="mixed_bfloat16")),
)


def run_sprites(quick: bool, cache: str):
    out, texts = {}, []
    for label, onednn, overrides in SPRITES_VARIANTS:
        res = child(
            "sprites_parts",
            dict(
                rounds=3 if quick else 7,
                calls=3 if quick else 10,
                characters=20 if quick else 40,
                onednn=onednn,
                config=overrides,
            ),
        )
        rows = [[name, _med(v), min(v), max(v)] for name, v in res["wall_ms"].items()]
        text = f"### {label}\n\n" + table(
            ["part (forward + gradient)", "wall ms/step (median)", "(min)", "(max)"], rows
        )
        step = _med(res["wall_ms"]["training step"])
        parts = sum(_med(v) for k, v in res["wall_ms"].items() if k != "training step")
        text += (
            f"\n\nOne epoch at N = 50,000 (100 steps) from the step's median: {step * 100 / 1000:.1f} s; the "
            f"parts alone add up to {parts:.0f} ms of the step's {step:.0f} ms. Each timing is the best of "
            f"{res['rounds']} blocks of {res['calls']} calls, parts alternated; batch 500 drawn from "
            f"{res['characters']} characters' frames."
        )
        epochs = child(
            "sprites_epochs",
            dict(characters=100 if quick else 1000, epochs=3 if quick else 4, onednn=onednn, config=overrides),
        )
        res["epochs"] = epochs
        later = epochs["epoch_wall_s"][1:]  # the first epoch traces the step
        text += (
            f"\n\nWhole epochs as `svgpvae sprites` trains them (`training.train` on `character_batches` of "
            f"uint8 frames in memory, {epochs['num_data']:,} frames, {epochs['steps_per_epoch']} steps of "
            f"batch 500): wall s/epoch after the first {', '.join(f'{v:.1f}' for v in later)} (median "
            f"{_med(later):.1f}), CPU s/epoch {', '.join(f'{v:.1f}' for v in epochs['epoch_cpu_s'][1:])}; "
            f"first epoch {epochs['epoch_wall_s'][0]:.1f} s. Rendering the frames took {epochs['render_s']:.0f} s "
            f"(not counted)."
        )
        out[label] = dict(res, onednn=onednn, config=overrides)
        texts.append(text)
    return out, "\n\n".join(texts)


def run_startup(quick: bool, cache: str):
    rounds = 2 if quick else 4
    variants = ("shipped", "autograph")
    times = {(path, v): [] for path in ("loop", "fit") for v in variants}
    traces = {}
    for r in range(rounds):  # fresh processes, the variants alternated (ABBA)
        for v in variants if r % 2 == 0 else variants[::-1]:
            for path in ("loop", "fit"):
                res = child("startup", dict(cache=cache, variant=v, path=path, round=r))
                times[(path, v)].append(res["first_step_s"])
                traces[(path, v)] = res["traces"]
                times.setdefault((path, v, "second"), []).append(res["second_step_s"])
    rows = [
        [
            path,
            v,
            _med(times[(path, v)]),
            min(times[(path, v)]),
            _med(times[(path, v, "second")]),
            traces[(path, v)],
            len(times[(path, v)]),
        ]
        for path in ("loop", "fit")
        for v in variants
    ]
    text = table(["path", "step", "first step s (median)", "(min)", "second step s", "traces", "processes"], rows)
    text += (
        "\n\nshipped: the package's step, traced without AutoGraph's rewriting of the package's code "
        "(Keras still converts the networks' `call`) after the optimiser's state is created; autograph: the "
        "same step with both undone. Rotated MNIST, b = 256, m = 32, L = 16; each number from a fresh process."
    )
    return dict(
        rows=rows, raw={f"{k[0]}_{k[1]}" + (f"_{k[2]}" if len(k) > 2 else ""): v for k, v in times.items()}
    ), text


DRIVERS = dict(
    ratio=run_ratio,
    gpblock=run_gpblock,
    networks=run_networks,
    speed=run_speed,
    precision=run_precision,
    scaling=run_scaling,
    posterior=run_posterior,
    gppvae=run_gppvae,
    paths=run_paths,
    sprites=run_sprites,
    startup=run_startup,
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", nargs="?", default="all", choices=("all",) + TASKS)
    parser.add_argument("--quick", action="store_true", help="fewer configurations and epochs (~3 minutes for all)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "benchmarks"))
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="add this to the scheduling niceness of the benchmark processes (negative: higher "
        "priority, needs root; reduces the effect of other load on the timings)",
    )
    args = parser.parse_args(argv)
    if args.nice:
        os.nice(args.nice)
    os.makedirs(args.out, exist_ok=True)
    cache = os.path.join(args.out, "cache")
    tasks = TASKS if args.task == "all" else (args.task,)
    start = time.perf_counter()
    report, failed = [], []
    for task in tasks:
        t = time.perf_counter()
        info = machine()
        try:
            result, text = DRIVERS[task](args.quick, cache)
        except Exception as error:  # keep going: the other tasks are independent
            result, text = dict(error=repr(error)[-3000:]), f"FAILED: {repr(error)[-1500:]}"
            failed.append(task)
        info["load_average_after"] = os.getloadavg()
        payload = dict(
            task=task, quick=args.quick, machine=info, versions=_versions(), wall_s=time.perf_counter() - t, **result
        )
        suffix = "_quick" if args.quick else ""
        with open(os.path.join(args.out, f"{task}{suffix}.json"), "w") as f:
            json.dump(payload, f, indent=1, default=float)
        block = (
            f"## {task}{' (quick)' if args.quick else ''}  [{time.perf_counter() - t:.0f} s, load average "
            f"{info['load_average'][0]:.1f} -> {info['load_average_after'][0]:.1f}]\n\n{text}\n"
        )
        print(block, flush=True)
        report.append(block)
    print(f"total {time.perf_counter() - start:.0f} s; JSON in {args.out}")
    with open(os.path.join(args.out, f"report{'_quick' if args.quick else ''}.md"), "w") as f:
        f.write(f"machine: {json.dumps(machine())}\n\n" + "\n".join(report))
    if failed:
        sys.exit(f"failed tasks: {failed}")


_VERSIONS = None


def _versions():
    global _VERSIONS
    if _VERSIONS is None:
        code = (
            "import json, tensorflow as tf, gpflow, numpy, tensorflow_probability as tfp, tf_keras;"
            "print(json.dumps(dict(tensorflow=tf.__version__, gpflow=gpflow.__version__, numpy=numpy.__version__,"
            " tfp=tfp.__version__, tf_keras=tf_keras.__version__)))"
        )
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        try:
            _VERSIONS = json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            _VERSIONS = {"error": out.stderr[-500:]}
    return _VERSIONS


# ============================================================================ child
def _child(task: str, spec: dict):
    threads = spec.get("threads")
    import tensorflow as tf

    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(int(threads[0]))
        tf.config.threading.set_inter_op_parallelism_threads(int(threads[1]))
    import warnings

    warnings.filterwarnings("ignore")
    tf.get_logger().setLevel("ERROR")
    from svgpvae_paper import bench as B

    if spec.get("floatx"):
        from gpflow.keras import tf_keras

        tf_keras.backend.set_floatx(spec["floatx"])
    out = dict(
        threads_effective=[
            tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads(),
        ]
    )
    out.update(globals()[f"_task_{task}"](B, spec))
    print("RESULT " + json.dumps(out, default=float), flush=True)


def _task_startup(B, spec):
    """Seconds to the end of the first (and of the second) training step of a fresh model."""
    from gpflow.keras import tf_keras

    import gpflow_svgpvae.training.keras as keras_view
    import gpflow_svgpvae.training.loop as loop
    from gpflow_svgpvae.tracing import not_autographed
    from gpflow_svgpvae.training import optimizers, step, train

    traces = []
    inner = step.training_step if spec["variant"] == "shipped" else step.training_step.__wrapped__

    def counted(*args):
        traces.append(1)
        return inner(*args)

    if spec["variant"] == "shipped":
        counted = not_autographed(counted)
    else:
        optimizers.build_optimizer = lambda *a: None  # the optimiser builds inside the first step
    loop.training_step = keras_view.training_step = counted
    data = B.rotated_mnist_data(spec.get("cache"))
    model = B.build("svgpvae", data)
    ds = B.dataset(data, 256)
    times = []

    class Clock(tf_keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - t0)

    if spec["path"] == "loop":
        t0 = time.perf_counter()
        train(
            model,
            ds,
            epochs=2,
            steps_per_epoch=1,
            optimizer=tf_keras.optimizers.Adam(1e-3),
            progress=False,
            callback=lambda epoch, logs: times.append(time.perf_counter() - t0),
        )
    else:
        view = model.as_training_model()
        view.compile(tf_keras.optimizers.Adam(1e-3))
        t0 = time.perf_counter()
        view.fit(ds.take(2), epochs=1, verbose=0, callbacks=[Clock()])
    return dict(first_step_s=times[0], second_step_s=times[1] - times[0], traces=len(traces))


def _task_pair(B, spec):
    """SVGP-VAE and VAE (same networks), epochs alternated, for each variant."""
    data = B.rotated_mnist_data(spec.get("cache"))
    out = {"variants": {}, "N": len(data["X"])}
    for v in spec["variants"]:
        steppers, trace = {}, {}
        for kind in spec.get("order", ["vae", "svgpvae"]):
            lik = B.float32_gaussian() if v.get("lik32") else None
            from gpflow_svgpvae.networks import network_precision

            with network_precision(v.get("precision", "float32")):  # the networks' Keras policy
                model = B.build(
                    kind, data, likelihood=lik, d2s=v.get("d2s", False), keras_decoder=v.get("keras_decoder", False)
                )
            ds = B.dataset(data, 256, video=(kind == "vae"), prefetch=v.get("prefetch", True))
            steppers[kind] = B.Stepper(model, ds, jit=v.get("jit", False), checks=v.get("checks"))
        for kind, s in steppers.items():  # warm-up epoch (tracing, XLA compilation), timed separately
            trace[kind] = s.epoch()
        times = B.alternate(steppers, spec["rounds"], warmup=int(spec.get("warmup", 1)) - 1)
        out["variants"][v["name"]] = dict(times, trace_s=trace)
        out["steps_per_epoch"] = steppers["svgpvae"].steps_per_epoch
        if spec.get("gp_block"):
            model = steppers["svgpvae"].model
            timer, ops = B.gp_step_timer(model, data, 256)  # the step's own GP block
            wall, cpu = timer(20)
            gp = {"graph": dict(ms=1000 * cpu, wall_ms=1000 * wall, ops=ops)}
            if spec.get("gp_xla", True):
                timer, ops = B.gp_step_timer(model, data, 256, jit=True)
                wall, cpu = timer(20)
                gp["xla"] = dict(ms=1000 * cpu, wall_ms=1000 * wall, ops=ops)
            if spec.get("gp_stages"):
                gp["stages"] = []
                for i, name in enumerate(B.GP_STAGES):
                    fwd, fwd_ops = B.gp_block_timer(model, data, 256, stage=i, gradients=False)
                    both, both_ops = B.gp_block_timer(model, data, 256, stage=i)
                    gp["stages"].append(
                        dict(
                            stage=f"{i} {name}",
                            fwd_ms=1000 * fwd(20)[1],
                            fwd_ops=fwd_ops,
                            fwd_bwd_ms=1000 * both(20)[1],
                            fwd_bwd_ops=both_ops,
                        )
                    )
            out["gp_block"] = gp
    return out


def _task_gp_block(B, spec):
    """The GP block alone, repeated timings (each the best of 5 x ``calls`` calls)."""
    data = B.rotated_mnist_data(spec.get("cache"))
    model = B.build("svgpvae", data)
    out = {}
    unchecked = B.build("svgpvae", data, check_ids_in_graph=False)
    makers = dict(
        step=lambda **k: B.gp_step_timer(model, data, 256, **k),
        step_ids_checked_once=lambda **k: B.gp_step_timer(unchecked, data, 256, **k),
        stages=lambda **k: B.gp_block_timer(model, data, 256, **k),
    )
    timers, forward = {}, {}
    for name, make in makers.items():
        timers[name], ops = make()
        forward[name], fwd_ops = make(gradients=False)
        out[name] = dict(ops=ops, fwd_ops=fwd_ops, cpu_ms=[], wall_ms=[])
    # The arithmetic of the step's block, and what this CPU's float64 matrix products deliver at
    # the block's own product shapes and at a large one.
    out["step"]["flops_fwd_bwd"] = B.graph_flops(timers["step"].function)
    out["step"]["flops_fwd"] = B.graph_flops(forward["step"].function)
    out["gemm_gflops_float64"] = {_shapes_key(a, b): B.gemm_gflops(a, b) for a, b in GEMM_BLOCK_SHAPES}
    out["gemm_gflops_float64"][_shapes_key(*GEMM_LARGE)] = B.gemm_gflops(*GEMM_LARGE, calls=3)
    if spec.get("xla"):
        timers["step_xla"], ops = B.gp_step_timer(model, data, 256, jit=True)
        out["step_xla"] = dict(ops=ops, fwd_ops=None, cpu_ms=[], wall_ms=[])
    B.time_alternately(
        [out[name] for name in timers], list(timers.values()), spec.get("rounds", 5), spec.get("calls", 20)
    )
    return out


def _task_networks(B, spec):
    """The plain VAE's step from whole epochs, with the package's decoder and with the same decoder
    built from plain Keras layers (epochs alternated), and each network layer's forward + gradient alone."""
    data = B.rotated_mnist_data(spec.get("cache"))
    vaes = dict(vae=B.build("vae", data), vae_keras_decoder=B.build("vae", data, keras_decoder=True))
    steppers = {k: B.Stepper(m, B.dataset(data, 256, video=True)) for k, m in vaes.items()}
    times = B.alternate(steppers, int(spec.get("epochs", 8)))
    out = dict(
        steps_per_epoch=steppers["vae"].steps_per_epoch,
        layers=[],
        **{f"{k}_s_per_epoch": times[k] for k in vaes},
        **{f"{k}_cpu_s_per_epoch": times[f"{k}_cpu"] for k in vaes},
    )
    timers = []
    networks = (
        ("encoder", vaes["vae"].encoder),
        ("decoder", vaes["vae"].decoder),
        ("decoder (Keras layers)", vaes["vae_keras_decoder"].decoder),
    )
    for name, network in networks:
        for layer, timer, ops, flops, nbytes in B.layer_timers(network, 256):
            timers.append(timer)
            out["layers"].append(
                dict(network=name, layer=layer, ops=ops, flops=flops, activation_bytes=nbytes, cpu_ms=[], wall_ms=[])
            )
    B.time_alternately(out["layers"], timers, spec.get("rounds", 5), spec.get("calls", 20))
    out["gemm_gflops_float32"] = B.gemm_gflops((1024, 1024), (1024, 1024), dtype="float32", calls=10)
    out["elementwise_gbps"] = B.elementwise_gbps()
    return out


def _task_steps(B, spec):
    """SVGP-VAE on synthetic MNIST-shaped data: s/epoch, s/step, peak RSS per config."""
    import gc

    configs = []
    for c in spec["configs"]:
        gc.collect()
        data = B.synthetic_data(c["N"])
        rss_before = B.rss_mb()
        B.reset_peak_rss()
        model = B.build("svgpvae", data, m=c["m"])
        s = B.Stepper(model, B.dataset(data, c["b"]))
        warm = s.epoch()
        epochs = [s.epoch() for _ in range(int(spec["epochs"]))]
        cpu = s.cpu_times[1:]
        # s/step = s/epoch / steps per epoch (the last batch of an epoch may be smaller)
        configs.append(
            dict(
                c,
                steps_per_epoch=s.steps_per_epoch,
                s_per_epoch=B.median(epochs),
                epochs=epochs,
                cpu_s_per_epoch=B.median(cpu),
                warmup_epoch_s=warm,
                s_per_step=B.median(epochs) / s.steps_per_epoch,
                rss_before_mb=rss_before,
                peak_rss_mb=B.peak_rss_mb(),
            )
        )
        del model, s, data
    return dict(configs=configs)


def _task_posterior(B, spec):
    """Streamed full-data posterior with a one-Dense-layer encoder."""
    import gc

    import gpflow
    import numpy as np
    from gpflow.keras import tf_keras

    import gpflow_svgpvae as gv
    from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder

    L, m, D = int(spec["L"]), int(spec["m"]), int(spec["input_dim"])
    tf_keras.utils.set_random_seed(0)
    model = gv.SVGPVAE(
        mlp_encoder(D, L, hidden_units=()),
        mlp_decoder(L, D, hidden_units=()),
        gpflow.kernels.SquaredExponential(lengthscales=0.1),
        np.linspace(0, 1, m)[:, None],
        num_data=max(spec["Ns"]),
        seed=0,
    )
    Xnew = np.linspace(0, 1, 10_000)[:, None]
    configs = []
    model.posterior((np.zeros((10, 1)), np.zeros((10, D), np.float32)), batch_size=10)  # warm-up
    for N in spec["Ns"]:
        rng = np.random.default_rng(N)
        X = rng.random((N, 1))
        Y = rng.standard_normal((N, D)).astype(np.float32)
        for bs in spec["batch_sizes"]:
            gc.collect()
            rss_before = B.rss_mb()
            B.reset_peak_rss()
            t = time.perf_counter()
            post = model.posterior((X, Y), batch_size=bs)
            elapsed = time.perf_counter() - t
            peak = B.peak_rss_mb()
            t = time.perf_counter()
            mean, var = post.predict_f(Xnew)
            float(mean.numpy().sum())
            pred = time.perf_counter() - t
            configs.append(
                dict(
                    N=N,
                    batch_size=bs,
                    s=elapsed,
                    rss_before_mb=rss_before,
                    peak_rss_mb=peak,
                    predict_f_10k_s=pred,
                    num_conditioned=post.num_conditioned,
                    min_var=float(np.min(var.numpy())),
                )
            )
            del post
        del X, Y
    return dict(configs=configs)


def _task_gppvae_real(B, spec):
    data = B.rotated_mnist_data(spec.get("cache"))
    gpp = B.build("gppvae", data)
    t = time.perf_counter()
    gpp.refresh(data["X"], data["Y"])
    first_refresh = time.perf_counter() - t
    refresh_times = []

    def refresh():
        t0 = time.perf_counter()
        gpp.refresh(data["X"], data["Y"])
        refresh_times.append(time.perf_counter() - t0)

    steppers = {
        "gppvae": B.Stepper(gpp, B.dataset(data, 256), after_epoch=refresh),
        "svgpvae": B.Stepper(B.build("svgpvae", data), B.dataset(data, 256)),
    }
    times = B.alternate(steppers, spec["rounds"], warmup=1)
    return dict(times, gppvae_refresh_s=B.median(refresh_times[1:]), gppvae_first_refresh_s=first_refresh)


def _task_gppvae_grow(B, spec):
    """GPPVAE and SVGP-VAE on synthetic data of growing N: blocks of full-batch steps,
    alternated between the two models, plus GPPVAE's per-epoch refresh."""
    import gc

    configs = []
    n = int(spec["steps"])
    for N in spec["Ns"]:
        gc.collect()
        data = B.synthetic_data(N)
        row = dict(N=N)
        steppers = {}
        for kind in ("svgpvae", "gppvae"):
            model = B.build(kind, data)
            if kind == "gppvae":
                model.refresh(data["X"], data["Y"])
                t, c = time.perf_counter(), time.process_time()
                model.refresh(data["X"], data["Y"])
                row["gppvae_refresh_s"] = time.perf_counter() - t
                row["gppvae_refresh_cpu_s"] = time.process_time() - c
            steppers[kind] = B.Stepper(model, B.dataset(data, 256))
            steppers[kind].steps(2)  # trace
        blocks = {k: [] for k in steppers}
        for r in range(3):
            for kind in ("svgpvae", "gppvae") if r % 2 == 0 else ("gppvae", "svgpvae"):
                blocks[kind].append(steppers[kind].timed_steps(n))
        spe = steppers["svgpvae"].steps_per_epoch
        row["steps_per_epoch"] = spe
        for kind, values in blocks.items():
            extra, extra_cpu = (row["gppvae_refresh_s"], row["gppvae_refresh_cpu_s"]) if kind == "gppvae" else (0, 0)
            row[f"{kind}_s_per_step"] = B.median([w / n for w, _ in values])
            row[f"{kind}_cpu_s_per_step"] = B.median([c / n for _, c in values])
            row[f"{kind}_s_per_epoch"] = row[f"{kind}_s_per_step"] * spe + extra
            row[f"{kind}_cpu_s_per_epoch"] = row[f"{kind}_cpu_s_per_step"] * spe + extra_cpu
        del steppers
        configs.append(row)
    return dict(configs=configs)


def _task_paths(B, spec):
    """``train`` (compiled loop) vs Keras ``fit``, graph and XLA, per-epoch wall times."""
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.training import train

    data = B.rotated_mnist_data(spec.get("cache"))
    epochs = int(spec["epochs"])
    out = {}
    for path in spec["paths"]:
        jit = path.endswith("_xla")
        model = B.build("svgpvae", data)
        stamps, cpu = [time.perf_counter()], [time.process_time()]

        def stamp(*_):
            stamps.append(time.perf_counter())
            cpu.append(time.process_time())

        if path.startswith("loop"):
            train(
                model,
                B.dataset(data, 256),
                epochs=epochs,
                optimizer=tf_keras.optimizers.Adam(1e-3),
                jit_compile=jit,
                progress=False,
                callback=stamp,
            )
        else:

            class Stamp(tf_keras.callbacks.Callback):
                def on_epoch_begin(self, epoch, logs=None):
                    if epoch == 0:
                        stamps[0], cpu[0] = time.perf_counter(), time.process_time()

                def on_epoch_end(self, epoch, logs=None):
                    stamp()

            view = model.as_training_model()
            view.compile(tf_keras.optimizers.Adam(1e-3), jit_compile=jit)
            view.fit(B.dataset(data, 256), epochs=epochs, verbose=0, callbacks=[Stamp()])
        out[path] = dict(epochs=[b - a for a, b in zip(stamps, stamps[1:])], cpu=[b - a for a, b in zip(cpu, cpu[1:])])
    return dict(paths=out)


def _task_sprites_parts(B, spec):
    """Per-step wall time of the SPRITES training step and of its parts (each compiled with its gradient)."""
    import tensorflow as tf
    from gpflow.keras import tf_keras

    from gpflow_svgpvae import amortized
    from gpflow_svgpvae.training import GECO
    from gpflow_svgpvae.training.step import training_step

    n = int(spec["characters"])
    cfg, model, data, _ = _sprites_setup(n, spec.get("config"))
    X, Y = next(iter(data))[:2]
    objective = GECO(cfg.kappa_squared)
    optimizer = tf_keras.optimizers.Adam(1e-3)
    step = tf.function(lambda batch: training_step(model, objective, optimizer, batch))

    def with_gradient(forward, variables):
        @tf.function
        def run():
            with tf.GradientTape() as tape:
                value = forward()
            return [value] + list(tape.gradient(value, list(variables)))

        return run

    rep = model.input_transform.transforms[0]
    encoder, decoder = model.encoder, model.decoder
    Z = tf.random.stateless_normal([int(Y.shape[0]), cfg.num_latent], [0, 1])
    # What the decoder reads: the code, and the GP-input columns of decoder_gp_columns if any.
    Z_decoder = (
        Z
        if not model.decoder_gp_columns
        else tf.concat([Z, tf.cast(model.decoder_condition(model.map_inputs(X, Y)), Z.dtype)], axis=-1)
    )
    enc_in = tf.cast(Y, tf.float32)

    X_gp = tf.constant(model.map_inputs(X, Y))  # the representation network is timed on its own

    def gp_block():
        means, variances = Z * 0.5, tf.ones_like(Z)
        batch = amortized.minibatch_posterior(
            model.kernel,
            model.inducing_variable,
            X_gp,
            tf.cast(means, tf.float64),
            tf.cast(variances, tf.float64),
            model.num_data,
            model.jitter,
        )
        return tf.reduce_sum(batch.mean) + tf.reduce_sum(batch.kl)

    parts = {
        "training step": lambda: step((X, Y)),
        "encoder": with_gradient(lambda: tf.reduce_sum(encoder(enc_in, training=True)[0]), encoder.trainable_variables),
        "decoder": with_gradient(lambda: tf.reduce_sum(decoder(Z_decoder, training=True)), decoder.trainable_variables),
        "representation": with_gradient(lambda: tf.reduce_sum(rep(X, Y, training=True)), rep.trainable_variables),
        "GP block": with_gradient(
            gp_block, list(model.kernel.trainable_variables) + list(model.inducing_variable.trainable_variables)
        ),
    }
    for fn in parts.values():  # trace
        out = fn()
    times = {name: [] for name in parts}
    for _ in range(int(spec["rounds"])):
        for name, fn in parts.items():
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(int(spec["calls"])):
                    out = fn()
                tf.nest.map_structure(lambda a: a.numpy() if hasattr(a, "numpy") else a, out)
                best = min(best, (time.perf_counter() - t) / int(spec["calls"]))
            times[name].append(1000 * best)
    return dict(wall_ms=times, rounds=int(spec["rounds"]), calls=int(spec["calls"]), characters=n)


def _sprites_setup(num_characters: int, overrides=None):
    """``(cfg, model, data, render_s)``: the paper-setting SPRITES SVGP-VAE (no pretraining; ``overrides``:
    other ``Config`` fields) on ``num_characters`` training characters x 50 poses, with the experiment's
    batches of uint8 frames in memory; ``render_s``: seconds spent rendering the frames."""
    import numpy as np

    from svgpvae_paper.datasets.sprites import character_batches, sprites
    from svgpvae_paper.experiments.sprites import Config, build_model

    n = int(num_characters)
    t = time.perf_counter()
    ds = sprites(n + 10, seed=0, num_train_characters=n, train_poses_per_character=50, num_context_poses=36)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    render_s = time.perf_counter() - t
    cfg = Config(num_characters=n + 10, num_train_characters=n, pretrain_epochs=0, **(overrides or {}))
    model, _ = build_model(cfg, frames, ds.train_characters, ds.train_poses)
    data = character_batches(
        ds.train_characters, ds.train_poses, frames, characters_per_batch=cfg.characters_per_batch, seed=0
    )
    return cfg, model, data, render_s


def _task_sprites_epochs(B, spec):
    """Wall and CPU seconds of whole SPRITES training epochs through the experiment's own data path."""
    from gpflow.keras import tf_keras

    from gpflow_svgpvae.training import GECO, train

    n = int(spec["characters"])
    cfg, model, data, render_s = _sprites_setup(n, spec.get("config"))
    wall, cpu = [], []

    def callback(epoch, logs):
        wall.append(time.perf_counter() - clock["wall"])
        cpu.append(time.process_time() - clock["cpu"])
        clock.update(wall=time.perf_counter(), cpu=time.process_time())

    clock = {"wall": time.perf_counter(), "cpu": time.process_time()}
    train(
        model,
        data,
        epochs=int(spec["epochs"]),
        optimizer=tf_keras.optimizers.Adam(cfg.learning_rate),
        objective=GECO(cfg.kappa_squared),
        seed=0,
        progress=False,
        callback=callback,
    )
    return dict(
        epoch_wall_s=wall,
        epoch_cpu_s=cpu,
        num_data=n * cfg.train_poses_per_character,
        steps_per_epoch=-(-n // cfg.characters_per_batch),
        render_s=render_s,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        _child(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()
