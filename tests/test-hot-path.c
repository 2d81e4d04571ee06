/* test-hot-path.c: enter/leave make no system call and allocate nothing
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <unistd.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-no-syscalls.h"
#include "perfmon-test-tsan.h"
#include "perfmon-tracer-private.h"
#include "perfmon-dispatch-observer-private.h"

#define N_PAIRS 100000

typedef struct
{
  PerfmonMonitor *monitor;
  PerfmonGroup   *outer;
  PerfmonGroup   *inner;
} Nested;

static void
enter_and_leave (gpointer data)
{
  Nested *nested = data;
  guint64 reads_before = _perfmon_monitor_count_cpu_clock_reads (nested->monitor);
  guint64 start = _perfmon_clock_cycles ();
  double elapsed_us;

  for (guint i = 0; i < N_PAIRS; i++)
    {
      perfmon_group_enter (nested->outer);
      perfmon_group_enter (nested->inner);
      perfmon_group_leave (nested->inner);
      perfmon_group_leave (nested->outer);
    }

  /* The CPU clock is read only by measures of 25 µs or more, which these
   * are only when preempted (a handful however loaded the machine), and
   * by an enter when the last reading is the anchor's maximum age old: one
   * per that time, which ThreadSanitizer's slowness makes long. Never one
   * per pair. */
  elapsed_us = (double) (_perfmon_clock_cycles () - start) / _perfmon_clock_cycles_per_us ();
  if (_perfmon_monitor_count_cpu_clock_reads (nested->monitor) - reads_before >
      elapsed_us / _PERFMON_MONITOR_ANCHOR_MAX_AGE_US + N_PAIRS / 100)
    exit_without_runtime (4);
}

static void
test_enter_leave_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      PerfmonMonitor *monitor = perfmon_monitor_new (NULL);
      Nested nested = {
        monitor,
        perfmon_monitor_create_compartment (monitor, "outer", 1, "addon"),
        perfmon_monitor_create_compartment (monitor, "inner", 2, "other"),
      };

      perfmon_group_set_active (nested.outer, TRUE);
      perfmon_group_set_active (nested.inner, TRUE);
      /* Warm up: claims the thread and starts the iteration (which reads
       * the CPU clock, a system call, once). */
      perfmon_group_enter (nested.outer);
      perfmon_group_leave (nested.outer);

      run_without_system_calls_full (enter_and_leave, &nested, TRUE);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* What every traced dispatch records (DISPATCH, BEGIN, END), labels and
 * source events, enough of them to wrap a small buffer many times. */
static void
record_task_events (gpointer data)
{
  for (guint i = 0; i < N_PAIRS; i++)
    {
      PerfmonTaskIds ids;
      PerfmonTaskContext saved;

      if (i % 64 == 0)
        perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
      _perfmon_task_dispatch (&ids, record_task_events);
      _perfmon_task_enter (&ids, &saved);
      perfmon_task_add_label ("task %u of %s", i, "the hot path");
      {
        PERFMON_AUTO_TASK_LABEL ("scope %u", i);
      }
      _perfmon_task_leave (&saved);
      if (i % 64 == 63)
        perfmon_source_event_end ();
    }
}

/* @flight: the flight recorder (overwrites), else a file recording (drops
 * what does not fit). Either way the buffer is far smaller than what is
 * recorded. */
