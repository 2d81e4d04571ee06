/* perfmond-process.h: a monitored process as perfmond keeps it, and its
 * history of snapshots
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>
#include <perfmon.h>

#include "perfmond-daemon.h"
#include "perfmon-publish.h"

G_BEGIN_DECLS

/* One snapshot of a process's history. */
typedef struct
{
  gint64    timestamp;
  GVariant *variant;
  gsize     variant_size;
  gsize     size;          /* what it costs to keep, all told */
} HistoryEntry;

/* A registered process. Reference-counted because D-Bus callbacks may
 * still arrive after it is gone (a reply in flight, a queued signal); they
 * check `removed` and touch nothing else then. */
typedef struct
{
  PerfmondDaemon  *daemon;        /* unowned, valid while !removed */
  gboolean         removed;
  guint            pid;
  char            *bus_name;
  char            *process_name;
  char            *process_type;
  gint64           registered_at;
  guint            watch_id;
  guint            signal_id;
  GCancellable    *cancellable;
  gboolean         poll_pending;
  gboolean         legacy_poll;   /* no GetSnapshotBytes: polled with GetSnapshot */
  PerfmonSnapshot *latest;        /* decoded from the history's newest, when asked: see
                                   * perfmond_process_get_latest() */
  GQueue           history;       /* HistoryEntry *, oldest first */
  gsize            history_bytes;
  GPtrArray       *waiters;       /* GDBusMethodInvocation * for GetSnapshot */
  guint            n_hangs;       /* the last hang id's number */
  guint64          polls;
  guint64          poll_failures;
  guint64          rejected;
  guint            slot;          /* of the poll interval, 0…POLL_SLOTS-1 */
  /* Publish(): where the process writes its snapshots, read at its slot
   * instead of a call; NULL before, or if the process cannot publish. */
  PerfmonPublishRegion *region;
  gboolean         publish_wanted;      /* a first snapshot came: call Publish() */
  gboolean         publish_tried;
  gboolean         publish_in_flight;   /* a Publish() call waits for its reply */
  gboolean         publish_outgrown;    /* a snapshot did not fit: polled over D-Bus */
  guint64          region_generation;
  gint64           last_published_at;   /* monotonic µs of the newest read */
  gboolean         publish_stalled;     /* counted as a poll failure once */
} Process;

/* The histories of all the processes, and their limits (--history,
 * --poll-interval, --max-history-mib). */
typedef struct
{
  gsize       bytes;          /* what every process's history costs */
  gsize       newest_bytes;   /* what the newest snapshot of each costs */
  gsize       max_bytes;
  gint64      max_age_us;
  guint       max_count;      /* snapshots of one process */
  GHashTable *processes;      /* pid → Process *: whose histories share max_bytes */
} PerfmondHistory;

Process  *perfmond_process_ref    (Process    *process);
void      perfmond_process_unref  (Process    *process);
void      perfmond_process_reject (Process    *process,
                                   const char *what,
                                   const char *why);

void      perfmond_history_init           (PerfmondHistory *history,
                                           const PerfmondConfig *config,
                                           GHashTable      *processes);
void      perfmond_history_drop           (PerfmondHistory *history,
                                           Process         *process);
gboolean  perfmond_history_has_room       (PerfmondHistory *history,
                                           Process         *process,
                                           gsize            variant_size,
                                           gsize            n_groups);
void      perfmond_history_add            (PerfmondHistory *history,
                                           Process         *process,
                                           gint64           timestamp,
                                           GVariant        *variant,
                                           gsize            variant_size,
                                           gsize            n_groups);
GVariant *perfmond_history_latest_variant (Process         *process);
PerfmonSnapshot *perfmond_process_get_latest (Process *process);

GVariant *perfmond_snapshot_variant_from_bytes (GBytes *data);

G_END_DECLS
