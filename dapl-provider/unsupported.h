/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_UNSUPPORTED_H
#define OFX_UNSUPPORTED_H

#include <stdarg.h>
#include <dat2/udat.h>

/*
 * Typed stubs for the DAT_PROVIDER slots that are not implemented yet.  Each
 * returns DAT_NOT_IMPLEMENTED and logs once per process, at info level, which
 * call was made.  A stub is named ofx_unsupported_<slot> after the slot
 * <slot>_func; the README's list of remaining work is generated from the
 * names in this file (grep -o 'ofx_unsupported_[a-z_]*'), so a slot leaves
 * the list when its stub is deleted.
 */

/* CNO */
DAT_RETURN ofx_unsupported_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
				      DAT_CNO_HANDLE *cno_p);
DAT_RETURN ofx_unsupported_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent);
DAT_RETURN ofx_unsupported_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
				     DAT_CNO_PARAM *param);
DAT_RETURN ofx_unsupported_cno_free(DAT_CNO_HANDLE cno);
DAT_RETURN ofx_unsupported_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout,
				    DAT_EVD_HANDLE *evd_p);
DAT_RETURN ofx_unsupported_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd_p, DAT_CNO_HANDLE *cno_p);
DAT_RETURN ofx_unsupported_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd_p);

/* RMR (memory windows) */
DAT_RETURN ofx_unsupported_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p);
DAT_RETURN ofx_unsupported_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr_p);
DAT_RETURN ofx_unsupported_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
				     DAT_RMR_PARAM *param);
DAT_RETURN ofx_unsupported_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr,
				    const DAT_LMR_TRIPLET *iov, DAT_MEM_PRIV_FLAGS priv,
				    DAT_VA_TYPE va_type, DAT_EP_HANDLE ep, DAT_RMR_COOKIE cookie,
				    DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rctx_p);
DAT_RETURN ofx_unsupported_rmr_free(DAT_RMR_HANDLE rmr);

/* CR */
DAT_RETURN ofx_unsupported_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual);

/* SRQ and the EP calls that depend on it */
DAT_RETURN ofx_unsupported_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
				      DAT_SRQ_HANDLE *srq_p);
DAT_RETURN ofx_unsupported_srq_free(DAT_SRQ_HANDLE srq);
DAT_RETURN ofx_unsupported_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE cookie);
DAT_RETURN ofx_unsupported_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
				     DAT_SRQ_PARAM *param);
DAT_RETURN ofx_unsupported_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT qlen);
DAT_RETURN ofx_unsupported_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT low_watermark);
DAT_RETURN ofx_unsupported_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
					      DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE req_evd,
					      DAT_EVD_HANDLE conn_evd, DAT_SRQ_HANDLE srq,
					      const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p);
DAT_RETURN ofx_unsupported_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs_p,
					 DAT_COUNT *span_p);
DAT_RETURN ofx_unsupported_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_hw,
					    DAT_COUNT hard_hw);

/* DAT 2.0 common service points and peer connections */
DAT_RETURN ofx_unsupported_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
				      DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp_p);
DAT_RETURN ofx_unsupported_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask,
				     DAT_CSP_PARAM *param);
DAT_RETURN ofx_unsupported_csp_free(DAT_CSP_HANDLE csp);
DAT_RETURN ofx_unsupported_ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr,
					     DAT_TIMEOUT timeout, DAT_COUNT pdata_len,
					     const DAT_PVOID pdata);

/* DAT 2.0 remote invalidation */
DAT_RETURN ofx_unsupported_ep_post_send_with_invalidate(DAT_EP_HANDLE ep, DAT_COUNT n,
							DAT_LMR_TRIPLET *iov,
							DAT_DTO_COOKIE cookie,
							DAT_COMPLETION_FLAGS flags,
							DAT_BOOLEAN invalidate,
							DAT_RMR_CONTEXT rctx);
DAT_RETURN ofx_unsupported_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local,
						    DAT_DTO_COOKIE cookie,
						    const DAT_RMR_TRIPLET *remote,
						    DAT_COMPLETION_FLAGS flags);

/* High availability */
DAT_RETURN ofx_unsupported_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR name,
					 DAT_BOOLEAN *answer_p);

/* IB extensions (dat_extension_op) */
DAT_RETURN ofx_unsupported_handle_extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args);

#endif
