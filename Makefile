# One virtual environment in .venv with both packages: the library and the paper's experiments,
# at the tested versions in constraints.txt.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install example test test-all check clean

$(STAMP): pyproject.toml constraints.txt examples/paper/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]" -e examples/paper
	touch $(STAMP)

install: $(STAMP)

# The main job: train an SVGP-VAE on data the package generates, then predict.
example: $(STAMP)
	$(PY) examples/quickstart.py

# The default test suite (slow tests excluded; see pytest.ini), one pytest-xdist
# worker per core; a test file stays on one worker, so its module fixtures are built once.
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test: $(STAMP)
	$(PYTEST)

test-all: $(STAMP)
	$(PYTEST) -m "slow or not slow"

# Formatting, lint and type checks (ruff and mypy, configured in pyproject.toml; mypy on the library).
check: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info
