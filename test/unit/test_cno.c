/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

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
 * Consumer notification objects without a device.  The IA is built by hand
 * (with a real progress engine) and CQ-backed EVDs use a CQ model: scripted
 * completions, a one-shot arm, and a pipe standing in for the completion
 * channel, written when a completion lands on an armed CQ.
 */

#define FAKE_CQ_MAX 64

struct fake_channel {
	struct ibv_comp_channel ch;
	int wfd;
	struct fake_cq *cq;
};

struct fake_cq {
	struct ibv_cq cq;
	pthread_mutex_t lock;
	struct ibv_wc q[FAKE_CQ_MAX];
	int head, count;
	bool armed;
	unsigned int events, acked;
	struct fake_channel *fch;
};

static struct ofx_verbs_ops fake_ops;
static DAT_PROVIDER test_provider;
static struct ofx_ia ia, other_ia;
static int dummy_ctx;

static struct ibv_comp_channel *fake_create_comp_channel(struct ibv_context *ctx)
{
	struct fake_channel *f = calloc(1, sizeof(*f));
	int fds[2];

	if (!f || pipe(fds)) {
		free(f);
		return NULL;
	}
	f->ch.context = ctx;
	f->ch.fd = fds[0];
	f->wfd = fds[1];
	return &f->ch;
}

static int fake_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct fake_channel *f = (struct fake_channel *)ch;

	close(f->ch.fd);
	close(f->wfd);
	free(f);
	return 0;
}

static struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				     struct ibv_comp_channel *ch, int vec)
{
	struct fake_cq *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	f->cq.context = ctx;
	f->cq.channel = ch;
	f->cq.cq_context = cq_context;
	f->cq.cqe = cqe;
	f->fch = (struct fake_channel *)ch;
	f->fch->cq = f;
	return &f->cq;
}

static int fake_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	CU_ASSERT_EQUAL(f->acked, f->events);
	pthread_mutex_destroy(&f->lock);
	free(f);
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)cq;
	int i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < n && f->count; i++) {
		wc[i] = f->q[f->head];
		f->head = (f->head + 1) % FAKE_CQ_MAX;
		f->count--;
	}
	pthread_mutex_unlock(&f->lock);
	return i;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->armed = true;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	struct fake_channel *fch = (struct fake_channel *)ch;
	char b;

	if (read(ch->fd, &b, 1) != 1)
		return -1;	/* errno EAGAIN from the non-blocking pipe */
	pthread_mutex_lock(&fch->cq->lock);
	fch->cq->events++;
	pthread_mutex_unlock(&fch->cq->lock);
	*cq = &fch->cq->cq;
	*ctx = fch->cq->cq.cq_context;
	return 0;
}

static void fake_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	struct fake_cq *f = (struct fake_cq *)cq;

	pthread_mutex_lock(&f->lock);
	f->acked += n;
	pthread_mutex_unlock(&f->lock);
}

/* A completion lands on the CQ; an armed CQ fires its channel once. */
static void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)evd->cq;
	char b = 1;

	pthread_mutex_lock(&f->lock);
	f->q[(f->head + f->count) % FAKE_CQ_MAX] = *wc;
	f->count++;
	if (f->armed) {
		f->armed = false;
		CU_ASSERT_EQUAL(write(f->fch->wfd, &b, 1), 1);
	}
	pthread_mutex_unlock(&f->lock);
}

static int fake_cq_pending_count(struct fake_cq *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->count;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static void ia_setup(struct ofx_ia *i)
{
	memset(i, 0, sizeof(*i));
	i->obj.provider = &test_provider;
	i->obj.type = OFX_OBJ_IA;
	i->obj.ia = i;
	pthread_mutex_init(&i->obj_lock, NULL);
	ofx_list_init(&i->objects);
	i->verbs = (struct ibv_context *)&dummy_ctx;
	i->dev_attr.max_cqe = 1024;
	i->cfg.cq_batch = 16;
}

static void setup(void)
{
	fake_ops = ofx_verbs_real;
	fake_ops.create_comp_channel = fake_create_comp_channel;
	fake_ops.destroy_comp_channel = fake_destroy_comp_channel;
	fake_ops.create_cq = fake_create_cq;
	fake_ops.destroy_cq = fake_destroy_cq;
	fake_ops.poll_cq = fake_poll_cq;
	fake_ops.req_notify_cq = fake_req_notify_cq;
	fake_ops.get_cq_event = fake_get_cq_event;
	fake_ops.ack_cq_events = fake_ack_cq_events;
	ofx_verbs_set(&fake_ops);
	ia_setup(&ia);
	ia_setup(&other_ia);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "cnotest") == 0);
}

