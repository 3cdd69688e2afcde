"""SPRITES SVGP-VAE: per-character batching, pose PCA init, input mapping, generation, smoke training."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae.auxiliary import ObjectVectors
from gpflow_svgpvae.models.svgpvae import SVGPVAE
from gpflow_svgpvae.networks.representation import StyleRepresentation
from gpflow_svgpvae.training import GECO, train
from svgpvae_paper.datasets.sprites import (
    character_batches,
    init_sprites_inducing,
    mean_frames_per_pose,
    pca_pose_vectors,
    sprites,
)
from svgpvae_paper.kernels import sprites_kernel
from svgpvae_paper.networks import sprites_decoder, sprites_encoder
from svgpvae_paper.networks.representation import character_styles, representation_and_table, representation_network


@pytest.fixture(scope="module")
def data():
    ds = sprites(10, seed=0, num_train_characters=6, train_poses_per_character=5, num_context_poses=36)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)
    return ds, frames


def build(ds, frames, L=4, M=8, seed=0):
    tf_keras.utils.set_random_seed(seed)
    C, P = ds.train_poses.shape
    pose_init = np.random.default_rng(seed).normal(size=(72, 8))
    rep = StyleRepresentation(representation_network())
    _, styles = character_styles(rep, frames.reshape(-1, 64, 64, 3), np.repeat(ds.train_characters, P))
    Z = init_sprites_inducing(pose_init, styles, M, seed=seed)
    table = ObjectVectors(72, 8, id_column=0, num_view_features=0, initial_vectors=pose_init)
    kernel = sprites_kernel(list(range(16)), list(range(16, 24)), noise_variance=1e-2)
    return SVGPVAE(
        sprites_encoder(L),
        sprites_decoder(L),
        kernel,
        Z,
        num_data=C * P,
        num_latent_gps=L,
        seed=seed,
        input_transform=representation_and_table(rep, table, group_column=0, id_column=1),
    )


def pose_table(model) -> ObjectVectors:
    return model.input_transform.transforms[1].transforms[1]


def representation(model) -> StyleRepresentation:
    return model.input_transform.transforms[0].representation


def raw(ids, poses):
    """``[V, n, 2]`` rows ``[character id, pose id]``."""
    ids, poses = np.asarray(ids, np.float64), np.asarray(poses, np.float64)
    return np.stack([np.broadcast_to(ids[:, None], poses.shape), poses], -1)


@pytest.fixture(scope="module")
def model(data):
    return build(*data)


# ------------------------------------------------------------------------ batching
def test_character_batches_hold_whole_characters(data):
    ds, frames = data
    C, P = ds.train_poses.shape
    dataset = character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=4, seed=3)
    epochs = []
    for _ in range(2):
        seen = []
        for X, Y in dataset:
            X, Y = X.numpy(), Y.numpy()
            assert X.dtype == np.float64 and Y.dtype == np.float32 and len(X) % P == 0
            for block in range(len(X) // P):
                rows = slice(block * P, (block + 1) * P)
                chars = X[rows, 0].astype(int)
                assert np.all(chars == chars[0])  # a block is one character, whole and contiguous
                row = int(np.flatnonzero(ds.train_characters == chars[0])[0])
                np.testing.assert_array_equal(X[rows, 1], ds.train_poses[row])
                np.testing.assert_array_equal(Y[rows], ds.frames_for(chars, X[rows, 1].astype(int)))
                seen.append(chars[0])
        assert sorted(seen) == sorted(ds.train_characters)  # each character once per epoch
        epochs.append(seen)
    assert epochs[0] != epochs[1]  # reshuffled between epochs ...
    again = [
        int(X[0, 0])
        for X, _ in character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=4, seed=3)
    ]
    assert again == [epochs[0][0], epochs[0][4]]  # ... deterministically from the seed


def test_rendered_batches_equal_stored_batches_and_frame_shuffling(data):
    ds, frames = data
    a = list(character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=3, seed=1))
    b = list(
        character_batches(
            ds.train_characters, ds.train_poses, render=lambda c, p: ds.frames_for(c, p), characters_per_batch=3, seed=1
        )
    )
    for (Xa, Ya), (Xb, Yb) in zip(a, b):
        np.testing.assert_array_equal(Xa.numpy(), Xb.numpy())
        np.testing.assert_array_equal(Ya.numpy(), Yb.numpy())
    shuffled = list(character_batches(ds.train_characters, ds.train_poses, frames, group=False, batch_size=7))
    X = np.concatenate([x.numpy() for x, _ in shuffled])
    assert len(X) == frames.shape[0] * frames.shape[1]
    assert len({tuple(r) for r in X}) == len(X)  # every frame exactly once
    with pytest.raises(ValueError, match="exactly one"):
        character_batches(ds.train_characters, ds.train_poses)


# ------------------------------------------------------------------ pose PCA init
def test_pose_pca_init_matches_numpy():
    ds = sprites(8, seed=1, num_train_characters=5, train_poses_per_character=20)
    frames = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.float32)
    means, counts = mean_frames_per_pose(frames, ds.train_poses, chunk=2)
    vectors = pca_pose_vectors(means, counts, Q=8)
    # numpy reference: mean frame per pose (loop), centred SVD, top-8 scores
    flat, poses = frames.reshape(-1, 64 * 64 * 3).astype(np.float64), ds.train_poses.reshape(-1)
    observed = np.unique(poses)
    ref_means = np.stack([flat[poses == p].mean(0) for p in observed])
    np.testing.assert_allclose(means[observed].reshape(len(observed), -1), ref_means, atol=1e-12)
    np.testing.assert_array_equal(counts[observed], [np.sum(poses == p) for p in observed])
    centred = ref_means - ref_means.mean(0)
    U, S, Vt = np.linalg.svd(centred, full_matrices=False)
    ref = U[:, :8] * S[:8]
    got = vectors[observed]
    signs = np.sign(np.sum(got * ref, axis=0))
    np.testing.assert_allclose(got, ref * signs, rtol=1e-8, atol=1e-8)
    # uint8 frames and on-demand rendering give the same means
    u8 = ds.frames_for(ds.train_characters[:, None], ds.train_poses, dtype=np.uint8)

    def render(rows):
        return ds.frames_for(ds.train_characters[rows][:, None], ds.train_poses[rows])

    np.testing.assert_allclose(mean_frames_per_pose(u8, ds.train_poses)[0], means, atol=1e-6)
    np.testing.assert_allclose(mean_frames_per_pose(render, ds.train_poses)[0], means, atol=1e-6)
    # poses never seen in training get finite vectors from the fitted Gaussian
    missing = np.setdiff1d(np.arange(72), observed)
    assert len(missing) > 0 and np.all(np.isfinite(vectors[missing]))


def test_inducing_init_one_point_per_pose():
    pose = np.random.default_rng(0).normal(size=(72, 8))
    styles = np.random.default_rng(1).normal(size=(30, 16))
    Z = init_sprites_inducing(pose, styles, 72)
    assert Z.shape == (72, 24)
    np.testing.assert_array_equal(Z[:, 16:], pose)


# ----------------------------------------------------------------------- the model
def test_map_inputs_is_style_and_pose_vector_and_order_invariant(data, model):
    ds, frames = data
    X, Y = next(iter(character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=3)))
    mapped = model.map_inputs(X, Y).numpy()
    assert mapped.shape == (15, 24) and mapped.dtype == np.float64
    features = representation(model).frame_features(Y).numpy().astype(np.float64)
    chars = X.numpy()[:, 0]
    for c in np.unique(chars):
        np.testing.assert_allclose(
            mapped[chars == c, :16], np.broadcast_to(features[chars == c].sum(0), (5, 16)), rtol=1e-5, atol=1e-5
        )
    np.testing.assert_array_equal(mapped[:, 16:], pose_table(model).vectors.numpy()[X.numpy()[:, 1].astype(int)])
    perm = np.random.default_rng(0).permutation(15)
    permuted = model.map_inputs(tf.gather(X, perm), tf.gather(Y, perm)).numpy()
    np.testing.assert_array_equal(permuted[:, 16:], mapped[perm, 16:])  # pose vectors: a lookup
    # style: sums of float32 features, whose last bits may depend on the batch layout (seen on a loaded machine)
    np.testing.assert_allclose(permuted[:, :16], mapped[perm, :16], rtol=1e-6, atol=1e-6)
    # the batch posterior q(u) (and so the KL) does not depend on the order of the frames
    kl1 = model.prior_kl(X, Y).numpy()
    kl2 = model.prior_kl(tf.gather(X, perm), tf.gather(Y, perm)).numpy()
    np.testing.assert_allclose(kl1, kl2, rtol=1e-6)  # float32 encoder outputs may differ in the last bit


def test_gradients_reach_representation_pose_table_and_inducing_inputs(data, model):
    ds, frames = data
    X, Y = next(iter(character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=3)))
    with tf.GradientTape() as tape:
        elbo = model.objective_terms((X, Y)).elbo()
    variables = (
        representation(model).trainable_variables
        + (pose_table(model).vectors.unconstrained_variable,)
        + (model.inducing_variable.Z.unconstrained_variable,)
    )
    grads = tape.gradient(elbo, variables)
    assert all(g is not None and np.all(np.isfinite(tf.convert_to_tensor(g).numpy())) for g in grads)
    table_grad = tf.convert_to_tensor(grads[-2]).numpy()
    used = np.unique(X.numpy()[:, 1].astype(int))
    assert np.any(table_grad[used] != 0) and np.all(table_grad[np.setdiff1d(np.arange(72), used)] == 0)
    names = {v.name for v in model.trainable_variables}
    assert {"style/kernel:0", "object_vectors:0"} <= names


def test_generation_equals_svgpvae_posterior_on_the_context_frames(data, model):
    """Unseen characters, each conditioned on its own context frames (data [V, Qc, ...]) = a plain
    SVGPVAE posterior on the mapped inputs of that character's frames."""
    ds, _ = data
    V = 2
    ctx = ds.test_context_frames()[:V]
    ctx_poses, tgt_poses = ds.test_context_poses[:V], ds.test_target_poses[:V]
    ids = 100 + np.arange(V)
    z_mean, z_var = model.predict_f(raw(ids, tgt_poses), (raw(ids, ctx_poses), ctx))
    assert z_mean.shape == (V, 36, 4) and np.all(z_var.numpy() > 0)
    frames, samples = model.predict_y(raw(ids, tgt_poses), (raw(ids, ctx_poses), ctx), num_samples=2)
    assert frames.shape == (V, 36, 64, 64, 3) and samples.shape == (2, V, 36, 64, 64, 3)
    plain = SVGPVAE(model.encoder, model.decoder, model.kernel, model.inducing_variable, num_data=model.num_data)
    for v in range(V):
        mapped_ctx = model.map_inputs(raw(ids[v : v + 1], ctx_poses[v : v + 1])[0], ctx[v]).numpy()
        X_tgt = np.concatenate(
            [np.repeat(mapped_ctx[:1, :16], 36, 0), pose_table(model).vectors.numpy()[tgt_poses[v]]], 1
        )
        mean, var = plain.predict_f(X_tgt, (mapped_ctx, ctx[v]))
        np.testing.assert_allclose(z_mean[v], mean.numpy(), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(z_var[v], var.numpy(), rtol=1e-5, atol=1e-8)


def test_generation_given_training_set_equals_posterior_on_train_plus_context(data, model):
    ds, frames = data
    batches = character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=4, shuffle=False)
    train_posterior = model.posterior(batches)
    assert train_posterior.num_conditioned == frames.shape[0] * frames.shape[1] and train_posterior.P.shape == (4, 8, 8)
    mapped_train = np.concatenate([model.map_inputs(X, Y).numpy() for X, Y in batches])
    Y_train = np.concatenate([Y.numpy() for _, Y in batches])
    ctx, ctx_poses, tgt_poses = ds.test_context_frames()[:1], ds.test_context_poses[:1], ds.test_target_poses[:1]
    z_mean, z_var = train_posterior.predict_f(raw([500], tgt_poses), data=(raw([500], ctx_poses), ctx))
    mapped_ctx = model.map_inputs(raw([500], ctx_poses)[0], ctx[0]).numpy()
    plain = SVGPVAE(model.encoder, model.decoder, model.kernel, model.inducing_variable, num_data=model.num_data)
    post = plain.posterior((np.concatenate([mapped_train, mapped_ctx]), np.concatenate([Y_train, ctx[0]])))
    X_tgt = np.concatenate([np.repeat(mapped_ctx[:1, :16], 36, 0), pose_table(model).vectors.numpy()[tgt_poses[0]]], 1)
    mean, var = post.predict_f(X_tgt)
    np.testing.assert_allclose(z_mean[0], mean.numpy(), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(z_var[0], var.numpy(), rtol=1e-5, atol=1e-8)


def test_raw_posterior_predicts_for_conditioning_characters(data, model):
    ds, frames = data
    C, P = ds.train_poses.shape
    X = np.stack([np.repeat(ds.train_characters, P), ds.train_poses.reshape(-1)], 1).astype(np.float64)
    post = model.posterior((X, frames.reshape(-1, 64, 64, 3).astype(np.float32) / 255.0))
    assert post.num_conditioned == C * P
    Y = post.predict_y(np.array([[ds.train_characters[0], 71.0]]))
    assert Y.shape == (1, 64, 64, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the conditioning data"):
        post.predict_f(np.array([[ds.test_characters[0], 0.0]]))


def test_bad_construction():
    rep = StyleRepresentation(representation_network())
    table = ObjectVectors(72, 8, id_column=0, num_view_features=0, initial_vectors=np.zeros((72, 8)))
    kernel = sprites_kernel(list(range(16)), list(range(16, 24)))
    with pytest.raises(ValueError, match="columns"):
        SVGPVAE(
            sprites_encoder(2),
            sprites_decoder(2),
            kernel,
            np.zeros((4, 20)),
            num_data=10,
            input_transform=representation_and_table(rep, table, 0, 1),
        )


def test_networks_have_six_conv_layers_of_16_and_no_upsampling2d():
    enc, dec = sprites_encoder(64), sprites_decoder(64)
    enc_convs = [layer for layer in enc.layers if isinstance(layer, tf_keras.layers.Conv2D)]
    dec_convs = [layer for layer in dec.layers if isinstance(layer, tf_keras.layers.Conv2D) and layer.name != "output"]
    assert [c.filters for c in enc_convs] == [16] * 6 and [c.filters for c in dec_convs] == [16] * 6
    assert not any(isinstance(layer, tf_keras.layers.UpSampling2D) for layer in dec.layers)
    assert dec(tf.zeros([2, 64])).shape == (2, 64, 64, 3)
    m, v = enc(tf.zeros([2, 64, 64, 3]))
    assert m.shape == v.shape == (2, 64)


def test_smoke_training_steps_and_conditional_generation(data):
    ds, frames = data
    model = build(ds, frames, L=8, M=72, seed=1)
    dataset = character_batches(ds.train_characters, ds.train_poses, frames, characters_per_batch=3, seed=0)
    before = pose_table(model).vectors.numpy().copy()
    rep_before = representation(model).network.get_layer("style").kernel.numpy().copy()
    history = train(model, dataset, epochs=2, objective=GECO(0.0075), progress=False)
    assert len(history["loss"]) == 2 and np.all(np.isfinite(history["loss"]))
    assert np.all(np.isfinite(history["geco_lambda"]))
    assert not np.allclose(before, pose_table(model).vectors.numpy())
    assert not np.allclose(rep_before, representation(model).network.get_layer("style").kernel.numpy())
    ids = ds.test_characters[:2]
    out = model.predict_y(
        raw(ids, ds.test_target_poses[:2]), (raw(ids, ds.test_context_poses[:2]), ds.test_context_frames()[:2])
    )
    mse = np.mean((out.numpy() - ds.test_target_frames()[:2]) ** 2)
    assert np.isfinite(mse) and 0 <= mse < 1
