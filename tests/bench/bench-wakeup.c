/* bench-wakeup.c: what one wake-up of a sleeping thread costs in CPU time
 * on this machine, by the size of the process it belongs to
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * perfmon's watchdog sleeps between the deadlines of the stretches it
 * follows, so its CPU is mostly its wake-ups. Inside GNOME Shell (an
 * address space of hundreds of MB) it was charged 100-400 µs per wake-up
 * on the project's VMs, while a timed wake-up in a small program cost
 * tens of µs: on a hypervisor that shadows the guest's page tables,
 * switching to a large address space costs with its size. This prints the
 * CPU time a thread is charged per timed wake-up (a GCond wait with a
 * deadline, as the watchdog's), in a process that has touched 0, 100 and
 * 800 MB, with the process otherwise asleep, and with another of its
 * threads touching its memory now and then. It asserts nothing.
 *
 *   ./_build/tests/bench/bench-wakeup [SLEEP_MS (100)] [WAKE_UPS (20)]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

typedef struct
{
  GMutex   mutex;
  GCond    cond;
  gint64   sleep_us;
  guint    n;
  double   us_per_wakeup;
  gboolean stop;
  char    *memory;
  gsize    size;
} Bench;

static gint64
thread_cpu_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static gpointer
sleeper (gpointer data)
{
  Bench *bench = data;
  gint64 start = thread_cpu_ns ();

  g_mutex_lock (&bench->mutex);
  for (guint i = 0; i < bench->n; i++)
    g_cond_wait_until (&bench->cond, &bench->mutex, g_get_monotonic_time () + bench->sleep_us);
  g_mutex_unlock (&bench->mutex);
  bench->us_per_wakeup = (double) (thread_cpu_ns () - start) / 1000.0 / bench->n;
  return NULL;
}

/* Another thread of the process that touches its memory and sleeps, as
 * a program's main thread does between its dispatches. */
static gpointer
toucher (gpointer data)
{
  Bench *bench = data;

  while (!g_atomic_int_get (&bench->stop))
    {
      for (gsize i = 0; i < bench->size; i += 4096)
        bench->memory[i]++;
      g_usleep (bench->sleep_us * 3 / 2);
    }
  return NULL;
}

static double
measure (gint64    sleep_us,
         guint     n,
         char     *memory,
         gsize     size,
         gboolean  with_toucher)
{
  Bench bench = { .sleep_us = sleep_us, .n = n, .memory = memory, .size = size };
  GThread *other = with_toucher ? g_thread_new ("toucher", toucher, &bench) : NULL;

  g_mutex_init (&bench.mutex);
  g_cond_init (&bench.cond);
  g_thread_join (g_thread_new ("sleeper", sleeper, &bench));
  g_atomic_int_set (&bench.stop, TRUE);
  if (other != NULL)
    g_thread_join (other);
  g_cond_clear (&bench.cond);
  g_mutex_clear (&bench.mutex);
  return bench.us_per_wakeup;
}

int
main (int   argc,
      char *argv[])
{
  gint64 sleep_us = (argc > 1 ? atoi (argv[1]) : 100) * G_GINT64_CONSTANT (1000);
  guint n = argc > 2 ? (guint) atoi (argv[2]) : 20;
  const gsize sizes_mb[] = { 0, 100, 800 };
  g_autofree char *load = NULL;

  g_file_get_contents ("/proc/loadavg", &load, NULL, NULL);
  g_print ("bench-wakeup: CPU per timed wake-up, %u wake-ups %" G_GINT64_FORMAT " ms apart; load %s",
           n, sleep_us / 1000, load != NULL ? load : "?\n");
  for (guint i = 0; i < G_N_ELEMENTS (sizes_mb); i++)
    {
      gsize size = sizes_mb[i] << 20;
      char *memory = size > 0 ? g_malloc (size) : NULL;

      if (memory != NULL)
        memset (memory, 1, size);
      g_print ("  %4zu MB touched: %7.1f us alone, %7.1f us with another thread at work\n", sizes_mb[i],
               measure (sleep_us, n, memory, size, FALSE), measure (sleep_us, n, memory, size, TRUE));
      g_free (memory);
    }
  return 0;
}
