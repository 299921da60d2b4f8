#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# vm-deb-check.sh: the Debian packages in the ofxvm guest (issue 16), where
# RDMA devices exist: dpkg -i the .debs that test/pkg/test-deb built, check
# that the postinst registered the guest's netdevs in /etc/dat.conf and that
# stock dtest finds the provider there with no DAT_OVERRIDE, then purge and
# check /etc/dat.conf is byte for byte what it was before.
#
# Run from the host, the tree shared read-write at its own path (the .debs
# are in its build-deb/ after test/pkg/test-deb):
#   test/vm/ofxvm -B "$PWD" -o /tmp/vm-deb -s test/pkg/vm-deb-check.sh "$PWD/build-deb"
# (--platform siw for soft-iWARP).  The guest's / is an overlay in RAM, so
# dpkg -i/-P there leave the host alone.  Exit status: number of failures.
# shellcheck source=../vm/guest-lib.sh
. "${OFXVM_LIB:-/etc/ofxvm/lib.sh}"

DEBS=${1:-${OFX_TOP_SRCDIR:-$PWD}/build-deb}
A=${OFXVM_A_IP:-192.0.2.1}
NA=${OFXVM_A_NETDEV:-va}
NB=${OFXVM_B_NETDEV:-vb}
DTEST_PASS='DAPL Test Complete\. PASSED'
DTEST_FAIL='FAILED|ERR:|Error'
BEFORE=$VM_LOGS/dat.conf.before

# stock programs on a host as /etc/dat.conf alone configures them: ona/onb
# set DAT_OVERRIDE to the host's own file, so it is dropped inside them
plain() { # HOST CMD...
	local host=$1
	shift
	echo "$host env -u DAT_OVERRIDE $*"
}

mkdir -p "$VM_LOGS"
set -- "$DEBS"/libdaplofx2_*.deb "$DEBS"/libdaplofx-utils_*.deb
if [ ! -e "$1" ] || [ ! -e "$2" ]; then
	vm_say "no .debs in $DEBS: run test/pkg/test-deb first"
	exit 1
fi
cp -p /etc/dat.conf "$BEFORE"

# man-db's trigger rebuilds its whole index: minutes under TCG, and nothing
# here reads it (the overlay root goes with the VM)
rm -f /var/lib/man-db/auto-update
vm_run deb.install 300 dpkg -i "$@"
vm_expect deb.install 'Setting up libdaplofx2' 'dpkg: error|could not add'
# the guest has both hosts' devices: detect adds one entry per netdev
vm_run deb.entries 10 grep -E "^ofx-v2-($NA|$NB) " /etc/dat.conf
vm_expect deb.entries "^ofx-v2-$NA .*\"$NA 0\"" 'tos='
vm_expect deb.entries "^ofx-v2-$NB .*\"$NB 0\""
vm_run deb.others-untouched 10 bash -c \
	"diff '$BEFORE' /etc/dat.conf | grep '^[<>]' | grep -v '^> ofx-v2-' && exit 1; exit 0"
cp -p /etc/dat.conf "$VM_LOGS/dat.conf.installed"
vm_run deb.reconfigure 60 dpkg-reconfigure libdaplofx2
vm_run deb.idempotent 10 cmp "$VM_LOGS/dat.conf.installed" /etc/dat.conf

# as the issue asks: the same /etc/dat.conf line on both hosts (the guest's
# hosts share one kernel and one /etc/dat.conf, so ofx-v2-$NA names A's
# netdev for both), then B through its own netdev's entry, A to B over the veth
vm_pair deb.dtest 180 port:15828 \
	"$(plain ona dtest -P "ofx-v2-$NA" -s)" "$(plain onb dtest -P "ofx-v2-$NA" -h "$A")" \
	"$DTEST_PASS" "$DTEST_FAIL"
vm_pair deb.dtest-ab 180 port:15828 \
	"$(plain ona dtest -P "ofx-v2-$NA" -s)" "$(plain onb dtest -P "ofx-v2-$NB" -h "$A")" \
	"$DTEST_PASS" "$DTEST_FAIL"

vm_run deb.purge 120 dpkg -P libdaplofx2 libdaplofx-utils
vm_run deb.restored 10 cmp "$BEFORE" /etc/dat.conf
vm_run deb.state-gone 10 test ! -e /var/lib/libdaplofx

vm_summary
exit $?
