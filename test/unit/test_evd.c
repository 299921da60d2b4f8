/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "blocked.h"
#include "fake_verbs.h"

#include "dto.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "progress.h"
#include "status.h"
#include "verbs.h"
#include "wait.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dat2/udat.h>

/*
 * Event dispatchers without a device, on the hand-built IA and the CQ model
 * of fake_verbs.h: scripted work completions, a one-shot arm, and a pipe
 * standing in for the completion channel fd, written when a completion
 * lands on an armed CQ (or on demand, for spurious wakeups).
 */

#define CQE_EXTRA 3		/* the model rounds the CQ up like a device may */

static struct ofx_ia test_ia;

static void setup(void)
{
	fake_verbs_install();
	fake_verbs.cq_extra = CQE_EXTRA;
	fake_ia_init(&test_ia);
}

static void teardown(void)
{
	CU_ASSERT_EQUAL(fake_verbs.unbalanced, 0);
	CU_ASSERT_EQUAL(atomic_load(&fake_verbs.write_failures), 0);
	fake_ia_fini(&test_ia);
	ofx_verbs_set(NULL);
}

static struct ofx_evd *evd_new(DAT_COUNT qlen, DAT_EVD_FLAGS flags)
{
	struct ofx_evd *evd = NULL;

	CU_ASSERT_FATAL(ofx_evd_create_internal(&test_ia, qlen, flags, &evd) == 0);
	CU_ASSERT_FATAL(evd != NULL);
	return evd;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int post_conn(struct ofx_evd *evd, int tag)
{
	return ofx_evd_post_conn(evd, DAT_CONNECTION_EVENT_ESTABLISHED, (DAT_EP_HANDLE)evd, tag,
				 NULL);
}

static int conn_tag(const DAT_EVENT *ev)
{
	return ev->event_data.connect_event_data.private_data_size;
}

static bool evd_has_waiter(struct ofx_evd *evd)
{
	bool w;

	pthread_mutex_lock(&evd->lock);
	w = evd->waiter;
	pthread_mutex_unlock(&evd->lock);
	return w;
}

/*
 * Bound of every wait for another thread's state below: generous, a busy
 * CI machine under valgrind can stall a thread for seconds.
 */
#define WAIT_BOUND_US (30u * 1000 * 1000)

struct waiter_arg {
	struct ofx_evd *evd;
	DAT_TIMEOUT timeout;
	DAT_COUNT threshold;
	DAT_RETURN status;
	DAT_EVENT ev;
	DAT_COUNT nmore;
	uint64_t elapsed_us;
	_Atomic pid_t tid;	/* the waiter thread, once it runs */
};

/*
 * Waits until the waiter thread is inside evd_wait and asleep in its
 * poll() (bounded): an event from now on must wake it, it cannot be found
 * by the ring check or a drain before the poll instead.
 */
static void await_waiter(struct waiter_arg *w)
{
	uint64_t end = now_us() + WAIT_BOUND_US;

	while ((!atomic_load(&w->tid) || !evd_has_waiter(w->evd)) && now_us() < end)
		sleep_us(1000);
	CU_ASSERT_FATAL(evd_has_waiter(w->evd));
	CU_ASSERT_FATAL(ut_await_blocked(atomic_load(&w->tid), ut_in_poll, NULL));
}

static void *waiter_main(void *p)
{
	struct waiter_arg *a = p;
	uint64_t t0 = now_us();

	atomic_store(&a->tid, ut_gettid());
	a->status = ofx_evd_wait(a->evd, a->timeout, a->threshold, &a->ev, &a->nmore);
	a->elapsed_us = now_us() - t0;
	return NULL;
}

/*
 * Joins a waiter thread that should be leaving evd_wait.  Watchdog: if it is
 * still inside after WAIT_BOUND_US (a lost wakeup), the test fails and the
 * thread is released with a tag -1 event and a raw eventfd write, so that
 * it does not hang.  No wall-time bound besides: a slow machine is no lost
 * wakeup.
 */
static void join_waiter(struct ofx_evd *evd, pthread_t th)
{
	uint64_t end = now_us() + WAIT_BOUND_US;
	uint64_t one = 1;

	while (evd_has_waiter(evd) && now_us() < end)
		sleep_us(1000);
	if (evd_has_waiter(evd)) {
		CU_FAIL("lost wakeup: the waiter is still inside evd_wait");
		post_conn(evd, -1);
		if (write(evd->wake_fd, &one, sizeof(one)) != sizeof(one))
			atomic_fetch_add(&fake_verbs.write_failures, 1);
	}
	pthread_join(th, NULL);
}

static void test_events_come_out_in_fifo_order(void)
{
	struct ofx_evd *evd;
	DAT_EVENT ev;
	int i;

	setup();
	evd = evd_new(8, DAT_EVD_CONNECTION_FLAG);
	for (i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(post_conn(evd, i), 0);
	for (i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(conn_tag(&ev), i);
		CU_ASSERT_PTR_EQUAL(ev.evd_handle, evd);
		CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	}
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), 0x000D0000);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_ring_wraps_around(void)
{
	struct ofx_evd *evd;
	DAT_EVENT ev;
	int round, i, tag = 0, expect = 0;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	for (round = 0; round < 10; round++) {
		for (i = 0; i < 3; i++)
			CU_ASSERT_EQUAL(post_conn(evd, tag++), 0);
		for (i = 0; i < 3; i++) {
			CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
			CU_ASSERT_EQUAL(conn_tag(&ev), expect++);
		}
	}
	CU_ASSERT_EQUAL(evd->count, 0);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_overflow_drops_and_reports_once_per_event(void)
{
	struct ofx_evd *async, *evd;
	DAT_EVENT ev;
	int i;

	setup();
	async = evd_new(8, DAT_EVD_ASYNC_FLAG);
	test_ia.async_evd = async;
	evd = evd_new(3, DAT_EVD_CONNECTION_FLAG);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(post_conn(evd, i), 0);
	CU_ASSERT_EQUAL(post_conn(evd, 100), -ENOSPC);
	CU_ASSERT_EQUAL(post_conn(evd, 101), -ENOSPC);

	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(async, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
		CU_ASSERT_PTR_EQUAL(ev.event_data.asynch_error_event_data.dat_handle, evd);
	}
	CU_ASSERT_EQUAL(ofx_evd_dequeue(async, &ev), DAT_QUEUE_EMPTY);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(conn_tag(&ev), i);
	}
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);
	ofx_evd_destroy(evd);
	test_ia.async_evd = NULL;
	ofx_evd_destroy(async);
	teardown();
}

static void test_async_evd_overflow_is_catastrophic(void)
{
	struct ofx_evd *async;
	DAT_EVENT ev;
	DAT_COUNT nmore;

	setup();
	async = evd_new(2, DAT_EVD_ASYNC_FLAG);
	test_ia.async_evd = async;
	CU_ASSERT_EQUAL(ofx_evd_post_async(async, DAT_ASYNC_ERROR_EP_BROKEN, NULL), 0);
	CU_ASSERT_EQUAL(ofx_evd_post_async(async, DAT_ASYNC_ERROR_EP_BROKEN, NULL), 0);
	CU_ASSERT_EQUAL(ofx_evd_post_async(async, DAT_ASYNC_ERROR_EP_BROKEN, NULL), -ENOSPC);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(async, &ev)), DAT_INVALID_STATE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_wait(async, 0, 1, &ev, &nmore)), DAT_INVALID_STATE);
	/* and the IA's own async EVD cannot be freed by the consumer */
	CU_ASSERT_EQUAL(ofx_evd_free(async),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
	test_ia.async_evd = NULL;
	ofx_evd_destroy(async);
	teardown();
}

