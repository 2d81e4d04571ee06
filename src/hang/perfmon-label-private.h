/* perfmon-label-private.h: reading the label stacks of other threads
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-label.h"

G_BEGIN_DECLS

/* Frames stored per thread; deeper pushes are counted, not stored. */
#define PERFMON_LABEL_STACK_CAPACITY 64
/* Bytes of dynamic text kept per frame (without the terminating NUL). */
#define PERFMON_LABEL_DYNAMIC_MAX 127

typedef struct _PerfmonLabelStack PerfmonLabelStack;

/* Lifetime rules (see perfmon-label.c):
 *
 * - The calling thread's own stack, from _perfmon_label_stack_get_current(),
 *   lives at least until that thread exits: the thread may use it without a
 *   reference.
 * - Any other thread must hold a reference while it uses a stack. It gets
 *   one from _perfmon_label_list_stacks() (taken under the registry lock,
 *   so a stack can never be freed between being found and being
 *   referenced), or from the owner thread, which may call
 *   _perfmon_label_stack_ref() on its own stack and hand the reference on.
 * - A stack whose thread has exited stays readable (it reads the thread's
 *   last state) until the last reference is dropped. */

/* The calling thread's stack, created (and registered) if needed. Not a
 * new reference. */
PerfmonLabelStack *_perfmon_label_stack_get_current (void);

PerfmonLabelStack *_perfmon_label_stack_ref   (PerfmonLabelStack *stack);
void               _perfmon_label_stack_unref (PerfmonLabelStack *stack);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonLabelStack, _perfmon_label_stack_unref)

/* A reference to every registered stack (one per live thread that has
 * pushed), in an array that drops them when freed. Takes the registry
 * lock: not for a hot path. */
GPtrArray         *_perfmon_label_list_stacks (void);

/* Any thread, with a reference: appends to @frames_out (of char *, which
 * should free them with g_free) a consistent copy of @stack, outermost
 * frame first, each "label" or "label dynamic", and stores in @n_dropped
 * how many frames deeper than PERFMON_LABEL_STACK_CAPACITY were pushed
 * but not stored. Returns FALSE, and leaves both untouched, if the owner
 * kept changing the stack through every attempt. Never blocks the owner. */
gboolean           _perfmon_label_stack_read  (PerfmonLabelStack *stack,
                                               GPtrArray         *frames_out,
                                               guint             *n_dropped);

/* Like _perfmon_label_stack_read(), and appends to @stack_addresses_out
 * (a GArray of guint64, may be NULL) each stored frame's stack address:
 * the stack pointer of the function that pushed it, at the push. A native
 * frame whose stack pointer is at or above it (stacks grow down) is the
 * pusher or one of its callers; below it, code the pusher called. */
gboolean           _perfmon_label_stack_read_full (PerfmonLabelStack *stack,
                                                   GPtrArray         *frames_out,
                                                   GArray            *stack_addresses_out,
                                                   guint             *n_dropped);

/* The owner thread's name (prctl PR_GET_NAME when the stack was created)
 * and kernel thread id. */
const char        *_perfmon_label_stack_get_thread_name (PerfmonLabelStack *stack);
gint64             _perfmon_label_stack_get_thread_id   (PerfmonLabelStack *stack);
/* FALSE once the owner thread has exited. */
gboolean           _perfmon_label_stack_is_alive        (PerfmonLabelStack *stack);

/* For tests: the number of registered stacks. */
guint              _perfmon_label_count_stacks (void);

G_END_DECLS
