#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# stock-selftest.sh: prove the test bed with Debian's stock uDAPL provider
# (libdaplofa, IA ofa-v2-dev) before blaming libdaplofx for anything.  It
# works on both platforms:
#
#     test/vm/ofxvm -t 300 -s test/vm/stock-selftest.sh                  # rxe
#     test/vm/ofxvm --platform siw -t 300 -s test/vm/stock-selftest.sh   # siw
#
# Exit status: the number of failed jobs and checks (0 = all passed).
# shellcheck source=guest-lib.sh
. "${OFXVM_LIB:-/etc/ofxvm/lib.sh}"

A=${OFXVM_A_IP:-192.0.2.1}
IA=ofa-v2-dev

# the devices are what the platform says: RoCE shows as InfiniBand transport
case ${OFXVM_PLATFORM:-rxe} in
siw) transport=iWARP ;;
*) transport=InfiniBand ;;
esac
vm_run devinfo 30 ona ibv_devinfo -d "${OFXVM_A_IBDEV:-rxea}"
vm_expect devinfo "transport:[[:space:]]+$transport" 'PORT_DOWN'

# dtest: the server listens on its TCP side channel (15828) only after
# opening its IA, which takes seconds under TCG, and the client does not
# retry, so wait for the port.  dtest exits 0 even when it FAILED.
vm_pair dtest 120 port:15828 \
	"ona dtest -P $IA -b 65536 -B 200" \
	"onb dtest -P $IA -h $A -b 65536 -B 200" \
	'DAPL Test Complete\. PASSED' 'FAILED|ERR'

# dapltest: one server, a transaction test, then the quit command.  Its
# exit status is a truncated DAT_RETURN, so judge the output.  The client
# says "End of Work" even after a bad connection event: "Total Time" is
# printed only when the transactions really ran.
if vm_bg dapl.srv 180 ona dapltest -T S -D $IA &&
	vm_wait_log dapl.srv 'Service Point Ready' 60; then
	vm_run dapl.T 120 onb dapltest -T T -s "$A" -D $IA -i 1000 -t 1 -w 1 \
		client SR 256 server SR 256
	vm_expect dapl.T 'End of Work -- Client Exiting' 'Test Error|bad connection event|FAIL'
	vm_expect dapl.T 'Total Time'
	vm_run dapl.Q 60 onb dapltest -T Q -s "$A" -D $IA
fi
vm_join dapl.srv 20
vm_expect dapl.srv 'Service Point Ready' 'Test Error|bad connection event'

vm_summary
