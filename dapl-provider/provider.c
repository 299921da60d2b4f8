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
#include "log.h"
#include "lmr.h"
#include "pz.h"
#include "rmr.h"
#include "sp.h"
#include "srq.h"
#include "status.h"
#include "unsupported.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Below this value an IA handle is a libdat2 index, never one of our pointers. */
#define OFX_IA_INDEX_LIMIT 0x10000

/*
 * The provider instances, one per dat.conf IA name in use.  The lock guards
 * the list only: libdat2 serialises init and fini (it calls both under its
 * static-registry mutex), and it never calls the registry back into us, so
 * the registry calls are made without the lock.
 */
static pthread_mutex_t ofx_provider_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofx_list ofx_providers = { &ofx_providers, &ofx_providers };

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

static bool ofx_is_blank(char c)
{
	return isspace((unsigned char)c);
}

/* Copies [s, s + len) into dst; -EINVAL with a log line if it does not fit. */
static int ofx_copy_part(char *dst, size_t size, const char *s, size_t len, const char *what,
			 const char *ia_params)
{
	if (len >= size) {
		ofx_err("ia_params \"%s\": %s is longer than %zu characters", ia_params, what,
			size - 1);
		return -EINVAL;
	}
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

int ofx_ia_params_split(const char *ia_params, struct ofx_provider *prov)
{
	char device[sizeof(prov->device)], port[sizeof(prov->port)];
	char options[sizeof(prov->options)];
	const char *s, *end;
	int ret;

	if (!ia_params) {
		ofx_err("ia %s: no ia_params (expected \"<device> <port> [key=value ...]\")",
			prov->name);
		return -EINVAL;
	}
	if (strlen(ia_params) >= OFX_IA_PARAMS_MAX) {
		ofx_err("ia %s: ia_params longer than %d characters", prov->name,
			OFX_IA_PARAMS_MAX - 1);
		return -EINVAL;
	}

	for (s = ia_params; ofx_is_blank(*s); s++)
		;
	for (end = s; *end && !ofx_is_blank(*end); end++)
		;
	if (end == s) {
		ofx_err("ia %s: ia_params \"%s\" names no device", prov->name, ia_params);
		return -EINVAL;
	}
	ret = ofx_copy_part(device, sizeof(device), s, end - s, "the device", ia_params);
	if (ret)
		return ret;

	for (s = end; ofx_is_blank(*s); s++)
		;
	for (end = s; *end && !ofx_is_blank(*end); end++)
		;
	if (end == s) {
		ofx_err("ia %s: ia_params \"%s\" has no port after the device", prov->name,
			ia_params);
		return -EINVAL;
	}
	ret = ofx_copy_part(port, sizeof(port), s, end - s, "the port", ia_params);
	if (ret)
		return ret;

	for (s = end; ofx_is_blank(*s); s++)
		;
	for (end = s + strlen(s); end > s && ofx_is_blank(end[-1]); end--)
		;
	ret = ofx_copy_part(options, sizeof(options), s, end - s, "the option list", ia_params);
	if (ret)
		return ret;

	memcpy(prov->device, device, sizeof(device));
	memcpy(prov->port, port, sizeof(port));
	memcpy(prov->options, options, sizeof(options));
	return 0;
}

struct ofx_provider *ofx_provider_find(const char *name)
{
	struct ofx_provider *found = NULL;
	struct ofx_list *pos, *tmp;

	if (!name)
		return NULL;
	pthread_mutex_lock(&ofx_provider_lock);
	ofx_list_for_each_safe(pos, tmp, &ofx_providers) {
		struct ofx_provider *prov = container_of(pos, struct ofx_provider, link);

		if (!strcmp(prov->name, name)) {
			found = prov;
			break;
		}
	}
	pthread_mutex_unlock(&ofx_provider_lock);
	return found;
}

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

	pthread_mutex_lock(&ofx_provider_lock);
	ofx_list_add_tail(&ofx_providers, &prov->link);
	pthread_mutex_unlock(&ofx_provider_lock);

	status = dat_registry_add_provider(&prov->dat, info);
	if (status != DAT_SUCCESS) {
		ofx_err("ia %s: dat_registry_add_provider failed: 0x%x", prov->name, status);
		pthread_mutex_lock(&ofx_provider_lock);
		ofx_list_del(&prov->link);
		pthread_mutex_unlock(&ofx_provider_lock);
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

	pthread_mutex_lock(&ofx_provider_lock);
	if (prov)
		ofx_list_del(&prov->link);
	last = ofx_list_empty(&ofx_providers);
	pthread_mutex_unlock(&ofx_provider_lock);

	if (prov)
		ofx_dbg("ia %s: unregistered", name);
	free(prov);
	if (last)
		ofx_log_fini();
}
