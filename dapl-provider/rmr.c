/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_MEM
#include "rmr.h"
#include "lock.h"

#include "dto.h"
#include "evd.h"
#include "ia_core.h"
#include "lmr.h"
#include "log.h"
#include "pz.h"
#include "status.h"
#include "verbs.h"

#include <dat2/dat_ib_extensions.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define OFX_RMR_PRIV_VALID (DAT_MEM_PRIV_ALL_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC)

/*
 * Keys.  The verbs library keeps a window's current key in mw->rkey: for
 * type 1 ibv_bind_mw advances it when the bind is posted, for type 2 we
 * do.  The device only moves its own copy when the bind executes, so a bind
 * that fails must put mw->rkey back, or the next bind names a key the
 * device does not know (rxe then fails it too).  Completions of one QP come
 * in order and everything behind a failure is flushed, so the first failure
 * since the window was last idle holds the right key to restore.
 */

static bool rmr_has_type2(const struct ofx_ia *ia)
{
	return ia->dev_attr.device_cap_flags &
	       (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B);
}

enum ibv_mw_type ofx_rmr_type(const struct ofx_ia *ia)
{
	/* the LMRs take windows exactly when there is a type to make */
	if (!ofx_lmr_mw_access(ia))
		return 0;
	if (ia->dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)
		return IBV_MW_TYPE_1;
	return IBV_MW_TYPE_2;
}

DAT_RMR_SCOPE ofx_rmr_scope(const struct ofx_ia *ia)
{
	if (ofx_rmr_type(ia) == IBV_MW_TYPE_1)
		return rmr_has_type2(ia) ? DAT_RMR_SCOPE_ANY : DAT_RMR_SCOPE_PZ;
	return DAT_RMR_SCOPE_EP;
}

void ofx_rmr_index_init(struct ofx_rmr_index *index)
{
	memset(index, 0, sizeof(*index));
	pthread_mutex_init(&index->lock, NULL);
}

void ofx_rmr_index_fini(struct ofx_rmr_index *index)
{
	pthread_mutex_destroy(&index->lock);
}

static struct ofx_rmr **rmr_index_bucket(struct ofx_rmr_index *index, uint32_t key_index)
{
	return &index->buckets[key_index % OFX_RMR_INDEX_BUCKETS];
}

static void rmr_index_add(struct ofx_rmr_index *index, struct ofx_rmr *rmr)
{
	struct ofx_rmr **head;

	pthread_mutex_lock(&index->lock);
	head = rmr_index_bucket(index, rmr->key_index);
	rmr->index_next = *head;
	*head = rmr;
	atomic_fetch_add_explicit(&index->count, 1, memory_order_relaxed);
	pthread_mutex_unlock(&index->lock);
}

static void rmr_index_del(struct ofx_rmr_index *index, struct ofx_rmr *rmr)
{
	struct ofx_rmr **pos;

	pthread_mutex_lock(&index->lock);
	for (pos = rmr_index_bucket(index, rmr->key_index); *pos; pos = &(*pos)->index_next) {
		if (*pos == rmr) {
			*pos = rmr->index_next;
			atomic_fetch_sub_explicit(&index->count, 1, memory_order_relaxed);
			break;
		}
	}
	pthread_mutex_unlock(&index->lock);
	rmr->index_next = NULL;
}

/* Forgets the region as an unbind does; the key stays.  rmr->lock held. */
static void rmr_mark_unbound(struct ofx_rmr *rmr)
{
	ofx_lock_assert_held(&rmr->lock);
	rmr->bound = false;
	rmr->bound_ep = NULL;
	rmr->priv = DAT_MEM_PRIV_NONE_FLAG;
	memset(&rmr->triplet, 0, sizeof(rmr->triplet));
}

/*
 * Only the key the consumer handed out last counts: an older one means the
 * window was bound again since, and that bind's own LOCAL_INV took care of
 * the old binding.  Returns whether `rkey` is this window's.
 */
static bool rmr_take_peer_invalidate(struct ofx_rmr *rmr, uint32_t rkey)
{
	bool mine;

	pthread_mutex_lock(&rmr->lock);
	mine = rmr->rkey == rkey;
	if (mine && rmr->bound)
		rmr_mark_unbound(rmr);
	pthread_mutex_unlock(&rmr->lock);
	if (mine)
		ofx_dbg("rmr %p: rkey 0x%x invalidated by the peer", (void *)rmr, rkey);
	return mine;
}

