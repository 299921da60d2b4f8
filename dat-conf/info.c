/* SPDX-License-Identifier: BSD-2-Clause */
#include "info.h"

#include "env.h"
#include "log.h"
#include "obj.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DOC_WIDTH 100
#define DOC_INDENT 4
/* Enum rows format values 0..n-1 to names and anything else to "?". */
#define ENUM_PROBE_MAX 16

const char *ofx_info_type_str(enum ofx_param_type t)
{
	switch (t) {
	case OFX_PARAM_UINT:
		return "uint";
	case OFX_PARAM_BOOL:
		return "bool";
	case OFX_PARAM_TRISTATE:
		return "tristate";
	case OFX_PARAM_RTR:
		return "rtr";
	case OFX_PARAM_XRC_TGT:
		return "xrc_tgt";
	case OFX_PARAM_STRING:
		return "string";
	}
	return "?";
}

/* Appends "|name" for each value an enum field formats to (config.c owns the names). */
static void enum_values(const struct ofx_param *p, char *buf, size_t len)
{
	char name[OFX_CONFIG_STR_MAX];
	struct ofx_config cfg;
	size_t pos = 0;
	int v;

	_Static_assert(sizeof(enum ofx_tristate) == sizeof(int), "enum fields are ints");
	_Static_assert(sizeof(enum ofx_rtr_type) == sizeof(int), "enum fields are ints");
	_Static_assert(sizeof(enum ofx_xrc_tgt) == sizeof(int), "enum fields are ints");
	buf[0] = '\0';
	for (v = 0; v < ENUM_PROBE_MAX; v++) {
		memset(&cfg, 0, sizeof(cfg));
		memcpy((char *)&cfg + p->offset, &v, sizeof(v));
		ofx_config_format(p, &cfg, name, sizeof(name));
		if (!name[0] || !strcmp(name, "?"))
			break;
		pos += (size_t)snprintf(buf + pos, pos < len ? len - pos : 0, "%s%s",
					v ? "|" : "", name);
		if (pos >= len)
			break;
	}
}

void ofx_info_values(const struct ofx_param *p, char *buf, size_t len)
{
	switch (p->type) {
	case OFX_PARAM_UINT:
		snprintf(buf, len, "%u..%u", p->min, p->max);
		return;
	case OFX_PARAM_BOOL:
		snprintf(buf, len, "no|yes");
		return;
	case OFX_PARAM_TRISTATE:
	case OFX_PARAM_RTR:
	case OFX_PARAM_XRC_TGT:
		enum_values(p, buf, len);
		return;
	case OFX_PARAM_STRING:
		snprintf(buf, len, "text(<=%u)", p->max);
		return;
	}
	snprintf(buf, len, "?");
}

/* Prints `text` word-wrapped at DOC_WIDTH with `indent` blanks before each line. */
static void print_wrapped(FILE *out, const char *text, int indent)
{
	const char *s = text;
	size_t col = 0, wl;

	for (;;) {
		s += strspn(s, " ");
		wl = strcspn(s, " ");
		if (!wl)
			break;
		if (col && indent + col + 1 + wl > DOC_WIDTH) {
			fputc('\n', out);
			col = 0;
		}
		if (col) {
			fputc(' ', out);
			col++;
		} else {
			fprintf(out, "%*s", indent, "");
		}
		fprintf(out, "%.*s", (int)wl, s);
		col += wl;
		s += wl;
	}
	if (col)
		fputc('\n', out);
}

static const char *shown(const char *v)
{
	return v[0] ? v : "\"\"";
}

/* Whether the blank-separated `options` set `key`. */
static bool options_set(const char *options, const char *key)
{
	size_t klen = strlen(key);
	const char *s = options;

	while (s && *s) {
		size_t len;

		s += strspn(s, " \t\n");
		len = strcspn(s, " \t\n");
		if (len > klen && !strncmp(s, key, klen) && s[klen] == '=')
			return true;
		s += len;
	}
	return false;
}

