/* perfmon-preload.c: LD_PRELOAD module that monitors an unmodified GLib
 * program (see "perfmon run")
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Before the program's main(), on its main thread, the constructor attaches
 * the default monitor (perfmon_monitor_get_default()) and a hang monitor to
 * the default main context. At exit it prints what it saw: iterations, CPU,
 * the jank histogram and the hangs with their stacks, to stderr or, as
 * JSON, to a file.
 *
 * Settings come from the environment, as "perfmon run" sets it:
 *   PERFMON_RUN_THRESHOLD_MS  hang threshold (ms)
 *   PERFMON_RUN_PERMAHANG_MS  permahang threshold (ms)
 *   PERFMON_RUN_SUMMARY       write the summary as JSON to this file
 *   PERFMON_RUN_NO_EXPORT     "1": do not serve the monitor on the session
 *                             bus (by default it is, and registers with
 *                             perfmond, when a session bus exists)
 *   PERFMON_RUN_PID           only this process prints a summary: children
 *                             inherit LD_PRELOAD and are monitored, but
 *                             the summary is the command's own
 *
 * Threads: the constructor and the exit handler run on the main thread
 * (an exit from another thread prints no summary: the monitor's snapshot
 * belongs to the main thread); the hang signal arrives on the default main
 * context, on the thread that iterates it.
 */
#define _GNU_SOURCE  /* gettid(), execvpe() */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "perfmon.h"

/* Reports kept for the summary; later hangs are only counted. */
#define MAX_KEPT_HANGS 20
/* Native frames printed per hang in the text summary. */
#define MAX_PRINTED_FRAMES 16

static struct
{
  PerfmonMonitor     *monitor;
  PerfmonHangMonitor *hang_monitor;
  GPtrArray          *hangs;          /* of PerfmonHangReport */
  guint               n_hangs;
  gint64              start_us;       /* monotonic */
  pid_t               pid;
  pid_t               main_tid;
  char               *summary_path;
  gboolean            print_summary;
  GDBusConnection    *bus;            /* exported on */
} preload;

static void
preload_message (const char *format,
                 ...) G_GNUC_PRINTF (1, 2);

static void
preload_message (const char *format,
                 ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_printerr ("perfmon: %s\n", message);
}

/* A threshold from the environment, or 0 (keep the default) with a
 * warning when it is not a number of ms in range. */
static guint
env_ms (const char *name)
{
  const char *text = g_getenv (name);
  guint64 value = 0;
  g_autoptr(GError) error = NULL;

  if (text == NULL || *text == '\0')
    return 0;
  if (!g_ascii_string_to_unsigned (text, 10, 1, G_MAXINT / 1000, &value, &error))
    {
      preload_message ("%s: %s; keeping the default", name, error->message);
      return 0;
    }
  return (guint) value;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         gpointer            data)
{
  preload.n_hangs++;
  if (preload.hangs->len < MAX_KEPT_HANGS)
    g_ptr_array_add (preload.hangs, perfmon_hang_report_ref (report));
}

static void
on_bus (GObject      *source,
        GAsyncResult *result,
        gpointer      data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = g_bus_get_finish (result, &error);

  if (bus == NULL ||
      !perfmon_monitor_export_full (preload.monitor, preload.hang_monitor, bus,
                                    PERFMON_EXPORT_FLAGS_NONE, &error))
    {
      if (preload.print_summary)
        preload_message ("not exported on the session bus: %s", error->message);
      return;
    }
  preload.bus = g_steal_pointer (&bus);
}

/* On the loop's first iteration, not in the constructor: connecting to the
 * bus must never hold up the program's start, and the connection is made
 * by GDBus's own thread while the loop goes on. */
static gboolean
export_on_first_iteration (gpointer data)
{
  g_bus_get (G_BUS_TYPE_SESSION, NULL, on_bus, NULL);
  return G_SOURCE_REMOVE;
}

static gboolean
session_bus_exists (void)
{
  const char *address = g_getenv ("DBUS_SESSION_BUS_ADDRESS");
  g_autofree char *socket = NULL;

  if (address != NULL && *address != '\0')
    return TRUE;
  /* Without an address GDBus would try X11 autolaunch: only the
   * systemd-style socket counts. */
  socket = g_build_filename (g_get_user_runtime_dir (), "bus", NULL);
  return g_file_test (socket, G_FILE_TEST_EXISTS);
}

static PerfmonGroupStats *
thread_stats (PerfmonSnapshot *snapshot)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    if (perfmon_group_stats_get_kind (g_ptr_array_index (groups, i)) == PERFMON_GROUP_KIND_THREAD)
      return g_ptr_array_index (groups, i);
  return NULL;
}

