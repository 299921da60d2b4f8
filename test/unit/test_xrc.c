/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "pdata.h"
#include "xrc.h"
#include "xrc_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>

/*
 * XRC-backed EPs against the XRC model (xrc_model.h): several nodes, several
 * processes (IAs) per node, domains shared by file, the handshake of xrc.h
 * driven between the processes and data routed by SRQ number.
 */

#define MSG_LEN 64
#define NBUF 512

static char bufs[NBUF][MSG_LEN];
static uint64_t buf_cookie[NBUF];	/* the cookie each buffer was posted with */
static struct ofx_ep *buf_ep[NBUF];	/* and the EP */
static int nbuf;
static char domfile[4][64];

static void setup(int nodes)
{
	xm_init();
	nbuf = 0;
	for (int i = 0; i < nodes && i < 4; i++) {
		snprintf(domfile[i], sizeof(domfile[i]), "/tmp/ofx-xrc-test-%d-node%d.xrcd",
			 (int)getpid(), i);
		unlink(domfile[i]);
	}
}

static void teardown(int nodes)
{
	xm_fini();
	for (int i = 0; i < nodes && i < 4; i++)
		unlink(domfile[i]);
}

static struct ofx_xrc_stats stats(struct xm_proc *p)
{
	struct ofx_xrc_stats s;

	CU_ASSERT_EQUAL(ofx_xrc_get_stats(&p->ia, &s), 0);
	return s;
}

static void post_recv(struct ofx_ep *ep, uint64_t cookie)
{
	DAT_LMR_TRIPLET iov;
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	CU_ASSERT_FATAL(nbuf < NBUF);
	memset(bufs[nbuf], 0, MSG_LEN);
	buf_cookie[nbuf] = cookie;
	buf_ep[nbuf] = ep;
	iov.lmr_context = 1;
	iov.virtual_address = (uintptr_t)bufs[nbuf++];
	iov.segment_length = MSG_LEN;
	CU_ASSERT_EQUAL(ofx_ep_post_recv(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
}

static DAT_RETURN send_msg(struct ofx_ep *ep, const char *text, uint64_t cookie)
{
	char buf[MSG_LEN];
	DAT_LMR_TRIPLET iov = { .lmr_context = 1, .virtual_address = (uintptr_t)buf,
				.segment_length = (DAT_VLEN)strlen(text) + 1 };
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	snprintf(buf, sizeof(buf), "%s", text);
	return ofx_ep_post_send(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG);
}

/* The buffer posted last on `ep` with `cookie`. */
static const char *buf_of(const struct ofx_ep *ep, uint64_t cookie)
{
	for (int b = nbuf - 1; b >= 0; b--)
		if (buf_cookie[b] == cookie && buf_ep[b] == ep)
			return bufs[b];
	return "";
}

static void expect_recv(struct xm_proc *p, struct ofx_ep *ep, uint64_t cookie, const char *text)
{
	DAT_EVENT ev;
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p->recv_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(d->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(d->transfered_length, strlen(text) + 1);
	CU_ASSERT_STRING_EQUAL(buf_of(ep, cookie), text);
}

static void expect_empty(struct ofx_evd *evd)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(evd, &ev)), DAT_QUEUE_EMPTY);
}

/* Every send completion on `p`'s request EVD is a success; returns how many. */
static int drain_sends(struct xm_proc *p)
{
	DAT_EVENT ev;
	int n = 0;

	while (ofx_evd_dequeue(p->req_evd, &ev) == DAT_SUCCESS) {
		CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
		n++;
	}
	return n;
}

