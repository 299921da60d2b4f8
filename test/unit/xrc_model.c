/* SPDX-License-Identifier: BSD-2-Clause */
#include "xrc_model.h"

#include "cm.h"
#include "cr.h"
#include "pdata.h"
#include "verbs.h"
#include "xrc.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#define XM_CQ_DEPTH 4096
#define XM_MAX_OBJS 256
#define XM_MAX_SGE 4
#define XM_MAX_CTL 1024
#define XM_MAX_PENDING 64
#define XM_PORT_BASE 20000

struct xm_cq {
	struct ibv_cq cq;
	struct ibv_wc q[XM_CQ_DEPTH];
	int head, n;
};

struct xm_domain {
	int node;
	ino_t ino;			/* 0: private */
	int refs;			/* open ibv_xrcd handles */
};

struct xm_xrcd {
	struct ibv_xrcd xrcd;
	struct xm_domain *dom;
};

struct xm_recv {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[XM_MAX_SGE];
};

struct xm_srq {
	struct ibv_srq srq;
	int node;
	struct xm_domain *dom;
	uint32_t srqn;
	struct ibv_cq *cq;
	uint32_t max_wr;
	struct xm_recv q[XM_CQ_DEPTH];
	int head, n;
};

/* A TGT QP object; handles are xm_qp with ->tgt set. */
struct xm_tgt {
	int node;
	struct xm_domain *dom;
	uint32_t qpn;
	int handles;
};

struct xm_send {
	uint64_t wr_id;
	bool signaled;
	uint32_t srqn;
	bool write;			/* RDMA WRITE: names an SRQ, takes no receive */
	uint32_t len;
	uint8_t data[4096];
};

struct xm_qp {
	struct ibv_qp qp;
	int node;
	struct xm_tgt *tgt;		/* XRC_RECV handle */
	uint32_t dest;			/* XRC_SEND: TGT number */
	struct xm_send pend[XM_MAX_PENDING]; /* held by RNR, in order */
	int npend;
};

struct xm_ctl {
	struct xm_proc *from;
	struct sockaddr_in to;
	uint16_t port;
	uint8_t msg[OFX_XRC_CTL_LEN];
};

bool xm_rnr_limited;
bool xm_autopump = true;
bool xm_use_cm;

static struct ofx_verbs_ops model;
static DAT_PROVIDER test_provider;
static struct xm_proc *procs[XM_MAX_PROCS];
static int nprocs;
static struct xm_srq *srqs[XM_MAX_OBJS];
static struct xm_tgt *tgts[XM_MAX_OBJS];
static struct xm_qp *inis[XM_MAX_OBJS];
static int live_rc, live_ini, live_srq, live_cq, live_xrcd;
static struct xm_domain *domains[XM_MAX_OBJS];
static uint32_t next_num = 0x100;
static struct xm_ctl ctlq[XM_MAX_CTL];
static int nctl;
static uint8_t last_rej[148];
static int last_rej_len;
static struct rdma_cm_id dummy_id;

static struct xm_proc *proc_of(struct ibv_context *ctx)
{
	return container_of(ctx, struct xm_proc, ctx);
}

static void slot_add(void **tab, void *obj)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (!tab[i]) {
			tab[i] = obj;
			return;
		}
	CU_FAIL_FATAL("model table full");
}

static void slot_del(void **tab, void *obj)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (tab[i] == obj)
			tab[i] = NULL;
}

/* ---- CQs ----------------------------------------------------------------- */

static struct ibv_comp_channel *m_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return ch;
}

static int m_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}

static struct ibv_cq *m_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				  struct ibv_comp_channel *ch, int vec)
{
	struct xm_cq *m = calloc(1, sizeof(*m));

	m->cq.cqe = cqe;
	m->cq.cq_context = cq_context;
	m->cq.channel = ch;
	live_cq++;
	return &m->cq;
}

static int m_destroy_cq(struct ibv_cq *cq)
{
	live_cq--;
	free(container_of(cq, struct xm_cq, cq));
	return 0;
}

static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);
	int got = 0;

	while (got < n && m->n) {
		wc[got++] = m->q[m->head];
		m->head = (m->head + 1) % XM_CQ_DEPTH;
		m->n--;
	}
	return got;
}

static int m_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return 0;
}

static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);

	CU_ASSERT_FATAL(m->n < XM_CQ_DEPTH);
	m->q[(m->head + m->n) % XM_CQ_DEPTH] = *wc;
	m->n++;
}

/* ---- domains, SRQs ------------------------------------------------------- */

