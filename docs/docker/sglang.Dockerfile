# An SGLang-shaped downstream image (docs/docker.md): the runtime artifact image is bind-mounted
# by reference (never copied into a layer), installed FIRST, the image's own apt steps follow (a
# reinstall of the stock runtime package name, a new ROCm dependant), and verification runs LAST.
#
#   buildah bud --layers -f rocm-pin/sglang.Dockerfile \
#     --build-arg ROCM_PIN_RUNTIME_IMAGE=registry.example/rocm-pin-runtime:b539bf7eebfd -t sglang .
#
# Build context: rocm-pin/ (this directory).
ARG ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4
ARG ROCM_PIN_RUNTIME_IMAGE=rocm-pin-runtime:latest
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f

# BuildKit does not expand ARGs in --from=: name the artifact image as a stage instead.
FROM ${ROCM_PIN_RUNTIME_IMAGE} AS rocm-pin-runtime

FROM ${ROCM_IMAGE} AS sglang
# In the stage so a new artifact reference is a new layer-cache key for the RUNs mounting it.
ARG ROCM_PIN_RUNTIME_IMAGE
ARG ROCM_PIN_COMMIT
ARG ROCM_PIN_MODE=require
# guard: only the small guard binary its --guard hooks run stays in the image (~1 MB gzip);
# 1: the full rocm-pin too (~4.4 MB more gzip); 0: nothing, no guard (docs/docker.md).
ARG ROCM_PIN_KEEP_TOOL=guard
LABEL io.rocm-pin.commit=${ROCM_PIN_COMMIT}
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
# The artifact is mounted for this RUN only: its bytes never land in a layer of this image.
RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \
    bash /usr/local/share/rocm-pin/docker/install-runtime.sh
# --- the image's own steps ---------------------------------------------------------------
RUN apt-get install -y --reinstall hip-runtime-amd && apt-get install -y hipblas
# --- LAST: a step above that reverted the runtime fails the build here --------------------
RUN --mount=type=bind,from=rocm-pin-runtime,target=/tmp/rocm-pin \
    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh
