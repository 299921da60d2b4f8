/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_XRC_H
#define OFX_XRC_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct ofx_ia;
struct ofx_ep;
struct ofx_cr;
struct ofx_cookie;

/*
 * XRC-backed endpoints.  With xrc=on (or auto on a device with
 * IBV_DEVICE_XRC) every EP made by dat_ep_create is backed by XRC instead of
 * one RC QP: it receives through an XRC SRQ of its own and sends through an
 * XRC INI QP that it shares with every EP of the IA going to the same remote
 * node.  EPs made by dat_ep_create_with_srq and EPs in dat_ep_common_connect
 * stay RC.
 *
 * ==== Wire spec, protocol version 1 ====
 *
 * Terms.  A is the active side (dat_ep_connect), P the passive side (PSP or
 * RSP, dat_cr_accept).  Every XRC IA owns
 *   - a domain D: ibv_open_xrcd() on the file named by `xrcd` (one domain
 *     for all the processes of a node that name the same file) or a private
 *     one.  On the wire D is named by a 32-bit random tag, created by the
 *     first opener and kept in the file ("ofx-xrcd-tag XXXXXXXX\n" at offset
 *     0, under flock); a private domain draws its own.  The tag only selects
 *     candidates: a receiver verifies every TGT QP it is reached through with
 *     ibv_open_qp() in its own domain, so a tag collision costs an extra INI
 *     QP, never a misrouted message;
 *   - a service port q, bound twice: in RDMA_PS_IB by a listener of QP type
 *     XRC_RECV (INI connections, step 5) and in RDMA_PS_UDP by a listener
 *     for SIDR control messages (steps 3, 4 and 6).
 * Every XRC EP creates, per connection, an XRC SRQ in D (number "srqn").
 * A sender reaches a peer EP through its INI QP for the key
 *   (peer IA address, peer domain tag, request EVD, PZ)
 * (one send CQ and one PD per INI QP, hence EVD and PZ in the key), connected
 * to a TGT QP T in the peer's domain, and names the peer's srqn in every WR.
 * An all-to-all job whose processes share one request EVD and PZ each and a
 * domain file per node therefore has one INI QP per process and remote node
 * (plus one loopback INI QP if it also talks to processes on its own node).
 *
 * 1. Offer.  A sends an ordinary RC REQ (RDMA_PS_TCP, the consumer's conn
 *    qual) whose QP number is that of a real RC QP of the EP, so that any
 *    peer can answer it: a stock libdaplofa, or libdaplofx with xrc=off, just
 *    accepts and the EP runs over RC (section 8).  The REQ private data is
 *    the consumer's bytes plus the pdata trailer (pdata.h) with
 *    OFX_PDATA_F_XRC (and OFX_PDATA_F_P2P if A asks for p2p) whose XRC word
 *    is
 *        bits 0-23  srqn of A's EP
 *        bits 24-31 the low 8 bits of A's domain tag (a hint, step 2)
 *    When the consumer's bytes leave no room for the trailer in the 56-byte
 *    REQ area (more than 44 bytes) no offer is made: plain RC.
 *
 * 2. Accept.  If P runs XRC, the EP is a plain (non-SRQ, non-CSP) one and
 *    the consumer's accept data fits (at most OFX_XRC_ACCEPT_MAX bytes), P
 *    answers dat_cr_accept with a consumer-defined REJ (reason 28, which
 *    ends the exchange without tying up any QP number) whose 148-byte
 *    private data is
 *        0  u32 0x02000200   stock's reject header (never read by ours)
 *        4  u16 port         P's service port q
 *        6  u8  version      1
 *        7  u8  flags        0
 *        8  u32 tag          P's domain tag
 *       12  u32 tgt          T_P, the TGT QP number P proposes to send
 *                            through (0: none yet, see step 4)
 *       16  the consumer's accept data, padding and the pdata trailer with
 *           OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY (| OFX_PDATA_F_P2P when p2p
 *           is granted, with the RTR type), XRC word = P's srqn | tag hint
 *    (multi-byte fields in network byte order).  T_P is the TGT behind a
 *    READY INI QP of P towards A's address whose remote tag matches A's
 *    hint.  P posts its receives to its SRQ before the REJ leaves.  A takes
 *    a REJ with status 28, at least 24 bytes and a valid trailer with
 *    F_XRC | F_REPLY after byte 16 as this answer; any other REJ is a
 *    consumer or transport reject as usual.  A then destroys the RC QP of
 *    the offer (never connected) and posts its receives to its SRQ.
 *
 * 3. CONFIRM.  A sends a control message (below) CONFIRM to P's address and
 *    service port, with a conn_id it picks (identifies the EP pair in every
 *    later message), its srqn, port and tag, its verdict on T_P (it opens
 *    T_P in its own domain: OK or REFUSED) and T_A, the TGT behind its READY
 *    INI QP for P's key (0 when it has none ready).  P answers CONFIRM-ACK
 *    with its verdict on T_A, or status UNKNOWN if it has no EP waiting with
 *    that srqn pair (it gave up: A's EP is then broken).
 *
 * 4. BIND.  A side whose direction has no verified TGT yet (it proposed
 *    none, or the peer refused it) gets an INI QP for the peer's key: a READY
 *    one, one still connecting (it waits), or a new one connected to the
 *    peer's own service port (step 5), always new once the peer refused one.
 *    When it is READY the side sends BIND {conn_id, srqns, T}; the peer
 *    verifies T and answers BIND-ACK with its verdict.  A side never posts
 *    to the peer's SRQ before the peer said OK for the TGT it goes through.
 *    The EP becomes CONNECTED (ESTABLISHED, with the accept data on A) when
 *    its direction is verified and, on A, CONFIRM-ACK arrived or, on P,
 *    CONFIRM arrived.
 *
 * 5. INI connection.  The sender creates an XRC_SEND QP (send CQ = the
 *    request EVD's CQ) and connects an RDMA_PS_IB id of QP type XRC_SEND
 *    (rdma_create_ep + rdma_migrate_id) to the peer's service port; the
 *    REQ carries a control message INI {tag: the sender's, aux: the tag it
 *    expects}.  The listener checks the tag, creates a TGT QP (XRC_RECV) in
 *    its domain, moves it to RTS and accepts with INI-ACK; the REP's QP
 *    number is T.  The sender moves its QP to RTS and calls rdma_establish.
 *    This is the only QP pair XRC creates; every further EP between the two
 *    nodes (and domains) attaches with steps 1-4 only.
 *
 * 6. DISC.  Per-EP disconnect.  The side that stops sending (consumer
 *    disconnect, ep_free, the peer's DISC, a broken INI QP) first blocks new
 *    sends, then posts a signaled zero-length RDMA WRITE (the fence) behind
 *    the EP's sends on the INI QP; when it completes every earlier send of
 *    the EP has landed, and it sends DISC {conn_id, srqns}.  The peer answers
 *    DISC-ACK at once (DISCONNECTED for its consumer if it was connected) and
 *    then does the same in its direction.  An EP destroys its SRQ only after
 *    the peer's DISC (nothing can be in flight to it any more) or after
 *    cm_timeout_ms without one (the peer is presumed gone); outstanding
 *    receives then complete as FLUSHED.  Sending to a destroyed SRQ number
 *    would move the sender's shared INI QP to the error state, which is why
 *    no SRQ goes before its peer is done.
 *
 * Control message: SIDR private data (RDMA_PS_UDP), also the private data of
 * the INI connection's REQ and REP; 32 bytes, network byte order.
 *        0  u16 magic        0x4F58
 *        2  u8  version      1
 *        3  u8  op           1 CONFIRM, 2 BIND, 3 DISC, 4 INI; the answer
 *                            to op is 0x80 | op
 *        4  u32 conn_id
 *        8  u32 srqn_from    the sender's EP
 *       12  u32 srqn_to      the receiver's EP
 *       16  u32 tag          the sender's domain tag
 *       20  u32 tgt          CONFIRM: T_A; BIND: T; else 0
 *       24  u16 port         the sender's service port
 *       26  u8  verdict      0 none, 1 OK, 2 REFUSED (CONFIRM: on T_P;
 *                            answers: on the request's TGT)
 *       27  u8  status       answers: 0 OK, 1 UNKNOWN (no such EP)
 *       28  u32 aux          INI: the tag expected at the receiver
 * A request is answered with rdma_accept (SIDR REP) carrying the answer.  A
 * request without an answer is resent (a new SIDR) up to
 * OFX_XRC_CTL_TRIES times; all requests are idempotent.
 *
 * 7. Lifetimes.
 *    - INI QP: reference counted by the EPs bound to it or waiting for it;
 *      destroyed with its id (DREQ to the TGT side) when the last one goes.
 *      If its CM connection ends first (the TGT's creator left) the QP is
 *      kept: the TGT may live on (xrc_tgt=domain).  A send error on it
 *      (other than a flush) kills it: every EP bound to it breaks.
 *    - TGT QP: created by the listener side of an INI connection, which
 *      holds it while that connection lasts.  The receiver of every EP
 *      reached through it verifies it with ibv_open_qp(), and
 *        xrc_tgt=domain (2a, default): keeps that handle while the EP's
 *          connection lasts, so the TGT outlives its creator (the kernel
 *          destroys a TGT QP when its last handle goes; ibv_destroy_qp of
 *          a handle only detaches the process);
 *        xrc_tgt=exit (2b): closes it right after the check: the TGT dies
 *          with its creator (at ia_close or exit), and the INI QPs and EPs
 *          of other processes routed through it then break.
 *    - SRQ: per connection, see step 6.
 *
 * 8. Fallback to RC.  A REP to the offer (a peer that does not run XRC, or
 *    whose accept data does not fit the REJ) makes the connection plain RC
 *    on the offer's QP; a REQ without the offer makes P create an RC QP for
 *    the EP at accept time.  The EP keeps that QP for later connections.
 *
 * 9. p2p RTR.  p2p is negotiated as for RC (trailer flag and RTR type in
 *    the REQ and the accept).  On an XRC connection a SEND RTR would consume
 *    a receive of the peer EP's SRQ, which holds only consumer buffers, so
 *    SEND is replaced by WRITE; A posts the zero-length WRITE or READ RTR on
 *    its INI QP (addressed to P's SRQ) before it reports ESTABLISHED, and P
 *    does not wait for it (its CONFIRM already orders the setup).
 *
 * 10. Failures.  A peer process that dies without disconnecting leaves SRQ
 *    numbers behind that INI QPs may still name: the first send to one moves
 *    that INI QP to the error state and every EP bound to it reports BROKEN
 *    (new EPs get a fresh INI QP).  Likewise an RDMA error of one EP (bad
 *    rkey) or a receive too short on the target side breaks the shared QPs.
 *    XRC trades this fate sharing for one QP per node instead of per EP.
 */

