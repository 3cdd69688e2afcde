"""`python -m svgpvae_paper.experiments.rotated_mnist table1 --quick` on a reduced data set."""

import csv
import json
import os

import numpy as np
import pytest

from svgpvae_paper.experiments import rotated_mnist
from svgpvae_paper.experiments import rotated_mnist_figures as figures


@pytest.mark.slow  # CLI smoke test (~31 s); `make test-all` (the default suite measured 592-659 s)
def test_table1_quick_smoke_writes_all_outputs(tmp_path, assert_run_record):
    out = str(tmp_path / "rm")
    first_argv = [
        "table1",
        "--quick",
        "--epochs",
        "1",
        "--n-per-digit",
        "12",
        "--batch-size",
        "64",
        "--deep-svigp-eval-steps",
        "2",
        "--out",
        out,
        "--quiet",
    ]
    result = rotated_mnist.main(first_argv)
    for name in ("config.json", "metrics.json", "table1.md", "table1.csv", "generated_seed0.png"):
        assert os.path.exists(os.path.join(out, name)), name
    for model in rotated_mnist.MODELS:
        assert os.path.exists(os.path.join(out, f"generated_{model}_seed0.png"))
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["epochs"] == 1 and config["seeds"] == [0] and config["n_per_digit"] == 12
    metrics = json.load(open(os.path.join(out, "metrics.json")))
    assert [r["model"] for r in metrics["results"]] == list(rotated_mnist.MODELS)
    for r in metrics["results"]:
        assert np.isfinite(r["test_mse_mean"]) and np.isfinite(r["test_mse_sample"]) and r["seconds_per_epoch"] > 0
        assert r["eval_epochs"] == [1]
    rows = list(csv.reader(open(os.path.join(out, "table1.csv"))))
    assert len(rows) == 5 and rows[0][0] == "model"
    column = rows[0].index("GP complexity")
    assert [row[column] for row in rows[1:]] == ["-", "O(N H^2)", "O(b m^2 + m^3)", "O(b m^2 + m^3)"]
    assert [row[rows[0].index("epochs")] for row in rows[1:]] == ["1"] * 4
    assert "| SVGP-VAE |" in open(os.path.join(out, "table1.md")).read()
    assert len(result["summary"]) == 4
    assert len(os.listdir(os.path.join(out, "runs"))) == 2 * len(rotated_mnist.MODELS)  # .json + .npz per run
    # Every file written records the command (the scratch --out dropped) and, for a run, its settings.
    command = ["svgpvae", "rotated_mnist", *[None if a == out else a for a in first_argv]]
    assert_run_record(os.path.join(out, "metrics.json"), command)
    assert_run_record(os.path.join(out, "config.json"), command)
    for f in os.listdir(os.path.join(out, "runs")):
        if f.endswith(".json"):
            spec = json.load(open(os.path.join(out, "runs", f)))["spec"]
            assert_run_record(os.path.join(out, "runs", f), command, spec)

    # The same command again reuses every finished run instead of training: identical numbers.
    again = rotated_mnist.main(
        [
            "table1",
            "--quick",
            "--epochs",
            "1",
            "--n-per-digit",
            "12",
            "--batch-size",
            "64",
            "--deep-svigp-eval-steps",
            "2",
            "--out",
            out,
            "--quiet",
            "--models",
            "svgpvae,cvae",
        ]
    )
    first = {r["model"]: r["test_mse_mean"] for r in result["results"]}
    assert {r["model"]: r["test_mse_mean"] for r in again["results"]} == {m: first[m] for m in ("svgpvae", "cvae")}

    # summary gathers folders: the same runs found twice count once; a folder of an older
    # version (metrics.json + config.json, no runs/) is read too, with its own settings.
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    old = dict(next(r for r in result["results"] if r["model"] == "svgpvae"))
    old.pop("spec")
    old.update(seed=7, test_mse_mean=0.5, epochs=3)
    json.dump({"results": [old]}, open(legacy / "metrics.json", "w"))
    json.dump({**config, "epochs": 3}, open(legacy / "config.json", "w"))
    gathered = rotated_mnist.main(["summary", out, out, str(legacy), "--out", str(tmp_path / "all"), "--quiet"])
    rows = {r["model"]: r for r in gathered["summary"]}
    assert rows["SVGP-VAE"]["runs"] == 2 and rows["SVGP-VAE"]["seeds"] == [0, 7]
    assert rows["SVGP-VAE"]["epochs"] == [1, 3] and rows["CVAE"]["runs"] == 1
    assert np.isclose(rows["SVGP-VAE"]["test_mse_mean"][0], (first["svgpvae"] + 0.5) / 2)
    assert "Settings that differ between runs: epochs." in open(tmp_path / "all" / "table1.md").read()


