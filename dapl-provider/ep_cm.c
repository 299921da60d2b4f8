/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RC connection steps of an EP over rdma_cm (ep_cm.h): the handler of
 * the EP's cm_id and what starts, accepts and ends its connections.
 */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "ep_cm.h"
#include "cm.h"
#include "lock.h"
#include "ep.h"
#include "ep_conn.h"
#include "ep_transport.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "verbs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* RTR completion polling interval while a passive p2p EP waits for it. */

static struct ofx_cm_handler *ep_handler(struct ofx_ep *ep);

bool ofx_cm_p2p_requested(const struct ofx_ep *ep)
{
	if (ofx_csp_holds_recvs(ep))
		return true;
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
	if (ofx_csp_holds_recvs(ep))
		return true;
	if (ep->p2p_attr != OFX_AUTO)
		return ep->p2p_attr == OFX_ON;
	return ep->obj.ia->cfg.p2p != OFX_OFF;
}

static void qp_to_error(struct ofx_ep *ep)
{
	struct ibv_qp_attr attr;	/* modify_qp reads the masked state only */
	int ret;

	/* an XRC-backed EP whose connection did not run over RC has none */
	if (!ep->qp)
		return;
	attr.qp_state = IBV_QPS_ERR;
	ret = ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE);
	if (ret)
		ofx_warn("qp 0x%x to error: %s", ofx_ep_qp_num(ep), strerror(ret));
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
		hdr.csp_port = ep->csp_port;
	} else if (!ofx_cm_p2p_requested(ep)) {
		/* no option needs a header: the consumer's bytes go out raw */
		if (len)
			memcpy(ep->req_pdata, pdata, len);
		ep->req_pdata_len = len;
		return 0;
	}
	ret = ofx_pdata_encode(&hdr, pdata, len, ofx_cm_pads_pdata(ia) ? ofx_cm_req_area(ia) : 0,
			       ep->req_pdata, (size_t)ofx_cm_req_area(ia));
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
	return ofx_cm_resolve(ep->obj.ia, ep_handler(ep), &ep->remote_addr, &ep->cm_id);
}

int ofx_cm_req_qp(struct ofx_ep *ep, uint32_t *qpn_p)
{
	int ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_INIT);

	if (!ret)
		*qpn_p = ep->qp->qp_num;
	return ret;
}

int ofx_cm_connect(struct ofx_ep *ep, const struct sockaddr *addr, DAT_CONN_QUAL qual,
		   DAT_TIMEOUT timeout, const void *pdata, int pdata_len)
{
	struct ofx_ia *ia = ep->obj.ia;
	char buf[INET6_ADDRSTRLEN];
	bool offered = false;
	int ret = 0;

	/* an XRC EP offers XRC in the REQ (xrc.h step 1), else the usual data */
	ret = ep->transport->connect(ep, pdata, pdata_len, &offered);
	if (!ret && !offered)
		ret = build_req_pdata(ep, pdata, pdata_len);
	if (ret)
		return ret;
	ofx_cm_addr_set(&ep->remote_addr, addr);
	set_port(&ep->remote_addr, ofx_conn_qual_to_port(qual));
	ep->remote_qual = qual;

	ep->cm_retries = 0;
	ep->p2p = false;
	ofx_ep_conn_move(ep, OFX_EP_ACTIVE_PENDING);
	ret = ofx_cm_restart(ep);
	if (ret) {
		ofx_ep_conn_move(ep, OFX_EP_UNCONNECTED);
		return ret;
	}
	/*
	 * The address resolution just started ends in an event within
	 * cm_timeout_ms, handled under ep->lock, which we hold: the progress
	 * thread sees the timer then, and a late one needs no wakeup now.
	 */
	if (timeout != DAT_TIMEOUT_INFINITE)
		ofx_progress_timer_arm_before_event(ia->progress, &ep->conn_timer, timeout,
						    ia->cfg.cm_timeout_ms * 1000ull, conn_timeout,
						    ep);
	atomic_fetch_add(&ia->stats.conn_active, 1);
	ofx_dbg("ep %p qp 0x%x connecting to %s qual %llu p2p %s", (void *)ep, ofx_ep_qp_num(ep),
		ofx_cm_addr_str(&ep->remote_addr, buf, sizeof(buf)), (unsigned long long)qual,
		ofx_cm_p2p_requested(ep) ? "requested" : "off");
	return 0;
}

/* Ends a connection attempt: state, event, and the id to destroy after ack. */
static void active_fail(struct ofx_ep *ep, DAT_EVENT_NUMBER num, struct rdma_cm_id **destroy_p)
{
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->conn_timer);
	*destroy_p = ep->cm_id;
	ep->cm_id = NULL;
	ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, num, num == DAT_CONNECTION_EVENT_PEER_REJECTED);
}

/* Says why a common connect ended without a connection (ep->lock held). */
static void csp_give_up_log(const struct ofx_ep *ep)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const struct ofx_csp_tally *t = &ep->csp_tally;

	if (!ep->csp_initiator) {
		ofx_warn("ep %p: common connect: no request from %s port %u reached this "
			 "side's csp (port %u) in time", (void *)ep,
			 ofx_cm_addr_str(&ep->remote_addr, buf, sizeof(buf)), (unsigned int)ep->remote_qual,
			 ep->csp_port);
		return;
	}
	ofx_warn("ep %p: common connect to %s port %u gave up after %u attempts from %.3f s: "
		 "%u refused by the peer's csp (no ep waiting; last at %.3f s), %u found nobody "
		 "listening (last at %.3f s), %u other (last at %.3f s); last status %d "
		 "(times: CLOCK_MONOTONIC)", (void *)ep,
		 ofx_cm_addr_str(&ep->remote_addr, buf, sizeof(buf)), (unsigned int)ep->remote_qual,
		 ep->csp_tally.attempts, t->first_ns / 1e9, t->csp_refused, t->csp_refused_ns / 1e9,
		 t->no_listener, t->no_listener_ns / 1e9, t->other, t->other_ns / 1e9,
		 t->last_status);
}

