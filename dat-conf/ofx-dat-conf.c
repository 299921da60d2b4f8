/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx-dat-conf: lists the RDMA devices with the IA names libdaplofx would
 * use for them, and adds or removes libdaplofx entries in a dat.conf without
 * touching anything else in it.  `detect` adds the entries of the devices
 * present; with --record, the lines an edit adds are kept in a record file
 * that `remove --record` takes back (the package's postinst and the manual
 * undo).  The editing rules live in datconf.c.
 */
#include "config.h"
#include "datconf.h"
#include "devices.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHY_MAX 1024
#define LINE_MAX_LEN (OFX_DATCONF_FIELDS * OFX_DATCONF_FIELD_MAX)

enum { OPT_VARIANT = 0x100, OPT_RECORD };

enum cmd { CMD_LIST, CMD_ADD, CMD_DETECT, CMD_REMOVE };

struct args {
	const char *file;
	const char *lib;
	const char *record;	/* --record: where added lines are kept, or NULL */
	enum ofx_datconf_variant variant;
	bool dry_run;
	bool lib_set;
	int nargs;
	char **args;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ofx-dat-conf list [--file F]\n"
		"       ofx-dat-conf add [--file F] [--dry-run] [--lib PATH]\n"
		"                        [--variant plain|p2p|xrc] DEVICE [KEY=VALUE...]\n"
		"       ofx-dat-conf detect [--file F] [--dry-run] [--lib PATH] [--record R]\n"
		"                           [NETDEV...]\n"
		"       ofx-dat-conf remove [--file F] [--dry-run] NAME|DEVICE\n"
		"       ofx-dat-conf remove [--file F] [--dry-run] --record R\n"
		"  list     RDMA devices, transport, XRC support, and the IA names to use\n"
		"  add      add or update the entry ofx-v2-DEVICE[-p2p|-xrc]:\n"
		"           NAME u2.0 nonthreadsafe default LIB dapl.2.0 \"DEVICE 0 OPTS\" \"\"\n"
		"           OPTS: the KEY=VALUE provider options (ofx-info -c lists them)\n"
		"  detect   add the plain entry of every RDMA port's netdev (or of each\n"
		"           NETDEV given) that has no entry of that name yet\n"
		"  remove   delete the entry NAME, or every ofx-v2-DEVICE variant; with\n"
		"           --record, the lines recorded in R that are still as written\n"
		"  -f, --file F     the dat.conf to edit (default: $DAT_OVERRIDE, else %s)\n"
		"  -n, --dry-run    print the change as a diff and write nothing\n"
		"  -l, --lib PATH   library field of the entry (default %s)\n"
		"      --variant V  plain (default), p2p (adds p2p=on) or xrc (adds xrc=on)\n"
		"      --record R   add, detect: keep the lines added in R; remove: take\n"
		"                   them back out, then delete R\n"
		"  -h, --help       this text\n"
		"Exit status: 0 done or nothing to do, 1 error, 2 usage error.\n",
		OFX_DATCONF_DEFAULT_FILE, OFX_DATCONF_DEFAULT_LIB);
}

static int parse_args(int argc, char **argv, enum cmd cmd, struct args *a)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "lib", required_argument, NULL, 'l' },
		{ "variant", required_argument, NULL, OPT_VARIANT },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->lib = OFX_DATCONF_DEFAULT_LIB;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:nl:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			a->file = optarg;
			break;
		case 'n':
			a->dry_run = true;
			break;
		case 'l':
			a->lib = optarg;
			a->lib_set = true;
			break;
		case OPT_VARIANT:
			if (ofx_datconf_variant_parse(optarg, &a->variant)) {
				fprintf(stderr, "ofx-dat-conf: unknown variant '%s' "
					"(plain, p2p or xrc)\n", optarg);
				return -EINVAL;
			}
			break;
		case OPT_RECORD:
			a->record = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (cmd == CMD_LIST && (a->dry_run || a->lib_set || a->record ||
				a->variant != OFX_DATCONF_PLAIN)) {
		fprintf(stderr, "ofx-dat-conf: list takes only --file\n");
		return -EINVAL;
	}
	if (cmd == CMD_DETECT && a->variant != OFX_DATCONF_PLAIN) {
		fprintf(stderr, "ofx-dat-conf: detect writes plain entries only\n");
		return -EINVAL;
	}
	if (cmd == CMD_REMOVE && a->lib_set) {
		fprintf(stderr, "ofx-dat-conf: remove takes no --lib\n");
		return -EINVAL;
	}
	if (a->record && !a->record[0]) {
		fprintf(stderr, "ofx-dat-conf: --record needs a file name\n");
		return -EINVAL;
	}
	if (!a->file)
		a->file = ofx_datconf_default_path();
	a->nargs = argc - optind;
	a->args = argv + optind;
	return 0;
}

