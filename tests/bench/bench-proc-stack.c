/* bench-proc-stack.c: what taking a hang's stack costs, and whom
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Prints, asserts nothing:
 * - the time the watchdog spends taking the stack of a thread blocked in
 *   poll() (read through /proc, no signal), and of a thread spinning in
 *   user space (sent the capture signal, or sampled with perf), 30 frames
 *   deep: median and 90th percentile over interleaved rounds;
 * - what the blocked thread did meanwhile: its schedstat (time run, times
 *   scheduled) and context switches before and after all the captures,
 *   which stay the same if taking its stack costs it nothing;
 * - the race left for running threads: a thread that spins 1, 4 or 16 ms
 *   and then blocks 1 ms in poll(), over and over, captured 1000 times:
 *   how many captures took which way, and how many of its poll() calls
 *   failed with EINTR, with perf sampling allowed and not.
 *
 *   meson compile -C _build && ./_build/tests/bench/bench-proc-stack
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-proc-stack-private.h"
#include "perfmon-stack-capture-private.h"

#define DEPTH  30
#define ROUNDS 200

typedef enum { MODE_BLOCK, MODE_SPIN, MODE_ALTERNATE } Mode;

typedef struct
{
  Mode   mode;
  gint   tid;
  gint   stop;
  gint   ready;
  guint  n_polls;
  guint  n_eintr;
  int    pipe_fds[2];   /* MODE_BLOCK: blocks reading it until stopped */
  gint64 spin_us;       /* MODE_ALTERNATE: between polls of 1 ms */
} Target;

static void
spin_us (gint64 us)
{
  gint64 end = g_get_monotonic_time () + us;

  while (g_get_monotonic_time () < end)
    ;
}

G_GNUC_NO_INLINE static void
work (Target *target,
      guint   depth)
{
  if (depth > 0)
    {
      work (target, depth - 1);
      __asm__ __volatile__ ("" ::: "memory");
      return;
    }
  g_atomic_int_set (&target->ready, TRUE);
  while (!g_atomic_int_get (&target->stop))
    {
      switch (target->mode)
        {
        case MODE_BLOCK:
          {
            struct pollfd fd = { .fd = target->pipe_fds[0], .events = POLLIN };

            poll (&fd, 1, -1);
          }
          break;
        case MODE_SPIN:
          break;
        case MODE_ALTERNATE:
          spin_us (target->spin_us);
          target->n_polls++;
          if (poll (NULL, 0, 1) < 0 && errno == EINTR)
            target->n_eintr++;
          break;
        }
    }
}

static gpointer
target_main (gpointer data)
{
  Target *target = data;

  g_atomic_int_set (&target->tid, (gint) syscall (SYS_gettid));
  work (target, DEPTH);
  return NULL;
}

static GThread *
target_start (Target *target)
{
  GThread *thread;

  if (pipe (target->pipe_fds) != 0)
    g_error ("pipe: %s", g_strerror (errno));
  thread = g_thread_new ("bench-target", target_main, target);

  while (!g_atomic_int_get (&target->ready))
    g_usleep (1000);
  g_usleep (20000);
  return thread;
}

/* The watched thread's one-time registration (finding GLib's dispatch
 * record), in µs. */
static gpointer
time_registration (gpointer data)
{
  gint64 start = g_get_monotonic_time ();

  _perfmon_stack_capture_register_thread ();
  *(gint64 *) data = g_get_monotonic_time () - start;
  return NULL;
}

