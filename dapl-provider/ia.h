/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_IA_H
#define OFX_IA_H

#include <stdatomic.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "obj.h"
#include "config.h"
#include "rmr.h"

struct ofx_provider;
struct ofx_progress;
struct ofx_evd;
struct ofx_xrc_ia;

enum ofx_transport { OFX_TRANSPORT_IB, OFX_TRANSPORT_ROCE, OFX_TRANSPORT_IWARP };

/* Per-IA counters, reported by ia_query provider attributes and the stats log. */
struct ofx_ia_stats {
	atomic_ulong rtr_sent;
	atomic_ulong rtr_received;
	atomic_ulong conn_active;
	atomic_ulong conn_passive;
	atomic_ulong conn_p2p;
};

struct ofx_ia {
	struct ofx_obj obj;
	struct ofx_provider *prov;
	struct ofx_config cfg;		/* resolved at ia_open, read-only after */

	struct sockaddr_storage addr;	/* the IA address (AF_INET for IPv4) */
	struct rdma_event_channel *cm_channel; /* non-blocking, owned by progress */
	struct rdma_cm_id *bind_id;	/* bound to addr: pins the device and port */
	struct ibv_context *verbs;
	uint8_t port_num;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	enum ofx_transport transport;
	unsigned int max_inline;	/* probed inline threshold actually granted */
	/*
	 * rxe copies the kernel's work completion to user space unconverted, so
	 * an invalidated receive carries the kernel's IB_WC_WITH_INVALIDATE
	 * (bit 2, IBV_WC_IP_CSUM_OK in libibverbs) instead of IBV_WC_WITH_INV.
	 */
	bool wc_inv_kernel_bit;
	bool p2p_default;		/* cfg.p2p resolved against the transport */
	bool xrc;			/* cfg.xrc resolved against the device caps */
	struct ofx_xrc_ia *xrc_ia;	/* XRC domain and tables (xrc.c), NULL without xrc */

	struct ibv_pd *empty_pd;	/* owns empty_cq's lifetime partner QPs */
	struct ibv_cq *empty_cq;	/* CQ for an EP side that has no EVD */
	struct ofx_evd *async_evd;
	struct ofx_progress *progress;

	struct ofx_rmr_index rmr_index;	/* type 2 windows by key, for peer invalidation */

	pthread_mutex_t obj_lock;	/* guards `objects`; taken before any object lock */
	struct ofx_list objects;	/* every object created on this IA */
	struct ofx_list zombies;	/* freed EPs whose memory a full CQ may still name */

	struct ofx_ia_stats stats;
};
OFX_DEFINE_FROM_HANDLE(ia, IA)

/*
 * Turns an IA handle as consumers pass it (a libdat2 index when it comes
 * through a DAT call that libdat2 converts, or a raw pointer) into our IA.
 */
/* ibv_device_attr.vendor_id of soft-RoCE (rxe). */
#define OFX_RXE_VENDOR_ID 0xffffffu

struct ofx_ia *ofx_ia_lookup(DAT_IA_HANDLE h);
/* The libdat2 index of `ia`, for handles returned in query results. */
DAT_IA_HANDLE ofx_ia_dat_handle(struct ofx_ia *ia);

DAT_RETURN ofx_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE *async_evd_p,
		       DAT_IA_HANDLE *ia_p);
DAT_RETURN ofx_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd_p, DAT_IA_ATTR_MASK ia_mask,
			DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK prov_mask,
			DAT_PROVIDER_ATTR *prov_attr);
DAT_RETURN ofx_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags);
/* Always DAT_FALSE: the provider forms no HA relations (ha_supported FALSE). */
DAT_RETURN ofx_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR name, DAT_BOOLEAN *answer_p);

/* Progress-thread handler for the device async-event fd. */
void ofx_ia_process_async(void *arg);

/* Posts an asynchronous error to the IA's async EVD (any thread). */
void ofx_ia_post_async(struct ofx_ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE handle);

/* Links/unlinks an object on ia->objects (used by ofx_obj_init/fini). */
void ofx_ia_link(struct ofx_ia *ia, struct ofx_obj *obj);
void ofx_ia_unlink(struct ofx_ia *ia, struct ofx_obj *obj);

#endif
