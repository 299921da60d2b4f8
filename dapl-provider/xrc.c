/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_XRC
#include "xrc.h"
#include "lock.h"
#include "dto.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "verbs.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#define XRC_TAG_FMT "ofx-xrcd-tag %08x\n"
#define XRC_TAG_LEN 22			/* "ofx-xrcd-tag " + 8 hex digits + "\n" */
#define XRC_REQ_AREA 56			/* IB/RoCE REQ private data for us */
#define XRC_REJ_AREA OFX_XRC_ANSWER_LEN	/* IB REJ private data */
#define XRC_ACC_HDR 16			/* accept header before the consumer's data */
#define XRC_ACC_F_MORE 0x01		/* answer flags: accept data follows the CONFIRM-ACK */
#define XRC_ACC_TAIL (OFX_XRC_ACCEPT_MAX - OFX_XRC_ACCEPT_REJ)
#define XRC_SRQN_MASK 0xffffffu
#define XRC_CTL_MAGIC 0x4F58u
#define XRC_VERSION 1

/*
 * REFUSED condemns the TGT the request named (its sender's INI QP goes
 * DEAD); FAILED ends the connection alone: the receiver cannot go on for
 * a reason of its own (no INI QP of its own for the way back).
 */
enum xrc_verdict { XRC_V_NONE = 0, XRC_V_OK = 1, XRC_V_REFUSED = 2, XRC_V_FAILED = 3 };
/*
 * DISC aux: the sender's SRQ is gone, or goes without waiting for the
 * peer's DISC (its connection broke, or its owner is going with nothing to
 * deliver that DISC meanwhile): no fence to it, no DISC awaited.
 */
#define XRC_DISC_NO_FENCE 1u
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
	struct ofx_evd *evd;		/* whose CQ that is: drained before the QP goes */
	uint16_t port;			/* the peer service port it was connected to */
	struct ibv_qp *qp;
	struct ibv_qp_cap cap;		/* what create granted (sizing: ini_qp_create) */
	uint32_t tgt;			/* TGT QP number once READY */
	enum xrc_ini_state state;
	bool unanswered;		/* its INI request went unsent or unanswered */
	int refs;			/* EPs bound to it or waiting for it */
	/*
	 * Send queue slots those EPs may fill (their request queues and
	 * fences): an EP gets an INI QP whose cap.max_send_wr has room for its
	 * own, as an RC QP of its own would, else a further one.
	 */
	uint32_t wr_used;
	struct ofx_list eps;		/* ofx_xrc_conn.ini_link */
};

/* A TGT QP handle held by this IA; guarded by xrc->lock. */
struct ofx_xrc_tgtqp {
	struct ofx_list link;		/* in xrc->tgts */
	struct ibv_qp *qp;
	uint32_t qpn;
	bool created;			/* made by this IA's listener */
	/* created: the INI QP it was made for (qp number, sender's tag) exists */
	bool ini_open;
	/* created: a CONFIRM or BIND named it, so its sender uses it (ofx_xrc_tgt_drop) */
	bool named;
	uint32_t ini_qpn, ini_tag;
	int refs;			/* EPs holding it (2a) */
};

struct ofx_xrc_ia {
	/* guards every list and the ofx_xrc_conn fields so marked; after the owners' locks */
	pthread_mutex_t lock;
	int fd;				/* domain file, -1 for a private domain */
	struct ibv_xrcd *xrcd;
	uint32_t tag;
	uint16_t port;
	const struct ofx_xrc_transport *tp;
	void *tp_ctx;
	/* retired: INI QPs no EP holds any more, destroyed by xrc_reap */
	struct ofx_list inis, retired, tgts, eps;
	/*
	 * Serialises xrc_reap (which drains EVDs and destroys QPs with no
	 * other lock held); before xrc->lock.  Taken only with trylock where
	 * a reap may already be on the stack (completion and async handlers).
	 */
	pthread_mutex_t reap_lock;
	uint32_t next_id;
	/* request SGEs an INI QP was (ok) and was not (bad, 0: none yet) made with */
	uint32_t ini_sge_ok, ini_sge_bad;
	struct ofx_xrc_stats stats;
};

/*
 * One XRC connection of an owner (ofx_xrc_conn_create).  The owner's lock
 * (`lock`) guards the fields below; xrc->lock guards the list links, ini
 * and tgt.
 */
struct ofx_xrc_conn {
	struct ofx_ia *ia;
	pthread_mutex_t *lock;		/* the owner's: taken before xrc->lock */
	const struct ofx_xrc_owner_ops *ops;
	void *owner;
	struct ofx_xrc_conn_params params; /* of the current connection (offer or accept) */
	struct sockaddr_storage peer_addr; /* the peer IA (control messages, INI key) */
	struct ofx_list link;		/* in xrc->eps while a connection exists */
	struct ofx_list ini_link;	/* in ini->eps while bound */
	_Atomic int busy;		/* handlers using the connection without xrc->lock */
	_Atomic bool can_send;		/* data path: sends go to the INI QP */
	_Atomic int inflight;		/* data path: posts between sq_begin and sq_end */
	/*
	 * Woken when busy, or inflight once sends stop, is 0, and whenever a
	 * handler changed the connection (gen counts those changes: conn_wait).
	 */
	struct ofx_waiter quiet;
	_Atomic unsigned int gen;
	enum xrc_conn_state state;
	bool active;
	struct ibv_srq *srq;
	uint32_t srqn;
	/*
	 * xrc_rc_fallback=no: the QP whose number the offer's REQ names (a
	 * TGT of our domain, never moved out of RESET; ofx_xrc_conn_req_qpn),
	 * from the REQ until the answer, or with the offer's SRQ.
	 */
	struct ibv_qp *req_qp;
	/* the SRQ of a connection that ended, until srq_reap polled its CQEs */
	struct ibv_srq *old_srq;
	uint32_t old_srqn;
	uint32_t conn_id;
	uint32_t peer_srqn, peer_tag;
	bool peer_srqn_known;		/* P: A's srqn arrives with its CONFIRM */
	uint16_t peer_port;
	struct ofx_xrc_ini *ini;
	uint32_t ini_wr;		/* of ini->wr_used, this connection's */
	struct ofx_xrc_tgtqp *tgt;	/* the peer's TGT handle held (2a) */
	bool ack_ok;			/* active: CONFIRM-ACK said OK */
	/*
	 * Accept data past the REJ answer's (step 2): P keeps it for its
	 * CONFIRM-ACKs, A counts what it awaits in its CONFIRM-ACK.
	 */
	uint8_t acc_tail[XRC_ACC_TAIL];
	int acc_tail_len;
	bool ini_retried;		/* the peer refused our TGT once: a fresh INI QP was tried */
	bool tgt_refused;		/* we refused the peer's TGT once: it tries once more */
	bool bound;			/* active: BIND arrived and verified */
	bool peer_disc;			/* the peer's DISC arrived (or it is gone) */
	bool peer_gone;			/* the peer cannot be told any more */
	/*
	 * The owner is going and nothing can deliver the peer's DISC while
	 * it waits (no progress thread): its SRQ goes right after our DISC,
	 * which tells the peer not to fence to it (XRC_DISC_NO_FENCE).
	 */
	bool no_wait;
	/* a teardown gave up on the fence: it may yet complete */
	bool fence_abandoned;
	bool fence_done;
	bool event_posted;		/* DISCONNECTED or BROKEN reported */
	/*
	 * The connection reached CONNECTED, so the peer may have sent to the
	 * SRQ: before that neither side sends (steps 3-4) and no CQE can name it.
	 */
	bool established;
	/* the fence is this module's work request: its completion comes here (dto.h) */
	struct ofx_cookie fence;
	struct ofx_cookie_owner fence_owner;
	_Atomic bool dying;		/* ofx_xrc_conn_forget: the fence is not heard any more */
	/* the fence's deadline, a one-shot timer (fence_wait_start) */
	struct ofx_timer fence_timer;
	bool fence_watch;		/* ofx_evd_watch_channel of req_evd held */
};

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
	pthread_mutex_init(&x->reap_lock, NULL);
	ofx_list_init(&x->inis);
	ofx_list_init(&x->retired);
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
	pthread_mutex_destroy(&x->reap_lock);
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

/*
 * QPs are destroyed with no lock of ours held: ibv_destroy_qp waits until
 * every async event of the QP is acknowledged, and the async handler
 * (ofx_xrc_qp_event) takes xrc->lock first.  So a QP leaves the tables under
 * the lock and is destroyed after it is dropped.
 */

/* xrc->lock held.  The TGT handle leaves the table; tgt_free destroys it. */
static void tgt_unlink(struct ofx_xrc_ia *x, struct ofx_xrc_tgtqp *t)
{
	ofx_lock_assert_held(&x->lock);
	ofx_list_del(&t->link);
	x->stats.tgt_handles--;
}

/* No lock held.  NULL-safe. */
static void tgt_free(struct ofx_xrc_tgtqp *t)
{
	if (!t)
		return;
	if (ofx_verbs->destroy_qp(t->qp))
		ofx_warn("release tgt qp 0x%x: %m", t->qpn);
	free(t);
}

void ofx_xrc_tgt_drop(struct ofx_ia *ia, const struct ibv_qp *tgt, uint32_t qpn)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_tgtqp *gone = NULL;
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &x->tgts) {
		struct ofx_xrc_tgtqp *t = container_of(pos, struct ofx_xrc_tgtqp, link);

		/*
		 * Its number never reached the sender, or the sender did not
		 * take it: no EP holds it.  The handle may be gone (INI-CLOSE)
		 * and a later TGT have its address: the number must match too.
		 */
		if (t->qp == tgt && t->qpn == qpn && t->created && t->refs == 0 &&
		    !t->named) {
			tgt_unlink(x, t);
			gone = t;
			break;
		}
	}
	pthread_mutex_unlock(&x->lock);
	if (gone)
		ofx_dbg("tgt qp 0x%x: its ini request was not answered", gone->qpn);
	tgt_free(gone);
}

/* No lock held.  The INI QP is in no table any more. */
static void ini_free(struct ofx_xrc_ia *x, struct ofx_xrc_ini *ini)
{
	if (ini->qp && ofx_verbs->destroy_qp(ini->qp))
		ofx_warn("destroy ini qp 0x%x: %m", ini->qp->qp_num);
	pthread_mutex_lock(&x->lock);
	x->stats.ini_live--;
	pthread_mutex_unlock(&x->lock);
	free(ini);
}

/* xrc->lock held.  No EP holds the INI QP any more: xrc_reap destroys it. */
static void ini_retire(struct ofx_xrc_ia *x, struct ofx_xrc_ini *ini)
{
	ofx_lock_assert_held(&x->lock);
	ofx_list_del(&ini->link);
	ofx_list_add_tail(&x->retired, &ini->link);
}

/* xrc->lock held.  Moves every entry of `from` to the end of `to`. */
static void list_move_all(struct ofx_list *to, struct ofx_list *from)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, from) {
		ofx_list_del(pos);
		ofx_list_add_tail(to, pos);
	}
}

/*
 * No lock held.  Tells the peer that the INI QP goes, so that the creator
 * of its TGT lets it go too (best effort: a peer that does not hear it
 * keeps the TGT until its ia_close).  Sent whatever the INI's state (the
 * peer may have made a TGT for a request still unanswered), but not to a
 * peer that never answered it: it is presumed gone.
 */
