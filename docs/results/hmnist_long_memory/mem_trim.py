import os, sys, time, gc, dataclasses
sys.path.insert(0, "/work/main")
from gpflow_svgpvae.experiments import hmnist as H
def rss():
    d = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":"); d[k] = int(v.split()[0]) / 1e6
    return d
cfg = H.Config(**{**H.LONG, "num_train_per_class": 60, "num_test_per_class": 20, "epochs": 1,
                  "methods": ("vae", "gpvae", "svgpvae"), "seeds": (0, 1, 2, 3), "out": "/tmp/mem/out_trim",
                  "nll_samples": 4, "num_inducing": 20})
print("start", rss(), flush=True)
for seed in cfg.seeds:
    data = H.load_data(cfg, seed)
    print(f"seed {seed} data loaded", rss(), flush=True)
    for m in cfg.methods:
        r = H.run_method(m, cfg, seed, data=data, progress=False)
        gc.collect()
        print(f"seed {seed} {m:8s} mse {r['mse']:.4f}", rss(), flush=True)
    del data; gc.collect()
    print(f"seed {seed} before trim", rss(), flush=True)
    import ctypes; ctypes.CDLL("libc.so.6").malloc_trim(0)
    print(f"seed {seed} done", rss(), flush=True)
