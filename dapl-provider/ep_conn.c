/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * EP connection state: the one writer of ep->state and poster of DAT
 * connection events (ep_conn.h).
 */
#include <assert.h>
#include "ep_conn.h"
#include "evd.h"
#include "ia_core.h"
#include "lock.h"
#include "log.h"
#include "progress.h"
#include "ep_recv.h"
#include "verbs.h"

#define TO(s) (1u << OFX_EP_##s)

/*
 * moves[from]: the states `from` may move to.  Staying is always allowed
 * (a repeated DISC, a reset of an idle EP).  Teardown is not in the table:
 * it ends any state.  Why each move exists:
 *   UNCONNECTED       connect / common connect, reserve by an RSP, accept
 *                     (plain and XRC), reset of a DISCONNECTED EP ends here
 *   RESERVED          the RSP's request arrives; the RSP is freed
 *   PASSIVE_PENDING   accepted; rejected; its CR could not be posted
 *   TENTATIVE_PENDING accepted; rejected
 *   ACTIVE_PENDING    REP (CONNECTED); XRC answer or CSP peer's REQ taken
 *                     (COMPLETION_PENDING); failed; could not start
 *   COMPLETION_PENDING ESTABLISHED (CONNECTED, or RTR_WAIT under p2p);
 *                     XRC: DISC before the fence; accept not sent
 *   RTR_WAIT          the RTR came; failed or disconnected
 *   CONNECTED         disconnect asked or arrived, broken
 *   DISCONNECT_PENDING the DREP or the bounded wait's end
 *   DISCONNECTED      dat_ep_reset
 */
static const unsigned int moves[] = {
	[OFX_EP_UNCONNECTED] = TO(ACTIVE_PENDING) | TO(RESERVED) | TO(COMPLETION_PENDING) |
			       TO(DISCONNECTED),
	[OFX_EP_RESERVED] = TO(PASSIVE_PENDING) | TO(UNCONNECTED),
	[OFX_EP_PASSIVE_PENDING] = TO(COMPLETION_PENDING) | TO(UNCONNECTED) | TO(RESERVED) |
				   TO(DISCONNECTED),
	[OFX_EP_TENTATIVE_PENDING] = TO(COMPLETION_PENDING) | TO(UNCONNECTED) |
				     TO(DISCONNECTED),
	[OFX_EP_ACTIVE_PENDING] = TO(CONNECTED) | TO(COMPLETION_PENDING) | TO(DISCONNECTED) |
				  TO(UNCONNECTED),
	[OFX_EP_COMPLETION_PENDING] = TO(CONNECTED) | TO(RTR_WAIT) | TO(DISCONNECT_PENDING) |
				      TO(DISCONNECTED) | TO(UNCONNECTED),
	[OFX_EP_RTR_WAIT] = TO(CONNECTED) | TO(DISCONNECTED),
	[OFX_EP_CONNECTED] = TO(DISCONNECT_PENDING) | TO(DISCONNECTED),
	[OFX_EP_DISCONNECT_PENDING] = TO(DISCONNECTED),
	[OFX_EP_DISCONNECTED] = TO(UNCONNECTED),
};

#define OFX_EP_NSTATES (sizeof(moves) / sizeof(moves[0]))

bool ofx_ep_conn_move_allowed(enum ofx_ep_state from, enum ofx_ep_state to)
{
	if ((unsigned int)from >= OFX_EP_NSTATES || (unsigned int)to >= OFX_EP_NSTATES)
		return false;
	return from == to || (moves[from] & (1u << to));
}

static bool state_may_send(enum ofx_ep_state state)
{
	return state == OFX_EP_CONNECTED || state == OFX_EP_DISCONNECT_PENDING ||
	       state == OFX_EP_DISCONNECTED;
}

static void set_state(struct ofx_ep *ep, enum ofx_ep_state to)
{
	ep->state = to;
	atomic_store_explicit(&ep->may_send, state_may_send(to), memory_order_release);
}

void ofx_ep_conn_init(struct ofx_ep *ep, enum ofx_ep_state initial)
{
	set_state(ep, initial);
}

