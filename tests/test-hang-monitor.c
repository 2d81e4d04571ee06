/* test-hang-monitor.c: the watchdog, hang reports and pings
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define _GNU_SOURCE
#include "config.h"

#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-test-utils.h"
#include "perfmon-test-dirs.h"
#include "perfmon-hang-monitor-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-proc-stack-private.h"
#include "perfmon-task-file-test.h"
#include "perfmon-test-tsan.h"

#define PERFMON_LABEL_MAX_TEST_DEPTH 200

typedef struct
{
  char               *dir;
  char               *pings_dir;
  GMainContext       *context;
  GMainLoop          *loop;
  PerfmonMonitor     *monitor;
  PerfmonHangMonitor *hang_monitor;
  GPtrArray          *reports;
  GPtrArray          *pings;
} Fixture;

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         Fixture            *fixture)
{
  g_ptr_array_add (fixture->reports, perfmon_hang_report_ref (report));
  g_main_loop_quit (fixture->loop);
}

static void
on_ping (PerfmonHangMonitor *hang_monitor,
         const char         *path,
         Fixture            *fixture)
{
  g_ptr_array_add (fixture->pings, g_strdup (path));
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  fixture->pings_dir = g_build_filename (fixture->dir, "pings", NULL);
  fixture->context = g_main_context_new ();
  g_main_context_push_thread_default (fixture->context);
  fixture->loop = g_main_loop_new (fixture->context, FALSE);
  fixture->monitor = perfmon_monitor_new (fixture->context);
  fixture->hang_monitor = perfmon_hang_monitor_new (fixture->monitor);
  g_object_set (fixture->hang_monitor,
                "pings-dir", fixture->pings_dir,
                "log-dir", fixture->dir,
                NULL);
  fixture->reports = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  fixture->pings = g_ptr_array_new_with_free_func (g_free);
  g_signal_connect (fixture->hang_monitor, "hang", G_CALLBACK (on_hang), fixture);
  g_signal_connect (fixture->hang_monitor, "ping", G_CALLBACK (on_ping), fixture);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  g_clear_object (&fixture->hang_monitor);
  g_clear_object (&fixture->monitor);
  g_main_loop_unref (fixture->loop);
  g_main_context_pop_thread_default (fixture->context);
  g_main_context_unref (fixture->context);
  g_ptr_array_unref (fixture->reports);
  g_ptr_array_unref (fixture->pings);
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
  g_free (fixture->pings_dir);
}

static void
spin_ms (guint ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

/* Global, so that -rdynamic puts it in the dynamic symbol table, where
 * dladdr() finds it. */
G_GNUC_NO_INLINE void hang_in_labelled_function (guint ms);

G_GNUC_NO_INLINE void
hang_in_labelled_function (guint ms)
{
  PERFMON_AUTO_LABEL_DYNAMIC ("spell check", "en_GB");

  spin_ms (ms);
  /* Keep the call above from becoming a tail call, which would take this
   * function's frame off the stack. */
  __asm__ __volatile__ ("" ::: "memory");
}

static gboolean
hang_once (gpointer data)
{
  hang_in_labelled_function (GPOINTER_TO_UINT (data));
  return G_SOURCE_REMOVE;
}

static void
add_named_source (GMainContext *context,
                  const char   *name,
                  GSourceFunc   func,
                  gpointer      data,
                  guint         delay_ms)
{
  g_autoptr(GSource) source = delay_ms > 0 ? g_timeout_source_new (delay_ms) : g_idle_source_new ();

  g_source_set_name (source, name);
  g_source_set_callback (source, func, data, NULL);
  g_source_attach (source, context);
}


static guint
add_watchdog_timeout (GMainContext *context,
                      guint         seconds,
                      const char   *what)
{
  g_autoptr(GSource) source = g_timeout_source_new_seconds (seconds);

  g_source_set_callback (source, test_fail_on_timeout, (gpointer) what, NULL);
  return g_source_attach (source, context);
}

static JsonNode *
parse_json (const char *text)
{
  g_autoptr(GError) error = NULL;
  JsonNode *node = json_from_string (text, &error);

  g_assert_no_error (error);
  g_assert_nonnull (node);
  return node;
}

/* Every native frame of @stack refers to a module of @modules, or to none
 * (-1), with a hex offset. */
static void
assert_frames_valid (JsonArray *stack,
                     JsonArray *modules)
{
  for (guint i = 0; i < json_array_get_length (stack); i++)
    {
      JsonNode *entry = json_array_get_element (stack, i);

      if (JSON_NODE_HOLDS_ARRAY (entry))
        {
          JsonArray *frame = json_node_get_array (entry);
          gint64 index = json_array_get_int_element (frame, 0);
          const char *offset = json_array_get_string_element (frame, 1);

          g_assert_cmpuint (json_array_get_length (frame), ==, 2);
          g_assert_true (index == -1 || (index >= 0 && index < json_array_get_length (modules)));
          g_assert_true (offset[0] != '\0');
          for (const char *c = offset; *c != '\0'; c++)
            g_assert_true (g_ascii_isxdigit (*c));
        }
      else
        g_assert_true (JSON_NODE_HOLDS_VALUE (entry));
    }
}

/* A report that could not be saved (here: the store's pending directory
 * replaced by a file, as good as a full disk even for root) is still
 * emitted, and says it was not saved. */
static void
test_not_saved (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *pending_root = g_build_filename (fixture->pings_dir, "pending", NULL);
  g_autoptr(GDir) dir = NULL;
  const char *name;
  PerfmonHangReport *report;
  guint n_replaced = 0;

  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);

  dir = g_dir_open (pending_root, 0, &error);
  g_assert_no_error (error);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (pending_root, name, NULL);

      if (g_str_equal (name, "corrupt"))
        continue;
      test_remove_tree (path);
      g_file_set_contents (path, "in the way", -1, &error);
      g_assert_no_error (error);
      n_replaced++;
    }
  g_assert_cmpuint (n_replaced, ==, 1);

  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*Could not save a hang report*");
  add_named_source (fixture->context, "not-saved-idle", hang_once, GUINT_TO_POINTER (300), 50);
  add_watchdog_timeout (fixture->context, 10, "no hang report");
  g_main_loop_run (fixture->loop);
  g_test_assert_expected_messages ();

  g_assert_cmpuint (fixture->reports->len, >=, 1);
  report = g_ptr_array_index (fixture->reports, 0);
  g_assert_nonnull (perfmon_hang_report_get_annotation (report, "NotSaved"));
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*Could not write the hang ping*");
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  g_test_assert_expected_messages ();
}

static void
test_hang_report (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = NULL;
  g_autofree char *json = NULL;
  g_auto(GStrv) stack = NULL;
  PerfmonHangReport *report;
  const char * const *pseudo;
  JsonObject *object;
  gboolean found_function = FALSE;
  gint label_position = -1;
  gint function_position = -1;

  perfmon_annotate ("UserInteracting", "true");
  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);

  add_named_source (fixture->context, "spell-check-idle", hang_once, GUINT_TO_POINTER (300), 50);
  add_watchdog_timeout (fixture->context, 10, "no hang report");
  g_main_loop_run (fixture->loop);
  perfmon_annotate ("UserInteracting", NULL);

  g_assert_cmpuint (fixture->reports->len, ==, 1);
  report = g_ptr_array_index (fixture->reports, 0);
  /* The seed's "thread": the OS thread's name, not the thread group's. */
  {
    g_autofree char *comm = NULL;

    g_assert_true (g_file_get_contents ("/proc/thread-self/comm", &comm, NULL, NULL));
    g_assert_cmpstr (perfmon_hang_report_get_thread (report), ==, g_strstrip (comm));
  }
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), >=, 295.0);
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), <, 2000.0);
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (report), ==, "spell-check-idle");
  g_assert_cmpstr (perfmon_hang_report_get_process_type (report), ==, "default");
  g_assert_null (perfmon_hang_report_get_remote_type (report));
  g_assert_cmpstr (perfmon_hang_report_get_annotation (report, "UserInteracting"), ==, "true");
  g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (report));

  pseudo = perfmon_hang_report_get_pseudo_stack (report);
  g_assert_nonnull (pseudo);
  g_assert_cmpstr (pseudo[0], ==, "spell check en_GB");
  g_assert_null (pseudo[1]);

  /* The interleaved stack names the function, and the label comes right
   * after the function that pushed it. */
  stack = perfmon_hang_report_dup_stack (report);
  for (guint i = 0; stack[i] != NULL; i++)
    {
      if (g_str_equal (stack[i], "spell check en_GB"))
        label_position = (gint) i;
      if (strstr (stack[i], "(hang_in_labelled_function+") != NULL)
        {
          found_function = TRUE;
          function_position = (gint) i;
        }
    }
  if (!found_function || label_position != function_position + 1)
    for (guint i = 0; stack[i] != NULL; i++)
      g_test_message ("stack[%u] = %s", i, stack[i]);
  g_assert_true (found_function);
  g_assert_cmpint (label_position, ==, function_position + 1);

  json = perfmon_hang_report_to_json (report);
  node = parse_json (json);
  object = json_node_get_object (node);
  g_assert_cmpstr (json_object_get_string_member (object, "runnableName"), ==, "spell-check-idle");
  g_assert_true (json_object_get_null_member (object, "remoteType"));
  assert_frames_valid (json_object_get_array_member (object, "stack"),
                       json_object_get_array_member (object, "modules"));
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (object, "modules")), >, 0);

  /* Caught within the threshold and a margin for a loaded machine. */
  g_assert_cmpint (_perfmon_hang_monitor_get_last_detection_latency_us (fixture->hang_monitor), >=, 100000);
  g_assert_cmpint (_perfmon_hang_monitor_get_last_detection_latency_us (fixture->hang_monitor), <, 1000000);
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static gboolean
work_20_ms_30_times (gpointer data)
{
  static guint runs;

  spin_ms (20);
  if (++runs < 30)
    return G_SOURCE_CONTINUE;
  runs = 0;
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static void
test_short_stretches_are_not_hangs (Fixture       *fixture,
                                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  g_object_set (fixture->hang_monitor, "threshold", 200, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));

  /* Many iterations of 20 ms each (one source, dispatched once per
   * iteration) add up to far more than the threshold, but none of them is
   * a hang. */
  add_named_source (fixture->context, "short", work_20_ms_30_times, fixture->loop, 0);
  g_main_loop_run (fixture->loop);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 300);
  g_main_loop_run (fixture->loop);

  g_assert_cmpuint (fixture->reports->len, ==, 0);
  g_assert_cmpuint (_perfmon_hang_monitor_count_hangs (fixture->hang_monitor), ==, 0);
}

