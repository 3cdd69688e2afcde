"""svgpvae_paper: the SVGP-VAE paper's experiments on top of the ``gpflow_svgpvae`` library.

The experiments (:mod:`svgpvae_paper.experiments`, the ``svgpvae`` command), the data
generators and metrics only they use (:mod:`svgpvae_paper.datasets`,
:mod:`svgpvae_paper.metrics`), the SPRITES networks and kernel, the benchmark helpers
(:mod:`svgpvae_paper.bench`) and the diagnosis studies. The library never imports this
package.

Kept free of imports: ``svgpvae --help`` imports this package and answers without
loading TensorFlow.
"""
