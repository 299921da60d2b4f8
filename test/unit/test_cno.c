/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "cno.h"
#include "dto.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "log.h"
#include "progress.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dat2/udat.h>

/*
 * Consumer notification objects without a device.  The IA is the hand-built
 * one from fake_verbs.h (plus a real progress engine) and CQ-backed EVDs use
 * its CQ model.
 */

static struct ofx_ia ia, other_ia;
static int dummy_ctx;

static void setup(void)
{
	fake_verbs_install();
	fake_ia_init(&ia);
	fake_ia_init(&other_ia);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "cnotest") == 0);
}

static void teardown(void)
{
	ofx_progress_stop(ia.progress);
	ia.progress = NULL;
	fake_ia_fini(&ia);
	fake_ia_fini(&other_ia);
	/* every CQ was destroyed with its events acked, every channel write landed */
	CU_ASSERT_EQUAL(fake_verbs.unbalanced, 0);
	CU_ASSERT_EQUAL(atomic_load(&fake_verbs.write_failures), 0);
	ofx_verbs_set(NULL);
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

static DAT_CNO_HANDLE cno_new(void)
{
	DAT_CNO_HANDLE cno = NULL;

	CU_ASSERT_FATAL(ofx_cno_create(&ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
	return cno;
}

static DAT_EVD_HANDLE evd_new(DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags)
{
	DAT_EVD_HANDLE evd = NULL;

	CU_ASSERT_FATAL(ofx_evd_create(&ia, 16, cno, flags, &evd) == DAT_SUCCESS);
	return evd;
}

static int post_conn(DAT_EVD_HANDLE evd)
{
	return ofx_evd_post_conn(ofx_evd_from_handle(evd), DAT_CONNECTION_EVENT_ESTABLISHED,
				 NULL, 0, NULL);
}

/* The pending trigger's EVD, or (void *)-1 when nothing is pending. */
static DAT_EVD_HANDLE poll_cno(DAT_CNO_HANDLE cno)
{
	DAT_EVD_HANDLE evd = (DAT_EVD_HANDLE)&dummy_ctx;
	DAT_RETURN ret = ofx_cno_wait(cno, 0, &evd);

	if (DAT_GET_TYPE(ret) == DAT_TIMEOUT_EXPIRED) {
		CU_ASSERT_PTR_NULL(evd);
		return (DAT_EVD_HANDLE)-1;
	}
	CU_ASSERT_EQUAL(ret, DAT_SUCCESS);
	return evd;
}

static void drain_events(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;

	while (ofx_evd_dequeue(evd, &ev) == DAT_SUCCESS)
		;
}

static void test_create_query_and_free(void)
{
	DAT_CNO_HANDLE cno;
	DAT_CNO_PARAM param;
	struct ofx_obj not_an_ia = { .type = OFX_OBJ_EVD };

	setup();
	CU_ASSERT_EQUAL(ofx_cno_create(&not_an_ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA));
	CU_ASSERT_EQUAL(ofx_cno_create(&ia, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL),
			OFX_INVALID_ARG(3));
	cno = cno_new();
	memset(&param, 0xff, sizeof(param));
	CU_ASSERT_EQUAL(ofx_cno_query(cno, DAT_CNO_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(param.ia_handle, &ia);
	CU_ASSERT_EQUAL(param.proxy_type, DAT_PROXY_TYPE_NONE);
	CU_ASSERT_EQUAL(ofx_cno_query(cno, 0x100, &param), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_cno_query(cno, DAT_CNO_FIELD_ALL, NULL), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_cno_wait(cno, 0, NULL), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	/* the memory is gone: freed handles are checked by the badinput suite */
	teardown();
}

static void test_wait_times_out_with_a_null_evd(void)
{
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd = (DAT_EVD_HANDLE)&dummy_ctx;
	uint64_t t0;

	setup();
	cno = cno_new();
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_cno_wait(cno, 0, &evd)), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_PTR_NULL(evd);
	t0 = now_us();
	evd = (DAT_EVD_HANDLE)&dummy_ctx;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_cno_wait(cno, 30000, &evd)), DAT_TIMEOUT_EXPIRED);
	CU_ASSERT_TRUE(now_us() - t0 >= 30000);
	CU_ASSERT_PTR_NULL(evd);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	teardown();
}

static void test_posted_event_triggers_once_and_latches(void)
{
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE a, b;
	DAT_EVD_PARAM param;

	setup();
	cno = cno_new();
	a = evd_new(cno, DAT_EVD_CONNECTION_FLAG);
	b = evd_new(cno, DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_EQUAL(ofx_evd_query(a, DAT_EVD_FIELD_CNO, &param), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(param.cno_handle, cno);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), (DAT_EVD_HANDLE)-1);

	/* two EVDs, three events: one wakeup naming the first EVD */
	CU_ASSERT_EQUAL(post_conn(a), 0);
	CU_ASSERT_EQUAL(post_conn(b), 0);
	CU_ASSERT_EQUAL(post_conn(a), 0);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), a);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), (DAT_EVD_HANDLE)-1);
	/* the events themselves are all still queued */
	CU_ASSERT_EQUAL(ofx_evd_from_handle(a)->count, 2);
	CU_ASSERT_EQUAL(ofx_evd_from_handle(b)->count, 1);

	CU_ASSERT_EQUAL(post_conn(b), 0);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), b);
	drain_events(a);
	drain_events(b);
	CU_ASSERT_EQUAL(ofx_evd_free(a), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(b), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	teardown();
}