/* Accept data that fits the REJ answer: 148 - 4 - 12 - 12 (trailer). */
#define OFX_XRC_ACCEPT_MAX 120
/* How often a control message is sent before the peer counts as gone. */
#define OFX_XRC_CTL_TRIES 3

/* Counters of one IA (tests, debugging). */
struct ofx_xrc_stats {
	unsigned long ini_created;	/* INI QPs created (each is one QP pair) */
	unsigned long ini_live;		/* INI QPs existing now */
	unsigned long tgt_created;	/* TGT QPs created by this IA's listener */
	unsigned long tgt_opened;	/* TGT QPs opened to hold them (2a) */
	unsigned long tgt_handles;	/* TGT QP handles held now */
	unsigned long conn_xrc;		/* connections that went over XRC */
	unsigned long conn_rc;		/* XRC-mode EP connections that fell back to RC */
	unsigned long refused;		/* TGTs a peer refused (wrong domain) */
	unsigned long ctl_sent;		/* control messages sent */
	unsigned long ctl_lost;		/* control requests that got no answer */
};

/*
 * IA life cycle (ia.c).  ofx_xrc_ia_open (after the device is open and
 * ia->xrc is set) opens the domain and the service listeners; a domain file
 * the user cannot open, or owned by another user without xrcd_foreign=yes,
 * fails it with a log line (-EACCES, -EPERM, -ENOENT, ...).
 * ofx_xrc_ia_quiesce (before the progress thread stops) disconnects every
 * XRC EP still connected, bounded by cm_timeout_ms.  ofx_xrc_ia_close (after
 * every EP is destroyed) releases TGT QPs, listeners and the domain.
 */
