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
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fake_verbs fake_verbs;

static DAT_PROVIDER fake_provider;
/* a context with no device: logs name it "(none)" */
static struct ibv_context fake_dummy_ctx;

/* ---- objects ---------------------------------------------------------------- */

static int *kind_count(enum fake_kind kind)
{
	int *counts[FAKE_KINDS] = {
		[FAKE_QP] = &fake_verbs.qps, [FAKE_SRQ] = &fake_verbs.srqs,
		[FAKE_MW] = &fake_verbs.mws, [FAKE_CQ] = &fake_verbs.cqs,
		[FAKE_MR] = &fake_verbs.mrs, [FAKE_XRCD] = &fake_verbs.xrcds,
		[FAKE_PD] = &fake_verbs.pds, [FAKE_ID] = &fake_cm.ids,
	};

	return counts[kind];
}

void *fake_obj_new(enum fake_kind kind, size_t size, struct ibv_context *ctx)
{
	struct fake_obj *obj = calloc(1, size);

	CU_ASSERT_FATAL(obj != NULL);
	atomic_fetch_add(&fake_verbs.obj_bytes, malloc_usable_size(obj) + sizeof(size_t));
	obj->kind = kind;
	obj->ctx = ctx;
	pthread_mutex_lock(&fake_verbs.lock);
	ofx_list_add_tail(&fake_verbs.live[kind], &obj->link);
	(*kind_count(kind))++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return obj;
}

static void cm_drop_events(struct rdma_cm_id *id);

void fake_obj_close(struct fake_obj *obj)
{
	if (obj->closed)
		return;
	if (obj->release)
		obj->release(obj);
	if (obj->kind == FAKE_ID)
		cm_drop_events(&container_of(obj, struct fake_id, obj)->id);
	pthread_mutex_lock(&fake_verbs.lock);
	obj->closed = true;
	ofx_list_del(&obj->link);
	(*kind_count(obj->kind))--;
	pthread_mutex_unlock(&fake_verbs.lock);
}

void fake_obj_destroy(struct fake_obj *obj)
{
	fake_obj_close(obj);
	atomic_fetch_sub(&fake_verbs.obj_bytes, malloc_usable_size(obj) + sizeof(size_t));
	free(obj);
}

void fake_close_context(struct ibv_context *ctx)
{
	struct ofx_list *pos, *tmp;

	for (int kind = 0; kind < FAKE_KINDS; kind++)
		ofx_list_for_each_safe(pos, tmp, &fake_verbs.live[kind]) {
			struct fake_obj *obj = container_of(pos, struct fake_obj, link);

			if (obj->ctx == ctx)
				fake_obj_close(obj);
		}
}

/* ---- completion channels and CQs ------------------------------------------ */

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

	/* a deeper CQ than the device's fails like a device at its limit */
	if (cqe + fake_verbs.cq_extra > fake_verbs.cq_max) {
		errno = ENOMEM;
		return NULL;
	}
	f = fake_obj_new(FAKE_CQ, sizeof(*f), ctx);
	/* room for the deepest resize */
	f->slots = fake_verbs.cq_max;
	f->q = calloc(f->slots, sizeof(*f->q));
	CU_ASSERT_FATAL(f->q != NULL);
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
	struct fake_cq *f = fake_cq_of(cq);

	if (f->acked != f->events)
		fake_verbs.unbalanced++;
	pthread_mutex_destroy(&f->lock);
	free(f->q);
	fake_obj_destroy(&f->obj);
	return 0;
}

/*
 * A CQE is consumed before fake_verbs.cqe_parse reads it: a poll it fails
 * returns that error and loses the completions taken before it (mlx5).
 * A CQ the kernel closed yields nothing.
 */
static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *f = fake_cq_of(cq);
	int got = 0, ret = 0;

	pthread_mutex_lock(&f->lock);
	if (n > f->max_poll)
		f->max_poll = n;
	while (!f->obj.closed && got < n && f->count) {
		const struct fake_cqe *e = &f->q[f->head];

		f->head = (f->head + 1) % f->slots;
		f->count--;
		ret = fake_verbs.cqe_parse ? fake_verbs.cqe_parse(e) : 0;
		if (ret < 0)
			break;
		wc[got++] = e->wc;
	}
	pthread_mutex_unlock(&f->lock);
	return ret < 0 ? ret : got;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct fake_cq *f = fake_cq_of(cq);

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
	struct fake_cq *f = fake_cq_of(cq);

	pthread_mutex_lock(&f->lock);
	f->acked += n;
	pthread_mutex_unlock(&f->lock);
}

