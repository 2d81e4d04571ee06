/* bench-automatic.c: what automatic groups cost an empty dispatch
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 1,000,000 empty idle dispatches on a context of their own, in four
 * modes: "plain" (no monitor), "monitor" (a monitor on the context,
 * automatic groups off), "automatic" (automatic groups on) and "traced"
 * (automatic groups on and the tracer's flight recorder running: every
 * dispatch is also an automatic task, through the real hook). Prints the
 * median process CPU time of each (the tracer's threads included) over
 * paired, interleaved rounds, and the ratios (issue 12's targets: automatic
 * <= 1.10x, traced <= 1.15x the plain loop); then, with valgrind on PATH,
 * the instructions each mode adds per
 * dispatch, counted by callgrind (deterministic, unlike times on a shared
 * machine): the difference between runs of N and 2N dispatches, so that
 * start-up costs cancel. Asserts nothing.
 *
 *   bench-automatic [ROUNDS]
 *   bench-automatic --child MODE N     (what callgrind runs)
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib/gstdio.h>

#include "bench-common.h"
#include "perfmon.h"

#define N_DISPATCHES 1000000
#define N_CALLGRIND 100000

typedef enum { MODE_PLAIN, MODE_MONITOR, MODE_AUTOMATIC, MODE_TRACED, N_MODES } Mode;
static const char * const mode_names[N_MODES] = { "plain", "monitor", "automatic", "traced" };

typedef struct
{
  GMainLoop *loop;
  guint      remaining;
} Run;

static gboolean
empty_idle (gpointer data)
{
  Run *run = data;

  if (--run->remaining > 0)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

static double
process_cpu_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Process CPU seconds for @n empty idle dispatches in @mode. */
static double
dispatch (Mode  mode,
          guint n)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GMainLoop) loop = g_main_loop_new (context, FALSE);
  g_autoptr(PerfmonMonitor) monitor = NULL;
  g_autoptr(GSource) source = g_idle_source_new ();
  Run run = { loop, n };
  g_autoptr(GError) error = NULL;
  double start;

  if (mode != MODE_PLAIN)
    monitor = perfmon_monitor_new (context);
  if (mode == MODE_AUTOMATIC || mode == MODE_TRACED)
    perfmon_monitor_set_automatic_groups (monitor, TRUE);
  if (mode == MODE_TRACED && !perfmon_tracer_start_flight_recorder (10, &error))
    g_error ("%s", error->message);

  g_main_context_push_thread_default (context);
  g_source_set_callback (source, empty_idle, &run, NULL);
  g_source_attach (source, context);
  start = process_cpu_seconds ();
  g_main_loop_run (loop);
  start = process_cpu_seconds () - start;
  g_main_context_pop_thread_default (context);

  if (mode == MODE_TRACED && !perfmon_tracer_stop (&error))
    g_error ("%s", error->message);
  return start;
}

static guint64
callgrind_instructions (const char *self,
                        Mode        mode,
                        guint       n,
                        const char *dir)
{
  g_autofree char *out = g_strdup_printf ("%s/callgrind.%s.%u", dir, mode_names[mode], n);
  g_autofree char *out_arg = g_strdup_printf ("--callgrind-out-file=%s", out);
  g_autofree char *n_text = g_strdup_printf ("%u", n);
  const char *argv[] = { "valgrind", "--tool=callgrind", out_arg, self, "--child", mode_names[mode],
                         n_text, NULL };
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  int status;
  const char *totals;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL |
                     G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, &error) ||
      !g_spawn_check_wait_status (status, &error) ||
      !g_file_get_contents (out, &text, NULL, &error))
    {
      g_printerr ("callgrind run failed: %s\n", error->message);
      return 0;
    }
  totals = strstr (text, "\ntotals: ");
  if (totals == NULL)
    totals = strstr (text, "\nsummary: ");
  return totals != NULL ? g_ascii_strtoull (strchr (totals, ':') + 1, NULL, 10) : 0;
}