static gboolean
deliberate_wait (gpointer data)
{
  PERFMON_AUTO_DELIBERATE_WAIT ();

  g_usleep (400 * 1000);
  return G_SOURCE_REMOVE;
}

static void
test_deliberate_wait (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));

  add_named_source (fixture->context, "modal wait", deliberate_wait, NULL, 20);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 700);
  g_main_loop_run (fixture->loop);

  g_assert_cmpuint (fixture->reports->len, ==, 0);

  /* And a real hang after it is still caught. */
  add_named_source (fixture->context, "after the wait", hang_once, GUINT_TO_POINTER (250), 10);
  add_watchdog_timeout (fixture->context, 10, "no hang after the deliberate wait");
  g_main_loop_run (fixture->loop);
  g_assert_cmpuint (fixture->reports->len, ==, 1);
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (g_ptr_array_index (fixture->reports, 0)),
                   ==, "after the wait");
}

static void
test_idle_wakeups (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  guint64 before;

  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  /* One short busy stretch, then two idle seconds. */
  add_named_source (fixture->context, "work", hang_once, GUINT_TO_POINTER (5), 10);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 100);
  g_main_loop_run (fixture->loop);

  before = _perfmon_hang_monitor_count_wakeups (fixture->hang_monitor);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 2000);
  g_main_loop_run (fixture->loop);

  /* The loop slept in one poll: the watchdog woke when it returned, and
   * at most once more for the short stretch that followed. */
  g_assert_cmpuint (_perfmon_hang_monitor_count_wakeups (fixture->hang_monitor) - before, <=, 2);
}

static gboolean
spin_2_ms (gpointer data)
{
  spin_ms (2);
  return G_SOURCE_CONTINUE;
}

/* Runs the loop for @run_ms with a timeout every @period_ms that works
 * 2 ms: the wake-ups the watched thread sent the watchdog meanwhile, and
 * the stretches. */
static void
run_periodic (Fixture *fixture,
              guint    period_ms,
              guint    run_ms,
              guint64 *wakes,
              guint64 *stretches)
{
  PerfmonLoopActivity *activity = _perfmon_monitor_get_loop_activity (fixture->monitor);
  g_autoptr(GSource) periodic = g_timeout_source_new (period_ms);
  guint64 wakes_before, stretches_before;

  wakes_before = __atomic_load_n (&activity->n_wakes, __ATOMIC_SEQ_CST);
  stretches_before = __atomic_load_n (&activity->n_stretches, __ATOMIC_ACQUIRE);

  g_source_set_callback (periodic, spin_2_ms, NULL, NULL);
  g_source_attach (periodic, fixture->context);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, run_ms);
  g_main_loop_run (fixture->loop);
  g_source_destroy (periodic);

  *wakes = __atomic_load_n (&activity->n_wakes, __ATOMIC_SEQ_CST) - wakes_before;
  *stretches = __atomic_load_n (&activity->n_stretches, __ATOMIC_ACQUIRE) - stretches_before;
  g_test_message ("every %u ms: %" G_GUINT64_FORMAT " wake-ups for %" G_GUINT64_FORMAT " stretches",
                  period_ms, *wakes, *stretches);
}

/* In a loop that wakes seldom (a stretch a threshold or more after the one
 * before), the thread wakes the watchdog at each stretch's end as well as
 * at its start, so that the watchdog does not wake at the stretch's
 * deadline after the loop went to sleep, a dear wake-up in a large
 * process on some hypervisors (tests/bench/bench-wakeup). In a loop that
 * wakes often, stretch ends wake no one: the thread's system calls for the
 * watchdog stay under 1000 / threshold_ms a second. */
static void
test_sparse_stretch_end_wakeups (Fixture       *fixture,
                                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  guint64 wakes, stretches;

  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  add_named_source (fixture->context, "settle", quit_loop, fixture->loop, 300);
  g_main_loop_run (fixture->loop);

  /* Every 250 ms: sparse. At most one wake-up at the start and one at
   * the end of each stretch; more than one per stretch: some came at
   * ends. */
  run_periodic (fixture, 250, 1400, &wakes, &stretches);
  g_assert_cmpuint (wakes, >, stretches);
  g_assert_cmpuint (wakes, <=, 2 * stretches);

  /* Every 5 ms: no stretch is sparse, and the watchdog, asleep until a
   * deadline, is seldom woken at all. */
  run_periodic (fixture, 5, 600, &wakes, &stretches);
  g_assert_cmpuint (stretches, >=, 20);
  g_assert_cmpuint (wakes, <, stretches / 2);
  g_assert_cmpuint (fixture->reports->len, ==, 0);
}

static void
test_start_errors (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(PerfmonMonitor) detached = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (context);
  g_autoptr(PerfmonHangMonitor) first = perfmon_hang_monitor_new (monitor);
  g_autoptr(PerfmonHangMonitor) second = perfmon_hang_monitor_new (monitor);
  g_autoptr(PerfmonHangMonitor) without_context = perfmon_hang_monitor_new (detached);
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);

  g_object_set (first, "pings-dir", pings, NULL);
  g_object_set (second, "pings-dir", pings, NULL);

  /* A monitor without a context is watched through its work units. */
  g_object_set (without_context, "pings-dir", pings, NULL);
  g_assert_true (perfmon_hang_monitor_start (without_context, &error));
  g_assert_no_error (error);
  perfmon_hang_monitor_stop (without_context);

  g_assert_true (perfmon_hang_monitor_start (first, &error));
  g_assert_no_error (error);
  g_assert_false (perfmon_hang_monitor_start (second, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  perfmon_hang_monitor_stop (first);

  /* Once the first stopped, the second may watch. */
  g_assert_true (perfmon_hang_monitor_start (second, &error));
  g_assert_no_error (error);
  perfmon_hang_monitor_stop (second);
  test_remove_tree (dir);
}

/* A program that already has a handler on SIGRTMIN+3, the signal perfmon
 * takes stacks with first (issue 26: start() failed, and the program had
 * no hang detection at all): the hang monitor starts, takes the next free
 * real-time signal, reports a hang with its stack, and the program's
 * handler is still the one that runs. In a subprocess: the signal is
 * chosen once per process. test-stack-capture's
 * /stack-capture/foreign-handler and /stack-capture/no-free-signal test
 * the choice itself. */
static volatile sig_atomic_t foreign_signals;

static void
foreign_handler (int signo)
{
  foreign_signals++;
}

static void
test_capture_signal_taken (Fixture       *fixture,
                           gconstpointer  data)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      g_auto(GStrv) stack = NULL;
      struct sigaction action;
      PerfmonHangReport *report;
      gboolean found_function = FALSE;

      memset (&action, 0, sizeof action);
      action.sa_handler = foreign_handler;
      g_assert_cmpint (sigaction (SIGRTMIN + 3, &action, NULL), ==, 0);

      g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
      g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
      g_assert_no_error (error);
      add_named_source (fixture->context, "spell-check-idle", hang_once, GUINT_TO_POINTER (300), 50);
      add_watchdog_timeout (fixture->context, 10, "no hang report");
      g_main_loop_run (fixture->loop);

      g_assert_cmpuint (fixture->reports->len, ==, 1);
      report = g_ptr_array_index (fixture->reports, 0);
      g_assert_cmpstr (perfmon_hang_report_get_runnable_name (report), ==, "spell-check-idle");
      g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (report));
      stack = perfmon_hang_report_dup_stack (report);
      for (guint i = 0; stack[i] != NULL; i++)
        found_function |= strstr (stack[i], "(hang_in_labelled_function+") != NULL;
      g_assert_true (found_function);

      g_assert_cmpint (raise (SIGRTMIN + 3), ==, 0);
      g_assert_cmpint (foreign_signals, ==, 1);
      return;
    }
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