static void teardown(void)
{
	ofx_progress_stop(ia.progress);
	ia.progress = NULL;
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));
	CU_ASSERT_TRUE(ofx_list_empty(&other_ia.objects));
	pthread_mutex_destroy(&ia.obj_lock);
	pthread_mutex_destroy(&other_ia.obj_lock);
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

	w->ret = ofx_evd_wait(w->evd, 2000000, 1, &w->ev, &nmore);
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
	for (i = 0; i < 2000 && !evd_has_waiter(w.evd); i++)
		sleep_us(1000);
	CU_ASSERT_TRUE(evd_has_waiter(w.evd));
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

static void test_post_from_another_thread_wakes_an_infinite_waiter(void)
{
	struct cno_waiter w = { 0 };
	DAT_EVD_HANDLE evd;
	pthread_t t;

	setup();
	w.cno = cno_new();
	evd = evd_new(w.cno, DAT_EVD_SOFTWARE_FLAG);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cno_wait_thread, &w) == 0);
	sleep_us(20000);
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

/* An EP whose send ring backs the cookies of scripted completions. */
static struct ofx_ep *ep_new(void)
{
	struct ofx_ep *ep = calloc(1, sizeof(*ep));

	CU_ASSERT_FATAL(ep != NULL);
	ep->obj.type = OFX_OBJ_EP;
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, 16, ep) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, 16, ep) == 0);
	return ep;
}

static void ep_delete(struct ofx_ep *ep)
{
	ofx_cookie_ring_fini(&ep->send_ring);
	ofx_cookie_ring_fini(&ep->recv_ring);
	free(ep);
}

static struct ibv_wc send_wc(struct ofx_ep *ep, uint64_t user)
{
	struct ofx_cookie *c = ofx_cookie_ring_reserve(&ep->send_ring);
	struct ibv_wc wc;

	CU_ASSERT_FATAL(c != NULL);
	c->user.as_64 = user;
	c->len = 64;
	c->op = OFX_OP_SEND;
	c->flags = 0;
	ofx_cookie_ring_commit(&ep->send_ring);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = (uintptr_t)c;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_SEND;
	return wc;
}

static void test_completion_on_a_dto_evd_triggers_through_the_progress_engine(void)
{
	struct cno_waiter w = { 0 };
	struct ofx_ep *ep = ep_new();
	struct ibv_wc wc, early;
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	pthread_t t;

	setup();
	w.cno = cno_new();
	evd = evd_new(DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG);
	/* a completion already in the CQ at attach time triggers at once */
	early = send_wc(ep, 0x11);
	fake_cq_push(ofx_evd_from_handle(evd), &early);
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, w.cno), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(poll_cno(w.cno), evd);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x11);

	/* nobody polls the CQ: the progress engine drains it and triggers */
	CU_ASSERT_FATAL(pthread_create(&t, NULL, cno_wait_thread, &w) == 0);
	sleep_us(20000);
	wc = send_wc(ep, 0x22);
	fake_cq_push(ofx_evd_from_handle(evd), &wc);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.ret, DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(w.evd, evd);
	/* already in the ring: dequeue finds it without touching the CQ */
	CU_ASSERT_EQUAL(fake_cq_pending_count((struct fake_cq *)ofx_evd_from_handle(evd)->cq), 0);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x22);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(evd, &ev)), DAT_QUEUE_EMPTY);

	/* detached: the channel is no longer watched, nothing triggers */
	CU_ASSERT_EQUAL(ofx_evd_modify_cno(evd, DAT_HANDLE_NULL), DAT_SUCCESS);
	wc = send_wc(ep, 0x33);
	fake_cq_push(ofx_evd_from_handle(evd), &wc);
	sleep_us(20000);
	CU_ASSERT_PTR_EQUAL(poll_cno(w.cno), (DAT_EVD_HANDLE)-1);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x33);

	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cno_free(w.cno), DAT_SUCCESS);
	ep_delete(ep);
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