static void test_dequeue_empty_is_bare_queue_empty(void)
{
	struct ofx_evd *sw, *dto;
	DAT_EVENT ev;

	setup();
	sw = evd_new(4, DAT_EVD_SOFTWARE_FLAG);
	dto = evd_new(4, DAT_EVD_DTO_FLAG);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(sw, &ev), 0x000D0000);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), 0x000D0000);
	ofx_evd_destroy(sw);
	ofx_evd_destroy(dto);
	teardown();
}

static void test_wait_timeout_zero_on_empty_expires(void)
{
	struct ofx_evd *evd, *dto;
	DAT_COUNT nmore = 77;
	DAT_EVENT ev;
	DAT_RETURN st;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	dto = evd_new(4, DAT_EVD_DTO_FLAG);
	st = ofx_evd_wait(evd, 0, 1, &ev, &nmore);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(st), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_EQUAL(nmore, 0);
	nmore = 77;
	st = ofx_evd_wait(dto, 0, 1, &ev, &nmore);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(st), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_EQUAL(nmore, 0);
	/* one event queued but threshold 2: expires and reports it in nmore */
	CU_ASSERT_EQUAL(ofx_evd_post_conn(dto, DAT_CONNECTION_EVENT_BROKEN, NULL, 0, NULL), 0);
	st = ofx_evd_wait(dto, 0, 2, &ev, &nmore);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(st), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_EQUAL(nmore, 1);
	ofx_evd_destroy(evd);
	ofx_evd_destroy(dto);
	teardown();
}

static void test_wait_argument_checks(void)
{
	struct ofx_evd *evd, *dto;
	DAT_COUNT nmore;
	DAT_EVENT ev;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	dto = evd_new(4, DAT_EVD_DTO_FLAG);
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 0, &ev, &nmore), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, -1, &ev, &nmore), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 5, &ev, &nmore), OFX_INVALID_ARG(3));
	/* threshold > 1 needs a CQ-backed EVD */
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 2, &ev, &nmore), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_evd_wait(dto, 0, dto->qlen + 1, &ev, &nmore), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 1, NULL, &nmore), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_wait(NULL, 0, 1, &ev, &nmore)), DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_wait(&test_ia, 0, 1, &ev, &nmore)),
			DAT_INVALID_HANDLE);
	ofx_evd_destroy(evd);
	ofx_evd_destroy(dto);
	teardown();
}

static void test_wait_returns_oldest_with_nmore(void)
{
	struct ofx_evd *evd;
	DAT_COUNT nmore = -1;
	DAT_EVENT ev;

	setup();
	evd = evd_new(8, DAT_EVD_CONNECTION_FLAG);
	post_conn(evd, 1);
	post_conn(evd, 2);
	post_conn(evd, 3);
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore), DAT_SUCCESS);
	CU_ASSERT_EQUAL(conn_tag(&ev), 1);
	CU_ASSERT_EQUAL(nmore, 2);
	ofx_evd_destroy(evd);
	teardown();
}

static void *poster_main(void *p)
{
	post_conn(p, 42);
	return NULL;
}