void ofx_rmr_peer_invalidated(struct ofx_ia *ia, uint32_t rkey)
{
	struct ofx_rmr *rmr;

	if (!ia)
		return;
	pthread_mutex_lock(&ia->rmr_index.lock);
	for (rmr = *rmr_index_bucket(&ia->rmr_index, rkey >> 8); rmr; rmr = rmr->index_next)
		if (rmr->key_index == rkey >> 8 && rmr_take_peer_invalidate(rmr, rkey))
			break;
	pthread_mutex_unlock(&ia->rmr_index.lock);
}

/* The type 2 windows bound through `ep`, in a malloc'd array (NULL if none). */
static struct ofx_rmr **rmr_bound_through(struct ofx_rmr_index *index,
					  const struct ofx_cookie_owner *ep, size_t *n_p)
{
	struct ofx_rmr **found = NULL, **grown;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&index->lock);
	for (size_t b = 0; b < OFX_RMR_INDEX_BUCKETS; b++) {
		for (struct ofx_rmr *rmr = index->buckets[b]; rmr; rmr = rmr->index_next) {
			bool mine;

			pthread_mutex_lock(&rmr->lock);
			mine = rmr->bound_ep == ep && rmr->mw;
			pthread_mutex_unlock(&rmr->lock);
			if (!mine)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4;
				grown = realloc(found, cap * sizeof(*found));
				if (!grown)
					goto out; /* the rest stay: ofx_rmr_ep_gone warns */
				found = grown;
			}
			found[n++] = rmr;
		}
	}
out:
	pthread_mutex_unlock(&index->lock);
	*n_p = n;
	return found;
}

/* Swaps the window for a fresh unbound one; rmr->lock held. */
static void rmr_renew_window(struct ofx_rmr *rmr)
{
	struct ibv_mw *fresh = ofx_verbs->alloc_mw(rmr->pz->pd, IBV_MW_TYPE_2);

	if (ofx_verbs->dealloc_mw(rmr->mw))
		ofx_warn("rmr %p: ibv_dealloc_mw of the window bound through a dying ep: %m",
			 (void *)rmr);
	rmr->mw = fresh;
	rmr_mark_unbound(rmr);
	if (!fresh) {
		/* the handle stays, binds fail: only rmr_free is left to do */
		ofx_err("rmr %p: ibv_alloc_mw for its new window: %m", (void *)rmr);
		return;
	}
	rmr->rkey = fresh->rkey;
	rmr->key_index = fresh->rkey >> 8;
	rmr->mr = NULL;
}

/* ofx_rmr_ep_gone past its check: out of line, so that the check saves no registers. */
static __attribute__((noinline)) void rmr_ep_gone_walk(struct ofx_rmr_index *index,
							const struct ofx_cookie_owner *ep)
{
	struct ofx_rmr **bound;
	size_t n;

	bound = rmr_bound_through(index, ep, &n);
	for (size_t i = 0; i < n; i++) {
		struct ofx_rmr *rmr = bound[i];
		uint32_t old = rmr->rkey;

		/* the key index changes with the window: out of the index meanwhile */
		rmr_index_del(index, rmr);
		pthread_mutex_lock(&rmr->lock);
		rmr_renew_window(rmr);
		pthread_mutex_unlock(&rmr->lock);
		rmr_index_add(index, rmr);
		ofx_info("rmr %p: window 0x%x was bound through ep %p being freed; now 0x%x, "
			 "unbound", (void *)rmr, old, (void *)ep->obj, rmr->rkey);
	}
	free(bound);
}

void ofx_rmr_ep_gone(const struct ofx_cookie_owner *ep)
{
	struct ofx_rmr_index *index = &ep->obj->ia->rmr_index;

	/* most processes have no RMR: no lock, no walk of 64 empty buckets */
	if (atomic_load_explicit(&index->count, memory_order_relaxed))
		rmr_ep_gone_walk(index, ep);
}

static const struct ofx_cookie_ops rmr_cookie_ops;

