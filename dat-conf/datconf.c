/* SPDX-License-Identifier: BSD-2-Clause */
#include "datconf.h"

#include "config.h"
#include "env.h"
#include "log.h"
#include "obj.h"
#include "instance.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Unified diff context, and the largest LCS table the diff will build. */
#define DIFF_CONTEXT 3
#define DIFF_MAX_CELLS (16u * 1024 * 1024)
/* The provider keeps the device in a 256-byte field (struct ofx_provider). */
#define DEVICE_MAX 255
#define OPTION_MAX 512
#define KEY_MAX 64

static const char *const variant_names[] = {
	[OFX_DATCONF_PLAIN] = "plain",
	[OFX_DATCONF_P2P] = "p2p",
	[OFX_DATCONF_XRC] = "xrc",
};
static const char *const variant_suffix[] = {
	[OFX_DATCONF_PLAIN] = "",
	[OFX_DATCONF_P2P] = "-p2p",
	[OFX_DATCONF_XRC] = "-xrc",
};
/* The option each variant stands for; the provider's config table checks it like any other. */
static const char *const variant_option[] = {
	[OFX_DATCONF_PLAIN] = NULL,
	[OFX_DATCONF_P2P] = "p2p=on",
	[OFX_DATCONF_XRC] = "xrc=on",
};

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/*
 * The provider's parsers log what they refuse; here the refusal becomes the
 * tool's own message, so their log lines are switched off around the call.
 */
static unsigned int log_mute(void)
{
	unsigned int mask = ofx_log_subsys_mask;

	ofx_log_subsys_mask = 0;
	return mask;
}

static void log_unmute(unsigned int mask)
{
	ofx_log_subsys_mask = mask;
}

/* ---- a growable output text -------------------------------------------- */

