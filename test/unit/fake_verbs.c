/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "fake_verbs.h"

#include "cm.h"
#include "config.h"
#include "dto.h"
#include "progress.h"
#include "rmr.h"

#include <arpa/inet.h>
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
	fake_verbs.channels++;
	return &f->ch;
}

static int fake_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct fake_channel *f = (struct fake_channel *)ch;

	close(f->ch.fd);
	close(f->wfd);
	free(f);
	fake_verbs.channels--;
	return 0;
}

static struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				     struct ibv_comp_channel *ch, int vec)
{
	struct fake_cq *f;

	/* the model's queue has FAKE_CQ_MAX slots: a deeper CQ fails like a device at its limit */
	if (cqe + fake_verbs.cq_extra > FAKE_CQ_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
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
	fake_verbs.cqs++;
	return &f->cq;
}

static int fake_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	if (f->acked != f->events)
		fake_verbs.unbalanced++;
	fake_verbs.cqs--;
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

/* The channel's pipe carries the address of each CQ that fired: one channel may serve several. */
static int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	struct fake_cq *f;

	if (read(ch->fd, &f, sizeof(f)) != sizeof(f))
		return -1;	/* errno EAGAIN from the non-blocking pipe */
	pthread_mutex_lock(&f->lock);
	f->events++;
	pthread_mutex_unlock(&f->lock);
	*cq = &f->cq;
	*ctx = f->cq.cq_context;
	return 0;
}

static void fake_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->acked += n;
	pthread_mutex_unlock(&f->lock);
}

/*
 * The model CQ can grow up to its array; beyond that it fails like a device.
 * With fake_verbs.resize_errno set it cannot grow at all (siw: EOPNOTSUPP).
 */
static int fake_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (fake_verbs.resize_errno)
		return -fake_verbs.resize_errno;
	if (cqe > FAKE_CQ_MAX)
		return -ENOMEM;
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
	fake_verbs.posts++;
	if (fake_verbs.post_errno)
		return -fake_verbs.post_errno;
	return qp->srq ? -EINVAL : 0;
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	*bad = wr;
	fake_verbs.posts++;
	return fake_verbs.post_errno ? -fake_verbs.post_errno : 0;
}

static int fake_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return 0;
}

static int fake_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	fake_verbs.posts++;
	return fake_verbs.post_errno ? -fake_verbs.post_errno : 0;
}

/* ---- rdma_cm ---------------------------------------------------------------- */

struct fake_cm fake_cm;

int fake_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
			  enum rdma_port_space ps)
{
	*id = calloc(1, sizeof(**id));
	if (!*id) {
		errno = ENOMEM;
		return -1;
	}
	(*id)->channel = ch;
	(*id)->context = ctx;
	(*id)->ps = ps;
	fake_cm.ids++;
	fake_cm.last_id = *id;
	return 0;
}

int fake_cm_destroy_id(struct rdma_cm_id *id)
{
	fake_cm.ids--;
	free(id);
	return 0;
}


static int fake_listen(struct rdma_cm_id *id, int backlog)
{
	fake_cm.listens++;
	return 0;
}

/* A call that fails on demand: errno set, -1 returned, as librdmacm does. */
static int fake_cm_result(int err)
{
	if (!err)
		return 0;
	errno = err;
	return -1;
}

static int fake_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			     int timeout_ms)
{
	fake_cm.resolve_addrs++;
	return fake_cm_result(fake_cm.resolve_addr_errno);
}

static int fake_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	fake_cm.resolve_routes++;
	return fake_cm_result(fake_cm.resolve_route_errno);
}

static int fake_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return fake_cm_result(fake_cm.bind_errno);
}

static int fake_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			   size_t optlen)
{
	fake_cm.set_options++;
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == 1)
		fake_cm.tos = *(uint8_t *)optval;
	return 0;
}

static void keep_param(const struct rdma_conn_param *param)
{
	fake_cm.conn = *param;
	fake_cm.pdata_len = param->private_data_len;
	if (param->private_data_len)
		memcpy(fake_cm.pdata, param->private_data, param->private_data_len);
	fake_cm.conn.private_data = fake_cm.pdata;
}

static int fake_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	fake_cm.connects++;
	keep_param(param);
	return fake_cm_result(fake_cm.connect_errno);
}

