/* test-thread-watch.c: stuck worker threads, and jank on threads without a main context
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-monitor-private.h"
#include "perfmon-no-syscalls.h"
#include "perfmon-test-dirs.h"
#include "perfmon-timeout-watchdog-private.h"

/* Generous: nothing here asserts timing, only whether something happened
 * within this. A stuck thread takes two periods (6 s) to escalate. */
#define SAFETY_WAIT_S 30

typedef struct
{
  char   *name;
  gint64  thread_id;
  gboolean escalated;
  guint64 silent_ms;
  char   *stack;
  char   *log_path;
} StuckEvent;

static void
stuck_event_free (gpointer data)
{
  StuckEvent *event = data;

  g_free (event->name);
  g_free (event->stack);
  g_free (event->log_path);
  g_free (event);
}

typedef struct
{
  char                 *dir;
  GMainContext         *context;
  PerfmonThreadWatcher *watcher;
  GPtrArray            *events;
  gint                  release;     /* atomic: the worker may go */
  gint64                worker_tid;  /* atomic */
  guint                 period_ms;
} Fixture;

static void
on_stuck (PerfmonThreadWatcher *watcher,
          const char           *name,
          gint64                thread_id,
          gboolean              escalated,
          guint64               silent_ms,
          const char           *stack,
          const char           *log_path,
          Fixture              *fixture)
{
  StuckEvent *event = g_new0 (StuckEvent, 1);

  event->name = g_strdup (name);
  event->thread_id = thread_id;
  event->escalated = escalated;
  event->silent_ms = silent_ms;
  event->stack = g_strdup (stack);
  event->log_path = g_strdup (log_path);
  g_ptr_array_add (fixture->events, event);
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-thread-watch-XXXXXX");
  perfmon_timeout_set_log_dir (fixture->dir);
  fixture->context = g_main_context_new ();
  g_main_context_push_thread_default (fixture->context);
  fixture->watcher = perfmon_thread_watcher_new ();
  fixture->events = g_ptr_array_new_with_free_func (stuck_event_free);
  g_signal_connect (fixture->watcher, "stuck", G_CALLBACK (on_stuck), fixture);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_clear_object (&fixture->watcher);
  g_main_context_pop_thread_default (fixture->context);
  /* Emissions still queued hold the watcher: let them go. */
  while (g_main_context_iteration (fixture->context, FALSE))
    ;
  g_main_context_unref (fixture->context);
  g_ptr_array_unref (fixture->events);
  perfmon_timeout_set_log_dir (NULL);
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

/* Iterates the fixture's context until @n events arrived or the safety
 * wait is over. */
static void
wait_for_events (Fixture *fixture,
                 guint    n,
                 guint    max_s)
{
  gint64 end = g_get_monotonic_time () + (gint64) max_s * G_USEC_PER_SEC;

  while (fixture->events->len < n && g_get_monotonic_time () < end)
    {
      g_main_context_iteration (fixture->context, FALSE);
      g_usleep (10000);
    }
}

/* Global, so that -rdynamic lets dladdr() name it in the stack. */
G_GNUC_NO_INLINE void worker_stuck_in_a_job (Fixture *fixture);
G_GNUC_NO_INLINE void
worker_stuck_in_a_job (Fixture *fixture)
{
  while (!g_atomic_int_get (&fixture->release))
    g_usleep (5000);
  __asm__ __volatile__ ("" ::: "memory");
}

static gpointer
stuck_worker (gpointer data)
{
  Fixture *fixture = data;
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_thread_watcher_register (fixture->watcher, "stuck worker",
                                                  fixture->period_ms, &error));
  g_assert_no_error (error);
  __atomic_store_n (&fixture->worker_tid, _perfmon_timeout_current_tid (), __ATOMIC_RELEASE);
  perfmon_thread_watcher_report ();
  worker_stuck_in_a_job (fixture);
  perfmon_thread_watcher_unregister (fixture->watcher);
  return NULL;
}

