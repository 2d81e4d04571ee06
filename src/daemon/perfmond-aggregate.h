/* perfmond-aggregate.h: one snapshot for every monitored process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Called from the daemon's main thread only.
 */
#pragma once

#include <perfmon.h>

G_BEGIN_DECLS

/* D-Bus cannot carry the maybe type (`ms`) that
 * %PERFMON_SNAPSHOT_VARIANT_TYPE uses for add-on ids: GDBus refuses to
 * serialize it and the bus drops a connection that sends its signature.
 * So perfmond sends a snapshot as a byte array ("ay"), the serialized
 * data of its %PERFMON_SNAPSHOT_VARIANT_TYPE variant in the machine's byte
 * order. A client reads it back with
 *   g_variant_new_from_bytes (G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE),
 *                             g_variant_get_data_as_bytes (ay), FALSE)
 * and perfmon_snapshot_new_from_variant(), which checks untrusted data. */

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
                                               gint64               timestamp);

GVariant           *perfmond_variant_to_wire  (GVariant            *variant);
GVariant           *perfmond_snapshot_to_wire (PerfmonSnapshot     *snapshot);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmondAggregator, perfmond_aggregator_free)

G_END_DECLS