static struct ibv_xrcd *m_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	struct xm_proc *p = proc_of(ctx);
	struct xm_domain *dom = NULL;
	struct xm_xrcd *x;
	struct stat st = { 0 };

	if (attr->fd >= 0) {
		if (fstat(attr->fd, &st))
			return NULL;
		for (int i = 0; i < XM_MAX_OBJS; i++)
			if (domains[i] && domains[i]->node == p->node &&
			    domains[i]->ino == st.st_ino)
				dom = domains[i];
	}
	if (!dom) {
		dom = calloc(1, sizeof(*dom));
		dom->node = p->node;
		dom->ino = attr->fd >= 0 ? st.st_ino : 0;
		slot_add((void **)domains, dom);
	}
	dom->refs++;
	x = calloc(1, sizeof(*x));
	x->xrcd.context = ctx;
	x->dom = dom;
	live_xrcd++;
	return &x->xrcd;
}

static int m_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct xm_xrcd *x = container_of(xrcd, struct xm_xrcd, xrcd);

	if (--x->dom->refs == 0) {
		slot_del((void **)domains, x->dom);
		free(x->dom);
	}
	live_xrcd--;
	free(x);
	return 0;
}

static struct xm_domain *dom_of(struct ibv_xrcd *xrcd)
{
	return container_of(xrcd, struct xm_xrcd, xrcd)->dom;
}

static struct ibv_srq *m_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	struct xm_srq *s;

	if (attr->srq_type != IBV_SRQT_XRC || !attr->xrcd || !attr->cq || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	s->srq.context = ctx;
	s->srq.srq_context = attr->srq_context;
	s->node = proc_of(ctx)->node;
	s->dom = dom_of(attr->xrcd);
	s->srqn = next_num++;
	s->cq = attr->cq;
	s->max_wr = attr->attr.max_wr;
	slot_add((void **)srqs, s);
	live_srq++;
	return &s->srq;
}

static int m_destroy_srq(struct ibv_srq *srq)
{
	struct xm_srq *s = container_of(srq, struct xm_srq, srq);

	slot_del((void **)srqs, s);
	live_srq--;
	free(s);
	return 0;
}

static int m_get_srq_num(struct ibv_srq *srq, uint32_t *n)
{
	*n = container_of(srq, struct xm_srq, srq)->srqn;
	return 0;
}

static void progress_pending(void);

static int m_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct xm_srq *s = container_of(srq, struct xm_srq, srq);

	for (; wr; wr = wr->next) {
		struct xm_recv *r;

		if ((uint32_t)s->n >= s->max_wr || wr->num_sge > XM_MAX_SGE) {
			*bad = wr;
			return ENOMEM;
		}
		r = &s->q[(s->head + s->n) % XM_CQ_DEPTH];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
		s->n++;
	}
	progress_pending();
	return 0;
}

/* ---- QPs ------------------------------------------------------------------- */

static struct xm_tgt *tgt_find(int node, uint32_t qpn)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (tgts[i] && tgts[i]->qpn == qpn && (node < 0 || tgts[i]->node == node))
			return tgts[i];
	return NULL;
}

static struct ibv_qp *m_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct xm_qp *q = calloc(1, sizeof(*q));

	q->qp.context = ctx;
	q->qp.qp_context = attr->qp_context;
	q->qp.qp_type = attr->qp_type;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_num = next_num++;
	q->node = proc_of(ctx)->node;
	switch (attr->qp_type) {
	case IBV_QPT_XRC_RECV:
		CU_ASSERT_FATAL(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD);
		q->tgt = calloc(1, sizeof(*q->tgt));
		q->tgt->node = q->node;
		q->tgt->dom = dom_of(attr->xrcd);
		q->tgt->qpn = q->qp.qp_num;
		q->tgt->handles = 1;
		slot_add((void **)tgts, q->tgt);
		break;
	case IBV_QPT_XRC_SEND:
		CU_ASSERT_FATAL(attr->send_cq && attr->pd);
		slot_add((void **)inis, q);
		live_ini++;
		break;
	default:
		live_rc++;
		break;
	}
	return &q->qp;
}

static struct ibv_qp *m_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	struct xm_tgt *t = tgt_find(proc_of(ctx)->node, attr->qp_num);
	struct xm_qp *q;

	if (!t || t->dom != dom_of(attr->xrcd)) {
		errno = ENOENT;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	q->qp.context = ctx;
	q->qp.qp_type = IBV_QPT_XRC_RECV;
	q->qp.qp_num = t->qpn;
	q->qp.state = IBV_QPS_RTR;
	q->node = t->node;
	q->tgt = t;
	t->handles++;
	return &q->qp;
}

