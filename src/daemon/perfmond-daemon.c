/* perfmond-daemon.c: the org.perfmon.Daemon1 service
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The daemon talks to the monitored processes with plain
 * g_dbus_connection_call()s to their unique names, never auto-starting
 * anything, each with a time-out: a hung process costs one outstanding call
 * and a skipped poll now and then, and never delays the others. Everything
 * a process sends is checked and bounded before it is kept (groups per
 * snapshot, size of a hang report, signals per second, history per process
 * and in total), so that a buggy or hostile process can waste its own share
 * and nothing more.
 *
 * A Process, its record and its history of snapshots, is in
 * perfmond-process.c.
 */
#include "perfmond-daemon.h"

#include <gio/gunixfdlist.h>
#include <limits.h>
#include <perfmon.h>
#include <unistd.h>

#include "perfmon-dbus-daemon.h"
#include "perfmond-aggregate.h"
#include "perfmond-filter.h"
#include "perfmond-log.h"
#include "perfmond-process.h"
#include "perfmond-upload.h"
#include "perfmon-heap-trim.h"
#include "perfmon-uid-gate.h"
#include "perfmon-utf8.h"

/* Clients waiting for a process's first snapshot (GetSnapshot right after
 * Register). */
#define MAX_WAITERS 16
/* Replies stay well below D-Bus's 64 MiB array limit (a bigger reply gets
 * the sender disconnected by the bus). */
#define MAX_HISTORY_REPLY_BYTES (32 * 1024 * 1024)
/* All the hang reports kept, in bytes (besides --max-hangs). */
#define MAX_HANGS_BYTES (32 * 1024 * 1024)
#define MAX_HANG_ID_BYTES 64
/* How much of a bad argument an error message quotes. */
#define QUOTED_PREFIX_BYTES 32
/* The region a process publishes its snapshots in (mapped: its pages are
 * made as the process writes them). A snapshot that does not fit comes
 * over D-Bus, and the process is handed a region half as big again as
 * that snapshot, up to PERFMON_PUBLISH_MAX_CAPACITY. */
#define PUBLISH_REGION_BYTES (1024 * 1024)
/* The polls of one interval are spread over this many slots. */
#define POLL_SLOTS 10
/* Listeners of the daemon's signals. */
#define MAX_SUBSCRIBERS 64
/* Members of PERFMON_SNAPSHOT_VARIANT_TYPE (perfmon-snapshot.h). */
#define SNAPSHOT_TIMESTAMP 1
#define SNAPSHOT_PID 3
#define SNAPSHOT_PROCESS_NAME 4
#define SNAPSHOT_GROUP_IDS 7
/* Hang reports asked of a process when it registers. */
#define MAX_INITIAL_HANGS 100

typedef struct
{
  char   *id;
  guint   pid;
  char   *process_name;
  double  duration_ms;
  char   *runnable_name;
  char   *json;
  gsize   length;         /* of json */
  guint   hash;           /* of json */
} Hang;

typedef struct
{
  guint  pid;
  char  *process_name;
  char  *path;
} Ping;

struct _PerfmondDaemon
{
  GObject             parent_instance;

  PerfmondConfig      config;
  GDBusConnection    *connection;
  PerfmonDBusDaemon1 *skeleton;   /* its vtable serves; never exported itself */
  guint               registration_id;
  PerfmonUidGate     *gate;
  PerfmonNameSet     *subscribers;  /* of the daemon's signals */
  PerfmondMetrics    *metrics;    /* the hang counters of /metrics */
  GHashTable         *by_pid;     /* pid → Process * (a reference) */
  GHashTable         *by_name;    /* unique name (the Process's) → Process * */
  guint               poll_source;
  PerfmondHistory     history;    /* of every process in by_pid */
  GQueue              hangs;      /* Hang *, newest first */
  gsize               hangs_bytes;
  guint               next_slot;
  guint               tick;
  guint               filter_id;
  PerfmondFilter     *filter;     /* the connection's, of Monitor1 signals and calls */
  GQueue              pings;      /* Ping *, newest first */
  PerfmondAggregator *aggregator;
  PerfmondUploader   *uploader;   /* nullable: without --upload-url */
  char              **pings_dirs; /* canonical: the default, then --pings-dir */
};

G_DEFINE_FINAL_TYPE (PerfmondDaemon, perfmond_daemon, G_TYPE_OBJECT)

static void poll_process (PerfmondDaemon *self, Process *process);
static void poll_over_dbus (PerfmondDaemon *self, Process *process);
static gboolean take_snapshot (PerfmondDaemon *self, Process *process, GVariant *variant);
static void start_publishing (PerfmondDaemon *self, Process *process, guint32 capacity);
static GPtrArray *processes_by_pid (PerfmondDaemon *self);

static void
hang_free (Hang *hang)
{
  g_free (hang->id);
  g_free (hang->process_name);
  g_free (hang->runnable_name);
  g_free (hang->json);
  g_free (hang);
}

static void
ping_free (Ping *ping)
{
  g_free (ping->process_name);
  g_free (ping->path);
  g_free (ping);
}

/* The skeleton is not exported (the uid gate stands before it), so its
 * emit functions would reach nobody: signals go out here, to the
 * subscribers. */
static void
emit_signal (PerfmondDaemon *self,
             const char     *name,
             GVariant       *parameters)
{
  g_autoptr(GError) error = NULL;

  g_variant_ref_sink (parameters);
  if (self->connection != NULL && self->registration_id != 0)
    {
      /* By unique name to each subscriber: never broadcast. */
      g_autoptr(GPtrArray) subscribers = _perfmon_name_set_dup_names (self->subscribers);

      for (guint i = 0; i < subscribers->len; i++)
        if (!g_dbus_connection_emit_signal (self->connection, g_ptr_array_index (subscribers, i),
                                            PERFMON_DAEMON_OBJECT_PATH, PERFMON_DAEMON_INTERFACE, name,
                                            parameters, &error))
          {
            g_debug ("could not emit %s: %s", name, error->message);
            g_clear_error (&error);
          }
    }
  g_variant_unref (parameters);
}

static void
return_invalid_args (GDBusMethodInvocation *invocation,
                     const char            *format,
                     ...) G_GNUC_PRINTF (2, 3);

static void
return_invalid_args (GDBusMethodInvocation *invocation,
                     const char            *format,
                     ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_dbus_method_invocation_return_error_literal (invocation, G_DBUS_ERROR,
                                                 G_DBUS_ERROR_INVALID_ARGS, message);
}

static void
answer_waiters (Process    *process,
                const char *failure)
{
  for (guint i = 0; i < process->waiters->len; i++)
    {
      GDBusMethodInvocation *invocation = g_ptr_array_index (process->waiters, i);

      if (!g_queue_is_empty (&process->history) && failure == NULL)
        g_dbus_method_invocation_return_value (invocation,
                                               g_variant_new ("(@v)", perfmond_history_latest_variant (process)));
      else
        g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                                               "pid %u has no snapshot: %s",
                                               process->pid, failure ? failure : "not polled yet");
    }
  /* return_* took the references. */
  g_ptr_array_set_size (process->waiters, 0);
}

