/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_FAKE_VERBS_H
#define OFX_TEST_FAKE_VERBS_H

#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "pz.h"
#include "util.h"
#include "verbs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/*
 * One fake of the verbs seam shared by the unit tests (no device).
 *
 * Every object it makes (PD, MR, MW, CQ, SRQ, QP, XRC domain, cm_id)
 * starts with a struct fake_obj and stays on the live list of its kind,
 * counted, until its handle closes: by its destroy call, or before that by
 * the kernel when its process exits (fake_close_context).  The kernel
 * leaves the memory the process still points to; the destroy call that
 * comes later only frees it.
 *
 * The CQ model holds scripted work completions, arms once, and uses a pipe
 * as the completion channel fd, written when a completion lands on an armed
 * CQ.  It is locked, so helper threads may push completions.  A QP keeps
 * the state set by modify_qp, and one fed by an SRQ refuses post_recv.  The
 * device has no XRC: open_xrcd, open_qp and get_srq_num fail EOPNOTSUPP.
 *
 * fake_verbs_install() resets the fake and installs fake_verbs_core with
 * ofx_verbs_set(); a test may then override single ops in fake_verbs.ops
 * before its first verbs call (ofx_verbs_set() copies nothing, the table is
 * read on each call).  A model of a device that behaves otherwise (the XRC
 * model, xrc_model.h) overrides the ops it changes and calls fake_verbs_core
 * for what it keeps.
 */

#define FAKE_CQ_MAX 256

/* The kinds of object, in the order the kernel closes them at exit (uverbs, then ucma). */
enum fake_kind {
	FAKE_QP, FAKE_SRQ, FAKE_MW, FAKE_CQ, FAKE_MR, FAKE_XRCD, FAKE_PD, FAKE_ID, FAKE_KINDS
};

struct fake_obj {
	struct ofx_list link;		/* in fake_verbs.live[kind] while open */
	enum fake_kind kind;
	struct ibv_context *ctx;	/* the process it belongs to */
	bool closed;
	/* a model's own work when the handle closes (may be NULL) */
	void (*release)(struct fake_obj *obj);
};

/* A new zeroed object of `size` bytes (a struct fake_obj first), open and counted. */
void *fake_obj_new(enum fake_kind kind, size_t size, struct ibv_context *ctx);
/* The handle closes (once): the model's release, then out of its list and count. */
void fake_obj_close(struct fake_obj *obj);
/* ibv_destroy_*: closes the handle unless the kernel did, frees the memory. */
void fake_obj_destroy(struct fake_obj *obj);
/* The kernel's cleanup when the process of `ctx` exits: every handle of it closes. */
void fake_close_context(struct ibv_context *ctx);

struct fake_channel {
	struct ibv_comp_channel ch;
	int wfd;
	struct fake_cq *cq;
};

/*
 * A CQE as a device keeps it.  srqn and seq are what mlx5's CQEs name
 * beyond the work completion (the XRC model sets them, 0 otherwise): the
 * XRC SRQ a receive completed on, and a send's place in its send queue.
 */
struct fake_cqe {
	struct ibv_wc wc;
	uint32_t srqn;
	uint64_t seq;
};

struct fake_cq {
	struct fake_obj obj;
	struct ibv_cq cq;
	pthread_mutex_t lock;
	struct fake_cqe *q;	/* `slots` of them: fake_verbs.cq_max at create */
	int slots, head, count;
	bool armed;
	int max_poll;		/* largest n passed to poll_cq */
	unsigned int events, acked;
	struct fake_channel *fch;
};

static inline struct fake_cq *fake_cq_of(struct ibv_cq *cq)
{
	return container_of(cq, struct fake_cq, cq);
}

struct fake_pd {
	struct fake_obj obj;
	struct ibv_pd pd;
};

struct fake_mr {
	struct fake_obj obj;
	struct ibv_mr mr;
	int access;
};

struct fake_mw {
	struct fake_obj obj;
	struct ibv_mw mw;
};

struct fake_srq {
	struct fake_obj obj;
	struct ibv_srq srq;
};

struct fake_qp {
	struct fake_obj obj;
	struct ibv_qp qp;
};

/* A QP (`size` bytes, a struct fake_qp first) as create_qp_ex makes it: RESET, numbered. */
struct fake_qp *fake_qp_new(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *attr,
			    size_t size);
/* An SRQ (`size` bytes, a struct fake_srq first) as create_srq_ex makes it, or NULL (errno). */
struct fake_srq *fake_srq_new(struct ibv_context *ctx, const struct ibv_srq_init_attr_ex *attr,
			      size_t size);

