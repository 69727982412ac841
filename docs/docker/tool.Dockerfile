# rocm-pin's own .deb, built from source (scripts/package-self), in /deb/ of a scratch image:
# what runtime.Dockerfile's ROCM_PIN_TOOL_IMAGE names. Context: a rocm-pin source checkout.
#
#   buildah bud -f docs/docker/tool.Dockerfile -t rocm-pin-tool:latest .
ARG RUST_IMAGE=rust:1-bookworm
FROM ${RUST_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends dpkg-dev binutils
COPY . /src/rocm-pin/
RUN cd /src/rocm-pin && scripts/package-self /deb

FROM scratch AS rocm-pin-tool
COPY --from=build /deb/ /deb/