/* perfmon run's hang monitor steps aside for the program's own, and
 * watches again when the program's stops; a monitor that does not step
 * aside keeps the rule (one hang monitor per monitor). */
typedef struct
{
  guint               calls;
  PerfmonHangMonitor *successor;
} StepAside;

static void
on_step_aside (PerfmonHangMonitor *self,
               PerfmonHangMonitor *successor,
               gpointer            data)
{
  StepAside *record = data;

  g_assert_false (perfmon_hang_monitor_is_running (self));
  record->calls++;
  record->successor = successor;
}

static void
test_step_aside (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (context);
  g_autoptr(PerfmonHangMonitor) run = perfmon_hang_monitor_new (monitor);
  g_autoptr(PerfmonHangMonitor) program = perfmon_hang_monitor_new (monitor);
  g_autoptr(PerfmonHangMonitor) third = perfmon_hang_monitor_new (monitor);
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  StepAside record = { 0 };

  g_object_set (run, "pings-dir", pings, NULL);
  g_object_set (program, "pings-dir", pings, NULL);
  g_object_set (third, "pings-dir", pings, NULL);
  _perfmon_hang_monitor_set_step_aside (run, on_step_aside, &record);

  g_assert_true (perfmon_hang_monitor_start (run, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_hang_monitor_start (program, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (record.calls, ==, 1);
  g_assert_true (record.successor == program);
  g_assert_false (perfmon_hang_monitor_is_running (run));
  g_assert_true (perfmon_hang_monitor_is_running (program));

  /* The program's does not step aside. */
  g_assert_false (perfmon_hang_monitor_start (third, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);

  perfmon_hang_monitor_stop (program);
  g_assert_cmpuint (record.calls, ==, 2);
  g_assert_null (record.successor);
  g_assert_true (perfmon_hang_monitor_is_running (run));

  /* Its last reference stops it too. */
  g_assert_true (perfmon_hang_monitor_start (program, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (record.calls, ==, 3);
  g_clear_object (&program);
  g_assert_cmpuint (record.calls, ==, 4);
  g_assert_true (perfmon_hang_monitor_is_running (run));

  perfmon_hang_monitor_stop (run);
  test_remove_tree (dir);
}

/* perfmon watches at most 32 main contexts at once (a poll function each):
 * a hang monitor on the monitor of one more says so. In a subprocess: the
 * slots are the process's. */
static void
test_start_unwatched_context (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GPtrArray) monitors = g_ptr_array_new_with_free_func (g_object_unref);
      g_autoptr(GPtrArray) contexts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_main_context_unref);
      g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
      g_autoptr(GError) error = NULL;
      PerfmonMonitor *last;

      for (guint i = 0; i < 32; i++)
        {
          g_ptr_array_add (contexts, g_main_context_new ());
          g_ptr_array_add (monitors, perfmon_monitor_new (g_ptr_array_index (contexts, i)));
        }
      g_ptr_array_add (contexts, g_main_context_new ());
      g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*more than 32 monitored main contexts*");
      last = perfmon_monitor_new (g_ptr_array_index (contexts, 32));
      g_test_assert_expected_messages ();
      g_ptr_array_add (monitors, last);

      hang_monitor = perfmon_hang_monitor_new (last);
      g_assert_false (perfmon_hang_monitor_start (hang_monitor, &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
      g_assert_nonnull (strstr (error->message, "no more than 32 main contexts"));
      g_assert_null (strstr (error->message, "made with a GMainContext"));
      return;
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

static void
test_event_config (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;

  g_hash_table_insert (params, "log_type", "1");
  g_hash_table_insert (params, "sample_interval", "40");
  g_assert_false (perfmon_hang_monitor_set_event_config (fixture->hang_monitor, "MAIN_THREAD_JANK",
                                                         params, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "sample_interval"));
  g_assert_nonnull (strstr (error->message, "50"));
  g_assert_nonnull (strstr (error->message, "500"));
  g_clear_error (&error);

  g_assert_false (perfmon_hang_monitor_set_event_config (fixture->hang_monitor, "APP_FREEZE",
                                                         NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_UNKNOWN_EVENT);
  g_clear_error (&error);

  g_hash_table_insert (params, "sample_interval", "100");
  g_hash_table_insert (params, "ignore_startup_time", "3");
  g_hash_table_insert (params, "sample_count", "21");
  g_hash_table_insert (params, "report_times_per_app", "1");
  g_assert_true (perfmon_hang_monitor_set_event_config (fixture->hang_monitor, "MAIN_THREAD_JANK",
                                                        params, &error));
  g_assert_no_error (error);

  /* report_times_per_app is the process's, set once: not again through
   * this monitor or another. */
  {
    g_autoptr(PerfmonMonitor) other_monitor = perfmon_monitor_new (fixture->context);
    g_autoptr(PerfmonHangMonitor) other = perfmon_hang_monitor_new (other_monitor);

    g_hash_table_insert (params, "report_times_per_app", "3");
    g_assert_false (perfmon_hang_monitor_set_event_config (other, "MAIN_THREAD_JANK", params, &error));
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull (strstr (error->message, "report_times_per_app"));
    g_clear_error (&error);
  }
}

static JsonObject *
load_json_object (const char *path,
                  JsonParser *parser)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (parser));
}

static void
assert_no_temporary_files (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  if (dir == NULL)
    return;
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      g_assert_false (g_str_has_prefix (name, "."));
      g_assert_false (g_str_has_suffix (name, ".tmp"));
      if (g_file_test (child, G_FILE_TEST_IS_DIR))
        assert_no_temporary_files (child);
    }
}

static void
test_ping_batching (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *ping;
  JsonObject *payload;
  JsonArray *hangs;

  g_object_set (fixture->hang_monitor, "threshold", 60, "hangs-per-ping", 2, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));

  add_named_source (fixture->context, "first", hang_once, GUINT_TO_POINTER (150), 10);
  add_watchdog_timeout (fixture->context, 10, "first hang");
  g_main_loop_run (fixture->loop);
  g_assert_cmpuint (fixture->reports->len, ==, 1);
  g_assert_cmpuint (fixture->pings->len, ==, 0);

  add_named_source (fixture->context, "second", hang_once, GUINT_TO_POINTER (150), 10);
  add_watchdog_timeout (fixture->context, 10, "second hang");
  g_main_loop_run (fixture->loop);
  g_assert_cmpuint (fixture->reports->len, ==, 2);
  /* The ping is queued right after the hang that completed it. */
  while (fixture->pings->len == 0 && g_main_context_iteration (fixture->context, TRUE))
    ;
  g_assert_cmpuint (fixture->pings->len, ==, 1);

  ping = load_json_object (g_ptr_array_index (fixture->pings, 0), parser);
  g_assert_cmpstr (json_object_get_string_member (ping, "type"), ==, "bhr");
  g_assert_cmpint (json_object_get_int_member (ping, "version"), ==, 4);
  payload = json_object_get_object_member (ping, "payload");
  hangs = json_object_get_array_member (payload, "hangs");
  g_assert_cmpuint (json_array_get_length (hangs), ==, 2);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (hangs, 0), "runnableName"),
                   ==, "first");
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (hangs, 1), "runnableName"),
                   ==, "second");
  for (guint i = 0; i < 2; i++)
    assert_frames_valid (json_object_get_array_member (json_array_get_object_element (hangs, i), "stack"),
                         json_object_get_array_member (payload, "modules"));
  assert_no_temporary_files (fixture->pings_dir);

  /* Nothing pending: stop writes no ping. */
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  g_assert_cmpuint (fixture->pings->len, ==, 1);
}

static void
test_flush_ping (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  g_autofree char *empty = NULL;

  g_object_set (fixture->hang_monitor, "threshold", 60, NULL);
  empty = perfmon_hang_monitor_flush_ping (fixture->hang_monitor, &error);
  g_assert_null (empty);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);

  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  empty = perfmon_hang_monitor_flush_ping (fixture->hang_monitor, &error);
  g_assert_no_error (error);
  g_assert_null (empty);

  add_named_source (fixture->context, "flushed", hang_once, GUINT_TO_POINTER (150), 10);
  add_watchdog_timeout (fixture->context, 10, "hang to flush");
  g_main_loop_run (fixture->loop);

  path = perfmon_hang_monitor_flush_ping (fixture->hang_monitor, &error);
  g_assert_no_error (error);
  g_assert_nonnull (path);
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpuint (fixture->pings->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (fixture->pings, 0), ==, path);
}

/* The application section of the ping at @path. */
static JsonObject *
ping_application (const char *path)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return json_object_ref (json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                                         "application"));
}

/* The program's identity in its pings: settable, and by default what
 * GLib knows, never "unknown" or a version of "00.0" when set. */