static void ini_close_tell(struct ofx_ia *ia, const struct ofx_xrc_ini *ini)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c = {
		.op = OFX_XRC_OP_INI_CLOSE,
		.conn_id = ini->id,
		.srqn_from = ini->qp->qp_num,
		.tag = x->tag,
		.tgt = ini->tgt,
		.port = x->port,
	};

	if (ini->unanswered)
		return;
	pthread_mutex_lock(&x->lock);
	ctl_send(x, ia, (const struct sockaddr *)&ini->addr, ini->port, &c);
	pthread_mutex_unlock(&x->lock);
}

/*
 * No lock held.  Destroys the retired INI QPs once their CQEs are polled:
 * mlx5 removes a destroyed QP's CQEs from its CQ unreported
 * (__mlx5_cq_clean), and those are the flushed DTOs that every EP which
 * shared the QP is owed (DAT completes every posted DTO).  With `wait`
 * false (a completion or async handler, where a reap may already be under
 * way further up the stack) it gives up if another reap runs: the next one
 * takes what it leaves, ep_teardown's at the latest.
 */
static void xrc_reap(struct ofx_ia *ia, bool wait)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_list done, *pos, *tmp;

	if (wait)
		pthread_mutex_lock(&x->reap_lock);
	else if (pthread_mutex_trylock(&x->reap_lock))
		return;
	ofx_list_init(&done);
	pthread_mutex_lock(&x->lock);
	list_move_all(&done, &x->retired);
	pthread_mutex_unlock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &done) {
		struct ofx_xrc_ini *ini = container_of(pos, struct ofx_xrc_ini, link);

		if (!ofx_evd_drain_all(ini->evd))
			ofx_warn("ini qp 0x%x: request evd full, its flushed dtos are lost",
				 ini->qp->qp_num);
		ini_close_tell(ia, ini);
		ofx_list_del(pos);
		ini_free(x, ini);
	}
	pthread_mutex_unlock(&x->reap_lock);
}

void ofx_xrc_ia_close(struct ofx_ia *ia)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_list inis, tgts, *pos, *tmp;

	if (!x)
		return;
	if (x->tp && x->tp->drives_qps)
		ofx_xrc_cm_stop(ia);
	if (ia->cfg.stats)
		ofx_warn("stats: xrc ini_created %lu ini_live %lu tgt_created %lu tgt_opened %lu "
			 "conn_xrc %lu conn_rc %lu refused %lu ctl_sent %lu ctl_lost %lu "
			 "rc_qps_peak %lu",
			 x->stats.ini_created, x->stats.ini_live, x->stats.tgt_created,
			 x->stats.tgt_opened, x->stats.conn_xrc, x->stats.conn_rc,
			 x->stats.refused, x->stats.ctl_sent, x->stats.ctl_lost,
			 atomic_load(&ia->stats.rc_qps_peak));
	/* every EP is gone: so are the completions the INI QPs could owe */
	ofx_list_init(&inis);
	ofx_list_init(&tgts);
	pthread_mutex_lock(&x->lock);
	list_move_all(&inis, &x->inis);
	list_move_all(&inis, &x->retired);
	/* created TGTs go with their creator; under 2a opened handles keep them */
	ofx_list_for_each_safe(pos, tmp, &x->tgts) {
		tgt_unlink(x, container_of(pos, struct ofx_xrc_tgtqp, link));
		ofx_list_add_tail(&tgts, pos);
	}
	pthread_mutex_unlock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &inis) {
		ofx_list_del(pos);
		ini_free(x, container_of(pos, struct ofx_xrc_ini, link));
	}
	ofx_list_for_each_safe(pos, tmp, &tgts) {
		ofx_list_del(pos);
		tgt_free(container_of(pos, struct ofx_xrc_tgtqp, link));
	}
	if (ofx_verbs->close_xrcd(x->xrcd))
		ofx_warn("close xrcd: %m");
	if (x->fd >= 0)
		close(x->fd);
	pthread_mutex_destroy(&x->reap_lock);
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
	stats->rc_qps = atomic_load(&ia->stats.rc_qps);
	stats->rc_qps_peak = atomic_load(&ia->stats.rc_qps_peak);
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

/* ---- connections ---------------------------------------------------------- */

static void fence_owner_init(struct ofx_xrc_conn *xe);

int ofx_xrc_conn_create(struct ofx_ia *ia, const struct ofx_xrc_owner_ops *ops, void *owner,
			pthread_mutex_t *lock, struct ofx_xrc_conn **conn_p)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_conn *xe;

	*conn_p = NULL;
	/* no carrier for the control messages: the owner stays plain RC */
	if (!x || !x->tp)
		return 0;
	xe = calloc(1, sizeof(*xe));
	if (!xe)
		return -ENOMEM;
	xe->ia = ia;
	xe->lock = lock;
	xe->ops = ops;
	xe->owner = owner;
	ofx_waiter_init(&xe->quiet);
	ofx_list_init(&xe->link);
	ofx_list_init(&xe->ini_link);
	fence_owner_init(xe);
	*conn_p = xe;
	return 0;
}

/* Owner lock held (or the owner not yet visible). */
static void conn_lock(struct ofx_xrc_conn *xe)
{
	pthread_mutex_lock(xe->lock);
}

/*
 * Drops the owner's lock after a handler may have changed the connection,
 * and wakes a conn_wait that waits for such a change (it tests again).
 */
static void conn_unlock(struct ofx_xrc_conn *xe)
{
	pthread_mutex_unlock(xe->lock);
	atomic_fetch_add(&xe->gen, 1);
	ofx_waiter_wake(&xe->quiet);
}

