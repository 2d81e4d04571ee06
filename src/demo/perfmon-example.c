/* perfmon-example.c: a GLib program with janky and calm compartments, and
 * the snapshot difference that shows which is which.
 *
 * Two windows and three add-ons: a calm clock, a CPU-hungry spell checker
 * and a sync agent that blocks on "another process" and now and then
 * stalls the loop for 200 to 600 ms. With --export it also runs a hang
 * monitor and serves itself on the session bus (registering with perfmond),
 * as 'perfmon demo' runs it; the stalls then become hang reports whose
 * labels and annotations name the add-on.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <gio/gio.h>
#include <glib-unix.h>

#include "perfmon.h"

typedef struct
{
  const char *name;
  guint64     window_id;
  const char *addon_id;
  guint       interval_ms;
  guint       burn_min_ms;   /* CPU burned on each run */
  guint       burn_max_ms;
  guint       block_ms;      /* time blocked on "another process" */
  guint       stall_every;   /* every Nth run stalls the loop (0: never) */
  guint       stall_min_ms;
  guint       stall_max_ms;
  guint       runs;
  PerfmonGroup *compartment;
} Task;

/* Only the sync agent's stalls reach the hang threshold (128 ms): the
 * other runs stay under it even when they share one iteration, so that
 * every hang report is the stalling add-on's. */
static Task tasks[] = {
  { "clock-widget",  1, "clock@example.org",      50,  0,  1,   0, 0, 0,   0,   0, NULL },
  { "spell-checker", 2, "spellcheck@example.org", 120, 25, 70,  0, 0, 0,   0,   0, NULL },
  { "sync-agent",    1, "sync@example.org",       400, 1,  3,  40, 4, 200, 600, 0, NULL },
  { "inbox-view",    1, NULL,                     100, 2,  4,   0, 0, 0,   0,   0, NULL },
  { "editor-view",   2, NULL,                     100, 1,  3,   0, 0, 0,   0,   0, NULL },
};

static const struct
{
  const char *id;
  const char *name;
} addons[] = {
  { "clock@example.org",      "Clock widget" },
  { "spellcheck@example.org", "Spell checker" },
  { "sync@example.org",       "Sync agent" },
};

static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* Keeps the busy loop from being optimised away. */
static volatile guint64 burn_sink;

static void
burn_cpu_ms (guint ms)
{
  gint64 end = thread_cpu_us () + (gint64) ms * 1000;

  while (thread_cpu_us () < end)
    for (guint i = 0; i < 1000; i++)
      burn_sink += i;
}

/* Not static, and the program exports its symbols: a hang report's native
 * stack then names this function, not an offset into the program. */
gboolean run_task (gpointer data);

gboolean
run_task (gpointer data)
{
  Task *task = data;
  PerfmonMonitor *monitor = perfmon_monitor_get_default ();
  /* A hang's pseudo stack then says whose code the loop was stuck in. */
  PERFMON_AUTO_LABEL_DYNAMIC (task->addon_id != NULL ? "add-on" : "view",
                              task->addon_id != NULL ? task->addon_id : task->name);

  PERFMON_AUTO_ENTER (task->compartment);
  burn_cpu_ms (g_random_int_range (task->burn_min_ms, task->burn_max_ms + 1));
  if (task->block_ms)
    {
      perfmon_monitor_blocked_begin (monitor);
      g_usleep (task->block_ms * 1000);
      perfmon_monitor_blocked_end (monitor);
    }
  if (task->stall_every != 0 && ++task->runs % task->stall_every == 0)
    {
      /* A synchronous call that takes far too long: the loop stalls. */
      perfmon_annotate ("StallingAddon", task->addon_id);
      perfmon_monitor_blocked_begin (monitor);
      g_usleep (g_random_int_range (task->stall_min_ms, task->stall_max_ms + 1) * 1000);
      perfmon_monitor_blocked_end (monitor);
      perfmon_annotate ("StallingAddon", NULL);
    }

  return G_SOURCE_CONTINUE;
}

