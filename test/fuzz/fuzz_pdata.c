/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the private-data trailer.  Every input is
 *   1. decoded as received private data: decode must never read outside the
 *      buffer, and a header it accepts must describe bytes inside it;
 *   2. taken apart into a header, consumer bytes and a padding choice that
 *      are encoded and decoded again: decode(encode(x)) must give back x.
 */
#include "pdata.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AREA_MAX 512

static void check_decode(const uint8_t *data, size_t size)
{
	struct ofx_pdata_hdr hdr;
	int ret = ofx_pdata_decode(data, size, &hdr);

	switch (ret) {
	case 0:
		if (size < OFX_PDATA_HDR_LEN || hdr.version != OFX_PDATA_VERSION ||
		    hdr.consumer_len > size - OFX_PDATA_HDR_LEN)
			abort();
		break;
	case -ENOENT:
	case -EPROTO:
	case -EPROTONOSUPPORT:
		break;
	default:
		abort();
	}
}

static void check_round_trip(const uint8_t *data, size_t size)
{
	static const size_t areas[] = { 0, 56, 196, 148, 64 };
	uint8_t out[AREA_MAX];
	struct ofx_pdata_hdr in, back;
	size_t consumer_len, area;
	int n;

	if (size < 7)
		return;
	memset(&in, 0, sizeof(in));
	in.flags = data[0];
	in.rtr = data[1];
	in.xrc_srqn = (uint32_t)data[2] << 24 | (uint32_t)data[3] << 16 |
		      (uint32_t)data[4] << 8 | data[5];
	area = areas[data[6] % (sizeof(areas) / sizeof(areas[0]))];
	data += 7;
	size -= 7;
	consumer_len = size;

	n = ofx_pdata_encode(&in, data, consumer_len, area, out, sizeof(out));
	if (n < 0) {
		/* only a size problem may stop encoding */
		if (n != -EMSGSIZE)
			abort();
		if (consumer_len + OFX_PDATA_HDR_LEN <= (area ? area : sizeof(out)))
			abort();
		return;
	}
	if ((size_t)n != (area ? area : consumer_len + OFX_PDATA_HDR_LEN))
		abort();
	if (memcmp(out, data, consumer_len))
		abort();
	if (ofx_pdata_decode(out, (size_t)n, &back))
		abort();
	if (back.version != OFX_PDATA_VERSION || back.flags != in.flags || back.rtr != in.rtr ||
	    back.xrc_srqn != in.xrc_srqn || back.consumer_len != consumer_len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_decode(data, size);
	check_round_trip(data, size);
	return 0;
}