/* The connection's XRC SRQ, completing on the owner's recv EVD. */
static int xrc_srq_open(struct ofx_xrc_conn *xe)
{
	struct ofx_ia *ia = xe->ia;
	const struct ofx_xrc_conn_params *p = &xe->params;
	struct ibv_srq_init_attr_ex attr = {
		.srq_context = p->srq_context,
		.attr = {
			.max_wr = p->recv_wr,
			.max_sge = p->recv_sge,
		},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = p->pd,
		.xrcd = xrc_of(ia)->xrcd,
		.cq = ofx_evd_qp_cq(ia, p->recv_evd),
	};
	int ret;

	errno = 0;
	xe->srq = ofx_verbs->create_srq_ex(ia->verbs, &attr);
	if (!xe->srq) {
		const char *why;

		ret = ofx_verbs_create_failed(&why);
		ofx_err("create xrc srq (max_wr %u): %s", attr.attr.max_wr, why);
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

static void srq_destroy(struct ibv_srq *srq, uint32_t srqn)
{
	if (ofx_verbs->destroy_srq(srq))
		ofx_warn("destroy xrc srq 0x%x: %m", srqn);
}

/*
 * A retired SRQ destroyed without polling its CQEs first (the owner's
 * memory is going at ia_close): a CQE of it still in the CQ would fail a
 * later poll.  A new connection never needs its place: ofx_xrc_conn_fits
 * sends it over RC while the SRQ waits.
 */
static void srq_drop_retired(struct ofx_xrc_conn *xe)
{
	if (!xe->old_srq)
		return;
	ofx_warn("xrc srq 0x%x destroyed before its completions were polled", xe->old_srqn);
	srq_destroy(xe->old_srq, xe->old_srqn);
	xe->old_srq = NULL;
}

/*
 * Owner lock held.  The REQ of the offer is over (its XRC answer came) or
 * the offer is: the QP it named goes.  It has no async events to wait
 * for: a TGT in RESET receives nothing (ia.c takes any for an XRC QP).
 */
static void req_qp_close(struct ofx_xrc_conn *xe)
{
	if (!xe->req_qp)
		return;
	if (ofx_verbs->destroy_qp(xe->req_qp))
		ofx_warn("destroy the req's qp 0x%x: %m", xe->req_qp->qp_num);
	xe->req_qp = NULL;
}

/*
 * Owner lock held.  Closes an SRQ no peer sent to (an offer not taken, a
 * fallback to RC, a failed accept): it can have no CQE.  The QP the
 * offer's REQ named goes with it.
 */
static void xrc_srq_close(struct ofx_xrc_conn *xe)
{
	req_qp_close(xe);
	if (!xe->srq)
		return;
	/* receives posted from now on are held until the next connection */
	xe->ops->recv_stop(xe->owner);
	srq_destroy(xe->srq, xe->srqn);
	xe->srq = NULL;
}

/*
 * Owner lock held.  The connection's SRQ takes no more receives; srq_reap
 * destroys it once the CQEs it produced are polled.
 */
static void xrc_srq_retire(struct ofx_xrc_conn *xe)
{
	if (!xe->srq)
		return;
	xe->ops->recv_stop(xe->owner);
	srq_drop_retired(xe);
	xe->old_srq = xe->srq;
	xe->old_srqn = xe->srqn;
	xe->srq = NULL;
}

/*
 * Owner lock not held.  mlx5 leaves a destroyed SRQ's CQEs in the CQ, and
 * the next ibv_poll_cq that meets one fails and loses its whole batch, other
 * owners' completions included: so the recv EVD is drained first (this
 * owner's completions are reported, or dropped if it is being freed).  If
 * the EVD is full CQEs may remain: the SRQ stays until the next reap (an
 * owner freed meanwhile keeps its memory and the SRQ until ia_close,
 * ofx_xrc_conn_free).
 */
static void srq_reap(struct ofx_xrc_conn *xe)
{
	struct ibv_srq *srq;
	uint32_t srqn;

	conn_lock(xe);
	srq = xe->old_srq;
	srqn = xe->old_srqn;
	xe->old_srq = NULL;
	pthread_mutex_unlock(xe->lock);
	if (!srq)
		return;
	if (!ofx_evd_drain_all(xe->params.recv_evd)) {
		conn_lock(xe);
		if (!xe->old_srq) {
			xe->old_srq = srq;
			srq = NULL;
		}
		pthread_mutex_unlock(xe->lock);
		if (!srq)
			return;
	}
	srq_destroy(srq, srqn);
}

/* No lock held.  What the connection left to destroy (see srq_reap). */
static void conn_reap(struct ofx_xrc_conn *xe, bool wait)
{
	srq_reap(xe);
	xrc_reap(xe->ia, wait);
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

/*
 * xrc->lock held.  Finds the EP of the connection `srqn_to` <- `srqn_from`
 * (SRQ numbers are unique on the device).
 */
static struct ofx_xrc_conn *ep_find(struct ofx_xrc_ia *x, uint32_t srqn_to, uint32_t srqn_from)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &x->eps) {
		struct ofx_xrc_conn *xe = container_of(pos, struct ofx_xrc_conn, link);

		/* P learns A's srqn from the CONFIRM: until then ours names the EP */
		if (xe->srq && xe->srqn == srqn_to &&
		    (xe->peer_srqn == srqn_from || !xe->peer_srqn_known))
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
static enum xrc_verdict tgt_verify(struct ofx_ia *ia, struct ofx_xrc_conn *xe, uint32_t qpn)
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
		t->named = true;
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

/*
 * INI QP sizing.  The SQ is shared by every EP to the node, so it is made as
 * deep as the device takes; but max_qp_wr and max_sge are not what a QP of
 * this type can hold: mlx5 counts max_qp_wr in 64-byte blocks and puts 208
 * bytes of fixed segments in every XRC_SEND WQE before the data segments,
 * within 512 bytes (30 SGEs cannot fit; a 5-block WQE allows 4095 WRs).  No
 * verb tells that limit, so the SQ asks for the SGEs its EPs need (at least
 * XRC_INI_MIN_SGE, so the usual EPs share it) and the EP's inline size, and
 * halves the depth on EINVAL or ENOMEM down to what the EP needs; then it
 * tries again without inline data (sends above what the QP grants go
 * without IBV_SEND_INLINE, ofx_xrc_sq_begin).
 */
#define XRC_INI_MIN_SGE 4

struct ini_need {
	uint32_t wr, sge, inline_data;
};

static struct ini_need ini_need_of(const struct ofx_xrc_conn_params *p)
{
	struct ini_need n = {
		.wr = p->send_wr,
		.sge = p->send_sge,
		.inline_data = p->inline_data,
	};

	return n;
}

static bool ini_fits(const struct ofx_xrc_ini *ini, const struct ini_need *n)
{
	return ini->cap.max_send_sge >= n->sge && ini->cap.max_send_wr >= ini->wr_used &&
	       ini->cap.max_send_wr - ini->wr_used >= n->wr;
}

static struct ibv_qp *ini_qp_try(struct ofx_ia *ia, struct ofx_xrc_ini *ini,
				 struct ibv_qp_init_attr_ex *init, uint32_t wr, uint32_t inl)
{
	init->cap.max_send_wr = wr;
	init->cap.max_inline_data = inl;
	return ofx_verbs->create_qp_ex(ia->verbs, init);
}

static int ini_qp_create(struct ofx_ia *ia, struct ofx_xrc_ini *ini,
			 const struct ofx_xrc_conn_params *p)
{
	const struct ini_need need = ini_need_of(p);
	uint32_t top = ia->dev_attr.max_qp_wr > 1 ? (uint32_t)ia->dev_attr.max_qp_wr - 1 : 1;
	uint32_t sge = need.sge > XRC_INI_MIN_SGE ? need.sge : XRC_INI_MIN_SGE;
	struct ibv_qp_init_attr_ex init = {
		.qp_context = ini,
		.send_cq = ini->cq,
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ini->pd,
	};
	uint32_t inl = need.inline_data;
	int ret = -EINVAL;

	if (ia->dev_attr.max_sge > 0 && sge > (uint32_t)ia->dev_attr.max_sge)
		sge = need.sge;
	init.cap.max_send_sge = sge;
	for (int pass = 0; pass < 2 && !ini->qp; pass++, inl = 0) {
		for (uint32_t wr = top; wr >= need.wr; wr /= 2) {
			ini->qp = ini_qp_try(ia, ini, &init, wr, inl);
			if (ini->qp)
				break;
			ret = errno ? -errno : -ENOMEM;
			ofx_dbg("xrc ini qp: %u wr, %u sge, inline %u: %s", wr, sge, inl,
				strerror(-ret));
			if (ret != -EINVAL && ret != -ENOMEM)
				goto err;
			if (wr == 1)
				break;
		}
		if (!inl)
			break;
	}
	if (!ini->qp)
		goto err;
	ini->cap = init.cap;
	ofx_dbg("xrc ini qp 0x%x: %u wr, %u sge, inline %u", ini->qp->qp_num,
		ini->cap.max_send_wr, ini->cap.max_send_sge, ini->cap.max_inline_data);
	return 0;

err:
	errno = -ret;
	ofx_err("create xrc ini qp (%u sge, %u wr needed): %m", sge, need.wr);
	return ret;
}

/*
 * Owner lock held, not xrc->lock (a probe QP is destroyed).  Whether the
 * device makes an INI QP with the request SGEs of `p` at all: mlx5 holds
 * fewer in an XRC_SEND WQE than in an RC one (19 against 20), and no verb
 * says how many, so the first EP asking for more than every INI QP so far
 * probes a QP with that many (and the fewest WRs); the answer is kept.
 * An error other than the sizing ones says nothing: the INI QP's own
 * creation reports it.
 */
static bool ini_sge_fits(struct ofx_ia *ia, const struct ofx_xrc_conn_params *p)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ibv_qp_init_attr_ex init = {
		.send_cq = ofx_evd_qp_cq(ia, p->req_evd),
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = p->pd,
		.cap = { .max_send_wr = 2, .max_send_sge = p->send_sge },
	};
	uint32_t ok, bad;
	struct ibv_qp *qp;
	int err;

	pthread_mutex_lock(&x->lock);
	ok = x->ini_sge_ok;
	bad = x->ini_sge_bad;
	pthread_mutex_unlock(&x->lock);
	if (p->send_sge <= XRC_INI_MIN_SGE || p->send_sge <= ok)
		return true;
	if (bad && p->send_sge >= bad)
		return false;
	errno = 0;
	qp = ofx_verbs->create_qp_ex(ia->verbs, &init);
	err = errno;
	if (qp && ofx_verbs->destroy_qp(qp))
		ofx_warn("destroy probe xrc ini qp 0x%x: %m", qp->qp_num);
	if (!qp && err != EINVAL && err != ENOMEM)
		return true;
	pthread_mutex_lock(&x->lock);
	if (qp && p->send_sge > x->ini_sge_ok)
		x->ini_sge_ok = p->send_sge;
	else if (!qp && (!x->ini_sge_bad || p->send_sge < x->ini_sge_bad))
		x->ini_sge_bad = p->send_sge;
	pthread_mutex_unlock(&x->lock);
	return qp != NULL;
}

bool ofx_xrc_conn_fits(struct ofx_xrc_conn *xe, const struct ofx_xrc_conn_params *params)
{
	/*
	 * The last connection's SRQ still has CQEs behind a full recv EVD:
	 * destroying it now would fail the poll that meets them, and a second
	 * retired SRQ has no place.  RC needs neither; the reset after this
	 * connection reaps it again.
	 */
	if (xe->old_srq) {
		ofx_info("xrc srq 0x%x still has unpolled completions: the connection runs over rc",
			 xe->old_srqn);
		return false;
	}
	if (ini_sge_fits(xe->ia, params))
		return true;
	ofx_dbg("xrc: %u request sges do not fit an ini qp on %s: the connection runs over rc",
		params->send_sge, ibv_get_device_name(xe->ia->verbs->device));
	return false;
}

/*
 * The attributes the kernel requires of an XRC QP at each transition (an
 * INI takes access flags at RESET->INIT although it has no responder).  A
 * device carrier gets them from rdma_init_qp_attr (xrc_cm.c); the model
 * carrier moves the QPs here with these.
 */
#define XRC_INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define XRC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		      IBV_QP_RQ_PSN)
#define XRC_TGT_RTR_MASK (XRC_RTR_MASK | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define XRC_INI_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)
/* rdma_cm caps the initiator depth it offers at 16 too */
#define XRC_MAX_RD_ATOM 16

static uint8_t xrc_depth(int dev_max)
{
	return (uint8_t)(dev_max <= 0 ? 1 : dev_max < XRC_MAX_RD_ATOM ? dev_max : XRC_MAX_RD_ATOM);
}

/*
 * Moves a new XRC QP through INIT to RTR towards `dest` (the model
 * carrier).  A TGT gets the access a CM connection gives a responder with
 * read resources (the kernel's cm_init_qp_init_attr: writes, reads and
 * atomics) and its responder attributes; an INI neither (the kernel
 * refuses responder attributes for it, but requires access flags at INIT).
 * 0 or the verbs errno.
 */
static int xrc_qp_to_rtr(struct ofx_ia *ia, struct ibv_qp *qp, uint32_t dest, bool tgt)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int ret;

	if (tgt)
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
	ret = ofx_verbs->modify_qp(qp, &a, XRC_INIT_MASK);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	if (tgt) {
		a.max_dest_rd_atomic = xrc_depth(ia->dev_attr.max_qp_rd_atom);
		a.min_rnr_timer = 12;
	}
	return ofx_verbs->modify_qp(qp, &a, tgt ? XRC_TGT_RTR_MASK : XRC_RTR_MASK);
}

/* Moves the INI QP to RTS towards TGT `tgt` (the model carrier). */
static int ini_qp_ready(struct ofx_ia *ia, struct ofx_xrc_ini *ini, uint32_t tgt)
{
	struct ibv_qp_attr a = { 0 };
	int ret;

	ret = xrc_qp_to_rtr(ia, ini->qp, tgt, false);
	if (ret)
		goto err;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = xrc_depth(ia->dev_attr.max_qp_init_rd_atom);
	ret = ofx_verbs->modify_qp(ini->qp, &a, XRC_INI_RTS_MASK);
	if (ret)
		goto err;
	ini->tgt = tgt;
	return 0;
err:
	ofx_err("ini qp 0x%x to tgt 0x%x: %s", ini->qp->qp_num, tgt, strerror(ret));
	return -ret;
}

static const char *qp_state_str(enum ibv_qp_state s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",	   [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned int)s < OFX_ARRAY_SIZE(names) && names[s] ? names[s] : "UNKNOWN";
}

void ofx_xrc_log_qp(const char *role, struct ibv_qp *qp)
{
	const int mask = IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_MAX_QP_RD_ATOMIC |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MTU | IBV_QP_CAP;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int ret;

	if (!ofx_log_enabled(OFX_LOG_DEBUG, OFX_LOG_SUBSYS) || !ofx_verbs->query_qp)
		return;
	memset(&a, 0, sizeof(a));
	memset(&init, 0, sizeof(init));
	ret = ofx_verbs->query_qp(qp, &a, mask, &init);
	if (ret) {
		ofx_dbg("xrc %s qp 0x%x: ibv_query_qp: %s", role, qp->qp_num,
			strerror(ret < 0 ? -ret : ret));
		return;
	}
	ofx_dbg("xrc %s qp 0x%x ready: peer 0x%x state %s max_rd_atomic %u max_dest_rd_atomic %u "
		"timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u path_mtu %d max_send_wr %u "
		"max_send_sge %u max_inline %u",
		role, qp->qp_num, a.dest_qp_num, qp_state_str(a.qp_state), a.max_rd_atomic,
		a.max_dest_rd_atomic, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer,
		(int)a.path_mtu, a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_inline_data);
}

/*
 * xrc->lock held.  The INI QP for the EP's peer (READY, CONNECTING or new:
 * then its INI request is sent) with a reference for the EP, which is
 * bound to it.
 */
static int ini_get(struct ofx_ia *ia, struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	const struct ofx_xrc_conn_params *p = &xe->params;
	struct ibv_cq *cq = ofx_evd_qp_cq(ia, p->req_evd);
	struct ofx_xrc_ini *ini = NULL;
	struct ofx_list *pos, *tmp;
	struct xrc_ctl c = { 0 };
	const struct ini_need need = ini_need_of(p);
	int ret;

	/* an EP with more SGEs than an INI QP holds gets one of its own */
	ofx_list_for_each_safe(pos, tmp, &x->inis) {
		struct ofx_xrc_ini *i = container_of(pos, struct ofx_xrc_ini, link);

		if (i->state != INI_DEAD && i->tag == xe->peer_tag && i->cq == cq &&
		    i->pd == p->pd && addr_equal(&i->addr, &xe->peer_addr) &&
		    ini_fits(i, &need)) {
			ini = i;
			break;
		}
	}
	if (!ini) {
		ini = calloc(1, sizeof(*ini));
		if (!ini)
			return -ENOMEM;
		ini->addr = xe->peer_addr;
		ini->tag = xe->peer_tag;
		ini->cq = cq;
		ini->pd = p->pd;
		ini->evd = p->req_evd;
		ini->port = xe->peer_port;
		ini->id = ++x->next_id;
		ini->state = INI_CONNECTING;
		ofx_list_init(&ini->eps);
		ret = ini_qp_create(ia, ini, p);
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
			/* nobody holds it yet: it goes at the next reap */
			ini->unanswered = true;
			ini_retire(x, ini);
			return ret;
		}
	}
	ini->refs++;
	ini->wr_used += need.wr;
	xe->ini = ini;
	xe->ini_wr = need.wr;
	ofx_list_add_tail(&ini->eps, &xe->ini_link);
	return 0;
}