struct evd_waiter {
	DAT_EVD_HANDLE evd;
	DAT_RETURN ret;
	DAT_EVENT ev;
};

static void *evd_wait_thread(void *arg)
{
	struct evd_waiter *w = arg;
	DAT_COUNT nmore;

	/* bounded like the wait for it: a busy machine may delay the post */
	w->ret = ofx_evd_wait(w->evd, 30 * 1000000, 1, &w->ev, &nmore);
	return NULL;
}

static bool evd_has_waiter(DAT_EVD_HANDLE h)
{
	struct ofx_evd *evd = ofx_evd_from_handle(h);
	bool waiter;

	pthread_mutex_lock(&evd->lock);
	waiter = evd->waiter;
	pthread_mutex_unlock(&evd->lock);
	return waiter;
}

static void test_disabled_or_directly_waited_evd_does_not_trigger(void)
{
	struct evd_waiter w = { 0 };
	DAT_CNO_HANDLE cno;
	pthread_t t;
	int i;

	setup();
	cno = cno_new();
	w.evd = evd_new(cno, DAT_EVD_CONNECTION_FLAG);

	CU_ASSERT_EQUAL(ofx_evd_disable(w.evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(post_conn(w.evd), 0);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), (DAT_EVD_HANDLE)-1);
	CU_ASSERT_EQUAL(ofx_evd_enable(w.evd), DAT_SUCCESS);
	drain_events(w.evd);

	/* a thread in evd_wait preempts the CNO */
	CU_ASSERT_FATAL(pthread_create(&t, NULL, evd_wait_thread, &w) == 0);
	for (i = 0; i < 30000 && !evd_has_waiter(w.evd); i++)
		sleep_us(1000);
	CU_ASSERT_FATAL(evd_has_waiter(w.evd));
	CU_ASSERT_EQUAL(post_conn(w.evd), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.ret, DAT_SUCCESS);
	CU_ASSERT_EQUAL(w.ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), (DAT_EVD_HANDLE)-1);

	CU_ASSERT_EQUAL(ofx_evd_free(w.evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	teardown();
}

static void test_free_refused_while_evds_attached(void)
{
	DAT_CNO_HANDLE cno, cno2, foreign;
	DAT_EVD_HANDLE evd, evd2;

	setup();
	cno = cno_new();
	cno2 = cno_new();
	evd = evd_new(cno, DAT_EVD_CONNECTION_FLAG);
	evd2 = evd_new(DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), OFX_DAT_ERR(DAT_INVALID_STATE,
						       DAT_INVALID_STATE_CNO_IN_USE));

	/* modify_cno moves the EVD: only the new CNO triggers */
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, cno2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd2, cno2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	CU_ASSERT_EQUAL(post_conn(evd2), 0);
	CU_ASSERT_PTR_EQUAL(poll_cno(cno2), evd2);

	/* a CNO of another IA is not a valid handle here */
	CU_ASSERT_FATAL(ofx_cno_create(&other_ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &foreign) ==
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, foreign),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
	CU_ASSERT_EQUAL(ofx_cno_free(foreign), DAT_SUCCESS);

	/* evd_free detaches; a trigger pending from a freed EVD names no EVD */
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	drain_events(evd);
	drain_events(evd2);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno2), OFX_DAT_ERR(DAT_INVALID_STATE,
							DAT_INVALID_STATE_CNO_IN_USE));
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd2, DAT_HANDLE_NULL), DAT_SUCCESS);
	CU_ASSERT_PTR_NULL(poll_cno(cno2));
	CU_ASSERT_EQUAL(ofx_cno_free(cno2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(evd2), DAT_SUCCESS);
	teardown();
}

