#!/usr/bin/env bash
# BuildKit on a machine without a Docker daemon: a PRIVATE dockerd from Debian's docker.io 20.10
# (its built-in BuildKit, `DOCKER_BUILDKIT=1 docker build`), every file under
# $ROCM_PIN_CACHE/buildkit-docker (data root, exec root, socket, log), no iptables, no bridge,
# runc. It never touches /var/lib/docker, /etc/docker or a system dockerd. Run through
# `scripts/images buildkit ...`; needs root and `scripts/install-deps docker.io`.
#
#   scripts/images buildkit start          start (or reuse) the private dockerd; prints its DOCKER_HOST
#   scripts/images buildkit stop           stop it (the data root stays, as a layer cache)
#   scripts/images buildkit env            print the export lines for running Debian's docker by hand
#                                          (and DOCKER_CONFIG for buildx, once fetched)
#   scripts/images buildkit load REF...    copy images from the podman storage of `scripts/images`
#                                          into it (skipped when the same image ID is there)
#   scripts/images buildkit build [DOCKER BUILD ARGS...] CONTEXT
#                                          start if needed, load every --build-arg value naming a
#                                          localhost/ image in podman storage, then
#                                          `DOCKER_BUILDKIT=1 docker build --network none --progress plain`
#   scripts/images buildkit buildx [DOCKER BUILDX BUILD ARGS...] CONTEXT
#                                          the same through `docker buildx build --builder default
#                                          --load` (the docker driver: the dockerd's own BuildKit,
#                                          the image lands in its store). The buildx plugin is
#                                          Debian trixie's docker-buildx, fetched into
#                                          $ROCM_PIN_CACHE/docker-buildx by scripts/setup.d/31-docker-buildx.sh
#                                          and found through DOCKER_CONFIG, never installed.
#
# The Docker CLI used is Debian's /usr/bin/docker (20.10): a newer CLI (e.g. 28 in /usr/local/bin)
# refuses DOCKER_BUILDKIT=1 without the buildx plugin, which bookworm does not package.
# Offline, BuildKit cannot fetch a `# syntax=` frontend image: only its built-in Dockerfile
# frontend is usable, so the recipe's Dockerfiles carry no `# syntax=` line.
# Registries on 127.0.0.0/8 are insecure (plain http) by default in dockerd, so the loopback
# registry of `scripts/images registry` needs no flag.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$repo/.cache}"
dir=$ROCM_PIN_CACHE/buildkit-docker
sock=$dir/docker.sock
docker_cli=${ROCM_PIN_DOCKER_CLI:-/usr/bin/docker}
buildx_config=$ROCM_PIN_CACHE/docker-buildx/config

