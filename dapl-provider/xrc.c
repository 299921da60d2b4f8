/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_XRC
#include "xrc.h"
#include "cm.h"
#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "pz.h"
#include "verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#define XRC_TAG_FMT "ofx-xrcd-tag %08x\n"
#define XRC_TAG_LEN 22			/* "ofx-xrcd-tag " + 8 hex digits + "\n" */
#define XRC_REQ_AREA 56			/* IB/RoCE REQ private data for us */
#define XRC_REJ_AREA 148		/* IB REJ private data */
#define XRC_ACC_HDR 16			/* accept header before the consumer's data */
#define XRC_SRQN_MASK 0xffffffu
#define XRC_CTL_MAGIC 0x4F58u
#define XRC_VERSION 1

enum xrc_verdict { XRC_V_NONE = 0, XRC_V_OK = 1, XRC_V_REFUSED = 2 };
enum xrc_status { XRC_S_OK = 0, XRC_S_UNKNOWN = 1 };

/* Connection states of an XRC EP (xe->state); see the wire spec in xrc.h. */
#define XRC_CONN_STATES(X) \
	X(IDLE)            \
	X(OFFERED)         \
	X(RC)              \
	X(A_INI_WAIT)      \
	X(A_CONFIRM_SENT)  \
	X(P_CONFIRM_WAIT)  \
	X(P_INI_WAIT)      \
	X(P_BIND_SENT)     \
	X(CONNECTED)       \
	X(FENCE)           \
	X(DISC_SENT)       \
	X(CLOSED)

enum xrc_conn_state {
#define XRC_CONN_ENUM(name) XC_##name,
	XRC_CONN_STATES(XRC_CONN_ENUM)
#undef XRC_CONN_ENUM
};

static const char *const xrc_conn_names[] = {
#define XRC_CONN_NAME(name) [XC_##name] = #name,
	XRC_CONN_STATES(XRC_CONN_NAME)
#undef XRC_CONN_NAME
};

enum xrc_ini_state { INI_CONNECTING, INI_READY, INI_DEAD };

/* One INI QP; guarded by xrc->lock. */
struct ofx_xrc_ini {
	struct ofx_list link;		/* in xrc->inis */
	uint32_t id;			/* conn_id of its INI request */
	struct sockaddr_storage addr;	/* key: peer IA address, */
	uint32_t tag;			/* peer domain tag, */
	struct ibv_cq *cq;		/* request EVD's CQ, */
	struct ibv_pd *pd;		/* PZ */
	uint16_t port;			/* the peer service port it was connected to */
	struct ibv_qp *qp;
	uint32_t tgt;			/* TGT QP number once READY */
	enum xrc_ini_state state;
	int refs;			/* EPs bound to it or waiting for it */
	struct ofx_list eps;		/* ofx_xrc_ep.ini_link */
};

/* A TGT QP handle held by this IA; guarded by xrc->lock. */
struct ofx_xrc_tgtqp {
	struct ofx_list link;		/* in xrc->tgts */
	struct ibv_qp *qp;
	uint32_t qpn;
	bool created;			/* made by this IA's listener */
	int refs;			/* opened handles: EPs holding it (2a) */
};

struct ofx_xrc_ia {
	/* guards every list and every ofx_xrc_ep field below; after ep->lock */
	pthread_mutex_t lock;
	int fd;				/* domain file, -1 for a private domain */
	struct ibv_xrcd *xrcd;
	uint32_t tag;
	uint16_t port;
	const struct ofx_xrc_transport *tp;
	void *tp_ctx;
	struct ofx_list inis, tgts, eps;
	uint32_t next_id;
	struct ofx_xrc_stats stats;
};

struct ofx_xrc_ep {
	struct ofx_ep *ep;
	struct ofx_list link;		/* in xrc->eps while a connection exists */
	struct ofx_list ini_link;	/* in ini->eps while bound */
	_Atomic int busy;		/* handlers using the EP without xrc->lock */
	_Atomic bool can_send;		/* data path: sends go to the INI QP */
	_Atomic int inflight;		/* data path: posts between sq_begin and sq_end */
	enum xrc_conn_state state;
	bool active;
	struct ibv_srq *srq;
	uint32_t srqn;
	uint32_t conn_id;
	uint32_t peer_srqn, peer_tag;
	uint16_t peer_port;
	struct ofx_xrc_ini *ini;
	struct ofx_xrc_tgtqp *tgt;	/* the peer's TGT handle held (2a) */
	bool ack_ok;			/* active: CONFIRM-ACK said OK */
	bool bound;			/* active: BIND arrived and verified */
	bool peer_disc;			/* the peer's DISC arrived (or it is gone) */
	bool peer_gone;			/* the peer cannot be told any more */
	bool fence_done;
	bool event_posted;		/* DISCONNECTED or BROKEN reported */
	struct ofx_cookie fence;
	struct ofx_timer fence_timer;	/* polls the request EVD for the fence */
	uint64_t fence_deadline_ns;
};

/* How often the progress thread looks for the fence's completion. */
#define XRC_FENCE_POLL_US 1000

/* ---- control messages ---------------------------------------------------- */

struct xrc_ctl {
	uint8_t op;
	uint32_t conn_id, srqn_from, srqn_to, tag, tgt, aux;
	uint16_t port;
	uint8_t verdict, status;
};