/* The next connection event of `p` is `num` for `ep` (line: the caller's). */
#define expect_conn(p, ep, num) expect_conn_at(p, ep, num, __LINE__)
static void expect_conn_at(struct xm_proc *p, struct ofx_ep *ep, DAT_EVENT_NUMBER num, int line)
{
	DAT_EVENT ev;

	if (ofx_evd_dequeue(p->conn_evd, &ev) != DAT_SUCCESS) {
		fprintf(stderr, "no connection event at line %d\n", line);
		CU_FAIL_FATAL("no connection event");
	}
	if (ev.event_number != num)
		fprintf(stderr, "event 0x%x, expected 0x%x at line %d\n", ev.event_number, num,
			line);
	CU_ASSERT_EQUAL(ev.event_number, num);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, ep);
}

/* A connected pair with `n` receives posted on each side. */
static void pair(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb,
		 int n)
{
	for (int i = 0; i < n; i++) {
		post_recv(ea, 1000 + i);
		post_recv(eb, 2000 + i);
	}
	xm_connect(a, ea, b, eb, "hello", 6, "welcome", 8);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_CONNECTED);
}

/* One process on each node, one EP in each: where most scenarios start. */
static void open_pair(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b,
		      struct ofx_ep **eb)
{
	*a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	*b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	*ea = xm_ep_new(*a);
	*eb = xm_ep_new(*b);
}

/*
 * A on node 0 connected to two processes B1 and B2 of node 1 (the TGT
 * lifetime `mode`), one EP pair each: e1-f1 and e2-f2.
 */
static void open_two_peers(enum ofx_xrc_tgt mode, struct xm_proc **a, struct xm_proc **b1,
			   struct xm_proc **b2, struct ofx_ep **e1, struct ofx_ep **f1,
			   struct ofx_ep **e2, struct ofx_ep **f2)
{
	*a = xm_proc_open(0, domfile[0], mode);
	*b1 = xm_proc_open(1, domfile[1], mode);
	*b2 = xm_proc_open(1, domfile[1], mode);
	*e1 = xm_ep_new(*a);
	*f1 = xm_ep_new(*b1);
	*e2 = xm_ep_new(*a);
	*f2 = xm_ep_new(*b2);
	pair(*a, *e1, *b1, *f1, 2);
	pair(*a, *e2, *b2, *f2, 2);
}

/* B accepts, then dies before A's INI request reaches it: A is refused. */
static void connect_then_peer_dies(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b,
				   struct ofx_ep *eb)
{
	xm_autopump = false;
	xm_connect(a, ea, b, eb, NULL, 0, NULL, 0);
	xm_autopump = true;
	xm_proc_kill(b);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
}