def test_place_new_objects_follows_the_learned_coordinates(rng):
    """Eval objects get the affine map that takes the initial training vectors to the learned ones."""
    from types import SimpleNamespace

    from gpflow_svgpvae.auxiliary import ObjectVectors

    initial = rng.standard_normal((10, 3))
    table = ObjectVectors(10, 3, initial_vectors=initial)
    data = SimpleNamespace(fit_ids=np.arange(7), eval_ids=np.arange(7, 10))
    rotated_mnist.place_new_objects(table, data, initial)  # nothing learned yet: unchanged
    np.testing.assert_allclose(table.vectors.numpy(), initial, atol=1e-12)
    A, c = rng.standard_normal((3, 3)), rng.standard_normal(3)
    learned = initial.copy()
    learned[:7] = initial[:7] @ A + c
    learned[7:] = 99.0  # whatever the eval rows hold is overwritten
    table.vectors.assign(learned)
    W = rotated_mnist.place_new_objects(table, data, initial)
    np.testing.assert_allclose(W, np.vstack([A, c]), atol=1e-10)
    np.testing.assert_allclose(table.vectors.numpy(), initial @ A + c, atol=1e-10)


def test_every_model_predicts_through_one_predict_y_call(monkeypatch):
    """``predict`` calls ``model.predict_y(X_new, data=context, num_samples=1, seed=seed)`` for every
    model; what differs (the context, the eval preparation) comes from the model's Protocol."""
    from types import SimpleNamespace

    calls = []

    class Model:
        def predict_y(self, Xnew, data=None, num_samples=None, seed=0):
            calls.append((Xnew, data, num_samples, seed))
            return np.zeros((len(Xnew), 1)), np.ones((1, len(Xnew), 1))

    prepared = []
    data = SimpleNamespace(
        X_test=np.zeros((3, 2)),
        X_eval=np.zeros((2, 2)),
        X_train="Xtr",
        Y_train="Ytr",
        X_ctx_all="Xall",
        Y_ctx_all="Yall",
        X_eval_ctx="Xev",
        Y_eval_ctx="Yev",
    )
    expected = {"cvae": ("Xev", "Yev"), "gppvae": ("Xall", "Yall"), "svgpvae": ("Xall", "Yall"), "deep_svigp": None}
    for name in rotated_mnist.MODELS:
        protocol = rotated_mnist.PROTOCOLS[name]
        monkeypatch.setitem(
            rotated_mnist.PROTOCOLS,
            name,
            rotated_mnist.Protocol(protocol.refresh, lambda *a: prepared.append(a), protocol.context),
        )
        calls.clear()
        mean, sample = rotated_mnist.predict(name, Model(), data, "eval", seed=4)
        assert mean.shape == (2, 1) and sample.shape == (2, 1) and len(prepared) == 1
        assert calls == [(data.X_eval, expected[name], 1, 4)]
        prepared.clear()
        rotated_mnist.predict(name, Model(), data, "test", seed=4)
        assert not prepared  # the test set needs no preparation
        assert calls[-1][1] == (None if name == "deep_svigp" else ("Xtr", "Ytr"))


