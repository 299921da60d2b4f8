/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The built programs, run the way a user runs them: ofx-info against
 * ofx_params[], ofx-dat-conf on scratch files, and the generated man page.
 */
#include "tools.h"

#include "datconf.h"

#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char sample[] =
	"# site dat.conf\n"
	"ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n"
	"ofa-v2-mlx5_0-1u u2.0 nonthreadsafe default libdaploucm.so.2 dapl.2.0 \"mlx5_0 1\" \"\"";

static const char *builddir(void)
{
	const char *d = getenv("OFX_TOP_BUILDDIR");

	return d && *d ? d : ".";
}

/* Runs `fmt` through sh with stderr folded into stdout; returns the exit status. */
static int run(char **out_p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int run(char **out_p, const char *fmt, ...)
{
	char *cmd, *full, *buf = NULL;
	size_t len = 0;
	FILE *p, *m;
	va_list ap;
	int c, st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (asprintf(&full, "cd '%s' && %s 2>&1", builddir(), cmd) < 0)
		abort();
	p = popen(full, "r");
	if (!p)
		abort();
	m = open_memstream(&buf, &len);
	while ((c = fgetc(p)) != EOF)
		fputc(c, m);
	fclose(m);
	st = pclose(p);
	free(cmd);
	free(full);
	if (out_p)
		*out_p = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void clear_env(void)
{
	size_t i;

	for (i = 0; i < ofx_param_count; i++)
		unsetenv(ofx_params[i].env);
	unsetenv("DAT_OVERRIDE");
}

static void test_ofx_info_c_lists_every_row_with_its_default(void)
{
	char *out, *line, *save, key[64], env[64], type[32], def[300];
	size_t rows = 0;

	clear_env();
	CU_ASSERT_EQUAL_FATAL(run(&out, "dat-conf/ofx-info -c"), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (*line == '#' || *line == ' ')
			continue;
		CU_ASSERT_EQUAL_FATAL(sscanf(line, "%63s %63s %31s %299s", key, env, type, def), 4);
		CU_ASSERT_TRUE_FATAL(rows < ofx_param_count);
		CU_ASSERT_STRING_EQUAL(key, ofx_params[rows].key ? ofx_params[rows].key : "-");
		CU_ASSERT_STRING_EQUAL(env, ofx_params[rows].env);
		CU_ASSERT_STRING_EQUAL(def, ofx_params[rows].defval[0] ?
					    ofx_params[rows].defval : "\"\"");
		rows++;
	}
	CU_ASSERT_EQUAL(rows, ofx_param_count);
	free(out);

	/* the environment is applied */
	CU_ASSERT_EQUAL(run(&out, "DAPL_OFX_TOS=9 dat-conf/ofx-info -c | grep '^tos '"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 9 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " env "));
	free(out);
}

static void test_ofx_info_q_and_usage(void)
{
	char *out;

	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-info -q -P 16 -N 64"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "1008"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "P*(N-1)"));
	free(out);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-info -q -P 16"), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-info -P x -q -N 1"), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-info --bogus"), 2);
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-info -c -o p2p=maybe"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "p2p"));
	free(out);
	/* -d works without a device too */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-info -d"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "# RDMA devices:"));
	free(out);
}

static void test_dat_conf_add_dry_run_then_for_real(void)
{
	char *path = tools_write_file("cli.conf", sample, 0640);
	char *out, *text;
	struct stat st;

	clear_env();
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add --dry-run --file '%s' "
			    "--variant p2p ib0 cm_retries=3", path), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "+ofx-v2-ib0-p2p u2.0 nonthreadsafe default "
				      "libdaplofx.so.2 dapl.2.0 "
				      "\"ib0 0 p2p=on cm_retries=3\" \"\"\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--- "));
	free(out);
	text = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(text, sample);
	free(text);

	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -f '%s' --variant p2p ib0 "
			    "cm_retries=3", path), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "added ofx-v2-ib0-p2p"));
	free(out);
	text = tools_slurp(path);
	CU_ASSERT_EQUAL(strncmp(text, sample, strlen(sample)), 0);
	CU_ASSERT_STRING_EQUAL(text + strlen(sample),
			       "\nofx-v2-ib0-p2p u2.0 nonthreadsafe default libdaplofx.so.2 "
			       "dapl.2.0 "
			       "\"ib0 0 p2p=on cm_retries=3\" \"\"\n");
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);

	/* again: nothing to do, nothing written */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -f '%s' --variant p2p ib0 "
			    "cm_retries=3", path), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "nothing to change"));
	free(out);
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -n -f '%s' --variant p2p ib0 "
			    "cm_retries=3", path), 0);
	CU_ASSERT_PTR_NULL(strstr(out, "+ofx"));
	free(out);
	out = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(out, text);
	free(out);

	/* remove by device, then again */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf remove -f '%s' ib0", path), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "removed 1 entry"));
	free(out);
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf remove -f '%s' ib0", path), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "nothing to change"));
	free(out);
	/* the stock entry is not ours to remove */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf remove -f '%s' ofa-v2-ib0", path), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "not removing"));
	free(out);
	free(text);
	free(path);
}