static void test_handshake_exchanges_private_data_and_srq_numbers(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ofx_pdata_hdr hdr;
	const uint8_t *rej;
	DAT_EVENT ev;
	int len;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	post_recv(ea, 1);
	post_recv(eb, 2);
	xm_connect(a, ea, b, eb, "hello", 6, "welcome", 8);

	/* the REQ: consumer bytes raw at offset 0, trailer with the srqn */
	CU_ASSERT_EQUAL(ea->req_pdata_len, 56);
	CU_ASSERT_STRING_EQUAL((char *)ea->req_pdata, "hello");
	CU_ASSERT_EQUAL(ofx_pdata_decode(ea->req_pdata, 56, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC);
	CU_ASSERT_EQUAL(hdr.xrc_srqn >> 24, ofx_xrc_domain_tag(&a->ia) & 0xff);
	/* the REJ accept: stock header, port, version, tag, then data + trailer */
	rej = xm_last_reject(&len);
	CU_ASSERT_EQUAL(len, 148);
	CU_ASSERT_EQUAL(rej[0], 2);
	CU_ASSERT_EQUAL(rej[2], 2);
	CU_ASSERT_EQUAL(rej[4] << 8 | rej[5], ofx_xrc_service_port(&b->ia));
	CU_ASSERT_EQUAL(rej[6], 1);
	CU_ASSERT_EQUAL((uint32_t)rej[8] << 24 | rej[9] << 16 | rej[10] << 8 | rej[11],
			ofx_xrc_domain_tag(&b->ia));
	CU_ASSERT_STRING_EQUAL((const char *)rej + 16, "welcome");
	CU_ASSERT_EQUAL(ofx_pdata_decode(rej + 16, 132, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY);

	/* ESTABLISHED on A carries the accept data */
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->conn_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(ev.event_data.connect_event_data.private_data_size, 8);
	CU_ASSERT_STRING_EQUAL(ev.event_data.connect_event_data.private_data, "welcome");
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ESTABLISHED);

	CU_ASSERT_EQUAL(send_msg(ea, "a->b", 7), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(eb, "b->a", 8), DAT_SUCCESS);
	expect_recv(b, eb, 2, "a->b");
	expect_recv(a, ea, 1, "b->a");
	xm_pump();
	CU_ASSERT_EQUAL(drain_sends(a), 1);
	CU_ASSERT_EQUAL(drain_sends(b), 1);
	CU_ASSERT_EQUAL(stats(a).conn_xrc, 1);
	CU_ASSERT_EQUAL(stats(b).conn_xrc, 1);
	/* one QP pair: A's INI to B's TGT, B's INI to A's TGT */
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
	teardown(2);
}

#define N_NODES 3
#define P_PER_NODE 3
#define N_MSGS 4

/*
 * All-to-all among every pair of processes on different nodes: at most
 * N-1 INI QPs per process (one request EVD each), P*(N-1) TGT QPs per node,
 * and every message lands in the right EP's buffers in order.
 */
static void test_all_to_all_needs_one_ini_per_remote_node(void)
{
	enum { NP = N_NODES * P_PER_NODE };
	struct xm_proc *p[NP];
	struct ofx_ep *ep[NP][NP] = { { 0 } };
	char text[MSG_LEN];

	setup(N_NODES);
	for (int i = 0; i < NP; i++)
		p[i] = xm_proc_open(i / P_PER_NODE, domfile[i / P_PER_NODE],
				    OFX_XRC_TGT_DOMAIN);
	for (int i = 0; i < NP; i++)
		for (int j = i + 1; j < NP; j++) {
			if (p[i]->node == p[j]->node)
				continue;
			ep[i][j] = xm_ep_new(p[i]);
			ep[j][i] = xm_ep_new(p[j]);
			for (int k = 0; k < N_MSGS; k++) {
				post_recv(ep[i][j], (uint64_t)(i * 100 + j) << 8 | k);
				post_recv(ep[j][i], (uint64_t)(j * 100 + i) << 8 | k);
			}
			xm_connect(p[i], ep[i][j], p[j], ep[j][i], NULL, 0, NULL, 0);
			expect_conn(p[i], ep[i][j], DAT_CONNECTION_EVENT_ESTABLISHED);
			expect_conn(p[j], ep[j][i], DAT_CONNECTION_EVENT_ESTABLISHED);
		}
	for (int i = 0; i < NP; i++) {
		struct ofx_xrc_stats s = stats(p[i]);

		CU_ASSERT(s.ini_created <= N_NODES - 1);
		CU_ASSERT_EQUAL(s.ini_live, N_NODES - 1);
		CU_ASSERT_EQUAL(s.conn_xrc, (N_NODES - 1) * P_PER_NODE);
	}
	for (int n = 0; n < N_NODES; n++)
		CU_ASSERT_EQUAL(xm_tgts_on_node(n), P_PER_NODE * (N_NODES - 1));
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), NP * (N_NODES - 1));

	/* everybody sends N_MSGS to everybody, interleaved */
	for (int k = 0; k < N_MSGS; k++)
		for (int i = 0; i < NP; i++)
			for (int j = 0; j < NP; j++)
				if (ep[i][j]) {
					snprintf(text, sizeof(text), "%d->%d #%d", i, j, k);
					CU_ASSERT_EQUAL(send_msg(ep[i][j], text, k), DAT_SUCCESS);
				}
	xm_pump();
	/* each receiver sees, per EP, its peer's messages in order */
	for (int j = 0; j < NP; j++) {
		int next[NP] = { 0 };
		DAT_EVENT ev;

		while (ofx_evd_dequeue(p[j]->recv_evd, &ev) == DAT_SUCCESS) {
			DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
			uint64_t ck = d->user_cookie.as_64;
			int from = (int)(ck >> 8) % 100, k = (int)(ck & 0xff);

			CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
			CU_ASSERT_EQUAL_FATAL((int)(ck >> 8) / 100, j);
			CU_ASSERT_PTR_EQUAL(d->ep_handle, ep[j][from]);
			/* in order: the k-th receive of the EP holds the k-th message */
			CU_ASSERT_EQUAL(k, next[from]);
			snprintf(text, sizeof(text), "%d->%d #%d", from, j, k);
			CU_ASSERT_EQUAL(d->transfered_length, strlen(text) + 1);
			CU_ASSERT_STRING_EQUAL(buf_of(ep[j][from], ck), text);
			next[from]++;
		}
		for (int i = 0; i < NP; i++)
			CU_ASSERT_EQUAL(next[i], ep[j][i] ? N_MSGS : 0);
	}
	teardown(N_NODES);
}

