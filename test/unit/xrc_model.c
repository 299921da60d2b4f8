/* SPDX-License-Identifier: BSD-2-Clause */
#include "xrc_model.h"
#include "unit.h"

#include "cm.h"
#include "ep_cm.h"
#include "ep_xrc.h"
#include "ia.h"
#include "lmr.h"
#include "pdata.h"
#include "sp.h"
#include "verbs.h"
#include "xrc.h"

#include <CUnit/CUnit.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <dat2/dat_ib_extensions.h>

#define XM_CQ_DEPTH 4096
#define XM_MAX_OBJS 256
#define XM_MAX_SGE 4
#define XM_MAX_CTL 1024
#define XM_MAX_PENDING 64
#define XM_PORT_BASE 20000
#define XM_MAX_ASYNC 256
#define XM_MAX_NODES 16

/*
 * What the model adds to the objects of fake_verbs.  A handle the kernel
 * closed when its process died (xm_proc_kill) is obj.closed: the calls on
 * it fail or do nothing, and its destroy only frees the memory.
 */
struct xm_domain {
	int node;
	ino_t ino;			/* 0: private */
	int refs;			/* open ibv_xrcd handles */
};

struct xm_xrcd {
	struct fake_obj obj;
	struct ibv_xrcd xrcd;
	struct xm_domain *dom;
};

struct xm_recv {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[XM_MAX_SGE];
};

struct xm_srq {
	struct fake_srq fs;
	int node;
	struct xm_domain *dom;
	uint32_t srqn;
	struct ibv_cq *cq;
	uint32_t max_wr;
	struct xm_recv *q;		/* max_wr of them, a ring */
	int head, n;
	uint32_t limit;			/* armed srq_limit; 0: not armed */
};

/* What modify_qp set on a QP (a TGT's on its object: every handle sees it). */
struct xm_qp_attrs {
	int access;
	int max_rd_atomic;		/* RTS: reads and atomics in flight, as initiator */
	int max_dest_rd_atomic;		/* RTR: as responder */
};

/*
 * A TGT QP object; handles are xm_qp with ->tgt set.  Its state is the
 * object's (the kernel modifies the real QP through any handle).
 */
struct xm_tgt {
	int node;
	struct xm_domain *dom;
	uint32_t qpn;
	int handles;
	enum ibv_qp_state state;
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
	bool bad_lkey;			/* a local segment no MR of the QP's PD covers */
	uint32_t imm;			/* WITH_IMM */
	uint32_t inv_rkey;		/* SEND_WITH_INV */
	uint64_t compare_add, swap;	/* atomics */
	uint32_t len;
	uint8_t data[4096];
};

struct xm_qp {
	struct fake_qp fq;
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

/* A memory window, and whether a send with invalidate invalidated it. */
struct xm_mw {
	struct fake_mw fm;
	bool invalid;
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
int xm_ini_accept_failures, xm_ini_reps_lost, xm_ini_rtus_lost;
int xm_ini_create_errno;
const struct xm_device *xm_device = &xm_dev_toy;
const struct xm_device *xm_profile = &xm_dev_toy;

static struct xm_proc *procs[XM_MAX_PROCS];
static int nprocs;
static struct xm_tgt *tgts[XM_MAX_OBJS];
static struct xm_domain *domains[XM_MAX_OBJS];
static int rc_recvs;	/* receives posted to RC QPs */
/* acceptors of xm_ini_rtus_lost connections, until xm_ini_rep_timeout */
static struct xm_id *rep_waiting[XM_MAX_PENDING];
static int nrep_waiting;
/*
 * SRQ numbers, per node (device): on mlx5 and mlx4 SRQs are numbered apart
 * from QPs, so an SRQ's number may be any QP's too (QPs number from the
 * fake's counter, the same base).
 */
#define XM_SRQN_BASE 0x100
static uint32_t srqn_next[XM_MAX_NODES];
static struct xm_ctl ctlq[XM_MAX_CTL];
static int nctl;
static struct rdma_cm_id dummy_id;

static struct xm_proc *proc_of(struct ibv_context *ctx)
{
	return container_of(ctx, struct xm_proc, ctx);
}

static const struct xm_device *dev_of(struct ibv_context *ctx)
{
	return proc_of(ctx)->dev;
}

static struct xm_qp *xm_qp_of(struct ibv_qp *qp)
{
	return container_of(qp, struct xm_qp, fq.qp);
}

/* The open objects of the model, by kind (fake_verbs.live). */
#define xm_for_each(pos, tmp, kind) ofx_list_for_each_safe(pos, tmp, &fake_verbs.live[kind])

static struct xm_qp *qp_at(struct ofx_list *pos)
{
	return container_of(pos, struct xm_qp, fq.obj.link);
}

static struct xm_srq *srq_at(struct ofx_list *pos)
{
	return container_of(pos, struct xm_srq, fs.obj.link);
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

static bool srq_live(uint32_t srqn);
static void sq_retire(uint32_t qpn, uint64_t seq);

/*
 * mlx5 (providers/mlx5/cq.c, poll_cq): each CQE is consumed before it is
 * parsed, and a CQE whose resource is no longer in the context's table (an
 * SRQ destroyed before its completions were polled: mlx5_destroy_srq does
 * not clean the CQ) fails the parse with CQ_POLL_ERR.  The call then
 * returns that error, not the count: the completions it had already taken
 * in this batch are lost with it.  A send's CQE frees its send queue slots.
 */
static int m_cqe_parse(const struct fake_cqe *e)
{
	if (e->srqn && !srq_live(e->srqn))
		return -2;
	if (!e->srqn)
		sq_retire(e->wc.qp_num, e->seq);
	return 0;
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

/* The toy device: plain limits, and it grants what is asked. */
static int plain_sq_check(const struct xm_device *d, enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
	(void)type;
	if (cap->max_send_wr > (uint32_t)d->max_qp_wr || cap->max_send_sge > (uint32_t)d->max_sge ||
	    cap->max_inline_data > 1024)
		return EINVAL;
	return 0;
}

/*
 * The send queue rules of mlx4 (rdma-core providers/mlx4: mlx4_create_qp_ex,
 * mlx4_calc_sq_wqe_size, mlx4_set_sq_sizes; the kernel's mlx4_ib
 * set_user_sq_size).  libmlx4 refuses more than max_qp_wr WRs, max_sge
 * SGEs or 1024 bytes inline.  An XRC_SEND WQE is laid out as an RC one (the
 * SRQ number rides in the control segment): a 16-byte control segment, a
 * 16-byte remote address segment and the data segments, or the inline data
 * with a 4-byte header per 60 bytes (the first chunk starting 32 bytes into
 * a 64-byte block), at least an atomic's 48 bytes after the control
 * segment; the stride is that rounded up to a power of two, at least 64.
 * The queue keeps 2 KB plus one WQE of spares for prefetch, and its size
 * (WRs plus spares) is rounded up to a power of two.  The kernel refuses a
 * queue of more than max_wqes entries (max_qp_wr + 33 on ConnectX-3) or a
 * stride beyond max_sq_desc_sz rounded up (1008: 1024).  What is granted:
 * the WRs and SGEs the stride and queue hold, and the inline data that
 * fits the stride.
 */
static int mlx4_sq_check(const struct xm_device *d, enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
	uint32_t inl_segs, sge, size, stride = 64, spare, cnt = 1, room;

	(void)type;
	if (plain_sq_check(d, type, cap))
		return EINVAL;
	inl_segs = (cap->max_inline_data + 32 + 64 - 4 - 1) / (64 - 4);
	sge = (cap->max_inline_data + inl_segs * 4 + 15) / 16;
	if (sge < cap->max_send_sge)
		sge = cap->max_send_sge;
	size = sge * 16 + 16;
	if (size < 48)
		size = 48;
	size += 16;
	while (stride < size)
		stride <<= 1;
	spare = 2048 / stride + 1;
	while (cnt < cap->max_send_wr + spare)
		cnt <<= 1;
	if (cnt > (uint32_t)d->max_qp_wr + 33 || stride > (uint32_t)d->max_wqe)
		return EINVAL;
	room = stride - 16 - 16;
	cap->max_send_sge = room / 16;
	cap->max_send_wr = cnt - spare;
	cap->max_inline_data = room - 4 * ((room + 63) / 64);
	return 0;
}

const struct xm_device xm_dev_toy = {
	.name = "toy", .max_qp_wr = 256, .max_sge = 4, .max_qp_rd_atom = 4,
	.max_qp_init_rd_atom = 4, .max_srq_wr = 256, .max_srq_sge = 4,
	.sq_check = plain_sq_check,
};

const struct xm_device xm_dev_mlx5 = {
	.name = "mlx5", .max_qp_wr = 32768, .max_sge = 30, .max_qp_rd_atom = 16,
	.max_qp_init_rd_atom = 16, .max_srq_wr = 32767, .max_srq_sge = 31, .max_wqe = 512,
	.sq_check = mlx5_sq_check,
};

const struct xm_device xm_dev_mlx4 = {
	.name = "mlx4", .max_qp_wr = 16351, .max_sge = 32, .max_qp_rd_atom = 16,
	.max_qp_init_rd_atom = 128, .max_srq_wr = 16383, .max_srq_sge = 31, .max_wqe = 1024,
	.sq_check = mlx4_sq_check,
};

int xm_profile_toy(void)
{
	xm_profile = &xm_dev_toy;
	return 0;
}

int xm_profile_mlx5(void)
{
	xm_profile = &xm_dev_mlx5;
	return 0;
}

int xm_profile_mlx4(void)
{
	xm_profile = &xm_dev_mlx4;
	return 0;
}

/* ---- QP state transitions ------------------------------------------------ */

/*
 * The attributes the kernel core requires and allows per QP type and
 * transition (drivers/infiniband/core/verbs.c, ib_modify_qp_is_ok), for the
 * types and transitions the provider uses.  IBV_QP_STATE is always allowed;
 * any state may go to RESET, and any but RESET to ERR (the kernel's
 * qp_state_table: RESET leads only to RESET and INIT), with no other
 * attribute; a transition missing here is refused.
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

	if (next == IBV_QPS_ERR && cur == IBV_QPS_RESET)
		return EINVAL;
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

/* ---- async events ----------------------------------------------------------- */

/*
 * What the device reports on a process's async fd, until xm_pump hands it
 * to ia.c's handler (the async thread) or a destroy waits for it.
 */
static struct {
	struct xm_proc *p;
	struct ibv_async_event ev;
} asyncq[XM_MAX_ASYNC];
static int nasync;
static int async_delivered[IBV_EVENT_WQ_FATAL + 1];

static void async_queue(struct xm_proc *p, const struct ibv_async_event *ev)
{
	CU_ASSERT_FATAL(nasync < XM_MAX_ASYNC);
	if (p->dead)
		return;
	asyncq[nasync].p = p;
	asyncq[nasync++].ev = *ev;
}

static void async_take(int i)
{
	memmove(&asyncq[i], &asyncq[i + 1], (size_t)(--nasync - i) * sizeof(asyncq[0]));
}

static void async_count(const struct ibv_async_event *ev)
{
	if ((unsigned int)ev->event_type < sizeof(async_delivered) / sizeof(async_delivered[0]))
		async_delivered[ev->event_type]++;
}

/* Hands the queued events over; true if there were any. */
static bool async_pump(void)
{
	bool any = nasync > 0;

	while (nasync) {
		struct xm_proc *p = asyncq[0].p;
		struct ibv_async_event ev = asyncq[0].ev;

		async_take(0);
		if (p->dead)
			continue;	/* its fd closed with it */
		async_count(&ev);
		ofx_ia_async_event(&p->ia, &ev);
	}
	return any;
}

int xm_async_events(enum ibv_event_type type)
{
	return async_delivered[type];
}

static bool destroy_waits_for_events(void *elem);
static void event_unacked(struct xm_proc *p, void *elem, enum ibv_event_type type);

/*
 * libibverbs' destroy of a QP or SRQ returns only once the events reported
 * for it are acknowledged: the async thread runs the handler meanwhile
 * (destroy_waits_for_events).
 */
static bool async_settle(void *elem)
{
	for (int i = 0; i < nasync; i++) {
		struct xm_proc *p = asyncq[i].p;
		struct ibv_async_event ev = asyncq[i].ev;

		if ((void *)ev.element.qp != elem)
			continue;
		async_take(i--);
		async_count(&ev);
		event_unacked(p, elem, ev.event_type);
		if (!destroy_waits_for_events(elem))
			return false;
	}
	return true;
}

/* ---- domains, SRQs ------------------------------------------------------- */

/* The domain loses a handle; the last one takes it. */
static void xrcd_release(struct fake_obj *obj)
{
	struct xm_xrcd *x = container_of(obj, struct xm_xrcd, obj);

	if (--x->dom->refs == 0) {
		slot_del((void **)domains, x->dom);
		free(x->dom);
	}
	x->dom = NULL;
}

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
	x = fake_obj_new(FAKE_XRCD, sizeof(*x), ctx);
	x->obj.release = xrcd_release;
	x->xrcd.context = ctx;
	x->dom = dom;
	return &x->xrcd;
}

static int m_close_xrcd(struct ibv_xrcd *xrcd)
{
	fake_obj_destroy(&container_of(xrcd, struct xm_xrcd, xrcd)->obj);
	return 0;
}

static struct xm_domain *dom_of(struct ibv_xrcd *xrcd)
{
	return container_of(xrcd, struct xm_xrcd, xrcd)->dom;
}

static void srq_release(struct fake_obj *obj)
{
	struct xm_srq *s = container_of(obj, struct xm_srq, fs.obj);

	free(s->q);
	s->q = NULL;
	s->n = 0;
}

/* An XRC SRQ; mlx5_destroy_srq (the core's destroy) leaves its CQEs in the CQ. */
static struct ibv_srq *m_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	struct fake_srq *f;
	struct xm_srq *s;

