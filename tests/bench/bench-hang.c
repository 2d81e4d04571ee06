/* bench-hang.c: what the hang monitor costs and how fast it catches a hang
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Prints, and asserts nothing:
 *  1. watchdog wake-ups while the watched loop idles 10 s (target <= 2),
 *     counted by the watchdog and by the kernel (the watchdog thread's
 *     context switches);
 *  2. detection latency: from the start of a 300 ms hang to the watchdog
 *     catching it, threshold 128 ms (target <= threshold + 20 %), and from
 *     the end of the hang to its report;
 *  3. 1,000,000 empty idle dispatches with the accounting monitor and the
 *     hang monitor on, against no monitor at all (target <= 1.08x), in
 *     CPU time: against a single-threaded process, and against the same
 *     loop in a process with one more thread, parked, as every program
 *     with a GDBus connection or a GTask has. Any second thread costs
 *     this loop about 10 %: glibc's cancellable system calls (poll) take
 *     a slower path once a process has two threads, and the loop makes one
 *     per iteration; the watchdog is that thread here, but the
 *     monitor's polls that cannot sleep skip glibc's poll() (poll_now()
 *     in perfmon-monitor.c), so with a monitor it no longer costs that;
 *  4. label push + pop, with a hang monitor running.
 */

#include "config.h"

#include <glib/gstdio.h>
#include <stdlib.h>

#include "bench/bench-common.h"
#include "bench/bench-dispatch.h"
#include "perfmon.h"
#include "perfmon-hang-monitor-private.h"

static char *pings_dir;

static PerfmonHangMonitor *
start_hang_monitor (PerfmonMonitor *monitor,
                    guint           threshold_ms)
{
  g_autoptr(GError) error = NULL;
  PerfmonHangMonitor *hang_monitor = perfmon_hang_monitor_new (monitor);

  g_object_set (hang_monitor, "pings-dir", pings_dir, "threshold", threshold_ms, NULL);
  if (!perfmon_hang_monitor_start (hang_monitor, &error))
    g_error ("could not start the hang monitor: %s", error->message);
  return hang_monitor;
}

/* The watchdog's context switches as the kernel counts them. */
static guint64
watchdog_context_switches (void)
{
  g_autoptr(GDir) tasks = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;

  while (tasks != NULL && (tid = g_dir_read_name (tasks)) != NULL)
    {
      g_autofree char *comm_path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
      g_autofree char *status_path = g_strdup_printf ("/proc/self/task/%s/status", tid);
      g_autofree char *comm = NULL;
      g_autofree char *status = NULL;
      const char *line;

      if (!g_file_get_contents (comm_path, &comm, NULL, NULL) ||
          !g_str_has_prefix (comm, "perfmon-watchdo") ||
          !g_file_get_contents (status_path, &status, NULL, NULL))
        continue;
      line = strstr (status, "voluntary_ctxt_switches:");
      if (line != NULL)
        return g_ascii_strtoull (line + strlen ("voluntary_ctxt_switches:"), NULL, 10);
    }
  return 0;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static void
bench_idle_wakeups (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GMainLoop) loop = g_main_loop_new (context, FALSE);
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (context);
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autoptr(GSource) settle = g_timeout_source_new (200);
  g_autoptr(GSource) idle = g_timeout_source_new_seconds (10);
  guint64 wakeups_before, switches_before;

  g_main_context_push_thread_default (context);
  hang_monitor = start_hang_monitor (monitor, PERFMON_HANG_DEFAULT_THRESHOLD_MS);

  g_source_set_callback (settle, quit_loop, loop, NULL);
  g_source_attach (settle, context);
  g_main_loop_run (loop);

  wakeups_before = _perfmon_hang_monitor_count_wakeups (hang_monitor);
  switches_before = watchdog_context_switches ();
  g_source_set_callback (idle, quit_loop, loop, NULL);
  g_source_attach (idle, context);
  g_main_loop_run (loop);

  g_print ("1. watchdog wake-ups while the loop idles 10 s: %" G_GUINT64_FORMAT
           " (target <= 2); the watchdog thread's voluntary context switches: %" G_GUINT64_FORMAT "\n",
           _perfmon_hang_monitor_count_wakeups (hang_monitor) - wakeups_before,
           watchdog_context_switches () - switches_before);

  perfmon_hang_monitor_stop (hang_monitor);
  g_main_context_pop_thread_default (context);
}

