/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_fault_tests: a DAT consumer (stock libdat2 only; libdaplofx through
 * dat.conf) for fault paths: a peer that dies, connects that cannot succeed,
 * RNR and EVD overflow, access violations, abrupt IA close with live objects
 * and EP exhaustion.  Every case prints "ok CASE: ..." or "FAIL: CASE: ...".
 *
 *   ofx_fault_tests server [QUAL]          echo/case peer (host A); prints
 *                                          "server ready qual Q pid P", then
 *                                          "server established qual Q" per
 *                                          connection; ends on a quit request
 *   ofx_fault_tests client SERVER_IP CASE...
 *
 * Client cases (run in the order given):
 *   peer_killed     connect to the server on qual 52100, keep receives and
 *                   RDMA writes in flight and print "client loaded"; the
 *                   script SIGKILLs that server.  Expects BROKEN or
 *                   DISCONNECTED within 30 s, every posted DTO back exactly
 *                   once (writes: success or error, receives: FLUSHED),
 *                   ep_free and ia_close that return; then prints "client
 *                   waiting for restart" and connects a new IA/EP to the
 *                   restarted server and exchanges data.
 *   peer_vanished   the same, but the script makes the link drop every
 *                   packet (netem loss 100% on both veths) instead of
 *                   killing the peer: the writes exhaust their transport
 *                   retries, BROKEN follows, and teardown does not wait for
 *                   the unreachable peer.
 *   no_listener     connect to SERVER_IP on a qualifier nobody listens on:
 *                   NON_PEER_REJECTED.
 *   unreachable     connect to 192.0.2.99 (no such host) with a 3 s
 *                   timeout: TIMED_OUT, at about 3 s.
 *   unreachable_resolve  the same with a 10 s timeout, run with
 *                   DAPL_OFX_CM_RETRIES=0 DAPL_OFX_CM_TIMEOUT_MS=1000:
 *                   address resolution fails first: UNREACHABLE.
 *   rnr             send to a peer that posts its receive 2 s later
 *                   (rnr_retry 7 = infinite): the send completes, no loss.
 *                   iWARP has no receiver-not-ready retry: a send that
 *                   finds no receive is a fatal DDP error (RFC 5041), so
 *                   there the connection must end (BROKEN or
 *                   DISCONNECTED), reported, not hidden; the send's own
 *                   completion is local and may be a success.
 *   passive_killed  connect to qual 52100 with a request the server holds
 *                   unanswered ("server holding request"); the script
 *                   SIGKILLs that server between REQ and REP.  Expects an
 *                   error event (never ESTABLISHED) within the connect
 *                   timeout, an EP that resets and frees; then prints
 *                   "client waiting for restart" and reaches the restarted
 *                   server (the suite runs this survivor under valgrind).
 *   gate_victim     connect to qual 52100 with a held request and wait; the
 *                   script SIGSTOPs this process, lets the server accept
 *                   (SIGUSR1), then SIGKILLs it between REP and RTU.  The
 *                   survivor is the server: it must get
 *                   ACCEPT_COMPLETION_ERROR within its deadline (on iWARP
 *                   without an RTR: ESTABLISHED, then DISCONNECTED or
 *                   BROKEN) and serve the next connection.  On iWARP the
 *                   victim's kernel may end the request first (siw waits
 *                   10 s for the MPA reply): the accept then fails with
 *                   DAT_INVALID_STATE, the victim gets UNREACHABLE.
 *   echo_victim     connect to qual 52100 and exchange an echo.
 *   quit_victim     tells the qual 52100 server to exit.
 *   slow_accept     the server accepts 3 s after the request came: the
 *                   connection comes up (not TIMED_OUT, not BROKEN) and an
 *                   echo goes both ways.
 *   late_accept     the server accepts 14 s after the request: on IB/RoCE
 *                   the repeated REQ carries it, ESTABLISHED then, and an
 *                   echo; on iWARP the initiator's kernel gives up on the
 *                   MPA reply first (siw: 10 s): UNREACHABLE at about 10 s.
 *                   Then the server serves an echo on a new connection.
 *   hangup_soon     24 times: connect, and the server disconnects as soon
 *                   as it sees ESTABLISHED: this side gets DISCONNECTED
 *                   (never BROKEN), its receives back FLUSHED, and no
 *                   async event (the active p2p side's RTR nudges, ep_cm.c,
 *                   may cross the peer's close).
 *   evd_overflow    16 signalled RDMA writes reported on a request EVD of
 *                   qlen 4: all 16 are dequeued, in order, none lost.
 *   access_write_ro RDMA write to a peer LMR without REMOTE_WRITE.
 *   access_bad_rkey RDMA write with rmr_context + 1.
 *   access_read_wo  RDMA read from a peer LMR without REMOTE_READ.
 *                   Each: the DTO completes with DAT_DTO_ERR_REMOTE_ACCESS
 *                   and the EP gets BROKEN; the peer's memory is unchanged.
 *   abrupt_close    dat_ia_close(ABRUPT) with a connected EP, an idle EP
 *                   with receives, LMRs, EVDs and a PSP alive: returns
 *                   DAT_SUCCESS within 10 s (run under valgrind by suite.sh).
 *   ep_limit        create EPs until the device refuses (the suite runs it
 *                   in an rdma cgroup with a small hca_object limit):
 *                   DAT_INSUFFICIENT_RESOURCES; the first EP still connects
 *                   and moves data.
 *   quit            tells the server to exit.
 *
 * IA name: $OFX_FAULT_IA (default ofx).
 *
 * What libdaplofx does, as measured on rxe (Linux 6.1, soft-RoCE VM):
 *  - peer process killed: its kernel rdma_cm id is destroyed and sends a
 *    DREQ, so the survivor sees DISCONNECTED (not BROKEN) about 0.3-0.5 s
 *    after the kill; the RDMA writes in flight come back once each (the
 *    last window FLUSHED), every posted receive comes back once as FLUSHED.
 *  - peer host silent (no DREQ can arrive): the oldest RDMA write fails
 *    after the transport retries (1 + retry_cnt 6 local ACK timeouts, about
 *    2.2 s each on this link) with DAT_DTO_ERR_TRANSPORT, BROKEN follows
 *    about 15.5 s after the last good completion; the rest is FLUSHED.
 *    ep_free and ia_close do not wait for the peer.  (With retry_cnt 7, what
 *    stock uses, rxe retries forever and no event ever comes: cm.c.)
 *  - no listener at the address: the peer's CM answers with REJ reason 8
 *    (invalid service ID): NON_PEER_REJECTED, at once.  A consumer reject
 *    is PEER_REJECTED.
 *  - no such host: ARP never resolves, rdma_resolve_addr would time out
 *    after cm_timeout_ms (4 s) and retry; the consumer's connect timeout
 *    (3 s here) fires first: TIMED_OUT.  When resolution gives up first
 *    (cm_retries 0, cm_timeout_ms 1000, connect timeout 10 s) the result is
 *    UNREACHABLE.
 *  - RNR: QPs use rnr_retry 7 (infinite), so a send waits for the peer's
 *    receive; nothing is lost and no error is reported.
 *  - EVD smaller than the work in flight: the CQ grows with the EPs'
 *    reservations (ofx_evd_reserve_cqes); evd_qlen stays what was asked
 *    (rounded up to the first CQ depth) and a dequeue takes what the ring
 *    holds, the rest waits in the CQ: no completion is lost.
 *  - remote access violations (no REMOTE_WRITE/READ privilege, wrong rkey):
 *    the DTO completes with DAT_DTO_ERR_REMOTE_ACCESS, the EP gets BROKEN
 *    and is DISCONNECTED; new posts are refused with INVALID_STATE.
 *  - EP exhaustion: ep_create returns DAT_INSUFFICIENT_RESOURCES
 *    (DAT_RESOURCE_TEP); existing EPs keep working.
 *  - dat_ep_reset discards receives the EP held without completions (the
 *    QP goes back to RESET): post them again before the next connect.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dat2/udat.h>

#include "consumer.h"

#define QUAL_SERVER 52000
#define QUAL_VICTIM 52100
#define QUAL_NOBODY 52999
#define SLOW_ACCEPT_S 3
/*
 * Past siw's deadline for the MPA reply (10 s after its request, siw_cm.h
 * MPAREQ_TIMEOUT, not tunable), well within the IB CM's repeated REQs
 * (rdma_cm: 15 tries, each over 8 s).
 */
#define LATE_ACCEPT_S 14
#define SIW_MPA_REPLY_S 10
#define GATE_WAIT_S 120	/* how long a held request waits for SIGUSR1 */
#define UNREACHABLE_IP "192.0.2.99"

#define MSG_LEN 64
#define NRECV 8
#define BUF_LEN (1 << 20)
#define WRITE_LEN 65536
#define WRITES_INFLIGHT 8
#define PEER_AREA 4096		/* each peer LMR below */
#define EVENT_WAIT_US (20 * SEC_US)
#define BROKEN_BOUND_S 30.0

/* first byte of the connect private data: what the server does */
enum req_case {
	REQ_ECHO = 'E',	/* echo every received message */
	REQ_RNR = 'R',	/* post the receive 2 s after ESTABLISHED */
	REQ_SLOW = 'S',	/* accept 3 s after the request arrived */
	REQ_GATE = 'G',	/* hold the request until SIGUSR1, then accept */
	REQ_QUIT = 'Q',	/* reject and exit */
	REQ_HANGUP = 'H',	/* disconnect as soon as ESTABLISHED is seen */
	REQ_LATE = 'L',	/* accept LATE_ACCEPT_S after the request arrived */
};

/* The server's three peer LMRs, sent in the accept private data. */
enum { PEER_RW, PEER_NO_WRITE, PEER_NO_READ, PEER_COUNT };
struct peer_rmr {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

struct ctx {
	struct consumer cs;	/* its LMR covers buf */
	DAT_EVD_HANDLE dto_evd;
	char *buf;
};

static const char *ia_name = "ofx";

/* ---- setup ------------------------------------------------------------------- */

static int ctx_open(struct ctx *c, DAT_COUNT dto_qlen)
{
	memset(c, 0, sizeof(*c));
	c->buf = aligned_alloc(4096, BUF_LEN);
	if (!c->buf) {
		fail("out of memory");
		return -1;
	}
	memset(c->buf, 0, BUF_LEN);
	if (consumer_open(&c->cs, ia_name, c->buf, BUF_LEN, 8))
		return -1;
	CHECK_DAT(dat_evd_create(c->cs.ia, dto_qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &c->dto_evd));
	return 0;
}

/* Graceful teardown in the right order; every step is checked. */
static int ctx_close(struct ctx *c)
{
	DAT_RETURN r;

	CHECK_DAT(dat_lmr_free(c->cs.lmr));
	CHECK_DAT(dat_evd_free(c->cs.cr_evd));
	CHECK_DAT(dat_evd_free(c->cs.conn_evd));
	CHECK_DAT(dat_evd_free(c->dto_evd));
	CHECK_DAT(dat_pz_free(c->cs.pz));
	r = dat_ia_close(c->cs.ia, DAT_CLOSE_GRACEFUL_FLAG);
	if (r != DAT_SUCCESS) {
		fail("dat_ia_close(GRACEFUL): %s", dat_errstr(r));
		dat_ia_close(c->cs.ia, DAT_CLOSE_ABRUPT_FLAG);
		return -1;
	}
	free(c->buf);
	return 0;
}

/* The provider's defaults with the queue depths asked for, one segment per DTO. */
static int ep_attr(struct ctx *c, int nrecv, int nreq, DAT_EP_ATTR *attr)
{
	if (ep_default_attr(&c->cs, c->dto_evd, attr))
		return -1;
	attr->max_recv_dtos = nrecv;
	attr->max_request_dtos = nreq;
	attr->max_recv_iov = 1;
	attr->max_request_iov = 1;
	attr->ep_provider_specific_count = 0;
	attr->ep_provider_specific = NULL;
	return 0;
}

static int ep_make(struct ctx *c, DAT_EVD_HANDLE req_evd, int nrecv, int nreq,
		   DAT_EP_HANDLE *ep_p)
{
	DAT_EP_ATTR attr;

	if (ep_attr(c, nrecv, nreq, &attr))
		return -1;
	CHECK_DAT(dat_ep_create(c->cs.ia, c->cs.pz, c->dto_evd, req_evd, c->cs.conn_evd, &attr,
				ep_p));
	return 0;
}

static DAT_LMR_TRIPLET iov_at(struct ctx *c, size_t off, uint32_t len)
{
	return lmr_iov(&c->cs, c->buf + off, len);
}

static int post_recv(struct ctx *c, DAT_EP_HANDLE ep, int slot, uint64_t cookie)
{
	DAT_LMR_TRIPLET iov = iov_at(c, (size_t)slot * MSG_LEN, MSG_LEN);

	CHECK_DAT(dat_ep_post_recv(ep, 1, &iov, (DAT_DTO_COOKIE)cookie,
				   DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

/* Sends MSG_LEN bytes from send slot `slot` (after the NRECV receive slots). */
static int post_send_text(struct ctx *c, DAT_EP_HANDLE ep, int slot, uint64_t cookie,
			  const char *text)
{
	size_t off = (size_t)(NRECV + slot) * MSG_LEN;
	DAT_LMR_TRIPLET iov = iov_at(c, off, MSG_LEN);

	memset(c->buf + off, 0, MSG_LEN);
	snprintf(c->buf + off, MSG_LEN, "%s", text);
	CHECK_DAT(dat_ep_post_send(ep, 1, &iov, (DAT_DTO_COOKIE)cookie,
				   DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

/*
 * Waits for the DTO completion of `cookie` on `ep`, skipping flushed
 * completions of earlier EPs; checks the status.
 */
static int wait_dto(struct ctx *c, DAT_EP_HANDLE ep, uint64_t cookie, DAT_DTO_COMPLETION_STATUS st,
		    DAT_EVENT *ev)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;

	for (;;) {
		if (wait_event(c->dto_evd, EVENT_WAIT_US, DAT_DTO_COMPLETION_EVENT, ev, NULL))
			return -1;
		if (d->ep_handle != ep)
			continue;
		if (d->user_cookie.as_64 != cookie || d->status != st) {
			fail("dto cookie %llu status %d, expected cookie %llu status %d",
			     (unsigned long long)d->user_cookie.as_64, d->status,
			     (unsigned long long)cookie, st);
			return -1;
		}
		return 0;
	}
}

struct reconnect {
	struct ctx *c;
	int nrecv;
};

/* dat_ep_reset discarded the receives the EP held: slots 0..nrecv-1 again. */
static int reconnect_again(void *arg, DAT_EP_HANDLE *ep_p)
{
	const struct reconnect *r = arg;

	CHECK_DAT(dat_ep_reset(*ep_p));
	for (int i = 0; i < r->nrecv; i++)
		if (post_recv(r->c, *ep_p, i, i))
			return -1;
	return 0;
}

/*
 * Connects a fresh EP, retrying while the peer is not listening yet; the
 * request's private data is the case letter `what`, and the server's LMRs
 * come back in the accept's (copied to `peer` when given).
 */
static int connect_ep(struct ctx *c, DAT_EP_HANDLE ep, const char *ip, DAT_CONN_QUAL qual,
		      char what, struct peer_rmr *peer, int retry_s, int nrecv)
{
	struct reconnect r = { .c = c, .nrecv = nrecv };
	const struct connect_req req = { .ip = ip, .qual = qual, .timeout_us = 10 * SEC_US,
					 .pdata_len = 1, .pdata = &what, .retry_s = retry_s,
					 .pause_ms = 300, .again = reconnect_again, .arg = &r };
	const DAT_CONNECTION_EVENT_DATA *d;
	DAT_EVENT ev;

	if (connect_retry(&c->cs, &ep, &req, &ev))
		return -1;
	d = &ev.event_data.connect_event_data;
	if (peer && d->private_data_size >= (DAT_COUNT)(PEER_COUNT * sizeof(*peer)))
		memcpy(peer, d->private_data, PEER_COUNT * sizeof(*peer));
	else if (peer)
		memset(peer, 0, PEER_COUNT * sizeof(*peer));
	return 0;
}

static int disconnect_ep(struct ctx *c, DAT_EP_HANDLE ep)
{
	DAT_EVENT ev;

	CHECK_DAT(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
	return wait_event(c->cs.conn_evd, EVENT_WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED, &ev,
			  NULL);
}

/* Sends `text` and waits for the send and the echo. */
static int echo_roundtrip(struct ctx *c, DAT_EP_HANDLE ep, int recv_slot, const char *text)
{
	DAT_EVENT ev;
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
	bool sent = false, echoed = false;

	if (post_send_text(c, ep, 0, 500, text))
		return -1;
	while (!sent || !echoed) {
		if (wait_event(c->dto_evd, EVENT_WAIT_US, DAT_DTO_COMPLETION_EVENT, &ev, NULL))
			return -1;
		if (d->ep_handle != ep)
			continue;
		if (d->status != DAT_DTO_SUCCESS) {
			fail("echo: cookie %llu status %d", (unsigned long long)d->user_cookie.as_64,
			     d->status);
			return -1;
		}
		if (d->user_cookie.as_64 == 500) {
			sent = true;
		} else if (d->user_cookie.as_64 == (uint64_t)recv_slot) {
			if (strncmp(c->buf + (size_t)recv_slot * MSG_LEN, text, MSG_LEN)) {
				fail("echo: got \"%.*s\", expected \"%s\"", MSG_LEN,
				     c->buf + (size_t)recv_slot * MSG_LEN, text);
				return -1;
			}
			echoed = true;
		}
	}
	return 0;
}

/* A client EP on `c` whose NRECV receives are posted. */
static int ep_with_recvs(struct ctx *c, DAT_EP_HANDLE *ep_p)
{
	if (ep_make(c, c->dto_evd, NRECV, 8, ep_p))
		return -1;
	for (int i = 0; i < NRECV; i++)
		if (post_recv(c, *ep_p, i, i))
			return -1;
	return 0;
}

/* A client context with one EP whose NRECV receives are posted. */
static int client_open(struct ctx *c, DAT_EP_HANDLE *ep_p)
{
	return ctx_open(c, 64) || ep_with_recvs(c, ep_p) ? -1 : 0;
}

/* ---- server -------------------------------------------------------------------- */

struct server {
	struct ctx c;
	DAT_LMR_HANDLE peer_lmr[PEER_COUNT];
	struct peer_rmr peer[PEER_COUNT];
	char *peer_buf;
	DAT_CONN_QUAL qual;
};

static int server_lmrs(struct server *s)
{
	static const DAT_MEM_PRIV_FLAGS priv[PEER_COUNT] = {
		[PEER_RW] = DAT_MEM_PRIV_ALL_FLAG,
		[PEER_NO_WRITE] = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
				  DAT_MEM_PRIV_REMOTE_READ_FLAG,
		[PEER_NO_READ] = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
				 DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
	};

	s->peer_buf = aligned_alloc(4096, PEER_COUNT * PEER_AREA);
	if (!s->peer_buf)
		return -1;
	for (int i = 0; i < PEER_COUNT; i++) {
		DAT_REGION_DESCRIPTION region = { .for_va = s->peer_buf + i * PEER_AREA };
		DAT_LMR_CONTEXT lkey;
		DAT_RMR_CONTEXT rkey;
		DAT_VLEN len;
		DAT_VADDR addr;

		memset(s->peer_buf + i * PEER_AREA, 'a' + i, PEER_AREA);
		CHECK_DAT(dat_lmr_create(s->c.cs.ia, DAT_MEM_TYPE_VIRTUAL, region, PEER_AREA,
					 s->c.cs.pz,
					 priv[i], DAT_VA_TYPE_VA, &s->peer_lmr[i], &lkey, &rkey,
					 &len, &addr));
		s->peer[i].va = (uint64_t)(uintptr_t)(s->peer_buf + i * PEER_AREA);
		s->peer[i].rkey = rkey;
		s->peer[i].len = PEER_AREA;
	}
	return 0;
}

/* Only the write-enabled area may change (the client writes 'W' there). */
static void server_check_peer_memory(struct server *s)
{
	for (int i = PEER_NO_WRITE; i < PEER_COUNT; i++) {
		if (i == PEER_NO_READ)
			continue;
		for (int j = 0; j < PEER_AREA; j++) {
			if (s->peer_buf[i * PEER_AREA + j] != 'a' + i) {
				fail("server: peer lmr %d without remote write changed at %d", i, j);
				return;
			}
		}
	}
}

/*
 * One connection: echo every message until the peer disconnects or the
 * connection breaks.  REQ_RNR: no receive before ESTABLISHED + 2 s.
 */
/*
 * Holds a request until the script sends SIGUSR1 (blocked in every thread
 * since main: sigtimedwait takes it).  The script kills this process here
 * (passive_killed) or stops the client first (gate_victim).
 */
static int server_hold(void)
{
	struct timespec limit = { .tv_sec = GATE_WAIT_S };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	printf("server holding request pid %d\n", (int)getpid());
	if (sigtimedwait(&set, NULL, &limit) != SIGUSR1) {
		fail("server: no SIGUSR1 within %d s for the held request", GATE_WAIT_S);
		return -1;
	}
	return 0;
}

/*
 * After accepting a request whose client was stopped and is killed before
 * its RTU: the accept must end in ACCEPT_COMPLETION_ERROR within the deadline.  On
 * iWARP without an RTR the passive side is ESTABLISHED once its MPA reply
 * is out (there is no RTU), so there ESTABLISHED followed by DISCONNECTED
 * or BROKEN is right too; on InfiniBand/RoCE ESTABLISHED cannot happen.
 */
static int server_gate_outcome(struct server *s, DAT_EP_HANDLE ep)
{
	struct ctx *c = &s->c;
	double t0 = now_s();
	DAT_EVENT ev;

	printf("server accepted the held request\n");
	if (wait_event(c->cs.conn_evd, 60 * SEC_US, 0, &ev, "the gate connection"))
		return -1;
	if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
		if (!ia_is_iwarp(&c->cs)) {
			fail("gate: ESTABLISHED although the client never sent its RTU");
			return -1;
		}
		printf("server: gate: ESTABLISHED (iWARP, no RTR)\n");
		if (wait_event(c->cs.conn_evd, 60 * SEC_US, 0, &ev, "the gate disconnect"))
			return -1;
		if (ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED &&
		    ev.event_number != DAT_CONNECTION_EVENT_BROKEN) {
			fail("gate: %s after ESTABLISHED", event_name(ev.event_number));
			return -1;
		}
	} else if (ev.event_number != DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR) {
		/* the accept did not complete: DAT says so with this event */
		fail("gate: %s, expected ACCEPT_COMPLETION_ERROR", event_name(ev.event_number));
		return -1;
	}
	printf("server: gate: %s %.2f s after the accept\n", event_name(ev.event_number),
	       now_s() - t0);
	CHECK_DAT(dat_ep_free(ep));
	return 0;
}

/*
 * The accept of the held request.  On iWARP the victim's own kernel may
 * have given up first: siw's active side waits 10 s for the MPA reply,
 * which only this accept sends, and a valgrind server on a loaded machine
 * can take longer from the request to the accept.  Its stream is then
 * reset and the accept fails as for a peer gone (DAT_INVALID_STATE): the
 * survivor has learnt of it, and must still serve the next connection.
 */
static int server_gate_accept(struct server *s, DAT_CR_HANDLE cr, DAT_EP_HANDLE ep)
{
	DAT_RETURN st = dat_cr_accept(cr, ep, sizeof(s->peer), s->peer);

	if (st == DAT_SUCCESS)
		return server_gate_outcome(s, ep);
	if (!ia_is_iwarp(&s->c.cs) || DAT_GET_TYPE(st) != DAT_INVALID_STATE) {
		fail("gate: dat_cr_accept: 0x%x", (unsigned int)st);
		dat_ep_free(ep);
		return -1;
	}
	printf("server: gate: the accept found the peer gone (its MPA reply timer, iWARP)\n");
	CHECK_DAT(dat_ep_free(ep));
	return 0;
}

static int server_serve(struct server *s, DAT_CR_HANDLE cr, char what)
{
	struct ctx *c = &s->c;
	DAT_EP_HANDLE ep;
	DAT_EVENT ev;
	DAT_RETURN accepted;
	/* hangup: nothing arrives, and no flushed receives pile up in this EVD */
	int nrecv = what == REQ_RNR || what == REQ_HANGUP ? 0 : NRECV;
	double rnr_post_at = 0;
	bool done = false;
	uint64_t sends = 0;

	if (ep_make(c, c->dto_evd, NRECV, 16, &ep))
		return -1;
	for (int i = 0; i < nrecv; i++)
		if (post_recv(c, ep, i, i))
			return -1;
	if (what == REQ_SLOW || what == REQ_LATE) {
		/* the slow peer these cases are about: a busy node answers late */
		int secs = what == REQ_SLOW ? SLOW_ACCEPT_S : LATE_ACCEPT_S;

		printf("server: accepting in %d s\n", secs);
		sleep_ms(secs * 1000);
	}
	if (what == REQ_GATE && server_hold()) {
		dat_cr_reject(cr, 0, NULL);
		dat_ep_free(ep);
		return -1;
	}
	if (what == REQ_GATE)
		return server_gate_accept(s, cr, ep);
	accepted = dat_cr_accept(cr, ep, sizeof(s->peer), s->peer);
	if (accepted != DAT_SUCCESS && what == REQ_LATE && ia_is_iwarp(&c->cs)) {
		/* the initiator's kernel gave up first: its stream may be closed */
		printf("server: iwarp: late accept refused: %s\n", dat_errstr(accepted));
		CHECK_DAT(dat_ep_free(ep));
		return 0;
	}
	CHECK_DAT(accepted);
	if (ia_is_iwarp(&c->cs)) {
		/*
		 * iWARP: the rnr and access cases end the connection on purpose
		 * (a send with no receive here, a bad RDMA access: the Terminate
		 * closes the stream), which may happen before this side reports
		 * ESTABLISHED; the client checks what it sees
		 */
		if (wait_event(c->cs.conn_evd, EVENT_WAIT_US, 0, &ev, "the connection")) {
			dat_ep_free(ep);
			return -1;
		}
		if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
			printf("server: iwarp: case %c ended before ESTABLISHED: %s\n", what,
			       event_name(ev.event_number));
		/* (ended before ESTABLISHED was reported: ACCEPT_COMPLETION_ERROR) */
		if (ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
		    ev.event_number == DAT_CONNECTION_EVENT_BROKEN ||
		    ev.event_number == DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR) {
			/* a bad access must have left this side's memory alone */
			server_check_peer_memory(s);
			CHECK_DAT(dat_ep_free(ep));
			return 0;
		}
		if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
			fail("iwarp case %c: connection event %s", what, event_name(ev.event_number));
			dat_ep_free(ep);
			return -1;
		}
	} else if (wait_event(c->cs.conn_evd, EVENT_WAIT_US, DAT_CONNECTION_EVENT_ESTABLISHED,
			      &ev, NULL)) {
		dat_ep_free(ep);
		return -1;
	}
	printf("server established qual %llu case %c\n", (unsigned long long)s->qual, what);
	if (what == REQ_HANGUP) {
		int ret = disconnect_ep(c, ep);

		CHECK_DAT(dat_ep_free(ep));
		return ret;
	}
	if (what == REQ_RNR)
		rnr_post_at = now_s() + 2.0;
	while (!done) {
		DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		DAT_RETURN r;

		if (rnr_post_at && now_s() >= rnr_post_at) {
			printf("server: posting the receive for the rnr case\n");
			if (post_recv(c, ep, 0, 0))
				break;
			rnr_post_at = 0;
		}
		r = dat_evd_dequeue(c->cs.conn_evd, &ev);
		if (r == DAT_SUCCESS) {
			printf("server: connection event %s\n", event_name(ev.event_number));
			done = true;
			break;
		}
		r = dat_evd_dequeue(c->dto_evd, &ev);
		if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
			sleep_ms(1);
			continue;
		}
		if (r != DAT_SUCCESS) {
			fail("server: dequeue: %s", dat_errstr(r));
			break;
		}
		if (d->ep_handle != ep || d->status != DAT_DTO_SUCCESS ||
		    d->operation != DAT_DTO_RECEIVE)
			continue;
		/* echo the message back, then give the slot back */
		{
			int slot = (int)d->user_cookie.as_64;
			char text[MSG_LEN];

			memcpy(text, c->buf + (size_t)slot * MSG_LEN, MSG_LEN);
			text[MSG_LEN - 1] = 0;
			if (post_send_text(c, ep, (int)(sends % 8), 1000 + sends, text))
				break;
			sends++;
			if (post_recv(c, ep, slot, slot))
				break;
		}
	}
	server_check_peer_memory(s);
	CHECK_DAT(dat_ep_free(ep));
	return 0;
}

static int run_server(DAT_CONN_QUAL qual)
{
	struct server s = { .qual = qual };
	DAT_PSP_HANDLE psp;

	if (ctx_open(&s.c, 64) || server_lmrs(&s))
		return 1;
	if (dat_psp_create(s.c.cs.ia, qual, s.c.cs.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) !=
	    DAT_SUCCESS) {
		fail("server: psp_create qual %llu", (unsigned long long)qual);
		return 1;
	}
	printf("server ready qual %llu pid %d\n", (unsigned long long)qual, (int)getpid());
	for (;;) {
		DAT_EVENT ev;
		DAT_CR_PARAM crp;
		DAT_CR_HANDLE cr;
		char what;

		if (dat_evd_wait(s.c.cs.cr_evd, DAT_TIMEOUT_INFINITE, 1, &ev, NULL) !=
			    DAT_SUCCESS ||
		    ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
			fail("server: cr wait");
			return 1;
		}
		cr = ev.event_data.cr_arrival_event_data.cr_handle;
		if (dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp) != DAT_SUCCESS ||
		    crp.private_data_size < 1) {
			fail("server: cr_query");
			dat_cr_reject(cr, 0, NULL);
			continue;
		}
		what = *(const char *)crp.private_data;
		if (what == REQ_QUIT) {
			dat_cr_reject(cr, 0, NULL);
			break;
		}
		server_serve(&s, cr, what);
	}
	dat_psp_free(psp);
	for (int i = 0; i < PEER_COUNT; i++)
		dat_lmr_free(s.peer_lmr[i]);
	free(s.peer_buf);
	if (ctx_close(&s.c))
		return 1;
	printf("server done: %d failures\n", failures);
	return failures ? 1 : 0;
}

/* ---- client cases -------------------------------------------------------------- */

static const char *server_ip;

/* Per-cookie bookkeeping of peer_killed: how often each came back. */
#define KILL_MAX_WRITES 100000
static unsigned char *write_seen;

/* A new IA and EP connect to the server on `qual`, echo once, and go. */
static int reach_server(DAT_CONN_QUAL qual, int retry_s, const char *text)
{
	DAT_EP_HANDLE ep;
	struct ctx c;

	if (client_open(&c, &ep))
		return -1;
	if (connect_ep(&c, ep, server_ip, qual, REQ_ECHO, NULL, retry_s, NRECV) ||
	    echo_roundtrip(&c, ep, 0, text) || disconnect_ep(&c, ep))
		return -1;
	CHECK_DAT(dat_ep_free(ep));
	return ctx_close(&c);
}

/*
 * peer_killed (restart: reconnect afterwards) and peer_vanished (the script
 * drops all traffic between the hosts instead of killing the peer).
 */
static int peer_lost(bool restart)
{
	struct peer_rmr peer[PEER_COUNT];
	int recv_seen[NRECV] = { 0 };
	uint64_t writes_posted = 0, writes_ok = 0, writes_err = 0, writes_flushed = 0;
	uint64_t inflight = 0;
	double t_kill_seen = 0, t_conn, t0, t_last_ok = 0, t_report;
	DAT_EVENT_NUMBER conn_ev = 0;
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev;
	bool loaded = false;

	write_seen = calloc(KILL_MAX_WRITES, 1);
	if (!write_seen || ctx_open(&c, 256) || ep_make(&c, c.dto_evd, NRECV, 32, &ep))
		return -1;
	for (int i = 0; i < NRECV; i++)
		if (post_recv(&c, ep, i, i))
			return -1;
	if (connect_ep(&c, ep, server_ip, QUAL_VICTIM, REQ_ECHO, peer, 60, NRECV))
		return -1;
	/* the echo peer never sends first: our receives stay posted */
	t0 = now_s();
	t_report = t0 + 5;
	while (!conn_ev || now_s() < t_kill_seen + 15) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		DAT_RETURN r;

		while (!conn_ev && inflight < WRITES_INFLIGHT && writes_posted < KILL_MAX_WRITES) {
			DAT_LMR_TRIPLET iov = iov_at(&c, BUF_LEN / 2, PEER_AREA);
			DAT_RMR_TRIPLET rmr = { .rmr_context = peer[PEER_RW].rkey,
						.virtual_address = peer[PEER_RW].va,
						.segment_length = PEER_AREA };

			r = dat_ep_post_rdma_write(ep, 1, &iov, (DAT_DTO_COOKIE)(100 + writes_posted),
						   &rmr, DAT_COMPLETION_DEFAULT_FLAG);
			if (r != DAT_SUCCESS)
				break;	/* the EP may have left CONNECTED just now */
			writes_posted++;
			inflight++;
		}
		if (!loaded && writes_posted >= WRITES_INFLIGHT) {
			printf("client loaded: %d receives and %d rdma writes in flight\n", NRECV,
			       (int)inflight);
			loaded = true;
		}
		if (!conn_ev && dat_evd_dequeue(c.cs.conn_evd, &ev) == DAT_SUCCESS) {
			conn_ev = ev.event_number;
			t_kill_seen = now_s();
			printf("client: %s after %.1f s of traffic\n", event_name(conn_ev),
			       t_kill_seen - t0);
			continue;
		}
		r = dat_evd_dequeue(c.dto_evd, &ev);
		if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
			if (conn_ev && inflight == 0) {
				int missing = 0;

				for (int i = 0; i < NRECV; i++)
					missing += !recv_seen[i];
				if (!missing)
					break;
			}
			if (!conn_ev && now_s() > t_report) {
				printf("client: %.0f s: writes posted %llu, ok %llu, errors %llu, "
				       "in flight %llu\n", now_s() - t0,
				       (unsigned long long)writes_posted,
				       (unsigned long long)writes_ok,
				       (unsigned long long)(writes_err + writes_flushed),
				       (unsigned long long)inflight);
				t_report += 5;
			}
			if (!conn_ev && now_s() - t0 > 120) {
				fail("no connection event within 120 s of traffic (was the peer "
				     "killed?)");
				return -1;
			}
			sleep_ms(conn_ev ? 10 : 1);
			continue;
		}
		if (r != DAT_SUCCESS) {
			fail("dequeue: %s", dat_errstr(r));
			return -1;
		}
		if (d->ep_handle != ep) {
			fail("dto event for another ep %p", d->ep_handle);
			continue;
		}
		if (d->user_cookie.as_64 < NRECV) {
			recv_seen[d->user_cookie.as_64]++;
			if (d->status != DAT_DTO_ERR_FLUSHED)
				fail("receive %llu completed with status %d, expected FLUSHED",
				     (unsigned long long)d->user_cookie.as_64, d->status);
			continue;
		}
		if (d->user_cookie.as_64 >= 100 && d->user_cookie.as_64 < 100 + writes_posted) {
			uint64_t w = d->user_cookie.as_64 - 100;

			if (write_seen[w]++)
				fail("rdma write %llu reported twice", (unsigned long long)w);
			inflight--;
			if (d->status == DAT_DTO_SUCCESS) {
				writes_ok++;
				t_last_ok = now_s();
			}
			else if (d->status == DAT_DTO_ERR_FLUSHED)
				writes_flushed++;
			else
				writes_err++;
			continue;
		}
		fail("unexpected cookie %llu", (unsigned long long)d->user_cookie.as_64);
	}
	t_conn = t_kill_seen - t0;
	/* the last good completion bounds the moment the peer went away */
	printf("client: %s %.2f s after the last successful rdma write\n", event_name(conn_ev),
	       t_kill_seen - t_last_ok);
	if (t_last_ok && t_kill_seen - t_last_ok > BROKEN_BOUND_S)
		fail("%s only %.1f s after the peer went away (bound %.0f s)", event_name(conn_ev),
		     t_kill_seen - t_last_ok, BROKEN_BOUND_S);
	if (!conn_ev) {
		fail("no connection event");
		return -1;
	}
	if (conn_ev != DAT_CONNECTION_EVENT_BROKEN && conn_ev != DAT_CONNECTION_EVENT_DISCONNECTED)
		fail("connection event %s, expected BROKEN or DISCONNECTED", event_name(conn_ev));
	for (int i = 0; i < NRECV; i++)
		if (recv_seen[i] != 1)
			fail("receive %d came back %d times (expected once, FLUSHED)", i,
			     recv_seen[i]);
	if (inflight)
		fail("%llu of %llu rdma writes never completed", (unsigned long long)inflight,
		     (unsigned long long)writes_posted);
	printf("client: writes posted %llu: ok %llu, flushed %llu, other errors %llu; "
	       "traffic ran %.1f s before %s\n",
	       (unsigned long long)writes_posted, (unsigned long long)writes_ok,
	       (unsigned long long)writes_flushed, (unsigned long long)writes_err, t_conn,
	       event_name(conn_ev));
	/* the script prints when it killed the peer; the log timestamps bound it */
	t0 = now_s();
	alarm(30);
	CHECK_DAT(dat_ep_free(ep));
	if (ctx_close(&c))
		return -1;
	alarm(0);
	printf("client: ep_free + ia_close took %.2f s\n", now_s() - t0);
	free(write_seen);
	if (!restart)
		return 0;

	/* a new IA and EP from this process reach the restarted peer */
	printf("client waiting for restart\n");
	if (reach_server(QUAL_VICTIM, 90, "after-restart"))
		return -1;
	printf("client: reconnected to the restarted peer, data flows\n");
	return 0;
}

static int case_peer_killed(void)
{
	return peer_lost(true);
}

static int case_peer_vanished(void)
{
	return peer_lost(false);
}

/* Connects with `timeout_us` and returns the resulting event and its delay. */
static int connect_expect_failure(const char *ip, DAT_CONN_QUAL qual, uint64_t timeout_us,
				  char what, DAT_EVENT_NUMBER *ev_p, double *secs_p)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM param;
	struct ctx c;
	DAT_EVENT ev;
	double t0;

	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (ctx_open(&c, 64) || ep_make(&c, c.dto_evd, 2, 2, &ep))
		return -1;
	t0 = now_s();
	CHECK_DAT(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, qual, (DAT_TIMEOUT)timeout_us, 1,
				 &what, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	if (wait_event(c.cs.conn_evd, 60 * SEC_US, 0, &ev, NULL))
		return -1;
	*secs_p = now_s() - t0;
	*ev_p = ev.event_number;
	if (ev.event_data.connect_event_data.ep_handle != ep)
		fail("event names ep %p, expected %p", ev.event_data.connect_event_data.ep_handle,
		     ep);
	CHECK_DAT(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &param));
	if (param.ep_state != DAT_EP_STATE_DISCONNECTED)
		fail("ep state %d after a failed connect, expected DISCONNECTED",
		     param.ep_state);
	/* a failed EP can be reset and freed */
	CHECK_DAT(dat_ep_reset(ep));
	CHECK_DAT(dat_ep_free(ep));
	return ctx_close(&c);
}

/* The server is SIGKILLed while it holds the request: an error, then a restart. */
static int case_passive_killed(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	if (connect_expect_failure(server_ip, QUAL_VICTIM, 10 * SEC_US, REQ_GATE, &num, &secs))
		return -1;
	printf("client: server killed before its REP: %s after %.2f s\n", event_name(num), secs);
	if (num == DAT_CONNECTION_EVENT_ESTABLISHED || secs > 15) {
		fail("got %s after %.2f s, expected an error within the 10 s timeout",
		     event_name(num), secs);
		return -1;
	}
	printf("client waiting for restart\n");
	if (reach_server(QUAL_VICTIM, 90, "after-restart"))
		return -1;
	printf("client: reached the restarted server, data flows\n");
	return 0;
}

/* Stopped and killed by the script once the server holds its request. */
static int case_gate_victim(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
	char what = REQ_GATE;
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev = { 0 };

	inet_pton(AF_INET, server_ip, &sin.sin_addr);
	if (ctx_open(&c, 64) || ep_make(&c, c.dto_evd, 2, 2, &ep))
		return -1;
	CHECK_DAT(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, QUAL_VICTIM,
				 (DAT_TIMEOUT)(GATE_WAIT_S * SEC_US), 1, &what, DAT_QOS_BEST_EFFORT,
				 DAT_CONNECT_DEFAULT_FLAG));
	printf("client: gate request sent\n");
	/* only reached if the script did not kill this process */
	wait_event(c.cs.conn_evd, (uint64_t)GATE_WAIT_S * SEC_US, 0, &ev, NULL);
	if (ia_is_iwarp(&c.cs) && ev.event_number == DAT_CONNECTION_EVENT_UNREACHABLE) {
		/* the kernel's MPA reply timer (siw: 10 s) outran the held request */
		printf("client: gate: UNREACHABLE before the stop (iWARP MPA reply timer)\n");
		return 0;
	}
	fail("gate_victim: still alive (event %s)", event_name(ev.event_number));
	return -1;
}

