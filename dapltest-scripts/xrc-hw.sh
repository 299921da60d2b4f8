#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# xrc-hw.sh: validates XRC-backed endpoints (xrc=on, dapl-provider/xrc.h)
# between two hosts with XRC-capable HCAs (mlx4, mlx5).  rxe and siw have no
# XRC: use test/run-device-tests there (RC fallback, the xrc=on refusal).
#
#   xrc-hw.sh [options] SERVER_IA CLIENT_IA SERVER_ADDR
#   xrc-hw.sh --selftest [SAMPLES_DIR]
#
#   --server-cmd PREFIX  run server-side programs through PREFIX ("ssh node1";
#                        an ssh ControlMaster keeps the QP sampling fast)
#   --client-cmd PREFIX  the same for the client side ("ssh node2")
#   --only LIST          comma list of groups (default all): dapltest, dtest,
#                        dtestx, shared, unpolled, tgtkill, churn, dtestsrq,
#                        norc
#   --iter N             iterations of the short transaction tests (1000)
#   --long-iter N        iterations of the sampled ones (50000): they must
#                        run for seconds, so that QP samples see them
#   --conns N            dtestcm connections (64), --burst N its burst (16)
#   --rounds N           connect/disconnect churn rounds (10)
#   --xrcd PATH          XRC domain file on both hosts (/dev/shm/ofx-xrc-hw.xrcd)
#   --tool PATH          ofx_xrc_hw on both hosts (default: test/device/
#                        ofx_xrc_hw of this tree; make check builds it)
#   --log DIR            one log per program (default: a temporary folder)
#
# SERVER_IA and CLIENT_IA name libdaplofx on the XRC port in each host's
# dat.conf ("ofx-v2-mlx5_0-1 u2.0 nonthreadsafe default libdaplofx.so.2
# dapl.2.0 "mlx5_0 1" """); SERVER_ADDR is the server's IPv4 address on it.
# Every program runs with DAPL_OFX_XRC=on, DAPL_OFX_XRCD=PATH (so all the
# processes of a host share one domain), DAPL_OFX_XRC_TGT=domain (option
# 2a; exit = 2b where a case says so), DAPL_OFX_XRC_RC_FALLBACK=yes (no in
# the norc group), DAPL_OFX_STATS=yes and debug logging
# of the xrc and ia subsystems; the environment wins over ia_params.  The two
# hosts must be different machines (TGT QPs are counted per host); run as a
# user that may read `rdma resource show qp` (root), with no other XRC user.
#
# What is asserted (one PASS/FAIL line each; exit status = FAIL lines):
#  * the stock programs' own verdicts, read from their output (their exit
#    codes mean nothing), without the provider's log lines;
#  * per IA, the provider's "stats: xrc" line at ia_close: conn_xrc at least
#    the case's connections, conn_rc = 0, ini_created within what XRC should
#    need, refused = ctl_lost = 0 (relaxed where a process is killed);
#    dtestsrq: conn_xrc = 0 (SRQ EPs stay RC) and RC connections counted;
#  * no "error" line from the provider in a case without faults;
#  * QPs by type from `rdma resource show qp` sampled every SAMPLE_S seconds
#    on both hosts while a case runs, rows of the case's processes (pids from
#    the provider's log lines) only: INI QPs per process at most what XRC
#    needs (one per request EVD and PZ pair towards the other host: dapltest
#    has one per EP plus its control EP; dtest, dtestx, dtestcm and
#    ofx_xrc_hw share theirs: one), at least that many in the long cases;
#    the PEAK of RC QPs over the samples: 0 on the passive side, at most the
#    active side's outstanding connects (each dat_ep_connect makes one RC QP
#    until the XRC answer; 0 with xrc_rc_fallback=no: the norc group's
#    dtestcm bursts), and no RC QP alive over KEPT_S seconds; XRC TGT
#    QPs (kernel-owned, no pid) of the host, above the count before the run,
#    within what the peer host's INI QPs need (with xrc_rc_fallback=no, plus
#    the active side's connects in flight: each REQ names a TGT made for it);
#  * each INI QP's attributes as ibv_query_qp reports them (the provider's
#    debug line "xrc ini qp 0xQ ready: peer 0xT state RTS max_rd_atomic R"):
#    RTS, R >= 1, R <= the peer TGT's max_dest_rd_atomic, and R = min(16,
#    max_qp_init_rd_atom, peer max_qp_rd_atom) of `ibv_devinfo -v`;
#  * shared: two dapltest pairs (-V and RDMA read/write) and dtestx at once,
#    three processes per host in one domain (same "xrc domain" tag);
#  * unpolled: graceful disconnects of EPs whose receive completions were
#    never polled, from either side, the EP freed before or after the drain:
#    the completions are all there, other EPs on the INI QP keep working;
#  * tgtkill.2a / .2b: kill -9 of the process that created the TGT another
#    process of its host receives through: 2a the TGT stays (same TGT
#    count) and traffic goes on; 2b it dies (one TGT less), the EP breaks, a
#    new EP builds a new INI QP pair (ini_created 2);
#  * churn: dtestcm and dapltest connect/disconnect rounds with the TGT
#    count bounded throughout and back to the count before the run after.
#
# The groups run as "group_$name": shellcheck 0.9 takes what they call for dead code.
# shellcheck disable=SC2317
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
SAMPLE_S=${SAMPLE_S:-0.3}
KEPT_S=${KEPT_S:-2}
PROVIDER_LINE='^ofx [0-9]+ '
DT_OK='End of Work -- Client Exiting'
DT_BAD='Test Error|bad connection event|FAIL:|Warning: conn_event_wait'

# ---- parsing: pure functions of files, checked by --selftest ------------------
# Each check prints one line, "PASS note" or "FAIL note".

# qp_summary FILE PIDS: QPs by type in `rdma resource show qp` samples.  FILE
# holds samples, each "@sample EPOCH" and then the tool's lines; PIDS is a
# comma list of the processes under test.  Prints
#   samples=S seen=N ini=I inisum=J tgt=T rc=R kept=K
#   pid P ini=I rc=R        (one line per pid, in the order given)
# ini / rc: the peak over the samples of one process's XRC_INI / RC rows;
# inisum: the peak of all their INI rows together; seen: samples with a row
# of theirs; tgt: the peak of the host's XRC_TGT rows (kernel-owned: no pid);
# kept: RC QPs of theirs present in samples KEPT_S seconds or more apart.
# The keys are read by name, so the column order of any iproute2 version
# does; what follows "comm" (a process name may hold blanks) is not read.
qp_summary() {
	awk -v pids="$2" -v kept_s="$KEPT_S" '
	function flush(p) {
		if (!ns)
			return
		if (srow)
			seen++
		if (stgt > tgt)
			tgt = stgt
		if (sini > inisum)
			inisum = sini
		for (p in want) {
			if (pi[p] > ini[p])
				ini[p] = pi[p]
			if (pr[p] > rc[p])
				rc[p] = pr[p]
			pi[p] = pr[p] = 0
		}
		srow = stgt = sini = 0
	}
	BEGIN {
		np = split(pids, order, ",")
		for (i = 1; i <= np; i++)
			if (order[i] != "")
				want[order[i]] = 1
	}
	$1 == "@sample" { flush(); ns++; t = $2 + 0; next }
	$1 != "link" { next }
	{
		if (!ns)
			ns = 1
		type = pid = q = ""
		for (i = 2; i < NF; i++) {
			if ($i == "comm")
				break
			if ($i == "type")
				type = $(i + 1)
			else if ($i == "pid")
				pid = $(i + 1)
			else if ($i == "lqpn")
				q = $(i + 1)
		}
		if (type == "XRC_TGT") {
			stgt++
			next
		}
		if (!(pid in want))
			next
		srow = 1
		if (type == "XRC_INI") {
			pi[pid]++
			sini++
		} else if (type == "RC") {
			pr[pid]++
			k = pid ":" q
			if (!(k in first))
				first[k] = t
			if (t - first[k] >= kept_s)
				kept[k] = 1
		}
	}
	END {
		flush()
		for (k in kept)
			nk++
		for (p in want) {
			if (ini[p] > mi)
				mi = ini[p]
			if (rc[p] > mr)
				mr = rc[p]
		}
		printf "samples=%d seen=%d ini=%d inisum=%d tgt=%d rc=%d kept=%d\n",
		       ns, seen, mi, inisum, tgt, mr, nk
		for (i = 1; i <= np; i++)
			if (order[i] != "")
				printf "pid %s ini=%d rc=%d\n", order[i], ini[order[i]] + 0,
				       rc[order[i]] + 0
	}' "$1"
}

