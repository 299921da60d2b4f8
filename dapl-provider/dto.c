/* SPDX-License-Identifier: BSD-2-Clause */
#include "dto.h"
#include "dto_inline.h"

#define OFX_LOG_SUBSYS OFX_SUBSYS_DTO
#include "ia_core.h"
#include "log.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

_Static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <=
	       sizeof(((DAT_EVENT *)0)->event_extension_data),
	       "IB extension event data must fit in event_extension_data");

int ofx_cookie_ring_init(struct ofx_cookie_ring *ring, uint32_t size,
			 struct ofx_cookie_owner *owner)
{
	uint32_t i;

	/* every field set one by one: no memset of the whole ring first */
	ring->slots = NULL;
	ring->size = 0;
	if (size) {
		ring->slots = calloc(size, sizeof(*ring->slots));
		if (!ring->slots)
			return -ENOMEM;
	}
	for (i = 0; i < size; i++)
		ring->slots[i].ring = ring;
	ring->size = size;
	ring->unsignaled = 0;
	ring->owner = owner;
	ring->obj = owner ? owner->obj : NULL;
	atomic_init(&ring->dying, owner && atomic_load(owner->dying));
	atomic_init(&ring->head, 0);
	atomic_init(&ring->tail, 0);
	return 0;
}

void ofx_cookie_ring_fini(struct ofx_cookie_ring *ring)
{
	free(ring->slots);
	ring->slots = NULL;
	ring->size = 0;
}

void ofx_cookie_ring_reset(struct ofx_cookie_ring *ring)
{
	atomic_store_explicit(&ring->tail, atomic_load_explicit(&ring->head, memory_order_relaxed),
			      memory_order_release);
	ring->unsignaled = 0;
}

uint32_t ofx_cookie_ring_outstanding(const struct ofx_cookie_ring *ring)
{
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);

	return head > tail ? (uint32_t)(head - tail) : 0;
}

/* Whether a successful receive came from a send with invalidate (see ia.h). */
static bool dto_recv_invalidated(const struct ofx_cookie_owner *ep, const struct ibv_wc *wc)
{
	if (wc->wc_flags & IBV_WC_WITH_INV)
		return true;
	return ep->obj->ia && ep->obj->ia->wc_inv_kernel_bit && (wc->wc_flags & IBV_WC_IP_CSUM_OK);
}

/*
 * The flags a receive that invalidated one of our windows may carry: one
 * test of them is all a completion pays when there is none.
 */
#define DTO_WC_INV_FLAGS (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)

/*
 * Tells the EP that the peer's send with invalidate freed a window (its
 * ops tell the RMRs), even for a completion that is dropped afterwards
 * (ep_free): the device's window is free regardless.
 */
static void dto_peer_invalidated(struct ofx_cookie_owner *ep, uint8_t op, const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_SUCCESS && op == OFX_OP_RECV && dto_recv_invalidated(ep, wc) &&
	    ep->ops->peer_invalidated)
		ep->ops->peer_invalidated(ep, wc->invalidated_rkey);
}

