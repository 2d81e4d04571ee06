/* perfmon-dispatch.c: the dispatch wrappers, GLib's calls as tasks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-dispatch.h"
#include "perfmon-dispatch-private.h"
#include "perfmon-tracer-private.h"

/* perfmon_idle_add(), perfmon_timeout_add(), perfmon_main_context_invoke(),
 * perfmon_thread_pool_push() and perfmon_task_run_in_thread() are the GLib
 * calls of the same name plus a task: the dispatch is recorded where the
 * call is made (_perfmon_task_dispatch()) and the callback runs between
 * _perfmon_task_enter() and _perfmon_task_leave() wherever it runs. The
 * recording itself (ids, buffers, the thread's current task) is the
 * recorder's, perfmon-tracer.c; automatic tasks are
 * perfmon-automatic-tasks.c's.
 *
 * With tracing off, the wrappers of sources, invokes and GTasks are the
 * GLib calls they mirror and nothing more: such a source runs untraced
 * even if tracing starts before it runs (with the per-dispatch hook, its
 * dispatches are automatic tasks then). A thread pool's item still takes
 * one allocation, which the pool's trampoline needs to tell items apart. */

/* A GSource that runs one task: an idle (interval 0) or a timeout. One
 * allocation, like GLib's own idle and timeout sources. */
typedef struct
{
  GSource        source;
  PerfmonTaskIds ids;
  guint          interval_ms;
} TaskSource;

gboolean
_perfmon_task_source_prepare (GSource *source,
                              int     *timeout)
{
  *timeout = 0;
  return TRUE;
}

static gboolean
task_source_dispatch (GSource     *source,
                      GSourceFunc  callback,
                      gpointer     user_data)
{
  TaskSource *self = (TaskSource *) source;
  PerfmonTaskContext saved;
  gboolean again;

  if (callback == NULL)
    {
      g_warning ("perfmon task source dispatched without callback. "
                 "You must call g_source_set_callback().");
      return G_SOURCE_REMOVE;
    }

  _perfmon_task_enter (&self->ids, &saved);
  again = callback (user_data);
  _perfmon_task_leave (&saved);

  if (again && self->interval_ms > 0)
    g_source_set_ready_time (source, g_source_get_time (source) + (gint64) self->interval_ms * 1000);
  return again;
}

static GSourceFuncs idle_task_funcs = {
  .prepare = _perfmon_task_source_prepare,
  .dispatch = task_source_dispatch,
};

/* Timeouts become ready through g_source_set_ready_time(). A prepare of
 * their own (what a missing one does) tells the automatic tasks' observer
 * that the source is a wrapper's, even with its dispatch hooked. */
gboolean
_perfmon_timeout_task_source_prepare (GSource *source,
                                      int     *timeout)
{
  *timeout = -1;
  return FALSE;
}

static GSourceFuncs timeout_task_funcs = {
  .prepare = _perfmon_timeout_task_source_prepare,
  .dispatch = task_source_dispatch,
};

static GSource *
task_source_new (guint          interval_ms,
                 int            priority,
                 GSourceFunc    function,
                 gpointer       data,
                 GDestroyNotify notify)
{
  GSource *source = g_source_new (interval_ms > 0 ? &timeout_task_funcs : &idle_task_funcs,
                                  sizeof (TaskSource));
  TaskSource *self = (TaskSource *) source;

  self->interval_ms = interval_ms;
  if (interval_ms > 0)
    g_source_set_ready_time (source, g_get_monotonic_time () + (gint64) interval_ms * 1000);
  if (priority != G_PRIORITY_DEFAULT)
    g_source_set_priority (source, priority);
  g_source_set_callback (source, function, data, notify);
  /* A timeout is due its interval after the dispatch: queueing counts from
   * then. */
  _perfmon_task_dispatch_delayed (&self->ids, function, interval_ms);
  return source;
}

static guint
attach_task_source (GSource *source)
{
  guint id = g_source_attach (source, NULL);

  g_source_unref (source);
  return id;
}

