/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_XRC_H
#define OFX_XRC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct ofx_ia;
struct ofx_ep;
struct ofx_cr;
struct ofx_cookie;

/*
 * XRC-backed endpoints.  With xrc=on (or auto on a device with
 * IBV_DEVICE_XRC) every EP made by dat_ep_create is backed by XRC instead
 * of one RC QP: per connection it receives through an XRC SRQ of its own
 * and sends through an XRC INI QP that it shares with every EP of the IA
 * going to the same remote node.  EPs made by dat_ep_create_with_srq and EPs
 * in dat_ep_common_connect stay RC.  The control messages below travel over
 * rdma_cm on a device (the carrier, section 11); unit tests install a model
 * carrier (struct ofx_xrc_transport).  Memory window binds (rmr.c) post on
 * the EP's RC QP, which an XRC connection leaves unconnected: they fail
 * there.
 *
 * ==== Wire spec, protocol version 1 ====
 *
 * Terms.  A is the active side (dat_ep_connect), P the passive side (PSP or
 * RSP, dat_cr_accept).  Every XRC IA owns
 *   - a domain D: ibv_open_xrcd() on the file named by `xrcd` (one domain
 *     for all the processes of a node that name the same file; created with
 *     mode 0600, refused when another user owns it unless xrcd_foreign=yes)
 *     or a private one.  On the wire D is named by a 32-bit tag, drawn at
 *     random by the first opener and kept in the file ("ofx-xrcd-tag
 *     XXXXXXXX\n" at offset 0, under flock); a private domain draws its own.
 *     The tag only selects candidates: a receiver verifies every TGT QP it
 *     is reached through with ibv_open_qp() in its own domain (steps 3, 4);
 *   - a service port q at which its carrier receives control messages
 *     (section 11).
 * Every XRC EP creates, per connection, an XRC SRQ in D (number "srqn")
 * whose completions go to the EP's recv EVD.  A sender reaches a peer EP
 * through its INI QP for the key
 *   (peer IA address, peer domain tag, request EVD, PZ)
 * (one send CQ and one PD per INI QP, hence EVD and PZ in the key),
 * connected to a TGT QP T in the peer's domain, and names the peer's srqn
 * in every WR.  An all-to-all job whose processes share one request EVD and
 * PZ each and a domain file per node therefore has one INI QP per process
 * and remote node (plus one loopback INI QP if it also talks to processes
 * on its own node).
 *
 * 1. Offer.  A sends an ordinary RC REQ (RDMA_PS_TCP, the consumer's conn
 *    qual) for the EP's RC QP, so that any peer can answer it: a stock
 *    libdaplofa, or libdaplofx with xrc=off, just accepts and the EP runs
 *    over RC (section 8).  A opens its SRQ first.  The REQ private data is
 *    the consumer's bytes plus the pdata trailer (pdata.h) with
 *    OFX_PDATA_F_XRC whose XRC word is
 *        bits 0-23  srqn of A's EP
 *        bits 24-31 the low 8 bits of A's domain tag (informational)
 *    No offer is made (plain RC) when the consumer's bytes leave no room
 *    for the trailer in the 56-byte REQ area (more than 44 bytes) or when
 *    the EP asks for p2p (section 9).  An offer that gets no XRC answer
 *    (timeout, an ordinary reject) keeps its SRQ until dat_ep_reset,
 *    ep_free or the next offer.
 *
 * 2. Accept.  If P runs XRC, the REQ carries the offer without
 *    OFX_PDATA_F_P2P, the EP is a plain (non-SRQ) one and the consumer's
 *    accept data fits (at most OFX_XRC_ACCEPT_MAX bytes), P opens its SRQ,
 *    posts the EP's receives to it and answers dat_cr_accept with a
 *    consumer-defined REJ (reason 28, which ends the exchange without tying
 *    up any QP) whose private data is
 *        0  u32 0x02000200   stock's reject header (never read by ours)
 *        4  u16 port         P's service port q
 *        6  u8  version      1
 *        7  u8  flags        0
 *        8  u32 tag          P's domain tag
 *       12  u32 reserved     0
 *       16  the consumer's accept data, padding to byte 148 and the pdata
 *           trailer with OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY, XRC word =
 *           P's srqn | the low 8 bits of P's tag << 24
 *    (multi-byte fields in network byte order).  A takes a REJ with status
 *    28, at least 28 bytes, version 1 at byte 6 and a valid trailer with
 *    F_XRC | F_REPLY after byte 16 as this answer; any other REJ is a
 *    consumer or transport reject as usual.  A keeps its RC QP (unused by
 *    this connection), posts its receives to its SRQ and picks a conn_id.
 *
 * 3. CONFIRM.  A gets an INI QP for P's key (step 5): a READY one, one
 *    still connecting (it waits) or a new one.  Once it is READY, A sends
 *    CONFIRM {conn_id, srqns, A's tag and port, tgt: T_A, the TGT behind
 *    it}.  P verifies T_A (ibv_open_qp() in its own domain, unless it holds
 *    a handle to that TGT already) and answers CONFIRM-ACK with its
 *    verdict (OK, or REFUSED: P's EP then fails), or status UNKNOWN if it
 *    has no EP waiting for that srqn pair.  A fails its EP on anything but
 *    OK.  A connection that fails before it is established reports
 *    NON_PEER_REJECTED on A and ACCEPT_COMPLETION_ERROR on P.
 *
 * 4. BIND.  After an OK CONFIRM, P gets an INI QP for A's key in the same
 *    way and, once it is READY, sends BIND {conn_id, srqns, tgt: T_P}.  A
 *    verifies T_P in the same way and answers BIND-ACK with its verdict.
 *    A becomes CONNECTED (ESTABLISHED with the accept data) when its
 *    CONFIRM-ACK said OK and it verified T_P; P becomes CONNECTED
 *    (ESTABLISHED) when BIND-ACK says OK.  So no side sends to the peer's
 *    SRQ before the peer has verified the TGT it goes through, and the
 *    receives of both sides are posted before either side is CONNECTED.
 *    A message that still finds no receive is retried by the device (RNR,
 *    rnr_retry 7).  Neither side bounds steps 3-4 by time (A's
 *    dat_ep_connect timeout stops at the REJ): a lost peer shows as a
 *    control request without an answer; otherwise dat_ep_disconnect or
 *    ep_free ends the wait.
 *
 * 5. INI connection.  The sender creates an XRC_SEND QP (send CQ = the
 *    request EVD's CQ, PD = the PZ's) and sends the control message INI
 *    {conn_id: an id of the INI QP, srqn_from: its QP number, tag: the
 *    sender's, aux: the tag it expects} to the peer's service port.  The
 *    receiver checks aux against its own tag (REFUSED if it differs),
 *    creates a TGT QP (XRC_RECV) in its domain, moves it to RTR towards the
 *    INI QP and answers INI-ACK {tgt: T, verdict OK}.  The sender moves its
 *    INI QP to RTS towards T (section 11 says with which attributes).
 *    This is the only QP pair XRC creates; every further EP between the
 *    two nodes (and domains) attaches with steps 1-4 only.  An INI QP whose
 *    request was refused or got no answer is DEAD: the EPs waiting for it
 *    fail.
 *
 * 6. DISC.  Per-EP disconnect.  The side that stops sending (consumer
 *    disconnect, ep_free, the peer's DISC) first blocks new sends, then
 *    posts a signaled zero-length RDMA WRITE (the fence) behind the EP's
 *    sends on the INI QP; when it completes every earlier send of the EP
 *    has landed, and it sends DISC {conn_id, srqns}.  The progress thread
 *    polls the request EVD for the fence's completion (the consumer may
 *    not) and goes on without it after cm_timeout_ms.  The peer answers
 *    DISC-ACK at once, reports DISCONNECTED to its consumer if it was
 *    connected and then does the same in its direction.  The side that
 *    began reports DISCONNECTED, and each side destroys its SRQ, once it
 *    has sent its DISC and has the peer's (nothing can be in flight to it
 *    any more), or when its DISC went unanswered or UNKNOWN (the peer is
 *    presumed gone).  ep_free
 *    waits for the fence and (with a progress thread) the peer's DISC at
 *    most cm_timeout_ms; an EP whose fence did not complete keeps its
 *    memory until ia_close.  dat_ep_reset waits for a fence in flight
 *    first.  Receives still posted when the SRQ goes are dropped
 *    without events; receives posted afterwards wait for the next
 *    connection.  Sending to a destroyed SRQ number would move the sender's
 *    shared INI QP to the error state, which is why no SRQ goes before its
 *    peer is done.  Disconnecting (or ep_free) before CONNECTED sends DISC
 *    without a fence, reports DISCONNECTED at once and does not wait.
 *
 * Control message, 32 bytes, network byte order:
 *        0  u16 magic        0x4F58
 *        2  u8  version      1
 *        3  u8  op           1 CONFIRM, 2 BIND, 3 DISC, 4 INI; the answer
 *                            to op is 0x80 | op
 *        4  u32 conn_id
 *        8  u32 srqn_from    the sender's EP (INI: its INI QP number)
 *       12  u32 srqn_to      the receiver's EP (INI: 0)
 *       16  u32 tag          the sender's domain tag
 *       20  u32 tgt          CONFIRM: T_A; BIND: T_P; INI-ACK: T; else 0
 *       24  u16 port         the sender's service port
 *       26  u8  verdict      answers: 0 none, 1 OK, 2 REFUSED (on the
 *                            request's TGT, or INI: the TGT was not made)
 *       27  u8  status       answers: 0 OK, 1 UNKNOWN (no such EP)
 *       28  u32 aux          INI: the tag expected at the receiver
 * An answer swaps srqn_from and srqn_to and carries the answerer's tag and
 * port.  The carrier delivers a request with ofx_xrc_ctl_request() at the
 * receiver, which returns the answer at once, and hands the answer (or
 * none, after OFX_XRC_CTL_TRIES tries) back with ofx_xrc_ctl_answer().
 * CONFIRM, BIND and DISC are idempotent; a repeated INI makes a further TGT
 * QP (held until ia_close like the first).
 *
 * 7. Lifetimes.
 *    - INI QP: reference counted by the EPs bound to it or waiting for it;
 *      destroyed when the last one goes (a later EP to that node makes a
 *      new one), and at ia_close.  A DEAD one is never bound again: new EPs
 *      get a fresh INI QP.
 *    - TGT QP: created by the receiver of an INI request, whose IA holds it
 *      until ia_close.  The receiver of every EP reached through it
 *      verifies it with ibv_open_qp(), and
 *        xrc_tgt=domain (2a, default): keeps that handle (one per TGT and
 *          IA, shared by its EPs) while an EP's connection through it
 *          lasts, so the TGT outlives its creator (the kernel
 *          destroys a TGT QP when its last handle goes; ibv_destroy_qp of
 *          a handle only detaches the process);
 *        xrc_tgt=exit (2b): closes it right after the check: the TGT dies
 *          with its creator (at ia_close or exit), and the INI QPs and EPs
 *          of other processes routed through it then break.
 *    - SRQ: per connection, see step 6.
 *
 * 8. Fallback to RC.  A REP to the offer (a peer that does not run XRC, or
 *    that does not take the offer) makes the connection plain RC on the
 *    EP's RC QP (ofx_xrc_fallback closes the SRQ); a REQ without the offer
 *    makes P accept on the EP's RC QP.  The EP offers XRC again on its next
 *    connection.
 *
 * 9. p2p.  p2p and XRC compose by exclusion: an EP that asks for p2p makes
 *    no offer, and P never takes an offer that carries OFX_PDATA_F_P2P, so
 *    a p2p connection is RC with the RC RTR rules (SEND, WRITE or READ RTR
 *    as negotiated in the trailer).  An XRC connection has no RTR: its
 *    ordering comes from steps 3-4.
 *
 * 10. Failures.  A send completion in error (other than a flush) on an INI
 *    QP kills it: every EP bound to it reports BROKEN (the peer's SRQ
 *    number may be gone: a peer process that died without disconnecting,
 *    whose SRQ even the fence then names; a TGT destroyed under 2b; an RNR
 *    beyond the retry count; a bad rkey).
 *    A receive completion in error breaks only its EP.  XRC trades this
 *    fate sharing for one QP per node instead of per EP.
 *
 * 11. Carrier.  On a device (xrc_cm.c) the IA binds two rdma_cm listeners
 *    on its address with one port number, q: RDMA_PS_IB and RDMA_PS_UDP.
 *    CONFIRM, BIND and DISC are SIDR requests (RDMA_PS_UDP) to q with the
 *    control message as private data, answered in the SIDR REP's private
 *    data (its QP number, 1, means nothing).  INI is an RDMA_PS_IB
 *    connection to q: the sender moves the INI QP to INIT and connects with
 *    the INI message, qp_num = the INI QP, initiator_depth = the device's
 *    max_qp_init_rd_atom (at most 16), retry and rnr_retry 7.  The receiver
 *    creates the TGT QP, moves it to INIT and RTR and accepts with the
 *    INI-ACK, qp_num = T and responder_resources = the REQ's
 *    initiator_depth (at most the device's max_qp_rd_atom); a REFUSED
 *    INI-ACK goes in a REJ instead.  On the REP
 *    the sender moves the INI QP to RTR and RTS (if that fails the request
 *    has no answer), sends the RTU (rdma_establish) and destroys its id;
 *    the receiver destroys its id at ESTABLISHED (or an error).  The QPs
 *    do not depend on the ids: every QP state comes from
 *    rdma_init_qp_attr() on the connection's id, less the attributes an
 *    INI QP does not take (access flags, max_dest_rd_atomic,
 *    min_rnr_timer).  A request whose address or route resolution fails,
 *    that is unreachable or rejected without an answer is sent again on a
 *    new id, OFX_XRC_CTL_TRIES times in all; then it has no answer.
 */