static void
test_ping_identity (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  g_autofree char *name = NULL;
  g_autoptr(JsonObject) application = NULL;

  g_object_get (fixture->hang_monitor, "app-name", &name, NULL);
  g_assert_cmpstr (name, ==, g_get_application_name ());
  g_object_set (fixture->hang_monitor, "threshold", 60, "app-name", "Mail", "app-version", "3.1.4",
                "app-channel", "beta", "app-build-id", "20261124063000", NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  add_named_source (fixture->context, "identified", hang_once, GUINT_TO_POINTER (150), 10);
  add_watchdog_timeout (fixture->context, 10, "hang to flush");
  g_main_loop_run (fixture->loop);

  path = perfmon_hang_monitor_flush_ping (fixture->hang_monitor, &error);
  g_assert_no_error (error);
  g_assert_nonnull (path);
  application = ping_application (path);
  g_assert_cmpstr (json_object_get_string_member (application, "name"), ==, "Mail");
  /* Mozilla's pattern wants two or three digits first. */
  g_assert_cmpstr (json_object_get_string_member (application, "version"), ==, "00.3.1.4");
  g_assert_cmpstr (json_object_get_string_member (application, "channel"), ==, "beta");
  g_assert_cmpstr (json_object_get_string_member (application, "buildId"), ==, "20261124063000");

  /* A build id that is not one is refused where it is set. */
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_CRITICAL, "*app-build-id*");
  g_object_set (fixture->hang_monitor, "app-build-id", "nonsense", NULL);
  g_test_assert_expected_messages ();
}

typedef struct
{
  GMainLoop *loop;
  GVariant  *params;
} JankWait;

static void
on_jank (PerfmonHangMonitor *hang_monitor,
         const char         *name,
         GVariant           *params,
         JankWait           *wait)
{
  g_assert_cmpstr (name, ==, "MAIN_THREAD_JANK");
  g_assert_null (wait->params);
  wait->params = g_variant_ref (params);
  g_main_loop_quit (wait->loop);
}

static char *
read_single_log (GVariant *params)
{
  g_autoptr(GVariant) logs = g_variant_lookup_value (params, "external_log", G_VARIANT_TYPE_STRING_ARRAY);
  g_autoptr(GError) error = NULL;
  const char *path;
  char *contents = NULL;

  g_assert_nonnull (logs);
  g_assert_cmpuint (g_variant_n_children (logs), ==, 1);
  g_variant_get_child (logs, 0, "&s", &path);
  g_assert_true (g_file_get_contents (path, &contents, NULL, &error));
  g_assert_no_error (error);
  return contents;
}

/* Each line of the seed's tree: indentation of 4 spaces per level, the
 * count, #depth and the frame; the counts of a node's children add up to
 * at most its count, those of the roots to at most the samples. A line
 * "COUNT dispatch: NAME" heads the tree of the samples of a dispatch: the
 * counts of the dispatches add up to at most the samples, those of a
 * dispatch's roots to at most its count. */
static void
assert_tree_well_formed (const char *tree,
                         guint       n_samples)
{
  g_auto(GStrv) lines = g_strsplit (tree, "\n", -1);
  guint sums[PERFMON_LABEL_MAX_TEST_DEPTH] = { 0, };
  guint counts[PERFMON_LABEL_MAX_TEST_DEPTH] = { 0, };
  g_autoptr(GRegex) format = g_regex_new ("^( *)([0-9]+) #([0-9]{2,}) (pc [0-9a-f]{8,}|script) \\S.*$", 0, 0, NULL);
  g_autoptr(GRegex) header = g_regex_new ("^([0-9]+) dispatch: \\S.*$", 0, 0, NULL);
  guint dispatch_sum = 0;
  guint n_lines = 0;

  counts[0] = n_samples;
  for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++)
    {
      g_autoptr(GMatchInfo) match = NULL;
      g_autofree char *indent = NULL;
      g_autofree char *count_text = NULL;
      g_autofree char *depth_text = NULL;
      guint depth, count;

      if (g_regex_match (header, lines[i], 0, &match))
        {
          count_text = g_match_info_fetch (match, 1);
          count = (guint) g_ascii_strtoull (count_text, NULL, 10);
          dispatch_sum += count;
          g_assert_cmpuint (dispatch_sum, <=, n_samples);
          memset (sums, 0, sizeof sums);
          counts[0] = count;
          continue;
        }
      g_clear_pointer (&match, g_match_info_free);
      if (!g_regex_match (format, lines[i], 0, &match))
        g_error ("not a tree line: '%s'", lines[i]);
      indent = g_match_info_fetch (match, 1);
      count_text = g_match_info_fetch (match, 2);
      depth_text = g_match_info_fetch (match, 3);
      depth = (guint) g_ascii_strtoull (depth_text, NULL, 10);
      count = (guint) g_ascii_strtoull (count_text, NULL, 10);
      g_assert_cmpuint (strlen (indent), ==, 4 * depth);
      g_assert_cmpuint (depth + 1, <, PERFMON_LABEL_MAX_TEST_DEPTH);
      /* A new node at this depth closes the siblings' subtrees below. */
      for (guint d = depth + 1; d < PERFMON_LABEL_MAX_TEST_DEPTH; d++)
        sums[d] = 0;
      sums[depth] += count;
      g_assert_cmpuint (sums[depth], <=, counts[depth]);
      counts[depth + 1] = count;
      n_lines++;
    }
  g_assert_cmpuint (n_lines, >, 0);
}

/* Stack sampling (log_type 1) every @sample_interval ms, @sample_count
 * samples, after a 3 s start-up window; hangs out of the way. */
static void
set_stack_sampling_config (PerfmonHangMonitor *hang_monitor,
                           const char         *sample_interval,
                           const char         *sample_count)
{
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;

  g_hash_table_insert (params, "log_type", "1");
  g_hash_table_insert (params, "sample_interval", (gpointer) sample_interval);
  g_hash_table_insert (params, "ignore_startup_time", "3");
  g_hash_table_insert (params, "sample_count", (gpointer) sample_count);
  g_hash_table_insert (params, "report_times_per_app", "1");
  g_assert_true (perfmon_hang_monitor_set_event_config (hang_monitor, "MAIN_THREAD_JANK", params, &error));
  g_assert_no_error (error);
  /* Hangs are not what these tests look at. */
  g_object_set (hang_monitor, "threshold", 5000, NULL);
}

/* The jank limits and start-up window are the process's (the seed's "same
 * PID"): a jank test that needs them fresh runs in a process of its own. */
static void
test_jank_stack_sampling (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *tree = NULL;
  JankWait wait = { fixture->loop, NULL };
  const char *heaviest;
  const char *bundle;
  guint32 sample_count;
  gboolean over_limit;

  if (test_skip_under_tsan ("ThreadSanitizer holds the capture signal back while the thread spins (until its next intercepted call): the jank's stacks are not taken while it runs (doc/faults.md)"))
    return;
  if (test_run_in_own_process ())
    return;

  set_stack_sampling_config (fixture->hang_monitor, "50", "6");
  g_signal_connect (fixture->hang_monitor, "jank", G_CALLBACK (on_jank), &wait);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  /* Set while the watchdog runs: the event carries them as they are when
   * it reports. */
  g_object_set (fixture->hang_monitor, "app-name", "jank-test-app", "app-version", "1.2.3", NULL);

  /* A jank inside the start-up window is not checked. */
  add_named_source (fixture->context, "early jank", hang_once, GUINT_TO_POINTER (300), 100);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 3200);
  g_main_loop_run (fixture->loop);
  g_assert_null (wait.params);

  /* Detected after 50 ms (a stack then, while the task runs), seen again
   * at the first check, 6 samples every 50 ms, the report an interval
   * later: 400 ms into the task. */
  add_named_source (fixture->context, "jank", hang_once, GUINT_TO_POINTER (800), 10);
  add_watchdog_timeout (fixture->context, 10, "no jank event");
  g_main_loop_run (fixture->loop);

  g_assert_nonnull (wait.params);
  g_assert_true (g_variant_lookup (wait.params, "sample_count", "u", &sample_count));
  g_assert_cmpuint (sample_count, ==, 7);
  g_assert_true (g_variant_lookup (wait.params, "log_over_limit", "b", &over_limit));
  g_assert_false (over_limit);
  g_assert_true (g_variant_lookup (wait.params, "heaviest_stack", "&s", &heaviest));
  g_assert_nonnull (strstr (heaviest, "(hang_in_labelled_function+"));
  for (const char *key = "time"; key != NULL; key = NULL)
    g_assert_true (g_variant_lookup_value (wait.params, key, NULL) != NULL);
  g_assert_true (g_variant_lookup_value (wait.params, "begin_time", G_VARIANT_TYPE_INT64) != NULL);
  g_assert_true (g_variant_lookup_value (wait.params, "end_time", G_VARIANT_TYPE_INT64) != NULL);
  g_assert_true (g_variant_lookup_value (wait.params, "pid", G_VARIANT_TYPE_INT32) != NULL);
  g_assert_true (g_variant_lookup_value (wait.params, "uid", G_VARIANT_TYPE_UINT32) != NULL);
  g_assert_true (g_variant_lookup (wait.params, "bundle_name", "&s", &bundle));
  g_assert_cmpstr (bundle, ==, "jank-test-app");
  g_assert_true (g_variant_lookup (wait.params, "bundle_version", "&s", &bundle));
  g_assert_cmpstr (bundle, ==, "1.2.3");

  tree = read_single_log (wait.params);
  assert_tree_well_formed (tree, sample_count);
  g_assert_nonnull (strstr (tree, "(hang_in_labelled_function+"));
  /* Every sample was taken in the source "jank". */
  g_assert_true (g_str_has_prefix (tree, "7 dispatch: jank\n"));
  g_clear_pointer (&wait.params, g_variant_unref);

  /* report_times_per_app 1, developer mode off: once a day. */
  add_named_source (fixture->context, "second jank", hang_once, GUINT_TO_POINTER (800), 10);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 1500);
  g_main_loop_run (fixture->loop);
  g_assert_null (wait.params);
}

