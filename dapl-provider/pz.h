/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_PZ_H
#define OFX_PZ_H

#include <stdatomic.h>
#include <infiniband/verbs.h>
#include "obj.h"

struct ofx_pz {
	struct ofx_obj obj;
	struct ibv_pd *pd;
	atomic_int refs;	/* LMRs, RMRs, EPs and SRQs using this PZ */
};
OFX_DEFINE_FROM_HANDLE(pz, PZ)

DAT_RETURN ofx_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz_p);
DAT_RETURN ofx_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param);
DAT_RETURN ofx_pz_free(DAT_PZ_HANDLE pz);
/* ia_close cleanup: frees regardless of references (they are gone by then). */
void ofx_pz_destroy(struct ofx_pz *pz);

#endif