	if (attr->srq_type != IBV_SRQT_XRC || !attr->xrcd || !attr->cq ||
	    attr->attr.max_wr > (uint32_t)dev_of(ctx)->max_srq_wr ||
	    attr->attr.max_sge > (uint32_t)dev_of(ctx)->max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	f = fake_srq_new(ctx, attr, sizeof(*s));
	if (!f)
		return NULL;
	s = container_of(f, struct xm_srq, fs);
	s->fs.obj.release = srq_release;
	s->q = calloc(attr->attr.max_wr ? attr->attr.max_wr : 1, sizeof(*s->q));
	s->node = proc_of(ctx)->node;
	s->dom = dom_of(attr->xrcd);
	s->srqn = srqn_next[s->node]++;
	s->cq = attr->cq;
	s->max_wr = attr->attr.max_wr ? attr->attr.max_wr : 1;
	return &f->srq;
}

/*
 * mlx5_ib_modify_srq: no resizing (IBV_SRQ_MAX_WR is EINVAL); a limit must
 * be below the SRQ's size, and arms it (0: disarmed).
 */
static int m_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct xm_srq *s = container_of(srq, struct xm_srq, fs.srq);

	if (s->fs.obj.closed || (mask & IBV_SRQ_MAX_WR) ||
	    ((mask & IBV_SRQ_LIMIT) && attr->srq_limit >= s->max_wr))
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	return 0;
}

static int m_destroy_srq(struct ibv_srq *srq)
{
	if (!container_of(srq, struct xm_srq, fs.srq)->fs.obj.closed && !async_settle(srq))
		return 0;
	return fake_verbs_core.destroy_srq(srq);
}

/*
 * The SRQ's WQEs fell below its armed limit: the device reports
 * SRQ_LIMIT_REACHED once and disarms it (the consumer re-arms).
 */
static void srq_limit_check(struct xm_srq *s)
{
	struct ibv_async_event ev = { .element.srq = &s->fs.srq,
				      .event_type = IBV_EVENT_SRQ_LIMIT_REACHED };

	if (!s->limit || (uint32_t)s->n >= s->limit)
		return;
	s->limit = 0;
	async_queue(proc_of(s->fs.srq.context), &ev);
}

static bool srq_live(uint32_t srqn)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_SRQ)
		if (srq_at(pos)->srqn == srqn)
			return true;
	return false;
}

static int m_get_srq_num(struct ibv_srq *srq, uint32_t *n)
{
	*n = container_of(srq, struct xm_srq, fs.srq)->srqn;
	return 0;
}

static void progress_pending(void);

static int m_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct xm_srq *s = container_of(srq, struct xm_srq, fs.srq);

	if (s->fs.obj.closed) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		struct xm_recv *r;

		if ((uint32_t)s->n >= s->max_wr || wr->num_sge > XM_MAX_SGE) {
			*bad = wr;
			return -ENOMEM;
		}
		r = &s->q[(s->head + s->n) % s->max_wr];
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

/*
 * The QP handle goes (destroyed, or closed by the kernel at its process's
 * exit): a TGT with its last handle; as mlx5_destroy_qp does, an INI's or
 * RC QP's CQEs leave its CQs (a TGT has no CQ; an XRC SRQ's CQEs are the
 * SRQ's).
 */
static void qp_release(struct fake_obj *obj)
{
	struct xm_qp *q = container_of(obj, struct xm_qp, fq.obj);
	struct ibv_qp *qp = &q->fq.qp;

	if (q->tgt) {
		if (--q->tgt->handles == 0) {
			slot_del((void **)tgts, q->tgt);
			free(q->tgt);
		}
	} else {
		fake_cq_clean(qp->send_cq, qp->qp_num);
		if (qp->qp_type != IBV_QPT_XRC_SEND && qp->recv_cq != qp->send_cq)
			fake_cq_clean(qp->recv_cq, qp->qp_num);
	}
	q->tgt = NULL;
	q->npend = 0;
}

/*
 * The TGT enters the error state: as on mlx5, a QP fed by SRQs reports
 * LAST_WQE_REACHED, and the kernel passes a shared QP's events to every
 * handle of it (ib_open_qp), each on its own process's async fd.
 */
static void tgt_error(struct xm_tgt *t)
{
	struct ofx_list *pos, *tmp;

	if (t->state == IBV_QPS_ERR)
		return;
	t->state = IBV_QPS_ERR;
	xm_for_each(pos, tmp, FAKE_QP) {
		struct xm_qp *h = qp_at(pos);
		struct ibv_async_event ev = { .element.qp = &h->fq.qp,
					      .event_type = IBV_EVENT_QP_LAST_WQE_REACHED };

		if (h->tgt == t) {
			h->fq.qp.state = IBV_QPS_ERR;
			async_queue(proc_of(h->fq.qp.context), &ev);
		}
	}
}

