/* perfmon-tracer-dbus.c: task tracing across processes over D-Bus
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-tracer.h"
#include "perfmon-tracer-dbus.h"
#include "perfmon-tracer-private.h"

/* Design.
 *
 * Message bodies are never changed, so nothing of the task travels with a
 * message. What both ends can see is the message's sender (a unique bus
 * name) and its serial, which together name the message on the bus. So:
 *
 * - the task that sends a message records DBUS_SEND (its task, our unique
 *   name, the serial GDBus gave the message);
 * - the task that handles it records DBUS_RECV (its task, the message's
 *   sender, the same serial).
 *
 * A reader that finds both, in the files of two processes, makes the
 * handling task a child of the sending one. Locally the handling task has
 * no parent: its DISPATCH names it its own parent (the seed's rule for
 * tasks started from outside).
 *
 * A method call A → B → reply → A thus gives: A's current task T sends
 * (perfmon_dbus_connection_call()); B's handler task H receives
 * (perfmon_dbus_method_invocation_begin()) and sends the reply
 * (perfmon_dbus_method_invocation_return_value()); A's reply task R, in
 * which the caller's callback runs, receives the reply. Reading both
 * files: T → H → R. R belongs to T's source event (the call carries it in
 * memory); H, which cannot know T's, gets a new source event of type
 * PERFMON_SOURCE_EVENT_DBUS unless a source event is current on its
 * thread, and a reader that links H to T may carry T's over.
 *
 * Limits, honestly: messages on a peer-to-peer connection have no unique
 * names (the sender recorded is empty) and cannot be linked; a call made
 * outside any task records task 0 as the sender. */

/* perfmon_dbus_method_invocation_begin() nests this deep per thread. */
#define INVOCATION_DEPTH 16

typedef struct
{
  guint              depth;
  PerfmonTaskContext saved[INVOCATION_DEPTH];
} InvocationStack;

static __thread InvocationStack invocations;

typedef struct
{
  GTask               *task;
  GVariantType        *reply_type;
  GAsyncReadyCallback  callback;
  gpointer             user_data;
  guint64              source_event_id;
  PerfmonSourceEventType source_event_type;
} Call;

static void
call_free (Call *call)
{
  g_clear_object (&call->task);
  g_clear_pointer (&call->reply_type, g_variant_type_free);
  g_free (call);
}

static void
return_reply (Call         *call,
              GDBusMessage *reply,
              GError       *error)
{
  GVariant *body;

  if (reply == NULL)
    {
      g_task_return_error (call->task, error);
      return;
    }
  if (g_dbus_message_to_gerror (reply, &error))
    {
      g_task_return_error (call->task, error);
      return;
    }
  body = g_dbus_message_get_body (reply);
  if (body == NULL)
    body = g_variant_new_tuple (NULL, 0);
  g_variant_ref_sink (body);
  if (call->reply_type != NULL && !g_variant_is_of_type (body, call->reply_type))
    {
      g_autofree char *expected = g_variant_type_dup_string (call->reply_type);

      g_task_return_new_error (call->task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                               "Method returned type '%s', but expected '%s'",
                               g_variant_get_type_string (body), expected);
      g_variant_unref (body);
      return;
    }
  g_task_return_pointer (call->task, body, (GDestroyNotify) g_variant_unref);
}

static void
on_reply (GObject      *source,
          GAsyncResult *result,
          gpointer      data)
{
  Call *call = data;
  GDBusConnection *connection = G_DBUS_CONNECTION (source);
  GError *error = NULL;
  g_autoptr(GDBusMessage) reply = g_dbus_connection_send_message_with_reply_finish (connection, result, &error);
  PerfmonTaskIds ids;
  PerfmonTaskContext saved;

  /* The reply is a message from outside: a task of its own, of the
   * call's source event, linked to the replying task by DBUS_RECV. */
  _perfmon_task_dispatch_root (&ids, call->source_event_id, call->source_event_type,
                               call->callback != NULL ? (gconstpointer) call->callback : (gconstpointer) on_reply);
  _perfmon_task_enter (&ids, &saved);
  if (reply != NULL)
    _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_RECV, ids.task_id,
                                 g_dbus_message_get_sender (reply), g_dbus_message_get_serial (reply));
  return_reply (call, reply, error);
  if (call->callback != NULL)
    call->callback (source, G_ASYNC_RESULT (call->task), call->user_data);
  _perfmon_task_leave (&saved);
  call_free (call);
}

