/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx-info: what libdaplofx would do on this host.  -c prints every option
 * of the provider's config table with its current value, -d the RDMA
 * devices as ia_open would see them, -q a QP-count model for a job.
 */
#include "cm.h"
#include "config.h"
#include "datconf.h"
#include "devices.h"
#include "ia.h"
#include "info.h"
#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY_MAX 512

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ofx-info [-c] [-d] [-o OPTIONS]\n"
		"       ofx-info -q -P PROCS -N NODES [-i]\n"
		"       ofx-info --man\n"
		"  -c, --config       every ia_params option and DAPL_OFX_* variable: type,\n"
		"                     default, current value (environment applied), doc\n"
		"  -d, --devices      RDMA devices: transport, XRC, iWARP, inline threshold,\n"
		"                     private data limit, suggested IA names\n"
		"  -o, --options STR  ia_params options (\"key=value ...\") to apply before the\n"
		"                     environment, as a dat.conf entry would\n"
		"  -q, --qp-count     QP counts of RC and XRC for PROCS processes on each of\n"
		"                     NODES nodes, every process connected to every other\n"
		"  -P, --procs N      processes per node (for -q)\n"
		"  -N, --nodes N      nodes (for -q)\n"
		"  -i, --intra        -q also counts pairs inside a node\n"
		"      --man          OPTIONS and ENVIRONMENT sections of libdaplofx(7), in roff\n"
		"  -h, --help         this text\n"
		"  -V, --version      the version\n"
		"Without -c, -d or -q: -c and -d.\n");
}

static int parse_count(const char *s, const char *what, uint64_t *v)
{
	unsigned long long val;
	char *end;

	errno = 0;
	val = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || !val) {
		fprintf(stderr, "ofx-info: %s must be a positive integer, not '%s'\n", what, s);
		return -EINVAL;
	}
	*v = val;
	return 0;
}

/* What ofx_cm_max_pdata answers for an IA on this transport with p2p on or off. */
static int max_pdata(enum ofx_transport t, bool p2p)
{
	struct ofx_ia ia;

	memset(&ia, 0, sizeof(ia));
	ia.transport = t;
	ia.p2p_default = p2p;
	return ofx_cm_max_pdata(&ia);
}

/* IBV_MTU_256 is 1, and each step doubles. */
static int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

static void print_port(const struct ofx_dev *dev, const struct ofx_dev_port *port,
		       const struct ofx_config *cfg)
{
	bool p2p = cfg->p2p == OFX_ON || (cfg->p2p == OFX_AUTO &&
					  port->transport == OFX_TRANSPORT_IWARP);
	char name[DAT_NAME_MAX_LENGTH];

	printf("  port %u: %s, %s, netdev %s, active_mtu %d\n", port->num,
	       ofx_dev_port_state_str(port->state), ofx_dev_transport_str(port->transport),
	       port->netdev[0] ? port->netdev : "(none)", mtu_bytes(port->active_mtu));
	printf("    max private data: %d (p2p off), %d (p2p on); here p2p=%s -> %d\n",
	       max_pdata(port->transport, false), max_pdata(port->transport, true),
	       ofx_tristate_str(cfg->p2p), max_pdata(port->transport, p2p));
	if (!port->netdev[0])
		return;
	printf("    IA names:");
	for (int v = 0; v < OFX_DATCONF_VARIANT_COUNT; v++) {
		if (v == OFX_DATCONF_XRC && !dev->xrc)
			continue;
		if (!ofx_datconf_name(port->netdev, (enum ofx_datconf_variant)v, name,
				      sizeof(name)))
			printf(" %s", name);
	}
	printf("\n");
}