static void test_dat_conf_refuses_typos_and_read_only_files(void)
{
	char *path = tools_write_file("ro-cli.conf", sample, 0444);
	char *out, *text;

	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -f '%s' ib0", path), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "read-only"));
	free(out);
	text = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(text, sample);
	free(text);
	/* a dry run only reads */
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -n -f '%s' ib0", path), 0);

	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -f '%s' ib0 p2pp=on", path), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "did you mean 'p2p'"));
	free(out);
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf add -f '%s' ib0 rtr=fast", path), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "send|write|read"));
	free(out);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -f '%s' --variant fast ib0", path),
			2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -f '%s'", path), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf frobnicate"), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf list --dry-run"), 2);
	free(path);
}

static void test_dat_conf_default_file_is_dat_override(void)
{
	char *path = tools_write_file("override.conf", "", 0644);
	char *out, *text;

	CU_ASSERT_EQUAL(run(&out, "DAT_OVERRIDE='%s' dat-conf/ofx-dat-conf add --lib "
			    "/opt/ofx/libdaplofx.so.2 eth9", path), 0);
	free(out);
	text = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(text, "ofx-v2-eth9 u2.0 nonthreadsafe default "
			       "/opt/ofx/libdaplofx.so.2 dapl.2.0 \"eth9 0\" \"\"\n");
	free(text);
	free(path);
}

static void test_dat_conf_detect_records_and_remove_takes_it_back(void)
{
	char *path = tools_write_file("detect.conf", sample, 0644);
	char *rec, *out, *text, *after;

	clear_env();
	if (asprintf(&rec, "%s/detect.added", tools_scratch()) < 0)
		abort();
	/* a dry run writes neither file */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf detect -n -f '%s' --record '%s' eth7",
			    path, rec), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "+ofx-v2-eth7 "));
	free(out);
	CU_ASSERT_NOT_EQUAL(access(rec, F_OK), 0);

	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf detect -f '%s' --record '%s' eth7 eth8",
			    path, rec), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "added ofx-v2-eth7, ofx-v2-eth8"));
	free(out);
	text = tools_slurp(rec);
	/* the sample ends without a newline: the record says so first */
	CU_ASSERT_STRING_EQUAL(text, OFX_DATCONF_EOF_MARK
			       "ofa-v2-mlx5_0-1u u2.0 nonthreadsafe default libdaploucm.so.2 "
			       "dapl.2.0 \"mlx5_0 1\" \"\"\n"
			       "ofx-v2-eth7 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
			       "\"eth7 0\" \"\"\n"
			       "ofx-v2-eth8 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
			       "\"eth8 0\" \"\"\n");
	free(text);

	/* again, and with an entry the admin wrote for eth9: nothing added, nothing recorded */
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -f '%s' eth9 tos=3", path), 0);
	text = tools_slurp(path);
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf detect -f '%s' --record '%s' eth7 eth8 "
			    "eth9", path, rec), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "left as it is"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "nothing to change"));
	free(out);
	after = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(after, text);
	free(after);
	free(text);

	/* remove --record: the admin's eth9 stays, the file is otherwise as before, R is gone */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf remove -f '%s' --record '%s'", path, rec),
			0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "removed 2 recorded lines"));
	free(out);
	CU_ASSERT_NOT_EQUAL(access(rec, F_OK), 0);
	text = tools_slurp(path);
	CU_ASSERT_PTR_NULL(strstr(text, "ofx-v2-eth7"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "ofx-v2-eth9"));
	free(text);
	/* the newline the first edit added stays: the admin's line came after it */
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf remove -f '%s' eth9", path), 0);
	text = tools_slurp(path);
	CU_ASSERT_EQUAL(strncmp(text, sample, strlen(sample)), 0);
	CU_ASSERT_STRING_EQUAL(text + strlen(sample), "\n");
	free(text);
	/* no record: nothing to do */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf remove -f '%s' --record '%s'", path, rec),
			0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "no record"));
	free(out);

	/* add --record keeps an appended line, not a replaced one */
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -f '%s' --record '%s' ib0", path, rec),
			0);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf add -f '%s' --record '%s' ib0 tos=1",
			    path, rec), 0);
	text = tools_slurp(rec);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"ib0 0\""));
	CU_ASSERT_PTR_NULL(strstr(text, "tos=1"));
	free(text);

	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf detect --variant p2p -f '%s'", path), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf remove -f '%s' --record '%s' ib0", path,
			    rec), 2);
	CU_ASSERT_EQUAL(run(NULL, "dat-conf/ofx-dat-conf list --record '%s'", rec), 2);
	free(rec);
	free(path);
}

