#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# suite.sh: device tests, run inside the ofxvm guest (two rxe hosts, A and B)
# by test/run-device-tests.  Judges the stock programs by their output lines
# (contract section 6): their exit codes mean nothing.
#
# OFX_DEVICE_SUITE=quick (default, CI) or full (adds the long dapltest cases).
# Exit status: number of failed jobs.
# shellcheck source=../vm/guest-lib.sh
. "${OFXVM_LIB:-/etc/ofxvm/lib.sh}"

A=${OFXVM_A_IP:-192.0.2.1}
SUITE=${OFX_DEVICE_SUITE:-quick}
DTEST_PASS='DAPL Test Complete\. PASSED'
DTEST_FAIL='FAILED|ERR:|Error'
DT_OK='End of Work -- Client Exiting'
DT_BAD='Test Error|bad connection event|FAIL|Warning: conn_event_wait'
# valgrind memcheck: librdmacm is preloaded so that its process-wide state is
# not orphaned when libdat2 dlcloses libdaplofx at the last ia_close (that
# would show up as definite leaks of librdmacm); --keep-debuginfo names the
# frames of the unloaded provider.
MEMCHECK="env LD_PRELOAD=librdmacm.so.1 valgrind -q --leak-check=full \
--errors-for-leak-kinds=definite --error-exitcode=9 --keep-debuginfo=yes \
--suppressions=$OFX_TOP_SRCDIR/test/device/valgrind.supp"
MEMCHECK_BAD='FAIL|definitely lost|Invalid (read|write)'

# dtest pair: NAME IA [extra args]
dtest_pair() {
	local name=$1 ia=$2
	shift 2
	vm_pair "$name" 180 port:15828 \
		"ona dtest -P $ia $*" "onb dtest -P $ia -h $A $*" "$DTEST_PASS" "$DTEST_FAIL"
}

# dapltest server on A for IA $1 (B's client uses the same IA name), then
# each remaining argument is one client command line after "-s A -D IA".
dapltest_block() {
	local tag=$1 ia=$2 i=0
	shift 2
	if ! vm_bg "$tag.srv" 600 ona dapltest -T S -D "$ia" ||
		! vm_wait_log "$tag.srv" 'Service Point Ready' 60; then
		vm_join "$tag.srv" 5
		return
	fi
	for args in "$@"; do
		i=$((i + 1))
		# dapltest wants -s/-D before the op list: insert them after "-T X"
		# shellcheck disable=SC2086
		set -- $args
		vm_run "$tag.$i" 300 onb dapltest "$1" "$2" -s "$A" -D "$ia" "${@:3}"
		vm_expect "$tag.$i" "$DT_OK" "$DT_BAD"
	done
	vm_run "$tag.quit" 60 onb dapltest -T Q -s "$A" -D "$ia"
	vm_join "$tag.srv" 30
	vm_expect "$tag.srv" 'Service Point Ready' "$DT_BAD"
}

vm_say "suite $SUITE: libdaplofx over rxe"

# 1. libdaplofx on both hosts: the stock regression (dapltest -T T/-T P/-T L/
#    -T F, dtest incl. polling, dtestx, dtestcm with 100 connections, dtestsrq),
#    the same script that runs on real hardware.
vm_run regress.ofx 1200 "$OFX_TOP_SRCDIR/dapltest-scripts/regress" --quick \
	--server-cmd ona --client-cmd onb --log /out/logs/regress.ofx ofx-rxe ofx-rxe "$A"
vm_expect regress.ofx ' 0 failed;' 'FAIL'

# 2. interop: one IA name, libdaplofx on one host, stock libdaplofa on the other.
dtest_pair dtest.mix-ab mix-ab -b 65536 -B 200
dtest_pair dtest.mix-ba mix-ba -b 65536 -B 200
dapltest_block dapl.mix-ab mix-ab "-T T -i 1000 -t 1 -w 1 client SR 256 server RW 4096 server SR 256"
dapltest_block dapl.mix-ba mix-ba "-T T -i 1000 -t 1 -w 1 client SR 256 server RR 4096 server SR 256"

# 3. p2p RTR mode on both sides, with each RTR operation.
dtest_pair dtest.p2p ofx-rxe-p2p -b 65536 -B 200
dtest_pair dtest.p2p.write ofx-rxe-p2pw -b 4096 -B 50
dtest_pair dtest.p2p.read ofx-rxe-p2pr -b 4096 -B 50
dapltest_block dapl.p2p ofx-rxe-p2p \
	"-T T -i 1000 -t 1 -w 1 client SR 256 server SR 256" \
	"-T P -i 1000 -m p RW 4096 2"