static void conn_timeout(void *arg)
{
	struct ofx_ep *ep = arg;
	struct rdma_cm_id *id = NULL;

	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_ACTIVE_PENDING) {
		ofx_info("ep %p qp 0x%x: connect timed out%s", (void *)ep, ofx_ep_qp_num(ep),
			 ep->csp_no_listener ? " (no common service point at the peer)" : "");
		if (ep->csp)
			csp_give_up_log(ep);
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

/*
 * A read RTR is an RDMA read like any other: it needs one outstanding read
 * on the initiator (ORD) and one on the responder (IRD) even when the
 * consumer's EP asked for none, or siw's responder refuses it ("IRQ
 * exceeded or null") and the connection fails.  `depth` is the consumer's.
 */
static uint8_t rd_depth(int depth, bool read_rtr, int dev_max)
{
	if (read_rtr && depth < 1 && dev_max >= 1)
		depth = 1;
	return (uint8_t)(depth > 255 ? 255 : depth);
}

/*
 * rdma_connect failing at once with one of these is an answer about this
 * attempt, not a provider error: no connection was ever there, so never
 * BROKEN.  A common-connect initiator tries again on a new id (the peer's
 * CSP may not exist yet; a new id gets a new port), a plain connect ends
 * with the DAT event here.
 */
struct connect_answer {
	int err;			/* negative errno from rdma_connect */
	struct rdma_cm_event as_cm;	/* what ofx_csp_retry counts it as */
	DAT_EVENT_NUMBER dat_event;	/* a plain connect's end */
	const char *why;
};

static const struct connect_answer connect_answers[] = {
	/*
	 * iWARP: rdma_connect makes the TCP connection itself, so nobody
	 * listening at the peer's port is ECONNREFUSED from the call where
	 * IB/RoCE get a REJ of reason 8 later; a reset one is a listener
	 * closing while the SYN came in.
	 */
	{ -ECONNREFUSED, { .event = RDMA_CM_EVENT_REJECTED, .status = OFX_REJ_NO_LISTENER },
	  DAT_CONNECTION_EVENT_NON_PEER_REJECTED, "nobody listens at the peer's port" },
	{ -ECONNRESET, { .event = RDMA_CM_EVENT_REJECTED, .status = OFX_REJ_NO_LISTENER },
	  DAT_CONNECTION_EVENT_NON_PEER_REJECTED, "nobody listens at the peer's port" },
	/*
	 * iWARP: the TCP socket is bound to the port rdma_cm picked, which the
	 * host's stack may hold for something rdma_cm does not see (seen once
	 * on siw, 2026-12-07, a common connect all-to-all).  UNREACHABLE: the
	 * consumer may retry.
	 */
	{ -EADDRINUSE, { .event = RDMA_CM_EVENT_CONNECT_ERROR, .status = -EADDRINUSE },
	  DAT_CONNECTION_EVENT_UNREACHABLE, "the local port was taken" },
	{ -EADDRNOTAVAIL, { .event = RDMA_CM_EVENT_CONNECT_ERROR, .status = -EADDRNOTAVAIL },
	  DAT_CONNECTION_EVENT_UNREACHABLE, "the local port was taken" },
};

static const struct connect_answer *connect_answer_of(int err)
{
	for (size_t i = 0; i < OFX_ARRAY_SIZE(connect_answers); i++)
		if (connect_answers[i].err == err)
			return &connect_answers[i];
	return NULL;
}

static int route_resolved(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	bool read_rtr = ofx_cm_p2p_requested(ep) && ia->cfg.rtr == OFX_RTR_READ;
	struct rdma_conn_param param = {
		.private_data = ep->req_pdata_len ? ep->req_pdata : NULL,
		.private_data_len = (uint8_t)ep->req_pdata_len,
		.responder_resources = (uint8_t)ep->attr.max_rdma_read_in,
		.initiator_depth = rd_depth(ep->attr.max_rdma_read_out, read_rtr,
					    ia->dev_attr.max_qp_init_rd_atom),
		.flow_control = 1,
		.retry_count = OFX_RETRY_COUNT,
		.rnr_retry_count = 7,	/* infinite: a sender waits for the peer's receive */
	};
	int ret;

	ret = ep->transport->req_qpn(ep, &param.qp_num);
	if (ret)
		return ret;
	/*
	 * An XRC offer holds the receives until the answer says where they
	 * go; an iWARP common connect until its attempt is answered
	 * (ofx_csp_holds_recvs).
	 */
	ret = ep->transport->offered(ep) || ofx_csp_holds_recvs(ep) ? 0 :
	      ofx_ep_recv_go_live(ep, false);
	if (ret)
		return ret;
	if (ofx_verbs->connect(ep->cm_id, &param)) {
		ret = -errno;
		if (connect_answer_of(ret))
			ofx_dbg("rdma_connect qp 0x%x: %m", ofx_ep_qp_num(ep));
		else
			ofx_err("rdma_connect qp 0x%x: %m", ofx_ep_qp_num(ep));
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
	/* a REP without private data has no buffer: memcpy(NULL) is undefined */
	if (len)
		memcpy(ep->pdata, data, len);
	ep->pdata_len = len;
}

/*
 * A zero-length `opcode` under the RTR's cookie, unsignaled: the RTR or a
 * nudge after it.  Zero length: no rkey is checked by the responder.  A
 * read gets one empty segment all the same: siw matches the read response
 * against the request's first segment, which with num_sge 0 is whatever an
 * earlier work request left in the ring slot (the response is then refused
 * and the QP fails).  mlx5 and rxe skip empty segments.
 */
static int post_empty(struct ofx_ep *ep, struct ofx_cookie *ck, enum ibv_wr_opcode opcode)
{
	static struct ibv_sge no_bytes;
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)ck,
		.opcode = opcode,
		.sg_list = opcode == IBV_WR_RDMA_READ ? &no_bytes : NULL,
		.num_sge = opcode == IBV_WR_RDMA_READ ? 1 : 0,
	}, *bad;

	return ofx_verbs->post_send(ep->qp, &wr, &bad);
}

