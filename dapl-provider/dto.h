/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_DTO_H
#define OFX_DTO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <dat2/udat.h>

#include "status.h"
#include "util.h"

struct ofx_obj;
struct ofx_cookie;
struct ofx_cookie_owner;

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
 *
 * Completions are converted here for the consumer's DTOs alone (the ops
 * below, inline for the common ones: dto_inline.h).  Any other work request
 * is its owner's (OFX_COOKIE_F_OWNER): the cookie names a struct
 * ofx_cookie_owner, whose ops complete it.  The completion layer knows no
 * owner by name: an EP, an RMR, an SRQ and XRC each bring their own ops.
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
};

enum ofx_cookie_flags {
	OFX_COOKIE_F_SUPPRESS = 1 << 0,	/* consumer asked for no event on success */
	OFX_COOKIE_F_INTERNAL = 1 << 1,	/* provider's own WR: never a consumer event */
	OFX_COOKIE_F_OWNER = 1 << 2,	/* owner's WR: owner->ops completes it, op is the owner's */
};

/*
 * What an owner of work requests does with their completions.  Every hook
 * runs in whichever thread polls the CQ.
 */
struct ofx_cookie_ops {
	/*
	 * An OFX_COOKIE_F_OWNER completion, under the EVD lock: the contract of
	 * ofx_dto_convert_any.  `c` is a copy of the slot, taken before its
	 * ring retired it (a ring slot may be reused at once); `slot` is the
	 * cookie itself, for an owner whose cookies live in its own memory.
	 * An internal cookie outside a ring (OFX_COOKIE_F_INTERNAL, no ring)
	 * is not copied: `c` is `slot`.
	 * A cookie in a ring (c->ring) has been retired already.
	 */
	bool (*complete)(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
			 const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
			 struct ofx_cookie_owner **notify_p);
	/*
	 * The follow-up a conversion asked for with *notify_p (an RTR
	 * arrived, an error on a live EP).  Called without EVD locks; the EVD
	 * counts it in flight (ofx_evd_wait_notify_idle).
	 */
	void (*notify)(struct ofx_cookie_owner *owner, const struct ibv_wc *wc);
	/*
	 * A receive of the owner's completed from the peer's send with
	 * invalidate of `rkey` (a window of ours, maybe), even when the
	 * completion is dropped afterwards.  Under the EVD lock.
	 */
	void (*peer_invalidated)(struct ofx_cookie_owner *owner, uint32_t rkey);
};

/*
 * Whose work requests cookies are: embedded in the owner, which
 * container_of()s back from it.  The owner of a ring (an EP) also says what
 * its DTO events name and when they stop being reported; an owner of its
 * own work requests only (an RMR, an SRQ) leaves obj and dying NULL.
 */
struct ofx_cookie_owner {
	const struct ofx_cookie_ops *ops;
	struct ofx_obj *obj;		/* ring owner: ep_handle of its DTO events */
	const _Atomic bool *dying;	/* ring owner: set, its completions are dropped */
};

struct ofx_cookie_ring;

struct ofx_cookie {
	struct ofx_cookie_ring *ring;	/* the slot's ring (set at init); NULL outside rings */
	DAT_DTO_COOKIE user;
	uint64_t seq;
	uint32_t len;		/* posted total (sends/writes report this); RMR bind: old rkey */
	uint8_t op;		/* enum ofx_cookie_op; with OFX_COOKIE_F_OWNER the owner's */
	uint8_t flags;		/* enum ofx_cookie_flags */
	uint8_t nsge;		/* recv: segments saved in the EP's recv_sges */
	struct ofx_cookie_owner *owner;	/* OFX_COOKIE_F_OWNER: whose work request it is */
};

struct ofx_cookie_ring {
	struct ofx_cookie *slots;
	uint32_t size;
	uint32_t unsignaled;	/* producer only: unsignaled posts since last signal */
	_Atomic uint64_t head;	/* next sequence to hand out (producer) */
	_Atomic uint64_t tail;	/* oldest not yet retired (retirer) */
	/*
	 * The completion side's: whose DTOs the ring's are, and, next to
	 * tail so that a completion reads them with no pointer chase, the
	 * owner's obj and a copy of its dying flag (ofx_cookie_ring_set_dying).
	 */
	struct ofx_cookie_owner *owner;
	struct ofx_obj *obj;
	_Atomic bool dying;
};

