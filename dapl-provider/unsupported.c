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

DAT_RETURN ofx_unsupported_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
				      DAT_CNO_HANDLE *cno_p)
{
	OFX_UNSUPPORTED(cno_create);
}

DAT_RETURN ofx_unsupported_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent)
{
	OFX_UNSUPPORTED(cno_modify_agent);
}

DAT_RETURN ofx_unsupported_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
				     DAT_CNO_PARAM *param)
{
	OFX_UNSUPPORTED(cno_query);
}

DAT_RETURN ofx_unsupported_cno_free(DAT_CNO_HANDLE cno)
{
	OFX_UNSUPPORTED(cno_free);
}

DAT_RETURN ofx_unsupported_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout,
				    DAT_EVD_HANDLE *evd_p)
{
	OFX_UNSUPPORTED(cno_wait);
}

DAT_RETURN ofx_unsupported_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd_p, DAT_CNO_HANDLE *cno_p)
{
	OFX_UNSUPPORTED(cno_fd_create);
}

DAT_RETURN ofx_unsupported_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd_p)
{
	OFX_UNSUPPORTED(cno_trigger);
}

DAT_RETURN ofx_unsupported_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p)
{
	OFX_UNSUPPORTED(rmr_create);
}

DAT_RETURN ofx_unsupported_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p)
{
	OFX_UNSUPPORTED(rmr_create_for_ep);
}

DAT_RETURN ofx_unsupported_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
				     DAT_RMR_PARAM *param)
{
	OFX_UNSUPPORTED(rmr_query);
}

DAT_RETURN ofx_unsupported_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr,
				    const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS priv,
				    DAT_VA_TYPE va_type, DAT_EP_HANDLE ep, DAT_RMR_COOKIE cookie,
				    DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rctx_p)
{
	OFX_UNSUPPORTED(rmr_bind);
}

DAT_RETURN ofx_unsupported_rmr_free(DAT_RMR_HANDLE rmr)
{
	OFX_UNSUPPORTED(rmr_free);
}

DAT_RETURN ofx_unsupported_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual)
{
	OFX_UNSUPPORTED_ON(cr, OFX_OBJ_CR, cr_handoff);
}

DAT_RETURN ofx_unsupported_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
				      DAT_SRQ_HANDLE *srq_p)
{
	OFX_UNSUPPORTED(srq_create);
}

DAT_RETURN ofx_unsupported_srq_free(DAT_SRQ_HANDLE srq)
{
	OFX_UNSUPPORTED(srq_free);
}

DAT_RETURN ofx_unsupported_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE cookie)
{
	OFX_UNSUPPORTED(srq_post_recv);
}

DAT_RETURN ofx_unsupported_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
				     DAT_SRQ_PARAM *param)
{
	OFX_UNSUPPORTED(srq_query);
}

DAT_RETURN ofx_unsupported_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT qlen)
{
	OFX_UNSUPPORTED(srq_resize);
}

DAT_RETURN ofx_unsupported_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT low_watermark)
{
	OFX_UNSUPPORTED(srq_set_lw);
}

DAT_RETURN ofx_unsupported_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
					      DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE req_evd,
					      DAT_EVD_HANDLE conn_evd, DAT_SRQ_HANDLE srq,
					      const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p)
{
	OFX_UNSUPPORTED(ep_create_with_srq);
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

DAT_RETURN ofx_unsupported_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
				      DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp_p)
{
	OFX_UNSUPPORTED(csp_create);
}

DAT_RETURN ofx_unsupported_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask,
				     DAT_CSP_PARAM *param)
{
	OFX_UNSUPPORTED(csp_query);
}

DAT_RETURN ofx_unsupported_csp_free(DAT_CSP_HANDLE csp)
{
	OFX_UNSUPPORTED(csp_free);
}

DAT_RETURN ofx_unsupported_ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
					     DAT_TIMEOUT timeout, DAT_COUNT pdata_len,
					     const DAT_PVOID pdata)
{
	OFX_UNSUPPORTED(ep_common_connect);
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
DAT_RETURN ofx_unsupported_handle_extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args)
{
	OFX_UNSUPPORTED(extension_op);
}
