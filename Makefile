# Two commands set everything up on a fresh machine with Python 3.11 and Java 17:
#   make demo   the platform on an embedded default: Airflow runs the project's DAGs (ingest of
#               two streams, then maintenance) against an S3 server on 127.0.0.1, Spark local
#   make test   every suite, including the pypaimon interop suite in its own venv
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
INTEROP_VENV := .venv-interop
PIP_FLAGS := --disable-pip-version-check -q

.PHONY: demo demo-library docker-compose test test-main test-interop bench lint clean venv postgresql

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

test: postgresql docker-compose test-main test-interop

test-main: $(VENV)/.installed $(INTEROP_VENV)/.installed postgresql docker-compose
	$(VENV)/bin/python -m pytest tests --ignore=tests/interop -q

test-interop: $(INTEROP_VENV)/.installed
	$(INTEROP_VENV)/bin/python -m pytest tests/interop -q

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
