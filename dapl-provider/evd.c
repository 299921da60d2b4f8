/* SPDX-License-Identifier: BSD-2-Clause */
#include "evd.h"
#include "lock.h"

#define OFX_LOG_SUBSYS OFX_SUBSYS_EVD
#include "cno.h"
#include "dto.h"
#include "dto_inline.h"
#include "ia_core.h"
#include "log.h"
#include "progress.h"
#include "status.h"
#include "verbs.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

/*
 * Notes on the design (see also evd.h):
 *  - The ring is the only truth about pending events; wake_fd and the
 *    completion channel only say "look again", so spurious wakeups are
 *    harmless and every wakeup re-checks the ring under the lock.
 *  - Producers write wake_fd only while a waiter is inside evd_wait; both
 *    sides decide under evd->lock, so a wakeup cannot be lost.
 *  - An event queued on an enabled EVD that nobody waits on directly
 *    triggers the attached CNO (cno.c).  A CNO-attached EVD with a CQ has
 *    its completion channel watched by the IA's progress engine while
 *    attached, which drains the CQ into the ring and then triggers; so
 *    has one while a completion nobody may poll for is awaited
 *    (ofx_evd_watch_channel), which the drain hands to its owner.
 *  - CQ-backed EVDs cannot grow beyond the CQ depth with evd_resize.  The
 *    CQ itself grows when EPs reserve more work requests than it holds
 *    (ofx_evd_reserve_cqes), or the EVD moves to a bigger CQ where the
 *    device cannot resize; a ring smaller than the CQ is harmless:
 *    completions that do not fit stay in the CQ.
 */

/* Upper bound of work completions polled per ibv_poll_cq call (stack array). */
#define OFX_EVD_POLL_MAX 64

#define OFX_EVD_CQ_FLAGS (DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG | DAT_IB_EVD_EXTENSION_FLAG)
#define OFX_EVD_USER_FLAGS (DAT_EVD_DEFAULT_FLAG | DAT_EVD_SOFTWARE_FLAG | \
			    DAT_IB_EVD_EXTENSION_FLAG)

static DAT_RETURN evd_err_state(DAT_RETURN_SUBTYPE sub)
{
	return OFX_DAT_ERR(DAT_INVALID_STATE, sub);
}