say() { printf 'buildkit: %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

need() {
  [ "$(id -u)" -eq 0 ] || die "a private dockerd needs root; rerun as root"
  if ! command -v dockerd >/dev/null || [ ! -x "$docker_cli" ]; then
    die "dockerd or $docker_cli missing: scripts/install-deps docker.io (Debian's docker.io 20.10)"
  fi
}

dk() { DOCKER_HOST=unix://$sock DOCKER_BUILDKIT=1 "$docker_cli" "$@"; }

alive() {
  local pid
  pid=$(cat "$dir/dockerd.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  dk version --format '{{.Server.Version}}' >/dev/null 2>&1
}

start() {
  need
  if alive; then
    echo "unix://$sock"
    return 0
  fi
  mkdir -p "$dir/data" "$dir/exec"
  rm -f "$sock" "$dir/dockerd.pid"
  # Our own config file, so /etc/docker/daemon.json (the host's) is never read; the daemon's
  # identity key goes to the cache too (by default dockerd 20.10 writes /etc/docker/key.json).
  printf '{"deprecated-key-path": "%s/key.json"}\n' "$dir" >"$dir/daemon.json"
  # dockerd and its containerd also make these runtime directories (plugin and shim sockets,
  # hard-wired); remember which were not there, so stop can remove them again.
  local d
  : >"$dir/made-dirs"
  for d in /run/docker/plugins /run/docker /run/containerd/s /run/containerd; do
    [ -e "$d" ] || echo "$d" >>"$dir/made-dirs"
  done
  local storage=overlay2
  [ "$(stat -f -c %T "$dir")" = overlayfs ] && storage=vfs
  setsid dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
    --pidfile "$dir/dockerd.pid" -H "unix://$sock" --storage-driver "$storage" \
    --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
    >"$dir/dockerd.log" 2>&1 </dev/null &
  local pid=$! t
  for t in $(seq 300); do
    alive && break
    kill -0 "$pid" 2>/dev/null || die "dockerd exited: $(tail -5 "$dir/dockerd.log")"
    sleep 0.1
  done
  alive || die "dockerd did not answer on $sock within 30 s: $(tail -5 "$dir/dockerd.log")"
  say "dockerd $(dk version --format '{{.Server.Version}}') (pid $(cat "$dir/dockerd.pid"), data $dir/data, log $dir/dockerd.log) up in $((t / 10)).$((t % 10)) s"
  echo "unix://$sock"
}

stop() {
  local pid
  pid=$(cat "$dir/dockerd.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    # dockerd stops its own containerd; wait for both to be gone.
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && die "dockerd (pid $pid) did not stop within 20 s"
    say "dockerd (pid $pid) stopped"
  else
    say "no private dockerd running"
  fi
  rm -f "$dir/dockerd.pid" "$sock"
  local d
  if [ -f "$dir/made-dirs" ]; then
    while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$dir/made-dirs"
    rm -f "$dir/made-dirs"
  fi
}

# load REF...: podman storage (scripts/images' configuration) -> the private dockerd.
load() {
  local ref want have
  eval "$("$repo/scripts/images" env)"
  for ref in "$@"; do
    want=$(podman image inspect --format '{{.Id}}' "$ref" 2>/dev/null) ||
      die "$ref is not in podman storage (scripts/images base|tool make the stand-ins)"
    have=$(dk image inspect --format '{{.Id}}' "$ref" 2>/dev/null || true)
    if [ "$have" = "sha256:$want" ]; then
      continue
    fi
    say "loading $ref into dockerd"
    podman save --quiet --format docker-archive "$ref" | dk load --quiet >/dev/null ||
      die "podman save $ref | docker load failed"
  done
}

# The localhost/ images named by --build-arg values (podman storage -> the dockerd).
load_build_args() {
  local a v refs=() prev=
  for a in "$@"; do
    v=
    if [ "$prev" = --build-arg ]; then
      v=${a#*=}
    elif [[ $a == --build-arg=* ]]; then
      v=${a#--build-arg=}
      v=${v#*=}
    fi
    [[ $v == localhost/* ]] && refs+=("$v")
    prev=$a
  done
  [ ${#refs[@]} -eq 0 ] || load "${refs[@]}"
}

build() {
  start >/dev/null
  load_build_args "$@"
  dk build --network none --progress plain "$@"
}

buildx() {
  [ -x "$buildx_config/cli-plugins/docker-buildx" ] ||
    die "no buildx plugin in $buildx_config/cli-plugins: scripts/setup.d/31-docker-buildx.sh"
  start >/dev/null
  load_build_args "$@"
  DOCKER_CONFIG=$buildx_config dk buildx build --builder default --load --network none \
    --progress plain "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  start) start ;;
  stop) stop ;;
  env)
    printf 'export DOCKER_HOST=unix://%s\nexport DOCKER_BUILDKIT=1\nalias docker=%s\n' "$sock" "$docker_cli"
    # With the plugin fetched, `docker buildx ...` works by hand too.
    if [ -x "$buildx_config/cli-plugins/docker-buildx" ]; then
      printf 'export DOCKER_CONFIG=%s\n' "$buildx_config"
    fi
    ;;
  load)
    need
    alive || die "no private dockerd: scripts/images buildkit start"
    load "$@"
    ;;
  build)
    need
    build "$@"
    ;;
  buildx)
    need
    buildx "$@"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
