/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SRQ receive variant of an EP (ep_recv.h): receives come from a DAT SRQ
 * (srq.h), the EP's QP is created with it and registered in its EP table,
 * and the EP tracks IBV_EVENT_QP_LAST_WQE_REACHED per connection.
 */
#define OFX_LOG_SUBSYS OFX_SUBSYS_EP
#include "ep_recv.h"
#include "ep.h"
#include "evd.h"
#include "ia_core.h"
#include "lock.h"
#include "log.h"
#include "progress.h"
#include "srq.h"
#include "verbs.h"
#include "wait.h"

#include <errno.h>
#include <stdlib.h>

/* ---- LAST_WQE_REACHED (srq.h) ------------------------------------------- */

static void ep_srq_post_lastwqe(struct ofx_ep *ep)
{
	ofx_ia_post_async(ep->obj.ia, DAT_ASYNC_ERROR_EP_BROKEN, (DAT_HANDLE)&ep->obj);
}

static void ep_srq_lastwqe_timeout(void *arg)
{
	struct ofx_ep *ep = arg;
	bool post = false;

	pthread_mutex_lock(&ep->lock);
	if (atomic_load(&ep->lastwqe->state) == OFX_LASTWQE_WAITING && !atomic_load(&ep->dying)) {
		atomic_store(&ep->lastwqe->state, OFX_LASTWQE_DONE);
		post = true;
	}
	pthread_mutex_unlock(&ep->lock);
	ofx_waiter_wake(&ep->lastwqe->wait);
	if (post) {
		ofx_dbg("ep %p qp 0x%x: no last-wqe event within %u ms; reporting it", (void *)ep,
			ep->qp->qp_num, ep->obj.ia->cfg.lastwqe_timeout_ms);
		ep_srq_post_lastwqe(ep);
	}
}

/* A terminal connection event starts the bounded wait for the device's event. */
static void ep_srq_conn_event(struct ofx_ep *ep, DAT_EVENT_NUMBER num)
{
	struct ofx_ia *ia = ep->obj.ia;

	if (num != DAT_CONNECTION_EVENT_DISCONNECTED && num != DAT_CONNECTION_EVENT_BROKEN &&
	    num != DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)
		return;
	/* a QP that never left RESET took nothing from the SRQ */
	if (!atomic_load(&ep->recv_live) || atomic_load(&ep->lastwqe->state) != OFX_LASTWQE_IDLE)
		return;
	atomic_store(&ep->lastwqe->state, OFX_LASTWQE_WAITING);
	ofx_progress_timer_arm(ia->progress, &ep->lastwqe->timer,
			       ia->cfg.lastwqe_timeout_ms * 1000ull, ep_srq_lastwqe_timeout, ep);
}

void ofx_ep_srq_last_wqe(struct ofx_ep *ep)
{
	bool post = false;
	int prev;

	pthread_mutex_lock(&ep->lock);
	prev = atomic_exchange(&ep->lastwqe->state, OFX_LASTWQE_DONE);
	if (prev != OFX_LASTWQE_DONE && !atomic_load(&ep->dying)) {
		ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->lastwqe->timer);
		post = true;
	}
	pthread_mutex_unlock(&ep->lock);
	/* a teardown waiting in ep_srq_quiesce may go on */
	ofx_waiter_wake(&ep->lastwqe->wait);
	ofx_dbg("ep %p qp 0x%x: last wqe reached%s", (void *)ep, ep->qp->qp_num,
		post ? "" : " (already reported or ep being freed)");
	if (post)
		ep_srq_post_lastwqe(ep);
}

/* Normal on an SRQ EP whose QP went to error: reported once per connection, as stock does. */
static bool ep_srq_last_wqe_event(struct ofx_ep *ep)
{
	ofx_ep_srq_last_wqe(ep);
	return true;
}

void ofx_ep_srq_reset(struct ofx_ep *ep)
{
	bool was_waiting = atomic_load(&ep->lastwqe->state) == OFX_LASTWQE_WAITING;

	/* a timer callback blocked on ep->lock finds IDLE and does nothing */
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->lastwqe->timer);
	atomic_store(&ep->lastwqe->state, OFX_LASTWQE_IDLE);
	if (was_waiting)
		ep_srq_post_lastwqe(ep); /* ep->lock, then the async EVD's: in order */
}

bool ofx_ep_srq_lastwqe_pending(const struct ofx_ep *ep)
{
	return atomic_load(&ep->recv_live) && atomic_load(&ep->lastwqe->state) != OFX_LASTWQE_DONE;
}

/* No LAST_WQE async event may name an EP being freed (srq.h); ep->lock held. */
static void ep_srq_teardown(struct ofx_ep *ep)
{
	ofx_lock_assert_held(&ep->lock);
	ofx_ep_set_dying(ep, true);
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->lastwqe->timer);
}