static void
print_text_summary (PerfmonSnapshot *snapshot,
                    double           seconds)
{
  PerfmonGroupStats *thread = thread_stats (snapshot);
  const guint64 *durations = thread != NULL ? perfmon_group_stats_get_durations (thread, NULL) : NULL;
  g_autoptr(GString) histogram = g_string_new (NULL);

  for (guint d = 0; durations != NULL && d < PERFMON_N_DURATIONS; d++)
    g_string_append_printf (histogram, " %u:%" G_GUINT64_FORMAT, 1u << d, durations[d]);

  g_printerr ("\nperfmon: summary of %s (pid %u), %.2f s:\n",
              perfmon_snapshot_get_process_name (snapshot), perfmon_snapshot_get_pid (snapshot), seconds);
  g_printerr ("  main loop: %" G_GUINT64_FORMAT " iterations, %.1f ms of CPU in them, %.1f ms blocked\n",
              thread != NULL ? perfmon_group_stats_get_ticks (thread) : 0,
              thread != NULL ? perfmon_group_stats_get_cpu_time (thread) / 1000.0 : 0.0,
              thread != NULL ? perfmon_group_stats_get_blocked_time (thread) / 1000.0 : 0.0);
  g_printerr ("  process CPU: user %.1f ms, system %.1f ms\n",
              perfmon_snapshot_get_user_time (snapshot) / 1000.0,
              perfmon_snapshot_get_system_time (snapshot) / 1000.0);
  g_printerr ("  iterations over N ms (N:count):%s\n", histogram->str);
  g_printerr ("  hangs: %u (threshold %u ms)%s\n", preload.n_hangs,
              perfmon_hang_monitor_get_threshold (preload.hang_monitor), preload.n_hangs > 0 ? ":" : "");

  for (guint i = 0; i < preload.hangs->len; i++)
    {
      PerfmonHangReport *report = g_ptr_array_index (preload.hangs, i);
      g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
      const char * const *labels = perfmon_hang_report_get_pseudo_stack (report);
      guint n_frames = g_strv_length (stack);

      g_printerr ("  - %.0f ms in %s\n", perfmon_hang_report_get_duration (report),
                  perfmon_hang_report_get_runnable_name (report) != NULL
                    ? perfmon_hang_report_get_runnable_name (report) : "(unknown)");
      if (labels != NULL && labels[0] != NULL)
        {
          g_autofree char *joined = g_strjoinv (" > ", (char **) labels);
          g_printerr ("      labels: %s\n", joined);
        }
      if (n_frames == 0)
        g_printerr ("      no stack: %s\n",
                    perfmon_hang_report_get_stack_unavailable_reason (report) != NULL
                      ? perfmon_hang_report_get_stack_unavailable_reason (report) : "unknown reason");
      /* Innermost first, as a backtrace reads. */
      for (guint f = 0; f < n_frames && f < MAX_PRINTED_FRAMES; f++)
        g_printerr ("      #%-2u %s\n", f, stack[n_frames - 1 - f]);
      if (n_frames > MAX_PRINTED_FRAMES)
        g_printerr ("      (%u more frames)\n", n_frames - MAX_PRINTED_FRAMES);
    }
  if (preload.n_hangs > preload.hangs->len)
    g_printerr ("  (%u more hangs not shown)\n", preload.n_hangs - preload.hangs->len);
}

static gboolean
write_json_summary (PerfmonSnapshot *snapshot,
                    double           seconds,
                    GError         **error)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *snapshot_text = perfmon_snapshot_to_json (snapshot);
  g_autofree char *text = NULL;
  PerfmonGroupStats *thread = thread_stats (snapshot);
  JsonNode *snapshot_node;

  snapshot_node = json_from_string (snapshot_text, error);
  if (snapshot_node == NULL)
    return FALSE;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "version");
  json_builder_add_int_value (builder, 1);
  json_builder_set_member_name (builder, "pid");
  json_builder_add_int_value (builder, perfmon_snapshot_get_pid (snapshot));
  json_builder_set_member_name (builder, "process_name");
  json_builder_add_string_value (builder, perfmon_snapshot_get_process_name (snapshot));
  json_builder_set_member_name (builder, "seconds");
  json_builder_add_double_value (builder, seconds);
  json_builder_set_member_name (builder, "iterations");
  json_builder_add_int_value (builder, thread != NULL ? (gint64) perfmon_group_stats_get_ticks (thread) : 0);
  json_builder_set_member_name (builder, "cpu_time");
  json_builder_add_int_value (builder, thread != NULL ? (gint64) perfmon_group_stats_get_cpu_time (thread) : 0);
  json_builder_set_member_name (builder, "durations");
  json_builder_begin_array (builder);
  for (guint d = 0; thread != NULL && d < PERFMON_N_DURATIONS; d++)
    json_builder_add_int_value (builder, (gint64) perfmon_group_stats_get_durations (thread, NULL)[d]);
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "hang_threshold");
  json_builder_add_int_value (builder, perfmon_hang_monitor_get_threshold (preload.hang_monitor));
  json_builder_set_member_name (builder, "hang_count");
  json_builder_add_int_value (builder, preload.n_hangs);
  json_builder_set_member_name (builder, "hangs");
  json_builder_begin_array (builder);
  for (guint i = 0; i < preload.hangs->len; i++)
    {
      g_autofree char *report_text = perfmon_hang_report_to_json (g_ptr_array_index (preload.hangs, i));
      JsonNode *report_node = json_from_string (report_text, error);

      if (report_node == NULL)
        {
          json_node_unref (snapshot_node);
          return FALSE;
        }
      json_builder_add_value (builder, report_node);
    }
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "snapshot");
  json_builder_add_value (builder, snapshot_node);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  text = json_to_string (root, TRUE);
  /* Atomic: a reader never sees half a summary. */
  return g_file_set_contents (preload.summary_path, text, -1, error);
}