# field SUMMARY KEY: the value of KEY=VALUE in the first line of a summary (0 if none)
field() {
	awk -v k="$2=" 'NR == 1 {
		for (i = 1; i <= NF; i++)
			if (index($i, k) == 1) {
				print substr($i, length(k) + 1)
				exit
			}
		print 0
	}' <<<"$1"
}

# qp_check_pids FILE PIDS INI_MAX INI_MIN RC_MAX: the processes' QPs.  Every
# process has at most INI_MAX INI QPs and RC_MAX RC QPs in any sample, none
# of its RC QPs lives over KEPT_S seconds, and (INI_MIN > 0) one of them was
# seen with at least INI_MIN INI QPs.
qp_check_pids() {
	local file=$1 pids=$2 imax=$3 imin=$4 rmax=$5 s p l bad=""
	if [ -z "$pids" ]; then
		echo "FAIL no process ids (no provider log line: DAPL_OFX_LOG_LEVEL=debug?)"
		return
	fi
	s=$(qp_summary "$file" "$pids")
	l=$(head -n1 <<<"$s")
	if [ "$(field "$l" samples)" = 0 ]; then
		echo "FAIL no qp sample ($file)"
		return
	fi
	while read -r _ p rest; do
		local i=${rest#ini=} r=${rest#*rc=}
		i=${i%% *}
		[ "$i" -le "$imax" ] || bad="$bad pid $p: $i ini qps > $imax;"
		[ "$r" -le "$rmax" ] || bad="$bad pid $p: $r rc qps > $rmax;"
	done < <(sed -n '2,$p' <<<"$s")
	[ "$(field "$l" kept)" = 0 ] ||
		bad="$bad $(field "$l" kept) rc qp(s) alive ${KEPT_S}s+ (an xrc ep kept one);"
	if [ "$imin" -gt 0 ]; then
		if [ "$(field "$l" seen)" = 0 ]; then
			bad="$bad never sampled while connected;"
		elif [ "$(field "$l" ini)" -lt "$imin" ]; then
			bad="$bad at most $(field "$l" ini) ini qps, expected $imin;"
		fi
	fi
	l="ini=$(field "$l" ini) rc=$(field "$l" rc) kept=$(field "$l" kept) in $(field "$l" samples) samples ($(field "$l" seen) with them)"
	if [ -n "$bad" ]; then
		echo "FAIL${bad%;} [$l]"
	else
		echo "PASS $l"
	fi
}

# qp_check_tgt FILE BASE MIN MAX: the host's TGT QPs above BASE (the count
# before the run) stay within MIN..MAX at their peak ("-" = no bound).
qp_check_tgt() {
	local s n
	s=$(qp_summary "$1" "")
	if [ "$(field "$s" samples)" = 0 ]; then
		echo "FAIL no qp sample ($1)"
		return
	fi
	n=$(($(field "$s" tgt) - $2))
	if [ "$3" != - ] && [ "$n" -lt "$3" ]; then
		echo "FAIL $n tgt qps, expected at least $3"
	elif [ "$4" != - ] && [ "$n" -gt "$4" ]; then
		echo "FAIL $n tgt qps, expected at most $4"
	else
		echo "PASS $n tgt qps (peak over $(field "$s" samples) samples, $2 before the run)"
	fi
}

# stats_check LOG MODE [MIN [INI_MAX]]: the "stats: xrc" lines (one per IA,
# at ia_close).  MODE xrc: conn_rc 0, refused 0 and ctl_lost 0 on every line,
# conn_xrc summed at least MIN (1), ini_created summed at most INI_MAX;
# xrc-fault: the same without refused/ctl_lost (a peer was killed); rc:
# conn_xrc 0 on every line and the "stats: ia" lines' connections (active +
# passive) at least MIN.
stats_check() {
	awk -v mode="$2" -v min="${3:-1}" -v imax="${4:--}" '
	function val(key, i) {
		for (i = 1; i < NF; i++)
			if ($i == key)
				return $(i + 1) + 0
		return -1
	}
	/stats: xrc / {
		n++
		x += val("conn_xrc")
		r += val("conn_rc")
		ic += val("ini_created")
		rf += val("refused")
		cl += val("ctl_lost")
	}
	/stats: ia / { ia++; conns += val("conn_active") + val("conn_passive") }
	END {
		note = sprintf("conn_xrc=%d conn_rc=%d ini_created=%d refused=%d ctl_lost=%d (%d ia)",
			       x, r, ic, rf, cl, n)
		if (!n) {
			print "FAIL no \"stats: xrc\" line (ia not closed, or no DAPL_OFX_STATS)"
			exit
		}
		if (mode == "rc") {
			if (x)
				print "FAIL " x " connection(s) over xrc, expected rc only; " note
			else if (conns < min)
				print "FAIL " conns " connection(s), expected " min "; " note
			else
				print "PASS rc only: " conns " connection(s); " note
			exit
		}
		if (r)
			print "FAIL " r " connection(s) over rc; " note
		else if (x < min)
			print "FAIL " x " connection(s) over xrc, expected " min "; " note
		else if (imax != "-" && ic > imax + 0)
			print "FAIL " ic " ini qps made, expected at most " imax "; " note
		else if (mode == "xrc" && (rf || cl))
			print "FAIL refused or lost control messages; " note
		else
			print "PASS " note
	}' "$1"
}

# stock_check LOG PASS_RE FAIL_RE: a stock program's verdict from its own
# lines (the provider's are left out: its messages are not the program's)
stock_check() {
	local out
	out=$(grep -Ev "$PROVIDER_LINE" "$1")
	if grep -Eq -- "$3" <<<"$out"; then
		echo "FAIL $(grep -Em1 -- "$3" <<<"$out" | cut -c1-80)"
	elif grep -Eq -- "$2" <<<"$out"; then
		echo "PASS $(grep -Em1 -- "$2" <<<"$out" | cut -c1-60)"
	else
		echo "FAIL no /$2/"
	fi
}

# errors_check LOG...: no provider error line (a case without faults)
errors_check() {
	local l
	l=$(cat "$@" 2>/dev/null | grep -Em1 "$PROVIDER_LINE"'error ')
	if [ -n "$l" ]; then
		echo "FAIL $(cut -c1-100 <<<"$l")"
	else
		echo "PASS no provider error line"
	fi
}

# log_pids LOG...: the process ids of the provider's log lines, a comma list
log_pids() {
	cat "$@" 2>/dev/null | sed -n 's/^ofx \([0-9][0-9]*\) .*/\1/p' | sort -un | paste -sd, -
}

# tool_pid LOG: the pid ofx_xrc_hw prints first ("ofx_xrc_hw: ROLE pid N")
tool_pid() {
	sed -n 's/^ofx_xrc_hw: [a-z]* pid \([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -n1
}

# log_device LOG...: the device of the first IA ("ia NAME: ADDR on device DEV port")
log_device() {
	cat "$@" 2>/dev/null | sed -n 's/.* on device \([^ ]*\) port [0-9].*/\1/p' | head -n1
}

# devinfo_attr FILE KEY: a number of `ibv_devinfo -v` ("\tmax_qp_rd_atom:\t\t\t16")
devinfo_attr() {
	awk -v k="$2:" '$1 == k { print $2; exit }' "$1" 2>/dev/null
}

# rd_expect INI_DEVINFO TGT_DEVINFO: the read depth an INI QP should get:
# min(16 (rdma_cm's cap), its device's max_qp_init_rd_atom, the TGT device's
# max_qp_rd_atom); "-" when either is unknown
rd_expect() {
	local i r
	i=$(devinfo_attr "$1" max_qp_init_rd_atom)
	r=$(devinfo_attr "$2" max_qp_rd_atom)
	if [ -z "$i" ] || [ -z "$r" ]; then
		echo -
		return
	fi
	[ "$r" -lt "$i" ] && i=$r
	[ "$i" -gt 16 ] && i=16
	echo "$i"
}

# rd_check EXPECT INI_LOGS... -- TGT_LOGS...: every INI QP the first logs'
# processes made ready is RTS with max_rd_atomic R >= 1 (RDMA reads and
# atomics need it), R = EXPECT unless that is "-", and R <= the
# max_dest_rd_atomic of each TGT line of that number in the other host's
# logs (an initiator must not have more reads in flight than its responder
# takes).
rd_check() {
	local expect=$1 ini=() tgt=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do ini+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	tgt=("$@")
	{
		cat "${ini[@]}" 2>/dev/null | sed -n 's/.*xrc ini qp \(0x[0-9a-f]*\) ready: /INI \1 /p'
		[ ${#tgt[@]} -eq 0 ] ||
			cat "${tgt[@]}" 2>/dev/null | sed -n 's/.*xrc tgt qp \(0x[0-9a-f]*\) ready: /TGT \1 /p'
	} | awk -v expect="$expect" '
	function val(key, i) {
		for (i = 3; i < NF; i++)
			if ($i == key)
				return $(i + 1)
		return ""
	}
	$1 == "INI" {
		n++
		iq[n] = $2; peer[n] = val("peer"); st[n] = val("state")
		rd[n] = val("max_rd_atomic") + 0
		next
	}
	$1 == "TGT" {
		d = val("max_dest_rd_atomic") + 0
		if (!($2 in tmin) || d < tmin[$2])
			tmin[$2] = d
		tstate[$2] = val("state")
	}
	END {
		if (!n) {
			print "FAIL no \"xrc ini qp ... ready\" line (debug log of subsystem xrc?)"
			exit
		}
		for (i = 1; i <= n; i++) {
			if (st[i] != "RTS")
				bad = bad sprintf(" ini %s in %s;", iq[i], st[i])
			if (rd[i] < 1)
				bad = bad sprintf(" ini %s max_rd_atomic %d;", iq[i], rd[i])
			else if (expect != "-" && rd[i] != expect + 0)
				bad = bad sprintf(" ini %s max_rd_atomic %d, expected %d;", iq[i], rd[i], expect)
			if (peer[i] in tmin) {
				matched++
				if (rd[i] > tmin[peer[i]])
					bad = bad sprintf(" ini %s max_rd_atomic %d > tgt %s max_dest_rd_atomic %d;",
							  iq[i], rd[i], peer[i], tmin[peer[i]])
			}
			if (!(rd[i] in seen)) {
				seen[rd[i]] = 1
				vals = vals (vals == "" ? "" : ",") rd[i]
			}
		}
		note = sprintf("%d ini qp(s), max_rd_atomic %s, %d matched to their tgt", n, vals,
			       matched)
		if (bad != "")
			print "FAIL" substr(bad, 1, length(bad) - 1) " [" note "]"
		else
			print "PASS " note
	}'
}

# domain_check PATH LOG...: the processes of one host share the domain file
# PATH: each says "xrc domain PATH tag T" with the same T, at least two do
domain_check() {
	local path=$1
	shift
	cat "$@" 2>/dev/null | sed -n 's/^ofx \([0-9]*\) .*xrc domain \([^ ]*\) tag \([0-9a-f]*\)$/\1 \2 \3/p' |
		sort -u | awk -v path="$path" '
	{ n++; if ($2 != path) other = other " " $1 ":" $2; tags[$3]++ }
	END {
		for (t in tags) { nt++; tag = t }
		if (n < 2)
			print "FAIL " n + 0 " process(es) reported a domain, expected at least 2"
		else if (other != "")
			print "FAIL domain file elsewhere:" other
		else if (nt != 1)
			print "FAIL " nt " different domain tags among " n " processes"
		else
			print "PASS " n " processes in domain " path " (tag " tag ")"
	}'
}

# ---- running -----------------------------------------------------------------

server_cmd=""
client_cmd=""
only="dapltest,dtest,dtestx,shared,unpolled,tgtkill,churn,dtestsrq,norc"
iter=1000
long_iter=50000
conns=64
burst=16
rounds=10
xrcd=/dev/shm/ofx-xrc-hw.xrcd
tool=""
logdir=""
failed=0
results=()

record() { # NAME "PASS|FAIL note"
	local v=${2%% *} note=${2#* }
	[ "$note" != "$2" ] || note=""
	results+=("$(printf '%-28s %-4s %s' "$1" "$v" "$note")")
	printf '%-28s %-4s %s\n' "$1" "$v" "$note"
	[ "$v" = PASS ] || failed=$((failed + 1))
}

want() { # GROUP: in --only?
	case ",$only," in
	*",$1,"*) return 0 ;;
	*) return 1 ;;
	esac
}

# on PREFIX NAME SECS TGT_MODE CMD...: CMD on a host, in the background,
# output to $logdir/NAME.log; its local pid in BG.  The environment of every
# program: XRC in the shared domain, the TGT lifetime, counters, debug log.
on() {
	local prefix=$1 name=$2 secs=$3
	local envv=(env DAPL_OFX_XRC=on "DAPL_OFX_XRCD=$xrcd" "DAPL_OFX_XRC_TGT=$4"
		"DAPL_OFX_XRC_RC_FALLBACK=${RC_FALLBACK:-yes}" DAPL_OFX_STATS=yes DAPL_OFX_LOG_LEVEL=debug "DAPL_OFX_LOG_SUBSYS=xrc,ia")
	shift 4
	# shellcheck disable=SC2086
	timeout -k 5 "$secs" $prefix "${envv[@]}" "$@" >"$logdir/$name.log" 2>&1 &
	BG=$!
}

srv() { on "$server_cmd" "$1.srv" "$2" "${TGT:-domain}" "${@:3}"; }
cli() { on "$client_cmd" "$1.cli" "$2" "${TGT:-domain}" "${@:3}"; }

# wait_log LOG REGEX SECS [PID]: until LOG has a line matching, or PID is gone
wait_log() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		[ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# wait_port PORT SECS: a side-channel server (dtest, dtestx, dtestcm) listens
wait_port() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		# shellcheck disable=SC2086
		$server_cmd ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
	done
	return 1
}

join() { # PID SECS: wait for a background program, killing it after SECS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# snap PREFIX OUT: one sample of a host's QPs, appended to OUT
snap() {
	echo "@sample $(date +%s.%N)" >>"$2"
	# shellcheck disable=SC2086
	$1 rdma resource show qp >>"$2" 2>&1
}

sampler() { # PREFIX OUT STOP: samples until the file STOP exists
	: >"$2"
	while [ ! -e "$3" ]; do
		snap "$1" "$2"
		sleep "$SAMPLE_S"
	done
}

SAMPLERS=()
sample_start() { # CASE: both hosts into $logdir/CASE.qp.{srv,cli}
	sample_stop
	rm -f "$logdir/sampling.stop"
	sampler "$server_cmd" "$logdir/$1.qp.srv" "$logdir/sampling.stop" &
	SAMPLERS=($!)
	sampler "$client_cmd" "$logdir/$1.qp.cli" "$logdir/sampling.stop" &
	SAMPLERS+=($!)
}

sample_stop() { # the sample under way is finished, none is begun
	[ ${#SAMPLERS[@]} -gt 0 ] || return 0
	touch "$logdir/sampling.stop"
	wait "${SAMPLERS[@]}" 2>/dev/null
	SAMPLERS=()
}

L() { echo "$logdir/$1.log"; } # the log of a program run as NAME.srv / NAME.cli

# judge_pair CASE PASS_RE FAIL_RE MIN_CONNS INI_MAX: a server/client pair of
# stock programs: their verdicts, counters and error lines
judge_pair() {
	local c=$1
	record "$c.srv" "$(stock_check "$(L "$c.srv")" "$2" "$3")"
	record "$c.cli" "$(stock_check "$(L "$c.cli")" "$2" "$3")"
	record "$c.srv.stats" "$(stats_check "$(L "$c.srv")" xrc "$4" "$5")"
	record "$c.cli.stats" "$(stats_check "$(L "$c.cli")" xrc "$4" "$5")"
	record "$c.errors" "$(errors_check "$(L "$c.srv")" "$(L "$c.cli")")"
}

# judge_qp CASE SRV_PIDS CLI_PIDS INI_MAX INI_MIN CLI_RC_MAX TGT_MIN TGT_MAX:
# the samples of a case on both hosts (the server side is passive: no RC QP;
# each host's TGTs serve the other host's INI QPs)
judge_qp() {
	local c=$1
	record "$c.qp.srv" "$(qp_check_pids "$logdir/$c.qp.srv" "$2" "$4" "$5" 0)"
	record "$c.qp.cli" "$(qp_check_pids "$logdir/$c.qp.cli" "$3" "$4" "$5" "$6")"
	record "$c.tgt.srv" "$(qp_check_tgt "$logdir/$c.qp.srv" "$BASE_SRV" "$7" "$8")"
	record "$c.tgt.cli" "$(qp_check_tgt "$logdir/$c.qp.cli" "$BASE_CLI" "$7" "$8")"
}

# devinfo PREFIX OUT LOG...: `ibv_devinfo -v` of the device the logs' IAs
# opened, once per host (the expected read depth of INI QPs comes from it)
devinfo() {
	local prefix=$1 out=$2 dev
	shift 2
	[ ! -s "$out" ] || return 0
	dev=$(log_device "$@")
	[ -n "$dev" ] || return 0
	# shellcheck disable=SC2086
	$prefix ibv_devinfo -v -d "$dev" >"$out" 2>&1
}

# judge_rd CASE: the read depth of the INI QPs of a case's logs, both ways
judge_rd() {
	local c=$1 s=() k=()
	s=("$logdir/$c".*srv.log)
	k=("$logdir/$c".*cli.log)
	devinfo "$server_cmd" "$logdir/devinfo.srv" "${s[@]}"
	devinfo "$client_cmd" "$logdir/devinfo.cli" "${k[@]}"
	record "$c.rd_atomic.cli" \
		"$(rd_check "$(rd_expect "$logdir/devinfo.cli" "$logdir/devinfo.srv")" "${k[@]}" -- "${s[@]}")"
	record "$c.rd_atomic.srv" \
		"$(rd_check "$(rd_expect "$logdir/devinfo.srv" "$logdir/devinfo.cli")" "${s[@]}" -- "${k[@]}")"
}

# pair CASE SECS PORT SERVER_ARGS... -- CLIENT_ARGS...: a side-channel pair
# (dtest, dtestx, dtestcm: the server listens on PORT), sampled
pair() {
	local c=$1 secs=$2 port=$3 s=() k=() sp
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	k=("$@")
	srv "$c" "$secs" "${s[@]}"
	sp=$BG
	if [ -n "$port" ] && ! wait_port "$port" 60; then
		record "$c.srv" "FAIL server never listened on $port"
		join "$sp" 1
		return 1
	fi
	[ -n "$port" ] || sleep 3
	sample_start "$c"
	cli "$c" "$secs" "${k[@]}"
	join "$BG" "$secs"
	join "$sp" 30
	sample_stop
}

group_dapltest() {
	local sp c name tw t n args
	srv dapltest 7200 dapltest -T S -D "$SIA"
	sp=$BG
	if ! wait_log "$(L dapltest.srv)" 'Service Point Ready' 60 "$sp"; then
		record dapltest.srv "FAIL no 'Service Point Ready'"
		join "$sp" 1
		return
	fi
	# NAME THREADS EPS ITER ARGS: short cases (bounds), then the long ones
	# (bounds and lower bounds: every EP has its INI QP while it runs)
	for c in \
		"T.sr 1 1 $iter client SR 256 server SR 256" \
		"T.rw 1 1 $iter client SR 256 server RW 4096 server SR 256" \
		"T.rr 1 1 $iter client SR 256 server RR 4096 server SR 256" \
		"T.validate 1 1 $iter -V client SR 1024 server RW 4096 server RR 4096 server SR 1024" \
		"T.poll 1 1 $iter -P client RW 4096 1 server RW 2048 4 server RR 1024 1 client RR 2048 1 client SR 1024 3 -f server SR 256 3 -f" \
		"T.w8 1 8 $iter client SR 256 server RW 4096 server SR 256 client SR 4096 server SR 256" \
		"P.rw 1 1 - -i 4096 -p 16 -m b RW 65536 2" \
		"P.rr 1 1 - -i 2048 RR 32768 1" \
		"L.t4w8 4 8 $long_iter client SR 256 server RR 4096 server RW 4096 server SR 256" \
		"L.t2w4v 2 4 $((long_iter / 4)) -V client SR 1024 server RW 4096 server RR 4096 server SR 1024"; do
		read -r name t n tw args <<<"$c"
		if [ "$tw" = - ]; then
			# shellcheck disable=SC2086
			set -- dapltest -T P -s "$SADDR" -D "$CIA" $args
		else
			# shellcheck disable=SC2086
			set -- dapltest -T T -s "$SADDR" -D "$CIA" -i "$tw" -t "$t" -w "$n" $args
		fi
		name=dapltest.$name
		sample_start "$name"
		cli "$name" 900 "$@"
		join "$BG" 900
		sample_stop
		record "$name" "$(stock_check "$(L "$name.cli")" "$DT_OK" "$DT_BAD")"
		record "$name.stats" "$(stats_check "$(L "$name.cli")" xrc "$((t * n))" "$((t * n + 1))")"
		record "$name.errors" "$(errors_check "$(L "$name.cli")")"
		# the server process is the same for every case: its pid from its log
		if [ "${name#dapltest.L.}" != "$name" ]; then
			judge_qp "$name" "$(log_pids "$(L dapltest.srv)")" "$(log_pids "$(L "$name.cli")")" \
				"$((t * n + 1))" "$((t * n))" "$t" "$((t * n))" "$((t * n + 1))"
		else
			judge_qp "$name" "$(log_pids "$(L dapltest.srv)")" "$(log_pids "$(L "$name.cli")")" \
				"$((t * n + 1))" 0 "$t" - "$((t * n + 1))"
		fi
	done
	cli dapltest.quit 60 dapltest -T Q -s "$SADDR" -D "$CIA"
	join "$BG" 60
	join "$sp" 60
	record dapltest.srv "$(stock_check "$(L dapltest.srv)" 'Service Point Ready' "$DT_BAD")"
	record dapltest.srv.stats "$(stats_check "$(L dapltest.srv)" xrc 1)"
	record dapltest.srv.errors "$(errors_check "$(L dapltest.srv)")"
	judge_rd dapltest
}

group_dtest() {
	# 48 bytes of connect data (the most an IB REQ holds with our trailer)
	pair dtest 300 15828 dtest -P "$SIA" -b 65536 -B 1000 -- \
		dtest -P "$CIA" -h "$SADDR" -b 65536 -B 1000 || return
	judge_pair dtest 'DAPL Test Complete\. PASSED' FAILED 1 1
	judge_qp dtest "$(log_pids "$(L dtest.srv)")" "$(log_pids "$(L dtest.cli)")" 1 0 1 - 1
	judge_rd dtest
}

group_dtestx() {
	# write-immediate, compare-and-swap and fetch-and-add need max_rd_atomic >= 1
	pair dtestx 300 15828 dtestx -P "$SIA" -s -- dtestx -P "$CIA" -h "$SADDR" || return
	judge_pair dtestx 'immed/atomic test PASSED' 'FAILED|ERROR|Error' 1 1
	judge_qp dtestx "$(log_pids "$(L dtestx.srv)")" "$(log_pids "$(L dtestx.cli)")" 1 0 1 - 1
	judge_rd dtestx
}

# two dapltest pairs and dtestx at once: three processes per host, one domain
group_shared() {
	local sa sb sx ca cb cx i c pa pb px li=$((long_iter / 2))
	srv shared.a 1200 dapltest -T S -D "$SIA" -n 62000
	sa=$BG
	srv shared.b 1200 dapltest -T S -D "$SIA" -n 63500
	sb=$BG
	srv shared.x 600 dtestx -P "$SIA" -s
	sx=$BG
	if ! wait_log "$(L shared.a.srv)" 'Service Point Ready' 60 "$sa" ||
		! wait_log "$(L shared.b.srv)" 'Service Point Ready' 60 "$sb" || ! wait_port 15828 60; then
		record shared.srv "FAIL a server did not get ready (logs shared.*.srv.log)"
		join "$sa" 1; join "$sb" 1; join "$sx" 1
		return
	fi
	sample_start shared
	cli shared.a 1200 dapltest -T T -V -s "$SADDR" -D "$CIA" -n 62000 -i "$li" -t 2 -w 4 \
		client SR 1024 server RW 4096 server RR 4096 server SR 1024
	ca=$BG
	cli shared.b 1200 dapltest -T T -s "$SADDR" -D "$CIA" -n 63500 -i "$li" -t 2 -w 4 \
		client SR 256 server RR 8192 client RR 4096 client RW 8192 server SR 256
	cb=$BG
	# dtestx while both transaction tests run
	for ((i = 0; i < 100; i++)); do
		c=$(qp_summary "$logdir/shared.qp.cli" "$(log_pids "$(L shared.a.cli)" "$(L shared.b.cli)")")
		[ "$(field "$c" inisum)" -lt 16 ] || break
		sleep 0.3
	done
	cli shared.x 300 dtestx -P "$CIA" -h "$SADDR"
	cx=$BG
	join "$cx" 300
	join "$ca" 1200
	join "$cb" 1200
	sample_stop
	cli shared.qa 60 dapltest -T Q -s "$SADDR" -D "$CIA" -n 62000
	join "$BG" 60
	cli shared.qb 60 dapltest -T Q -s "$SADDR" -D "$CIA" -n 63500
	join "$BG" 60
	join "$sa" 60; join "$sb" 60; join "$sx" 60
	for c in a b; do
		record "shared.$c.cli" "$(stock_check "$(L "shared.$c.cli")" "$DT_OK" "$DT_BAD")"
		record "shared.$c.cli.stats" "$(stats_check "$(L "shared.$c.cli")" xrc 8 9)"
		record "shared.$c.srv.stats" "$(stats_check "$(L "shared.$c.srv")" xrc 8)"
	done
	record shared.x.srv "$(stock_check "$(L shared.x.srv)" 'immed/atomic test PASSED' 'FAILED|ERROR|Error')"
	record shared.x.cli "$(stock_check "$(L shared.x.cli)" 'immed/atomic test PASSED' 'FAILED|ERROR|Error')"
	record shared.x.srv.stats "$(stats_check "$(L shared.x.srv)" xrc 1 1)"
	record shared.x.cli.stats "$(stats_check "$(L shared.x.cli)" xrc 1 1)"
	record shared.errors "$(errors_check "$logdir"/shared.*.log)"
	record shared.domain.srv "$(domain_check "$xrcd" "$(L shared.a.srv)" "$(L shared.b.srv)" "$(L shared.x.srv)")"
	record shared.domain.cli "$(domain_check "$xrcd" "$(L shared.a.cli)" "$(L shared.b.cli)" "$(L shared.x.cli)")"
	pa=$(log_pids "$(L shared.a.srv)" "$(L shared.b.srv)")
	px=$(log_pids "$(L shared.x.srv)")
	record shared.qp.srv "$(qp_check_pids "$logdir/shared.qp.srv" "$pa" 9 8 0)"
	record shared.qp.srv.dtestx "$(qp_check_pids "$logdir/shared.qp.srv" "$px" 1 0 0)"
	pb=$(log_pids "$(L shared.a.cli)" "$(L shared.b.cli)")
	px=$(log_pids "$(L shared.x.cli)")
	record shared.qp.cli "$(qp_check_pids "$logdir/shared.qp.cli" "$pb" 9 8 2)"
	record shared.qp.cli.dtestx "$(qp_check_pids "$logdir/shared.qp.cli" "$px" 1 0 1)"
	record shared.tgt.srv "$(qp_check_tgt "$logdir/shared.qp.srv" "$BASE_SRV" 8 19)"
	record shared.tgt.cli "$(qp_check_tgt "$logdir/shared.qp.cli" "$BASE_CLI" 8 19)"
	judge_rd shared
}

tool_check() { # LOG: ofx_xrc_hw's verdict
	stock_check "$1" '^ofx_xrc_hw: PASSED' '^FAIL|^ofx_xrc_hw: FAILED'
}

group_unpolled() {
	local sp
	srv unpolled 300 "$tool" server "$SIA" 7101 3
	sp=$BG
	if ! wait_log "$(L unpolled.srv)" 'server ready' 60 "$sp"; then
		record unpolled.srv "FAIL no 'server ready'"
		join "$sp" 1
		return
	fi
	sample_start unpolled
	cli unpolled 300 "$tool" client "$CIA" "$SADDR" unpolled 7101
	join "$BG" 300
	join "$sp" 30
	sample_stop
	record unpolled.srv "$(tool_check "$(L unpolled.srv)")"
	record unpolled.cli "$(tool_check "$(L unpolled.cli)")"
	record unpolled.srv.stats "$(stats_check "$(L unpolled.srv)" xrc 3 1)"
	record unpolled.cli.stats "$(stats_check "$(L unpolled.cli)" xrc 3 1)"
	record unpolled.errors "$(errors_check "$(L unpolled.srv)" "$(L unpolled.cli)")"
	judge_qp unpolled "$(tool_pid "$(L unpolled.srv)")" "$(tool_pid "$(L unpolled.cli)")" 1 0 1 - 1
	judge_rd unpolled
}

# tgtkill MODE EXPECT: processes 1 and 2 on the server host, one client
# with an EP to each; the client's INI QP goes to process 1, which creates
# the TGT process 2 receives through; process 1 is killed (SIGKILL).
tgtkill() {
	local mode=$1 expect=$2 c=tgtkill.$1 s1 s2 k p1 p2 pc i conns=1 after
	local TGT
	TGT=$([ "$mode" = 2a ] && echo domain || echo exit)
	[ "$expect" = break ] && conns=2
	srv "$c.1" 300 "$tool" server "$SIA" 7111 1
	s1=$BG
	srv "$c.2" 300 "$tool" server "$SIA" 7112 "$conns"
	s2=$BG
	if ! wait_log "$(L "$c.1.srv")" 'server ready' 60 "$s1" ||
		! wait_log "$(L "$c.2.srv")" 'server ready' 60 "$s2"; then
		record "$c.srv" "FAIL no 'server ready'"
		join "$s1" 1; join "$s2" 1
		return
	fi
	p1=$(tool_pid "$(L "$c.1.srv")")
	p2=$(tool_pid "$(L "$c.2.srv")")
	sample_start "$c"
	cli "$c" 300 "$tool" client "$CIA" "$SADDR" "$expect" 7111 7112
	k=$BG
	if ! wait_log "$(L "$c.cli")" 'waiting for SIGUSR1' 120 "$k"; then
		record "$c.cli" "FAIL $(tool_check "$(L "$c.cli")" | cut -c6-) (never ready for the kill)"
		join "$k" 1; join "$s1" 1; join "$s2" 1
		sample_stop
		return
	fi
	pc=$(tool_pid "$(L "$c.cli")")
	sleep 1
	snap "$server_cmd" "$logdir/$c.pre.srv"
	snap "$client_cmd" "$logdir/$c.pre.cli"
	# shellcheck disable=SC2086
	$server_cmd kill -9 "$p1"
	for ((i = 0; i < 100; i++)); do
		# shellcheck disable=SC2086
		$server_cmd kill -0 "$p1" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2
	snap "$server_cmd" "$logdir/$c.post.srv"
	snap "$client_cmd" "$logdir/$c.post.cli"
	# shellcheck disable=SC2086
	$client_cmd kill -USR1 "$pc"
	join "$k" 300
	join "$s2" 60
	join "$s1" 1
	sample_stop
	record "$c.cli" "$(tool_check "$(L "$c.cli")")"
	record "$c.2.srv" "$(tool_check "$(L "$c.2.srv")")"
	# the client's INI QPs: one, and a second one after the break (2b)
	record "$c.cli.stats" "$(stats_check "$(L "$c.cli")" xrc-fault "$((conns + 1))" "$conns")"
	record "$c.2.srv.stats" "$(stats_check "$(L "$c.2.srv")" xrc-fault "$conns")"
	# connected, before the kill: one INI QP per process, its TGT at the peer
	record "$c.pre.qp.cli" "$(qp_check_pids "$logdir/$c.pre.cli" "$pc" 1 1 0)"
	record "$c.pre.qp.srv" "$(qp_check_pids "$logdir/$c.pre.srv" "$p1,$p2" 1 1 0)"
	record "$c.pre.tgt.srv" "$(qp_check_tgt "$logdir/$c.pre.srv" "$BASE_SRV" 1 1)"
	record "$c.pre.tgt.cli" "$(qp_check_tgt "$logdir/$c.pre.cli" "$BASE_CLI" 2 2)"
	# after: 2a the TGT stays (process 2 holds it), 2b it died with process 1
	after=$([ "$mode" = 2a ] && echo 1 || echo 0)
	record "$c.post.tgt.srv" "$(qp_check_tgt "$logdir/$c.post.srv" "$BASE_SRV" "$after" "$after")"
	# process 1's INI QP died with it; the TGT made for it stays until the
	# client closes (no INI-CLOSE came); process 2's stays
	record "$c.post.tgt.cli" "$(qp_check_tgt "$logdir/$c.post.cli" "$BASE_CLI" 1 2)"
	record "$c.qp.cli" "$(qp_check_pids "$logdir/$c.qp.cli" "$pc" "$conns" 1 1)"
	record "$c.qp.srv" "$(qp_check_pids "$logdir/$c.qp.srv" "$p1,$p2" "$conns" 1 0)"
	judge_rd "$c"
}

group_tgtkill() {
	tgtkill 2a survive
	tgtkill 2b break
}

# xrc_rc_fallback=no on both hosts: dtestcm's bursts of connects build no RC
# QP on the client either (its peak is 0, where by default it is the burst)
group_norc() {
	local c=norc.dtestcm
	RC_FALLBACK=no pair "$c" 600 15828 dtestcm -P "$SIA" -s -c "$conns" -b "$burst" -- \
		dtestcm -P "$CIA" -h "$SADDR" -c "$conns" -b "$burst" || return
	judge_pair "$c" 'DAPL Connection Test Complete' 'FAILED|Error|ERR' "$conns" 1
	record "$c.qp.srv" "$(qp_check_pids "$logdir/$c.qp.srv" "$(log_pids "$(L "$c.srv")")" 1 0 0)"
	record "$c.qp.cli" "$(qp_check_pids "$logdir/$c.qp.cli" "$(log_pids "$(L "$c.cli")")" 1 0 0)"
	record "$c.tgt.srv" "$(qp_check_tgt "$logdir/$c.qp.srv" "$BASE_SRV" - 1)"
	# each REQ in flight names a TGT made for it (until its answer), beside
	# the one the server's INI QP sends to
	record "$c.tgt.cli" "$(qp_check_tgt "$logdir/$c.qp.cli" "$BASE_CLI" - $((burst + 1)))"
}

group_churn() {
	local r sp pids_s="" pids_c="" bad_out="" bad_stats="" c v w=8 rnd
	# dtestcm: a new process pair each round
	: >"$logdir/churn.dtestcm.qp.srv"
	: >"$logdir/churn.dtestcm.qp.cli"
	for ((r = 1; r <= rounds; r++)); do
		rnd=churn.dtestcm.$r
		pair "$rnd" 600 15828 dtestcm -P "$SIA" -s -c "$conns" -b "$burst" -- \
			dtestcm -P "$CIA" -h "$SADDR" -c "$conns" -b "$burst" || { bad_out="$bad_out $r:listen"; continue; }
		cat "$logdir/$rnd.qp.srv" >>"$logdir/churn.dtestcm.qp.srv"
		cat "$logdir/$rnd.qp.cli" >>"$logdir/churn.dtestcm.qp.cli"
		for c in srv cli; do
			v=$(stock_check "$(L "$rnd.$c")" 'DAPL Connection Test Complete' 'FAILED|Error|ERR')
			[ "${v%% *}" = PASS ] || bad_out="$bad_out $r.$c:${v#FAIL }"
			v=$(stats_check "$(L "$rnd.$c")" xrc "$conns" 1)
			[ "${v%% *}" = PASS ] || bad_stats="$bad_stats $r.$c:${v#FAIL }"
		done
		pids_s=$pids_s,$(log_pids "$(L "$rnd.srv")")
		pids_c=$pids_c,$(log_pids "$(L "$rnd.cli")")
	done
	record churn.dtestcm "$([ -z "$bad_out" ] && echo "PASS $rounds rounds of $conns connections" || echo "FAIL$bad_out")"
	record churn.dtestcm.stats "$([ -z "$bad_stats" ] && echo "PASS conn_xrc >= $conns, conn_rc 0, one ini qp per process, every round" || echo "FAIL$bad_stats")"
	record churn.dtestcm.errors "$(errors_check "$logdir"/churn.dtestcm.*.log)"
	record churn.dtestcm.qp.srv "$(qp_check_pids "$logdir/churn.dtestcm.qp.srv" "${pids_s#,}" 1 0 0)"
	record churn.dtestcm.qp.cli "$(qp_check_pids "$logdir/churn.dtestcm.qp.cli" "${pids_c#,}" 1 0 "$burst")"
	# one process pair at a time: one INI QP each way, one TGT per host
	record churn.dtestcm.tgt.srv "$(qp_check_tgt "$logdir/churn.dtestcm.qp.srv" "$BASE_SRV" - 1)"
	record churn.dtestcm.tgt.cli "$(qp_check_tgt "$logdir/churn.dtestcm.qp.cli" "$BASE_CLI" - 1)"
	sleep 1
	snap "$server_cmd" "$logdir/churn.dtestcm.after.srv"
	snap "$client_cmd" "$logdir/churn.dtestcm.after.cli"
	record churn.dtestcm.after.srv "$(qp_check_tgt "$logdir/churn.dtestcm.after.srv" "$BASE_SRV" 0 0)"
	record churn.dtestcm.after.cli "$(qp_check_tgt "$logdir/churn.dtestcm.after.cli" "$BASE_CLI" 0 0)"

	# dapltest: clients come and go, one server process stays: the TGTs it
	# creates for each client's INI QPs must go with them (INI-CLOSE)
	srv churn.dapltest 1800 dapltest -T S -D "$SIA"
	sp=$BG
	if ! wait_log "$(L churn.dapltest.srv)" 'Service Point Ready' 60 "$sp"; then
		record churn.dapltest.srv "FAIL no 'Service Point Ready'"
		join "$sp" 1
		return
	fi
	sample_start churn.dapltest
	bad_out=""
	pids_c=""
	for ((r = 1; r <= rounds; r++)); do
		rnd=churn.dapltest.$r
		cli "$rnd" 300 dapltest -T T -s "$SADDR" -D "$CIA" -i 200 -t 1 -w "$w" \
			client SR 256 server SR 256
		join "$BG" 300
		v=$(stock_check "$(L "$rnd.cli")" "$DT_OK" "$DT_BAD")
		[ "${v%% *}" = PASS ] || bad_out="$bad_out $r:${v#FAIL }"
		pids_c=$pids_c,$(log_pids "$(L "$rnd.cli")")
	done
	sample_stop
	sleep 1
	snap "$server_cmd" "$logdir/churn.dapltest.after.srv"
	snap "$client_cmd" "$logdir/churn.dapltest.after.cli"
	cli churn.dapltest.quit 60 dapltest -T Q -s "$SADDR" -D "$CIA"
	join "$BG" 60
	join "$sp" 60
	record churn.dapltest "$([ -z "$bad_out" ] && echo "PASS $rounds clients in a row" || echo "FAIL$bad_out")"
	record churn.dapltest.srv.stats "$(stats_check "$(L churn.dapltest.srv)" xrc "$((rounds * w))")"
	record churn.dapltest.errors "$(errors_check "$logdir"/churn.dapltest.*.log)"
	record churn.dapltest.qp.srv "$(qp_check_pids "$logdir/churn.dapltest.qp.srv" "$(log_pids "$(L churn.dapltest.srv)")" $((w + 1)) 0 0)"
	record churn.dapltest.qp.cli "$(qp_check_pids "$logdir/churn.dapltest.qp.cli" "${pids_c#,}" $((w + 1)) 0 1)"
	record churn.dapltest.tgt.srv "$(qp_check_tgt "$logdir/churn.dapltest.qp.srv" "$BASE_SRV" - $((w + 1)))"
	# the server still runs: none of its INI QPs and TGTs may be left
	record churn.dapltest.after.qp.srv "$(qp_check_pids "$logdir/churn.dapltest.after.srv" "$(log_pids "$(L churn.dapltest.srv)")" 0 0 0)"
	record churn.dapltest.after.tgt.srv "$(qp_check_tgt "$logdir/churn.dapltest.after.srv" "$BASE_SRV" 0 0)"
	record churn.dapltest.after.tgt.cli "$(qp_check_tgt "$logdir/churn.dapltest.after.cli" "$BASE_CLI" 0 0)"
}

group_dtestsrq() {
	# EPs made with an SRQ stay RC on an xrc=on IA
	pair dtestsrq 120 "" dtestsrq -P "$SIA" -s -c 8 -B 4 -t 100 -b 1024 -- \
		dtestsrq -P "$CIA" -h "$SADDR" -c 8 -B 4 -t 100 -b 1024 || return
	record dtestsrq.srv "$(stock_check "$(L dtestsrq.srv)" 'DAPL RC SRQ Test Complete' 'FAILED|Error|ERR')"
	record dtestsrq.cli "$(stock_check "$(L dtestsrq.cli)" 'DAPL RC SRQ Test Complete' 'FAILED|Error|ERR')"
	record dtestsrq.srv.stats "$(stats_check "$(L dtestsrq.srv)" rc 8)"
	record dtestsrq.cli.stats "$(stats_check "$(L dtestsrq.cli)" rc 8)"
	record dtestsrq.errors "$(errors_check "$(L dtestsrq.srv)" "$(L dtestsrq.cli)")"
	record dtestsrq.qp.srv "$(KEPT_S=1000000 qp_check_pids "$logdir/dtestsrq.qp.srv" "$(log_pids "$(L dtestsrq.srv)")" 0 0 8)"
	record dtestsrq.qp.cli "$(KEPT_S=1000000 qp_check_pids "$logdir/dtestsrq.qp.cli" "$(log_pids "$(L dtestsrq.cli)")" 0 0 8)"
}

# ---- --selftest: the parsing functions against test/xrc-hw/samples --------------

selftest() {
	local d=${1:-$top/test/xrc-hw/samples} n=0 bad=0
	# expect NAME VERDICT_REGEX OUTPUT
	expect() {
		n=$((n + 1))
		if grep -Eq -- "$2" <<<"$3"; then
			echo "ok $n - $1"
		else
			bad=$((bad + 1))
			echo "not ok $n - $1"
			echo "#   got: $3"
			echo "#   want: /$2/"
		fi
	}
	[ -d "$d" ] || { echo "selftest: no samples in $d" >&2; return 2; }
	KEPT_S=2
	local qs=$d/qp-server-dapltest.txt qc=$d/qp-client-dapltest.txt

	# rdma resource show qp
	expect "summary of a server host's samples" \
		'^samples=4 seen=3 ini=9 inisum=9 tgt=9 rc=0 kept=0$' "$(qp_summary "$qs" 30917 | head -n1)"
	expect "rows of other processes and kernel QPs are not counted" \
		'^pid 30917 ini=9 rc=0$' "$(qp_summary "$qs" 30917 | sed -n 2p)"
	expect "a pid that never had a QP" '^pid 4 ini=0 rc=0$' "$(qp_summary "$qs" 30917,4 | sed -n 3p)"
	expect "the unrelated RC QP (ib_write_bw) fails nobody" \
		'^samples=4 seen=0 ini=0 inisum=0 tgt=9 rc=0 kept=0$' "$(qp_summary "$qs" 4 | head -n1)"
	expect "its pid would have 1 RC QP kept" '^samples=4 seen=4 ini=0 inisum=0 tgt=9 rc=1 kept=1$' \
		"$(qp_summary "$qs" 2231 | head -n1)"
	expect "a client host: the peak of RC QPs, not the lowest" \
		'^samples=5 seen=5 ini=9 inisum=9 tgt=10 rc=2 kept=0$' "$(qp_summary "$qc" 8812 | head -n1)"
	expect "xrc client: 2 transient rc qps within the bound of 4 threads" \
		'^PASS ini=9 rc=2 kept=0 in 5 samples \(5 with them\)$' "$(qp_check_pids "$qc" 8812 9 8 4)"
	expect "xrc client: transient rc qps over a bound of 1" 'FAIL pid 8812: 2 rc qps > 1' \
		"$(qp_check_pids "$qc" 8812 9 8 1)"
	expect "passive side: no rc qp at all" '^PASS ini=9 rc=0 kept=0' "$(qp_check_pids "$qs" 30917 9 8 0)"
	expect "more ini qps than xrc needs" 'FAIL pid 30917: 9 ini qps > 4' "$(qp_check_pids "$qs" 30917 4 1 0)"
	expect "fewer ini qps than eps in the long case" 'FAIL at most 9 ini qps, expected 16' \
		"$(qp_check_pids "$qs" 30917 17 16 0)"
	expect "an rc qp an xrc ep keeps" 'FAIL .*1 rc qp\(s\) alive 2s\+' \
		"$(qp_check_pids "$d/qp-rc-kept.txt" 5120 1 1 1)"
	expect "never sampled while connected" 'FAIL never sampled while connected' \
		"$(qp_check_pids "$qs" 77 1 1 0)"
	expect "no pids" 'FAIL no process ids' "$(qp_check_pids "$qs" "" 1 1 0)"
	expect "no sample at all" 'FAIL no qp sample' "$(qp_check_pids "$d/qp-empty.txt" 1 1 0 0)"
	expect "tgts within bounds, over the baseline" '^PASS 8 tgt qps \(peak over 4 samples, 1 before the run\)$' \
		"$(qp_check_tgt "$qs" "$(field "$(qp_summary "$d/qp-baseline.txt" "")" tgt)" 8 9)"
	expect "tgts over the bound (a leak)" 'FAIL 9 tgt qps, expected at most 1' "$(qp_check_tgt "$qs" 0 - 1)"
	expect "tgts missing" 'FAIL 0 tgt qps, expected at least 1' "$(qp_check_tgt "$d/qp-baseline.txt" 1 1 1)"
	expect "baseline: one sample, one TGT of some other job" '^samples=1 seen=0 ini=0 inisum=0 tgt=1 rc=0 kept=0$' \
		"$(qp_summary "$d/qp-baseline.txt" "" | head -n1)"
	expect "rows without a sample marker make one sample" '^samples=1 seen=1 ini=9 inisum=9 tgt=9 rc=0 kept=0$' \
		"$(awk '/^@sample/ { b = ""; next } { b = b $0 "\n" } END { printf "%s", b }' "$qs" |
			qp_summary /dev/stdin 30917 | head -n1)"

	# stats lines
	expect "client stats: xrc only" '^PASS conn_xrc=33 conn_rc=0 ini_created=33 refused=0 ctl_lost=0 \(1 ia\)$' \
		"$(stats_check "$d/log-dapltest-client.txt" xrc 32 33)"
	expect "ini qps over the bound" 'FAIL 33 ini qps made, expected at most 9' \
		"$(stats_check "$d/log-dapltest-client.txt" xrc 32 9)"
	expect "fewer xrc connections than eps" 'FAIL 33 connection\(s\) over xrc, expected 64' \
		"$(stats_check "$d/log-dapltest-client.txt" xrc 64)"
	expect "a connection that fell back to rc" 'FAIL 1 connection\(s\) over rc' \
		"$(stats_check "$d/log-stats-rc-fallback.txt" xrc 1)"
	expect "no stats line" 'FAIL no "stats: xrc" line' "$(stats_check "$d/log-dtest-nostats.txt" xrc 1)"
	expect "lost control messages fail a clean case" 'FAIL refused or lost control messages' \
		"$(stats_check "$d/log-tgtkill-2b-client.txt" xrc 3 2)"
	expect "... and are allowed where a peer was killed" '^PASS conn_xrc=3 conn_rc=0 ini_created=2' \
		"$(stats_check "$d/log-tgtkill-2b-client.txt" xrc-fault 3 2)"
	expect "dtestsrq: rc only" '^PASS rc only: 8 connection\(s\)' "$(stats_check "$d/log-dtestsrq-server.txt" rc 8)"
	expect "dtestsrq over xrc would be wrong" 'FAIL 33 connection\(s\) over xrc, expected rc only' \
		"$(stats_check "$d/log-dapltest-client.txt" rc 1)"

	# the stock programs' verdicts, the provider's lines left out
	expect "dapltest client passed" '^PASS .*End of Work -- Client Exiting$' \
		"$(stock_check "$d/log-dapltest-client.txt" "$DT_OK" "$DT_BAD")"
	expect "dapltest test error" '^FAIL Test Error' "$(stock_check "$d/log-dapltest-failed.txt" "$DT_OK" "$DT_BAD")"
	expect "a provider line with 'Error' is not the program's" '^PASS DAPL Test Complete\. PASSED' \
		"$(stock_check "$d/log-dtest-nostats.txt" 'DAPL Test Complete\. PASSED' 'FAILED|Error')"
	expect "no pass line" '^FAIL no /immed' "$(stock_check "$d/log-dtest-nostats.txt" 'immed/atomic test PASSED' FAILED)"
	expect "ofx_xrc_hw passed" '^PASS ofx_xrc_hw: PASSED' "$(tool_check "$d/log-tgtkill-2b-client.txt")"
	expect "ofx_xrc_hw failed" '^FAIL FAIL: ep 1: BROKEN during the echoes$' "$(tool_check "$d/log-tgtkill-2a-failed.txt")"
	expect "provider error lines" '^FAIL ofx 7312 error xrc qp_move:146: modify xrc qp 0x1c5' "$(errors_check "$d/log-dtest-nostats.txt")"
	expect "none" '^PASS no provider error line' "$(errors_check "$d/log-dapltest-client.txt")"

	# pids, devices, read depths, domains
	expect "pids of the provider's lines" '^8812$' "$(log_pids "$d/log-dapltest-client.txt")"
	expect "pids of two logs" '^7312,8812$' "$(log_pids "$d/log-dapltest-client.txt" "$d/log-dtest-nostats.txt")"
	expect "ofx_xrc_hw's own pid line" '^6001$' "$(tool_pid "$d/log-tgtkill-2b-client.txt")"
	expect "device of the ia line" '^mlx5_0$' "$(log_device "$d/log-dapltest-client.txt")"
	expect "ibv_devinfo max_qp_rd_atom" '^16$' "$(devinfo_attr "$d/devinfo-mlx5.txt" max_qp_rd_atom)"
	expect "ibv_devinfo max_qp_init_rd_atom" '^16$' "$(devinfo_attr "$d/devinfo-mlx5.txt" max_qp_init_rd_atom)"
	expect "read depth mlx5 -> mlx5" '^16$' "$(rd_expect "$d/devinfo-mlx5.txt" "$d/devinfo-mlx5.txt")"
	expect "read depth mlx4 (128 out) -> mlx5" '^16$' "$(rd_expect "$d/devinfo-mlx4.txt" "$d/devinfo-mlx5.txt")"
	expect "read depth unknown" '^-$' "$(rd_expect "$d/devinfo-mlx5.txt" /nonexistent)"
	expect "ini read depth 16, matched to its tgt" '^PASS 33 ini qp\(s\), max_rd_atomic 16, 33 matched to their tgt$' \
		"$(rd_check 16 "$d/log-dapltest-client.txt" -- "$d/log-dapltest-server.txt")"
	expect "ini read depth 0 (rdma_cm gave none)" 'FAIL ini 0x1c3 max_rd_atomic 0' \
		"$(rd_check - "$d/log-rd-zero.txt" --)"
	expect "ini deeper than its tgt" 'FAIL.* ini 0x1c4 max_rd_atomic 16 > tgt 0x2a9 max_dest_rd_atomic 4' \
		"$(rd_check - "$d/log-rd-zero.txt" -- "$d/log-rd-tgt4.txt")"
	expect "ini read depth other than the devices give" 'FAIL ini 0x[0-9a-f]* max_rd_atomic 16, expected 4' \
		"$(rd_check 4 "$d/log-dapltest-client.txt" --)"
	expect "no ini line" 'FAIL no "xrc ini qp ... ready" line' "$(rd_check 16 "$d/log-dtestsrq-server.txt" --)"
	expect "one domain for three processes" '^PASS 3 processes in domain /dev/shm/ofx-xrc-hw.xrcd \(tag 5f3a09c1\)$' \
		"$(domain_check /dev/shm/ofx-xrc-hw.xrcd "$d/log-dapltest-client.txt" "$d/log-dtest-nostats.txt" "$d/log-tgtkill-2b-client.txt")"
	expect "a private domain" 'FAIL domain file elsewhere: 5120:\(private\)' \
		"$(domain_check /dev/shm/ofx-xrc-hw.xrcd "$d/log-dapltest-client.txt" "$d/log-private-domain.txt")"
	expect "one process only" 'FAIL 1 process\(es\) reported a domain' \
		"$(domain_check /dev/shm/ofx-xrc-hw.xrcd "$d/log-dapltest-client.txt")"
	expect "field of a summary" '^9$' "$(field "samples=4 seen=3 ini=9 inisum=9 tgt=9 rc=0 kept=0" tgt)"
	expect "first field of a summary" '^4$' "$(field "samples=4 seen=3 ini=9" samples)"

	echo "# selftest: $((n - bad)) of $n checks passed"
	[ "$bad" = 0 ]
}

# ---- main -----------------------------------------------------------------------

if [ "${1:-}" = --selftest ]; then
	selftest "${2:-}"
	exit
fi
while [ $# -gt 0 ]; do
	case $1 in
	--server-cmd) server_cmd=$2; shift 2 ;;
	--client-cmd) client_cmd=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--iter) iter=$2; shift 2 ;;
	--long-iter) long_iter=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--burst) burst=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--xrcd) xrcd=$2; shift 2 ;;
	--tool) tool=$2; shift 2 ;;
	--log) logdir=$2; shift 2 ;;
	-h | --help) sed -n '3,69p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
