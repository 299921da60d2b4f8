/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_XRC_MODEL_H
#define OFX_TEST_XRC_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "pz.h"

/*
 * A model of XRC semantics behind the verbs seam (no device has XRC here).
 * Nodes have an IPv4 address; processes on a node are IAs whose ibv_context
 * names the node.  XRC domains are per node and shared by everything that
 * opens the same file (same inode); a private domain is fresh.  SRQ and QP
 * numbers are unique in the model.  A TGT QP lives while any handle (the
 * creator's or an ibv_open_qp one) does.  post_send on an INI QP routes by
 * its TGT and wr->qp_type.xrc.remote_srqn to that SRQ's next receive
 * (copying the bytes, completing on the SRQ's CQ) and completes on the INI
 * QP's send CQ; an SRQ with no receive holds the message and every later
 * one of that INI QP (RNR retry 7) unless xm_rnr_limited; a missing TGT or
 * SRQ, or a limited RNR, moves the INI QP to error.  Control messages of
 * xrc.c go through a queue that xm_pump() delivers.
 */

#define XM_MAX_PROCS 16

struct xm_proc {
	struct ibv_context ctx;		/* ia.verbs points here */
	int node;
	bool dead;			/* gone: its control port does not answer */
	struct ofx_ia ia;
	struct ibv_pd pd;
	struct ofx_pz pz;
	struct ofx_evd *recv_evd, *req_evd, *conn_evd;
};

extern bool xm_rnr_limited;	/* RNR beyond the retry count breaks the INI QP */
extern bool xm_autopump;	/* xm_connect delivers the control messages (default) */
/*
 * Processes opened while set get an rdma_cm event channel: xrc.c then uses
 * its rdma_cm carrier (xrc_cm.c) over the model's ids (RDMA_PS_UDP/IB:
 * SIDR answered in the REP, connections with REQ/REP/REJ/RTU/DREQ, the
 * attributes of rdma_init_qp_attr()), and an INI QP refuses the attributes
 * the kernel refuses for it.
 */
extern bool xm_use_cm;

/* Installs the model; xm_fini checks that every object was released. */
void xm_init(void);
void xm_fini(void);

/* Opens a process on `node` (IA with xrc, domain file `xrcd` or ""). */
struct xm_proc *xm_proc_open(int node, const char *xrcd, enum ofx_xrc_tgt tgt);
int xm_proc_try_open(int node, const char *xrcd, bool foreign, struct xm_proc **proc_p);
/* Frees the process's EPs, EVDs and domain (ia_close). */
void xm_proc_close(struct xm_proc *p);
/* The process dies: its SRQs and QPs vanish, nothing is said to peers. */
void xm_proc_kill(struct xm_proc *p);

struct ofx_ep *xm_ep_new(struct xm_proc *p);
/* Drives the whole handshake (offer, REJ accept, control messages). */
void xm_connect(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb,
		const void *pdata, int pdata_len, const void *acc, int acc_len);
/* Delivers queued control messages and drains every EVD's CQ until quiet. */
void xm_pump(void);

/* Model counters. */
int xm_live_qps(int type);	/* IBV_QPT_XRC_SEND / XRC_RECV (TGT objects) / RC */
int xm_live_srqs(void);
int xm_tgts_on_node(int node);
int xm_cm_connects(void);	/* rdma_connect calls (carrier) */
const uint8_t *xm_last_reject(int *len_p);

#endif
