/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_XRC
#include "xrc.h"
#include "ia_core.h"
#include "log.h"
#include "verbs.h"
#include "xrc_route.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/*
 * The rdma_cm carrier of the XRC control messages (xrc.h, "Carrier"):
 * CONFIRM, BIND and DISC travel as SIDR requests (RDMA_PS_UDP) answered in
 * the SIDR REP; INI is an RDMA_PS_IB connection whose REQ names the INI QP
 * and whose REP (or REJ) carries the answer and names the TGT QP.  The two
 * listeners share one port number, the IA's service port.  Every id here
 * lives on the IA's event channel; ofx_xrc_cm_event() takes their events
 * before cm.c's dispatch (cm.c never uses these port spaces).  On IB the
 * ids reuse the paths resolved before them (xrc_route.h).
 */

#define XRC_CM_BIND_TRIES 8
/* IB paths kept per IA: one per port space for each of 1024 peer nodes */
#define XRC_CM_ROUTES 2048

struct xrc_cm_req {
	struct ofx_list link;		/* in cm->reqs */
	struct ofx_ia *ia;
	struct rdma_cm_id *id;
	struct sockaddr_storage dst;
	uint8_t msg[OFX_XRC_CTL_LEN];
	struct ibv_qp *qp;		/* INI: the QP the connection is for */
	int tries;
	/* its path: the progress thread alone touches it after req_start */
	struct xrc_route_use route;
};

/*
 * An INI connection we accepted, until its id ends: the TGT made for it
 * goes if the end says the sender never took our REP (xrc.h section 11).
 */
struct xrc_cm_acc {
	struct ofx_list link;		/* in cm->accs */
	struct rdma_cm_id *id;
	const struct ibv_qp *tgt;	/* only compared: INI-CLOSE may have freed it */
	uint32_t tgt_qpn;
};

struct ofx_xrc_cm {
	/* guards reqs and accs; a leaf lock (send_ctl is called under xrc.c's locks) */
	pthread_mutex_t lock;
	struct rdma_cm_id *ud_listen, *ib_listen;
	struct ofx_list reqs, accs;
	struct xrc_routes *routes;	/* IB only (RoCE resolves locally); has its own lock */
};

static bool is_ini(const uint8_t *msg)
{
	return msg[3] == OFX_XRC_OP_INI;
}

static int req_start(struct ofx_xrc_cm *cm, struct xrc_cm_req *req)
{
	struct ofx_ia *ia = req->ia;
	int ret;

	if (ofx_verbs->create_id(ia->cm_channel, &req->id, req,
				 is_ini(req->msg) ? RDMA_PS_IB : RDMA_PS_UDP)) {
		ret = -errno;
		ofx_err("xrc control id: %m");
		return ret;
	}
	if (ofx_verbs->resolve_addr(req->id, (struct sockaddr *)&ia->addr,
				    (struct sockaddr *)&req->dst, ia->cfg.cm_timeout_ms)) {
		ret = -errno;
		ofx_err("xrc control: rdma_resolve_addr: %m");
		ofx_verbs->destroy_id(req->id);
		req->id = NULL;
		return ret;
	}
	return 0;
}

static int xrc_cm_send(struct ofx_ia *ia, const struct sockaddr *addr, uint16_t port,
		       const uint8_t msg[OFX_XRC_CTL_LEN], struct ibv_qp *qp)
{
	struct ofx_xrc_cm *cm = ofx_xrc_transport_ctx(ia);
	struct xrc_cm_req *req = calloc(1, sizeof(*req));
	int ret;

	if (!req)
		return -ENOMEM;
	req->ia = ia;
	req->qp = qp;
	memcpy(req->msg, msg, OFX_XRC_CTL_LEN);
	memcpy(&req->dst, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
							       sizeof(struct sockaddr_in));
	if (req->dst.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&req->dst)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&req->dst)->sin_port = htons(port);
	ret = req_start(cm, req);
	if (ret) {
		free(req);
		return ret;
	}
	pthread_mutex_lock(&cm->lock);
	ofx_list_add_tail(&cm->reqs, &req->link);
	pthread_mutex_unlock(&cm->lock);
	return 0;
}

