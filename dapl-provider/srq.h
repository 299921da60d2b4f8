/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_SRQ_H
#define OFX_SRQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "obj.h"
#include "dto.h"

struct ofx_pz;
struct ofx_evd;

/*
 * A DAT shared receive queue (DAT 2.0 section 6.9, contract 7): a basic
 * verbs SRQ whose receives complete on the recv CQ of whichever EP's QP the
 * message arrived on.
 *
 * Receive cookies belong to the SRQ, not to an EP: the poster cannot know
 * the EP, and completions of different QPs come back in any order.  They
 * are the SRQ's own work requests (OFX_COOKIE_F_OWNER of its cookie_owner,
 * dto.h): srq.c's cookie ops turn one into a receive of its EP.  Each
 * slot has an in-use flag; the poster (one consumer thread at a time: the
 * provider registers as not thread safe) scans for a free one from a
 * rotating hint, and whoever polls the completion copies the slot and then
 * frees it (its completion op), so no lock is taken for the slots.  The
 * completion names its QP only by qp_num; the SRQ keeps a table of its EPs
 * (their cookie owners) sorted by qp_num for that lookup, so that the DTO
 * event carries the EP (stock reports the SRQ handle there, contract 7.2).
 *
 * EP life cycle: an EP enters the table at ep_create_with_srq and leaves it
 * in ep_free after its QP is destroyed and its recv CQ drained one last
 * time.  Completions of an EP being freed are dropped (their receive
 * buffers count as consumed); a completion whose qp_num is not in the table
 * any more is dropped the same way, so a stale CQE never touches freed EP
 * memory.  SRQ slot memory lives until srq_free, which is refused while any
 * EP is in the table.  Known limit: an EP freed while its recv EVD's event
 * ring is full cannot pull every CQE out of the CQ; if the SRQ is then freed
 * too, such a left-over CQE would name freed slots.
 *
 * Resize keeps older slot arrays (completions may still name them) and
 * frees them at srq_free.
 *
 * Low watermark (dat_srq_set_lw): armed as the verbs srq_limit.  When the
 * device reports IBV_EVENT_SRQ_LIMIT_REACHED the IA's async EVD gets
 * DAT_ASYNC_ERROR_EP_BROKEN (stock's mapping of SRQ_LIMIT, contract 3.2;
 * DAT defines no SRQ event number) with dat_handle = the SRQ and reason
 * DAT_SRQ_LOW_WATERMARK_EVENT.  verbs disarms the limit when it fires; the
 * next srq_post_recv that brings the posted count above the watermark arms
 * it again.
 *
 * Counts: the provider sees a receive leave the SRQ only when its completion
 * is polled, so dat_srq_query reports available_dto_count and
 * outstanding_dto_count both as "posted and not yet polled".
 *
 * dat_ep_recv_query on an SRQ EP answers DAT_VALUE_UNKNOWN for both counts
 * (which SRQ receives a QP holds is known only to the device), and
 * dat_ep_set_watermark stores the EP's high watermarks without ever raising
 * DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT (ep.h).  Stock answers NOT_IMPLEMENTED.
 *
 * LAST_WQE_REACHED: when the QP of an SRQ EP goes to error the device
 * should raise IBV_EVENT_QP_LAST_WQE_REACHED; stock turns it into
 * DAT_ASYNC_ERROR_EP_BROKEN with the EP handle, and dtestsrq waits (with no
 * timeout) for exactly that after each DISCONNECTED.  rxe in Linux 6.1 never
 * raises it, so after a DISCONNECTED, BROKEN or ACCEPT_COMPLETION_ERROR
 * event of an SRQ EP whose QP went live the provider waits at most
 * cfg.lastwqe_timeout_ms for it and then posts the async event itself.
 * Exactly one is posted per connection; none for an EP being freed.  That
 * tracking is the EP's SRQ receive variant (ep_srq.c, ep_recv.h).
 */

struct ofx_srq_slot {
	struct ofx_cookie ck;	/* first: wr_id points here */
	_Atomic bool busy;	/* set by the poster, cleared by its completion */
};

/* One generation of slots; a resize that grows adds a newer one. */
struct ofx_srq_slots {
	struct ofx_srq_slots *older;
	uint32_t n;
	struct ofx_srq_slot slot[];
};

struct ofx_srq_ep_ref {
	uint32_t qp_num;
	struct ofx_cookie_owner *ep;	/* the EP's (ep.h) */
};

struct ofx_srq {
	struct ofx_obj obj;
	struct ofx_pz *pz;
	struct ibv_srq *srq;
	struct ofx_cookie_owner cookie_owner;	/* the receives' (srq.c) */

	/*
	 * Leaf lock, below evd->lock (pollers look EPs up while holding their
	 * EVD's lock): nothing else is taken while it is held.  Guards state,
	 * the EP table, low_watermark and the arming of the verbs limit.
	 */
	pthread_mutex_t lock;
	DAT_SRQ_STATE state;
	struct ofx_srq_ep_ref *eps;	/* sorted by qp_num */
	size_t neps, cap_eps;
	DAT_COUNT low_watermark;
	_Atomic bool lw_armed;		/* the verbs srq_limit is armed */

	/* the posting thread's own (DAT calls on one SRQ are serialised) */
	DAT_COUNT max_recv_dtos;
	DAT_COUNT max_recv_iov;
	uint32_t verbs_max_wr;		/* what the verbs SRQ holds now */
	struct ofx_srq_slots *slots;	/* newest generation: posts take slots here */
	uint32_t hint;			/* where the next free-slot scan starts */

	_Atomic int outstanding;	/* posted and not yet polled */
};
OFX_DEFINE_FROM_HANDLE(srq, SRQ)

/* DAT entry points */
DAT_RETURN ofx_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
			  DAT_SRQ_HANDLE *srq_p);
DAT_RETURN ofx_srq_free(DAT_SRQ_HANDLE srq);
DAT_RETURN ofx_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			     DAT_DTO_COOKIE cookie);
DAT_RETURN ofx_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param);
DAT_RETURN ofx_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max_recv_dtos);
DAT_RETURN ofx_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT low_watermark);

/* ia_close cleanup: frees regardless of EPs (they are gone by then). */
void ofx_srq_destroy(struct ofx_srq *srq);

/*
 * EP table, for ep.c: `ep` is the EP's cookie owner, `qp_num` its QP's.
 * add: -ESHUTDOWN if the SRQ is being freed, -ENOMEM.  remove: call after
 * the EP's QP is destroyed and its recv CQ drained; it also waits out a
 * poller of `recv_evd` (the EP's, may be NULL) that may still hold the EP
 * from a lookup.
 */
int ofx_srq_ep_add(struct ofx_srq *srq, uint32_t qp_num, struct ofx_cookie_owner *ep);
void ofx_srq_ep_remove(struct ofx_srq *srq, struct ofx_cookie_owner *ep, struct ofx_evd *recv_evd);

/* Device async event, from ia.c's handler (progress thread, no lock held). */
void ofx_srq_limit_reached(struct ofx_srq *srq);

#endif
