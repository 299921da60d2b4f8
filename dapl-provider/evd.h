/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EVD_H
#define OFX_EVD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "obj.h"
#include "verbs.h"
#include "wait.h"

struct ofx_cookie_owner;

struct ofx_cno;

/* CQs an EVD may have moved away from (each move at least doubles the depth). */
#define OFX_EVD_OLD_CQS 16

/*
 * An event dispatcher.  Every EVD has a ring of pending DAT events and an
 * eventfd; EVDs with DAT_EVD_DTO_FLAG or DAT_EVD_RMR_BIND_FLAG also own a
 * verbs CQ with its own completion channel.
 *
 * Waiting happens in the caller's thread: evd_wait drains the CQ into the
 * ring, arms the CQ, drains again, then poll()s the completion channel fd and
 * the eventfd together.  Producers in other threads (the progress thread
 * posting CM or async events, another EVD's poller completing an RTR) write
 * the eventfd after queueing, so any stream merging works, DTO with
 * CONNECTION included.
 *
 * An EVD attached to a CNO triggers it when an event is queued while the
 * EVD is enabled and nobody waits on it directly; for a CQ-backed EVD the
 * IA's progress engine watches the completion channel while attached.
 *
 * `lock` is a leaf lock except for the attached CNO's lock, which is taken
 * under it to trigger (cno.h), and the progress engine's, taken under it to
 * register or drop the channel (never waiting: see evd_watch_locked);
 * nothing else is taken while it is held.
 */
struct ofx_evd {
	struct ofx_obj obj;
	DAT_EVD_FLAGS flags;

	pthread_mutex_t lock;
	DAT_EVENT *ring;	/* qlen slots, guarded by lock */
	DAT_COUNT qlen;
	DAT_COUNT head;		/* index of the oldest event */
	DAT_COUNT count;	/* events queued */
	bool waiter;		/* a thread is inside evd_wait */
	bool enabled;
	bool waitable;
	bool catastrophic;	/* async EVD overflowed: wait/dequeue refuse */
	int wake_fd;		/* eventfd */

	struct ibv_comp_channel *channel;	/* DTO/RMR_BIND EVDs only */
	/*
	 * The CQ new QPs are created on.  On a device that cannot resize CQs
	 * (siw) the EVD moves to a larger CQ instead; the CQs before it stay
	 * in old_cqs, polled and armed with it, until the EVD is freed, since
	 * the QPs created on them still complete there.  cq, old_cqs and the
	 * counts change under lock only (ofx_evd_reserve_cqes).
	 */
	struct ibv_cq *cq;
	struct ibv_cq *old_cqs[OFX_EVD_OLD_CQS];
	int n_old_cqs;
	bool cq_fixed_size;	/* resize_cq failed once: move instead */
	int cq_depth;		/* of cq */
	int cq_reserved;	/* WRs the attached EPs can have outstanding; lock */
	int poll_batch;		/* completions per ibv_poll_cq (cq_batch, fixed at create) */
	/*
	 * The dequeue's fast path, under lock (evd_fast_path_update): cq's
	 * poll resolved (verbs.h) while cq is the only CQ, the EVD is not
	 * catastrophic and poll_first > 1, else NULL (one test for them
	 * all); poll_first is min(qlen, poll_batch), what a poll into the
	 * empty ring asks for.
	 */
	ofx_verbs_poll_cq_fn cq_poll;
	int poll_first;

	/* drains that are calling owners' notify ops (dto.h) outside the lock */
	atomic_int notify_inflight;
	struct ofx_waiter notify_idle;	/* woken when notify_inflight drops to 0 */
	atomic_int notify_waiters;	/* in ofx_evd_wait_notify_idle's wait: wake them */

	struct ofx_cno *cno;	/* guarded by lock; see evd_attach_cno() */
	/*
	 * The progress engine watches the completion channel while a CNO is
	 * attached or someone awaits a completion here (channel_watchers:
	 * ofx_evd_watch_channel); both under lock.  The engine's handler
	 * drops the watch once neither holds.
	 */
	int channel_watchers;
	bool channel_watched;
	atomic_int refs;	/* EPs, SPs, SRQs that reference this EVD */
};
OFX_DEFINE_FROM_HANDLE(evd, EVD)

/* DAT entry points */
DAT_RETURN ofx_evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_CNO_HANDLE cno,
			  DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd_p);
