/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "sp.h"
#include "cm.h"
#include "cr.h"
#include "ep.h"
#include "ep_conn.h"
#include "evd.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "status.h"
#include "verbs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Listen backlog: dtestcm connects in bursts of up to 100+ per SP. */
#define OFX_SP_BACKLOG 1024
/* psp_create_any searches upward from here, as stock does. */
#define OFX_PSP_ANY_FIRST 1024
#define OFX_PSP_ANY_LAST 0xFFFF

struct ofx_sp *ofx_sp_lookup(DAT_HANDLE h, enum ofx_obj_type type)
{
	struct ofx_obj *obj = ofx_obj_from_handle(h, type);

	return obj ? container_of(obj, struct ofx_sp, obj) : NULL;
}

static void sp_free_mem(struct ofx_sp *sp)
{
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

/* Creates the listening id bound to <IA address>:port(qual). */
static int sp_listen(struct ofx_ia *ia, struct ofx_sp *sp)
{
	struct sockaddr_storage addr = ia->addr;
	uint16_t port = ofx_conn_qual_to_port(sp->conn_qual);
	int ret;

	if (addr.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&addr)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&addr)->sin_port = htons(port);
	ret = ofx_cm_id_create(ia, &sp->cm_handler, &sp->listen_id);
	if (ret)
		return ret;
	if (ofx_verbs->bind_addr(sp->listen_id, (struct sockaddr *)&addr)) {
		ret = -errno;
		if (ret == -EBUSY || ret == -EADDRNOTAVAIL)
			ret = -EADDRINUSE;
		ofx_dbg("bind listener to port %u: %m", port);
		goto err_destroy;
	}
	if (ofx_verbs->listen(sp->listen_id, OFX_SP_BACKLOG)) {
		ret = -errno;
		if (ret == -EBUSY)
			ret = -EADDRINUSE;
		ofx_err("rdma_listen on port %u: %m", port);
		goto err_destroy;
	}
	return 0;

err_destroy:
	ofx_verbs->destroy_id(sp->listen_id);
	sp->listen_id = NULL;
	return ret;
}

/* The handler of a PSP's or RSP's ids (cm.h): requests become CRs. */
static bool sp_cm_event(void *ctx, struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	struct ofx_sp *sp = ctx;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		*destroy_p = ofx_sp_connect_request(sp, ev);
		return true;
	}
	return ofx_sp_cr_event(sp, ev);
}

/* dat_cr_handoff's target: the listening PSP of the IA other than `self` on `qual`. */
static struct ofx_cr_queue *sp_find_psp(struct ofx_cr_queue *self, DAT_CONN_QUAL qual)
{
	struct ofx_ia *ia = container_of(self, struct ofx_sp, crq)->obj.ia;
	struct ofx_list *pos, *tmp;
	struct ofx_cr_queue *found = NULL;

	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);
		struct ofx_sp *sp;

		if (obj->type != OFX_OBJ_PSP)
			continue;
		sp = container_of(obj, struct ofx_sp, obj);
		if (&sp->crq != self && sp->conn_qual == qual) {
			found = &sp->crq;
			break;
		}
	}
	pthread_mutex_unlock(&ia->obj_lock);
	return found;
}

int ofx_sp_create(struct ofx_ia *ia, enum ofx_obj_type type, DAT_CONN_QUAL qual,
		  struct ofx_evd *evd, DAT_PSP_FLAGS flags, ofx_cm_event_fn fn,
		  struct ofx_sp **sp_p)
{
	struct ofx_sp *sp = calloc(1, sizeof(*sp));
	int ret;

	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	ofx_list_init(&sp->csp_eps);
	sp->conn_qual = qual;
	sp->evd = evd;
	sp->psp_flags = flags;
	/* the header must be valid before the id can deliver events */
	sp->obj.provider = ia->obj.provider;
	sp->obj.type = type;
	sp->obj.ia = ia;
	sp->cm_handler.fn = fn ? fn : sp_cm_event;
	sp->cm_handler.ctx = sp;
	sp->crq = (struct ofx_cr_queue){
		.lock = &sp->lock,
		.listening = true,
		.conn_qual = qual,
		.evd = evd,
		.handle = { .psp_handle = sp },
		.cm_handler = &sp->cm_handler,
		.find_psp = sp_find_psp,
	};
	ofx_list_init(&sp->crq.crs);
	ret = sp_listen(ia, sp);
	if (ret) {
		sp_free_mem(sp);
		return ret;
	}
	ofx_evd_get(evd);
	ofx_obj_init(&sp->obj, type, ia);
	*sp_p = sp;
	return 0;
}

