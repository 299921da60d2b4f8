#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# test_mpa_first_fpdu.sh: checks mpa_first_fpdu's verdicts and exit codes on
# synthetic captures written by mkpcap, so no iWARP device is needed.
#
# Builds both programs with gcc in a temporary directory unless MPA_TOOL
# and MKPCAP name prebuilt binaries. MPA_VALGRIND=1 runs every
# mpa_first_fpdu invocation under valgrind memcheck (an error turns into
# exit code 99, which no check accepts); the cut and fuzz loops then run
# fewer cases (MPA_CUT_STEP, MPA_FUZZ_ITERS).
# Exit status: 0 all checks passed, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mpa_wire.XXXXXX")
trap 'rm -rf "$work"' EXIT

CC=${CC:-gcc}
CFLAGS="-std=gnu11 -Wall -Wextra -Werror -O2"
if [ -z "${MPA_TOOL:-}" ]; then
	MPA_TOOL=$work/mpa_first_fpdu
	# shellcheck disable=SC2086
	$CC $CFLAGS -o "$MPA_TOOL" "$here/mpa_first_fpdu.c" || exit 1
fi
if [ -z "${MKPCAP:-}" ]; then
	MKPCAP=$work/mkpcap
	# shellcheck disable=SC2086
	$CC $CFLAGS -o "$MKPCAP" "$here/mkpcap.c" || exit 1
fi
VG=()
if [ "${MPA_VALGRIND:-0}" = 1 ]; then
	VG=(valgrind -q --error-exitcode=99 --leak-check=full
	    --errors-for-leak-kinds=all)
fi

checks=0
failed=0
out=
err=
rc=

pass() { checks=$((checks + 1)); echo "ok $checks - $1"; }
fail() {
	local l
	checks=$((checks + 1)); failed=$((failed + 1))
	echo "not ok $checks - $1"
	while IFS= read -r l; do echo "#   out: $l"; done <<<"$out"
	while IFS= read -r l; do echo "#   err: $l"; done <<<"$err"
}

# said DESCRIPTION REGEX: the last run's stderr matches
said() {
	if grep -Eq -- "$2" <<<"$err"; then pass "$1"; else fail "$1"; fi
}

# mk NAME: the script on stdin becomes $work/NAME.pcap
mk() {
	if ! "$MKPCAP" "$work/$1.pcap" >"$work/mk.err" 2>&1; then
		echo "# mkpcap failed for $1:"; sed 's/^/#   /' "$work/mk.err"
		exit 1
	fi
}

# run PCAP ARGS...: the tool's stdout, stderr and exit code go to out/err/rc
run() {
	local f=$1
	shift
	[ -f "$f" ] || f=$work/$f.pcap
	out=$("${VG[@]}" "$MPA_TOOL" "$@" "$f" 2>"$work/err")
	rc=$?
	err=$(cat "$work/err")
}

# want RC DESCRIPTION [EXTENDED-REGEX...]: exit code and one line per regex
want() {
	local code=$1 what=$2 re
	shift 2
	if [ "$rc" != "$code" ]; then
		fail "$what (exit $rc, wanted $code)"
		return
	fi
	for re in "$@"; do
		if ! grep -Eq -- "$re" <<<"$out"; then
			fail "$what (no line matches '$re')"
			return
		fi
	done
	pass "$what"
}

# refuse DESCRIPTION REGEX: no output line may match
refuse() {
	if grep -Eq -- "$2" <<<"$out"; then
		fail "$1 (a line matches '$2')"
	else
		pass "$1"
	fi
}

# the MPA start-up of connection $1 (client $2, server $3); $4 and $5 are
# extra options of the request and of the reply
mpa_start() {
	cat <<-EOF
	conn $1 $2 $3 ${6:-}
	handshake $1
	mpa $1 c2s req $4
	push $1 c2s
	mpa $1 s2c rep $5
	push $1 s2c
	EOF
}

A=192.0.2.2:34567
P=192.0.2.1:4791

basic_script() {
	mpa_start 0 $A $P "rev=1 flags=C pd=56" "rev=1 flags=C pd=60"
	cat <<-EOF
	fpdu 0 c2s send len=0
	push 0 c2s
	fpdu 0 s2c send len=64
	push 0 s2c
	EOF
}

