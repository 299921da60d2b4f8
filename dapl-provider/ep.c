/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_EP
#include "ep.h"
#include "ep_conn.h"
#include "ep_recv.h"
#include "ep_transport.h"
#include "lock.h"
#include "cm.h"
#include "ep_cm.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "progress.h"
#include "pz.h"
#include "rmr.h"
#include "srq.h"
#include "status.h"
#include "verbs.h"
#include "ep_xrc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <time.h>
#include <sched.h>

/* Stock defaults for an EP created with attr == NULL (contract 4.5). */
#define OFX_EP_DEFAULT_DTOS 16
#define OFX_EP_DEFAULT_IOV 4
#define OFX_EP_DEFAULT_RD_ATOM 4
#define OFX_MSG_SIZE_CAP 0x80000000u
/* Every DAT 2.0 completion flag; other bits are bad input (INVALID_PARAMETER). */
#define OFX_DTO_FLAGS_VALID (DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG | \
			     DAT_COMPLETION_UNSIGNALLED_FLAG |                               \
			     DAT_COMPLETION_BARRIER_FENCE_FLAG |                             \
			     DAT_COMPLETION_EVD_THRESHOLD_FLAG |                             \
			     DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG)
/* Defined QoS and connect flags: valid but unsupported ones are MODEL_NOT_SUPPORTED. */
#define OFX_QOS_VALID (DAT_QOS_HIGH_THROUGHPUT | DAT_QOS_LOW_LATENCY | DAT_QOS_ECONOMY | \
		       DAT_QOS_PREMIUM)
#define OFX_CONNECT_FLAGS_VALID (DAT_CONNECT_MULTIPATH_REQUESTED_FLAG | \
				 DAT_CONNECT_MULTIPATH_REQUIRED_FLAG)

static const char *const ep_state_names[] = {
#define OFX_EP_STATE_NAME(name, dat) [OFX_EP_##name] = #name,
	OFX_EP_STATES(OFX_EP_STATE_NAME)
#undef OFX_EP_STATE_NAME
};

static const DAT_EP_STATE ep_state_dat[] = {
#define OFX_EP_STATE_DAT(name, dat) [OFX_EP_##name] = dat,
	OFX_EP_STATES(OFX_EP_STATE_DAT)
#undef OFX_EP_STATE_DAT
};

const char *ofx_ep_state_str(enum ofx_ep_state state)
{
	return (size_t)state < OFX_ARRAY_SIZE(ep_state_names) ? ep_state_names[state] : "?";
}

DAT_EP_STATE ofx_ep_state_dat(enum ofx_ep_state state)
{
	return ep_state_dat[state];
}

static int min_int(long a, long b)
{
	return a < b ? a : b;
}

static void ep_default_attr(const struct ofx_ia *ia, DAT_EP_ATTR *attr)
{
	const struct ibv_device_attr *dev = &ia->dev_attr;
	uint32_t msg = ia->port_attr.max_msg_sz < OFX_MSG_SIZE_CAP ? ia->port_attr.max_msg_sz
								   : OFX_MSG_SIZE_CAP;

	memset(attr, 0, sizeof(*attr));
	attr->service_type = DAT_SERVICE_TYPE_RC;
	attr->max_message_size = msg;
	attr->max_rdma_size = msg;
	attr->qos = DAT_QOS_BEST_EFFORT;
	attr->recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
	attr->request_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
	attr->max_recv_dtos = min_int(OFX_EP_DEFAULT_DTOS, dev->max_qp_wr - 1);
	attr->max_request_dtos = min_int(OFX_EP_DEFAULT_DTOS, dev->max_qp_wr - 1);
	attr->max_recv_iov = min_int(OFX_EP_DEFAULT_IOV, dev->max_sge);
	attr->max_request_iov = min_int(OFX_EP_DEFAULT_IOV, dev->max_sge);
	attr->max_rdma_read_in = min_int(OFX_EP_DEFAULT_RD_ATOM, dev->max_qp_rd_atom);
	attr->max_rdma_read_out = min_int(OFX_EP_DEFAULT_RD_ATOM, dev->max_qp_init_rd_atom);
	attr->max_rdma_read_iov = ia->transport == OFX_TRANSPORT_IWARP ? 1 : attr->max_request_iov;
	attr->max_rdma_write_iov = attr->max_request_iov;
}

static int ep_dto_limit(const struct ofx_ia *ia)
{
	int limit = ia->dev_attr.max_qp_wr - 1; /* one WR kept for the p2p RTR */

	if (ia->cfg.wr_max && (int)ia->cfg.wr_max < limit)
		limit = ia->cfg.wr_max;
	return limit;
}

/*
 * Checks consumer EP attributes against the device (INVALID_PARAMETER/ARG6);
 * the receive variant checks its own side (ep_recv.h).
 */
static int ep_check_attr(const struct ofx_ia *ia, const DAT_EP_ATTR *a, bool has_req_evd)
{
	const struct ibv_device_attr *dev = &ia->dev_attr;
	int dto_limit = ep_dto_limit(ia);

	if (a->service_type != DAT_SERVICE_TYPE_RC) {
		ofx_err("ep attr: service type %d is not RC", a->service_type);
		return -EINVAL;
	}
	if (a->max_recv_dtos < 0 || a->max_request_dtos < 0 || a->max_recv_iov < 0 ||
	    a->max_request_iov < 0 || a->max_rdma_read_in < 0 || a->max_rdma_read_out < 0) {
		ofx_err("ep attr: negative limit");
		return -EINVAL;
	}
	if ((a->max_request_dtos > 0) != has_req_evd) {
		ofx_err("ep attr: max_request_dtos %d does not match request evd %s",
			a->max_request_dtos, has_req_evd ? "given" : "absent");
		return -EINVAL;
	}
	if (a->max_recv_dtos > dto_limit || a->max_request_dtos > dto_limit ||
	    a->max_recv_iov > dev->max_sge || a->max_request_iov > dev->max_sge ||
	    a->max_rdma_read_in > dev->max_qp_rd_atom ||
	    a->max_rdma_read_out > dev->max_qp_init_rd_atom ||
	    a->max_message_size > ia->port_attr.max_msg_sz ||
	    a->max_rdma_size > ia->port_attr.max_msg_sz) {
		ofx_err("ep attr beyond device %s limits: dtos %d/%d (max %d) iov %d/%d (max %d) "
			"rd %d/%d (max %d/%d) msg %u rdma %u (max %u)",
			ofx_verbs_dev_name(ia->verbs), a->max_recv_dtos,
			a->max_request_dtos, dto_limit, a->max_recv_iov, a->max_request_iov,
			dev->max_sge, a->max_rdma_read_in, a->max_rdma_read_out,
			dev->max_qp_rd_atom, dev->max_qp_init_rd_atom, a->max_message_size,
			a->max_rdma_size, ia->port_attr.max_msg_sz);
		return -EINVAL;
	}
	return 0;
}

/* Reads the per-EP "P2P" provider-specific attribute ("on"/"off"/"auto"). */
static int ep_parse_p2p_attr(const DAT_EP_ATTR *a, enum ofx_tristate *p2p_p)
{
	*p2p_p = OFX_AUTO;
	if (a->ep_provider_specific_count < 0 ||
	    (a->ep_provider_specific_count > 0 && !a->ep_provider_specific))
		return -EINVAL;
	for (int i = 0; i < a->ep_provider_specific_count; i++) {
		const DAT_NAMED_ATTR *na = &a->ep_provider_specific[i];

		if (!na->name || strcmp(na->name, "P2P"))
			continue;
		if (na->value && !strcasecmp(na->value, "on")) {
			*p2p_p = OFX_ON;
		} else if (na->value && !strcasecmp(na->value, "off")) {
			*p2p_p = OFX_OFF;
		} else if (na->value && !strcasecmp(na->value, "auto")) {
			*p2p_p = OFX_AUTO; /* what ep_query reports for "not set" */
		} else {
			ofx_err("ep attr P2P=%s: expected on, off or auto", na->value ? na->value : "");
			return -EINVAL;
		}
	}
	return 0;
}

void ofx_ep_set_qp(struct ofx_ep *ep, struct ibv_qp *qp)
{
	ep->qp = qp;
	if (qp) {
		ep->qp_post_send = ofx_verbs_post_send_of(qp);
		ep->qp_post_recv = ofx_verbs_post_recv_of(qp);
	}
}

/*
 * The send queue's depth: the consumer's requests, the provider's RTR and,
 * where the IA nudges after it (ep_cm.c rtr_nudge_run), one nudge.  Every
 * one of them can complete (a flush at least): the CQ counts them all.
 */
static int ep_send_wrs(const struct ofx_ep *ep)
{
	return ep->attr.max_request_dtos + 1 + (ep->obj.ia->rtr_nudge ? 1 : 0);
}

