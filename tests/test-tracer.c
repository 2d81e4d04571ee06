/* test-tracer.c: what the task tracer records
 *
 * The files are read with the format header alone (perfmon-task-file-test.h),
 * not with the library's reader.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <utime.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-task-file-test.h"
#include "perfmon-task-private.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-tsan.h"
#include "perfmon-test-utils.h"
#include "perfmon-chrome-trace-test.h"

/* Functions whose names the SYMBOL records must carry are not static (the
 * test links with -rdynamic), so they need prototypes. */
gboolean chain_step_one      (gpointer data);
void     chain_step_two      (gpointer item,
                              gpointer user_data);
gboolean chain_step_three    (gpointer data);
gboolean repeating_timeout   (gpointer data);
gboolean invoke_outer        (gpointer data);
gboolean invoke_inner        (gpointer data);
gboolean gtask_starter       (gpointer data);
void     gtask_worker        (GTask        *task,
                              gpointer      source_object,
                              gpointer      task_data,
                              GCancellable *cancellable);
gboolean dbus_caller         (gpointer data);
gboolean labelled_task       (gpointer data);

static guint32
current_tid (void)
{
  return (guint32) syscall (SYS_gettid);
}

typedef struct
{
  char *dir;
  char *path;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-tracer-XXXXXX");
  fixture->path = g_build_filename (fixture->dir, "tasks.log", NULL);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_assert_false (perfmon_tracer_is_active ());
  g_assert_true (perfmon_tracer_set_buffer_size (2 * 1024 * 1024, NULL));
  test_remove_tree (fixture->dir);
  g_free (fixture->path);
  g_free (fixture->dir);
}

__attribute__ ((returns_nonnull)) static const PerfmonTaskDispatchRecord *
find_dispatch (TestTaskFile *file,
               guint64       task_id)
{
  return (const PerfmonTaskDispatchRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_DISPATCH, task_id, 0);
}

/* ---------------------------------------------------------------------- */
/* idle → thread pool → invoke back, under a source event */

typedef struct
{
  GMainLoop   *loop;
  GThreadPool *pool;
  guint64      task[3];
  guint32      tid[3];
} Chain;

gboolean
chain_step_one (gpointer data)
{
  Chain *chain = data;
  g_autoptr(GError) error = NULL;

  chain->task[0] = perfmon_task_get_current ();
  chain->tid[0] = current_tid ();
  perfmon_task_add_label ("step %d of %s", 1, "the chain");
  g_assert_true (perfmon_thread_pool_push (chain->pool, chain, &error));
  g_assert_no_error (error);
  return G_SOURCE_REMOVE;
}

void
chain_step_two (gpointer item,
                gpointer user_data)
{
  Chain *chain = item;

  g_assert_true (user_data == chain);
  chain->task[1] = perfmon_task_get_current ();
  chain->tid[1] = current_tid ();
  perfmon_task_add_label ("step %d of %s", 2, "the chain");
  /* The main loop owns the default context: this goes through an idle. */
  perfmon_main_context_invoke (NULL, chain_step_three, chain);
}

gboolean
chain_step_three (gpointer data)
{
  Chain *chain = data;

  chain->task[2] = perfmon_task_get_current ();
  chain->tid[2] = current_tid ();
  perfmon_task_add_label ("step %d of %s", 3, "the chain");
  g_main_loop_quit (chain->loop);
  return G_SOURCE_REMOVE;
}