t_basic() {
	basic_script | mk basic
	run basic
	want 0 "active sends a zero-length send first" \
		"^conn id=0 $A -> $P active=$A passive=$P tcp_client=$A mpa_rev=1 " \
		"^conn .* markers=0 crc=1 reject=0 .*req_pdata=56 .*rep_pdata=60" \
		"^first_fpdu conn=0 from=active found=1 frame=6 ulpdu=18 tagged=0 last=1 ddp_ver=1 rdmap_ver=1 opcode=3\(send\) hdr=18 payload=0 " \
		"^first_fpdu_by conn=0 side=active found=1 .*opcode=3\(send\) .*payload=0 " \
		"^first_fpdu_by conn=0 side=passive found=1 frame=7 ulpdu=82 .*payload=64 .*complete=1" \
		"^summary records=7 tcp_segments=7 .*tcp_conns=1 mpa_conns=1 truncated=0"
	run basic --expect-first active:send:0
	want 0 "--expect-first active:send:0 holds" \
		"^expect conn=0 kind=first want=active:send:0 got=active:send:0 result=pass"
	run basic --expect-first passive
	want 3 "--expect-first passive fails with exit 3" \
		"result=fail"
	run basic --expect-first active:write:0
	want 3 "--expect-first active:write:0 fails on a send"
	run basic --expect-first any:send --expect-by passive:send:64 --expect-by active:3:0
	want 0 "--expect-by checks each side's first FPDU" \
		"kind=by want=passive:send:64 got=passive:send:64 result=pass"
	run basic --expect-by passive:send:0
	want 3 "--expect-by catches a wrong payload length"
}

