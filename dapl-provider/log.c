/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "log.h"

#include "env.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define OFX_LOG_DEFAULT_LEVEL OFX_LOG_WARN
#define OFX_LOG_ALL_SUBSYS ((1u << OFX_SUBSYS_COUNT) - 1)
/* Longer lines are cut and end in "...": one write(2) per line, no allocation. */
#define OFX_LOG_LINE_MAX 1024

/* Usable before ofx_log_init(): warnings and errors to stderr. */
enum ofx_log_level ofx_log_level = OFX_LOG_DEFAULT_LEVEL;
unsigned int ofx_log_subsys_mask = OFX_LOG_ALL_SUBSYS;

static const char *const level_names[] = {
	[OFX_LOG_ERROR] = "error",
	[OFX_LOG_WARN] = "warn",
	[OFX_LOG_INFO] = "info",
	[OFX_LOG_DEBUG] = "debug",
	[OFX_LOG_TRACE] = "trace",
};

static const char *const subsys_names[] = {
#define OFX_SUBSYS_NAME(name, str) [OFX_SUBSYS_##name] = str,
	OFX_LOG_SUBSYSTEMS(OFX_SUBSYS_NAME)
#undef OFX_SUBSYS_NAME
};

/*
 * Guards the sink and the init flag.  Writers hold it across their single
 * write(2) so that ofx_log_fini() never closes the fd under them and lines
 * from several threads never interleave, whatever the sink is.
 */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;
static bool log_fd_owned;	/* opened from DAPL_OFX_LOG_FILE: closed by fini */
static bool log_initialized;

const char *ofx_log_level_str(enum ofx_log_level level)
{
	if ((unsigned int)level >= OFX_ARRAY_SIZE(level_names))
		return "unknown";
	return level_names[level];
}