/* Rejects a request the consumer will never see (stock's 4-byte header). */
void ofx_sp_reject_id(struct rdma_cm_id *id)
{
	uint32_t hdr = htonl(OFX_REJ_HDR);

	if (ofx_verbs->reject(id, &hdr, sizeof(hdr)))
		ofx_warn("rdma_reject: %m");
}

/*
 * Stops listening and refuses every CR still pending (ofx_cr_orphan: the
 * objects outlive the SP for the events naming them); their ids are
 * destroyed outside sp->lock because the progress thread may hold one of
 * their events while it waits for that lock.
 */
static void sp_teardown(struct ofx_sp *sp)
{
	struct ofx_list pending, *pos, *tmp;

	ofx_list_init(&pending);
	pthread_mutex_lock(&sp->lock);
	sp->crq.listening = false;
	ofx_list_for_each_safe(pos, tmp, &sp->crq.crs) {
		ofx_list_del(pos);
		ofx_list_add_tail(&pending, pos);
	}
	pthread_mutex_unlock(&sp->lock);

	if (sp->listen_id && ofx_verbs->destroy_id(sp->listen_id))
		ofx_warn("rdma_destroy_id listener: %m");
	sp->listen_id = NULL;
	ofx_list_for_each_safe(pos, tmp, &pending) {
		struct ofx_cr *cr = container_of(pos, struct ofx_cr, sp_link);

		ofx_list_init(&cr->sp_link);
		ofx_cr_orphan(cr);
	}
	ofx_progress_barrier(sp->obj.ia->progress);
	if (sp->ep) {
		pthread_mutex_lock(&sp->ep->lock);
		if (sp->ep->state == OFX_EP_RESERVED)
			ofx_ep_conn_move(sp->ep, OFX_EP_UNCONNECTED);
		sp->ep->rsp = NULL;
		pthread_mutex_unlock(&sp->ep->lock);
	}
	ofx_evd_put(sp->evd);
	ofx_obj_fini(&sp->obj);
	sp_free_mem(sp);
}

void ofx_sp_destroy(struct ofx_sp *sp)
{
	sp_teardown(sp);
}

DAT_RETURN ofx_psp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_handle,
			  DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_handle);
	struct ofx_evd *evd = ofx_evd_from_handle(evd_handle);
	struct ofx_sp *sp;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!evd || !(evd->flags & DAT_EVD_CR_FLAG))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
		return OFX_INVALID_ARG(4);
	if (!psp_p)
		return OFX_INVALID_ARG(5);
	ret = ofx_sp_create(ia, OFX_OBJ_PSP, qual, evd, flags, NULL, &sp);
	if (ret == -EADDRINUSE)
		return OFX_DAT_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_PSP);
	*psp_p = sp;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_psp_create_any(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL *qual_p,
			      DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS flags,
			      DAT_PSP_HANDLE *psp_p)
{
	DAT_RETURN status = OFX_DAT_ERR(DAT_CONN_QUAL_UNAVAILABLE, DAT_NO_SUBTYPE);

	if (!qual_p)
		return OFX_INVALID_ARG(2);
	for (DAT_CONN_QUAL q = OFX_PSP_ANY_FIRST; q <= OFX_PSP_ANY_LAST; q++) {
		status = ofx_psp_create(ia_handle, q, evd_handle, flags, psp_p);
		if (DAT_GET_TYPE(status) != DAT_CONN_QUAL_IN_USE) {
			if (status == DAT_SUCCESS)
				*qual_p = q;
			return status;
		}
	}
	return OFX_DAT_ERR(DAT_CONN_QUAL_UNAVAILABLE, DAT_NO_SUBTYPE);
}