/* xrc->lock held.  Drops the EP's INI reference; the last one destroys it. */
static void ini_put(struct ofx_xrc_ia *x, struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ini *ini = xe->ini;

	ofx_lock_assert_held(&x->lock);
	if (!ini)
		return;
	ofx_list_del(&xe->ini_link);
	xe->ini = NULL;
	ini->wr_used -= xe->ini_wr;
	xe->ini_wr = 0;
	if (--ini->refs == 0)
		ini_retire(x, ini);
}

/*
 * Owner lock held.  The peer refused the TGT behind the INI QP: it is
 * gone (its creator destroyed it, or under 2b exited), so every later EP
 * through that INI QP would be refused too.  It is never bound again; the
 * connections still on it keep it until they go (their sends fail if the
 * TGT is).
 */
static void ini_refused(struct ofx_xrc_ia *x, struct ofx_xrc_conn *xe)
{
	pthread_mutex_lock(&x->lock);
	if (xe->ini && xe->ini->state == INI_READY) {
		ofx_warn("ini qp 0x%x: tgt qp 0x%x refused by the peer; a new ini qp for the next connection",
			 xe->ini->qp->qp_num, xe->ini->tgt);
		xe->ini->state = INI_DEAD;
	}
	pthread_mutex_unlock(&x->lock);
}

/* ---- connection state --------------------------------------------------- */

static int conn_ini_ready(struct ofx_ia *ia, struct ofx_xrc_conn *xe);
static void conn_fail(struct ofx_xrc_conn *xe);
static void conn_fail_tell(struct ofx_xrc_conn *xe);

/*
 * Owner lock held.  The peer refused the TGT behind our INI QP (ini_refused
 * made it DEAD): the connection goes once more over a fresh INI QP, its
 * CONFIRM or BIND sent when that is READY; the peer waits for it once.
 * False if it did already: the caller fails the connection.
 */
static bool conn_retry_ini(struct ofx_xrc_conn *xe)
{
	struct ofx_ia *ia = xe->ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	int ret;

	if (xe->ini_retried)
		return false;
	xe->ini_retried = true;
	pthread_mutex_lock(&x->lock);
	ini_put(x, xe);
	xe->state = xe->active ? XC_A_INI_WAIT : XC_P_INI_WAIT;
	ret = ini_get(ia, xe);
	if (!ret && xe->ini->state == INI_READY)
		ret = conn_ini_ready(ia, xe);
	pthread_mutex_unlock(&x->lock);
	ofx_dbg("xrc conn %p: tgt refused, again over a fresh ini qp: %s", (void *)xe,
		ret ? strerror(-ret) : "sent");
	if (ret)
		conn_fail_tell(xe);
	return true;
}

/*
 * Owner lock held.  We refused the TGT of the peer's CONFIRM or BIND: the
 * first time the connection waits for the peer to try once more over a
 * fresh INI QP (conn_retry_ini), the second it fails.
 */
static void conn_tgt_refused(struct ofx_xrc_conn *xe)
{
	if (!xe->tgt_refused) {
		xe->tgt_refused = true;
		return;
	}
	conn_fail(xe);
}

/* Owner lock and xrc->lock held.  Sends CONFIRM (active) or BIND (passive). */
static int conn_ini_ready(struct ofx_ia *ia, struct ofx_xrc_conn *xe)
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
	return ctl_send(x, ia, (struct sockaddr *)&xe->peer_addr, xe->peer_port, &c);
}

/* Owner lock held.  The connection is up in both directions. */
static void conn_established(struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);

	xe->state = XC_CONNECTED;
	xe->established = true;
	atomic_store(&xe->can_send, true);
	pthread_mutex_lock(&x->lock);
	x->stats.conn_xrc++;
	pthread_mutex_unlock(&x->lock);
	ofx_dbg("xrc conn %p srq 0x%x <-> 0x%x connected", (void *)xe, xe->srqn, xe->peer_srqn);
	xe->ops->established(xe->owner, xe->active);
}

struct xrc_zero_wait {
	struct ofx_xrc_conn *xe;
	_Atomic int *count;
	const char *what;
};

static bool xrc_count_is_zero(void *arg)
{
	const struct xrc_zero_wait *z = arg;

	return atomic_load(z->count) == 0;
}

static void xrc_zero_report(void *arg, unsigned int waited_s)
{
	const struct xrc_zero_wait *z = arg;

	ofx_warn("xrc conn %p: %d %s still running after %u s", (void *)z->xe,
		 atomic_load(z->count), z->what, waited_s);
}

/*
 * Until `count` is 0: posts of the consumer's other threads (inflight, with
 * can_send cleared) or control and completion handlers (busy), each short.
 * A stuck one is reported every few seconds.
 */
static void xrc_wait_zero(struct ofx_xrc_conn *xe, _Atomic int *count, const char *what)
{
	struct xrc_zero_wait z = { .xe = xe, .count = count, .what = what };

	ofx_waiter_wait_reporting(&xe->quiet, xrc_count_is_zero, &z, xrc_zero_report);
}

static void fence_wait_end(struct ofx_xrc_conn *xe);

/*
 * Owner lock held.  Releases SRQ, INI and TGT references of the connection;
 * the SRQ and INI QP are destroyed by the next reap (conn_reap), once the
 * caller holds no lock.
 */
static void conn_release(struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);
	struct ofx_xrc_tgtqp *gone = NULL;

	ofx_lock_assert_held(xe->lock);
	atomic_store(&xe->can_send, false);
	xrc_wait_zero(xe, &xe->inflight, "posts in flight");
	fence_wait_end(xe);
	if (xe->established)
		xrc_srq_retire(xe);
	else
		xrc_srq_close(xe);
	pthread_mutex_lock(&x->lock);
	ini_put(x, xe);
	/* a TGT this IA created also stays while its INI QP exists */
	if (xe->tgt && --xe->tgt->refs == 0 && (!xe->tgt->created || !xe->tgt->ini_open)) {
		gone = xe->tgt;
		tgt_unlink(x, gone);
	}
	xe->tgt = NULL;
	ofx_list_del(&xe->link);
	pthread_mutex_unlock(&x->lock);
	/* its async events' handler takes xrc->lock, not the owner's */
	tgt_free(gone);
	xe->state = XC_CLOSED;
}

/* How a connection ended, for its owner (ofx_xrc_owner_ops). */
enum xrc_end { XRC_END_FAILED, XRC_END_DISCONNECTED, XRC_END_BROKEN };

/*
 * Owner lock held.  Tells the owner how the connection ended; only the
 * first end is reported to its consumer (`report`), a later one moves its
 * state alone.
 */
static void conn_report(struct ofx_xrc_conn *xe, enum xrc_end end, bool async)
{
	bool report = !xe->event_posted;

	xe->event_posted = true;
	switch (end) {
	case XRC_END_FAILED:
		xe->ops->failed(xe->owner, xe->active, report);
		break;
	case XRC_END_DISCONNECTED:
		xe->ops->disconnected(xe->owner, report);
		break;
	case XRC_END_BROKEN:
		xe->ops->broken(xe->owner, report, async);
		break;
	}
}

/* Owner lock held.  The connection failed before it was established. */
static void conn_fail(struct ofx_xrc_conn *xe)
{
	ofx_dbg("xrc conn %p failed in %s", (void *)xe, xrc_conn_names[xe->state]);
	conn_release(xe);
	conn_report(xe, XRC_END_FAILED, false);
}

/*
 * Owner lock held.  Sends the connection's DISC (`aux`: XRC_DISC_NO_FENCE or
 * 0) unless the peer is gone or was never known; 0 or a negative errno.
 */
static int disc_send(struct ofx_xrc_conn *xe, uint32_t aux)
{
	struct ofx_ia *ia = xe->ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c = {
		.op = OFX_XRC_OP_DISC,
		.conn_id = xe->conn_id,
		.srqn_from = xe->srqn,
		.srqn_to = xe->peer_srqn,
		.tag = x->tag,
		.port = x->port,
		.aux = aux,
	};

	if (xe->peer_gone || !xe->peer_port)
		return -ENOTCONN;
	return ctl_send(x, ia, (struct sockaddr *)&xe->peer_addr, xe->peer_port, &c);
}

/*
 * Owner lock held.  A failure the peer cannot see (our INI QP could not be
 * made or connected): it has taken the offer and waits for our CONFIRM or
 * BIND, so a DISC tells it to fail its side too, unless it is gone.
 */
static void conn_fail_tell(struct ofx_xrc_conn *xe)
{
	disc_send(xe, 0);
	conn_fail(xe);
}

static void conn_after_fence(struct ofx_xrc_conn *xe);

/*
 * Progress thread, at the fence's deadline: it did not complete within
 * cm_timeout_ms, and the connection goes on without it (its INI QP is then
 * stuck or dead, which the send error reports).  It may yet complete, so
 * the teardown keeps the owner's memory (fence_abandoned).  conn_unlock
 * wakes a conn_wait.
 */
static void fence_expired(void *arg)
{
	struct ofx_xrc_conn *xe = arg;

	conn_lock(xe);
	if (xe->state == XC_FENCE && !xe->fence_done) {
		ofx_warn("xrc conn %p: fence not completed by its deadline (cm_timeout_ms)",
			 (void *)xe);
		xe->fence_abandoned = true;
		xe->fence_done = true;
		conn_after_fence(xe);
	}
	conn_unlock(xe);
	conn_reap(xe, false);
}

/*
 * Owner lock held, before the fence is posted.  Nobody may be polling the
 * request EVD (the consumer waits for DISCONNECTED on another EVD), so the
 * progress thread watches its completion channel: the fence's completion
 * wakes it, and its drain reaches fence_notify through the fence's cookie
 * ops.  The timer is the deadline only.  Without a watch (no request EVD,
 * or no channel) the deadline still ends the fence.
 */
static void fence_wait_start(struct ofx_xrc_conn *xe)
{
	struct ofx_ia *ia = xe->ia;

	if (xe->params.req_evd && !ofx_evd_watch_channel(xe->params.req_evd))
		xe->fence_watch = true;
	ofx_progress_timer_arm(ia->progress, &xe->fence_timer, ia->cfg.cm_timeout_ms * 1000ull,
			       fence_expired, xe);
}

