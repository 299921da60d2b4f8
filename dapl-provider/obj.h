/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_OBJ_H
#define OFX_OBJ_H

#include <stddef.h>
#include <stdbool.h>
#include <pthread.h>
#include <dat2/udat.h>
#include <dat2/dat_registry.h>	/* DAT_PROVIDER */
#include "util.h"

/* Builds a DAT_RETURN with the error class bit; libdat2 does not export it. */
#define OFX_DAT_ERR(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))

/*
 * Every object type handed to a consumer.  The X-macro keeps the enum, the
 * name table and the DAT_HANDLE_TYPE mapping in one place.
 */
#define OFX_OBJ_TYPES(X)                                  \
	X(IA, DAT_HANDLE_TYPE_IA, DAT_INVALID_HANDLE_IA)    \
	X(PZ, DAT_HANDLE_TYPE_PZ, DAT_INVALID_HANDLE_PZ)    \
	X(LMR, DAT_HANDLE_TYPE_LMR, DAT_INVALID_HANDLE_LMR) \
	X(RMR, DAT_HANDLE_TYPE_RMR, DAT_INVALID_HANDLE_RMR) \
	X(EVD, DAT_HANDLE_TYPE_EVD, DAT_INVALID_HANDLE_EVD_REQUEST) \
	X(CNO, DAT_HANDLE_TYPE_CNO, DAT_INVALID_HANDLE_CNO) \
	X(EP, DAT_HANDLE_TYPE_EP, DAT_INVALID_HANDLE_EP)    \
	X(SRQ, DAT_HANDLE_TYPE_SRQ, DAT_INVALID_HANDLE_SRQ) \
	X(PSP, DAT_HANDLE_TYPE_PSP, DAT_INVALID_HANDLE_PSP) \
	X(RSP, DAT_HANDLE_TYPE_RSP, DAT_INVALID_HANDLE_RSP) \
	X(CSP, DAT_HANDLE_TYPE_CSP, DAT_INVALID_HANDLE_CSP) \
	X(CR, DAT_HANDLE_TYPE_CR, DAT_INVALID_HANDLE_CR)

enum ofx_obj_type {
	OFX_OBJ_FREED = 0, /* poisoned on destroy; never a valid handle */
#define OFX_OBJ_ENUM(name, dat_type, dat_sub) OFX_OBJ_##name,
	OFX_OBJ_TYPES(OFX_OBJ_ENUM)
#undef OFX_OBJ_ENUM
	OFX_OBJ_TYPE_COUNT
};

struct ofx_ia;

/*
 * Common header of every object we hand out.  libdat2 dispatches through
 * DAT_HANDLE_TO_PROVIDER(h), i.e. the first pointer-sized word of the handle,
 * so `provider` must stay the first member; the type tag is the second word
 * and is poisoned (OFX_OBJ_FREED) when the object is destroyed.
 */
struct ofx_obj {
	DAT_PROVIDER *provider;	/* first: libdat2 dispatches through it */
	enum ofx_obj_type type;	/* set to OFX_OBJ_FREED on destroy */
	struct ofx_ia *ia;	/* owner; the IA itself for an IA */
	DAT_CONTEXT context;	/* dat_set/get_consumer_context */
	struct ofx_list ia_link; /* in ia->objects, guarded by ia->obj_lock */
};

const char *ofx_obj_type_str(enum ofx_obj_type type);
DAT_HANDLE_TYPE ofx_obj_dat_type(enum ofx_obj_type type);
/* The DAT_INVALID_HANDLE_* subtype that names a handle of this type. */
DAT_RETURN_SUBTYPE ofx_obj_invalid_subtype(enum ofx_obj_type type);

/*
 * Checked downcast: the object if `h` is a live object of `type`, else NULL.
 * A handle that is not one of ours at all cannot be detected (libdat2 only
 * NULL-checks before dispatching), but freed and wrong-typed ones can.
 */
static inline struct ofx_obj *ofx_obj_from_handle(const void *h, enum ofx_obj_type type)
{
	struct ofx_obj *obj = (struct ofx_obj *)h;

	return obj && obj->type == type ? obj : NULL;
}

/* Defines ofx_<name>_from_handle() for struct ofx_<name> whose header is `obj`. */
#define OFX_DEFINE_FROM_HANDLE(name, TYPE)                                     \
	_Static_assert(offsetof(struct ofx_##name, obj) == 0,                  \
		       "struct ofx_" #name ": obj must be first");             \
	static inline struct ofx_##name *ofx_##name##_from_handle(const void *h) \
	{                                                                      \
		struct ofx_obj *obj = ofx_obj_from_handle(h, OFX_OBJ_##TYPE);  \
		return obj ? container_of(obj, struct ofx_##name, obj) : NULL; \
	}

/* ofx_obj_init/fini, which join and leave the IA's registry, are in ia_core.h. */

#endif
