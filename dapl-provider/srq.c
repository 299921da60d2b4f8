/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_EP
#include "srq.h"
#include "lock.h"

#include "dto.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "progress.h"
#include "pz.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *srq_dev_name(const struct ofx_srq *srq)
{
	const struct ofx_ia *ia = srq->obj.ia;

	return ofx_verbs_dev_name(ia->verbs);
}

static const struct ofx_cookie_ops srq_cookie_ops;

static struct ofx_srq_slots *srq_slots_new(uint32_t n, struct ofx_srq *srq)
{
	struct ofx_srq_slots *s = calloc(1, sizeof(*s) + (size_t)n * sizeof(s->slot[0]));
	uint32_t i;

	if (!s)
		return NULL;
	s->n = n;
	for (i = 0; i < n; i++) {
		s->slot[i].ck.owner = &srq->cookie_owner;
		s->slot[i].ck.op = OFX_OP_RECV;
		atomic_init(&s->slot[i].busy, false);
	}
	return s;
}

static void srq_slots_free(struct ofx_srq_slots *s)
{
	while (s) {
		struct ofx_srq_slots *older = s->older;

		free(s);
		s = older;
	}
}

/* Arms the verbs limit at the current watermark; srq->lock held. */
static int srq_arm_locked(struct ofx_srq *srq)
{
	struct ibv_srq_attr attr = { .srq_limit = (uint32_t)srq->low_watermark };
	int ret;

	ofx_lock_assert_held(&srq->lock);
	ret = ofx_verbs->modify_srq(srq->srq, &attr, IBV_SRQ_LIMIT);
	if (ret) {
		ofx_warn("srq %p on %s: arm limit %d: %s", (void *)srq, srq_dev_name(srq),
			 srq->low_watermark, strerror(ret));
		return -ret;
	}
	atomic_store(&srq->lw_armed, srq->low_watermark > 0);
	return 0;
}

/* Posts the low-watermark async event (no lock held). */
static void srq_post_lw_event(struct ofx_srq *srq)
{
	struct ofx_ia *ia = srq->obj.ia;
	DAT_EVENT ev;

	if (!ia->async_evd)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_ASYNC_ERROR_EP_BROKEN;
	ev.event_data.asynch_error_event_data.dat_handle = (DAT_HANDLE)&srq->obj;
	ev.event_data.asynch_error_event_data.reason = DAT_SRQ_LOW_WATERMARK_EVENT;
	ofx_evd_post(ia->async_evd, &ev);
}