static void test_post_from_another_thread_wakes_infinite_waiter(void)
{
	struct waiter_arg w = { .timeout = DAT_TIMEOUT_INFINITE, .threshold = 1 };
	pthread_t wt, pt;

	setup();
	w.evd = evd_new(4, DAT_EVD_CONNECTION_FLAG | DAT_EVD_DTO_FLAG);
	CU_ASSERT_FATAL(pthread_create(&wt, NULL, waiter_main, &w) == 0);
	/* posted once the waiter is inside evd_wait, not after a fixed delay */
	await_waiter(&w);
	CU_ASSERT_FATAL(pthread_create(&pt, NULL, poster_main, w.evd) == 0);
	pthread_join(pt, NULL);
	/* watchdog: a lost wakeup must fail the test, not hang it */
	join_waiter(w.evd, wt);
	CU_ASSERT_EQUAL(w.status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(w.ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(conn_tag(&w.ev), 42);
	CU_ASSERT_EQUAL(w.nmore, 0);
	ofx_evd_destroy(w.evd);
	teardown();
}

static void test_completion_wakes_infinite_waiter(void)
{
	struct waiter_arg w = { .timeout = DAT_TIMEOUT_INFINITE, .threshold = 1 };
	struct ofx_ep *ep;
	struct ibv_wc wc;
	pthread_t wt;

	setup();
	ep = fake_ep_new(64);
	w.evd = evd_new(4, DAT_EVD_DTO_FLAG);
	CU_ASSERT_FATAL(pthread_create(&wt, NULL, waiter_main, &w) == 0);
	await_waiter(&w);
	wc = fake_send_wc(ep, 0xabc);
	fake_cq_push(w.evd, &wc);
	join_waiter(w.evd, wt);
	CU_ASSERT_EQUAL(w.status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(w.ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(w.ev.event_data.dto_completion_event_data.user_cookie.as_64, 0xabc);
	CU_ASSERT_PTR_EQUAL(w.ev.evd_handle, w.evd);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ofx_evd_destroy(w.evd);
	fake_ep_delete(ep);
	teardown();
}

static void test_threshold_two_waits_for_two_events(void)
{
	struct waiter_arg w = { .timeout = DAT_TIMEOUT_INFINITE, .threshold = 2 };
	struct ofx_ep *ep;
	struct ibv_wc wc;
	pthread_t wt;

	setup();
	ep = fake_ep_new(64);
	w.evd = evd_new(8, DAT_EVD_DTO_FLAG);
	CU_ASSERT_FATAL(pthread_create(&wt, NULL, waiter_main, &w) == 0);
	await_waiter(&w);
	wc = fake_send_wc(ep, 1);
	fake_cq_push(w.evd, &wc);
	/* negative check: one completion is not enough, the waiter stays
	 * inside for 50 ms (a slow waiter passes it too; it cannot false-fail) */
	sleep_us(50000);
	CU_ASSERT_TRUE(evd_has_waiter(w.evd));
	wc = fake_send_wc(ep, 2);
	fake_cq_push(w.evd, &wc);
	join_waiter(w.evd, wt);
	CU_ASSERT_EQUAL(w.status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(w.ev.event_data.dto_completion_event_data.user_cookie.as_64, 1);
	CU_ASSERT_EQUAL(w.nmore, 1);
	CU_ASSERT(w.elapsed_us >= 50000);
	ofx_evd_destroy(w.evd);
	fake_ep_delete(ep);
	teardown();
}

struct spurious_arg {
	struct ofx_evd *evd;
	atomic_bool stop;
};

static void *spurious_main(void *p)
{
	struct spurious_arg *a = p;
	uint64_t end = now_us() + WAIT_BOUND_US;
	uint64_t one = 1;

	while (!atomic_load(&a->stop) && now_us() < end) {
		if (a->evd->cq)
			fake_spurious_channel_event(a->evd);
		if (write(a->evd->wake_fd, &one, sizeof(one)) != sizeof(one))
			atomic_fetch_add(&fake_verbs.write_failures, 1);
		sleep_us(2000);	/* the stream of wakeups is the thing under test */
	}
	/* watchdog: a wait that never expires fails the test (UNWAITABLE), not hangs it */
	if (!atomic_load(&a->stop))
		ofx_evd_set_unwaitable(a->evd);
	return NULL;
}

/* With `flags` a CQ-backed EVD or one without a CQ (the wait of each differs). */
static void timeout_despite_spurious_wakeups(DAT_EVD_FLAGS flags)
{
	struct spurious_arg s = { 0 };
	DAT_COUNT nmore = -1;
	DAT_EVENT ev;
	DAT_RETURN st;
	uint64_t t0, dt;
	pthread_t th;

	setup();
	s.evd = evd_new(4, flags);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, spurious_main, &s) == 0);
	t0 = now_us();
	st = ofx_evd_wait(s.evd, 60000, 1, &ev, &nmore);
	dt = now_us() - t0;
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(st), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_EQUAL(nmore, 0);
	/* never early; "not restarted by each wakeup" is the status above: such
	 * a wait outlives the wakeups and ends UNWAITABLE by the watchdog */
	CU_ASSERT(dt >= 60000);
	ofx_evd_destroy(s.evd);
	teardown();
}

static void test_timeout_honoured_despite_spurious_wakeups(void)
{
	timeout_despite_spurious_wakeups(DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG);
}

/* The wait without a CQ takes its first sleep from the timeout, then counts down. */
static void test_timeout_honoured_despite_spurious_wakeups_no_cq(void)
{
	timeout_despite_spurious_wakeups(DAT_EVD_CONNECTION_FLAG);
}

static void test_second_waiter_is_refused(void)
{
	struct waiter_arg w = { .timeout = DAT_TIMEOUT_INFINITE, .threshold = 1 };
	DAT_COUNT nmore;
	DAT_EVENT ev;
	pthread_t wt;

	setup();
	w.evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_FATAL(pthread_create(&wt, NULL, waiter_main, &w) == 0);
	await_waiter(&w);
	CU_ASSERT_EQUAL(ofx_evd_wait(w.evd, 0, 1, &ev, &nmore),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
	CU_ASSERT_EQUAL(ofx_evd_free(w.evd),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
	post_conn(w.evd, 7);
	join_waiter(w.evd, wt);
	CU_ASSERT_EQUAL(w.status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(conn_tag(&w.ev), 7);
	ofx_evd_destroy(w.evd);
	teardown();
}

/* set_unwaitable ends an infinite wait on a new EVD of `flags`, which it returns. */
static struct ofx_evd *unwaitable_ends_a_wait(DAT_EVD_FLAGS flags)
{
	struct waiter_arg w = { .timeout = DAT_TIMEOUT_INFINITE, .threshold = 1 };
	pthread_t wt;

	w.evd = evd_new(4, flags);
	CU_ASSERT_FATAL(pthread_create(&wt, NULL, waiter_main, &w) == 0);
	await_waiter(&w);
	CU_ASSERT_EQUAL(ofx_evd_set_unwaitable(w.evd), DAT_SUCCESS);
	join_waiter(w.evd, wt);
	CU_ASSERT_EQUAL(w.status, OFX_DAT_ERR(DAT_INVALID_STATE,
					      DAT_INVALID_STATE_EVD_UNWAITABLE));
	return w.evd;
}

static void test_set_unwaitable_wakes_the_waiter(void)
{
	struct ofx_evd *evd;
	DAT_COUNT nmore;
	DAT_EVENT ev;

	setup();
	evd = unwaitable_ends_a_wait(DAT_EVD_DTO_FLAG);
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 1, &ev, &nmore),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE));
	/* dequeue still works on an unwaitable EVD */
	post_conn(evd, 3);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_clear_unwaitable(evd), DAT_SUCCESS);
	post_conn(evd, 4);
	CU_ASSERT_EQUAL(ofx_evd_wait(evd, 0, 1, &ev, &nmore), DAT_SUCCESS);
	CU_ASSERT_EQUAL(conn_tag(&ev), 4);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_set_unwaitable_wakes_the_waiter_no_cq(void)
{
	setup();
	ofx_evd_destroy(unwaitable_ends_a_wait(DAT_EVD_CR_FLAG));
	teardown();
}

static void *cancel_settings_main(void *arg)
{
	static const int settings[][2] = {
		{ PTHREAD_CANCEL_ENABLE, PTHREAD_CANCEL_ASYNCHRONOUS },
		{ PTHREAD_CANCEL_ENABLE, PTHREAD_CANCEL_DEFERRED },
		{ PTHREAD_CANCEL_DISABLE, PTHREAD_CANCEL_ASYNCHRONOUS },
		{ PTHREAD_CANCEL_DISABLE, PTHREAD_CANCEL_DEFERRED },
	};
	struct ofx_evd *evd = arg;
	int state, type, bad = 0;
	DAT_COUNT nmore;
	DAT_EVENT ev;

	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		/* an event found at once, an expiry after a sleep, a refusal */
		for (int kind = 0; kind < 3; kind++) {
			DAT_RETURN st;

			if (kind == 0)
				post_conn(evd, 1);
			/* the type first: async with cancellation enabled cancels anywhere */
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
			pthread_setcanceltype(settings[i][1], NULL);
			pthread_setcancelstate(settings[i][0], NULL);
			st = ofx_evd_wait(evd, kind == 1 ? 1000 : 0, kind == 2 ? 0 : 1, &ev, &nmore);
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
			pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
			if (state != settings[i][0] || type != settings[i][1])
				bad++;
			if (DAT_GET_TYPE(st) != (kind == 0 ? DAT_SUCCESS : kind == 1 ?
						 DAT_TIMEOUT_EXPIRED : DAT_INVALID_PARAMETER))
				bad++;
		}
	}
	return (void *)(intptr_t)bad;
}

/* A wait gives the caller's cancellation state and type back, whichever path it took. */
static void test_wait_keeps_the_callers_cancel_settings(void)
{
	struct ofx_evd *evd, *dto;
	pthread_t t;
	void *res;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	dto = evd_new(4, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cancel_settings_main, evd) == 0);
	CU_ASSERT_EQUAL(pthread_join(t, &res), 0);
	CU_ASSERT_PTR_EQUAL(res, NULL);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cancel_settings_main, dto) == 0);
	CU_ASSERT_EQUAL(pthread_join(t, &res), 0);
	CU_ASSERT_PTR_EQUAL(res, NULL);
	ofx_evd_destroy(evd);
	ofx_evd_destroy(dto);
	teardown();
}