static struct ibv_qp *m_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	const struct xm_device *d = dev_of(ctx);
	struct xm_qp *q;
	int ret;

	if (attr->qp_type == IBV_QPT_XRC_SEND && xm_ini_create_errno) {
		errno = xm_ini_create_errno;
		return NULL;
	}
	/* a TGT has no send queue; the others obey the device's sizing */
	if (attr->qp_type != IBV_QPT_XRC_RECV) {
		ret = d->sq_check(d, attr->qp_type, &attr->cap);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}
	q = container_of(fake_qp_new(ctx, attr, sizeof(*q)), struct xm_qp, fq);
	q->fq.obj.release = qp_release;
	q->cap = attr->cap;
	q->node = proc_of(ctx)->node;
	switch (attr->qp_type) {
	case IBV_QPT_XRC_RECV:
		CU_ASSERT_FATAL(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD);
		q->tgt = calloc(1, sizeof(*q->tgt));
		q->tgt->node = q->node;
		q->tgt->dom = dom_of(attr->xrcd);
		q->tgt->qpn = q->fq.qp.qp_num;
		q->tgt->handles = 1;
		q->tgt->state = IBV_QPS_RESET;
		slot_add((void **)tgts, q->tgt);
		break;
	case IBV_QPT_XRC_SEND:
		CU_ASSERT_FATAL(attr->send_cq && attr->pd);
		break;
	default:
		break;
	}
	return &q->fq.qp;
}

static struct ibv_qp *m_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	struct xm_tgt *t = tgt_find(proc_of(ctx)->node, attr->qp_num);
	struct xm_qp *q;

	if (!t || t->dom != dom_of(attr->xrcd)) {
		errno = ENOENT;
		return NULL;
	}
	q = fake_obj_new(FAKE_QP, sizeof(*q), ctx);
	q->fq.obj.release = qp_release;
	q->fq.qp.context = ctx;
	q->fq.qp.qp_type = IBV_QPT_XRC_RECV;
	q->fq.qp.qp_num = t->qpn;
	q->fq.qp.state = t->state;
	q->node = t->node;
	q->tgt = t;
	t->handles++;
	return &q->fq.qp;
}

/*
 * The kernel core's attribute masks (qp_rules), then the device's limits on
 * the read depths (mlx5 refuses more than its max_qp_rd_atom either way).
 */
static int m_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct xm_qp *q = xm_qp_of(qp);
	struct xm_qp_attrs *a = q->tgt ? &q->tgt->attrs : &q->attrs;
	const struct xm_device *d = dev_of(qp->context);
	enum ibv_qp_state cur = q->tgt ? q->tgt->state : qp->state;
	enum ibv_qp_state next = mask & IBV_QP_STATE ? attr->qp_state : cur;

	if (q->fq.obj.closed)
		return 0;
	if (qp_mask_check(qp->qp_type, cur, next, mask))
		return EINVAL;
	if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > d->max_qp_init_rd_atom) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > d->max_qp_rd_atom))
		return EINVAL;
	if (q->tgt && next == IBV_QPS_ERR)
		tgt_error(q->tgt);
	qp->state = next;
	if (q->tgt)
		q->tgt->state = next;
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

/* What ibv_query_qp reports: the state, the peer and the read depths set. */
static int m_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *init)
{
	struct xm_qp *q = xm_qp_of(qp);
	const struct xm_qp_attrs *a = q->tgt ? &q->tgt->attrs : &q->attrs;

	(void)mask;
	if (q->fq.obj.closed)
		return EBADF;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = qp->state;
	attr->dest_qp_num = q->dest;
	attr->max_rd_atomic = (uint8_t)a->max_rd_atomic;
	attr->max_dest_rd_atomic = (uint8_t)a->max_dest_rd_atomic;
	init->qp_type = qp->qp_type;
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
 * A handler that cannot finish within 30 s (it waits for a lock the
 * destroyer holds) is a deadlock on a device; one that is merely slow on a
 * busy machine finishes well within that.  False then: the QP's memory
 * is kept, the handler may still read it.
 */
static bool destroy_waits_for_events(void *elem)
{
	struct timespec ts;

	if (!unacked.pending || (void *)unacked.ev.element.qp != elem)
		return true;
	unacked.pending = false;
	CU_ASSERT_FATAL(pthread_create(&unacked.thread, NULL, async_handler_thread, NULL) == 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	if (pthread_timedjoin_np(unacked.thread, NULL, &ts) == 0)
		return true;
	CU_FAIL("ibv_destroy_qp waits for an async event whose handler is blocked");
	unacked.stuck = true;
	return false;
}

static void event_unacked(struct xm_proc *p, void *elem, enum ibv_event_type type)
{
	CU_ASSERT_FATAL(!unacked.pending);
	unacked.p = p;
	unacked.ev.element.qp = elem;
	unacked.ev.event_type = type;
	unacked.pending = true;
}

void xm_async_qp_event_unacked(struct xm_proc *p, struct ibv_qp *qp, enum ibv_event_type type)
{
	event_unacked(p, qp, type);
}

static int m_destroy_qp(struct ibv_qp *qp)
{
	if (!xm_qp_of(qp)->fq.obj.closed && (!async_settle(qp) || !destroy_waits_for_events(qp)))
		return 0;
	return fake_verbs_core.destroy_qp(qp);
}

/*
 * An RC QP's receive queue only counts what it is given (no RC traffic is
 * modelled); a QP in RESET takes none, and XRC QPs have no receive queue.
 */
static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (qp->qp_type != IBV_QPT_RC || qp->state == IBV_QPS_RESET ||
	    xm_qp_of(qp)->fq.obj.closed) {
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

/* What the requester's completion of a WR says it was. */
static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static bool op_is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* The device writes the WR's local segments: a READ's data, an atomic's old value. */
static bool op_writes_local(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ || op_is_atomic(op);
}

static void send_wc(struct xm_qp *q, const struct xm_send *s, enum ibv_wc_status st)
{
	struct fake_cqe e = { .wc = { .wr_id = s->wr_id, .status = st, .opcode = wc_opcode(s->op),
				      .qp_num = q->fq.qp.qp_num },
			      .seq = s->seq };

	/* mlx5 reports the bytes a READ brought, and 8 for an atomic */
	if (op_writes_local(s->op) && st == IBV_WC_SUCCESS)
		e.wc.byte_len = op_is_atomic(s->op) ? 8 : s->len;
	if (s->signaled || st != IBV_WC_SUCCESS)
		fake_cq_push_cqe(q->fq.qp.send_cq, &e);
}

static void sq_retire(uint32_t qpn, uint64_t seq)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_QP) {
		struct xm_qp *q = qp_at(pos);

		if (q->fq.qp.qp_num == qpn && !q->tgt && seq > q->retired)
			q->retired = seq;
	}
}

static bool mr_covers(const struct fake_mr *m, uint64_t addr, uint32_t len, int access)
{
	return (m->access & access) == access && addr >= (uintptr_t)m->mr.addr &&
	       addr + len <= (uintptr_t)m->mr.addr + m->mr.length;
}

/*
 * The bytes at [addr, addr + len) of an MR that `rkey` opens for `access`
 * in `pd`: an XRC responder checks rkeys against the PD of the SRQ the
 * request names (a TGT QP has none).
 */
static void *rkey_find(struct ibv_pd *pd, uint32_t rkey, uint64_t addr, uint32_t len, int access)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_MR) {
		const struct fake_mr *m = container_of(pos, struct fake_mr, obj.link);

		if (m->mr.rkey == rkey && m->mr.pd == pd && mr_covers(m, addr, len, access))
			return (void *)(uintptr_t)addr;
	}
	return NULL;
}

/*
 * A local segment as the device checks it when it executes the WR: an MR
 * of `pd` (the QP's, or the SRQ's for a receive) that its lkey names must
 * cover it with `access` (IBV_ACCESS_LOCAL_WRITE where the device writes).
 * mlx5 posts no data segment for a zero-length one: it is not checked.
 */
static bool lkey_ok(struct ibv_pd *pd, const struct ibv_sge *sge, int access)
{
	struct ofx_list *pos, *tmp;

	if (!sge->length)
		return true;
	xm_for_each(pos, tmp, FAKE_MR) {
		const struct fake_mr *m = container_of(pos, struct fake_mr, obj.link);

		if (m->mr.lkey == sge->lkey && m->mr.pd == pd &&
		    mr_covers(m, sge->addr, sge->length, access))
			return true;
	}
	return false;
}

/*
 * SEND_WITH_INV: `rkey` must name a window of `pd` (the target SRQ's) of
 * type 2 that is not invalidated already; it is invalid from now on, until
 * bound again.  (Type 2 binds go through post_send, which the model does
 * not execute on RC QPs: an allocated window counts as bound.)
 */
static bool mw_invalidate(struct ibv_pd *pd, uint32_t rkey)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_MW) {
		struct xm_mw *w = container_of(pos, struct xm_mw, fm.obj.link);

		if (w->fm.mw.rkey == rkey && w->fm.mw.pd == pd &&
		    w->fm.mw.type == IBV_MW_TYPE_2 && !w->invalid) {
			w->invalid = true;
			return true;
		}
	}
	return false;
}

/* The INI QP fails: the WR gets `st`, everything held behind it is flushed. */
static void ini_error(struct xm_qp *q, uint64_t wr_id, enum ibv_wc_status st)
{
	q->fq.qp.state = IBV_QPS_ERR;
	for (int i = 0; i < q->npend; i++)
		send_wc(q, &q->pend[i], q->pend[i].wr_id == wr_id ? st : IBV_WC_WR_FLUSH_ERR);
	q->npend = 0;
}

