#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench-guest.sh: the measuring half of dapltest-scripts/bench.  It runs the
# stock programs (dapltest, dtestcm), perftest and callgrind between a
# server host and a client host, round by round, and writes what it measured
# to $BENCH_OUT/results.tsv (one value per line), the logs to
# $BENCH_OUT/logs and the callgrind profiles to $BENCH_OUT/callgrind.  The
# host script (bench) turns these into the table, the CSV and the plot.
#
# In the ofxvm guest it needs no settings: the server is host A (`ona`), the
# client host B (`onb`).  On real hardware, bench sets the BENCH_* variables
# below (prefixes such as "ssh node1", device names, GID index).
#
# Every round runs, in this order and with the same parameters:
#   stock  libdaplofa on both sides (IA $BENCH_STOCK_IA)
#   ofx    libdaplofx on both sides (IA $BENCH_OFX_IA, and $BENCH_P2P_IA for
#          the connection rate with p2p=on)
#   raw    perftest over verbs, the platform limit
# Cases (the per-size iteration count shrinks above 4 KiB, see iters_for):
#   RW  SIZE  dapltest -T P -m p RW SIZE 1            ib_write_bw -s SIZE
#   SR  SIZE  dapltest -T T client SR SIZE server SR SIZE (ping-pong, blocking
#             waits; -P with BENCH_SR_POLL=1; round trips/s = client WQE/s / 2,
#             timed by dapltest around the iteration loop only)
#                                                     ib_send_lat -s SIZE
#             (round trips/s = 1e6 / (2 * t_avg))
#   RR  4096  dapltest -T P -m p RR 4096 1            ib_read_bw -s 4096
#   RWLAT 4096 dapltest -T P -m p -p 1 RW 4096 1 (us per completed op)
#                                                     ib_write_lat: 2 * t_avg
#   SRBW 256  (raw only) ib_send_bw -s 256, streaming sends
#   CM  N     dtestcm -c N -b BURST: connections/s as printed by dtestcm
#             ("CPS"), client wall time beside it
# Instruction counts (callgrind, CALLGRIND=1), for stock and ofx alike:
#   cg.SYS[.rr].iN   dapltest -T P -m p RW (RR) 4096 1 on the client, -i N for
#                    each N of CG_ITERS
#   cost.SYS.dto     test/device/ofx_cost_bench dto (BENCH_COST): the client
#                    under callgrind, one dump per measured phase (empty poll,
#                    RDMA write/read, send/recv ping-pong, each twice)
#   cost.SYS.connT   ofx_cost_bench conn up to T connections, both sides under
#                    callgrind (dumps of two measured phases just below T);
#                    T in COST_T, and ofx-p2p at COST_P2P_T
#   scale.SYS        ofx_cost_bench conn without valgrind: memory per EP at
#                    SCALE_C connected EPs and per EVD, time per connection
#   cm/SYS.cN        dtestcm -w -c N -b BURST (stock's own program, blocking
#                    waits), both sides under callgrind, for each N of CM_CG
#                    and SYS stock, ofx, ofx-p2p (cost part "dtestcm")
# Dumps land in callgrind/cost/NAME.cli and NAME.srv (bench reads their
# "Client Request: PHASE:OPS:EMPTIES" trigger lines).
# Exit status: the number of failed runs (at most 100).
set -u

