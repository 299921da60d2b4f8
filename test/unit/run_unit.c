/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runs every CUnit suite of the provider.  Usage: run_unit [suite-name...]
 * (no argument = all).  Exit status 0 only if every assertion passed.
 */
#include "unit.h"
#include "runner.h"
#include "xrc_model.h"

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
	{ "xrc_mlx5", xm_profile_mlx5, xm_profile_toy, NULL, NULL, ofx_test_xrc },
	{ "xrc_mlx4", xm_profile_mlx4, xm_profile_toy, NULL, NULL, ofx_test_xrc },
	{ "xrc_scen", NULL, NULL, NULL, NULL, ofx_test_xrc_scen },
	{ "xrc_scen_mlx5", xm_profile_mlx5, xm_profile_toy, NULL, NULL, ofx_test_xrc_scen },
	{ "xrc_scen_mlx4", xm_profile_mlx4, xm_profile_toy, NULL, NULL, ofx_test_xrc_scen },
	{ "xrc_route", NULL, NULL, NULL, NULL, ofx_test_xrc_route },
	{ "badinput", NULL, NULL, NULL, NULL, ofx_test_badinput },
	{ "siw", NULL, NULL, NULL, NULL, ofx_test_siw },
	{ "ep_conn", NULL, NULL, NULL, NULL, ofx_test_ep_conn },
	{ "csp", NULL, NULL, NULL, NULL, ofx_test_csp },
	{ "provider", NULL, NULL, NULL, NULL, ofx_test_provider },
	{ "cm", NULL, NULL, NULL, NULL, ofx_test_cm },
	CU_SUITE_INFO_NULL,
};

int main(int argc, char **argv)
{
	return ofx_test_run("run_unit", suites, argc, argv);
}
