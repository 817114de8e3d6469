# Two commands on a fresh machine: `make run` and `make test` (each sets up its own virtualenv first).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test-tools run test bench golden clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## Render the built-in default stack (an AKS ND H100 v5 pool with the full operator) into ./rendered/: the
## manifests, the pool's AKS agent pool as ARM JSON under rendered/azure/, and a summary of operands and pools
## (no cluster, cloud or CLI needed).
run: setup
	$(VENV)/bin/gpu-operator render -o rendered --summary

## Programs some tests drive for real (Prometheus); best effort, tests skip with a message without them.
test-tools:
	./tools/install-test-tools.sh

## The whole test suite (benchmarks excluded; see `make bench`).
test: setup test-tools
	$(PY) -m pytest tests --ignore=tests/bench -q

## Benchmarks, reported against baselines measured in the same run.
bench: setup
	$(PY) -m pytest tests/bench -q --benchmark-columns=min,median,mean,max,rounds --benchmark-sort=name

## Regenerate the golden manifests under tests/golden/ from examples/configs/.
golden: setup
	$(PY) -m tests.golden.regenerate

clean:
	rm -rf $(VENV) rendered .pytest_cache .benchmarks