/* The dat.conf text, "" for a missing file (*missing_p set). */
static int load(const char *file, char **text_p, bool *missing_p)
{
	char why[WHY_MAX];
	int ret;

	*missing_p = false;
	ret = ofx_datconf_read(file, text_p, why, sizeof(why));
	if (ret == -ENOENT) {
		*missing_p = true;
		*text_p = strdup("");
		return *text_p ? 0 : -ENOMEM;
	}
	if (ret)
		fprintf(stderr, "ofx-dat-conf: %s\n", why);
	return ret;
}

/*
 * Appends `added` (lines) to the record file; *old_p gets its previous text
 * (NULL when it did not exist) so that a failed dat.conf write can put it
 * back.  The record is written first: a recorded line that never made it
 * into dat.conf is harmless to `remove --record`, a line added but not
 * recorded would stay behind.
 */
static int record_add(const char *path, const char *conf_text, const char *added, char **old_p)
{
	char why[WHY_MAX], *old = NULL, *lines = NULL, *merged = NULL;
	int ret;

	*old_p = NULL;
	ret = ofx_datconf_read(path, &old, why, sizeof(why));
	if (ret && ret != -ENOENT) {
		fprintf(stderr, "ofx-dat-conf: record: %s\n", why);
		return ret;
	}
	ret = ofx_datconf_record_lines(conf_text, added, &lines);
	if (!ret)
		ret = ofx_datconf_record_merge(old ? old : "", lines, &merged);
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: out of memory\n");
		goto out;
	}
	ret = ofx_datconf_write(path, merged, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: record: %s\n", why);
		goto out;
	}
	*old_p = old;
	old = NULL;
out:
	free(old);
	free(lines);
	free(merged);
	return ret;
}

/* Puts the record back as it was before record_add (old NULL: it did not exist). */
static void record_restore(const char *path, const char *old)
{
	char why[WHY_MAX];

	if (!old ? unlink(path) : ofx_datconf_write(path, old, why, sizeof(why)))
		fprintf(stderr, "ofx-dat-conf: warning: could not restore the record %s; it may "
			"list lines that are not in the file\n", path);
}

/*
 * Shows or writes the new text; `added` holds the lines the edit appended,
 * kept in the record file when --record is given.  Returns the exit status.
 */
static int commit(const struct args *a, const char *old_text, const char *new_text,
		  bool missing, const char *what, const char *added)
{
	bool recording = a->record && added && added[0];
	char why[WHY_MAX], *old_record = NULL;

	if (!strcmp(old_text, new_text)) {
		printf("%s: %s: nothing to change\n", a->file, what);
		return 0;
	}
	if (a->dry_run) {
		ofx_datconf_diff(stdout, a->file, old_text, new_text);
		if (recording)
			printf("# and record the added lines in %s\n", a->record);
		return 0;
	}
	if (recording && record_add(a->record, old_text, added, &old_record))
		return 1;
	if (ofx_datconf_write(a->file, new_text, why, sizeof(why))) {
		fprintf(stderr, "ofx-dat-conf: %s\n", why);
		if (recording)
			record_restore(a->record, old_record);
		free(old_record);
		return 1;
	}
	free(old_record);
	printf("%s: %s%s\n", a->file, what, missing ? " (new file)" : "");
	if (recording)
		printf("%s: recorded\n", a->record);
	return 0;
}

/* ia_open resolves the device locally (contract 4.1): warn when it cannot here. */
static void check_device_here(const char *device)
{
	unsigned char addr[sizeof(struct in6_addr)];
	char host[256];

	if (if_nametoindex(device) || inet_pton(AF_INET, device, addr) == 1 ||
	    inet_pton(AF_INET6, device, addr) == 1)
		return;
	if (!gethostname(host, sizeof(host)) && !strcmp(host, device))
		return;
	fprintf(stderr, "ofx-dat-conf: warning: '%s' is not a network interface, IP address or "
		"the name of this host; ia_open will fail here unless the file is meant for "
		"another host\n", device);
}

