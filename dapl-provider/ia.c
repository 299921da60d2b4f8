/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_IA
#include "ia.h"

#include "cm.h"
#include "cno.h"
#include "cr.h"
#include "ep.h"
#include "ep_recv.h"
#include "evd.h"
#include "instance.h"
#include "lmr.h"
#include "log.h"
#include "progress.h"
#include "pz.h"
#include "rmr.h"
#include "sp.h"
#include "srq.h"
#include "status.h"
#include "verbs.h"
#include "xrc.h"

#include <arpa/inet.h>
#include <dat2/dat_ib_extensions.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define OFX_ASYNC_QLEN_MIN 8
/* Provider-specific attributes reported by ia_query. */
#define OFX_IA_NATTR 23
#define OFX_IA_ATTR_LEN 48

/*
 * What the IA needs beyond struct ofx_ia and nobody else reads: its place
 * on the process-wide IA list (device async events are broadcast to every
 * IA on the device, since all IAs of a device share its async fd) and the
 * storage behind the provider-specific attributes that ia_query returns.
 */
struct ofx_ia_priv {
	struct ofx_ia ia;
	struct ofx_list all_link;	/* in ofx_ias, guarded by ofx_ias_lock */

	pthread_mutex_t attr_lock;	/* guards attrs and values (leaf) */
	DAT_NAMED_ATTR attrs[OFX_IA_NATTR];
	char values[OFX_IA_NATTR][OFX_IA_ATTR_LEN];
};
_Static_assert(offsetof(struct ofx_ia_priv, ia) == 0, "struct ofx_ia_priv: ia must be first");

static pthread_mutex_t ofx_ias_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofx_list ofx_ias = { &ofx_ias, &ofx_ias };

static struct ofx_ia_priv *ofx_ia_priv(struct ofx_ia *ia)
{
	return container_of(ia, struct ofx_ia_priv, ia);
}

static const char *ofx_ia_dev_name(const struct ofx_ia *ia)
{
	return ofx_verbs_dev_name(ia->verbs);
}

static const char *ofx_transport_str(enum ofx_transport t)
{
	switch (t) {
	case OFX_TRANSPORT_IB:
		return "IB";
	case OFX_TRANSPORT_ROCE:
		return "RoCE";
	case OFX_TRANSPORT_IWARP:
		return "iWARP";
	}
	return "unknown";
}

/*
 * `fn` on every IA open on the device (and port, if given), under the IA
 * list's lock: an IA leaves the list before ia_close tears it down.
 */
static void ofx_ia_for_each_on(struct ibv_context *verbs, uint8_t port,
			       void (*fn)(struct ofx_ia *ia, void *arg), void *arg)
{
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_ias) {
		struct ofx_ia *ia = &container_of(pos, struct ofx_ia_priv, all_link)->ia;

		if (ia->verbs != verbs || (port && ia->port_num != port))
			continue;
		fn(ia, arg);
	}
	pthread_mutex_unlock(&ofx_ias_lock);
}

static void ofx_ia_post_own_async(struct ofx_ia *ia, void *num_p)
{
	ofx_ia_post_async(ia, *(DAT_EVENT_NUMBER *)num_p, ofx_ia_dat_handle(ia));
}

/* Device-wide events go to every IA open on the device (and port, if given). */
static void ofx_ia_broadcast(struct ibv_context *verbs, uint8_t port, DAT_EVENT_NUMBER num)
{
	ofx_ia_for_each_on(verbs, port, ofx_ia_post_own_async, &num);
}

/* The port's addressing or its subnet manager changed: IB paths kept may be wrong. */
static void ofx_ia_port_changed(struct ofx_ia *ia, void *unused)
{
	(void)unused;
	if (ia->xrc)
		ofx_xrc_port_changed(ia);
}

/*
 * Posts `num` about `obj` to its IA's async EVD, if `obj` is a live object
 * of `type` on one of our open IAs.  librdmacm shares one verbs context (and
 * so one async fd) per device among everything in the process, so an event
 * may carry another library's context pointer (stock libdaplofa loaded next
 * to us, for example): it is only dereferenced after the check.
 */
static bool ofx_ia_post_owned(struct ofx_obj *obj, enum ofx_obj_type type, DAT_EVENT_NUMBER num)
{
	struct ofx_list *pos, *tmp;
	bool found = false;

	if (!obj)
		return false;
	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_ias) {
		struct ofx_ia *ia = &container_of(pos, struct ofx_ia_priv, all_link)->ia;

		if (obj->ia == ia && obj->type == type && obj->provider == ia->obj.provider) {
			ofx_ia_post_async(ia, num, (DAT_HANDLE)obj);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ofx_ias_lock);
	return found;
}

/* The EP behind a QP's context, or NULL if the QP is not one of ours. */
static struct ofx_ep *ofx_ia_qp_ep(struct ibv_qp *qp)
{
	struct ofx_list *pos, *tmp;
	struct ofx_obj *obj = qp->qp_context;
	struct ofx_ep *ep = NULL;

	if (!obj)
		return NULL;
	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_ias) {
		struct ofx_ia *ia = &container_of(pos, struct ofx_ia_priv, all_link)->ia;

		if (obj->ia == ia && obj->type == OFX_OBJ_EP) {
			ep = container_of(obj, struct ofx_ep, obj);
			break;
		}
	}
	pthread_mutex_unlock(&ofx_ias_lock);
	return ep;
}

/* The SRQ behind an SRQ's context, or NULL if the SRQ is not one of ours. */
static struct ofx_srq *ofx_ia_srq(struct ibv_srq *vsrq)
{
	struct ofx_list *pos, *tmp;
	struct ofx_obj *obj = vsrq->srq_context;
	struct ofx_srq *srq = NULL;

	if (!obj)
		return NULL;
	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_ias) {
		struct ofx_ia *ia = &container_of(pos, struct ofx_ia_priv, all_link)->ia;

		if (obj->ia == ia && obj->type == OFX_OBJ_SRQ) {
			srq = container_of(obj, struct ofx_srq, obj);
			break;
		}
	}
	pthread_mutex_unlock(&ofx_ias_lock);
	return srq;
}

static bool ofx_ia_xrc_owns_qp(struct ofx_ia *ia, const struct ibv_async_event *ev)
{
	return ofx_xrc_owns_qp(ia, ev->element.qp);
}

static bool ofx_ia_xrc_owns_srq(struct ofx_ia *ia, const struct ibv_async_event *ev)
{
	return ofx_xrc_owns_srq(ia, ev->element.srq);
}

