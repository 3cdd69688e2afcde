"""The networks of the paper's experiments: the SPRITES encoder, decoder and representation network,
and the decoder modulations found for them."""

from .conditioning import LatentMixing, LatentModulation
from .representation import character_styles, pretrain_representation, representation_and_table, representation_network
from .sprites import sprites_decoder, sprites_encoder

__all__ = [
    "sprites_encoder",
    "sprites_decoder",
    "LatentModulation",
    "LatentMixing",
    "representation_network",
    "pretrain_representation",
    "character_styles",
    "representation_and_table",
]
