/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "blocked.h"

#include "log.h"
#include "progress.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The progress engine on its own: pipes stand in for the rdma_cm and async
 * fds.  Bounds are generous (a loaded CI machine under valgrind can stall a
 * thread for seconds): a test fails if an event is lost, never because one
 * came late.  A wake that must come from an event, not from a timer, races
 * a timer far beyond WAIT_MS.  The short sem_wait_ms calls that expect false are negative checks
 * ("nothing more fires"): a slow machine passes them too.
 */

#define WAIT_MS 30000

/* Waits for `sem` at most `ms` milliseconds; true if it was posted. */
static bool sem_wait_ms(sem_t *sem, unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (sem_timedwait(sem, &ts)) {
		if (errno != EINTR)
			return false;
	}
	return true;
}

struct pipe_ctx {
	struct ofx_progress *prog;
	int fds[2];
	sem_t fired;
	bool remove_self;
	pthread_mutex_t lock;	/* guards what the handler reports */
	int calls;
	bool in_thread;
};

static int pipe_calls(struct pipe_ctx *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->calls;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void pipe_handler(void *arg)
{
	struct pipe_ctx *c = arg;
	char buf[64];

	/* Drain until EAGAIN, as every real handler does. */
	while (read(c->fds[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&c->lock);
	c->calls++;
	c->in_thread = ofx_progress_in_thread(c->prog);
	pthread_mutex_unlock(&c->lock);
	if (c->remove_self)
		ofx_progress_del_fd(c->prog, c->fds[0]);
	sem_post(&c->fired);
}

static void pipe_ctx_init(struct pipe_ctx *c, struct ofx_progress *prog)
{
	memset(c, 0, sizeof(*c));
	c->prog = prog;
	CU_ASSERT_FATAL(pipe2(c->fds, O_NONBLOCK | O_CLOEXEC) == 0);
	sem_init(&c->fired, 0, 0);
	pthread_mutex_init(&c->lock, NULL);
}

static void pipe_ctx_fini(struct pipe_ctx *c)
{
	close(c->fds[0]);
	close(c->fds[1]);
	sem_destroy(&c->fired);
	pthread_mutex_destroy(&c->lock);
}

static void test_fd_handler_runs_in_the_thread_when_the_fd_is_readable(void)
{
	struct ofx_progress *prog;
	unsigned int saved;
	struct pipe_ctx c;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	CU_ASSERT_FALSE(ofx_progress_in_thread(prog));
	/* Added after the thread started, as every IA fd is. */
	pipe_ctx_init(&c, prog);
	CU_ASSERT_EQUAL(ofx_progress_add_fd(prog, c.fds[0], pipe_handler, &c), 0);
	saved = ofx_log_subsys_mask;
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_CORE);
	CU_ASSERT_EQUAL(ofx_progress_add_fd(prog, c.fds[0], pipe_handler, &c), -EEXIST);
	ofx_log_subsys_mask = saved;

	CU_ASSERT_EQUAL(write(c.fds[1], "x", 1), 1);
	CU_ASSERT_TRUE(sem_wait_ms(&c.fired, WAIT_MS));
	pthread_mutex_lock(&c.lock);
	CU_ASSERT_TRUE(c.in_thread);
	pthread_mutex_unlock(&c.lock);

	CU_ASSERT_EQUAL(write(c.fds[1], "y", 1), 1);
	CU_ASSERT_TRUE(sem_wait_ms(&c.fired, WAIT_MS));
	CU_ASSERT_EQUAL(pipe_calls(&c), 2);

	/* Removed: a later write goes unnoticed. */
	CU_ASSERT_EQUAL(ofx_progress_del_fd(prog, c.fds[0]), 0);
	CU_ASSERT_EQUAL(ofx_progress_del_fd(prog, c.fds[0]), -ENOENT);
	CU_ASSERT_EQUAL(write(c.fds[1], "z", 1), 1);
	CU_ASSERT_FALSE(sem_wait_ms(&c.fired, 100));
	CU_ASSERT_EQUAL(pipe_calls(&c), 2);

	ofx_progress_stop(prog);
	pipe_ctx_fini(&c);
}

static void test_handler_may_remove_its_own_fd(void)
{
	struct ofx_progress *prog;
	struct pipe_ctx c;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	pipe_ctx_init(&c, prog);
	c.remove_self = true;
	CU_ASSERT_EQUAL(ofx_progress_add_fd(prog, c.fds[0], pipe_handler, &c), 0);
	CU_ASSERT_EQUAL(write(c.fds[1], "x", 1), 1);
	CU_ASSERT_TRUE(sem_wait_ms(&c.fired, WAIT_MS));
	CU_ASSERT_EQUAL(write(c.fds[1], "y", 1), 1);
	CU_ASSERT_FALSE(sem_wait_ms(&c.fired, 100));
	CU_ASSERT_EQUAL(pipe_calls(&c), 1);
	CU_ASSERT_EQUAL(ofx_progress_del_fd(prog, c.fds[0]), -ENOENT);
	ofx_progress_stop(prog);
	pipe_ctx_fini(&c);
}

struct timer_log {
	pthread_mutex_t lock;
	sem_t fired;
	int order[8];
	uint64_t at_ns[8];
	int n;
	bool in_thread;
	struct ofx_progress *prog;
};

struct timer_ctx {
	struct timer_log *log;
	struct ofx_timer timer;
	int id;
};

static void timer_fn(void *arg)
{
	struct timer_ctx *t = arg;
	struct timer_log *log = t->log;

	pthread_mutex_lock(&log->lock);
	if (log->n < 8) {
		log->order[log->n] = t->id;
		log->at_ns[log->n] = ofx_now_ns();
		log->n++;
	}
	log->in_thread = ofx_progress_in_thread(log->prog);
	pthread_mutex_unlock(&log->lock);
	sem_post(&log->fired);
}

static int log_count(struct timer_log *log)
{
	int n;

	pthread_mutex_lock(&log->lock);
	n = log->n;
	pthread_mutex_unlock(&log->lock);
	return n;
}

static void timer_log_init(struct timer_log *log, struct ofx_progress *prog)
{
	memset(log, 0, sizeof(*log));
	pthread_mutex_init(&log->lock, NULL);
	sem_init(&log->fired, 0, 0);
	log->prog = prog;
}

static void timer_log_fini(struct timer_log *log)
{
	sem_destroy(&log->fired);
	pthread_mutex_destroy(&log->lock);
}

static void test_timers_fire_in_deadline_order_within_a_bound(void)
{
	static const unsigned int delay_ms[] = { 60, 20, 40, 20 };
	struct timer_ctx t[4];
	struct ofx_progress *prog;
	struct timer_log log;
	uint64_t start;
	int i;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	memset(t, 0, sizeof(t));
	start = ofx_now_ns();
	for (i = 0; i < 4; i++) {
		t[i].log = &log;
		t[i].id = i;
		ofx_progress_timer_arm(prog, &t[i].timer, delay_ms[i] * 1000ull, timer_fn, &t[i]);
	}
	for (i = 0; i < 4; i++)
		CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));

	pthread_mutex_lock(&log.lock);
	CU_ASSERT_EQUAL(log.n, 4);
	/* Equal deadlines keep the order they were armed in. */
	CU_ASSERT_EQUAL(log.order[0], 1);
	CU_ASSERT_EQUAL(log.order[1], 3);
	CU_ASSERT_EQUAL(log.order[2], 2);
	CU_ASSERT_EQUAL(log.order[3], 0);
	for (i = 0; i < log.n; i++) {
		uint64_t due = start + delay_ms[log.order[i]] * 1000000ull;

		/* Never early; lateness is no fault of the engine's on a busy
		 * machine, the order above is what a wrong deadline would break */
		CU_ASSERT(log.at_ns[i] >= due);
	}
	CU_ASSERT_TRUE(log.in_thread);
	pthread_mutex_unlock(&log.lock);
	for (i = 0; i < 4; i++)
		CU_ASSERT_FALSE(t[i].timer.armed);

	ofx_progress_stop(prog);
	timer_log_fini(&log);
}

