# rocketpipe — the two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[spark,demo,dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	PYSPARK_PYTHON=$(abspath $(PY)) $(VENV)/bin/rocketpipe demo

test: $(STAMP)
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/produce_consume.py

clean:
	rm -rf $(VENV) out .pytest_cache
