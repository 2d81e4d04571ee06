/* bench-layers.c: what each layer of the library API adds to an empty
 * dispatch, side by side in one run
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Prints, never asserts. Every mode adds one layer to the one before it,
 * on the default main context, with one idle source re-dispatched:
 *
 *   plain       no perfmon at all
 *   thread      plain, plus one parked thread (the hang monitor's watchdog
 *               is a thread, and glibc's cancellable system calls take a
 *               slower path once a process has two: the fair yardstick of
 *               "hang" below)
 *   monitor     a PerfmonMonitor on the context
 *   enter-leave the callback enters and leaves an active compartment
 *   hang        a PerfmonHangMonitor started on that monitor
 *   automatic   automatic groups on
 *   tracing     the task tracer's flight recorder on (automatic tasks)
 *
 * and, beside the layers, "monitor+hang": a PerfmonMonitor and a
 * PerfmonHangMonitor, no enter/leave, the hang monitor's total against
 * plain (and against "thread", with as many threads).
 *
 *  1. with valgrind on PATH: instructions per dispatch counted by
 *     valgrind --tool=callgrind (it counts instructions, not what a
 *     locked or fenced one costs), and the difference to plain. Without
 *     valgrind this part says so and is skipped. Deterministic but for
 *     one thing: an iteration of 25 us or more ends with a reading of the
 *     thread's CPU clock (a system call and ~100 instructions), and under
 *     callgrind, 50 times slower, an empty iteration lasts about that
 *     long, more on a loaded machine. So each mode runs twice under
 *     callgrind: as is ("raw"), and with the monitor's time thresholds
 *     multiplied by CALLGRIND_DILATION (_perfmon_monitor_dilate_time()),
 *     so that it reads about as often as natively and takes the native
 *     paths: that figure is the one the goal is about. The monitor's
 *     readings per 1000 dispatches are printed beside them, under
 *     callgrind and natively (where they are a few, one per 250 µs);
 *  2. CPU time (process CPU clock, every thread) of 1,000,000 dispatches
 *     per mode, modes interleaved in each round and rotated, medians of
 *     the per-round ratios to plain (and "hang" to "thread").
 *
 * Goals (issue 22): enter-leave <= plain + 150 instructions; hang
 * <= 1.05x CPU; tracing (automatic tasks) <= 1.15x.
 *
 *   bench-layers [--instructions-only | --cpu-only] [ROUNDS]
 *   bench-layers --child MODE N READS-FILE [DILATION]   (what callgrind runs)
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#ifdef HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench-common.h"
#include "bench-dispatch.h"
#include "perfmon.h"
#include "perfmon-monitor-private.h"

#define N_DISPATCHES 1000000
#define N_CALLGRIND  20000
#define DEFAULT_ROUNDS 9

typedef enum
{
  MODE_PLAIN,
  MODE_THREAD,
  MODE_MONITOR,
  MODE_ENTER_LEAVE,
  MODE_HANG,
  MODE_AUTOMATIC,
  MODE_TRACING,
  MODE_MONITOR_HANG,   /* not a layer: monitor + hang, no enter/leave */
  N_MODES
} Mode;

static const char * const mode_names[N_MODES] = {
  "plain", "thread", "monitor", "enter-leave", "hang", "automatic", "tracing",
  "monitor+hang",
};

static char *pings_dir;
/* What the callgrind child multiplies the monitor's time thresholds by
 * (1: not at all); see _perfmon_monitor_dilate_time(). */
static guint dilation = 1;
/* Valgrind runs this loop some 50 times slower than natively. */
#define CALLGRIND_DILATION 1000

typedef struct
{
  GMutex   mutex;
  GCond    cond;
  gboolean done;
} Parked;

static gpointer
parked_thread (gpointer data)
{
  Parked *parked = data;

  g_mutex_lock (&parked->mutex);
  while (!parked->done)
    g_cond_wait (&parked->cond, &parked->mutex);
  g_mutex_unlock (&parked->mutex);
  return NULL;
}

/* Everything @mode sets up, torn down by layers_free(). */
typedef struct
{
  PerfmonMonitor     *monitor;
  PerfmonGroup       *compartment;
  PerfmonHangMonitor *hang_monitor;
  GThread            *thread;
  Parked              parked;
  gboolean            tracing;
} Layers;