/* Accept data that fits the REJ answer: 148 - 4 - 12 - 12 (trailer). */
#define OFX_XRC_ACCEPT_MAX 120
/* How often a control message is sent before the peer counts as gone. */
#define OFX_XRC_CTL_TRIES 3
/* Length of a control message. */
#define OFX_XRC_CTL_LEN 32

enum ofx_xrc_op {
	OFX_XRC_OP_CONFIRM = 1,
	OFX_XRC_OP_BIND = 2,
	OFX_XRC_OP_DISC = 3,
	OFX_XRC_OP_INI = 4,
	OFX_XRC_OP_ANSWER = 0x80,
};

/* Counters of one IA (tests, debugging; logged at ia_close with stats=yes). */
struct ofx_xrc_stats {
	unsigned long ini_created;	/* INI QPs created (each is one QP pair) */
	unsigned long ini_live;		/* INI QPs existing now */
	unsigned long tgt_created;	/* TGT QPs created by this IA for INI requests */
	unsigned long tgt_opened;	/* TGT QPs opened to hold them (2a) */
	unsigned long tgt_handles;	/* TGT QP handles held now */
	unsigned long conn_xrc;		/* connections that went over XRC */
	unsigned long conn_rc;		/* XRC-mode EP connections that fell back to RC */
	unsigned long refused;		/* TGTs a peer proposed that we refused */
	unsigned long ctl_sent;		/* control requests sent */
	unsigned long ctl_lost;		/* control requests that got no answer */
};

