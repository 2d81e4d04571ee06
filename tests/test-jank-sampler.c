/* test-jank-sampler.c: the MAIN_THREAD_JANK checker's reports and its
 * budget, driven tick by tick
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Issue 23, point 5: "An empty log never spends the budget." The watchdog
 * calls the sampler at the times it asks for; here the test does, with
 * the loop's busy stretches written into a PerfmonLoopActivity of its own
 * as the watched thread writes them, so that which samples fall in the
 * janky task is decided by the test, not by the machine's load.
 */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"
#include "perfmon-jank-policy-private.h"
#include "perfmon-jank-sampler-private.h"
#include "perfmon-loop-activity-private.h"

#define MS (G_GINT64_CONSTANT (1000))
/* The config: a jank past 100 ms is stack-sampled, 3 samples 100 ms
 * apart after the check that sees it again; one report a day. */
#define INTERVAL_MS 100

typedef struct
{
  PerfmonLoopActivity activity;
  PerfmonJankConfig   config;
  PerfmonJankSetup    setup;
  PerfmonJankSampler *sampler;
  char               *dir;
  /* A monotonic time and the cycle counter's reading then: the stretches'
   * cycles for the test's monotonic times. */
  gint64              base_us;
  guint64             base_cycles;
} Fixture;

static guint64
cycles_at (Fixture *fixture,
           gint64   monotonic_us)
{
  return fixture->base_cycles + _perfmon_clock_us_to_cycles (monotonic_us - fixture->base_us);
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;

  _perfmon_loop_activity_init (&fixture->activity);
  _perfmon_jank_config_init (&fixture->config);
  g_hash_table_insert (params, (char *) "log_type", (char *) "1");
  g_hash_table_insert (params, (char *) "sample_interval", (char *) G_STRINGIFY (INTERVAL_MS));
  g_hash_table_insert (params, (char *) "ignore_startup_time", (char *) "3");
  g_hash_table_insert (params, (char *) "sample_count", (char *) "3");
  g_hash_table_insert (params, (char *) "report_times_per_app", (char *) "1");
  g_assert_true (_perfmon_jank_config_apply (&fixture->config, "MAIN_THREAD_JANK", params, &error));
  g_assert_no_error (error);

  fixture->dir = g_dir_make_tmp ("test-jank-sampler-XXXXXX", &error);
  g_assert_no_error (error);
  fixture->setup.log_dir = fixture->dir;
  fixture->setup.log_dir_limit = 1024 * 1024;
  /* Past the start-up window: the process started a minute ago. */
  fixture->sampler = _perfmon_jank_sampler_new (&fixture->activity, g_get_real_time () - 60 * G_USEC_PER_SEC);

  fixture->base_cycles = _perfmon_clock_cycles ();
  fixture->base_us = _perfmon_clock_cycles_to_monotonic_us (fixture->base_cycles);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GDir) dir = g_dir_open (fixture->dir, 0, NULL);
  const char *name;

  _perfmon_jank_sampler_free (fixture->sampler);
  _perfmon_loop_activity_clear (&fixture->activity);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (fixture->dir, name, NULL);

      g_unlink (path);
    }
  g_rmdir (fixture->dir);
  g_free (fixture->dir);
}

static guint
count_logs (Fixture *fixture)
{
  g_autoptr(GDir) dir = g_dir_open (fixture->dir, 0, NULL);
  guint n = 0;

  while (dir != NULL && g_dir_read_name (dir) != NULL)
    n++;
  return n;
}

static GVariant *
tick (Fixture *fixture,
      gint64   stretch_start_us,
      gint64   now_us)
{
  GVariant *event = NULL;

  _perfmon_jank_sampler_tick (fixture->sampler, &fixture->config, &fixture->setup, stretch_start_us, now_us,
                              &event);
  return event;
}

/* One jank: a task that begins at @start_us, is detected 150 ms in, is
 * still running at the first check (100 ms later) and ends @end_ms after
 * @start_us; the samples, 200, 300 and 400 ms after the detection, fall in
 * it while it runs. With @running_stack the watchdog hands the sampler
 * the stack it took at the detection. Returns the event, if any. */
