/* bench-auto-tasks.c: what the tracer's side of automatic instrumentation
 * costs per dispatch
 *
 * Prints, never asserts:
 *  1. CPU time of 1,000,000 empty idle dispatches: GLib's plain idle
 *     against the same idle dispatched through a hook that calls the
 *     dispatch observer around it, as core/'s per-dispatch hook does, with
 *     the tracer's observer installed (flight recorder on: each dispatch is
 *     an automatic task: AUTO + END recorded, the name once in a while); paired,
 *     interleaved rounds, medians, the ratio (issue target <= 1.15x);
 *  2. under valgrind --tool=callgrind (when valgrind is installed),
 *     instructions per dispatch, deterministic on a loaded machine:
 *     - the plain idle, the hook with no observer, the hook with the
 *       tracer's observer;
 *     - g_idle_add() against perfmon_idle_add() with tracing off, one
 *       source added and dispatched per task (what the wrapper adds when
 *       nobody traces), and with the flight recorder on (a traced
 *       dispatch: DISPATCH + BEGIN + END recorded).
 *
 * "bench-auto-tasks instructions MODE N" runs one measured loop with
 * callgrind's collection toggled around it; the parent reads the totals.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "perfmon.h"
#include "bench-dispatch.h"
#include "perfmon-dispatch-observer-private.h"

#define DISPATCHES 1000000
#define ROUNDS     11
#define BATCH      1000
#define INSTRUCTION_DISPATCHES 20000

/* The hook as core/ applies it: a copy of the source's funcs whose dispatch
 * brackets the original with the observer, read with one atomic load. */
static GSourceFuncs hooked_idle_funcs;

static gboolean
hooked_dispatch (GSource     *source,
                 GSourceFunc  callback,
                 gpointer     user_data)
{
  const PerfmonDispatchObserver *observer = _perfmon_dispatch_get_observer ();
  gpointer token;
  gboolean again;

  if (observer == NULL)
    return g_idle_funcs.dispatch (source, callback, user_data);
  token = observer->dispatch_begin (source, "bench idle");
  again = g_idle_funcs.dispatch (source, callback, user_data);
  observer->dispatch_end (source, token);
  return again;
}

/* @n dispatches of one idle source, plain or through the hook. */
static void
run_idle (guint    n,
          gboolean hooked)
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  BenchIdleRun run = { loop, NULL, n };
  GSource *source = g_idle_source_new ();

  if (hooked)
    source->source_funcs = &hooked_idle_funcs;
  g_source_set_callback (source, bench_idle_plain, &run, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
  g_main_loop_run (loop);
}

static gboolean
count_step (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_REMOVE;
}

/* @n sources added and dispatched, BATCH per iteration. */
static void
run_adds (guint    n,
          gboolean wrapper)
{
  for (guint done_total = 0; done_total < n; done_total += BATCH)
    {
      guint done = 0;

      for (guint i = 0; i < BATCH; i++)
        {
          if (wrapper)
            perfmon_idle_add (count_step, &done);
          else
            g_idle_add (count_step, &done);
        }
      while (done < BATCH)
        g_main_context_iteration (NULL, FALSE);
    }
}

static double
cpu_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
start_tracer (void)
{
  g_autoptr(GError) error = NULL;

  if (!perfmon_tracer_start_flight_recorder (10, &error))
    g_error ("%s", error->message);
}

static void
stop_tracer (void)
{
  g_autoptr(GError) error = NULL;

  if (!perfmon_tracer_stop (&error))
    g_error ("%s", error->message);
}

/* One measured loop, for callgrind. */
static int
instructions (const char *mode,
              guint       n)
{
  gboolean tracer = g_str_equal (mode, "observer") || g_str_equal (mode, "wrapper-traced");

  /* Everything allocated once happens before the measured loop. */
  if (tracer)
    start_tracer ();
  if (g_str_equal (mode, "plain") || g_str_equal (mode, "hook") || tracer)
    run_idle (100, !g_str_equal (mode, "plain"));
  else
    run_adds (BATCH, g_str_has_prefix (mode, "wrapper-"));

  CALLGRIND_TOGGLE_COLLECT;
  if (g_str_equal (mode, "plain"))
    run_idle (n, FALSE);
  else if (g_str_equal (mode, "hook") || g_str_equal (mode, "observer"))
    run_idle (n, TRUE);
  else if (g_str_equal (mode, "add-plain"))
    run_adds (n, FALSE);
  else if (g_str_has_prefix (mode, "wrapper-"))
    run_adds (n, TRUE);
  else
    g_error ("unknown mode %s", mode);
  CALLGRIND_TOGGLE_COLLECT;

  if (tracer)
    stop_tracer ();
  return 0;
}

