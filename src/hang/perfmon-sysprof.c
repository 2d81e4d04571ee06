/* perfmon-sysprof.c: hangs, long dispatches and group CPU in a Sysprof capture
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * When Sysprof records a program (its recorder sets SYSPROF_TRACE_FD; so
 * does `perfmon run --sysprof FILE`), a running hang monitor writes into
 * the capture, through libsysprof-capture's writer, beside Sysprof's own
 * samples:
 *   - each hang, a mark "perfmon"/"Hang" of the hang's duration, from its
 *     start, whose message names its runnable and stack;
 *   - each dispatch of PERFMON_SYSPROF_DISPATCH_MS or more, a mark
 *     "perfmon"/"Dispatch" named after its automatic group;
 *   - the CPU of each group, counters "perfmon" / <group name>: at each
 *     snapshot, the milliseconds of CPU the group used since the previous
 *     one (their sum is the group's CPU time).
 *
 * The watched thread writes nothing here. Its long dispatches go to the
 * loop activity's ring (a few stores, see perfmon-loop-activity.c); hangs
 * come from the watchdog, snapshots from the hang monitor's context once
 * a second at most; both are queued. All writing, and every system call,
 * is this module's own thread's, which wakes every WAKE_MS.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sysprof-capture.h>

#include "perfmon-clock-private.h"
#include "perfmon-group-stats.h"
#include "perfmon-monitor-private.h"
#include "perfmon-sysprof-private.h"
#include "perfmon-utf8.h"

#define WAKE_MS 100
#define MAX_MESSAGE_BYTES 4096
#define MARKS_PER_READ 64
#define MARK_GROUP "perfmon"

typedef enum
{
  ITEM_HANG,
  ITEM_SNAPSHOT,
  ITEM_QUIT,
} ItemKind;

typedef struct
{
  ItemKind           kind;
  PerfmonHangReport *report;
  gint64             start_us;
  PerfmonSnapshot   *snapshot;
} Item;

typedef struct
{
  guint   counter_id;
  guint64 last_cpu_us;
} Counter;

struct _PerfmonSysprof
{
  SysprofCaptureWriter *writer;
  PerfmonLoopActivity  *activity;
  GAsyncQueue          *queue;     /* Item * */
  GThread              *thread;
  /* The thread's. */
  guint64               next_mark;
  guint64               lost_marks;
  GHashTable           *counters;  /* group id → Counter * */
  guint                 other_counter;
  guint64               other_last_cpu_us;
  gint32                pid;
  /* The monitor's thread. */
  PerfmonMonitor       *monitor;
  GSource              *snapshots;
};

/* The snapshots for the counters, on the monitor's thread: at most one a
 * second, and none while the loop sleeps (the source never wakes it: it
 * asks for a wake-up only after an iteration). */
typedef struct
{
  GSource         source;
  PerfmonSysprof *sysprof;
  gint64          last_us;
  gboolean        iterated;
} SnapshotSource;

static gboolean
snapshot_prepare (GSource *source,
                  gint    *timeout)
{
  SnapshotSource *self = (SnapshotSource *) source;
  gint64 due;

  if (!self->iterated)
    {
      self->iterated = TRUE;   /* the next prepare is after an iteration */
      *timeout = -1;
      return FALSE;
    }
  due = self->last_us + G_USEC_PER_SEC - g_source_get_time (source);
  if (due <= 0)
    return TRUE;
  *timeout = (gint) ((due + 999) / 1000);
  return FALSE;
}

static gboolean
snapshot_check (GSource *source)
{
  SnapshotSource *self = (SnapshotSource *) source;

  return self->iterated && g_source_get_time (source) >= self->last_us + G_USEC_PER_SEC;
}