OUT=${BENCH_OUT:-${OFXVM_OUT:-$PWD}}
SRV=${BENCH_SRV-ona}
CLI=${BENCH_CLI-onb}
SADDR=${BENCH_SADDR:-${OFXVM_A_IP:-192.0.2.1}}
SDEV=${BENCH_SDEV:-${OFXVM_A_IBDEV:-rxea}}
CDEV=${BENCH_CDEV:-${OFXVM_B_IBDEV:-rxeb}}
SGID=${BENCH_SGID:-${OFXVM_A_GID_INDEX:-1}}
CGID=${BENCH_CGID:-${OFXVM_B_GID_INDEX:-1}}
STOCK_IA=${BENCH_STOCK_IA:-ofa-v2-rxe}
OFX_IA=${BENCH_OFX_IA:-ofx-rxe}
P2P_IA=${BENCH_P2P_IA:-ofx-rxe-p2p}
ROUNDS=${BENCH_ROUNDS:-5}
SIZES=${BENCH_SIZES:-8 64 256 1024 4096 16384 65536}
ITER=${BENCH_ITER:-2000}
PP_ITER=${BENCH_PP_ITER:-1000}
CONNS=${BENCH_CONNS:-100}
CM_BURST=${BENCH_CM_BURST:-10}
SR_POLL=${BENCH_SR_POLL:-0}
CALLGRIND=${BENCH_CALLGRIND:-1}
ONLY_CALLGRIND=${BENCH_ONLY_CALLGRIND:-0}	# 1: skip warm-up and rounds
CG_ITERS=${BENCH_CG_ITERS:-200 1200}
CG_TMP=${BENCH_CG_TMP:-/tmp}
COST=${BENCH_COST:-}			# path of ofx_cost_bench; empty: no cost parts
COST_PARTS=${BENCH_COST_PARTS:-dapltest dto scale conn dtestcm}
COST_N=${BENCH_COST_N:-100 600}		# dto operations per measured phase
COST_K=${BENCH_COST_K:-1000 6000}		# empty dequeues per measured phase
COST_SIZE=${BENCH_COST_SIZE:-64}
COST_M=${BENCH_COST_M:-8 40}		# connections per measured phase
COST_T=${BENCH_COST_T:-100 1024}		# one callgrind conn run per total
COST_P2P_T=${BENCH_COST_P2P_T:-100}
SCALE_T=${BENCH_SCALE_T:-100 1024}
SCALE_C=${BENCH_SCALE_C:-1 64 1024}
SCALE_E=${BENCH_SCALE_E:-1 64 1024}
CM_CG=${BENCH_CM_CG:-20 100}		# dtestcm connections per callgrind run
COST_QUAL=19300
PT_PORT=18515

LOGS=$OUT/logs
RES=$OUT/results.tsv
FAILS=$OUT/failures.txt
mkdir -p "$LOGS" "$OUT/callgrind"
: >"$RES"
: >"$FAILS"
nfail=0

now() { printf '%s' "${EPOCHREALTIME/[.,]/}"; }	# microseconds, no fork

say() {
	local up rest
	read -r up rest </proc/uptime 2>/dev/null || up=-
	printf 'bench [%7s] %s\n' "$up" "$*"
}

fail() { # NAME MSG
	nfail=$((nfail + 1))
	printf '%s\t%s\n' "$1" "$2" >>"$FAILS"
	say "FAIL $1: $2"
	[ -s "$LOGS/$1.log" ] && tail -n 6 "$LOGS/$1.log" | cut -c1-160 | sed "s/^/    $1| /"
	return 0
}

rec() { # ROUND SYSTEM CASE SIZE METRIC VALUE
	[ -n "$6" ] || return 0
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"
}

# Fewer operations for big messages, so that one run stays near a second
# under TCG: at most 32 MiB (bandwidth) or 16 MiB (ping-pong) per run.
iters_for() { # SIZE
	local n=$((33554432 / $1))
	[ "$n" -lt "$ITER" ] || n=$ITER
	[ "$n" -ge 200 ] || n=200
	echo "$n"
}
pp_iters_for() { # SIZE
	local n=$((16777216 / $1))
	[ "$n" -lt "$PP_ITER" ] || n=$PP_ITER
	[ "$n" -ge 100 ] || n=100
	echo "$n"
}

# --- jobs -------------------------------------------------------------------

cli() { # NAME SECS CMD...: client-side run, output to logs/NAME.log
	local name=$1 secs=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -k 5 "$secs" $CLI "$@" >"$LOGS/$name.log" 2>&1 </dev/null
}

SRV_PID=""
srv_start() { # NAME SECS CMD...
	local name=$1 secs=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -k 5 "$secs" $SRV "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
	SRV_PID=$!
}