/* Requires evd->lock. */
static void evd_wake_locked(struct ofx_evd *evd)
{
	uint64_t one = 1;

	if (!evd->waiter)
		return;
	if (write(evd->wake_fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		ofx_warn("evd %p: eventfd write: %m", (void *)evd);
}

/* Requires evd->lock and evd->count > 0. */
static inline void evd_pop_locked(struct ofx_evd *evd, DAT_EVENT *event)
{
	*event = evd->ring[evd->head];
	if (++evd->head == evd->qlen)
		evd->head = 0;
	evd->count--;
}

/*
 * The dequeue's fast-path fields (evd.h), after any change of qlen, cq,
 * n_old_cqs or catastrophic (evd->lock held, or at create).  A first poll
 * of one entry is left to the slow path: only got < n proves the CQ empty,
 * and with a batch of one a dequeue goes on polling into the ring.
 */
static void evd_fast_path_update(struct ofx_evd *evd)
{
	evd->poll_first = evd->qlen < evd->poll_batch ? evd->qlen : evd->poll_batch;
	evd->cq_poll = evd->cq && !evd->n_old_cqs && !evd->catastrophic && evd->poll_first > 1
			       ? ofx_verbs_poll_cq_of(evd->cq)
			       : NULL;
}

/*
 * After an event was queued (evd->lock held): wakes a thread inside
 * evd_wait, or else triggers the CNO of an enabled EVD.  A proxy agent
 * call is left in *call for after the unlock.
 */
static void evd_notify_locked(struct ofx_evd *evd, struct ofx_cno_agent_call *call)
{
	memset(call, 0, sizeof(*call));
	if (!evd->count)
		return;
	if (evd->waiter)
		evd_wake_locked(evd);
	else if (evd->cno && evd->enabled)
		ofx_cno_trigger_evd(evd->cno, evd, call);
}

/* A CNO handle of the same IA, or NULL for DAT_HANDLE_NULL; *ret_p = -EBADF if bad. */
static struct ofx_cno *evd_cno_lookup(DAT_CNO_HANDLE h, struct ofx_ia *ia, int *ret_p)
{
	struct ofx_cno *cno;

	*ret_p = 0;
	if (h == DAT_HANDLE_NULL)
		return NULL;
	cno = ofx_cno_from_handle(h);
	if (!cno || cno->obj.ia != ia)
		*ret_p = -EBADF;
	return cno;
}

static void evd_channel_ready(void *arg);
static int evd_arm_cqs(struct ofx_evd *evd);

/*
 * The progress engine watches the completion channel from now on (lock
 * held).  Registering only takes the engine's lock, never waits.
 */
static int evd_watch_locked(struct ofx_evd *evd)
{
	int ret;

	if (evd->channel_watched || !evd->cq || !evd->obj.ia || !evd->obj.ia->progress)
		return 0;
	ret = ofx_progress_add_fd(evd->obj.ia->progress, evd->channel->fd, evd_channel_ready,
				  evd);
	if (ret) {
		ofx_err("evd %p: watch channel fd %d: %s", (void *)evd, evd->channel->fd,
			strerror(-ret));
		return ret;
	}
	evd->channel_watched = true;
	return 0;
}

/*
 * Drops the watch (lock held).  Only from the progress thread, where
 * ofx_progress_del_fd does not wait for the handler (that is us); other
 * threads leave it to the handler's next run (evd_channel_ready) or to
 * ofx_evd_destroy.
 */
static void evd_unwatch_locked(struct ofx_evd *evd)
{
	int ret;

	if (!evd->channel_watched)
		return;
	evd->channel_watched = false;
	ret = ofx_progress_del_fd(evd->obj.ia->progress, evd->channel->fd);
	if (ret)
		ofx_warn("evd %p: stop watching channel fd %d: %s", (void *)evd,
			 evd->channel->fd, strerror(-ret));
}

/*
 * Detaches the CNO, if any; returns once the progress engine's handler can
 * no longer reach it.  The channel watch itself goes at the handler's next
 * run, unless a watcher still needs it.
 */
static void evd_detach_cno(struct ofx_evd *evd)
{
	struct ofx_cno *cno;

	pthread_mutex_lock(&evd->lock);
	cno = evd->cno;
	evd->cno = NULL;
	pthread_mutex_unlock(&evd->lock);
	if (!cno)
		return;
	/* a handler that read evd->cno before may be triggering it */
	if (evd->obj.ia)
		ofx_progress_barrier(evd->obj.ia->progress);
	ofx_cno_detach(cno, evd);
	ofx_dbg("evd %p: detached from cno %p", (void *)evd, (void *)cno);
}

/* Attaches `cno` (NULL: nothing to do); a CQ's channel is watched from now on. */
static int evd_attach_cno(struct ofx_evd *evd, struct ofx_cno *cno)
{
	int ret;

	if (!cno)
		return 0;
	ofx_cno_attach(cno);
	pthread_mutex_lock(&evd->lock);
	evd->cno = cno;
	ret = evd_watch_locked(evd);
	if (ret)
		evd->cno = NULL;
	pthread_mutex_unlock(&evd->lock);
	if (ret) {
		ofx_cno_detach(cno, evd);
		return ret;
	}
	/* arms the CQ; completions already there trigger at once */
	if (evd->cq)
		evd_channel_ready(evd);
	ofx_dbg("evd %p: attached to cno %p", (void *)evd, (void *)cno);
	return 0;
}

int ofx_evd_watch_channel(struct ofx_evd *evd)
{
	int ret;

	pthread_mutex_lock(&evd->lock);
	ret = evd_watch_locked(evd);
	if (!ret)
		evd->channel_watchers++;
	pthread_mutex_unlock(&evd->lock);
	/* the awaited work request is not posted yet: its completion will raise an event */
	if (!ret && evd_arm_cqs(evd)) {
		ofx_evd_unwatch_channel(evd);
		ret = -EIO;
	}
	return ret;
}

void ofx_evd_unwatch_channel(struct ofx_evd *evd)
{
	pthread_mutex_lock(&evd->lock);
	if (evd->channel_watchers > 0)
		evd->channel_watchers--;
	else
		ofx_err("evd %p: channel unwatch without a watch (provider bug)", (void *)evd);
	pthread_mutex_unlock(&evd->lock);
}

static int evd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int ofx_evd_create_internal(struct ofx_ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS flags,
			    struct ofx_evd **evd_p)
{
	struct ofx_evd *evd;
	int ret;

	if (qlen <= 0)
		return -EINVAL;
	evd = calloc(1, sizeof(*evd));
	if (!evd)
		return -ENOMEM;
	pthread_mutex_init(&evd->lock, NULL);
	ofx_waiter_init(&evd->notify_idle);
	evd->flags = flags;
	evd->enabled = true;
	evd->waitable = true;
	atomic_init(&evd->refs, 0);

	evd->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (evd->wake_fd < 0) {
		ret = -errno;
		ofx_err("eventfd: %m");
		goto err_free;
	}

	if (flags & OFX_EVD_CQ_FLAGS) {
		evd->channel = ofx_verbs->create_comp_channel(ia->verbs);
		if (!evd->channel) {
			ret = errno ? -errno : -ENOMEM;
			ofx_err("ibv_create_comp_channel: %m");
			goto err_close_wake;
		}
		ret = evd_set_nonblock(evd->channel->fd);
		if (ret) {
			ofx_err("completion channel fd %d: O_NONBLOCK: %s", evd->channel->fd,
				strerror(-ret));
			goto err_destroy_channel;
		}
		errno = 0;
		evd->cq = ofx_verbs->create_cq(ia->verbs, qlen, evd, evd->channel, 0);
		if (!evd->cq) {
			const char *why;

			ret = ofx_verbs_create_failed(&why);
			ofx_err("ibv_create_cq cqe %d: %s", qlen, why);
			goto err_destroy_channel;
		}
		evd->cq_depth = evd->cq->cqe;
		evd->poll_batch = ia->cfg.cq_batch ? (int)ia->cfg.cq_batch : 1;
		if (evd->poll_batch > OFX_EVD_POLL_MAX)
			evd->poll_batch = OFX_EVD_POLL_MAX;
		/* The ring must hold everything the CQ can (dtest: qlen >= requested). */
		if (evd->cq_depth > qlen)
			qlen = evd->cq_depth;
	}

	evd->ring = calloc(qlen, sizeof(*evd->ring));
	if (!evd->ring) {
		ret = -ENOMEM;
		ofx_err("evd ring of %d events: out of memory", qlen);
		goto err_destroy_cq;
	}
	evd->qlen = qlen;
	evd_fast_path_update(evd);

	ofx_obj_init(&evd->obj, OFX_OBJ_EVD, ia);
	ofx_dbg("evd %p: qlen %d flags 0x%x cq %p depth %d", (void *)evd, qlen, flags,
		(void *)evd->cq, evd->cq_depth);
	*evd_p = evd;
	return 0;

err_destroy_cq:
	if (evd->cq && ofx_verbs->destroy_cq(evd->cq))
		ofx_warn("ibv_destroy_cq: %m");
err_destroy_channel:
	if (evd->channel && ofx_verbs->destroy_comp_channel(evd->channel))
		ofx_warn("ibv_destroy_comp_channel: %m");
err_close_wake:
	close(evd->wake_fd);
err_free:
	ofx_waiter_fini(&evd->notify_idle);
	pthread_mutex_destroy(&evd->lock);
	free(evd);
	return ret;
}

void ofx_evd_destroy(struct ofx_evd *evd)
{
	if (!evd)
		return;
	ofx_dbg("evd %p: destroy (%d events pending)", (void *)evd, evd->count);
	evd_detach_cno(evd);
	if (evd->channel_watchers)
		ofx_warn("evd %p: freed with %d channel watches (provider bug)", (void *)evd,
			 evd->channel_watchers);
	/* not under the lock: the handler that may be running takes it */
	if (evd->channel_watched && ofx_progress_del_fd(evd->obj.ia->progress,
							evd->channel->fd))
		ofx_warn("evd %p: stop watching channel fd %d", (void *)evd, evd->channel->fd);
	/*
	 * Completion events are acknowledged right after ibv_get_cq_event
	 * (evd_consume_channel), so none is outstanding here and
	 * ibv_destroy_cq cannot block on them.
	 */
	if (evd->cq && ofx_verbs->destroy_cq(evd->cq))
		ofx_warn("evd %p: ibv_destroy_cq: %m", (void *)evd);
	for (int i = 0; i < evd->n_old_cqs; i++)
		if (ofx_verbs->destroy_cq(evd->old_cqs[i]))
			ofx_warn("evd %p: ibv_destroy_cq of an old cq: %m", (void *)evd);
	if (evd->channel && ofx_verbs->destroy_comp_channel(evd->channel))
		ofx_warn("evd %p: ibv_destroy_comp_channel: %m", (void *)evd);
	if (evd->wake_fd >= 0 && close(evd->wake_fd))
		ofx_warn("evd %p: close eventfd: %m", (void *)evd);
	free(evd->ring);
	ofx_waiter_fini(&evd->notify_idle);
	pthread_mutex_destroy(&evd->lock);
	ofx_obj_fini(&evd->obj);
	free(evd);
}

DAT_RETURN ofx_evd_create(DAT_IA_HANDLE ia_h, DAT_COUNT qlen, DAT_CNO_HANDLE cno_h,
			  DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_cno *cno;
	struct ofx_evd *evd;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (qlen <= 0 || qlen > ia->dev_attr.max_cqe)
		return OFX_INVALID_ARG(2);
	cno = evd_cno_lookup(cno_h, ia, &ret);
	if (ret)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	/* The async EVD is made only by ia_open (ofx_evd_create_internal). */
	if (!flags || (flags & ~OFX_EVD_USER_FLAGS) || (flags & DAT_EVD_ASYNC_FLAG))
		return OFX_INVALID_ARG(4);
	if (!evd_p)
		return OFX_INVALID_ARG(5);

	ret = ofx_evd_create_internal(ia, qlen, flags, &evd);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_EVD);
	ret = evd_attach_cno(evd, cno);
	if (ret) {
		ofx_evd_destroy(evd);
		return ofx_dat_status(ret, OFX_OBJ_EVD);
	}
	*evd_p = evd;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	if (mask & ~DAT_EVD_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);

	pthread_mutex_lock(&evd->lock);
	if (mask & DAT_EVD_FIELD_IA_HANDLE)
		param->ia_handle = ofx_ia_dat_handle(evd->obj.ia);
	if (mask & DAT_EVD_FIELD_EVD_QLEN)
		param->evd_qlen = evd->qlen;
	if (mask & DAT_EVD_FIELD_EVD_STATE)
		param->evd_state = (evd->enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
				   (evd->waitable ? DAT_EVD_STATE_WAITABLE :
						    DAT_EVD_STATE_UNWAITABLE);
	if (mask & DAT_EVD_FIELD_CNO)
		param->cno_handle = (DAT_CNO_HANDLE)evd->cno;
	if (mask & DAT_EVD_FIELD_EVD_FLAGS)
		param->evd_flags = evd->flags;
	pthread_mutex_unlock(&evd->lock);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno_h)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	struct ofx_cno *cno;
	int ret;

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	cno = evd_cno_lookup(cno_h, evd->obj.ia, &ret);
	if (ret)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	evd_detach_cno(evd);
	ret = evd_attach_cno(evd, cno);
	return ofx_dat_status(ret, OFX_OBJ_EVD);
}

static DAT_RETURN evd_set_enabled(DAT_EVD_HANDLE h, bool enabled)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	pthread_mutex_lock(&evd->lock);
	evd->enabled = enabled;
	pthread_mutex_unlock(&evd->lock);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_enable(DAT_EVD_HANDLE h)
{
	return evd_set_enabled(h, true);
}

DAT_RETURN ofx_evd_disable(DAT_EVD_HANDLE h)
{
	return evd_set_enabled(h, false);
}

DAT_RETURN ofx_evd_set_unwaitable(DAT_EVD_HANDLE h)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	pthread_mutex_lock(&evd->lock);
	evd->waitable = false;
	evd_wake_locked(evd);
	pthread_mutex_unlock(&evd->lock);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_clear_unwaitable(DAT_EVD_HANDLE h)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	pthread_mutex_lock(&evd->lock);
	evd->waitable = true;
	pthread_mutex_unlock(&evd->lock);
	return DAT_SUCCESS;
}

