/* test-hang-no-eintr.c: a hang's stack is taken without interrupting the hung thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Callbacks that block 400 ms in poll(), nanosleep(), read() on a pipe and
 * g_usleep() hang the loop past the hang threshold (100 ms) and past the
 * jank sampler's thresholds. Each must run its full time with no EINTR,
 * and each hang must still be reported with a stack that names the
 * blocking libc call and the callback, taken through /proc
 * ("StackMethod" = "proc-syscall").
 *
 * A callback that spins 400 ms around short system calls (usleep(0) in a
 * loop) runs: it is not blocked, and /proc catches it in a call it leaves
 * before its stack is read. Its hang still gets a stack that names the
 * spinning function, by a perf sample or, where perf is refused, by the
 * signal (a running thread may be signalled), and the report says which.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-proc-stack-private.h"
#include "perfmon-test-tsan.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-utils.h"

#define BLOCK_MS 400

typedef struct
{
  char         *dir;
  GMainContext *context;
  GMainLoop    *loop;
  PerfmonMonitor *monitor;
  PerfmonHangMonitor *hang_monitor;
  PerfmonHangReport *report;
  gboolean      callback_done;
  int           result;       /* the blocking call's return value */
  int           saved_errno;  /* its errno if it failed */
  gint64        elapsed_us;
  int           pipe_fds[2];
  GThread      *feeder;
  GVariant     *jank;
} Fixture;

/* Exported (-rdynamic) so that dladdr() names them too. */
gboolean block_in_poll (gpointer data);
gboolean block_in_nanosleep (gpointer data);
gboolean block_in_read (gpointer data);
gboolean block_in_g_usleep (gpointer data);

static gpointer
feed_pipe_later (gpointer data)
{
  Fixture *fixture = data;

  g_usleep (BLOCK_MS * 1000);
  g_assert_cmpint (write (fixture->pipe_fds[1], "x", 1), ==, 1);
  return NULL;
}

#define RECORD(fixture, call)                                        \
  G_STMT_START {                                                     \
    gint64 start = g_get_monotonic_time ();                          \
    errno = 0;                                                       \
    (fixture)->result = (call);                                      \
    (fixture)->saved_errno = errno;                                  \
    (fixture)->elapsed_us = g_get_monotonic_time () - start;         \
    (fixture)->callback_done = TRUE;                                 \
  } G_STMT_END

