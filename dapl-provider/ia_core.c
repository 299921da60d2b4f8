/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "ia_core.h"

#include "log.h"

#include <stdint.h>

struct ofx_ia *ofx_ia_lookup(DAT_IA_HANDLE h)
{
	DAT_IA_HANDLE raw = h;

	if (!h)
		return NULL;
	if ((uintptr_t)h < OFX_IA_INDEX_LIMIT) {
		if (dats_get_ia_handle(h, &raw) != DAT_SUCCESS ||
		    (uintptr_t)raw < OFX_IA_INDEX_LIMIT)
			return NULL;
	}
	return ofx_ia_from_handle(raw);
}

DAT_IA_HANDLE ofx_ia_dat_handle(struct ofx_ia *ia)
{
	DAT_IA_HANDLE idx;

	/* Not yet (or never) known to libdat2, e.g. inside ia_open: the pointer. */
	if (dats_get_ia_handle((DAT_IA_HANDLE)ia, &idx) != DAT_SUCCESS || !idx)
		return (DAT_IA_HANDLE)ia;
	return idx;
}

void ofx_ia_count_rc_qp(struct ofx_ia *ia, bool created)
{
	unsigned long n, peak;

	if (!created) {
		atomic_fetch_sub(&ia->stats.rc_qps, 1);
		return;
	}
	n = atomic_fetch_add(&ia->stats.rc_qps, 1) + 1;
	peak = atomic_load(&ia->stats.rc_qps_peak);
	/* a failed exchange reloads peak: it ends once peak >= n */
	while (n > peak && !atomic_compare_exchange_weak(&ia->stats.rc_qps_peak, &peak, n))
		;
}

void ofx_ia_link(struct ofx_ia *ia, struct ofx_obj *obj)
{
	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_add_tail(&ia->objects, &obj->ia_link);
	pthread_mutex_unlock(&ia->obj_lock);
}

void ofx_ia_unlink(struct ofx_ia *ia, struct ofx_obj *obj)
{
	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_del(&obj->ia_link);
	pthread_mutex_unlock(&ia->obj_lock);
}

/*
 * An IA is its own owner: `ia` is the IA itself or NULL (the caller then
 * sets provider and ia).  Every other object inherits the IA's provider so
 * that libdat2 dispatches it to the same instance, and joins ia->objects.
 */
void ofx_obj_init(struct ofx_obj *obj, enum ofx_obj_type type, struct ofx_ia *ia)
{
	obj->type = type;
	obj->ia = ia;
	obj->context = (DAT_CONTEXT){ .as_ptr = NULL };
	ofx_list_init(&obj->ia_link);

	if (type == OFX_OBJ_IA) {
		if (ia && &ia->obj != obj)
			obj->provider = ia->obj.provider;
		return;
	}
	if (!ia) {
		ofx_err("%s object %p created without an ia", ofx_obj_type_str(type), (void *)obj);
		obj->provider = NULL;
		return;
	}
	obj->provider = ia->obj.provider;
	ofx_ia_link(ia, obj);
}

void ofx_obj_fini(struct ofx_obj *obj)
{
	if (obj->type == OFX_OBJ_FREED) {
		ofx_warn("object %p finalised twice", (void *)obj);
		return;
	}
	if (obj->type != OFX_OBJ_IA && obj->ia)
		ofx_ia_unlink(obj->ia, obj);
	obj->type = OFX_OBJ_FREED;
}
