/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_PDATA_H
#define OFX_PDATA_H

#include <stddef.h>
#include <stdint.h>

/*
 * The provider header carried in CM private data, used only when a
 * negotiated option needs it (p2p RTR, XRC).  Without such an option the
 * consumer's bytes go out raw, exactly as stock libdaplofa sends them.
 *
 * The header is an 8-byte *trailer*, always the last 8 bytes of what is
 * sent, optionally preceded by an extension block of 4-byte words.  The
 * consumer's bytes stay at offset 0 (so a stock peer that reads only its own
 * length sees them unchanged), then zero padding, then the extension words,
 * then the trailer.  On IB/RoCE the receiver always sees the whole transport
 * area (56 bytes in a REQ, 196 in a REP), so the sender pads to that area;
 * on iWARP the length is exact and no padding is needed.  The trailer is
 * kept to 8 bytes, and a REQ's options need no extension word, because
 * stock dtest puts 48 bytes of consumer data in a 56-byte REQ area.
 *
 *   | consumer (consumer_len) | zero padding | ext words (4 * n) | trailer |
 *
 * Trailer (multi-byte fields in network byte order):
 *
 *   0  u16 magic        0x4F58 ("OX")
 *   2  u8  ver_flags    bits 4-7: version (OFX_PDATA_VERSION)
 *                       bits 0-3: flags (OFX_PDATA_F_*)
 *   3  u8  rtr_ext      bits 0-1: enum ofx_rtr_type requested / chosen
 *                       (3 is invalid)
 *                       bits 2-7: n, the number of extension words (0..63)
 *   4  u8  consumer_len bytes of consumer data at offset 0
 *   5  u8  reserved     sent as 0, ignored on receipt
 *   6  u16 check        the complement of the ones' complement sum (carries
 *                       folded back in) of the big-endian 16-bit words of
 *                       the extension block and the trailer, with check
 *                       read as 0.  The magic makes the sum non-zero, and
 *                       storing its complement keeps a zeroed trailer from
 *                       ever checking out.
 *
 * Extension word i (u32, network byte order) starts 4 * (n - i) bytes
 * before the trailer, so word 0 is the furthest from it.  Words are
 * assigned in order to the flags that need them:
 *
 *   OFX_PDATA_F_XRC     with OFX_PDATA_F_REPLY only (the passive side's
 *                       XRC answer, xrc.h step 2): the sender's XRC SRQ
 *                       number.  An offer (F_XRC without F_REPLY) has no
 *                       word: the active side's SRQ number travels in its
 *                       CONFIRM (xrc.h step 3), so the offer takes the
 *                       base trailer alone.  A word after an offer's
 *                       trailer (sent by older builds) is skipped as unknown.
 *   OFX_PDATA_F_CSP     the sender's common service point port (low 16
 *                       bits), which identifies it to the peer's CSP
 *
 * so with both words the SRQ number is word 0 and the CSP port word 1.
 *
 * A compatible addition keeps the version and adds words after the known
 * ones; receivers skip words they do not know, which the checksum still
 * covers.  An incompatible change raises the version.  Every version keeps
 * the magic, the version nibble, n and check where they are, so a receiver
 * can verify any trailer before it looks at the version.
 */
#define OFX_PDATA_MAGIC 0x4F58u
#define OFX_PDATA_VERSION 1
/* The base trailer. */
#define OFX_PDATA_HDR_LEN 8
/* Trailer plus the XRC SRQ number word (an XRC answer: F_XRC | F_REPLY). */
#define OFX_PDATA_XRC_HDR_LEN 12
/* Longest consumer data the u8 consumer_len can describe. */
#define OFX_PDATA_CONSUMER_MAX 255

enum ofx_pdata_flags {
	OFX_PDATA_F_P2P = 1 << 0,	/* sender wants / grants RTR mode */
	OFX_PDATA_F_XRC = 1 << 1,	/* sender's EP is XRC-backed */
	OFX_PDATA_F_REPLY = 1 << 2,	/* this is the passive side's answer */
	OFX_PDATA_F_CSP = 1 << 3,	/* common-connect (DAT 2.0 peer model) */
};

struct ofx_pdata_hdr {
	uint8_t version;
	uint8_t flags;
	uint8_t rtr;
	uint16_t consumer_len;
	uint32_t xrc_srqn;	/* valid with OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY, else 0 */
	uint16_t csp_port;	/* valid with OFX_PDATA_F_CSP, else 0 */
};

/*
 * Bytes the trailer and its extension words add on the wire for a header
 * with these flags (OFX_PDATA_HDR_LEN, OFX_PDATA_XRC_HDR_LEN for an XRC
 * answer, 4 more with OFX_PDATA_F_CSP).
 */
size_t ofx_pdata_hdr_len(uint8_t flags);

/*
 * Builds consumer bytes + padding + extension words + trailer into `out`.
 * `consumer` may lie inside `out`.  `area_len` is the transport's
 * private-data area to pad to (0 = no padding, iWARP).  hdr->version and
 * hdr->consumer_len are not read; hdr->xrc_srqn is sent only with
 * OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY.  Returns the number of bytes to send; -EMSGSIZE if
 * consumer_len exceeds OFX_PDATA_CONSUMER_MAX or consumer_len +
 * ofx_pdata_hdr_len(flags) does not fit in `out_max` (or in area_len when
 * given); -EINVAL for bad arguments (flags beyond the low nibble, rtr 3).
 */
int ofx_pdata_encode(const struct ofx_pdata_hdr *hdr, const void *consumer,
		     size_t consumer_len, size_t area_len, void *out, size_t out_max);

/*
 * Looks for a trailer at the end of `buf`.  Returns 0 and fills `hdr_p` when
 * a valid header is found; -ENOENT when there is none (plain consumer data,
 * e.g. from stock libdaplofa: use the buffer unchanged); -EPROTO when the
 * magic matches but the header is malformed (extension words beyond the
 * buffer, bad checksum, rtr 3, an XRC answer without its word, consumer data
 * overlapping the extension words); -EPROTONOSUPPORT for an unknown
 * version.  `hdr_p` is left alone on failure.  Never reads outside
 * buf[0..len).
 */
int ofx_pdata_decode(const void *buf, size_t len, struct ofx_pdata_hdr *hdr_p);

/*
 * Rejects.  Stock libdaplofa puts a 4-byte header in front of the
 * consumer's reject data (so do we, and XRC's answer starts with it); the
 * rdma_cm REJECTED status of a consumer-defined reject is
 * IB_CM_REJ_CONSUMER_DEFINED; IB CM REJ reason "invalid service ID" means
 * nobody listens at the address and port.
 */
#define OFX_REJ_HDR_LEN 4
#define OFX_REJ_HDR 0x02000200u
#define OFX_REJ_CONSUMER 28
#define OFX_REJ_NO_LISTENER 8

#endif