static int case_echo_victim(void)
{
	return reach_server(QUAL_VICTIM, 60, "after-gate");
}

static int case_quit_victim(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	if (connect_expect_failure(server_ip, QUAL_VICTIM, 10 * SEC_US, REQ_QUIT, &num, &secs))
		return -1;
	if (num != DAT_CONNECTION_EVENT_PEER_REJECTED)
		fail("quit_victim: %s, expected PEER_REJECTED", event_name(num));
	return 0;
}

static int case_no_listener(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	if (connect_expect_failure(server_ip, QUAL_NOBODY, 10 * SEC_US, REQ_ECHO, &num, &secs))
		return -1;
	printf("client: no listener: %s after %.2f s\n", event_name(num), secs);
	if (num != DAT_CONNECTION_EVENT_NON_PEER_REJECTED) {
		fail("got %s, expected NON_PEER_REJECTED", event_name(num));
		return -1;
	}
	return 0;
}

static int case_unreachable(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	if (connect_expect_failure(UNREACHABLE_IP, QUAL_SERVER, 3 * SEC_US, REQ_ECHO, &num, &secs))
		return -1;
	printf("client: unreachable host: %s after %.2f s\n", event_name(num), secs);
	if (num != DAT_CONNECTION_EVENT_TIMED_OUT) {
		fail("got %s, expected TIMED_OUT", event_name(num));
		return -1;
	}
	if (secs < 2.5 || secs > 6) {
		fail("TIMED_OUT after %.2f s, expected about 3 s", secs);
		return -1;
	}
	return 0;
}

