/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "cm.h"
#include "ep_cm.h"
#include "ep_xrc.h"
#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "lmr.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "rmr.h"
#include "sp.h"
#include "verbs.h"
#include "xrc.h"
#include "xrc_model.h"
#include "xrc_steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <dat2/dat_ib_extensions.h>

/*
 * XRC-backed EPs against the XRC model (xrc_model.h): several nodes, several
 * processes (IAs) per node, domains shared by file, the handshake of xrc.h
 * driven between the processes and data routed by SRQ number.
 */

/* RESET->INIT of any QP type: the kernel requires the access flags of each */
#define XM_RC_INIT_MASK \
	(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)

/*
 * open_pair and a second EP pair beside the first: e1 and e2 of A share
 * A's INI QP to B, f1 and f2 B's INI QP back; n1 (n2) receives posted on
 * each side of the first (second) pair.
 */
static void open_shared_pairs(struct xm_proc **a, struct xm_proc **b, struct ofx_ep **e1,
			      struct ofx_ep **f1, struct ofx_ep **e2, struct ofx_ep **f2, int n1,
			      int n2)
{
	open_pair(a, e1, b, f1);
	*e2 = xm_ep_new(*a);
	*f2 = xm_ep_new(*b);
	pair(*a, *e1, *b, *f1, n1);
	pair(*a, *e2, *b, *f2, n2);
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

/* A new EP pair from `a` to `b` connects over `a`'s n-th INI QP and carries a message. */
static void pair_over_new_ini(struct xm_proc *a, struct xm_proc *b, unsigned long n)
{
	struct ofx_ep *ea = xm_ep_new(a), *eb = xm_ep_new(b);

	pair(a, ea, b, eb, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, n);
	CU_ASSERT_EQUAL(send_msg(ea, "fresh", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "fresh");
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

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	post_recv(ea, 1);
	post_recv(eb, 2);
	xm_connect(a, ea, b, eb, "hello", 6, "welcome", 8);

	/* the REQ: consumer bytes raw at offset 0, the base trailer (no srqn) */
	CU_ASSERT_EQUAL(ea->req_pdata_len, 56);
	CU_ASSERT_STRING_EQUAL((char *)ea->req_pdata, "hello");
	CU_ASSERT_EQUAL(ofx_pdata_decode(ea->req_pdata, 56, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC);
	CU_ASSERT_EQUAL(ea->req_pdata[56 - 5] >> 2, 0);	/* no extension word */
	/* P learnt A's srqn from the CONFIRM */
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0);
	/* the REJ accept: stock header, port, version, tag, then data + trailer */
	rej = fake_cm.pdata;
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 148);
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
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);

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
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 0), COUNTS(1, 1));

	/* another process of node 1: A's INI QP and B1's TGT serve it too */
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b2);
	pair(a, e2, b2, f2, 2);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(stats(b2).ini_created, 1);	/* B2 has no INI to node 0 yet */
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 3);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_RECV), 3);
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 1), COUNTS(2, 1));
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
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 4, 4);
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));

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
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2);
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
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(send_msg(e1, "again", 5), DAT_SUCCESS);
	expect_recv(b, f1, 2000, "again");

	/* the last EPs going release the INI QPs */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e2, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_qp_counts(PROCS(a, b), COUNTS(0, 0), COUNTS(0, 0));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	teardown(2);
}

/*
 * A's INI QP to node 1 goes to the TGT that B1 created; B2 is reached
 * through it too.  Then B1 closes.
 */
static void tgt_lifetime(enum ofx_xrc_tgt mode)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;
	DAT_EVENT ev;

	setup(2);
	open_two_peers(mode, &a, &b1, &b2, &e1, &f1, &e2, &f2);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(stats(b2).tgt_opened, mode == OFX_XRC_TGT_DOMAIN ? 1 : 0);
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 1), COUNTS(2, 1));

	/* B1 disconnects and closes: its TGT creator handle goes */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	xm_proc_close(b1);

	CU_ASSERT_EQUAL(send_msg(e2, "after b1", 9), DAT_SUCCESS);
	xm_pump();
	if (mode == OFX_XRC_TGT_DOMAIN) {
		/* 2a: B2's handle keeps the TGT alive */
		expect_qp_counts(PROCS(a, b2), COUNTS(1, 1), COUNTS(1, 1));
		expect_recv(b2, f2, 2000, "after b1");
		CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
	} else {
		/* 2b: the TGT died with B1, A's INI QP breaks, and its EP */
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 0);
		expect_empty(b2->recv_evd);
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->req_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_NOT_EQUAL(ev.event_data.dto_completion_event_data.status,
				    DAT_DTO_SUCCESS);
		expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
		expect_conn(b2, f2, DAT_CONNECTION_EVENT_DISCONNECTED);	/* told */
		CU_ASSERT_EQUAL(e2->state, OFX_EP_DISCONNECTED);
		expect_qp_counts(PROCS(a, b2), COUNTS(0, 0), COUNTS(0, 0));
		/* a new EP to node 1 gets a fresh INI QP */
		pair_over_new_ini(a, b2, 2);
		CU_ASSERT_EQUAL(stats(b2).tgt_created, 1);
		expect_qp_counts(PROCS(a, b2), COUNTS(1, 1), COUNTS(1, 1));

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
	DAT_LMR_TRIPLET iov = { .virtual_address = (uintptr_t)mem.recv[0], .segment_length = 8 };
	DAT_DTO_COOKIE c = { .as_64 = 0 };
	int i;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 0, 0);
	iov.lmr_context = lkey_of(f1);

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
	struct ofx_ep *e1, *f1, *e2, *f2;

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
	/* the live peer is told; the dead one cannot be */
	expect_conn(b1, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(f1->state, OFX_EP_DISCONNECTED);
	(void)f2;
	/* A's TGT for the dead B2's INI QP waits for an INI-CLOSE that never comes */
	expect_qp_counts(PROCS(a, b1), COUNTS(0, 0), COUNTS(1, 0));

	/* a new connection to B1 works over a fresh INI QP */
	CU_ASSERT_EQUAL(ofx_ep_free(e1), DAT_SUCCESS);
	pair_over_new_ini(a, b1, 2);
	expect_qp_counts(PROCS(a, b1), COUNTS(1, 1), COUNTS(2, 1));
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
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);

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
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 48, &offered), 0);
	CU_ASSERT_TRUE(offered);
	CU_ASSERT_TRUE(ofx_xrc_offered(ea));
	CU_ASSERT_EQUAL(memcmp(ea->req_pdata, big, 48), 0);
	CU_ASSERT_EQUAL(ofx_pdata_decode(ea->req_pdata, ea->req_pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 1);
	ofx_xrc_fallback(ea);
	CU_ASSERT_FALSE(ofx_xrc_offered(ea));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(ofx_xrc_ep_reset(ea), 0);
	/* an offer that timed out or was rejected: reset closes its SRQ */
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 4, &offered), 0);
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 4, &offered), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 1);
	CU_ASSERT_EQUAL(ofx_xrc_ep_reset(ea), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	/* more than 48 bytes: no room for the trailer, no offer */
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, big, 49, &offered), 0);
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
	struct ofx_conn_req cr;
	int ret = 0;

	setup(1);
	b = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	eb = xm_ep_new(b);
	memset(&cr, 0, sizeof(cr));
	pthread_mutex_lock(&eb->lock);
	/* a stock REQ: no trailer */
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	/* an offer with p2p, or more accept data than XRC carries */
	cr.has_hdr = true;
	cr.hdr.flags = OFX_PDATA_F_XRC | OFX_PDATA_F_P2P;
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	cr.hdr.flags = OFX_PDATA_F_XRC;
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, OFX_XRC_ACCEPT_MAX + 1, &ret));
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
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
		CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
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
	struct ofx_conn_req cr;
	bool offered;
	int ret = -1;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	pthread_mutex_lock(&ea->lock);
	ea->remote_addr = b->ia.addr;
	test_ep_force_state(ea, OFX_EP_ACTIVE_PENDING);
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, NULL, 0, &offered), 0);
	pthread_mutex_unlock(&ea->lock);
	memset(&cr, 0, sizeof(cr));
	cr.cm_id = (struct rdma_cm_id *)&cr;
	cr.remote_addr = &a->ia.addr;
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
	CU_ASSERT_EQUAL(fake_verbs.srqs, 1);	/* A's, from its offer */
	xm_pump();
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
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
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 1), COUNTS(2, 1));

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
	/* B1's INI QP went with its only EP, and A's TGT for it */
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 0, 1), COUNTS(1, 1));

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
	CU_ASSERT_EQUAL(fake_cm.connects, OFX_XRC_CTL_TRIES);
	expect_qp_counts(PROCS(a), COUNTS(0), COUNTS(0, 0));
	teardown(2);
}

/* ---- issue 14 (D12): control messages reuse resolved IB paths ----------- */

/* Every connection event of `p` from now on is an ESTABLISHED of one of `eps`, each once. */
static void expect_all_established(struct xm_proc *p, struct ofx_ep **eps, int n)
{
	bool seen[16] = { false };
	DAT_EVENT ev;

	CU_ASSERT_FATAL(n <= 16);
	for (int k = 0; k < n; k++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p->conn_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
		for (int i = 0; i < n; i++)
			if (ev.event_data.connect_event_data.ep_handle == eps[i])
				seen[i] = true;
	}
	for (int i = 0; i < n; i++)
		CU_ASSERT_TRUE(seen[i]);
}

/*
 * `n` new EP pairs from `a` (ea[]) to `b[i]` (eb[]) connect at once: every
 * offer is answered before any control message moves, so they travel in
 * one burst.
 */
static void burst_connect(struct xm_proc *a, struct ofx_ep **ea, struct xm_proc **b,
			  struct ofx_ep **eb, int n)
{
	xm_autopump = false;
	for (int i = 0; i < n; i++) {
		ea[i] = xm_ep_new(a);
		eb[i] = xm_ep_new(b[i]);
		post_recv(ea[i], 1000 + i);
		post_recv(eb[i], 2000 + i);
		xm_connect(a, ea[i], b[i], eb[i], NULL, 0, NULL, 0);
	}
	xm_autopump = true;
	xm_pump();
	expect_all_established(a, ea, n);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(eb[i]->state, OFX_EP_CONNECTED);
		CU_ASSERT_EQUAL(send_msg(ea[i], "routed", 1), DAT_SUCCESS);
		expect_recv(b[i], eb[i], 2000 + i, "routed");
	}
}

/* Each of `p`'s control ids resolved its route or was given one, never both. */
static void expect_every_id_routed_once(const struct xm_proc *p)
{
	CU_ASSERT_EQUAL(p->resolve_routes + p->path_sets, p->resolve_addrs);
}

/*
 * A opens 4 EPs to each of B1 and B2, two processes of node 1, in one
 * burst, then disconnects them all.  Each IA asks the SA once per port
 * space (SIDR messages, the INI connection) for the node: the other ids,
 * those waiting for the first resolution included, are given its path.
 */
static void test_rdma_cm_carrier_resolves_a_route_once_per_peer_node(void)
{
	struct xm_proc *a, *b[8], *b1, *b2;
	struct ofx_ep *ea[8], *eb[8];

	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b1 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	b2 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	for (int i = 0; i < 8; i++)
		b[i] = i < 4 ? b1 : b2;
	burst_connect(a, ea, b, eb, 8);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(ofx_ep_disconnect(ea[i], DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	/* INI, CONFIRMs, DISCs, and INI-CLOSE once the INI QP has no EP left */
	CU_ASSERT_EQUAL(stats(a).ctl_sent, 1 + 8 + 8 + 1);
	CU_ASSERT_EQUAL(a->resolve_addrs, 1 + 8 + 8 + 1);
	CU_ASSERT_EQUAL(a->resolve_routes, 2);
	CU_ASSERT_EQUAL(b1->resolve_routes, 2);
	CU_ASSERT_EQUAL(b2->resolve_routes, 2);
	expect_every_id_routed_once(a);
	expect_every_id_routed_once(b1);
	expect_every_id_routed_once(b2);
	CU_ASSERT_EQUAL(fake_cm.path_sets, a->path_sets + b1->path_sets + b2->path_sets);
	/* what was set is the SA's answer, packed as the kernel unpacks it */
	CU_ASSERT_EQUAL(fake_cm.path.flags, IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
						    IBV_PATH_FLAG_BIDIRECTIONAL);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 0);
	CU_ASSERT_EQUAL(stats(b1).ctl_lost, 0);
	CU_ASSERT_EQUAL(stats(b2).ctl_lost, 0);
	teardown(2);
}

/*
 * The SM gives B's port another LID: A's kept path leads nowhere, its next
 * CONFIRM gets no answer (UNREACHABLE, -ETIMEDOUT), and the retry asks the
 * SA again; the new path then serves what follows.  B's HCA is replaced
 * (another GID behind its address): the next id sees it at ADDR_RESOLVED
 * and resolves at once, without a lost try.
 */
static void test_rdma_cm_carrier_drops_a_stale_path_and_resolves_again(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb, *e2, *f2, *e3, *f3;
	int routes, sets, connects;

	setup(2);
	xm_use_cm = true;
	open_connected_pair(&a, &ea, &b, &eb);
	routes = a->resolve_routes;
	CU_ASSERT_EQUAL(routes, 2);

	xm_node_renumber(1);
	connects = fake_cm.connects;
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b);
	pair(a, e2, b, f2, 1);
	CU_ASSERT_EQUAL(a->resolve_routes, routes + 1);
	CU_ASSERT_EQUAL(fake_cm.connects, connects + 3);	/* CONFIRM twice, BIND */
	sets = a->path_sets;
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e2, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e2, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(a->resolve_routes, routes + 1);
	CU_ASSERT_EQUAL(a->path_sets, sets + 1);	/* A's DISC */

	xm_node_replace(1);
	connects = fake_cm.connects;
	e3 = xm_ep_new(a);
	f3 = xm_ep_new(b);
	pair(a, e3, b, f3, 1);
	CU_ASSERT_EQUAL(a->resolve_routes, routes + 2);
	CU_ASSERT_EQUAL(fake_cm.connects, connects + 2);	/* no request lost */
	CU_ASSERT_EQUAL(send_msg(ea, "still there", 7), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "still there");
	expect_every_id_routed_once(a);
	expect_every_id_routed_once(b);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 0);
	CU_ASSERT_EQUAL(stats(b).ctl_lost, 0);
	teardown(2);
}

/*
 * A's port changed (ofx_xrc_port_changed: its paths are forgotten) and the
 * SA does not answer its next query.  The burst waiting for that query
 * shares its failure (a try each) and resolves again, once.
 */
static void test_rdma_cm_carrier_waiters_share_a_failed_resolution(void)
{
	struct xm_proc *a, *b, *bs[3];
	struct ofx_ep *ea, *eb, *e[3], *f[3];
	int routes;

	setup(2);
	xm_use_cm = true;
	open_connected_pair(&a, &ea, &b, &eb);
	routes = a->resolve_routes;
	ofx_xrc_port_changed(&a->ia);
	xm_route_errors = 1;
	for (int i = 0; i < 3; i++)
		bs[i] = b;
	burst_connect(a, e, bs, f, 3);
	CU_ASSERT_EQUAL(a->resolve_routes, routes + 2);
	CU_ASSERT_EQUAL(xm_route_errors, 0);
	expect_every_id_routed_once(a);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 0);
	teardown(2);
}

/* RoCE resolves a route from the neighbour table, no SA: every id resolves its own. */
static void test_rdma_cm_carrier_keeps_no_path_on_roce(void)
{
	struct xm_proc *p[2];
	struct ofx_ep *ea, *eb, *e2, *f2;

	setup(2);
	xm_use_cm = true;
	for (int i = 0; i < 2; i++) {
		p[i] = xm_proc_open(i, domfile[i], OFX_XRC_TGT_DOMAIN);
		/* the carrier again, as on a RoCE port */
		ofx_xrc_cm_stop(&p[i]->ia);
		p[i]->ia.transport = OFX_TRANSPORT_ROCE;
		CU_ASSERT_EQUAL_FATAL(ofx_xrc_cm_start(&p[i]->ia), 0);
	}
	ea = xm_ep_new(p[0]);
	eb = xm_ep_new(p[1]);
	e2 = xm_ep_new(p[0]);
	f2 = xm_ep_new(p[1]);
	pair(p[0], ea, p[1], eb, 1);
	pair(p[0], e2, p[1], f2, 1);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(p[i]->path_sets, 0);
		CU_ASSERT_EQUAL(p[i]->resolve_routes, p[i]->resolve_addrs);
		CU_ASSERT_TRUE(p[i]->resolve_routes >= 3);
	}
	teardown(2);
}

/* ---- issue 14: what mlx5 and the kernel refuse -------------------------- */

