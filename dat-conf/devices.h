/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_DEVICES_H
#define OFX_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>
#include "ia.h"

/*
 * What ofx-dat-conf list and ofx-info -d report about the RDMA devices of
 * this host.  The transport is classified the way ia_open does it: iWARP by
 * the device's transport type, RoCE by an Ethernet link layer, IB otherwise.
 */

#define OFX_NETDEV_MAX 64
#define OFX_SYSFS "/sys"

struct ofx_dev_port {
	unsigned int num;
	enum ibv_port_state state;
	enum ibv_mtu active_mtu;
	enum ofx_transport transport;
	char netdev[OFX_NETDEV_MAX];	/* "" when sysfs names none */
};

struct ofx_dev {
	char name[IBV_SYSFS_NAME_MAX];
	int error;			/* -errno when open or query failed; nothing else is set */
	struct ibv_device_attr attr;
	bool xrc;			/* IBV_DEVICE_XRC */
	bool iwarp;
	unsigned int nports;
	struct ofx_dev_port *ports;
	/* with OFX_DEV_PROBE_INLINE, the RC QP probe ia_open also makes */
	int inline_error;		/* -errno when no RC QP could be created at all */
	unsigned int inline_granted;	/* what the provider would use for the requested value */
	unsigned int inline_max;	/* largest request accepted, up to `inline_cap` */
};

enum {
	OFX_DEV_PROBE_INLINE = 1 << 0,
};

/*
 * Lists the devices.  No device is not an error: *n_p = 0, and `why` says
 * why when libibverbs gave a reason (e.g. no kernel support).  `inline_want`
 * and `inline_cap` drive the inline probe: the value the provider would ask
 * for, and the highest request tried when searching for the device's limit.
 */
int ofx_devices_scan(unsigned int flags, unsigned int inline_want, unsigned int inline_cap,
		     struct ofx_dev **devs_p, size_t *n_p, char *why, size_t why_len);
void ofx_devices_free(struct ofx_dev *devs, size_t n);

/*
 * The netdev of an RDMA port, from <sysfs>/class/infiniband/<dev>/ports/<p>/
 * gid_attrs/ndevs/0 (RoCE, rxe), else <sysfs>/class/infiniband/<dev>/
 * device/net/ (IPoIB, iWARP; with several, the one whose dev_port is p-1).
 * Returns 0, or -ENOENT when neither names one.
 */
int ofx_dev_find_netdev(const char *sysfs, const char *ibdev, unsigned int port, char *buf,
			size_t len);

const char *ofx_dev_transport_str(enum ofx_transport t);
const char *ofx_dev_port_state_str(enum ibv_port_state s);

#endif
