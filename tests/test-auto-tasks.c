/* test-auto-tasks.c: the tracer's observer of the per-dispatch hook, and
 * its side of the preload module's thread-pool interposers
 *
 * core/'s hook (issue 12, part A) calls the dispatch observer at each
 * attach and around each dispatch of a monitored context. These tests call
 * the observer exactly as the hook does, through a hook of their own (a
 * copy of a source's funcs whose dispatch brackets the original), and
 * check what the tracer records: every dispatch is a task, named by the
 * name the hook gives, whose parent is the task that attached the source,
 * on any thread.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "perfmon.h"
#include "perfmon-dispatch-observer-private.h"
#include "perfmon-interpose-private.h"
#include "perfmon-test-dirs.h"
#include "perfmon-tracer-private.h"

typedef struct
{
  char *dir;
  char *path;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-auto-tasks-XXXXXX");
  fixture->path = g_build_filename (fixture->dir, "tasks.log", NULL);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  g_assert_false (perfmon_tracer_is_active ());
  g_assert_null (_perfmon_dispatch_get_observer ());
  test_remove_tree (fixture->dir);
  g_free (fixture->path);
  g_free (fixture->dir);
}

/* ---------------------------------------------------------------------- */
/* The hook, as core/ applies it */

typedef struct
{
  const GSourceFuncs *original;
  GSourceFuncs  hooked;
} HookedFuncs;

static HookedFuncs hooked_funcs[8];
static const char *hook_name = "test source";

static gboolean
hooked_dispatch (GSource     *source,
                 GSourceFunc  callback,
                 gpointer     user_data)
{
  const PerfmonDispatchObserver *observer = _perfmon_dispatch_get_observer ();
  HookedFuncs *funcs = (HookedFuncs *) ((char *) source->source_funcs - G_STRUCT_OFFSET (HookedFuncs, hooked));
  gpointer token = NULL;
  gboolean again;

  if (observer != NULL)
    token = observer->dispatch_begin (source, hook_name);
  again = funcs->original->dispatch (source, callback, user_data);
  if (observer != NULL)
    observer->dispatch_end (source, token);
  return again;
}

/* Replaces @source's dispatch with the hook's; prepare, check and
 * finalize stay GLib's. */
static void
hook_source (GSource *source)
{
  for (guint i = 0; i < G_N_ELEMENTS (hooked_funcs); i++)
    {
      if (hooked_funcs[i].original == NULL)
        {
          hooked_funcs[i].original = source->source_funcs;
          hooked_funcs[i].hooked = *source->source_funcs;
          hooked_funcs[i].hooked.dispatch = hooked_dispatch;
        }
      if (hooked_funcs[i].original == source->source_funcs)
        {
          source->source_funcs = &hooked_funcs[i].hooked;
          return;
        }
    }
  g_assert_not_reached ();
}

/* g_source_attach() as the hook sees it: then the observer's attached(). */
static guint
attach_hooked (GSource      *source,
               GMainContext *context)
{
  const PerfmonDispatchObserver *observer = _perfmon_dispatch_get_observer ();
  guint id;

  hook_source (source);
  id = g_source_attach (source, context);
  if (observer != NULL && observer->attached != NULL)
    observer->attached (source);
  return id;
}

static guint
hooked_idle_add (GSourceFunc function,
                 gpointer    data)
{
  GSource *source = g_idle_source_new ();
  guint id;

  g_source_set_callback (source, function, data, NULL);
  id = attach_hooked (source, NULL);
  g_source_unref (source);
  return id;
}

static PerfmonTaskLog *
stop_and_load (const char *path)
{
  g_autoptr(GError) error = NULL;
  PerfmonTaskLog *log;

  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  return log;
}

/* ---------------------------------------------------------------------- */

static void
test_observer_installed (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  const PerfmonDispatchObserver *observer;

  g_assert_null (_perfmon_dispatch_get_observer ());
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  observer = _perfmon_dispatch_get_observer ();
  g_assert_nonnull (observer);
  g_assert_nonnull (observer->attached);
  g_assert_nonnull (observer->dispatch_begin);
  g_assert_nonnull (observer->dispatch_end);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_null (_perfmon_dispatch_get_observer ());

  g_assert_true (perfmon_tracer_start_flight_recorder (5, &error));
  g_assert_true (_perfmon_dispatch_get_observer () == observer);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_null (_perfmon_dispatch_get_observer ());
}

