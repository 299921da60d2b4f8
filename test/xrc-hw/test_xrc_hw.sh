#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# test_xrc_hw.sh: what can be checked of dapltest-scripts/xrc-hw.sh without
# XRC hardware (make check).
#   1. its parsing functions against the sample outputs in samples/
#      (xrc-hw.sh --selftest);
#   2. shellcheck of the script, this test and the mock, when installed
#      (scripts/install-deps installs it);
#   3. the whole script against stand-ins for the programs it runs (mock):
#      every case passes with a healthy mock, and a mock with a planted
#      fault (an RC QP kept, TGTs leaked, a connection counted RC) makes
#      exactly the check for it fail.
# Exit status: 0 all passed, 1 otherwise.
set -u

src=${OFX_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
script=$src/dapltest-scripts/xrc-hw.sh
samples=$src/test/xrc-hw/samples
work=$(mktemp -d "${TMPDIR:-/tmp}/xrc_hw.XXXXXX")
# kept when a check failed: the whole outputs say which and why
trap '[ "$failed" != 0 ] && echo "# outputs kept in $work" || rm -rf "$work"' EXIT
checks=0
failed=0

pass() { checks=$((checks + 1)); echo "ok $checks - $1"; }
fail() {
	checks=$((checks + 1)); failed=$((failed + 1))
	echo "not ok $checks - $1"
	[ -z "${2:-}" ] || { grep ' FAIL ' "$2"; tail -n 40 "$2"; } | sed 's/^/#   /'
}

if bash "$script" --selftest "$samples" >"$work/selftest.out" 2>&1; then
	pass "xrc-hw.sh --selftest: $(tail -n1 "$work/selftest.out" | sed 's/^# //')"
else
	fail "xrc-hw.sh --selftest" "$work/selftest.out"
fi

if command -v shellcheck >/dev/null; then
	if shellcheck "$script" "$0" "$src/test/xrc-hw/mock" >"$work/sc.out" 2>&1; then
		pass "shellcheck"
	else
		fail "shellcheck" "$work/sc.out"
	fi
else
	echo "# shellcheck not installed (scripts/install-deps): not run"
fi

# the stand-ins, by the names xrc-hw.sh calls
bin=$work/bin
mkdir -p "$bin"
for p in rdma ss ibv_devinfo dapltest dtest dtestx dtestcm dtestsrq ofx_xrc_hw; do
	ln -s "$src/test/xrc-hw/mock" "$bin/$p"
done

# run NAME [MOCK_BUG] ARGS...: the script on the mock; its output in $work/NAME.out
run() {
	local name=$1 bug=$2
	shift 2
	rm -rf "$work/state"
	mkdir -p "$work/state"
	PATH=$bin:$PATH MOCK_DIR=$work/state MOCK_SAMPLES=$samples MOCK_BUG=$bug SAMPLE_S=0.1 \
		MOCK_LOGDIR=$work/$name.log \
		timeout 600 bash "$script" --server-cmd "env MOCK_HOST=srv" --client-cmd "env MOCK_HOST=cli" \
		--tool "$bin/ofx_xrc_hw" --iter 100 --long-iter 10000 --conns 8 --burst 4 --rounds 2 \
		--log "$work/$name.log" "$@" ofx-srv ofx-cli 10.0.0.1 >"$work/$name.out" 2>&1
	echo $? >"$work/$name.rc"
}

# verdict NAME CHECK: the PASS/FAIL word of a check in the final table
verdict() {
	sed -n '/^=* xrc-hw: /,$p' "$work/$1.out" | awk -v c="$2" '$1 == c { print $2; exit }'
}

run good ""
n=$(sed -n '/^=* xrc-hw: /,$p' "$work/good.out" | grep -c ' PASS ')
if [ "$(cat "$work/good.rc")" = 0 ] && ! grep -q ' FAIL ' "$work/good.out" && [ "$n" -ge 150 ]; then
	pass "the whole script on a healthy mock: $n checks, all PASS"
else
	fail "the whole script on a healthy mock (exit $(cat "$work/good.rc"), $n PASS)" "$work/good.out"
fi
for c in dapltest.L.t4w8.qp.cli dapltest.L.t4w8.tgt.srv shared.domain.srv shared.qp.cli \
	unpolled.cli tgtkill.2a.pre.tgt.srv tgtkill.2a.post.tgt.srv tgtkill.2b.post.tgt.srv \
	tgtkill.2b.cli.stats churn.dtestcm.after.srv churn.dapltest.after.tgt.srv \
	dtestsrq.srv.stats dtestx.rd_atomic.cli norc.dtestcm.qp.cli; do
	if [ "$(verdict good "$c")" = PASS ]; then
		pass "healthy mock: $c PASS"
	else
		fail "healthy mock: $c missing or not PASS" "$work/good.out"
	fi
done
# the RC QPs the active side has while it connects are counted (the peak)
if grep -Eq '^dapltest\.L\.t4w8\.qp\.cli +PASS ini=33 rc=4 ' "$work/good.out"; then
	pass "healthy mock: the peak of 4 connecting RC QPs is seen and within the bound"
else
	fail "healthy mock: dapltest.L.t4w8.qp.cli not 'ini=33 rc=4'" "$work/good.out"
fi

# planted faults: BUG GROUP CHECKS (the comma list of checks that must fail, and no other)
if grep -Eq '^norc\.dtestcm\.qp\.cli +PASS ini=1 rc=0 ' "$work/good.out"; then
	pass "healthy mock: xrc_rc_fallback=no, the client's bursts peak at 0 RC QPs"
else
	fail "healthy mock: norc.dtestcm.qp.cli not 'ini=1 rc=0'" "$work/good.out"
fi

while read -r bug group want; do
	run "$bug" "$bug" --only "$group"
	got=$(sed -n '/^=* xrc-hw: /,$p' "$work/$bug.out" | awk '$2 == "FAIL" { print $1 }' | paste -sd, -)
	if [ "$got" = "$want" ] && [ "$(cat "$work/$bug.rc")" = "$(tr , '\n' <<<"$want" | wc -l)" ]; then
		pass "MOCK_BUG=$bug: $want fail(s), nothing else"
	else
		fail "MOCK_BUG=$bug: failed '$got', expected '$want' (exit $(cat "$work/$bug.rc"))" "$work/$bug.out"
	fi
done <<-'EOF'
	rc_kept dapltest dapltest.L.t4w8.qp.cli
	tgt_leak churn churn.dapltest.tgt.srv,churn.dapltest.after.tgt.srv
	rc_fallback dtest dtest.cli.stats
	norc_rc norc norc.dtestcm.qp.cli
EOF

echo "# $((checks - failed)) of $checks checks passed"
[ "$failed" = 0 ]