static void
remove_process (PerfmondDaemon *self,
                Process        *process,
                const char     *why)
{
  guint pid = process->pid;

  g_debug ("pid %u (%s, %s) unregistered: %s", pid, process->bus_name,
             process->process_name, why);

  process->removed = TRUE;
  g_cancellable_cancel (process->cancellable);
  g_clear_pointer (&process->region, perfmon_publish_region_free);
  g_clear_handle_id (&process->watch_id, g_bus_unwatch_name);
  if (process->signal_id != 0)
    {
      g_dbus_connection_signal_unsubscribe (self->connection, process->signal_id);
      process->signal_id = 0;
    }
  answer_waiters (process, why);
  perfmond_history_drop (&self->history, process);

  perfmond_filter_budget_remove (self->filter, process->bus_name);
  g_hash_table_remove (self->by_name, process->bus_name);
  g_hash_table_remove (self->by_pid, GUINT_TO_POINTER (pid));  /* drops the table's reference */

  if (self->skeleton != NULL)
    emit_signal (self, "ProcessRemoved", g_variant_new ("(u)", pid));
}

static void
poll_done (GObject      *source,
           GAsyncResult *result,
           gpointer      user_data)
{
  Process *process = user_data;
  PerfmondDaemon *self = process->daemon;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) variant = NULL;

  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (process->removed)
    goto out;

  process->poll_pending = FALSE;

  /* A process of a libperfmon before 0.3 (or another implementation of
   * Monitor1) has no GetSnapshotBytes: it is polled with GetSnapshot from
   * now on, and at once. */
  if (reply == NULL && !process->legacy_poll &&
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD))
    {
      g_debug ("pid %u (%s): no GetSnapshotBytes, polled with GetSnapshot", process->pid, process->bus_name);
      process->legacy_poll = TRUE;
      poll_process (self, process);
      goto out;
    }

  process->polls++;

  if (reply == NULL)
    {
      process->poll_failures++;
      /* A process that crashed is about to vanish from the bus, and a hung
       * one reports its hang itself: a debug message is enough. */
      g_debug ("pid %u (%s): GetSnapshot failed: %s", process->pid, process->bus_name, error->message);
      answer_waiters (process, error->message);
      goto out;
    }

  if (process->legacy_poll)
    g_variant_get (reply, "(v)", &variant);
  else
    {
      g_autoptr(GVariant) array = g_variant_get_child_value (reply, 0);
      g_autoptr(GBytes) bytes = g_variant_get_data_as_bytes (array);

      /* One array as GDBus received it: no parsing of the snapshot's
       * columns and strings into a tree of values, and nothing to flatten
       * for the history. */
      variant = perfmond_snapshot_variant_from_bytes (bytes);
    }
  /* Publish() is called at the process's next slot: see poll_process(). */
  if (take_snapshot (self, process, variant) && !process->legacy_poll)
    {
      gsize size = g_variant_get_size (variant) + 256;   /* and the "v" around it */

      process->publish_wanted = TRUE;
      /* It did not fit in its region: a bigger one, if there is one. */
      if (process->publish_outgrown && process->region != NULL && !process->publish_in_flight &&
          size <= PERFMON_PUBLISH_MAX_CAPACITY)
        start_publishing (self, process, (guint32) MIN ((gsize) PERFMON_PUBLISH_MAX_CAPACITY, size + size / 2));
      process->publish_outgrown = FALSE;
    }

out:
  perfmond_process_unref (process);
}

/* A snapshot @variant of @process, from a reply or its region: checked,
 * then kept. Whether it was. */
static gboolean
take_snapshot (PerfmondDaemon *self,
               Process        *process,
               GVariant       *variant)
{
  g_autoptr(GError) error = NULL;
  const char *process_name;
  gint64 timestamp;
  guint32 pid;
  gsize variant_size, n_groups;

  /* Checked in full (type and group count first), not decoded: the
   * newest one is decoded when asked for (perfmond_process_get_latest()),
   * most are never read. */
  if (!perfmond_snapshot_check_reply (variant, self->config.max_groups, &error))
    {
      perfmond_process_reject (process, "a snapshot", error->message);
      answer_waiters (process, error->message);
      return FALSE;
    }
  /* The history's budget covers the newest snapshots as well, decoded
   * when asked for, so a snapshot that cannot fit is refused, and the
   * process's older ones go (nothing stale is served in its place). */
  variant_size = g_variant_get_size (variant);
  {
    g_autoptr(GVariant) ids = g_variant_get_child_value (variant, SNAPSHOT_GROUP_IDS);

    n_groups = g_variant_n_children (ids);
  }
  if (!perfmond_history_has_room (&self->history, process, variant_size, n_groups))
    {
      g_autofree char *why = g_strdup_printf ("a snapshot of %" G_GSIZE_FORMAT " bytes does not fit in "
                                              "the history's %u MiB next to the other processes' "
                                              "(--max-history-mib)", variant_size,
                                              self->config.max_history_mib);
      perfmond_history_drop (&self->history, process);
      perfmond_process_reject (process, "a snapshot", why);
      answer_waiters (process, why);
      return FALSE;
    }

  /* Members of both types perfmond_snapshot_check_reply() takes. */
  g_variant_get_child (variant, SNAPSHOT_TIMESTAMP, "x", &timestamp);
  g_variant_get_child (variant, SNAPSHOT_PID, "u", &pid);
  g_variant_get_child (variant, SNAPSHOT_PROCESS_NAME, "&s", &process_name);
  if (pid != process->pid)
    {
      g_autofree char *why = g_strdup_printf ("the snapshot claims pid %u; the bus says the process is pid %u",
                                              pid, process->pid);
      perfmond_process_reject (process, "a snapshot", why);
      answer_waiters (process, why);
      return FALSE;
    }

  if (process->process_name[0] == '\0')
    {
      g_free (process->process_name);
      process->process_name = g_strdup (process_name);
    }

  perfmond_history_add (&self->history, process, timestamp, variant, variant_size, n_groups);
  answer_waiters (process, NULL);
  return TRUE;
}

/* --- publishing -------------------------------------------------------- */

/* A call and a reply per process per poll cost perfmond's GDBus more than
 * all else at 200 processes (2.3-3 % of a core for the messages alone).
 * So after a first GetSnapshotBytes, a process is handed a region of
 * shared memory (Monitor1.Publish, src/support/perfmon-publish.h) that it
 * writes a snapshot into every interval, from a thread of its own, and
 * perfmond reads it at the process's slot: no message. A process that
 * cannot (an older libperfmon, a bus without fd passing, a refusal) is
 * polled over D-Bus, as is a snapshot too big for the region. */

typedef struct
{
  Process              *process;
  PerfmonPublishRegion *region;
} PublishCall;

static void
publish_done (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  PublishCall *call = user_data;
  Process *process = call->process;
  g_autoptr(PerfmonPublishRegion) region = call->region;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;

  g_free (call);
  reply = g_dbus_connection_call_with_unix_fd_list_finish (G_DBUS_CONNECTION (source), NULL, result, &error);
  process->publish_in_flight = FALSE;
  if (process->removed)
    goto out;
  if (reply == NULL)
    {
      g_debug ("pid %u (%s): does not publish, polled over D-Bus: %s", process->pid, process->bus_name,
               error->message);
      goto out;
    }
  g_debug ("pid %u (%s): publishes its snapshots in %u bytes", process->pid, process->bus_name,
           perfmon_publish_region_get_capacity (region));
  /* The process writes in the new one from now on. */
  g_clear_pointer (&process->region, perfmon_publish_region_free);
  process->region = g_steal_pointer (&region);
  process->region_generation = 0;
  process->last_published_at = g_get_monotonic_time ();

out:
  perfmond_process_unref (process);
}