int ofx_log_level_parse(const char *name, enum ofx_log_level *level_p)
{
	size_t i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < OFX_ARRAY_SIZE(level_names); i++) {
		if (!strcasecmp(name, level_names[i])) {
			*level_p = (enum ofx_log_level)i;
			return 0;
		}
	}
	/* Spellings people type out of habit from other libraries. */
	if (!strcasecmp(name, "err")) {
		*level_p = OFX_LOG_ERROR;
		return 0;
	}
	if (!strcasecmp(name, "warning")) {
		*level_p = OFX_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

/* Parses a comma list of subsystem names; unknown names are reported in `bad`. */
static unsigned int parse_subsys(const char *list, char *bad, size_t bad_len)
{
	unsigned int mask = 0;
	const char *p = list;

	bad[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i;
		bool found = false;

		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 3 && !strncasecmp(p, "all", 3)) {
			mask |= OFX_LOG_ALL_SUBSYS;
			found = true;
		}
		for (i = 0; !found && i < OFX_ARRAY_SIZE(subsys_names); i++) {
			const char *name = subsys_names[i];

			if (strlen(name) == len && !strncasecmp(p, name, len)) {
				mask |= 1u << i;
				found = true;
			}
		}
		if (!found && len && !bad[0])
			snprintf(bad, bad_len, "%.*s", (int)len, p);
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	return mask;
}

/* The fd for DAPL_OFX_LOG_FILE; *owned_p tells whether it was opened here. */
static int open_sink(const char *path, bool *owned_p)
{
	int fd;

	*owned_p = false;
	if (!strcmp(path, "stderr"))
		return STDERR_FILENO;
	if (!strcmp(path, "stdout"))
		return STDOUT_FILENO;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	*owned_p = true;
	return fd;
}

/* Swaps the sink under the lock; the old one is closed if we opened it. */
static void set_sink(int fd, bool owned)
{
	bool old_owned;
	int old;

	pthread_mutex_lock(&log_lock);
	old = log_fd;
	old_owned = log_fd_owned;
	log_fd = fd;
	log_fd_owned = owned;
	pthread_mutex_unlock(&log_lock);
	if (old_owned && old != fd)
		close(old);
}

/*
 * Problems with the logging variables themselves are reported whatever
 * DAPL_OFX_LOG_SUBSYS says, so that a typo there cannot hide itself.
 */
#define init_warn(fmt, ...)                                                        \
	do {                                                                       \
		if (ofx_log_level >= OFX_LOG_WARN)                                 \
			ofx_log_write(OFX_LOG_WARN, OFX_SUBSYS_CFG, __func__, __LINE__, \
				      fmt, ##__VA_ARGS__);                         \
	} while (0)

void ofx_log_init(void)
{
	enum ofx_log_level level = OFX_LOG_DEFAULT_LEVEL;
	unsigned int mask = OFX_LOG_ALL_SUBSYS;
	const char *level_env, *subsys_env, *file_env;
	int fd = STDERR_FILENO;
	bool owned = false;
	int level_ret = 0;
	char bad[64] = "";
	int ret = 0;

	pthread_mutex_lock(&log_lock);
	if (log_initialized) {
		pthread_mutex_unlock(&log_lock);
		return;
	}
	log_initialized = true;
	pthread_mutex_unlock(&log_lock);

	level_env = ofx_env_get("DAPL_OFX_LOG_LEVEL");
	subsys_env = ofx_env_get("DAPL_OFX_LOG_SUBSYS");
	file_env = ofx_env_get("DAPL_OFX_LOG_FILE");

	if (file_env) {
		ret = open_sink(file_env, &owned);
		if (ret >= 0)
			fd = ret;
	}
	set_sink(fd, owned);

	if (subsys_env) {
		mask = parse_subsys(subsys_env, bad, sizeof(bad));
		if (!mask)
			mask = OFX_LOG_ALL_SUBSYS;
	}
	if (level_env)
		level_ret = ofx_log_level_parse(level_env, &level);
	ofx_log_subsys_mask = mask;
	ofx_log_level = level;

	if (level_ret)
		init_warn("unknown DAPL_OFX_LOG_LEVEL '%s' (error|warn|info|debug|trace), using %s",
			  level_env, ofx_log_level_str(level));
	if (ret < 0)
		init_warn("cannot open DAPL_OFX_LOG_FILE '%s': %s, logging to stderr", file_env,
			  strerror(-ret));
	if (bad[0])
		init_warn("unknown subsystem '%s' in DAPL_OFX_LOG_SUBSYS '%s'%s", bad, subsys_env,
			  mask == OFX_LOG_ALL_SUBSYS ? ", logging all" : "");
	ofx_dbg("log level %s, subsystem mask 0x%x", ofx_log_level_str(level), mask);
}

void ofx_log_fini(void)
{
	pthread_mutex_lock(&log_lock);
	log_initialized = false;
	pthread_mutex_unlock(&log_lock);
	set_sink(STDERR_FILENO, false);
	ofx_log_level = OFX_LOG_DEFAULT_LEVEL;
	ofx_log_subsys_mask = OFX_LOG_ALL_SUBSYS;
}

void ofx_log_write(enum ofx_log_level level, enum ofx_log_subsys subsys,
		   const char *func, int line, const char *fmt, ...)
{
	char buf[OFX_LOG_LINE_MAX];
	size_t cap = sizeof(buf) - 1;	/* keeps room for the '\n' */
	int saved_errno = errno;
	const char *sname;
	size_t len;
	va_list ap;
	int n;

	sname = (unsigned int)subsys < OFX_SUBSYS_COUNT ? subsys_names[subsys] : "?";
	n = snprintf(buf, cap, "ofx %d %s %s %s:%d: ", (int)getpid(), ofx_log_level_str(level),
		     sname, func, line);
	if (n < 0)
		return;
	len = (size_t)n < cap ? (size_t)n : cap - 1;

	/* "%m" in fmt must see the caller's errno, not one snprintf left behind. */
	errno = saved_errno;
	va_start(ap, fmt);
	n = vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
	if (n > 0 && len + (size_t)n < cap) {
		len += (size_t)n;
	} else if (n > 0) {
		len = cap - 1;
		memcpy(buf + len - 3, "...", 3);
	}
	if (len && buf[len - 1] == '\n')
		len--;
	buf[len++] = '\n';

	pthread_mutex_lock(&log_lock);
	if (write(log_fd, buf, len) < 0) {
		/* Nowhere left to report it. */
	}
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
