/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CR_H
#define OFX_CR_H

#include <stdbool.h>
#include <pthread.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include "obj.h"
#include "pdata.h"
#include "util.h"

struct ofx_ep;
struct ofx_evd;
struct ofx_cm_handler;

/*
 * Where a PSP's or RSP's requests wait: the SP embeds one and fills it at
 * creation (sp.c); the CR layer knows no SP.  `lock` is the SP's lock
 * (before ep->lock and evd->lock) and guards `crs` and `listening`; the
 * other fields are fixed once the SP listens.  The CRs' cm_ids carry
 * `cm_handler` (the SP's) as context, not the CR, so the progress thread
 * finds a CR under `lock` and can never see one that accept or reject
 * already freed.
 */
struct ofx_cr_queue {
	pthread_mutex_t *lock;
	struct ofx_list crs;		/* CRs not yet accepted or rejected */
	bool listening;			/* false once freed; an RSP after its first request */
	DAT_CONN_QUAL conn_qual;
	struct ofx_evd *evd;		/* the CR EVD */
	DAT_SP_HANDLE handle;		/* what a CR event names as its SP */
	struct ofx_cm_handler *cm_handler;
	/*
	 * dat_cr_handoff: the queue of the IA's other PSP on `qual`, or NULL
	 * (no lock held; the caller then takes both queues' locks).
	 */
	struct ofx_cr_queue *(*find_psp)(struct ofx_cr_queue *self, DAT_CONN_QUAL qual);
};

/*
 * A connection request: owns the cm_id rdma_cm created for the incoming REQ
 * until it is accepted (the id moves to the EP) or rejected (destroyed).
 */
struct ofx_cr {
	struct ofx_obj obj;
	struct ofx_cr_queue *queue;	/* its SP's; NULL once orphaned (ofx_cr_orphan) */
	struct ofx_list sp_link;	/* in queue->crs, guarded by queue->lock */
	bool dead;			/* the peer gave up (REJ/timeout) before accept */
	struct rdma_cm_id *cm_id;
	struct ofx_ep *ep;		/* provider-created or RSP EP, else NULL */
	struct sockaddr_storage remote_addr;
	struct rdma_conn_param req_param; /* initiator depth etc. from the REQ */
	unsigned char pdata[256];	/* consumer part of the REQ data */
	DAT_COUNT pdata_len;
	bool has_hdr;			/* REQ carried our provider header */
	struct ofx_pdata_hdr hdr;
};
OFX_DEFINE_FROM_HANDLE(cr, CR)

DAT_RETURN ofx_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param);
DAT_RETURN ofx_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT pdata_len,
			 const DAT_PVOID pdata);
DAT_RETURN ofx_cr_reject(DAT_CR_HANDLE cr, DAT_COUNT pdata_len, const DAT_PVOID pdata);
/*
 * Moves a pending request to the other PSP of the IA listening on `qual`,
 * which gets a new DAT_CONNECTION_REQUEST_EVENT with a new CR handle; `cr`
 * is freed.  No such PSP: INVALID_PARAMETER/ARG2.  Takes both queues' locks
 * in address order.
 */
DAT_RETURN ofx_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual);

/* ia_close cleanup: rejects and frees. */
void ofx_cr_destroy(struct ofx_cr *cr);
/*
 * sp_free of a request still pending: it is refused and the EP it named is
 * released (a provider-created one freed), but the CR object stays valid,
 * with no SP, until the consumer rejects it (success) or accepts it
 * (DAT_INVALID_STATE), either of which frees it, or the IA closes.  Its
 * DAT_CONNECTION_REQUEST_EVENT may still be queued on the CR EVD, and the
 * handle in it must not dangle.
 */
void ofx_cr_orphan(struct ofx_cr *cr);

#endif
