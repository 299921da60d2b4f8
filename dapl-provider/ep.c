/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_EP
#include "ep.h"
#include "cm.h"
#include "cr.h"
#include "csp.h"
#include "evd.h"
#include "ia.h"
#include "log.h"
#include "progress.h"
#include "pz.h"
#include "rmr.h"
#include "sp.h"
#include "srq.h"
#include "status.h"
#include "verbs.h"
#include "xrc.h"

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

/* Checks consumer EP attributes against the device (INVALID_PARAMETER/ARG6). */
static int ep_check_attr(const struct ofx_ia *ia, const DAT_EP_ATTR *a, bool has_recv_evd,
			 bool has_req_evd, bool has_srq)
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
	if (!has_srq && ((a->max_recv_dtos > 0) != has_recv_evd)) {
		ofx_err("ep attr: max_recv_dtos %d does not match recv evd %s", a->max_recv_dtos,
			has_recv_evd ? "given" : "absent");
		return -EINVAL;
	}
	if ((a->max_request_dtos > 0) != has_req_evd) {
		ofx_err("ep attr: max_request_dtos %d does not match request evd %s",
			a->max_request_dtos, has_req_evd ? "given" : "absent");
		return -EINVAL;
	}
	if (has_recv_evd && !has_srq && a->max_recv_iov <= 0) {
		ofx_err("ep attr: max_recv_iov must be > 0 with a recv evd");
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
			ibv_get_device_name(ia->verbs->device), a->max_recv_dtos,
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

static struct ibv_cq *ep_cq(struct ofx_ia *ia, struct ofx_evd *evd)
{
	return evd && evd->cq ? evd->cq : ia->empty_cq;
}

static int ep_create_qp(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ibv_qp_init_attr_ex init = {
		.qp_context = ep,
		.send_cq = ep_cq(ia, ep->req_evd),
		.recv_cq = ep_cq(ia, ep->recv_evd),
		.cap = {
			/* +1: room for the provider's RTR on either queue */
			.max_send_wr = ep->attr.max_request_dtos + 1,
			.max_recv_wr = ep->srq ? 0 : ep->attr.max_recv_dtos + 1,
			.max_send_sge = ep->attr.max_request_iov ? ep->attr.max_request_iov : 1,
			.max_recv_sge = ep->srq ? 0 :
					ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1,
			.max_inline_data = ia->max_inline,
		},
		.srq = ep->srq ? ep->srq->srq : NULL,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ep->pz->pd,
	};

	ep->qp = ofx_verbs->create_qp_ex(ia->verbs, &init);
	if (!ep->qp) {
		int ret = -errno;

		ofx_err("create rc qp on %s (send %u recv %u sge %u/%u inline %u): %m",
			ibv_get_device_name(ia->verbs->device), init.cap.max_send_wr,
			init.cap.max_recv_wr, init.cap.max_send_sge, init.cap.max_recv_sge,
			init.cap.max_inline_data);
		return ret ? ret : -ENOMEM;
	}
	ep->max_inline = init.cap.max_inline_data;
	ofx_dbg("ep %p qp 0x%x created", (void *)ep, ep->qp->qp_num);
	return 0;
}

static int ep_init_rings(struct ofx_ep *ep)
{
	int ret;
	uint32_t sges = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1;
	/* an SRQ EP's receives live in the SRQ's slots: no recv ring */
	uint32_t recv_slots = ep->srq ? 0 : ep->attr.max_recv_dtos + 1;

	ret = ofx_cookie_ring_init(&ep->send_ring, ep->attr.max_request_dtos + 1, ep);
	if (ret)
		return ret;
	ret = ofx_cookie_ring_init(&ep->recv_ring, recv_slots, ep);
	if (ret)
		goto err_send;
	if (!recv_slots)
		return 0;
	ep->recv_sges = calloc((size_t)ep->recv_ring.size * sges, sizeof(*ep->recv_sges));
	if (!ep->recv_sges) {
		ret = -ENOMEM;
		goto err_recv;
	}
	return 0;

err_recv:
	ofx_cookie_ring_fini(&ep->recv_ring);
err_send:
	ofx_cookie_ring_fini(&ep->send_ring);
	return ret;
}

/* Work requests (and so completions) the EP can have outstanding per queue. */
static int ep_recv_cqes(const struct ofx_ep *ep)
{
	/* an SRQ EP's receives are the SRQ's (not accounted here) */
	return ep->srq ? 0 : ep->attr.max_recv_dtos + 1;
}

static int ep_req_cqes(const struct ofx_ep *ep)
{
	return ep->attr.max_request_dtos + 1;
}

static void ep_take_refs(struct ofx_ep *ep)
{
	if (ep->pz)
		atomic_fetch_add(&ep->pz->refs, 1);
	if (ep->recv_evd) {
		ofx_evd_get(ep->recv_evd);
		ofx_evd_reserve_cqes(ep->recv_evd, ep_recv_cqes(ep));
	}
	if (ep->req_evd) {
		ofx_evd_get(ep->req_evd);
		ofx_evd_reserve_cqes(ep->req_evd, ep_req_cqes(ep));
	}
	if (ep->conn_evd)
		ofx_evd_get(ep->conn_evd);
}

static void ep_drop_refs(struct ofx_ep *ep)
{
	if (ep->pz)
		atomic_fetch_sub(&ep->pz->refs, 1);
	if (ep->recv_evd) {
		ofx_evd_unreserve_cqes(ep->recv_evd, ep_recv_cqes(ep));
		ofx_evd_put(ep->recv_evd);
	}
	if (ep->req_evd) {
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

/*
 * Builds what an attached EP owns: cookie rings, the QP and its SRQ or XRC
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
	ret = ep_create_qp(ep);
	if (ret)
		goto err_rings;
	ep->rtr_cookie.ep = ep;
	if (ep->srq)
		ret = ofx_srq_ep_add(ep->srq, ep);
	else if (ia->xrc)
		ret = ofx_xrc_ep_create(ep);
	if (ret)
		goto err_destroy_qp;
	return 0;

err_destroy_qp:
	if (ofx_verbs->destroy_qp(ep->qp))
		ofx_warn("destroy qp 0x%x: %m", ep->qp->qp_num);
	ep->qp = NULL;
err_rings:
	ep_fini_rings(ep);
	return ret;
}

DAT_RETURN ofx_ep_attach(struct ofx_ep *ep)
{
	int ret;

	if (ep->qp)
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
	ep->state = OFX_EP_UNCONNECTED;
	ofx_list_init(&ep->csp_link);
	ep->soft_hw = DAT_WATERMARK_INFINITE;
	ep->hard_hw = DAT_WATERMARK_INFINITE;
	pthread_mutex_init(&ep->lock, NULL);
	return ep;
}

/* Undoes ep_alloc (nothing attached, nothing referenced). */
static void ep_discard(struct ofx_ep *ep)
{
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
	if (ep_parse_p2p_attr(&ep->attr, &ep->p2p_attr) ||
	    ep_check_attr(ia, &ep->attr, recv_evd, req_evd, srq != NULL) ||
	    (srq && ep->p2p_attr == OFX_ON)) {
		ep_discard(ep);
		return srq ? OFX_INVALID_ARG(7) : OFX_INVALID_ARG(6);
	}
	if (srq)
		ep->p2p_attr = OFX_OFF;
	ep_forget_named_attrs(ep);
	ep->srq = srq;
	ep->pz = pz;
	ep->recv_evd = recv_evd;
	ep->req_evd = req_evd;
	ep->conn_evd = conn_evd;

	status = pz ? ofx_ep_attach(ep) : DAT_SUCCESS;
	if (status != DAT_SUCCESS) {
		ep_discard(ep);
		return status;
	}
	ep_take_refs(ep);
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
	ep->state = OFX_EP_TENTATIVE_PENDING;
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
	param->srq_handle = ep->srq ? (DAT_SRQ_HANDLE)ep->srq : DAT_HANDLE_NULL;
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
	if ((ep->srq && (cfg->pz != ep->srq->pz || !cfg->recv_evd)) ||
	    ep_check_attr(ep->obj.ia, &cfg->attr, cfg->recv_evd, cfg->req_evd, ep->srq != NULL))
		return OFX_INVALID_ARG(3);
	return DAT_SUCCESS;
}

/*
 * An attached EP that never connected (or was reset) gives its QP up so
 * that the next connect or accept builds one to the new configuration.
 * Held receives would be lost, and an SRQ or XRC EP's QP is registered
 * elsewhere: those keep their QP.  ep->lock held.
 */
static DAT_RETURN ep_detach(struct ofx_ep *ep)
{
	if (!ep->qp)
		return DAT_SUCCESS;
	if (ep->srq || ep->xrc || ofx_cookie_ring_outstanding(&ep->recv_ring)) {
		ofx_info("ep %p: cannot rebuild qp 0x%x (%s)", (void *)ep, ep->qp->qp_num,
			 ep->srq ? "srq ep" : ep->xrc ? "xrc ep" : "receives posted");
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	ofx_rmr_ep_gone(ep);
	if (ofx_verbs->destroy_qp(ep->qp))
		ofx_warn("destroy qp 0x%x: %m", ep->qp->qp_num);
	ep->qp = NULL;
	ep_fini_rings(ep);
	return DAT_SUCCESS;
}

static DAT_RETURN ep_modify_locked(struct ofx_ep *ep, DAT_EP_PARAM_MASK mask,
				   const DAT_EP_PARAM *param, enum ofx_tristate p2p)
{
	struct ep_config cfg;
	DAT_RETURN status;

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
	ep_drop_refs(ep);
	ep->pz = cfg.pz;
	ep->recv_evd = cfg.recv_evd;
	ep->req_evd = cfg.req_evd;
	ep->conn_evd = cfg.conn_evd;
	ep->attr = cfg.attr;
	ep_forget_named_attrs(ep);
	if (mask & OFX_EP_PROVIDER_ATTR)
		ep->p2p_attr = p2p;
	ep_take_refs(ep);
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
	    (ep_parse_p2p_attr(&param->ep_attr, &p2p) || (ep->srq && p2p == OFX_ON)))
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
	if (!ep->xrc || !ofx_xrc_disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG, &ret))
		ret = ofx_cm_disconnect(ep, flags == DAT_CLOSE_ABRUPT_FLAG);
	pthread_mutex_unlock(&ep->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* ---- data path ---------------------------------------------------------- */

static inline bool ep_can_send(const struct ofx_ep *ep)
{
	/* DISCONNECTED: a post still goes to the (error-state) QP and flushes */
	return ofx_likely(ep->state == OFX_EP_CONNECTED) ||
	       ep->state == OFX_EP_DISCONNECT_PENDING || ep->state == OFX_EP_DISCONNECTED;
}

/*
 * Each segment length is 32 bits: only a sum of several can pass UINT32_MAX.
 * One segment is the common case, so it is not a loop (which the compiler
 * would vectorise, at a cost for short lists).
 */
static inline uint64_t ep_iov_total(DAT_COUNT n, const DAT_LMR_TRIPLET *iov)
{
	uint64_t total;

	if (ofx_likely(n == 1))
		return iov[0].segment_length;
	total = 0;
	for (DAT_COUNT i = 0; i < n; i++)
		total += iov[i].segment_length;
	return total;
}

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
		 qp->qp_num, strerror(ret));
	return ofx_dat_status(-ret, OFX_OBJ_EP);
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

	if (ofx_unlikely(p->n < 0 || p->n > ep->attr.max_request_iov))
		return OFX_INVALID_ARG(2);
	if (ofx_unlikely(p->n && !p->iov))
		return OFX_INVALID_ARG(3);
	if (ofx_unlikely(!ep_can_send(ep)))
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	total = ep_iov_total(p->n, p->iov);
	if (ofx_unlikely(total > UINT32_MAX))
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);

	ck = ofx_cookie_ring_reserve(ring);
	if (ofx_unlikely(!ck))
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	ck->ep = ep;
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

	if (ofx_likely(!ep->xrc)) {
		ret = ofx_verbs->post_send(ep->qp, &wr, &bad);
		if (ofx_unlikely(ret))
			return sq_post_failed(ep->qp, &wr, ret);
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

static struct ibv_sge *recv_slot_sges(struct ofx_ep *ep, const struct ofx_cookie *ck)
{
	uint32_t per = ep->attr.max_recv_iov ? ep->attr.max_recv_iov : 1;

	return &ep->recv_sges[(ck->seq % ep->recv_ring.size) * per];
}

static int ep_post_one_recv(struct ofx_ep *ep, struct ofx_cookie *ck, int nsge)
{
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)ck,
		.sg_list = recv_slot_sges(ep, ck),
		.num_sge = nsge,
	}, *bad;
	int ret;

	if (ep->xrc)
		return ofx_xrc_post_recv(ep, &wr);
	ret = ofx_verbs->post_recv(ep->qp, &wr, &bad);
	if (ret)
		ofx_warn("post recv on qp 0x%x: %s", ep->qp->qp_num, strerror(ret));
	return -ret;
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
		ofx_warn("ep %p: %d receives exceed the hard high watermark: connection broken",
			 (void *)ep, bufs);
		ep->state = OFX_EP_DISCONNECTED;
		if (ep->cm_id)
			ofx_verbs->disconnect(ep->cm_id);
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_BROKEN, false);
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

DAT_RETURN ofx_ep_post_recv(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
			    DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_cookie *ck;
	uint64_t total;
	int ret = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (ep->srq)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
	if (n < 0 || n > ep->attr.max_recv_iov)
		return OFX_INVALID_ARG(2);
	if (n && !iov)
		return OFX_INVALID_ARG(3);
	if (flags & ~OFX_DTO_FLAGS_VALID)
		return OFX_INVALID_ARG(5);
	total = ep_iov_total(n, iov);
	if (total > UINT32_MAX)
		return OFX_DAT_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);

	ck = ofx_cookie_ring_reserve(&ep->recv_ring);
	if (!ck) {
		/* an unattached EP has no ring yet (ofx_ep_attach) */
		if (!ep->recv_ring.slots)
			return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	}
	ck->ep = ep;
	ck->user = cookie;
	ck->len = (uint32_t)total;
	ck->op = OFX_OP_RECV;
	ck->flags = (flags & DAT_COMPLETION_SUPPRESS_FLAG) ? OFX_COOKIE_F_SUPPRESS : 0;
	if (n)
		memcpy(recv_slot_sges(ep, ck), iov, n * sizeof(struct ibv_sge));
	ck->nsge = (uint8_t)n;

	if (atomic_load_explicit(&ep->recv_live, memory_order_acquire)) {
		ret = ep_post_one_recv(ep, ck, n);
		if (ret)
			return ofx_dat_status(ret, OFX_OBJ_EP);
		ofx_cookie_ring_commit(&ep->recv_ring);
	} else {
		/* The QP cannot take receives yet: hold it, unless it just went live. */
		pthread_mutex_lock(&ep->lock);
		if (atomic_load(&ep->recv_live))
			ret = ep_post_one_recv(ep, ck, n);
		if (!ret)
			ofx_cookie_ring_commit(&ep->recv_ring);
		pthread_mutex_unlock(&ep->lock);
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

	/* a common-connect retry keeps its QP in INIT with receives posted */
	if (atomic_load(&ep->recv_live))
		return 0;
	if (rtr_recv_first) {
		struct ibv_recv_wr wr = { .wr_id = (uintptr_t)&ep->rtr_cookie }, *bad;

		ep->rtr_cookie.ep = ep;
		ep->rtr_cookie.op = OFX_OP_RTR_RECV;
		ep->rtr_cookie.flags = OFX_COOKIE_F_INTERNAL;
		ret = ofx_verbs->post_recv(ep->qp, &wr, &bad);
		if (ret) {
			ofx_err("post rtr recv on qp 0x%x: %s", ep->qp->qp_num, strerror(ret));
			return -ret;
		}
	}
	head = atomic_load(&ring->head);
	for (seq = atomic_load(&ring->tail); seq < head; seq++) {
		struct ofx_cookie *ck = &ring->slots[seq % ring->size];

		ret = ep_post_one_recv(ep, ck, ck->nsge);
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
	struct ofx_cookie_ring *ring;
	uint64_t tail, head, span = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (ep->srq) {
		/* which SRQ receives a QP holds is known only to the device (ep.h) */
		if (nbufs_p)
			*nbufs_p = DAT_VALUE_UNKNOWN;
		if (span_p)
			*span_p = DAT_VALUE_UNKNOWN;
		return DAT_SUCCESS;
	}
	/*
	 * Posted and not yet polled.  Pollers only move tail; a slot below
	 * head is rewritten only by the next post, which is this thread's.
	 */
	ring = &ep->recv_ring;
	tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	head = atomic_load_explicit(&ring->head, memory_order_acquire);
	for (uint64_t seq = tail; seq < head; seq++)
		span += ring->slots[seq % ring->size].len;
	if (nbufs_p)
		*nbufs_p = head > tail ? (DAT_COUNT)(head - tail) : 0;
	if (span_p)
		*span_p = span > INT32_MAX ? INT32_MAX : (DAT_COUNT)span;
	return DAT_SUCCESS;
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
	atomic_store(&ep->wm_armed, !ep->srq && (soft_hw >= 0 || hard_hw >= 0));
	pthread_mutex_unlock(&ep->lock);
	ofx_dbg("ep %p: high watermarks soft %d hard %d", (void *)ep, soft_hw, hard_hw);
	/* "during this call": the receives already posted count */
	ep_check_watermarks(ep);
	return DAT_SUCCESS;
}

/* Moves the QP to RESET so that it can be connected again. */
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

DAT_RETURN ofx_ep_reset(DAT_EP_HANDLE ep_handle)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	int ret = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	ofx_csp_detach(ep);
	/* an XRC EP that answered its peer's DISC finishes its fence first */
	if (ep->xrc)
		ofx_xrc_ep_quiesce(ep);
	pthread_mutex_lock(&ep->lock);
	if (ep->state != OFX_EP_UNCONNECTED && ep->state != OFX_EP_DISCONNECTED) {
		enum ofx_ep_state state = ep->state;

		pthread_mutex_unlock(&ep->lock);
		ofx_dbg("ep %p reset refused in state %s", (void *)ep, ofx_ep_state_str(state));
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	if (ep->srq)
		ofx_srq_ep_reset(ep);
	if (ep->xrc && ofx_xrc_ep_reset(ep)) {
		pthread_mutex_unlock(&ep->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	ofx_cm_release(ep);
	/* release drops the lock: only proceed if nobody reconnected meanwhile */
	if (ep->state == OFX_EP_UNCONNECTED || ep->state == OFX_EP_DISCONNECTED) {
		ret = ep->qp ? ep_qp_reset(ep) : 0;
		if (!ret) {
			ep->state = OFX_EP_UNCONNECTED;
			ep->p2p = false;
			ep->rtr_arrived = false;
			ep->cm_established = false;
		}
	}
	pthread_mutex_unlock(&ep->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* Waits until no drain of `evd` is still calling ofx_ep_dto_notify(). */
static void ep_wait_notify(struct ofx_evd *evd)
{
	if (!evd)
		return;
	/* taking the lock orders us after any drain that saw the EP alive */
	pthread_mutex_lock(&evd->lock);
	pthread_mutex_unlock(&evd->lock);
	while (atomic_load(&evd->notify_inflight))
		sched_yield();
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
	struct ofx_evd *evds[2] = { ep->recv_evd, ep->req_evd };
	bool clean = true;

	atomic_store(&ep->dying, true);
	if (!ep->qp)
		return true; /* never attached: no completion can name it */
	ofx_rmr_ep_gone(ep);
	if (ofx_verbs->destroy_qp(ep->qp))
		ofx_warn("destroy qp 0x%x: %m", ep->qp->qp_num);
	ep->qp = NULL;
	for (int i = 0; i < 2; i++) {
		struct ofx_evd *evd = evds[i];

		if (!evd || !evd->cq || (i == 1 && evd == evds[0]))
			continue;
		ofx_evd_drain_cq(evd);
		pthread_mutex_lock(&evd->lock);
		if (evd->count >= evd->qlen)
			clean = false; /* full: CQEs may remain behind it */
		pthread_mutex_unlock(&evd->lock);
		ep_wait_notify(evd);
	}
	return clean;
}

/*
 * An SRQ EP's QP may hold a receive it took from the SRQ.  Once the QP is in
 * error the device says it is done with IBV_EVENT_QP_LAST_WQE_REACHED; some
 * (rxe in Linux 6.1) never send it, so the wait is bounded by
 * cfg.lastwqe_timeout_ms and skipped when no progress thread can deliver
 * the event.  Memory safety does not depend on it: SRQ cookies belong to the
 * SRQ, and completions of an EP that is gone are dropped (srq.h).
 */
static void ep_srq_quiesce(struct ofx_ep *ep)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ofx_ia *ia = ep->obj.ia;
	uint64_t deadline;

	if (!ia->progress || !ofx_srq_ep_lastwqe_pending(ep))
		return;
	if (ofx_verbs->modify_qp(ep->qp, &attr, IBV_QP_STATE))
		ofx_dbg("qp 0x%x to error for teardown: %m", ep->qp->qp_num);
	deadline = ofx_now_ns() + ia->cfg.lastwqe_timeout_ms * 1000000ull;
	while (ofx_srq_ep_lastwqe_pending(ep)) {
		struct timespec ts = { 0, 200 * 1000 };

		if (ofx_now_ns() > deadline) {
			ofx_dbg("qp 0x%x: no last-wqe event within %u ms", ep->qp->qp_num,
				ia->cfg.lastwqe_timeout_ms);
			return;
		}
		nanosleep(&ts, NULL);
	}
}

static void ep_free_mem(struct ofx_ep *ep)
{
	ofx_xrc_ep_free(ep);
	ep_fini_rings(ep);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

static void ep_teardown(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	bool clean, xrc_clean;

	ofx_csp_detach(ep);
	pthread_mutex_lock(&ep->lock);
	if (ep->cm_id && (ep->state == OFX_EP_CONNECTED || ep->state == OFX_EP_RTR_WAIT ||
			  ep->state == OFX_EP_COMPLETION_PENDING ||
			  ep->state == OFX_EP_DISCONNECT_PENDING))
		ofx_verbs->disconnect(ep->cm_id);
	ep->state = OFX_EP_DISCONNECTED;
	if (ep->srq) {
		/* no LAST_WQE async event may name an EP being freed (srq.c) */
		atomic_store(&ep->dying, true);
		ofx_progress_timer_cancel(ia->progress, &ep->lastwqe_timer);
	}
	ofx_cm_release(ep);
	pthread_mutex_unlock(&ep->lock);

	if (ep->srq)
		ep_srq_quiesce(ep);
	/* XRC: fence and DISC, then SRQ, INI and TGT references go */
	xrc_clean = ofx_xrc_ep_teardown(ep);
	clean = ep_purge_completions(ep) && xrc_clean;
	/* the SRQ forgets the EP only after its last CQE was polled (or dropped) */
	if (ep->srq)
		ofx_srq_ep_remove(ep->srq, ep);
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
	pthread_mutex_unlock(&ep->lock);
	if (state == OFX_EP_RESERVED || state == OFX_EP_PASSIVE_PENDING ||
	    state == OFX_EP_TENTATIVE_PENDING)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PASSCONNPENDING);
	ep_teardown(ep);
	return DAT_SUCCESS;
}

void ofx_ep_destroy(struct ofx_ep *ep)
{
	ep_teardown(ep);
}

/* Posts the connection event `num` with the EP's saved private data. */
void ofx_ep_post_conn_event(struct ofx_ep *ep, DAT_EVENT_NUMBER num, bool with_pdata)
{
	if (ep->srq)
		ofx_srq_ep_conn_event(ep, num);
	if (!ep->conn_evd) {
		ofx_warn("ep %p has no connection evd for event 0x%x", (void *)ep, num);
		return;
	}
	ofx_evd_post_conn(ep->conn_evd, num, ep, with_pdata ? ep->pdata_len : 0,
			  with_pdata && ep->pdata_len ? ep->pdata : NULL);
}

/*
 * A passive p2p EP becomes CONNECTED once both the rdma_cm ESTABLISHED event
 * and the peer's RTR have arrived, in either order.  ep->lock held.
 */
void ofx_ep_p2p_maybe_established(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;

	if (ep->state != OFX_EP_RTR_WAIT || !ep->rtr_arrived || !ep->cm_established)
		return;
	ofx_progress_timer_cancel(ia->progress, &ep->rtr_timer);
	ep->state = OFX_EP_CONNECTED;
	ofx_dbg("ep %p qp 0x%x rtr received: established", (void *)ep, ep->qp->qp_num);
	/* a common-connect EP reports the initiator's data on this side too */
	ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, ep->csp != NULL);
}

void ofx_ep_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_cookie *ck = (struct ofx_cookie *)(uintptr_t)wc->wr_id;

	if (ep->xrc && ofx_xrc_dto_notify(ep, wc))
		return;
	pthread_mutex_lock(&ep->lock);
	if (ck == &ep->rtr_cookie && wc->status == IBV_WC_SUCCESS) {
		if (ck->op == OFX_OP_RTR_RECV) {
			atomic_fetch_add(&ia->stats.rtr_received, 1);
			ep->rtr_arrived = true;
			ofx_ep_p2p_maybe_established(ep);
		}
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR &&
	    (ep->state == OFX_EP_CONNECTED || ep->state == OFX_EP_RTR_WAIT)) {
		ofx_warn("qp 0x%x completion error %s (vendor 0x%x): connection broken",
			 ep->qp->qp_num, ibv_wc_status_str(wc->status), wc->vendor_err);
		ep->state = OFX_EP_DISCONNECTED;
		if (ep->cm_id)
			ofx_verbs->disconnect(ep->cm_id);
		ofx_ep_post_conn_event(ep, DAT_CONNECTION_EVENT_BROKEN, false);
	}
	pthread_mutex_unlock(&ep->lock);
}
