/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_PROGRESS_H
#define OFX_PROGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "obj.h"

/*
 * One progress engine per IA: a thread that waits in one epoll set on the
 * IA's rdma_cm event channel, the device async-event fd, extra fds that
 * other objects register (e.g. a completion channel that must be watched
 * while a p2p RTR or an XRC fence is awaited) and an eventfd used to wake
 * it up.  It also
 * runs one-shot timers (connection timeouts, bounded disconnect waits).
 * Handlers drain their fd until EAGAIN.  Shutdown writes the eventfd and
 * joins the thread; nothing sleep-polls.
 */
struct ofx_progress;

typedef void (*ofx_fd_handler)(void *arg);
typedef void (*ofx_timer_fn)(void *arg);

struct ofx_timer {
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC */
	ofx_timer_fn fn;
	void *arg;
	/*
	 * Written under the progress lock; read without it by cancel, which
	 * the owner calls with its own lock held, as it arms: false cannot
	 * turn true behind its back, only true false (the timer firing).
	 */
	atomic_bool armed;
	struct ofx_list link;
};

int ofx_progress_start(struct ofx_progress **prog_p, const char *name);
/* Wakes and joins the thread, then frees it; safe with NULL. */
void ofx_progress_stop(struct ofx_progress *prog);

/* Adds/removes an fd (EPOLLIN, level-triggered); the handler runs in the thread. */
int ofx_progress_add_fd(struct ofx_progress *prog, int fd, ofx_fd_handler fn, void *arg);
int ofx_progress_del_fd(struct ofx_progress *prog, int fd);

/*
 * Arms `t` to call fn(arg) in the progress thread after `timeout_us`.
 * Re-arming an armed timer moves it.  ofx_progress_timer_cancel() returns
 * true if the timer was armed (and now will not fire).  A timer callback
 * must not cancel or free the timer of another object without its lock.
 * Only an arm that makes `t` the earliest timer wakes the thread; a cancel
 * never does (the thread at worst wakes once at the old deadline, finds
 * nothing due and sleeps on): a connection arms and cancels several
 * timers that almost never fire.
 */
void ofx_progress_timer_arm_at(struct ofx_progress *prog, struct ofx_timer *t,
			       uint64_t deadline_ns, ofx_timer_fn fn, void *arg);
/* CLOCK_MONOTONIC in ns */
uint64_t ofx_now_ns(void);

/* At CLOCK_MONOTONIC `deadline_ns` (ofx_now_ns) above; 0 or a past one: due now. */
static inline void ofx_progress_timer_arm(struct ofx_progress *prog, struct ofx_timer *t,
					  uint64_t timeout_us, ofx_timer_fn fn, void *arg)
{
	/* no engine: the arm says so, the clock need not be read */
	ofx_progress_timer_arm_at(prog, t, prog ? ofx_now_ns() + timeout_us * 1000 : 0, fn, arg);
}
/*
 * ofx_progress_timer_arm for a timer armed right after starting work whose
 * end (done or failed) is an event on a watched fd within `event_us`, such
 * as an rdma_resolve_addr: the thread handles that event, and then takes
 * the timer's deadline for its sleep.  A timer not due before then (twice
 * `event_us`, for the event's lag) needs no wakeup of the thread now, which
 * saves a write, an epoll round and a read per connect.
 */
void ofx_progress_timer_arm_before_event(struct ofx_progress *prog, struct ofx_timer *t,
					 uint64_t timeout_us, uint64_t event_us, ofx_timer_fn fn,
					 void *arg);
bool ofx_progress_timer_cancel_armed(struct ofx_progress *prog, struct ofx_timer *t);

/* Most timers a connection cancels were never armed, or fired: no call then. */
static inline bool ofx_progress_timer_cancel(struct ofx_progress *prog, struct ofx_timer *t)
{
	if (!prog || !atomic_load_explicit(&t->armed, memory_order_acquire))
		return false;
	return ofx_progress_timer_cancel_armed(prog, t);
}

/*
 * Returns once the handler or timer callback running at the time of the call
 * (if any) has finished.  Objects call it before freeing memory a callback
 * may still touch.  No-op from the progress thread itself or with NULL.
 * All timer and fd functions above also accept a NULL `prog` (an IA whose
 * engine is already stopped) and then do nothing.
 */
void ofx_progress_barrier(struct ofx_progress *prog);

/* True if the caller is the progress thread of `prog`. */
bool ofx_progress_in_thread(const struct ofx_progress *prog);

/* poll() timeout in ms until the CLOCK_MONOTONIC `deadline` (UINT64_MAX = none):
 * -1 for none, 0 once expired, else rounded up so a wait never ends early. */
int ofx_poll_timeout_ms(uint64_t deadline);

#endif