G_GNUC_NO_INLINE gboolean
block_in_poll (gpointer data)
{
  RECORD ((Fixture *) data, poll (NULL, 0, BLOCK_MS));
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
block_in_nanosleep (gpointer data)
{
  struct timespec duration = { 0, BLOCK_MS * 1000 * 1000 };

  RECORD ((Fixture *) data, nanosleep (&duration, NULL));
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
block_in_read (gpointer data)
{
  Fixture *fixture = data;
  char byte;

  fixture->feeder = g_thread_new ("feeder", feed_pipe_later, fixture);
  RECORD (fixture, (int) read (fixture->pipe_fds[0], &byte, 1));
  return G_SOURCE_REMOVE;
}

G_GNUC_NO_INLINE gboolean
block_in_g_usleep (gpointer data)
{
  RECORD ((Fixture *) data, (g_usleep (BLOCK_MS * 1000), 0));
  return G_SOURCE_REMOVE;
}

gboolean spin_in_short_syscalls (gpointer data);

/* Busy, but in and out of the kernel all along: most of its time is
 * nanosleep()'s timer slack. */
G_GNUC_NO_INLINE gboolean
spin_in_short_syscalls (gpointer data)
{
  Fixture *fixture = data;
  gint64 end = g_get_monotonic_time () + BLOCK_MS * 1000;

  while (g_get_monotonic_time () < end)
    usleep (0);
  fixture->callback_done = TRUE;
  return G_SOURCE_REMOVE;
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         Fixture            *fixture)
{
  if (fixture->report == NULL)
    fixture->report = perfmon_hang_report_ref (report);
}

static gboolean
quit_when_done (gpointer data)
{
  Fixture *fixture = data;

  if (fixture->callback_done && fixture->report != NULL)
    {
      g_main_loop_quit (fixture->loop);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

static void
attach_timeout (GMainContext *context,
                GSource      *source,
                GSourceFunc   func,
                gpointer      data)
{
  g_source_set_callback (source, func, data, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
}

typedef struct
{
  GSourceFunc  callback;
  const char  *callback_name;
  /* The libc function the thread blocks in: any of these. */
  const char  *blocking[4];
} Case;

static const Case cases[] = {
  { block_in_poll, "block_in_poll", { "(poll+", "(__poll+", "(__GI___poll+", NULL } },
  { block_in_nanosleep, "block_in_nanosleep", { "clock_nanosleep", NULL } },
  { block_in_read, "block_in_read", { "(read+", "(__libc_read+", "(__read+", NULL } },
  { block_in_g_usleep, "block_in_g_usleep", { "clock_nanosleep", NULL } },
};

static void
run_case (gconstpointer data)
{
  const Case *c = data;
  Fixture fixture = { 0, };
  g_autoptr(GError) error = NULL;
  g_autoptr(GSource) source = NULL;
  g_auto(GStrv) stack = NULL;
  g_autofree char *pings_dir = NULL;
  gboolean names_blocking = FALSE;
  gboolean names_callback = FALSE;

  fixture.dir = test_make_tmp_dir ("perfmon-no-eintr-XXXXXX");
  fixture.context = g_main_context_new ();
  g_main_context_push_thread_default (fixture.context);
  fixture.loop = g_main_loop_new (fixture.context, FALSE);
  fixture.monitor = perfmon_monitor_new (fixture.context);
  fixture.hang_monitor = perfmon_hang_monitor_new (fixture.monitor);
  pings_dir = g_build_filename (fixture.dir, "pings", NULL);
  g_object_set (fixture.hang_monitor, "threshold", 100, "log-dir", fixture.dir,
                "pings-dir", pings_dir, NULL);
  g_signal_connect (fixture.hang_monitor, "hang", G_CALLBACK (on_hang), &fixture);
  g_assert_true (perfmon_hang_monitor_start (fixture.hang_monitor, &error));
  g_assert_no_error (error);

  g_assert_no_errno (pipe (fixture.pipe_fds));
  source = g_timeout_source_new (50);
  g_source_set_name (source, c->callback_name);
  g_source_set_callback (source, c->callback, &fixture, NULL);
  g_source_attach (source, fixture.context);
  attach_timeout (fixture.context, g_timeout_source_new (20), quit_when_done, &fixture);
  attach_timeout (fixture.context, g_timeout_source_new_seconds (30), test_fail_on_timeout,
                  (gpointer) "no hang report, or the callback never ran");
  g_main_loop_run (fixture.loop);
  if (fixture.feeder != NULL)
    g_thread_join (fixture.feeder);

  /* The call ran its full time: no EINTR, whatever the watchdog did. */
  g_test_message ("%s: returned %d (%s) after %" G_GINT64_FORMAT " µs", c->callback_name,
                  fixture.result, g_strerror (fixture.saved_errno), fixture.elapsed_us);
  if (c->callback == block_in_read)
    g_assert_cmpint (fixture.result, ==, 1);
  else
    g_assert_cmpint (fixture.result, ==, 0);
  g_assert_cmpint (fixture.saved_errno, !=, EINTR);
  g_assert_cmpint (fixture.elapsed_us, >=, (BLOCK_MS - 1) * 1000);

  /* And the hang was reported, with the stack it was blocked on, read
   * without a signal. */
  g_assert_nonnull (fixture.report);
  g_assert_cmpstr (perfmon_hang_report_get_annotation (fixture.report, PERFMON_ANNOTATION_STACK_METHOD),
                   ==, "proc-syscall");
  g_assert_null (perfmon_hang_report_get_annotation (fixture.report,
                                                     PERFMON_ANNOTATION_INTERRUPTED_SYSCALL));
  g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (fixture.report));
  stack = perfmon_hang_report_dup_stack (fixture.report);
  for (guint i = 0; stack[i] != NULL; i++)
    {
      g_test_message ("stack[%u] = %s", i, stack[i]);
      for (guint b = 0; c->blocking[b] != NULL; b++)
        names_blocking |= strstr (stack[i], c->blocking[b]) != NULL;
      names_callback |= strstr (stack[i], c->callback_name) != NULL;
    }
  g_assert_true (names_blocking);
  g_assert_true (names_callback);

  perfmon_hang_monitor_stop (fixture.hang_monitor);
  perfmon_hang_report_unref (fixture.report);
  g_object_unref (fixture.hang_monitor);
  g_object_unref (fixture.monitor);
  g_main_loop_unref (fixture.loop);
  g_main_context_pop_thread_default (fixture.context);
  g_main_context_unref (fixture.context);
  close (fixture.pipe_fds[0]);
  close (fixture.pipe_fds[1]);
  test_remove_tree (fixture.dir);
  g_free (fixture.dir);
}

/* Returns whether the stack was taken without a signal. */
static gboolean
run_spin_case (gboolean perf_allowed)
{
  Fixture fixture = { 0, };
  g_autoptr(GError) error = NULL;
  g_autoptr(GSource) source = NULL;
  g_auto(GStrv) stack = NULL;
  g_autofree char *pings_dir = NULL;
  const char *method;
  gboolean names_spinner = FALSE;
  gboolean without_signal;

  /* Where perf is refused, the perf case is the signal case too. */
  if (test_skip_under_tsan ("ThreadSanitizer runs signal handlers at its own safe points, not "
                            "where the thread was"))
    return TRUE;
  _perfmon_perf_stack_set_allowed (perf_allowed);

  fixture.dir = test_make_tmp_dir ("perfmon-no-eintr-XXXXXX");
  fixture.context = g_main_context_new ();
  g_main_context_push_thread_default (fixture.context);
  fixture.loop = g_main_loop_new (fixture.context, FALSE);
  fixture.monitor = perfmon_monitor_new (fixture.context);
  fixture.hang_monitor = perfmon_hang_monitor_new (fixture.monitor);
  pings_dir = g_build_filename (fixture.dir, "pings", NULL);
  g_object_set (fixture.hang_monitor, "threshold", 100, "log-dir", fixture.dir,
                "pings-dir", pings_dir, NULL);
  g_signal_connect (fixture.hang_monitor, "hang", G_CALLBACK (on_hang), &fixture);
  g_assert_true (perfmon_hang_monitor_start (fixture.hang_monitor, &error));
  g_assert_no_error (error);

  source = g_timeout_source_new (50);
  g_source_set_name (source, "spin_in_short_syscalls");
  g_source_set_callback (source, spin_in_short_syscalls, &fixture, NULL);
  g_source_attach (source, fixture.context);
  attach_timeout (fixture.context, g_timeout_source_new (20), quit_when_done, &fixture);
  attach_timeout (fixture.context, g_timeout_source_new_seconds (30), test_fail_on_timeout,
                  (gpointer) "no hang report, or the callback never ran");
  g_main_loop_run (fixture.loop);

  g_assert_nonnull (fixture.report);
  method = perfmon_hang_report_get_annotation (fixture.report, PERFMON_ANNOTATION_STACK_METHOD);
  g_test_message ("stack method: %s; unavailable: %s", method,
                  perfmon_hang_report_get_stack_unavailable_reason (fixture.report));
  g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (fixture.report));
  /* Taken by one of the three methods, and the report says which: by the
   * signal only where perf is refused, or where three perf samples of a
   * few ms never found the thread in user space (the caller tries again). */
  without_signal = g_strcmp0 (method, "perf-sample") == 0 || g_strcmp0 (method, "proc-syscall") == 0;
  g_assert_true (without_signal || g_strcmp0 (method, "signal") == 0);
  if (!perf_allowed || !_perfmon_perf_stack_available ())
    g_assert_cmpstr (method, !=, "perf-sample");
  stack = perfmon_hang_report_dup_stack (fixture.report);
  for (guint i = 0; stack[i] != NULL; i++)
    {
      g_test_message ("stack[%u] = %s", i, stack[i]);
      names_spinner |= strstr (stack[i], "(spin_in_short_syscalls+") != NULL;
    }
  g_assert_true (names_spinner);

  perfmon_hang_monitor_stop (fixture.hang_monitor);
  perfmon_hang_report_unref (fixture.report);
  g_object_unref (fixture.hang_monitor);
  g_object_unref (fixture.monitor);
  g_main_loop_unref (fixture.loop);
  g_main_context_pop_thread_default (fixture.context);
  g_main_context_unref (fixture.context);
  test_remove_tree (fixture.dir);
  g_free (fixture.dir);
  _perfmon_perf_stack_set_allowed (TRUE);
  return without_signal;
}

/* Where perf allows it, the stack is taken without a signal. perf may
 * miss a thread that is in and out of short system calls, and then the
 * capture signals it (it runs): on a loaded machine, once in the full
 * suite. So one of three hangs must be taken without one; a perf path
 * that no longer works fails all three. */
static void
test_spin_perf (void)
{
  guint attempt;

  for (attempt = 1; attempt <= 3; attempt++)
    {
      if (run_spin_case (TRUE) || !_perfmon_perf_stack_available ())
        break;
      g_test_message ("attempt %u: the stack was taken by the signal", attempt);
    }
  if (_perfmon_perf_stack_available ())
    g_assert_cmpuint (attempt, <=, 3);
}

static void
test_spin_signal (void)
{
  run_spin_case (FALSE);
}

/* Jank samples: a callback that polls 20 × 100 ms while the jank sampler
 * takes 6 samples every 50 ms. */
gboolean jank_in_poll (gpointer data);

G_GNUC_NO_INLINE gboolean
jank_in_poll (gpointer data)
{
  Fixture *fixture = data;
  gint64 start = g_get_monotonic_time ();

  fixture->result = 0;
  for (guint i = 0; i < 20; i++)
    {
      errno = 0;
      if (poll (NULL, 0, 100) != 0)
        {
          fixture->result = -1;
          fixture->saved_errno = errno;
        }
    }
  fixture->elapsed_us = g_get_monotonic_time () - start;
  fixture->callback_done = TRUE;
  return G_SOURCE_REMOVE;
}

static void
on_jank (PerfmonHangMonitor *hang_monitor,
         const char         *name,
         GVariant           *params,
         GVariant          **out)
{
  if (*out == NULL)
    *out = g_variant_ref (params);
}

static gboolean
quit_when_jank (gpointer data)
{
  Fixture *fixture = data;

  if (fixture->callback_done && fixture->jank != NULL)
    {
      g_main_loop_quit (fixture->loop);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

static void
test_jank_samples (void)
{
  Fixture fixture = { 0, };
  g_autoptr(GError) error = NULL;
  g_autoptr(GSource) source = NULL;
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GVariant) logs = NULL;
  g_autofree char *tree = NULL;
  g_autofree char *pings_dir = NULL;
  const char *path;

  if (test_run_in_own_process ())
    return;

  fixture.dir = test_make_tmp_dir ("perfmon-no-eintr-XXXXXX");
  fixture.context = g_main_context_new ();
  g_main_context_push_thread_default (fixture.context);
  fixture.loop = g_main_loop_new (fixture.context, FALSE);
  fixture.monitor = perfmon_monitor_new (fixture.context);
  fixture.hang_monitor = perfmon_hang_monitor_new (fixture.monitor);
  pings_dir = g_build_filename (fixture.dir, "pings", NULL);
  g_object_set (fixture.hang_monitor, "threshold", 5000, "log-dir", fixture.dir,
                "pings-dir", pings_dir, NULL);
  g_hash_table_insert (params, "log_type", "1");
  g_hash_table_insert (params, "sample_interval", "50");
  g_hash_table_insert (params, "ignore_startup_time", "3");
  g_hash_table_insert (params, "sample_count", "6");
  g_hash_table_insert (params, "report_times_per_app", "1");
  g_assert_true (perfmon_hang_monitor_set_event_config (fixture.hang_monitor, "MAIN_THREAD_JANK",
                                                        params, &error));
  g_assert_no_error (error);
  g_signal_connect (fixture.hang_monitor, "jank", G_CALLBACK (on_jank), &fixture.jank);
  g_assert_true (perfmon_hang_monitor_start (fixture.hang_monitor, &error));
  g_assert_no_error (error);

  /* After the 3 s start-up window. */
  source = g_timeout_source_new (3300);
  g_source_set_name (source, "jank_in_poll");
  g_source_set_callback (source, jank_in_poll, &fixture, NULL);
  g_source_attach (source, fixture.context);
  attach_timeout (fixture.context, g_timeout_source_new (20), quit_when_jank, &fixture);
  attach_timeout (fixture.context, g_timeout_source_new_seconds (30), test_fail_on_timeout,
                  (gpointer) "no jank event");
  g_main_loop_run (fixture.loop);

  g_test_message ("jank_in_poll: %d (%s) after %" G_GINT64_FORMAT " µs", fixture.result,
                  g_strerror (fixture.saved_errno), fixture.elapsed_us);
  g_assert_cmpint (fixture.result, ==, 0);
  g_assert_cmpint (fixture.elapsed_us, >=, 1999 * 1000);

  /* The samples were taken, through /proc: none failed, and they name the
   * blocking call and the callback. */
  logs = g_variant_lookup_value (fixture.jank, "external_log", G_VARIANT_TYPE_STRING_ARRAY);
  g_assert_nonnull (logs);
  g_variant_get_child (logs, 0, "&s", &path);
  g_assert_true (g_file_get_contents (path, &tree, NULL, NULL));
  g_test_message ("%s", tree);
  g_assert_null (strstr (tree, "failed"));
  g_assert_nonnull (strstr (tree, "poll+"));
  g_assert_nonnull (strstr (tree, "(jank_in_poll+"));

  perfmon_hang_monitor_stop (fixture.hang_monitor);
  g_variant_unref (fixture.jank);
  g_object_unref (fixture.hang_monitor);
  g_object_unref (fixture.monitor);
  g_main_loop_unref (fixture.loop);
  g_main_context_pop_thread_default (fixture.context);
  g_main_context_unref (fixture.context);
  test_remove_tree (fixture.dir);
  g_free (fixture.dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/hang-no-eintr/jank-samples", test_jank_samples);
  g_test_add_func ("/hang-no-eintr/spin-around-short-syscalls/perf", test_spin_perf);
  g_test_add_func ("/hang-no-eintr/spin-around-short-syscalls/signal", test_spin_signal);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/hang-no-eintr/%s", cases[i].callback_name + strlen ("block_in_"));

      g_test_add_data_func (path, &cases[i], run_case);
    }
  return g_test_run ();
}