static void put16(uint8_t *p, uint16_t v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return ntohs(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void ctl_encode(const struct xrc_ctl *c, uint8_t *m)
{
	memset(m, 0, OFX_XRC_CTL_LEN);
	put16(m, XRC_CTL_MAGIC);
	m[2] = XRC_VERSION;
	m[3] = c->op;
	put32(m + 4, c->conn_id);
	put32(m + 8, c->srqn_from);
	put32(m + 12, c->srqn_to);
	put32(m + 16, c->tag);
	put32(m + 20, c->tgt);
	put16(m + 24, c->port);
	m[26] = c->verdict;
	m[27] = c->status;
	put32(m + 28, c->aux);
}

static int ctl_decode(const uint8_t *m, struct xrc_ctl *c)
{
	if (get16(m) != XRC_CTL_MAGIC || m[2] != XRC_VERSION)
		return -EPROTO;
	c->op = m[3];
	c->conn_id = get32(m + 4);
	c->srqn_from = get32(m + 8);
	c->srqn_to = get32(m + 12);
	c->tag = get32(m + 16);
	c->tgt = get32(m + 20);
	c->port = get16(m + 24);
	c->verdict = m[26];
	c->status = m[27];
	c->aux = get32(m + 28);
	return 0;
}

static struct ofx_xrc_ia *xrc_of(const struct ofx_ia *ia)
{
	return ia->xrc_ia;
}

/* Sends request `c` to addr:port through the IA's carrier. */
static int ctl_send_qp(struct ofx_xrc_ia *x, struct ofx_ia *ia, const struct sockaddr *addr,
		       uint16_t port, const struct xrc_ctl *c, struct ibv_qp *qp)
{
	uint8_t m[OFX_XRC_CTL_LEN];
	int ret;

	ctl_encode(c, m);
	x->stats.ctl_sent++;
	ret = x->tp->send_ctl(ia, addr, port, m, qp);
	if (ret)
		ofx_warn("xrc control op %u to port %u: %s", c->op, port, strerror(-ret));
	return ret;
}

static int ctl_send(struct ofx_xrc_ia *x, struct ofx_ia *ia, const struct sockaddr *addr,
		    uint16_t port, const struct xrc_ctl *c)
{
	return ctl_send_qp(x, ia, addr, port, c, NULL);
}

/* ---- domain ------------------------------------------------------------- */

/* Reads the domain tag kept in the file, writing a new one if it has none. */
static int xrcd_file_tag(int fd, uint32_t *tag_p)
{
	char buf[XRC_TAG_LEN + 1] = "";
	unsigned int tag;
	ssize_t n;
	int ret = 0;

	if (flock(fd, LOCK_EX)) {
		ret = -errno;
		ofx_err("flock xrcd file: %m");
		return ret;
	}
	n = pread(fd, buf, XRC_TAG_LEN, 0);
	if (n == XRC_TAG_LEN && sscanf(buf, "ofx-xrcd-tag %8x", &tag) == 1) {
		*tag_p = tag;
		goto out;
	}
	if (getrandom(&tag, sizeof(tag), 0) != sizeof(tag))
		tag = (unsigned int)(ofx_now_ns() ^ (uint64_t)getpid() << 16);
	snprintf(buf, sizeof(buf), XRC_TAG_FMT, tag);
	if (pwrite(fd, buf, XRC_TAG_LEN, 0) != XRC_TAG_LEN) {
		ret = errno ? -errno : -EIO;
		ofx_err("write xrcd tag: %m");
		goto out;
	}
	*tag_p = tag;
out:
	flock(fd, LOCK_UN);
	return ret;
}

static int xrcd_open_file(struct ofx_ia *ia, struct ofx_xrc_ia *x)
{
	const char *path = ia->cfg.xrcd;
	struct stat st;
	int ret;

	x->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (x->fd < 0) {
		ret = -errno;
		ofx_err("xrcd file %s: %m", path);
		return ret;
	}
	if (fstat(x->fd, &st)) {
		ret = -errno;
		ofx_err("stat xrcd file %s: %m", path);
		goto err_close;
	}
	if (st.st_uid != geteuid() && !ia->cfg.xrcd_foreign) {
		ofx_err("xrcd file %s is owned by uid %u, not %u (set xrcd_foreign=yes to use it)",
			path, (unsigned int)st.st_uid, (unsigned int)geteuid());
		ret = -EPERM;
		goto err_close;
	}
	ret = xrcd_file_tag(x->fd, &x->tag);
	if (ret)
		goto err_close;
	return 0;

err_close:
	close(x->fd);
	x->fd = -1;
	return ret;
}

int ofx_xrc_ia_open(struct ofx_ia *ia)
{
	struct ibv_xrcd_init_attr attr = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						       IBV_XRCD_INIT_ATTR_OFLAGS };
	struct ofx_xrc_ia *x;
	int ret;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = -1;
	pthread_mutex_init(&x->lock, NULL);
	ofx_list_init(&x->inis);
	ofx_list_init(&x->tgts);
	ofx_list_init(&x->eps);
	if (ia->cfg.xrcd[0]) {
		ret = xrcd_open_file(ia, x);
		if (ret)
			goto err_free;
		attr.fd = x->fd;
		attr.oflags = O_CREAT;
	} else {
		if (getrandom(&x->tag, sizeof(x->tag), 0) != sizeof(x->tag))
			x->tag = (uint32_t)(ofx_now_ns() ^ (uint64_t)getpid() << 16);
		attr.fd = -1;
		attr.oflags = O_CREAT;
	}
	x->xrcd = ofx_verbs->open_xrcd(ia->verbs, &attr);
	if (!x->xrcd) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("ibv_open_xrcd %s: %m", ia->cfg.xrcd[0] ? ia->cfg.xrcd : "(private)");
		goto err_close_fd;
	}
	x->next_id = x->tag ^ (uint32_t)getpid();
	ia->xrc_ia = x;
	/* on a device the control messages go over rdma_cm (xrc_cm.c) */
	if (ia->cm_channel) {
		ret = ofx_xrc_cm_start(ia);
		if (ret) {
			ia->xrc_ia = NULL;
			goto err_close_xrcd;
		}
	}
	ofx_dbg("xrc domain %s tag %08x", ia->cfg.xrcd[0] ? ia->cfg.xrcd : "(private)", x->tag);
	return 0;

err_close_xrcd:
	if (ofx_verbs->close_xrcd(x->xrcd))
		ofx_warn("close xrcd: %m");
err_close_fd:
	if (x->fd >= 0)
		close(x->fd);
err_free:
	pthread_mutex_destroy(&x->lock);
	free(x);
	return ret;
}

void ofx_xrc_set_transport(struct ofx_ia *ia, const struct ofx_xrc_transport *tp, void *ctx,
			   uint16_t port)
{
	struct ofx_xrc_ia *x = xrc_of(ia);

	if (!x)
		return;
	x->tp = tp;
	x->tp_ctx = ctx;
	x->port = port;
}

void *ofx_xrc_transport_ctx(const struct ofx_ia *ia)
{
	return xrc_of(ia) ? xrc_of(ia)->tp_ctx : NULL;
}

struct ibv_qp *ofx_xrc_tgt_qp(struct ofx_ia *ia, uint32_t qpn)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ibv_qp *qp = NULL;
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &x->tgts) {
		struct ofx_xrc_tgtqp *t = container_of(pos, struct ofx_xrc_tgtqp, link);

		if (t->qpn == qpn && t->created)
			qp = t->qp;
	}
	pthread_mutex_unlock(&x->lock);
	return qp;
}

static void tgt_close(struct ofx_xrc_ia *x, struct ofx_xrc_tgtqp *t)
{
	ofx_list_del(&t->link);
	if (ofx_verbs->destroy_qp(t->qp))
		ofx_warn("release tgt qp 0x%x: %m", t->qpn);
	x->stats.tgt_handles--;
	free(t);
}

static void ini_destroy(struct ofx_xrc_ia *x, struct ofx_xrc_ini *ini)
{
	ofx_list_del(&ini->link);
	if (ini->qp && ofx_verbs->destroy_qp(ini->qp))
		ofx_warn("destroy ini qp 0x%x: %m", ini->qp->qp_num);
	x->stats.ini_live--;
	free(ini);
}

void ofx_xrc_ia_quiesce(struct ofx_ia *ia)
{
	/* EPs are torn down one by one by ia_close (ofx_xrc_ep_teardown). */
	(void)ia;
}

