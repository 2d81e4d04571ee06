/* test-clock.c: the cycle counter's rate, calibrated or handed down
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A process calibrates the counter against CLOCK_MONOTONIC once (2 ms of
 * spinning). Under `perfmon run` each process hands its rate down to its
 * children (PERFMON_CLOCK_HINT_ENV), which check it in 0.1 ms and take it,
 * or calibrate in full if it is not this machine's. Each case runs in a
 * fresh process: the rate is computed once per process.
 */
#include "config.h"


#include "perfmon-clock-private.h"

#define TRUE_RATE_ENV "PERFMON_TEST_TRUE_CYCLES_PER_US"

static void
set_rate (const char *name,
          double      rate)
{
  char text[G_ASCII_DTOSTR_BUF_SIZE];

  g_setenv (name, g_ascii_dtostr (text, sizeof text, rate), TRUE);
}

/* In the subprocess: the rate it found is the hint itself, to the bit
 * (a calibration of its own would differ in the last digits). */
static void
check_taken (void)
{
  double hint = g_ascii_strtod (g_getenv (PERFMON_CLOCK_HINT_ENV), NULL);

  g_assert_cmpfloat (_perfmon_clock_cycles_per_us (), ==, hint);
}

/* In the subprocess: the hint was not taken; the rate is this machine's. */
static void
check_calibrated (void)
{
  double truth = g_ascii_strtod (g_getenv (TRUE_RATE_ENV), NULL);
  double rate = _perfmon_clock_cycles_per_us ();
  const char *hint = g_getenv (PERFMON_CLOCK_HINT_ENV);

  g_assert_cmpfloat (rate, !=, g_ascii_strtod (hint, NULL));
  g_assert_cmpfloat (ABS (rate / truth - 1.0), <, 0.01);
}

static void
test_hint_taken (void)
{
  gboolean passed = FALSE;

  if (g_test_subprocess ())
    {
      check_taken ();
      return;
    }
  /* Within the check's tolerance of the machine's rate. A check split by
   * a preemption rejects a good hint (the process then calibrates in
   * full): tried again, up to three times. */
  set_rate (PERFMON_CLOCK_HINT_ENV, _perfmon_clock_cycles_per_us () * 1.003);
  for (guint i = 0; i < 3 && !passed; i++)
    {
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
      passed = g_test_trap_has_passed ();
    }
  g_unsetenv (PERFMON_CLOCK_HINT_ENV);
  g_assert_true (passed);
}

static void
test_hint_rejected (gconstpointer data)
{
  const char *hint = data;

  if (g_test_subprocess ())
    {
      check_calibrated ();
      return;
    }
  set_rate (TRUE_RATE_ENV, _perfmon_clock_cycles_per_us ());
  if (g_str_equal (hint, "wrong"))
    set_rate (PERFMON_CLOCK_HINT_ENV, _perfmon_clock_cycles_per_us () * 1.5);
  else
    g_setenv (PERFMON_CLOCK_HINT_ENV, hint, TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_unsetenv (PERFMON_CLOCK_HINT_ENV);
  g_test_trap_assert_passed ();
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/clock/hint-taken", test_hint_taken);
  /* Another machine's rate (a value 50 % off), and values that are none. */
  g_test_add_data_func ("/clock/hint-rejected/wrong", "wrong", test_hint_rejected);
  g_test_add_data_func ("/clock/hint-rejected/not-a-number", "fast", test_hint_rejected);
  g_test_add_data_func ("/clock/hint-rejected/trailing", "2000.0x", test_hint_rejected);
  g_test_add_data_func ("/clock/hint-rejected/negative", "-2000", test_hint_rejected);
  g_test_add_data_func ("/clock/hint-rejected/infinite", "1e400", test_hint_rejected);

  return g_test_run ();
}