struct text_buf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void text_add(struct text_buf *t, const char *s, size_t n)
{
	char *np;
	size_t cap;

	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		cap = t->cap ? t->cap : 256;
		while (cap < t->len + n + 1)
			cap *= 2;
		np = realloc(t->p, cap);
		if (!np) {
			t->failed = true;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static int text_finish(struct text_buf *t, char **out_p)
{
	if (!t->failed)
		text_add(t, "", 0);
	if (t->failed) {
		free(t->p);
		return -ENOMEM;
	}
	*out_p = t->p;
	return 0;
}

/* ---- lines and fields -------------------------------------------------- */

/* One line of a text: `len` bytes of content, then `eol` bytes of "\n" (0 at the end). */
struct line {
	const char *p;
	size_t len;
	size_t eol;
};

/* Steps to the line at *pos; false at the end of the text. */
static bool next_line(const char *text, size_t *pos, struct line *l)
{
	const char *s = text + *pos;
	const char *nl;

	if (!*s)
		return false;
	nl = strchr(s, '\n');
	l->p = s;
	l->len = nl ? (size_t)(nl - s) : strlen(s);
	l->eol = nl ? 1 : 0;
	*pos += l->len + l->eol;
	return true;
}

/* libdat2 separates fields with white space; '\r' of a CRLF file is one too. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int ofx_datconf_parse_line(const char *line, size_t len, struct ofx_datconf_entry *e)
{
	size_t i = 0;

	e->nfields = 0;
	for (;;) {
		char *dst = e->nfields < OFX_DATCONF_FIELDS ? e->field[e->nfields] : NULL;
		size_t n = 0;

		while (i < len && is_blank(line[i]))
			i++;
		if (i >= len || line[i] == '#')
			break;
		if (line[i] == '"') {
			for (i++;; i++) {
				char c;

				if (i >= len)
					return -EINVAL;
				c = line[i];
				if (c == '"') {
					i++;
					break;
				}
				if (c == '\\') {
					if (++i >= len)
						return -EINVAL;
					c = line[i];
				}
				if (n + 1 >= OFX_DATCONF_FIELD_MAX)
					return -EINVAL;
				if (dst)
					dst[n] = c;
				n++;
			}
		} else {
			for (; i < len && !is_blank(line[i]); i++) {
				if (n + 1 >= OFX_DATCONF_FIELD_MAX)
					return -EINVAL;
				if (dst)
					dst[n] = line[i];
				n++;
			}
		}
		if (dst)
			dst[n] = '\0';
		e->nfields++;
	}
	return e->nfields;
}

static bool entry_equal(const struct ofx_datconf_entry *a, const struct ofx_datconf_entry *b)
{
	int i;

	if (a->nfields != b->nfields)
		return false;
	for (i = 0; i < a->nfields && i < OFX_DATCONF_FIELDS; i++) {
		if (strcmp(a->field[i], b->field[i]))
			return false;
	}
	return true;
}

bool ofx_datconf_is_ours(const struct ofx_datconf_entry *e)
{
	const char *lib, *base;

	if (e->nfields < 1)
		return false;
	if (!strncmp(e->field[0], OFX_DATCONF_PREFIX, strlen(OFX_DATCONF_PREFIX)))
		return true;
	if (e->nfields < 5)
		return false;
	lib = e->field[4];
	base = strrchr(lib, '/');
	base = base ? base + 1 : lib;
	return !strncmp(base, "libdaplofx", strlen("libdaplofx"));
}

/* ---- names and fields we write ----------------------------------------- */

const char *ofx_datconf_variant_str(enum ofx_datconf_variant v)
{
	return (unsigned int)v < OFX_ARRAY_SIZE(variant_names) ? variant_names[v] : "?";
}

int ofx_datconf_variant_parse(const char *s, enum ofx_datconf_variant *v_p)
{
	size_t i;

	for (i = 0; i < OFX_ARRAY_SIZE(variant_names); i++) {
		if (!strcmp(s, variant_names[i])) {
			*v_p = (enum ofx_datconf_variant)i;
			return 0;
		}
	}
	return -EINVAL;
}

int ofx_datconf_name(const char *device, enum ofx_datconf_variant v, char *buf, size_t len)
{
	int n;

	if ((unsigned int)v >= OFX_DATCONF_VARIANT_COUNT)
		return -EINVAL;
	n = snprintf(buf, len, "%s%s%s", OFX_DATCONF_PREFIX, device, variant_suffix[v]);
	if (n < 0 || (size_t)n >= len || n >= DAT_NAME_MAX_LENGTH)
		return -ENAMETOOLONG;
	return 0;
}

/* Characters that would split a device or an option, or break the quoting. */
static const char *bad_char(const char *s)
{
	for (; *s; s++) {
		if (is_blank(*s) || *s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ||
		    *s == 0x7f)
			return s;
	}
	return NULL;
}

/* Optimal string alignment distance of two short strings, for "did you mean". */
static unsigned int edit_distance(const char *a, const char *b)
{
	unsigned int d[KEY_MAX + 1][KEY_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > KEY_MAX || lb > KEY_MAX)
		return UINT_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned int)j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			unsigned int cost = a[i - 1] != b[j - 1];
			unsigned int best = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* The environment-only row whose variable is DAPL_OFX_<key> (any case), or NULL. */
static const struct ofx_param *env_only_row(const char *key)
{
	static const char env_prefix[] = "DAPL_OFX_";
	size_t i;

	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		if (!p->key && !strncmp(p->env, env_prefix, sizeof(env_prefix) - 1) &&
		    !strcasecmp(p->env + sizeof(env_prefix) - 1, key))
			return p;
	}
	return NULL;
}

/* Explains an unknown key: a near miss, an environment name, or an env-only knob. */
static void unknown_key(const char *key, char *why, size_t why_len)
{
	const struct ofx_param *best = NULL;
	unsigned int best_d = 3, d;
	size_t i;

	if (env_only_row(key)) {
		say(why, why_len, "option '%s' cannot be set in dat.conf, only through %s", key,
		    env_only_row(key)->env);
		return;
	}
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		if (!p->key)
			continue;
		if (!strcasecmp(p->env, key)) {
			best = p;
			break;
		}
		d = edit_distance(key, p->key);
		if (!strcasecmp(key, p->key))
			d = 0;
		if (d < best_d) {
			best_d = d;
			best = p;
		}
	}
	if (best)
		say(why, why_len, "unknown option '%s' (did you mean '%s'?)", key, best->key);
	else
		say(why, why_len, "unknown option '%s' (ofx-info -c lists them)", key);
}

