# Two commands set everything up on a fresh machine with Python 3.11 and Java 17:
#   make demo   the platform on an embedded default: Airflow runs the project's DAGs (ingest of
#               two streams, then maintenance) against an S3 server on 127.0.0.1, Spark local
#   make test   every suite, including the pypaimon interop suite in its own venv
# and `make airflow` runs the demo, then keeps a real local Airflow running over its warehouse
# (the Lake page, the DAGs) until Ctrl-C.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
INTEROP_VENV := .venv-interop
PIP_FLAGS := --disable-pip-version-check -q

.PHONY: demo demo-library airflow docker-compose chromium test test-deep test-main test-interop bench lint clean venv postgresql

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(VENV)/bin/pip install $(PIP_FLAGS) -e '.[dev,demo,spark,airflow]'
	touch $@

# pypaimon 2.1.0 cannot share a venv with Airflow (it pins pyarrow<20): it gets its own,
# holding only the lakeformat core beside it.
$(INTEROP_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(INTEROP_VENV)/bin/pip install $(PIP_FLAGS) 'pypaimon==2.1.0' -e . 'pytest>=8' 'hypothesis>=6.100'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/python -m lakeformat_airflow.demo

# `make airflow`: the demo, then a real local Airflow over its warehouse and its S3 server (API
# server, scheduler, triggerer and DAG processor on 127.0.0.1:AIRFLOW_PORT, in build/airflow-local)
# until Ctrl-C, which stops them all and the S3 server; it prints the URL of the Lake page and
# the login (user admin, a password made for the run).
AIRFLOW_PORT ?= 8080
airflow: $(VENV)/.installed
	$(VENV)/bin/python -m lakeformat_airflow.demo --serve --port $(AIRFLOW_PORT)

# the library alone, without Airflow: create, write, update, delete, merge-schema, compact, expire
demo-library: $(VENV)/.installed
	$(VENV)/bin/python -m lakeformat.demo

# The JDBC catalog tests start a real PostgreSQL server from Debian's postgresql package:
# installed here when no initdb is found (apt is not called when it is there). The tests run
# their own server; a cluster the package may have started is stopped again.
PG_INITDB_GLOB ?= /usr/lib/postgresql/*/bin/initdb
postgresql:
	@if ls $(PG_INITDB_GLOB) >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then :; \
	else \
	  echo "installing Debian's postgresql package (the JDBC catalog tests run a server)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql && \
	  $$SUDO sh -c 'pg_lsclusters -h 2>/dev/null | while read v c p s rest; do \
	    [ "$$s" = online ] && pg_ctlcluster $$v $$c stop; done; true'; \
	fi

# The compose file's test (tests/airflow/test_compose.py) checks docker-compose.yml with Debian's
# docker-compose (`docker-compose config`; no Docker engine is needed): installed here when the
# command is missing, without its recommends (they would pull in the docker.io engine).
docker-compose:
	@if command -v docker-compose >/dev/null 2>&1; then :; \
	else \
	  echo "installing Debian's docker-compose package (the compose file's test parses it)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose; \
	fi

# The lake view's browser test (tests/airflow/test_lake_view_browser.py) drives Debian's chromium
# headless through its chromedriver (Selenium never downloads a driver): both are installed here
# when either command is missing (apt is not called when they are there), without recommends.
chromium:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	else \
	  echo "installing Debian's chromium and chromium-driver (the lake view's browser test)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    chromium chromium-driver; \
	fi

# `make test`: the main suite (.venv) over TEST_WORKERS pytest-xdist processes, and beside it the
# interop suite (.venv-interop) with its output in build/test/interop.log, printed after the
# main suite's. Tests that share a costly process (Spark, PostgreSQL) stay on one worker
# (`--dist loadgroup`; the groups are in tests/conftest.py). The main suite ends with its 15
# slowest tests; the last line adds up both suites, and the target fails when either failed.
# PYTEST_ARGS goes to both pytest runs (e.g. PYTEST_ARGS='-x' or '-k name').
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 8 ] && n=8; echo $$n)
PYTEST_ARGS ?=
MAIN_PYTEST := $(VENV)/bin/python -m pytest tests --ignore=tests/interop -q \
	-n $(TEST_WORKERS) --dist loadgroup
INTEROP_PYTEST := $(INTEROP_VENV)/bin/python -m pytest tests/interop -q

test: $(VENV)/.installed $(INTEROP_VENV)/.installed postgresql docker-compose chromium
	@mkdir -p build/test
	@rm -f build/test/main.xml build/test/interop.xml
	@echo "make test: tests/interop runs beside the main suite (.venv-interop); its output follows"
	@$(INTEROP_PYTEST) --junitxml=build/test/interop.xml $(PYTEST_ARGS) \
	    >build/test/interop.log 2>&1 & interop_pid=$$!; \
	$(MAIN_PYTEST) --durations=15 --junitxml=build/test/main.xml $(PYTEST_ARGS); main=$$?; \
	wait $$interop_pid; interop=$$?; \
	echo; echo "======== tests/interop in .venv-interop (ran beside the main suite) ========"; \
	cat build/test/interop.log; echo; \
	$(VENV)/bin/python -m tests.support.suite_report \
	    main $$main build/test/main.xml interop $$interop build/test/interop.xml

# Full depth, for nightly runs and for changes to commit, merge or compaction code: every
# property test at its deep example count and the stress tests at STRESS_RUNS=5
# (tests/support/depth.py has the knobs; tests/README.md lists what each one deepens).
test-deep:
	TEST_DEPTH=deep STRESS_RUNS=$${STRESS_RUNS:-5} $(MAKE) test

# one suite alone (the main one still over TEST_WORKERS processes)
test-main: $(VENV)/.installed $(INTEROP_VENV)/.installed postgresql docker-compose chromium
	$(MAIN_PYTEST) --durations=15 $(PYTEST_ARGS)

test-interop: $(INTEROP_VENV)/.installed
	$(INTEROP_PYTEST) $(PYTEST_ARGS)

# DuckDB and Polars, the peers the benchmarks time in the same run, come with the bench-only
# extra (they are not dependencies); only this target installs it.
$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml
	$(VENV)/bin/pip install $(PIP_FLAGS) -e '.[bench]'
	touch $@

bench: $(VENV)/.bench-installed $(INTEROP_VENV)/.installed
	$(VENV)/bin/python bench/write_read.py
	$(VENV)/bin/python bench/compaction.py
	$(VENV)/bin/python bench/append.py
	$(VENV)/bin/python bench/dynamic_bucket.py
	$(VENV)/bin/python bench/spark.py
	$(VENV)/bin/python bench/airflow.py

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check lakeformat plugins dags tests bench

clean:
	rm -rf $(VENV) $(INTEROP_VENV) .pytest_cache build
