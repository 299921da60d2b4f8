#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# xrc-hw.sh: validates XRC-backed endpoints (ia_params xrc=on, dapl-provider/xrc.h)
# between two nodes with XRC-capable HCAs (mlx4, mlx5).  rxe has no XRC: use
# test/run-device-tests there (RC fallback and the xrc=on refusal only).
#
#   xrc-hw.sh [options] SERVER_IA CLIENT_IA SERVER_ADDR
#
#   --server-cmd PREFIX  run server-side programs through PREFIX ("ssh node1")
#   --client-cmd PREFIX  the same for the client side ("ssh node2")
#   --conns N            dtestcm connections (default 64)
#   --log DIR            one log per case (default: a temporary folder)
#
# Both IA names must map to libdaplofx with xrc=on in their host's dat.conf,
# with a domain file shared by the processes of a node, for example
#   ofx-v2-mlx5_0-1-xrc u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 \
#       "mlx5_0 1 xrc=on xrcd=/dev/shm/ofx.xrcd" ""
# SERVER_ADDR is the server's IPv4 address on that port.  Every command runs
# with DAPL_OFX_STATS=yes, so each IA prints its "stats: xrc ..." line at
# ia_close; while `dapltest -t 4 -w 8` holds its 32 connections the script
# samples `rdma resource show qp` on both nodes and prints one line per node:
#   qp-count NODE xrc_ini=I xrc_tgt=T rc=R
# rc counts every RC QP of the dapltest processes, in any state (an XRC EP
# owns one only while its offer is unanswered or for a connection that
# fell back to RC), taken from the samples with the most INI QPs, when all
# 32 connections are up: the fewest seen there.  With XRC working the 32
# EPs need one INI QP per request EVD and PZ pair that talks to the other
# node (not one per EP), one TGT QP at the peer per INI QP, and no RC QP:
# the case qp.NODE fails on rc > 0 or no INI QP.  The same run with
# xrc=off shows rc=32 per side for comparison.  dtest and dtestcm send 48 bytes of
# connect data, which leave just room for our 8-byte trailer and so the XRC
# offer: their connections run over XRC (the stats lines count them as
# conn_xrc); dtestsrq checks the RC path of an xrc=on IA (SRQ EPs stay RC).
# Exit status: number of failed cases.
set -u

server_cmd=""
client_cmd=""
conns=64
logdir=""
while [ $# -gt 0 ]; do
	case $1 in
	--server-cmd) server_cmd=$2; shift 2 ;;
	--client-cmd) client_cmd=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--log) logdir=$2; shift 2 ;;
	-h|--help) sed -n '3,35p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
if [ $# -ne 3 ]; then
	echo "usage: xrc-hw.sh [options] SERVER_IA CLIENT_IA SERVER_ADDR (--help)" >&2
	exit 2
fi
SIA=$1 CIA=$2 SADDR=$3
[ -n "$logdir" ] || logdir=$(mktemp -d /tmp/xrc-hw.XXXXXX)
mkdir -p "$logdir"
ENV="env DAPL_OFX_STATS=yes"
failed=0

record() { # NAME VERDICT NOTE
	printf '%-24s %-5s %s\n' "$1" "$2" "$3"
	[ "$2" = PASS ] || failed=$((failed + 1))
}

judge() { # NAME LOG PASS_RE FAIL_RE
	if grep -Eq "$4" "$2"; then
		record "$1" FAIL "$(grep -Em1 "$4" "$2" | cut -c1-60)"
	elif grep -Eq "$3" "$2"; then
		record "$1" PASS ""
	else
		record "$1" FAIL "no /$3/ (log $2)"
	fi
}

srv() { # NAME SECS CMD...
	local name=$1 secs=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -k 5 "$secs" $server_cmd $ENV "$@" > "$logdir/$name.srv.log" 2>&1 &
	SRV_PID=$!
}

cli() { # NAME SECS CMD...
	local name=$1 secs=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -k 5 "$secs" $client_cmd $ENV "$@" > "$logdir/$name.log" 2>&1
}

wait_for() { # LOG REGEX SECS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		kill -0 "$SRV_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

join_srv() {
	wait "$SRV_PID" 2>/dev/null
}

# qp_sample PREFIX OUT: QP counts by type from `rdma resource show qp`, one
# line per sample; rc is every RC QP (any state) of the dapltest processes
qp_sample() {
	local prefix=$1 out=$2
	: > "$out"
	while :; do
		# shellcheck disable=SC2086
		$prefix rdma resource show qp 2>/dev/null |
			awk '/XRC_INI/ {i++} /XRC_TGT/ {t++} / type RC / && / comm dapltest/ {r++}
			     END {printf "%d %d %d\n", i, t, r}' >> "$out"
		sleep 0.5
	done
}

# qp_line NODE FILE: the samples with the most INI QPs (all connections up),
# the fewest RC QPs among them (an offer in flight owns one for a moment)
qp_line() {
	awk -v n="$1" '{ if ($1 > i || (i == $1 && $3 < r)) { i = $1; t = $2; r = $3 } }
		END {printf "qp-count %s xrc_ini=%d xrc_tgt=%d rc=%d\n", n, i, t, r}' "$2"
}

qp_judge() { # NODE FILE: XRC EPs own no RC QP
	local line
	line=$(qp_line "$1" "$2")
	echo "$line"
	case $line in
	*xrc_ini=0*) record "qp.$1" FAIL "no xrc ini qp seen ($line)" ;;
	*" rc=0") record "qp.$1" PASS "no rc qp for the xrc eps" ;;
	*) record "qp.$1" FAIL "rc qps exist for xrc eps ($line)" ;;
	esac
}

