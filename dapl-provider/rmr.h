/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_RMR_H
#define OFX_RMR_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <infiniband/verbs.h>
#include "dto.h"
#include "obj.h"

struct ofx_ia;
struct ofx_evd;
struct ofx_lmr;
struct ofx_pz;
struct ofx_rmr;

/* The IA's type 2 windows by key index: struct ofx_rmr_index, ia_core.h. */
struct ofx_rmr_index;

/*
 * A remote memory region: a verbs memory window.  dat_rmr_create makes a
 * type 1 window (PZ scope: any connection of the PZ may use the context)
 * when the device has IBV_DEVICE_MEM_WINDOW, else a type 2 one;
 * dat_rmr_create_for_ep always makes a type 2 window (EP scope: only the QP
 * it was bound through).  Without memory windows both return
 * DAT_NOT_IMPLEMENTED and ia_query reports max_rmrs 0.
 *
 * dat_rmr_bind posts the bind on the EP's send queue (type 1 through
 * ibv_bind_mw, type 2 as an IBV_WR_BIND_MW work request, a type 2 unbind
 * as IBV_WR_LOCAL_INV) and returns the new rmr_context at once; the result
 * arrives as DAT_RMR_BIND_COMPLETION_EVENT on the EP's request EVD, which
 * must carry DAT_EVD_RMR_BIND_FLAG.  A bind counts as a post on the EP:
 * the single-poster rule of the EP's send queue applies (dto.h).
 *
 * A bind's cookie is the window's own work request (OFX_COOKIE_F_OWNER of
 * cookie_owner, in the EP's send ring): rmr.c's cookie ops complete it.
 *
 * The RMR layer knows no EP.  dat_rmr_bind itself is the EP's (ofx_rmr_bind,
 * ep.h): it checks the EP and lends its send queue as a struct ofx_rmr_sq;
 * rmr.c checks the window and region and builds and posts the work requests.
 *
 * `lock` guards the fields below it.  rmr_bind holds it across the post;
 * CQ pollers take it in the bind's completion and ofx_rmr_peer_invalidated()
 * with an EVD lock held (the latter under ia->rmr_index.lock).  It is a
 * leaf (nothing is taken under it but the verbs library's own locks).
 */
struct ofx_rmr {
	struct ofx_obj obj;
	struct ofx_pz *pz;
	enum ibv_mw_type mw_type;
	uint32_t key_index;		/* rkey >> 8 of the window, never changes */
	struct ofx_cookie_owner cookie_owner;	/* its binds' completions (rmr.c) */
	struct ofx_rmr *index_next;	/* type 2: chain in ia->rmr_index, under its lock */

	pthread_mutex_t lock;
	struct ibv_mw *mw;		/* NULL once rmr_free deallocated it */
	int inflight;			/* binds posted, completion not yet seen */
	bool dead;			/* rmr_free done: the last completion frees */
	bool rolled_back;		/* a failed bind restored the key (until idle) */
	bool bound;			/* as of the last bind posted; true after a failure;
					 * false once the peer invalidated the window */
	/* type 2: the EP whose QP holds the binding (its cookie owner, ep.h) */
	const struct ofx_cookie_owner *bound_ep;
	struct ibv_mr *mr;		/* MR of the last bind posted (named by unbinds) */
	uint32_t rkey;			/* rmr_context of the last bind posted */
	DAT_LMR_TRIPLET triplet;	/* region of the last bind posted */
	DAT_MEM_PRIV_FLAGS priv;
	DAT_VA_TYPE va_type;
};
OFX_DEFINE_FROM_HANDLE(rmr, RMR)

/*
 * Called before an EP's QP is destroyed (`ep` is the EP's cookie owner).  A
 * type 2 window bound through a QP holds on to it (rxe in Linux 6.1 makes
 * ibv_destroy_qp wait for it, which never ends while the window lives), and
 * once the QP is in error no work request can unbind it.  So every window
 * still bound through `ep` is replaced by a fresh, unbound one of the same
 * PZ (a new rmr_context): its binding died with the QP anyway.
 */