static void test_cancel_prevents_firing(void)
{
	struct ofx_progress *prog;
	struct timer_log log;
	struct timer_ctx t = { .id = 0 };

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	t.log = &log;

	ofx_progress_timer_arm(prog, &t.timer, 30000, timer_fn, &t);
	CU_ASSERT_TRUE(t.timer.armed);
	CU_ASSERT_TRUE(ofx_progress_timer_cancel(prog, &t.timer));
	CU_ASSERT_FALSE(t.timer.armed);
	CU_ASSERT_FALSE(ofx_progress_timer_cancel(prog, &t.timer));
	CU_ASSERT_FALSE(sem_wait_ms(&log.fired, 150));
	CU_ASSERT_EQUAL(log_count(&log), 0);

	ofx_progress_stop(prog);
	timer_log_fini(&log);
}

/*
 * Neither a cancel nor an arm behind the earliest timer wakes the thread:
 * it sleeps toward the cancelled head, wakes there and still fires what
 * is due next, once and in time.
 */
static void test_cancelled_head_still_lets_the_next_fire(void)
{
	struct ofx_progress *prog;
	struct timer_log log;
	struct timer_ctx a = { .id = 1 }, b = { .id = 2 };
	uint64_t start;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	a.log = b.log = &log;

	start = ofx_now_ns();
	ofx_progress_timer_arm(prog, &a.timer, 20000, timer_fn, &a);
	ofx_progress_timer_arm(prog, &b.timer, 60000, timer_fn, &b);	/* behind a: no wake */
	CU_ASSERT_TRUE(ofx_progress_timer_cancel(prog, &a.timer));
	CU_ASSERT_TRUE(b.timer.armed);
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	CU_ASSERT(ofx_now_ns() - start >= 60000000ull);
	CU_ASSERT_FALSE(sem_wait_ms(&log.fired, 100));
	pthread_mutex_lock(&log.lock);
	CU_ASSERT_EQUAL(log.n, 1);
	CU_ASSERT_EQUAL(log.order[0], 2);
	pthread_mutex_unlock(&log.lock);
	CU_ASSERT_FALSE(b.timer.armed);
	CU_ASSERT_FALSE(ofx_progress_timer_cancel(prog, &b.timer));	/* fired: nothing to do */

	ofx_progress_stop(prog);
	timer_log_fini(&log);
}

