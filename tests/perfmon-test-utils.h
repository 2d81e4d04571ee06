/* perfmon-test-utils.h: what the C tests share to drive main loops and
 * private buses
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <fcntl.h>
#include <gio/gio.h>

/* The bound of test_iterate_until(): generous for a loaded machine or a
 * sanitizer's slowdown, it only catches a hung test. */
#define TEST_ITERATE_TIMEOUT_S 20

/* A GSourceFunc that ends the test: @data is what it waited for. */
static inline gboolean
test_fail_on_timeout (gpointer data)
{
  g_error ("timed out: %s", (const char *) data);
  return G_SOURCE_REMOVE;
}

/* Iterates @context (NULL: the thread-default one) until *@done, failing
 * the test after TEST_ITERATE_TIMEOUT_S seconds with @what. Blocks in
 * each iteration, so something must wake the context when *@done
 * changes; it runs one more non-blocking iteration at the end, so that the
 * iteration that set *@done is finished (monitors count it then). */
static inline void
test_iterate_until (GMainContext   *context,
                    const gboolean *done,
                    const char     *what)
{
  g_autoptr(GMainContext) owned = context != NULL ? g_main_context_ref (context)
                                                  : g_main_context_ref_thread_default ();
  g_autoptr(GSource) timeout = g_timeout_source_new_seconds (TEST_ITERATE_TIMEOUT_S);

  g_source_set_name (timeout, "[test] timeout");
  g_source_set_callback (timeout, test_fail_on_timeout, (gpointer) what, NULL);
  g_source_attach (timeout, owned);
  while (!*done)
    g_main_context_iteration (owned, TRUE);
  g_main_context_iteration (owned, FALSE);
  g_source_destroy (timeout);
}

/* Iterates @context (NULL: the thread-default one) for about @ms,
 * without blocking for long. */
static inline void
test_iterate_for (GMainContext *context,
                  guint         ms)
{
  g_autoptr(GMainContext) owned = context != NULL ? g_main_context_ref (context)
                                                  : g_main_context_ref_thread_default ();
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

  while (g_get_monotonic_time () < end)
    {
      g_main_context_iteration (owned, FALSE);
      g_usleep (1000);
    }
}

/* g_test_dbus_up(), and then no descriptor of the test's is left for a
 * later dbus-daemon to inherit. GLib 2.74's GTestDBus spawns dbus-daemon
 * with G_SPAWN_LEAVE_DESCRIPTORS_OPEN, and its watcher process (which
 * kills the buses once the test is gone) waits for the end of a pipe made
 * without FD_CLOEXEC: every dbus-daemon after the first held the pipe
 * open, so a test that died left the watcher waiting and its buses
 * running, holding meson's output pipes until the test's timeout. */
static inline void
test_dbus_up (GTestDBus *bus)
{
  g_autoptr(GDir) fds = NULL;
  const char *name;

  g_test_dbus_up (bus);
  fds = g_dir_open ("/proc/self/fd", 0, NULL);
  g_assert_nonnull (fds);
  while ((name = g_dir_read_name (fds)) != NULL)
    {
      int fd = (int) g_ascii_strtoll (name, NULL, 10);
      int flags;

      if (fd > 2 && (flags = fcntl (fd, F_GETFD)) >= 0)
        fcntl (fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

/* A private message bus for one test (a real dbus-daemon), up. */
static inline GTestDBus *
test_private_bus_new (void)
{
  GTestDBus *bus = g_test_dbus_new (G_TEST_DBUS_NONE);

  test_dbus_up (bus);
  return bus;
}

/* A new connection to @bus, as a client of the message bus. */
static inline GDBusConnection *
test_bus_connect (GTestDBus *bus)
{
  g_autoptr(GError) error = NULL;
  GDBusConnection *connection =
    g_dbus_connection_new_for_address_sync (g_test_dbus_get_bus_address (bus),
                                            G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                            G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                            NULL, NULL, &error);

  g_assert_no_error (error);
  return connection;
}