int ofx_xrc_ia_open(struct ofx_ia *ia);
void ofx_xrc_ia_quiesce(struct ofx_ia *ia);
void ofx_xrc_ia_close(struct ofx_ia *ia);
int ofx_xrc_get_stats(struct ofx_ia *ia, struct ofx_xrc_stats *stats);
uint32_t ofx_xrc_domain_tag(const struct ofx_ia *ia);
uint16_t ofx_xrc_service_port(const struct ofx_ia *ia);

/*
 * EP life cycle (ep.c).  ofx_xrc_ep_create makes ep->xrc (no verbs
 * resources yet).  ofx_xrc_ep_teardown (ep->lock not held) ends the current
 * XRC connection, waiting for the peer at most cm_timeout_ms, and releases
 * its SRQ, INI and TGT references; ofx_xrc_ep_free frees ep->xrc after the
 * EP's completions are purged.  ofx_xrc_ep_reset (ep->lock held) prepares
 * the EP for a new connection.
 */
int ofx_xrc_ep_create(struct ofx_ep *ep);
void ofx_xrc_ep_teardown(struct ofx_ep *ep);
void ofx_xrc_ep_free(struct ofx_ep *ep);
int ofx_xrc_ep_reset(struct ofx_ep *ep);

/*
 * Connection hooks (cm.c), all with ep->lock held.
 * ofx_xrc_connect: before the REQ is built; makes the RC QP of the offer and,
 *   when the offer fits, the SRQ and ep->req_pdata (*offered_p true).
 * ofx_xrc_offered: the REQ in flight carries an offer (receives are held).
 * ofx_xrc_rejected: a REJECTED event while offering; true if it was P's
 *   XRC accept (the id goes to *destroy_p).
 * ofx_xrc_fallback: a REP to the offer: the connection is RC.
 * ofx_xrc_accept: true if it handled the accept (result in *ret_p); false
 *   when the connection is to be RC (an RC QP then exists for it).
 * ofx_xrc_disconnect: true if the EP's connection is XRC (result in *ret_p).
 * ofx_xrc_cm_event: every rdma_cm event first; true if it belonged to an
 *   XRC id (listener, INI, TGT or control), with *destroy_p to destroy
 *   after the ack.
 */
