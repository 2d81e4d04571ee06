/* perfmon-dispatch-private.h: what other files ask of the dispatch wrappers
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The prepare functions of the wrappers' idle and timeout sources
 * (perfmon_idle_add(), perfmon_timeout_add(), perfmon_main_context_invoke()
 * from another thread). Hidden: their addresses are compared on the
 * automatic tasks' hot path without a call. */
G_GNUC_INTERNAL gboolean _perfmon_task_source_prepare         (GSource *source,
                                                               int     *timeout);
G_GNUC_INTERNAL gboolean _perfmon_timeout_task_source_prepare (GSource *source,
                                                               int     *timeout);

/* Whether @source is one of the wrappers' sources, whose dispatches are
 * tasks already. By prepare: the per-dispatch hook may replace a source's
 * dispatch, never its prepare. */
static inline gboolean
_perfmon_dispatch_is_task_source (GSource *source)
{
  gboolean (*prepare) (GSource *, int *) = source->source_funcs->prepare;

  return prepare == _perfmon_task_source_prepare || prepare == _perfmon_timeout_task_source_prepare;
}

/* Whether @func is the trampoline of perfmon_thread_pool_new()'s pools,
 * whose items are tasks already. */
gboolean _perfmon_dispatch_owns_pool_func   (GFunc    func);
/* Whether @gtask (a GTask) runs through perfmon_task_run_in_thread(),
 * as a task already. */
gboolean _perfmon_dispatch_gtask_is_wrapped (gpointer gtask);

G_END_DECLS
