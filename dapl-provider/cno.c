/* SPDX-License-Identifier: BSD-2-Clause */
#include "cno.h"

#define OFX_LOG_SUBSYS OFX_SUBSYS_EVD
#include "ia_core.h"
#include "log.h"
#include "progress.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

/*
 * The eventfd mirrors `triggered`: both change together under cno->lock,
 * so the fd is readable exactly while a trigger is pending.  Waiters only
 * use it to sleep; the truth is always re-read under the lock.
 */

/* Requires cno->lock. */
static void cno_set_triggered_locked(struct ofx_cno *cno, struct ofx_evd *evd)
{
	uint64_t one = 1;

	if (cno->triggered)
		return;	/* latched: the first EVD stays the hint */
	cno->triggered = true;
	cno->trigger_evd = evd;
	if (write(cno->fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		ofx_warn("cno %p: eventfd write: %m", (void *)cno);
}

/* Requires cno->lock and a pending trigger; returns its EVD (may be NULL). */
static struct ofx_evd *cno_consume_locked(struct ofx_cno *cno)
{
	struct ofx_evd *evd = cno->trigger_evd;
	uint64_t val;

	cno->triggered = false;
	cno->trigger_evd = NULL;
	if (read(cno->fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
		ofx_warn("cno %p: eventfd read: %m", (void *)cno);
	return evd;
}

static int cno_new(struct ofx_ia *ia, DAT_OS_WAIT_PROXY_AGENT agent, bool fd_proxy,
		   struct ofx_cno **cno_p)
{
	struct ofx_cno *cno;
	int ret;

	cno = calloc(1, sizeof(*cno));
	if (!cno) {
		ofx_err("cno: out of memory");
		return -ENOMEM;
	}
	cno->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cno->fd < 0) {
		ret = -errno;
		ofx_err("cno: eventfd: %m");
		free(cno);
		return ret;
	}
	pthread_mutex_init(&cno->lock, NULL);
	cno->agent = agent;
	cno->fd_proxy = fd_proxy;
	ofx_obj_init(&cno->obj, OFX_OBJ_CNO, ia);
	ofx_dbg("cno %p: created (fd %d%s, agent %s)", (void *)cno, cno->fd,
		fd_proxy ? " for the consumer" : "", agent.proxy_agent_func ? "set" : "none");
	*cno_p = cno;
	return 0;
}

DAT_RETURN ofx_cno_create(DAT_IA_HANDLE ia_h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_cno *cno;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!cno_p)
		return OFX_INVALID_ARG(3);
	ret = cno_new(ia, agent, false, &cno);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_CNO);
	*cno_p = (DAT_CNO_HANDLE)cno;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_cno_fd_create(DAT_IA_HANDLE ia_h, DAT_FD *fd_p, DAT_CNO_HANDLE *cno_p)
{
	struct ofx_ia *ia = ofx_ia_lookup(ia_h);
	struct ofx_cno *cno;
	int ret;

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	if (!fd_p)
		return OFX_INVALID_ARG(2);
	if (!cno_p)
		return OFX_INVALID_ARG(3);
	ret = cno_new(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, true, &cno);
	if (ret)
		return ofx_dat_status(ret, OFX_OBJ_CNO);
	*fd_p = cno->fd;
	*cno_p = (DAT_CNO_HANDLE)cno;
	return DAT_SUCCESS;
}

DAT_RETURN ofx_cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);

	if (!cno)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	pthread_mutex_lock(&cno->lock);
	cno->agent = agent;
	pthread_mutex_unlock(&cno->lock);
	return DAT_SUCCESS;
}

/*
 * udat.h defines DAT_CNO_FIELD_PROXY as 0x3 (both lower bits) and _ALL as
 * 0x4, so the mask is read as "which of the three may be asked for"; any
 * valid mask gets every field, which DAT allows.
 */
#define OFX_CNO_FIELD_VALID (DAT_CNO_FIELD_IA_HANDLE | DAT_CNO_FIELD_PROXY_TYPE | \
			     DAT_CNO_FIELD_PROXY | DAT_CNO_FIELD_ALL)

DAT_RETURN ofx_cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);

	if (!cno)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	if (mask & ~OFX_CNO_FIELD_VALID)
		return OFX_INVALID_ARG(2);
	if (!param)
		return OFX_INVALID_ARG(3);

	memset(param, 0, sizeof(*param));
	param->ia_handle = ofx_ia_dat_handle(cno->obj.ia);
	pthread_mutex_lock(&cno->lock);
	if (cno->fd_proxy) {
		param->proxy_type = DAT_PROXY_TYPE_FD;
		param->proxy.fd = cno->fd;
	} else if (cno->agent.proxy_agent_func) {
		param->proxy_type = DAT_PROXY_TYPE_AGENT;
		param->proxy.agent = cno->agent;
	} else {
		param->proxy_type = DAT_PROXY_TYPE_NONE;
		param->proxy.none = NULL;
	}
	pthread_mutex_unlock(&cno->lock);
	return DAT_SUCCESS;
}

