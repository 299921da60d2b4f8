/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runs every CUnit suite of the provider.  Usage: run_unit [suite-name...]
 * (no argument = all).  Exit status 0 only if every assertion passed.
 */
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <CUnit/Basic.h>
#include "unit.h"
#include "obj.h"

static CU_SuiteInfo suites[] = {
	{ "obj", NULL, NULL, NULL, NULL, ofx_test_obj },
	{ "log", NULL, NULL, NULL, NULL, ofx_test_log },
	{ "status", NULL, NULL, NULL, NULL, ofx_test_status },
	{ "config", NULL, NULL, NULL, NULL, ofx_test_config },
	{ "pdata", NULL, NULL, NULL, NULL, ofx_test_pdata },
	{ "dto", NULL, NULL, NULL, NULL, ofx_test_dto },
	{ "evd", NULL, NULL, NULL, NULL, ofx_test_evd },
	{ "progress", NULL, NULL, NULL, NULL, ofx_test_progress },
	{ "lmr", NULL, NULL, NULL, NULL, ofx_test_lmr },
	{ "cno", NULL, NULL, NULL, NULL, ofx_test_cno },
	{ "rmr", NULL, NULL, NULL, NULL, ofx_test_rmr },
	{ "ext", NULL, NULL, NULL, NULL, ofx_test_ext },
	{ "srq", NULL, NULL, NULL, NULL, ofx_test_srq },
	{ "xrc", NULL, NULL, NULL, NULL, ofx_test_xrc },
	{ "badinput", NULL, NULL, NULL, NULL, ofx_test_badinput },
	{ "provider", NULL, NULL, NULL, NULL, ofx_test_provider },
	{ "cm", NULL, NULL, NULL, NULL, ofx_test_cm },
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
		fprintf(stderr, "run_unit: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