static void
test_stuck (Fixture       *fixture,
            gconstpointer  data)
{
  GThread *thread;
  gint64 tid;

  fixture->period_ms = 3000;
  thread = g_thread_new ("stuck-worker", stuck_worker, fixture);
  wait_for_events (fixture, 2, SAFETY_WAIT_S);
  g_atomic_int_set (&fixture->release, TRUE);
  g_thread_join (thread);
  tid = __atomic_load_n (&fixture->worker_tid, __ATOMIC_ACQUIRE);

  g_assert_cmpuint (fixture->events->len, ==, 2);
  for (guint i = 0; i < 2; i++)
    {
      StuckEvent *event = g_ptr_array_index (fixture->events, i);
      g_autofree char *log = NULL;
      g_autoptr(GError) error = NULL;

      g_assert_cmpstr (event->name, ==, "stuck worker");
      g_assert_cmpint (event->thread_id, ==, tid);
      /* First one period of silence, then two. */
      g_assert_cmpint (event->escalated, ==, i == 1);
      g_assert_cmpuint (event->silent_ms, >=, (i + 1) * 3000);
      g_assert_nonnull (event->stack);
      if (strstr (event->stack, "(worker_stuck_in_a_job+") == NULL)
        g_test_message ("stack: %s", event->stack);
      g_assert_nonnull (strstr (event->stack, "(worker_stuck_in_a_job+"));

      g_assert_nonnull (event->log_path);
      g_assert_true (g_str_has_prefix (event->log_path, fixture->dir));
      g_file_get_contents (event->log_path, &log, NULL, &error);
      g_assert_no_error (error);
      g_assert_nonnull (strstr (log, "Thread stuck: stuck worker\n"));
      g_assert_nonnull (strstr (log, i == 0 ? "Level: stuck\n" : "Level: escalated\n"));
      g_assert_nonnull (strstr (log, "(worker_stuck_in_a_job+"));
    }
  g_assert_cmpuint (_perfmon_thread_watcher_count_registrations (), ==, 0);
}

static gpointer
reporting_worker (gpointer data)
{
  Fixture *fixture = data;
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_thread_watcher_register (fixture->watcher, "reporting worker", 0, &error));
  g_assert_no_error (error);
  /* Jobs of 100 ms for longer than a period, a report after each. */
  while (!g_atomic_int_get (&fixture->release))
    {
      g_usleep (100000);
      perfmon_thread_watcher_report ();
    }
  perfmon_thread_watcher_unregister (fixture->watcher);
  return NULL;
}

static void
test_reporting (Fixture       *fixture,
                gconstpointer  data)
{
  GThread *thread = g_thread_new ("reporting-worker", reporting_worker, fixture);
  g_autoptr(GDir) dir = NULL;

  /* Two default periods. */
  wait_for_events (fixture, 1, 6);
  g_atomic_int_set (&fixture->release, TRUE);
  g_thread_join (thread);

  g_assert_cmpuint (fixture->events->len, ==, 0);
  dir = g_dir_open (fixture->dir, 0, NULL);
  g_assert_null (g_dir_read_name (dir));
}

static void
test_register_errors (Fixture       *fixture,
                      gconstpointer  data)
{
  const guint bad_periods[] = { 1, 2999, 15001, G_MAXUINT };
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (bad_periods); i++)
    {
      g_assert_false (perfmon_thread_watcher_register (fixture->watcher, "bad", bad_periods[i], &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, "period_ms"));
      g_assert_nonnull (strstr (error->message, "3000"));
      g_assert_nonnull (strstr (error->message, "15000"));
      g_clear_error (&error);
    }

  g_assert_false (perfmon_thread_watcher_register (fixture->watcher, NULL, 3000, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "name"));
  g_clear_error (&error);
  g_assert_cmpuint (_perfmon_thread_watcher_count_registrations (), ==, 0);

  /* The bounds themselves are allowed; one registration per thread. */
  g_assert_true (perfmon_thread_watcher_register (fixture->watcher, "max", 15000, &error));
  g_assert_no_error (error);
  g_assert_false (perfmon_thread_watcher_register (fixture->watcher, "again", 3000, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "registered already"));
  g_clear_error (&error);
  perfmon_thread_watcher_unregister (fixture->watcher);

  g_assert_true (perfmon_thread_watcher_register (fixture->watcher, "min", 3000, &error));
  g_assert_no_error (error);
  perfmon_thread_watcher_unregister (fixture->watcher);
  g_assert_cmpuint (_perfmon_thread_watcher_count_registrations (), ==, 0);

  /* Reporting unregistered does nothing. */
  perfmon_thread_watcher_report ();
}

