/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "cm.h"
#include "cr.h"
#include "csp.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "sp.h"
#include "verbs.h"
#include "xrc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/*
 * Private-data areas of the IB CM messages as rdma_cm (RDMA_PS_TCP) leaves
 * them to us: REQ 92 - 36 bytes of rdma_cm header, REP 196, REJ 148.  On IB
 * and RoCE the receiver always sees the whole area, zero padded.
 */
#define OFX_IB_REQ_AREA 56
#define OFX_IB_REP_AREA 196
/* Consumer accept data cap, as stock (196 - 36), kept for symmetry. */
#define OFX_REP_CONSUMER_MAX 160

/* RTR completion polling interval while a passive p2p EP waits for it. */
#define OFX_RTR_POLL_US 1000

/*
 * Transport retries (IB retry_cnt).  Not 7, what stock sends: soft-RoCE
 * (rxe) treats 7 as "retry forever", so a peer whose host went silent would
 * never fail the QP and the EP would never see BROKEN (ofx_fault_tests
 * peer_vanished).  6 keeps real HCAs within one retry of stock.
 */
#define OFX_RETRY_COUNT 6

static bool ia_pads_pdata(const struct ofx_ia *ia)
{
	return ia->transport != OFX_TRANSPORT_IWARP;
}

int ofx_cm_max_pdata(const struct ofx_ia *ia)
{
	/* our trailer is only sent when p2p is requested; reserve it then */
	return OFX_IB_REQ_AREA - (ia->p2p_default ? OFX_PDATA_HDR_LEN : 0);
}

bool ofx_cm_p2p_requested(const struct ofx_ep *ep)
{
	if (ep->p2p_attr != OFX_AUTO)
		return ep->p2p_attr == OFX_ON;
	return ep->obj.ia->p2p_default;
}

bool ofx_cm_p2p_granted(const struct ofx_ep *ep)
{
	/*
	 * The passive side follows the initiator unless it is switched off
	 * explicitly (per-EP attribute, or p2p=off in ia_params/environment).
	 */
	if (ep->p2p_attr != OFX_AUTO)
		return ep->p2p_attr == OFX_ON;
	return ep->obj.ia->cfg.p2p != OFX_OFF;
}

int ofx_cm_qp_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = 0, ret;

	if (ofx_verbs->init_qp_attr(id, &attr, &mask)) {
		ret = -errno;
		ofx_err("rdma_init_qp_attr qp 0x%x state %d: %m", qp->qp_num, state);
		return ret ? ret : -EINVAL;
	}
	/* a passive QP takes the initiator's count: a stock peer asks for 7 */
	if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > OFX_RETRY_COUNT)
		attr.retry_cnt = OFX_RETRY_COUNT;
	ret = ofx_verbs->modify_qp(qp, &attr, mask);
	if (ret) {
		ofx_err("modify qp 0x%x to state %d (mask 0x%x): %s", qp->qp_num, state, mask,
			strerror(ret));
		return -ret;
	}
	return 0;
}

static void qp_to_error(struct ofx_ep *ep)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int ret = ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE);

	if (ret)
		ofx_warn("qp 0x%x to error: %s", ep->qp->qp_num, strerror(ret));
}