echo "xrc-hw: server $SIA at $SADDR, client $CIA, logs in $logdir"

# 1. dapltest: one server, transaction tests with many EPs per thread
srv dapltest 600 dapltest -T S -D "$SIA"
if wait_for "$logdir/dapltest.srv.log" 'Service Point Ready' 30; then
	cli T.sr 300 dapltest -T T -s "$SADDR" -D "$CIA" -i 1000 -t 1 -w 1 \
		client SR 256 server SR 256
	judge T.sr "$logdir/T.sr.log" 'End of Work -- Client Exiting' 'Test Error|bad connection'
	cli T.w8 300 dapltest -T T -s "$SADDR" -D "$CIA" -i 1000 -t 1 -w 8 \
		client SR 256 server RW 4096 server SR 256 client SR 4096 server SR 256
	judge T.w8 "$logdir/T.w8.log" 'End of Work -- Client Exiting' 'Test Error|bad connection'
	qp_sample "$server_cmd" "$logdir/qp.server" & S1=$!
	qp_sample "$client_cmd" "$logdir/qp.client" & S2=$!
	cli T.t4w8 300 dapltest -T T -s "$SADDR" -D "$CIA" -i 20000 -t 4 -w 8 \
		client SR 256 server RR 4096 server SR 256
	kill "$S1" "$S2" 2>/dev/null
	wait "$S1" "$S2" 2>/dev/null
	judge T.t4w8 "$logdir/T.t4w8.log" 'End of Work -- Client Exiting' \
		'Test Error|bad connection'
	qp_judge server "$logdir/qp.server"
	qp_judge client "$logdir/qp.client"
	cli T.validate 300 dapltest -T T -V -s "$SADDR" -D "$CIA" -i 1000 -t 2 -w 4 \
		client SR 1024 server RW 4096 server RR 4096 server SR 1024
	judge T.validate "$logdir/T.validate.log" 'End of Work -- Client Exiting' \
		'Test Error|bad connection'
	cli P.rw 300 dapltest -T P -s "$SADDR" -D "$CIA" -i 4096 -p 16 -m b RW 65536 2
	judge P.rw "$logdir/P.rw.log" 'Total WQE' 'Test Error'
	cli Q 60 dapltest -T Q -s "$SADDR" -D "$CIA"
else
	record dapltest.server FAIL "no ready line (log $logdir/dapltest.srv.log)"
fi
join_srv

# 2. dtest: private data both ways (48 bytes out, echo +1 back), RDMA, send
srv dtest 300 dtest -P "$SIA" -s
if wait_for "$logdir/dtest.srv.log" 'waiting for client' 30; then
	cli dtest 300 dtest -P "$CIA" -h "$SADDR" -b 4096 -B 100
	judge dtest "$logdir/dtest.log" 'PASSED' 'FAILED'
fi
join_srv

# 3. dtestcm: N connections with 48 bytes of data each (over XRC on an xrc=on IA)
srv dtestcm 600 dtestcm -P "$SIA" -s -c "$conns" -b 16 -w
if wait_for "$logdir/dtestcm.srv.log" 'waiting for client' 30; then
	cli dtestcm 600 dtestcm -P "$CIA" -h "$SADDR" -c "$conns" -b 16 -w
	judge dtestcm "$logdir/dtestcm.log" 'Connection Test Complete' 'FAILED|error'
fi
join_srv

# 4. dtestsrq: EPs made with an SRQ stay RC under xrc=on
cli_srq() {
	srv dtestsrq 300 dtestsrq -P "$SIA" -s -c 8 -B 4 -b 1024
	sleep 2
	cli dtestsrq 300 dtestsrq -P "$CIA" -h "$SADDR" -c 8 -B 4 -b 1024
	judge dtestsrq "$logdir/dtestsrq.log" 'SRQ Test Complete' 'FAILED|ERR'
	join_srv
}
cli_srq

# the provider's own counters, one line per IA
echo "-- stats (client) --"
cat "$logdir"/*.log 2>/dev/null | grep -h 'stats: xrc' | sort | uniq -c | head -20
echo "-- stats (server) --"
cat "$logdir"/*.srv.log 2>/dev/null | grep -h 'stats: xrc' | sort | uniq -c | head -20
echo "xrc-hw: $failed failed"
exit "$failed"