int ofx_xrc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p);
bool ofx_xrc_offered(const struct ofx_ep *ep);
bool ofx_xrc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p);
void ofx_xrc_fallback(struct ofx_ep *ep);
bool ofx_xrc_accept(struct ofx_ep *ep, struct ofx_cr *cr, const void *pdata, int pdata_len,
		    int *ret_p);
bool ofx_xrc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p);
bool ofx_xrc_cm_event(struct rdma_cm_event *ev, struct rdma_cm_id **destroy_p);

/*
 * Data path (ep.c), lock-free like the RC one.  ofx_xrc_sq_begin returns the
 * QP to post on (the INI QP, with wr->qp_type.xrc.remote_srqn set; or the RC
 * QP of a fallback connection) or NULL when the EP no longer sends: the
 * caller then commits the cookie and calls ofx_xrc_sq_flush, which reports
 * it FLUSHED.  ofx_xrc_sq_end ends what ofx_xrc_sq_begin began.
 * ofx_xrc_post_recv posts to the EP's SRQ (or RC QP) and returns 0 or a
 * negative errno.  ofx_xrc_dto_notify takes over ofx_ep_dto_notify for XRC
 * connections (fence and RTR completions, errors); false if not XRC.
 */
struct ibv_qp *ofx_xrc_sq_begin(struct ofx_ep *ep, struct ibv_send_wr *wr);
void ofx_xrc_sq_end(struct ofx_ep *ep, struct ibv_qp *qp);
void ofx_xrc_sq_flush(struct ofx_ep *ep, struct ofx_cookie *ck);
int ofx_xrc_post_recv(struct ofx_ep *ep, struct ibv_recv_wr *wr);
bool ofx_xrc_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc);

#endif