static const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a = ss->ss_family == AF_INET6 ?
			(const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr :
			(const void *)&((const struct sockaddr_in *)ss)->sin_addr;

	if (!inet_ntop(ss->ss_family, a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/* ---- active side --------------------------------------------------------- */

static void conn_timeout(void *arg);

static int build_req_pdata(struct ofx_ep *ep, const void *pdata, int len)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_pdata_hdr hdr = {
		.version = OFX_PDATA_VERSION,
		.flags = OFX_PDATA_F_P2P,
		.rtr = ia->cfg.rtr,
		.consumer_len = (uint16_t)len,
	};
	int ret;

	if (ep->csp) {
		/* common connect: the peer's CSP identifies us by our CSP port */
		hdr.flags = OFX_PDATA_F_CSP | (ofx_cm_p2p_requested(ep) ? OFX_PDATA_F_P2P : 0);
		hdr.csp_port = (uint16_t)ep->csp->conn_qual;
	} else if (!ofx_cm_p2p_requested(ep)) {
		/* no option needs a header: the consumer's bytes go out raw */
		if (len)
			memcpy(ep->req_pdata, pdata, len);
		ep->req_pdata_len = len;
		return 0;
	}
	ret = ofx_pdata_encode(&hdr, pdata, len, ia_pads_pdata(ia) ? OFX_IB_REQ_AREA : 0,
			       ep->req_pdata, sizeof(ep->req_pdata));
	if (ret < 0) {
		ofx_err("ep %p: %d bytes of private data leave no room for the p2p header",
			(void *)ep, len);
		return ret;
	}
	ep->req_pdata_len = ret;
	return 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

void ofx_cm_arm_conn_timer(struct ofx_ep *ep, DAT_TIMEOUT timeout)
{
	ofx_progress_timer_arm(ep->obj.ia->progress, &ep->conn_timer, timeout, conn_timeout, ep);
}

int ofx_cm_restart(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	char buf[INET6_ADDRSTRLEN];
	struct rdma_cm_id *id;
	int ret;

	if (ofx_verbs->create_id(ia->cm_channel, &id, &ep->obj, RDMA_PS_TCP)) {
		ret = -errno;
		ofx_err("rdma_create_id: %m");
		return ret;
	}
	if (ia->cfg.tos) {
		uint8_t tos = ia->cfg.tos;

		if (ofx_verbs->set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)))
			ofx_warn("set tos %u: %m", tos);
	}
	ep->cm_id = id;
	if (ofx_verbs->resolve_addr(id, (struct sockaddr *)&ia->addr,
				    (struct sockaddr *)&ep->remote_addr, ia->cfg.cm_timeout_ms)) {
		ret = -errno;
		ofx_err("rdma_resolve_addr to %s: %m",
			addr_str(&ep->remote_addr, buf, sizeof(buf)));
		ep->cm_id = NULL;
		ofx_verbs->destroy_id(id);
		return ret;
	}
	return 0;
}

int ofx_cm_connect(struct ofx_ep *ep, const struct sockaddr *addr, DAT_CONN_QUAL qual,
		   DAT_TIMEOUT timeout, const void *pdata, int pdata_len)
{
	struct ofx_ia *ia = ep->obj.ia;
	char buf[INET6_ADDRSTRLEN];
	bool offered = false;
	int ret = 0;

	/* an XRC EP offers XRC in the REQ (xrc.h step 1), else the usual data */
	if (ep->xrc)
		ret = ofx_xrc_connect(ep, pdata, pdata_len, &offered);
	if (!ret && !offered)
		ret = build_req_pdata(ep, pdata, pdata_len);
	if (ret)
		return ret;
	memset(&ep->remote_addr, 0, sizeof(ep->remote_addr));
	memcpy(&ep->remote_addr, addr, addr->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	set_port(&ep->remote_addr, ofx_conn_qual_to_port(qual));
	ep->remote_qual = qual;

	ep->cm_retries = 0;
	ep->p2p = false;
	ep->state = OFX_EP_ACTIVE_PENDING;
	ret = ofx_cm_restart(ep);
	if (ret) {
		ep->state = OFX_EP_UNCONNECTED;
		return ret;
	}
	if (timeout != DAT_TIMEOUT_INFINITE)
		ofx_cm_arm_conn_timer(ep, timeout);
	atomic_fetch_add(&ia->stats.conn_active, 1);
	ofx_dbg("ep %p qp 0x%x connecting to %s qual %llu p2p %s", (void *)ep, ep->qp->qp_num,
		addr_str(&ep->remote_addr, buf, sizeof(buf)), (unsigned long long)qual,
		ofx_cm_p2p_requested(ep) ? "requested" : "off");
	return 0;
}

/* Ends a connection attempt: state, event, and the id to destroy after ack. */
static void active_fail(struct ofx_ep *ep, DAT_EVENT_NUMBER num, struct rdma_cm_id **destroy_p)
{
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->conn_timer);
	ep->state = OFX_EP_DISCONNECTED;
	*destroy_p = ep->cm_id;
	ep->cm_id = NULL;
	ofx_ep_post_conn_event(ep, num, num == DAT_CONNECTION_EVENT_PEER_REJECTED);
}

static void conn_timeout(void *arg)
{
	struct ofx_ep *ep = arg;
	struct rdma_cm_id *id = NULL;

	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_ACTIVE_PENDING) {
		ofx_info("ep %p qp 0x%x: connect timed out%s", (void *)ep, ep->qp->qp_num,
			 ep->csp_no_listener ? " (no common service point at the peer)" : "");
		ep->pdata_len = 0;
		ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->csp_retry_timer);
		active_fail(ep, ep->csp_no_listener ? DAT_CONNECTION_EVENT_UNREACHABLE :
			    DAT_CONNECTION_EVENT_TIMED_OUT, &id);
	}
	pthread_mutex_unlock(&ep->lock);
	/* not inside an event of this id: destroying it here cannot deadlock */
	if (id)
		ofx_verbs->destroy_id(id);
}