void ofx_xrc_ia_close(struct ofx_ia *ia)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_list *pos, *tmp;

	if (!x)
		return;
	if (x->tp && x->tp->drives_qps)
		ofx_xrc_cm_stop(ia);
	if (ia->cfg.stats)
		ofx_warn("stats: xrc ini_created %lu ini_live %lu tgt_created %lu tgt_opened %lu "
			 "conn_xrc %lu conn_rc %lu refused %lu ctl_sent %lu ctl_lost %lu",
			 x->stats.ini_created, x->stats.ini_live, x->stats.tgt_created,
			 x->stats.tgt_opened, x->stats.conn_xrc, x->stats.conn_rc,
			 x->stats.refused, x->stats.ctl_sent, x->stats.ctl_lost);
	pthread_mutex_lock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &x->inis)
		ini_destroy(x, container_of(pos, struct ofx_xrc_ini, link));
	/* created TGTs go with their creator; under 2a opened handles keep them */
	ofx_list_for_each_safe(pos, tmp, &x->tgts)
		tgt_close(x, container_of(pos, struct ofx_xrc_tgtqp, link));
	pthread_mutex_unlock(&x->lock);
	if (ofx_verbs->close_xrcd(x->xrcd))
		ofx_warn("close xrcd: %m");
	if (x->fd >= 0)
		close(x->fd);
	pthread_mutex_destroy(&x->lock);
	free(x);
	ia->xrc_ia = NULL;
}

int ofx_xrc_get_stats(struct ofx_ia *ia, struct ofx_xrc_stats *stats)
{
	struct ofx_xrc_ia *x = xrc_of(ia);

	if (!x)
		return -ENODEV;
	pthread_mutex_lock(&x->lock);
	*stats = x->stats;
	pthread_mutex_unlock(&x->lock);
	return 0;
}

uint32_t ofx_xrc_domain_tag(const struct ofx_ia *ia)
{
	return xrc_of(ia) ? xrc_of(ia)->tag : 0;
}

uint16_t ofx_xrc_service_port(const struct ofx_ia *ia)
{
	return xrc_of(ia) ? xrc_of(ia)->port : 0;
}

/* ---- EP ----------------------------------------------------------------- */

int ofx_xrc_ep_create(struct ofx_ep *ep)
{
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);
	struct ofx_xrc_ep *xe;

	/* no carrier for the control messages: the EP stays plain RC */
	if (!x || !x->tp || ep->srq)
		return 0;
	xe = calloc(1, sizeof(*xe));
	if (!xe)
		return -ENOMEM;
	xe->ep = ep;
	ofx_list_init(&xe->link);
	ofx_list_init(&xe->ini_link);
	xe->fence.ep = ep;
	xe->fence.op = OFX_OP_RTR_WRITE;
	xe->fence.flags = OFX_COOKIE_F_INTERNAL;
	ep->xrc = xe;
	return 0;
}

static struct ibv_cq *ep_cq_of(struct ofx_ia *ia, struct ofx_evd *evd)
{
	return evd && evd->cq ? evd->cq : ia->empty_cq;
}

/* The connection's XRC SRQ, completing on the EP's recv EVD. */
static int xrc_srq_open(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ibv_srq_init_attr_ex attr = {
		.srq_context = ep,
		.attr = {
			.max_wr = ep->attr.max_recv_dtos + 1,
			.max_sge = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1,
		},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = ep->pz->pd,
		.xrcd = xrc_of(ia)->xrcd,
		.cq = ep_cq_of(ia, ep->recv_evd),
	};
	int ret;

	xe->srq = ofx_verbs->create_srq_ex(ia->verbs, &attr);
	if (!xe->srq) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("create xrc srq (max_wr %u): %m", attr.attr.max_wr);
		return ret;
	}
	ret = ofx_verbs->get_srq_num(xe->srq, &xe->srqn);
	if (ret) {
		ofx_err("xrc srq number: %s", strerror(ret));
		ofx_verbs->destroy_srq(xe->srq);
		xe->srq = NULL;
		return -ret;
	}
	return 0;
}

static void xrc_srq_close(struct ofx_ep *ep)
{
	struct ofx_xrc_ep *xe = ep->xrc;

	if (!xe->srq)
		return;
	/* receives posted from now on are held until the next connection */
	atomic_store(&ep->recv_live, false);
	if (ofx_verbs->destroy_srq(xe->srq))
		ofx_warn("destroy xrc srq 0x%x: %m", xe->srqn);
	xe->srq = NULL;
}

static bool addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

/* xrc->lock held.  Finds the EP of the connection `srqn_to` <- `srqn_from`. */
static struct ofx_xrc_ep *ep_find(struct ofx_xrc_ia *x, uint32_t srqn_to, uint32_t srqn_from)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &x->eps) {
		struct ofx_xrc_ep *xe = container_of(pos, struct ofx_xrc_ep, link);

		if (xe->srq && xe->srqn == srqn_to && xe->peer_srqn == srqn_from)
			return xe;
	}
	return NULL;
}

/* Opens TGT `qpn` in our domain: the check that it serves our SRQs. */
static struct ibv_qp *tgt_open(struct ofx_ia *ia, uint32_t qpn)
{
	struct ibv_qp_open_attr attr = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.xrcd = xrc_of(ia)->xrcd,
		.qp_type = IBV_QPT_XRC_RECV,
	};

	return ofx_verbs->open_qp(ia->verbs, &attr);
}

/*
 * xrc->lock held.  The receiver's check of the TGT a peer sends through:
 * under 2a the handle is kept by the EP, under 2b it is closed again.
 */
static enum xrc_verdict tgt_verify(struct ofx_ia *ia, struct ofx_xrc_ep *xe, uint32_t qpn)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_tgtqp *t;
	struct ofx_list *pos, *tmp;
	struct ibv_qp *qp;

	/* a handle we hold already proves the TGT is in our domain */
	ofx_list_for_each_safe(pos, tmp, &x->tgts) {
		t = container_of(pos, struct ofx_xrc_tgtqp, link);
		if (t->qpn != qpn)
			continue;
		if (ia->cfg.xrc_tgt == OFX_XRC_TGT_DOMAIN && !xe->tgt) {
			t->refs++;
			xe->tgt = t;
		}
		return XRC_V_OK;
	}
	qp = tgt_open(ia, qpn);
	if (!qp) {
		ofx_warn("tgt qp 0x%x is not in our xrc domain: refused", qpn);
		x->stats.refused++;
		return XRC_V_REFUSED;
	}
	if (ia->cfg.xrc_tgt == OFX_XRC_TGT_EXIT || xe->tgt) {
		ofx_verbs->destroy_qp(qp);
		return XRC_V_OK;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		ofx_verbs->destroy_qp(qp);
		return XRC_V_OK;
	}
	t->qp = qp;
	t->qpn = qpn;
	t->refs = 1;
	ofx_list_add_tail(&x->tgts, &t->link);
	xe->tgt = t;
	x->stats.tgt_opened++;
	x->stats.tgt_handles++;
	return XRC_V_OK;
}

/* ---- INI table ---------------------------------------------------------- */

static int ini_qp_create(struct ofx_ia *ia, struct ofx_xrc_ini *ini, const struct ofx_ep *ep)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_context = ini,
		.send_cq = ini->cq,
		.cap = {
			.max_send_wr = ia->dev_attr.max_qp_wr > 1 ? ia->dev_attr.max_qp_wr - 1 : 1,
			.max_send_sge = ia->dev_attr.max_sge ? ia->dev_attr.max_sge : 1,
			.max_inline_data = ia->max_inline,
		},
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ini->pd,
	};

	(void)ep;
	ini->qp = ofx_verbs->create_qp_ex(ia->verbs, &init);
	if (!ini->qp) {
		int ret = errno ? -errno : -ENOMEM;

		ofx_err("create xrc ini qp: %m");
		return ret;
	}
	return 0;
}

