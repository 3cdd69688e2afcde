"""float32 N x N products in TensorFlow with THREADS intra-op threads: ``python gemm_threads.py N THREADS``."""
import os, sys, time
n = int(sys.argv[1]); threads = sys.argv[2]
os.environ["TF_NUM_INTRAOP_THREADS"] = threads; os.environ["TF_NUM_INTEROP_THREADS"] = "1"
import tensorflow as tf, numpy as np
a = tf.random.normal([n, n]); b = tf.random.normal([n, n])
f = tf.function(lambda a, b: tf.reduce_sum(tf.matmul(a, b)))
f(a, b).numpy()
best = 1e9
for _ in range(5):
    t = time.perf_counter(); c = time.process_time()
    for _ in range(10): f(a, b).numpy()
    w = (time.perf_counter() - t) / 10; best = min(best, w)
print(f"n={n} threads={threads}: {2 * n**3 / best / 1e9:.1f} GFLOP/s wall (best of 5)", flush=True)