static const struct ofx_xrc_transport xrc_cm_transport = {
	.send_ctl = xrc_cm_send,
	.drives_qps = true,
};

/* rdma_cm caps the depth it offers at 16; so do we */
#define XRC_CM_MAX_RD_ATOM 16

static uint8_t depth_min(int local, int remote)
{
	int d = local < remote ? local : remote;

	if (d > XRC_CM_MAX_RD_ATOM)
		d = XRC_CM_MAX_RD_ATOM;
	return (uint8_t)(d > 0 ? d : 0);
}

/*
 * Moves an XRC QP with the attributes rdma_cm computes for `id` (an RC
 * connection), fitted to the QP's type as the kernel checks it
 * (ib_modify_qp_is_ok): an INI QP has no responder, so INIT->RTR must not
 * carry max_dest_rd_atomic or min_rnr_timer (nor RTS min_rnr_timer); but
 * RESET->INIT requires access flags of every XRC QP, INI included.  The
 * TGT's responder depth is what the INI asked for, which may be more than
 * this device serves.
 */
static int qp_move(struct ofx_ia *ia, struct rdma_cm_id *id, struct ibv_qp *qp,
		   enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = 0, ret;

	if (ofx_verbs->init_qp_attr(id, &attr, &mask)) {
		ret = -errno;
		ofx_err("rdma_init_qp_attr xrc qp 0x%x state %d: %m", qp->qp_num, state);
		return ret ? ret : -EINVAL;
	}
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr.max_dest_rd_atomic > ia->dev_attr.max_qp_rd_atom)
		attr.max_dest_rd_atomic = depth_min(ia->dev_attr.max_qp_rd_atom, 255);
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    attr.max_rd_atomic > ia->dev_attr.max_qp_init_rd_atom)
		attr.max_rd_atomic = depth_min(ia->dev_attr.max_qp_init_rd_atom, 255);
	ret = ofx_verbs->modify_qp(qp, &attr, mask);
	if (ret) {
		ofx_err("modify xrc qp 0x%x to state %d (mask 0x%x): %s", qp->qp_num, state, mask,
			strerror(ret));
		return -ret;
	}
	return 0;
}

static void req_unroute(struct ofx_xrc_cm *cm, struct xrc_cm_req *req);

/* Ends a request: its answer (or none) to xrc.c, the id to destroy. */
static void req_done(struct ofx_xrc_cm *cm, struct xrc_cm_req *req, const uint8_t *answer,
		     int len, struct rdma_cm_id **destroy_p)
{
	req_unroute(cm, req);
	pthread_mutex_lock(&cm->lock);
	ofx_list_del(&req->link);
	pthread_mutex_unlock(&cm->lock);
	*destroy_p = req->id;
	ofx_xrc_ctl_answer(req->ia, req->msg, answer, len);
	free(req);
}

/* A request that failed on the way: again, up to OFX_XRC_CTL_TRIES times. */
static void req_retry(struct ofx_xrc_cm *cm, struct xrc_cm_req *req, struct rdma_cm_id **destroy_p)
{
	req_unroute(cm, req);
	*destroy_p = req->id;
	req->id = NULL;
	if (++req->tries < OFX_XRC_CTL_TRIES && !req_start(cm, req))
		return;
	req->id = *destroy_p;
	req_done(cm, req, NULL, 0, destroy_p);
}

static const uint8_t *answer_of(const void *data, int len)
{
	return data && len >= OFX_XRC_CTL_LEN ? data : NULL;
}

/* ---- paths (xrc_route.h) ------------------------------------------------ */

static void wake(struct ofx_xrc_cm *cm, struct ofx_list *woken);

/*
 * The address of the request's id is resolved: its route comes from the
 * table, from a request resolving it now (it waits), or from the SA.
 */