/* Moves the INI QP to RTS towards TGT `tgt`. */
static int ini_qp_ready(struct ofx_xrc_ini *ini, uint32_t tgt)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1 };
	int ret;

	ret = ofx_verbs->modify_qp(ini->qp, &a, IBV_QP_STATE);
	if (ret)
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = tgt;
	ret = ofx_verbs->modify_qp(ini->qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN);
	if (ret)
		goto err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	ret = ofx_verbs->modify_qp(ini->qp, &a, IBV_QP_STATE | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
	if (ret)
		goto err;
	ini->tgt = tgt;
	return 0;
err:
	ofx_err("ini qp 0x%x to tgt 0x%x: %s", ini->qp->qp_num, tgt, strerror(ret));
	return -ret;
}

/*
 * xrc->lock held.  The INI QP for the EP's peer (READY, CONNECTING or new:
 * then its INI request is sent) with a reference for the EP, which is
 * bound to it.
 */
static int ini_get(struct ofx_ia *ia, struct ofx_xrc_ep *xe)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_ep *ep = xe->ep;
	struct ibv_cq *cq = ep_cq_of(ia, ep->req_evd);
	struct ofx_xrc_ini *ini = NULL;
	struct ofx_list *pos, *tmp;
	struct xrc_ctl c = { 0 };
	int ret;

	ofx_list_for_each_safe(pos, tmp, &x->inis) {
		struct ofx_xrc_ini *i = container_of(pos, struct ofx_xrc_ini, link);

		if (i->state != INI_DEAD && i->tag == xe->peer_tag && i->cq == cq &&
		    i->pd == ep->pz->pd && addr_equal(&i->addr, &ep->remote_addr)) {
			ini = i;
			break;
		}
	}
	if (!ini) {
		ini = calloc(1, sizeof(*ini));
		if (!ini)
			return -ENOMEM;
		ini->addr = ep->remote_addr;
		ini->tag = xe->peer_tag;
		ini->cq = cq;
		ini->pd = ep->pz->pd;
		ini->port = xe->peer_port;
		ini->id = ++x->next_id;
		ini->state = INI_CONNECTING;
		ofx_list_init(&ini->eps);
		ret = ini_qp_create(ia, ini, ep);
		if (ret) {
			free(ini);
			return ret;
		}
		ofx_list_add_tail(&x->inis, &ini->link);
		x->stats.ini_created++;
		x->stats.ini_live++;
		c.op = OFX_XRC_OP_INI;
		c.conn_id = ini->id;
		c.srqn_from = ini->qp->qp_num;
		c.tag = x->tag;
		c.port = x->port;
		c.aux = ini->tag;
		ret = ctl_send_qp(x, ia, (struct sockaddr *)&ini->addr, ini->port, &c, ini->qp);
		if (ret) {
			ini->state = INI_DEAD;
			return ret;
		}
	}
	ini->refs++;
	xe->ini = ini;
	ofx_list_add_tail(&ini->eps, &xe->ini_link);
	return 0;
}

/* xrc->lock held.  Drops the EP's INI reference; the last one destroys it. */
static void ini_put(struct ofx_xrc_ia *x, struct ofx_xrc_ep *xe)
{
	struct ofx_xrc_ini *ini = xe->ini;

	if (!ini)
		return;
	ofx_list_del(&xe->ini_link);
	xe->ini = NULL;
	if (--ini->refs == 0)
		ini_destroy(x, ini);
}

/* ---- connection state --------------------------------------------------- */

/* ep->lock and xrc->lock held.  Sends CONFIRM (active) or BIND (passive). */
static int conn_ini_ready(struct ofx_ia *ia, struct ofx_xrc_ep *xe)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c = {
		.conn_id = xe->conn_id,
		.srqn_from = xe->srqn,
		.srqn_to = xe->peer_srqn,
		.tag = x->tag,
		.tgt = xe->ini->tgt,
		.port = x->port,
	};

	c.op = xe->active ? OFX_XRC_OP_CONFIRM : OFX_XRC_OP_BIND;
	xe->state = xe->active ? XC_A_CONFIRM_SENT : XC_P_BIND_SENT;
	return ctl_send(x, ia, (struct sockaddr *)&xe->ep->remote_addr, xe->peer_port, &c);
}

/* ep->lock held.  The connection is up in both directions. */
static void conn_established(struct ofx_xrc_ep *xe)
{
	struct ofx_ep *ep = xe->ep;
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);

	xe->state = XC_CONNECTED;
	ep->state = OFX_EP_CONNECTED;
	atomic_store(&xe->can_send, true);
	pthread_mutex_lock(&x->lock);
	x->stats.conn_xrc++;
	pthread_mutex_unlock(&x->lock);
	ofx_dbg("ep %p xrc srq 0x%x <-> 0x%x connected", (void *)ep, xe->srqn, xe->peer_srqn);
	ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, xe->active);
}

/* ep->lock held.  Releases SRQ, INI and TGT references of the connection. */
static void conn_release(struct ofx_xrc_ep *xe)
{
	struct ofx_ep *ep = xe->ep;
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);

	atomic_store(&xe->can_send, false);
	while (atomic_load(&xe->inflight))
		sched_yield();
	ofx_progress_timer_cancel(ep->obj.ia->progress, &xe->fence_timer);
	xrc_srq_close(ep);
	pthread_mutex_lock(&x->lock);
	ini_put(x, xe);
	/* a TGT this IA created stays until ia_close */
	if (xe->tgt && --xe->tgt->refs == 0 && !xe->tgt->created)
		tgt_close(x, xe->tgt);
	xe->tgt = NULL;
	ofx_list_del(&xe->link);
	pthread_mutex_unlock(&x->lock);
	xe->state = XC_CLOSED;
}

/* ep->lock held.  Reports the end of the connection once. */
static void conn_report(struct ofx_xrc_ep *xe, DAT_EVENT_NUMBER num)
{
	struct ofx_ep *ep = xe->ep;

	ep->state = OFX_EP_DISCONNECTED;
	if (xe->event_posted)
		return;
	xe->event_posted = true;
	ofx_ep_post_conn_event(ep, num, false);
}

/* The event of a connection that failed before it was established. */
static DAT_EVENT_NUMBER pending_fail_event(const struct ofx_xrc_ep *xe)
{
	return xe->active ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED :
			    DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
}

/* ep->lock held.  The connection failed before it was established. */
static void conn_fail(struct ofx_xrc_ep *xe, DAT_EVENT_NUMBER num)
{
	ofx_dbg("ep %p xrc connection failed in %s", (void *)xe->ep, xrc_conn_names[xe->state]);
	conn_release(xe);
	conn_report(xe, num);
}

static void conn_after_fence(struct ofx_xrc_ep *xe);

/*
 * Progress thread: nobody may be polling the request EVD, so the fence's
 * completion is looked for here; after cm_timeout_ms the EP goes on without
 * it (its INI QP is then stuck or dead, which the send error reports).
 */
