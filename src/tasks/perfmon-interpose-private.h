/* perfmon-interpose-private.h: what libperfmon-preload.so's interposers of
 * GLib calls need from the tracer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For the preload module alone, which gets them through
 * hang/perfmon-preload-internals-private.h: they are not exported, the
 * header is not installed, and GObject-Introspection does not see them.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* At g_thread_pool_new(_full)(): replaces *@func and *@user_data with a
 * trampoline that runs each item as the task its push dispatched. FALSE
 * (nothing replaced) for the tracer's own pools. Any thread. */
gboolean _perfmon_interpose_pool_new    (GFunc       *func,
                                         gpointer    *user_data);
/* After g_thread_pool_new(_full)() failed, or after
 * g_thread_pool_free (pool, …, TRUE) returned: frees what
 * _perfmon_interpose_pool_new() made. @pool_user_data is what the pool
 * had as user data; nothing happens for a pool it did not replace. */
void     _perfmon_interpose_pool_freed  (GFunc        pool_func,
                                         gpointer     pool_user_data);
/* Before g_thread_pool_push(): with tracing on, dispatches the task that
 * will run @item, a child of the calling thread's task. */
void     _perfmon_interpose_pool_push   (GThreadPool *pool,
                                         gpointer     item);

/* Around g_task_run_in_thread() and g_task_run_in_thread_sync() called
 * from outside libgio (the preload module's interposers): GTask's push of
 * @task to its pool, on this thread, in between, names the task after
 * @task_func when @task has no source tag, rather than after the pool's
 * own function (a static function of libgio that only its debug symbols
 * name). Two thread-local stores, no lock, no allocation. */
void     _perfmon_interpose_gtask_run_begin (GTask          *task,
                                             GTaskThreadFunc task_func);
void     _perfmon_interpose_gtask_run_end   (void);

/* After a D-Bus message was sent on @connection by the calling thread
 * (the preload module's interposers of g_dbus_connection_call() and the
 * like): if the thread's last serial (g_dbus_connection_get_last_serial())
 * is no longer @serial_before, records DBUS_SEND for the current task. */
void     _perfmon_interpose_dbus_sent     (GDBusConnection       *connection,
                                           guint32                serial_before);
/* Around a call that sends a D-Bus message: with the tracer on and no
 * task current on the calling thread (a call from main(), as "gdbus
 * call" makes), runs it as a root task named after @function (the
 * interposer's address: its symbol), so that the message has a sender
 * task to be joined to. Returns whether it did; pass that to _end(). */
gboolean _perfmon_interpose_dbus_call_begin (gconstpointer function);
void     _perfmon_interpose_dbus_call_end   (gboolean      began);
/* Before a method handler the program registered runs: records DBUS_RECV
 * for the current task (the dispatch of GDBus's idle that calls it) and
 * labels it "D-Bus INTERFACE.METHOD on PATH", which names it. */
void     _perfmon_interpose_dbus_received (GDBusMethodInvocation *invocation);

G_END_DECLS