static int ep_create_qp(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ibv_cq *send_cq = ofx_evd_qp_cq(ia, ep->req_evd);
	struct ibv_qp_init_attr_ex init = {
		.qp_context = ep,
		.send_cq = send_cq,
		/* one EVD for both queues: its CQ read once (under its lock) */
		.recv_cq = ep->recv_evd == ep->req_evd ? send_cq : ofx_evd_qp_cq(ia, ep->recv_evd),
		.cap = {
			.max_send_wr = (uint32_t)ep_send_wrs(ep),
			.max_send_sge = ep->attr.max_request_iov ? ep->attr.max_request_iov : 1,
			.max_inline_data = ia->max_inline,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ep->pz->pd,
	};

	ep->recv->qp_init(ep, &init);
	errno = 0;
	ofx_ep_set_qp(ep, ofx_verbs->create_qp_ex(ia->verbs, &init));
	if (!ep->qp) {
		const char *why;
		int ret = ofx_verbs_create_failed(&why);

		ofx_err("create rc qp on %s (send %u recv %u sge %u/%u inline %u): %s",
			ofx_verbs_dev_name(ia->verbs), init.cap.max_send_wr,
			init.cap.max_recv_wr, init.cap.max_send_sge, init.cap.max_recv_sge,
			init.cap.max_inline_data, why);
		return ret;
	}
	ep->max_inline = init.cap.max_inline_data;
	ofx_ia_count_rc_qp(ia, true);
	ofx_dbg("ep %p qp 0x%x created", (void *)ep, ep->qp->qp_num);
	return 0;
}

/* Destroys an RC QP the EP let go of (`why`: for the warning); NULL-safe. */
static void ep_qp_destroy(struct ofx_ep *ep, struct ibv_qp *qp, const char *why)
{
	if (!qp)
		return;
	if (ofx_verbs->destroy_qp(qp))
		ofx_warn("destroy qp 0x%x%s: %m", qp->qp_num, why);
	ofx_ia_count_rc_qp(ep->obj.ia, false);
}

static int ep_init_rings(struct ofx_ep *ep)
{
	int ret;
	/* an SRQ EP's receives live in the SRQ's slots: no recv ring */
	uint32_t recv_slots = (uint32_t)ep->recv->own_wrs(ep);

	ret = ofx_cookie_ring_init(&ep->send_ring, ep->attr.max_request_dtos + 1,
				   &ep->cookie_owner);
	if (ret)
		return ret;
	ret = ofx_cookie_ring_init(&ep->recv_ring, recv_slots, &ep->cookie_owner);
	if (ret)
		ofx_cookie_ring_fini(&ep->send_ring);
	/* recv_sges: with the first receive that needs them (ep_post_recv_kept) */
	return ret;
}

/* Work requests (and so completions) the EP can have outstanding per queue. */
static int ep_recv_cqes(const struct ofx_ep *ep)
{
	/* an SRQ EP's receives are the SRQ's (not accounted here) */
	return ep->recv->own_wrs(ep);
}

static int ep_req_cqes(const struct ofx_ep *ep)
{
	return ep_send_wrs(ep);
}

/*
 * The reservation in the receive EVD: with one EVD for both queues (as
 * dtestcm and most consumers have it), the request side's too, so that
 * create and free take that EVD's lock once.
 */
static int ep_recv_evd_cqes(const struct ofx_ep *ep)
{
	return ep_recv_cqes(ep) + (ep->req_evd == ep->recv_evd ? ep_req_cqes(ep) : 0);
}

/* Whether the request EVD holds a reservation of its own (ep_recv_evd_cqes). */
static bool ep_req_evd_apart(const struct ofx_ep *ep)
{
	return ep->req_evd && ep->req_evd != ep->recv_evd;
}

/*
 * References to the PZ and EVDs, and room in the EVDs' CQs for every
 * completion the EP can have outstanding.  Taken before the QP is created,
 * which must land on a CQ that already counts it (ofx_evd_reserve_cqes).
 * Takes nothing on failure.
 */
static int ep_take_refs(struct ofx_ep *ep)
{
	int ret;

	if (ep->recv_evd) {
		ret = ofx_evd_reserve_cqes(ep->recv_evd, ep_recv_evd_cqes(ep));
		if (ret)
			return ret;
	}
	if (ep_req_evd_apart(ep)) {
		ret = ofx_evd_reserve_cqes(ep->req_evd, ep_req_cqes(ep));
		if (ret) {
			if (ep->recv_evd)
				ofx_evd_unreserve_cqes(ep->recv_evd, ep_recv_evd_cqes(ep));
			return ret;
		}
	}
	if (ep->pz)
		atomic_fetch_add(&ep->pz->refs, 1);
	if (ep->recv_evd)
		ofx_evd_get(ep->recv_evd);
	if (ep->req_evd)
		ofx_evd_get(ep->req_evd);
	if (ep->conn_evd)
		ofx_evd_get(ep->conn_evd);
	return 0;
}

static void ep_drop_refs(struct ofx_ep *ep)
{
	if (ep->pz)
		atomic_fetch_sub(&ep->pz->refs, 1);
	if (ep->recv_evd) {
		ofx_evd_unreserve_cqes(ep->recv_evd, ep_recv_evd_cqes(ep));
		ofx_evd_put(ep->recv_evd);
	}
	if (ep->req_evd) {
		if (ep_req_evd_apart(ep))
			ofx_evd_unreserve_cqes(ep->req_evd, ep_req_cqes(ep));
		ofx_evd_put(ep->req_evd);
	}
	if (ep->conn_evd)
		ofx_evd_put(ep->conn_evd);
}

static void ep_fini_rings(struct ofx_ep *ep)
{
	free(ep->recv_sges);
	ep->recv_sges = NULL;
	ofx_cookie_ring_fini(&ep->recv_ring);
	ofx_cookie_ring_fini(&ep->send_ring);
}

/* The QP and its SRQ membership.  On failure nothing of it is left. */
static int ep_build_qp(struct ofx_ep *ep)
{
	int ret;

	ret = ep_create_qp(ep);
	if (ret)
		return ret;
	ret = ep->recv->qp_added(ep);
	if (ret)
		goto err_destroy_qp;
	return 0;

err_destroy_qp:
	ep_qp_destroy(ep, ep->qp, "");
	ep->qp = NULL;
	return ret;
}

/* The cookie rings exist: the EP took its queue sizes (ep_attach). */
static bool ep_attached(const struct ofx_ep *ep)
{
	return ep->send_ring.slots != NULL;
}

/*
 * Builds what an attached EP owns: cookie rings, its XRC state (made once)
 * and, unless its transport makes one per connection, the QP with its SRQ
 * membership.  An EP made without a PZ (by the consumer, or by the provider
 * for a DAT_PSP_PROVIDER_FLAG PSP) has none of it until connect or accept,
 * so that dat_ep_modify can still change the PZ, EVDs and queue sizes.
 */
static int ep_attach(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	int ret;

	ret = ep_init_rings(ep);
	if (ret)
		return ret;
	/* what the QP grants lowers it; XRC sends check the INI QP's grant */
	ep->max_inline = ia->max_inline;
	if (ia->xrc) {
		ret = ofx_xrc_ep_create(ep);
		if (ret)
			goto err_rings;
	}
	/* the one place that asks which transport the EP has */
	ep->transport = ep->xrc ? ofx_xrc_ep_transport_of(ia) : &ofx_ep_rc_transport;
	if (ep->transport->qp_per_connection)
		return 0;
	ret = ep_build_qp(ep);
	if (ret)
		goto err_rings;
	return 0;

err_rings:
	ep_fini_rings(ep);
	return ret;
}

int ofx_ep_qp_open(struct ofx_ep *ep)
{
	ofx_lock_assert_held(&ep->lock);
	return ep->qp ? 0 : ep_create_qp(ep);
}

/*
 * Takes the QP off the EP (windows, SRQ, inline grant) for the caller to
 * destroy with ep->lock dropped: ibv_destroy_qp waits for the QP's async
 * events to be acknowledged, and their handler takes ep->lock.
 */
static struct ibv_qp *ep_qp_unhook(struct ofx_ep *ep)
{
	struct ibv_qp *old = ep->qp;

	ofx_lock_assert_held(&ep->lock);
	ofx_rmr_ep_gone(&ep->cookie_owner);
	ep->recv->qp_removed(ep);
	ep->qp = NULL;
	ep->max_inline = ep->obj.ia->max_inline;
	return old;
}

int ofx_ep_qp_renew_unused(struct ofx_ep *ep)
{
	struct ibv_qp *old;

	ofx_lock_assert_held(&ep->lock);
	/* a receive on the old QP would be lost with it */
	if (!ep->qp || atomic_load(&ep->recv_live))
		return -EBUSY;
	old = ep_qp_unhook(ep);
	pthread_mutex_unlock(&ep->lock);
	ep_qp_destroy(ep, old, " for a retry");
	pthread_mutex_lock(&ep->lock);
	return ep_build_qp(ep);
}

void ofx_ep_qp_close(struct ofx_ep *ep)
{
	struct ibv_qp *old;

	ofx_lock_assert_held(&ep->lock);
	if (!ep->qp)
		return;
	ofx_dbg("ep %p: qp 0x%x not needed (the connection runs over %s)", (void *)ep,
		ep->qp->qp_num, ep->transport->name);
	old = ep_qp_unhook(ep);
	ep_qp_destroy(ep, old, "");
}

DAT_RETURN ofx_ep_attach(struct ofx_ep *ep)
{
	int ret;

	if (ep_attached(ep))
		return DAT_SUCCESS;
	if (!ep->pz) {
		ofx_info("ep %p has no pz: set one with dat_ep_modify first", (void *)ep);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PZ);
	}
	ret = ep_attach(ep);
	if (ret == -ESHUTDOWN)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_SHUTDOWN);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* Resolves an optional EVD handle that must carry `flag`; -EBADF if wrong. */
static int ep_evd_arg(DAT_EVD_HANDLE h, DAT_EVD_FLAGS flag, struct ofx_evd **evd_p)
{
	*evd_p = NULL;
	if (h == DAT_HANDLE_NULL)
		return 0;
	*evd_p = ofx_evd_from_handle(h);
	if (!*evd_p || !((*evd_p)->flags & flag))
		return -EBADF;
	return 0;
}

/* The object with its attributes, not yet attached (see ep_attach). */
static struct ofx_ep *ep_alloc(struct ofx_ia *ia, const DAT_EP_ATTR *attr)
{
	struct ofx_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	if (attr)
		ep->attr = *attr;
	else
		ep_default_attr(ia, &ep->attr);
	ep->obj.ia = ia;
	ofx_ep_cookie_owner_init(ep);
	ofx_ep_conn_init(ep, OFX_EP_UNCONNECTED);
	ep->transport = &ofx_ep_rc_transport;	/* until ep_attach says XRC */
	ep->recv = &ofx_ep_rq_recv;		/* ep_create_with_srq says SRQ */
	ofx_list_init(&ep->csp_link);
	ep->soft_hw = DAT_WATERMARK_INFINITE;
	ep->hard_hw = DAT_WATERMARK_INFINITE;
	pthread_mutex_init(&ep->lock, NULL);
	return ep;
}

