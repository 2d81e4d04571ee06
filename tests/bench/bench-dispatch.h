/* bench-dispatch.h: the idle-dispatch loop the loop-overhead figures time
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "bench-common.h"
#include "perfmon.h"

typedef struct
{
  GMainLoop    *loop;
  PerfmonGroup *compartment;
  guint         remaining;
} BenchIdleRun;

static gboolean
bench_idle_plain (gpointer data)
{
  BenchIdleRun *run = data;

  if (--run->remaining > 0)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
bench_idle_in_compartment (gpointer data)
{
  BenchIdleRun *run = data;
  gboolean more;

  perfmon_group_enter (run->compartment);
  more = --run->remaining > 0;
  perfmon_group_leave (run->compartment);

  if (more)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (run->loop);
  return G_SOURCE_REMOVE;
}

/* What a loop cost: wall time and the process's CPU time, in seconds. */
typedef struct
{
  double wall;
  double cpu;
} BenchSeconds;

/* The cost of @n empty idle dispatches on the default context, each inside
 * @compartment (entered and left) or, if it is NULL, bare. Whatever watches
 * the default context (a monitor, a hang monitor) is the caller's. */
static inline BenchSeconds
bench_seconds_for_idle_dispatches (guint         n,
                                   PerfmonGroup *compartment)
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  BenchIdleRun run = { loop, compartment, n };
  gint64 start;
  double cpu_start;

  g_idle_add (compartment != NULL ? bench_idle_in_compartment : bench_idle_plain, &run);
  start = _perfmon_clock_monotonic_ns ();
  cpu_start = bench_process_cpu_seconds ();
  g_main_loop_run (loop);
  return (BenchSeconds) {
    .wall = (double) (_perfmon_clock_monotonic_ns () - start) / 1e9,
    .cpu = bench_process_cpu_seconds () - cpu_start,
  };
}
