/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "fake_verbs.h"

#include "dto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fake_verbs fake_verbs;

static DAT_PROVIDER fake_provider;
static int fake_dummy_ctx;

static struct ibv_comp_channel *fake_create_comp_channel(struct ibv_context *ctx)
{
	struct fake_channel *f = calloc(1, sizeof(*f));
	int fds[2];

	if (!f || pipe(fds)) {
		free(f);
		return NULL;
	}
	f->ch.context = ctx;
	f->ch.fd = fds[0];
	f->wfd = fds[1];
	return &f->ch;
}

static int fake_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct fake_channel *f = (struct fake_channel *)ch;

	close(f->ch.fd);
	close(f->wfd);
	free(f);
	return 0;
}

static struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				     struct ibv_comp_channel *ch, int vec)
{
	struct fake_cq *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	f->cq.context = ctx;
	f->cq.channel = ch;
	f->cq.cq_context = cq_context;
	f->cq.cqe = cqe + fake_verbs.cq_extra;
	f->fch = (struct fake_channel *)ch;
	if (f->fch)
		f->fch->cq = f;
	return &f->cq;
}

static int fake_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	if (f->acked != f->events)
		fake_verbs.unbalanced++;
	pthread_mutex_destroy(&f->lock);
	free(f);
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)cq;
	int i;

	pthread_mutex_lock(&f->lock);
	if (n > f->max_poll)
		f->max_poll = n;
	for (i = 0; i < n && f->count; i++) {
		wc[i] = f->q[f->head];
		f->head = (f->head + 1) % FAKE_CQ_MAX;
		f->count--;
	}
	pthread_mutex_unlock(&f->lock);
	return i;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->armed = true;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	struct fake_channel *fch = (struct fake_channel *)ch;
	char b;

	if (read(ch->fd, &b, 1) != 1)
		return -1;	/* errno EAGAIN from the non-blocking pipe */
	pthread_mutex_lock(&fch->cq->lock);
	fch->cq->events++;
	pthread_mutex_unlock(&fch->cq->lock);
	*cq = &fch->cq->cq;
	*ctx = fch->cq->cq.cq_context;
	return 0;
}

static void fake_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->acked += n;
	pthread_mutex_unlock(&f->lock);
}

/* The model CQ can grow up to its array; beyond that it fails like a device. */
static int fake_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (cqe > FAKE_CQ_MAX)
		return ENOMEM;
	cq->cqe = cqe;
	return 0;
}

static struct ibv_pd *fake_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (pd) {
		pd->context = ctx;
		fake_verbs.pds++;
	}
	return pd;
}

static int fake_dealloc_pd(struct ibv_pd *pd)
{
	/* errno value returned, as verbs does */
	if (fake_verbs.pd_busy_with_mrs && fake_verbs.mrs)
		return EBUSY;
	fake_verbs.pds--;
	free(pd);
	return 0;
}

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr;

	if (fake_verbs.reg_errno) {
		errno = fake_verbs.reg_errno;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = 0x1000 + fake_verbs.mrs;
	mr->rkey = 0x2000 + fake_verbs.mrs;
	fake_verbs.last_access = access;
	fake_verbs.mrs++;
	return mr;
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
	fake_verbs.mrs--;
	free(mr);
	return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = calloc(1, sizeof(*mw));

	if (!mw)
		return NULL;
	mw->pd = pd;
	mw->type = type;
	mw->rkey = 0x5500 + ((uint32_t)fake_verbs.mws << 8);
	fake_verbs.mws++;
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	fake_verbs.mws--;
	free(mw);
	return 0;
}

static struct ibv_srq *fake_create_srq_ex(struct ibv_context *ctx,
					  struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	srq->srq_context = attr->srq_context;
	srq->pd = attr->pd;
	fake_verbs.srq_max_wr = attr->attr.max_wr;
	fake_verbs.srqs++;
	return srq;
}

static int fake_destroy_srq(struct ibv_srq *srq)
{
	fake_verbs.srqs--;
	free(srq);
	return 0;
}

static struct ibv_qp *fake_create_qp_ex(struct ibv_context *ctx,
					struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp = calloc(1, sizeof(*qp));

	if (!qp)
		return NULL;
	/* the real kernel ignores receive caps of a QP fed by an SRQ */
	CU_ASSERT(!attr->srq || (attr->cap.max_recv_wr == 0 && attr->cap.max_recv_sge == 0));
	qp->qp_num = fake_verbs.next_qp_num++;
	qp->qp_context = attr->qp_context;
	qp->srq = attr->srq;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->state = IBV_QPS_RESET;
	fake_verbs.qps++;
	return qp;
}

static int fake_destroy_qp(struct ibv_qp *qp)
{
	fake_verbs.qps--;
	free(qp);
	return 0;
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

/* A QP fed by an SRQ refuses receives of its own. */
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	*bad = wr;
	return qp->srq ? EINVAL : 0;
}

