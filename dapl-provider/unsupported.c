/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "unsupported.h"

#include "log.h"
#include "obj.h"

/*
 * Logs the first call of a stub (per process, i.e. per load of the library)
 * and returns the code stock uses for calls it lacks.  Consumers such as
 * dapltest -T L treat DAT_NOT_IMPLEMENTED as "feature absent", not as failure.
 */
DAT_RETURN ofx_unsupported(atomic_flag *logged, const char *call)
{
	if (!atomic_flag_test_and_set(logged))
		ofx_info("dat_%s is not implemented by this provider", call);
	return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}
