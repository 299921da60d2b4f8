/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_H
#define OFX_EP_H

#include <stdbool.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "obj.h"
#include "cm.h"
#include "dto.h"
#include "config.h"
#include "progress.h"
#include "verbs.h"
#include "wait.h"

struct ofx_ia;
struct ofx_pz;
struct ofx_evd;
struct ofx_srq;
struct ofx_sp;
struct ofx_cr;
struct ofx_xrc_conn;
struct ofx_ep_recv;
struct ofx_lastwqe;

/*
 * Internal EP states and the DAT state each one reports.  RTR_WAIT is a
 * passive p2p EP whose connection is up but whose peer's ready-to-receive
 * has not arrived yet; the consumer sees COMPLETION_PENDING.
 */
#define OFX_EP_STATES(X)                                               \
	X(UNCONNECTED, DAT_EP_STATE_UNCONNECTED)                       \
	X(RESERVED, DAT_EP_STATE_RESERVED)                             \
	X(PASSIVE_PENDING, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING)    \
	X(TENTATIVE_PENDING, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING) \
	X(ACTIVE_PENDING, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)      \
	X(COMPLETION_PENDING, DAT_EP_STATE_COMPLETION_PENDING)         \
	X(RTR_WAIT, DAT_EP_STATE_COMPLETION_PENDING)                   \
	X(CONNECTED, DAT_EP_STATE_CONNECTED)                           \
	X(DISCONNECT_PENDING, DAT_EP_STATE_DISCONNECT_PENDING)         \
	X(DISCONNECTED, DAT_EP_STATE_DISCONNECTED)

enum ofx_ep_state {
#define OFX_EP_STATE_ENUM(name, dat) OFX_EP_##name,
	OFX_EP_STATES(OFX_EP_STATE_ENUM)
#undef OFX_EP_STATE_ENUM
};

const char *ofx_ep_state_str(enum ofx_ep_state state);
DAT_EP_STATE ofx_ep_state_dat(enum ofx_ep_state state);

#define OFX_PDATA_COPY_MAX 256

/* An SRQ EP's wait for IBV_EVENT_QP_LAST_WQE_REACHED (srq.h, ep_srq.c). */
enum ofx_ep_lastwqe {
	OFX_LASTWQE_IDLE = 0,	/* connection up (or never made) */
	OFX_LASTWQE_WAITING,	/* QP in error, waiting for the event (timer armed) */
	OFX_LASTWQE_DONE,	/* event seen or synthesized for this connection */
};

struct ofx_ep {
	struct ofx_obj obj;

	/*
	 * Guards state, cm_id, cr, timers and the connection fields below.
	 * Order: sp->lock, then ep->lock, then evd->lock.  Never held across
	 * a blocking wait.
	 */
	pthread_mutex_t lock;
	/* written by ep_conn.c alone (ep_conn.h); may_send mirrors it for the data path */
	enum ofx_ep_state state;
	_Atomic bool may_send;
	DAT_EP_ATTR attr;

	struct ofx_pz *pz;
	struct ofx_evd *recv_evd, *req_evd, *conn_evd;
	/*
	 * Where receives come from (ep_recv.h), chosen at create: the EP's
	 * own queue, or `srq` (srq.h), the SRQ of dat_ep_create_with_srq.
	 * Only the SRQ variant and the data path's one predicted branch read
	 * srq (test/arch/check-arch).
	 */
	const struct ofx_ep_recv *recv;
	struct ofx_srq *srq;
	struct ofx_xrc_conn *xrc;	/* XRC-backed EP (ep_xrc.h); fixed at create */
	/* RC or XRC connection steps (ep_transport.h); set with the QP */
	const struct ofx_ep_transport *transport;
	/*
	 * SRQ EP: LAST_WQE_REACHED tracking (ep_recv.h), made with the EP by
	 * the SRQ variant's init; NULL for any other EP, which has no use
	 * for it (memory per EP: README, "Speed").
	 */
	struct ofx_lastwqe *lastwqe;