/*
 * The carrier of the control messages (xrc_cm.c on a device, a model in
 * the unit tests).  send_ctl queues request `msg` to
 * the IA at addr:port and returns 0 or a negative errno; it is called with
 * internal locks held, so it must not block nor call back into xrc.c.  The
 * receiving side calls ofx_xrc_ctl_request() and the sending side gets the
 * answer through ofx_xrc_ctl_answer(), both from a thread holding no EP
 * lock.
 */
struct ofx_xrc_transport {
	/* `qp`: the INI QP to connect for an INI request, else NULL */
	int (*send_ctl)(struct ofx_ia *ia, const struct sockaddr *addr, uint16_t port,
			const uint8_t msg[OFX_XRC_CTL_LEN], struct ibv_qp *qp);
	/*
	 * The carrier moves INI and TGT QPs through their states itself (with
	 * the attributes of a CM connection); else xrc.c sets the few
	 * attributes a model needs.
	 */
	bool drives_qps;
};

/*
 * IA life cycle (ia.c).  ofx_xrc_ia_open (after the device is open and
 * ia->xrc is set) opens the domain; a domain file the user cannot open, or
 * owned by another user without xrcd_foreign=yes, fails it with a log line
 * (-EACCES, -EPERM, -ENOENT, ...).  ofx_xrc_set_transport installs the
 * carrier and the service port (before any EP is created).
 * ofx_xrc_ia_quiesce is a no-op kept for the progress-thread shutdown.
 * ofx_xrc_ia_close (after every EP is destroyed) releases INI and TGT QPs
 * and the domain; NULL-safe.
 */