static gboolean
snapshot_dispatch (GSource     *source,
                   GSourceFunc  callback,
                   gpointer     data)
{
  SnapshotSource *self = (SnapshotSource *) source;
  g_autoptr(PerfmonSnapshot) snapshot = perfmon_monitor_snapshot (self->sysprof->monitor);

  _perfmon_sysprof_add_snapshot (self->sysprof, snapshot);
  self->last_us = g_get_monotonic_time ();
  self->iterated = FALSE;
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs snapshot_funcs = {
  .prepare = snapshot_prepare,
  .check = snapshot_check,
  .dispatch = snapshot_dispatch,
};

/* One writer per process: two on the same descriptor would interleave
 * their frames. The first hang monitor started takes it. */
static gint writer_taken;   /* atomic */

static void
item_free (Item *item)
{
  g_clear_pointer (&item->report, perfmon_hang_report_unref);
  g_clear_object (&item->snapshot);
  g_free (item);
}

static gint64
us_to_ns (gint64 us)
{
  return us * 1000;
}

static void
write_hang (PerfmonSysprof    *self,
            PerfmonHangReport *report,
            gint64             start_us)
{
  g_autoptr(GString) message = g_string_new (NULL);
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  const char *runnable = perfmon_hang_report_get_runnable_name (report);
  double duration_ms = perfmon_hang_report_get_duration (report);

  g_string_append_printf (message, "%.1f ms, runnable: %s", duration_ms, runnable != NULL ? runnable : "?");
  if (stack != NULL && stack[0] != NULL)
    {
      g_string_append (message, "\nstack:");
      for (guint i = 0; stack[i] != NULL && message->len < MAX_MESSAGE_BYTES; i++)
        g_string_append_printf (message, "\n  %s", stack[i]);
    }
  else if (perfmon_hang_report_get_stack_unavailable_reason (report) != NULL)
    g_string_append_printf (message, "\nno stack: %s", perfmon_hang_report_get_stack_unavailable_reason (report));
  g_string_truncate (message, _perfmon_utf8_cut (message->str, message->len, MAX_MESSAGE_BYTES));

  sysprof_capture_writer_add_mark (self->writer, us_to_ns (start_us), -1, self->pid,
                                   (guint64) (duration_ms * 1000000.0), MARK_GROUP, "Hang", message->str);
}

static void
write_marks (PerfmonSysprof *self)
{
  PerfmonLoopMarkCopy marks[MARKS_PER_READ];
  guint n;

  do
    {
      guint64 lost = 0;

      n = _perfmon_loop_activity_read_marks (self->activity, &self->next_mark, marks, MARKS_PER_READ, &lost);
      self->lost_marks += lost;
      for (guint i = 0; i < n; i++)
        {
          gint64 end_us = _perfmon_clock_cycles_to_monotonic_us (marks[i].end);
          gint64 length_us = (gint64) ((double) marks[i].cycles / _perfmon_clock_cycles_per_us ());

          sysprof_capture_writer_add_mark (self->writer, us_to_ns (end_us - length_us), -1, self->pid,
                                           (guint64) us_to_ns (length_us), MARK_GROUP, "Dispatch",
                                           marks[i].name);
        }
    }
  while (n == MARKS_PER_READ);
}

static guint
define_counter (PerfmonSysprof *self,
                gint64          time_ns,
                const char     *name,
                const char     *description)
{
  SysprofCaptureCounter counter = { 0, };
  guint id = sysprof_capture_writer_request_counter (self->writer, 1);

  g_strlcpy (counter.category, MARK_GROUP, sizeof counter.category);
  memcpy (counter.name, name, _perfmon_utf8_cut (name, strlen (name), sizeof counter.name - 1));
  memcpy (counter.description, description,
          _perfmon_utf8_cut (description, strlen (description), sizeof counter.description - 1));
  counter.id = id;
  counter.type = SYSPROF_CAPTURE_COUNTER_DOUBLE;
  counter.value.vdbl = 0;
  sysprof_capture_writer_define_counters (self->writer, time_ns, -1, self->pid, &counter, 1);
  return id;
}

static void
write_counters (PerfmonSysprof  *self,
                PerfmonSnapshot *snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  gint64 time_ns = us_to_ns (perfmon_snapshot_get_timestamp (snapshot));
  g_autoptr(GArray) ids = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GArray) values = g_array_new (FALSE, FALSE, sizeof (SysprofCaptureCounterValue));
  guint64 other_cpu_us = 0;
  gboolean has_other = FALSE;

  for (guint i = 0; i < groups->len; i++)
    {
      const PerfmonGroupStats *stats = g_ptr_array_index (groups, i);
      guint64 id = perfmon_group_stats_get_id (stats);
      guint64 cpu_us = perfmon_group_stats_get_cpu_time (stats);
      Counter *counter = g_hash_table_lookup (self->counters, &id);
      SysprofCaptureCounterValue value;

      if (counter == NULL && g_hash_table_size (self->counters) < PERFMON_SYSPROF_MAX_COUNTERS)
        {
          g_autofree char *description = g_strdup_printf ("CPU ms of group %" G_GUINT64_FORMAT, id);
          guint64 *key = g_new (guint64, 1);

          *key = id;
          counter = g_new0 (Counter, 1);
          counter->counter_id = define_counter (self, time_ns, perfmon_group_stats_get_name (stats), description);
          g_hash_table_insert (self->counters, key, counter);
        }
      if (counter == NULL)
        {
          other_cpu_us += cpu_us;
          has_other = TRUE;
          continue;
        }
      value.vdbl = (double) (cpu_us - MIN (cpu_us, counter->last_cpu_us)) / 1000.0;
      counter->last_cpu_us = cpu_us;
      g_array_append_val (ids, counter->counter_id);
      g_array_append_val (values, value);
    }
  if (has_other)
    {
      SysprofCaptureCounterValue value;

      if (self->other_counter == 0)
        self->other_counter = define_counter (self, time_ns, "(other groups)", "CPU ms of the other groups");
      value.vdbl = (double) (other_cpu_us - MIN (other_cpu_us, self->other_last_cpu_us)) / 1000.0;
      self->other_last_cpu_us = other_cpu_us;
      g_array_append_val (ids, self->other_counter);
      g_array_append_val (values, value);
    }
  if (ids->len > 0)
    sysprof_capture_writer_set_counters (self->writer, time_ns, -1, self->pid, (const guint *) ids->data,
                                         (const SysprofCaptureCounterValue *) values->data, ids->len);
}

