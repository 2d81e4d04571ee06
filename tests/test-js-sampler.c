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
#include "perfmon-monitor.h"
#include "perfmon-snapshot.h"

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

static guint64
sampled_us (PerfmonMonitor *monitor,
            PerfmonGroup   *group)
{
  g_autoptr(PerfmonSnapshot) snapshot = perfmon_monitor_snapshot (monitor);

  return perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (snapshot, perfmon_group_get_id (group)));
}

/* A loaded machine: the watched thread gets half a CPU, and every other
 * sample, the first among them, finds it off the CPU past the timeout
 * (no answer). The stretch is the add-on's from start to end (a promise
 * job that burns 30 ms): all of its CPU time goes to the add-on. It used
 * to lose a quarter of it: an unanswered first sample counted as one that
 * had found no add-on, so the next interval, with the one carried, was
 * split in half with nobody. */
static void
test_unanswered_samples (void)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonGroup) addon = perfmon_monitor_get_addon_group (monitor, "burner@test", "Burner");

  for (guint first_answered = 0; first_answered < 2; first_answered++)
    {
      PerfmonJsSampler *sampler = _perfmon_js_sampler_new (monitor);
      guint64 before = sampled_us (monitor, addon);
      guint i = 0;
      gint64 t;

      _perfmon_js_sampler_follow (sampler, 1, 7, 0, 0, 0);
      for (t = PERFMON_JS_SAMPLE_AFTER_MS * MS; t < 60 * MS; t += PERFMON_JS_SAMPLE_EVERY_MS * MS, i++)
        {
          gboolean answered = (i % 2) == first_answered;

          _perfmon_js_sampler_account (sampler, t, t * 1000 / 2,
                                       answered ? PERFMON_JS_SAMPLE_ANSWERED : PERFMON_JS_SAMPLE_NO_ANSWER,
                                       answered ? addon : NULL);
        }
      _perfmon_js_sampler_end (sampler, 60 * MS, 60 * MS * 1000 / 2);
      g_assert_cmpuint (sampled_us (monitor, addon) - before, ==, 30 * MS);
      _perfmon_js_sampler_free (sampler);
    }
}

/* Two answers that disagree split their interval; a stretch no sample
 * answered in is nobody's; an exactly charged dispatch takes its part. */
static void
test_split_and_exact (void)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonGroup) addon = perfmon_monitor_get_addon_group (monitor, "burner@test", "Burner");
  PerfmonJsSampler *sampler = _perfmon_js_sampler_new (monitor);

  /* add-on at 10 ms (its first 10 ms too), nobody at 20 ms: 10 + 5. */
  _perfmon_js_sampler_follow (sampler, 1, 1, 0, 0, 0);
  _perfmon_js_sampler_account (sampler, 10 * MS, 10 * MS * 1000, PERFMON_JS_SAMPLE_ANSWERED, addon);
  _perfmon_js_sampler_account (sampler, 20 * MS, 20 * MS * 1000, PERFMON_JS_SAMPLE_ANSWERED, NULL);
  _perfmon_js_sampler_end (sampler, 30 * MS, 30 * MS * 1000);
  g_assert_cmpuint (sampled_us (monitor, addon), ==, 15 * MS);

  /* No answer at all: nothing. */
  _perfmon_js_sampler_follow (sampler, 1, 2, 0, 0, 0);
  _perfmon_js_sampler_account (sampler, 10 * MS, 10 * MS * 1000, PERFMON_JS_SAMPLE_NO_ANSWER, NULL);
  _perfmon_js_sampler_account (sampler, 20 * MS, 20 * MS * 1000, PERFMON_JS_SAMPLE_NO_ANSWER, NULL);
  _perfmon_js_sampler_end (sampler, 30 * MS, 30 * MS * 1000);
  g_assert_cmpuint (sampled_us (monitor, addon), ==, 15 * MS);

  /* add-on, then an exact dispatch: half the interval, nothing after. */
  _perfmon_js_sampler_follow (sampler, 1, 3, 0, 0, 0);
  _perfmon_js_sampler_account (sampler, 10 * MS, 10 * MS * 1000, PERFMON_JS_SAMPLE_ANSWERED, addon);
  _perfmon_js_sampler_account (sampler, 20 * MS, 20 * MS * 1000, PERFMON_JS_SAMPLE_EXACT, NULL);
  _perfmon_js_sampler_end (sampler, 30 * MS, 30 * MS * 1000);
  g_assert_cmpuint (sampled_us (monitor, addon), ==, 30 * MS);
  _perfmon_js_sampler_free (sampler);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/js-sampler/periodic-program", test_periodic_program);
  g_test_add_func ("/js-sampler/intervals", test_intervals);
  g_test_add_func ("/js-sampler/unanswered-samples", test_unanswered_samples);
  g_test_add_func ("/js-sampler/split-and-exact", test_split_and_exact);

  return g_test_run ();
}
