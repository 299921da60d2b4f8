/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_IA_H
#define OFX_IA_H

#include "ia_core.h"

/*
 * The DAT IA API (top layer): dat_ia_open/query/close and the device's
 * async events.  struct ofx_ia, its registry and handle lookup are in
 * ia_core.h, which is what the objects below include.
 */
DAT_RETURN ofx_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE *async_evd_p,
		       DAT_IA_HANDLE *ia_p);
DAT_RETURN ofx_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd_p, DAT_IA_ATTR_MASK ia_mask,
			DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK prov_mask,
			DAT_PROVIDER_ATTR *prov_attr);
DAT_RETURN ofx_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags);
/* Always DAT_FALSE: the provider forms no HA relations (ha_supported FALSE). */
DAT_RETURN ofx_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR name, DAT_BOOLEAN *answer_p);

/* Progress-thread handler for the device async-event fd. */
void ofx_ia_process_async(void *arg);

/*
 * One event read from the device's async fd by `ia`'s progress thread (or
 * delivered by a test model); the caller acknowledges it afterwards.
 */
struct ibv_async_event;
void ofx_ia_async_event(struct ofx_ia *ia, struct ibv_async_event *ev);

/* Whether a QP's affiliated async event says the QP failed (else it informs). */
bool ofx_ia_qp_event_is_failure(enum ibv_event_type type);

#endif