static int post_rtr(struct ofx_ep *ep)
{
	static const enum ibv_wr_opcode opcode[] = {
		[OFX_RTR_SEND] = IBV_WR_SEND,
		[OFX_RTR_WRITE] = IBV_WR_RDMA_WRITE,
		[OFX_RTR_READ] = IBV_WR_RDMA_READ,
	};
	static const enum ofx_ep_cookie_op op[] = {
		[OFX_RTR_SEND] = OFX_EP_OP_RTR_SEND,
		[OFX_RTR_WRITE] = OFX_EP_OP_RTR_WRITE,
		[OFX_RTR_READ] = OFX_EP_OP_RTR_READ,
	};
	int ret;

	ofx_ep_own_cookie(ep, &ep->rtr_cookie, op[ep->rtr]);
	ret = post_empty(ep, &ep->rtr_cookie, opcode[ep->rtr]);
	if (ret) {
		ofx_err("post rtr (%s) on qp 0x%x: %s", ofx_rtr_type_str(ep->rtr), ofx_ep_qp_num(ep),
			strerror(-ret));
		return ret;
	}
	atomic_fetch_add(&ep->obj.ia->stats.rtr_sent, 1);
	return 0;
}

/*
 * siw (Linux 6.1) leaves unread an FPDU that reaches the passive side
 * between its MPA reply and the moment its accept hands the socket to the
 * QP (siw_accept: the CM's data_ready callback ignores data once the
 * endpoint is in RDMA mode, and the QP's is called only for data that
 * arrives later).  The active side's first FPDU, sent at its ESTABLISHED,
 * can land there: an RTR with p2p, the consumer's first message without it
 * (MPA's rule that the initiator sends first makes that the usual case).
 * The passive side then never sees it, and each side waits for the other
 * (until rtr_timeout_ms breaks a p2p connection; forever without p2p).
 * Any later FPDU gets the stuck bytes read, so the active side follows
 * ESTABLISHED with zero-length RDMA writes (no receive consumed, nothing
 * reported at the passive side, no rkey checked), 5 ms to 5 s apart: one
 * that arrives after the hand-over is enough, and the hand-over takes
 * longer than the last gap only on a host too busy for the RTR timeout
 * anyway.  ofx_ep_conn_rtr_wait_end ends them with the connection.  A full
 * send queue skips a nudge: the nudge has its own slot (ep.c), taken only
 * by a nudge still queued behind the consumer's requests, which carry
 * bytes to the passive side themselves.
 */
static const unsigned int rtr_nudge_gap_ms[] = { 5, 50, 500, 5000 };

static void rtr_nudge_run(void *arg);

static void rtr_nudge_arm(struct ofx_ep *ep)
{
	ofx_progress_timer_arm(ep->obj.ia->progress, &ep->rtr_timer,
			       rtr_nudge_gap_ms[ep->rtr_nudges] * 1000ull, rtr_nudge_run, ep);
}

static void rtr_nudge_run(void *arg)
{
	struct ofx_ep *ep = arg;
	int ret;

	pthread_mutex_lock(&ep->lock);
	/*
	 * the connection ended: its end cancelled the timer, which had fired;
	 * or a nudge failed: the QP is in error, the peer gone
	 */
	if (ep->state != OFX_EP_CONNECTED || !ep->qp || atomic_load(&ep->nudge_failed))
		goto out;
	/* never an event: flushed or failed, only the EP hears of it */
	ret = post_empty(ep, &ep->nudge_cookie, IBV_WR_RDMA_WRITE);
	if (ret)
		ofx_dbg("ep %p qp 0x%x: rtr nudge %u not posted: %s", (void *)ep,
			ofx_ep_qp_num(ep), ep->rtr_nudges, strerror(-ret));
	if (++ep->rtr_nudges < OFX_ARRAY_SIZE(rtr_nudge_gap_ms))
		rtr_nudge_arm(ep);
out:
	pthread_mutex_unlock(&ep->lock);
}

/* An active connection just reported ESTABLISHED, p2p or not (EP lock held). */
static void rtr_nudge_start(struct ofx_ep *ep)
{
	if (!ep->obj.ia->rtr_nudge)
		return;
	ofx_ep_own_cookie(ep, &ep->nudge_cookie, OFX_EP_OP_RTR_NUDGE);
	atomic_store(&ep->nudge_failed, false);
	ep->rtr_nudges = 0;
	rtr_nudge_arm(ep);
}

/*
 * The REP arrived (CONNECT_RESPONSE on IB/RoCE, where we drive the QP, or
 * ESTABLISHED on iWARP, where the kernel already did).  With p2p granted the
 * RTR is queued before the consumer can see ESTABLISHED, so it is the first
 * message on the wire.
 */
static int active_established(struct ofx_ep *ep, struct rdma_cm_event *ev, bool drive_qp,
			      bool fallback)
{
	struct ofx_pdata_hdr hdr;
	bool has_hdr;
	int ret;

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
		ret = fallback ? ofx_ep_recv_go_live(ep, false) : 0;
		if (ret)
			return ret;
		ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_RTR);
		if (ret)
			return ret;
		ret = ofx_cm_qp_modify(ep->cm_id, ep->qp, IBV_QPS_RTS);
		if (ret)
			return ret;
	} else {
		/* the receives an iWARP common connect held go in before the RTR */
		ret = ofx_ep_recv_go_live(ep, false);
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
		ofx_err("rdma_establish qp 0x%x: %m", ofx_ep_qp_num(ep));
		return ret;
	}
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->conn_timer);
	ofx_dbg("ep %p qp 0x%x established (active, p2p %s)", (void *)ep, ofx_ep_qp_num(ep),
		ep->p2p ? ofx_rtr_type_str(ep->rtr) : "off");
	ofx_ep_conn_report(ep, OFX_EP_CONNECTED, DAT_CONNECTION_EVENT_ESTABLISHED, true);
	/* after the report: it ends the RTR wait's timer, which the nudges use */
	rtr_nudge_start(ep);
	return 0;
}

/*
 * A REP to an XRC offer: the peer runs RC (xrc.h section 8), unless the
 * transport refuses RC (xrc_rc_fallback=no: the REQ named no RC QP of
 * ours).  Then the REP is rejected (REJ reason 28, no data: the peer's
 * accept fails) and the connect ends NON_PEER_REJECTED; false.
 */