/*
 * A full ring drops the event `num` (evd->lock held; unlocks): the async
 * EVD becomes unusable, any other reports the overflow on the async EVD.
 * Out of line: evd_post_slot is inlined into every poster without it.
 */
static __attribute__((noinline, cold)) void evd_post_overflow(struct ofx_evd *evd,
							    DAT_EVENT_NUMBER num)
{
	struct ofx_ia *ia = evd->obj.ia;
	bool is_async = ia && evd == ia->async_evd;
	DAT_COUNT qlen = evd->qlen;

	if (is_async) {
		/* Nobody to tell: the async EVD becomes unusable. */
		evd->catastrophic = true;
		evd_fast_path_update(evd);	/* the dequeue's slow path refuses */
		evd_wake_locked(evd);
	}
	pthread_mutex_unlock(&evd->lock);
	ofx_warn("evd %p full (qlen %d): event 0x%x dropped%s", (void *)evd, qlen,
		 (unsigned int)num, is_async ? ", async evd now unusable" : "");
	if (!is_async && ia)
		ofx_ia_post_async(ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, (DAT_HANDLE)evd);
}

/*
 * The ring slot for a new event (locks evd->lock; NULL, unlocked, when the
 * ring is full: evd_post_overflow).  The caller fills the slot in place,
 * one copy of a DAT_EVENT (120 bytes) fewer than building it on the stack,
 * then calls evd_post_commit.
 */
static inline DAT_EVENT *evd_post_slot(struct ofx_evd *evd, DAT_EVENT_NUMBER num)
{
	DAT_COUNT tail;

	pthread_mutex_lock(&evd->lock);
	if (ofx_unlikely(evd->count == evd->qlen)) {
		evd_post_overflow(evd, num);
		return NULL;
	}
	tail = evd->head + evd->count;
	return &evd->ring[tail >= evd->qlen ? tail - evd->qlen : tail];
}

/* Queues the slot evd_post_slot gave (filled), tells a waiter or CNO, unlocks. */
static inline int evd_post_commit(struct ofx_evd *evd, DAT_EVENT *slot, DAT_EVENT_NUMBER num)
{
	struct ofx_cno_agent_call call;

	slot->event_number = num;
	slot->evd_handle = (DAT_EVD_HANDLE)evd;
	evd->count++;
	if (evd->waiter) {
		/* the common case of a blocked dat_evd_wait: no CNO to run */
		evd_wake_locked(evd);
		pthread_mutex_unlock(&evd->lock);
		return 0;
	}
	evd_notify_locked(evd, &call);
	pthread_mutex_unlock(&evd->lock);
	ofx_cno_agent_run(&call);
	return 0;
}

int ofx_evd_post(struct ofx_evd *evd, const DAT_EVENT *ev)
{
	DAT_EVENT *slot = evd_post_slot(evd, ev->event_number);

	if (!slot)
		return -ENOSPC;
	*slot = *ev;
	return evd_post_commit(evd, slot, ev->event_number);
}

/* A slot's event data and extension data zeroed, as a built DAT_EVENT had them. */
static inline void evd_slot_clear(DAT_EVENT *slot)
{
	memset(&slot->event_data, 0, sizeof(slot->event_data));
	memset(slot->event_extension_data, 0, sizeof(slot->event_extension_data));
}

/*
 * Connection and CR events are built in the slot: the event data member
 * they use, and zeroed extension data (as a built DAT_EVENT had it).
 */
int ofx_evd_post_conn(struct ofx_evd *evd, DAT_EVENT_NUMBER num, DAT_EP_HANDLE ep,
		      DAT_COUNT pdata_len, const void *pdata)
{
	DAT_EVENT *slot = evd_post_slot(evd, num);

	if (!slot)
		return -ENOSPC;
	evd_slot_clear(slot);
	slot->event_data.connect_event_data.ep_handle = ep;
	slot->event_data.connect_event_data.private_data_size = pdata_len;
	slot->event_data.connect_event_data.private_data = (DAT_PVOID)pdata;
	return evd_post_commit(evd, slot, num);
}

