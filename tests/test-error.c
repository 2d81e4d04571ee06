/* test-error.c: PERFMON_ERROR crosses D-Bus as itself
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <gio/gio.h>

#include "perfmon.h"
#include "perfmon-test-utils.h"

/* Every code of PerfmonError has a D-Bus name, and a GDBus client that
 * receives it gets the same domain and code back. */
static void
test_error_dbus_names (void)
{
  g_autoptr(GEnumClass) codes = g_type_class_ref (PERFMON_TYPE_ERROR);

  for (guint i = 0; i < codes->n_values; i++)
    {
      int code = codes->values[i].value;
      g_autoptr(GError) error = g_error_new (PERFMON_ERROR, code, "code %d", code);
      g_autofree char *name = g_dbus_error_encode_gerror (error);
      g_autoptr(GError) back = NULL;

      g_test_message ("%s: %s", codes->values[i].value_name, name);
      g_assert_true (g_str_has_prefix (name, "org.perfmon.Error."));
      g_assert_true (g_dbus_is_interface_name (name));
      back = g_dbus_error_new_for_dbus_error (name, "over the bus");
      g_assert_error (back, PERFMON_ERROR, code);
    }
}

/* Over a real connection: a method that fails with a PerfmonError. */
static void
on_method_call (GDBusConnection       *connection,
                const char            *sender,
                const char            *object_path,
                const char            *interface_name,
                const char            *method_name,
                GVariant              *parameters,
                GDBusMethodInvocation *invocation,
                gpointer               user_data)
{
  g_dbus_method_invocation_return_error_literal (invocation, PERFMON_ERROR,
                                                 PERFMON_ERROR_LIMIT_REACHED, "too many");
}

typedef struct
{
  GAsyncResult *result;
  gboolean      done;
} Reply;

static void
on_reply (GObject      *source,
          GAsyncResult *result,
          gpointer      user_data)
{
  Reply *reply = user_data;

  reply->result = g_object_ref (result);
  reply->done = TRUE;
}

static void
test_error_over_a_bus (void)
{
  static const char xml[] =
    "<node><interface name='org.perfmon.Test'><method name='Fail'/></interface></node>";
  static const GDBusInterfaceVTable vtable = { on_method_call, NULL, NULL, { 0 } };
  g_autoptr(GTestDBus) bus = test_private_bus_new ();
  g_autoptr(GDBusConnection) server = NULL;
  g_autoptr(GDBusConnection) client = NULL;
  g_autoptr(GDBusNodeInfo) info = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *remote = NULL;
  Reply answer = { NULL, FALSE };
  guint id;

  server = test_bus_connect (bus);
  client = test_bus_connect (bus);
  info = g_dbus_node_info_new_for_xml (xml, &error);
  g_assert_no_error (error);
  id = g_dbus_connection_register_object (server, "/test", info->interfaces[0], &vtable,
                                          NULL, NULL, &error);
  g_assert_no_error (error);

  /* The server answers from this thread's default context: call
   * asynchronously and iterate it until the reply comes. */
  g_dbus_connection_call (client, g_dbus_connection_get_unique_name (server), "/test",
                          "org.perfmon.Test", "Fail", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, 10000,
                          NULL, on_reply, &answer);
  test_iterate_until (NULL, &answer.done, "the reply to Fail()");
  reply = g_dbus_connection_call_finish (client, answer.result, &error);
  g_clear_object (&answer.result);
  g_assert_null (reply);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED);
  remote = g_dbus_error_get_remote_error (error);
  g_assert_cmpstr (remote, ==, "org.perfmon.Error.LimitReached");

  g_dbus_connection_unregister_object (server, id);
  g_dbus_connection_close_sync (server, NULL, NULL);
  g_dbus_connection_close_sync (client, NULL, NULL);
  g_test_dbus_down (bus);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/error/dbus-names", test_error_dbus_names);
  g_test_add_func ("/error/over-a-bus", test_error_over_a_bus);
  return g_test_run ();
}
