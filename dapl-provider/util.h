/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_UTIL_H
#define OFX_UTIL_H

#include <stddef.h>
#include <stdbool.h>

/*
 * Helpers with no dependency of their own, usable from every layer (log
 * included): container_of, array size, branch hints, the intrusive list.
 */
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define OFX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Branch hints for the data path: errors and rare cases go out of line. */
#define ofx_likely(x) __builtin_expect(!!(x), 1)
#define ofx_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Hides where the pointer `p` came from at this point: the compiler then
 * recomputes the addresses it derives from it afterwards (one lea) instead
 * of holding them in a callee-saved register across a call (a push and a
 * pop).  Only where a count showed it (README, "Speed").
 */
#define ofx_opaque(p) __asm__("" : "+r"(p))

/* Doubly linked intrusive list; an empty list points at itself. */
struct ofx_list {
	struct ofx_list *next, *prev;
};

static inline void ofx_list_init(struct ofx_list *l)
{
	l->next = l->prev = l;
}

static inline bool ofx_list_empty(const struct ofx_list *l)
{
	return l->next == l;
}

static inline void ofx_list_add_tail(struct ofx_list *head, struct ofx_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void ofx_list_del(struct ofx_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ofx_list_init(n);
}

#define ofx_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