static void
test_chain (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(TestTaskFile) file = NULL;
  Chain chain = { loop, NULL, };
  const char *names[] = { "chain_step_one", "chain_step_two", "chain_step_three" };
  PerfmonSourceEventType type;
  guint64 source_event;

  chain.pool = perfmon_thread_pool_new (chain_step_two, &chain, 1, TRUE, &error);
  g_assert_no_error (error);

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_is_active ());

  source_event = perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
  g_assert_cmpuint (source_event >> 32, ==, (guint) getpid ());
  g_assert_cmpuint (perfmon_source_event_get_current (&type), ==, source_event);
  g_assert_cmpint (type, ==, PERFMON_SOURCE_EVENT_KEY);
  perfmon_idle_add (chain_step_one, &chain);
  perfmon_source_event_end ();
  g_assert_cmpuint (perfmon_source_event_get_current (NULL), ==, 0);

  g_main_loop_run (loop);
  perfmon_thread_pool_free (chain.pool, FALSE, TRUE);
  g_assert_cmpuint (perfmon_task_get_current (), ==, 0);

  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  g_assert_false (perfmon_tracer_is_active ());

  file = test_task_file_load (fixture->path);
  g_assert_cmpuint (file->header.pid, ==, (guint) getpid ());
  g_assert_cmpuint (file->header.dropped_records, ==, 0);

  for (guint i = 0; i < 3; i++)
    {
      const PerfmonTaskDispatchRecord *dispatch = find_dispatch (file, chain.task[i]);
      const PerfmonTaskRecordHeader *begin = test_task_file_get (file, PERFMON_TASK_RECORD_BEGIN, chain.task[i], 0);
      const PerfmonTaskRecordHeader *end = test_task_file_get (file, PERFMON_TASK_RECORD_END, chain.task[i], 0);
      g_autofree char *label = g_strdup_printf ("step %u of the chain", i + 1);

      g_assert_cmpuint (chain.task[i] >> 32, ==, (guint) getpid ());
      g_assert_nonnull (dispatch);
      g_assert_nonnull (begin);
      g_assert_nonnull (end);
      /* The task's name. */
      g_assert_true (test_task_file_find_dispatch_of (file, names[i]) == dispatch);
      /* Every task of the chain belongs to the source event. */
      g_assert_cmpuint (dispatch->source_event_id, ==, source_event);
      g_assert_cmpuint (dispatch->source_event_type, ==, PERFMON_SOURCE_EVENT_KEY);
      /* The first is its own parent, the others their dispatcher's
       * children. */
      g_assert_cmpuint (dispatch->parent_id, ==, i == 0 ? chain.task[0] : chain.task[i - 1]);
      /* Dispatched on the parent's thread, run on its own. */
      g_assert_cmpuint (dispatch->header.tid, ==, i == 0 ? current_tid () : chain.tid[i - 1]);
      g_assert_cmpuint (begin->tid, ==, chain.tid[i]);
      g_assert_cmpuint (end->tid, ==, chain.tid[i]);
      g_assert_cmpint (dispatch->header.time_ns, <=, begin->time_ns);
      g_assert_cmpint (begin->time_ns, <=, end->time_ns);
      /* Cycles become nanoseconds with a 2 ms calibration of the cycle
       * counter, which ThreadSanitizer's slowdown of every clock read makes
       * too coarse for this (a record tens of µs before the start): not
       * checked there. */
      if (!UNDER_TSAN)
        g_assert_cmpint (dispatch->header.time_ns, >=, file->header.start_time_ns);
      g_assert_true (test_task_file_has_label (file, chain.task[i], label));
      g_assert_true (test_task_file_has_thread (file, chain.tid[i]));
      /* Run once. */
      g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_BEGIN, chain.task[i]), ==, 1);
    }
  g_assert_cmpuint (chain.tid[0], ==, current_tid ());
  g_assert_cmpuint (chain.tid[1], !=, current_tid ());
  g_assert_cmpuint (chain.tid[2], ==, current_tid ());
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_DISPATCH, 0), ==, 3);
}

/* ---------------------------------------------------------------------- */

typedef struct
{
  GMainLoop *loop;
  guint      runs;
  guint64    task;
} Repeat;

gboolean
repeating_timeout (gpointer data)
{
  Repeat *repeat = data;

  g_assert_true (repeat->task == 0 || repeat->task == perfmon_task_get_current ());
  repeat->task = perfmon_task_get_current ();
  if (++repeat->runs < 3)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (repeat->loop);
  return G_SOURCE_REMOVE;
}

static void
test_repeating_timeout (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(TestTaskFile) file = NULL;
  Repeat repeat = { loop, 0, 0 };
  const PerfmonTaskDispatchRecord *dispatch;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_timeout_add (5, repeating_timeout, &repeat);
  g_main_loop_run (loop);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);

  file = test_task_file_load (fixture->path);
  g_assert_cmpuint (repeat.runs, ==, 3);
  /* One task, dispatched once, run three times. */
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_DISPATCH, 0), ==, 1);
  dispatch = test_task_file_get_dispatch_of (file, "repeating_timeout");
  g_assert_nonnull (dispatch);
  g_assert_cmpuint (dispatch->task_id, ==, repeat.task);
  g_assert_cmpuint (dispatch->parent_id, ==, repeat.task);
  g_assert_cmpuint (dispatch->source_event_id, ==, 0);
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_BEGIN, repeat.task), ==, 3);
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_END, repeat.task), ==, 3);
  /* Runs do not overlap: BEGIN, END, BEGIN, END... */
  for (guint i = 0; i < 3; i++)
    {
      const PerfmonTaskRecordHeader *begin = test_task_file_get (file, PERFMON_TASK_RECORD_BEGIN, repeat.task, i);
      const PerfmonTaskRecordHeader *end = test_task_file_get (file, PERFMON_TASK_RECORD_END, repeat.task, i);

      g_assert_cmpint (begin->time_ns, <=, end->time_ns);
      if (i > 0)
        g_assert_cmpint (test_task_file_get (file, PERFMON_TASK_RECORD_END, repeat.task, i - 1)->time_ns, <=,
                         begin->time_ns);
    }
}

/* A timeout is queued from when it was due, not from when it was added. */
static void
test_timeout_queueing_from_due_time (Fixture       *fixture,
                                     gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(PerfmonTaskLog) log = NULL;
  Repeat repeat = { loop, 2, 0 };
  PerfmonTask *task;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_timeout_add (200, repeating_timeout, &repeat);
  g_main_loop_run (loop);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);

  log = perfmon_task_log_new_from_file (fixture->path, &error);
  g_assert_no_error (error);
  task = perfmon_task_log_find_task (log, repeat.task);
  g_assert_nonnull (task);
  /* Due 200 ms after it was added; it ran then, on an idle loop. */
  g_test_message ("queueing of a 200 ms timeout: %" G_GINT64_FORMAT " us", perfmon_task_get_queueing_time (task));
  g_assert_cmpint (perfmon_task_get_queueing_time (task), >=, 0);
  g_assert_cmpint (perfmon_task_get_queueing_time (task), <, 200000);
}

/* ---------------------------------------------------------------------- */

typedef struct
{
  guint64 outer;
  guint64 inner;
  guint   inner_runs;
} Invoke;

