/* perfmon-group-stats.h: the counters of one group in a snapshot
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

G_BEGIN_DECLS

/**
 * PERFMON_N_DURATIONS:
 *
 * The number of buckets of the exceedance histogram: bucket i counts the
 * iterations in which a group's CPU time exceeded 2^i ms, i = 0 … 9.
 *
 * Since: 0.1
 */
#define PERFMON_N_DURATIONS 10

#define PERFMON_TYPE_GROUP_STATS (perfmon_group_stats_get_type ())

typedef struct _PerfmonGroupStats PerfmonGroupStats;

PERFMON_AVAILABLE_IN_0_1
GType              perfmon_group_stats_get_type         (void) G_GNUC_CONST;
PERFMON_AVAILABLE_IN_0_1
PerfmonGroupStats *perfmon_group_stats_ref              (PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
void               perfmon_group_stats_unref            (PerfmonGroupStats *self);

PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_group_stats_get_id           (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroupKind   perfmon_group_stats_get_kind         (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
const char        *perfmon_group_stats_get_name         (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_group_stats_get_window_id    (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
const char        *perfmon_group_stats_get_addon_id     (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_group_stats_get_cpu_time     (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_group_stats_get_blocked_time (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_3
guint64            perfmon_group_stats_get_sampled_cpu_time (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
guint64            perfmon_group_stats_get_ticks        (const PerfmonGroupStats *self);
PERFMON_AVAILABLE_IN_0_1
const guint64     *perfmon_group_stats_get_durations    (const PerfmonGroupStats *self,
                                                         gsize                   *n_durations);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonGroupStats, perfmon_group_stats_unref)

G_END_DECLS
