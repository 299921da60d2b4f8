/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_XRC_MODEL_H
#define OFX_TEST_XRC_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "ep.h"
#include "evd.h"
#include "fake_verbs.h"
#include "ia.h"
#include "pz.h"

/*
 * A model of XRC semantics behind the verbs seam (no device has XRC here),
 * a layer over fake_verbs: its objects, counters, CQs, memory and rdma_cm
 * calls are the fake's, and the model overrides what XRC, mlx5 / mlx4 and
 * several nodes change.  Nodes have an IPv4 address; processes on a node are IAs whose ibv_context
 * names the node.  XRC domains are per node and shared by everything that
 * opens the same file (same inode); a private domain is fresh.  QP numbers
 * are unique in the model, SRQ numbers per node and apart from them
 * (xm_node_next_srqn).  A TGT QP lives while any handle (the
 * creator's or an ibv_open_qp one) does.  post_send on an INI QP routes by
 * its TGT and wr->qp_type.xrc.remote_srqn to that SRQ's next receive
 * (copying the bytes, completing on the SRQ's CQ) and completes on the INI
 * QP's send CQ; an SRQ with no receive holds the message and every later
 * one of that INI QP (RNR retry 7) unless xm_rnr_limited; a missing TGT or
 * SRQ, or a limited RNR, moves the INI QP to error, and so does a message
 * longer than its receive (the receive completes with LOC_LEN_ERR, the
 * send with REM_INV_REQ_ERR).  Segments are checked as the device checks
 * them when it executes a WR: a local one against the MRs of the QP's PD
 * (a receive's: the SRQ's), failing with LOC_PROT_ERR (at a receiver: the
 * sender gets REM_OP_ERR); an rkey against the MRs of the target SRQ's PD
 * (REM_ACCESS_ERR).  SEND, SEND_WITH_IMM, SEND_WITH_INV and
 * RDMA_WRITE_WITH_IMM take a receive (the last writes the remote address
 * and completes it as RECV_RDMA_WITH_IMM with the immediate; a send with
 * invalidate invalidates the type 2 window its rkey names, WITH_INV);
 * RDMA WRITE and READ and the atomics take none (an atomic returns the old
 * 8-byte word).  The TGT's access flags must allow the request (else an
 * invalid request), as the rdma_cm attributes give them (reads and atomics
 * only with responder resources).  As on mlx5,
 * destroying a QP removes its CQEs from its CQs; destroying an XRC SRQ
 * leaves its CQEs, and a poll that meets one fails (-2) and loses the
 * completions it took before it.  Control messages of xrc.c go through a
 * queue that xm_pump() delivers.
 */

#define XM_MAX_PROCS 16
#define XM_MAX_LMRS 4

/*
 * A device profile: the caps ia->dev_attr reports and the rules create_qp
 * applies to a send queue (sq_check: 0 or EINVAL; may lower
 * cap->max_inline_data to what it grants, like mlx5).  The model's
 * modify_qp refuses what the kernel core refuses (required and allowed
 * attribute masks per QP type and transition) and read depths above these
 * caps; create_srq_ex refuses more than max_srq_wr / max_srq_sge.
 */
struct xm_device {
	const char *name;
	int max_qp_wr, max_sge, max_qp_rd_atom, max_qp_init_rd_atom, max_srq_wr, max_srq_sge;
	int max_wqe;			/* mlx5: max_sq_desc_sz; mlx4: its power of two */
	int (*sq_check)(const struct xm_device *d, enum ibv_qp_type type, struct ibv_qp_cap *cap);
};

/* toy: small plain limits (the default); mlx5 and mlx4 (ConnectX-4+, -3) */
extern const struct xm_device xm_dev_toy, xm_dev_mlx5, xm_dev_mlx4;
/* The profile of processes opened from now on (xm_init: xm_profile). */
extern const struct xm_device *xm_device;
/*
 * The profile a suite runs under: run_unit registers each XRC suite once
 * per profile, with these as the CUnit suite init (and xm_profile_toy as
 * its cleanup).  A scenario about one device's limits sets xm_device after
 * xm_init.
 */
extern const struct xm_device *xm_profile;
int xm_profile_toy(void);
int xm_profile_mlx5(void);
int xm_profile_mlx4(void);

struct xm_proc {
	struct ibv_context ctx;		/* ia.verbs points here */
	const struct xm_device *dev;
	int node;
	bool dead;			/* gone: its control port does not answer */
	struct ofx_ia ia;
	struct ofx_pz pz;		/* on a PD of the fake */
	struct ofx_evd *recv_evd, *req_evd, *conn_evd;
	struct ofx_evd *cr_evd;		/* a PSP's (xm_use_cm) */
	/* its ids' address and route resolutions, and paths set instead (xm_use_cm) */
	int resolve_addrs, resolve_routes, path_sets;
	/* xm_lkey's registrations, freed at close as dat_ia_close frees an LMR left */
	struct xm_lmr {
		const void *addr;
		size_t len;
		DAT_LMR_HANDLE lmr;
		DAT_LMR_CONTEXT lkey;
		DAT_RMR_CONTEXT rkey;
	} lmrs[XM_MAX_LMRS];
	int nlmrs;
};