int ofx_evd_post_cr(struct ofx_evd *evd, DAT_SP_HANDLE sp, DAT_IA_ADDRESS_PTR local_addr,
		    DAT_CONN_QUAL qual, DAT_CR_HANDLE cr)
{
	DAT_EVENT *slot = evd_post_slot(evd, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_ARRIVAL_EVENT_DATA *d;

	if (!slot)
		return -ENOSPC;
	evd_slot_clear(slot);
	d = &slot->event_data.cr_arrival_event_data;
	d->sp_handle = sp;	/* a union: PSP, RSP or CSP */
	d->local_ia_address_ptr = local_addr;
	d->conn_qual = qual;
	d->cr_handle = cr;
	d->truncate_flag = DAT_FALSE;
	return evd_post_commit(evd, slot, DAT_CONNECTION_REQUEST_EVENT);
}

int ofx_evd_post_async(struct ofx_evd *evd, DAT_EVENT_NUMBER num, DAT_HANDLE handle)
{
	DAT_EVENT ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_number = num;
	ev.event_data.asynch_error_event_data.dat_handle = handle;
	ev.event_data.asynch_error_event_data.reason = 0;
	return ofx_evd_post(evd, &ev);
}

/*
 * Works on any struct ofx_ia (unit tests build bare ones).  Device events
 * stop reaching an IA when ia_close takes it off its list of open IAs; the
 * async EVD outlives every object an event could name.
 */
void ofx_ia_post_async(struct ofx_ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE handle)
{
	if (!ia || !ia->async_evd)
		return;
	ofx_evd_post_async(ia->async_evd, num, handle);
}

struct evd_notify {
	struct ofx_cookie_owner *owner;
	const struct ibv_wc *wc;	/* into the caller's wc array */
};

/* Runs the owners' follow-ups a drain collected (no EVD lock held). */
static void evd_run_notify(const struct evd_notify *notify, int n)
{
	for (int i = 0; i < n; i++)
		notify[i].owner->ops->notify(notify[i].owner, notify[i].wc);
}

/* The ring slot after the last queued event.  Requires evd->lock. */
static inline DAT_COUNT evd_tail_locked(const struct ofx_evd *evd)
{
	DAT_COUNT tail = evd->head + evd->count;

	return tail >= evd->qlen ? tail - evd->qlen : tail;
}

/*
 * Converts one polled batch into events (evd->lock held).  With *direct_p
 * set, the first event goes straight into that DAT_EVENT rather than
 * through the ring and *direct_p is cleared: it is the oldest, and it saves
 * a copy.  Owners' follow-ups are collected in `notify` (pointing into
 * `wc`), counted in *nnotify_p.  Returns the number of events produced.
 */
static inline __attribute__((always_inline)) int
evd_take_batch_locked(struct ofx_evd *evd, struct ibv_wc *wc, int got, DAT_EVENT **direct_p,
		      struct evd_notify *notify, int *nnotify_p)
{
	DAT_EVENT *direct = direct_p ? *direct_p : NULL;
	DAT_COUNT tail = evd_tail_locked(evd);
	int added = 0, nnotify = *nnotify_p;
	struct ofx_cookie_owner *nowner;

	for (int i = 0; i < got; i++) {
		DAT_EVENT *slot = direct ? direct : &evd->ring[tail];

		if (ofx_dto_convert_inline(&wc[i], slot, &nowner)) {
			slot->evd_handle = (DAT_EVD_HANDLE)evd;
			added++;
			if (slot == direct) {
				direct = NULL;
			} else {
				evd->count++;
				if (++tail == evd->qlen)
					tail = 0;
			}
		}
		if (ofx_unlikely(nowner != NULL)) {
			notify[nnotify].owner = nowner;
			notify[nnotify].wc = &wc[i];
			nnotify++;
		}
	}
	if (direct_p)
		*direct_p = direct;
	*nnotify_p = nnotify;
	return added;
}

/* Completions polled per call: the batch, or what still fits the ring. */
static inline int evd_poll_len(const struct ofx_evd *evd)
{
	int space = evd->qlen - evd->count;

	return space < evd->poll_batch ? space : evd->poll_batch;
}

/*
 * One locked pass: polls batches into the ring until the CQ is empty or the
 * ring is full (evd_take_batch_locked: *direct_p).  A batch that needs
 * owners' follow-ups ends the pass (they are rare: RTR and errors) so that
 * `notify` still points into `wc`; *more_p then tells the caller to run
 * them unlocked and come back.  Returns the number of events produced or
 * -errno.  Inlined into its callers: on the dequeue path the call and its
 * out-parameters cost more than the loop does for one event.
 */
static inline __attribute__((always_inline)) int
evd_drain_cq_locked(struct ofx_evd *evd, struct ibv_cq *cq, DAT_EVENT **direct_p,
		    struct ibv_wc *wc, struct evd_notify *notify, int *nnotify_p, bool *more_p)
{
	int added = 0, n, got;

	*more_p = false;
	*nnotify_p = 0;
	for (;;) {
		n = evd_poll_len(evd);
		if (n <= 0)
			break;
		got = ofx_verbs->poll_cq(cq, n, wc);
		if (ofx_unlikely(got < 0)) {
			ofx_err("evd %p: ibv_poll_cq: %d", (void *)evd, got);
			added = -EIO;
			break;
		}
		added += evd_take_batch_locked(evd, wc, got, direct_p, notify, nnotify_p);
		if (ofx_unlikely(*nnotify_p)) {
			*more_p = got == n;
			break;
		}
		if (got < n)
			break;
	}
	return added;
}

/*
 * The CQs the EVD moved away from, after the current one (their QPs'
 * completions have no order relative to the current CQ's).  Stops at the
 * first CQ that needs owner notifications, with *more_p set so the caller
 * drains again.  Out of line: only devices without CQ resize get here.
 */
static __attribute__((noinline)) int
evd_drain_old_cqs_locked(struct ofx_evd *evd, DAT_EVENT **direct_p, struct ibv_wc *wc,
			 struct evd_notify *notify, int *nnotify_p, bool *more_p)
{
	int added = 0, ret;

	for (int i = 0; i < evd->n_old_cqs; i++) {
		ret = evd_drain_cq_locked(evd, evd->old_cqs[i], direct_p, wc, notify, nnotify_p,
					  more_p);
		if (ret < 0)
			return ret;
		added += ret;
		if (*nnotify_p) {
			*more_p = true;
			break;
		}
	}
	return added;
}

static inline __attribute__((always_inline)) int
evd_drain_locked(struct ofx_evd *evd, DAT_EVENT **direct_p, struct ibv_wc *wc,
		 struct evd_notify *notify, int *nnotify_p, bool *more_p)
{
	int added = evd_drain_cq_locked(evd, evd->cq, direct_p, wc, notify, nnotify_p, more_p);
	int old;

	if (ofx_likely(!evd->n_old_cqs) || added < 0 || *nnotify_p)
		return added;
	old = evd_drain_old_cqs_locked(evd, direct_p, wc, notify, nnotify_p, more_p);
	return old < 0 ? old : added + old;
}

/* Arms every CQ of the EVD for one completion event; 0 or -EIO. */
static int evd_arm_cqs(struct ofx_evd *evd)
{
	int ret = 0;

	pthread_mutex_lock(&evd->lock);
	if (ofx_verbs->req_notify_cq(evd->cq, 0))
		ret = -EIO;
	for (int i = 0; i < evd->n_old_cqs; i++)
		if (ofx_verbs->req_notify_cq(evd->old_cqs[i], 0))
			ret = -EIO;
	pthread_mutex_unlock(&evd->lock);
	if (ret)
		ofx_err("evd %p: ibv_req_notify_cq failed", (void *)evd);
	return ret;
}

/*
 * A drain is done calling owners' notify ops; the last one wakes teardown,
 * if it waits.  Both sides are sequentially consistent: a waiter counted
 * after this load of notify_waiters sees the count at 0 before it sleeps
 * (ofx_evd_wait_notify_idle), so the usual drain (an RTR, nobody tearing
 * down) takes no waiter lock.
 */
static void evd_notify_done(struct ofx_evd *evd)
{
	if (atomic_fetch_sub(&evd->notify_inflight, 1) == 1 && atomic_load(&evd->notify_waiters))
		ofx_waiter_wake(&evd->notify_idle);
}

static bool evd_notify_is_idle(void *arg)
{
	struct ofx_evd *evd = arg;

	return atomic_load(&evd->notify_inflight) == 0;
}

static void evd_notify_report(void *arg, unsigned int waited_s)
{
	ofx_warn("evd %p: a completion handler has run for %u s, still waiting", arg, waited_s);
}

/* Returns once no drain runs owners' notify ops (ordered after the drains by the caller). */
static void evd_notify_idle_wait(struct ofx_evd *evd)
{
	/* the usual case, no drain in its owners' ops: no clock, no waiter */
	if (evd_notify_is_idle(evd))
		return;
	atomic_fetch_add(&evd->notify_waiters, 1);
	ofx_waiter_wait_reporting(&evd->notify_idle, evd_notify_is_idle, evd, evd_notify_report);
	atomic_fetch_sub(&evd->notify_waiters, 1);
}

void ofx_evd_wait_notify_idle(struct ofx_evd *evd)
{
	/* taking the lock orders us after any drain that saw the EP alive */
	pthread_mutex_lock(&evd->lock);
	pthread_mutex_unlock(&evd->lock);
	evd_notify_idle_wait(evd);
}

/*
 * ofx_evd_drain_cq, and whether the ring had room after the last pass
 * (false: CQEs may remain behind a full ring), read in that pass's lock.
 */
static int evd_drain_cq(struct ofx_evd *evd, bool *room_p)
{
	struct ibv_wc wc[OFX_EVD_POLL_MAX];
	struct evd_notify notify[OFX_EVD_POLL_MAX];
	int total = 0, nnotify, ret;
	bool more;

	do {
		pthread_mutex_lock(&evd->lock);
		/*
		 * No wake_fd write: a waiter either re-checks the ring after
		 * its own drain or is woken by the completion channel.
		 */
		ret = evd_drain_locked(evd, NULL, wc, notify, &nnotify, &more);
		/* announced under the lock: ep teardown waits for it to drop */
		if (nnotify)
			atomic_fetch_add(&evd->notify_inflight, 1);
		*room_p = evd->count < evd->qlen;
		pthread_mutex_unlock(&evd->lock);
		evd_run_notify(notify, nnotify);
		if (nnotify)
			evd_notify_done(evd);
		if (ret < 0)
			return ret;
		total += ret;
	} while (more);
	return total;
}

int ofx_evd_drain_cq(struct ofx_evd *evd)
{
	bool room;

	if (!evd->cq)
		return 0;
	return evd_drain_cq(evd, &room);
}

/*
 * The one completion a take polled that was not the caller's, into the ring
 * as a drain would take it (evd->lock held); its owner's notify op, if it
 * has one, is counted in flight and left in *later with a copy of it.
 */
static void evd_queue_other_locked(struct ofx_evd *evd, const struct ibv_wc *wc,
				   struct ofx_evd_later *later)
{
	struct evd_notify notify[1];
	int nnotify = 0;

	later->wc = *wc;
	evd_take_batch_locked(evd, &later->wc, 1, NULL, notify, &nnotify);
	later->evd = evd;
	later->owner = nnotify ? notify[0].owner : NULL;
	if (nnotify)
		atomic_fetch_add(&evd->notify_inflight, 1);
}

/*
 * The queued completion's notify op, then the rest of the CQ the generic
 * way, where the caller's own completion, if it is there, reaches its
 * owner's notify op.  No lock held.  Returns the drain's result.
 */
static int evd_finish_later(struct ofx_evd_later *later)
{
	struct ofx_evd *evd = later->evd;

	later->evd = NULL;
	if (later->owner) {
		later->owner->ops->notify(later->owner, &later->wc);
		evd_notify_done(evd);
	}
	return ofx_evd_drain_cq(evd);
}

void ofx_evd_take_later(struct ofx_evd_later *later)
{
	if (later->evd)
		evd_finish_later(later);
}

int ofx_evd_take_own_nested(struct ofx_evd *evd, uint64_t wr_id, struct ibv_wc *wc,
			    struct ofx_evd_later *later)
{
	int got;

	later->evd = NULL;
	if (!evd->cq)
		return 0;
	pthread_mutex_lock(&evd->lock);
	/* a full ring could not take another completion; old CQs come after */
	if (ofx_unlikely(evd->n_old_cqs || evd->count >= evd->qlen)) {
		pthread_mutex_unlock(&evd->lock);
		later->evd = evd;
		later->owner = NULL;
		return 0;
	}
	got = ofx_verbs->poll_cq(evd->cq, 1, wc);
	if (ofx_likely(got == 1 && wc->wr_id == wr_id)) {
		pthread_mutex_unlock(&evd->lock);
		return 1;
	}
	/* rare: the awaited completion usually comes first */
	if (got == 1)
		evd_queue_other_locked(evd, wc, later);
	pthread_mutex_unlock(&evd->lock);
	if (ofx_unlikely(got < 0)) {
		ofx_err("evd %p: ibv_poll_cq: %d", (void *)evd, got);
		return -EIO;
	}
	return 0;
}

int ofx_evd_take_own(struct ofx_evd *evd, uint64_t wr_id, struct ibv_wc *wc)
{
	struct ofx_evd_later later;
	int got = ofx_evd_take_own_nested(evd, wr_id, wc, &later);

	if (ofx_unlikely(later.evd != NULL)) {
		int ret = evd_finish_later(&later);

		return ret < 0 ? ret : 0;
	}
	return got;
}

bool ofx_evd_drain_all(struct ofx_evd *evd)
{
	bool room;

	if (!evd || !evd->cq)
		return true;
	evd_drain_cq(evd, &room);
	return room;
}

bool ofx_evd_drain_owner_gone(struct ofx_evd *evd)
{
	bool room;

	if (!evd->cq)
		return true;
	/* the drain's lock orders us after any drain that saw the owner alive */
	evd_drain_cq(evd, &room);
	evd_notify_idle_wait(evd);
	return room;
}

/* Reads every pending completion event of the channel and acknowledges them. */
static void evd_consume_channel(struct ofx_evd *evd)
{
	struct ibv_cq *cq;
	void *ctx;

	/* each event is acked on its own CQ: the EVD may have several */
	while (!ofx_verbs->get_cq_event(evd->channel, &cq, &ctx))
		ofx_verbs->ack_cq_events(cq, 1);
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		ofx_warn("evd %p: ibv_get_cq_event: %m", (void *)evd);
}

/*
 * Progress-engine handler of a watched completion channel (a CNO attached
 * or a completion awaited; also called once at CNO attach): acknowledges the
 * notification, re-arms the CQ, drains it into the ring, then wakes a
 * direct waiter or triggers the CNO.  Arming before draining means no
 * completion is left unnotified.  With no reason left to watch, it then
 * drops the watch.
 */
static void evd_channel_ready(void *arg)
{
	struct ofx_evd *evd = arg;
	struct ofx_cno_agent_call call;

	/*
	 * The notification taken here may have been a direct waiter's (its
	 * poll() does not wake for an event consumed first): so re-arm and
	 * drain, and wake it, even when there is no reason left to watch.
	 */
	evd_consume_channel(evd);
	evd_arm_cqs(evd);
	if (ofx_evd_drain_cq(evd) < 0)
		return;
	pthread_mutex_lock(&evd->lock);
	evd_notify_locked(evd, &call);
	if (!evd->cno && !evd->channel_watchers && ofx_progress_in_thread(evd->obj.ia->progress))
		evd_unwatch_locked(evd);
	pthread_mutex_unlock(&evd->lock);
	ofx_cno_agent_run(&call);
}

static void evd_consume_wake(struct ofx_evd *evd)
{
	uint64_t val;

	if (read(evd->wake_fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
		ofx_warn("evd %p: eventfd read: %m", (void *)evd);
}

/*
 * A waiter cancelled in poll() (MVAPICH2 cancels its on-demand connection
 * thread, asynchronously, at MPI_Finalize) leaves the EVD free to be freed:
 * this runs as that thread unwinds.  It holds no EVD lock then (see below).
 */
static void evd_wait_cancelled(void *arg)
{
	struct ofx_evd *evd = arg;

	pthread_mutex_lock(&evd->lock);
	evd->waiter = false;
	pthread_mutex_unlock(&evd->lock);
}

/*
 * evd_wait runs with cancellation disabled (ofx_evd_wait), so a cancel can
 * never strike with a lock held or a log line half written; poll() is the
 * one place where it may, in deferred mode (for a caller that had
 * cancellation enabled), and then the cleanup handler gives the EVD back.
 */
static int evd_poll_cancellable(struct ofx_evd *evd, struct pollfd *pfd, int nfd, int ms)
{
	int ret, saved_errno, ignored;

	pthread_cleanup_push(evd_wait_cancelled, evd);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &ignored);
	ret = poll(pfd, (nfds_t)nfd, ms);
	saved_errno = errno;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &ignored);
	pthread_cleanup_pop(0);
	errno = saved_errno;
	return ret;
}

/*
 * How long a wait may still sleep.  The first sleep takes the caller's
 * timeout as it stands, with no second clock read (the deadline was read
 * just before, and poll() rounds up); later ones count down to the
 * deadline.  An infinite wait never reads the clock.
 */
struct evd_timeout {
	uint64_t deadline;	/* ofx_now_ns; UINT64_MAX: none */
	int first_ms;		/* the first sleep's; EVD_MS_DEADLINE once taken */
};

#define EVD_MS_DEADLINE (-2)

static void evd_timeout_init(struct evd_timeout *to, DAT_TIMEOUT timeout)
{
	if (timeout == DAT_TIMEOUT_INFINITE) {
		*to = (struct evd_timeout){ .deadline = UINT64_MAX, .first_ms = -1 };
		return;
	}
	/* a zero timeout never sleeps (evd_wait_loop): no clock for it either */
	to->deadline = timeout ? ofx_now_ns() + (uint64_t)timeout * 1000 : 0;
	to->first_ms = (int)(((uint64_t)timeout + 999) / 1000);
}

static int evd_timeout_ms(struct evd_timeout *to)
{
	int ms = to->first_ms;

	if (ms == EVD_MS_DEADLINE)
		return ofx_poll_timeout_ms(to->deadline);
	to->first_ms = EVD_MS_DEADLINE;
	return ms;
}

/*
 * The core of every wait on the EVD (evd_wait, ofx_evd_wait_cq), called
 * between two drains of its CQs.  The first call after a completion event
 * arms the CQs and returns at once, so that the caller drains again: a
 * completion between its drain and the arm is not lost.  The next one
 * sleeps in poll() on the completion channel, and with `wake` the eventfd,
 * until one fires or the timeout `to` runs out, and consumes what fired.
 * 0 to drain and test again, -ETIMEDOUT once the deadline passed, or a
 * negative errno.  No EVD lock held.
 */
static int evd_block(struct ofx_evd *evd, bool *armed_p, bool wake, struct evd_timeout *to,
		     int cancel_state)
{
	struct pollfd pfd[2];
	int ret, ms, nfd = 0, chan = -1;

	if (evd->cq && !*armed_p) {
		if (evd_arm_cqs(evd))
			return -EIO;
		*armed_p = true;
		return 0;
	}
	ms = evd_timeout_ms(to);
	if (!ms)
		return -ETIMEDOUT;
	if (wake) {
		pfd[nfd].fd = evd->wake_fd;
		pfd[nfd].events = POLLIN;
		pfd[nfd++].revents = 0;
	}
	if (evd->channel) {
		chan = nfd;
		pfd[nfd].fd = evd->channel->fd;
		pfd[nfd].events = POLLIN;
		pfd[nfd++].revents = 0;
	}
	ret = cancel_state == PTHREAD_CANCEL_ENABLE ? evd_poll_cancellable(evd, pfd, nfd, ms) :
						      poll(pfd, (nfds_t)nfd, ms);
	if (ret < 0 && errno != EINTR) {
		ret = -errno;
		ofx_err("evd %p: poll: %m", (void *)evd);
		return ret;
	}
	if (ret <= 0)
		return 0;
	if (wake && pfd[0].revents)
		evd_consume_wake(evd);
	if (chan >= 0 && pfd[chan].revents) {
		evd_consume_channel(evd);
		*armed_p = false;	/* notification is one-shot */
	}
	return 0;
}

int ofx_evd_wait_cq(struct ofx_evd *evd, bool (*done)(void *arg), void *arg,
		    uint64_t deadline_ns)
{
	struct evd_timeout to = { .deadline = deadline_ns, .first_ms = EVD_MS_DEADLINE };
	bool armed = false;
	int ret;

	if (!evd->cq || !evd->channel)
		return -ENODEV;
	for (;;) {
		ret = ofx_evd_drain_cq(evd);
		if (ret < 0)
			return ret;
		if (done(arg))
			return 0;
		ret = evd_block(evd, &armed, false, &to, PTHREAD_CANCEL_DISABLE);
		if (ret < 0)
			return ret;
	}
}

/* Drains the EVD's CQs into the ring (evd->lock held; dropped meanwhile). */
static int evd_wait_drain(struct ofx_evd *evd)
{
	int ret;

	pthread_mutex_unlock(&evd->lock);
	ret = ofx_evd_drain_cq(evd);
	pthread_mutex_lock(&evd->lock);
	return ret < 0 ? ret : 0;
}

/*
 * One look at the EVD inside evd_wait (lock held): drains its CQs, then
 * ends the wait if it can (true, *status_p set: an event, or why not).
 * Inlined into both wait loops: as a call it cost each connection's waits
 * about 80 instructions (cm-cost).
 */
static inline __attribute__((always_inline)) bool
evd_wait_look(struct ofx_evd *evd, DAT_COUNT threshold, DAT_EVENT *event, DAT_COUNT *nmore,
	      DAT_RETURN *status_p)
{
	int ret;

	if (evd->cq) {
		ret = evd_wait_drain(evd);
		if (ret < 0) {
			*status_p = ofx_dat_status(ret, OFX_OBJ_EVD);
			return true;
		}
	}
	if (evd->catastrophic) {
		*status_p = evd_err_state(DAT_NO_SUBTYPE);
		return true;
	}
	if (!evd->waitable) {
		*status_p = evd_err_state(DAT_INVALID_STATE_EVD_UNWAITABLE);
		return true;
	}
	if (evd->count < threshold)
		return false;
	evd_pop_locked(evd, event);
	if (nmore)
		*nmore = evd->count;
	*status_p = DAT_SUCCESS;
	return true;
}

/* A wait's timeout ran out (lock held): what is queued stays, counted in *nmore. */
static DAT_RETURN evd_wait_expired(const struct ofx_evd *evd, DAT_COUNT *nmore)
{
	if (nmore)
		*nmore = evd->count;
	return DAT_TIMEOUT_EXPIRED;
}

/*
 * Wait loop of evd_wait on an EVD with a CQ; runs with evd->waiter set and
 * the lock held, which it drops around each drain and block.  Returns
 * with the lock held.
 */
static DAT_RETURN evd_wait_loop(struct ofx_evd *evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
				DAT_EVENT *event, DAT_COUNT *nmore, int cancel_state)
{
	struct evd_timeout to;
	bool armed = false, expired = timeout == 0;
	DAT_RETURN status;
	int ret;

	/* the deadline is read by evd_block, which says when it passed */
	evd_timeout_init(&to, timeout);
	for (;;) {
		if (evd_wait_look(evd, threshold, event, nmore, &status))
			return status;
		if (expired)
			return evd_wait_expired(evd, nmore);
		pthread_mutex_unlock(&evd->lock);

		/* -ETIMEDOUT: the test above reports it, after a last look */
		ret = evd_block(evd, &armed, true, &to, cancel_state);
		expired = ret == -ETIMEDOUT;
		pthread_mutex_lock(&evd->lock);
		if (ret < 0 && !expired)
			return ofx_dat_status(ret, OFX_OBJ_EVD);
	}
}

/*
 * The wait of an EVD without a CQ (the connection and CR EVDs, the
 * software ones): nothing to drain or arm, only the eventfd to sleep on.
 * Runs as evd_wait_loop does, the ring found short of `threshold` by the
 * caller, who has just looked at it: so the first step is the sleep.  The
 * time left is taken with the lock held, right after a look: when none is
 * left, that look was the last.
 */
static DAT_RETURN evd_wait_sw(struct ofx_evd *evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
			      DAT_EVENT *event, DAT_COUNT *nmore, int cancel_state)
{
	struct pollfd pfd = { .fd = evd->wake_fd, .events = POLLIN };
	struct evd_timeout to;
	DAT_RETURN status;
	int ret, ms;

	if (!timeout)
		goto expired;
	evd_timeout_init(&to, timeout);
	for (;;) {
		ms = evd_timeout_ms(&to);
		if (!ms)
			goto expired;
		pthread_mutex_unlock(&evd->lock);
		ret = cancel_state == PTHREAD_CANCEL_ENABLE ? evd_poll_cancellable(evd, &pfd, 1, ms) :
							      poll(&pfd, 1, ms);
		if (ret > 0) {
			evd_consume_wake(evd);
		} else if (ret < 0 && errno != EINTR) {
			ret = -errno;
			ofx_err("evd %p: poll: %m", (void *)evd);
			pthread_mutex_lock(&evd->lock);
			return ofx_dat_status(ret, OFX_OBJ_EVD);
		}
		pthread_mutex_lock(&evd->lock);
		/* no CQ: the look drains nothing */
		if (evd_wait_look(evd, threshold, event, nmore, &status))
			return status;
	}
expired:
	return evd_wait_expired(evd, nmore);
}

/* What refuses a dat_evd_wait before it waits (evd->lock held). */
static DAT_RETURN evd_wait_check_locked(const struct ofx_evd *evd, DAT_COUNT threshold)
{
	if (threshold <= 0 || threshold > evd->qlen || (threshold > 1 && !evd->cq))
		return OFX_INVALID_ARG(3);
	if (evd->catastrophic)
		return evd_err_state(DAT_NO_SUBTYPE);
	if (!evd->waitable)
		return evd_err_state(DAT_INVALID_STATE_EVD_UNWAITABLE);
	if (evd->waiter)
		return evd_err_state(DAT_INVALID_STATE_EVD_IN_USE);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
			DAT_EVENT *event, DAT_COUNT *nmore)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	int cancel_state, cancel_type = PTHREAD_CANCEL_DEFERRED, ignored;
	DAT_RETURN status;

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	if (!event)
		return OFX_INVALID_ARG(4);

	/*
	 * Cancellable only inside poll(), deferred: see evd_poll_cancellable.
	 * What was disabled already stays so, whatever its type: the type
	 * is only switched (and put back) for a wait that may be cancelled.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	if (cancel_state != PTHREAD_CANCEL_ENABLE)
		cancel_state = PTHREAD_CANCEL_DISABLE;
	pthread_mutex_lock(&evd->lock);
	status = evd_wait_check_locked(evd, threshold);
	if (status != DAT_SUCCESS)
		goto out_unlock;
	/*
	 * An event already queued on an EVD without a CQ (nothing to drain
	 * first) is returned at once, with no clock read.
	 */
	if (!evd->cq && evd->count >= threshold) {
		evd_pop_locked(evd, event);
		if (nmore)
			*nmore = evd->count;
		goto out_unlock;
	}
	if (cancel_state == PTHREAD_CANCEL_ENABLE)
		pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &cancel_type);
	evd->waiter = true;
	status = evd->cq ? evd_wait_loop(evd, timeout, threshold, event, nmore, cancel_state) :
			   evd_wait_sw(evd, timeout, threshold, event, nmore, cancel_state);
	evd->waiter = false;
