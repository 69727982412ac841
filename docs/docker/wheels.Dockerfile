# ROCm as Python wheels (docs/wheels.md), shaped like the ROCm 10 base stage of SGLang's image
# (`rocm1000-base`): the venv in /opt/venv, ROCm from a wheel index into it, /opt/rocm a link to
# site-packages/_rocm_sdk_devel, ROCM_PATH and LD_LIBRARY_PATH set. Then our rocm-sdk-core
# through rocm-pin (`install --venv`: installed offline, pinned for pip and uv), and verify LAST
# (the venv's pin, and every copy of the runtime torch's libraries map).
#
#   buildah bud --layers -f rocm-pin/wheels.Dockerfile \
#     --build-arg PYTHON_IMAGE=ubuntu:24.04 -t app .
#
# Build context: rocm-pin/ (this directory) and rocm-pin-wheels/ holding bin/rocm-pin and
# wheels/rocm_sdk_core-<stock>+pin.<commit12>-*.whl (made by `rocm-pin package --wheels` from a
# venv holding the same stock set). With no network: rocm-index/ (a PEP 503 tree of the stock
# wheels, --build-arg ROCM_INDEX_URL=file:///ctx/rocm-index/) and pip-wheel/ (a pip wheel, for a
# base whose Python has no ensurepip).
ARG PYTHON_IMAGE=ubuntu:24.04

FROM ${PYTHON_IMAGE} AS rocm1000-base
ARG ROCM_INDEX_URL=https://rocm.nightlies.amd.com/v2/gfx942-dcgpu/
ARG ROCM_VERSION=10.0.0
# pip into the venv: from the context's pip-wheel/ when there is one, else ensurepip.
RUN --mount=type=bind,source=.,target=/ctx \
    if [ -d /ctx/pip-wheel ]; then \
      whl=$(ls /ctx/pip-wheel/pip-*.whl) && python3 -m venv --without-pip /opt/venv \
      && /opt/venv/bin/python "$whl/pip" install -q --no-index "$whl"; \
    else python3 -m venv /opt/venv; fi
ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
# The ROCm wheels and torch; `rocm-sdk init` expands the devel tree (hard links to the core's
# files); /opt/rocm points into it.
RUN --mount=type=bind,source=.,target=/ctx \
    pip install -q --index-url "$ROCM_INDEX_URL" "rocm[libraries,devel]==$ROCM_VERSION" torch \
    && rocm-sdk init \
    && ln -s "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_rocm_sdk_devel" /opt/rocm
ENV ROCM_PATH=/opt/rocm LD_LIBRARY_PATH=/opt/rocm/lib
# uv reads no per-venv configuration: point it at the pin rocm-pin writes.
ENV UV_CONFIG_FILE=/opt/venv/uv.toml

FROM rocm1000-base AS app
# Ours, from the context for this RUN only: the wheel lands in the venv's wheelhouse (pip and uv
# reinstall it from there, offline); the tool does not land in a layer.
RUN --mount=type=bind,source=rocm-pin-wheels,target=/tmp/rocm-pin \
    /tmp/rocm-pin/bin/rocm-pin install --venv /opt/venv /tmp/rocm-pin/wheels/rocm_sdk_core-*+pin.*.whl
# --- the image's own steps go here -----------------------------------------------------------
# --- LAST: the venv's pin, and no consumer maps a stock copy (verify exits 1 and fails the build)
RUN --mount=type=bind,source=rocm-pin-wheels,target=/tmp/rocm-pin \
    /tmp/rocm-pin/bin/rocm-pin verify --venv /opt/venv && /tmp/rocm-pin/bin/rocm-pin verify
