# Two commands set everything up on a fresh machine: `make run` and `make test`.
# The venv runs the Lambda runtime's Python (template.yaml's Runtime) when the machine has it:
# pythonX.Y on PATH, or a pyenv-installed X.Y; otherwise python3, with a warning (.ci/python).
RUNTIME_PY := $(shell sed -n 's/^ *Runtime: python\([0-9.]*\)$$/\1/p' template.yaml | head -n1)
ifndef HUB_PYTHON
HUB_PYTHON := $(shell .ci/python $(RUNTIME_PY))
endif
PYTHON := $(HUB_PYTHON)
$(if $(PYTHON),,$(error no Python found: install python$(RUNTIME_PY) (or python3)))
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0])')
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)-$(PYTHON_VERSION)

# The SAM CLI lives in a venv of its own: its boto3/botocore pins clash with the project's.
SAM_CLI_VERSION := 1.170.0
SAM_VENV := .venv-sam
SAM      := $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed-$(SAM_CLI_VERSION)-$(PYTHON_VERSION)
# sam build's python3.12 workflow runs the first python3.12 on PATH: the venv's.
SAM_ENV  := PATH="$(abspath $(VENV))/bin:$$PATH" SAM_CLI_TELEMETRY=0
# checkov too (its pins are its own); .checkov.yaml lists the checks we accept and why.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := .venv-checkov
CHECKOV      := $(CHECKOV_VENV)/bin/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)-$(PYTHON_VERSION)
# The host build lives in a folder of its own: two `sam build`s from one folder share (and
# prune) .aws-sam/deps and build.toml.
HOST_BUILD := .aws-sam/host/build

.PHONY: run test lint typecheck unit integration e2e bench soak validate build build-host sam-python openapi docs install tools clean chromium screenshots

$(STAMP): pyproject.toml
	@# A venv of another Python (an older checkout's) is rebuilt, not patched.
	[ "$$($(PY) -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" = "$(PYTHON_VERSION)" ] || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cli]'
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

## The local stack: embedded AWS (moto), partner API, Function URLs, demo data. Ctrl-C stops it.
## `make run BUILT=1` runs the `sam build` output instead of the source tree (built first).
run: $(STAMP) $(if $(filter 1 yes true,$(BUILT)),build-host)
	$(if $(filter 1 yes true,$(BUILT)),HUB_LOCAL_BUILT_DIR=$(HOST_BUILD)) $(PY) -m devstack

## ruff + mypy + the whole pytest suite (unit, contract, integration, e2e, reliability, soak and
## fuzz in small), as CI runs it; the 30 slowest tests last. It checks `make docs` too:
## tests/unit/test_api_reference.py fails when docs/api.md is not what `make docs` renders now.
## Four workers on two cores: the local-stack tiers mostly wait on their stacks.
test: $(STAMP) lint typecheck
	$(PY) -m pytest -n 4 --dist loadfile --no-loadscope-reorder --durations=30

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest tests/unit

integration: $(STAMP)
	$(PY) -m pytest tests/integration

e2e: $(STAMP)
	$(PY) -m pytest tests/e2e

## Ingest overhead (handler vs bare boto3 on replayed AWS answers), cold start per function, then
## end to end through the local stack: cost per message and variants. Prints target | figure | met?
## and writes bench/results/latest.json. Each part alone: $(PY) -m bench.<ingest|cold_start|e2e>.
bench: $(STAMP)
	$(PY) -m bench

## Proof under faults: the largest reliability tests at their full sizes (500 dead letters
## recovered by a bulk job, 300 messages through a limited connection; `make test` runs them at
## 100), then SOAK_N messages (default 10,000) from 8 partners through the local stack to a flaky
## destination while worker processes are killed; checks and a summary table in
## bench/results/soak.json. Then the long Schemathesis run of both APIs (bench/results/fuzz.json).
## `make test` runs these small (tests/reliability, tests/soak, tests/fuzz).
soak: $(STAMP)
	HUB_FULL_SIZE=1 $(PY) -m pytest -p no:randomly tests/reliability/test_bulk_recovery.py tests/reliability/test_limited_connection.py
	$(PY) -m bench.soak
	$(PY) -m bench.fuzz --examples 40

## Both APIs' OpenAPI 3.1 documents, from the code (no stack): build/openapi/{partner,admin}.json.
openapi: $(STAMP)
	$(PY) -m devstack.openapi build/openapi

## docs/api.md, the partner and admin API reference, rendered from those OpenAPI documents
## (devstack/api_docs.py). Run it after changing a route or a model; `make test` checks it.
docs: $(STAMP)
	PYTHONPATH=layers/hub:cli:. $(PY) -m devstack.api_docs docs/api.md

## cfn-lint (zero errors), the SAM transform, checkov, `sam build` (what `sam deploy` ships, for
## arm64), and the built handlers run on moto from a build for this machine (tests/built).
validate: $(STAMP) $(CHECKOV_STAMP) $(SAM_STAMP)
	$(VENV)/bin/cfn-lint --non-zero-exit-code error template.yaml
	$(PY) -m devstack.validate template.yaml --output .aws-sam/transformed.json
	$(CHECKOV) --config-file .checkov.yaml --skip-download -f template.yaml
	$(CHECKOV) --config-file .checkov.yaml --skip-download -f .aws-sam/transformed.json
	$(MAKE) build build-host
	HUB_BUILT_DIR=$(HOST_BUILD) $(PY) -m pytest tests/built

## The pre-deploy tools' own venvs (checkov, SAM CLI), which `make validate` would install.
tools: $(CHECKOV_STAMP) $(SAM_STAMP)

$(CHECKOV_STAMP):
	rm -rf $(CHECKOV_VENV) && $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

$(SAM_STAMP):
	rm -rf $(SAM_VENV) && $(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

# sam build's python3.12 workflow needs that interpreter: the venv's, first on PATH.
sam-python: $(STAMP)
	@test -x $(VENV)/bin/python$(RUNTIME_PY) || { echo "sam build needs Python $(RUNTIME_PY) (the Lambda runtime's); this venv has $(PYTHON_VERSION)"; exit 1; }

## `sam build`: the deployable build (Lambda's arm64) in .aws-sam/build.
build: $(STAMP) $(SAM_STAMP) sam-python
	$(SAM_ENV) $(SAM) build --cached

## The same build for this machine's architecture ($(HOST_BUILD), devstack/build.py): what the
## built-layer tests and `make run BUILT=1` run.
build-host: $(STAMP) $(SAM_STAMP) sam-python
	$(PY) -m devstack.build .aws-sam/host
	cd .aws-sam/host && $(SAM_ENV) $(abspath $(SAM)) build --cached --template-file template.json --build-dir build

## Debian's Chromium for the browser tests of the operator's page (root; .ci/run does this).
## Without it `make test` skips those tests and prints why.
chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	else echo "run as root: apt-get install chromium"; exit 1; fi

## The screenshots of the operator's page (docs/screenshots, shown in docs/operator-page.md), taken by
## the browser tests.
screenshots: $(STAMP)
	HUB_SCREENSHOTS=docs/screenshots $(PY) -m pytest tests/e2e/test_admin_page*.py -q

clean:
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .aws-sam .mypy_cache .ruff_cache