static int route_resolved(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct rdma_conn_param param = {
		.private_data = ep->req_pdata_len ? ep->req_pdata : NULL,
		.private_data_len = (uint8_t)ep->req_pdata_len,
		.responder_resources = (uint8_t)ep->attr.max_rdma_read_in,
		.initiator_depth = (uint8_t)ep->attr.max_rdma_read_out,
		.flow_control = 1,
		.retry_count = OFX_RETRY_COUNT,
		.rnr_retry_count = 7,	/* infinite: a sender waits for the peer's receive */
		.qp_num = ep->qp->qp_num,
	};
	int ret;

	ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_INIT);
	if (ret)
		return ret;
	/* an XRC offer holds the receives until the answer says where they go */
	ret = ep->xrc && ofx_xrc_offered(ep) ? 0 : ofx_ep_recv_go_live(ep, false);
	if (ret)
		return ret;
	if (ofx_verbs->connect(ep->cm_id, &param)) {
		ret = -errno;
		ofx_err("rdma_connect qp 0x%x: %m", ep->qp->qp_num);
		return ret;
	}
	(void)ia;
	return 0;
}

/* Copies the consumer part of a REP (or REJ) into the EP's event buffer. */
static void save_pdata(struct ofx_ep *ep, const void *data, int len, bool *hdr_found,
		       struct ofx_pdata_hdr *hdr)
{
	*hdr_found = false;
	if (data && len > 0 && !ofx_pdata_decode(data, len, hdr)) {
		*hdr_found = true;
		len = hdr->consumer_len;
	}
	if (len > OFX_PDATA_COPY_MAX)
		len = OFX_PDATA_COPY_MAX;
	if (len < 0 || !data)
		len = 0;
	memcpy(ep->pdata, data, len);
	ep->pdata_len = len;
}

static int post_rtr(struct ofx_ep *ep)
{
	static const enum ibv_wr_opcode opcode[] = {
		[OFX_RTR_SEND] = IBV_WR_SEND,
		[OFX_RTR_WRITE] = IBV_WR_RDMA_WRITE,
		[OFX_RTR_READ] = IBV_WR_RDMA_READ,
	};
	static const enum ofx_cookie_op op[] = {
		[OFX_RTR_SEND] = OFX_OP_RTR_SEND,
		[OFX_RTR_WRITE] = OFX_OP_RTR_WRITE,
		[OFX_RTR_READ] = OFX_OP_RTR_READ,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)&ep->rtr_cookie,
		.opcode = opcode[ep->rtr],
		/* zero length: no segment, no rkey is checked by the responder */
	}, *bad;
	int ret;

	ep->rtr_cookie.ep = ep;
	ep->rtr_cookie.op = op[ep->rtr];
	ep->rtr_cookie.flags = OFX_COOKIE_F_INTERNAL;
	ret = ofx_verbs->post_send(ep->qp, &wr, &bad);
	if (ret) {
		ofx_err("post rtr (%s) on qp 0x%x: %s", ofx_rtr_type_str(ep->rtr), ep->qp->qp_num,
			strerror(ret));
		return -ret;
	}
	atomic_fetch_add(&ep->obj.ia->stats.rtr_sent, 1);
	return 0;
}

/*
 * The REP arrived (CONNECT_RESPONSE on IB/RoCE, where we drive the QP, or
 * ESTABLISHED on iWARP, where the kernel already did).  With p2p granted the
 * RTR is queued before the consumer can see ESTABLISHED, so it is the first
 * message on the wire.
 */
