/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CM_H
#define OFX_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <dat2/udat.h>
#include <rdma/rdma_cma.h>
#include "pdata.h"

struct ofx_ia;

/*
 * The rdma_cm layer: cm_id life cycle, address and route resolution with
 * retry, and event dispatch.  It knows no DAT object: every cm_id the
 * provider creates on an IA's event channel has as its context a handler
 * stored with its owner (an EP, SP or CSP), and each event goes to it.
 */

/*
 * Where the events of a cm_id go.  fn runs in the progress thread with no
 * provider lock held; *destroy_p may take an id to destroy after the event
 * is acked (rdma_destroy_id waits for the ack).  fn returns false when the
 * id is no longer its owner's (it changed hands meanwhile: a CR accepted on
 * an EP or handed off to another PSP); the CM then reads the id's handler
 * again and passes the event on if it changed.  A CONNECT_REQUEST goes to
 * the listener's handler (the new id starts with the listener's context).
 */
typedef bool (*ofx_cm_event_fn)(void *ctx, struct rdma_cm_event *ev,
				struct rdma_cm_id **destroy_p);

struct ofx_cm_handler {
	ofx_cm_event_fn fn;
	void *ctx;
};

/* An RDMA_PS_TCP id on the IA's channel whose events go to `h`. */
int ofx_cm_id_create(struct ofx_ia *ia, struct ofx_cm_handler *h, struct rdma_cm_id **id_p);

/* Hands an id (and its next events) to another owner. */
static inline void ofx_cm_id_set_handler(struct rdma_cm_id *id, struct ofx_cm_handler *h)
{
	id->context = h;
}

/*
 * A new id for `h` (with the configured TOS) and address resolution towards
 * `dst`; *id_p is set before the resolution starts (its events may come at
 * once) and cleared again if it fails.
 */
int ofx_cm_resolve(struct ofx_ia *ia, struct ofx_cm_handler *h,
		   const struct sockaddr_storage *dst, struct rdma_cm_id **id_p);

/*
 * ADDR_ERROR or ROUTE_ERROR `ev` of `id`: true if the step timed out and is
 * started again (at most cm_retries times, counted in *retries_p).
 */
bool ofx_cm_resolve_retry(struct ofx_ia *ia, struct rdma_cm_id *id, struct rdma_cm_event *ev,
			  const struct sockaddr_storage *dst, unsigned int *retries_p);

/*
 * Destroys an id its owner let go of (NULL-safe), then waits out what the
 * progress thread is running.  Called with no lock held: rdma_destroy_id
 * waits for the id's events in flight, whose handler may wait for the
 * owner's lock.
 */
void ofx_cm_id_destroy(struct ofx_ia *ia, struct rdma_cm_id *id);

/*
 * The progress-thread handler of the IA's channel fd: drains events until
 * EAGAIN and routes each to its id's handler (the XRC carrier's ids first,
 * xrc.h).
 */
void ofx_cm_process_events(void *ia_arg);

/* Moves `qp` to `state` with the attributes rdma_cm computes for `id`. */
int ofx_cm_qp_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state);

/* The rdma_cm port for a DAT connection qualifier (same function as stock). */
uint16_t ofx_conn_qual_to_port(DAT_CONN_QUAL qual);

/*
 * Max consumer private data of a REQ on this IA's transport (what ia_query
 * reports), and of a REP; reply_has_hdr: the REP carries our trailer (the
 * REQ did).  IB/RoCE: 56 / 160 (as stock); iWARP: 248 each (see cm.c),
 * minus the 8-byte trailer where it travels.
 */
int ofx_cm_max_pdata(const struct ofx_ia *ia);
int ofx_cm_max_accept_pdata(const struct ofx_ia *ia, bool reply_has_hdr);
/*
 * Bytes of the REQ / REP private data that carry ours and the consumer's;
 * pads: the receiver sees the whole area, zero padded (IB/RoCE).
 */
int ofx_cm_req_area(const struct ofx_ia *ia);
int ofx_cm_rep_area(const struct ofx_ia *ia);
bool ofx_cm_pads_pdata(const struct ofx_ia *ia);

/* For logs: the address of `ss`. */
const char *ofx_cm_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len);

/*
 * Stores the IPv4 or IPv6 address `addr` in `ss`, zero padded to the size
 * of a sockaddr_in6 (any other family is stored as IPv4's size, as before).
 * The bytes after that stay as they are: zero in every storage the
 * provider keeps, because EPs and CRs are calloc'd and every writer of a
 * peer address (connect, common connect, the CR, accept) stores it with
 * this, while XRC's accept copies a whole storage that was kept so; a
 * whole-storage copy or compare still sees the address zero padded.  A
 * few stores, where zeroing the 128 bytes and a copy of the address's
 * length cost each connect about 50 instructions, and a whole-storage copy
 * each accept about 17 (cm-cost).
 */
static inline void ofx_cm_addr_set(struct sockaddr_storage *ss, const struct sockaddr *addr)
{
	struct sockaddr_in6 *head = (struct sockaddr_in6 *)ss;

	if (addr->sa_family == AF_INET6) {
		*head = *(const struct sockaddr_in6 *)addr;
		return;
	}
	*head = (struct sockaddr_in6){ 0 };
	*(struct sockaddr_in *)ss = *(const struct sockaddr_in *)addr;
}

/*
 * Transport retries (IB retry_cnt).  Not 7, what stock sends: soft-RoCE
 * (rxe) treats 7 as "retry forever", so a peer whose host went silent would
 * never fail the QP and the EP would never see BROKEN (ofx_fault_tests
 * peer_vanished).  6 keeps real HCAs within one retry of stock.
 */
#define OFX_RETRY_COUNT 6

#endif