/*
 * The responder refused the request (a NAK): the requester's WR fails
 * with `st` and its INI QP is in error; the TGT goes to error too.  False,
 * for deliver's callers.
 */
static bool nak(struct xm_qp *q, struct xm_tgt *t, const struct xm_send *s, enum ibv_wc_status st)
{
	tgt_error(t);
	ini_error(q, s->wr_id, st);
	return false;
}

static struct xm_srq *srq_find(struct xm_tgt *t, uint32_t srqn)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_SRQ) {
		struct xm_srq *s = srq_at(pos);

		if (s->srqn == srqn && s->node == t->node && s->dom == t->dom)
			return s;
	}
	return NULL;
}

/*
 * What the TGT's access flags (set at RESET->INIT) must allow: a request
 * they do not is an invalid request (rxe's check_op_valid).
 */
static int op_access(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_ACCESS_REMOTE_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_ACCESS_REMOTE_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return 0;
	}
}

/*
 * Writes the message of `s` into receive `r` of `srq`, segment by segment
 * as the device scatters it: a segment the SRQ's PD does not open for
 * local write fails it (LOC_PROT_ERR), bytes beyond the last segment fail
 * it (LOC_LEN_ERR).  What fit before the error is written, as on a device.
 */
static enum ibv_wc_status recv_scatter(struct xm_srq *srq, const struct xm_recv *r,
				       const struct xm_send *s)
{
	uint32_t off = 0;

	for (int i = 0; i < r->nsge && off < s->len; i++) {
		uint32_t n = s->len - off < r->sge[i].length ? s->len - off : r->sge[i].length;

		if (!lkey_ok(srq->fs.srq.pd, &r->sge[i], IBV_ACCESS_LOCAL_WRITE))
			return IBV_WC_LOC_PROT_ERR;
		memcpy((void *)(uintptr_t)r->sge[i].addr, s->data + off, n);
		off += n;
	}
	return off < s->len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

/* RDMA WRITE and READ: no receive is taken, the rkey is the SRQ's PD's. */
static bool deliver_rdma(struct xm_qp *q, struct xm_tgt *t, struct xm_srq *srq,
			 const struct xm_send *s)
{
	bool rd = s->op == IBV_WR_RDMA_READ;
	uint8_t *mem = NULL;
	uint32_t off = 0;

	if (s->len) {
		mem = rkey_find(srq->fs.srq.pd, s->rkey, s->raddr, s->len,
				rd ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE);
		if (!mem)
			return nak(q, t, s, IBV_WC_REM_ACCESS_ERR);
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

/*
 * An atomic: the 8-byte aligned word at the remote address (an rkey of
 * the SRQ's PD with remote atomic access) is compared and swapped or
 * added to, and its old value lands in the requester's segment; no
 * receive is taken and the responder reports nothing.  A misaligned
 * address is an invalid request.
 */
static bool deliver_atomic(struct xm_qp *q, struct xm_tgt *t, struct xm_srq *srq,
			   const struct xm_send *s)
{
	uint64_t *word, old;

	if (s->raddr % 8 || s->nsge != 1 || s->sge[0].length < 8)
		return nak(q, t, s, IBV_WC_REM_INV_REQ_ERR);
	word = rkey_find(srq->fs.srq.pd, s->rkey, s->raddr, 8, IBV_ACCESS_REMOTE_ATOMIC);
	if (!word)
		return nak(q, t, s, IBV_WC_REM_ACCESS_ERR);
	old = *word;
	if (s->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		*word = old + s->compare_add;
	else if (old == s->compare_add)
		*word = s->swap;
	memcpy((void *)(uintptr_t)s->sge[0].addr, &old, sizeof(old));
	send_wc(q, s, IBV_WC_SUCCESS);
	return true;
}

/*
 * SEND, SEND_WITH_IMM, SEND_WITH_INV and RDMA_WRITE_WITH_IMM take the
 * SRQ's next receive (none: RNR, the message waits).  A WRITE_WITH_IMM
 * writes its bytes at the remote address, not into the receive, which
 * completes as RECV_RDMA_WITH_IMM with the bytes written; a send with
 * invalidate first invalidates the window its rkey names (an rkey that
 * names none is an invalid request).
 */
static bool deliver_recv(struct xm_qp *q, struct xm_tgt *t, struct xm_srq *srq,
			 const struct xm_send *s)
{
	bool wimm = s->op == IBV_WR_RDMA_WRITE_WITH_IMM;
	struct ibv_wc wc = { .opcode = IBV_WC_RECV, .byte_len = s->len, .qp_num = t->qpn,
			     .src_qp = q->fq.qp.qp_num };
	uint8_t *mem = NULL;
	struct xm_recv *r;

	if (!srq->n) {
		if (xm_rnr_limited)
			ini_error(q, s->wr_id, IBV_WC_RNR_RETRY_EXC_ERR);
		return false;
	}
	if (wimm && s->len) {
		mem = rkey_find(srq->fs.srq.pd, s->rkey, s->raddr, s->len, IBV_ACCESS_REMOTE_WRITE);
		if (!mem)
			return nak(q, t, s, IBV_WC_REM_ACCESS_ERR);
	}
	if (s->op == IBV_WR_SEND_WITH_INV && !mw_invalidate(srq->fs.srq.pd, s->inv_rkey))
		return nak(q, t, s, IBV_WC_REM_INV_REQ_ERR);
	r = &srq->q[srq->head];
	srq->head = (srq->head + 1) % srq->max_wr;
	srq->n--;
	srq_limit_check(srq);
	wc.wr_id = r->wr_id;
	if (wimm) {
		if (s->len)
			memcpy(mem, s->data, s->len);
		wc.status = IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	} else {
		wc.status = recv_scatter(srq, r, s);
	}
	if (wimm || s->op == IBV_WR_SEND_WITH_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = s->imm;
	} else if (s->op == IBV_WR_SEND_WITH_INV) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = s->inv_rkey;
	}
	fake_cq_push_cqe(srq->cq, &(struct fake_cqe){ .wc = wc, .srqn = srq->srqn });
	if (wc.status != IBV_WC_SUCCESS) {
		/*
		 * The responder failed the receive (mlx5's LOCAL_LENGTH_ERR or
		 * LOCAL_PROT_ERR syndrome) and NAKs the message: an invalid
		 * request when it does not fit (IB 9.9.3, a length error), a
		 * remote operational error when its own segment is bad.  The
		 * requester's WR fails with that, its INI QP is in error and
		 * every later WR of it flushed.
		 */
		return nak(q, t, s, wc.status == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR :
								       IBV_WC_REM_OP_ERR);
	}
	send_wc(q, s, IBV_WC_SUCCESS);
	return true;
}

/* Tries to deliver the oldest held send of `q`; false if it must wait. */
static bool deliver(struct xm_qp *q, struct xm_send *s)
{
	struct xm_tgt *t = tgt_find(-1, q->dest);
	struct xm_srq *srq;

	/* the requester's own segments fail before anything leaves (LOCAL_PROT_ERR) */
	if (s->bad_lkey) {
		ini_error(q, s->wr_id, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	/*
	 * A responder QP that is gone, or not in RTR or RTS (RESET, INIT,
	 * ERROR), silently discards what reaches it (IB 10.3.1): the
	 * requester's retries run out.
	 */
	if (!t || (t->state != IBV_QPS_RTR && t->state != IBV_QPS_RTS)) {
		ini_error(q, s->wr_id, IBV_WC_RETRY_EXC_ERR);
		return false;
	}
	/* every XRC request names an SRQ of the TGT's domain, RDMA WRITEs too */
	srq = srq_find(t, s->srqn);
	if (!srq)
		return nak(q, t, s, IBV_WC_REM_INV_REQ_ERR);
	if ((t->attrs.access & op_access(s->op)) != op_access(s->op))
		return nak(q, t, s, IBV_WC_REM_INV_REQ_ERR);
	switch (s->op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		return deliver_rdma(q, t, srq, s);
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return deliver_atomic(q, t, srq, s);
	default:
		return deliver_recv(q, t, srq, s);
	}
}

static void progress_qp(struct xm_qp *q)
{
	while (q->npend && q->fq.qp.state == IBV_QPS_RTS) {
		if (!deliver(q, &q->pend[0]))
			return;
		memmove(&q->pend[0], &q->pend[1], --q->npend * sizeof(q->pend[0]));
	}
}

static void progress_pending(void)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_QP) {
		struct xm_qp *q = qp_at(pos);

		if (q->fq.qp.qp_type == IBV_QPT_XRC_SEND && q->npend)
			progress_qp(q);
	}
}

/* A WR's local segments (none for inline data: the device copied it at post). */
static bool sges_ok(struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
	int access = op_writes_local(wr->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;

	if (wr->send_flags & IBV_SEND_INLINE)
		return true;
	for (int i = 0; i < wr->num_sge; i++)
		if (!lkey_ok(qp->pd, &wr->sg_list[i], access))
			return false;
	return true;
}

/* The held copy of `wr`: what it names, and the bytes it sends (copied at post). */
static void send_hold(struct xm_qp *q, struct xm_send *s, const struct ibv_send_wr *wr)
{
	s->wr_id = wr->wr_id;
	s->seq = ++q->posted;
	s->signaled = wr->send_flags & IBV_SEND_SIGNALED;
	s->srqn = wr->qp_type.xrc.remote_srqn;
	s->op = wr->opcode;
	if (op_is_atomic(wr->opcode)) {
		s->raddr = wr->wr.atomic.remote_addr;
		s->rkey = wr->wr.atomic.rkey;
		s->compare_add = wr->wr.atomic.compare_add;
		s->swap = wr->wr.atomic.swap;
	} else {
		s->raddr = wr->wr.rdma.remote_addr;
		s->rkey = wr->wr.rdma.rkey;
	}
	s->imm = wr->imm_data;
	s->inv_rkey = wr->opcode == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey : 0;
	s->nsge = wr->num_sge;
	if (wr->num_sge)
		memcpy(s->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
	s->bad_lkey = !sges_ok(&q->fq.qp, wr);
	CU_ASSERT(wr->qp_type.xrc.remote_srqn != 0);
	s->len = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		if (!op_writes_local(s->op)) {
			CU_ASSERT_FATAL(s->len + wr->sg_list[i].length <= sizeof(s->data));
			memcpy(s->data + s->len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
		}
		s->len += wr->sg_list[i].length;
	}
}

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct xm_qp *q = xm_qp_of(qp);

	if (qp->qp_type != IBV_QPT_XRC_SEND || q->fq.obj.closed) {
		*bad = wr;
		return -EINVAL; /* the RC QP of an XRC EP never sends in these tests */
	}
	for (; wr; wr = wr->next) {
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
		send_hold(q, &q->pend[q->npend++], wr);
	}
	progress_qp(q);
	return 0;
}

/* ---- memory (the windows of dat_rmr_bind) ----------------------------------- */

/*
 * A bind is a send queue WR: on a QP that is not in RTS (the unconnected RC
 * QP of an XRC EP) mlx5 takes it and never executes it: no completion.
 */
static int m_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	int ret = fake_verbs_core.bind_mw(qp, mw, bind);

	if (!ret)
		container_of(mw, struct xm_mw, fm.mw)->invalid = false;
	if (!ret && qp->state == IBV_QPS_RTS) {
		struct ibv_wc wc = { .wr_id = bind->wr_id, .opcode = IBV_WC_BIND_MW,
				     .qp_num = qp->qp_num };

		fake_cq_push_cq(qp->send_cq, &wc);
	}
	return ret;
}

/* As fake_verbs allocates one, with room for the invalidated flag (xm_mw). */
static struct ibv_mw *m_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xm_mw *w = fake_obj_new(FAKE_MW, sizeof(*w), pd->context);

	w->fm.mw.pd = pd;
	w->fm.mw.context = pd->context;
	w->fm.mw.type = type;
	w->fm.mw.rkey = 0x5500 + (fake_verbs.mw_keys++ << 8);
	return &w->fm.mw;
}

/* ---- rdma_cm (the XRC carrier's ids: RDMA_PS_UDP and RDMA_PS_IB) --------- */

/* IB CM private data areas: a receiver sees the whole one, whatever was sent. */
enum { XM_REQ_AREA = 56, XM_REJ_AREA = 148, XM_REP_AREA = 196 };

struct xm_id {
	struct fake_id fid;
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
	enum { XM_ID_IDLE, XM_ID_ADDR, XM_ID_ROUTE } resolved;
	bool req_rcvd;			/* a passive end that neither accepted nor rejected yet */
	struct ibv_sa_path_rec path;	/* id->route.path_rec once the route is resolved */
};

static struct xm_id *xm_id_of(struct rdma_cm_id *id)
{
	return container_of(id, struct xm_id, fid.id);
}

static struct xm_id *id_at(struct ofx_list *pos)
{
	return container_of(pos, struct xm_id, fid.obj.link);
}

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
	struct rdma_cm_event *ev = fake_cm_queue(&to->fid.id, type, status, pdata, len);

	ev->listen_id = listen ? &listen->fid.id : NULL;
	if (ud)
		return;
	if (len)
		ev->param.conn.private_data_len =
			type == RDMA_CM_EVENT_CONNECT_REQUEST ? XM_REQ_AREA :
			type == RDMA_CM_EVENT_REJECTED ? XM_REJ_AREA : XM_REP_AREA;
	if (cp)
		ev_depths(to, ev, cp);
}

static void ev_queue(struct xm_id *to, enum rdma_cm_event_type type, int status,
		     struct xm_id *listen, const void *pdata, int len, bool ud)
{
	ev_queue_cp(to, type, status, listen, pdata, len, ud, NULL);
}

/* The id goes (destroyed, or closed by the kernel at its process's exit). */
static void id_release(struct fake_obj *obj)
{
	struct xm_id *m = container_of(obj, struct xm_id, fid.obj);
	struct ofx_list *pos, *tmp;

	/*
	 * A connected IB peer hears a DREQ; one whose REQ was never answered
	 * a REJ (the kernel's cm_destroy_id in REQ_RCVD: consumer defined).
	 */
	if (m->peer && m->peer->peer == m) {
		m->peer->peer = NULL;
		if (m->fid.id.ps == RDMA_PS_IB)
			ev_queue(m->peer, m->req_rcvd ? RDMA_CM_EVENT_REJECTED :
					  RDMA_CM_EVENT_DISCONNECTED,
				 m->req_rcvd ? 28 : 0, NULL, NULL, 0, false);
	}
	xm_for_each(pos, tmp, FAKE_ID)
		if (id_at(pos)->peer == m)
			id_at(pos)->peer = NULL;
	m->peer = NULL;
	for (int i = 0; i < nrep_waiting; i++)
		if (rep_waiting[i] == m)
			rep_waiting[i--] = rep_waiting[--nrep_waiting];
}

static int m_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id_p, void *ctx,
		       enum rdma_port_space ps)
{
	struct xm_proc *p = proc_of_chan(ch);
	struct xm_id *m;