static void
layers_init (Layers *layers,
             Mode    mode)
{
  g_autoptr(GError) error = NULL;

  /* MODE_MONITOR_HANG is the one mode that is not the layers below it. */
  gboolean stacked = mode != MODE_MONITOR_HANG;

  memset (layers, 0, sizeof *layers);
  if (mode == MODE_THREAD)
    layers->thread = g_thread_new ("parked", parked_thread, &layers->parked);
  if (mode >= MODE_MONITOR)
    {
      layers->monitor = perfmon_monitor_new (g_main_context_default ());
      if (dilation > 1)
        _perfmon_monitor_dilate_time (layers->monitor, dilation);
    }
  if (mode >= MODE_ENTER_LEAVE && stacked)
    {
      layers->compartment = perfmon_monitor_create_compartment (layers->monitor, "idle", 1, "addon");
      perfmon_group_set_active (layers->compartment, TRUE);
    }
  if (mode >= MODE_HANG)
    {
      layers->hang_monitor = perfmon_hang_monitor_new (layers->monitor);
      g_object_set (layers->hang_monitor, "pings-dir", pings_dir, NULL);
      if (!perfmon_hang_monitor_start (layers->hang_monitor, &error))
        g_error ("could not start the hang monitor: %s", error->message);
    }
  if (mode >= MODE_AUTOMATIC && stacked)
    perfmon_monitor_set_automatic_groups (layers->monitor, TRUE);
  if (mode >= MODE_TRACING && stacked)
    {
      if (!perfmon_tracer_start_flight_recorder (10, &error))
        g_error ("could not start the flight recorder: %s", error->message);
      layers->tracing = TRUE;
    }
}

static void
layers_free (Layers *layers)
{
  g_autoptr(GError) error = NULL;

  if (layers->tracing && !perfmon_tracer_stop (&error))
    g_error ("could not stop the tracer: %s", error->message);
  if (layers->hang_monitor != NULL)
    perfmon_hang_monitor_stop (layers->hang_monitor);
  g_clear_object (&layers->hang_monitor);
  g_clear_object (&layers->compartment);
  g_clear_object (&layers->monitor);
  if (layers->thread != NULL)
    {
      g_mutex_lock (&layers->parked.mutex);
      layers->parked.done = TRUE;
      g_cond_signal (&layers->parked.cond);
      g_mutex_unlock (&layers->parked.mutex);
      g_thread_join (layers->thread);
    }
}

static double
cpu_seconds_for (Mode  mode,
                 guint n)
{
  Layers layers;
  BenchSeconds seconds;

  layers_init (&layers, mode);
  seconds = bench_seconds_for_idle_dispatches (n, layers.compartment);
  layers_free (&layers);
  return seconds.cpu;
}

/* The monitor's readings of the thread CPU clock per 1000 dispatches in
 * @n dispatches of @layers, or -1 without a monitor. */
static double
reads_per_1000 (Layers *layers,
                guint64 reads_before,
                guint   n)
{
  if (layers->monitor == NULL)
    return -1;
  return (double) (_perfmon_monitor_count_cpu_clock_reads (layers->monitor) - reads_before) * 1000.0 / n;
}

/* What callgrind runs: a warm-up, then @n dispatches collected. With
 * @reads_file, writes the monitor's readings per 1000 dispatches there. */
static int
child (const char *name,
       guint       n,
       const char *reads_file)
{
  g_autofree char *reads = NULL;
  guint64 reads_before = 0;
  Layers layers;
  Mode mode;

  for (mode = 0; mode < N_MODES; mode++)
    if (g_str_equal (name, mode_names[mode]))
      break;
  if (mode == N_MODES)
    g_error ("unknown mode %s", name);

  layers_init (&layers, mode);
  bench_seconds_for_idle_dispatches (1000, layers.compartment);
  if (layers.monitor != NULL)
    reads_before = _perfmon_monitor_count_cpu_clock_reads (layers.monitor);
  CALLGRIND_TOGGLE_COLLECT;
  bench_seconds_for_idle_dispatches (n, layers.compartment);
  CALLGRIND_TOGGLE_COLLECT;
  reads = g_strdup_printf ("%.1f", reads_per_1000 (&layers, reads_before, n));
  layers_free (&layers);
  if (reads_file != NULL && !g_file_set_contents (reads_file, reads, -1, NULL))
    return 1;
  return 0;
}

