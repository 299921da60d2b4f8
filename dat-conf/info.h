/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_INFO_H
#define OFX_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "config.h"

/*
 * The printing half of ofx-info, kept out of its main() so that the unit
 * tests can hold it against ofx_params[].  Everything printed about the
 * options comes from the provider's config table; nothing here lists them.
 */

/* Short name of a parameter type ("uint", "tristate", ...). */
const char *ofx_info_type_str(enum ofx_param_type t);

/*
 * What a row accepts, derived from config.c itself: "0..1024" for a uint,
 * "no|yes" or the names an enum formats to, "text, at most N characters".
 */
void ofx_info_values(const struct ofx_param *p, char *buf, size_t len);

/*
 * The configuration as the provider would resolve it here: defaults, then
 * the ia_params `options` (may be NULL), then the DAPL_OFX_* environment.
 * One line per table row, starting in column 0 with the key ("-" for an
 * environment-only row), then environment variable, type, default, current
 * value, source (default, ia_params, env, or env-ignored for a value the
 * provider would refuse), accepted values; with `docs`, the doc string
 * follows on indented lines.  Comment lines start with '#'.  An empty
 * string prints as "".  Returns -EINVAL with `why` when `options` would
 * make ia_open fail.
 */
int ofx_info_print_config(FILE *out, const char *options, bool docs, char *why,
			  size_t why_len);

/* The OPTIONS and ENVIRONMENT sections of libdaplofx(7), in roff. */
void ofx_info_print_man_options(FILE *out);

/*
 * QP counts when every process talks to every other process of a job of
 * `nodes` nodes with `procs` processes each.  Remote pairs always count;
 * with `intra`, pairs inside a node (RDMA loopback) count too.
 *
 *   peers    = P(N-1) + (intra ? P-1 : 0)       processes one process talks to
 *   dests    = (N-1) + (intra && P>1 ? 1 : 0)   nodes it sends to
 *   RC:      one QP per peer; per node P * peers; job N * P * peers
 *   XRC with one XRC domain per node (xrcd=<shared file>):
 *            INI per process = dests (one per destination node, the WR names
 *            the remote SRQ); TGT per node = P * dests (one per INI aimed at
 *            it, shared by the node's processes through the domain);
 *            per node 2 * P * dests
 *   XRC with a private domain per process (xrcd empty): a TGT serves one
 *            process, so INI = TGT = peers per process: twice RC
 */
struct ofx_qp_model {
	uint64_t procs, nodes;
	bool intra;
	uint64_t peers, dests;
	uint64_t rc_proc, rc_node, rc_job;
	uint64_t xrc_ini_proc, xrc_tgt_node, xrc_node, xrc_job;
	uint64_t xrcp_proc, xrcp_node, xrcp_job;
};

/* -EINVAL for zero counts, -ERANGE when a count overflows 64 bits. */
int ofx_info_qp_model(uint64_t procs, uint64_t nodes, bool intra, struct ofx_qp_model *m);
void ofx_info_print_qp(FILE *out, const struct ofx_qp_model *m);

#endif