static void
on_alert (PerfmonMonitor *monitor,
          PerfmonGroup   *group,
          guint64         duration_us,
          gpointer        data)
{
  gboolean quiet = GPOINTER_TO_INT (data);

  /* The thread and the windows alert too; the add-ons are the news. */
  if (quiet || perfmon_group_get_kind (group) != PERFMON_GROUP_KIND_ADDON)
    return;

  g_print ("  alert: add-on %-24s used %5.1f ms of CPU in one iteration\n",
           perfmon_group_get_name (group), duration_us / 1000.0);
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static int
compare_cpu (gconstpointer a,
             gconstpointer b)
{
  guint64 ca = perfmon_group_stats_get_cpu_time (*(PerfmonGroupStats **) a);
  guint64 cb = perfmon_group_stats_get_cpu_time (*(PerfmonGroupStats **) b);

  return ca < cb ? 1 : ca > cb ? -1 : 0;
}

/* A label for people ("add-on" as they write it); a program reads
 * perfmon_group_kind_to_string()'s names. */
static const char *
kind_label (PerfmonGroupKind kind)
{
  switch (kind)
    {
    case PERFMON_GROUP_KIND_THREAD: return "thread";
    case PERFMON_GROUP_KIND_WINDOW: return "window";
    case PERFMON_GROUP_KIND_ADDON: return "add-on";
    case PERFMON_GROUP_KIND_COMPARTMENT: return "compartment";
    default: return "?";
    }
}

static void
print_delta (PerfmonSnapshot *delta)
{
  /* A copy keeps the source's free function: it must hold references. */
  g_autoptr(GPtrArray) groups = g_ptr_array_copy (perfmon_snapshot_get_groups (delta),
                                                  (GCopyFunc) (void (*) (void)) perfmon_group_stats_ref,
                                                  NULL);
  double interval_ms = perfmon_snapshot_get_interval (delta) / 1000.0;

  g_ptr_array_sort (groups, compare_cpu);

  g_print ("\n%-26s %-11s %8s %6s %8s  %s\n",
           "group", "kind", "CPU ms", "CPU %", "blocked", "iterations over 1 2 4 8 16 32 64 128 256 512 ms");
  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);
      const guint64 *durations = perfmon_group_stats_get_durations (stats, NULL);
      GString *histogram = g_string_new (NULL);

      for (guint d = 0; d < PERFMON_N_DURATIONS; d++)
        g_string_append_printf (histogram, "%s%" G_GUINT64_FORMAT, d ? " " : "", durations[d]);

      g_print ("%-26.26s %-11s %8.1f %5.1f%% %6.0fms  %s\n",
               perfmon_group_stats_get_name (stats),
               kind_label (perfmon_group_stats_get_kind (stats)),
               perfmon_group_stats_get_cpu_time (stats) / 1000.0,
               100.0 * perfmon_group_stats_get_cpu_time (stats) / 1000.0 / interval_ms,
               perfmon_group_stats_get_blocked_time (stats) / 1000.0,
               histogram->str);
      g_string_free (histogram, TRUE);
    }
}