/**
 * perfmon_idle_add_full: (rename-to perfmon_idle_add)
 * @priority: the priority of the idle source, typically in the range
 *   between %G_PRIORITY_DEFAULT_IDLE and %G_PRIORITY_HIGH_IDLE
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data when the source is removed
 *
 * g_idle_add_full() as a task: the dispatch is recorded now, as a task of
 * the calling thread's current task and source event, and each run of
 * @function is one BEGIN … END of that task, with the task current on the
 * thread that runs it (tasks it dispatches are its children). The source
 * is attached to the global-default main context, as GLib's is. With
 * tracing off it is g_idle_add_full(), at no extra cost.
 *
 * Any thread may call it.
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_idle_add_full (int            priority,
                       GSourceFunc    function,
                       gpointer       data,
                       GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  /* Nobody traces: GLib's idle, which costs nothing more. */
  if (!_perfmon_tracer_is_on ())
    return g_idle_add_full (priority, function, data, notify);
  return attach_task_source (task_source_new (0, priority, function, data, notify));
}

/**
 * perfmon_idle_add: (skip)
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_idle_add_full() at %G_PRIORITY_DEFAULT_IDLE with no destroy
 * notify, as g_idle_add().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_idle_add (GSourceFunc function,
                  gpointer    data)
{
  return perfmon_idle_add_full (G_PRIORITY_DEFAULT_IDLE, function, data, NULL);
}

/**
 * perfmon_timeout_add_full: (rename-to perfmon_timeout_add)
 * @priority: the priority of the timeout source, typically
 *   %G_PRIORITY_DEFAULT
 * @interval: the time between calls to @function, in milliseconds; more
 *   than 0
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data when the source is removed
 *
 * g_timeout_add_full() as a task: dispatched once, now; each time
 * @function runs is one BEGIN … END of the same task. See
 * perfmon_idle_add_full(). An @interval of 0 is an idle at @priority.
 * With tracing off it is g_timeout_add_full().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_timeout_add_full (int            priority,
                          guint          interval,
                          GSourceFunc    function,
                          gpointer       data,
                          GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  if (!_perfmon_tracer_is_on ())
    return interval > 0 ? g_timeout_add_full (priority, interval, function, data, notify)
                        : g_idle_add_full (priority, function, data, notify);
  return attach_task_source (task_source_new (interval, priority, function, data, notify));
}

/**
 * perfmon_timeout_add: (skip)
 * @interval: the time between calls to @function, in milliseconds
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_timeout_add_full() at %G_PRIORITY_DEFAULT with no destroy
 * notify, as g_timeout_add().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_timeout_add (guint       interval,
                     GSourceFunc function,
                     gpointer    data)
{
  return perfmon_timeout_add_full (G_PRIORITY_DEFAULT, interval, function, data, NULL);
}

/* Runs the task of @ids now, on the calling thread, until @function
 * returns FALSE, as g_main_context_invoke() does. */
static void
run_task_inline (const PerfmonTaskIds *ids,
                 GSourceFunc           function,
                 gpointer              data)
{
  gboolean again;

  do
    {
      PerfmonTaskContext saved;

      _perfmon_task_enter (ids, &saved);
      again = function (data);
      _perfmon_task_leave (&saved);
    }
  while (again);
}

/**
 * perfmon_main_context_invoke_full: (rename-to perfmon_main_context_invoke)
 * @context: (nullable): a #GMainContext, or %NULL for the global-default
 *   main context
 * @priority: the priority at which to run @function
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data after @function ran for the
 *   last time
 *
 * g_main_context_invoke_full() as a task: when the calling thread owns
 * @context, or can acquire it, @function runs at once (still a task, a
 * child of the caller's); otherwise it runs from an idle source attached
 * to @context, on the thread that runs @context. Either way, as in GLib,
 * @function is called again while it returns %TRUE, each call one
 * BEGIN … END of the task. With tracing off it is
 * g_main_context_invoke_full().
 *
 * Any thread may call it.
 *
 * Since: 0.1
 */
