/* perfmond-daemon.h: the org.perfmon.Daemon1 service
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Everything runs in the thread-default main context of the thread that
 * created the daemon (perfmond's main thread): D-Bus method calls, polls,
 * signals from the monitored processes.
 */
#pragma once

#include <gio/gio.h>

#include "perfmond-metrics.h"

G_BEGIN_DECLS

/* The limits of perfmond, from its command line. */
typedef struct
{
  guint poll_interval_ms;   /* between two GetSnapshot calls to one process */
  guint call_timeout_ms;    /* of each call to a monitored process */
  guint history_s;          /* seconds of snapshots kept per process */
  guint max_history_mib;    /* all processes' history together */
  guint max_aggregate_mib;  /* the most a GetAggregate reply takes */
  guint max_processes;
  guint max_groups;         /* per snapshot; bigger snapshots are rejected */
  guint max_hangs;          /* kept, across all processes */
  guint max_signals;        /* Hang + Alert per process per second */
  const char *upload_url;   /* nullable: send pings there (perfmond-upload.c) */
  const char * const *pings_dirs;  /* nullable: more than the default one */
  guint pings_rescan_s;     /* between two scans of the pings directories */
} PerfmondConfig;

#define PERFMOND_TYPE_DAEMON (perfmond_daemon_get_type ())

G_DECLARE_FINAL_TYPE (PerfmondDaemon, perfmond_daemon, PERFMOND, DAEMON, GObject)

PerfmondDaemon *perfmond_daemon_new    (const PerfmondConfig  *config);
gboolean        perfmond_daemon_export (PerfmondDaemon        *self,
                                        GDBusConnection       *connection,
                                        GError               **error);
void            perfmond_daemon_unexport (PerfmondDaemon      *self);
void            perfmond_daemon_write_metrics (PerfmondDaemon        *self,
                                               PerfmondMetricsFormat  format,
                                               GString               *out);

/* A hang as perfmond keeps it (perfmond_daemon_get_hangs()). */
typedef struct
{
  const char *id;
  guint       pid;
  const char *process_name;
  double      duration_ms;
  const char *runnable_name;
  const char *json;           /* the report */
} PerfmondHangInfo;

GArray         *perfmond_daemon_get_processes (PerfmondDaemon *self);
PerfmonSnapshot *perfmond_daemon_get_recent  (PerfmondDaemon *self,
                                               guint           pid);
GArray         *perfmond_daemon_get_hangs     (PerfmondDaemon *self,
                                               guint           max);

G_END_DECLS
