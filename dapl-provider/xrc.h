/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_XRC_H
#define OFX_XRC_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct ofx_ia;
struct ofx_evd;

/*
 * The XRC transport: domain, SRQs, INI and TGT QP tables, control messages
 * and their carrier (xrc_cm.c), and the connections that run over them.  It
 * knows no EP: an owner (ep_xrc.c makes one per XRC-backed EP) creates a
 * struct ofx_xrc_conn, drives it through the steps below with the calls at
 * the end of this header, and hears back through the ofx_xrc_owner_ops it
 * gave (established, failed, disconnected, broken, ...).
 *
 * XRC-backed endpoints.  With xrc=on (or auto on a device with
 * IBV_DEVICE_XRC) every EP made by dat_ep_create is backed by XRC instead
 * of one RC QP: per connection it receives through an XRC SRQ of its own
 * and sends through an XRC INI QP that it shares with every EP of the IA
 * going to the same remote node.  EPs made by dat_ep_create_with_srq and EPs
 * in dat_ep_common_connect stay RC.  The control messages below travel over
 * rdma_cm on a device (the carrier, section 11); unit tests install a model
 * carrier (struct ofx_xrc_transport).  Such an EP owns no RC QP while its
 * connections run over XRC: one exists only from dat_ep_connect until the
 * answer (step 1; never with xrc_rc_fallback=no) or for a connection that
 * runs over RC (section 8), and
 * dat_ep_reset or ep_free destroys it.  Memory window binds (rmr.c) need
 * an RC QP of the EP's own: on an XRC connection they are refused
 * (DAT_MODEL_NOT_SUPPORTED).
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
 * in every WR.  An INI QP takes EPs while their request queues and fences
 * fit its send queue (each may fill its own, as on an RC QP); a further EP
 * gets a further INI QP for the same key.  An all-to-all job whose
 * processes share one request EVD and PZ each and a domain file per node
 * therefore has one INI QP per process and remote node (plus one loopback
 * INI QP if it also talks to processes on its own node) while those fit.
 *
 * 1. Offer.  A sends an ordinary RC REQ (RDMA_PS_TCP, the consumer's conn
 *    qual) for an RC QP it creates for it, so that any peer can answer it: a
 *    stock libdaplofa, or libdaplofx with xrc=off, just accepts and the EP
 *    runs over RC on that QP (section 8).  The REQ must name a QP that such
 *    a peer can connect to, so it cannot wait for the answer; an XRC answer
 *    (step 2) destroys it before it took any work request.  With
 *    xrc_rc_fallback=no (every peer runs XRC) A creates no RC QP: the REQ
 *    names a TGT QP that A creates in its domain for it and never moves
 *    out of RESET (no queues, no CQ), destroyed with the XRC answer (the
 *    answer never reads the number).  The number must be a QP's: the
 *    peer's IB CM keeps (QP number, CA GUID) of every connection of its
 *    node, from the REQ it received or the REP, and refuses a REQ naming
 *    a pair it holds (REJ "stale connection") and sends a DREQ to that
 *    connection; an SRQ number (SRQs and QPs are numbered apart on mlx5
 *    and mlx4) could be a live RC QP's of the same device, a QP we own is
 *    no other QP's and is named by no other REQ or REP.  A rejects a REP
 *    (REJ reason 28, no data) and fails its EP with NON_PEER_REJECTED.  A opens its
 *    SRQ first.  The REQ private data is
 *    the consumer's bytes plus the 8-byte pdata trailer (pdata.h) with
 *    OFX_PDATA_F_XRC and no extension word, so every consumer length that
 *    leaves room for our trailer in the 56-byte REQ area (up to 48 bytes,
 *    what dtest and dtestcm send) can be offered; A's srqn travels in its
 *    CONFIRM (step 3).  No offer is made (plain RC) when the consumer's
 *    bytes leave no room for the trailer (more than 48 bytes), when the
 *    EP asks for p2p (section 9) or when no INI QP of the device holds the
 *    EP's request SGEs (P declines the offer for that reason too).  An offer that gets no XRC answer
 *    (timeout, an ordinary reject) keeps its SRQ until dat_ep_reset,
 *    ep_free or the next offer.
 *
 * 2. Accept.  If P runs XRC, the REQ carries the offer without
 *    OFX_PDATA_F_P2P, the EP is a plain (non-SRQ) one and the consumer's
 *    accept data fits (at most OFX_XRC_ACCEPT_MAX bytes, 160: what a REP
 *    would carry; past 120 the rest follows the CONFIRM-ACK), P opens its SRQ,
 *    posts the EP's receives to it and answers dat_cr_accept with a
 *    consumer-defined REJ (reason 28, which ends the exchange without tying
 *    up any QP) whose private data is
 *        0  u32 0x02000200   stock's reject header (never read by ours)
 *        4  u16 port         P's service port q
 *        6  u8  version      1
 *        7  u8  flags        1: the accept data goes on after the CONFIRM-ACK
 *        8  u32 tag          P's domain tag
 *       12  u16 accept_len   flags 1: the whole accept data's length; else 0
 *       14  u16 reserved     0
 *       16  the consumer's accept data (its first 120 bytes with flags 1),
 *           padding to byte 148 and the pdata trailer with OFX_PDATA_F_XRC
 *           | OFX_PDATA_F_REPLY, XRC word = P's srqn | the low 8 bits of
 *           P's tag << 24
 *    (multi-byte fields in network byte order).  A takes a REJ with status
 *    28, at least 28 bytes, version 1 at byte 6 and a valid trailer with
 *    F_XRC | F_REPLY after byte 16 as this answer; any other REJ is a
 *    consumer or transport reject as usual.  A destroys the RC QP of its
 *    REQ, posts its receives to its SRQ and picks a conn_id.  P never makes
 *    an RC QP for a connection it takes over XRC.
 *
 * 3. CONFIRM.  A gets an INI QP for P's key (step 5): a READY one, one
 *    still connecting (it waits) or a new one.  Once it is READY, A sends
 *    CONFIRM {conn_id, srqns, A's tag and port, tgt: T_A, the TGT behind
 *    it}.  P finds its EP by srqn_to alone (the REQ did not name A's
 *    srqn) and learns A's srqn from srqn_from.  P verifies T_A
 *    (ibv_open_qp() in its own domain, unless it holds
 *    a handle to that TGT already) and answers CONFIRM-ACK with its
 *    verdict (OK; REFUSED: T_A is not in P's domain; FAILED: T_A is fine
 *    but P cannot go on, having no INI QP of its own to A; P's EP fails on
 *    either), or status UNKNOWN if it has no EP waiting for that srqn pair.
 *    A fails its EP on anything but OK, except once on REFUSED: that
 *    condemns its INI QP (section 7), and A sends CONFIRM again (same
 *    conn_id and srqns) over a fresh INI QP; P, having refused, waits
 *    for that one CONFIRM, and fails on a second refusal as A does.  A connection that fails before it is established reports
 *    NON_PEER_REJECTED on A and ACCEPT_COMPLETION_ERROR on P.
 *
 * 4. BIND.  After an OK CONFIRM, P gets an INI QP for A's key in the same
 *    way and, once it is READY, sends BIND {conn_id, srqns, tgt: T_P}.  A
 *    verifies T_P in the same way and answers BIND-ACK with its verdict
 *    (REFUSED: P binds again once over a fresh INI QP, as A in step 3).
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
 *    INI QP and answers INI-ACK {tgt: T, verdict OK}; a TGT it cannot make
 *    or move to RTR is destroyed and the answer is REFUSED (a TGT out of
 *    RTR discards what reaches it: the INI QP's retries would run out).  The sender moves its
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
 *    watches the request EVD's completion channel (the consumer may not
 *    poll it): the fence's completion wakes it, and a one-shot timer at
 *    cm_timeout_ms goes on without it.  The peer answers
 *    DISC-ACK at once, reports DISCONNECTED to its consumer if it was
 *    connected and then does the same in its direction.  The side that
 *    began reports DISCONNECTED, and each side destroys its SRQ, once it
 *    has sent its DISC and has the peer's (nothing can be in flight to it
 *    any more), or when its DISC went unanswered or UNKNOWN (the peer is
 *    presumed gone).  ep_free
 *    waits for the fence and (with a progress thread) the peer's DISC at
 *    most cm_timeout_ms; an EP whose fence did not complete keeps its
 *    memory until ia_close.  A teardown that nothing can deliver the
 *    peer's DISC to meanwhile (no progress thread) sends its DISC with
 *    aux 1 and does not wait: its SRQ goes at once, and the peer, told not
 *    to fence to it, ends its side without touching it.  ia_close ends
 *    every XRC connection before it stops the progress thread
 *    (ofx_xrc_ia_quiesce): all are fenced and told at once, and the peers'
 *    DISCs awaited together, at most cm_timeout_ms.  What a teardown
 *    cannot prevent: a peer whose sends or fence are still in flight when
 *    the SRQ goes (the wait ran out, or the peer had not read our DISC
 *    yet when its own teardown fenced) loses its INI QP (section 10).
 *    dat_ep_reset waits for a fence in flight first.  An SRQ that served
 *    a connection is destroyed only after the recv EVD's CQ is drained
 *    (mlx5 leaves a destroyed SRQ's CQEs in the CQ and the poll that meets
 *    one fails with its whole batch): the EP's completions are reported,
 *    or dropped when it is being freed.
 *    Receives still posted when the SRQ goes are dropped
 *    without events; receives posted afterwards wait in the EP for the
 *    next connection, and dat_ep_reset drops them without events (as it
 *    drops what an RC EP's old QP held).  Sending to a destroyed SRQ number would move the sender's
 *    shared INI QP to the error state, which is why no SRQ goes before its
 *    peer is done.  Disconnecting (or ep_free) before CONNECTED sends DISC
 *    without a fence, reports DISCONNECTED at once and does not wait.
 *    DISC with aux 1 says the sender's SRQ is gone or goes without waiting
 *    (its connection broke, section 10, or its teardown cannot wait): the
 *    peer posts no fence (it would name that SRQ and move the peer's own
 *    INI QP to error), reports DISCONNECTED and sends no DISC in return.
 *
 * Control message, 32 bytes, network byte order:
 *        0  u16 magic        0x4F58
 *        2  u8  version      1
 *        3  u8  op           1 CONFIRM, 2 BIND, 3 DISC, 4 INI, 5 INI-CLOSE;
 *                            the answer to op is 0x80 | op
 *        4  u32 conn_id
 *        8  u32 srqn_from    the sender's EP (INI: its INI QP number)
 *       12  u32 srqn_to      the receiver's EP (INI: 0)
 *       16  u32 tag          the sender's domain tag
 *       20  u32 tgt          CONFIRM: T_A; BIND: T_P; INI-ACK: T; else 0
 *       24  u16 port         the sender's service port
 *       26  u8  verdict      answers: 0 none, 1 OK, 2 REFUSED (on the
 *                            request's TGT, or INI: no TGT in RTR was made),
 *                            3 FAILED (CONFIRM: the TGT is fine, the
 *                            receiver cannot go on)
 *       27  u8  status       answers: 0 OK, 1 UNKNOWN (no such EP)
 *       28  u32 aux          INI: the tag expected at the receiver;
 *                            DISC: 1 if the sender's SRQ is gone or goes
 *                            now (no fence to it, no DISC back)
 * An answer swaps srqn_from and srqn_to and carries the answerer's tag and
 * port.  A CONFIRM-ACK with verdict OK is followed by the accept data past
 * the REJ's 120 bytes (flags 1 in the answer, step 2): at most 40 bytes,
 * 72 in all, within the 136 of a SIDR REP.  The carrier delivers a request
 * with ofx_xrc_ctl_request() at the receiver, which returns the answer
 * (and its length) at once, and hands the answer (or none, after
 * OFX_XRC_CTL_TRIES tries) back with ofx_xrc_ctl_answer().
 * INI-CLOSE {conn_id: the INI QP's id, srqn_from: its QP number, tgt: T}
 * says the sender destroyed that INI QP (sent once its last EP went, not
 * to a peer that never answered the INI request); the answer carries
 * nothing.  CONFIRM, BIND, DISC and INI-CLOSE are idempotent; a repeated
 * INI makes a further TGT QP (held like the first: INI-CLOSE
 * releases every TGT made for that INI QP).
 *
 * 7. Lifetimes.
 *    - INI QP: reference counted by the EPs bound to it or waiting for it;
 *      destroyed when the last one goes (a later EP to that node makes a
 *      new one), after its send CQ is drained (mlx5 removes a destroyed
 *      QP's CQEs unreported: they are the flushes its EPs are owed), and
 *      INI-CLOSE then tells the peer; at ia_close in any case.  A DEAD one
 *      is never bound again: new EPs get a fresh INI QP.  A CONFIRM-ACK
 *      or BIND-ACK that REFUSES its TGT makes it DEAD too.
 *    - TGT QP: the kernel destroys it when its last handle goes (the
 *      creator's or one from ibv_open_qp(); ibv_destroy_qp of a handle
 *      only detaches the process), not when the domain closes.  So
 *      exactly these handles hold it:
 *        the creator's (the receiver of the INI request): until the INI
 *          QP it was made for is gone (its INI-CLOSE) and, under 2a, no EP
 *          connection of the creator's own goes through it; in any case
 *          until the creator's ia_close or exit (a sender that dies
 *          without INI-CLOSE leaves it until then); a TGT whose INI
 *          connection ended before the sender took its number goes
 *          then (section 11).
 *      The receiver of every EP reached through it verifies it with
 *      ibv_open_qp(), and
 *        xrc_tgt=domain (2a, default): keeps that handle (one per TGT and
 *          IA, shared by its EPs) while an EP's connection through it
 *          lasts, so the TGT outlives its creator;
 *        xrc_tgt=exit (2b): closes it right after the check: the TGT dies
 *          with its creator (at ia_close or exit), and the INI QPs and EPs
 *          of other processes routed through it then break.
 *    - SRQ: per connection, see step 6.
 *
 * 8. Fallback to RC.  A REP to the offer (a peer that does not run XRC, or
 *    that does not take the offer) makes the connection plain RC on the RC
 *    QP of the REQ (ofx_xrc_conn_fallback closes the SRQ); a REQ without the
 *    offer makes P create an RC QP and accept on it.  That QP lasts as long
 *    as the connection: dat_ep_reset and ep_free destroy it (after draining
 *    its CQEs) and build none.  The EP offers XRC again on its next
 *    connection.
 *
 * 9. p2p.  p2p and XRC compose by exclusion: an EP that asks for p2p makes
 *    no offer, and P never takes an offer that carries OFX_PDATA_F_P2P, so
 *    a p2p connection is RC with the RC RTR rules (SEND, WRITE or READ RTR
 *    as negotiated in the trailer).  An XRC connection has no RTR: its
 *    ordering comes from steps 3-4.
 *
 * 10. Failures.  A send completion in error (other than a flush) on an INI
 *    QP kills it: every EP bound to it reports BROKEN, gets a FLUSHED
 *    completion for each DTO it still has outstanding, and its peer gets a
 *    DISC with aux 1 (it reports DISCONNECTED).  Causes: the peer's SRQ
 *    number is gone (a peer process that died without disconnecting, whose
 *    SRQ even the fence then names); a TGT destroyed under 2b; an RNR
 *    beyond the retry count; a bad rkey; a message longer than the receive
 *    it lands in (below).  The INI QP is the one the completion names
 *    (wc.qp_num), not the EP's: the EP's connection may have ended already
 *    (its peer's DISC with aux 1 came first: it reported DISCONNECTED) while
 *    other EPs are still bound to the dead QP.
 *    A receive completion in error breaks only its EP (BROKEN, and a DISC
 *    with aux 1 to its peer): the receiver's own INI QPs are not involved.
 *    An undersized receive is both at once: the responder completes the
 *    receive with a local length error (the receiving EP gets
 *    DAT_DTO_ERR_LOCAL_LENGTH) and NAKs the message as an invalid request,
 *    so the sender's WR fails with REM_INV_REQ_ERR
 *    (DAT_DTO_ERR_REMOTE_RESPONDER) and its INI QP dies as above.  One
 *    receive too small thus ends every connection of the sending IA that
 *    shares that INI QP, and their peers'; the sending EP and the receiving
 *    EP each report BROKEN, or DISCONNECTED if the other's DISC arrived
 *    before their own error was polled.  XRC trades this fate sharing for
 *    one QP per node instead of per EP.
 *
 * 11. Carrier.  On a device (xrc_cm.c) the IA binds two rdma_cm listeners
 *    on its address with one port number, q: RDMA_PS_IB and RDMA_PS_UDP.
 *    CONFIRM, BIND and DISC are SIDR requests (RDMA_PS_UDP) to q with the
 *    control message as private data, answered in the SIDR REP's private
 *    data (its QP number, 1, means nothing).  INI is an RDMA_PS_IB
 *    connection to q: the sender moves the INI QP to INIT and connects with
 *    the INI message, qp_num = the INI QP, initiator_depth = the device's
 *    max_qp_init_rd_atom (at most 16), responder_resources 0, retry and
 *    rnr_retry 7.  The receiver creates the TGT QP, moves it to INIT and
 *    RTR (max_dest_rd_atomic at most its max_qp_rd_atom) and accepts with
 *    the INI-ACK, qp_num = T and responder_resources = the INI's initiator
 *    depth (the event's responder_resources, rdma_get_cm_event(3)) at most
 *    its max_qp_rd_atom, which becomes the INI's max_rd_atomic; a REFUSED
 *    INI-ACK goes in a REJ instead (also when the TGT cannot reach RTR),
 *    and a TGT whose accept fails is destroyed at once.  On the REP
 *    the sender moves the INI QP to RTR and RTS (if that fails the request
 *    has no answer), sends the RTU (rdma_establish) and destroys its id;
 *    the receiver destroys its id at ESTABLISHED (or an error).  An id of
 *    the receiver's that ends otherwise than ESTABLISHED or DISCONNECTED
 *    (the sender's DREQ after a lost RTU) says that the sender did not
 *    take the REP (REJECTED; UNREACHABLE: the CM's REP retries ran out):
 *    that try's TGT is destroyed then, unless an EP holds it or a CONFIRM
 *    or BIND named it (the sender uses it), since a sender that gets no
 *    answer on any try sends no INI-CLOSE.  The QPs
 *    do not depend on the ids: every QP state comes from
 *    rdma_init_qp_attr() on the connection's id, less the responder
 *    attributes the kernel refuses for an INI QP (max_dest_rd_atomic,
 *    min_rnr_timer; its RESET->INIT requires access flags).  An INI QP that
 *    cannot be created or connected fails the EPs waiting for it, and a
 *    DISC tells their peers, which have taken the offer.  A request whose address or route resolution fails,
 *    that is unreachable or rejected without an answer is sent again on a
 *    new id, OFX_XRC_CTL_TRIES times in all; then it has no answer.  On
 *    IB an id takes the path an earlier id to the same node resolved
 *    instead of asking the SA again (xrc_route.h).
 */

