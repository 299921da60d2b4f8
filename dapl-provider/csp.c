/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "csp.h"
#include "cm.h"
#include "ep_cm.h"
#include "ep.h"
#include "ep_conn.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
#include "sp.h"
#include "status.h"
#include "verbs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static uint16_t sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					       : ((const struct sockaddr_in *)sa)->sin_port);
}

static const void *sa_addr(const struct sockaddr *sa, size_t *len_p)
{
	if (sa->sa_family == AF_INET6) {
		*len_p = sizeof(struct in6_addr);
		return &((const struct sockaddr_in6 *)sa)->sin6_addr;
	}
	*len_p = sizeof(struct in_addr);
	return &((const struct sockaddr_in *)sa)->sin_addr;
}

/* Orders CSP addresses: family, then address bytes, then port. */
static int csp_addr_cmp(const struct sockaddr *a, const struct sockaddr *b)
{
	size_t alen, blen;
	const void *aa = sa_addr(a, &alen), *ba = sa_addr(b, &blen);
	int ret;

	if (a->sa_family != b->sa_family)
		return a->sa_family < b->sa_family ? -1 : 1;
	ret = memcmp(aa, ba, alen);
	if (ret)
		return ret;
	return (int)sa_port(a) - (int)sa_port(b);
}

bool ofx_csp_initiates(const struct sockaddr *a, const struct sockaddr *b)
{
	return csp_addr_cmp(a, b) < 0;
}

static bool csp_same_peer(const struct sockaddr *want, const struct sockaddr *src, uint16_t port)
{
	size_t wlen, slen;
	const void *wa = sa_addr(want, &wlen), *sa = sa_addr(src, &slen);

	return want->sa_family == src->sa_family && !memcmp(wa, sa, wlen) &&
	       sa_port(want) == port;
}

/* The CSP's own address: the IA address with the CSP's port. */
static void csp_local_addr(const struct ofx_sp *csp, struct sockaddr_storage *ss)
{
	*ss = csp->obj.ia->addr;
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)csp->conn_qual);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)csp->conn_qual);
}

static bool csp_cm_event(void *ctx, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p);
static void csp_detach(struct ofx_ep *ep);

DAT_RETURN ofx_csp_create(DAT_IA_HANDLE ia_handle, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
			  DAT_EVD_HANDLE evd_handle, DAT_CSP_HANDLE *csp_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_handle);
	struct ofx_evd *evd = ofx_evd_from_handle(evd_handle);
	struct ofx_sp *sp;
	uint16_t port;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return OFX_INVALID_ARG(3);
	port = sa_port(addr);
	if (!port) {
		ofx_err("csp_create: the address needs a port");
		return OFX_INVALID_ARG(3);
	}
	if (!csp_same_peer((struct sockaddr *)&ia->addr, addr, sa_port((struct sockaddr *)&ia->addr))) {
		/* a CSP listens on its IA's address; peers identify it by that */
		ofx_err("csp_create: the address is not this ia's");
		return OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
	}
	if (!evd || !(evd->flags & DAT_EVD_CONNECTION_FLAG))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	if (!csp_p)
		return OFX_INVALID_ARG(5);
	ret = ofx_sp_create(ia, OFX_OBJ_CSP, port, evd, DAT_PSP_CONSUMER_FLAG, csp_cm_event, &sp);
	if (ret == -EADDRINUSE)
		return OFX_DAT_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_CSP);
	(void)comm; /* no communicator semantics beyond the address on rdma_cm */
	ofx_dbg("csp %p listening on port %u", (void *)sp, port);
	*csp_p = sp;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_csp_query(DAT_CSP_HANDLE csp_handle, DAT_CSP_PARAM_MASK mask,
			 DAT_CSP_PARAM *param)
{
	struct ofx_sp *sp = ofx_sp_lookup(csp_handle, OFX_OBJ_CSP);

	if (!sp)
		return ofx_invalid_handle(OFX_OBJ_CSP);
	if (mask & ~DAT_CSP_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	memset(param, 0, sizeof(*param));
	param->ia_handle = ofx_ia_dat_handle(sp->obj.ia);
	param->comm = NULL;
	csp_local_addr(sp, &sp->csp_addr);
	param->address_ptr = (DAT_IA_ADDRESS_PTR)&sp->csp_addr;
	param->evd_handle = sp->evd;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_csp_free(DAT_CSP_HANDLE csp_handle)
{
	struct ofx_sp *sp = ofx_sp_lookup(csp_handle, OFX_OBJ_CSP);
	struct ofx_list *pos, *tmp;

	if (!sp)
		return ofx_invalid_handle(OFX_OBJ_CSP);
	/*
	 * Every EP pointing at this CSP is on csp_eps.  Waiting EPs keep their
	 * timers and end with TIMED_OUT; initiators stop retrying (the next
	 * refusal is final).
	 */
	pthread_mutex_lock(&sp->lock);
	ofx_list_for_each_safe(pos, tmp, &sp->csp_eps) {
		struct ofx_ep *ep = container_of(pos, struct ofx_ep, csp_link);

		ofx_list_del(pos);
		pthread_mutex_lock(&ep->lock);
		ep->csp = NULL;
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&sp->lock);
	ofx_sp_destroy(sp);
	return DAT_SUCCESS;
}

/* The CSP an EP connects through: the one reporting to its connection EVD, else the only one. */
static struct ofx_sp *csp_for_ep(struct ofx_ep *ep)
{
	struct ofx_ia *ia = ep->obj.ia;
	struct ofx_sp *found = NULL, *by_evd = NULL;
	struct ofx_list *pos, *tmp;
	int count = 0;

	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);
		struct ofx_sp *sp;

		if (obj->type != OFX_OBJ_CSP)
			continue;
		sp = container_of(obj, struct ofx_sp, obj);
		count++;
		found = sp;
		if (sp->evd == ep->conn_evd)
			by_evd = sp;
	}
	pthread_mutex_unlock(&ia->obj_lock);
	return by_evd ? by_evd : count == 1 ? found : NULL;
}