static void test_second_ep_to_a_node_attaches_without_a_new_qp_pair(void)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b1 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	b2 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	CU_ASSERT_EQUAL(ofx_xrc_domain_tag(&b1->ia), ofx_xrc_domain_tag(&b2->ia));
	e1 = xm_ep_new(a);
	f1 = xm_ep_new(b1);
	pair(a, e1, b1, f1, 2);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_RECV), 2);

	/* another process of node 1: A's INI QP and B1's TGT serve it too */
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b2);
	pair(a, e2, b2, f2, 2);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(stats(b2).ini_created, 1);	/* B2 has no INI to node 0 yet */
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 3);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_RECV), 3);
	CU_ASSERT_EQUAL(send_msg(e2, "to b2", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(e1, "to b1", 2), DAT_SUCCESS);
	expect_recv(b2, f2, 2000, "to b2");
	expect_recv(b1, f1, 2000, "to b1");
	teardown(2);
}

static void test_disconnecting_one_ep_leaves_the_others_working(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	open_pair(&a, &e1, &b, &f1);
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b);
	pair(a, e1, b, f1, 4);
	pair(a, e2, b, f2, 4);
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);

	CU_ASSERT_EQUAL(send_msg(e1, "last", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(e1, "too late", 2),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	xm_pump();
	expect_recv(b, f1, 2000, "last");	/* the fence orders it before DISC */
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(f1->state, OFX_EP_DISCONNECTED);
	/* the shared INI QPs stay for the second pair */
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	CU_ASSERT_EQUAL(stats(b).ini_live, 1);
	CU_ASSERT_EQUAL(xm_live_srqs(), 2);
	CU_ASSERT_EQUAL(send_msg(e2, "still here", 3), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "me too", 4), DAT_SUCCESS);
	expect_recv(b, f2, 2000, "still here");
	expect_recv(a, e2, 1000, "me too");

	/* freeing one EP, and resetting the other to connect again */
	CU_ASSERT_EQUAL(ofx_ep_free(f1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_reset(e1), DAT_SUCCESS);
	f1 = xm_ep_new(b);
	pair(a, e1, b, f1, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(send_msg(e1, "again", 5), DAT_SUCCESS);
	expect_recv(b, f1, 2000, "again");

	/* the last EPs going release the INI QPs */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e2, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(stats(b).ini_live, 0);
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);
	teardown(2);
}

/*
 * A's INI QP to node 1 goes to the TGT that B1 created; B2 is reached
 * through it too.  Then B1 closes.
 */
static void tgt_lifetime(enum ofx_xrc_tgt mode)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2, *e3, *f3;
	DAT_EVENT ev;

	setup(2);
	open_two_peers(mode, &a, &b1, &b2, &e1, &f1, &e2, &f2);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(stats(b2).tgt_opened, mode == OFX_XRC_TGT_DOMAIN ? 1 : 0);

	/* B1 disconnects and closes: its TGT creator handle goes */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	xm_proc_close(b1);

	CU_ASSERT_EQUAL(send_msg(e2, "after b1", 9), DAT_SUCCESS);
	xm_pump();
	if (mode == OFX_XRC_TGT_DOMAIN) {
		/* 2a: B2's handle keeps the TGT alive */
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
		expect_recv(b2, f2, 2000, "after b1");
		CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
		CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	} else {
		/* 2b: the TGT died with B1, A's INI QP breaks, and its EP */
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 0);
		expect_empty(b2->recv_evd);
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->req_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_NOT_EQUAL(ev.event_data.dto_completion_event_data.status,
				    DAT_DTO_SUCCESS);
		expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
		CU_ASSERT_EQUAL(e2->state, OFX_EP_DISCONNECTED);
		CU_ASSERT_EQUAL(stats(a).ini_live, 0);
		/* a new EP to node 1 gets a fresh INI QP */
		e3 = xm_ep_new(a);
		f3 = xm_ep_new(b2);
		pair(a, e3, b2, f3, 1);
		CU_ASSERT_EQUAL(stats(a).ini_created, 2);
		CU_ASSERT_EQUAL(stats(b2).tgt_created, 1);
		CU_ASSERT_EQUAL(send_msg(e3, "fresh", 1), DAT_SUCCESS);
		expect_recv(b2, f3, 2000, "fresh");
	}
	teardown(2);
}

