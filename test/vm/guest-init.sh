#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# guest-init.sh: PID 1 of an ofxvm guest, started by initramfs-init inside
# the overlay root.  It sets up the two RDMA hosts (soft-RoCE, or soft-iWARP
# with --platform siw), runs the command from /ofxvm/command under the time
# left, writes /out/ofxvm.rc and powers off.  ofxvm copies this file into
# the run's control folder (/ofxvm).
#
# Under TCG every process start costs ~50-100 ms, so the setup leans on
# shell built-ins, `ip -batch` and `rdma -b` rather than many commands.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
# shellcheck source=/dev/null  # written by ofxvm for this run
. /ofxvm/settings
PLATFORM=${OFXVM_PLATFORM:-rxe}

exec >>/out/ofxvm.log 2>&1 </dev/null

# The two hosts.  Both live in the initial network namespace: rxe in Linux
# 6.1 creates its UDP socket and looks up routes in init_net only, so rxe
# traffic between namespaces never arrives.  One platform per boot: rxe
# (rxea/rxeb) or siw (siwa/siwb), never both.
HOSTS=(hosta hostb)
declare -A IP=([hosta]=192.0.2.1 [hostb]=192.0.2.2)
declare -A PEER=([hosta]=hostb [hostb]=hosta)
declare -A NETDEV=([hosta]=va [hostb]=vb)
declare -A IBDEV=([hosta]=${PLATFORM}a [hostb]=${PLATFORM}b)
declare -A GID_INDEX=() LINK_LOCAL=()

log() {
	local up rest
	read -r up rest </proc/uptime
	printf 'ofxvm [%7s] %s\n' "$up" "$*"
}

power_off() {
	sync
	/bin/busybox poweroff -f
	# without busybox: ask the kernel directly
	echo o >/proc/sysrq-trigger
	sleep 60
}

# Record the status for the host and stop.  PID 1 must never just exit: the
# kernel would panic (which ends qemu too, but with a confusing console).
finish() {
	echo "$1" >/out/ofxvm.rc
	power_off
}

setup_failed() {
	log "SETUP FAILED: $*"
	ip -brief addr 2>&1
	rdma link 2>&1
	finish 125
}

mount_runtime_dirs() {
	mount -t tmpfs -o mode=0755 tmpfs /run
	mkdir -p /dev/shm /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t devpts devpts /dev/pts
	# what udev would link: bash's process substitution (<(...)) opens
	# /dev/fd/N, and without it fails (the hang watch's scan did, silently)
	ln -sfn /proc/self/fd /dev/fd
	ln -sf /proc/self/fd/0 /dev/stdin
	ln -sf /proc/self/fd/1 /dev/stdout
	ln -sf /proc/self/fd/2 /dev/stderr
	hostname ofxvm
	mkdir -p /etc/ofxvm
	cp /ofxvm/guest-lib.sh /etc/ofxvm/lib.sh
}

sysctl_set() { # KEY VALUE, written directly (no sysctl process)
	echo "$2" >"/proc/sys/${1//.//}"
}

