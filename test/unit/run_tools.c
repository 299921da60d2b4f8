/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runs the CUnit suites of the tools (ofx-dat-conf, ofx-info, man pages).
 * Usage: run_tools [suite-name...] (no argument = all).  The CLI suite runs
 * the built programs from $OFX_TOP_BUILDDIR (default: the current folder).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CUnit/Basic.h>
#include "tools.h"
#include "runner.h"
#include "obj.h"

static char scratch[64];

const char *tools_scratch(void)
{
	if (!scratch[0]) {
		snprintf(scratch, sizeof(scratch), "/tmp/ofx-tools-XXXXXX");
		if (!mkdtemp(scratch)) {
			perror("mkdtemp");
			exit(2);
		}
	}
	return scratch;
}

void tools_scratch_clean(void)
{
	char cmd[128];

	if (!scratch[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd))
		fprintf(stderr, "run_tools: could not remove %s\n", scratch);
	scratch[0] = '\0';
}

char *tools_write_file(const char *name, const char *text, unsigned int mode)
{
	char *path;
	FILE *f;

	if (asprintf(&path, "%s/%s", tools_scratch(), name) < 0)
		return NULL;
	unlink(path);
	f = fopen(path, "w");
	if (!f) {
		free(path);
		return NULL;
	}
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

char *tools_slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r"), *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	fclose(f);
	return buf;
}

static int clean_suite(void)
{
	tools_scratch_clean();
	return 0;
}

static CU_SuiteInfo suites[] = {
	{ "datconf", NULL, clean_suite, NULL, NULL, ofx_test_datconf },
	{ "info", NULL, clean_suite, NULL, NULL, ofx_test_info },
	{ "tools_cli", NULL, clean_suite, NULL, NULL, ofx_test_tools_cli },
	CU_SUITE_INFO_NULL,
};

int main(int argc, char **argv)
{
	int ret = ofx_test_run("run_tools", suites, argc, argv);

	tools_scratch_clean();
	return ret;
}
