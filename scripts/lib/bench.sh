# shellcheck shell=bash
# Shared by scripts/bench-*: the --load option and its busy processes, the load average, and
# command-vs-command timing with hyperfine (warm-ups, JSON export) in rounds whose command order
# rotates and reverses — hyperfine 1.15 runs each command's runs back to back and cannot interleave, so the
# rounds are what alternates the order. Spread and ratios come from scripts/lib/bench-summary.py.
# Source it after `set -euo pipefail`; call bench_init "$@" first.

bench_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH_LOAD=0
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

# bench_load_start: start BENCH_LOAD busy processes (stress-ng --cpu, one CPU-bound worker each;
# bench_init made sure stress-ng is there). Stopped by bench_load_stop / the EXIT trap.
bench_load_start() {
  [ "$BENCH_LOAD" -gt 0 ] || return 0
  stress-ng --quiet --cpu "$BENCH_LOAD" --cpu-method matrixprod --timeout 4h >/dev/null 2>&1 &
  bench_load_pids+=("$!")
  echo "${0##*/}: started $BENCH_LOAD busy processes (--load $BENCH_LOAD); letting the load average rise for 20 s" >&2
  sleep 20
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

# bench_hyperfine DIR ROUNDS RUNS WARMUP PREPARE NAME CMD [NAME CMD]...: ROUNDS hyperfine
# invocations, each with every command (RUNS timed runs after WARMUP warm-ups, PREPARE before
# each run; "" for none); round r starts with command r and odd rounds run backwards (so each
# command comes first once per N rounds and follows different ones); JSON in DIR/round-K.json.
bench_hyperfine() {
  local dir=$1 rounds=$2 runs=$3 warmup=$4 prepare=$5
  shift 5
  local names=() cmds=() r i n k args
  while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
  n=${#names[@]}
  mkdir -p "$dir"
  for r in $(seq 0 $((rounds - 1))); do
    args=(--style basic --warmup "$warmup" --runs "$runs" --export-json "$dir/round-$r.json")
    [ -z "$prepare" ] || args+=(--prepare "$prepare")
    # Round r starts with command r; odd rounds go backwards from it: a rotation alone keeps
    # every command right after the same one (whose output writeback or cache state it may inherit).
    local order=()
    for i in $(seq 0 $((n - 1))); do
      if [ $((r % 2)) -eq 0 ]; then order+=($(((r + i) % n))); else order+=($(((r - i + n * n) % n))); fi
    done
    for k in "${order[@]}"; do args+=(-n "${names[$k]}" "${cmds[$k]}"); done
    echo "${0##*/}: round $((r + 1))/$rounds, order: $(for k in "${order[@]}"; do printf '%s ' "${names[$k]}"; done)" >&2
    hyperfine "${args[@]}" >&2
  done
}

# bench_summary DIR [--ratio A B]...: per command min/Q1/median/Q3/max over all rounds, and for
# each pair the ratio of medians with its spread over the rounds (see bench-summary.py).
bench_summary() { python3 "$bench_lib_dir/bench-summary.py" "$@"; }