/* Whether @name (a callgrind function name, maybe with a suffix such as
 * ".constprop.0") is one of the poll wrapper's paths that read the thread
 * CPU clock. */
static gboolean
is_reading_path (const char *name)
{
  return name != NULL &&
         (g_str_has_prefix (name, "monitor_poll_read") || g_str_has_prefix (name, "monitor_poll_full"));
}

/* The instructions, inclusive, of the calls into the reading paths in
 * @contents, a callgrind output file (names compressed or not). */
static gint64
reading_path_instructions (const char *contents)
{
  g_autoptr(GHashTable) names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_auto(GStrv) lines = g_strsplit (contents, "\n", -1);
  const char *fn = NULL;
  const char *cfn = NULL;
  gint64 total = 0;

  for (guint i = 0; lines[i] != NULL; i++)
    {
      const char *line = lines[i];
      gboolean is_fn = g_str_has_prefix (line, "fn=");
      gboolean is_cfn = g_str_has_prefix (line, "cfn=");

      if (is_fn || is_cfn)
        {
          const char *spec = line + (is_fn ? 3 : 4);
          const char *name = spec;

          if (spec[0] == '(')
            {
              const char *close = strchr (spec, ')');
              g_autofree char *id = close != NULL ? g_strndup (spec, close - spec + 1) : NULL;

              if (id == NULL)
                continue;
              if (close[1] == ' ')
                g_hash_table_replace (names, g_strdup (id), g_strdup (close + 2));
              name = g_hash_table_lookup (names, id);
            }
          if (is_fn)
            fn = name;
          else
            cfn = name;
        }
      else if (g_str_has_prefix (line, "calls=") && lines[i + 1] != NULL)
        {
          g_auto(GStrv) cost = g_strsplit (lines[++i], " ", 3);

          if (is_reading_path (cfn) && !is_reading_path (fn) && cost[0] != NULL && cost[1] != NULL)
            total += g_ascii_strtoll (cost[1], NULL, 10);
        }
    }
  return total;
}

/* Instructions callgrind counted in @mode's collected loop, or -1; the
 * monitor's readings per 1000 dispatches in *@reads (-1: no monitor), and
 * the instructions of the paths that read in *@reading. */
static gint64
callgrind_instructions (const char *self,
                        const char *valgrind,
                        const char *dir,
                        Mode        mode,
                        guint       child_dilation,
                        double     *reads,
                        gint64     *reading)
{
  g_autofree char *out = g_strdup_printf ("%s/callgrind.%s.%u", dir, mode_names[mode], child_dilation);
  g_autofree char *out_arg = g_strdup_printf ("--callgrind-out-file=%s", out);
  g_autofree char *reads_file = g_strdup_printf ("%s/reads.%s", dir, mode_names[mode]);
  g_autofree char *reads_text = NULL;
  g_autofree char *n = g_strdup_printf ("%u", N_CALLGRIND);
  g_autofree char *dilation_arg = g_strdup_printf ("%u", child_dilation);
  const char *argv[] = { valgrind, "--tool=callgrind", "--collect-atstart=no", out_arg,
                         self, "--child", mode_names[mode], n, reads_file, dilation_arg, NULL };
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  const char *totals;
  int status;

  if (!g_spawn_sync (NULL, (char **) argv, NULL,
                     G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, NULL, NULL, &status, &error) ||
      !g_spawn_check_wait_status (status, &error) ||
      !g_file_get_contents (out, &contents, NULL, &error))
    {
      g_printerr ("callgrind %s: %s\n", mode_names[mode], error->message);
      return -1;
    }
  *reads = g_file_get_contents (reads_file, &reads_text, NULL, NULL)
           ? g_ascii_strtod (reads_text, NULL) : -1;
  *reading = reading_path_instructions (contents);
  g_unlink (reads_file);
  if (g_getenv ("BENCH_KEEP_CALLGRIND") == NULL)
    g_unlink (out);
  else
    g_print ("   (kept %s)\n", out);
  totals = strstr (contents, "\ntotals: ");
  if (totals == NULL)
    totals = strstr (contents, "\nsummary: ");
  if (totals == NULL)
    return -1;
  return g_ascii_strtoll (strchr (totals, ':') + 1, NULL, 10);
}

