"""``svgpvae``: one entry point for the paper's experiments.

    svgpvae moving_ball {rmse_vs_m,trajectories,lengthscale,inducing} [--quick] ...
    svgpvae rotated_mnist table1 [--quick] ...
    svgpvae rotated_mnist_figures {runtime,digits,batch_size,num_inducing,bias,tsne,init} [--quick] ...
    svgpvae sprites [--quick] ...
    svgpvae hmnist [--quick] [--long] [--timing [T ...]] ...

Each subcommand forwards its arguments to ``python -m gpflow_svgpvae.experiments.<name>``.
"""
import importlib
import sys
from typing import Optional, Sequence

EXPERIMENTS = ("moving_ball", "rotated_mnist", "rotated_mnist_figures", "sprites", "hmnist")


def main(argv: Optional[Sequence[str]] = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in EXPERIMENTS:
        print(f"svgpvae: unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"gpflow_svgpvae.experiments.{name}")
    module.main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