static int m_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);

	/* what the kernel refuses for an INI QP: no responder, no remote access */
	if (qp->qp_type == IBV_QPT_XRC_SEND &&
	    (mask & (IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return EINVAL;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	if (mask & IBV_QP_DEST_QPN)
		q->dest = attr->dest_qp_num;
	return 0;
}

static int m_destroy_qp(struct ibv_qp *qp)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);

	if (q->tgt) {
		if (--q->tgt->handles == 0) {
			slot_del((void **)tgts, q->tgt);
			free(q->tgt);
		}
	} else if (qp->qp_type == IBV_QPT_XRC_SEND) {
		slot_del((void **)inis, q);
		live_ini--;
	} else {
		live_rc--;
	}
	free(q);
	return 0;
}

static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return 0; /* an RC QP never receives in these tests */
}

static void send_wc(struct xm_qp *q, uint64_t wr_id, enum ibv_wc_status st, bool signaled)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = st, .opcode = IBV_WC_SEND,
			     .qp_num = q->qp.qp_num };

	if (signaled || st != IBV_WC_SUCCESS)
		cq_push(q->qp.send_cq, &wc);
}

/* The INI QP fails: the WR gets `st`, everything held behind it is flushed. */
static void ini_error(struct xm_qp *q, uint64_t wr_id, enum ibv_wc_status st)
{
	q->qp.state = IBV_QPS_ERR;
	send_wc(q, wr_id, st, true);
	for (int i = 0; i < q->npend; i++)
		if (q->pend[i].wr_id != wr_id)
			send_wc(q, q->pend[i].wr_id, IBV_WC_WR_FLUSH_ERR, true);
	q->npend = 0;
}

static struct xm_srq *srq_find(struct xm_tgt *t, uint32_t srqn)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (srqs[i] && srqs[i]->srqn == srqn && srqs[i]->node == t->node &&
		    srqs[i]->dom == t->dom)
			return srqs[i];
	return NULL;
}

/* Tries to deliver the oldest held send of `q`; false if it must wait. */
static bool deliver(struct xm_qp *q, struct xm_send *s)
{
	struct xm_tgt *t = tgt_find(-1, q->dest);
	struct xm_srq *srq;
	struct xm_recv *r;
	struct ibv_wc wc = { 0 };
	uint32_t off = 0;

	if (!t) {
		ini_error(q, s->wr_id, IBV_WC_RETRY_EXC_ERR);
		return false;
	}
	/* every XRC request names an SRQ of the TGT's domain, RDMA WRITEs too */
	srq = srq_find(t, s->srqn);
	if (!srq) {
		ini_error(q, s->wr_id, IBV_WC_REM_INV_REQ_ERR);
		return false;
	}
	if (s->write) { /* only the zero-length fence here */
		send_wc(q, s->wr_id, IBV_WC_SUCCESS, s->signaled);
		return true;
	}
	if (!srq->n) {
		if (xm_rnr_limited)
			ini_error(q, s->wr_id, IBV_WC_RNR_RETRY_EXC_ERR);
		return false;
	}
	r = &srq->q[srq->head];
	srq->head = (srq->head + 1) % XM_CQ_DEPTH;
	srq->n--;
	for (int i = 0; i < r->nsge && off < s->len; i++) {
		uint32_t n = s->len - off < r->sge[i].length ? s->len - off : r->sge[i].length;

		memcpy((void *)(uintptr_t)r->sge[i].addr, s->data + off, n);
		off += n;
	}
	wc.wr_id = r->wr_id;
	wc.status = off < s->len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = s->len;
	wc.qp_num = t->qpn;
	wc.src_qp = q->qp.qp_num;
	cq_push(srq->cq, &wc);
	send_wc(q, s->wr_id, IBV_WC_SUCCESS, s->signaled);
	return true;
}

static void progress_qp(struct xm_qp *q)
{
	while (q->npend && q->qp.state == IBV_QPS_RTS) {
		if (!deliver(q, &q->pend[0]))
			return;
		memmove(&q->pend[0], &q->pend[1], --q->npend * sizeof(q->pend[0]));
	}
}

static void progress_pending(void)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (inis[i] && inis[i]->npend)
			progress_qp(inis[i]);
}

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);

	if (qp->qp_type != IBV_QPT_XRC_SEND) {
		*bad = wr;
		return EINVAL; /* the RC QP of an XRC EP never sends in these tests */
	}
	for (; wr; wr = wr->next) {
		struct xm_send *s;

		if (qp->state == IBV_QPS_ERR) {
			send_wc(q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, true);
			continue;
		}
		if (qp->state != IBV_QPS_RTS || q->npend >= XM_MAX_PENDING) {
			*bad = wr;
			return EINVAL;
		}
		s = &q->pend[q->npend++];
		s->wr_id = wr->wr_id;
		s->signaled = wr->send_flags & IBV_SEND_SIGNALED;
		s->srqn = wr->qp_type.xrc.remote_srqn;
		s->write = wr->opcode == IBV_WR_RDMA_WRITE;
		CU_ASSERT(wr->qp_type.xrc.remote_srqn != 0);
		s->len = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			CU_ASSERT_FATAL(s->len + wr->sg_list[i].length <= sizeof(s->data));
			memcpy(s->data + s->len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			s->len += wr->sg_list[i].length;
		}
	}
	progress_qp(q);
	return 0;
}

