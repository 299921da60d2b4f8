/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CFG
#include "config.h"

#include "env.h"
#include "log.h"
#include "obj.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FIELD(f) offsetof(struct ofx_config, f)
#define STR_MAX(f) ((unsigned int)sizeof(((struct ofx_config *)0)->f) - 1)

#define UINT_ROW(k, e, def, lo, hi, f, d)                                              \
	{ .key = k, .env = e, .type = OFX_PARAM_UINT, .defval = def, .min = lo, .max = hi, \
	  .doc = d, .offset = FIELD(f) }
#define TYPED_ROW(k, e, t, def, f, d) \
	{ .key = k, .env = e, .type = t, .defval = def, .doc = d, .offset = FIELD(f) }
#define STRING_ROW(k, e, def, f, d)                                                   \
	{ .key = k, .env = e, .type = OFX_PARAM_STRING, .defval = def, .max = STR_MAX(f), \
	  .doc = d, .offset = FIELD(f) }

/*
 * Every tunable of the provider.  A row with a key can be set in the dat.conf
 * ia_params after device and port ("ofx0 0 p2p=on cm_retries=3"); every row
 * can be set from its environment variable, which wins over ia_params.
 */
const struct ofx_param ofx_params[] = {
	TYPED_ROW("p2p", "DAPL_OFX_P2P", OFX_PARAM_TRISTATE, "auto", p2p,
		  "Peer-to-peer connection setup: the passive side keeps the connection pending "
		  "until the active side's ready-to-receive (RTR) message arrives. auto = on for "
		  "iWARP devices, off for IB and RoCE; the per-EP P2P provider attribute "
		  "overrides it."),
	TYPED_ROW("rtr", "DAPL_OFX_RTR", OFX_PARAM_RTR, "send", rtr,
		  "Operation that carries the p2p RTR message: send (zero-byte send), write "
		  "(zero-byte RDMA write) or read (zero-byte RDMA read)."),
	TYPED_ROW("xrc", "DAPL_OFX_XRC", OFX_PARAM_TRISTATE, "off", xrc,
		  "Back every EP with XRC (its own XRC SRQ to receive, an XRC INI QP shared per "
		  "remote node to send): on = require a device with XRC (dat_ia_open fails "
		  "without), auto = XRC where the device has it, else RC, off = plain RC. XRC "
		  "is used per connection only when the peer runs it too. iWARP and rxe have "
		  "no XRC."),
	STRING_ROW("xrcd", "DAPL_OFX_XRCD", "", xrcd,
		   "Path of the XRC domain file shared by the processes of a job; empty = a "
		   "private domain per IA."),
	TYPED_ROW("xrc_tgt", "DAPL_OFX_XRC_TGT", OFX_PARAM_XRC_TGT, "domain", xrc_tgt,
		  "What holds an XRC target QP (the kernel destroys it with its last handle): "
		  "domain = its creator while the INI QP it serves exists, and every process "
		  "with an EP connected through it; exit = its creator only, so it dies with "
		  "the creator's IA or process."),
	TYPED_ROW("xrcd_foreign", "DAPL_OFX_XRCD_FOREIGN", OFX_PARAM_BOOL, "no", xrcd_foreign,
		  "Accept an XRC domain file owned by another user."),
	TYPED_ROW("xrc_rc_fallback", "DAPL_OFX_XRC_RC_FALLBACK", OFX_PARAM_BOOL, "yes",
		  xrc_rc_fallback,
		  "An XRC EP's dat_ep_connect also builds an RC QP, in case the peer answers "
		  "over RC (stock libdaplofa, xrc=off, no XRC device). no = every peer runs "
		  "libdaplofx with XRC: the connect builds no RC QP, and a peer that accepts "
		  "over RC fails it (NON_PEER_REJECTED, and a log line saying why)."),
	UINT_ROW("max_inline", "DAPL_OFX_MAX_INLINE", "64", 0, 1024, max_inline,
		 "Inline data threshold requested for sends and RDMA writes, in bytes; the "
		 "device may grant less."),
	UINT_ROW("cm_timeout_ms", "DAPL_OFX_CM_TIMEOUT_MS", "4000", 100, 600000, cm_timeout_ms,
		 "Timeout of address and route resolution, in milliseconds."),
	UINT_ROW("cm_retries", "DAPL_OFX_CM_RETRIES", "15", 0, 100, cm_retries,
		 "How often address and route resolution is retried after ETIMEDOUT."),
	UINT_ROW("wr_max", "DAPL_OFX_WR_MAX", "0", 0, 16777216, wr_max,
		 "Cap on the send and on the receive DTOs of one EP; 0 = the device limit."),
	UINT_ROW("tos", "DAPL_OFX_TOS", "0", 0, 255, tos,
		 "IP type of service of connections (RDMA_OPTION_ID_TOS); 0 = leave it unset."),
	UINT_ROW("disc_timeout_ms", "DAPL_OFX_DISC_TIMEOUT_MS", "250", 0, 600000, disc_timeout_ms,
		 "How long an abrupt disconnect waits for the peer's DREP before the EP is "
		 "forced to DISCONNECTED, in milliseconds."),
	UINT_ROW("lastwqe_timeout_ms", "DAPL_OFX_LASTWQE_TIMEOUT_MS", "1000", 0, 600000,
		 lastwqe_timeout_ms,
		 "How long the teardown of an SRQ EP waits for IBV_EVENT_QP_LAST_WQE_REACHED, in "
		 "milliseconds (rxe never sends it)."),
	UINT_ROW("cq_batch", "DAPL_OFX_CQ_BATCH", "16", 1, 256, cq_batch,
		 "Completions fetched by one ibv_poll_cq call."),
	UINT_ROW("rtr_timeout_ms", "DAPL_OFX_RTR_TIMEOUT_MS", "30000", 100, 600000, rtr_timeout_ms,
		 "How long a passive p2p EP waits for the peer's RTR before the connection is "
		 "BROKEN, in milliseconds.  Counted from the rdma_cm ESTABLISHED (before it, the "
		 "CM's own timeouts end the accept); a peer on a busy node may take seconds "
		 "between the RTU and its RTR, and only a hung peer never sends it."),
	TYPED_ROW("rtr_nudge", "DAPL_OFX_RTR_NUDGE", OFX_PARAM_TRISTATE, "auto", rtr_nudge,
		  "The active side follows its ESTABLISHED (and RTR, with p2p) with up to four "
		  "zero-byte RDMA writes, 5 ms to 5 s apart: siw (Linux 6.1) leaves an FPDU "
		  "that reaches the passive side while its accept hands the socket to the QP "
		  "unread until more data comes, and a first message (the RTR, or without p2p "
		  "the consumer's) stuck there stalls the connection. "
		  "auto = on for siw, off elsewhere."),
	UINT_ROW("csp_retry_ms", "DAPL_OFX_CSP_RETRY_MS", "50", 1, 60000, csp_retry_ms,
		 "DAT 2.0 common connect: pause before the initiating side retries while the "
		 "peer has not called dat_ep_common_connect yet, in milliseconds."),
	TYPED_ROW("stats", "DAPL_OFX_STATS", OFX_PARAM_BOOL, "no", stats,
		  "Log the per-IA counters at ia_close."),
	TYPED_ROW("print_config", "DAPL_OFX_PRINT_CONFIG", OFX_PARAM_BOOL, "no", print_config,
		  "Print this table with the resolved values at ia_open."),
	STRING_ROW(NULL, "DAPL_OFX_LOG_LEVEL", "warn", log_level,
		   "Log level: error, warn, info, debug or trace."),
	STRING_ROW(NULL, "DAPL_OFX_LOG_SUBSYS", "", log_subsys,
		   "Comma list of subsystems to log (core, cfg, ia, evd, ep, cm, dto, mem, p2p, "
		   "xrc); empty = all."),
	STRING_ROW(NULL, "DAPL_OFX_LOG_FILE", "", log_file,
		   "File that log lines are appended to; empty = stderr."),
};

