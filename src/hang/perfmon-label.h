/* perfmon-label.h: the thread-local label stack
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

PERFMON_AVAILABLE_IN_0_1
void  perfmon_label_push          (const char *label,
                                   const char *dynamic);
PERFMON_AVAILABLE_IN_0_1
void  perfmon_label_push_interned (const char *label,
                                   const char *dynamic);
PERFMON_AVAILABLE_IN_0_1
void  perfmon_label_pop           (void);
PERFMON_AVAILABLE_IN_0_3
gboolean perfmon_label_pop_checked (GError **error);

/* Scope guards: PERFMON_AUTO_LABEL (label); pushes now and pops when the
 * enclosing block ends, whichever way it ends. The guard type is a dummy:
 * the pointer is never dereferenced, it only has to be non-NULL for the
 * g_autoptr() cleanup to run. Hidden from g-ir-scanner: bindings call
 * perfmon_label_push() and perfmon_label_pop(). */
#ifndef __GI_SCANNER__
typedef struct _PerfmonLabelGuard PerfmonLabelGuard;

static inline PerfmonLabelGuard *
_perfmon_label_guard_new (const char *label,
                          const char *dynamic)
{
  perfmon_label_push (label, dynamic);
  return (PerfmonLabelGuard *) GSIZE_TO_POINTER (1);
}

static inline void
_perfmon_label_guard_free (PerfmonLabelGuard *guard)
{
  perfmon_label_pop ();
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonLabelGuard, _perfmon_label_guard_free)

#define _PERFMON_LABEL_GUARD_NAME(line) _PERFMON_LABEL_GUARD_NAME2 (line)
#define _PERFMON_LABEL_GUARD_NAME2(line) _perfmon_label_guard_##line
#endif /* __GI_SCANNER__ */

/**
 * PERFMON_AUTO_LABEL:
 * @label: a static string, e.g. a string literal
 *
 * Pushes @label on the calling thread's label stack and pops it when the
 * enclosing scope ends. See perfmon_label_push().
 *
 * Since: 0.1
 */
#define PERFMON_AUTO_LABEL(label) \
  G_GNUC_UNUSED g_autoptr(PerfmonLabelGuard) _PERFMON_LABEL_GUARD_NAME (__LINE__) = \
    _perfmon_label_guard_new ((label), NULL)

/**
 * PERFMON_AUTO_LABEL_DYNAMIC:
 * @label: a static string, e.g. a string literal
 * @dynamic: (nullable): a string that is copied, or %NULL
 *
 * Pushes @label with the dynamic text @dynamic on the calling thread's label
 * stack and pops it when the enclosing scope ends. See perfmon_label_push().
 *
 * Since: 0.1
 */
#define PERFMON_AUTO_LABEL_DYNAMIC(label, dynamic) \
  G_GNUC_UNUSED g_autoptr(PerfmonLabelGuard) _PERFMON_LABEL_GUARD_NAME (__LINE__) = \
    _perfmon_label_guard_new ((label), (dynamic))

G_END_DECLS
