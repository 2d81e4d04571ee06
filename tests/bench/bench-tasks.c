/* bench-tasks.c: the figures of the task tracer
 *
 * Prints, never asserts timings:
 *  1. a chain of idle dispatches (each callback adds the next one): GLib's
 *     g_idle_add() against perfmon_idle_add() with the flight recorder on
 *     (dispatch + begin + end recorded) and with tracing off, interleaved
 *     in the same run; the ns a traced dispatch adds (issue target: 150);
 *  2. the cost of one recorded event, side by side with libsysprof-capture's
 *     writer (sysprof_capture_writer_add_mark() into a file), when built
 *     with it: a label (flight recorder; file session including writing the
 *     file at stop), a BEGIN+END pair, and a sysprof mark (including its
 *     flushes to the file).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <glib/gstdio.h>
#include <unistd.h>

#include "perfmon.h"
#include "bench-common.h"
#include "perfmon-tracer-private.h"

#ifdef HAVE_SYSPROF_CAPTURE
#include <sysprof-capture.h>
#endif

#define CHAIN   20000
#define ROUNDS  31
#define EVENTS  200000
#define BATCH   1000
#define BATCHES 20

typedef struct
{
  GMainLoop *loop;
  guint      remaining;
} ChainRun;

static gboolean plain_step  (gpointer data);
static gboolean traced_step (gpointer data);

static gboolean
plain_step (gpointer data)
{
  ChainRun *run = data;

  if (--run->remaining > 0)
    g_idle_add (plain_step, run);
  else
    g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
traced_step (gpointer data)
{
  ChainRun *run = data;

  if (--run->remaining > 0)
    perfmon_idle_add (traced_step, run);
  else
    g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
count_plain (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_REMOVE;
}

static gboolean
count_traced (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_REMOVE;
}

/* ns per idle added and dispatched, BATCH idles at a time: one main loop
 * iteration (one poll) dispatches a whole batch, so the figure is the
 * sources' own cost, not the poll's. */
static double
ns_per_batched_dispatch (gboolean traced)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint b = 0; b < BATCHES; b++)
    {
      guint done = 0;

      for (guint i = 0; i < BATCH; i++)
        {
          if (traced)
            perfmon_idle_add (count_traced, &done);
          else
            g_idle_add (count_plain, &done);
        }
      while (done < BATCH)
        g_main_context_iteration (NULL, FALSE);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / (BATCHES * BATCH);
}

static double
ns_per_dispatch (GMainLoop *loop,
                 gboolean   traced)
{
  ChainRun run = { loop, CHAIN };
  gint64 start = _perfmon_clock_monotonic_ns ();

  if (traced)
    perfmon_idle_add (traced_step, &run);
  else
    g_idle_add (plain_step, &run);
  g_main_loop_run (loop);
  return (double) (_perfmon_clock_monotonic_ns () - start) / CHAIN;
}

static void
bench_dispatch (void)
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(GError) error = NULL;
  double plain[ROUNDS], traced[ROUNDS], off[ROUNDS], added[ROUNDS], added_off[ROUNDS];
  double median_plain, median_traced, median_off;
  double batch_plain[ROUNDS], batch_traced[ROUNDS], batch_off[ROUNDS];
  double batch_added[ROUNDS], batch_added_off[ROUNDS];

  /* The order alternates, so that neither side always runs first. */
  for (guint round = 0; round < ROUNDS; round++)
    {
      gboolean plain_first = round % 2 == 0;

      if (plain_first)
        plain[round] = ns_per_dispatch (loop, FALSE);
      off[round] = ns_per_dispatch (loop, TRUE);
      if (!perfmon_tracer_start_flight_recorder (10, &error))
        g_error ("%s", error->message);
      traced[round] = ns_per_dispatch (loop, TRUE);
      if (!perfmon_tracer_stop (&error))
        g_error ("%s", error->message);
      if (!plain_first)
        plain[round] = ns_per_dispatch (loop, FALSE);
      added[round] = traced[round] - plain[round];
      added_off[round] = off[round] - plain[round];

      if (plain_first)
        batch_plain[round] = ns_per_batched_dispatch (FALSE);
      batch_off[round] = ns_per_batched_dispatch (TRUE);
      if (!perfmon_tracer_start_flight_recorder (10, &error))
        g_error ("%s", error->message);
      batch_traced[round] = ns_per_batched_dispatch (TRUE);
      if (!perfmon_tracer_stop (&error))
        g_error ("%s", error->message);
      if (!plain_first)
        batch_plain[round] = ns_per_batched_dispatch (FALSE);
      batch_added[round] = batch_traced[round] - batch_plain[round];
      batch_added_off[round] = batch_off[round] - batch_plain[round];
    }
  median_plain = bench_median (plain, ROUNDS);
  median_traced = bench_median (traced, ROUNDS);
  median_off = bench_median (off, ROUNDS);
  g_print ("1a. idle dispatch, batches of %d idles per main loop iteration [median of %d x %d]:\n"
           "    g_idle_add %.1f ns; perfmon_idle_add traced %.1f ns, tracing off %.1f ns\n"
           "    added per traced dispatch (dispatch + begin + end): %.1f ns "
           "(median of per-round differences), target <= 150 ns; with tracing off: %.1f ns\n",
           BATCH, ROUNDS, BATCHES * BATCH,
           bench_median (batch_plain, ROUNDS), bench_median (batch_traced, ROUNDS), bench_median (batch_off, ROUNDS),
           bench_median (batch_added, ROUNDS), bench_median (batch_added_off, ROUNDS));
  g_print ("1b. idle chain, one dispatch (and one poll) per iteration [median of %d x %d]:\n"
           "    g_idle_add %.1f ns; perfmon_idle_add traced %.1f ns, tracing off %.1f ns\n"
           "    added per traced dispatch: %.1f ns (median of per-round differences), with tracing off: %.1f ns\n",
           ROUNDS, CHAIN, median_plain, median_traced, median_off,
           bench_median (added, ROUNDS), bench_median (added_off, ROUNDS));
}

