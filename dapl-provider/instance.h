/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_INSTANCE_H
#define OFX_INSTANCE_H

#include <stdbool.h>
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include "obj.h"

/*
 * The provider instances that dat_provider_init registers (provider.c) and
 * ia_open looks up by name (ia.c): below both, so that neither includes
 * the other's header.
 */
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

/* Puts `prov` on the instance list (dat_provider_init). */
void ofx_provider_add(struct ofx_provider *prov);
/*
 * Takes `prov` off the instance list (nothing if NULL); true if no instance
 * is left then (dat_provider_fini).
 */
bool ofx_provider_remove(struct ofx_provider *prov);

#endif
