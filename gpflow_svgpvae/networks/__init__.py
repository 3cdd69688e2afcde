"""Encoder/decoder building blocks shared by all models."""
from .heads import GaussianSiteHead
from .mlp import mlp_decoder, mlp_encoder
from .validation import check_network

__all__ = ["GaussianSiteHead", "mlp_encoder", "mlp_decoder", "check_network"]
