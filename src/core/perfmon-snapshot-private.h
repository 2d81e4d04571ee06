/* perfmon-snapshot-private.h
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-snapshot.h"

G_BEGIN_DECLS

/* The current format version of to_json() and to_variant(). */
#define PERFMON_SNAPSHOT_FORMAT_VERSION 1

/* Takes ownership of @groups (element type PerfmonGroupStats, with a free
 * func). @interval is 0 for a snapshot of a live monitor and the time
 * between the two snapshots for a difference. @wall_time is the
 * wall-clock time (g_get_real_time()) of @timestamp, or 0 if not known. */
PerfmonSnapshot *_perfmon_snapshot_new (gint64      timestamp,
                                        gint64      wall_time,
                                        gint64      interval,
                                        guint       pid,
                                        const char *process_name,
                                        guint64     user_time,
                                        guint64     system_time,
                                        GPtrArray  *groups);

G_END_DECLS