/* Run with DAPL_OFX_CM_RETRIES=0 DAPL_OFX_CM_TIMEOUT_MS=1000: resolution fails first. */
static int case_unreachable_resolve(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	if (connect_expect_failure(UNREACHABLE_IP, QUAL_SERVER, 10 * SEC_US, REQ_ECHO, &num, &secs))
		return -1;
	printf("client: unreachable host, short address resolution: %s after %.2f s\n",
	       event_name(num), secs);
	if (num != DAT_CONNECTION_EVENT_UNREACHABLE) {
		fail("got %s, expected UNREACHABLE", event_name(num));
		return -1;
	}
	if (secs > 8) {
		fail("UNREACHABLE after %.2f s: address resolution was retried", secs);
		return -1;
	}
	return 0;
}

/*
 * iWARP: a send that finds no receive at the peer ends the connection.  Its
 * own completion is local (the bytes left), so it may be a success; what
 * must follow is the end of the connection.
 */
static int rnr_iwarp_terminates(struct ctx *c, DAT_EP_HANDLE ep)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;

	for (;;) {
		if (wait_event(c->dto_evd, EVENT_WAIT_US, DAT_DTO_COMPLETION_EVENT, &ev,
			       "the send's completion"))
			return -1;
		d = &ev.event_data.dto_completion_event_data;
		if (d->user_cookie.as_64 == 500)
			break;
	}
	printf("client: iwarp: the send to a peer without receives completed with status %d\n",
	       d->status);
	if (wait_event(c->cs.conn_evd, EVENT_WAIT_US, 0, &ev, "the end of the connection"))
		return -1;
	if (ev.event_number != DAT_CONNECTION_EVENT_BROKEN &&
	    ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) {
		fail("iwarp: connection event %s after the failed send", event_name(ev.event_number));
		return -1;
	}
	printf("client: iwarp: then %s\n", event_name(ev.event_number));
	CHECK_DAT(dat_ep_free(ep));
	return ctx_close(c);
}