DAT_RETURN ofx_srq_create(DAT_IA_HANDLE ia_h, DAT_PZ_HANDLE pz_h, DAT_SRQ_ATTR *attr,
			  DAT_SRQ_HANDLE *srq_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_pz *pz = ofx_pz_from_handle(pz_h);
	struct ibv_srq_init_attr_ex init;
	struct ofx_srq *srq;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!pz)
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (!attr)
		return OFX_INVALID_ARG(3);
	if (!srq_p)
		return OFX_INVALID_ARG(4);
	if (!ia->dev_attr.max_srq) {
		ofx_info("device %s has no shared receive queues",
			 ofx_verbs_dev_name(ia->verbs));
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	}
	if (attr->max_recv_dtos <= 0 || attr->max_recv_dtos > ia->dev_attr.max_srq_wr ||
	    attr->max_recv_iov <= 0 || attr->max_recv_iov > ia->dev_attr.max_srq_sge ||
	    attr->low_watermark < 0 || attr->low_watermark >= attr->max_recv_dtos) {
		ofx_err("srq attr: dtos %d (max %d) iov %d (max %d) low watermark %d",
			attr->max_recv_dtos, ia->dev_attr.max_srq_wr, attr->max_recv_iov,
			ia->dev_attr.max_srq_sge, attr->low_watermark);
		return OFX_INVALID_ARG(3);
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		ret = -ENOMEM;
		goto err;
	}
	srq->obj.ia = ia;
	srq->pz = pz;
	srq->cookie_owner.ops = &srq_cookie_ops;
	srq->state = DAT_SRQ_STATE_OPERATIONAL;
	srq->max_recv_dtos = attr->max_recv_dtos;
	srq->max_recv_iov = attr->max_recv_iov;
	srq->low_watermark = attr->low_watermark;
	atomic_init(&srq->outstanding, 0);
	atomic_init(&srq->lw_armed, false);
	pthread_mutex_init(&srq->lock, NULL);

	srq->slots = srq_slots_new((uint32_t)attr->max_recv_dtos, srq);
	if (!srq->slots) {
		ret = -ENOMEM;
		goto err_free;
	}

	memset(&init, 0, sizeof(init));
	init.srq_context = &srq->obj;
	init.attr.max_wr = (uint32_t)attr->max_recv_dtos;
	init.attr.max_sge = (uint32_t)attr->max_recv_iov;
	init.srq_type = IBV_SRQT_BASIC;
	init.pd = pz->pd;
	init.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	errno = 0;
	srq->srq = ofx_verbs->create_srq_ex(ia->verbs, &init);
	if (!srq->srq) {
		const char *why;

		ret = ofx_verbs_create_failed(&why);
		ofx_err("create srq on %s (wr %d sge %d): %s",
			ofx_verbs_dev_name(ia->verbs), attr->max_recv_dtos, attr->max_recv_iov, why);
		goto err_slots;
	}
	srq->verbs_max_wr = init.attr.max_wr;
	if (srq->low_watermark > 0) {
		/* not yet visible to anyone; locked all the same, as the contract says */
		pthread_mutex_lock(&srq->lock);
		ret = srq_arm_locked(srq);
		pthread_mutex_unlock(&srq->lock);
		if (ret)
			goto err_destroy;
	}

	atomic_fetch_add(&pz->refs, 1);
	ofx_obj_init(&srq->obj, OFX_OBJ_SRQ, ia);
	ofx_dbg("srq %p: %s wr %d (verbs %u) sge %d lw %d", (void *)srq, srq_dev_name(srq),
		srq->max_recv_dtos, srq->verbs_max_wr, srq->max_recv_iov, srq->low_watermark);
	*srq_p = (DAT_SRQ_HANDLE)&srq->obj;
	return DAT_SUCCESS;

err_destroy:
	if (ofx_verbs->destroy_srq(srq->srq))
		ofx_warn("srq %p: ibv_destroy_srq after a failed create", (void *)srq);
err_slots:
	srq_slots_free(srq->slots);
err_free:
	pthread_mutex_destroy(&srq->lock);
	free(srq);
err:
	return ofx_dat_status(ret, OFX_OBJ_SRQ);
}

void ofx_srq_destroy(struct ofx_srq *srq)
{
	int ret;

	if (srq->neps)
		ofx_warn("srq %p: destroyed with %zu eps still attached", (void *)srq, srq->neps);
	/* ibv_destroy_srq waits until a running async handler has acked its event */
	ret = ofx_verbs->destroy_srq(srq->srq);
	if (ret)
		ofx_warn("srq %p on %s: ibv_destroy_srq: %s", (void *)srq, srq_dev_name(srq),
			 strerror(ret));
	atomic_fetch_sub(&srq->pz->refs, 1);
	ofx_dbg("srq %p: destroyed, %d receives were still posted", (void *)srq,
		atomic_load(&srq->outstanding));
	ofx_obj_fini(&srq->obj);
	srq_slots_free(srq->slots);
	free(srq->eps);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
}

DAT_RETURN ofx_srq_free(DAT_SRQ_HANDLE h)
{
	struct ofx_srq *srq = ofx_srq_from_handle(h);
	size_t neps;

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	pthread_mutex_lock(&srq->lock);
	neps = srq->neps;
	if (!neps)
		srq->state = DAT_SRQ_STATE_SHUTDOWN;
	pthread_mutex_unlock(&srq->lock);
	if (neps) {
		ofx_dbg("srq %p: free refused, %zu eps use it", (void *)srq, neps);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
	}
	ofx_srq_destroy(srq);
	return DAT_SUCCESS;
}

/* A free slot of the newest generation, scanning from the hint; NULL if none. */
static struct ofx_srq_slot *srq_slot_get(struct ofx_srq *srq)
{
	struct ofx_srq_slots *s = srq->slots;
	uint32_t i, idx;

