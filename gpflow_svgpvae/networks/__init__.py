"""Encoder/decoder building blocks shared by all models."""

from .conv import DepthwiseSumConv2D, RepeatUpsampling2D, UpsamplingConv2D, conv_decoder, conv_encoder
from .heads import GaussianSiteHead
from .init import set_output_bias
from .mlp import fan_in_truncated_normal, mlp_decoder, mlp_encoder
from .precision import PRECISIONS, network_precision
from .representation import StyleRepresentation, aggregate_by_group
from .validation import check_network

__all__ = [
    "GaussianSiteHead",
    "mlp_encoder",
    "mlp_decoder",
    "fan_in_truncated_normal",
    "conv_encoder",
    "conv_decoder",
    "RepeatUpsampling2D",
    "UpsamplingConv2D",
    "DepthwiseSumConv2D",
    "StyleRepresentation",
    "aggregate_by_group",
    "check_network",
    "set_output_bias",
    "network_precision",
    "PRECISIONS",
]