out_unlock:
	pthread_mutex_unlock(&evd->lock);
	if (cancel_type != PTHREAD_CANCEL_DEFERRED)
		pthread_setcanceltype(cancel_type, &ignored);
	if (cancel_state == PTHREAD_CANCEL_ENABLE)
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &ignored);
	return status;
}

/* An event delivered before a failing poll is still the caller's. */
static DAT_RETURN evd_dequeue_status(const DAT_EVENT *direct, int ret)
{
	if (ofx_likely(!direct))
		return DAT_SUCCESS;
	if (ret < 0)
		return ofx_dat_status(ret, OFX_OBJ_EVD);
	return DAT_QUEUE_EMPTY;	/* bare: dtest -p compares with == */
}

/*
 * The dequeue's first batch (`got` of the `n` asked for, maybe an error)
 * was not one evd_dequeue_from_cq settles alone: converts it and drains on
 * as evd_drain_locked would have, then runs owners' follow-ups unlocked.
 */
static __attribute__((noinline)) DAT_RETURN
evd_dequeue_batch(struct ofx_evd *evd, DAT_EVENT *event, struct ibv_wc *wc, int got, int n)
{
	struct evd_notify notify[OFX_EVD_POLL_MAX];
	DAT_EVENT *direct = event;
	int ret, nnotify = 0;
	bool more;

	if (got < 0) {
		ofx_err("evd %p: ibv_poll_cq: %d", (void *)evd, got);
		ret = -EIO;
	} else {
		ret = evd_take_batch_locked(evd, wc, got, &direct, notify, &nnotify);
		/* the rest of the pass: wc may be polled into again (no notify points there) */
		if (!nnotify && got == n)
			ret = evd_drain_locked(evd, &direct, wc, notify, &nnotify, &more);
		else if (!nnotify && evd->n_old_cqs)
			ret = evd_drain_old_cqs_locked(evd, &direct, wc, notify, &nnotify, &more);
	}
	if (ofx_unlikely(nnotify))
		atomic_fetch_add(&evd->notify_inflight, 1);
	pthread_mutex_unlock(&evd->lock);
	if (ofx_unlikely(nnotify)) {
		evd_run_notify(notify, nnotify);
		evd_notify_done(evd);
	}
	return evd_dequeue_status(direct, ret);
}