/*
 * The model CQ can grow up to the device's limit; beyond that it fails like
 * a device.  With fake_verbs.resize_errno set it cannot grow at all (siw:
 * EOPNOTSUPP).
 */
static int fake_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (fake_verbs.resize_errno)
		return -fake_verbs.resize_errno;
	if (cqe > fake_cq_of(cq)->slots)
		return -ENOMEM;
	cq->cqe = cqe;
	return 0;
}

/* ---- protection domains and memory --------------------------------------- */

static struct ibv_pd *fake_alloc_pd(struct ibv_context *ctx)
{
	struct fake_pd *f = fake_obj_new(FAKE_PD, sizeof(*f), ctx);

	f->pd.context = ctx;
	return &f->pd;
}

static int fake_dealloc_pd(struct ibv_pd *pd)
{
	/* errno value returned, as verbs does */
	if (fake_verbs.pd_busy_with_mrs && fake_verbs.mrs)
		return EBUSY;
	fake_obj_destroy(&container_of(pd, struct fake_pd, pd)->obj);
	return 0;
}

/*
 * Keys never repeat in a test: an MR's lkey and rkey differ (which one the
 * provider reports shows), and a window's key is an index above 8 tag bits.
 */
static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct fake_mr *f;

	if (fake_verbs.reg_errno) {
		errno = fake_verbs.reg_errno;
		return NULL;
	}
	f = fake_obj_new(FAKE_MR, sizeof(*f), pd->context);
	f->access = access;
	f->mr.pd = pd;
	f->mr.context = pd->context;
	f->mr.addr = addr;
	f->mr.length = len;
	f->mr.lkey = 0x1000 + fake_verbs.mr_keys;
	f->mr.rkey = 0x2000 + fake_verbs.mr_keys++;
	fake_verbs.last_access = access;
	return &f->mr;
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
	fake_obj_destroy(&container_of(mr, struct fake_mr, mr)->obj);
	return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct fake_mw *f = fake_obj_new(FAKE_MW, sizeof(*f), pd->context);

	f->mw.pd = pd;
	f->mw.context = pd->context;
	f->mw.type = type;
	f->mw.rkey = 0x5500 + (fake_verbs.mw_keys++ << 8);
	return &f->mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	fake_obj_destroy(&container_of(mw, struct fake_mw, mw)->obj);
	return 0;
}

/* A bind that the device takes advances the window's key, as ibv_bind_mw does. */
static int fake_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	fake_verbs.posts++;
	fake_verbs.binds++;
	if (fake_verbs.post_errno)
		return -fake_verbs.post_errno;
	mw->rkey = ibv_inc_rkey(mw->rkey);
	return 0;
}

/* ---- SRQs and QPs ------------------------------------------------------------ */

struct fake_srq *fake_srq_new(struct ibv_context *ctx, const struct ibv_srq_init_attr_ex *attr,
			      size_t size)
{
	struct fake_srq *f;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	f = fake_obj_new(FAKE_SRQ, size, ctx);
	f->srq.context = ctx;
	f->srq.srq_context = attr->srq_context;
	f->srq.pd = attr->pd;
	fake_verbs.srq_max_wr = attr->attr.max_wr;
	return f;
}

static struct ibv_srq *fake_create_srq_ex(struct ibv_context *ctx,
					  struct ibv_srq_init_attr_ex *attr)
{
	struct fake_srq *f = fake_srq_new(ctx, attr, sizeof(*f));

	return f ? &f->srq : NULL;
}

static int fake_destroy_srq(struct ibv_srq *srq)
{
	fake_obj_destroy(&container_of(srq, struct fake_srq, srq)->obj);
	return 0;
}

struct fake_qp *fake_qp_new(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *attr,
			    size_t size)
{
	struct fake_qp *f = fake_obj_new(FAKE_QP, size, ctx);

	/* the real kernel ignores receive caps of a QP fed by an SRQ */
	CU_ASSERT(!attr->srq || (attr->cap.max_recv_wr == 0 && attr->cap.max_recv_sge == 0));
	f->qp.context = ctx;
	f->qp.qp_num = fake_verbs.next_num++;
	f->qp.qp_context = attr->qp_context;
	f->qp.qp_type = attr->qp_type;
	f->qp.srq = attr->srq;
	f->qp.pd = attr->pd;
	f->qp.send_cq = attr->send_cq;
	f->qp.recv_cq = attr->recv_cq;
	f->qp.state = IBV_QPS_RESET;
	return f;
}

