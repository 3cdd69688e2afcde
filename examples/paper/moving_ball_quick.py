"""Train an SVGP-VAE on moving-ball videos with the library's training loop, then
recover the ball's path from the latent posterior (a small, fast version of the
paper's first experiment; see ``python -m svgpvae_paper.experiments.moving_ball``).

Run: ``python examples/paper/moving_ball_quick.py`` (about a minute on 2 CPU cores).
"""

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_svgpvae import SVGPVAE
from gpflow_svgpvae.networks import mlp_decoder, mlp_encoder
from gpflow_svgpvae.training import train
from svgpvae_paper.datasets.moving_ball import moving_ball_stream, moving_ball_test_set
from svgpvae_paper.metrics import affine_path_rmse

T, STEPS, VIDEOS_PER_STEP, SEED = 30, 300, 35, 0
tf_keras.utils.set_random_seed(SEED)

# A tf.data pipeline of fresh videos: X [V, T, 1] frame times, Y [V, T, 1024] binary frames.
times = np.broadcast_to(np.arange(T, dtype=np.float64)[None, :, None], (VIDEOS_PER_STEP, T, 1)).copy()


def batches():
    stream = moving_ball_stream(VIDEOS_PER_STEP, seed=SEED)
    for _ in range(STEPS):
        yield times, next(stream).videos


dataset = tf.data.Dataset.from_generator(
    batches,
    output_signature=(
        tf.TensorSpec([VIDEOS_PER_STEP, T, 1], tf.float64),
        tf.TensorSpec([VIDEOS_PER_STEP, T, 1024], tf.float32),
    ),
)

kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=1.0)
gpflow.set_trainable(kernel.variance, False)
model = SVGPVAE(
    mlp_encoder(1024, 2, hidden_units=(128, 128)),
    mlp_decoder(2, 1024, hidden_units=(128, 128)),
    kernel,
    np.linspace(0, T - 1, 15)[:, None],  # 15 inducing times shared by all videos (trainable)
    "bernoulli",
    sequence_length=T,  # frames per video: each video is one GP dataset with b = N = 30
    num_latent_gps=2,
    seed=SEED,
)
history = train(model, dataset, epochs=1, steps_per_epoch=STEPS, optimizer=tf_keras.optimizers.Adam(1e-3))
print(f"ELBO per video after {STEPS} steps: {history['elbo'][-1] / VIDEOS_PER_STEP:.1f}")

test = moving_ball_test_set(100, seed=SEED)
X_test = np.broadcast_to(test.times[None, :, None], (test.num_videos, T, 1)).copy()
mean, var = model.predict_f(None, (X_test, test.videos))  # [V, T, 2] latent posterior per video
print(
    f"test RMSE after a per-video affine map: {affine_path_rmse(mean.numpy(), test.paths):.3f} "
    f"(random latents give about 0.84); lengthscale {float(kernel.lengthscales.numpy()):.2f}"
)
