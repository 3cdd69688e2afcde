"""Restores that either fit the model whole or change nothing.

TensorFlow restores variable by variable and raises at the first shape that does not fit, after
overwriting the variables before it, naming a graph variable ("... name Variable:0").
:func:`check_checkpoint` reads the checkpoint's object graph and shapes first, matches them to
the live objects as a restore does (by attribute paths), and refuses a checkpoint that does not
fit, naming every mismatch in the model's terms (inducing inputs, encoder and decoder layers,
the number of latent channels, the likelihood).
"""

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from ..models.base import LatentVariableAutoencoder

__all__ = ["check_checkpoint", "restore_checkpoint", "RunSettings", "check_run_settings"]

_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _checkpoint_path(path) -> str:
    """``path`` as a checkpoint prefix (a directory gives its latest checkpoint).

    :raises ValueError: if there is no checkpoint at ``path``.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"No checkpoint in the directory {path!r}.")
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise ValueError(f"No checkpoint at {path!r} (expected the files {path}.index and {path}.data-*).")
    return path


def _children(obj) -> Dict[str, object]:
    try:
        return dict(obj._trackable_children(save_type="checkpoint"))
    except Exception:  # not trackable
        return {}


def _is_variable(obj) -> bool:
    return isinstance(obj, tf.Variable) or hasattr(obj, "_distribute_strategy") and hasattr(obj, "shape")


class _Walk:
    """The checkpoint's object graph walked beside the live objects."""

    def __init__(self, reader, graph):
        self.shapes = reader.get_variable_to_shape_map()
        self.graph = graph
        self.mismatches: List[Tuple[Optional[LatentVariableAutoencoder], List[str], list, object, object]] = []
        self.visited = set()
        self.nodes = set()

    def walk(self, node_id: int, live, path: List[str], owner, layers: List[str]) -> None:
        if node_id in self.nodes:  # reached before by another name (Keras tracks layers twice)
            return
        self.nodes.add(node_id)
        node = self.graph.nodes[node_id]
        if isinstance(live, LatentVariableAutoencoder):
            owner, path, layers = live, [], []
        for attribute in node.attributes:
            if attribute.name != "VARIABLE_VALUE" or attribute.checkpoint_key not in self.shapes:
                continue
            saved = list(self.shapes[attribute.checkpoint_key])
            if live is None:
                self.mismatches.append((owner, path, layers, "missing in the model", saved))
            elif _is_variable(live):
                self.visited.add(id(live))
                shape = [int(d) if d is not None else None for d in live.shape]
                if shape != saved:
                    self.mismatches.append((owner, path, layers, saved, shape))
        children = _children(live) if live is not None else {}
        for child in node.children:
            target = children.get(child.local_name)
            name = getattr(target, "name", None)
            named = (
                layers + [name] if isinstance(target, tf.Module) and name and "layer" in child.local_name else layers
            )
            self.walk(child.node_id, target, path + [child.local_name], owner, named)


def _model_term(path: List[str], layers: List[str]) -> str:
    """A path of attribute names below a model, in the model's words."""
    parts = [p for p in path if p not in ("_pretransformed_input",)]
    if not parts:
        return "a variable"
    head = parts[0]
    if head in ("encoder", "decoder"):
        layer = f"layer {layers[-1]!r}" if layers else "a layer"
        return f"{head} {layer} {parts[-1]}"
    if head == "inducing_variable":
        return "inducing inputs (inducing_variable." + ".".join(parts[1:]) + ")"
    if head == "likelihood":
        return "likelihood parameter " + ".".join(parts[1:])
    return ".".join(parts)


