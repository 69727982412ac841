# shellcheck shell=bash
# Shared by scripts/bench-*: the --load option and its busy processes (stress-ng --cpu 2 --hdd 1,
# the load average allowed to settle before measuring, sampled while measuring), the load average, command-vs-command timing with hyperfine
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
bench_sampler_pid=""
bench_exit_hooks=()

# bench_init ARGS...: takes --load out of ARGS (the rest go to BENCH_ARGS) and installs the
# EXIT trap that stops the busy processes and the load sampler and runs the hooks registered
# with bench_at_exit. --load is the loaded case of every comparison: stress-ng --cpu
# ${BENCH_LOAD_CPU:-2} --hdd ${BENCH_LOAD_HDD:-1} (CPU and disk) beside the measured commands.
bench_init() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --load)
        BENCH_LOAD=1
        shift
        ;;
      --load=* | --load[0-9]*)
        echo "${0##*/}: --load takes no number now: it runs stress-ng --cpu \$BENCH_LOAD_CPU (default 2) --hdd \$BENCH_LOAD_HDD (default 1)" >&2
        exit 2
        ;;
      *)
        BENCH_ARGS+=("$1")
        shift
        ;;
    esac
  done
  BENCH_LOAD_CPU=${BENCH_LOAD_CPU:-2}
  BENCH_LOAD_HDD=${BENCH_LOAD_HDD:-1}
  [[ $BENCH_LOAD_CPU =~ ^[0-9]+$ && $BENCH_LOAD_HDD =~ ^[0-9]+$ ]] ||
    { echo "${0##*/}: BENCH_LOAD_CPU and BENCH_LOAD_HDD must be numbers of workers, got '$BENCH_LOAD_CPU' and '$BENCH_LOAD_HDD'" >&2; exit 2; }
  if [ "$BENCH_LOAD" -eq 0 ]; then
    BENCH_LOAD_CPU=0 BENCH_LOAD_HDD=0
  else
    # The same busy processes on every machine, or loaded figures do not compare: no fallback.
    bench_need stress-ng
  fi
  BENCH_LOAD_SAMPLES=$(mktemp /tmp/rocm-pin-bench-load.XXXXXX)
  trap bench_exit EXIT
  trap 'exit 130' INT TERM HUP
}

# bench_at_exit CMD: run CMD (a string, eval'd) on exit, after the busy processes are stopped.
bench_at_exit() { bench_exit_hooks+=("$1"); }

bench_exit() {
  local rc=$? h
  bench_load_stop
  rm -f "${BENCH_LOAD_SAMPLES:-}"
  for h in "${bench_exit_hooks[@]}"; do eval "$h" || true; done
  return "$rc"
}

# bench_package_of TOOL: the Debian package that has TOOL.
bench_package_of() {
  case "$1" in
    xz) echo xz-utils ;;
    dpkg-deb) echo dpkg ;;
    perf) echo linux-perf ;;
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

# bench_load_start: starts the load sampler (the 1-minute load average every 5 s, quiet runs
# too: bench_meta keeps its min/median/max over the measured part), and with --load the busy
# processes: stress-ng --cpu BENCH_LOAD_CPU (matrixprod: CPU-bound) --hdd BENCH_LOAD_HDD (writes
# and syncs files in TMPDIR: disk). Then waits until the 1-minute load average has settled: it
# follows a new load with a one-minute time constant, so at least BENCH_SETTLE_MIN seconds
# (default 150: 92 % of a step) and then until it moved less than 5 % over the last 30 s — on a
# machine others share, the level it settles at is theirs plus ours, so no fixed target — or
# at most BENCH_SETTLE_MAX seconds (default 360). The load reached is printed either way and
# kept for bench_meta. bench_load_stop and the EXIT trap (every exit path: error, INT, TERM,
# HUP) stop the workers and the sampler. BENCH_LOAD_RUNNING=PID (scripts/bench-all): the busy
# processes are the caller's, already settled; they are used, not started.
bench_load_start() {
  [ -z "$bench_sampler_pid" ] || return 0
  bench_load_settle
  # The measured part starts here, once the load has settled: bench_meta's and
  # bench_load_during's "during" load is sampled from now on (bench_hyperfine moves it later).
  BENCH_MEASURE_START=$(date +%s)
}

