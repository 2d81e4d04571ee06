/* test-capture-signal.c: the stack-capture signal reaches only the thread captured
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * To take a thread's stack perfmon sends that thread a signal. A system call
 * that the signal interrupts and that the kernel does not restart (poll(),
 * nanosleep(), sleep()) returns early with EINTR: that is the documented
 * cost for the captured thread (README, "perfmon run --help"). No other
 * thread of the program may see the signal. poll() on a pipe shows both
 * without any timing: it returns EINTR if a signal was handled during it,
 * and 1 when the test writes to the pipe.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* The thread whose stack is taken: waits in poll() too, so that the test
 * sees the signal reach it. */
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

  captured = _perfmon_stack_capture (g_atomic_int_get (&target.tid), CAPTURE_TIMEOUT_MS, stack, &error);
  g_assert_no_error (error);
  g_assert_true (captured);

  /* The captured thread's poll() was cut short... */
  g_assert_cmpint (poller_finish (&target, target_thread), ==, -EINTR);
  /* ...and the other thread's never was: it returns because of the pipe. */
  g_assert_cmpint (poller_finish (&bystander, bystander_thread), ==, 1);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/capture-signal/only-the-captured-thread", test_only_the_captured_thread);
  return g_test_run ();
}
