# The two commands of the README: `make demo` and `make test`.
# Both work in a project virtualenv (.venv, made with uv when it is on PATH, else with
# `python3 -m venv`), so they also run on Pythons that refuse installs outside one (PEP 668).
PYTHON ?= python3
VENV ?= .venv
DATA_DIR ?= .breadcrumb
UV ?= $(shell command -v uv 2>/dev/null)

PY := $(VENV)/bin/python
BIN := $(VENV)/bin
ifneq ($(UV),)
PIP_INSTALL = VIRTUAL_ENV=$(abspath $(VENV)) $(UV) pip install -q
else
PIP_INSTALL = $(PY) -m pip install -q
endif
# Installs quietly: the build backend's notes go to a log, printed only when the install
# fails (then with the last lines and the log's path). $(1) = what to install.
QUIET_INSTALL = @echo "make: installing $(1) into $(VENV)"; \
  $(PIP_INSTALL) -e '$(1)' >$(VENV)/install.log 2>&1 || { tail -n 40 $(VENV)/install.log >&2; \
  echo "make: installing $(1) failed (full log: $(VENV)/install.log)" >&2; exit 1; }

.PHONY: venv install demo test unit lint browser services-up services-down

## The project virtualenv.
venv: $(PY)

$(PY):
	@echo "make: creating the project virtualenv $(VENV)"
ifneq ($(UV),)
	@$(UV) venv -q --python "$$($(PYTHON) -c 'import sys; print(sys.executable)')" $(VENV)
else
	@$(PYTHON) -m venv $(VENV) || { echo "make: cannot create $(VENV): install uv" \
	  "(https://docs.astral.sh/uv/) or the venv module (Debian: apt-get install python3-venv)" >&2; \
	  rm -rf $(VENV); exit 1; }
	@$(PY) -m pip install -q --upgrade pip
endif

install: venv
	$(call QUIET_INSTALL,.[test])

## Runs the main job on the embedded default: ingest the sample session, recall an exact value.
demo: venv
	$(call QUIET_INSTALL,.[server])
	$(BIN)/breadcrumb ingest examples/agent-session.jsonl --data-dir $(DATA_DIR)
	$(BIN)/breadcrumb recall "the exact email regex we decided for sign-up validation" --user demo --data-dir $(DATA_DIR)

## ruff, mypy, the import contracts (layers without cycles, pyproject.toml), no getattr
## capability probes in product code (scripts/check_getattr.py), no class over 15
## methods over its MRO without the reason in its docstring (scripts/check_classes.py), and the storage
## contract's figures within their targets (scripts/check_store_contract.py, issue 48).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(PY) scripts/check_getattr.py
	$(PY) scripts/check_classes.py
	$(PY) scripts/check_store_contract.py

unit: venv
	$(PY) -m pytest -q -m "not integration"

services-up: install
	PYTHON=$(abspath $(PY)) bash infra/services.sh up

services-down:
	PYTHON=$(abspath $(PY)) bash infra/services.sh down

## Debian's chromium + chromium-driver for the browser tests (root or sudo-free apt-get).
browser:
	bash infra/browser.sh

## Everything: lint, the browser, start Kafka + MariaDB + S3 from infra/, all tests, stop
## the services.
test: install lint browser
	PATH="$(abspath $(BIN)):$$PATH" PYTHON=$(abspath $(PY)) bash infra/services.sh up
	PATH="$(abspath $(BIN)):$$PATH" $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=15; status=$$?; \
	  PYTHON=$(abspath $(PY)) bash infra/services.sh down; exit $$status