const size_t ofx_param_count = OFX_ARRAY_SIZE(ofx_params);

static const char *const bool_names[] = { "no", "yes" };
static const char *const tristate_names[] = {
	[OFX_OFF] = "off",
	[OFX_ON] = "on",
	[OFX_AUTO] = "auto",
};
static const char *const rtr_names[] = {
	[OFX_RTR_SEND] = "send",
	[OFX_RTR_WRITE] = "write",
	[OFX_RTR_READ] = "read",
};
static const char *const xrc_tgt_names[] = {
	[OFX_XRC_TGT_DOMAIN] = "domain",
	[OFX_XRC_TGT_EXIT] = "exit",
};
static const char *const type_names[] = {
	[OFX_PARAM_UINT] = "uint",
	[OFX_PARAM_BOOL] = "bool",
	[OFX_PARAM_TRISTATE] = "tristate",
	[OFX_PARAM_RTR] = "rtr",
	[OFX_PARAM_XRC_TGT] = "xrc_tgt",
	[OFX_PARAM_STRING] = "string",
};

#define OPTION_BLANKS " \t\n"
#define OPTION_VALUE_MAX 512
#define WHY_MAX 512

const char *ofx_tristate_str(enum ofx_tristate t)
{
	return (unsigned int)t < OFX_ARRAY_SIZE(tristate_names) ? tristate_names[t] : "?";
}

