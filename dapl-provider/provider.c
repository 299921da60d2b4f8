/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "provider.h"

#include "cno.h"
#include "cr.h"
#include "csp.h"
#include "ep.h"
#include "evd.h"
#include "ext.h"
#include "ia.h"
#include "instance.h"
#include "log.h"
#include "lmr.h"
#include "pz.h"
#include "rmr.h"
#include "sp.h"
#include "srq.h"
#include "status.h"
#include "unsupported.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Any live object we handed out, IA indices included. */
static struct ofx_obj *ofx_obj_any(DAT_HANDLE h)
{
	struct ofx_obj *obj = h;

	if ((uintptr_t)h < OFX_IA_INDEX_LIMIT) {
		struct ofx_ia *ia = ofx_ia_lookup(h);

		return ia ? &ia->obj : NULL;
	}
	if (obj->type <= OFX_OBJ_FREED || obj->type >= OFX_OBJ_TYPE_COUNT)
		return NULL;
	return obj;
}

static DAT_RETURN ofx_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context)
{
	struct ofx_obj *obj = ofx_obj_any(h);

	if (!obj)
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
	obj->context = context;
	return DAT_SUCCESS;
}

static DAT_RETURN ofx_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context_p)
{
	struct ofx_obj *obj = ofx_obj_any(h);

	if (!obj)
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
	if (!context_p)
		return OFX_INVALID_ARG(2);
	*context_p = obj->context;
	return DAT_SUCCESS;
}

static DAT_RETURN ofx_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type_p)
{
	struct ofx_obj *obj = ofx_obj_any(h);

	if (!obj)
		return OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
	if (!type_p)
		return OFX_INVALID_ARG(2);
	*type_p = ofx_obj_dat_type(obj->type);
	return DAT_SUCCESS;
}

const DAT_PROVIDER ofx_provider_template = {
	/* device_name and extension are set per instance by dat_provider_init */

	/* IA and helpers */
	.ia_open_func = ofx_ia_open,
	.ia_query_func = ofx_ia_query,
	.ia_close_func = ofx_ia_close,
	.ia_ha_related_func = ofx_ia_ha_related,
	.set_consumer_context_func = ofx_set_consumer_context,
	.get_consumer_context_func = ofx_get_consumer_context,
	.get_handle_type_func = ofx_get_handle_type,

	/* CNO */
	.cno_create_func = ofx_cno_create,
	.cno_modify_agent_func = ofx_cno_modify_agent,
	.cno_query_func = ofx_cno_query,
	.cno_free_func = ofx_cno_free,
	.cno_wait_func = ofx_cno_wait,
	.cno_fd_create_func = ofx_cno_fd_create,
	.cno_trigger_func = ofx_cno_trigger,

	/* CR */
	.cr_query_func = ofx_cr_query,
	.cr_accept_func = ofx_cr_accept,
	.cr_reject_func = ofx_cr_reject,
	.cr_handoff_func = ofx_cr_handoff,

	/* EVD */
	.evd_create_func = ofx_evd_create,
	.evd_query_func = ofx_evd_query,
	.evd_modify_cno_func = ofx_evd_modify_cno,
	.evd_enable_func = ofx_evd_enable,
	.evd_disable_func = ofx_evd_disable,
	.evd_wait_func = ofx_evd_wait,
	.evd_resize_func = ofx_evd_resize,
	.evd_post_se_func = ofx_evd_post_se,
	.evd_dequeue_func = ofx_evd_dequeue,
	.evd_free_func = ofx_evd_free,
	.evd_set_unwaitable_func = ofx_evd_set_unwaitable,
	.evd_clear_unwaitable_func = ofx_evd_clear_unwaitable,

	/* EP */
	.ep_create_func = ofx_ep_create,
	.ep_create_with_srq_func = ofx_ep_create_with_srq,
	.ep_query_func = ofx_ep_query,
	.ep_modify_func = ofx_ep_modify,
	.ep_connect_func = ofx_ep_connect,
	.ep_common_connect_func = ofx_ep_common_connect,
	.ep_dup_connect_func = ofx_ep_dup_connect,
	.ep_disconnect_func = ofx_ep_disconnect,
	.ep_post_send_func = ofx_ep_post_send,
	.ep_post_send_with_invalidate_func = ofx_ep_post_send_with_invalidate,
	.ep_post_recv_func = ofx_ep_post_recv,
	.ep_post_rdma_read_func = ofx_ep_post_rdma_read,
	.ep_post_rdma_read_to_rmr_func = ofx_ep_post_rdma_read_to_rmr,
	.ep_post_rdma_write_func = ofx_ep_post_rdma_write,
	.ep_get_status_func = ofx_ep_get_status,
	.ep_free_func = ofx_ep_free,
	.ep_reset_func = ofx_ep_reset,
	.ep_recv_query_func = ofx_ep_recv_query,
	.ep_set_watermark_func = ofx_ep_set_watermark,

	/* LMR */
	.lmr_create_func = ofx_lmr_create,
	.lmr_query_func = ofx_lmr_query,
	.lmr_free_func = ofx_lmr_free,
	.lmr_sync_rdma_read_func = ofx_lmr_sync_rdma_read,
	.lmr_sync_rdma_write_func = ofx_lmr_sync_rdma_write,

	/* RMR */
	.rmr_create_func = ofx_rmr_create,
	.rmr_create_for_ep_func = ofx_rmr_create_for_ep,
	.rmr_query_func = ofx_rmr_query,
	.rmr_bind_func = ofx_rmr_bind,
	.rmr_free_func = ofx_rmr_free,

	/* PSP, RSP, CSP */
	.psp_create_func = ofx_psp_create,
	.psp_create_any_func = ofx_psp_create_any,
	.psp_query_func = ofx_psp_query,
	.psp_free_func = ofx_psp_free,
	.rsp_create_func = ofx_rsp_create,
	.rsp_query_func = ofx_rsp_query,
	.rsp_free_func = ofx_rsp_free,
	.csp_create_func = ofx_csp_create,
	.csp_query_func = ofx_csp_query,
	.csp_free_func = ofx_csp_free,

	/* PZ */
	.pz_create_func = ofx_pz_create,
	.pz_query_func = ofx_pz_query,
	.pz_free_func = ofx_pz_free,

	/* SRQ */
	.srq_create_func = ofx_srq_create,
	.srq_free_func = ofx_srq_free,
	.srq_post_recv_func = ofx_srq_post_recv,
	.srq_query_func = ofx_srq_query,
	.srq_resize_func = ofx_srq_resize,
	.srq_set_lw_func = ofx_srq_set_lw,

	/* IB extensions */
	.handle_extendedop_func = ofx_ext_op,
};