static void wait_startup (Fixture *fixture);

/* The count of the header line "COUNT dispatch: NAME\n" in @tree, 0 if
 * there is none. */
static guint
dispatch_count (const char *tree,
                const char *name)
{
  g_autofree char *suffix = g_strdup_printf (" dispatch: %s\n", name);
  const char *found = strstr (tree, suffix);
  const char *start;

  if (found == NULL)
    return 0;
  for (start = found; start > tree && start[-1] != '\n'; start--)
    ;
  return (guint) g_ascii_strtoull (start, NULL, 10);
}

/* Two dispatches in one janky busy stretch (one iteration), with automatic
 * groups on: the jank's stack tree groups its samples by the dispatch that
 * ran when each was taken, as hangs name their runnable. */
static void
test_jank_dispatches (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *tree = NULL;
  JankWait wait = { fixture->loop, NULL };
  guint32 sample_count;
  guint first, second;

  if (test_run_in_own_process ())
    return;

  perfmon_monitor_set_automatic_groups (fixture->monitor, TRUE);
  set_stack_sampling_config (fixture->hang_monitor, "100", "6");
  g_signal_connect (fixture->hang_monitor, "jank", G_CALLBACK (on_jank), &wait);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  wait_startup (fixture);

  /* Two idles, dispatched in one iteration: detected at 100 ms, seen at
   * 200 ms, samples from 300 ms (in the first, which runs 400 ms) to
   * 800 ms (in the second, which runs until 1400 ms). */
  add_named_source (fixture->context, "[test] first jank", hang_once, GUINT_TO_POINTER (400), 0);
  add_named_source (fixture->context, "[test] second jank", hang_once, GUINT_TO_POINTER (1000), 0);
  add_watchdog_timeout (fixture->context, 10, "no jank event");
  g_main_loop_run (fixture->loop);

  g_assert_nonnull (wait.params);
  g_assert_true (g_variant_lookup (wait.params, "sample_count", "u", &sample_count));
  g_assert_cmpuint (sample_count, ==, 7);
  tree = read_single_log (wait.params);
  g_test_message ("the jank's stack tree:\n%s", tree);
  assert_tree_well_formed (tree, sample_count);
  first = dispatch_count (tree, "[test] first jank");
  second = dispatch_count (tree, "[test] second jank");
  g_assert_cmpuint (first, >=, 1);
  g_assert_cmpuint (second, >=, 1);
  /* Every sample is filed under a dispatch; one taken in the instant
   * between the two (seen under ThreadSanitizer's slowdown) is filed under
   * "(not in a dispatch)". */
  g_assert_cmpuint (first + second + dispatch_count (tree, "(not in a dispatch)"), ==, sample_count);
  g_assert_cmpuint (first + second, >=, sample_count - 1);
  g_clear_pointer (&wait.params, g_variant_unref);
}

static gboolean
after_jank (gpointer data)
{
  perfmon_task_add_label ("after the jank");
  return G_SOURCE_REMOVE;
}

/* The jank of the trace test, as a traced task with a label; it makes a
 * task that runs after it. */
static gboolean
traced_jank (gpointer data)
{
  perfmon_task_add_label ("long jank of %u ms", GPOINTER_TO_UINT (data));
  hang_in_labelled_function (GPOINTER_TO_UINT (data));
  perfmon_main_context_invoke (g_main_context_get_thread_default (), after_jank, NULL);
  return G_SOURCE_REMOVE;
}

static gboolean
dispatch_traced_jank (gpointer data)
{
  /* This thread runs the context: the task runs now. */
  perfmon_main_context_invoke (g_main_context_get_thread_default (), traced_jank, data);
  return G_SOURCE_REMOVE;
}

static void
test_jank_trace (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GHashTable) params = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) logs = NULL;
  g_autoptr(TestTaskFile) trace = NULL;
  g_autofree char *name = NULL;
  g_autofree char *expected_name = NULL;
  JankWait wait = { fixture->loop, NULL };
  const char *log_type;
  const char *path;
  const PerfmonTaskLabelRecord *label = NULL;
  gint64 begin_time, end_time, time_ms;

  if (test_run_in_own_process ())
    return;

  g_hash_table_insert (params, "log_type", "2");
  g_assert_true (perfmon_hang_monitor_set_event_config (fixture->hang_monitor, "MAIN_THREAD_JANK",
                                                        params, &error));
  g_object_set (fixture->hang_monitor, "threshold", 5000, NULL);
  g_signal_connect (fixture->hang_monitor, "jank", G_CALLBACK (on_jank), &wait);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));

  /* The start-up window is 10 s by default. */
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 10100);
  g_main_loop_run (fixture->loop);

  /* Over 450 ms and still janky at the 150 ms checks: the trace is stored
   * 3 s after the capture started. */
  add_named_source (fixture->context, "long jank", dispatch_traced_jank, GUINT_TO_POINTER (900), 10);
  add_watchdog_timeout (fixture->context, 10, "no trace event");
  g_main_loop_run (fixture->loop);

  g_assert_nonnull (wait.params);
  g_assert_true (g_variant_lookup (wait.params, "log_type", "&s", &log_type));
  g_assert_cmpstr (log_type, ==, "trace");
  g_assert_true (g_variant_lookup (wait.params, "begin_time", "x", &begin_time));
  g_assert_true (g_variant_lookup (wait.params, "end_time", "x", &end_time));
  g_assert_true (g_variant_lookup (wait.params, "time", "x", &time_ms));
  /* end_time is when the 900 ms task ended, not the report, 3 s after
   * the capture started. */
  g_assert_cmpint (end_time - begin_time, >=, 900);
  g_assert_cmpint (end_time - begin_time, <, 3000);
  g_assert_cmpint (end_time, <=, time_ms);

  /* The flight recorder's task log, named MAIN_THREAD_JANK_<YYYYmmddHHMMSS>_<pid>.trace. */
  logs = g_variant_lookup_value (wait.params, "external_log", G_VARIANT_TYPE_STRING_ARRAY);
  g_assert_nonnull (logs);
  g_assert_cmpuint (g_variant_n_children (logs), ==, 1);
  g_variant_get_child (logs, 0, "&s", &path);
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  name = g_path_get_basename (path);
  expected_name = g_strdup_printf ("^MAIN_THREAD_JANK_[0-9]{14}_%d(_[0-9]+)?\\.trace$", (int) getpid ());
  g_assert_true (g_regex_match_simple (expected_name, name, 0, 0));
  trace = test_task_file_load (path);
  g_assert_cmpuint (trace->header.pid, ==, (guint) getpid ());
  /* The capture starts when the jank is detected (450 ms into the task,
   * as OpenHarmony does; nothing is recorded before): the janky task's
   * begin and label are not in it, what it did after, and the task it
   * made, are: dispatched, begun, labelled and ended on this thread. */
  for (guint i = 0; i < trace->records->len; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (trace->records, i);

      if (record->type != PERFMON_TASK_RECORD_LABEL)
        continue;
      g_assert_cmpstr (((const PerfmonTaskLabelRecord *) record)->text, !=, "long jank of 900 ms");
      if (g_strcmp0 (((const PerfmonTaskLabelRecord *) record)->text, "after the jank") == 0)
        label = (const PerfmonTaskLabelRecord *) record;
    }
  g_assert_nonnull (label);
  g_assert_cmpuint (label->task_id, !=, 0);
  g_assert_nonnull (test_task_file_find (trace, PERFMON_TASK_RECORD_DISPATCH, label->task_id, 0));
  g_assert_nonnull (test_task_file_find (trace, PERFMON_TASK_RECORD_BEGIN, label->task_id, 0));
  g_assert_nonnull (test_task_file_find (trace, PERFMON_TASK_RECORD_END, label->task_id, 0));
  g_clear_pointer (&wait.params, g_variant_unref);
}

/* --- once per process, end_time, skipped and failed samples ------------ */

/* Runs a jank of @ms on @fixture's loop, and the loop for @wait_ms after
 * it; returns the jank event of @hang_monitor, if any. */
static GVariant *
run_jank (Fixture            *fixture,
          PerfmonHangMonitor *hang_monitor,
          GSourceFunc         jank,
          guint               ms,
          guint               wait_ms)
{
  JankWait wait = { fixture->loop, NULL };
  gulong handler = g_signal_connect (hang_monitor, "jank", G_CALLBACK (on_jank), &wait);

  add_named_source (fixture->context, "jank", jank, GUINT_TO_POINTER (ms), 10);
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, wait_ms);
  g_main_loop_run (fixture->loop);
  if (wait.params != NULL)
    {
      /* The event quit the loop: let the quit source run out too. */
      add_named_source (fixture->context, "drain", quit_loop, fixture->loop, wait_ms);
      g_main_loop_run (fixture->loop);
    }
  g_signal_handler_disconnect (hang_monitor, handler);
  return wait.params;
}

