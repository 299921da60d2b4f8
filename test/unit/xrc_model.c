/* SPDX-License-Identifier: BSD-2-Clause */
#include "xrc_model.h"
#include "unit.h"

#include "cm.h"
#include "ep_cm.h"
#include "ep_xrc.h"
#include "ia.h"
#include "pdata.h"
#include "sp.h"
#include "verbs.h"
#include "xrc.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
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

/*
 * A CQE names the resource it belongs to, as mlx5's do (cqe version 1: the
 * user index of the QP, or of the XRC SRQ for a receive).  srqn is that SRQ
 * for a receive completion, 0 for a QP's.
 */
struct xm_cqe {
	struct ibv_wc wc;
	uint32_t srqn;
	uint64_t seq;			/* a send's: its place in its QP's send queue */
};

/*
 * Every object below carries `gone`: the kernel closed it when its process
 * died (xm_proc_kill).  What the dead process's memory still points to
 * stays allocated, and the calls that reclaim that memory afterwards
 * (xm_proc_close of the corpse) only free it.
 */
struct xm_cq {
	struct ibv_cq cq;
	bool gone;
	struct xm_cqe q[XM_CQ_DEPTH];
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
	bool gone;
};

struct xm_recv {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[XM_MAX_SGE];
};

struct xm_srq {
	struct ibv_srq srq;
	bool gone;
	int node;
	struct xm_domain *dom;
	uint32_t srqn;
	struct ibv_cq *cq;
	uint32_t max_wr;
	struct xm_recv q[XM_CQ_DEPTH];
	int head, n;
};

/* What modify_qp set on a QP (a TGT's on its object: every handle sees it). */
struct xm_qp_attrs {
	int access;
	int max_rd_atomic;		/* RTS: reads and atomics in flight, as initiator */
	int max_dest_rd_atomic;		/* RTR: as responder */
};

/* A TGT QP object; handles are xm_qp with ->tgt set. */
struct xm_tgt {
	int node;
	struct xm_domain *dom;
	uint32_t qpn;
	int handles;
	struct xm_qp_attrs attrs;
};

struct xm_send {
	uint64_t wr_id;
	uint64_t seq;
	bool signaled;
	uint32_t srqn;
	enum ibv_wr_opcode op;		/* RDMA WRITE / READ name an SRQ, take no receive */
	uint64_t raddr;
	uint32_t rkey;
	int nsge;			/* READ: where the bytes go */
	struct ibv_sge sge[XM_MAX_SGE];
	uint32_t len;
	uint8_t data[4096];
};

struct xm_qp {
	struct ibv_qp qp;
	bool gone;
	int node;
	struct xm_tgt *tgt;		/* XRC_RECV handle */
	uint32_t dest;			/* XRC_SEND: TGT number */
	struct xm_send pend[XM_MAX_PENDING]; /* held by RNR, in order */
	int npend;
	struct xm_qp_attrs attrs;
	struct ibv_qp_cap cap;		/* as granted at create */
	/*
	 * Send queue slots, as mlx5 counts them: a WQE holds its slot until
	 * the CQE of a signaled WQE at or after it is polled.
	 */
	uint64_t posted, retired;
};

struct xm_mr {
	struct ibv_mr mr;
	bool gone;
	int access;
};

struct xm_mw {
	struct ibv_mw mw;
	bool gone;
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
bool xm_refuse_accept;
const struct xm_device *xm_device = &xm_dev_toy;

static struct ofx_verbs_ops model;
static DAT_PROVIDER test_provider;
static struct xm_proc *procs[XM_MAX_PROCS];
static int nprocs;
static struct xm_srq *srqs[XM_MAX_OBJS];
static struct xm_tgt *tgts[XM_MAX_OBJS];
static struct xm_qp *inis[XM_MAX_OBJS];
/* every live handle, by kind: what the kernel closes when a process dies */
static struct xm_qp *qps[XM_MAX_OBJS];
static struct xm_cq *cqs[XM_MAX_OBJS];
static struct xm_xrcd *xrcds[XM_MAX_OBJS];
static struct xm_mr *mrs[XM_MAX_OBJS];
static struct xm_mw *mws[XM_MAX_OBJS];
static int live_rc, live_ini, live_srq, live_cq, live_xrcd;
static int rc_recvs;	/* receives posted to RC QPs */
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

static const struct xm_device *dev_of(struct ibv_context *ctx)
{
	return proc_of(ctx)->dev;
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
	m->cq.context = ctx;
	slot_add((void **)cqs, m);
	live_cq++;
	return &m->cq;
}

static void cq_release(struct xm_cq *m)
{
	slot_del((void **)cqs, m);
	live_cq--;
}

static int m_destroy_cq(struct ibv_cq *cq)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);

	if (!m->gone)
		cq_release(m);
	free(m);
	return 0;
}

static bool srq_live(uint32_t srqn);
static void sq_retire(uint32_t qpn, uint64_t seq);

/*
 * mlx5 (providers/mlx5/cq.c, poll_cq): each CQE is consumed before it is
 * parsed, and a CQE whose resource is no longer in the context's table (an
 * SRQ destroyed before its completions were polled: mlx5_destroy_srq does
 * not clean the CQ) fails the parse with CQ_POLL_ERR.  The call then
 * returns that error, not the count: the completions it had already taken
 * in this batch are lost with it.
 */