/*
 * `owner` (obj and dying set) may be NULL for a ring whose completions are
 * never converted.
 */
int ofx_cookie_ring_init(struct ofx_cookie_ring *ring, uint32_t size,
			 struct ofx_cookie_owner *owner);
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

	if (ofx_likely(seq >= tail))
		atomic_store_explicit(&ring->tail, seq + 1, memory_order_release);
}

uint32_t ofx_cookie_ring_outstanding(const struct ofx_cookie_ring *ring);

/* The owner's dying flag changed: the ring's copy follows (the owner sets both). */
static inline void ofx_cookie_ring_set_dying(struct ofx_cookie_ring *ring, bool dying)
{
	atomic_store(&ring->dying, dying);
}

/*
 * Converts one work completion into a DAT event.  Returns true and fills `ev`
 * (all fields except evd_handle) when the consumer must see it; false for
 * internal and suppressed-success completions.  Retires the cookie's ring.
 * When the completion needs follow-up by its owner (RTR arrival, an error on
 * a live EP) `*notify_p` is set and the caller must call
 * (*notify_p)->ops->notify(*notify_p, wc) *after* dropping its EVD lock.
 */
bool ofx_dto_convert(const struct ibv_wc *wc, DAT_EVENT *ev, struct ofx_cookie_owner **notify_p);
/*
 * The same for any completion, the rare kinds included (errors and flushes,
 * suppressed and internal work, extension operations, owners' work
 * requests); ofx_dto_convert_inline (dto_inline.h) calls it for everything
 * but the common case.  `slot` is wc->wr_id.
 */
bool ofx_dto_convert_any(const struct ibv_wc *wc, struct ofx_cookie *slot, DAT_EVENT *ev,
			 struct ofx_cookie_owner **notify_p);

/*
 * For owners' complete ops.  ofx_dto_settle: the common end of a completion
 * of work on `ep`'s queues (a ring owner): false when it is not reported
 * (the owner dying, an internal cookie, a suppressed success); an error on
 * it (not a flush) sets *notify_p = ep.  ofx_dto_complete: a consumer DTO
 * (c->op one of enum ofx_cookie_op) done on `ep`, converted as any in a
 * ring of its (a shared receive queue's receive: the ring's work is
 * retired by the caller).
 */
bool ofx_dto_settle(struct ofx_cookie_owner *ep, const struct ofx_cookie *c,
		    const struct ibv_wc *wc, struct ofx_cookie_owner **notify_p);
bool ofx_dto_complete(struct ofx_cookie_owner *ep, const struct ofx_cookie *c,
		      const struct ibv_wc *wc, DAT_EVENT *ev, struct ofx_cookie_owner **notify_p);

/*
 * The work request itself failed: neither a success nor a flush (which only
 * says the QP had gone to error before the request's turn).
 */
static inline bool ofx_wc_failed(const struct ibv_wc *wc)
{
	return wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR;
}

/* ---- segment lists of posts (EP and SRQ) ---------------------------------- */

/*
 * Each segment length is 32 bits: only a sum of several can pass UINT32_MAX.
 * One segment is the common case, so it is not a loop (which the compiler
 * would vectorise, at a cost for short lists).
 */
static inline uint64_t ofx_dto_iov_total(DAT_COUNT n, const DAT_LMR_TRIPLET *iov)
{
	uint64_t total;

	if (ofx_likely(n == 1))
		return iov[0].segment_length;
	total = 0;
	for (DAT_COUNT i = 0; i < n; i++)
		total += iov[i].segment_length;
	return total;
}

/*
 * The segment list's checks (arguments 2 and 3 of a post to an EP or an
 * SRQ).  One segment, the common case, is in range whenever the queue takes
 * any: three tests, and no error code prepared on the way.
 */
static inline DAT_RETURN ofx_dto_iov_check(DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_COUNT max)
{
	if (ofx_likely(n == 1 && max > 0 && iov != NULL))
		return DAT_SUCCESS;
	if (n < 0 || n > max)
		return OFX_INVALID_ARG(2);
	if (n && !iov)
		return OFX_INVALID_ARG(3);
	return DAT_SUCCESS;
}

#endif
