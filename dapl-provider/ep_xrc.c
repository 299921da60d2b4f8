/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_XRC
#include "ep_xrc.h"
#include "cm.h"
#include "ep.h"
#include "ep_cm.h"
#include "ep_conn.h"
#include "ep_transport.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "pz.h"
#include "verbs.h"
#include "xrc.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* ---- the EP as the owner of its XRC connection (xrc.h) -------------------- */

static void ep_xrc_established(void *owner, bool active)
{
	/* the active side's event carries the accept data of the XRC answer */
	ofx_ep_conn_report(owner, OFX_EP_CONNECTED, DAT_CONNECTION_EVENT_ESTABLISHED, active);
}

/* The end of the connection, reported once (`report`). */
static void ep_xrc_end(struct ofx_ep *ep, DAT_EVENT_NUMBER num, bool report)
{
	if (report)
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, num, false);
	else
		ofx_ep_conn_move(ep, OFX_EP_DISCONNECTED);
}

static void ep_xrc_failed(void *owner, bool active, bool report)
{
	ep_xrc_end(owner,
		   active ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED :
			    DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
		   report);
}

static void ep_xrc_disconnected(void *owner, bool report)
{
	ep_xrc_end(owner, DAT_CONNECTION_EVENT_DISCONNECTED, report);
}

static void ep_xrc_broken(void *owner, bool report, bool async)
{
	struct ofx_ep *ep = owner;

	ep_xrc_end(ep, DAT_CONNECTION_EVENT_BROKEN, report);
	if (async)
		ofx_ia_post_async(ep->obj.ia, DAT_ASYNC_ERROR_EP_BROKEN, (DAT_HANDLE)&ep->obj);
}

static void ep_xrc_disconnecting(void *owner)
{
	struct ofx_ep *ep = owner;

	if (ep->state != OFX_EP_DISCONNECTED)
		ofx_ep_conn_move(ep, OFX_EP_DISCONNECT_PENDING);
}

static void ep_xrc_recv_stop(void *owner)
{
	struct ofx_ep *ep = owner;

	/* receives posted from now on are held until the next connection */
	atomic_store(&ep->recv_live, false);
}

static void ep_xrc_accept_more(void *owner, const void *data, int len)
{
	struct ofx_ep *ep = owner;

	/* the answer's part and this make at most OFX_XRC_ACCEPT_MAX bytes */
	if (len > 0 && ep->pdata_len + len <= (int)sizeof(ep->pdata)) {
		memcpy(ep->pdata + ep->pdata_len, data, (size_t)len);
		ep->pdata_len += len;
	}
}

static const struct ofx_xrc_owner_ops ep_xrc_owner_ops = {
	.established = ep_xrc_established,
	.failed = ep_xrc_failed,
	.disconnected = ep_xrc_disconnected,
	.broken = ep_xrc_broken,
	.disconnecting = ep_xrc_disconnecting,
	.recv_stop = ep_xrc_recv_stop,
	.accept_more = ep_xrc_accept_more,
};

/* What the connection's SRQ and INI QP are made for: the EP's queues now. */
static void ep_xrc_params(const struct ofx_ep *ep, struct ofx_xrc_conn_params *p)
{
	p->pd = ep->pz->pd;
	p->recv_evd = ep->recv_evd;
	p->req_evd = ep->req_evd;
	p->srq_context = (void *)&ep->obj;
	p->recv_wr = (uint32_t)ep->attr.max_recv_dtos + 1;
	p->recv_sge = ep->attr.max_recv_iov ? (uint32_t)ep->attr.max_recv_iov : 1;
	/* the EP's requests and its fence */
	p->send_wr = ep->attr.max_request_dtos > 0 ? (uint32_t)ep->attr.max_request_dtos + 1 : 2;
	p->send_sge = ep->attr.max_request_iov > 0 ? (uint32_t)ep->attr.max_request_iov : 1;
	p->inline_data = ep->max_inline;
}

/* ---- EP life cycle -------------------------------------------------------- */

int ofx_xrc_ep_create(struct ofx_ep *ep)
{
	/* an SRQ EP stays RC; attached again after dat_ep_modify: the state stays */
	if (ep->srq || ep->xrc)
		return 0;
	return ofx_xrc_conn_create(ep->obj.ia, &ep_xrc_owner_ops, ep, &ep->lock, &ep->xrc);
}

void ofx_xrc_ep_quiesce(struct ofx_ep *ep)
{
	if (ep->xrc)
		ofx_xrc_conn_quiesce(ep->xrc);
}

bool ofx_xrc_ep_teardown(struct ofx_ep *ep)
{
	bool clean;

	if (!ep->xrc)
		return true;
	clean = ofx_xrc_conn_close(ep->xrc);
	/* what is left of the EP's completions on the SRQ goes with it */
	ofx_ep_set_dying(ep, true);
	return ofx_xrc_conn_forget(ep->xrc) && clean;
}

void ofx_xrc_ep_free(struct ofx_ep *ep)
{
	ofx_xrc_conn_free(ep->xrc);
	ep->xrc = NULL;
}