static void fence_poll(void *arg)
{
	struct ofx_xrc_ep *xe = arg;
	struct ofx_ep *ep = xe->ep;

	if (ep->req_evd)
		ofx_evd_drain_cq(ep->req_evd);
	pthread_mutex_lock(&ep->lock);
	if (xe->state == XC_FENCE && !xe->fence_done) {
		if (ofx_now_ns() > xe->fence_deadline_ns) {
			ofx_warn("ep %p: xrc fence not completed within %u ms", (void *)ep,
				 ep->obj.ia->cfg.cm_timeout_ms);
			xe->fence_done = true;
			conn_after_fence(xe);
		} else {
			ofx_progress_timer_arm(ep->obj.ia->progress, &xe->fence_timer,
					       XRC_FENCE_POLL_US, fence_poll, xe);
		}
	}
	pthread_mutex_unlock(&ep->lock);
}

/*
 * ep->lock held.  Stops sending and posts the fence behind the EP's sends;
 * DISC follows its completion (ofx_xrc_dto_notify).  Without a ready INI
 * QP there is nothing to fence.
 */
static void conn_stop_sending(struct ofx_xrc_ep *xe)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	atomic_store(&xe->can_send, false);
	while (atomic_load(&xe->inflight))
		sched_yield();
	xe->state = XC_FENCE;
	xe->fence_done = false;
	if (!xe->ini || xe->ini->state != INI_READY) {
		xe->fence_done = true;
		return;
	}
	wr.wr_id = (uintptr_t)&xe->fence;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = xe->peer_srqn;
	ret = ofx_verbs->post_send(xe->ini->qp, &wr, &bad);
	if (ret) {
		ofx_warn("post xrc fence on qp 0x%x: %s", xe->ini->qp->qp_num, strerror(ret));
		xe->fence_done = true;
		return;
	}
	xe->fence_deadline_ns = ofx_now_ns() + xe->ep->obj.ia->cfg.cm_timeout_ms * 1000000ull;
	ofx_progress_timer_arm(xe->ep->obj.ia->progress, &xe->fence_timer, XRC_FENCE_POLL_US,
			       fence_poll, xe);
}

/* ep->lock held.  After the fence: DISC, and the end once the peer's came. */
static void conn_after_fence(struct ofx_xrc_ep *xe)
{
	struct ofx_ia *ia = xe->ep->obj.ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c = {
		.op = OFX_XRC_OP_DISC,
		.conn_id = xe->conn_id,
		.srqn_from = xe->srqn,
		.srqn_to = xe->peer_srqn,
		.tag = x->tag,
		.port = x->port,
	};

	xe->state = XC_DISC_SENT;
	if (!xe->peer_gone &&
	    ctl_send(x, ia, (struct sockaddr *)&xe->ep->remote_addr, xe->peer_port, &c))
		xe->peer_gone = true; /* no way to reach the peer */
	if (xe->peer_disc || xe->peer_gone) {
		conn_release(xe);
		conn_report(xe, DAT_CONNECTION_EVENT_DISCONNECTED);
	} else if (xe->ep->state != OFX_EP_DISCONNECTED) {
		xe->ep->state = OFX_EP_DISCONNECT_PENDING;
	}
}

/* ep->lock held.  Ends a connection not yet established: DISC, no fence. */
static void conn_abort(struct ofx_xrc_ep *xe)
{
	xe->fence_done = true;
	conn_after_fence(xe);
	if (xe->state != XC_CLOSED) {
		/* the peer may not know the EP yet: do not wait for its DISC */
		xe->peer_gone = true;
		conn_release(xe);
	}
	conn_report(xe, DAT_CONNECTION_EVENT_DISCONNECTED);
}

/* The peer's DISC sent after its fence: we may also tell it we are done. */
static void conn_fence_and_disc(struct ofx_xrc_ep *xe)
{
	conn_stop_sending(xe);
	if (xe->fence_done)
		conn_after_fence(xe);
}

/* ---- connection hooks --------------------------------------------------- */

int ofx_xrc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_XRC };
	int n, ret;

	*offered_p = false;
	if (!xe || ep->csp || pdata_len > XRC_REQ_AREA - OFX_PDATA_XRC_HDR_LEN ||
	    ofx_cm_p2p_requested(ep))
		return 0;
	xrc_srq_close(ep); /* an earlier offer whose connect never started */
	ret = xrc_srq_open(ep);
	if (ret)
		return ret;
	hdr.xrc_srqn = (xe->srqn & XRC_SRQN_MASK) | (x->tag & 0xffu) << 24;
	n = ofx_pdata_encode(&hdr, pdata, pdata_len, XRC_REQ_AREA, ep->req_pdata,
			     sizeof(ep->req_pdata));
	if (n < 0) {
		xrc_srq_close(ep);
		return n;
	}
	ep->req_pdata_len = n;
	xe->active = true;
	xe->state = XC_OFFERED;
	xe->event_posted = false;
	*offered_p = true;
	return 0;
}

bool ofx_xrc_offered(const struct ofx_ep *ep)
{
	return ep->xrc && ep->xrc->state == XC_OFFERED;
}

void ofx_xrc_fallback(struct ofx_ep *ep)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);

	if (!xe)
		return;
	xrc_srq_close(ep);
	xe->state = XC_RC;
	pthread_mutex_lock(&x->lock);
	x->stats.conn_rc++;
	pthread_mutex_unlock(&x->lock);
}

bool ofx_xrc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	const uint8_t *d = ev->param.conn.private_data;
	int len = ev->param.conn.private_data_len;
	struct ofx_pdata_hdr hdr;
	int ret;

	if (!xe || xe->state != XC_OFFERED || ev->status != OFX_REJ_CONSUMER || !d ||
	    len < XRC_ACC_HDR + OFX_PDATA_XRC_HDR_LEN || d[6] != XRC_VERSION ||
	    ofx_pdata_decode(d + XRC_ACC_HDR, len - XRC_ACC_HDR, &hdr) ||
	    (hdr.flags & (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY)) !=
		    (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY))
		return false;
	*destroy_p = ev->id;
	xe->peer_port = get16(d + 4);
	xe->peer_tag = get32(d + 8);
	xe->peer_srqn = hdr.xrc_srqn & XRC_SRQN_MASK;
	memcpy(ep->pdata, d + XRC_ACC_HDR, hdr.consumer_len);
	ep->pdata_len = hdr.consumer_len;
	ep->state = OFX_EP_COMPLETION_PENDING;

	ret = ofx_ep_recv_go_live(ep, false);
	pthread_mutex_lock(&x->lock);
	xe->conn_id = ++x->next_id;
	ofx_list_add_tail(&x->eps, &xe->link);
	xe->state = XC_A_INI_WAIT;
	if (!ret)
		ret = ini_get(ia, xe);
	if (!ret && xe->ini->state == INI_READY)
		ret = conn_ini_ready(ia, xe);
	pthread_mutex_unlock(&x->lock);
	if (ret)
		conn_fail(xe, pending_fail_event(xe));
	return true;
}