static int cmd_add(const struct args *a)
{
	char ia_params[OFX_DATCONF_FIELD_MAX], name[DAT_NAME_MAX_LENGTH], why[WHY_MAX];
	struct ofx_datconf_change change;
	char *text = NULL, *out = NULL, *line;
	char what[DAT_NAME_MAX_LENGTH + 64];
	bool missing;
	int ret, status = 1;

	if (a->nargs < 1) {
		fprintf(stderr, "ofx-dat-conf: add needs a DEVICE\n");
		usage(stderr);
		return 2;
	}
	if (!a->lib[0] || strchr(a->lib, '\n')) {
		fprintf(stderr, "ofx-dat-conf: --lib needs a library path\n");
		return 2;
	}
	ret = ofx_datconf_ia_params(a->args[0], a->variant, a->args + 1, a->nargs - 1, ia_params,
				    sizeof(ia_params), why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: %s\n", why);
		return 1;
	}
	if (ofx_datconf_name(a->args[0], a->variant, name, sizeof(name))) {
		fprintf(stderr, "ofx-dat-conf: IA name for '%s' too long\n", a->args[0]);
		return 1;
	}
	line = malloc(LINE_MAX_LEN + 1);
	if (!line || ofx_datconf_format(name, a->lib, ia_params, line, LINE_MAX_LEN)) {
		fprintf(stderr, "ofx-dat-conf: entry too long\n");
		goto out;
	}
	check_device_here(a->args[0]);

	if (load(a->file, &text, &missing))
		goto out;
	ret = ofx_datconf_add(text, line, &out, &change, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: %s\n", ret == -ENOMEM ? "out of memory" : why);
		goto out;
	}
	if (change.added)
		snprintf(what, sizeof(what), "added %s", name);
	else if (change.replaced)
		snprintf(what, sizeof(what), "updated %s", name);
	else
		snprintf(what, sizeof(what), "%s already up to date", name);
	if (change.removed)
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 ", %u duplicate%s removed", change.removed, change.removed > 1 ? "s" : "");
	if (change.added) {
		/* record only an appended line: a replaced one was there before us */
		strcat(line, "\n");
		status = commit(a, text, out, missing, what, line);
	} else {
		status = commit(a, text, out, missing, what, NULL);
	}
out:
	free(line);
	free(text);
	free(out);
	return status;
}

/* remove --record R: the recorded lines still as written, then R itself. */
static int cmd_remove_recorded(const struct args *a)
{
	struct ofx_datconf_change change;
	char *text = NULL, *out = NULL, *record = NULL;
	char why[WHY_MAX], what[64];
	bool missing;
	int ret, status = 1;

	if (a->nargs) {
		fprintf(stderr, "ofx-dat-conf: remove --record takes no NAME or DEVICE\n");
		return 2;
	}
	ret = ofx_datconf_read(a->record, &record, why, sizeof(why));
	if (ret == -ENOENT) {
		printf("%s: no record, nothing to remove\n", a->record);
		return 0;
	}
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: record: %s\n", why);
		return 1;
	}
	if (load(a->file, &text, &missing))
		goto out;
	if (ofx_datconf_remove_lines(text, record, &out, &change)) {
		fprintf(stderr, "ofx-dat-conf: out of memory\n");
		goto out;
	}
	snprintf(what, sizeof(what), "removed %u recorded line%s", change.removed,
		 change.removed == 1 ? "" : "s");
	if (!missing)
		status = commit(a, text, out, false, change.removed ? what : "no recorded line",
				NULL);
	else
		status = 0;
	if (!status && !a->dry_run) {
		if (unlink(a->record)) {
			fprintf(stderr, "ofx-dat-conf: cannot delete %s: %m\n", a->record);
			status = 1;
		} else {
			printf("%s: deleted\n", a->record);
		}
	}
out:
	free(record);
	free(text);
	free(out);
	return status;
}

