/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "cm.h"
#include "dto.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "lmr.h"
#include "pz.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * What soft-iWARP (siw, Linux 6.1) does differently from rxe and mlx5, and
 * what the provider must do about it, against the shared verbs fake with a
 * siw profile: ibv_post_* fail with *negative* errno values, a receive with
 * num_sge = 0 is refused, a QP in ERROR ignores a move to RESET (modify
 * returns 0, the state stays), and CQs cannot be resized.  Each case failed
 * on siw in the VM before the fix it covers.
 */

static struct ofx_ia ia;
static char buf[4096];

struct siw_wrs {
	struct ibv_recv_wr recv;	/* last receive that reached the device */
	struct ibv_sge recv_sge;
	int recvs;
	int post_send_ret, post_recv_ret;	/* forced results, libsiw's sign */
};
static struct siw_wrs dev;

static int siw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	*bad = wr;
	if (dev.post_recv_ret)
		return dev.post_recv_ret;
	if (wr->num_sge < 1)
		return -EINVAL;	/* siw_post_receive: no zero-SGE receives */
	dev.recv = *wr;
	dev.recv_sge = wr->sg_list[0];
	dev.recvs++;
	return 0;
}

static int siw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	*bad = wr;
	return dev.post_send_ret;
}

/* A QP that reached ERROR stays there, yet the call succeeds. */
static int siw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if ((mask & IBV_QP_STATE) && qp->state != IBV_QPS_ERR)
		qp->state = attr->qp_state;
	return 0;
}

/* libsiw's create of an object whose mapping got key 0x90000: NULL, errno untouched. */
static int siw_creates_refused;
static struct ibv_qp *(*fake_create_qp_ex)(struct ibv_context *, struct ibv_qp_init_attr_ex *);

static struct ibv_qp *siw_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	if (siw_creates_refused > 0) {
		siw_creates_refused--;
		return NULL;
	}
	return fake_create_qp_ex(ctx, attr);
}

struct fixture {
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_EVD_HANDLE dto_evd, conn_evd;
	DAT_EP_HANDLE ep;
};

static void setup(void)
{
	fake_verbs_install();
	fake_verbs.ops.post_recv = siw_post_recv;
	fake_verbs.ops.post_send = siw_post_send;
	fake_verbs.ops.modify_qp = siw_modify_qp;
	fake_create_qp_ex = fake_verbs.ops.create_qp_ex;
	fake_verbs.ops.create_qp_ex = siw_create_qp_ex;
	siw_creates_refused = 0;
	fake_verbs.resize_errno = EOPNOTSUPP;
	fake_verbs.next_num = 0x100;
	memset(&dev, 0, sizeof(dev));
	fake_ia_init(&ia);
	ia.transport = OFX_TRANSPORT_IWARP;
	/* siw's ibv_devinfo */
	ia.dev_attr.max_qp_wr = 32768;
	ia.dev_attr.max_sge = 6;
	ia.dev_attr.max_sge_rd = 1;
	ia.dev_attr.max_qp_rd_atom = 32;
	ia.dev_attr.max_qp_init_rd_atom = 32;
	ia.port_attr.max_msg_sz = 1u << 31;
}

static void teardown(void)
{
	ofx_verbs_set(NULL);
	fake_ia_fini(&ia);
	CU_ASSERT_EQUAL(fake_verbs.pds + fake_verbs.mrs + fake_verbs.qps + fake_verbs.cqs, 0);
	CU_ASSERT_EQUAL(fake_verbs.unbalanced, 0);
}

static DAT_EP_ATTR ep_attr(int dtos)
{
	DAT_EP_ATTR a = {
		.service_type = DAT_SERVICE_TYPE_RC,
		.max_message_size = 4096,
		.max_rdma_size = 4096,
		.max_recv_dtos = dtos,
		.max_request_dtos = dtos,
		.max_recv_iov = 1,
		.max_request_iov = 1,
	};

	return a;
}