static void cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len);

static int m_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	memset(last_rej, 0, sizeof(last_rej));
	if (len)
		memcpy(last_rej, pdata, len);
	last_rej_len = len;
	cm_reject(id, pdata, len);
	return 0;
}

/* ---- rdma_cm (the XRC carrier's ids: RDMA_PS_UDP and RDMA_PS_IB) --------- */

#define XM_MAX_EVENTS 256

struct xm_chan {
	struct rdma_event_channel ch;
	struct rdma_cm_event *q[XM_MAX_EVENTS];
	int n;
};

struct xm_ev {
	struct rdma_cm_event ev;
	uint8_t data[256];
};

struct xm_id {
	struct rdma_cm_id id;
	struct xm_proc *p;
	bool listening;
	struct xm_id *peer;		/* the other end of a connection */
	uint32_t qp_num;		/* what this end named in connect/accept */
	uint8_t rd_atom;
};

static struct xm_id *ids[XM_MAX_OBJS];
static int live_ids;
static int connects;		/* rdma_connect calls */

static struct xm_proc *proc_of_chan(struct rdma_event_channel *ch)
{
	for (int i = 0; i < XM_MAX_PROCS; i++)
		if (procs[i] && procs[i]->ia.cm_channel == ch)
			return procs[i];
	return NULL;
}

static void ev_queue(struct xm_id *to, enum rdma_cm_event_type type, int status,
		     struct xm_id *listen, const void *pdata, int len, bool ud)
{
	struct xm_chan *c = container_of(to->id.channel, struct xm_chan, ch);
	struct xm_ev *e = calloc(1, sizeof(*e));

	CU_ASSERT_FATAL(c->n < XM_MAX_EVENTS);
	e->ev.event = type;
	e->ev.status = status;
	e->ev.id = &to->id;
	e->ev.listen_id = listen ? &listen->id : NULL;
	if (pdata && len)
		memcpy(e->data, pdata, len);
	if (ud) {
		e->ev.param.ud.private_data = e->data;
		e->ev.param.ud.private_data_len = (uint8_t)len;
	} else {
		e->ev.param.conn.private_data = e->data;
		/* IB: the receiver sees the whole area of the message */
		e->ev.param.conn.private_data_len = (uint8_t)(len ? 56 : 0);
		e->ev.param.conn.initiator_depth = to->peer ? to->peer->rd_atom : 0;
	}
	c->q[c->n++] = &e->ev;
}

static int m_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id_p, void *ctx,
		       enum rdma_port_space ps)
{
	struct xm_id *m = calloc(1, sizeof(*m));

	m->p = proc_of_chan(ch);
	m->id.channel = ch;
	m->id.context = ctx;
	m->id.ps = ps;
	m->id.verbs = &m->p->ctx;
	m->id.route.addr.src_storage = m->p->ia.addr;
	slot_add((void **)ids, m);
	live_ids++;
	*id_p = &m->id;
	return 0;
}

static int m_destroy_id(struct rdma_cm_id *id)
{
	struct xm_id *m = container_of(id, struct xm_id, id);
	struct xm_chan *c = container_of(id->channel, struct xm_chan, ch);
	int k = 0;

	/* a connected IB peer hears a DREQ */
	if (m->peer && m->peer->peer == m) {
		m->peer->peer = NULL;
		if (id->ps == RDMA_PS_IB)
			ev_queue(m->peer, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	}
	for (int i = 0; i < c->n; i++) {
		if (c->q[i]->id == id)
			free(container_of(c->q[i], struct xm_ev, ev));
		else
			c->q[k++] = c->q[i];
	}
	c->n = k;
	slot_del((void **)ids, m);
	live_ids--;
	free(m);
	return 0;
}

static uint16_t id_port(const struct rdma_cm_id *id)
{
	return ntohs(((const struct sockaddr_in *)&id->route.addr.src_addr)->sin_port);
}

static int m_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	static uint16_t next_port = 40000;
	struct sockaddr_in *sin = &id->route.addr.src_sin;
	uint16_t port = ntohs(((struct sockaddr_in *)addr)->sin_port);

	for (int i = 0; port && i < XM_MAX_OBJS; i++)
		if (ids[i] && &ids[i]->id != id && ids[i]->id.ps == id->ps &&
		    ids[i]->p->node == container_of(id, struct xm_id, id)->p->node &&
		    id_port(&ids[i]->id) == port) {
			errno = EADDRINUSE;
			return -1;
		}
	memcpy(sin, addr, sizeof(*sin));
	sin->sin_port = htons(port ? port : next_port++);
	return 0;
}