int ofx_info_print_config(FILE *out, const char *options, bool docs, char *why,
			  size_t why_len)
{
	char def[OFX_CONFIG_STR_MAX], cur[OFX_CONFIG_STR_MAX], values[128];
	struct ofx_config cfg, probe;
	unsigned int mask;
	size_t i;
	int ret;

	ofx_config_defaults(&cfg);
	ofx_config_defaults(&probe);
	/* resolve quietly: refusals are reported here, in the table or in `why` */
	mask = ofx_log_subsys_mask;
	ofx_log_subsys_mask = 0;
	ret = ofx_config_resolve(options, &cfg, why, why_len);
	ofx_log_subsys_mask = mask;
	if (ret)
		return ret;

	fprintf(out, "# libdaplofx configuration: %zu options\n", ofx_param_count);
	fprintf(out, "# precedence: default < dat.conf ia_params (key=value after \"<device> 0\") "
		"< environment\n");
	fprintf(out, "# %-18s %-28s %-8s %-8s %-8s %-11s %s\n", "KEY", "ENVIRONMENT", "TYPE",
		"DEFAULT", "VALUE", "SOURCE", "VALUES");
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];
		const char *env = p->env ? ofx_env_get(p->env) : NULL;
		const char *source = "default";

		if (env && !ofx_config_set(p, env, &probe))
			source = "env";
		else if (p->key && options_set(options, p->key))
			source = "ia_params";
		snprintf(def, sizeof(def), "%s", p->defval);
		ofx_config_format(p, &cfg, cur, sizeof(cur));
		ofx_info_values(p, values, sizeof(values));
		fprintf(out, "%-20s %-28s %-8s %-8s %-8s %-11s %s\n", p->key ? p->key : "-",
			p->env, ofx_info_type_str(p->type), shown(def), shown(cur), source, values);
		if (docs)
			print_wrapped(out, p->doc, DOC_INDENT);
	}
	/* the provider warns about these at ia_open and keeps the lower-precedence value */
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];
		const char *env = p->env ? ofx_env_get(p->env) : NULL;

		if (!env || !ofx_config_set(p, env, &probe))
			continue;
		ofx_info_values(p, values, sizeof(values));
		fprintf(out, "# ignored: %s='%s' (expected %s)\n", p->env, env, values);
	}
	return 0;
}

/* roff text: backslashes doubled as \e, a leading '.' or '\'' guarded by \&. */
static void roff_text(FILE *out, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", out);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

static void man_row(FILE *out, const struct ofx_param *p, bool by_key)
{
	char values[128];

	ofx_info_values(p, values, sizeof(values));
	fputs(".TP\n\\fB", out);
	roff_text(out, by_key ? p->key : p->env);
	fputs("\\fR=\\fI", out);
	roff_text(out, values);
	fputs("\\fR\n", out);
	roff_text(out, p->doc);
	fputs("\n.br\n", out);
	if (by_key) {
		fputs("Environment: \\fB", out);
		roff_text(out, p->env);
		fputs("\\fR. ", out);
	}
	fputs("Default: ", out);
	if (p->defval[0]) {
		fputs("\\fB", out);
		roff_text(out, p->defval);
		fputs("\\fR", out);
	} else {
		fputs("empty", out);
	}
	fputs(".\n", out);
}

void ofx_info_print_man_options(FILE *out)
{
	size_t i;

	fputs(".\\\" Generated from the provider's config table by ofx-info --man; "
	      "do not edit.\n", out);
	fputs(".SH OPTIONS\n", out);
	fputs("Options follow the device and port in the \\fIia_params\\fR field of a "
	      "dat.conf entry, as blank\\-separated \\fIkey\\fR=\\fIvalue\\fR words. Each one "
	      "can also be set by its environment variable, which wins over dat.conf. An "
	      "unknown key or a bad value in dat.conf makes \\fBdat_ia_open\\fR fail; a bad "
	      "environment value is ignored with a warning. A \\fIbool\\fR also accepts "
	      "on/off, true/false and 1/0; a tristate also accepts the \\fIbool\\fR words.\n",
	      out);
	for (i = 0; i < ofx_param_count; i++) {
		if (ofx_params[i].key)
			man_row(out, &ofx_params[i], true);
	}
	fputs(".SH ENVIRONMENT\n", out);
	fputs("Every option above has its \\fBDAPL_OFX_\\fR variable. These are read "
	      "from the environment only:\n", out);
	for (i = 0; i < ofx_param_count; i++) {
		if (!ofx_params[i].key)
			man_row(out, &ofx_params[i], false);
	}
	fputs(".TP\n\\fBDAT_OVERRIDE\\fR\nRead by libdat2, not by the provider: the "
	      "dat.conf to use instead of \\fI/etc/dat.conf\\fR "
	      "(see \\fBofx\\-dat\\-conf\\fR(1)).\n", out);
}

static bool mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *r)
{
	uint64_t t;

	return !__builtin_mul_overflow(a, b, &t) && !__builtin_mul_overflow(t, c, r);
}