bool ofx_xrc_accept(struct ofx_ep *ep, struct ofx_cr *cr, const void *pdata, int pdata_len,
		    int *ret_p)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY };
	uint8_t rej[XRC_REJ_AREA];
	int ret, n;

	if (!xe)
		return false;
	if (ep->csp || !cr->has_hdr || !(cr->hdr.flags & OFX_PDATA_F_XRC) ||
	    (cr->hdr.flags & OFX_PDATA_F_P2P) || pdata_len > OFX_XRC_ACCEPT_MAX) {
		pthread_mutex_lock(&x->lock);
		x->stats.conn_rc++;
		pthread_mutex_unlock(&x->lock);
		return false;
	}
	ret = xrc_srq_open(ep);
	if (ret)
		goto out;
	xe->active = false;
	xe->event_posted = false;
	xe->peer_srqn = cr->hdr.xrc_srqn & XRC_SRQN_MASK;
	ep->remote_addr = cr->remote_addr;
	ret = ofx_ep_recv_go_live(ep, false);
	if (ret)
		goto err_srq;

	memset(rej, 0, sizeof(rej));
	put32(rej, OFX_REJ_HDR);
	put16(rej + 4, x->port);
	rej[6] = XRC_VERSION;
	put32(rej + 8, x->tag);
	hdr.xrc_srqn = (xe->srqn & XRC_SRQN_MASK) | (x->tag & 0xffu) << 24;
	n = ofx_pdata_encode(&hdr, pdata, pdata_len, XRC_REJ_AREA - XRC_ACC_HDR,
			     rej + XRC_ACC_HDR, XRC_REJ_AREA - XRC_ACC_HDR);
	if (n < 0) {
		ret = n;
		goto err_srq;
	}
	pthread_mutex_lock(&x->lock);
	ofx_list_add_tail(&x->eps, &xe->link);
	xe->state = XC_P_CONFIRM_WAIT;
	pthread_mutex_unlock(&x->lock);
	ep->state = OFX_EP_COMPLETION_PENDING;
	if (ofx_verbs->reject(cr->cm_id, rej, XRC_ACC_HDR + n)) {
		ret = -errno;
		ofx_err("send xrc accept: %m");
		pthread_mutex_lock(&x->lock);
		ofx_list_del(&xe->link);
		pthread_mutex_unlock(&x->lock);
		ep->state = OFX_EP_UNCONNECTED;
		goto err_srq;
	}
	*ret_p = 0;
	return true;

err_srq:
	xrc_srq_close(ep);
out:
	xe->state = XC_IDLE;
	*ret_p = ret;
	return true;
}

bool ofx_xrc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p)
{
	struct ofx_xrc_ep *xe = ep->xrc;

	(void)abrupt;
	if (!xe || xe->state == XC_IDLE || xe->state == XC_RC || xe->state == XC_OFFERED)
		return false;
	*ret_p = 0;
	switch (xe->state) {
	case XC_CONNECTED:
		ep->state = OFX_EP_DISCONNECT_PENDING;
		conn_fence_and_disc(xe);
		break;
	case XC_FENCE:
	case XC_DISC_SENT:
	case XC_CLOSED:
		break;
	default:
		/* not established yet: tell the peer, report the end */
		conn_abort(xe);
		break;
	}
	return true;
}

/* ---- control message handling ------------------------------------------ */

/* The listener side of an INI connection: a TGT QP for the sender. */
static void ctl_on_ini(struct ofx_ia *ia, const struct xrc_ctl *c, struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x->xrcd,
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ofx_xrc_tgtqp *t;

	a->verdict = XRC_V_REFUSED;
	if (c->aux != x->tag) {
		ofx_dbg("ini request for domain %08x, ours is %08x", c->aux, x->tag);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	t->qp = ofx_verbs->create_qp_ex(ia->verbs, &init);
	if (!t->qp) {
		ofx_err("create xrc tgt qp: %m");
		free(t);
		return;
	}
	/* a device carrier moves it with the connection's attributes */
	if (!x->tp->drives_qps) {
		ofx_verbs->modify_qp(t->qp, &qa, IBV_QP_STATE);
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_RTR;
		qa.dest_qp_num = c->srqn_from;
		ofx_verbs->modify_qp(t->qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN);
	}
	t->qpn = t->qp->qp_num;
	t->created = true;
	ofx_list_add_tail(&x->tgts, &t->link);
	x->stats.tgt_created++;
	x->stats.tgt_handles++;
	a->tgt = t->qpn;
	a->verdict = XRC_V_OK;
}

/* ep->lock held (P): the active side's CONFIRM. */
static void ctl_on_confirm(struct ofx_ia *ia, struct ofx_xrc_ep *xe, const struct xrc_ctl *c,
			   struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	int ret;

	if (xe->state != XC_P_CONFIRM_WAIT) {
		a->verdict = XRC_V_OK; /* a resent CONFIRM: idempotent */
		return;
	}
	pthread_mutex_lock(&x->lock);
	a->verdict = tgt_verify(ia, xe, c->tgt);
	if (a->verdict != XRC_V_OK) {
		pthread_mutex_unlock(&x->lock);
		conn_fail(xe, pending_fail_event(xe));
		return;
	}
	xe->conn_id = c->conn_id;
	xe->peer_tag = c->tag;
	xe->peer_port = c->port;
	xe->state = XC_P_INI_WAIT;
	ret = ini_get(ia, xe);
	if (!ret && xe->ini->state == INI_READY)
		ret = conn_ini_ready(ia, xe);
	pthread_mutex_unlock(&x->lock);
	if (ret)
		conn_fail(xe, pending_fail_event(xe));
}

/* ep->lock held (A): the passive side's BIND. */
static void ctl_on_bind(struct ofx_ia *ia, struct ofx_xrc_ep *xe, const struct xrc_ctl *c,
			struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);

	if (xe->bound || (xe->state != XC_A_CONFIRM_SENT && xe->state != XC_A_INI_WAIT)) {
		a->verdict = xe->bound ? XRC_V_OK : XRC_V_REFUSED;
		return;
	}
	pthread_mutex_lock(&x->lock);
	a->verdict = tgt_verify(ia, xe, c->tgt);
	pthread_mutex_unlock(&x->lock);
	if (a->verdict != XRC_V_OK) {
		conn_fail(xe, pending_fail_event(xe));
		return;
	}
	xe->bound = true;
	if (xe->ack_ok)
		conn_established(xe);
}

/* ep->lock held: the peer's DISC. */
static void ctl_on_disc(struct ofx_xrc_ep *xe)
{
	xe->peer_disc = true;
	switch (xe->state) {
	case XC_CONNECTED:
		conn_report(xe, DAT_CONNECTION_EVENT_DISCONNECTED);
		conn_fence_and_disc(xe);
		break;
	case XC_DISC_SENT:
		conn_release(xe);
		conn_report(xe, DAT_CONNECTION_EVENT_DISCONNECTED);
		break;
	case XC_FENCE:
		break; /* DISC goes after our fence; then we are done */
	case XC_CLOSED:
		break;
	default:
		conn_fail(xe, pending_fail_event(xe));
		break;
	}
}