int ofx_xrc_ep_reset(struct ofx_ep *ep)
{
	return ep->xrc ? ofx_xrc_conn_reset(ep->xrc) : 0;
}

/* ---- connection hooks ----------------------------------------------------- */

/* Puts the offer in the REQ if the connection can be XRC (xrc.h step 1). */
static int xrc_offer(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p)
{
	struct ofx_xrc_conn_params params;
	int n;

	*offered_p = false;
	if (!ep->xrc || ep->csp || ofx_cm_p2p_requested(ep))
		return 0;
	ep_xrc_params(ep, &params);
	n = ofx_xrc_conn_offer(ep->xrc, &params, pdata, pdata_len, ep->req_pdata,
			       (int)sizeof(ep->req_pdata));
	if (n <= 0)
		return n; /* 0: no room for the offer, the connection is RC */
	ep->req_pdata_len = n;
	*offered_p = true;
	return 0;
}

int ofx_xrc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p)
{
	int ret;

	*offered_p = false;
	if (!ep->xrc)
		return 0;
	/*
	 * The REQ names an RC QP either way: a peer without XRC connects to
	 * it (xrc.h section 8).  An XRC answer closes it (ofx_xrc_rejected).
	 */
	ret = ofx_ep_qp_open(ep);
	if (ret)
		return ret;
	return xrc_offer(ep, pdata, pdata_len, offered_p);
}

bool ofx_xrc_offered(const struct ofx_ep *ep)
{
	return ep->xrc && ofx_xrc_conn_offered(ep->xrc);
}

bool ofx_xrc_fallback(struct ofx_ep *ep)
{
	if (ep->xrc)
		ofx_xrc_conn_fallback(ep->xrc);
	return true;
}

bool ofx_xrc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_xrc_conn_params params;
	const void *acc;
	int acc_len, ret;

	if (!ep->xrc ||
	    !ofx_xrc_conn_answered(ep->xrc, ev->status, ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &acc, &acc_len))
		return false;
	*destroy_p = ev->id;
	memcpy(ep->pdata, acc, (size_t)acc_len);
	ep->pdata_len = acc_len;
	ofx_ep_conn_move(ep, OFX_EP_COMPLETION_PENDING);
	/* the RC QP the REQ named took no work request: the connection is XRC */
	ofx_ep_qp_close(ep);

	ret = ofx_ep_recv_go_live(ep, false);
	ep_xrc_params(ep, &params);
	ofx_xrc_conn_confirm(ep->xrc, &params, &ep->remote_addr, ret);
	return true;
}

/*
 * ep->lock held.  A request without an offer we can take: ep_cm.c accepts on
 * the RC QP made here (false), or the accept fails (true, *ret_p).
 */
static bool accept_rc(struct ofx_ep *ep, int *ret_p)
{
	int ret = ofx_ep_qp_open(ep);

	if (ret) {
		*ret_p = ret;
		return true;
	}
	ofx_xrc_count_rc(ep->obj.ia);
	return false;
}

bool ofx_xrc_accept(struct ofx_ep *ep, const struct ofx_conn_req *req, const void *pdata,
		    int pdata_len, int *ret_p)
{
	struct ofx_xrc_conn *xe = ep->xrc;
	struct ofx_xrc_conn_params params;
	uint8_t rej[OFX_XRC_ANSWER_LEN];
	int ret, n;

	if (!xe)
		return false;
	ep_xrc_params(ep, &params);
	if (ep->csp || !req->has_hdr || !(req->hdr.flags & OFX_PDATA_F_XRC) ||
	    (req->hdr.flags & OFX_PDATA_F_P2P) || pdata_len > OFX_XRC_ACCEPT_MAX ||
	    !ofx_xrc_conn_fits(xe, &params))
		return accept_rc(ep, ret_p);
	ofx_ep_qp_close(ep); /* a connect that failed before its REQ left one */
	ret = ofx_xrc_conn_accept_begin(xe, &params, req->remote_addr);
	if (ret)
		goto out;
	ep->remote_addr = *req->remote_addr;
	ret = ofx_ep_recv_go_live(ep, false);
	if (ret)
		goto err_abort;
	n = ofx_xrc_conn_accept_answer(xe, pdata, pdata_len, rej, (int)sizeof(rej));
	if (n < 0) {
		ret = n;
		goto err_abort;
	}
	ofx_ep_conn_move(ep, OFX_EP_COMPLETION_PENDING);
	if (ofx_verbs->reject(req->cm_id, rej, (uint8_t)n)) {
		ret = -errno;
		ofx_err("send xrc accept: %m");
		ofx_ep_conn_move(ep, OFX_EP_UNCONNECTED);
		goto err_abort;
	}
	*ret_p = 0;
	return true;

err_abort:
	ofx_xrc_conn_accept_abort(xe);
out:
	*ret_p = ret;
	return true;
}

bool ofx_xrc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p)
{
	(void)abrupt;
	if (!ep->xrc || !ofx_xrc_conn_is_xrc(ep->xrc))
		return false;
	*ret_p = 0;
	ofx_xrc_conn_disconnect(ep->xrc);
	return true;
}

