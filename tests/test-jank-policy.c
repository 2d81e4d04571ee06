/* test-jank-policy.c: jank classification, rate limits, sampling plans
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon.h"
#include "perfmon-jank-policy-private.h"

#define SEC  (G_GINT64_CONSTANT (1000000))
#define HOUR (3600 * SEC)
#define DAY  (24 * HOUR)
/* An arbitrary wall-clock start: 2026-01-01 00:00:00 UTC. */
#define T0   (G_GINT64_CONSTANT (1767225600) * SEC)

static void
config_with (PerfmonJankConfig *config,
             const char        *log_type,
             const char        *interval,
             const char        *ignore,
             const char        *count,
             const char        *report)
{
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;

  _perfmon_jank_config_init (config);
  g_hash_table_insert (params, (char *) "log_type", (char *) log_type);
  if (interval != NULL)
    {
      g_hash_table_insert (params, (char *) "sample_interval", (char *) interval);
      g_hash_table_insert (params, (char *) "ignore_startup_time", (char *) ignore);
      g_hash_table_insert (params, (char *) "sample_count", (char *) count);
      g_hash_table_insert (params, (char *) "report_times_per_app", (char *) report);
    }
  g_assert_true (_perfmon_jank_config_apply (config, "MAIN_THREAD_JANK", params, &error));
  g_assert_no_error (error);
}

static void
test_classify (void)
{
  PerfmonJankConfig config;

  _perfmon_jank_config_init (&config);
  g_assert_cmpint (_perfmon_jank_classify (0000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (150000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (151000, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  g_assert_cmpint (_perfmon_jank_classify (449000, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  /* The seed's ranges, 150 < t < 450 and t > 450, leave out exactly 450 ms. */
  g_assert_cmpint (_perfmon_jank_classify (449999, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  g_assert_cmpint (_perfmon_jank_classify (450000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (450001, &config), ==, PERFMON_JANK_ACTION_TRACE);
  g_assert_cmpint (_perfmon_jank_classify (451000, &config), ==, PERFMON_JANK_ACTION_TRACE);
  g_assert_cmpint (_perfmon_jank_classify (G_MAXUINT64, &config), ==, PERFMON_JANK_ACTION_TRACE);

  /* log_type 1: stack only, above one sample_interval. */
  config_with (&config, "1", "100", "3", "5", "1");
  g_assert_cmpint (_perfmon_jank_classify (100000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (101000, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  g_assert_cmpint (_perfmon_jank_classify (451000, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  g_assert_cmpint (_perfmon_jank_classify (100000000, &config), ==, PERFMON_JANK_ACTION_STACK_SAMPLING);

  /* log_type 2: trace only. */
  config_with (&config, "2", NULL, NULL, NULL, NULL);
  g_assert_cmpint (_perfmon_jank_classify (151000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (450000, &config), ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpint (_perfmon_jank_classify (451000, &config), ==, PERFMON_JANK_ACTION_TRACE);
}

/* Where each action starts, for the sampler's deadlines: one past the
 * threshold, classify calls for it. */
static void
assert_threshold (const PerfmonJankConfig *config,
                  PerfmonJankAction        action,
                  guint64                  expected_us)
{
  guint64 threshold_us = _perfmon_jank_threshold_us (config, action);

  g_assert_cmpuint (threshold_us, ==, expected_us);
  if (threshold_us == G_MAXUINT64)
    return;
  g_assert_cmpint (_perfmon_jank_classify (threshold_us, config), !=, action);
  g_assert_cmpint (_perfmon_jank_classify (threshold_us + 1, config), ==, action);
}

static void
test_thresholds (void)
{
  PerfmonJankConfig config;

  _perfmon_jank_config_init (&config);
  assert_threshold (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 150000);
  assert_threshold (&config, PERFMON_JANK_ACTION_TRACE, 450000);

  config_with (&config, "1", "100", "3", "5", "1");
  assert_threshold (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 100000);
  assert_threshold (&config, PERFMON_JANK_ACTION_TRACE, G_MAXUINT64);

  config_with (&config, "2", NULL, NULL, NULL, NULL);
  assert_threshold (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, G_MAXUINT64);
  assert_threshold (&config, PERFMON_JANK_ACTION_TRACE, 450000);
}

static void
test_startup (void)
{
  PerfmonJankConfig config;
  PerfmonJankLimiter limiter;

  _perfmon_jank_config_init (&config);
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_in_startup (&limiter, &config, T0));
  g_assert_true (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + 10 * SEC - 1));
  g_assert_false (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + 10 * SEC));
  g_assert_false (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + DAY));

  config_with (&config, "1", "150", "3", "10", "1");
  g_assert_true (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + 3 * SEC - 1));
  g_assert_false (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + 3 * SEC));

  config_with (&config, "1", "150", "3600", "10", "1");
  g_assert_true (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + HOUR - 1));
  g_assert_false (_perfmon_jank_limiter_in_startup (&limiter, &config, T0 + HOUR));
}

static void
test_stack_once_per_process (void)
{
  PerfmonJankConfig config;
  PerfmonJankLimiter limiter;

  /* Default: once in the process's life, even days later. */
  _perfmon_jank_config_init (&config);
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 20 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 21 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 2 * DAY));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 365 * DAY));
}

static void
test_stack_developer_hourly (void)
{
  PerfmonJankConfig config;
  PerfmonJankLimiter limiter;

  /* Developer mode, default: once an hour. */
  _perfmon_jank_config_init (&config);
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 20 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 20 * SEC + HOUR - 1));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 20 * SEC + HOUR));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 20 * SEC + HOUR + 1));

  /* report_times_per_app 3: three per (sliding) hour. */
  config_with (&config, "1", "150", "10", "10", "3");
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 10 * SEC));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 20 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + 30 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR - 1));
  /* The first one has left the window: one more. */
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR + 1));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR + 10 * SEC));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR + 20 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, TRUE, T0 + HOUR + 21 * SEC));
}