static int cmd_remove(const struct args *a)
{
	struct ofx_datconf_change change;
	char *text = NULL, *out = NULL;
	char why[WHY_MAX], what[DAT_NAME_MAX_LENGTH + 64];
	bool missing;
	int ret, status = 1;

	if (a->record)
		return cmd_remove_recorded(a);
	if (a->nargs != 1) {
		fprintf(stderr, "ofx-dat-conf: remove takes one NAME or DEVICE\n");
		usage(stderr);
		return 2;
	}
	if (load(a->file, &text, &missing))
		goto out;
	if (missing) {
		printf("%s: no such file, nothing to remove\n", a->file);
		status = 0;
		goto out;
	}
	ret = ofx_datconf_remove(text, a->args[0], &out, &change, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: %s\n", ret == -ENOMEM ? "out of memory" : why);
		goto out;
	}
	if (!change.removed)
		snprintf(what, sizeof(what), "no libdaplofx entry for '%s'", a->args[0]);
	else
		snprintf(what, sizeof(what), "removed %u entr%s for '%s'", change.removed,
			 change.removed > 1 ? "ies" : "y", a->args[0]);
	status = commit(a, text, out, false, what, NULL);
out:
	free(text);
	free(out);
	return status;
}

/* Adds the plain entry for `netdev` to *text_p unless one of that name is there. */
static int detect_one(const struct args *a, const char *netdev, char **text_p, FILE *added,
		      FILE *names)
{
	char ia_params[OFX_DATCONF_FIELD_MAX], name[DAT_NAME_MAX_LENGTH], why[WHY_MAX];
	char *line, *out = NULL;
	unsigned int at;
	int ret = 1;

	if (ofx_datconf_name(netdev, OFX_DATCONF_PLAIN, name, sizeof(name))) {
		fprintf(stderr, "ofx-dat-conf: IA name for '%s' too long, skipped\n", netdev);
		return 0;
	}
	at = ofx_datconf_find(*text_p, name);
	if (at) {
		printf("%s: %s already there (line %u), left as it is\n", a->file, name, at);
		return 0;
	}
	if (ofx_datconf_ia_params(netdev, OFX_DATCONF_PLAIN, NULL, 0, ia_params,
				  sizeof(ia_params), why, sizeof(why))) {
		fprintf(stderr, "ofx-dat-conf: %s: %s, skipped\n", netdev, why);
		return 0;
	}
	line = malloc(LINE_MAX_LEN);
	if (!line || ofx_datconf_format(name, a->lib, ia_params, line, LINE_MAX_LEN)) {
		fprintf(stderr, "ofx-dat-conf: entry for '%s' too long\n", netdev);
		goto out;
	}
	ret = ofx_datconf_add(*text_p, line, &out, NULL, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: %s\n", ret == -ENOMEM ? "out of memory" : why);
		ret = 1;
		goto out;
	}
	free(*text_p);
	*text_p = out;
	fprintf(added, "%s\n", line);
	fprintf(names, "%s%s", ftell(names) ? ", " : "", name);
	ret = 0;
out:
	free(line);
	return ret;
}

static int cmd_detect(const struct args *a)
{
	char *text = NULL, *cur = NULL, *added = NULL, *names = NULL;
	size_t added_len = 0, names_len = 0, n = 0, i;
	struct ofx_dev *devs = NULL;
	FILE *added_f, *names_f;
	char why[WHY_MAX];
	bool missing;
	int ret, status = 1;

	if (!a->lib[0] || strchr(a->lib, '\n')) {
		fprintf(stderr, "ofx-dat-conf: --lib needs a library path\n");
		return 2;
	}
	if (!a->nargs) {
		ret = ofx_devices_scan(0, 0, 0, &devs, &n, why, sizeof(why));
		if (ret) {
			fprintf(stderr, "ofx-dat-conf: cannot list the RDMA devices: %s\n",
				strerror(-ret));
			return 1;
		}
		if (!n)
			printf("no RDMA device found%s%s\n", why[0] ? ": " : "", why);
	}
	if (load(a->file, &text, &missing))
		goto out_devs;
	cur = strdup(text);
	added_f = open_memstream(&added, &added_len);
	names_f = open_memstream(&names, &names_len);
	if (!cur || !added_f || !names_f) {
		fprintf(stderr, "ofx-dat-conf: out of memory\n");
		if (added_f)
			fclose(added_f);
		if (names_f)
			fclose(names_f);
		goto out;
	}
	ret = 0;
	for (i = 0; !ret && i < (size_t)a->nargs; i++) {
		check_device_here(a->args[i]);
		ret = detect_one(a, a->args[i], &cur, added_f, names_f);
	}
	for (i = 0; !ret && i < n; i++) {
		const struct ofx_dev *d = &devs[i];

		if (d->error) {
			printf("%s: cannot open or query: %s, skipped\n", d->name,
			       strerror(-d->error));
			continue;
		}
		for (unsigned int p = 0; !ret && p < d->nports; p++) {
			if (!d->ports[p].netdev[0]) {
				printf("%s port %u: no netdev, skipped\n", d->name,
				       d->ports[p].num);
				continue;
			}
			ret = detect_one(a, d->ports[p].netdev, &cur, added_f, names_f);
		}
	}
	fclose(added_f);
	fclose(names_f);
	if (ret)
		goto out;
	if (names_len) {
		char *what = NULL;

		if (asprintf(&what, "added %s", names) < 0) {
			fprintf(stderr, "ofx-dat-conf: out of memory\n");
			goto out;
		}
		status = commit(a, text, cur, missing, what, added);
		free(what);
	} else {
		status = commit(a, text, cur, missing, "no new device", NULL);
	}
out:
	free(names);
	free(added);
	free(cur);
	free(text);
out_devs:
	ofx_devices_free(devs, n);
	return status;
}