static void test_tgt_lifetime_domain_outlives_its_creator(void)
{
	tgt_lifetime(OFX_XRC_TGT_DOMAIN);
}

static void test_tgt_lifetime_exit_dies_with_its_creator(void)
{
	tgt_lifetime(OFX_XRC_TGT_EXIT);
}

static void test_empty_srq_holds_messages_then_rnr_breaks_the_ini_qp(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	DAT_LMR_TRIPLET iov = { .lmr_context = 1, .virtual_address = (uintptr_t)bufs[0],
				.segment_length = 8 };
	DAT_DTO_COOKIE c = { .as_64 = 0 };
	int i;

	setup(2);
	open_pair(&a, &e1, &b, &f1);
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b);
	pair(a, e1, b, f1, 0);
	pair(a, e2, b, f2, 0);

	/* the SRQ takes max_recv_dtos receives, no more */
	for (i = 0; i < 9; i++)	/* max_recv_dtos + 1, as the RC QP */
		post_recv(f2, 2000 + i);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_post_recv(f2, 1, &iov, c, 0)),
			DAT_INSUFFICIENT_RESOURCES);

	/* no receive: RNR retry holds the message until one is posted */
	CU_ASSERT_EQUAL(send_msg(e1, "early", 1), DAT_SUCCESS);
	xm_pump();
	expect_empty(b->recv_evd);
	post_recv(f1, 2000);
	expect_recv(b, f1, 2000, "early");

	/* with a retry limit the INI QP fails: both EPs on it break */
	xm_rnr_limited = true;
	CU_ASSERT_EQUAL(send_msg(e1, "no room", 2), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(e2->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(send_msg(e2, "dead", 3),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	teardown(2);
}

static void test_peer_gone_breaks_every_ep_on_its_ini_qp(void)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2, *e3, *f3;

	setup(2);
	open_two_peers(OFX_XRC_TGT_DOMAIN, &a, &b1, &b2, &e1, &f1, &e2, &f2);

	/* B2 dies: its SRQs go, nothing is said */
	xm_proc_kill(b2);
	CU_ASSERT_EQUAL(send_msg(e2, "to the dead", 1), DAT_SUCCESS);
	xm_pump();
	/* fate sharing: both EPs on A's INI QP break */
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	(void)f1;
	(void)f2;

	/* a new connection to B1 works over a fresh INI QP */
	CU_ASSERT_EQUAL(ofx_ep_free(e1), DAT_SUCCESS);
	e3 = xm_ep_new(a);
	f3 = xm_ep_new(b1);
	pair(a, e3, b1, f3, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, 2);
	CU_ASSERT_EQUAL(send_msg(e3, "hi", 1), DAT_SUCCESS);
	expect_recv(b1, f3, 2000, "hi");
	teardown(2);
}

static void test_connect_to_a_vanished_peer_fails_the_ep(void)
{
	struct xm_proc *a, *b, *c;
	struct ofx_ep *ea, *eb, *e2, *f2;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	c = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	ea = xm_ep_new(a);
	eb = xm_ep_new(b);
	connect_then_peer_dies(a, ea, b, eb);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 1);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);

	/* an established peer that dies: A's fence names its SRQ and fails */
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	e2 = xm_ep_new(c);
	f2 = xm_ep_new(a);
	pair(c, e2, a, f2, 1);
	xm_proc_kill(c);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f2, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, f2, DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(f2->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	teardown(2);
}

