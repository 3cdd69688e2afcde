"""Packaging for gpflow_svgpvae.

The runtime pins are one tested set: GPflow 2.11 needs numpy<2 and runs on the
TensorFlow / tf-keras / TFP versions below (see the README).
"""

from setuptools import find_packages, setup

INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tf-keras==2.21.0",
    "tensorboard==2.21.0",  # the Keras TensorBoard callback needs it; TensorFlow 2.21 no longer installs it
    "tensorflow-probability==0.25.0",
    "gpflow==2.11.2",
    "check-shapes==1.1.1",
    "numpy==1.26.4",
    "scipy==1.17.1",
    "matplotlib==3.11.2",
    "tqdm==4.70.1",
    "mlxtend==0.23.4",
    "scikit-learn==1.9.1",
]

EXTRAS_REQUIRE = {
    "test": ["pytest==9.2.0", "pytest-xdist==3.8.0", "jupytext==1.19.6"],
}

setup(
    name="gpflow_svgpvae",
    version="0.1.0",
    description="Scalable Gaussian-process-prior variational autoencoders (SVGP-VAE) for GPflow",
    long_description=open("README.md").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["gpflow_svgpvae", "gpflow_svgpvae.*"]),
    python_requires=">=3.11,<3.12",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
)