def _describe(owner, path, layers, saved, current) -> str:
    term = _model_term(path, layers)
    if isinstance(saved, str):  # a checkpoint variable without a counterpart
        extra = ""
        if path and path[0] == "likelihood" and owner is not None:
            extra = f" (the model's likelihood is {type(owner.likelihood).__name__})"
        return f"{term}: the checkpoint has it (shape {current}), the model does not{extra}"
    if path[:1] == ["inducing_variable"] and len(saved) == 2 and len(current) == 2:
        if saved[0] != current[0]:
            return f"inducing inputs: checkpoint has {saved[0]}, model has {current[0]}"
        return f"inducing inputs' width (input dimensions): checkpoint has {saved[1]}, model has {current[1]}"
    if path[:1] in (["encoder"], ["decoder"]) and path[-1] == "kernel" and len(saved) == len(current) >= 2:
        what = []
        if saved[-1] != current[-1]:
            what.append(f"width {saved[-1]} in the checkpoint, {current[-1]} in the model")
        if saved[-2] != current[-2]:
            what.append(f"input width {saved[-2]} in the checkpoint, {current[-2]} in the model")
        return f"{term[: -len(' kernel')]}: " + "; ".join(what)
    return f"{term}: checkpoint shape {saved}, model shape {current}"


def _latent_channels(owner, mismatches) -> Optional[str]:
    """The number of latent channels L, when the decoder's first layer takes another input width."""
    for m_owner, path, _, saved, current in mismatches:
        if m_owner is owner and path == ["decoder", "layer_with_weights-0", "kernel"] and not isinstance(saved, str):
            if len(saved) == 2 and len(current) == 2 and saved[0] != current[0]:
                return (
                    f"L (latent channels, the decoder's input width): checkpoint has {saved[0]}, model has {current[0]}"
                )
    return None


def _live_paths(model) -> Dict[int, Tuple[List[str], List[str]]]:
    """``id(variable) -> (path of attribute names, layer names on the way)`` below ``model``, breadth first
    (as a checkpoint names them)."""
    paths: Dict[int, Tuple[List[str], List[str]]] = {}
    seen = {id(model)}
    queue: List[Tuple[Any, List[str], List[str]]] = [(model, [], [])]
    while queue:
        obj, path, layers = queue.pop(0)
        for name, child in _children(obj).items():
            if id(child) in seen:
                continue
            seen.add(id(child))
            label = getattr(child, "name", None)
            named = layers + [label] if isinstance(child, tf.Module) and label and "layer" in name else layers
            if _is_variable(child):
                paths[id(child)] = (path + [name], named)
            else:
                queue.append((child, path + [name], named))
    return paths


def check_checkpoint(path, root=None, **objects) -> str:
    """Refuse a checkpoint that does not fit ``root`` (or ``tf.train.Checkpoint(**objects)``) whole,
    before any variable changes.

    A checkpoint fits when every variable it holds for a model has a variable of the same shape at
    the same place in the model and every model variable is in it. Objects outside models
    (optimisers, counters) are checked for shapes where both have the variable.

    :param path: a checkpoint prefix or a directory (its latest checkpoint).
    :return: the checkpoint prefix.
    :raises ValueError: naming every mismatched part (e.g. "inducing inputs: checkpoint has 6,
        model has 10"; an encoder layer's width; L; a likelihood parameter the other model lacks).
    """
    path = _checkpoint_path(path)
    root = tf.train.Checkpoint(**objects) if root is None else root
    reader = tf.train.load_checkpoint(path)
    if not reader.has_tensor(_GRAPH_KEY):
        return path  # a name-based (TF1) checkpoint: nothing to match by object
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
    walk = _Walk(reader, graph)
    walk.walk(0, root, [], None, [])
    models = _models(root)
    for model in models:  # model variables the checkpoint does not hold
        for key, (where, layers) in _live_paths(model).items():
            if key not in walk.visited:
                shape = [int(d) if d is not None else None for d in _shape_of(model, key)]
                walk.mismatches.append((model, where, layers, "missing in the checkpoint", shape))
    in_models = [m for m in walk.mismatches if m[0] is not None]
    lines = []
    for owner in dict.fromkeys(m[0] for m in in_models):
        latent = _latent_channels(owner, in_models)
        if latent:
            lines.append(latent)
        kernels = {tuple(m[1][:-1]) for m in in_models if m[1][-1:] == ["kernel"] and not isinstance(m[3], str)}
        for m in in_models:
            if m[0] is owner and not (m[1][-1:] == ["bias"] and tuple(m[1][:-1]) in kernels):  # said with its kernel
                lines.append(_describe_any(*m))
    if not in_models:  # only outside models (e.g. an optimiser built for other variables)
        lines = [  # objects that do not exist yet (e.g. a save counter) are created by the restore
            f"{'/'.join(p)}: checkpoint shape {s}, current shape {c}"
            for _, p, _, s, c in walk.mismatches
            if not isinstance(s, str)
        ]
    if lines:
        shown = lines[:12] + ([f"... and {len(lines) - 12} more"] if len(lines) > 12 else [])
        raise ValueError(
            f"The checkpoint {path!r} does not fit the model, so nothing was restored:\n  - "
            + "\n  - ".join(shown)
            + "\nBuild the model as it was when the checkpoint was written (the same inducing inputs, networks, "
            "L and likelihood), or start afresh with another checkpoint directory."
        )
    return path


