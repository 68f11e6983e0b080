# The image of docker-compose.yml: Apache Airflow 3.3.2 with lakeformat (the library, its Spark
# engine and its Airflow provider) and a Java 17 runtime, so the same image runs the Airflow
# services and the Spark Connect server whose Python workers import lakeformat.
#
#   docker build -t lakeformat-airflow:local .        (docker compose build does this)
#
# AIRFLOW_VERSION must stay the version pyproject.toml's `airflow` extra pins
# (apache-airflow==3.3.2): pip would otherwise replace the image's Airflow with that one.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION

# Spark 4 runs on Java 17 or 21. The Airflow image is Debian bookworm, whose Java 17 runtime is
# openjdk-17-jre-headless; JAVA_HOME gets an architecture-free path (amd64 and arm64 alike).
# /opt/lakeformat holds the project's sources for the install below and the init script;
# /opt/airflow/auth is where airflow-init writes the admin's password (a named volume copies
# this directory's owner when it is first mounted, so the airflow user can write there).
USER root
RUN apt-get update \
    && mkdir -p /usr/share/man/man1 \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17 \
    && /usr/lib/jvm/java-17/bin/java -version \
    && apt-get autoremove -yqq --purge \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o airflow -g 0 -m 0775 /opt/lakeformat /opt/airflow/auth
ENV JAVA_HOME=/usr/lib/jvm/java-17

USER airflow
COPY --chown=airflow:0 pyproject.toml README.md /opt/lakeformat/
COPY --chown=airflow:0 lakeformat /opt/lakeformat/lakeformat
COPY --chown=airflow:0 plugins /opt/lakeformat/plugins

# Plain pip, as Airflow's docs advise for adding one's own packages to its image. Airflow's
# constraints file pins every package of its providers' dependency trees (among them pyspark,
# for the Apache Spark provider, pandas, grpcio-status and protobuf) to what was current at the
# release: it would refuse pyspark==4.3.0 of the `spark` extra, so it is not given. Naming
# apache-airflow==$AIRFLOW_VERSION (the image's own) keeps pip from upgrading or downgrading
# Airflow while it resolves lakeformat's requirements. The wheel is built by hatchling, as
# pyproject.toml declares; it ships lakeformat and the lakeformat_airflow provider (found by
# Airflow through the package's entry points, so no plugins folder is needed).
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" \
        "/opt/lakeformat[airflow,spark]" \
    && python -c "import lakeformat, lakeformat.spark, lakeformat_airflow, pyspark"

COPY --chown=airflow:0 docker/airflow-init.sh /opt/lakeformat/airflow-init.sh

# Spark's Python workers (and the driver side of a local session) run this Python, the image's
# virtualenv, where lakeformat is installed.
ENV PYSPARK_PYTHON=/home/airflow/.local/bin/python \
    PYSPARK_DRIVER_PYTHON=/home/airflow/.local/bin/python
