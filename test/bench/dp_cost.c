/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dp_cost: instructions per data-path operation inside the provider, with no
 * device.  The real provider code (libofxcore, built as for libdaplofx)
 * runs against the verbs fake: an RC EP forced CONNECTED, one DTO EVD, and
 * work completions pushed into the fake CQ by hand (wr_id = the cookie the
 * post handed the device).
 *
 * Each phase runs one operation OPS times with callgrind collecting only
 * around the provider call (CALLGRIND_TOGGLE_COLLECT; run under
 * --collect-atstart=no), then dumps the profile as "Client Request: PHASE:OPS".
 * The set-up of each iteration (pushing the completion, retiring the ring)
 * is outside the collected window.  test/bench/dp-cost runs it and sums the
 * self cost of the functions whose source is dapl-provider/, so the fake's
 * poll_cq, post_send and libc stay out.  Outside valgrind the requests are
 * no-ops and the program only checks that every operation did what it
 * should (exit status 1 otherwise): a bench of failing calls measures
 * nothing.
 */
#include "fake_verbs.h"

#include <CUnit/CUnit.h>

#include "ep.h"
#include "ep_conn.h"
#include "evd.h"
#include "ia.h"
#include "lmr.h"
#include "pz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#define CALLGRIND_TOGGLE_COLLECT
#endif

static struct ofx_ia ia;
static char buf[4096];
static uint64_t last_recv_wr_id;
static int (*fake_post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **);
static int failures;

struct bench {
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_EVD_HANDLE dto_evd, conn_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_TRIPLET iov;
	DAT_RMR_TRIPLET rmr;
};

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "dp_cost: %s:%d: %s\n", __FILE__, __LINE__, \
				#cond);                                          \
			failures++;                                              \
			return;                                                  \
		}                                                                \
	} while (0)

/* The fake records sends' wr_ids (fake_cm.sends); receives' are kept here. */
static int bench_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	last_recv_wr_id = wr->wr_id;
	return fake_post_recv(qp, wr, bad);
}

static uint64_t last_send_wr_id(void)
{
	return fake_cm.sends[(fake_cm.nsends - 1) % FAKE_SENDS].wr_id;
}

static void complete(const struct bench *b, uint64_t wr_id, enum ibv_wc_opcode opcode,
		     uint32_t byte_len)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = IBV_WC_SUCCESS, .opcode = opcode,
			     .byte_len = byte_len, .qp_num = 0x100 };

	fake_cq_push(ofx_evd_from_handle(b->dto_evd), &wc);
}

static void bench_init(struct bench *b)
{
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_EP_ATTR attr = fake_rc_ep_attr;
	struct ofx_ep *ep;

	attr.max_recv_dtos = attr.max_request_dtos = 16;

	fake_verbs_install();
	fake_post_recv = fake_verbs.ops.post_recv;
	fake_verbs.ops.post_recv = bench_post_recv;
	fake_cm_ia_init(&ia, OFX_TRANSPORT_IB);
	CHECK(ofx_pz_create(&ia, &b->pz) == DAT_SUCCESS);
	CHECK(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), b->pz,
			     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &b->lmr, &b->lkey, NULL, NULL,
			     NULL) == DAT_SUCCESS);
	CHECK(ofx_evd_create(&ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b->dto_evd) ==
	      DAT_SUCCESS);
	CHECK(ofx_evd_create(&ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &b->conn_evd) ==
	      DAT_SUCCESS);
	CHECK(ofx_ep_create(&ia, b->pz, b->dto_evd, b->dto_evd, b->conn_evd, &attr, &b->ep) ==
	      DAT_SUCCESS);
	ep = ofx_ep_from_handle(b->ep);
	pthread_mutex_lock(&ep->lock);
	ofx_ep_conn_init(ep, OFX_EP_CONNECTED);
	CHECK(ofx_ep_recv_go_live(ep, false) == 0);
	pthread_mutex_unlock(&ep->lock);
	b->iov = (DAT_LMR_TRIPLET){ .lmr_context = b->lkey, .virtual_address = (uintptr_t)buf,
				    .segment_length = 1024 };	/* above max_inline: not inline */
	b->rmr = (DAT_RMR_TRIPLET){ .rmr_context = 0x1234, .virtual_address = 0x10000,
				    .segment_length = 1024 };
}

