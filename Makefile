# Two commands set everything up on a fresh machine: `make run` and `make test`.
# The venv runs the Lambda runtime's Python (template.yaml's Runtime) when the machine has it:
# pythonX.Y on PATH, or a pyenv-installed X.Y; otherwise python3, with a warning (.ci/python).
RUNTIME_PY := $(shell sed -n 's/^ *Runtime: python\([0-9.]*\)$$/\1/p' template.yaml | head -n1)
PYTHON ?= $(shell .ci/python $(RUNTIME_PY))
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)-$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')

.PHONY: run test lint typecheck unit integration e2e bench validate openapi install clean chromium screenshots

$(STAMP): pyproject.toml
	@# A venv of another Python (an older checkout's) is rebuilt, not patched.
	test -x $(PY) && [ "$$($(PY) -c 'import sys; print(sys.version_info[:2])')" = "$$($(PYTHON) -c 'import sys; print(sys.version_info[:2])')" ] || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cli]'
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

## The local stack: embedded AWS (moto), partner API, Function URLs, demo data. Ctrl-C stops it.
run: $(STAMP)
	$(PY) -m devstack

## ruff + mypy + the whole pytest suite (unit, integration, e2e), as CI runs it.
test: $(STAMP) lint typecheck
	$(PY) -m pytest -n 2 --dist loadgroup

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

## Both APIs' OpenAPI 3.1 documents, from the code (no stack): build/openapi/{partner,admin}.json.
openapi: $(STAMP)
	$(PY) -m devstack.openapi build/openapi

## cfn-lint (zero errors) and the SAM transform.
validate: $(STAMP)
	$(VENV)/bin/cfn-lint --non-zero-exit-code error template.yaml
	$(PY) -m devstack.validate template.yaml

## Debian's Chromium for the browser tests of the operator's page (root; .ci/run does this).
## Without it `make test` skips those tests and prints why.
chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version)"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	else echo "run as root: apt-get install chromium"; exit 1; fi

## The README's screenshots of the operator's page (docs/screenshots), taken by the browser tests.
screenshots: $(STAMP)
	HUB_SCREENSHOTS=docs/screenshots $(PY) -m pytest tests/e2e/test_admin_page*.py -q

clean:
	rm -rf $(VENV) .aws-sam .mypy_cache .ruff_cache