/*
 * dat_evd_dequeue on an empty ring with one CQ (evd->lock held, evd->count
 * 0, evd->cq_poll set; unlocks): polls the CQ, the first new event going
 * straight to `event`.  The common outcomes are settled here: an empty CQ,
 * and a single plain completion (the CQ then had no more: got < n, as
 * cq_poll is set only for n > 1);
 * anything else goes on in evd_dequeue_batch.  Inlined: a call of its own
 * cost the empty dequeue a second prologue, more than the array's frame
 * costs the dequeue of a queued event (one instruction).
 */
static inline __attribute__((always_inline)) DAT_RETURN
evd_dequeue_from_cq(struct ofx_evd *evd, DAT_EVENT *event)
{
	struct ibv_wc wc[OFX_EVD_POLL_MAX];
	int got = evd->cq_poll(evd->cq, evd->poll_first, wc);
	struct ofx_cookie *slot;
	DAT_RETURN status = DAT_QUEUE_EMPTY;

	ofx_opaque(evd);	/* &evd->lock is not held across the poll: 2 instructions */

	if (got == 0) {
		pthread_mutex_unlock(&evd->lock);
		return DAT_QUEUE_EMPTY;
	}
	slot = (struct ofx_cookie *)(uintptr_t)wc[0].wr_id;
	if (ofx_likely(got == 1 && dto_is_plain(&wc[0], slot))) {
		if (ofx_likely(dto_convert_plain(&wc[0], slot, event))) {
			event->evd_handle = (DAT_EVD_HANDLE)evd;
			status = DAT_SUCCESS;
		}
		pthread_mutex_unlock(&evd->lock);
		return status;
	}
	return evd_dequeue_batch(evd, event, wc, got, evd->poll_first);
}