static void
perfmon_preload_at_exit (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  double seconds;

  if (preload.monitor == NULL)
    return;
  /* A child forked without exec: the watchdog thread did not come along,
   * and the summary is its parent's to print. */
  if (getpid () != preload.pid)
    return;
  if (gettid () != preload.main_tid)
    {
      if (preload.print_summary)
        preload_message ("the program exited from a thread other than its main thread: no summary");
      return;
    }

  /* Stopping finishes a hang still going on (a program that quits its
   * loop from inside a long dispatch) and delivers the hangs not yet
   * signalled. */
  perfmon_hang_monitor_stop (preload.hang_monitor);

  if (preload.print_summary)
    {
      seconds = (double) (g_get_monotonic_time () - preload.start_us) / G_USEC_PER_SEC;
      snapshot = perfmon_monitor_snapshot (preload.monitor);
      if (preload.summary_path != NULL)
        {
          if (!write_json_summary (snapshot, seconds, &error))
            preload_message ("cannot write the summary to %s: %s", preload.summary_path, error->message);
        }
      else
        print_text_summary (snapshot, seconds);
    }

  if (preload.bus != NULL)
    perfmon_monitor_unexport (preload.monitor, preload.bus);
  g_clear_object (&preload.bus);
  g_clear_pointer (&preload.hangs, g_ptr_array_unref);
  g_clear_object (&preload.hang_monitor);
  g_clear_pointer (&preload.summary_path, g_free);
  /* The default monitor is the library's, not ours. */
  preload.monitor = NULL;
}

__attribute__((constructor))
static void
perfmon_preload_init (void)
{
  g_autoptr(GError) error = NULL;
  const char *summary_pid = g_getenv ("PERFMON_RUN_PID");
  guint threshold_ms = env_ms ("PERFMON_RUN_THRESHOLD_MS");
  guint permahang_ms = env_ms ("PERFMON_RUN_PERMAHANG_MS");

  preload.start_us = g_get_monotonic_time ();
  preload.pid = getpid ();
  preload.main_tid = gettid ();
  preload.print_summary = summary_pid == NULL || atoi (summary_pid) == getpid ();
  if (preload.print_summary && g_getenv ("PERFMON_RUN_SUMMARY") != NULL && *g_getenv ("PERFMON_RUN_SUMMARY") != '\0')
    preload.summary_path = g_strdup (g_getenv ("PERFMON_RUN_SUMMARY"));

  preload.monitor = perfmon_monitor_get_default ();
  preload.hangs = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  preload.hang_monitor = perfmon_hang_monitor_new (preload.monitor);
  if (threshold_ms != 0)
    perfmon_hang_monitor_set_threshold (preload.hang_monitor, threshold_ms);
  if (permahang_ms != 0)
    perfmon_hang_monitor_set_permahang_threshold (preload.hang_monitor, permahang_ms);
  g_signal_connect (preload.hang_monitor, "hang", G_CALLBACK (on_hang), NULL);
  /* The program's identity in its pings, from `perfmon run`'s caller (a
   * bad value is said, and the default kept). */
  {
    static const char * const identity[][2] = {
      { "PERFMON_APP_NAME", "app-name" },
      { "PERFMON_APP_VERSION", "app-version" },
      { "PERFMON_APP_CHANNEL", "app-channel" },
      { "PERFMON_APP_BUILD_ID", "app-build-id" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (identity); i++)
      if (g_getenv (identity[i][0]) != NULL && *g_getenv (identity[i][0]) != '\0')
        g_object_set (preload.hang_monitor, identity[i][1], g_getenv (identity[i][0]), NULL);
  }

  /* Its signals come on the default context, which the program's loop
   * runs: a hang found while the loop sleeps wakes it. */
  if (!perfmon_hang_monitor_start (preload.hang_monitor, &error))
    {
      /* Accounting still works without the watchdog. */
      preload_message ("no hang detection in this process: %s", error->message);
      g_clear_error (&error);
    }

  if (g_strcmp0 (g_getenv ("PERFMON_RUN_NO_EXPORT"), "1") != 0 && session_bus_exists ())
    g_idle_add_full (G_PRIORITY_DEFAULT, export_on_first_iteration, NULL, NULL);

  /* After the hang monitor's own exit handler, so that this one runs first
   * (atexit is last in, first out) and sees every hang. */
  if (atexit (perfmon_preload_at_exit) != 0)
    preload_message ("cannot register the exit summary: %s", g_strerror (errno));
}