void ofx_rmr_ep_gone(const struct ofx_cookie_owner *ep);

/* The window type dat_rmr_create would use, or 0 without memory windows. */
enum ibv_mw_type ofx_rmr_type(const struct ofx_ia *ia);
/* provider attr rmr_scope_supported */
DAT_RMR_SCOPE ofx_rmr_scope(const struct ofx_ia *ia);

DAT_RETURN ofx_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p);
DAT_RETURN ofx_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p);
DAT_RETURN ofx_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param);
/* The completion flags dat_rmr_bind accepts. */
#define OFX_RMR_COMPLETION_FLAGS (DAT_COMPLETION_SUPPRESS_FLAG | \
				  DAT_COMPLETION_BARRIER_FENCE_FLAG)

/*
 * The RMR's half of one dat_rmr_bind (ofx_rmr_bind in ep.c calls these in
 * the order of its checks).  An lmr of DAT_HANDLE_NULL or a triplet of
 * segment_length 0 unbinds (*rctx_p then still receives the window's key,
 * which no longer grants access); unbinding an unbound window posts nothing
 * and its completion event is queued at once.
 */
struct ofx_rmr_bind {
	struct ofx_rmr *rmr;
	struct ofx_lmr *lmr;		/* NULL: unbind */
	const DAT_LMR_TRIPLET *iov;
	DAT_MEM_PRIV_FLAGS priv;
	DAT_VA_TYPE va_type;
	bool unbind;
};

/* The send queue a bind goes on: the EP's, lent for one ofx_rmr_bind_post. */
struct ofx_rmr_sq {
	const struct ofx_cookie_owner *ep;	/* the EP (its rings' owner): type 2 keeps it */
	struct ofx_cookie_ring *ring;		/* its send ring: a bind's cookie is a slot */
	struct ibv_qp *qp;
	struct ofx_evd *req_evd;		/* an unbind with nothing to do completes here */
};

/* Arguments 1 to 5 (window, LMR, triplet, privileges, VA type), in order. */
DAT_RETURN ofx_rmr_bind_args(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *iov,
			     DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, struct ofx_rmr_bind *b);
/* The EP's PZ against the window's and the LMR's, then the region against the LMR. */
DAT_RETURN ofx_rmr_bind_region(const struct ofx_rmr_bind *b, const struct ofx_pz *ep_pz);
/*
 * Posts the bind (type 1 through ibv_bind_mw, type 2 as an IBV_WR_BIND_MW
 * work request, a type 2 unbind as IBV_WR_LOCAL_INV) on `sq`, under the
 * single-poster rule of the EP's send queue, and returns the new context.
 */
DAT_RETURN ofx_rmr_bind_post(const struct ofx_rmr_bind *b, const struct ofx_rmr_sq *sq,
			     DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			     DAT_RMR_CONTEXT *rctx_p);
/*
 * Deallocates the window at once (remote access through it fails from
 * then on) whether bound or not; the memory of the object lives until the
 * completions of binds still in flight have been seen.
 */
DAT_RETURN ofx_rmr_free(DAT_RMR_HANDLE rmr);

/* ia_close cleanup. */
void ofx_rmr_destroy(struct ofx_rmr *rmr);

void ofx_rmr_index_init(struct ofx_rmr_index *index);
/* At ia_close, after every RMR is gone. */
void ofx_rmr_index_fini(struct ofx_rmr_index *index);

/*
 * A receive completed with IBV_WC_WITH_INV: the peer's send with invalidate
 * freed the window of ours that `rkey` names.  Its RMR then counts as
 * unbound, as after an unbind (no region, no privileges, same context), so
 * the next bind posts no LOCAL_INV of a window that is free already (a
 * device may fail it, which breaks the QP; rxe in Linux 6.1 follows the
 * free window's missing QP pointer and panics the kernel).  A key that names no RMR of `ia` now (an LMR's, an old key of a
 * window bound again since) is ignored.  CQ poller, EVD lock held; `ia`
 * may be NULL.
 */
void ofx_rmr_peer_invalidated(struct ofx_ia *ia, uint32_t rkey);

#endif