DAT_RETURN ofx_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param);
DAT_RETURN ofx_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno);
DAT_RETURN ofx_evd_enable(DAT_EVD_HANDLE evd);
DAT_RETURN ofx_evd_disable(DAT_EVD_HANDLE evd);
DAT_RETURN ofx_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
			DAT_EVENT *event, DAT_COUNT *nmore);
DAT_RETURN ofx_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen);
DAT_RETURN ofx_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *event);
DAT_RETURN ofx_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event);
DAT_RETURN ofx_evd_free(DAT_EVD_HANDLE evd);
DAT_RETURN ofx_evd_set_unwaitable(DAT_EVD_HANDLE evd);
DAT_RETURN ofx_evd_clear_unwaitable(DAT_EVD_HANDLE evd);

/*
 * Internal create (ia_open makes the async EVD with DAT_EVD_ASYNC_FLAG, which
 * dat_evd_create refuses).  Returns 0 or a negative errno.
 */
int ofx_evd_create_internal(struct ofx_ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS flags,
			    struct ofx_evd **evd_p);
/* Frees regardless of references (ia_close cleanup). */
void ofx_evd_destroy(struct ofx_evd *evd);

/*
 * Someone awaits a completion on this EVD's CQ that the consumer may not be
 * polling for (a passive p2p EP's RTR, an XRC connection's fence): from now
 * until the matching ofx_evd_unwatch_channel the progress thread is woken
 * by the completion channel and drains the CQ into the ring.  The awaited
 * completion reaches its owner on the way, through the notify op its
 * cookie declares (dto.h); the rest stay queued for the consumer.  Watches
 * are counted.  No polling timer: the watcher keeps its own deadline.
 * Call before the awaited work request is posted (the CQ is armed here).
 * Any thread; the owner's lock may be held (the notify op takes it, but
 * only after the drain dropped evd->lock).  Returns 0 or a negative errno
 * (the channel could not be watched); with no progress engine, 0 and
 * nothing is watched.
 */
int ofx_evd_watch_channel(struct ofx_evd *evd);
void ofx_evd_unwatch_channel(struct ofx_evd *evd);

/*
 * Queues a copy of `ev` (evd_handle is filled in here) and wakes a waiter.
 * Any thread.  Returns -ENOSPC when the ring is full: the event is dropped,
 * a DAT_ASYNC_ERROR_EVD_OVERFLOW is posted to the IA's async EVD (or, for the
 * async EVD itself, it is marked catastrophic) and a warning is logged.
 */
int ofx_evd_post(struct ofx_evd *evd, const DAT_EVENT *ev);

/* Convenience builders on top of ofx_evd_post(). */
int ofx_evd_post_conn(struct ofx_evd *evd, DAT_EVENT_NUMBER num, DAT_EP_HANDLE ep,
		      DAT_COUNT pdata_len, const void *pdata);
int ofx_evd_post_cr(struct ofx_evd *evd, DAT_SP_HANDLE sp, DAT_IA_ADDRESS_PTR local_addr,
		    DAT_CONN_QUAL qual, DAT_CR_HANDLE cr);
int ofx_evd_post_async(struct ofx_evd *evd, DAT_EVENT_NUMBER num, DAT_HANDLE handle);
/*
 * Posts an asynchronous error to `ia`'s async EVD (any thread); nothing if
 * the IA has none.  Here rather than in ia.c: the async EVD is an EVD, and
 * every object below the IA API can post to it without calling up.
 */
void ofx_ia_post_async(struct ofx_ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE handle);

/*
 * Polls up to the ring's free space of CQ entries into the ring (batched
 * ibv_poll_cq), converting with ofx_dto_convert().  Takes evd->lock itself;
 * runs the notify op of each owner it returned after unlocking.  Returns the
 * number of events added or a negative errno.
 */
int ofx_evd_drain_cq(struct ofx_evd *evd);
/*
 * The look of an owner awaiting one internal work request of its own, an
 * RTR, outside any ring (wr_id: its cookie): polls one completion.  1 when
 * it is that one: it is the caller's in *wc, never an event, and no notify
 * op runs for it (the caller settles it).  0 otherwise: the CQ was drained
 * as ofx_evd_drain_cq does (a completion in the way first), which hands the
 * awaited one, if it was there, to its owner's notify op; also 0 with no
 * CQ, or a ring too full to take a completion in the way.  A negative errno
 * if the poll failed.
 */
