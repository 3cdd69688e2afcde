import numpy as np, tensorflow as tf, tempfile, os
Y = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
store = tf.Variable(Y, trainable=False)
ds = tf.data.Dataset.range(100).shuffle(100, seed=0, reshuffle_each_iteration=True).batch(8).map(lambda i: tf.gather(store, i)).prefetch(2)
it = iter(ds.repeat())
for _ in range(5): next(it)
ck = tf.train.Checkpoint(iterator=it)
path = ck.save(os.path.join(tempfile.mkdtemp(), "c"))
after = [next(it).numpy() for _ in range(20)]
it2 = iter(ds.repeat())
tf.train.Checkpoint(iterator=it2).restore(path)
again = [next(it2).numpy() for _ in range(20)]
print("resume equal:", all(np.array_equal(a, b) for a, b in zip(after, again)))
print("checkpoint files:", sorted(os.listdir(os.path.dirname(path))), [os.path.getsize(os.path.join(os.path.dirname(path), f)) for f in sorted(os.listdir(os.path.dirname(path)))])
