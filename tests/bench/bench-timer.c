/* bench-timer.c: the figures of task timers, thread watches and work units
 *
 * Prints, never asserts timings:
 *  1. perfmon_timer_set() + perfmon_timer_cancel() of a 5 s LOG timer, the
 *     way a task wraps itself, against a GLib yardstick in the same run: a
 *     5 s timeout source attached to another thread's context and
 *     destroyed; with the watchdog wake-ups this cost;
 *  2. perfmon_thread_watcher_report() and
 *  3. perfmon_monitor_work_begin() + work_end() under a running hang
 *     monitor, each against two bare cycle-counter reads.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon.h"
#include "bench-common.h"
#include "perfmon-test-dirs.h"
#include "perfmon-timeout-watchdog-private.h"

#define ROUNDS 41
#define TIMER_BATCH 10000
#define BATCH 100000

static gboolean
never (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

static double
ns_per_timer_set_cancel (void)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < TIMER_BATCH; i++)
    {
      guint id = perfmon_timer_set ("bench task", 5000, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, NULL);

      perfmon_timer_cancel (id);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / TIMER_BATCH;
}

static double
ns_per_glib_timeout (GMainContext *context)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < TIMER_BATCH; i++)
    {
      GSource *source = g_timeout_source_new (5000);

      g_source_set_callback (source, never, NULL, NULL);
      g_source_attach (source, context);
      g_source_destroy (source);
      g_source_unref (source);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / TIMER_BATCH;
}

static gpointer
run_context (gpointer data)
{
  GMainLoop *loop = data;

  g_main_loop_run (loop);
  return NULL;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static void
bench_timers (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GMainLoop) loop = g_main_loop_new (context, FALSE);
  GThread *thread = g_thread_new ("bench-loop", run_context, loop);
  double timers[ROUNDS], glib[ROUNDS];
  guint64 rounds_before;
  double median_timers, median_glib;

  /* Starts the watchdog. */
  perfmon_timer_cancel (perfmon_timer_set ("warm-up", 5000, PERFMON_TIMER_FLAG_LOG, NULL, NULL,
                                           NULL, NULL));
  rounds_before = _perfmon_timeout_count_rounds ();
  for (guint round = 0; round < ROUNDS; round++)
    {
      timers[round] = ns_per_timer_set_cancel ();
      glib[round] = ns_per_glib_timeout (context);
    }

  median_timers = bench_median (timers, ROUNDS);
  median_glib = bench_median (glib, ROUNDS);
  g_print ("1. timer set+cancel: %.1f ns; GLib timeout source attach+destroy on another "
           "thread's context: %.1f ns; ratio %.2fx  [median of %d x %d]; watchdog wake-ups "
           "meanwhile: %" G_GUINT64_FORMAT " for %u timers\n",
           median_timers, median_glib, median_timers / median_glib, ROUNDS, TIMER_BATCH,
           _perfmon_timeout_count_rounds () - rounds_before, ROUNDS * TIMER_BATCH);

  g_main_context_invoke (context, quit_loop, loop);
  g_thread_join (thread);
}

static double
ns_per_report (void)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < BATCH; i++)
    perfmon_thread_watcher_report ();
  return (double) (_perfmon_clock_monotonic_ns () - start) / BATCH;
}

static void
bench_report (void)
{
  g_autoptr(PerfmonThreadWatcher) watcher = perfmon_thread_watcher_new ();
  g_autoptr(GError) error = NULL;
  double counter[ROUNDS], report[ROUNDS];
  double median_counter, median_report;

  if (!perfmon_thread_watcher_register (watcher, "bench", 0, &error))
    g_error ("%s", error->message);
  for (guint round = 0; round < ROUNDS; round++)
    {
      counter[round] = bench_ns_per_two_counter_reads (BATCH);
      report[round] = ns_per_report ();
    }
  perfmon_thread_watcher_unregister (watcher);

  median_counter = bench_median (counter, ROUNDS);
  median_report = bench_median (report, ROUNDS);
  g_print ("2. thread watch report: %.1f ns; two bare counter reads: %.1f ns; ratio %.2fx  "
           "[median of %d x %d]\n",
           median_report, median_counter, median_report / median_counter, ROUNDS, BATCH);
}

static double
ns_per_work_unit (PerfmonMonitor *monitor)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < BATCH; i++)
    {
      perfmon_monitor_work_begin (monitor);
      perfmon_monitor_work_end (monitor);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / BATCH;
}

static void
bench_work_units (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-bench-timer-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autoptr(GError) error = NULL;
  double counter[ROUNDS], units[ROUNDS];
  double median_counter, median_units;

  g_main_context_push_thread_default (context);
  hang_monitor = perfmon_hang_monitor_new (monitor);
  g_object_set (hang_monitor, "pings-dir", pings, "log-dir", dir, NULL);
  if (!perfmon_hang_monitor_start (hang_monitor, &error))
    g_error ("%s", error->message);

  for (guint round = 0; round < ROUNDS; round++)
    {
      counter[round] = bench_ns_per_two_counter_reads (BATCH);
      units[round] = ns_per_work_unit (monitor);
    }
  perfmon_hang_monitor_stop (hang_monitor);
  g_main_context_pop_thread_default (context);

  median_counter = bench_median (counter, ROUNDS);
  median_units = bench_median (units, ROUNDS);
  g_print ("3. work unit begin+end, watched: %.1f ns; two bare counter reads: %.1f ns; "
           "ratio %.2fx  [median of %d x %d]\n",
           median_units, median_counter, median_units / median_counter, ROUNDS, BATCH);
  test_remove_tree (dir);
}

int
main (int   argc,
      char *argv[])
{
  perfmon_timeout_set_log_dir (g_get_tmp_dir ());
  bench_timers ();
  bench_report ();
  bench_work_units ();
  return 0;
}