srv_alive() { [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; }

srv_stop() { # SECS: let the server end, then kill it
	local i
	[ -n "$SRV_PID" ] || return 0
	for ((i = 0; i < $1 * 10; i++)); do
		srv_alive || break
		sleep 0.1
	done
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=""
}

wait_log() { # FILE REGEX SECS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		srv_alive || return 1
		sleep 0.1
	done
	return 1
}

wait_port() { # PORT SECS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		# shellcheck disable=SC2086
		$SRV ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		srv_alive || return 1
		sleep 0.1
	done
	return 1
}

# --- dapltest -----------------------------------------------------------------

DT_OK='End of Work -- Client Exiting'
DT_BAD='Test Error|bad connection event|FAIL:|Warning: conn_event_wait'
DT_TAG=""

dt_server_start() { # TAG IA
	DT_TAG=$1
	srv_start "$1.dapltest-srv" 1800 dapltest -T S -D "$2"
	wait_log "$LOGS/$1.dapltest-srv.log" 'Service Point Ready' 60 && return 0
	fail "$1.dapltest-srv" "no 'Service Point Ready'"
	srv_stop 1
	return 1
}

dt_server_stop() { # IA
	cli "$DT_TAG.dapltest-quit" 60 dapltest -T Q -s "$SADDR" -D "$1"
	srv_stop 30
}

dt_ok() { # NAME
	grep -Eq "$DT_BAD" "$LOGS/$1.log" && { fail "$1" "$(grep -Em1 "$DT_BAD" "$LOGS/$1.log")"; return 1; }
	grep -q "$DT_OK" "$LOGS/$1.log" || { fail "$1" "no '$DT_OK'"; return 1; }
	return 0
}

# dt_perf ROUND SYS IA CASE OP SIZE [-p N]: pipelined RDMA ops, polling
dt_perf() {
	local r=$1 sys=$2 ia=$3 case=$4 op=$5 size=$6 n name v
	shift 6
	n=$(iters_for "$size")
	name="r$r.$sys.$case.$size"
	cli "$name" 300 dapltest -T P -s "$SADDR" -D "$ia" -i "$n" -m p "$@" "$op" "$size" 1
	dt_ok "$name" || return 1
	# raw: OP, ops, seg, nsegs, pipeline, cpu, ops/s, MB/s, latency, post, reap
	v=$(awk -F', *' '/^raw:/ {print $7; exit}' "$LOGS/$name.log")
	[ -n "$v" ] || { fail "$name" "no raw: line"; return 1; }
	if [ "$case" = RWLAT ]; then
		rec "$r" "$sys" "$case" "$size" us_op "$(awk -v o="$v" 'BEGIN {printf "%.2f", 1e6 / o}')"
	else
		rec "$r" "$sys" "$case" "$size" ops_s "$v"
	fi
}

# dt_pingpong ROUND SYS IA SIZE: SR ping-pong through dapltest -T T
dt_pingpong() {
	local r=$1 sys=$2 ia=$3 size=$4 n name v poll=()
	n=$(pp_iters_for "$size")
	name="r$r.$sys.SR.$size"
	# Both ends busy-polling (-P) on a 2-vCPU TCG guest starve rxe's own
	# kernel work: ~6 ms per round trip in a trial.  Blocking by default.
	[ "$SR_POLL" = 1 ] && poll=(-P)
	cli "$name" 300 dapltest -T T -s "$SADDR" -D "$ia" -i "$n" -t 1 -w 1 "${poll[@]}" \
		client SR "$size" server SR "$size"
	dt_ok "$name" || return 1
	# "Total WQE : 2166.84 WQE/Sec": the client's send + recv per iteration
	v=$(awk '/^Total WQE/ {printf "%.2f", $4 / 2; exit}' "$LOGS/$name.log")
	[ -n "$v" ] || { fail "$name" "no Total WQE line"; return 1; }
	rec "$r" "$sys" SR "$size" rt_s "$v"
}

dt_round() { # ROUND SYS IA
	local r=$1 sys=$2 ia=$3 s
	dt_server_start "r$r.$sys" "$ia" || return
	for s in $SIZES; do
		srv_alive || { dt_server_start "r$r.$sys" "$ia" || return; }
		dt_perf "$r" "$sys" "$ia" RW RW "$s"
	done
	for s in $SIZES; do
		srv_alive || { dt_server_start "r$r.$sys" "$ia" || return; }
		dt_pingpong "$r" "$sys" "$ia" "$s"
	done
	srv_alive || { dt_server_start "r$r.$sys" "$ia" || return; }
	dt_perf "$r" "$sys" "$ia" RR RR 4096
	srv_alive || { dt_server_start "r$r.$sys" "$ia" || return; }
	dt_perf "$r" "$sys" "$ia" RWLAT RW 4096 -p 1
	dt_server_stop "$ia"
}

# --- dtestcm --------------------------------------------------------------------

# cm_pair NAME SECS WAIT SRV_PRE CLI_PRE IA N [DTESTCM_ARGS...]: dtestcm
# server, then the client once the server's address socket (port 15828)
# listens: dtestcm opens it after its PSP, so the client's first connect
# finds the server ready however slow it starts (WAIT seconds)
cm_pair() {
	local name=$1 secs=$2 wait=$3 spre=() cpre=() ia=$6 n=$7
	# shellcheck disable=SC2206
	spre=($4) cpre=($5)
	shift 7
	srv_start "$name.srv" "$secs" "${spre[@]}" dtestcm -P "$ia" -s -c "$n" -b "$CM_BURST" "$@"
	if ! wait_port 15828 "$wait"; then
		fail "$name.srv" "server never listened on 15828"
		srv_stop 1
		return 1
	fi
	CM_T0=$(now)
	cli "$name" "$secs" "${cpre[@]}" dtestcm -P "$ia" -h "$SADDR" -c "$n" -b "$CM_BURST" "$@"
	CM_T1=$(now)
	srv_stop "$wait"
	if grep -Eq 'FAILED|ERR|Error' "$LOGS/$name.log" ||
		! grep -q 'DAPL Connection Test Complete' "$LOGS/$name.log"; then
		fail "$name" "no 'DAPL Connection Test Complete' or an error line"
		return 1
	fi
}

cm_run() { # ROUND SYS IA
	local r=$1 sys=$2 ia=$3 name t0 t1 v
	name="r$r.$sys.CM.$CONNS"
	cm_pair "$name" 300 60 "" "" "$ia" "$CONNS" || return 1
	t0=$CM_T0 t1=$CM_T1
	# " Connections: %8.2lf usec, CPS %7.2lf Total %4.2lf secs, ..."
	v=$(sed -n 's/.*Connections:.*CPS *\([0-9.]*\).*/\1/p' "$LOGS/$name.log" | head -n1)
	[ -n "$v" ] || v=$(sed -n 's/.*Connections:.*CPS *\([0-9.]*\).*/\1/p' "$LOGS/$name.srv.log" | head -n1)
	rec "$r" "$sys" CM "$CONNS" conn_s "$v"
	rec "$r" "$sys" CMWALL "$CONNS" wall_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e6}')"
}

