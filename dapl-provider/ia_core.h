/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_IA_CORE_H
#define OFX_IA_CORE_H

#include <stdatomic.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "obj.h"
#include "config.h"

/*
 * The IA as every object sees it (base layer): its fields, the registry of
 * the objects created on it, and the lookup of IA handles.  Opening,
 * querying and closing an IA (the DAT IA API) is ia.h, at the top.
 */
struct ofx_provider;
struct ofx_progress;
struct ofx_evd;
struct ofx_rmr;
struct ofx_xrc_ia;

enum ofx_transport { OFX_TRANSPORT_IB, OFX_TRANSPORT_ROCE, OFX_TRANSPORT_IWARP };

/* ibv_device_attr.vendor_id of soft-RoCE (rxe). */
#define OFX_RXE_VENDOR_ID 0xffffffu
/* ibv_device_attr.vendor_id of soft-iWARP (siw: "bmt"). */
#define OFX_SIW_VENDOR_ID 0x626d74u

/* Below this value an IA handle is a libdat2 index (contract 1.7). */
#define OFX_IA_INDEX_LIMIT 0x10000

/* Per-IA counters, reported by ia_query provider attributes and the stats log. */
struct ofx_ia_stats {
	atomic_ulong rtr_sent;
	atomic_ulong rtr_received;
	atomic_ulong conn_active;
	atomic_ulong conn_passive;
	atomic_ulong conn_p2p;
	/*
	 * RC QPs of the IA's EPs alive now and the most alive at once (on an
	 * XRC IA those of connects in flight and of connections over RC).
	 */
	atomic_ulong rc_qps;
	atomic_ulong rc_qps_peak;
};

#define OFX_RMR_INDEX_BUCKETS 64

/*
 * The IA's type 2 windows by key index (rkey >> 8, fixed for a window's
 * life; only the low byte changes from bind to bind), so that a receive
 * whose sender invalidated one of them can find its RMR.  Type 1 windows
 * are not listed: a send with invalidate cannot name them.  Per IA rather
 * than per PZ because completions of a freed EP may still be polled after
 * its PZ is gone, while the IA outlives them all.  `lock` is taken before
 * any rmr->lock; an all-zero bucket array is empty.  Kept by rmr.c.
 */
struct ofx_rmr_index {
	pthread_mutex_t lock;
	struct ofx_rmr *buckets[OFX_RMR_INDEX_BUCKETS];
	/*
	 * RMRs in the buckets, changed under lock: an EP's teardown reads it
	 * without, and skips the walk at 0 (an RMR bound through the EP was
	 * counted before the bind, which the consumer ordered before the free).
	 */
	_Atomic size_t count;
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
	/*
	 * siw (Linux 6.1) answers a zero-length RDMA read that it had to queue
	 * (its send side busy with the consumer's first send) from a stale
	 * SGE, fails the response and breaks the QP (siw_activate_tx leaves
	 * sge[0] of the previous WQE; siw_qp_sq_proc_tx then checks it).  As
	 * the responder of a read RTR it grants a write RTR instead.
	 */
	bool read_rtr_unsafe;
	/*
	 * cfg.rtr_nudge resolved against the device: the active side of a p2p
	 * connection follows its RTR with zero-length RDMA writes (ep_cm.c
	 * rtr_nudge_run), each QP has a send slot more for them.
	 */
	bool rtr_nudge;
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
struct ofx_ia *ofx_ia_lookup(DAT_IA_HANDLE h);
/* The libdat2 index of `ia`, for handles returned in query results. */
DAT_IA_HANDLE ofx_ia_dat_handle(struct ofx_ia *ia);

/* An EP's RC QP was created (or destroyed): ia->stats.rc_qps and its peak. */
void ofx_ia_count_rc_qp(struct ofx_ia *ia, bool created);

/* Links/unlinks an object on ia->objects (used by ofx_obj_init/fini). */
void ofx_ia_link(struct ofx_ia *ia, struct ofx_obj *obj);
void ofx_ia_unlink(struct ofx_ia *ia, struct ofx_obj *obj);

/* Initialises the header and links the object into its IA (not for the IA). */
void ofx_obj_init(struct ofx_obj *obj, enum ofx_obj_type type, struct ofx_ia *ia);
/* Unlinks from the IA and poisons the type tag; the caller frees the memory. */
void ofx_obj_fini(struct ofx_obj *obj);

/* Not declared by any public header; exported by libdat2 (contract 1.5). */
extern DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE in, DAT_IA_HANDLE *out);

#endif
