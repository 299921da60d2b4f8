/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_UNIT_H
#define OFX_TEST_UNIT_H

#include <CUnit/CUnit.h>

/*
 * Every suite is a CU_TestInfo table named ofx_test_<object>[] defined in
 * test/unit/test_<object>.c and listed once in run_unit.c.
 */
extern CU_TestInfo ofx_test_config[];
extern CU_TestInfo ofx_test_pdata[];
extern CU_TestInfo ofx_test_status[];
extern CU_TestInfo ofx_test_log[];
extern CU_TestInfo ofx_test_evd[];
extern CU_TestInfo ofx_test_dto[];
extern CU_TestInfo ofx_test_provider[];
extern CU_TestInfo ofx_test_obj[];
extern CU_TestInfo ofx_test_cm[];
extern CU_TestInfo ofx_test_progress[];
extern CU_TestInfo ofx_test_lmr[];
extern CU_TestInfo ofx_test_cno[];
extern CU_TestInfo ofx_test_rmr[];
extern CU_TestInfo ofx_test_ext[];
extern CU_TestInfo ofx_test_srq[];
extern CU_TestInfo ofx_test_xrc[];
extern CU_TestInfo ofx_test_badinput[];

#endif