struct fake_verbs {
	struct ofx_verbs_ops ops;	/* installed with ofx_verbs_set() */
	struct ofx_list live[FAKE_KINDS];	/* open objects, by kind */
	pthread_mutex_t lock;	/* the live lists and fake_cm's event queue */
	int cq_max;		/* the device's deepest CQ (FAKE_CQ_MAX) */
	int cq_extra;		/* create_cq rounds cqe up by this, like a device may */
	/* a device's parse of each CQE poll_cq takes: < 0 fails the poll with it (may be NULL) */
	int (*cqe_parse)(const struct fake_cqe *cqe);
	unsigned int unbalanced;	/* CQs destroyed with unacked events */
	/* CUnit is not thread-safe: helper threads count failures, the test asserts them */
	atomic_uint write_failures;
	int pds, mrs, mws, qps, srqs, cqs, xrcds, channels;	/* live objects */
	/* heap of the live objects (malloc_usable_size + 8: chunks, as mallinfo2 counts) */
	atomic_size_t obj_bytes;
	int posts;		/* send, receive, SRQ receive and bind calls that reached it */
	uint64_t last_recv_wr_id;	/* of the last receive posted on a QP */
	int binds;		/* bind calls that reached it */
	int post_errno;		/* when set, every post fails with it */
	uint32_t next_num;	/* qp_num or SRQ number of the next one, from 0x100 */
	uint32_t mr_keys, mw_keys;	/* MRs and MWs made so far: no key repeats */
	uint32_t srq_max_wr;	/* max_wr of the last SRQ created */
	int last_access;	/* access flags of the last reg_mr */
	int reg_errno;		/* when set, reg_mr fails with it */
	int resize_errno;	/* when set, resize_cq fails with it */
	bool pd_busy_with_mrs;	/* dealloc_pd returns EBUSY while MRs live, like the kernel */
};

extern struct fake_verbs fake_verbs;
/* The whole fake: what fake_verbs_install() puts in fake_verbs.ops. */
extern const struct ofx_verbs_ops fake_verbs_core;

/*
 * The rdma_cm half of the fake (installed with the verbs half).  cm_ids are
 * objects of the fake (FAKE_ID, counted in fake_cm.ids); each call the
 * provider makes is counted, the parameters and private data of the last
 * connect or accept (or reject) are kept, and send work requests are
 * recorded (the RTR among them).  Events wait in one queue until
 * rdma_get_cm_event takes the first of its channel; rdma_ack_cm_event frees
 * it, and destroying an id drops the events still queued for it, as ucma
 * does.  A test queues them with fake_cm_queue*() and runs
 * fake_cm_deliver(), which hands them over the way the progress thread
 * does.  rdma_init_qp_attr gives the state asked for and nothing else.  A
 * call fails on demand with the errno put in its *_errno field.  A
 * request's peer address (what rdma_get_peer_addr reads) is set with
 * fake_cm_set_peer().
 */
#define FAKE_CM_EVENTS 1024
#define FAKE_SENDS 16

struct fake_send {
	enum ibv_wr_opcode opcode;
	int num_sge;
	uint32_t len;		/* of the first segment */
	uint64_t wr_id;
	unsigned int send_flags;
};

struct fake_cm {
	int ids;		/* live cm_ids */
	int resolve_addrs, resolve_routes, connects, accepts, rejects, disconnects,
	    establishes, listens;
	int connect_errno;	/* rdma_connect fails with it (iWARP's ECONNREFUSED) */
	int accept_errno;	/* rdma_accept fails with it */
	int init_qp_attr_errno;	/* rdma_init_qp_attr fails with it (an id the peer left) */
	int bind_errno;		/* rdma_bind_addr fails with it (EADDRINUSE) */
	int resolve_addr_errno, resolve_route_errno;	/* the calls fail with it */
	int set_options;	/* rdma_set_option calls */
	uint8_t tos;		/* the last RDMA_OPTION_ID_TOS set */
	int path_sets;		/* of them RDMA_OPTION_IB_PATH (a route not asked of the SA) */
	struct ibv_path_data path;	/* the last path set (its first entry) */
	struct rdma_conn_param conn;	/* the last connect or accept */
	/* its (or the last reject's) private data, zero after pdata_len */
	unsigned char pdata[256];
	int pdata_len;
	struct rdma_cm_id *last_id;	/* the last id created */
	struct fake_send sends[FAKE_SENDS];
	int nsends;
	struct ofx_list events;	/* queued, oldest first (fake_verbs.lock) */
	int nevents;
};

extern struct fake_cm fake_cm;

struct fake_id {
	struct fake_obj obj;
	struct rdma_cm_id id;
};

/*
 * Queues an event of `id` with private data (copied); returns it for a
 * model to complete (listen_id, depths, the length the receiver sees).
 */
