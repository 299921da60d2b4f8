/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_XRC_H
#define OFX_EP_XRC_H

#include <stdbool.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct ofx_ep;
struct ofx_ia;
struct ofx_conn_req;
struct ofx_ep_transport;

/*
 * The EP side of XRC (ep_xrc.c): an XRC-backed EP owns one struct
 * ofx_xrc_conn of the XRC transport (xrc.h) in ep->xrc, and this file is
 * its transport (ofx_xrc_ep_transport, ep_transport.h) and its owner (the
 * ofx_xrc_owner_ops that move the EP, through ep_conn.h, when the
 * connection is established, fails, ends or breaks).
 *
 * EP life cycle (ep.c).  ofx_xrc_ep_create makes ep->xrc when the IA has a
 * carrier (no verbs resources yet; a no-op if it exists).  ofx_xrc_ep_teardown (ep->lock not
 * held) ends the current XRC connection (fence, DISC), waiting at most
 * cm_timeout_ms, and releases its SRQ, INI and TGT references; false if the
 * fence did not complete (the EP's sends may still complete: keep its
 * memory).  ofx_xrc_ep_free frees ep->xrc.  ofx_xrc_ep_quiesce (ep->lock
 * not held) waits at most cm_timeout_ms for a fence in flight, so that
 * ofx_xrc_ep_reset (ep->lock held) finds the connection over; that one
 * prepares the EP for a new connection, -EBUSY while one lasts.
 */
int ofx_xrc_ep_create(struct ofx_ep *ep);
/*
 * The transport of the IA's XRC-backed EPs (ep_attach, once per EP):
 * ofx_xrc_ep_transport, or ofx_xrc_only_ep_transport with
 * xrc_rc_fallback=no.
 */
const struct ofx_ep_transport *ofx_xrc_ep_transport_of(const struct ofx_ia *ia);
bool ofx_xrc_ep_teardown(struct ofx_ep *ep);
void ofx_xrc_ep_quiesce(struct ofx_ep *ep);
void ofx_xrc_ep_free(struct ofx_ep *ep);
int ofx_xrc_ep_reset(struct ofx_ep *ep);

/*
 * Connection hooks, all with ep->lock held.
 * ofx_xrc_connect: before the REQ is sent; when the offer is made it opens
 *   the SRQ and fills ep->req_pdata (*offered_p true).
 * ofx_xrc_offered: the REQ in flight carries an offer.
 * ofx_xrc_rejected: a REJECTED event while offering; true if it was P's
 *   XRC accept (the id goes to *destroy_p) and the handshake goes on.
 * ofx_xrc_fallback: a REP to the offer: the connection is RC (true).
 * ofx_xrc_accept: true if it handled the accept (result in *ret_p); false
 *   when the connection is to be RC.
 * ofx_xrc_disconnect: true if the EP's connection is XRC (result in *ret_p).
 */
int ofx_xrc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p);
bool ofx_xrc_offered(const struct ofx_ep *ep);
bool ofx_xrc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p);
bool ofx_xrc_fallback(struct ofx_ep *ep);
bool ofx_xrc_accept(struct ofx_ep *ep, const struct ofx_conn_req *req, const void *pdata,
		    int pdata_len, int *ret_p);
bool ofx_xrc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p);

/*
 * Data path (ep.c), lock-free like the RC one.  ofx_xrc_sq_begin returns the
 * QP to post on (the INI QP, with wr->qp_type.xrc.remote_srqn set; or the RC
 * QP outside an XRC connection) or NULL when the EP no longer sends: the
 * post then fails with INVALID_STATE.  ofx_xrc_sq_end ends what
 * ofx_xrc_sq_begin began.  ofx_xrc_post_recv posts to the EP's SRQ (or RC
 * QP) and returns 0 or a negative errno.  ofx_xrc_dto_notify takes over
 * ofx_ep_dto_notify for XRC connections (errors); false if the EP is not in
 * one.  The fence's completion goes to the XRC transport itself.
 */
struct ibv_qp *ofx_xrc_sq_begin(struct ofx_ep *ep, struct ibv_send_wr *wr);
void ofx_xrc_sq_end(struct ofx_ep *ep, struct ibv_qp *qp);
int ofx_xrc_post_recv(struct ofx_ep *ep, struct ibv_recv_wr *wr);
bool ofx_xrc_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc);

#endif
