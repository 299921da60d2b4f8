/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_MEM
#include "lmr.h"

#include "ia_core.h"
#include "log.h"
#include "pz.h"
#include "status.h"
#include "verbs.h"

#include <dat2/dat_ib_extensions.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define OFX_MEM_PRIV_VALID (DAT_MEM_PRIV_ALL_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC)

/*
 * Contract 4.5.  Local read is implicit in verbs.  Verbs refuses remote
 * write or remote atomic access without local write, so those imply it.
 */
int ofx_lmr_mw_access(const struct ofx_ia *ia)
{
	int types = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2A |
		    IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	return ia->dev_attr.max_mw > 0 && (ia->dev_attr.device_cap_flags & types) ?
	       IBV_ACCESS_MW_BIND : 0;
}

int ofx_lmr_access_flags(DAT_MEM_PRIV_FLAGS priv)
{
	int access = 0;

	if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
		access |= IBV_ACCESS_LOCAL_WRITE;
	if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		access |= IBV_ACCESS_REMOTE_READ;
	if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (priv & DAT_IB_MEM_PRIV_REMOTE_ATOMIC)
		access |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	return access;
}

DAT_RETURN ofx_lmr_create(DAT_IA_HANDLE ia_h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
			  DAT_VLEN len, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS priv,
			  DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_p, DAT_LMR_CONTEXT *lctx_p,
			  DAT_RMR_CONTEXT *rctx_p, DAT_VLEN *reg_len_p, DAT_VADDR *reg_addr_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_pz *pz = ofx_pz_from_handle(pz_h);
	struct ofx_lmr *src, *lmr;
	void *addr;
	size_t size;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!pz || pz->obj.ia != ia)
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (!lmr_p)
		return OFX_INVALID_ARG(8);
	if (priv & ~OFX_MEM_PRIV_VALID)
		return OFX_INVALID_ARG(6);

	switch (type) {
	case DAT_MEM_TYPE_VIRTUAL:
		if (!region.for_va)
			return OFX_INVALID_ARG(3);
		if (!len)
			return OFX_INVALID_ARG(4);
		if (len > SIZE_MAX)
			return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);
		addr = region.for_va;
		size = len;
		break;
	case DAT_MEM_TYPE_LMR:
		/* Same memory as an existing LMR, registered again (possibly in another PZ). */
		src = ofx_lmr_from_handle(region.for_lmr_handle);
		if (!src)
			return ofx_invalid_handle(OFX_OBJ_LMR);
		addr = src->mr->addr;
		size = src->mr->length;
		break;
	case DAT_MEM_TYPE_SHARED_VIRTUAL:
		ofx_info("shared virtual lmrs are not implemented");
		return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
	default:
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	}

	switch (va_type) {
	case DAT_VA_TYPE_VA:
		break;
	case DAT_VA_TYPE_ZB:
		/* ia_attr zb_supported is FALSE */
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	default:
		return OFX_INVALID_ARG(7);
	}

	lmr = calloc(1, sizeof(*lmr));
	if (!lmr) {
		ret = -ENOMEM;
		ofx_err("lmr of %zu bytes: out of memory", size);
		goto err;
	}
	/* MW_BIND where the device has windows, so that RMRs can be bound to it */
	lmr->mr = ofx_verbs->reg_mr(pz->pd, addr, size,
				    ofx_lmr_access_flags(priv) | ofx_lmr_mw_access(ia));
	if (!lmr->mr) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("ibv_reg_mr addr %p len %zu priv 0x%x pz %p: %m", addr, size,
			(unsigned int)priv, (void *)pz);
		goto err_free;
	}
	lmr->pz = pz;
	lmr->mem_type = type;
	lmr->region = region;
	lmr->length = type == DAT_MEM_TYPE_LMR ? size : len;
	lmr->privileges = priv;
	lmr->va_type = va_type;
	atomic_fetch_add(&pz->refs, 1);
	ofx_obj_init(&lmr->obj, OFX_OBJ_LMR, ia);

	ofx_dbg("lmr %p: addr %p len %zu lkey 0x%x rkey 0x%x", (void *)lmr, lmr->mr->addr,
		lmr->mr->length, lmr->mr->lkey, lmr->mr->rkey);
	*lmr_p = (DAT_LMR_HANDLE)lmr;
	if (lctx_p)
		*lctx_p = lmr->mr->lkey;
	if (rctx_p)
		*rctx_p = lmr->mr->rkey;
	if (reg_len_p)
		*reg_len_p = lmr->mr->length;
	if (reg_addr_p)
		*reg_addr_p = (DAT_VADDR)(uintptr_t)lmr->mr->addr;
	return DAT_SUCCESS;