/**
 * perfmon_dbus_connection_call:
 * @connection: a #GDBusConnection to a message bus
 * @bus_name: (nullable): a unique or well-known bus name, or %NULL
 * @object_path: the path of the remote object
 * @interface_name: the D-Bus interface to invoke the method on
 * @method_name: the name of the method to invoke
 * @parameters: (nullable): a #GVariant tuple with the parameters, or %NULL;
 *   consumed if floating
 * @reply_type: (nullable): the expected type of the reply (a tuple), or
 *   %NULL
 * @flags: flags from the #GDBusCallFlags enumeration
 * @timeout_msec: the timeout in milliseconds, -1 for the default timeout
 *   or %G_MAXINT for no timeout
 * @cancellable: (nullable): a #GCancellable, or %NULL
 * @callback: (nullable) (scope async) (closure user_data): called when the
 *   reply (or an error) arrives
 * @user_data: the data to pass to @callback
 *
 * g_dbus_connection_call(), traced: the calling thread's task records the
 * message it sent (DBUS_SEND, with our unique name and the message's
 * serial), and @callback runs in a task of its own that records the reply
 * it received (DBUS_RECV, with the replier's unique name and the reply's
 * serial), so that a reader of both processes' task logs sees the remote
 * handler as the caller's child and the reply as the handler's. The
 * message is the one g_dbus_connection_call() would send: its body is not
 * changed. Get the result with perfmon_dbus_connection_call_finish().
 *
 * Like g_dbus_connection_call(), call it from the thread that runs the
 * thread-default main context @callback is to run in.
 *
 * Since: 0.1
 */
void
perfmon_dbus_connection_call (GDBusConnection    *connection,
                              const char         *bus_name,
                              const char         *object_path,
                              const char         *interface_name,
                              const char         *method_name,
                              GVariant           *parameters,
                              const GVariantType *reply_type,
                              GDBusCallFlags      flags,
                              int                 timeout_msec,
                              GCancellable       *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer            user_data)
{
  g_autoptr(GDBusMessage) message = NULL;
  GDBusMessageFlags message_flags = G_DBUS_MESSAGE_FLAGS_NONE;
  PerfmonSourceEventType source_event_type;
  Call *call;
  guint32 serial = 0;

  g_return_if_fail (G_IS_DBUS_CONNECTION (connection));
  g_return_if_fail (object_path != NULL && g_variant_is_object_path (object_path));
  g_return_if_fail (interface_name != NULL && g_dbus_is_interface_name (interface_name));
  g_return_if_fail (method_name != NULL && g_dbus_is_member_name (method_name));
  g_return_if_fail (parameters == NULL || g_variant_is_of_type (parameters, G_VARIANT_TYPE_TUPLE));
  g_return_if_fail (reply_type == NULL || g_variant_type_is_tuple (reply_type));

  message = g_dbus_message_new_method_call (bus_name, object_path, interface_name, method_name);
  if (parameters != NULL)
    g_dbus_message_set_body (message, parameters);
  if (flags & G_DBUS_CALL_FLAGS_NO_AUTO_START)
    message_flags |= G_DBUS_MESSAGE_FLAGS_NO_AUTO_START;
  if (flags & G_DBUS_CALL_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION)
    message_flags |= G_DBUS_MESSAGE_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION;
  g_dbus_message_set_flags (message, message_flags);

  call = g_new0 (Call, 1);
  /* The callback is called by on_reply(), inside the reply's task. */
  call->task = g_task_new (connection, cancellable, NULL, NULL);
  g_task_set_source_tag (call->task, perfmon_dbus_connection_call);
  call->reply_type = reply_type != NULL ? g_variant_type_copy (reply_type) : NULL;
  call->callback = callback;
  call->user_data = user_data;
  call->source_event_id = perfmon_source_event_get_current (&source_event_type);
  call->source_event_type = source_event_type;

  g_dbus_connection_send_message_with_reply (connection, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                             timeout_msec, &serial, cancellable, on_reply, call);
  /* The reply is handled from the main context, so after this. */
  if (serial != 0)
    _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_SEND, perfmon_task_get_current (),
                                 g_dbus_connection_get_unique_name (connection), serial);
}