static void
tracer_events_no_syscalls (gboolean flight)
{
  if (UNDER_TSAN)
    {
      /* Each word of the ring is an atomic stored with release ordering:
       * ThreadSanitizer's runtime keeps a sync object for every such
       * address and maps memory for them (mmap) as the ring fills. */
      g_test_skip ("ThreadSanitizer's runtime makes system calls for the ring's atomic words");
      return;
    }
  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *dir = g_dir_make_tmp ("perfmon-hot-path-XXXXXX", &error);
      g_autofree char *path = g_build_filename (dir, "tasks.log", NULL);

      g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
      if (flight)
        g_assert_true (perfmon_tracer_start_flight_recorder (60, &error));
      else
        g_assert_true (perfmon_tracer_start (path, &error));
      g_assert_no_error (error);
      /* Warm up: the thread's first event allocates its buffer and its
       * first ids read the pid. */
      perfmon_task_add_label ("warm-up");
      perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
      perfmon_source_event_end ();

      run_without_system_calls (record_task_events, NULL);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

static void
test_tracer_flight_no_syscalls (void)
{
  tracer_events_no_syscalls (TRUE);
}

static void
test_tracer_file_no_syscalls (void)
{
  tracer_events_no_syscalls (FALSE);
}

/* The tracer's observer of the per-dispatch hook: an attach, then
 * dispatches as core/'s hook reports them (automatic tasks: DISPATCH, NAME,
 * BEGIN, END), of a source it saw attached and of one it did not. */
typedef struct
{
  const PerfmonDispatchObserver *observer;
  GSource                       *known;
  GSource                       *unknown;
} AutoTasks;

static void
record_automatic_tasks (gpointer data)
{
  AutoTasks *auto_tasks = data;

  for (guint i = 0; i < N_PAIRS; i++)
    {
      GSource *source = i % 2 == 0 ? auto_tasks->known : auto_tasks->unknown;
      gpointer token;

      if (i % 64 == 0)
        auto_tasks->observer->attached (auto_tasks->known);
      token = auto_tasks->observer->dispatch_begin (source, "[test] a source's name");
      auto_tasks->observer->dispatch_end (source, token);
    }
}

static void
test_dispatch_observer_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      AutoTasks auto_tasks = { NULL, g_idle_source_new (), g_idle_source_new () };

      g_source_attach (auto_tasks.known, NULL);
      g_source_attach (auto_tasks.unknown, NULL);
      g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
      g_assert_true (perfmon_tracer_start_flight_recorder (60, &error));
      auto_tasks.observer = _perfmon_dispatch_get_observer ();
      g_assert_nonnull (auto_tasks.observer);
      /* Warm up: the thread's buffer and ids, the clock's calibration. */
      record_automatic_tasks (&auto_tasks);

      run_without_system_calls (record_automatic_tasks, &auto_tasks);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* The per-dispatch hook of automatic groups, as GLib calls it: the
 * dispatch function of GLib's idle kind, patched, on the monitored
 * context, in the monitor's iteration. */
typedef struct
{
  GSource *source;
  guint    calls;
} AutoDispatch;

static gboolean
count_call (gpointer data)
{
  ((AutoDispatch *) data)->calls++;
  return G_SOURCE_CONTINUE;
}

static void
dispatch_automatically (gpointer data)
{
  AutoDispatch *auto_dispatch = data;

  for (guint i = 0; i < N_PAIRS; i++)
    auto_dispatch->source->source_funcs->dispatch (auto_dispatch->source, count_call, auto_dispatch);
  if (auto_dispatch->calls < N_PAIRS)
    exit_without_runtime (5);
}

static void
test_automatic_dispatch_no_syscalls (gconstpointer data)
{
  gboolean traced = GPOINTER_TO_INT (data);

  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      GMainContext *context = g_main_context_new ();
      PerfmonMonitor *monitor = perfmon_monitor_new (context);
      AutoDispatch auto_dispatch = { g_idle_source_new (), 0 };

      perfmon_monitor_set_automatic_groups (monitor, TRUE);
      g_source_set_name (auto_dispatch.source, "[test] hot");
      g_source_set_callback (auto_dispatch.source, count_call, &auto_dispatch, NULL);
      g_source_attach (auto_dispatch.source, context);
      if (traced)
        {
          g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
          g_assert_true (perfmon_tracer_start_flight_recorder (60, &error));
        }
      /* Warm up: claims the thread, starts an iteration, finds the
       * monitor, the kind and the source's group. */
      g_main_context_push_thread_default (context);
      for (guint i = 0; i < 3; i++)
        g_main_context_iteration (context, FALSE);
      g_assert_cmpuint (auto_dispatch.calls, ==, 3);
      dispatch_automatically (&auto_dispatch);

      run_without_system_calls_full (dispatch_automatically, &auto_dispatch, TRUE);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/hot-path/enter-leave-no-syscalls", test_enter_leave_no_syscalls);
  g_test_add_func ("/hot-path/tracer-flight-recorder-no-syscalls", test_tracer_flight_no_syscalls);
  g_test_add_func ("/hot-path/tracer-file-no-syscalls", test_tracer_file_no_syscalls);
  g_test_add_func ("/hot-path/dispatch-observer-no-syscalls", test_dispatch_observer_no_syscalls);
  g_test_add_data_func ("/hot-path/automatic-dispatch-no-syscalls", GINT_TO_POINTER (FALSE),
                        test_automatic_dispatch_no_syscalls);
  g_test_add_data_func ("/hot-path/automatic-dispatch-traced-no-syscalls", GINT_TO_POINTER (TRUE),
                        test_automatic_dispatch_no_syscalls);

  return g_test_run ();
}
