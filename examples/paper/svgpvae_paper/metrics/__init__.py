"""Metrics of the SPRITES experiment: whether generated frames carry the right discrete style
attribute (:class:`ChoiceAccuracy`, :func:`palette_colour_accuracy`, :func:`nearest_rendering_accuracy`)."""

from .style import ChoiceAccuracy, nearest_rendering_accuracy, palette_colour_accuracy

__all__ = ["ChoiceAccuracy", "palette_colour_accuracy", "nearest_rendering_accuracy"]