static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);
	int got = 0;

	if (m->gone)
		return 0;
	while (got < n && m->n) {
		const struct xm_cqe *e = &m->q[m->head];

		m->head = (m->head + 1) % XM_CQ_DEPTH;
		m->n--;
		if (e->srqn && !srq_live(e->srqn))
			return -2;
		if (!e->srqn)
			sq_retire(e->wc.qp_num, e->seq);
		wc[got++] = e->wc;
	}
	return got;
}

static int m_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return 0;
}

static void cq_push_srq(struct ibv_cq *cq, const struct ibv_wc *wc, uint32_t srqn)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);
	struct xm_cqe *e;

	CU_ASSERT_FATAL(m->n < XM_CQ_DEPTH);
	e = &m->q[(m->head + m->n) % XM_CQ_DEPTH];
	e->wc = *wc;
	e->srqn = srqn;
	m->n++;
}

static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	cq_push_srq(cq, wc, 0);
}

static void cq_push_send(struct ibv_cq *cq, const struct ibv_wc *wc, uint64_t seq)
{
	struct xm_cq *m = container_of(cq, struct xm_cq, cq);

	cq_push_srq(cq, wc, 0);
	m->q[(m->head + m->n - 1) % XM_CQ_DEPTH].seq = seq;
}

/*
 * mlx5's __mlx5_cq_clean, run by mlx5_destroy_qp on the QP's send and
 * receive CQs: the destroyed QP's CQEs leave the CQ unreported, the others
 * keep their order.  (A TGT has no CQ; an XRC SRQ's CQEs are the SRQ's.)
 */
static void cq_clean(struct ibv_cq *cq, uint32_t qpn)
{
	struct xm_cq *m;
	int k = 0;

	if (!cq)
		return;
	m = container_of(cq, struct xm_cq, cq);
	for (int i = 0; i < m->n; i++) {
		const struct xm_cqe *e = &m->q[(m->head + i) % XM_CQ_DEPTH];

		if (e->srqn || e->wc.qp_num != qpn)
			m->q[(m->head + k++) % XM_CQ_DEPTH] = *e;
	}
	m->n = k;
}

int xm_cq_pending(struct ibv_cq *cq)
{
	return container_of(cq, struct xm_cq, cq)->n;
}

/* ---- device profiles ------------------------------------------------------ */

/*
 * The send queue rules of mlx5 (rdma-core providers/mlx5, mlx5_calc_sq_size):
 * a WQE is the fixed segments of the QP type (control, the largest of the
 * RDMA / atomic / memory-window segments, plus the 16-byte XRC segment for
 * XRC_SEND: 208 bytes; 192 for RC) followed by 16-byte data segments, or an
 * inline segment (4-byte header, padded to 16).  It must fit max_sq_desc_sz
 * (512); it is rounded up to 64-byte basic blocks, and the queue (max_send_wr
 * times the WQE, rounded up to a power of two) may hold at most max_qp_wr
 * basic blocks.  Whatever fails is EINVAL.  The inline size granted is what
 * the rounded WQE leaves.
 */
static int mlx5_sq_check(const struct xm_device *d, enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
	int fixed = type == IBV_QPT_XRC_SEND ? 208 : 192;
	uint64_t size, inl = 0, wqe, bytes, pow = 1;

	if (cap->max_send_sge > (uint32_t)(d->max_wqe - fixed) / 16)
		return EINVAL;
	size = fixed + cap->max_send_sge * 16u;
	if (cap->max_inline_data)
		inl = fixed + ((4u + cap->max_inline_data + 15u) & ~15u);
	if (inl > size)
		size = inl;
	if (size > (uint64_t)d->max_wqe)
		return EINVAL;
	wqe = (size + 63) & ~63ull;
	if (cap->max_send_wr > 0x7fffffffu / (uint32_t)d->max_wqe)
		return EINVAL;
	bytes = cap->max_send_wr * wqe;
	while (pow < bytes)
		pow <<= 1;
	if (pow / 64 > (uint64_t)d->max_qp_wr)
		return EINVAL;
	cap->max_inline_data = (uint32_t)(wqe - fixed - 4);
	return 0;
}

/* mlx4 (rdma-core providers/mlx4, mlx4_create_qp_ex): plain limits. */
static int mlx4_sq_check(const struct xm_device *d, enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
	(void)type;
	if (cap->max_send_wr > (uint32_t)d->max_qp_wr || cap->max_send_sge > (uint32_t)d->max_sge ||
	    cap->max_inline_data > 1024)
		return EINVAL;
	return 0;
}

const struct xm_device xm_dev_toy = {
	.name = "toy", .max_qp_wr = 256, .max_sge = 4, .max_qp_rd_atom = 4,
	.max_qp_init_rd_atom = 4, .max_srq_wr = 256, .max_srq_sge = 4,
	.sq_check = mlx4_sq_check,
};

const struct xm_device xm_dev_mlx5 = {
	.name = "mlx5", .max_qp_wr = 32768, .max_sge = 30, .max_qp_rd_atom = 16,
	.max_qp_init_rd_atom = 16, .max_srq_wr = 32767, .max_srq_sge = 31, .max_wqe = 512,
	.sq_check = mlx5_sq_check,
};

const struct xm_device xm_dev_mlx4 = {
	.name = "mlx4", .max_qp_wr = 16351, .max_sge = 32, .max_qp_rd_atom = 16,
	.max_qp_init_rd_atom = 128, .max_srq_wr = 16383, .max_srq_sge = 31,
	.sq_check = mlx4_sq_check,
};