static void
wait_startup (Fixture *fixture)
{
  add_named_source (fixture->context, "quit", quit_loop, fixture->loop, 3100);
  g_main_loop_run (fixture->loop);
}

static void
test_jank_once_per_process (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) event = NULL;
  g_autoptr(GVariant) again = NULL;
  g_autoptr(GVariant) other_event = NULL;
  g_autofree char *log = NULL;
  g_autofree char *skipped = NULL;
  guint32 sample_count;
  gint64 begin_time, end_time, time_ms;

  if (test_run_in_own_process ())
    return;

  set_stack_sampling_config (fixture->hang_monitor, "100", "8");
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  wait_startup (fixture);

  /* An old log of ours that must go for the new one, and a file of the
   * user's that only looks like ours. */
  {
    /* The old log fills the limit by itself, so any new log makes it
     * age out; the new one, whatever its stacks' depth (deeper under the
     * sanitizers), fits alone. */
    g_autofree char *filler = g_strnfill (16000, 'x');
    g_autofree char *old_log = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_20000101000000_1.txt", NULL);
    g_autofree char *notes = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_notes.txt", NULL);

    g_assert_true (g_file_set_contents (old_log, filler, -1, NULL));
    g_assert_true (g_file_set_contents (notes, filler, -1, NULL));
    g_object_set (fixture->hang_monitor, "log-dir-limit", (guint64) 16000, NULL);
  }

  /* A 550 ms task: detected at 100 ms, seen at 200 ms, 8 samples from
   * 300 ms to 1000 ms, the report at 1100 ms. */
  event = run_jank (fixture, fixture->hang_monitor, hang_once, 550, 1600);
  g_assert_nonnull (event);

  /* The log was kept (the seed's log_over_limit is about this log), the
   * old one aged out, the user's file left alone. */
  {
    gboolean over_limit = TRUE;
    g_autofree char *old_log = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_20000101000000_1.txt", NULL);
    g_autofree char *notes = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_notes.txt", NULL);

    g_assert_true (g_variant_lookup (event, "log_over_limit", "b", &over_limit));
    g_assert_false (over_limit);
    g_assert_false (g_file_test (old_log, G_FILE_TEST_EXISTS));
    g_assert_true (g_file_test (notes, G_FILE_TEST_EXISTS));
  }

  /* end_time is the task's end, not the report's time. */
  g_assert_true (g_variant_lookup (event, "begin_time", "x", &begin_time));
  g_assert_true (g_variant_lookup (event, "end_time", "x", &end_time));
  g_assert_true (g_variant_lookup (event, "time", "x", &time_ms));
  g_assert_cmpint (end_time - begin_time, >=, 550);
  g_assert_cmpint (end_time - begin_time, <, 1000);
  g_assert_cmpint (end_time, <=, time_ms);

  /* Samples of the loop after the task (the last ones, 450 ms later at
   * least) are not samples of the jank: skipped, and the log says so. */
  g_assert_true (g_variant_lookup (event, "sample_count", "u", &sample_count));
  g_assert_cmpuint (sample_count, >=, 1);
  g_assert_cmpuint (sample_count, <, 9);
  log = read_single_log (event);
  /* One of them the stack taken at the detection. */
  g_assert_nonnull (strstr (log, "\n1 stack taken when the jank was detected, while the task ran\n"));
  skipped = g_strdup_printf ("\n%u of 8 samples skipped: the main loop was no longer in the janky task",
                             8 - (sample_count - 1));
  g_assert_nonnull (strstr (log, skipped));
  assert_tree_well_formed (log, sample_count);

  /* Once per process: not again after a restart... */
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  again = run_jank (fixture, fixture->hang_monitor, hang_once, 550, 1600);
  g_assert_null (again);
  perfmon_hang_monitor_stop (fixture->hang_monitor);

  /* ... nor through another hang monitor. */
  {
    g_autoptr(PerfmonHangMonitor) other = perfmon_hang_monitor_new (fixture->monitor);

    g_object_set (other, "pings-dir", fixture->pings_dir, "log-dir", fixture->dir, NULL);
    set_stack_sampling_config (other, "100", "8");
    g_assert_true (perfmon_hang_monitor_start (other, &error));
    other_event = run_jank (fixture, other, hang_once, 550, 1600);
    g_assert_null (other_event);
    perfmon_hang_monitor_stop (other);
  }
}

/* The seed's default schedule (150 ms, 10 samples): a 400 ms task is a
 * stack sampling jank, detected at 150 ms, seen again at 300 ms, its first
 * sample due at 450 ms, after its end. Its log still holds a stack of the
 * task, the one taken while it ran (by the hang monitor at its threshold,
 * or at the detection when the threshold is beyond the task), with the
 * busy function, its label and the dispatch. @data: the hang threshold. */
static void
test_jank_short_task (Fixture       *fixture,
                      gconstpointer  data)
{
  JankWait wait = { fixture->loop, NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) event = NULL;
  g_autofree char *log = NULL;
  const char *heaviest = NULL;
  guint32 sample_count = 0;

  if (test_skip_under_tsan ("ThreadSanitizer holds the capture signal back while the thread spins (until its next intercepted call): the jank's stacks are not taken while it runs (doc/faults.md)"))
    return;
  if (test_run_in_own_process ())
    return;

  set_stack_sampling_config (fixture->hang_monitor, "150", "10");
  g_object_set (fixture->hang_monitor, "threshold", GPOINTER_TO_UINT (data), NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  wait_startup (fixture);

  /* The hang, if the threshold makes it one, quits the loop too. */
  g_signal_connect (fixture->hang_monitor, "jank", G_CALLBACK (on_jank), &wait);
  add_named_source (fixture->context, "jank", hang_once, GUINT_TO_POINTER (400), 10);
  add_watchdog_timeout (fixture->context, 20, "no jank event");
  while (wait.params == NULL)
    g_main_loop_run (fixture->loop);
  event = g_steal_pointer (&wait.params);
  g_assert_cmpuint (fixture->reports->len, ==, GPOINTER_TO_UINT (data) < 400 ? 1 : 0);
  g_assert_true (g_variant_lookup (event, "sample_count", "u", &sample_count));
  g_assert_cmpuint (sample_count, >=, 1);
  g_assert_true (g_variant_lookup (event, "heaviest_stack", "&s", &heaviest));
  g_assert_nonnull (strstr (heaviest, "(hang_in_labelled_function+"));
  log = read_single_log (event);
  g_test_message ("the jank's log:\n%s", log);
  g_assert_true (g_str_has_prefix (log, "1 dispatch: jank\n"));
  g_assert_nonnull (strstr (log, "(hang_in_labelled_function+"));
  /* The label the function pushed, a frame of its own. */
  g_assert_nonnull (strstr (log, " script spell check"));
}

/* A jank the sampler cannot unwind: the thread blocks the capture signal
 * while it runs (a thread blocked in a system call is read through /proc,
 * signal or not). */
static gboolean
hang_blocking_signals (gpointer data)
{
  sigset_t all, saved;

  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, &saved);
  spin_ms (GPOINTER_TO_UINT (data));
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  return G_SOURCE_REMOVE;
}

/* Blocks the capture signal for all but the last 250 ms of its time. */
static gboolean
hang_blocking_signals_at_first (gpointer data)
{
  sigset_t all, saved;

  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, &saved);
  spin_ms (GPOINTER_TO_UINT (data) - 250);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  spin_ms (250);
  return G_SOURCE_REMOVE;
}

/* The samples that fail print why; those of the task's last 250 ms are
 * its stacks. (A jank whose every sample failed has no stack of the
 * task: it gives no log, see test-jank-sampler.) */
static void
test_jank_failed_sample_wchan (Fixture       *fixture,
                               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) event = NULL;
  g_autofree char *log = NULL;

  if (test_run_in_own_process ())
    return;

  /* Perf sampling would read it without the signal. */
  _perfmon_perf_stack_set_allowed (FALSE);
  set_stack_sampling_config (fixture->hang_monitor, "100", "8");
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  wait_startup (fixture);

  event = run_jank (fixture, fixture->hang_monitor, hang_blocking_signals_at_first, 700, 2500);
  g_assert_nonnull (event);
  log = read_single_log (event);
  g_test_message ("%s", log);
  /* The seed: a sample that fails prints the thread's kernel wait channel. */
  g_assert_nonnull (strstr (log, "failed: no stack of thread"));
  g_assert_nonnull (strstr (log, "wchan "));
  g_assert_nonnull (strstr (log, "blocks the signal"));
  g_assert_nonnull (strstr (log, "(hang_blocking_signals_at_first+"));
}

/* A hang whose stack cannot be taken (the thread blocks the capture
 * signal, and perf sampling is off) still names its runnable: the name is
 * read from the thread's memory, without stopping it. */