static void test_non_xrc_peer_gets_plain_rc(void)
{
	struct xm_proc *a;
	struct ofx_ep *ea;
	struct ofx_pdata_hdr hdr;
	bool offered = false;
	char big[50];

	setup(1);
	a = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	ea = xm_ep_new(a);

	/* stock sees its 48 bytes at offset 0; a REP makes the connection RC */
	memset(big, 'x', sizeof(big));
	pthread_mutex_lock(&ea->lock);
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 44, &offered), 0);
	CU_ASSERT_TRUE(offered);
	CU_ASSERT_TRUE(ofx_xrc_offered(ea));
	CU_ASSERT_EQUAL(memcmp(ea->req_pdata, big, 44), 0);
	CU_ASSERT_EQUAL(ofx_pdata_decode(ea->req_pdata, ea->req_pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(xm_live_srqs(), 1);
	ofx_xrc_fallback(ea);
	CU_ASSERT_FALSE(ofx_xrc_offered(ea));
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);
	CU_ASSERT_EQUAL(ofx_xrc_ep_reset(ea), 0);
	/* an offer that timed out or was rejected: reset closes its SRQ */
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 4, &offered), 0);
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 4, &offered), 0);
	CU_ASSERT_EQUAL(xm_live_srqs(), 1);
	CU_ASSERT_EQUAL(ofx_xrc_ep_reset(ea), 0);
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);
	/* more than 44 bytes: no room for the trailer, no offer */
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 45, &offered), 0);
	CU_ASSERT_FALSE(offered);
	/* p2p requested: no offer (p2p connections are RC) */
	ea->p2p_attr = OFX_ON;
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 4, &offered), 0);
	CU_ASSERT_FALSE(offered);
	pthread_mutex_unlock(&ea->lock);
	CU_ASSERT_EQUAL(stats(a).conn_rc, 1);
	teardown(1);
}

static void test_accept_declines_requests_without_an_offer(void)
{
	struct xm_proc *b;
	struct ofx_ep *eb;
	struct ofx_cr cr;
	int ret = 0;

	setup(1);
	b = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	eb = xm_ep_new(b);
	memset(&cr, 0, sizeof(cr));
	pthread_mutex_lock(&eb->lock);
	/* a stock REQ: no trailer */
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	/* an offer with p2p, or accept data that does not fit the REJ */
	cr.has_hdr = true;
	cr.hdr.flags = OFX_PDATA_F_XRC | OFX_PDATA_F_P2P;
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	cr.hdr.flags = OFX_PDATA_F_XRC;
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, OFX_XRC_ACCEPT_MAX + 1, &ret));
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);
	CU_ASSERT_EQUAL(stats(b).conn_rc, 3);
	teardown(1);
}