void
perfmon_main_context_invoke_full (GMainContext  *context,
                                  int            priority,
                                  GSourceFunc    function,
                                  gpointer       data,
                                  GDestroyNotify notify)
{
  g_return_if_fail (function != NULL);

  if (context == NULL)
    context = g_main_context_default ();

  if (!_perfmon_tracer_is_on ())
    g_main_context_invoke_full (context, priority, function, data, notify);
  else if (g_main_context_is_owner (context))
    {
      PerfmonTaskIds ids;

      _perfmon_task_dispatch (&ids, function);
      run_task_inline (&ids, function, data);
      if (notify != NULL)
        notify (data);
    }
  else if (g_main_context_acquire (context))
    {
      PerfmonTaskIds ids;

      _perfmon_task_dispatch (&ids, function);
      g_main_context_push_thread_default (context);
      run_task_inline (&ids, function, data);
      g_main_context_pop_thread_default (context);
      g_main_context_release (context);
      if (notify != NULL)
        notify (data);
    }
  else
    {
      GSource *source = task_source_new (0, priority, function, data, notify);

      g_source_attach (source, context);
      g_source_unref (source);
    }
}

/**
 * perfmon_main_context_invoke: (skip)
 * @context: (nullable): a #GMainContext, or %NULL for the global-default
 *   main context
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_main_context_invoke_full() at %G_PRIORITY_DEFAULT with no
 * destroy notify, as g_main_context_invoke().
 *
 * Since: 0.1
 */
void
perfmon_main_context_invoke (GMainContext *context,
                             GSourceFunc   function,
                             gpointer      data)
{
  perfmon_main_context_invoke_full (context, G_PRIORITY_DEFAULT, function, data, NULL);
}

/* The pool's user data: what the items run. */
typedef struct
{
  GFunc    func;
  gpointer user_data;
} PoolFunc;

/* An item carries its function, so that workers never look at the
 * PoolFunc, which perfmon_thread_pool_free() frees. */
typedef struct
{
  PerfmonTaskIds ids;
  GFunc          func;
  gpointer       data;
  gpointer       user_data;
} PoolItem;

static void
pool_trampoline (gpointer item_data,
                 gpointer pool_data)
{
  PoolItem *item = item_data;
  PerfmonTaskContext saved;

  _perfmon_task_enter (&item->ids, &saved);
  item->func (item->data, item->user_data);
  _perfmon_task_leave (&saved);
  g_free (item);
}

gboolean
_perfmon_dispatch_owns_pool_func (GFunc func)
{
  return func == pool_trampoline;
}

/**
 * perfmon_thread_pool_new: (skip)
 * @func: the function to run, in a thread of the pool, for each item
 *   pushed with perfmon_thread_pool_push()
 * @user_data: the second argument of @func
 * @max_threads: the most threads the pool runs at once, -1 for no limit
 * @exclusive: whether the pool has threads of its own
 * @error: return location for a #GError
 *
 * g_thread_pool_new() for traced items: each item pushed with
 * perfmon_thread_pool_push() is a task, dispatched at the push and run
 * (BEGIN … END) in the worker thread. Push only with
 * perfmon_thread_pool_push() and free it only with
 * perfmon_thread_pool_free(): the pool's items and user data are the
 * tracer's.
 *
 * Returns: (transfer full) (nullable): the pool, or %NULL with @error set
 *
 * Since: 0.1
 */
GThreadPool *
perfmon_thread_pool_new (GFunc     func,
                         gpointer  user_data,
                         int       max_threads,
                         gboolean  exclusive,
                         GError  **error)
{
  PoolFunc *pool_func;
  GThreadPool *pool;

  g_return_val_if_fail (func != NULL, NULL);

  pool_func = g_new0 (PoolFunc, 1);
  pool_func->func = func;
  pool_func->user_data = user_data;
  /* Items left in the queue when the pool is freed at once are freed
   * with it (their data is the caller's, as with GLib). */
  pool = g_thread_pool_new_full (pool_trampoline, pool_func, g_free, max_threads, exclusive, error);
  if (pool == NULL)
    g_free (pool_func);
  return pool;
}

