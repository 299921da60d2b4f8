/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_DTO
#include "unit.h"

#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALL_SUBSYS ((1u << OFX_SUBSYS_COUNT) - 1)

static char log_path[64];
static char err_path[64];

/* Restarts logging from the environment, with the sink in a fresh temp file. */
static void log_to_temp_file(const char *level, const char *subsys)
{
	int fd;

	strcpy(log_path, "/tmp/ofx_test_log_XXXXXX");
	fd = mkstemp(log_path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	setenv("DAPL_OFX_LOG_FILE", log_path, 1);
	if (level)
		setenv("DAPL_OFX_LOG_LEVEL", level, 1);
	else
		unsetenv("DAPL_OFX_LOG_LEVEL");
	if (subsys)
		setenv("DAPL_OFX_LOG_SUBSYS", subsys, 1);
	else
		unsetenv("DAPL_OFX_LOG_SUBSYS");
	ofx_log_fini();
	ofx_log_init();
}

/* Back to the defaults on stderr; removes the temp file. */
static void log_restore(void)
{
	unsetenv("DAPL_OFX_LOG_FILE");
	unsetenv("DAPL_OFX_LOG_LEVEL");
	unsetenv("DAPL_OFX_LOG_SUBSYS");
	ofx_log_fini();
	ofx_log_init();
	if (log_path[0])
		unlink(log_path);
	log_path[0] = '\0';
}

/* A whole (small) file as a string (caller frees). */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	buf = calloc(1, 1 << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *read_log(void)
{
	return read_file(log_path);
}

static int side_effects;

static int count_evaluation(void)
{
	return ++side_effects;
}

/* Points fd 2 at a fresh temp file (err_path); returns the saved fd 2. */
static int capture_stderr(void)
{
	int fd, saved;

	strcpy(err_path, "/tmp/ofx_test_err_XXXXXX");
	fd = mkstemp(err_path);
	CU_ASSERT_FATAL(fd >= 0);
	saved = dup(STDERR_FILENO);
	CU_ASSERT_FATAL(saved >= 0);
	dup2(fd, STDERR_FILENO);
	close(fd);
	return saved;
}

/* Restores fd 2 and returns what was written to it (caller frees). */
static char *release_stderr(int saved)
{
	char *text;

	dup2(saved, STDERR_FILENO);
	close(saved);
	text = read_file(err_path);
	unlink(err_path);
	return text;
}

static void test_level_names_parse(void)
{
	static const struct {
		const char *name;
		enum ofx_log_level level;
	} cases[] = {
		{ "error", OFX_LOG_ERROR }, { "warn", OFX_LOG_WARN },   { "info", OFX_LOG_INFO },
		{ "debug", OFX_LOG_DEBUG }, { "trace", OFX_LOG_TRACE }, { "DEBUG", OFX_LOG_DEBUG },
		{ "Warning", OFX_LOG_WARN }, { "err", OFX_LOG_ERROR },
	};
	enum ofx_log_level level;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		level = (enum ofx_log_level)-1;
		CU_ASSERT_EQUAL(ofx_log_level_parse(cases[i].name, &level), 0);
		CU_ASSERT_EQUAL(level, cases[i].level);
	}
	level = OFX_LOG_INFO;
	CU_ASSERT_EQUAL(ofx_log_level_parse("loud", &level), -EINVAL);
	CU_ASSERT_EQUAL(ofx_log_level_parse("", &level), -EINVAL);
	CU_ASSERT_EQUAL(ofx_log_level_parse("3", &level), -EINVAL);
	CU_ASSERT_EQUAL(ofx_log_level_parse(NULL, &level), -EINVAL);
	CU_ASSERT_EQUAL(level, OFX_LOG_INFO);
}

static void test_level_names_round_trip(void)
{
	enum ofx_log_level l, back;

	for (l = OFX_LOG_ERROR; l <= OFX_LOG_TRACE; l++) {
		CU_ASSERT_EQUAL(ofx_log_level_parse(ofx_log_level_str(l), &back), 0);
		CU_ASSERT_EQUAL(back, l);
	}
	CU_ASSERT_STRING_EQUAL(ofx_log_level_str((enum ofx_log_level)42), "unknown");
}

static void test_message_below_level_is_not_formatted(void)
{
	char *text;

	log_to_temp_file("warn", NULL);
	side_effects = 0;
	ofx_dbg("debug %d", count_evaluation());
	ofx_info("info %d", count_evaluation());
	CU_ASSERT_EQUAL(side_effects, 0);
	ofx_warn("warn %d", count_evaluation());
	ofx_err("error %d", count_evaluation());
	CU_ASSERT_EQUAL(side_effects, 2);

	text = read_log();
	CU_ASSERT_PTR_NULL(strstr(text, "debug 1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "warn 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "error 2\n"));
	free(text);
	log_restore();
}

static void test_filtered_subsystem_is_not_formatted(void)
{
	char *text;

	/* this file logs as "dto" */
	log_to_temp_file("trace", "cm,ep");
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, (1u << OFX_SUBSYS_CM) | (1u << OFX_SUBSYS_EP));
	side_effects = 0;
	ofx_err("hidden %d", count_evaluation());
	CU_ASSERT_EQUAL(side_effects, 0);
	log_restore();

	log_to_temp_file("trace", " ep , dto ");
	ofx_err("shown %d", count_evaluation());
	CU_ASSERT_EQUAL(side_effects, 1);
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "shown 1\n"));
	free(text);
	log_restore();
}