/* ---- QP state transitions ------------------------------------------------ */

/*
 * The attributes the kernel core requires and allows per QP type and
 * transition (drivers/infiniband/core/verbs.c, ib_modify_qp_is_ok), for the
 * types and transitions the provider uses.  IBV_QP_STATE is always allowed;
 * any state may go to RESET or ERR with no other attribute; a transition
 * missing here is refused.
 */
enum { XM_T_RC, XM_T_INI, XM_T_TGT, XM_T_N };

struct xm_qp_rule {
	enum ibv_qp_state from, to;
	int req[XM_T_N], opt[XM_T_N];
};

#define XM_PATH_OPT (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)
#define XM_RTS_OPT (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
		    IBV_QP_PATH_MIG_STATE)

static const struct xm_qp_rule qp_rules[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  .req = { [XM_T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   [XM_T_INI] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   [XM_T_TGT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS } },
	{ IBV_QPS_INIT, IBV_QPS_INIT,
	  .opt = { [XM_T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   [XM_T_INI] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   [XM_T_TGT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS } },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  .req = { [XM_T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		   [XM_T_INI] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
		   [XM_T_TGT] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER },
	  .opt = { [XM_T_RC] = XM_PATH_OPT, [XM_T_INI] = XM_PATH_OPT, [XM_T_TGT] = XM_PATH_OPT } },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  .req = { [XM_T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		   [XM_T_INI] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		   [XM_T_TGT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN },
	  .opt = { [XM_T_RC] = XM_RTS_OPT | IBV_QP_MIN_RNR_TIMER, [XM_T_INI] = XM_RTS_OPT,
		   [XM_T_TGT] = XM_RTS_OPT | IBV_QP_MIN_RNR_TIMER } },
	{ IBV_QPS_RTS, IBV_QPS_RTS,
	  .opt = { [XM_T_RC] = XM_RTS_OPT | IBV_QP_MIN_RNR_TIMER, [XM_T_INI] = XM_RTS_OPT,
		   [XM_T_TGT] = XM_RTS_OPT | IBV_QP_MIN_RNR_TIMER } },
};

static int rule_type(enum ibv_qp_type t)
{
	return t == IBV_QPT_XRC_SEND ? XM_T_INI : t == IBV_QPT_XRC_RECV ? XM_T_TGT : XM_T_RC;
}

/* 0 if the kernel core takes `mask` for this transition, else EINVAL. */
static int qp_mask_check(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
			 int mask)
{
	int t = rule_type(type);

	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return mask & ~IBV_QP_STATE ? EINVAL : 0;
	for (size_t i = 0; i < sizeof(qp_rules) / sizeof(qp_rules[0]); i++) {
		const struct xm_qp_rule *r = &qp_rules[i];

		if (r->from != cur || r->to != next)
			continue;
		if ((mask & r->req[t]) != r->req[t])
			return EINVAL;
		return mask & ~(r->req[t] | r->opt[t] | IBV_QP_STATE) ? EINVAL : 0;
	}
	return EINVAL;
}

int xm_modify_allowed(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      int mask)
{
	return qp_mask_check(type, cur, next, mask) == 0;
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
	slot_add((void **)xrcds, x);
	live_xrcd++;
	return &x->xrcd;
}

static void xrcd_release(struct xm_xrcd *x)
{
	if (--x->dom->refs == 0) {
		slot_del((void **)domains, x->dom);
		free(x->dom);
	}
	x->dom = NULL;
	slot_del((void **)xrcds, x);
	live_xrcd--;
}

static int m_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct xm_xrcd *x = container_of(xrcd, struct xm_xrcd, xrcd);

	if (!x->gone)
		xrcd_release(x);
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

	if (attr->srq_type != IBV_SRQT_XRC || !attr->xrcd || !attr->cq || !attr->pd ||
	    attr->attr.max_wr > (uint32_t)dev_of(ctx)->max_srq_wr ||
	    attr->attr.max_sge > (uint32_t)dev_of(ctx)->max_srq_sge) {
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

/* mlx5_destroy_srq: the SRQ leaves the table; its CQEs stay in the CQ. */
static void srq_release(struct xm_srq *s)
{
	slot_del((void **)srqs, s);
	live_srq--;
}

static int m_destroy_srq(struct ibv_srq *srq)
{
	struct xm_srq *s = container_of(srq, struct xm_srq, srq);

	if (!s->gone)
		srq_release(s);
	free(s);
	return 0;
}

static bool srq_live(uint32_t srqn)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (srqs[i] && srqs[i]->srqn == srqn)
			return true;
	return false;
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

	if (s->gone) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		struct xm_recv *r;

		if ((uint32_t)s->n >= s->max_wr || wr->num_sge > XM_MAX_SGE) {
			*bad = wr;
			return -ENOMEM;
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
	const struct xm_device *d = dev_of(ctx);
	struct xm_qp *q;
	int ret;

	/* a TGT has no send queue; the others obey the device's sizing */
	if (attr->qp_type != IBV_QPT_XRC_RECV) {
		ret = d->sq_check(d, attr->qp_type, &attr->cap);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}
	q = calloc(1, sizeof(*q));
	q->cap = attr->cap;

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
	slot_add((void **)qps, q);
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
	slot_add((void **)qps, q);
	return &q->qp;
}

/*
 * The kernel core's attribute masks (qp_rules), then the device's limits on
 * the read depths (mlx5 refuses more than its max_qp_rd_atom either way).
 */
static int m_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);
	struct xm_qp_attrs *a = q->tgt ? &q->tgt->attrs : &q->attrs;
	const struct xm_device *d = dev_of(qp->context);
	enum ibv_qp_state next = mask & IBV_QP_STATE ? attr->qp_state : qp->state;

	if (q->gone)
		return 0;
	if (qp_mask_check(qp->qp_type, qp->state, next, mask))
		return EINVAL;
	if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > d->max_qp_init_rd_atom) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > d->max_qp_rd_atom))
		return EINVAL;
	qp->state = next;
	if (mask & IBV_QP_DEST_QPN)
		q->dest = attr->dest_qp_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		a->access = attr->qp_access_flags;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (next == IBV_QPS_RESET)
		memset(a, 0, sizeof(*a));
	return 0;
}