# --- perftest ---------------------------------------------------------------------

# pt_pair ROUND CASE PROG SIZE ITERS: server on the server host, bound to its
# device and RoCE v2 GID, then the client
pt_pair() {
	local r=$1 case=$2 prog=$3 size=$4 n=$5 name
	name="r$r.raw.$case.$size"
	srv_start "$name.srv" 300 "$prog" -d "$SDEV" -x "$SGID" -F -n "$n" -s "$size"
	if ! wait_port "$PT_PORT" 60; then
		fail "$name.srv" "$prog server never listened on $PT_PORT"
		srv_stop 1
		return 1
	fi
	cli "$name" 300 "$prog" -d "$CDEV" -x "$CGID" -F -n "$n" -s "$size" "$SADDR"
	srv_stop 30
	grep -Eq "^ *$size +[0-9]" "$LOGS/$name.log" || { fail "$name" "no result line for $size"; return 1; }
	PT_LOG=$LOGS/$name.log
}

pt_bw() { # ROUND CASE PROG SIZE: "#bytes #iter BW_peak BW_avg MsgRate[Mpps]"
	local v
	pt_pair "$1" "$2" "$3" "$4" "$(iters_for "$4")" || return 1
	v=$(awk -v s="$4" '$1 == s && NF >= 5 {printf "%.2f", $5 * 1e6; exit}' "$PT_LOG")
	rec "$1" raw "$2" "$4" ops_s "$v"
}

