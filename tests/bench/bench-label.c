/* bench-label.c: the figures of the label stack
 *
 * Prints, never asserts timings:
 *  1. push+pop of a static label against two bare cycle-counter reads,
 *     interleaved in the same run;
 *  2. push with 41 bytes of dynamic text + pop, against the same;
 *  3. a reader's read of another thread's 10-frame stack (every other
 *     frame with dynamic text), strings built.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"
#include "bench-common.h"
#include "perfmon-label-private.h"

#define BATCH 100000
#define ROUNDS 41
#define READ_BATCH 10000
#define N_FRAMES 10

static double
ns_per_push_pop (const char *dynamic)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < BATCH; i++)
    {
      perfmon_label_push ("bench", dynamic);
      perfmon_label_pop ();
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / BATCH;
}

static void
bench_push_pop (void)
{
  const char *dynamic = "resource://gre/modules/SomeModule.sys.mjs";
  double counter[ROUNDS], plain[ROUNDS], with_dynamic[ROUNDS];
  double median_counter, median_plain, median_dynamic;

  perfmon_label_push ("warm-up", NULL);   /* allocates the stack */
  perfmon_label_pop ();

  for (guint round = 0; round < ROUNDS; round++)
    {
      counter[round] = bench_ns_per_two_counter_reads (BATCH);
      plain[round] = ns_per_push_pop (NULL);
      with_dynamic[round] = ns_per_push_pop (dynamic);
    }

  median_counter = bench_median (counter, ROUNDS);
  median_plain = bench_median (plain, ROUNDS);
  median_dynamic = bench_median (with_dynamic, ROUNDS);
  g_print ("1. push+pop, static label: %.1f ns; two bare counter reads: %.1f ns; "
           "ratio %.2fx  [median of %d x %d]\n",
           median_plain, median_counter, median_plain / median_counter, ROUNDS, BATCH);
  g_print ("2. push+pop, %zu bytes of dynamic text: %.1f ns; ratio %.2fx\n",
           strlen (dynamic), median_dynamic, median_dynamic / median_counter);
}

typedef struct
{
  GMutex             lock;
  GCond              cond;
  PerfmonLabelStack *stack;
  gboolean           done;
} Owner;

static const char *const frame_labels[N_FRAMES] = {
  "main", "g_main_context_dispatch", "idle", "Window::Paint", "Layout",
  "Style", "Text::Shape", "Fonts::Load", "Io::Read", "Decode",
};

static gpointer
owner_thread (gpointer data)
{
  Owner *owner = data;

  for (guint i = 0; i < N_FRAMES; i++)
    perfmon_label_push (frame_labels[i], i % 2 ? "file:///usr/share/some/resource.txt" : NULL);

  g_mutex_lock (&owner->lock);
  owner->stack = _perfmon_label_stack_ref (_perfmon_label_stack_get_current ());
  g_cond_broadcast (&owner->cond);
  while (!owner->done)
    g_cond_wait (&owner->cond, &owner->lock);
  g_mutex_unlock (&owner->lock);

  for (guint i = 0; i < N_FRAMES; i++)
    perfmon_label_pop ();
  return NULL;
}

static void
bench_read (void)
{
  Owner owner = { 0 };
  GThread *thread;
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func (g_free);
  double times[ROUNDS];
  guint n_failed = 0;

  g_mutex_init (&owner.lock);
  g_cond_init (&owner.cond);
  thread = g_thread_new ("owner", owner_thread, &owner);
  g_mutex_lock (&owner.lock);
  while (owner.stack == NULL)
    g_cond_wait (&owner.cond, &owner.lock);
  g_mutex_unlock (&owner.lock);

  for (guint round = 0; round < ROUNDS; round++)
    {
      gint64 start = _perfmon_clock_monotonic_ns ();

      for (guint i = 0; i < READ_BATCH; i++)
        {
          g_ptr_array_set_size (frames, 0);
          if (!_perfmon_label_stack_read (owner.stack, frames, NULL))
            n_failed++;
        }
      times[round] = (double) (_perfmon_clock_monotonic_ns () - start) / READ_BATCH;
    }
  g_assert (frames->len == N_FRAMES);

  g_print ("3. read of a %d-frame stack (5 with dynamic text) from another thread: %.0f ns "
           "[median of %d x %d; %u unstable]\n",
           N_FRAMES, bench_median (times, ROUNDS), ROUNDS, READ_BATCH, n_failed);

  g_mutex_lock (&owner.lock);
  owner.done = TRUE;
  g_cond_broadcast (&owner.cond);
  g_mutex_unlock (&owner.lock);
  g_thread_join (thread);
  _perfmon_label_stack_unref (owner.stack);
  g_mutex_clear (&owner.lock);
  g_cond_clear (&owner.cond);
}

int
main (int   argc,
      char *argv[])
{
  bench_push_pop ();
  bench_read ();
  return 0;
}