/*
 * dat_evd_dequeue on an empty ring off the fast path (unlocks): a
 * catastrophic EVD, one with no CQ, with old CQs to drain as well, or
 * polling one completion at a time.
 */
static __attribute__((noinline)) DAT_RETURN evd_dequeue_slow(struct ofx_evd *evd,
							     DAT_EVENT *event)
{
	struct ibv_wc wc[OFX_EVD_POLL_MAX];
	DAT_RETURN status = DAT_QUEUE_EMPTY;
	int n;

	if (evd->catastrophic)
		status = evd_err_state(DAT_NO_SUBTYPE);
	else if (evd->cq) {
		n = evd->poll_first;
		return evd_dequeue_batch(evd, event, wc, ofx_verbs->poll_cq(evd->cq, n, wc), n);
	}
	pthread_mutex_unlock(&evd->lock);
	return status;
}

/*
 * One lock round trip: the CQ is polled only when the ring is empty, since
 * queued events are older than any CQE.  A busy poller mostly finds the
 * ring empty, so that is tested first; evd->cq_poll then stands for "one
 * CQ, not catastrophic".  The paths out tail-call their unlocking halves,
 * so the checks here keep nothing across the lock but the two arguments.
 */
DAT_RETURN ofx_evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *event)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);

	if (ofx_unlikely(!evd))
		return ofx_invalid_handle(OFX_OBJ_EVD);
	if (ofx_unlikely(!event))
		return OFX_INVALID_ARG(2);
	pthread_mutex_lock(&evd->lock);
	if (ofx_likely(!evd->count)) {
		if (ofx_likely(evd->cq_poll != NULL))
			return evd_dequeue_from_cq(evd, event);	/* unlocks */
		return evd_dequeue_slow(evd, event);	/* unlocks */
	}
	if (ofx_unlikely(evd->catastrophic))
		return evd_dequeue_slow(evd, event);	/* unlocks */
	evd_pop_locked(evd, event);
	pthread_mutex_unlock(&evd->lock);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *event)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	int ret;

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	if (!(evd->flags & DAT_EVD_SOFTWARE_FLAG))
		return OFX_INVALID_ARG(1);
	if (!event || event->event_number != DAT_SOFTWARE_EVENT)
		return OFX_INVALID_ARG(2);
	ret = ofx_evd_post(evd, event);
	if (ret == -ENOSPC)
		return OFX_DAT_ERR(DAT_QUEUE_FULL, 0);
	return ofx_dat_status(ret, OFX_OBJ_EVD);
}

