/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "dto.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "pz.h"
#include "srq.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Shared receive queues against the verbs model of fake_verbs.h (no
 * device): SRQs, QPs and CQs are plain structs, posted SRQ receives are
 * remembered here in posting order, and a test completes them by pushing
 * work completions with any wr_id and qp_num into a CQ, in any order.  The
 * IA has no progress thread, so timers never fire; the async handlers are
 * called directly.
 */

#define MAX_POSTS 64

static uint64_t srq_posted[MAX_POSTS];	/* wr_ids in posting order */
static int nposted;
static int srq_modifies;		/* modify_srq calls */
static uint32_t srq_limit = ~0u;	/* last limit armed */

static int model_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit >= fake_verbs.srq_max_wr)
			return EINVAL;
		srq_limit = attr->srq_limit;
	}
	if (mask & IBV_SRQ_MAX_WR)
		fake_verbs.srq_max_wr = attr->max_wr;
	srq_modifies++;
	return 0;
}

static int model_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad)
{
	if (nposted >= MAX_POSTS) {
		*bad = wr;
		return ENOMEM;
	}
	srq_posted[nposted++] = wr->wr_id;
	return 0;
}

static struct ofx_ia ia;
static struct ibv_pd fake_pd, other_pd;
static struct ofx_pz pz, other_pz;
static struct fake_cq empty_cq = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void setup(void)
{
	fake_verbs_install();
	fake_verbs.ops.modify_srq = model_modify_srq;
	fake_verbs.ops.post_srq_recv = model_post_srq_recv;
	nposted = srq_modifies = 0;
	srq_limit = ~0u;

	fake_ia_init(&ia);
	ofx_config_defaults(&ia.cfg);
	ia.dev_attr.max_srq = 8;
	ia.dev_attr.max_srq_wr = 64;
	ia.dev_attr.max_srq_sge = 4;
	ia.dev_attr.max_qp_wr = 64;
	ia.dev_attr.max_sge = 4;
	ia.dev_attr.max_qp_rd_atom = 4;
	ia.dev_attr.max_qp_init_rd_atom = 4;
	ia.port_attr.max_msg_sz = 1u << 30;
	ia.empty_cq = &empty_cq.cq;

	CU_ASSERT_FATAL(ofx_evd_create_internal(&ia, 16, DAT_EVD_ASYNC_FLAG, &ia.async_evd) == 0);
	fake_pz_init(&pz, &ia, &fake_pd);
	fake_pz_init(&other_pz, &ia, &other_pd);
}

static void teardown(void)
{
	ofx_evd_destroy(ia.async_evd);
	ia.async_evd = NULL;
	CU_ASSERT_EQUAL(fake_verbs.qps, 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(atomic_load(&pz.refs), 0);
	ofx_verbs_set(NULL);
	fake_ia_fini(&ia);
}

static DAT_SRQ_HANDLE srq_new(DAT_COUNT dtos, DAT_COUNT lw)
{
	DAT_SRQ_ATTR attr = { .max_recv_dtos = dtos, .max_recv_iov = 1, .low_watermark = lw };
	DAT_SRQ_HANDLE h = NULL;

	CU_ASSERT_EQUAL_FATAL(ofx_srq_create(&ia, &pz, &attr, &h), DAT_SUCCESS);
	return h;
}

static struct ofx_evd *dto_evd_new(void)
{
	struct ofx_evd *evd;

	CU_ASSERT_FATAL(ofx_evd_create_internal(&ia, 16, DAT_EVD_DTO_FLAG, &evd) == 0);
	return evd;
}

static DAT_EP_ATTR srq_ep_attr(void)
{
	DAT_EP_ATTR a;

	memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_recv_dtos = 4;	/* ignored for an SRQ EP */
	a.max_recv_iov = 1;
	a.max_request_iov = 1;
	return a;
}

static struct ofx_ep *srq_ep_new(DAT_SRQ_HANDLE srq, struct ofx_evd *recv_evd)
{
	DAT_EP_ATTR a = srq_ep_attr();
	DAT_EP_HANDLE h = NULL;

	CU_ASSERT_EQUAL_FATAL(ofx_ep_create_with_srq(&ia, &pz, recv_evd, NULL, NULL, srq, &a, &h),
			      DAT_SUCCESS);
	return h;
}

static void post(DAT_SRQ_HANDLE srq, uint64_t cookie, uint32_t len)
{
	static char buf[4096];
	DAT_LMR_TRIPLET iov = { .lmr_context = 1, .virtual_address = (uintptr_t)buf,
				.segment_length = len };
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	CU_ASSERT_EQUAL(ofx_srq_post_recv(srq, 1, &iov, c), DAT_SUCCESS);
}

/* The device completes the i-th posted SRQ receive on `ep`'s QP. */
static void complete(int i, uint32_t qp_num, struct ofx_evd *evd, uint32_t byte_len,
		     enum ibv_wc_status status)
{
	struct ibv_wc wc;

	CU_ASSERT_FATAL(i < nposted && fake_cq_pending(evd) < FAKE_CQ_MAX);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = srq_posted[i];
	wc.qp_num = qp_num;
	wc.status = status;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = byte_len;
	fake_cq_push(evd, &wc);
}

static DAT_COUNT outstanding(DAT_SRQ_HANDLE srq)
{
	DAT_SRQ_PARAM p;

	CU_ASSERT_EQUAL(ofx_srq_query(srq, DAT_SRQ_FIELD_ALL, &p), DAT_SUCCESS);
	CU_ASSERT_EQUAL(p.available_dto_count, p.outstanding_dto_count);
	return p.outstanding_dto_count;
}

static void expect_recv(struct ofx_evd *evd, struct ofx_ep *ep, uint64_t cookie, uint32_t len)
{
	DAT_EVENT ev;
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(d->transfered_length, len);
	CU_ASSERT_EQUAL(d->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
}

static void expect_empty(struct ofx_evd *evd)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(evd, &ev)), DAT_QUEUE_EMPTY);
}

