/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_STATUS_H
#define OFX_STATUS_H

#include <dat2/udat.h>
#include "obj.h"

/*
 * The one place where internal results (0 or a negative errno) become
 * DAT_RETURN codes.  `type` names the object the call was about, so that
 * handle and state errors get the right subtype.
 *
 *   0            -> DAT_SUCCESS
 *   -ENOMEM      -> DAT_INSUFFICIENT_RESOURCES / DAT_RESOURCE_MEMORY
 *   -ENOSPC, -EAGAIN, -ENOBUFS -> DAT_INSUFFICIENT_RESOURCES / resource of `type`
 *   -EINVAL      -> DAT_INVALID_PARAMETER
 *   -EBADF       -> DAT_INVALID_HANDLE / subtype of `type`
 *   -EBUSY       -> DAT_INVALID_STATE / "in use" subtype of `type`
 *   -ENOTCONN    -> DAT_INVALID_STATE / DAT_INVALID_STATE_EP_UNCONNECTED
 *   -EADDRINUSE  -> DAT_CONN_QUAL_IN_USE
 *   -EADDRNOTAVAIL, -ENODEV, -ENETUNREACH, -EHOSTUNREACH -> DAT_INVALID_ADDRESS
 *   -ETIMEDOUT   -> DAT_TIMEOUT_EXPIRED
 *   -EOPNOTSUPP, -ENOSYS -> DAT_NOT_IMPLEMENTED / DAT_MODEL_NOT_SUPPORTED (see .c)
 *   -EACCES, -EPERM -> DAT_PRIVILEGES_VIOLATION
 *   -EFAULT      -> DAT_PROTECTION_VIOLATION
 *   -EMSGSIZE    -> DAT_LENGTH_ERROR
 *   -EINTR       -> DAT_INTERRUPTED_CALL
 *   anything else -> DAT_INTERNAL_ERROR
 */
DAT_RETURN ofx_dat_status(int ret, enum ofx_obj_type type);

/* Shorthands for entry-point argument checks. */
#define OFX_INVALID_ARG(n) OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG##n)
DAT_RETURN ofx_invalid_handle(enum ofx_obj_type type);

/* Translates a verbs work completion status into the DAT DTO status. */
#include <infiniband/verbs.h>
DAT_DTO_COMPLETION_STATUS ofx_dto_status(enum ibv_wc_status status);

#endif