/* ---- data path ------------------------------------------------------------ */

struct ibv_qp *ofx_xrc_sq_begin(struct ofx_ep *ep, struct ibv_send_wr *wr)
{
	return ofx_xrc_conn_sq_begin(ep->xrc, wr, ep->qp);
}

void ofx_xrc_sq_end(struct ofx_ep *ep, struct ibv_qp *qp)
{
	ofx_xrc_conn_sq_end(ep->xrc, qp, ep->qp);
}

int ofx_xrc_post_recv(struct ofx_ep *ep, struct ibv_recv_wr *wr)
{
	return ofx_xrc_conn_post_recv(ep->xrc, wr, ep->qp);
}

bool ofx_xrc_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	const struct ofx_cookie *ck = (const struct ofx_cookie *)(uintptr_t)wc->wr_id;
	const struct ofx_cookie_ring *rr = &ep->recv_ring;
	bool is_recv = ck >= rr->slots && ck < rr->slots + rr->size;

	return ep->xrc && ofx_xrc_conn_completion(ep->xrc, wc, is_recv);
}

/* ---- the EP transport of XRC-backed EPs (ep_transport.h) ------------------- */

/*
 * An XRC-backed EP has an RC QP only for a connection that runs over RC,
 * which moves it to RTS (or ERROR later); one still in RESET or INIT
 * belongs to an offer not yet answered.
 */
static bool xrc_binds_windows(const struct ofx_ep *ep)
{
	return ep->qp && ep->qp->state != IBV_QPS_RESET && ep->qp->state != IBV_QPS_INIT;
}

const struct ofx_ep_transport ofx_xrc_ep_transport = {
	.name = "xrc",
	.connect = ofx_xrc_connect,
	.offered = ofx_xrc_offered,
	.req_qpn = ofx_cm_req_qp,
	.fallback = ofx_xrc_fallback,
	.rejected = ofx_xrc_rejected,
	.accept = ofx_xrc_accept,
	.disconnect = ofx_xrc_disconnect,
	.quiesce = ofx_xrc_ep_quiesce,
	.reset = ofx_xrc_ep_reset,
	.qp_per_connection = true,	/* only a connection over RC has an RC QP */
	.binds_windows = xrc_binds_windows,
	.completion = ofx_xrc_dto_notify,
};

/*
 * xrc_rc_fallback=no: every peer runs libdaplofx with XRC, so an offer
 * needs no RC QP for a peer that might answer RC.  Its REQ names a TGT QP
 * made for it instead (a peer that answers XRC never reads the number, but
 * the peer's IB CM refuses one that a connection of its node holds from
 * our device: xrc.h step 1).  A REP (the peer runs RC, or declined the
 * offer) is refused.  A connect that makes no offer (p2p,
 * common connect, consumer data with no room for the offer) is RC as with
 * the fallback.
 */
static int xrc_only_connect(struct ofx_ep *ep, const void *pdata, int pdata_len,
			    bool *offered_p)
{
	int ret = xrc_offer(ep, pdata, pdata_len, offered_p);

	return ret || *offered_p ? ret : ofx_ep_qp_open(ep);
}

static int xrc_only_req_qpn(struct ofx_ep *ep, uint32_t *qpn_p)
{
	if (!ofx_xrc_offered(ep))
		return ofx_cm_req_qp(ep, qpn_p);
	return ofx_xrc_conn_req_qpn(ep->xrc, qpn_p);
}

static bool xrc_only_fallback(struct ofx_ep *ep)
{
	char buf[INET6_ADDRSTRLEN];

	/* the offer keeps its SRQ until dat_ep_reset, ep_free or the next offer */
	ofx_warn("ep %p: %s accepted the xrc offer over rc: it runs without xrc (stock "
		 "libdaplofa, xrc=off, a device without xrc) or declined the offer (accept "
		 "data over %d bytes, more request iovs than its ini qps hold); "
		 "xrc_rc_fallback=no made no rc qp for it: connect refused",
		 (void *)ep, ofx_cm_addr_str(&ep->remote_addr, buf, sizeof(buf)),
		 OFX_XRC_ACCEPT_MAX);
	return false;
}

const struct ofx_ep_transport ofx_xrc_only_ep_transport = {
	.name = "xrc-only",
	.connect = xrc_only_connect,
	.offered = ofx_xrc_offered,
	.req_qpn = xrc_only_req_qpn,
	.fallback = xrc_only_fallback,
	.rejected = ofx_xrc_rejected,
	.accept = ofx_xrc_accept,
	.disconnect = ofx_xrc_disconnect,
	.quiesce = ofx_xrc_ep_quiesce,
	.reset = ofx_xrc_ep_reset,
	.qp_per_connection = true,
	.binds_windows = xrc_binds_windows,
	.completion = ofx_xrc_dto_notify,
};

const struct ofx_ep_transport *ofx_xrc_ep_transport_of(const struct ofx_ia *ia)
{
	return ia->cfg.xrc_rc_fallback ? &ofx_xrc_ep_transport : &ofx_xrc_only_ep_transport;
}
