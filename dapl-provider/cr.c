/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "cr.h"
#include "cm.h"
#include "ep_cm.h"
#include "ep.h"
#include "ep_conn.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "status.h"
#include "verbs.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* Consumer reject data cap: the IB REJ area (148) minus stock's header. */
#define OFX_REJECT_PDATA_MAX 144

DAT_RETURN ofx_cr_query(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param)
{
	struct ofx_cr *cr = ofx_cr_from_handle(cr_handle);

	if (!cr)
		return ofx_invalid_handle(OFX_OBJ_CR);
	if (mask & ~DAT_CR_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	memset(param, 0, sizeof(*param));
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote_addr;
	param->remote_port_qual = 0;
	param->private_data_size = cr->pdata_len;
	param->private_data = cr->pdata_len ? cr->pdata : NULL;
	param->local_ep_handle = cr->ep ? (DAT_EP_HANDLE)cr->ep : DAT_HANDLE_NULL;
	return DAT_SUCCESS;
}

static void cr_free(struct ofx_cr *cr)
{
	ofx_obj_fini(&cr->obj);
	free(cr);
}

/* Rejects with stock's 4-byte header in front of the consumer's bytes. */
static int cr_send_reject(struct rdma_cm_id *id, const void *pdata, int len)
{
	unsigned char buf[OFX_REJ_HDR_LEN + OFX_REJECT_PDATA_MAX];
	uint32_t hdr = htonl(OFX_REJ_HDR);
	int ret = 0;

	memcpy(buf, &hdr, sizeof(hdr));
	if (len)
		memcpy(buf + OFX_REJ_HDR_LEN, pdata, len);
	if (ofx_verbs->reject(id, buf, (uint8_t)(OFX_REJ_HDR_LEN + len))) {
		ret = -errno;
		ofx_warn("rdma_reject: %m");
	}
	return ret;
}

/* Takes the CR off its SP's queue; false if someone else already did. */
static bool cr_unlink(struct ofx_cr *cr)
{
	struct ofx_cr_queue *q = cr->queue;
	bool linked;

	if (!q)
		return false; /* orphaned: its SP is gone */

	pthread_mutex_lock(q->lock);
	linked = !ofx_list_empty(&cr->sp_link);
	if (linked)
		ofx_list_del(&cr->sp_link);
	pthread_mutex_unlock(q->lock);
	return linked;
}

/*
 * The request is gone without being accepted on its EP: an RSP's EP is
 * free again, a provider-created one has no further use and is freed.
 */
static void cr_release_ep(struct ofx_cr *cr)
{
	struct ofx_ep *ep = cr->ep;

	if (!ep)
		return;
	cr->ep = NULL;
	if (ep->provider_created) {
		ofx_dbg("cr %p: freeing its provider-created ep %p", (void *)cr, (void *)ep);
		ofx_ep_destroy(ep);
		return;
	}
	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_PASSIVE_PENDING)
		ofx_ep_conn_move(ep, OFX_EP_UNCONNECTED);
	pthread_mutex_unlock(&ep->lock);
}

/* The EP named by the request (RSP or provider-created) may take it. */
static bool cr_ep_ready(const struct ofx_cr *cr, const struct ofx_ep *ep)
{
	if (ep->state == OFX_EP_UNCONNECTED)
		return true;
	return ep == cr->ep && (ep->state == OFX_EP_PASSIVE_PENDING ||
				ep->state == OFX_EP_TENTATIVE_PENDING);
}

