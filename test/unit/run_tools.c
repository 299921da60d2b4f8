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

static bool selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	CU_SuiteInfo chosen[OFX_ARRAY_SIZE(suites)];
	size_t n = 0;
	unsigned int failed;

	for (size_t i = 0; suites[i].pName; i++)
		if (selected(suites[i].pName, argc, argv))
			chosen[n++] = suites[i];
	chosen[n] = (CU_SuiteInfo)CU_SUITE_INFO_NULL;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	if (CU_register_suites(chosen) != CUE_SUCCESS) {
		fprintf(stderr, "run_tools: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	tools_scratch_clean();
	return failed ? 1 : 0;
}
