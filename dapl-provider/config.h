/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CONFIG_H
#define OFX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Every tunable of the provider lives in one table (config.c).  A row has an
 * ia_params key (may be NULL for environment-only knobs), an environment
 * variable, a type, a default, a doc string and the offset of its field in
 * struct ofx_config.
 *
 * Precedence, lowest to highest: default, dat.conf ia_params option,
 * DAPL_OFX_* environment variable; per-EP provider-specific attributes
 * (p2p only) override all of them at ep_create time.
 *
 * A resolved struct ofx_config belongs to an IA and is never written after
 * ia_open.
 */
enum ofx_tristate { OFX_OFF = 0, OFX_ON = 1, OFX_AUTO = 2 };
enum ofx_rtr_type { OFX_RTR_SEND = 0, OFX_RTR_WRITE = 1, OFX_RTR_READ = 2 };
enum ofx_xrc_tgt { OFX_XRC_TGT_DOMAIN = 0, OFX_XRC_TGT_EXIT = 1 };

#define OFX_CONFIG_STR_MAX 256

struct ofx_config {
	enum ofx_tristate p2p;
	enum ofx_rtr_type rtr;
	enum ofx_tristate xrc;
	char xrcd[OFX_CONFIG_STR_MAX];
	enum ofx_xrc_tgt xrc_tgt;
	bool xrcd_foreign;
	bool xrc_rc_fallback;
	unsigned int max_inline;
	unsigned int cm_timeout_ms;
	unsigned int cm_retries;
	unsigned int wr_max;
	unsigned int tos;
	unsigned int disc_timeout_ms;
	unsigned int lastwqe_timeout_ms;
	unsigned int cq_batch;
	unsigned int rtr_timeout_ms;
	enum ofx_tristate rtr_nudge;
	unsigned int csp_retry_ms;
	bool stats;
	bool print_config;
	char log_level[32];
	char log_subsys[OFX_CONFIG_STR_MAX];
	char log_file[OFX_CONFIG_STR_MAX];
};

enum ofx_param_type {
	OFX_PARAM_UINT,
	OFX_PARAM_BOOL,		/* yes|no|on|off|1|0|true|false */
	OFX_PARAM_TRISTATE,	/* auto|on|off */
	OFX_PARAM_RTR,		/* send|write|read */
	OFX_PARAM_XRC_TGT,	/* domain|exit */
	OFX_PARAM_STRING,
};

struct ofx_param {
	const char *key;	/* ia_params key, NULL = environment only */
	const char *env;	/* DAPL_OFX_* variable */
	enum ofx_param_type type;
	const char *defval;
	unsigned int min, max;	/* OFX_PARAM_UINT range, inclusive; STRING: max length */
	const char *doc;
	size_t offset;
};

extern const struct ofx_param ofx_params[];
extern const size_t ofx_param_count;

/* Fills `cfg` with the table defaults. */
void ofx_config_defaults(struct ofx_config *cfg);

/*
 * Applies a blank-separated list of key=value options (the part of ia_params
 * after device and port), then the environment.  An unknown key or a bad
 * value is an error: -EINVAL, one log line naming it, and `why` (if not NULL)
 * gets the same text.  A bad environment value only warns and keeps the
 * lower-precedence value.
 */
int ofx_config_resolve(const char *options, struct ofx_config *cfg, char *why, size_t why_len);

/* Parses one value for a row into `cfg`; -EINVAL if it does not parse. */
int ofx_config_set(const struct ofx_param *p, const char *value, struct ofx_config *cfg);
const struct ofx_param *ofx_config_find_key(const char *key);
/* Formats the current value of a row into buf. */
void ofx_config_format(const struct ofx_param *p, const struct ofx_config *cfg,
		       char *buf, size_t len);
/* Prints name, type, default, current value and doc of every row. */
void ofx_config_print(FILE *out, const struct ofx_config *cfg);

const char *ofx_tristate_str(enum ofx_tristate t);
const char *ofx_rtr_type_str(enum ofx_rtr_type t);

#endif
