/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_DTO_INLINE_H
#define OFX_DTO_INLINE_H

/*
 * The data-path half of ofx_dto_convert(), inline so that the CQ drain loop
 * (evd.c) converts the common completion without a call.  A consumer DTO's
 * cookie finds everything in its ring: the tail to retire, the owner's obj
 * for the event's ep_handle and the copy of its dying flag.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <dat2/udat.h>
#include "dto.h"
#include "obj.h"

/*
 * The operations whose successful completion dto_convert_plain handles are
 * the first four, numbered as their DAT_DTOS.
 */
_Static_assert(OFX_OP_SEND == (int)DAT_DTO_SEND && OFX_OP_RDMA_WRITE == (int)DAT_DTO_RDMA_WRITE &&
	       OFX_OP_RDMA_READ == (int)DAT_DTO_RDMA_READ && OFX_OP_RECV == (int)DAT_DTO_RECEIVE,
	       "the plain cookie ops must be numbered as DAT_DTOS");
/* Receive flags that need ofx_dto_convert_any (immediate data, invalidation). */
#define DTO_RECV_SPECIAL_FLAGS (IBV_WC_WITH_IMM | IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)

/*
 * Whether a completion is the common kind: a success of a consumer's send,
 * RDMA write or read, or of a receive without immediate data or
 * invalidation, with no cookie flag (suppressed successes are not reported,
 * internal WRs never, owners' WRs are their owners' to convert).  A
 * receive's wc->opcode is valid here: on success.
 */
static inline bool dto_is_plain(const struct ibv_wc *wc, const struct ofx_cookie *slot)
{
	unsigned int kind;

	if (ofx_unlikely(wc->status != IBV_WC_SUCCESS || !slot))
		return false;
	/* op and flags side by side: one load, one compare (flags 0, op < RECV) */
	kind = slot->op | (unsigned int)slot->flags << 8;
	if (ofx_likely(kind < OFX_OP_RECV))
		return true;
	return kind == OFX_OP_RECV && wc->opcode == IBV_WC_RECV &&
	       !(wc->wc_flags & DTO_RECV_SPECIAL_FLAGS);
}

/*
 * The data-path conversion of a dto_is_plain() completion: the same event
 * ofx_dto_convert_any would build, with only the branches these can take.
 */
static inline bool dto_convert_plain(const struct ibv_wc *wc, const struct ofx_cookie *slot,
				     DAT_EVENT *ev)
{
	DAT_DTO_COMPLETION_EVENT_DATA *dto = &ev->event_data.dto_completion_event_data;
	/* read before the retire (a release store): the poster may reuse the slot */
	struct ofx_cookie_ring *ring = slot->ring;
	DAT_DTO_COOKIE user = slot->user;
	uint32_t len = slot->len;
	uint8_t op = slot->op;

	ofx_cookie_ring_retire(ring, slot->seq);
	if (ofx_unlikely(atomic_load(&ring->dying)))
		return false; /* ep_free: its flushed work is not reported */

	memset(ev->event_extension_data, 0, sizeof(ev->event_extension_data));
	ev->event_number = DAT_DTO_COMPLETION_EVENT;
	dto->ep_handle = (DAT_EP_HANDLE)ring->obj;
	dto->user_cookie = user;
	dto->status = DAT_DTO_SUCCESS;
	dto->rmr_context = 0;
	dto->operation = (DAT_DTOS)op;
	/* sends and writes report what was posted, reads and receives what arrived */
	dto->transfered_length = op <= OFX_OP_RDMA_WRITE ? len : wc->byte_len;
	return true;
}

/* ofx_dto_convert() (dto.h), inline. */
static inline bool ofx_dto_convert_inline(const struct ibv_wc *wc, DAT_EVENT *ev,
					  struct ofx_cookie_owner **notify_p)
{
	struct ofx_cookie *slot = (struct ofx_cookie *)(uintptr_t)wc->wr_id;

	*notify_p = NULL;
	if (ofx_likely(dto_is_plain(wc, slot)))
		return dto_convert_plain(wc, slot, ev);
	return ofx_dto_convert_any(wc, slot, ev, notify_p);
}

#endif