static void
test_stack_daily (void)
{
  PerfmonJankConfig config;
  PerfmonJankLimiter limiter;

  /* report_times_per_app set, developer mode off: N per day. */
  config_with (&config, "1", "150", "10", "10", "1");
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + HOUR));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 2 * HOUR));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + HOUR + DAY - 1));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + HOUR + DAY));

  config_with (&config, "1", "150", "10", "10", "2");
  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + HOUR));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + 2 * HOUR));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + DAY));
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + DAY + 1));
  g_assert_true (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + DAY + HOUR));

  /* The wall clock stepping back buys nothing. */
  g_assert_false (_perfmon_jank_limiter_allow_stack (&limiter, &config, FALSE, T0 + DAY - HOUR));
}

static void
test_trace_daily (void)
{
  PerfmonJankLimiter limiter;

  _perfmon_jank_limiter_init (&limiter, T0);
  g_assert_true (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 20 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 21 * SEC));
  g_assert_false (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 20 * SEC + DAY - 1));
  g_assert_false (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 20 * SEC - HOUR));
  g_assert_true (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 20 * SEC + DAY));
  g_assert_false (_perfmon_jank_limiter_allow_trace (&limiter, T0 + 20 * SEC + DAY + 1));
}

static void
assert_times (const guint *times,
              guint        n,
              guint        first,
              guint        step)
{
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint (times[i], ==, first + i * step);
}

static void
test_plan_stack_default (void)
{
  PerfmonJankConfig config;
  PerfmonJankPlan plan;

  _perfmon_jank_config_init (&config);

  /* Seed case (1): jank at the first check, 10 samples every 150 ms,
   * reported at the next interval. */
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 1, &plan);
  g_assert_cmpint (plan.action, ==, PERFMON_JANK_ACTION_STACK_SAMPLING);
  g_assert_cmpuint (plan.n_checks, ==, 1);
  g_assert_cmpuint (plan.check_ms[0], ==, 150);
  g_assert_cmpuint (plan.n_samples, ==, 10);
  assert_times (plan.sample_ms, 10, 300, 150);
  g_assert_true (plan.report);
  g_assert_cmpuint (plan.end_ms, ==, 1800);

  /* Seed case (2): jank at the second check. */
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 2, &plan);
  g_assert_cmpuint (plan.n_checks, ==, 2);
  assert_times (plan.check_ms, 2, 150, 150);
  g_assert_cmpuint (plan.n_samples, ==, 10);
  assert_times (plan.sample_ms, 10, 450, 150);
  g_assert_true (plan.report);
  g_assert_cmpuint (plan.end_ms, ==, 1950);

  /* Seed case (3): no jank at either check, the check ends. */
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 0, &plan);
  g_assert_cmpuint (plan.n_checks, ==, 2);
  assert_times (plan.check_ms, 2, 150, 150);
  g_assert_cmpuint (plan.n_samples, ==, 0);
  g_assert_false (plan.report);
  g_assert_cmpuint (plan.end_ms, ==, 300);

  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_NONE, 1, &plan);
  g_assert_cmpint (plan.action, ==, PERFMON_JANK_ACTION_NONE);
  g_assert_cmpuint (plan.n_checks, ==, 0);
  g_assert_cmpuint (plan.n_samples, ==, 0);
  g_assert_false (plan.report);
}