static double
ns_per_label (void)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < EVENTS; i++)
    perfmon_task_add_label ("mark %u", i);
  return (double) (_perfmon_clock_monotonic_ns () - start) / EVENTS;
}

static double
ns_per_begin_end (void)
{
  PerfmonTaskIds ids = { 1, 0, 0 };
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < EVENTS; i++)
    {
      PerfmonTaskContext saved;

      _perfmon_task_enter (&ids, &saved);
      _perfmon_task_leave (&saved);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / EVENTS;
}

/* Labels into a file session (ns per label in @record_ns), and the stop
 * that converts, sorts and writes them, synced (ns per label returned). */
static double
ns_per_label_to_file (const char *path,
                      double     *record_ns)
{
  g_autoptr(GError) error = NULL;
  gint64 start, stop;

  if (!perfmon_tracer_start (path, &error))
    g_error ("%s", error->message);
  start = _perfmon_clock_monotonic_ns ();
  for (guint i = 0; i < EVENTS; i++)
    perfmon_task_add_label ("mark %u", i);
  stop = _perfmon_clock_monotonic_ns ();
  if (!perfmon_tracer_stop (&error))
    g_error ("%s", error->message);
  *record_ns = (double) (stop - start) / EVENTS;
  return (double) (_perfmon_clock_monotonic_ns () - stop) / EVENTS;
}

#ifdef HAVE_SYSPROF_CAPTURE
static double
ns_per_sysprof_mark (const char *path)
{
  SysprofCaptureWriter *writer = sysprof_capture_writer_new (path, 0);
  int pid = getpid ();
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < EVENTS; i++)
    {
      char message[32];

      g_snprintf (message, sizeof message, "mark %u", i);
      sysprof_capture_writer_add_mark (writer, SYSPROF_CAPTURE_CURRENT_TIME, -1, pid, 0, "bench", "mark", message);
    }
  sysprof_capture_writer_flush (writer);
  sysprof_capture_writer_unref (writer);
  return (double) (_perfmon_clock_monotonic_ns () - start) / EVENTS;
}
#endif

static void
bench_events (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("perfmon-bench-tasks-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "tasks.log", NULL);
  g_autofree char *sysprof_path = g_build_filename (dir, "marks.syscap", NULL);
  double flight[ROUNDS], pair[ROUNDS], to_file[ROUNDS], file_stop[ROUNDS];
#ifdef HAVE_SYSPROF_CAPTURE
  double sysprof[ROUNDS];
#endif

  /* Every label of a round fits: the file session drops nothing. */
  if (!perfmon_tracer_set_buffer_size (32 * 1024 * 1024, &error))
    g_error ("%s", error->message);
  for (guint round = 0; round < ROUNDS; round++)
    {
      if (!perfmon_tracer_start_flight_recorder (10, &error))
        g_error ("%s", error->message);
      flight[round] = ns_per_label ();
      pair[round] = ns_per_begin_end ();
      if (!perfmon_tracer_stop (&error))
        g_error ("%s", error->message);
      file_stop[round] = ns_per_label_to_file (path, &to_file[round]);
#ifdef HAVE_SYSPROF_CAPTURE
      sysprof[round] = ns_per_sysprof_mark (sysprof_path);
#endif
    }
  g_print ("2. per recorded event [median of %d x %d]:\n", ROUNDS, EVENTS);
  g_print ("   perfmon label \"mark %%u\", flight recorder:             %6.1f ns\n", bench_median (flight, ROUNDS));
  g_print ("   perfmon label \"mark %%u\", file session:                %6.1f ns\n", bench_median (to_file, ROUNDS));
  g_print ("     + its share of the stop (convert, sort, write, fsync): %6.1f ns\n", bench_median (file_stop, ROUNDS));
  g_print ("   perfmon BEGIN+END pair (two records), flight recorder: %6.1f ns\n", bench_median (pair, ROUNDS));
#ifdef HAVE_SYSPROF_CAPTURE
  g_print ("   sysprof_capture_writer_add_mark \"mark %%u\" into a file: %6.1f ns\n", bench_median (sysprof, ROUNDS));
#else
  g_print ("   (built without libsysprof-capture: no sysprof figure)\n");
#endif
  g_unlink (path);
  g_unlink (sysprof_path);
  g_rmdir (dir);
}

int
main (int   argc,
      char *argv[])
{
  bench_dispatch ();
  bench_events ();
  return 0;
}