static void
start_publishing (PerfmondDaemon *self,
                  Process        *process,
                  guint32         capacity)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GUnixFDList) fds = NULL;
  PublishCall *call;
  PerfmonPublishRegion *region;
  int fd = -1;

  process->publish_tried = TRUE;
  if (!(g_dbus_connection_get_capabilities (self->connection) & G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING))
    return;
  region = perfmon_publish_region_create (capacity, &fd, &error);
  if (region == NULL)
    {
      g_debug ("pid %u (%s): polled over D-Bus: %s", process->pid, process->bus_name, error->message);
      return;
    }
  fds = g_unix_fd_list_new_from_array (&fd, 1);   /* takes fd */
  process->publish_in_flight = TRUE;
  call = g_new0 (PublishCall, 1);
  call->process = perfmond_process_ref (process);
  call->region = region;
  g_dbus_connection_call_with_unix_fd_list (self->connection, process->bus_name, PERFMON_MONITOR_OBJECT_PATH,
                                            PERFMON_MONITOR_INTERFACE, "Publish",
                                            g_variant_new ("(hu)", 0, self->config.poll_interval_ms),
                                            G_VARIANT_TYPE_UNIT, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                            (int) self->config.call_timeout_ms, fds, process->cancellable,
                                            publish_done, call);
}

/* At the process's slot: what it published since the last slot. */
static void
read_region (PerfmondDaemon *self,
             Process        *process)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = NULL;
  gint64 now = g_get_monotonic_time ();

  switch (perfmon_publish_region_read (process->region, &process->region_generation, &bytes, &error))
    {
    case PERFMON_PUBLISH_NEW:
      {
        g_autoptr(GVariant) variant = perfmond_snapshot_variant_from_bytes (bytes);

        process->polls++;
        process->last_published_at = now;
        process->publish_stalled = FALSE;
        take_snapshot (self, process, variant);
        return;
      }
    case PERFMON_PUBLISH_OVERFLOW_SEEN:
      /* Too big for the region: this one over D-Bus, and then a bigger
       * region (poll_done()). */
      process->last_published_at = now;
      process->publish_stalled = FALSE;
      process->publish_outgrown = TRUE;
      poll_over_dbus (self, process);
      return;
    case PERFMON_PUBLISH_BAD:
      perfmond_process_reject (process, "a published snapshot", error->message);
      answer_waiters (process, error->message);
      /* Polled over D-Bus from now on, where a reply is checked alone. */
      g_clear_pointer (&process->region, perfmon_publish_region_free);
      return;
    case PERFMON_PUBLISH_NOTHING_NEW:
    case PERFMON_PUBLISH_BUSY:
      /* A process that published nothing for as long as a call may take
       * to be answered (busy, or hung: it reports its hangs itself) is
       * counted as a failed poll, once. */
      if (!process->publish_stalled &&
          now - process->last_published_at > MAX ((gint64) self->config.call_timeout_ms,
                                                  2 * (gint64) self->config.poll_interval_ms) * 1000)
        {
          g_autofree char *why = g_strdup_printf ("nothing published for %" G_GINT64_FORMAT " ms",
                                                  (now - process->last_published_at) / 1000);

          process->publish_stalled = TRUE;
          process->poll_failures++;
          g_debug ("pid %u (%s): %s", process->pid, process->bus_name, why);
          answer_waiters (process, why);
        }
      return;
    }
}

/* At the process's slot. Publish() is called there too, after a first
 * good snapshot: the process publishes half an interval after each slot,
 * so that a read finds the snapshot written, far from the next write, and
 * the processes' snapshots are spread over the interval as the reads are. */
static void
poll_process (PerfmondDaemon *self,
              Process        *process)
{
  if (process->region != NULL)
    read_region (self, process);
  else
    {
      if (process->publish_wanted && !process->publish_tried)
        start_publishing (self, process, PUBLISH_REGION_BYTES);
      poll_over_dbus (self, process);
    }
}

static void
poll_over_dbus (PerfmondDaemon *self,
                Process        *process)
{
  /* One call at a time per process: a process that does not answer within
   * the interval skips ticks instead of piling calls up. */
  if (process->poll_pending)
    return;

  process->poll_pending = TRUE;
  g_dbus_connection_call (self->connection, process->bus_name, PERFMON_MONITOR_OBJECT_PATH,
                          PERFMON_MONITOR_INTERFACE, process->legacy_poll ? "GetSnapshot" : "GetSnapshotBytes",
                          NULL, G_VARIANT_TYPE (process->legacy_poll ? "(v)" : "(ay)"),
                          G_DBUS_CALL_FLAGS_NO_AUTO_START,
                          (int) self->config.call_timeout_ms,
                          process->cancellable, poll_done, perfmond_process_ref (process));
}

/* Every POLL_SLOTS-th of the interval: the processes of this slot. Each
 * process gets the next slot when it registers, so that the polls of an
 * interval are spread over it rather than sent at once (a bus limits the
 * calls waiting for a reply). */
static gboolean
poll_tick (gpointer user_data)
{
  PerfmondDaemon *self = user_data;
  guint slot = self->tick++ % POLL_SLOTS;
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->by_pid);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      Process *process = value;

      if (process->slot == slot)
        poll_process (self, process);
    }

  return G_SOURCE_CONTINUE;
}

/**
 * perfmond_daemon_write_metrics:
 * @self: a daemon
 * @format: the text format
 * @out: where to append
 *
 * Appends the metrics of the newest snapshot of every process, the hangs
 * and perfmond's own health (perfmond-metrics.c).
 */
void
perfmond_daemon_write_metrics (PerfmondDaemon        *self,
                               PerfmondMetricsFormat  format,
                               GString               *out)
{
  g_autoptr(GArray) processes = perfmond_daemon_get_processes (self);
  PerfmondMetricsHealth health = { 0, };

  perfmond_filter_get_counts (self->filter, &health.dropped_signals, &health.refused_calls);
  health.processes = g_hash_table_size (self->by_pid);
  perfmond_metrics_write (self->metrics, (PerfmondMetricsProcess *) (void *) processes->data, processes->len,
                          &health, format, out);
}

/**
 * perfmond_daemon_get_processes:
 * @self: a daemon
 *
 * The monitored processes by pid, with their newest snapshots: for the
 * metrics and the page. Valid until the daemon's main context runs again.
 *
 * Returns: (transfer full) (element-type PerfmondMetricsProcess): the processes
 */
GArray *
perfmond_daemon_get_processes (PerfmondDaemon *self)
{
  g_autoptr(GPtrArray) processes = processes_by_pid (self);
  GArray *list = g_array_sized_new (FALSE, TRUE, sizeof (PerfmondMetricsProcess), processes->len);

  for (guint i = 0; i < processes->len; i++)
    {
      Process *process = g_ptr_array_index (processes, i);
      PerfmondMetricsProcess entry = { process->pid, process->process_name, perfmond_process_get_latest (process) };

      g_array_append_val (list, entry);
    }
  return list;
}

