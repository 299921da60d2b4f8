/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EP_TRANSPORT_H
#define OFX_EP_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct ofx_ep;
struct ofx_conn_req;

/*
 * What an EP's transport adds to the RC connection that ep_cm.c runs, chosen
 * once when the EP is attached (ep_attach): ofx_ep_rc_transport (ep.c),
 * where every step is plain RC, or ofx_xrc_ep_transport (ep_xrc.c), whose
 * connection may end on the shared XRC QPs, or ofx_xrc_only_ep_transport,
 * the same without an RC QP for an offer (xrc_rc_fallback=no).  The connection code calls
 * these instead of asking which transport it has.  Every hook runs with
 * ep->lock held unless it says otherwise; a hook returning bool returns
 * true when it took the step over (*ret_p then holds its result).
 *
 * The two send/receive posts stay a predicted branch on ep->xrc in ep.c:
 * an indirect call there costs the data path instructions (README,
 * "Speed").
 */
struct ofx_ep_transport {
	const char *name;
	/*
	 * dat_ep_connect: may put the transport's offer in the REQ
	 * (*offered_p true); else ep_cm.c sends the consumer's data as usual.
	 */
	int (*connect)(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p);
	/* The REQ holds an offer: receives wait until the answer says where they go. */
	bool (*offered)(const struct ofx_ep *ep);
	/*
	 * ROUTE_RESOLVED: the QP number the REQ names (rdma_connect's qp_num:
	 * our ids have no QP), the RC QP it names moved to INIT (ofx_cm_req_qp).
	 */
	int (*req_qpn)(struct ofx_ep *ep, uint32_t *qpn_p);
	/*
	 * A plain REP answered the offer: the peer runs RC.  true: the
	 * connection goes on over the RC QP of the REQ; false: the transport
	 * refuses RC (it logged why) and the connect fails.
	 */
	bool (*fallback)(struct ofx_ep *ep);
	/* REJECTED of the active side: an answer of the transport's own? */
	bool (*rejected)(struct ofx_ep *ep, struct rdma_cm_event *ev,
			 struct rdma_cm_id **destroy_p);
	/* dat_cr_accept of a request that carries the transport's offer. */
	bool (*accept)(struct ofx_ep *ep, const struct ofx_conn_req *req, const void *pdata,
		       int pdata_len, int *ret_p);
	bool (*disconnect)(struct ofx_ep *ep, bool abrupt, int *ret_p);
	/* dat_ep_reset, no lock held: let what is in flight finish. */
	void (*quiesce)(struct ofx_ep *ep);
	/* dat_ep_reset: nonzero refuses it (the transport is not done yet). */
	int (*reset)(struct ofx_ep *ep);
	/*
	 * Where the EP's RC QP lives.  false (RC): with the EP, made at
	 * attach; after a connection it may sit in ERROR for good on some
	 * devices (siw), so reset builds a new one.  true (XRC): with one
	 * connection that runs over RC, made by the transport's connect or
	 * accept hook (ofx_ep_qp_open); attach makes none, reset and ep_free
	 * destroy it and build none.
	 */
	bool qp_per_connection;
	/*
	 * dat_rmr_bind: the connection runs on the EP's own QP, which can bind
	 * a window (an XRC connection sends on a shared INI QP, which cannot
	 * bind for one EP; mlx5 takes the bind on the idle RC QP and never
	 * executes it).
	 */
	bool (*binds_windows)(const struct ofx_ep *ep);
	/* A completion of this EP's transport (not a DTO of the consumer's)? */
	bool (*completion)(struct ofx_ep *ep, const struct ibv_wc *wc);
};

extern const struct ofx_ep_transport ofx_ep_rc_transport;
/* xrc_rc_fallback=yes, and =no (ofx_xrc_ep_transport_of picks: ep_xrc.h) */
extern const struct ofx_ep_transport ofx_xrc_ep_transport;
extern const struct ofx_ep_transport ofx_xrc_only_ep_transport;

#endif