/* `handle` on this IA or else on the IA of the device that `owns` the element. */
static bool ofx_ia_xrc_dispatch(struct ofx_ia *ia, const struct ibv_async_event *ev,
				bool (*owns)(struct ofx_ia *, const struct ibv_async_event *),
				bool (*handle)(struct ofx_ia *, const struct ibv_async_event *))
{
	struct ofx_list *pos, *tmp;
	struct ofx_ia *owner = NULL;

	if (handle(ia, ev))
		return true;
	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_ias) {
		struct ofx_ia *o = &container_of(pos, struct ofx_ia_priv, all_link)->ia;

		if (o != ia && o->verbs == ia->verbs && owns(o, ev))
			owner = o;
	}
	pthread_mutex_unlock(&ofx_ias_lock);
	/* the QP or SRQ cannot go before this event is acknowledged: owner stays open */
	return owner && handle(owner, ev);
}

/*
 * XRC INI and TGT QPs carry xrc.c's contexts, not a struct ofx_obj: xrc.c
 * finds them in the tables of the IA that made it, which may be another IA
 * on the same (shared) device context.  True if the event was an XRC QP's.
 */
static bool ofx_ia_xrc_qp_event(struct ofx_ia *ia, struct ibv_async_event *ev)
{
	enum ibv_qp_type type = ev->element.qp->qp_type;

	if (type != IBV_QPT_XRC_SEND && type != IBV_QPT_XRC_RECV)
		return false;
	if (!ofx_ia_xrc_dispatch(ia, ev, ofx_ia_xrc_owns_qp, ofx_xrc_qp_event))
		ofx_dbg("device %s: %s on foreign xrc qp 0x%x", ofx_ia_dev_name(ia),
			ibv_event_type_str(ev->event_type), ev->element.qp->qp_num);
	return true;
}

/*
 * A fatal error of a QP whose failed work request was the provider's own RTR
 * nudge: the peer's close crossed it, and the connection's CM event reports
 * its end.  An async EP_BROKEN would call a graceful end fatal.
 */
static bool qp_fatal_was_nudge(struct ofx_ia *ia, struct ibv_qp *qp)
{
	struct ofx_ep *ep = ofx_ia_qp_ep(qp);

	if (!ep || !ofx_ep_fatal_was_nudge(ep))
		return false;
	ofx_info("device %s: qp 0x%x (ep %p) failed on an rtr nudge as the peer closed: "
		 "not an async error", ofx_ia_dev_name(ia), qp->qp_num, (void *)ep);
	return true;
}

bool ofx_ia_qp_event_is_failure(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_QP_LAST_WQE_REACHED:	/* unless the EP's receives are an SRQ's */
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		return true;
	default:
		/*
		 * SQ_DRAINED says the send queue is empty: IB raises it for a
		 * move to SQD, which we never ask for; siw raises it whenever
		 * its move to error or closing flushed queued requests (a peer
		 * that closed while a nudge or the consumer's sends were still
		 * queued, seen in the fault suite's hangup_soon), which the
		 * flushed completions and the connection's CM event report.
		 * COMM_EST: rdma_cm completes the connection; PATH_MIG*: no
		 * path migration is set up.
		 */
		return false;
	}
}

/* An RC QP's affiliated event: a failure is the EP's ASYNC_ERROR_EP_BROKEN. */
static void qp_event(struct ofx_ia *ia, struct ibv_async_event *ev, const char *what)
{
	if (!ofx_ia_qp_event_is_failure(ev->event_type)) {
		ofx_dbg("device %s: %s on qp 0x%x", ofx_ia_dev_name(ia), what,
			ev->element.qp->qp_num);
		return;
	}
	if (ev->event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
		struct ofx_ep *ep = ofx_ia_qp_ep(ev->element.qp);

		/* normal on an SRQ EP whose QP went to error (ep_srq.c) */
		if (ep && ep->recv->last_wqe(ep))
			return;
	}
	if (ev->event_type == IBV_EVENT_QP_FATAL && qp_fatal_was_nudge(ia, ev->element.qp))
		return;
	if (ofx_ia_post_owned(ev->element.qp->qp_context, OFX_OBJ_EP, DAT_ASYNC_ERROR_EP_BROKEN))
		ofx_warn("device %s: %s on qp 0x%x (ep %p)", ofx_ia_dev_name(ia), what,
			 ev->element.qp->qp_num, ev->element.qp->qp_context);
	else
		ofx_dbg("device %s: %s on foreign qp 0x%x", ofx_ia_dev_name(ia), what,
			ev->element.qp->qp_num);
}

/*
 * Contract 3.2 "Async".  The context pointers are ours when the object is:
 * qp_context is the struct ofx_ep, cq_context the struct ofx_evd,
 * srq_context the SRQ object (any struct starting with struct ofx_obj).  The
 * caller acknowledges the event after this returns, which is what lets
 * those objects' destroy calls wait for us.
 */