int
main (int   argc,
      char *argv[])
{
  guint rounds = argc > 1 && strcmp (argv[1], "--child") != 0 ? (guint) atoi (argv[1]) : 7;
  double times[N_MODES][64];
  double medians[N_MODES];
  g_autofree char *load = NULL;
  g_autofree char *valgrind = NULL;

  if (argc == 4 && strcmp (argv[1], "--child") == 0)
    {
      for (Mode mode = 0; mode < N_MODES; mode++)
        if (strcmp (argv[2], mode_names[mode]) == 0)
          dispatch (mode, (guint) atoi (argv[3]));
      return 0;
    }

  rounds = CLAMP (rounds, 1, 64);
  g_file_get_contents ("/proc/loadavg", &load, NULL, NULL);
  printf ("bench-automatic: %u empty idle dispatches, %u paired rounds, load %s", N_DISPATCHES, rounds,
          load != NULL ? load : "?\n");

  /* Warm up, then interleave the modes, rotating which goes first. */
  dispatch (MODE_AUTOMATIC, N_DISPATCHES / 10);
  for (guint r = 0; r < rounds; r++)
    for (guint i = 0; i < N_MODES; i++)
      {
        Mode mode = (Mode) ((r + i) % N_MODES);

        times[mode][r] = dispatch (mode, N_DISPATCHES);
      }

  for (Mode mode = 0; mode < N_MODES; mode++)
    {
      medians[mode] = bench_median (times[mode], rounds);
      printf ("  %-9s median %.3f s CPU, %.0f ns per dispatch\n", mode_names[mode], medians[mode],
              medians[mode] * 1e9 / N_DISPATCHES);
    }
  printf ("  automatic / plain:   %.3fx (target <= 1.10x)\n", medians[MODE_AUTOMATIC] / medians[MODE_PLAIN]);
  printf ("  automatic / monitor: %.3fx\n", medians[MODE_AUTOMATIC] / medians[MODE_MONITOR]);
  printf ("  traced / plain:      %.3fx (target <= 1.15x)\n", medians[MODE_TRACED] / medians[MODE_PLAIN]);
  printf ("  traced / automatic:  %.3fx\n", medians[MODE_TRACED] / medians[MODE_AUTOMATIC]);

  valgrind = g_find_program_in_path ("valgrind");
  if (valgrind == NULL)
    {
      printf ("  (valgrind not found: no instruction counts)\n");
      return 0;
    }
  {
    g_autofree char *dir = g_dir_make_tmp ("bench-automatic-XXXXXX", NULL);
    double per_dispatch[N_MODES];

    for (Mode mode = 0; mode < N_MODES; mode++)
      {
        guint64 once = callgrind_instructions (argv[0], mode, N_CALLGRIND, dir);
        guint64 twice = callgrind_instructions (argv[0], mode, 2 * N_CALLGRIND, dir);

        per_dispatch[mode] = twice > once ? (double) (twice - once) / N_CALLGRIND : 0.0;
        printf ("  callgrind %-9s %.1f instructions per dispatch\n", mode_names[mode], per_dispatch[mode]);
      }
    printf ("  added by automatic groups: %+.1f instructions per dispatch over the plain loop "
            "(target <= +300), %+.1f over the monitor alone\n",
            per_dispatch[MODE_AUTOMATIC] - per_dispatch[MODE_PLAIN],
            per_dispatch[MODE_AUTOMATIC] - per_dispatch[MODE_MONITOR]);
    printf ("  added by automatic groups and tasks (tracer on): %+.1f instructions per dispatch over the "
            "plain loop (aim <= +450), %+.1f over automatic groups alone\n",
            per_dispatch[MODE_TRACED] - per_dispatch[MODE_PLAIN],
            per_dispatch[MODE_TRACED] - per_dispatch[MODE_AUTOMATIC]);
    for (Mode mode = 0; mode < N_MODES; mode++)
      for (guint k = 1; k <= 2; k++)
        {
          g_autofree char *out = g_strdup_printf ("%s/callgrind.%s.%u", dir, mode_names[mode], k * N_CALLGRIND);
          g_unlink (out);
        }
    g_rmdir (dir);
  }
  return 0;
}
