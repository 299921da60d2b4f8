/* SPDX-License-Identifier: BSD-2-Clause */
#include "status.h"

#include "obj.h"

#include <errno.h>

/* The INSUFFICIENT_RESOURCES subtype naming what ran out for an object of `type`. */
static DAT_RETURN_SUBTYPE resource_subtype(enum ofx_obj_type type)
{
	switch (type) {
	case OFX_OBJ_IA:
		return DAT_RESOURCE_DEVICE;
	case OFX_OBJ_EP:
		return DAT_RESOURCE_TEP;
	case OFX_OBJ_EVD:
		return DAT_RESOURCE_TEVD;
	case OFX_OBJ_PZ:
		return DAT_RESOURCE_PROTECTION_DOMAIN;
	case OFX_OBJ_LMR:
	case OFX_OBJ_RMR:
		return DAT_RESOURCE_MEMORY_REGION;
	case OFX_OBJ_SRQ:
		return DAT_RESOURCE_SRQ;
	default:
		return DAT_RESOURCE_MEMORY;
	}
}

/* The INVALID_STATE subtype for "cannot do that, the object is still in use". */
static DAT_RETURN_SUBTYPE in_use_subtype(enum ofx_obj_type type)
{
	switch (type) {
	case OFX_OBJ_IA:
		return DAT_INVALID_STATE_IA_IN_USE;
	case OFX_OBJ_PZ:
		return DAT_INVALID_STATE_PZ_IN_USE;
	case OFX_OBJ_LMR:
		return DAT_INVALID_STATE_LMR_IN_USE;
	case OFX_OBJ_EVD:
		return DAT_INVALID_STATE_EVD_IN_USE;
	case OFX_OBJ_CNO:
		return DAT_INVALID_STATE_CNO_IN_USE;
	case OFX_OBJ_SRQ:
		return DAT_INVALID_STATE_SRQ_IN_USE;
	case OFX_OBJ_EP:
		/* DAT has no EP_IN_USE: the EP is busy with a connection step. */
		return DAT_INVALID_STATE_EP_NOTREADY;
	default:
		return DAT_NO_SUBTYPE;
	}
}

/*
 * A non-negative `ret` is success: some internal calls return a count.  Every
 * error carries the error class bit, also for TIMEOUT_EXPIRED and
 * MODEL_NOT_SUPPORTED where stock returns bare codes; consumers compare
 * those through DAT_GET_TYPE (contract 3.7).  Entry points that must return
 * a bare code (the DTO EVD "queue empty") do so themselves.
 */
DAT_RETURN ofx_dat_status(int ret, enum ofx_obj_type type)
{
	if (ret >= 0)
		return DAT_SUCCESS;

	switch (-ret) {
	case ENOMEM:
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	case ENOSPC:
	case EAGAIN:
	case ENOBUFS:
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, resource_subtype(type));
	case EINVAL:
		return OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_NO_SUBTYPE);
	case EBADF:
		return ofx_invalid_handle(type);
	case EBUSY:
		return OFX_DAT_ERR(DAT_INVALID_STATE, in_use_subtype(type));
	case ENOTCONN:
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	case EADDRINUSE:
		return OFX_DAT_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE);
	case EADDRNOTAVAIL:
	case ENODEV:
		return OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_NO_SUBTYPE);
	case ENETUNREACH:
	case EHOSTUNREACH:
		return OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
	case ETIMEDOUT:
		return OFX_DAT_ERR(DAT_TIMEOUT_EXPIRED, DAT_NO_SUBTYPE);
	case EOPNOTSUPP:
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	case ENOSYS:
		return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
	case EACCES:
	case EPERM:
		return OFX_DAT_ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE);
	case EFAULT:
		return OFX_DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_NO_SUBTYPE);
	case EMSGSIZE:
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);
	case EINTR:
		return OFX_DAT_ERR(DAT_INTERRUPTED_CALL, DAT_NO_SUBTYPE);
	default:
		return OFX_DAT_ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE);
	}
}

DAT_RETURN ofx_invalid_handle(enum ofx_obj_type type)
{
	return OFX_DAT_ERR(DAT_INVALID_HANDLE, ofx_obj_invalid_subtype(type));
}

/* Contract 3.2; anything not listed there is a transport error. */
DAT_DTO_COMPLETION_STATUS ofx_dto_status(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return DAT_DTO_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return DAT_DTO_ERR_LOCAL_LENGTH;
	case IBV_WC_LOC_QP_OP_ERR:
		return DAT_DTO_ERR_LOCAL_EP;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
		return DAT_DTO_ERR_LOCAL_PROTECTION;
	case IBV_WC_WR_FLUSH_ERR:
		return DAT_DTO_ERR_FLUSHED;
	case IBV_WC_MW_BIND_ERR:
		return DAT_RMR_OPERATION_FAILED;
	case IBV_WC_BAD_RESP_ERR:
		return DAT_DTO_ERR_BAD_RESPONSE;
	case IBV_WC_REM_ACCESS_ERR:
		return DAT_DTO_ERR_REMOTE_ACCESS;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
	case IBV_WC_REM_ABORT_ERR:
		return DAT_DTO_ERR_REMOTE_RESPONDER;
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return DAT_DTO_ERR_RECEIVER_NOT_READY;
	default:
		return DAT_DTO_ERR_TRANSPORT;
	}
}