# ... and p2p really was negotiated, not just configured: the cm debug log of
# a dapltest client (whose EPs start from queried defaults) and of a dtest
# client says so for every connection
p2p_used() {
	DAPL_OFX_LOG_LEVEL=debug DAPL_OFX_LOG_SUBSYS=cm dapltest_block dapl.p2p.used ofx-rxe-p2p \
		"-T T -i 100 -t 1 -w 1 client SR 256 server SR 256"
	vm_expect dapl.p2p.used.1 'established \(active, p2p send\)' \
		'established \(active, p2p off\)'
	DAPL_OFX_LOG_LEVEL=debug DAPL_OFX_LOG_SUBSYS=cm dtest_pair dtest.p2p.used ofx-rxe-p2p \
		-b 4096 -B 10
	vm_expect dtest.p2p.used.cli 'established \(active, p2p send\)' \
		'established \(active, p2p off\)'
}
p2p_used

# 4. configuration errors fail dat_ia_open cleanly (dapltest -T L opens the IA).
vm_run cfg.xrc-on 60 bash -c "ona dtest -P ofx-rxe-xrc -s; exit 0"
vm_expect cfg.xrc-on 'DAT_MODEL_NOT_SUPPORTED|dat_ia_open.*(MODEL|NOT)' "$DTEST_PASS"
vm_run cfg.bad-key 60 bash -c "ona dtest -P ofx-rxe-bad -s; exit 0"
vm_expect cfg.bad-key 'DAT_INVALID_PARAMETER' "$DTEST_PASS"
# xrc=auto on a device without XRC: the whole stock regression over the RC fallback
vm_run regress.xrcauto 1200 "$OFX_TOP_SRCDIR/dapltest-scripts/regress" --quick \
	--only trans,perf,dtest,dtestx,dtestcm,dtestsrq \
	--server-cmd ona --client-cmd onb --log /out/logs/regress.xrcauto \
	ofx-rxe-xrcauto ofx-rxe-xrcauto "$A"
vm_expect regress.xrcauto ' 0 failed;' 'FAIL'

# 5. the project's own DAT consumers (test/device/*.c), when built; ofx_dev_tests
#    includes dat_cr_handoff between two PSPs, dat_ep_recv_query and a
#    DAT_PSP_PROVIDER_FLAG PSP (provider-created EP completed by ep_modify).
if [ -x "$OFX_TOP_BUILDDIR/test/device/ofx_dev_tests" ]; then
	vm_pair dev.tests 300 log:'server ready' \
		"ona $OFX_TOP_BUILDDIR/test/device/ofx_dev_tests server" \
		"onb $OFX_TOP_BUILDDIR/test/device/ofx_dev_tests client $A" \
		'ALL TESTS PASSED' 'FAIL'
fi

# 6. DAT 2.0 common connect: 8 processes (4 per host) all-to-all through
#    DAT_CSP_CREATE / DAT_EP_COMMON_CONNECT, in several call orders, with
#    p2p RTR off and on; then a peer that never calls and a missing CSP.
# csp_all2all TAG IA MODE PORT [NPH [WRAP]]: NPH ranks per host (default 4);
# WRAP (e.g. "$MEMCHECK") runs the even ranks under it, with its bad patterns.
csp_all2all() {
	local tag=$1 ia=$2 mode=$3 port=$4 nph=${5:-4} wrap=${6:-} r on w bad=FAIL secs=120
	[ -z "$wrap" ] || { bad=$MEMCHECK_BAD; secs=300; }
	for ((r = 0; r < 2 * nph; r++)); do
		on=ona
		[ "$r" -lt "$nph" ] || on=onb
		w=
		[ $((r % 2)) = 1 ] || w=$wrap
		# shellcheck disable=SC2086
		vm_bg "$tag.r$r" "$secs" "$on" $w "$CSP" "$ia" "$r" "$nph" "$A" "$B" "$port" "$mode"
	done
	for ((r = 0; r < 2 * nph; r++)); do
		vm_join "$tag.r$r" "$secs"
		vm_expect "$tag.r$r" "csp rank $r: ok $mode: $((2 * nph - 1)) connections" "$bad"
	done
}
CSP=$OFX_TOP_BUILDDIR/test/device/ofx_csp_test
B=${OFXVM_B_IP:-192.0.2.2}
if [ -x "$CSP" ]; then
	csp_all2all csp.asc ofx-rxe all2all-asc 51000
	csp_all2all csp.desc ofx-rxe all2all-desc 51100
	csp_all2all csp.stagger.p2p ofx-rxe-p2p all2all-stagger 51200
	csp_all2all csp.desc.p2p ofx-rxe-p2p all2all-desc 51300
	# valgrind memcheck of the CSP paths: one rank of each host under it
	csp_all2all csp.memcheck ofx-rxe-p2p all2all-desc 51600 2 "$MEMCHECK"
	vm_bg csp.nocall.r1 60 ona "$CSP" ofx-rxe 1 1 "$A" "$A" 51400 nocall
	vm_run csp.nocall.r0 60 ona "$CSP" ofx-rxe 0 1 "$A" "$A" 51400 nocall
	vm_expect csp.nocall.r0 'ok peer never calls: TIMED_OUT' 'FAIL'
	vm_join csp.nocall.r1 30
	vm_run csp.unreach 60 ona "$CSP" ofx-rxe 0 1 "$A" "$B" 51500 unreachable
	vm_expect csp.unreach 'ok no csp at the address: UNREACHABLE' 'FAIL'