# veth pair va/vb plus policy routing.  Both addresses are local, so the
# kernel would hand A->B traffic to lo; the rules below send it through the
# veth instead, so rxe really talks to rxe over the wire:
#   - packets arriving on va/vb are delivered locally (pref 10/11),
#   - packets from .1 to .2 leave through va (table 101), .2 to .1 through
#     vb (table 102) (pref 20/21),
#   - the local table, normally pref 0, moves behind them to pref 100.
# Receiving a packet from one's own address needs accept_local=1 and
# rp_filter=0.  IPv6 link-local gets the same treatment, since GID index 0
# is the link-local address (used by the socket-CM provider).
setup_network() {
	local k a=hosta b=hostb
	for k in all default; do
		sysctl_set "net.ipv4.conf.$k.accept_local" 1
		sysctl_set "net.ipv4.conf.$k.rp_filter" 0
		# no duplicate address detection: link-local usable at once
		sysctl_set "net.ipv6.conf.$k.accept_dad" 0
		sysctl_set "net.ipv6.conf.$k.router_solicitations" 0
	done
	ip -batch - <<-EOF || return 1
		link add ${NETDEV[$a]} mtu $OFXVM_MTU type veth peer name ${NETDEV[$b]} mtu $OFXVM_MTU
		addr add ${IP[$a]}/24 dev ${NETDEV[$a]}
		addr add ${IP[$b]}/24 dev ${NETDEV[$b]}
		link set ${NETDEV[$a]} up
		link set ${NETDEV[$b]} up
		rule add pref 100 lookup local
		rule del pref 0 lookup local
		rule add pref 10 iif ${NETDEV[$a]} lookup local
		rule add pref 11 iif ${NETDEV[$b]} lookup local
		route add ${IP[$b]}/32 dev ${NETDEV[$a]} src ${IP[$a]} table 101
		route add ${IP[$a]}/32 dev ${NETDEV[$b]} src ${IP[$b]} table 102
		rule add pref 20 from ${IP[$a]} to ${IP[$b]} lookup 101
		rule add pref 21 from ${IP[$b]} to ${IP[$a]} lookup 102
	EOF
	find_link_local_addresses || return 1
	ip -6 -batch - <<-EOF || return 1
		rule add pref 100 lookup local
		rule del pref 0 lookup local
		rule add pref 10 iif ${NETDEV[$a]} lookup local
		rule add pref 11 iif ${NETDEV[$b]} lookup local
		route add ${LINK_LOCAL[$b]}/128 dev ${NETDEV[$a]} table 101
		route add ${LINK_LOCAL[$a]}/128 dev ${NETDEV[$b]} table 102
		rule add pref 20 from ${LINK_LOCAL[$a]} to ${LINK_LOCAL[$b]} lookup 101
		rule add pref 21 from ${LINK_LOCAL[$b]} to ${LINK_LOCAL[$a]} lookup 102
	EOF
	printf '%s\t%s\n' "${IP[$a]}" "$a" "${IP[$b]}" "$b" >>/etc/hosts
}

# Fill LINK_LOCAL[] from /proc/net/if_inet6 (32 hex digits per address).
find_link_local_addresses() {
	local tries addr dev h
	for ((tries = 0; tries < 300; tries++)); do # 30 s: a busy host
		while read -r addr _ _ _ _ dev; do
			[[ $addr == fe80* ]] || continue
			for h in "${HOSTS[@]}"; do
				[ "$dev" != "${NETDEV[$h]}" ] ||
					LINK_LOCAL[$h]=${addr:0:4}:${addr:4:4}:${addr:8:4}:${addr:12:4}:${addr:16:4}:${addr:20:4}:${addr:24:4}:${addr:28:4}
			done
		done </proc/net/if_inet6
		[ -z "${LINK_LOCAL[hosta]:-}" ] || [ -z "${LINK_LOCAL[hostb]:-}" ] || return 0
		sleep 0.1
	done
	log "no IPv6 link-local address on va/vb"
	return 1
}

# Set GID_INDEX[HOST] to the index of the RoCE v2 GID that maps the host's
# IPv4 address (empty while rxe has not filled it in yet).
find_roce_v2_gid() { # HOST
	local h=$1 i gid type o1 o2 o3 o4 tail dir=/sys/class/infiniband/${IBDEV[$1]}/ports/1
	IFS=. read -r o1 o2 o3 o4 <<<"${IP[$h]}"
	printf -v tail '%02x%02x:%02x%02x' "$o1" "$o2" "$o3" "$o4"
	GID_INDEX[$h]=""
	for ((i = 0; i < 16; i++)); do
		gid="" type=""
		read -r gid 2>/dev/null <"$dir/gids/$i" || continue
		[[ $gid == *:ffff:$tail ]] || continue
		read -r type 2>/dev/null <"$dir/gid_attrs/types/$i"
		[ "$type" != "RoCE v2" ] || { GID_INDEX[$h]=$i; return 0; }
	done
}

