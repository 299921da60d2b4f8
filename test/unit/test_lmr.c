/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "ia.h"
#include "lmr.h"
#include "log.h"
#include "pz.h"
#include "status.h"
#include "verbs.h"

#include <dat2/dat_ib_extensions.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Privilege translation, and PZ/LMR life cycles against the verbs model of
 * fake_verbs.h, which hands out fake PDs and MRs (no device here).
 */

static void test_privileges_map_to_verbs_access(void)
{
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_NONE_FLAG), 0);
	/* Local read is implicit in verbs. */
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_LOCAL_READ_FLAG), 0);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
			IBV_ACCESS_LOCAL_WRITE);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_REMOTE_READ_FLAG),
			IBV_ACCESS_REMOTE_READ);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_READ_FLAG), IBV_ACCESS_REMOTE_READ);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_ALL_FLAG),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_ALL_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
}

static void test_remote_write_and_atomic_imply_local_write(void)
{
	/* ibv_reg_mr fails with EINVAL for either without LOCAL_WRITE. */
	CU_ASSERT_EQUAL(ofx_lmr_access_flags(DAT_MEM_PRIV_REMOTE_WRITE_FLAG),
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	CU_ASSERT_EQUAL(ofx_lmr_access_flags((DAT_MEM_PRIV_FLAGS)DAT_IB_MEM_PRIV_REMOTE_ATOMIC),
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE);
}

/* PDs and MRs come from fake_verbs.h; a PD with MRs is busy, like the kernel. */

static struct ofx_ia ia;

static void setup(void)
{
	fake_verbs_install();
	fake_verbs.pd_busy_with_mrs = true;
	fake_ia_init(&ia);
}

static void teardown(void)
{
	ofx_verbs_set(NULL);
	fake_ia_fini(&ia);
}

static void test_lmr_registers_and_reports_its_region(void)
{
	static char buf[4096];
	DAT_PZ_HANDLE pz_h;
	DAT_LMR_HANDLE lmr_h;
	DAT_LMR_CONTEXT lctx = 0;
	DAT_RMR_CONTEXT rctx = 0;
	DAT_VLEN reg_len = 0;
	DAT_VADDR reg_addr = 0;
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_LMR_PARAM param;
	DAT_PZ_PARAM pz_param;

	setup();
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz_h) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.pds, 1);
	CU_ASSERT_EQUAL(ofx_pz_query(pz_h, DAT_PZ_FIELD_ALL, &pz_param), DAT_SUCCESS);
	/* Not known to libdat2: the raw pointer comes back. */
	CU_ASSERT_PTR_EQUAL(pz_param.ia_handle, &ia);

	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz_h,
				       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_h, &lctx,
				       &rctx, &reg_len, &reg_addr) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.last_access,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CU_ASSERT_EQUAL(lctx, 0x1000);
	CU_ASSERT_EQUAL(rctx, 0x2000);
	CU_ASSERT_EQUAL(reg_len, sizeof(buf));
	CU_ASSERT_EQUAL(reg_addr, (DAT_VADDR)(uintptr_t)buf);
	CU_ASSERT_EQUAL(atomic_load(&((struct ofx_pz *)pz_h)->refs), 1);

	memset(&param, 0, sizeof(param));
	CU_ASSERT_EQUAL(ofx_lmr_query(lmr_h, DAT_LMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(param.ia_handle, &ia);
	CU_ASSERT_EQUAL(param.mem_type, DAT_MEM_TYPE_VIRTUAL);
	CU_ASSERT_PTR_EQUAL(param.region_desc.for_va, buf);
	CU_ASSERT_EQUAL(param.length, sizeof(buf));
	CU_ASSERT_PTR_EQUAL(param.pz_handle, pz_h);
	CU_ASSERT_EQUAL(param.mem_priv, DAT_MEM_PRIV_ALL_FLAG);
	CU_ASSERT_EQUAL(param.va_type, DAT_VA_TYPE_VA);
	CU_ASSERT_EQUAL(param.lmr_context, 0x1000);
	CU_ASSERT_EQUAL(param.rmr_context, 0x2000);
	CU_ASSERT_EQUAL(param.registered_size, sizeof(buf));
	CU_ASSERT_EQUAL(param.registered_address, (DAT_VADDR)(uintptr_t)buf);

	/* The PZ is in use until the LMR is gone. */
	CU_ASSERT_EQUAL(ofx_pz_free(pz_h), OFX_DAT_ERR(DAT_INVALID_STATE,
						       DAT_INVALID_STATE_PZ_IN_USE));
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr_h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.mrs, 0);
	CU_ASSERT_EQUAL(atomic_load(&((struct ofx_pz *)pz_h)->refs), 0);
	CU_ASSERT_EQUAL(ofx_pz_free(pz_h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.pds, 0);
	teardown();
}

static void test_lmr_tolerates_null_outputs_and_reregisters_an_lmr(void)
{
	static char buf[256];
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_LMR_HANDLE lmr_h, lmr2_h;
	DAT_LMR_PARAM param;
	DAT_PZ_HANDLE pz_h;

	setup();
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz_h) == DAT_SUCCESS);
	/* dapltest passes NULL for every optional output. */
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz_h,
				       DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &lmr_h,
				       NULL, NULL, NULL, NULL) == DAT_SUCCESS);

	region.for_lmr_handle = lmr_h;
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_LMR, region, 0, pz_h,
				       DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, &lmr2_h,
				       NULL, NULL, NULL, NULL) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_query(lmr2_h, DAT_LMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.mem_type, DAT_MEM_TYPE_LMR);
	CU_ASSERT_PTR_EQUAL(param.region_desc.for_lmr_handle, lmr_h);
	CU_ASSERT_EQUAL(param.registered_address, (DAT_VADDR)(uintptr_t)buf);
	CU_ASSERT_EQUAL(param.registered_size, sizeof(buf));
	CU_ASSERT_EQUAL(fake_verbs.last_access, IBV_ACCESS_REMOTE_READ);
	CU_ASSERT_EQUAL(atomic_load(&((struct ofx_pz *)pz_h)->refs), 2);

	CU_ASSERT_EQUAL(ofx_lmr_free(lmr2_h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr_h), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(pz_h), DAT_SUCCESS);
	teardown();
}