/* ---------------------------------------------------------------------- */
/* The parent is the task that attached the source */

typedef struct
{
  guint64 attacher;
  guint64 automatic;
  guint64 source_event;
  gboolean done;
} Parentage;

static gboolean
automatic_callback (gpointer data)
{
  Parentage *parentage = data;

  parentage->automatic = perfmon_task_get_current ();
  parentage->source_event = perfmon_source_event_get_current (NULL);
  parentage->done = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
wrapper_attaches (gpointer data)
{
  Parentage *parentage = data;

  parentage->attacher = perfmon_task_get_current ();
  hooked_idle_add (automatic_callback, parentage);
  return G_SOURCE_REMOVE;
}

static void
test_parent_is_attacher (Fixture       *fixture,
                         gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  PerfmonTask *task;
  guint64 source_event;
  gsize n;
  g_autofree guint64 *ancestors = NULL;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  source_event = perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
  perfmon_idle_add (wrapper_attaches, &parentage);
  perfmon_source_event_end ();
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  /* The dispatch's end restored the thread's context. */
  g_assert_cmpuint (perfmon_task_get_current (), ==, 0);
  log = stop_and_load (fixture->path);

  g_assert_cmpuint (parentage.attacher, !=, 0);
  g_assert_cmpuint (parentage.automatic, !=, 0);
  g_assert_cmpuint (parentage.automatic, !=, parentage.attacher);
  g_assert_cmpuint (parentage.source_event, ==, source_event);

  task = perfmon_task_log_find_task (log, parentage.automatic);
  g_assert_nonnull (task);
  g_assert_cmpstr (perfmon_task_get_name (task), ==, "test source");
  g_assert_cmpuint (perfmon_task_get_parent_id (task), ==, parentage.attacher);
  g_assert_cmpuint (perfmon_task_get_source_event_id (task), ==, source_event);
  g_assert_cmpint (perfmon_task_get_source_event_type (task), ==, PERFMON_SOURCE_EVENT_KEY);
  g_assert_cmpuint (perfmon_task_get_n_runs (task), ==, 1);
  ancestors = perfmon_task_log_find_ancestors (log, parentage.automatic, &n);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (ancestors[0], ==, parentage.attacher);
  /* The wrapper's task and the automatic one, nothing more. */
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 2);
  g_assert_cmpuint (perfmon_task_log_get_unmatched_records (log), ==, 0);
}

/* Attached on another thread, inside a thread-pool task: that task is the
 * parent, and the dispatch runs on the main thread. (The main thread waits
 * for the attach to be over: the hook tells the observer after GLib's
 * attach, and a dispatch racing with that would be a root.) */
static GMutex attach_lock;
static GCond  attach_cond;
static gboolean attach_over;

static void
pool_attaches (gpointer item,
               gpointer user_data)
{
  Parentage *parentage = item;

  parentage->attacher = perfmon_task_get_current ();
  hooked_idle_add (automatic_callback, parentage);
  g_mutex_lock (&attach_lock);
  attach_over = TRUE;
  g_cond_signal (&attach_cond);
  g_mutex_unlock (&attach_lock);
}

static void
test_parent_on_other_thread (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  GThreadPool *pool;
  PerfmonTask *task;

  pool = perfmon_thread_pool_new (pool_attaches, NULL, 1, FALSE, &error);
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  g_assert_true (perfmon_thread_pool_push (pool, &parentage, &error));
  g_mutex_lock (&attach_lock);
  while (!attach_over)
    g_cond_wait (&attach_cond, &attach_lock);
  g_mutex_unlock (&attach_lock);
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  perfmon_thread_pool_free (pool, FALSE, TRUE);
  log = stop_and_load (fixture->path);

  task = perfmon_task_log_find_task (log, parentage.automatic);
  g_assert_nonnull (task);
  g_assert_cmpuint (perfmon_task_get_parent_id (task), ==, parentage.attacher);
  g_assert_cmpuint (perfmon_task_get_thread (perfmon_task_log_find_task (log, parentage.attacher)), !=,
                    perfmon_task_get_thread (task));
}

/* A source the hook saw no attach of (attached before the tracer started,
 * or its entry overwritten) runs as a root task, still named. */