static void
test_runnable_without_stack (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  PerfmonHangReport *report;

  if (test_run_in_own_process ())
    return;

  _perfmon_perf_stack_set_allowed (FALSE);
  g_object_set (fixture->hang_monitor, "threshold", 60, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));

  add_named_source (fixture->context, "blocks signals", hang_blocking_signals, GUINT_TO_POINTER (400), 10);
  add_watchdog_timeout (fixture->context, 10, "no hang report");
  g_main_loop_run (fixture->loop);

  g_assert_cmpuint (fixture->reports->len, ==, 1);
  report = g_ptr_array_index (fixture->reports, 0);
  g_assert_cmpstr (perfmon_hang_report_get_annotation (report, "StackMethod"), ==, "none");
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (report), ==, "blocks signals");
}

/* The hang of test_hang_ends_while_report_is_built(): blocks the capture
 * signal until the watchdog has caught it and begun its report (whose
 * stack then waits for the signal until its timeout), a little longer,
 * then quits the loop. */
typedef struct
{
  Fixture *fixture;
  gint64   end_us;   /* when it returned */
} EndsEarly;

static gboolean
hang_until_caught (gpointer data)
{
  EndsEarly *ends_early = data;
  PerfmonHangMonitor *hang_monitor = ends_early->fixture->hang_monitor;
  sigset_t all, saved;

  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, &saved);
  while (_perfmon_hang_monitor_get_last_detection_latency_us (hang_monitor) == 0)
    ;
  spin_ms (5);
  g_main_loop_quit (ends_early->fixture->loop);
  ends_early->end_us = g_get_monotonic_time ();
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  return G_SOURCE_REMOVE;
}

/* A hang that ends while its report is still being built, just before the
 * program stops the monitor (its loop quits at the end of the hang, and it
 * exits), was a hang all the same: reported, with its own length. It was
 * dropped as if the thread were in perfmon's own stop(), and a loaded
 * machine lost a Python program's only hang under perfmon run. */
static void
test_hang_ends_while_report_is_built (Fixture       *fixture,
                                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  EndsEarly ends_early = { fixture, 0 };
  PerfmonHangReport *report;
  gint64 run_us;

  if (test_run_in_own_process ())
    return;

  /* Perf sampling would read the stack without the signal. */
  _perfmon_perf_stack_set_allowed (FALSE);
  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);

  add_named_source (fixture->context, "ends early", hang_until_caught, &ends_early, 10);
  add_watchdog_timeout (fixture->context, 10, "no hang caught");
  run_us = g_get_monotonic_time ();
  g_main_loop_run (fixture->loop);
  /* At once: the report's stack is still waiting for the signal. */
  perfmon_hang_monitor_stop (fixture->hang_monitor);

  g_assert_cmpuint (fixture->reports->len, ==, 1);
  report = g_ptr_array_index (fixture->reports, 0);
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), >=, 100.0);
  /* The stretch as the thread measured it, not until stop() (the
   * signal's timeout, 100 ms after the hang was caught, came first). */
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), <=,
                     (double) (ends_early.end_us - run_us) / 1000.0 + 1.0);
}

/* The child of the permahang test: hangs for ever in its main loop, and
 * is killed by a thread of its own once the permahang was saved. */
static gboolean
hang_for_ever (gpointer data)
{
  PERFMON_AUTO_LABEL ("never ends");

  for (;;)
    spin_ms (10);
  return G_SOURCE_REMOVE;
}

static gpointer
kill_once_saved (gpointer data)
{
  const char *pending = data;

  for (guint i = 0; i < 2000; i++)
    {
      g_autoptr(GDir) dir = g_dir_open (pending, 0, NULL);
      const char *instance;

      while (dir != NULL && (instance = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = g_build_filename (pending, instance, NULL);
          g_autoptr(GDir) records = g_dir_open (path, 0, NULL);
          const char *name;

          while (records != NULL && (name = g_dir_read_name (records)) != NULL)
            if (g_str_has_suffix (name, ".json"))
              raise (SIGKILL);
        }
      g_usleep (10000);
    }
  _exit (3);
}

static void
test_permahang_unrecovered (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  g_autofree char *pending = g_build_filename (pings, "pending", NULL);
  g_autoptr(GError) error = NULL;
  pid_t child;
  int status;

  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      GMainContext *context = g_main_context_new ();
      PerfmonMonitor *monitor = perfmon_monitor_new (context);
      PerfmonHangMonitor *hang_monitor = perfmon_hang_monitor_new (monitor);

      g_object_set (hang_monitor, "pings-dir", pings, "threshold", 50,
                    "permahang-threshold", 300, NULL);
      if (!perfmon_hang_monitor_start (hang_monitor, NULL))
        _exit (2);
      g_thread_unref (g_thread_new ("killer", kill_once_saved, pending));
      add_named_source (context, "stuck", hang_for_ever, NULL, 10);
      for (;;)
        g_main_context_iteration (context, TRUE);
    }

  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpint (WTERMSIG (status), ==, SIGKILL);

  /* The next start sends the hang the dead process left, marked
   * Unrecovered. */
  {
    g_autoptr(GMainContext) context = g_main_context_new ();
    g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (context);
    g_autoptr(PerfmonHangMonitor) hang_monitor = perfmon_hang_monitor_new (monitor);
    g_autoptr(JsonParser) parser = json_parser_new ();
    g_autoptr(GPtrArray) pings_seen = g_ptr_array_new_with_free_func (g_free);
    g_autoptr(GDir) listing = NULL;
    const char *name;
    JsonObject *hang;
    JsonArray *annotations;
    gboolean unrecovered = FALSE;

    g_main_context_push_thread_default (context);
    g_object_set (hang_monitor, "pings-dir", pings, NULL);
    g_signal_connect_swapped (hang_monitor, "ping", G_CALLBACK (g_ptr_array_add), pings_seen);
    g_assert_true (perfmon_hang_monitor_start (hang_monitor, &error));
    g_assert_no_error (error);
    while (g_main_context_iteration (context, FALSE))
      ;
    perfmon_hang_monitor_stop (hang_monitor);
    g_main_context_pop_thread_default (context);

    listing = g_dir_open (pings, 0, &error);
    g_assert_no_error (error);
    while ((name = g_dir_read_name (listing)) != NULL)
      if (g_str_has_suffix (name, ".json"))
        {
          g_autofree char *path = g_build_filename (pings, name, NULL);
          JsonObject *ping = load_json_object (path, parser);
          JsonArray *hangs = json_object_get_array_member (json_object_get_object_member (ping, "payload"),
                                                          "hangs");

          g_assert_cmpuint (json_array_get_length (hangs), ==, 1);
          hang = json_array_get_object_element (hangs, 0);
          g_assert_cmpstr (json_object_get_string_member (hang, "runnableName"), ==, "stuck");
          g_assert_cmpfloat (json_object_get_double_member (hang, "duration"), >=, 300.0);
          annotations = json_object_get_array_member (hang, "annotations");
          for (guint i = 0; i < json_array_get_length (annotations); i++)
            {
              JsonArray *pair = json_array_get_array_element (annotations, i);

              if (g_str_equal (json_array_get_string_element (pair, 0), "Unrecovered"))
                unrecovered = g_str_equal (json_array_get_string_element (pair, 1), "true");
            }
        }
    g_assert_true (unrecovered);
    g_assert_cmpuint (pings_seen->len, ==, 1);
    g_ptr_array_set_free_func (pings_seen, NULL);
  }
  test_remove_tree (dir);
}

static void
on_hang_exit (PerfmonHangMonitor *hang_monitor,
              PerfmonHangReport  *report,
              gpointer            data)
{
  /* Leave without stop(): the ping must be written at exit. */
  exit (0);
}

static void
test_ping_at_exit (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  g_autoptr(GDir) listing = NULL;
  const char *name;
  guint n_pings = 0;
  pid_t child;
  int status;

  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      GMainContext *context = g_main_context_new ();
      PerfmonMonitor *monitor = perfmon_monitor_new (context);
      PerfmonHangMonitor *hang_monitor = perfmon_hang_monitor_new (monitor);

      g_main_context_push_thread_default (context);
      g_object_set (hang_monitor, "pings-dir", pings, "threshold", 50, NULL);
      g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang_exit), NULL);
      if (!perfmon_hang_monitor_start (hang_monitor, NULL))
        _exit (2);
      add_named_source (context, "before exit", hang_once, GUINT_TO_POINTER (120), 10);
      for (;;)
        g_main_context_iteration (context, TRUE);
    }
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);

  listing = g_dir_open (pings, 0, NULL);
  g_assert_nonnull (listing);
  while ((name = g_dir_read_name (listing)) != NULL)
    if (g_str_has_suffix (name, ".json"))
      n_pings++;
  g_assert_cmpuint (n_pings, ==, 1);
  test_remove_tree (dir);
}

/* The watchdog's lateness: what the run queue explains is load, the rest
 * a stop. */
static void
test_watchdog_stopped_or_loaded (void)
{
  /* 300 ms late with a 100 ms threshold: stopped, unless it waited for a
   * CPU most of that time, or the wait is unknown. */
  g_assert_true (_perfmon_hang_watchdog_was_stopped (300000, -1, 100000));
  g_assert_true (_perfmon_hang_watchdog_was_stopped (300000, 0, 100000));
  g_assert_true (_perfmon_hang_watchdog_was_stopped (300000, 200000, 100000));
  g_assert_false (_perfmon_hang_watchdog_was_stopped (300000, 290000, 100000));
  g_assert_false (_perfmon_hang_watchdog_was_stopped (40000, -1, 100000));
}