static void
test_plan_stack_budget (void)
{
  static const char * const intervals[] = { "50", "100", "150", "300", "499", "500" };

  /* At the largest sample_count, the latest report (jank at check 2) is out
   * within 2500 ms of the task's start, one interval before detection. */
  for (gsize i = 0; i < G_N_ELEMENTS (intervals); i++)
    {
      guint interval = (guint) g_ascii_strtoull (intervals[i], NULL, 10);
      guint max = _perfmon_jank_config_max_sample_count (interval);
      g_autofree char *count = g_strdup_printf ("%u", max);
      PerfmonJankConfig config;
      PerfmonJankPlan plan;

      config_with (&config, "1", intervals[i], "3", count, "1");
      _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 2, &plan);
      g_assert_cmpuint (plan.n_samples, ==, max);
      assert_times (plan.check_ms, 2, interval, interval);
      assert_times (plan.sample_ms, max, 3 * interval, interval);
      g_assert_cmpuint (plan.end_ms, ==, (max + 3) * interval);
      g_assert_cmpuint (interval + plan.end_ms, <=, 2500);
    }
}

static void
test_plan_stack_custom (void)
{
  PerfmonJankConfig config;
  PerfmonJankPlan plan;

  /* The seed's log_type 1 example. */
  config_with (&config, "1", "100", "11", "21", "3");
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 1, &plan);
  g_assert_cmpuint (plan.n_checks, ==, 1);
  g_assert_cmpuint (plan.check_ms[0], ==, 100);
  g_assert_cmpuint (plan.n_samples, ==, 21);
  assert_times (plan.sample_ms, 21, 200, 100);
  g_assert_cmpuint (plan.end_ms, ==, 2300);

  /* A config past the bound (built by hand) is clamped, never overflows. */
  config.sample_interval_ms = 50;
  config.sample_count = 1000;
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_STACK_SAMPLING, 2, &plan);
  g_assert_cmpuint (plan.n_samples, ==, 46);
}

static void
test_plan_trace (void)
{
  PerfmonJankConfig config;
  PerfmonJankPlan plan;

  _perfmon_jank_config_init (&config);

  /* Seed case (1): no jank in 20 checks: nothing stored. */
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_TRACE, 0, &plan);
  g_assert_cmpint (plan.action, ==, PERFMON_JANK_ACTION_TRACE);
  g_assert_cmpuint (plan.n_checks, ==, 20);
  assert_times (plan.check_ms, 20, 150, 150);
  g_assert_cmpuint (plan.check_ms[19], ==, 3000);
  g_assert_cmpuint (plan.n_samples, ==, 0);
  g_assert_false (plan.report);
  g_assert_cmpuint (plan.end_ms, ==, 3000);

  /* Seed case (2): a jank at any check: stored at 3 s. */
  for (guint k = 1; k <= 20; k++)
    {
      _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_TRACE, k, &plan);
      g_assert_cmpuint (plan.n_checks, ==, 20);
      g_assert_true (plan.report);
      g_assert_cmpuint (plan.end_ms, ==, 3000);
    }
  _perfmon_jank_sampling_plan (&config, PERFMON_JANK_ACTION_TRACE, 21, &plan);
  g_assert_false (plan.report);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/jank-policy/classify", test_classify);
  g_test_add_func ("/jank-policy/thresholds", test_thresholds);
  g_test_add_func ("/jank-policy/startup", test_startup);
  g_test_add_func ("/jank-policy/stack/once-per-process", test_stack_once_per_process);
  g_test_add_func ("/jank-policy/stack/developer-hourly", test_stack_developer_hourly);
  g_test_add_func ("/jank-policy/stack/daily", test_stack_daily);
  g_test_add_func ("/jank-policy/trace/daily", test_trace_daily);
  g_test_add_func ("/jank-policy/plan/stack-default", test_plan_stack_default);
  g_test_add_func ("/jank-policy/plan/stack-budget", test_plan_stack_budget);
  g_test_add_func ("/jank-policy/plan/stack-custom", test_plan_stack_custom);
  g_test_add_func ("/jank-policy/plan/trace", test_plan_trace);

  return g_test_run ();
}