static void
test_unknown_source_is_root (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  PerfmonTask *task;

  /* Attached with the tracer off: no entry. */
  hooked_idle_add (automatic_callback, &parentage);
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);

  task = perfmon_task_log_find_task (log, parentage.automatic);
  g_assert_nonnull (task);
  g_assert_true (perfmon_task_is_root (task));
  g_assert_cmpstr (perfmon_task_get_name (task), ==, "test source");
}

/* A new source at a dead source's address does not inherit its parent:
 * entries match by address and source id. */
static void
test_dead_source_entry (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  GSource *dead, *fresh;
  gpointer dead_address;
  PerfmonTaskIds ids;
  PerfmonTaskContext saved;
  PerfmonTask *task;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  /* Attached inside a task, then destroyed without running. */
  _perfmon_task_dispatch (&ids, NULL);
  _perfmon_task_enter (&ids, &saved);
  /* Too big for malloc's per-thread caches, which calloc() skips: the
   * next source of this size gets the dead one's block back. */
  dead = g_source_new (&g_idle_funcs, sizeof (GSource) + 2000);
  g_source_set_callback (dead, automatic_callback, &parentage, NULL);
  attach_hooked (dead, NULL);
  _perfmon_task_leave (&saved);
  dead_address = dead;
  g_source_destroy (dead);
  g_source_unref (dead);

  /* Attached without the hook seeing it. */
  fresh = g_source_new (&g_idle_funcs, sizeof (GSource) + 2000);
  if ((gpointer) fresh != dead_address)
    g_test_message ("the new source is not at the dead one's address; the test proves less");
  hook_source (fresh);
  g_source_set_callback (fresh, automatic_callback, &parentage, NULL);
  g_source_attach (fresh, NULL);
  g_source_unref (fresh);
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);

  task = perfmon_task_log_find_task (log, parentage.automatic);
  g_assert_nonnull (task);
  g_assert_true (perfmon_task_is_root (task));
  g_assert_cmpuint (perfmon_task_get_parent_id (task), !=, ids.task_id);
}

/* The table is bounded: many more live sources than slots, all attached
 * inside one task, all dispatched; those whose entry survived have the
 * task as parent, the rest are roots, none has another parent. */
#define MANY_SOURCES 10000

static gboolean
count_callback (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_REMOVE;
}

static void
test_bounded (Fixture       *fixture,
              gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  PerfmonTaskIds ids;
  PerfmonTaskContext saved;
  GPtrArray *tasks;
  guint done = 0, children = 0, roots = 0;

  g_assert_true (perfmon_tracer_set_buffer_size (32 * 1024 * 1024, &error));
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  _perfmon_task_dispatch (&ids, NULL);
  _perfmon_task_enter (&ids, &saved);
  for (guint i = 0; i < MANY_SOURCES; i++)
    hooked_idle_add (count_callback, &done);
  _perfmon_task_leave (&saved);
  while (done < MANY_SOURCES)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);
  g_assert_true (perfmon_tracer_set_buffer_size (2 * 1024 * 1024, &error));

  tasks = perfmon_task_log_get_tasks (log);
  for (guint i = 0; i < tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (tasks, i);

      if (perfmon_task_get_id (task) == ids.task_id)
        continue;
      if (perfmon_task_is_root (task))
        roots++;
      else
        {
          g_assert_cmpuint (perfmon_task_get_parent_id (task), ==, ids.task_id);
          children++;
        }
    }
  g_assert_cmpuint (children + roots, ==, MANY_SOURCES);
  /* Most entries were overwritten, the last ones attached survive. */
  g_assert_cmpuint (children, >, 0);
  g_assert_cmpuint (children, <=, 4096);
  g_assert_cmpuint (roots, >=, MANY_SOURCES - 4096);
}

/* ---------------------------------------------------------------------- */
/* Queueing: from when the source became ready, where that is knowable */

typedef struct
{
  guint64 tasks[2];
  guint   runs;
} Repeats;