static void req_route(struct ofx_xrc_cm *cm, struct xrc_cm_req *req,
		      struct rdma_cm_id **destroy_p)
{
	switch (xrc_route_lookup(cm->routes, req->id, &req->route)) {
	case XRC_ROUTE_WAIT:
		return;
	case XRC_ROUTE_SET:
		if (!ofx_verbs_set_ib_path(req->id, &req->route.path))
			return;	/* ROUTE_RESOLVED follows */
		ofx_dbg("xrc control: rdma_set_option(IB_PATH): %m; resolving");
		xrc_route_stale(cm->routes, &req->route);
		break;
	case XRC_ROUTE_RESOLVE:
		break;
	}
	if (ofx_verbs->resolve_route(req->id, req->ia->cfg.cm_timeout_ms))
		req_retry(cm, req, destroy_p);
}

/*
 * Requests that waited for a route: each looks again (and finds it, or
 * resolves it itself).  One whose resolution failed spends a try, as if it
 * had asked.  Their ids have no event in hand (they parked in one that was
 * acknowledged since), so a retry destroys an old one at once.
 */
static void wake(struct ofx_xrc_cm *cm, struct ofx_list *woken)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, woken) {
		struct xrc_cm_req *req = container_of(pos, struct xrc_cm_req, route.wait_link);
		struct rdma_cm_id *destroy = NULL;

		ofx_list_del(pos);
		if (req->route.failed && ++req->tries >= OFX_XRC_CTL_TRIES)
			req_done(cm, req, NULL, 0, &destroy);
		else
			req_route(cm, req, &destroy);
		if (destroy)
			ofx_verbs->destroy_id(destroy);
	}
}

/* The owner of a route got it: it is kept, and its waiters take it. */
static void req_share_route(struct ofx_xrc_cm *cm, struct xrc_cm_req *req)
{
	struct ofx_list woken;

	ofx_list_init(&woken);
	xrc_route_resolved(cm->routes, req->id, &req->route, &woken);
	wake(cm, &woken);
}

/* The request lets go of the table: what it was resolving failed for its waiters. */
static void req_unroute(struct ofx_xrc_cm *cm, struct xrc_cm_req *req)
{
	struct ofx_list woken;

	ofx_list_init(&woken);
	xrc_route_leave(cm->routes, &req->route, &woken);
	wake(cm, &woken);
}

/*
 * No answer at all (a SIDR REQ or REQ that timed out): the path may lead
 * nowhere, so the next request asks the SA.  A REJ or a refusing SIDR REP
 * (a peer process gone) came over the path: it stays.
 */
static bool path_dead(const struct rdma_cm_event *ev)
{
	return ev->event == RDMA_CM_EVENT_ROUTE_ERROR ||
	       (ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == -ETIMEDOUT);
}

static void req_event(struct ofx_xrc_cm *cm, struct xrc_cm_req *req, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p)
{
	struct ofx_ia *ia = req->ia;
	struct rdma_conn_param param = {
		.private_data = req->msg,
		.private_data_len = OFX_XRC_CTL_LEN,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.flow_control = 1,
	};

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		req_route(cm, req, destroy_p);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		req_share_route(cm, req);
		if (req->qp) {
			/* an INI only initiates: no responder resources to offer */
			param.qp_num = req->qp->qp_num;
			param.initiator_depth = depth_min(ia->dev_attr.max_qp_init_rd_atom, 255);
			param.responder_resources = 0;
			if (qp_move(ia, req->id, req->qp, IBV_QPS_INIT)) {
				req_done(cm, req, NULL, 0, destroy_p);
				return;
			}
		}
		if (ofx_verbs->connect(req->id, &param)) {
			ofx_warn("xrc control: rdma_connect: %m");
			req_retry(cm, req, destroy_p);
		}
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* the SIDR REP of a control request */
		if (!req->qp)
			req_done(cm, req, answer_of(ev->param.ud.private_data,
						    ev->param.ud.private_data_len),
				 ev->param.ud.private_data_len, destroy_p);
		return;
	case RDMA_CM_EVENT_CONNECT_RESPONSE: {
		/* the REP of an INI connection: the QP goes to RTS towards T */
		const uint8_t *a = answer_of(ev->param.conn.private_data,
					     ev->param.conn.private_data_len);

		if (!req->qp || qp_move(ia, req->id, req->qp, IBV_QPS_RTR) ||
		    qp_move(ia, req->id, req->qp, IBV_QPS_RTS) || ofx_verbs->establish(req->id))
			a = NULL;
		/* the QPs do not depend on the id: it goes (a DREQ) once done */
		req_done(cm, req, a, ev->param.conn.private_data_len, destroy_p);
		return;
	}
	case RDMA_CM_EVENT_REJECTED:
		/* an INI request refused: the answer is in the REJ */
		if (req->qp && answer_of(ev->param.conn.private_data,
					 ev->param.conn.private_data_len)) {
			req_done(cm, req, ev->param.conn.private_data,
				 ev->param.conn.private_data_len, destroy_p);
			return;
		}
		req_retry(cm, req, destroy_p);
		return;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ofx_dbg("xrc control op %u: %s status %d", req->msg[3], rdma_event_str(ev->event),
			ev->status);
		if (path_dead(ev))
			xrc_route_stale(cm->routes, &req->route);
		req_retry(cm, req, destroy_p);
		return;
	default:
		return;
	}
}

