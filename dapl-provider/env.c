/* SPDX-License-Identifier: BSD-2-Clause */
#include "env.h"

#include <stdlib.h>

const char *ofx_env_get(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}
