/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "xrc_steps.h"

CU_TestInfo ofx_test_xrc_scen[] = {
	CU_TEST_INFO_NULL,
};
