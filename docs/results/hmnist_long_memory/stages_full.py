import os, sys, gc, time
sys.path.insert(0, "/work/main")
import numpy as np
from gpflow_svgpvae.experiments import hmnist as H
def st():
    d = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":"); d[k] = round(int(v.split()[0]) / 1e6, 3)
    return d
def reset():
    open("/proc/self/clear_refs", "w").write("5")
cfg = H.Config(**{**H.LONG, "epochs": 1, "out": "/tmp/mem/out_st2"})
data = H.load_data(cfg, 0)
import tensorflow as tf
print("loaded", st(), flush=True); reset()
X_tr, Y_tr, M_tr = H.flat_arrays(data.train, np.uint8)
X_te, Y_te, M_te = H.flat_arrays(data.test)
truth = data.test.Y.reshape(Y_te.shape).astype(np.float32)
print("arrays", st(), flush=True); reset()
for method in ("vae",):
    model = H.build_model(method, cfg, 0)
    print(method, "built", st(), flush=True); reset()
    from gpflow_svgpvae.training import loop as L
    ds = L.make_dataset((X_tr, Y_tr, M_tr), cfg.batch_sequences, seed=0)
    print(method, "dataset made", st(), flush=True); reset()
    it = iter(ds); next(it); next(it)
    print(method, "two batches drawn", st(), flush=True); reset()
    del ds, it; gc.collect()
    H.train_model(model, method, cfg, (X_tr, Y_tr, M_tr), 0, False)
    print(method, "trained", st(), flush=True); reset()
    imputed, nll = H.impute_in_chunks(model, X_te, Y_te, M_te, truth, cfg.nll_samples, 0)
    print(method, "imputed", st(), flush=True); reset()
    from gpflow_svgpvae.metrics import classification_auroc
    order = H.classification_order(data.test, 0)
    classification_auroc(imputed[order].reshape(len(order), -1), data.test.labels[order], seed=0)
    print(method, "auroc", st(), flush=True); reset()
    del model, imputed; gc.collect()