static void test_post_se_rules(void)
{
	struct ofx_evd *sw, *conn;
	DAT_EVENT ev, out;
	int token;

	setup();
	sw = evd_new(2, DAT_EVD_SOFTWARE_FLAG);
	conn = evd_new(2, DAT_EVD_CONNECTION_FLAG);
	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_SOFTWARE_EVENT;
	ev.event_data.software_event_data.pointer = &token;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_post_se(conn, &ev)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ofx_evd_post_se(sw, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_post_se(sw, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_post_se(sw, &ev)), DAT_QUEUE_FULL);
	ev.event_number = DAT_CONNECTION_EVENT_ESTABLISHED;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_post_se(sw, &ev)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(sw, &out), DAT_SUCCESS);
	CU_ASSERT_EQUAL(out.event_number, DAT_SOFTWARE_EVENT);
	CU_ASSERT_PTR_EQUAL(out.event_data.software_event_data.pointer, &token);
	CU_ASSERT_PTR_EQUAL(out.evd_handle, sw);
	ofx_evd_destroy(sw);
	ofx_evd_destroy(conn);
	teardown();
}

static void test_create_checks_and_query(void)
{
	DAT_EVD_HANDLE h = NULL, h2 = NULL;
	DAT_EVD_PARAM param;
	DAT_COUNT max;

	setup();
	max = test_ia.dev_attr.max_cqe;
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, 0, NULL, DAT_EVD_DTO_FLAG, &h),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, max + 1, NULL, DAT_EVD_DTO_FLAG, &h),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, 8, NULL, 0, &h), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, 8, NULL, DAT_EVD_ASYNC_FLAG, &h),
			OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, 8, NULL, DAT_EVD_DEFAULT_FLAG, &h),
			OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(ofx_evd_create(&test_ia, 8, NULL, 0x4000, &h), OFX_INVALID_ARG(4));
	CU_ASSERT_PTR_NULL(h);

	/* DTO and CONNECTION merge; the CQ's larger depth is reported */
	CU_ASSERT_EQUAL_FATAL(ofx_evd_create(&test_ia, 10, NULL,
					     DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG, &h),
			      DAT_SUCCESS);
	/* a live object of the wrong type is not a CNO */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_create(&test_ia, 8, h, DAT_EVD_CR_FLAG, &h2)),
			DAT_INVALID_HANDLE);
	memset(&param, 0, sizeof(param));
	CU_ASSERT_EQUAL(ofx_evd_query(h, DAT_EVD_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.evd_qlen, 10 + CQE_EXTRA);
	CU_ASSERT_EQUAL(param.evd_flags, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_EQUAL(param.evd_state, DAT_EVD_STATE_ENABLED | DAT_EVD_STATE_WAITABLE);
	CU_ASSERT_PTR_NULL(param.cno_handle);
	CU_ASSERT_PTR_EQUAL(param.ia_handle, ofx_ia_dat_handle(&test_ia));
	CU_ASSERT_EQUAL(ofx_evd_disable(h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_set_unwaitable(h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_query(h, DAT_EVD_FIELD_EVD_STATE, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.evd_state, DAT_EVD_STATE_DISABLED | DAT_EVD_STATE_UNWAITABLE);
	CU_ASSERT_EQUAL(ofx_evd_enable(h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_query(h, DAT_EVD_FIELD_EVD_STATE, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.evd_state, DAT_EVD_STATE_ENABLED | DAT_EVD_STATE_UNWAITABLE);
	CU_ASSERT_EQUAL(ofx_evd_free(h), DAT_SUCCESS);
	teardown();
}

static void test_disabled_evd_still_queues(void)
{
	struct ofx_evd *evd;
	DAT_EVENT ev;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_EQUAL(ofx_evd_disable(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(post_conn(evd, 5), 0);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(conn_tag(&ev), 5);
	ofx_evd_destroy(evd);
	teardown();
}

static void test_free_refused_while_referenced(void)
{
	struct ofx_evd *evd;

	setup();
	evd = evd_new(4, DAT_EVD_DTO_FLAG);
	ofx_evd_get(evd);
	CU_ASSERT_EQUAL(ofx_evd_free(evd),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
	ofx_evd_put(evd);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	teardown();
}

static void test_resize_keeps_order_and_limits(void)
{
	struct ofx_evd *evd, *dto;
	DAT_EVENT ev;
	int i;

	setup();
	evd = evd_new(4, DAT_EVD_CONNECTION_FLAG);
	/* move head off slot 0 so that the copy has to unwrap */
	post_conn(evd, 0);
	post_conn(evd, 1);
	ofx_evd_dequeue(evd, &ev);
	ofx_evd_dequeue(evd, &ev);
	for (i = 0; i < 4; i++)
		post_conn(evd, 10 + i);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_resize(evd, 3)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_resize(evd, 0)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ofx_evd_resize(evd, 6), DAT_SUCCESS);
	post_conn(evd, 14);
	post_conn(evd, 15);
	CU_ASSERT_EQUAL(post_conn(evd, 16), -ENOSPC);
	for (i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(conn_tag(&ev), 10 + i);
	}
	dto = evd_new(8, DAT_EVD_DTO_FLAG);
	CU_ASSERT_NOT_EQUAL(ofx_evd_resize(dto, dto->cq_depth + 1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_resize(dto, 4), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dto->qlen, 4);
	ofx_evd_destroy(evd);
	ofx_evd_destroy(dto);
	teardown();
}

/* The device completes `n` sends of `ep` on dto's CQ, cookies first, first + 1, ... */
static void push_sends(struct ofx_ep *ep, struct ofx_evd *dto, uint64_t first, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		wc = fake_send_wc(ep, first + i);
		fake_cq_push(dto, &wc);
	}
}

/* setup(), then an EP and a DTO EVD of qlen 16 polling `batch` entries at a time. */
static struct ofx_evd *batch_evd_new(unsigned int batch, struct ofx_ep **ep_p)
{
	setup();
	test_ia.cfg.cq_batch = batch;
	*ep_p = fake_ep_new(64);
	return evd_new(16, DAT_EVD_DTO_FLAG);
}

static void test_drain_batches_and_leaves_overflow_in_cq(void)
{
	struct ofx_ep *ep;
	struct ofx_evd *dto = batch_evd_new(4, &ep);
	DAT_EVENT ev;
	int i;

	push_sends(ep, dto, 0, 10);
	CU_ASSERT_EQUAL(ofx_evd_drain_cq(dto), 10);
	CU_ASSERT(fake_cq_of(dto->cq)->max_poll <= 4);
	for (i = 0; i < 10; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, i);
	}

	/* a ring smaller than the backlog: the rest waits in the CQ, nothing is lost */
	CU_ASSERT_EQUAL(ofx_evd_resize(dto, 4), DAT_SUCCESS);
	push_sends(ep, dto, 100, 7);
	CU_ASSERT_EQUAL(ofx_evd_drain_cq(dto), 4);
	CU_ASSERT_EQUAL(fake_cq_pending(dto), 3);
	CU_ASSERT_EQUAL(ofx_evd_drain_cq(dto), 0);
	for (i = 0; i < 7; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64,
				100 + i);
	}
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ofx_evd_destroy(dto);
	fake_ep_delete(ep);
	teardown();
}

/*
 * cq_batch=1: a poll of one entry cannot tell the CQ empty, so the
 * dequeue takes its slow path (evd_dequeue_slow), and still returns every
 * completion once, in order, then a bare QUEUE_EMPTY.
 */
static void test_dequeue_one_at_a_time_batch(void)
{
	struct ofx_ep *ep;
	struct ofx_evd *dto = batch_evd_new(1, &ep);
	DAT_EVENT ev;

	push_sends(ep, dto, 7, 3);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
		CU_ASSERT_EQUAL(ev.evd_handle, (DAT_EVD_HANDLE)dto);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 7 + i);
	}
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), 0x000D0000);
	CU_ASSERT(fake_cq_of(dto->cq)->max_poll <= 1);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ofx_evd_destroy(dto);
	fake_ep_delete(ep);
	teardown();
}

/*
 * An EVD of qlen 4 shared by EPs that can have more work requests
 * outstanding: the CQ grows so the device never drops a completion
 * (ofx_fault_tests evd_overflow lost 9 of 16 on rxe before), the ring keeps
 * its length, and a reservation no CQ can hold is refused.
 */
static void test_cq_grows_for_reserved_work_requests(void)
{
	struct ofx_evd *evd;
	int depth, ring, grown;

	setup();
	evd = evd_new(4, DAT_EVD_DTO_FLAG);
	depth = evd->cq_depth;
	ring = evd->qlen;
	ofx_evd_reserve_cqes(evd, depth);
	CU_ASSERT_EQUAL(evd->cq->cqe, depth);	/* fits: untouched */
	ofx_evd_reserve_cqes(evd, 17);
	CU_ASSERT(evd->cq_depth >= depth + 17);
	CU_ASSERT_EQUAL(evd->cq_depth, evd->cq->cqe);
	CU_ASSERT_EQUAL(evd->qlen, ring);
	grown = evd->cq_depth;
	ofx_evd_unreserve_cqes(evd, depth + 17);
	CU_ASSERT_EQUAL(evd->cq_reserved, 0);
	CU_ASSERT_EQUAL(evd->cq_depth, grown);	/* never shrinks */
	/* beyond what any CQ of the device holds: refused, nothing reserved */
	CU_ASSERT_EQUAL(ofx_evd_reserve_cqes(evd, FAKE_CQ_MAX + 1), -ENOMEM);
	CU_ASSERT_EQUAL(evd->cq_depth, grown);
	CU_ASSERT_EQUAL(evd->cq_reserved, 0);
	CU_ASSERT_EQUAL(evd->n_old_cqs, 0);
	CU_ASSERT_EQUAL(ofx_evd_reserve_cqes(evd, 2000), -ENOSPC);	/* > max_cqe 1024 */
	CU_ASSERT_EQUAL(evd->cq_reserved, 0);
	ofx_evd_destroy(evd);
	teardown();
}

/* A suppressed RDMA write of `ep` completes successfully on `dto`'s CQ. */
static void push_suppressed_write(struct ofx_ep *ep, struct ofx_evd *dto)
{
	struct ofx_cookie *c = ofx_cookie_ring_reserve(&ep->send_ring);
	struct ibv_wc wc;

	c->op = OFX_OP_RDMA_WRITE;
	c->flags = OFX_COOKIE_F_SUPPRESS;
	ofx_cookie_ring_commit(&ep->send_ring);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = (uintptr_t)c;
	fake_cq_push(dto, &wc);
}

static void test_suppressed_completion_queues_nothing(void)
{
	struct ofx_ep *ep;
	struct ofx_evd *dto;
	DAT_EVENT ev;

	setup();
	ep = fake_ep_new(64);
	dto = evd_new(4, DAT_EVD_DTO_FLAG);
	push_suppressed_write(ep, dto);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(fake_cq_pending(dto), 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ofx_evd_destroy(dto);
	fake_ep_delete(ep);
	teardown();
}

/*
 * Two sends (`first`, first + 1) were in the CQ: the dequeue hands out the
 * first and has queued the second behind it, the CQ empty; then the second,
 * then nothing, every slot of the EP retired.
 */
static void expect_one_handed_one_queued(struct ofx_evd *dto, struct ofx_ep *ep, uint64_t first)
{
	DAT_EVENT ev;

	memset(&ev, 0xff, sizeof(ev));
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(ev.evd_handle, dto);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, first);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 64);
	CU_ASSERT_EQUAL(dto->count, 1);
	CU_ASSERT_EQUAL(fake_cq_pending(dto), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, first + 1);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
}

/*
 * A dequeue on an empty ring hands the oldest new event straight to the
 * caller and queues the rest of the batch behind it; a suppressed success in
 * between is skipped, not delivered as an empty event.
 */
static void test_dequeue_from_cq_keeps_order_and_skips_silent_work(void)
{
	struct ofx_ep *ep;
	struct ofx_evd *dto;
	struct ibv_wc wc;

	setup();
	ep = fake_ep_new(64);
	dto = evd_new(8, DAT_EVD_DTO_FLAG);
	push_suppressed_write(ep, dto);
	wc = fake_send_wc(ep, 1);
	fake_cq_push(dto, &wc);
	wc = fake_send_wc(ep, 2);
	fake_cq_push(dto, &wc);

	expect_one_handed_one_queued(dto, ep, 1);
	ofx_evd_destroy(dto);
	fake_ep_delete(ep);
	teardown();
}

/*
 * The dequeue settles a lone plain completion itself (evd_dequeue_from_cq);
 * everything else takes the batch path.  Both must give what one drain pass
 * gave: a dying EP's completion is retired unseen (the event untouched), a
 * flush still reaches the consumer, and with a batch of one the pass goes on
 * polling, the rest queued behind the event handed out.
 */
static void test_dequeue_of_one_completion_matches_a_drain_pass(void)
{
	struct ofx_ep *ep;
	struct ofx_evd *dto;
	struct ibv_wc wc;
	DAT_EVENT ev, untouched;

	setup();
	ep = fake_ep_new(64);
	dto = evd_new(8, DAT_EVD_DTO_FLAG);

	ofx_cookie_ring_set_dying(&ep->send_ring, true);
	wc = fake_send_wc(ep, 1);
	fake_cq_push(dto, &wc);
	memset(&ev, 0xa5, sizeof(ev));
	memset(&untouched, 0xa5, sizeof(untouched));
	CU_ASSERT_EQUAL(ofx_evd_dequeue(dto, &ev), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(memcmp(&ev, &untouched, sizeof(ev)), 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ofx_cookie_ring_set_dying(&ep->send_ring, false);

	wc = fake_send_wc(ep, 2);
	wc.status = IBV_WC_WR_FLUSH_ERR;
	fake_cq_push(dto, &wc);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(dto, &ev), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(ev.evd_handle, dto);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 2);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_ERR_FLUSHED);
	ofx_evd_destroy(dto);

	test_ia.cfg.cq_batch = 1;
	dto = evd_new(8, DAT_EVD_DTO_FLAG);
	wc = fake_send_wc(ep, 3);
	fake_cq_push(dto, &wc);
	wc = fake_send_wc(ep, 4);
	fake_cq_push(dto, &wc);
	expect_one_handed_one_queued(dto, ep, 3);
	ofx_evd_destroy(dto);
	fake_ep_delete(ep);
	teardown();
}

struct dequeuer_arg {
	struct ofx_evd *evd;
	int got;
	atomic_bool stop;
};

static void *dequeuer_main(void *p)
{
	struct dequeuer_arg *a = p;
	DAT_EVENT ev;

	while (!atomic_load(&a->stop)) {
		if (ofx_evd_dequeue(a->evd, &ev) == DAT_SUCCESS)
			a->got++;
	}
	while (ofx_evd_dequeue(a->evd, &ev) == DAT_SUCCESS)
		a->got++;
	return NULL;
}

static void test_concurrent_post_wait_and_dequeue_lose_nothing(void)
{
	struct dequeuer_arg d = { 0 };
	DAT_COUNT nmore;
	DAT_EVENT ev;
	int posted = 0, waited = 0, i;
	pthread_t th;

	setup();
	d.evd = evd_new(64, DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, dequeuer_main, &d) == 0);
	for (i = 0; i < 20000; i++) {
		if (!post_conn(d.evd, i))
			posted++;
		if (ofx_evd_wait(d.evd, 0, 1, &ev, &nmore) == DAT_SUCCESS)
			waited++;
	}
	atomic_store(&d.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(posted, 20000);
	CU_ASSERT_EQUAL(waited + d.got, posted);
	CU_ASSERT_EQUAL(d.evd->count, 0);
	ofx_evd_destroy(d.evd);
	teardown();
}

/* MVAPICH2's on-demand connection thread: asynchronous cancel, infinite wait. */
static void *cancelled_waiter(void *arg)
{
	DAT_EVENT ev;
	DAT_COUNT nmore;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	ofx_evd_wait((DAT_EVD_HANDLE)arg, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore);
	return NULL;	/* not reached: nothing is ever posted */
}

/*
 * A thread cancelled inside dat_evd_wait gives the EVD back: dat_evd_free
 * afterwards succeeds (it answered EVD_IN_USE before, and every MVAPICH2 job
 * in on-demand mode failed at MPI_Finalize), and no lock is left held.
 */
static void test_cancelled_waiter_leaves_the_evd_free(void)
{
	struct ofx_evd *evd;
	uint64_t deadline;
	pthread_t t;
	void *res;

	setup();
	evd = evd_new(8, DAT_EVD_CR_FLAG);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cancelled_waiter, evd) == 0);
	/* the thread is the EVD's waiter before it is cancelled */
	deadline = now_us() + WAIT_BOUND_US;
	while (!evd_has_waiter(evd) && now_us() < deadline)
		sched_yield();
	CU_ASSERT_TRUE(evd_has_waiter(evd));
	CU_ASSERT_EQUAL(pthread_cancel(t), 0);
	CU_ASSERT_EQUAL(pthread_join(t, &res), 0);
	CU_ASSERT_PTR_EQUAL(res, PTHREAD_CANCELED);
	CU_ASSERT_FALSE(evd_has_waiter(evd));	/* and the lock is free again */
	CU_ASSERT_EQUAL(ofx_evd_free((DAT_EVD_HANDLE)evd), DAT_SUCCESS);
	teardown();
}