typedef struct
{
  gint state;   /* atomic: 0 starting, 1 spinning, -1 refused */
} Spinner;

/* Takes CPU 0 for 400 ms at real-time priority: the watchdog, which may
 * run on CPU 0 only, waits on its run queue meanwhile. */
static gpointer
rt_spinner (gpointer data)
{
  Spinner *spinner = data;
  struct sched_param param = { .sched_priority = 1 };
  cpu_set_t cpu0;

  CPU_ZERO (&cpu0);
  CPU_SET (0, &cpu0);
  if (pthread_setaffinity_np (pthread_self (), sizeof cpu0, &cpu0) != 0 ||
      pthread_setschedparam (pthread_self (), SCHED_FIFO, &param) != 0)
    {
      g_atomic_int_set (&spinner->state, -1);
      return NULL;
    }
  g_atomic_int_set (&spinner->state, 1);
  spin_ms (400);
  return NULL;
}

static gboolean
hang_while_watchdog_waits (gpointer data)
{
  Spinner *spinner = data;
  GThread *thread = g_thread_new ("rt-spinner", rt_spinner, spinner);

  while (g_atomic_int_get (&spinner->state) == 0)
    g_usleep (1000);
  g_usleep (450 * 1000);
  g_thread_join (thread);
  return G_SOURCE_REMOVE;
}

/* A hang of 450 ms while the machine keeps the watchdog from running for
 * its first 400 ms: it wakes 300 ms past its deadline. Before, any
 * wake-up that late was taken for a stopped process and the stretch
 * restarted from then: on a loaded machine, real hangs were missed
 * (test-thread-watch's /work-units/jank failed so). The time it waited on
 * the run queue says it was load: the hang is reported, whole. */
static void
test_hang_seen_by_a_late_watchdog (Fixture       *fixture,
                                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  Spinner spinner = { 0 };
  cpu_set_t cpu0, cpu1;
  PerfmonHangReport *report;

  if (g_get_num_processors () < 2)
    {
      g_test_skip ("needs 2 CPUs: one for the hung thread, one for the watchdog and a real-time spinner");
      return;
    }
  {
    struct sched_param param = { .sched_priority = 1 };
    pthread_t probe = pthread_self ();
    int policy;
    struct sched_param saved;

    pthread_getschedparam (probe, &policy, &saved);
    if (pthread_setschedparam (probe, SCHED_FIFO, &param) != 0)
      {
        g_test_skip ("SCHED_FIFO is not allowed here: the test needs it to keep the watchdog from running");
        return;
      }
    pthread_setschedparam (probe, policy, &saved);
  }

  CPU_ZERO (&cpu0);
  CPU_SET (0, &cpu0);
  CPU_ZERO (&cpu1);
  CPU_SET (1, &cpu1);
  /* The watchdog thread inherits CPU 0; the loop runs on CPU 1. */
  g_assert_cmpint (pthread_setaffinity_np (pthread_self (), sizeof cpu0, &cpu0), ==, 0);
  g_object_set (fixture->hang_monitor, "threshold", 100, NULL);
  g_assert_true (perfmon_hang_monitor_start (fixture->hang_monitor, &error));
  g_assert_no_error (error);
  g_assert_cmpint (pthread_setaffinity_np (pthread_self (), sizeof cpu1, &cpu1), ==, 0);

  add_named_source (fixture->context, "late-watchdog", hang_while_watchdog_waits, &spinner, 50);
  add_watchdog_timeout (fixture->context, 10, "no hang report");
  g_main_loop_run (fixture->loop);
  perfmon_hang_monitor_stop (fixture->hang_monitor);
  {
    cpu_set_t all;

    CPU_ZERO (&all);
    for (guint i = 0; i < g_get_num_processors () && i < CPU_SETSIZE; i++)
      CPU_SET (i, &all);
    pthread_setaffinity_np (pthread_self (), sizeof all, &all);
  }

  g_assert_cmpint (g_atomic_int_get (&spinner.state), ==, 1);
  g_assert_cmpuint (fixture->reports->len, ==, 1);
  report = g_ptr_array_index (fixture->reports, 0);
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (report), ==, "late-watchdog");
  g_assert_cmpfloat (perfmon_hang_report_get_duration (report), >=, 440.0);
}

/* The child of the SIGSTOP test: a loop of 30 ms busy stretches under a
 * 300 ms threshold, far from it even on a loaded machine (a stretch that
 * the scheduler stretches past the threshold is a real hang, and fails
 * the test for the wrong reason); exits with the number of hangs
 * reported. */
static void
run_short_stretches_child (const char *pings,
                           int         ready_fd)
{
  GMainContext *context = g_main_context_new ();
  PerfmonMonitor *monitor = perfmon_monitor_new (context);
  PerfmonHangMonitor *hang_monitor = perfmon_hang_monitor_new (monitor);
  gint64 end;

  g_main_context_push_thread_default (context);
  g_object_set (hang_monitor, "pings-dir", pings, "threshold", 300, NULL);
  if (!perfmon_hang_monitor_start (hang_monitor, NULL))
    _exit (100);
  g_assert_cmpint (write (ready_fd, "r", 1), ==, 1);

  end = g_get_monotonic_time () + 4 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < end)
    {
      add_named_source (context, "tick", hang_once, GUINT_TO_POINTER (30), 5);
      g_main_context_iteration (context, TRUE);
    }
  _exit ((int) MIN (_perfmon_hang_monitor_count_hangs (hang_monitor), 99));
}

static void
test_no_false_hang_when_stopped (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-hang-XXXXXX");
  g_autofree char *pings = g_build_filename (dir, "pings", NULL);
  int ready[2];
  char byte;
  pid_t child;
  int status;

  g_assert_cmpint (pipe (ready), ==, 0);
  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      close (ready[0]);
      run_short_stretches_child (pings, ready[1]);
    }
  close (ready[1]);
  g_assert_cmpint (read (ready[0], &byte, 1), ==, 1);
  close (ready[0]);

  g_usleep (500 * 1000);
  g_assert_cmpint (kill (child, SIGSTOP), ==, 0);
  g_usleep (2 * G_USEC_PER_SEC);
  g_assert_cmpint (kill (child, SIGCONT), ==, 0);

  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  test_remove_tree (dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

  ADD ("/hang-monitor/report", test_hang_report);
  ADD ("/hang-monitor/hang-seen-by-a-late-watchdog", test_hang_seen_by_a_late_watchdog);
  g_test_add_func ("/hang-monitor/watchdog-stopped-or-loaded", test_watchdog_stopped_or_loaded);
  ADD ("/hang-monitor/capture-signal-taken", test_capture_signal_taken);
  ADD ("/hang-monitor/not-saved", test_not_saved);
  ADD ("/hang-monitor/short-stretches", test_short_stretches_are_not_hangs);
  ADD ("/hang-monitor/deliberate-wait", test_deliberate_wait);
  ADD ("/hang-monitor/idle-wakeups", test_idle_wakeups);
  ADD ("/hang-monitor/event-config", test_event_config);
  ADD ("/hang-monitor/ping-batching", test_ping_batching);
  ADD ("/hang-monitor/runnable-without-stack", test_runnable_without_stack);
  ADD ("/hang-monitor/hang-ends-while-report-is-built", test_hang_ends_while_report_is_built);
  ADD ("/hang-monitor/flush-ping", test_flush_ping);
  ADD ("/hang-monitor/ping-identity", test_ping_identity);
  ADD ("/hang-monitor/jank-stack-sampling", test_jank_stack_sampling);
  ADD ("/hang-monitor/jank-dispatches", test_jank_dispatches);
  ADD ("/hang-monitor/jank-trace", test_jank_trace);
  ADD ("/hang-monitor/jank-once-per-process", test_jank_once_per_process);
  ADD ("/hang-monitor/jank-failed-sample-wchan", test_jank_failed_sample_wchan);
  g_test_add ("/hang-monitor/jank-short-task/hang-stack", Fixture, GUINT_TO_POINTER (128),
              fixture_set_up, test_jank_short_task, fixture_tear_down);
  g_test_add ("/hang-monitor/jank-short-task/own-stack", Fixture, GUINT_TO_POINTER (5000),
              fixture_set_up, test_jank_short_task, fixture_tear_down);
  g_test_add ("/hang-monitor/sparse-stretch-end-wakeups", Fixture, NULL, fixture_set_up,
              test_sparse_stretch_end_wakeups, fixture_tear_down);
  g_test_add_func ("/hang-monitor/start-errors", test_start_errors);
  g_test_add_func ("/hang-monitor/step-aside", test_step_aside);
  g_test_add_func ("/hang-monitor/start-unwatched-context", test_start_unwatched_context);
  g_test_add_func ("/hang-monitor/permahang-unrecovered", test_permahang_unrecovered);
  g_test_add_func ("/hang-monitor/no-false-hang-when-stopped", test_no_false_hang_when_stopped);
  g_test_add_func ("/hang-monitor/ping-at-exit", test_ping_at_exit);

  return g_test_run ();
}