static int active_established(struct ofx_ep *ep, struct rdma_cm_event *ev, bool drive_qp)
{
	struct ofx_pdata_hdr hdr;
	bool has_hdr, xrc_fallback = ep->xrc && ofx_xrc_offered(ep);
	int ret;

	/* a REP to an XRC offer: the peer runs RC (xrc.h section 8) */
	if (xrc_fallback)
		ofx_xrc_fallback(ep);
	save_pdata(ep, ev->param.conn.private_data, ev->param.conn.private_data_len, &has_hdr,
		   &hdr);
	ep->p2p = ofx_cm_p2p_requested(ep) && has_hdr && (hdr.flags & OFX_PDATA_F_REPLY) &&
		  (hdr.flags & OFX_PDATA_F_P2P) && hdr.rtr <= OFX_RTR_READ;
	if (ep->p2p)
		ep->rtr = hdr.rtr;
	if (drive_qp) {
		/*
		 * INIT again: at ROUTE_RESOLVED rdma_cm had no IB CM id yet and
		 * granted no remote access; now it knows the negotiated rights.
		 */
		ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_INIT);
		if (ret)
			return ret;
		ret = xrc_fallback ? ofx_ep_recv_go_live(ep, false) : 0;
		if (ret)
			return ret;
		ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_RTR);
		if (ret)
			return ret;
		ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_RTS);
		if (ret)
			return ret;
	}
	if (ep->p2p) {
		ret = post_rtr(ep);
		if (ret)
			return ret;
		atomic_fetch_add(&ep->obj.ia->stats.conn_p2p, 1);
	}
	if (drive_qp && ofx_verbs->establish(ep->cm_id)) {
		ret = -errno;
		ofx_err("rdma_establish qp 0x%x: %m", ep->qp->qp_num);
		return ret;
	}
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->conn_timer);
	ep->state = OFX_EP_CONNECTED;
	ofx_dbg("ep %p qp 0x%x established (active, p2p %s)", (void *)ep, ep->qp->qp_num,
		ep->p2p ? ofx_rtr_type_str(ep->rtr) : "off");
	ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, true);
	return 0;
}

static bool retry_resolution(struct ofx_ep *ep, struct rdma_cm_event *ev)
{
	struct ofx_ia *ia = ep->obj.ia;
	int ret;

	if (ev->status != -ETIMEDOUT || ep->cm_retries >= ia->cfg.cm_retries)
		return false;
	ep->cm_retries++;
	if (ev->event == RDMA_CM_EVENT_ADDR_ERROR)
		ret = ofx_verbs->resolve_addr(ep->cm_id, (struct sockaddr *)&ia->addr,
					      (struct sockaddr *)&ep->remote_addr,
					      ia->cfg.cm_timeout_ms);
	else
		ret = ofx_verbs->resolve_route(ep->cm_id, ia->cfg.cm_timeout_ms);
	if (ret) {
		ofx_warn("retry %u of %s: %m", ep->cm_retries, rdma_event_str(ev->event));
		return false;
	}
	return true;
}

