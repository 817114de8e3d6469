# syntax=docker/dockerfile:1
#
# The agents image: every node agent as `gpu-operator-agent <name>` (feature-discovery, metrics-exporter,
# device-plugin, mig-manager, validator, node-status-exporter, driver-manager, config-manager, operator).
#
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#       -t ghcr.io/pulumi-gpu-operator/agents:0.1.0 .
#
# One image serves programs with different needs, so its defaults are the narrowest: a non-root user and no GPU
# (NVIDIA_VISIBLE_DEVICES=void, as NVIDIA's validator image). The rendered DaemonSets grant each agent what it
# needs: root where it writes host paths or dials the kubelet, `NVIDIA_VISIBLE_DEVICES=all` where it reads NVML
# (see gpu_operator/render/operands/agent_security.py).

FROM python:3.11-slim-bookworm AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src
COPY pyproject.toml setup.py README.md requirements-agents.txt ./
COPY gpu_operator/ gpu_operator/
COPY components/ components/

# The agents' own dependency list goes into a pip-less virtualenv, then the wheel without its dependencies:
# the deployment side (Pulumi, pulumi-kubernetes, pulumi-azure-native) is never installed.
RUN python -m venv --without-pip /opt/agents \
    && python -m pip --python /opt/agents/bin/python install --no-cache-dir --requirement requirements-agents.txt \
    && python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && python -m pip --python /opt/agents/bin/python install --no-cache-dir --no-deps /wheels/pulumi_gpu_operator-*.whl

FROM python:3.11-slim-bookworm

ARG VERSION=0.1.0
ARG REVISION=unknown

LABEL org.opencontainers.image.title="pulumi-gpu-operator agents" \
      org.opencontainers.image.description="Node agents of pulumi-gpu-operator: GPU feature discovery, metrics exporter, device plugin, MIG manager, validator, node status exporter, driver manager" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim-bookworm"

ENV PATH=/opt/agents/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NVIDIA_VISIBLE_DEVICES=void \
    NVIDIA_DRIVER_CAPABILITIES=utility

COPY --from=build /opt/agents /opt/agents
# The metrics exporter's default field list under both names NVIDIA's exporter image uses: the rendered
# DaemonSet points at dcp-metrics-included.csv (DCGM_EXPORTER_COLLECTORS), the exporter's own default is the other.
COPY --from=build /src/gpu_operator/agents/metrics_exporter/default-counters.csv /etc/dcgm-exporter/dcp-metrics-included.csv
COPY --from=build /src/gpu_operator/agents/metrics_exporter/default-counters.csv /etc/dcgm-exporter/default-counters.csv

# lspci counts the node's NVIDIA PCI functions for the node status exporter, as NVIDIA's validator image does;
# rmmod (kmod) unloads the old driver's modules for the driver manager; chroot (coreutils) and umount (mount) are
# already in the base and let the validator and the driver manager run the host's tools.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends pciutils=1:3.9.0-4 kmod=30+20221128-1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 65532 agent \
    && useradd --system --no-log-init --uid 65532 --gid agent --home-dir /nonexistent --shell /usr/sbin/nologin agent

USER 65532:65532
ENTRYPOINT ["gpu-operator-agent"]
CMD ["--help"]
