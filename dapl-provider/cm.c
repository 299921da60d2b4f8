/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CM
#include "cm.h"
#include "ia_core.h"
#include "log.h"
#include "pdata.h"
#include "progress.h"
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
/* Consumer accept data cap on IB/RoCE, as stock (196 - 36), kept for symmetry. */
#define OFX_REP_CONSUMER_MAX 160
/*
 * iWARP: MPA private data is at most RDMA_MAX_PRIVATE_DATA (256) bytes, and
 * MPA v2 (enhanced connection set-up, RFC 6581) puts its 8 bytes of IRD/ORD
 * first: siw and cxgb4 both refuse more than 248 of the consumer's, in the
 * request and in the reply.  Receivers see the exact length (no padding).
 */
#define OFX_IWARP_PDATA_AREA 248

uint16_t ofx_conn_qual_to_port(DAT_CONN_QUAL qual)
{
	/* same mapping as stock so that both ends agree on large qualifiers */
	if (qual <= 0xFFFF)
		return (uint16_t)qual;
	return (uint16_t)(qual % 32001 + 33534);
}

bool ofx_cm_pads_pdata(const struct ofx_ia *ia)
{
	return ia->transport != OFX_TRANSPORT_IWARP;
}

int ofx_cm_req_area(const struct ofx_ia *ia)
{
	return ia->transport == OFX_TRANSPORT_IWARP ? OFX_IWARP_PDATA_AREA : OFX_IB_REQ_AREA;
}

int ofx_cm_rep_area(const struct ofx_ia *ia)
{
	return ia->transport == OFX_TRANSPORT_IWARP ? OFX_IWARP_PDATA_AREA : OFX_IB_REP_AREA;
}

int ofx_cm_max_pdata(const struct ofx_ia *ia)
{
	/* our trailer is only sent when p2p is requested; reserve it then */
	return ofx_cm_req_area(ia) - (ia->p2p_default ? OFX_PDATA_HDR_LEN : 0);
}

int ofx_cm_max_accept_pdata(const struct ofx_ia *ia, bool reply_has_hdr)
{
	int max = ofx_cm_rep_area(ia) - (reply_has_hdr ? OFX_PDATA_HDR_LEN : 0);

	return max < OFX_REP_CONSUMER_MAX || ia->transport == OFX_TRANSPORT_IWARP ?
	       max : OFX_REP_CONSUMER_MAX;
}

int ofx_cm_qp_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	/*
	 * Not zeroed (144 bytes, two fifths of this function's cost): the
	 * state is rdma_init_qp_attr's one input, and it fills every field
	 * it names in the mask, the only ones modify_qp reads.
	 */
	struct ibv_qp_attr attr;
	int mask = 0, ret;

	attr.qp_state = state;
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

const char *ofx_cm_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a = ss->ss_family == AF_INET6 ?
			(const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr :
			(const void *)&((const struct sockaddr_in *)ss)->sin_addr;

	if (!inet_ntop(ss->ss_family, a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/* ---- cm_id life cycle ------------------------------------------------------ */

int ofx_cm_id_create(struct ofx_ia *ia, struct ofx_cm_handler *h, struct rdma_cm_id **id_p)
{
	int ret;

	if (ofx_verbs->create_id(ia->cm_channel, id_p, h, RDMA_PS_TCP)) {
		ret = -errno;
		ofx_err("rdma_create_id: %m");
		return ret;
	}
	return 0;
}

int ofx_cm_resolve(struct ofx_ia *ia, struct ofx_cm_handler *h,
		   const struct sockaddr_storage *dst, struct rdma_cm_id **id_p)
{
	char buf[INET6_ADDRSTRLEN];
	struct rdma_cm_id *id;
	int ret;

	ret = ofx_cm_id_create(ia, h, &id);
	if (ret)
		return ret;
	if (ia->cfg.tos) {
		uint8_t tos = ia->cfg.tos;

		if (ofx_verbs->set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)))
			ofx_warn("set tos %u: %m", tos);
	}
	*id_p = id;
	if (ofx_verbs->resolve_addr(id, (struct sockaddr *)&ia->addr, (struct sockaddr *)dst,
				    ia->cfg.cm_timeout_ms)) {
		ret = -errno;
		ofx_err("rdma_resolve_addr to %s: %m", ofx_cm_addr_str(dst, buf, sizeof(buf)));
		*id_p = NULL;
		ofx_verbs->destroy_id(id);
		return ret;
	}
	return 0;
}

bool ofx_cm_resolve_retry(struct ofx_ia *ia, struct rdma_cm_id *id, struct rdma_cm_event *ev,
			  const struct sockaddr_storage *dst, unsigned int *retries_p)
{
	int ret;

	if (ev->status != -ETIMEDOUT || *retries_p >= ia->cfg.cm_retries)
		return false;
	(*retries_p)++;
	if (ev->event == RDMA_CM_EVENT_ADDR_ERROR)
		ret = ofx_verbs->resolve_addr(id, (struct sockaddr *)&ia->addr,
					      (struct sockaddr *)dst, ia->cfg.cm_timeout_ms);
	else
		ret = ofx_verbs->resolve_route(id, ia->cfg.cm_timeout_ms);
	if (ret) {
		ofx_warn("retry %u of %s: %m", *retries_p, rdma_event_str(ev->event));
		return false;
	}
	return true;
}

void ofx_cm_id_destroy(struct ofx_ia *ia, struct rdma_cm_id *id)
{
	/*
	 * rdma_destroy_id waits until every event of the id is acked; the
	 * progress thread may be blocked on its owner's lock with one in hand,
	 * hence no lock here.  The barrier also waits out a timer callback of
	 * the owner that is already running.
	 */
	if (id && ofx_verbs->destroy_id(id))
		ofx_warn("rdma_destroy_id: %m");
	ofx_progress_barrier(ia->progress);
}

/* ---- dispatch ---------------------------------------------------------------- */

static void dispatch(struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p)
{
	/* a request arrives on the listener's id: its handler takes it */
	struct rdma_cm_id *id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->listen_id : ev->id;
	struct ofx_cm_handler *h = id->context;

	while (h) {
		struct ofx_cm_handler *now;

		if (h->fn(h->ctx, ev, destroy_p))
			return;
		/* the id changed hands meanwhile (a CR accepted or handed off) */
		now = id->context;
		if (now == h)
			break;
		h = now;
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