void ofx_ia_async_event(struct ofx_ia *ia, struct ibv_async_event *ev)
{
	const char *what = ibv_event_type_str(ev->event_type);
	struct ofx_srq *srq;

	switch (ev->event_type) {
	case IBV_EVENT_QP_LAST_WQE_REACHED:
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
		if (!ofx_ia_xrc_qp_event(ia, ev))
			qp_event(ia, ev, what);
		break;
	case IBV_EVENT_CQ_ERR:
		if (ofx_ia_post_owned(ev->element.cq->cq_context, OFX_OBJ_EVD,
				      DAT_ASYNC_ERROR_EVD_OVERFLOW))
			ofx_warn("device %s: %s on cq %p (evd %p)", ofx_ia_dev_name(ia), what,
				 (void *)ev->element.cq, ev->element.cq->cq_context);
		else
			ofx_dbg("device %s: %s on foreign cq %p", ofx_ia_dev_name(ia), what,
				(void *)ev->element.cq);
		break;
	case IBV_EVENT_SRQ_ERR:
		/* an XRC SRQ's context is its EP: xrc.c knows it by the SRQ */
		if (ofx_ia_xrc_dispatch(ia, ev, ofx_ia_xrc_owns_srq, ofx_xrc_srq_event))
			break;
		if (ofx_ia_post_owned(ev->element.srq->srq_context, OFX_OBJ_SRQ,
				      DAT_ASYNC_ERROR_EP_BROKEN))
			ofx_warn("device %s: %s on srq %p (srq %p)", ofx_ia_dev_name(ia), what,
				 (void *)ev->element.srq, ev->element.srq->srq_context);
		else
			ofx_dbg("device %s: %s on foreign srq %p", ofx_ia_dev_name(ia), what,
				(void *)ev->element.srq);
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		/* the low watermark armed by dat_srq_set_lw (srq.h) */
		srq = ofx_ia_srq(ev->element.srq);
		if (srq)
			ofx_srq_limit_reached(srq);
		else
			ofx_dbg("device %s: %s on foreign srq %p", ofx_ia_dev_name(ia), what,
				(void *)ev->element.srq);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		ofx_err("device %s: %s", ofx_ia_dev_name(ia), what);
		ofx_ia_broadcast(ia->verbs, 0, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
		break;
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
		ofx_err("device %s port %d: %s", ofx_ia_dev_name(ia), ev->element.port_num, what);
		ofx_ia_for_each_on(ia->verbs, ev->element.port_num, ofx_ia_port_changed, NULL);
		ofx_ia_broadcast(ia->verbs, ev->element.port_num, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		ofx_info("device %s port %d: %s", ofx_ia_dev_name(ia), ev->element.port_num, what);
		ofx_ia_for_each_on(ia->verbs, ev->element.port_num, ofx_ia_port_changed, NULL);
		break;
	default:
		ofx_dbg("device %s: %s ignored", ofx_ia_dev_name(ia), what);
		break;
	}
}

void ofx_ia_process_async(void *arg)
{
	struct ofx_ia *ia = arg;
	struct ibv_async_event ev;

	/* The fd is non-blocking and may be shared with other IAs' threads. */
	while (!ibv_get_async_event(ia->verbs, &ev)) {
		ofx_ia_async_event(ia, &ev);
		ibv_ack_async_event(&ev);
	}
	if (errno != EAGAIN)
		ofx_warn("device %s: ibv_get_async_event: %m", ofx_ia_dev_name(ia));
}

/* Contract 4.1: a netdev, then a numeric address, then this host's own name. */
static int ofx_ia_resolve_device(const char *device, struct sockaddr_storage *addr_p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char host[HOST_NAME_MAX + 1];
	struct ifreq ifr;
	int fd, if_errno = ENODEV;

	if (strlen(device) < IFNAMSIZ) {
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ofx_err("device %s: socket: %m", device);
			return -errno;
		}
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, device);
		ifr.ifr_addr.sa_family = AF_INET;
		if (!ioctl(fd, SIOCGIFADDR, &ifr)) {
			close(fd);
			memset(addr_p, 0, sizeof(*addr_p));
			memcpy(addr_p, &ifr.ifr_addr, sizeof(struct sockaddr_in));
			return 0;
		}
		if_errno = errno;
		close(fd);
	}

	hints.ai_flags = AI_NUMERICHOST;
	if (!getaddrinfo(device, NULL, &hints, &res)) {
		memset(addr_p, 0, sizeof(*addr_p));
		memcpy(addr_p, res->ai_addr, res->ai_addrlen);
		freeaddrinfo(res);
		return 0;
	}

	if (!gethostname(host, sizeof(host)) && !strcmp(host, device)) {
		hints.ai_flags = AI_CANONNAME;
		if (!getaddrinfo(device, NULL, &hints, &res)) {
			/* Prefer IPv4: dtest reads the IA address as AF_INET. */
			for (ai = res; ai->ai_next && ai->ai_family != AF_INET; ai = ai->ai_next)
				;
			if (ai->ai_family != AF_INET)
				ai = res;
			memset(addr_p, 0, sizeof(*addr_p));
			memcpy(addr_p, ai->ai_addr, ai->ai_addrlen);
			freeaddrinfo(res);
			return 0;
		}
		ofx_err("device %s: this host's name does not resolve", device);
		return -EADDRNOTAVAIL;
	}

	if (if_errno == EADDRNOTAVAIL)
		ofx_err("device %s: interface has no ipv4 address", device);
	else
		ofx_err("device %s is not a network interface, an ip address or this host's name",
			device);
	return -EADDRNOTAVAIL;
}

static int ofx_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void ofx_ia_device_close(struct ofx_ia *ia)
{
	if (ia->bind_id && ofx_verbs->destroy_id(ia->bind_id))
		ofx_warn("device %s: rdma_destroy_id: %m", ofx_ia_dev_name(ia));
	ia->bind_id = NULL;
	if (ia->cm_channel)
		ofx_verbs->destroy_event_channel(ia->cm_channel);
	ia->cm_channel = NULL;
}

/*
 * Pins the device and port behind the IA address with a cm_id bound to it
 * (port 0), and reads their attributes.
 */
static int ofx_ia_device_open(struct ofx_ia *ia)
{
	char addr_str[INET6_ADDRSTRLEN] = "?";
	struct sockaddr_storage bind_addr = ia->addr;
	const void *sin_addr;
	int ret;

	if (ia->addr.ss_family == AF_INET6) {
		sin_addr = &((struct sockaddr_in6 *)&ia->addr)->sin6_addr;
		((struct sockaddr_in6 *)&bind_addr)->sin6_port = 0;
	} else {
		sin_addr = &((struct sockaddr_in *)&ia->addr)->sin_addr;
		((struct sockaddr_in *)&bind_addr)->sin_port = 0;
	}
	inet_ntop(ia->addr.ss_family, sin_addr, addr_str, sizeof(addr_str));

	ia->cm_channel = ofx_verbs->create_event_channel();
	if (!ia->cm_channel) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("ia %s: rdma_create_event_channel: %m", ia->prov->name);
		goto err;
	}
	ret = ofx_set_nonblock(ia->cm_channel->fd);
	if (ret) {
		errno = -ret;
		ofx_err("ia %s: cm channel fd %d: O_NONBLOCK: %m", ia->prov->name,
			ia->cm_channel->fd);
		goto err_close;
	}
	if (ofx_verbs->create_id(ia->cm_channel, &ia->bind_id, &ia->obj, RDMA_PS_TCP)) {
		ret = -errno;
		ofx_err("ia %s: rdma_create_id: %m", ia->prov->name);
		goto err_close;
	}
	if (ofx_verbs->bind_addr(ia->bind_id, (struct sockaddr *)&bind_addr)) {
		ret = -errno;
		ofx_err("ia %s: rdma_bind_addr %s: %m", ia->prov->name, addr_str);
		if (ret == -ENODEV || ret == -EINVAL)
			ret = -EADDRNOTAVAIL;
		goto err_close;
	}
	if (!ia->bind_id->verbs) {
		ret = -EADDRNOTAVAIL;
		ofx_err("ia %s: address %s (device %s) is not on an rdma device", ia->prov->name,
			addr_str, ia->prov->device);
		goto err_close;
	}
	ia->verbs = ia->bind_id->verbs;
	ia->port_num = ia->bind_id->port_num;

	ret = ibv_query_device(ia->verbs, &ia->dev_attr);
	if (ret) {
		ret = -ret;
		errno = -ret;
		ofx_err("device %s: ibv_query_device: %m", ofx_ia_dev_name(ia));
		goto err_close;
	}
	ret = ibv_query_port(ia->verbs, ia->port_num, &ia->port_attr);
	if (ret) {
		ret = -ret;
		errno = -ret;
		ofx_err("device %s port %u: ibv_query_port: %m", ofx_ia_dev_name(ia),
			ia->port_num);
		goto err_close;
	}

	if (ia->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		ia->transport = OFX_TRANSPORT_IWARP;
	else if (ia->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET)
		ia->transport = OFX_TRANSPORT_ROCE;
	else
		ia->transport = OFX_TRANSPORT_IB;
	ia->wc_inv_kernel_bit = ia->dev_attr.vendor_id == OFX_RXE_VENDOR_ID;
	ia->read_rtr_unsafe = ia->dev_attr.vendor_id == OFX_SIW_VENDOR_ID;

	ofx_info("ia %s: %s on device %s port %u (%s)", ia->prov->name, addr_str,
		 ofx_ia_dev_name(ia), ia->port_num, ofx_transport_str(ia->transport));
	return 0;

err_close:
	ofx_ia_device_close(ia);
	ia->verbs = NULL;
err:
	return ret;
}