static struct ibv_qp *fake_create_qp_ex(struct ibv_context *ctx,
					struct ibv_qp_init_attr_ex *attr)
{
	return &fake_qp_new(ctx, attr, sizeof(struct fake_qp))->qp;
}

static int fake_destroy_qp(struct ibv_qp *qp)
{
	fake_obj_destroy(&container_of(qp, struct fake_qp, qp)->obj);
	return 0;
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

/* The state modify_qp set; the rest as a fresh QP has it. */
static int fake_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			 struct ibv_qp_init_attr *init)
{
	(void)mask;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	init->qp_type = qp->qp_type;
	return 0;
}

/* Records each send work request (fake_cm.sends: the RTR among them). */
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

/* A QP fed by an SRQ refuses receives of its own. */
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	*bad = wr;
	fake_verbs.posts++;
	if (fake_verbs.post_errno)
		return -fake_verbs.post_errno;
	if (qp->srq)
		return -EINVAL;
	for (; wr; wr = wr->next)
		fake_verbs.last_recv_wr_id = wr->wr_id;
	return 0;
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

/* ---- XRC: a device without it ---------------------------------------------- */

static struct ibv_xrcd *fake_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int fake_close_xrcd(struct ibv_xrcd *xrcd)
{
	return EOPNOTSUPP;
}

static struct ibv_qp *fake_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int fake_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	return EOPNOTSUPP;
}

/* ---- rdma_cm ---------------------------------------------------------------- */

struct fake_cm fake_cm;

struct fake_cm_event {
	struct ofx_list link;		/* in fake_cm.events until rdma_get_cm_event takes it */
	struct rdma_cm_event ev;
	unsigned char data[256];
};

/* The channel's fd is never read: events reach the provider through fake_cm_deliver(). */
static struct rdma_event_channel *fake_create_event_channel(void)
{
	struct rdma_event_channel *ch = calloc(1, sizeof(*ch));

	CU_ASSERT_FATAL(ch != NULL);
	ch->fd = -1;
	return ch;
}

static void fake_destroy_event_channel(struct rdma_event_channel *ch)
{
	CU_ASSERT_EQUAL(fake_cm_pending(ch), 0);
	free(ch);
}

struct fake_id *fake_cm_id_new(struct rdma_event_channel *ch, void *ctx, enum rdma_port_space ps,
			       size_t size)
{
	struct fake_id *f = fake_obj_new(FAKE_ID, size, NULL);

	f->id.channel = ch;
	f->id.context = ctx;
	f->id.ps = ps;
	fake_cm.last_id = &f->id;
	return f;
}

int fake_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
		      enum rdma_port_space ps)
{
	*id = &fake_cm_id_new(ch, ctx, ps, sizeof(struct fake_id))->id;
	return 0;
}

int fake_cm_destroy_id(struct rdma_cm_id *id)
{
	fake_obj_destroy(&container_of(id, struct fake_id, id)->obj);
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
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH &&
	    optlen >= sizeof(fake_cm.path)) {
		fake_cm.path_sets++;
		memcpy(&fake_cm.path, optval, sizeof(fake_cm.path));
	}
	return 0;
}

/* The caller's buffer is gone once the call returns: the bytes are copied. */
static void keep_pdata(const void *pdata, int len)
{
	CU_ASSERT_FATAL(len >= 0 && len <= (int)sizeof(fake_cm.pdata));
	memset(fake_cm.pdata, 0, sizeof(fake_cm.pdata));
	if (len)
		memcpy(fake_cm.pdata, pdata, len);
	fake_cm.pdata_len = len;
}

static void keep_param(const struct rdma_conn_param *param)
{
	fake_cm.conn = *param;
	keep_pdata(param->private_data, param->private_data_len);
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
	keep_pdata(pdata, len);
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

/* The oldest queued event of `ch`, or NULL.  fake_verbs.lock held. */
static struct fake_cm_event *first_event(struct rdma_event_channel *ch)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &fake_cm.events) {
		struct fake_cm_event *e = container_of(pos, struct fake_cm_event, link);

		if (e->ev.id->channel == ch)
			return e;
	}
	return NULL;
}

static void take_event(struct fake_cm_event *e)
{
	ofx_list_del(&e->link);
	fake_cm.nevents--;
}

static int fake_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct fake_cm_event *e;

	pthread_mutex_lock(&fake_verbs.lock);
	e = first_event(ch);
	if (e)
		take_event(e);
	pthread_mutex_unlock(&fake_verbs.lock);
	if (!e) {
		errno = EAGAIN;
		return -1;
	}
	*ev = &e->ev;
	return 0;
}

