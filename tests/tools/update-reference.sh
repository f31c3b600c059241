#!/bin/sh
# Writes docs/reference.md from the CRDs in deploy/crds/ with
# tests/tools/crd_reference. Run it after changing a CRD; the unit test
# test_reference fails while the file is stale.
#
#   tests/tools/update-reference.sh            # builds in build/
#   BUILD_DIR=/tmp/b tests/tools/update-reference.sh
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}

# Configure (again): a build directory made before the tool existed has no
# rule for it.
cmake -S "$repo" -B "$build" >/dev/null
cmake --build "$build" --target crd_reference >/dev/null

out=$repo/docs/reference.md
trap 'rm -f "$out.tmp"' EXIT
"$build/tests/crd_reference" "$repo/deploy/crds" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
