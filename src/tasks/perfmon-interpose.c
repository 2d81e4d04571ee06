/* perfmon-interpose.c: the tracer's side of the preload module's
 * interposers of GLib's thread pools
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * An unmodified program's work goes to other threads through GThreadPool:
 * its own pools, and GTask's, which g_task_run_in_thread() uses, whether
 * the program or GIO calls it (GIO's own calls to g_task_run_in_thread()
 * bind inside libgio and cannot be interposed; its call to
 * g_thread_pool_push() goes through the PLT and can). Under
 * "perfmon run", the preload module interposes g_thread_pool_new(_full)(),
 * g_thread_pool_push() and g_thread_pool_free(); with these, each pushed
 * item is a task, a child of the task that pushed it.
 *
 * A pool keeps its items (GTask's pool sorts them and moves them to the
 * front: they must stay the objects pushed), so the task an item carries
 * waits for it in a side table, item → ids, from the push to the run. The
 * table takes a lock: a push takes GLib's queue lock anyway. It holds at
 * most MAX_PENDING items; past that (items pushed and never run, a pool
 * freed at once) it is emptied, and the items then pending run untraced.
 * An item pushed again before it ran carries the later push's task; its
 * earlier run takes that task and its later run is untraced.
 *
 * With tracing off, a push costs one atomic load and a run one more: the
 * table is empty and is not looked at.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <gio/gio.h>

#include "perfmon-dispatch-private.h"
#include "perfmon-interpose-private.h"
#include "perfmon-tracer.h"
#include "perfmon-tracer-private.h"

#define MAX_PENDING 65536u

typedef struct
{
  GFunc    func;
  gpointer user_data;
  gboolean gtask;       /* GTask's pool: the items are GTasks */
} PoolHook;

/* The GTask this thread is handing to g_task_run_in_thread(_sync)(), and
 * its thread function. */
static __thread GTask        *running_gtask;
static __thread gconstpointer running_gtask_func;

static GMutex      pending_lock;
static GHashTable *pending;          /* item → PerfmonTaskIds *, under pending_lock */
static guint       n_pending;        /* atomic: 0 = nothing to look up */

static void
hooked_pool_run (gpointer item,
                 gpointer data)
{
  PoolHook *hook = data;
  PerfmonTaskIds *ids = NULL;

  if (g_atomic_int_get (&n_pending) > 0)
    {
      g_mutex_lock (&pending_lock);
      if (pending != NULL && g_hash_table_steal_extended (pending, item, NULL, (gpointer *) &ids))
        g_atomic_int_set (&n_pending, g_hash_table_size (pending));
      g_mutex_unlock (&pending_lock);
    }

  if (ids != NULL)
    {
      PerfmonTaskContext saved;

      _perfmon_task_enter (ids, &saved);
      hook->func (item, hook->user_data);
      _perfmon_task_leave (&saved);
      g_free (ids);
    }
  else
    hook->func (item, hook->user_data);
}

/* Whether @func lives in libgio: GTask's pool, the only pool GIO makes
 * whose items are GTasks. */
static gboolean
is_gio_function (gconstpointer func)
{
  Dl_info func_info, gio_info;

  return dladdr (func, &func_info) != 0 && dladdr ((gconstpointer) g_task_new, &gio_info) != 0 &&
         func_info.dli_fbase == gio_info.dli_fbase;
}

gboolean
_perfmon_interpose_pool_new (GFunc    *func,
                             gpointer *user_data)
{
  PoolHook *hook;

  g_return_val_if_fail (func != NULL && user_data != NULL, FALSE);

  /* The tracer's own pools, and a pool hooked already (should GLib's
   * g_thread_pool_new() ever call g_thread_pool_new_full() through the
   * PLT). */
  if (*func == NULL || *func == hooked_pool_run || _perfmon_dispatch_owns_pool_func (*func))
    return FALSE;
  hook = g_new (PoolHook, 1);
  hook->func = *func;
  hook->user_data = *user_data;
  hook->gtask = is_gio_function (*func);
  *func = hooked_pool_run;
  *user_data = hook;
  return TRUE;
}

void
_perfmon_interpose_gtask_run_begin (GTask          *task,
                                    GTaskThreadFunc task_func)
{
  running_gtask = task;
  running_gtask_func = (gconstpointer) task_func;
}

void
_perfmon_interpose_gtask_run_end (void)
{
  running_gtask = NULL;
  running_gtask_func = NULL;
}

