import sys, numpy as np
sys.path.insert(0, "/work/main")
def st():
    d = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":"); d[k] = round(int(v.split()[0]) / 1e6, 3)
    return d
from gpflow_svgpvae.metrics import classification_auroc
rng = np.random.default_rng(0)
labels = np.tile(np.arange(10), 100)
proto = rng.random((10, 100 * 784)).astype(np.float32)
imputed = (0.7 * proto[labels] + 0.3 * rng.random((1000, 100 * 784), dtype=np.float32)).astype(np.float32)
print("features", imputed.nbytes / 1e6, "MB", st(), flush=True)
open("/proc/self/clear_refs", "w").write("5")
print("auroc", classification_auroc(imputed, labels, seed=0), st(), flush=True)
