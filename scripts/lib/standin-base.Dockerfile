# The stand-in ROCm base image scripts/images base makes (not part of the recipe): a cached
# Debian tarball (imported with `podman import`) with the stand-in stock ROCm set installed
# through apt from a local repository, as a ROCm image has it (/opt/rocm -> /etc/alternatives/rocm
# -> /opt/rocm-<v>, .info/version, ld.so.conf.d entry), and the loader probe. Built offline.
# Context: the output of `rocm-pin standin stock` with a Packages index in debs/.
ARG OS_IMAGE
FROM ${OS_IMAGE}
# Like Ubuntu's Docker images: no documentation, no recommends, no fsync per unpacked file
# (docker-apt-speedup); apt knows only the stock repository (a ROCm image's repo.radeon.com), so
# every apt command works without a network.
RUN printf 'path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n' > /etc/dpkg/dpkg.cfg.d/excludes && \
    echo force-unsafe-io > /etc/dpkg/dpkg.cfg.d/docker-apt-speedup && \
    printf 'APT::Install-Recommends "0";\nAcquire::Languages "none";\nDpkg::Use-Pty "0";\n' > /etc/apt/apt.conf.d/90rocm-pin-standin && \
    rm -f /etc/apt/sources.list.d/* && : > /etc/apt/sources.list
COPY debs/ /srv/rocm-stock/
COPY extra/ /srv/rocm-stock-extra/
COPY rocm-pin-loader-probe /usr/local/bin/rocm-pin-loader-probe
RUN echo 'deb [trusted=yes] file:/srv/rocm-stock ./' > /etc/apt/sources.list.d/rocm-stock.list && \
    apt-get update -q && \
    apt-get install -y -q rocm-hip-runtime hip-dev rccl && \
    rm -rf /var/cache/apt/archives/*.deb
