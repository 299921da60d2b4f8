/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "unsupported.h"

#include "ia.h"
#include "log.h"
#include "obj.h"
#include "status.h"

#include <stdatomic.h>

/*
 * Logs the first call of a stub (per process, i.e. per load of the library)
 * and returns the code stock uses for calls it lacks.  Consumers such as
 * dapltest -T L treat DAT_NOT_IMPLEMENTED as "feature absent", not as failure.
 */
static DAT_RETURN ofx_unsupported(atomic_flag *logged, const char *call)
{
	if (!atomic_flag_test_and_set(logged))
		ofx_info("dat_%s is not implemented by this provider", call);
	return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}

#define OFX_UNSUPPORTED(slot)                                      \
	do {                                                       \
		static atomic_flag ofx_logged_ = ATOMIC_FLAG_INIT; \
		return ofx_unsupported(&ofx_logged_, #slot);       \
	} while (0)

/*
 * For the stubs in the template: a handle that is not a live object of the
 * slot's type is still DAT_INVALID_HANDLE (a freed or wrong object must not
 * read as "not implemented").
 */
#define OFX_UNSUPPORTED_ON(h, type, slot)                      \
	do {                                                   \
		if (!ofx_obj_from_handle(h, type))             \
			return ofx_invalid_handle(type);       \
		OFX_UNSUPPORTED(slot);                         \
	} while (0)

DAT_RETURN ofx_unsupported_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual)
{
	OFX_UNSUPPORTED_ON(cr, OFX_OBJ_CR, cr_handoff);
}

DAT_RETURN ofx_unsupported_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs_p,
					 DAT_COUNT *span_p)
{
	OFX_UNSUPPORTED_ON(ep, OFX_OBJ_EP, ep_recv_query);
}

DAT_RETURN ofx_unsupported_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_hw,
					    DAT_COUNT hard_hw)
{
	OFX_UNSUPPORTED_ON(ep, OFX_OBJ_EP, ep_set_watermark);
}

DAT_RETURN ofx_unsupported_ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT n,
							DAT_LMR_TRIPLET *iov,
							DAT_DTO_COOKIE cookie,
							DAT_COMPLETION_FLAGS flags,
							DAT_BOOLEAN invalidate,
							DAT_RMR_CONTEXT rctx)
{
	OFX_UNSUPPORTED_ON(ep, OFX_OBJ_EP, ep_post_send_with_invalidate);
}

DAT_RETURN ofx_unsupported_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local,
						    DAT_DTO_COOKIE cookie,
						    const DAT_RMR_TRIPLET *remote,
						    DAT_COMPLETION_FLAGS flags)
{
	OFX_UNSUPPORTED_ON(ep, OFX_OBJ_EP, ep_post_rdma_read_to_rmr);
}

DAT_RETURN ofx_unsupported_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR name,
					 DAT_BOOLEAN *answer_p)
{
	if (!ofx_ia_lookup(ia))
		return ofx_invalid_handle(OFX_OBJ_IA);
	OFX_UNSUPPORTED(ia_ha_related);
}

/* Every op, including DAT_IB_OPEN_QUERY_OP, until the IB extensions exist. */
