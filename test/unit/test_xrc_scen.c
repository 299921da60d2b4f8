/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "sp.h"
#include "verbs.h"
#include "xrc_steps.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/*
 * Issue 14: the DAT call sequences of the test programs and of an MPI
 * start-up, through the XRC model (xrc_model.h) and its rdma_cm.  Nodes
 * are IP addresses, processes are IAs in this process, two per node
 * sharing the node's domain file.  Each scenario checks the QP counts XRC
 * is for (expect_qp_counts: no RC QP once established, one INI QP per
 * process and remote node while the EPs' queues fit one, TGTs per node
 * one per remote INI QP), and run_unit runs them under every device
 * profile.  Then what the device's own async events do: LAST_WQE_REACHED
 * and SRQ_LIMIT_REACHED, raised by the model as mlx5 raises them.
 */

/* The CR's private data (dat_cr_query). */
static const char *cr_pdata(DAT_CR_HANDLE cr)
{
	DAT_CR_PARAM param;

	CU_ASSERT_EQUAL_FATAL(ofx_cr_query(cr, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
	return param.private_data;
}

static DAT_PSP_HANDLE psp_at(struct xm_proc *p, DAT_CONN_QUAL qual)
{
	DAT_PSP_HANDLE psp = NULL;

	CU_ASSERT_EQUAL_FATAL(ofx_psp_create(&p->ia, qual, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
			      DAT_SUCCESS);
	return psp;
}

static void connect_at(struct ofx_ep *ep, struct xm_proc *to, DAT_CONN_QUAL qual,
		       const void *pdata, int len)
{
	CU_ASSERT_EQUAL(ofx_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&to->ia.addr, qual,
				       DAT_TIMEOUT_INFINITE, len, (DAT_PVOID)pdata,
				       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
}

/*
 * The next `n` connection events of `p` are `num`, one for each of eps[0..n),
 * in any order; then its connection EVD is empty.
 */
#define expect_conn_set(p, eps, n, num) expect_conn_set_at(p, eps, n, num, __LINE__)
static void expect_conn_set_at(struct xm_proc *p, struct ofx_ep *const *eps, int n,
			       DAT_EVENT_NUMBER num, int line)
{
	bool seen[128] = { false };
	DAT_EVENT ev;

	CU_ASSERT_FATAL(n <= 128);
	for (int k = 0; k < n; k++) {
		int i = 0;

		if (ofx_evd_dequeue(p->conn_evd, &ev) != DAT_SUCCESS) {
			fprintf(stderr, "%d of %d connection events at line %d\n", k, n, line);
			CU_FAIL_FATAL("connection event missing");
		}
		while (i < n && eps[i] != ev.event_data.connect_event_data.ep_handle)
			i++;
		if (ev.event_number != num || i == n || seen[i])
			fprintf(stderr, "event 0x%x (ep %d), expected 0x%x at line %d\n",
				ev.event_number, i, num, line);
		CU_ASSERT_EQUAL(ev.event_number, num);
		CU_ASSERT_FATAL(i < n);
		CU_ASSERT_FALSE(seen[i]);
		seen[i] = true;
	}
	expect_empty(p->conn_evd);
}

/*
 * The INI QPs a process needs for `n` EPs that each take `wr` of a queue:
 * as many as the first INI QP of `node` (what the device granted) holds.
 */
static int inis_for(int node, int n, unsigned int wr)
{
	struct ibv_qp_cap cap;
	int per;

	CU_ASSERT_PTR_NOT_NULL_FATAL(xm_ini_qp(node, 0, &cap));
	per = (int)(cap.max_send_wr / wr);
	CU_ASSERT_FATAL(per > 0);
	return (n + per - 1) / per;
}

/* ---- S3: dtestcm ----------------------------------------------------------- */

#define CM_CONNS 100
#define CM_BURST 10
#define CM_PDATA 48
#define CM_EP_WR 17	/* xm_ep_new: 16 requests and the fence */

/* Client k's request for its i-th EP: 48 bytes, the index readable. */
static void cm_pdata(char pd[CM_PDATA], int k, int i)
{
	memset(pd, 0, CM_PDATA);
	snprintf(pd, CM_PDATA, "dtestcm %d ep %03d", k, i);
}

/*
 * dtestcm: a server with one PSP, a client connecting 100 EPs to it in
 * bursts of 10 with 48 bytes of private data each, then disconnecting
 * them all.  Two such pairs run at once, the clients on node 0, the
 * servers on node 1, each node's two processes sharing its domain file.
 * The server takes each CR as it comes and accepts it on the EP the
 * private data names.  Every connection runs over XRC: per process as many
 * INI QPs as 100 EPs' queues need of the device (one on mlx5 and mlx4),
 * one TGT per INI QP on the other node, no RC QP; the first and last
 * connections carry data; nothing is left once the EPs are freed.
 */
static void test_dtestcm_100_connections_in_bursts(void)
{
	static struct ofx_ep *ec[2][CM_CONNS], *es[2][CM_CONNS];
	struct xm_proc *cl[2], *sv[2];
	DAT_PSP_HANDLE psp[2];
	char pd[CM_PDATA];
	int n;

	setup(2);
	xm_use_cm = true;
	for (int k = 0; k < 2; k++) {
		cl[k] = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
		sv[k] = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
		psp[k] = psp_at(sv[k], QUAL + k);
		for (int i = 0; i < CM_CONNS; i++) {
			ec[k][i] = xm_ep_new(cl[k]);
			es[k][i] = xm_ep_new(sv[k]);
		}
		post_recv(ec[k][0], 100 + k);
		post_recv(es[k][CM_CONNS - 1], 200 + k);
	}
	for (int b = 0; b < CM_CONNS; b += CM_BURST) {
		for (int i = b; i < b + CM_BURST; i++)
			for (int k = 0; k < 2; k++) {
				cm_pdata(pd, k, i);
				connect_at(ec[k][i], sv[k], QUAL + k, pd, CM_PDATA);
			}
		xm_pump();
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < CM_BURST; r++) {
				DAT_CR_HANDLE cr = expect_cr(sv[k], psp[k], QUAL + k, NULL, CM_PDATA);
				int i = -1, kk = -1;

				CU_ASSERT_EQUAL_FATAL(sscanf(cr_pdata(cr), "dtestcm %d ep %d", &kk, &i), 2);
				CU_ASSERT_EQUAL(kk, k);
				CU_ASSERT_FATAL(i >= b && i < b + CM_BURST);
				cm_pdata(pd, k, i);
				CU_ASSERT_EQUAL(memcmp(cr_pdata(cr), pd, CM_PDATA), 0);
				CU_ASSERT_EQUAL(ofx_cr_accept(cr, es[k][i], 0, NULL), DAT_SUCCESS);
			}
		xm_pump();
		for (int k = 0; k < 2; k++) {
			expect_conn_set(cl[k], &ec[k][b], CM_BURST, DAT_CONNECTION_EVENT_ESTABLISHED);
			expect_conn_set(sv[k], &es[k][b], CM_BURST, DAT_CONNECTION_EVENT_ESTABLISHED);
			expect_empty(sv[k]->cr_evd);
		}
	}
	n = inis_for(0, CM_CONNS, CM_EP_WR);
	if (xm_device != &xm_dev_toy)
		CU_ASSERT_EQUAL(n, 1);
	expect_qp_counts(PROCS(cl[0], cl[1], sv[0], sv[1]), COUNTS(n, n, n, n),
			 COUNTS(2 * n, 2 * n));
	for (int k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL(send_msg(ec[k][CM_CONNS - 1], "last", 1), DAT_SUCCESS);
		CU_ASSERT_EQUAL(send_msg(es[k][0], "first", 2), DAT_SUCCESS);
		expect_recv(sv[k], es[k][CM_CONNS - 1], 200 + k, "last");
		expect_recv(cl[k], ec[k][0], 100 + k, "first");
		xm_pump();
		CU_ASSERT_EQUAL(drain_sends(cl[k]), 1);
		CU_ASSERT_EQUAL(drain_sends(sv[k]), 1);
	}
	/* the client hangs up every EP, then frees them, as dtestcm does */
	for (int i = 0; i < CM_CONNS; i++)
		for (int k = 0; k < 2; k++)
			CU_ASSERT_EQUAL(ofx_ep_disconnect(ec[k][i], DAT_CLOSE_GRACEFUL_FLAG),
					DAT_SUCCESS);
	xm_pump();
	for (int k = 0; k < 2; k++) {
		expect_conn_set(cl[k], ec[k], CM_CONNS, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_conn_set(sv[k], es[k], CM_CONNS, DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_xrc_only(cl[k], CM_CONNS);
		expect_xrc_only(sv[k], CM_CONNS);
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < CM_CONNS; i++) {
			CU_ASSERT_EQUAL(ofx_ep_free(ec[k][i]), DAT_SUCCESS);
			CU_ASSERT_EQUAL(ofx_ep_free(es[k][i]), DAT_SUCCESS);
		}
	xm_pump();
	expect_qp_counts(PROCS(cl[0], cl[1], sv[0], sv[1]), COUNTS(0, 0, 0, 0), COUNTS(0, 0));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	for (int k = 0; k < 2; k++)
		CU_ASSERT_EQUAL(ofx_psp_free(psp[k]), DAT_SUCCESS);
	teardown(2);
}

/* ---- S5: an MPI start-up (mpi-consumer-patterns.md) ------------------------ */

#define MPI_RANKS 4	/* ranks 0, 1 on node 0; 2, 3 on node 1 */
#define MPI_QUAL 1024	/* + rank, as MVAPICH2's 1024 + pid */
#define MPI_RECVS 4
#define MPI_CHUNK 16	/* suppressed writes between two polls */
#define MPI_WRITES 128	/* twice the EP's request queue */
#define MPI_SLOT 32
#define MPI_POLLS 8

struct rank {
	struct xm_proc *p;
	struct ofx_evd *dto;		/* the one DTO EVD of every EP */
	DAT_PSP_HANDLE psp;
	struct ofx_ep *ep[MPI_RANKS];	/* to each rank on the other node */
};

/* Where rank d's peers' fast-path writes land: one slot per writer. */
static char ring[MPI_RANKS][MPI_RANKS][MPI_SLOT];

static int node_of_rank(int r)
{
	return r / 2;
}

/*
 * MVAPICH2's EP: RC, request completions UNSIGNALLED, receives DEFAULT,
 * 128 receives and 64 requests, 4 reads each way; sends and receives on
 * the one DTO EVD.  (It asks 20 IOVs, more than an mlx5 INI QP holds: such
 * an EP's connection is RC, test_xrc.c; 4 here keeps it XRC.)
 */
static struct ofx_ep *mpi_ep(struct rank *r)
{
	DAT_EP_ATTR a;
	DAT_EP_HANDLE h = NULL;

	memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_mtu_size = 1024;
	a.max_message_size = 1u << 20;
	a.max_rdma_size = 1u << 20;
	a.max_recv_dtos = 128;
	a.max_request_dtos = 64;
	a.max_recv_iov = 4;
	a.max_request_iov = 4;
	a.max_rdma_read_in = 4;
	a.max_rdma_read_out = 4;
	a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	CU_ASSERT_EQUAL_FATAL(ofx_ep_create(&r->p->ia, &r->p->pz, r->dto, r->dto, r->p->conn_evd,
					    &a, &h),
			      DAT_SUCCESS);
	return h;
}

/* Busy-polls `evd` with dat_evd_dequeue (the pump stands for the progress thread). */
static bool poll_event(struct ofx_evd *evd, DAT_EVENT *ev)
{
	for (int i = 0; i < MPI_POLLS; i++) {
		if (ofx_evd_dequeue(evd, ev) == DAT_SUCCESS)
			return true;
		xm_pump();
	}
	return false;
}

/* The next connection event of `r` is `num` for `ep` (busy-polled). */
static void mpi_expect_conn(struct rank *r, struct ofx_ep *ep, DAT_EVENT_NUMBER num)
{
	DAT_EVENT ev;

	CU_ASSERT_TRUE_FATAL(poll_event(r->p->conn_evd, &ev));
	CU_ASSERT_EQUAL(ev.event_number, num);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, ep);
}

/* Rank `from`'s request arrives at `to`: its 4 bytes of private data are `from`. */
static DAT_CR_HANDLE mpi_cr(struct rank *to, int self, int from)
{
	uint32_t who;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	CU_ASSERT_TRUE_FATAL(poll_event(to->p->cr_evd, &ev));
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.cr_arrival_event_data.conn_qual, MPI_QUAL + self);
	CU_ASSERT_PTR_EQUAL(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle, to->psp);
	memcpy(&who, cr_pdata(cr), sizeof(who));
	CU_ASSERT_EQUAL(who, (uint32_t)from);
	return cr;
}

static void mpi_connect(struct rank *rk, int from, int to)
{
	uint32_t who = (uint32_t)from;

	connect_at(rk[from].ep[to], rk[to].p, MPI_QUAL + to, &who, sizeof(who));
}

/* Static start-up: the higher rank connects, the lower accepts with no data. */
static void mpi_static(struct rank *rk, int lo, int hi)
{
	DAT_CR_HANDLE cr;

	mpi_connect(rk, hi, lo);
	cr = mpi_cr(&rk[lo], lo, hi);
	CU_ASSERT_EQUAL(ofx_cr_accept(cr, rk[lo].ep[hi], 0, NULL), DAT_SUCCESS);
	mpi_expect_conn(&rk[hi], rk[hi].ep[lo], DAT_CONNECTION_EVENT_ESTABLISHED);
	mpi_expect_conn(&rk[lo], rk[lo].ep[hi], DAT_CONNECTION_EVENT_ESTABLISHED);
}

/*
 * On demand, crossing: both ranks connect at once.  The lower rank
 * rejects the duplicate request; the higher rank's connect is rejected,
 * and it resets that EP (dat_ep_reset) and accepts the lower rank's
 * request on it, its receives posted again (the reset dropped them).
 */
static void mpi_crossing(struct rank *rk, int lo, int hi)
{
	DAT_CR_HANDLE at_lo, at_hi;
	DAT_EP_STATE st;
	DAT_BOOLEAN in_idle, out_idle;

	mpi_connect(rk, lo, hi);
	mpi_connect(rk, hi, lo);
	at_lo = mpi_cr(&rk[lo], lo, hi);
	at_hi = mpi_cr(&rk[hi], hi, lo);
	CU_ASSERT_EQUAL(ofx_cr_reject(at_lo, 0, NULL), DAT_SUCCESS);
	mpi_expect_conn(&rk[hi], rk[hi].ep[lo], DAT_CONNECTION_EVENT_PEER_REJECTED);
	CU_ASSERT_EQUAL(ofx_ep_get_status(rk[hi].ep[lo], &st, &in_idle, &out_idle), DAT_SUCCESS);
	CU_ASSERT_EQUAL(st, DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(rk[hi].ep[lo]), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_get_status(rk[hi].ep[lo], &st, &in_idle, &out_idle), DAT_SUCCESS);
	CU_ASSERT_EQUAL(st, DAT_EP_STATE_UNCONNECTED);
	for (int k = 0; k < MPI_RECVS; k++)
		post_recv(rk[hi].ep[lo], (uint64_t)(hi * 100 + lo * 10 + k));
	CU_ASSERT_EQUAL(ofx_cr_accept(at_hi, rk[hi].ep[lo], 0, NULL), DAT_SUCCESS);
	mpi_expect_conn(&rk[lo], rk[lo].ep[hi], DAT_CONNECTION_EVENT_ESTABLISHED);
	mpi_expect_conn(&rk[hi], rk[hi].ep[lo], DAT_CONNECTION_EVENT_ESTABLISHED);
}

/*
 * Rank s to rank d: MPI_WRITES suppressed RDMA writes into d's slot for s,
 * polling in between as MPI's progress loop does: nothing may surface.
 */
static void mpi_writes(struct rank *rk, int s, int d)
{
	struct ofx_ep *ep = rk[s].ep[d];
	DAT_RMR_TRIPLET t = { .rmr_context = xm_rkey(rk[d].p, ring[d], sizeof(ring[d])),
			      .virtual_address = (uintptr_t)ring[d][s],
			      .segment_length = MPI_SLOT };
	DAT_EVENT ev;

	for (int w = 0; w < MPI_WRITES; w++) {
		char *buf = mem.send[nsend++ % NBUF];
		DAT_LMR_TRIPLET l = { .lmr_context = lkey_of(ep), .virtual_address = (uintptr_t)buf,
				      .segment_length = MPI_SLOT };
		DAT_DTO_COOKIE c = { .as_64 = (uint64_t)w };

		snprintf(buf, MPI_SLOT, "w %d->%d #%d", s, d, w);
		CU_ASSERT_EQUAL_FATAL(ofx_ep_post_rdma_write(ep, 1, &l, c, &t,
							     DAT_COMPLETION_SUPPRESS_FLAG),
				      DAT_SUCCESS);
		if (w % MPI_CHUNK == MPI_CHUNK - 1) {
			xm_pump();
			CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(rk[s].dto, &ev)),
					DAT_QUEUE_EMPTY);
		}
	}
}

/* Then an eager send from s to d, DEFAULT flags. */
static void mpi_eager(struct rank *rk, int s, int d)
{
	char text[MSG_LEN];

	snprintf(text, sizeof(text), "eager %d->%d", s, d);
	CU_ASSERT_EQUAL(send_msg(rk[s].ep[d], text, (uint64_t)(s * 100 + d * 10 + 9)),
			DAT_SUCCESS);
}

/*
 * What r's DTO EVD holds after mpi_writes and mpi_eager both ways with each peer: for
 * each, the send's completion and the receive of the peer's send, every
 * one a DAT_DTO_COMPLETION_EVENT (MPI asserts it), nothing of the writes.
 */
static void mpi_expect_dtos(struct rank *rk, int r)
{
	int sends = 0, recvs = 0;
	DAT_EVENT ev;

	while (poll_event(rk[r].dto, &ev)) {
		DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		int peer = -1;
		char text[MSG_LEN];

		CU_ASSERT_EQUAL_FATAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
		CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
		for (int q = 0; q < MPI_RANKS; q++)
			if (rk[r].ep[q] && d->ep_handle == rk[r].ep[q])
				peer = q;
		CU_ASSERT_FATAL(peer >= 0);
		if (d->operation == DAT_DTO_SEND) {
			CU_ASSERT_EQUAL(d->user_cookie.as_64, (uint64_t)(r * 100 + peer * 10 + 9));
			sends++;
			continue;
		}
		CU_ASSERT_EQUAL(d->operation, DAT_DTO_RECEIVE);
		CU_ASSERT_EQUAL(d->user_cookie.as_64, (uint64_t)(r * 100 + peer * 10));
		snprintf(text, sizeof(text), "eager %d->%d", peer, r);
		CU_ASSERT_EQUAL(d->transfered_length, strlen(text) + 1);
		CU_ASSERT_STRING_EQUAL(buf_of(rk[r].ep[peer], d->user_cookie.as_64), text);
		snprintf(text, sizeof(text), "w %d->%d #%d", peer, r, MPI_WRITES - 1);
		CU_ASSERT_STRING_EQUAL(ring[r][peer], text);
		recvs++;
	}
	CU_ASSERT_EQUAL(sends, 2);
	CU_ASSERT_EQUAL(recvs, 2);
}

/*
 * An MPI job's start-up over XRC: 4 ranks on 2 nodes, one IA each, a PSP
 * at 1024 + rank, one DTO EVD for every EP's sends and receives, EPs with
 * request completions UNSIGNALLED, every event busy-polled with
 * dat_evd_dequeue.  Static connections (the higher rank connects with 4
 * bytes, its rank; the lower checks them, the qualifier and the PSP, and
 * accepts), one on-demand pair crossing (reject, reset, accept on the same
 * EP).  Then the RDMA fast path (suppressed writes, more than the queue)
 * and an eager send each way: the bytes land, the DTO EVD shows exactly
 * the signalled completions.  One INI QP per rank (N-1), one TGT per INI
 * QP on the other node, no RC QP once established.
 */
static void test_mpi_startup_four_ranks_two_nodes(void)
{
	struct rank rk[MPI_RANKS];
	DAT_EP_PARAM param;

	setup(2);
	xm_use_cm = true;
	memset(rk, 0, sizeof(rk));
	memset(ring, 0, sizeof(ring));
	for (int r = 0; r < MPI_RANKS; r++) {
		/* its DTO EVD: min(6000, the device's most) */
		rk[r].p = xm_proc_open(node_of_rank(r), domfile[node_of_rank(r)],
				       OFX_XRC_TGT_DOMAIN);
		int qlen = rk[r].p->ia.dev_attr.max_cqe < 6000 ? rk[r].p->ia.dev_attr.max_cqe : 6000;

		CU_ASSERT_EQUAL_FATAL(ofx_evd_create_internal(&rk[r].p->ia, qlen, DAT_EVD_DTO_FLAG,
							      &rk[r].dto),
				      0);
		rk[r].psp = psp_at(rk[r].p, MPI_QUAL + r);
	}
	/* every rank's EPs to the other node, receives pre-posted */
	for (int r = 0; r < MPI_RANKS; r++)
		for (int q = 0; q < MPI_RANKS; q++) {
			if (node_of_rank(q) == node_of_rank(r))
				continue;
			rk[r].ep[q] = mpi_ep(&rk[r]);
			for (int k = 0; k < MPI_RECVS; k++)
				post_recv(rk[r].ep[q], (uint64_t)(r * 100 + q * 10 + k));
		}
	CU_ASSERT_EQUAL(ofx_ep_query(rk[0].ep[2], DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.ep_attr.request_completion_flags, DAT_COMPLETION_UNSIGNALLED_FLAG);
	mpi_static(rk, 0, 2);
	mpi_static(rk, 0, 3);
	mpi_static(rk, 1, 3);
	mpi_crossing(rk, 1, 2);
	for (int r = 0; r < MPI_RANKS; r++)
		expect_empty(rk[r].p->conn_evd);
	expect_qp_counts(PROCS(rk[0].p, rk[1].p, rk[2].p, rk[3].p), COUNTS(1, 1, 1, 1),
			 COUNTS(2, 2));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 8);

	for (int r = 0; r < MPI_RANKS; r++)
		for (int q = 0; q < MPI_RANKS; q++)
			if (rk[r].ep[q])
				mpi_writes(rk, r, q);
	for (int r = 0; r < MPI_RANKS; r++)
		for (int q = 0; q < MPI_RANKS; q++)
			if (rk[r].ep[q])
				mpi_eager(rk, r, q);
	for (int r = 0; r < MPI_RANKS; r++)
		mpi_expect_dtos(rk, r);
	for (int r = 0; r < MPI_RANKS; r++)
		expect_xrc_only(rk[r].p, 2);

	/* MPI_Finalize: disconnect, free the EPs, the PSP and the EVD */
	for (int lo = 0; lo < 2; lo++)
		for (int hi = 2; hi < MPI_RANKS; hi++) {
			CU_ASSERT_EQUAL(ofx_ep_disconnect(rk[lo].ep[hi], DAT_CLOSE_GRACEFUL_FLAG),
					DAT_SUCCESS);

			mpi_expect_conn(&rk[hi], rk[hi].ep[lo], DAT_CONNECTION_EVENT_DISCONNECTED);
			mpi_expect_conn(&rk[lo], rk[lo].ep[hi], DAT_CONNECTION_EVENT_DISCONNECTED);
		}
	for (int r = 0; r < MPI_RANKS; r++) {
		for (int q = 0; q < MPI_RANKS; q++)
			if (rk[r].ep[q])
				CU_ASSERT_EQUAL(ofx_ep_free(rk[r].ep[q]), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ofx_psp_free(rk[r].psp), DAT_SUCCESS);
	}
	xm_pump();
	for (int r = 0; r < MPI_RANKS; r++)
		CU_ASSERT_EQUAL(ofx_evd_free(rk[r].dto), DAT_SUCCESS);
	expect_qp_counts(PROCS(rk[0].p, rk[1].p, rk[2].p, rk[3].p), COUNTS(0, 0, 0, 0),
			 COUNTS(0, 0));
	teardown(2);
}

/* ---- S4: dtestx (the IB extensions) ------------------------------------------ */

/* Each server's memory: a word per client to swap, a shared counter, write targets. */
static struct {
	uint64_t word[2];
	uint64_t counter;
	char dst[2][16];
} xt[2];
static uint64_t xres[2][2][3];	/* client c's results from server s: cas, faa, faa */

/* Server s tells client c where its memory is, as dtestx's RMR exchange. */
static void x_rmr_info(struct xm_proc *sv, struct ofx_ep *es, struct xm_proc *cl,
		       struct ofx_ep *ec, int s, uint64_t cookie, DAT_RMR_TRIPLET *r_p)
{
	char text[MSG_LEN];
	unsigned long long va = 0;
	unsigned int rkey = 0;

	snprintf(text, sizeof(text), "rkey %x va %llx", xm_rkey(sv, &xt[s], sizeof(xt[s])),
		 (unsigned long long)(uintptr_t)&xt[s]);
	CU_ASSERT_EQUAL(send_msg(es, text, 1), DAT_SUCCESS);
	expect_recv(cl, ec, cookie, text);
	CU_ASSERT_EQUAL_FATAL(sscanf(buf_of(ec, cookie), "rkey %x va %llx", &rkey, &va), 2);
	r_p->rmr_context = rkey;
	r_p->virtual_address = va;
	r_p->segment_length = 8;
}

/*
 * dtestx: two clients on node 0, two servers on node 1, every client
 * connected to every server (DAT connect, the XRC domain shared per node).
 * Over each connection the server sends its RMR, and the client writes
 * with immediate data into it (the server's receive completes as
 * RDMA_WRITE_IMMED_DATA with the immediate, its buffer untouched), swaps
 * its word with a compare-and-swap that matches and one that does not,
 * and adds to the server's counter, which both clients share.  Bytes,
 * immediates and the old values all checked; one INI QP per process, two
 * TGTs per node, no RC QP.
 */
static void test_dtestx_write_immed_and_atomics(void)
{
	struct xm_proc *cl[2], *sv[2];
	struct ofx_ep *ec[2][2], *es[2][2];
	DAT_PSP_HANDLE psp[2];
	DAT_RMR_TRIPLET r[2][2];
	DAT_EVENT ev;

	setup(2);
	xm_use_cm = true;
	memset(xt, 0, sizeof(xt));
	memset(xres, 0, sizeof(xres));
	for (int k = 0; k < 2; k++) {
		cl[k] = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
		sv[k] = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
		psp[k] = psp_at(sv[k], QUAL + k);
		xt[k].word[0] = 10;
		xt[k].word[1] = 20;
		xt[k].counter = 1000;
	}
	for (int c = 0; c < 2; c++)
		for (int s = 0; s < 2; s++) {
			static const char hello[] = "dtestx";
			DAT_CR_HANDLE cr;

			ec[c][s] = ep_with_iov(cl[c], 1);
			es[s][c] = ep_with_iov(sv[s], 1);
			post_recv(ec[c][s], (uint64_t)(100 + c * 10 + s));
			connect_at(ec[c][s], sv[s], QUAL + s, hello, sizeof(hello));
			xm_pump();
			cr = expect_cr(sv[s], psp[s], QUAL + s, hello, sizeof(hello));
			CU_ASSERT_EQUAL(ofx_cr_accept(cr, es[s][c], 0, NULL), DAT_SUCCESS);
			xm_pump();
			expect_established(cl[c], ec[c][s], NULL, 0);
			expect_established(sv[s], es[s][c], NULL, 0);
			x_rmr_info(sv[s], es[s][c], cl[c], ec[c][s], s, (uint64_t)(100 + c * 10 + s),
				   &r[c][s]);
		}
	expect_qp_counts(PROCS(cl[0], cl[1], sv[0], sv[1]), COUNTS(1, 1, 1, 1), COUNTS(2, 2));

	for (int c = 0; c < 2; c++)
		for (int s = 0; s < 2; s++) {
			DAT_RMR_TRIPLET t = r[c][s];
			DAT_LMR_TRIPLET l = { .lmr_context = xm_lkey(cl[c], xres[c], sizeof(xres[c])),
					      .segment_length = 8 };
			DAT_LMR_TRIPLET w = { .lmr_context = lkey_of(ec[c][s]), .segment_length = 16,
					      .virtual_address = (uintptr_t)mem.send[nsend % NBUF] };
			uint64_t base = (uintptr_t)&xt[s];
			DAT_DTO_COOKIE ck = { .as_64 = 1 };
			uint32_t imm = 0x7000u + (uint32_t)(c * 16 + s);

			snprintf(mem.send[nsend++ % NBUF], 16, "imm %d->%d", c, s);
			t.virtual_address = base + offsetof(__typeof__(xt[0]), dst[c]);
			t.segment_length = 16;
			post_recv(es[s][c], 300);
			CU_ASSERT_EQUAL(dat_ib_post_rdma_write_immed(ec[c][s], 1, &w, ck, &t, imm,
								     DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
			xm_pump();
			expect_ext_dto(cl[c]->req_evd, ec[c][s], 1, DAT_IB_RDMA_WRITE_IMMED, &ev);
			expect_ext_dto(sv[s]->recv_evd, es[s][c], 300, DAT_IB_RDMA_WRITE_IMMED_DATA,
				       &ev);
			CU_ASSERT_EQUAL(ext_of(&ev)->val.immed.data, imm);
			CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 16);
			CU_ASSERT_STRING_EQUAL(buf_of(es[s][c], 300), "");
			{
				char want[16];

				snprintf(want, sizeof(want), "imm %d->%d", c, s);
				CU_ASSERT_STRING_EQUAL(xt[s].dst[c], want);
			}

			/* a swap that matches, one that does not, then an add to the shared counter */
			t.segment_length = 8;
			t.virtual_address = base + offsetof(__typeof__(xt[0]), word[c]);
			l.virtual_address = (uintptr_t)&xres[c][s][0];
			ck.as_64 = 2;
			CU_ASSERT_EQUAL(dat_ib_post_cmp_and_swap(ec[c][s], xt[s].word[c], 77 + c, &l, ck,
								 &t, DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
			l.virtual_address = (uintptr_t)&xres[c][s][1];
			ck.as_64 = 3;
			CU_ASSERT_EQUAL(dat_ib_post_cmp_and_swap(ec[c][s], 5, 99, &l, ck, &t,
								 DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
			t.virtual_address = base + offsetof(__typeof__(xt[0]), counter);
			l.virtual_address = (uintptr_t)&xres[c][s][2];
			ck.as_64 = 4;
			CU_ASSERT_EQUAL(dat_ib_post_fetch_and_add(ec[c][s], (uint64_t)(1 + c), &l, ck,
								  &t, DAT_COMPLETION_DEFAULT_FLAG),
					DAT_SUCCESS);
			xm_pump();
			expect_ext_dto(cl[c]->req_evd, ec[c][s], 2, DAT_IB_CMP_AND_SWAP, &ev);
			CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 8);
			expect_ext_dto(cl[c]->req_evd, ec[c][s], 3, DAT_IB_CMP_AND_SWAP, &ev);
			expect_ext_dto(cl[c]->req_evd, ec[c][s], 4, DAT_IB_FETCH_AND_ADD, &ev);
			CU_ASSERT_EQUAL(xres[c][s][0], c ? 20u : 10u);
			CU_ASSERT_EQUAL(xres[c][s][1], 77u + (uint64_t)c);	/* no match: unchanged */
			CU_ASSERT_EQUAL(xt[s].word[c], 77u + (uint64_t)c);
			/* client 0 added 1 first, client 1 adds 2 */
			CU_ASSERT_EQUAL(xres[c][s][2], c ? 1001u : 1000u);
			expect_empty(sv[s]->recv_evd);
		}
	for (int s = 0; s < 2; s++)
		CU_ASSERT_EQUAL(xt[s].counter, 1003u);
	expect_qp_counts(PROCS(cl[0], cl[1], sv[0], sv[1]), COUNTS(1, 1, 1, 1), COUNTS(2, 2));
	for (int c = 0; c < 2; c++)
		for (int s = 0; s < 2; s++) {
			CU_ASSERT_EQUAL(ofx_ep_disconnect(ec[c][s], DAT_CLOSE_GRACEFUL_FLAG),
					DAT_SUCCESS);
			xm_pump();
			expect_conn(sv[s], es[s][c], DAT_CONNECTION_EVENT_DISCONNECTED);
			expect_conn(cl[c], ec[c][s], DAT_CONNECTION_EVENT_DISCONNECTED);
		}
	for (int k = 0; k < 2; k++) {
		expect_xrc_only(cl[k], 2);
		CU_ASSERT_EQUAL(ofx_psp_free(psp[k]), DAT_SUCCESS);
	}
	teardown(2);
}

/* ---- M9: the device's own async events ------------------------------------- */

/*
 * A TGT that NAKs a request (A's write with a bad rkey) enters the error
 * state, and mlx5 reports LAST_WQE_REACHED on it, which the kernel passes
 * to every process holding it: B1 (its creator) and B2 (2a: it opened it).
 * For XRC that is the INI side's business (its WR failed, its EPs broke,
 * the peers were told): B1 and B2 report nothing of it, and their other
 * connection, B1 to C over C's own INI QP and TGT, goes on.
 */
/* The links of the LAST_WQE scenario: A-B1, A-B2, C-B1 (processes A, C, B1, B2). */
static const int lw_link[3][2] = { { 0, 2 }, { 0, 3 }, { 1, 2 } };

static void test_tgt_error_last_wqe_reaches_every_handle_and_breaks_nothing(void)
{
	static char dst[16];
	struct xm_proc *p[4];
	struct ofx_ep *e[3], *f[3];
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET t = { .segment_length = 8, .virtual_address = (uintptr_t)dst };
	DAT_DTO_COOKIE ck = { .as_64 = 5 };

	setup(2);
	for (int i = 0; i < 4; i++)
		p[i] = xm_proc_open(i / 2, domfile[i / 2], OFX_XRC_TGT_DOMAIN);
	for (int k = 0; k < 3; k++) {
		e[k] = xm_ep_new(p[lw_link[k][0]]);
		f[k] = xm_ep_new(p[lw_link[k][1]]);
	}
	for (int k = 0; k < 3; k++)
		pair(p[lw_link[k][0]], e[k], p[lw_link[k][1]], f[k], k == 2 ? 2 : 1);
	/* A's INI QP reaches B1's TGT, which B2 opened; C's has its own */
	expect_qp_counts(p, COUNTS(1, 1, 1, 1), COUNTS(2, 2));
	CU_ASSERT_EQUAL(stats(p[3]).tgt_opened, 1);

	l = (DAT_LMR_TRIPLET){ .lmr_context = lkey_of(e[0]), .segment_length = 8,
			       .virtual_address = (uintptr_t)mem.send[0] };
	t.rmr_context = xm_rkey(p[2], dst, sizeof(dst)) + 0x100;
	CU_ASSERT_EQUAL(ofx_ep_post_rdma_write(e[0], 1, &l, ck, &t, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	CU_ASSERT_EQUAL(xm_async_events(IBV_EVENT_QP_LAST_WQE_REACHED), 2);
	expect_dto(p[0]->req_evd, e[0], 5, DAT_DTO_ERR_REMOTE_ACCESS);
	expect_conn(p[0], e[0], DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(p[0], e[1], DAT_CONNECTION_EVENT_BROKEN);
	expect_conn(p[2], f[0], DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_conn(p[3], f[1], DAT_CONNECTION_EVENT_DISCONNECTED);
	/* nothing else: no EP_BROKEN on B's async EVDs, C's link untouched */
	for (int i = 1; i < 4; i++) {
		expect_empty(p[i]->ia.async_evd);
		expect_empty(p[i]->conn_evd);
	}
	CU_ASSERT_EQUAL(f[2]->state, OFX_EP_CONNECTED);
	ping_pong(p[1], e[2], 1000, p[2], f[2], 2000);
	/*
	 * The dead TGT goes with A's INI QP, B1's and B2's handles too; B2's
	 * INI QP went with f2, its only EP, and its TGT on node 0 with it.
	 */
	expect_qp_counts(p, COUNTS(0, 1, 1, 0), COUNTS(1, 1));
	CU_ASSERT_EQUAL(stats(p[2]).tgt_handles + stats(p[3]).tgt_handles, 1);
	teardown(2);
}

#define LIMIT 2

/*
 * SRQ_LIMIT_REACHED on an XRC EP's SRQ.  The provider never arms one (only
 * a DAT SRQ's low watermark does, srq.c); armed from outside, mlx5 reports
 * it once when the receives fall below the limit.  The SRQ's context is
 * the EP, not a DAT SRQ: the provider must not take it for one (no
 * SRQ_LOW_WATERMARK event, no EP_BROKEN), and the EP keeps receiving.  The
 * model refuses what mlx5 refuses: resizing, a limit at the SRQ's size.
 */
static void test_srq_limit_on_an_xrc_ep_srq_is_no_dat_srq_event(void)
{
	struct ibv_srq_attr attr = { .srq_limit = LIMIT };
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;
	struct ibv_srq *srq;
	char text[MSG_LEN];

	setup(2);
	open_pair(&a, &ea, &b, &eb);
	pair(a, ea, b, eb, 4);
	srq = xm_ep_srq(eb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(srq);
	CU_ASSERT_EQUAL(xm_srq_posted(srq), 4);
	attr.max_wr = 64;
	CU_ASSERT_EQUAL(ofx_verbs->modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EINVAL);
	attr.srq_limit = (uint32_t)eb->attr.max_recv_dtos + 1;
	CU_ASSERT_EQUAL(ofx_verbs->modify_srq(srq, &attr, IBV_SRQ_LIMIT), EINVAL);
	attr.srq_limit = LIMIT;
	CU_ASSERT_EQUAL(ofx_verbs->modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(text, sizeof(text), "to b #%d", i);
		CU_ASSERT_EQUAL(send_msg(ea, text, (uint64_t)i), DAT_SUCCESS);
		xm_pump();
		/* 4 - i - 1 receives left: below 2 once the third is taken */
		CU_ASSERT_EQUAL(xm_async_events(IBV_EVENT_SRQ_LIMIT_REACHED), i >= 2 ? 1 : 0);
		expect_recv(b, eb, 2000 + (uint64_t)i, text);
	}
	expect_empty(b->ia.async_evd);
	expect_empty(b->conn_evd);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_CONNECTED);
	post_recv(eb, 2100);
	CU_ASSERT_EQUAL(send_msg(ea, "after", 9), DAT_SUCCESS);
	expect_recv(b, eb, 2100, "after");
	teardown(2);
}

/* ---- M2: mlx4's send queue sizing ----------------------------------------- */

static int mlx4_ini(struct xm_proc *a, uint32_t wr, uint32_t sge, uint32_t inl,
		    struct ibv_qp_cap *cap_p)
{
	struct ibv_qp_init_attr_ex ini = { .qp_type = IBV_QPT_XRC_SEND,
					   .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = a->pz.pd,
					   .send_cq = ofx_evd_cq(a->req_evd),
					   .cap = { .max_send_wr = wr, .max_send_sge = sge,
						    .max_inline_data = inl } };
	struct ibv_qp *qp = ofx_verbs->create_qp_ex(a->ia.verbs, &ini);

	if (!qp)
		return errno;
	*cap_p = ini.cap;
	CU_ASSERT_EQUAL(ofx_verbs->destroy_qp(qp), 0);
	return 0;
}

/*
 * libmlx4 lays an XRC_SEND WQE out as an RC one and rounds its stride to a
 * power of two; the queue keeps 2 KB + 1 WQE of spares and is a power of
 * two; the kernel takes at most max_wqes (16384) entries and a 1024-byte
 * stride.  What the device grants is what the stride and queue hold.  An
 * EP with 20 request SGEs, too many for an mlx5 INI QP, runs over XRC here.
 */
static void test_model_mlx4_sizes_xrc_send_queues(void)
{
	struct ibv_qp_cap cap;
	struct xm_proc *a, *b;
	struct ofx_ep *ea, *eb;

	setup(2);
	xm_device = &xm_dev_mlx4;
	a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	/* 4 SGEs: 16 + 16 + 64 bytes, a 128-byte stride, 17 spares, 16384 entries */
	CU_ASSERT_EQUAL(mlx4_ini(a, 16350, 4, 0, &cap), 0);
	CU_ASSERT_EQUAL(cap.max_send_wr, 16384 - 17);
	CU_ASSERT_EQUAL(cap.max_send_sge, 6);
	CU_ASSERT_EQUAL(cap.max_inline_data, 96 - 2 * 4);
	/* libmlx4's own limits */
	CU_ASSERT_EQUAL(mlx4_ini(a, 16352, 4, 0, &cap), EINVAL);
	CU_ASSERT_EQUAL(mlx4_ini(a, 64, 33, 0, &cap), EINVAL);
	CU_ASSERT_EQUAL(mlx4_ini(a, 64, 1, 1025, &cap), EINVAL);
	/* 32 SGEs fit a 1024-byte stride; 1024 bytes inline need 2048: the kernel refuses */
	CU_ASSERT_EQUAL(mlx4_ini(a, 16351, 32, 0, &cap), 0);
	CU_ASSERT_EQUAL(cap.max_send_sge, 62);
	CU_ASSERT_EQUAL(cap.max_send_wr, 16384 - 3);
	CU_ASSERT_EQUAL(mlx4_ini(a, 64, 1, 1024, &cap), EINVAL);
	CU_ASSERT_EQUAL(mlx4_ini(a, 64, 1, 900, &cap), 0);
	CU_ASSERT_EQUAL(cap.max_send_wr, 128 - 3);
	CU_ASSERT_EQUAL(cap.max_inline_data, 992 - 16 * 4);

	b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	ea = ep_with_iov(a, 20);
	eb = xm_ep_new(b);
	pair(a, ea, b, eb, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(xm_ini_qp(0, 0, &cap));
	CU_ASSERT_TRUE(cap.max_send_sge >= 20);
	CU_ASSERT_EQUAL(send_msg(ea, "twenty", 1), DAT_SUCCESS);
	expect_recv(b, eb, 2000, "twenty");
	expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
	teardown(2);
}

CU_TestInfo ofx_test_xrc_scen[] = {
	{ "dtestcm: 100 connections in bursts of 10 with 48 bytes, then all disconnected",
	  test_dtestcm_100_connections_in_bursts },
	{ "mpi start-up: 4 ranks on 2 nodes, one dto evd, unsignalled, crossing connect",
	  test_mpi_startup_four_ranks_two_nodes },
	{ "dtestx: write with immediate, compare-and-swap and fetch-and-add, 2x2 processes",
	  test_dtestx_write_immed_and_atomics },
	{ "tgt in error: last_wqe_reached reaches every handle and breaks nothing more",
	  test_tgt_error_last_wqe_reaches_every_handle_and_breaks_nothing },
	{ "srq limit on an xrc ep's srq is no dat srq event",
	  test_srq_limit_on_an_xrc_ep_srq_is_no_dat_srq_event },
	{ "model sizes xrc send queues as mlx4 does; 20 sges run over xrc there",
	  test_model_mlx4_sizes_xrc_send_queues },
	CU_TEST_INFO_NULL,
};