/* Checks one key=value against the config table; *p_p gets its row. */
static int check_option(const char *opt, struct ofx_config *scratch,
			const struct ofx_param **p_p, char *why, size_t why_len)
{
	const char *eq = strchr(opt, '=');
	const struct ofx_param *p;
	char key[KEY_MAX + 1];
	size_t klen;

	if (!eq || eq == opt) {
		say(why, why_len, "option '%s' is not key=value", opt);
		return -EINVAL;
	}
	if (strlen(opt) >= OPTION_MAX) {
		say(why, why_len, "option '%.40s...' is too long", opt);
		return -EINVAL;
	}
	if (bad_char(opt)) {
		say(why, why_len, "option '%s' contains a blank, quote, backslash or control "
		    "character", opt);
		return -EINVAL;
	}
	klen = (size_t)(eq - opt);
	if (klen > KEY_MAX) {
		say(why, why_len, "unknown option '%.*s'", (int)klen, opt);
		return -EINVAL;
	}
	memcpy(key, opt, klen);
	key[klen] = '\0';
	p = ofx_config_find_key(key);
	if (!p) {
		unknown_key(key, why, why_len);
		return -EINVAL;
	}
	if (ofx_config_set(p, eq + 1, scratch)) {
		struct ofx_config tmp;
		unsigned int mask = log_mute();

		/* config.c words the expected values; take its message as is. */
		ofx_config_defaults(&tmp);
		if (ofx_config_resolve(opt, &tmp, why, why_len) == 0)
			say(why, why_len, "option '%s': bad value", opt);
		log_unmute(mask);
		return -EINVAL;
	}
	*p_p = p;
	return 0;
}

/* Same row, same resulting value (p2p=on and p2p=yes are one setting). */
static bool same_value(const struct ofx_param *p, const char *a, const char *b)
{
	char va[OFX_CONFIG_STR_MAX], vb[OFX_CONFIG_STR_MAX];
	struct ofx_config ca, cb;

	memset(&ca, 0, sizeof(ca));
	memset(&cb, 0, sizeof(cb));
	if (ofx_config_set(p, a, &ca) || ofx_config_set(p, b, &cb))
		return false;
	ofx_config_format(p, &ca, va, sizeof(va));
	ofx_config_format(p, &cb, vb, sizeof(vb));
	return !strcmp(va, vb);
}

int ofx_datconf_ia_params(const char *device, enum ofx_datconf_variant v, char *const *opts,
			  int nopts, char *buf, size_t len, char *why, size_t why_len)
{
	const struct ofx_param *rows[OFX_DATCONF_FIELD_MAX / 2];
	const char *vals[OFX_ARRAY_SIZE(rows)];
	const char *implied;
	struct ofx_provider *prov;
	struct ofx_config scratch;
	size_t nrows = 0, pos, i;
	unsigned int mask;
	int k, n, ret;

	if ((unsigned int)v >= OFX_DATCONF_VARIANT_COUNT || nopts < 0)
		return -EINVAL;
	if (!device || !*device) {
		say(why, why_len, "no device given");
		return -EINVAL;
	}
	if (bad_char(device) || device[0] == '#' || device[0] == '-') {
		say(why, why_len, "device '%s' contains a blank, quote, backslash or control "
		    "character, or starts with '#' or '-'", device);
		return -EINVAL;
	}
	if (strlen(device) > DEVICE_MAX) {
		say(why, why_len, "device name longer than %d characters", DEVICE_MAX);
		return -EINVAL;
	}
	if ((size_t)nopts + 1 > OFX_ARRAY_SIZE(rows)) {
		say(why, why_len, "too many options");
		return -EINVAL;
	}

	n = snprintf(buf, len, "%s 0", device);
	if (n < 0 || (size_t)n >= len)
		goto too_long;
	pos = (size_t)n;

	ofx_config_defaults(&scratch);
	implied = variant_option[v];
	for (k = implied ? -1 : 0; k < nopts; k++) {
		const char *opt = k < 0 ? implied : opts[k];
		const struct ofx_param *p;

		ret = check_option(opt, &scratch, &p, why, why_len);
		if (ret)
			return ret;
		for (i = 0; i < nrows && rows[i] != p; i++)
			;
		if (i < nrows) {
			if (i == 0 && implied && same_value(p, vals[0], strchr(opt, '=') + 1))
				continue;	/* repeats what the variant says */
			if (i == 0 && implied)
				say(why, why_len, "option '%s' contradicts --variant %s", opt,
				    ofx_datconf_variant_str(v));
			else
				say(why, why_len, "option '%s' given twice", p->key);
			return -EINVAL;
		}
		rows[nrows] = p;
		vals[nrows++] = strchr(opt, '=') + 1;
		n = snprintf(buf + pos, len - pos, " %s", opt);
		if (n < 0 || (size_t)n >= len - pos)
			goto too_long;
		pos += (size_t)n;
	}

	/* Last word to the provider's own parser, exactly as dat_provider_init runs it. */
	prov = calloc(1, sizeof(*prov));
	if (!prov)
		return -ENOMEM;
	snprintf(prov->name, sizeof(prov->name), "ofx-dat-conf");
	mask = log_mute();
	ret = ofx_ia_params_split(buf, prov);
	if (!ret) {
		ofx_config_defaults(&scratch);
		ret = ofx_config_resolve(prov->options, &scratch, why, why_len);
	} else {
		say(why, why_len, "the provider would refuse ia_params \"%s\"", buf);
	}
	log_unmute(mask);
	free(prov);
	return ret ? -EINVAL : 0;

too_long:
	say(why, why_len, "ia_params longer than %zu characters", len - 1);
	return -EINVAL;
}