/* Verbs destroy calls return an errno value, not -1: make %m print it. */
static bool ofx_verbs_failed(int ret)
{
	if (ret > 0)
		errno = ret;
	return ret != 0;
}

static void ofx_ia_probe_fini(struct ofx_ia *ia)
{
	if (ia->empty_cq && ofx_verbs_failed(ofx_verbs->destroy_cq(ia->empty_cq)))
		ofx_warn("device %s: ibv_destroy_cq (empty cq): %m", ofx_ia_dev_name(ia));
	ia->empty_cq = NULL;
	if (ia->empty_pd && ofx_verbs_failed(ofx_verbs->dealloc_pd(ia->empty_pd)))
		ofx_warn("device %s: ibv_dealloc_pd (empty pd): %m", ofx_ia_dev_name(ia));
	ia->empty_pd = NULL;
}

static struct ibv_qp *ofx_ia_probe_qp(struct ofx_ia *ia, unsigned int max_inline)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_RC,
		.send_cq = ia->empty_cq,
		.recv_cq = ia->empty_cq,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = max_inline,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ia->empty_pd,
	};

	return ofx_verbs->create_qp_ex(ia->verbs, &attr);
}

/*
 * Creates the empty PD and 1-entry CQ that EP sides without an EVD use, and
 * finds the inline threshold: cfg.max_inline if an RC QP accepts it, else 0.
 */
static int ofx_ia_probe(struct ofx_ia *ia)
{
	struct ibv_qp *qp;
	uint32_t qp_num;
	const char *why;
	int ret;

	ia->empty_pd = ofx_verbs->alloc_pd(ia->verbs);
	if (!ia->empty_pd) {
		ret = errno ? -errno : -ENOMEM;
		ofx_err("device %s: ibv_alloc_pd: %m", ofx_ia_dev_name(ia));
		goto err;
	}
	errno = 0;
	ia->empty_cq = ofx_verbs->create_cq(ia->verbs, 1, NULL, NULL, 0);
	if (!ia->empty_cq) {
		ret = ofx_verbs_create_failed(&why);
		ofx_err("device %s: ibv_create_cq (empty cq): %s", ofx_ia_dev_name(ia), why);
		goto err_fini;
	}

	ia->max_inline = ia->cfg.max_inline;
	errno = 0;
	qp = ofx_ia_probe_qp(ia, ia->max_inline);
	if (!qp && ia->max_inline) {
		ofx_info("device %s: no rc qp with %u bytes inline (%m): inline sends off",
			 ofx_ia_dev_name(ia), ia->max_inline);
		ia->max_inline = 0;
		errno = 0;
		qp = ofx_ia_probe_qp(ia, 0);
	}
	if (!qp) {
		ret = ofx_verbs_create_failed(&why);
		ofx_err("device %s: cannot create an rc qp: %s", ofx_ia_dev_name(ia), why);
		goto err_fini;
	}
	qp_num = qp->qp_num;
	if (ofx_verbs_failed(ofx_verbs->destroy_qp(qp)))
		ofx_warn("device %s: ibv_destroy_qp (probe qp 0x%x): %m", ofx_ia_dev_name(ia),
			 qp_num);
	return 0;

err_fini:
	ofx_ia_probe_fini(ia);
err:
	return ret;
}

/* xrc=on needs the device capability; auto falls back to RC without it. */
static int ofx_ia_check_xrc(struct ofx_ia *ia)
{
	bool has_xrc = ia->dev_attr.device_cap_flags & IBV_DEVICE_XRC;

	if (ia->cfg.xrc == OFX_ON && !has_xrc) {
		ofx_err("device %s has no XRC; xrc=on refused", ofx_ia_dev_name(ia));
		return -EOPNOTSUPP;
	}
	if (ia->cfg.xrc == OFX_AUTO && !has_xrc)
		ofx_info("device %s has no XRC: falling back to RC", ofx_ia_dev_name(ia));
	ia->xrc = ia->cfg.xrc != OFX_OFF && has_xrc;
	return 0;
}

