/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_TOOLS_H
#define OFX_TEST_TOOLS_H

#include <CUnit/CUnit.h>

/*
 * Suites of test/unit/run_tools, the tests of the programs under dat-conf/:
 * one CU_TestInfo table per source, listed once in run_tools.c.
 */
extern CU_TestInfo ofx_test_datconf[];
extern CU_TestInfo ofx_test_info[];
extern CU_TestInfo ofx_test_tools_cli[];

/* A fresh scratch directory for one test (removed by tools_scratch_clean). */
const char *tools_scratch(void);
void tools_scratch_clean(void);
/* Writes `text` to dir/name with `mode`; returns the malloc'ed path. */
char *tools_write_file(const char *name, const char *text, unsigned int mode);
/* The whole file, malloc'ed, or NULL. */
char *tools_slurp(const char *path);

#endif
