/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "status.h"

#include <errno.h>
#include <stdio.h>

#define ERR(type, sub) (DAT_CLASS_ERROR | (type) | (sub))

struct errno_case {
	int ret;
	enum ofx_obj_type type;
	DAT_RETURN expect;
};

static void check_cases(const struct errno_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		DAT_RETURN got = ofx_dat_status(c[i].ret, c[i].type);

		if (got != c[i].expect)
			fprintf(stderr, "\nerrno %d type %s: got 0x%08x, expected 0x%08x\n",
				-c[i].ret, ofx_obj_type_str(c[i].type), got, c[i].expect);
		CU_ASSERT_EQUAL(got, c[i].expect);
	}
}

static void test_success_and_counts_map_to_success(void)
{
	CU_ASSERT_EQUAL(ofx_dat_status(0, OFX_OBJ_EP), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_dat_status(5, OFX_OBJ_EVD), DAT_SUCCESS);
}

static void test_errno_maps_to_dat_type_and_subtype(void)
{
	static const struct errno_case cases[] = {
		{ -ENOMEM, OFX_OBJ_EP, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY) },
		{ -ENOMEM, OFX_OBJ_EVD, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY) },
		{ -EINVAL, OFX_OBJ_EP, ERR(DAT_INVALID_PARAMETER, DAT_NO_SUBTYPE) },
		{ -ENOTCONN, OFX_OBJ_EP,
		  ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED) },
		{ -EADDRINUSE, OFX_OBJ_PSP, ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE) },
		{ -EADDRNOTAVAIL, OFX_OBJ_IA, ERR(DAT_INVALID_ADDRESS, DAT_NO_SUBTYPE) },
		{ -ENODEV, OFX_OBJ_IA, ERR(DAT_INVALID_ADDRESS, DAT_NO_SUBTYPE) },
		{ -ENETUNREACH, OFX_OBJ_EP,
		  ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE) },
		{ -EHOSTUNREACH, OFX_OBJ_EP,
		  ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE) },
		{ -ETIMEDOUT, OFX_OBJ_EVD, ERR(DAT_TIMEOUT_EXPIRED, DAT_NO_SUBTYPE) },
		{ -EOPNOTSUPP, OFX_OBJ_EP, ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE) },
		{ -ENOSYS, OFX_OBJ_RMR, ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE) },
		{ -EACCES, OFX_OBJ_LMR, ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE) },
		{ -EPERM, OFX_OBJ_LMR, ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE) },
		{ -EFAULT, OFX_OBJ_LMR, ERR(DAT_PROTECTION_VIOLATION, DAT_NO_SUBTYPE) },
		{ -EMSGSIZE, OFX_OBJ_EP, ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE) },
		{ -EINTR, OFX_OBJ_EVD, ERR(DAT_INTERRUPTED_CALL, DAT_NO_SUBTYPE) },
		{ -EIO, OFX_OBJ_EP, ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE) },
		{ -EPROTO, OFX_OBJ_CR, ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE) },
		{ -12345, OFX_OBJ_EP, ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE) },
	};

	check_cases(cases, OFX_ARRAY_SIZE(cases));
}

static void test_exhaustion_names_the_resource_of_the_object(void)
{
	static const struct errno_case cases[] = {
		{ -ENOSPC, OFX_OBJ_EP, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP) },
		{ -EAGAIN, OFX_OBJ_EP, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP) },
		{ -ENOBUFS, OFX_OBJ_EP, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP) },
		{ -ENOSPC, OFX_OBJ_EVD, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD) },
		{ -ENOSPC, OFX_OBJ_PZ,
		  ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN) },
		{ -EAGAIN, OFX_OBJ_LMR,
		  ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION) },
		{ -ENOBUFS, OFX_OBJ_RMR,
		  ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION) },
		{ -ENOSPC, OFX_OBJ_SRQ, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ) },
		{ -ENOSPC, OFX_OBJ_IA, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE) },
		{ -ENOSPC, OFX_OBJ_PSP, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY) },
		{ -ENOSPC, OFX_OBJ_CNO, ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY) },
	};

	check_cases(cases, OFX_ARRAY_SIZE(cases));
}

static void test_busy_names_the_in_use_state_of_the_object(void)
{
	static const struct errno_case cases[] = {
		{ -EBUSY, OFX_OBJ_IA, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE) },
		{ -EBUSY, OFX_OBJ_PZ, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE) },
		{ -EBUSY, OFX_OBJ_LMR, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE) },
		{ -EBUSY, OFX_OBJ_EVD, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE) },
		{ -EBUSY, OFX_OBJ_CNO, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE) },
		{ -EBUSY, OFX_OBJ_SRQ, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE) },
		{ -EBUSY, OFX_OBJ_EP, ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY) },
		{ -EBUSY, OFX_OBJ_PSP, ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE) },
	};

	check_cases(cases, OFX_ARRAY_SIZE(cases));
}