/**
 * perfmon_dbus_connection_call_finish:
 * @connection: a #GDBusConnection
 * @res: the #GAsyncResult passed to the callback of
 *   perfmon_dbus_connection_call()
 * @error: return location for a #GError
 *
 * Finishes perfmon_dbus_connection_call(), as
 * g_dbus_connection_call_finish().
 *
 * Returns: (transfer full): the reply's tuple, or %NULL with @error set
 *
 * Since: 0.1
 */
GVariant *
perfmon_dbus_connection_call_finish (GDBusConnection  *connection,
                                     GAsyncResult     *res,
                                     GError          **error)
{
  g_return_val_if_fail (G_IS_DBUS_CONNECTION (connection), NULL);
  g_return_val_if_fail (g_task_is_valid (res, connection), NULL);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (res)) == perfmon_dbus_connection_call, NULL);

  return g_task_propagate_pointer (G_TASK (res), error);
}

/**
 * perfmon_dbus_method_invocation_begin:
 * @invocation: the invocation a method handler got
 *
 * Starts the task that handles a method call, in a
 * #GDBusInterfaceMethodCallFunc, before it does anything else: the task
 * records DBUS_RECV (the caller's unique name and the call's serial), which
 * links it to the caller's task, and becomes the calling thread's task, so
 * that what it dispatches is its child. It also gets a label naming the
 * method. End it with perfmon_dbus_method_invocation_end() before the
 * handler returns, and reply with
 * perfmon_dbus_method_invocation_return_value() (or _return_gerror()) so
 * that the reply is linked too.
 *
 * Pairs nest, 16 deep at most per thread.
 *
 * Since: 0.1
 */
void
perfmon_dbus_method_invocation_begin (GDBusMethodInvocation *invocation)
{
  GDBusMessage *message;
  PerfmonSourceEventType source_event_type;
  guint64 source_event_id;
  PerfmonTaskIds ids;
  PerfmonTaskContext saved;

  g_return_if_fail (G_IS_DBUS_METHOD_INVOCATION (invocation));

  message = g_dbus_method_invocation_get_message (invocation);
  source_event_id = perfmon_source_event_get_current (&source_event_type);
  _perfmon_task_dispatch_root (&ids, source_event_id, source_event_type, perfmon_dbus_method_invocation_begin);
  _perfmon_task_enter (&ids, &saved);
  if (invocations.depth < INVOCATION_DEPTH)
    invocations.saved[invocations.depth] = saved;
  invocations.depth++;
  _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_RECV, ids.task_id,
                               g_dbus_method_invocation_get_sender (invocation),
                               g_dbus_message_get_serial (message));
  perfmon_task_add_label ("D-Bus %s.%s on %s",
                          g_dbus_method_invocation_get_interface_name (invocation),
                          g_dbus_method_invocation_get_method_name (invocation),
                          g_dbus_method_invocation_get_object_path (invocation));
}

/**
 * perfmon_dbus_method_invocation_end:
 *
 * Ends the task perfmon_dbus_method_invocation_begin() started last on
 * the calling thread.
 *
 * Since: 0.1
 */
