#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds the pdata fuzzer with clang (libFuzzer + ASan + UBSan) in a temp dir
# and runs it on a temp copy of the seed corpus, so the repository is never
# written to.  Exits non-zero on a crash, a sanitizer report or a build error.
#
# usage: run-fuzz.sh [runs]        (default 10000000)
set -eu

runs=${1:-10000000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
CC=${CLANG:-clang}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ofx-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$top/dapl-provider" "$here/fuzz_pdata.c" "$top/dapl-provider/pdata.c" \
	-o "$tmp/fuzz_pdata"

mkdir "$tmp/corpus"
cp "$here"/corpus/pdata/* "$tmp/corpus/"

# Crash inputs land in $tmp too; print them before the trap removes them.
status=0
# libFuzzer exits 77 by default, which automake reads as SKIP: use 1.
(cd "$tmp" && ./fuzz_pdata -runs="$runs" -error_exitcode=1 -timeout_exitcode=1 \
	-print_final_stats=1 corpus) || status=$?
if [ "$status" -ne 0 ]; then
	for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
		[ -e "$f" ] || continue
		echo "run-fuzz: failing input $(basename "$f"):"
		od -A d -t x1 "$f" | head -40
	done
	echo "run-fuzz: fuzz_pdata failed (exit $status)" >&2
	exit "$status"
fi
echo "run-fuzz: fuzz_pdata passed $runs runs"
