/* SPDX-License-Identifier: BSD-2-Clause */
#include "pdata.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* Trailer field offsets and bit fields (pdata.h). */
#define OFF_MAGIC 0
#define OFF_VER_FLAGS 2
#define OFF_RTR_EXT 3
#define OFF_CONSUMER_LEN 4
#define OFF_RESERVED 5
#define OFF_CHECK 6

#define VERSION_SHIFT 4
#define FLAGS_MASK 0x0f
#define RTR_MASK 0x03
#define RTR_INVALID 3
#define EXT_SHIFT 2
#define EXT_WORD_LEN 4

/* Word 0 of the extension block when the XRC word is sent (has_xrc_word). */
#define EXT_XRC_SRQN 0

/* Byte-wise big-endian access: the trailer has no alignment. */
static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * The check field for `ext_words` words before trailer `t`: the complement
 * of their ones' complement sum and the trailer's, the check read as 0.
 * At most 63 * 2 + 4 words of 0xffff: no overflow of the 32-bit sum.
 */
_Static_assert(OFX_PDATA_HDR_LEN == 8 && OFF_CHECK == 6, "the check is the trailer's last word");

/* inline: the call cost a third of the sum itself, twice per connection */
static inline __attribute__((always_inline)) uint16_t pdata_check(const uint8_t *t,
								    size_t ext_words)
{
	const uint8_t *p = t - ext_words * EXT_WORD_LEN;
	uint32_t sum = (uint32_t)get_be16(t + OFF_MAGIC) + get_be16(t + OFF_VER_FLAGS) +
		       get_be16(t + OFF_CONSUMER_LEN);

	for (; p < t; p += 2)
		sum += get_be16(p);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Only an XRC answer names an SRQ: an offer fits the REQ with the base trailer. */
static bool has_xrc_word(uint8_t flags)
{
	return (flags & (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY)) ==
	       (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY);
}

size_t ofx_pdata_hdr_len(uint8_t flags)
{
	return OFX_PDATA_HDR_LEN + (has_xrc_word(flags) ? EXT_WORD_LEN : 0) +
	       ((flags & OFX_PDATA_F_CSP) ? EXT_WORD_LEN : 0);
}

/* Extension words are assigned in flag order: XRC's SRQ number, then CSP's port. */
static size_t ext_csp_port_index(uint8_t flags)
{
	return has_xrc_word(flags) ? 1 : 0;
}

/*
 * hdr->consumer_len and hdr->version are not read: the trailer records the
 * `consumer_len` argument and the version this code speaks.
 */
int ofx_pdata_encode(const struct ofx_pdata_hdr *hdr, const void *consumer,
		     size_t consumer_len, size_t area_len, void *out, size_t out_max)
{
	uint8_t *buf = out;
	size_t overhead, ext_words, total;
	uint8_t *t;

	if (!hdr || !out || (consumer_len && !consumer))
		return -EINVAL;
	/* both would be lost or misread in their narrow wire fields */
	if (hdr->flags & ~FLAGS_MASK || hdr->rtr >= RTR_INVALID)
		return -EINVAL;
	if (consumer_len > OFX_PDATA_CONSUMER_MAX)
		return -EMSGSIZE;

	overhead = ofx_pdata_hdr_len(hdr->flags);
	ext_words = (overhead - OFX_PDATA_HDR_LEN) / EXT_WORD_LEN;
	total = consumer_len + overhead;
	if (area_len) {
		if (total > area_len)
			return -EMSGSIZE;
		total = area_len;
	}
	if (total > out_max || total > INT_MAX)
		return -EMSGSIZE;

	if (consumer_len)
		memmove(buf, consumer, consumer_len);
	memset(buf + consumer_len, 0, total - consumer_len);

	t = buf + total - OFX_PDATA_HDR_LEN;
	if (has_xrc_word(hdr->flags))
		put_be32(t - (ext_words - EXT_XRC_SRQN) * EXT_WORD_LEN, hdr->xrc_srqn);
	if (hdr->flags & OFX_PDATA_F_CSP)
		put_be32(t - (ext_words - ext_csp_port_index(hdr->flags)) * EXT_WORD_LEN,
			 hdr->csp_port);
	put_be16(t + OFF_MAGIC, OFX_PDATA_MAGIC);
	t[OFF_VER_FLAGS] = (uint8_t)(OFX_PDATA_VERSION << VERSION_SHIFT | hdr->flags);
	t[OFF_RTR_EXT] = (uint8_t)(ext_words << EXT_SHIFT | hdr->rtr);
	t[OFF_CONSUMER_LEN] = (uint8_t)consumer_len;
	t[OFF_RESERVED] = 0;
	put_be16(t + OFF_CHECK, pdata_check(t, ext_words));
	return (int)total;
}

int ofx_pdata_decode(const void *buf, size_t len, struct ofx_pdata_hdr *hdr_p)
{
	const uint8_t *t;
	size_t ext_words, consumer_len;
	uint8_t version, flags, rtr;

	if (!hdr_p)
		return -EINVAL;
	if (!buf || len < OFX_PDATA_HDR_LEN)
		return -ENOENT;

	t = (const uint8_t *)buf + len - OFX_PDATA_HDR_LEN;
	if (get_be16(t + OFF_MAGIC) != OFX_PDATA_MAGIC)
		return -ENOENT;
	/* n and check sit in the same place in every version: verify first */
	ext_words = t[OFF_RTR_EXT] >> EXT_SHIFT;
	if (ext_words * EXT_WORD_LEN > len - OFX_PDATA_HDR_LEN)
		return -EPROTO;
	if (get_be16(t + OFF_CHECK) != pdata_check(t, ext_words))
		return -EPROTO;

	version = t[OFF_VER_FLAGS] >> VERSION_SHIFT;
	if (version != OFX_PDATA_VERSION)
		return -EPROTONOSUPPORT;

	flags = t[OFF_VER_FLAGS] & FLAGS_MASK;
	rtr = t[OFF_RTR_EXT] & RTR_MASK;
	consumer_len = t[OFF_CONSUMER_LEN];
	if (rtr == RTR_INVALID)
		return -EPROTO;
	if (has_xrc_word(flags) && ext_words <= EXT_XRC_SRQN)
		return -EPROTO;
	if ((flags & OFX_PDATA_F_CSP) && ext_words <= ext_csp_port_index(flags))
		return -EPROTO;
	if (consumer_len > len - OFX_PDATA_HDR_LEN - ext_words * EXT_WORD_LEN)
		return -EPROTO;

	hdr_p->version = version;
	hdr_p->flags = flags;
	hdr_p->rtr = rtr;
	hdr_p->consumer_len = (uint16_t)consumer_len;
	hdr_p->xrc_srqn = 0;
	hdr_p->csp_port = 0;
	if (has_xrc_word(flags))
		hdr_p->xrc_srqn = get_be32(t - (ext_words - EXT_XRC_SRQN) * EXT_WORD_LEN);
	if (flags & OFX_PDATA_F_CSP)
		hdr_p->csp_port = (uint16_t)get_be32(t - (ext_words - ext_csp_port_index(flags)) *
						     EXT_WORD_LEN);
	return 0;
}