static void fixture_init(struct fixture *f, int evd_qlen, int ep_dtos)
{
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_EP_ATTR attr = ep_attr(ep_dtos);

	CU_ASSERT_FATAL(ofx_pz_create(&ia, &f->pz) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f->pz,
				       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &f->lmr, &f->lkey,
				       NULL, NULL, NULL) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, evd_qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				       &f->dto_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				       &f->conn_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_ep_create(&ia, f->pz, f->dto_evd, f->dto_evd, f->conn_evd, &attr,
				      &f->ep) == DAT_SUCCESS);
}

static void fixture_fini(struct fixture *f)
{
	/* a test may have freed the EP itself (and cleared f->ep) */
	if (f->ep)
		CU_ASSERT_EQUAL(ofx_ep_free(f->ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->conn_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->dto_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(f->lmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(f->pz), DAT_SUCCESS);
}

static DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c = { .as_64 = v };

	return c;
}

static DAT_LMR_TRIPLET iov_of(const struct fixture *f, DAT_VLEN len)
{
	DAT_LMR_TRIPLET iov = { .lmr_context = f->lkey, .virtual_address = (uintptr_t)buf,
				.segment_length = len };

	return iov;
}

/* A fresh test with one EP of depth 4 on a 16-entry EVD (ended by fixture_end). */
static struct ofx_ep *fixture_begin(struct fixture *f)
{
	setup();
	fixture_init(f, 16, 4);
	return ofx_ep_from_handle(f->ep);
}

static void fixture_end(struct fixture *f)
{
	fixture_fini(f);
	teardown();
}

/* The EP's QP goes live (INIT) as an accept would make it. */
static int go_live(struct ofx_ep *ep, bool rtr_recv_first)
{
	int ret;

	pthread_mutex_lock(&ep->lock);
	ret = ofx_ep_recv_go_live(ep, rtr_recv_first);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

static void test_verbs_status_of_either_sign_is_negative(void)
{
	CU_ASSERT_EQUAL(ofx_verbs_neg_errno(0), 0);
	CU_ASSERT_EQUAL(ofx_verbs_neg_errno(EINVAL), -EINVAL);	/* rxe, mlx5 */
	CU_ASSERT_EQUAL(ofx_verbs_neg_errno(-EINVAL), -EINVAL);	/* libsiw */
	CU_ASSERT_EQUAL(ofx_verbs_neg_errno(ENOMEM), -ENOMEM);
}

/*
 * libsiw's negative errno read as positive turned a refused post into
 * DAT_SUCCESS (and dat_cr_accept into success for a rejected connection).
 */
static void test_post_refused_with_negative_errno_is_an_error(void)
{
	struct fixture f;
	struct ofx_ep *ep;
	DAT_LMR_TRIPLET iov;
	DAT_RETURN status;

	setup();
	fixture_init(&f, 16, 4);
	ep = ofx_ep_from_handle(f.ep);
	iov = iov_of(&f, 64);
	pthread_mutex_lock(&ep->lock);
	test_ep_force_state(ep, OFX_EP_CONNECTED);
	pthread_mutex_unlock(&ep->lock);
	CU_ASSERT_EQUAL(go_live(ep, false), 0);

	dev.post_send_ret = -EINVAL;
	status = ofx_ep_post_send(f.ep, 1, &iov, cookie(1), DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	dev.post_send_ret = -ENOMEM;
	status = ofx_ep_post_rdma_write(f.ep, 1, &iov, cookie(2),
					&(DAT_RMR_TRIPLET){ .rmr_context = 1, .segment_length = 64 },
					DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INSUFFICIENT_RESOURCES);
	dev.post_send_ret = 0;
	CU_ASSERT_EQUAL(ofx_ep_post_send(f.ep, 1, &iov, cookie(3), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);

	dev.post_recv_ret = -ENOMEM;
	status = ofx_ep_post_recv(f.ep, 1, &iov, cookie(4), DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_NOT_EQUAL(status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	dev.post_recv_ret = 0;

	pthread_mutex_lock(&ep->lock);
	test_ep_force_state(ep, OFX_EP_DISCONNECTED);
	pthread_mutex_unlock(&ep->lock);
	fixture_fini(&f);
	teardown();
}

/* The passive side's SEND RTR receive: one SGE of length 0, ahead of the consumer's. */
static void test_rtr_receive_is_one_empty_segment(void)
{
	struct fixture f;
	struct ofx_ep *ep;
	DAT_LMR_TRIPLET iov;

	setup();
	fixture_init(&f, 16, 4);
	ep = ofx_ep_from_handle(f.ep);
	iov = iov_of(&f, 128);
	/* a consumer receive posted before accept is held, then posted after the RTR's */
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(7), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dev.recvs, 0);
	CU_ASSERT_EQUAL(go_live(ep, true), 0);
	CU_ASSERT_EQUAL(dev.recvs, 2);
	CU_ASSERT_EQUAL(dev.recv.num_sge, 1);
	CU_ASSERT_EQUAL(dev.recv_sge.length, 128);	/* the consumer's, last */
	fixture_fini(&f);
	teardown();

	/* the RTR's own receive, alone */
	ep = fixture_begin(&f);
	CU_ASSERT_EQUAL(go_live(ep, true), 0);
	CU_ASSERT_EQUAL(dev.recvs, 1);
	CU_ASSERT_EQUAL(dev.recv.num_sge, 1);
	CU_ASSERT_EQUAL(dev.recv_sge.length, 0);
	CU_ASSERT_EQUAL(dev.recv.wr_id, (uintptr_t)&ep->rtr_cookie);
	fixture_end(&f);
}

/*
 * A receive posted before the QP can take it keeps a copy of its segments
 * (the consumer's list may be gone by then), made with the first one held;
 * an EP whose receives all go straight to the QP makes none (memory per EP).
 */
static void test_held_receives_keep_their_segments(void)
{
	struct fixture f;
	struct ofx_ep *ep;
	DAT_LMR_TRIPLET iov;

	ep = fixture_begin(&f);
	CU_ASSERT_PTR_NULL(ep->recv_sges);
	CU_ASSERT_PTR_NULL(ep->lastwqe);	/* an SRQ EP's alone */
	iov = iov_of(&f, 100);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL(ep->recv_sges);
	iov = iov_of(&f, 200);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	iov.segment_length = 1;		/* the consumer reuses its list */
	CU_ASSERT_EQUAL(dev.recvs, 0);
	CU_ASSERT_EQUAL(go_live(ep, false), 0);
	CU_ASSERT_EQUAL(dev.recvs, 2);
	CU_ASSERT_EQUAL(dev.recv.num_sge, 1);
	CU_ASSERT_EQUAL(dev.recv_sge.length, 200);	/* the second, as posted */
	CU_ASSERT_EQUAL(dev.recv_sge.lkey, f.lkey);
	CU_ASSERT_EQUAL(dev.recv.wr_id, (uintptr_t)&ep->recv_ring.slots[1]);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 2);
	fixture_end(&f);

	/* live before the first receive: nothing to keep */
	ep = fixture_begin(&f);
	CU_ASSERT_EQUAL(go_live(ep, false), 0);
	iov = iov_of(&f, 300);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(3), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dev.recvs, 1);
	CU_ASSERT_EQUAL(dev.recv_sge.length, 300);
	CU_ASSERT_PTR_NULL(ep->recv_sges);
	fixture_end(&f);
}

/*
 * dapltest's server resets its EP after each client.  On siw the old QP stays
 * in ERROR, so reset must build a new one.  What the old QP held is dropped
 * (siw flushes a destroyed QP's receives, rxe does not): no stale event.
 */
static void test_reset_after_disconnect_renews_the_qp(void)
{
	struct fixture f;
	struct ofx_ep *ep;
	DAT_LMR_TRIPLET iov;
	struct ibv_wc wc;
	DAT_EVENT ev;
	uint32_t old_qpn;

	setup();
	fixture_init(&f, 16, 4);
	ep = ofx_ep_from_handle(f.ep);
	iov = iov_of(&f, 256);
	CU_ASSERT_EQUAL(go_live(ep, false), 0);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(9), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	/* the connection ends: the QP is in ERROR, the receive flushed into the CQ */
	old_qpn = ep->qp->qp_num;
	ep->qp->state = IBV_QPS_ERR;
	pthread_mutex_lock(&ep->lock);
	test_ep_force_state(ep, OFX_EP_DISCONNECTED);
	pthread_mutex_unlock(&ep->lock);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = (uintptr_t)&ep->recv_ring.slots[0];
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.qp_num = old_qpn;
	fake_cq_push(ofx_evd_from_handle(f.dto_evd), &wc);

	CU_ASSERT_EQUAL(ofx_ep_reset(f.ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ep->state, OFX_EP_UNCONNECTED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ep->qp);
	CU_ASSERT_NOT_EQUAL(ep->qp->qp_num, old_qpn);
	CU_ASSERT_EQUAL(ep->qp->state, IBV_QPS_RESET);
	CU_ASSERT_EQUAL(fake_verbs.qps, 1);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	/* the old QP's flush (siw's) was drained and dropped, as rxe never sends it */
	CU_ASSERT_EQUAL(fake_cq_pending(ofx_evd_from_handle(f.dto_evd)), 0);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(f.dto_evd, &ev), DAT_QUEUE_EMPTY);
	CU_ASSERT_FALSE(atomic_load(&ep->dying));

	/* the new QP takes receives again, and a second reset of a fresh EP keeps it */
	CU_ASSERT_EQUAL(go_live(ep, false), 0);
	CU_ASSERT_EQUAL(ofx_ep_post_recv(f.ep, 1, &iov, cookie(10), DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dev.recvs, 2);
	old_qpn = ep->qp->qp_num;
	CU_ASSERT_EQUAL(ofx_ep_reset(f.ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ep->qp->qp_num, old_qpn);
	fixture_fini(&f);
	teardown();
}

/* A DTO event of `ep`'s send ring, completed on `cq`. */
static void push_send(struct ofx_ep *ep, struct ibv_cq *cq, uint64_t user)
{
	struct ibv_wc wc = fake_send_wc(ep, user);

	fake_cq_push_cq(cq, &wc);
}

/*
 * siw cannot resize CQs.  An EVD whose EPs outgrow its CQ moves to a bigger
 * one; the QPs already on the old CQ keep completing there, and both are
 * polled and armed.
 */
static void test_evd_moves_to_a_bigger_cq_without_resize(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *ep = fake_ep_new(8);
	struct ibv_cq *first;
	DAT_EVD_HANDLE h;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	int depth;

	setup();
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &h) ==
			DAT_SUCCESS);
	evd = ofx_evd_from_handle(h);
	first = evd->cq;
	depth = evd->cq_depth;
	CU_ASSERT_EQUAL(ofx_evd_reserve_cqes(evd, depth), 0);
	CU_ASSERT_PTR_EQUAL(evd->cq, first);		/* fits */
	CU_ASSERT_EQUAL(ofx_evd_reserve_cqes(evd, 17), 0);
	CU_ASSERT_PTR_NOT_EQUAL(evd->cq, first);
	CU_ASSERT_PTR_EQUAL(ofx_evd_cq(evd), evd->cq);
	CU_ASSERT_EQUAL(evd->n_old_cqs, 1);
	CU_ASSERT_PTR_EQUAL(evd->old_cqs[0], first);
	CU_ASSERT(evd->cq_depth >= depth + 17);
	CU_ASSERT_EQUAL(fake_verbs.cqs, 2);
	CU_ASSERT_TRUE(fake_cq_armed(evd->cq));	/* a waiter may already be in poll() */

	/* completions of either CQ reach the consumer */
	push_send(ep, first, 1);
	push_send(ep, evd->cq, 2);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(h, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 2);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(h, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 1);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(h, &ev), DAT_QUEUE_EMPTY);

	/* a wait arms both; an event on the old one is acknowledged on it */
	CU_ASSERT_EQUAL(ofx_evd_wait(h, 1000, 1, &ev, &nmore), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_TRUE(fake_cq_armed(first));
	CU_ASSERT_TRUE(fake_cq_armed(evd->cq));
	push_send(ep, first, 3);
	CU_ASSERT_EQUAL(ofx_evd_wait(h, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 3);

	/* no CQ holds more than the device's max_cqe: refused, nothing moved */
	CU_ASSERT_EQUAL(ofx_evd_reserve_cqes(evd, ia.dev_attr.max_cqe), -ENOSPC);
	CU_ASSERT_EQUAL(evd->n_old_cqs, 1);
	ofx_evd_unreserve_cqes(evd, depth + 17);
	CU_ASSERT_EQUAL(evd->cq_reserved, 0);
	CU_ASSERT_EQUAL(ofx_evd_free(h), DAT_SUCCESS);
	fake_ep_delete(ep);
	teardown();
}

/* EPs created on an EVD that had to move land on the CQ that counts them. */
static void test_new_eps_land_on_the_moved_cq(void)
{
	DAT_EP_ATTR attr = ep_attr(40);
	struct fixture f;
	struct ofx_evd *evd;
	struct ofx_ep *ep2;
	DAT_EP_HANDLE h2, h3;
	int moves;

	setup();
	fixture_init(&f, 4, 4);
	evd = ofx_evd_from_handle(f.dto_evd);
	moves = evd->n_old_cqs;
	CU_ASSERT(moves >= 1);	/* the first EP already did not fit */
	CU_ASSERT_PTR_EQUAL(ofx_ep_from_handle(f.ep)->qp->send_cq, evd->cq);
	CU_ASSERT_EQUAL(ofx_ep_create(&ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, &attr, &h2),
			DAT_SUCCESS);
	ep2 = ofx_ep_from_handle(h2);
	CU_ASSERT_PTR_EQUAL(ep2->qp->recv_cq, evd->cq);
	CU_ASSERT(evd->cq_depth >= evd->cq_reserved);
	CU_ASSERT(evd->n_old_cqs > moves);
	moves = evd->n_old_cqs;
	/* too big for any CQ: ep_create refuses instead of risking an overflow */
	attr = ep_attr(600);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_create(&ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						   &attr, &h3)),
			DAT_INSUFFICIENT_RESOURCES);
	CU_ASSERT_EQUAL(evd->n_old_cqs, moves);
	CU_ASSERT_EQUAL(ofx_ep_free(h2), DAT_SUCCESS);
	fixture_fini(&f);
	teardown();
}

/*
 * An EP reserves room for every completion it can have outstanding: on one
 * EVD for both queues the sum (taken in one reservation), on two EVDs each
 * its queue's share; a free gives back exactly that.
 */
static void test_ep_reserves_its_queues_on_shared_and_separate_evds(void)
{
	DAT_EP_ATTR attr = ep_attr(6);
	struct ofx_evd *dto, *req;
	DAT_EVD_HANDLE req_h;
	DAT_EP_HANDLE h2;
	struct fixture f;

	fixture_begin(&f);
	dto = ofx_evd_from_handle(f.dto_evd);
	CU_ASSERT_EQUAL(dto->cq_reserved, 5 + 5);	/* each queue's depth + 1 */
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_h) ==
			DAT_SUCCESS);
	req = ofx_evd_from_handle(req_h);
	CU_ASSERT_EQUAL(ofx_ep_create(&ia, f.pz, f.dto_evd, req_h, f.conn_evd, &attr, &h2),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dto->cq_reserved, 10 + 7);
	CU_ASSERT_EQUAL(req->cq_reserved, 7);
	CU_ASSERT_EQUAL(ofx_ep_free(h2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dto->cq_reserved, 10);
	CU_ASSERT_EQUAL(req->cq_reserved, 0);
	CU_ASSERT_EQUAL(ofx_evd_free(req_h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(f.ep), DAT_SUCCESS);
	f.ep = DAT_HANDLE_NULL;
	CU_ASSERT_EQUAL(dto->cq_reserved, 0);
	fixture_end(&f);
}

/*
 * libsiw refuses a QP without setting errno once the process's queue
 * mappings reach page offset 0x90 (README, siw): ep_create must fail with a
 * DAT error, not succeed or crash on a stale errno, and leave nothing behind.
 */
static void test_create_refused_without_errno_is_insufficient_resources(void)
{
	DAT_EP_ATTR attr = ep_attr(4);
	const char *why;
	struct fixture f;
	DAT_EP_HANDLE h;
	int qps;

	setup();
	fixture_init(&f, 64, 4);
	qps = fake_verbs.qps;
	siw_creates_refused = 1;
	errno = EINTR;	/* stale: must not be reported */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_create(&ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						   &attr, &h)),
			DAT_INSUFFICIENT_RESOURCES);
	CU_ASSERT_EQUAL(siw_creates_refused, 0);
	CU_ASSERT_EQUAL(fake_verbs.qps, qps);
	CU_ASSERT_EQUAL(ofx_ep_create(&ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, &attr, &h),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_free(h), DAT_SUCCESS);
	errno = 0;
	CU_ASSERT_EQUAL(ofx_verbs_create_failed(&why), -ENOMEM);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "0x90"));
	errno = EINVAL;
	CU_ASSERT_EQUAL(ofx_verbs_create_failed(&why), -EINVAL);
	CU_ASSERT_STRING_EQUAL(why, strerror(EINVAL));
	fixture_fini(&f);
	teardown();
}

