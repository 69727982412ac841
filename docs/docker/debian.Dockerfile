# A downstream image on Debian's own ROCm packages (docs/flavours.md: libamdhip64-<N>,
# libhiprtc<N>, libhsa-runtime64-1 under /usr/lib/<triplet>/, as Debian sid/experimental and
# Ubuntu ship them): the same three steps as vllm.Dockerfile — install-runtime.sh FIRST, the
# image's own apt steps, verify-runtime.sh LAST — with the artifact directory taken from the
# build context instead of an artifact image, so the build needs no registry and no network.
#
#   buildah bud --layers --network none -f rocm-pin/debian.Dockerfile \
#     --build-arg DEBIAN_ROCM_IMAGE=registry.example/app-base:sid \
#     --build-arg ROCM_PIN_COMMIT=<the artifact's COMMIT> -t app .
#
# Build context: rocm-pin/ (this directory) and rocm-pin-artifact/ holding one rocm-pin-<commit12>/
# made by build-runtime.sh on the same Debian ROCm image (ROCM_PATH=/usr): debs/, repo/ (the
# same .debs as an apt repository, `rocm-pin repo`), bin/rocm-pin, COMMIT, SHA256SUMS.
ARG DEBIAN_ROCM_IMAGE=debian:sid

FROM ${DEBIAN_ROCM_IMAGE} AS app
# In the stage so a new artifact is a new layer-cache key for the RUNs mounting it.
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f
ARG ROCM_PIN_MODE=require
# guard: only the small guard binary its --guard hooks run stays in the image (~1 MB gzip);
# 1: the full rocm-pin too (~4.4 MB more gzip); 0: nothing, no guard (docs/docker.md).
ARG ROCM_PIN_KEEP_TOOL=guard
LABEL io.rocm-pin.commit=${ROCM_PIN_COMMIT}
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
# The artifact is mounted from the context for this RUN only: its bytes never land in a layer.
RUN --mount=type=bind,source=rocm-pin-artifact,target=/tmp/rocm-pin \
    bash /usr/local/share/rocm-pin/docker/install-runtime.sh
# --- the image's own steps: what a Debian user runs (reinstall of Debian's runtime name) -----
RUN apt-get install -y --reinstall libhsa-runtime64-1 && apt-get --fix-broken install -y
# --- LAST: a step above that reverted the runtime fails the build here --------------------
RUN --mount=type=bind,source=rocm-pin-artifact,target=/tmp/rocm-pin \
    bash /usr/local/share/rocm-pin/docker/verify-runtime.sh
