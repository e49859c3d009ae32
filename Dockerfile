# The harness itself as an image: `python -m hourglass` with everything it runs on, for a CI that
# cannot install a JDK and Spark (docs/ci.md#the-harness-image). The build context is this
# repository (a plain `docker build --network host -t hourglass/harness .` works; .dockerignore keeps runs and
# virtualenvs out); `.ci/harness-image` builds it the project's way: the base built locally
# without a registry, this host's CAs and pip.conf added for the build, the commit as a label.
#
#   BASE          a Debian 12 image (default: the JRE 17 base adapters/rocketmq/image.py makes with
#                 debootstrap; where a registry answers, `--build-arg BASE=debian:bookworm-slim`)
#   DEBIAN_MIRROR a Debian mirror to use instead of the base's apt sources (empty: the base's)
#
# In it: OpenJDK 17 (the JDK: the client helper is compiled with javac, adapters/rocketmq/helpers.py;
# the brokers of the process runtime, the JPype clients and Spark run on it), Maven (the jars of a
# `rocketmq:<version>` system come from Maven Central), Python 3.11 with the package and its
# dependencies (pyspark, JPype1, docker, testcontainers...) in the virtualenv /opt/hourglass,
# libfaketime (the clock fault). Not in it: a Docker engine or CLI (the container runtime talks
# to the host's engine through its socket: name `--runtime container`, `auto` looks for a CLI).
#
# Run (the paths of the run tree and of the cache must be the same inside and outside, because
# broker containers of the container runtime bind-mount them from the host; the host's pids, because
# the process runtime tags each JVM with the harness's pid and start time, and a harness elsewhere on
# the host kills the JVMs whose owner it cannot find, which a pid of another namespace is):
#   docker run --rm --network host --pid host -v "$PWD/runs:$PWD/runs" -w "$PWD" \
#       -v "$HOME/.cache/hourglass:$HOME/.cache/hourglass" -e HOURGLASS_CACHE="$HOME/.cache/hourglass" \
#       [-v /var/run/docker.sock:/var/run/docker.sock] hourglass/harness:0.1.0 main --runtime process --out runs/x
#
# (/usr/share/man/man1 must exist though man pages are left out: the JDK's and Maven's postinst
# register their man pages with update-alternatives, which fails without the directory.)
# Few steps on purpose: with the vfs storage driver every step copies the whole image. The apt step
# comes before the sources, so a change of the code rebuilds only the Python step.
ARG BASE=hourglass/jre17:bookworm-minbase-openjdk17-r1
FROM ${BASE}
ARG DEBIAN_MIRROR=
# The metadata first: with the vfs storage driver even a LABEL after the install copies the image.
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 PATH=/opt/hourglass/bin:$PATH JAVA_HOME=/usr/lib/jvm/hourglass-jdk \
    PYTHONUNBUFFERED=1 TESTCONTAINERS_RYUK_DISABLED=true
LABEL org.opencontainers.image.title="hourglass" \
      org.opencontainers.image.description="Conformance and chaos test harness for RocketMQ delay/retry" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["python", "-m", "hourglass"]
CMD ["--help"]
RUN set -eu; \
    if [ -n "$DEBIAN_MIRROR" ]; then \
      echo "deb $DEBIAN_MIRROR bookworm main" > /etc/apt/sources.list; rm -f /etc/apt/sources.list.d/*; \
    fi; \
    printf 'path-exclude=/usr/share/doc/*\npath-exclude=/usr/share/man/*\npath-exclude=/usr/share/locale/*\npath-exclude=/usr/share/info/*\n' \
      > /etc/dpkg/dpkg.cfg.d/hourglass-nodoc; \
    mkdir -p /usr/share/man/man1; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless maven python3 python3-venv \
      ca-certificates faketime procps >/dev/null; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb; \
    ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")" /usr/lib/jvm/hourglass-jdk; \
    java -version; javac -version; python3 --version
COPY . /tmp/hourglass-src/
# .hourglass-trust/ (only in .ci/harness-image's context, and only where the host added CAs or has a
# pip.conf): the trust of the host that built it, where TLS is intercepted. The CAs are installed
# (Maven reaches Maven Central through the same network at run time); pip.conf serves the install.
# Both stay in the COPY layer: an image to publish is built where TLS is not intercepted.
RUN set -eu; src=/tmp/hourglass-src; \
    if [ -d "$src/.hourglass-trust" ]; then \
      cp -a "$src/.hourglass-trust/usr/." /usr/ 2>/dev/null || true; \
      [ -f "$src/.hourglass-trust/etc/pip.conf" ] && export PIP_CONFIG_FILE="$src/.hourglass-trust/etc/pip.conf"; \
      update-ca-certificates >/dev/null; \
    fi; \
    /usr/bin/python3 -m venv /opt/hourglass; \
    /opt/hourglass/bin/pip install -q --no-cache-dir --disable-pip-version-check "$src"; \
    rm -rf "$src" /root/.cache; \
    /opt/hourglass/bin/python -m hourglass --version
# What it was built from (.ci/harness-image passes them): one step, after the install, so a new commit
# rebuilds no earlier layer.
ARG VERSION=unknown
ARG REVISION=unknown
LABEL org.opencontainers.image.version="$VERSION" org.opencontainers.image.revision="$REVISION"
# --version (and every run.json) says the commit too: reports.version reads it where there is no .git
ENV HOURGLASS_REVISION=$REVISION
