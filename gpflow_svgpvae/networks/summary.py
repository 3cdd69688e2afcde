"""Readable ``gpflow.utilities.print_summary`` rows for Keras-2 networks.

GPflow's summary (``traverse_module``) and ``tf.Module._flatten`` (which gives a
GPflow model its ``variables`` and ``trainable_variables``, i.e. what trains)
both walk ``vars()`` of every ``tf.Module`` and skip the names in its
``_TF_MODULE_IGNORED_PROPERTIES``. A Keras layer lists its weights and sublayers
under several internal aliases (``_trainable_weights``, ``_output_layers``,
``_output_coordinates``, ...), so each weight appears under many paths.

:func:`tidy_module_tree` gives every Keras layer of a network an instance-level
ignore set that hides an alias *only while* everything in it is reachable
through an attribute that stays visible. The check runs at every walk, so
weights and layers created later (lazy ``build``) are never hidden from
training. Only ``vars()`` walks are affected: Keras' and TensorFlow's
checkpoint tracking is untouched.

The tidy tree is shown to GPflow's summary walk only (``traverse_module``: ``print_summary``,
``parameter_dict``, ``read_values``). ``tf.Module._flatten`` keeps seeing Keras' own tree, so
``trainable_variables`` keeps its order, and with it the optimisers' slots, which checkpoints
store by position: checkpoints written before tidying existed resume unchanged.
"""
import sys

import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.utilities import traversal as _gpflow_traversal

__all__ = ["tidy_module_tree"]

_IGNORE_ATTR = "_TF_MODULE_IGNORED_PROPERTIES"
# GPflow's summary walk; every other caller of ``name in ignored`` sees Keras' own tree.
_SUMMARY_WALK = _gpflow_traversal.traverse_module.__code__

# Attributes hidden while they only re-list objects reachable elsewhere.
_ALIASES = frozenset(
    (
        # Keras' tracking lists: weights are also attributes (Dense's ``kernel``),
        # sublayers are attributes or, in Functional/Sequential models, in ``layers``.
        "_trainable_weights",
        "_non_trainable_weights",
        "_self_tracked_trackables",
        # Functional/Sequential graph bookkeeping (layers of ``_self_tracked_trackables``,
        # nodes, KerasTensors and specs).
        "_input_layers",
        "_output_layers",
        "_input_coordinates",
        "_output_coordinates",
        "_nodes_by_depth",
        "_feed_inputs",
        "_feed_input_names",
        "_feed_input_shapes",
        "_nested_inputs",
        "_nested_outputs",
        "_inbound_nodes_value",
        "_outbound_nodes_value",
        "_tensor_usage_count",
        "_saved_model_arg_spec",
    )
)