static bool rc_answer_taken(struct ofx_ep *ep, struct rdma_cm_id **destroy_p)
{
	if (ep->transport->fallback(ep))
		return true;
	if (ofx_verbs->reject(ep->cm_id, NULL, 0))
		ofx_warn("ep %p: rdma_reject of the peer's rc accept: %m", (void *)ep);
	ep->pdata_len = 0;
	active_fail(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, destroy_p);
	return false;
}

/*
 * IB/RoCE: a consumer's reject is REJ reason 28.  iWARP has no reasons: an
 * MPA reject arrives as ECONNRESET or ECONNREFUSED, so the consumer's is the
 * one whose private data opens with the 4-byte header stock and we put first.
 */
static bool is_consumer_reject(const struct ofx_ia *ia, const struct rdma_cm_event *ev)
{
	uint32_t hdr;

	if (ia->transport != OFX_TRANSPORT_IWARP)
		return ev->status == OFX_REJ_CONSUMER;
	/* siw reports an MPA reject as ECONNRESET, rdma_cm's own as ECONNREFUSED */
	if ((ev->status != -ECONNREFUSED && ev->status != -ECONNRESET) ||
	    !ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < OFX_REJ_HDR_LEN)
		return false;
	memcpy(&hdr, ev->param.conn.private_data, sizeof(hdr));
	return ntohl(hdr) == OFX_REJ_HDR;
}

/* rdma_connect failed at once with an answer (connect_answers). */
static void connect_answered(struct ofx_ep *ep, const struct connect_answer *answer,
			     struct rdma_cm_id **destroy_p)
{
	struct rdma_cm_event as_cm = answer->as_cm;

	if (ofx_csp_retry(ep, &as_cm, destroy_p)) {
		ep->csp_tally.last_status = answer->err;
		return;
	}
	ofx_info("ep %p qp 0x%x: rdma_connect: %s: %s", (void *)ep, ofx_ep_qp_num(ep),
		 strerror(-answer->err), answer->why);
	ep->pdata_len = 0;
	active_fail(ep, answer->dat_event, destroy_p);
}

