/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_UNIT_H
#define OFX_TEST_UNIT_H

#include <CUnit/CUnit.h>
#include "ep_conn.h"
#include "ep_transport.h"
#include "ep_recv.h"

/*
 * Puts an EP in a state as if a connection had brought it there: the
 * transition table is not consulted, the data path's may_send follows.
 */
#define test_ep_force_state(ep, s) ofx_ep_conn_init((ep), (s))

/*
 * The IB extension op as a consumer's dat_ib_* macros reach it, every
 * argument of its consumer's type: a varargs shim in front of ofx_ext_op()
 * (test_ext.c).  A test that writes dat_ib_* calls defines
 * dat_extension_op as ofx_test_ext_call.
 */
DAT_RETURN ofx_test_ext_call(DAT_HANDLE handle, DAT_EXTENDED_OP op, ...);

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
extern CU_TestInfo ofx_test_xrc_scen[];
extern CU_TestInfo ofx_test_xrc_route[];
extern CU_TestInfo ofx_test_badinput[];
extern CU_TestInfo ofx_test_siw[];
extern CU_TestInfo ofx_test_ep_conn[];
extern CU_TestInfo ofx_test_csp[];

#endif