static int rmr_new(struct ofx_pz *pz, enum ibv_mw_type type, struct ofx_rmr **rmr_p)
{
	struct ofx_rmr *rmr;
	int ret;

	rmr = calloc(1, sizeof(*rmr));
	if (!rmr) {
		ofx_err("rmr: out of memory");
		return -ENOMEM;
	}
	errno = 0;
	rmr->mw = ofx_verbs->alloc_mw(pz->pd, type);
	if (!rmr->mw) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("ibv_alloc_mw type %d pz %p: %m", (int)type, (void *)pz);
		free(rmr);
		return ret;
	}
	pthread_mutex_init(&rmr->lock, NULL);
	rmr->pz = pz;
	rmr->cookie_owner.ops = &rmr_cookie_ops;
	rmr->mw_type = type;
	rmr->rkey = rmr->mw->rkey;
	rmr->key_index = rmr->rkey >> 8;
	rmr->va_type = DAT_VA_TYPE_VA;
	atomic_fetch_add(&pz->refs, 1);
	ofx_obj_init(&rmr->obj, OFX_OBJ_RMR, pz->obj.ia);
	if (type == IBV_MW_TYPE_2)
		rmr_index_add(&pz->obj.ia->rmr_index, rmr);
	ofx_dbg("rmr %p: type %d window, rkey 0x%x, pz %p", (void *)rmr, (int)type, rmr->rkey,
		(void *)pz);
	*rmr_p = rmr;
	return 0;
}

static DAT_RETURN rmr_create(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE *rmr_p, bool for_ep)
{
	struct ofx_pz *pz = ofx_pz_from_handle(pz_h);
	enum ibv_mw_type type;
	struct ofx_rmr *rmr;
	struct ofx_ia *ia;
	int ret;

	if (!pz)
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (!rmr_p)
		return OFX_INVALID_ARG(2);
	ia = pz->obj.ia;
	if (for_ep)
		type = ia->dev_attr.max_mw > 0 && rmr_has_type2(ia) ? IBV_MW_TYPE_2 : 0;
	else
		type = ofx_rmr_type(ia);
	if (!type) {
		ofx_info("device %s has no %smemory windows (cap flags 0x%x, max_mw %d): "
			 "%s not implemented", ofx_verbs_dev_name(ia->verbs),
			 for_ep ? "type 2 " : "", ia->dev_attr.device_cap_flags,
			 ia->dev_attr.max_mw, for_ep ? "rmr_create_for_ep" : "rmr_create");
		return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
	}
	ret = rmr_new(pz, type, &rmr);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_RMR);
	*rmr_p = (DAT_RMR_HANDLE)rmr;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p)
{
	return rmr_create(pz, rmr_p, false);
}

DAT_RETURN ofx_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p)
{
	return rmr_create(pz, rmr_p, true);
}

DAT_RETURN ofx_rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param)
{
	struct ofx_rmr *rmr = ofx_rmr_from_handle(h);

	if (!rmr)
		return ofx_invalid_handle(OFX_OBJ_RMR);
	if (mask & ~DAT_RMR_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);

	pthread_mutex_lock(&rmr->lock);
	if (mask & DAT_RMR_FIELD_IA_HANDLE)
		param->ia_handle = ofx_ia_dat_handle(rmr->obj.ia);
	if (mask & DAT_RMR_FIELD_PZ_HANDLE)
		param->pz_handle = (DAT_PZ_HANDLE)rmr->pz;
	if (mask & DAT_RMR_FIELD_LMR_TRIPLET)
		param->lmr_triplet = rmr->triplet;
	if (mask & DAT_RMR_FIELD_MEM_PRIV)
		param->mem_priv = rmr->priv;
	if (mask & DAT_RMR_FIELD_RMR_CONTEXT)
		param->rmr_context = rmr->rkey;
	if (mask & DAT_RMR_FIELD_RMR_SCOPE)
		param->rmr_scope = rmr->mw_type == IBV_MW_TYPE_1 ? DAT_RMR_SCOPE_PZ :
								  DAT_RMR_SCOPE_EP;
	if (mask & DAT_RMR_FIELD_VA_TYPE)
		param->va_type = rmr->va_type;
	pthread_mutex_unlock(&rmr->lock);
	return DAT_SUCCESS;
}