	/*
	 * The RC QP.  Created with the EP when it has a PZ, else at connect or
	 * accept (ofx_ep_attach); NULL while unattached.  An XRC-backed EP has
	 * one only for a connection that runs over RC (ep_transport.h,
	 * qp_per_connection): NULL otherwise.  Not bound to the cm_id.
	 */
	struct ibv_qp *qp;
	/* qp's data-path posts, resolved with it (verbs.h, ofx_ep_set_qp) */
	ofx_verbs_post_send_fn qp_post_send;
	ofx_verbs_post_recv_fn qp_post_recv;
	struct rdma_cm_id *cm_id;	/* the connection's id, NULL when idle */
	struct ofx_cm_handler cm_handler; /* cm_id's context: the EP's handler (ep_cm.c) */
	struct ofx_cr *cr;		/* passive: the request being accepted */
	struct ofx_sp *rsp;		/* RSP that reserved this EP */
	/* made for a DAT_PSP_PROVIDER_FLAG request: freed if it is rejected */
	bool provider_created;

	struct ofx_cookie_ring send_ring;	/* data path: no lock */
	struct ofx_cookie_ring recv_ring;
	/* the rings' owner: the EP's completion ops (ep.c), `dying` for dto.c */
	struct ofx_cookie_owner cookie_owner;
	unsigned int max_inline;
	/*
	 * Receives are held in recv_ring (with their segments copied to
	 * recv_sges) while the QP cannot take them (RESET state before connect
	 * or accept) and posted in order once it reaches INIT; on a passive
	 * p2p EP the RTR receive goes first.  recv_live flips under `lock`.
	 * Made by the first post_recv that keeps a receive (an RC EP whose
	 * receives all go live never needs it), before that slot is committed.
	 */
	struct ibv_sge *recv_sges;	/* max_recv_iov per recv slot, or NULL */
	_Atomic bool recv_live;

	struct sockaddr_storage remote_addr;
	DAT_CONN_QUAL remote_qual;
	DAT_CONN_QUAL local_qual;
	unsigned int cm_retries;	/* address/route retries used */
	/*
	 * The consumer's data a connection attempt keeps: the REQ's for
	 * rdma_connect (dat_ep_connect, and the initiator of a common
	 * connect), or the REP's of a common connect's waiting side (csp.c),
	 * which sends no REQ.  One buffer: an attempt needs only one of them.
	 */
	union {
		unsigned char req_pdata[OFX_PDATA_COPY_MAX];
		unsigned char csp_pdata[OFX_PDATA_COPY_MAX];
	};
	int req_pdata_len;
	struct ofx_timer conn_timer;	/* connect timeout */
	struct ofx_timer disc_timer;	/* bounded wait for the peer's DREP */

	/* last connection event's private data; events point here */
	unsigned char pdata[OFX_PDATA_COPY_MAX];
	DAT_COUNT pdata_len;

	/* peer-to-peer RTR negotiation */
	enum ofx_tristate p2p_attr;	/* per-EP "P2P" provider-specific attr */
	bool p2p;			/* negotiated for the current connection */
	enum ofx_rtr_type rtr;
	struct ofx_cookie rtr_cookie;	/* the RTR send or recv (ofx_ep_rtr_cookie) */
	bool rtr_arrived;		/* passive: the peer's RTR completed */
	bool cm_established;		/* passive: rdma_cm reported ESTABLISHED */
	bool rtr_peer_gone;		/* passive: DISCONNECTED came in RTR_WAIT (ep_cm.c) */
	/*
	 * passive: a drain took the RTR's completion (ep_cookie_complete,
	 * under the EVD lock), its notify may not have run: rtr_timer_run
	 * then leaves the outcome to it.  Cleared as the RTR receive is posted.
	 */
	_Atomic bool rtr_polled;
	/*
	 * passive: the RTR wait's deadline, or its look after a hang-up;
	 * active: the next nudge after the RTR (ep_cm.c rtr_nudge_run)
	 */
	struct ofx_timer rtr_timer;
	uint64_t rtr_deadline_ns;	/* of this connection's wait (a stale timer sees a later one) */
	bool rtr_watch;			/* passive: ofx_evd_watch_channel of recv_evd held */
	uint8_t rtr_nudges;		/* active: nudges this connection has sent */
	/*
	 * active: the nudges' work requests (not the RTR's cookie: a nudge
	 * that fails is the provider's, ofx_ep_fatal_was_nudge), and whether
	 * one failed (set by the drain that took its completion)
	 */
	struct ofx_cookie nudge_cookie;
	_Atomic bool nudge_failed;