static int case_rnr(void)
{
	bool sent = false, echoed = false;
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev;
	double t0, secs;

	if (client_open(&c, &ep))
		return -1;
	if (connect_ep(&c, ep, server_ip, QUAL_SERVER, REQ_RNR, NULL, 60, NRECV))
		return -1;
	t0 = now_s();
	if (post_send_text(&c, ep, 0, 500, "rnr-message"))
		return -1;
	if (ia_is_iwarp(&c.cs))
		return rnr_iwarp_terminates(&c, ep);
	/*
	 * The send's completion and the echo's receive, in either order: the
	 * peer's responder may hand its receive to the consumer before its ACK
	 * is on the wire (rxe does), so the echo can overtake the ACK.  Either
	 * way the send cannot complete before the peer posted its receive.
	 */
	while (!sent || !echoed) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

		if (wait_event(c.dto_evd, EVENT_WAIT_US, DAT_DTO_COMPLETION_EVENT, &ev, NULL))
			break;
		if (d->ep_handle != ep)
			continue;
		if (d->status != DAT_DTO_SUCCESS || (d->user_cookie.as_64 != 500 &&
						      d->user_cookie.as_64 != 0)) {
			fail("dto cookie %llu status %d, expected the send (500) and the echo (0)",
			     (unsigned long long)d->user_cookie.as_64, d->status);
			break;
		}
		if (d->user_cookie.as_64 == 500) {
			sent = true;
			secs = now_s() - t0;
			printf("client: send to a peer without receives completed after %.2f s\n",
			       secs);
			if (secs < 1.0)
				fail("the send completed after %.2f s, before the peer posted its "
				     "receive", secs);
		} else {
			echoed = true;
			/* the peer echoes what it got: the message arrived intact */
			if (strcmp(c.buf, "rnr-message"))
				fail("echo \"%.*s\", expected \"rnr-message\"", MSG_LEN, c.buf);
		}
	}
	/* ends the connection even after a failure: the server serves the next case */
	if (disconnect_ep(&c, ep))
		return -1;
	CHECK_DAT(dat_ep_free(ep));
	if (ctx_close(&c) || !sent || !echoed)
		return -1;
	return 0;
}