fi

# 6. IB extensions: stock dtestx (write-immediate, cmp&swap, fetch&add) on ours,
# and against stock both ways (a dtestx client keeps its own -P); -q = open_query.
DTX_PASS='IB extension test - immed/atomic test PASSED'
DTX_FAIL='ERROR:|returned|unexpected|Skipping'
dtestx_pair() {
	vm_pair "$1" 150 log:'waiting to snd addr' \
		"ona dtestx -P $2 -s" "onb dtestx -P $3 -h $A" "$DTX_PASS" "$DTX_FAIL"
}
vm_run dtestx.query 60 ona dtestx -P ofx-rxe -q
vm_expect dtestx.query 'Open_Query: ofx-rxe num_attrs' 'returned'
dtestx_pair dtestx.ofx-stock ofx-rxe ofa-v2-rxe
dtestx_pair dtestx.stock-ofx ofa-v2-rxe ofx-rxe

# 7. shared receive queues: stock dtestsrq on ours (contract 6.6 and 7).  After
# each DISCONNECTED its teardown waits, with no timeout, for an EP_BROKEN async
# event per EP (stock's LAST_WQE_REACHED); rxe never raises that, so the
# provider reports it itself after lastwqe_timeout_ms (see srq.h).
# (dtestsrq over libdaplofx on both hosts runs in the regression above)

# 8. CNO and RMR.  Stock dtest in CNO mode: both DTO EVDs are attached to a CNO
# and every completion is collected through dat_cno_wait + dat_evd_dequeue.
# ofx_rmr_test binds memory windows (dat_rmr_create = type 1, revoked by an
# unbind; DAT_RMR_CREATE_FOR_EP = type 2, revoked by rmr_free), the peer
# RDMA-writes through them, then its write through a revoked window must fail
# with a remote access error and break its EP.  In its third round the client
# revokes a type 2 window itself with DAT_EP_POST_SEND_WITH_INVALIDATE; the
# server's receive event must name the invalidated rmr_context, rmr_query must
# show the window unbound, and the same RMR bound again over a new connection
# must carry the client's next write.
dtest_pair dtest.cno ofx-rxe -c -b 65536 -B 200
dtest_pair dtest.cno.mix-ab mix-ab -c -b 4096 -B 100
dtest_pair dtest.cno.mix-ba mix-ba -c -b 4096 -B 100
if [ -x "$OFX_TOP_BUILDDIR/test/device/ofx_rmr_test" ]; then
	vm_pair rmr 120 log:'server ready' \
		"ona $OFX_TOP_BUILDDIR/test/device/ofx_rmr_test server ofx-rxe" \
		"onb $OFX_TOP_BUILDDIR/test/device/ofx_rmr_test client $A ofx-rxe" \
		'ALL TESTS PASSED' 'FAIL'
fi

# 8b. valgrind memcheck of the provider under the servers of ofx_dev_tests
# (provider-created EP, ep_modify, cr_handoff, p2p) and ofx_rmr_test (windows,
# remote invalidation, ep_free under a bound window); clients run natively.
memcheck_pair() { # NAME PROGRAM IA
	local prog=$OFX_TOP_BUILDDIR/test/device/$2
	[ -x "$prog" ] || return 0
	vm_pair "$1" 600 log:'server ready' "ona $MEMCHECK $prog server $3" \
		"onb $prog client $A $3" 'ALL TESTS PASSED' "$MEMCHECK_BAD"
}
memcheck_pair dev.memcheck ofx_dev_tests ofx-rxe-p2p
memcheck_pair rmr.memcheck ofx_rmr_test ofx-rxe