/*
 * A work request of the provider's own (an XRC fence, say): its cookie
 * names this owner, whose notify op counts the completions that reach it.
 */
struct own_wr {
	struct ofx_cookie_owner owner;
	struct ofx_cookie cookie;
	struct ofx_waiter woken;
	_Atomic int notified;
	enum ibv_wc_status status;
};

static bool own_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
			 const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
			 struct ofx_cookie_owner **notify_p)
{
	(void)slot, (void)c, (void)wc, (void)ev;
	*notify_p = owner;
	return false;	/* never a consumer event */
}

static void own_notify(struct ofx_cookie_owner *owner, const struct ibv_wc *wc)
{
	struct own_wr *w = container_of(owner, struct own_wr, owner);

	w->status = wc->status;
	atomic_fetch_add(&w->notified, 1);
	ofx_waiter_wake(&w->woken);
}

static void own_peer_invalidated(struct ofx_cookie_owner *owner, uint32_t rkey)
{
	(void)owner, (void)rkey;
}

static const struct ofx_cookie_ops own_ops = {
	.complete = own_complete,
	.notify = own_notify,
	.peer_invalidated = own_peer_invalidated,
};

static void own_wr_init(struct own_wr *w)
{
	memset(w, 0, sizeof(*w));
	w->owner.ops = &own_ops;
	w->cookie.owner = &w->owner;
	w->cookie.flags = OFX_COOKIE_F_OWNER | OFX_COOKIE_F_INTERNAL;
	w->status = IBV_WC_GENERAL_ERR;
	ofx_waiter_init(&w->woken);
}

