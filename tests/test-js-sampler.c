/* test-js-sampler.c: the JavaScript stack sampler's schedule, driven
 * sample by sample against a model of a periodic program
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Issue 24, point 4: an add-on's promise jobs are charged to it by
 * sampling the JavaScript stack of long dispatches, within 15 % of what
 * it burnt. The engine answers a sample only at its next safe point, so
 * a sample asked for just before a point where the add-on's frames are
 * not on the stack (an async function about to be resumed, in
 * AsyncFunctionNext) is answered there, without them. When the next
 * sample was due a fixed time after the previous answer, a program that
 * does the same thing every 5 ms (an extension that burns 5 ms between
 * awaits) kept the samples on that point, each time: in an optimized
 * build, cli-run-addons charged 70-75 % of what the promise burner burnt,
 * three runs out of three. Here the watchdog's part is played by the
 * test, against a model of that program, with the sampler's own
 * schedule; what is asserted is that samples land where the thread
 * spends its time.
 */
#include "config.h"

#include "perfmon-js-sampler-private.h"

#define US (G_GINT64_CONSTANT (1))
#define MS (G_GINT64_CONSTANT (1000))

/* The program: resumes an add-on's async function every @period_us, and
 * has no safe point in the @window_us before each resumption. */
typedef struct
{
  gint64 period_us;
  gint64 window_us;
} Program;

/* When the engine answers a sample asked for at @t, and whether the
 * answer has the add-on's frames. */
static gint64
answer (const Program *program,
        gint64         t,
        gboolean      *in_addon)
{
  gint64 next_resume = (t / program->period_us + 1) * program->period_us;

  if (next_resume - t <= program->window_us)
    {
      *in_addon = FALSE;   /* answered at the resumption: AsyncFunctionNext */
      return next_resume;
    }
  *in_addon = TRUE;
  return t + 5 * US;       /* a loop's back edge in the add-on's code */
}

/* The share of @n_samples the sampler takes of @program that miss the
 * add-on: the watchdog wakes @wake_us after a deadline and is done with a
 * sample @work_us after its answer. */
static double
missed_share (const Program *program,
              guint32        seed,
              guint          n_samples,
              gint64         wake_us,
              gint64         work_us)
{
  guint32 rng = seed;
  gint64 t = PERFMON_JS_SAMPLE_AFTER_MS * MS + wake_us;
  guint missed = 0;

  for (guint i = 0; i < n_samples; i++)
    {
      gboolean in_addon;
      gint64 done = answer (program, t, &in_addon) + work_us;
      gint64 next = _perfmon_js_sampler_next_sample_us (&rng, t, done);

      if (!in_addon)
        missed++;
      g_assert_cmpint (next, >, t);
      t = MAX (next, done) + wake_us;
    }
  return (double) missed / n_samples;
}

/* An extension that burns 5 ms between awaits, with 10 to 200 µs of
 * promise machinery between two burns: the window without a safe point
 * is 60 µs of each period, about 1.2 % of the time. The samples that miss
 * the add-on are about that share, never the most of them. */
static void
test_periodic_program (void)
{
  for (gint64 period = 5010 * US; period <= 5200 * US; period += 10 * US)
    for (gint64 wake = 10 * US; wake <= 90 * US; wake += 40 * US)
      {
        Program program = { .period_us = period, .window_us = 60 * US };
        double share = missed_share (&program, 0x9e3779b9u ^ (guint32) period, 2000, wake, 20 * US);

        if (share > 0.05)
          g_test_message ("period %" G_GINT64_FORMAT " µs, wake-up %" G_GINT64_FORMAT
                          " µs: %.1f %% of the samples miss the add-on",
                          period, wake, share * 100);
        g_assert_cmpfloat (share, <=, 0.05);
      }
}

/* "Every PERFMON_JS_SAMPLE_EVERY_MS" on average, never twice in a row
 * sooner than half of it after the previous request, nor later than one
 * and a half of it; after a sample that took long (no answer within its
 * timeout), not right away. */
static void
test_intervals (void)
{
  guint32 rng = 1;
  gint64 sum = 0, min = G_MAXINT64, max = 0;
  const guint n = 10000;

  for (guint i = 0; i < n; i++)
    {
      gint64 next = _perfmon_js_sampler_next_sample_us (&rng, 0, 100 * US);

      sum += next;
      min = MIN (min, next);
      max = MAX (max, next);
    }
  g_assert_cmpint (min, >=, PERFMON_JS_SAMPLE_EVERY_MS * MS / 2);
  g_assert_cmpint (max, <=, PERFMON_JS_SAMPLE_EVERY_MS * MS * 3 / 2);
  g_assert_cmpfloat (ABS ((double) sum / n - PERFMON_JS_SAMPLE_EVERY_MS * MS), <, 100.0);
  /* They differ: the schedule is not a fixed grid either. */
  g_assert_cmpint (max - min, >, PERFMON_JS_SAMPLE_EVERY_MS * MS / 2);

  for (guint i = 0; i < 100; i++)
    {
      gint64 done = PERFMON_JS_SAMPLE_TIMEOUT_MS * MS;

      g_assert_cmpint (_perfmon_js_sampler_next_sample_us (&rng, 0, done), >, done);
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/js-sampler/periodic-program", test_periodic_program);
  g_test_add_func ("/js-sampler/intervals", test_intervals);

  return g_test_run ();
}
