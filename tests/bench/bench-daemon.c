/* bench-daemon.c: perfmond's CPU while it polls 50 processes at 1 Hz
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A private bus (GTestDBus), perfmond with its default options (one poll a
 * second), and 50 monitored-process children of about 20 groups each
 * (thread, 5 windows, 5 add-ons, 9 compartments), each running its groups
 * every 100 ms without burning CPU. Once all are registered, the daemon's
 * utime + stime from /proc/PID/stat is read every 5 s for 20 s: the CPU it
 * used as a share of one core. Prints figures; asserts none.
 *
 *   PERFMOND=_build/src/daemon/perfmond \
 *   MONITORED_PROCESS=_build/tests/monitored-process \
 *   _build/tests/bench/bench-daemon
 * (meson sets both for `meson test --benchmark bench-daemon`).
 */
#include <gio/gio.h>
#include <perfmon.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "bench-common.h"
#include "perfmon-test-dirs.h"

#define N_PROCESSES 50
#define N_WINDOWS_OF_MEASURE 4
#define WINDOW_S 5

/* utime + stime of @pid in clock ticks, or -1. */
static gint64
process_cpu_ticks (GPid pid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  g_auto(GStrv) fields = NULL;
  const char *after_comm;

  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return -1;
  /* The command name may hold spaces and parentheses: fields count from
   * the last ')'. utime and stime are fields 14 and 15, the 12th and 13th
   * after it. */
  after_comm = strrchr (stat, ')');
  if (after_comm == NULL)
    return -1;
  fields = g_strsplit (after_comm + 2, " ", 0);
  if (g_strv_length (fields) < 13)
    return -1;
  return g_ascii_strtoll (fields[11], NULL, 10) + g_ascii_strtoll (fields[12], NULL, 10);
}

static guint
count_registered (GDBusConnection *connection)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, "org.perfmon.Daemon1",
                                                           "/org/perfmon/Daemon1", "org.perfmon.Daemon1",
                                                           "ListProcesses", NULL, G_VARIANT_TYPE ("(a(usssx))"),
                                                           G_DBUS_CALL_FLAGS_NO_AUTO_START, 10000, NULL, NULL);
  g_autoptr(GVariant) processes = NULL;

  if (reply == NULL)
    return 0;
  processes = g_variant_get_child_value (reply, 0);
  return (guint) g_variant_n_children (processes);
}

static guint
count_history (GDBusConnection *connection,
               guint            pid,
               guint           *n_groups)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, "org.perfmon.Daemon1",
                                                           "/org/perfmon/Daemon1", "org.perfmon.Daemon1",
                                                           "GetHistory", g_variant_new ("(ux)", pid, (gint64) 0),
                                                           G_VARIANT_TYPE ("(av)"),
                                                           G_DBUS_CALL_FLAGS_NO_AUTO_START, 10000, NULL, NULL);
  g_autoptr(GVariant) history = NULL;
  g_autoptr(GVariant) newest = NULL;
  g_autoptr(GVariant) snapshot = NULL;
  g_autoptr(GVariant) groups = NULL;

  *n_groups = 0;
  if (reply == NULL)
    return 0;
  history = g_variant_get_child_value (reply, 0);
  if (g_variant_n_children (history) == 0)
    return 0;
  newest = g_variant_get_child_value (history, g_variant_n_children (history) - 1);
  snapshot = g_variant_get_variant (newest);
  groups = g_variant_get_child_value (snapshot, 7);
  *n_groups = (guint) g_variant_n_children (groups);
  return (guint) g_variant_n_children (history);
}