struct cno_waiter {
	DAT_CNO_HANDLE cno;
	DAT_RETURN ret;
	DAT_EVD_HANDLE evd;
};

static void *cno_wait_thread(void *arg)
{
	struct cno_waiter *w = arg;

	w->ret = ofx_cno_wait(w->cno, DAT_TIMEOUT_INFINITE, &w->evd);
	return NULL;
}

static bool cno_has_waiter(DAT_CNO_HANDLE h)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);
	bool waiter;

	pthread_mutex_lock(&cno->lock);
	waiter = cno->waiters > 0;
	pthread_mutex_unlock(&cno->lock);
	return waiter;
}

static void test_post_from_another_thread_wakes_an_infinite_waiter(void)
{
	struct cno_waiter w = { 0 };
	DAT_EVD_HANDLE evd;
	pthread_t t;
	int i;

	setup();
	w.cno = cno_new();
	evd = evd_new(w.cno, DAT_EVD_SOFTWARE_FLAG);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cno_wait_thread, &w) == 0);
	/* the waiter must be inside cno_wait before the refused free: a fixed
	 * sleep was not enough on a busy machine (the free then succeeded) */
	for (i = 0; i < 30000 && !cno_has_waiter(w.cno); i++)
		sleep_us(1000);
	CU_ASSERT_FATAL(cno_has_waiter(w.cno));
	/* a waiter keeps the CNO busy */
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, DAT_HANDLE_NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(w.cno), OFX_DAT_ERR(DAT_INVALID_STATE,
							 DAT_INVALID_STATE_CNO_IN_USE));
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, w.cno), DAT_SUCCESS);
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.ret, DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(w.evd, evd);
	drain_events(evd);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(w.cno), DAT_SUCCESS);
	teardown();
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void test_fd_cno_is_readable_while_triggered(void)
{
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd, got;
	DAT_CNO_PARAM param;
	DAT_FD fd = -1;

	setup();
	CU_ASSERT_EQUAL(ofx_cno_fd_create(&ia, NULL, &cno), OFX_INVALID_ARG(2));
	CU_ASSERT_FATAL(ofx_cno_fd_create(&ia, &fd, &cno) == DAT_SUCCESS);
	CU_ASSERT_TRUE(fd >= 0);
	CU_ASSERT_EQUAL(ofx_cno_query(cno, DAT_CNO_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.proxy_type, DAT_PROXY_TYPE_FD);
	CU_ASSERT_EQUAL(param.proxy.fd, fd);
	evd = evd_new(cno, DAT_EVD_CONNECTION_FLAG);

	CU_ASSERT_FALSE(fd_readable(fd));
	CU_ASSERT_EQUAL(ofx_cno_trigger(cno, &got), DAT_QUEUE_EMPTY);
	CU_ASSERT_PTR_NULL(got);
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_TRUE(fd_readable(fd));
	CU_ASSERT_EQUAL(ofx_cno_trigger(cno, &got), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(got, evd);
	CU_ASSERT_FALSE(fd_readable(fd));
	/* cno_wait consumes the same trigger */
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_TRUE(fd_readable(fd));
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), evd);
	CU_ASSERT_FALSE(fd_readable(fd));

	drain_events(evd);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	teardown();
}

static atomic_int agent_calls;
static DAT_EVD_HANDLE agent_evd;
static DAT_PVOID agent_data;

static void test_agent(DAT_PVOID data, DAT_EVD_HANDLE evd)
{
	/* consumer code: it may call DAT, so no provider lock may be held here */
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	agent_data = data;
	agent_evd = evd;
	atomic_fetch_add(&agent_calls, 1);
}