extern bool xm_rnr_limited;	/* RNR beyond the retry count breaks the INI QP */
extern bool xm_autopump;	/* xm_connect delivers the control messages (default) */
/*
 * Processes opened while set get an rdma_cm event channel: xrc.c then uses
 * its rdma_cm carrier (xrc_cm.c) over the model's ids (RDMA_PS_UDP/IB:
 * SIDR answered in the REP, connections with REQ/REP/REJ/RTU/DREQ, the
 * attributes of rdma_init_qp_attr()), and an INI QP refuses the attributes
 * the kernel refuses for it.  fake_cm counts the calls, keeps the last
 * parameters and fails them on demand, as for any test.
 */
extern bool xm_use_cm;

/*
 * The IB fabric under xm_use_cm.  Each node has one port: a GID and a LID
 * from the subnet manager.  rdma_resolve_addr gives an id both ends' GIDs
 * (id->route.addr.addr.ibaddr); rdma_resolve_route asks the SA (counted)
 * and gives id->route.path_rec as librdmacm does; rdma_set_option's
 * RDMA_OPTION_IB_PATH takes a path instead, as the kernel does (an id in
 * ADDR_RESOLVED, the one GMP | PRIMARY | BIDIRECTIONAL entry), and reports
 * ROUTE_RESOLVED.  rdma_connect needs a resolved route, and one whose DLID
 * or DGID is not the peer's port's any more reaches nobody: UNREACHABLE,
 * -ETIMEDOUT.  A live node without the listener answers (SIDR REP
 * IB_SIDR_UNSUPPORTED, REJ 8); a node without a live process does not.
 * xm_route_errors: that many SA queries from now on time out (ROUTE_ERROR).
 * xm_node_renumber: the SM gives the node's port another LID.
 * xm_node_replace: the node's HCA is replaced: another GID (and LID) behind
 * the same address.
 */
extern int xm_route_errors;
/*
 * The next that many INI connections (RDMA_PS_IB) under xm_use_cm: their
 * rdma_accept fails (EINVAL; the id's destroy then REJects the REQ), or
 * their REP is lost (both ends get UNREACHABLE, -ETIMEDOUT, once the
 * acceptor made its TGT).  Either way the sender tries again.
 */
extern int xm_ini_accept_failures, xm_ini_reps_lost;
/*
 * The next that many INI connections under xm_use_cm: their RTU is lost,
 * and the DREQ of the sender's destroy too.  The sender is connected; the
 * acceptor's id hears nothing until xm_ini_rep_timeout: the CM gave up on
 * its REP (UNREACHABLE, -ETIMEDOUT), seconds after the REP on a device,
 * so after what the sender did with it meanwhile.
 */
extern int xm_ini_rtus_lost;
void xm_ini_rep_timeout(void);
/* When set, creating an INI QP (XRC_SEND) fails with it (a device out of resources). */
extern int xm_ini_create_errno;
void xm_node_renumber(int node);
/*
 * The node's next SRQ number.  SRQs are numbered per node from the base
 * QPs start at, apart from them as on mlx5 and mlx4: an SRQ and a QP of a
 * node may have one number.
 */
void xm_node_next_srqn(int node, uint32_t srqn);
void xm_node_replace(int node);

/* Installs the model; xm_fini checks that every object was released. */
void xm_init(void);
void xm_fini(void);

/* Opens a process on `node` (IA with xrc, domain file `xrcd` or ""). */
struct xm_proc *xm_proc_open(int node, const char *xrcd, enum ofx_xrc_tgt tgt);
int xm_proc_try_open(int node, const char *xrcd, bool foreign, struct xm_proc **proc_p);
/*
 * Frees the process's EPs, EVDs and domain as ia_close does: its XRC
 * connections end first (ofx_xrc_ia_quiesce), and the peers hear their
 * DISCs (xm_pump) before the EPs and SRQs go, as the peers' progress
 * threads would deliver them.
 */
void xm_proc_close(struct xm_proc *p);
/* The process dies: its SRQs and QPs vanish, nothing is said to peers. */
void xm_proc_kill(struct xm_proc *p);

/* An EP of `p` on its EVDs: 8 receives, 16 requests of `iov` segments, `reads` each way. */
struct ofx_ep *xm_ep_with(struct xm_proc *p, int iov, int reads);
struct ofx_ep *xm_ep_new(struct xm_proc *p);	/* 1 segment, no reads */
/* A plain RC EP (1 segment, no reads), as an IA with xrc=off makes them. */
struct ofx_ep *xm_ep_rc(struct xm_proc *p);
/*
 * The lkey (and with xm_rkey the rkey) of an LMR of `p`'s PZ over [addr,
 * addr + len) with every privilege (remote atomics too), registered on first use: the model
 * checks every segment a WR names against the MRs of its QP's or SRQ's PD,
 * as the device does (a bad one fails the WR with LOC_PROT_ERR).
 */
