/* test-hang-fork.c: hang detection in a child forked without exec
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The watchdog thread of a running hang monitor does not come along into a
 * child forked without exec (only the forking thread does). In the child,
 * perfmon_hang_monitor_stop() on the inherited monitor returns at once,
 * joins nothing and writes nothing of the parent's; start() then runs a
 * watchdog of the child's own, which reports the child's hangs, with
 * their stacks. The parent goes on detecting its own.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-tsan.h"

typedef struct
{
  GMainLoop         *loop;
  PerfmonHangReport *report;
} Waiter;

gboolean hang_in_poll (gpointer data);

G_GNUC_NO_INLINE gboolean
hang_in_poll (gpointer data)
{
  poll (NULL, 0, 300);
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         Waiter             *waiter)
{
  if (waiter->report == NULL)
    waiter->report = perfmon_hang_report_ref (report);
  g_main_loop_quit (waiter->loop);
}

static gboolean
give_up (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

/* Runs one 300 ms hang in poll() on @context and waits for its report
 * (NULL after 20 s). */
static PerfmonHangReport *
hang_once (GMainContext       *context,
           PerfmonHangMonitor *hang_monitor)
{
  Waiter waiter = { g_main_loop_new (context, FALSE), NULL };
  g_autoptr(GSource) hang = g_timeout_source_new (50);
  g_autoptr(GSource) timeout = g_timeout_source_new_seconds (20);
  gulong handler = g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang), &waiter);

  g_source_set_callback (hang, hang_in_poll, NULL, NULL);
  g_source_attach (hang, context);
  g_source_set_callback (timeout, give_up, waiter.loop, NULL);
  g_source_attach (timeout, context);
  g_main_loop_run (waiter.loop);
  g_source_destroy (timeout);
  g_signal_handler_disconnect (hang_monitor, handler);
  g_main_loop_unref (waiter.loop);
  return waiter.report;
}

/* What each thread of the child does, for a failure's message. */
static void
print_threads (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;

  while (dir != NULL && (tid = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *comm = NULL, *wchan = NULL, *call = NULL;
      g_autofree char *base = g_build_filename ("/proc/self/task", tid, NULL);
      g_autofree char *comm_path = g_build_filename (base, "comm", NULL);
      g_autofree char *wchan_path = g_build_filename (base, "wchan", NULL);
      g_autofree char *call_path = g_build_filename (base, "syscall", NULL);

      g_file_get_contents (comm_path, &comm, NULL, NULL);
      g_file_get_contents (wchan_path, &wchan, NULL, NULL);
      g_file_get_contents (call_path, &call, NULL, NULL);
      g_printerr ("child thread %s: %s, wchan %s, syscall %s", tid,
                  comm != NULL ? g_strstrip (comm) : "?", wchan != NULL ? wchan : "?",
                  call != NULL ? call : "?\n");
    }
}

static gboolean
stack_names (PerfmonHangReport *report,
             const char        *function)
{
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);

  for (guint i = 0; stack[i] != NULL; i++)
    if (strstr (stack[i], function) != NULL)
      return TRUE;
  return FALSE;
}

static void
run_forked_child (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-fork-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  g_autoptr(GError) error = NULL;
  GMainContext *context = g_main_context_new ();
  PerfmonMonitor *monitor;
  PerfmonHangMonitor *hang_monitor;
  PerfmonHangReport *report;
  pid_t child;
  int status;

  g_main_context_push_thread_default (context);
  monitor = perfmon_monitor_new (context);
  hang_monitor = perfmon_hang_monitor_new (monitor);
  g_object_set (hang_monitor, "threshold", 100, "pings-dir", pings, "log-dir", dir, NULL);
  g_assert_true (perfmon_hang_monitor_start (hang_monitor, &error));
  g_assert_no_error (error);

  /* The parent's watchdog works, before the fork... */
  report = hang_once (context, hang_monitor);
  g_assert_nonnull (report);
  perfmon_hang_report_unref (report);

  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      gint64 start = g_get_monotonic_time ();

      /* The inherited monitor: stopping it does not wait for the parent's
       * watchdog (a join would block for ever). */
      perfmon_hang_monitor_stop (hang_monitor);
      if (g_get_monotonic_time () - start > 5 * G_USEC_PER_SEC)
        _exit (10);
      if (!perfmon_hang_monitor_start (hang_monitor, NULL))
        _exit (11);
      report = hang_once (context, hang_monitor);
      if (report == NULL)
        {
          print_threads ();
          _exit (12);
        }
      if (g_strcmp0 (perfmon_hang_report_get_annotation (report, PERFMON_ANNOTATION_STACK_METHOD),
                     "proc-syscall") != 0)
        {
          g_printerr ("child: %s: %s\n",
                      perfmon_hang_report_get_annotation (report, PERFMON_ANNOTATION_STACK_METHOD),
                      perfmon_hang_report_get_stack_unavailable_reason (report));
          _exit (13);
        }
      if (!stack_names (report, "(hang_in_poll+") || !stack_names (report, "poll+"))
        _exit (14);
      perfmon_hang_monitor_stop (hang_monitor);
      _exit (0);
    }

  /* ...and after it, while the child runs. */
  report = hang_once (context, hang_monitor);
  g_assert_nonnull (report);
  g_assert_true (stack_names (report, "(hang_in_poll+"));
  perfmon_hang_report_unref (report);

  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);

  perfmon_hang_monitor_stop (hang_monitor);
  g_object_unref (hang_monitor);
  g_object_unref (monitor);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
  test_remove_tree (dir);
}

static void
test_forked_child (void)
{
  /* ThreadSanitizer does not support starting threads in a child forked
   * from a process with threads: the very case this test is about. */
  if (test_skip_under_tsan ("ThreadSanitizer cannot start threads after a multi-threaded fork"))
    return;
  run_forked_child ();
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/hang-fork/forked-child", test_forked_child);
  return g_test_run ();
}