t_passive_first() {
	{
		mpa_start 0 $A $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 s2c send len=64
		push 0 s2c
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk passive
	run passive --expect-first passive:send:64
	want 0 "passive sends 64 octets first" \
		"^first_fpdu conn=0 from=passive .*ulpdu=82 .*opcode=3\(send\) hdr=18 payload=64 "
	run passive --expect-first active
	want 3 "--expect-first active fails when passive spoke first" \
		"got=passive:send:64 result=fail"
}

t_out_of_order() {
	{
		cat <<-EOF
		conn 0 $A $P
		handshake 0
		mpa 0 c2s req flags=C pd=56
		seg 0 c2s 40 36
		seg 0 c2s 0 40
		mpa 0 s2c rep flags=C pd=60
		seg 0 s2c 50 30
		seg 0 s2c 10 40
		seg 0 s2c 0 10
		fpdu 0 c2s send len=0
		fpdu 0 s2c send len=64
		seg 0 c2s 86 14
		push 0 s2c
		seg 0 c2s 76 10
		EOF
	} | mk ooo
	run ooo
	# the active FPDU's tail came before the passive FPDU, its head after
	want 0 "out-of-order segments reassemble; the FPDU head decides the order" \
		"^conn .*req_pdata=56 .*rep_pdata=60" \
		"^first_fpdu conn=0 from=passive found=1 frame=10 .*payload=64" \
		"^first_fpdu_by conn=0 side=active found=1 frame=11 ulpdu=18 .*opcode=3\(send\) .*payload=0 .*complete=1"
}

t_retransmit() {
	{
		mpa_start 0 $A $P "flags=C pd=56" "flags=C pd=60"
		cat <<-EOF
		seg 0 c2s 0 76
		seg 0 s2c 0 30
		fpdu 0 c2s send len=0
		push 0 c2s
		fpdu 0 s2c send len=64
		push 0 s2c
		seg 0 c2s 76 24
		seg 0 c2s 70 30
		EOF
	} | mk retrans
	run retrans --expect-first active:send:0
	want 0 "retransmissions keep the first copy and its frame" \
		"^first_fpdu conn=0 from=active found=1 frame=8 " \
		"^first_fpdu_by conn=0 side=passive found=1 frame=9 "
	refuse "identical retransmissions are not a mismatch" "retransmission_mismatch"

	# a retransmission whose octets differ: the first copy still wins
	{
		mpa_start 0 $A $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 c2s send len=0
		push 0 c2s
		poke 0 c2s 23 0
		seg 0 c2s 20 24
		EOF
	} | mk retrans_mix
	run retrans_mix --expect-first active:send:0
	want 0 "a conflicting retransmission is flagged, the first copy wins" \
		"^conn .*note=retransmission_mismatch" \
		"^first_fpdu conn=0 from=active .*opcode=3\(send\)"
}

t_crc() {
	# with CRC the FPDU ends 4 octets later: drop those and it is incomplete
	{
		mpa_start 0 $A $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 c2s send len=0
		seg 0 c2s 20 20
		EOF
	} | mk crc_short
	run crc_short
	want 0 "crc=1: an FPDU without its CRC octets is incomplete" \
		"^conn .*markers=0 crc=1 " \
		"^first_fpdu conn=0 from=active found=1 .*payload=0 .*marker=0 complete=0"
	{
		mpa_start 0 $A $P "flags=none" "flags=none"
		cat <<-EOF
		fpdu 0 c2s send len=0
		seg 0 c2s 20 20
		fpdu 0 s2c send_se len=5
		push 0 s2c
		EOF
	} | mk crc_off
	run crc_off --expect-first active:send:0 --expect-by passive:send_se:5
	want 0 "crc=0: the same octets make a complete FPDU" \
		"^conn .*req_flags=0x00\(none\) rep_flags=0x00\(none\) markers=0 crc=0 " \
		"^first_fpdu conn=0 from=active .*complete=1" \
		"^first_fpdu_by conn=0 side=passive .*ulpdu=23 .*opcode=5\(send_se\) .*payload=5 .*complete=1"
	{
		mpa_start 0 $A $P "flags=C" "flags=none"
		cat <<-EOF
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk crc_one
	run crc_one
	want 0 "crc is on when either frame asks for it" "^conn .*crc=1 "
}

t_truncated() {
	local f=$work/basic.pcap size n bad=0 crash=0 step=${MPA_CUT_STEP:-1}
	[ ${#VG[@]} -gt 0 ] && step=${MPA_CUT_STEP:-7}
	basic_script | mk basic
	size=$(stat -c %s "$f")

	head -c 20 "$f" >"$work/t_hdr.pcap"
	run t_hdr
	want 2 "a file cut inside its header is bad input"
	head -c $((size - 30)) "$f" >"$work/t_tail.pcap"
	run t_tail --expect-first active:send:0
	want 0 "a file cut in its last record still yields the earlier FPDU" \
		"^first_fpdu conn=0 from=active found=1 " \
		"^first_fpdu_by conn=0 side=passive found=0 reason=" \
		"truncated=1"
	said "truncation is reported on stderr" "truncated"
	run t_tail --strict
	want 2 "--strict makes a truncated file bad input"
	# records 1-5: handshake and both MPA frames, no FPDU yet
	head -c $((24 + 3 * (16 + 54) + (16 + 130) + (16 + 134))) "$f" >"$work/t_mpa.pcap"
	run t_mpa
	want 0 "a capture that ends after MPA reports no FPDU" \
		"^first_fpdu conn=0 found=0 reason=no_fpdu_after_mpa" \
		"^first_fpdu_by conn=0 side=active found=0 reason=no_data"
	run t_mpa --expect-first active
	want 3 "no FPDU means the expectation fails"
	# every possible cut: exit 0, 1 or 2 and never a crash
	for ((n = 0; n < size; n += step)); do
		head -c $n "$f" >"$work/cut.pcap"
		run cut -q
		case $rc in
		0 | 1 | 2) ;;
		*) crash=$((crash + 1)) ;;
		esac
		[ "$n" -ge 24 ] && [ "$rc" = 2 ] && bad=$((bad + 1))
	done
	if [ $crash = 0 ] && [ $bad = 0 ]; then
		pass "cuts of a $size-octet capture (every ${step}th) exit 0/1/2, no crash"
	else
		out="crashes=$crash, exit 2 after the header=$bad"
		fail "cuts of a capture"
	fi
}

t_snaplen() {
	{
		echo "snaplen 96"
		basic_script
	} | mk snap
	# 96 - 54 octets of headers leaves 42 of each payload
	run snap --expect-first active:send:0
	want 0 "short snaplen: partial private data, FPDU still decoded" \
		"^conn .*req_pdata=56\(partial\) .*rep_pdata=60\(partial\)" \
		"^first_fpdu conn=0 from=active found=1 .*payload=0 " \
		"^first_fpdu_by conn=0 side=passive found=1 frame=7 ulpdu=82 .*payload=64 .*complete=0"
	{
		echo "snaplen 60"
		basic_script
	} | mk snap_tiny
	run snap_tiny
	want 1 "a snaplen that hides the MPA key finds nothing" "mpa_conns=0"
}

t_non_mpa() {
	{
		cat <<-EOF
		conn 1 192.0.2.2:40000 192.0.2.1:9000
		handshake 1
		text 1 c2s hello dtest socket
		push 1 c2s
		text 1 s2c MPA ID is not at the start
		push 1 s2c
		noise
		EOF
		basic_script
		cat <<-EOF
		text 1 c2s bye
		push 1 c2s
		ack 1 s2c
		EOF
	} | mk beside
	run beside --expect-conns 1 --expect-first active:send:0
	want 0 "a plain TCP connection beside the MPA one is not reported" \
		"^conn id=0 $A -> $P " \
		"^expect kind=conns want=1 got=1 result=pass" \
		"tcp_conns=2 mpa_conns=1"
	refuse "the plain connection has no conn line" "^conn .*:9000"
	{
		cat <<-EOF
		conn 1 192.0.2.2:40000 192.0.2.1:9000
		handshake 1
		text 1 c2s hello
		push 1 c2s
		EOF
	} | mk plain
	run plain
	want 1 "a capture without MPA exits 1" "mpa_conns=0"
}

t_links() {
	local spec name
	# pad=1: the 6 padding octets of a short frame are not TCP data
	for spec in "en10mb vlan=100|us le" "en10mb pad=1|us le" "sll|us le" \
		"sll2|ns le" "raw|us be" "en10mb|ns be"; do
		name=link_$(tr -c 'a-z0-9' _ <<<"$spec")
		{
			echo "link ${spec%%|*}"
			echo "format ${spec##*|}"
			basic_script
		} | mk "$name"
		run "$name" --expect-first active:send:0 --expect-by passive:send:64
		want 0 "link ${spec%%|*}, format ${spec##*|}" "mpa_conns=1"
	done
	{
		echo "link user0"
		basic_script
	} | mk link_user0
	run link_user0
	want 2 "an unknown link type is bad input"
	said "the link type is named in the message" "unsupported link type 147"
}

t_rtr() {
	{
		mpa_start 0 $A $P "rev=2 flags=C pd=12 ird=8 ord=4 p2p=1 rtr=write,read" \
			"rev=2 flags=C pd=8 ird=4 ord=8 p2p=1 rtr=write"
		cat <<-EOF
		fpdu 0 c2s write len=0
		push 0 c2s
		fpdu 0 s2c send len=16
		push 0 s2c
		EOF
	} | mk rtr_write
	run rtr_write --expect-first active:write:0
	want 0 "rev 2 peer-to-peer: a zero-length RDMA write RTR first" \
		"^conn .*mpa_rev=2 req_flags=0x50\(CS\) rep_flags=0x50\(CS\) " \
		"^conn .*req_rev=2 req_pdata=12 .*req_enh=1 req_ird=8 req_ord=4 req_p2p=1 req_rtr=write,read " \
		"^conn .*rep_enh=1 rep_ird=4 rep_ord=8 rep_p2p=1 rep_rtr=write" \
		"^first_fpdu conn=0 from=active found=1 frame=6 ulpdu=14 tagged=1 last=1 ddp_ver=1 rdmap_ver=1 opcode=0\(write\) hdr=14 payload=0 stag=0x"
	run rtr_write --expect-first active:send:0
	want 3 "a write RTR is not a send"
	{
		mpa_start 0 $A $P "rev=2 flags=C p2p=1 rtr=read" "rev=2 flags=C p2p=1 rtr=read"
		cat <<-EOF
		fpdu 0 c2s read_req rsize=0
		push 0 c2s
		EOF
	} | mk rtr_read
	{
		mpa_start 0 $A $P "rev=2 flags=C p2p=1 rtr=read" "rev=2 flags=C p2p=1 rtr=read"
		cat <<-EOF
		fpdu 0 c2s read_req rsize=0
		seg 0 c2s 24 6
		EOF
	} | mk rtr_read_snap
	# only the length field, the DDP/RDMAP control octets and 2 more
	run rtr_read_snap --expect-first active:read_req:0
	want 0 "a read request whose header was cut off still has payload 0" \
		"^first_fpdu conn=0 from=active found=1 frame=6 ulpdu=46 .*opcode=1\(read_req\) hdr=18 rreq_body=28 payload=0 .*note=header_not_captured"
	run rtr_read --expect-first active:read_req:0 --expect-first active:read:0
	want 0 "a zero-length read request RTR: its 28-octet body is not payload" \
		"^first_fpdu conn=0 from=active found=1 frame=6 ulpdu=46 tagged=0 .*opcode=1\(read_req\) hdr=18 rreq_body=28 payload=0 qn=1 .*read_size=0 .*note=read_request_body_is_not_payload"
	{
		mpa_start 0 $A $P "rev=2 flags=C p2p=1 rtr=send" "rev=2 flags=C p2p=1 rtr=send"
		cat <<-EOF
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk rtr_send
	run rtr_send --expect-first active:send:0
	want 0 "a zero-length send RTR" "req_rtr=send " "rep_rtr=send"
	{
		mpa_start 0 $A $P "rev=2 flags=C pd=8" "rev=2 flags=C"
		cat <<-EOF
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk rev2_plain
	run rev2_plain
	want 0 "rev 2 without the S flag has no IRD/ORD data" "req_enh=0 " "rep_enh=0"
}

t_markers() {
	{
		mpa_start 0 $A $P "flags=MC" "flags=MC"
		cat <<-EOF
		markers 0 c2s
		markers 0 s2c
		fpdu 0 c2s send len=1200
		push 0 c2s
		fpdu 0 s2c send len=0
		push 0 s2c
		EOF
	} | mk markers
	run markers --expect-first active:send:1200 --expect-by passive:send:0
	want 0 "markers: skipped before and inside the FPDU" \
		"^conn .*req_flags=0xc0\(MC\) .*markers=1 crc=1 " \
		"^first_fpdu conn=0 from=active .*ulpdu=1218 .*payload=1200 .*marker=1 complete=1" \
		"^first_fpdu_by conn=0 side=passive .*ulpdu=18 .*marker=1 complete=1"
	{
		mpa_start 0 $A $P "flags=MC" "flags=C"
		cat <<-EOF
		fpdu 0 c2s send len=0
		push 0 c2s
		EOF
	} | mk markers_missing
	run markers_missing
	want 0 "markers negotiated but absent: decoded plainly and said so" \
		"^first_fpdu conn=0 from=active .*payload=0 .*marker=0 .*note=markers_negotiated_but_none_at_fpdu_start"
}

t_isn_wrap() {
	{
		mpa_start 0 $A $P "flags=C pd=56" "flags=C pd=60" \
			"isn_c=0xffffffd0 isn_s=0xffffffff"
		cat <<-EOF
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk wrap
	run wrap --expect-first active:send:0
	want 0 "sequence numbers that wrap inside the MPA frame" "req_pdata=56 "
}

t_no_syn() {
	{
		cat <<-EOF
		conn 0 $A $P
		mpa 0 c2s req flags=C pd=56
		mpa 0 s2c rep flags=C pd=60
		seg 0 c2s 30 46
		seg 0 c2s 0 30
		push 0 s2c
		fpdu 0 s2c send len=8
		push 0 s2c
		EOF
	} | mk nosyn
	run nosyn --expect-first passive:send:8
	want 0 "no handshake captured, first segment late: origin found anyway" \
		"tcp_client=unknown" "req_pdata=56 "
}

t_ipv6() {
	{
		mpa_start 0 "[2001:db8::2]:34567" "[2001:db8::1]:4791" "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 c2s send
		push 0 c2s
		EOF
	} | mk v6
	run v6 --expect-first active:send:0
	want 0 "ipv6 endpoints" "^conn id=0 \[2001:db8::2\]:34567 -> \[2001:db8::1\]:4791 "
}

t_reject() {
	{
		mpa_start 0 $A $P "flags=C pd=4" "flags=CR pd=16"
		cat <<-EOF
		fpdu 0 s2c terminate
		push 0 s2c
		EOF
	} | mk reject
	run reject --expect-first passive:terminate
	want 0 "a rejected connection with a terminate" "^conn .*reject=1 " \
		"^first_fpdu conn=0 from=passive .*opcode=7\(terminate\) .*qn=2 .*term_layer=0 term_etype=0 term_ecode=0x01"
	run reject --expect-first active
	want 3 "nothing from the active side after a reject"
}

t_malformed_fpdu() {
	{
		mpa_start 0 $A $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 c2s send ulpdu=10
		push 0 c2s
		fpdu 0 s2c send tagged=1
		push 0 s2c
		EOF
	} | mk malformed
	run malformed --expect-first active:send
	want 0 "a ULPDU shorter than its header still names the opcode" \
		"payload=invalid .*note=ulpdu_shorter_than_headers" \
		"^first_fpdu_by conn=0 side=passive .*tagged=1 .*note=tagged_bit_does_not_fit_opcode"
	run malformed --expect-first active:send:0
	want 3 "an invalid payload matches no length"
	{
		mpa_start 0 $A $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 0 c2s 9 len=2
		push 0 c2s
		EOF
	} | mk opcode9
	run opcode9 --expect-first active:9:2
	want 0 "an opcode beyond RFC 5040's eight is shown by number" \
		"^first_fpdu conn=0 .*opcode=9\(unknown\) hdr=18 payload=2 "
}

t_many_conns() {
	{
		basic_script
		mpa_start 1 192.0.2.2:34568 $P "flags=C" "flags=C"
		cat <<-EOF
		fpdu 1 s2c send len=4
		push 1 s2c
		EOF
		# port reuse: the same 4-tuple again, with new ISNs
		mpa_start 2 $A $P "flags=C" "flags=C" "isn_c=77 isn_s=99"
		cat <<-EOF
		fpdu 2 c2s read_req rsize=64
		push 2 c2s
		EOF
	} | mk many
	run many --expect-conns 3
	want 0 "three MPA connections, one of them a reused 4-tuple" \
		"^first_fpdu conn=0 from=active .*opcode=3\(send\)" \
		"^first_fpdu conn=1 from=passive .*payload=4 " \
		"^conn id=2 $A -> $P .*req_frame=" \
		"^first_fpdu conn=2 from=active .*opcode=1\(read_req\) .*read_size=64"
	run many --expect-first active
	want 3 "one connection out of three breaks the expectation" \
		"^expect conn=0 kind=first .*result=pass" \
		"^expect conn=1 kind=first .*got=passive:send:4 result=fail"
}

t_bad_input() {
	: >"$work/empty.pcap"
	run empty
	want 2 "an empty file is bad input"
	echo "this is not a capture at all, just text" >"$work/text.pcap"
	run text
	want 2 "a text file is bad input"
	printf '\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a' >"$work/ng.pcap"
	head -c 40 /dev/zero >>"$work/ng.pcap"
	run ng
	want 2 "pcapng is refused"
	said "the pcapng message says so" "pcapng is not supported"
	run "$work/does_not_exist"
	want 2 "a missing file is bad input"
	basic_script | mk basic
	run basic --expect-first sideways
	want 2 "a bad expectation is a usage error"
	run basic --expect-first active::0
	want 2 "an empty opcode field is a usage error"
	run basic --expect-by any:send
	want 2 "--expect-by needs a side"
	run basic --bogus
	want 2 "an unknown option is a usage error"
	# a record header that claims 1 GiB
	{ head -c 24 "$work/basic.pcap"; printf '\0\0\0\0\0\0\0\0\0\0\0\x40\0\0\0\x40'; } \
		>"$work/huge.pcap"
	run huge
	want 1 "an implausible record length stops reading, no crash" "truncated=1"
}

# random corruption of valid captures: any verdict, never a crash
t_fuzz() {
	local iters=${MPA_FUZZ_ITERS:-300} i k size off crash=0 f
	[ ${#VG[@]} -gt 0 ] && iters=${MPA_FUZZ_ITERS:-40}
	for f in basic markers rtr_read many; do
		[ -f "$work/$f.pcap" ] || return
	done
	for ((i = 0; i < iters; i++)); do
		case $((i % 4)) in
		0) f=basic ;; 1) f=markers ;; 2) f=rtr_read ;; *) f=many ;;
		esac
		cp "$work/$f.pcap" "$work/fuzz.pcap"
		size=$(stat -c %s "$work/fuzz.pcap")
		for ((k = 0; k < 1 + i % 8; k++)); do
			off=$(((RANDOM * 32768 + RANDOM) % size))
			# shellcheck disable=SC2059
			printf "\\x$(printf %02x $((RANDOM % 256)))" |
				dd of="$work/fuzz.pcap" bs=1 seek=$off conv=notrunc status=none
		done
		run fuzz -q --expect-first active
		case $rc in
		0 | 1 | 2 | 3) ;;
		*) crash=$((crash + 1)); cp "$work/fuzz.pcap" "$work/crash$crash.pcap" ;;
		esac
	done
	if [ $crash = 0 ]; then
		pass "$iters randomly corrupted captures: no crash"
	else
		out="$crash crashes"
		fail "randomly corrupted captures"
	fi
}

t_basic
t_passive_first
t_out_of_order
t_retransmit
t_crc
t_truncated
t_snaplen
t_non_mpa
t_links
t_rtr
t_markers
t_isn_wrap
t_no_syn
t_ipv6
t_reject
t_malformed_fpdu
t_many_conns
t_bad_input
t_fuzz

echo "# $((checks - failed)) of $checks checks passed"
[ $failed = 0 ]