int
main (int   argc,
      char *argv[])
{
  int seconds = 3;
  gboolean json = FALSE;
  gboolean export = FALSE;
  GOptionEntry entries[] = {
    { "seconds", 's', 0, G_OPTION_ARG_INT, &seconds, "How long to run (default 3)", "N" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print the snapshot difference as JSON", NULL },
    { "export", 'e', 0, G_OPTION_ARG_NONE, &export,
      "Detect hangs and serve the monitor on the session bus, registered with perfmond; no alerts printed", NULL },
    { NULL }
  };
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autoptr(GDBusConnection) bus = NULL;
  PerfmonGroup *addon_groups[G_N_ELEMENTS (addons)];
  g_autoptr(GOptionContext) options = g_option_context_new ("- janky and calm compartments under perfmon");
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_autoptr(PerfmonSnapshot) before = NULL;
  g_autoptr(PerfmonSnapshot) after = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  PerfmonMonitor *monitor;

  g_set_prgname ("perfmon-example");
  g_option_context_add_main_entries (options, entries, NULL);
  if (!g_option_context_parse (options, &argc, &argv, &error))
    {
      g_printerr ("perfmon-example: %s\n", error->message);
      return 2;
    }
  if (seconds < 1 || seconds > 3600)
    {
      g_printerr ("perfmon-example: --seconds must be in [1, 3600], got %d\n", seconds);
      return 2;
    }

  monitor = perfmon_monitor_get_default ();
  g_signal_connect (monitor, "alert", G_CALLBACK (on_alert), GINT_TO_POINTER (export));

  if (export)
    {
      hang_monitor = perfmon_hang_monitor_new (monitor);
      if (!perfmon_hang_monitor_start (hang_monitor, &error))
        {
          g_printerr ("perfmon-example: no hang detection: %s\n", error->message);
          return 1;
        }
      bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
      if (bus == NULL ||
          !perfmon_monitor_export_full (monitor, hang_monitor, bus, PERFMON_EXPORT_FLAGS_NONE, &error))
        {
          g_printerr ("perfmon-example: cannot export on the session bus: %s\n", error->message);
          return 1;
        }
    }

  /* Named before their compartments create them. */
  for (guint i = 0; i < G_N_ELEMENTS (addons); i++)
    addon_groups[i] = perfmon_monitor_get_addon_group (monitor, addons[i].id, addons[i].name);

  {
    /* Name the windows before their compartments create them. */
    G_GNUC_UNUSED g_autoptr(PerfmonGroup) inbox = perfmon_monitor_get_window_group (monitor, 1, "window 1: Inbox");
    G_GNUC_UNUSED g_autoptr(PerfmonGroup) editor = perfmon_monitor_get_window_group (monitor, 2, "window 2: Editor");

    for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
      {
        tasks[i].compartment = perfmon_monitor_create_compartment (monitor, tasks[i].name,
                                                                   tasks[i].window_id, tasks[i].addon_id);
        perfmon_group_set_active (tasks[i].compartment, TRUE);
        /* The name is the hang report's runnableName. */
        g_source_set_name_by_id (g_timeout_add (tasks[i].interval_ms, run_task, &tasks[i]), tasks[i].name);
      }

    g_print ("perfmon-example: 2 windows, 3 add-ons, running for %d s (alerts at %" G_GUINT64_FORMAT " ms)\n",
             seconds, perfmon_monitor_get_alert_threshold (monitor));

    loop = g_main_loop_new (NULL, FALSE);
    before = perfmon_monitor_snapshot (monitor);
    g_timeout_add_seconds (seconds, quit_loop, loop);
    /* 'perfmon demo' ends it early this way. */
    g_unix_signal_add (SIGTERM, quit_loop, loop);
    g_unix_signal_add (SIGINT, quit_loop, loop);
    g_main_loop_run (loop);
    after = perfmon_monitor_snapshot (monitor);
    /* Stopping the hang monitor iterates the context once more to deliver
     * the last hangs: the tasks must not run again then. */
    for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
      while (g_source_remove_by_user_data (&tasks[i]))
        ;
    if (hang_monitor != NULL)
      perfmon_hang_monitor_stop (hang_monitor);
  }

  delta = perfmon_snapshot_subtract (after, before, &error);
  if (delta == NULL)
    {
      g_printerr ("perfmon-example: %s\n", error->message);
      return 1;
    }

  if (json)
    {
      g_autofree char *text = perfmon_snapshot_to_json (delta);
      g_print ("%s\n", text);
    }
  else
    {
      print_delta (delta);
      g_print ("\nThe spell checker add-on is the janky one: its iterations land in the 16 to 64 ms "
               "buckets.\nThe sync agent blocks often, and now and then stalls the loop for\n"
               "200 to 600 ms, but uses little CPU.\n");
    }

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    g_clear_object (&tasks[i].compartment);
  for (guint i = 0; i < G_N_ELEMENTS (addons); i++)
    g_clear_object (&addon_groups[i]);

  return 0;
}