static GVariant *
run_jank (Fixture  *fixture,
          gint64    start_us,
          guint     end_ms,
          gboolean  running_stack)
{
  gint64 detected = start_us + 150 * MS;
  gint64 end_us = start_us + end_ms * MS;
  GVariant *event = NULL;
  guint64 index;

  _perfmon_loop_activity_busy_begin (&fixture->activity, cycles_at (fixture, start_us));
  g_assert_null (tick (fixture, start_us, detected));
  if (running_stack)
    {
      g_autoptr(PerfmonStackSample) sample = _perfmon_stack_sample_new ("jank");
      PerfmonStackFrame frame = { 0x1000, -1, 0, "busy_function", 0, NULL, NULL, NULL };

      g_assert_true (_perfmon_jank_sampler_wants_stack (fixture->sampler, &index));
      _perfmon_stack_sample_add_frame (sample, &frame);
      _perfmon_jank_sampler_add_running_stack (fixture->sampler, index, sample);
    }

  for (gint64 t = detected + INTERVAL_MS * MS; t <= detected + 5 * INTERVAL_MS * MS; t += INTERVAL_MS * MS)
    {
      gboolean busy = t < end_us;

      if (!busy && __atomic_load_n (&fixture->activity.phase, __ATOMIC_RELAXED) == PERFMON_LOOP_BUSY)
        _perfmon_loop_activity_busy_end (&fixture->activity, cycles_at (fixture, end_us));
      g_assert_null (event);
      event = tick (fixture, busy ? start_us : 0, t);
    }
  return event;
}

/* A task of 180 ms: detected at 150 ms, seen at the first check
 * (250 ms), over before the first sample (350 ms). Without the stack the
 * watchdog takes while the task runs (say it ended before the watchdog
 * could take it), every sample is skipped: the log would hold no sample
 * of the jank. It is not written, there is no event, and it spends none
 * of report_times_per_app (1 a day): the next jank, with its stack, is
 * reported. */
static void
test_empty_log_spends_no_budget (Fixture       *fixture,
                                 gconstpointer  data)
{
  g_autoptr(GVariant) empty = NULL;
  g_autoptr(GVariant) event = NULL;
  g_autoptr(GVariant) over_budget = NULL;
  const char *heaviest = NULL;
  guint32 sample_count = 0;
  /* In the past: the clock takes a stretch's end from the future as
   * now. */
  gint64 start = fixture->base_us - 10 * G_USEC_PER_SEC;

  empty = run_jank (fixture, start, 260, FALSE);
  g_assert_null (empty);
  g_assert_cmpuint (count_logs (fixture), ==, 0);

  event = run_jank (fixture, start + 1000 * MS, 260, TRUE);
  g_assert_nonnull (event);
  g_assert_true (g_variant_lookup (event, "sample_count", "u", &sample_count));
  g_assert_cmpuint (sample_count, ==, 1);
  g_assert_true (g_variant_lookup (event, "heaviest_stack", "&s", &heaviest));
  g_assert_nonnull (strstr (heaviest, "busy_function"));
  g_assert_cmpuint (count_logs (fixture), ==, 1);

  /* That one did spend it: the budget is there to be spent. */
  over_budget = run_jank (fixture, start + 2000 * MS, 260, TRUE);
  g_assert_null (over_budget);
  g_assert_cmpuint (count_logs (fixture), ==, 1);
}

/* The watchdog is late (a loaded machine, a sanitizer): it sees the
 * stretch pass the threshold (100 ms) only 150 ms in, and wakes next at
 * 290 ms, after the task ended (270 ms). The check, 100 ms after the
 * threshold was passed, falls at 200 ms, while the task still ran: the
 * jank is seen, and its log has the stack taken while it ran. Before, the
 * check counted from the late detection (due at 250 ms) and asked whether
 * the loop was busy at the late tick: such a jank gave no log at all. */
static void
test_late_watchdog_still_sees_the_jank (Fixture       *fixture,
                                        gconstpointer  data)
{
  g_autoptr(PerfmonStackSample) sample = _perfmon_stack_sample_new ("jank");
  PerfmonStackFrame frame = { 0x1000, -1, 0, "busy_function", 0, NULL, NULL, NULL };
  g_autoptr(GVariant) event = NULL;
  gint64 start = fixture->base_us - 10 * G_USEC_PER_SEC;
  const char *heaviest = NULL;
  guint64 index;

  /* The budget is the process's: another test may have spent one. */
  fixture->config.report_times_per_app = 10;
  _perfmon_loop_activity_busy_begin (&fixture->activity, cycles_at (fixture, start));
  g_assert_null (tick (fixture, start, start + 150 * MS));
  g_assert_true (_perfmon_jank_sampler_wants_stack (fixture->sampler, &index));
  _perfmon_stack_sample_add_frame (sample, &frame);
  _perfmon_jank_sampler_add_running_stack (fixture->sampler, index, sample);
  _perfmon_loop_activity_busy_end (&fixture->activity, cycles_at (fixture, start + 270 * MS));

  for (gint64 t = start + 290 * MS; t <= start + 3000 * MS && event == NULL; t += INTERVAL_MS * MS)
    event = tick (fixture, 0, t);
  g_assert_nonnull (event);
  g_assert_true (g_variant_lookup (event, "heaviest_stack", "&s", &heaviest));
  g_assert_nonnull (strstr (heaviest, "busy_function"));
  g_assert_cmpuint (count_logs (fixture), ==, 1);
}

