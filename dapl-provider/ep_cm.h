/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_CM_H
#define OFX_EP_CM_H

#include <stdbool.h>
#include <sys/socket.h>
#include <dat2/udat.h>
#include <rdma/rdma_cma.h>
#include "pdata.h"

struct ofx_ep;

/*
 * A connection request as an EP's accept takes it; cr.c and csp.c fill it
 * from the REQ event they kept.  cm_id is cleared once the EP took it over
 * (else it stays the caller's: an XRC answer went out as a REJ, or the
 * accept failed).
 */
struct ofx_conn_req {
	struct rdma_cm_id *cm_id;
	const struct sockaddr_storage *remote_addr;	/* the caller's, not copied */
	struct rdma_conn_param param;	/* initiator depth etc. of the REQ */
	bool has_hdr;			/* the REQ carried our trailer */
	struct ofx_pdata_hdr hdr;
	DAT_CONN_QUAL local_qual;	/* the SP's qualifier */
};

/*
 * The RC connection steps of an EP over rdma_cm (ep_cm.c): the EP's cm_id
 * carries the EP's handler (cm.h), which runs the active, passive and
 * established sides.  All called with ep->lock held; they move the EP and
 * post the DAT connection events through ep_conn.h.
 *
 * ofx_cm_connect: starts address resolution towards addr:port(qual); the
 *   REQ private data (consumer bytes, plus our trailer when p2p is
 *   requested) is built here and sent at ROUTE_RESOLVED.
 * ofx_cm_accept: takes over the request's cm_id, moves the QP to RTS and
 *   sends the REP.
 * ofx_cm_disconnect: sends the DREQ; abrupt also arms a bounded wait after
 *   which the EP is DISCONNECTED whatever the peer does.
 * ofx_cm_release: stops the EP's connection timers and detaches its cm_id,
 *   which it returns (NULL if none): the caller destroys it with
 *   ofx_cm_id_destroy() after dropping ep->lock (rdma_destroy_id waits for
 *   the events in flight, whose handler waits for that lock), and checks
 *   the state again once it holds the lock anew.
 */
int ofx_cm_connect(struct ofx_ep *ep, const struct sockaddr *addr, DAT_CONN_QUAL qual,
		   DAT_TIMEOUT timeout, const void *pdata, int pdata_len);
int ofx_cm_accept(struct ofx_ep *ep, struct ofx_conn_req *req, const void *pdata,
		  int pdata_len);
int ofx_cm_disconnect(struct ofx_ep *ep, bool abrupt);
struct rdma_cm_id *ofx_cm_release(struct ofx_ep *ep);

/*
 * The req_qpn hook of a REQ that names the EP's RC QP (ep_transport.h):
 * moves it to INIT and gives its number.  ep->lock held.
 */
int ofx_cm_req_qp(struct ofx_ep *ep, uint32_t *qpn_p);
/* Creates a fresh cm_id and starts address resolution (connect and retries). */
int ofx_cm_restart(struct ofx_ep *ep);
/* Arms the consumer's connect timeout (TIMED_OUT, or UNREACHABLE, on expiry). */
void ofx_cm_arm_conn_timer(struct ofx_ep *ep, DAT_TIMEOUT timeout);

/* Whether an EP asks for / grants p2p RTR mode (per-EP attr, then IA config). */
bool ofx_cm_p2p_requested(const struct ofx_ep *ep);
bool ofx_cm_p2p_granted(const struct ofx_ep *ep);

/* Common connect (csp.h) of the EP, as its connection steps see it. */
/*
 * Progress thread, ep->lock held: an attempt of an initiating EP failed with
 * `ev`.  Returns true if a retry was scheduled (the id to destroy is put in
 * *destroy_p), false if the failure is final.
 */
bool ofx_csp_retry(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p);

/*
 * Common connect on iWARP always runs p2p: an attempt the peer's CSP
 * refuses (an MPA reject) leaves siw's QP in ERROR with its receives
 * flushed (siw_qp_llp_close), so the initiator holds the consumer's
 * receives until an attempt is answered (ep_cm.c posts them before the RTR)
 * and retries on a new QP; only the RTR keeps the peer from sending before
 * those receives are posted.  Both ends are libdaplofx (the request carries
 * our trailer).  True for such an EP (ep->lock held).
 */
bool ofx_csp_holds_recvs(const struct ofx_ep *ep);

#endif
