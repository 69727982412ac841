# shellcheck shell=bash
# Shared by scripts/bench-*: the --load option and its busy processes (the load average allowed
# to settle before measuring), the load average, command-vs-command timing with hyperfine
# (warm-ups, JSON export) in rounds whose command orders form a balanced Latin square — hyperfine
# 1.15 runs each command's runs back to back and cannot interleave, so the rounds are what
# alternates the order — and the raw results kept with their provenance (bench_results,
# bench_meta). Spread and paired ratios come from scripts/lib/bench-summary.py.
# Source it after `set -euo pipefail`; call bench_init "$@" first.

bench_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH_LOAD=0
BENCH_SETTLED_LOAD=""
BENCH_ARGS=()
bench_load_pids=()
bench_exit_hooks=()

# bench_init ARGS...: takes --load N out of ARGS (the rest go to BENCH_ARGS) and installs the
# EXIT trap that stops the busy processes and runs the hooks registered with bench_at_exit.
bench_init() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --load)
        [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "${0##*/}: --load needs a number of busy processes, got '${2:-}'" >&2; exit 2; }
        BENCH_LOAD=$2
        shift 2
        ;;
      --load=*)
        BENCH_LOAD=${1#--load=}
        [[ $BENCH_LOAD =~ ^[0-9]+$ ]] || { echo "${0##*/}: --load needs a number of busy processes, got '$BENCH_LOAD'" >&2; exit 2; }
        shift
        ;;
      *)
        BENCH_ARGS+=("$1")
        shift
        ;;
    esac
  done
  # The same busy processes on every machine, or loaded figures do not compare: no fallback.
  [ "$BENCH_LOAD" -eq 0 ] || bench_need stress-ng
  trap bench_exit EXIT
  trap 'exit 130' INT TERM
}

# bench_at_exit CMD: run CMD (a string, eval'd) on exit, after the busy processes are stopped.
bench_at_exit() { bench_exit_hooks+=("$1"); }

bench_exit() {
  local rc=$? h
  bench_load_stop
  for h in "${bench_exit_hooks[@]}"; do eval "$h" || true; done
  return "$rc"
}

# bench_package_of TOOL: the Debian package that has TOOL.
bench_package_of() {
  case "$1" in
    xz) echo xz-utils ;;
    dpkg-deb) echo dpkg ;;
    *) echo "$1" ;;
  esac
}

# bench_need TOOL...: fail with the package to install when a tool is missing.
bench_need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null ||
      { echo "${0##*/}: needs $t, which is not installed: run scripts/install-deps (or apt-get install $(bench_package_of "$t"))" >&2; exit 2; }
  done
}

# bench_load_start: start BENCH_LOAD busy processes (stress-ng --cpu, one CPU-bound worker each)
# and BENCH_LOAD_HDD disk workers (stress-ng --hdd; default 0), then wait until the 1-minute load
# average has settled at 90 % of the worker count (it follows a new load with a one-minute time
# constant: about 2.3 minutes from idle), or at most BENCH_SETTLE_MAX seconds (default 300).
# The load reached is printed either way and kept for bench_meta. bench_init made sure stress-ng
# is there; bench_load_stop / the EXIT trap stop the workers.
bench_load_start() {
  [ "$BENCH_LOAD" -gt 0 ] || return 0
  local hdd=${BENCH_LOAD_HDD:-0} max=${BENCH_SETTLE_MAX:-300} waited=0 target load
  [[ $hdd =~ ^[0-9]+$ ]] || { echo "${0##*/}: BENCH_LOAD_HDD must be a number of disk workers, got '$hdd'" >&2; exit 2; }
  local args=(--quiet --cpu "$BENCH_LOAD" --cpu-method matrixprod --timeout 4h)
  [ "$hdd" -eq 0 ] || args+=(--hdd "$hdd" --temp-path "${TMPDIR:-/tmp}")
  stress-ng "${args[@]}" >/dev/null 2>&1 &
  bench_load_pids+=("$!")
  target=$((BENCH_LOAD + hdd))
  echo "${0##*/}: started $BENCH_LOAD CPU and $hdd disk workers; waiting (at most $max s) for the 1-minute load average to reach 90 % of $target" >&2
  while :; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    if awk -v l="$load" -v t="$target" 'BEGIN { exit !(l >= 0.9 * t) }'; then
      echo "${0##*/}: load average $load after $waited s (target $target): settled" >&2
      break
    fi
    if [ "$waited" -ge "$max" ]; then
      echo "${0##*/}: load average $load after $waited s (target $target): not settled, measuring anyway (BENCH_SETTLE_MAX=$max)" >&2
      break
    fi
    sleep 5
    waited=$((waited + 5))
  done
  BENCH_SETTLED_LOAD=$load
}