int ofx_info_qp_model(uint64_t procs, uint64_t nodes, bool intra, struct ofx_qp_model *m)
{
	struct ofx_qp_model r = { .procs = procs, .nodes = nodes, .intra = intra };
	bool ok;

	if (!procs || !nodes)
		return -EINVAL;
	r.dests = (nodes - 1) + (intra && procs > 1 ? 1 : 0);
	ok = !__builtin_mul_overflow(procs, nodes - 1, &r.peers) &&
	     !__builtin_add_overflow(r.peers, intra ? procs - 1 : 0, &r.peers);

	ok = ok && mul3(1, 1, r.peers, &r.rc_proc) && mul3(procs, r.peers, 1, &r.rc_node) &&
	     mul3(nodes, procs, r.peers, &r.rc_job);

	ok = ok && mul3(1, 1, r.dests, &r.xrc_ini_proc) &&
	     mul3(procs, r.dests, 1, &r.xrc_tgt_node) &&
	     mul3(2, procs, r.dests, &r.xrc_node) && mul3(r.xrc_node, nodes, 1, &r.xrc_job);

	ok = ok && mul3(2, r.peers, 1, &r.xrcp_proc) && mul3(2, r.rc_node, 1, &r.xrcp_node) &&
	     mul3(2, r.rc_job, 1, &r.xrcp_job);
	if (!ok)
		return -ERANGE;
	*m = r;
	return 0;
}

void ofx_info_print_qp(FILE *out, const struct ofx_qp_model *m)
{
	fprintf(out, "# QP count: P=%llu processes per node, N=%llu nodes, every process "
		"connected to every %s process\n", (unsigned long long)m->procs,
		(unsigned long long)m->nodes, m->intra ? "other" : "remote");
	fprintf(out, "# peers per process = P*(N-1)%s = %llu; destination nodes per "
		"process = (N-1)%s = %llu\n", m->intra ? " + (P-1)" : "",
		(unsigned long long)m->peers, m->intra ? " + 1 (own node, if P>1)" : "",
		(unsigned long long)m->dests);
	fprintf(out, "# %-38s %14s %14s %16s\n", "QPs", "per process", "per node", "whole job");
	fprintf(out, "  %-38s %14llu %14llu %16llu\n", "RC (peers per process)",
		(unsigned long long)m->rc_proc, (unsigned long long)m->rc_node,
		(unsigned long long)m->rc_job);
	fprintf(out, "  %-38s %14llu %14llu %16llu\n", "XRC shared xrcd: INI (dests)",
		(unsigned long long)m->xrc_ini_proc,
		(unsigned long long)(m->xrc_node / 2),
		(unsigned long long)(m->xrc_job / 2));
	fprintf(out, "  %-38s %14s %14llu %16llu\n", "XRC shared xrcd: TGT (P*dests/node)",
		"-", (unsigned long long)m->xrc_tgt_node, (unsigned long long)(m->xrc_job / 2));
	fprintf(out, "  %-38s %14s %14llu %16llu\n", "XRC shared xrcd: INI+TGT", "-",
		(unsigned long long)m->xrc_node, (unsigned long long)m->xrc_job);
	fprintf(out, "  %-38s %14llu %14llu %16llu\n", "XRC private xrcd: INI+TGT (2*peers)",
		(unsigned long long)m->xrcp_proc, (unsigned long long)m->xrcp_node,
		(unsigned long long)m->xrcp_job);
	if (m->xrc_node)
		fprintf(out, "# RC / shared-xrcd XRC per node = P*peers / (2*P*dests) = %.2f%s\n",
			(double)m->rc_node / (double)m->xrc_node,
			m->rc_node > m->xrc_node ? "" : " (XRC saves nothing here)");
	fprintf(out, "# shared xrcd: xrc=on xrcd=<file on node-local storage, the same for "
		"every process of the node>;\n# without it every TGT serves a single process "
		"and XRC needs twice the RC count.\n");
}
