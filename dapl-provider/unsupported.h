/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_UNSUPPORTED_H
#define OFX_UNSUPPORTED_H

#include <stdatomic.h>
#include <dat2/udat.h>

/*
 * Typed stubs for the DAT_PROVIDER slots that are not implemented yet.  Each
 * returns DAT_NOT_IMPLEMENTED and logs once per process, at info level, which
 * call was made.  A stub is named ofx_unsupported_<slot> after the slot
 * <slot>_func, declared here and defined in unsupported.c with
 * OFX_UNSUPPORTED_ON(); the README's list of remaining work is generated
 * from those names (grep -o 'ofx_unsupported_[a-z_]*'), so a slot leaves the
 * list when its stub is deleted.
 *
 * No slot uses a stub at present.  Slots whose answer is a deliberate
 * DAT_MODEL_NOT_SUPPORTED (rdma_read_to_rmr, PSP_PROVIDER_FLAG) live with
 * their object and say why there.
 */

/* Logs the first call of `call` (per `logged` flag) and returns NOT_IMPLEMENTED. */
DAT_RETURN ofx_unsupported(atomic_flag *logged, const char *call);

#define OFX_UNSUPPORTED(slot)                                      \
	do {                                                       \
		static atomic_flag ofx_logged_ = ATOMIC_FLAG_INIT; \
		return ofx_unsupported(&ofx_logged_, #slot);       \
	} while (0)

/*
 * For the stubs in the template: a handle that is not a live object of the
 * slot's type is still DAT_INVALID_HANDLE (a freed or wrong object must not
 * read as "not implemented").  Needs obj.h and status.h.
 */
#define OFX_UNSUPPORTED_ON(h, type, slot)                      \
	do {                                                   \
		if (!ofx_obj_from_handle(h, type))             \
			return ofx_invalid_handle(type);       \
		OFX_UNSUPPORTED(slot);                         \
	} while (0)

#endif
