/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_PROVIDER_H
#define OFX_PROVIDER_H

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

/* The const table every instance starts from. */
extern const DAT_PROVIDER ofx_provider_template;

/* Libdat2 entry points (the only exported symbols). */
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data);
void dat_provider_fini(const DAT_PROVIDER_INFO *info);

#endif
