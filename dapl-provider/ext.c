/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_DTO
#include "ext.h"

#include "ep.h"
#include "ia.h"
#include "log.h"
#include "status.h"

#include <stdatomic.h>
#include <stdint.h>
#include <dat2/dat_ib_extensions.h>

/* An IB atomic works on one naturally aligned 64-bit word. */
#define OFX_ATOMIC_LEN 8

static const char *const ofx_ext_op_names[] = {
	[DAT_IB_FETCH_AND_ADD_OP] = "fetch_and_add",
	[DAT_IB_CMP_AND_SWAP_OP] = "cmp_and_swap",
	[DAT_IB_RDMA_WRITE_IMMED_OP] = "rdma_write_immed",
	[DAT_IB_UD_SEND_OP] = "ud_send",
	[DAT_IB_QUERY_COUNTERS_OP] = "query_counters",
	[DAT_IB_PRINT_COUNTERS_OP] = "print_counters",
	[DAT_IB_COLLECTIVE_CREATE_MEMBER_OP] = "collective_create_member",
	[DAT_IB_COLLECTIVE_FREE_MEMBER_OP] = "collective_free_member",
	[DAT_IB_COLLECTIVE_CREATE_GROUP_OP] = "collective_create_group",
	[DAT_IB_COLLECTIVE_FREE_GROUP_OP] = "collective_free_group",
	[DAT_IB_COLLECTIVE_SET_CLOCK_OP] = "collective_set_clock",
	[DAT_IB_COLLECTIVE_READ_CLOCK_OP] = "collective_read_clock",
	[DAT_IB_COLLECTIVE_SCATTER_OP] = "collective_scatter",
	[DAT_IB_COLLECTIVE_SCATTERV_OP] = "collective_scatterv",
	[DAT_IB_COLLECTIVE_GATHER_OP] = "collective_gather",
	[DAT_IB_COLLECTIVE_GATHERV_OP] = "collective_gatherv",
	[DAT_IB_COLLECTIVE_ALLGATHER_OP] = "collective_allgather",
	[DAT_IB_COLLECTIVE_ALLGATHERV_OP] = "collective_allgatherv",
	[DAT_IB_COLLECTIVE_ALLTOALL_OP] = "collective_alltoall",
	[DAT_IB_COLLECTIVE_ALLTOALLV_OP] = "collective_alltoallv",
	[DAT_IB_COLLECTIVE_REDUCE_OP] = "collective_reduce",
	[DAT_IB_COLLECTIVE_ALLREDUCE_OP] = "collective_allreduce",
	[DAT_IB_COLLECTIVE_REDUCE_SCATTER_OP] = "collective_reduce_scatter",
	[DAT_IB_COLLECTIVE_SCAN_OP] = "collective_scan",
	[DAT_IB_COLLECTIVE_BROADCAST_OP] = "collective_broadcast",
	[DAT_IB_COLLECTIVE_BARRIER_OP] = "collective_barrier",
	[DAT_IB_START_COUNTERS_OP] = "start_counters",
	[DAT_IB_STOP_COUNTERS_OP] = "stop_counters",
	[DAT_IB_UD_CM_FREE_OP] = "ud_cm_free",
	[DAT_IB_UD_AH_FREE_OP] = "ud_ah_free",
};

static const char *ofx_ext_op_str(DAT_EXTENDED_OP op)
{
	if (op == DAT_IB_OPEN_QUERY_OP)
		return "open_query";
	if (op == DAT_IB_CLOSE_QUERY_OP)
		return "close_query";
	if (op >= 0 && (size_t)op < OFX_ARRAY_SIZE(ofx_ext_op_names) && ofx_ext_op_names[op])
		return ofx_ext_op_names[op];
	return "unknown";
}

/* Refuses `op`, logging why the first time each op is seen (ops past 62 share a bit). */
static DAT_RETURN ofx_ext_unsupported(DAT_EXTENDED_OP op, const char *why)
{
	static _Atomic uint64_t logged;
	uint64_t bit = UINT64_C(1) << (op >= 0 && op < 63 ? op : 63);

	if (!(atomic_fetch_or(&logged, bit) & bit))
		ofx_warn("ib extension op %s (%d) not implemented: %s", ofx_ext_op_str(op), op,
			 why);
	return OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE);
}