DAT_RETURN ofx_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE *async_evd_p,
		       DAT_IA_HANDLE *ia_p)
{
	struct ofx_provider *prov;
	struct ofx_ia_priv *priv;
	struct ofx_ia *ia;
	DAT_RETURN status;
	int ret;

	if (!name)
		return OFX_INVALID_ARG(1);
	if (!ia_p)
		return OFX_INVALID_ARG(4);
	prov = ofx_provider_find(name);
	if (!prov) {
		ofx_err("ia %s: not registered with this provider", name);
		return OFX_DAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	}
	if (prov->params_error) {
		ofx_err("ia %s: unusable ia_params in dat.conf (see the earlier error)", name);
		return OFX_INVALID_ARG(1);
	}

	priv = calloc(1, sizeof(*priv));
	if (!priv) {
		ofx_err("ia %s: out of memory", name);
		return OFX_DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	ia = &priv->ia;
	ia->prov = prov;
	ia->obj.provider = &prov->dat;
	ofx_obj_init(&ia->obj, OFX_OBJ_IA, ia);
	pthread_mutex_init(&ia->obj_lock, NULL);
	ofx_rmr_index_init(&ia->rmr_index);
	ofx_list_init(&ia->objects);
	ofx_list_init(&ia->zombies);
	pthread_mutex_init(&priv->attr_lock, NULL);
	ofx_list_init(&priv->all_link);

	ofx_config_defaults(&ia->cfg);
	if (ofx_config_resolve(prov->options, &ia->cfg, NULL, 0)) {
		status = OFX_INVALID_ARG(1);
		goto err_free;
	}
	if (ia->cfg.print_config)
		ofx_config_print(stderr, &ia->cfg);

	ret = ofx_ia_resolve_device(prov->device, &ia->addr);
	if (ret) {
		status = OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_NO_SUBTYPE);
		goto err_free;
	}
	ret = ofx_ia_device_open(ia);
	if (ret) {
		status = ofx_dat_status(ret, OFX_OBJ_IA);
		goto err_free;
	}
	ret = ofx_ia_check_xrc(ia);
	if (ret) {
		status = OFX_DAT_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
		goto err_close_device;
	}
	if (ia->xrc) {
		ret = ofx_xrc_ia_open(ia);
		if (ret) {
			status = ofx_dat_status(ret, OFX_OBJ_IA);
			goto err_close_device;
		}
	}
	ia->p2p_default = ia->cfg.p2p == OFX_ON ||
			  (ia->cfg.p2p == OFX_AUTO && ia->transport == OFX_TRANSPORT_IWARP);
	ia->rtr_nudge = ia->cfg.rtr_nudge == OFX_ON ||
			(ia->cfg.rtr_nudge == OFX_AUTO && ia->dev_attr.vendor_id == OFX_SIW_VENDOR_ID);
	ret = ofx_ia_probe(ia);
	if (ret) {
		status = ofx_dat_status(ret, OFX_OBJ_IA);
		goto err_close_device;
	}

	ret = ofx_evd_create_internal(ia, async_qlen > OFX_ASYNC_QLEN_MIN ? async_qlen :
				      OFX_ASYNC_QLEN_MIN, DAT_EVD_ASYNC_FLAG, &ia->async_evd);
	if (ret) {
		status = ofx_dat_status(ret, OFX_OBJ_EVD);
		goto err_probe_fini;
	}
	ofx_evd_get(ia->async_evd);

	ret = ofx_set_nonblock(ia->verbs->async_fd);
	if (ret) {
		errno = -ret;
		ofx_err("device %s: async fd %d: O_NONBLOCK: %m", ofx_ia_dev_name(ia),
			ia->verbs->async_fd);
		status = ofx_dat_status(ret, OFX_OBJ_IA);
		goto err_destroy_async_evd;
	}
	ret = ofx_progress_start(&ia->progress, prov->name);
	if (ret) {
		status = ofx_dat_status(ret, OFX_OBJ_IA);
		goto err_destroy_async_evd;
	}
	ret = ofx_progress_add_fd(ia->progress, ia->cm_channel->fd, ofx_cm_process_events, ia);
	if (!ret)
		ret = ofx_progress_add_fd(ia->progress, ia->verbs->async_fd, ofx_ia_process_async,
					  ia);
	if (ret) {
		status = ofx_dat_status(ret, OFX_OBJ_IA);
		goto err_stop_progress;
	}

	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_add_tail(&ofx_ias, &priv->all_link);
	pthread_mutex_unlock(&ofx_ias_lock);

	ofx_dbg("ia %s: open as %p, max_inline %u, p2p %s, xrc %s", name, (void *)ia,
		ia->max_inline, ia->p2p_default ? "on" : "off", ia->xrc ? "on" : "off");
	if (async_evd_p)
		*async_evd_p = (DAT_EVD_HANDLE)ia->async_evd;
	*ia_p = (DAT_IA_HANDLE)ia;
	return DAT_SUCCESS;

err_stop_progress:
	ofx_progress_stop(ia->progress);
	ia->progress = NULL;
err_destroy_async_evd:
	ofx_evd_put(ia->async_evd);
	ofx_evd_destroy(ia->async_evd);
	ia->async_evd = NULL;
err_probe_fini:
	ofx_ia_probe_fini(ia);
err_close_device:
	ofx_xrc_ia_close(ia);
	ofx_ia_device_close(ia);
err_free:
	ofx_obj_fini(&ia->obj);
	pthread_mutex_destroy(&priv->attr_lock);
	ofx_rmr_index_fini(&ia->rmr_index);
	pthread_mutex_destroy(&ia->obj_lock);
	free(priv);
	return status;
}

static bool ofx_ia_is_async_evd(const struct ofx_ia *ia, const struct ofx_obj *obj)
{
	return ia->async_evd && obj == &ia->async_evd->obj;
}

/* The first object of `type` still on the IA (the async EVD excepted). */
static struct ofx_obj *ofx_ia_first(struct ofx_ia *ia, enum ofx_obj_type type)
{
	struct ofx_obj *found = NULL;
	struct ofx_list *pos, *tmp;

	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);

		if (obj->type == type && !ofx_ia_is_async_evd(ia, obj)) {
			found = obj;
			break;
		}
	}
	pthread_mutex_unlock(&ia->obj_lock);
	return found;
}

static void ofx_ia_destroy_obj(struct ofx_obj *obj)
{
	switch (obj->type) {
	case OFX_OBJ_EP:
		ofx_ep_destroy(container_of(obj, struct ofx_ep, obj));
		break;
	case OFX_OBJ_CR:
		ofx_cr_destroy(container_of(obj, struct ofx_cr, obj));
		break;
	case OFX_OBJ_PSP:
	case OFX_OBJ_RSP:
	case OFX_OBJ_CSP:
		ofx_sp_destroy(container_of(obj, struct ofx_sp, obj));
		break;
	case OFX_OBJ_LMR:
		ofx_lmr_destroy(container_of(obj, struct ofx_lmr, obj));
		break;
	case OFX_OBJ_EVD:
		ofx_evd_destroy(container_of(obj, struct ofx_evd, obj));
		break;
	case OFX_OBJ_PZ:
		ofx_pz_destroy(container_of(obj, struct ofx_pz, obj));
		break;
	case OFX_OBJ_RMR:
		ofx_rmr_destroy(container_of(obj, struct ofx_rmr, obj));
		break;
	case OFX_OBJ_CNO:
		ofx_cno_destroy(container_of(obj, struct ofx_cno, obj));
		break;
	case OFX_OBJ_SRQ:
		ofx_srq_destroy(container_of(obj, struct ofx_srq, obj));
		break;
	default:
		/* No destructor: forget it, leaking its memory. */
		ofx_warn("ia %s: cannot destroy leftover %s %p", obj->ia->prov->name,
			 ofx_obj_type_str(obj->type), (void *)obj);
		ofx_ia_unlink(obj->ia, obj);
		break;
	}
}

/*
 * Destroys every leftover object, dependents before what they depend on.
 * The progress thread is already stopped, so no handler races with this.
 */
/* EPs freed while their EVD was full: every CQ is gone now, so is the risk. */
static void ofx_ia_free_zombies(struct ofx_ia *ia)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &ia->zombies) {
		ofx_list_del(pos);
		ofx_ep_free_zombie(container_of(pos, struct ofx_obj, ia_link));
	}
}