int ofx_xrc_ia_open(struct ofx_ia *ia);
void ofx_xrc_set_transport(struct ofx_ia *ia, const struct ofx_xrc_transport *tp, void *ctx,
			   uint16_t port);
void *ofx_xrc_transport_ctx(const struct ofx_ia *ia);
/* A TGT QP this IA created for an INI request (the carrier moves it). */
struct ibv_qp *ofx_xrc_tgt_qp(struct ofx_ia *ia, uint32_t qpn);
void ofx_xrc_ia_quiesce(struct ofx_ia *ia);
void ofx_xrc_ia_close(struct ofx_ia *ia);
int ofx_xrc_get_stats(struct ofx_ia *ia, struct ofx_xrc_stats *stats);
uint32_t ofx_xrc_domain_tag(const struct ofx_ia *ia);
uint16_t ofx_xrc_service_port(const struct ofx_ia *ia);

/*
 * The rdma_cm carrier (xrc_cm.c), used on a device: ofx_xrc_cm_start binds
 * the service listeners and installs the carrier (ofx_xrc_ia_open calls it
 * when the IA has an event channel); ofx_xrc_cm_stop (ia_close, progress
 * thread stopped) destroys its ids.  ofx_xrc_cm_event takes every rdma_cm
 * event of an XRC id (RDMA_PS_UDP and RDMA_PS_IB, which cm.c never uses)
 * before cm.c's dispatch; *destroy_p as there.
 */