/* Appends one field, in double quotes when `quote` or when it needs them. */
static bool put_field(char *buf, size_t len, size_t *pos, const char *v, bool quote)
{
	const char *s;

	if (!*v || strpbrk(v, " \t\r\v\f\"\\#"))
		quote = true;
	if (*pos && *pos < len)
		buf[(*pos)++] = ' ';
	if (quote && *pos < len)
		buf[(*pos)++] = '"';
	for (s = v; *s; s++) {
		if (quote && (*s == '"' || *s == '\\') && *pos < len)
			buf[(*pos)++] = '\\';
		if (*pos < len)
			buf[(*pos)++] = *s;
	}
	if (quote && *pos < len)
		buf[(*pos)++] = '"';
	return *pos < len;
}

int ofx_datconf_format(const char *name, const char *lib, const char *ia_params, char *buf,
		       size_t len)
{
	size_t pos = 0;
	bool ok;

	if (!len)
		return -ENAMETOOLONG;
	ok = put_field(buf, len, &pos, name, false) &&
	     put_field(buf, len, &pos, "u2.0", false) &&
	     put_field(buf, len, &pos, "nonthreadsafe", false) &&
	     put_field(buf, len, &pos, "default", false) &&
	     put_field(buf, len, &pos, lib, false) &&
	     put_field(buf, len, &pos, "dapl.2.0", false) &&
	     put_field(buf, len, &pos, ia_params, true) &&
	     put_field(buf, len, &pos, "", true);
	if (!ok) {
		buf[len - 1] = '\0';
		return -ENAMETOOLONG;
	}
	buf[pos] = '\0';
	return 0;
}

/* ---- edits -------------------------------------------------------------- */

unsigned int ofx_datconf_find(const char *text, const char *name)
{
	struct ofx_datconf_entry *e = malloc(sizeof(*e));
	unsigned int lineno = 0, found = 0;
	size_t pos = 0;
	struct line l;

	if (!e)
		return 0;
	while (!found && next_line(text, &pos, &l)) {
		lineno++;
		ofx_datconf_parse_line(l.p, l.len, e);
		if (e->nfields >= 1 && !strcmp(e->field[0], name))
			found = lineno;
	}
	free(e);
	return found;
}

int ofx_datconf_add(const char *text, const char *line, char **out_p,
		    struct ofx_datconf_change *change_p, char *why, size_t why_len)
{
	struct ofx_datconf_change change = { 0 };
	struct ofx_datconf_entry *want, *cur;
	struct text_buf out = { 0 };
	bool seen = false;
	size_t pos = 0;
	struct line l;
	int ret;

	want = malloc(2 * sizeof(*want));
	if (!want)
		return -ENOMEM;
	cur = want + 1;
	if (ofx_datconf_parse_line(line, strlen(line), want) < 1 || strchr(line, '\n')) {
		say(why, why_len, "not a dat.conf entry: %s", line);
		ret = -EINVAL;
		goto out;
	}