/* An accepted INI connection waits for its id's end (listen_event). */
static void acc_track(struct ofx_xrc_cm *cm, struct rdma_cm_id *id, const struct ibv_qp *tgt,
		      uint32_t tgt_qpn)
{
	struct xrc_cm_acc *acc = calloc(1, sizeof(*acc));

	if (!acc) {
		/* the TGT then stays until INI-CLOSE or our ia_close, as any */
		ofx_warn("xrc ini accept, tgt qp 0x%x: no memory to watch its connection",
			 tgt_qpn);
		return;
	}
	acc->id = id;
	acc->tgt = tgt;
	acc->tgt_qpn = tgt_qpn;
	pthread_mutex_lock(&cm->lock);
	ofx_list_add_tail(&cm->accs, &acc->link);
	pthread_mutex_unlock(&cm->lock);
}

/*
 * The id of an accepted INI connection ends (`event`).  ESTABLISHED: the
 * sender took the REP and sent the RTU.  DISCONNECTED first: it took the
 * REP (its DREQ came, the RTU was lost).  Any other end (REJECTED: the
 * sender's CM gave up on its REQ or refused the REP; UNREACHABLE: our REP
 * went unanswered through all of the CM's retries, its own deadline;
 * CONNECT_ERROR) means the sender does not use the TGT: its request is
 * over, a retry made a TGT of its own, and a sender that gave up sends no
 * INI-CLOSE.  So the TGT goes now, unless an EP holds it or a CONFIRM or
 * BIND named it (ofx_xrc_tgt_drop), instead of at our ia_close.  No timer
 * of ours could do better: until the CM gives up, our REP may still reach
 * the sender, which would then send through that TGT.
 */
static void acc_end(struct ofx_ia *ia, struct ofx_xrc_cm *cm, struct rdma_cm_id *id,
		    enum rdma_cm_event_type event)
{
	struct xrc_cm_acc *acc = NULL;
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&cm->lock);
	ofx_list_for_each_safe(pos, tmp, &cm->accs) {
		struct xrc_cm_acc *a = container_of(pos, struct xrc_cm_acc, link);

		if (a->id == id) {
			ofx_list_del(pos);
			acc = a;
			break;
		}
	}
	pthread_mutex_unlock(&cm->lock);
	if (!acc)
		return;
	if (event != RDMA_CM_EVENT_ESTABLISHED && event != RDMA_CM_EVENT_DISCONNECTED) {
		ofx_dbg("xrc ini connection of tgt qp 0x%x: %s", acc->tgt_qpn,
			rdma_event_str(event));
		ofx_xrc_tgt_drop(ia, acc->tgt, acc->tgt_qpn);
	}
	free(acc);
}

