"""The SPRITES networks of the paper's experiments and the decoder modulations found for them."""

from .conditioning import LatentMixing, LatentModulation
from .sprites import sprites_decoder, sprites_encoder

__all__ = ["sprites_encoder", "sprites_decoder", "LatentModulation", "LatentMixing"]
