/* perfmon-snapshot.h: an immutable picture of a monitor's groups
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"
#include "perfmon-group-stats.h"

G_BEGIN_DECLS

/**
 * PERFMON_SNAPSHOT_VARIANT_TYPE:
 *
 * The #GVariant type string of perfmon_snapshot_to_variant(): format
 * version, timestamp, interval, pid, process name, process user and system
 * CPU time, then the groups by column, each with one entry per group in
 * the same order: ids, kinds, names, window ids, a table of add-on ids and
 * per group an index into it (0 for a group without an add-on id, i + 1
 * for the table's i-th entry), CPU times, blocked times, ticks, and the
 * %PERFMON_N_DURATIONS histogram buckets of every group one after the
 * other; then the wall-clock time (see
 * [method@Perfmon.Snapshot.get_wall_time]); last (since 0.3), the modules
 * that `module+0x…` group names refer to, as (name, path, load base, build
 * id) (see [method@Perfmon.Snapshot.lookup_module]); last (since 0.3), a
 * column of sampled CPU times (see
 * [method@Perfmon.GroupStats.get_sampled_cpu_time]), 0 but for add-on
 * groups. Times are in microseconds. perfmon_snapshot_new_from_variant()
 * also reads the types of processes built before the last members: without
 * the sampled CPU times, without the modules too, and without the wall
 * time too.
 *
 * Columns make almost everything arrays of fixed-size numbers, which
 * GDBus and GVariant copy in one go: a snapshot travels over D-Bus (for
 * example in the `v` of `org.perfmon.Monitor1.GetSnapshot()`) about a
 * hundred times faster than as an array of one tuple per group. The type
 * has no maybe type, which D-Bus cannot carry.
 *
 * Since: 0.1
 */
#define PERFMON_SNAPSHOT_VARIANT_TYPE "(uxxusttatauasatasauatatatatxa(ssts)at)"

#define PERFMON_TYPE_SNAPSHOT (perfmon_snapshot_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonSnapshot, perfmon_snapshot, PERFMON, SNAPSHOT, GObject)

PERFMON_AVAILABLE_IN_0_1
PerfmonSnapshot   *perfmon_snapshot_new_from_json    (const char       *json,
                                                      GError          **error);
PERFMON_AVAILABLE_IN_0_1
PerfmonSnapshot   *perfmon_snapshot_new_from_variant (GVariant         *variant,
                                                      GError          **error);
PERFMON_AVAILABLE_IN_0_3
gboolean           perfmon_snapshot_check_variant    (GVariant         *variant,
                                                      GError          **error);

PERFMON_AVAILABLE_IN_0_1
gint64             perfmon_snapshot_get_timestamp    (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
gint64             perfmon_snapshot_get_wall_time    (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
gint64             perfmon_snapshot_get_interval     (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
guint              perfmon_snapshot_get_pid          (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
const char        *perfmon_snapshot_get_process_name (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_snapshot_get_user_time    (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_snapshot_get_system_time  (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
GPtrArray         *perfmon_snapshot_get_groups       (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroupStats *perfmon_snapshot_lookup           (PerfmonSnapshot  *self,
                                                      guint64           id);
PERFMON_AVAILABLE_IN_0_3
gboolean           perfmon_snapshot_lookup_module    (PerfmonSnapshot  *self,
                                                      const char       *name,
                                                      const char      **path,
                                                      guint64          *base,
                                                      const char      **build_id);
PERFMON_AVAILABLE_IN_0_1
PerfmonSnapshot   *perfmon_snapshot_subtract         (PerfmonSnapshot  *self,
                                                      PerfmonSnapshot  *older,
                                                      GError          **error);
PERFMON_AVAILABLE_IN_0_1
char              *perfmon_snapshot_to_json          (PerfmonSnapshot  *self);
PERFMON_AVAILABLE_IN_0_1
GVariant          *perfmon_snapshot_to_variant       (PerfmonSnapshot  *self);

G_END_DECLS