static void active_event(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_ia *ia = ep->obj.ia;
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (ofx_verbs->resolve_route(ep->cm_id, ia->cfg.cm_timeout_ms)) {
			ofx_err("rdma_resolve_route qp 0x%x: %m", ep->qp->qp_num);
			ret = -EHOSTUNREACH;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = route_resolved(ep);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (retry_resolution(ep, ev))
			return;
		ofx_info("ep %p: %s status %d", (void *)ep, rdma_event_str(ev->event), ev->status);
		ep->pdata_len = 0;
		active_fail(ep, DAT_CONNECTION_EVENT_UNREACHABLE, destroy_p);
		return;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		ret = active_established(ep, ev, true);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ret = active_established(ep, ev, false);
		break;
	case RDMA_CM_EVENT_REJECTED: {
		const unsigned char *data = ev->param.conn.private_data;

		if (ep->xrc && ofx_xrc_rejected(ep, ev, destroy_p)) {
			/* P's XRC accept: the handshake goes on without this id */
			ofx_progress_timer_cancel(ia->progress, &ep->conn_timer);
			ep->cm_id = NULL;
			return;
		}
		if (ofx_csp_retry(ep, ev, destroy_p))
			return;
		int len = ev->param.conn.private_data_len;

		/* a consumer reject carries stock's 4-byte header: strip it */
		if (ev->status == OFX_REJ_CONSUMER && data && len >= OFX_REJ_HDR_LEN) {
			len -= OFX_REJ_HDR_LEN;
			if (len > OFX_PDATA_COPY_MAX)
				len = OFX_PDATA_COPY_MAX;
			memcpy(ep->pdata, data + OFX_REJ_HDR_LEN, len);
			ep->pdata_len = len;
			ofx_info("ep %p qp 0x%x: rejected by peer", (void *)ep, ep->qp->qp_num);
			active_fail(ep, DAT_CONNECTION_EVENT_PEER_REJECTED, destroy_p);
		} else {
			ofx_info("ep %p qp 0x%x: rejected, reason %d", (void *)ep, ep->qp->qp_num,
				 ev->status);
			ep->pdata_len = 0;
			active_fail(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, destroy_p);
		}
		return;
	}
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (ofx_csp_retry(ep, ev, destroy_p))
			return;
		ofx_info("ep %p qp 0x%x: %s status %d", (void *)ep, ep->qp->qp_num,
			 rdma_event_str(ev->event), ev->status);
		ep->pdata_len = 0;
		active_fail(ep, DAT_CONNECTION_EVENT_UNREACHABLE, destroy_p);
		return;
	default:
		ofx_dbg("ep %p: ignoring %s while connecting", (void *)ep,
			rdma_event_str(ev->event));
		return;
	}
	if (ret) {
		ep->pdata_len = 0;
		if (ep->cm_id)
			ofx_verbs->disconnect(ep->cm_id);
		active_fail(ep, DAT_CONNECTION_EVENT_BROKEN, destroy_p);
	}
}

/* ---- passive side -------------------------------------------------------- */

static void rtr_poll(void *arg);

static int build_rep_pdata(struct ofx_ep *ep, const struct ofx_cr *cr, const void *pdata,
			   int len, unsigned char *out, size_t out_max)
{
	struct ofx_pdata_hdr hdr = {
		.version = OFX_PDATA_VERSION,
		.flags = OFX_PDATA_F_REPLY | (ep->p2p ? OFX_PDATA_F_P2P : 0),
		.rtr = ep->rtr,
		.consumer_len = (uint16_t)len,
	};

	if (!cr->has_hdr) {
		/* a peer that sent no header (stock) gets the raw bytes */
		if (len)
			memcpy(out, pdata, len);
		return len;
	}
	return ofx_pdata_encode(&hdr, pdata, len,
				ia_pads_pdata(ep->obj.ia) ? OFX_IB_REP_AREA : 0, out, out_max);
}

