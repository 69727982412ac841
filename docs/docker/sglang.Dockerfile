# An SGLang-shaped downstream image (docs/docker.md): the runtime artifact image is COPY'd in by
# reference, installed FIRST, the image's own apt steps follow (a reinstall of the stock runtime
# package name, a new ROCm dependant), and verification runs LAST.
#
#   buildah bud --layers -f rocm-pin/sglang.Dockerfile \
#     --build-arg ROCM_PIN_RUNTIME_IMAGE=registry.example/rocm-pin-runtime:b539bf7eebfd -t sglang .
#
# Build context: rocm-pin/ (this directory).
ARG ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4
ARG ROCM_PIN_RUNTIME_IMAGE=rocm-pin-runtime:latest
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f

# BuildKit does not expand ARGs in COPY --from=: name the artifact image as a stage instead.
FROM ${ROCM_PIN_RUNTIME_IMAGE} AS rocm-pin-runtime

FROM ${ROCM_IMAGE} AS sglang
ARG ROCM_PIN_COMMIT
ARG ROCM_PIN_MODE=require
LABEL io.rocm-pin.commit=${ROCM_PIN_COMMIT}
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
COPY --from=rocm-pin-runtime / /tmp/rocm-pin/
RUN bash /usr/local/share/rocm-pin/docker/install-runtime.sh
# --- the image's own steps ---------------------------------------------------------------
RUN apt-get install -y --reinstall hip-runtime-amd && apt-get install -y hipblas
# --- LAST: a step above that reverted the runtime fails the build here --------------------
RUN bash /usr/local/share/rocm-pin/docker/verify-runtime.sh