DAT_RETURN ofx_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param)
{
	struct ofx_sp *sp = ofx_sp_lookup(psp, OFX_OBJ_PSP);

	if (!sp)
		return ofx_invalid_handle(OFX_OBJ_PSP);
	if (mask & ~DAT_PSP_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	param->ia_handle = ofx_ia_dat_handle(sp->obj.ia);
	param->conn_qual = sp->conn_qual;
	param->evd_handle = sp->evd;
	param->psp_flags = sp->psp_flags;
	return DAT_SUCCESS;
}

/* dat_psp_free and dat_rsp_free: pending CRs are rejected, a reserved EP released. */
static DAT_RETURN sp_free_handle(DAT_HANDLE h, enum ofx_obj_type type)
{
	struct ofx_sp *sp = ofx_sp_lookup(h, type);

	if (!sp)
		return ofx_invalid_handle(type);
	sp_teardown(sp);
	return DAT_SUCCESS;
}

DAT_RETURN ofx_psp_free(DAT_PSP_HANDLE psp)
{
	return sp_free_handle(psp, OFX_OBJ_PSP);
}

DAT_RETURN ofx_rsp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_handle,
			  DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE *rsp_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_handle);
	struct ofx_ep *ep = ofx_ep_from_handle(ep_handle);
	struct ofx_evd *evd = ofx_evd_from_handle(evd_handle);
	struct ofx_sp *sp;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (!evd || !(evd->flags & DAT_EVD_CR_FLAG))
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (!rsp_p)
		return OFX_INVALID_ARG(5);
	pthread_mutex_lock(&ep->lock);
	if (ep->state != OFX_EP_UNCONNECTED) {
		pthread_mutex_unlock(&ep->lock);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	}
	ofx_ep_conn_move(ep, OFX_EP_RESERVED);
	pthread_mutex_unlock(&ep->lock);

	ret = ofx_sp_create(ia, OFX_OBJ_RSP, qual, evd, DAT_PSP_CONSUMER_FLAG, NULL, &sp);
	if (ret) {
		pthread_mutex_lock(&ep->lock);
		ofx_ep_conn_move(ep, OFX_EP_UNCONNECTED);
		pthread_mutex_unlock(&ep->lock);
		if (ret == -EADDRINUSE)
			return OFX_DAT_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE);
		return ofx_dat_status(ret, OFX_OBJ_RSP);
	}
	pthread_mutex_lock(&sp->lock);
	sp->ep = ep;
	pthread_mutex_unlock(&sp->lock);
	ep->rsp = sp;
	*rsp_p = sp;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param)
{
	struct ofx_sp *sp = ofx_sp_lookup(rsp, OFX_OBJ_RSP);

	if (!sp)
		return ofx_invalid_handle(OFX_OBJ_RSP);
	if (mask & ~DAT_RSP_FIELD_ALL)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);
	param->ia_handle = ofx_ia_dat_handle(sp->obj.ia);
	param->conn_qual = sp->conn_qual;
	param->evd_handle = sp->evd;
	param->ep_handle = sp->ep;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_rsp_free(DAT_RSP_HANDLE rsp)
{
	return sp_free_handle(rsp, OFX_OBJ_RSP);
}

static void cr_fill_from_request(struct ofx_cr *cr, struct rdma_cm_event *ev)
{
	const void *data = ev->param.conn.private_data;
	int len = data ? ev->param.conn.private_data_len : 0;
	struct sockaddr *peer = rdma_get_peer_addr(ev->id);

	cr->cm_id = ev->id;
	cr->req_param = ev->param.conn;
	cr->req_param.private_data = NULL;
	if (peer)
		ofx_cm_addr_set(&cr->remote_addr, peer);
	/* our trailer (p2p request) is stripped; anything else is raw consumer data */
	cr->has_hdr = len && !ofx_pdata_decode(data, len, &cr->hdr);
	if (cr->has_hdr)
		len = cr->hdr.consumer_len;
	if (len > (int)sizeof(cr->pdata))
		len = sizeof(cr->pdata);
	if (len)
		memcpy(cr->pdata, data, len);
	cr->pdata_len = len;
}

