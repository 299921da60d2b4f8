/* SPDX-License-Identifier: BSD-2-Clause */
#include "obj.h"

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