static int
compare_doubles (const void *a,
                 const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static char *
counters (gint tid)
{
  g_autofree char *schedstat = NULL;
  g_autofree char *status = NULL;
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/schedstat", tid);
  g_autofree char *status_path = g_strdup_printf ("/proc/self/task/%d/status", tid);
  const char *switches;

  g_file_get_contents (path, &schedstat, NULL, NULL);
  g_file_get_contents (status_path, &status, NULL, NULL);
  switches = status != NULL ? strstr (status, "voluntary_ctxt_switches") : NULL;
  return g_strdup_printf ("schedstat %s; %s", schedstat != NULL ? g_strstrip (schedstat) : "?",
                          switches != NULL ? g_strdelimit (g_strdup (switches), "\n\t", ' ') : "?");
}

int
main (void)
{
  g_autoptr(GError) error = NULL;
  PerfmonCapturedStack *stack = g_new0 (PerfmonCapturedStack, 1);
  Target blocked = { MODE_BLOCK, }, spinning = { MODE_SPIN, };
  GThread *blocked_thread, *spinning_thread;
  double proc_us[ROUNDS], signal_us[ROUNDS], perf_us[ROUNDS];
  guint proc_frames = 0, signal_frames = 0, perf_frames = 0;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *uptime = NULL;

  if (!_perfmon_stack_capture_init (&error))
    g_error ("%s", error->message);
  g_file_get_contents ("/proc/loadavg", &uptime, NULL, NULL);
  printf ("load average: %s", uptime != NULL ? uptime : "?\n");

  {
    double registration_us[21];

    for (guint i = 0; i < G_N_ELEMENTS (registration_us); i++)
      {
        gint64 us = 0;

        g_thread_join (g_thread_new ("bench-register", time_registration, &us));
        registration_us[i] = (double) us;
      }
    qsort (registration_us, G_N_ELEMENTS (registration_us), sizeof (double), compare_doubles);
    printf ("a watched thread's registration, once per thread: median %.0f µs\n",
            registration_us[G_N_ELEMENTS (registration_us) / 2]);
  }

  blocked_thread = target_start (&blocked);
  spinning_thread = target_start (&spinning);
  /* One untimed capture each: the first one sets libunwind up. */
  _perfmon_stack_capture (blocked.tid, 1000, stack, NULL);
  _perfmon_stack_capture (spinning.tid, 1000, stack, NULL);

  before = counters (blocked.tid);
  for (guint i = 0; i < ROUNDS; i++)
    {
      gint64 start = g_get_monotonic_time ();

      if (!_perfmon_stack_capture (blocked.tid, 1000, stack, &error))
        g_error ("%s", error->message);
      proc_us[i] = (double) (g_get_monotonic_time () - start);
      proc_frames = stack->n_frames;
      if (stack->method != PERFMON_STACK_METHOD_PROC_SYSCALL)
        g_error ("the blocked thread was not read through /proc");

      _perfmon_perf_stack_set_allowed (FALSE);
      start = g_get_monotonic_time ();
      if (!_perfmon_stack_capture (spinning.tid, 1000, stack, &error))
        g_error ("%s", error->message);
      signal_us[i] = (double) (g_get_monotonic_time () - start);
      signal_frames = stack->n_frames;

      _perfmon_perf_stack_set_allowed (TRUE);
      start = g_get_monotonic_time ();
      if (!_perfmon_stack_capture (spinning.tid, 1000, stack, &error))
        g_error ("%s", error->message);
      perf_us[i] = (double) (g_get_monotonic_time () - start);
      perf_frames = stack->method == PERFMON_STACK_METHOD_PERF_SAMPLE ? stack->n_frames : 0;
    }
  after = counters (blocked.tid);
  g_atomic_int_set (&blocked.stop, TRUE);
  if (write (blocked.pipe_fds[1], "x", 1) != 1)
    g_error ("write: %s", g_strerror (errno));
  g_atomic_int_set (&spinning.stop, TRUE);
  g_thread_join (blocked_thread);
  g_thread_join (spinning_thread);

  qsort (proc_us, ROUNDS, sizeof (double), compare_doubles);
  qsort (signal_us, ROUNDS, sizeof (double), compare_doubles);
  qsort (perf_us, ROUNDS, sizeof (double), compare_doubles);
  printf ("blocked in poll(), via /proc (%u frames): median %.0f µs, p90 %.0f µs (%d rounds)\n",
          proc_frames, proc_us[ROUNDS / 2], proc_us[ROUNDS * 9 / 10], ROUNDS);
  printf ("spinning, via signal (%u frames, incl. 4 looks 0.5 ms apart): median %.0f µs, p90 %.0f µs\n",
          signal_frames, signal_us[ROUNDS / 2], signal_us[ROUNDS * 9 / 10]);
  if (perf_frames > 0)
    printf ("spinning, via one perf sample (%u frames, incl. 4 looks 0.5 ms apart): median %.0f µs, p90 %.0f µs\n",
            perf_frames, perf_us[ROUNDS / 2], perf_us[ROUNDS * 9 / 10]);
  else
    printf ("perf sampling not available: %s\n", _perfmon_perf_stack_unavailable_reason ());
  printf ("blocked thread before %d captures: %s\n", ROUNDS + 1, before);
  printf ("blocked thread after:             %s\n", after);

  /* The race: spin, block 1 ms, over and over; with perf sampling where
   * the kernel allows it, and with the signal. */
  for (guint round = 0; round < 6; round++)
    {
      gboolean perf_allowed = round < 3;
      gint64 spin = round % 3 == 0 ? 1000 : round % 3 == 1 ? 4000 : 16000;
      guint by_method[3] = { 0, };   /* proc-syscall, signal, perf-sample */
      guint interrupted = 0, failed = 0;
      GThread *alternating_thread;
      Target alternating = { MODE_ALTERNATE, };

      alternating.spin_us = spin;
      _perfmon_perf_stack_set_allowed (perf_allowed);
      alternating_thread = target_start (&alternating);
      for (guint i = 0; i < 1000; i++)
        {
          g_clear_error (&error);
          if (!_perfmon_stack_capture (alternating.tid, 1000, stack, &error))
            failed++;
          else
            {
              by_method[stack->method - 1]++;
              interrupted += stack->interrupted_syscall;
            }
        }
      g_atomic_int_set (&alternating.stop, TRUE);
      g_thread_join (alternating_thread);
      printf ("%s: spin %" G_GINT64_FORMAT " ms / poll 1 ms, 1000 captures: %u via /proc, %u via perf, %u via signal, "
              "%u failed (%s); the handler saw %u interrupted system calls; the thread saw %u EINTR "
              "in %u poll() calls\n",
              perf_allowed ? "perf allowed" : "perf not allowed", spin / 1000,
              by_method[0], by_method[2], by_method[1], failed,
              failed > 0 && error != NULL ? error->message : "-",
              interrupted, alternating.n_eintr, alternating.n_polls);
    }
  g_free (stack);
  return 0;
}