static int rmr_access(DAT_MEM_PRIV_FLAGS priv)
{
	int access = 0;

	if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		access |= IBV_ACCESS_REMOTE_READ;
	if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		access |= IBV_ACCESS_REMOTE_WRITE;
	if (priv & DAT_IB_MEM_PRIV_REMOTE_ATOMIC)
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	return access;
}

/*
 * Checks the region of a bind against its LMR.  Returns the DAT status to
 * report, DAT_SUCCESS if the bind may go on.
 */
static DAT_RETURN rmr_check_region(const struct ofx_rmr *rmr, const struct ofx_lmr *lmr,
				   const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS priv)
{
	uint64_t start = (uint64_t)(uintptr_t)lmr->mr->addr;
	uint64_t end = start + lmr->mr->length;

	if (lmr->pz != rmr->pz || iov->lmr_context != lmr->mr->lkey)
		return OFX_DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_NO_SUBTYPE);
	if (iov->virtual_address < start || iov->virtual_address > end ||
	    iov->segment_length > end - iov->virtual_address)
		return OFX_INVALID_ARG(3);
	/* verbs: a window granting remote write or atomics needs a locally writable MR */
	if ((rmr_access(priv) & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(ofx_lmr_access_flags(lmr->privileges) & IBV_ACCESS_LOCAL_WRITE))
		return OFX_DAT_ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE);
	return DAT_SUCCESS;
}

/*
 * Completion of a bind posted by rmr_bind (CQ poller, EVD lock held).  On
 * failure the key is rolled back to `old_rkey` (the device kept it) and
 * the window counts as possibly bound, so that an unbind is still posted.
 * May free `rmr`: the caller uses only its handle value afterwards.
 */
static void rmr_bind_done(struct ofx_rmr *rmr, bool ok, uint32_t old_rkey);

/* The owner of the internal LOCAL_INV before a type 2 rebind: no window to tell. */
static struct ofx_cookie_owner rmr_inv_owner;

/*
 * A window operation completed (its ring, the EP's send ring, retired it):
 * the window counts its binds before anything may drop the completion.
 */
static bool rmr_cookie_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
				const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
				struct ofx_cookie_owner **notify_p)
{
	struct ofx_rmr *rmr = owner == &rmr_inv_owner ? NULL :
			      container_of(owner, struct ofx_rmr, cookie_owner);

	if (rmr)
		rmr_bind_done(rmr, wc->status == IBV_WC_SUCCESS, c->len);
	if (!ofx_dto_settle(c->ring->owner, c, wc, notify_p))
		return false;
	/* the RMR may be freed by now: only its handle value is used */
	memset(ev->event_extension_data, 0, sizeof(ev->event_extension_data));
	memset(&ev->event_data, 0, sizeof(ev->event_data));
	ev->event_number = DAT_RMR_BIND_COMPLETION_EVENT;
	ev->event_data.rmr_completion_event_data.rmr_handle = (DAT_RMR_HANDLE)rmr;
	ev->event_data.rmr_completion_event_data.user_cookie.as_64 = c->user.as_64;
	ev->event_data.rmr_completion_event_data.status = ofx_dto_status(wc->status);
	return true;
}

static const struct ofx_cookie_ops rmr_cookie_ops = {
	.complete = rmr_cookie_complete,
};

static struct ofx_cookie_owner rmr_inv_owner = { .ops = &rmr_cookie_ops };

/* A send-ring slot for a window operation, or NULL when the ring is full. */
static struct ofx_cookie *rmr_cookie(const struct ofx_rmr_sq *sq, struct ofx_rmr *rmr,
				     DAT_RMR_COOKIE user, uint8_t flags, uint32_t old_rkey)
{
	struct ofx_cookie *ck = ofx_cookie_ring_reserve(sq->ring);

	if (!ck)
		return NULL;
	ck->user.as_64 = user.as_64;
	ck->len = old_rkey;
	ck->op = 0;
	ck->flags = flags | OFX_COOKIE_F_OWNER;
	ck->owner = rmr ? &rmr->cookie_owner : &rmr_inv_owner;
	return ck;
}