static int m_listen(struct rdma_cm_id *id, int backlog)
{
	container_of(id, struct xm_id, id)->listening = true;
	return 0;
}

static int m_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	memcpy(&id->route.addr.dst_sin, dst, sizeof(struct sockaddr_in));
	ev_queue(container_of(id, struct xm_id, id), RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL, 0,
		 false);
	return 0;
}

static int m_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	ev_queue(container_of(id, struct xm_id, id), RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL,
		 0, false);
	return 0;
}

static int m_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct xm_id *m = container_of(id, struct xm_id, id), *l = NULL, *n;
	struct rdma_cm_id *nid;

	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (ids[i] && ids[i]->listening && ids[i]->id.ps == id->ps && !ids[i]->p->dead &&
		    ids[i]->id.route.addr.src_sin.sin_addr.s_addr ==
			    id->route.addr.dst_sin.sin_addr.s_addr &&
		    id_port(&ids[i]->id) == ntohs(id->route.addr.dst_sin.sin_port))
			l = ids[i];
	m->qp_num = param->qp_num;
	m->rd_atom = param->initiator_depth;
	connects++;
	if (!l) {
		if (id->ps == RDMA_PS_UDP)
			ev_queue(m, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0, true);
		else
			ev_queue(m, RDMA_CM_EVENT_REJECTED, 8, NULL, NULL, 0, false);
		return 0;
	}
	m_create_id(l->id.channel, &nid, l->id.context, id->ps);
	n = container_of(nid, struct xm_id, id);
	n->id.route.addr.src_storage = l->id.route.addr.src_storage;
	n->id.route.addr.dst_storage = id->route.addr.src_storage;
	n->peer = m;
	m->peer = n;
	ev_queue(n, RDMA_CM_EVENT_CONNECT_REQUEST, 0, l, param->private_data,
		 param->private_data_len, id->ps == RDMA_PS_UDP);
	return 0;
}

static int m_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	m->qp_num = param->qp_num;
	if (!m->peer)
		return 0;
	if (id->ps == RDMA_PS_UDP) {
		/* SIDR: the answer ends the exchange */
		m->peer->peer = NULL;
		ev_queue(m->peer, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, param->private_data,
			 param->private_data_len, true);
		m->peer = NULL;
		return 0;
	}
	ev_queue(m->peer, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, param->private_data,
		 param->private_data_len, false);
	return 0;
}

static int m_establish(struct rdma_cm_id *id)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	if (m->peer)
		ev_queue(m->peer, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0, false);
	return 0;
}

/* The attributes rdma_cm computes for an RC connection. */
static int m_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		attr->port_num = 1;
		break;
	case IBV_QPS_RTR:
		if (!m->peer) {
			errno = EINVAL;
			return -1;
		}
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		attr->dest_qp_num = m->peer->qp_num;
		break;
	default:
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	}
	return 0;
}

static int m_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct xm_chan *c = container_of(ch, struct xm_chan, ch);

	if (!c->n) {
		errno = EAGAIN;
		return -1;
	}
	*ev = c->q[0];
	memmove(&c->q[0], &c->q[1], --c->n * sizeof(c->q[0]));
	return 0;
}

static int m_ack_cm_event(struct rdma_cm_event *ev)
{
	free(container_of(ev, struct xm_ev, ev));
	return 0;
}

static bool cm_pump(void)
{
	bool any = false;

	for (int i = 0; i < nprocs; i++) {
		struct xm_proc *p = procs[i];

		if (p && p->ia.cm_channel &&
		    container_of(p->ia.cm_channel, struct xm_chan, ch)->n) {
			ofx_cm_process_events(&p->ia);
			any = true;
		}
	}
	return any;
}

/* ---- control messages ---------------------------------------------------- */

static void cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct xm_id *m = NULL;

	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (ids[i] && &ids[i]->id == id)
			m = ids[i];
	if (m && m->peer) {
		ev_queue(m->peer, RDMA_CM_EVENT_REJECTED, 28, NULL, pdata, len, false);
		m->peer->peer = NULL;
		m->peer = NULL;
	}
}

static struct xm_proc *proc_of_ia(struct ofx_ia *ia)
{
	return container_of(ia, struct xm_proc, ia);
}