	while (next_line(text, &pos, &l)) {
		/* a malformed line still counts as ours when its name field is complete */
		int parsed = ofx_datconf_parse_line(l.p, l.len, cur);

		if (cur->nfields < 1 || strcmp(cur->field[0], want->field[0])) {
			text_add(&out, l.p, l.len + l.eol);
			continue;
		}
		if (!ofx_datconf_is_ours(cur)) {
			say(why, why_len, "entry '%s' uses %s, not libdaplofx: not replacing it",
			    cur->field[0], cur->nfields >= 5 ? cur->field[4] : "another library");
			free(out.p);
			ret = -EPERM;
			goto out;
		}
		if (seen) {
			change.removed++;
			continue;
		}
		seen = true;
		if (parsed >= 0 && entry_equal(cur, want)) {
			change.unchanged = 1;
			text_add(&out, l.p, l.len + l.eol);
			continue;
		}
		change.replaced = 1;
		text_add(&out, line, strlen(line));
		/* keep a CRLF line's "\r" */
		if (l.len && l.p[l.len - 1] == '\r')
			text_add(&out, "\r", 1);
		text_add(&out, "\n", 1);
	}
	if (!seen) {
		if (pos && text[pos - 1] != '\n')
			text_add(&out, "\n", 1);
		text_add(&out, line, strlen(line));
		text_add(&out, "\n", 1);
		change.added = 1;
	}
	ret = text_finish(&out, out_p);
	if (!ret && change_p)
		*change_p = change;
out:
	free(want);
	return ret;
}

int ofx_datconf_remove(const char *text, const char *key, char **out_p,
		       struct ofx_datconf_change *change_p, char *why, size_t why_len)
{
	char names[OFX_DATCONF_VARIANT_COUNT][DAT_NAME_MAX_LENGTH];
	struct ofx_datconf_change change = { 0 };
	struct text_buf out = { 0 };
	struct ofx_datconf_entry *e;
	size_t nnames = 0, pos = 0, i;
	bool by_name = false;
	struct line l;
	int ret = 0;

	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;

	/* An exact IA name first; entries of other providers are never touched. */
	while (next_line(text, &pos, &l)) {
		ofx_datconf_parse_line(l.p, l.len, e);
		if (e->nfields < 1 || strcmp(e->field[0], key))
			continue;
		by_name = true;
		if (!ofx_datconf_is_ours(e)) {
			say(why, why_len, "entry '%s' uses %s, not libdaplofx: not removing it",
			    key, e->nfields >= 5 ? e->field[4] : "another library");
			ret = -EPERM;
			goto out;
		}
	}
	if (by_name) {
		snprintf(names[nnames++], sizeof(names[0]), "%s", key);
	} else {
		for (i = 0; i < OFX_DATCONF_VARIANT_COUNT; i++) {
			if (!ofx_datconf_name(key, (enum ofx_datconf_variant)i, names[nnames],
					      sizeof(names[0])))
				nnames++;
		}
	}

	pos = 0;
	while (next_line(text, &pos, &l)) {
		bool drop = false;

		ofx_datconf_parse_line(l.p, l.len, e);
		for (i = 0; e->nfields >= 1 && i < nnames && !drop; i++)
			drop = !strcmp(e->field[0], names[i]);
		if (drop)
			change.removed++;
		else
			text_add(&out, l.p, l.len + l.eol);
	}
	ret = text_finish(&out, out_p);
	if (!ret && change_p)
		*change_p = change;
out:
	free(e);
	return ret;
}

/* True when `text` has a line equal to l (newline and a CRLF's "\r" excluded on both sides). */
static bool has_line(const char *text, const struct line *l)
{
	size_t pos = 0, want = l->len;
	struct line t;

	if (want && l->p[want - 1] == '\r')
		want--;
	while (next_line(text, &pos, &t)) {
		size_t len = t.len && t.p[t.len - 1] == '\r' ? t.len - 1 : t.len;

		if (len == want && !memcmp(t.p, l->p, want))
			return true;
	}
	return false;
}

