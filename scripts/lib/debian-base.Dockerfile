# The Debian-flavour base image scripts/images debian-base makes (not part of the recipe): the
# cached sid-debian-rocm6-dev tarball (scripts/setup.d/23-debian-rocm-chroot.sh, imported with
# `podman import`): Debian sid with Debian's own ROCm 6.4.3 runtime packages (libamdhip64-6,
# libhiprtc6, libhiprtc-builtins6, libhsa-runtime64-1 under /usr/lib/<triplet>/), real
# dependants (rocminfo, librocfft0, libhipfft0), libamdhip64-dev and gcc. Built offline.
# Context: stock-repo/, a flat repository (`rocm-pin repo --flat`) of the stock .debs the tarball
# keeps in /srv/debian-stock.
ARG OS_IMAGE
FROM ${OS_IMAGE}
# Like Debian's Docker images: no documentation, no recommends, no fsync per unpacked file; apt
# knows only the local repository of Debian's stock .debs (the image's deb.debian.org), so every
# apt command works without a network.
RUN printf 'path-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n' > /etc/dpkg/dpkg.cfg.d/excludes && \
    echo force-unsafe-io > /etc/dpkg/dpkg.cfg.d/docker-apt-speedup && \
    printf 'APT::Install-Recommends "0";\nAcquire::Languages "none";\nDpkg::Use-Pty "0";\n' > /etc/apt/apt.conf.d/90rocm-pin-debian-base && \
    rm -rf /etc/apt/sources.list.d/* /srv/debian-stock && : > /etc/apt/sources.list
COPY stock-repo/ /srv/debian-stock/
# The installed stock versions must be in it (reinstalls and reverts work offline).
RUN echo 'deb [trusted=yes] file:/srv/debian-stock ./' > /etc/apt/sources.list.d/debian-stock.list && \
    apt-get update -q && \
    apt-get install -y -q --reinstall --download-only libamdhip64-6 libhsa-runtime64-1 && \
    rm -rf /var/cache/apt/archives/*.deb
