"""SVGP-VAE (or VAE) epochs of the rotated-MNIST benchmark model under given TensorFlow thread
settings: ``python docs/results/benchmark_decoder_windows_2026-11-29/threads_epoch.py INTRA INTER svgpvae``
(``d d``: TensorFlow's defaults). One warm-up epoch, then 12 timed.
"""
import os, sys, time
intra, inter, kind = sys.argv[1], sys.argv[2], sys.argv[3]
if intra != "d":
    os.environ["TF_NUM_INTRAOP_THREADS"] = intra; os.environ["TF_NUM_INTEROP_THREADS"] = inter
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")  # run from the repository root
import numpy as np, bench_lib as B
data = B.rotated_mnist_data(None)
st = B.Stepper(B.build(kind, data), B.dataset(data, 256, video=(kind == "vae")))
walls = [st.epoch() for _ in range(13)][1:]
cpu = st.cpu_times[1:]
print(f"{kind} intra={intra} inter={inter}: wall median {np.median(walls):.3f} min {np.min(walls):.3f}  CPU median {np.median(cpu):.3f}", flush=True)