int ofx_xrc_ctl_request(struct ofx_ia *ia, const struct sockaddr *src, const uint8_t *req,
			uint8_t *answer)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c, a = { 0 };
	struct ofx_xrc_ep *xe;

	(void)src;
	if (!x || ctl_decode(req, &c) || c.op & OFX_XRC_OP_ANSWER)
		return -EPROTO;
	a.op = OFX_XRC_OP_ANSWER | c.op;
	a.conn_id = c.conn_id;
	a.srqn_from = c.srqn_to;
	a.srqn_to = c.srqn_from;
	a.tag = x->tag;
	a.port = x->port;
	if (c.op == OFX_XRC_OP_INI) {
		pthread_mutex_lock(&x->lock);
		ctl_on_ini(ia, &c, &a);
		pthread_mutex_unlock(&x->lock);
		ctl_encode(&a, answer);
		return 0;
	}
	pthread_mutex_lock(&x->lock);
	xe = ep_find(x, c.srqn_to, c.srqn_from);
	if (xe)
		atomic_fetch_add(&xe->busy, 1);
	pthread_mutex_unlock(&x->lock);
	if (!xe) {
		a.status = XRC_S_UNKNOWN;
		ctl_encode(&a, answer);
		return 0;
	}
	pthread_mutex_lock(&xe->ep->lock);
	switch (c.op) {
	case OFX_XRC_OP_CONFIRM:
		ctl_on_confirm(ia, xe, &c, &a);
		break;
	case OFX_XRC_OP_BIND:
		ctl_on_bind(ia, xe, &c, &a);
		break;
	case OFX_XRC_OP_DISC:
		ctl_on_disc(xe);
		break;
	default:
		a.status = XRC_S_UNKNOWN;
		break;
	}
	pthread_mutex_unlock(&xe->ep->lock);
	atomic_fetch_sub(&xe->busy, 1);
	ctl_encode(&a, answer);
	return 0;
}

/* The answer to our INI request: the INI QP is READY (or DEAD). */
static void ctl_ini_answered(struct ofx_ia *ia, const struct xrc_ctl *c, const struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_ep **wake;
	struct ofx_xrc_ini *ini = NULL;
	struct ofx_list *pos, *tmp;
	bool ok;
	int n = 0;

	pthread_mutex_lock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &x->inis) {
		struct ofx_xrc_ini *i = container_of(pos, struct ofx_xrc_ini, link);

		if (i->id == c->conn_id && i->state == INI_CONNECTING)
			ini = i;
	}
	if (!ini) {
		pthread_mutex_unlock(&x->lock);
		return;
	}
	if (a && a->verdict == XRC_V_OK && x->tp->drives_qps)
		ini->tgt = a->tgt; /* the carrier moved the QP already */
	ok = a && a->verdict == XRC_V_OK && (x->tp->drives_qps || !ini_qp_ready(ini, a->tgt));
	ini->state = ok ? INI_READY : INI_DEAD;
	if (!ok)
		ofx_warn("ini qp 0x%x to port %u: %s", ini->qp->qp_num, ini->port,
			 a ? "refused" : "no answer");
	wake = calloc(ini->refs ? ini->refs : 1, sizeof(*wake));
	ofx_list_for_each_safe(pos, tmp, &ini->eps) {
		struct ofx_xrc_ep *xe = container_of(pos, struct ofx_xrc_ep, ini_link);

		if (wake && n < ini->refs) {
			atomic_fetch_add(&xe->busy, 1);
			wake[n++] = xe;
		}
	}
	pthread_mutex_unlock(&x->lock);
	if (!wake)
		ofx_err("no memory to wake the eps of ini qp 0x%x", ini->qp->qp_num);

	for (int i = 0; i < n; i++) {
		struct ofx_xrc_ep *xe = wake[i];
		int ret = ok ? 0 : -ECONNREFUSED;

		pthread_mutex_lock(&xe->ep->lock);
		if (xe->state == XC_A_INI_WAIT || xe->state == XC_P_INI_WAIT) {
			if (ok) {
				pthread_mutex_lock(&x->lock);
				ret = conn_ini_ready(ia, xe);
				pthread_mutex_unlock(&x->lock);
			}
			if (ret)
				conn_fail(xe, pending_fail_event(xe));
		}
		pthread_mutex_unlock(&xe->ep->lock);
		atomic_fetch_sub(&xe->busy, 1);
	}
	free(wake);
}

void ofx_xrc_ctl_answer(struct ofx_ia *ia, const uint8_t *req, const uint8_t *answer)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c, a;
	struct ofx_xrc_ep *xe;
	bool have = answer && !ctl_decode(answer, &a);

	if (!x || ctl_decode(req, &c))
		return;
	if (!have) {
		pthread_mutex_lock(&x->lock);
		x->stats.ctl_lost++;
		pthread_mutex_unlock(&x->lock);
	}
	if (c.op == OFX_XRC_OP_INI) {
		ctl_ini_answered(ia, &c, have ? &a : NULL);
		return;
	}
	pthread_mutex_lock(&x->lock);
	xe = ep_find(x, c.srqn_from, c.srqn_to);
	if (xe)
		atomic_fetch_add(&xe->busy, 1);
	pthread_mutex_unlock(&x->lock);
	if (!xe)
		return;
	pthread_mutex_lock(&xe->ep->lock);
	switch (c.op) {
	case OFX_XRC_OP_CONFIRM:
		if (xe->state != XC_A_CONFIRM_SENT)
			break;
		if (!have || a.status != XRC_S_OK || a.verdict != XRC_V_OK) {
			conn_fail(xe, pending_fail_event(xe));
			break;
		}
		xe->ack_ok = true;
		if (xe->bound)
			conn_established(xe);
		break;
	case OFX_XRC_OP_BIND:
		if (xe->state != XC_P_BIND_SENT)
			break;
		if (!have || a.status != XRC_S_OK || a.verdict != XRC_V_OK)
			conn_fail(xe, pending_fail_event(xe));
		else
			conn_established(xe);
		break;
	case OFX_XRC_OP_DISC:
		/* no answer: the peer is presumed gone */
		if (!have || a.status != XRC_S_OK)
			ctl_on_disc(xe);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&xe->ep->lock);
	atomic_fetch_sub(&xe->busy, 1);
}

/* ---- EP teardown -------------------------------------------------------- */

static bool conn_pending(const struct ofx_xrc_ep *xe)
{
	return xe->state == XC_A_INI_WAIT || xe->state == XC_A_CONFIRM_SENT ||
	       xe->state == XC_P_CONFIRM_WAIT || xe->state == XC_P_INI_WAIT ||
	       xe->state == XC_P_BIND_SENT;
}

/*
 * ep->lock not held.  Waits (at most cm_timeout_ms) for the fence and, with
 * `peer` and a progress thread to deliver it, the peer's DISC.  False if
 * the fence did not complete.
 */
static bool conn_wait(struct ofx_ep *ep, bool peer)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_ia *ia = ep->obj.ia;
	uint64_t deadline = ofx_now_ns() + ia->cfg.cm_timeout_ms * 1000000ull;
	bool clean = true;

	for (;;) {
		struct timespec ts = { 0, 200 * 1000 };
		bool fence_wait, peer_wait;

		pthread_mutex_lock(&ep->lock);
		fence_wait = xe->state == XC_FENCE && !xe->fence_done;
		/* only a progress thread can deliver the peer's DISC meanwhile */
		peer_wait = peer && xe->state == XC_DISC_SENT && !xe->peer_disc &&
			    !xe->peer_gone && ia->progress;
		pthread_mutex_unlock(&ep->lock);
		if (!fence_wait && !peer_wait)
			break;
		if (ofx_now_ns() > deadline) {
			ofx_dbg("ep %p xrc teardown: %s not done within %u ms", (void *)ep,
				fence_wait ? "fence" : "peer disc", ia->cfg.cm_timeout_ms);
			clean = !fence_wait;
			break;
		}
		if (fence_wait && ep->req_evd)
			ofx_evd_drain_cq(ep->req_evd);
		nanosleep(&ts, NULL);
	}
	return clean;
}