/* Owner lock held.  The fence is over (or the connection is): no watch, no deadline. */
static void fence_wait_end(struct ofx_xrc_conn *xe)
{
	ofx_progress_timer_cancel(xe->ia->progress, &xe->fence_timer);
	if (!xe->fence_watch)
		return;
	xe->fence_watch = false;
	ofx_evd_unwatch_channel(xe->params.req_evd);
}

/*
 * Owner lock held.  Stops sending and posts the fence behind the
 * connection's sends; DISC follows its completion (fence_notify).  Without
 * a ready INI QP there is nothing to fence.
 */
static void conn_stop_sending(struct ofx_xrc_conn *xe)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	atomic_store(&xe->can_send, false);
	xrc_wait_zero(xe, &xe->inflight, "posts in flight");
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
	fence_wait_start(xe);
	ret = ofx_verbs->post_send(xe->ini->qp, &wr, &bad);
	if (ret) {
		ofx_warn("post xrc fence on qp 0x%x: %s", xe->ini->qp->qp_num, strerror(-ret));
		fence_wait_end(xe);
		xe->fence_done = true;
	}
}

/*
 * Owner lock held.  After the fence: DISC, and the end once the peer's
 * came.  A peer told not to fence sends none back: the teardown that
 * told it does not wait (conn_wait), and releases the connection itself
 * once its owner's completions are no longer reported.
 */
static void conn_after_fence(struct ofx_xrc_conn *xe)
{
	fence_wait_end(xe);
	xe->state = XC_DISC_SENT;
	if (!xe->peer_gone && disc_send(xe, xe->no_wait ? XRC_DISC_NO_FENCE : 0))
		xe->peer_gone = true; /* no way to reach the peer */
	if (xe->peer_disc || xe->peer_gone) {
		conn_release(xe);
		conn_report(xe, XRC_END_DISCONNECTED, false);
	} else {
		xe->ops->disconnecting(xe->owner);
	}
}

/* Owner lock held.  Ends a connection not yet established: DISC, no fence. */
static void conn_abort(struct ofx_xrc_conn *xe)
{
	xe->fence_done = true;
	conn_after_fence(xe);
	if (xe->state != XC_CLOSED) {
		/* the peer may not know the connection yet: do not wait for its DISC */
		xe->peer_gone = true;
		conn_release(xe);
	}
	conn_report(xe, XRC_END_DISCONNECTED, false);
}

/* The peer's DISC sent after its fence: we may also tell it we are done. */
static void conn_fence_and_disc(struct ofx_xrc_conn *xe)
{
	conn_stop_sending(xe);
	if (xe->fence_done)
		conn_after_fence(xe);
}

/* ---- connection steps (the owner's transport hooks call these) ----------- */

int ofx_xrc_conn_offer(struct ofx_xrc_conn *xe, const struct ofx_xrc_conn_params *params,
		       const void *pdata, int pdata_len, void *req, int req_len)
{
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_XRC };
	int n, ret;

	/* the offer is the base trailer alone: every size RC sends with one */
	if (pdata_len > XRC_REQ_AREA - OFX_PDATA_HDR_LEN || !ofx_xrc_conn_fits(xe, params))
		return 0;
	xrc_srq_close(xe); /* an earlier offer whose connect never started */
	xe->params = *params;
	ret = xrc_srq_open(xe);
	if (ret)
		return ret;
	n = ofx_pdata_encode(&hdr, pdata, pdata_len, XRC_REQ_AREA, req, (size_t)req_len);
	if (n < 0) {
		xrc_srq_close(xe);
		return n;
	}
	xe->active = true;
	xe->state = XC_OFFERED;
	xe->event_posted = xe->established = false;
	xe->ini_retried = xe->tgt_refused = false;
	return n;
}

bool ofx_xrc_conn_offered(const struct ofx_xrc_conn *xe)
{
	return xe->state == XC_OFFERED;
}

/*
 * The REQ's QP number must not be one that a connection of the peer's
 * node holds from our device (the IB CM's stale-connection check, xrc.h
 * step 1).  An SRQ number may be: SRQs and QPs are numbered apart on
 * mlx5 and mlx4.  A QP number of a QP we own is not: the device gives it
 * to no other QP while ours lives, and this one is named by no other REQ
 * or REP.  A TGT is the cheapest QP (no queues, no CQ, no PD).
 */
int ofx_xrc_conn_req_qpn(struct ofx_xrc_conn *xe, uint32_t *qpn_p)
{
	struct ofx_ia *ia = xe->ia;
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrc_of(ia)->xrcd,
	};
	int ret;

	/* a route resolved again (ADDR_ERROR or ROUTE_ERROR retried) keeps it */
	if (!xe->req_qp) {
		errno = 0;
		xe->req_qp = ofx_verbs->create_qp_ex(ia->verbs, &init);
		if (!xe->req_qp) {
			const char *why;

			ret = ofx_verbs_create_failed(&why);
			ofx_err("create the qp an xrc req names: %s", why);
			return ret;
		}
	}
	*qpn_p = xe->req_qp->qp_num;
	return 0;
}

void ofx_xrc_conn_fallback(struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);

	xrc_srq_close(xe);
	xe->state = XC_RC;
	pthread_mutex_lock(&x->lock);
	x->stats.conn_rc++;
	pthread_mutex_unlock(&x->lock);
}

void ofx_xrc_count_rc(struct ofx_ia *ia)
{
	struct ofx_xrc_ia *x = xrc_of(ia);

	pthread_mutex_lock(&x->lock);
	x->stats.conn_rc++;
	pthread_mutex_unlock(&x->lock);
}

bool ofx_xrc_conn_answered(struct ofx_xrc_conn *xe, int status, const void *data, int len,
			   const void **accept_p, int *accept_len_p)
{
	const uint8_t *d = data;
	struct ofx_pdata_hdr hdr;

	int more = 0;

	if (xe->state != XC_OFFERED || status != OFX_REJ_CONSUMER || !d ||
	    len < XRC_ACC_HDR + OFX_PDATA_XRC_HDR_LEN || d[6] != XRC_VERSION ||
	    ofx_pdata_decode(d + XRC_ACC_HDR, len - XRC_ACC_HDR, &hdr) ||
	    (hdr.flags & (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY)) !=
		    (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY))
		return false;
	if (d[7] & XRC_ACC_F_MORE)
		more = get16(d + 12) - hdr.consumer_len;
	if (more < 0 || more > XRC_ACC_TAIL || (more && hdr.consumer_len != OFX_XRC_ACCEPT_REJ))
		return false;
	xe->acc_tail_len = more;
	xe->peer_port = get16(d + 4);
	xe->peer_tag = get32(d + 8);
	xe->peer_srqn = hdr.xrc_srqn & XRC_SRQN_MASK;
	xe->peer_srqn_known = true;
	/* the peer's CM let go of the REQ's QP number when it sent this REJ */
	req_qp_close(xe);
	*accept_p = d + XRC_ACC_HDR;
	*accept_len_p = hdr.consumer_len;
	return true;
}

void ofx_xrc_conn_confirm(struct ofx_xrc_conn *xe, const struct ofx_xrc_conn_params *params,
			  const struct sockaddr_storage *peer, int err)
{
	struct ofx_ia *ia = xe->ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	int ret = err;

	xe->params = *params;
	xe->peer_addr = *peer;
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
		conn_fail_tell(xe);
}

int ofx_xrc_conn_accept_begin(struct ofx_xrc_conn *xe, const struct ofx_xrc_conn_params *params,
			      const struct sockaddr_storage *peer)
{
	int ret;

	xe->params = *params;
	ret = xrc_srq_open(xe);
	if (ret) {
		xe->state = XC_IDLE;
		return ret;
	}
	xe->active = false;
	xe->event_posted = xe->established = false;
	xe->ini_retried = xe->tgt_refused = false;
	xe->peer_srqn = 0;	/* A names it in its CONFIRM (step 3) */
	xe->peer_srqn_known = false;
	xe->peer_addr = *peer;
	return 0;
}

int ofx_xrc_conn_accept_answer(struct ofx_xrc_conn *xe, const void *pdata, int pdata_len,
			       void *rej_buf, int rej_len)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY };
	int part = pdata_len > OFX_XRC_ACCEPT_REJ ? OFX_XRC_ACCEPT_REJ : pdata_len;
	uint8_t *rej = rej_buf;
	int n;

	if (rej_len < XRC_REJ_AREA || pdata_len > OFX_XRC_ACCEPT_MAX)
		return -EINVAL;
	memset(rej, 0, XRC_REJ_AREA);
	put32(rej, OFX_REJ_HDR);
	put16(rej + 4, x->port);
	rej[6] = XRC_VERSION;
	put32(rej + 8, x->tag);
	/* what the REJ cannot take follows our CONFIRM-ACK (xrc.h step 2) */
	xe->acc_tail_len = pdata_len - part;
	if (xe->acc_tail_len) {
		rej[7] = XRC_ACC_F_MORE;
		put16(rej + 12, (uint16_t)pdata_len);
		memcpy(xe->acc_tail, (const uint8_t *)pdata + part, (size_t)xe->acc_tail_len);
	}
	hdr.xrc_srqn = (xe->srqn & XRC_SRQN_MASK) | (x->tag & 0xffu) << 24;
	n = ofx_pdata_encode(&hdr, pdata, part, XRC_REJ_AREA - XRC_ACC_HDR,
			     rej + XRC_ACC_HDR, XRC_REJ_AREA - XRC_ACC_HDR);
	if (n < 0)
		return n;
	pthread_mutex_lock(&x->lock);
	ofx_list_add_tail(&x->eps, &xe->link);
	xe->state = XC_P_CONFIRM_WAIT;
	pthread_mutex_unlock(&x->lock);
	return XRC_ACC_HDR + n;
}

void ofx_xrc_conn_accept_abort(struct ofx_xrc_conn *xe)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);

	pthread_mutex_lock(&x->lock);
	if (!ofx_list_empty(&xe->link))
		ofx_list_del(&xe->link);
	pthread_mutex_unlock(&x->lock);
	xrc_srq_close(xe);
	xe->state = XC_IDLE;
}

bool ofx_xrc_conn_is_xrc(const struct ofx_xrc_conn *xe)
{
	return xe->state != XC_IDLE && xe->state != XC_RC && xe->state != XC_OFFERED;
}