static int fake_ack_cm_event(struct rdma_cm_event *ev)
{
	free(container_of(ev, struct fake_cm_event, ev));
	return 0;
}

/* ucma_destroy_id: the events of a destroyed id nobody took go with it. */
static void cm_drop_events(struct rdma_cm_id *id)
{
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&fake_verbs.lock);
	ofx_list_for_each_safe(pos, tmp, &fake_cm.events) {
		struct fake_cm_event *e = container_of(pos, struct fake_cm_event, link);

		if (e->ev.id == id) {
			take_event(e);
			free(e);
		}
	}
	pthread_mutex_unlock(&fake_verbs.lock);
}

int fake_cm_pending(struct rdma_event_channel *ch)
{
	struct ofx_list *pos, *tmp;
	int n = 0;

	pthread_mutex_lock(&fake_verbs.lock);
	ofx_list_for_each_safe(pos, tmp, &fake_cm.events)
		n += container_of(pos, struct fake_cm_event, link)->ev.id->channel == ch;
	pthread_mutex_unlock(&fake_verbs.lock);
	return n;
}

struct rdma_cm_event *fake_cm_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type,
				    int status, const void *pdata, int len)
{
	struct fake_cm_event *e = calloc(1, sizeof(*e));

	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_FATAL(len >= 0 && len <= (int)sizeof(e->data));
	e->ev.id = id;
	e->ev.event = type;
	e->ev.status = status;
	if (len)
		memcpy(e->data, pdata, len);
	/* the ud parameters share the conn ones' place */
	e->ev.param.conn.private_data = len ? e->data : NULL;
	e->ev.param.conn.private_data_len = (uint8_t)len;
	pthread_mutex_lock(&fake_verbs.lock);
	ofx_list_add_tail(&fake_cm.events, &e->link);
	fake_cm.nevents++;
	pthread_mutex_unlock(&fake_verbs.lock);
	CU_ASSERT_FATAL(fake_cm.nevents <= FAKE_CM_EVENTS);
	return &e->ev;
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
	ev = fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pdata, len);
	ev->listen_id = listen_id;
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
	while (fake_cm_pending(ia->cm_channel))
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

/* ---- installing it ---------------------------------------------------------- */

const struct ofx_verbs_ops fake_verbs_core = {
	.alloc_pd = fake_alloc_pd,
	.dealloc_pd = fake_dealloc_pd,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
	.alloc_mw = fake_alloc_mw,
	.dealloc_mw = fake_dealloc_mw,
	.bind_mw = fake_bind_mw,

	.create_comp_channel = fake_create_comp_channel,
	.destroy_comp_channel = fake_destroy_comp_channel,
	.create_cq = fake_create_cq,
	.destroy_cq = fake_destroy_cq,
	.resize_cq = fake_resize_cq,
	.poll_cq = fake_poll_cq,
	.req_notify_cq = fake_req_notify_cq,
	.get_cq_event = fake_get_cq_event,
	.ack_cq_events = fake_ack_cq_events,

	.create_qp_ex = fake_create_qp_ex,
	.open_qp = fake_open_qp,
	.modify_qp = fake_modify_qp,
	.query_qp = fake_query_qp,
	.destroy_qp = fake_destroy_qp,
	.post_send = fake_post_send,
	.post_recv = fake_post_recv,
	.create_srq_ex = fake_create_srq_ex,
	.modify_srq = fake_modify_srq,
	.destroy_srq = fake_destroy_srq,
	.post_srq_recv = fake_post_srq_recv,
	.get_srq_num = fake_get_srq_num,
	.open_xrcd = fake_open_xrcd,
	.close_xrcd = fake_close_xrcd,

	.create_event_channel = fake_create_event_channel,
	.destroy_event_channel = fake_destroy_event_channel,
	.create_id = fake_cm_create_id,
	.destroy_id = fake_cm_destroy_id,
	.bind_addr = fake_bind_addr,
	.resolve_addr = fake_resolve_addr,
	.resolve_route = fake_resolve_route,
	.listen = fake_listen,
	.connect = fake_connect,
	.accept = fake_accept,
	.reject = fake_reject,
	.establish = fake_establish,
	.disconnect = fake_disconnect,
	.init_qp_attr = fake_init_qp_attr,
	.set_option = fake_set_option,
	.get_cm_event = fake_get_cm_event,
	.ack_cm_event = fake_ack_cm_event,
};

