/* skeleton-service.c: a D-Bus service written as GNOME services are, with
 * a gdbus-codegen skeleton, that knows nothing of perfmon. A helper
 * program for tests/cli/test_cli_run_skeleton.py, which checks it.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: skeleton-service (on $DBUS_SESSION_BUS_ADDRESS): owns
 * org.perfmon.test.SlowPeer, serves org.perfmon.test.SlowPeer.Slow at
 * /org/perfmon/test/SlowPeer (answered at once), prints "ready" once it
 * owns the name; runs until its name is lost or it is killed.
 */
#include <stdio.h>

#include "skeleton-service-generated.h"

static gboolean
on_handle_slow (SkeletonSlowPeer      *peer,
                GDBusMethodInvocation *invocation,
                gpointer               user_data)
{
  skeleton_slow_peer_complete_slow (peer, invocation);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

typedef struct
{
  GMainLoop        *loop;
  SkeletonSlowPeer *peer;
} Service;

static void
on_bus (GDBusConnection *connection,
        const char      *name,
        gpointer         user_data)
{
  Service *service = user_data;
  GError *error = NULL;

  if (!g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (service->peer), connection,
                                         "/org/perfmon/test/SlowPeer", &error))
    {
      g_printerr ("skeleton-service: %s\n", error->message);
      g_error_free (error);
    }
}

static void
on_name (GDBusConnection *connection,
         const char      *name,
         gpointer         user_data)
{
  printf ("ready\n");
  fflush (stdout);
}

static void
on_lost (GDBusConnection *connection,
         const char      *name,
         gpointer         user_data)
{
  Service *service = user_data;

  g_main_loop_quit (service->loop);
}

int
main (void)
{
  Service service = { g_main_loop_new (NULL, FALSE), skeleton_slow_peer_skeleton_new () };
  guint owner;

  g_signal_connect (service.peer, "handle-slow", G_CALLBACK (on_handle_slow), NULL);
  owner = g_bus_own_name (G_BUS_TYPE_SESSION, "org.perfmon.test.SlowPeer", G_BUS_NAME_OWNER_FLAGS_NONE,
                          on_bus, on_name, on_lost, &service, NULL);
  g_main_loop_run (service.loop);
  g_bus_unown_name (owner);
  g_object_unref (service.peer);
  g_main_loop_unref (service.loop);
  return 0;
}