if [ $# -ne 3 ]; then
	echo "usage: xrc-hw.sh [options] SERVER_IA CLIENT_IA SERVER_ADDR (--help)" >&2
	exit 2
fi
for v in "$iter" "$long_iter" "$conns" "$burst" "$rounds"; do
	case $v in *[!0-9]* | "" | 0) echo "xrc-hw.sh: not a positive number: $v" >&2; exit 2 ;; esac
done
SIA=$1 CIA=$2 SADDR=$3
[ -n "$tool" ] || tool=$top/test/device/ofx_xrc_hw
[ -n "$logdir" ] || logdir=$(mktemp -d /tmp/xrc-hw.XXXXXX)
mkdir -p "$logdir"
echo "xrc-hw: server $SIA at $SADDR, client $CIA, domain $xrcd, logs in $logdir"

# before anything runs: TGT QPs of the hosts (another job's), the devices
snap "$server_cmd" "$logdir/baseline.qp.srv"
snap "$client_cmd" "$logdir/baseline.qp.cli"
BASE_SRV=$(field "$(qp_summary "$logdir/baseline.qp.srv" "")" tgt)
BASE_CLI=$(field "$(qp_summary "$logdir/baseline.qp.cli" "")" tgt)
for h in srv cli; do
	grep -q '^link ' "$logdir/baseline.qp.$h" ||
		record "rdma.$h" "FAIL \`rdma resource show qp\` shows no qp: $(grep -v '^@' "$logdir/baseline.qp.$h" | head -n1)"
done
echo "xrc-hw: tgt qps before the run: server $BASE_SRV, client $BASE_CLI"
# shellcheck disable=SC2086
if ! $client_cmd test -x "$tool" || ! $server_cmd test -x "$tool"; then
	for g in unpolled tgtkill; do
		want "$g" && record "$g" "FAIL no $tool on both hosts (make check builds it; --tool)"
	done
	only=$(sed 's/unpolled//;s/tgtkill//' <<<"$only")
fi

for g in dapltest dtest dtestx shared unpolled tgtkill churn dtestsrq norc; do
	want "$g" || continue
	echo "-- $g"
	"group_$g"
done

echo "==================== xrc-hw: $SIA <- $CIA ($SADDR) ===================="
printf '%s\n' "${results[@]}"
echo "xrc-hw: $(( ${#results[@]} - failed )) passed, $failed failed; logs in $logdir"
[ "$failed" -le 100 ] || failed=100
exit "$failed"