/*
 * A peer that accepts seconds after the request came (a busy node): the
 * connection must come up within the consumer's timeout, not time out or
 * break, and carry data.
 */
static int case_slow_accept(void)
{
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev;
	double t0, secs;

	if (client_open(&c, &ep))
		return -1;
	t0 = now_s();
	if (connect_ep(&c, ep, server_ip, QUAL_SERVER, REQ_SLOW, NULL, 60, NRECV))
		return -1;
	secs = now_s() - t0;
	printf("client: a peer accepting late: ESTABLISHED after %.2f s\n", secs);
	if (secs < SLOW_ACCEPT_S - 0.5)
		fail("ESTABLISHED after %.2f s, before the peer accepted", secs);
	if (post_send_text(&c, ep, 0, 600, "slow-message") ||
	    wait_dto(&c, ep, 600, DAT_DTO_SUCCESS, &ev) || wait_dto(&c, ep, 0, DAT_DTO_SUCCESS, &ev))
		return -1;
	if (strcmp(c.buf, "slow-message"))
		fail("echo \"%.*s\", expected \"slow-message\"", MSG_LEN, c.buf);
	if (disconnect_ep(&c, ep))
		return -1;
	CHECK_DAT(dat_ep_free(ep));
	if (!failures)
		printf("ok slow_accept: ESTABLISHED %.1f s after connect, data flows\n", secs);
	return ctx_close(&c);
}

