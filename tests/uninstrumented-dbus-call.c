/* uninstrumented-dbus-call.c: a GLib program that knows nothing of
 * perfmon and makes one synchronous D-Bus call from its main loop, for the
 * tests of blocked time under "perfmon run"
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: uninstrumented-dbus-call MODE NAME PATH INTERFACE METHOD
 * calls METHOD (no arguments) on the session bus with
 * g_dbus_connection_call_sync() (MODE connection),
 * g_dbus_connection_call_with_unix_fd_list_sync() (connection-fds),
 * g_dbus_connection_send_message_with_reply_sync() (message),
 * g_dbus_proxy_call_sync() (proxy) or
 * g_dbus_proxy_call_with_unix_fd_list_sync() (proxy-fds), from an idle,
 * and exits 0 if it got a reply.
 */
#include <string.h>

#include <gio/gio.h>

static char **call_args;
static gboolean replied;

static gboolean
call (gpointer data)
{
  GMainLoop *loop = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  const char *mode = call_args[0], *name = call_args[1], *path = call_args[2];
  const char *interface = call_args[3], *method = call_args[4];

  if (bus == NULL)
    g_error ("%s", error->message);
  if (strcmp (mode, "connection") == 0)
    {
      g_autoptr(GVariant) reply = g_dbus_connection_call_sync (bus, name, path, interface, method, NULL, NULL,
                                                               G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
      replied = reply != NULL;
    }
  else if (strcmp (mode, "connection-fds") == 0)
    {
      g_autoptr(GVariant) reply =
        g_dbus_connection_call_with_unix_fd_list_sync (bus, name, path, interface, method, NULL, NULL,
                                                       G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL, &error);
      replied = reply != NULL;
    }
  else if (strcmp (mode, "message") == 0)
    {
      g_autoptr(GDBusMessage) message = g_dbus_message_new_method_call (name, path, interface, method);
      g_autoptr(GDBusMessage) reply =
        g_dbus_connection_send_message_with_reply_sync (bus, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, -1,
                                                        NULL, NULL, &error);
      replied = reply != NULL && g_dbus_message_get_message_type (reply) == G_DBUS_MESSAGE_TYPE_METHOD_RETURN;
    }
  else
    {
      g_autoptr(GDBusProxy) proxy =
        g_dbus_proxy_new_sync (bus, G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES |
                                    G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS |
                                    G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START,
                               NULL, name, path, interface, NULL, &error);
      g_autoptr(GVariant) reply = NULL;

      if (proxy != NULL && strcmp (mode, "proxy-fds") == 0)
        reply = g_dbus_proxy_call_with_unix_fd_list_sync (proxy, method, NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                                                          NULL, NULL, NULL, &error);
      else if (proxy != NULL)
        reply = g_dbus_proxy_call_sync (proxy, method, NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);

      replied = reply != NULL;
    }
  if (!replied)
    g_printerr ("uninstrumented-dbus-call: %s\n", error != NULL ? error->message : "not a reply");
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  if (argc != 6)
    {
      g_printerr ("usage: %s connection|connection-fds|message|proxy|proxy-fds NAME PATH INTERFACE METHOD\n",
                  argv[0]);
      return 2;
    }
  call_args = argv + 1;
  g_idle_add (call, loop);
  g_main_loop_run (loop);
  return replied ? 0 : 1;
}
