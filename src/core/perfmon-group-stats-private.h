/* perfmon-group-stats-private.h
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-group-stats.h"

G_BEGIN_DECLS

struct _PerfmonGroupStats
{
  /*< private >*/
  gatomicrefcount   ref_count;
  PerfmonGroupKind  kind;
  guint64           id;
  char             *name;        /* a GRefString, never NULL */
  guint64           window_id;   /* 0 = none */
  char             *addon_id;    /* a GRefString, NULL = none */
  guint64           cpu_time;    /* µs */
  guint64           blocked_time;/* µs */
  guint64           sampled_cpu_time; /* µs, add-on groups only */
  guint64           ticks;
  guint64           durations[PERFMON_N_DURATIONS];
  char              strings[];   /* name and addon_id, in one allocation */
};

/* Takes copies of @name and @addon_id; counters start at zero. */
PerfmonGroupStats *_perfmon_group_stats_new  (guint64                  id,
                                              PerfmonGroupKind         kind,
                                              const char              *name,
                                              guint64                  window_id,
                                              const char              *addon_id);
/* A fresh copy whose counters can still be written; it shares the
 * strings of @self. */
PerfmonGroupStats *_perfmon_group_stats_copy (const PerfmonGroupStats *self);

G_END_DECLS
