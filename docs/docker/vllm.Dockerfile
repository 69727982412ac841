# A vLLM-shaped downstream image (docs/docker.md): the runtime artifact image is COPY'd in by
# reference, installed FIRST, the image's own steps follow (here vllm_release.dockerfile's
# custom rccl forced in with dpkg, then apt's dependency repair), and verification runs LAST.
#
#   buildah bud --layers -f rocm-pin/vllm.Dockerfile \
#     --build-arg ROCM_PIN_RUNTIME_IMAGE=registry.example/rocm-pin-runtime:b539bf7eebfd -t vllm .
#
# Build context: rocm-pin/ (this directory) and rccl/ (the custom rccl .deb(s)).
ARG ROCM_IMAGE=rocm/dev-ubuntu-24.04:7.2.4
ARG ROCM_PIN_RUNTIME_IMAGE=rocm-pin-runtime:latest
ARG ROCM_PIN_COMMIT=b539bf7eebfd99ad0a69668caa1f4037034d501f

# BuildKit does not expand ARGs in COPY --from=: name the artifact image as a stage instead.
FROM ${ROCM_PIN_RUNTIME_IMAGE} AS rocm-pin-runtime

FROM ${ROCM_IMAGE} AS vllm
ARG ROCM_PIN_COMMIT
ARG ROCM_PIN_MODE=require
LABEL io.rocm-pin.commit=${ROCM_PIN_COMMIT}
COPY rocm-pin/*.sh /usr/local/share/rocm-pin/docker/
COPY --from=rocm-pin-runtime / /tmp/rocm-pin/
RUN bash /usr/local/share/rocm-pin/docker/install-runtime.sh
# --- the image's own steps ---------------------------------------------------------------
COPY rccl/ /tmp/rccl/
RUN dpkg -i --force-all /tmp/rccl/*.deb && apt-get --fix-broken install -y && rm -rf /tmp/rccl
# --- LAST: a step above that reverted the runtime fails the build here --------------------
RUN bash /usr/local/share/rocm-pin/docker/verify-runtime.sh
