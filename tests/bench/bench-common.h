/* bench-common.h: what the benchmarks measure with, and against
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <stdlib.h>
#include <time.h>

#include "perfmon-clock-private.h"

static inline int
bench_compare_double (const void *a,
                      const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Sorts @values. */
static inline double
bench_median (double *values,
              guint   n)
{
  qsort (values, n, sizeof (double), bench_compare_double);
  return values[n / 2];
}

/* CPU seconds the whole process has used (every thread, user and
 * system). On a shared virtual machine this leaves out the time the
 * process waited for a core, which wall time counts in full: a loop
 * figure compares CPU time, and prints wall time beside it. */
static inline double
bench_process_cpu_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Keeps measured loops from being optimised away. */
static volatile guint64 bench_sink;

/* The yardstick of the hot-path figures: two bare reads of the cycle
 * counter that enter/leave and push/pop are compared with, in ns. */
static inline double
bench_ns_per_two_counter_reads (guint batch)
{
  gint64 start = _perfmon_clock_monotonic_ns ();
  guint64 acc = 0;

  for (guint i = 0; i < batch; i++)
    {
      acc += _perfmon_clock_cycles ();
      acc ^= _perfmon_clock_cycles ();
    }
  bench_sink = acc;
  return (double) (_perfmon_clock_monotonic_ns () - start) / batch;
}