# rxe and siw devices on va and vb (TYPE rxe|siw), then wait until each
# port is ACTIVE and, on rxe, has the RoCE v2 GID of its IPv4 address; both
# are filled in asynchronously.  siw has no RoCE GIDs (GID 0 is the MAC,
# rdma_cm goes by IP address), so its GID_INDEX is 0.  siw's kernel sockets
# bind the source address, so the policy routing carries its TCP over the
# veth too.
setup_soft_devices() { # TYPE
	local type=$1 h tries state
	rdma -b - <<-EOF || return 1
		link add ${IBDEV[hosta]} type $type netdev ${NETDEV[hosta]}
		link add ${IBDEV[hostb]} type $type netdev ${NETDEV[hostb]}
	EOF
	for h in "${HOSTS[@]}"; do
		GID_INDEX[$h]=0
		for ((tries = 0; tries < 300; tries++)); do # 30 s: a busy host
			[ "$type" != rxe ] || find_roce_v2_gid "$h"
			state=""
			read -r state <"/sys/class/infiniband/${IBDEV[$h]}/ports/1/state"
			[ -z "${GID_INDEX[$h]}" ] || [ "$state" != "4: ACTIVE" ] || break
			sleep 0.1
		done
		[ -n "${GID_INDEX[$h]}" ] || { log "no RoCE v2 GID for ${IP[$h]} on ${IBDEV[$h]}"; return 1; }
		[ "$state" = "4: ACTIVE" ] || { log "${IBDEV[$h]} port state: $state"; return 1; }
	done
}

# One dat.conf per host.  The same IA name means the local device on both
# hosts, as on a real cluster with one /etc/dat.conf: dtest and dtestcm
# clients replace their -P name with the server's, so per-host names would
# make the client open the server's device.  ofa-v2-dev is the stock
# rdma_cm provider on either platform; ofa-v2-rxe is its old name on rxe.
# The socket-CM provider (ofa-v2-scm) needs RoCE or IB GIDs: rxe only.
write_dat_conf() { # HOST
	local h=$1 dir=/etc/ofxvm/$1
	local ofa="libdaplofa.so.2 dapl.2.0 \"${NETDEV[$h]} 0\" \"\""
	mkdir -p "$dir"
	{
		echo "# ofxvm $h: ${IP[$h]}, netdev ${NETDEV[$h]}, rdma device ${IBDEV[$h]}"
		if [ "$PLATFORM" = rxe ]; then
			echo "ofa-v2-rxe u2.0 nonthreadsafe default $ofa"
			echo "ofa-v2-scm u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 \"${IBDEV[$h]} 1\" \"\""
		fi
		echo "ofa-v2-dev u2.0 nonthreadsafe default $ofa"
		if [ -r /ofxvm/dat.fragment ]; then
			echo "# from the -d fragment"
			sed -e "s|@NETDEV@|${NETDEV[$h]}|g" -e "s|@IBDEV@|${IBDEV[$h]}|g" \
				-e "s|@IP@|${IP[$h]}|g" -e "s|@HOST@|$h|g" /ofxvm/dat.fragment
		fi
	} >"$dir/dat.conf"
}

# Outside ona/onb: both hosts' entries, each IA name suffixed with -HOST.
write_common_dat_conf() {
	local h
	{
		echo "# ofxvm: the entries of both hosts, as NAME-hosta and NAME-hostb"
		for h in "${HOSTS[@]}"; do
			awk -v sfx="-$h" '/^[[:space:]]*(#|$)/ { next } { sub(/^[^[:space:]]+/, "&" sfx); print }' \
				"/etc/ofxvm/$h/dat.conf"
		done
	} >/etc/ofxvm/dat.conf
	# for programs that ignore DAT_OVERRIDE
	cp /etc/ofxvm/dat.conf /etc/dat.conf
}

