/* test-capture-signal.c: taking a stack never interrupts a system call
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A thread blocked in a system call has its stack read through /proc,
 * without a signal: a system call that a signal would end and that the
 * kernel does not restart (poll(), nanosleep()) must not return EINTR, on
 * the captured thread or on any other. poll() on a pipe shows it without
 * any timing: it returns EINTR if a signal was handled during it, and 1 when
 * the test writes to the pipe.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-modules-private.h"
#include "perfmon-stack-capture-private.h"

#define CAPTURE_TIMEOUT_MS 5000

typedef struct
{
  int    pipe_fds[2];
  gint   tid;       /* atomic */
  gint   result;    /* poll()'s return value, or -errno */
} Poller;

static gpointer
poller_thread (gpointer data)
{
  Poller *poller = data;
  struct pollfd fd = { .fd = poller->pipe_fds[0], .events = POLLIN };
  int ret;

  g_atomic_int_set (&poller->tid, (gint) syscall (SYS_gettid));
  ret = poll (&fd, 1, -1);
  return GINT_TO_POINTER (ret < 0 ? -errno : ret);
}

static GThread *
poller_start (Poller *poller)
{
  GThread *thread;

  g_assert_no_errno (pipe (poller->pipe_fds));
  thread = g_thread_new ("poller", poller_thread, poller);
  while (g_atomic_int_get (&poller->tid) == 0)
    g_usleep (1000);
  return thread;
}

static int
poller_finish (Poller  *poller,
               GThread *thread)
{
  int result;

  g_assert_cmpint (write (poller->pipe_fds[1], "x", 1), ==, 1);
  result = GPOINTER_TO_INT (g_thread_join (thread));
  close (poller->pipe_fds[0]);
  close (poller->pipe_fds[1]);
  return result;
}

/* The thread whose stack is taken waits in poll() too. */
static void
test_only_the_captured_thread (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree PerfmonCapturedStack *stack = g_new0 (PerfmonCapturedStack, 1);
  Poller target = { { -1, -1 }, 0, 0 };
  Poller bystander = { { -1, -1 }, 0, 0 };
  GThread *target_thread, *bystander_thread;
  gboolean captured = FALSE;

  g_assert_true (_perfmon_stack_capture_init (&error));
  g_assert_no_error (error);

  bystander_thread = poller_start (&bystander);
  target_thread = poller_start (&target);

  /* Several times: each must leave the poll() alone. */
  for (guint i = 0; i < 20; i++)
    {
      g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
      gboolean names_poll = FALSE;
      gboolean names_thread = FALSE;

      captured = _perfmon_stack_capture (g_atomic_int_get (&target.tid), CAPTURE_TIMEOUT_MS, stack, &error);
      g_assert_no_error (error);
      g_assert_true (captured);
      /* The first capture may catch the thread before its poll(). */
      if (stack->method == PERFMON_STACK_METHOD_SIGNAL)
        {
          g_assert_cmpint (i, ==, 0);
          g_assert_false (stack->interrupted_syscall);
          continue;
        }
      g_assert_cmpint (stack->method, ==, PERFMON_STACK_METHOD_PROC_SYSCALL);
      /* The stack is the blocked one: poll() in libc, called by the
       * thread's function. */
      for (guint f = 0; f < stack->n_frames; f++)
        {
          PerfmonPcInfo info = { 0, };

          _perfmon_modules_describe_pc (modules, stack->pcs[f], f > 0, 0, &info);
          if (info.symbol != NULL && strstr (info.symbol, "poll") != NULL)
            names_poll = TRUE;
          if (info.symbol != NULL && strcmp (info.symbol, "poller_thread") == 0)
            names_thread = TRUE;
          g_free (info.symbol);
        }
      g_assert_true (names_poll);
      g_assert_true (names_thread);
    }

  /* The captured thread's poll() was not cut short, and the other
   * thread's neither: both return because of the pipe. */
  g_assert_cmpint (poller_finish (&target, target_thread), ==, 1);
  g_assert_cmpint (poller_finish (&bystander, bystander_thread), ==, 1);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/capture-signal/no-eintr", test_only_the_captured_thread);
  return g_test_run ();
}