	if (!p || p->dead) {
		errno = ENODEV;
		return -1;
	}
	m = container_of(fake_cm_id_new(ch, ctx, ps, sizeof(*m)), struct xm_id, fid);
	m->fid.obj.ctx = &p->ctx;
	m->fid.obj.release = id_release;
	m->p = p;
	m->fid.id.verbs = &p->ctx;
	m->fid.id.route.addr.src_storage = p->ia.addr;
	*id_p = &m->fid.id;
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
	struct ofx_list *pos, *tmp;

	if (fake_verbs_core.bind_addr(id, addr))
		return -1;
	xm_for_each(pos, tmp, FAKE_ID) {
		struct rdma_cm_id *other = &id_at(pos)->fid.id;

		if (port && other != id && other->ps == id->ps &&
		    id_at(pos)->p->node == xm_id_of(id)->p->node && id_port(other) == port) {
			errno = EADDRINUSE;
			return -1;
		}
	}
	memcpy(sin, addr, sizeof(*sin));
	sin->sin_port = htons(port ? port : next_port++);
	return 0;
}

static int m_listen(struct rdma_cm_id *id, int backlog)
{
	xm_id_of(id)->listening = true;
	return fake_verbs_core.listen(id, backlog);
}

/* ---- the IB fabric (xrc_model.h): ports, the SA, paths ---------------------- */

int xm_route_errors;
static struct xm_port { uint16_t lid; uint32_t hca; } ports[XM_MAX_NODES];

static struct xm_port *port_of(int node)
{
	CU_ASSERT_FATAL(node >= 0 && node < XM_MAX_NODES);
	return &ports[node];
}

static void fabric_init(void)
{
	for (int n = 0; n < XM_MAX_NODES; n++) {
		ports[n].lid = (uint16_t)(n + 1);
		ports[n].hca = 0;
	}
	xm_route_errors = 0;
}

void xm_node_next_srqn(int node, uint32_t srqn)
{
	CU_ASSERT_FATAL(node >= 0 && node < XM_MAX_NODES);
	srqn_next[node] = srqn;
}

void xm_node_renumber(int node)
{
	port_of(node)->lid = (uint16_t)(port_of(node)->lid + XM_MAX_NODES);
}

void xm_node_replace(int node)
{
	port_of(node)->hca++;
	xm_node_renumber(node);
}

/* The node an address of the model names (10.0.0.1 + node), or -1. */
static int node_of(const struct sockaddr_in *sin)
{
	long n = (long)ntohl(sin->sin_addr.s_addr) - 0x0a000001L;

	return n >= 0 && n < XM_MAX_NODES ? (int)n : -1;
}

static union ibv_gid port_gid(int node)
{
	union ibv_gid g;

	g.global.subnet_prefix = htobe64(0xfe80000000000000ull);
	g.global.interface_id = htobe64(0x0002c90300000000ull |
					(uint64_t)port_of(node)->hca << 16 | (uint64_t)(node + 1));
	return g;
}

static bool node_up(int node)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i] && !procs[i]->dead && procs[i]->node == node)
			return true;
	return false;
}

/* The SA's PathRecord from `from` to `to` as librdmacm hands it over. */
static void sa_path(int from, int to, struct ibv_sa_path_rec *p)
{
	memset(p, 0, sizeof(*p));
	p->sgid = port_gid(from);
	p->dgid = port_gid(to);
	p->slid = htobe16(port_of(from)->lid);
	p->dlid = htobe16(port_of(to)->lid);
	p->flow_label = htobe32(0x12345);
	p->hop_limit = 1;
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htobe16(0xffff);
	p->sl = 3;
	p->mtu_selector = 2;
	p->mtu = IBV_MTU_4096;
	p->rate_selector = 2;
	p->rate = 16;	/* 56 Gb/s */
	p->packet_life_time_selector = 2;
	p->packet_life_time = 14;
}