int ofx_cm_accept(struct ofx_ep *ep, struct ofx_cr *cr, const void *pdata, int pdata_len)
{
	struct ofx_ia *ia = ep->obj.ia;
	unsigned char rep[OFX_IB_REP_AREA];
	struct rdma_conn_param param = {
		.responder_resources = (uint8_t)(cr->req_param.initiator_depth <
						 ep->attr.max_rdma_read_in ?
						 cr->req_param.initiator_depth :
						 ep->attr.max_rdma_read_in),
		.initiator_depth = (uint8_t)(cr->req_param.responder_resources <
					     ep->attr.max_rdma_read_out ?
					     cr->req_param.responder_resources :
					     ep->attr.max_rdma_read_out),
		.flow_control = 1,
		.retry_count = OFX_RETRY_COUNT,
		.rnr_retry_count = 7,	/* infinite: a sender waits for the peer's receive */
		.qp_num = ep->qp->qp_num,
	};
	bool drive_qp = ia->transport != OFX_TRANSPORT_IWARP;
	int ret, len;

	if (pdata_len > OFX_REP_CONSUMER_MAX)
		return -EINVAL;
	/* an XRC offer taken: answered with the REJ of xrc.h step 2 */
	if (ep->xrc && ofx_xrc_accept(ep, cr, pdata, pdata_len, &ret)) {
		if (!ret) {
			ep->local_qual = cr->sp->conn_qual;
			ep->remote_qual = 0;
			atomic_fetch_add(&ia->stats.conn_passive, 1);
		}
		return ret;
	}
	ep->p2p = cr->has_hdr && (cr->hdr.flags & OFX_PDATA_F_P2P) && cr->hdr.rtr <= OFX_RTR_READ &&
		  ofx_cm_p2p_granted(ep);
	ep->rtr = ep->p2p ? cr->hdr.rtr : ia->cfg.rtr;
	len = build_rep_pdata(ep, cr, pdata, pdata_len, rep, sizeof(rep));
	if (len < 0)
		return len;
	param.private_data = len ? rep : NULL;
	param.private_data_len = (uint8_t)len;

	ret = ofx_cm_qp_modify(cr->cm_id, ep->qp, IBV_QPS_INIT);
	if (ret)
		return ret;
	/* a SEND RTR lands in a provider receive posted ahead of the consumer's */
	ret = ofx_ep_recv_go_live(ep, ep->p2p && ep->rtr == OFX_RTR_SEND);
	if (ret)
		goto err_reset;
	if (drive_qp) {
		ret = ofx_cm_qp_modify(cr->cm_id, ep->qp, IBV_QPS_RTR);
		if (ret)
			goto err_reset;
		ret = ofx_cm_qp_modify(cr->cm_id, ep->qp, IBV_QPS_RTS);
		if (ret)
			goto err_reset;
	}
	/* from here on, events of this id belong to the EP */
	ep->cm_id = cr->cm_id;
	ep->cm_id->context = &ep->obj;
	if (ofx_verbs->accept(ep->cm_id, &param)) {
		ret = -errno;
		ofx_err("rdma_accept qp 0x%x: %m", ep->qp->qp_num);
		ep->cm_id->context = &cr->sp->obj;
		ep->cm_id = NULL;
		goto err_reset;
	}
	cr->cm_id = NULL;
	memcpy(&ep->remote_addr, &cr->remote_addr, sizeof(ep->remote_addr));
	ep->local_qual = cr->sp->conn_qual;
	ep->remote_qual = 0;
	ep->rtr_arrived = !(ep->p2p && ep->rtr == OFX_RTR_SEND);
	ep->cm_established = false;
	ep->state = OFX_EP_COMPLETION_PENDING;
	atomic_fetch_add(&ia->stats.conn_passive, 1);
	if (ep->p2p) {
		atomic_fetch_add(&ia->stats.conn_p2p, 1);
		if (!ep->rtr_arrived) {
			ep->rtr_deadline_ns = ofx_now_ns() + ia->cfg.rtr_timeout_ms * 1000000ull;
			ofx_progress_timer_arm(ia->progress, &ep->rtr_timer, OFX_RTR_POLL_US,
					       rtr_poll, ep);
		}
	}
	ofx_dbg("ep %p qp 0x%x accepted (p2p %s)", (void *)ep, ep->qp->qp_num,
		ep->p2p ? ofx_rtr_type_str(ep->rtr) : "off");
	return 0;

err_reset: {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

		ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE);
		ofx_ep_recv_stop(ep);
	}
	return ret;
}

/*
 * A passive SEND-RTR EP waits for the RTR receive to complete on its recv
 * CQ, which the consumer may not be polling (it waits for ESTABLISHED on the
 * connection EVD).  So the progress thread polls that CQ into the recv EVD
 * until the RTR shows up; completions it finds stay queued for the consumer.
 */
static void rtr_poll(void *arg)
{
	struct ofx_ep *ep = arg;
	struct ofx_ia *ia = ep->obj.ia;

	if (ep->recv_evd)
		ofx_evd_drain_cq(ep->recv_evd);
	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_RTR_WAIT || ep->state == OFX_EP_COMPLETION_PENDING) {
		if (!ep->rtr_arrived && ofx_now_ns() > ep->rtr_deadline_ns) {
			ofx_warn("ep %p qp 0x%x: no rtr from the peer within %u ms", (void *)ep,
				 ep->qp->qp_num, ia->cfg.rtr_timeout_ms);
			ep->state = OFX_EP_DISCONNECTED;
			if (ep->cm_id)
				ofx_verbs->disconnect(ep->cm_id);
			ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_BROKEN, false);
		} else if (!ep->rtr_arrived) {
			ofx_progress_timer_arm(ia->progress, &ep->rtr_timer, OFX_RTR_POLL_US,
					       rtr_poll, ep);
		}
	}
	pthread_mutex_unlock(&ep->lock);
}

