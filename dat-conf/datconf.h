/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_DATCONF_H
#define OFX_DATCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * dat.conf editing for ofx-dat-conf (contract 1.1-1.3).  Everything except
 * ofx_datconf_read/write works on NUL-terminated text in memory, so that the
 * rules are unit-tested without touching /etc.  An edit keeps every line it
 * does not target byte for byte; the only other change it may make is a
 * newline added after a last line that had none, before an entry is
 * appended.
 *
 * Our entries are named ofx-v2-<device>[-p2p|-xrc] and written as
 *   NAME u2.0 nonthreadsafe default LIB dapl.2.0 "DEVICE 0 [key=value ...]" ""
 * (eight fields; nonthreadsafe and default because libdat2 never matches
 * anything else for a consumer built against the stock headers).
 */

#define OFX_DATCONF_FIELDS 8
#define OFX_DATCONF_FIELD_MAX 1024
#define OFX_DATCONF_PREFIX "ofx-v2-"
#define OFX_DATCONF_DEFAULT_LIB "libdaplofx.so.2"
#define OFX_DATCONF_DEFAULT_FILE "/etc/dat.conf"
/* libdat2 takes the path from here when set, and then only from here. */
#define OFX_DATCONF_OVERRIDE_ENV "DAT_OVERRIDE"

enum ofx_datconf_variant {
	OFX_DATCONF_PLAIN,	/* ofx-v2-<dev> */
	OFX_DATCONF_P2P,	/* ofx-v2-<dev>-p2p, adds p2p=on */
	OFX_DATCONF_XRC,	/* ofx-v2-<dev>-xrc, adds xrc=on */
	OFX_DATCONF_VARIANT_COUNT
};

/* One dat.conf line split the way libdat2 splits it. */
struct ofx_datconf_entry {
	int nfields;	/* fields seen, may exceed OFX_DATCONF_FIELDS */
	char field[OFX_DATCONF_FIELDS][OFX_DATCONF_FIELD_MAX];
};

/* What an edit did, for the tool's messages. */
struct ofx_datconf_change {
	unsigned int added;	/* 1 if the entry was appended */
	unsigned int replaced;	/* 1 if an entry of that name was rewritten in place */
	unsigned int unchanged;	/* 1 if an identical entry was already there */
	unsigned int removed;	/* lines deleted (duplicates, or by remove) */
};

/*
 * Splits `len` bytes of one line (no newline) into fields: blanks separate
 * fields, a token starting with '#' ends the line, a double-quoted field may
 * hold blanks and uses backslash to escape the next character.  Quotes are
 * removed.  Returns the number of fields (0 for a blank or comment line);
 * -EINVAL for an unterminated quote or a field of OFX_DATCONF_FIELD_MAX
 * bytes or more (libdat2 would skip such a line).
 */
int ofx_datconf_parse_line(const char *line, size_t len, struct ofx_datconf_entry *e);

/* "ofx-v2-<dev>" plus the variant's suffix; -ENAMETOOLONG if it does not fit. */
int ofx_datconf_name(const char *device, enum ofx_datconf_variant v, char *buf, size_t len);
const char *ofx_datconf_variant_str(enum ofx_datconf_variant v);
/* Parses plain|p2p|xrc; -EINVAL otherwise. */
int ofx_datconf_variant_parse(const char *s, enum ofx_datconf_variant *v_p);

/*
 * Builds the ia_params field "DEVICE 0 [key=value ...]": the variant's
 * option first, then `opts` in order.  Each option is checked against the
 * provider's config table (key known, value parses); a repeated key, an
 * option contradicting the variant, a character libdat2 or the provider
 * would split on, and a result the provider's own ia_params parser refuses
 * are errors.  Returns 0 or -EINVAL with the reason in `why`.
 */
int ofx_datconf_ia_params(const char *device, enum ofx_datconf_variant v, char *const *opts,
			  int nopts, char *buf, size_t len, char *why, size_t why_len);

/* The whole entry line, without a newline; fields quoted where needed. */
int ofx_datconf_format(const char *name, const char *lib, const char *ia_params, char *buf,
		       size_t len);

