/* SPDX-License-Identifier: BSD-2-Clause */
#include "devices.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ofx_dev_transport_str(enum ofx_transport t)
{
	switch (t) {
	case OFX_TRANSPORT_IB:
		return "IB";
	case OFX_TRANSPORT_ROCE:
		return "RoCE";
	case OFX_TRANSPORT_IWARP:
		return "iWARP";
	}
	return "?";
}

const char *ofx_dev_port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP:
		return "nop";
	case IBV_PORT_DOWN:
		return "down";
	case IBV_PORT_INIT:
		return "init";
	case IBV_PORT_ARMED:
		return "armed";
	case IBV_PORT_ACTIVE:
		return "active";
	case IBV_PORT_ACTIVE_DEFER:
		return "active-defer";
	}
	return "?";
}

/* First line of a small sysfs file, without its newline. */
static int read_word(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? 0 : -ENOENT;
}

int ofx_dev_find_netdev(const char *sysfs, const char *ibdev, unsigned int port, char *buf,
			size_t len)
{
	char path[PATH_MAX], word[32], first[sizeof(((struct dirent *)0)->d_name)] = "";
	struct dirent *d;
	DIR *dir;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/gid_attrs/ndevs/0", sysfs,
		 ibdev, port);
	if (!read_word(path, buf, len))
		return 0;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/net", sysfs, ibdev);
	dir = opendir(path);
	if (!dir)
		return -ENOENT;
	while ((d = readdir(dir))) {
		char dp[PATH_MAX + sizeof(d->d_name) + 16];

		if (d->d_name[0] == '.')
			continue;
		/* the smallest name is the fallback: the answer must not depend on readdir order */
		if (!first[0] || strcmp(d->d_name, first) < 0)
			snprintf(first, sizeof(first), "%s", d->d_name);
		snprintf(dp, sizeof(dp), "%s/%s/dev_port", path, d->d_name);
		if (!read_word(dp, word, sizeof(word)) && strtoul(word, NULL, 0) == port - 1 &&
		    ret) {
			snprintf(buf, len, "%s", d->d_name);
			ret = 0;
		}
	}
	closedir(dir);
	if (ret && first[0]) {
		snprintf(buf, len, "%s", first);
		ret = 0;
	}
	return ret;
}

static struct ibv_qp *probe_qp(struct ibv_pd *pd, struct ibv_cq *cq, unsigned int inline_len)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = inline_len,
		},
	};

	return ibv_create_qp(pd, &attr);
}

static bool inline_ok(struct ibv_pd *pd, struct ibv_cq *cq, unsigned int inline_len)
{
	struct ibv_qp *qp = probe_qp(pd, cq, inline_len);

	if (!qp)
		return false;
	ibv_destroy_qp(qp);
	return true;
}

/*
 * Mirrors ia_open's probe: the requested threshold if an RC QP accepts it,
 * else 0.  Then a binary search for the largest accepted request.
 */
static void probe_inline(struct ibv_context *ctx, unsigned int want, unsigned int cap,
			 struct ofx_dev *dev)
{
	unsigned int lo, hi, mid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		dev->inline_error = errno ? -errno : -ENOMEM;
		return;
	}
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!cq) {
		dev->inline_error = errno ? -errno : -ENOMEM;
		goto err_dealloc_pd;
	}
	if (!inline_ok(pd, cq, 0)) {
		dev->inline_error = errno ? -errno : -ENOMEM;
		goto err_destroy_cq;
	}
	dev->inline_granted = inline_ok(pd, cq, want) ? want : 0;
	lo = 0;	/* accepted */
	hi = cap;
	if (inline_ok(pd, cq, hi)) {
		lo = hi;
	} else {
		while (hi - lo > 1) {	/* invariant: lo accepted, hi refused */
			mid = lo + (hi - lo) / 2;
			if (inline_ok(pd, cq, mid))
				lo = mid;
			else
				hi = mid;
		}
	}
	dev->inline_max = lo;

err_destroy_cq:
	ibv_destroy_cq(cq);
err_dealloc_pd:
	ibv_dealloc_pd(pd);
}

static int scan_one(struct ibv_device *ibdev, unsigned int flags, unsigned int inline_want,
		    unsigned int inline_cap, struct ofx_dev *dev)
{
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	unsigned int p;
	int ret;

	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(ibdev));
	dev->iwarp = ibdev->transport_type == IBV_TRANSPORT_IWARP;
	ctx = ibv_open_device(ibdev);
	if (!ctx)
		return errno ? -errno : -ENODEV;
	ret = ibv_query_device(ctx, &dev->attr);
	if (ret) {
		ret = -ret;
		goto err_close;
	}
	dev->xrc = dev->attr.device_cap_flags & IBV_DEVICE_XRC;
	dev->ports = calloc(dev->attr.phys_port_cnt ? dev->attr.phys_port_cnt : 1,
			    sizeof(*dev->ports));
	if (!dev->ports) {
		ret = -ENOMEM;
		goto err_close;
	}
	for (p = 1; p <= dev->attr.phys_port_cnt; p++) {
		struct ofx_dev_port *port = &dev->ports[dev->nports];

		ret = ibv_query_port(ctx, (uint8_t)p, &pa);
		if (ret)
			continue;
		port->num = p;
		port->state = pa.state;
		port->active_mtu = pa.active_mtu;
		if (dev->iwarp)
			port->transport = OFX_TRANSPORT_IWARP;
		else if (pa.link_layer == IBV_LINK_LAYER_ETHERNET)
			port->transport = OFX_TRANSPORT_ROCE;
		else
			port->transport = OFX_TRANSPORT_IB;
		ofx_dev_find_netdev(OFX_SYSFS, dev->name, p, port->netdev, sizeof(port->netdev));
		dev->nports++;
	}
	if (flags & OFX_DEV_PROBE_INLINE)
		probe_inline(ctx, inline_want, inline_cap, dev);
	ibv_close_device(ctx);
	return 0;

err_close:
	ibv_close_device(ctx);
	return ret;
}

int ofx_devices_scan(unsigned int flags, unsigned int inline_want, unsigned int inline_cap,
		     struct ofx_dev **devs_p, size_t *n_p, char *why, size_t why_len)
{
	struct ibv_device **list;
	struct ofx_dev *devs;
	int num = 0, i;

	if (why && why_len)
		why[0] = '\0';
	errno = 0;
	list = ibv_get_device_list(&num);
	if (!list || num <= 0) {
		if (why && why_len && errno == ENOSYS)
			snprintf(why, why_len, "no RDMA in this kernel (ib_uverbs not loaded?)");
		else if (why && why_len && errno && errno != ENODEV)
			snprintf(why, why_len, "%s", strerror(errno));
		if (list)
			ibv_free_device_list(list);
		*devs_p = NULL;
		*n_p = 0;
		return 0;
	}
	devs = calloc((size_t)num, sizeof(*devs));
	if (!devs) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	for (i = 0; i < num; i++)
		devs[i].error = scan_one(list[i], flags, inline_want, inline_cap, &devs[i]);
	ibv_free_device_list(list);
	*devs_p = devs;
	*n_p = (size_t)num;
	return 0;
}

void ofx_devices_free(struct ofx_dev *devs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(devs[i].ports);
	free(devs);
}
