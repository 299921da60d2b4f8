/* SPDX-License-Identifier: BSD-2-Clause */
#include "blocked.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UT_BLOCKED_BOUND_MS 30000

/* /proc/self/task/TID/syscall: "NR ARG1..ARG6 SP PC" while in a call. */
enum ut_state { UT_RUNNING, UT_IN_CALL, UT_UNKNOWN };

pid_t ut_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

pid_t ut_thread_named(const char *comm)
{
	char path[64], name[32];
	struct dirent *de;
	pid_t found = 0;
	DIR *d;
	FILE *f;

	d = opendir("/proc/self/task");
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			if (!strcmp(name, comm))
				found = (pid_t)tid;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

static enum ut_state thread_syscall(pid_t tid, long *nr, unsigned long args[6])
{
	char path[64], line[256];
	enum ut_state st = UT_UNKNOWN;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return UT_UNKNOWN;
	if (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "running", 7))
			st = UT_RUNNING;
		else if (sscanf(line, "%ld", nr) == 1 && *nr < 0)
			st = UT_RUNNING;	/* "-1 SP PC": in the kernel, not in a call */
		else if (sscanf(line, "%ld %lx %lx %lx %lx %lx %lx", nr, &args[0], &args[1],
				&args[2], &args[3], &args[4], &args[5]) == 7)
			st = UT_IN_CALL;
	}
	fclose(f);
	return st;
}

bool ut_in_poll(long nr, const unsigned long args[6], void *unused)
{
	(void)args;
	(void)unused;
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
#ifdef SYS_ppoll
	if (nr == SYS_ppoll)
		return true;
#endif
	return false;
}

bool ut_in_epoll_longer(long nr, const unsigned long args[6], void *min_ms)
{
	int timeout = (int)args[3];
	bool epoll = false;

#ifdef SYS_epoll_wait
	epoll = epoll || nr == SYS_epoll_wait;
#endif
#ifdef SYS_epoll_pwait
	epoll = epoll || nr == SYS_epoll_pwait;
#endif
	return epoll && timeout > *(int *)min_ms;
}

bool ut_in_epoll_forever(long nr, const unsigned long args[6], void *unused)
{
	int any = -2;

	/* epoll_wait's -1: no timeout */
	return ut_in_epoll_longer(nr, args, &any) && (int)args[3] < 0;
}

bool ut_await_blocked(pid_t tid, bool (*match)(long nr, const unsigned long args[6], void *arg),
		      void *arg)
{
	const struct timespec pause = { 0, 1000000 };
	unsigned long args[6];
	long nr = -1;

	for (int ms = 0; ms < UT_BLOCKED_BOUND_MS; ms++) {
		switch (thread_syscall(tid, &nr, args)) {
		case UT_UNKNOWN:
			return true;
		case UT_IN_CALL:
			if (match(nr, args, arg))
				return true;
			break;
		case UT_RUNNING:
			break;
		}
		nanosleep(&pause, NULL);
	}
	return false;
}
