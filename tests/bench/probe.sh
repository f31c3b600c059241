#!/usr/bin/env bash
# Activity probe benchmark: N workspaces probed every interval against local
# endpoints (tests/tools/fake_activity standing in for the applications and
# Prometheus). Prints probe latency, failures, the controller side's CPU and
# RSS (probe_bench) and the fake server's CPU, as a table and RESULT lines.
#
#   tests/bench/probe.sh [-n TARGETS] [-i INTERVAL_S] [-r ROUNDS] [-k KINDS]
#                        [-m MAX_IN_FLIGHT] [-b BUILD_DIR]
#
# Defaults: 2000 targets, 60 s, 3 rounds, kinds jupyter,gpu (any of jupyter,
# code-server, gpu, comma separated), the prober's default concurrency, build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
n=2000
interval=60
rounds=3
kinds=jupyter,gpu
max_in_flight=""
build=$repo/build
while getopts "n:i:r:k:m:b:h" opt; do
  case $opt in
  n) n=$OPTARG ;;
  i) interval=$OPTARG ;;
  r) rounds=$OPTARG ;;
  k) kinds=$OPTARG ;;
  m) max_in_flight=$OPTARG ;;
  b) build=$OPTARG ;;
  h)
    sed -n '2,11s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
fake=$build/tests/fake_activity
bench=$build/tests/probe_bench
for f in "$fake" "$bench"; do
  [ -x "$f" ] || { echo "probe.sh: $f not built (make -C $build fake_activity probe_bench)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/hibernator-probe-bench.XXXXXX)
fake_pid=""
# shellcheck disable=SC2317 # runs from the EXIT trap
cleanup() {
  if [ -n "$fake_pid" ]; then
    kill -TERM "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Every pod reports one GPU at 3 %: real Prometheus answers carry samples.
"$fake" --port 0 --gpu-default 3 >"$work/port" 2>"$work/fake.err" &
fake_pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^port=//p' "$work/port")
  [ -n "$port" ] && break
  kill -0 "$fake_pid" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "probe.sh: fake_activity did not start" >&2
  cat "$work/fake.err" >&2
  exit 1
fi

# utime + stime of a process, in seconds.
cpu_of() {
  local stat
  stat=$(cat "/proc/$1/stat")
  stat=${stat##*) } # fields after "pid (comm) "
  # shellcheck disable=SC2086
  set -- $stat
  echo "scale=2; (${12} + ${13}) / $(getconf CLK_TCK)" | bc
}

fake_cpu0=$(cpu_of "$fake_pid")
start=$(date +%s.%N)
args=(--port "$port" --targets "$n" --interval "$interval" --rounds "$rounds" --kinds "$kinds")
[ -z "$max_in_flight" ] || args+=(--max-in-flight "$max_in_flight")
set +e
"$bench" "${args[@]}"
rc=$?
set -e
wall=$(echo "$(date +%s.%N) - $start" | bc)
fake_cpu=$(printf '%.2f' "$(echo "$(cpu_of "$fake_pid") - $fake_cpu0" | bc)")
fake_rss=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$fake_pid/status")
requests=$(curl -s "http://127.0.0.1:$port/control/stats" | sed -n 's/^{"requests":\([0-9]*\).*/\1/p')
fake_pct=$(printf '%.2f' "$(echo "scale=4; 100 * $fake_cpu / $wall" | bc)")
echo "fake server CPU $fake_cpu s = $fake_pct % of one core, ${requests:-?} requests served, peak RSS $fake_rss KiB"
echo "RESULT fake_activity cpu_s=$fake_cpu cpu_pct=$fake_pct requests=${requests:-0} rss_peak_kib=$fake_rss"

kill -TERM "$fake_pid"
fake_rc=0
wait "$fake_pid" || fake_rc=$?
fake_pid=""
# libmicrohttpd's own messages (a client that hung up, say) are worth
# seeing but not a failure; a sanitizer report also makes the exit status
# non-zero.
if [ -s "$work/fake.err" ]; then
  echo "probe.sh: fake_activity said:" >&2
  tail -n 20 "$work/fake.err" >&2
fi
if [ "$fake_rc" -ne 0 ]; then
  echo "probe.sh: fake_activity exited with status $fake_rc" >&2
  [ "$rc" -ne 0 ] || rc=1
fi
exit $rc
