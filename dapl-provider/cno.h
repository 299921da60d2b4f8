/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CNO_H
#define OFX_CNO_H

#include <stdbool.h>
#include <pthread.h>
#include "obj.h"

struct ofx_evd;

/*
 * A consumer notification object (contract 3.5).  EVDs attached to it (at
 * evd_create or with evd_modify_cno) trigger it when an event is queued
 * while they are enabled and no thread waits on them directly.
 *
 * A trigger latches: it stays pending until one cno_wait or cno_trigger
 * consumes it, so triggers from several EVDs can collapse into one wakeup.
 * The EVD reported is the first one that triggered since the last
 * consumption, and only a hint (DAT: the consumer polls all its EVDs).
 *
 * Every CNO owns an eventfd that is readable exactly while a trigger is
 * pending: cno_wait poll()s it, and dat_cno_fd_create hands it out.
 *
 * `lock` guards every field below it.  An EVD triggers its CNO with its own
 * lock held, so cno->lock nests inside evd->lock; nothing is taken under it.
 */
struct ofx_cno {
	struct ofx_obj obj;

	pthread_mutex_t lock;
	int fd;				/* eventfd, readable while triggered */
	bool fd_proxy;			/* made by cno_fd_create: the consumer polls fd */
	DAT_OS_WAIT_PROXY_AGENT agent;	/* one-shot proxy agent (NULL function: none) */
	bool triggered;
	struct ofx_evd *trigger_evd;	/* first EVD that triggered; NULL if detached since */
	int nevds;			/* attached EVDs: cno_free refuses while > 0 */
	int waiters;			/* threads inside cno_wait */
};
OFX_DEFINE_FROM_HANDLE(cno, CNO)

/*
 * A proxy agent call decided under the EVD and CNO locks and made after
 * they are dropped (the agent is consumer code and may call back into DAT).
 */
struct ofx_cno_agent_call {
	DAT_AGENT_FUNC fn;
	DAT_PVOID data;
	DAT_EVD_HANDLE evd;
};

/* DAT entry points */
DAT_RETURN ofx_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno_p);
DAT_RETURN ofx_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent);
DAT_RETURN ofx_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param);
DAT_RETURN ofx_cno_free(DAT_CNO_HANDLE cno);
/*
 * Returns the pending trigger's EVD, waiting up to `timeout` µs for one.
 * Expiry returns the bare DAT_TIMEOUT_EXPIRED with *evd_p = DAT_HANDLE_NULL
 * (stock returns DAT_QUEUE_EMPTY; consumers compare with DAT_GET_TYPE).
 */
DAT_RETURN ofx_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_p);
/*
 * DAT 2.0 fd CNO (not exported by Debian's libdat2; reachable through
 * DAT_CNO_FD_CREATE on a raw IA pointer).  *fd_p becomes readable when the
 * CNO triggers and stays so until cno_wait or cno_trigger consumes the
 * trigger.  The fd belongs to the CNO: cno_free closes it.
 */
DAT_RETURN ofx_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd_p, DAT_CNO_HANDLE *cno_p);
/*
 * Consumes a pending trigger without blocking (what a consumer calls once
 * the fd polls readable): its EVD, or the bare DAT_QUEUE_EMPTY.
 */
DAT_RETURN ofx_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd_p);

/* ia_close cleanup: frees regardless of attached EVDs (they are gone by then). */
void ofx_cno_destroy(struct ofx_cno *cno);

/* An EVD attaches to / detaches from the CNO (evd.c; no EVD lock needed). */
void ofx_cno_attach(struct ofx_cno *cno);
void ofx_cno_detach(struct ofx_cno *cno, struct ofx_evd *evd);

/*
 * Triggers `cno` on behalf of `evd`.  Called with evd->lock held.  If the
 * CNO has a proxy agent, it is detached (agents are one-shot) and *call is
 * filled in; the caller runs ofx_cno_agent_run() after dropping its lock.
 */
void ofx_cno_trigger_evd(struct ofx_cno *cno, struct ofx_evd *evd,
			 struct ofx_cno_agent_call *call);
/* Calls the proxy agent collected by ofx_cno_trigger_evd(), if any; no locks held. */
void ofx_cno_agent_run(const struct ofx_cno_agent_call *call);

#endif