static int m_send_ctl(struct ofx_ia *ia, const struct sockaddr *addr, uint16_t port,
		      const uint8_t msg[OFX_XRC_CTL_LEN], struct ibv_qp *qp)
{
	struct xm_ctl *c;

	if (proc_of_ia(ia)->dead)
		return 0; /* a killed process says nothing */
	if (nctl >= XM_MAX_CTL)
		return -ENOBUFS;
	c = &ctlq[nctl++];
	c->from = proc_of_ia(ia);
	memcpy(&c->to, addr, sizeof(c->to));
	c->port = port;
	memcpy(c->msg, msg, OFX_XRC_CTL_LEN);
	return 0;
}

static const struct ofx_xrc_transport xm_transport = { .send_ctl = m_send_ctl };

static struct xm_proc *proc_at(const struct sockaddr_in *a, uint16_t port)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i] && !procs[i]->dead &&
		    ((struct sockaddr_in *)&procs[i]->ia.addr)->sin_addr.s_addr ==
			    a->sin_addr.s_addr &&
		    ofx_xrc_service_port(&procs[i]->ia) == port)
			return procs[i];
	return NULL;
}

void xm_pump(void)
{
	bool busy = true;

	while (busy) {
		busy = false;
		while (nctl) {
			struct xm_ctl c = ctlq[0];
			uint8_t ans[OFX_XRC_CTL_LEN];
			struct xm_proc *to = proc_at(&c.to, c.port);
			bool answered;

			memmove(&ctlq[0], &ctlq[1], --nctl * sizeof(ctlq[0]));
			answered = to && !ofx_xrc_ctl_request(&to->ia,
							      (struct sockaddr *)&c.from->ia.addr,
							      c.msg, ans);
			if (!c.from->dead)
				ofx_xrc_ctl_answer(&c.from->ia, c.msg, answered ? ans : NULL);
			busy = true;
		}
		if (cm_pump())
			busy = true;
		for (int i = 0; i < nprocs; i++) {
			struct xm_proc *p = procs[i];

			if (!p || p->dead)
				continue;
			if (p->req_evd && ofx_evd_drain_cq(p->req_evd) > 0)
				busy = true;
		}
		if (nctl)
			busy = true;
	}
}

/* ---- processes ----------------------------------------------------------- */

void xm_init(void)
{
	model = ofx_verbs_real;
	model.create_comp_channel = m_create_comp_channel;
	model.destroy_comp_channel = m_destroy_comp_channel;
	model.create_cq = m_create_cq;
	model.destroy_cq = m_destroy_cq;
	model.poll_cq = m_poll_cq;
	model.req_notify_cq = m_req_notify_cq;
	model.open_xrcd = m_open_xrcd;
	model.close_xrcd = m_close_xrcd;
	model.create_srq_ex = m_create_srq_ex;
	model.destroy_srq = m_destroy_srq;
	model.get_srq_num = m_get_srq_num;
	model.post_srq_recv = m_post_srq_recv;
	model.create_qp_ex = m_create_qp_ex;
	model.open_qp = m_open_qp;
	model.modify_qp = m_modify_qp;
	model.destroy_qp = m_destroy_qp;
	model.post_send = m_post_send;
	model.post_recv = m_post_recv;
	model.reject = m_reject;
	model.create_id = m_create_id;
	model.destroy_id = m_destroy_id;
	model.bind_addr = m_bind_addr;
	model.listen = m_listen;
	model.resolve_addr = m_resolve_addr;
	model.resolve_route = m_resolve_route;
	model.connect = m_connect;
	model.accept = m_accept;
	model.establish = m_establish;
	model.init_qp_attr = m_init_qp_attr;
	model.get_cm_event = m_get_cm_event;
	model.ack_cm_event = m_ack_cm_event;
	ofx_verbs_set(&model);
	/* a test that failed half-way leaks: start from a clean model anyway */
	memset(procs, 0, sizeof(procs));
	memset(srqs, 0, sizeof(srqs));
	memset(tgts, 0, sizeof(tgts));
	memset(inis, 0, sizeof(inis));
	memset(domains, 0, sizeof(domains));
	memset(ids, 0, sizeof(ids));
	live_rc = live_ini = live_srq = live_cq = live_xrcd = live_ids = connects = 0;
	nprocs = nctl = 0;
	xm_rnr_limited = false;
	xm_autopump = true;
	xm_use_cm = false;
}

