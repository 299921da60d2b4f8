/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_RECV_H
#define OFX_EP_RECV_H

#include <stdbool.h>
#include <infiniband/verbs.h>
#include <dat2/udat.h>

#include "progress.h"
#include "wait.h"

struct ofx_ep;
struct ofx_pz;
struct ofx_evd;

/*
 * Where an EP's receives come from, chosen once when the EP is created:
 * ofx_ep_rq_recv (ep.c), the EP's own receive queue with its recv ring, for
 * dat_ep_create; ofx_ep_srq_recv (ep_srq.c), a DAT SRQ (srq.h), for
 * dat_ep_create_with_srq.  The EP code calls these instead of asking which
 * one it has.  Unless a hook says otherwise it runs with or without
 * ep->lock as its caller in ep.c does (noted per hook).
 *
 * dat_ep_post_recv keeps the own queue's post inline and tests ep->srq, a
 * predicted branch, before it: an indirect call there would cost the data
 * path instructions (README, "Speed"); only an SRQ EP goes through `post`.
 */
struct ofx_ep_recv {
	const char *name;
	/*
	 * The variant's own state of an EP: init in dat_ep_create(_with_srq)
	 * before the checks (a negative errno fails the call), fini when
	 * the EP's memory goes, whether or not init ran (the provider's
	 * tentative EP, an rq one, never runs it).
	 */
	int (*init)(struct ofx_ep *ep);
	void (*fini)(struct ofx_ep *ep);
	/*
	 * The receive work requests of the EP's own: recv ring slots, QP
	 * receive queue and recv CQ room (one more than max_recv_dtos, for
	 * the RTR).  0 with an SRQ, whose receives are the SRQ's.
	 */
	int (*own_wrs)(const struct ofx_ep *ep);
	/*
	 * dat_ep_create and dat_ep_modify: the receive side's checks of the
	 * PZ, recv EVD and attributes the EP would have; -EINVAL if wrong.
	 */
	int (*check)(const struct ofx_ep *ep, const struct ofx_pz *pz,
		     const struct ofx_evd *recv_evd, const DAT_EP_ATTR *attr);
	/* The receive side of the QP's creation attributes. */
	void (*qp_init)(const struct ofx_ep *ep, struct ibv_qp_init_attr_ex *init);
	/*
	 * A new QP exists (qp_added; on failure the caller destroys it), or
	 * the QP is gone, its recv CQ drained (qp_removed).  ep->lock held,
	 * but for qp_removed in ep_free.
	 */
	int (*qp_added)(struct ofx_ep *ep);
	void (*qp_removed)(struct ofx_ep *ep);
	/* dat_ep_modify: why the QP cannot be rebuilt, NULL if it can (ep->lock held). */
	const char *(*keeps_qp)(const struct ofx_ep *ep);
	/*
	 * The passive side's RTR receive can go on the EP's queue: p2p is
	 * possible (a SEND RTR needs a receive of the EP's own).
	 */
	bool rtr_recv;
	/* dat_ep_post_recv of an EP whose receives are not its own (see above). */
	DAT_RETURN (*post)(struct ofx_ep *ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			   DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
	/* dat_ep_recv_query (ep.h); either output may be NULL. */
	void (*query)(struct ofx_ep *ep, DAT_COUNT *nbufs_p, DAT_COUNT *span_p);
	/* dat_ep_set_watermark's values can fire: the posted count is known (ep.h). */
	bool watermarks;
	/* ep_conn.c: every DAT connection event the EP reports (ep->lock held). */
	void (*conn_event)(struct ofx_ep *ep, DAT_EVENT_NUMBER num);
	/*
	 * IBV_EVENT_QP_LAST_WQE_REACHED on the EP's QP (ia.c, progress
	 * thread, no lock held): true if expected and handled, false to
	 * report it as any other QP error.
	 */
	bool (*last_wqe)(struct ofx_ep *ep);
	/* dat_ep_reset, ep->lock held: before the connection's state goes. */
	void (*reset)(struct ofx_ep *ep);
	/*
	 * ep_free: `teardown` with ep->lock held, before the cm_id goes;
	 * `quiesce` without it, before the QP is destroyed.
	 */
	void (*teardown)(struct ofx_ep *ep);
	void (*quiesce)(struct ofx_ep *ep);
};

extern const struct ofx_ep_recv ofx_ep_rq_recv;
extern const struct ofx_ep_recv ofx_ep_srq_recv;

/* An SRQ EP's ep->lastwqe, made by the variant's init (ep_srq.c). */
struct ofx_lastwqe {
	_Atomic int state;		/* enum ofx_ep_lastwqe (ep.h); written under ep->lock */
	struct ofx_timer timer;		/* bounded wait for the event */
	struct ofx_waiter wait;		/* woken when state becomes DONE */
};

/*
 * The SRQ variant's LAST_WQE_REACHED tracking (srq.h), exported for its
 * unit tests; the EP code reaches it only through ofx_ep_srq_recv.
 * last_wqe: the device's async event (no lock held).  reset: a pending
 * report of the old connection is posted now, and the next connection
 * starts afresh (ep->lock held).  lastwqe_pending: true while the event
 * may still come.
 */
void ofx_ep_srq_last_wqe(struct ofx_ep *ep);
void ofx_ep_srq_reset(struct ofx_ep *ep);
bool ofx_ep_srq_lastwqe_pending(const struct ofx_ep *ep);

#endif