/*
 * late_accept: the server accepts LATE_ACCEPT_S after the request.  IB and
 * RoCE: the CM repeats the REQ and drops the duplicates, so the late REP
 * still makes the connection: ESTABLISHED after LATE_ACCEPT_S, data flows.
 * iWARP: the initiator's kernel ends the connect when the MPA reply is 10 s
 * late (siw), which a provider cannot extend: UNREACHABLE, at that deadline,
 * never BROKEN, never a hang.  Either way the server then serves the next
 * connection.
 */
static int late_outcome(struct ctx *c, DAT_EP_HANDLE ep, const DAT_EVENT *ev, double secs)
{
	DAT_EVENT dto;

	if (ia_is_iwarp(&c->cs)) {
		if (ev->event_number != DAT_CONNECTION_EVENT_UNREACHABLE || secs < SIW_MPA_REPLY_S - 1)
			fail("iwarp: %s after %.2f s, expected UNREACHABLE at the MPA reply "
			     "deadline (10 s)", event_name(ev->event_number), secs);
		return failures ? -1 : 0;
	}
	if (ev->event_number != DAT_CONNECTION_EVENT_ESTABLISHED || secs < LATE_ACCEPT_S - 0.5) {
		fail("%s after %.2f s, expected ESTABLISHED once the peer accepted (%d s)",
		     event_name(ev->event_number), secs, LATE_ACCEPT_S);
		return -1;
	}
	if (post_send_text(c, ep, 0, 700, "late-message") ||
	    wait_dto(c, ep, 700, DAT_DTO_SUCCESS, &dto) || wait_dto(c, ep, 0, DAT_DTO_SUCCESS, &dto))
		return -1;
	if (strcmp(c->buf, "late-message"))
		fail("echo \"%.*s\", expected \"late-message\"", MSG_LEN, c->buf);
	return disconnect_ep(c, ep);
}