static void ofx_ia_destroy_leftovers(struct ofx_ia *ia)
{
	/* a CR first: it still refers to its RSP or provider-created EP */
	static const enum ofx_obj_type order[] = {
		OFX_OBJ_CR, OFX_OBJ_EP, OFX_OBJ_PSP, OFX_OBJ_RSP, OFX_OBJ_CSP, OFX_OBJ_SRQ,
		OFX_OBJ_RMR, OFX_OBJ_LMR, OFX_OBJ_EVD, OFX_OBJ_CNO, OFX_OBJ_PZ,
	};
	struct ofx_obj *obj, *prev;
	size_t i;

	for (i = 0; i < OFX_ARRAY_SIZE(order); i++) {
		prev = NULL;
		while ((obj = ofx_ia_first(ia, order[i]))) {
			if (obj == prev) {
				/* A destructor that did not unlink must not loop us forever. */
				ofx_warn("ia %s: %s %p survived its destruction",
					 ia->prov->name, ofx_obj_type_str(obj->type), (void *)obj);
				ofx_ia_unlink(ia, obj);
				continue;
			}
			prev = obj;
			ofx_dbg("ia %s: destroying leftover %s %p", ia->prov->name,
				ofx_obj_type_str(obj->type), (void *)obj);
			ofx_ia_destroy_obj(obj);
		}
	}
}

static bool ofx_ia_in_use(struct ofx_ia *ia)
{
	struct ofx_list *pos, *tmp;
	bool busy = false;

	pthread_mutex_lock(&ia->obj_lock);
	ofx_list_for_each_safe(pos, tmp, &ia->objects) {
		struct ofx_obj *obj = container_of(pos, struct ofx_obj, ia_link);

		if (!ofx_ia_is_async_evd(ia, obj)) {
			busy = true;
			break;
		}
	}
	pthread_mutex_unlock(&ia->obj_lock);
	return busy;
}

static void ofx_ia_log_stats(struct ofx_ia *ia)
{
	ofx_warn("stats: ia %s rtr_sent %lu rtr_received %lu conn_active %lu conn_passive %lu "
		 "conn_p2p %lu", ia->prov->name, atomic_load(&ia->stats.rtr_sent),
		 atomic_load(&ia->stats.rtr_received), atomic_load(&ia->stats.conn_active),
		 atomic_load(&ia->stats.conn_passive), atomic_load(&ia->stats.conn_p2p));
}

DAT_RETURN ofx_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct ofx_ia *ia = ofx_ia_lookup(h);
	struct ofx_ia_priv *priv;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return OFX_INVALID_ARG(2);
	priv = ofx_ia_priv(ia);

	if (flags == DAT_CLOSE_GRACEFUL_FLAG && ofx_ia_in_use(ia)) {
		ofx_dbg("ia %s: graceful close refused, objects remain", ia->prov->name);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE);
	}

	/*
	 * XRC connections end while the progress thread still delivers their
	 * peers' DISCs (a no-op for an IA without XRC; see ofx_xrc_ia_quiesce).
	 */
	ofx_xrc_ia_quiesce(ia);

	/* No more device events in, then no more handlers running. */
	pthread_mutex_lock(&ofx_ias_lock);
	ofx_list_del(&priv->all_link);
	pthread_mutex_unlock(&ofx_ias_lock);
	ofx_progress_stop(ia->progress);
	ia->progress = NULL;

	/* the async EVD outlives the leftovers, so it lets go of a CNO first */
	ofx_evd_modify_cno((DAT_EVD_HANDLE)ia->async_evd, DAT_HANDLE_NULL);
	ofx_ia_destroy_leftovers(ia);
	ofx_ia_free_zombies(ia);
	ofx_xrc_ia_close(ia);

	if (ia->cfg.stats)
		ofx_ia_log_stats(ia);

	ofx_evd_put(ia->async_evd);
	ofx_evd_destroy(ia->async_evd);
	ia->async_evd = NULL;
	ofx_ia_probe_fini(ia);
	ofx_ia_device_close(ia);

	ofx_dbg("ia %s: closed %p", ia->prov->name, (void *)ia);
	ofx_obj_fini(&ia->obj);
	pthread_mutex_destroy(&priv->attr_lock);
	ofx_rmr_index_fini(&ia->rmr_index);
	pthread_mutex_destroy(&ia->obj_lock);
	free(priv);
	return DAT_SUCCESS;
}

#define OFX_SET(mask, bit, dst, val)   \
	do {                           \
		if ((mask) & (bit))    \
			(dst) = (val); \
	} while (0)

static void ofx_ia_fill_ia_attr(struct ofx_ia *ia, const struct ibv_port_attr *port,
				DAT_IA_ATTR_MASK m, DAT_IA_ATTR *a)
{
	const struct ibv_device_attr *d = &ia->dev_attr;
	unsigned int fw_major = 0, fw_minor = 0;
	bool iwarp = ia->transport == OFX_TRANSPORT_IWARP;
	int max_dto = d->max_qp_wr;

	if (ia->cfg.wr_max && (int)ia->cfg.wr_max < max_dto)
		max_dto = ia->cfg.wr_max;
	sscanf(d->fw_ver, "%u.%u", &fw_major, &fw_minor);

	if (m & DAT_IA_FIELD_IA_ADAPTER_NAME)
		snprintf(a->adapter_name, sizeof(a->adapter_name), "%s", ofx_ia_dev_name(ia));
	if (m & DAT_IA_FIELD_IA_VENDOR_NAME)
		snprintf(a->vendor_name, sizeof(a->vendor_name), "0x%06x", d->vendor_id);
	OFX_SET(m, DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION, a->hardware_version_major, d->hw_ver);
	OFX_SET(m, DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION, a->hardware_version_minor, 0);
	OFX_SET(m, DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION, a->firmware_version_major, fw_major);
	OFX_SET(m, DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION, a->firmware_version_minor, fw_minor);
	OFX_SET(m, DAT_IA_FIELD_IA_ADDRESS_PTR, a->ia_address_ptr,
		(DAT_IA_ADDRESS_PTR)&ia->addr);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_EPS, a->max_eps, d->max_qp);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_DTO_PER_EP, a->max_dto_per_ep, max_dto);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN, a->max_rdma_read_per_ep_in,
		d->max_qp_rd_atom);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT, a->max_rdma_read_per_ep_out,
		d->max_qp_init_rd_atom);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_EVDS, a->max_evds, d->max_cq);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_EVD_QLEN, a->max_evd_qlen, d->max_cqe);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO, a->max_iov_segments_per_dto,
		d->max_sge);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_LMRS, a->max_lmrs, d->max_mr);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE, a->max_lmr_block_size, d->max_mr_size);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS, a->max_lmr_virtual_address,
		(DAT_VADDR)UINTPTR_MAX);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_PZS, a->max_pzs, d->max_pd);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE, a->max_message_size, port->max_msg_sz);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_SIZE, a->max_rdma_size, port->max_msg_sz);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RMRS, a->max_rmrs, ofx_rmr_type(ia) ? d->max_mw : 0);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS, a->max_rmr_target_address,
		(DAT_VADDR)UINTPTR_MAX);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_SRQS, a->max_srqs, d->max_srq);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_EP_PER_SRQ, a->max_ep_per_srq, d->max_qp);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ, a->max_recv_per_srq, d->max_srq_wr);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ,
		a->max_iov_segments_per_rdma_read, iwarp ? 1 : d->max_sge);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE,
		a->max_iov_segments_per_rdma_write, d->max_sge);
	/* verbs has one device-wide read resource count, for both directions */
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_IN, a->max_rdma_read_in, d->max_res_rd_atom);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT, a->max_rdma_read_out, d->max_res_rd_atom);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED,
		a->max_rdma_read_per_ep_in_guaranteed, DAT_TRUE);
	OFX_SET(m, DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED,
		a->max_rdma_read_per_ep_out_guaranteed, DAT_TRUE);
	OFX_SET(m, DAT_IA_FIELD_IA_ZB_SUPPORTED, a->zb_supported, DAT_FALSE);
	/* contract 5: libdat2 routes dat_extension_op only once an IA reports IB */
	OFX_SET(m, DAT_IA_FIELD_IA_EXTENSION, a->extension_supported,
		iwarp ? DAT_EXTENSION_NONE : DAT_EXTENSION_IB);
	OFX_SET(m, DAT_IA_FIELD_IA_EXTENSION_VERSION, a->extension_version,
		iwarp ? 0 : DAT_IB_EXTENSION_VERSION);
	OFX_SET(m, DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR, a->num_transport_attr, 0);
	OFX_SET(m, DAT_IA_FIELD_IA_TRANSPORT_ATTR, a->transport_attr, NULL);
	OFX_SET(m, DAT_IA_FIELD_IA_NUM_VENDOR_ATTR, a->num_vendor_attr, 0);
	OFX_SET(m, DAT_IA_FIELD_IA_VENDOR_ATTR, a->vendor_attr, NULL);
}

