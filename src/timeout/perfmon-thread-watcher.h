/* perfmon-thread-watcher.h: stuck-thread detection for worker threads
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

/**
 * PERFMON_THREAD_WATCH_DEFAULT_PERIOD_MS:
 *
 * The period a thread registers with when it asks for 0: the seed's 3 s.
 *
 * Since: 0.1
 */
#define PERFMON_THREAD_WATCH_DEFAULT_PERIOD_MS 3000
/**
 * PERFMON_THREAD_WATCH_MIN_PERIOD_MS:
 *
 * The shortest period a thread may register with.
 *
 * Since: 0.1
 */
#define PERFMON_THREAD_WATCH_MIN_PERIOD_MS 3000
/**
 * PERFMON_THREAD_WATCH_MAX_PERIOD_MS:
 *
 * The longest period a thread may register with.
 *
 * Since: 0.1
 */
#define PERFMON_THREAD_WATCH_MAX_PERIOD_MS 15000

#define PERFMON_TYPE_THREAD_WATCHER (perfmon_thread_watcher_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonThreadWatcher, perfmon_thread_watcher, PERFMON, THREAD_WATCHER, GObject)

PERFMON_AVAILABLE_IN_0_1
PerfmonThreadWatcher *perfmon_thread_watcher_new        (void);

PERFMON_AVAILABLE_IN_0_1
gboolean              perfmon_thread_watcher_register   (PerfmonThreadWatcher  *self,
                                                         const char            *name,
                                                         guint                  period_ms,
                                                         GError               **error);
PERFMON_AVAILABLE_IN_0_1
void                  perfmon_thread_watcher_unregister (PerfmonThreadWatcher  *self);
PERFMON_AVAILABLE_IN_0_1
void                  perfmon_thread_watcher_report     (void);

G_END_DECLS