int
main (int    argc,
      char **argv)
{
  const char *perfmond = g_getenv ("PERFMOND");
  const char *child_path = g_getenv ("MONITORED_PROCESS");
  g_autofree char *home = NULL;
  g_autofree char *pidfile_option = NULL;
  g_autoptr(GTestDBus) bus = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GSubprocess) daemon = NULL;
  g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) error = NULL;
  double percents[N_WINDOWS_OF_MEASURE];
  gint64 total_ticks = 0, total_ns = 0, deadline;
  guint first_pid = 0, history_before, history_after, n_groups;
  long ticks_per_s = sysconf (_SC_CLK_TCK);
  GPid daemon_pid;

  if (perfmond == NULL || child_path == NULL)
    {
      g_printerr ("bench-daemon: set PERFMOND and MONITORED_PROCESS (meson does)\n");
      return 1;
    }

  home = test_make_tmp_dir ("perfmon-bench-daemon-XXXXXX");
  g_setenv ("XDG_RUNTIME_DIR", home, TRUE);
  g_setenv ("XDG_STATE_HOME", home, TRUE);
  pidfile_option = g_strdup_printf ("--pidfile=%s/perfmond.pid", home);

  bus = g_test_dbus_new (G_TEST_DBUS_NONE);
  g_test_dbus_up (bus);
  connection = g_dbus_connection_new_for_address_sync (g_test_dbus_get_bus_address (bus),
                                                       G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                       G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                       NULL, NULL, &error);
  g_assert_no_error (error);

  daemon = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error,
                             perfmond, pidfile_option, NULL);
  g_assert_no_error (error);
  daemon_pid = (GPid) g_ascii_strtoll (g_subprocess_get_identifier (daemon), NULL, 10);

  for (guint i = 0; i < N_PROCESSES; i++)
    {
      g_autofree char *base = g_strdup_printf ("--window-base=%u", 1 + (i % 10) * 5);
      GSubprocess *child = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error, child_path,
                                             "--windows=5", base, "--addon=a@bench", "--addon=b@bench",
                                             "--addon=c@bench", "--addon=d@bench", "--addon=e@bench",
                                             "--compartments=4", "--burn=0", "--tick=100", NULL);

      g_assert_no_error (error);
      g_ptr_array_add (children, child);
      if (i == 0)
        first_pid = (guint) g_ascii_strtoull (g_subprocess_get_identifier (child), NULL, 10);
    }

  deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  while (count_registered (connection) < N_PROCESSES && g_get_monotonic_time () < deadline)
    g_usleep (200 * 1000);
  g_print ("bench-daemon: %u of %d processes registered\n", count_registered (connection), N_PROCESSES);

  /* Let registration and the first polls pass. */
  g_usleep (3 * G_USEC_PER_SEC);
  history_before = count_history (connection, first_pid, &n_groups);

  for (guint w = 0; w < N_WINDOWS_OF_MEASURE; w++)
    {
      gint64 ticks_before = process_cpu_ticks (daemon_pid);
      gint64 start = perfmon_clock_monotonic_ns ();
      gint64 ticks, ns;

      g_usleep (WINDOW_S * G_USEC_PER_SEC);
      ticks = process_cpu_ticks (daemon_pid) - ticks_before;
      ns = perfmon_clock_monotonic_ns () - start;
      percents[w] = 100.0 * ((double) ticks / ticks_per_s) / (ns / 1e9);
      total_ticks += ticks;
      total_ns += ns;
      g_print ("bench-daemon: window %u: %.2f %% of one core\n", w + 1, percents[w]);
    }
  history_after = count_history (connection, first_pid, &n_groups);

  g_print ("bench-daemon: %d processes, %u groups each, polled at 1 Hz: "
           "%" G_GUINT64_FORMAT " snapshots of one process kept during the %d s measured\n",
           N_PROCESSES, n_groups, (guint64) (history_after - history_before),
           N_WINDOWS_OF_MEASURE * WINDOW_S);
  g_print ("bench-daemon: perfmond CPU over %.1f s: %.2f %% of one core (median of %d windows of %d s: %.2f %%); "
           "target <= 2 %% of one core\n",
           total_ns / 1e9, 100.0 * ((double) total_ticks / ticks_per_s) / (total_ns / 1e9),
           N_WINDOWS_OF_MEASURE, WINDOW_S, bench_median (percents, N_WINDOWS_OF_MEASURE));

  for (guint i = 0; i < children->len; i++)
    {
      g_subprocess_force_exit (g_ptr_array_index (children, i));
      g_subprocess_wait (g_ptr_array_index (children, i), NULL, NULL);
    }
  g_subprocess_send_signal (daemon, SIGTERM);
  g_subprocess_wait (daemon, NULL, NULL);
  g_dbus_connection_close_sync (connection, NULL, NULL);
  g_clear_object (&connection);
  g_test_dbus_down (bus);
  test_remove_tree (home);
  return 0;
}
