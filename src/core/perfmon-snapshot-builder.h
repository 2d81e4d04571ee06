/* perfmon-snapshot-builder.h: a snapshot made from counters
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

#define PERFMON_TYPE_SNAPSHOT_BUILDER (perfmon_snapshot_builder_get_type ())

PERFMON_AVAILABLE_IN_0_2
G_DECLARE_FINAL_TYPE (PerfmonSnapshotBuilder, perfmon_snapshot_builder, PERFMON, SNAPSHOT_BUILDER, GObject)

PERFMON_AVAILABLE_IN_0_2
PerfmonSnapshotBuilder *perfmon_snapshot_builder_new         (void);
PERFMON_AVAILABLE_IN_0_2
void                    perfmon_snapshot_builder_set_times   (PerfmonSnapshotBuilder *self,
                                                              gint64                  timestamp,
                                                              gint64                  wall_time,
                                                              gint64                  interval);
PERFMON_AVAILABLE_IN_0_2
void                    perfmon_snapshot_builder_set_process (PerfmonSnapshotBuilder *self,
                                                              guint                   pid,
                                                              const char             *process_name,
                                                              guint64                 user_time,
                                                              guint64                 system_time);
PERFMON_AVAILABLE_IN_0_2
void                    perfmon_snapshot_builder_add_group   (PerfmonSnapshotBuilder *self,
                                                              guint64                 id,
                                                              PerfmonGroupKind        kind,
                                                              const char             *name,
                                                              guint64                 window_id,
                                                              const char             *addon_id,
                                                              guint64                 cpu_time,
                                                              guint64                 blocked_time,
                                                              guint64                 ticks,
                                                              const guint64          *durations,
                                                              gsize                   n_durations);
PERFMON_AVAILABLE_IN_0_3
void                    perfmon_snapshot_builder_add_module  (PerfmonSnapshotBuilder *self,
                                                              const char             *name,
                                                              const char             *path,
                                                              guint64                 base,
                                                              const char             *build_id);
PERFMON_AVAILABLE_IN_0_3
void                    perfmon_snapshot_builder_set_sampled_cpu_time (PerfmonSnapshotBuilder *self,
                                                                       guint64                 sampled_cpu_time);
PERFMON_AVAILABLE_IN_0_2
PerfmonSnapshot        *perfmon_snapshot_builder_end         (PerfmonSnapshotBuilder *self,
                                                              GError                **error);

G_END_DECLS