static void test_dat_conf_detect_runs_without_a_device(void)
{
	char *path = tools_write_file("detect-none.conf", sample, 0644);
	char *out, *text;

	/* on a host without RDMA nothing is added; with devices, their netdevs are */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf detect -n -f '%s'", path), 0);
	CU_ASSERT_TRUE(strstr(out, "no RDMA device") || strstr(out, "+ofx-v2-") ||
		       strstr(out, "nothing to change"));
	free(out);
	text = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(text, sample);
	free(text);
	free(path);
}

static void test_dat_conf_list_runs_without_a_device(void)
{
	char *out;

	/* either devices with their IA names, or a plain statement that there are none */
	CU_ASSERT_EQUAL(run(&out, "dat-conf/ofx-dat-conf list"), 0);
	CU_ASSERT_TRUE(strstr(out, "no RDMA device") || strstr(out, "ofx-v2-") ||
		       strstr(out, "port"));
	free(out);
}

static void test_man_pages_are_generated_and_clean(void)
{
	char *page, path[4096], needle[128], *out;
	const char *src = getenv("OFX_TOP_SRCDIR");
	size_t i;

	snprintf(path, sizeof(path), "%s/man/libdaplofx.7", builddir());
	page = tools_slurp(path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(page);
	CU_ASSERT_PTR_NULL(strstr(page, "%OFX_OPTIONS%"));
	CU_ASSERT_PTR_NULL(strstr(page, "%VERSION%"));
	for (i = 0; i < ofx_param_count; i++) {
		snprintf(needle, sizeof(needle), "\\fB%s\\fR", ofx_params[i].env);
		CU_ASSERT_PTR_NOT_NULL(strstr(page, needle));
		if (ofx_params[i].key) {
			snprintf(needle, sizeof(needle), "\\fB%s\\fR=", ofx_params[i].key);
			CU_ASSERT_PTR_NOT_NULL(strstr(page, needle));
		}
	}
	free(page);

	/* groff finds nothing to warn about (skipped where groff is missing) */
	if (run(NULL, "command -v groff >/dev/null"))
		return;
	CU_ASSERT_EQUAL(run(&out, "groff -man -ww -z man/libdaplofx.7"), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	free(out);
	if (!src)
		src = ".";
	CU_ASSERT_EQUAL(run(&out, "groff -man -ww -z '%s/man/ofx-dat-conf.1' "
			    "'%s/man/ofx-info.1'", src, src), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	free(out);
}

CU_TestInfo ofx_test_tools_cli[] = {
	{ "ofx-info -c lists every row with its default",
	  test_ofx_info_c_lists_every_row_with_its_default },
	{ "ofx-info -q and usage errors", test_ofx_info_q_and_usage },
	{ "ofx-dat-conf add: dry run, then for real, then again",
	  test_dat_conf_add_dry_run_then_for_real },
	{ "ofx-dat-conf refuses typos and read-only files",
	  test_dat_conf_refuses_typos_and_read_only_files },
	{ "ofx-dat-conf edits $DAT_OVERRIDE by default",
	  test_dat_conf_default_file_is_dat_override },
	{ "ofx-dat-conf detect records, remove --record takes it back",
	  test_dat_conf_detect_records_and_remove_takes_it_back },
	{ "ofx-dat-conf detect runs without a device", test_dat_conf_detect_runs_without_a_device },
	{ "ofx-dat-conf list runs without a device", test_dat_conf_list_runs_without_a_device },
	{ "man pages are generated and clean", test_man_pages_are_generated_and_clean },
	CU_TEST_INFO_NULL,
};