pt_lat() { # ROUND CASE PROG SIZE METRIC: "#bytes #iter t_min t_max t_typical t_avg ..."
	local v
	pt_pair "$1" "$2" "$3" "$4" "$(pp_iters_for "$4")" || return 1
	if [ "$5" = rt_s ]; then
		v=$(awk -v s="$4" '$1 == s && NF >= 6 {printf "%.2f", 1e6 / (2 * $6); exit}' "$PT_LOG")
	else
		v=$(awk -v s="$4" '$1 == s && NF >= 6 {printf "%.2f", 2 * $6; exit}' "$PT_LOG")
	fi
	rec "$1" raw "$2" "$4" "$5" "$v"
}

raw_round() { # ROUND
	local r=$1 s
	for s in $SIZES; do pt_bw "$r" RW ib_write_bw "$s"; done
	for s in $SIZES; do pt_lat "$r" SR ib_send_lat "$s" rt_s; done
	pt_bw "$r" RR ib_read_bw 4096
	pt_lat "$r" RWLAT ib_write_lat 4096 us_op
	pt_bw "$r" SRBW ib_send_bw 256
}

# --- callgrind ----------------------------------------------------------------------

# cg_run SYS IA [OP]: dapltest -T P -m p OP 4096 1 (RW by default, or RR) on
# the client under callgrind, once per iteration count in CG_ITERS, so that
# bench can subtract set-up and teardown.  The profile is written on the
# client host and copied here.
cg_run() {
	local sys=$1 ia=$2 op=${3:-RW} n name tmp tag=""
	[ "$op" = RW ] || tag=.${op,,}
	dt_server_start "cg.$sys$tag" "$ia" || return
	for n in $CG_ITERS; do
		name="cg.$sys$tag.i$n"
		tmp="$CG_TMP/bench-$name.$$.out"
		cli "$name" 900 valgrind --tool=callgrind --callgrind-out-file="$tmp" \
			dapltest -T P -s "$SADDR" -D "$ia" -i "$n" -m p "$op" 4096 1
		dt_ok "$name" || continue
		# shellcheck disable=SC2086
		$CLI cat "$tmp" >"$OUT/callgrind/$name.out" 2>/dev/null && $CLI rm -f "$tmp"
		[ -s "$OUT/callgrind/$name.out" ] || fail "$name" "no callgrind profile"
		srv_alive || { dt_server_start "cg.$sys$tag" "$ia" || return; }
	done
	dt_server_stop "$ia"
}

# cm_cg SYS IA N: dtestcm -w -c N, both sides under callgrind from the start
# (all threads in one profile).  -w: blocking waits; dtestcm's default
# busy-polls, and the polls would count in proportion to the wall time.
# bench subtracts the run of the smaller N from the larger: dtestcm's own
# set-up (IA, PZ, EVDs, PSP) cancels, each connection's EP create, connect
# or accept, disconnect and EP free stays.
cm_cg() {
	local sys=$1 ia=$2 n=$3 name st ct vg="valgrind --tool=callgrind"
	name="cg.$sys.CM.$n"
	st="$CG_TMP/bench-$name.srv.$$.out"
	ct="$CG_TMP/bench-$name.cli.$$.out"
	mkdir -p "$OUT/callgrind/cm"
	cm_pair "$name" 1200 300 "$vg --callgrind-out-file=$st" "$vg --callgrind-out-file=$ct" \
		"$ia" "$n" -w || return 1
	# shellcheck disable=SC2086
	$CLI cat "$ct" >"$OUT/callgrind/cm/$sys.c$n.cli.out" 2>/dev/null && $CLI rm -f "$ct"
	# shellcheck disable=SC2086
	$SRV cat "$st" >"$OUT/callgrind/cm/$sys.c$n.srv.out" 2>/dev/null && $SRV rm -f "$st"
	[ -s "$OUT/callgrind/cm/$sys.c$n.cli.out" ] || fail "$name" "no callgrind profile"
	[ -s "$OUT/callgrind/cm/$sys.c$n.srv.out" ] || fail "$name.srv" "no callgrind profile"
}

# --- ofx_cost_bench ------------------------------------------------------------------

CG_COST=(valgrind --tool=callgrind --instr-atstart=no)