/* iWARP carries 248 bytes each way (MPA v2 takes 8 of 256); IB/RoCE as stock. */
static void test_private_data_limits_follow_the_transport(void)
{
	setup();
	ia.p2p_default = true;	/* p2p=auto on iWARP: our 8-byte trailer travels */
	CU_ASSERT_EQUAL(ofx_cm_max_pdata(&ia), 240);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, true), 240);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, false), 248);	/* a stock peer */
	ia.p2p_default = false;
	CU_ASSERT_EQUAL(ofx_cm_max_pdata(&ia), 248);
	ia.transport = OFX_TRANSPORT_ROCE;
	CU_ASSERT_EQUAL(ofx_cm_max_pdata(&ia), 56);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, true), 160);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, false), 160);
	ia.p2p_default = true;
	CU_ASSERT_EQUAL(ofx_cm_max_pdata(&ia), 48);
	teardown();
}

CU_TestInfo ofx_test_siw[] = {
	{ "private data limits follow the transport",
	  test_private_data_limits_follow_the_transport },
	{ "verbs status of either sign becomes a negative errno",
	  test_verbs_status_of_either_sign_is_negative },
	{ "a post refused with a negative errno is a DAT error",
	  test_post_refused_with_negative_errno_is_an_error },
	{ "the rtr receive is one empty segment, ahead of held receives",
	  test_rtr_receive_is_one_empty_segment },
	{ "held receives keep their segments, made with the first one held",
	  test_held_receives_keep_their_segments },
	{ "reset after disconnect renews the qp and drops what the old one held",
	  test_reset_after_disconnect_renews_the_qp },
	{ "an evd without cq resize moves to a bigger cq and polls both",
	  test_evd_moves_to_a_bigger_cq_without_resize },
	{ "new eps land on the moved cq; an ep no cq can hold is refused",
	  test_new_eps_land_on_the_moved_cq },
	{ "an ep reserves its queues' room on a shared evd and on two evds",
	  test_ep_reserves_its_queues_on_shared_and_separate_evds },
	{ "a create refused without errno is insufficient resources",
	  test_create_refused_without_errno_is_insufficient_resources },
	CU_TEST_INFO_NULL,
};