gboolean
invoke_inner (gpointer data)
{
  Invoke *invoke = data;

  invoke->inner = perfmon_task_get_current ();
  /* As g_main_context_invoke(): called again while it returns TRUE. */
  return ++invoke->inner_runs < 2;
}

gboolean
invoke_outer (gpointer data)
{
  Invoke *invoke = data;

  invoke->outer = perfmon_task_get_current ();
  /* We own the context: runs now, as a child. */
  perfmon_main_context_invoke (NULL, invoke_inner, invoke);
  g_assert_cmpuint (invoke->inner_runs, ==, 2);
  g_assert_cmpuint (perfmon_task_get_current (), ==, invoke->outer);
  return G_SOURCE_REMOVE;
}

static void
test_invoke_inline (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  Invoke invoke = { 0, };

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_idle_add (invoke_outer, &invoke);
  while (invoke.outer == 0)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  g_assert_cmpuint (find_dispatch (file, invoke.inner)->parent_id, ==, invoke.outer);
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_BEGIN, invoke.inner), ==, 2);
}

/* ---------------------------------------------------------------------- */

typedef struct
{
  guint64 starter;
  guint64 worker;
  guint32 worker_tid;
  gboolean done;
} GTaskRun;

void
gtask_worker (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  GTaskRun *run = task_data;

  run->worker = perfmon_task_get_current ();
  run->worker_tid = current_tid ();
  g_task_return_boolean (task, TRUE);
}

static void
gtask_done (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  GTaskRun *run = data;

  g_assert_true (g_task_propagate_boolean (G_TASK (result), NULL));
  run->done = TRUE;
}

gboolean
gtask_starter (gpointer data)
{
  GTaskRun *run = data;
  g_autoptr(GTask) task = g_task_new (NULL, NULL, gtask_done, run);

  run->starter = perfmon_task_get_current ();
  g_task_set_task_data (task, run, NULL);
  perfmon_task_run_in_thread (task, gtask_worker);
  return G_SOURCE_REMOVE;
}