static gboolean
repeating_callback (gpointer data)
{
  Repeats *repeats = data;

  repeats->tasks[repeats->runs++] = perfmon_task_get_current ();
  return repeats->runs < 2 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
test_queueing_idle (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Repeats repeats = { { 0, }, 0 };
  PerfmonTask *first, *second;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  hooked_idle_add (repeating_callback, &repeats);
  /* The idle waits at least this long before its first dispatch. */
  g_usleep (20 * 1000);
  while (repeats.runs < 2)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);

  first = perfmon_task_log_find_task (log, repeats.tasks[0]);
  second = perfmon_task_log_find_task (log, repeats.tasks[1]);
  g_assert_nonnull (first);
  g_assert_nonnull (second);
  /* Each dispatch is a task of its own. */
  g_assert_cmpuint (repeats.tasks[0], !=, repeats.tasks[1]);
  g_assert_cmpint (perfmon_task_get_queueing_time (first), >=, 20 * 1000);
  /* The second waited from no earlier than the first one's end. */
  g_assert_cmpint (perfmon_task_get_dispatch_time (second), >=, perfmon_task_get_end_time (first));
  g_assert_cmpint (perfmon_task_get_queueing_time (second), >=, 0);
}

static void
test_queueing_timeout (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  GSource *source;
  gint64 due;
  PerfmonTask *task;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  source = g_timeout_source_new (10);
  g_source_set_callback (source, automatic_callback, &parentage, NULL);
  attach_hooked (source, NULL);
  due = g_source_get_ready_time (source);
  g_source_unref (source);
  g_assert_cmpint (due, >, 0);
  /* Due in 10 ms, dispatched 30 ms or more later: it queued 20 ms. */
  g_usleep (30 * 1000);
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);

  task = perfmon_task_log_find_task (log, parentage.automatic);
  g_assert_nonnull (task);
  /* Dated at its due time, give or take the error of converting cycles
   * to ns; dated at the dispatch it would be 20 ms later. */
  g_assert_cmpint (perfmon_task_get_dispatch_time (task), >=, due - 1000);
  g_assert_cmpint (perfmon_task_get_dispatch_time (task), <=, due + 1000);
  g_assert_cmpint (perfmon_task_get_queueing_time (task), >=, 19 * 1000);
}

/* ---------------------------------------------------------------------- */

/* A wrapper's source is its own task: the hook adds none around it. */
static void
test_wrapper_sources_skipped (Fixture       *fixture,
                              gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Parentage parentage = { 0, };
  guint timeouts = 0;
  GSource *source;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  perfmon_idle_add (automatic_callback, &parentage);
  perfmon_timeout_add (1, count_callback, &timeouts);
  /* What a hook that saw these sources would do. */
  source = g_main_context_find_source_by_user_data (NULL, &parentage);
  g_assert_nonnull (source);
  hook_source (source);
  source = g_main_context_find_source_by_user_data (NULL, &timeouts);
  g_assert_nonnull (source);
  hook_source (source);
  while (!parentage.done || timeouts == 0)
    g_main_context_iteration (NULL, TRUE);
  log = stop_and_load (fixture->path);

  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 2);
  g_assert_cmpstr (perfmon_task_get_name (perfmon_task_log_find_task (log, parentage.automatic)), !=,
                   "test source");
}

/* Nested dispatches (a main loop run inside a dispatch) nest their tasks;
 * the tracer stopping between a begin and its end leaves the thread's
 * context right. */
typedef struct
{
  guint64 outer;
  guint64 inner;
  guint64 inner_parent_seen;
  guint64 after_inner;
  gboolean inner_done;
  gboolean outer_done;
} Nesting;