static void test_model_refuses_masks_the_kernel_refuses(void)
{
	const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	const int resp = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_init_attr_ex ini = { .qp_type = IBV_QPT_XRC_SEND,
					   .comp_mask = IBV_QP_INIT_ATTR_PD,
					   .cap = { .max_send_wr = 64, .max_send_sge = 1 } };
	struct xm_proc *a;
	struct ibv_qp *qp;

	/* RESET->INIT: every type needs the access flags, the INI too */
	for (int t = 0; t < 3; t++) {
		enum ibv_qp_type type = t == 0 ? IBV_QPT_RC : t == 1 ? IBV_QPT_XRC_SEND :
							IBV_QPT_XRC_RECV;

		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_RESET, IBV_QPS_INIT, init));
		CU_ASSERT_FALSE(xm_modify_allowed(type, IBV_QPS_RESET, IBV_QPS_INIT,
						  init & ~IBV_QP_ACCESS_FLAGS));
		CU_ASSERT_FALSE(xm_modify_allowed(type, IBV_QPS_RESET, IBV_QPS_RTR, rtr));
		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_STATE));
		CU_ASSERT_FALSE(xm_modify_allowed(type, IBV_QPS_RTS, IBV_QPS_ERR, init));
		/* M1: RESET leads to RESET and INIT only; every other state may go to ERR */
		CU_ASSERT_FALSE(xm_modify_allowed(type, IBV_QPS_RESET, IBV_QPS_ERR, IBV_QP_STATE));
		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_RESET, IBV_QPS_RESET, IBV_QP_STATE));
		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_INIT, IBV_QPS_ERR, IBV_QP_STATE));
		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_ERR, IBV_QPS_ERR, IBV_QP_STATE));
		CU_ASSERT_TRUE(xm_modify_allowed(type, IBV_QPS_ERR, IBV_QPS_RESET, IBV_QP_STATE));
	}
	/* INIT->RTR: responder attributes required of RC and TGT, refused of the INI */
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr | resp));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr));
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_XRC_RECV, IBV_QPS_INIT, IBV_QPS_RTR, rtr | resp));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_RECV, IBV_QPS_INIT, IBV_QPS_RTR,
					  rtr | IBV_QP_MIN_RNR_TIMER));
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_INIT, IBV_QPS_RTR,
					 rtr | IBV_QP_ACCESS_FLAGS));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_INIT, IBV_QPS_RTR, rtr | resp));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_INIT, IBV_QPS_RTR,
					  IBV_QP_STATE | IBV_QP_DEST_QPN));
	/* RTR->RTS: the INI as RC, the TGT only timeout and psn, no retries */
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_RTR, IBV_QPS_RTS, rts));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_RTR, IBV_QPS_RTS,
					  rts & ~IBV_QP_MAX_QP_RD_ATOMIC));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_SEND, IBV_QPS_RTR, IBV_QPS_RTS,
					  rts | IBV_QP_MIN_RNR_TIMER));
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
					 rts | IBV_QP_MIN_RNR_TIMER));
	CU_ASSERT_TRUE(xm_modify_allowed(IBV_QPT_XRC_RECV, IBV_QPS_RTR, IBV_QPS_RTS,
					 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN));
	CU_ASSERT_FALSE(xm_modify_allowed(IBV_QPT_XRC_RECV, IBV_QPS_RTR, IBV_QPS_RTS, rts));

	/* a live INI: the old stripped mask is refused, and read depths above the caps */
	setup(1);
	a = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	ini.send_cq = ofx_evd_cq(a->req_evd);
	ini.pd = a->pz.pd;
	qp = ofx_verbs->create_qp_ex(a->ia.verbs, &ini);
	CU_ASSERT_PTR_NOT_NULL_FATAL(qp);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR },
					     IBV_QP_STATE),
			EINVAL);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &attr, init & ~IBV_QP_ACCESS_FLAGS), EINVAL);
	CU_ASSERT_EQUAL(qp->state, IBV_QPS_RESET);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &attr, init), 0);
	attr.qp_state = IBV_QPS_RTR;
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &attr, rtr), 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.max_rd_atomic = (uint8_t)(a->ia.dev_attr.max_qp_init_rd_atom + 1);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &attr, rts), EINVAL);
	attr.max_rd_atomic = 1;
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(qp, &attr, rts), 0);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_qp(qp), 0);
	teardown(1);
}

/* One receive of 8 bytes (the buffer is never written: nothing is sent). */
static int post_one_recv(struct ibv_qp *qp)
{
	static char buf[8];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf) };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	int ret = ofx_verbs->post_recv(qp, &wr, &bad);

	CU_ASSERT_PTR_EQUAL(bad, ret ? &wr : NULL);
	return ret;
}

/*
 * M3: an XRC QP has no receive queue (receives go to XRC SRQs): the model
 * refuses ibv_post_recv on an INI QP and on a TGT QP, as it does on an RC
 * QP still in RESET; an RC QP in INIT takes it.
 */
static void test_model_refuses_receives_on_xrc_qps(void)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = O_CREAT };
	struct ibv_qp_init_attr_ex ia = { .qp_type = IBV_QPT_XRC_SEND,
					  .comp_mask = IBV_QP_INIT_ATTR_PD,
					  .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct ibv_qp *ini, *tgt, *rc;
	struct ibv_xrcd *xrcd;
	struct xm_proc *a;

	setup(1);
	a = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	ia.send_cq = ofx_evd_cq(a->req_evd);
	ia.pd = a->pz.pd;
	ini = ofx_verbs->create_qp_ex(a->ia.verbs, &ia);
	xrcd = ofx_verbs->open_xrcd(a->ia.verbs, &xa);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
	CU_ASSERT_PTR_NOT_NULL_FATAL(xrcd);
	ia = (struct ibv_qp_init_attr_ex){ .qp_type = IBV_QPT_XRC_RECV,
					   .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = xrcd };
	tgt = ofx_verbs->create_qp_ex(a->ia.verbs, &ia);
	ia = (struct ibv_qp_init_attr_ex){ .qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD,
					   .pd = a->pz.pd, .send_cq = ofx_evd_cq(a->req_evd),
					   .recv_cq = ofx_evd_cq(a->recv_evd),
					   .cap = { .max_send_wr = 4, .max_send_sge = 1,
						    .max_recv_wr = 4, .max_recv_sge = 1 } };
	rc = ofx_verbs->create_qp_ex(a->ia.verbs, &ia);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rc);

	CU_ASSERT_EQUAL(post_one_recv(ini), -EINVAL);
	CU_ASSERT_EQUAL(post_one_recv(tgt), -EINVAL);
	CU_ASSERT_EQUAL(post_one_recv(rc), -EINVAL);	/* RESET */
	init.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(ini, &init, XM_RC_INIT_MASK), 0);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(tgt, &init, XM_RC_INIT_MASK), 0);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(rc, &init, XM_RC_INIT_MASK), 0);
	CU_ASSERT_EQUAL(post_one_recv(ini), -EINVAL);
	CU_ASSERT_EQUAL(post_one_recv(tgt), -EINVAL);
	CU_ASSERT_EQUAL(post_one_recv(rc), 0);
	CU_ASSERT_EQUAL(xm_rc_recvs(), 1);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_qp(rc), 0);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_qp(tgt), 0);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_qp(ini), 0);
	CU_ASSERT_EQUAL(ofx_verbs->close_xrcd(xrcd), 0);
	teardown(1);
}

static void test_model_mlx5_sizes_xrc_send_queues(void)
{
	struct ibv_qp_init_attr_ex ini = { .qp_type = IBV_QPT_XRC_SEND,
					   .comp_mask = IBV_QP_INIT_ATTR_PD };
	struct xm_proc *a;
	struct ibv_qp *qp;

	setup(1);
	xm_device = &xm_dev_mlx5;
	a = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	CU_ASSERT_EQUAL(a->ia.dev_attr.max_qp_wr, 32768);
	CU_ASSERT_EQUAL(a->ia.dev_attr.max_sge, 30);
	ini.send_cq = ofx_evd_cq(a->req_evd);
	ini.pd = a->pz.pd;
	/* what the provider asked for before: max_qp_wr - 1 and max_sge */
	ini.cap.max_send_wr = 32767;
	ini.cap.max_send_sge = 30;
	CU_ASSERT_PTR_NULL(ofx_verbs->create_qp_ex(a->ia.verbs, &ini));
	CU_ASSERT_EQUAL(errno, EINVAL);
	/* 208 + 19 * 16 = 512 fits one WQE; 20 SGEs do not */
	ini.cap.max_send_wr = 64;
	ini.cap.max_send_sge = 20;
	CU_ASSERT_PTR_NULL(ofx_verbs->create_qp_ex(a->ia.verbs, &ini));
	ini.cap.max_send_sge = 19;
	qp = ofx_verbs->create_qp_ex(a->ia.verbs, &ini);
	CU_ASSERT_PTR_NOT_NULL_FATAL(qp);
	ofx_verbs->destroy_qp(qp);
	/* 4 SGEs: 272 bytes, 5 blocks of 64; 4095 WRs fill 32768 blocks, 8191 do not */
	ini.cap.max_send_sge = 4;
	ini.cap.max_inline_data = 0;
	ini.cap.max_send_wr = 8191;
	CU_ASSERT_PTR_NULL(ofx_verbs->create_qp_ex(a->ia.verbs, &ini));
	ini.cap.max_send_wr = 4095;
	qp = ofx_verbs->create_qp_ex(a->ia.verbs, &ini);
	CU_ASSERT_PTR_NOT_NULL_FATAL(qp);
	CU_ASSERT_EQUAL(ini.cap.max_inline_data, 320 - 208 - 4);
	ofx_verbs->destroy_qp(qp);
	teardown(1);
}

/* Issue 14: on mlx5 the INI QP asked for max_qp_wr - 1 WRs of max_sge SGEs. */
static void test_ini_qp_fits_an_mlx5_device(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ibv_qp_cap cap;

	setup(2);
	xm_device = &xm_dev_mlx5;
	open_connected_pair(&a, &ea, &b, &eb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(xm_ini_qp(0, 0, &cap));
	CU_ASSERT_TRUE(cap.max_send_sge >= 1 && cap.max_send_sge <= 19);
	CU_ASSERT_TRUE(cap.max_send_wr >= 17);
	CU_ASSERT_EQUAL(send_msg(ea, "fits", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "fits");
	teardown(2);
}

/*
 * The device cannot make the INI QP (out of resources): the connect fails
 * on both sides, nothing is left.
 */
static void test_ini_qp_that_cannot_be_made_fails_both_sides(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_device = &xm_dev_mlx5;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	ea = xm_ep_new(a);
	eb = xm_ep_new(b);
	post_recv(eb, 1);
	xm_ini_create_errno = ENOMEM;
	xm_connect(a, ea, b, eb, NULL, 0, NULL, 0);
	xm_ini_create_errno = 0;
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(stats(b).ini_live, 0);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 0);
	teardown(2);
}

/*
 * rdma_get_cm_event(3): a REQ's event gives the sender's initiator depth as
 * responder_resources.  A (mlx5: 16 reads out) connects its INI to B (4
 * reads in): B's TGT serves 4, A's INI may have 4 in flight, not 0.
 */
static void test_rdma_cm_carrier_negotiates_read_depths(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_use_cm = true;
	xm_device = &xm_dev_mlx5;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	xm_device = &xm_dev_toy;
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	ea = xm_ep_new(a);
	eb = xm_ep_new(b);
	pair(a, ea, b, eb, 1);
	CU_ASSERT_EQUAL(xm_tgt_max_dest_rd_atomic(1), 4);
	CU_ASSERT_EQUAL(xm_qp_max_rd_atomic(xm_ini_qp(0, 0, NULL)), 4);
	CU_ASSERT_EQUAL(xm_tgt_max_dest_rd_atomic(0), 4);
	CU_ASSERT_EQUAL(xm_qp_max_rd_atomic(xm_ini_qp(1, 0, NULL)), 4);
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(send_msg(ea, "deep", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "deep");
	teardown(2);
}

/*
 * The debug line of every INI and TGT QP that becomes ready, from what
 * ibv_query_qp reports: dapltest-scripts/xrc-hw.sh checks an INI's
 * max_rd_atomic on hardware through it (the same fields, in this order).
 */
static const char *qp_line(const char *log, const char *role, unsigned int qpn, char *state,
			   unsigned int *peer, unsigned int *rd, unsigned int *dest_rd)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "xrc %s qp 0x%x ready: ", role, qpn);
	p = strstr(log, want);
	if (!p || sscanf(p + strlen(want), "peer 0x%x state %15s max_rd_atomic %u "
			 "max_dest_rd_atomic %u timeout", peer, state, rd, dest_rd) != 4)
		return NULL;
	return p;
}

static void test_rdma_cm_carrier_logs_the_queried_qp_attributes(void)
{
	char path[] = "/tmp/ofx-xrc-log-XXXXXX", text[16384], state[16];
	unsigned int peer, rd, dest_rd;
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	uint32_t ini_qpn = 0, tgt_qpn = 0;
	struct ibv_qp *ini;
	int fd = mkstemp(path);
	ssize_t n;

	CU_ASSERT_FATAL(fd >= 0);
	setenv("DAPL_OFX_LOG_FILE", path, 1);
	setenv("DAPL_OFX_LOG_LEVEL", "debug", 1);
	setenv("DAPL_OFX_LOG_SUBSYS", "xrc", 1);
	ofx_log_fini();
	ofx_log_init();
	setup(2);
	xm_use_cm = true;
	xm_device = &xm_dev_mlx5;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	xm_device = &xm_dev_toy;
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	ea = xm_ep_new(a);
	eb = xm_ep_new(b);
	pair(a, ea, b, eb, 1);
	ini = xm_ini_qp(0, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL(ini);
	if (ini && !ofx_verbs->query_qp(ini, &qa, IBV_QP_DEST_QPN, &init)) {
		ini_qpn = ini->qp_num;
		tgt_qpn = qa.dest_qp_num;
	}
	teardown(2);
	ofx_log_fini();
	unsetenv("DAPL_OFX_LOG_FILE");
	unsetenv("DAPL_OFX_LOG_LEVEL");
	unsetenv("DAPL_OFX_LOG_SUBSYS");
	ofx_log_init();
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(path);
	text[n > 0 ? n : 0] = '\0';

	/* A's INI: RTS towards B's TGT with the 4 reads B serves */
	CU_ASSERT_PTR_NOT_NULL_FATAL(qp_line(text, "ini", ini_qpn, state, &peer, &rd, &dest_rd));
	CU_ASSERT_STRING_EQUAL(state, "RTS");
	CU_ASSERT_EQUAL(peer, tgt_qpn);
	CU_ASSERT_EQUAL(rd, 4);
	CU_ASSERT_EQUAL(dest_rd, 0);
	/* B's TGT for it: RTR, serving 4 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(qp_line(text, "tgt", tgt_qpn, state, &peer, &rd, &dest_rd));
	CU_ASSERT_STRING_EQUAL(state, "RTR");
	CU_ASSERT_EQUAL(peer, ini_qpn);
	CU_ASSERT_EQUAL(dest_rd, 4);
}

/* The RC accept (cm.c) grants from the REQ event's crossed depth fields. */
static void test_rc_accept_grants_the_depths_the_peer_asked(void)
{
	struct rdma_conn_param req = { .initiator_depth = 3, .responder_resources = 1,
				       .qp_num = 0x77 }, ev;
	struct rdma_cm_id *active, *passive;
	struct xm_proc *a, *b;
	struct ofx_ep *eb;
	struct ofx_conn_req cr;

	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, "", OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, "", OFX_XRC_TGT_DOMAIN);
	eb = ep_with_iov(b, 1);
	passive = xm_cm_request(a, b, &req, &active, &ev);
	/* the model says what rdma_get_cm_event(3) says */
	CU_ASSERT_EQUAL(ev.responder_resources, 3);
	CU_ASSERT_EQUAL(ev.initiator_depth, 1);

	memset(&cr, 0, sizeof(cr));
	cr.cm_id = passive;
	cr.remote_addr = &a->ia.addr;
	cr.param = ev;
	fake_cm.accept_errno = EINVAL; /* look at the parameters only */
	pthread_mutex_lock(&eb->lock);
	CU_ASSERT_NOT_EQUAL(ofx_cm_accept(eb, &cr, NULL, 0), 0);
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_EQUAL_FATAL(fake_cm.accepts, 1);
	/* we serve the 3 reads A initiates; we initiate at most the 1 A serves */
	CU_ASSERT_EQUAL(fake_cm.conn.responder_resources, 3);
	CU_ASSERT_EQUAL(fake_cm.conn.initiator_depth, 1);
	ofx_verbs->destroy_id(passive);
	ofx_verbs->destroy_id(active);
	teardown(2);
}

/* A bind would go to the EP's idle RC QP and never complete: refused at once. */
static void test_rmr_bind_on_an_xrc_connection_is_refused(void)
{
	static char win_mem[256];
	DAT_REGION_DESCRIPTION region = { .for_va = win_mem };
	DAT_LMR_TRIPLET iov = { .virtual_address = (uintptr_t)win_mem, .segment_length = 64 };
	DAT_RMR_COOKIE cookie = { .as_64 = 9 };
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT rkey = 0;
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	a->ia.dev_attr.device_cap_flags |= IBV_DEVICE_MEM_WINDOW;
	a->ia.dev_attr.max_mw = 16;
	a->req_evd->flags |= DAT_EVD_RMR_BIND_FLAG;
	pair(a, ea, b, eb, 1);
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&a->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(win_mem),
					     &a->pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
					     &lkey, NULL, NULL, NULL),
			      DAT_SUCCESS);
	iov.lmr_context = lkey;
	CU_ASSERT_EQUAL_FATAL(ofx_rmr_create(&a->pz, &rmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, lmr, &iov, DAT_MEM_PRIV_REMOTE_READ_FLAG,
						  DAT_VA_TYPE_VA, ea, cookie,
						  DAT_COMPLETION_DEFAULT_FLAG, &rkey)),
			DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(fake_verbs.binds, 0);
	/* and after the connection too (the RC QP is still unconnected) */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, lmr, &iov, DAT_MEM_PRIV_REMOTE_READ_FLAG,
						  DAT_VA_TYPE_VA, ea, cookie,
						  DAT_COMPLETION_DEFAULT_FLAG, &rkey)),
			DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(fake_verbs.binds, 0);
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr), DAT_SUCCESS);
	teardown(2);
}