static void passive_event(struct ofx_ep *ep, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ep->cm_established = true;
		if (ep->p2p && !ep->rtr_arrived) {
			ep->state = OFX_EP_RTR_WAIT;
			/*
			 * The initiator queues its RTR before its RTU, so it has
			 * usually landed already: poll the recv CQ right after
			 * this handler instead of at the next 1 ms tick.
			 */
			ofx_progress_timer_arm(ep->obj.ia->progress, &ep->rtr_timer, 0, rtr_poll,
					       ep);
			return;
		}
		ep->state = ep->p2p ? OFX_EP_RTR_WAIT : OFX_EP_CONNECTED;
		if (ep->p2p) {
			ofx_ep_p2p_maybe_established(ep);
			return;
		}
		ofx_dbg("ep %p qp 0x%x established (passive)", (void *)ep, ep->qp->qp_num);
		/* a common-connect EP reports the initiator's data on this side too */
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, ep->csp != NULL);
		return;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ofx_info("ep %p qp 0x%x: accept failed: %s status %d", (void *)ep, ep->qp->qp_num,
			 rdma_event_str(ev->event), ev->status);
		ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->rtr_timer);
		qp_to_error(ep);
		ep->state = OFX_EP_DISCONNECTED;
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, false);
		return;
	default:
		ofx_dbg("ep %p: ignoring %s while accepting", (void *)ep, rdma_event_str(ev->event));
		return;
	}
}

/* ---- established connections --------------------------------------------- */

static void disc_timeout(void *arg)
{
	struct ofx_ep *ep = arg;

	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_DISCONNECT_PENDING) {
		ofx_info("ep %p qp 0x%x: no disconnect reply, forcing disconnected", (void *)ep,
			 ep->qp->qp_num);
		ep->state = OFX_EP_DISCONNECTED;
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED, false);
	}
	pthread_mutex_unlock(&ep->lock);
}

int ofx_cm_disconnect(struct ofx_ep *ep, bool abrupt)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct rdma_cm_id *id;

	switch (ep->state) {
	case OFX_EP_UNCONNECTED:
	case OFX_EP_DISCONNECTED:
		return 0;
	case OFX_EP_DISCONNECT_PENDING:
		if (!abrupt)
			return -EINVAL;
		ofx_progress_timer_arm(ia->progress, &ep->disc_timer, 0, disc_timeout, ep);
		return 0;
	case OFX_EP_ACTIVE_PENDING:
	case OFX_EP_COMPLETION_PENDING:
	case OFX_EP_RTR_WAIT:
		/* not connected yet: end it here and report at once */
		ofx_progress_timer_cancel(ia->progress, &ep->conn_timer);
		ofx_progress_timer_cancel(ia->progress, &ep->rtr_timer);
		if (ep->cm_id)
			ofx_verbs->disconnect(ep->cm_id);
		qp_to_error(ep);
		ep->state = OFX_EP_DISCONNECTED;
		ep->pdata_len = 0;
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED, false);
		id = ep->cm_id;
		(void)id;
		return 0;
	case OFX_EP_CONNECTED:
		ep->state = OFX_EP_DISCONNECT_PENDING;
		ep->pdata_len = 0;
		if (ofx_verbs->disconnect(ep->cm_id))
			ofx_warn("rdma_disconnect qp 0x%x: %m", ep->qp->qp_num);
		/* flush outstanding work so the consumer gets its buffers back */
		qp_to_error(ep);
		if (abrupt)
			ofx_progress_timer_arm(ia->progress, &ep->disc_timer,
					       ia->cfg.disc_timeout_ms * 1000ull, disc_timeout, ep);
		return 0;
	default:
		return -EBUSY;
	}
}

static void connected_event(struct ofx_ep *ep, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DISCONNECTED:
		if (ep->state != OFX_EP_DISCONNECT_PENDING) {
			/* the peer hung up: answer its DREQ and flush our queues */
			ofx_verbs->disconnect(ep->cm_id);
			qp_to_error(ep);
		}
		ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->disc_timer);
		ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->rtr_timer);
		ep->state = OFX_EP_DISCONNECTED;
		ep->pdata_len = 0;
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED, false);
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		qp_to_error(ep);
		ep->state = OFX_EP_DISCONNECTED;
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_BROKEN, false);
		return;
	default:
		ofx_dbg("ep %p: ignoring %s", (void *)ep, rdma_event_str(ev->event));
		return;
	}
}

