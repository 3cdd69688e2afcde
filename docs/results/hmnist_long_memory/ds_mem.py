import sys, gc, numpy as np
variant = sys.argv[1]
import tensorflow as tf
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"): return round(int(line.split()[1]) / 1e6, 3)
Y = np.random.default_rng(0).integers(0, 2, size=(4000, 100, 784), dtype=np.uint8)  # 314 MB
X = np.zeros((4000, 100, 1))
base = rss(); print(variant, "arrays", base)
if variant == "old":
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(4000, seed=0).batch(16)
elif variant == "capture":
    t = (tf.convert_to_tensor(X), tf.convert_to_tensor(Y))
    ds = tf.data.Dataset.range(4000).shuffle(4000, seed=0).batch(16).map(lambda i: tuple(tf.gather(p, i) for p in t))
elif variant == "from_tensors":
    t = (tf.convert_to_tensor(X), tf.convert_to_tensor(Y))
    idx = tf.data.Dataset.range(4000).shuffle(4000, seed=0).batch(16)
    ds = tf.data.Dataset.zip((idx, tf.data.Dataset.from_tensors(t).repeat())).map(lambda i, t: tuple(tf.gather(p, i) for p in t))
elif variant == "variable":
    t = (tf.Variable(X, trainable=False), tf.Variable(Y, trainable=False))
    ds = tf.data.Dataset.range(4000).shuffle(4000, seed=0).batch(16).map(lambda i: tuple(tf.gather(p, i) for p in t))
elif variant == "slices_gather":
    whole = tf.data.Dataset.from_tensor_slices((X, Y))
    ds = None
print(variant, "made", round(rss() - base, 3))
it = iter(ds); next(it); next(it)
print(variant, "drawn", round(rss() - base, 3))
for _ in range(200): next(it)
print(variant, "after 300 batches", round(rss() - base, 3))