static gpointer
exiting_worker (gpointer data)
{
  Fixture *fixture = data;
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_thread_watcher_register (fixture->watcher, "exiting worker", 0, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (_perfmon_thread_watcher_count_registrations (), ==, 1);
  return NULL;   /* without unregistering */
}

static void
test_thread_exit (Fixture       *fixture,
                  gconstpointer  data)
{
  g_thread_join (g_thread_new ("exiting-worker", exiting_worker, fixture));
  g_assert_cmpuint (_perfmon_thread_watcher_count_registrations (), ==, 0);
}

/* --- work units: jank on a thread without a main context ------------------ */

typedef struct
{
  char               *dir;
  GMainContext       *context;
  PerfmonMonitor     *monitor;
  PerfmonHangMonitor *hang_monitor;
  GPtrArray          *reports;
  guint               long_unit_ms;
  gint                done;          /* atomic */
} WorkFixture;

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         WorkFixture        *fixture)
{
  g_ptr_array_add (fixture->reports, perfmon_hang_report_ref (report));
}

G_GNUC_NO_INLINE void long_unit_of_work (guint ms);
G_GNUC_NO_INLINE void
long_unit_of_work (guint ms)
{
  g_usleep ((gulong) ms * 1000);
  __asm__ __volatile__ ("" ::: "memory");
}

static gpointer
unit_worker (gpointer data)
{
  WorkFixture *fixture = data;

  for (guint i = 0; i < 20; i++)
    {
      perfmon_monitor_work_begin (fixture->monitor);
      g_usleep (5000);
      perfmon_monitor_work_end (fixture->monitor);
      /* Idle between units: waiting for the next job. */
      g_usleep (5000);
    }
  if (fixture->long_unit_ms > 0)
    {
      perfmon_monitor_work_begin (fixture->monitor);
      long_unit_of_work (fixture->long_unit_ms);
      perfmon_monitor_work_end (fixture->monitor);
    }
  /* Idle for longer than the threshold: not a hang. */
  g_usleep (400000);
  g_atomic_int_set (&fixture->done, TRUE);
  return NULL;
}

static void
run_units (guint        long_unit_ms,
           WorkFixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *pings = NULL;
  GThread *thread;
  gint64 end;

  fixture->dir = test_make_tmp_dir ("perfmon-work-units-XXXXXX");
  pings = g_build_filename (fixture->dir, "pings", NULL);
  fixture->context = g_main_context_new ();
  g_main_context_push_thread_default (fixture->context);
  fixture->monitor = perfmon_monitor_new (NULL);
  fixture->hang_monitor = perfmon_hang_monitor_new (fixture->monitor);
  fixture->reports = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  fixture->long_unit_ms = long_unit_ms;
  g_object_set (fixture->hang_monitor, "pings-dir", pings, "log-dir", fixture->dir, NULL);
  g_signal_connect (fixture->hang_monitor, "hang", G_CALLBACK (on_hang), fixture);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);

  thread = g_thread_new ("unit-worker", unit_worker, fixture);
  end = g_get_monotonic_time () + SAFETY_WAIT_S * G_USEC_PER_SEC;
  while (!g_atomic_int_get (&fixture->done) && g_get_monotonic_time () < end)
    {
      g_main_context_iteration (fixture->context, FALSE);
      g_usleep (10000);
    }
  g_thread_join (thread);
  /* The report of a hang goes out once the watchdog sees it ended. */
  if (long_unit_ms > 0)
    while (fixture->reports->len == 0 && g_get_monotonic_time () < end)
      {
        g_main_context_iteration (fixture->context, FALSE);
        g_usleep (10000);
      }
  perfmon_hang_monitor_stop (fixture->hang_monitor);
}

