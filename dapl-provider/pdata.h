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
 * The header is a 16-byte *trailer*: the consumer's bytes stay at offset 0
 * (so a stock peer that reads only its own length sees them unchanged), then
 * zero padding, then the trailer in the last 16 bytes of what is sent.  On
 * IB/RoCE the receiver always sees the whole transport area (56 bytes in a
 * REQ, 196 in a REP), so the sender pads to that area; on iWARP the length
 * is exact and no padding is needed.  Wire layout (multi-byte fields in
 * network byte order):
 *
 *   0  u32 magic        0x4F46584B ("OFXK")
 *   4  u8  version      OFX_PDATA_VERSION
 *   5  u8  hdr_len      16 (a later version may grow it; receivers skip
 *                       what they do not know)
 *   6  u8  flags        OFX_PDATA_F_*
 *   7  u8  rtr          enum ofx_rtr_type requested / chosen
 *   8  u16 consumer_len bytes of consumer data at offset 0
 *  10  u16 check        ones' complement sum of the 16 bytes (check = 0)
 *  12  u32 xrc_srqn     the sender's XRC SRQ number (XRC only, else 0)
 */
#define OFX_PDATA_MAGIC 0x4F46584Bu
#define OFX_PDATA_VERSION 1
#define OFX_PDATA_HDR_LEN 16

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
	uint32_t xrc_srqn;
};

/*
 * Builds consumer bytes + padding + trailer into `out`.  `area_len` is the
 * transport's private-data area to pad to (0 = no padding, iWARP).  Returns
 * the number of bytes to send, or -EMSGSIZE if consumer_len + header does not
 * fit in `out_max` (or in area_len when given), -EINVAL for bad arguments.
 */
int ofx_pdata_encode(const struct ofx_pdata_hdr *hdr, const void *consumer,
		     size_t consumer_len, size_t area_len, void *out, size_t out_max);

/*
 * Looks for a trailer at the end of `buf`.  Returns 0 and fills `hdr_p` when
 * a valid header is found; -ENOENT when there is none (plain consumer data,
 * e.g. from stock libdaplofa: use the buffer unchanged); -EPROTO when the
 * magic matches but the header is malformed (bad checksum, hdr_len,
 * consumer_len beyond the buffer); -EPROTONOSUPPORT for an unknown major
 * version.  Never reads outside buf[0..len).
 */
int ofx_pdata_decode(const void *buf, size_t len, struct ofx_pdata_hdr *hdr_p);

#endif