static void test_lmr_create_rejects_what_it_cannot_register(void)
{
	static char buf[64];
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_LMR_HANDLE lmr_h = NULL;
	struct ofx_obj not_a_pz = { .type = OFX_OBJ_EVD };
	DAT_PZ_HANDLE pz_h;
	unsigned int saved = ofx_log_subsys_mask;

	setup();
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_MEM);
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz_h) == DAT_SUCCESS);

	CU_ASSERT_EQUAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, 0, pz_h,
				       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_h, NULL, NULL,
				       NULL, NULL), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf),
				       &not_a_pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_h,
				       NULL, NULL, NULL, NULL),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_lmr_create(&ia, DAT_MEM_TYPE_SHARED_VIRTUAL, region,
						    sizeof(buf), pz_h, DAT_MEM_PRIV_ALL_FLAG,
						    DAT_VA_TYPE_VA, &lmr_h, NULL, NULL, NULL,
						    NULL)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region,
						    sizeof(buf), pz_h, DAT_MEM_PRIV_ALL_FLAG,
						    DAT_VA_TYPE_ZB, &lmr_h, NULL, NULL, NULL,
						    NULL)), DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz_h,
				       (DAT_MEM_PRIV_FLAGS)0x1000, DAT_VA_TYPE_VA, &lmr_h, NULL,
				       NULL, NULL, NULL), OFX_INVALID_ARG(6));
	CU_ASSERT_EQUAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz_h,
				       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, NULL, NULL, NULL,
				       NULL, NULL), OFX_INVALID_ARG(8));
	/* A verbs failure maps through errno: a bad buffer is a protection violation. */
	fake_verbs.reg_errno = EFAULT;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region,
						    sizeof(buf), pz_h, DAT_MEM_PRIV_ALL_FLAG,
						    DAT_VA_TYPE_VA, &lmr_h, NULL, NULL, NULL,
						    NULL)), DAT_PROTECTION_VIOLATION);
	CU_ASSERT_PTR_NULL(lmr_h);
	CU_ASSERT_EQUAL(fake_verbs.mrs, 0);
	CU_ASSERT_EQUAL(atomic_load(&((struct ofx_pz *)pz_h)->refs), 0);

	/* The sync calls are no-ops that still check the IA. */
	CU_ASSERT_EQUAL(ofx_lmr_sync_rdma_read(&ia, NULL, 0), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_sync_rdma_write(&ia, NULL, 0), DAT_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_lmr_sync_rdma_read(&not_a_pz, NULL, 0)),
			DAT_INVALID_HANDLE);

	CU_ASSERT_EQUAL(ofx_pz_free(pz_h), DAT_SUCCESS);
	ofx_log_subsys_mask = saved;
	teardown();
}

CU_TestInfo ofx_test_lmr[] = {
	{ "privileges map to verbs access", test_privileges_map_to_verbs_access },
	{ "remote write and atomic imply local write",
	  test_remote_write_and_atomic_imply_local_write },
	{ "lmr registers and reports its region", test_lmr_registers_and_reports_its_region },
	{ "lmr tolerates null outputs and re-registers an lmr",
	  test_lmr_tolerates_null_outputs_and_reregisters_an_lmr },
	{ "lmr create rejects what it cannot register",
	  test_lmr_create_rejects_what_it_cannot_register },
	CU_TEST_INFO_NULL,
};
