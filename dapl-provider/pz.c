/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_MEM
#include "pz.h"

#include "ia_core.h"
#include "log.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>

DAT_RETURN ofx_pz_create(DAT_IA_HANDLE ia_h, DAT_PZ_HANDLE *pz_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_pz *pz;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!pz_p)
		return OFX_INVALID_ARG(2);

	pz = calloc(1, sizeof(*pz));
	if (!pz) {
		ret = -ENOMEM;
		ofx_err("ia %p: pz: out of memory", (void *)ia);
		goto err;
	}
	pz->pd = ofx_verbs->alloc_pd(ia->verbs);
	if (!pz->pd) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("device %s: ibv_alloc_pd: %m", ofx_verbs_dev_name(ia->verbs));
		goto err_free;
	}
	atomic_init(&pz->refs, 0);
	ofx_obj_init(&pz->obj, OFX_OBJ_PZ, ia);

	ofx_dbg("pz %p: pd handle %u", (void *)pz, pz->pd->handle);
	*pz_p = (DAT_PZ_HANDLE)pz;
	return DAT_SUCCESS;

err_free:
	free(pz);
err:
	return ofx_dat_status(ret, OFX_OBJ_PZ);
}

DAT_RETURN ofx_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param)
{
	struct ofx_pz *pz = ofx_pz_from_handle(h);

	if (!pz)
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (mask & ~DAT_PZ_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	if (mask & DAT_PZ_FIELD_IA_HANDLE)
		param->ia_handle = ofx_ia_dat_handle(pz->obj.ia);
	return DAT_SUCCESS;
}

/* ibv_dealloc_pd returns an errno value (not -1), like every verbs destroy call. */
static int ofx_pz_dealloc(struct ofx_pz *pz)
{
	int ret = ofx_verbs->dealloc_pd(pz->pd);

	if (!ret)
		return 0;
	errno = ret > 0 ? ret : errno;
	ofx_warn("pz %p: ibv_dealloc_pd: %m", (void *)pz);
	return -errno;
}

DAT_RETURN ofx_pz_free(DAT_PZ_HANDLE h)
{
	struct ofx_pz *pz = ofx_pz_from_handle(h);
	int ret;

	if (!pz)
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (atomic_load(&pz->refs) > 0)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);

	/* The PD goes first: if verbs still sees users, the PZ stays valid. */
	ret = ofx_pz_dealloc(pz);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_PZ);
	ofx_obj_fini(&pz->obj);
	free(pz);
	return DAT_SUCCESS;
}

void ofx_pz_destroy(struct ofx_pz *pz)
{
	if (!pz)
		return;
	if (atomic_load(&pz->refs) > 0)
		ofx_warn("pz %p: destroyed with %d references", (void *)pz,
			 atomic_load(&pz->refs));
	ofx_pz_dealloc(pz);
	ofx_obj_fini(&pz->obj);
	free(pz);
}