/* An async event on an INI QP reaches xrc.c, not a struct ofx_obj misread. */
static void test_async_events_on_an_ini_qp(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	struct ibv_qp *ini;
	DAT_EVENT ev;
	int broken = 0;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 1, 1);
	ini = xm_ini_qp(0, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);

	/* LAST_WQE_REACHED means nothing for a QP without receive queue */
	xm_async_qp_event(a, ini, IBV_EVENT_QP_LAST_WQE_REACHED);
	expect_empty(a->ia.async_evd);
	expect_empty(a->conn_evd);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_CONNECTED);

	/* QP_FATAL: both EPs on it are broken, on the async EVD too */
	xm_async_qp_event(a, ini, IBV_EVENT_QP_FATAL);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	while (ofx_evd_dequeue(a->ia.async_evd, &ev) == DAT_SUCCESS) {
		CU_ASSERT_EQUAL(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
		broken++;
	}
	CU_ASSERT_EQUAL(broken, 2);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	/* a new EP to that node gets a new INI QP */
	CU_ASSERT_EQUAL(ofx_ep_reset(e1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f1, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	xm_pump();
	teardown(2);
}

/*
 * D11: SRQ_ERR on the XRC SRQ of e1's connection (its srq_context is the
 * EP, not a DAT SRQ): the IA's async EVD gets DAT_ASYNC_ERROR_EP_BROKEN for
 * e1, e1's connection breaks and its peer is told, and e2, which shares
 * e1's INI QP both ways, keeps working.
 */
static void test_srq_error_on_an_xrc_srq_breaks_its_ep_alone(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	struct ibv_srq *srq;
	DAT_EVENT ev;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 1, 1);
	srq = xm_ep_srq(e1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(srq);
	CU_ASSERT_PTR_NOT_EQUAL(srq, xm_ep_srq(e2));
	xm_async_srq_event(a, srq, IBV_EVENT_SRQ_ERR);

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->ia.async_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
	CU_ASSERT_PTR_EQUAL(ev.evd_handle, a->ia.async_evd);
	CU_ASSERT_PTR_EQUAL(ev.event_data.asynch_error_event_data.dat_handle, e1);
	expect_empty(a->ia.async_evd);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_DISCONNECTED);
	xm_pump();
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(f1->state, OFX_EP_DISCONNECTED);
	expect_empty(a->conn_evd);
	expect_empty(b->conn_evd);
	expect_empty(b->ia.async_evd);

	/* the shared INI QPs are intact */
	CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(send_msg(e2, "still there", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "and back", 2), DAT_SUCCESS);
	expect_recv(b, f2, 2000, "still there");
	expect_recv(a, e2, 1000, "and back");
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	teardown(2);
}

/* ---- issue 14: completions, teardown and lifetimes as on mlx5 ------------ */

/*
 * mlx5 leaves a destroyed SRQ's CQEs in the CQ, and the poll that meets one
 * fails with the completions it had taken before it: freeing an EP with
 * unpolled receives must not cost the EP that shares its recv EVD.  Nor
 * may its SRQ going cost f1's node the INI QP f1 shares with f2 (G3):
 * e1's ep_free cannot wait for f1's DISC (no progress thread), so f1 must
 * not fence into e1's destroyed SRQ.  e2 and f2 stay CONNECTED and carry
 * messages both ways.
 */
static void test_srq_destroy_with_unpolled_receives_spares_other_eps(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 1, 1);
	/* e2's completion first, e1's behind it in the same batch */
	CU_ASSERT_EQUAL(send_msg(f2, "for e2", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f1, "for e1", 2), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(fake_cq_pending(a->recv_evd), 2);
	CU_ASSERT_EQUAL(ofx_ep_free(e1), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(fake_cq_pending(a->recv_evd), 0);
	expect_recv(a, e2, 1000, "for e2");
	expect_empty(a->recv_evd);	/* e1's went with it */
	/* f1 is told; the others are untouched */
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_empty(a->conn_evd);
	expect_empty(b->conn_evd);
	CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(f2->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	CU_ASSERT_EQUAL(stats(b).ini_live, 1);
	post_recv(e2, 1001);
	CU_ASSERT_EQUAL(send_msg(e2, "e2 lives", 3), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "f2 lives", 4), DAT_SUCCESS);
	expect_recv(b, f2, 2000, "e2 lives");
	expect_recv(a, e2, 1001, "f2 lives");
	teardown(2);
}

/*
 * open_shared_pairs (n2 receives for e2), then A's recv EVD full (its
 * consumer stops polling: returns how many events fill it), a receive for
 * e1 and one for e2 behind it in A's CQ, and e1's connection ended: its
 * retired SRQ cannot be reaped and stays (3 SRQs: that one, e2's, f2's).
 */
static int e1_ends_behind_a_full_evd(struct xm_proc **a, struct xm_proc **b, struct ofx_ep **e1,
				     struct ofx_ep **f1, struct ofx_ep **e2, struct ofx_ep **f2,
				     int n2)
{
	int n;

	open_shared_pairs(a, b, e1, f1, e2, f2, 1, n2);
	n = evd_fill((*a)->recv_evd);
	CU_ASSERT_EQUAL(send_msg(*f1, "for e1", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(*f2, "for e2", 2), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(fake_cq_pending((*a)->recv_evd), 2);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(*e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(*a, *e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(*b, *f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 3);
	return n;
}

/*
 * D3: e1's connection ends while A's recv EVD is full (its consumer is not
 * polling), so its retired SRQ keeps a CQE in the CQ, and e1 reconnects
 * at once.  The new connection cannot take the SRQ's place without
 * destroying it unpolled (mlx5: the next poll fails and loses e2's
 * completion with it): it runs over RC, the SRQ stays, and once the
 * consumer polls again e2's completion is there and e2 keeps working.
 */
static void test_reconnect_while_the_evd_is_full_keeps_the_retired_srq(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	struct ofx_conn_req cr;
	bool offered = true;
	int n, srqs, ret = -1;

	setup(2);
	n = e1_ends_behind_a_full_evd(&a, &b, &e1, &f1, &e2, &f2, 2);
	srqs = fake_verbs.srqs;
	CU_ASSERT_EQUAL(ofx_ep_reset(e1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srqs, srqs);

	/* an offer to accept is declined (RC), as is one to make */
	memset(&cr, 0, sizeof(cr));
	cr.has_hdr = true;
	cr.hdr.flags = OFX_PDATA_F_XRC;
	pthread_mutex_lock(&e1->lock);
	CU_ASSERT_FALSE(ofx_xrc_accept(e1, &cr, NULL, 0, &ret));
	CU_ASSERT_EQUAL(fake_verbs.srqs, srqs);
	CU_ASSERT_EQUAL(ofx_xrc_connect(e1, "again", 6, &offered), 0);
	pthread_mutex_unlock(&e1->lock);
	CU_ASSERT_FALSE(offered);
	CU_ASSERT_EQUAL(fake_verbs.srqs, srqs);
	CU_ASSERT_EQUAL(stats(a).conn_rc, 1);	/* the accept's */

	/*
	 * The consumer polls again: nothing was lost, the poll did not fail.
	 * e1's receive was behind the full EVD when e1 reset (ep_qp_retire
	 * could not drop it): it comes, in its order.
	 */
	evd_unfill(a->recv_evd, n);
	expect_recv(a, e1, 1000, "for e1");
	expect_recv(a, e2, 1000, "for e2");
	expect_empty(a->recv_evd);
	CU_ASSERT_EQUAL(fake_cq_pending(a->recv_evd), 0);
	CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(send_msg(f2, "still", 3), DAT_SUCCESS);
	expect_recv(a, e2, 1001, "still");
	CU_ASSERT_EQUAL(ofx_ep_free(f1), DAT_SUCCESS);
	teardown(2);
}

/*
 * D4: the completions a retired SRQ left behind a full EVD are not lost:
 * once the consumer dequeues, e1's receive is delivered in its order, e2's
 * after it; a reset then destroys the drained SRQ, and e1 reconnects over
 * XRC again.
 */
static void test_completions_behind_a_full_evd_are_delivered_once_polled(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	int n;

	setup(2);
	n = e1_ends_behind_a_full_evd(&a, &b, &e1, &f1, &e2, &f2, 1);

	evd_unfill(a->recv_evd, n);
	expect_recv(a, e1, 1000, "for e1");
	expect_recv(a, e2, 1000, "for e2");
	expect_empty(a->recv_evd);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 3);	/* polled, not yet destroyed */

	CU_ASSERT_EQUAL(ofx_ep_reset(e1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2);
	CU_ASSERT_EQUAL(ofx_ep_free(f1), DAT_SUCCESS);
	f1 = xm_ep_new(b);
	pair(a, e1, b, f1, 1);
	expect_xrc_only(a, 3);
	CU_ASSERT_EQUAL(send_msg(f1, "xrc again", 3), DAT_SUCCESS);
	expect_recv(a, e1, 1000, "xrc again");
	teardown(2);
}

#define N_SHARE 3
#define N_OUT 2

/*
 * The last EP of a broken INI QP destroys it, and mlx5 cleans the QP's CQEs
 * out of the CQ: every EP that shared it still gets one FLUSHED completion
 * per outstanding DTO, with its own cookies, and BROKEN.
 */
static void test_broken_shared_ini_flushes_every_eps_dtos(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e[N_SHARE], *f[N_SHARE];
	int flushed[N_SHARE] = { 0 };
	DAT_EVENT ev;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	for (int i = 0; i < N_SHARE; i++) {
		e[i] = xm_ep_new(a);
		f[i] = xm_ep_new(b);
		pair(a, e[i], b, f[i], 0);
	}
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	/* no receive on B: the sends wait in the INI QP (RNR) */
	for (int i = 0; i < N_SHARE; i++)
		for (int k = 0; k < N_OUT; k++)
			CU_ASSERT_EQUAL(send_msg(e[i], "held", (uint64_t)(i * 10 + k)), DAT_SUCCESS);
	xm_pump();
	expect_empty(a->req_evd);
	xm_async_qp_event(a, xm_ini_qp(0, 0, NULL), IBV_EVENT_QP_FATAL);
	for (int i = 0; i < N_SHARE; i++)
		expect_conn(a, e[i], DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	while (ofx_evd_dequeue(a->req_evd, &ev) == DAT_SUCCESS) {
		DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		int i = (int)(d->user_cookie.as_64 / 10);

		CU_ASSERT_EQUAL(d->status, DAT_DTO_ERR_FLUSHED);
		CU_ASSERT_FATAL(i >= 0 && i < N_SHARE);
		CU_ASSERT_PTR_EQUAL(d->ep_handle, e[i]);
		CU_ASSERT_EQUAL(d->user_cookie.as_64 % 10, (uint64_t)flushed[i]);
		flushed[i]++;
	}
	for (int i = 0; i < N_SHARE; i++)
		CU_ASSERT_EQUAL(flushed[i], N_OUT);
	teardown(2);
}

/*
 * ibv_destroy_qp waits until the QP's async events are acknowledged, and
 * the async handler takes the XRC lock: the INI QP must be destroyed
 * without it.
 */
static void test_ini_qp_destroy_waits_for_its_async_event_without_the_lock(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	open_connected_pair(&a, &ea, &b, &eb);
	/* an event the handler only logs: what matters is that it can run */
	xm_async_qp_event_unacked(a, xm_ini_qp(0, 0, NULL), IBV_EVENT_SQ_DRAINED);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	teardown(2);
}

/*
 * open_two_peers under 2b, then B1's EP disconnects and B1 closes: the TGT
 * behind A's INI QP, which e2 still holds, is gone.
 */
static void open_peers_behind_a_dead_tgt(struct xm_proc **a, struct xm_proc **b2,
					 struct ofx_ep **e2, struct ofx_ep **f2)
{
	struct xm_proc *b1;
	struct ofx_ep *e1, *f1;

	open_two_peers(OFX_XRC_TGT_EXIT, a, &b1, b2, &e1, &f1, e2, f2);
	CU_ASSERT_EQUAL(stats(*a).ini_created, 1);
	expect_qp_counts(PROCS(*a, b1, *b2), COUNTS(1, 1, 1), COUNTS(2, 1));
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(*a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	xm_proc_close(b1);
	/* A's INI QP, still e2's, now leads to no TGT */
	expect_qp_counts(PROCS(*a, *b2), COUNTS(1, 1), COUNTS(1, 0));
}

/*
 * Under 2b the TGT behind A's INI QP dies with B1 while B2's EP keeps the
 * INI QP: B2 refuses that TGT for the next EP, which (D9a) connects on a
 * fresh INI QP instead of failing, and the one after takes that INI QP
 * rather than the same refusal.  `a_connects` false: the BIND direction,
 * A is the passive side (B2 refuses A's BIND, A binds again).
 */
static void refused_tgt_retried(bool a_connects)
{
	struct xm_proc *a, *b2;
	struct ofx_ep *e2, *f2, *e3, *f3;

	setup(2);
	open_peers_behind_a_dead_tgt(&a, &b2, &e2, &f2);
	e3 = xm_ep_new(a);
	f3 = xm_ep_new(b2);
	if (a_connects)
		pair(a, e3, b2, f3, 1);
	else
		pair(b2, f3, a, e3, 1);
	CU_ASSERT_EQUAL(stats(b2).refused, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, 2);
	CU_ASSERT_EQUAL(stats(b2).ini_created, 1);
	ping_pong(a, e3, a_connects ? 1000 : 2000, b2, f3, a_connects ? 2000 : 1000);
	if (a_connects)
		pair_over_new_ini(a, b2, 2);
	/* the DEAD INI QP stays with e2 until e2 goes; the new one has its TGT */
	expect_qp_counts(PROCS(a, b2), COUNTS(2, 1), COUNTS(1, 1));
	teardown(2);
}

static void test_refused_tgt_check_marks_the_ini_dead_and_rebuilds(void)
{
	refused_tgt_retried(true);
}

static void test_refused_bind_is_sent_again_over_a_fresh_ini(void)
{
	refused_tgt_retried(false);
}

/*
 * A's INI QP breaks: B, whose EPs reached A through it, hears a DISC and
 * ends them instead of staying half-open, and it sends no fence to A's
 * destroyed SRQs: B's INI QP, which it shares with an EP to C on A's node,
 * keeps working.
 */
static void test_broken_connection_tells_the_peer(void)
{
	struct xm_proc *a, *b, *c;
	struct ofx_ep *e1, *f1, *e2, *f2, *e3, *f3;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	c = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	e1 = xm_ep_new(a);
	f1 = xm_ep_new(b);
	e2 = xm_ep_new(a);
	f2 = xm_ep_new(b);
	e3 = xm_ep_new(c);
	f3 = xm_ep_new(b);
	pair(a, e1, b, f1, 1);
	pair(a, e2, b, f2, 1);
	pair(c, e3, b, f3, 2);
	CU_ASSERT_EQUAL(stats(b).ini_created, 1);
	expect_qp_counts(PROCS(a, c, b), COUNTS(1, 1, 1), COUNTS(1, 2));

	xm_async_qp_event(a, xm_ini_qp(0, 0, NULL), IBV_EVENT_QP_FATAL);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	xm_pump();
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(f1->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(f2->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(send_msg(f1, "late", 1),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	/* B's INI QP to node 0 is intact */
	expect_empty(b->conn_evd);
	expect_qp_counts(PROCS(a, c, b), COUNTS(0, 1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(f3->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(send_msg(f3, "to c", 2), DAT_SUCCESS);
	expect_recv(c, e3, 1000, "to c");
	teardown(2);
}

#define N_CHURN 200

/*
 * A churn cycle's end: `ea` disconnects, both sides report it and reset;
 * the cycle's INI QPs and their TGTs are gone.
 */
static void churn_cycle_end(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b,
			    struct ofx_ep *eb)
{
	CU_ASSERT_EQUAL(ofx_ep_disconnect(ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_reset(eb), DAT_SUCCESS);
	xm_pump();
	expect_qp_counts(PROCS(a, b), COUNTS(0, 0), COUNTS(0, 0));
	drain_sends(a);
	drain_sends(b);
}

/*
 * Connect/disconnect churn between two processes: every cycle makes a new
 * INI QP pair (the last EP took the old one along), and the TGT made for
 * the old INI QP goes when its sender says the INI QP is gone.  One TGT
 * per node while connected, none once every EP is freed.
 */
static void test_connect_disconnect_churn_keeps_the_tgt_count_bounded(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	int most = 0;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	for (int i = 0; i < N_CHURN; i++) {
		pair(a, ea, b, eb, 1);
		expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
		churn_cycle_end(a, ea, b, eb);
		for (int n = 0; n < 2; n++)
			most = xm_tgts_on_node(n) > most ? xm_tgts_on_node(n) : most;
	}
	CU_ASSERT(most <= 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, N_CHURN);
	CU_ASSERT_EQUAL(stats(b).tgt_created, N_CHURN);
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(eb), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 0);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 0);
	CU_ASSERT_EQUAL(stats(a).tgt_handles, 0);
	CU_ASSERT_EQUAL(stats(b).tgt_handles, 0);
	teardown(2);
}

#define N_RETRY_CHURN 20

/*
 * D10: the same churn over the rdma_cm carrier, where every INI request
 * needs a second try: on odd cycles the first accept fails (the TGT made
 * for it never reached the sender), on even ones its REP is lost (the
 * sender asks again while the first TGT is in RTR).  Every TGT made for a
 * cycle's INI QPs goes with them: the count returns to 0 each time.
 */
static void test_ini_retries_under_churn_leave_no_tgt(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	for (int i = 0; i < N_RETRY_CHURN; i++) {
		/* A's INI request (the first of the cycle) fails its first try */
		if (i % 2)
			xm_ini_accept_failures = 1;
		else
			xm_ini_reps_lost = 1;
		pair(a, ea, b, eb, 1);
		CU_ASSERT_EQUAL(xm_ini_accept_failures + xm_ini_reps_lost, 0);
		CU_ASSERT_EQUAL(stats(b).tgt_created, 2ul * (i + 1));
		CU_ASSERT_EQUAL(stats(a).tgt_created, (unsigned long)i + 1);
		CU_ASSERT_EQUAL(send_msg(ea, "again", 1), DAT_SUCCESS);
		expect_recv(b, eb, 2000, "again");
		churn_cycle_end(a, ea, b, eb);
		CU_ASSERT_EQUAL(stats(a).tgt_handles + stats(b).tgt_handles, 0);
	}
	CU_ASSERT_EQUAL(stats(a).ini_created, N_RETRY_CHURN);
	CU_ASSERT_EQUAL(stats(a).ctl_lost + stats(b).ctl_lost, 0);

	/* every try's accept fails: no INI-CLOSE will come, B keeps no TGT anyway */
	xm_ini_accept_failures = OFX_XRC_CTL_TRIES;
	post_recv(eb, 2001);
	xm_connect(a, ea, b, eb, NULL, 0, NULL, 0);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 1);
	CU_ASSERT_EQUAL(stats(b).tgt_created, 2ul * N_RETRY_CHURN + OFX_XRC_CTL_TRIES);
	expect_qp_counts(PROCS(a, b), COUNTS(0, 0), COUNTS(0, 0));
	/* A presumes B gone and says nothing: B's EP waits until its consumer ends it */
	expect_empty(b->conn_evd);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(eb, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	teardown(2);
}

/*
 * D10: an INI request whose REP is lost on every try, so the connect never
 * completes: A gives up (NON_PEER_REJECTED) and, its peer presumed gone,
 * sends no INI-CLOSE.  B made a TGT for each try; each goes when the CM
 * gives up on its REP (its id ends UNREACHABLE), not at B's ia_close.  The
 * next connection makes a TGT of its own and leaves one.
 */
static void test_ini_reps_lost_on_every_try_leave_no_tgt(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	xm_ini_reps_lost = OFX_XRC_CTL_TRIES;
	post_recv(eb, 2000);
	xm_connect(a, ea, b, eb, NULL, 0, NULL, 0);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	CU_ASSERT_EQUAL(xm_ini_reps_lost, 0);
	CU_ASSERT_EQUAL(stats(a).ctl_lost, 1);
	CU_ASSERT_EQUAL(stats(b).tgt_created, OFX_XRC_CTL_TRIES);
	CU_ASSERT_EQUAL(stats(b).tgt_handles, 0);
	expect_qp_counts(PROCS(a, b), COUNTS(0, 0), COUNTS(0, 0));
	expect_empty(b->conn_evd);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(eb, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_reset(eb), DAT_SUCCESS);

	pair(a, ea, b, eb, 1);
	CU_ASSERT_EQUAL(stats(b).tgt_created, OFX_XRC_CTL_TRIES + 1ul);
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(send_msg(ea, "after", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "after");
	teardown(2);
}

/*
 * The other side of that rule: an INI connection whose RTU (and the DREQ
 * after it) is lost.  The sender took the REP and sends through the TGT,
 * but the acceptor's id ends UNREACHABLE when the CM gives up on its REP,
 * after the sender's CONFIRM named the TGT.  Under 2b no EP holds a handle
 * to it; it stays all the same, as the sender uses it, until INI-CLOSE.
 */
static void test_ini_rtu_lost_keeps_the_tgt_its_sender_uses(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	a->ia.cfg.xrc_tgt = b->ia.cfg.xrc_tgt = OFX_XRC_TGT_EXIT;	/* 2b */
	xm_ini_rtus_lost = 1;	/* A's INI connection to B */
	pair(a, ea, b, eb, 2);
	CU_ASSERT_EQUAL(xm_ini_rtus_lost, 0);
	xm_ini_rep_timeout();
	xm_pump();
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(send_msg(ea, "still", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "still");
	CU_ASSERT_EQUAL(send_msg(eb, "back", 2), DAT_SUCCESS);
	expect_recv(a, ea, 1000, "back");
	expect_empty(a->conn_evd);
	churn_cycle_end(a, ea, b, eb);
	teardown(2);
}

#define N_EPS 6

/*
 * The QP saving XRC is for: N EPs from A to each of B and C (three nodes),
 * all over XRC, and not one RC QP among them, before or after connecting;
 * one INI QP per process and remote node.
 */
static void test_xrc_eps_own_no_rc_qp(void)
{
	struct xm_proc *a, *peer[2];
	struct ofx_ep *ea[2][N_EPS], *ep[2][N_EPS];

	setup(3);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	for (int n = 0; n < 2; n++) {
		peer[n] = xm_proc_open(n + 1, domfile[n + 1], OFX_XRC_TGT_DOMAIN);
		for (int i = 0; i < N_EPS; i++) {
			ea[n][i] = xm_ep_new(a);
			ep[n][i] = xm_ep_new(peer[n]);
		}
	}
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	for (int n = 0; n < 2; n++)
		for (int i = 0; i < N_EPS; i++)
			pair(a, ea[n][i], peer[n], ep[n][i], 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	expect_xrc_only(a, 2 * N_EPS);
	CU_ASSERT_EQUAL(stats(a).ini_live, 2);
	for (int n = 0; n < 2; n++) {
		CU_ASSERT_EQUAL(stats(peer[n]).ini_live, 1);
		expect_xrc_only(peer[n], N_EPS);
	}
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 4);
	/* the receives posted before connecting went to the SRQs */
	CU_ASSERT_EQUAL(send_msg(ea[1][N_EPS - 1], "last", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(ep[0][0], "first", 2), DAT_SUCCESS);
	expect_recv(peer[1], ep[1][N_EPS - 1], 2000, "last");
	expect_recv(a, ea[0][0], 1000, "first");
	/* a reset after an XRC connection builds no RC QP either */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(ea[0][0], DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(peer[0], ep[0][0], DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(a, ea[0][0], DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea[0][0]), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_reset(ep[0][0]), DAT_SUCCESS);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	pair(a, ea[0][0], peer[0], ep[0][0], 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	teardown(3);
}

/*
 * An RC QP exists only for a connection that runs over RC: the offer's REQ
 * names one (a peer without XRC connects to it) and the XRC answer closes
 * it; a plain REP keeps it for the connection, and reset or free takes it.
 * On the passive side a request without the offer makes one.
 */
static void test_rc_qp_only_for_a_connection_over_rc(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ofx_conn_req cr;
	bool offered = false;
	int ret = -1;

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	post_recv(ea, 1);

	/* active: the peer answers the offer with a REP (it runs no XRC) */
	pthread_mutex_lock(&ea->lock);
	ea->remote_addr = b->ia.addr;
	test_ep_force_state(ea, OFX_EP_ACTIVE_PENDING);
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, "hi", 3, &offered), 0);
	CU_ASSERT_TRUE(offered);
	CU_ASSERT_PTR_NOT_NULL(ea->qp);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 1);
	ofx_xrc_fallback(ea);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 1);
	/* the receive held since before connect goes to the RC QP at INIT */
	CU_ASSERT_EQUAL(ofx_ep_recv_go_live(ea, false), -EINVAL);
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(ea->qp, &init, XM_RC_INIT_MASK), 0);
	CU_ASSERT_EQUAL(ofx_ep_recv_go_live(ea, false), 0);
	CU_ASSERT_EQUAL(xm_rc_recvs(), 1);
	test_ep_force_state(ea, OFX_EP_DISCONNECTED);
	pthread_mutex_unlock(&ea->lock);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	CU_ASSERT_PTR_NULL(ea->qp);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(stats(a).conn_rc, 1);

	/* passive: a request without the offer (a stock peer) */
	memset(&cr, 0, sizeof(cr));
	pthread_mutex_lock(&eb->lock);
	CU_ASSERT_FALSE(ofx_xrc_accept(eb, &cr, NULL, 0, &ret));
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_PTR_NOT_NULL(eb->qp);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 1);
	CU_ASSERT_EQUAL(ofx_ep_free(eb), DAT_SUCCESS);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);

	/* the next connection of the same active EP is XRC again: no RC QP */
	eb = xm_ep_new(b);
	pair(a, ea, b, eb, 1);
	CU_ASSERT_PTR_NULL(ea->qp);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	teardown(2);
}

/*
 * dtest and dtestcm send 48 bytes of connect data, every byte RC leaves
 * beside our trailer: they run over XRC, and each side gets its peer's
 * exact bytes (the REQ's at P, the largest XRC accept's at A).
 */
static void test_48_byte_request_and_largest_accept_run_over_xrc(void)
{
	unsigned char req[48], acc[OFX_XRC_ACCEPT_MAX];
	struct ofx_pdata_hdr hdr;
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	DAT_EVENT ev;

	for (size_t i = 0; i < sizeof(req); i++)
		req[i] = (unsigned char)(0xa0 + i);
	for (size_t i = 0; i < sizeof(acc); i++)
		acc[i] = (unsigned char)(7 * i + 1);
	setup(2);
	open_pair(&a, &ea, &b, &eb);
	post_recv(ea, 1);
	post_recv(eb, 2);
	xm_connect(a, ea, b, eb, req, sizeof(req), acc, sizeof(acc));
	/* what P's CR reports: the consumer's 48 bytes at offset 0 */
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(ea->req_pdata, ea->req_pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(ea->req_pdata_len, 56);
	CU_ASSERT_EQUAL(hdr.consumer_len, sizeof(req));
	CU_ASSERT_EQUAL(memcmp(ea->req_pdata, req, sizeof(req)), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->conn_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(ev.event_data.connect_event_data.private_data_size, sizeof(acc));
	CU_ASSERT_EQUAL(memcmp(ev.event_data.connect_event_data.private_data, acc, sizeof(acc)),
			0);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_xrc_only(a, 1);
	expect_xrc_only(b, 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	/* the receives posted before connecting (cookies 1 and 2) */
	ping_pong(a, ea, 1, b, eb, 2);
	teardown(2);
}



/* ---- issue 14 leftovers: a TGT's creator killed ------------------------------ */

/*
 * B1 created the TGT behind A's INI QP to node 1; B2 (same node, same
 * domain) is reached through it.  B1's own EP is idle (its peer
 * disconnected it) when B1 is killed: its handles close without any of its
 * code running (no INI-CLOSE, no DISC).  2a: B2's handle keeps the TGT,
 * traffic both ways goes on, and the TGT goes when B2's connection through
 * it ends.  2b: the TGT dies with B1; A's next send through it kills the
 * INI QP (every EP on it BROKEN, B2 told), and the next EP gets a new pair.
 * Either way A's TGT for B1's INI QP stays until A closes (xrc.h 7).
 */
static void tgt_creator_killed(enum ofx_xrc_tgt mode)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;
	DAT_EVENT ev;

	setup(2);
	open_two_peers(mode, &a, &b1, &b2, &e1, &f1, &e2, &f2);
	CU_ASSERT_EQUAL(stats(b1).tgt_created, 1);
	CU_ASSERT_EQUAL(stats(b2).tgt_created, 0);
	CU_ASSERT_EQUAL(stats(b2).tgt_handles, mode == OFX_XRC_TGT_DOMAIN ? 1 : 0);
	/* node 0: A's TGTs for B1's and B2's INI QPs */
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 1), COUNTS(2, 1));

	/* A hangs up on B1's EP, then B1 dies holding the TGT's creator handle */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e1, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b1, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_free(e1), DAT_SUCCESS);
	xm_pump();
	/* e2 still holds A's INI QP; B1's went with its EP, and A's TGT for it */
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 0, 1), COUNTS(1, 1));
	xm_proc_kill(b1);
	xm_pump();
	expect_empty(a->conn_evd);
	expect_empty(b2->conn_evd);

	CU_ASSERT_EQUAL(send_msg(e2, "after b1 died", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "b2 to a", 2), DAT_SUCCESS);
	xm_pump();
	if (mode == OFX_XRC_TGT_DOMAIN) {
		/* 2a: B2's handle alone holds the TGT; nothing broke */
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
		CU_ASSERT_EQUAL(stats(b2).tgt_handles, 1);
		expect_recv(b2, f2, 2000, "after b1 died");
		expect_recv(a, e2, 1000, "b2 to a");
		CU_ASSERT_EQUAL(send_msg(e2, "and again", 3), DAT_SUCCESS);
		expect_recv(b2, f2, 2001, "and again");
		CU_ASSERT_EQUAL(drain_sends(a), 2);
		CU_ASSERT_EQUAL(drain_sends(b2), 1);
		CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
		CU_ASSERT_EQUAL(f2->state, OFX_EP_CONNECTED);
		expect_empty(a->conn_evd);
		/* the connection through it ends: B2's handle goes, and the TGT */
		CU_ASSERT_EQUAL(ofx_ep_disconnect(f2, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
		xm_pump();
		expect_conn(a, e2, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_conn(b2, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
		CU_ASSERT_EQUAL(stats(b2).tgt_handles, 0);
		expect_qp_counts(PROCS(a, b2), COUNTS(0, 0), COUNTS(0, 0));
	} else {
		/* 2b: the TGT went with B1: A's INI QP breaks, and e2 with it */
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 0);
		expect_empty(b2->recv_evd);
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->req_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status,
				DAT_DTO_ERR_TRANSPORT);
		CU_ASSERT_PTR_EQUAL(ev.event_data.dto_completion_event_data.ep_handle, e2);
		expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
		expect_conn(b2, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
		/* B2's send went the other way, over its own INI QP, before the DISC */
		expect_recv(a, e2, 1000, "b2 to a");
		CU_ASSERT_EQUAL(send_msg(e2, "dead", 3),
				OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
		CU_ASSERT_EQUAL(stats(a).ini_live, 0);
		/* the next EP to node 1 gets a new INI QP, B2 makes its TGT */
		pair_over_new_ini(a, b2, 2);
		CU_ASSERT_EQUAL(stats(b2).tgt_created, 1);
		expect_qp_counts(PROCS(a, b2), COUNTS(1, 1), COUNTS(1, 1));
	}
	/*
	 * No TGT leaks: B1's INI QP went with its EP's connection before B1
	 * died, so its INI-CLOSE took A's TGT for it; under 2b B2's new
	 * connection has A keep the one for B2's new INI QP.
	 */
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), mode == OFX_XRC_TGT_DOMAIN ? 0 : 1);
	CU_ASSERT_EQUAL(stats(a).tgt_handles, mode == OFX_XRC_TGT_DOMAIN ? 0 : 1);
	teardown(2);
}

static void test_tgt_creator_killed_domain_keeps_traffic(void)
{
	tgt_creator_killed(OFX_XRC_TGT_DOMAIN);
}

static void test_tgt_creator_killed_exit_breaks_the_ini(void)
{
	tgt_creator_killed(OFX_XRC_TGT_EXIT);
}

/*
 * The creator dies with its own EP still connected: A does not know until
 * it sends to it (or fences it): then the shared INI QP dies, the EP to B2
 * breaks too and B2 hears a DISC; 2a's handle is dropped with it.
 */
static void test_tgt_creator_killed_while_connected_breaks_the_shared_ini(void)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	open_two_peers(OFX_XRC_TGT_DOMAIN, &a, &b1, &b2, &e1, &f1, &e2, &f2);
	xm_proc_kill(b1);
	xm_pump();
	expect_empty(a->conn_evd);
	CU_ASSERT_EQUAL(send_msg(e2, "still fine", 1), DAT_SUCCESS);
	expect_recv(b2, f2, 2000, "still fine");
	CU_ASSERT_EQUAL(e1->state, OFX_EP_CONNECTED);	/* nobody said anything */
	CU_ASSERT_EQUAL(send_msg(e1, "to the dead", 2), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(b2, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(stats(b2).tgt_handles, 0);
	/* B2's INI QP went with its last EP's connection, and A's TGT for it */
	expect_qp_counts(PROCS(a, b2), COUNTS(0, 0), COUNTS(1, 0));
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
	/*
	 * A's TGT for the dead B1's INI QP waits for an INI-CLOSE that will
	 * never come (xrc.h 7): it goes when A closes, not before.
	 */
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_EQUAL(stats(a).tgt_handles, 1);
	CU_ASSERT_EQUAL(ofx_ep_free(e1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(e2), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	xm_proc_close(a);
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 0);
	teardown(2);
}

/* ---- issue 14 leftovers: DAT-level sequences over the model's rdma_cm ------- */

/*
 * D1a: an EP with 20 request SGEs, which an mlx5 RC QP holds (192 + 320
 * bytes) but no XRC INI QP (208 + 320), makes no offer as the active side
 * and declines one as the passive side: both connections run over RC, and
 * the probe QP is gone.
 */
static void test_ep_with_more_sges_than_an_ini_qp_holds_runs_over_rc(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb, *ea2, *eb2;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	int qps;

	setup(2);
	xm_device = &xm_dev_mlx5;
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	psp = psp_open(b);
	/* active: no offer (an RC REQ carries the consumer's bytes raw) */
	ea = ep_with_iov(a, 20);
	eb = xm_ep_new(b);
	post_recv(eb, 1);
	cr = dat_request(a, ea, b, psp, NULL, 0);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_established(a, ea, NULL, 0);
	expect_established(b, eb, NULL, 0);
	CU_ASSERT_EQUAL(stats(b).conn_rc, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created + stats(b).ini_created, 0);
	/* the model carries no RC traffic: both QPs are up, with their 20 SGEs */
	CU_ASSERT_PTR_NOT_NULL_FATAL(ea->qp);
	CU_ASSERT_EQUAL(ea->qp->state, IBV_QPS_RTS);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 2);

	/* passive: a plain EP's offer is declined; the probe's answer is kept */
	qps = fake_verbs.qps;
	ea2 = xm_ep_new(a);
	eb2 = ep_with_iov(b, 20);
	cr = dat_request(a, ea2, b, psp, "req", 4);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb2, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_established(a, ea2, NULL, 0);
	expect_established(b, eb2, NULL, 0);
	CU_ASSERT_EQUAL(stats(a).conn_rc, 1);	/* the REP answered ea2's offer */
	CU_ASSERT_EQUAL(stats(b).conn_rc, 2);
	CU_ASSERT_EQUAL(stats(a).conn_xrc + stats(b).conn_xrc, 0);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 4);
	CU_ASSERT_EQUAL(fake_verbs.qps, qps + 2);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
}

#define N_INFLIGHT 8

/* `n` dat_ep_connects from ea[] to b's PSP at once: b's CRs, in order. */
static void connect_all(struct xm_proc *b, struct ofx_ep **ea, DAT_CR_HANDLE *cr, int n)
{
	DAT_EVENT ev;

	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ofx_ep_connect(ea[i], (DAT_IA_ADDRESS_PTR)&b->ia.addr, QUAL,
					       DAT_TIMEOUT_INFINITE, 0, NULL, DAT_QOS_BEST_EFFORT,
					       DAT_CONNECT_DEFAULT_FLAG),
				DAT_SUCCESS);
	xm_pump();
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(b->cr_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
		cr[i] = ev.event_data.cr_arrival_event_data.cr_handle;
	}
}

/*
 * After connects in flight from a to b: a's RC QP peak was `peak_a`, b made
 * none, none is left, and one INI QP each way serves them all; the end.
 */
static void expect_in_flight_end(struct xm_proc *a, struct xm_proc *b, DAT_PSP_HANDLE psp,
				 unsigned long peak_a)
{
	CU_ASSERT_EQUAL(stats(a).rc_qps_peak, peak_a);
	CU_ASSERT_EQUAL(stats(a).rc_qps, 0);
	CU_ASSERT_EQUAL(stats(b).rc_qps_peak, 0);
	CU_ASSERT_EQUAL(stats(b).rc_qps, 0);
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
}

/* b accepts every CR of connect_all on eb[]: all are established on both sides. */
static void accept_all(struct xm_proc *a, struct ofx_ep **ea, struct xm_proc *b,
		       struct ofx_ep **eb, const DAT_CR_HANDLE *cr, int n)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ofx_cr_accept(cr[i], eb[i], 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_all_established(a, ea, n);
	expect_all_established(b, eb, n);
}

/*
 * D7: N dat_ep_connects in flight at once from one process to an XRC peer.
 * Each REQ names an RC QP of its own (a stock peer would accept it), so the
 * active side's peak of RC QPs is N; each goes with its XRC answer, the
 * passive side makes none, and none is left once all are established.
 */
static void test_rc_qp_peak_is_the_connects_in_flight(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea[N_INFLIGHT], *eb[N_INFLIGHT];
	DAT_CR_HANDLE cr[N_INFLIGHT];
	DAT_PSP_HANDLE psp;

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea[0], &b, &eb[0]);
	psp = psp_open(b);
	for (int i = 1; i < N_INFLIGHT; i++) {
		ea[i] = xm_ep_new(a);
		eb[i] = xm_ep_new(b);
	}
	connect_all(b, ea, cr, N_INFLIGHT);
	CU_ASSERT_EQUAL(stats(a).rc_qps, N_INFLIGHT);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), N_INFLIGHT);
	accept_all(a, ea, b, eb, cr, N_INFLIGHT);
	CU_ASSERT_EQUAL(stats(a).conn_xrc, N_INFLIGHT);
	expect_in_flight_end(a, b, psp, N_INFLIGHT);
}

/*
 * xrc_rc_fallback=no on both sides: the same N connects in flight build no
 * RC QP anywhere.  Each REQ names a TGT QP made for it, distinct on the
 * device, so the passive node's CM takes every one of them (the model
 * rejects a REQ naming a number a connection of that node holds, as the
 * kernel does: test_model_rejects_a_req_naming_a_qp_number_in_use); each
 * goes with its answer.
 */
static void test_xrc_only_connects_in_flight_build_no_rc_qp(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea[N_INFLIGHT], *eb[N_INFLIGHT];
	DAT_CR_HANDLE cr[N_INFLIGHT];
	DAT_PSP_HANDLE psp;

	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	a->ia.cfg.xrc_rc_fallback = b->ia.cfg.xrc_rc_fallback = false;
	psp = psp_open(b);
	for (int i = 0; i < N_INFLIGHT; i++) {
		ea[i] = xm_ep_new(a);
		eb[i] = xm_ep_new(b);
		post_recv(ea[i], 1000 + i);
		post_recv(eb[i], 2000 + i);
	}
	connect_all(b, ea, cr, N_INFLIGHT);
	for (int i = 0; i < N_INFLIGHT; i++)
		CU_ASSERT_PTR_NULL(ea[i]->qp);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	expect_empty(a->conn_evd);	/* no REQ was refused as stale */
	accept_all(a, ea, b, eb, cr, N_INFLIGHT);
	expect_xrc_only(a, N_INFLIGHT);
	expect_xrc_only(b, N_INFLIGHT);
	for (int i = 0; i < N_INFLIGHT; i++) {
		CU_ASSERT_EQUAL(send_msg(ea[i], "to b", 1), DAT_SUCCESS);
		CU_ASSERT_EQUAL(send_msg(eb[i], "to a", 2), DAT_SUCCESS);
		expect_recv(b, eb[i], 2000 + i, "to b");
		expect_recv(a, ea[i], 1000 + i, "to a");
	}
	expect_in_flight_end(a, b, psp, 0);
}

/*
 * xrc_rc_fallback=no towards a peer whose EPs run RC (xrc=off there): it
 * accepts over an RC QP of its own, naming the number our REQ gave.  We
 * have no QP for it: the active side rejects that accept and reports
 * NON_PEER_REJECTED with a log line saying why.  The passive side gets a
 * REJ (reason 28, no data) after its REP, as when an active consumer's
 * side turns down a REP: ours reports ACCEPT_COMPLETION_ERROR (what stock
 * libdaplofa reports for it is its own).  Nothing stays behind: reset
 * frees the offer's SRQ, and the next connect offers again.
 */
static void test_xrc_only_connect_to_an_rc_peer_is_refused(void)
{
	char path[] = "/tmp/ofx-xrc-log-XXXXXX", text[16384];
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	int fd = mkstemp(path);
	ssize_t n;

	CU_ASSERT_FATAL(fd >= 0);
	setenv("DAPL_OFX_LOG_FILE", path, 1);
	ofx_log_fini();
	ofx_log_init();
	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	a->ia.cfg.xrc_rc_fallback = false;
	psp = psp_open(b);
	ea = xm_ep_new(a);
	eb = xm_ep_rc(b);
	cr = dat_request(a, ea, b, psp, "hi", 3);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 1);	/* the offer's */
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_PTR_NULL(ea->qp);
	CU_ASSERT_PTR_NULL(ea->cm_id);
	CU_ASSERT_EQUAL(stats(a).rc_qps_peak, 0);
	CU_ASSERT_EQUAL(stats(a).conn_rc + stats(a).conn_xrc, 0);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 1);	/* the peer's EP's */
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(ofx_ep_free(eb), DAT_SUCCESS);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	/* an XRC peer next: the same EP connects over XRC, still without an RC QP */
	eb = xm_ep_new(b);
	pair(a, ea, b, eb, 1);
	expect_xrc_only(a, 1);
	CU_ASSERT_EQUAL(stats(a).rc_qps_peak, 0);
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
	ofx_log_fini();
	unsetenv("DAPL_OFX_LOG_FILE");
	ofx_log_init();
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(path);
	text[n > 0 ? n : 0] = '\0';
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "accepted the xrc offer over rc"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "xrc_rc_fallback=no"));
}

/*
 * xrc_rc_fallback=no leaves alone a connect that makes no offer: 49 bytes
 * of connect data leave no room for it, so the REQ names an RC QP of the
 * EP's and the connection runs over RC on it, as with the fallback.
 */
static void test_xrc_only_connect_without_an_offer_runs_over_rc(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	char big[49];

	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	a->ia.cfg.xrc_rc_fallback = false;
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	ea = xm_ep_new(a);	/* attached with the option set */
	CU_ASSERT_PTR_EQUAL(ea->transport, &ofx_xrc_only_ep_transport);
	psp = psp_open(b);
	memset(big, 'z', sizeof(big));
	CU_ASSERT_EQUAL(ofx_ep_connect(ea, (DAT_IA_ADDRESS_PTR)&b->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, (DAT_COUNT)sizeof(big), big,
				       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL(ea->qp);
	xm_pump();
	/* a raw RC REQ: the peer sees the whole 56-byte area, no trailer */
	cr = expect_cr(b, psp, QUAL, NULL, 56);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_established(a, ea, NULL, 0);
	expect_established(b, eb, NULL, 0);
	CU_ASSERT_EQUAL(ea->qp->state, IBV_QPS_RTS);
	CU_ASSERT_EQUAL(stats(a).rc_qps_peak, 1);
	CU_ASSERT_EQUAL(stats(a).conn_xrc + stats(b).conn_xrc, 0);
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
}

/*
 * The kernel's IB CM (cm_req_handler) refuses a REQ as stale (REJ reason
 * 10) when a connection of the receiving node already holds the QP number
 * it names from the same sending node; rdma_cm lets an id without a QP
 * name any number (conn_param->qp_num).  Two REQs in flight naming one
 * number: the second is refused, one naming another number is received.
 */
static void test_model_rejects_a_req_naming_a_qp_number_in_use(void)
{
	struct xm_proc *a, *b;
	struct rdma_cm_id *lid, *id[3], *got[3];
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;
	const uint32_t qpn[3] = { 0x77, 0x77, 0x78 };
	int nreq = 0, rej = 0, stale = -1;

	setup(2);
	xm_use_cm = true;
	xm_autopump = false;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	memcpy(&dst, &b->ia.addr, sizeof(dst));
	dst.sin_port = htons(4791);
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->create_id(b->ia.cm_channel, &lid, NULL, RDMA_PS_TCP), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->bind_addr(lid, (struct sockaddr *)&dst), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->listen(lid, 8), 0);
	for (int i = 0; i < 3; i++) {
		struct rdma_conn_param cp = { .qp_num = qpn[i] };

		CU_ASSERT_EQUAL_FATAL(ofx_verbs->create_id(a->ia.cm_channel, &id[i], NULL,
							   RDMA_PS_TCP), 0);
		CU_ASSERT_EQUAL(ofx_verbs->resolve_addr(id[i], NULL, (struct sockaddr *)&dst, 10), 0);
		CU_ASSERT_EQUAL(ofx_verbs->resolve_route(id[i], 10), 0);
		CU_ASSERT_EQUAL(ofx_verbs->connect(id[i], &cp), 0);
	}
	while (ofx_verbs->get_cm_event(b->ia.cm_channel, &ev) == 0) {
		CU_ASSERT_EQUAL(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (nreq < 3)
			got[nreq++] = ev->id;
		ofx_verbs->ack_cm_event(ev);
	}
	CU_ASSERT_EQUAL(nreq, 2);
	while (ofx_verbs->get_cm_event(a->ia.cm_channel, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			rej++;
			CU_ASSERT_EQUAL(ev->status, 10);
			stale = ev->id == id[1] ? 1 : ev->id == id[0] ? 0 : 2;
		}
		ofx_verbs->ack_cm_event(ev);
	}
	CU_ASSERT_EQUAL(rej, 1);
	CU_ASSERT_EQUAL(stale, 1);
	/* once the holder rejected its REQ, the number is free again */
	for (int i = 0; i < nreq; i++)
		ofx_verbs->reject(got[i], NULL, 0);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_id(id[1]), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->create_id(a->ia.cm_channel, &id[1], NULL, RDMA_PS_TCP), 0);
	CU_ASSERT_EQUAL(ofx_verbs->resolve_addr(id[1], NULL, (struct sockaddr *)&dst, 10), 0);
	CU_ASSERT_EQUAL(ofx_verbs->resolve_route(id[1], 10), 0);
	CU_ASSERT_EQUAL(ofx_verbs->connect(id[1], &(struct rdma_conn_param){ .qp_num = 0x77 }), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->get_cm_event(b->ia.cm_channel, &ev), 0);
	CU_ASSERT_EQUAL(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	got[nreq++] = ev->id;
	ofx_verbs->ack_cm_event(ev);
	for (int i = 0; i < nreq; i++)
		CU_ASSERT_EQUAL(ofx_verbs->destroy_id(got[i]), 0);
	while (ofx_verbs->get_cm_event(a->ia.cm_channel, &ev) == 0)
		ofx_verbs->ack_cm_event(ev);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(ofx_verbs->destroy_id(id[i]), 0);
	CU_ASSERT_EQUAL(ofx_verbs->destroy_id(lid), 0);
	xm_autopump = true;
	teardown(2);
}

/* A REQ from `p`'s device to b's PSP naming `qpn`, on an id of the test's: its answer. */
static struct rdma_cm_event req_answer(struct xm_proc *p, struct xm_proc *b, uint32_t qpn)
{
	struct rdma_cm_event *ev, got = { .event = RDMA_CM_EVENT_CONNECT_REQUEST };
	struct sockaddr_in dst;
	struct rdma_cm_id *id;

	memcpy(&dst, &b->ia.addr, sizeof(dst));
	dst.sin_port = htons(ofx_conn_qual_to_port(QUAL));
	CU_ASSERT_EQUAL_FATAL(ofx_verbs->create_id(p->ia.cm_channel, &id, NULL, RDMA_PS_TCP), 0);
	CU_ASSERT_EQUAL(ofx_verbs->resolve_addr(id, NULL, (struct sockaddr *)&dst, 10), 0);
	CU_ASSERT_EQUAL(ofx_verbs->resolve_route(id, 10), 0);
	CU_ASSERT_EQUAL(ofx_verbs->connect(id, &(struct rdma_conn_param){ .qp_num = qpn }), 0);
	while (ofx_verbs->get_cm_event(p->ia.cm_channel, &ev) == 0) {
		if (ev->id == id)
			got = *ev;
		ofx_verbs->ack_cm_event(ev);
	}
	CU_ASSERT_EQUAL(ofx_verbs->destroy_id(id), 0);
	return got;
}

/*
 * xrc_rc_fallback=no next to a live RC connection from the same device to
 * the same node.  SRQs and QPs are numbered apart on mlx5 and mlx4, so the
 * offer's SRQ can have the number of that connection's RC QP; the peer
 * node's IB CM holds (QP number, CA) of its connections and refuses a REQ
 * naming a pair it holds (REJ 10, stale connection), sending a DREQ to the
 * holder.  A REQ naming the SRQ's number, as the provider's did, is refused
 * and ends the RC connection.  The provider's REQ names a TGT QP made for
 * it: both connections live, and that QP goes with the XRC answer.
 */
static void test_xrc_only_req_never_names_a_live_connections_qp(void)
{
	struct xm_proc *a, *a2, *b;
	struct ofx_ep *ra, *rb, *xa, *xb;
	struct rdma_cm_event ev;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	uint32_t rc_qpn, req_qpn, srqn = 0;

	setup(2);
	xm_use_cm = true;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	a->ia.cfg.xrc_rc_fallback = false;
	psp = psp_open(b);
	ra = xm_ep_rc(a);
	rb = xm_ep_rc(b);
	post_recv(rb, 2000);
	CU_ASSERT_EQUAL(ofx_ep_connect(ra, (DAT_IA_ADDRESS_PTR)&b->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, 0, NULL, DAT_QOS_BEST_EFFORT,
				       DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	cr = expect_cr(b, psp, QUAL, NULL, 0);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, rb, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, ra, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_conn(b, rb, DAT_CONNECTION_EVENT_ESTABLISHED);
	rc_qpn = ra->qp->qp_num;

	/* the offer's SRQ gets the RC QP's number */
	xm_node_next_srqn(0, rc_qpn);
	xa = xm_ep_new(a);
	xb = xm_ep_new(b);
	CU_ASSERT_PTR_EQUAL(xa->transport, &ofx_xrc_only_ep_transport);
	post_recv(xa, 1000);
	post_recv(xb, 2001);
	CU_ASSERT_EQUAL(ofx_ep_connect(xa, (DAT_IA_ADDRESS_PTR)&b->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, 2, "x", DAT_QOS_BEST_EFFORT,
				       DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_PTR_NOT_NULL_FATAL(xm_ep_srq(xa));
	CU_ASSERT_EQUAL(ofx_verbs->get_srq_num(xm_ep_srq(xa), &srqn), 0);
	CU_ASSERT_EQUAL(srqn, rc_qpn);
	/* the REQ named a QP of A's own (a TGT), not the SRQ: b's CM took it */
	req_qpn = fake_cm.conn.qp_num;
	CU_ASSERT_NOT_EQUAL(req_qpn, srqn);
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_PTR_NULL(xa->qp);
	expect_empty(a->conn_evd);
	cr = expect_cr(b, psp, QUAL, "x", 2);

	/* what the SRQ's number would have met: REJ 10, and the RC connection ends */
	a2 = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	ev = req_answer(a2, b, srqn);
	CU_ASSERT_EQUAL(ev.event, RDMA_CM_EVENT_REJECTED);
	CU_ASSERT_EQUAL(ev.status, 10);
	ev = req_answer(a2, b, req_qpn);
	CU_ASSERT_EQUAL(ev.event, RDMA_CM_EVENT_REJECTED);	/* in flight: held too */
	CU_ASSERT_EQUAL(ev.status, 10);
	xm_pump();
	expect_conn(a, ra, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, rb, DAT_CONNECTION_EVENT_DISCONNECTED);

	CU_ASSERT_EQUAL(ofx_cr_accept(cr, xb, 0, NULL), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, xa, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_conn(b, xb, DAT_CONNECTION_EVENT_ESTABLISHED);
	/* the REQ's TGT went with the answer: node 0 holds only the one for b's INI QP */
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
	CU_ASSERT_EQUAL(stats(a).rc_qps_peak, 1);	/* ra's */
	CU_ASSERT_EQUAL(send_msg(xa, "xrc", 1), DAT_SUCCESS);
	expect_recv(b, xb, 2001, "xrc");
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
}

#define N_CLIENTS 4

/*
 * dapltest's server: one EP behind a PSP serves clients one after the
 * other (accept, traffic, disconnect, reset, accept), from two nodes and
 * several processes.  A CR that arrives before the reset cannot be taken by
 * the EP (DAT_INVALID_STATE) and stays pending until it is.  Every round
 * runs over XRC, each side ends with exactly its two events, and the
 * server's node never holds more than one TGT and one INI QP.
 */
static void test_dapltest_server_ep_serves_clients_in_a_row(void)
{
	struct xm_proc *srv, *cl[N_CLIENTS];
	struct ofx_ep *es, *ec[N_CLIENTS];
	DAT_PSP_HANDLE psp;
	char req[32], acc[32], text[MSG_LEN];

	setup(3);
	xm_use_cm = true;
	srv = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	for (int i = 0; i < N_CLIENTS; i++)
		cl[i] = xm_proc_open(i == 2 ? 2 : 0, domfile[i == 2 ? 2 : 0], OFX_XRC_TGT_DOMAIN);
	es = xm_ep_new(srv);
	psp = psp_open(srv);
	for (int i = 0; i < N_CLIENTS; i++) {
		DAT_CR_HANDLE cr;

		ec[i] = xm_ep_new(cl[i]);
		post_recv(ec[i], 100 + i);
		if (i == 0)
			post_recv(es, 200);
		snprintf(req, sizeof(req), "client %d", i);
		snprintf(acc, sizeof(acc), "server for %d", i);
		cr = dat_request(cl[i], ec[i], srv, psp, req, (int)strlen(req) + 1);
		if (i > 0) {
			DAT_EP_STATE st;
			DAT_BOOLEAN in_idle, out_idle;

			/* the EP is still DISCONNECTED from the previous client */
			CU_ASSERT_EQUAL(ofx_cr_accept(cr, es, 0, NULL),
					OFX_DAT_ERR(DAT_INVALID_STATE,
						    DAT_INVALID_STATE_EP_NOTREADY));
			/*
			 * A receive posted now waits in the EP (no SRQ takes it)
			 * and the reset drops it without an event, as an RC
			 * EP's reset drops what its old QP held: dapltest
			 * posts after the reset.
			 */
			post_recv(es, 900 + i);
			CU_ASSERT_EQUAL(ofx_ep_get_status(es, &st, &in_idle, &out_idle),
					DAT_SUCCESS);
			CU_ASSERT_EQUAL(st, DAT_EP_STATE_DISCONNECTED);
			CU_ASSERT_EQUAL(in_idle, DAT_FALSE);
			CU_ASSERT_EQUAL(ofx_ep_reset(es), DAT_SUCCESS);
			CU_ASSERT_EQUAL(ofx_ep_get_status(es, &st, &in_idle, &out_idle),
					DAT_SUCCESS);
			CU_ASSERT_EQUAL(st, DAT_EP_STATE_UNCONNECTED);
			CU_ASSERT_EQUAL(in_idle, DAT_TRUE);
			CU_ASSERT_EQUAL(out_idle, DAT_TRUE);
			expect_empty(srv->recv_evd);
			post_recv(es, 200 + i);
		}
		CU_ASSERT_EQUAL(ofx_cr_accept(cr, es, (DAT_COUNT)strlen(acc) + 1, acc),
				DAT_SUCCESS);
		xm_pump();
		expect_established(cl[i], ec[i], acc, (int)strlen(acc) + 1);
		expect_established(srv, es, NULL, 0);
		CU_ASSERT_EQUAL(stats(srv).ini_live, 1);
		CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
		CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);

		snprintf(text, sizeof(text), "to server from %d", i);
		CU_ASSERT_EQUAL(send_msg(ec[i], text, 1), DAT_SUCCESS);
		expect_recv(srv, es, 200 + i, text);
		snprintf(text, sizeof(text), "to client %d", i);
		CU_ASSERT_EQUAL(send_msg(es, text, 2), DAT_SUCCESS);
		expect_recv(cl[i], ec[i], 100 + i, text);
		xm_pump();
		CU_ASSERT_EQUAL(drain_sends(cl[i]), 1);
		CU_ASSERT_EQUAL(drain_sends(srv), 1);

		/* the client hangs up, as dapltest's does */
		CU_ASSERT_EQUAL(ofx_ep_disconnect(ec[i], DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
		xm_pump();
		expect_conn(srv, es, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_conn(cl[i], ec[i], DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_empty(srv->conn_evd);
		expect_empty(cl[i]->conn_evd);
		expect_empty(srv->cr_evd);
		CU_ASSERT_EQUAL(ofx_ep_free(ec[i]), DAT_SUCCESS);
		xm_pump();
		/* nothing of the round is left: QPs, TGTs, SRQs */
		CU_ASSERT_EQUAL(stats(srv).ini_live, 0);
		CU_ASSERT_EQUAL(stats(cl[i]).ini_live, 0);
		CU_ASSERT_EQUAL(xm_tgts_on_node(0) + xm_tgts_on_node(1) + xm_tgts_on_node(2), 0);
		CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
		CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	}
	expect_xrc_only(srv, N_CLIENTS);
	CU_ASSERT_EQUAL(stats(srv).tgt_created, N_CLIENTS);
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(3);
}

#define N_TX_EPS 4
#define N_TX_ROUNDS 3
#define TX_LEN 48

/*
 * dapltest's transaction test: several EPs between one process pair, one
 * recv and one request EVD for all of them, each round a SEND, an RDMA
 * WRITE and an RDMA READ per EP, the sends and writes unsignalled
 * (DAT_COMPLETION_SUPPRESS_FLAG) on odd rounds.  Every byte lands where it
 * was meant to, the request EVD reports exactly the signalled ones (with
 * their EP, cookie, operation and length), and all of it rides one INI QP
 * per direction.
 */
static void test_transaction_mix_over_shared_ini_qps(void)
{
	/* B's target of the writes and source of the reads; A's the other way */
	static struct {
		char w[N_TX_EPS][TX_LEN], r[N_TX_EPS][TX_LEN];
	} mem_b, mem_a;
	char (*wdst)[TX_LEN] = mem_b.w, (*rsrc)[TX_LEN] = mem_b.r;
	char (*wsrc)[TX_LEN] = mem_a.w, (*rdst)[TX_LEN] = mem_a.r;
	DAT_LMR_HANDLE lmr_b, lmr_a;
	DAT_LMR_CONTEXT lkey_b, lkey_a;
	DAT_RMR_CONTEXT rkey_b, rkey_a;
	DAT_REGION_DESCRIPTION reg;
	struct xm_proc *a, *b;
	struct ofx_ep *e[N_TX_EPS], *f[N_TX_EPS];
	char text[MSG_LEN];
	DAT_EVENT ev;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	/* one registration per side covers its buffers */
	reg.for_va = &mem_b;
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&b->ia, DAT_MEM_TYPE_VIRTUAL, reg, sizeof(mem_b), &b->pz,
					     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_b, &lkey_b,
					     &rkey_b, NULL, NULL),
			      DAT_SUCCESS);
	reg.for_va = &mem_a;
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&a->ia, DAT_MEM_TYPE_VIRTUAL, reg, sizeof(mem_a), &a->pz,
					     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_a, &lkey_a,
					     &rkey_a, NULL, NULL),
			      DAT_SUCCESS);
	for (int i = 0; i < N_TX_EPS; i++) {
		e[i] = xm_ep_new(a);
		f[i] = xm_ep_new(b);
		pair(a, e[i], b, f[i], N_TX_ROUNDS);
	}
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	CU_ASSERT_EQUAL(stats(b).ini_live, 1);

	for (int r = 0; r < N_TX_ROUNDS; r++) {
		DAT_COMPLETION_FLAGS fl = r % 2 ? DAT_COMPLETION_SUPPRESS_FLAG :
						  DAT_COMPLETION_DEFAULT_FLAG;
		int want = 0, got_rd[N_TX_EPS] = { 0 }, got_sr[N_TX_EPS] = { 0 };
		int got_wr[N_TX_EPS] = { 0 };

		for (int i = 0; i < N_TX_EPS; i++) {
			DAT_LMR_TRIPLET w = { .lmr_context = lkey_a, .segment_length = TX_LEN,
					      .virtual_address = (uintptr_t)wsrc[i] };
			DAT_LMR_TRIPLET rd = { .lmr_context = lkey_a, .segment_length = TX_LEN,
					       .virtual_address = (uintptr_t)rdst[i] };
			DAT_RMR_TRIPLET wt = { .rmr_context = rkey_b, .segment_length = TX_LEN,
					       .virtual_address = (uintptr_t)wdst[i] };
			DAT_RMR_TRIPLET rs = { .rmr_context = rkey_b, .segment_length = TX_LEN,
					       .virtual_address = (uintptr_t)rsrc[i] };
			DAT_DTO_COOKIE cw = { .as_64 = (uint64_t)(r * 100 + i * 10 + 1) };
			DAT_DTO_COOKIE cr = { .as_64 = (uint64_t)(r * 100 + i * 10 + 2) };

			snprintf(wsrc[i], TX_LEN, "write r%d ep%d", r, i);
			snprintf(rsrc[i], TX_LEN, "read r%d ep%d", r, i);
			memset(rdst[i], 0, TX_LEN);
			snprintf(text, sizeof(text), "send r%d ep%d", r, i);
			CU_ASSERT_EQUAL(ofx_ep_post_rdma_write(e[i], 1, &w, cw, &wt, fl),
					DAT_SUCCESS);
			CU_ASSERT_EQUAL(ofx_ep_post_rdma_read(e[i], 1, &rd, cr, &rs,
							      DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
			if (fl == DAT_COMPLETION_SUPPRESS_FLAG) {
				CU_ASSERT_EQUAL(send_msg_flags(e[i], text,
							       (uint64_t)(r * 100 + i * 10 + 3), fl),
						DAT_SUCCESS);
				want += 1;		/* the read */
			} else {
				CU_ASSERT_EQUAL(send_msg(e[i], text,
							 (uint64_t)(r * 100 + i * 10 + 3)),
						DAT_SUCCESS);
				want += 3;
			}
		}
		xm_pump();
		/* the bytes: written into B, read from B, received by B's EPs */
		for (int i = 0; i < N_TX_EPS; i++) {
			snprintf(text, sizeof(text), "write r%d ep%d", r, i);
			CU_ASSERT_STRING_EQUAL(wdst[i], text);
			snprintf(text, sizeof(text), "read r%d ep%d", r, i);
			CU_ASSERT_STRING_EQUAL(rdst[i], text);
		}
		for (int i = 0; i < N_TX_EPS; i++) {
			CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(b->recv_evd, &ev), DAT_SUCCESS);
			CU_ASSERT_PTR_EQUAL(ev.event_data.dto_completion_event_data.ep_handle,
					    f[i]);
			snprintf(text, sizeof(text), "send r%d ep%d", r, i);
			CU_ASSERT_STRING_EQUAL(buf_of(f[i], 2000 + r), text);
			CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64,
					2000 + r);
		}
		expect_empty(b->recv_evd);
		/* one DTO EVD for every EP: exactly the signalled completions */
		for (int k = 0; k < want; k++) {
			DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
			int i, op;

			CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->req_evd, &ev), DAT_SUCCESS);
			CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
			CU_ASSERT_EQUAL((int)(d->user_cookie.as_64 / 100), r);
			i = (int)(d->user_cookie.as_64 / 10 % 10);
			op = (int)(d->user_cookie.as_64 % 10);
			CU_ASSERT_FATAL(i < N_TX_EPS);
			CU_ASSERT_PTR_EQUAL(d->ep_handle, e[i]);
			switch (op) {
			case 1:
				CU_ASSERT_EQUAL(d->operation, DAT_DTO_RDMA_WRITE);
				CU_ASSERT_EQUAL(d->transfered_length, TX_LEN);
				got_wr[i]++;
				break;
			case 2:
				CU_ASSERT_EQUAL(d->operation, DAT_DTO_RDMA_READ);
				CU_ASSERT_EQUAL(d->transfered_length, TX_LEN);
				/* in order on the EP: its write came first */
				CU_ASSERT_EQUAL(got_wr[i], fl == DAT_COMPLETION_SUPPRESS_FLAG ? 0 : 1);
				got_rd[i]++;
				break;
			default:
				CU_ASSERT_EQUAL(d->operation, DAT_DTO_SEND);
				got_sr[i]++;
				break;
			}
		}
		expect_empty(a->req_evd);
		for (int i = 0; i < N_TX_EPS; i++) {
			CU_ASSERT_EQUAL(got_rd[i], 1);
			CU_ASSERT_EQUAL(got_wr[i], fl == DAT_COMPLETION_SUPPRESS_FLAG ? 0 : 1);
			CU_ASSERT_EQUAL(got_sr[i], fl == DAT_COMPLETION_SUPPRESS_FLAG ? 0 : 1);
		}
	}
	/* the point of XRC: one INI QP each way, one TGT per node, no RC QP */
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(stats(b).ini_created, 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2 * N_TX_EPS);

	/* a bad rkey is the peer's access error: it kills the shared INI QP */
	{
		DAT_LMR_TRIPLET w = { .lmr_context = lkey_a, .segment_length = TX_LEN,
				      .virtual_address = (uintptr_t)wsrc[0] };
		DAT_RMR_TRIPLET wt = { .rmr_context = rkey_b + 0x100, .segment_length = TX_LEN,
				       .virtual_address = (uintptr_t)wdst[0] };
		DAT_DTO_COOKIE c = { .as_64 = 999 };

		CU_ASSERT_EQUAL(ofx_ep_post_rdma_write(e[0], 1, &w, c, &wt,
						       DAT_COMPLETION_DEFAULT_FLAG),
				DAT_SUCCESS);
		xm_pump();
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(a->req_evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 999);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status,
				DAT_DTO_ERR_REMOTE_ACCESS);
		for (int i = 0; i < N_TX_EPS; i++)
			expect_conn(a, e[i], DAT_CONNECTION_EVENT_BROKEN);
		for (int i = 0; i < N_TX_EPS; i++)
			expect_conn(b, f[i], DAT_CONNECTION_EVENT_DISCONNECTED);
	}
	for (int i = 0; i < N_TX_EPS; i++) {
		CU_ASSERT_EQUAL(ofx_ep_free(e[i]), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ofx_ep_free(f[i]), DAT_SUCCESS);
	}
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr_a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr_b), DAT_SUCCESS);
	teardown(2);
}


#define N_FULL_EPS 16

/*
 * Every EP on a shared INI QP may have its max_request_dtos in flight, as
 * with an RC QP of its own: 16 EPs of 16 (and a fence) each are more than
 * the toy device's deepest queue (255).  Once an INI QP's slots are
 * spoken for, the next EP to that node gets a further INI QP pair (15 fit
 * one here); before, the 256th write failed with ENOMEM
 * (DAT_INSUFFICIENT_RESOURCES) although its EP had room.
 */
static void test_eps_sharing_an_ini_qp_each_get_their_request_queue(void)
{
	static char dst[TX_LEN];
	DAT_REGION_DESCRIPTION reg = { .for_va = dst };
	struct xm_proc *a, *b;
	struct ofx_ep *e[N_FULL_EPS], *f[N_FULL_EPS];
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_RMR_CONTEXT rkey;
	DAT_EVENT ev;
	int n = 0;

	setup(2);
	/* the toy's shallow queues: on mlx5 or mlx4 one INI QP holds hundreds of such EPs */
	xm_device = &xm_dev_toy;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&b->ia, DAT_MEM_TYPE_VIRTUAL, reg, sizeof(dst), &b->pz,
					     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lkey,
					     &rkey, NULL, NULL),
			      DAT_SUCCESS);
	for (int i = 0; i < N_FULL_EPS; i++) {
		e[i] = xm_ep_new(a);
		f[i] = xm_ep_new(b);
		pair(a, e[i], b, f[i], 0);
	}
	CU_ASSERT_EQUAL(stats(a).ini_created, 2);
	CU_ASSERT_EQUAL(stats(b).ini_created, 2);
	/* the EPs' queues fill two INI QPs each way */
	expect_qp_counts(PROCS(a, b), COUNTS(2, 2), COUNTS(2, 2));
	{
		struct ibv_qp_cap cap;

		CU_ASSERT_PTR_NOT_NULL_FATAL(xm_ini_qp(0, 0, &cap));
		CU_ASSERT_EQUAL(cap.max_send_wr, 255);
	}
	/* nobody polls A's request EVD meanwhile: every WR keeps its slot */
	for (int i = 0; i < N_FULL_EPS; i++)
		for (int k = 0; k < 16; k++) {
			DAT_LMR_TRIPLET w = { .lmr_context = lkey_of(e[i]), .segment_length = 8,
					      .virtual_address = (uintptr_t)mem.send[0] };
			DAT_RMR_TRIPLET t = { .rmr_context = rkey, .segment_length = 8,
					      .virtual_address = (uintptr_t)dst };
			DAT_DTO_COOKIE c = { .as_64 = (uint64_t)(i * 100 + k) };

			CU_ASSERT_EQUAL(ofx_ep_post_rdma_write(e[i], 1, &w, c, &t,
							       DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
		}
	while (ofx_evd_dequeue(a->req_evd, &ev) == DAT_SUCCESS) {
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
		n++;
	}
	CU_ASSERT_EQUAL(n, N_FULL_EPS * 16);
	for (int i = 0; i < N_FULL_EPS; i++)
		CU_ASSERT_EQUAL(e[i]->state, OFX_EP_CONNECTED);
	/*
	 * Teardown one pair at a time (G3): A's ep_free cannot wait for the
	 * peer's DISC here, so its SRQ goes at once; the peer, told, must not
	 * fence into it, or its shared INI QP and every EP on it would die.
	 */
	for (int i = 0; i < N_FULL_EPS; i++) {
		CU_ASSERT_EQUAL(ofx_ep_free(e[i]), DAT_SUCCESS);
		xm_pump();
		expect_conn(b, f[i], DAT_CONNECTION_EVENT_DISCONNECTED);
		CU_ASSERT_EQUAL(ofx_ep_free(f[i]), DAT_SUCCESS);
		xm_pump();
		for (int j = i + 1; j < N_FULL_EPS; j++) {
			CU_ASSERT_EQUAL(e[j]->state, OFX_EP_CONNECTED);
			CU_ASSERT_EQUAL(f[j]->state, OFX_EP_CONNECTED);
		}
	}
	expect_empty(a->conn_evd);
	expect_empty(b->conn_evd);
	expect_qp_counts(PROCS(a, b), COUNTS(0, 0), COUNTS(0, 0));
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr), DAT_SUCCESS);
	teardown(2);
}

/*
 * MPI's on-demand connections: ranks 0 and 1 connect to each other at
 * once.  Each gets the other's CR; rank 0 (the lower) rejects, so rank 1's
 * own connect is PEER_REJECTED; rank 1 resets the same EP and accepts rank
 * 0's request on it.  One connection results, over XRC, with nothing left
 * of the rejected attempt (its RC QP and its offer's SRQ).
 */
static void test_mpi_crossing_connects_reject_reset_accept(void)
{
	static const char rej[] = "rank 0 wins";
	struct xm_proc *p0, *p1;
	struct ofx_ep *e0, *e1;
	DAT_PSP_HANDLE psp0, psp1;
	DAT_CR_HANDLE cr_at0, cr_at1;
	DAT_EVENT ev;

	setup(2);
	xm_use_cm = true;
	p0 = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	p1 = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	psp0 = psp_open(p0);
	psp1 = psp_open(p1);
	e0 = xm_ep_new(p0);
	e1 = xm_ep_new(p1);
	post_recv(e0, 10);
	post_recv(e1, 11);
	/* both connect before either request arrives */
	CU_ASSERT_EQUAL(ofx_ep_connect(e0, (DAT_IA_ADDRESS_PTR)&p1->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, 7, "rank 0", DAT_QOS_BEST_EFFORT,
				       DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_connect(e1, (DAT_IA_ADDRESS_PTR)&p0->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, 7, "rank 1", DAT_QOS_BEST_EFFORT,
				       DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 2);	/* each REQ names one */
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2);		/* and each offer has its SRQ */
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p0->cr_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	cr_at0 = ev.event_data.cr_arrival_event_data.cr_handle;
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p1->cr_evd, &ev), DAT_SUCCESS);
	cr_at1 = ev.event_data.cr_arrival_event_data.cr_handle;

	/* rank 1's EP is busy connecting: it cannot take rank 0's request yet */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_cr_accept(cr_at1, e1, 0, NULL)), DAT_INVALID_STATE);
	/* rank 0 refuses the crossing request */
	CU_ASSERT_EQUAL(ofx_cr_reject(cr_at0, sizeof(rej), (DAT_PVOID)rej), DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p1->conn_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, e1);
	/* IB shows the whole REJ area less stock's 4-byte header: 144 bytes */
	CU_ASSERT_EQUAL(ev.event_data.connect_event_data.private_data_size, 144);
	CU_ASSERT_EQUAL(memcmp(ev.event_data.connect_event_data.private_data, rej, sizeof(rej)),
			0);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_DISCONNECTED);
	expect_empty(p0->conn_evd);
	/*
	 * Reset, then the same EP takes rank 0's request.  The reset drops
	 * the receive posted before the refused connect (no event), so it is
	 * posted again, as MPI does.
	 */
	CU_ASSERT_EQUAL(ofx_ep_reset(e1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_UNCONNECTED);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 1);	/* rank 0's REQ, until answered */
	CU_ASSERT_EQUAL(fake_verbs.srqs, 1);
	expect_empty(p1->recv_evd);
	post_recv(e1, 11);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr_at1, e1, 8, "rank 1!"), DAT_SUCCESS);
	xm_pump();
	expect_established(p0, e0, "rank 1!", 8);
	expect_established(p1, e1, NULL, 0);
	expect_empty(p0->conn_evd);
	expect_empty(p1->conn_evd);
	ping_pong(p0, e0, 10, p1, e1, 11);
	expect_xrc_only(p0, 1);
	expect_xrc_only(p1, 1);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);
	CU_ASSERT_EQUAL(xm_tgts_on_node(0), 1);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 1);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(e0, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(p1, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(p0, e0, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_psp_free(psp0), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_psp_free(psp1), DAT_SUCCESS);
	teardown(2);
}

/* ---- issue 14 leftovers: accept private data at the XRC and RC limits ------- */

/*
 * Accept data travels in the 148-byte XRC answer up to OFX_XRC_ACCEPT_REJ
 * (120) bytes, and the rest, up to the IB cap of 160 (stock's, what a REP
 * takes), after the CONFIRM-ACK (D8): every size runs over XRC, and A's
 * ESTABLISHED has every byte.  dat_cr_accept refuses more
 * (DAT_INVALID_PARAMETER, arg 3) and leaves the CR for a second try.
 */
static void accept_with(int len, bool refused)
{
	unsigned char acc[200];
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;

	for (int i = 0; i < (int)sizeof(acc); i++)
		acc[i] = (unsigned char)(i * 13 + len);
	setup(2);
	xm_use_cm = true;
	open_pair(&a, &ea, &b, &eb);
	psp = psp_open(b);
	cr = dat_request(a, ea, b, psp, "req", 4);
	if (refused) {
		CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb, len, acc),
				OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
		xm_pump();
		expect_empty(a->conn_evd);
		CU_ASSERT_EQUAL(eb->state, OFX_EP_UNCONNECTED);
		len = OFX_XRC_ACCEPT_MAX; /* the CR is still there: the limit works */
	}
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, eb, len, acc), DAT_SUCCESS);
	xm_pump();
	expect_established(a, ea, acc, len);
	expect_established(b, eb, NULL, 0);
	CU_ASSERT_EQUAL(stats(a).conn_xrc, 1);
	CU_ASSERT_EQUAL(stats(a).conn_rc, 0);
	CU_ASSERT_EQUAL(stats(b).conn_xrc, 1);
	CU_ASSERT_EQUAL(stats(b).conn_rc, 0);
	/* over RC each side keeps its QP, and no XRC QP or SRQ exists */
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 2);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 2);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(ea), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_reset(eb), DAT_SUCCESS);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_RC), 0);
	CU_ASSERT_EQUAL(ofx_psp_free(psp), DAT_SUCCESS);
	teardown(2);
}