static void active_event(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	const struct connect_answer *answer;
	struct ofx_ia *ia = ep->obj.ia;
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (ofx_verbs->resolve_route(ep->cm_id, ia->cfg.cm_timeout_ms)) {
			ofx_err("rdma_resolve_route qp 0x%x: %m", ofx_ep_qp_num(ep));
			ret = -EHOSTUNREACH;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = route_resolved(ep);
		answer = connect_answer_of(ret);
		if (answer) {
			connect_answered(ep, answer, destroy_p);
			return;
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (ofx_cm_resolve_retry(ia, ep->cm_id, ev, &ep->remote_addr, &ep->cm_retries))
			return;
		ofx_info("ep %p: %s status %d", (void *)ep, rdma_event_str(ev->event), ev->status);
		ep->pdata_len = 0;
		active_fail(ep, DAT_CONNECTION_EVENT_UNREACHABLE, destroy_p);
		return;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_ESTABLISHED: {
		bool fallback = ep->transport->offered(ep);

		if (fallback && !rc_answer_taken(ep, destroy_p))
			return;
		ret = active_established(ep, ev, ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE,
					 fallback);
		break;
	}
	case RDMA_CM_EVENT_REJECTED: {
		const unsigned char *data = ev->param.conn.private_data;

		if (ep->transport->rejected(ep, ev, destroy_p)) {
			/* P's XRC accept: the handshake goes on without this id */
			ofx_progress_timer_cancel(ia->progress, &ep->conn_timer);
			ep->cm_id = NULL;
			return;
		}
		if (ofx_csp_retry(ep, ev, destroy_p))
			return;
		int len = ev->param.conn.private_data_len;

		/* a consumer reject carries stock's 4-byte header: strip it */
		if (is_consumer_reject(ia, ev) && data && len >= OFX_REJ_HDR_LEN) {
			len -= OFX_REJ_HDR_LEN;
			if (len > OFX_PDATA_COPY_MAX)
				len = OFX_PDATA_COPY_MAX;
			memcpy(ep->pdata, data + OFX_REJ_HDR_LEN, len);
			ep->pdata_len = len;
			ofx_info("ep %p qp 0x%x: rejected by peer", (void *)ep, ofx_ep_qp_num(ep));
			active_fail(ep, DAT_CONNECTION_EVENT_PEER_REJECTED, destroy_p);
		} else {
			ofx_info("ep %p qp 0x%x: rejected, reason %d", (void *)ep, ofx_ep_qp_num(ep),
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
		ofx_info("ep %p qp 0x%x: %s status %d", (void *)ep, ofx_ep_qp_num(ep),
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

/* ---- common connect (csp.h): the initiator's retries ---------------------- */

bool ofx_csp_holds_recvs(const struct ofx_ep *ep)
{
	return ep->csp && ep->obj.ia->transport == OFX_TRANSPORT_IWARP;
}

/* The initiator still waits for its next attempt (ep->lock held). */
static bool csp_retry_due(const struct ofx_ep *ep)
{
	return ep->state == OFX_EP_ACTIVE_PENDING && ep->csp && !ep->cm_id;
}

static void csp_retry_fire(void *arg)
{
	struct ofx_ep *ep = arg;
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	if (!csp_retry_due(ep))
		goto out;
	/*
	 * iWARP: the refused attempt left the QP in ERROR; the receives were
	 * held (ofx_csp_holds_recvs), so a new QP loses nothing.  The renewal
	 * drops the lock: whatever ended the attempt meanwhile reported it.
	 */
	if (ofx_csp_holds_recvs(ep)) {
		ret = ofx_ep_qp_renew_unused(ep);
		if (!csp_retry_due(ep))
			goto out;
	}
	if (!ret)
		ret = ofx_cm_restart(ep);
	if (ret) {
		ep->pdata_len = 0;
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_UNREACHABLE,
				   false);
	}
out:
	pthread_mutex_unlock(&ep->lock);
}

bool ofx_csp_retry(struct ofx_ep *ep, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_ia *ia = ep->obj.ia;
	uint64_t now = ofx_now_ns();

	if (!ep->csp || !ep->csp_initiator)
		return false;
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		/* our CSP's refusal is consumer-defined; nobody listening is reason 8 */
		ep->csp_no_listener = ev->status == OFX_REJ_NO_LISTENER;
		if (ep->csp_no_listener) {
			ep->csp_tally.no_listener++;
			ep->csp_tally.no_listener_ns = now;
		} else {
			ep->csp_tally.csp_refused++;
			ep->csp_tally.csp_refused_ns = now;
		}
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ep->csp_tally.other++;
		ep->csp_tally.other_ns = now;
		break;
	default:
		return false;
	}
	if (!ep->csp_tally.attempts++)
		ep->csp_tally.first_ns = now;
	ep->csp_tally.last_status = ev->status;
	*destroy_p = ep->cm_id;
	ep->cm_id = NULL;
	ofx_progress_timer_arm(ia->progress, &ep->csp_retry_timer,
			       ia->cfg.csp_retry_ms * 1000ull, csp_retry_fire, ep);
	return true;
}

/* ---- passive side -------------------------------------------------------- */

/*
 * Why rdma_accept failed (errno), as the accept reports it.  On iWARP the
 * MPA reply goes out in the call, on the request's TCP stream: a peer whose
 * own kernel gave up first (siw's active side waits 10 s for the MPA reply,
 * then resets the stream) or that died makes it fail with ECONNRESET,
 * ECONNREFUSED or ETIMEDOUT.  That is a peer gone, as for a dead CR
 * (cr.c: DAT_INVALID_STATE), not a provider fault: -ECONNRESET, which
 * also tells cr.c that the id is over (no REJ).
 */
static int accept_errno(const struct ofx_ep *ep)
{
	int err = errno;

	if (err == ECONNRESET || err == ECONNREFUSED || err == ETIMEDOUT) {
		ofx_info("rdma_accept qp 0x%x: %s: the peer is gone", ofx_ep_qp_num(ep),
			 strerror(err));
		return -ECONNRESET;
	}
	ofx_err("rdma_accept qp 0x%x: %s", ofx_ep_qp_num(ep), strerror(err));
	return -err;
}

static int build_rep_pdata(struct ofx_ep *ep, const struct ofx_conn_req *req, const void *pdata,
			   int len, unsigned char *out, size_t out_max)
{
	struct ofx_pdata_hdr hdr = {
		.version = OFX_PDATA_VERSION,
		.flags = OFX_PDATA_F_REPLY | (ep->p2p ? OFX_PDATA_F_P2P : 0),
		.rtr = ep->rtr,
		.consumer_len = (uint16_t)len,
	};
	size_t area = (size_t)ofx_cm_rep_area(ep->obj.ia);

	if (!req->has_hdr) {
		/* a peer that sent no header (stock) gets the raw bytes */
		if (len)
			memcpy(out, pdata, len);
		return len;
	}
	return ofx_pdata_encode(&hdr, pdata, len, ofx_cm_pads_pdata(ep->obj.ia) ? area : 0, out,
				out_max < area ? out_max : area);
}

int ofx_cm_accept(struct ofx_ep *ep, struct ofx_conn_req *req, const void *pdata, int pdata_len)
{
	struct ofx_ia *ia = ep->obj.ia;
	unsigned char rep[OFX_PDATA_COPY_MAX];
	struct rdma_conn_param param = {
		/*
		 * rdma_get_cm_event(3): the REQ event's responder_resources is
		 * the initiator depth the peer asked for, its initiator_depth
		 * the reads the peer serves.
		 */
		.responder_resources = (uint8_t)(req->param.responder_resources <
						 ep->attr.max_rdma_read_in ?
						 req->param.responder_resources :
						 ep->attr.max_rdma_read_in),
		.initiator_depth = (uint8_t)(req->param.initiator_depth <
					     ep->attr.max_rdma_read_out ?
					     req->param.initiator_depth :
					     ep->attr.max_rdma_read_out),
		.flow_control = 1,
		.retry_count = OFX_RETRY_COUNT,
		.rnr_retry_count = 7,	/* infinite: a sender waits for the peer's receive */
	};
	bool drive_qp = ia->transport != OFX_TRANSPORT_IWARP;
	struct ofx_cm_handler *prev;
	int ret, len;

	ofx_lock_assert_held(&ep->lock);
	if (pdata_len > ofx_cm_max_accept_pdata(ia, req->has_hdr))
		return -EINVAL;
	/* an XRC offer taken: answered with the REJ of xrc.h step 2 */
	if (ep->transport->accept(ep, req, pdata, pdata_len, &ret)) {
		if (!ret) {
			ep->local_qual = req->local_qual;
			ep->remote_qual = 0;
			atomic_fetch_add(&ia->stats.conn_passive, 1);
		}
		return ret;
	}
	/* an XRC-backed EP has its RC QP from the hook that declined */
	param.qp_num = ep->qp->qp_num;
	ep->p2p = req->has_hdr && (req->hdr.flags & OFX_PDATA_F_P2P) &&
		  req->hdr.rtr <= OFX_RTR_READ && ofx_cm_p2p_granted(ep);
	ep->rtr = ep->p2p ? req->hdr.rtr : ia->cfg.rtr;
	/* the REP names the RTR the initiator posts: a responder may pick another */
	if (ep->p2p && ep->rtr == OFX_RTR_READ && ia->read_rtr_unsafe) {
		ofx_dbg("ep %p: read RTR asked; siw answers a queued zero-length read "
			"wrongly (ia.h): granting a write RTR", (void *)ep);
		ep->rtr = OFX_RTR_WRITE;
	}
	/* the peer's read RTR needs a responder resource (rd_depth), if it asked */
	param.responder_resources = rd_depth(param.responder_resources,
					     ep->p2p && ep->rtr == OFX_RTR_READ &&
						     req->param.responder_resources > 0,
					     ia->dev_attr.max_qp_rd_atom);
	len = build_rep_pdata(ep, req, pdata, pdata_len, rep, sizeof(rep));
	if (len < 0)
		return len;
	param.private_data = len ? rep : NULL;
	param.private_data_len = (uint8_t)len;

	/*
	 * The request's id refuses its first step with EINVAL when the kernel
	 * has moved it on (the peer's REJ or timeout crossed this accept and
	 * its event is not here yet): that is a peer gone, like cr->dead, not a
	 * bad parameter of the consumer.
	 */
	ret = ofx_cm_qp_modify(req->cm_id, ep->qp, IBV_QPS_INIT);
	if (ret)
		return ret == -EINVAL ? -ECONNABORTED : ret;
	/* a SEND RTR lands in a provider receive posted ahead of the consumer's */
	ret = ofx_ep_recv_go_live(ep, ep->p2p && ep->rtr == OFX_RTR_SEND);
	if (ret)
		goto err_reset;
	if (drive_qp) {
		ret = ofx_cm_qp_modify(req->cm_id, ep->qp, IBV_QPS_RTR);
		if (ret)
			goto err_reset;
		ret = ofx_cm_qp_modify(req->cm_id, ep->qp, IBV_QPS_RTS);
		if (ret)
			goto err_reset;
	}
	/* from here on, events of this id belong to the EP */
	prev = req->cm_id->context;
	ep->cm_id = req->cm_id;
	ofx_cm_id_set_handler(ep->cm_id, ep_handler(ep));
	if (ofx_verbs->accept(ep->cm_id, &param)) {
		ret = accept_errno(ep);
		ofx_cm_id_set_handler(ep->cm_id, prev);
		ep->cm_id = NULL;
		ofx_ep_conn_rtr_wait_end(ep);
		goto err_reset;
	}
	req->cm_id = NULL;
	ofx_cm_addr_set(&ep->remote_addr, (const struct sockaddr *)req->remote_addr);
	ep->local_qual = req->local_qual;
	ep->remote_qual = 0;
	ep->rtr_arrived = !(ep->p2p && ep->rtr == OFX_RTR_SEND);
	ep->cm_established = false;
	ep->rtr_peer_gone = false;
	ofx_ep_conn_move(ep, OFX_EP_COMPLETION_PENDING);
	atomic_fetch_add(&ia->stats.conn_passive, 1);
	if (ep->p2p)
		atomic_fetch_add(&ia->stats.conn_p2p, 1);
	ofx_dbg("ep %p qp 0x%x accepted (p2p %s)", (void *)ep, ofx_ep_qp_num(ep),
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
 * The passive SEND-RTR EP's progress-thread watch of its recv CQ's channel
 * (ofx_evd_watch_channel), held until the RTR is in (EP lock held).  true:
 * it started now, so the caller drains once more, unlocked: an RTR that
 * completed before the arm raised no event.  A failed arm leaves the RTR to
 * the consumer's own drain or the deadline's (rtr_timer_run): late, not lost.
 */
static bool rtr_watch_start(struct ofx_ep *ep)
{
	if (ep->rtr_watch || !ep->recv_evd)
		return false;
	if (ofx_evd_watch_channel(ep->recv_evd)) {
		ofx_err("ep %p: the rtr's completion will not wake the progress thread", (void *)ep);
		return false;
	}
	ep->rtr_watch = true;
	return true;
}

/*
 * The passive SEND-RTR EP's wait for its RTR.  At the rdma_cm ESTABLISHED
 * the CM handler looks into the recv CQ under the EP lock (rtr_take_here)
 * and settles an RTR it finds first there, the usual case on IB/RoCE; a
 * completion in the way is drained once the lock is dropped, which hands an
 * RTR behind it to the EP (ofx_ep_dto_notify).  Else the wait goes on
 * (rtr_wait_on): the channel watch, and rtr_timer at the deadline, which
 * looks once more and is BROKEN unless the RTR came.  Completions found on
 * the way stay queued for the consumer.  An RTR another drain (the
 * consumer's) took from the CQ before this one, its notify not run yet, is
 * rtr_polled: that notify is on its way and decides, so the wait reports
 * nothing, nor arms anything (waiting for it here could deadlock: a notify
 * op of another owner among the same batch may wait for this thread).
 */
/*
 * One look for the RTR in the recv CQ (no EP lock held): once the channel
 * watch is on, and at the deadline.  The RTR first there is settled here,
 * as its notify op would settle it, without going through the EVD's
 * conversion; the EP is alive (the CM handler's or the timer's) but may be
 * dying, when its completions are dropped as the generic drain drops them.
 * Any other completion first: ofx_evd_take_own drains the CQ, the RTR
 * reaching the EP through its notify op.
 */
static void rtr_look(struct ofx_ep *ep)
{
	struct ibv_wc wc;

	if (ofx_evd_take_own(ep->recv_evd, (uintptr_t)&ep->rtr_cookie, &wc) == 1 &&
	    !atomic_load(&ep->dying))
		ofx_ep_dto_notify(ep, &wc);
}

static void rtr_timer_run(void *arg);

/*
 * The RTR wait after a look into the recv CQ that did not settle the RTR
 * (rtr_timer_run's, or the CM handler's under the EP lock, rtr_take_here):
 * the deadline, or the channel watch and the timer, with one more look once
 * the watch is on (an RTR that completed before the arm raised no event).
 */
static void rtr_wait_on(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	bool watched = false;

	/*
	 * Connected (by the drain, usually) or over: no RTR is awaited, and a
	 * state that may send never moves back to RTR_WAIT but through a new
	 * connection, which looks for itself.
	 */
	if (ofx_ep_conn_may_send(ep))
		return;
	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_RTR_WAIT && !ep->rtr_arrived) {
		if (atomic_load(&ep->rtr_polled)) {
			ofx_dbg("ep %p qp 0x%x: the rtr is polled, its handover is on the way",
				(void *)ep, ofx_ep_qp_num(ep));
		} else if (ep->rtr_peer_gone) {
			/* rtr_wait_hung_up: no RTR in the CQ, the connection never was */
			ofx_info("ep %p qp 0x%x: the peer hung up before its rtr", (void *)ep,
				 ofx_ep_qp_num(ep));
			ep->pdata_len = 0;
			ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED,
					   DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, false);
		} else if (ofx_now_ns() >= ep->rtr_deadline_ns) {
			ofx_info("ep %p: rtr_timeout_ms is %u", (void *)ep, ia->cfg.rtr_timeout_ms);
			ofx_ep_conn_broken(ep, "no rtr from the peer in time");
		} else {
			watched = rtr_watch_start(ep);
			ofx_progress_timer_arm_at(ia->progress, &ep->rtr_timer,
						  ep->rtr_deadline_ns, rtr_timer_run, ep);
		}
	}
	pthread_mutex_unlock(&ep->lock);
	if (watched)
		rtr_look(ep);
}

static void rtr_timer_run(void *arg)
{
	struct ofx_ep *ep = arg;

	/* the RTR before ESTABLISHED, or one the ring had no room for */
	if (ep->recv_evd)
		rtr_look(ep);
	rtr_wait_on(ep);
}

/*
 * A passive SEND-RTR EP is up at the CM, its RTR not first in the CQ: the
 * consumer may not be polling the recv CQ (it waits for ESTABLISHED on the
 * connection EVD), so the CM handler goes on with the wait (rtr_wait_on)
 * once it has dropped the EP lock: the drain of what its look found runs
 * the owners' notify ops, this EP's among them.  In the handler, the event not acked
 * yet, the EP cannot be freed under it (ofx_cm_id_destroy), and a look from
 * there costs no timer and no wake.  The deadline counts from here: before
 * ESTABLISHED the CM's own timeouts end the accept.  ofx_ep_conn_rtr_wait_end
 * ends the timer and the watch.  The caller looks, unlocked.
 */
static void rtr_wait_start(struct ofx_ep *ep)
{
	ep->rtr_deadline_ns = ofx_now_ns() + ep->obj.ia->cfg.rtr_timeout_ms * 1000000ull;
}

/*
 * DISCONNECTED while a passive EP waits for the RTR (ESTABLISHED and
 * DISCONNECTED can come in one batch of CM events).  A sent RTR may already
 * be in the recv CQ, its channel handler not run yet: on iWARP it precedes
 * the FIN in the stream (an RTR the DREQ overtook on IB/RoCE is lost with
 * the flush).  So answer and flush now (nothing arrives after), and let
 * the RTR decide: its completion (ofx_ep_dto_notify) makes it ESTABLISHED,
 * then DISCONNECTED (ofx_ep_conn_p2p_maybe_established); rtr_timer, fired
 * at once, looks into the CQ from the progress thread with no EP lock held
 * (the drain runs the owners' notify ops and keeps other EPs' completions
 * for their consumer) and reports ACCEPT_COMPLETION_ERROR if the RTR is
 * not there.  A ring too full to take the RTR's completion counts as not
 * there.  One a consumer's drain polled but has not handed over yet is
 * there (rtr_polled): rtr_timer_run leaves the outcome to its notify.
 */
static void rtr_wait_hung_up(struct ofx_ep *ep)
{
	if (ep->rtr_peer_gone)
		return;
	ep->rtr_peer_gone = true;
	ofx_verbs->disconnect(ep->cm_id);
	qp_to_error(ep);
	ofx_progress_timer_arm_at(ep->obj.ia->progress, &ep->rtr_timer, 0, rtr_timer_run, ep);
}

/*
 * ESTABLISHED at the CM on a passive SEND-RTR EP whose RTR no drain has
 * handed over: it usually beat the event and sits first in the recv CQ.
 * true: it was there, taken under the EP lock, and the EP connects at once
 * (no RTR_WAIT, no deadline, no second look).  A failed one is settled here
 * as in RTR_WAIT (BROKEN).  Anything else found first is queued, its
 * owner's follow-up left in *later for the caller to run unlocked before
 * its own look (ofx_evd_take_own_nested).  A dying EP's completions are the
 * generic drain's to drop.
 */
static bool rtr_take_here(struct ofx_ep *ep, struct ofx_evd_later *later)
{
	struct ibv_wc wc;

	later->evd = NULL;
	if (!ep->recv_evd || atomic_load(&ep->dying) ||
	    ofx_evd_take_own_nested(ep->recv_evd, (uintptr_t)&ep->rtr_cookie, &wc, later) != 1 ||
	    ep->transport->completion(ep, &wc))
		return false;
	if (ofx_likely(wc.status == IBV_WC_SUCCESS)) {
		ofx_ep_rtr_received(ep);
		return true;
	}
	ofx_ep_conn_move(ep, OFX_EP_RTR_WAIT);
	ofx_ep_dto_settle(ep, &wc);
	return false;
}

/*
 * true: the caller finishes *later (ofx_evd_take_later), then looks for the
 * RTR, once it has dropped the EP lock (rtr_wait_start).
 */
static bool passive_event(struct ofx_ep *ep, struct rdma_cm_event *ev,
			  struct ofx_evd_later *later)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ep->cm_established = true;
		/* in already: a WRITE or READ RTR, a drain took a SEND RTR, or it is here */
		if (ep->p2p && !ep->rtr_arrived && !rtr_take_here(ep, later)) {
			/* connected once the RTR is in (rtr_wait_start), unless it failed */
			if (ep->state == OFX_EP_COMPLETION_PENDING)
				ofx_ep_conn_move(ep, OFX_EP_RTR_WAIT);
			if (ep->state != OFX_EP_RTR_WAIT)
				return false;
			rtr_wait_start(ep);
			return true;
		}
		ofx_dbg("ep %p qp 0x%x established (passive)", (void *)ep, ofx_ep_qp_num(ep));
		/* a common-connect EP reports the initiator's data on this side too */
		ofx_ep_conn_report(ep, OFX_EP_CONNECTED, DAT_CONNECTION_EVENT_ESTABLISHED,
				   ep->csp != NULL);
		return false;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ofx_info("ep %p qp 0x%x: accept failed: %s status %d", (void *)ep, ofx_ep_qp_num(ep),
			 rdma_event_str(ev->event), ev->status);
		qp_to_error(ep);
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED,
				   DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, false);
		return false;
	default:
		ofx_dbg("ep %p: ignoring %s while accepting", (void *)ep, rdma_event_str(ev->event));
		return false;
	}
}

/* ---- established connections --------------------------------------------- */

static void disc_timeout(void *arg)
{
	struct ofx_ep *ep = arg;

	pthread_mutex_lock(&ep->lock);
	if (ep->state == OFX_EP_DISCONNECT_PENDING) {
		ofx_info("ep %p qp 0x%x: no disconnect reply, forcing disconnected", (void *)ep,
			 ofx_ep_qp_num(ep));
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_DISCONNECTED,
				   false);
	}
	pthread_mutex_unlock(&ep->lock);
}

int ofx_cm_disconnect(struct ofx_ep *ep, bool abrupt)
{
	struct ofx_ia *ia = ep->obj.ia;

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
		ofx_ep_conn_rtr_wait_end(ep);
		if (ep->cm_id)
			ofx_verbs->disconnect(ep->cm_id);
		qp_to_error(ep);
		ep->pdata_len = 0;
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_DISCONNECTED,
				   false);
		return 0;
	case OFX_EP_CONNECTED:
		ofx_ep_conn_move(ep, OFX_EP_DISCONNECT_PENDING);
		ep->pdata_len = 0;
		if (ofx_verbs->disconnect(ep->cm_id))
			ofx_warn("rdma_disconnect qp 0x%x: %m", ofx_ep_qp_num(ep));
		/*
		 * Flush outstanding work so the consumer gets its buffers back.
		 * But a graceful close on iWARP: rdma_disconnect closes the
		 * stream after what is queued, and ERROR now would drop sends
		 * siw completed into TCP that are not on the wire yet (the peer
		 * saw its receives FLUSHED); the QP flushes when the close is
		 * done (DISCONNECTED, connected_event).
		 */
		if (abrupt || ia->transport != OFX_TRANSPORT_IWARP)
			qp_to_error(ep);
		if (abrupt)
			ofx_progress_timer_arm(ia->progress, &ep->disc_timer,
					       ia->cfg.disc_timeout_ms * 1000ull, disc_timeout, ep);
		return 0;
	default:
		return -EBUSY;
	}
}