static void test_proxy_agent_is_called_once_with_the_evd(void)
{
	DAT_OS_WAIT_PROXY_AGENT agent = { .instance_data = &agent_calls,
					  .proxy_agent_func = test_agent };
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd;
	DAT_CNO_PARAM param;

	setup();
	atomic_store(&agent_calls, 0);
	CU_ASSERT_FATAL(ofx_cno_create(&ia, agent, &cno) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_query(cno, DAT_CNO_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.proxy_type, DAT_PROXY_TYPE_AGENT);
	CU_ASSERT_PTR_EQUAL(param.proxy.agent.proxy_agent_func, test_agent);
	evd = evd_new(cno, DAT_EVD_CONNECTION_FLAG);

	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_EQUAL(atomic_load(&agent_calls), 1);
	CU_ASSERT_PTR_EQUAL(agent_evd, evd);
	CU_ASSERT_PTR_EQUAL(agent_data, &agent_calls);
	/* in addition to local delivery */
	CU_ASSERT_PTR_EQUAL(poll_cno(cno), evd);
	/* one-shot: no agent any more until modify_agent sets one */
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_EQUAL(atomic_load(&agent_calls), 1);
	CU_ASSERT_EQUAL(ofx_cno_query(cno, DAT_CNO_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.proxy_type, DAT_PROXY_TYPE_NONE);
	CU_ASSERT_EQUAL(ofx_cno_modify_agent(cno, agent), DAT_SUCCESS);
	CU_ASSERT_EQUAL(post_conn(evd), 0);
	CU_ASSERT_EQUAL(atomic_load(&agent_calls), 2);

	drain_events(evd);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(cno), DAT_SUCCESS);
	teardown();
}

static void test_completion_on_a_dto_evd_triggers_through_the_progress_engine(void)
{
	struct cno_waiter w = { 0 };
	struct ofx_ep *ep = fake_ep_new(16);
	struct ibv_wc wc, early;
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	pthread_t t;
	int i;

	setup();
	w.cno = cno_new();
	evd = evd_new(DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG);
	/* a completion already in the CQ at attach time triggers at once */
	early = fake_send_wc(ep, 0x11);
	fake_cq_push(ofx_evd_from_handle(evd), &early);
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, w.cno), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(poll_cno(w.cno), evd);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x11);

	/* nobody polls the CQ: the progress engine drains it and triggers */
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cno_wait_thread, &w) == 0);
	/* the completion comes once the waiter is inside cno_wait, not 20 ms on */
	for (i = 0; i < 30000 && !cno_has_waiter(w.cno); i++)
		sleep_us(1000);
	CU_ASSERT_FATAL(cno_has_waiter(w.cno));
	wc = fake_send_wc(ep, 0x22);
	fake_cq_push(ofx_evd_from_handle(evd), &wc);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.ret, DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(w.evd, evd);
	/* already in the ring: dequeue finds it without touching the CQ */
	CU_ASSERT_EQUAL(fake_cq_pending(ofx_evd_from_handle(evd)), 0);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x22);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(evd, &ev)), DAT_QUEUE_EMPTY);

	/* detached: the channel is no longer watched, nothing triggers */
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, DAT_HANDLE_NULL), DAT_SUCCESS);
	wc = fake_send_wc(ep, 0x33);
	fake_cq_push(ofx_evd_from_handle(evd), &wc);
	/* negative check: nothing triggers within 20 ms (cannot false-fail) */
	sleep_us(20000);
	CU_ASSERT_PTR_EQUAL(poll_cno(w.cno), (DAT_EVD_HANDLE)-1);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x33);

	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(w.cno), DAT_SUCCESS);
	fake_ep_delete(ep);
	teardown();
}

CU_TestInfo ofx_test_cno[] = {
	{ "create, query and free", test_create_query_and_free },
	{ "wait times out with a null evd", test_wait_times_out_with_a_null_evd },
	{ "posted event triggers once and latches", test_posted_event_triggers_once_and_latches },
	{ "disabled or directly waited evd does not trigger",
	  test_disabled_or_directly_waited_evd_does_not_trigger },
	{ "free refused while evds attached", test_free_refused_while_evds_attached },
	{ "post from another thread wakes an infinite waiter",
	  test_post_from_another_thread_wakes_an_infinite_waiter },
	{ "fd cno is readable while triggered", test_fd_cno_is_readable_while_triggered },
	{ "proxy agent is called once with the evd", test_proxy_agent_is_called_once_with_the_evd },
	{ "completion on a dto evd triggers through the progress engine",
	  test_completion_on_a_dto_evd_triggers_through_the_progress_engine },
	CU_TEST_INFO_NULL,
};