DAT_RETURN ofx_evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	DAT_EVENT *ring, *old;
	DAT_COUNT i;

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	if (qlen <= 0 || (evd->obj.ia && qlen > evd->obj.ia->dev_attr.max_cqe))
		return OFX_INVALID_ARG(2);
	/* The CQ cannot be resized through the seam; a deeper ring could overrun it. */
	if (evd->cq && qlen > evd->cq_depth)
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);

	ring = calloc(qlen, sizeof(*ring));
	if (!ring)
		return ofx_dat_status(-ENOMEM, OFX_OBJ_EVD);

	pthread_mutex_lock(&evd->lock);
	if (qlen < evd->count) {
		pthread_mutex_unlock(&evd->lock);
		free(ring);
		return OFX_INVALID_ARG(2);
	}
	for (i = 0; i < evd->count; i++)
		ring[i] = evd->ring[(evd->head + i) % evd->qlen];
	old = evd->ring;
	evd->ring = ring;
	evd->head = 0;
	evd->qlen = qlen;
	evd_fast_path_update(evd);
	pthread_mutex_unlock(&evd->lock);
	free(old);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_evd_free(DAT_EVD_HANDLE h)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	bool busy;

	if (!evd)
		return ofx_invalid_handle(OFX_OBJ_EVD);
	pthread_mutex_lock(&evd->lock);
	busy = atomic_load(&evd->refs) > 0 || evd->waiter ||
	       (evd->obj.ia && evd == evd->obj.ia->async_evd);
	if (busy)
		ofx_info("evd %p in use, not freed: %d references (eps, sps, srqs)%s%s",
			 (void *)evd, atomic_load(&evd->refs), evd->waiter ? ", a waiter" : "",
			 evd->obj.ia && evd == evd->obj.ia->async_evd ? ", the ia's async evd" : "");
	pthread_mutex_unlock(&evd->lock);
	if (busy)
		return evd_err_state(DAT_INVALID_STATE_EVD_IN_USE);
	ofx_evd_destroy(evd);
	return DAT_SUCCESS;
}

/*
 * Moves the EVD to a new CQ of at least `cqe` entries on the same channel;
 * the current one joins old_cqs.  The new CQ is armed at once: a waiter
 * already in poll() armed only the CQs it knew of.  evd->lock held.
 */
static int evd_move_to_new_cq(struct ofx_evd *evd, int cqe)
{
	struct ibv_cq *cq;
	int ret;

	if (evd->n_old_cqs == OFX_EVD_OLD_CQS) {
		ofx_err("evd %p: %d cqs already, cannot add one of %d entries", (void *)evd,
			evd->n_old_cqs + 1, cqe);
		return -ENOSPC;
	}
	errno = 0;
	cq = ofx_verbs->create_cq(evd->obj.ia->verbs, cqe, evd, evd->channel, 0);
	if (!cq) {
		const char *why;

		ret = ofx_verbs_create_failed(&why);
		ofx_err("evd %p: ibv_create_cq cqe %d for the moved evd: %s", (void *)evd, cqe, why);
		return ret;
	}
	if (ofx_verbs->req_notify_cq(cq, 0))
		ofx_warn("evd %p: ibv_req_notify_cq of the new cq failed", (void *)evd);
	evd->old_cqs[evd->n_old_cqs++] = evd->cq;
	evd->cq = cq;
	evd_fast_path_update(evd);	/* the old CQs are drained too: the slow path */
	evd->cq_depth = cq->cqe;
	return 0;
}

/* Makes the current CQ hold evd->cq_reserved entries (see evd.h).  lock held. */
static int evd_grow_cq(struct ofx_evd *evd)
{
	ofx_lock_assert_held(&evd->lock);
	int max = evd->obj.ia ? evd->obj.ia->dev_attr.max_cqe : evd->cq_reserved;
	int want, ret;

	if (evd->cq_reserved > max) {
		ofx_err("evd %p: its eps could have %d completions outstanding, the device's cqs "
			"hold %d", (void *)evd, evd->cq_reserved, max);
		return -ENOSPC;
	}
	/* double at least, so that many small EPs grow it rarely */
	want = evd->cq_depth * 2 > evd->cq_reserved ? evd->cq_depth * 2 : evd->cq_reserved;
	if (want > max)
		want = max;
	ret = evd->cq_fixed_size ? -EOPNOTSUPP : ofx_verbs->resize_cq(evd->cq, want);
	if (!ret) {
		evd->cq_depth = evd->cq->cqe;
		ofx_dbg("evd %p: cq grown to %d for %d reserved", (void *)evd, evd->cq_depth,
			evd->cq_reserved);
		return 0;
	}
	if (!evd->cq_fixed_size)
		ofx_info("evd %p: ibv_resize_cq %d -> %d: %s; new eps go to a new cq", (void *)evd,
			 evd->cq_depth, want, strerror(-ret));
	/* siw: EOPNOTSUPP; another failure may be transient, so resize is tried again */
	if (ret == -EOPNOTSUPP || ret == -ENOSYS)
		evd->cq_fixed_size = true;
	ret = evd_move_to_new_cq(evd, want);
	if (!ret)
		ofx_dbg("evd %p: moved to a cq of %d for %d reserved (%d older cqs)", (void *)evd,
			evd->cq_depth, evd->cq_reserved, evd->n_old_cqs);
	return ret;
}

int ofx_evd_reserve_cqes(struct ofx_evd *evd, int n)
{
	int ret = 0;

	if (!evd->cq || n <= 0)
		return 0;
	pthread_mutex_lock(&evd->lock);
	evd->cq_reserved += n;
	if (evd->cq_reserved > evd->cq_depth) {
		ret = evd_grow_cq(evd);
		if (ret)
			evd->cq_reserved -= n;
	}
	pthread_mutex_unlock(&evd->lock);
	return ret;
}

struct ibv_cq *ofx_evd_cq(struct ofx_evd *evd)
{
	struct ibv_cq *cq;

	pthread_mutex_lock(&evd->lock);
	cq = evd->cq;
	pthread_mutex_unlock(&evd->lock);
	return cq;
}

struct ibv_cq *ofx_evd_qp_cq(struct ofx_ia *ia, struct ofx_evd *evd)
{
	return evd && evd->cq ? ofx_evd_cq(evd) : ia->empty_cq;
}

void ofx_evd_unreserve_cqes(struct ofx_evd *evd, int n)
{
	if (!evd->cq || n <= 0)
		return;
	pthread_mutex_lock(&evd->lock);
	evd->cq_reserved -= n;
	pthread_mutex_unlock(&evd->lock);
}

void ofx_evd_get(struct ofx_evd *evd)
{
	atomic_fetch_add(&evd->refs, 1);
}

void ofx_evd_put(struct ofx_evd *evd)
{
	int old = atomic_fetch_sub(&evd->refs, 1);

	if (old <= 0)
		ofx_warn("evd %p: reference count underflow", (void *)evd);
}