/* Fills the IB extension part of a DAT_IB_DTO_EVENT. */
static void dto_ext_fill(DAT_EVENT *ev, DAT_IB_EXT_TYPE type, DAT_IB_DTOS op,
			 const struct ibv_wc *wc, bool with_imm)
{
	DAT_IB_EXTENSION_EVENT_DATA *ext = (DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;

	ev->event_number = (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT;
	ev->event_data.dto_completion_event_data.operation = (DAT_DTOS)op;
	ext->type = type;
	ext->status = wc->status == IBV_WC_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
	/* Host order on the wire, as stock does (contract section 5). */
	if (with_imm)
		ext->val.immed.data = (DAT_UINT32)wc->imm_data;
}

bool ofx_dto_settle(struct ofx_cookie_owner *ep, const struct ofx_cookie *c,
		    const struct ibv_wc *wc, struct ofx_cookie_owner **notify_p)
{
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (atomic_load(ep->dying))
		return false; /* ep_free: its flushed work is not reported */
	if (!ok && wc->status != IBV_WC_WR_FLUSH_ERR) {
		/* the consumer gets the status; the owner's notify reports a broken EP */
		ofx_dbg("dto error: qp 0x%x op %u status %s vendor_err 0x%x", wc->qp_num, c->op,
			ibv_wc_status_str(wc->status), wc->vendor_err);
		*notify_p = ep;
	} else if (!ok) {
		ofx_dbg_data("dto flushed: qp 0x%x op %u", wc->qp_num, c->op);
	}
	if (c->flags & OFX_COOKIE_F_INTERNAL)
		return false;
	if (ok && (c->flags & OFX_COOKIE_F_SUPPRESS))
		return false;
	return true;
}

bool ofx_dto_complete(struct ofx_cookie_owner *ep, const struct ofx_cookie *c,
		      const struct ibv_wc *wc, DAT_EVENT *ev, struct ofx_cookie_owner **notify_p)
{
	DAT_DTO_COMPLETION_EVENT_DATA *dto = &ev->event_data.dto_completion_event_data;
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (wc->wc_flags & DTO_WC_INV_FLAGS)
		dto_peer_invalidated(ep, c->op, wc);
	if (!ofx_dto_settle(ep, c, wc, notify_p))
		return false;

	/*
	 * Every field of a plain DTO event is set below; only the extension
	 * area is cleared, so a recycled ring slot never shows stale data.
	 */
	memset(ev->event_extension_data, 0, sizeof(ev->event_extension_data));
	ev->event_number = DAT_DTO_COMPLETION_EVENT;
	dto->ep_handle = (DAT_EP_HANDLE)ep->obj;
	dto->user_cookie = c->user;
	dto->status = ofx_dto_status(wc->status);
	dto->rmr_context = 0;

	switch (c->op) {
	case OFX_OP_SEND:
		dto->operation = DAT_DTO_SEND;
		dto->transfered_length = c->len;
		break;
	case OFX_OP_RDMA_WRITE:
		dto->operation = DAT_DTO_RDMA_WRITE;
		dto->transfered_length = c->len;
		break;
	case OFX_OP_RDMA_READ:
		dto->operation = DAT_DTO_RDMA_READ;
		dto->transfered_length = ok ? wc->byte_len : 0;
		break;
	case OFX_OP_RECV:
		dto->operation = DAT_DTO_RECEIVE;
		dto->transfered_length = ok ? wc->byte_len : 0;
		/* wc->opcode and wc_flags are only valid on success */
		if (ok && wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			dto_ext_fill(ev, DAT_IB_RDMA_WRITE_IMMED_DATA, DAT_IB_DTO_RECV_IMMED, wc,
				     true);
		else if (ok && (wc->wc_flags & IBV_WC_WITH_IMM))
			dto_ext_fill(ev, DAT_IB_RECV_IMMED_DATA, DAT_IB_DTO_RECV_MSG_IMMED, wc,
				     true);
		/* a send with invalidate: the RMR of ours the device just invalidated */
		else if (ok && dto_recv_invalidated(ep, wc))
			dto->rmr_context = wc->invalidated_rkey;
		break;
	case OFX_OP_WRITE_IMM:
		dto->transfered_length = c->len;
		dto_ext_fill(ev, DAT_IB_RDMA_WRITE_IMMED, DAT_IB_DTO_RDMA_WRITE_IMMED, wc, false);
		break;
	case OFX_OP_CMP_SWAP:
		dto->transfered_length = c->len;
		dto_ext_fill(ev, DAT_IB_CMP_AND_SWAP, DAT_IB_DTO_CMP_SWAP, wc, false);
		break;
	case OFX_OP_FETCH_ADD:
		dto->transfered_length = c->len;
		dto_ext_fill(ev, DAT_IB_FETCH_AND_ADD, DAT_IB_DTO_FETCH_ADD, wc, false);
		break;
	default:
		ofx_warn("completion for unknown cookie op %u: qp 0x%x", c->op, wc->qp_num);
		return false;
	}
	return true;
}

bool ofx_dto_convert_any(const struct ibv_wc *wc, struct ofx_cookie *slot, DAT_EVENT *ev,
			 struct ofx_cookie_owner **notify_p)
{
	struct ofx_cookie c;

	if (!slot ||
	    (slot->flags & OFX_COOKIE_F_OWNER ? !slot->owner : !slot->ring || !slot->ring->owner)) {
		ofx_warn("completion with no cookie: qp 0x%x status %s", wc->qp_num,
			 ibv_wc_status_str(wc->status));
		return false;
	}
	/*
	 * A provider's own cookie outside any ring (an RTR, XRC's fence) is
	 * not retired and not reused under us: its owner reads it in place.
	 */
	if ((slot->flags & (OFX_COOKIE_F_OWNER | OFX_COOKIE_F_INTERNAL)) ==
	    (OFX_COOKIE_F_OWNER | OFX_COOKIE_F_INTERNAL) && !slot->ring)
		return slot->owner->ops->complete(slot->owner, slot, slot, wc, ev, notify_p);
	/* Copy first: once retired the slot may be reused by the poster. */
	c = *slot;
	if (c.ring)
		ofx_cookie_ring_retire(c.ring, c.seq);
	if (c.flags & OFX_COOKIE_F_OWNER)
		return c.owner->ops->complete(c.owner, slot, &c, wc, ev, notify_p);
	return ofx_dto_complete(c.ring->owner, &c, wc, ev, notify_p);
}

bool ofx_dto_convert(const struct ibv_wc *wc, DAT_EVENT *ev, struct ofx_cookie_owner **notify_p)
{
	return ofx_dto_convert_inline(wc, ev, notify_p);
}