static void test_line_has_pid_level_subsystem_function_and_line(void)
{
	char expect[256], *text;
	int line;

	log_to_temp_file("info", NULL);
	line = __LINE__ + 1;
	ofx_info("hello %s", "world");
	snprintf(expect, sizeof(expect), "ofx %d info dto %s:%d: hello world\n", (int)getpid(),
		 __func__, line);
	text = read_log();
	CU_ASSERT_STRING_EQUAL(text, expect);
	free(text);
	log_restore();
}

static void test_errno_is_preserved_and_seen_by_percent_m(void)
{
	char expect[128], *text;

	log_to_temp_file("warn", NULL);
	errno = EAGAIN;
	ofx_err("call failed: %m");
	CU_ASSERT_EQUAL(errno, EAGAIN);
	errno = ENOENT;
	ofx_dbg("not printed: %m");
	CU_ASSERT_EQUAL(errno, ENOENT);

	snprintf(expect, sizeof(expect), "call failed: %s\n", strerror(EAGAIN));
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL(strstr(text, expect));
	free(text);
	log_restore();
}

static void test_file_sink_gets_lines_appended(void)
{
	char *text;
	int saved;

	log_to_temp_file("warn", NULL);
	ofx_warn("first");
	/* a second init is a no-op, a fini/init cycle reopens and appends */
	ofx_log_init();
	ofx_log_fini();
	ofx_log_init();
	ofx_warn("second");
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "first\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "second\n"));
	CU_ASSERT_TRUE(strstr(text, "first") < strstr(text, "second"));
	free(text);
	log_restore();

	/* after fini the file is closed and lines go to stderr again */
	log_to_temp_file("warn", NULL);
	ofx_log_fini();
	saved = capture_stderr();
	ofx_err("after fini");
	text = release_stderr(saved);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "after fini\n"));
	free(text);
	text = read_log();
	CU_ASSERT_STRING_EQUAL(text, "");
	free(text);
	log_restore();
}

static void test_init_reads_the_environment_once(void)
{
	log_to_temp_file("debug", "cm");
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_DEBUG);
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, 1u << OFX_SUBSYS_CM);
	setenv("DAPL_OFX_LOG_LEVEL", "error", 1);
	ofx_log_init();
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_DEBUG);
	ofx_log_fini();
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_WARN);
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, ALL_SUBSYS);
	ofx_log_init();
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_ERROR);
	log_restore();
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_WARN);
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, ALL_SUBSYS);
}