# cost_fetch PREFIX_CMD TMP DEST: the dumps TMP.out.1, .2, ... of one side
# into DEST (one plain command per file: works through ssh as well)
cost_fetch() {
	local run=$1 tmp=$2 dest=$3 i=1
	mkdir -p "$dest"
	# shellcheck disable=SC2086
	while $run cat "$tmp.out.$i" >"$dest/dump.out.$i" 2>/dev/null; do
		$run rm -f "$tmp.out.$i"
		i=$((i + 1))
	done
	rm -f "$dest/dump.out.$i"
	# shellcheck disable=SC2086
	$run rm -f "$tmp.out"
	[ "$i" -gt 1 ]
}

# cost_pair NAME SECS SRV_VG CLI_VG IA MODE ARGS...: ofx_cost_bench on both
# hosts, each side under callgrind if its *_VG is 1
cost_pair() {
	local name=$1 secs=$2 svg=$3 cvg=$4 ia=$5 mode=$6 spre=() cpre=() st ct ok=0
	shift 6
	COST_QUAL=$((COST_QUAL + 1))
	st="$CG_TMP/bench-$name.srv.$$"
	ct="$CG_TMP/bench-$name.cli.$$"
	[ "$svg" = 1 ] && spre=("${CG_COST[@]}" --callgrind-out-file="$st.out")
	[ "$cvg" = 1 ] && cpre=("${CG_COST[@]}" --callgrind-out-file="$ct.out")
	srv_start "$name.srv" "$secs" "${spre[@]}" "$COST" server "$ia" "$mode" -q "$COST_QUAL" "$@"
	if ! wait_log "$LOGS/$name.srv.log" 'server ready' 180; then
		fail "$name.srv" "no 'server ready'"
		srv_stop 1
		return 1
	fi
	cli "$name" "$secs" "${cpre[@]}" "$COST" client "$ia" "$mode" "$SADDR" -q "$COST_QUAL" "$@"
	srv_stop 300
	grep -q '^client: done' "$LOGS/$name.log" || { fail "$name" "no 'client: done'"; ok=1; }
	grep -q '^server: done' "$LOGS/$name.srv.log" || { fail "$name.srv" "no 'server: done'"; ok=1; }
	if [ "$cvg" = 1 ] && ! cost_fetch "$CLI" "$ct" "$OUT/callgrind/cost/$name.cli"; then
		fail "$name" "no callgrind dumps"
		ok=1
	fi
	if [ "$svg" = 1 ] && ! cost_fetch "$SRV" "$st" "$OUT/callgrind/cost/$name.srv"; then
		fail "$name.srv" "no callgrind dumps"
		ok=1
	fi
	return $ok
}

