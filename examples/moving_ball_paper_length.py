"""Paper-length (25,000-step) moving-ball runs of selected models, one after another.

    python examples/moving_ball_paper_length.py gpvae svgpvae:10 vae

Each argument is ``kind`` or ``kind:m``; seed 0, MLPs 256x256, GP learning
rate 1e-2 (the settings of ``docs/results.md``). Runs are cached in
``results/moving_ball/runs`` under the same keys as
``svgpvae moving_ball rmse_vs_m --steps 25000 --hidden 256 256 --gp-lr 0.01 --record-every 50``,
so that command reuses them. About 25-30 min per run on one CPU core.
"""
import sys

from gpflow_svgpvae.datasets.moving_ball import moving_ball_test_set
from gpflow_svgpvae.experiments.moving_ball import Config, train_run


def main(specs):
    cfg = Config(steps=25000, hidden=(256, 256), gp_learning_rate=0.01, record_every=50)
    test = moving_ball_test_set(cfg.test_videos, seed=cfg.test_seed)
    for spec in specs:
        kind, _, m = spec.partition(":")
        r = train_run(kind, cfg, 0, m=int(m) if m else None, cache_dir="results/moving_ball/runs", test=test)
        print(f"{spec}: RMSE {r['rmse']:.3f}, lengthscale {r['final_lengthscale']:.2f}, {r['wall_seconds']:.0f} s",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["gpvae", "svgpvae:10", "vae"])
