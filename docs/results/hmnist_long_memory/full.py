import os, sys, gc, time
sys.path.insert(0, "/work/main")
import numpy as np
from gpflow_svgpvae.experiments import hmnist as H
def st():
    d = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":"); d[k] = round(int(v.split()[0]) / 1e6, 2)
    return d
cfg = H.Config(**{**H.LONG, "epochs": 1, "methods": ("vae", "svgpvae"), "out": "/tmp/mem/out_full",
                  "site_parametrization": "natural", "shared_channels": 8, "num_inducing": 34, "frames_per_sequence": 50})
t0 = time.time()
for seed in (0, 1, 2):
    data = H.load_data(cfg, seed)
    print(f"{time.time()-t0:.0f}s seed {seed} loaded", st(), flush=True)
    for m in cfg.methods:
        r = H.run_method(m, cfg, seed, data=data, progress=False)
        gc.collect()
        print(f"{time.time()-t0:.0f}s seed {seed} {m} mse {r['mse']:.4f}", st(), flush=True)
    del data; gc.collect()
    print(f"{time.time()-t0:.0f}s seed {seed} done", st(), flush=True)