static void expect_async(DAT_EVENT_NUMBER num, void *handle, DAT_COUNT reason)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(ia.async_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, num);
	CU_ASSERT_PTR_EQUAL(ev.event_data.asynch_error_event_data.dat_handle, handle);
	CU_ASSERT_EQUAL(ev.event_data.asynch_error_event_data.reason, reason);
}

static void test_create_checks_attributes_and_query_reports_them(void)
{
	DAT_SRQ_ATTR attr = { .max_recv_dtos = 8, .max_recv_iov = 1, .low_watermark = 0 };
	DAT_SRQ_HANDLE h;
	DAT_SRQ_PARAM p;

	setup();
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, NULL, &h), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, &attr, NULL), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_srq_create(&ia, &ia, &attr, &h)), DAT_INVALID_HANDLE);
	attr.max_recv_dtos = 0;
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, &attr, &h), OFX_INVALID_ARG(3));
	attr.max_recv_dtos = 65;
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, &attr, &h), OFX_INVALID_ARG(3));
	attr.max_recv_dtos = 8;
	attr.max_recv_iov = 5;
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, &attr, &h), OFX_INVALID_ARG(3));
	attr.max_recv_iov = 2;
	attr.low_watermark = 8;
	CU_ASSERT_EQUAL(ofx_srq_create(&ia, &pz, &attr, &h), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);

	attr.low_watermark = 3;
	CU_ASSERT_EQUAL_FATAL(ofx_srq_create(&ia, &pz, &attr, &h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(srq_limit, 3);	/* armed at create */
	CU_ASSERT_EQUAL(atomic_load(&pz.refs), 1);
	memset(&p, 0xa5, sizeof(p));
	CU_ASSERT_EQUAL(ofx_srq_query(h, DAT_SRQ_FIELD_ALL, &p), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(p.ia_handle, &ia);	/* unknown to libdat2: the pointer */
	CU_ASSERT_EQUAL(p.srq_state, DAT_SRQ_STATE_OPERATIONAL);
	CU_ASSERT_PTR_EQUAL(p.pz_handle, &pz);
	CU_ASSERT_EQUAL(p.max_recv_dtos, 8);
	CU_ASSERT_EQUAL(p.max_recv_iov, 2);
	CU_ASSERT_EQUAL(p.low_watermark, 3);
	CU_ASSERT_EQUAL(p.available_dto_count, 0);
	CU_ASSERT_EQUAL(p.outstanding_dto_count, 0);
	CU_ASSERT_EQUAL(ofx_srq_free(h), DAT_SUCCESS);
	teardown();
}

static void test_receives_route_to_the_ep_of_the_qp_out_of_order(void)
{
	struct ofx_evd *evd1, *evd2;
	struct ofx_ep *a, *b;
	DAT_SRQ_HANDLE srq;
	int i;

	setup();
	srq = srq_new(4, 0);
	evd1 = dto_evd_new();
	evd2 = dto_evd_new();
	a = srq_ep_new(srq, evd1);
	b = srq_ep_new(srq, evd2);
	CU_ASSERT_PTR_NOT_NULL(a->qp->srq);
	CU_ASSERT_EQUAL(a->recv_ring.size, 0);	/* no recv ring on an SRQ EP */

	for (i = 0; i < 4; i++)
		post(srq, 100 + i, 1024);
	CU_ASSERT_EQUAL(outstanding(srq), 4);
	/* full: the fifth receive does not fit */
	{
		DAT_LMR_TRIPLET iov = { .segment_length = 8 };
		DAT_DTO_COOKIE c = { .as_64 = 999 };

		CU_ASSERT_EQUAL(ofx_srq_post_recv(srq, 1, &iov, c),
				OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ));
	}

	/* the device hands the receives to whichever QP a message came in on */
	complete(2, b->qp->qp_num, evd2, 10, IBV_WC_SUCCESS);
	complete(0, a->qp->qp_num, evd1, 20, IBV_WC_SUCCESS);
	complete(3, a->qp->qp_num, evd1, 30, IBV_WC_SUCCESS);
	expect_recv(evd2, b, 102, 10);
	expect_recv(evd1, a, 100, 20);
	expect_recv(evd1, a, 103, 30);
	expect_empty(evd1);
	expect_empty(evd2);
	CU_ASSERT_EQUAL(outstanding(srq), 1);

	/* the three freed slots are reused although slot 1 is still out */
	post(srq, 200, 64);
	post(srq, 201, 64);
	post(srq, 202, 64);
	CU_ASSERT_EQUAL(outstanding(srq), 4);
	CU_ASSERT_NOT_EQUAL(srq_posted[4], srq_posted[1]);
	CU_ASSERT_NOT_EQUAL(srq_posted[5], srq_posted[1]);
	CU_ASSERT_NOT_EQUAL(srq_posted[6], srq_posted[1]);
	complete(1, b->qp->qp_num, evd2, 40, IBV_WC_SUCCESS);
	complete(6, b->qp->qp_num, evd2, 50, IBV_WC_SUCCESS);
	complete(4, a->qp->qp_num, evd1, 60, IBV_WC_SUCCESS);
	expect_recv(evd2, b, 101, 40);
	expect_recv(evd2, b, 202, 50);
	expect_recv(evd1, a, 200, 60);
	CU_ASSERT_EQUAL(outstanding(srq), 1);

	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(b), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd1);
	ofx_evd_destroy(evd2);
	teardown();
}