int ofx_datconf_record_lines(const char *old_text, const char *added, char **out_p)
{
	struct text_buf out = { 0 };
	size_t len = strlen(old_text);

	if (len && old_text[len - 1] != '\n') {
		const char *last = strrchr(old_text, '\n');

		last = last ? last + 1 : old_text;
		text_add(&out, OFX_DATCONF_EOF_MARK, strlen(OFX_DATCONF_EOF_MARK));
		text_add(&out, last, strlen(last));
		text_add(&out, "\n", 1);
	}
	text_add(&out, added, strlen(added));
	return text_finish(&out, out_p);
}

/* Drops the final newline when the last line is the one an EOF marker of `record` names. */
static void undo_eof_newline(struct text_buf *out, const char *record)
{
	size_t mark_len = strlen(OFX_DATCONF_EOF_MARK), pos = 0, start;
	struct line l;

	if (!out->p || !out->len || out->p[out->len - 1] != '\n')
		return;
	for (start = out->len - 1; start && out->p[start - 1] != '\n'; start--)
		;
	while (next_line(record, &pos, &l)) {
		if (l.len < mark_len || memcmp(l.p, OFX_DATCONF_EOF_MARK, mark_len))
			continue;
		if (l.len - mark_len == out->len - 1 - start &&
		    !memcmp(l.p + mark_len, out->p + start, l.len - mark_len)) {
			out->p[--out->len] = '\0';
			return;
		}
	}
}

int ofx_datconf_record_merge(const char *record, const char *lines, char **out_p)
{
	struct text_buf out = { 0 };
	size_t pos = 0, len = strlen(record);
	struct line l;
	int ret;

	text_add(&out, record, len);
	while (next_line(lines, &pos, &l)) {
		if (!l.len || has_line(out.p ? out.p : "", &l))
			continue;
		if (out.len && out.p[out.len - 1] != '\n')
			text_add(&out, "\n", 1);
		text_add(&out, l.p, l.len);
		text_add(&out, "\n", 1);
	}
	ret = text_finish(&out, out_p);
	return ret;
}

int ofx_datconf_remove_lines(const char *text, const char *record, char **out_p,
			     struct ofx_datconf_change *change_p)
{
	struct ofx_datconf_change change = { 0 };
	struct text_buf out = { 0 };
	struct ofx_datconf_entry *e;
	size_t pos = 0;
	struct line l;
	int ret;

	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	while (next_line(text, &pos, &l)) {
		if (l.len && has_line(record, &l) && ofx_datconf_parse_line(l.p, l.len, e) > 0 &&
		    ofx_datconf_is_ours(e)) {
			change.removed++;
			continue;
		}
		text_add(&out, l.p, l.len + l.eol);
	}
	free(e);
	if (change.removed && !out.failed)
		undo_eof_newline(&out, record);
	ret = text_finish(&out, out_p);
	if (!ret && change_p)
		*change_p = change;
	return ret;
}

/* ---- diff --------------------------------------------------------------- */

struct diff_op {
	char op;	/* ' ', '-' or '+' */
	size_t a, b;	/* line index in old / new before this op */
};

static size_t split_lines(const char *text, struct line **lines_p)
{
	size_t n = 0, cap = 0, pos = 0;
	struct line l, *lines = NULL, *nl;

	while (next_line(text, &pos, &l)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			nl = realloc(lines, cap * sizeof(*lines));
			if (!nl) {
				free(lines);
				*lines_p = NULL;
				return SIZE_MAX;
			}
			lines = nl;
		}
		lines[n++] = l;
	}
	*lines_p = lines;
	return n;
}

static bool line_eq(const struct line *x, const struct line *y)
{
	return x->len == y->len && !memcmp(x->p, y->p, x->len);
}

/*
 * Edit script of old[0..na) -> new[0..nb): common head and tail first, then
 * an LCS over the middle (whole-middle replacement if that table would be
 * too big).  Returns the number of ops written to `ops` (room for na + nb).
 */
static size_t diff_script(const struct line *a, size_t na, const struct line *b, size_t nb,
			  struct diff_op *ops)
{
	size_t head = 0, tail = 0, ma, mb, i, j, n = 0;
	uint32_t *t = NULL;