#define N_HANGS 10
#define HANG_MS 300

typedef struct
{
  GMainLoop *loop;
  gint64     hang_end_us;
  gint64     report_delay_us;
  gboolean   reported;
} HangRun;

static gboolean
hang_300_ms (gpointer data)
{
  HangRun *run = data;
  gint64 end = g_get_monotonic_time () + HANG_MS * 1000;

  while (g_get_monotonic_time () < end)
    ;
  run->hang_end_us = g_get_monotonic_time ();
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         HangRun            *run)
{
  run->report_delay_us = g_get_monotonic_time () - run->hang_end_us;
  run->reported = TRUE;
  g_main_loop_quit (run->loop);
}

/* A hang the watchdog woke too late for, on a starved machine, is not one
 * (see wait_for_deadline()): no report comes, and the round ends here. */
static gboolean
give_up_on_hang (gpointer data)
{
  HangRun *run = data;

  g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

static void
bench_detection_latency (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GMainLoop) loop = g_main_loop_new (context, FALSE);
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (context);
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  double latency_ms[N_HANGS], report_ms[N_HANGS];
  double worst = 0.0;
  guint n_caught = 0;
  HangRun run = { loop, 0, 0, FALSE };

  g_main_context_push_thread_default (context);
  hang_monitor = start_hang_monitor (monitor, PERFMON_HANG_DEFAULT_THRESHOLD_MS);
  g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang), &run);

  for (guint i = 0; i < N_HANGS; i++)
    {
      g_autoptr(GSource) source = g_timeout_source_new (50);
      g_autoptr(GSource) give_up = g_timeout_source_new_seconds (5);

      g_source_set_name (source, "bench hang");
      g_source_set_callback (source, hang_300_ms, &run, NULL);
      g_source_attach (source, context);
      g_source_set_callback (give_up, give_up_on_hang, &run, NULL);
      g_source_attach (give_up, context);
      run.reported = FALSE;
      g_main_loop_run (loop);
      g_source_destroy (give_up);
      if (!run.reported)
        continue;
      latency_ms[n_caught] = (double) _perfmon_hang_monitor_get_last_detection_latency_us (hang_monitor) / 1000.0;
      report_ms[n_caught] = (double) run.report_delay_us / 1000.0;
      worst = MAX (worst, latency_ms[n_caught]);
      n_caught++;
    }

  if (n_caught == 0)
    {
      g_print ("2. detection latency: none of %d hangs of %d ms was caught (a starved machine)\n",
               N_HANGS, HANG_MS);
      perfmon_hang_monitor_stop (hang_monitor);
      g_main_context_pop_thread_default (context);
      return;
    }

  g_print ("2. detection latency of %u of %d hangs of %d ms caught, threshold %d ms: median %.1f ms, "
           "worst %.1f ms (target <= %.1f ms); report %.1f ms (median) after the hang ended\n",
           n_caught, N_HANGS, HANG_MS, PERFMON_HANG_DEFAULT_THRESHOLD_MS,
           bench_median (latency_ms, n_caught), worst, PERFMON_HANG_DEFAULT_THRESHOLD_MS * 1.2,
           bench_median (report_ms, n_caught));

  perfmon_hang_monitor_stop (hang_monitor);
  g_main_context_pop_thread_default (context);
}

#define N_DISPATCHES 1000000
#define DISPATCH_ROUNDS 11

typedef enum { PLAIN, PLAIN_WITH_THREAD, MONITORED, MONITORED_AND_WATCHED } Setup;

typedef struct
{
  GMutex   mutex;
  GCond    cond;
  gboolean done;
} ParkedThread;

static gpointer
parked_thread (gpointer data)
{
  ParkedThread *parked = data;

  g_mutex_lock (&parked->mutex);
  while (!parked->done)
    g_cond_wait (&parked->cond, &parked->mutex);
  g_mutex_unlock (&parked->mutex);
  return NULL;
}