/* A control request or INI connection for us. */
static void listen_event(struct ofx_ia *ia, struct ofx_xrc_cm *cm, struct rdma_cm_event *ev,
			 struct rdma_cm_id **destroy_p)
{
	uint8_t answer[OFX_XRC_CTL_ANSWER_MAX];
	struct rdma_conn_param param = { .private_data = answer,
					 .private_data_len = OFX_XRC_CTL_LEN };
	struct rdma_cm_id *id = ev->id;
	const void *data;
	struct ibv_qp *tgt;
	uint32_t tgt_qpn;
	int len, n = -EPROTO;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* a listener's own event (DEVICE_REMOVAL): ofx_xrc_cm_stop destroys it */
		if (id == cm->ib_listen || id == cm->ud_listen)
			return;
		/* an accepted INI connection: done with its id either way */
		if (id->ps == RDMA_PS_IB && ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE) {
			*destroy_p = id;
			acc_end(ia, cm, id, ev->event);
		}
		return;
	}
	*destroy_p = id;
	if (id->ps == RDMA_PS_UDP) {
		data = ev->param.ud.private_data;
		len = ev->param.ud.private_data_len;
	} else {
		data = ev->param.conn.private_data;
		len = ev->param.conn.private_data_len;
	}
	if (data && len >= OFX_XRC_CTL_LEN)
		n = ofx_xrc_ctl_request(ia, rdma_get_peer_addr(id), data, answer);
	if (n < 0) {
		ofx_dbg("xrc control request not understood");
		if (id->ps == RDMA_PS_IB)
			ofx_verbs->reject(id, NULL, 0);
		return;
	}
	if (id->ps == RDMA_PS_UDP) {
		param.qp_num = 1; /* a SIDR REP names a QP; no QP receives here */
		param.private_data_len = (uint8_t)n;
		if (ofx_verbs->accept(id, &param))
			ofx_warn("xrc control answer: %m");
		return;
	}
	/* INI: move the new TGT and accept with its number, or refuse */
	memcpy(&tgt_qpn, answer + 20, sizeof(tgt_qpn));
	tgt_qpn = ntohl(tgt_qpn);
	tgt = answer[26] == 1 ? ofx_xrc_tgt_qp(ia, tgt_qpn) : NULL;
	if (!tgt || qp_move(ia, id, tgt, IBV_QPS_INIT) || qp_move(ia, id, tgt, IBV_QPS_RTR)) {
		if (tgt) {
			/* the answer said OK: it refuses now, and the TGT goes */
			answer[26] = 2;
			ofx_xrc_tgt_drop(ia, tgt, tgt_qpn);
		}
		ofx_verbs->reject(id, answer, OFX_XRC_CTL_LEN);
		return;
	}
	ofx_xrc_log_qp("tgt", tgt);
	/*
	 * rdma_get_cm_event(3): the event's responder_resources is the INI's
	 * initiator depth, its initiator_depth the INI's responder resources.
	 * The REP's responder_resources becomes the INI's max_rd_atomic.
	 */
	param.qp_num = tgt_qpn;
	param.responder_resources = depth_min(ia->dev_attr.max_qp_rd_atom,
					      ev->param.conn.responder_resources);
	param.initiator_depth = depth_min(ia->dev_attr.max_qp_init_rd_atom,
					  ev->param.conn.initiator_depth);
	if (ofx_verbs->accept(id, &param)) {
		/* the sender tries again (a new TGT) or gives up: this one is nobody's */
		ofx_warn("xrc ini accept, tgt qp 0x%x: %m", tgt_qpn);
		ofx_xrc_tgt_drop(ia, tgt, tgt_qpn);
		return;
	}
	*destroy_p = NULL; /* until it ends (acc_end) */
	acc_track(cm, id, tgt, tgt_qpn);
}

bool ofx_xrc_cm_event(struct ofx_ia *ia, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p)
{
	struct ofx_xrc_cm *cm;
	struct rdma_cm_id *id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->listen_id : ev->id;

	if (!ia->xrc_ia || (id->ps != RDMA_PS_UDP && id->ps != RDMA_PS_IB))
		return false;
	cm = ofx_xrc_transport_ctx(ia);
	if (!cm)
		return false;
	/* our address moved (a bonding failover, say): the paths with it */
	if (ev->event == RDMA_CM_EVENT_ADDR_CHANGE) {
		ofx_dbg("xrc control: address change, forgetting %u paths",
			xrc_routes_count(cm->routes));
		xrc_routes_flush(cm->routes);
		return true;
	}
	if (id->context == cm)
		listen_event(ia, cm, ev, destroy_p);
	else
		req_event(cm, id->context, ev, destroy_p);
	return true;
}