static int fake_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	fake_cm.accepts++;
	keep_param(param);
	return fake_cm_result(fake_cm.accept_errno);
}

static int fake_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	fake_cm.rejects++;
	fake_cm.pdata_len = len;
	if (len)
		memcpy(fake_cm.pdata, pdata, len);
	return 0;
}

static int fake_establish(struct rdma_cm_id *id)
{
	fake_cm.establishes++;
	return 0;
}

static int fake_disconnect(struct rdma_cm_id *id)
{
	fake_cm.disconnects++;
	return 0;
}

static int fake_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	*mask = IBV_QP_STATE;
	return fake_cm_result(fake_cm.init_qp_attr_errno);
}

static int fake_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	if (!fake_cm.qcount) {
		errno = EAGAIN;
		return -1;
	}
	*ev = &fake_cm.q[fake_cm.qhead].ev;
	fake_cm.qhead = (fake_cm.qhead + 1) % FAKE_CM_EVENTS;
	fake_cm.qcount--;
	return 0;
}

static int fake_ack_cm_event(struct rdma_cm_event *ev)
{
	return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	fake_verbs.posts++;
	if (fake_verbs.post_errno) {
		*bad = wr;
		return -fake_verbs.post_errno;
	}
	for (; wr; wr = wr->next) {
		struct fake_send *s = &fake_cm.sends[fake_cm.nsends % FAKE_SENDS];

		*s = (struct fake_send){ .opcode = wr->opcode, .num_sge = wr->num_sge,
					 .len = wr->num_sge ? wr->sg_list[0].length : 0,
					 .wr_id = wr->wr_id, .send_flags = wr->send_flags };
		fake_cm.nsends++;
	}
	return 0;
}

static struct rdma_cm_event *queue_slot(void)
{
	struct rdma_cm_event *ev;
	int i = (fake_cm.qhead + fake_cm.qcount) % FAKE_CM_EVENTS;

	CU_ASSERT_FATAL(fake_cm.qcount < FAKE_CM_EVENTS);
	fake_cm.qcount++;
	ev = &fake_cm.q[i].ev;
	memset(ev, 0, sizeof(*ev));
	return ev;
}

static void set_event_pdata(struct rdma_cm_event *ev, const void *pdata, int len)
{
	unsigned char *data = container_of(ev, typeof(fake_cm.q[0]), ev)->data;

	CU_ASSERT_FATAL(len >= 0 && len <= 256);
	if (len)
		memcpy(data, pdata, len);
	ev->param.conn.private_data = len ? data : NULL;
	ev->param.conn.private_data_len = (uint8_t)len;
}

void fake_cm_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		   const void *pdata, int len)
{
	struct rdma_cm_event *ev = queue_slot();

	ev->id = id;
	ev->event = type;
	ev->status = status;
	set_event_pdata(ev, pdata, len);
}

struct rdma_cm_id *fake_cm_queue_request(struct rdma_cm_id *listen_id, const void *pdata,
					 int len, uint8_t initiator_depth,
					 uint8_t responder_resources)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	/* as librdmacm does, the new id starts with the listener's context */
	CU_ASSERT_FATAL(fake_cm_create_id(listen_id->channel, &id, listen_id->context,
					  listen_id->ps) == 0);
	ev = queue_slot();
	ev->id = id;
	ev->listen_id = listen_id;
	ev->event = RDMA_CM_EVENT_CONNECT_REQUEST;
	set_event_pdata(ev, pdata, len);
	ev->param.conn.initiator_depth = initiator_depth;
	ev->param.conn.responder_resources = responder_resources;
	return id;
}

void fake_cm_set_peer(struct rdma_cm_id *id, const struct sockaddr_in *peer)
{
	memcpy(&id->route.addr.dst_addr, peer, sizeof(*peer));
}

void fake_cm_deliver(struct ofx_ia *ia)
{
	while (fake_cm.qcount)
		ofx_cm_process_events(ia);
}