static void list_name(const char *text, const char *netdev, enum ofx_datconf_variant v)
{
	char name[DAT_NAME_MAX_LENGTH], cmd[DAT_NAME_MAX_LENGTH + 64];
	unsigned int line;

	if (ofx_datconf_name(netdev, v, name, sizeof(name)))
		return;
	snprintf(cmd, sizeof(cmd), "ofx-dat-conf add %s%s%s", v ? "--variant " : "",
		 v ? ofx_datconf_variant_str(v) : "", v ? " " : "");
	line = text ? ofx_datconf_find(text, name) : 0;
	printf("    %-24s %s%s", name, cmd, netdev);
	if (line)
		printf("   [in dat.conf, line %u]", line);
	printf("\n");
}

static int cmd_list(const struct args *a)
{
	char why[WHY_MAX];
	struct ofx_dev *devs;
	char *text = NULL;
	size_t n, i;
	int ret;

	if (a->nargs) {
		fprintf(stderr, "ofx-dat-conf: list takes no argument\n");
		return 2;
	}
	ret = ofx_devices_scan(0, 0, 0, &devs, &n, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-dat-conf: cannot list the RDMA devices: %s\n",
			strerror(-ret));
		return 1;
	}
	if (!n) {
		printf("no RDMA device found%s%s\n", why[0] ? ": " : "", why);
		return 0;
	}
	/* only to mark names already present; an unreadable file is not an error here */
	if (ofx_datconf_read(a->file, &text, why, sizeof(why)))
		text = NULL;
	printf("# dat.conf: %s%s\n", a->file, text ? "" : " (not readable)");
	for (i = 0; i < n; i++) {
		const struct ofx_dev *d = &devs[i];

		if (d->error) {
			printf("%s: cannot open or query: %s\n", d->name, strerror(-d->error));
			continue;
		}
		for (unsigned int p = 0; p < d->nports; p++) {
			const struct ofx_dev_port *port = &d->ports[p];

			printf("%s port %u: %s, %s, netdev %s, XRC %s\n", d->name, port->num,
			       ofx_dev_transport_str(port->transport),
			       ofx_dev_port_state_str(port->state),
			       port->netdev[0] ? port->netdev : "(none)", d->xrc ? "yes" : "no");
			if (!port->netdev[0]) {
				printf("    no netdev: rdma_cm needs an IP interface on this port "
				       "(IPoIB on IB)\n");
				continue;
			}
			list_name(text, port->netdev, OFX_DATCONF_PLAIN);
			/* p2p is already the default on iWARP (p2p=auto) */
			if (port->transport != OFX_TRANSPORT_IWARP)
				list_name(text, port->netdev, OFX_DATCONF_P2P);
			if (d->xrc)
				list_name(text, port->netdev, OFX_DATCONF_XRC);
		}
	}
	free(text);
	ofx_devices_free(devs, n);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "list")) {
		if (parse_args(argc - 1, argv + 1, CMD_LIST, &a))
			return 2;
		return cmd_list(&a);
	}
	if (!strcmp(cmd, "add")) {
		if (parse_args(argc - 1, argv + 1, CMD_ADD, &a))
			return 2;
		return cmd_add(&a);
	}
	if (!strcmp(cmd, "detect")) {
		if (parse_args(argc - 1, argv + 1, CMD_DETECT, &a))
			return 2;
		return cmd_detect(&a);
	}
	if (!strcmp(cmd, "remove")) {
		if (parse_args(argc - 1, argv + 1, CMD_REMOVE, &a))
			return 2;
		return cmd_remove(&a);
	}
	fprintf(stderr, "ofx-dat-conf: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
