/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_LOCK_H
#define OFX_LOCK_H

#include <assert.h>
#include <pthread.h>
#include <unistd.h>

/*
 * ofx_lock_assert_held(m): in debug builds (configure --enable-debug) the
 * calling thread must hold mutex `m`; functions whose contract says "x->lock
 * held" check it on entry.  glibc records a normal mutex's owner thread id,
 * which is what is compared.  Compiles to nothing otherwise.
 */
#ifdef OFX_DEBUG
#define ofx_lock_assert_held(m) assert((m)->__data.__owner == (int)gettid())
#else
#define ofx_lock_assert_held(m) ((void)(m))
#endif

#endif