void ofx_xrc_conn_disconnect(struct ofx_xrc_conn *xe)
{
	switch (xe->state) {
	case XC_CONNECTED:
		xe->ops->disconnecting(xe->owner);
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
}

/* ---- control message handling ------------------------------------------ */

/* Moves a new TGT QP to RTR towards INI QP `ini_qpn` (the model carrier). */
static int tgt_qp_ready(struct ofx_ia *ia, struct ibv_qp *qp, uint32_t ini_qpn)
{
	int ret = xrc_qp_to_rtr(ia, qp, ini_qpn, true);

	if (ret)
		ofx_err("tgt qp 0x%x for ini qp 0x%x: %s", qp->qp_num, ini_qpn, strerror(ret));
	else
		ofx_xrc_log_qp("tgt", qp);
	return -ret;
}

/*
 * No lock held.  The listener side of an INI connection: a TGT QP for the
 * sender.  One that cannot reach RTR is refused, not answered: it would
 * discard whatever the INI QP sends (the sender's retries run out) and
 * break every EP that the INI QP took meanwhile.
 */
static void ctl_on_ini(struct ofx_ia *ia, const struct xrc_ctl *c, struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x->xrcd,
	};
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
	t->qpn = t->qp->qp_num;
	/* a device carrier moves it with the connection's attributes */
	if (!x->tp->drives_qps && tgt_qp_ready(ia, t->qp, c->srqn_from)) {
		tgt_free(t);
		return;
	}
	t->created = true;
	t->ini_open = true;
	t->ini_qpn = c->srqn_from;
	t->ini_tag = c->tag;
	pthread_mutex_lock(&x->lock);
	ofx_list_add_tail(&x->tgts, &t->link);
	x->stats.tgt_created++;
	x->stats.tgt_handles++;
	pthread_mutex_unlock(&x->lock);
	a->tgt = t->qpn;
	a->verdict = XRC_V_OK;
}

/*
 * The sender destroyed the INI QP a TGT of ours was made for: the creator's
 * handle goes, and the TGT with it unless an EP still holds it (2a) or
 * another process has it open (the kernel keeps it for that handle).
 */
static void ctl_on_ini_close(struct ofx_xrc_ia *x, const struct xrc_ctl *c)
{
	struct ofx_list gone, *pos, *tmp;

	/*
	 * Every TGT made for that INI QP: a request tried again (its answer
	 * lost, or our accept failed) made one per try, and only the one
	 * answered last is the INI-CLOSE's tgt.
	 */
	ofx_list_init(&gone);
	pthread_mutex_lock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &x->tgts) {
		struct ofx_xrc_tgtqp *t = container_of(pos, struct ofx_xrc_tgtqp, link);

		if (!t->created || !t->ini_open || t->ini_qpn != c->srqn_from ||
		    t->ini_tag != c->tag)
			continue;
		t->ini_open = false;
		if (t->refs == 0) {
			tgt_unlink(x, t);
			ofx_list_add_tail(&gone, &t->link);
		}
	}
	pthread_mutex_unlock(&x->lock);
	ofx_list_for_each_safe(pos, tmp, &gone) {
		struct ofx_xrc_tgtqp *t = container_of(pos, struct ofx_xrc_tgtqp, link);

		ofx_dbg("tgt qp 0x%x: its ini qp 0x%x is gone", t->qpn, c->srqn_from);
		ofx_list_del(pos);
		tgt_free(t);
	}
}

/* Owner lock held (P): the active side's CONFIRM. */
static void ctl_on_confirm(struct ofx_ia *ia, struct ofx_xrc_conn *xe, const struct xrc_ctl *c,
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
		conn_tgt_refused(xe);
		return;
	}
	xe->conn_id = c->conn_id;
	xe->peer_srqn = c->srqn_from;
	xe->peer_srqn_known = true;
	xe->peer_tag = c->tag;
	xe->peer_port = c->port;
	xe->state = XC_P_INI_WAIT;
	ret = ini_get(ia, xe);
	if (!ret && xe->ini->state == INI_READY)
		ret = conn_ini_ready(ia, xe);
	/*
	 * No INI QP (or BIND) for the way back: A must not wait for our BIND,
	 * but its TGT is fine: its INI QP, shared with its other EPs, lives on.
	 */
	if (ret)
		a->verdict = XRC_V_FAILED;
	pthread_mutex_unlock(&x->lock);
	if (ret)
		conn_fail(xe);
}

/* Owner lock held (A): the passive side's BIND. */
static void ctl_on_bind(struct ofx_ia *ia, struct ofx_xrc_conn *xe, const struct xrc_ctl *c,
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
		conn_tgt_refused(xe);
		return;
	}
	xe->bound = true;
	if (xe->ack_ok)
		conn_established(xe);
}

/*
 * Owner lock held: the DISC of a peer whose SRQ is gone or going without
 * waiting for ours (its connection broke; its owner is going and nothing
 * delivers our DISC to it meanwhile).  No fence goes to that SRQ (a send
 * naming a destroyed SRQ would move our INI QP, and every EP on it, to
 * error) and no DISC is awaited.
 */
static void ctl_on_disc_no_fence(struct ofx_xrc_conn *xe)
{
	xe->peer_disc = xe->peer_gone = true;
	switch (xe->state) {
	case XC_CONNECTED:
	case XC_FENCE:
	case XC_DISC_SENT:
		conn_release(xe);
		conn_report(xe, XRC_END_DISCONNECTED, false);
		break;
	case XC_CLOSED:
		break;
	default:
		conn_fail(xe);
		break;
	}
}

/* Owner lock held: the peer's DISC. */
static void ctl_on_disc(struct ofx_xrc_conn *xe)
{
	xe->peer_disc = true;
	switch (xe->state) {
	case XC_CONNECTED:
		conn_report(xe, XRC_END_DISCONNECTED, false);
		conn_fence_and_disc(xe);
		break;
	case XC_DISC_SENT:
		conn_release(xe);
		conn_report(xe, XRC_END_DISCONNECTED, false);
		break;
	case XC_FENCE:
		break; /* DISC goes after our fence; then we are done */
	case XC_CLOSED:
		break;
	default:
		conn_fail(xe);
		break;
	}
}

int ofx_xrc_ctl_request(struct ofx_ia *ia, const struct sockaddr *src, const uint8_t *req,
			uint8_t *answer)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c, a = { 0 };
	struct ofx_xrc_conn *xe;
	int len = OFX_XRC_CTL_LEN;

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
		ctl_on_ini(ia, &c, &a);
		ctl_encode(&a, answer);
		return OFX_XRC_CTL_LEN;
	}
	if (c.op == OFX_XRC_OP_INI_CLOSE) {
		ctl_on_ini_close(x, &c);
		a.verdict = XRC_V_OK;
		ctl_encode(&a, answer);
		return OFX_XRC_CTL_LEN;
	}
	pthread_mutex_lock(&x->lock);
	xe = ep_find(x, c.srqn_to, c.srqn_from);
	if (xe)
		atomic_fetch_add(&xe->busy, 1);
	pthread_mutex_unlock(&x->lock);
	if (!xe) {
		a.status = XRC_S_UNKNOWN;
		ctl_encode(&a, answer);
		return OFX_XRC_CTL_LEN;
	}
	conn_lock(xe);
	switch (c.op) {
	case OFX_XRC_OP_CONFIRM:
		ctl_on_confirm(ia, xe, &c, &a);
		/* the accept data the REJ answer could not take (step 2) */
		if (a.verdict == XRC_V_OK && xe->acc_tail_len) {
			memcpy(answer + OFX_XRC_CTL_LEN, xe->acc_tail, (size_t)xe->acc_tail_len);
			len += xe->acc_tail_len;
		}
		break;
	case OFX_XRC_OP_BIND:
		ctl_on_bind(ia, xe, &c, &a);
		break;
	case OFX_XRC_OP_DISC:
		if (c.aux & XRC_DISC_NO_FENCE)
			ctl_on_disc_no_fence(xe);
		else
			ctl_on_disc(xe);
		break;
	default:
		a.status = XRC_S_UNKNOWN;
		break;
	}
	conn_unlock(xe);
	conn_reap(xe, true);
	ofx_waiter_count_put(&xe->quiet, &xe->busy);
	ctl_encode(&a, answer);
	return len;
}

/* The answer to our INI request: the INI QP is READY (or DEAD). */
static void ctl_ini_answered(struct ofx_ia *ia, const struct xrc_ctl *c, const struct xrc_ctl *a)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_conn **wake;
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
	ok = a && a->verdict == XRC_V_OK && (x->tp->drives_qps || !ini_qp_ready(ia, ini, a->tgt));
	ini->state = ok ? INI_READY : INI_DEAD;
	ini->unanswered = !a;
	if (ok)
		ofx_xrc_log_qp("ini", ini->qp);
	else
		ofx_warn("ini qp 0x%x to port %u: %s", ini->qp->qp_num, ini->port,
			 a ? "refused" : "no answer");
	wake = calloc(ini->refs ? ini->refs : 1, sizeof(*wake));
	ofx_list_for_each_safe(pos, tmp, &ini->eps) {
		struct ofx_xrc_conn *xe = container_of(pos, struct ofx_xrc_conn, ini_link);

		if (wake && n < ini->refs) {
			atomic_fetch_add(&xe->busy, 1);
			wake[n++] = xe;
		}
	}
	pthread_mutex_unlock(&x->lock);
	if (!wake)
		ofx_err("no memory to wake the eps of ini qp 0x%x", ini->qp->qp_num);

	for (int i = 0; i < n; i++) {
		struct ofx_xrc_conn *xe = wake[i];
		int ret = ok ? 0 : -ECONNREFUSED;

		conn_lock(xe);
		if (xe->state == XC_A_INI_WAIT || xe->state == XC_P_INI_WAIT) {
			if (ok) {
				pthread_mutex_lock(&x->lock);
				ret = conn_ini_ready(ia, xe);
				pthread_mutex_unlock(&x->lock);
			}
			/* an INI request without answer: its peer is gone */
			if (!a)
				xe->peer_gone = true;
			if (ret && ok)
				conn_fail(xe);
			else if (ret)
				conn_fail_tell(xe);
		}
		conn_unlock(xe);
		conn_reap(xe, true);
		ofx_waiter_count_put(&xe->quiet, &xe->busy);
	}
	free(wake);
}

void ofx_xrc_ctl_answer(struct ofx_ia *ia, const uint8_t *req, const uint8_t *answer, int len)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct xrc_ctl c, a;
	struct ofx_xrc_conn *xe;
	bool have = answer && len >= OFX_XRC_CTL_LEN && !ctl_decode(answer, &a);

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
	if (c.op == OFX_XRC_OP_INI_CLOSE)
		return; /* nothing waits for it; its numbers name no EP */
	pthread_mutex_lock(&x->lock);
	xe = ep_find(x, c.srqn_from, c.srqn_to);
	if (xe)
		atomic_fetch_add(&xe->busy, 1);
	pthread_mutex_unlock(&x->lock);
	if (!xe)
		return;
	conn_lock(xe);
	switch (c.op) {
	case OFX_XRC_OP_CONFIRM:
		if (xe->state != XC_A_CONFIRM_SENT)
			break;
		if (have && a.status == XRC_S_OK && a.verdict == XRC_V_REFUSED) {
			ini_refused(x, xe);
			if (!conn_retry_ini(xe))
				conn_fail(xe);
			break;
		}
		if (!have || a.status != XRC_S_OK || a.verdict != XRC_V_OK) {
			conn_fail(xe);
			break;
		}
		if (xe->acc_tail_len) {
			if (len < OFX_XRC_CTL_LEN + xe->acc_tail_len) {
				ofx_warn("xrc conn %p: confirm-ack without the %d bytes of accept "
					 "data announced", (void *)xe, xe->acc_tail_len);
				conn_fail_tell(xe);
				break;
			}
			xe->ops->accept_more(xe->owner, answer + OFX_XRC_CTL_LEN,
					     xe->acc_tail_len);
			xe->acc_tail_len = 0;
		}
		xe->ack_ok = true;
		if (xe->bound)
			conn_established(xe);
		break;
	case OFX_XRC_OP_BIND:
		if (xe->state != XC_P_BIND_SENT)
			break;
		if (have && a.status == XRC_S_OK && a.verdict == XRC_V_REFUSED) {
			ini_refused(x, xe);
			if (!conn_retry_ini(xe))
				conn_fail(xe);
		} else if (!have || a.status != XRC_S_OK || a.verdict != XRC_V_OK) {
			conn_fail(xe);
		} else {
			conn_established(xe);
		}
		break;
	case OFX_XRC_OP_DISC:
		/* no answer: the peer is presumed gone */
		if (!have || a.status != XRC_S_OK)
			ctl_on_disc(xe);
		break;
	default:
		break;
	}
	conn_unlock(xe);
	conn_reap(xe, true);
	ofx_waiter_count_put(&xe->quiet, &xe->busy);
}