struct rdma_cm_event *fake_cm_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type,
				    int status, const void *pdata, int len);
/*
 * Queues a CONNECT_REQUEST on `listen_id` for a new id (returned, counted
 * live, with the listener's context) with the peer's private data and depths.
 */
struct rdma_cm_id *fake_cm_queue_request(struct rdma_cm_id *listen_id, const void *pdata,
					 int len, uint8_t initiator_depth,
					 uint8_t responder_resources);
/* Events queued for `ch`. */
int fake_cm_pending(struct rdma_event_channel *ch);
/* Sets the address rdma_get_peer_addr(id) returns (a request's source). */
void fake_cm_set_peer(struct rdma_cm_id *id, const struct sockaddr_in *peer);
/* A new id of `size` bytes (a struct fake_id first), as rdma_create_id makes it. */
struct fake_id *fake_cm_id_new(struct rdma_event_channel *ch, void *ctx, enum rdma_port_space ps,
			       size_t size);
/* The id calls alone (counted in fake_cm.ids), for tests with a verbs model of their own. */
int fake_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
		      enum rdma_port_space ps);
int fake_cm_destroy_id(struct rdma_cm_id *id);
/* Hands every event queued for the IA's channel to the provider (ofx_cm_process_events). */
void fake_cm_deliver(struct ofx_ia *ia);

/*
 * With a progress engine running: waits for the next event on the
 * connection EVD, asserts it names `ep`, and returns its number (0 if none
 * came within 30 s, a deadline that only bounds a broken provider).
 */
DAT_EVENT_NUMBER fake_conn_event_wait(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep);

/* Reset fake_verbs and install the model; undo with ofx_verbs_set(NULL). */
void fake_verbs_install(void);

/* A completion lands on the EVD's CQ (any thread); an armed CQ fires its channel once. */
void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc);
/* The same on a given CQ (one an EVD moved away from, say). */
void fake_cq_push_cq(struct ibv_cq *cq, const struct ibv_wc *wc);
bool fake_cq_armed(struct ibv_cq *cq);
/* A channel event with nothing new in the CQ. */
void fake_spurious_channel_event(struct ofx_evd *evd);
/*
 * An armed CQ fires its channel once, disarmed after, as for a CQE; the
 * CQE itself is the caller's to push (a device model's: one the event
 * announces but a poll does not see yet).  false: the CQ was not armed.
 */
bool fake_cq_fire(struct ibv_cq *cq);
/* Completions still queued in the EVD's CQ. */
int fake_cq_pending(struct ofx_evd *evd);
/* A CQE with the fields a device model sets beyond the work completion. */
void fake_cq_push_cqe(struct ibv_cq *cq, const struct fake_cqe *cqe);
/*
 * mlx5's __mlx5_cq_clean, run by mlx5_destroy_qp on the QP's CQs (either
 * may be NULL): the CQEs of QP `qpn` that name no SRQ leave unreported, the
 * others keep their order.
 */
void fake_cq_clean(struct ibv_cq *cq, uint32_t qpn);

/*
 * A hand-built IA: header, obj_lock, empty objects and zombies lists, a
 * dummy verbs context, max_cqe 1024 and cq_batch 16.  No progress engine.
 */
void fake_ia_init(struct ofx_ia *ia);
/*
 * fake_ia_init() made ready for connections on `transport`: configuration
 * defaults, a dummy rdma_cm channel, device limits for an RC EP of
 * fake_rc_ep_attr, and the address 192.0.2.1 (port 0).
 */
void fake_cm_ia_init(struct ofx_ia *ia, enum ofx_transport transport);
extern const DAT_EP_ATTR fake_rc_ep_attr;
/*
 * Its end: stops a progress engine the test started, uninstalls the fake,
 * runs fake_ia_fini() and asserts that no cm_id, QP, CQ or PD is left.
 */
void fake_cm_ia_fini(struct ofx_ia *ia);
/* Assert that no object is left on the IA, and destroy its lock. */
void fake_ia_fini(struct ofx_ia *ia);
/* A hand-built PZ of `ia` on `pd`. */
void fake_pz_init(struct ofx_pz *pz, struct ofx_ia *ia, struct ibv_pd *pd);

/*
 * A bare EP (no QP) whose send and receive rings, of ring_size cookies
 * each, back the cookies of scripted completions.
 */
struct ofx_ep *fake_ep_new(uint32_t ring_size);
void fake_ep_delete(struct ofx_ep *ep);
/* Posts a signaled 64-byte send with cookie `user`; returns its success completion. */
struct ibv_wc fake_send_wc(struct ofx_ep *ep, uint64_t user);

#endif