	for (i = 0; i < s->n; i++) {
		idx = (srq->hint + i) % s->n;
		if (!atomic_load_explicit(&s->slot[idx].busy, memory_order_acquire)) {
			srq->hint = (idx + 1) % s->n;
			atomic_store_explicit(&s->slot[idx].busy, true, memory_order_relaxed);
			return &s->slot[idx];
		}
	}
	return NULL;
}

static void srq_slot_put(struct ofx_srq_slot *slot)
{
	atomic_store_explicit(&slot->busy, false, memory_order_release);
}

/* Re-arms the verbs limit once the posted count is back above the watermark. */
static void srq_maybe_rearm(struct ofx_srq *srq, int posted)
{
	if (atomic_load_explicit(&srq->lw_armed, memory_order_relaxed))
		return;
	pthread_mutex_lock(&srq->lock);
	if (srq->low_watermark > 0 && posted > srq->low_watermark &&
	    !atomic_load(&srq->lw_armed) && srq->state == DAT_SRQ_STATE_OPERATIONAL)
		srq_arm_locked(srq);
	pthread_mutex_unlock(&srq->lock);
}

DAT_RETURN ofx_srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			     DAT_DTO_COOKIE cookie)
{
	struct ofx_srq *srq = ofx_srq_from_handle(h);
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ofx_srq_slot *slot;
	DAT_RETURN status;
	uint64_t total;
	int ret, posted;

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	status = ofx_dto_iov_check(n, iov, srq->max_recv_iov);
	if (status != DAT_SUCCESS)
		return status;
	if (srq->state != DAT_SRQ_STATE_OPERATIONAL)
		return OFX_DAT_ERR(DAT_INVALID_STATE, srq->state == DAT_SRQ_STATE_ERROR ?
				   DAT_INVALID_STATE_SRQ_ERROR : DAT_INVALID_STATE_SRQ_SHUTDOWN);
	total = ofx_dto_iov_total(n, iov);
	if (total > UINT32_MAX)
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);

	if (atomic_load_explicit(&srq->outstanding, memory_order_relaxed) >= srq->max_recv_dtos)
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
	slot = srq_slot_get(srq);
	if (!slot)
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
	slot->ck.user = cookie;
	slot->ck.len = (uint32_t)total;
	slot->ck.flags = OFX_COOKIE_F_OWNER;
	slot->ck.nsge = (uint8_t)n;
	/* counted before the post: its completion may be polled before we return */
	posted = atomic_fetch_add(&srq->outstanding, 1) + 1;

	wr.wr_id = (uintptr_t)&slot->ck;
	wr.sg_list = (struct ibv_sge *)iov;
	wr.num_sge = n;
	ret = ofx_verbs->post_srq_recv(srq->srq, &wr, &bad);
	if (ret) {
		atomic_fetch_sub(&srq->outstanding, 1);
		srq_slot_put(slot);
		ofx_warn("srq %p: post recv: %s", (void *)srq, strerror(-ret));
		return ofx_dat_status(ret, OFX_OBJ_SRQ);
	}
	ofx_dbg_data("srq %p: recv posted, len %u, %d outstanding", (void *)srq, slot->ck.len,
		     posted);
	if (srq->low_watermark > 0)
		srq_maybe_rearm(srq, posted);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param)
{
	struct ofx_srq *srq = ofx_srq_from_handle(h);
	int posted;

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	if (mask & ~DAT_SRQ_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	/* every field is cheap: a valid mask gets them all */
	posted = atomic_load(&srq->outstanding);
	pthread_mutex_lock(&srq->lock);
	param->ia_handle = ofx_ia_dat_handle(srq->obj.ia);
	param->srq_state = srq->state;
	param->pz_handle = (DAT_PZ_HANDLE)srq->pz;
	param->max_recv_dtos = srq->max_recv_dtos;
	param->max_recv_iov = srq->max_recv_iov;
	param->low_watermark = srq->low_watermark;
	param->available_dto_count = posted;
	param->outstanding_dto_count = posted;
	pthread_mutex_unlock(&srq->lock);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT max_recv_dtos)
{
	struct ofx_srq *srq = ofx_srq_from_handle(h);
	struct ofx_srq_slots *grown = NULL;
	int ret = 0;

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	/* DAT 2.0: at least the receives posted now, and above the low watermark */
	if (max_recv_dtos <= 0 || max_recv_dtos > srq->obj.ia->dev_attr.max_srq_wr ||
	    max_recv_dtos < atomic_load(&srq->outstanding) ||
	    (srq->low_watermark > 0 && max_recv_dtos <= srq->low_watermark))
		return OFX_INVALID_ARG(2);
	if (srq->state != DAT_SRQ_STATE_OPERATIONAL)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_ERROR);

	if ((uint32_t)max_recv_dtos > srq->slots->n) {
		grown = srq_slots_new((uint32_t)max_recv_dtos, srq);
		if (!grown)
			return ofx_dat_status(-ENOMEM, OFX_OBJ_SRQ);
	}
	/* a smaller size only lowers our limit: verbs SRQs do not shrink */
	if ((uint32_t)max_recv_dtos > srq->verbs_max_wr) {
		struct ibv_srq_attr attr = { .max_wr = (uint32_t)max_recv_dtos };

		pthread_mutex_lock(&srq->lock);
		ret = ofx_verbs->modify_srq(srq->srq, &attr, IBV_SRQ_MAX_WR);
		pthread_mutex_unlock(&srq->lock);
		if (ret) {
			ofx_err("srq %p on %s: resize to %d: %s", (void *)srq, srq_dev_name(srq),
				max_recv_dtos, strerror(ret));
			free(grown);
			return ofx_dat_status(-ret, OFX_OBJ_SRQ);
		}
		srq->verbs_max_wr = (uint32_t)max_recv_dtos;
	}
	if (grown) {
		/* completions may still name the older slots: they stay until srq_free */
		grown->older = srq->slots;
		srq->slots = grown;
		srq->hint = 0;
	}
	srq->max_recv_dtos = max_recv_dtos;
	ofx_dbg("srq %p: resized to %d (verbs %u)", (void *)srq, max_recv_dtos,
		srq->verbs_max_wr);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT low_watermark)
{
	struct ofx_srq *srq = ofx_srq_from_handle(h);
	bool below = false;
	int ret = 0;

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	if (low_watermark < 0 || low_watermark >= srq->max_recv_dtos)
		return OFX_INVALID_ARG(2);

	pthread_mutex_lock(&srq->lock);
	if (srq->state != DAT_SRQ_STATE_OPERATIONAL) {
		pthread_mutex_unlock(&srq->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_ERROR);
	}
	srq->low_watermark = low_watermark;
	if (!low_watermark) {
		/* limit 0 disarms */
		ret = srq_arm_locked(srq);
	} else if (atomic_load(&srq->outstanding) < low_watermark) {
		/* already below: report now, arm once the consumer posts above it */
		atomic_store(&srq->lw_armed, false);
		below = true;
	} else {
		ret = srq_arm_locked(srq);
	}
	pthread_mutex_unlock(&srq->lock);
	if (below)
		srq_post_lw_event(srq);
	ofx_dbg("srq %p: low watermark %d%s", (void *)srq, low_watermark,
		below ? " (already below)" : "");
	return ofx_dat_status(ret, OFX_OBJ_SRQ);
}