static bool own_notified(void *arg)
{
	return atomic_load(&((struct own_wr *)arg)->notified) > 0;
}

/* Its work request completes on `evd`'s CQ (any thread). */
static void own_wr_completes(struct own_wr *w, struct ofx_evd *evd)
{
	struct ibv_wc wc = { .wr_id = (uintptr_t)&w->cookie, .status = IBV_WC_SUCCESS,
			     .opcode = IBV_WC_RDMA_WRITE, .qp_num = 0x77 };

	fake_cq_push(evd, &wc);
}

/* A DTO EVD of the test IA and an owner of work requests on it. */
static struct ofx_evd *own_start(struct own_wr *w)
{
	setup();
	own_wr_init(w);
	return evd_new(4, DAT_EVD_DTO_FLAG);
}

static void own_end(struct ofx_evd *evd, struct own_wr *w)
{
	ofx_evd_destroy(evd);
	ofx_waiter_fini(&w->woken);
	teardown();
}

/*
 * Nobody polls the EVD: while watched, its completion channel wakes the
 * progress thread, whose drain hands the completion to its owner's notify
 * op; the watch is counted, and no consumer event is made of it.
 */
static void test_channel_watch_hands_a_completion_to_its_owner_unpolled(void)
{
	struct ofx_evd *evd;
	struct own_wr w;

	evd = own_start(&w);
	CU_ASSERT_FATAL(ofx_progress_start(&test_ia.progress, "unit") == 0);
	CU_ASSERT_EQUAL(ofx_evd_watch_channel(evd), 0);
	CU_ASSERT_EQUAL(ofx_evd_watch_channel(evd), 0);
	CU_ASSERT_EQUAL(evd->channel_watchers, 2);
	CU_ASSERT_TRUE(evd->channel_watched);
	CU_ASSERT_TRUE(fake_cq_armed(evd->cq));
	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w.woken, own_notified, &w, ofx_now_ns() + 30000000000ull),
			0);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	CU_ASSERT_EQUAL(w.status, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 0);
	CU_ASSERT_EQUAL(evd->count, 0);
	ofx_evd_unwatch_channel(evd);
	ofx_evd_unwatch_channel(evd);
	CU_ASSERT_EQUAL(evd->channel_watchers, 0);
	ofx_progress_stop(test_ia.progress);
	test_ia.progress = NULL;
	own_end(evd, &w);
}

/*
 * With no progress thread, ofx_evd_wait_cq returns as soon as a drain made
 * the caller's condition true, also for a completion that was queued before
 * the wait armed the CQ (no channel event will come for it).
 */
static void test_wait_cq_returns_once_a_drain_made_it_done(void)
{
	struct ofx_evd *evd;
	struct own_wr w;
	uint64_t t0;

	evd = own_start(&w);
	own_wr_completes(&w, evd);
	t0 = ofx_now_ns();
	/* a wait that missed it would end at the deadline (60 s), not half-way */
	CU_ASSERT_EQUAL(ofx_evd_wait_cq(evd, own_notified, &w, t0 + 60000000000ull), 0);
	CU_ASSERT(ofx_now_ns() - t0 < 30000000000ull);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	own_end(evd, &w);
}