def _shape_of(model, key):
    for variable in model.variables:
        if id(variable) == key:
            return variable.shape
    return []


def _describe_any(owner, path, layers, saved, current) -> str:
    if saved == "missing in the checkpoint":
        return f"{_model_term(path, layers)}: the model has it (shape {current}), the checkpoint does not"
    return _describe(owner, path, layers, saved, current)


def _models(root) -> List[LatentVariableAutoencoder]:
    found, seen, stack = [], set(), [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, LatentVariableAutoencoder):
            found.append(obj)
            continue
        if _is_variable(obj):
            continue
        stack.extend(_children(obj).values())
    return found


def restore_checkpoint(path, **objects):
    """``tf.train.Checkpoint(**objects).restore(path)`` after :func:`check_checkpoint`: a checkpoint
    that does not fit is refused before any variable changes.

    :param path: a checkpoint prefix or a directory (its latest checkpoint).
    :return: the restore status.
    """
    checkpoint = tf.train.Checkpoint(**objects)
    return checkpoint.restore(check_checkpoint(path, root=checkpoint))


class RunSettings(tf.Module):
    """A training run's settings as variables (``run/<name>`` in its checkpoints), so that a
    resumed run can be compared with the one that wrote the checkpoint."""

    def __init__(self, **settings: int):
        super().__init__(name="run")
        for key, value in settings.items():
            setattr(self, key, tf.Variable(int(value), dtype=tf.int64, trainable=False, name=key))


def check_run_settings(path, what: Dict[str, Callable[[int], str]], **settings: int) -> None:
    """Refuse to resume the run of checkpoint ``path`` with other ``settings`` (names of
    :class:`RunSettings` variables; ``what[name]`` renders a value, e.g. -1 for "a dataset").

    :raises ValueError: naming each changed setting, its saved and its given value, and what to do.
    """
    reader = tf.train.load_checkpoint(path)
    changed = []
    for key, value in settings.items():
        name = f"run/{key}/.ATTRIBUTES/VARIABLE_VALUE"
        if reader.has_tensor(name):
            saved = int(reader.get_tensor(name))
            if saved != int(value):
                show = what.get(key, lambda v: str(v))
                changed.append(f"{key}: the checkpoint's run used {show(saved)}, this call {show(int(value))}")
    if changed:
        raise ValueError(
            f"Cannot resume from {path!r} with other settings, so nothing was restored:\n  - "
            + "\n  - ".join(changed)
            + "\nResuming would replay the saved data order with other batches and count epochs and steps "
            "wrongly. Pass the saved values to continue that run, or give another checkpoint_dir to start a new one."
        )