static gpointer
writer_main (gpointer data)
{
  PerfmonSysprof *self = data;
  gboolean quit = FALSE;

  while (!quit)
    {
      Item *item = g_async_queue_timeout_pop (self->queue, WAKE_MS * 1000);

      /* Dispatch marks first: a hang that follows them in time is queued
       * after they were noted. */
      write_marks (self);
      for (; item != NULL; item = g_async_queue_try_pop (self->queue))
        {
          switch (item->kind)
            {
            case ITEM_HANG:
              write_hang (self, item->report, item->start_us);
              break;
            case ITEM_SNAPSHOT:
              write_counters (self, item->snapshot);
              break;
            case ITEM_QUIT:
              quit = TRUE;
              break;
            }
          item_free (item);
        }
    }
  write_marks (self);
  if (self->lost_marks > 0)
    {
      g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT " dispatch marks were lost (the ring of %d "
                                               "was overwritten before it was read)", self->lost_marks,
                                               PERFMON_LOOP_MARKS);

      sysprof_capture_writer_add_log (self->writer, SYSPROF_CAPTURE_CURRENT_TIME, -1, self->pid,
                                      G_LOG_LEVEL_WARNING, "perfmon", text);
    }
  sysprof_capture_writer_flush (self->writer);
  return NULL;
}

static guint
dispatch_mark_ms (void)
{
  const char *text = g_getenv ("PERFMON_SYSPROF_DISPATCH_MS");
  guint64 ms;

  if (text != NULL && g_ascii_string_to_unsigned (text, 10, 1, 60000, &ms, NULL))
    return (guint) ms;
  if (text != NULL)
    g_warning ("PERFMON_SYSPROF_DISPATCH_MS: expected an integer in [1, 60000] (ms); %d ms it is",
               PERFMON_SYSPROF_DISPATCH_MS);
  return PERFMON_SYSPROF_DISPATCH_MS;
}