static int case_late_accept(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
	char what = REQ_LATE;
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev;
	double t0, secs;
	bool iwarp;

	inet_pton(AF_INET, server_ip, &sin.sin_addr);
	if (client_open(&c, &ep))
		return -1;
	t0 = now_s();
	/* the consumer's timeout is far beyond the late accept: not what ends it */
	CHECK_DAT(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, QUAL_SERVER,
				 (DAT_TIMEOUT)(4 * LATE_ACCEPT_S * SEC_US), 1, &what,
				 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	if (wait_event(c.cs.conn_evd, (uint64_t)5 * LATE_ACCEPT_S * SEC_US, 0, &ev, "late connect"))
		return -1;
	secs = now_s() - t0;
	printf("client: a peer accepting after %d s: %s after %.2f s\n", LATE_ACCEPT_S,
	       event_name(ev.event_number), secs);
	if (late_outcome(&c, ep, &ev, secs))
		return -1;
	CHECK_DAT(dat_ep_free(ep));
	iwarp = ia_is_iwarp(&c.cs);
	if (ctx_close(&c))
		return -1;
	/*
	 * iWARP: the server sleeps until its late accept whatever happened
	 * here, and a request it holds that long meets the same deadline; the
	 * next one goes after that scheduled accept, LATE_ACCEPT_S after the
	 * request reached it, which was SIW_MPA_REPLY_S before UNREACHABLE (not
	 * a poll for readiness: nothing here can see the server's sleep end)
	 */
	if (iwarp)
		sleep_ms((LATE_ACCEPT_S - SIW_MPA_REPLY_S + 1) * 1000);
	/* the server, whose accept came too late or just in time, serves on */
	if (reach_server(QUAL_SERVER, 60, "after-late"))
		return -1;
	if (!failures)
		printf("ok late_accept: %s after %.1f s, the server serves on\n",
		       event_name(ev.event_number), secs);
	return 0;
}

#define HANGUP_ROUNDS 24

/*
 * One round of hangup_soon: the peer disconnects the moment it sees
 * ESTABLISHED.  This side only waits: DISCONNECTED must follow, nothing
 * else, and the IA's async EVD must stay empty (an operation of the
 * provider's own, posted as the peer's close crosses it, must not turn a
 * graceful end into a fatal QP error).
 */
static int hangup_round(struct ctx *c, int round)
{
	DAT_EP_HANDLE ep;
	DAT_EVENT ev;
	DAT_RETURN r;

	if (ep_with_recvs(c, &ep))
		return -1;
	if (connect_ep(c, ep, server_ip, QUAL_SERVER, REQ_HANGUP, NULL, 60, NRECV))
		return -1;
	if (wait_event(c->cs.conn_evd, EVENT_WAIT_US, 0, &ev, "the peer's hang-up"))
		return -1;
	if (ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED)
		fail("round %d: %s after the peer's graceful disconnect, not DISCONNECTED", round,
		     event_name(ev.event_number));
	r = dat_evd_dequeue(c->cs.async_evd, &ev);
	if (r == DAT_SUCCESS)
		fail("round %d: async event %s on a graceful end", round,
		     event_name(ev.event_number));
	else if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY)
		fail("round %d: async evd dequeue: %s", round, dat_errstr(r));
	/* the receives come back flushed, each once */
	for (int i = 0; i < NRECV; i++)
		if (wait_dto(c, ep, (uint64_t)i, DAT_DTO_ERR_FLUSHED, &ev))
			return -1;
	CHECK_DAT(dat_ep_free(ep));
	return 0;
}

static int case_hangup_soon(void)
{
	struct ctx c;

	if (ctx_open(&c, 64))
		return -1;
	for (int round = 0; round < HANGUP_ROUNDS && !failures; round++)
		if (hangup_round(&c, round))
			return -1;
	if (!failures)
		printf("ok hangup_soon: %d peers hung up at ESTABLISHED: DISCONNECTED each, "
		       "no async event\n", HANGUP_ROUNDS);
	return ctx_close(&c);
}

#define OVF_QLEN 4
#define OVF_N 16

static int case_evd_overflow(void)
{
	struct peer_rmr peer[PEER_COUNT];
	DAT_EVD_HANDLE req_evd;
	DAT_EVD_PARAM ep_;
	DAT_EP_HANDLE ep;
	struct ctx c;
	DAT_EVENT ev;
	int got = 0, asyncs = 0;
	double t0;

	if (ctx_open(&c, 64))
		return -1;
	CHECK_DAT(dat_evd_create(c.cs.ia, OVF_QLEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd));
	CHECK_DAT(dat_evd_query(req_evd, DAT_EVD_FIELD_EVD_QLEN, &ep_));
	if (ep_make(&c, req_evd, NRECV, OVF_N, &ep))
		return -1;
	if (connect_ep(&c, ep, server_ip, QUAL_SERVER, REQ_ECHO, peer, 60, 0))
		return -1;
	for (int i = 0; i < OVF_N; i++) {
		DAT_LMR_TRIPLET iov = iov_at(&c, BUF_LEN / 2, 64);
		DAT_RMR_TRIPLET rmr = { .rmr_context = peer[PEER_RW].rkey,
					.virtual_address = peer[PEER_RW].va + 64 * i,
					.segment_length = 64 };

		CHECK_DAT(dat_ep_post_rdma_write(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)(200 + i),
						 &rmr, DAT_COMPLETION_DEFAULT_FLAG));
	}
	/* let every write complete before anybody looks at the EVD: a nudge,
	 * not an assumption (completions dequeued sooner pass the same checks) */
	sleep_ms(2000);
	t0 = now_s();
	while (got < OVF_N && now_s() - t0 < 30) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		DAT_RETURN r = dat_evd_dequeue(req_evd, &ev);

		if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
			sleep_ms(10);
			continue;
		}
		if (r != DAT_SUCCESS) {
			fail("dequeue: %s", dat_errstr(r));
			return -1;
		}
		if (d->status != DAT_DTO_SUCCESS || d->user_cookie.as_64 != (uint64_t)(200 + got)) {
			fail("completion %d: cookie %llu status %d", got,
			     (unsigned long long)d->user_cookie.as_64, d->status);
			return -1;
		}
		got++;
	}
	while (dat_evd_dequeue(c.cs.async_evd, &ev) == DAT_SUCCESS)
		asyncs++;
	printf("client: evd qlen %d (asked %d): %d of %d completions dequeued, %d async events\n",
	       ep_.evd_qlen, OVF_QLEN, got, OVF_N, asyncs);
	if (got != OVF_N)
		fail("%d of %d completions lost", OVF_N - got, OVF_N);
	if (asyncs)
		fail("%d async events (overflow reported)", asyncs);
	if (disconnect_ep(&c, ep))
		return -1;
	CHECK_DAT(dat_ep_free(ep));
	CHECK_DAT(dat_evd_free(req_evd));
	return ctx_close(&c);
}

enum access_kind { ACC_WRITE_NO_PRIV, ACC_WRITE_BAD_RKEY, ACC_READ_NO_PRIV };

static int case_access(enum access_kind kind)
{
	struct peer_rmr peer[PEER_COUNT];
	DAT_RMR_TRIPLET rmr;
	DAT_LMR_TRIPLET iov;
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM param;
	struct ctx c;
	DAT_EVENT ev;
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
	DAT_RETURN r;
	bool got_dto = false, got_conn = false, iwarp;
	double t0;

	if (ctx_open(&c, 64) || ep_make(&c, c.dto_evd, NRECV, 8, &ep))
		return -1;
	if (connect_ep(&c, ep, server_ip, QUAL_SERVER, REQ_ECHO, peer, 60, 0))
		return -1;
	iwarp = ia_is_iwarp(&c.cs);
	iov = iov_at(&c, BUF_LEN / 2, 256);
	memset(c.buf + BUF_LEN / 2, 'W', 256);
	switch (kind) {
	case ACC_WRITE_NO_PRIV:
		rmr = (DAT_RMR_TRIPLET){ .rmr_context = peer[PEER_NO_WRITE].rkey,
					.virtual_address = peer[PEER_NO_WRITE].va,
					.segment_length = 256 };
		break;
	case ACC_WRITE_BAD_RKEY:
		rmr = (DAT_RMR_TRIPLET){ .rmr_context = peer[PEER_RW].rkey + 1,
					.virtual_address = peer[PEER_RW].va,
					.segment_length = 256 };
		break;
	default:
		rmr = (DAT_RMR_TRIPLET){ .rmr_context = peer[PEER_NO_READ].rkey,
					.virtual_address = peer[PEER_NO_READ].va,
					.segment_length = 256 };
		break;
	}
	if (kind == ACC_READ_NO_PRIV)
		r = dat_ep_post_rdma_read(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)300, &rmr,
					  DAT_COMPLETION_DEFAULT_FLAG);
	else
		r = dat_ep_post_rdma_write(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)300, &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	if (r != DAT_SUCCESS) {
		fail("post: %s", dat_errstr(r));
		return -1;
	}
	t0 = now_s();
	while ((!got_dto || !got_conn) && now_s() - t0 < 30) {
		if (!got_conn && dat_evd_dequeue(c.cs.conn_evd, &ev) == DAT_SUCCESS) {
			got_conn = true;
			printf("client: connection event %s after %.2f s\n",
			       event_name(ev.event_number), now_s() - t0);
			/* iWARP: the responder's Terminate closes the stream */
			if (ev.event_number != DAT_CONNECTION_EVENT_BROKEN &&
			    (!iwarp || ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED))
				fail("connection event %s, expected BROKEN%s",
				     event_name(ev.event_number), iwarp ? " or DISCONNECTED" : "");
			continue;
		}
		if (!got_dto && dat_evd_dequeue(c.dto_evd, &ev) == DAT_SUCCESS) {
			if (d->ep_handle != ep)
				continue;
			got_dto = true;
			printf("client: dto status %d after %.2f s\n", d->status, now_s() - t0);
			/*
			 * iWARP completes an RDMA write locally: it may succeed,
			 * and the responder ends the connection.  A read must
			 * fail there too; IB reports the remote access error.
			 */
			if (d->user_cookie.as_64 != 300 ||
			    (!iwarp && d->status != DAT_DTO_ERR_REMOTE_ACCESS) ||
			    (iwarp && kind == ACC_READ_NO_PRIV && d->status == DAT_DTO_SUCCESS))
				fail("dto cookie %llu status %d, expected 300 %s", (unsigned long long)
				     d->user_cookie.as_64, d->status,
				     iwarp ? "with any status but a read's success" :
				     "REMOTE_ACCESS");
			continue;
		}
		sleep_ms(5);
	}
	if (!got_dto || !got_conn)
		fail("within 30 s: dto %s, connection event %s", got_dto ? "seen" : "missing",
		     got_conn ? "seen" : "missing");
	CHECK_DAT(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &param));
	if (param.ep_state != DAT_EP_STATE_DISCONNECTED)
		fail("ep state %d after BROKEN, expected DISCONNECTED", param.ep_state);
	/* a broken EP refuses new work */
	r = dat_ep_post_rdma_write(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)301, &rmr,
				   DAT_COMPLETION_DEFAULT_FLAG);
	if (DAT_GET_TYPE(r) != DAT_INVALID_STATE && r != DAT_SUCCESS)
		fail("post on a broken ep: %s", dat_errstr(r));
	CHECK_DAT(dat_ep_free(ep));
	return ctx_close(&c);
}

