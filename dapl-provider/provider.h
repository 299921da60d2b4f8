/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_PROVIDER_H
#define OFX_PROVIDER_H

#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include "obj.h"

#define OFX_IA_PARAMS_MAX 1024

/*
 * One registered provider instance per dat.conf entry (IA name).  `dat` is a
 * copy of the const template with device_name pointing at `name`; it must
 * outlive every IA of this name (libdat2 reads device_name at ia_close).
 * Instances live on a global list guarded by ofx_provider_lock.
 */
struct ofx_provider {
	DAT_PROVIDER dat;
	DAT_PROVIDER_INFO info;
	char name[DAT_NAME_MAX_LENGTH];
	char device[256];		/* netdev, IP literal or hostname */
	char port[32];			/* kept for compatibility, unused by cma */
	char options[OFX_IA_PARAMS_MAX]; /* key=value list after device and port */
	int params_error;		/* -EINVAL if ia_params could not be split */
	struct ofx_list link;
};

/* The const table every instance starts from. */
extern const DAT_PROVIDER ofx_provider_template;

static inline struct ofx_provider *ofx_provider_from_dat(const DAT_PROVIDER *dat)
{
	return container_of(dat, struct ofx_provider, dat);
}

/*
 * Splits dat.conf ia_params "<device> <port> [key=value ...]".  Fills the
 * three parts of `prov`; returns -EINVAL (with a log line) when the device or
 * port is missing or a part is too long.
 */
int ofx_ia_params_split(const char *ia_params, struct ofx_provider *prov);

/*
 * The registered instance for an IA name, or NULL.  The result stays valid
 * while libdat2 holds the name open (from dat_provider_init to
 * dat_provider_fini), i.e. for the whole of any ia_open/ia_close.
 */
struct ofx_provider *ofx_provider_find(const char *name);

/* Libdat2 entry points (the only exported symbols). */
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data);
void dat_provider_fini(const DAT_PROVIDER_INFO *info);

/* Not declared by any public header; exported by libdat2 (contract 1.5). */
extern DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE in, DAT_IA_HANDLE *out);

#endif
