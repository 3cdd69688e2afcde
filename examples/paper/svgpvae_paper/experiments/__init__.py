"""The paper's experiments, one module each, run by the ``svgpvae`` command (:mod:`.cli`).

Kept free of imports: ``svgpvae --help`` imports this package and answers without
loading TensorFlow.
"""