DAT_RETURN ofx_cr_accept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT pdata_len,
			 const DAT_PVOID pdata)
{
	struct ofx_cr *cr = ofx_cr_from_handle(cr_handle);
	struct ofx_ep *ep;
	struct ofx_cr_queue *q;
	struct rdma_cm_id *id;
	DAT_RETURN status;
	int ret;

	if (!cr)
		return ofx_invalid_handle(OFX_OBJ_CR);
	ep = ep_handle ? ofx_ep_from_handle(ep_handle) : cr->ep;
	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (pdata_len < 0 || pdata_len > ofx_cm_max_accept_pdata(cr->obj.ia, cr->has_hdr))
		return OFX_INVALID_ARG(3);
	if (pdata_len && !pdata)
		return OFX_INVALID_ARG(4);
	q = cr->queue;
	if (!q) {
		ofx_info("cr %p: its psp was freed, the request refused: accept fails",
			 (void *)cr);
		cr_free(cr);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	}

	pthread_mutex_lock(q->lock);
	pthread_mutex_lock(&ep->lock);
	/* an EP that cannot be attached yet (no PZ) leaves the request pending */
	status = cr_ep_ready(cr, ep) ? ofx_ep_attach(ep) :
				       OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	if (status != DAT_SUCCESS) {
		pthread_mutex_unlock(&ep->lock);
		pthread_mutex_unlock(q->lock);
		return status;
	}
	if (cr->dead) {
		ret = -ECONNABORTED;
		ofx_info("cr %p: the peer is gone, accept fails", (void *)cr);
	} else {
		struct ofx_conn_req req = {
			.cm_id = cr->cm_id,
			.remote_addr = &cr->remote_addr,
			.param = cr->req_param,
			.has_hdr = cr->has_hdr,
			.hdr = cr->hdr,
			.local_qual = q->conn_qual,
		};

		ret = ofx_cm_accept(ep, &req, pdata, pdata_len);
		cr->cm_id = req.cm_id;	/* NULL: the EP's now */
	}
	ofx_list_del(&cr->sp_link);
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_unlock(q->lock);

	if (!ret) {
		/* an XRC accept went out as a REJ (xrc.h): the id is done */
		if (cr->cm_id)
			ofx_verbs->destroy_id(cr->cm_id);
		/* accepted on the consumer's own EP: the provider's goes */
		if (cr->ep == ep)
			ep->provider_created = false;
		cr_release_ep(cr);
		cr_free(cr);
		return DAT_SUCCESS;
	}
	/*
	 * The request cannot be served any more: refuse it and drop the CR.
	 * A peer whose stream ended under rdma_accept (-ECONNRESET, iWARP)
	 * needs no REJ: its id is over and rdma_reject would fail.
	 */
	id = cr->cm_id;
	cr->cm_id = NULL;
	if (id) {
		if (ret != -ECONNRESET)
			cr_send_reject(id, NULL, 0);
		ofx_verbs->destroy_id(id);
	}
	cr_release_ep(cr);
	cr_free(cr);
	/* the peer gone: the request is, not the consumer's arguments */
	return ret == -ECONNABORTED || ret == -ECONNRESET ?
		       OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE) :
		       ofx_dat_status(ret, OFX_OBJ_CR);
}

DAT_RETURN ofx_cr_reject(DAT_CR_HANDLE cr_handle, DAT_COUNT pdata_len, const DAT_PVOID pdata)
{
	struct ofx_cr *cr = ofx_cr_from_handle(cr_handle);
	int ret;

	if (!cr)
		return ofx_invalid_handle(OFX_OBJ_CR);
	if (pdata_len < 0 || pdata_len > OFX_REJECT_PDATA_MAX)
		return OFX_INVALID_ARG(2);
	if (pdata_len && !pdata)
		return OFX_INVALID_ARG(3);
	cr_unlink(cr);
	ret = 0;
	if (cr->cm_id) { /* else orphaned: refused already */
		ret = cr_send_reject(cr->cm_id, pdata, pdata_len);
		ofx_verbs->destroy_id(cr->cm_id);
		cr->cm_id = NULL;
	}
	cr_release_ep(cr);
	cr_free(cr);
	return ofx_dat_status(ret, OFX_OBJ_CR);
}

/* Both queues' locks, lower address first (two handoffs in opposite directions). */
static void cr_lock_pair(struct ofx_cr_queue *a, struct ofx_cr_queue *b)
{
	if (a > b) {
		struct ofx_cr_queue *t = a;

		a = b;
		b = t;
	}
	pthread_mutex_lock(a->lock);
	pthread_mutex_lock(b->lock);
}

