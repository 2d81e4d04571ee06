/* perfmon-preload-interpose.c: GLib calls that "perfmon run" interposes
 * to fill perfmon's model without the program's help
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * - Synchronous D-Bus calls are blocked time (the seed's CPOW clock) of
 *   the default monitor, charged to the groups around them, when the main
 *   thread makes them: g_dbus_connection_call_sync(),
 *   g_dbus_connection_call_with_unix_fd_list_sync(),
 *   g_dbus_connection_send_message_with_reply_sync(),
 *   g_dbus_proxy_call_sync(), g_dbus_proxy_call_with_unix_fd_list_sync().
 * - D-Bus calls carry causality across processes: the calls that send a
 *   method call (the synchronous ones above, g_dbus_connection_call(),
 *   _call_with_unix_fd_list(), _send_message_with_reply(),
 *   g_dbus_proxy_call(), _call_with_unix_fd_list()) record the message's
 *   serial for the current task (a task of its own for a call outside
 *   any), and g_dbus_connection_register_object() and _with_closures()
 *   wrap the method handler so that the task running it records the same
 *   (sender, serial) and the method's name; see
 *   src/tasks/perfmon-interpose.c and doc/task-causality.md.
 * - Thread pools carry causality: each item pushed is a task, a child of
 *   the task that pushed it (see src/tasks/perfmon-interpose.c), which
 *   covers g_task_run_in_thread(), from the program or from GIO.
 *
 * - Handlers of GDBusInterfaceSkeleton exports (gdbus-codegen services,
 *   GJS's Gio.DBusExportedObject) do the same: GIO registers their object
 *   inside libgio, where the interposer above is not seen, but calls the
 *   method through g_dbus_interface_skeleton_get_vtable()->method_call at
 *   every call: g_dbus_interface_skeleton_export() hooks the skeleton
 *   class's get_vtable (see hook_skeleton_class()).
 * - A GApplication's start-up is work of the loop: g_application_run()
 *   begins an iteration and a busy stretch of the default monitor (see
 *   _perfmon_monitor_begin_startup()), so that its startup, activate, open
 *   and command-line handlers, which GApplication calls before its loop
 *   first polls, are charged to the automatic group "(start-up)" and a
 *   long one is a hang.
 *
 * Only calls through the PLT reach these: the program's and other
 * libraries' calls into GLib, and Python's and GJS's, through the
 * g_typelib_symbol() hook (perfmon-preload-typelib.c). GIO's calls inside libgio (a
 * g_dbus_proxy_new_sync() making its own GetAll call, GIO's own
 * g_task_run_in_thread()) bind inside it and are not seen; GIO's calls into
 * libglib (g_thread_pool_push() from GTask) are. doc/task-causality.md
 * lists what is missed.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <gio/gio.h>

#include "perfmon.h"
#include "perfmon-interpose-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-preload-private.h"

/* The next definition of @name (GLib's), looked up once. */
#define REAL(name)                                                          \
  static __typeof__ (name) *real_##name;                                    \
  __typeof__ (name) *real = g_atomic_pointer_get (&real_##name);            \
  if (G_UNLIKELY (real == NULL))                                            \
    {                                                                       \
      real = (__typeof__ (name) *) dlsym (RTLD_NEXT, #name);                \
      if (real == NULL)                                                     \
        g_error ("perfmon: no %s after the preload module", #name);         \
      g_atomic_pointer_set (&real_##name, real);                            \
    }

/* The tracer's hooks, from the table libperfmon handed the module at load
 * (perfmon-preload-internals-private.h); without it, the calls are only
 * passed on. */
#define INTERNALS _perfmon_preload_internals

static gboolean
interpose_pool_new (GFunc    *func,
                    gpointer *user_data)
{
  return INTERNALS != NULL && INTERNALS->interpose_pool_new (func, user_data);
}

static void
interpose_pool_freed (GFunc    pool_func,
                      gpointer pool_user_data)
{
  if (INTERNALS != NULL)
    INTERNALS->interpose_pool_freed (pool_func, pool_user_data);
}

static void
interpose_pool_push (GThreadPool *pool,
                     gpointer     item)
{
  if (INTERNALS != NULL)
    INTERNALS->interpose_pool_push (pool, item);
}

static void
interpose_dbus_sent (GDBusConnection *connection,
                     guint32          serial_before)
{
  if (INTERNALS != NULL)
    INTERNALS->interpose_dbus_sent (connection, serial_before);
}

static gboolean
interpose_dbus_call_begin (gconstpointer function)
{
  return INTERNALS != NULL && INTERNALS->interpose_dbus_call_begin (function);
}

static void
interpose_dbus_call_end (gboolean began)
{
  if (INTERNALS != NULL)
    INTERNALS->interpose_dbus_call_end (began);
}

static void
interpose_dbus_received (GDBusMethodInvocation *invocation)
{
  if (INTERNALS != NULL)
    INTERNALS->interpose_dbus_received (invocation);
}

/* The default monitor belongs to the main thread, which runs the default
 * context: blocked time is counted there only (no system call to tell). */
static __thread gboolean on_main_thread;

__attribute__((constructor))
static void
perfmon_preload_interpose_init (void)
{
  on_main_thread = TRUE;
}

static gboolean
blocked_begin (void)
{
  if (!on_main_thread)
    return FALSE;
  perfmon_monitor_blocked_begin (perfmon_monitor_get_default ());
  return TRUE;
}

static void
blocked_end (gboolean began)
{
  if (began)
    perfmon_monitor_blocked_end (perfmon_monitor_get_default ());
}

/* The calling thread's last serial on @connection, when the tracer
 * records (perfmon_interpose_dbus_sent() compares it with the one after). */
static guint32
serial_before (GDBusConnection *connection)
{
  return perfmon_tracer_is_active () && G_IS_DBUS_CONNECTION (connection)
    ? g_dbus_connection_get_last_serial (connection) : 0;
}

/* The body of every interposer of a synchronous call: the real @name
 * with @... as blocked time, returning what it returns; the message it
 * sent on @connection is recorded as the current task's (a task of its
 * own, named after @name, if none runs). */
#define CALL_BLOCKED(connection, name, ...)                                 \
  ({                                                                        \
    REAL (name);                                                            \
    GDBusConnection *connection_ = (connection);                            \
    gboolean task_ = interpose_dbus_call_begin ((gconstpointer) name); \
    guint32 serial_ = serial_before (connection_);                          \
    gboolean began_ = blocked_begin ();                                     \
    __typeof__ (real (__VA_ARGS__)) result_ = real (__VA_ARGS__);           \
    blocked_end (began_);                                                   \
    interpose_dbus_sent (connection_, serial_);                    \
    interpose_dbus_call_end (task_);                               \
    result_;                                                                \
  })

/* The same for a call that does not wait (no blocked time). */
#define CALL_SENDS(connection, name, ...)                                   \
  G_STMT_START {                                                            \
    REAL (name);                                                            \
    GDBusConnection *connection_ = (connection);                            \
    gboolean task_ = interpose_dbus_call_begin ((gconstpointer) name); \
    guint32 serial_ = serial_before (connection_);                          \
    real (__VA_ARGS__);                                                     \
    interpose_dbus_sent (connection_, serial_);                    \
    interpose_dbus_call_end (task_);                               \
  } G_STMT_END

static GDBusConnection *
proxy_connection (GDBusProxy *proxy)
{
  return G_IS_DBUS_PROXY (proxy) ? g_dbus_proxy_get_connection (proxy) : NULL;
}

GVariant *
g_dbus_connection_call_sync (GDBusConnection    *connection,
                             const gchar        *bus_name,
                             const gchar        *object_path,
                             const gchar        *interface_name,
                             const gchar        *method_name,
                             GVariant           *parameters,
                             const GVariantType *reply_type,
                             GDBusCallFlags      flags,
                             gint                timeout_msec,
                             GCancellable       *cancellable,
                             GError            **error)
{
  return CALL_BLOCKED (connection, g_dbus_connection_call_sync, connection, bus_name, object_path, interface_name,
                       method_name, parameters, reply_type, flags, timeout_msec, cancellable, error);
}

GVariant *
g_dbus_connection_call_with_unix_fd_list_sync (GDBusConnection    *connection,
                                               const gchar        *bus_name,
                                               const gchar        *object_path,
                                               const gchar        *interface_name,
                                               const gchar        *method_name,
                                               GVariant           *parameters,
                                               const GVariantType *reply_type,
                                               GDBusCallFlags      flags,
                                               gint                timeout_msec,
                                               GUnixFDList        *fd_list,
                                               GUnixFDList       **out_fd_list,
                                               GCancellable       *cancellable,
                                               GError            **error)
{
  return CALL_BLOCKED (connection, g_dbus_connection_call_with_unix_fd_list_sync, connection, bus_name, object_path,
                       interface_name, method_name, parameters, reply_type, flags, timeout_msec, fd_list,
                       out_fd_list, cancellable, error);
}

GDBusMessage *
g_dbus_connection_send_message_with_reply_sync (GDBusConnection        *connection,
                                                GDBusMessage           *message,
                                                GDBusSendMessageFlags   flags,
                                                gint                    timeout_msec,
                                                volatile guint32       *out_serial,
                                                GCancellable           *cancellable,
                                                GError                **error)
{
  return CALL_BLOCKED (connection, g_dbus_connection_send_message_with_reply_sync, connection, message, flags,
                       timeout_msec, out_serial, cancellable, error);
}

GVariant *
g_dbus_proxy_call_sync (GDBusProxy      *proxy,
                        const gchar     *method_name,
                        GVariant        *parameters,
                        GDBusCallFlags   flags,
                        gint             timeout_msec,
                        GCancellable    *cancellable,
                        GError         **error)
{
  return CALL_BLOCKED (proxy_connection (proxy), g_dbus_proxy_call_sync, proxy, method_name, parameters, flags, timeout_msec,
                       cancellable, error);
}

GVariant *
g_dbus_proxy_call_with_unix_fd_list_sync (GDBusProxy      *proxy,
                                          const gchar     *method_name,
                                          GVariant        *parameters,
                                          GDBusCallFlags   flags,
                                          gint             timeout_msec,
                                          GUnixFDList     *fd_list,
                                          GUnixFDList    **out_fd_list,
                                          GCancellable    *cancellable,
                                          GError         **error)
{
  return CALL_BLOCKED (proxy_connection (proxy), g_dbus_proxy_call_with_unix_fd_list_sync, proxy, method_name, parameters, flags,
                       timeout_msec, fd_list, out_fd_list, cancellable, error);
}

void
g_dbus_connection_call (GDBusConnection     *connection,
                        const gchar         *bus_name,
                        const gchar         *object_path,
                        const gchar         *interface_name,
                        const gchar         *method_name,
                        GVariant            *parameters,
                        const GVariantType  *reply_type,
                        GDBusCallFlags       flags,
                        gint                 timeout_msec,
                        GCancellable        *cancellable,
                        GAsyncReadyCallback  callback,
                        gpointer             user_data)
{
  CALL_SENDS (connection, g_dbus_connection_call, connection, bus_name, object_path, interface_name,
              method_name, parameters, reply_type, flags, timeout_msec, cancellable, callback, user_data);
}

void
g_dbus_connection_call_with_unix_fd_list (GDBusConnection     *connection,
                                          const gchar         *bus_name,
                                          const gchar         *object_path,
                                          const gchar         *interface_name,
                                          const gchar         *method_name,
                                          GVariant            *parameters,
                                          const GVariantType  *reply_type,
                                          GDBusCallFlags       flags,
                                          gint                 timeout_msec,
                                          GUnixFDList         *fd_list,
                                          GCancellable        *cancellable,
                                          GAsyncReadyCallback  callback,
                                          gpointer             user_data)
{
  CALL_SENDS (connection, g_dbus_connection_call_with_unix_fd_list, connection, bus_name, object_path,
              interface_name, method_name, parameters, reply_type, flags, timeout_msec, fd_list, cancellable,
              callback, user_data);
}

void
g_dbus_connection_send_message_with_reply (GDBusConnection       *connection,
                                           GDBusMessage          *message,
                                           GDBusSendMessageFlags  flags,
                                           gint                   timeout_msec,
                                           volatile guint32      *out_serial,
                                           GCancellable          *cancellable,
                                           GAsyncReadyCallback    callback,
                                           gpointer               user_data)
{
  CALL_SENDS (connection, g_dbus_connection_send_message_with_reply, connection, message, flags,
              timeout_msec, out_serial, cancellable, callback, user_data);
}

void
g_dbus_proxy_call (GDBusProxy          *proxy,
                   const gchar         *method_name,
                   GVariant            *parameters,
                   GDBusCallFlags       flags,
                   gint                 timeout_msec,
                   GCancellable        *cancellable,
                   GAsyncReadyCallback  callback,
                   gpointer             user_data)
{
  CALL_SENDS (proxy_connection (proxy), g_dbus_proxy_call, proxy, method_name, parameters, flags,
              timeout_msec, cancellable, callback, user_data);
}

void
g_dbus_proxy_call_with_unix_fd_list (GDBusProxy          *proxy,
                                     const gchar         *method_name,
                                     GVariant            *parameters,
                                     GDBusCallFlags       flags,
                                     gint                 timeout_msec,
                                     GUnixFDList         *fd_list,
                                     GCancellable        *cancellable,
                                     GAsyncReadyCallback  callback,
                                     gpointer             user_data)
{
  CALL_SENDS (proxy_connection (proxy), g_dbus_proxy_call_with_unix_fd_list, proxy, method_name,
              parameters, flags, timeout_msec, fd_list, cancellable, callback, user_data);
}

/* Method handlers: the program's vtable or closures, wrapped so that
 * the task that runs a handler (the dispatch of GDBus's idle,
 * call_in_idle_cb) records which message it handles and is named after
 * the method. The wrapper owns the program's vtable copy and user data. */
typedef struct
{
  GDBusInterfaceVTable vtable;
  gpointer             user_data;
  GDestroyNotify       user_data_free;
} HandlerWrap;

static void
wrap_method_call (GDBusConnection       *connection,
                  const gchar           *sender,
                  const gchar           *object_path,
                  const gchar           *interface_name,
                  const gchar           *method_name,
                  GVariant              *parameters,
                  GDBusMethodInvocation *invocation,
                  gpointer               user_data)
{
  HandlerWrap *wrap = user_data;

  interpose_dbus_received (invocation);
  wrap->vtable.method_call (connection, sender, object_path, interface_name, method_name, parameters,
                            invocation, wrap->user_data);
}

static GVariant *
wrap_get_property (GDBusConnection  *connection,
                   const gchar      *sender,
                   const gchar      *object_path,
                   const gchar      *interface_name,
                   const gchar      *property_name,
                   GError          **error,
                   gpointer          user_data)
{
  HandlerWrap *wrap = user_data;

  return wrap->vtable.get_property (connection, sender, object_path, interface_name, property_name, error,
                                    wrap->user_data);
}

static gboolean
wrap_set_property (GDBusConnection  *connection,
                   const gchar      *sender,
                   const gchar      *object_path,
                   const gchar      *interface_name,
                   const gchar      *property_name,
                   GVariant         *value,
                   GError          **error,
                   gpointer          user_data)
{
  HandlerWrap *wrap = user_data;

  return wrap->vtable.set_property (connection, sender, object_path, interface_name, property_name, value,
                                    error, wrap->user_data);
}

/* The wrap being registered on this thread: GLib versions differ on
 * whether a failed registration frees the user data (2.74 does not). */
static __thread HandlerWrap *registering;

static void
handler_wrap_free (gpointer data)
{
  HandlerWrap *wrap = data;

  if (wrap == registering)
    registering = NULL;

  if (wrap->user_data_free != NULL)
    wrap->user_data_free (wrap->user_data);
  g_free (wrap);
}

guint
g_dbus_connection_register_object (GDBusConnection             *connection,
                                   const gchar                 *object_path,
                                   GDBusInterfaceInfo          *interface_info,
                                   const GDBusInterfaceVTable  *vtable,
                                   gpointer                     user_data,
                                   GDestroyNotify               user_data_free_func,
                                   GError                     **error)
{
  REAL (g_dbus_connection_register_object);
  HandlerWrap *wrap;
  guint id;

  if (vtable == NULL || vtable->method_call == NULL)
    return real (connection, object_path, interface_info, vtable, user_data, user_data_free_func, error);

  wrap = g_new0 (HandlerWrap, 1);
  wrap->vtable = *vtable;
  wrap->user_data = user_data;
  wrap->user_data_free = user_data_free_func;
  {
    /* GDBus copies the vtable: one on the stack will do. */
    GDBusInterfaceVTable wrapped = {
      wrap_method_call,
      vtable->get_property != NULL ? wrap_get_property : NULL,
      vtable->set_property != NULL ? wrap_set_property : NULL,
      { 0 },
    };

    registering = wrap;
    id = real (connection, object_path, interface_info, &wrapped, wrap, handler_wrap_free, error);
  }
  /* Failed, and GLib did not free the user data (as 2.74 does not): the
   * wrap goes, the program's data stays the program's. */
  if (id == 0 && registering == wrap)
    g_free (wrap);
  registering = NULL;
  return id;
}

/* The closures' form (what Python and GJS call): a closure that records,
 * then invokes the program's. */
static void
wrap_closure_marshal (GClosure     *closure,
                      GValue       *return_value,
                      guint         n_param_values,
                      const GValue *param_values,
                      gpointer      invocation_hint,
                      gpointer      marshal_data)
{
  GClosure *program = closure->data;

  for (guint i = 0; i < n_param_values; i++)
    if (G_VALUE_HOLDS (&param_values[i], G_TYPE_DBUS_METHOD_INVOCATION))
      interpose_dbus_received (g_value_get_object (&param_values[i]));
  g_closure_invoke (program, return_value, n_param_values, param_values, invocation_hint);
}

static void
wrap_closure_finalize (gpointer  data,
                       GClosure *closure)
{
  g_closure_unref (data);
}

static GClosure *
wrap_method_closure (GClosure *program)
{
  GClosure *closure;

  if (program == NULL)
    return NULL;
  closure = g_closure_new_simple (sizeof (GClosure), g_closure_ref (program));
  g_closure_sink (program);
  g_closure_set_marshal (closure, wrap_closure_marshal);
  g_closure_add_finalize_notifier (closure, program, wrap_closure_finalize);
  return closure;
}

guint
g_dbus_connection_register_object_with_closures (GDBusConnection     *connection,
                                                 const gchar         *object_path,
                                                 GDBusInterfaceInfo  *interface_info,
                                                 GClosure            *method_call_closure,
                                                 GClosure            *get_property_closure,
                                                 GClosure            *set_property_closure,
                                                 GError             **error)
{
  REAL (g_dbus_connection_register_object_with_closures);
  GClosure *wrapped = wrap_method_closure (method_call_closure);
  guint id = real (connection, object_path, interface_info, wrapped != NULL ? wrapped : method_call_closure,
                   get_property_closure, set_property_closure, error);

  /* GDBus took its reference (or none, on failure). */
  if (wrapped != NULL)
    g_closure_sink (wrapped);
  return id;
}

GThreadPool *
g_thread_pool_new (GFunc      func,
                   gpointer   user_data,
                   gint       max_threads,
                   gboolean   exclusive,
                   GError   **error)
{
  REAL (g_thread_pool_new);
  gboolean hooked = interpose_pool_new (&func, &user_data);
  GThreadPool *pool = real (func, user_data, max_threads, exclusive, error);

  if (pool == NULL && hooked)
    interpose_pool_freed (func, user_data);
  return pool;
}

GThreadPool *
g_thread_pool_new_full (GFunc           func,
                        gpointer        user_data,
                        GDestroyNotify  item_free_func,
                        gint            max_threads,
                        gboolean        exclusive,
                        GError        **error)
{
  REAL (g_thread_pool_new_full);
  gboolean hooked = interpose_pool_new (&func, &user_data);
  GThreadPool *pool = real (func, user_data, item_free_func, max_threads, exclusive, error);

  if (pool == NULL && hooked)
    interpose_pool_freed (func, user_data);
  return pool;
}

gboolean
g_thread_pool_push (GThreadPool  *pool,
                    gpointer      data,
                    GError      **error)
{
  REAL (g_thread_pool_push);

  interpose_pool_push (pool, data);
  return real (pool, data, error);
}

/* GTask's pool runs a task through a static function of libgio: the task
 * is named after the thread function given here (when it has no source
 * tag). GIO's own calls bind inside libgio and are not seen: they set
 * source tags. */
void
g_task_run_in_thread (GTask          *task,
                      GTaskThreadFunc task_func)
{
  REAL (g_task_run_in_thread);

  if (INTERNALS != NULL)
    INTERNALS->interpose_gtask_run_begin (task, task_func);
  real (task, task_func);
  if (INTERNALS != NULL)
    INTERNALS->interpose_gtask_run_end ();
}

void
g_task_run_in_thread_sync (GTask          *task,
                           GTaskThreadFunc task_func)
{
  REAL (g_task_run_in_thread_sync);

  if (INTERNALS != NULL)
    INTERNALS->interpose_gtask_run_begin (task, task_func);
  real (task, task_func);
  if (INTERNALS != NULL)
    INTERNALS->interpose_gtask_run_end ();
}

void
g_thread_pool_free (GThreadPool *pool,
                    gboolean     immediate,
                    gboolean     wait_)
{
  REAL (g_thread_pool_free);
  GFunc func = pool != NULL ? pool->func : NULL;
  gpointer user_data = pool != NULL ? pool->user_data : NULL;

  real (pool, immediate, wait_);
  /* Without waiting, items still running use the pool's user data after
   * this returns: it stays (a few bytes per such pool). */
  if (wait_)
    interpose_pool_freed (func, user_data);
}

/* The main thread's outermost loop has returned (g_main_loop_run() or
 * g_application_run()): what the thread does next, Python's finalization,
 * exit handlers, perfmon's own stop(), is not work of the loop, and a long
 * stretch of it is no hang. The thread is idle for the hang monitor (a
 * deliberate wait) until it runs a loop again. */
static __thread guint loop_depth;
static __thread gboolean loop_left;

static void
main_loop_enter (void)
{
  if (loop_depth++ == 0 && loop_left)
    {
      loop_left = FALSE;
      perfmon_deliberate_wait_end ();
    }
}

static void
main_loop_leave (void)
{
  if (--loop_depth == 0 && !loop_left)
    {
      loop_left = TRUE;
      perfmon_deliberate_wait_begin ();
    }
}

int
g_application_run (GApplication  *application,
                   int            argc,
                   char         **argv)
{
  REAL (g_application_run);
  int status;

  if (!on_main_thread)
    return real (application, argc, argv);
  if (INTERNALS != NULL)
    INTERNALS->monitor_begin_startup (perfmon_monitor_get_default ());
  main_loop_enter ();
  status = real (application, argc, argv);
  main_loop_leave ();
  return status;
}

void
g_main_loop_run (GMainLoop *loop)
{
  REAL (g_main_loop_run);

  if (!on_main_thread)
    {
      real (loop);
      return;
    }
  main_loop_enter ();
  real (loop);
  main_loop_leave ();
}

/* --- GDBusInterfaceSkeleton exports ------------------------------------- */

/* GDBusInterfaceSkeleton registers its object from inside libgio, with a
 * vtable of its own whose method_call, at every call, calls
 * g_dbus_interface_skeleton_get_vtable (skeleton)->method_call (GLib
 * 2.74's skeleton_intercept_handle_method_call()) with the skeleton as
 * user data. That vtable is often const (gdbus-codegen's) or in the
 * instance (GJS's Gio.DBusExportedObject), so it is not patched: the
 * skeleton's class's get_vtable is. It hands out, per skeleton, a copy of
 * the vtable whose method_call is skeleton_method_call(), kept as the
 * skeleton's data (freed with it). The class's own get_vtable is kept in
 * skeleton_classes (class → function), under skeleton_lock; subclasses
 * made later inherit the hook and find their ancestor's entry. Classes
 * of static types live as long as the process. */
typedef GDBusInterfaceVTable *(*SkeletonGetVTableFunc) (GDBusInterfaceSkeleton *skeleton);

typedef struct
{
  GDBusInterfaceVTable         copy;       /* handed out */
  GDBusInterfaceVTable        *source;     /* the class's answer it copies */
  GDBusInterfaceMethodCallFunc method_call;   /* the source's */
} SkeletonHook;

static GMutex skeleton_lock;
static GHashTable *skeleton_classes;

/* The get_vtable that @klass, or the nearest of its ancestors that was
 * hooked, had before. */
static SkeletonGetVTableFunc
original_get_vtable (gpointer klass)
{
  SkeletonGetVTableFunc found = NULL;

  g_mutex_lock (&skeleton_lock);
  for (; klass != NULL && found == NULL; klass = g_type_class_peek_parent (klass))
    found = skeleton_classes != NULL ? g_hash_table_lookup (skeleton_classes, klass) : NULL;
  g_mutex_unlock (&skeleton_lock);
  return found;
}

static GQuark
skeleton_hook_quark (void)
{
  static gsize quark;

  if (g_once_init_enter (&quark))
    g_once_init_leave (&quark, g_quark_from_static_string ("perfmon-skeleton-hook"));
  return (GQuark) quark;
}

/* The method_call of every hooked skeleton's vtable. GIO calls it with the
 * skeleton as @user_data, on the thread that handles the call (the
 * skeleton's context, or a pool thread with
 * G_DBUS_INTERFACE_SKELETON_FLAGS_HANDLE_METHOD_INVOCATIONS_IN_THREAD):
 * the task running there records the call, as wrap_method_call() does. */
static void
skeleton_method_call (GDBusConnection       *connection,
                      const gchar           *sender,
                      const gchar           *object_path,
                      const gchar           *interface_name,
                      const gchar           *method_name,
                      GVariant              *parameters,
                      GDBusMethodInvocation *invocation,
                      gpointer               user_data)
{
  SkeletonHook *hook = G_IS_DBUS_INTERFACE_SKELETON (user_data)
    ? g_object_get_qdata (user_data, skeleton_hook_quark ()) : NULL;

  if (G_UNLIKELY (hook == NULL))
    {
      /* Only a caller of the public g_dbus_interface_skeleton_get_vtable()
       * that calls the method itself with other user data gets here. */
      g_dbus_method_invocation_return_error (invocation, G_DBUS_ERROR, G_DBUS_ERROR_FAILED,
                                             "perfmon: no method handler of %s for this caller",
                                             interface_name);
      return;
    }
  interpose_dbus_received (invocation);
  hook->method_call (connection, sender, object_path, interface_name, method_name, parameters, invocation,
                     user_data);
}

/* The hooked classes' get_vtable. */
static GDBusInterfaceVTable *
skeleton_get_vtable (GDBusInterfaceSkeleton *skeleton)
{
  SkeletonGetVTableFunc original = original_get_vtable (G_DBUS_INTERFACE_SKELETON_GET_CLASS (skeleton));
  GDBusInterfaceVTable *vtable = original != NULL ? original (skeleton) : NULL;
  SkeletonHook *hook;

  if (vtable == NULL || vtable->method_call == NULL)
    return vtable;
  hook = g_object_get_qdata (G_OBJECT (skeleton), skeleton_hook_quark ());
  if (hook == NULL)
    {
      SkeletonHook *made = g_new0 (SkeletonHook, 1);

      made->copy = *vtable;
      made->copy.method_call = skeleton_method_call;
      made->source = vtable;
      made->method_call = vtable->method_call;
      /* Two threads may ask at once: the first one's stays. */
      if (g_object_replace_qdata (G_OBJECT (skeleton), skeleton_hook_quark (), NULL, made, g_free, NULL))
        hook = made;
      else
        {
          g_free (made);
          hook = g_object_get_qdata (G_OBJECT (skeleton), skeleton_hook_quark ());
        }
    }
  /* A class whose answer changed over time: its answer, unhooked. */
  if (hook->source != vtable || hook->method_call != vtable->method_call)
    return vtable;
  return &hook->copy;
}

/* Hooks the get_vtable of @skeleton's class, once per class. */
static void
hook_skeleton_class (GDBusInterfaceSkeleton *skeleton)
{
  GDBusInterfaceSkeletonClass *klass = G_DBUS_INTERFACE_SKELETON_GET_CLASS (skeleton);

  g_mutex_lock (&skeleton_lock);
  if (klass->get_vtable != NULL && klass->get_vtable != skeleton_get_vtable)
    {
      if (skeleton_classes == NULL)
        skeleton_classes = g_hash_table_new (NULL, NULL);
      g_hash_table_insert (skeleton_classes, klass, (gpointer) klass->get_vtable);
      klass->get_vtable = skeleton_get_vtable;
    }
  g_mutex_unlock (&skeleton_lock);
}

gboolean
g_dbus_interface_skeleton_export (GDBusInterfaceSkeleton  *interface_,
                                  GDBusConnection         *connection,
                                  const gchar             *object_path,
                                  GError                 **error)
{
  REAL (g_dbus_interface_skeleton_export);

  if (G_IS_DBUS_INTERFACE_SKELETON (interface_))
    hook_skeleton_class (interface_);
  return real (interface_, connection, object_path, error);
}
