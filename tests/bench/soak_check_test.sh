#!/bin/sh
# test_soak_checker: soak_check.py on the recorded fixture tests/data/soak
# (violations of every kind, next to the same situations done right) must
# exit 1 and print exactly tests/data/soak/expected.txt.
#   soak_check_test.sh PYTHON SOURCE_DIR
set -u
py=$1 src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$py" "$src/tests/bench/soak_check.py" "$src/tests/data/soak" >"$out" 2>&1
rc=$?
if [ "$rc" != 1 ]; then
  echo "expected exit status 1 (violations found), got $rc" >&2
  cat "$out" >&2
  exit 1
fi
if ! diff -u "$src/tests/data/soak/expected.txt" "$out"; then
  echo "the report differs from tests/data/soak/expected.txt" >&2
  exit 1
fi
echo "soak checker: exactly the planted violations found (14, every check)"