void xm_fini(void)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i])
			xm_proc_close(procs[i]);
	CU_ASSERT_EQUAL(live_rc, 0);
	CU_ASSERT_EQUAL(live_ini, 0);
	CU_ASSERT_EQUAL(live_srq, 0);
	CU_ASSERT_EQUAL(live_cq, 0);
	CU_ASSERT_EQUAL(live_xrcd, 0);
	CU_ASSERT_EQUAL(live_ids, 0);
	for (int i = 0; i < XM_MAX_OBJS; i++) {
		CU_ASSERT_PTR_NULL(tgts[i]);
		if (tgts[i]) {
			free(tgts[i]);
			tgts[i] = NULL;
		}
	}
	ofx_verbs_set(NULL);
}

int xm_proc_try_open(int node, const char *xrcd, bool foreign, struct xm_proc **proc_p)
{
	struct xm_proc *p = calloc(1, sizeof(*p));
	struct sockaddr_in *sin = (struct sockaddr_in *)&p->ia.addr;
	struct ofx_ia *ia = &p->ia;
	int ret;

	CU_ASSERT_FATAL(nprocs < XM_MAX_PROCS);
	p->node = node;
	ia->obj.provider = &test_provider;
	ia->obj.type = OFX_OBJ_IA;
	ia->obj.ia = ia;
	pthread_mutex_init(&ia->obj_lock, NULL);
	ofx_list_init(&ia->objects);
	ofx_list_init(&ia->zombies);
	ofx_config_defaults(&ia->cfg);
	snprintf(ia->cfg.xrcd, sizeof(ia->cfg.xrcd), "%s", xrcd);
	ia->cfg.xrcd_foreign = foreign;
	ia->cfg.cm_timeout_ms = 20;
	ia->dev_attr.max_qp_wr = 256;
	ia->dev_attr.max_sge = 4;
	ia->dev_attr.max_srq = 64;
	ia->dev_attr.max_srq_wr = 256;
	ia->dev_attr.max_srq_sge = 4;
	ia->dev_attr.max_qp_rd_atom = 4;
	ia->dev_attr.max_qp_init_rd_atom = 4;
	ia->port_attr.max_msg_sz = 1u << 30;
	ia->verbs = &p->ctx;
	ia->xrc = true;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)node);
	/* the process is known before ofx_xrc_ia_open binds its listeners */
	procs[nprocs] = p;
	if (xm_use_cm)
		ia->cm_channel = &((struct xm_chan *)calloc(1, sizeof(struct xm_chan)))->ch;
	ret = ofx_xrc_ia_open(ia);
	if (ret) {
		procs[nprocs] = NULL;
		free(ia->cm_channel);
		pthread_mutex_destroy(&ia->obj_lock);
		free(p);
		return ret;
	}
	if (!xm_use_cm)
		ofx_xrc_set_transport(ia, &xm_transport, NULL, (uint16_t)(XM_PORT_BASE + nprocs));
	CU_ASSERT_FATAL(ofx_evd_create_internal(ia, 64, DAT_EVD_ASYNC_FLAG, &ia->async_evd) == 0);
	CU_ASSERT_FATAL(ofx_evd_create_internal(ia, 1024, DAT_EVD_DTO_FLAG, &p->recv_evd) == 0);
	CU_ASSERT_FATAL(ofx_evd_create_internal(ia, 1024, DAT_EVD_DTO_FLAG, &p->req_evd) == 0);
	CU_ASSERT_FATAL(ofx_evd_create_internal(ia, 256, DAT_EVD_CONNECTION_FLAG,
						&p->conn_evd) == 0);
	p->pz.obj.provider = &test_provider;
	p->pz.obj.type = OFX_OBJ_PZ;
	p->pz.obj.ia = ia;
	p->pz.pd = &p->pd;
	atomic_init(&p->pz.refs, 0);
	nprocs++;
	*proc_p = p;
	return 0;
}

struct xm_proc *xm_proc_open(int node, const char *xrcd, enum ofx_xrc_tgt tgt)
{
	struct xm_proc *p = NULL;

	CU_ASSERT_EQUAL_FATAL(xm_proc_try_open(node, xrcd, false, &p), 0);
	p->ia.cfg.xrc_tgt = tgt;
	return p;
}

static void proc_forget(struct xm_proc *p)
{
	int k = 0;

	for (int i = 0; i < nprocs; i++)
		if (procs[i] == p)
			procs[i] = NULL;
	/* its requests in flight get no answer any more */
	for (int i = 0; i < nctl; i++)
		if (ctlq[i].from != p)
			ctlq[k++] = ctlq[i];
	nctl = k;
}

