# The rocm-pin runtime ARTIFACT image (docs/docker.md): builds the patched ROCr + CLR pair once,
# packages it against the ROCm image's stock runtime, signs an apt repository, and ships ONE
# directory /rocm-pin-<commit12>/ in a FROM-scratch image labelled with the commit. Downstream
# Dockerfiles (vllm.Dockerfile, sglang.Dockerfile) bind-mount it from that image, by registry
# reference, for the RUNs that install and verify it (never COPY: its bytes would stay in a layer).
#
#   buildah bud --layers -f rocm-pin/runtime.Dockerfile \
#     --secret id=rocm-pin-key,src=rocm-pin-key.asc \
#     --build-arg ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4@sha256:... \
#     -t registry.example/rocm-pin-runtime:b539bf7eebfd .
#   (docker buildx build: the same arguments)
#
# Build context: rocm-pin/ (this directory: the Dockerfiles and scripts) and, only for a local
# source, rocm-systems/ (a checkout; --build-arg ROCM_PIN_SOURCE=/ctx/rocm-systems).
ARG ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4
# An image holding rocm-pin's own .deb in /deb/ (tool.Dockerfile builds one from source).
ARG ROCM_PIN_TOOL_IMAGE=rocm-pin-tool:latest
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f

FROM ${ROCM_PIN_TOOL_IMAGE} AS rocm-pin-tool

# --- builder: the runtime pair, built once, keyed on the commit (never shipped) -------------
FROM ${ROCM_IMAGE} AS runtime-builder
ARG ROCM_PIN_COMMIT
ARG ROCM_PIN_SOURCE=https://github.com/ROCm/rocm-systems.git
ARG MAX_JOBS
# More `rocm-pin build` arguments (e.g. --clr-cmake-arg=-DFOO=OFF), split on blanks.
ARG ROCM_PIN_BUILD_ARGS=
# 0 when the ROCm image already has the build prerequisites (offline builds).
ARG INSTALL_BUILD_DEPS=1
COPY --from=rocm-pin-tool /deb/ /tmp/rocm-pin-tool/
RUN if [ "$INSTALL_BUILD_DEPS" = 1 ]; then \
      apt-get update && apt-get install -y --no-install-recommends \
        git ca-certificates cmake ninja-build g++ pkg-config xxd libelf-dev libdw-dev \
        libdrm-dev libnuma-dev libglvnd-dev libgl1-mesa-dev python3 python3-pip python3-ply && \
      pip3 install --break-system-packages CppHeaderParser; \
    fi && \
    apt-get install -y --no-install-recommends /tmp/rocm-pin-tool/rocm-pin_*.deb && \
    rm -rf /tmp/rocm-pin-tool
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
# Names the signing key (e.g. its fingerprint). A secret is not part of the layer cache key
# (buildah --layers, BuildKit): without this, a build with another key reuses the old signature.
ARG ROCM_PIN_SIGN_KEY_ID=none
# The repository signing key is a secret: mounted for this RUN only, never in a layer. Without
# it build-runtime.sh makes a throwaway key and keeps only its public half. The context is
# bind-mounted (read-only, not copied) for a local source checkout.
RUN --mount=type=secret,id=rocm-pin-key \
    --mount=type=bind,target=/ctx \
    bash /usr/local/share/rocm-pin/docker/build-runtime.sh && rm -rf /tmp/rocm-pin-work

# --- the artifact image: only /rocm-pin-<commit12>/ --------------------------------------
FROM scratch AS runtime
ARG ROCM_PIN_COMMIT
ARG ROCM_PIN_SOURCE=https://github.com/ROCm/rocm-systems.git
ARG ROCM_VERSION=7.2.4
COPY --from=runtime-builder /out/ /
LABEL org.opencontainers.image.revision=${ROCM_PIN_COMMIT} \
      org.opencontainers.image.source=${ROCM_PIN_SOURCE} \
      org.opencontainers.image.title="rocm-pin runtime artifact" \
      io.rocm-pin.commit=${ROCM_PIN_COMMIT} \
      io.rocm-pin.rocm-version=${ROCM_VERSION}