def _modules_and_variables(value):
    """The ``tf.Module``/``tf.Variable`` objects in ``value``, looking into lists, tuples
    and dicts exactly as GPflow's ``traverse_module`` does (``tf.nest``, used by
    ``tf.Module._flatten``, looks into at least these), so what we count as reachable
    is reachable for both walkers."""
    if isinstance(value, (tf.Module, tf.Variable)):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _modules_and_variables(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _modules_and_variables(item)


def _visible_ids(layer, static_ignored, exclude=()):
    """ids of what the walkers reach through the attributes of ``layer`` that are never hidden."""
    return {
        id(obj)
        for name, value in vars(layer).items()
        if name not in _ALIASES and not frozenset.__contains__(static_ignored, name) and name not in exclude
        for obj in _modules_and_variables(value)
    }


def _is_covered(obj, visible) -> bool:
    # Input layers own no weights; Keras adds one to a Sequential at its lazy build.
    return id(obj) in visible or isinstance(obj, tf_keras.layers.InputLayer)


class _TidyIgnoredProperties(frozenset):
    """The ignore set of one tidied layer: Keras' own names plus the aliases of
    ``_ALIASES`` that are, at the time of the lookup, pure aliases.

    ``tf.Module._flatten_module`` only uses ``name in ignored``, GPflow's
    ``traverse_module`` also ``ignored.union(...)`` (for bijectors); both are supported.
    """

    __slots__ = ("_layer",)

    def __new__(cls, names, layer):
        self = super().__new__(cls, names)
        self._layer = layer
        return self

    def __contains__(self, name):
        if frozenset.__contains__(self, name):
            return True
        if sys._getframe(1).f_code is not _SUMMARY_WALK:
            # tf.Module._flatten (variables, their order, optimiser slots): Keras' tree as it was.
            return name == "layers" and isinstance(vars(self._layer).get("layers"), _ReadableLayers)
        if name not in _ALIASES:
            return False
        attrs = vars(self._layer)
        if name not in attrs:
            return False
        visible = _visible_ids(self._layer, self)
        return all(_is_covered(obj, visible) for obj in _modules_and_variables(attrs[name]))

    def union(self, *others):
        return _TidyIgnoredProperties(frozenset(self).union(*others), self._layer)

    def __reduce__(self):
        # copy.deepcopy/pickle of a layer copy its __dict__: rebind to the copied layer.
        return (_TidyIgnoredProperties, (frozenset(self), self._layer))


class _PositionalName(str):
    """A layer name that sorts by the layer's position in its model.

    ``tf.nest`` (so ``tf.Module._flatten`` and ``trainable_variables``) visits dict
    entries in sorted key order, and optimisers checkpoint their slots by position in
    ``trainable_variables``: that order must follow the model's structure, not
    auto-generated names (``"dense_10" < "dense_9"``), or a resumed run could get
    another variable's slots.
    """

    def __new__(cls, name, position):
        self = super().__new__(cls, name)
        self.position = position
        return self

    def __lt__(self, other):
        return self.position < other.position if isinstance(other, _PositionalName) else NotImplemented

    def __reduce__(self):
        return (_PositionalName, (str(self), self.position))


class _ReadableLayers(dict):
    """``{layer name: layer}`` placed in a model's ``__dict__`` for the summary (marks it as ours)."""


def _readable_sublayers(model, static_ignored):
    """``{name: layer}`` of the sublayers of ``model`` reachable only through
    ``_self_tracked_trackables`` (all of them in a Functional or Sequential model)."""
    visible = _visible_ids(model, static_ignored, exclude=("layers",))
    by_name = _ReadableLayers()
    for position, layer in enumerate(vars(model).get("_self_tracked_trackables", ())):
        if isinstance(layer, tf_keras.layers.Layer) and not _is_covered(layer, visible):
            # Names are unique in Keras models; a clash keeps the later layer in
            # ``_self_tracked_trackables``, which then stays visible.
            by_name.setdefault(_PositionalName(layer.name, position), layer)
    return by_name


def tidy_module_tree(network):
    """Hide Keras' internal aliases of ``network`` (a ``tf_keras`` layer or model) from
    ``print_summary`` and ``tf.Module`` walks without hiding any variable; returns it.

    Sublayers of Functional and Sequential models are listed under ``layers`` (a plain
    dict in the instance ``__dict__``, by layer name; attribute access ``model.layers``
    still returns Keras' list), so that summary rows read
    ``SVGPVAE.decoder.layers['dense'].kernel``. Idempotent; other objects are returned
    unchanged.
    """
    if not isinstance(network, tf_keras.layers.Layer):
        return network
    for layer in network._flatten_layers(include_self=True, recursive=True):
        static_ignored = frozenset(type(layer)._TF_MODULE_IGNORED_PROPERTIES) | {_IGNORE_ATTR}
        # Writing to __dict__ bypasses Keras' __setattr__, so nothing new is tracked
        # (checkpoints and saved models are unchanged).
        if isinstance(layer, tf_keras.Model) and isinstance(getattr(type(layer), "layers", None), property):
            readable = _readable_sublayers(layer, static_ignored)
            if readable:
                layer.__dict__["layers"] = readable
            else:
                layer.__dict__.pop("layers", None)
        layer.__dict__[_IGNORE_ATTR] = _TidyIgnoredProperties(static_ignored, layer)
    return network
