# Two commands on a fresh machine: `make run` and `make test` (each sets up its own virtualenv first).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CLI_STAMP := $(VENV)/.installed-cli
# quiet pip, without its version check, and without setuptools' banner about editable installs (a warning the
# build backend prints for every `-e .`; it says nothing about this project)
PIP_INSTALL := PYTHONWARNINGS="ignore:Editable install" $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: setup setup-cli test-tools policy-venv e2e-venv run test bench golden clean e2e-tools e2e image gpu-check \
	docs docs-reference

## The package with everything: the Pulumi SDKs (components, stacks) and the test extra (`make test`).
setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	@echo "make: [1/3] virtualenv $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: [2/3] pip (upgrading the virtualenv's own)"
	$(PIP_INSTALL) --upgrade pip
	@echo "make: [3/3] the package with the Pulumi SDKs and the test extra (a first install downloads ~600 MiB)"
	$(PIP_INSTALL) -e '.[test]'
	touch $(STAMP) $(CLI_STAMP)

## Only what the command line needs (requirements-cli.txt): no Pulumi or cloud SDKs, no test tools.
setup-cli: $(CLI_STAMP)

$(CLI_STAMP): pyproject.toml setup.py requirements-cli.txt
	@echo "make: [1/2] virtualenv $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: [2/2] the package and what its command line needs (requirements-cli.txt; no Pulumi SDKs)"
	$(PIP_INSTALL) -r requirements-cli.txt
	$(PIP_INSTALL) --no-deps -e .
	touch $(CLI_STAMP)

## Render the built-in default stack (an AKS ND H100 v5 pool with the full operator) into ./rendered/: the
## manifests, the pool's AKS agent pool as ARM JSON under rendered/azure/, and a summary of operands and pools
## (no cluster, cloud or CLI needed). Installs only what the render needs; `make test` adds the rest.
run: setup-cli
	@echo "make: rendering the built-in default stack into rendered/"
	$(VENV)/bin/gpu-operator render -o rendered --summary

## Programs some tests drive for real (Prometheus); best effort, tests skip with a message without them.
test-tools:
	./tools/install-test-tools.sh

## The CrossGuard pack's own virtualenv (pulumi-policy needs protobuf 5; the agents need protobuf 6).
POLICY_VENV := .venv-policy
POLICY_STAMP := $(POLICY_VENV)/.installed
policy-venv: $(POLICY_STAMP)

$(POLICY_STAMP): policy-pack/requirements.txt
	$(PYTHON) -m venv $(POLICY_VENV)
	$(POLICY_VENV)/bin/python -m pip install --quiet -r policy-pack/requirements.txt
	touch $(POLICY_STAMP)

## The whole test suite (benchmarks and the end-to-end tier excluded; see `make bench` and `make e2e`).
test: setup test-tools policy-venv
	$(PY) -m pytest tests --ignore=tests/bench --ignore=tests/e2e -q

## Build the end-to-end tier's programs (etcd, Kubernetes control plane, KWOK, Pulumi CLI) from the Go module
## proxy into a cache outside the repository; idempotent and resumable. The first build takes about 40 minutes.
e2e-tools:
	./tools/e2e/build.sh

## The e2e tier's own virtualenv: the package with its Pulumi SDKs pinned to the engine `make e2e-tools` builds
## (tools/e2e/constraints.txt; a newer SDK asks the engine for a plugin version that cannot be downloaded here).
E2E_VENV := .venv-e2e
E2E_STAMP := $(E2E_VENV)/.installed
e2e-venv: $(E2E_STAMP)

$(E2E_STAMP): pyproject.toml setup.py tools/e2e/constraints.txt
	$(PYTHON) -m venv $(E2E_VENV)
	$(E2E_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(E2E_VENV)/bin/python -m pip install --quiet -c tools/e2e/constraints.txt -e '.[test]'
	touch $(E2E_STAMP)

## The end-to-end tier against a local control plane with simulated GPU nodes, and the stacks under the real
## Pulumi engine (needs `make e2e-tools` first).
e2e: e2e-venv policy-venv
	@./tools/e2e/build.sh --check || { echo "make e2e: the e2e tools are not built; run 'make e2e-tools' first" >&2; exit 1; }
	$(E2E_VENV)/bin/python -m pytest tests/e2e -m e2e -q -p no:cacheprovider

## Build the agents image locally (linux/amd64) with Docker, Podman or Buildah, whichever can build here; says so
## and fails when none can. IMAGE=<name:tag> names it (default gpu-operator-agents:<version>). Push it yourself
## and set agents.image, or let the stack build and push it (agents.build).
image:
	./tools/build-image.sh $(IMAGE)

## On a machine with an NVIDIA GPU: `GPU_REQUIRED=1 pytest -m gpu`, then each agent against the real driver compared
## with nvidia-smi, into one report (gpu-check/gpu-check.md and .json); fails with "no NVIDIA driver: ..." elsewhere.
## Offline: WHEELS=<dir> installs the Python dependencies from wheels brought along (docs/concepts/testing.md,
## "GPU check").
gpu-check:
ifdef WHEELS
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-index --find-links $(WHEELS) -e '.[test]'
	touch $(STAMP)
else
	$(MAKE) setup
endif
	$(PY) -m tests.gpu --output gpu-check

## Benchmarks, reported against baselines measured in the same run.
bench: setup
	$(PY) -m pytest tests/bench -q --benchmark-columns=min,median,mean,max,rounds --benchmark-sort=name

## The docs site: regenerate the reference pages from the code (config models, argument parsers, alerts, component
## schema, pinned versions, apply order), then serve the site on 127.0.0.1 (loopback only; DOCS_PORT, default 8000).
## `make test` checks that the committed pages are current and that `mkdocs build --strict` passes.
DOCS_PORT ?= 8000
docs: docs-reference
	$(PY) -m mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

## Only regenerate the reference pages under docs/reference/ (commit them with the change that moved them).
docs-reference: setup
	$(PY) -m tools.docgen

## Regenerate the golden manifests under tests/golden/ from examples/configs/.
golden: setup
	$(PY) -m tests.golden.regenerate

clean:
	rm -rf $(VENV) $(POLICY_VENV) $(E2E_VENV) rendered site .pytest_cache .benchmarks