/**
 * perfmon_thread_pool_push: (skip)
 * @pool: a pool made by perfmon_thread_pool_new()
 * @data: the item, the first argument of the pool's function
 * @error: return location for a #GError
 *
 * g_thread_pool_push() as a task: the dispatch is recorded now, as a child
 * of the calling thread's task, and the run in the worker thread has the
 * task current. Any thread may call it.
 *
 * Returns: %TRUE, or %FALSE with @error set if a thread could not be made
 *
 * Since: 0.1
 */
gboolean
perfmon_thread_pool_push (GThreadPool *pool,
                          gpointer     data,
                          GError     **error)
{
  PoolFunc *pool_func;
  PoolItem *item;

  g_return_val_if_fail (pool != NULL, FALSE);
  pool_func = pool->func == pool_trampoline ? pool->user_data : NULL;
  g_return_val_if_fail (pool_func != NULL, FALSE);

  item = g_new (PoolItem, 1);
  item->func = pool_func->func;
  item->data = data;
  item->user_data = pool_func->user_data;
  _perfmon_task_dispatch (&item->ids, pool_func->func);
  /* On an error GLib still queued the item, which runs later. */
  return g_thread_pool_push (pool, item, error);
}

/**
 * perfmon_thread_pool_free: (skip)
 * @pool: (transfer full): a pool made by perfmon_thread_pool_new()
 * @immediate: whether to drop the items not started yet
 * @wait_: whether to wait for the items to be processed
 *
 * g_thread_pool_free() for a pool made by perfmon_thread_pool_new().
 *
 * Since: 0.1
 */
void
perfmon_thread_pool_free (GThreadPool *pool,
                          gboolean     immediate,
                          gboolean     wait_)
{
  PoolFunc *pool_func;

  g_return_if_fail (pool != NULL);
  pool_func = pool->func == pool_trampoline ? pool->user_data : NULL;
  g_return_if_fail (pool_func != NULL);

  g_thread_pool_free (pool, immediate, wait_);
  g_free (pool_func);
}

typedef struct
{
  PerfmonTaskIds  ids;
  GTaskThreadFunc func;
} GTaskCarrier;

static GQuark
gtask_carrier_quark (void)
{
  static gsize quark;

  if (g_once_init_enter (&quark))
    g_once_init_leave (&quark, g_quark_from_static_string ("perfmon-task-ids"));
  return (GQuark) quark;
}

static void
gtask_trampoline (GTask        *task,
                  gpointer      source_object,
                  gpointer      task_data,
                  GCancellable *cancellable)
{
  GTaskCarrier *carrier = g_object_get_qdata (G_OBJECT (task), gtask_carrier_quark ());
  PerfmonTaskContext saved;

  _perfmon_task_enter (&carrier->ids, &saved);
  carrier->func (task, source_object, task_data, cancellable);
  _perfmon_task_leave (&saved);
}

gboolean
_perfmon_dispatch_gtask_is_wrapped (gpointer gtask)
{
  return g_object_get_qdata (gtask, gtask_carrier_quark ()) != NULL;
}

/**
 * perfmon_task_run_in_thread: (skip)
 * @task: a #GTask
 * @task_func: the function to run in a thread of GLib's pool
 *
 * g_task_run_in_thread() as a task: dispatched now, as a child of the
 * calling thread's task, and run (BEGIN … END) in the worker thread.
 * With tracing off it is g_task_run_in_thread().
 *
 * Since: 0.1
 */
void
perfmon_task_run_in_thread (GTask           *task,
                            GTaskThreadFunc  task_func)
{
  GTaskCarrier *carrier;

  g_return_if_fail (G_IS_TASK (task));
  g_return_if_fail (task_func != NULL);

  if (!_perfmon_tracer_is_on ())
    {
      g_task_run_in_thread (task, task_func);
      return;
    }
  carrier = g_new (GTaskCarrier, 1);
  carrier->func = task_func;
  _perfmon_task_dispatch (&carrier->ids, task_func);
  g_object_set_qdata_full (G_OBJECT (task), gtask_carrier_quark (), carrier, g_free);
  g_task_run_in_thread (task, gtask_trampoline);
}