/**
 * perfmond_daemon_get_recent:
 * @self: a daemon
 * @pid: a monitored process
 *
 * What @pid did between its two newest snapshots of the history: for the
 * page's shares.
 *
 * Returns: (transfer full) (nullable): the difference, or %NULL without
 *   two snapshots
 */
PerfmonSnapshot *
perfmond_daemon_get_recent (PerfmondDaemon *self,
                            guint           pid)
{
  Process *process = g_hash_table_lookup (self->by_pid, GUINT_TO_POINTER (pid));
  g_autoptr(PerfmonSnapshot) newest = NULL;
  g_autoptr(PerfmonSnapshot) older = NULL;
  HistoryEntry *a, *b;

  if (process == NULL || process->history.length < 2)
    return NULL;
  a = g_queue_peek_nth (&process->history, process->history.length - 2);
  b = g_queue_peek_tail (&process->history);
  older = perfmon_snapshot_new_from_variant (a->variant, NULL);
  newest = perfmon_snapshot_new_from_variant (b->variant, NULL);
  if (older == NULL || newest == NULL)
    return NULL;
  return perfmon_snapshot_subtract (newest, older, NULL);
}

/**
 * perfmond_daemon_get_hangs:
 * @self: a daemon
 * @max: how many
 *
 * The newest @max hangs kept, newest first: for the page. Valid until the
 * daemon's main context runs again.
 *
 * Returns: (transfer full) (element-type PerfmondHangInfo): the hangs
 */
GArray *
perfmond_daemon_get_hangs (PerfmondDaemon *self,
                           guint           max)
{
  GArray *list = g_array_new (FALSE, TRUE, sizeof (PerfmondHangInfo));

  for (GList *l = self->hangs.head; l != NULL && list->len < max; l = l->next)
    {
      Hang *hang = l->data;
      PerfmondHangInfo info = { hang->id, hang->pid, hang->process_name, hang->duration_ms,
                                hang->runnable_name, hang->json };

      g_array_append_val (list, info);
    }
  return list;
}

/* Takes a hang report (JSON, from a signal or GetHangReports) of @process:
 * reads it with the library's one reader, keeps it under a new id and says
 * so with the Hang signal. */
static void
add_hang (PerfmondDaemon *self,
          Process        *process,
          const char     *json)
{
  g_autoptr(PerfmonHangReport) report = NULL;
  g_autoptr(GError) error = NULL;
  Hang *hang;
  gsize length = strlen (json);

  if (length > PERFMOND_MAX_HANG_REPORT_BYTES)
    {
      g_autofree char *why = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes, more than the %d allowed",
                                              length, PERFMOND_MAX_HANG_REPORT_BYTES);
      perfmond_process_reject (process, "a hang report", why);
      return;
    }

  report = perfmon_hang_report_new_from_json (json, (gssize) length, &error);
  if (report == NULL)
    {
      perfmond_process_reject (process, "a hang report", error->message);
      return;
    }

  /* A hang that arrives both as a signal and in the GetHangReports reply
   * of the registration is kept once. Hash and length first: a process
   * sending many big reports must not make each one cost a comparison
   * with all the others. */
  {
    guint hash = g_str_hash (json);

    for (GList *l = self->hangs.head; l != NULL; l = l->next)
      {
        Hang *other = l->data;

        if (other->pid == process->pid && other->hash == hash && other->length == length &&
            memcmp (other->json, json, length) == 0)
          return;
      }

    hang = g_new0 (Hang, 1);
    hang->hash = hash;
    hang->length = length;
  }
  hang->id = g_strdup_printf ("%u-%u", process->pid, ++process->n_hangs);
  hang->pid = process->pid;
  hang->process_name = g_strdup (process->process_name);
  hang->duration_ms = perfmon_hang_report_get_duration (report);
  hang->runnable_name = g_strdup (perfmon_hang_report_get_runnable_name (report));
  hang->json = g_strdup (json);

  perfmond_metrics_count_hang (self->metrics, hang->pid, hang->process_name, hang->runnable_name);
  perfmond_log_event (G_LOG_LEVEL_DEBUG, PERFMOND_MESSAGE_ID_HANG, hang->pid, hang->runnable_name,
                      hang->duration_ms, "pid %u (%s): hang %s of %.0f ms in %s", hang->pid,
                      hang->process_name, hang->id, hang->duration_ms,
                      hang->runnable_name[0] ? hang->runnable_name : "(unnamed source)");

  if (self->config.max_hangs > 0)
    {
      g_queue_push_head (&self->hangs, hang);
      self->hangs_bytes += hang->length;
      while (self->hangs.length > self->config.max_hangs || self->hangs_bytes > MAX_HANGS_BYTES)
        {
          Hang *oldest = g_queue_pop_tail (&self->hangs);

          self->hangs_bytes -= oldest->length;
          hang_free (oldest);
        }
      emit_signal (self, "Hang", g_variant_new ("(sus)", hang->id, hang->pid, hang->json));
    }
  else
    {
      emit_signal (self, "Hang", g_variant_new ("(sus)", hang->id, hang->pid, hang->json));
      hang_free (hang);
    }
}

/* A ping is a file the process wrote: its path is all the daemon keeps,
 * and it must look like one. */
static void
add_ping (PerfmondDaemon *self,
          Process        *process,
          const char     *path)
{
  Ping *ping;

  if (!g_path_is_absolute (path) || strlen (path) > PATH_MAX || !g_utf8_validate (path, -1, NULL))
    {
      perfmond_process_reject (process, "a Ping signal", "the path is not an absolute UTF-8 path of at most PATH_MAX bytes");
      return;
    }
  /* Nothing outside the pings directories perfmond knows is relayed,
   * listed or read: a process cannot point perfmond at another file. */
  if (perfmond_pings_dir_of ((const char * const *) self->pings_dirs, path) == NULL)
    {
      perfmond_process_reject (process, "a Ping signal",
                      "the path is not a <name>.json file directly in a pings directory of perfmond's "
                      "(the default or a --pings-dir)");
      return;
    }

  emit_signal (self, "Ping", g_variant_new ("(us)", process->pid, path));
  if (self->uploader != NULL)
    perfmond_uploader_add (self->uploader, path);
  if (self->config.max_hangs == 0)
    return;

  ping = g_new0 (Ping, 1);
  ping->pid = process->pid;
  ping->process_name = g_strdup (process->process_name);
  ping->path = g_strdup (path);
  g_queue_push_head (&self->pings, ping);
  while (self->pings.length > self->config.max_hangs)
    ping_free (g_queue_pop_tail (&self->pings));
}