/* An async event reported but not yet acknowledged (xm_async_qp_event_unacked). */
static struct {
	struct xm_proc *p;
	struct ibv_async_event ev;
	pthread_t thread;
	bool pending, stuck;
} unacked;

static void *async_handler_thread(void *arg)
{
	(void)arg;
	ofx_ia_async_event(&unacked.p->ia, &unacked.ev);
	return NULL;
}

/*
 * libibverbs' ibv_destroy_qp returns only once every async event reported
 * for the QP is acknowledged: the async thread runs the handler meanwhile.
 * A handler that cannot finish within a second (it waits for a lock the
 * destroyer holds) is a deadlock on a device.  False then: the QP's memory
 * is kept, the handler may still read it.
 */
static bool destroy_waits_for_events(struct ibv_qp *qp)
{
	struct timespec ts;

	if (!unacked.pending || unacked.ev.element.qp != qp)
		return true;
	unacked.pending = false;
	CU_ASSERT_FATAL(pthread_create(&unacked.thread, NULL, async_handler_thread, NULL) == 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	if (pthread_timedjoin_np(unacked.thread, NULL, &ts) == 0)
		return true;
	CU_FAIL("ibv_destroy_qp waits for an async event whose handler is blocked");
	unacked.stuck = true;
	return false;
}

void xm_async_qp_event_unacked(struct xm_proc *p, struct ibv_qp *qp, enum ibv_event_type type)
{
	CU_ASSERT_FATAL(!unacked.pending);
	unacked.p = p;
	unacked.ev.element.qp = qp;
	unacked.ev.event_type = type;
	unacked.pending = true;
}

/* The QP handle goes (destroyed, or closed by the kernel at its process's exit). */
static void qp_release(struct xm_qp *q)
{
	struct ibv_qp *qp = &q->qp;

	slot_del((void **)qps, q);
	if (q->tgt) {
		if (--q->tgt->handles == 0) {
			slot_del((void **)tgts, q->tgt);
			free(q->tgt);
		}
	} else if (qp->qp_type == IBV_QPT_XRC_SEND) {
		cq_clean(qp->send_cq, qp->qp_num);
		slot_del((void **)inis, q);
		live_ini--;
	} else {
		cq_clean(qp->send_cq, qp->qp_num);
		if (qp->recv_cq != qp->send_cq)
			cq_clean(qp->recv_cq, qp->qp_num);
		live_rc--;
	}
	q->tgt = NULL;
	q->npend = 0;
}

static int m_destroy_qp(struct ibv_qp *qp)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);

	if (!q->gone && !destroy_waits_for_events(qp))
		return 0;
	if (!q->gone)
		qp_release(q);
	free(q);
	return 0;
}

/*
 * An RC QP's receive queue only counts what it is given (no RC traffic is
 * modelled); a QP in RESET takes none, and XRC QPs have no receive queue.
 */
static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (qp->qp_type != IBV_QPT_RC || qp->state == IBV_QPS_RESET ||
	    container_of(qp, struct xm_qp, qp)->gone) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next)
		rc_recvs++;
	return 0;
}

int xm_rc_recvs(void)
{
	return rc_recvs;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
	       op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_SEND;
}

static void send_wc(struct xm_qp *q, const struct xm_send *s, enum ibv_wc_status st)
{
	struct ibv_wc wc = { .wr_id = s->wr_id, .status = st, .opcode = wc_opcode(s->op),
			     .qp_num = q->qp.qp_num };

	if (s->op == IBV_WR_RDMA_READ && st == IBV_WC_SUCCESS)
		wc.byte_len = s->len;
	if (s->signaled || st != IBV_WC_SUCCESS)
		cq_push_send(q->qp.send_cq, &wc, s->seq);
}

static void sq_retire(uint32_t qpn, uint64_t seq)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (qps[i] && qps[i]->qp.qp_num == qpn && !qps[i]->tgt && seq > qps[i]->retired)
			qps[i]->retired = seq;
}

/* The bytes at [addr, addr + len) of an MR of `node` that `rkey` opens for `access`. */
static void *rkey_find(int node, uint32_t rkey, uint64_t addr, uint32_t len, int access)
{
	for (int i = 0; i < XM_MAX_OBJS; i++) {
		const struct xm_mr *m = mrs[i];

		if (m && m->mr.rkey == rkey && proc_of(m->mr.context)->node == node &&
		    (m->access & access) == access && addr >= (uintptr_t)m->mr.addr &&
		    addr + len <= (uintptr_t)m->mr.addr + m->mr.length)
			return (void *)(uintptr_t)addr;
	}
	return NULL;
}