/* The thread of the engine started as "unit" (ofx-unit), once it runs; 0 if none. */
static pid_t unit_engine_thread(void)
{
	pid_t tid = 0;

	for (int i = 0; i < WAIT_MS && !(tid = ut_thread_named("ofx-unit")); i++)
		usleep(1000);
	return tid;
}

/*
 * An absolute deadline: 0 (or a past one) is due at once, ahead of a timer
 * due later; a future one never fires early.
 */
static void test_absolute_deadlines(void)
{
	struct ofx_progress *prog;
	struct timer_log log;
	struct timer_ctx later = { .id = 1 }, now = { .id = 2 }, at = { .id = 3 };
	uint64_t start;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	later.log = now.log = at.log = &log;

	start = ofx_now_ns();
	ofx_progress_timer_arm(prog, &later.timer, 120000000, timer_fn, &later);
	ofx_progress_timer_arm_at(prog, &now.timer, 0, timer_fn, &now);
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	ofx_progress_timer_arm_at(prog, &at.timer, ofx_now_ns() + 40000000ull, timer_fn, &at);
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	pthread_mutex_lock(&log.lock);
	CU_ASSERT_EQUAL(log.n, 2);
	CU_ASSERT_EQUAL(log.order[0], 2);
	CU_ASSERT_EQUAL(log.order[1], 3);
	CU_ASSERT(log.at_ns[1] >= start + 40000000ull);
	pthread_mutex_unlock(&log.lock);
	CU_ASSERT_TRUE(later.timer.armed);
	CU_ASSERT_TRUE(ofx_progress_timer_cancel(prog, &later.timer));

	ofx_progress_stop(prog);
	timer_log_fini(&log);
}

static void test_rearming_moves_the_deadline(void)
{
	struct ofx_progress *prog;
	struct timer_log log;
	struct timer_ctx t = { .id = 7 };
	uint64_t start;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	t.log = &log;

	/* The thread sleeps toward 120 s (seen, not assumed after a delay); the
	 * re-arm must wake it, or the timer fires only then, long after WAIT_MS. */
	ofx_progress_timer_arm(prog, &t.timer, 120000000, timer_fn, &t);
	CU_ASSERT_FATAL(ut_await_blocked(unit_engine_thread(), ut_in_epoll_longer,
					 &(int){ 60000 }));
	start = ofx_now_ns();
	ofx_progress_timer_arm(prog, &t.timer, 10000, timer_fn, &t);
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	CU_ASSERT(ofx_now_ns() - start < 120000000000ull);
	/* Moved, not duplicated. */
	CU_ASSERT_FALSE(sem_wait_ms(&log.fired, 100));
	CU_ASSERT_EQUAL(log_count(&log), 1);

	ofx_progress_stop(prog);
	timer_log_fini(&log);
}

/*
 * A timer armed after starting work that ends in an event (an address
 * resolution) and due later than twice that event's bound leaves the
 * thread asleep: it fires once the event was handled, never early.  One
 * due sooner wakes the thread as any arm does.
 */