/* Nothing completes: ofx_evd_wait_cq ends at its deadline, not before. */
static void test_wait_cq_ends_at_its_deadline(void)
{
	struct ofx_evd *evd;
	struct own_wr w;
	uint64_t t0;

	evd = own_start(&w);
	t0 = ofx_now_ns();
	CU_ASSERT_EQUAL(ofx_evd_wait_cq(evd, own_notified, &w, t0 + 50000000ull), -ETIMEDOUT);
	CU_ASSERT(ofx_now_ns() - t0 >= 50000000ull);
	CU_ASSERT(fake_cq_armed(evd->cq));
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 0);
	own_end(evd, &w);
}

struct late_completion {
	struct ofx_evd *evd;
	struct own_wr *w;
	pid_t waiting;		/* the thread in ofx_evd_wait_cq */
	bool asleep;
};

static void *late_completion_main(void *arg)
{
	struct late_completion *l = arg;

	/* once the wait sleeps in poll() (not after a fixed delay): only the
	 * completion's channel event can wake it then */
	l->asleep = ut_await_blocked(l->waiting, ut_in_poll, NULL);
	own_wr_completes(l->w, l->evd);
	return NULL;
}

/* A completion while ofx_evd_wait_cq sleeps: its channel event wakes it. */
static void test_wait_cq_wakes_on_a_completion_event(void)
{
	struct late_completion l;
	struct ofx_evd *evd;
	struct own_wr w;
	pthread_t th;
	uint64_t t0;

	evd = own_start(&w);
	l.evd = evd;
	l.w = &w;
	l.waiting = ut_gettid();
	t0 = ofx_now_ns();
	CU_ASSERT_FATAL(pthread_create(&th, NULL, late_completion_main, &l) == 0);
	/* a lost channel event would end the wait at its deadline (60 s): the
	 * poll times out, the drain then finds the completion and returns 0 */
	CU_ASSERT_EQUAL(ofx_evd_wait_cq(evd, own_notified, &w, t0 + 60000000000ull), 0);
	CU_ASSERT(ofx_now_ns() - t0 < 30000000000ull);
	pthread_join(th, NULL);
	CU_ASSERT_TRUE(l.asleep);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	own_end(evd, &w);
}

/* A thread making one call on an EVD, and whether it returned. */
struct evd_caller {
	struct ofx_evd *evd;
	void (*call)(struct ofx_evd *evd);
	atomic_bool returned;
};

static void *evd_caller_main(void *arg)
{
	struct evd_caller *c = arg;

	c->call(c->evd);
	atomic_store(&c->returned, true);
	return NULL;
}

static void drain_call(struct ofx_evd *evd)
{
	ofx_evd_drain_cq(evd);
}

/*
 * EP teardown's wait for the drains still calling owners' notify ops:
 * returns at once with none in flight, and otherwise only once the last
 * one is done and wakes it.
 */
static void test_notify_idle_wait_waits_only_for_a_drain_in_flight(void)
{
	struct evd_caller w;
	struct ofx_evd *evd;
	pthread_t t;

	setup();
	evd = evd_new(8, DAT_EVD_DTO_FLAG);
	w = (struct evd_caller){ .evd = evd, .call = ofx_evd_wait_notify_idle };
	ofx_evd_wait_notify_idle(evd);	/* none in flight */
	atomic_store(&evd->notify_inflight, 1);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, evd_caller_main, &w) == 0);
	sleep_us(50000);
	CU_ASSERT_FALSE(atomic_load(&w.returned));
	/* what the drain's evd_notify_done does */
	pthread_mutex_lock(&evd->notify_idle.lock);
	atomic_store(&evd->notify_inflight, 0);
	pthread_mutex_unlock(&evd->notify_idle.lock);
	ofx_waiter_wake(&evd->notify_idle);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	CU_ASSERT_TRUE(atomic_load(&w.returned));
	ofx_evd_destroy(evd);
	teardown();
}

/*
 * A drain that ran an owner's notify op, nobody waiting for it to be done
 * (no EP teardown): it does not take the idle waiter's lock, held here all
 * along.  A wake would block the drain until the end.
 */
static void test_notify_done_unwaited_takes_no_waiter_lock(void)
{
	struct evd_caller d;
	struct own_wr w;
	pthread_t t;
	uint64_t deadline;

	d = (struct evd_caller){ .evd = own_start(&w), .call = drain_call };
	own_wr_completes(&w, d.evd);
	pthread_mutex_lock(&d.evd->notify_idle.lock);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, evd_caller_main, &d) == 0);
	deadline = now_us() + WAIT_BOUND_US;
	while (!atomic_load(&d.returned) && now_us() < deadline)
		sched_yield();
	CU_ASSERT_TRUE(atomic_load(&d.returned));
	pthread_mutex_unlock(&d.evd->notify_idle.lock);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	CU_ASSERT_EQUAL(atomic_load(&d.evd->notify_inflight), 0);
	own_end(d.evd, &w);
}

/*
 * ofx_evd_take_own (the RTR's look): the owner's completion first in the
 * CQ comes back in the wc, neither queued nor notified; one behind a
 * consumer's completion reaches the owner's notify op through the drain,
 * the consumer's event queued; an empty CQ gives 0, and so does a full
 * ring, which polls nothing.
 */
static void test_take_own_takes_its_completion_first_else_drains(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *ep;
	struct own_wr w;
	struct ibv_wc wc, sent;
	uint64_t id;
	DAT_EVENT ev;
	int i;

	evd = own_start(&w);
	ep = fake_ep_new(64);
	id = (uintptr_t)&w.cookie;
	CU_ASSERT_EQUAL(ofx_evd_take_own(evd, id, &wc), 0);

	own_wr_completes(&w, evd);
	memset(&wc, 0, sizeof(wc));
	CU_ASSERT_EQUAL(ofx_evd_take_own(evd, id, &wc), 1);
	CU_ASSERT_EQUAL(wc.wr_id, id);
	CU_ASSERT_EQUAL(wc.status, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(wc.qp_num, 0x77);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 0);
	CU_ASSERT_EQUAL(evd->count, 0);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 0);

	sent = fake_send_wc(ep, 7);
	fake_cq_push(evd, &sent);
	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_evd_take_own(evd, id, &wc), 0);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	CU_ASSERT_EQUAL(w.status, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 0);
	CU_ASSERT_EQUAL(atomic_load(&evd->notify_inflight), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 7);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);

	push_sends(ep, evd, 100, evd->qlen);
	CU_ASSERT_EQUAL(ofx_evd_drain_cq(evd), evd->qlen);
	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_evd_take_own(evd, id, &wc), 0);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 1);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	for (i = 0; i < evd->qlen; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64,
				100 + (uint64_t)i);
	}
	CU_ASSERT_EQUAL(ofx_evd_take_own(evd, id, &wc), 1);
	CU_ASSERT_EQUAL(wc.wr_id, id);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	fake_ep_delete(ep);
	own_end(evd, &w);
}

