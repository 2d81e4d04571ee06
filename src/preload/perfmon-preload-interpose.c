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
 * - Thread pools carry causality: each item pushed is a task, a child of
 *   the task that pushed it (see src/tasks/perfmon-interpose.c), which
 *   covers g_task_run_in_thread(), from the program or from GIO.
 *
 * Only calls through the PLT reach these: the program's and other
 * libraries' calls into GLib. GIO's calls inside libgio (a
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

/* The body of every interposer of a synchronous call: the real @name
 * with @... as blocked time, returning what it returns. */
#define CALL_BLOCKED(name, ...)                                             \
  ({                                                                        \
    REAL (name);                                                            \
    gboolean began_ = blocked_begin ();                                     \
    __typeof__ (real (__VA_ARGS__)) result_ = real (__VA_ARGS__);           \
    blocked_end (began_);                                                   \
    result_;                                                                \
  })

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
  return CALL_BLOCKED (g_dbus_connection_call_sync, connection, bus_name, object_path, interface_name,
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
  return CALL_BLOCKED (g_dbus_connection_call_with_unix_fd_list_sync, connection, bus_name, object_path,
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
  return CALL_BLOCKED (g_dbus_connection_send_message_with_reply_sync, connection, message, flags,
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
  return CALL_BLOCKED (g_dbus_proxy_call_sync, proxy, method_name, parameters, flags, timeout_msec,
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
  return CALL_BLOCKED (g_dbus_proxy_call_with_unix_fd_list_sync, proxy, method_name, parameters, flags,
                       timeout_msec, fd_list, out_fd_list, cancellable, error);
}

GThreadPool *
g_thread_pool_new (GFunc      func,
                   gpointer   user_data,
                   gint       max_threads,
                   gboolean   exclusive,
                   GError   **error)
{
  REAL (g_thread_pool_new);
  gboolean hooked = _perfmon_interpose_pool_new (&func, &user_data);
  GThreadPool *pool = real (func, user_data, max_threads, exclusive, error);

  if (pool == NULL && hooked)
    _perfmon_interpose_pool_freed (func, user_data);
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
  gboolean hooked = _perfmon_interpose_pool_new (&func, &user_data);
  GThreadPool *pool = real (func, user_data, item_free_func, max_threads, exclusive, error);

  if (pool == NULL && hooked)
    _perfmon_interpose_pool_freed (func, user_data);
  return pool;
}

gboolean
g_thread_pool_push (GThreadPool  *pool,
                    gpointer      data,
                    GError      **error)
{
  REAL (g_thread_pool_push);

  _perfmon_interpose_pool_push (pool, data);
  return real (pool, data, error);
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
    _perfmon_interpose_pool_freed (func, user_data);
}
