/* perfmon-dispatch.h: the dispatch wrappers, GLib's calls as tasks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <gio/gio.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

/* Dispatch wrappers: the GLib call of the same name, plus a task. */
PERFMON_AVAILABLE_IN_0_1
guint     perfmon_idle_add                     (GSourceFunc     function,
                                                gpointer        data);
PERFMON_AVAILABLE_IN_0_1
guint     perfmon_idle_add_full                (int             priority,
                                                GSourceFunc     function,
                                                gpointer        data,
                                                GDestroyNotify  notify);
PERFMON_AVAILABLE_IN_0_1
guint     perfmon_timeout_add                  (guint           interval,
                                                GSourceFunc     function,
                                                gpointer        data);
PERFMON_AVAILABLE_IN_0_1
guint     perfmon_timeout_add_full             (int             priority,
                                                guint           interval,
                                                GSourceFunc     function,
                                                gpointer        data,
                                                GDestroyNotify  notify);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_main_context_invoke          (GMainContext   *context,
                                                GSourceFunc     function,
                                                gpointer        data);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_main_context_invoke_full     (GMainContext   *context,
                                                int             priority,
                                                GSourceFunc     function,
                                                gpointer        data,
                                                GDestroyNotify  notify);
PERFMON_AVAILABLE_IN_0_1
GThreadPool *perfmon_thread_pool_new           (GFunc           func,
                                                gpointer        user_data,
                                                int             max_threads,
                                                gboolean        exclusive,
                                                GError        **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_thread_pool_push             (GThreadPool    *pool,
                                                gpointer        data,
                                                GError        **error);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_thread_pool_free             (GThreadPool    *pool,
                                                gboolean        immediate,
                                                gboolean        wait_);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_task_run_in_thread           (GTask          *task,
                                                GTaskThreadFunc task_func);

G_END_DECLS
