#!/usr/bin/env bash
# The simulated week (tests/bench/week.c): 100 GPU notebooks with the
# patterns a notebook team has, replayed through decide() on a virtual
# clock under several idle policies, with and without pre-warms. Builds
# the Release configuration in BUILD_DIR (default build-release) and prints
# the table docs/benchmarks.md ("The week") quotes, with the time it took.
#
#   tests/bench/week.sh [-s SEED] [-b BUILD_DIR]
#
# No cluster is needed: the replay plays the cluster (workspace/replay.h).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build-release
seed=1
while getopts "s:b:h" opt; do
  case $opt in
  s) seed=$OPTARG ;;
  b) build=$OPTARG ;;
  h)
    sed -n '2,10s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target week -j "$(nproc)" >/dev/null
start=$(date +%s)
"$build/tests/week" "$seed"
echo
echo "replayed in $(($(date +%s) - start)) s on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