	while (head < na && head < nb && line_eq(&a[head], &b[head]))
		head++;
	while (tail < na - head && tail < nb - head &&
	       line_eq(&a[na - 1 - tail], &b[nb - 1 - tail]))
		tail++;
	ma = na - head - tail;
	mb = nb - head - tail;
	if (ma && mb && (ma + 1) * (mb + 1) <= DIFF_MAX_CELLS)
		t = calloc((ma + 1) * (mb + 1), sizeof(*t));
	/* t[i][j] = LCS length of a[head+i..] and b[head+j..] */
	if (t) {
		for (i = ma; i-- > 0;) {
			for (j = mb; j-- > 0;) {
				uint32_t *c = &t[i * (mb + 1) + j];

				if (line_eq(&a[head + i], &b[head + j]))
					*c = t[(i + 1) * (mb + 1) + j + 1] + 1;
				else
					*c = t[(i + 1) * (mb + 1) + j] > t[i * (mb + 1) + j + 1] ?
					     t[(i + 1) * (mb + 1) + j] : t[i * (mb + 1) + j + 1];
			}
		}
	}
	for (i = 0; i < head; i++)
		ops[n++] = (struct diff_op){ ' ', i, i };
	i = 0;
	j = 0;
	while (i < ma || j < mb) {
		if (t && i < ma && j < mb && line_eq(&a[head + i], &b[head + j])) {
			ops[n++] = (struct diff_op){ ' ', head + i, head + j };
			i++;
			j++;
		} else if (i < ma && (j >= mb || !t ||
				      t[(i + 1) * (mb + 1) + j] >= t[i * (mb + 1) + j + 1])) {
			ops[n++] = (struct diff_op){ '-', head + i, head + j };
			i++;
		} else {
			ops[n++] = (struct diff_op){ '+', head + i, head + j };
			j++;
		}
	}
	for (i = 0; i < tail; i++)
		ops[n++] = (struct diff_op){ ' ', head + ma + i, head + mb + i };
	free(t);
	return n;
}

static void print_line(FILE *out, char op, const struct line *l)
{
	fprintf(out, "%c%.*s\n", op, (int)l->len, l->p);
	if (!l->eol)
		fprintf(out, "\\ No newline at end of file\n");
}

/* "start,count" of a hunk side; an empty side names the line before it. */
static void print_range(FILE *out, char sign, size_t first, size_t count)
{
	fprintf(out, "%c%zu,%zu", sign, count ? first + 1 : first, count);
}

void ofx_datconf_diff(FILE *out, const char *label, const char *old_text, const char *new_text)
{
	struct line *a = NULL, *b = NULL;
	size_t na, nb, nops, k, start, end, ca, cb;
	struct diff_op *ops = NULL;
	bool header = false;

	na = split_lines(old_text, &a);
	nb = split_lines(new_text, &b);
	if (na == SIZE_MAX || nb == SIZE_MAX)
		goto out;
	ops = malloc((na + nb + 1) * sizeof(*ops));
	if (!ops)
		goto out;
	nops = diff_script(a, na, b, nb, ops);

	for (k = 0; k < nops;) {
		size_t last;

		if (ops[k].op == ' ') {
			k++;
			continue;
		}
		/* grow the hunk while the next change is within 2 * context */
		start = k > DIFF_CONTEXT ? k - DIFF_CONTEXT : 0;
		last = k;
		for (end = k; end < nops; end++) {
			if (ops[end].op != ' ')
				last = end;
			else if (end - last > 2 * DIFF_CONTEXT)
				break;
		}
		end = last + DIFF_CONTEXT + 1 < nops ? last + DIFF_CONTEXT + 1 : nops;

		if (!header) {
			fprintf(out, "--- %s\n+++ %s\n", label, label);
			header = true;
		}
		for (ca = cb = 0, k = start; k < end; k++) {
			ca += ops[k].op != '+';
			cb += ops[k].op != '-';
		}
		fprintf(out, "@@ ");
		print_range(out, '-', ops[start].a, ca);
		fprintf(out, " ");
		print_range(out, '+', ops[start].b, cb);
		fprintf(out, " @@\n");
		for (k = start; k < end; k++) {
			/* context comes from the new side: a newline the edit adds is no change */
			if (ops[k].op == '-')
				print_line(out, '-', &a[ops[k].a]);
			else
				print_line(out, ops[k].op, &b[ops[k].b]);
		}
	}
out:
	free(ops);
	free(a);
	free(b);
}