static void test_free_is_refused_while_eps_use_it(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *a, *b;
	DAT_SRQ_HANDLE srq;
	DAT_LMR_TRIPLET iov = { .segment_length = 8 };
	DAT_DTO_COOKIE c = { .as_64 = 1 };

	setup();
	srq = srq_new(4, 0);
	evd = dto_evd_new();
	a = srq_ep_new(srq, evd);
	b = srq_ep_new(srq, evd);
	/* receives of an SRQ EP go to the SRQ */
	CU_ASSERT_EQUAL(ofx_ep_post_recv(a, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	CU_ASSERT_EQUAL(ofx_srq_free(srq),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	CU_ASSERT_EQUAL(ofx_ep_free(b), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_completions_of_a_freed_ep_are_dropped(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *a, *b;
	DAT_SRQ_HANDLE srq;
	uint32_t a_qp;

	setup();
	srq = srq_new(4, 0);
	evd = dto_evd_new();
	a = srq_ep_new(srq, evd);
	b = srq_ep_new(srq, evd);
	a_qp = a->qp->qp_num;
	post(srq, 1, 64);
	post(srq, 2, 64);
	post(srq, 3, 64);
	/* one in the CQ when the EP goes, one after it went */
	complete(0, a_qp, evd, 64, IBV_WC_SUCCESS);
	complete(1, b->qp->qp_num, evd, 64, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	complete(2, a_qp, evd, 64, IBV_WC_WR_FLUSH_ERR);
	/* b's receive, polled during a's teardown, is still reported */
	expect_recv(evd, b, 2, 64);
	expect_empty(evd);
	CU_ASSERT_EQUAL(outstanding(srq), 0);	/* every slot came back */

	CU_ASSERT_EQUAL(ofx_ep_free(b), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_ep_create_with_srq_checks_its_arguments(void)
{
	DAT_EP_ATTR a = srq_ep_attr();
	DAT_NAMED_ATTR p2p = { "P2P", "on" };
	struct ofx_evd *evd;
	struct ofx_srq *s;
	DAT_SRQ_HANDLE srq;
	DAT_EP_HANDLE h;

	setup();
	srq = srq_new(4, 0);
	s = srq;
	evd = dto_evd_new();
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &pz, evd, NULL, NULL, evd, &a, &h),
			ofx_invalid_handle(OFX_OBJ_SRQ));
	/* the receives must be reported somewhere */
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &pz, NULL, NULL, NULL, srq, &a, &h),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV));
	/* srq_ep_pz_difference_supported is FALSE */
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &other_pz, evd, NULL, NULL, srq, &a, &h),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &pz, evd, NULL, NULL, srq, &a, NULL),
			OFX_INVALID_ARG(8));
	a.ep_provider_specific_count = 1;
	a.ep_provider_specific = &p2p;
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &pz, evd, NULL, NULL, srq, &a, &h),
			OFX_INVALID_ARG(7));
	a.ep_provider_specific_count = 0;
	/* an SRQ being freed takes no new EP */
	s->state = DAT_SRQ_STATE_SHUTDOWN;
	CU_ASSERT_EQUAL(ofx_ep_create_with_srq(&ia, &pz, evd, NULL, NULL, srq, &a, &h),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_SHUTDOWN));
	CU_ASSERT_EQUAL(fake_verbs.qps, 0);
	s->state = DAT_SRQ_STATE_OPERATIONAL;
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_low_watermark_fires_and_is_rearmed(void)
{
	DAT_SRQ_HANDLE srq;
	struct ofx_srq *s;
	DAT_EVENT ev;
	int i, before;

	setup();
	srq = srq_new(8, 0);
	s = srq;
	CU_ASSERT_EQUAL(srq_modifies, 0);
	CU_ASSERT_EQUAL(ofx_srq_set_lw(srq, 8), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_srq_set_lw(srq, -1), OFX_INVALID_ARG(2));
	for (i = 0; i < 4; i++)
		post(srq, i, 64);
	CU_ASSERT_EQUAL(ofx_srq_set_lw(srq, 2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(srq_limit, 2);
	CU_ASSERT_TRUE(atomic_load(&s->lw_armed));

	/* the device reports the limit once and disarms it */
	ofx_srq_limit_reached(s);
	expect_async(DAT_ASYNC_ERROR_EP_BROKEN, srq, DAT_SRQ_LOW_WATERMARK_EVENT);
	CU_ASSERT_FALSE(atomic_load(&s->lw_armed));
	/* the consumer replenishes above the watermark: armed again */
	before = srq_modifies;
	srq_limit = ~0u;
	post(srq, 10, 64);
	CU_ASSERT_EQUAL(srq_modifies, before + 1);
	CU_ASSERT_EQUAL(srq_limit, 2);
	CU_ASSERT_TRUE(atomic_load(&s->lw_armed));
	/* no re-arm while armed */
	post(srq, 11, 64);
	CU_ASSERT_EQUAL(srq_modifies, before + 1);

	/* a watermark above what is posted fires at once and arms later */
	CU_ASSERT_EQUAL(ofx_srq_set_lw(srq, 7), DAT_SUCCESS);
	expect_async(DAT_ASYNC_ERROR_EP_BROKEN, srq, DAT_SRQ_LOW_WATERMARK_EVENT);
	CU_ASSERT_FALSE(atomic_load(&s->lw_armed));
	post(srq, 12, 64);	/* 7 posted: not above */
	CU_ASSERT_FALSE(atomic_load(&s->lw_armed));
	post(srq, 13, 64);	/* 8 posted */
	CU_ASSERT_TRUE(atomic_load(&s->lw_armed));
	CU_ASSERT_EQUAL(srq_limit, 7);

	/* zero switches it off */
	CU_ASSERT_EQUAL(ofx_srq_set_lw(srq, 0), DAT_SUCCESS);
	CU_ASSERT_EQUAL(srq_limit, 0);
	CU_ASSERT_FALSE(atomic_load(&s->lw_armed));
	ofx_srq_limit_reached(s);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(ia.async_evd, &ev)), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	teardown();
}

static void test_resize_grows_and_old_slots_still_complete(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *a;
	DAT_SRQ_HANDLE srq;
	DAT_LMR_TRIPLET iov = { .segment_length = 8 };
	DAT_DTO_COOKIE c = { .as_64 = 0 };
	int i;

	setup();
	srq = srq_new(2, 1);
	evd = dto_evd_new();
	a = srq_ep_new(srq, evd);
	post(srq, 1, 8);
	post(srq, 2, 8);
	CU_ASSERT_EQUAL(ofx_srq_resize(srq, 1), OFX_INVALID_ARG(2));	/* below posted */
	CU_ASSERT_EQUAL(ofx_srq_resize(srq, 65), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_srq_resize(srq, 8), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srq_max_wr, 8);
	for (i = 0; i < 6; i++)
		post(srq, 10 + i, 8);
	CU_ASSERT_EQUAL(ofx_srq_post_recv(srq, 1, &iov, c),
			OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ));
	/* a receive posted before the resize completes normally */
	complete(1, a->qp->qp_num, evd, 8, IBV_WC_SUCCESS);
	expect_recv(evd, a, 2, 8);
	CU_ASSERT_EQUAL(outstanding(srq), 7);
	/* shrinking only lowers the limit, never below what is posted */
	CU_ASSERT_EQUAL(ofx_srq_resize(srq, 6), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_srq_resize(srq, 7), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.srq_max_wr, 8);
	CU_ASSERT_EQUAL(ofx_srq_post_recv(srq, 1, &iov, c),
			OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ));
	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_last_wqe_is_reported_once_per_connection(void)
{
	struct ofx_evd *evd, *conn;
	struct ofx_ep *a;
	DAT_SRQ_HANDLE srq;
	DAT_EVENT ev;

	setup();
	srq = srq_new(4, 0);
	evd = dto_evd_new();
	CU_ASSERT_FATAL(ofx_evd_create_internal(&ia, 8, DAT_EVD_CONNECTION_FLAG, &conn) == 0);
	a = srq_ep_new(srq, evd);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a->lastwqe);
	a->conn_evd = conn;
	atomic_store(&a->recv_live, true);	/* as after connect or accept */

	/* the connection ends: the bounded wait for the device event starts */
	pthread_mutex_lock(&a->lock);
	ofx_ep_conn_report(a, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_DISCONNECTED, false);
	pthread_mutex_unlock(&a->lock);
	CU_ASSERT_EQUAL(atomic_load(&a->lastwqe->state), OFX_LASTWQE_WAITING);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(conn, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);

	/* stock's mapping, which dtestsrq waits for after each DISCONNECTED */
	ofx_ep_srq_last_wqe(a);
	expect_async(DAT_ASYNC_ERROR_EP_BROKEN, a, 0);
	ofx_ep_srq_last_wqe(a);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(ia.async_evd, &ev)), DAT_QUEUE_EMPTY);
	/* nor does a second terminal event start another wait */
	pthread_mutex_lock(&a->lock);
	ofx_ep_conn_report(a, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_BROKEN, false);
	pthread_mutex_unlock(&a->lock);
	CU_ASSERT_EQUAL(atomic_load(&a->lastwqe->state), OFX_LASTWQE_DONE);
	CU_ASSERT_FALSE(ofx_ep_srq_lastwqe_pending(a));

	/* reset: the next connection reports again, and never for a dying EP */
	pthread_mutex_lock(&a->lock);
	ofx_ep_srq_reset(a);
	pthread_mutex_unlock(&a->lock);
	CU_ASSERT_TRUE(ofx_ep_srq_lastwqe_pending(a));
	atomic_store(&a->dying, true);
	ofx_ep_srq_last_wqe(a);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(ia.async_evd, &ev)), DAT_QUEUE_EMPTY);
	atomic_store(&a->dying, false);

	a->conn_evd = NULL;
	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(conn);
	ofx_evd_destroy(evd);
	teardown();
}