DAT_RETURN ofx_ep_common_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote,
				 DAT_TIMEOUT timeout, DAT_COUNT pdata_len,
				 const DAT_PVOID pdata)
{
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct sockaddr_storage local;
	struct ofx_sp *csp;
	struct ofx_ia *ia;
	DAT_RETURN status;
	int ret = 0;

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	ia = ep->obj.ia;
	if (!remote || (remote->sa_family != AF_INET && remote->sa_family != AF_INET6) ||
	    !sa_port(remote))
		return OFX_INVALID_ARG(2);
	if (timeout == 0)
		return OFX_INVALID_ARG(3);
	if (pdata_len < 0 ||
	    pdata_len > ofx_cm_max_pdata(ia) - (int)(ofx_pdata_hdr_len(OFX_PDATA_F_CSP) -
						     (ia->p2p_default ? OFX_PDATA_HDR_LEN : 0)))
		return OFX_INVALID_ARG(4);
	if (pdata_len && !pdata)
		return OFX_INVALID_ARG(5);
	if (!ep->conn_evd)
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_EVD_CONNECT);
	csp = csp_for_ep(ep);
	if (!csp) {
		ofx_err("ep %p: common connect needs exactly one csp on the ia (or one "
			"reporting to the ep's connection evd)", (void *)ep);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	}
	csp_local_addr(csp, &local);

	pthread_mutex_lock(&csp->lock);
	pthread_mutex_lock(&ep->lock);
	status = ep->state == OFX_EP_UNCONNECTED ?
			 ofx_ep_attach(ep) :
			 OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	if (status != DAT_SUCCESS) {
		pthread_mutex_unlock(&ep->lock);
		pthread_mutex_unlock(&csp->lock);
		return status;
	}
	ep->csp = csp;
	ep->csp_port = (uint16_t)csp->conn_qual;
	ep->csp_detach = csp_detach;
	ep->csp_no_listener = false;
	memset(&ep->csp_tally, 0, sizeof(ep->csp_tally));
	ep->csp_initiator = ofx_csp_initiates((struct sockaddr *)&local, remote);
	/* on the list while ep->csp is set, so that csp_free can clear it */
	ofx_list_add_tail(&csp->csp_eps, &ep->csp_link);
	if (ep->csp_initiator) {
		ret = ofx_cm_connect(ep, remote, sa_port(remote), timeout, pdata, pdata_len);
		if (ret) {
			ofx_list_del(&ep->csp_link);
			ep->csp = NULL;
		}
	} else {
		/*
		 * Wait for the peer's REQ on our CSP, whose REP carries the
		 * data (no data may come as NULL: memcpy(NULL) is undefined
		 * even for 0 bytes).
		 */
		if (pdata_len)
			memcpy(ep->csp_pdata, pdata, pdata_len);
		ep->csp_pdata_len = pdata_len;
		ofx_cm_addr_set(&ep->remote_addr, remote);
		ep->remote_qual = sa_port(remote);
		ofx_ep_conn_move(ep, OFX_EP_ACTIVE_PENDING);
		if (timeout != DAT_TIMEOUT_INFINITE)
			ofx_cm_arm_conn_timer(ep, timeout);
	}
	ofx_dbg("ep %p common connect to port %u: %s", (void *)ep, sa_port(remote),
		ep->csp_initiator ? "initiating" : "waiting for the peer");
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_unlock(&csp->lock);
	return ofx_dat_status(ret, OFX_OBJ_EP);
}