	/*
	 * Teardown: once `dying` is set the EP's completions are retired but
	 * not reported (see ep_purge_completions in ep.c).  Written with
	 * ofx_ep_set_dying (the rings keep a copy).
	 */
	_Atomic bool dying;

	/* DAT 2.0 common connect (csp.c); csp and csp_link guarded by csp->lock */
	struct ofx_sp *csp;		/* local CSP while in ep_common_connect */
	struct ofx_list csp_link;	/* in csp->csp_eps while csp is set */
	bool csp_initiator;		/* this side sends the REQ (see csp.h) */
	bool csp_no_listener;		/* last attempt found no CSP at the peer */
	/*
	 * How the initiator's attempts ended, for the log line of a common
	 * connect that gives up: a refusal by the peer's CSP (no EP waiting
	 * yet) and nobody listening look alike to the consumer.
	 */
	struct ofx_csp_tally {
		unsigned int attempts, csp_refused, no_listener, other;
		int last_status;
		/* CLOCK_MONOTONIC, as the other ranks' logs: when each kind was last seen */
		uint64_t first_ns, csp_refused_ns, no_listener_ns, other_ns;
	} csp_tally;
	struct ofx_timer csp_retry_timer;
	uint16_t csp_port;		/* the CSP's port, named in the REQ trailer */
	/*
	 * Set by csp.c with csp, never cleared: takes the EP off its CSP's
	 * waiting list (ep_free, ep_reset; no EP lock held).
	 */
	void (*csp_detach)(struct ofx_ep *ep);
	int csp_pdata_len;		/* of csp_pdata (with req_pdata above) */

	/* dat_ep_set_watermark values, DAT_WATERMARK_INFINITE when unset or spent */
	DAT_COUNT soft_hw, hard_hw;	/* under lock */
	_Atomic bool wm_armed;		/* either is set: post_recv checks them */

};
OFX_DEFINE_FROM_HANDLE(ep, EP)

/* Sets the RC QP (NULL: none) and resolves its data-path posts (verbs.h). */
void ofx_ep_set_qp(struct ofx_ep *ep, struct ibv_qp *qp);

DAT_RETURN ofx_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
			 DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd,
			 const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p);
DAT_RETURN ofx_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
				  DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd,
				  DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr,
				  DAT_EP_HANDLE *ep_p);
DAT_RETURN ofx_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param);
DAT_RETURN ofx_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param);
DAT_RETURN ofx_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
			  DAT_TIMEOUT timeout, DAT_COUNT pdata_len, const DAT_PVOID pdata,
			  DAT_QOS qos, DAT_CONNECT_FLAGS flags);
DAT_RETURN ofx_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
			      DAT_COUNT pdata_len, const DAT_PVOID pdata, DAT_QOS qos);
DAT_RETURN ofx_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags);
DAT_RETURN ofx_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
DAT_RETURN ofx_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
DAT_RETURN ofx_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr,
				 DAT_COMPLETION_FLAGS flags);
DAT_RETURN ofx_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr,
				  DAT_COMPLETION_FLAGS flags);
DAT_RETURN ofx_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state, DAT_BOOLEAN *in_idle,
			     DAT_BOOLEAN *out_idle);
DAT_RETURN ofx_ep_free(DAT_EP_HANDLE ep);
DAT_RETURN ofx_ep_reset(DAT_EP_HANDLE ep);