/* Instructions callgrind counted in the measured loop of @mode, or -1. */
static gint64
count_instructions (const char *self,
                    const char *valgrind,
                    const char *dir,
                    const char *mode)
{
  g_autofree char *out = g_strdup_printf ("%s/callgrind.%s", dir, mode);
  g_autofree char *out_arg = g_strdup_printf ("--callgrind-out-file=%s", out);
  g_autofree char *n = g_strdup_printf ("%u", INSTRUCTION_DISPATCHES);
  const char *argv[] = { valgrind, "--tool=callgrind", "--collect-atstart=no", out_arg,
                         self, "instructions", mode, n, NULL };
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  int status;
  const char *totals;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, NULL, NULL, &status, &error) ||
      !g_spawn_check_wait_status (status, &error) ||
      !g_file_get_contents (out, &contents, NULL, &error))
    {
      g_printerr ("callgrind %s: %s\n", mode, error->message);
      return -1;
    }
  g_unlink (out);
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
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = NULL;
  static const char *modes[] = { "plain", "hook", "observer", "add-plain", "wrapper-off", "wrapper-traced" };
  double per[G_N_ELEMENTS (modes)];

#ifndef HAVE_CALLGRIND_H
  g_print ("2. (built without valgrind/callgrind.h: no instruction counts)\n");
  return;
#endif
  if (valgrind == NULL)
    {
      g_print ("2. (valgrind is not installed: no instruction counts)\n");
      return;
    }
  dir = g_dir_make_tmp ("perfmon-bench-auto-XXXXXX", &error);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
    per[i] = (double) count_instructions (self, valgrind, dir, modes[i]) / INSTRUCTION_DISPATCHES;
  g_rmdir (dir);

  g_print ("2. instructions per dispatch (valgrind --tool=callgrind, %d dispatches):\n"
           "   plain idle %.1f; through the hook, no observer %.1f (+%.1f); "
           "with the tracer's observer %.1f (+%.1f)\n"
           "   g_idle_add %.1f; perfmon_idle_add with tracing off %.1f (+%.1f), "
           "traced (flight recorder) %.1f (+%.1f)\n",
           INSTRUCTION_DISPATCHES, per[0], per[1], per[1] - per[0], per[2], per[2] - per[0],
           per[3], per[4], per[4] - per[3], per[5], per[5] - per[3]);
}

static void
bench_cpu (void)
{
  double plain[ROUNDS], traced[ROUNDS], ratio[ROUNDS];

  for (guint round = 0; round < ROUNDS; round++)
    {
      gboolean plain_first = round % 2 == 0;
      double start;

      if (plain_first)
        {
          start = cpu_seconds ();
          run_idle (DISPATCHES, FALSE);
          plain[round] = cpu_seconds () - start;
        }
      start_tracer ();
      start = cpu_seconds ();
      run_idle (DISPATCHES, TRUE);
      traced[round] = cpu_seconds () - start;
      stop_tracer ();
      if (!plain_first)
        {
          start = cpu_seconds ();
          run_idle (DISPATCHES, FALSE);
          plain[round] = cpu_seconds () - start;
        }
      ratio[round] = traced[round] / plain[round];
    }
  g_print ("1. %d empty idle dispatches, CPU time [median of %d paired rounds]:\n"
           "   plain %.3f s; automatic tasks (hook + tracer's observer, flight recorder) %.3f s\n"
           "   ratio %.3fx (median of per-round ratios), issue target <= 1.15x\n",
           DISPATCHES, ROUNDS, bench_median (plain, ROUNDS), bench_median (traced, ROUNDS),
           bench_median (ratio, ROUNDS));
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *uptime = NULL;

  hooked_idle_funcs = g_idle_funcs;
  hooked_idle_funcs.dispatch = hooked_dispatch;

  if (argc == 4 && g_str_equal (argv[1], "instructions"))
    return instructions (argv[2], (guint) g_ascii_strtoull (argv[3], NULL, 10));

  if (g_spawn_command_line_sync ("uptime", &uptime, NULL, NULL, NULL))
    g_print ("uptime: %s", uptime);
  if (argc < 2 || !g_str_equal (argv[1], "--instructions-only"))
    bench_cpu ();
  bench_instructions (argv[0]);
  return 0;
}
