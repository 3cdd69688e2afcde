r"""Style scores and style diagnostics of the SPRITES experiment (issue 12, items 1 and 2).

* :func:`style_scores` -- the style accuracy of generated frames
  (:meth:`SpritesDataset.style_accuracy <svgpvae_paper.datasets.sprites.SpritesDataset.style_accuracy>`:
  skin, hair, top and bottom colour, chance 1/6; hair shape, chance 1/5) as a
  JSON-ready summary.
* :func:`reconstruction_style` -- can the autoencoder reproduce a *training*
  frame's style at all? A seeded sample of training frames is encoded, the
  encoder means are decoded (no GP involved) and scored like the generations.
* :func:`style_probe` -- does the style vector carry the colours? The style
  vectors of the unseen characters (representation network summed over each
  character's context frames, as at generation) are mapped to each attribute's
  class by a standardised multinomial logistic regression (scikit-learn),
  scored by k-fold cross-validation over the test characters (at most 5 folds,
  seeded). ``majority`` is the same cross-validation predicting the training
  folds' most frequent class.
* :func:`pose_constant_fit` -- can the kernel's pose factor express a latent
  function that is the same at every pose (a character's colours)? With the
  paper's kernel the latent functions are bilinear in the *unit* style and pose
  vectors, so a pose-constant function exists only if the unit pose vectors
  share a component; the :math:`R^2` of the best least-squares fit of a constant
  by the unit pose vectors says how much of one does.
"""

from typing import Dict, Optional

import numpy as np

from gpflow_svgpvae.transforms import GroupRepresentation
from svgpvae_paper.datasets.sprites import STYLE_ATTRIBUTES, SpriteStyle, style_accuracy_summary
from svgpvae_paper.datasets.sprites.styles import _ATTRIBUTE_SIZES
from svgpvae_paper.networks.representation import character_styles

__all__ = [
    "STYLE_RULE",
    "style_scores",
    "reconstruction_style",
    "style_probe",
    "format_style",
    "pose_constant_fit",
    "inducing_span",
]

STYLE_RULE = (
    "per generated frame and colour attribute: mean generated colour over the pixels the TRUE label map assigns to "
    "the attribute (light + shaded slot) vs the mean each of the 6 options would render there; nearest (Euclidean "
    "RGB) correct, chance 1/6; frames without such pixels skipped. hair_shape: nearest (squared error) of the true "
    "frame re-drawn with each of the 5 hair shapes, chance 1/5"
)


def style_scores(ds, generated, characters, poses, *, hair_shape: bool = True) -> dict:
    """JSON-ready style accuracy of ``generated [..., 64, 64, 3]`` frames of ``characters`` in ``poses``
    (broadcast): ``{attribute: summary, "mean_colour_accuracy": float}``."""
    return style_accuracy_summary(ds.style_accuracy(generated, characters, poses, hair_shape=hair_shape))


def reconstruction_style(
    model, ds, train_frames, *, num_frames: int = 1000, seed: int = 0, batch_size: int = 500
) -> dict:
    """Decode the encoder means of a seeded sample of training frames and score their style.

    A decoder that reads GP inputs (``decoder_gp_columns``) gets each frame's GP inputs as in
    training: the style of all its character's training frames and its pose vector.

    :param train_frames: ``[C, P, 64, 64, 3]`` uint8 frames of ``ds.train_characters`` in ``ds.train_poses``.
    :returns: ``{"num_frames", "mse", "style_accuracy"}``.
    """
    C, P = ds.train_poses.shape
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(C * P, size=min(int(num_frames), C * P), replace=False))
    ci, pi = np.divmod(rows, P)
    frames = train_frames[ci, pi].astype(np.float32) / np.float32(255.0)
    means = model.encode_all(frames, batch_size=batch_size)[0].numpy()
    conditions = _training_decoder_conditions(model, ds, train_frames, ci, pi)
    decoded = np.concatenate(
        [
            np.asarray(
                model.decode_predictions(
                    means[s : s + batch_size],
                    np.zeros_like(means[s : s + batch_size]),
                    condition=None if conditions is None else conditions[s : s + batch_size],
                )
            )
            for s in range(0, len(rows), int(batch_size))
        ]
    )
    return {
        "description": "encoder means of a random sample of training frames, decoded (no GP), scored like the "
        "generations",
        "num_frames": int(len(rows)),
        "mse": float(np.mean((decoded.astype(np.float64) - frames) ** 2)),
        "style_accuracy": style_scores(ds, decoded, ds.train_characters[ci], ds.train_poses[ci, pi]),
    }


def _training_decoder_conditions(model, ds, train_frames, ci, pi, characters_per_chunk: int = 10):
    """What the decoder reads beside the code for training frames ``(ci, pi)`` (indices into
    ``train_frames``), ``[n, C]``: GP inputs mapped from whole characters as in a training batch;
    ``None`` for a decoder that reads the code alone."""
    if not getattr(model, "decoder_gp_columns", ()):
        return None
    P = train_frames.shape[1]
    out = np.zeros((len(ci), len(model.decoder_gp_columns)), np.float64)
    characters = np.unique(ci)
    for start in range(0, len(characters), int(characters_per_chunk)):
        chunk = characters[start : start + int(characters_per_chunk)]
        X = np.stack([np.repeat(ds.train_characters[chunk], P), ds.train_poses[chunk].ravel()], -1).astype(np.float64)
        Y = train_frames[chunk].reshape((-1,) + train_frames.shape[2:]).astype(np.float32) / np.float32(255.0)
        mapped = model.decoder_condition(model.map_inputs(X, Y, training=False)).numpy().reshape(len(chunk), P, -1)
        for k, c in enumerate(chunk):
            picked = ci == c
            out[picked] = mapped[k, pi[picked]]
    return out