static gboolean
inner_callback (gpointer data)
{
  Nesting *nesting = data;

  nesting->inner = perfmon_task_get_current ();
  nesting->inner_done = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
outer_callback (gpointer data)
{
  Nesting *nesting = data;

  nesting->outer = perfmon_task_get_current ();
  hooked_idle_add (inner_callback, nesting);
  while (!nesting->inner_done)
    g_main_context_iteration (NULL, TRUE);
  nesting->after_inner = perfmon_task_get_current ();
  nesting->outer_done = TRUE;
  return G_SOURCE_REMOVE;
}

static void
test_nested (Fixture       *fixture,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Nesting nesting = { 0, };
  PerfmonTask *inner;

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  hooked_idle_add (outer_callback, &nesting);
  while (!nesting.outer_done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpuint (perfmon_task_get_current (), ==, 0);
  log = stop_and_load (fixture->path);

  g_assert_cmpuint (nesting.after_inner, ==, nesting.outer);
  inner = perfmon_task_log_find_task (log, nesting.inner);
  g_assert_nonnull (inner);
  g_assert_cmpuint (perfmon_task_get_parent_id (inner), ==, nesting.outer);
}

static gboolean
stopping_callback (gpointer data)
{
  Parentage *parentage = data;
  g_autoptr(GError) error = NULL;

  parentage->automatic = perfmon_task_get_current ();
  g_assert_true (perfmon_tracer_stop (&error));
  parentage->done = TRUE;
  return G_SOURCE_REMOVE;
}

static void
test_stop_inside_dispatch (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  Parentage parentage = { 0, };

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  hooked_idle_add (stopping_callback, &parentage);
  while (!parentage.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpuint (parentage.automatic, !=, 0);
  g_assert_cmpuint (perfmon_task_get_current (), ==, 0);
}

/* ---------------------------------------------------------------------- */
/* Tracing off: the wrappers are GLib's calls, nothing more */

static void
test_wrappers_untraced (Fixture       *fixture,
                        gconstpointer  data)
{
  guint counter = 0;
  guint id;
  GSource *source;

  g_assert_false (perfmon_tracer_is_active ());
  id = perfmon_idle_add (count_callback, &counter);
  source = g_main_context_find_source_by_id (NULL, id);
  g_assert_nonnull (source);
  /* GLib's own idle: no task carried, no allocation of ours. */
  g_assert_true (source->source_funcs == &g_idle_funcs);
  g_source_remove (id);

  id = perfmon_timeout_add (1000, count_callback, &counter);
  source = g_main_context_find_source_by_id (NULL, id);
  g_assert_nonnull (source);
  g_assert_true (source->source_funcs == &g_timeout_funcs);
  g_source_remove (id);
  g_assert_cmpuint (counter, ==, 0);
}

/* ---------------------------------------------------------------------- */
/* Thread pools, as the preload module's interposers drive them */

typedef struct
{
  GMutex   lock;
  GCond    cond;
  guint    runs;
  guint64  tasks[2];
  gpointer user_data_seen;
} PoolRuns;

/* Not static: its task is named after its symbol (-rdynamic). */
void pool_item_run (gpointer item,
                    gpointer user_data);

void
pool_item_run (gpointer item,
               gpointer user_data)
{
  PoolRuns *runs = item;

  g_mutex_lock (&runs->lock);
  runs->tasks[runs->runs++] = perfmon_task_get_current ();
  runs->user_data_seen = user_data;
  g_cond_signal (&runs->cond);
  g_mutex_unlock (&runs->lock);
}

static void
wait_for_runs (PoolRuns *runs,
               guint     n)
{
  g_mutex_lock (&runs->lock);
  while (runs->runs < n)
    g_cond_wait (&runs->cond, &runs->lock);
  g_mutex_unlock (&runs->lock);
}

static void
test_pool_items (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  PoolRuns runs = { 0, };
  GFunc func = pool_item_run;
  gpointer user_data = &runs.runs;
  PerfmonTaskIds ids;
  PerfmonTaskContext saved;
  GThreadPool *pool;
  PerfmonTask *task;

  /* g_thread_pool_new(), interposed. */
  g_assert_true (_perfmon_interpose_pool_new (&func, &user_data));
  g_assert_true (func != pool_item_run);
  pool = g_thread_pool_new (func, user_data, 1, FALSE, &error);
  g_assert_no_error (error);

  /* Tracing off: the item runs, untraced, with the pool's own user data. */
  _perfmon_interpose_pool_push (pool, &runs);
  g_thread_pool_push (pool, &runs, NULL);
  wait_for_runs (&runs, 1);
  g_assert_cmpuint (runs.tasks[0], ==, 0);
  g_assert_true (runs.user_data_seen == &runs.runs);

  /* Tracing on: pushed inside a task, run as its child in the worker. */
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  _perfmon_task_dispatch (&ids, NULL);
  _perfmon_task_enter (&ids, &saved);
  _perfmon_interpose_pool_push (pool, &runs);
  g_thread_pool_push (pool, &runs, NULL);
  _perfmon_task_leave (&saved);
  wait_for_runs (&runs, 2);

  /* g_thread_pool_free (…, TRUE), interposed. */
  g_thread_pool_free (pool, FALSE, TRUE);
  _perfmon_interpose_pool_freed (func, user_data);
  log = stop_and_load (fixture->path);

  g_assert_cmpuint (runs.tasks[1], !=, 0);
  task = perfmon_task_log_find_task (log, runs.tasks[1]);
  g_assert_nonnull (task);
  g_assert_cmpuint (perfmon_task_get_parent_id (task), ==, ids.task_id);
  g_assert_cmpstr (perfmon_task_get_name (task), ==, "pool_item_run");
  g_assert_cmpuint (perfmon_task_get_dispatch_thread (task), !=, perfmon_task_get_thread (task));
}

/* The tracer's own pools are tasks already: not hooked. */
static void
test_pool_own_not_hooked (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  GThreadPool *pool = perfmon_thread_pool_new (pool_item_run, NULL, 1, FALSE, &error);
  GFunc func = pool->func;
  gpointer user_data = pool->user_data;

  g_assert_false (_perfmon_interpose_pool_new (&func, &user_data));
  g_assert_true (func == pool->func);
  g_assert_true (user_data == pool->user_data);
  perfmon_thread_pool_free (pool, FALSE, TRUE);
}

/* ---------------------------------------------------------------------- */
/* Names: a thread records each name once per stretch of its buffer, not
 * once per task, and every task keeps its name */

#define N_NAMED 10000
#define SMALL_BUFFER (64 * 1024)

static const char * const cycle_names[] = { "[test] name one", "[test] name two", "[test] name three" };

typedef struct
{
  guint    runs;
  guint    limit;
  guint64 *tasks;
  const char * const *names;
  guint    n_names;
} Cycle;

/* Each dispatch records its task; the next one runs under the next name. */
static gboolean
cycling_callback (gpointer data)
{
  Cycle *cycle = data;

  cycle->tasks[cycle->runs++] = perfmon_task_get_current ();
  hook_name = cycle->names[cycle->runs % cycle->n_names];
  return cycle->runs < cycle->limit ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* Runs @limit dispatches of one idle, cycling through @names. */
static void
run_cycle (Cycle              *cycle,
           const char * const *names,
           guint               n_names,
           guint               limit)
{
  *cycle = (Cycle) { 0, limit, g_new0 (guint64, limit), names, n_names };
  hook_name = names[0];
  hooked_idle_add (cycling_callback, cycle);
  while (cycle->runs < cycle->limit)
    g_main_context_iteration (NULL, TRUE);
  hook_name = "test source";
}

/* Every task of @log has its name, the one @cycle ran it under; returns
 * how many of @cycle's tasks @log holds. */
static guint
check_cycle_names (PerfmonTaskLog *log,
                   const Cycle    *cycle)
{
  GPtrArray *tasks = perfmon_task_log_get_tasks (log);
  guint found = 0;

  for (guint i = 0; i < tasks->len; i++)
    g_assert_nonnull (perfmon_task_get_name (g_ptr_array_index (tasks, i)));
  for (guint i = 0; i < cycle->limit; i++)
    {
      PerfmonTask *task = perfmon_task_log_find_task (log, cycle->tasks[i]);

      if (task == NULL)
        continue;
      found++;
      g_assert_cmpstr (perfmon_task_get_name (task), ==, cycle->names[i % cycle->n_names]);
    }
  return found;
}

static void
test_names_flight_recorder (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Cycle cycle;
  guint found;

  /* A ring that wraps many times over. */
  g_assert_true (perfmon_tracer_set_buffer_size (SMALL_BUFFER, &error));
  g_assert_true (perfmon_tracer_start_flight_recorder (60, &error));
  run_cycle (&cycle, cycle_names, G_N_ELEMENTS (cycle_names), N_NAMED);
  g_assert_true (perfmon_tracer_dump (fixture->path, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_true (perfmon_tracer_set_buffer_size (2 * 1024 * 1024, &error));

  log = perfmon_task_log_new_from_file (fixture->path, &error);
  g_assert_no_error (error);
  found = check_cycle_names (log, &cycle);
  g_test_message ("%u of %u tasks in the log", found, N_NAMED);
  /* The most recent tasks are there, each with its name... */
  g_assert_nonnull (perfmon_task_log_find_task (log, cycle.tasks[N_NAMED - 1]));
  /* ...and as many as 64 KiB hold at 80 bytes a task and a name now and
   * then: over 600 (with a NAME record per task, 144 bytes, about 430). */
  g_assert_cmpuint (found, >=, 600);
  g_assert_cmpuint (found, <, N_NAMED);
  g_free (cycle.tasks);
}

static void
test_names_file (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  Cycle cycle;
  guint found;

  /* A file recording that fills its buffer: what does not fit is
   * dropped. */
  g_assert_true (perfmon_tracer_set_buffer_size (SMALL_BUFFER, &error));
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  run_cycle (&cycle, cycle_names, G_N_ELEMENTS (cycle_names), N_NAMED);
  log = stop_and_load (fixture->path);
  g_assert_true (perfmon_tracer_set_buffer_size (2 * 1024 * 1024, &error));

  found = check_cycle_names (log, &cycle);
  g_test_message ("%u of %u tasks in the log", found, N_NAMED);
  g_assert_cmpuint (perfmon_task_log_get_dropped_records (log), >, 0);
  /* The first tasks, each with its name: 64 KiB hold over 700 of them
   * (with a NAME record per task, about 450). */
  g_assert_nonnull (perfmon_task_log_find_task (log, cycle.tasks[0]));
  g_assert_cmpuint (found, >=, 700);
  g_free (cycle.tasks);
}

/* More names than the thread's name cache holds, and a name whose text
 * changes at the same address (after core says so). */
static void
test_names_many_and_changed (Fixture       *fixture,
                             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  static char changing[32];
  const char *changing_names[1] = { changing };
  Cycle many, before, after;

  for (guint i = 0; i < 300; i++)
    g_ptr_array_add (names, g_strdup_printf ("[test] source %u", i));

  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  run_cycle (&many, (const char * const *) names->pdata, names->len, 2 * names->len);
  g_strlcpy (changing, "[test] before", sizeof changing);
  run_cycle (&before, changing_names, 1, 2);
  g_strlcpy (changing, "[test] after", sizeof changing);
  _perfmon_dispatch_names_changed ();
  run_cycle (&after, changing_names, 1, 2);
  log = stop_and_load (fixture->path);

  g_assert_cmpuint (check_cycle_names (log, &many), ==, 2 * names->len);
  for (guint i = 0; i < 2; i++)
    {
      g_assert_cmpstr (perfmon_task_get_name (perfmon_task_log_find_task (log, before.tasks[i])), ==,
                       "[test] before");
      g_assert_cmpstr (perfmon_task_get_name (perfmon_task_log_find_task (log, after.tasks[i])), ==,
                       "[test] after");
    }
  g_free (many.tasks);
  g_free (before.tasks);
  g_free (after.tasks);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) \
  g_test_add ((path), Fixture, NULL, fixture_set_up, (func), fixture_tear_down)

  ADD ("/auto-tasks/observer-installed", test_observer_installed);
  ADD ("/auto-tasks/parent-is-attacher", test_parent_is_attacher);
  ADD ("/auto-tasks/parent-on-other-thread", test_parent_on_other_thread);
  ADD ("/auto-tasks/unknown-source-is-root", test_unknown_source_is_root);
  ADD ("/auto-tasks/dead-source-entry", test_dead_source_entry);
  ADD ("/auto-tasks/bounded", test_bounded);
  ADD ("/auto-tasks/queueing/idle", test_queueing_idle);
  ADD ("/auto-tasks/queueing/timeout", test_queueing_timeout);
  ADD ("/auto-tasks/wrapper-sources-skipped", test_wrapper_sources_skipped);
  ADD ("/auto-tasks/nested", test_nested);
  ADD ("/auto-tasks/stop-inside-dispatch", test_stop_inside_dispatch);
  ADD ("/auto-tasks/wrappers-untraced", test_wrappers_untraced);
  ADD ("/auto-tasks/pool/items", test_pool_items);
  ADD ("/auto-tasks/pool/own-not-hooked", test_pool_own_not_hooked);
  ADD ("/auto-tasks/names/flight-recorder", test_names_flight_recorder);
  ADD ("/auto-tasks/names/file", test_names_file);
  ADD ("/auto-tasks/names/many-and-changed", test_names_many_and_changed);

  return g_test_run ();
}