/* True when the entry belongs to libdaplofx: our name prefix or our library. */
bool ofx_datconf_is_ours(const struct ofx_datconf_entry *e);

/*
 * Adds or updates the entry `line` (as made by ofx_datconf_format) in
 * `text`.  No entry of that name: the line is appended.  The first entry of
 * that name is kept if it has the same fields, else rewritten in place; later
 * entries of that name are deleted.  *out_p is a new malloc'ed text (equal
 * to `text` when nothing changed).  Returns 0, -EINVAL if `line` does not
 * parse, -EPERM (with `why`) if an entry of that name belongs to another
 * provider, or -ENOMEM.
 */
int ofx_datconf_add(const char *text, const char *line, char **out_p,
		    struct ofx_datconf_change *change_p, char *why, size_t why_len);

/*
 * Deletes entries by IA name, or, when no entry has that name, every
 * variant of ofx-v2-<key>.  An entry of that name that is not ours is left
 * alone: -EPERM with `why`.  Nothing found is not an error (removed = 0).
 */
int ofx_datconf_remove(const char *text, const char *key, char **out_p,
		       struct ofx_datconf_change *change_p, char *why, size_t why_len);

/*
 * The record of what an edit added (ofx-dat-conf --record, kept by the
 * package under /var/lib/libdaplofx): the exact lines appended, one per
 * line, and, when the edit had to end the file's last line with a newline
 * first, the marker OFX_DATCONF_EOF_MARK followed by that last line, so that
 * taking the lines back out restores the file byte for byte.  The package's
 * postrm applies the same two rules with grep, sed and head.
 */
#define OFX_DATCONF_EOF_MARK "#ofx-dat-conf newline added after: "

/*
 * The record lines for appending `added` (whole lines) to `old_text`: the
 * marker first when `old_text` is not empty and lacks a final newline, then
 * `added`.  *out_p is malloc'ed.  0 or -ENOMEM.
 */
int ofx_datconf_record_lines(const char *old_text, const char *added, char **out_p);

/*
 * `record` with each line of `lines` it does not hold yet appended (a
 * newline first when its last line has none); *out_p is malloc'ed.  0 or
 * -ENOMEM.
 */
int ofx_datconf_record_merge(const char *record, const char *lines, char **out_p);

/*
 * Deletes from `text` every line that is byte for byte a line of `record`
 * (without the newlines): an entry edited since it was recorded is left
 * alone, it is no longer the line that was added.  Only our entries
 * (ofx_datconf_is_ours) are deleted; a recorded line that is not ours is
 * skipped.  When a line was deleted and the record has an end-of-file
 * marker whose line is now the last one, that line's newline goes too.
 * change_p->removed counts the lines deleted.  0 or -ENOMEM.
 */
int ofx_datconf_remove_lines(const char *text, const char *record, char **out_p,
			     struct ofx_datconf_change *change_p);

/* Line number (1-based) of the first entry named `name`, or 0. */
unsigned int ofx_datconf_find(const char *text, const char *name);

/*
 * Prints a unified diff (3 lines of context) between two texts, with
 * `label` on the ---/+++ lines.  Prints nothing when they are equal.
 */
void ofx_datconf_diff(FILE *out, const char *label, const char *old_text, const char *new_text);

/* The file libdat2 would read: $DAT_OVERRIDE if set, else /etc/dat.conf. */
const char *ofx_datconf_default_path(void);

/*
 * Reads a whole file.  -ENOENT when it does not exist, -EINVAL when it holds
 * a NUL byte, else -errno; `why` says which.
 */
int ofx_datconf_read(const char *path, char **text_p, char *why, size_t why_len);

/*
 * Replaces `path` atomically: a temporary file in the same directory with
 * the old file's mode (and owner, when run as root), fsync, rename.  A
 * symlink is followed and its target replaced.  A file with no write bit
 * set, or one this process may not write, is refused with -EACCES even for
 * root; a missing file is created with mode 0644.
 */
int ofx_datconf_write(const char *path, const char *text, char *why, size_t why_len);

#endif
