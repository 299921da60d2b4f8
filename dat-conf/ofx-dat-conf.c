/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx-dat-conf: lists the RDMA devices with the IA names libdaplofx would
 * use for them, and adds or removes libdaplofx entries in a dat.conf without
 * touching anything else in it.  The editing rules live in datconf.c.
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

enum { OPT_VARIANT = 0x100 };

struct args {
	const char *file;
	const char *lib;
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
		"       ofx-dat-conf remove [--file F] [--dry-run] NAME|DEVICE\n"
		"  list     RDMA devices, transport, XRC support, and the IA names to use\n"
		"  add      add or update the entry ofx-v2-DEVICE[-p2p|-xrc]:\n"
		"           NAME u2.0 nonthreadsafe default LIB dapl.2.0 \"DEVICE 0 OPTS\" \"\"\n"
		"           OPTS: the KEY=VALUE provider options (ofx-info -c lists them)\n"
		"  remove   delete the entry NAME, or every ofx-v2-DEVICE variant\n"
		"  -f, --file F     the dat.conf to edit (default: $DAT_OVERRIDE, else %s)\n"
		"  -n, --dry-run    print the change as a diff and write nothing\n"
		"  -l, --lib PATH   library field of the entry (default %s)\n"
		"      --variant V  plain (default), p2p (adds p2p=on) or xrc (adds xrc=on)\n"
		"  -h, --help       this text\n"
		"Exit status: 0 done or nothing to do, 1 error, 2 usage error.\n",
		OFX_DATCONF_DEFAULT_FILE, OFX_DATCONF_DEFAULT_LIB);
}

static int parse_args(int argc, char **argv, bool edit, struct args *a)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "lib", required_argument, NULL, 'l' },
		{ "variant", required_argument, NULL, OPT_VARIANT },
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
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (!edit && (a->dry_run || a->lib_set || a->variant != OFX_DATCONF_PLAIN)) {
		fprintf(stderr, "ofx-dat-conf: list takes only --file\n");
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

/* Shows or writes the new text; returns the exit status. */
static int commit(const struct args *a, const char *old_text, const char *new_text,
		  bool missing, const char *what)
{
	char why[WHY_MAX];

	if (!strcmp(old_text, new_text)) {
		printf("%s: %s: nothing to change\n", a->file, what);
		return 0;
	}
	if (a->dry_run) {
		ofx_datconf_diff(stdout, a->file, old_text, new_text);
		return 0;
	}
	if (ofx_datconf_write(a->file, new_text, why, sizeof(why))) {
		fprintf(stderr, "ofx-dat-conf: %s\n", why);
		return 1;
	}
	printf("%s: %s%s\n", a->file, what, missing ? " (new file)" : "");
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
	line = malloc(LINE_MAX_LEN);
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
	status = commit(a, text, out, missing, what);
out:
	free(line);
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
	status = commit(a, text, out, false, what);
out:
	free(text);
	free(out);
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
		if (parse_args(argc - 1, argv + 1, false, &a))
			return 2;
		return cmd_list(&a);
	}
	if (!strcmp(cmd, "add") || !strcmp(cmd, "remove")) {
		if (parse_args(argc - 1, argv + 1, true, &a))
			return 2;
		return cmd[0] == 'a' ? cmd_add(&a) : cmd_remove(&a);
	}
	fprintf(stderr, "ofx-dat-conf: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