/* The kernel's ib_sa_unpack_path of what rdma_set_option gave, read back as librdmacm does. */
static void path_unpack(const struct ibv_path_record *r, struct ibv_sa_path_rec *p)
{
	uint32_t fl_hop = be32toh(r->flowlabel_hoplimit);

	memset(p, 0, sizeof(*p));
	p->dgid = r->dgid;
	p->sgid = r->sgid;
	p->dlid = r->dlid;
	p->slid = r->slid;
	p->flow_label = htobe32(fl_hop >> 8 & 0xfffff);
	p->hop_limit = (uint8_t)fl_hop;
	p->traffic_class = r->tclass;
	p->reversible = r->reversible_numpath >> 7;
	p->numb_path = r->reversible_numpath & 0x7f;
	p->pkey = r->pkey;
	p->sl = be16toh(r->qosclass_sl) & 0xf;
	p->mtu_selector = r->mtu >> 6;
	p->mtu = r->mtu & 0x3f;
	p->rate_selector = r->rate >> 6;
	p->rate = r->rate & 0x3f;
	p->packet_life_time_selector = r->packetlifetime >> 6;
	p->packet_life_time = r->packetlifetime & 0x3f;
}

/* The route is resolved: librdmacm points route.path_rec at it. */
static void route_set(struct xm_id *m)
{
	m->resolved = XM_ID_ROUTE;
	m->fid.id.route.path_rec = &m->path;
	m->fid.id.route.num_paths = 1;
	ev_queue(m, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL, 0, false);
}

static int m_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	struct xm_id *m = xm_id_of(id);
	int to = node_of((struct sockaddr_in *)dst);

	if (fake_verbs_core.resolve_addr(id, src, dst, timeout_ms))
		return -1;
	m->p->resolve_addrs++;
	memcpy(&id->route.addr.dst_sin, dst, sizeof(struct sockaddr_in));
	id->route.addr.addr.ibaddr.sgid = port_gid(m->p->node);
	if (to >= 0)
		id->route.addr.addr.ibaddr.dgid = port_gid(to);
	id->route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	m->resolved = XM_ID_ADDR;
	ev_queue(m, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL, 0, false);
	return 0;
}

/* rdma_resolve_route on IB: a PathRecord query to the SA. */
static int m_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct xm_id *m = xm_id_of(id);
	int to = node_of(&id->route.addr.dst_sin);

	if (fake_verbs_core.resolve_route(id, timeout_ms))
		return -1;
	if (m->resolved != XM_ID_ADDR) {
		errno = EINVAL;
		return -1;
	}
	m->p->resolve_routes++;
	if (xm_route_errors > 0 || to < 0) {
		xm_route_errors -= xm_route_errors > 0;
		ev_queue(m, RDMA_CM_EVENT_ROUTE_ERROR, -ETIMEDOUT, NULL, NULL, 0, false);
		return 0;
	}
	sa_path(m->p->node, to, &m->path);
	route_set(m);
	return 0;
}

/* ucma_set_ib_path: the one bidirectional primary path, on an id in ADDR_RESOLVED. */
static int m_set_ib_path(struct xm_id *m, const struct ibv_path_data *d, size_t len)
{
	const uint32_t primary = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
				 IBV_PATH_FLAG_BIDIRECTIONAL;
	size_t n = len / sizeof(*d);

	while (n && d->flags != primary) {
		n--;
		d++;
	}
	if (len % sizeof(*d) || !n || m->resolved != XM_ID_ADDR) {
		errno = EINVAL;
		return -1;
	}
	m->p->path_sets++;
	path_unpack(&d->path, &m->path);
	route_set(m);
	return 0;
}

static int m_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			size_t optlen)
{
	if (fake_verbs_core.set_option(id, level, optname, optval, optlen))
		return -1;
	if (level != RDMA_OPTION_IB || optname != RDMA_OPTION_IB_PATH)
		return 0;
	return m_set_ib_path(xm_id_of(id), optval, optlen);
}

/* The path of a connecting id still leads to its peer's port. */
static bool path_leads(const struct xm_id *m, int to)
{
	union ibv_gid g = port_gid(to);

	return m->path.dlid == htobe16(port_of(to)->lid) && !memcmp(&m->path.dgid, &g, sizeof(g));
}

/* The listener of the address `id` connects to, if one is up. */
static struct xm_id *listener_of(struct rdma_cm_id *id)
{
	struct xm_id *l = NULL;
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_ID) {
		struct xm_id *m = id_at(pos);

		if (m->listening && m->fid.id.ps == id->ps && !m->p->dead &&
		    m->fid.id.route.addr.src_sin.sin_addr.s_addr ==
			    id->route.addr.dst_sin.sin_addr.s_addr &&
		    id_port(&m->fid.id) == ntohs(id->route.addr.dst_sin.sin_port))
			l = m;
	}
	return l;
}

/*
 * The kernel's IB CM keeps the (QP number, CA) pair of every connection
 * of its node (cm_insert_remote_qpn, drivers/infiniband/core/cm.c): a
 * passive id's from the REQ it received until it rejects it or the
 * connection ends, an active id's from the REP.  rdma_cm takes the REQ's
 * number from conn_param when the id has no QP (rdma_connect, librdmacm
 * and the kernel alike) and checks nothing.  The id of node `to` that
 * holds `qp_num` of m's node, if any: a REQ naming it is stale.
 */
static struct xm_id *qpn_holder(const struct xm_id *m, int to, uint32_t qp_num)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_ID) {
		struct xm_id *n = id_at(pos);

		/* a peer that has not accepted named no number yet */
		if (n != m && n->p->node == to && n->fid.id.ps != RDMA_PS_UDP && n->peer &&
		    n->peer != m && !n->peer->req_rcvd && n->peer->p->node == m->p->node &&
		    n->peer->qp_num == qp_num)
			return n;
	}
	return NULL;
}

/*
 * cm_req_handler: a stale REQ gets REJ reason 10 (IB_CM_REJ_STALE_CONN),
 * and the id holding the pair a DREQ if it is connected.  True if so.
 */
