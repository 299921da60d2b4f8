/* SPDX-License-Identifier: BSD-2-Clause */
#include "runner.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

static bool selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int ofx_test_run(const char *prog, const CU_SuiteInfo *suites, int argc, char **argv)
{
	CU_SuiteInfo *chosen;
	size_t count = 0, n = 0;
	unsigned int failed;

	while (suites[count].pName)
		count++;
	chosen = calloc(count + 1, sizeof(*chosen));
	if (!chosen)
		return 2;
	for (size_t i = 0; i < count; i++)
		if (selected(suites[i].pName, argc, argv))
			chosen[n++] = suites[i];
	chosen[n] = (CU_SuiteInfo)CU_SUITE_INFO_NULL;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		free(chosen);
		return 2;
	}
	if (CU_register_suites(chosen) != CUE_SUCCESS) {
		fprintf(stderr, "%s: %s\n", prog, CU_get_error_msg());
		CU_cleanup_registry();
		free(chosen);
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	free(chosen);
	return failed ? 1 : 0;
}