/*
 * DAT 2.0 remote invalidation (contract 2).  send_with_invalidate posts
 * IBV_WR_SEND_WITH_INV when invalidate is true (a plain send otherwise);
 * DAT_MODEL_NOT_SUPPORTED on a device without IBV_DEVICE_MEM_MGT_EXTENSIONS.
 * rdma_read_to_rmr is always DAT_MODEL_NOT_SUPPORTED (see ep.c).
 */
DAT_RETURN ofx_ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
					    DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT rmr_context);
DAT_RETURN ofx_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local,
					DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
					DAT_COMPLETION_FLAGS flags);

/*
 * dat_rmr_bind (rmr.h): a bind is a post on the EP's send queue, so the
 * call is the EP's; the window's half is rmr.c's.  Only
 * DAT_COMPLETION_SUPPRESS_FLAG and DAT_COMPLETION_BARRIER_FENCE_FLAG are
 * accepted as completion flags; the EP must be connected (not over XRC) and
 * its request EVD carry DAT_EVD_RMR_BIND_FLAG.
 */
DAT_RETURN ofx_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *iov,
			DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep,
			DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			DAT_RMR_CONTEXT *rctx_p);

/*
 * Receive bookkeeping (DAT 2.0 dat_ep_recv_query / dat_ep_set_watermark,
 * contract 7.1).  A plain EP reports the receives it has posted and not yet
 * seen complete (the recv ring: posted, or held until the QP goes live) and
 * the sum of their lengths.  For an SRQ EP the provider cannot know: the
 * device takes an SRQ receive for a QP only when a message arrives and the
 * completion is the first the provider hears of it, so both counts are
 * DAT_VALUE_UNKNOWN (the DAT spec lets a provider not support them).
 * set_watermark arms the soft and hard high watermarks against the same
 * count (DAT_WATERMARK_INFINITE clears one): above the soft one a single
 * async event with reason DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT, above the hard
 * one a connected EP breaks (DAT_CONNECTION_EVENT_BROKEN).  An SRQ EP's
 * count being unknowable, its watermarks are stored but never fire.
 */
DAT_RETURN ofx_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs_p, DAT_COUNT *span_p);
DAT_RETURN ofx_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_hw, DAT_COUNT hard_hw);

/*
 * The EP a DAT_PSP_PROVIDER_FLAG PSP hands out with a connection request
 * (contract 3.6): default attributes, no PZ, no EVDs, unattached, in
 * TENTATIVE_CONNECTION_PENDING.  The consumer completes it with
 * dat_ep_modify and accepts with dat_cr_accept(cr, NULL); a reject frees it.
 */
struct ofx_ep *ofx_ep_create_tentative(struct ofx_ia *ia);
/*
 * Creates the QP (and rings, SRQ/XRC membership) of an unattached EP;
 * DAT_INVALID_STATE/EP_PZ without a PZ.  A no-op once attached.  Called by
 * connect and accept with ep->lock held.
 */
DAT_RETURN ofx_ep_attach(struct ofx_ep *ep);

/* ia_close cleanup: abrupt teardown regardless of state. */
void ofx_ep_destroy(struct ofx_ep *ep);
/* ia_close, after every CQ is gone: frees an EP kept on ia->zombies. */
void ofx_ep_free_zombie(struct ofx_obj *obj);

/*
 * Follow-up of a completion that ofx_dto_convert() flagged (the notify op
 * of the EP's cookie owner): RTR arrival on a passive p2p EP (posts
 * ESTABLISHED) or an error completion on a connected EP (moves it to
 * DISCONNECTED and posts BROKEN).  Called without EVD locks.
 */
void ofx_ep_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc);
/*
 * ofx_ep_dto_notify's settling of a completion the transport did not take
 * (ep->lock held), for a caller that polled the EP's own completion itself.
 */
void ofx_ep_dto_settle(struct ofx_ep *ep, const struct ibv_wc *wc);
/* The passive side's RTR came (ep->lock held): counted, and the EP may connect. */
void ofx_ep_rtr_received(struct ofx_ep *ep);