/* Window WRs are always signaled: the unsignaled run of the ring ends here. */
static void rmr_commit(const struct ofx_rmr_sq *sq)
{
	sq->ring->unsignaled = 0;
	ofx_cookie_ring_commit(sq->ring);
}

static int rmr_post_wr(const struct ofx_rmr_sq *sq, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret = ofx_verbs->post_send(sq->qp, wr, &bad);

	if (!ret)
		return 0;
	ofx_warn("post %s on qp 0x%x: %s", wr->opcode == IBV_WR_LOCAL_INV ? "local_inv" : "bind_mw",
		 sq->qp->qp_num, strerror(-ret));
	return ret;
}

struct rmr_bind_req {
	struct ibv_mr *mr;		/* NULL: unbind */
	struct ibv_mr *unbind_mr;	/* unbind: the consumer's LMR, if it named one */
	const DAT_LMR_TRIPLET *iov;
	int access;
	int send_flags;
	DAT_RMR_COOKIE cookie;
	uint8_t ck_flags;
};

/*
 * Type 1: ibv_bind_mw posts the bind and advances mw->rkey.  An unbind is a
 * bind of length 0; it names the MR the window is bound to rather than
 * none, because rxe's user library (rdma-core 44) reads bind_info.mr->lkey
 * for every bind and crashes on NULL.  rmr->lock held.
 */
static int rmr_bind_type1(struct ofx_rmr *rmr, const struct ofx_rmr_sq *sq,
			  const struct rmr_bind_req *req)
{
	struct ibv_mw_bind bind = { .send_flags = req->send_flags };
	uint32_t old = rmr->mw->rkey;
	struct ofx_cookie *ck;
	int ret;

	if (!req->mr && !rmr->bound)
		return -ENOENT;	/* unbind of an unbound window: nothing to post */
	ck = rmr_cookie(sq, rmr, req->cookie, req->ck_flags, old);
	if (!ck)
		return -ENOSPC;
	bind.wr_id = (uintptr_t)ck;
	if (req->mr) {
		bind.bind_info.mr = req->mr;
		bind.bind_info.addr = req->iov->virtual_address;
		bind.bind_info.length = req->iov->segment_length;
		bind.bind_info.mw_access_flags = req->access;
	} else {
		bind.bind_info.mr = req->unbind_mr ? req->unbind_mr : rmr->mr;
	}
	ret = ofx_verbs->bind_mw(sq->qp, rmr->mw, &bind);
	if (ret) {
		ofx_warn("ibv_bind_mw on qp 0x%x: %s", sq->qp->qp_num, strerror(-ret));
		rmr->mw->rkey = old;	/* the library may have advanced it */
		return ret;
	}
	rmr_commit(sq);
	return 0;
}

/*
 * Type 2: a bound window must be invalidated before it is bound again (an
 * internal LOCAL_INV, never reported); an unbind is that invalidate alone,
 * reported.  rmr->lock held.
 */
static int rmr_bind_type2(struct ofx_rmr *rmr, const struct ofx_rmr_sq *sq,
			  const struct rmr_bind_req *req)
{
	struct ibv_send_wr wr;
	uint32_t old = rmr->mw->rkey;
	struct ofx_cookie *ck;
	bool report_inv = !req->mr;
	int ret;

	if (rmr->bound) {
		ck = report_inv ? rmr_cookie(sq, rmr, req->cookie, req->ck_flags, old) :
				  rmr_cookie(sq, NULL, req->cookie, OFX_COOKIE_F_INTERNAL, old);
		if (!ck)
			return -ENOSPC;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uintptr_t)ck;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = req->send_flags;
		wr.invalidate_rkey = old;
		ret = rmr_post_wr(sq, &wr);
		if (ret)
			return ret;
		rmr_commit(sq);
		rmr->bound = false;
		if (report_inv)
			return 0;
	}
	if (!req->mr)
		return -ENOENT;	/* unbind of an unbound window: nothing to post */

	ck = rmr_cookie(sq, rmr, req->cookie, req->ck_flags, old);
	if (!ck)
		return -ENOSPC;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)ck;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = req->send_flags;
	wr.bind_mw.mw = rmr->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(old);
	wr.bind_mw.bind_info.mr = req->mr;
	wr.bind_mw.bind_info.addr = req->iov->virtual_address;
	wr.bind_mw.bind_info.length = req->iov->segment_length;
	wr.bind_mw.bind_info.mw_access_flags = req->access;
	ret = rmr_post_wr(sq, &wr);
	if (ret)
		return ret;
	rmr_commit(sq);
	rmr->mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* An unbind with nothing to undo completes at once, as a software-made event. */
