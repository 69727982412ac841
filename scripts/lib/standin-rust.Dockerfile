# The stand-in for docs/docker/tool.Dockerfile's RUST_IMAGE (rust:1-bookworm), which cannot be
# pulled here (not part of the recipe): the cached bookworm builder tarball (`podman import`),
# the host's Rust toolchain, and the crates of Cargo.lock vendored, with cargo set offline. apt
# knows no repository, so tool.Dockerfile's `apt-get update && apt-get install dpkg-dev binutils`
# runs offline (both are installed here, dpkg-dev from .debs apt-get download fetched during
# scripts/test-setup). Made by scripts/lib/standin-rust-image.sh.
ARG OS_IMAGE
FROM ${OS_IMAGE}
COPY debs/ /tmp/debs/
RUN rm -f /etc/apt/sources.list.d/* && : > /etc/apt/sources.list && \
    dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs && \
    dpkg-query -W -f '${Package} ${Status}\n' dpkg-dev binutils gcc | grep -v ' installed$' | \
      { ! grep .; }
COPY toolchain/ /usr/local/rust/
COPY vendor/ /usr/local/cargo/vendor/
COPY cargo-config.toml /usr/local/cargo/config.toml
# As rust:1-bookworm: CARGO_HOME=/usr/local/cargo and its bin/ first on PATH.
ENV CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN rustc --version && cargo --version