# 9. fault paths (test/device/ofx_fault_tests.c; behaviours in its header):
# a peer SIGKILLed with receives and RDMA writes in flight, then restarted;
# connects that cannot succeed; RNR; an EVD smaller than the work in flight;
# access violations; ia_close(ABRUPT) with live objects; EP exhaustion in an
# rdma cgroup (hca_object limit); and one valgrind memcheck run.
FT=$OFX_TOP_BUILDDIR/test/device/ofx_fault_tests
fault_tests() {
	local vpid restarted=0 cg=/sys/fs/cgroup
	vm_bg fault.srv 600 ona "$FT" server
	if ! vm_wait_log fault.srv 'server ready' 60; then
		vm_join fault.srv 5
		return
	fi
	# the victim is started by hand: its SIGKILL status is expected
	ona "$FT" server 52100 >"$VM_LOGS/fault.victim.log" 2>&1 &
	vpid=$!
	vm_bg fault.killed 300 onb "$FT" client "$A" peer_killed
	vm_wait_log fault.killed 'client loaded' 90 && vm_say "fault: SIGKILL to the peer (pid $vpid)"
	kill -KILL "$vpid"
	wait "$vpid"
	if vm_wait_log fault.killed 'client waiting for restart' 90; then
		vm_bg fault.restarted 200 ona "$FT" server 52100
		restarted=1
	fi
	vm_join fault.killed 200
	vm_expect fault.killed 'ok peer_killed' 'FAIL'
	[ "$restarted" = 0 ] || vm_stop fault.restarted

	# the peer stays up but its host goes silent: netem drops every packet
	# on both veths until the client has seen BROKEN and torn down
	vm_bg fault.silent.srv 200 ona "$FT" server 52100
	if vm_wait_log fault.silent.srv 'server ready' 60; then
		vm_bg fault.vanished 200 onb "$FT" client "$A" peer_vanished
		if vm_wait_log fault.vanished 'client loaded' 90; then
			vm_say "fault: dropping all traffic on va and vb"
			tc qdisc add dev "${OFXVM_A_NETDEV:-va}" root netem loss 100%
			tc qdisc add dev "${OFXVM_B_NETDEV:-vb}" root netem loss 100%
			tc qdisc show dev "${OFXVM_A_NETDEV:-va}"
		fi
		vm_join fault.vanished 150
		tc qdisc del dev "${OFXVM_A_NETDEV:-va}" root 2>/dev/null
		tc qdisc del dev "${OFXVM_B_NETDEV:-vb}" root 2>/dev/null
		vm_expect fault.vanished 'ok peer_vanished' 'FAIL'
	fi
	vm_stop fault.silent.srv

	vm_run fault.cases 300 onb "$FT" client "$A" no_listener unreachable rnr evd_overflow \
		access_write_ro access_bad_rkey access_read_wo abrupt_close
	vm_expect fault.cases 'ALL FAULT TESTS PASSED' 'FAIL'
	vm_run fault.resolve 60 onb env DAPL_OFX_CM_RETRIES=0 DAPL_OFX_CM_TIMEOUT_MS=1000 \
		"$FT" client "$A" unreachable_resolve
	vm_expect fault.resolve 'ok unreachable_resolve' 'FAIL'

	# EP exhaustion: B's process may hold 60 rdma objects (QPs, CQs, MRs, PDs)
	[ -e "$cg/cgroup.controllers" ] || mount -t cgroup2 none "$cg"
	if grep -qw rdma "$cg/cgroup.controllers" 2>/dev/null &&
		echo +rdma >"$cg/cgroup.subtree_control" && mkdir -p "$cg/ofx-eplimit" &&
		echo "${OFXVM_B_IBDEV:-rxeb} hca_object=60" >"$cg/ofx-eplimit/rdma.max"; then
		vm_run fault.ep_limit 120 bash -c \
			"echo \$\$ >$cg/ofx-eplimit/cgroup.procs && exec onb $FT client $A ep_limit"
		vm_expect fault.ep_limit 'ok ep_limit' 'FAIL'
	else
		vm_say "fault: no rdma cgroup controller here: ep_limit skipped"
	fi

	# shellcheck disable=SC2086
	vm_run fault.memcheck 600 onb $MEMCHECK "$FT" client "$A" no_listener access_write_ro \
		abrupt_close
	vm_expect fault.memcheck 'ALL FAULT TESTS PASSED' "$MEMCHECK_BAD"

	vm_run fault.quit 60 onb "$FT" client "$A" quit
	vm_join fault.srv 30
	vm_expect fault.srv 'server done: 0 failures' 'FAIL'
}
[ ! -x "$FT" ] || fault_tests

if [ "$SUITE" = full ]; then
	dtest_pair dtest.ofx.default ofx-rxe
	dapltest_block dapl.full ofx-rxe \
		"-T T -i 10000 -t 1 -w 8 client SR 256 server RW 4096 server SR 256" \
		"-T T -i 4096 -t 4 -w 4 client SR 8192 3 server SR 8192 3" \
		"-T P -i 4096 -p 16 -m b RW 65536 2"
fi

vm_summary