int ofx_xrc_cm_start(struct ofx_ia *ia);
void ofx_xrc_cm_stop(struct ofx_ia *ia);
bool ofx_xrc_cm_event(struct ofx_ia *ia, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p);

/* Control messages in (see the wire spec): request -> answer, answer in. */
int ofx_xrc_ctl_request(struct ofx_ia *ia, const struct sockaddr *src, const uint8_t *req,
			uint8_t *answer);
void ofx_xrc_ctl_answer(struct ofx_ia *ia, const uint8_t *req, const uint8_t *answer);

/*
 * EP life cycle (ep.c).  ofx_xrc_ep_create makes ep->xrc when the IA has a
 * carrier (no verbs resources yet).  ofx_xrc_ep_teardown (ep->lock not
 * held) ends the current XRC connection (fence, DISC), waiting at most
 * cm_timeout_ms, and releases its SRQ, INI and TGT references; false if the
 * fence did not complete (the EP's sends may still complete: keep its
 * memory).  ofx_xrc_ep_free frees ep->xrc.  ofx_xrc_ep_quiesce (ep->lock
 * not held) waits at most cm_timeout_ms for a fence in flight, so that
 * ofx_xrc_ep_reset (ep->lock held) finds the connection over; that one
 * prepares the EP for a new connection, -EBUSY while one lasts.
 */
int ofx_xrc_ep_create(struct ofx_ep *ep);
bool ofx_xrc_ep_teardown(struct ofx_ep *ep);
void ofx_xrc_ep_quiesce(struct ofx_ep *ep);
void ofx_xrc_ep_free(struct ofx_ep *ep);
int ofx_xrc_ep_reset(struct ofx_ep *ep);

/*
 * Connection hooks, all with ep->lock held.
 * ofx_xrc_connect: before the REQ is sent; when the offer is made it opens
 *   the SRQ and fills ep->req_pdata (*offered_p true).
 * ofx_xrc_offered: the REQ in flight carries an offer.
 * ofx_xrc_rejected: a REJECTED event while offering; true if it was P's
 *   XRC accept (the id goes to *destroy_p) and the handshake goes on.
 * ofx_xrc_fallback: a REP to the offer: the connection is RC.
 * ofx_xrc_accept: true if it handled the accept (result in *ret_p); false
 *   when the connection is to be RC.
 * ofx_xrc_disconnect: true if the EP's connection is XRC (result in *ret_p).
 */
int ofx_xrc_connect(struct ofx_ep *ep, const void *pdata, int pdata_len, bool *offered_p);
bool ofx_xrc_offered(const struct ofx_ep *ep);
bool ofx_xrc_rejected(struct ofx_ep *ep, struct rdma_cm_event *ev,
		      struct rdma_cm_id **destroy_p);
void ofx_xrc_fallback(struct ofx_ep *ep);
bool ofx_xrc_accept(struct ofx_ep *ep, struct ofx_cr *cr, const void *pdata, int pdata_len,
		    int *ret_p);
bool ofx_xrc_disconnect(struct ofx_ep *ep, bool abrupt, int *ret_p);

/*
 * Data path (ep.c), lock-free like the RC one.  ofx_xrc_sq_begin returns the
 * QP to post on (the INI QP, with wr->qp_type.xrc.remote_srqn set; or the RC
 * QP outside an XRC connection) or NULL when the EP no longer sends: the
 * post then fails with INVALID_STATE.  ofx_xrc_sq_end ends what
 * ofx_xrc_sq_begin began.  ofx_xrc_post_recv posts to the EP's SRQ (or RC
 * QP) and returns 0 or a negative errno.  ofx_xrc_dto_notify takes over
 * ofx_ep_dto_notify for XRC connections (fence completions, errors); false
 * if the EP is not in one.
 */
struct ibv_qp *ofx_xrc_sq_begin(struct ofx_ep *ep, struct ibv_send_wr *wr);
void ofx_xrc_sq_end(struct ofx_ep *ep, struct ibv_qp *qp);
int ofx_xrc_post_recv(struct ofx_ep *ep, struct ibv_recv_wr *wr);
bool ofx_xrc_dto_notify(struct ofx_ep *ep, const struct ibv_wc *wc);

#endif