bench_load_stop() {
  local p
  for p in "${bench_load_pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  bench_load_pids=()
}

# bench_loadavg LABEL: print /proc/loadavg (1, 5, 15 min) with a label, and the CPU count.
bench_loadavg() {
  echo "load $1: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) on $(nproc) CPUs, --load $BENCH_LOAD"
}

# bench_hyperfine DIR ROUNDS RUNS WARMUP PREPARE NAME CMD [NAME CMD]...: one hyperfine invocation
# per round, each with every command (RUNS timed runs after WARMUP warm-ups, PREPARE before each
# run; "" for none). The rounds' orders are a balanced Latin square (bench-summary.py --orders:
# each command equally often in each position and right after each other one), so ROUNDS is
# rounded up to whole squares: N rounds for an even number N of commands, 2N for an odd one.
# hyperfine fails (and so the script) when a command exits non-zero. JSON in DIR/round-K.json.
bench_hyperfine() {
  local dir=$1 rounds=$2 runs=$3 warmup=$4 prepare=$5
  shift 5
  local names=() cmds=() orders=() order=() r k args total
  while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
  mkdir -p "$dir"
  mapfile -t orders < <(python3 "$bench_lib_dir/bench-summary.py" --orders "${#names[@]}" "$rounds")
  total=${#orders[@]}
  [ "$total" -eq "$rounds" ] ||
    echo "${0##*/}: $total rounds, not $rounds: whole balanced squares of ${#names[@]} commands" >&2
  for r in "${!orders[@]}"; do
    args=(--style basic --warmup "$warmup" --runs "$runs" --export-json "$dir/round-$r.json")
    [ -z "$prepare" ] || args+=(--prepare "$prepare")
    read -r -a order <<<"${orders[$r]}"
    for k in "${order[@]}"; do args+=(-n "${names[$k]}" "${cmds[$k]}"); done
    echo "${0##*/}: round $((r + 1))/$total, order: $(for k in "${order[@]}"; do printf '%s ' "${names[$k]}"; done)" >&2
    hyperfine "${args[@]}" >&2
  done
}

# bench_results NAME: prints a new directory for this run's raw results (hyperfine JSON, report,
# meta.json): ${BENCH_RESULTS:-$ROCM_PIN_CACHE/bench-results}/NAME-<UTC time>-<commit>. No script
# deletes it: every figure in docs/performance.md must lead back to its raw JSON.
bench_results() {
  local base=${BENCH_RESULTS:-${ROCM_PIN_CACHE:-$PWD/.cache}/bench-results} commit dir
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  dir="$base/$1-$(date -u +%Y%m%dT%H%M%SZ)-$commit"
  mkdir -p "$dir"
  echo "$dir"
}

# bench_meta OUT [KEY=VALUE]...: the run's provenance as JSON (commit, date, machine, busy
# processes, the settled and current load average, the KEY=VALUE pairs): bench-meta.py.
bench_meta() {
  local out=$1
  shift
  python3 "$bench_lib_dir/bench-meta.py" "$out" "$BENCH_LOAD" "${BENCH_LOAD_HDD:-0}" "$BENCH_SETTLED_LOAD" "$@"
}

# bench_summary DIR [--ratio A B]... [--not-below A B]... [--meta F] [--json OUT]: per command
# min/Q1/median/Q3/max over all rounds, and per pair the paired ratio — the median of the
# per-round ratios, with their min and max (bench-summary.py); exits 1 when a --not-below pair's
# ratio is below 1.
bench_summary() { python3 "$bench_lib_dir/bench-summary.py" "$@"; }