void xm_proc_close(struct xm_proc *p)
{
	struct ofx_ia *ia = &p->ia;
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);

		if (obj->type == OFX_OBJ_EP)
			ofx_ep_destroy(container_of(obj, struct ofx_ep, obj));
	}
	ofx_list_for_each_safe(pos, tmp, &ia->zombies) {
		ofx_list_del(pos);
		ofx_ep_free_zombie(container_of(pos, struct ofx_obj, ia_link));
	}
	ofx_evd_destroy(p->conn_evd);
	ofx_evd_destroy(p->req_evd);
	ofx_evd_destroy(p->recv_evd);
	ofx_evd_destroy(ia->async_evd);
	p->req_evd = NULL;
	ofx_xrc_ia_close(ia);
	if (ia->cm_channel) {
		struct xm_chan *c = container_of(ia->cm_channel, struct xm_chan, ch);

		while (c->n)
			free(container_of(c->q[--c->n], struct xm_ev, ev));
		free(c);
	}
	CU_ASSERT_TRUE(ofx_list_empty(&ia->objects));
	pthread_mutex_destroy(&ia->obj_lock);
	proc_forget(p);
	free(p);
}

void xm_proc_kill(struct xm_proc *p)
{
	/* the kernel's cleanup at exit: every resource goes, no DISC is sent */
	p->dead = true;
	xm_proc_close(p);
}

struct ofx_ep *xm_ep_new(struct xm_proc *p)
{
	DAT_EP_ATTR a;
	DAT_EP_HANDLE h = NULL;

	memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_recv_dtos = 8;
	a.max_request_dtos = 16;
	a.max_recv_iov = 1;
	a.max_request_iov = 1;
	a.max_message_size = 1u << 20;
	a.max_rdma_size = 1u << 20;
	CU_ASSERT_EQUAL_FATAL(ofx_ep_create(&p->ia, &p->pz, p->recv_evd, p->req_evd, p->conn_evd,
					    &a, &h),
			      DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(((struct ofx_ep *)h)->xrc);
	return h;
}

void xm_connect(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb,
		const void *pdata, int pdata_len, const void *acc, int acc_len)
{
	struct ofx_cr cr;
	struct rdma_cm_event ev;
	struct rdma_cm_id *destroy = NULL;
	bool offered = false, handled;
	int ret = -1;

	/* A: dat_ep_connect builds the offer */
	pthread_mutex_lock(&ea->lock);
	ea->remote_addr = b->ia.addr;
	ea->state = OFX_EP_ACTIVE_PENDING;
	CU_ASSERT_EQUAL(ofx_xrc_connect(ea, pdata, pdata_len, &offered), 0);
	CU_ASSERT_TRUE_FATAL(offered);
	pthread_mutex_unlock(&ea->lock);

	/* P: the REQ arrives as a CR, the consumer accepts */
	memset(&cr, 0, sizeof(cr));
	cr.cm_id = &dummy_id;
	cr.remote_addr = a->ia.addr;
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(ea->req_pdata, ea->req_pdata_len, &cr.hdr), 0);
	cr.has_hdr = true;
	pthread_mutex_lock(&eb->lock);
	eb->state = OFX_EP_PASSIVE_PENDING;
	handled = ofx_xrc_accept(eb, &cr, acc, acc_len, &ret);
	pthread_mutex_unlock(&eb->lock);
	CU_ASSERT_TRUE_FATAL(handled);
	CU_ASSERT_EQUAL_FATAL(ret, 0);

	/* A: the REJ with status 28 carries the accept (the full 148-byte area) */
	memset(&ev, 0, sizeof(ev));
	ev.event = RDMA_CM_EVENT_REJECTED;
	ev.status = 28;
	ev.id = &dummy_id;
	ev.param.conn.private_data = last_rej;
	ev.param.conn.private_data_len = sizeof(last_rej);
	pthread_mutex_lock(&ea->lock);
	CU_ASSERT_TRUE(ofx_xrc_rejected(ea, &ev, &destroy));
	pthread_mutex_unlock(&ea->lock);
	CU_ASSERT_PTR_EQUAL(destroy, &dummy_id);
	if (xm_autopump)
		xm_pump();
}

int xm_live_qps(int type)
{
	int n = 0;

	switch (type) {
	case IBV_QPT_XRC_SEND:
		return live_ini;
	case IBV_QPT_XRC_RECV:
		for (int i = 0; i < XM_MAX_OBJS; i++)
			n += tgts[i] != NULL;
		return n;
	default:
		return live_rc;
	}
}

int xm_live_srqs(void)
{
	return live_srq;
}

int xm_tgts_on_node(int node)
{
	int n = 0;

	for (int i = 0; i < XM_MAX_OBJS; i++)
		n += tgts[i] && tgts[i]->node == node;
	return n;
}

int xm_cm_connects(void)
{
	return connects;
}

const uint8_t *xm_last_reject(int *len_p)
{
	*len_p = last_rej_len;
	return last_rej;
}