static bool ofx_ext_op_is_collective(DAT_EXTENDED_OP op)
{
	return op >= DAT_IB_COLLECTIVE_CREATE_MEMBER_OP && op <= DAT_IB_COLLECTIVE_BARRIER_OP;
}

/*
 * dat_ib_post_rdma_write_immed(ep, nsegs, lbuf, cookie, rbuf, idata, flags).
 * The immediate goes out in host order, as stock sends it (contract 5).
 */
static DAT_RETURN ofx_ext_write_immed(struct ofx_ep *ep, va_list args)
{
	struct ofx_sq_post p = { .op = OFX_OP_WRITE_IMM };

	p.n = va_arg(args, DAT_COUNT);
	p.iov = va_arg(args, DAT_LMR_TRIPLET *);
	p.cookie = va_arg(args, DAT_DTO_COOKIE);
	p.rmr = va_arg(args, DAT_RMR_TRIPLET *);
	p.imm = va_arg(args, DAT_UINT32);
	p.flags = va_arg(args, DAT_COMPLETION_FLAGS);

	if (!p.rmr)
		return OFX_INVALID_ARG(5);
	return ofx_ep_post_sq(ep, &p);
}

/*
 * dat_ib_post_cmp_and_swap(ep, compare, swap, lbuf, cookie, rbuf, flags) and
 * dat_ib_post_fetch_and_add(ep, add, lbuf, cookie, rbuf, flags).  The
 * original remote word lands in the first 8 bytes of lbuf.
 */
static DAT_RETURN ofx_ext_atomic(struct ofx_ep *ep, DAT_EXTENDED_OP op, va_list args)
{
	bool cas = op == DAT_IB_CMP_AND_SWAP_OP;
	struct ofx_sq_post p = { .op = cas ? OFX_OP_CMP_SWAP : OFX_OP_FETCH_ADD, .n = 1 };
	const DAT_LMR_TRIPLET *lmr;
	DAT_LMR_TRIPLET seg;

	p.compare_add = va_arg(args, DAT_UINT64);
	if (cas)
		p.swap = va_arg(args, DAT_UINT64);
	lmr = va_arg(args, DAT_LMR_TRIPLET *);
	p.cookie = va_arg(args, DAT_DTO_COOKIE);
	p.rmr = va_arg(args, DAT_RMR_TRIPLET *);
	p.flags = va_arg(args, DAT_COMPLETION_FLAGS);

	if (ep->obj.ia->dev_attr.atomic_cap == IBV_ATOMIC_NONE)
		return ofx_ext_unsupported(op, "the device has no atomics (atomic_cap NONE)");
	if (!lmr || lmr->segment_length < OFX_ATOMIC_LEN) {
		ofx_dbg("ep %p %s: local buffer %s", (void *)ep, ofx_ext_op_str(op),
			lmr ? "shorter than 8 bytes" : "missing");
		return cas ? OFX_INVALID_ARG(4) : OFX_INVALID_ARG(3);
	}
	if (!p.rmr || p.rmr->virtual_address % OFX_ATOMIC_LEN) {
		ofx_dbg("ep %p %s: remote address %s", (void *)ep, ofx_ext_op_str(op),
			p.rmr ? "not 8-byte aligned" : "missing");
		return cas ? OFX_INVALID_ARG(6) : OFX_INVALID_ARG(5);
	}
	if (ep->attr.max_rdma_read_out <= 0) {
		/* verbs counts atomics against the initiator depth, as reads */
		ofx_dbg("ep %p %s: max_rdma_read_out is 0, no atomic can be outstanding",
			(void *)ep, ofx_ext_op_str(op));
		return OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	}

	/* ibv_post_send copies the segment: a local one may be shortened to the word */
	seg = *lmr;
	seg.segment_length = OFX_ATOMIC_LEN;
	p.iov = &seg;
	return ofx_ep_post_sq(ep, &p);
}

