# The quick start: `make demo` steps through generation on the bundled model, `make test` runs the tests.
# Both set up .venv first (scripts/setup.sh: CPU-only torch unless an NVIDIA GPU is present).
VENV ?= .venv
PY := $(VENV)/bin/python
PROMPT ?= The three primary colours are

.PHONY: setup demo test lab lint bench clean-cache

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m teachllm step "$(PROMPT)"

test: setup
	$(VENV)/bin/ruff check teachllm tests
	$(PY) -m pytest

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

lint: setup
	$(VENV)/bin/ruff check teachllm tests

clean-cache:
	$(PY) -c "import teachllm.loading as l, shutil; shutil.rmtree(l.cache_dir(), ignore_errors=True)"
