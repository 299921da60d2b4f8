/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_CONN_H
#define OFX_EP_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <dat2/udat.h>
#include "ep.h"
#include "lock.h"

/*
 * The EP connection state machine.  This module is the only writer of
 * ep->state (test/arch/check-arch enforces it) and the only poster of DAT
 * connection events; the CM, the SPs, the CSP and the XRC transport ask it
 * to move.  Every move is checked against one transition table (ep_conn.c):
 * a move the table does not hold is a provider bug, logged as an error and
 * fatal in debug builds.  All calls but init and may_send need ep->lock.
 *
 * The data path reads no state: it reads may_send, published with release
 * order on every move.
 */

/* At allocation, before the EP is visible: UNCONNECTED or TENTATIVE_PENDING. */
void ofx_ep_conn_init(struct ofx_ep *ep, enum ofx_ep_state initial);

/* A move without a DAT event (connect started, reserved, accepted, reset...). */
void ofx_ep_conn_move(struct ofx_ep *ep, enum ofx_ep_state to);

/*
 * A move and the DAT connection event `num` on the EP's connection EVD, with
 * the private data saved in ep->pdata when with_pdata.  An SRQ EP's receive
 * accounting hears of it first (srq.c).
 */
void ofx_ep_conn_report(struct ofx_ep *ep, enum ofx_ep_state to, DAT_EVENT_NUMBER num,
			bool with_pdata);

/*
 * The connection failed under the consumer (completion error, watermark,
 * missing RTR): DISCONNECTED, the peer is told (rdma_disconnect) and the
 * consumer gets DAT_CONNECTION_EVENT_BROKEN.  `why` goes to the log.
 */
void ofx_ep_conn_broken(struct ofx_ep *ep, const char *why);

/* ep_free / ia_close: DISCONNECTED from any state, no event. */
void ofx_ep_conn_teardown(struct ofx_ep *ep);

/*
 * A passive SEND-RTR EP waits for the peer's RTR (ep_cm.c starts it at the
 * rdma_cm ESTABLISHED: a look into the CQ from the CM handler, then
 * ofx_evd_watch_channel and rtr_timer if the RTR is not in yet).  Ends it: the timer and
 * the watch go.  Every move out of the pending states calls it (report,
 * teardown); so do reset and disconnect.  Idempotent; EP lock held.
 */
void ofx_ep_conn_rtr_wait_end_slow(struct ofx_ep *ep);

/*
 * Inline: a connection calls it four times or so (report ESTABLISHED and
 * DISCONNECTED, release, teardown) and nearly always finds no RTR wait to
 * end (no timer armed, no watch), which is then a load of each and no call.
 */
static inline void ofx_ep_conn_rtr_wait_end(struct ofx_ep *ep)
{
	ofx_lock_assert_held(&ep->lock);
	if (atomic_load_explicit(&ep->rtr_timer.armed, memory_order_acquire) || ep->rtr_watch)
		ofx_ep_conn_rtr_wait_end_slow(ep);
}

/*
 * A passive p2p EP becomes CONNECTED once both rdma_cm's ESTABLISHED and
 * the peer's RTR have arrived, in either order; each arrival calls this.
 * If the peer hung up meanwhile (ep->rtr_peer_gone), DISCONNECTED follows.
 */
void ofx_ep_conn_p2p_maybe_established(struct ofx_ep *ep);

/* Whether `from` -> `to` is in the table (for tests and assertions). */
bool ofx_ep_conn_move_allowed(enum ofx_ep_state from, enum ofx_ep_state to);

/*
 * Data path: a post may go to the QP.  DISCONNECTED counts: the post goes
 * to the error-state QP and flushes, as DAT wants.
 */
static inline bool ofx_ep_conn_may_send(const struct ofx_ep *ep)
{
	return atomic_load_explicit(&ep->may_send, memory_order_acquire);
}

#endif