__attribute__((visibility("default")))
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data)
{
	struct ofx_provider *prov;
	DAT_RETURN status;
	size_t len;

	ofx_log_init();
	if (!info) {
		ofx_err("dat_provider_init called without provider info");
		return;
	}

	prov = calloc(1, sizeof(*prov));
	if (!prov) {
		ofx_err("ia %.*s: out of memory", DAT_NAME_MAX_LENGTH, info->ia_name);
		return;
	}
	len = strnlen(info->ia_name, sizeof(prov->name) - 1);
	memcpy(prov->name, info->ia_name, len);
	prov->name[len] = '\0';
	prov->dat = ofx_provider_template;
	prov->dat.device_name = prov->name;
	prov->dat.extension = prov;
	prov->info = *info;
	ofx_list_init(&prov->link);

	/*
	 * A bad ia_params still registers: ia_open then fails with
	 * DAT_INVALID_PARAMETER and a log line, which says more to the
	 * consumer than DAT_PROVIDER_NOT_FOUND would.
	 */
	prov->params_error = ofx_ia_params_split(instance_data, prov);

	ofx_provider_add(prov);

	status = dat_registry_add_provider(&prov->dat, info);
	if (status != DAT_SUCCESS) {
		ofx_err("ia %s: dat_registry_add_provider failed: 0x%x", prov->name, status);
		ofx_provider_remove(prov);
		free(prov);
		return;
	}
	if (prov->params_error)
		ofx_info("ia %s: registered with unusable ia_params: ia_open will fail",
			 prov->name);
	else
		ofx_info("ia %s: registered (device \"%s\", options \"%s\")", prov->name,
			 prov->device, prov->options);
}

__attribute__((visibility("default")))
void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	struct ofx_provider *prov = NULL;
	char name[DAT_NAME_MAX_LENGTH];
	DAT_RETURN status;
	bool last;
	size_t len;

	if (!info) {
		ofx_err("dat_provider_fini called without provider info");
		return;
	}
	len = strnlen(info->ia_name, sizeof(name) - 1);
	memcpy(name, info->ia_name, len);
	name[len] = '\0';

	prov = ofx_provider_find(name);
	if (!prov) {
		ofx_warn("ia %s: dat_provider_fini for a name that is not registered", name);
	} else {
		status = dat_registry_remove_provider(&prov->dat, info);
		if (status != DAT_SUCCESS) {
			/* libdat2 still points at the table: keep it rather than free it. */
			ofx_err("ia %s: dat_registry_remove_provider failed: 0x%x", name, status);
			return;
		}
	}

	last = ofx_provider_remove(prov);

	if (prov)
		ofx_dbg("ia %s: unregistered", name);
	free(prov);
	if (last)
		ofx_log_fini();
}