/*
 * An SRQ EP's QP may hold a receive it took from the SRQ.  Once the QP is in
 * error the device says it is done with IBV_EVENT_QP_LAST_WQE_REACHED; some
 * (rxe in Linux 6.1) never send it, so the wait is bounded by
 * cfg.lastwqe_timeout_ms and skipped when no progress thread can deliver
 * the event.  Memory safety does not depend on it: SRQ cookies belong to the
 * SRQ, and completions of an EP that is gone are dropped (srq.h).
 */
static bool ep_lastwqe_seen(void *arg)
{
	return !ofx_ep_srq_lastwqe_pending(arg);
}

static void ep_srq_quiesce(struct ofx_ep *ep)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ofx_ia *ia = ep->obj.ia;

	if (!ia->progress || !ofx_ep_srq_lastwqe_pending(ep))
		return;
	if (ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE))
		ofx_dbg("qp 0x%x to error for teardown: %m", ep->qp->qp_num);
	/* ofx_ep_srq_last_wqe wakes us when the event (or its timeout) marks it done */
	if (ofx_waiter_wait(&ep->lastwqe->wait, ep_lastwqe_seen, ep,
			    ofx_now_ns() + ia->cfg.lastwqe_timeout_ms * 1000000ull))
		ofx_dbg("qp 0x%x: no last-wqe event within %u ms", ep->qp->qp_num,
			ia->cfg.lastwqe_timeout_ms);
}

/* ---- the receive ops ---------------------------------------------------- */

/* The LAST_WQE_REACHED tracking lives apart: no other kind of EP needs it. */
static int ep_srq_init(struct ofx_ep *ep)
{
	ep->lastwqe = calloc(1, sizeof(*ep->lastwqe));
	if (!ep->lastwqe)
		return -ENOMEM;
	atomic_init(&ep->lastwqe->state, OFX_LASTWQE_IDLE);
	ofx_waiter_init(&ep->lastwqe->wait);
	return 0;
}

static void ep_srq_fini(struct ofx_ep *ep)
{
	if (!ep->lastwqe)
		return;
	ofx_waiter_fini(&ep->lastwqe->wait);
	free(ep->lastwqe);
	ep->lastwqe = NULL;
}

/* An SRQ EP's receives live in the SRQ's slots: no recv ring, no CQ room of its own. */
static int ep_srq_own_wrs(const struct ofx_ep *ep)
{
	return 0;
}

/* The SRQ fixes the PZ (srq_ep_pz_difference_supported is FALSE) and needs a recv EVD. */
static int ep_srq_check(const struct ofx_ep *ep, const struct ofx_pz *pz,
			const struct ofx_evd *recv_evd, const DAT_EP_ATTR *attr)
{
	return pz != ep->srq->pz || !recv_evd ? -EINVAL : 0;
}

static void ep_srq_qp_init(const struct ofx_ep *ep, struct ibv_qp_init_attr_ex *init)
{
	init->cap.max_recv_wr = 0;
	init->cap.max_recv_sge = 0;
	init->srq = ep->srq->srq;
}

static int ep_srq_qp_added(struct ofx_ep *ep)
{
	return ofx_srq_ep_add(ep->srq, ep->qp->qp_num, &ep->cookie_owner);
}

/* The SRQ forgets the EP only after its last CQE was polled (or dropped). */
static void ep_srq_qp_removed(struct ofx_ep *ep)
{
	ofx_srq_ep_remove(ep->srq, &ep->cookie_owner, ep->recv_evd);
}

/* The QP is registered with the SRQ: dat_ep_modify keeps it. */
static const char *ep_srq_keeps_qp(const struct ofx_ep *ep)
{
	return "srq ep";
}

static DAT_RETURN ep_srq_post(struct ofx_ep *ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			      DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
}

/* Which SRQ receives a QP holds is known only to the device (ep.h). */
static void ep_srq_query(struct ofx_ep *ep, DAT_COUNT *nbufs_p, DAT_COUNT *span_p)
{
	if (nbufs_p)
		*nbufs_p = DAT_VALUE_UNKNOWN;
	if (span_p)
		*span_p = DAT_VALUE_UNKNOWN;
}

const struct ofx_ep_recv ofx_ep_srq_recv = {
	.name = "srq",
	.init = ep_srq_init,
	.fini = ep_srq_fini,
	.own_wrs = ep_srq_own_wrs,
	.check = ep_srq_check,
	.qp_init = ep_srq_qp_init,
	.qp_added = ep_srq_qp_added,
	.qp_removed = ep_srq_qp_removed,
	.keeps_qp = ep_srq_keeps_qp,
	.rtr_recv = false,
	.post = ep_srq_post,
	.query = ep_srq_query,
	/* an SRQ EP's count is unknowable (ep.h): its watermarks never fire */
	.watermarks = false,
	.conn_event = ep_srq_conn_event,
	.last_wqe = ep_srq_last_wqe_event,
	.reset = ofx_ep_srq_reset,
	.teardown = ep_srq_teardown,
	.quiesce = ep_srq_quiesce,
};