def unit_rows(vectors) -> np.ndarray:
    """Rows scaled to unit length (the cosine kernels' view of their inputs), float64."""
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def pose_constant_fit(pose_vectors) -> float:
    r""":math:`R^2 = 1 - \min_w \lVert U w - \mathbf 1\rVert^2 / P` of the ``[P, Q]`` unit pose
    vectors ``U``: 1 when a linear function of the unit pose vectors is constant over the
    poses, 0 when none has any constant part (the fitted values average 0)."""
    unit = unit_rows(pose_vectors)
    ones = np.ones(len(unit))
    w = np.linalg.lstsq(unit, ones, rcond=None)[0]
    return float(1.0 - np.sum((unit @ w - ones) ** 2) / len(unit))


def inducing_span(inducing_inputs, style_dim: int) -> dict:
    r"""How much of the paper kernel's function space the inducing points span.

    With :math:`k = \sigma^2 \cos(s, s') \cos(p, p')` every posterior mean is
    :math:`f(s, p) = u(s)^\top W u(p)` with :math:`W = \sum_j \alpha_j u(s_j) u(p_j)^\top`
    (``u`` the unit vector): ``W`` ranges over the span of the ``m`` rank-one matrices of the
    inducing inputs :math:`(s_j, p_j)`, at most :math:`d Q` dimensions (all bilinear functions).

    :param inducing_inputs: ``[m, d + Q]`` rows ``[style, pose]``.
    :return: ``{"rank": dim of that span, "full": d * Q, "num_inducing": m}``.
    """
    Z = np.asarray(inducing_inputs, dtype=np.float64)
    S, P = unit_rows(Z[:, :style_dim]), unit_rows(Z[:, style_dim:])
    products = np.einsum("md,mq->mdq", S, P).reshape(len(Z), -1)  # [m, d Q]
    return {"rank": int(np.linalg.matrix_rank(products)), "full": int(products.shape[1]), "num_inducing": int(len(Z))}


def find_transform(model, kind):
    """The first transform of type ``kind`` in the model's input transform (searched through
    ``Chain``/``Concatenate``)."""
    stack = [getattr(model, "input_transform", None) or getattr(model, "condition", None)]
    while stack:
        t = stack.pop(0)
        if isinstance(t, kind):
            return t
        stack.extend(getattr(t, "transforms", []))
    raise ValueError(f"the model's input transform has no {kind.__name__}")


def _representation(model):
    """The :class:`~gpflow_svgpvae.networks.representation.StyleRepresentation` in the model's input transform."""
    return find_transform(model, GroupRepresentation).representation


def _cv_accuracy(
    features: np.ndarray, labels: np.ndarray, folds: int, seed: int, groups: Optional[np.ndarray] = None
) -> Dict[str, Optional[float]]:
    """k-fold accuracy of a standardised logistic regression (``groups``: rows of a group stay in one fold)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n = len(labels)
    probe = np.empty(n, labels.dtype)
    majority = np.empty(n, labels.dtype)
    if groups is None:
        splits = KFold(n_splits=folds, shuffle=True, random_state=seed).split(features)
    else:
        splits = GroupKFold(n_splits=folds).split(features, groups=groups)
    for train, test in splits:
        classes, counts = np.unique(labels[train], return_counts=True)
        majority[test] = classes[np.argmax(counts)]
        if len(classes) == 1:
            probe[test] = classes[0]
            continue
        classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        probe[test] = classifier.fit(features[train], labels[train]).predict(features[test])
    return {"accuracy": float(np.mean(probe == labels)), "majority": float(np.mean(majority == labels))}


def style_probe(model, ds, context_frames, *, seed: int = 0) -> dict:
    """Cross-validated linear probe from the unseen characters' style vectors to their attribute classes.

    :param context_frames: ``[n_test, Q, 64, 64, 3]`` float frames of ``ds.test_characters`` in
        ``ds.test_context_poses`` (the frames the style is computed from at generation).
    :returns: ``{"num_characters", "folds", attribute: {"accuracy", "majority", "chance"}}``.
    """
    V, Q = context_frames.shape[:2]
    representation = _representation(model)
    ids, styles = character_styles(
        representation,
        context_frames.reshape((V * Q,) + context_frames.shape[2:]),
        np.repeat(np.asarray(ds.test_characters), Q),
    )
    order = {int(c): i for i, c in enumerate(ids)}
    styles = styles[[order[int(c)] for c in ds.test_characters]]
    labels = np.asarray(ds.attributes)[np.asarray(ds.test_characters)]
    folds = int(min(5, V))
    result = {
        "description": "style vector of each unseen character (summed over its context frames) -> attribute "
        "class; standardised logistic regression, k-fold cross-validation over the test characters; "
        "'majority' predicts the training folds' most frequent class",
        "num_characters": int(V),
        "folds": folds,
    }
    if folds < 2:
        return result
    for name in STYLE_ATTRIBUTES:
        column = SpriteStyle._fields.index(name)
        scores = _cv_accuracy(styles, labels[:, column], folds, seed)
        result[name] = {**scores, "chance": 1.0 / _ATTRIBUTE_SIZES[column]}
    return result


def format_style(summary: dict) -> str:
    """``'skin 0.95, hair 0.90, top 0.93, bottom 0.91, hair shape 0.80'`` of a :func:`style_scores` summary."""
    names = {
        "skin": "skin",
        "hair_colour": "hair",
        "top_colour": "top",
        "bottom_colour": "bottom",
        "hair_shape": "hair shape",
    }
    parts = []
    for key, label in names.items():
        if key in summary:
            acc = summary[key]["accuracy"]
            parts.append(f"{label} {acc:.2f}" if acc is not None else f"{label} -")
    return ", ".join(parts)