static bool stale_req(struct xm_id *m, int to, uint32_t qp_num)
{
	struct xm_id *n = m->fid.id.ps == RDMA_PS_UDP ? NULL : qpn_holder(m, to, qp_num);

	if (!n)
		return false;
	ev_queue(m, RDMA_CM_EVENT_REJECTED, 10, NULL, NULL, 0, false);
	if (!n->req_rcvd) {
		ev_queue(n->peer, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
		ev_queue(n, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
		n->peer->peer = NULL;
		n->peer = NULL;
	}
	return true;
}

static int m_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct xm_id *m = xm_id_of(id), *l, *n;
	struct rdma_cm_id *nid;
	int to;

	if (m->fid.obj.closed) {
		errno = EINVAL;
		return -1;
	}
	if (m->resolved != XM_ID_ROUTE) {
		errno = EINVAL;	/* rdma_connect: ROUTE_RESOLVED -> CONNECT */
		return -1;
	}
	to = node_of(&id->route.addr.dst_sin);
	l = listener_of(id);
	m->qp_num = param->qp_num;
	m->responder_resources = param->responder_resources;
	m->initiator_depth = param->initiator_depth;
	if (fake_verbs_core.connect(id, param))
		return -1;
	/* a REQ or SIDR REQ nobody receives: the CM's retries time out */
	if (to < 0 || !node_up(to) || !path_leads(m, to)) {
		ev_queue(m, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0,
			 id->ps == RDMA_PS_UDP);
		return 0;
	}
	if (!l) {
		/* the node's CM refuses: SIDR REP IB_SIDR_UNSUPPORTED, REJ invalid service ID */
		if (id->ps == RDMA_PS_UDP)
			ev_queue(m, RDMA_CM_EVENT_UNREACHABLE, 1, NULL, NULL, 0, true);
		else
			ev_queue(m, RDMA_CM_EVENT_REJECTED, 8, NULL, NULL, 0, false);
		return 0;
	}
	if (stale_req(m, to, param->qp_num))
		return 0;
	m_create_id(l->fid.id.channel, &nid, l->fid.id.context, id->ps);
	n = xm_id_of(nid);
	n->fid.id.route.addr.src_storage = l->fid.id.route.addr.src_storage;
	n->fid.id.route.addr.dst_storage = id->route.addr.src_storage;
	n->peer = m;
	n->req_rcvd = true;
	m->peer = n;
	ev_queue_cp(n, RDMA_CM_EVENT_CONNECT_REQUEST, 0, l, param->private_data,
		    param->private_data_len, id->ps == RDMA_PS_UDP, param);
	return 0;
}

static int m_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct xm_id *m = xm_id_of(id);

	if (m->fid.obj.closed) {
		errno = EINVAL;
		return -1;
	}
	if (id->ps == RDMA_PS_IB && xm_ini_accept_failures > 0) {
		xm_ini_accept_failures--;
		errno = EINVAL;
		return -1;
	}
	if (fake_verbs_core.accept(id, param))
		return -1;
	m->req_rcvd = false;
	if (id->ps == RDMA_PS_IB && m->peer && xm_ini_reps_lost > 0) {
		/* the REP never arrives: the REQ's retries time out, and the REP's */
		xm_ini_reps_lost--;
		ev_queue(m->peer, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0, false);
		ev_queue(m, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0, false);
		m->peer->peer = NULL;
		m->peer = NULL;
		return 0;
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

/* The REJ reaches the requester (the XRC answer rides one with status 28). */
static int m_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct ofx_list *pos, *tmp;

	fake_verbs_core.reject(id, pdata, len);
	xm_for_each(pos, tmp, FAKE_ID) {
		struct xm_id *m = id_at(pos);

		if (&m->fid.id == id)
			m->req_rcvd = false;
		if (&m->fid.id == id && m->peer) {
			ev_queue(m->peer, RDMA_CM_EVENT_REJECTED, 28, NULL, pdata, len, false);
			m->peer->peer = NULL;
			m->peer = NULL;
		}
	}
	return 0;
}

/* rdma_disconnect: the DREQ reaches the peer, the DREP (or its timeout) this end. */
static int m_disconnect(struct rdma_cm_id *id)
{
	struct xm_id *m = xm_id_of(id);

	fake_verbs_core.disconnect(id);
	if (m->fid.obj.closed || !m->peer) {
		errno = EINVAL;
		return -1;
	}
	ev_queue(m->peer, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	m->peer->peer = NULL;
	m->peer = NULL;
	ev_queue(m, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, false);
	return 0;
}

static int m_establish(struct rdma_cm_id *id)
{
	struct xm_id *m = xm_id_of(id);

	if (m->peer && id->ps == RDMA_PS_IB && xm_ini_rtus_lost > 0 &&
	    nrep_waiting < XM_MAX_PENDING) {
		/* the RTU, and the DREQ of the id's destroy, never arrive */
		xm_ini_rtus_lost--;
		rep_waiting[nrep_waiting++] = m->peer;
		m->peer->peer = NULL;
		m->peer = NULL;
	} else if (m->peer) {
		ev_queue(m->peer, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0, false);
	}
	return fake_verbs_core.establish(id);
}

void xm_ini_rep_timeout(void)
{
	for (int i = 0; i < nrep_waiting; i++)
		ev_queue(rep_waiting[i], RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0,
			 false);
	nrep_waiting = 0;
}

/* The attributes rdma_cm computes for an RC connection. */
static int m_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	struct xm_id *m = xm_id_of(id);

	if (fake_verbs_core.init_qp_attr(id, attr, mask))
		return -1;
	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		/* the kernel's cm_init_qp_init_attr: reads, atomics with responder resources */
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		attr->port_num = 1;
		attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (m->responder_resources)
			attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
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

/* Whether any live process has rdma_cm events waiting; with `deliver`, hands them over. */
static bool cm_pump(bool deliver)
{
	bool any = false;

	for (int i = 0; i < nprocs; i++) {
		struct xm_proc *p = procs[i];

		if (p && !p->dead && p->ia.cm_channel && fake_cm_pending(p->ia.cm_channel)) {
			if (deliver)
				ofx_cm_process_events(&p->ia);
			any = true;
		}
	}
	return any;
}

/* ---- inspection and events ------------------------------------------------- */

struct ibv_qp *xm_ini_qp(int node, int i, struct ibv_qp_cap *cap_p)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_QP) {
		struct xm_qp *q = qp_at(pos);

		if (q->fq.qp.qp_type == IBV_QPT_XRC_SEND && q->node == node && i-- == 0) {
			if (cap_p)
				*cap_p = q->cap;
			return &q->fq.qp;
		}
	}
	return NULL;
}

int xm_qp_max_rd_atomic(struct ibv_qp *qp)
{
	return xm_qp_of(qp)->attrs.max_rd_atomic;
}

/* The TGT an INI QP is connected to (what its RTR named), if it exists. */
static struct xm_tgt *tgt_of_ini(struct ibv_qp *ini)
{
	struct xm_qp *q = xm_qp_of(ini);

	return q->dest ? tgt_find(-1, q->dest) : NULL;
}

struct ibv_qp *xm_tgt_handle(struct ibv_qp *ini)
{
	struct xm_tgt *t = tgt_of_ini(ini);
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_QP)
		if (t && qp_at(pos)->tgt == t)
			return &qp_at(pos)->fq.qp;
	return NULL;
}

int xm_tgt_state(struct ibv_qp *ini)
{
	struct xm_tgt *t = tgt_of_ini(ini);

	return t ? (int)t->state : -1;
}

struct ibv_srq *xm_ep_srq(const struct ofx_ep *ep)
{
	struct ofx_list *pos, *tmp;

	xm_for_each(pos, tmp, FAKE_SRQ)
		if (srq_at(pos)->fs.srq.srq_context == &ep->obj)
			return &srq_at(pos)->fs.srq;
	return NULL;
}

int xm_srq_posted(struct ibv_srq *srq)
{
	return container_of(srq, struct xm_srq, fs.srq)->n;
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
	struct xm_qp *q = xm_qp_of(qp);
	struct ibv_async_event ev = { .element.qp = qp, .event_type = type };

	if (type == IBV_EVENT_QP_FATAL) {
		qp->state = IBV_QPS_ERR;
		for (int i = 0; i < q->npend; i++)
			send_wc(q, &q->pend[i], IBV_WC_WR_FLUSH_ERR);
		q->npend = 0;
	}
	ofx_ia_async_event(&p->ia, &ev);
}

void xm_async_srq_event(struct xm_proc *p, struct ibv_srq *srq, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .element.srq = srq, .event_type = type };

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
	ma = xm_id_of(a);
	mn = xm_id_of(n);
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

/*
 * The progress thread's fence timer (xrc.c) drains a connection's request
 * EVD, which nobody may be polling: each EP's, the consumer's own too.
 */
static bool req_evds_drain(struct xm_proc *p)
{
	struct ofx_list *pos, *tmp;
	bool any = p->req_evd && ofx_evd_drain_cq(p->req_evd) > 0;

	ofx_list_for_each_safe(pos, tmp, &p->ia.objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);
		struct ofx_ep *ep = container_of(obj, struct ofx_ep, obj);

		if (obj->type == OFX_OBJ_EP && ep->req_evd && ep->req_evd != p->req_evd &&
		    ofx_evd_drain_cq(ep->req_evd) > 0)
			any = true;
	}
	return any;
}

void xm_pump(void)
{
	bool busy = true;

	while (busy) {
		busy = false;
		while (nctl) {
			struct xm_ctl c = ctlq[0];
			uint8_t ans[OFX_XRC_CTL_ANSWER_MAX];
			struct xm_proc *to = proc_at(&c.to, c.port);
			int len = -1;

			memmove(&ctlq[0], &ctlq[1], --nctl * sizeof(ctlq[0]));
			if (to)
				len = ofx_xrc_ctl_request(&to->ia, (struct sockaddr *)&c.from->ia.addr,
							  c.msg, ans);
			if (!c.from->dead)
				ofx_xrc_ctl_answer(&c.from->ia, c.msg, len > 0 ? ans : NULL, len);
			busy = true;
		}
		if (cm_pump(true))
			busy = true;
		for (int i = 0; i < nprocs; i++)
			if (procs[i] && !procs[i]->dead && req_evds_drain(procs[i]))
				busy = true;
		/* the async thread; then a drain may have sent a control message */
		if (async_pump() || nctl || cm_pump(false))
			busy = true;
	}
}

/* ---- processes ----------------------------------------------------------- */

void xm_init(void)
{
	struct ofx_verbs_ops *ops = &fake_verbs.ops;

	fake_verbs_install();
	fake_verbs.cq_max = XM_CQ_DEPTH;
	fake_verbs.cqe_parse = m_cqe_parse;
	ops->open_xrcd = m_open_xrcd;
	ops->close_xrcd = m_close_xrcd;
	ops->create_srq_ex = m_create_srq_ex;
	ops->get_srq_num = m_get_srq_num;
	ops->post_srq_recv = m_post_srq_recv;
	ops->modify_srq = m_modify_srq;
	ops->destroy_srq = m_destroy_srq;
	ops->create_qp_ex = m_create_qp_ex;
	ops->open_qp = m_open_qp;
	ops->modify_qp = m_modify_qp;
	ops->query_qp = m_query_qp;
	ops->destroy_qp = m_destroy_qp;
	ops->post_send = m_post_send;
	ops->post_recv = m_post_recv;
	ops->bind_mw = m_bind_mw;
	ops->alloc_mw = m_alloc_mw;
	ops->create_id = m_create_id;
	ops->bind_addr = m_bind_addr;
	ops->listen = m_listen;
	ops->resolve_addr = m_resolve_addr;
	ops->resolve_route = m_resolve_route;
	ops->set_option = m_set_option;
	ops->connect = m_connect;
	ops->accept = m_accept;
	ops->reject = m_reject;
	ops->establish = m_establish;
	ops->disconnect = m_disconnect;
	ops->init_qp_attr = m_init_qp_attr;
	/* a test that failed half-way leaks: start from a clean model anyway */
	memset(procs, 0, sizeof(procs));
	memset(tgts, 0, sizeof(tgts));
	memset(domains, 0, sizeof(domains));
	for (int n = 0; n < XM_MAX_NODES; n++)
		srqn_next[n] = XM_SRQN_BASE;
	rc_recvs = 0;
	nasync = 0;
	memset(async_delivered, 0, sizeof(async_delivered));
	xm_device = xm_profile;
	nprocs = nctl = 0;
	xm_rnr_limited = false;
	xm_autopump = true;
	xm_use_cm = false;
	xm_ini_accept_failures = xm_ini_reps_lost = xm_ini_rtus_lost = xm_ini_create_errno = 0;
	nrep_waiting = 0;
	fabric_init();
}

