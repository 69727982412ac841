# The pinned RCCL alongside the pinned runtime pair, both from ONE artifact directory
# (docs/families.md): install-runtime.sh installs the pair FIRST (and arms the guard), the next
# RUN installs RCCL's replacement from the same artifact with `rocm-pin install`, the image's
# own steps follow, and `rocm-pin verify` is the LAST step: it checks both families.
#
#   buildah bud --layers --network none -f rocm-pin/rccl.Dockerfile \
#     --build-arg ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4 \
#     --build-arg ROCM_PIN_COMMIT=<the artifact's COMMIT> -t app .
#
# Build context: rocm-pin/ (this directory) and rocm-pin-artifact/ holding one
# rocm-pin-<commit12>/: debs/ (the pair, `rocm-pin package`), families/rccl/ (RCCL's
# replacement, `rocm-pin package --family rccl [--from-deb rccl_<ver>_amd64.deb]`, made against
# the same ROCm image), bin/rocm-pin, COMMIT, SHA256SUMS (covering families/ too).
ARG ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4

FROM ${ROCM_IMAGE} AS app
# In the stage so a new artifact is a new layer-cache key for the RUNs mounting it.
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f
ARG ROCM_PIN_MODE=require
# 1: the full rocm-pin stays in the image: the RCCL step and the last verify below run it.
ARG ROCM_PIN_KEEP_TOOL=1
LABEL io.rocm-pin.commit=${ROCM_PIN_COMMIT}
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
# The pair: checks the artifact's SHA256SUMS, keeps rocm-pin in /usr/local/bin, arms the guard.
RUN --mount=type=bind,source=rocm-pin-artifact,target=/tmp/rocm-pin \
    bash /usr/local/share/rocm-pin/docker/install-runtime.sh
# RCCL from the same artifact (already checked above); no stock .deb kept in the layer: an
# image rolls back by using the previous image.
RUN --mount=type=bind,source=rocm-pin-artifact,target=/tmp/rocm-pin \
    rocm-pin install --mode "$ROCM_PIN_MODE" --no-rollback /tmp/rocm-pin/rocm-pin-*/families/rccl/*.deb
# --- the image's own steps go here (apt-get, pip, …) ---------------------------------------
# --- LAST: a step above that reverted either family fails the build here -------------------
RUN rocm-pin verify
