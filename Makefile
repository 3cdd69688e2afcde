# One virtual environment in .venv with both packages: the library and the paper's experiments,
# at the tested versions in constraints.txt.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install example test test-all check docs wheel-check clean

$(STAMP): pyproject.toml constraints.txt examples/paper/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,docs]" -e examples/paper
	touch $(STAMP)

install: $(STAMP)

# The main job: train an SVGP-VAE on data the package generates, then predict.
example: $(STAMP)
	$(PY) examples/quickstart.py

# The default test suite (slow tests excluded; see pytest.ini), one pytest-xdist
# worker per core; a test file stays on one worker, so its module fixtures are built once.
# The run measures the library's line coverage and prints the report.
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --cov=gpflow_svgpvae --cov-report=term

test: $(STAMP)
	$(PYTEST)

test-all: $(STAMP)
	$(PYTEST) -m "slow or not slow"

# Formatting, lint and type checks (ruff and mypy, configured in pyproject.toml; mypy on the library).
check: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy

# The API reference (Sphinx, docs/api) into build/docs; a warning fails the build.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs/api build/docs

# The wheel, installed with the tested versions into a fresh venv that does not see the source
# tree, runs the README's first Python example in an empty directory.
WHEEL_VENV := build/wheel-venv
wheel-check: $(STAMP)
	rm -rf build/wheel $(WHEEL_VENV)
	$(PY) -m pip wheel --quiet --no-deps . -w build/wheel
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet -c constraints.txt build/wheel/gpflow_svgpvae-*.whl
	$(WHEEL_VENV)/bin/python .ci/readme_example.py README.md

clean:
	rm -rf $(VENV) build docs/api/generated *.egg-info
