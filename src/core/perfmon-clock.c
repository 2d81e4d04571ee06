/* perfmon-clock.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-clock-private.h"

/* 2 ms of spinning, once per process: long enough for a calibration error
 * far below the 1 ms resolution of the histograms. */
#define CALIBRATION_NS 2000000

static double cycles_per_us;

static double
calibrate (void)
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
  while (end_ns - start_ns < CALIBRATION_NS);

  return (double) (end_cycles - start_cycles) * 1000.0 / (double) (end_ns - start_ns);
}

double
_perfmon_clock_cycles_per_us (void)
{
  static gsize initialized = 0;

  if (g_once_init_enter (&initialized))
    {
      cycles_per_us = calibrate ();
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
