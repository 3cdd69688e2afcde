"""gpflow_svgpvae: scalable GP-prior variational autoencoders for GPflow."""
