/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "progress.h"

#include "log.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define OFX_PROGRESS_MAX_EVENTS 16

struct ofx_progress_fd {
	int fd;
	ofx_fd_handler fn;
	void *arg;
	struct ofx_list link;	/* in prog->fds */
};

struct ofx_progress {
	pthread_t thread;
	int epfd;
	int wake_fd;		/* eventfd: arm, cancel and stop write it */
	char name[16];		/* thread name, "ofx-<name>" */

	/*
	 * Guards everything below.  A leaf with respect to the objects: no
	 * handler or timer callback runs while it is held, so they may take
	 * any lock, and arm/cancel may be called with object locks held.
	 */
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* signalled after a handler or callback, if waited on */
	unsigned int idle_waiters;	/* threads in pthread_cond_wait(idle) */
	struct ofx_list fds;	/* struct ofx_progress_fd */
	struct ofx_list timers;	/* armed struct ofx_timer, by deadline */
	struct ofx_progress_fd *running_fd; /* handler being called, if any */
	struct ofx_progress_fd *last_fd;    /* the last one found: events come in runs */
	/* Handlers and timer callbacks started and finished (barrier). */
	uint64_t cb_started, cb_finished;
	bool stop;
};

/* The engine whose thread this is; NULL in every other thread. */
static __thread const struct ofx_progress *ofx_progress_current;

uint64_t ofx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ofx_poll_timeout_ms(uint64_t deadline)
{
	uint64_t now, left;

	if (deadline == UINT64_MAX)
		return -1;
	now = ofx_now_ns();
	if (now >= deadline)
		return 0;
	left = (deadline - now + 999999) / 1000000;
	return left > INT_MAX ? INT_MAX : (int)left;
}

bool ofx_progress_in_thread(const struct ofx_progress *prog)
{
	return prog && ofx_progress_current == prog;
}