static void bench_fini(struct bench *b)
{
	ofx_ep_free(b->ep);
	ofx_evd_free(b->conn_evd);
	ofx_evd_free(b->dto_evd);
	ofx_lmr_free(b->lmr);
	ofx_pz_free(b->pz);
	ofx_verbs_set(NULL);
}

/* A dequeue outside the measured window, checking the event it returns. */
static void drain_one(const struct bench *b, DAT_DTOS op, uint64_t user, DAT_VLEN len)
{
	DAT_EVENT ev;
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	CHECK(ofx_evd_dequeue(b->dto_evd, &ev) == DAT_SUCCESS);
	CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT && d->ep_handle == b->ep &&
	      d->operation == op && d->user_cookie.as_64 == user &&
	      d->transfered_length == len && d->status == DAT_DTO_SUCCESS);
}

static DAT_DTO_COOKIE cookie_of(uint64_t v)
{
	return (DAT_DTO_COOKIE){ .as_64 = v };
}

static void phase_post_rdma(const struct bench *b, int ops, bool read)
{
	DAT_RETURN st;

	for (int i = 0; i < ops; i++) {
		CALLGRIND_TOGGLE_COLLECT;
		if (read)
			st = ofx_ep_post_rdma_read(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov,
						   cookie_of(i), &b->rmr,
						   DAT_COMPLETION_DEFAULT_FLAG);
		else
			st = ofx_ep_post_rdma_write(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov,
						    cookie_of(i), &b->rmr,
						    DAT_COMPLETION_DEFAULT_FLAG);
		CALLGRIND_TOGGLE_COLLECT;
		CHECK(st == DAT_SUCCESS);
		complete(b, last_send_wr_id(), read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
			 1024);
		drain_one(b, read ? DAT_DTO_RDMA_READ : DAT_DTO_RDMA_WRITE, i, 1024);
	}
}

/* A send, or a receive (the fake records no receive: bench_post_recv does). */
static void phase_post_msg(const struct bench *b, int ops, bool recv)
{
	DAT_RETURN st;

	for (int i = 0; i < ops; i++) {
		CALLGRIND_TOGGLE_COLLECT;
		if (recv)
			st = ofx_ep_post_recv(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov, cookie_of(i),
					      DAT_COMPLETION_DEFAULT_FLAG);
		else
			st = ofx_ep_post_send(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov, cookie_of(i),
					      DAT_COMPLETION_DEFAULT_FLAG);
		CALLGRIND_TOGGLE_COLLECT;
		CHECK(st == DAT_SUCCESS);
		complete(b, recv ? last_recv_wr_id : last_send_wr_id(),
			 recv ? IBV_WC_RECV : IBV_WC_SEND, recv ? 100 : 1024);
		drain_one(b, recv ? DAT_DTO_RECEIVE : DAT_DTO_SEND, i, recv ? 100 : 1024);
	}
}

