/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_DTO_H
#define OFX_DTO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <dat2/udat.h>

struct ofx_ep;
struct ofx_rmr;
struct ofx_srq;

/*
 * A cookie describes one posted work request; wr_id is its address.  Each EP
 * owns two rings of them, allocated at EP creation (no allocation on the data
 * path).  A ring has one producer (the consumer thread posting on that EP,
 * DAT EPs are not shared between posting threads) and one retirer (whoever
 * polls the CQ, under the EVD lock); head and tail are atomics so the two need
 * no lock.
 *
 * Send queues complete in order, so a signaled completion for sequence s
 * retires every slot up to s, including unsignaled ones (selective
 * signalling).  The poster forces a signal (OFX_COOKIE_F_INTERNAL: no
 * consumer event) when half the ring is unsignaled so that it never fills.
 */
enum ofx_cookie_op {
	/* the first four in DAT_DTOS order: their completion's operation is the op itself */
	OFX_OP_SEND,
	OFX_OP_RDMA_WRITE,
	OFX_OP_RDMA_READ,
	OFX_OP_RECV,
	OFX_OP_WRITE_IMM,	/* IB extension: RDMA write with immediate */
	OFX_OP_CMP_SWAP,	/* IB extension */
	OFX_OP_FETCH_ADD,	/* IB extension */
	OFX_OP_RTR_SEND,	/* p2p ready-to-receive, never reported */
	OFX_OP_RTR_RECV,
	OFX_OP_RTR_WRITE,
	OFX_OP_RTR_READ,
	OFX_OP_RMR_BIND,	/* memory window bind or invalidate (rmr.c) */
	OFX_OP_SRQ_RECV,	/* receive posted on an SRQ: the slot is the SRQ's (srq.h) */
};

enum ofx_cookie_flags {
	OFX_COOKIE_F_SUPPRESS = 1 << 0,	/* consumer asked for no event on success */
	OFX_COOKIE_F_INTERNAL = 1 << 1,	/* provider's own WR: never a consumer event */
};

struct ofx_cookie {
	union {
		struct ofx_ep *ep;
		struct ofx_srq *srq;	/* OFX_OP_SRQ_RECV: the EP comes from wc->qp_num */
	};
	DAT_DTO_COOKIE user;
	uint64_t seq;
	uint32_t len;		/* posted total (sends/writes report this); RMR bind: old rkey */
	uint8_t op;		/* enum ofx_cookie_op */
	uint8_t flags;		/* enum ofx_cookie_flags */
	uint8_t nsge;		/* recv: segments saved in the EP's recv_sges */
	struct ofx_rmr *rmr;	/* OFX_OP_RMR_BIND: the window; NULL for an internal invalidate */
};

struct ofx_cookie_ring {
	struct ofx_cookie *slots;
	uint32_t size;
	uint32_t unsignaled;	/* producer only: unsignaled posts since last signal */
	_Atomic uint64_t head;	/* next sequence to hand out (producer) */
	_Atomic uint64_t tail;	/* oldest not yet retired (retirer) */
};

int ofx_cookie_ring_init(struct ofx_cookie_ring *ring, uint32_t size, struct ofx_ep *ep);
void ofx_cookie_ring_fini(struct ofx_cookie_ring *ring);
/* Forgets every outstanding slot (after the QP was reset). */
void ofx_cookie_ring_reset(struct ofx_cookie_ring *ring);
/*
 * The three calls below are on every post and completion, so they are
 * inline.  Slot `seq` lives at slots[seq % size].
 */

/* Next free slot with seq filled in, or NULL when the ring is full (a size 0 ring always is). */
static inline struct ofx_cookie *ofx_cookie_ring_reserve(struct ofx_cookie_ring *ring)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	struct ofx_cookie *c;

	if (__builtin_expect(head - tail >= ring->size, 0))
		return NULL;
	c = &ring->slots[head % ring->size];
	c->seq = head;
	return c;
}

/*
 * Makes the slot from the last reserve visible (call after a successful
 * post).  A plain store, not an atomic add: the ring has one producer.
 */
static inline void ofx_cookie_ring_commit(struct ofx_cookie_ring *ring)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);

	atomic_store_explicit(&ring->head, head + 1, memory_order_release);
}

/*
 * Retires every slot up to and including `seq`.  The completion of a work
 * request can be polled by another thread between the post and the poster's
 * commit, so `seq` may equal head here.  Moving tail past head for that
 * short window is deliberate: the commit that follows brings head level
 * again and nothing is lost.
 */
static inline void ofx_cookie_ring_retire(struct ofx_cookie_ring *ring, uint64_t seq)
{
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);

	if (seq >= tail)
		atomic_store_explicit(&ring->tail, seq + 1, memory_order_release);
}

uint32_t ofx_cookie_ring_outstanding(const struct ofx_cookie_ring *ring);

/*
 * Converts one work completion into a DAT event.  Returns true and fills `ev`
 * (all fields except evd_handle) when the consumer must see it; false for
 * internal and suppressed-success completions.  Retires the cookie's ring.
 * When the completion needs EP-level follow-up (RTR arrival, an error on a
 * live EP) `*notify_ep_p` is set and the caller must call
 * ofx_ep_dto_notify(ep, wc) *after* dropping its EVD lock.
 */
bool ofx_dto_convert(const struct ibv_wc *wc, DAT_EVENT *ev, struct ofx_ep **notify_ep_p);
/*
 * The same for any completion, the rare kinds included (errors and flushes,
 * suppressed and internal work, RTR, SRQ receives, extension operations,
 * binds); ofx_dto_convert_inline (dto_inline.h) calls it for everything
 * but the common case.  `slot` is wc->wr_id.
 */
bool ofx_dto_convert_any(const struct ibv_wc *wc, struct ofx_cookie *slot, DAT_EVENT *ev,
			 struct ofx_ep **notify_ep_p);

#endif
