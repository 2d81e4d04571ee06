/* perfmon-clock.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-clock-private.h"

/* 2 ms of spinning, once per process: long enough for a calibration error
 * far below the 1 ms resolution of the histograms. */
#define CALIBRATION_NS 2000000
/* A calibration handed down (PERFMON_CLOCK_HINT_ENV) is checked this long
 * and taken if this close: the cycle counter's rate is the machine's. */
#define HINT_CHECK_NS 100000
#define HINT_TOLERANCE 0.01

static double cycles_per_us;

static double
calibrate (gint64 duration_ns)
{
  gint64 start_ns = _perfmon_clock_monotonic_ns ();
  guint64 start_cycles = _perfmon_clock_cycles ();
  gint64 end_ns;
  guint64 end_cycles;

  do
    {
      end_ns = _perfmon_clock_monotonic_ns ();
      end_cycles = _perfmon_clock_cycles ();
    }
  while (end_ns - start_ns < duration_ns);

  return (double) (end_cycles - start_cycles) * 1000.0 / (double) (end_ns - start_ns);
}

/* The rate a parent process calibrated and handed down, if this process
 * measures the same in HINT_CHECK_NS; else 0. A reading split by a
 * preemption, or a value that is not this machine's, fails the check:
 * then the process calibrates in full, as without a hint. */
static double
hinted_cycles_per_us (void)
{
  const char *text = g_getenv (PERFMON_CLOCK_HINT_ENV);
  char *end = NULL;
  double hint;

  if (text == NULL || *text == '\0')
    return 0.0;
  hint = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0' || !(hint >= 1.0 && hint <= 1e6))
    return 0.0;
  if (!(ABS (calibrate (HINT_CHECK_NS) / hint - 1.0) <= HINT_TOLERANCE))
    return 0.0;
  return hint;
}

double
_perfmon_clock_cycles_per_us (void)
{
  static gsize initialized = 0;

  if (g_once_init_enter (&initialized))
    {
      cycles_per_us = hinted_cycles_per_us ();
      if (!(cycles_per_us > 0.0))
        cycles_per_us = calibrate (CALIBRATION_NS);
      if (!(cycles_per_us > 0.0))
        cycles_per_us = 1000.0;
      g_once_init_leave (&initialized, 1);
    }

  return cycles_per_us;
}

gint64
_perfmon_clock_thread_cpu_ns (void)
{
  struct timespec ts;

  if (clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;

  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

gint64
_perfmon_clock_cycles_to_monotonic_us (guint64 cycles)
{
  guint64 now_cycles = _perfmon_clock_cycles ();
  gint64 now_us = g_get_monotonic_time ();

  if (cycles >= now_cycles)
    return now_us;
  return now_us - (gint64) ((double) (now_cycles - cycles) / _perfmon_clock_cycles_per_us ());
}
