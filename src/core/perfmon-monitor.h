/* perfmon-monitor.h: per-thread performance-group accounting
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"
#include "perfmon-group.h"
#include "perfmon-snapshot.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_MONITOR (perfmon_monitor_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonMonitor, perfmon_monitor, PERFMON, MONITOR, GObject)

PERFMON_AVAILABLE_IN_0_1
PerfmonMonitor  *perfmon_monitor_get_default         (void);
PERFMON_AVAILABLE_IN_0_1
PerfmonMonitor  *perfmon_monitor_new                 (GMainContext   *context);

PERFMON_AVAILABLE_IN_0_1
GMainContext    *perfmon_monitor_get_context         (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
gboolean         perfmon_monitor_get_enabled         (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_set_enabled         (PerfmonMonitor *self,
                                                      gboolean        enabled);
PERFMON_AVAILABLE_IN_0_1
guint64          perfmon_monitor_get_alert_threshold (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_set_alert_threshold (PerfmonMonitor *self,
                                                      guint64         threshold_ms);
PERFMON_AVAILABLE_IN_0_3
gboolean         perfmon_monitor_set_alert_threshold_checked (PerfmonMonitor *self,
                                                              guint64         threshold_ms,
                                                              GError        **error);

PERFMON_AVAILABLE_IN_0_1
PerfmonGroup    *perfmon_monitor_get_thread_group    (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroup    *perfmon_monitor_get_window_group    (PerfmonMonitor *self,
                                                      guint64         window_id,
                                                      const char     *name);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroup    *perfmon_monitor_get_addon_group     (PerfmonMonitor *self,
                                                      const char     *addon_id,
                                                      const char     *name);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroup    *perfmon_monitor_create_compartment  (PerfmonMonitor *self,
                                                      const char     *name,
                                                      guint64         window_id,
                                                      const char     *addon_id);

PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_iteration_done      (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_blocked_begin       (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_blocked_end         (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_3
gboolean         perfmon_monitor_blocked_end_checked (PerfmonMonitor *self,
                                                      GError        **error);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_work_begin          (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void             perfmon_monitor_work_end            (PerfmonMonitor *self);

PERFMON_AVAILABLE_IN_0_1
PerfmonSnapshot *perfmon_monitor_snapshot            (PerfmonMonitor *self);

PERFMON_AVAILABLE_IN_0_2
gboolean         perfmon_monitor_get_automatic_groups     (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_2
void             perfmon_monitor_set_automatic_groups     (PerfmonMonitor *self,
                                                           gboolean        automatic);
PERFMON_AVAILABLE_IN_0_2
guint            perfmon_monitor_get_max_automatic_groups (PerfmonMonitor *self);
PERFMON_AVAILABLE_IN_0_2
void             perfmon_monitor_set_max_automatic_groups (PerfmonMonitor *self,
                                                           guint           max_groups);
PERFMON_AVAILABLE_IN_0_3
gboolean         perfmon_monitor_set_max_automatic_groups_checked (PerfmonMonitor *self,
                                                                   guint           max_groups,
                                                                   GError        **error);
PERFMON_AVAILABLE_IN_0_2
PerfmonGroup    *perfmon_monitor_get_automatic_group      (PerfmonMonitor *self,
                                                           const char     *name);
PERFMON_AVAILABLE_IN_0_2
gboolean         perfmon_monitor_assign_automatic_group   (PerfmonMonitor *self,
                                                           const char     *name,
                                                           guint64         window_id,
                                                           const char     *addon_id,
                                                           GError        **error);
PERFMON_AVAILABLE_IN_0_2
void             perfmon_automatic_track_source           (GSource        *source);

G_END_DECLS
