# The two commands of the README: `make demo` and `make test`.
PY ?= python3
DATA_DIR ?= .breadcrumb

.PHONY: install demo test unit lint services-up services-down

install:
	$(PY) -m pip install -q -e '.[test]'

## Runs the main job on the embedded default: ingest the sample session, recall an exact value.
demo:
	$(PY) -m pip install -q -e .
	breadcrumb ingest examples/agent-session.jsonl --data-dir $(DATA_DIR)
	breadcrumb recall "the exact email regex we decided for sign-up validation" --user demo --data-dir $(DATA_DIR)

lint:
	ruff check .
	mypy

unit:
	$(PY) -m pytest -q -m "not integration"

services-up:
	bash infra/services.sh up

services-down:
	bash infra/services.sh down

## Everything: lint, start Kafka + MariaDB + S3 from infra/, all tests, stop the services.
test: install lint
	bash infra/services.sh up
	$(PY) -m pytest -q -p no:cacheprovider; status=$$?; bash infra/services.sh down; exit $$status