err_free:
	free(lmr);
err:
	return ofx_dat_status(ret, OFX_OBJ_LMR);
}

DAT_RETURN ofx_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param)
{
	struct ofx_lmr *lmr = ofx_lmr_from_handle(h);

	if (!lmr)
		return ofx_invalid_handle(OFX_OBJ_LMR);
	if (mask & ~DAT_LMR_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);

	if (mask & DAT_LMR_FIELD_IA_HANDLE)
		param->ia_handle = ofx_ia_dat_handle(lmr->obj.ia);
	if (mask & DAT_LMR_FIELD_MEM_TYPE)
		param->mem_type = lmr->mem_type;
	if (mask & DAT_LMR_FIELD_REGION_DESC)
		param->region_desc = lmr->region;
	if (mask & DAT_LMR_FIELD_LENGTH)
		param->length = lmr->length;
	if (mask & DAT_LMR_FIELD_PZ_HANDLE)
		param->pz_handle = (DAT_PZ_HANDLE)lmr->pz;
	if (mask & DAT_LMR_FIELD_MEM_PRIV)
		param->mem_priv = lmr->privileges;
	if (mask & DAT_LMR_FIELD_VA_TYPE)
		param->va_type = lmr->va_type;
	if (mask & DAT_LMR_FIELD_LMR_CONTEXT)
		param->lmr_context = lmr->mr->lkey;
	if (mask & DAT_LMR_FIELD_RMR_CONTEXT)
		param->rmr_context = lmr->mr->rkey;
	if (mask & DAT_LMR_FIELD_REGISTERED_SIZE)
		param->registered_size = lmr->mr->length;
	if (mask & DAT_LMR_FIELD_REGISTERED_ADDRESS)
		param->registered_address = (DAT_VADDR)(uintptr_t)lmr->mr->addr;
	return DAT_SUCCESS;
}

/* ibv_dereg_mr returns an errno value (not -1), like every verbs destroy call. */
static int ofx_lmr_dereg(struct ofx_lmr *lmr)
{
	int ret = ofx_verbs->dereg_mr(lmr->mr);

	if (!ret)
		return 0;
	errno = ret > 0 ? ret : errno;
	ofx_warn("lmr %p: ibv_dereg_mr: %m", (void *)lmr);
	return -errno;
}

static void ofx_lmr_release(struct ofx_lmr *lmr)
{
	atomic_fetch_sub(&lmr->pz->refs, 1);
	ofx_obj_fini(&lmr->obj);
	free(lmr);
}

DAT_RETURN ofx_lmr_free(DAT_LMR_HANDLE h)
{
	struct ofx_lmr *lmr = ofx_lmr_from_handle(h);
	int ret;

	if (!lmr)
		return ofx_invalid_handle(OFX_OBJ_LMR);
	/* Deregistered first: if verbs refuses (bound windows), the LMR stays valid. */
	ret = ofx_lmr_dereg(lmr);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_LMR);
	ofx_lmr_release(lmr);
	return DAT_SUCCESS;
}

void ofx_lmr_destroy(struct ofx_lmr *lmr)
{
	if (!lmr)
		return;
	ofx_lmr_dereg(lmr);
	ofx_lmr_release(lmr);
}

/* Verbs memory is coherent for RDMA on every platform rdma-core supports. */
static DAT_RETURN ofx_lmr_sync(DAT_IA_HANDLE ia_h, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
	if (!ofx_ia_lookup(ia_h))
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (n && !iov)
		return OFX_INVALID_ARG(2);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_lmr_sync_rdma_read(DAT_IA_HANDLE ia_h, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
	return ofx_lmr_sync(ia_h, iov, n);
}

DAT_RETURN ofx_lmr_sync_rdma_write(DAT_IA_HANDLE ia_h, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
	return ofx_lmr_sync(ia_h, iov, n);
}