static int print_devices(const struct ofx_config *cfg)
{
	const struct ofx_param *inl = ofx_config_find_key("max_inline");
	char why[WHY_MAX];
	struct ofx_dev *devs;
	size_t n, i;
	int ret;

	ret = ofx_devices_scan(OFX_DEV_PROBE_INLINE, cfg->max_inline, inl ? inl->max : 1024,
			       &devs, &n, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "ofx-info: cannot list the RDMA devices: %s\n", strerror(-ret));
		return ret;
	}
	printf("# RDMA devices: %zu\n", n);
	if (!n)
		printf("no RDMA device found%s%s\n", why[0] ? ": " : "", why);
	for (i = 0; i < n; i++) {
		const struct ofx_dev *d = &devs[i];

		if (d->error) {
			printf("device %s: cannot open or query: %s\n", d->name,
			       strerror(-d->error));
			continue;
		}
		printf("device %s: iWARP %s, XRC %s%s, ports %u, max_qp %d, max_qp_wr %d, "
		       "max_sge %d, max_srq %d\n", d->name, d->iwarp ? "yes" : "no",
		       d->xrc ? "yes" : "no",
		       !d->xrc && cfg->xrc == OFX_ON ? " (xrc=on would fail ia_open)" : "",
		       d->nports, d->attr.max_qp, d->attr.max_qp_wr, d->attr.max_sge,
		       d->attr.max_srq);
		if (d->inline_error)
			printf("  max inline: no RC QP could be created: %s\n",
			       strerror(-d->inline_error));
		else
			printf("  max inline: max_inline=%u -> %u granted; largest request "
			       "accepted %u%s\n", cfg->max_inline, d->inline_granted,
			       d->inline_max,
			       inl && d->inline_max == inl->max ? " (the option's maximum)" : "");
		for (unsigned int p = 0; p < d->nports; p++)
			print_port(d, &d->ports[p], cfg);
	}
	ofx_devices_free(devs, n);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", no_argument, NULL, 'c' },
		{ "devices", no_argument, NULL, 'd' },
		{ "options", required_argument, NULL, 'o' },
		{ "qp-count", no_argument, NULL, 'q' },
		{ "procs", required_argument, NULL, 'P' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "intra", no_argument, NULL, 'i' },
		{ "man", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool config = false, devices = false, qp = false, intra = false, man = false;
	uint64_t procs = 0, nodes = 0;
	const char *options = NULL;
	struct ofx_qp_model model;
	struct ofx_config cfg;
	char why[WHY_MAX];
	int c, ret;

	while ((c = getopt_long(argc, argv, "cdo:qP:N:ihV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = true;
			break;
		case 'd':
			devices = true;
			break;
		case 'o':
			options = optarg;
			break;
		case 'q':
			qp = true;
			break;
		case 'P':
			if (parse_count(optarg, "-P", &procs))
				return 2;
			break;
		case 'N':
			if (parse_count(optarg, "-N", &nodes))
				return 2;
			break;
		case 'i':
			intra = true;
			break;
		case 'm':
			man = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ofx-info (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ofx-info: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (man) {
		ofx_info_print_man_options(stdout);
		return 0;
	}
	if ((procs || nodes || intra) && !qp) {
		fprintf(stderr, "ofx-info: -P, -N and -i go with -q\n");
		return 2;
	}
	if (qp) {
		if (!procs || !nodes) {
			fprintf(stderr, "ofx-info: -q needs -P PROCS and -N NODES\n");
			return 2;
		}
		ret = ofx_info_qp_model(procs, nodes, intra, &model);
		if (ret) {
			fprintf(stderr, "ofx-info: QP counts overflow 64 bits\n");
			return 1;
		}
		ofx_info_print_qp(stdout, &model);
		if (!config && !devices)
			return 0;
	} else if (!config && !devices) {
		config = devices = true;
	}

	if (config) {
		ret = ofx_info_print_config(stdout, options, true, why, sizeof(why));
		if (ret) {
			fprintf(stderr, "ofx-info: %s\n", why);
			return 1;
		}
	}
	if (devices) {
		unsigned int mask = ofx_log_subsys_mask;

		ofx_config_defaults(&cfg);
		ofx_log_subsys_mask = 0;
		ret = ofx_config_resolve(options, &cfg, why, sizeof(why));
		ofx_log_subsys_mask = mask;
		if (ret) {
			fprintf(stderr, "ofx-info: %s\n", why);
			return 1;
		}
		/* without -c, the provider's own warnings name ignored environment values */
		if (!config) {
			ofx_config_defaults(&cfg);
			ofx_config_resolve(options, &cfg, NULL, 0);
		}
		if (config)
			printf("\n");
		if (print_devices(&cfg))
			return 1;
	}
	return 0;
}
