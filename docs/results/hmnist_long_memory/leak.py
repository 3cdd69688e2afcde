import os, sys, gc, collections
sys.path.insert(0, "/work/main")
from gpflow_svgpvae.experiments import hmnist as H
import numpy as np
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) / 1e6
cfg = H.Config(**{**H.LONG, "num_train_per_class": 12, "num_test_per_class": 6, "hidden": (32,), "epochs": 1,
                  "methods": ("vae", "gpvae", "svgpvae"), "seeds": (0,), "out": "/tmp/mem/out2", "nll_samples": 4})
data = H.load_data(cfg, 0)
def census():
    gc.collect()
    c = collections.Counter(type(o).__name__ for o in gc.get_objects())
    big = sum(o.nbytes for o in gc.get_objects() if isinstance(o, np.ndarray) and o.base is None)
    return {k: c[k] for k in ("SVGPVAE", "VAE", "GPVAE", "Functional", "Function", "ConcreteFunction", "FuncGraph", "TensorSliceDataset", "_TensorSliceDataset", "EagerTensor", "ResourceVariable", "Parameter")}, big/1e6
print("before", rss(), census(), flush=True)
for i in range(3):
    os.system("rm -rf /tmp/mem/out2")
    [H.run_method(m, cfg, i, data=data, progress=False) for m in cfg.methods]
    print("after", i, rss(), census(), flush=True)
