/* perfmond-metrics.h: the Prometheus and OpenMetrics text of perfmond's /metrics
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <perfmon.h>

G_BEGIN_DECLS

typedef struct _PerfmondMetrics PerfmondMetrics;

/* One monitored process, as the metrics see it. */
typedef struct
{
  guint            pid;
  const char      *process_name;
  PerfmonSnapshot *snapshot;       /* nullable: not polled yet */
} PerfmondMetricsProcess;

/* perfmond's own health. */
typedef struct
{
  guint   processes;
  guint64 refused_calls;
  guint64 dropped_signals;
} PerfmondMetricsHealth;

typedef enum
{
  PERFMOND_METRICS_PROMETHEUS,     /* text/plain; version=0.0.4 */
  PERFMOND_METRICS_OPENMETRICS,    /* application/openmetrics-text; version=1.0.0 */
} PerfmondMetricsFormat;

PerfmondMetrics       *perfmond_metrics_new          (void);
void                   perfmond_metrics_free         (PerfmondMetrics              *self);
void                   perfmond_metrics_count_hang   (PerfmondMetrics              *self,
                                                      guint                         pid,
                                                      const char                   *process_name,
                                                      const char                   *runnable_name);
void                   perfmond_metrics_write        (PerfmondMetrics              *self,
                                                      const PerfmondMetricsProcess *processes,
                                                      guint                         n_processes,
                                                      const PerfmondMetricsHealth  *health,
                                                      PerfmondMetricsFormat         format,
                                                      GString                      *out);
PerfmondMetricsFormat  perfmond_metrics_negotiate    (const char                   *accept);
const char            *perfmond_metrics_content_type (PerfmondMetricsFormat         format);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmondMetrics, perfmond_metrics_free)

G_END_DECLS
