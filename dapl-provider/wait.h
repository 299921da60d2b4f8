/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_WAIT_H
#define OFX_WAIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * A wait for a condition that another thread makes true, with a deadline,
 * woken by that thread instead of polled.  The waker changes its state first
 * (an atomic, or fields under its own lock) and then calls ofx_waiter_wake();
 * the waiter tests `done` under the waiter's lock, so a wake between its
 * test and its sleep is not lost.  `done` must not take locks that a waker
 * holds while it calls ofx_waiter_wake().
 */
struct ofx_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC */
};

void ofx_waiter_init(struct ofx_waiter *w);
void ofx_waiter_fini(struct ofx_waiter *w);

/*
 * Until done(arg) is true (0) or the CLOCK_MONOTONIC deadline in ns passes
 * (-ETIMEDOUT; UINT64_MAX waits without one).  Not a cancellation point
 * that leaves the lock held: a cancelled waiter unlocks.
 */
int ofx_waiter_wait(struct ofx_waiter *w, bool (*done)(void *arg), void *arg,
		    uint64_t deadline_ns);
/*
 * ofx_waiter_wait without a deadline, for a condition that another thread's
 * short work makes true (a handler or a post finishing), where giving up
 * would free what that work still touches: every OFX_WAITER_REPORT_S
 * seconds the condition still does not hold, report(arg, seconds waited)
 * says so (a stuck thread is worth a warning), and the wait goes on.
 */
#define OFX_WAITER_REPORT_S 5
void ofx_waiter_wait_reporting(struct ofx_waiter *w, bool (*done)(void *arg), void *arg,
			       void (*report)(void *arg, unsigned int waited_s));
/* Wakes every waiter of `w` to test its condition again.  Any thread. */
void ofx_waiter_wake(struct ofx_waiter *w);
/*
 * Drops a use count by one under the waiter's lock and wakes the waiters
 * when it reaches 0.  Under the lock, so that a waiter that sees 0 (and may
 * then free the object holding `w`) does so only after the waker let go.
 */
void ofx_waiter_count_put(struct ofx_waiter *w, _Atomic int *count);

#endif