const char *ofx_rtr_type_str(enum ofx_rtr_type t)
{
	return (unsigned int)t < OFX_ARRAY_SIZE(rtr_names) ? rtr_names[t] : "?";
}

static const char *xrc_tgt_str(enum ofx_xrc_tgt t)
{
	return (unsigned int)t < OFX_ARRAY_SIZE(xrc_tgt_names) ? xrc_tgt_names[t] : "?";
}

static int parse_bool(const char *s, bool *v)
{
	static const char *const yes[] = { "yes", "on", "1", "true", "y" };
	static const char *const no[] = { "no", "off", "0", "false", "n" };
	size_t i;

	for (i = 0; i < OFX_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*v = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*v = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_name(const char *s, const char *const *names, size_t n, int *v)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (names[i] && !strcasecmp(s, names[i])) {
			*v = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *v)
{
	unsigned long long val;
	char *end;

	/* strtoull accepts blanks and a sign; a tunable is plain decimal digits. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	val = strtoull(s, &end, 10);
	if (errno || *end || val < min || val > max)
		return -EINVAL;
	*v = (unsigned int)val;
	return 0;
}

int ofx_config_set(const struct ofx_param *p, const char *value, struct ofx_config *cfg)
{
	void *field = (char *)cfg + p->offset;
	unsigned int u;
	size_t len;
	bool b;
	int e;

	if (!value)
		return -EINVAL;

	switch (p->type) {
	case OFX_PARAM_UINT:
		if (parse_uint(value, p->min, p->max, &u))
			return -EINVAL;
		*(unsigned int *)field = u;
		return 0;
	case OFX_PARAM_BOOL:
		if (parse_bool(value, &b))
			return -EINVAL;
		*(bool *)field = b;
		return 0;
	case OFX_PARAM_TRISTATE:
		if (parse_name(value, tristate_names, OFX_ARRAY_SIZE(tristate_names), &e)) {
			if (parse_bool(value, &b))
				return -EINVAL;
			e = b ? OFX_ON : OFX_OFF;
		}
		*(enum ofx_tristate *)field = (enum ofx_tristate)e;
		return 0;
	case OFX_PARAM_RTR:
		if (parse_name(value, rtr_names, OFX_ARRAY_SIZE(rtr_names), &e))
			return -EINVAL;
		*(enum ofx_rtr_type *)field = (enum ofx_rtr_type)e;
		return 0;
	case OFX_PARAM_XRC_TGT:
		if (parse_name(value, xrc_tgt_names, OFX_ARRAY_SIZE(xrc_tgt_names), &e))
			return -EINVAL;
		*(enum ofx_xrc_tgt *)field = (enum ofx_xrc_tgt)e;
		return 0;
	case OFX_PARAM_STRING:
		len = strlen(value);
		if (len > p->max)
			return -EINVAL;
		memcpy(field, value, len + 1);
		return 0;
	}
	return -EINVAL;
}

const struct ofx_param *ofx_config_find_key(const char *key)
{
	size_t i;

	if (!key)
		return NULL;
	for (i = 0; i < ofx_param_count; i++) {
		if (ofx_params[i].key && !strcmp(ofx_params[i].key, key))
			return &ofx_params[i];
	}
	return NULL;
}

void ofx_config_format(const struct ofx_param *p, const struct ofx_config *cfg,
		       char *buf, size_t len)
{
	const void *field = (const char *)cfg + p->offset;

	if (!len)
		return;
	switch (p->type) {
	case OFX_PARAM_UINT:
		snprintf(buf, len, "%u", *(const unsigned int *)field);
		return;
	case OFX_PARAM_BOOL:
		snprintf(buf, len, "%s", bool_names[*(const bool *)field]);
		return;
	case OFX_PARAM_TRISTATE:
		snprintf(buf, len, "%s", ofx_tristate_str(*(const enum ofx_tristate *)field));
		return;
	case OFX_PARAM_RTR:
		snprintf(buf, len, "%s", ofx_rtr_type_str(*(const enum ofx_rtr_type *)field));
		return;
	case OFX_PARAM_XRC_TGT:
		snprintf(buf, len, "%s", xrc_tgt_str(*(const enum ofx_xrc_tgt *)field));
		return;
	case OFX_PARAM_STRING:
		snprintf(buf, len, "%s", (const char *)field);
		return;
	}
	buf[0] = '\0';
}

/* What a row accepts, for error messages. */
static void describe(const struct ofx_param *p, char *buf, size_t len)
{
	switch (p->type) {
	case OFX_PARAM_UINT:
		snprintf(buf, len, "an integer in %u..%u", p->min, p->max);
		return;
	case OFX_PARAM_BOOL:
		snprintf(buf, len, "yes|no");
		return;
	case OFX_PARAM_TRISTATE:
		snprintf(buf, len, "auto|on|off");
		return;
	case OFX_PARAM_RTR:
		snprintf(buf, len, "send|write|read");
		return;
	case OFX_PARAM_XRC_TGT:
		snprintf(buf, len, "domain|exit");
		return;
	case OFX_PARAM_STRING:
		snprintf(buf, len, "at most %u characters", p->max);
		return;
	}
	snprintf(buf, len, "?");
}

void ofx_config_defaults(struct ofx_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < ofx_param_count; i++) {
		if (ofx_config_set(&ofx_params[i], ofx_params[i].defval, cfg))
			ofx_err("default '%s' of %s does not parse", ofx_params[i].defval,
				ofx_params[i].env);
	}
}

/* Applies one "key=value" token of `len` bytes; on error `msg` says why. */
static int apply_option(const char *tok, size_t len, struct ofx_config *cfg,
			char *msg, size_t msg_len)
{
	const char *eq = memchr(tok, '=', len);
	char value[OPTION_VALUE_MAX];
	const struct ofx_param *p;
	char expect[64];
	char key[64];
	size_t klen, vlen;

	if (!eq) {
		snprintf(msg, msg_len, "ia_params option '%.*s' is not key=value", (int)len, tok);
		return -EINVAL;
	}
	klen = (size_t)(eq - tok);
	vlen = len - klen - 1;
	if (klen >= sizeof(key)) {
		snprintf(msg, msg_len, "unknown ia_params option '%.*s'", (int)klen, tok);
		return -EINVAL;
	}
	memcpy(key, tok, klen);
	key[klen] = '\0';
	p = ofx_config_find_key(key);
	if (!p) {
		snprintf(msg, msg_len, "unknown ia_params option '%s'", key);
		return -EINVAL;
	}
	describe(p, expect, sizeof(expect));
	if (vlen >= sizeof(value)) {
		snprintf(msg, msg_len, "ia_params option %s: value too long (expected %s)", key,
			 expect);
		return -EINVAL;
	}
	memcpy(value, eq + 1, vlen);
	value[vlen] = '\0';
	if (ofx_config_set(p, value, cfg)) {
		snprintf(msg, msg_len, "ia_params option %s: bad value '%.200s' (expected %s)", key,
			 value, expect);
		return -EINVAL;
	}
	return 0;
}

static void apply_env(struct ofx_config *cfg)
{
	char expect[64], cur[OFX_CONFIG_STR_MAX];
	const char *v;
	size_t i;

	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		if (!p->env)
			continue;
		v = ofx_env_get(p->env);
		if (!v || !ofx_config_set(p, v, cfg))
			continue;
		describe(p, expect, sizeof(expect));
		ofx_config_format(p, cfg, cur, sizeof(cur));
		ofx_warn("ignoring %s='%s' (expected %s), keeping '%s'", p->env, v, expect, cur);
	}
}

int ofx_config_resolve(const char *options, struct ofx_config *cfg, char *why, size_t why_len)
{
	struct ofx_config tmp = *cfg;
	const char *p = options ? options : "";
	char msg[WHY_MAX];
	size_t len;
	int ret;

	if (why && why_len)
		why[0] = '\0';

	for (;;) {
		p += strspn(p, OPTION_BLANKS);
		if (!*p)
			break;
		len = strcspn(p, OPTION_BLANKS);
		ret = apply_option(p, len, &tmp, msg, sizeof(msg));
		if (ret) {
			ofx_err("%s", msg);
			if (why && why_len)
				snprintf(why, why_len, "%s", msg);
			return ret;
		}
		p += len;
	}
	apply_env(&tmp);
	*cfg = tmp;
	return 0;
}

void ofx_config_print(FILE *out, const struct ofx_config *cfg)
{
	struct ofx_config defaults;
	char cur[OFX_CONFIG_STR_MAX];
	size_t i;

	if (!cfg) {
		ofx_config_defaults(&defaults);
		cfg = &defaults;
	}
	fprintf(out, "# %-16s %-28s %-8s %-8s %-8s %s\n", "key", "environment", "type",
		"default", "value", "description");
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		ofx_config_format(p, cfg, cur, sizeof(cur));
		fprintf(out, "%-18s %-28s %-8s %-8s %-8s %s\n", p->key ? p->key : "-", p->env,
			type_names[p->type], p->defval[0] ? p->defval : "\"\"",
			cur[0] ? cur : "\"\"", p->doc);
	}
}
