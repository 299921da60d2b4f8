/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CM_H
#define OFX_CM_H

#include <rdma/rdma_cma.h>

struct ofx_ia;

/*
 * rdma_cm event dispatch.  Every cm_id the provider creates on an IA's event
 * channel has as its context the struct ofx_obj of its owner (EP, SP or CR);
 * ofx_cm_process_events() is the progress-thread handler of the IA's channel
 * fd: it drains events until EAGAIN and routes each to its owner.
 */
void ofx_cm_process_events(void *ia_arg);

/* Max consumer private data for REQ, REP and REJ on this IA's transport. */
int ofx_cm_max_pdata(const struct ofx_ia *ia);

#endif

#include <stdbool.h>
#include <dat2/udat.h>

struct ofx_ep;
struct ofx_cr;

/*
 * Connection state machine of an EP (all called with ep->lock held; they
 * post the DAT connection events themselves).
 *
 * ofx_cm_connect: starts address resolution towards addr:port(qual); the
 *   REQ private data (consumer bytes, plus our trailer when p2p is
 *   requested) is built here and sent at ROUTE_RESOLVED.
 * ofx_cm_accept: takes over the CR's cm_id, moves the QP to RTS and sends
 *   the REP.
 * ofx_cm_disconnect: sends the DREQ; abrupt also arms a bounded wait after
 *   which the EP is DISCONNECTED whatever the peer does.
 * ofx_cm_release: detaches and destroys the EP's cm_id and stops its timers;
 *   drops ep->lock while rdma_destroy_id waits for in-flight events, so the
 *   caller must re-check state afterwards.
 */
int ofx_cm_connect(struct ofx_ep *ep, const struct sockaddr *addr, DAT_CONN_QUAL qual,
		   DAT_TIMEOUT timeout, const void *pdata, int pdata_len);
int ofx_cm_accept(struct ofx_ep *ep, struct ofx_cr *cr, const void *pdata, int pdata_len);
int ofx_cm_disconnect(struct ofx_ep *ep, bool abrupt);
void ofx_cm_release(struct ofx_ep *ep);

/* Creates a fresh cm_id and starts address resolution (connect and retries). */
int ofx_cm_restart(struct ofx_ep *ep);
/* Arms the consumer's connect timeout (TIMED_OUT, or UNREACHABLE, on expiry). */
void ofx_cm_arm_conn_timer(struct ofx_ep *ep, DAT_TIMEOUT timeout);

/* Moves `qp` to `state` with the attributes rdma_cm computes for `id`. */
int ofx_cm_qp_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state);

/* Whether an EP asks for / grants p2p RTR mode (per-EP attr, then IA config). */
bool ofx_cm_p2p_requested(const struct ofx_ep *ep);
bool ofx_cm_p2p_granted(const struct ofx_ep *ep);

/* The 4-byte header stock libdaplofa puts in front of reject data. */
#define OFX_REJ_HDR_LEN 4
#define OFX_REJ_HDR 0x02000200u
/* rdma_cm REJECTED status of a consumer-defined reject (IB_CM_REJ_CONSUMER_DEFINED). */
#define OFX_REJ_CONSUMER 28