int ofx_evd_take_own(struct ofx_evd *evd, uint64_t wr_id, struct ibv_wc *wc);
/*
 * What ofx_evd_take_own_nested left for its caller to finish once it holds
 * no EP lock (ofx_evd_take_later): a completion in the way, queued, whose
 * owner's notify op may take an EP lock; or a ring too full to take one.
 */
struct ofx_evd_later {
	struct ofx_evd *evd;			/* NULL: nothing left */
	struct ofx_cookie_owner *owner;		/* the queued completion's notify op, or NULL */
	struct ibv_wc wc;
};
/*
 * ofx_evd_take_own for a caller that holds its EP's lock (ep.h: the EVD
 * lock ranks below it): the same look, 1 when the caller's completion came
 * first.  Otherwise 0 (or a negative errno), and whatever the look could not
 * finish under that lock is in *later (later->evd NULL when nothing is):
 * the caller runs ofx_evd_take_later after dropping its lock, then looks
 * again the unlocked way.
 */
int ofx_evd_take_own_nested(struct ofx_evd *evd, uint64_t wr_id, struct ibv_wc *wc,
			    struct ofx_evd_later *later);
/* Finishes ofx_evd_take_own_nested's leftovers (no EP or EVD lock held). */
void ofx_evd_take_later(struct ofx_evd_later *later);
/*
 * ofx_evd_drain_cq, then whether the CQ is known empty: false when the ring
 * filled up (CQEs may remain behind it).  NULL-safe.
 */
bool ofx_evd_drain_all(struct ofx_evd *evd);
/*
 * An owner (an EP) is gone from the CQs (its QP destroyed, its completions
 * dropped from now on): ofx_evd_drain_all, then ofx_evd_wait_notify_idle,
 * the drain's lock ordering the wait as the latter's own would.
 */
bool ofx_evd_drain_owner_gone(struct ofx_evd *evd);
/*
 * A wait on the EVD's completions where no progress engine drains them
 * (XRC teardown at ia_close, after the engine stopped): drains the CQs
 * (the owners' notify ops run), and until done(arg) holds after a drain
 * waits in poll() on the completion channel, the core of evd_wait (the CQs
 * armed between two drains).  0 once done, -ETIMEDOUT at the
 * CLOCK_MONOTONIC deadline, or a negative errno (-ENODEV: no CQ).  `done`
 * runs with no EVD lock held.  Takes the channel's events from a consumer
 * waiting on the EVD meanwhile.
 */
int ofx_evd_wait_cq(struct ofx_evd *evd, bool (*done)(void *arg), void *arg,
		    uint64_t deadline_ns);

/*
 * An EP reserves room in the CQ for every work request it can have
 * outstanding on it (`n`) before its QP is created, so the device never
 * drops a completion because the consumer asked for a small EVD.  When the
 * reservations exceed the depth the CQ grows (ibv_resize_cq, never shrinks);
 * where the device cannot resize, the EVD moves to a new CQ deep enough for
 * all reservations (see old_cqs).  The ring keeps its qlen: a drain takes
 * what fits and the rest waits in the CQ.  Returns 0, or -ENOSPC (more than
 * the device's max_cqe, or too many moves) / the CQ creation's error, with
 * nothing reserved.
 */
int ofx_evd_reserve_cqes(struct ofx_evd *evd, int n);
/* The CQ a new QP of an EP that reserved on `evd` is created on. */
struct ibv_cq *ofx_evd_cq(struct ofx_evd *evd);
/* The same for any side of a QP: `evd` may be NULL (the IA's empty CQ then). */
struct ibv_cq *ofx_evd_qp_cq(struct ofx_ia *ia, struct ofx_evd *evd);
void ofx_evd_unreserve_cqes(struct ofx_evd *evd, int n);

/*
 * Returns once no drain of `evd` is still calling a notify op for an owner
 * (an EP) that it found before the caller's change (EP teardown).  Bounded by
 * the notify calls in flight; a stuck one is reported every few seconds.
 */
void ofx_evd_wait_notify_idle(struct ofx_evd *evd);

/* Takes/drops a reference held by an EP, SP or SRQ. */
void ofx_evd_get(struct ofx_evd *evd);
void ofx_evd_put(struct ofx_evd *evd);

#endif