static void test_timer_armed_before_an_event_leaves_the_thread_asleep(void)
{
	struct ofx_progress *prog;
	struct timer_ctx t[2];
	struct timer_log log;
	struct pipe_ctx c;
	uint64_t armed;
	pid_t tid;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);
	timer_log_init(&log, prog);
	pipe_ctx_init(&c, prog);
	CU_ASSERT_EQUAL(ofx_progress_add_fd(prog, c.fds[0], pipe_handler, &c), 0);
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 2; i++) {
		t[i].log = &log;
		t[i].id = i;
	}
	tid = unit_engine_thread();
	/* asleep with no deadline: only a wakeup or an fd makes it look at timers */
	CU_ASSERT_FATAL(ut_await_blocked(tid, ut_in_epoll_forever, NULL));
	armed = ofx_now_ns();
	ofx_progress_timer_arm_before_event(prog, &t[0].timer, 20000, 5000, timer_fn, &t[0]);
	/* a negative check: a slow machine passes it too */
	CU_ASSERT_FALSE(sem_wait_ms(&log.fired, 300));
	CU_ASSERT_EQUAL(write(c.fds[1], "x", 1), 1);
	CU_ASSERT_TRUE(sem_wait_ms(&c.fired, WAIT_MS));
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	pthread_mutex_lock(&log.lock);
	CU_ASSERT_EQUAL(log.n, 1);
	CU_ASSERT(log.n == 1 && log.at_ns[0] >= armed + 20000000ull);
	pthread_mutex_unlock(&log.lock);

	/* 20 ms is within twice a 50 ms bound: the arm wakes the thread */
	CU_ASSERT_FATAL(ut_await_blocked(tid, ut_in_epoll_forever, NULL));
	ofx_progress_timer_arm_before_event(prog, &t[1].timer, 20000, 50000, timer_fn, &t[1]);
	CU_ASSERT_TRUE(sem_wait_ms(&log.fired, WAIT_MS));
	CU_ASSERT_EQUAL(log_count(&log), 2);

	ofx_progress_stop(prog);
	pipe_ctx_fini(&c);
	timer_log_fini(&log);
}

static void test_stop_joins_promptly_with_timers_pending(void)
{
	struct ofx_progress *prog;
	struct timer_log log;
	struct timer_ctx t = { .id = 0 };
	struct pipe_ctx c;
	uint64_t start;

	CU_ASSERT_FATAL(ofx_progress_start(&prog, "a-name-longer-than-fifteen") == 0);
	timer_log_init(&log, prog);
	t.log = &log;
	pipe_ctx_init(&c, prog);
	CU_ASSERT_EQUAL(ofx_progress_add_fd(prog, c.fds[0], pipe_handler, &c), 0);
	/* a stop that waited for the timer would take 120 s */
	ofx_progress_timer_arm(prog, &t.timer, 120000000, timer_fn, &t);

	start = ofx_now_ns();
	ofx_progress_stop(prog);
	CU_ASSERT(ofx_now_ns() - start < WAIT_MS * 1000000ull);
	/* Left armed by its owner: forgotten, never fired. */
	CU_ASSERT_FALSE(t.timer.armed);
	CU_ASSERT_EQUAL(log_count(&log), 0);
	CU_ASSERT_EQUAL(pipe_calls(&c), 0);

	/* A stopped engine (NULL after ia_close) is a no-op for its users. */
	ofx_progress_stop(NULL);
	CU_ASSERT_FALSE(ofx_progress_timer_cancel(NULL, &t.timer));
	CU_ASSERT_EQUAL(ofx_progress_del_fd(NULL, c.fds[0]), 0);

	pipe_ctx_fini(&c);
	timer_log_fini(&log);
}

struct slow_ctx {
	struct ofx_timer timer;
	sem_t started;
	atomic_bool done;
};

static void slow_fn(void *arg)
{
	struct slow_ctx *c = arg;

	sem_post(&c->started);
	usleep(100000);	/* a slow callback is the thing under test */
	atomic_store(&c->done, true);
}

static void test_barrier_waits_for_the_running_callback(void)
{
	struct ofx_progress *prog;
	struct slow_ctx c;
	uint64_t start;

	memset(&c, 0, sizeof(c));
	sem_init(&c.started, 0, 0);
	CU_ASSERT_FATAL(ofx_progress_start(&prog, "unit") == 0);

	/* Idle engine: returns at once (one that waited for a callback would
	 * hang here: nothing runs). */
	start = ofx_now_ns();
	ofx_progress_barrier(prog);
	ofx_progress_barrier(NULL);
	CU_ASSERT(ofx_now_ns() - start < WAIT_MS * 1000000ull);

	ofx_progress_timer_arm(prog, &c.timer, 0, slow_fn, &c);
	CU_ASSERT_FATAL(sem_wait_ms(&c.started, WAIT_MS));
	/* Too late to cancel: the callback is running; the barrier outwaits it. */
	CU_ASSERT_FALSE(ofx_progress_timer_cancel(prog, &c.timer));
	ofx_progress_barrier(prog);
	CU_ASSERT_TRUE(atomic_load(&c.done));

	ofx_progress_stop(prog);
	sem_destroy(&c.started);
}