void xm_fini(void)
{
	if (unacked.stuck)
		pthread_join(unacked.thread, NULL);
	unacked.pending = unacked.stuck = false;
	for (int i = 0; i < nprocs; i++)
		if (procs[i])
			xm_proc_close(procs[i]);
	CU_ASSERT_EQUAL(fake_verbs.qps, 0);
	CU_ASSERT_EQUAL(fake_verbs.srqs, 0);
	CU_ASSERT_EQUAL(fake_verbs.cqs, 0);
	CU_ASSERT_EQUAL(fake_verbs.xrcds, 0);
	CU_ASSERT_EQUAL(fake_verbs.mrs, 0);
	CU_ASSERT_EQUAL(fake_verbs.mws, 0);
	CU_ASSERT_EQUAL(fake_verbs.pds, 0);
	CU_ASSERT_EQUAL(fake_verbs.channels, 0);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
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
	struct ofx_ia *ia = &p->ia;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ia->addr;
	int ret;

	CU_ASSERT_FATAL(nprocs < XM_MAX_PROCS);
	p->node = node;
	fake_ia_init(ia);
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
	ia->dev_attr.atomic_cap = IBV_ATOMIC_HCA;
	ia->dev_attr.max_cqe = XM_CQ_DEPTH;	/* what the model's CQs hold */
	ia->port_attr.max_msg_sz = 1u << 30;
	ia->verbs = &p->ctx;
	ia->xrc = true;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)node);
	/* the process is known before ofx_xrc_ia_open binds its listeners */
	procs[nprocs] = p;
	if (xm_use_cm)
		ia->cm_channel = ofx_verbs->create_event_channel();
	ret = ofx_xrc_ia_open(ia);
	if (ret) {
		procs[nprocs] = NULL;
		if (ia->cm_channel)
			ofx_verbs->destroy_event_channel(ia->cm_channel);
		fake_ia_fini(ia);
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
	fake_pz_init(&p->pz, ia, ofx_verbs->alloc_pd(&p->ctx));
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
	k = 0;
	for (int i = 0; i < nasync; i++)
		if (asyncq[i].p != p)
			asyncq[k++] = asyncq[i];
	nasync = k;
}

void xm_proc_close(struct xm_proc *p)
{
	struct ofx_ia *ia = &p->ia;
	struct ofx_list *pos, *tmp;

	/*
	 * As ia_close: the XRC connections end first.  No progress thread
	 * here, so their DISCs tell the peers not to fence; the peers, whose
	 * own progress threads would deliver them, hear them now.
	 */
	ofx_xrc_ia_quiesce(ia);
	xm_pump();
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);

		if (obj->type == OFX_OBJ_EP)
			ofx_ep_destroy(container_of(obj, struct ofx_ep, obj));
	}
	for (int i = 0; i < p->nlmrs; i++)
		CU_ASSERT_EQUAL(ofx_lmr_free(p->lmrs[i].lmr), DAT_SUCCESS);
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
	/* its ids are gone, and their events with them */
	if (ia->cm_channel)
		ofx_verbs->destroy_event_channel(ia->cm_channel);
	ofx_verbs->dealloc_pd(p->pz.pd);
	fake_ia_fini(ia);
	proc_forget(p);
	free(p);
}

/*
 * The kernel's cleanup at exit (fake_close_context): the process's QP
 * handles (a TGT goes with its last handle), SRQs, MWs, CQs, MRs, XRC
 * domain handles and PD close, its rdma_cm ids are destroyed (a connected
 * IB peer hears a DREQ) and their pending events go.  None of its code
 * runs: no DISC, no INI-CLOSE, no fence.  Sends held (RNR) towards an SRQ
 * that went now fail, as the device's next retry would.
 */
void xm_proc_kill(struct xm_proc *p)
{
	CU_ASSERT_FATAL(!p->dead);
	p->dead = true;
	fake_close_context(&p->ctx);
	progress_pending();
}

static struct xm_lmr *lmr_of(struct xm_proc *p, const void *addr, size_t len)
{
	DAT_REGION_DESCRIPTION reg = { .for_va = (DAT_PVOID)addr };
	struct xm_lmr *l;

	for (int i = 0; i < p->nlmrs; i++)
		if (p->lmrs[i].addr == addr && p->lmrs[i].len == len)
			return &p->lmrs[i];
	CU_ASSERT_FATAL(p->nlmrs < XM_MAX_LMRS);
	l = &p->lmrs[p->nlmrs];
	CU_ASSERT_EQUAL_FATAL(ofx_lmr_create(&p->ia, DAT_MEM_TYPE_VIRTUAL, reg, len, &p->pz,
					     DAT_MEM_PRIV_ALL_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC,
					     DAT_VA_TYPE_VA, &l->lmr,
					     &l->lkey, &l->rkey, NULL, NULL),
			      DAT_SUCCESS);
	l->addr = addr;
	l->len = len;
	p->nlmrs++;
	return l;
}

DAT_LMR_CONTEXT xm_lkey(struct xm_proc *p, const void *addr, size_t len)
{
	return lmr_of(p, addr, len)->lkey;
}

DAT_RMR_CONTEXT xm_rkey(struct xm_proc *p, const void *addr, size_t len)
{
	return lmr_of(p, addr, len)->rkey;
}

struct xm_proc *xm_proc_of(const struct ofx_ep *ep)
{
	return proc_of_ia(ep->obj.ia);
}

static struct ofx_ep *ep_make(struct xm_proc *p, int iov, int reads)
{
	DAT_EP_ATTR a;
	DAT_EP_HANDLE h = NULL;

	memset(&a, 0, sizeof(a));
	a.service_type = DAT_SERVICE_TYPE_RC;
	a.max_recv_dtos = 8;
	a.max_request_dtos = 16;
	a.max_recv_iov = 1;
	a.max_request_iov = iov;
	a.max_rdma_read_in = reads;
	a.max_rdma_read_out = reads;
	a.max_message_size = 1u << 20;
	a.max_rdma_size = 1u << 20;
	CU_ASSERT_EQUAL_FATAL(ofx_ep_create(&p->ia, &p->pz, p->recv_evd, p->req_evd, p->conn_evd,
					    &a, &h),
			      DAT_SUCCESS);
	return h;
}

struct ofx_ep *xm_ep_with(struct xm_proc *p, int iov, int reads)
{
	struct ofx_ep *ep = ep_make(p, iov, reads);

	CU_ASSERT_PTR_NOT_NULL_FATAL(ep->xrc);
	return ep;
}

struct ofx_ep *xm_ep_rc(struct xm_proc *p)
{
	struct ofx_ep *ep;

	/* what the IA decides at open (ia->xrc), for this EP alone */
	p->ia.xrc = false;
	ep = ep_make(p, 1, 0);
	p->ia.xrc = true;
	CU_ASSERT_PTR_NULL_FATAL(ep->xrc);
	return ep;
}

struct ofx_ep *xm_ep_new(struct xm_proc *p)
{
	return xm_ep_with(p, 1, 0);
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
	CU_ASSERT_EQUAL(ea->transport->connect(ea, pdata, pdata_len, &offered), 0);
	CU_ASSERT_TRUE_FATAL(offered);
	pthread_mutex_unlock(&ea->lock);

	/* P: the REQ arrives as a CR, the consumer accepts */
	memset(&cr, 0, sizeof(cr));
	cr.cm_id = &dummy_id;
	cr.remote_addr = &a->ia.addr;
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
	ev.param.conn.private_data = fake_cm.pdata;
	ev.param.conn.private_data_len = XM_REJ_AREA;
	pthread_mutex_lock(&ea->lock);
	CU_ASSERT_TRUE(ofx_xrc_rejected(ea, &ev, &destroy));
	pthread_mutex_unlock(&ea->lock);
	CU_ASSERT_PTR_EQUAL(destroy, &dummy_id);
	if (xm_autopump)
		xm_pump();
}

int xm_live_qps(int type)
{
	struct ofx_list *pos, *tmp;
	int n = 0;

	if (type == IBV_QPT_XRC_RECV) {
		for (int i = 0; i < XM_MAX_OBJS; i++)
			n += tgts[i] != NULL;
		return n;
	}
	xm_for_each(pos, tmp, FAKE_QP) {
		enum ibv_qp_type t = qp_at(pos)->fq.qp.qp_type;

		n += type == IBV_QPT_XRC_SEND ? t == IBV_QPT_XRC_SEND :
		     t != IBV_QPT_XRC_SEND && t != IBV_QPT_XRC_RECV;
	}
	return n;
}

int xm_proc_inis(struct xm_proc *p)
{
	struct ofx_list *pos, *tmp;
	int n = 0;

	xm_for_each(pos, tmp, FAKE_QP)
		n += qp_at(pos)->fq.qp.qp_type == IBV_QPT_XRC_SEND &&
		     qp_at(pos)->fq.obj.ctx == &p->ctx;
	return n;
}

int xm_tgts_on_node(int node)
{
	int n = 0;

	for (int i = 0; i < XM_MAX_OBJS; i++)
		n += tgts[i] && tgts[i]->node == node;
	return n;
}