/*
 * DAT 2.0 dat_cr_handoff.  The request moves to the other PSP of this IA
 * listening on `qual` (its queue's find_psp): a new CR object takes over the
 * cm_id (whose context becomes that PSP's handler) and is announced on its
 * CR EVD; the old handle is freed.  Done under both queues' locks so that
 * the progress thread, which finds a CR through its id's context under the
 * SP's lock, sees it on exactly one SP.  A CR bound to an EP (RSP) cannot
 * move.
 */
DAT_RETURN ofx_cr_handoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL qual)
{
	struct ofx_cr *cr = ofx_cr_from_handle(cr_handle);
	struct ofx_cr_queue *from, *to;
	struct ofx_ia *ia;
	struct ofx_cr *moved;
	int ret = 0;

	if (!cr)
		return ofx_invalid_handle(OFX_OBJ_CR);
	if (cr->ep || !cr->queue)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	from = cr->queue;
	ia = cr->obj.ia;
	to = from->find_psp(from, qual);
	if (!to) {
		ofx_dbg("cr %p: no other psp on qual %llu for the handoff", (void *)cr,
			(unsigned long long)qual);
		return OFX_INVALID_ARG(2);
	}
	moved = calloc(1, sizeof(*moved));
	if (!moved)
		return ofx_dat_status(-ENOMEM, OFX_OBJ_CR);
	/* ia->obj_lock comes before any object lock: link it in first */
	ofx_obj_init(&moved->obj, OFX_OBJ_CR, ia);
	ofx_list_init(&moved->sp_link);

	cr_lock_pair(from, to);
	if (!to->listening || ofx_list_empty(&cr->sp_link)) {
		/* the target is being freed, or the source tore this CR down */
		ret = -EINVAL;
		goto err_unlock;
	}
	memcpy((char *)moved + sizeof(moved->obj), (char *)cr + sizeof(cr->obj),
	       sizeof(*cr) - sizeof(cr->obj));
	moved->queue = to;
	ofx_list_init(&moved->sp_link);
	ofx_list_add_tail(&to->crs, &moved->sp_link);
	if (ofx_evd_post_cr(to->evd, to->handle, (DAT_IA_ADDRESS_PTR)&ia->addr, to->conn_qual,
			    moved)) {
		ofx_list_del(&moved->sp_link);
		ret = -ENOSPC;
		goto err_unlock;
	}
	ofx_list_del(&cr->sp_link);
	if (moved->cm_id)
		ofx_cm_id_set_handler(moved->cm_id, to->cm_handler);
	cr->cm_id = NULL;
	pthread_mutex_unlock(to->lock);
	pthread_mutex_unlock(from->lock);
	ofx_dbg("cr %p handed off from qual %llu to qual %llu as cr %p", (void *)cr,
		(unsigned long long)from->conn_qual, (unsigned long long)qual, (void *)moved);
	cr_free(cr);
	return DAT_SUCCESS;

err_unlock:
	pthread_mutex_unlock(to->lock);
	pthread_mutex_unlock(from->lock);
	cr_free(moved);
	if (ret == -ENOSPC)
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	return OFX_INVALID_ARG(2);
}

void ofx_cr_orphan(struct ofx_cr *cr)
{
	if (cr->cm_id) {
		cr_send_reject(cr->cm_id, NULL, 0);
		ofx_verbs->destroy_id(cr->cm_id);
		cr->cm_id = NULL;
	}
	cr_release_ep(cr);
	cr->queue = NULL;
	cr->dead = true;
	ofx_dbg("cr %p: orphaned by its psp's free", (void *)cr);
}

void ofx_cr_destroy(struct ofx_cr *cr)
{
	cr_unlink(cr);
	if (cr->cm_id) {
		cr_send_reject(cr->cm_id, NULL, 0);
		ofx_verbs->destroy_id(cr->cm_id);
		cr->cm_id = NULL;
	}
	cr_release_ep(cr);
	cr_free(cr);
}