static void test_accept_data_at_the_xrc_and_rc_limits(void)
{
	accept_with(0, false);
	accept_with(OFX_XRC_ACCEPT_REJ, false);		/* 120: the XRC answer alone */
	accept_with(OFX_XRC_ACCEPT_REJ + 1, false);	/* 121: 1 byte after the CONFIRM-ACK */
	accept_with(OFX_XRC_ACCEPT_MAX, false);		/* 160: the IB cap, over XRC too */
	accept_with(161, true);
	accept_with(188, true);				/* 196 - trailer: refused too */
	accept_with(189, true);
}

/*
 * A message longer than the receive it lands in (D9c).  The responder
 * completes the receive with a local length error and NAKs the message as
 * an invalid request: the sender's WR fails with REM_INV_REQ_ERR and its
 * INI QP is in error.  e1 and e2 of A share that INI QP to B (f1, f2):
 * e1's send (cookie 10) fails into f1's 8-byte receive; what A posted
 * behind it before polling (11 on e1, 20 and 21 on e2) is flushed.  Every
 * EP on the INI QP ends (e2 BROKEN; e1 BROKEN, or DISCONNECTED when f1's
 * DISC came first), f1 gets its receive's LOCAL_LENGTH completion and ends
 * (BROKEN, or DISCONNECTED when A's DISC came first), f2 is told
 * (DISCONNECTED).  `receiver_first`: B polls its receive before A polls its
 * send; either way e2 must not stay CONNECTED on the dead INI QP.
 */