static void
on_monitor_signal (GDBusConnection *connection,
                   const char      *sender,
                   const char      *object_path,
                   const char      *interface_name,
                   const char      *signal_name,
                   GVariant        *parameters,
                   gpointer         user_data)
{
  Process *process = user_data;
  PerfmondDaemon *self = process->daemon;

  if (process->removed)
    return;

  if (strcmp (signal_name, "Hang") == 0)
    {
      const char *json;

      if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(s)")))
        {
          perfmond_process_reject (process, "a Hang signal", "expected arguments of type (s)");
          return;
        }
      g_variant_get (parameters, "(&s)", &json);
      add_hang (self, process, json);
    }
  else if (strcmp (signal_name, "Alert") == 0)
    {
      const char *group_name;
      guint64 group_id, duration_us;

      if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(tst)")))
        {
          perfmond_process_reject (process, "an Alert signal", "expected arguments of type (tst)");
          return;
        }
      g_variant_get (parameters, "(t&st)", &group_id, &group_name, &duration_us);
      emit_signal (self, "Alert", g_variant_new ("(utst)", process->pid, group_id, group_name, duration_us));
    }
  else if (strcmp (signal_name, "Ping") == 0)
    {
      const char *path;

      if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(s)")))
        {
          perfmond_process_reject (process, "a Ping signal", "expected arguments of type (s)");
          return;
        }
      g_variant_get (parameters, "(&s)", &path);
      add_ping (self, process, path);
    }
}

static void
on_name_vanished (GDBusConnection *connection,
                  const char      *name,
                  gpointer         user_data)
{
  Process *process = user_data;

  if (!process->removed)
    remove_process (process->daemon, process, "it left the bus");
}

static void
get_properties_done (GObject      *source,
                     GAsyncResult *result,
                     gpointer      user_data)
{
  Process *process = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) properties = NULL;
  const char *value;

  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (process->removed)
    goto out;
  if (reply == NULL)
    {
      g_debug ("pid %u (%s): no Monitor1 properties: %s", process->pid, process->bus_name, error->message);
      goto out;
    }

  g_variant_get (reply, "(@a{sv})", &properties);
  if (g_variant_lookup (properties, "ProcessName", "&s", &value))
    {
      g_free (process->process_name);
      process->process_name = g_strdup (value);
    }
  if (g_variant_lookup (properties, "ProcessType", "&s", &value))
    {
      g_free (process->process_type);
      process->process_type = g_strdup (value);
    }

out:
  perfmond_process_unref (process);
}

static void
get_hang_reports_done (GObject      *source,
                       GAsyncResult *result,
                       gpointer      user_data)
{
  Process *process = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) reports = NULL;

  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (process->removed)
    goto out;
  if (reply == NULL)
    {
      g_debug ("pid %u (%s): no hang reports: %s", process->pid, process->bus_name, error->message);
      goto out;
    }

  g_variant_get (reply, "(@as)", &reports);
  /* Newest first in the reply; oldest first here, so that hang ids grow
   * with time. The reply may hold more than asked: only so many are read. */
  for (gsize n = MIN (g_variant_n_children (reports), MAX_INITIAL_HANGS); n > 0; n--)
    {
      g_autoptr(GVariant) report = g_variant_get_child_value (reports, n - 1);

      add_hang (process->daemon, process, g_variant_get_string (report, NULL));
    }

out:
  perfmond_process_unref (process);
}

static Process *
add_process (PerfmondDaemon *self,
             guint           pid,
             const char     *bus_name)
{
  Process *process = g_rc_box_new0 (Process);

  process->daemon = self;
  process->pid = pid;
  process->bus_name = g_strdup (bus_name);
  process->process_name = g_strdup ("");
  process->process_type = g_strdup ("");
  process->registered_at = g_get_monotonic_time ();
  process->cancellable = g_cancellable_new ();
  process->waiters = g_ptr_array_new ();
  process->slot = self->next_slot++ % POLL_SLOTS;
  g_queue_init (&process->history);

  g_hash_table_insert (self->by_pid, GUINT_TO_POINTER (pid), process);
  g_hash_table_insert (self->by_name, process->bus_name, process);
  /* Before the subscription: its signals pass the filter from now on. */
  perfmond_filter_budget_add (self->filter, bus_name, pid);

  /* Subscribed before GetHangReports, so that no hang falls in between;
   * add_hang() drops the ones seen twice. */
  process->signal_id = g_dbus_connection_signal_subscribe (self->connection, bus_name,
                                                           PERFMON_MONITOR_INTERFACE, NULL,
                                                           PERFMON_MONITOR_OBJECT_PATH, NULL,
                                                           G_DBUS_SIGNAL_FLAGS_NONE,
                                                           on_monitor_signal, perfmond_process_ref (process),
                                                           (GDestroyNotify) perfmond_process_unref);
  process->watch_id = g_bus_watch_name_on_connection (self->connection, bus_name,
                                                      G_BUS_NAME_WATCHER_FLAGS_NONE,
                                                      NULL, on_name_vanished,
                                                      perfmond_process_ref (process),
                                                      (GDestroyNotify) perfmond_process_unref);

  g_dbus_connection_call (self->connection, bus_name, PERFMON_MONITOR_OBJECT_PATH, "org.freedesktop.DBus.Properties",
                          "GetAll", g_variant_new ("(s)", PERFMON_MONITOR_INTERFACE), G_VARIANT_TYPE ("(a{sv})"),
                          G_DBUS_CALL_FLAGS_NO_AUTO_START, (int) self->config.call_timeout_ms,
                          process->cancellable, get_properties_done, perfmond_process_ref (process));
  if (self->config.max_hangs > 0)
    g_dbus_connection_call (self->connection, bus_name, PERFMON_MONITOR_OBJECT_PATH, PERFMON_MONITOR_INTERFACE,
                            "GetHangReports",
                            g_variant_new ("(u)", MIN (self->config.max_hangs, MAX_INITIAL_HANGS)),
                            G_VARIANT_TYPE ("(as)"),
                            G_DBUS_CALL_FLAGS_NO_AUTO_START, (int) self->config.call_timeout_ms,
                            process->cancellable, get_hang_reports_done, perfmond_process_ref (process));

  g_debug ("pid %u (%s) registered", pid, bus_name);
  emit_signal (self, "ProcessAdded", g_variant_new ("(us)", pid, bus_name));

  /* The first snapshot now, not an interval later. */
  poll_process (self, process);

  return process;
}

typedef struct
{
  PerfmondDaemon        *daemon;
  GDBusMethodInvocation *invocation;
} RegisterCall;

