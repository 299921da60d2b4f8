/* SPDX-License-Identifier: BSD-2-Clause */
#include "wait.h"

#include <errno.h>
#include <time.h>

void ofx_waiter_init(struct ofx_waiter *w)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	/* deadlines come from ofx_now_ns(): not moved by a clock change */
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
}

void ofx_waiter_fini(struct ofx_waiter *w)
{
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

static void waiter_unlock(void *lock)
{
	pthread_mutex_unlock(lock);
}

int ofx_waiter_wait(struct ofx_waiter *w, bool (*done)(void *arg), void *arg,
		    uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ull),
		.tv_nsec = (long)(deadline_ns % 1000000000ull),
	};
	int ret = 0;

	pthread_mutex_lock(&w->lock);
	pthread_cleanup_push(waiter_unlock, &w->lock);
	while (!done(arg) && ret != ETIMEDOUT)
		ret = deadline_ns == UINT64_MAX ? pthread_cond_wait(&w->cond, &w->lock) :
		      pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	/* the condition may have come true together with the deadline */
	if (ret == ETIMEDOUT && done(arg))
		ret = 0;
	pthread_cleanup_pop(1);
	return ret == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void ofx_waiter_wait_reporting(struct ofx_waiter *w, bool (*done)(void *arg), void *arg,
			       void (*report)(void *arg, unsigned int waited_s))
{
	struct timespec now;
	uint64_t start;

	/* CLOCK_MONOTONIC as ofx_now_ns (progress.h, a layer above) */
	clock_gettime(CLOCK_MONOTONIC, &now);
	start = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	for (unsigned int waited = OFX_WAITER_REPORT_S;; waited += OFX_WAITER_REPORT_S) {
		if (!ofx_waiter_wait(w, done, arg, start + waited * 1000000000ull))
			return;
		report(arg, waited);
	}
}

void ofx_waiter_wake(struct ofx_waiter *w)
{
	pthread_mutex_lock(&w->lock);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void ofx_waiter_count_put(struct ofx_waiter *w, _Atomic int *count)
{
	pthread_mutex_lock(&w->lock);
	if (atomic_fetch_sub(count, 1) == 1)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}