static int listen_on(struct ofx_ia *ia, struct ofx_xrc_cm *cm, enum rdma_port_space ps,
		     uint16_t port, struct rdma_cm_id **id_p)
{
	struct sockaddr_storage a = ia->addr;
	struct rdma_cm_id *id;
	int ret;

	if (ofx_verbs->create_id(ia->cm_channel, &id, cm, ps))
		return -errno;
	if (a.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&a)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&a)->sin_port = htons(port);
	if (ofx_verbs->bind_addr(id, (struct sockaddr *)&a) || ofx_verbs->listen(id, 64)) {
		ret = -errno;
		ofx_verbs->destroy_id(id);
		return ret;
	}
	*id_p = id;
	return 0;
}

int ofx_xrc_cm_start(struct ofx_ia *ia)
{
	struct ofx_xrc_cm *cm = calloc(1, sizeof(*cm));
	uint16_t port = 0;
	int ret = -EADDRINUSE;

	if (!cm)
		return -ENOMEM;
	pthread_mutex_init(&cm->lock, NULL);
	ofx_list_init(&cm->reqs);
	ofx_list_init(&cm->accs);
	/* RoCE and iWARP resolve routes locally: nothing to save there */
	if (ia->transport == OFX_TRANSPORT_IB) {
		cm->routes = xrc_routes_new(XRC_CM_ROUTES);
		if (!cm->routes)
			ofx_warn("xrc control: no memory for the path table; every id asks the SA");
	}
	/* an IB port the UDP space has free too */
	for (int i = 0; i < XRC_CM_BIND_TRIES && ret; i++) {
		ret = listen_on(ia, cm, RDMA_PS_IB, 0, &cm->ib_listen);
		if (ret)
			break;
		port = ntohs(rdma_get_src_port(cm->ib_listen));
		ret = listen_on(ia, cm, RDMA_PS_UDP, port, &cm->ud_listen);
		if (ret) {
			ofx_verbs->destroy_id(cm->ib_listen);
			cm->ib_listen = NULL;
		}
	}
	if (ret) {
		errno = -ret;
		ofx_err("xrc service listeners: %m");
		xrc_routes_free(cm->routes);
		pthread_mutex_destroy(&cm->lock);
		free(cm);
		return ret;
	}
	ofx_xrc_set_transport(ia, &xrc_cm_transport, cm, port);
	ofx_dbg("xrc service port %u", port);
	return 0;
}

void ofx_xrc_cm_stop(struct ofx_ia *ia)
{
	struct ofx_xrc_cm *cm = ofx_xrc_transport_ctx(ia);
	struct ofx_list *pos, *tmp;

	if (!cm)
		return;
	/* the progress thread is stopped: no event can come any more */
	ofx_list_for_each_safe(pos, tmp, &cm->reqs) {
		struct xrc_cm_req *req = container_of(pos, struct xrc_cm_req, link);

		ofx_list_del(&req->link);
		if (req->id)
			ofx_verbs->destroy_id(req->id);
		free(req);
	}
	/* accepted INI connections not ended yet (their TGTs go at ia_close) */
	ofx_list_for_each_safe(pos, tmp, &cm->accs) {
		struct xrc_cm_acc *acc = container_of(pos, struct xrc_cm_acc, link);

		ofx_list_del(&acc->link);
		ofx_verbs->destroy_id(acc->id);
		free(acc);
	}
	if (cm->ud_listen)
		ofx_verbs->destroy_id(cm->ud_listen);
	if (cm->ib_listen)
		ofx_verbs->destroy_id(cm->ib_listen);
	/* after the requests: a parked one points into the table */
	xrc_routes_free(cm->routes);
	pthread_mutex_destroy(&cm->lock);
	free(cm);
	ofx_xrc_set_transport(ia, NULL, NULL, 0);
}

void ofx_xrc_port_changed(struct ofx_ia *ia)
{
	struct ofx_xrc_cm *cm;

	/* the carrier runs where the IA has an event channel (ofx_xrc_ia_open) */
	if (!ia->xrc_ia || !ia->cm_channel)
		return;
	cm = ofx_xrc_transport_ctx(ia);
	if (cm)
		xrc_routes_flush(cm->routes);
}