/* The XRC answer (a REJ's private data, step 2). */
#define OFX_XRC_ANSWER_LEN 148
/* Accept data that fits the REJ answer: 148 - 4 - 12 - 12 (trailer). */
#define OFX_XRC_ACCEPT_REJ 120
/* Accept data an XRC connection takes: the REJ's, the rest after the CONFIRM-ACK. */
#define OFX_XRC_ACCEPT_MAX 160
/* How often a control message is sent before the peer counts as gone. */
#define OFX_XRC_CTL_TRIES 3
/* Length of a control message. */
#define OFX_XRC_CTL_LEN 32
/* The longest answer: a CONFIRM-ACK with the accept data past the REJ's. */
#define OFX_XRC_CTL_ANSWER_MAX (OFX_XRC_CTL_LEN + OFX_XRC_ACCEPT_MAX - OFX_XRC_ACCEPT_REJ)

enum ofx_xrc_op {
	OFX_XRC_OP_CONFIRM = 1,
	OFX_XRC_OP_BIND = 2,
	OFX_XRC_OP_DISC = 3,
	OFX_XRC_OP_INI = 4,
	OFX_XRC_OP_INI_CLOSE = 5,
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
	/*
	 * The IA's RC QPs (ia->stats): alive now, and the most at once.  An
	 * active XRC EP holds one from dat_ep_connect to the answer (xrc.h
	 * step 1), so the peak is the connects in flight at once (plus the
	 * connections over RC), none with xrc_rc_fallback=no; a passive side
	 * taking XRC offers makes none.
	 */
	unsigned long rc_qps, rc_qps_peak;
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
 * ofx_xrc_ia_quiesce (ia_close, before the progress thread stops; NULL-safe)
 * ends every XRC connection as ep_free would, the peers' DISCs awaited
 * together (step 6).
 * ofx_xrc_ia_close (after every EP is destroyed) releases INI and TGT QPs
 * and the domain; NULL-safe.
 */
int ofx_xrc_ia_open(struct ofx_ia *ia);
void ofx_xrc_set_transport(struct ofx_ia *ia, const struct ofx_xrc_transport *tp, void *ctx,
			   uint16_t port);
void *ofx_xrc_transport_ctx(const struct ofx_ia *ia);
/* A TGT QP this IA created for an INI request (the carrier moves it). */
struct ibv_qp *ofx_xrc_tgt_qp(struct ofx_ia *ia, uint32_t qpn);
/*
 * The sender will not use that TGT (moving it or accepting the INI
 * connection failed, or the connection ended before the sender took our
 * REP): it goes at once, since no INI-CLOSE may ever name it; unless an
 * EP holds it or a CONFIRM or BIND named it (then the sender uses it).
 * `tgt` is only compared (it may be gone).  No lock held.
 */
void ofx_xrc_tgt_drop(struct ofx_ia *ia, const struct ibv_qp *tgt, uint32_t qpn);
/*
 * At debug level: one line with what ibv_query_qp reports of an INI ("ini")
 * or TGT ("tgt") QP that just became ready, e.g.
 *   xrc ini qp 0x1a2 ready: peer 0x3b4 state RTS max_rd_atomic 16 max_dest_rd_atomic 0 ...
 * dapltest-scripts/xrc-hw.sh reads these lines (keep the format).
 */
void ofx_xrc_log_qp(const char *role, struct ibv_qp *qp);
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
/*
 * A port event of the IA's device (LID, GID, P_Key or SM change, port up
 * or down, client reregister): the carrier forgets the IB paths it keeps
 * (xrc_route.h).  Any thread; the IA is open.
 */
void ofx_xrc_port_changed(struct ofx_ia *ia);

/*
 * Control messages in (see the wire spec): request -> answer (`answer`
 * holds OFX_XRC_CTL_ANSWER_MAX bytes; its length, at least OFX_XRC_CTL_LEN,
 * or a negative errno), answer in (`len` bytes, NULL: none).
 */
int ofx_xrc_ctl_request(struct ofx_ia *ia, const struct sockaddr *src, const uint8_t *req,
			uint8_t *answer);
void ofx_xrc_ctl_answer(struct ofx_ia *ia, const uint8_t *req, const uint8_t *answer, int len);

/*
 * One XRC connection and its owner (an EP: ep_xrc.c).  The owner's lock,
 * given at create, guards the connection; the core takes it in its own
 * handlers (control messages, completions, timers), always before its
 * internal locks.  The owner hears of the connection through these ops,
 * each called with its lock held.  `report`: the consumer is to be told
 * (false once an end was reported or the owner is going: only its state
 * follows).
 */
struct ofx_xrc_owner_ops {
	/* Up in both directions (active: the accept data goes with the event). */
	void (*established)(void *owner, bool active);
	/* Failed before it was established; active: the side that connected. */
	void (*failed)(void *owner, bool active, bool report);
	/* Ended by the DISC exchange (ours, the peer's, or the peer is gone). */
	void (*disconnected)(void *owner, bool report);
	/* Its INI QP died (async: a device event said so). */
	void (*broken)(void *owner, bool report, bool async);
	/* Our DISC is out (or about to be) and the peer's is awaited. */
	void (*disconnecting)(void *owner);
	/* The connection's SRQ takes no more receives: hold them from now on. */
	void (*recv_stop)(void *owner);
	/* Active: accept data past the answer's (step 3), before established. */
	void (*accept_more)(void *owner, const void *data, int len);
};

/* What the connection's SRQ and INI QP are made for, given at offer and accept. */
struct ofx_xrc_conn_params {
	struct ibv_pd *pd;
	struct ofx_evd *recv_evd;	/* the SRQ's completions */
	struct ofx_evd *req_evd;	/* the INI QP's send CQ (NULL: the IA's empty one) */
	void *srq_context;		/* the SRQ's context: the owner's struct ofx_obj */
	uint32_t recv_wr, recv_sge;	/* SRQ size */
	uint32_t send_wr, send_sge;	/* what the INI QP must hold (fence included) */
	uint32_t inline_data;
};

struct ofx_xrc_conn;

/*
 * Life cycle.  ofx_xrc_conn_create: *conn_p NULL (and 0) when the IA has
 * no carrier, so its owner stays plain RC; no verbs resources yet.
 * ofx_xrc_conn_close (owner lock not held) ends the connection (fence,
 * DISC), waiting at most cm_timeout_ms, and releases its SRQ, INI and TGT
 * references; false if the fence did not complete (the owner's sends may
 * still complete: keep its memory).  ofx_xrc_conn_forget (after the owner
 * stopped reporting its completions) reaps what the connection left and
 * waits out handlers that found it; false if its SRQ's completions could
 * not be polled.  ofx_xrc_conn_free (NULL-safe) frees it.
 * ofx_xrc_conn_quiesce (owner lock not held) waits at most cm_timeout_ms
 * for a fence in flight, so that ofx_xrc_conn_reset (owner lock held) finds
 * the connection over; that one prepares for a new one, -EBUSY while one
 * lasts.
 */
int ofx_xrc_conn_create(struct ofx_ia *ia, const struct ofx_xrc_owner_ops *ops, void *owner,
			pthread_mutex_t *lock, struct ofx_xrc_conn **conn_p);
bool ofx_xrc_conn_close(struct ofx_xrc_conn *conn);
bool ofx_xrc_conn_forget(struct ofx_xrc_conn *conn);
void ofx_xrc_conn_free(struct ofx_xrc_conn *conn);
void ofx_xrc_conn_quiesce(struct ofx_xrc_conn *conn);
int ofx_xrc_conn_reset(struct ofx_xrc_conn *conn);

/*
 * Connection steps (the wire spec above), all with the owner's lock held.
 * ofx_xrc_conn_offer (step 1): opens the SRQ and writes the REQ private
 *   data with the offer to `req`; its length, 0 when the consumer's data
 *   leaves no room for the offer (plain RC), or a negative errno.
 *   It makes no offer either when the device cannot make an INI QP with
 *   the EP's request SGEs (mlx5: more than 19), which RC may still hold,
 *   nor while the last connection's SRQ waits for its completions to be
 *   polled (its recv EVD was full).
 * ofx_xrc_conn_fits: those checks (logged when false); the passive
 *   side declines an offer with it (accept over RC).
 * ofx_xrc_conn_offered: the REQ in flight carries an offer.
 * ofx_xrc_conn_fallback (section 8): a REP answered the offer: RC.
 * ofx_xrc_count_rc: a connection of an XRC IA accepted over RC (stats).
 * ofx_xrc_conn_answered (step 2, A): true if a REJECTED event (`status`,
 *   private data) is the XRC answer to the offer; *accept_p then points to
 *   the accept data in it (more may follow: accept_more).  The owner makes its receives go live and calls
 *   ofx_xrc_conn_confirm (step 3) with its queues as they are now, the
 *   peer's address and the result (nonzero: the connection fails, and the
 *   peer is told).
 * ofx_xrc_conn_accept_begin (step 2, P): opens the SRQ for a request with
 *   the offer from `peer`; ofx_xrc_conn_accept_answer writes the answer to
 *   `rej` (at least OFX_XRC_ANSWER_LEN bytes) and returns its length (or a
 *   negative errno), the owner sends it; ofx_xrc_conn_accept_abort undoes
 *   either when a later step fails.
 * ofx_xrc_conn_is_xrc: the connection runs (or ran) over XRC; then
 *   ofx_xrc_conn_disconnect (step 6) ends it.
 */
int ofx_xrc_conn_offer(struct ofx_xrc_conn *conn, const struct ofx_xrc_conn_params *params,
		       const void *pdata, int pdata_len, void *req, int req_len);
bool ofx_xrc_conn_fits(struct ofx_xrc_conn *conn, const struct ofx_xrc_conn_params *params);
bool ofx_xrc_conn_offered(const struct ofx_xrc_conn *conn);
/*
 * xrc_rc_fallback=no (step 1): the QP number for the offer's REQ, of a QP
 * made for it (0 or a negative errno); it goes with the XRC answer, or
 * with the offer's SRQ (fallback, reset, close, the next offer).
 */
int ofx_xrc_conn_req_qpn(struct ofx_xrc_conn *conn, uint32_t *qpn_p);
void ofx_xrc_conn_fallback(struct ofx_xrc_conn *conn);
void ofx_xrc_count_rc(struct ofx_ia *ia);
bool ofx_xrc_conn_answered(struct ofx_xrc_conn *conn, int status, const void *data, int len,
			   const void **accept_p, int *accept_len_p);
void ofx_xrc_conn_confirm(struct ofx_xrc_conn *conn, const struct ofx_xrc_conn_params *params,
			  const struct sockaddr_storage *peer, int err);
int ofx_xrc_conn_accept_begin(struct ofx_xrc_conn *conn, const struct ofx_xrc_conn_params *params,
			      const struct sockaddr_storage *peer);
int ofx_xrc_conn_accept_answer(struct ofx_xrc_conn *conn, const void *pdata, int pdata_len,
			       void *rej, int rej_len);
void ofx_xrc_conn_accept_abort(struct ofx_xrc_conn *conn);
bool ofx_xrc_conn_is_xrc(const struct ofx_xrc_conn *conn);
void ofx_xrc_conn_disconnect(struct ofx_xrc_conn *conn);

/*
 * Data path, lock-free.  ofx_xrc_conn_sq_begin returns the QP to post on
 * (the INI QP, with wr->qp_type.xrc.remote_srqn set; or `rc_qp` outside an
 * XRC connection) or NULL when the connection no longer sends;
 * ofx_xrc_conn_sq_end ends what it began.  ofx_xrc_conn_post_recv posts to
 * the SRQ (or `rc_qp`), 0 or a negative errno.  ofx_xrc_conn_completion: a
 * completion of the owner's work on an XRC connection (errors break it:
 * one on a send kills the INI QP); false if the connection is not XRC.
 * The fence is the core's own work request: its completion reaches the
 * core through the cookie's owner ops (dto.h), not the owner's.
 */
struct ibv_qp *ofx_xrc_conn_sq_begin(struct ofx_xrc_conn *conn, struct ibv_send_wr *wr,
				     struct ibv_qp *rc_qp);
void ofx_xrc_conn_sq_end(struct ofx_xrc_conn *conn, struct ibv_qp *qp, struct ibv_qp *rc_qp);
int ofx_xrc_conn_post_recv(struct ofx_xrc_conn *conn, struct ibv_recv_wr *wr,
			   struct ibv_qp *rc_qp);
bool ofx_xrc_conn_completion(struct ofx_xrc_conn *conn, const struct ibv_wc *wc, bool is_recv);

/*
 * Device async events (ia.c) on XRC QPs, whose qp_context is xrc.c's own
 * (an INI QP's table entry; NULL for a TGT), never a struct ofx_obj.
 * ofx_xrc_owns_qp: `qp` is an INI QP or a TGT handle of this IA.
 * ofx_xrc_qp_event: false if it is not; else handles it: QP_FATAL, REQ_ERR
 * and ACCESS_ERR on an INI QP kill it, and every EP bound to it reports
 * BROKEN on its connection EVD and DAT_ASYNC_ERROR_EP_BROKEN on the async
 * EVD; anything else is logged.  Called from the async handler, no lock
 * held.
 */
bool ofx_xrc_owns_qp(struct ofx_ia *ia, const struct ibv_qp *qp);
bool ofx_xrc_qp_event(struct ofx_ia *ia, const struct ibv_async_event *ev);
/*
 * SRQ_ERR on an XRC SRQ, whose srq_context is the owner's object (not a
 * DAT SRQ).  ofx_xrc_owns_srq: `srq` is the SRQ of a connection of this
 * IA.  ofx_xrc_srq_event: false if it is not; else that connection breaks
 * as on an INI QP's QP_FATAL (BROKEN, DAT_ASYNC_ERROR_EP_BROKEN, and a DISC
 * with aux 1: its peer sends nothing more to it).  Async handler, no lock
 * held.
 */
bool ofx_xrc_owns_srq(struct ofx_ia *ia, const struct ibv_srq *srq);
bool ofx_xrc_srq_event(struct ofx_ia *ia, const struct ibv_async_event *ev);

#endif
