/* perfmond-aggregate.h: one snapshot for every monitored process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Called from the daemon's main thread only.
 */
#pragma once

#include <perfmon.h>

G_BEGIN_DECLS

/* The name the merged snapshot carries as its process name. */
#define PERFMOND_AGGREGATE_PROCESS_NAME "perfmond aggregate"

typedef struct _PerfmondAggregator PerfmondAggregator;

PerfmondAggregator *perfmond_aggregator_new   (void);
void                perfmond_aggregator_free  (PerfmondAggregator  *self);

GVariant           *perfmond_aggregator_merge (PerfmondAggregator  *self,
                                               PerfmonSnapshot    **snapshots,
                                               const guint         *pids,
                                               guint                n_snapshots,
                                               guint                own_pid,
                                               gint64               timestamp,
                                               gsize                max_bytes,
                                               guint               *omitted);

/* What a process answered to GetSnapshot, the "v" of its "(v)" reply
 * (untrusted): the snapshot, or %NULL with a PERFMON_ERROR whose message
 * says why (wrong type, more than @max_groups groups, invalid data). */
PerfmonSnapshot    *perfmond_snapshot_from_reply (GVariant  *variant,
                                                  guint      max_groups,
                                                  GError   **error);
gboolean            perfmond_snapshot_check_reply (GVariant  *variant,
                                                   guint      max_groups,
                                                   GError   **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmondAggregator, perfmond_aggregator_free)

G_END_DECLS