DAT_LMR_CONTEXT xm_lkey(struct xm_proc *p, const void *addr, size_t len);
DAT_RMR_CONTEXT xm_rkey(struct xm_proc *p, const void *addr, size_t len);
/* The process an EP belongs to. */
struct xm_proc *xm_proc_of(const struct ofx_ep *ep);
/* Drives the whole handshake (offer, REJ accept, control messages). */
void xm_connect(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb,
		const void *pdata, int pdata_len, const void *acc, int acc_len);
/* Delivers queued control messages and drains every EVD's CQ until quiet. */
void xm_pump(void);

/* Model counters beyond fake_verbs' (SRQs, binds) and fake_cm's (connects). */
int xm_live_qps(int type);	/* IBV_QPT_XRC_SEND / XRC_RECV (TGT objects) / RC */
int xm_rc_recvs(void);		/* receives posted to RC QPs (not in RESET) */
int xm_tgts_on_node(int node);
/* INI QPs of `p` the device holds (the provider's ini_live says what it thinks it holds). */
int xm_proc_inis(struct xm_proc *p);

/* Whether the kernel core takes `mask` for a transition of a QP of `type`. */
int xm_modify_allowed(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      int mask);

/* The i-th live INI QP of `node` (NULL if none) and what create granted it. */
struct ibv_qp *xm_ini_qp(int node, int i, struct ibv_qp_cap *cap_p);
/*
 * The TGT an INI QP sends to (its RTR's dest_qp_num): a handle of it (NULL
 * if none is open) and its state (-1 if the TGT is gone).  A TGT delivers
 * only in RTR or RTS; otherwise, as when it is gone, the INI QP's retries
 * run out (RETRY_EXC_ERR).
 */
struct ibv_qp *xm_tgt_handle(struct ibv_qp *ini);
int xm_tgt_state(struct ibv_qp *ini);
/* Read depths set by modify_qp: an INI's max_rd_atomic, a TGT's max_dest_rd_atomic. */
int xm_qp_max_rd_atomic(struct ibv_qp *qp);
int xm_tgt_max_dest_rd_atomic(int node);

/*
 * Async events the model raises itself, as mlx5 and the kernel do: a TGT
 * entering the error state (a NAK, or modify_qp through any handle)
 * reports IBV_EVENT_QP_LAST_WQE_REACHED on every handle of it, each to its
 * process; an XRC SRQ whose limit is armed (ibv_modify_srq IBV_SRQ_LIMIT,
 * below max_wr; IBV_SRQ_MAX_WR is refused, mlx5 does not resize) reports
 * IBV_EVENT_SRQ_LIMIT_REACHED once when its receives fall below the limit,
 * and is disarmed.  They wait for xm_pump (the async thread), or for the
 * destroy of their QP or SRQ, which runs the handler first (libibverbs
 * waits for the acknowledgement).  xm_async_events: how many of `type`
 * reached a handler so far.
 */
int xm_async_events(enum ibv_event_type type);
/* The XRC SRQ of an EP's connection (NULL if none) and the receives it holds. */
struct ibv_srq *xm_ep_srq(const struct ofx_ep *ep);
int xm_srq_posted(struct ibv_srq *srq);

/*
 * The device reports `type` for `qp` on `p`'s async fd (ia.c's handler).
 * QP_FATAL first moves the QP to error and flushes what it holds.
 */
void xm_async_qp_event(struct xm_proc *p, struct ibv_qp *qp, enum ibv_event_type type);
/* The device reports `type` (SRQ_ERR, SRQ_LIMIT_REACHED) for `srq` on `p`'s async fd. */
void xm_async_srq_event(struct xm_proc *p, struct ibv_srq *srq, enum ibv_event_type type);
/*
 * The device reports `type` for `qp` and the async thread has not run the
 * handler yet: ibv_destroy_qp of `qp` then waits until it has (the model
 * runs it in a thread and fails the test if it blocks for a second).
 */
void xm_async_qp_event_unacked(struct xm_proc *p, struct ibv_qp *qp, enum ibv_event_type type);

/*
 * An RC connection request from `from` to `to` as rdma_cm delivers it (both
 * xm_use_cm): returns the passive id (its peer is `from`'s new id, *active_p)
 * and fills *ev_p with the CONNECT_REQUEST event's conn param.
 */
struct rdma_cm_id *xm_cm_request(struct xm_proc *from, struct xm_proc *to,
				 const struct rdma_conn_param *req, struct rdma_cm_id **active_p,
				 struct rdma_conn_param *ev_p);

#endif