static BenchSeconds
seconds_for_dispatches (Setup setup)
{
  g_autoptr(PerfmonMonitor) monitor = NULL;
  g_autoptr(PerfmonGroup) compartment = NULL;
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  BenchSeconds seconds;
  ParkedThread parked = { 0, };
  GThread *thread = NULL;

  if (setup == PLAIN_WITH_THREAD)
    thread = g_thread_new ("parked", parked_thread, &parked);
  if (setup == MONITORED || setup == MONITORED_AND_WATCHED)
    {
      monitor = perfmon_monitor_new (g_main_context_default ());
      compartment = perfmon_monitor_create_compartment (monitor, "idle", 1, "addon");
      perfmon_group_set_active (compartment, TRUE);
    }
  if (setup == MONITORED_AND_WATCHED)
    hang_monitor = start_hang_monitor (monitor, PERFMON_HANG_DEFAULT_THRESHOLD_MS);

  seconds = bench_seconds_for_idle_dispatches (N_DISPATCHES, compartment);

  if (hang_monitor != NULL)
    perfmon_hang_monitor_stop (hang_monitor);
  if (thread != NULL)
    {
      g_mutex_lock (&parked.mutex);
      parked.done = TRUE;
      g_cond_signal (&parked.cond);
      g_mutex_unlock (&parked.mutex);
      g_thread_join (thread);
    }
  return seconds;
}

static void
bench_dispatch (void)
{
  double plain[DISPATCH_ROUNDS], monitored[DISPATCH_ROUNDS], watched[DISPATCH_ROUNDS];
  double threaded[DISPATCH_ROUNDS], threaded_ratios[DISPATCH_ROUNDS];
  double watched_ratios[DISPATCH_ROUNDS], monitored_ratios[DISPATCH_ROUNDS];
  double watched_wall_ratios[DISPATCH_ROUNDS];

  /* Paired rounds against the drift of the machine's speed, in CPU time
   * (the watchdog thread's included), as in bench-accounting. */
  for (guint round = 0; round < DISPATCH_ROUNDS; round++)
    {
      BenchSeconds p = seconds_for_dispatches (PLAIN);
      BenchSeconds t = seconds_for_dispatches (PLAIN_WITH_THREAD);
      BenchSeconds m = seconds_for_dispatches (MONITORED);
      BenchSeconds w = seconds_for_dispatches (MONITORED_AND_WATCHED);

      plain[round] = p.cpu;
      threaded[round] = t.cpu;
      monitored[round] = m.cpu;
      watched[round] = w.cpu;
      monitored_ratios[round] = m.cpu / p.cpu;
      watched_ratios[round] = w.cpu / p.cpu;
      threaded_ratios[round] = w.cpu / t.cpu;
      watched_wall_ratios[round] = w.wall / p.wall;
    }

  g_print ("3. %d idle dispatches, CPU time: no monitor %.3f s, monitored %.3f s (%.3fx), "
           "monitored + hang monitor %.3f s: ratio %.3fx (target <= 1.08x) [medians of %d paired rounds; "
           "wall-time ratio %.3fx]; against the loop with one parked thread (%.3f s): %.3fx\n",
           N_DISPATCHES, bench_median (plain, DISPATCH_ROUNDS),
           bench_median (monitored, DISPATCH_ROUNDS), bench_median (monitored_ratios, DISPATCH_ROUNDS),
           bench_median (watched, DISPATCH_ROUNDS), bench_median (watched_ratios, DISPATCH_ROUNDS),
           DISPATCH_ROUNDS, bench_median (watched_wall_ratios, DISPATCH_ROUNDS),
           bench_median (threaded, DISPATCH_ROUNDS), bench_median (threaded_ratios, DISPATCH_ROUNDS));
}

#define N_LABELS 10000000

static void
bench_labels (void)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < N_LABELS; i++)
    {
      perfmon_label_push ("bench", NULL);
      perfmon_label_pop ();
    }
  g_print ("4. label push + pop: %.1f ns\n", (double) (_perfmon_clock_monotonic_ns () - start) / N_LABELS);
}

int
main (void)
{
  g_autofree char *dir = g_dir_make_tmp ("bench-hang-XXXXXX", NULL);

  pings_dir = g_build_filename (dir, "pings", NULL);
  bench_idle_wakeups ();
  bench_detection_latency ();
  bench_dispatch ();
  bench_labels ();
  g_free (pings_dir);
  return 0;
}