void ofx_srq_limit_reached(struct ofx_srq *srq)
{
	DAT_COUNT lw;

	pthread_mutex_lock(&srq->lock);
	atomic_store(&srq->lw_armed, false); /* verbs disarmed it */
	lw = srq->low_watermark;
	pthread_mutex_unlock(&srq->lock);
	if (lw <= 0) {
		ofx_dbg("srq %p: limit event with no watermark set", (void *)srq);
		return;
	}
	ofx_dbg("srq %p: below low watermark %d (%d posted)", (void *)srq, lw,
		atomic_load(&srq->outstanding));
	srq_post_lw_event(srq);
}

/* ---- the EP table --------------------------------------------------------- */

/* Index of the first entry with qp_num >= `qp_num`; srq->lock held. */
static size_t srq_ep_index(const struct ofx_srq *srq, uint32_t qp_num)
{
	size_t lo = 0, hi = srq->neps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (srq->eps[mid].qp_num < qp_num)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ofx_srq_ep_add(struct ofx_srq *srq, uint32_t qp_num, struct ofx_cookie_owner *ep)
{
	size_t i;

	pthread_mutex_lock(&srq->lock);
	if (srq->state == DAT_SRQ_STATE_SHUTDOWN) {
		pthread_mutex_unlock(&srq->lock);
		return -ESHUTDOWN;
	}
	i = srq_ep_index(srq, qp_num);
	if (i < srq->neps && srq->eps[i].qp_num == qp_num) {
		/* the QP number of an EP still being freed came back: the new one wins */
		ofx_dbg("srq %p: qp 0x%x moves from ep %p to ep %p", (void *)srq, qp_num,
			(void *)srq->eps[i].ep, (void *)ep);
		srq->eps[i].ep = ep;
		pthread_mutex_unlock(&srq->lock);
		return 0;
	}
	if (srq->neps == srq->cap_eps) {
		size_t cap = srq->cap_eps ? srq->cap_eps * 2 : 8;
		struct ofx_srq_ep_ref *eps = realloc(srq->eps, cap * sizeof(*eps));

		if (!eps) {
			pthread_mutex_unlock(&srq->lock);
			return -ENOMEM;
		}
		srq->eps = eps;
		srq->cap_eps = cap;
	}
	memmove(&srq->eps[i + 1], &srq->eps[i], (srq->neps - i) * sizeof(srq->eps[0]));
	srq->eps[i].qp_num = qp_num;
	srq->eps[i].ep = ep;
	srq->neps++;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

void ofx_srq_ep_remove(struct ofx_srq *srq, struct ofx_cookie_owner *ep, struct ofx_evd *recv_evd)
{
	size_t i;

	pthread_mutex_lock(&srq->lock);
	for (i = 0; i < srq->neps && srq->eps[i].ep != ep; i++)
		;
	if (i < srq->neps) {
		memmove(&srq->eps[i], &srq->eps[i + 1], (srq->neps - i - 1) * sizeof(srq->eps[0]));
		srq->neps--;
	}
	pthread_mutex_unlock(&srq->lock);
	/*
	 * A poller that found the EP before it left the table still holds
	 * its recv EVD's lock; once we get that lock it is done with it.
	 */
	if (recv_evd) {
		pthread_mutex_lock(&recv_evd->lock);
		pthread_mutex_unlock(&recv_evd->lock);
	}
}

/*
 * A receive of the SRQ completed (the caller holds the lock of the EVD
 * whose CQ it polls and has copied the slot into `c`): the slot is free
 * again, and the receive is a DTO of the EP whose QP is wc->qp_num, if an
 * EP of this SRQ still has it.
 */
static bool srq_cookie_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *ck,
				const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
				struct ofx_cookie_owner **notify_p)
{
	struct ofx_srq *srq = container_of(owner, struct ofx_srq, cookie_owner);
	struct ofx_cookie recv = *c;
	struct ofx_cookie_owner *ep = NULL;
	size_t i;

	/* the caller has copied the cookie: the slot can be reused now */
	srq_slot_put(container_of(ck, struct ofx_srq_slot, ck));
	atomic_fetch_sub_explicit(&srq->outstanding, 1, memory_order_relaxed);

	pthread_mutex_lock(&srq->lock);
	i = srq_ep_index(srq, wc->qp_num);
	if (i < srq->neps && srq->eps[i].qp_num == wc->qp_num)
		ep = srq->eps[i].ep;
	pthread_mutex_unlock(&srq->lock);
	if (!ep) {
		ofx_dbg("srq receive on qp 0x%x (status %s): no ep any more, dropped", wc->qp_num,
			ibv_wc_status_str(wc->status));
		return false;
	}
	/* the EP's receive from here on, as one from its own ring */
	recv.flags &= (uint8_t)~OFX_COOKIE_F_OWNER;
	return ofx_dto_complete(ep, &recv, wc, ev, notify_p);
}

static const struct ofx_cookie_ops srq_cookie_ops = {
	.complete = srq_cookie_complete,
};