static void
get_pid_done (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  RegisterCall *call = user_data;
  PerfmondDaemon *self = call->daemon;
  GDBusMethodInvocation *invocation = call->invocation;
  const char *sender = g_dbus_method_invocation_get_sender (invocation);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) credentials = NULL;
  Process *old;
  guint32 pid, uid;

  g_free (call);

  /* The bus's word, not the process's: its pid and uid as the kernel gave
   * them to the bus (SO_PEERCRED). Snapshots must then carry that pid. */
  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (reply != NULL)
    {
      g_variant_get (reply, "(@a{sv})", &credentials);
      if (!g_variant_lookup (credentials, "ProcessID", "u", &pid) ||
          !g_variant_lookup (credentials, "UnixUserID", "u", &uid))
        g_set_error_literal (&error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                             "the bus does not know its ProcessID and UnixUserID");
    }
  if (error != NULL)
    {
      g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                                             "cannot find the credentials of %s: %s",
                                             sender, error->message);
      goto out;
    }
  if (uid != (guint32) geteuid ())
    {
      g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.AccessDenied",
                                                  "perfmond monitors only processes of its own uid");
      goto out;
    }

  if (self->skeleton == NULL)
    {
      g_dbus_method_invocation_return_error_literal (invocation, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                                                     "perfmond is stopping");
      goto out;
    }

  if (g_hash_table_contains (self->by_name, sender))
    {
      perfmon_dbus_daemon1_complete_register (self->skeleton, invocation);
      goto out;
    }

  old = g_hash_table_lookup (self->by_pid, GUINT_TO_POINTER (pid));
  if (old == NULL && g_hash_table_size (self->by_pid) >= self->config.max_processes)
    {
      perfmond_log_event (G_LOG_LEVEL_WARNING, PERFMOND_MESSAGE_ID_REFUSED, pid, NULL, -1,
                          "refused to register pid %u (%s): already monitoring %u processes "
                          "(--max-processes)", pid, sender, self->config.max_processes);
      g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED,
                                             "perfmond already monitors %u processes, the most it "
                                             "allows (perfmond --max-processes)",
                                             self->config.max_processes);
      goto out;
    }

  /* One process, one entry: the newest connection of a pid replaces the
   * older one (a process that reconnected to the bus). */
  if (old != NULL)
    remove_process (self, old, "registered again from another connection");

  add_process (self, pid, sender);
  perfmon_dbus_daemon1_complete_register (self->skeleton, invocation);

out:
  g_object_unref (self);
}