/* Undoes ep_alloc and the receive variant's init (nothing attached, nothing referenced). */
static void ep_discard(struct ofx_ep *ep)
{
	ep->recv->fini(ep);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

/* The named-attr arrays belong to the consumer: never keep them. */
static void ep_forget_named_attrs(struct ofx_ep *ep)
{
	ep->attr.ep_provider_specific_count = 0;
	ep->attr.ep_provider_specific = NULL;
	ep->attr.ep_transport_specific_count = 0;
	ep->attr.ep_transport_specific = NULL;
}

/*
 * ep_create and ep_create_with_srq (`srq` NULL for a plain EP).  An SRQ EP
 * takes its receives from the SRQ: no recv ring, its QP is created with
 * .srq, it needs a recv EVD to report them on, and it cannot do p2p (a
 * passive SEND RTR needs a receive of the EP's own).  Without a PZ the EP
 * stays unattached until connect or accept (ep_attach).  Argument numbers
 * of attr and ep_p differ by one between the two calls.
 */
static DAT_RETURN ep_create_common(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
				   DAT_EVD_HANDLE recv_evd_h, DAT_EVD_HANDLE req_evd_h,
				   DAT_EVD_HANDLE conn_evd_h, struct ofx_srq *srq,
				   const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_handle);
	struct ofx_pz *pz = NULL;
	struct ofx_evd *recv_evd, *req_evd, *conn_evd;
	struct ofx_ep *ep;
	DAT_RETURN status;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	/* an SRQ fixes the PZ (srq_ep_pz_difference_supported is FALSE) */
	if ((pz_handle != DAT_HANDLE_NULL || srq) && !(pz = ofx_pz_from_handle(pz_handle)))
		return ofx_invalid_handle(OFX_OBJ_PZ);
	if (ep_evd_arg(recv_evd_h, DAT_EVD_DTO_FLAG, &recv_evd) || (srq && !recv_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if (ep_evd_arg(req_evd_h, DAT_EVD_DTO_FLAG, &req_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
	if (ep_evd_arg(conn_evd_h, DAT_EVD_CONNECTION_FLAG, &conn_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	if (srq && srq->pz != pz)
		return OFX_INVALID_ARG(2);
	if (!ep_p)
		return srq ? OFX_INVALID_ARG(8) : OFX_INVALID_ARG(7);

	ep = ep_alloc(ia, attr);
	if (!ep)
		return ofx_dat_status(-ENOMEM, OFX_OBJ_EP);
	/* the one place that chooses the receive variant (ep_recv.h) */
	ep->recv = srq ? &ofx_ep_srq_recv : &ofx_ep_rq_recv;
	ep->srq = srq;
	ret = ep->recv->init(ep);
	if (ret) {
		ep_discard(ep);
		return ofx_dat_status(ret, OFX_OBJ_EP);
	}
	if (ep_parse_p2p_attr(&ep->attr, &ep->p2p_attr) ||
	    ep_check_attr(ia, &ep->attr, req_evd) ||
	    ep->recv->check(ep, pz, recv_evd, &ep->attr) ||
	    (!ep->recv->rtr_recv && ep->p2p_attr == OFX_ON)) {
		ep_discard(ep);
		return srq ? OFX_INVALID_ARG(7) : OFX_INVALID_ARG(6);
	}
	if (!ep->recv->rtr_recv)
		ep->p2p_attr = OFX_OFF;
	ep_forget_named_attrs(ep);
	ep->pz = pz;
	ep->recv_evd = recv_evd;
	ep->req_evd = req_evd;
	ep->conn_evd = conn_evd;

	ret = ep_take_refs(ep);
	if (ret) {
		ep_discard(ep);
		return ofx_dat_status(ret, OFX_OBJ_EP);
	}
	status = pz ? ofx_ep_attach(ep) : DAT_SUCCESS;
	if (status != DAT_SUCCESS) {
		ep_drop_refs(ep);
		ep_discard(ep);
		return status;
	}
	ofx_obj_init(&ep->obj, OFX_OBJ_EP, ia);
	*ep_p = ep;
	return DAT_SUCCESS;
}

struct ofx_ep *ofx_ep_create_tentative(struct ofx_ia *ia)
{
	struct ofx_ep *ep = ep_alloc(ia, NULL);

	if (!ep)
		return NULL;
	ep->p2p_attr = OFX_AUTO;
	ofx_ep_conn_init(ep, OFX_EP_TENTATIVE_PENDING);
	ep->provider_created = true;
	ofx_obj_init(&ep->obj, OFX_OBJ_EP, ia);
	return ep;
}

DAT_RETURN ofx_ep_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
			 DAT_EVD_HANDLE recv_evd_h, DAT_EVD_HANDLE req_evd_h,
			 DAT_EVD_HANDLE conn_evd_h, const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p)
{
	return ep_create_common(ia_handle, pz_handle, recv_evd_h, req_evd_h, conn_evd_h, NULL,
				attr, ep_p);
}

DAT_RETURN ofx_ep_create_with_srq(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
				  DAT_EVD_HANDLE recv_evd_h, DAT_EVD_HANDLE req_evd_h,
				  DAT_EVD_HANDLE conn_evd_h, DAT_SRQ_HANDLE srq_h,
				  const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_p)
{
	struct ofx_srq *srq = ofx_srq_from_handle(srq_h);

	if (!srq)
		return ofx_invalid_handle(OFX_OBJ_SRQ);
	return ep_create_common(ia_handle, pz_handle, recv_evd_h, req_evd_h, conn_evd_h, srq,
				attr, ep_p);
}

/*
 * ep_query's provider-specific answers: "P2P" the EP's own setting
 * (on/off/auto), "P2P_ACTIVE" whether the current (or last) connection
 * negotiated p2p, "RTR" its RTR type.  Consumers copy ep_attr from a query
 * into ep_create, often after freeing the queried EP ("start from the
 * defaults"), so the arrays are static, one per combination, and "P2P"
 * carries the setting so that such a copy changes nothing.
 */
#define OFX_EP_QUERY_ATTRS 3
static DAT_NAMED_ATTR ep_query_table[3][2][3][OFX_EP_QUERY_ATTRS];
static pthread_once_t ep_query_once = PTHREAD_ONCE_INIT;

static void ep_query_table_init(void)
{
	for (int set = 0; set < 3; set++)
		for (int on = 0; on < 2; on++)
			for (int rtr = 0; rtr < 3; rtr++) {
				DAT_NAMED_ATTR *a = ep_query_table[set][on][rtr];

				a[0] = (DAT_NAMED_ATTR){ "P2P", ofx_tristate_str(set) };
				a[1] = (DAT_NAMED_ATTR){ "P2P_ACTIVE", on ? "on" : "off" };
				a[2] = (DAT_NAMED_ATTR){ "RTR", ofx_rtr_type_str(rtr) };
			}
}

static const DAT_NAMED_ATTR *ep_query_attrs(enum ofx_tristate set, bool on,
					    enum ofx_rtr_type rtr)
{
	pthread_once(&ep_query_once, ep_query_table_init);
	return ep_query_table[set % 3][on][rtr % 3];
}

DAT_RETURN ofx_ep_query(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_ia *ia;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (mask & ~DAT_EP_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	ia = ep->obj.ia;

	pthread_mutex_lock(&ep->lock);
	memset(param, 0, sizeof(*param));
	param->ia_handle = ofx_ia_dat_handle(ia);
	param->ep_state = ofx_ep_state_dat(ep->state);
	param->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
	param->local_port_qual = ep->local_qual;
	param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote_addr;
	param->remote_port_qual = ep->remote_qual;
	param->pz_handle = ep->pz;
	param->recv_evd_handle = ep->recv_evd ? (DAT_EVD_HANDLE)ep->recv_evd : DAT_HANDLE_NULL;
	param->request_evd_handle = ep->req_evd ? (DAT_EVD_HANDLE)ep->req_evd : DAT_HANDLE_NULL;
	param->connect_evd_handle = ep->conn_evd ? (DAT_EVD_HANDLE)ep->conn_evd : DAT_HANDLE_NULL;
	param->srq_handle = (DAT_SRQ_HANDLE)ep->srq;	/* srq: the handle (NULL: none) */
	param->ep_attr = ep->attr;

	param->ep_attr.ep_provider_specific_count = OFX_EP_QUERY_ATTRS;
	param->ep_attr.ep_provider_specific =
		(DAT_NAMED_ATTR *)ep_query_attrs(ep->p2p_attr, ep->p2p, ep->rtr);
	pthread_mutex_unlock(&ep->lock);
	return DAT_SUCCESS;
}

/* What dat_ep_modify may change (the rest describes the connection). */
#define OFX_EP_MODIFIABLE                                                            \
	(DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |                     \
	 DAT_EP_FIELD_REQUEST_EVD_HANDLE | DAT_EP_FIELD_CONNECT_EVD_HANDLE |         \
	 DAT_EP_FIELD_EP_ATTR_ALL)
#define OFX_EP_PROVIDER_ATTR \
	(DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR | DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR)

/* The PZ, EVDs and attributes an EP would have after dat_ep_modify. */
struct ep_config {
	struct ofx_pz *pz;
	struct ofx_evd *recv_evd, *req_evd, *conn_evd;
	DAT_EP_ATTR attr;
};

static void ep_apply_attr_mask(DAT_EP_ATTR *dst, const DAT_EP_ATTR *src, DAT_EP_PARAM_MASK m)
{
#define EP_ATTR_COPY(bit, field)              \
	if (m & DAT_EP_FIELD_EP_ATTR_##bit) \
		dst->field = src->field
	EP_ATTR_COPY(SERVICE_TYPE, service_type);
	EP_ATTR_COPY(MAX_MESSAGE_SIZE, max_message_size);
	EP_ATTR_COPY(MAX_RDMA_SIZE, max_rdma_size);
	EP_ATTR_COPY(QOS, qos);
	EP_ATTR_COPY(RECV_COMPLETION_FLAGS, recv_completion_flags);
	EP_ATTR_COPY(REQUEST_COMPLETION_FLAGS, request_completion_flags);
	EP_ATTR_COPY(MAX_RECV_DTOS, max_recv_dtos);
	EP_ATTR_COPY(MAX_REQUEST_DTOS, max_request_dtos);
	EP_ATTR_COPY(MAX_RECV_IOV, max_recv_iov);
	EP_ATTR_COPY(MAX_REQUEST_IOV, max_request_iov);
	EP_ATTR_COPY(MAX_RDMA_READ_IN, max_rdma_read_in);
	EP_ATTR_COPY(MAX_RDMA_READ_OUT, max_rdma_read_out);
	EP_ATTR_COPY(SRQ_SOFT_HW, srq_soft_hw);
	EP_ATTR_COPY(MAX_RDMA_READ_IOV, max_rdma_read_iov);
	EP_ATTR_COPY(MAX_RDMA_WRITE_IOV, max_rdma_write_iov);
#undef EP_ATTR_COPY
}

/* Resolves and checks the new configuration; a DAT status for the caller. */
static DAT_RETURN ep_modify_config(const struct ofx_ep *ep, DAT_EP_PARAM_MASK mask,
				   const DAT_EP_PARAM *param, struct ep_config *cfg)
{
	cfg->pz = ep->pz;
	cfg->recv_evd = ep->recv_evd;
	cfg->req_evd = ep->req_evd;
	cfg->conn_evd = ep->conn_evd;
	cfg->attr = ep->attr;
	if ((mask & DAT_EP_FIELD_PZ_HANDLE) &&
	    !(cfg->pz = ofx_pz_from_handle(param->pz_handle)))
		return OFX_INVALID_ARG(3);
	if ((mask & DAT_EP_FIELD_RECV_EVD_HANDLE) &&
	    ep_evd_arg(param->recv_evd_handle, DAT_EVD_DTO_FLAG, &cfg->recv_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if ((mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) &&
	    ep_evd_arg(param->request_evd_handle, DAT_EVD_DTO_FLAG, &cfg->req_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
	if ((mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) &&
	    ep_evd_arg(param->connect_evd_handle, DAT_EVD_CONNECTION_FLAG, &cfg->conn_evd))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	ep_apply_attr_mask(&cfg->attr, &param->ep_attr, mask);
	if (ep->recv->check(ep, cfg->pz, cfg->recv_evd, &cfg->attr) ||
	    ep_check_attr(ep->obj.ia, &cfg->attr, cfg->req_evd))
		return OFX_INVALID_ARG(3);
	return DAT_SUCCESS;
}

/*
 * An attached EP that never connected (or was reset) gives its QP and
 * rings up so that the next connect or accept builds them to the new
 * configuration.  Held receives would be lost, and an SRQ EP's QP is
 * registered with the SRQ: those keep their QP.  An XRC EP keeps its XRC
 * state (ep_attach makes it once).  ep->lock held.
 */
static DAT_RETURN ep_detach(struct ofx_ep *ep)
{
	struct ibv_qp *old;
	const char *why;

	ofx_lock_assert_held(&ep->lock);
	if (!ep_attached(ep))
		return DAT_SUCCESS;
	why = ep->recv->keeps_qp(ep);
	if (why) {
		ofx_info("ep %p: cannot rebuild qp 0x%x (%s)", (void *)ep, ofx_ep_qp_num(ep), why);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	old = ep_qp_unhook(ep);
	ep_qp_destroy(ep, old, "");
	ep_fini_rings(ep);
	return DAT_SUCCESS;
}

static void ep_set_config(struct ofx_ep *ep, const struct ep_config *cfg)
{
	ep->pz = cfg->pz;
	ep->recv_evd = cfg->recv_evd;
	ep->req_evd = cfg->req_evd;
	ep->conn_evd = cfg->conn_evd;
	ep->attr = cfg->attr;
}

static DAT_RETURN ep_modify_locked(struct ofx_ep *ep, DAT_EP_PARAM_MASK mask,
				   const DAT_EP_PARAM *param, enum ofx_tristate p2p)
{
	struct ep_config cfg, old;
	DAT_RETURN status;
	int ret;

	if (ep->state != OFX_EP_UNCONNECTED && ep->state != OFX_EP_TENTATIVE_PENDING)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED);
	if (!(mask & ~OFX_EP_PROVIDER_ATTR)) {
		if (mask)
			ep->p2p_attr = p2p;
		return DAT_SUCCESS;
	}
	status = ep_modify_config(ep, mask, param, &cfg);
	if (status == DAT_SUCCESS)
		status = ep_detach(ep);
	if (status != DAT_SUCCESS)
		return status;
	old = (struct ep_config){ ep->pz, ep->recv_evd, ep->req_evd, ep->conn_evd, ep->attr };
	ep_drop_refs(ep);
	ep_set_config(ep, &cfg);
	ret = ep_take_refs(ep);
	if (ret) {
		/* the CQs cannot take the new queue sizes: keep the old ones */
		ep_set_config(ep, &old);
		if (ep_take_refs(ep))
			ofx_warn("ep %p: cannot reserve its old cq room again", (void *)ep);
		return ofx_dat_status(ret, OFX_OBJ_EP);
	}
	ep_forget_named_attrs(ep);
	if (mask & OFX_EP_PROVIDER_ATTR)
		ep->p2p_attr = p2p;
	/* attached now, so that receives can be posted before connect or accept */
	return ep->pz ? ofx_ep_attach(ep) : DAT_SUCCESS;
}

/*
 * In UNCONNECTED (or TENTATIVE_CONNECTION_PENDING for a provider-created
 * EP): the per-EP P2P switch, and the PZ, EVDs and queue attributes (the QP
 * is rebuilt, see ep_detach).  The connection fields are not modifiable.
 */
DAT_RETURN ofx_ep_modify(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask,
			 const DAT_EP_PARAM *param)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	enum ofx_tristate p2p = OFX_AUTO;
	DAT_RETURN status;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (!param)
		return OFX_INVALID_ARG(3);
	if (mask & ~OFX_EP_MODIFIABLE)
		return OFX_INVALID_ARG(2);
	if ((mask & OFX_EP_PROVIDER_ATTR) &&
	    (ep_parse_p2p_attr(&param->ep_attr, &p2p) || (!ep->recv->rtr_recv && p2p == OFX_ON)))
		return OFX_INVALID_ARG(3);
	pthread_mutex_lock(&ep->lock);
	status = ep_modify_locked(ep, mask, param, p2p);
	pthread_mutex_unlock(&ep->lock);
	return status;
}

DAT_RETURN ofx_ep_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
			  DAT_TIMEOUT timeout, DAT_COUNT pdata_len, const DAT_PVOID pdata,
			  DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	DAT_RETURN status;
	int ret;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return OFX_INVALID_ARG(2);
	if (timeout == 0)
		return OFX_INVALID_ARG(4);
	if (pdata_len < 0 || pdata_len > ofx_cm_max_pdata(ep->obj.ia))
		return OFX_INVALID_ARG(5);
	if (pdata_len && !pdata)
		return OFX_INVALID_ARG(6);
	if (qos & ~OFX_QOS_VALID)
		return OFX_INVALID_ARG(7);
	if (flags & ~OFX_CONNECT_FLAGS_VALID)
		return OFX_INVALID_ARG(8);
	if (qos != DAT_QOS_BEST_EFFORT || flags != DAT_CONNECT_DEFAULT_FLAG)
		return DAT_MODEL_NOT_SUPPORTED;

	pthread_mutex_lock(&ep->lock);
	if (ep->state != OFX_EP_UNCONNECTED) {
		enum ofx_ep_state state = ep->state;

		pthread_mutex_unlock(&ep->lock);
		ofx_dbg("ep %p connect in state %s", (void *)ep, ofx_ep_state_str(state));
		return OFX_DAT_ERR(DAT_INVALID_STATE, state == OFX_EP_CONNECTED ?
				   DAT_INVALID_STATE_EP_CONNECTED : DAT_INVALID_STATE_EP_NOTREADY);
	}
	status = ofx_ep_attach(ep);
	if (status != DAT_SUCCESS) {
		pthread_mutex_unlock(&ep->lock);
		return status;
	}
	ret = ofx_cm_connect(ep, addr, qual, timeout, pdata, pdata_len);
	pthread_mutex_unlock(&ep->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

DAT_RETURN ofx_ep_dup_connect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE dup_handle,
			      DAT_TIMEOUT timeout, DAT_COUNT pdata_len, const DAT_PVOID pdata,
			      DAT_QOS qos)
{
	struct ofx_ep *dup = ofx_ep_from_handle(dup_handle);
	struct sockaddr_storage remote;
	DAT_CONN_QUAL qual;

	if (!ofx_ep_from_handle(ep_handle) || !dup)
		return ofx_invalid_handle(OFX_OBJ_EP);
	pthread_mutex_lock(&dup->lock);
	if (dup->state != OFX_EP_CONNECTED) {
		pthread_mutex_unlock(&dup->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	}
	remote = dup->remote_addr;
	qual = dup->remote_qual;
	pthread_mutex_unlock(&dup->lock);
	return ofx_ep_connect(ep_handle, (DAT_IA_ADDRESS_PTR)&remote, qual, timeout, pdata_len,
			      pdata, qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN ofx_ep_disconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	int ret;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return OFX_INVALID_ARG(2);
	pthread_mutex_lock(&ep->lock);
	if (!ep->transport->disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG, &ret))
		ret = ofx_cm_disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG);
	pthread_mutex_unlock(&ep->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* ---- data path ---------------------------------------------------------- */

_Static_assert(sizeof(DAT_LMR_TRIPLET) == sizeof(struct ibv_sge),
	       "DAT_LMR_TRIPLET must match struct ibv_sge");
_Static_assert(offsetof(DAT_LMR_TRIPLET, lmr_context) == offsetof(struct ibv_sge, lkey),
	       "DAT_LMR_TRIPLET.lmr_context must overlay ibv_sge.lkey");
_Static_assert(offsetof(DAT_LMR_TRIPLET, segment_length) == offsetof(struct ibv_sge, length),
	       "DAT_LMR_TRIPLET.segment_length must overlay ibv_sge.length");

static inline enum ibv_wr_opcode sq_opcode(enum ofx_cookie_op op)
{
	switch (op) {
	case OFX_OP_RDMA_WRITE:
		return IBV_WR_RDMA_WRITE;
	case OFX_OP_RDMA_READ:
		return IBV_WR_RDMA_READ;
	case OFX_OP_WRITE_IMM:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	case OFX_OP_CMP_SWAP:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	case OFX_OP_FETCH_ADD:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	default:
		return IBV_WR_SEND;
	}
}

static inline bool sq_op_inline_ok(enum ofx_cookie_op op)
{
	return op == OFX_OP_SEND || op == OFX_OP_RDMA_WRITE || op == OFX_OP_WRITE_IMM;
}

/*
 * The verbs send flags for the DAT completion flags, and the cookie flags.
 * Selective signalling: a suppressed WR goes unsignaled unless half the
 * ring is already unsignaled; then it is signaled to retire the ring, and
 * its success is still not reported.
 */
static inline unsigned int sq_send_flags(struct ofx_cookie_ring *ring, struct ofx_cookie *ck,
					 DAT_COMPLETION_FLAGS flags)
{
	unsigned int send_flags = IBV_SEND_SIGNALED;

	/* the common post, signaled with nothing else: one test */
	if (ofx_likely(!(flags & (DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
				  DAT_COMPLETION_BARRIER_FENCE_FLAG)))) {
		ck->flags = 0;
		ring->unsignaled = 0;
		return IBV_SEND_SIGNALED;
	}
	if (flags & DAT_COMPLETION_SUPPRESS_FLAG) {
		ck->flags = OFX_COOKIE_F_SUPPRESS;
		if (++ring->unsignaled < ring->size / 2)
			send_flags = 0;
		else
			ring->unsignaled = 0;
	} else {
		ck->flags = 0;
		ring->unsignaled = 0;
	}
	if (ofx_unlikely(flags & (DAT_COMPLETION_SOLICITED_WAIT_FLAG |
				  DAT_COMPLETION_BARRIER_FENCE_FLAG))) {
		if (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG)
			send_flags |= IBV_SEND_SOLICITED;
		if (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG)
			send_flags |= IBV_SEND_FENCE;
	}
	return send_flags;
}

/* Logs a refused post (out of line: never on the fast path). */
static __attribute__((noinline, cold)) DAT_RETURN sq_post_failed(struct ibv_qp *qp,
								 const struct ibv_send_wr *wr,
								 int ret)
{
	ofx_warn("post %s on qp 0x%x: %s", wr->opcode == IBV_WR_SEND ? "send" : "rdma",
		 qp->qp_num, strerror(-ret));
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* An XRC EP sends on the shared INI QP, naming the peer's SRQ, or on its RC fallback. */
static __attribute__((noinline)) DAT_RETURN sq_post_xrc(struct ofx_ep *ep,
							 struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_qp *qp;
	int ret;

	qp = ofx_xrc_sq_begin(ep, wr);
	if (!qp)	/* sends stopped */
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
	ret = ofx_verbs->post_send(qp, wr, &bad);
	ofx_xrc_sq_end(ep, qp);
	return ret ? sq_post_failed(qp, wr, ret) : DAT_SUCCESS;
}

/*
 * Posts one send-queue work request.  Lock-free: the EP's send ring has a
 * single producer (the consumer thread) and is retired by CQ pollers.
 *
 * Inlined into each DAT entry point, where `p` is a constant but for the
 * consumer's arguments, so the compiler drops the branches a plain send,
 * write or read cannot take (atomics, immediate data, invalidation).  The
 * work request is built field by field rather than zeroed: the fields set
 * are every one a driver reads for these opcodes on an RC or XRC QP (the
 * `wr` union only for RDMA and atomics, `ud` and the memory-window and TSO
 * unions never).
 */
static inline __attribute__((always_inline)) DAT_RETURN
sq_post(struct ofx_ep *ep, const struct ofx_sq_post *p)
{
	struct ofx_cookie_ring *ring = &ep->send_ring;
	struct ibv_send_wr wr, *bad;
	struct ofx_cookie *ck;
	uint64_t total;
	DAT_RETURN status;
	int ret;

	status = ofx_dto_iov_check(p->n, p->iov, ep->attr.max_request_iov);
	if (ofx_unlikely(status != DAT_SUCCESS))
		return status;
	if (ofx_unlikely(!ofx_ep_conn_may_send(ep)))
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	/* a single 32-bit segment cannot overflow: the compiler drops the test */
	total = ofx_dto_iov_total(p->n, p->iov);
	if (ofx_unlikely(total > UINT32_MAX))
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);

	ck = ofx_cookie_ring_reserve(ring);
	if (ofx_unlikely(!ck))
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	ck->user = p->cookie;
	ck->len = (uint32_t)total;
	ck->op = p->op;

	wr.wr_id = (uintptr_t)ck;
	wr.next = NULL;
	wr.sg_list = (struct ibv_sge *)p->iov;
	wr.num_sge = p->n;
	wr.opcode = sq_opcode(p->op);
	wr.send_flags = sq_send_flags(ring, ck, p->flags);
	/* host order on the wire, as stock (contract 5); 0 unless WRITE_IMM */
	wr.imm_data = p->op == OFX_OP_WRITE_IMM ? p->imm : 0;
	wr.qp_type.xrc.remote_srqn = 0;	/* sq_post_xrc names the SRQ */
	if (p->invalidate) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = p->invalidate_rkey;
	}
	if (p->op == OFX_OP_CMP_SWAP || p->op == OFX_OP_FETCH_ADD) {
		wr.wr.atomic.remote_addr = p->rmr->virtual_address;
		wr.wr.atomic.rkey = p->rmr->rmr_context;
		wr.wr.atomic.compare_add = p->compare_add;
		wr.wr.atomic.swap = p->swap;
	} else if (p->rmr) {
		wr.wr.rdma.remote_addr = p->rmr->virtual_address;
		wr.wr.rdma.rkey = p->rmr->rmr_context;
	}
	/* 1 <= total <= max_inline in one unsigned compare */
	if (sq_op_inline_ok(p->op) && total - 1 < ep->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;

	if (ofx_likely(!ep->xrc)) {	/* transport: data path (ep_transport.h) */
		ret = ep->qp_post_send(ep->qp, &wr, &bad);
		if (ofx_unlikely(ret))
			return sq_post_failed(ep->qp, &wr, ofx_verbs_neg_errno(ret));
	} else {
		status = sq_post_xrc(ep, &wr);
		if (status != DAT_SUCCESS)
			return status;
	}
	ofx_cookie_ring_commit(ring);
	ofx_dbg_data("ep %p op %d len %u", (void *)ep, p->op, ck->len);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_ep_post_sq(struct ofx_ep *ep, const struct ofx_sq_post *p)
{
	return sq_post(ep, p);
}

DAT_RETURN ofx_ep_post_send(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_sq_post p = { .op = OFX_OP_SEND, .n = n, .iov = iov, .cookie = cookie,
				  .flags = flags };

	if (ofx_unlikely(!ep))
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (ofx_unlikely(flags & ~OFX_DTO_FLAGS_VALID))
		return OFX_INVALID_ARG(5);
	return sq_post(ep, &p);
}

/* RDMA read and write share their checks; only the read has a segment limit. */
static inline __attribute__((always_inline)) DAT_RETURN
ep_post_rdma(DAT_EP_HANDLE ep_handle, enum ofx_cookie_op op, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
	     DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr, DAT_COMPLETION_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_sq_post p = { .op = op, .n = n, .iov = iov, .cookie = cookie,
				  .rmr = rmr, .flags = flags };

	if (ofx_unlikely(!ep))
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (ofx_unlikely(!rmr))
		return OFX_INVALID_ARG(5);
	if (ofx_unlikely(flags & ~OFX_DTO_FLAGS_VALID))
		return OFX_INVALID_ARG(6);
	if (op == OFX_OP_RDMA_READ && n > ep->attr.max_rdma_read_iov &&
	    ep->attr.max_rdma_read_iov > 0)
		return OFX_INVALID_ARG(2);
	return sq_post(ep, &p);
}

DAT_RETURN ofx_ep_post_rdma_read(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr,
				 DAT_COMPLETION_FLAGS flags)
{
	return ep_post_rdma(ep_handle, OFX_OP_RDMA_READ, n, iov, cookie, rmr, flags);
}

DAT_RETURN ofx_ep_post_rdma_write(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr,
				  DAT_COMPLETION_FLAGS flags)
{
	return ep_post_rdma(ep_handle, OFX_OP_RDMA_WRITE, n, iov, cookie, rmr, flags);
}

/*
 * dat_rmr_bind: a bind is a post on the EP's send queue.  The EP's checks
 * are here, the window's in rmr.c (rmr.h), in the order of the arguments.
 */
DAT_RETURN ofx_rmr_bind(DAT_RMR_HANDLE rmr_h, DAT_LMR_HANDLE lmr_h, const DAT_LMR_TRIPLET *iov,
			DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_h,
			DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			DAT_RMR_CONTEXT *rctx_p)
{
	struct ofx_ep *ep;
	struct ofx_rmr_bind b;
	struct ofx_rmr_sq sq;
	DAT_RETURN status;

	status = ofx_rmr_bind_args(rmr_h, lmr_h, iov, priv, va_type, &b);
	if (status != DAT_SUCCESS)
		return status;
	ep = ofx_ep_from_handle(ep_h);
	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (flags & ~OFX_RMR_COMPLETION_FLAGS)
		return OFX_INVALID_ARG(8);
	if (!ep->req_evd || !ep->req_evd->cq || !(ep->req_evd->flags & DAT_EVD_RMR_BIND_FLAG)) {
		ofx_dbg("rmr %p: ep %p has no request evd with DAT_EVD_RMR_BIND_FLAG",
			(void *)b.rmr, (void *)ep);
		return OFX_INVALID_ARG(6);
	}
	status = ofx_rmr_bind_region(&b, ep->pz);
	if (status != DAT_SUCCESS)
		return status;
	/* the send path's rule: a post to a DISCONNECTED EP flushes */
	if (!ofx_ep_conn_may_send(ep))
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	/* an XRC connection sends on a shared INI QP, which binds for no EP */
	if (!ep->transport->binds_windows(ep)) {
		ofx_dbg("rmr %p: ep %p is connected over xrc: no memory window binds",
			(void *)b.rmr, (void *)ep);
		return OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	}
	/* a reset that could not build a new QP left the EP without one */
	if (!ep->qp)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	sq = (struct ofx_rmr_sq){
		.ep = &ep->cookie_owner,
		.ring = &ep->send_ring,
		.qp = ep->qp,
		.req_evd = ep->req_evd,
	};
	return ofx_rmr_bind_post(&b, &sq, cookie, flags, rctx_p);
}

DAT_RETURN ofx_ep_post_send_with_invalidate(DAT_EP_HANDLE ep_handle, DAT_COUNT n,
					    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
					    DAT_COMPLETION_FLAGS flags, DAT_BOOLEAN invalidate,
					    DAT_RMR_CONTEXT rmr_context)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_sq_post p = { .op = OFX_OP_SEND, .n = n, .iov = iov, .cookie = cookie,
				  .flags = flags, .invalidate = invalidate == DAT_TRUE,
				  .invalidate_rkey = rmr_context };
	struct ofx_ia *ia;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (flags & ~OFX_DTO_FLAGS_VALID)
		return OFX_INVALID_ARG(5);
	if (invalidate != DAT_TRUE && invalidate != DAT_FALSE)
		return OFX_INVALID_ARG(6);
	ia = ep->obj.ia;
	/* the receiver's device does the invalidation; ours must be able to ask */
	if (p.invalidate && !(ia->dev_attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS)) {
		ofx_warn_once("device without memory management extensions (cap flags 0x%x): "
			      "no send with invalidate", ia->dev_attr.device_cap_flags);
		return DAT_MODEL_NOT_SUPPORTED;
	}
	return ofx_ep_post_sq(ep, &p);
}

/*
 * An RDMA read whose sink is an RMR.  DAT 2.0 has it for iWARP, where the
 * local sink of an RDMA read is named by an STag the peer writes into (and
 * the read can invalidate it).  IB and RoCE verbs name the local side of
 * every work request with lkeys of memory regions: a memory window's rkey
 * cannot be the target of a local scatter list, and verbs has no
 * read-with-invalidate.  So this cannot be done correctly on this provider's
 * transports; the arguments are still checked.
 */
DAT_RETURN ofx_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep_handle, const DAT_RMR_TRIPLET *local,
					DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
					DAT_COMPLETION_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (!local)
		return OFX_INVALID_ARG(2);
	if (!remote)
		return OFX_INVALID_ARG(4);
	if (flags & ~OFX_DTO_FLAGS_VALID)
		return OFX_INVALID_ARG(5);
	ofx_warn_once("dat_ep_post_rdma_read_to_rmr: verbs cannot use a memory window as the "
		      "local sink of an rdma read (iWARP read-with-invalidate semantics)");
	return DAT_MODEL_NOT_SUPPORTED;
}

static inline struct ibv_sge *recv_slot_sges(struct ofx_ep *ep, const struct ofx_cookie *ck)
{
	uint32_t per = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1;

	return &ep->recv_sges[(ck->seq % ep->recv_ring.size) * per];
}

/* Logs a refused receive (out of line: never on the fast path). */
static __attribute__((noinline, cold)) int rq_post_failed(const struct ibv_qp *qp, int ret)
{
	ofx_warn("post recv on qp 0x%x: %s", qp->qp_num, strerror(-ret));
	return ret;
}

/* One receive on the EP's RC QP; inlined into dat_ep_post_recv. */
static inline __attribute__((always_inline)) int
ep_qp_post_recv(struct ofx_ep *ep, struct ofx_cookie *ck, struct ibv_sge *sges, int nsge)
{
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)ck,
		.sg_list = sges,
		.num_sge = nsge,
	}, *bad;
	int ret = ep->qp_post_recv(ep->qp, &wr, &bad);

	return ofx_unlikely(ret) ? rq_post_failed(ep->qp, ofx_verbs_neg_errno(ret)) : 0;
}

/* One receive where the EP's transport takes it. */
static int ep_post_one_recv(struct ofx_ep *ep, struct ofx_cookie *ck, struct ibv_sge *sges,
			    int nsge)
{
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)ck,
		.sg_list = sges,
		.num_sge = nsge,
	};

	if (ep->xrc)	/* transport: data path (ep_transport.h) */
		return ofx_xrc_post_recv(ep, &wr);
	return ep_qp_post_recv(ep, ck, sges, nsge);
}

/*
 * dat_ep_set_watermark: once the receives posted to a plain EP and not yet
 * completed exceed the soft watermark, one DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT
 * goes to the IA's async EVD (then the soft watermark is spent until set
 * again); beyond the hard watermark a connected EP is broken (its connect
 * EVD gets DAT_CONNECTION_EVENT_BROKEN).  Off the data path unless armed.
 */
static void ep_check_watermarks(struct ofx_ep *ep)
{
	DAT_COUNT bufs = (DAT_COUNT)ofx_cookie_ring_outstanding(&ep->recv_ring);
	bool soft = false;

	pthread_mutex_lock(&ep->lock);
	if (ep->soft_hw >= 0 && bufs > ep->soft_hw) {
		soft = true;
		ep->soft_hw = DAT_WATERMARK_INFINITE;
	}
	if (ep->hard_hw >= 0 && bufs > ep->hard_hw &&
	    (ep->state == OFX_EP_CONNECTED || ep->state == OFX_EP_RTR_WAIT)) {
		ep->hard_hw = DAT_WATERMARK_INFINITE;
		ofx_info("ep %p: %d receives posted", (void *)ep, bufs);
		ofx_ep_conn_broken(ep, "receives exceed the hard high watermark");
	}
	atomic_store(&ep->wm_armed, ep->soft_hw >= 0 || ep->hard_hw >= 0);
	pthread_mutex_unlock(&ep->lock);
	if (soft) {
		DAT_EVENT ev = { .event_number = DAT_ASYNC_ERROR_EP_BROKEN };
		struct ofx_ia *ia = ep->obj.ia;

		ofx_dbg("ep %p: %d receives exceed the soft high watermark", (void *)ep, bufs);
		ev.event_data.asynch_error_event_data.dat_handle = (DAT_HANDLE)ep;
		ev.event_data.asynch_error_event_data.reason = DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT;
		if (ia->async_evd)
			ofx_evd_post(ia->async_evd, &ev);
	}
}

/*
 * The first kept receive (below) makes recv_sges, in the dat_ep_post_recv
 * that needs it, so a failure is that call's; once there they stay with the
 * rings.  Only the EP's poster writes the pointer, before committing the
 * slot whose segments it holds: ofx_ep_recv_go_live reads it for committed
 * slots alone.
 */
static __attribute__((cold)) int ep_recv_sges_alloc(struct ofx_ep *ep)
{
	uint32_t per = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1;

	ep->recv_sges = calloc((size_t)ep->recv_ring.size * per, sizeof(*ep->recv_sges));
	if (!ep->recv_sges) {
		ofx_warn("ep %p: no memory for the segments of %u receives", (void *)ep,
			 ep->recv_ring.size);
		return -ENOMEM;
	}
	return 0;
}

/*
 * A receive whose segments must be kept in the slot's recv_sges (an XRC EP's,
 * or one the QP could not take when dat_ep_post_recv looked: RESET before
 * connect or accept).  Posted when the receive side is live, else held for
 * ofx_ep_recv_go_live unless it went live meanwhile.  Returns 0 or a
 * negative errno.
 */
static __attribute__((noinline)) int ep_post_recv_kept(struct ofx_ep *ep, struct ofx_cookie *ck,
							DAT_COUNT n, const DAT_LMR_TRIPLET *iov)
{
	struct ibv_sge *sges;
	int ret = 0;

	if (ofx_unlikely(!ep->recv_sges) && ep_recv_sges_alloc(ep))
		return -ENOMEM;
	sges = recv_slot_sges(ep, ck);
	if (n)
		memcpy(sges, iov, n * sizeof(struct ibv_sge));
	ck->nsge = (uint8_t)n;
	if (atomic_load_explicit(&ep->recv_live, memory_order_acquire)) {
		ret = ep_post_one_recv(ep, ck, sges, n);
		if (!ret)
			ofx_cookie_ring_commit(&ep->recv_ring);
		return ret;
	}
	/* The QP cannot take receives yet: hold it, unless it just went live. */
	pthread_mutex_lock(&ep->lock);
	if (atomic_load(&ep->recv_live))
		ret = ep_post_one_recv(ep, ck, sges, n);
	if (!ret)
		ofx_cookie_ring_commit(&ep->recv_ring);
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

DAT_RETURN ofx_ep_post_recv(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_cookie *ck;
	DAT_RETURN status;
	uint64_t total;
	int ret = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	/* a predicted branch, then the own queue's post inline (ep_recv.h) */
	if (ep->srq)	/* srq: data path */
		return ep->recv->post(ep, n, iov, cookie, flags);
	status = ofx_dto_iov_check(n, iov, ep->attr.max_recv_iov);
	if (ofx_unlikely(status != DAT_SUCCESS))
		return status;
	if (flags & ~OFX_DTO_FLAGS_VALID)
		return OFX_INVALID_ARG(5);
	total = ofx_dto_iov_total(n, iov);
	if (total > UINT32_MAX)
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);

	ck = ofx_cookie_ring_reserve(&ep->recv_ring);
	if (!ck) {
		/* an unattached EP has no ring yet (ofx_ep_attach) */
		if (!ep->recv_ring.slots)
			return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	}
	ck->user = cookie;
	ck->len = (uint32_t)total;
	ck->op = OFX_OP_RECV;
	ck->flags = (flags & DAT_COMPLETION_SUPPRESS_FLAG) ? OFX_COOKIE_F_SUPPRESS : 0;

	/*
	 * An RC EP's live receive: the device copies the segments at the
	 * post, so the consumer's list goes as it is (DAT_LMR_TRIPLET is
	 * struct ibv_sge, see above).  Only a held receive needs its copy in
	 * recv_sges: an RC EP's receives stop with the ring reset
	 * (ofx_ep_recv_stop), so ofx_ep_recv_go_live reposts held ones alone;
	 * an XRC EP's stop keeps the ring and its next connection reposts
	 * what is outstanding, so its receives are always kept.
	 */
	if (ofx_likely(!ep->xrc) &&	/* transport: data path (ep_transport.h) */
	    ofx_likely(atomic_load_explicit(&ep->recv_live, memory_order_acquire))) {
		ret = ep_qp_post_recv(ep, ck, (struct ibv_sge *)iov, n);
		if (ofx_unlikely(ret))
			return ofx_dat_status(ret, OFX_OBJ_EP);
		ofx_cookie_ring_commit(&ep->recv_ring);
	} else {
		ret = ep_post_recv_kept(ep, ck, n, iov);
		if (ret)
			return ofx_dat_status(ret, OFX_OBJ_EP);
	}
	if (__builtin_expect(atomic_load_explicit(&ep->wm_armed, memory_order_relaxed), 0))
		ep_check_watermarks(ep);
	return DAT_SUCCESS;
}

/*
 * The QP reached INIT: post the held receives in order, after the RTR
 * receive of a passive p2p SEND-RTR connection so that the RTR can never
 * land in a consumer buffer.  Called with ep->lock held.
 */
int ofx_ep_recv_go_live(struct ofx_ep *ep, bool rtr_recv_first)
{
	struct ofx_cookie_ring *ring = &ep->recv_ring;
	uint64_t seq, head;
	int ret;

	ofx_lock_assert_held(&ep->lock);
	/* an IB/RoCE common-connect retry keeps its QP in INIT, receives posted */
	if (atomic_load(&ep->recv_live))
		return 0;
	if (rtr_recv_first) {
		/*
		 * A zero-length receive is one segment of length 0: siw refuses
		 * num_sge = 0 (EINVAL), and every provider takes this form.
		 */
		static struct ibv_sge no_bytes;
		struct ibv_recv_wr wr = {
			.wr_id = (uintptr_t)&ep->rtr_cookie,
			.sg_list = &no_bytes,
			.num_sge = 1,
		}, *bad;

		ofx_ep_own_cookie(ep, &ep->rtr_cookie, OFX_EP_OP_RTR_RECV);
		/* this connection's RTR: none polled yet (rtr_timer_run reads it) */
		atomic_store(&ep->rtr_polled, false);
		ret = ofx_verbs->post_recv(ep->qp, &wr, &bad);
		if (ret) {
			ofx_err("post rtr recv on qp 0x%x: %s", ep->qp->qp_num, strerror(-ret));
			return ret;
		}
	}
	head = atomic_load(&ring->head);
	for (seq = atomic_load(&ring->tail); seq < head; seq++) {
		struct ofx_cookie *ck = &ring->slots[seq % ring->size];

		ret = ep_post_one_recv(ep, ck, recv_slot_sges(ep, ck), ck->nsge);
		if (ret)
			return ret;
	}
	atomic_store_explicit(&ep->recv_live, true, memory_order_release);
	return 0;
}

/* The QP went back to RESET: its receives are gone without completions. */
void ofx_ep_recv_stop(struct ofx_ep *ep)
{
	atomic_store(&ep->recv_live, false);
	ofx_cookie_ring_reset(&ep->recv_ring);
	ofx_cookie_ring_reset(&ep->send_ring);
}

DAT_RETURN ofx_ep_get_status(DAT_EP_HANDLE ep_handle, DAT_EP_STATE *state, DAT_BOOLEAN *in_idle,
			     DAT_BOOLEAN *out_idle)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	/* dtestx passes NULL for ep_state: every output is optional */
	if (state)
		*state = ofx_ep_state_dat(ep->state);
	if (in_idle)
		*in_idle = ofx_cookie_ring_outstanding(&ep->recv_ring) ? DAT_FALSE : DAT_TRUE;
	if (out_idle)
		*out_idle = ofx_cookie_ring_outstanding(&ep->send_ring) ? DAT_FALSE : DAT_TRUE;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_ep_recv_query(DAT_EP_HANDLE ep_handle, DAT_COUNT *nbufs_p, DAT_COUNT *span_p)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	ep->recv->query(ep, nbufs_p, span_p);
	return DAT_SUCCESS;
}

/*
 * The own queue's receives posted and not yet polled.  Pollers only move
 * tail; a slot below head is rewritten only by the next post, which is this
 * thread's.
 */
static void ep_rq_query(struct ofx_ep *ep, DAT_COUNT *nbufs_p, DAT_COUNT *span_p)
{
	struct ofx_cookie_ring *ring = &ep->recv_ring;
	uint64_t tail, head, span = 0;

	tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	for (uint64_t seq = tail; seq < head; seq++)
		span += ring->slots[seq % ring->size].len;
	if (nbufs_p)
		*nbufs_p = head > tail ? (DAT_COUNT)(head - tail) : 0;
	if (span_p)
		*span_p = span > INT32_MAX ? INT32_MAX : (DAT_COUNT)span;
}

DAT_RETURN ofx_ep_set_watermark(DAT_EP_HANDLE ep_handle, DAT_COUNT soft_hw, DAT_COUNT hard_hw)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	/* either "no value" spelling switches a watermark off */
	if (soft_hw == DAT_VALUE_UNKNOWN)
		soft_hw = DAT_WATERMARK_INFINITE;
	if (hard_hw == DAT_VALUE_UNKNOWN)
		hard_hw = DAT_WATERMARK_INFINITE;
	if (soft_hw < 0 && soft_hw != DAT_WATERMARK_INFINITE)
		return OFX_INVALID_ARG(2);
	if (hard_hw < 0 && hard_hw != DAT_WATERMARK_INFINITE)
		return OFX_INVALID_ARG(3);
	pthread_mutex_lock(&ep->lock);
	ep->soft_hw = soft_hw;
	ep->hard_hw = hard_hw;
	/* an SRQ EP's count is unknowable (ep.h): its watermarks never fire */
	atomic_store(&ep->wm_armed, ep->recv->watermarks && (soft_hw >= 0 || hard_hw >= 0));
	pthread_mutex_unlock(&ep->lock);
	ofx_dbg("ep %p: high watermarks soft %d hard %d", (void *)ep, soft_hw, hard_hw);
	/* "during this call": the receives already posted count */
	ep_check_watermarks(ep);
	return DAT_SUCCESS;
}

/*
 * Drains the EP's CQs after its QP is gone, so that no CQE left in them
 * names a cookie of the rings about to be reset or freed.  Completions are
 * delivered as usual unless `dying` is set.  Without ep->lock: a drain may
 * call ofx_ep_dto_notify(), which takes it.
 */
static bool ep_drain_cqs(struct ofx_ep *ep)
{
	struct ofx_evd *evds[2] = { ep->recv_evd, ep->req_evd };
	bool clean = true;

	for (int i = 0; i < 2; i++) {
		struct ofx_evd *evd = evds[i];

		if (!evd || !evd->cq || (i == 1 && evd == evds[0]))
			continue;
		if (!ofx_evd_drain_owner_gone(evd))
			clean = false; /* full: CQEs may remain behind it */
	}
	return clean;
}

/*
 * dat_ep_reset gives a plain or SRQ EP a new QP (ep_qp_renew), as stock does.  Moving the
 * old one back to RESET is not portable: on siw a QP that went to ERROR
 * after a disconnect stays there (modify returns 0, the state does not
 * change) and the next accept fails with EINVAL.  The old QP is destroyed
 * first and its CQEs drained, so nothing refers to it when the rings
 * restart.  What the old QP still held is dropped, not reported, as on a QP
 * moved to RESET: siw flushes a destroyed QP's receives into the CQ, rxe
 * does not, and a consumer that resets after a refused connect and posts
 * its receives again (dapltest, MPI's crossing requests) must see the same
 * on every device: no stale FLUSHED event naming a buffer it re-posted.  Called with ep->lock held in
 * DISCONNECTED, which nothing leaves while the lock is dropped (connect and
 * accept need UNCONNECTED; the QP is NULL meanwhile, so posts refuse).
 */
static void ep_qp_retire(struct ofx_ep *ep)
{
	struct ibv_qp *old = ep_qp_unhook(ep);

	/* conversion drops this EP's completions meanwhile (dto_inline.h) */
	ofx_ep_set_dying(ep, true);
	pthread_mutex_unlock(&ep->lock);
	ep_qp_destroy(ep, old, " for reset");
	if (!ep_drain_cqs(ep))
		ofx_warn("ep %p reset: an evd is full, completions of the old qp may remain",
			 (void *)ep);
	pthread_mutex_lock(&ep->lock);
	ofx_ep_set_dying(ep, false);
	ofx_ep_recv_stop(ep);
}

static int ep_qp_renew(struct ofx_ep *ep)
{
	int ret;

	ep_qp_retire(ep);
	ret = ep_build_qp(ep);
	if (ret) {
		/* the EP stays usable: connect or accept attaches a QP again */
		ep_fini_rings(ep);
		return ret;
	}
	ofx_dbg("ep %p: qp 0x%x renewed", (void *)ep, ep->qp->qp_num);
	return 0;
}

/*
 * A transport whose QP lives with one connection gets none back.  After a
 * connection (DISCONNECTED) the drain runs even without a QP: the CQEs of
 * an XRC connection came from the shared INI QP and the SRQ and still
 * name this EP's cookies.  In UNCONNECTED a QP (a connect that failed
 * before its REQ) never carried a work request.
 */
static void ep_qp_drop(struct ofx_ep *ep)
{
	if (!ep_attached(ep))
		return;
	if (ep->state == OFX_EP_DISCONNECTED) {
		ep_qp_retire(ep);
		return;
	}
	ofx_ep_qp_close(ep);
	ofx_ep_recv_stop(ep);
}

/* A QP that never carried a connection (UNCONNECTED) goes back to RESET instead. */
static int ep_qp_reset(struct ofx_ep *ep)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	int ret = ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE);

	if (ret) {
		ofx_err("qp 0x%x to reset: %s", ep->qp->qp_num, strerror(ret));
		return -ret;
	}
	ofx_ep_recv_stop(ep);
	return 0;
}

/* Leaves the common connect the EP is in, if any (ep->csp_detach, ep.h). */
static void ep_csp_detach(struct ofx_ep *ep)
{
	void (*detach)(struct ofx_ep *ep);

	pthread_mutex_lock(&ep->lock);
	detach = ep->csp_detach;
	pthread_mutex_unlock(&ep->lock);
	if (detach)
		detach(ep);
}

DAT_RETURN ofx_ep_reset(DAT_EP_HANDLE ep_handle)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct rdma_cm_id *id;
	bool resettable;
	int ret = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	/* a refused reset leaves a common connect waiting on its CSP */
	pthread_mutex_lock(&ep->lock);
	resettable = ep->state == OFX_EP_UNCONNECTED || ep->state == OFX_EP_DISCONNECTED;
	pthread_mutex_unlock(&ep->lock);
	if (resettable)
		ep_csp_detach(ep);
	/* an XRC EP that answered its peer's DISC finishes its fence first */
	ep->transport->quiesce(ep);
	pthread_mutex_lock(&ep->lock);
	if (ep->state != OFX_EP_UNCONNECTED && ep->state != OFX_EP_DISCONNECTED) {
		enum ofx_ep_state state = ep->state;

		pthread_mutex_unlock(&ep->lock);
		ofx_dbg("ep %p reset refused in state %s", (void *)ep, ofx_ep_state_str(state));
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	ep->recv->reset(ep);
	if (ep->transport->reset(ep)) {
		pthread_mutex_unlock(&ep->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	id = ofx_cm_release(ep);
	pthread_mutex_unlock(&ep->lock);
	ofx_cm_id_destroy(ep->obj.ia, id);
	pthread_mutex_lock(&ep->lock);
	/* the lock was dropped: only proceed if nobody reconnected meanwhile */
	if (ep->state == OFX_EP_UNCONNECTED || ep->state == OFX_EP_DISCONNECTED) {
		/* a QP that carried a connection may sit in ERROR for good (above) */
		if (ep->transport->qp_per_connection)
			ep_qp_drop(ep);
		else if (ep->qp)
			ret = ep->state == OFX_EP_DISCONNECTED ? ep_qp_renew(ep) : ep_qp_reset(ep);
		if (!ret) {
			ofx_ep_conn_move(ep, OFX_EP_UNCONNECTED);
			ep->p2p = false;
			ep->rtr_arrived = false;
			atomic_store(&ep->rtr_polled, false);
			ep->cm_established = false;
			ep->rtr_peer_gone = false;
		}
	}
	pthread_mutex_unlock(&ep->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/*
 * Makes sure no completion can refer to this EP once its memory is gone.
 * Destroying the QP guarantees that the device writes no further CQE for
 * it; the CQEs already in the shared CQs are then polled into their EVDs
 * (`dying` makes conversion drop this EP's ones).  This needs no flush
 * completions, which not every device delivers for a receive queue (rxe in
 * Linux 6.1 does not).  Returns false if a CQ could not be emptied because
 * its EVD is full: the caller then keeps the memory (see ep_teardown).
 */
static bool ep_purge_completions(struct ofx_ep *ep)
{
	ofx_ep_set_dying(ep, true);
	if (!ep_attached(ep))
		return true; /* never attached: no completion can name it */
	ofx_rmr_ep_gone(&ep->cookie_owner);
	/* an XRC EP may have none: its CQEs came from the INI QP and SRQ */
	ep_qp_destroy(ep, ep->qp, "");
	ep->qp = NULL;
	return ep_drain_cqs(ep);
}

static void ep_free_mem(struct ofx_ep *ep)
{
	ofx_xrc_ep_free(ep);
	ep_fini_rings(ep);
	ep->recv->fini(ep);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

/*
 * ep_teardown from the point where ep->lock is taken, the EP off any
 * common connect (ep_csp_detach done, or never attached); drops the lock.
 */
static void ep_teardown_locked(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct rdma_cm_id *id;
	bool clean, xrc_clean;

	ofx_lock_assert_held(&ep->lock);
	if (ep->cm_id && (ep->state == OFX_EP_CONNECTED || ep->state == OFX_EP_RTR_WAIT ||
			  ep->state == OFX_EP_COMPLETION_PENDING ||
			  ep->state == OFX_EP_DISCONNECT_PENDING))
		ofx_verbs->disconnect(ep->cm_id);
	ofx_ep_conn_teardown(ep);
	ep->recv->teardown(ep);
	id = ofx_cm_release(ep);
	pthread_mutex_unlock(&ep->lock);
	ofx_cm_id_destroy(ia, id);

	ep->recv->quiesce(ep);
	/* XRC: fence and DISC, then SRQ, INI and TGT references go */
	xrc_clean = ofx_xrc_ep_teardown(ep);
	clean = ep_purge_completions(ep) && xrc_clean;
	/* the SRQ forgets the EP only after its last CQE was polled (or dropped) */
	ep->recv->qp_removed(ep);
	if (!clean) {
		/*
		 * A full EVD still holds CQEs that may name this EP: keep its
		 * memory until the IA closes (its CQs are destroyed first).
		 */
		ofx_warn("ep %p freed while its evd is full; memory kept until ia_close",
			 (void *)ep);
		ep_drop_refs(ep);
		ofx_obj_fini(&ep->obj);
		pthread_mutex_lock(&ia->obj_lock);
		ofx_list_add_tail(&ia->zombies, &ep->obj.ia_link);
		pthread_mutex_unlock(&ia->obj_lock);
		return;
	}
	ep_drop_refs(ep);
	ofx_obj_fini(&ep->obj);
	ep_free_mem(ep);
}

static void ep_teardown(struct ofx_ep *ep)
{
	ep_csp_detach(ep);
	pthread_mutex_lock(&ep->lock);
	ep_teardown_locked(ep);
}

void ofx_ep_free_zombie(struct ofx_obj *obj)
{
	ep_free_mem(container_of(obj, struct ofx_ep, obj));
}

DAT_RETURN ofx_ep_free(DAT_EP_HANDLE ep_handle)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	enum ofx_ep_state state;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	pthread_mutex_lock(&ep->lock);
	state = ep->state;
	if (state == OFX_EP_RESERVED || state == OFX_EP_PASSIVE_PENDING ||
	    state == OFX_EP_TENTATIVE_PENDING) {
		pthread_mutex_unlock(&ep->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PASSCONNPENDING);
	}
	/*
	 * An EP that never joined a common connect (csp_detach is set with
	 * csp and never cleared, under this lock) has nothing to leave: the
	 * teardown goes on under the lock taken for the state, not a second
	 * time (two lock round trips a connection fewer, cm-cost).
	 */
	if (ep->csp_detach) {
		pthread_mutex_unlock(&ep->lock);
		ep_teardown(ep);
		return DAT_SUCCESS;
	}
	ep_teardown_locked(ep);
	return DAT_SUCCESS;
}

void ofx_ep_destroy(struct ofx_ep *ep)
{
	ep_teardown(ep);
}

/* `ck` is the receive this connection's RTR lands in (not a write or read RTR's cookie). */
static inline bool is_rtr_recv(const struct ofx_ep *ep, const struct ofx_cookie *ck)
{
	return ck == &ep->rtr_cookie && ck->op == OFX_EP_OP_RTR_RECV;
}

/* A failed work request breaks a live connection (ep->lock held); out of line, rare. */
static __attribute__((noinline, cold)) void dto_failed(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_WR_FLUSH_ERR &&
	    (ep->state == OFX_EP_CONNECTED || ep->state == OFX_EP_RTR_WAIT)) {
		ofx_info("qp 0x%x completion error %s (vendor 0x%x)", ofx_ep_qp_num(ep),
			 ibv_wc_status_str(wc->status), wc->vendor_err);
		ofx_ep_conn_broken(ep, ibv_wc_status_str(wc->status));
	}
}

/*
 * An RTR nudge completed (ep->lock held): flushed, or failed as the peer's
 * close crossed it (siw fails a write on a reset stream).  The connection's
 * end is the CM's DISCONNECTED, which the close brings: the provider's own
 * write must not make a graceful end BROKEN.  Out of line, rare.
 */
static __attribute__((noinline, cold)) void nudge_completed(struct ofx_ep *ep,
								 const struct ibv_wc *wc)
{
	if (ofx_wc_failed(wc))
		ofx_info("qp 0x%x: rtr nudge failed (%s): the peer closed; its CM event ends "
			 "the connection", ofx_ep_qp_num(ep), ibv_wc_status_str(wc->status));
}

void ofx_ep_dto_settle(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	struct ofx_cookie *ck = (struct ofx_cookie *)(uintptr_t)wc->wr_id;

	ofx_lock_assert_held(&ep->lock);
	if (ck == &ep->nudge_cookie) {
		nudge_completed(ep, wc);
	} else if (wc->status != IBV_WC_SUCCESS) {
		dto_failed(ep, wc);
	} else if (is_rtr_recv(ep, ck)) {
		ofx_ep_rtr_received(ep);
		ofx_ep_conn_p2p_maybe_established(ep);
	}
}

void ofx_ep_rtr_received(struct ofx_ep *ep)
{
	atomic_fetch_add(&ep->obj.ia->stats.rtr_received, 1);
	ep->rtr_arrived = true;
}

void ofx_ep_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	if (ep->transport->completion(ep, wc))
		return;
	pthread_mutex_lock(&ep->lock);
	ofx_ep_dto_settle(ep, wc);
	pthread_mutex_unlock(&ep->lock);
}

/* ---- completions: the EP as the owner of its cookies (dto.h) -------------- */

/*
 * The RTR and XRC's fence: never a DTO event, the EP hears of every one.
 * Runs in a drain under the EVD lock, which ranks below the EP's (ep.h):
 * a received RTR is only marked here (rtr_polled) for rtr_timer_run, which
 * may drain an empty CQ while this drain has yet to run the notify.
 */
static bool ep_cookie_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
			       const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
			       struct ofx_cookie_owner **notify_p)
{
	struct ofx_ep *ep = container_of(owner, struct ofx_ep, cookie_owner);

	/* nothing to settle: never an event, and ofx_ep_dto_notify judges the status */
	(void)ev;
	if (atomic_load(owner->dying))
		return false;
	if (is_rtr_recv(ep, slot) && wc->status == IBV_WC_SUCCESS)
		atomic_store(&ep->rtr_polled, true);
	/* an unsignaled nudge completes when it failed or was flushed */
	if (slot == &ep->nudge_cookie && ofx_wc_failed(wc))
		atomic_store(&ep->nudge_failed, true);
	*notify_p = owner;
	return false;
}

bool ofx_ep_fatal_was_nudge(struct ofx_ep *ep)
{
	/*
	 * Only an EP that ever nudged drains here (its cookie is made at its
	 * first nudge, before the post that can fail): the drain's notify takes
	 * ep->lock, and a QP destroyed under that lock (ofx_ep_qp_close,
	 * ep_detach) is one that never connected, so never nudged either.
	 */
	if (!ep->nudge_cookie.owner)
		return false;
	if (!atomic_load(&ep->nudge_failed) && ep->req_evd)
		ofx_evd_drain_cq(ep->req_evd);
	return atomic_load(&ep->nudge_failed);
}

static void ep_cookie_notify(struct ofx_cookie_owner *owner, const struct ibv_wc *wc)
{
	ofx_ep_dto_notify(container_of(owner, struct ofx_ep, cookie_owner), wc);
}

/* The IA, unlike the EP's PZ, outlives freed EPs: its windows' index is there. */
static void ep_cookie_peer_invalidated(struct ofx_cookie_owner *owner, uint32_t rkey)
{
	ofx_rmr_peer_invalidated(owner->obj->ia, rkey);
}

static const struct ofx_cookie_ops ep_cookie_ops = {
	.complete = ep_cookie_complete,
	.notify = ep_cookie_notify,
	.peer_invalidated = ep_cookie_peer_invalidated,
};

void ofx_ep_cookie_owner_init(struct ofx_ep *ep)
{
	ep->cookie_owner.ops = &ep_cookie_ops;
	ep->cookie_owner.obj = &ep->obj;
	ep->cookie_owner.dying = &ep->dying;
}

void ofx_ep_set_dying(struct ofx_ep *ep, bool dying)
{
	atomic_store(&ep->dying, dying);
	ofx_cookie_ring_set_dying(&ep->send_ring, dying);
	ofx_cookie_ring_set_dying(&ep->recv_ring, dying);
}

void ofx_ep_own_cookie(struct ofx_ep *ep, struct ofx_cookie *ck, enum ofx_ep_cookie_op op)
{
	ck->ring = NULL;
	ck->owner = &ep->cookie_owner;
	ck->op = op;
	ck->flags = OFX_COOKIE_F_OWNER | OFX_COOKIE_F_INTERNAL;
}

/* ---- the EP's own receive queue (ep_recv.h) ------------------------------- */

/* One more than max_recv_dtos: room for the passive p2p RTR receive. */
static int rq_own_wrs(const struct ofx_ep *ep)
{
	return ep->attr.max_recv_dtos + 1;
}

static int rq_check(const struct ofx_ep *ep, const struct ofx_pz *pz,
		    const struct ofx_evd *recv_evd, const DAT_EP_ATTR *a)
{
	if ((a->max_recv_dtos > 0) != (recv_evd != NULL)) {
		ofx_err("ep attr: max_recv_dtos %d does not match recv evd %s", a->max_recv_dtos,
			recv_evd ? "given" : "absent");
		return -EINVAL;
	}
	if (recv_evd && a->max_recv_iov <= 0) {
		ofx_err("ep attr: max_recv_iov must be > 0 with a recv evd");
		return -EINVAL;
	}
	return 0;
}

static void rq_qp_init(const struct ofx_ep *ep, struct ibv_qp_init_attr_ex *init)
{
	init->cap.max_recv_wr = (uint32_t)rq_own_wrs(ep);
	init->cap.max_recv_sge = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1;
	init->srq = NULL;
}

static int rq_qp_added(struct ofx_ep *ep)
{
	return 0;
}

static void rq_qp_removed(struct ofx_ep *ep)
{
}

/* Held receives would be lost with the QP. */
static const char *rq_keeps_qp(const struct ofx_ep *ep)
{
	return ofx_cookie_ring_outstanding(&ep->recv_ring) ? "receives posted" : NULL;
}

/* dat_ep_post_recv posts inline (ep_recv.h): this is the same call. */
static DAT_RETURN rq_post(struct ofx_ep *ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			  DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	return ofx_ep_post_recv((DAT_EP_HANDLE)&ep->obj, n, iov, cookie, flags);
}

static void rq_conn_event(struct ofx_ep *ep, DAT_EVENT_NUMBER num)
{
}

/* No SRQ: the event is not expected, an error like any other of the QP. */
static bool rq_last_wqe(struct ofx_ep *ep)
{
	return false;
}

static int rq_init(struct ofx_ep *ep)
{
	return 0;
}

static void rq_nothing(struct ofx_ep *ep)
{
}

const struct ofx_ep_recv ofx_ep_rq_recv = {
	.name = "rq",
	.init = rq_init,
	.fini = rq_nothing,
	.own_wrs = rq_own_wrs,
	.check = rq_check,
	.qp_init = rq_qp_init,
	.qp_added = rq_qp_added,
	.qp_removed = rq_qp_removed,
	.keeps_qp = rq_keeps_qp,
	.rtr_recv = true,
	.post = rq_post,
	.query = ep_rq_query,
	.watermarks = true,
	.conn_event = rq_conn_event,
	.last_wqe = rq_last_wqe,
	.reset = rq_nothing,
	.teardown = rq_nothing,
	.quiesce = rq_nothing,
};

/* ---- the RC transport: every step is ep_cm.c's own ------------------------- */

static int rc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p)
{
	*offered_p = false;
	return 0;
}

static bool rc_offered(const struct ofx_ep *ep)
{
	return false;
}

static bool rc_fallback(struct ofx_ep *ep)
{
	return true;
}

static bool rc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev,
			struct rdma_cm_id **destroy_p)
{
	return false;
}

static bool rc_accept(struct ofx_ep *ep, const struct ofx_conn_req *req, const void *pdata,
		      int pdata_len, int *ret_p)
{
	return false;
}

static bool rc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p)
{
	return false;
}

static void rc_quiesce(struct ofx_ep *ep)
{
}

static int rc_reset(struct ofx_ep *ep)
{
	return 0;
}

static bool rc_binds_windows(const struct ofx_ep *ep)
{
	return true;
}

static bool rc_completion(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	return false;
}

const struct ofx_ep_transport ofx_ep_rc_transport = {
	.name = "rc",
	.connect = rc_connect,
	.offered = rc_offered,
	.req_qpn = ofx_cm_req_qp,
	.fallback = rc_fallback,
	.rejected = rc_rejected,
	.accept = rc_accept,
	.disconnect = rc_disconnect,
	.quiesce = rc_quiesce,
	.reset = rc_reset,
	.qp_per_connection = false,
	.binds_windows = rc_binds_windows,
	.completion = rc_completion,
};