/*
 * The peer hung up (or the transport ended the stream): answer its DREQ
 * unless this side sent one, flush our queues (again after our own DREQ:
 * idempotent, and iWARP's graceful close left it to here) and report `num`.
 */
static void peer_hung_up(struct ofx_ep *ep, DAT_EVENT_NUMBER num)
{
	if (ep->state != OFX_EP_DISCONNECT_PENDING)
		ofx_verbs->disconnect(ep->cm_id);
	qp_to_error(ep);
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->disc_timer);
	ep->pdata_len = 0;
	ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, num, false);
}

static void connected_event(struct ofx_ep *ep, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DISCONNECTED:
		peer_hung_up(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		qp_to_error(ep);
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_BROKEN, false);
		return;
	default:
		ofx_dbg("ep %p: ignoring %s", (void *)ep, rdma_event_str(ev->event));
		return;
	}
}

/* What ep_event logs, out of line: the event's path then saves fewer registers. */
static __attribute__((noinline, cold)) void ep_event_log(const struct ofx_ep *ep,
							  const struct rdma_cm_event *ev)
{
	ofx_dbg("ep %p qp 0x%x state %s: %s status %d", (void *)ep, ofx_ep_qp_num(ep),
		ofx_ep_state_str(ep->state), rdma_event_str(ev->event), ev->status);
	/* the peer (or the transport) ended a connection this side did not end */
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ep->state != OFX_EP_DISCONNECT_PENDING)
		ofx_info("ep %p qp 0x%x: disconnected by the peer in state %s", (void *)ep,
			 ofx_ep_qp_num(ep), ofx_ep_state_str(ep->state));
}