/* A jank whose samples all fall in the task and all fail (here: the
 * thread is not known, as when it cannot be stopped in time): the log
 * would hold only why, no stack of the jank. It is not written and spends
 * none of the budget (1 a day): the next jank, with its stack, is
 * reported. In a subprocess: the budget is the process's. */
static void
test_failed_samples_spend_no_budget (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GVariant) failed = NULL;
  g_autoptr(GVariant) event = NULL;
  gint64 start = fixture->base_us - 10 * G_USEC_PER_SEC;

  if (!g_test_subprocess ())
    {
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      return;
    }

  /* Samples at 350, 450 and 550 ms fall in a 600 ms task. */
  g_assert_cmpint (__atomic_load_n (&fixture->activity.thread_id, __ATOMIC_RELAXED), ==, 0);
  failed = run_jank (fixture, start, 600, FALSE);
  g_assert_null (failed);
  g_assert_cmpuint (count_logs (fixture), ==, 0);

  event = run_jank (fixture, start + 2000 * MS, 260, TRUE);
  g_assert_nonnull (event);
  g_assert_cmpuint (count_logs (fixture), ==, 1);
}

/* A busy tick in the start-up window (here 2.5 s into its 3 s) asks for
 * the next one when the window ends, not a whole window later: the
 * watchdog sleeps until then, and a jank that begins and ends within a
 * window's length after the tick went unseen (under ASan on a loaded
 * machine, a 2 s jank at 3.3 s gave no event in 30 s). In a subprocess:
 * the start-up is the process's, taken from its first sampler. */
static void
test_startup_tick_wakes_at_its_end (void)
{
  PerfmonLoopActivity activity;
  PerfmonJankConfig config;
  PerfmonJankSetup setup = { 0, };
  PerfmonJankSampler *sampler;
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;
  GVariant *event = NULL;
  gint64 now, next;

  if (!g_test_subprocess ())
    {
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      return;
    }

  _perfmon_loop_activity_init (&activity);
  _perfmon_jank_config_init (&config);
  g_hash_table_insert (params, (char *) "log_type", (char *) "1");
  g_hash_table_insert (params, (char *) "sample_interval", (char *) G_STRINGIFY (INTERVAL_MS));
  g_hash_table_insert (params, (char *) "ignore_startup_time", (char *) "3");
  g_hash_table_insert (params, (char *) "sample_count", (char *) "3");
  g_hash_table_insert (params, (char *) "report_times_per_app", (char *) "1");
  g_assert_true (_perfmon_jank_config_apply (&config, "MAIN_THREAD_JANK", params, &error));
  g_assert_no_error (error);
  sampler = _perfmon_jank_sampler_new (&activity, g_get_real_time () - 2500 * MS);

  now = g_get_monotonic_time ();
  next = _perfmon_jank_sampler_tick (sampler, &config, &setup, now - 10 * MS, now, &event);
  g_assert_null (event);
  g_test_message ("next tick %" G_GINT64_FORMAT " ms after a busy one 2.5 s into a 3 s start-up",
                  (next - now) / MS);
  g_assert_cmpint (next, >, now);
  g_assert_cmpint (next, <=, now + 500 * MS);

  /* Idle, it waits for the loop's next stretch. */
  g_assert_cmpint (_perfmon_jank_sampler_tick (sampler, &config, &setup, 0, now, &event), ==, G_MAXINT64);

  _perfmon_jank_sampler_free (sampler);
  _perfmon_loop_activity_clear (&activity);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/jank-sampler/empty-log-spends-no-budget", Fixture, NULL, fixture_set_up,
              test_empty_log_spends_no_budget, fixture_tear_down);
  g_test_add ("/jank-sampler/late-watchdog-still-sees-the-jank", Fixture, NULL, fixture_set_up,
              test_late_watchdog_still_sees_the_jank, fixture_tear_down);
  g_test_add ("/jank-sampler/failed-samples-spend-no-budget", Fixture, NULL, fixture_set_up,
              test_failed_samples_spend_no_budget, fixture_tear_down);
  g_test_add_func ("/jank-sampler/startup-tick-wakes-at-its-end", test_startup_tick_wakes_at_its_end);
  return g_test_run ();
}
