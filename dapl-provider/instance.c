/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_CORE
#include "instance.h"

#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

/*
 * The provider instances, one per dat.conf IA name in use.  The lock guards
 * the list only: libdat2 serialises init and fini (it calls both under its
 * static-registry mutex), and it never calls the registry back into us, so
 * the registry calls are made without the lock.
 */
static pthread_mutex_t ofx_provider_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ofx_list ofx_providers = { &ofx_providers, &ofx_providers };

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

void ofx_provider_add(struct ofx_provider *prov)
{
	pthread_mutex_lock(&ofx_provider_lock);
	ofx_list_add_tail(&ofx_providers, &prov->link);
	pthread_mutex_unlock(&ofx_provider_lock);
}

bool ofx_provider_remove(struct ofx_provider *prov)
{
	bool last;

	pthread_mutex_lock(&ofx_provider_lock);
	if (prov)
		ofx_list_del(&prov->link);
	last = ofx_list_empty(&ofx_providers);
	pthread_mutex_unlock(&ofx_provider_lock);
	return last;
}