static DAT_RETURN ofx_ext_ep_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args)
{
	struct ofx_ep *ep = ofx_ep_from_handle(handle);

	if (!ep)
		return ofx_invalid_handle(OFX_OBJ_EP);
	if (ep->obj.ia->transport == OFX_TRANSPORT_IWARP)
		return ofx_ext_unsupported(op, "iWARP has no IB extensions");
	if (op == DAT_IB_RDMA_WRITE_IMMED_OP)
		return ofx_ext_write_immed(ep, args);
	return ofx_ext_atomic(ep, op, args);
}

/*
 * dat_ib_open_query(name, &ia, ia_mask, ia_attr, prov_mask, prov_attr); libdat2
 * passes the name as the handle and the varargs start at &ia.  The IA is a
 * full one (stock opens its device in a query mode instead), which keeps
 * ia_query's answers identical to a dat_ia_open'ed IA's.
 */
static DAT_RETURN ofx_ext_open_query(DAT_HANDLE name, va_list args)
{
	DAT_HANDLE *ia_p = va_arg(args, DAT_HANDLE *);
	DAT_IA_ATTR_MASK ia_mask = va_arg(args, DAT_IA_ATTR_MASK);
	DAT_IA_ATTR *ia_attr = va_arg(args, DAT_IA_ATTR *);
	DAT_PROVIDER_ATTR_MASK prov_mask = va_arg(args, DAT_PROVIDER_ATTR_MASK);
	DAT_PROVIDER_ATTR *prov_attr = va_arg(args, DAT_PROVIDER_ATTR *);
	DAT_IA_HANDLE ia;
	DAT_RETURN status;

	if (!name)
		return OFX_INVALID_ARG(1);
	if (!ia_p)
		return OFX_INVALID_ARG(2);
	status = ofx_ia_open((DAT_NAME_PTR)name, 0, NULL, &ia);
	if (status != DAT_SUCCESS)
		return status;
	status = ofx_ia_query(ia, NULL, ia_mask, ia_attr, prov_mask, prov_attr);
	if (status != DAT_SUCCESS) {
		ofx_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
		return status;
	}
	ofx_dbg("ia %s: open for query as %p", (const char *)name, ia);
	*ia_p = ia;
	return DAT_SUCCESS;
}

/* dat_ib_close_query(ia): the raw IA that open_query returned. */
static DAT_RETURN ofx_ext_close_query(DAT_HANDLE handle)
{
	struct ofx_ia *ia = ofx_ia_from_handle(handle);

	if (!ia)
		return ofx_invalid_handle(OFX_OBJ_IA);
	/* an IA libdat2 indexes came from dat_ia_open and holds its own registry refs */
	if (ofx_ia_dat_handle(ia) != (DAT_IA_HANDLE)ia) {
		ofx_err("ia %p was opened by dat_ia_open: close it with dat_ia_close", handle);
		return ofx_invalid_handle(OFX_OBJ_IA);
	}
	return ofx_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
}

DAT_RETURN ofx_ext_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args)
{
	switch (op) {
	case DAT_IB_RDMA_WRITE_IMMED_OP:
	case DAT_IB_CMP_AND_SWAP_OP:
	case DAT_IB_FETCH_AND_ADD_OP:
		return ofx_ext_ep_op(handle, op, args);
	case DAT_IB_OPEN_QUERY_OP:
		return ofx_ext_open_query(handle, args);
	case DAT_IB_CLOSE_QUERY_OP:
		return ofx_ext_close_query(handle);
	case DAT_IB_UD_SEND_OP:
	case DAT_IB_UD_CM_FREE_OP:
	case DAT_IB_UD_AH_FREE_OP:
		return ofx_ext_unsupported(op, "no UD endpoints over rdma_cm (RC only, as stock)");
	case DAT_IB_QUERY_COUNTERS_OP:
	case DAT_IB_PRINT_COUNTERS_OP:
	case DAT_IB_START_COUNTERS_OP:
	case DAT_IB_STOP_COUNTERS_OP:
		return ofx_ext_unsupported(op, "no counters (DAT_COUNTERS is not advertised)");
	default:
		return ofx_ext_unsupported(op, ofx_ext_op_is_collective(op) ?
					   "no collectives" : "unknown op");
	}
}