/* ---- ofx_waiter: waits that are woken, with deadlines ---------------------- */

static bool flag_is_set(void *arg)
{
	return atomic_load((_Atomic bool *)arg);
}

struct wake_later {
	struct ofx_waiter *w;
	_Atomic bool *flag;
	_Atomic int *count;
	sem_t waiting;		/* posted once the waiter is about to wait */
};

/* Sets the flag (or drops the count) once the main thread waits. */
static void *waker_thread(void *arg)
{
	struct wake_later *wl = arg;

	sem_wait(&wl->waiting);
	if (wl->flag) {
		atomic_store(wl->flag, true);
		ofx_waiter_wake(wl->w);
	} else {
		ofx_waiter_count_put(wl->w, wl->count);
	}
	return NULL;
}

static bool count_is_zero(void *arg)
{
	return atomic_load((_Atomic int *)arg) == 0;
}

static void test_waiter_returns_at_once_when_done(void)
{
	struct ofx_waiter w;
	_Atomic bool flag = true;

	ofx_waiter_init(&w);
	/* a deadline long past: the condition is tested first */
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w, flag_is_set, (void *)&flag, 1), 0);
	ofx_waiter_fini(&w);
}

static void test_waiter_times_out_at_the_deadline(void)
{
	struct ofx_waiter w;
	_Atomic bool flag = false;
	uint64_t t0 = ofx_now_ns();

	ofx_waiter_init(&w);
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w, flag_is_set, (void *)&flag, t0 + 50000000ull),
			-ETIMEDOUT);
	CU_ASSERT(ofx_now_ns() >= t0 + 50000000ull);	/* never early */
	ofx_waiter_fini(&w);
}

static void test_waiter_is_woken_by_the_other_thread(void)
{
	struct ofx_waiter w;
	_Atomic bool flag = false;
	_Atomic int count = 3;
	struct wake_later wl = { .w = &w, .flag = &flag };
	pthread_t t;

	ofx_waiter_init(&w);
	sem_init(&wl.waiting, 0, 0);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, waker_thread, &wl) == 0);
	sem_post(&wl.waiting);
	/* no deadline: only the wake can end this */
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w, flag_is_set, (void *)&flag, UINT64_MAX), 0);
	pthread_join(t, NULL);

	/* a count: the put that reaches 0 wakes, the others do not end the wait */
	wl.flag = NULL;
	wl.count = &count;
	ofx_waiter_count_put(&w, &count);
	ofx_waiter_count_put(&w, &count);
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w, count_is_zero, (void *)&count,
					ofx_now_ns() + 10000000ull), -ETIMEDOUT);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, waker_thread, &wl) == 0);
	sem_post(&wl.waiting);
	CU_ASSERT_EQUAL(ofx_waiter_wait(&w, count_is_zero, (void *)&count, UINT64_MAX), 0);
	CU_ASSERT_EQUAL(atomic_load(&count), 0);
	pthread_join(t, NULL);
	sem_destroy(&wl.waiting);
	ofx_waiter_fini(&w);
}

CU_TestInfo ofx_test_progress[] = {
	{ "waiter returns at once when its condition holds",
	  test_waiter_returns_at_once_when_done },
	{ "waiter times out at its deadline, never early", test_waiter_times_out_at_the_deadline },
	{ "waiter is woken by another thread's change", test_waiter_is_woken_by_the_other_thread },
	{ "fd handler runs in the thread when the fd is readable",
	  test_fd_handler_runs_in_the_thread_when_the_fd_is_readable },
	{ "handler may remove its own fd", test_handler_may_remove_its_own_fd },
	{ "timers fire in deadline order within a bound",
	  test_timers_fire_in_deadline_order_within_a_bound },
	{ "cancel prevents firing", test_cancel_prevents_firing },
	{ "re-arming moves the deadline", test_rearming_moves_the_deadline },
	{ "absolute deadlines: 0 is due at once", test_absolute_deadlines },
	{ "a cancelled earliest timer still lets the next one fire",
	  test_cancelled_head_still_lets_the_next_fire },
	{ "barrier waits for the running callback", test_barrier_waits_for_the_running_callback },
	{ "a timer armed before an event leaves the thread asleep",
	  test_timer_armed_before_an_event_leaves_the_thread_asleep },
	{ "stop joins promptly with timers pending",
	  test_stop_joins_promptly_with_timers_pending },
	CU_TEST_INFO_NULL,
};
