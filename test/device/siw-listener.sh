#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# siw-listener.sh: does a soft-iWARP listener survive connections that their
# peer closes before siw has accepted them?  Runs in an ofxvm guest on siw
# (test/device/suite.sh, section listener), with plain rdma_cm programs
# (rping), so what it shows is siw's, not libdaplofx's.
#
#     siw-listener.sh SERVER_IP PORT [ROUNDS]
#
# Stock siw (Linux 6.1 to 6.18) loses the listening socket here: a child
# connection still in the accept queue reports its peer's close to the
# listener's endpoint, whose PEER_CLOSE work then releases the listening
# socket (test/vm/build-siw, fix_listener 1).  To make "before siw accepted
# it" certain rather than lucky, real-time busy loops hold both guest CPUs
# while one of them connects and closes at once, so siw's CM work (a kernel
# worker) cannot run in between.  The listener must then still be there and
# serve an RDMA connection.
#
# Prints "ok listener survives N early closes" or "FAIL: ..."; exit 0 or 1.
# (OFXVM_SIW_STOCK=1 test/vm/ofxvm --platform siw -s this-script 192.0.2.2
# 51990 shows the bug on the unfixed module.)
set -u
ip=${1:?server ip} port=${2:?port} rounds=${3:-3}
out=${VM_LOGS:-/tmp}
srv_pid=

# progress lines with the time since the start, for a slow run's log
say() { echo "siw-listener: [${SECONDS}s] $*"; }

fail() {
	say "FAIL: $*"
	[ -z "$srv_pid" ] || kill "$srv_pid" 2>/dev/null
	exit 1
}

listening() { ss -Hltn "sport = :$port" | grep -q .; }

# one RDMA connection with two pings, bounded
rdma_client() {
	timeout 60 rping -c -a "$ip" -p "$port" -C 2 -v >"$out/siw-listener.client.$1.log" 2>&1
}

rping -s -P -a "$ip" -p "$port" >"$out/siw-listener.server.log" 2>&1 &
srv_pid=$!
for ((i = 0; i < 300; i++)); do
	listening && break
	kill -0 "$srv_pid" 2>/dev/null || fail "rping server exited: $(tail -n 3 "$out/siw-listener.server.log")"
	sleep 0.1
done
listening || fail "rping server not listening on port $port after 30 s"
say "rping server listening on $ip:$port"
rdma_client before || fail "rping before the early closes: $(tail -n 3 "$out/siw-listener.client.before.log")"

say "rping before the early closes: ok"
# the spin ends by the clock: a real-time loop must not outlive a hang
# shellcheck disable=SC2016 # expanded by the bash -c that runs it
spin='end=$((SECONDS + 2)); while [ "$SECONDS" -lt "$end" ]; do :; done'
for ((r = 1; r <= rounds; r++)); do
	chrt -f 50 taskset -c 1 bash -c "$spin" &
	hog=$!
	chrt -f 50 taskset -c 0 bash -c "exec 3<>/dev/tcp/$ip/$port && exec 3>&-; $spin" ||
		fail "round $r: the TCP connect to $ip:$port failed"
	wait "$hog"
	# Once the loops end, siw's CM work accepts the closed connection (no
	# MPA request: its endpoint drops it at the 5 s MPA timeout) and, on
	# the stock module, then releases the listener.  The closed socket's
	# end shows that both are done; then the listener must be there.
	deadline=$((SECONDS + 60))
	while ss -Htn state close-wait "sport = :$port" | grep -q .; do
		[ "$SECONDS" -lt "$deadline" ] || fail "round $r: the closed connection was never dropped"
		sleep 0.5
	done
	listening || fail "round $r: port $port stopped listening after a connection closed before siw accepted it"
	say "round $r: still listening"
done
rdma_client after || fail "rping after the early closes: $(tail -n 3 "$out/siw-listener.client.after.log")"
kill "$srv_pid" 2>/dev/null
wait "$srv_pid" 2>/dev/null
say "rping after the early closes: ok"
echo "ok listener survives $rounds early closes"
exit 0