/*
 * A fatal QP error (IBV_EVENT_QP_FATAL) on `ep`: true when the work request
 * that failed was an RTR nudge of the provider's, not the consumer's (the
 * peer's close crossed it).  Drains the EP's request EVD first: the device
 * writes the failed request's completion before it raises the event.
 * From the async event handler, which holds the QP (and so the EP) alive.
 */
bool ofx_ep_fatal_was_nudge(struct ofx_ep *ep);

/*
 * The EP's own work requests (OFX_COOKIE_F_OWNER cookies of its cookie
 * owner, out of the rings): the ready-to-receive message.  Never a DTO
 * event; every completion of one reaches ofx_ep_dto_notify.  (XRC's fence
 * is the XRC transport's own work request, with its own cookie owner.)
 */
enum ofx_ep_cookie_op {
	OFX_EP_OP_RTR_SEND,
	OFX_EP_OP_RTR_RECV,
	OFX_EP_OP_RTR_WRITE,
	OFX_EP_OP_RTR_READ,
	OFX_EP_OP_RTR_NUDGE,	/* the active side's writes after its RTR (ep_cm.c) */
};
/* Makes `ck` one of the EP's own work requests, of kind `op`. */
void ofx_ep_own_cookie(struct ofx_ep *ep, struct ofx_cookie *ck, enum ofx_ep_cookie_op op);
/* Sets up ep->cookie_owner, the owner of the EP's rings (at allocation). */
void ofx_ep_cookie_owner_init(struct ofx_ep *ep);
/* Sets ep->dying and its rings' copies. */
void ofx_ep_set_dying(struct ofx_ep *ep, bool dying);

/* One send-queue work request as the DAT calls and the IB extensions post it. */
struct ofx_sq_post {
	enum ofx_cookie_op op;
	DAT_COUNT n;
	DAT_LMR_TRIPLET *iov;
	DAT_DTO_COOKIE cookie;
	const DAT_RMR_TRIPLET *rmr;
	DAT_COMPLETION_FLAGS flags;
	uint32_t imm;		/* OFX_OP_WRITE_IMM */
	uint64_t compare_add;	/* OFX_OP_CMP_SWAP compare, OFX_OP_FETCH_ADD add */
	uint64_t swap;		/* OFX_OP_CMP_SWAP */
	bool invalidate;	/* OFX_OP_SEND: IBV_WR_SEND_WITH_INV of invalidate_rkey */
	uint32_t invalidate_rkey;
};

/*
 * Posts on the send queue without taking a lock (single poster per EP):
 * checks the state and segment count, reserves a cookie, applies selective
 * signalling and inline.  Returns the DAT status for the caller to pass on.
 */
DAT_RETURN ofx_ep_post_sq(struct ofx_ep *ep, const struct ofx_sq_post *p);

/* Connection-state helpers for ep_cm.c, sp.c and cr.c (ep->lock held). */
int ofx_ep_recv_go_live(struct ofx_ep *ep, bool rtr_recv_first);
void ofx_ep_recv_stop(struct ofx_ep *ep);

/*
 * The RC QP of a transport whose QP lives with one connection
 * (qp_per_connection, ep_transport.h), ep->lock held.  ofx_ep_qp_open
 * creates it for a connection that will run over RC (a no-op if it
 * exists); ofx_ep_qp_close destroys one that never carried a work request
 * (an offer the peer answered over XRC).  dat_ep_reset and ep_free destroy
 * a QP that did carry one, after draining its CQs.
 */
int ofx_ep_qp_open(struct ofx_ep *ep);
/*
 * A new QP for an EP whose QP carried no work request yet (no receive went
 * live): an iWARP connect attempt the peer refused leaves the QP in ERROR.
 * Drops ep->lock meanwhile (the caller checks the state again); -EBUSY when
 * receives are on the old QP.
 */
int ofx_ep_qp_renew_unused(struct ofx_ep *ep);
void ofx_ep_qp_close(struct ofx_ep *ep);

/* For logs: the RC QP's number, 0 when the EP has none (XRC, unattached). */
static inline uint32_t ofx_ep_qp_num(const struct ofx_ep *ep)
{
	return ep->qp ? ep->qp->qp_num : 0;
}
#endif