/* The INI QP fails: the WR gets `st`, everything held behind it is flushed. */
static void ini_error(struct xm_qp *q, uint64_t wr_id, enum ibv_wc_status st)
{
	q->qp.state = IBV_QPS_ERR;
	for (int i = 0; i < q->npend; i++)
		send_wc(q, &q->pend[i], q->pend[i].wr_id == wr_id ? st : IBV_WC_WR_FLUSH_ERR);
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
	if (s->op == IBV_WR_RDMA_WRITE || s->op == IBV_WR_RDMA_READ) {
		bool rd = s->op == IBV_WR_RDMA_READ;
		uint8_t *mem = NULL;

		if (s->len) {
			mem = rkey_find(t->node, s->rkey, s->raddr, s->len,
					rd ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE);
			if (!mem) {
				ini_error(q, s->wr_id, IBV_WC_REM_ACCESS_ERR);
				return false;
			}
		}
		if (!rd) {
			if (s->len)
				memcpy(mem, s->data, s->len);
		} else {
			for (int i = 0; i < s->nsge && off < s->len; i++) {
				uint32_t n = s->len - off < s->sge[i].length ? s->len - off :
									       s->sge[i].length;

				memcpy((void *)(uintptr_t)s->sge[i].addr, mem + off, n);
				off += n;
			}
		}
		send_wc(q, s, IBV_WC_SUCCESS);
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
	cq_push_srq(srq->cq, &wc, srq->srqn);
	send_wc(q, s, IBV_WC_SUCCESS);
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

	if (qp->qp_type != IBV_QPT_XRC_SEND || q->gone) {
		*bad = wr;
		return -EINVAL; /* the RC QP of an XRC EP never sends in these tests */
	}
	for (; wr; wr = wr->next) {
		struct xm_send *s;

		struct xm_send flushed = { .wr_id = wr->wr_id, .op = wr->opcode };

		/* mlx5_post_send: a full send queue is ENOMEM, whatever the state */
		if (q->posted - q->retired >= q->cap.max_send_wr) {
			*bad = wr;
			return -ENOMEM;
		}
		if (qp->state == IBV_QPS_ERR) {
			flushed.seq = ++q->posted;
			send_wc(q, &flushed, IBV_WC_WR_FLUSH_ERR);
			continue;
		}
		if (qp->state != IBV_QPS_RTS || q->npend >= XM_MAX_PENDING ||
		    wr->num_sge > XM_MAX_SGE) {
			*bad = wr;
			return -EINVAL;
		}
		s = &q->pend[q->npend++];
		s->wr_id = wr->wr_id;
		s->seq = ++q->posted;
		s->signaled = wr->send_flags & IBV_SEND_SIGNALED;
		s->srqn = wr->qp_type.xrc.remote_srqn;
		s->op = wr->opcode;
		s->raddr = wr->wr.rdma.remote_addr;
		s->rkey = wr->wr.rdma.rkey;
		s->nsge = wr->num_sge;
		if (wr->num_sge)
			memcpy(s->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
		CU_ASSERT(wr->qp_type.xrc.remote_srqn != 0);
		s->len = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			if (s->op != IBV_WR_RDMA_READ) {
				CU_ASSERT_FATAL(s->len + wr->sg_list[i].length <= sizeof(s->data));
				memcpy(s->data + s->len, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
			}
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
	bool gone;
	struct xm_proc *p;
	bool listening;
	struct xm_id *peer;		/* the other end of a connection */
	uint32_t qp_num;		/* what this end named in connect/accept */
	/*
	 * This end's read depths as the kernel's CM keeps them: set by its
	 * own connect/accept, and on receiving the peer's REQ or REP from the
	 * peer's values crossed (its initiator depth is our responder
	 * resources).  rdma_init_qp_attr() gives them as max_dest_rd_atomic
	 * (RTR) and max_rd_atomic (RTS).
	 */
	uint8_t responder_resources, initiator_depth;
};

static struct xm_id *ids[XM_MAX_OBJS];
static int live_ids;
static int connects;		/* rdma_connect calls */
static int accepts;		/* rdma_accept calls */
static struct rdma_conn_param last_accept;
static uint8_t last_accept_data[256];

static struct xm_proc *proc_of_chan(struct rdma_event_channel *ch)
{
	for (int i = 0; i < XM_MAX_PROCS; i++)
		if (procs[i] && procs[i]->ia.cm_channel == ch)
			return procs[i];
	return NULL;
}

/*
 * rdma_get_cm_event(3): in a REQ or REP event, responder_resources is the
 * sender's initiator_depth and initiator_depth the sender's
 * responder_resources; the receiving id takes them so.
 */
static void ev_depths(struct xm_id *to, struct rdma_cm_event *ev, const struct rdma_conn_param *cp)
{
	ev->param.conn.responder_resources = cp->initiator_depth;
	ev->param.conn.initiator_depth = cp->responder_resources;
	to->responder_resources = cp->initiator_depth;
	to->initiator_depth = cp->responder_resources;
}

static void ev_queue_cp(struct xm_id *to, enum rdma_cm_event_type type, int status,
			struct xm_id *listen, const void *pdata, int len, bool ud,
			const struct rdma_conn_param *cp)
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
		/* IB: the receiver sees the whole area of the message (REQ, REJ, REP) */
		e->ev.param.conn.private_data_len =
			(uint8_t)(!len ? 0 : type == RDMA_CM_EVENT_CONNECT_REQUEST ? 56 :
					     type == RDMA_CM_EVENT_REJECTED ? 148 : 196);
		if (cp)
			ev_depths(to, &e->ev, cp);
	}
	c->q[c->n++] = &e->ev;
}

static void ev_queue(struct xm_id *to, enum rdma_cm_event_type type, int status,
		     struct xm_id *listen, const void *pdata, int len, bool ud)
{
	ev_queue_cp(to, type, status, listen, pdata, len, ud, NULL);
}

static int m_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id_p, void *ctx,
		       enum rdma_port_space ps)
{
	struct xm_id *m;

	if (!proc_of_chan(ch) || proc_of_chan(ch)->dead) {
		errno = ENODEV;
		return -1;
	}
	m = calloc(1, sizeof(*m));
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

/* The id goes (destroyed, or closed by the kernel at its process's exit). */
static void id_release(struct xm_id *m)
{
	struct rdma_cm_id *id = &m->id;
	struct xm_chan *c = container_of(id->channel, struct xm_chan, ch);
	int k = 0;

	/* a connected IB peer hears a DREQ */
	if (m->peer && m->peer->peer == m) {
		m->peer->peer = NULL;
		if (id->ps == RDMA_PS_IB)
			ev_queue(m->peer, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	}
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (ids[i] && ids[i]->peer == m)
			ids[i]->peer = NULL;
	m->peer = NULL;
	for (int i = 0; i < c->n; i++) {
		if (c->q[i]->id == id)
			free(container_of(c->q[i], struct xm_ev, ev));
		else
			c->q[k++] = c->q[i];
	}
	c->n = k;
	slot_del((void **)ids, m);
	live_ids--;
}

static int m_destroy_id(struct rdma_cm_id *id)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	if (!m->gone)
		id_release(m);
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

	if (m->gone) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (ids[i] && ids[i]->listening && ids[i]->id.ps == id->ps && !ids[i]->p->dead &&
		    ids[i]->id.route.addr.src_sin.sin_addr.s_addr ==
			    id->route.addr.dst_sin.sin_addr.s_addr &&
		    id_port(&ids[i]->id) == ntohs(id->route.addr.dst_sin.sin_port))
			l = ids[i];
	m->qp_num = param->qp_num;
	m->responder_resources = param->responder_resources;
	m->initiator_depth = param->initiator_depth;
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
	ev_queue_cp(n, RDMA_CM_EVENT_CONNECT_REQUEST, 0, l, param->private_data,
		    param->private_data_len, id->ps == RDMA_PS_UDP, param);
	return 0;
}

static int m_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	if (m->gone) {
		errno = EINVAL;
		return -1;
	}
	last_accept = *param;
	/* the caller's buffer is gone once rdma_accept returns */
	if (param->private_data_len)
		memcpy(last_accept_data, param->private_data, param->private_data_len);
	last_accept.private_data = last_accept_data;
	accepts++;
	if (xm_refuse_accept) {
		errno = EINVAL;
		return -1;
	}
	m->qp_num = param->qp_num;
	m->responder_resources = param->responder_resources;
	m->initiator_depth = param->initiator_depth;
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
	ev_queue_cp(m->peer, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, param->private_data,
		    param->private_data_len, false, param);
	return 0;
}

/* rdma_disconnect: the DREQ reaches the peer, the DREP (or its timeout) this end. */
static int m_disconnect(struct rdma_cm_id *id)
{
	struct xm_id *m = container_of(id, struct xm_id, id);

	if (m->gone || !m->peer) {
		errno = EINVAL;
		return -1;
	}
	ev_queue(m->peer, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	m->peer->peer = NULL;
	m->peer = NULL;
	ev_queue(m, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	return 0;
}

static int m_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			size_t optlen)
{
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
		attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		break;
	case IBV_QPS_RTR:
		if (!m->peer) {
			errno = EINVAL;
			return -1;
		}
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		attr->dest_qp_num = m->peer->qp_num;
		attr->max_dest_rd_atomic = m->responder_resources;
		attr->min_rnr_timer = 12;
		break;
	default:
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		attr->max_rd_atomic = m->initiator_depth;
		attr->retry_cnt = 7;
		attr->rnr_retry = 7;
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

static bool cm_pending(void)
{
	for (int i = 0; i < nprocs; i++) {
		struct xm_proc *p = procs[i];

		if (p && !p->dead && p->ia.cm_channel &&
		    container_of(p->ia.cm_channel, struct xm_chan, ch)->n)
			return true;
	}
	return false;
}

static bool cm_pump(void)
{
	bool any = false;

	for (int i = 0; i < nprocs; i++) {
		struct xm_proc *p = procs[i];

		if (p && !p->dead && p->ia.cm_channel &&
		    container_of(p->ia.cm_channel, struct xm_chan, ch)->n) {
			ofx_cm_process_events(&p->ia);
			any = true;
		}
	}
	return any;
}

/* ---- memory (the windows of dat_rmr_bind) ----------------------------------- */

static uint32_t next_key = 0x1000;
static int live_mr, live_mw, binds;

static struct ibv_mr *m_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct xm_mr *m = calloc(1, sizeof(*m));
	struct ibv_mr *mr = &m->mr;

	m->access = access;
	slot_add((void **)mrs, m);
	mr->pd = pd;
	mr->context = pd->context;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = mr->rkey = next_key++ << 8;
	live_mr++;
	return mr;
}

static void mr_release(struct xm_mr *m)
{
	slot_del((void **)mrs, m);
	live_mr--;
}

static int m_dereg_mr(struct ibv_mr *mr)
{
	struct xm_mr *m = container_of(mr, struct xm_mr, mr);

	if (!m->gone)
		mr_release(m);
	free(m);
	return 0;
}

static struct ibv_mw *m_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xm_mw *m = calloc(1, sizeof(*m));
	struct ibv_mw *mw = &m->mw;

	slot_add((void **)mws, m);
	mw->pd = pd;
	mw->context = pd->context;
	mw->type = type;
	mw->rkey = next_key++ << 8;
	live_mw++;
	return mw;
}

static void mw_release(struct xm_mw *m)
{
	slot_del((void **)mws, m);
	live_mw--;
}

static int m_dealloc_mw(struct ibv_mw *mw)
{
	struct xm_mw *m = container_of(mw, struct xm_mw, mw);

	if (!m->gone)
		mw_release(m);
	free(m);
	return 0;
}

/*
 * A bind is a send queue WR: on a QP that is not in RTS (the unconnected RC
 * QP of an XRC EP) mlx5 takes it and never executes it: no completion.
 */
static int m_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	binds++;
	mw->rkey = ibv_inc_rkey(mw->rkey);
	if (qp->state == IBV_QPS_RTS) {
		struct ibv_wc wc = { .wr_id = bind->wr_id, .opcode = IBV_WC_BIND_MW,
				     .qp_num = qp->qp_num };

		cq_push(qp->send_cq, &wc);
	}
	return 0;
}