static void rmr_complete_now(struct ofx_rmr *rmr, const struct ofx_rmr_sq *sq,
			     DAT_RMR_COOKIE cookie)
{
	DAT_EVENT ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_RMR_BIND_COMPLETION_EVENT;
	ev.event_data.rmr_completion_event_data.rmr_handle = (DAT_RMR_HANDLE)rmr;
	ev.event_data.rmr_completion_event_data.user_cookie = cookie;
	ev.event_data.rmr_completion_event_data.status = DAT_RMR_BIND_SUCCESS;
	ofx_evd_post(sq->req_evd, &ev);
}

DAT_RETURN ofx_rmr_bind_args(DAT_RMR_HANDLE rmr_h, DAT_LMR_HANDLE lmr_h,
			     const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS priv,
			     DAT_VA_TYPE va_type, struct ofx_rmr_bind *b)
{
	struct ofx_rmr *rmr = ofx_rmr_from_handle(rmr_h);
	struct ofx_lmr *lmr = NULL;

	if (!rmr)
		return ofx_invalid_handle(OFX_OBJ_RMR);
	if (lmr_h != DAT_HANDLE_NULL) {
		lmr = ofx_lmr_from_handle(lmr_h);
		if (!lmr)
			return ofx_invalid_handle(OFX_OBJ_LMR);
		if (!iov)
			return OFX_INVALID_ARG(3);
	}
	if (priv & ~OFX_RMR_PRIV_VALID)
		return OFX_INVALID_ARG(4);
	if (va_type == DAT_VA_TYPE_ZB)
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	if (va_type != DAT_VA_TYPE_VA)
		return OFX_INVALID_ARG(5);
	*b = (struct ofx_rmr_bind){
		.rmr = rmr,
		.lmr = lmr,
		.iov = iov,
		.priv = priv,
		.va_type = va_type,
		.unbind = !lmr || !iov->segment_length,
	};
	return DAT_SUCCESS;
}

DAT_RETURN ofx_rmr_bind_region(const struct ofx_rmr_bind *b, const struct ofx_pz *ep_pz)
{
	if (ep_pz != b->rmr->pz || (b->lmr && b->lmr->pz != b->rmr->pz))
		return OFX_DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_NO_SUBTYPE);
	if (b->unbind)
		return DAT_SUCCESS;
	return rmr_check_region(b->rmr, b->lmr, b->iov, b->priv);
}

DAT_RETURN ofx_rmr_bind_post(const struct ofx_rmr_bind *b, const struct ofx_rmr_sq *sq,
			     DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			     DAT_RMR_CONTEXT *rctx_p)
{
	struct ofx_rmr *rmr = b->rmr;
	struct rmr_bind_req req = { .iov = b->iov, .cookie = cookie };
	bool unbind = b->unbind;
	uint32_t rkey;
	int ret;

	if (!unbind) {
		req.mr = b->lmr->mr;
		req.access = rmr_access(b->priv);
	} else if (b->lmr) {
		req.unbind_mr = b->lmr->mr;
	}
	req.send_flags = IBV_SEND_SIGNALED;
	if (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG)
		req.send_flags |= IBV_SEND_FENCE;
	req.ck_flags = flags & DAT_COMPLETION_SUPPRESS_FLAG ? OFX_COOKIE_F_SUPPRESS : 0;

	pthread_mutex_lock(&rmr->lock);
	if (rmr->mw_type == IBV_MW_TYPE_1)
		ret = rmr_bind_type1(rmr, sq, &req);
	else
		ret = rmr_bind_type2(rmr, sq, &req);
	if (ret && ret != -ENOENT) {
		pthread_mutex_unlock(&rmr->lock);
		return ofx_dat_status(ret, OFX_OBJ_EP);
	}
	if (!ret)
		rmr->inflight++;
	rmr->bound = !unbind;
	if (rmr->mw_type == IBV_MW_TYPE_2)
		rmr->bound_ep = unbind ? NULL : sq->ep;
	if (!unbind)
		rmr->mr = req.mr;	/* kept after an unbind: a failed one needs it again */
	rmr->rkey = rkey = rmr->mw->rkey;
	rmr->priv = unbind ? DAT_MEM_PRIV_NONE_FLAG : b->priv;
	rmr->va_type = b->va_type;
	if (unbind)
		memset(&rmr->triplet, 0, sizeof(rmr->triplet));
	else
		rmr->triplet = *b->iov;
	pthread_mutex_unlock(&rmr->lock);

	if (ret == -ENOENT && !(flags & DAT_COMPLETION_SUPPRESS_FLAG))
		rmr_complete_now(rmr, sq, cookie);
	ofx_dbg("rmr %p: %s on ep %p qp 0x%x, rkey 0x%x", (void *)rmr, unbind ? "unbind" : "bind",
		(void *)sq->ep->obj, sq->qp->qp_num, rkey);
	if (rctx_p)
		*rctx_p = rkey;
	return DAT_SUCCESS;
}