/*
 * The log lines of a move, out of line: with them inline, the saves their
 * calls need cost every move more than the move itself.
 */
static __attribute__((noinline, cold)) void move_log(const struct ofx_ep *ep,
						     enum ofx_ep_state to, bool allowed)
{
	if (!allowed) {
		ofx_err("ep %p: no move from %s to %s (provider bug)", (void *)ep,
			ofx_ep_state_str(ep->state), ofx_ep_state_str(to));
#ifdef OFX_DEBUG
		assert(!"EP state move outside the table");
#endif
	}
	ofx_dbg("ep %p: %s -> %s", (void *)ep, ofx_ep_state_str(ep->state),
		ofx_ep_state_str(to));
}

void ofx_ep_conn_move(struct ofx_ep *ep, enum ofx_ep_state to)
{
	bool allowed;

	ofx_lock_assert_held(&ep->lock);
	if (ep->state == to)
		return;
	allowed = ofx_ep_conn_move_allowed(ep->state, to);
	if (ofx_unlikely(!allowed || ofx_log_enabled(OFX_LOG_DEBUG, OFX_LOG_SUBSYS)))
		move_log(ep, to, allowed);
	set_state(ep, to);
}

void ofx_ep_conn_rtr_wait_end_slow(struct ofx_ep *ep)
{
	ofx_lock_assert_held(&ep->lock);
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->rtr_timer);
	if (!ep->rtr_watch)
		return;
	ep->rtr_watch = false;
	ofx_evd_unwatch_channel(ep->recv_evd);
}

void ofx_ep_conn_report(struct ofx_ep *ep, enum ofx_ep_state to, DAT_EVENT_NUMBER num,
			bool with_pdata)
{
	/* connected or over: no RTR is awaited any more */
	if (to == OFX_EP_CONNECTED || to == OFX_EP_DISCONNECTED)
		ofx_ep_conn_rtr_wait_end(ep);
	ofx_ep_conn_move(ep, to);
	ep->recv->conn_event(ep, num);
	if (!ep->conn_evd) {
		ofx_warn("ep %p has no connection evd for event 0x%x", (void *)ep, num);
		return;
	}
	ofx_evd_post_conn(ep->conn_evd, num, ep, with_pdata ? ep->pdata_len : 0,
			  with_pdata && ep->pdata_len ? ep->pdata : NULL);
}

void ofx_ep_conn_broken(struct ofx_ep *ep, const char *why)
{
	ofx_warn("ep %p qp 0x%x: %s: connection broken", (void *)ep,
		 ep->qp ? ep->qp->qp_num : 0, why);
	ep->pdata_len = 0;
	/* the peer learns of it through the DREQ; our queues flush with the QP */
	if (ep->cm_id)
		ofx_verbs->disconnect(ep->cm_id);
	ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_BROKEN, false);
}

void ofx_ep_conn_teardown(struct ofx_ep *ep)
{
	ofx_lock_assert_held(&ep->lock);
	ofx_ep_conn_rtr_wait_end(ep);
	set_state(ep, OFX_EP_DISCONNECTED);
}

static __attribute__((noinline, cold)) void established_log(const struct ofx_ep *ep)
{
	ofx_dbg("ep %p qp 0x%x rtr received: established", (void *)ep, ep->qp->qp_num);
}

void ofx_ep_conn_p2p_maybe_established(struct ofx_ep *ep)
{
	if (ep->state != OFX_EP_RTR_WAIT || !ep->rtr_arrived || !ep->cm_established)
		return;
	if (ofx_unlikely(ofx_log_enabled(OFX_LOG_DEBUG, OFX_LOG_SUBSYS)))
		established_log(ep);
	/* a common-connect EP reports the initiator's data on this side too */
	ofx_ep_conn_report(ep, OFX_EP_CONNECTED, DAT_CONNECTION_EVENT_ESTABLISHED,
			   ep->csp != NULL);
	/* the peer hung up after its RTR (ep_cm.c, QP flushed): that connection is over */
	if (ep->rtr_peer_gone) {
		ep->pdata_len = 0;
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_DISCONNECTED,
				   false);
	}
}