/* What a test that failed half-way left queued. */
static void drop_all_events(void)
{
	struct ofx_list *pos, *tmp;

	if (!fake_cm.events.next)
		return;		/* never installed */
	ofx_list_for_each_safe(pos, tmp, &fake_cm.events)
		free(container_of(pos, struct fake_cm_event, link));
}

void fake_verbs_install(void)
{
	drop_all_events();
	memset(&fake_verbs, 0, sizeof(fake_verbs));
	memset(&fake_cm, 0, sizeof(fake_cm));
	fake_verbs.ops = fake_verbs_core;
	for (int kind = 0; kind < FAKE_KINDS; kind++)
		ofx_list_init(&fake_verbs.live[kind]);
	pthread_mutex_init(&fake_verbs.lock, NULL);
	ofx_list_init(&fake_cm.events);
	fake_verbs.cq_max = FAKE_CQ_MAX;
	fake_verbs.next_num = 0x100;
	ofx_verbs_set(&fake_verbs.ops);
}

/* The CQ's completion channel reports it (a channel event). */
static void cq_raise_event(struct fake_cq *f)
{
	if (write(f->fch->wfd, &f, sizeof(f)) != sizeof(f))
		atomic_fetch_add(&fake_verbs.write_failures, 1);
}

/* An armed CQ fires once and is disarmed (f->lock held); false: it was not armed. */
static bool cq_fire_locked(struct fake_cq *f)
{
	if (!f->armed)
		return false;
	f->armed = false;
	cq_raise_event(f);
	return true;
}

void fake_cq_push_cqe(struct ibv_cq *cq, const struct fake_cqe *cqe)
{
	struct fake_cq *f = fake_cq_of(cq);
	bool full;

	pthread_mutex_lock(&f->lock);
	full = f->count == f->slots;
	if (!full) {
		f->q[(f->head + f->count) % f->slots] = *cqe;
		f->count++;
	}
	if (!full)
		cq_fire_locked(f);
	pthread_mutex_unlock(&f->lock);
	CU_ASSERT_FATAL(!full);
}

void fake_cq_push_cq(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct fake_cqe cqe = { .wc = *wc };

	fake_cq_push_cqe(cq, &cqe);
}

void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc)
{
	fake_cq_push_cq(evd->cq, wc);
}

void fake_cq_clean(struct ibv_cq *cq, uint32_t qpn)
{
	struct fake_cq *f;
	int k = 0;

	if (!cq)
		return;
	f = fake_cq_of(cq);
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->count; i++) {
		const struct fake_cqe *e = &f->q[(f->head + i) % f->slots];

		if (e->srqn || e->wc.qp_num != qpn)
			f->q[(f->head + k++) % f->slots] = *e;
	}
	f->count = k;
	pthread_mutex_unlock(&f->lock);
}

bool fake_cq_armed(struct ibv_cq *cq)
{
	struct fake_cq *f = fake_cq_of(cq);
	bool armed;

	pthread_mutex_lock(&f->lock);
	armed = f->armed;
	pthread_mutex_unlock(&f->lock);
	return armed;
}

bool fake_cq_fire(struct ibv_cq *cq)
{
	struct fake_cq *f = fake_cq_of(cq);
	bool armed;

	pthread_mutex_lock(&f->lock);
	armed = cq_fire_locked(f);
	pthread_mutex_unlock(&f->lock);
	return armed;
}

void fake_spurious_channel_event(struct ofx_evd *evd)
{
	cq_raise_event(fake_cq_of(evd->cq));
}

int fake_cq_pending(struct ofx_evd *evd)
{
	struct fake_cq *f = fake_cq_of(evd->cq);
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
	ia->verbs = &fake_dummy_ctx;
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
	CU_ASSERT_EQUAL(fake_cm.nevents, 0);
	CU_ASSERT_EQUAL(fake_verbs.qps + fake_verbs.cqs + fake_verbs.pds, 0);
}

void fake_ia_fini(struct ofx_ia *ia)
{
	CU_ASSERT_TRUE(ofx_list_empty(&ia->objects));
	ofx_rmr_index_fini(&ia->rmr_index);
	pthread_mutex_destroy(&ia->obj_lock);
}

void fake_pz_init(struct ofx_pz *pz, struct ofx_ia *ia, struct ibv_pd *pd)
{
	memset(pz, 0, sizeof(*pz));
	pz->obj.provider = ia->obj.provider;
	pz->obj.type = OFX_OBJ_PZ;
	pz->obj.ia = ia;
	pz->pd = pd;
	atomic_init(&pz->refs, 0);
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
