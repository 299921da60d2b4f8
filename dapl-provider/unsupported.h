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

/* CR */
DAT_RETURN ofx_unsupported_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual);

/* SRQ watermarks per EP */
DAT_RETURN ofx_unsupported_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs_p,
					 DAT_COUNT *span_p);
DAT_RETURN ofx_unsupported_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_hw,
					    DAT_COUNT hard_hw);

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


#endif