static void rmr_release(struct ofx_rmr *rmr)
{
	pthread_mutex_destroy(&rmr->lock);
	free(rmr);
}

/* Deallocates the window; the object stays valid if verbs refuses. */
static int rmr_dealloc(struct ofx_rmr *rmr)
{
	int ret = 0;

	pthread_mutex_lock(&rmr->lock);
	if (rmr->mw) {
		ret = ofx_verbs->dealloc_mw(rmr->mw);
		if (!ret)
			rmr->mw = NULL;
	}
	pthread_mutex_unlock(&rmr->lock);
	if (!ret)
		return 0;
	errno = ret > 0 ? ret : errno;
	ofx_warn("rmr %p: ibv_dealloc_mw: %m", (void *)rmr);
	return -errno;
}

/* Invalidates the handle; the memory goes with the last completion in flight. */
static void rmr_retire(struct ofx_rmr *rmr)
{
	bool release;
	int inflight;

	if (rmr->mw_type == IBV_MW_TYPE_2)
		rmr_index_del(&rmr->obj.ia->rmr_index, rmr);
	atomic_fetch_sub(&rmr->pz->refs, 1);
	ofx_obj_fini(&rmr->obj);
	pthread_mutex_lock(&rmr->lock);
	rmr->dead = true;
	inflight = rmr->inflight;
	release = !inflight;
	pthread_mutex_unlock(&rmr->lock);
	if (release)
		rmr_release(rmr);
	else
		ofx_dbg("rmr %p: freed with %d binds in flight", (void *)rmr, inflight);
}

DAT_RETURN ofx_rmr_free(DAT_RMR_HANDLE h)
{
	struct ofx_rmr *rmr = ofx_rmr_from_handle(h);
	int ret;

	if (!rmr)
		return ofx_invalid_handle(OFX_OBJ_RMR);
	ret = rmr_dealloc(rmr);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_RMR);
	ofx_dbg("rmr %p: free", (void *)rmr);
	rmr_retire(rmr);
	return DAT_SUCCESS;
}

void ofx_rmr_destroy(struct ofx_rmr *rmr)
{
	if (!rmr)
		return;
	rmr_dealloc(rmr);
	rmr_retire(rmr);
}

static void rmr_bind_done(struct ofx_rmr *rmr, bool ok, uint32_t old_rkey)
{
	bool release;

	pthread_mutex_lock(&rmr->lock);
	if (!ok && !rmr->rolled_back) {
		if (rmr->mw)
			rmr->mw->rkey = old_rkey;
		rmr->rkey = old_rkey;
		/* what the device holds now is unknown: an unbind must be posted */
		rmr->bound = rmr->mr != NULL;
		rmr->rolled_back = true;
	}
	if (rmr->inflight > 0)
		rmr->inflight--;
	if (!rmr->inflight)
		rmr->rolled_back = false;
	release = rmr->dead && !rmr->inflight;
	pthread_mutex_unlock(&rmr->lock);
	if (release)
		rmr_release(rmr);
}