void
_perfmon_interpose_pool_freed (GFunc    pool_func,
                               gpointer pool_user_data)
{
  if (pool_func == hooked_pool_run)
    g_free (pool_user_data);
}

void
_perfmon_interpose_pool_push (GThreadPool *pool,
                              gpointer     item)
{
  PoolHook *hook;
  gconstpointer callback;
  PerfmonTaskIds *ids;

  if (!perfmon_tracer_is_active () || pool == NULL || pool->func != hooked_pool_run || item == NULL)
    return;
  hook = pool->user_data;
  callback = hook->func;
  if (hook->gtask)
    {
      /* perfmon_task_run_in_thread() made it a task already. */
      if (!G_IS_TASK (item) || _perfmon_dispatch_gtask_is_wrapped (item))
        return;
      /* The async function that made the task names it best, else the
       * function it runs (when a program called g_task_run_in_thread()). */
      if (g_task_get_source_tag (item) != NULL)
        callback = g_task_get_source_tag (item);
      else if (item == (gpointer) running_gtask && running_gtask_func != NULL)
        callback = running_gtask_func;
    }

  ids = g_new (PerfmonTaskIds, 1);
  _perfmon_task_dispatch (ids, callback);
  g_mutex_lock (&pending_lock);
  if (pending == NULL)
    pending = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  if (g_hash_table_size (pending) >= MAX_PENDING)
    g_hash_table_remove_all (pending);
  g_hash_table_insert (pending, item, ids);
  g_atomic_int_set (&n_pending, g_hash_table_size (pending));
  g_mutex_unlock (&pending_lock);
}

/* --- D-Bus messages of unmodified programs ------------------------------ */

/* The preload module interposes the calls that send a D-Bus method call
 * (g_dbus_connection_call(), _call_sync(), _send_message…(),
 * g_dbus_proxy_call(), _call_sync()…) and the registration of method
 * handlers (g_dbus_connection_register_object() and
 * _with_closures()): with these two, a client's task and the server's
 * handler task record the same (sender, serial), which the task log's
 * reader joins (perfmon-tracer-dbus.c says how), as the dispatch wrappers
 * do for programs that use them. */

/* A call does not nest in another on its thread (a synchronous call runs
 * no loop of the caller's): one saved context per thread. */
static __thread PerfmonTaskContext dbus_call_saved;

gboolean
_perfmon_interpose_dbus_call_begin (gconstpointer function)
{
  PerfmonTaskIds ids;

  if (!perfmon_tracer_is_active () || perfmon_task_get_current () != 0)
    return FALSE;
  _perfmon_task_dispatch_root (&ids, 0, PERFMON_SOURCE_EVENT_DBUS, function);
  _perfmon_task_enter (&ids, &dbus_call_saved);
  return TRUE;
}

void
_perfmon_interpose_dbus_call_end (gboolean began)
{
  if (began)
    _perfmon_task_leave (&dbus_call_saved);
}

void
_perfmon_interpose_dbus_sent (GDBusConnection *connection,
                              guint32          serial_before)
{
  guint32 serial;
  const char *name;

  if (!perfmon_tracer_is_active () || !G_IS_DBUS_CONNECTION (connection))
    return;
  serial = g_dbus_connection_get_last_serial (connection);
  name = g_dbus_connection_get_unique_name (connection);
  /* Nothing sent (an error before), or a peer-to-peer connection, whose
   * messages have no sender to join on. */
  if (serial == serial_before || serial == 0 || name == NULL || perfmon_task_get_current () == 0)
    return;
  _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_SEND, perfmon_task_get_current (), name, serial);
}

void
_perfmon_interpose_dbus_received (GDBusMethodInvocation *invocation)
{
  GDBusMessage *message;

  if (!perfmon_tracer_is_active () || !G_IS_DBUS_METHOD_INVOCATION (invocation) ||
      perfmon_task_get_current () == 0)
    return;
  message = g_dbus_method_invocation_get_message (invocation);
  if (g_dbus_method_invocation_get_sender (invocation) != NULL)
    _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_RECV, perfmon_task_get_current (),
                                 g_dbus_method_invocation_get_sender (invocation),
                                 g_dbus_message_get_serial (message));
  perfmon_task_add_label ("D-Bus %s.%s on %s",
                          g_dbus_method_invocation_get_interface_name (invocation),
                          g_dbus_method_invocation_get_method_name (invocation),
                          g_dbus_method_invocation_get_object_path (invocation));
}