void
perfmon_dbus_method_invocation_end (void)
{
  PerfmonTaskContext none = { 0, };

  if (invocations.depth == 0)
    {
      g_critical ("perfmon_dbus_method_invocation_end: no invocation began on this thread");
      return;
    }
  invocations.depth--;
  _perfmon_task_leave (invocations.depth < INVOCATION_DEPTH ? &invocations.saved[invocations.depth] : &none);
}

static void
send_reply (GDBusMethodInvocation *invocation,
            GDBusMessage          *reply)
{
  GDBusConnection *connection = g_dbus_method_invocation_get_connection (invocation);
  GDBusMessage *call = g_dbus_method_invocation_get_message (invocation);
  g_autoptr(GError) error = NULL;
  guint32 serial = 0;

  if (g_dbus_message_get_flags (call) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED)
    return;
  if (!g_dbus_connection_send_message (connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, &serial, &error))
    {
      /* As GDBus does: a vanished caller is no error of ours. */
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CLOSED))
        g_warning ("Error sending the reply to %s.%s: %s",
                   g_dbus_method_invocation_get_interface_name (invocation),
                   g_dbus_method_invocation_get_method_name (invocation), error->message);
      return;
    }
  _perfmon_tracer_record_dbus (PERFMON_TASK_RECORD_DBUS_SEND, perfmon_task_get_current (),
                               g_dbus_connection_get_unique_name (connection), serial);
}

/**
 * perfmon_dbus_method_invocation_return_value:
 * @invocation: (transfer full): the invocation to reply to
 * @parameters: (nullable): a #GVariant tuple with the out parameters, or
 *   %NULL for none; consumed if floating
 *
 * g_dbus_method_invocation_return_value(), traced: sends the reply itself
 * to learn its serial and records DBUS_SEND for the calling thread's task,
 * which links the caller's reply task to it. Unlike GLib's, it does not
 * check @parameters against the method's introspection data.
 *
 * Since: 0.1
 */
void
perfmon_dbus_method_invocation_return_value (GDBusMethodInvocation *invocation,
                                             GVariant              *parameters)
{
  /* The reply takes the caller's reference, as g_dbus_method_invocation_return_*() do. */
  G_GNUC_UNUSED g_autoptr(GDBusMethodInvocation) owned = invocation;
  g_autoptr(GDBusMessage) reply = NULL;

  g_return_if_fail (G_IS_DBUS_METHOD_INVOCATION (invocation));
  g_return_if_fail (parameters == NULL || g_variant_is_of_type (parameters, G_VARIANT_TYPE_TUPLE));

  if (parameters == NULL)
    parameters = g_variant_new_tuple (NULL, 0);
  g_variant_ref_sink (parameters);
  reply = g_dbus_message_new_method_reply (g_dbus_method_invocation_get_message (invocation));
  g_dbus_message_set_body (reply, parameters);
  g_variant_unref (parameters);
  send_reply (invocation, reply);
}

/**
 * perfmon_dbus_method_invocation_return_gerror:
 * @invocation: (transfer full): the invocation to reply to
 * @error: the error to reply with
 *
 * g_dbus_method_invocation_return_gerror(), traced like
 * perfmon_dbus_method_invocation_return_value().
 *
 * Since: 0.1
 */
void
perfmon_dbus_method_invocation_return_gerror (GDBusMethodInvocation *invocation,
                                              const GError          *error)
{
  /* The reply takes the caller's reference, as g_dbus_method_invocation_return_*() do. */
  G_GNUC_UNUSED g_autoptr(GDBusMethodInvocation) owned = invocation;
  g_autoptr(GDBusMessage) reply = NULL;
  g_autofree char *name = NULL;

  g_return_if_fail (G_IS_DBUS_METHOD_INVOCATION (invocation));
  g_return_if_fail (error != NULL);

  name = g_dbus_error_encode_gerror (error);
  reply = g_dbus_message_new_method_error_literal (g_dbus_method_invocation_get_message (invocation),
                                                   name, error->message);
  send_reply (invocation, reply);
}
