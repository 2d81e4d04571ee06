/* perfmon-clock-private.h: the cycle counter and the thread CPU clock
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
# include <x86intrin.h>
#endif

G_BEGIN_DECLS

/* CLOCK_MONOTONIC in nanoseconds: the clock the cycle counter is
 * calibrated against, and what task logs and benchmarks measure in. */
static inline gint64
_perfmon_clock_monotonic_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* The cycle counter: a few nanoseconds, no system call. It is only ever
 * compared with readings of the same thread, and each event-loop iteration
 * renormalises it against the thread's real CPU clock, so a counter that is
 * not synchronised across cores costs accuracy only for the iteration in
 * which the thread migrated. */
static inline guint64
_perfmon_clock_cycles (void)
{
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc ();
#elif defined(__aarch64__)
  guint64 value;
  __asm__ __volatile__ ("mrs %0, cntvct_el0" : "=r" (value));
  return value;
#else
  return (guint64) _perfmon_clock_monotonic_ns ();
#endif
}

/* Cycles per microsecond of _perfmon_clock_cycles(), measured once per
 * process against CLOCK_MONOTONIC (2 ms of spinning), or handed down by a
 * parent in PERFMON_CLOCK_HINT_ENV and checked in 0.1 ms. Thread-safe.
 * `perfmon run`'s preload module hands its value down, so that each
 * process of a shell script does not spin 2 ms at start-up. */
#define PERFMON_CLOCK_HINT_ENV "PERFMON_RUN_CYCLES_PER_US"
double  _perfmon_clock_cycles_per_us (void);

static inline guint64
_perfmon_clock_us_to_cycles (gint64 us)
{
  return (guint64) ((double) us * _perfmon_clock_cycles_per_us ());
}

/* The CLOCK_MONOTONIC time, in µs, of the cycle-counter reading @cycles,
 * which another thread may have taken: this assumes the counter is the
 * same on every core (an invariant TSC, as on every x86-64 CPU for years
 * and on KVM). A reading from the future is taken as now. Not for a hot
 * path: it reads both clocks. */
gint64  _perfmon_clock_cycles_to_monotonic_us (guint64 cycles);

/* CPU time consumed by the calling thread, in ns. A real system call
 * (0.35 µs on an idle VM with page-table isolation, more under load):
 * never call it on a hot path. */
gint64  _perfmon_clock_thread_cpu_ns (void);

G_END_DECLS
