/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_BLOCKED_H
#define OFX_TEST_BLOCKED_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Whether another thread of this process sleeps in a system call, read
 * from /proc/self/task/TID/syscall.  A test whose point is that a sleeping
 * thread is woken (a waiter in poll(), the progress thread in
 * epoll_wait()) waits for this instead of a fixed delay: a delay proves
 * nothing on a busy machine, where the thread may not have got there yet
 * and the test then passes without testing the wake.
 */

/* The calling thread's id, for a thread another one is to watch. */
pid_t ut_gettid(void);

/* The thread of this process named `comm` (pthread_setname_np), or 0. */
pid_t ut_thread_named(const char *comm);

/* Sleeps in poll() or ppoll(). */
bool ut_in_poll(long nr, const unsigned long args[6], void *unused);

/* Sleeps in epoll_wait() or epoll_pwait() with a timeout of more than *(int *)min_ms. */
bool ut_in_epoll_longer(long nr, const unsigned long args[6], void *min_ms);

/* Sleeps in epoll_wait() or epoll_pwait() with no timeout. */
bool ut_in_epoll_forever(long nr, const unsigned long args[6], void *unused);

/*
 * Waits (30 s at most) until thread `tid` sleeps in a system call `match`
 * accepts.  False if it never did; true also where /proc cannot tell (the
 * test then goes on as it would have after a delay).
 */
bool ut_await_blocked(pid_t tid, bool (*match)(long nr, const unsigned long args[6], void *arg),
		      void *arg);

#endif