struct rdma_cm_id *ofx_sp_connect_request(struct ofx_sp *sp, struct rdma_cm_event *ev)
{
	struct ofx_ia *ia = sp->obj.ia;
	struct ofx_cr *cr;

	cr = calloc(1, sizeof(*cr));
	if (!cr) {
		ofx_err("no memory for a connection request on qual %llu",
			(unsigned long long)sp->conn_qual);
		ofx_sp_reject_id(ev->id);
		return ev->id;
	}
	cr_fill_from_request(cr, ev);
	cr->queue = &sp->crq;
	ofx_list_init(&cr->sp_link);
	ofx_obj_init(&cr->obj, OFX_OBJ_CR, ia);
	/* made before sp->lock: object creation takes ia->obj_lock, which comes first */
	if (sp->psp_flags == DAT_PSP_PROVIDER_FLAG) {
		cr->ep = ofx_ep_create_tentative(ia);
		if (!cr->ep) {
			ofx_err("no memory for the ep of a request on qual %llu",
				(unsigned long long)sp->conn_qual);
			goto err_refuse_unlocked;
		}
	}

	pthread_mutex_lock(&sp->lock);
	if (!sp->crq.listening || sp->obj.type == OFX_OBJ_FREED)
		goto err_refuse;
	if (sp->ep) {
		/* an RSP fires once: the reserved EP takes this request */
		pthread_mutex_lock(&sp->ep->lock);
		if (sp->ep->state != OFX_EP_RESERVED) {
			pthread_mutex_unlock(&sp->ep->lock);
			goto err_refuse;
		}
		ofx_ep_conn_move(sp->ep, OFX_EP_PASSIVE_PENDING);
		pthread_mutex_unlock(&sp->ep->lock);
		cr->ep = sp->ep;
		sp->crq.listening = false;
	}
	/* an RSP's EP goes back to RESERVED below; a provider-created one is freed */
	ofx_list_add_tail(&sp->crq.crs, &cr->sp_link);
	if (ofx_evd_post_cr(sp->evd, (DAT_SP_HANDLE){ .psp_handle = sp },
			    (DAT_IA_ADDRESS_PTR)&ia->addr, sp->conn_qual, cr)) {
		ofx_list_del(&cr->sp_link);
		if (cr->ep && !cr->ep->provider_created) {
			pthread_mutex_lock(&cr->ep->lock);
			ofx_ep_conn_move(cr->ep, OFX_EP_RESERVED);
			pthread_mutex_unlock(&cr->ep->lock);
			sp->crq.listening = true;
		}
		goto err_refuse;
	}
	pthread_mutex_unlock(&sp->lock);
	ofx_dbg("cr %p on qual %llu (%d bytes, header %s)", (void *)cr,
		(unsigned long long)sp->conn_qual, cr->pdata_len, cr->has_hdr ? "yes" : "no");
	return NULL;

err_refuse:
	pthread_mutex_unlock(&sp->lock);
err_refuse_unlocked:
	ofx_info("refusing a connection request on qual %llu", (unsigned long long)sp->conn_qual);
	ofx_sp_reject_id(ev->id);
	if (cr->ep && cr->ep->provider_created)
		ofx_ep_destroy(cr->ep);
	ofx_obj_fini(&cr->obj);
	free(cr);
	return ev->id;
}

bool ofx_sp_cr_event(struct ofx_sp *sp, struct rdma_cm_event *ev)
{
	struct ofx_list *pos, *tmp;
	bool found = false;

	pthread_mutex_lock(&sp->lock);
	ofx_list_for_each_safe(pos, tmp, &sp->crq.crs) {
		struct ofx_cr *cr = container_of(pos, struct ofx_cr, sp_link);

		if (cr->cm_id != ev->id)
			continue;
		found = true;
		if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			ofx_info("cr %p: peer gave up before accept (%s)", (void *)cr,
				 rdma_event_str(ev->event));
			cr->dead = true;
		}
		break;
	}
	pthread_mutex_unlock(&sp->lock);
	return found;
}