static void
bench_instructions (const char *self)
{
  g_autofree char *valgrind = g_find_program_in_path ("valgrind");
  g_autofree char *dir = NULL;
  double per[N_MODES];
  double reads[N_MODES];
  double native_reads[N_MODES];
  double reading[N_MODES];
  double raw_per[N_MODES];
  double raw_reads[N_MODES];

#ifndef HAVE_CALLGRIND_H
  g_print ("1. (built without valgrind/callgrind.h: no instruction counts)\n");
  return;
#endif
  if (valgrind == NULL)
    {
      g_print ("1. (valgrind is not installed: no instruction counts)\n");
      return;
    }
  dir = g_dir_make_tmp ("perfmon-bench-layers-XXXXXX", NULL);
  g_assert (dir != NULL);
  for (Mode mode = 0; mode < N_MODES; mode++)
    {
      Layers layers;
      guint64 reads_before = 0;
      gint64 reading_instructions = 0;

      raw_per[mode] = (double) callgrind_instructions (self, valgrind, dir, mode, 1, &raw_reads[mode],
                                                       &reading_instructions) / N_CALLGRIND;
      per[mode] = (double) callgrind_instructions (self, valgrind, dir, mode, CALLGRIND_DILATION,
                                                   &reads[mode], &reading_instructions) / N_CALLGRIND;
      reading[mode] = (double) reading_instructions / N_CALLGRIND;
      layers_init (&layers, mode);
      if (layers.monitor != NULL)
        reads_before = _perfmon_monitor_count_cpu_clock_reads (layers.monitor);
      bench_seconds_for_idle_dispatches (N_DISPATCHES / 10, layers.compartment);
      native_reads[mode] = reads_per_1000 (&layers, reads_before, N_DISPATCHES / 10);
      layers_free (&layers);
    }
  g_rmdir (dir);

  g_print ("1. instructions per empty dispatch (valgrind --tool=callgrind, %d dispatches),\n"
           "   the monitor's time thresholds x%d under callgrind so that it reads about\n"
           "   as often as natively; the monitor's readings of the thread CPU clock per\n"
           "   1000 dispatches under callgrind and natively, and the instructions per\n"
           "   dispatch of the iterations that read (the poll wrapper's reading path,\n"
           "   inclusive); last, the raw figure (thresholds as natively, so readings\n"
           "   that only valgrind's slowdown causes) and its readings:\n",
           N_CALLGRIND, CALLGRIND_DILATION);
  for (Mode mode = 0; mode < N_MODES; mode++)
    {
      /* The line above, or what the mode adds its layer to. */
      Mode below = mode == MODE_MONITOR_HANG ? MODE_MONITOR : mode == 0 ? 0 : mode - 1;

      if (mode == MODE_MONITOR_HANG)
        g_print ("   the hang monitor alone, against plain and against monitor:\n");
      g_print ("   %-12s %7.1f  (%+6.1f against plain, %+6.1f against %s)",
               mode_names[mode], per[mode], per[mode] - per[MODE_PLAIN],
               per[mode] - per[below], mode == MODE_MONITOR_HANG ? "monitor" : "the line above");
      if (reads[mode] >= 0)
        g_print ("  reads %5.1f (natively %3.1f), in reading %4.1f;  raw %+6.1f, reads %5.1f",
                 reads[mode], native_reads[mode], reading[mode],
                 raw_per[mode] - raw_per[MODE_PLAIN], raw_reads[mode]);
      g_print ("\n");
    }
  /* The monitor's polls that cannot sleep go to the kernel without
   * glibc's poll() (x86-64, no sanitizer), so the watchdog, a second
   * thread, no longer costs its multi-threaded path there: "thread" is
   * what it costs a program without a monitor. */
  g_print ("   the hang monitor's work per dispatch on the watched thread, its watchdog\n"
           "   thread included: %+.1f (monitor+hang - monitor), %+.1f (hang - enter-leave);\n"
           "   a second thread costs glibc's poll() %+.1f without a monitor (thread - plain)\n",
           per[MODE_MONITOR_HANG] - per[MODE_MONITOR], per[MODE_HANG] - per[MODE_ENTER_LEAVE],
           per[MODE_THREAD] - per[MODE_PLAIN]);
  g_print ("   goal: enter-leave <= plain + 150\n");
}