/*
 * ofx_evd_take_own_nested (the look under an EP lock): the caller's
 * completion first is its own; one in the way is queued with its owner's
 * notify op left for ofx_evd_take_later, which runs it and drains the rest
 * (the caller's completion then reaching its owner the generic way); a ring
 * too full to queue one leaves the CQ alone and the drain for later.
 */
static void test_take_own_nested_leaves_a_follow_up_for_later(void)
{
	struct ofx_evd *evd;
	struct ofx_ep *ep;
	struct own_wr w, other;
	struct ofx_evd_later later;
	struct ibv_wc wc, sent;
	uint64_t id;
	DAT_EVENT ev;

	evd = own_start(&w);
	own_wr_init(&other);
	ep = fake_ep_new(64);
	id = (uintptr_t)&w.cookie;
	CU_ASSERT_EQUAL(ofx_evd_take_own_nested(evd, id, &wc, &later), 0);
	CU_ASSERT_PTR_NULL(later.evd);

	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_evd_take_own_nested(evd, id, &wc, &later), 1);
	CU_ASSERT_PTR_NULL(later.evd);
	CU_ASSERT_EQUAL(wc.wr_id, id);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 0);

	/* another owner's completion in the way: queued, its notify op not run yet */
	own_wr_completes(&other, evd);
	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_evd_take_own_nested(evd, id, &wc, &later), 0);
	CU_ASSERT_PTR_EQUAL(later.evd, evd);
	CU_ASSERT_PTR_EQUAL(later.owner, &other.owner);
	CU_ASSERT_EQUAL(atomic_load(&other.notified), 0);
	CU_ASSERT_EQUAL(atomic_load(&evd->notify_inflight), 1);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 1);
	ofx_evd_take_later(&later);
	CU_ASSERT_PTR_NULL(later.evd);
	CU_ASSERT_EQUAL(atomic_load(&other.notified), 1);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);	/* the drain handed it over */
	CU_ASSERT_EQUAL(atomic_load(&evd->notify_inflight), 0);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 0);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);

	/* a consumer's completion in the way: an event, no follow-up but the drain */
	sent = fake_send_wc(ep, 7);
	fake_cq_push(evd, &sent);
	CU_ASSERT_EQUAL(ofx_evd_take_own_nested(evd, id, &wc, &later), 0);
	CU_ASSERT_PTR_EQUAL(later.evd, evd);
	CU_ASSERT_PTR_NULL(later.owner);
	ofx_evd_take_later(&later);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 7);

	/* a full ring: nothing polled now */
	push_sends(ep, evd, 100, evd->qlen);
	CU_ASSERT_EQUAL(ofx_evd_drain_cq(evd), evd->qlen);
	own_wr_completes(&w, evd);
	CU_ASSERT_EQUAL(ofx_evd_take_own_nested(evd, id, &wc, &later), 0);
	CU_ASSERT_PTR_EQUAL(later.evd, evd);
	CU_ASSERT_PTR_NULL(later.owner);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 1);
	ofx_evd_take_later(&later);
	CU_ASSERT_EQUAL(fake_cq_pending(evd), 1);
	CU_ASSERT_EQUAL(atomic_load(&w.notified), 1);
	fake_ep_delete(ep);
	ofx_waiter_fini(&other.woken);
	own_end(evd, &w);
}

CU_TestInfo ofx_test_evd[] = {
	{ "a drain's notify done, unwaited, takes no waiter lock",
	  test_notify_done_unwaited_takes_no_waiter_lock },
	{ "channel watch hands a completion to its owner, nobody polling",
	  test_channel_watch_hands_a_completion_to_its_owner_unpolled },
	{ "take_own takes its completion first in the cq, else drains",
	  test_take_own_takes_its_completion_first_else_drains },
	{ "take_own_nested leaves a completion in the way and its follow-up for later",
	  test_take_own_nested_leaves_a_follow_up_for_later },
	{ "wait_cq returns once a drain made it done", test_wait_cq_returns_once_a_drain_made_it_done },
	{ "wait_cq ends at its deadline", test_wait_cq_ends_at_its_deadline },
	{ "wait_cq wakes on a completion event", test_wait_cq_wakes_on_a_completion_event },
	{ "a waiter cancelled in evd_wait leaves the evd free to be freed",
	  test_cancelled_waiter_leaves_the_evd_free },
	{ "events come out in fifo order", test_events_come_out_in_fifo_order },
	{ "teardown waits only for a drain still notifying",
	  test_notify_idle_wait_waits_only_for_a_drain_in_flight },
	{ "ring wraps around", test_ring_wraps_around },
	{ "overflow drops and reports once per event",
	  test_overflow_drops_and_reports_once_per_event },
	{ "async evd overflow is catastrophic", test_async_evd_overflow_is_catastrophic },
	{ "dequeue on empty is the bare DAT_QUEUE_EMPTY", test_dequeue_empty_is_bare_queue_empty },
	{ "wait with timeout 0 on empty expires", test_wait_timeout_zero_on_empty_expires },
	{ "wait argument checks", test_wait_argument_checks },
	{ "wait returns the oldest event with nmore", test_wait_returns_oldest_with_nmore },
	{ "post from another thread wakes an infinite waiter",
	  test_post_from_another_thread_wakes_infinite_waiter },
	{ "completion wakes an infinite waiter", test_completion_wakes_infinite_waiter },
	{ "threshold 2 waits for two events", test_threshold_two_waits_for_two_events },
	{ "timeout is honoured despite spurious wakeups",
	  test_timeout_honoured_despite_spurious_wakeups },
	{ "timeout is honoured despite spurious wakeups, evd without a cq",
	  test_timeout_honoured_despite_spurious_wakeups_no_cq },
	{ "second waiter is refused", test_second_waiter_is_refused },
	{ "set_unwaitable wakes the waiter", test_set_unwaitable_wakes_the_waiter },
	{ "set_unwaitable wakes the waiter of an evd without a cq",
	  test_set_unwaitable_wakes_the_waiter_no_cq },
	{ "a wait keeps the caller's cancellation state and type",
	  test_wait_keeps_the_callers_cancel_settings },
	{ "post_se rules", test_post_se_rules },
	{ "create checks and query", test_create_checks_and_query },
	{ "disabled evd still queues", test_disabled_evd_still_queues },
	{ "free refused while referenced", test_free_refused_while_referenced },
	{ "resize keeps order and limits", test_resize_keeps_order_and_limits },
	{ "drain batches and leaves overflow in the cq",
	  test_drain_batches_and_leaves_overflow_in_cq },
	{ "dequeue polling one completion at a time", test_dequeue_one_at_a_time_batch },
	{ "suppressed completion queues nothing", test_suppressed_completion_queues_nothing },
	{ "dequeue from the cq keeps order and skips silent work",
	  test_dequeue_from_cq_keeps_order_and_skips_silent_work },
	{ "dequeue of one completion matches a drain pass",
	  test_dequeue_of_one_completion_matches_a_drain_pass },
	{ "cq grows for the work requests its eps can have outstanding",
	  test_cq_grows_for_reserved_work_requests },
	{ "concurrent post, wait and dequeue lose nothing",
	  test_concurrent_post_wait_and_dequeue_lose_nothing },
	CU_TEST_INFO_NULL,
};