has_part() { case " $COST_PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

cost_run() { # SYS IA
	local sys=$1 ia=$2
	if has_part dto; then
		say "cost: $sys dto"
		cost_pair "cost.$sys.dto" 1200 0 1 "$ia" dto -n "$COST_N" -k "$COST_K" -s "$COST_SIZE"
	fi
	if has_part scale; then
		say "cost: $sys scale (no valgrind)"
		cost_pair "scale.$sys" 900 0 0 "$ia" conn -m "$COST_M" -t "$SCALE_T" \
			-c "$SCALE_C" -e "$SCALE_E"
	fi
}

cost_conn_run() { # SYS IA TOTALS
	local sys=$1 ia=$2
	has_part conn || return 0
	for t in $3; do
		say "cost: $sys conn up to $t"
		cost_pair "cost.$sys.conn$t" "$([ "$t" -le 200 ] && echo 600 || echo 1200)" 1 1 "$ia" conn -m "$COST_M" -t "$t" -e "" -c ""
	done
}

# --- main -------------------------------------------------------------------------

# 1024 EPs per process: every one may hold descriptors
ulimit -n 65536 2>/dev/null || ulimit -n 4096 2>/dev/null
T0=$(now)
say "server $SADDR ($SDEV gid $SGID) via '${SRV:-local}', client $CDEV gid $CGID via '${CLI:-local}'"
say "rounds $ROUNDS, sizes $SIZES, iterations $ITER (bandwidth) / $PP_ITER (ping-pong)"
{
	echo "date $(date -u +%FT%TZ)"
	echo "kernel $(uname -r)"
	echo "rounds $ROUNDS"
	echo "sizes $SIZES"
	echo "iter $ITER"
	echo "pp_iter $PP_ITER"
	echo "conns $CONNS burst $CM_BURST"
	echo "cg_iters $CG_ITERS"
	echo "cost $COST_PARTS: n $COST_N k $COST_K size $COST_SIZE m $COST_M t $COST_T p2p_t $COST_P2P_T"
	echo "scale t $SCALE_T c $SCALE_C e $SCALE_E"
	echo "cm_cg $CM_CG"
	# shellcheck disable=SC2086
	echo "device_limits $($SRV ibv_devinfo -v -d $SDEV 2>/dev/null | awk '$1 ~ /^max_(qp|cq|mr|qp_wr|cqe):$/ {printf "%s %s ", $1, $2}')"
	echo "ulimit_n $(ulimit -n) ulimit_l $(ulimit -l)"
	echo "sr_poll $SR_POLL"
	echo "ias $STOCK_IA $OFX_IA $P2P_IA"
	# shellcheck disable=SC2086
	echo "server_dev $SDEV $($SRV cat /sys/class/infiniband/$SDEV/ports/1/active_mtu 2>/dev/null)"
} >"$OUT/meta.txt"

# --only-callgrind: instruction counts do not depend on warm caches or rounds
if [ "$ONLY_CALLGRIND" != 1 ]; then
	# warm-up (not recorded): the first exec of each program over 9p is slow
	say "warm-up"
	if dt_server_start r0.stock "$STOCK_IA"; then
		cli r0.stock.warm 120 dapltest -T P -s "$SADDR" -D "$STOCK_IA" -i 500 -m p RW 4096 1
		dt_server_stop "$STOCK_IA"
	fi
	if dt_server_start r0.ofx "$OFX_IA"; then
		cli r0.ofx.warm 120 dapltest -T P -s "$SADDR" -D "$OFX_IA" -i 500 -m p RW 4096 1
		dt_server_stop "$OFX_IA"
	fi
	pt_pair 0 warm ib_write_bw 4096 500 >/dev/null

	for ((r = 1; r <= ROUNDS; r++)); do
		say "round $r/$ROUNDS: stock"
		dt_round "$r" stock "$STOCK_IA"
		cm_run "$r" stock "$STOCK_IA"
		say "round $r/$ROUNDS: ofx"
		dt_round "$r" ofx "$OFX_IA"
		cm_run "$r" ofx "$OFX_IA"
		cm_run "$r" ofx-p2p "$P2P_IA"
		say "round $r/$ROUNDS: raw"
		raw_round "$r"
	done
fi

if [ "$CALLGRIND" = 1 ]; then
	if [ -z "$COST" ] || has_part dapltest; then
		for op in RW RR; do
			say "callgrind: stock $op"
			cg_run stock "$STOCK_IA" "$op"
			say "callgrind: ofx $op"
			cg_run ofx "$OFX_IA" "$op"
		done
	fi
	if has_part dtestcm; then
		for n in $CM_CG; do
			say "callgrind: dtestcm -c $n, stock, ofx, ofx p2p=on"
			cm_cg stock "$STOCK_IA" "$n"
			cm_cg ofx "$OFX_IA" "$n"
			cm_cg ofx-p2p "$P2P_IA" "$n"
		done
	fi
	if [ -n "$COST" ]; then
		cost_run stock "$STOCK_IA"
		cost_run ofx "$OFX_IA"
		# the small totals first: a slow 1024 must not cost the p2p figure
		for t in $COST_T; do
			cost_conn_run stock "$STOCK_IA" "$t"
			cost_conn_run ofx "$OFX_IA" "$t"
			[ "$t" != "$COST_P2P_T" ] || cost_conn_run ofx-p2p "$P2P_IA" "$t"
		done
	fi
fi

say "done in $(awk -v a="$T0" -v b="$(now)" 'BEGIN {printf "%.0f", (b - a) / 1e6}') s, $(wc -l <"$RES") values, $nfail failed runs"
[ $nfail -le 100 ] || nfail=100
exit $nfail