static void
test_gtask (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  GTaskRun run = { 0, };
  const PerfmonTaskDispatchRecord *dispatch;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_idle_add (gtask_starter, &run);
  while (!run.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  dispatch = test_task_file_get_dispatch_of (file, "gtask_worker");
  g_assert_nonnull (dispatch);
  g_assert_cmpuint (dispatch->task_id, ==, run.worker);
  g_assert_cmpuint (dispatch->parent_id, ==, run.starter);
  g_assert_cmpuint (test_task_file_get (file, PERFMON_TASK_RECORD_BEGIN, run.worker, 0)->tid, ==, run.worker_tid);
  g_assert_cmpuint (run.worker_tid, !=, current_tid ());
}

/* ---------------------------------------------------------------------- */

gboolean
labelled_task (gpointer data)
{
  guint64 *task = data;

  *task = perfmon_task_get_current ();
  {
    PERFMON_AUTO_TASK_LABEL ("Event [%s] %d", "click", 7);

    perfmon_task_add_label ("inside");
  }
  /* Cut at a character boundary: 300 two-byte characters. */
  {
    GString *long_text = g_string_new (NULL);

    for (guint i = 0; i < 300; i++)
      g_string_append (long_text, "é");
    perfmon_task_add_label_literal (long_text->str);
    g_string_free (long_text, TRUE);
  }
  return G_SOURCE_REMOVE;
}

static void
test_labels (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  const PerfmonTaskLabelRecord *record;
  guint64 task = 0;

  /* Off: labels cost nothing and record nothing. */
  perfmon_task_add_label ("not recorded");

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_idle_add (labelled_task, &task);
  while (task == 0)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  g_assert_cmpuint (test_task_file_count (file, PERFMON_TASK_RECORD_LABEL, 0), ==, 4);
  record = (const PerfmonTaskLabelRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_LABEL, task, 0);
  g_assert_cmpstr (record->text, ==, "Begin Event [click] 7");
  record = (const PerfmonTaskLabelRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_LABEL, task, 1);
  g_assert_cmpstr (record->text, ==, "inside");
  record = (const PerfmonTaskLabelRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_LABEL, task, 2);
  g_assert_cmpstr (record->text, ==, "End Event [click] 7");
  record = (const PerfmonTaskLabelRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_LABEL, task, 3);
  g_assert_true (g_utf8_validate (record->text, -1, NULL));
  g_assert_cmpuint (strlen (record->text), ==, 240);
  g_assert_false (test_task_file_has_label (file, 0, "not recorded"));
}

/* ---------------------------------------------------------------------- */

/* One label recorded by the flight recorder, dumped to @path. */
static void
dump_flight_recorder (const char *path)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (perfmon_tracer_start_flight_recorder (1, &error));
  g_assert_no_error (error);
  perfmon_task_add_label ("dumped");
  g_assert_true (perfmon_tracer_dump (path, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
}

/* Task logs hold what the program did, like every file perfmon writes:
 * only the user reads them. */
static void
test_file_modes (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  /* A umask that would let 0644 through. */
  mode_t old_umask = umask (022);

  dump_flight_recorder (fixture->path);
  g_assert_cmpint (g_stat (fixture->path, &st), ==, 0);
  g_assert_cmpuint (st.st_mode & 0777, ==, 0600);
  g_assert_cmpint (g_unlink (fixture->path), ==, 0);

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  g_assert_no_error (error);
  perfmon_task_add_label ("recorded");
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (fixture->path, &st), ==, 0);
  g_assert_cmpuint (st.st_mode & 0777, ==, 0600);

  umask (old_umask);
}

/* 40 kill -9 during flight-recorder dumps must not leave 40 temporary
 * files of the dump's size: a dump removes those of dead writers first
 * (and never a live writer's). */
static void
test_stale_temporaries (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dead = NULL;
  g_autofree char *live = NULL;
  g_autofree char *foreign = NULL;
  g_autofree char *users = NULL;
  struct utimbuf long_ago = { .actime = time (NULL) - 3600, .modtime = time (NULL) - 3600 };
  GPid child;
  const char *argv[] = { "/bin/true", NULL };
  int status;

  /* A pid that is certainly gone: a child we reaped. */
  g_assert_true (g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                NULL, NULL, &child, &error));
  g_assert_no_error (error);
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  dead = g_strdup_printf ("%s.p%d-AbCdEf", fixture->path, (int) child);
  live = g_strdup_printf ("%s.p%d-GhIjKl", fixture->path, (int) getpid ());
  foreign = g_strdup_printf ("%s-other.p%d-MnOpQr", fixture->path, (int) child);
  /* Named like a GLib temporary file and old, but in the user's directory
   * it may be the user's: never touched. */
  users = g_strdup_printf ("%s.backup", fixture->path);
  g_file_set_contents (users, "the user's", -1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (utime (users, &long_ago), ==, 0);
  g_file_set_contents (dead, "partial", -1, &error);
  g_assert_no_error (error);
  g_file_set_contents (live, "partial", -1, &error);
  g_assert_no_error (error);
  g_file_set_contents (foreign, "not ours", -1, &error);
  g_assert_no_error (error);

  dump_flight_recorder (fixture->path);

  g_assert_false (g_file_test (dead, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (live, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (foreign, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (users, G_FILE_TEST_EXISTS));
  g_unlink (live);
  g_unlink (foreign);
  g_unlink (users);
}

static void
test_flight_recorder_window (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;

  g_assert_true (perfmon_tracer_start_flight_recorder (1, &error));
  g_assert_no_error (error);
  perfmon_task_add_label ("old");
  /* Well past the 1 s window. */
  g_usleep (1500 * 1000);
  perfmon_task_add_label ("new");
  g_assert_true (perfmon_tracer_dump (fixture->path, &error));
  g_assert_no_error (error);
  /* Still recording after a dump. */
  g_assert_true (perfmon_tracer_is_active ());
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);

  file = test_task_file_load (fixture->path);
  g_assert_true (test_task_file_has_label (file, 0, "new"));
  g_assert_false (test_task_file_has_label (file, 0, "old"));
  /* The flight recorder writes no file when it stops. */
  g_assert_true (perfmon_tracer_start_flight_recorder (1, &error));
  g_assert_true (perfmon_tracer_stop (&error));
}

static gboolean
flight_task (gpointer data)
{
  return G_SOURCE_REMOVE;
}

/* The flight recorder holds its seconds at its stated rate, 2000 tasks a
 * second on a thread: 15 s of that are 30000 tasks, all in the dump. */
#define FLIGHT_SECONDS 15

static void
test_flight_recorder_holds_its_seconds (Fixture       *fixture,
                                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  guint n_dispatches = 0, n_ends = 0;

  /* A process of its own: no buffer size set by another test. */
  if (test_run_in_own_process ())
    return;

  g_assert_true (perfmon_tracer_start_flight_recorder (FLIGHT_SECONDS, &error));
  g_assert_no_error (error);
  /* This thread owns the default context: each runs at once, a task. */
  for (guint i = 0; i < FLIGHT_SECONDS * 2000; i++)
    perfmon_main_context_invoke (NULL, flight_task, NULL);
  g_assert_true (perfmon_tracer_dump (fixture->path, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  for (guint i = 0; i < file->records->len; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);

      n_dispatches += record->type == PERFMON_TASK_RECORD_DISPATCH;
      n_ends += record->type == PERFMON_TASK_RECORD_END;
    }
  g_assert_cmpuint (n_dispatches, ==, FLIGHT_SECONDS * 2000);
  g_assert_cmpuint (n_ends, ==, FLIGHT_SECONDS * 2000);
}

static void
test_flight_recorder_overwrites (Fixture       *fixture,
                                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  guint n_labels;

  g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
  g_assert_true (perfmon_tracer_start_flight_recorder (600, &error));
  for (guint i = 0; i < 20000; i++)
    perfmon_task_add_label ("label %u of the flight recorder", i);
  g_assert_true (perfmon_tracer_dump (fixture->path, &error));
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  n_labels = test_task_file_count (file, PERFMON_TASK_RECORD_LABEL, 0);
  /* The newest that fit in 64 KiB, in order; nothing counted as dropped. */
  g_assert_cmpuint (n_labels, >, 500);
  g_assert_cmpuint (n_labels, <, 20000);
  g_assert_cmpuint (file->header.dropped_records, ==, 0);
  g_assert_true (test_task_file_has_label (file, 0, "label 19999 of the flight recorder"));
  g_assert_false (test_task_file_has_label (file, 0, "label 0 of the flight recorder"));
  for (guint i = 0; i < n_labels; i++)
    {
      const PerfmonTaskLabelRecord *record =
        (const PerfmonTaskLabelRecord *) test_task_file_get (file, PERFMON_TASK_RECORD_LABEL, 0, i);
      g_autofree char *expected = g_strdup_printf ("label %u of the flight recorder", 20000 - n_labels + i);

      g_assert_cmpstr (record->text, ==, expected);
    }
}

typedef struct
{
  guint    index;
  gboolean stop;      /* atomic */
} Writer;

static gpointer
write_labels (gpointer data)
{
  Writer *writer = data;

  for (guint n = 0; !g_atomic_int_get (&writer->stop); n++)
    perfmon_task_add_label ("thread %u label %u padding to vary the chunk ends%.*s",
                            writer->index, n, (int) (n % 13), "xxxxxxxxxxxxx");
  return NULL;
}

/* Dumps while three threads wrap their small buffers over and over: every
 * dump is well formed, and what it holds of each thread is a run of that
 * thread's labels with no torn one and none missing in between. */
static void
test_flight_recorder_concurrent_dumps (Fixture       *fixture,
                                       gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  Writer writers[3];
  GThread *threads[3];

  g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
  g_assert_true (perfmon_tracer_start_flight_recorder (600, &error));
  for (guint i = 0; i < G_N_ELEMENTS (writers); i++)
    {
      writers[i].index = i;
      writers[i].stop = FALSE;
      threads[i] = g_thread_new ("label-writer", write_labels, &writers[i]);
    }

  for (guint dump = 0; dump < 30; dump++)
    {
      g_autoptr(TestTaskFile) file = NULL;
      gint64 last[G_N_ELEMENTS (writers)] = { -1, -1, -1 };

      g_assert_true (perfmon_tracer_dump (fixture->path, &error));
      g_assert_no_error (error);
      file = test_task_file_load (fixture->path);
      for (guint i = 0; i < file->records->len; i++)
        {
          const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);
          const char *text = ((const PerfmonTaskLabelRecord *) record)->text;
          guint thread, n;
          g_autofree char *expected = NULL;

          if (record->type != PERFMON_TASK_RECORD_LABEL)
            continue;
          g_assert_cmpint (sscanf (text, "thread %u label %u", &thread, &n), ==, 2);
          g_assert_cmpuint (thread, <, G_N_ELEMENTS (writers));
          expected = g_strdup_printf ("thread %u label %u padding to vary the chunk ends%.*s",
                                      thread, n, (int) (n % 13), "xxxxxxxxxxxxx");
          g_assert_cmpstr (text, ==, expected);
          /* Records are sorted by time: a thread's come in its order. */
          if (last[thread] >= 0)
            g_assert_cmpint (n, ==, last[thread] + 1);
          last[thread] = n;
        }
    }

  for (guint i = 0; i < G_N_ELEMENTS (writers); i++)
    {
      g_atomic_int_set (&writers[i].stop, TRUE);
      g_thread_join (threads[i]);
    }
  g_assert_true (perfmon_tracer_stop (&error));
}

static void
test_dropped_records (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  guint n_labels;

  g_assert_true (perfmon_tracer_set_buffer_size (64 * 1024, &error));
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  for (guint i = 0; i < 5000; i++)
    perfmon_task_add_label ("label %u, long enough to fill the buffer in a few hundred records", i);
  g_assert_true (perfmon_tracer_stop (&error));

  file = test_task_file_load (fixture->path);
  n_labels = test_task_file_count (file, PERFMON_TASK_RECORD_LABEL, 0);
  g_assert_cmpuint (n_labels, >, 0);
  g_assert_cmpuint (file->header.dropped_records, >, 0);
  /* Every record is either in the file or counted. */
  g_assert_cmpuint (n_labels + file->header.dropped_records, ==, 5000);
  /* The first ones are kept, the later ones dropped. */
  g_assert_true (test_task_file_has_label (file, 0, "label 0, long enough to fill the buffer in a few hundred records"));
}

static void
test_errors (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *missing_dir = g_build_filename (fixture->dir, "missing", NULL);
  g_autofree char *bad_path = g_build_filename (missing_dir, "tasks.log", NULL);

  g_assert_false (perfmon_tracer_stop (&error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE);
  g_clear_error (&error);
  g_assert_false (perfmon_tracer_dump (fixture->path, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE);
  g_clear_error (&error);

  g_assert_false (perfmon_tracer_start_flight_recorder (0, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "seconds"));
  g_clear_error (&error);
  g_assert_false (perfmon_tracer_start_flight_recorder (3601, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  g_assert_false (perfmon_tracer_set_buffer_size (1024, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "buffer size"));
  g_clear_error (&error);

  g_assert_false (perfmon_tracer_start (bad_path, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (error->message, bad_path));
  g_clear_error (&error);
  g_assert_false (perfmon_tracer_is_active ());

  g_assert_cmpint (g_mkdir (missing_dir, 0700), ==, 0);
  g_assert_true (perfmon_tracer_start (bad_path, &error));
  g_assert_false (perfmon_tracer_start (fixture->path, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE);
  g_clear_error (&error);
  g_assert_false (perfmon_tracer_start_flight_recorder (10, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE);
  g_clear_error (&error);
  /* The recording stops even though its file cannot be written. */
  g_assert_cmpint (g_rmdir (missing_dir), ==, 0);
  g_assert_false (perfmon_tracer_stop (&error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_false (perfmon_tracer_is_active ());
}

/* ---------------------------------------------------------------------- */
/* D-Bus */

static const char test_interface_xml[] =
  "<node>"
  "  <interface name='org.perfmon.TracerTest'>"
  "    <method name='Ping'><arg type='s' direction='in'/><arg type='s' direction='out'/></method>"
  "    <method name='Quit'/>"
  "  </interface>"
  "</node>";

#define TEST_OBJECT_PATH "/org/perfmon/TracerTest"
#define TEST_INTERFACE   "org.perfmon.TracerTest"
#define TEST_SERVER_NAME "org.perfmon.TracerTestServer"

typedef struct
{
  GMainLoop *loop;
  guint64    handler_task;
} Server;

static void
server_method_call (GDBusConnection       *connection,
                    const char            *sender,
                    const char            *object_path,
                    const char            *interface_name,
                    const char            *method_name,
                    GVariant              *parameters,
                    GDBusMethodInvocation *invocation,
                    gpointer               user_data)
{
  Server *server = user_data;

  perfmon_dbus_method_invocation_begin (invocation);
  if (g_strcmp0 (method_name, "Ping") == 0)
    {
      const char *text;

      server->handler_task = perfmon_task_get_current ();
      g_variant_get (parameters, "(&s)", &text);
      perfmon_dbus_method_invocation_return_value (invocation, g_variant_new ("(s)", text));
    }
  else
    {
      perfmon_dbus_method_invocation_return_value (invocation, NULL);
      g_main_loop_quit (server->loop);
    }
  perfmon_dbus_method_invocation_end ();
}

static const GDBusInterfaceVTable server_vtable = { server_method_call, NULL, NULL, { 0 } };

static guint
register_server (GDBusConnection *connection,
                 Server          *server)
{
  g_autoptr(GDBusNodeInfo) node = g_dbus_node_info_new_for_xml (test_interface_xml, NULL);
  g_autoptr(GError) error = NULL;
  guint id = g_dbus_connection_register_object (connection, TEST_OBJECT_PATH, node->interfaces[0],
                                                &server_vtable, server, NULL, &error);

  g_assert_no_error (error);
  return id;
}

typedef struct
{
  GMainLoop       *loop;
  GDBusConnection *connection;
  const char      *destination;
  guint64          source_event;
  guint64          caller_task;
  guint64          reply_task;
  guint64          reply_source_event;
  char            *reply;
} Client;

static void
on_ping_reply (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  Client *client = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = perfmon_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);

  g_assert_no_error (error);
  g_variant_get (reply, "(s)", &client->reply);
  client->reply_task = perfmon_task_get_current ();
  client->reply_source_event = perfmon_source_event_get_current (NULL);
  g_main_loop_quit (client->loop);
}

gboolean
dbus_caller (gpointer data)
{
  Client *client = data;

  client->caller_task = perfmon_task_get_current ();
  perfmon_dbus_connection_call (client->connection, client->destination, TEST_OBJECT_PATH, TEST_INTERFACE,
                                "Ping", g_variant_new ("(s)", "hello"), G_VARIANT_TYPE ("(s)"),
                                G_DBUS_CALL_FLAGS_NONE, -1, NULL, on_ping_reply, client);
  return G_SOURCE_REMOVE;
}

/* Finds the DBUS_SEND or DBUS_RECV record of @sender and @serial (0: any)
 * whose task is @task_id (0: any). */
static const PerfmonTaskDBusRecord *
find_dbus (TestTaskFile          *file,
           PerfmonTaskRecordType  type,
           guint64                task_id,
           const char            *sender,
           guint32                serial)
{
  const PerfmonTaskRecordHeader *record;

  for (guint i = 0; (record = test_task_file_find (file, type, task_id, i)) != NULL; i++)
    {
      const PerfmonTaskDBusRecord *dbus = (const PerfmonTaskDBusRecord *) record;

      if ((sender == NULL || g_strcmp0 (dbus->sender, sender) == 0) && (serial == 0 || dbus->serial == serial))
        return dbus;
    }
  return NULL;
}

__attribute__ ((returns_nonnull)) static const PerfmonTaskDBusRecord *
get_dbus (TestTaskFile          *file,
          PerfmonTaskRecordType  type,
          guint64                task_id,
          const char            *sender,
          guint32                serial)
{
  const PerfmonTaskDBusRecord *record = find_dbus (file, type, task_id, sender, serial);

  if (record == NULL)
    g_error ("No D-Bus record of type %d for task %" G_GINT64_MODIFIER "x from %s serial %u",
             type, task_id, sender, serial);
  return record;
}

/* What the caller's and the server's files (the same one, when both run
 * in this process) must say about one Ping. */
static void
assert_ping_linked (TestTaskFile *client_file,
                    TestTaskFile *server_file,
                    const Client *client,
                    const char   *client_name,
                    const char   *server_name)
{
  const PerfmonTaskDBusRecord *call_sent, *call_received, *reply_sent, *reply_received;
  const PerfmonTaskDispatchRecord *reply_dispatch;

  call_sent = get_dbus (client_file, PERFMON_TASK_RECORD_DBUS_SEND, client->caller_task, client_name, 0);
  g_assert_nonnull (call_sent);
  g_assert_cmpuint (call_sent->serial, !=, 0);
  call_received = get_dbus (server_file, PERFMON_TASK_RECORD_DBUS_RECV, 0, client_name, call_sent->serial);
  g_assert_nonnull (call_received);
  /* The handler's task sent the reply. */
  reply_sent = get_dbus (server_file, PERFMON_TASK_RECORD_DBUS_SEND, call_received->task_id, server_name, 0);
  g_assert_nonnull (reply_sent);
  reply_received = get_dbus (client_file, PERFMON_TASK_RECORD_DBUS_RECV, client->reply_task, server_name,
                              reply_sent->serial);
  g_assert_nonnull (reply_received);

  /* The handler and the reply have no local parent. */
  g_assert_cmpuint (find_dispatch (server_file, call_received->task_id)->parent_id, ==, call_received->task_id);
  reply_dispatch = find_dispatch (client_file, client->reply_task);
  g_assert_cmpuint (reply_dispatch->parent_id, ==, client->reply_task);
  /* The reply belongs to the call's source event. */
  g_assert_cmpuint (reply_dispatch->source_event_id, ==, client->source_event);
  g_assert_cmpuint (client->reply_source_event, ==, client->source_event);
  g_assert_true (test_task_file_has_label (server_file, call_received->task_id,
                                           "D-Bus " TEST_INTERFACE ".Ping on " TEST_OBJECT_PATH));
}

static void
test_dbus_one_process (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GTestDBus) bus = NULL;
  g_autoptr(GDBusConnection) server_connection = NULL;
  g_autoptr(GDBusConnection) client_connection = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(TestTaskFile) file = NULL;
  Server server = { loop, 0 };
  Client client = { loop, NULL, };
  guint registration;

  bus = test_private_bus_new ();
  server_connection = test_bus_connect (bus);
  client_connection = test_bus_connect (bus);
  registration = register_server (server_connection, &server);

  client.connection = client_connection;
  client.destination = g_dbus_connection_get_unique_name (server_connection);
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  client.source_event = perfmon_source_event_begin (PERFMON_SOURCE_EVENT_POINTER);
  perfmon_idle_add (dbus_caller, &client);
  perfmon_source_event_end ();
  g_main_loop_run (loop);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  g_assert_cmpstr (client.reply, ==, "hello");
  g_assert_cmpuint (server.handler_task, !=, 0);

  file = test_task_file_load (fixture->path);
  assert_ping_linked (file, file, &client, g_dbus_connection_get_unique_name (client_connection),
                      g_dbus_connection_get_unique_name (server_connection));
  g_assert_nonnull (find_dbus (file, PERFMON_TASK_RECORD_DBUS_RECV, server.handler_task, NULL, 0));

  g_free (client.reply);
  g_dbus_connection_unregister_object (server_connection, registration);
  g_dbus_connection_close_sync (server_connection, NULL, NULL);
  g_dbus_connection_close_sync (client_connection, NULL, NULL);
  g_test_dbus_down (bus);
}

/* The server process of the two-process test: traces into @path, serves
 * until Quit, and says "ready <unique name>" on stdout once it owns its
 * name. */
static int
run_dbus_server (const char *path)
{
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(GVariant) owned = NULL;
  g_autoptr(GError) error = NULL;
  Server server = { loop, 0 };

  g_set_prgname ("test-tracer-server");
  if (!perfmon_tracer_start (path, &error))
    g_error ("%s", error->message);
  connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  if (connection == NULL)
    g_error ("%s", error->message);
  register_server (connection, &server);
  owned = g_dbus_connection_call_sync (connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "RequestName",
                                       g_variant_new ("(su)", TEST_SERVER_NAME, 4 /* DO_NOT_QUEUE */),
                                       G_VARIANT_TYPE ("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
  if (owned == NULL)
    g_error ("%s", error->message);
  g_print ("ready %s\n", g_dbus_connection_get_unique_name (connection));
  fflush (stdout);
  g_main_loop_run (loop);
  g_dbus_connection_flush_sync (connection, NULL, NULL);
  if (!perfmon_tracer_stop (&error))
    g_error ("%s", error->message);
  return 0;
}

static void
test_dbus_two_processes (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GTestDBus) bus = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) server = NULL;
  g_autoptr(GDataInputStream) server_out = NULL;
  g_autoptr(TestTaskFile) client_file = NULL;
  g_autoptr(TestTaskFile) server_file = NULL;
  g_autoptr(GVariant) quit = NULL;
  g_autofree char *server_path = g_build_filename (fixture->dir, "server.log", NULL);
  g_autofree char *line = NULL;
  Client client = { loop, NULL, };

  bus = test_private_bus_new ();
  server = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error,
                             "/proc/self/exe", "--dbus-server", server_path, NULL);
  g_assert_no_error (error);
  server_out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (server));
  line = g_data_input_stream_read_line_utf8 (server_out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (line, "ready :"));

  connection = test_bus_connect (bus);
  client.connection = connection;
  client.destination = TEST_SERVER_NAME;
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  client.source_event = perfmon_source_event_begin (PERFMON_SOURCE_EVENT_TOUCH);
  perfmon_idle_add (dbus_caller, &client);
  perfmon_source_event_end ();
  g_main_loop_run (loop);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_cmpstr (client.reply, ==, "hello");

  quit = g_dbus_connection_call_sync (connection, TEST_SERVER_NAME, TEST_OBJECT_PATH, TEST_INTERFACE, "Quit",
                                      NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_wait_check (server, NULL, &error));
  g_assert_no_error (error);

  client_file = test_task_file_load (fixture->path);
  server_file = test_task_file_load (server_path);
  g_assert_cmpuint (client_file->header.pid, !=, server_file->header.pid);
  g_assert_cmpstr (server_file->header.process_name, ==, "test-tracer-server");
  assert_ping_linked (client_file, server_file, &client, g_dbus_connection_get_unique_name (connection),
                      line + strlen ("ready "));

  /* The reader makes the two files one graph: the server's handler is the
   * caller's child, the client's reply handler the handler's, and all of
   * them belong to the touch that started it. */
  {
    const char *paths[] = { fixture->path, server_path, NULL };
    g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_files (paths, &error);
    const PerfmonTaskDBusRecord *call_sent =
      get_dbus (client_file, PERFMON_TASK_RECORD_DBUS_SEND, client.caller_task, NULL, 0);
    const PerfmonTaskDBusRecord *call_received =
      get_dbus (server_file, PERFMON_TASK_RECORD_DBUS_RECV, 0, NULL, call_sent->serial);
    PerfmonTask *handler, *reply;
    g_autofree guint64 *ancestors = NULL;
    g_autofree guint64 *followers = NULL;
    gsize n_ancestors, n_followers;
    gboolean found_handler = FALSE, found_reply = FALSE;

    g_assert_no_error (error);
    handler = perfmon_task_log_find_task (log, call_received->task_id);
    reply = perfmon_task_log_find_task (log, client.reply_task);
    g_assert_nonnull (handler);
    g_assert_nonnull (reply);
    g_assert_cmpuint (perfmon_task_get_process (handler), ==, server_file->header.pid);
    g_assert_cmpstr (perfmon_task_get_process_name (handler), ==, "test-tracer-server");
    g_assert_cmpuint (perfmon_task_get_parent_id (handler), ==, client.caller_task);
    g_assert_cmpuint (perfmon_task_get_parent_id (reply), ==, handler->id);
    g_assert_cmpuint (perfmon_task_get_source_event_id (handler), ==, client.source_event);
    g_assert_cmpint (perfmon_task_get_source_event_type (handler), ==, PERFMON_SOURCE_EVENT_TOUCH);

    ancestors = perfmon_task_log_find_ancestors (log, client.reply_task, &n_ancestors);
    g_assert_cmpuint (n_ancestors, ==, 2);
    g_assert_cmpuint (ancestors[0], ==, handler->id);
    g_assert_cmpuint (ancestors[1], ==, client.caller_task);

    followers = perfmon_task_log_find_followers (log, client.caller_task, &n_followers);
    for (gsize i = 0; i < n_followers; i++)
      {
        found_handler |= followers[i] == handler->id;
        found_reply |= followers[i] == client.reply_task;
      }
    g_assert_true (found_handler);
    g_assert_true (found_reply);

    /* The Chrome trace shows both messages as flows the tools draw (the
     * call from the caller's run to the handler's, the reply from the
     * handler's to the reply's), and names the handler after its method. */
    {
      g_autofree char *json = perfmon_task_log_to_chrome_trace (log);
      g_autoptr(GPtrArray) targets = g_ptr_array_new_with_free_func (g_free);
      g_autofree char *handler_id = g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", handler->id);
      g_autofree char *reply_id = g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", client.reply_task);

      g_assert_cmpuint (test_check_chrome_trace (json, "D-Bus message", targets), ==, 2);
      g_assert_true (g_ptr_array_find_with_equal_func (targets, handler_id, g_str_equal, NULL));
      g_assert_true (g_ptr_array_find_with_equal_func (targets, reply_id, g_str_equal, NULL));
      g_assert_nonnull (strstr (json, "\"name\":\"" TEST_INTERFACE ".Ping\""));
      g_assert_null (strstr (json, "\"name\":\"perfmon_dbus_method_invocation_begin\""));
    }
  }

  g_free (client.reply);
  g_dbus_connection_close_sync (connection, NULL, NULL);
  g_test_dbus_down (bus);
}

int
main (int   argc,
      char *argv[])
{
  if (argc == 3 && strcmp (argv[1], "--dbus-server") == 0)
    return run_dbus_server (argv[2]);

  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ((path), Fixture, NULL, fixture_set_up, (func), fixture_tear_down)

  ADD ("/tracer/chain", test_chain);
  ADD ("/tracer/flight-recorder-holds-its-seconds", test_flight_recorder_holds_its_seconds);
  ADD ("/tracer/timeout-queueing-from-due-time", test_timeout_queueing_from_due_time);
  ADD ("/tracer/repeating-timeout", test_repeating_timeout);
  ADD ("/tracer/invoke-inline", test_invoke_inline);
  ADD ("/tracer/gtask", test_gtask);
  ADD ("/tracer/labels", test_labels);
  ADD ("/tracer/file-modes", test_file_modes);
  ADD ("/tracer/stale-temporaries", test_stale_temporaries);
  ADD ("/tracer/flight-recorder/window", test_flight_recorder_window);
  ADD ("/tracer/flight-recorder/overwrites", test_flight_recorder_overwrites);
  ADD ("/tracer/flight-recorder/concurrent-dumps", test_flight_recorder_concurrent_dumps);
  ADD ("/tracer/dropped-records", test_dropped_records);
  ADD ("/tracer/errors", test_errors);
  ADD ("/tracer/dbus/one-process", test_dbus_one_process);
  ADD ("/tracer/dbus/two-processes", test_dbus_two_processes);

  return g_test_run ();
}