/* ---- teardown ------------------------------------------------------------- */

static bool conn_pending(const struct ofx_xrc_conn *xe)
{
	return xe->state == XC_A_INI_WAIT || xe->state == XC_A_CONFIRM_SENT ||
	       xe->state == XC_P_CONFIRM_WAIT || xe->state == XC_P_INI_WAIT ||
	       xe->state == XC_P_BIND_SENT;
}

struct conn_wait_arg {
	struct ofx_xrc_conn *xe;
	unsigned int gen;
};

static bool conn_changed(void *arg)
{
	const struct conn_wait_arg *w = arg;

	return atomic_load(&w->xe->gen) != w->gen;
}

/* Owner lock not held.  The fence is not (or no longer) awaited. */
static bool fence_settled(void *arg)
{
	struct ofx_xrc_conn *xe = arg;
	bool settled;

	conn_lock(xe);
	settled = xe->state != XC_FENCE || xe->fence_done;
	pthread_mutex_unlock(xe->lock);
	return settled;
}

/*
 * Owner lock not held.  Waits (at most cm_timeout_ms) for the fence and,
 * with `peer` and a progress thread to deliver it, the peer's DISC.  False
 * if the fence did not complete.  Nothing is polled here: the fence's
 * completion reaches fence_notify from whoever drains the request EVD (its
 * consumer, or the progress thread woken by the EVD's completion channel:
 * fence_wait_start), the peer's DISC comes through the carrier, and each
 * handler wakes this wait when it has changed the connection (conn_unlock).
 * With no progress thread (ia_close after it stopped, unit models) this
 * thread waits on the request EVD's completion channel itself.
 */
static bool conn_wait(struct ofx_xrc_conn *xe, bool peer, uint64_t deadline)
{
	struct ofx_ia *ia = xe->ia;
	struct conn_wait_arg w = { .xe = xe };

	for (;;) {
		bool fence_wait, peer_wait;

		conn_lock(xe);
		fence_wait = xe->state == XC_FENCE && !xe->fence_done;
		/* only a progress thread can deliver the peer's DISC meanwhile */
		peer_wait = peer && xe->state == XC_DISC_SENT && !xe->peer_disc &&
			    !xe->peer_gone && ia->progress;
		w.gen = atomic_load(&xe->gen);
		pthread_mutex_unlock(xe->lock);
		if (!fence_wait && !peer_wait)
			return true;
		if (ofx_now_ns() > deadline) {
			ofx_dbg("xrc conn %p teardown: %s not done within %u ms", (void *)xe,
				fence_wait ? "fence" : "peer disc", ia->cfg.cm_timeout_ms);
			return !fence_wait;
		}
		/* no progress thread drains the request CQ: its completion events wake us */
		if (!ia->progress && fence_wait && xe->params.req_evd &&
		    !ofx_evd_wait_cq(xe->params.req_evd, fence_settled, xe, deadline))
			continue;
		ofx_waiter_wait(&xe->quiet, conn_changed, &w, deadline);
	}
}

/* When a teardown or quiesce starting now stops waiting. */
static uint64_t conn_deadline(const struct ofx_ia *ia)
{
	return ofx_now_ns() + ia->cfg.cm_timeout_ms * 1000000ull;
}

void ofx_xrc_conn_quiesce(struct ofx_xrc_conn *xe)
{
	conn_wait(xe, false, conn_deadline(xe->ia));
	conn_reap(xe, true);
}

/*
 * Owner lock not held.  The first half of a teardown: the fence and DISC
 * of a connected connection, the DISC of a pending one.
 */
static void conn_close_begin(struct ofx_xrc_conn *xe)
{
	conn_lock(xe);
	xe->event_posted = true; /* the owner is going: no more events */
	xe->no_wait = !xe->ia->progress;
	if (xe->state == XC_CONNECTED)
		conn_fence_and_disc(xe);
	else if (conn_pending(xe))
		conn_abort(xe);
	conn_unlock(xe);
}

/*
 * Owner lock not held.  The second half: waits for the fence and the
 * peer's DISC until `deadline`, then releases what is left.  False if the
 * fence was given up on, now or by an earlier teardown (ia_close's).
 */
static bool conn_close_end(struct ofx_xrc_conn *xe, uint64_t deadline)
{
	bool clean = conn_wait(xe, true, deadline);

	conn_lock(xe);
	if (!clean)
		xe->fence_abandoned = true;
	if (xe->state != XC_CLOSED && xe->state != XC_IDLE && xe->state != XC_RC &&
	    xe->state != XC_OFFERED) {
		conn_release(xe);
	} else if (xe->srq) {
		xrc_srq_close(xe);
	}
	clean = !xe->fence_abandoned;
	conn_unlock(xe);
	return clean;
}

bool ofx_xrc_conn_close(struct ofx_xrc_conn *xe)
{
	conn_close_begin(xe);
	return conn_close_end(xe, conn_deadline(xe->ia));
}

/* xrc->lock held.  The connections that exist, each with a busy count; NULL without memory. */
static struct ofx_xrc_conn **conns_hold(struct ofx_xrc_ia *x, int *n_p)
{
	struct ofx_xrc_conn **conns;
	struct ofx_list *pos, *tmp;
	int n = 0;

	ofx_list_for_each_safe(pos, tmp, &x->eps)
		n++;
	*n_p = 0;
	conns = calloc(n ? n : 1, sizeof(*conns));
	if (!conns)
		return NULL;
	ofx_list_for_each_safe(pos, tmp, &x->eps) {
		struct ofx_xrc_conn *xe = container_of(pos, struct ofx_xrc_conn, link);

		atomic_fetch_add(&xe->busy, 1);
		conns[(*n_p)++] = xe;
	}
	return conns;
}

/*
 * ia_close, before the progress thread stops: every connection ends as
 * ep_free would end it, all fenced and told at once and then awaited
 * together (one cm_timeout_ms), while the progress thread still delivers
 * the peers' DISCs.  Torn down after the thread stopped, an EP could not
 * wait for its peer's DISC: its SRQ would go while the peer may still
 * send or fence to it, which kills the peer's INI QP and every EP on it.
 */
void ofx_xrc_ia_quiesce(struct ofx_ia *ia)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_conn **conns;
	uint64_t deadline;
	int n;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	conns = conns_hold(x, &n);
	pthread_mutex_unlock(&x->lock);
	if (!conns) {
		/* each EP's teardown ends its connection, telling its peer not to fence */
		ofx_warn("xrc: no memory to end the connections before the progress thread stops");
		return;
	}
	for (int i = 0; i < n; i++)
		conn_close_begin(conns[i]);
	deadline = conn_deadline(ia);
	/* their SRQs are reaped by each EP's teardown, its completions no longer reported */
	for (int i = 0; i < n; i++) {
		conn_close_end(conns[i], deadline);
		ofx_waiter_count_put(&conns[i]->quiet, &conns[i]->busy);
	}
	free(conns);
	/*
	 * The INI QPs they held go now, so that INI-CLOSE tells each peer
	 * while the progress thread can still carry it: after the thread
	 * stopped it would not get there, and the TGT the peer made for the
	 * INI QP would stay until the peer closes.
	 */
	xrc_reap(ia, true);
}

bool ofx_xrc_conn_forget(struct ofx_xrc_conn *xe)
{
	struct ofx_ia *ia = xe->ia;
	struct ofx_xrc_ia *x = xrc_of(ia);
	bool clean;

	atomic_store(&xe->dying, true);
	conn_reap(xe, true);
	clean = !xe->old_srq;
	/* handlers that found the connection before it left the table */
	pthread_mutex_lock(&x->lock);
	if (!ofx_list_empty(&xe->link))
		ofx_list_del(&xe->link);
	pthread_mutex_unlock(&x->lock);
	xrc_wait_zero(xe, &xe->busy, "handlers");
	/* a fence_expired that found the connection before its timer was cancelled */
	ofx_progress_barrier(ia->progress);
	return clean;
}

void ofx_xrc_conn_free(struct ofx_xrc_conn *xe)
{
	if (!xe)
		return;
	srq_drop_retired(xe);
	ofx_waiter_fini(&xe->quiet);
	free(xe);
}

int ofx_xrc_conn_reset(struct ofx_xrc_conn *xe)
{
	/* an offer that ended without an answer (timeout, reject) */
	if (xe->state == XC_OFFERED)
		xrc_srq_close(xe);
	else if (xe->state != XC_IDLE && xe->state != XC_CLOSED && xe->state != XC_RC)
		return -EBUSY;
	xe->state = XC_IDLE;
	xe->ack_ok = xe->bound = xe->peer_disc = xe->peer_gone = xe->fence_done = false;
	xe->no_wait = false;
	xe->event_posted = false;
	xe->peer_srqn = xe->peer_tag = 0;
	xe->peer_srqn_known = false;
	return 0;
}

/* ---- data path ------------------------------------------------------------ */

/*
 * A post is done with the INI QP.  Decrement first, then look at can_send:
 * a stopper clears can_send before it tests inflight, so either it sees
 * this decrement or this sees can_send cleared and wakes it.  The posting
 * thread owns the connection's owner, so nothing frees it meanwhile.
 */
static void xrc_inflight_put(struct ofx_xrc_conn *xe)
{
	if (atomic_fetch_sub(&xe->inflight, 1) == 1 && !atomic_load(&xe->can_send))
		ofx_waiter_wake(&xe->quiet);
}

struct ibv_qp *ofx_xrc_conn_sq_begin(struct ofx_xrc_conn *xe, struct ibv_send_wr *wr,
				     struct ibv_qp *rc_qp)
{
	if (xe->state == XC_RC || xe->state == XC_IDLE)
		return rc_qp;
	atomic_fetch_add(&xe->inflight, 1);
	if (!atomic_load(&xe->can_send)) {
		xrc_inflight_put(xe);
		return NULL;
	}
	wr->qp_type.xrc.remote_srqn = xe->peer_srqn;
	/* the INI QP may grant less inline data than the owner's RC QP */
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    ((struct ofx_cookie *)(uintptr_t)wr->wr_id)->len > xe->ini->cap.max_inline_data)
		wr->send_flags &= ~IBV_SEND_INLINE;
	return xe->ini->qp;
}