DAT_EVENT_NUMBER fake_conn_event_wait(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;

	if (ofx_evd_wait(evd, 30 * 1000000, 1, &ev, &nmore) != DAT_SUCCESS)
		return 0;
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, ep);
	return ev.event_number;
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
	fake_verbs.ops.post_send = fake_post_send;
	fake_verbs.ops.post_srq_recv = fake_post_srq_recv;
	fake_verbs.ops.modify_srq = fake_modify_srq;
	fake_verbs.ops.bind_mw = fake_bind_mw;
	fake_verbs.next_qp_num = 0x100;
	memset(&fake_cm, 0, sizeof(fake_cm));
	fake_verbs.ops.create_id = fake_cm_create_id;
	fake_verbs.ops.destroy_id = fake_cm_destroy_id;
	fake_verbs.ops.bind_addr = fake_bind_addr;
	fake_verbs.ops.listen = fake_listen;
	fake_verbs.ops.resolve_addr = fake_resolve_addr;
	fake_verbs.ops.resolve_route = fake_resolve_route;
	fake_verbs.ops.set_option = fake_set_option;
	fake_verbs.ops.connect = fake_connect;
	fake_verbs.ops.accept = fake_accept;
	fake_verbs.ops.reject = fake_reject;
	fake_verbs.ops.establish = fake_establish;
	fake_verbs.ops.disconnect = fake_disconnect;
	fake_verbs.ops.init_qp_attr = fake_init_qp_attr;
	fake_verbs.ops.get_cm_event = fake_get_cm_event;
	fake_verbs.ops.ack_cm_event = fake_ack_cm_event;
	ofx_verbs_set(&fake_verbs.ops);
}

void fake_cq_push_cq(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->q[(f->head + f->count) % FAKE_CQ_MAX] = *wc;
	f->count++;
	if (f->armed) {
		f->armed = false;
		if (write(f->fch->wfd, &f, sizeof(f)) != sizeof(f))
			atomic_fetch_add(&fake_verbs.write_failures, 1);
	}
	pthread_mutex_unlock(&f->lock);
}

void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc)
{
	fake_cq_push_cq(evd->cq, wc);
}

bool fake_cq_armed(struct ibv_cq *cq)
{
	struct fake_cq *f = (struct fake_cq *)cq;
	bool armed;

	pthread_mutex_lock(&f->lock);
	armed = f->armed;
	pthread_mutex_unlock(&f->lock);
	return armed;
}

void fake_spurious_channel_event(struct ofx_evd *evd)
{
	struct fake_cq *f = (struct fake_cq *)evd->cq;

	if (write(f->fch->wfd, &f, sizeof(f)) != sizeof(f))
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

const DAT_EP_ATTR fake_rc_ep_attr = {
	.service_type = DAT_SERVICE_TYPE_RC,
	.max_message_size = 4096,
	.max_rdma_size = 4096,
	.max_recv_dtos = 4,
	.max_request_dtos = 4,
	.max_recv_iov = 1,
	.max_request_iov = 1,
	.max_rdma_read_in = 4,
	.max_rdma_read_out = 4,
};

void fake_cm_ia_init(struct ofx_ia *ia, enum ofx_transport transport)
{
	static int dummy_channel;
	struct sockaddr_in self = { .sin_family = AF_INET };

	fake_ia_init(ia);
	ofx_config_defaults(&ia->cfg);
	ia->transport = transport;
	ia->cm_channel = (struct rdma_event_channel *)&dummy_channel;
	ia->dev_attr.max_qp_wr = 256;
	ia->dev_attr.max_sge = 4;
	ia->dev_attr.max_qp_rd_atom = 4;
	ia->dev_attr.max_qp_init_rd_atom = 4;
	ia->port_attr.max_msg_sz = 1u << 30;
	self.sin_addr.s_addr = htonl(0xc0000201);
	memcpy(&ia->addr, &self, sizeof(self));
}

void fake_cm_ia_fini(struct ofx_ia *ia)
{
	if (ia->progress) {
		ofx_progress_stop(ia->progress);
		ia->progress = NULL;
	}
	ofx_verbs_set(NULL);
	fake_ia_fini(ia);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	CU_ASSERT_EQUAL(fake_verbs.qps + fake_verbs.cqs + fake_verbs.pds, 0);
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
	ep->transport = &ofx_ep_rc_transport;
	ep->recv = &ofx_ep_rq_recv;
	ofx_ep_cookie_owner_init(ep);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, ring_size, &ep->cookie_owner) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, ring_size, &ep->cookie_owner) == 0);
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
