/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_EXT_H
#define OFX_EXT_H

#include <stdarg.h>
#include <dat2/udat.h>

/*
 * The DAT_PROVIDER handle_extendedop slot: the DAT IB extensions of
 * dat_ib_extensions.h, version 209 (contract section 5).  `args` holds the
 * operation's arguments after the op code, read with exactly the types the
 * dat_ib_* macros cast them to.
 *
 * - DAT_IB_RDMA_WRITE_IMMED_OP, DAT_IB_CMP_AND_SWAP_OP, DAT_IB_FETCH_AND_ADD_OP:
 *   `handle` is an EP; the WR goes out through ofx_ep_post_sq() and completes
 *   as a DAT_IB_DTO_EVENT (dto.c).  Same threading rule as the DAT post calls:
 *   one posting thread per EP.
 * - DAT_IB_OPEN_QUERY_OP: `handle` is the IA name (libdat2 has already taken
 *   it from the varargs and loaded the provider); opens an IA that libdat2
 *   does not index, answers ia_query into the caller's structs and returns
 *   the raw IA pointer, which the provider-specific attribute strings live
 *   in until DAT_IB_CLOSE_QUERY_OP closes it.
 * - UD, counter and collective ops, and anything unknown: DAT_NOT_IMPLEMENTED,
 *   logged once per op.
 */
DAT_RETURN ofx_ext_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args);

#endif