/* Refuses a REQ whose EP is not there yet: the initiator will retry. */
static struct rdma_cm_id *csp_refuse(struct rdma_cm_id *id, const char *why)
{
	ofx_dbg("csp refuses a request: %s", why);
	ofx_sp_reject_id(id);
	return id;
}

/* A REQ on a CSP; returns an id to destroy after the ack. */
static struct rdma_cm_id *csp_connect_request(struct ofx_sp *sp, struct rdma_cm_event *ev)
{
	const void *data = ev->param.conn.private_data;
	int len = data ? ev->param.conn.private_data_len : 0;
	struct sockaddr *src = rdma_get_peer_addr(ev->id);
	struct ofx_list *pos, *tmp;
	struct ofx_conn_req req = { 0 };
	struct sockaddr_storage remote = { 0 };
	struct ofx_ep *ep = NULL;
	int ret;

	if (!len || ofx_pdata_decode(data, len, &req.hdr) || !(req.hdr.flags & OFX_PDATA_F_CSP))
		return csp_refuse(ev->id, "not a common-connect request");
	req.has_hdr = true;

	pthread_mutex_lock(&sp->lock);
	ofx_list_for_each_safe(pos, tmp, &sp->csp_eps) {
		struct ofx_ep *cand = container_of(pos, struct ofx_ep, csp_link);

		if (cand->csp_initiator ||
		    !csp_same_peer((struct sockaddr *)&cand->remote_addr, src, req.hdr.csp_port))
			continue;
		/* still waiting: not accepted (cm_id), not timed out or disconnected */
		pthread_mutex_lock(&cand->lock);
		if (cand->state == OFX_EP_ACTIVE_PENDING && !cand->cm_id) {
			ep = cand;
			break;
		}
		pthread_mutex_unlock(&cand->lock);
	}
	if (!ep) {
		pthread_mutex_unlock(&sp->lock);
		return csp_refuse(ev->id, "no ep waits for this peer yet");
	}
	req.local_qual = sp->conn_qual;
	req.cm_id = ev->id;
	req.param = ev->param.conn;
	memcpy(&remote, src, src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							: sizeof(struct sockaddr_in));
	req.remote_addr = &remote;
	/* the initiator's data is what this side's ESTABLISHED carries */
	ep->pdata_len = req.hdr.consumer_len;
	memcpy(ep->pdata, data, ep->pdata_len);
	/* ep->csp stays set: it marks the ESTABLISHED event as carrying data */
	ret = ofx_cm_accept(ep, &req, ep->csp_pdata, ep->csp_pdata_len);
	if (ret) {
		ofx_list_del(&ep->csp_link);
		ep->csp = NULL;
		ep->pdata_len = 0;
		ofx_ep_conn_report(ep, OFX_EP_DISCONNECTED, DAT_CONNECTION_EVENT_UNREACHABLE,
				   false);
	}
	ep->remote_qual = req.hdr.csp_port;
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_unlock(&sp->lock);
	if (ret)
		return csp_refuse(ev->id, "accept failed");
	return NULL;
}

/*
 * The handler of a CSP's ids (cm.h): its requests are matched to waiting
 * EPs and accepted at once, so later events of an id are the EP's.
 */
static bool csp_cm_event(void *ctx, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		*destroy_p = csp_connect_request(ctx, ev);
		return true;
	}
	/* a CSP keeps no CRs: an id still naming it has no owner */
	return false;
}

/* ep->csp_detach (ep.h) */
static void csp_detach(struct ofx_ep *ep)
{
	struct ofx_sp *csp;

	pthread_mutex_lock(&ep->lock);
	csp = ep->csp;
	pthread_mutex_unlock(&ep->lock);
	if (!csp)
		return;
	pthread_mutex_lock(&csp->lock);
	pthread_mutex_lock(&ep->lock);
	if (ep->csp == csp)
		ofx_list_del(&ep->csp_link);
	ep->csp = NULL;
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_unlock(&csp->lock);
	ofx_progress_timer_cancel(ep->obj.ia->progress, &ep->csp_retry_timer);
}