static void cno_release(struct ofx_cno *cno)
{
	if (close(cno->fd))
		ofx_warn("cno %p: close eventfd: %m", (void *)cno);
	pthread_mutex_destroy(&cno->lock);
	ofx_obj_fini(&cno->obj);
	free(cno);
}

DAT_RETURN ofx_cno_free(DAT_CNO_HANDLE h)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);
	int nevds, waiters;

	if (!cno)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	pthread_mutex_lock(&cno->lock);
	nevds = cno->nevds;
	waiters = cno->waiters;
	pthread_mutex_unlock(&cno->lock);
	if (nevds || waiters) {
		ofx_dbg("cno %p: free refused, %d evds attached, %d waiters", (void *)cno, nevds,
			waiters);
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
	}
	ofx_dbg("cno %p: free", (void *)cno);
	cno_release(cno);
	return DAT_SUCCESS;
}

void ofx_cno_destroy(struct ofx_cno *cno)
{
	if (!cno)
		return;
	if (cno->nevds || cno->waiters)
		ofx_warn("cno %p: destroyed with %d evds attached, %d waiters", (void *)cno,
			 cno->nevds, cno->waiters);
	cno_release(cno);
}

DAT_RETURN ofx_cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_p)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);
	uint64_t deadline;
	struct pollfd pfd;
	DAT_RETURN status;
	int ms, ret;

	if (!cno)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	if (!evd_p)
		return OFX_INVALID_ARG(3);
	deadline = timeout == DAT_TIMEOUT_INFINITE ? UINT64_MAX :
		   ofx_now_ns() + (uint64_t)timeout * 1000;

	pthread_mutex_lock(&cno->lock);
	cno->waiters++;
	for (;;) {
		if (cno->triggered) {
			*evd_p = (DAT_EVD_HANDLE)cno_consume_locked(cno);
			status = DAT_SUCCESS;
			break;
		}
		ms = ofx_poll_timeout_ms(deadline);
		if (!ms) {
			*evd_p = DAT_HANDLE_NULL;
			status = DAT_TIMEOUT_EXPIRED;	/* bare, like evd_wait */
			break;
		}
		pthread_mutex_unlock(&cno->lock);
		pfd.fd = cno->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		ret = poll(&pfd, 1, ms);
		if (ret < 0 && errno != EINTR) {
			ret = -errno;
			ofx_err("cno %p: poll: %m", (void *)cno);
			pthread_mutex_lock(&cno->lock);
			*evd_p = DAT_HANDLE_NULL;
			status = ofx_dat_status(ret, OFX_OBJ_CNO);
			break;
		}
		pthread_mutex_lock(&cno->lock);
	}
	cno->waiters--;
	pthread_mutex_unlock(&cno->lock);
	return status;
}

DAT_RETURN ofx_cno_trigger(DAT_CNO_HANDLE h, DAT_EVD_HANDLE *evd_p)
{
	struct ofx_cno *cno = ofx_cno_from_handle(h);
	DAT_RETURN status = DAT_SUCCESS;

	if (!cno)
		return ofx_invalid_handle(OFX_OBJ_CNO);
	if (!evd_p)
		return OFX_INVALID_ARG(2);
	pthread_mutex_lock(&cno->lock);
	if (cno->triggered) {
		*evd_p = (DAT_EVD_HANDLE)cno_consume_locked(cno);
	} else {
		*evd_p = DAT_HANDLE_NULL;
		status = DAT_QUEUE_EMPTY;
	}
	pthread_mutex_unlock(&cno->lock);
	return status;
}

void ofx_cno_attach(struct ofx_cno *cno)
{
	pthread_mutex_lock(&cno->lock);
	cno->nevds++;
	pthread_mutex_unlock(&cno->lock);
}

void ofx_cno_detach(struct ofx_cno *cno, struct ofx_evd *evd)
{
	pthread_mutex_lock(&cno->lock);
	if (cno->nevds <= 0)
		ofx_warn("cno %p: detach of evd %p without attach", (void *)cno, (void *)evd);
	else
		cno->nevds--;
	/* keep the trigger pending, but never hand out a freed EVD */
	if (cno->trigger_evd == evd)
		cno->trigger_evd = NULL;
	pthread_mutex_unlock(&cno->lock);
}

void ofx_cno_trigger_evd(struct ofx_cno *cno, struct ofx_evd *evd,
			 struct ofx_cno_agent_call *call)
{
	memset(call, 0, sizeof(*call));
	pthread_mutex_lock(&cno->lock);
	cno_set_triggered_locked(cno, evd);
	if (cno->agent.proxy_agent_func) {
		/* DAT: once invoked, the agent is no longer associated with the CNO */
		call->fn = cno->agent.proxy_agent_func;
		call->data = cno->agent.instance_data;
		call->evd = (DAT_EVD_HANDLE)evd;
		cno->agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
	}
	pthread_mutex_unlock(&cno->lock);
	ofx_dbg_data("cno %p triggered by evd %p", (void *)cno, (void *)evd);
}

void ofx_cno_agent_run(const struct ofx_cno_agent_call *call)
{
	if (call->fn)
		call->fn(call->data, call->evd);
}
