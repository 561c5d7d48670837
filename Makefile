# rocketpipe — the two commands a newcomer runs: `make demo` and `make test`.
# Both create .venv on first use (pip install -e '.[spark,demo,console,grpc,dev]' from PyPI); Java 17 must be
# on PATH for Spark (.ci/run installs it on a fresh Debian machine).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_ARGS ?=
PYTEST_ARGS ?=

.PHONY: demo test lint interop venv bench bench-restart clean

# setup.py builds the optional compiled loops (src/rocketpipe/store/_batch_records.c, _index_put.c, src/rocketpipe/protocol/_records.c, _header.c); a change to one re-installs
$(STAMP): pyproject.toml setup.py src/rocketpipe/store/_batch_records.c src/rocketpipe/store/_index_put.c src/rocketpipe/protocol/_records.c src/rocketpipe/protocol/_header.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[spark,demo,console,grpc,dev]'
	touch $(STAMP)

venv: $(STAMP)

# Bytecode of src/ written once (an editable install compiles nothing, and with PYTHONDONTWRITEBYTECODE
# set no process caches it): otherwise each process of the demo, tests and bench (the CLI, the broker,
# every Spark Python worker and streaming-source process) compiles rocketpipe again, ~0.3 s of CPU each.
# Up-to-date files are skipped; Python ignores a .pyc older than its source.
COMPILE := $(PY) -m compileall -q -j 0 src >/dev/null

# The full demo (336,776 flights); e.g. `make demo DEMO_ARGS="--limit 20000"` for a shorter run.
demo: $(STAMP)
	$(COMPILE)
	PYSPARK_PYTHON=$(abspath $(PY)) $(VENV)/bin/rocketpipe demo $(DEMO_ARGS)

test: lint
	$(COMPILE)
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q $(PYTEST_ARGS)

# The gates CI holds every change to (config in pyproject.toml): ruff lint and format, mypy --strict
# at zero errors, and the layer rules of docs/architecture.md (import-linter). `make test` runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Wire compatibility only: real Apache RocketMQ 5.3.3 / 4.9.7 brokers, the Java 5.3.3 / 4.9.8 clients
# and mqadmin from Maven Central (cached in ~/.m2); prints the conformance matrix. `make test` runs it too.
interop: $(STAMP)
	$(PY) -m pytest -q tests/interop $(PYTEST_ARGS)

# Produce/consume throughput with 1 KiB messages: `rocketpipe serve` vs a real Apache RocketMQ 5.3.3
# broker (same Python client), vs Redis Streams (Debian's redis-server, installed here if missing
# and possible) and vs Apache RocketMQ driven by its own Java client, all measured in this run;
# prints rates and ratios; `--baseline REV` adds rocketpipe serve as of an earlier commit. A peer that cannot start is
# reported as "not measured". E.g. `make bench BENCH_ARGS="--messages 20000 --peers redis"`.
BENCH_ARGS ?=
# First, what one send, batch and pull request costs the broker's Python, replayed without system calls
# (bytecodes per request: a count that does not move with the host's load), warm and with the L1/L2
# caches evicted before each (4 MiB copied), as a real broker finds them. Spark source/sink vs Spark's
# rate source in one session: `make bench SPARK_BENCH_ARGS="--messages 100000"`
SPARK_BENCH_ARGS ?=
bench: $(STAMP)
	@command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null 2>&1 \
	  || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q redis-server >/dev/null 2>&1) \
	  || echo "redis-server could not be installed; the Redis peer will be reported as not measured"
	$(COMPILE)
	$(PY) bench/request_cost.py --evict-kib 4096
	$(PY) bench/produce_consume.py $(BENCH_ARGS)
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) bench/spark_read.py $(SPARK_BENCH_ARGS)
	@echo "restart time vs store size (clean and after SIGKILL): make bench-restart"

# Restart time of `rocketpipe serve` vs store size (1 KiB messages), after a clean stop and after
# SIGKILL mid-send, plus put throughput with the key index on/off; prints a table. Default sizes
# 100k,1M; the issue's full set: `make bench-restart RESTART_ARGS="--sizes 100k,1M,3M"` (~4 GB).
RESTART_ARGS ?=
bench-restart: $(STAMP)
	$(PY) bench/restart.py $(RESTART_ARGS)

clean:
	rm -rf $(VENV) out .pytest_cache