/*
 * An SRQ EP's receive side is the SRQ variant's (ep_recv.h), chosen at
 * create: its QP takes the SRQ, dat_ep_post_recv refuses before looking at
 * its arguments, the counts are unknown, watermarks never fire, P2P=on and
 * a QP rebuild are refused, and LAST_WQE_REACHED is expected, reported once.
 */
static void test_srq_ep_receive_side_goes_through_its_variant(void)
{
	DAT_NAMED_ATTR on = { "P2P", "on" };
	DAT_COUNT n = 0, span = 0;
	struct ofx_evd *evd;
	DAT_EP_PARAM param;
	DAT_SRQ_HANDLE srq;
	struct ofx_ep *a;
	DAT_EVENT ev;

	setup();
	srq = srq_new(4, 0);
	evd = dto_evd_new();
	a = srq_ep_new(srq, evd);
	CU_ASSERT_PTR_EQUAL(a->recv, &ofx_ep_srq_recv);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a->qp);
	CU_ASSERT_PTR_EQUAL(a->qp->srq, ofx_srq_from_handle(srq)->srq);
	CU_ASSERT_EQUAL(a->recv_ring.size, 0);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(a, -1, NULL, (DAT_DTO_COOKIE){ .as_64 = 1 }, 0xffff),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
	CU_ASSERT_EQUAL(ofx_ep_recv_query(a, &n, &span), DAT_SUCCESS);
	CU_ASSERT_EQUAL(n, DAT_VALUE_UNKNOWN);
	CU_ASSERT_EQUAL(span, DAT_VALUE_UNKNOWN);
	/* stored, never fired: the count is unknowable */
	CU_ASSERT_EQUAL(ofx_ep_set_watermark(a, 0, 0), DAT_SUCCESS);
	CU_ASSERT_EQUAL(a->soft_hw, 0);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(ia.async_evd, &ev)), DAT_QUEUE_EMPTY);

	memset(&param, 0, sizeof(param));
	param.ep_attr.ep_provider_specific_count = 1;
	param.ep_attr.ep_provider_specific = &on;
	CU_ASSERT_EQUAL(ofx_ep_modify(a, DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR |
					  DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &param),
			OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(a->p2p_attr, OFX_OFF);
	/* the QP is registered with the SRQ: not rebuilt for new queue sizes */
	param.ep_attr = a->attr;
	param.ep_attr.max_rdma_read_in = 1;
	CU_ASSERT_EQUAL(ofx_ep_modify(a, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, &param),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	/* nor moved to another PZ than the SRQ's */
	param.pz_handle = &ia;
	CU_ASSERT_EQUAL(ofx_ep_modify(a, DAT_EP_FIELD_PZ_HANDLE, &param), OFX_INVALID_ARG(3));

	/* the device's LAST_WQE_REACHED is the variant's to report, once */
	atomic_store(&a->recv_live, true);
	CU_ASSERT_TRUE(a->recv->last_wqe(a));
	expect_async(DAT_ASYNC_ERROR_EP_BROKEN, a, 0);
	CU_ASSERT_TRUE(a->recv->last_wqe(a));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(ia.async_evd, &ev)), DAT_QUEUE_EMPTY);
	/* a plain EP's is an error, reported as any other (ia.c) */
	CU_ASSERT_FALSE(ofx_ep_rq_recv.last_wqe(a));

	CU_ASSERT_EQUAL(ofx_ep_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_srq_free(srq), DAT_SUCCESS);
	ofx_evd_destroy(evd);
	teardown();
}

CU_TestInfo ofx_test_srq[] = {
	{ "create checks attributes, query reports them",
	  test_create_checks_attributes_and_query_reports_them },
	{ "receives route to the ep of the qp, out of order across eps",
	  test_receives_route_to_the_ep_of_the_qp_out_of_order },
	{ "srq_free is refused while eps use the srq", test_free_is_refused_while_eps_use_it },
	{ "completions of a freed ep are dropped and their slots retired",
	  test_completions_of_a_freed_ep_are_dropped },
	{ "ep_create_with_srq checks its arguments",
	  test_ep_create_with_srq_checks_its_arguments },
	{ "low watermark fires and is re-armed", test_low_watermark_fires_and_is_rearmed },
	{ "resize grows, old slots still complete",
	  test_resize_grows_and_old_slots_still_complete },
	{ "an srq ep's receive side goes through its variant",
	  test_srq_ep_receive_side_goes_through_its_variant },
	{ "last wqe is reported once per connection",
	  test_last_wqe_is_reported_once_per_connection },
	CU_TEST_INFO_NULL,
};