static const char *ofx_port_state_str(enum ibv_port_state state)
{
	switch (state) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "UNKNOWN";
}

static void ofx_ia_attr_add(struct ofx_ia_priv *priv, int *n, const char *name,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void ofx_ia_attr_add(struct ofx_ia_priv *priv, int *n, const char *name,
			    const char *fmt, ...)
{
	va_list ap;

	if (*n >= OFX_IA_NATTR) {
		ofx_err("provider attribute %s does not fit", name);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(priv->values[*n], sizeof(priv->values[*n]), fmt, ap);
	va_end(ap);
	priv->attrs[*n].name = name;
	priv->attrs[*n].value = priv->values[*n];
	(*n)++;
}

/*
 * Formats the provider-specific attributes into the IA's buffers (called
 * with attr_lock held).  The names are stock's (contract 4.5) plus our own
 * OFX_* ones; counters are read at query time.
 */
static int ofx_ia_fill_named_attrs(struct ofx_ia *ia, const struct ibv_port_attr *port)
{
	struct ofx_ia_priv *priv = ofx_ia_priv(ia);
	__be64 guid = ibv_get_device_guid(ia->verbs->device);
	bool iwarp = ia->transport == OFX_TRANSPORT_IWARP;
	/* dtestx skips (and passes) the atomic tests when these are FALSE */
	bool atomics = !iwarp && ia->dev_attr.atomic_cap != IBV_ATOMIC_NONE;
	const uint8_t *g;
	union ibv_gid gid;
	int n = 0;

	if (ibv_query_gid(ia->verbs, ia->port_num, 0, &gid))
		memset(&gid, 0, sizeof(gid));
	g = gid.raw;

	ofx_ia_attr_add(priv, &n, "DAT_IB_PROVIDER_NAME", "OFX");
	ofx_ia_attr_add(priv, &n, "DAT_IB_DEVICE_NAME", "%s", ofx_ia_dev_name(ia));
	ofx_ia_attr_add(priv, &n, "DAT_IB_CONNECTIVITY_MODE", "DIRECT");
	ofx_ia_attr_add(priv, &n, "DAT_IB_RDMA_READ", "TRUE");
	ofx_ia_attr_add(priv, &n, "DAT_EXTENSION_INTERFACE", "%s", iwarp ? "FALSE" : "TRUE");
	ofx_ia_attr_add(priv, &n, DAT_IB_ATTR_FETCH_AND_ADD, "%s", atomics ? "TRUE" : "FALSE");
	ofx_ia_attr_add(priv, &n, DAT_IB_ATTR_CMP_AND_SWAP, "%s", atomics ? "TRUE" : "FALSE");
	ofx_ia_attr_add(priv, &n, DAT_IB_ATTR_IMMED_DATA, "%s", iwarp ? "FALSE" : "TRUE");
	ofx_ia_attr_add(priv, &n, "DAT_IB_TRANSPORT_MTU", "%d",
			port->active_mtu ? 128 << port->active_mtu : 0);
	ofx_ia_attr_add(priv, &n, "DAT_IB_PORT_NUMBER", "%u", ia->port_num);
	ofx_ia_attr_add(priv, &n, "DAT_IB_PORT_STATUS", "%s", ofx_port_state_str(port->state));
	ofx_ia_attr_add(priv, &n, "DAT_IB_NODE_GUID", "0x%016" PRIx64, be64toh(guid));
	ofx_ia_attr_add(priv, &n, "DAT_IB_GID",
			"%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11],
			g[12], g[13], g[14], g[15]);
	ofx_ia_attr_add(priv, &n, "OFX_TRANSPORT", "%s", ofx_transport_str(ia->transport));
	ofx_ia_attr_add(priv, &n, "OFX_P2P", "%s", ia->p2p_default ? "on" : "off");
	ofx_ia_attr_add(priv, &n, "OFX_RTR", "%s", ofx_rtr_type_str(ia->cfg.rtr));
	ofx_ia_attr_add(priv, &n, "OFX_XRC", "%s", ia->xrc ? "on" : "off");
	ofx_ia_attr_add(priv, &n, "OFX_MAX_INLINE", "%u", ia->max_inline);
	ofx_ia_attr_add(priv, &n, "OFX_RTR_SENT", "%lu", atomic_load(&ia->stats.rtr_sent));
	ofx_ia_attr_add(priv, &n, "OFX_RTR_RECEIVED", "%lu",
			atomic_load(&ia->stats.rtr_received));
	ofx_ia_attr_add(priv, &n, "OFX_CONN_ACTIVE", "%lu", atomic_load(&ia->stats.conn_active));
	ofx_ia_attr_add(priv, &n, "OFX_CONN_PASSIVE", "%lu",
			atomic_load(&ia->stats.conn_passive));
	ofx_ia_attr_add(priv, &n, "OFX_CONN_P2P", "%lu", atomic_load(&ia->stats.conn_p2p));
	return n;
}

/* Order of the evd_stream_merging_supported rows and columns (contract 3.1). */
enum { OFX_MERGE_SOFTWARE, OFX_MERGE_CR, OFX_MERGE_DTO, OFX_MERGE_CONN, OFX_MERGE_RMR_BIND,
       OFX_MERGE_ASYNC, OFX_MERGE_N };

static void ofx_ia_fill_provider_attr(struct ofx_ia *ia, const struct ibv_port_attr *port,
				      DAT_PROVIDER_ATTR_MASK m, DAT_PROVIDER_ATTR *a)
{
	struct ofx_ia_priv *priv = ofx_ia_priv(ia);
	bool iwarp = ia->transport == OFX_TRANSPORT_IWARP;
	DAT_BOOLEAN merge[OFX_MERGE_N][OFX_MERGE_N];
	int i, j, n;

	if (m & DAT_PROVIDER_FIELD_PROVIDER_NAME)
		snprintf(a->provider_name, sizeof(a->provider_name), "%s", ia->prov->name);
	/* These four and is_thread_safe rebuild libdat2's registry key (contract 1.4). */
	OFX_SET(m, DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR, a->provider_version_major, 2);
	OFX_SET(m, DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR, a->provider_version_minor, 0);
	OFX_SET(m, DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR, a->dapl_version_major, 2);
	OFX_SET(m, DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR, a->dapl_version_minor, 0);
	OFX_SET(m, DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED, a->lmr_mem_types_supported,
		(DAT_MEM_TYPE)(DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR));
	OFX_SET(m, DAT_PROVIDER_FIELD_IOV_OWNERSHIP, a->iov_ownership_on_return,
		DAT_IOV_CONSUMER);
	OFX_SET(m, DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED, a->dat_qos_supported,
		DAT_QOS_BEST_EFFORT);
	OFX_SET(m, DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED, a->completion_flags_supported,
		DAT_COMPLETION_DEFAULT_FLAG);
	OFX_SET(m, DAT_PROVIDER_FIELD_IS_THREAD_SAFE, a->is_thread_safe, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE, a->max_private_data_size,
		ofx_cm_max_pdata(ia));
	OFX_SET(m, DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH, a->supports_multipath, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_EP_CREATOR, a->ep_creator, DAT_PSP_CREATES_EP_IFASKED);
	OFX_SET(m, DAT_PROVIDER_FIELD_PZ_SUPPORT, a->pz_support, DAT_PZ_UNIQUE);
	OFX_SET(m, DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT, a->optimal_buffer_alignment, 256);
	if (m & DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED) {
		/* Any merge works (the EVD waits on its CQ and eventfd), but async stays alone. */
		for (i = 0; i < OFX_MERGE_N; i++)
			for (j = 0; j < OFX_MERGE_N; j++)
				merge[i][j] = i != OFX_MERGE_ASYNC && j != OFX_MERGE_ASYNC ?
					      DAT_TRUE : DAT_FALSE;
		/* The member is const-qualified in udat.h; the consumer's struct is writable. */
		memcpy((void *)a->evd_stream_merging_supported, merge, sizeof(merge));
	}
	OFX_SET(m, DAT_PROVIDER_FIELD_SRQ_SUPPORTED, a->srq_supported, DAT_TRUE);
	/* dat_srq_set_lw works; dat_ep_set_watermark fires on plain EPs only (ep.h) */
	OFX_SET(m, DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED, a->srq_watermarks_supported,
		DAT_TRUE);
	OFX_SET(m, DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED,
		a->srq_ep_pz_difference_supported, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED, a->srq_info_supported, DAT_TRUE);
	OFX_SET(m, DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED, a->ep_recv_info_supported,
		DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_LMR_SYNC_REQ, a->lmr_sync_req, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED, a->dto_async_return_guaranteed,
		DAT_FALSE);
	/* An iWARP read sink is written by the peer (contract 4.7). */
	OFX_SET(m, DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ,
		a->rdma_write_for_rdma_read_req, iwarp ? DAT_TRUE : DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE,
		a->rdma_read_lmr_rmr_context_exposure, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_RMR_SCOPE_SUPPORTED, a->rmr_scope_supported,
		ofx_rmr_scope(ia));
	OFX_SET(m, DAT_PROVIDER_FIELD_IS_SIGNAL_SAFE, a->is_signal_safe, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_HA_SUPPORTED, a->ha_supported, DAT_FALSE);
	OFX_SET(m, DAT_PROVIDER_FIELD_HA_LB, a->ha_loadbalancing, DAT_HA_LB_NONE);

	if (m & (DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR |
		 DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR)) {
		pthread_mutex_lock(&priv->attr_lock);
		n = ofx_ia_fill_named_attrs(ia, port);
		pthread_mutex_unlock(&priv->attr_lock);
		/* the count and the array only make sense together: dtest asks
		 * for PROVIDER_SPECIFIC_ATTR alone and reads the count */
		a->num_provider_specific_attr = n;
		a->provider_specific_attr = priv->attrs;
	}
}

DAT_RETURN ofx_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd_p, DAT_IA_ATTR_MASK ia_mask,
			DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK prov_mask,
			DAT_PROVIDER_ATTR *prov_attr)
{
	struct ofx_ia *ia = ofx_ia_lookup(h);
	struct ibv_port_attr port;

	/* A NULL attribute pointer is skipped whatever its mask (libdat2 relies on it). */
	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);

	/* Port state, MTU and message size can change while the IA is open. */
	if (ibv_query_port(ia->verbs, ia->port_num, &port))
		port = ia->port_attr;

	if (async_evd_p)
		*async_evd_p = (DAT_EVD_HANDLE)ia->async_evd;
	if (ia_attr && ia_mask)
		ofx_ia_fill_ia_attr(ia, &port, ia_mask, ia_attr);
	if (prov_attr && prov_mask)
		ofx_ia_fill_provider_attr(ia, &port, prov_mask, prov_attr);
	return DAT_SUCCESS;
}

/*
 * DAT 2.0 dat_ia_ha_related: whether `name` is an HA partner of this IA.
 * The provider advertises ha_supported FALSE and forms no HA relations, so
 * for a valid IA and name the answer is always DAT_FALSE.
 */
DAT_RETURN ofx_ia_ha_related(DAT_IA_HANDLE h, const DAT_NAME_PTR name, DAT_BOOLEAN *answer_p)
{
	if (!ofx_ia_lookup(h))
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!name)
		return OFX_INVALID_ARG(2);
	if (!answer_p)
		return OFX_INVALID_ARG(3);
	*answer_p = DAT_FALSE;
	return DAT_SUCCESS;
}