/* ---- inspection and events ------------------------------------------------- */

const struct rdma_conn_param *xm_last_accept(void)
{
	return accepts ? &last_accept : NULL;
}

int xm_binds(void)
{
	return binds;
}

struct ibv_qp *xm_ini_qp(int node, int i, struct ibv_qp_cap *cap_p)
{
	for (int k = 0; k < XM_MAX_OBJS; k++)
		if (inis[k] && inis[k]->node == node && i-- == 0) {
			if (cap_p)
				*cap_p = inis[k]->cap;
			return &inis[k]->qp;
		}
	return NULL;
}

int xm_qp_max_rd_atomic(struct ibv_qp *qp)
{
	return container_of(qp, struct xm_qp, qp)->attrs.max_rd_atomic;
}

int xm_tgt_max_dest_rd_atomic(int node)
{
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (tgts[i] && tgts[i]->node == node)
			return tgts[i]->attrs.max_dest_rd_atomic;
	return -1;
}

void xm_async_qp_event(struct xm_proc *p, struct ibv_qp *qp, enum ibv_event_type type)
{
	struct xm_qp *q = container_of(qp, struct xm_qp, qp);
	struct ibv_async_event ev = { .element.qp = qp, .event_type = type };

	if (type == IBV_EVENT_QP_FATAL) {
		qp->state = IBV_QPS_ERR;
		for (int i = 0; i < q->npend; i++)
			send_wc(q, &q->pend[i], IBV_WC_WR_FLUSH_ERR);
		q->npend = 0;
	}
	ofx_ia_async_event(&p->ia, &ev);
}