/* The handler of the EP's cm_id (cm.h): every event is the EP's, or ignored. */
static bool ep_event(void *ctx, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_ep *ep = ctx;
	struct ofx_evd_later later;	/* set by passive_event where it returns true */
	bool rtr_look = false;

	pthread_mutex_lock(&ep->lock);
	if (ev->id != ep->cm_id) {
		/* the EP let go of this id (reset, free, timeout) */
		pthread_mutex_unlock(&ep->lock);
		return true;
	}
	if (ofx_log_enabled(OFX_LOG_INFO, OFX_LOG_SUBSYS))
		ep_event_log(ep, ev);
	switch (ep->state) {
	case OFX_EP_ACTIVE_PENDING:
		active_event(ep, ev, destroy_p);
		break;
	case OFX_EP_COMPLETION_PENDING:
	case OFX_EP_RTR_WAIT:
		/*
		 * Ended before this side reported ESTABLISHED (the peer died or
		 * gave up between our accept and its RTU, or before its RTR
		 * came): the accept did not complete, which DAT reports as such,
		 * not as the DISCONNECTED of a connection the consumer never had.
		 * Up at the CM and waiting for the RTR, the RTR decides.
		 */
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ep->state == OFX_EP_RTR_WAIT)
			rtr_wait_hung_up(ep);
		else if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			peer_hung_up(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
		else if (ep->state == OFX_EP_RTR_WAIT)
			connected_event(ep, ev);
		else
			rtr_look = passive_event(ep, ev, &later);
		break;
	case OFX_EP_CONNECTED:
	case OFX_EP_DISCONNECT_PENDING:
		connected_event(ep, ev);
		break;
	default:
		ofx_dbg("ep %p: %s in state %s ignored", (void *)ep, rdma_event_str(ev->event),
			ofx_ep_state_str(ep->state));
		break;
	}
	pthread_mutex_unlock(&ep->lock);
	if (rtr_look) {
		/* its drain hands the RTR over if it was behind what the look found */
		ofx_evd_take_later(&later);
		rtr_wait_on(ep);
	}
	return true;
}

static struct ofx_cm_handler *ep_handler(struct ofx_ep *ep)
{
	ep->cm_handler.fn = ep_event;
	ep->cm_handler.ctx = ep;
	return &ep->cm_handler;
}

struct rdma_cm_id *ofx_cm_release(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct rdma_cm_id *id = ep->cm_id;

	ofx_lock_assert_held(&ep->lock);
	ofx_progress_timer_cancel(ia->progress, &ep->conn_timer);
	ofx_progress_timer_cancel(ia->progress, &ep->disc_timer);
	ofx_ep_conn_rtr_wait_end(ep);
	ep->cm_id = NULL;
	return id;
}
