/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_ENV_H
#define OFX_ENV_H

/*
 * The only getenv() wrapper of the provider (NULL if unset or empty).  It
 * sits below log and config, the two readers of DAPL_OFX_* variables, so
 * that logging can be set up before (and without) the config table.
 */
const char *ofx_env_get(const char *name);

#endif
