/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_LMR_H
#define OFX_LMR_H

#include <infiniband/verbs.h>
#include "obj.h"

struct ofx_ia;
struct ofx_pz;

struct ofx_lmr {
	struct ofx_obj obj;
	struct ofx_pz *pz;
	struct ibv_mr *mr;
	DAT_MEM_TYPE mem_type;
	DAT_REGION_DESCRIPTION region;	/* as the consumer passed it, for lmr_query */
	DAT_VLEN length;		/* requested length (mr->length is registered) */
	DAT_MEM_PRIV_FLAGS privileges;
	DAT_VA_TYPE va_type;
};
OFX_DEFINE_FROM_HANDLE(lmr, LMR)

/* Translates DAT memory privileges to ibv access flags (local read implied). */
int ofx_lmr_access_flags(DAT_MEM_PRIV_FLAGS priv);
/*
 * Extra ibv_reg_mr access an LMR needs to take windows: IBV_ACCESS_MW_BIND
 * when the device has memory windows of a type rmr.c makes (ofx_rmr_type
 * builds on this), else 0.
 */
int ofx_lmr_mw_access(const struct ofx_ia *ia);

DAT_RETURN ofx_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
			  DAT_VLEN len, DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
			  DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_p, DAT_LMR_CONTEXT *lctx_p,
			  DAT_RMR_CONTEXT *rctx_p, DAT_VLEN *reg_len_p, DAT_VADDR *reg_addr_p);
DAT_RETURN ofx_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param);
DAT_RETURN ofx_lmr_free(DAT_LMR_HANDLE lmr);
DAT_RETURN ofx_lmr_sync_rdma_read(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *iov, DAT_VLEN n);
DAT_RETURN ofx_lmr_sync_rdma_write(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *iov, DAT_VLEN n);
void ofx_lmr_destroy(struct ofx_lmr *lmr);

#endif