PerfmonSysprof *
_perfmon_sysprof_new_from_env (PerfmonMonitor *monitor)
{
  PerfmonLoopActivity *activity = _perfmon_monitor_get_loop_activity (monitor);
  PerfmonSysprof *self;
  SysprofCaptureWriter *writer;
  g_autofree char *cmdline = NULL;
  gsize length = 0;

  if (g_getenv ("SYSPROF_TRACE_FD") == NULL || !g_atomic_int_compare_and_exchange (&writer_taken, FALSE, TRUE))
    return NULL;
  writer = sysprof_capture_writer_new_from_env (0);
  if (writer == NULL)
    {
      g_warning ("SYSPROF_TRACE_FD is set, but is no descriptor a Sysprof capture can be written to");
      g_atomic_int_set (&writer_taken, FALSE);
      return NULL;
    }

  self = g_new0 (PerfmonSysprof, 1);
  self->writer = writer;
  self->activity = activity;
  self->pid = (gint32) getpid ();
  self->queue = g_async_queue_new_full ((GDestroyNotify) item_free);
  self->counters = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  /* The process, so that Sysprof names it. */
  if (g_file_get_contents ("/proc/self/cmdline", &cmdline, &length, NULL))
    {
      for (gsize i = 0; i + 1 < length; i++)
        if (cmdline[i] == '\0')
          cmdline[i] = ' ';
      sysprof_capture_writer_add_process (writer, SYSPROF_CAPTURE_CURRENT_TIME, -1, self->pid, cmdline);
    }
  self->next_mark = __atomic_load_n (&activity->n_marks, __ATOMIC_ACQUIRE);
  _perfmon_loop_activity_set_mark_min_cycles (activity, _perfmon_clock_us_to_cycles ((gint64) dispatch_mark_ms () * 1000));
  self->thread = g_thread_new ("perfmon-sysprof", writer_main, self);
  self->monitor = g_object_ref (monitor);
  if (perfmon_monitor_get_context (monitor) != NULL)
    {
      self->snapshots = g_source_new (&snapshot_funcs, sizeof (SnapshotSource));
      ((SnapshotSource *) self->snapshots)->sysprof = self;
      ((SnapshotSource *) self->snapshots)->last_us = g_get_monotonic_time ();
      g_source_set_name (self->snapshots, "[perfmon] Sysprof counters");
      g_source_set_priority (self->snapshots, G_PRIORITY_LOW);
      g_source_attach (self->snapshots, perfmon_monitor_get_context (monitor));
    }
  return self;
}

void
_perfmon_sysprof_add_hang (PerfmonSysprof    *self,
                           PerfmonHangReport *report,
                           gint64             start_us)
{
  Item *item = g_new0 (Item, 1);

  item->kind = ITEM_HANG;
  item->report = perfmon_hang_report_ref (report);
  item->start_us = start_us;
  g_async_queue_push (self->queue, item);
}

void
_perfmon_sysprof_add_snapshot (PerfmonSysprof  *self,
                               PerfmonSnapshot *snapshot)
{
  Item *item = g_new0 (Item, 1);

  item->kind = ITEM_SNAPSHOT;
  item->snapshot = g_object_ref (snapshot);
  g_async_queue_push (self->queue, item);
}

void
_perfmon_sysprof_free (PerfmonSysprof *self,
                       gboolean        on_monitor_thread)
{
  Item *item;

  if (self == NULL)
    return;
  if (self->snapshots != NULL)
    {
      g_source_destroy (self->snapshots);
      g_clear_pointer (&self->snapshots, g_source_unref);
    }
  /* The last counters, up to now. */
  if (on_monitor_thread && perfmon_monitor_get_context (self->monitor) != NULL)
    {
      g_autoptr(PerfmonSnapshot) snapshot = perfmon_monitor_snapshot (self->monitor);

      _perfmon_sysprof_add_snapshot (self, snapshot);
    }
  _perfmon_loop_activity_set_mark_min_cycles (self->activity, 0);
  item = g_new0 (Item, 1);
  item->kind = ITEM_QUIT;
  g_async_queue_push (self->queue, item);
  g_thread_join (self->thread);
  g_async_queue_unref (self->queue);
  g_hash_table_unref (self->counters);
  sysprof_capture_writer_unref (self->writer);
  g_object_unref (self->monitor);
  g_free (self);
  g_atomic_int_set (&writer_taken, FALSE);
}
