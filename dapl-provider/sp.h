/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_SP_H
#define OFX_SP_H

#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include "obj.h"
#include "cm.h"
#include "cr.h"

struct ofx_evd;
struct ofx_ep;

/*
 * A service point: PSP, RSP or CSP (obj.type tells which).  Each listens on
 * its own rdma_cm id bound to <IA address>:<port(conn_qual)>.
 */
struct ofx_sp {
	struct ofx_obj obj;
	pthread_mutex_t lock;		/* before ep->lock and evd->lock */
	struct rdma_cm_id *listen_id;
	/* the context of listen_id and of its CRs' ids: the SP's handler (cm.h) */
	struct ofx_cm_handler cm_handler;
	DAT_CONN_QUAL conn_qual;
	struct ofx_evd *evd;		/* CR EVD (PSP/RSP) or connection EVD (CSP) */
	DAT_PSP_FLAGS psp_flags;
	struct ofx_ep *ep;		/* RSP: the reserved EP */
	/*
	 * PSP/RSP: the CRs not yet accepted or rejected and whether new ones
	 * are taken (cr.h), under `lock`.  Their cm_ids carry the SP's
	 * handler as context, not the CR's.
	 */
	struct ofx_cr_queue crq;
	struct ofx_list csp_eps;	/* CSP: the EPs whose ep->csp is this one */
	struct sockaddr_storage csp_addr; /* CSP: the address csp_query reports */
};
OFX_DEFINE_FROM_HANDLE(sp, PSP)

/* The SP behind a PSP, RSP or CSP handle (type checked against `type`). */
struct ofx_sp *ofx_sp_lookup(DAT_HANDLE h, enum ofx_obj_type type);

DAT_RETURN ofx_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
			  DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_p);
DAT_RETURN ofx_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual_p, DAT_EVD_HANDLE evd,
			      DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_p);
DAT_RETURN ofx_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param);
DAT_RETURN ofx_psp_free(DAT_PSP_HANDLE psp);
DAT_RETURN ofx_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep,
			  DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp_p);
DAT_RETURN ofx_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param);
DAT_RETURN ofx_rsp_free(DAT_RSP_HANDLE rsp);

/* ia_close cleanup. */
void ofx_sp_destroy(struct ofx_sp *sp);

/*
 * Shared by PSP, RSP and CSP: create listening on <IA address>:port(qual).
 * `flags` is a PSP's DAT_PSP_FLAGS (DAT_PSP_CONSUMER_FLAG for the others),
 * set before the first request can arrive.  The SP's ids report to `fn`
 * with the SP as ctx (a CSP's own); NULL: a PSP's or RSP's, whose requests
 * become CRs (ofx_sp_connect_request, ofx_sp_cr_event).
 */
int ofx_sp_create(struct ofx_ia *ia, enum ofx_obj_type type, DAT_CONN_QUAL qual,
		  struct ofx_evd *evd, DAT_PSP_FLAGS flags, ofx_cm_event_fn fn,
		  struct ofx_sp **sp_p);
/* Rejects a request the consumer never sees, with stock's 4-byte header. */
void ofx_sp_reject_id(struct rdma_cm_id *id);

/*
 * Progress thread: a CONNECT_REQUEST arrived on `sp`'s listen id.  Returns a
 * cm_id the caller must destroy after acking the event (a refused request),
 * or NULL.
 */
struct rdma_cm_id *ofx_sp_connect_request(struct ofx_sp *sp, struct rdma_cm_event *ev);

/*
 * Progress thread: an event on the cm_id of a CR of `sp`.  Returns false when
 * the id no longer belongs to a CR of `sp` (it was accepted meanwhile; the
 * caller re-reads id->context).
 */
bool ofx_sp_cr_event(struct ofx_sp *sp, struct rdma_cm_event *ev);

#endif