struct rdma_cm_id *xm_cm_request(struct xm_proc *from, struct xm_proc *to,
				 const struct rdma_conn_param *req, struct rdma_cm_id **active_p,
				 struct rdma_conn_param *ev_p)
{
	struct rdma_cm_id *a, *n;
	struct rdma_cm_event ev = { 0 };
	struct xm_id *ma, *mn;

	CU_ASSERT_FATAL(from->ia.cm_channel && to->ia.cm_channel);
	m_create_id(from->ia.cm_channel, &a, NULL, RDMA_PS_TCP);
	m_create_id(to->ia.cm_channel, &n, NULL, RDMA_PS_TCP);
	ma = container_of(a, struct xm_id, id);
	mn = container_of(n, struct xm_id, id);
	ma->qp_num = req->qp_num;
	ma->responder_resources = req->responder_resources;
	ma->initiator_depth = req->initiator_depth;
	ma->peer = mn;
	mn->peer = ma;
	ev_depths(mn, &ev, req);
	*ev_p = ev.param.conn;
	*active_p = a;
	return n;
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
		/* a drain may have sent a control message (the DISC after a fence) */
		if (nctl || cm_pending())
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
	model.disconnect = m_disconnect;
	model.set_option = m_set_option;
	model.init_qp_attr = m_init_qp_attr;
	model.get_cm_event = m_get_cm_event;
	model.ack_cm_event = m_ack_cm_event;
	model.reg_mr = m_reg_mr;
	model.dereg_mr = m_dereg_mr;
	model.alloc_mw = m_alloc_mw;
	model.dealloc_mw = m_dealloc_mw;
	model.bind_mw = m_bind_mw;
	ofx_verbs_set(&model);
	/* a test that failed half-way leaks: start from a clean model anyway */
	memset(procs, 0, sizeof(procs));
	memset(srqs, 0, sizeof(srqs));
	memset(tgts, 0, sizeof(tgts));
	memset(inis, 0, sizeof(inis));
	memset(domains, 0, sizeof(domains));
	memset(ids, 0, sizeof(ids));
	memset(qps, 0, sizeof(qps));
	memset(cqs, 0, sizeof(cqs));
	memset(xrcds, 0, sizeof(xrcds));
	memset(mrs, 0, sizeof(mrs));
	memset(mws, 0, sizeof(mws));
	live_rc = live_ini = live_srq = live_cq = live_xrcd = live_ids = connects = 0;
	rc_recvs = 0;
	live_mr = live_mw = binds = accepts = 0;
	xm_device = &xm_dev_toy;
	xm_refuse_accept = false;
	nprocs = nctl = 0;
	xm_rnr_limited = false;
	xm_autopump = true;
	xm_use_cm = false;
}

