/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_CSP_H
#define OFX_CSP_H

#include <stdbool.h>
#include <rdma/rdma_cma.h>
#include "obj.h"

struct ofx_sp;
struct ofx_ep;

/*
 * DAT 2.0 peer-to-peer connection model: common service points and
 * dat_ep_common_connect.
 *
 * A CSP listens on <IA address>:<port> like a PSP, but its requests never
 * become CR events: they are matched against the local EPs that called
 * dat_ep_common_connect for that peer.  Each side is identified by its CSP
 * address (IP, port).
 *
 * Who connects (the collision rule): of the two CSP addresses, the one that
 * compares lower (address family, then the address bytes, then the port, all
 * in network order) initiates; the other only waits.  So simultaneous calls
 * cannot produce two connections, and the order of the calls does not
 * matter.
 *
 * The initiator's REQ carries our private-data trailer with
 * OFX_PDATA_F_CSP and its CSP port (the IP comes from the REQ itself).  If the
 * peer's EP has not called dat_ep_common_connect yet, the peer's CSP rejects
 * the REQ (consumer-defined reject) and the initiator retries every
 * csp_retry_ms; if no CSP listens there yet (reject reason "invalid service
 * ID"), it retries as well.  When the consumer's timeout expires the EP gets
 * DAT_CONNECTION_EVENT_TIMED_OUT, or UNREACHABLE if the last attempt found
 * no CSP at the address.  Both sides get ESTABLISHED carrying the other
 * side's private data.
 *
 * Freeing a CSP leaves its EPs alone: one still waiting ends at its timeout,
 * an initiator stops retrying (its next refusal is final), a connection
 * made through it stays.  dat_ep_reset and dat_ep_free take an EP off its CSP.
 */
DAT_RETURN ofx_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
			  DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp_p);
DAT_RETURN ofx_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *param);
DAT_RETURN ofx_csp_free(DAT_CSP_HANDLE csp);
DAT_RETURN ofx_ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR remote,
				 DAT_TIMEOUT timeout, DAT_COUNT pdata_len,
				 const DAT_PVOID pdata);

/* True if CSP address `a` initiates towards `b` (the collision rule above). */
bool ofx_csp_initiates(const struct sockaddr *a, const struct sockaddr *b);

#endif