static void test_bad_settings_warn_and_fall_back(void)
{
	char *text;

	log_to_temp_file("loud", "cm,bogus");
	CU_ASSERT_EQUAL(ofx_log_level, OFX_LOG_WARN);
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, 1u << OFX_SUBSYS_CM);
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "'loud'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "'bogus'"));
	free(text);
	log_restore();

	/* nothing valid in the list: log everything rather than nothing */
	log_to_temp_file(NULL, "nonsense");
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, ALL_SUBSYS);
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "'nonsense'"));
	free(text);
	log_restore();
	log_to_temp_file(NULL, "all");
	CU_ASSERT_EQUAL(ofx_log_subsys_mask, ALL_SUBSYS);
	log_restore();
}

static void test_unopenable_file_falls_back_to_stderr(void)
{
	char *text;
	int saved;

	saved = capture_stderr();
	setenv("DAPL_OFX_LOG_FILE", "/nonexistent-dir/ofx.log", 1);
	unsetenv("DAPL_OFX_LOG_LEVEL");
	unsetenv("DAPL_OFX_LOG_SUBSYS");
	ofx_log_fini();
	ofx_log_init();
	ofx_warn("still logging");
	text = release_stderr(saved);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "cannot open DAPL_OFX_LOG_FILE"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "still logging\n"));
	free(text);
	log_restore();
}

static void test_long_message_is_cut_to_one_line(void)
{
	char big[4096], *text;

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_to_temp_file("warn", NULL);
	ofx_warn("%s", big);
	ofx_warn("next");
	text = read_log();
	CU_ASSERT_PTR_NOT_NULL_FATAL(strchr(text, '\n'));
	CU_ASSERT_TRUE(strchr(text, '\n') - text < 1024);
	CU_ASSERT_EQUAL(strncmp(strchr(text, '\n') - 3, "...", 3), 0);
	CU_ASSERT_EQUAL(strncmp(strchr(text, '\n') + 1, "ofx ", 4), 0);
	free(text);
	log_restore();
}

#define THREADS 4
#define LINES_PER_THREAD 500

static void *log_lines(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < LINES_PER_THREAD; i++)
		ofx_warn("thread %ld line %d %s", id, i,
			 "padding padding padding padding padding padding padding padding");
	return NULL;
}

static void test_threads_never_interleave_lines(void)
{
	pthread_t tids[THREADS];
	char *text, *line, *save = NULL;
	int lines = 0;
	long t;

	log_to_temp_file("warn", NULL);
	for (t = 0; t < THREADS; t++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&tids[t], NULL, log_lines, (void *)t), 0);
	for (t = 0; t < THREADS; t++)
		pthread_join(tids[t], NULL);
	text = read_log();
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		CU_ASSERT_EQUAL(strncmp(line, "ofx ", 4), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(line, " padding padding"));
		CU_ASSERT_EQUAL(strcmp(line + strlen(line) - 7, "padding"), 0);
		lines++;
	}
	CU_ASSERT_EQUAL(lines, THREADS * LINES_PER_THREAD);
	free(text);
	log_restore();
}

CU_TestInfo ofx_test_log[] = {
	{ "level names parse", test_level_names_parse },
	{ "level names round trip", test_level_names_round_trip },
	{ "message below the level is not formatted", test_message_below_level_is_not_formatted },
	{ "filtered subsystem is not formatted", test_filtered_subsystem_is_not_formatted },
	{ "line has pid, level, subsystem, function and line",
	  test_line_has_pid_level_subsystem_function_and_line },
	{ "errno is preserved and seen by %m", test_errno_is_preserved_and_seen_by_percent_m },
	{ "file sink gets lines appended", test_file_sink_gets_lines_appended },
	{ "init reads the environment once", test_init_reads_the_environment_once },
	{ "bad settings warn and fall back", test_bad_settings_warn_and_fall_back },
	{ "unopenable file falls back to stderr", test_unopenable_file_falls_back_to_stderr },
	{ "long message is cut to one line", test_long_message_is_cut_to_one_line },
	{ "threads never interleave lines", test_threads_never_interleave_lines },
	CU_TEST_INFO_NULL,
};
