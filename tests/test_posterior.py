"""``posterior``: the per-model cache of compiled statistics functions."""

import gc
import weakref

import numpy as np

from gpflow_svgpvae import posterior as posterior_module
from tests.conftest import make_tiny_model, tiny_data


def test_a_posterior_does_not_keep_its_model_alive():
    """The statistics function is cached per model in a ``WeakKeyDictionary``; a closure over
    the model in the cached value would keep the model (its variables and graphs) alive for the
    life of the process, one more model per run of a sweep."""
    X, Y = tiny_data()
    model = make_tiny_model(seed=0)
    model.posterior((X, Y), batch_size=30)
    assert model in posterior_module._STATISTICS_FUNCTIONS
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def test_the_cached_function_is_reused_and_gives_the_same_posterior():
    """A second posterior of the same model and data layout reuses the compiled function (no
    retrace) and conditions on the data exactly as the first."""
    X, Y = tiny_data()
    model = make_tiny_model(seed=1)
    first = model.posterior((X, Y), batch_size=20)
    function = posterior_module._STATISTICS_FUNCTIONS[model][X.ndim]
    traces = function.experimental_get_tracing_count()
    second = model.posterior((X, Y), batch_size=20)
    assert posterior_module._STATISTICS_FUNCTIONS[model][X.ndim] is function
    assert function.experimental_get_tracing_count() == traces
    mean_1, var_1 = first.predict_f(X[:5])
    mean_2, var_2 = second.predict_f(X[:5])
    # Two runs of the same computation: equal to round-off (no bitwise promise without op determinism).
    np.testing.assert_allclose(mean_1, mean_2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(var_1, var_2, rtol=1e-12, atol=1e-14)