static void ep_event(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	pthread_mutex_lock(&ep->lock);
	if (ev->id != ep->cm_id) {
		/* the EP let go of this id (reset, free, timeout) */
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	ofx_dbg("ep %p qp 0x%x state %s: %s status %d", (void *)ep, ep->qp->qp_num,
		ofx_ep_state_str(ep->state), rdma_event_str(ev->event), ev->status);
	switch (ep->state) {
	case OFX_EP_ACTIVE_PENDING:
		active_event(ep, ev, destroy_p);
		break;
	case OFX_EP_COMPLETION_PENDING:
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			connected_event(ep, ev);
		else
			passive_event(ep, ev);
		break;
	case OFX_EP_CONNECTED:
	case OFX_EP_RTR_WAIT:
	case OFX_EP_DISCONNECT_PENDING:
		connected_event(ep, ev);
		break;
	default:
		ofx_dbg("ep %p: %s in state %s ignored", (void *)ep, rdma_event_str(ev->event),
			ofx_ep_state_str(ep->state));
		break;
	}
	pthread_mutex_unlock(&ep->lock);
}

void ofx_cm_release(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct rdma_cm_id *id = ep->cm_id;

	ofx_progress_timer_cancel(ia->progress, &ep->conn_timer);
	ofx_progress_timer_cancel(ia->progress, &ep->disc_timer);
	ofx_progress_timer_cancel(ia->progress, &ep->rtr_timer);
	ep->cm_id = NULL;
	pthread_mutex_unlock(&ep->lock);
	/*
	 * rdma_destroy_id waits until every event of the id is acked; the
	 * progress thread may be blocked on ep->lock with one in hand, so the
	 * lock is dropped here.  It also waits out a timer callback of this EP
	 * that is already running.
	 */
	if (id && ofx_verbs->destroy_id(id))
		ofx_warn("rdma_destroy_id: %m");
	ofx_progress_barrier(ia->progress);
	pthread_mutex_lock(&ep->lock);
}

/* ---- dispatch ---------------------------------------------------------------- */

static bool is_sp_type(enum ofx_obj_type type)
{
	return type == OFX_OBJ_PSP || type == OFX_OBJ_RSP || type == OFX_OBJ_CSP;
}

static void dispatch(struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_obj *obj;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		obj = ev->listen_id->context;
		if (obj && is_sp_type(obj->type))
			*destroy_p = ofx_sp_connect_request(container_of(obj, struct ofx_sp, obj),
							    ev);
		return;
	}
	obj = ev->id->context;
	while (obj && is_sp_type(obj->type)) {
		struct ofx_obj *now;

		if (ofx_sp_cr_event(container_of(obj, struct ofx_sp, obj), ev))
			return;
		/* accepted meanwhile (now the EP's) or handed off to another PSP */
		now = ev->id->context;
		if (now == obj)
			break;
		obj = now;
	}
	if (obj && obj->type == OFX_OBJ_EP) {
		ep_event(container_of(obj, struct ofx_ep, obj), ev, destroy_p);
		return;
	}
	ofx_dbg("%s on an id without owner", rdma_event_str(ev->event));
}

void ofx_cm_process_events(void *ia_arg)
{
	struct ofx_ia *ia = ia_arg;
	struct rdma_cm_event *ev;

	while (!ofx_verbs->get_cm_event(ia->cm_channel, &ev)) {
		struct rdma_cm_id *destroy = NULL;

		/* the ids of the XRC carrier (xrc.h) first */
		if (!ia->xrc_ia || !ofx_xrc_cm_event(ia, ev, &destroy))
			dispatch(ev, &destroy);
		ofx_verbs->ack_cm_event(ev);
		/* only after the ack: rdma_destroy_id waits for it */
		if (destroy && ofx_verbs->destroy_id(destroy))
			ofx_warn("rdma_destroy_id: %m");
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		ofx_warn("rdma_get_cm_event on %s: %m", ia->prov ? "ia" : "?");
}