def test_object_scale_rescales_the_initial_vectors_and_keeps_old_run_keys():
    """``object_scale``: PCA scores rescaled to RMS s (same directions), random N(0, s^2); the
    default (None, the paper's) leaves the cache key of earlier runs unchanged."""
    from types import SimpleNamespace

    from gpflow_svgpvae.auxiliary import pca_object_vectors

    images = np.random.default_rng(0).random((50, 6, 6))
    data = SimpleNamespace(ds=SimpleNamespace(unrotated=images), num_objects=50)
    raw = pca_object_vectors(images, 4)
    paper = rotated_mnist.Config(object_dim=4)
    np.testing.assert_allclose(rotated_mnist._initial_object_vectors(data, paper, 0), raw)
    scaled = rotated_mnist._initial_object_vectors(data, rotated_mnist.Config(object_dim=4, object_scale=0.1), 0)
    np.testing.assert_allclose(np.sqrt(np.mean(scaled**2)), 0.1, rtol=1e-12)
    np.testing.assert_allclose(scaled * np.sqrt(np.mean(raw**2)) / 0.1, raw, rtol=1e-10)
    random = rotated_mnist.Config(object_dim=4, object_init="random", object_scale=0.1)
    vectors = rotated_mnist._initial_object_vectors(data, random, 3)
    np.testing.assert_allclose(vectors, 0.1 * np.random.default_rng(3).standard_normal((50, 4)))
    assert "object_scale" not in rotated_mnist.run_spec("svgpvae", 0, paper)
    assert rotated_mnist.run_spec("svgpvae", 0, random)["object_scale"] == 0.1
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="object_scale"):
            rotated_mnist._initial_object_vectors(data, rotated_mnist.Config(object_scale=bad), 0)


def test_object_learning_rate_gives_the_object_vectors_their_own_adam_step():
    """Adam's first step moves every parameter with a gradient by its learning rate (times the
    sign of the gradient): with ``object_learning_rate`` the object vectors move by that rate
    and everything else by ``learning_rate``. ``None`` (the paper's) keeps earlier run keys."""
    from gpflow_svgpvae.training import train

    cfg = rotated_mnist.Config(n_per_digit=12, learning_rate=1e-4, object_learning_rate=1e-2)
    data = rotated_mnist.load_data(cfg)
    model = rotated_mnist.build_model("svgpvae", data, cfg, 0)
    table = rotated_mnist.object_table(model)
    vectors = table.trainable_variables[0]
    before_vectors, before_kernel = vectors.numpy(), model.encoder.trainable_variables[0].numpy()
    train(
        model,
        (data.X_train, data.Y_train),
        epochs=1,
        batch_size=len(data.X_train),
        optimizer=rotated_mnist.make_optimizer(model, cfg),
        progress=False,
    )
    moved = np.abs(vectors.numpy() - before_vectors)
    used = np.unique(data.X_train[:, -1].astype(int))  # the training objects' rows get gradients
    np.testing.assert_allclose(moved[used].max(), 1e-2, rtol=1e-3)
    np.testing.assert_allclose(
        np.abs(model.encoder.trainable_variables[0].numpy() - before_kernel).max(), 1e-4, rtol=1e-3
    )
    assert rotated_mnist.run_spec("svgpvae", 0, cfg)["object_learning_rate"] == 1e-2
    assert "object_learning_rate" not in rotated_mnist.run_spec("svgpvae", 0, rotated_mnist.Config())
    cvae = rotated_mnist.build_model("cvae", data, cfg, 0)
    with pytest.raises(ValueError, match="no object vectors"):
        rotated_mnist.make_optimizer(cvae, cfg)
    with pytest.raises(ValueError, match="object_learning_rate"):
        rotated_mnist.Config(object_learning_rate=0.0)