static void ofx_progress_wake(struct ofx_progress *prog)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is saturated: the thread is woken anyway. */
	if (write(prog->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ofx_warn("progress %s: eventfd write: %m", prog->name);
}

static void ofx_progress_drain_wake(struct ofx_progress *prog)
{
	uint64_t val;

	if (read(prog->wake_fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
		ofx_warn("progress %s: eventfd read: %m", prog->name);
}

static struct ofx_progress_fd *ofx_progress_find_fd(struct ofx_progress *prog, int fd)
{
	struct ofx_list *pos, *tmp;

	if (prog->last_fd && prog->last_fd->fd == fd)
		return prog->last_fd;
	ofx_list_for_each_safe(pos, tmp, &prog->fds) {
		struct ofx_progress_fd *e = container_of(pos, struct ofx_progress_fd, link);

		if (e->fd == fd) {
			prog->last_fd = e;
			return e;
		}
	}
	return NULL;
}

/*
 * A handler or callback finished (lock held): wakes who waits for that.
 * Nobody, as a rule: the call is then a load and a branch.
 */
static void progress_idle_signal(struct ofx_progress *prog)
{
	if (prog->idle_waiters)
		pthread_cond_broadcast(&prog->idle);
}

/* Waits for the next progress_idle_signal (lock held). */
static void progress_idle_wait(struct ofx_progress *prog)
{
	prog->idle_waiters++;
	pthread_cond_wait(&prog->idle, &prog->lock);
	prog->idle_waiters--;
}

/*
 * Runs the expired timers and returns the epoll timeout until the next one
 * (-1: none).  Called and returns with the lock held; drops it around each
 * callback, so the list is re-read from its head after every call.
 */
static int ofx_progress_run_timers(struct ofx_progress *prog)
{
	for (;;) {
		struct ofx_timer *t;
		uint64_t now, delta_ms;
		ofx_timer_fn fn;
		void *arg;

		if (ofx_list_empty(&prog->timers) || prog->stop)
			return -1;
		t = container_of(prog->timers.next, struct ofx_timer, link);
		now = ofx_now_ns();
		if (t->deadline_ns > now) {
			/* Round up: waking early would only spin until the deadline. */
			delta_ms = (t->deadline_ns - now + 999999) / 1000000;
			return delta_ms > INT_MAX ? INT_MAX : (int)delta_ms;
		}

		ofx_list_del(&t->link);
		atomic_store_explicit(&t->armed, false, memory_order_release);
		/* Copied under the lock: the owner may re-arm or free t afterwards. */
		fn = t->fn;
		arg = t->arg;
		prog->cb_started++;
		pthread_mutex_unlock(&prog->lock);
		fn(arg);
		pthread_mutex_lock(&prog->lock);
		prog->cb_finished++;
		progress_idle_signal(prog);
	}
}

/* Calls the handler of `fd`; called and returns with the lock held, dropped around it. */
static void ofx_progress_dispatch(struct ofx_progress *prog, int fd)
{
	struct ofx_progress_fd *e;
	ofx_fd_handler fn;
	void *arg;

	/* The fd may have been removed since epoll_wait returned it. */
	e = prog->stop ? NULL : ofx_progress_find_fd(prog, fd);
	if (!e)
		return;
	fn = e->fn;
	arg = e->arg;
	prog->running_fd = e;
	prog->cb_started++;
	pthread_mutex_unlock(&prog->lock);

	fn(arg);

	pthread_mutex_lock(&prog->lock);
	prog->running_fd = NULL;
	prog->cb_finished++;
	progress_idle_signal(prog);
}

static void *ofx_progress_thread(void *arg)
{
	struct ofx_progress *prog = arg;
	struct epoll_event evs[OFX_PROGRESS_MAX_EVENTS];
	int timeout, n, i;

	ofx_progress_current = prog;
	pthread_setname_np(pthread_self(), prog->name);
	ofx_dbg("progress %s: started", prog->name);

	/* the lock is held but in epoll_wait and the handlers (dispatch) */
	pthread_mutex_lock(&prog->lock);
	for (;;) {
		timeout = ofx_progress_run_timers(prog);
		if (prog->stop)
			break;
		pthread_mutex_unlock(&prog->lock);
		n = epoll_wait(prog->epfd, evs, OFX_PROGRESS_MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR) {
			/* Only a bad epfd gets here; spinning on it would not help. */
			ofx_err("progress %s: epoll_wait: %m", prog->name);
			goto out;
		}
		pthread_mutex_lock(&prog->lock);
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == prog->wake_fd)
				ofx_progress_drain_wake(prog);
			else
				ofx_progress_dispatch(prog, evs[i].data.fd);
		}
	}
	pthread_mutex_unlock(&prog->lock);
out:

	ofx_dbg("progress %s: stopped", prog->name);
	return NULL;
}

int ofx_progress_start(struct ofx_progress **prog_p, const char *name)
{
	struct ofx_progress *prog;
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;
	int ret;

	prog = calloc(1, sizeof(*prog));
	if (!prog) {
		ret = -ENOMEM;
		ofx_err("progress %s: out of memory", name);
		goto err;
	}
	/* pthread_setname_np allows 15 characters; longer names are cut. */
	snprintf(prog->name, sizeof(prog->name), "ofx-%.11s", name ? name : "");
	pthread_mutex_init(&prog->lock, NULL);
	pthread_cond_init(&prog->idle, NULL);
	ofx_list_init(&prog->fds);
	ofx_list_init(&prog->timers);

	prog->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (prog->epfd < 0) {
		ret = -errno;
		ofx_err("progress %s: epoll_create1: %m", prog->name);
		goto err_free;
	}
	prog->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (prog->wake_fd < 0) {
		ret = -errno;
		ofx_err("progress %s: eventfd: %m", prog->name);
		goto err_close_epfd;
	}
	ev.data.fd = prog->wake_fd;
	if (epoll_ctl(prog->epfd, EPOLL_CTL_ADD, prog->wake_fd, &ev)) {
		ret = -errno;
		ofx_err("progress %s: epoll_ctl add eventfd: %m", prog->name);
		goto err_close_wake;
	}

	/* Consumers' signal handlers must never run on our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&prog->thread, NULL, ofx_progress_thread, prog);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		errno = -ret;
		ofx_err("progress %s: pthread_create: %m", prog->name);
		goto err_close_wake;
	}

	*prog_p = prog;
	return 0;

err_close_wake:
	close(prog->wake_fd);
err_close_epfd:
	close(prog->epfd);
err_free:
	pthread_cond_destroy(&prog->idle);
	pthread_mutex_destroy(&prog->lock);
	free(prog);
err:
	return ret;
}

void ofx_progress_stop(struct ofx_progress *prog)
{
	struct ofx_list *pos, *tmp;
	int ret;

	if (!prog)
		return;
	if (ofx_progress_in_thread(prog)) {
		/* Joining ourselves would deadlock; leaking is the lesser evil. */
		ofx_err("progress %s: stop called from its own thread", prog->name);
		return;
	}

	pthread_mutex_lock(&prog->lock);
	prog->stop = true;
	pthread_mutex_unlock(&prog->lock);
	ofx_progress_wake(prog);

	ret = pthread_join(prog->thread, NULL);
	if (ret) {
		errno = ret;
		ofx_warn("progress %s: pthread_join: %m", prog->name);
	}

	/* Nothing runs any more; forget what the owners did not remove. */
	ofx_list_for_each_safe(pos, tmp, &prog->timers) {
		struct ofx_timer *t = container_of(pos, struct ofx_timer, link);

		ofx_list_del(&t->link);
		atomic_store_explicit(&t->armed, false, memory_order_release);
	}
	ofx_list_for_each_safe(pos, tmp, &prog->fds) {
		struct ofx_progress_fd *e = container_of(pos, struct ofx_progress_fd, link);

		ofx_dbg("progress %s: fd %d still registered at stop", prog->name, e->fd);
		ofx_list_del(&e->link);
		free(e);
	}

	close(prog->wake_fd);
	close(prog->epfd);
	pthread_cond_destroy(&prog->idle);
	pthread_mutex_destroy(&prog->lock);
	free(prog);
}