static void test_domain_file_is_shared_private_and_checked(void)
{
	struct xm_proc *p1, *p2, *p3, *p4 = NULL;
	struct stat st;
	char missing[96];

	setup(2);
	p1 = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	p2 = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	p3 = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	/* same file, same tag; the file is private to the user and holds it */
	CU_ASSERT_EQUAL(ofx_xrc_domain_tag(&p1->ia), ofx_xrc_domain_tag(&p2->ia));
	CU_ASSERT_NOT_EQUAL(ofx_xrc_domain_tag(&p1->ia), ofx_xrc_domain_tag(&p3->ia));
	CU_ASSERT_EQUAL_FATAL(stat(domfile[0], &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL(st.st_size, 22);

	/* an unopenable path fails ia_open */
	snprintf(missing, sizeof(missing), "/nonexistent-dir-%d/x.xrcd", (int)getpid());
	CU_ASSERT_EQUAL(xm_proc_try_open(1, missing, false, &p4), -ENOENT);
	CU_ASSERT_PTR_NULL(p4);
	if (geteuid() == 0) {
		/* foreign-owned file: refused unless xrcd_foreign=yes */
		int fd = open(domfile[1], O_RDWR | O_CREAT, 0600);

		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(fchown(fd, 65534, 65534), 0);
		close(fd);
		CU_ASSERT_EQUAL(xm_proc_try_open(1, domfile[1], false, &p4), -EPERM);
		CU_ASSERT_EQUAL(xm_proc_try_open(1, domfile[1], true, &p4), 0);
		CU_ASSERT_PTR_NOT_NULL(p4);
	} else {
		/* a file of root's that we cannot write */
		CU_ASSERT_EQUAL(xm_proc_try_open(1, "/etc/hostname", false, &p4), -EACCES);
		CU_ASSERT_EQUAL(xm_proc_try_open(1, "/etc/hostname", true, &p4), -EACCES);
	}
	teardown(2);
}

/* dapltest's pattern: the passive EP is reset and accepts again after DISCONNECTED. */
static void test_passive_ep_resets_and_accepts_again(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	for (int round = 0; round < 3; round++) {
		pair(a, ea, b, eb, 1);
		CU_ASSERT_EQUAL(send_msg(eb, "ping", round), DAT_SUCCESS);
		expect_recv(a, ea, 1000, "ping");
		/* the active side hangs up; the passive one hears it first */
		CU_ASSERT_EQUAL(ofx_ep_disconnect(ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
		xm_pump();
		expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
		CU_ASSERT_EQUAL(ofx_ep_reset(eb), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
		CU_ASSERT_EQUAL(xm_live_srqs(), 0);
		drain_sends(a);
		drain_sends(b);
	}
	/* the last EP of an INI QP took it along each time */
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(stats(a).ini_created, 3);
	CU_ASSERT_EQUAL(stats(b).ini_created, 3);
	CU_ASSERT_EQUAL(stats(a).conn_xrc, 3);
	teardown(2);
}

/* A disconnect before ESTABLISHED ends both sides without data. */
static void test_disconnect_while_pending_ends_both_sides(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ofx_cr cr;
	bool offered;
	int ret = -1;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	pthread_mutex_lock(&ea->lock);
	ea->remote_addr = b->ia.addr;
	ea->state = OFX_EP_ACTIVE_PENDING;
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, NULL, 0, &offered), 0);
	pthread_mutex_unlock(&ea->lock);
	memset(&cr, 0, sizeof(cr));
	cr.cm_id = (struct rdma_cm_id *)&cr;
	cr.remote_addr = a->ia.addr;
	CU_ASSERT_EQUAL(ofx_pdata_decode(ea->req_pdata, ea->req_pdata_len, &cr.hdr), 0);
	cr.has_hdr = true;
	pthread_mutex_lock(&eb->lock);
	CU_ASSERT_TRUE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_COMPLETION_PENDING);

	/* B gives up before A's CONFIRM: A's CONFIRM then finds nobody */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(eb, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(xm_live_srqs(), 1);	/* A's, from its offer */
	xm_pump();
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(xm_live_srqs(), 0);
	teardown(2);
}

/*
 * The same over the rdma_cm carrier (xrc_cm.c): SIDR control messages, the
 * INI connection with rdma_init_qp_attr()'s attributes, ids released.
 */
static void test_rdma_cm_carrier_connects_shares_and_disconnects(void)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b1 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	b2 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	CU_ASSERT_NOT_EQUAL(ofx_xrc_service_port(&a->ia), 0);
	CU_ASSERT_NOT_EQUAL(ofx_xrc_service_port(&b1->ia), ofx_xrc_service_port(&b2->ia));
	e1 = xm_ep_new(a);
	f1 = xm_ep_new(b1);
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b2);
	pair(a, e1, b1, f1, 2);
	pair(a, e2, b2, f2, 2);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 3);

	CU_ASSERT_EQUAL(send_msg(e1, "over cm 1", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(e2, "over cm 2", 2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "back", 3), DAT_SUCCESS);
	expect_recv(b1, f1, 2000, "over cm 1");
	expect_recv(b2, f2, 2000, "over cm 2");
	expect_recv(a, e2, 1000, "back");

	CU_ASSERT_EQUAL(ofx_ep_disconnect(e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b1, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(send_msg(e2, "still", 4), DAT_SUCCESS);
	expect_recv(b2, f2, 2001, "still");
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 0);
	teardown(2);
}

/* Over rdma_cm, a request to a process that is gone is tried 3 times, then fails. */
static void test_rdma_cm_carrier_gives_up_after_its_tries(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	connect_then_peer_dies(a, ea, b, eb);
	CU_ASSERT_EQUAL(stats(a).ctl_sent, 1);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 1);
	CU_ASSERT_EQUAL(xm_cm_connects(), OFX_XRC_CTL_TRIES);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	teardown(2);
}

CU_TestInfo ofx_test_xrc[] = {
	{ "handshake exchanges private data and srq numbers",
	  test_handshake_exchanges_private_data_and_srq_numbers },
	{ "all-to-all needs one ini qp per remote node, messages land in order",
	  test_all_to_all_needs_one_ini_per_remote_node },
	{ "second ep to a node attaches without a new qp pair",
	  test_second_ep_to_a_node_attaches_without_a_new_qp_pair },
	{ "disconnecting one ep leaves the others working",
	  test_disconnecting_one_ep_leaves_the_others_working },
	{ "tgt lifetime domain (2a) outlives its creator",
	  test_tgt_lifetime_domain_outlives_its_creator },
	{ "tgt lifetime exit (2b) dies with its creator",
	  test_tgt_lifetime_exit_dies_with_its_creator },
	{ "empty srq holds messages (rnr), rnr beyond retry breaks the ini qp",
	  test_empty_srq_holds_messages_then_rnr_breaks_the_ini_qp },
	{ "peer gone breaks every ep on its ini qp", test_peer_gone_breaks_every_ep_on_its_ini_qp },
	{ "connect to a vanished peer fails the ep, a dead peer breaks it",
	  test_connect_to_a_vanished_peer_fails_the_ep },
	{ "non-xrc peer gets plain rc", test_non_xrc_peer_gets_plain_rc },
	{ "accept declines requests without an offer",
	  test_accept_declines_requests_without_an_offer },
	{ "domain file is shared, private or checked",
	  test_domain_file_is_shared_private_and_checked },
	{ "passive ep resets and accepts again (dapltest)",
	  test_passive_ep_resets_and_accepts_again },
	{ "disconnect while pending ends both sides",
	  test_disconnect_while_pending_ends_both_sides },
	{ "rdma_cm carrier connects, shares the ini qp and disconnects",
	  test_rdma_cm_carrier_connects_shares_and_disconnects },
	{ "rdma_cm carrier gives up after its tries",
	  test_rdma_cm_carrier_gives_up_after_its_tries },
	CU_TEST_INFO_NULL,
};
