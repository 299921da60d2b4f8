# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# guest-lib.sh: helpers for test scripts that run inside an ofxvm guest.
#
#     . "$OFXVM_LIB"          # /etc/ofxvm/lib.sh in the guest
#
# Every job has a NAME and a time limit; its output goes to
# $VM_LOGS/NAME.log (default /out/logs).  Each finished job or check adds a
# row to a results table, which vm_summary prints.  Nothing here waits
# without a bound: jobs run under timeout(1), waits poll against a deadline.
#
# The functions return non-zero on failure, so call them from scripts
# without `set -e` (or add `|| true`), and end with `vm_summary; exit $?`.
# Background jobs must be joined by the shell that started them (bash
# cannot wait for another shell's children), so do not start them in a
# subshell or pipeline.

VM_LOGS=${VM_LOGS:-${OFXVM_OUT:-/out}/logs}
# the table is a file, so that rows added in subshells are not lost
VM_RESULTS=${VM_RESULTS:-/run/ofxvm-results}
# seconds between SIGTERM and SIGKILL for a job being stopped
VM_KILL_AFTER=${VM_KILL_AFTER:-3}
# how long vm_pair lets the server finish after its client passed / failed
VM_PAIR_GRACE=${VM_PAIR_GRACE:-30}
VM_PAIR_GRACE_FAILED=${VM_PAIR_GRACE_FAILED:-5}
# log lines shown when a job fails
VM_TAIL_LINES=${VM_TAIL_LINES:-15}

declare -gA VM_JOB_PID=() VM_JOB_START=()
mkdir -p "$VM_LOGS"
touch "$VM_RESULTS"

