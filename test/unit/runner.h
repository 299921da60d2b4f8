/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_RUNNER_H
#define OFX_TEST_RUNNER_H

#include <CUnit/CUnit.h>

/*
 * Registers the suites named on the command line (all when none is named),
 * runs them verbosely and returns the exit status: 0 only if every
 * assertion passed, 1 on failures, 2 if CUnit could not be set up.  `prog`
 * prefixes error messages.
 */
int ofx_test_run(const char *prog, const CU_SuiteInfo *suites, int argc, char **argv);

#endif
