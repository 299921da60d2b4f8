/* SPDX-License-Identifier: BSD-2-Clause */
#include "pdata.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* Trailer field offsets (pdata.h). */
#define OFF_MAGIC 0
#define OFF_VERSION 4
#define OFF_HDR_LEN 5
#define OFF_FLAGS 6
#define OFF_RTR 7
#define OFF_CONSUMER_LEN 8
#define OFF_CHECK 10
#define OFF_XRC_SRQN 12

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

/* Ones' complement sum of the eight big-endian words, the check field read as 0. */
static uint16_t trailer_check(const uint8_t *t)
{
	uint32_t sum = 0;
	int off;

	for (off = 0; off < OFX_PDATA_HDR_LEN; off += 2) {
		if (off != OFF_CHECK)
			sum += get_be16(t + off);
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * hdr->consumer_len and hdr->version are not read: the trailer records the
 * `consumer_len` argument and the version this code speaks.
 */
int ofx_pdata_encode(const struct ofx_pdata_hdr *hdr, const void *consumer,
		     size_t consumer_len, size_t area_len, void *out, size_t out_max)
{
	uint8_t *buf = out;
	size_t total;
	uint8_t *t;

	if (!hdr || !out || (consumer_len && !consumer))
		return -EINVAL;
	if (consumer_len > UINT16_MAX)
		return -EMSGSIZE;

	total = consumer_len + OFX_PDATA_HDR_LEN;
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
	put_be32(t + OFF_MAGIC, OFX_PDATA_MAGIC);
	t[OFF_VERSION] = OFX_PDATA_VERSION;
	t[OFF_HDR_LEN] = OFX_PDATA_HDR_LEN;
	t[OFF_FLAGS] = hdr->flags;
	t[OFF_RTR] = hdr->rtr;
	put_be16(t + OFF_CONSUMER_LEN, (uint16_t)consumer_len);
	put_be32(t + OFF_XRC_SRQN, hdr->xrc_srqn);
	put_be16(t + OFF_CHECK, trailer_check(t));
	return (int)total;
}

int ofx_pdata_decode(const void *buf, size_t len, struct ofx_pdata_hdr *hdr_p)
{
	const uint8_t *t;
	size_t hdr_len, consumer_len;

	if (!hdr_p)
		return -EINVAL;
	if (!buf || len < OFX_PDATA_HDR_LEN)
		return -ENOENT;

	t = (const uint8_t *)buf + len - OFX_PDATA_HDR_LEN;
	if (get_be32(t + OFF_MAGIC) != OFX_PDATA_MAGIC)
		return -ENOENT;
	/* The 16-byte core keeps its layout and checksum in every version. */
	if (get_be16(t + OFF_CHECK) != trailer_check(t))
		return -EPROTO;
	if (t[OFF_VERSION] != OFX_PDATA_VERSION)
		return -EPROTONOSUPPORT;

	hdr_len = t[OFF_HDR_LEN];
	consumer_len = get_be16(t + OFF_CONSUMER_LEN);
	if (hdr_len < OFX_PDATA_HDR_LEN || hdr_len > len || consumer_len > len - hdr_len)
		return -EPROTO;

	hdr_p->version = t[OFF_VERSION];
	hdr_p->flags = t[OFF_FLAGS];
	hdr_p->rtr = t[OFF_RTR];
	hdr_p->consumer_len = (uint16_t)consumer_len;
	hdr_p->xrc_srqn = get_be32(t + OFF_XRC_SRQN);
	return 0;
}
