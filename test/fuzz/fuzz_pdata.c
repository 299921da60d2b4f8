/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the private-data trailer.  Every input is
 *   1. decoded as received private data: decode must never read outside the
 *      buffer, and a header it accepts must describe bytes inside it and
 *      survive being encoded and decoded again;
 *   2. taken apart into a header, consumer bytes and a padding choice that
 *      are encoded and decoded again: decode(encode(x)) must give back x.
 * Both sides are also held to a separate reading of the pdata.h layout, so
 * that a mistake made the same way in encode and decode is still caught.
 */
#include "pdata.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AREA_MAX 512

/* pdata.h: complement of the ones' complement sum of ext words + trailer. */
static uint16_t spec_check(const uint8_t *t, size_t ext)
{
	const uint8_t *p = t - 4 * ext;
	uint32_t sum = 0;

	for (; p < t + 8; p += 2) {
		if (p != t + 6)
			sum += (uint32_t)p[0] << 8 | p[1];
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Does the trailer at the end of buf[0..size) say what hdr says? */
/* pdata.h: only an XRC answer (F_XRC | F_REPLY) carries the SRQ number word */
static bool xrc_word(uint8_t flags)
{
	return (flags & (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY)) ==
	       (OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY);
}

static void check_spec(const uint8_t *buf, size_t size, const struct ofx_pdata_hdr *hdr)
{
	const uint8_t *t = buf + size - 8;
	size_t ext = t[3] >> 2;

	if (size < 8 + 4 * ext || hdr->consumer_len + 4 * ext + 8 > size)
		abort();
	if (t[0] != 0x4f || t[1] != 0x58 || (t[6] << 8 | t[7]) != spec_check(t, ext))
		abort();
	if (t[2] >> 4 != OFX_PDATA_VERSION || (t[2] & 0x0f) != hdr->flags ||
	    (t[3] & 0x03) != hdr->rtr || t[4] != hdr->consumer_len)
		abort();
	/* words in flag order: an XRC answer's SRQ number, then CSP's port */
	if (xrc_word(hdr->flags)) {
		const uint8_t *w = t - 4 * ext;

		if (!ext || hdr->xrc_srqn != ((uint32_t)w[0] << 24 | (uint32_t)w[1] << 16 |
					      (uint32_t)w[2] << 8 | w[3]))
			abort();
	}
	if (hdr->flags & OFX_PDATA_F_CSP) {
		size_t i = xrc_word(hdr->flags) ? 1 : 0;
		const uint8_t *w = t - 4 * (ext - i);

		if (ext <= i || hdr->csp_port != (uint16_t)(w[2] << 8 | w[3]))
			abort();
	}
}

static void check_same(const struct ofx_pdata_hdr *a, const struct ofx_pdata_hdr *b)
{
	if (a->version != b->version || a->flags != b->flags || a->rtr != b->rtr ||
	    a->consumer_len != b->consumer_len || a->xrc_srqn != b->xrc_srqn ||
	    a->csp_port != b->csp_port)
		abort();
}

/*
 * An accepted header, re-encoded into the same number of bytes, must decode
 * to itself with the consumer bytes in place: the unknown extension words
 * and reserved bits it may have carried are the only things dropped.
 */
static void check_reencode(const uint8_t *data, size_t size, const struct ofx_pdata_hdr *hdr)
{
	uint8_t out[AREA_MAX];
	struct ofx_pdata_hdr back;
	int n;

	if (size > sizeof(out))
		return;
	n = ofx_pdata_encode(hdr, data, hdr->consumer_len, size, out, sizeof(out));
	if (n != (int)size || memcmp(out, data, hdr->consumer_len))
		abort();
	if (ofx_pdata_decode(out, (size_t)n, &back))
		abort();
	check_same(hdr, &back);
}

static void check_decode(const uint8_t *data, size_t size)
{
	struct ofx_pdata_hdr hdr;
	int ret = ofx_pdata_decode(data, size, &hdr);

	switch (ret) {
	case 0:
		if (hdr.version != OFX_PDATA_VERSION || hdr.flags > 0x0f || hdr.rtr > 2 ||
		    hdr.consumer_len + ofx_pdata_hdr_len(hdr.flags) > size)
			abort();
		if (!xrc_word(hdr.flags) && hdr.xrc_srqn)
			abort();
		if (!(hdr.flags & OFX_PDATA_F_CSP) && hdr.csp_port)
			abort();
		check_spec(data, size, &hdr);
		check_reencode(data, size, &hdr);
		break;
	case -ENOENT:
		/* below the trailer's size or without the magic at its start */
		if (size >= OFX_PDATA_HDR_LEN &&
		    data[size - OFX_PDATA_HDR_LEN] == (OFX_PDATA_MAGIC >> 8) &&
		    data[size - OFX_PDATA_HDR_LEN + 1] == (OFX_PDATA_MAGIC & 0xff))
			abort();
		break;
	case -EPROTO:
	case -EPROTONOSUPPORT:
		if (size < OFX_PDATA_HDR_LEN)
			abort();
		break;
	default:
		abort();
	}
}

static void check_round_trip(const uint8_t *data, size_t size)
{
	static const size_t areas[] = { 0, 56, 196, 148, 64, 12, 8 };
	uint8_t out[AREA_MAX];
	struct ofx_pdata_hdr in, back;
	size_t consumer_len, area, need;
	int n;

	if (size < 7)
		return;
	memset(&in, 0, sizeof(in));
	/* one bit beyond the flag nibble and rtr 3 are there to be refused */
	in.flags = data[0] & 0x1f;
	in.rtr = data[1] & 0x03;
	in.xrc_srqn = (uint32_t)data[2] << 24 | (uint32_t)data[3] << 16 |
		      (uint32_t)data[4] << 8 | data[5];
	in.csp_port = (uint16_t)(data[3] << 8 | data[5]);
	area = areas[data[6] % (sizeof(areas) / sizeof(areas[0]))];
	data += 7;
	size -= 7;
	consumer_len = size;

	n = ofx_pdata_encode(&in, data, consumer_len, area, out, sizeof(out));
	if (in.flags > 0x0f || in.rtr > 2) {
		if (n != -EINVAL)
			abort();
		return;
	}
	need = consumer_len + ofx_pdata_hdr_len(in.flags);
	if (n < 0) {
		/* only a size problem may stop encoding */
		if (n != -EMSGSIZE)
			abort();
		if (consumer_len <= OFX_PDATA_CONSUMER_MAX &&
		    need <= (area ? area : sizeof(out)))
			abort();
		return;
	}
	if (consumer_len > OFX_PDATA_CONSUMER_MAX || (size_t)n != (area ? area : need))
		abort();
	if (memcmp(out, data, consumer_len))
		abort();
	/* zero padding between the consumer bytes and the extension words */
	for (size_t i = consumer_len; i < (size_t)n - ofx_pdata_hdr_len(in.flags); i++)
		if (out[i])
			abort();
	/* what we send carries no unknown words and a zero reserved byte */
	if (out[n - 3] != 0 ||
	    out[n - 5] >> 2 != (xrc_word(in.flags) ? 1 : 0) +
				(in.flags & OFX_PDATA_F_CSP ? 1 : 0))
		abort();
	if (ofx_pdata_decode(out, (size_t)n, &back))
		abort();
	in.version = OFX_PDATA_VERSION;
	in.consumer_len = (uint16_t)consumer_len;
	if (!xrc_word(in.flags))
		in.xrc_srqn = 0;
	if (!(in.flags & OFX_PDATA_F_CSP))
		in.csp_port = 0;
	check_same(&in, &back);
	check_spec(out, (size_t)n, &in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_decode(data, size);
	check_round_trip(data, size);
	return 0;
}