void ofx_xrc_ep_quiesce(struct ofx_ep *ep)
{
	if (ep->xrc)
		conn_wait(ep, false);
}

bool ofx_xrc_ep_teardown(struct ofx_ep *ep)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	bool clean;

	if (!xe)
		return true;
	pthread_mutex_lock(&ep->lock);
	xe->event_posted = true; /* the EP is going: no more events */
	if (xe->state == XC_CONNECTED)
		conn_fence_and_disc(xe);
	else if (conn_pending(xe))
		conn_abort(xe);
	pthread_mutex_unlock(&ep->lock);
	clean = conn_wait(ep, true);
	pthread_mutex_lock(&ep->lock);
	if (xe->state != XC_CLOSED && xe->state != XC_IDLE && xe->state != XC_RC &&
	    xe->state != XC_OFFERED) {
		conn_release(xe);
	} else if (xe->srq) {
		xrc_srq_close(ep);
	}
	pthread_mutex_unlock(&ep->lock);
	/* handlers that found the EP before it left the table */
	pthread_mutex_lock(&x->lock);
	if (!ofx_list_empty(&xe->link))
		ofx_list_del(&xe->link);
	pthread_mutex_unlock(&x->lock);
	while (atomic_load(&xe->busy))
		sched_yield();
	/* a fence_poll that found the EP before its timer was cancelled */
	ofx_progress_barrier(ia->progress);
	return clean;
}

void ofx_xrc_ep_free(struct ofx_ep *ep)
{
	free(ep->xrc);
	ep->xrc = NULL;
}

int ofx_xrc_ep_reset(struct ofx_ep *ep)
{
	struct ofx_xrc_ep *xe = ep->xrc;

	if (!xe)
		return 0;
	/* an offer that ended without an answer (timeout, reject) */
	if (xe->state == XC_OFFERED)
		xrc_srq_close(ep);
	else if (xe->state != XC_IDLE && xe->state != XC_CLOSED && xe->state != XC_RC)
		return -EBUSY;
	xe->state = XC_IDLE;
	xe->ack_ok = xe->bound = xe->peer_disc = xe->peer_gone = xe->fence_done = false;
	xe->event_posted = false;
	xe->peer_srqn = xe->peer_tag = 0;
	return 0;
}

/* ---- data path ---------------------------------------------------------- */

struct ibv_qp *ofx_xrc_sq_begin(struct ofx_ep *ep, struct ibv_send_wr *wr)
{
	struct ofx_xrc_ep *xe = ep->xrc;

	if (xe->state == XC_RC || xe->state == XC_IDLE)
		return ep->qp;
	atomic_fetch_add(&xe->inflight, 1);
	if (!atomic_load(&xe->can_send)) {
		atomic_fetch_sub(&xe->inflight, 1);
		return NULL;
	}
	wr->qp_type.xrc.remote_srqn = xe->peer_srqn;
	return xe->ini->qp;
}

void ofx_xrc_sq_end(struct ofx_ep *ep, struct ibv_qp *qp)
{
	if (qp != ep->qp)
		atomic_fetch_sub(&ep->xrc->inflight, 1);
}

int ofx_xrc_post_recv(struct ofx_ep *ep, struct ibv_recv_wr *wr)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ibv_recv_wr *bad;
	int ret;

	if (!xe->srq)
		ret = ofx_verbs->post_recv(ep->qp, wr, &bad);
	else
		ret = ofx_verbs->post_srq_recv(xe->srq, wr, &bad);
	if (ret)
		ofx_warn("post recv on %s 0x%x: %s", xe->srq ? "xrc srq" : "qp",
			 xe->srq ? xe->srqn : ep->qp->qp_num, strerror(ret));
	return -ret;
}

bool ofx_xrc_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	struct ofx_xrc_ep *xe = ep->xrc;
	struct ofx_xrc_ia *x = xrc_of(ep->obj.ia);
	struct ofx_cookie *ck = (struct ofx_cookie *)(uintptr_t)wc->wr_id;
	struct ofx_cookie_ring *rr = &ep->recv_ring;
	bool is_recv = ck >= rr->slots && ck < rr->slots + rr->size;
	struct ofx_xrc_ep *one[1], **broken = one;
	struct ofx_xrc_ini *ini;
	struct ofx_list *pos, *tmp;
	int n = 0;

	if (!xe || xe->state == XC_RC || xe->state == XC_IDLE)
		return false;
	/* the fence done (a flush too: the QP went to error, no send is left) */
	if (ck == &xe->fence &&
	    (wc->status == IBV_WC_SUCCESS || wc->status == IBV_WC_WR_FLUSH_ERR)) {
		pthread_mutex_lock(&ep->lock);
		if (xe->state == XC_FENCE) {
			xe->fence_done = true;
			conn_after_fence(xe);
		}
		pthread_mutex_unlock(&ep->lock);
		return true;
	}
	if (wc->status == IBV_WC_SUCCESS || wc->status == IBV_WC_WR_FLUSH_ERR)
		return true;
	/* a receive error concerns this EP only; a send error kills the INI QP */
	pthread_mutex_lock(&x->lock);
	ini = is_recv ? NULL : xe->ini;
	if (ini)
		broken = calloc(ini->refs, sizeof(*broken));
	if (ini && broken) {
		ini->state = INI_DEAD;
		ofx_list_for_each_safe(pos, tmp, &ini->eps) {
			struct ofx_xrc_ep *o = container_of(pos, struct ofx_xrc_ep, ini_link);

			if (n < ini->refs) {
				atomic_fetch_add(&o->busy, 1);
				broken[n++] = o;
			}
		}
	} else {
		if (ini)
			ini->state = INI_DEAD; /* no memory: only this EP is told */
		broken = one;
		atomic_fetch_add(&xe->busy, 1);
		broken[n++] = xe;
	}
	pthread_mutex_unlock(&x->lock);
	ofx_warn("xrc %s error %s on srq 0x%x: %d ep(s) broken", ini ? "send" : "recv",
		 ibv_wc_status_str(wc->status), xe->srqn, n);
	for (int i = 0; i < n; i++) {
		struct ofx_xrc_ep *o = broken[i];

		pthread_mutex_lock(&o->ep->lock);
		if (o->state != XC_CLOSED && o->state != XC_IDLE && o->state != XC_RC) {
			/* the peer cannot be told in order any more: do not wait for it */
			o->peer_gone = true;
			conn_release(o);
			conn_report(o, DAT_CONNECTION_EVENT_BROKEN);
		}
		pthread_mutex_unlock(&o->ep->lock);
		atomic_fetch_sub(&o->busy, 1);
	}
	if (broken != one)
		free(broken);
	return true;
}