static gboolean
handle_register (PerfmonDBusDaemon1    *skeleton,
                 GDBusMethodInvocation *invocation,
                 PerfmondDaemon        *self)
{
  const char *sender = g_dbus_method_invocation_get_sender (invocation);
  RegisterCall *call;

  if (g_hash_table_contains (self->by_name, sender))
    {
      perfmon_dbus_daemon1_complete_register (skeleton, invocation);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }

  call = g_new0 (RegisterCall, 1);
  call->daemon = g_object_ref (self);
  call->invocation = invocation;
  g_dbus_connection_call (self->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus", "GetConnectionCredentials",
                          g_variant_new ("(s)", sender), G_VARIANT_TYPE ("(a{sv})"),
                          G_DBUS_CALL_FLAGS_NONE, -1, NULL, get_pid_done, call);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_subscribe (PerfmonDBusDaemon1    *skeleton,
                  GDBusMethodInvocation *invocation,
                  PerfmondDaemon        *self)
{
  if (!_perfmon_name_set_add (self->subscribers, g_dbus_method_invocation_get_sender (invocation)))
    {
      g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED,
                                             "perfmond already has %d subscribers, the most it allows",
                                             MAX_SUBSCRIBERS);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  perfmon_dbus_daemon1_complete_subscribe (skeleton, invocation);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_unsubscribe (PerfmonDBusDaemon1    *skeleton,
                    GDBusMethodInvocation *invocation,
                    PerfmondDaemon        *self)
{
  _perfmon_name_set_remove (self->subscribers, g_dbus_method_invocation_get_sender (invocation));
  perfmon_dbus_daemon1_complete_unsubscribe (skeleton, invocation);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_unregister (PerfmonDBusDaemon1    *skeleton,
                   GDBusMethodInvocation *invocation,
                   PerfmondDaemon        *self)
{
  Process *process = g_hash_table_lookup (self->by_name, g_dbus_method_invocation_get_sender (invocation));

  /* Like Register, idempotent. */
  if (process != NULL)
    remove_process (self, process, "it asked to");
  perfmon_dbus_daemon1_complete_unregister (skeleton, invocation);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static int
compare_pids (gconstpointer a,
              gconstpointer b)
{
  guint pa = (*(Process * const *) a)->pid, pb = (*(Process * const *) b)->pid;

  return pa < pb ? -1 : pa > pb;
}

/* g_hash_table_get_values_as_ptr_array() is GLib 2.76. */
static GPtrArray *
all_processes (PerfmondDaemon *self)
{
  GPtrArray *processes = g_ptr_array_sized_new (g_hash_table_size (self->by_pid));
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->by_pid);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (processes, value);
  return processes;
}

static GPtrArray *
processes_by_pid (PerfmondDaemon *self)
{
  GPtrArray *processes = all_processes (self);

  g_ptr_array_sort (processes, compare_pids);
  return processes;
}

static gboolean
handle_list_processes (PerfmonDBusDaemon1    *skeleton,
                       GDBusMethodInvocation *invocation,
                       PerfmondDaemon        *self)
{
  g_autoptr(GPtrArray) processes = processes_by_pid (self);
  GVariantBuilder builder;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a(usssx)"));
  for (guint i = 0; i < processes->len; i++)
    {
      Process *process = g_ptr_array_index (processes, i);

      g_variant_builder_add (&builder, "(usssx)", process->pid, process->bus_name,
                             process->process_name, process->process_type,
                             process->registered_at);
    }
  perfmon_dbus_daemon1_complete_list_processes (skeleton, invocation, g_variant_builder_end (&builder));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static Process *
lookup_pid_or_return_error (PerfmondDaemon        *self,
                            GDBusMethodInvocation *invocation,
                            guint                  pid)
{
  Process *process = g_hash_table_lookup (self->by_pid, GUINT_TO_POINTER (pid));

  if (process == NULL)
    return_invalid_args (invocation, "pid: no registered process has pid %u (perfmon top lists them)", pid);
  return process;
}

static gboolean
handle_get_snapshot (PerfmonDBusDaemon1    *skeleton,
                     GDBusMethodInvocation *invocation,
                     guint                  pid,
                     PerfmondDaemon        *self)
{
  Process *process = lookup_pid_or_return_error (self, invocation, pid);

  if (process == NULL)
    return G_DBUS_METHOD_INVOCATION_HANDLED;

  if (!g_queue_is_empty (&process->history))
    {
      perfmon_dbus_daemon1_complete_get_snapshot (skeleton, invocation, perfmond_history_latest_variant (process));
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }

  /* Registered a moment ago: answer with the first poll. */
  if (process->waiters->len >= MAX_WAITERS)
    {
      g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED,
                                             "pid %u has not answered a poll yet, and %d calls "
                                             "already wait for it", pid, MAX_WAITERS);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  g_ptr_array_add (process->waiters, invocation);
  poll_process (self, process);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_aggregate (PerfmonDBusDaemon1    *skeleton,
                      GDBusMethodInvocation *invocation,
                      PerfmondDaemon        *self)
{
  g_autoptr(GPtrArray) processes = processes_by_pid (self);
  g_autoptr(GPtrArray) snapshots = g_ptr_array_new ();
  g_autoptr(GArray) pids = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GVariant) merged = NULL;
  guint omitted = 0;

  for (guint i = 0; i < processes->len; i++)
    {
      Process *process = g_ptr_array_index (processes, i);

      PerfmonSnapshot *latest = perfmond_process_get_latest (process);

      if (latest == NULL)
        continue;
      g_ptr_array_add (snapshots, latest);
      g_array_append_val (pids, process->pid);
    }

  merged = perfmond_aggregator_merge (self->aggregator, (PerfmonSnapshot **) snapshots->pdata,
                                      (const guint *) (gpointer) pids->data, snapshots->len,
                                      (guint) getpid (), g_get_monotonic_time (),
                                      (gsize) self->config.max_aggregate_mib * 1024 * 1024, &omitted);
  if (merged == NULL)
    g_dbus_method_invocation_return_error_literal (invocation, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                                                   "perfmond could not merge the snapshots (see its log)");
  else
    perfmon_dbus_daemon1_complete_get_aggregate (skeleton, invocation, g_variant_new_variant (merged), omitted);
  /* The merge's memory goes back once the reply is written (a merge of
   * many big snapshots leaves tens of MiB in the heap otherwise). */
  if (omitted > 0)
    _perfmon_heap_trim_soon ("perfmond-trim");
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_history (PerfmonDBusDaemon1    *skeleton,
                    GDBusMethodInvocation *invocation,
                    guint                  pid,
                    gint64                 since_us,
                    PerfmondDaemon        *self)
{
  Process *process = lookup_pid_or_return_error (self, invocation, pid);
  GVariantBuilder builder;
  GList *first = NULL;
  gsize bytes = 0;

  if (process == NULL)
    return G_DBUS_METHOD_INVOCATION_HANDLED;

  if (since_us < 0)
    {
      return_invalid_args (invocation, "since_us: expected a monotonic time in µs >= 0, got %"
                           G_GINT64_FORMAT, since_us);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }

  /* The newest snapshots after since_us that fit in one reply. */
  for (GList *l = process->history.tail; l != NULL; l = l->prev)
    {
      HistoryEntry *entry = l->data;

      if (entry->timestamp <= since_us || bytes + entry->variant_size > MAX_HISTORY_REPLY_BYTES)
        break;
      bytes += entry->variant_size;
      first = l;
    }

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("av"));
  for (GList *l = first; l != NULL; l = l->next)
    g_variant_builder_add (&builder, "v", ((HistoryEntry *) l->data)->variant);
  perfmon_dbus_daemon1_complete_get_history (skeleton, invocation, g_variant_builder_end (&builder));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_hangs (PerfmonDBusDaemon1    *skeleton,
                   GDBusMethodInvocation *invocation,
                   PerfmondDaemon        *self)
{
  GVariantBuilder builder;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a(susds)"));
  for (GList *l = self->hangs.head; l != NULL; l = l->next)
    {
      Hang *hang = l->data;

      g_variant_builder_add (&builder, "(susds)", hang->id, hang->pid, hang->process_name,
                             hang->duration_ms, hang->runnable_name);
    }
  perfmon_dbus_daemon1_complete_list_hangs (skeleton, invocation, g_variant_builder_end (&builder));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_pings (PerfmonDBusDaemon1    *skeleton,
                   GDBusMethodInvocation *invocation,
                   PerfmondDaemon        *self)
{
  GVariantBuilder builder;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a(uss)"));
  for (GList *l = self->pings.head; l != NULL; l = l->next)
    {
      Ping *ping = l->data;

      g_variant_builder_add (&builder, "(uss)", ping->pid, ping->process_name, ping->path);
    }
  perfmon_dbus_daemon1_complete_list_pings (skeleton, invocation, g_variant_builder_end (&builder));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_hang (PerfmonDBusDaemon1    *skeleton,
                 GDBusMethodInvocation *invocation,
                 const char            *id,
                 PerfmondDaemon        *self)
{
  if (strlen (id) > MAX_HANG_ID_BYTES)
    {
      return_invalid_args (invocation, "id: expected a hang id of at most %d bytes (\"PID-N\", see "
                           "ListHangs()), got %" G_GSIZE_FORMAT " bytes starting \"%.*s…\"",
                           MAX_HANG_ID_BYTES, strlen (id),
                           (int) _perfmon_utf8_cut (id, strlen (id), QUOTED_PREFIX_BYTES), id);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }

  for (GList *l = self->hangs.head; l != NULL; l = l->next)
    {
      Hang *hang = l->data;

      if (strcmp (hang->id, id) == 0)
        {
          perfmon_dbus_daemon1_complete_get_hang (skeleton, invocation, hang->json);
          return G_DBUS_METHOD_INVOCATION_HANDLED;
        }
    }

  return_invalid_args (invocation, "id: no hang has the id \"%s\" (perfmon hangs list lists them; "
                       "only the newest %u hangs are kept)", id, self->config.max_hangs);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
perfmond_daemon_dispose (GObject *object)
{
  PerfmondDaemon *self = PERFMOND_DAEMON (object);

  perfmond_daemon_unexport (self);

  G_OBJECT_CLASS (perfmond_daemon_parent_class)->dispose (object);
}

static void
perfmond_daemon_finalize (GObject *object)
{
  PerfmondDaemon *self = PERFMOND_DAEMON (object);

  g_hash_table_unref (self->by_name);
  g_hash_table_unref (self->by_pid);
  g_queue_clear_full (&self->hangs, (GDestroyNotify) hang_free);
  g_queue_clear_full (&self->pings, (GDestroyNotify) ping_free);
  perfmond_aggregator_free (self->aggregator);
  perfmond_uploader_free (self->uploader);
  g_strfreev (self->pings_dirs);
  perfmond_filter_unref (self->filter);
  perfmond_metrics_free (self->metrics);

  G_OBJECT_CLASS (perfmond_daemon_parent_class)->finalize (object);
}

static void
perfmond_daemon_class_init (PerfmondDaemonClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = perfmond_daemon_dispose;
  object_class->finalize = perfmond_daemon_finalize;
}

static void
perfmond_daemon_init (PerfmondDaemon *self)
{
  self->by_pid = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) perfmond_process_unref);
  self->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g_queue_init (&self->hangs);
  g_queue_init (&self->pings);
  self->aggregator = perfmond_aggregator_new ();
  self->metrics = perfmond_metrics_new ();
}

/* @config must have been checked (perfmond.c does it). */
PerfmondDaemon *
perfmond_daemon_new (const PerfmondConfig *config)
{
  PerfmondDaemon *self = g_object_new (PERFMOND_TYPE_DAEMON, NULL);

  g_return_val_if_fail (config->poll_interval_ms > 0, NULL);
  self->config = *config;
  self->config.upload_url = NULL;   /* not kept: the uploader has its copy */
  self->config.pings_dirs = NULL;   /* nor these: self->pings_dirs */
  self->filter = perfmond_filter_new (config->max_signals);
  perfmond_history_init (&self->history, &self->config, self->by_pid);
  {
    GPtrArray *dirs = g_ptr_array_new ();

    g_ptr_array_add (dirs, perfmond_default_pings_dir ());
    for (guint i = 0; config->pings_dirs != NULL && config->pings_dirs[i] != NULL; i++)
      g_ptr_array_add (dirs, g_canonicalize_filename (config->pings_dirs[i], NULL));
    g_ptr_array_add (dirs, NULL);
    self->pings_dirs = (char **) g_ptr_array_free (dirs, FALSE);
  }
  if (config->upload_url != NULL)
    self->uploader = perfmond_uploader_new (config->upload_url, (const char * const *) self->pings_dirs,
                                            config->pings_rescan_s);
  return self;
}

/* A call of a caller with our uid: the skeleton's own vtable serves it
 * (its handle-* signals), properties included. */
static void
serve_gated (GDBusMethodInvocation *invocation,
             gpointer               user_data)
{
  PerfmondDaemon *self = user_data;
  GDBusInterfaceSkeleton *skeleton = G_DBUS_INTERFACE_SKELETON (self->skeleton);
  GDBusInterfaceVTable *vtable;
  const char *interface = g_dbus_method_invocation_get_interface_name (invocation);
  const char *method = g_dbus_method_invocation_get_method_name (invocation);
  const char *sender = g_dbus_method_invocation_get_sender (invocation);
  g_autoptr(GError) error = NULL;

  if (self->skeleton == NULL)
    {
      g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.UnknownObject",
                                                  "perfmond is stopping");
      return;
    }
  vtable = g_dbus_interface_skeleton_get_vtable (skeleton);

  if (g_strcmp0 (interface, "org.freedesktop.DBus.Properties") != 0)
    {
      vtable->method_call (self->connection, sender, PERFMON_DAEMON_OBJECT_PATH, interface, method,
                           g_dbus_method_invocation_get_parameters (invocation), invocation, skeleton);
      return;
    }

  if (g_str_equal (method, "Get"))
    {
      const GDBusPropertyInfo *info = g_dbus_method_invocation_get_property_info (invocation);
      g_autoptr(GVariant) value = info != NULL ? vtable->get_property (self->connection, sender,
                                                                       PERFMON_DAEMON_OBJECT_PATH,
                                                                       PERFMON_DAEMON_INTERFACE, info->name, &error,
                                                                       skeleton) : NULL;

      if (value == NULL)
        g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.InvalidArgs",
                                                    "no such property");
      else
        g_dbus_method_invocation_return_value (invocation, g_variant_new ("(v)", value));
    }
  else if (g_str_equal (method, "GetAll"))
    g_dbus_method_invocation_return_value (invocation,
                                           g_variant_new ("(@a{sv})",
                                                          g_dbus_interface_skeleton_get_properties (skeleton)));
  else
    g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.InvalidArgs",
                                                "the properties of " PERFMON_DAEMON_INTERFACE " are read-only");
}

/* Every call, properties included (get_property is NULL, so GDBus hands
 * org.freedesktop.DBus.Properties calls here), passes the uid gate. */
static void
on_daemon_method_call (GDBusConnection       *connection,
                       const char            *sender,
                       const char            *object_path,
                       const char            *interface_name,
                       const char            *method_name,
                       GVariant              *parameters,
                       GDBusMethodInvocation *invocation,
                       gpointer               user_data)
{
  PerfmondDaemon *self = user_data;

  if (self->gate == NULL)
    {
      g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.UnknownObject",
                                                  "perfmond is stopping");
      return;
    }
  _perfmon_uid_gate_check (self->gate, invocation);
}

static const GDBusInterfaceVTable daemon_vtable = {
  .method_call = on_daemon_method_call,
  .get_property = NULL,
  .set_property = NULL,
};

gboolean
perfmond_daemon_export (PerfmondDaemon   *self,
                        GDBusConnection  *connection,
                        GError          **error)
{
  g_autoptr(PerfmonDBusDaemon1) skeleton = perfmon_dbus_daemon1_skeleton_new ();

  g_return_val_if_fail (PERFMOND_IS_DAEMON (self), FALSE);
  g_return_val_if_fail (self->connection == NULL, FALSE);

  perfmon_dbus_daemon1_set_poll_interval (skeleton, self->config.poll_interval_ms);
  perfmon_dbus_daemon1_set_history_duration (skeleton, self->config.history_s);
  perfmon_dbus_daemon1_set_version (skeleton, PERFMOND_VERSION);

  g_signal_connect (skeleton, "handle-register", G_CALLBACK (handle_register), self);
  g_signal_connect (skeleton, "handle-unregister", G_CALLBACK (handle_unregister), self);
  g_signal_connect (skeleton, "handle-list-processes", G_CALLBACK (handle_list_processes), self);
  g_signal_connect (skeleton, "handle-get-snapshot", G_CALLBACK (handle_get_snapshot), self);
  g_signal_connect (skeleton, "handle-get-aggregate", G_CALLBACK (handle_get_aggregate), self);
  g_signal_connect (skeleton, "handle-get-history", G_CALLBACK (handle_get_history), self);
  g_signal_connect (skeleton, "handle-list-hangs", G_CALLBACK (handle_list_hangs), self);
  g_signal_connect (skeleton, "handle-get-hang", G_CALLBACK (handle_get_hang), self);
  g_signal_connect (skeleton, "handle-list-pings", G_CALLBACK (handle_list_pings), self);
  g_signal_connect (skeleton, "handle-subscribe", G_CALLBACK (handle_subscribe), self);
  g_signal_connect (skeleton, "handle-unsubscribe", G_CALLBACK (handle_unsubscribe), self);

  self->registration_id =
    g_dbus_connection_register_object (connection, PERFMON_DAEMON_OBJECT_PATH,
                                       g_dbus_interface_skeleton_get_info (G_DBUS_INTERFACE_SKELETON (skeleton)),
                                       &daemon_vtable, self, NULL, error);
  if (self->registration_id == 0)
    return FALSE;

  self->connection = g_object_ref (connection);
  self->skeleton = g_steal_pointer (&skeleton);
  self->gate = _perfmon_uid_gate_new (connection, geteuid (), PERFMON_DAEMON_INTERFACE, serve_gated, self);
  self->subscribers = _perfmon_name_set_new (connection, MAX_SUBSCRIBERS);
  /* The filter may still run a moment after its removal (another
   * thread): it holds a reference until GDBus says it is done. */
  self->filter_id = g_dbus_connection_add_filter (connection, perfmond_filter_message,
                                                  perfmond_filter_ref (self->filter),
                                                  (GDestroyNotify) perfmond_filter_unref);
  self->poll_source = g_timeout_add (MAX (self->config.poll_interval_ms / POLL_SLOTS, 1), poll_tick, self);
  return TRUE;
}

/* Forgets every process (without telling them) and leaves the bus object. */
void
perfmond_daemon_unexport (PerfmondDaemon *self)
{
  g_autoptr(GPtrArray) processes = NULL;

  g_return_if_fail (PERFMOND_IS_DAEMON (self));

  if (self->skeleton == NULL)
    return;

  processes = all_processes (self);
  for (guint i = 0; i < processes->len; i++)
    remove_process (self, g_ptr_array_index (processes, i), "perfmond is stopping");

  g_clear_handle_id (&self->poll_source, g_source_remove);
  g_dbus_connection_remove_filter (self->connection, self->filter_id);
  self->filter_id = 0;
  g_dbus_connection_unregister_object (self->connection, self->registration_id);
  self->registration_id = 0;
  g_clear_pointer (&self->subscribers, _perfmon_name_set_free);
  _perfmon_uid_gate_close (g_steal_pointer (&self->gate), "org.freedesktop.DBus.Error.UnknownObject",
                           "perfmond is stopping");
  g_signal_handlers_disconnect_by_data (self->skeleton, self);
  g_clear_object (&self->skeleton);
  g_clear_object (&self->connection);
}