static int case_abrupt_close(void)
{
	DAT_EP_HANDLE ep, idle_ep;
	DAT_LMR_HANDLE extra_lmr;
	DAT_EVD_HANDLE extra_evd;
	DAT_PSP_HANDLE psp;
	DAT_LMR_CONTEXT lkey;
	DAT_REGION_DESCRIPTION region;
	struct ctx c;
	DAT_RETURN r;
	double t0;

	if (ctx_open(&c, 64) || ep_make(&c, c.dto_evd, NRECV, 8, &ep) ||
	    ep_make(&c, c.dto_evd, NRECV, 8, &idle_ep))
		return -1;
	for (int i = 0; i < NRECV; i++)
		if (post_recv(&c, ep, i, i) || post_recv(&c, idle_ep, i, 100 + i))
			return -1;
	if (connect_ep(&c, ep, server_ip, QUAL_SERVER, REQ_ECHO, NULL, 60, NRECV) ||
	    echo_roundtrip(&c, ep, 0, "before-abrupt-close"))
		return -1;
	region.for_va = c.buf + BUF_LEN / 2;
	CHECK_DAT(dat_lmr_create(c.cs.ia, DAT_MEM_TYPE_VIRTUAL, region, 65536, c.cs.pz,
				 DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &extra_lmr, &lkey, NULL,
				 NULL, NULL));
	CHECK_DAT(dat_evd_create(c.cs.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &extra_evd));
	CHECK_DAT(dat_psp_create(c.cs.ia, QUAL_SERVER + 7, c.cs.cr_evd, DAT_PSP_CONSUMER_FLAG,
				 &psp));
	/* a send in flight too */
	if (post_send_text(&c, ep, 1, 501, "in-flight-at-close"))
		return -1;
	t0 = now_s();
	alarm(20);
	r = dat_ia_close(c.cs.ia, DAT_CLOSE_ABRUPT_FLAG);
	alarm(0);
	printf("client: ia_close(ABRUPT) with live objects: %s after %.2f s\n", dat_errstr(r),
	       now_s() - t0);
	if (r != DAT_SUCCESS)
		fail("dat_ia_close(ABRUPT): %s", dat_errstr(r));
	free(c.buf);
	return r == DAT_SUCCESS ? 0 : -1;
}

static int case_ep_limit(void)
{
	int max = getenv("OFX_FAULT_EP_MAX") ? atoi(getenv("OFX_FAULT_EP_MAX")) : 20000;
	DAT_EP_HANDLE *eps = calloc(max, sizeof(*eps));
	DAT_EP_ATTR attr;
	struct ctx c;
	DAT_RETURN r = DAT_SUCCESS;
	int n;

	if (!eps || ctx_open(&c, 64))
		return -1;
	if (ep_attr(&c, 2, 2, &attr))
		return -1;
	for (n = 0; n < max; n++) {
		r = dat_ep_create(c.cs.ia, c.cs.pz, c.dto_evd, c.dto_evd, c.cs.conn_evd, &attr,
				  &eps[n]);
		if (r != DAT_SUCCESS)
			break;
	}
	printf("client: %d EPs created, then %s\n", n,
	       n < max ? dat_errstr(r) : "limit of the test");
	if (n == max) {
		fail("no refusal within %d EPs", max);
	} else if (DAT_GET_TYPE(r) != DAT_INSUFFICIENT_RESOURCES) {
		fail("ep_create %d: %s, expected DAT_INSUFFICIENT_RESOURCES", n, dat_errstr(r));
	} else if (n < 1) {
		fail("not even one EP");
	}
	if (n >= 1) {
		/* the earliest EP still works: receive, connect, echo */
		if (post_recv(&c, eps[0], 0, 0) ||
		    connect_ep(&c, eps[0], server_ip, QUAL_SERVER, REQ_ECHO, NULL, 60, 1) ||
		    echo_roundtrip(&c, eps[0], 0, "first-of-many") || disconnect_ep(&c, eps[0]))
			fail("the first EP no longer works");
		/* and the last one too, on a second connection */
		if (n > 1 && (post_recv(&c, eps[n - 1], 0, 0) ||
			      connect_ep(&c, eps[n - 1], server_ip, QUAL_SERVER, REQ_ECHO, NULL, 60, 1) ||
			      echo_roundtrip(&c, eps[n - 1], 0, "last-of-many") ||
			      disconnect_ep(&c, eps[n - 1])))
			fail("the last EP created does not work");
	}
	for (int i = 0; i < n; i++)
		CHECK_DAT(dat_ep_free(eps[i]));
	free(eps);
	return ctx_close(&c);
}

static int case_quit(void)
{
	DAT_EVENT_NUMBER num;
	double secs;

	/* the server rejects the request and exits */
	if (connect_expect_failure(server_ip, QUAL_SERVER, 10 * SEC_US, REQ_QUIT, &num, &secs))
		return -1;
	printf("client: quit request: %s after %.2f s\n", event_name(num), secs);
	if (num != DAT_CONNECTION_EVENT_PEER_REJECTED)
		fail("quit: %s, expected PEER_REJECTED", event_name(num));
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "peer_killed", case_peer_killed },
	{ "peer_vanished", case_peer_vanished },
	{ "passive_killed", case_passive_killed },
	{ "gate_victim", case_gate_victim },
	{ "echo_victim", case_echo_victim },
	{ "quit_victim", case_quit_victim },
	{ "no_listener", case_no_listener },
	{ "unreachable", case_unreachable },
	{ "unreachable_resolve", case_unreachable_resolve },
	{ "rnr", case_rnr },
	{ "slow_accept", case_slow_accept },
	{ "hangup_soon", case_hangup_soon },
	{ "late_accept", case_late_accept },
	{ "evd_overflow", case_evd_overflow },
	{ "access_write_ro", NULL },
	{ "access_bad_rkey", NULL },
	{ "access_read_wo", NULL },
	{ "abrupt_close", case_abrupt_close },
	{ "ep_limit", case_ep_limit },
	{ "quit", case_quit },
};

static int run_case(const char *name)
{
	int before = failures, ret = -1;

	fail_tag = name;
	printf("case %s\n", name);
	if (!strcmp(name, "access_write_ro"))
		ret = case_access(ACC_WRITE_NO_PRIV);
	else if (!strcmp(name, "access_bad_rkey"))
		ret = case_access(ACC_WRITE_BAD_RKEY);
	else if (!strcmp(name, "access_read_wo"))
		ret = case_access(ACC_READ_NO_PRIV);
	else {
		size_t i;

		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			if (!strcmp(cases[i].name, name) && cases[i].fn)
				break;
		if (i == sizeof(cases) / sizeof(cases[0])) {
			fail("unknown case");
			return -1;
		}
		ret = cases[i].fn();
	}
	if (ret || failures != before) {
		if (failures == before)
			fail("failed");
		return -1;
	}
	printf("ok %s\n", name);
	return 0;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: a teardown call hung (alarm)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	fail_tag = "setup";
	signal(SIGALRM, on_alarm);
	{
		/* for server_hold: blocked before any provider thread exists */
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	if (getenv("OFX_FAULT_IA"))
		ia_name = getenv("OFX_FAULT_IA");
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return run_server(argc > 2 ? strtoull(argv[2], NULL, 0) : QUAL_SERVER);
	if (argc < 4 || strcmp(argv[1], "client")) {
		fprintf(stderr, "usage: %s server [QUAL] | client SERVER_IP CASE...\n", argv[0]);
		return 2;
	}
	server_ip = argv[2];
	for (int i = 3; i < argc; i++)
		run_case(argv[i]);
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("ALL FAULT TESTS PASSED\n");
	return 0;
}