static void
work_fixture_clear (WorkFixture *fixture)
{
  g_clear_object (&fixture->hang_monitor);
  g_clear_object (&fixture->monitor);
  g_main_context_pop_thread_default (fixture->context);
  g_main_context_unref (fixture->context);
  g_ptr_array_unref (fixture->reports);
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

static void
test_work_units_jank (void)
{
  WorkFixture fixture = { 0, };
  PerfmonHangReport *report;
  g_auto(GStrv) stack = NULL;
  gboolean found = FALSE;

  run_units (300, &fixture);

  g_assert_cmpuint (fixture.reports->len, ==, 1);
  report = g_ptr_array_index (fixture.reports, 0);
  /* The unit was caught, not the idle time around it. */
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), >=, 128.0);
  g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (report));
  stack = perfmon_hang_report_dup_stack (report);
  for (guint i = 0; stack[i] != NULL; i++)
    found |= strstr (stack[i], "(long_unit_of_work+") != NULL;
  if (!found)
    for (guint i = 0; stack[i] != NULL; i++)
      g_test_message ("stack[%u] = %s", i, stack[i]);
  g_assert_true (found);
  work_fixture_clear (&fixture);
}

static void
test_work_units_short (void)
{
  WorkFixture fixture = { 0, };

  run_units (0, &fixture);
  g_assert_cmpuint (fixture.reports->len, ==, 0);
  work_fixture_clear (&fixture);
}

static void
test_work_units_misuse (void)
{
  g_autoptr(PerfmonMonitor) detached = perfmon_monitor_new (NULL);

  if (g_test_subprocess ())
    {
      perfmon_monitor_work_end (detached);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*no matching perfmon_monitor_work_begin*");
}

static void
test_work_units_misuse_context (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(PerfmonMonitor) attached = perfmon_monitor_new (context);

  if (g_test_subprocess ())
    {
      perfmon_monitor_work_begin (attached);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*has a main context*");
}

/* --- the hot paths: no system call, no allocation ------------------------- */

#define N_HOT 100000

static void
report_many (gpointer data)
{
  for (guint i = 0; i < N_HOT; i++)
    perfmon_thread_watcher_report ();
}

static void
test_report_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      PerfmonThreadWatcher *watcher = perfmon_thread_watcher_new ();

      if (!perfmon_thread_watcher_register (watcher, "hot", 0, NULL))
        g_error ("could not register");
      perfmon_thread_watcher_report ();   /* warm-up */
      /* The watchdog thread started with the registration: let it get
       * past its start-up, which allocates, before the heap is compared.
       * With nothing due its rounds allocate nothing. */
      for (guint i = 0; i < 10000 && _perfmon_timeout_count_rounds () == 0; i++)
        g_usleep (1000);
      run_without_system_calls (report_many, NULL);
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

static void
work_units_many (gpointer data)
{
  PerfmonMonitor *monitor = data;

  for (guint i = 0; i < N_HOT; i++)
    {
      perfmon_monitor_work_begin (monitor);
      perfmon_monitor_work_end (monitor);
    }
}

static void
test_work_units_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      PerfmonMonitor *monitor = perfmon_monitor_new (NULL);
      PerfmonLoopActivity *activity = _perfmon_monitor_get_loop_activity (monitor);

      /* Published as for a watchdog, with none to wake: a watchdog that
       * slept through the idle time before a unit is woken by a system
       * call, by design. */
      g_atomic_int_set (&activity->watched, TRUE);
      perfmon_monitor_work_begin (monitor);   /* warm-up: learns the thread id */
      perfmon_monitor_work_end (monitor);
      g_assert_cmpint (activity->thread_id, !=, 0);
      run_without_system_calls (work_units_many, monitor);
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/thread-watch/stuck", Fixture, NULL, fixture_set_up, test_stuck, fixture_tear_down);
  g_test_add ("/thread-watch/reporting", Fixture, NULL, fixture_set_up, test_reporting,
              fixture_tear_down);
  g_test_add ("/thread-watch/register-errors", Fixture, NULL, fixture_set_up, test_register_errors,
              fixture_tear_down);
  g_test_add ("/thread-watch/thread-exit", Fixture, NULL, fixture_set_up, test_thread_exit,
              fixture_tear_down);
  g_test_add_func ("/work-units/jank", test_work_units_jank);
  g_test_add_func ("/work-units/short", test_work_units_short);
  g_test_add_func ("/work-units/misuse/unbalanced", test_work_units_misuse);
  g_test_add_func ("/work-units/misuse/context", test_work_units_misuse_context);
  g_test_add_func ("/hot-path/report-no-syscalls", test_report_no_syscalls);
  g_test_add_func ("/hot-path/work-units-no-syscalls", test_work_units_no_syscalls);

  return g_test_run ();
}