void xm_fini(void)
{
	if (unacked.stuck)
		pthread_join(unacked.thread, NULL);
	unacked.pending = unacked.stuck = false;
	for (int i = 0; i < nprocs; i++)
		if (procs[i])
			xm_proc_close(procs[i]);
	CU_ASSERT_EQUAL(live_rc, 0);
	CU_ASSERT_EQUAL(live_ini, 0);
	CU_ASSERT_EQUAL(live_srq, 0);
	CU_ASSERT_EQUAL(live_cq, 0);
	CU_ASSERT_EQUAL(live_xrcd, 0);
	CU_ASSERT_EQUAL(live_ids, 0);
	CU_ASSERT_EQUAL(live_mr, 0);
	CU_ASSERT_EQUAL(live_mw, 0);
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
	p->dev = xm_device;
	ia->dev_attr.max_qp_wr = p->dev->max_qp_wr;
	ia->dev_attr.max_sge = p->dev->max_sge;
	ia->dev_attr.max_srq = 64;
	ia->dev_attr.max_srq_wr = p->dev->max_srq_wr;
	ia->dev_attr.max_srq_sge = p->dev->max_srq_sge;
	ia->dev_attr.max_qp_rd_atom = p->dev->max_qp_rd_atom;
	ia->dev_attr.max_qp_init_rd_atom = p->dev->max_qp_init_rd_atom;
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
	CU_ASSERT_FATAL(ofx_evd_create_internal(ia, 64, DAT_EVD_CR_FLAG, &p->cr_evd) == 0);
	p->pz.obj.provider = &test_provider;
	p->pz.obj.type = OFX_OBJ_PZ;
	p->pz.obj.ia = ia;
	p->pz.pd = &p->pd;
	p->pd.context = &p->ctx;
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
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);

		if (obj->type == OFX_OBJ_PSP || obj->type == OFX_OBJ_RSP)
			ofx_sp_destroy(container_of(obj, struct ofx_sp, obj));
	}
	ofx_list_for_each_safe(pos, tmp, &ia->zombies) {
		ofx_list_del(pos);
		ofx_ep_free_zombie(container_of(pos, struct ofx_obj, ia_link));
	}
	ofx_evd_destroy(p->cr_evd);
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

/*
 * The kernel's cleanup at exit (uverbs, then ucma): the process's QP
 * handles (a TGT goes with its last handle), SRQs, CQs, MRs, MWs and XRC
 * domain handles close, its rdma_cm ids are destroyed (a connected IB peer
 * hears a DREQ) and its pending events go.  None of its code runs: no
 * DISC, no INI-CLOSE, no fence.  Sends held (RNR) towards an SRQ that went
 * now fail, as the device's next retry would.
 */
void xm_proc_kill(struct xm_proc *p)
{
	struct ibv_context *ctx = &p->ctx;

	CU_ASSERT_FATAL(!p->dead);
	p->dead = true;
	for (int i = 0; i < XM_MAX_OBJS; i++) {
		if (qps[i] && qps[i]->qp.context == ctx) {
			qps[i]->gone = true;
			qp_release(qps[i]);
		}
	}
	for (int i = 0; i < XM_MAX_OBJS; i++) {
		if (srqs[i] && srqs[i]->srq.context == ctx) {
			srqs[i]->gone = true;
			srq_release(srqs[i]);
		}
		if (mws[i] && mws[i]->mw.context == ctx) {
			mws[i]->gone = true;
			mw_release(mws[i]);
		}
	}
	for (int i = 0; i < XM_MAX_OBJS; i++) {
		if (cqs[i] && cqs[i]->cq.context == ctx) {
			cqs[i]->gone = true;
			cq_release(cqs[i]);
		}
		if (mrs[i] && mrs[i]->mr.context == ctx) {
			mrs[i]->gone = true;
			mr_release(mrs[i]);
		}
	}
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (xrcds[i] && xrcds[i]->xrcd.context == ctx) {
			xrcds[i]->gone = true;
			xrcd_release(xrcds[i]);
		}
	for (int i = 0; i < XM_MAX_OBJS; i++)
		if (ids[i] && ids[i]->p == p) {
			ids[i]->gone = true;
			id_release(ids[i]);
		}
	if (p->ia.cm_channel) {
		struct xm_chan *c = container_of(p->ia.cm_channel, struct xm_chan, ch);

		while (c->n)
			free(container_of(c->q[--c->n], struct xm_ev, ev));
	}
	progress_pending();
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
	struct ofx_conn_req cr;
	struct rdma_cm_event ev;
	struct rdma_cm_id *destroy = NULL;
	bool offered = false, handled;
	int ret = -1;

	/* A: dat_ep_connect builds the offer */
	pthread_mutex_lock(&ea->lock);
	ea->remote_addr = b->ia.addr;
	test_ep_force_state(ea, OFX_EP_ACTIVE_PENDING);
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
	test_ep_force_state(eb, OFX_EP_PASSIVE_PENDING);
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