static void test_bad_handle_names_the_handle_type(void)
{
	static const struct errno_case cases[] = {
		{ -EBADF, OFX_OBJ_IA, ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA) },
		{ -EBADF, OFX_OBJ_EP, ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP) },
		{ -EBADF, OFX_OBJ_PZ, ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ) },
		{ -EBADF, OFX_OBJ_CR, ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR) },
		{ -EBADF, OFX_OBJ_SRQ, ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ) },
	};

	check_cases(cases, OFX_ARRAY_SIZE(cases));
	CU_ASSERT_EQUAL(ofx_invalid_handle(OFX_OBJ_LMR),
			ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR));
	CU_ASSERT_EQUAL(ofx_invalid_handle(OFX_OBJ_EVD),
			ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST));
	CU_ASSERT_EQUAL(ofx_invalid_handle(OFX_OBJ_PSP),
			ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP));
	CU_ASSERT_EQUAL(OFX_INVALID_ARG(3), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
}

static void test_every_error_has_the_error_class_bit(void)
{
	static const enum ofx_obj_type types[] = { OFX_OBJ_IA, OFX_OBJ_EP, OFX_OBJ_EVD };
	int e;
	size_t t;

	for (e = 1; e < 140; e++) {
		for (t = 0; t < OFX_ARRAY_SIZE(types); t++) {
			DAT_RETURN s = ofx_dat_status(-e, types[t]);

			CU_ASSERT_EQUAL(s & DAT_CLASS_ERROR, DAT_CLASS_ERROR);
			CU_ASSERT_NOT_EQUAL(DAT_GET_TYPE(s), DAT_SUCCESS);
		}
	}
}

/* Contract 3.2, written out once per verbs status. */
static const DAT_DTO_COMPLETION_STATUS wc_expect[] = {
	[IBV_WC_SUCCESS] = DAT_DTO_SUCCESS,
	[IBV_WC_LOC_LEN_ERR] = DAT_DTO_ERR_LOCAL_LENGTH,
	[IBV_WC_LOC_QP_OP_ERR] = DAT_DTO_ERR_LOCAL_EP,
	[IBV_WC_LOC_EEC_OP_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_LOC_PROT_ERR] = DAT_DTO_ERR_LOCAL_PROTECTION,
	[IBV_WC_WR_FLUSH_ERR] = DAT_DTO_ERR_FLUSHED,
	[IBV_WC_MW_BIND_ERR] = DAT_RMR_OPERATION_FAILED,
	[IBV_WC_BAD_RESP_ERR] = DAT_DTO_ERR_BAD_RESPONSE,
	[IBV_WC_LOC_ACCESS_ERR] = DAT_DTO_ERR_LOCAL_PROTECTION,
	[IBV_WC_REM_INV_REQ_ERR] = DAT_DTO_ERR_REMOTE_RESPONDER,
	[IBV_WC_REM_ACCESS_ERR] = DAT_DTO_ERR_REMOTE_ACCESS,
	[IBV_WC_REM_OP_ERR] = DAT_DTO_ERR_REMOTE_RESPONDER,
	[IBV_WC_RETRY_EXC_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_RNR_RETRY_EXC_ERR] = DAT_DTO_ERR_RECEIVER_NOT_READY,
	[IBV_WC_LOC_RDD_VIOL_ERR] = DAT_DTO_ERR_LOCAL_PROTECTION,
	[IBV_WC_REM_INV_RD_REQ_ERR] = DAT_DTO_ERR_REMOTE_RESPONDER,
	[IBV_WC_REM_ABORT_ERR] = DAT_DTO_ERR_REMOTE_RESPONDER,
	[IBV_WC_INV_EECN_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_INV_EEC_STATE_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_FATAL_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_RESP_TIMEOUT_ERR] = DAT_DTO_ERR_RECEIVER_NOT_READY,
	[IBV_WC_GENERAL_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_TM_ERR] = DAT_DTO_ERR_TRANSPORT,
	[IBV_WC_TM_RNDV_INCOMPLETE] = DAT_DTO_ERR_TRANSPORT,
};

static void test_every_wc_status_maps_per_contract(void)
{
	size_t s;

	for (s = 0; s < OFX_ARRAY_SIZE(wc_expect); s++) {
		DAT_DTO_COMPLETION_STATUS got = ofx_dto_status((enum ibv_wc_status)s);

		if (got != wc_expect[s])
			fprintf(stderr, "\n%s: got %d, expected %d\n",
				ibv_wc_status_str((enum ibv_wc_status)s), got, wc_expect[s]);
		CU_ASSERT_EQUAL(got, wc_expect[s]);
	}
	/* a status newer than this table is a transport error */
	CU_ASSERT_EQUAL(ofx_dto_status((enum ibv_wc_status)(IBV_WC_TM_RNDV_INCOMPLETE + 1)),
			DAT_DTO_ERR_TRANSPORT);
	CU_ASSERT_EQUAL(ofx_dto_status((enum ibv_wc_status)1000), DAT_DTO_ERR_TRANSPORT);
}

CU_TestInfo ofx_test_status[] = {
	{ "success and counts map to DAT_SUCCESS", test_success_and_counts_map_to_success },
	{ "errno maps to DAT type and subtype", test_errno_maps_to_dat_type_and_subtype },
	{ "exhaustion names the resource of the object",
	  test_exhaustion_names_the_resource_of_the_object },
	{ "busy names the in-use state of the object",
	  test_busy_names_the_in_use_state_of_the_object },
	{ "bad handle names the handle type", test_bad_handle_names_the_handle_type },
	{ "every error has the error class bit", test_every_error_has_the_error_class_bit },
	{ "every wc status maps per contract 3.2", test_every_wc_status_maps_per_contract },
	CU_TEST_INFO_NULL,
};