void fake_verbs_install(void)
{
	memset(&fake_verbs, 0, sizeof(fake_verbs));
	fake_verbs.ops = ofx_verbs_real;
	fake_verbs.ops.create_comp_channel = fake_create_comp_channel;
	fake_verbs.ops.destroy_comp_channel = fake_destroy_comp_channel;
	fake_verbs.ops.create_cq = fake_create_cq;
	fake_verbs.ops.destroy_cq = fake_destroy_cq;
	fake_verbs.ops.poll_cq = fake_poll_cq;
	fake_verbs.ops.req_notify_cq = fake_req_notify_cq;
	fake_verbs.ops.get_cq_event = fake_get_cq_event;
	fake_verbs.ops.ack_cq_events = fake_ack_cq_events;
	fake_verbs.ops.resize_cq = fake_resize_cq;
	fake_verbs.ops.alloc_pd = fake_alloc_pd;
	fake_verbs.ops.dealloc_pd = fake_dealloc_pd;
	fake_verbs.ops.reg_mr = fake_reg_mr;
	fake_verbs.ops.dereg_mr = fake_dereg_mr;
	fake_verbs.ops.alloc_mw = fake_alloc_mw;
	fake_verbs.ops.dealloc_mw = fake_dealloc_mw;
	fake_verbs.ops.create_srq_ex = fake_create_srq_ex;
	fake_verbs.ops.destroy_srq = fake_destroy_srq;
	fake_verbs.ops.create_qp_ex = fake_create_qp_ex;
	fake_verbs.ops.destroy_qp = fake_destroy_qp;
	fake_verbs.ops.modify_qp = fake_modify_qp;
	fake_verbs.ops.post_recv = fake_post_recv;
	fake_verbs.next_qp_num = 0x100;
	ofx_verbs_set(&fake_verbs.ops);
}

void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)evd->cq;
	char b = 1;

	pthread_mutex_lock(&f->lock);
	f->q[(f->head + f->count) % FAKE_CQ_MAX] = *wc;
	f->count++;
	if (f->armed) {
		f->armed = false;
		if (write(f->fch->wfd, &b, 1) != 1)
			atomic_fetch_add(&fake_verbs.write_failures, 1);
	}
	pthread_mutex_unlock(&f->lock);
}

void fake_spurious_channel_event(struct ofx_evd *evd)
{
	struct fake_cq *f = (struct fake_cq *)evd->cq;
	char b = 1;

	if (write(f->fch->wfd, &b, 1) != 1)
		atomic_fetch_add(&fake_verbs.write_failures, 1);
}

int fake_cq_pending(struct ofx_evd *evd)
{
	struct fake_cq *f = (struct fake_cq *)evd->cq;
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->count;
	pthread_mutex_unlock(&f->lock);
	return n;
}

void fake_ia_init(struct ofx_ia *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->obj.provider = &fake_provider;
	ia->obj.type = OFX_OBJ_IA;
	ia->obj.ia = ia;
	pthread_mutex_init(&ia->obj_lock, NULL);
	ofx_rmr_index_init(&ia->rmr_index);
	ofx_list_init(&ia->objects);
	ofx_list_init(&ia->zombies);
	ia->verbs = (struct ibv_context *)&fake_dummy_ctx;
	ia->dev_attr.max_cqe = 1024;
	ia->cfg.cq_batch = 16;
}

void fake_ia_fini(struct ofx_ia *ia)
{
	CU_ASSERT_TRUE(ofx_list_empty(&ia->objects));
	ofx_rmr_index_fini(&ia->rmr_index);
	pthread_mutex_destroy(&ia->obj_lock);
}

struct ofx_ep *fake_ep_new(uint32_t ring_size)
{
	struct ofx_ep *ep = calloc(1, sizeof(*ep));

	CU_ASSERT_FATAL(ep != NULL);
	ep->obj.type = OFX_OBJ_EP;
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, ring_size, ep) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, ring_size, ep) == 0);
	return ep;
}

void fake_ep_delete(struct ofx_ep *ep)
{
	ofx_cookie_ring_fini(&ep->send_ring);
	ofx_cookie_ring_fini(&ep->recv_ring);
	free(ep);
}

struct ibv_wc fake_send_wc(struct ofx_ep *ep, uint64_t user)
{
	struct ofx_cookie *c = ofx_cookie_ring_reserve(&ep->send_ring);
	struct ibv_wc wc;

	CU_ASSERT_FATAL(c != NULL);
	c->user.as_64 = user;
	c->len = 64;
	c->op = OFX_OP_SEND;
	c->flags = 0;
	ofx_cookie_ring_commit(&ep->send_ring);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = (uintptr_t)c;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_SEND;
	return wc;
}