static void undersized_receive(bool receiver_first)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 0, 1);
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	post_recv_len(f1, 77, 8);
	CU_ASSERT_EQUAL(send_msg(e2, "before", 1), DAT_SUCCESS);
	expect_recv(b, f2, 2000, "before");
	xm_pump();
	CU_ASSERT_EQUAL(drain_sends(a), 1);

	CU_ASSERT_EQUAL(send_msg(e1, "more than 8 bytes", 10), DAT_SUCCESS);
	/* the responder, B's TGT, is in error too */
	CU_ASSERT_EQUAL(xm_tgt_state(xm_ini_qp(0, 0, NULL)), IBV_QPS_ERR);
	CU_ASSERT_EQUAL(send_msg(e1, "behind it", 11), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(e2, "behind it too", 20), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(e2, "and me", 21), DAT_SUCCESS);
	if (receiver_first) {
		expect_dto(b->recv_evd, f1, 77, DAT_DTO_ERR_LOCAL_LENGTH);
		expect_conn(b, f1, DAT_CONNECTION_EVENT_BROKEN);
	}
	xm_pump();
	expect_dto(a->req_evd, e1, 10, DAT_DTO_ERR_REMOTE_RESPONDER);
	expect_dto(a->req_evd, e1, 11, DAT_DTO_ERR_FLUSHED);
	expect_dto(a->req_evd, e2, 20, DAT_DTO_ERR_FLUSHED);
	expect_dto(a->req_evd, e2, 21, DAT_DTO_ERR_FLUSHED);
	expect_empty(a->req_evd);
	expect_conn(a, e1, receiver_first ? DAT_CONNECTION_EVENT_DISCONNECTED :
					    DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	if (!receiver_first) {
		expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_dto(b->recv_evd, f1, 77, DAT_DTO_ERR_LOCAL_LENGTH);
	}
	expect_conn(b, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_empty(a->conn_evd);
	expect_empty(b->conn_evd);
	expect_empty(b->recv_evd);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(e2->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(f1->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(f2->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(send_msg(e2, "dead", 22),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
	/* both INI QPs went with their EPs; the next EP gets a fresh pair */
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(stats(b).ini_live, 0);
	pair_over_new_ini(a, b, 2);
	teardown(2);
}

static void test_undersized_receive_sender_polls_first(void)
{
	undersized_receive(false);
}

static void test_undersized_receive_receiver_polls_first(void)
{
	undersized_receive(true);
}

/*
 * M7: a TGT delivers only in RTR or RTS.  One moved to ERR (through any
 * handle: the kernel modifies the real QP) discards what reaches it, and
 * the INI QP's retries run out: both EPs on it break, nothing arrives.
 */
static void test_tgt_out_of_rtr_receives_nothing(void)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2;
	struct ibv_qp *ini;

	setup(2);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, 1, 1);
	ini = xm_ini_qp(0, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
	CU_ASSERT_EQUAL(xm_tgt_state(ini), IBV_QPS_RTR);
	CU_ASSERT_PTR_NOT_NULL_FATAL(xm_tgt_handle(ini));
	CU_ASSERT_EQUAL(ofx_verbs->modify_qp(xm_tgt_handle(ini), &err, IBV_QP_STATE), 0);
	CU_ASSERT_EQUAL(xm_tgt_state(ini), IBV_QPS_ERR);
	CU_ASSERT_EQUAL(send_msg(e1, "into the void", 1), DAT_SUCCESS);
	xm_pump();
	expect_dto(a->req_evd, e1, 1, DAT_DTO_ERR_TRANSPORT);
	expect_empty(a->req_evd);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_empty(b->recv_evd);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	teardown(2);
}

/*
 * M7: a TGT that cannot be moved to RTR (here B believes its device takes
 * more read depth than it does) is refused in the INI-ACK instead of
 * answered: the connection fails on both sides before anything is sent
 * into a TGT that would discard it, and no TGT is left.
 */
static void test_tgt_that_cannot_reach_rtr_refuses_the_ini(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	/* the toy's 4: on mlx5 and mlx4 the provider asks 16 at most, what they take */
	xm_device = &xm_dev_toy;
	open_pair(&a, &ea, &b, &eb);
	b->ia.dev_attr.max_qp_rd_atom = b->dev->max_qp_rd_atom + 1;
	post_recv(eb, 1);
	xm_connect(a, ea, b, eb, NULL, 0, NULL, 0);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(xm_tgts_on_node(1), 0);
	CU_ASSERT_EQUAL(stats(b).tgt_created, 0);
	CU_ASSERT_EQUAL(stats(b).tgt_handles, 0);
	CU_ASSERT_EQUAL(stats(a).ini_live, 0);
	CU_ASSERT_EQUAL(xm_live_qps(IBV_QPT_XRC_SEND), 0);
	teardown(2);
}

/*
 * G3 at process close: A's INI QP to node 1 serves e1 (to B1) and e2 (to
 * B2); its TGT is B1's, held by B2 too (2a).  B1 closes with its EP
 * connected.  As ia_close does (ofx_xrc_ia_quiesce), its connections end
 * before its SRQs go, the peers hearing the DISCs meanwhile, and the INI
 * QP its EP held goes with an INI-CLOSE that still reaches A: A's TGT for
 * it goes too.  e1 is told; e2's connection to B2, on the same INI QP of
 * A, lives and carries traffic.
 */
static void test_process_close_spares_the_peers_other_eps(void)
{
	struct xm_proc *a, *b1, *b2;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	open_two_peers(OFX_XRC_TGT_DOMAIN, &a, &b1, &b2, &e1, &f1, &e2, &f2);
	expect_qp_counts(PROCS(a, b1, b2), COUNTS(1, 1, 1), COUNTS(2, 1));
	xm_proc_close(b1);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_empty(a->conn_evd);
	expect_empty(b2->conn_evd);
	CU_ASSERT_EQUAL(e2->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(f2->state, OFX_EP_CONNECTED);
	expect_qp_counts(PROCS(a, b2), COUNTS(1, 1), COUNTS(1, 1));
	CU_ASSERT_EQUAL(send_msg(e2, "to b2", 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(f2, "to a", 2), DAT_SUCCESS);
	expect_recv(b2, f2, 2000, "to b2");
	expect_recv(a, e2, 1000, "to a");
	xm_pump();
	CU_ASSERT_EQUAL(drain_sends(a), 1);
	CU_ASSERT_EQUAL(drain_sends(b2), 1);
	teardown(2);
}

/*
 * D1(b): P cannot make its own INI QP back to A (here: its EP needs one
 * with 5 SGEs and the device is out of resources).  Its CONFIRM-ACK must
 * fail the connection without saying that A's TGT was refused: A's INI QP
 * to P's node, which e1 shares, is healthy and stays READY for the next EP
 * (ini_created stays 1), and e1 keeps working.
 */
static void test_peer_without_its_own_ini_qp_leaves_ours_alive(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *e1, *f1, *e2, *f2, *e3, *f3;

	setup(2);
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	xm_device = &xm_dev_mlx5;
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	xm_device = &xm_dev_toy;
	e1 = xm_ep_new(a);
	f1 = xm_ep_new(b);
	pair(a, e1, b, f1, 2);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);

	/* 5 SGEs: B's INI QP back to A (made with 4) cannot take f2 */
	e2 = xm_ep_new(a);
	f2 = ep_with_iov(b, 5);
	post_recv(f2, 1);
	xm_autopump = false;
	xm_connect(a, e2, b, f2, NULL, 0, NULL, 0);
	xm_autopump = true;
	xm_ini_create_errno = ENOMEM;
	xm_pump();
	xm_ini_create_errno = 0;
	expect_conn(a, e2, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	expect_conn(b, f2, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(stats(b).refused, 0);
	expect_empty(a->conn_evd);
	CU_ASSERT_EQUAL(e1->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(send_msg(e1, "still up", 1), DAT_SUCCESS);
	expect_recv(b, f1, 2000, "still up");

	e3 = xm_ep_new(a);
	f3 = xm_ep_new(b);
	pair(a, e3, b, f3, 1);
	CU_ASSERT_EQUAL(stats(a).ini_created, 1);
	CU_ASSERT_EQUAL(stats(a).ini_live, 1);
	CU_ASSERT_EQUAL(send_msg(e3, "same ini qp", 2), DAT_SUCCESS);
	expect_recv(b, f3, 2000, "same ini qp");
	teardown(2);
}

/* A send with invalidate of `rkey` from `ep`: `text` from a registered buffer. */
static DAT_RETURN send_inv(struct ofx_ep *ep, const char *text, uint64_t cookie, uint32_t rkey)
{
	char *buf = mem.send[nsend++ % NBUF];
	DAT_LMR_TRIPLET iov = { .lmr_context = lkey_of(ep), .virtual_address = (uintptr_t)buf,
				.segment_length = (DAT_VLEN)strlen(text) + 1 };
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	snprintf(buf, MSG_LEN, "%s", text);
	return ofx_ep_post_send_with_invalidate(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG,
						DAT_TRUE, rkey);
}

/*
 * M4, over one XRC connection.  A compare-and-swap and a fetch-and-add
 * change B's words, give A the old values (8 bytes each) and take none of
 * B's receives; an RDMA WRITE with immediate writes B's memory and takes
 * B's next receive (2000), which completes as DAT_IB_RDMA_WRITE_IMMED_DATA
 * with the immediate and the bytes written, its buffer untouched; a send
 * with invalidate takes the receive after that (2001) and names the window
 * of B's it invalidated (rmr_context); the same rkey again is an invalid
 * request that breaks the connection.  `cm`: over the rdma_cm carrier,
 * whose TGT gets its access flags from rdma_init_qp_attr().
 */
static void extended_ops(bool cm)
{
	static struct {
		uint64_t word[2];
		char dst[16];
	} target;
	static uint64_t result[2];
	DAT_LMR_TRIPLET l = { .segment_length = 8 }, w = { .segment_length = 8 };
	DAT_RMR_TRIPLET r = { .segment_length = 8 };
	DAT_DTO_COOKIE c;
	DAT_EVENT ev;
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ibv_mw *mw;

	setup(2);
	xm_use_cm = cm;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	a->ia.dev_attr.device_cap_flags |= IBV_DEVICE_MEM_MGT_EXTENSIONS;
	ea = ep_with_iov(a, 1);
	eb = ep_with_iov(b, 1);
	pair(a, ea, b, eb, 2);
	memset(&target, 0, sizeof(target));
	memset(result, 0, sizeof(result));
	target.word[0] = 5;
	target.word[1] = 100;
	r.rmr_context = xm_rkey(b, &target, sizeof(target));
	l.lmr_context = xm_lkey(a, result, sizeof(result));

	l.virtual_address = (uintptr_t)&result[0];
	r.virtual_address = (uintptr_t)&target.word[0];
	c.as_64 = 1;
	CU_ASSERT_EQUAL(dat_ib_post_cmp_and_swap(ea, 5, 7, &l, c, &r,
						 DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	l.virtual_address = (uintptr_t)&result[1];
	r.virtual_address = (uintptr_t)&target.word[1];
	c.as_64 = 2;
	CU_ASSERT_EQUAL(dat_ib_post_fetch_and_add(ea, 23, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	expect_ext_dto(a->req_evd, ea, 1, DAT_IB_CMP_AND_SWAP, &ev);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 8);
	expect_ext_dto(a->req_evd, ea, 2, DAT_IB_FETCH_AND_ADD, &ev);
	CU_ASSERT_EQUAL(result[0], 5);
	CU_ASSERT_EQUAL(target.word[0], 7);
	CU_ASSERT_EQUAL(result[1], 100);
	CU_ASSERT_EQUAL(target.word[1], 123);
	expect_empty(b->recv_evd);

	snprintf(mem.send[0], MSG_LEN, "written");
	w.lmr_context = lkey_of(ea);
	w.virtual_address = (uintptr_t)mem.send[0];
	r.virtual_address = (uintptr_t)target.dst;
	c.as_64 = 3;
	CU_ASSERT_EQUAL(dat_ib_post_rdma_write_immed(ea, 1, &w, c, &r, 0xfeedbeef,
						     DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	expect_ext_dto(a->req_evd, ea, 3, DAT_IB_RDMA_WRITE_IMMED, &ev);
	expect_ext_dto(b->recv_evd, eb, 2000, DAT_IB_RDMA_WRITE_IMMED_DATA, &ev);
	CU_ASSERT_EQUAL(ext_of(&ev)->val.immed.data, 0xfeedbeef);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 8);
	CU_ASSERT_STRING_EQUAL(target.dst, "written");
	CU_ASSERT_STRING_EQUAL(buf_of(eb, 2000), "");

	mw = ofx_verbs->alloc_mw(b->pz.pd, IBV_MW_TYPE_2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mw);
	CU_ASSERT_EQUAL(send_inv(ea, "invalidate", 4, mw->rkey), DAT_SUCCESS);
	xm_pump();
	expect_dto(a->req_evd, ea, 4, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(b->recv_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 2001);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.rmr_context, mw->rkey);
	CU_ASSERT_STRING_EQUAL(buf_of(eb, 2001), "invalidate");

	/* the window is invalid now: invalidating it again is refused by B's device */
	post_recv(eb, 2002);
	CU_ASSERT_EQUAL(send_inv(ea, "again", 5, mw->rkey), DAT_SUCCESS);
	xm_pump();
	expect_dto(a->req_evd, ea, 5, DAT_DTO_ERR_REMOTE_RESPONDER);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_empty(b->recv_evd);
	CU_ASSERT_EQUAL(ofx_verbs->dealloc_mw(mw), 0);
	teardown(2);
}

static void test_write_imm_atomics_and_send_with_invalidate(void)
{
	extended_ops(false);
}

static void test_rdma_cm_carrier_write_imm_atomics_and_send_with_invalidate(void)
{
	extended_ops(true);
}

/* What bad_segment posts wrong. */
enum bad_seg { BAD_SEND_LKEY, BAD_SEND_PD, BAD_RECV_LKEY, BAD_WRITE_PD };

#define NO_SUCH_LKEY 0xbad0000u

/*
 * M5: the model checks segments as the device does when it executes a WR.
 * A send whose lkey names no MR, or an MR of another PD than its INI QP's
 * (a second PZ of the same IA), fails before anything is sent with
 * LOC_PROT_ERR (DAT_DTO_ERR_LOCAL_PROTECTION).  A receive whose lkey is
 * bad fails at the responder with LOC_PROT_ERR, which NAKs the message: the
 * sender gets REM_OP_ERR (DAT_DTO_ERR_REMOTE_RESPONDER).  An RDMA WRITE
 * whose rkey opens an MR of another PD than the target SRQ's (an XRC
 * responder checks rkeys against that PD) is the peer's access error.  In
 * every case the sender's INI QP is in error: e1 and e2 break, f1 and f2
 * are told, and nothing of the WR lands; then a new EP gets a new pair.
 */
static void bad_segment(enum bad_seg kind)
{
	static char other[MSG_LEN];
	DAT_REGION_DESCRIPTION reg = { .for_va = other };
	DAT_DTO_COMPLETION_STATUS want = DAT_DTO_ERR_LOCAL_PROTECTION;
	DAT_DTO_COOKIE c = { .as_64 = 1 };
	DAT_LMR_TRIPLET iov = { .segment_length = 8 };
	DAT_RMR_TRIPLET t = { .segment_length = 8, .virtual_address = (uintptr_t)other };
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_RMR_CONTEXT rkey;
	struct xm_proc *a, *b, *owner;
	struct ofx_ep *e1, *f1, *e2, *f2;

	setup(2);
	memset(other, 0, sizeof(other));
	memset(mem.recv[NBUF - 1], 0, MSG_LEN);
	open_shared_pairs(&a, &b, &e1, &f1, &e2, &f2, kind == BAD_RECV_LKEY ? 0 : 1, 1);
	/* a registration in a second PZ: the sender's, or the target's for the write */
	owner = kind == BAD_WRITE_PD ? b : a;
	CU_ASSERT_EQUAL_FATAL(ofx_pz_create(&owner->ia, &pz), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&owner->ia, DAT_MEM_TYPE_VIRTUAL, reg, sizeof(other),
					     pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lkey,
					     &rkey, NULL, NULL),
			      DAT_SUCCESS);
	snprintf(mem.send[0], MSG_LEN, "payload");
	iov.lmr_context = lkey_of(e1);
	iov.virtual_address = (uintptr_t)mem.send[0];
	switch (kind) {
	case BAD_SEND_LKEY:
		iov.lmr_context = NO_SUCH_LKEY;
		break;
	case BAD_SEND_PD:
		iov.lmr_context = lkey;
		iov.virtual_address = (uintptr_t)other;
		break;
	case BAD_RECV_LKEY: {
		DAT_LMR_TRIPLET r = { .lmr_context = NO_SUCH_LKEY, .segment_length = MSG_LEN,
				      .virtual_address = (uintptr_t)mem.recv[NBUF - 1] };
		DAT_DTO_COOKIE rc = { .as_64 = 77 };

		CU_ASSERT_EQUAL(ofx_ep_post_recv(f1, 1, &r, rc, DAT_COMPLETION_DEFAULT_FLAG),
				DAT_SUCCESS);
		want = DAT_DTO_ERR_REMOTE_RESPONDER;
		break;
	}
	case BAD_WRITE_PD:
		t.rmr_context = rkey;
		want = DAT_DTO_ERR_REMOTE_ACCESS;
		break;
	}
	if (kind == BAD_WRITE_PD) {
		CU_ASSERT_EQUAL(ofx_ep_post_rdma_write(e1, 1, &iov, c, &t,
						       DAT_COMPLETION_DEFAULT_FLAG),
				DAT_SUCCESS);
	} else {
		CU_ASSERT_EQUAL(ofx_ep_post_send(e1, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG),
				DAT_SUCCESS);
	}
	xm_pump();
	expect_dto(a->req_evd, e1, 1, want);
	expect_empty(a->req_evd);
	expect_conn(a, e1, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(a, e2, DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(b, f1, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, f2, DAT_CONNECTION_EVENT_DISCONNECTED);
	if (kind == BAD_RECV_LKEY)
		expect_dto(b->recv_evd, f1, 77, DAT_DTO_ERR_LOCAL_PROTECTION);
	expect_empty(b->recv_evd);
	/* nothing landed: not in the write's target, not in the bad receive */
	CU_ASSERT_EQUAL(other[0], 0);
	CU_ASSERT_EQUAL(mem.recv[NBUF - 1][0], 0);
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(pz), DAT_SUCCESS);
	pair_over_new_ini(a, b, 2);
	teardown(2);
}

static void test_model_checks_lkeys_rkeys_and_their_pds(void)
{
	bad_segment(BAD_SEND_LKEY);
	bad_segment(BAD_SEND_PD);
	bad_segment(BAD_RECV_LKEY);
	bad_segment(BAD_WRITE_PD);
}

/*
 * A connected pair whose next send from A is held (RNR: B has no receive),
 * and so is A's fence behind it once A disconnects; A's progress thread
 * runs, and nobody polls A's request EVD.  Returns A's control requests
 * sent so far.
 */
static unsigned long fence_held(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b,
				struct ofx_ep **eb, unsigned int cm_timeout_ms)
{
	unsigned long sent;

	open_pair(a, ea, b, eb);
	pair(*a, *ea, *b, *eb, 1);
	CU_ASSERT_EQUAL(send_msg(*ea, "first", 1), DAT_SUCCESS);
	expect_recv(*b, *eb, 2000, "first");
	CU_ASSERT_EQUAL(send_msg(*ea, "held", 2), DAT_SUCCESS);
	(*a)->ia.cfg.cm_timeout_ms = cm_timeout_ms;
	CU_ASSERT_FATAL(ofx_progress_start(&(*a)->ia.progress, "unit") == 0);
	sent = stats(*a).ctl_sent;
	CU_ASSERT_EQUAL(ofx_ep_disconnect(*ea, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	/* the fence is out: its EVD's channel watched and armed, no DISC yet */
	CU_ASSERT_EQUAL((*a)->req_evd->channel_watchers, 1);
	CU_ASSERT_TRUE((*a)->req_evd->channel_watched);
	CU_ASSERT_TRUE(fake_cq_armed((*a)->req_evd->cq));
	CU_ASSERT_EQUAL(stats(*a).ctl_sent, sent);
	return sent;
}

/* Stops A's progress thread; the test thread alone drives the model again. */
static void fence_progress_stop(struct xm_proc *a)
{
	ofx_progress_stop(a->ia.progress);
	a->ia.progress = NULL;
}

/*
 * Nobody polls A's request EVD (the consumer waits for DISCONNECTED): the
 * fence's completion wakes A's progress thread through the EVD's
 * completion channel, and DISC follows at once.  No timer polls the CQ, and
 * the deadline (120 s here) is not what ends the wait: well within half of
 * it, however busy the machine.
 */
static void test_fence_completes_by_its_completion_event_with_nobody_polling(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	unsigned long sent;
	uint64_t t0;

	setup(2);
	sent = fence_held(&a, &ea, &b, &eb, 120000);
	t0 = ofx_now_ns();
	/* a receive at B lets "held" and the fence complete on A's armed CQ */
	post_recv(eb, 2001);
	ofx_xrc_ep_quiesce(ea);
	CU_ASSERT(ofx_now_ns() - t0 < 60000000000ull);
	fence_progress_stop(a);
	CU_ASSERT_EQUAL(stats(a).ctl_sent, sent + 1);	/* the DISC */
	CU_ASSERT_EQUAL(a->req_evd->channel_watchers, 0);
	CU_ASSERT_EQUAL(fake_cq_pending(a->req_evd), 0);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECT_PENDING);
	xm_pump();
	expect_recv(b, eb, 2001, "held");
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	/* the fence completed: the EP's memory goes with it */
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	CU_ASSERT_TRUE(ofx_list_empty(&a->ia.zombies));
	teardown(2);
}

/*
 * A fence that never completes ends at its deadline (cm_timeout_ms, the
 * progress thread's one-shot timer): DISC goes out and the watch ends.  It
 * may complete yet, so the EP's memory is kept until ia_close.
 */
static void test_fence_that_never_completes_ends_at_its_deadline(void)
{
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	unsigned long sent;
	uint64_t t0, waited;

	setup(2);
	t0 = ofx_now_ns();
	sent = fence_held(&a, &ea, &b, &eb, 100);
	/* the fence's timer is armed: a longer wait here (120 s) sees it fire */
	a->ia.cfg.cm_timeout_ms = 120000;
	ofx_xrc_ep_quiesce(ea);
	waited = ofx_now_ns() - t0;
	fence_progress_stop(a);
	CU_ASSERT(waited >= 100000000ull);
	CU_ASSERT(waited < 60000000000ull);	/* the fence's 100 ms, not the 120 s */
	CU_ASSERT_EQUAL(stats(a).ctl_sent, sent + 1);	/* the DISC, without the fence */
	CU_ASSERT_EQUAL(a->req_evd->channel_watchers, 0);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_DISCONNECT_PENDING);
	xm_pump();
	expect_conn(a, ea, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_free(ea), DAT_SUCCESS);
	CU_ASSERT_FALSE(ofx_list_empty(&a->ia.zombies));
	teardown(2);
}

CU_TestInfo ofx_test_xrc[] = {
	{ "fence completes by its completion event with nobody polling",
	  test_fence_completes_by_its_completion_event_with_nobody_polling },
	{ "fence that never completes ends at its deadline",
	  test_fence_that_never_completes_ends_at_its_deadline },
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
	{ "rdma_cm carrier resolves a route once per peer node and port space",
	  test_rdma_cm_carrier_resolves_a_route_once_per_peer_node },
	{ "rdma_cm carrier drops a stale path and resolves again",
	  test_rdma_cm_carrier_drops_a_stale_path_and_resolves_again },
	{ "rdma_cm carrier: waiters share a failed resolution, then resolve once",
	  test_rdma_cm_carrier_waiters_share_a_failed_resolution },
	{ "rdma_cm carrier keeps no path on roce", test_rdma_cm_carrier_keeps_no_path_on_roce },
	{ "model refuses the attribute masks the kernel refuses",
	  test_model_refuses_masks_the_kernel_refuses },
	{ "model refuses receives on xrc qps", test_model_refuses_receives_on_xrc_qps },
	{ "model sizes xrc send queues as mlx5 does", test_model_mlx5_sizes_xrc_send_queues },
	{ "ini qp fits an mlx5 device", test_ini_qp_fits_an_mlx5_device },
	{ "rc qp peak is the connects in flight, none on the passive side or after",
	  test_rc_qp_peak_is_the_connects_in_flight },
	{ "xrc_rc_fallback=no: connects in flight build no rc qp on either side",
	  test_xrc_only_connects_in_flight_build_no_rc_qp },
	{ "xrc_rc_fallback=no: a peer that accepts over rc is refused, nothing leaks",
	  test_xrc_only_connect_to_an_rc_peer_is_refused },
	{ "xrc_rc_fallback=no: a connect that makes no offer runs over rc",
	  test_xrc_only_connect_without_an_offer_runs_over_rc },
	{ "model rejects a req naming a qp number a connection of that node holds",
	  test_model_rejects_a_req_naming_a_qp_number_in_use },
	{ "xrc_rc_fallback=no: a req never names a live connection's qp number",
	  test_xrc_only_req_never_names_a_live_connections_qp },
	{ "ep with more request sges than an ini qp holds runs over rc (mlx5)",
	  test_ep_with_more_sges_than_an_ini_qp_holds_runs_over_rc },
	{ "ini qp that cannot be made fails both sides cleanly",
	  test_ini_qp_that_cannot_be_made_fails_both_sides },
	{ "rdma_cm carrier negotiates read depths", test_rdma_cm_carrier_negotiates_read_depths },
	{ "rdma_cm carrier logs the queried ini and tgt attributes",
	  test_rdma_cm_carrier_logs_the_queried_qp_attributes },
	{ "rc accept grants the depths the peer asked",
	  test_rc_accept_grants_the_depths_the_peer_asked },
	{ "rmr bind on an xrc connection is refused", test_rmr_bind_on_an_xrc_connection_is_refused },
	{ "async events on an ini qp", test_async_events_on_an_ini_qp },
	{ "srq error on an xrc srq breaks its ep alone, on the async evd too",
	  test_srq_error_on_an_xrc_srq_breaks_its_ep_alone },
	{ "srq destroy with unpolled receives spares other eps' completions",
	  test_srq_destroy_with_unpolled_receives_spares_other_eps },
	{ "reconnect while the evd is full keeps the retired srq (rc)",
	  test_reconnect_while_the_evd_is_full_keeps_the_retired_srq },
	{ "completions behind a full evd are delivered once polled",
	  test_completions_behind_a_full_evd_are_delivered_once_polled },
	{ "broken shared ini qp flushes every ep's dtos",
	  test_broken_shared_ini_flushes_every_eps_dtos },
	{ "ini qp destroy waits for its async event without the xrc lock",
	  test_ini_qp_destroy_waits_for_its_async_event_without_the_lock },
	{ "refused tgt check marks the ini qp dead, the next ep rebuilds it",
	  test_refused_tgt_check_marks_the_ini_dead_and_rebuilds },
	{ "refused bind is sent again over a fresh ini qp",
	  test_refused_bind_is_sent_again_over_a_fresh_ini },
	{ "broken connection tells the peer, which fences nothing to it",
	  test_broken_connection_tells_the_peer },
	{ "xrc eps own no rc qp: one ini qp per process and remote node",
	  test_xrc_eps_own_no_rc_qp },
	{ "an rc qp exists only for a connection over rc, reset and free take it",
	  test_rc_qp_only_for_a_connection_over_rc },
	{ "48-byte request (dtest) and the largest accept run over xrc",
	  test_48_byte_request_and_largest_accept_run_over_xrc },
	{ "ini requests tried again under churn leave no tgt behind",
	  test_ini_retries_under_churn_leave_no_tgt },
	{ "ini request whose rep is lost on every try leaves no tgt",
	  test_ini_reps_lost_on_every_try_leave_no_tgt },
	{ "ini connection whose rtu is lost keeps the tgt its sender uses",
	  test_ini_rtu_lost_keeps_the_tgt_its_sender_uses },
	{ "connect/disconnect churn keeps the tgt count bounded",
	  test_connect_disconnect_churn_keeps_the_tgt_count_bounded },
	{ "tgt creator killed, 2a: the tgt stays, traffic goes on, no tgt leaks",
	  test_tgt_creator_killed_domain_keeps_traffic },
	{ "tgt creator killed, 2b: the tgt dies, the ini qp breaks, the next ep rebuilds",
	  test_tgt_creator_killed_exit_breaks_the_ini },
	{ "tgt creator killed while connected: the shared ini qp breaks at the next send",
	  test_tgt_creator_killed_while_connected_breaks_the_shared_ini },
	{ "dapltest server ep serves clients in a row (accept, disconnect, reset)",
	  test_dapltest_server_ep_serves_clients_in_a_row },
	{ "transaction mix (send, write, read, unsignalled) over shared ini qps",
	  test_transaction_mix_over_shared_ini_qps },
	{ "eps sharing an ini qp each get their request queue",
	  test_eps_sharing_an_ini_qp_each_get_their_request_queue },
	{ "mpi crossing connects: reject, reset and accept on the same ep",
	  test_mpi_crossing_connects_reject_reset_accept },
	{ "accept data up to the ib cap runs over xrc (120, 121, 160; 161, 188, 189 refused)",
	  test_accept_data_at_the_xrc_and_rc_limits },
	{ "undersized receive, sender polls first: the shared ini qp dies, peers told",
	  test_undersized_receive_sender_polls_first },
	{ "undersized receive, receiver polls first: the shared ini qp dies all the same",
	  test_undersized_receive_receiver_polls_first },
	{ "tgt out of rtr receives nothing: the ini qp's retries run out",
	  test_tgt_out_of_rtr_receives_nothing },
	{ "tgt that cannot reach rtr refuses the ini request",
	  test_tgt_that_cannot_reach_rtr_refuses_the_ini },
	{ "model checks lkeys, rkeys and their pds as the device does",
	  test_model_checks_lkeys_rkeys_and_their_pds },
	{ "process close spares the peer's other eps on the same ini qp",
	  test_process_close_spares_the_peers_other_eps },
	{ "peer without its own ini qp leaves ours alive (ini_created stays 1)",
	  test_peer_without_its_own_ini_qp_leaves_ours_alive },
	{ "write with immediate, atomics and send with invalidate over xrc",
	  test_write_imm_atomics_and_send_with_invalidate },
	{ "rdma_cm carrier: write with immediate, atomics and send with invalidate",
	  test_rdma_cm_carrier_write_imm_atomics_and_send_with_invalidate },
	CU_TEST_INFO_NULL,
};