def test_eval_placement_fit_fits_the_eval_vectors_to_their_context():
    """``eval_placement="fit"``: after the affine placement, the eval instances' vectors are fitted
    to the eval context (lower decoded-mean loss there), training rows untouched; the option is
    refused for GPPVAE, left out of earlier run keys, and reaches the settings from both CLIs."""
    cfg = rotated_mnist.Config(n_per_digit=12, models=("svgpvae",), eval_placement="fit", eval_fit_steps=40)
    data = rotated_mnist.load_data(cfg)
    model = rotated_mnist.build_model("svgpvae", data, cfg, 0)
    table = rotated_mnist.object_table(model)
    train_data = (data.X_train, data.Y_train)

    def context_loss():  # one step at a negligible rate: the loss at the current rows
        current = table.vectors.numpy()[data.eval_ids]
        return model.fit_object_vectors(
            data.X_eval_ctx,
            data.Y_eval_ctx,
            data.eval_ids,
            data=train_data,
            steps=1,
            learning_rate=1e-12,
            initial_vectors=current,
        )

    rotated_mnist.PROTOCOLS["svgpvae"].prepare_eval(model, data, rotated_mnist.Config(n_per_digit=12), 0)
    affine = table.vectors.numpy().copy()
    affine_loss = context_loss()
    rotated_mnist.PROTOCOLS["svgpvae"].prepare_eval(model, data, cfg, 0)
    fitted = table.vectors.numpy()
    np.testing.assert_array_equal(fitted[data.fit_ids], affine[data.fit_ids])
    assert not np.allclose(fitted[data.eval_ids], affine[data.eval_ids])
    assert context_loss() < affine_loss
    spec = rotated_mnist.run_spec("svgpvae", 0, cfg)
    assert spec["eval_placement"] == "fit" and spec["eval_fit_steps"] == 40
    assert "eval_placement" not in rotated_mnist.run_spec("svgpvae", 0, rotated_mnist.Config())
    with pytest.raises(ValueError, match="GPPVAE|gppvae"):
        rotated_mnist.Config(eval_placement="fit")  # the default models include GPPVAE
    with pytest.raises(ValueError, match="eval_placement"):
        rotated_mnist.Config(eval_placement="nearest")
    base, _ = figures._configure(
        figures._parser().parse_args(["init", "--eval-placement", "fit", "--eval-fit-steps", "7"])
    )
    assert (base.eval_placement, base.eval_fit_steps) == ("fit", 7)


RECORDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results")


@pytest.mark.parametrize(
    "record",
    [
        "rotated_mnist_num_inducing_e300/runs/svgpvae_seed0_2d0582fdfb.json",  # the paper's settings, m = 64
        "rotated_mnist_init/runs/svgpvae_seed0_a67d084533.json",
        "rotated_mnist_object_lr_e300/runs/svgpvae_seed1_31344378b0.json",  # object_learning_rate set
    ],
)
def test_committed_run_records_keep_their_cache_keys(record):
    """A run's file name is the hash of its settings: the settings stored in a committed record
    give back its name (new options must not change the keys of earlier runs)."""
    from dataclasses import fields

    with open(os.path.join(RECORDS, record)) as f:
        res = json.load(f)
    spec = dict(res["spec"])
    name, seed = spec.pop("model"), spec.pop("seed")
    known = {f.name for f in fields(rotated_mnist.Config)}
    cfg = rotated_mnist.Config(out="somewhere", **{k: v for k, v in spec.items() if k in known})
    assert set(spec) <= known
    assert rotated_mnist.run_spec(name, seed, cfg) == res["spec"]
    assert os.path.basename(rotated_mnist.run_path(name, seed, cfg)) == os.path.splitext(os.path.basename(record))[0]


def test_default_command_and_paper_are_the_papers_protocol_of_table_1():
    """Table 1's default command is the paper's protocol, which gave the best committed Table 1;
    ``--paper`` names it explicitly, and explicit options still win."""
    default = rotated_mnist.config_from_args(["table1"])
    assert default == rotated_mnist.Config() == rotated_mnist.config_from_args(["table1", "--paper"])
    assert (default.epochs, default.num_latent, default.num_inducing_per_angle, default.kappa_squared) == (
        1000,
        16,
        2,
        0.020,
    )
    assert (default.object_init, default.object_scale, default.eval_placement) == ("pca", None, "affine")
    assert rotated_mnist.config_from_args(["table1", "--paper", "--epochs", "300"]).epochs == 300