# Microseconds now, without starting a process (that costs ~50 ms in TCG).
vm__now_us() { VM__NOW=${EPOCHREALTIME//[!0-9]/}; }

vm__elapsed() { # START_US: seconds since then, as "12.34"
	local d
	vm__now_us
	d=$(((VM__NOW - $1) / 10000))
	printf '%d.%02d' $((d / 100)) $((d % 100))
}

# vm_say MSG...: a timestamped line on stdout (the guest log).
vm_say() {
	local up rest
	read -r up rest </proc/uptime
	printf 'vm [%7s] %s\n' "$up" "$*"
}

vm__record() { # NAME PASS|FAIL RC SECS NOTE
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$VM_RESULTS"
	vm_say "$2 $1 (rc $3, $4 s)${5:+ $5}"
	if [ "$2" = FAIL ] && [ -s "$VM_LOGS/$1.log" ]; then
		tail -n "$VM_TAIL_LINES" "$VM_LOGS/$1.log" | cut -c1-200 | sed "s/^/    $1| /"
	fi
}

# vm_hang_watch SECS [PATTERN]: from now on, any process whose name matches
# PATTERN (default: the stock DAT programs and the project's consumers) that
# has run for more than SECS gets its threads' stacks written once, by gdb,
# to $VM_LOGS/hang.PID.txt, and a line in the guest log.  It leaves the
# process alone: the job's own timeout still decides.  For the root cause of
# a hang that a rerun does not show.
vm_hang_watch() {
	local secs=${1:?vm_hang_watch needs seconds} pat=${2:-'^(dapltest|dtest|dtestx|dtestcm|dtestsrq|ofx_[a-z_]+)$'}
	command -v gdb >/dev/null || { vm_say "hang watch: no gdb here"; return 0; }
	# its scan reads ps through <(...), which needs /dev/fd (guest-init.sh)
	[ -e /dev/fd/0 ] || { vm_say "hang watch: no /dev/fd here"; return 0; }
	(
		declare -A dumped=()
		while sleep 5; do
			while read -r pid age comm; do
				[[ $comm =~ $pat ]] && [ "$age" -gt "$secs" ] || continue
				[ -z "${dumped[$pid]:-}" ] || continue
				dumped[$pid]=1
				vm_say "hang watch: $comm pid $pid running ${age}s: stacks in hang.$pid.txt"
				{
					tr '\0' ' ' </proc/"$pid"/cmdline
					echo
					timeout 60 gdb -q -batch -p "$pid" -ex 'thread apply all bt' 2>&1
				} >"$VM_LOGS/hang.$pid.txt"
			done < <(ps -eo pid=,etimes=,comm=)
		done
	) </dev/null 2>/dev/null &
	VM_HANG_WATCH_PID=$!
}

# vm_skip NAME REASON: a case this device cannot do.  It is listed as SKIP
# with the reason, counted apart, and is neither a failure nor a pass.
vm_skip() {
	vm__check_name "${1:-}" || return 2
	vm__record "$1" SKIP - 0 "${2:?vm_skip needs a reason}"
}

vm__check_name() {
	[[ ${1:-} =~ ^[A-Za-z0-9_.+-]+$ ]] && return 0
	echo "guest-lib: bad job name '${1:-}'" >&2
	return 1
}

vm__check_secs() {
	[[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ] && return 0
	echo "guest-lib: bad time limit '${1:-}'" >&2
	return 1
}

# vm_run NAME SECS CMD [ARG...]
#   Run CMD in the foreground, killed after SECS; output to NAME.log.
#   Records PASS if it exits 0.  Returns CMD's status (124 = timed out).
vm_run() {
	vm__check_name "$1" && vm__check_secs "$2" || return 2
	local name=$1 secs=$2 start rc=0
	shift 2
	vm_say "run $name (${secs}s): $*"
	vm__now_us
	start=$VM__NOW
	# stdbuf: line-buffered output, so waits on the log see lines at once
	timeout -k "$VM_KILL_AFTER" "$secs" stdbuf -oL -eL "$@" \
		>"$VM_LOGS/$name.log" 2>&1 </dev/null || rc=$?
	vm__finish_job "$name" "$start" "$rc" ""
	return "$rc"
}

vm__finish_job() { # NAME START_US RC NOTE
	local note=$4
	[ "$3" != 124 ] || note="TIMED OUT${note:+; $note}"
	if [ "$3" = 0 ] && [ -z "$4" ]; then
		vm__record "$1" PASS "$3" "$(vm__elapsed "$2")" "$note"
	else
		vm__record "$1" FAIL "$3" "$(vm__elapsed "$2")" "$note"
	fi
}

# vm_bg NAME SECS CMD [ARG...]
#   Start CMD in the background, killed after SECS; output to NAME.log.
#   Finish it with vm_join or vm_stop.
vm_bg() {
	vm__check_name "$1" && vm__check_secs "$2" || return 2
	local name=$1 secs=$2
	shift 2
	if [ -n "${VM_JOB_PID[$name]:-}" ]; then
		echo "guest-lib: job $name is already running" >&2
		return 2
	fi
	vm__now_us
	VM_JOB_START[$name]=$VM__NOW
	timeout -k "$VM_KILL_AFTER" "$secs" stdbuf -oL -eL "$@" \
		>"$VM_LOGS/$name.log" 2>&1 </dev/null &
	VM_JOB_PID[$name]=$!
	vm_say "started $name (${secs}s, pid $!): $*"
}

# vm_alive NAME: is background job NAME still running?
vm_alive() {
	local pid=${VM_JOB_PID[$1]:-}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Stop a background job: TERM (timeout(1) passes it on, and sends KILL
# VM_KILL_AFTER s later); if even timeout(1) lingers, KILL it.  Bounded.
vm__kill_job() { # NAME
	local pid=${VM_JOB_PID[$1]} i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < (VM_KILL_AFTER + 2) * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

vm__wait_until_dead() { # NAME SECS: 0 if it ended within SECS
	local deadline
	vm__now_us
	deadline=$((VM__NOW + $2 * 1000000))
	while vm_alive "$1"; do
		vm__now_us
		[ "$VM__NOW" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

vm__reap() { # NAME NOTE KILLED_IS_OK
	local name=$1 note=$2 rc=0
	wait "${VM_JOB_PID[$name]}" 2>/dev/null || rc=$?
	unset "VM_JOB_PID[$name]"
	if [ "$3" = 1 ] && [ -n "$note" ]; then
		# vm_stop of a job still running: killing it was the plan
		vm__record "$name" PASS "$rc" "$(vm__elapsed "${VM_JOB_START[$name]}")" "$note"
		rc=0
	else
		vm__finish_job "$name" "${VM_JOB_START[$name]}" "$rc" "$note"
	fi
	return "$rc"
}

vm__check_job() {
	[ -n "${VM_JOB_PID[${1:-}]:-}" ] && return 0
	echo "guest-lib: no background job '${1:-}'" >&2
	return 1
}

# vm_join NAME SECS
#   Wait at most SECS for background job NAME to end, else kill it (FAIL).
#   Records the result; returns the job's status (non-zero if killed).
vm_join() {
	vm__check_job "$1" && vm__check_secs "$2" || return 2
	local note=""
	if ! vm__wait_until_dead "$1" "$2"; then
		note="KILLED: still running after join ${2}s"
		vm__kill_job "$1"
	fi
	vm__reap "$1" "$note" 0
}

# vm_stop NAME
#   Kill background job NAME if it still runs (a PASS: servers that never
#   exit on their own end this way); if it had ended, judge its status.
vm_stop() {
	vm__check_job "$1" || return 2
	local note=""
	if vm_alive "$1"; then
		note="stopped"
		vm__kill_job "$1"
	fi
	vm__reap "$1" "$note" 1
}

# vm_wait_port PORT SECS [NAME]
#   Wait until some process listens on TCP PORT (ss -ltn).  Returns 0 when
#   it does, 1 after SECS, 2 at once if background job NAME has ended.
vm_wait_port() {
	local port=$1 name=${3:-} deadline
	vm__check_secs "$2" || return 2
	vm__now_us
	deadline=$((VM__NOW + $2 * 1000000))
	while :; do
		[ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] || return 0
		if [ -n "$name" ] && ! vm_alive "$name"; then
			vm_say "waiting for port $port: job $name ended"
			return 2
		fi
		vm__now_us
		if [ "$VM__NOW" -ge "$deadline" ]; then
			vm_say "waiting for port $port: nothing listens after $2 s"
			return 1
		fi
		sleep 0.1
	done
}

# vm_wait_log NAME REGEX SECS
#   Wait until job NAME's log matches the extended REGEX.  Returns 0 when
#   it does, 1 after SECS, 2 if the job ended without printing it.
vm_wait_log() {
	local name=$1 re=$2 log=$VM_LOGS/$1.log deadline
	vm__check_secs "$3" || return 2
	vm__now_us
	deadline=$((VM__NOW + $3 * 1000000))
	while :; do
		! grep -Eq -- "$re" "$log" 2>/dev/null || return 0
		if ! vm_alive "$name"; then
			# it may have printed the line just before ending
			! grep -Eq -- "$re" "$log" 2>/dev/null || return 0
			vm_say "waiting for /$re/ in $name.log: the job ended"
			return 2
		fi
		vm__now_us
		if [ "$VM__NOW" -ge "$deadline" ]; then
			vm_say "waiting for /$re/ in $name.log: not there after $3 s"
			return 1
		fi
		sleep 0.1
	done
}

# vm_expect NAME REGEX [NOT_REGEX]
#   Judge job NAME by its output: its log must match REGEX and, if given,
#   must not match NOT_REGEX (extended regexes).  Records a row "NAME?".
#   Needed because dtest and dapltest exit 0 even when they failed.
vm_expect() {
	local name=$1 re=$2 bad=${3:-} log=$VM_LOGS/$1.log line
	if ! grep -Eq -- "$re" "$log" 2>/dev/null; then
		vm__record "$name?" FAIL - 0 "no /$re/ in $name.log"
		return 1
	fi
	if [ -n "$bad" ] && line=$(grep -Em1 -- "$bad" "$log"); then
		vm__record "$name?" FAIL - 0 "found /$bad/: ${line:0:120}"
		return 1
	fi
	vm__record "$name?" PASS - 0 "/$re/"
}

# vm_pair NAME SECS READY SERVER_CMD CLIENT_CMD [PASS_REGEX [FAIL_REGEX]]
#   A client/server test.  SERVER_CMD and CLIENT_CMD are bash command
#   strings (e.g. 'ona dtest ...' and 'onb dtest ...'), run as jobs
#   NAME.srv and NAME.cli with SECS each.  READY says when the server can
#   take a client:
#     port:N     TCP port N listens          log:REGEX  the server printed it
#     now        at once
#   (No "after N seconds": a busy guest makes any N too short.)
#   The client runs once the server is ready (waiting at most SECS); then the
#   server gets VM_PAIR_GRACE s to end (VM_PAIR_GRACE_FAILED if the client
#   failed) before it is killed.  With PASS_REGEX, both logs must match it
#   and not FAIL_REGEX.  Returns 0 if everything passed.
vm_pair() {
	vm__check_name "$1" && vm__check_secs "$2" || return 2
	local name=$1 secs=$2 ready=$3 server=$4 client=$5 pass=${6:-} bad=${7:-}
	local rc=0 client_rc=0 grace
	vm_bg "$name.srv" "$secs" bash -c "$server" || return 2
	case $ready in
	port:*) vm_wait_port "${ready#port:}" "$secs" "$name.srv" || rc=$? ;;
	log:*) vm_wait_log "$name.srv" "${ready#log:}" "$secs" || rc=$? ;;
	now) ;;
	*) echo "guest-lib: vm_pair: bad READY '$ready'" >&2; rc=2 ;;
	esac
	if [ "$rc" != 0 ]; then
		vm__record "$name.ready" FAIL "$rc" 0 "server not ready ($ready)"
		vm_join "$name.srv" 1 || true
		return 1
	fi
	vm_run "$name.cli" "$secs" bash -c "$client" || client_rc=$?
	grace=$VM_PAIR_GRACE
	[ "$client_rc" = 0 ] || grace=$VM_PAIR_GRACE_FAILED
	vm_join "$name.srv" "$grace" || rc=1
	[ "$client_rc" = 0 ] || rc=1
	if [ -n "$pass" ]; then
		vm_expect "$name.srv" "$pass" "$bad" || rc=1
		vm_expect "$name.cli" "$pass" "$bad" || rc=1
	fi
	return "$rc"
}

# vm_summary
#   Stop jobs nobody joined (a FAIL), print the results table and return
#   the number of failures (at most 100, so it cannot look like 124/125).
vm_summary() {
	local name verdict rc secs note failed=0 total=0 skipped=0
	local -a failed_names=()
	[ -z "${VM_HANG_WATCH_PID:-}" ] || kill "$VM_HANG_WATCH_PID" 2>/dev/null
	for name in "${!VM_JOB_PID[@]}"; do
		vm__kill_job "$name"
		vm__reap "$name" "never joined" 0 || true
	done
	echo "==================== ofxvm results ===================="
	printf '%-32s %-6s %5s %8s  %s\n' JOB RESULT RC SECONDS NOTE
	while IFS=$'\t' read -r name verdict rc secs note; do
		printf '%-32s %-6s %5s %8s  %s\n' "$name" "$verdict" "$rc" "$secs" "$note"
		total=$((total + 1))
		case $verdict in
		PASS) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)); failed_names+=("$name") ;;
		esac
	done <"$VM_RESULTS"
	# Again at the very end, with each log's tail: CI shows only the end
	# of a long run.
	for name in "${failed_names[@]}"; do
		echo "FAILED $name"
		[ ! -s "$VM_LOGS/${name%\?}.log" ] ||
			tail -n 12 "$VM_LOGS/${name%\?}.log" | cut -c1-160 | sed "s/^/    /"
	done
	echo "$((total - failed - skipped)) passed, $failed failed, $skipped skipped"
	[ "$failed" -le 100 ] || failed=100
	return "$failed"
}