/* ---- files -------------------------------------------------------------- */

const char *ofx_datconf_default_path(void)
{
	const char *p = ofx_env_get(OFX_DATCONF_OVERRIDE_ENV);

	return p ? p : OFX_DATCONF_DEFAULT_FILE;
}

int ofx_datconf_read(const char *path, char **text_p, char *why, size_t why_len)
{
	struct text_buf t = { 0 };
	char chunk[8192];
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		say(why, why_len, "cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			say(why, why_len, "cannot read %s: %s", path, strerror(-ret));
			break;
		}
		if (!n)
			break;
		if (memchr(chunk, '\0', (size_t)n)) {
			ret = -EINVAL;
			say(why, why_len, "%s holds a NUL byte: not a dat.conf file", path);
			break;
		}
		text_add(&t, chunk, (size_t)n);
	}
	close(fd);
	if (!ret)
		ret = text_finish(&t, text_p);
	else
		free(t.p);
	if (ret == -ENOMEM)
		say(why, why_len, "out of memory reading %s", path);
	return ret;
}

static int write_all(int fd, const char *s, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

int ofx_datconf_write(const char *path, const char *text, char *why, size_t why_len)
{
	char target[PATH_MAX], tmp[PATH_MAX + 32];
	const char *slash, *base;
	mode_t mode = 0644;
	bool exists = false;
	struct stat st;
	int fd, ret, n;

	/* Follow a symlink so that the link stays and its target is replaced. */
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		if (!realpath(path, target)) {
			ret = -errno;
			say(why, why_len, "cannot follow the symlink %s: %s", path,
			    strerror(-ret));
			return ret;
		}
	} else if (snprintf(target, sizeof(target), "%s", path) >= (int)sizeof(target)) {
		say(why, why_len, "path too long: %s", path);
		return -ENAMETOOLONG;
	}

	if (!stat(target, &st)) {
		exists = true;
		if (!S_ISREG(st.st_mode)) {
			say(why, why_len, "%s is not a regular file", target);
			return -EINVAL;
		}
		/* rename() only needs the directory: honour the file's own mode, even as root */
		if (!(st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH))) {
			say(why, why_len, "%s is read-only (mode %04o): not changed", target,
			    (unsigned int)(st.st_mode & 07777));
			return -EACCES;
		}
		if (access(target, W_OK)) {
			ret = -errno;
			say(why, why_len, "%s is not writable: %s", target, strerror(-ret));
			return ret;
		}
		mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		ret = -errno;
		say(why, why_len, "cannot stat %s: %s", target, strerror(-ret));
		return ret;
	}

	slash = strrchr(target, '/');
	base = slash ? slash + 1 : target;
	n = snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", slash ? (int)(slash - target + 1) : 0,
		     target, base);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		say(why, why_len, "path too long: %s", target);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		say(why, why_len, "cannot create a temporary file next to %s: %s", target,
		    strerror(-ret));
		return ret;
	}
	if (fchmod(fd, mode)) {
		ret = -errno;
		say(why, why_len, "cannot set mode %04o on %s: %s", (unsigned int)mode, tmp,
		    strerror(-ret));
		goto err_unlink;
	}
	if (exists && geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid)) {
		ret = -errno;
		say(why, why_len, "cannot keep the owner of %s: %s", target, strerror(-ret));
		goto err_unlink;
	}
	ret = write_all(fd, text, strlen(text));
	if (!ret && fsync(fd))
		ret = -errno;
	if (ret) {
		say(why, why_len, "cannot write %s: %s", tmp, strerror(-ret));
		goto err_unlink;
	}
	if (close(fd)) {
		fd = -1;
		ret = -errno;
		say(why, why_len, "cannot write %s: %s", tmp, strerror(-ret));
		goto err_unlink;
	}
	fd = -1;
	if (rename(tmp, target)) {
		ret = -errno;
		say(why, why_len, "cannot replace %s: %s", target, strerror(-ret));
		goto err_unlink;
	}
	return 0;

err_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return ret;
}
