/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "obj.h"

#include "ia.h"
#include "log.h"

static const char *const type_names[OFX_OBJ_TYPE_COUNT] = {
	[OFX_OBJ_FREED] = "freed",
#define OFX_OBJ_NAME(name, dat_type, dat_sub) [OFX_OBJ_##name] = #name,
	OFX_OBJ_TYPES(OFX_OBJ_NAME)
#undef OFX_OBJ_NAME
};

const char *ofx_obj_type_str(enum ofx_obj_type type)
{
	if ((unsigned int)type >= OFX_OBJ_TYPE_COUNT)
		return "unknown";
	return type_names[type];
}

/* DAT_HANDLE_TYPE_EXTENSION_BASE for a freed or unknown type: no real handle type. */
DAT_HANDLE_TYPE ofx_obj_dat_type(enum ofx_obj_type type)
{
	switch (type) {
#define OFX_OBJ_DAT_TYPE(name, dat_type, dat_sub) \
	case OFX_OBJ_##name:                      \
		return dat_type;
	OFX_OBJ_TYPES(OFX_OBJ_DAT_TYPE)
#undef OFX_OBJ_DAT_TYPE
	default:
		return DAT_HANDLE_TYPE_EXTENSION_BASE;
	}
}

DAT_RETURN_SUBTYPE ofx_obj_invalid_subtype(enum ofx_obj_type type)
{
	switch (type) {
#define OFX_OBJ_DAT_SUB(name, dat_type, dat_sub) \
	case OFX_OBJ_##name:                     \
		return dat_sub;
	OFX_OBJ_TYPES(OFX_OBJ_DAT_SUB)
#undef OFX_OBJ_DAT_SUB
	default:
		return DAT_NO_SUBTYPE;
	}
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