# bench_load_settle: bench_load_start's work — the sampler, the busy processes, the settling.
bench_load_settle() {
  local samples=$BENCH_LOAD_SAMPLES
  (
    trap 'exit 0' TERM
    while :; do
      echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)" >>"$samples"
      sleep 5
    done
  ) &
  bench_sampler_pid=$!
  if [ "$BENCH_LOAD" -eq 0 ]; then
    BENCH_SETTLED_LOAD=$(cut -d' ' -f1 /proc/loadavg)
    echo "${0##*/}: quiet: no busy processes; 1-minute load average $BENCH_SETTLED_LOAD" >&2
    return 0
  fi
  if [ -n "${BENCH_LOAD_RUNNING:-}" ]; then
    # scripts/bench-all started the busy processes once and let the load settle: share them.
    kill -0 "$BENCH_LOAD_RUNNING" 2>/dev/null ||
      { echo "${0##*/}: BENCH_LOAD_RUNNING=$BENCH_LOAD_RUNNING: no such process (the caller's stress-ng)" >&2; exit 2; }
    BENCH_SETTLED_LOAD=$(cut -d' ' -f1 /proc/loadavg)
    echo "${0##*/}: the caller's stress-ng (pid $BENCH_LOAD_RUNNING) is running; 1-minute load average $BENCH_SETTLED_LOAD" >&2
    return 0
  fi
  local min=${BENCH_SETTLE_MIN:-150} max=${BENCH_SETTLE_MAX:-360} waited=0 load history=()
  [[ $min =~ ^[0-9]+$ && $max =~ ^[0-9]+$ ]] ||
    { echo "${0##*/}: BENCH_SETTLE_MIN and BENCH_SETTLE_MAX must be seconds" >&2; exit 2; }
  local args=(--quiet --cpu "$BENCH_LOAD_CPU" --cpu-method matrixprod --timeout 4h)
  [ "$BENCH_LOAD_HDD" -eq 0 ] || args+=(--hdd "$BENCH_LOAD_HDD" --temp-path "${TMPDIR:-/tmp}")
  stress-ng "${args[@]}" >/dev/null 2>&1 &
  bench_load_pids+=("$!")
  echo "${0##*/}: started stress-ng ${args[*]}; waiting at least $min s (at most $max s) for the 1-minute load average to settle (from $(cut -d' ' -f1 /proc/loadavg))" >&2
  while :; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    history+=("$load")
    if [ "$waited" -ge "$min" ] && [ "${#history[@]}" -gt 6 ] &&
      awk -v l="$load" -v p="${history[-7]}" 'BEGIN { d = l - p; if (d < 0) d = -d; exit !(d <= 0.05 * l) }'; then
      echo "${0##*/}: load average $load after $waited s: settled (within 5 % of ${history[-7]} 30 s before)" >&2
      break
    fi
    if [ "$waited" -ge "$max" ]; then
      echo "${0##*/}: load average $load after $waited s: not settled, measuring anyway (BENCH_SETTLE_MAX=$max)" >&2
      break
    fi
    if [ $((waited % 30)) -eq 0 ]; then echo "${0##*/}: load average $load after $waited s" >&2; fi
    sleep 5
    waited=$((waited + 5))
  done
  BENCH_SETTLED_LOAD=$load
}

# bench_load_stop: stops the busy processes (stress-ng stops its workers on SIGTERM) and the
# sampler. Safe to call twice.
bench_load_stop() {
  local p
  for p in "${bench_load_pids[@]}" $bench_sampler_pid; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  bench_load_pids=()
  bench_sampler_pid=""
}

# bench_load_during: "min/median/max of the 1-minute load average over N samples" since the
# last bench_hyperfine started (the load the measured commands ran beside).
bench_load_during() {
  awk -v t0="${BENCH_MEASURE_START:-0}" '$1 >= t0 { print $2 }' "$BENCH_LOAD_SAMPLES" | sort -g |
    awk '{ v[++n] = $1 } END { if (!n) { print "no samples"; exit }
      printf "%s/%s/%s (min/median/max of %d samples)", v[1], v[int((n + 1) / 2)], v[n], n }'
}

# bench_loadavg LABEL: print /proc/loadavg (1, 5, 15 min) with a label, the CPU count and the
# busy processes; "after" adds the load during the measured part (bench_load_during).
bench_loadavg() {
  local during=""
  [ "$1" != after ] || during=", during: $(bench_load_during)"
  echo "load $1: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) on $(nproc) CPUs, busy: stress-ng --cpu $BENCH_LOAD_CPU --hdd $BENCH_LOAD_HDD$during"
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
  BENCH_MEASURE_START=$(date +%s)
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
  awk -v t0="${BENCH_MEASURE_START:-0}" '$1 >= t0 { print $2 }' "$BENCH_LOAD_SAMPLES" >"$out.samples"
  python3 "$bench_lib_dir/bench-meta.py" "$out" "$BENCH_LOAD_CPU" "$BENCH_LOAD_HDD" "$BENCH_SETTLED_LOAD" \
    "$out.samples" "$@"
  rm -f "$out.samples"
}

# bench_summary DIR [--ratio A B]... [--not-below A B]... [--meta F] [--json OUT]: per command
# min/Q1/median/Q3/max over all rounds, and per pair the paired ratio — the median of the
# per-round ratios, with their min and max (bench-summary.py); exits 1 when a --not-below pair's
# ratio is below 1.
bench_summary() { python3 "$bench_lib_dir/bench-summary.py" "$@"; }