void ofx_xrc_conn_sq_end(struct ofx_xrc_conn *xe, struct ibv_qp *qp, struct ibv_qp *rc_qp)
{
	if (qp != rc_qp)
		xrc_inflight_put(xe);
}

int ofx_xrc_conn_post_recv(struct ofx_xrc_conn *xe, struct ibv_recv_wr *wr, struct ibv_qp *rc_qp)
{
	struct ibv_recv_wr *bad;
	int ret;

	if (!xe->srq && !rc_qp) {
		/* receives go live only once one of them exists */
		ofx_err("xrc conn %p: receive with neither an srq nor a qp", (void *)xe);
		return -ENOTCONN;
	}
	if (!xe->srq)
		ret = ofx_verbs->post_recv(rc_qp, wr, &bad);
	else
		ret = ofx_verbs->post_srq_recv(xe->srq, wr, &bad);
	if (ret)
		ofx_warn("post recv on %s 0x%x: %s", xe->srq ? "xrc srq" : "qp",
			 xe->srq ? xe->srqn : rc_qp->qp_num, strerror(-ret));
	return ret;
}

/*
 * xrc->lock held.  The INI QP is dead (never bound again): returns its EPs,
 * each with a busy count for eps_break, in an array to free; NULL without
 * memory.
 */
static struct ofx_xrc_conn **ini_kill(struct ofx_xrc_ini *ini, int *n_p)
{
	struct ofx_xrc_conn **eps = calloc(ini->refs > 0 ? ini->refs : 1, sizeof(*eps));
	struct ofx_list *pos, *tmp;
	int n = 0;

	ini->state = INI_DEAD;
	*n_p = 0;
	if (!eps)
		return NULL;
	ofx_list_for_each_safe(pos, tmp, &ini->eps) {
		struct ofx_xrc_conn *o = container_of(pos, struct ofx_xrc_conn, ini_link);

		if (n < ini->refs) {
			atomic_fetch_add(&o->busy, 1);
			eps[n++] = o;
		}
	}
	*n_p = n;
	return eps;
}

/*
 * No lock held.  Each connection is BROKEN; `async`: a device event said
 * so, which the owner passes on (as for an RC QP).
 */
static void eps_break(struct ofx_xrc_conn **eps, int n, bool async)
{
	struct ofx_ia *ia = n ? eps[0]->ia : NULL;

	for (int i = 0; i < n; i++) {
		struct ofx_xrc_conn *o = eps[i];

		conn_lock(o);
		if (o->state != XC_CLOSED && o->state != XC_IDLE && o->state != XC_RC) {
			/*
			 * Best effort: the peer ends its side and fences nothing
			 * to our SRQ; we do not wait for it (nothing can be
			 * ordered behind a dead INI QP).
			 */
			disc_send(o, XRC_DISC_NO_FENCE);
			o->peer_gone = true;
			conn_release(o);
			conn_report(o, XRC_END_BROKEN, async);
		}
		conn_unlock(o);
		srq_reap(o);
		ofx_waiter_count_put(&o->quiet, &o->busy);
	}
	/* the flushes of the INI QP reach every owner before it goes */
	if (ia)
		xrc_reap(ia, false);
}

/*
 * xrc->lock held.  The INI QP a send completion came from.  Not the
 * connection's: it may have ended before its error was polled (the peer's
 * broken DISC came first) while other EPs still sit on the dead QP.
 */
static struct ofx_xrc_ini *ini_of_qpn(struct ofx_xrc_ia *x, uint32_t qpn)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &x->inis) {
		struct ofx_xrc_ini *ini = container_of(pos, struct ofx_xrc_ini, link);

		if (ini->qp->qp_num == qpn)
			return ini;
	}
	return NULL;
}

/* A completion in error on the connection's queues (not the fence's success). */
static void conn_error(struct ofx_xrc_conn *xe, const struct ibv_wc *wc, bool is_recv)
{
	struct ofx_xrc_ia *x = xrc_of(xe->ia);
	struct ofx_xrc_conn *one[1], **broken = NULL;
	struct ofx_xrc_ini *ini;
	int n = 0;

	/* a receive error concerns this connection only; a send error kills the INI QP */
	pthread_mutex_lock(&x->lock);
	ini = is_recv ? NULL : ini_of_qpn(x, wc->qp_num);
	if (ini)
		broken = ini_kill(ini, &n); /* NULL without memory: only this one is told */
	if (!broken) {
		broken = one;
		atomic_fetch_add(&xe->busy, 1);
		broken[0] = xe;
		n = 1;
	}
	pthread_mutex_unlock(&x->lock);
	ofx_warn("xrc %s error %s on srq 0x%x: %d ep(s) broken", is_recv ? "recv" : "send",
		 ibv_wc_status_str(wc->status), xe->srqn, n);
	eps_break(broken, n, false);
	if (broken != one)
		free(broken);
}

bool ofx_xrc_conn_completion(struct ofx_xrc_conn *xe, const struct ibv_wc *wc, bool is_recv)
{
	if (xe->state == XC_RC || xe->state == XC_IDLE)
		return false;
	if (!ofx_wc_failed(wc))
		return true;
	conn_error(xe, wc, is_recv);
	return true;
}

/* ---- the fence: this module's own work request (dto.h) -------------------- */

/* Never a DTO event; every completion reaches fence_notify unless forgotten. */
static bool fence_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
			   const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
			   struct ofx_cookie_owner **notify_p)
{
	struct ofx_xrc_conn *xe = container_of(owner, struct ofx_xrc_conn, fence_owner);

	(void)slot, (void)c, (void)wc, (void)ev;
	if (!atomic_load(&xe->dying))
		*notify_p = owner;
	return false;
}

/*
 * The fence is done (a flush too: the QP went to error, no send is left):
 * DISC follows, and a conn_wait hears of it.  An error breaks the INI QP.
 */
static void fence_notify(struct ofx_cookie_owner *owner, const struct ibv_wc *wc)
{
	struct ofx_xrc_conn *xe = container_of(owner, struct ofx_xrc_conn, fence_owner);

	if (xe->state == XC_RC || xe->state == XC_IDLE)
		return;
	if (ofx_wc_failed(wc)) {
		conn_error(xe, wc, false);
		return;
	}
	conn_lock(xe);
	if (xe->state == XC_FENCE) {
		xe->fence_done = true;
		conn_after_fence(xe);
	}
	conn_unlock(xe);
	conn_reap(xe, false);
}

static void fence_peer_invalidated(struct ofx_cookie_owner *owner, uint32_t rkey)
{
	(void)owner, (void)rkey; /* a write: never a receive */
}

static const struct ofx_cookie_ops fence_ops = {
	.complete = fence_complete,
	.notify = fence_notify,
	.peer_invalidated = fence_peer_invalidated,
};

static void fence_owner_init(struct ofx_xrc_conn *xe)
{
	xe->fence_owner.ops = &fence_ops;
	xe->fence.ring = NULL;
	xe->fence.owner = &xe->fence_owner;
	xe->fence.op = 0;
	xe->fence.flags = OFX_COOKIE_F_OWNER | OFX_COOKIE_F_INTERNAL;
}

/* ---- device events ------------------------------------------------------ */

/* xrc->lock held.  The INI QP or TGT handle of this IA that `qp` is, if any. */
static struct ofx_xrc_ini *ini_of_qp(struct ofx_xrc_ia *x, const struct ibv_qp *qp,
				     bool *tgt_p)
{
	struct ofx_list *pos, *tmp;

	*tgt_p = false;
	ofx_list_for_each_safe(pos, tmp, &x->inis) {
		struct ofx_xrc_ini *ini = container_of(pos, struct ofx_xrc_ini, link);

		if (ini->qp == qp)
			return ini;
	}
	ofx_list_for_each_safe(pos, tmp, &x->tgts)
		if (container_of(pos, struct ofx_xrc_tgtqp, link)->qp == qp)
			*tgt_p = true;
	return NULL;
}

bool ofx_xrc_owns_qp(struct ofx_ia *ia, const struct ibv_qp *qp)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	bool tgt, owned;

	if (!x)
		return false;
	pthread_mutex_lock(&x->lock);
	owned = ini_of_qp(x, qp, &tgt) || tgt;
	pthread_mutex_unlock(&x->lock);
	return owned;
}

bool ofx_xrc_qp_event(struct ofx_ia *ia, const struct ibv_async_event *ev)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ibv_qp *qp = ev->element.qp;
	struct ofx_xrc_conn **broken = NULL;
	struct ofx_xrc_ini *ini;
	bool tgt;
	int n = 0;

	if (!x)
		return false;
	pthread_mutex_lock(&x->lock);
	ini = ini_of_qp(x, qp, &tgt);
	if (!ini) {
		pthread_mutex_unlock(&x->lock);
		/* a TGT's errors show at its senders; its SRQs report their own */
		if (tgt)
			ofx_dbg("%s on xrc tgt qp 0x%x", ibv_event_type_str(ev->event_type),
				qp->qp_num);
		return tgt;
	}
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* the QP is in error: its flushes alone would not tell the EPs */
		broken = ini_kill(ini, &n);
		break;
	default:
		/* LAST_WQE_REACHED, SQ_DRAINED, COMM_EST: nothing for a QP with no RQ */
		break;
	}
	pthread_mutex_unlock(&x->lock);
	if (broken)
		ofx_warn("%s on xrc ini qp 0x%x: %d ep(s) broken",
			 ibv_event_type_str(ev->event_type), qp->qp_num, n);
	else
		ofx_dbg("%s on xrc ini qp 0x%x", ibv_event_type_str(ev->event_type), qp->qp_num);
	eps_break(broken, n, true);
	free(broken);
	return true;
}

/* xrc->lock held.  The connection whose current SRQ `srq` is, if any. */
static struct ofx_xrc_conn *conn_of_srq(struct ofx_xrc_ia *x, const struct ibv_srq *srq)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &x->eps) {
		struct ofx_xrc_conn *o = container_of(pos, struct ofx_xrc_conn, link);

		if (o->srq == srq)
			return o;
	}
	return NULL;
}

bool ofx_xrc_owns_srq(struct ofx_ia *ia, const struct ibv_srq *srq)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	bool owned;

	if (!x)
		return false;
	pthread_mutex_lock(&x->lock);
	owned = conn_of_srq(x, srq) != NULL;
	pthread_mutex_unlock(&x->lock);
	return owned;
}

bool ofx_xrc_srq_event(struct ofx_ia *ia, const struct ibv_async_event *ev)
{
	struct ofx_xrc_ia *x = xrc_of(ia);
	struct ofx_xrc_conn *xe;

	if (!x)
		return false;
	pthread_mutex_lock(&x->lock);
	xe = conn_of_srq(x, ev->element.srq);
	if (xe)
		atomic_fetch_add(&xe->busy, 1);
	pthread_mutex_unlock(&x->lock);
	if (!xe)
		return false;
	/*
	 * Its receives are lost, and a peer sending to it would take its own
	 * shared INI QP to error: the peer is told as for a receive error.
	 */
	ofx_warn("%s on xrc srq 0x%x: its ep is broken", ibv_event_type_str(ev->event_type),
		 xe->srqn);
	eps_break(&xe, 1, true);
	return true;
}