/* The dequeue that returns a completion: the CQ holds one, the EVD ring none. */
static void phase_dequeue(const struct bench *b, int ops)
{
	DAT_EVENT ev;
	DAT_RETURN st;

	for (int i = 0; i < ops; i++) {
		CHECK(ofx_ep_post_rdma_write(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov, cookie_of(i),
					     &b->rmr, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
		complete(b, last_send_wr_id(), IBV_WC_RDMA_WRITE, 1024);
		CALLGRIND_TOGGLE_COLLECT;
		st = ofx_evd_dequeue(b->dto_evd, &ev);
		CALLGRIND_TOGGLE_COLLECT;
		CHECK(st == DAT_SUCCESS && ev.event_number == DAT_DTO_COMPLETION_EVENT &&
		      ev.event_data.dto_completion_event_data.user_cookie.as_64 == (uint64_t)i &&
		      ev.event_data.dto_completion_event_data.transfered_length == 1024 &&
		      ev.evd_handle == b->dto_evd);
	}
}

/* The dequeue of an event already in the EVD's ring (a drain queued it). */
static void phase_dequeue_queued(const struct bench *b, int ops)
{
	DAT_EVENT ev;
	DAT_RETURN st;

	for (int i = 0; i < ops; i++) {
		for (int k = 0; k < 2; k++) {
			CHECK(ofx_ep_post_rdma_write(b->ep, 1, (DAT_LMR_TRIPLET *)&b->iov,
						     cookie_of(2 * i + k), &b->rmr,
						     DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
			complete(b, last_send_wr_id(), IBV_WC_RDMA_WRITE, 1024);
		}
		drain_one(b, DAT_DTO_RDMA_WRITE, 2 * i, 1024);	/* queues the second */
		CALLGRIND_TOGGLE_COLLECT;
		st = ofx_evd_dequeue(b->dto_evd, &ev);
		CALLGRIND_TOGGLE_COLLECT;
		CHECK(st == DAT_SUCCESS &&
		      ev.event_data.dto_completion_event_data.user_cookie.as_64 ==
			      (uint64_t)(2 * i + 1));
	}
}

static void phase_dequeue_empty(const struct bench *b, int ops)
{
	DAT_EVENT ev;
	DAT_RETURN st;

	for (int i = 0; i < ops; i++) {
		CALLGRIND_TOGGLE_COLLECT;
		st = ofx_evd_dequeue(b->dto_evd, &ev);
		CALLGRIND_TOGGLE_COLLECT;
		CHECK(st == DAT_QUEUE_EMPTY);
	}
}

/* Each phase's profile is named PHASE:OPS (test/bench/dp-cost divides by OPS). */
static void run_phase(const struct bench *b, const char *name, int ops,
		      void (*fn)(const struct bench *, int))
{
	char tag[64];

	snprintf(tag, sizeof(tag), "%s:%d", name, ops);
	CALLGRIND_ZERO_STATS;
	fn(b, ops);
	CALLGRIND_DUMP_STATS_AT(tag);
}

static void phase_rdma_write(const struct bench *b, int ops)
{
	phase_post_rdma(b, ops, false);
}

static void phase_rdma_read(const struct bench *b, int ops)
{
	phase_post_rdma(b, ops, true);
}

static void phase_post_send(const struct bench *b, int ops)
{
	phase_post_msg(b, ops, false);
}

static void phase_post_recv(const struct bench *b, int ops)
{
	phase_post_msg(b, ops, true);
}

static int bench_ops;

/* The fake asserts with CUnit: the bench runs as its one test. */
static void bench_run(void)
{
	struct bench b;

	memset(&b, 0, sizeof(b));
	bench_init(&b);
	if (!failures) {
		/* warm: first calls resolve symbols and touch the rings */
		phase_rdma_write(&b, 4);
		phase_dequeue_empty(&b, 4);
		run_phase(&b, "post_rdma_write", bench_ops, phase_rdma_write);
		run_phase(&b, "post_rdma_read", bench_ops, phase_rdma_read);
		run_phase(&b, "post_send", bench_ops, phase_post_send);
		run_phase(&b, "post_recv", bench_ops, phase_post_recv);
		run_phase(&b, "dequeue_completion", bench_ops, phase_dequeue);
		run_phase(&b, "dequeue_queued", bench_ops, phase_dequeue_queued);
		run_phase(&b, "dequeue_empty", bench_ops, phase_dequeue_empty);
	}
	bench_fini(&b);
}

int main(int argc, char **argv)
{
	CU_pSuite suite;
	int bad;

	bench_ops = argc > 1 ? atoi(argv[1]) : 1000;
	if (bench_ops <= 0) {
		fprintf(stderr, "usage: dp_cost [OPS]\n");
		return 2;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	suite = CU_add_suite("dp_cost", NULL, NULL);
	if (!suite || !CU_add_test(suite, "bench", bench_run) ||
	    CU_run_test(suite, CU_get_test(suite, "bench")) != CUE_SUCCESS)
		return 1;
	bad = failures + (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	if (bad)
		fprintf(stderr, "dp_cost: %d failed checks\n", bad);
	return bad ? 1 : 0;
}