# ona / onb: run a command as that host.  Executables (not functions) so
# that they work under timeout, stdbuf, env and bash -c.
write_host_wrapper() { # HOST
	local h=$1 p=${PEER[$1]}
	cat >"/etc/ofxvm/$h/env" <<-EOF
		export DAT_OVERRIDE=/etc/ofxvm/$h/dat.conf
		export OFXVM_HOST=$h OFXVM_IP=${IP[$h]} OFXVM_PEER=$p OFXVM_PEER_IP=${IP[$p]}
		export OFXVM_NETDEV=${NETDEV[$h]} OFXVM_IBDEV=${IBDEV[$h]} OFXVM_GID_INDEX=${GID_INDEX[$h]}
		export OFXVM_LINK_LOCAL=${LINK_LOCAL[$h]}
		export OFXVM_PLATFORM=$PLATFORM
	EOF
	[ "$PLATFORM" != rxe ] || cat >>"/etc/ofxvm/$h/env" <<-EOF
		# the stock socket-CM provider (ofa-v2-scm) needs these on RoCE
		export DAPL_SCM_NETDEV=${NETDEV[$h]} DAPL_GLOBAL_ROUTING=1
	EOF
	cat >"/usr/local/sbin/on${h#host}" <<-EOF
		#!/bin/sh
		# run a command as ofxvm host $h (${IP[$h]})
		[ \$# -gt 0 ] || { echo "usage: \${0##*/} CMD [ARG...]" >&2; exit 2; }
		. /etc/ofxvm/$h/env
		exec "\$@"
	EOF
	chmod 755 "/usr/local/sbin/on${h#host}"
}

write_common_env() {
	local h H
	{
		echo "export OFXVM_OUT=/out OFXVM_LIB=/etc/ofxvm/lib.sh"
		printf 'export OFXVM_HOST_OUT=%q OFXVM_KERNEL=%q\n' "$OFXVM_HOST_OUT" "$OFXVM_KERNEL"
		if [ "$OFXVM_RDMA" = 1 ]; then
			echo "export DAT_OVERRIDE=/etc/ofxvm/dat.conf OFXVM_PLATFORM=$PLATFORM"
			for h in "${HOSTS[@]}"; do
				H=${h#host}
				H=${H^^}
				echo "export OFXVM_${H}_IP=${IP[$h]} OFXVM_${H}_NETDEV=${NETDEV[$h]}" \
					"OFXVM_${H}_IBDEV=${IBDEV[$h]} OFXVM_${H}_GID_INDEX=${GID_INDEX[$h]}"
			done
		fi
	} >/etc/ofxvm/env
}

setup_rdma() {
	if [ "$PLATFORM" = siw ]; then
		# siw.ko is built out of tree (Debian's kernel lacks it): load what
		# it needs, then the module itself
		modprobe -a ib_core libcrc32c crc32c_generic iw_cm rdma_cm rdma_ucm ib_uverbs veth ||
			setup_failed "modprobe"
		insmod "$OFXVM_SIW_KO" || setup_failed "insmod $OFXVM_SIW_KO"
	else
		modprobe -a veth rdma_rxe ib_uverbs rdma_ucm || setup_failed "modprobe"
	fi
	setup_network || setup_failed "network"
	setup_soft_devices "$PLATFORM" || setup_failed "$PLATFORM devices"
	local h
	for h in "${HOSTS[@]}"; do
		write_dat_conf "$h"
		write_host_wrapper "$h"
	done
	write_common_dat_conf
	log "rdma ready: hosta ${IP[hosta]} va ${IBDEV[hosta]} (gid ${GID_INDEX[hosta]})" \
		"<-> hostb ${IP[hostb]} vb ${IBDEV[hostb]} (gid ${GID_INDEX[hostb]}), mtu $OFXVM_MTU"
}

# The command gets the overall limit minus the time since the kernel
# started and a margin for what came before and what comes after.
run_command() {
	local up rest secs rc=0
	read -r up rest </proc/uptime
	secs=$((OFXVM_TOTAL_SECS - ${up%.*} - OFXVM_MARGIN_SECS))
	[ "$secs" -ge 5 ] || secs=5
	# shellcheck source=/dev/null
	. /etc/ofxvm/env
	# shellcheck source=/dev/null
	. /ofxvm/user-env
	export OFXVM_TIMEOUT=$secs
	ulimit -l unlimited
	ulimit -c 0
	cd "$OFXVM_WORKDIR" || { log "cannot cd to $OFXVM_WORKDIR"; finish 125; }
	log "running the command (limit ${secs}s)"
	echo "$up" >/out/ofxvm.started
	timeout -k 5 "$secs" /ofxvm/command || rc=$?
	if [ "$rc" = 124 ]; then
		log "command TIMED OUT after ${secs}s"
	else
		log "command exited with status $rc"
	fi
	finish "$rc"
}

log "guest up, kernel $(uname -r)"
mount_runtime_dirs
ip link set lo up
[ "$OFXVM_RDMA" != 1 ] || setup_rdma
write_common_env
run_command