static void
bench_cpu (guint rounds)
{
  g_autofree double *times = g_new0 (double, (gsize) N_MODES * rounds);
  g_autofree double *ratios = g_new0 (double, (gsize) N_MODES * rounds);
  g_autofree double *hang_to_thread = g_new0 (double, rounds);
  g_autofree double *monitor_hang_to_thread = g_new0 (double, rounds);
  g_autofree double *tracing_to_automatic = g_new0 (double, rounds);

  /* Warm-up. */
  for (Mode mode = 0; mode < N_MODES; mode++)
    cpu_seconds_for (mode, N_DISPATCHES / 10);

  for (guint r = 0; r < rounds; r++)
    {
      for (guint i = 0; i < N_MODES; i++)
        {
          Mode mode = (Mode) ((r + i) % N_MODES);

          times[mode * rounds + r] = cpu_seconds_for (mode, N_DISPATCHES);
        }
      for (Mode mode = 0; mode < N_MODES; mode++)
        ratios[mode * rounds + r] = times[mode * rounds + r] / times[MODE_PLAIN * rounds + r];
      hang_to_thread[r] = times[MODE_HANG * rounds + r] / times[MODE_THREAD * rounds + r];
      monitor_hang_to_thread[r] = times[MODE_MONITOR_HANG * rounds + r] / times[MODE_THREAD * rounds + r];
      tracing_to_automatic[r] = times[MODE_TRACING * rounds + r] / times[MODE_AUTOMATIC * rounds + r];
    }

  g_print ("2. %d empty dispatches, process CPU time, %u interleaved rounds, medians:\n",
           N_DISPATCHES, rounds);
  for (Mode mode = 0; mode < N_MODES; mode++)
    {
      double median_ratio = bench_median (ratios + mode * rounds, rounds);
      double median_time = bench_median (times + mode * rounds, rounds);

      g_print ("   %-12s %.3f s, %4.0f ns per dispatch, %.3fx plain\n",
               mode_names[mode], median_time, median_time * 1e9 / N_DISPATCHES, median_ratio);
    }
  g_print ("   hang against thread (same number of threads): %.3fx\n",
           bench_median (hang_to_thread, rounds));
  g_print ("   monitor+hang against plain: %.3fx, against thread (same number of threads): %.3fx\n",
           bench_median (ratios + MODE_MONITOR_HANG * rounds, rounds),
           bench_median (monitor_hang_to_thread, rounds));
  /* "tracing" against plain counts every layer below it (monitor, hang
   * monitor, automatic groups); this line is the tracer alone on top of
   * them, what bench-auto-tasks measures without the monitor underneath. */
  g_print ("   tracing against automatic (the tracer alone, monitor stack underneath): %.3fx\n",
           bench_median (tracing_to_automatic, rounds));
  g_print ("   goals: hang <= 1.05x, tracing <= 1.15x\n");
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *uptime = NULL;
  g_autofree char *dir = NULL;
  gboolean cpu = TRUE, instructions = TRUE;
  guint rounds = DEFAULT_ROUNDS;
  int arg = 1;

  dir = g_dir_make_tmp ("bench-layers-XXXXXX", NULL);
  g_assert (dir != NULL);
  pings_dir = g_build_filename (dir, "pings", NULL);

  if ((argc == 4 || argc == 5 || argc == 6) && g_str_equal (argv[1], "--child"))
    {
      int status;

      if (argc == 6)
        dilation = MAX (1, (guint) g_ascii_strtoull (argv[5], NULL, 10));
      status = child (argv[2], (guint) g_ascii_strtoull (argv[3], NULL, 10), argc >= 5 ? argv[4] : NULL);

      g_rmdir (pings_dir);
      g_rmdir (dir);
      return status;
    }
  if (arg < argc && g_str_equal (argv[arg], "--instructions-only"))
    cpu = FALSE, arg++;
  else if (arg < argc && g_str_equal (argv[arg], "--cpu-only"))
    instructions = FALSE, arg++;
  if (arg < argc)
    rounds = MAX (1, (guint) g_ascii_strtoull (argv[arg], NULL, 10));

  if (g_spawn_command_line_sync ("uptime", &uptime, NULL, NULL, NULL))
    g_print ("uptime: %s", uptime);
  if (instructions)
    bench_instructions (argv[0]);
  if (cpu)
    bench_cpu (rounds);
  if (g_spawn_command_line_sync ("uptime", &uptime, NULL, NULL, NULL))
    g_print ("uptime: %s", uptime);

  g_rmdir (pings_dir);
  g_rmdir (dir);
  g_free (pings_dir);
  return 0;
}
