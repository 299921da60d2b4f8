/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_FAKE_VERBS_H
#define OFX_TEST_FAKE_VERBS_H

#include "ep.h"
#include "evd.h"
#include "ia.h"
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
 * The CQ model holds scripted work completions, arms once, and uses a pipe
 * as the completion channel fd, written when a completion lands on an armed
 * CQ.  It is locked, so helper threads may push completions.  PDs, MRs,
 * MWs, SRQs and QPs are plain allocations counted in fake_verbs; a QP keeps
 * the state set by modify_qp, and one fed by an SRQ refuses post_recv.
 *
 * fake_verbs_install() resets the counters and installs the whole model
 * with ofx_verbs_set(); a test may then override single ops in
 * fake_verbs.ops before its first verbs call (ofx_verbs_set() copies
 * nothing, the table is read on each call).
 */

#define FAKE_CQ_MAX 256

struct fake_channel {
	struct ibv_comp_channel ch;
	int wfd;
	struct fake_cq *cq;
};

struct fake_cq {
	struct ibv_cq cq;
	pthread_mutex_t lock;
	struct ibv_wc q[FAKE_CQ_MAX];
	int head, count;
	bool armed;
	int max_poll;		/* largest n passed to poll_cq */
	unsigned int events, acked;
	struct fake_channel *fch;
};

struct fake_verbs {
	struct ofx_verbs_ops ops;	/* installed with ofx_verbs_set() */
	int cq_extra;		/* create_cq rounds cqe up by this, like a device may */
	unsigned int unbalanced;	/* CQs destroyed with unacked events */
	/* CUnit is not thread-safe: helper threads count failures, the test asserts them */
	atomic_uint write_failures;
	int pds, mrs, mws, qps, srqs, cqs, channels;	/* live objects */
	int posts;		/* send, receive, SRQ receive and bind calls that reached it */
	int post_errno;		/* when set, every post fails with it */
	uint32_t next_qp_num;	/* qp_num of the next QP, from 0x100 */
	uint32_t srq_max_wr;	/* max_wr of the last SRQ created */
	int last_access;	/* access flags of the last reg_mr */
	int reg_errno;		/* when set, reg_mr fails with it */
	int resize_errno;	/* when set, resize_cq fails with it */
	bool pd_busy_with_mrs;	/* dealloc_pd returns EBUSY while MRs live, like the kernel */
};

extern struct fake_verbs fake_verbs;

/*
 * The rdma_cm half of the fake (installed with the verbs half).  cm_ids are
 * counted allocations; each call the provider makes is counted, the
 * parameters and private data of the last connect or accept (or reject)
 * are kept, and send work requests are recorded (the RTR among them).
 * Events reach the provider the way the progress thread hands them over:
 * a test queues them with fake_cm_queue*() and runs fake_cm_deliver(),
 * which calls ofx_cm_process_events() until the queue is empty.
 * rdma_init_qp_attr gives the state asked for and nothing else.  A call
 * fails on demand with the errno put in its *_errno field.  A request's
 * peer address (what rdma_get_peer_addr reads) is set with
 * fake_cm_set_peer().
 */
#define FAKE_CM_EVENTS 16
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
	struct rdma_conn_param conn;	/* the last connect or accept */
	unsigned char pdata[256];	/* its (or the last reject's) private data */
	int pdata_len;
	struct rdma_cm_id *last_id;	/* the last id created */
	struct fake_send sends[FAKE_SENDS];
	int nsends;
	struct {
		struct rdma_cm_event ev;
		unsigned char data[256];
	} q[FAKE_CM_EVENTS];
	int qhead, qcount;
};

extern struct fake_cm fake_cm;

/* Queues an event of `id` with private data (copied). */
void fake_cm_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		   const void *pdata, int len);
/*
 * Queues a CONNECT_REQUEST on `listen_id` for a new id (returned, counted
 * live, with the listener's context) with the peer's private data and depths.
 */
struct rdma_cm_id *fake_cm_queue_request(struct rdma_cm_id *listen_id, const void *pdata,
					 int len, uint8_t initiator_depth,
					 uint8_t responder_resources);
/* Sets the address rdma_get_peer_addr(id) returns (a request's source). */
void fake_cm_set_peer(struct rdma_cm_id *id, const struct sockaddr_in *peer);
/* The id calls alone (counted in fake_cm.ids), for tests with a verbs model of their own. */
int fake_cm_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
		      enum rdma_port_space ps);
int fake_cm_destroy_id(struct rdma_cm_id *id);
/* Hands every queued event to the provider (ofx_cm_process_events). */
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
/* Completions still queued in the EVD's CQ. */
int fake_cq_pending(struct ofx_evd *evd);

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

/*
 * A bare EP (no QP) whose send and receive rings, of ring_size cookies
 * each, back the cookies of scripted completions.
 */
struct ofx_ep *fake_ep_new(uint32_t ring_size);
void fake_ep_delete(struct ofx_ep *ep);
/* Posts a signaled 64-byte send with cookie `user`; returns its success completion. */
struct ibv_wc fake_send_wc(struct ofx_ep *ep, uint64_t user);

#endif