int ofx_progress_add_fd(struct ofx_progress *prog, int fd, ofx_fd_handler fn, void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	struct ofx_progress_fd *e;
	int ret;

	if (!prog || fd < 0 || !fn)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = fd;
	e->fn = fn;
	e->arg = arg;

	pthread_mutex_lock(&prog->lock);
	if (ofx_progress_find_fd(prog, fd)) {
		ret = -EEXIST;
		ofx_err("progress %s: fd %d is already registered", prog->name, fd);
		goto err_unlock;
	}
	/* Listed before epoll sees it, so the first event finds its handler. */
	ofx_list_add_tail(&prog->fds, &e->link);
	if (epoll_ctl(prog->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		ret = -errno;
		ofx_err("progress %s: epoll_ctl add fd %d: %m", prog->name, fd);
		ofx_list_del(&e->link);
		goto err_unlock;
	}
	pthread_mutex_unlock(&prog->lock);
	return 0;

err_unlock:
	pthread_mutex_unlock(&prog->lock);
	free(e);
	return ret;
}

/*
 * After this returns the handler is not running and will not run again,
 * unless the caller is that handler itself (which may remove its own fd).
 */
int ofx_progress_del_fd(struct ofx_progress *prog, int fd)
{
	struct ofx_progress_fd *e;
	int ret = 0;

	if (!prog)
		return 0;

	pthread_mutex_lock(&prog->lock);
	e = ofx_progress_find_fd(prog, fd);
	if (!e) {
		pthread_mutex_unlock(&prog->lock);
		return -ENOENT;
	}
	ofx_list_del(&e->link);
	if (prog->last_fd == e)
		prog->last_fd = NULL;
	if (epoll_ctl(prog->epfd, EPOLL_CTL_DEL, fd, NULL)) {
		/* Closed before removal: its epoll entry is gone with it. */
		if (errno == EBADF || errno == ENOENT) {
			ofx_dbg("progress %s: fd %d closed before removal", prog->name, fd);
		} else {
			ret = -errno;
			ofx_warn("progress %s: epoll_ctl del fd %d: %m", prog->name, fd);
		}
	}
	while (prog->running_fd == e && !ofx_progress_in_thread(prog))
		progress_idle_wait(prog);
	pthread_mutex_unlock(&prog->lock);

	free(e);
	return ret;
}

/*
 * Arms `t` (see ofx_progress_timer_arm_at); the thread is woken for a new
 * earliest deadline before `wake_before` only: a later one it learns of
 * at its next wakeup, which the caller knows comes before then.
 */
static inline __attribute__((always_inline)) void
timer_arm(struct ofx_progress *prog, struct ofx_timer *t, uint64_t deadline, ofx_timer_fn fn,
	  void *arg, uint64_t wake_before)
{
	struct ofx_list *pos;
	bool first;

	if (!prog) {
		ofx_dbg("timer %p armed without a progress engine: ignored", (void *)t);
		return;
	}

	pthread_mutex_lock(&prog->lock);
	if (atomic_load_explicit(&t->armed, memory_order_relaxed))
		ofx_list_del(&t->link);
	t->deadline_ns = deadline;
	t->fn = fn;
	t->arg = arg;
	atomic_store_explicit(&t->armed, true, memory_order_release);
	/* Insert after every timer due no later: equal deadlines fire in arm order. */
	for (pos = prog->timers.prev; pos != &prog->timers; pos = pos->prev) {
		struct ofx_timer *o = container_of(pos, struct ofx_timer, link);

		if (o->deadline_ns <= deadline)
			break;
	}
	/* a later deadline than the head's: the thread wakes in time for it anyway */
	first = pos == &prog->timers;
	ofx_list_add_tail(pos->next, &t->link);
	pthread_mutex_unlock(&prog->lock);

	if (first && deadline < wake_before && !ofx_progress_in_thread(prog))
		ofx_progress_wake(prog);
}

void ofx_progress_timer_arm_at(struct ofx_progress *prog, struct ofx_timer *t,
			       uint64_t deadline, ofx_timer_fn fn, void *arg)
{
	timer_arm(prog, t, deadline, fn, arg, UINT64_MAX);
}

void ofx_progress_timer_arm_before_event(struct ofx_progress *prog, struct ofx_timer *t,
					 uint64_t timeout_us, uint64_t event_us, ofx_timer_fn fn,
					 void *arg)
{
	uint64_t now = prog ? ofx_now_ns() : 0;

	/* twice the event's bound: its delivery may lag a little behind it */
	timer_arm(prog, t, now + timeout_us * 1000, fn, arg, now + 2 * event_us * 1000);
}

/* ofx_progress_timer_cancel saw `t` armed: it may have fired since. */
bool ofx_progress_timer_cancel_armed(struct ofx_progress *prog, struct ofx_timer *t)
{
	bool was_armed;

	pthread_mutex_lock(&prog->lock);
	was_armed = atomic_load_explicit(&t->armed, memory_order_relaxed);
	if (was_armed) {
		ofx_list_del(&t->link);
		atomic_store_explicit(&t->armed, false, memory_order_relaxed);
	}
	pthread_mutex_unlock(&prog->lock);
	return was_armed;
}

void ofx_progress_barrier(struct ofx_progress *prog)
{
	uint64_t target;

	if (!prog || ofx_progress_in_thread(prog))
		return;
	pthread_mutex_lock(&prog->lock);
	/* Only one callback runs at a time: waiting for the current one is enough. */
	target = prog->cb_started;
	while (prog->cb_finished < target)
		progress_idle_wait(prog);
	pthread_mutex_unlock(&prog->lock);
}
