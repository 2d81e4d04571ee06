/* bench-hang-signal.c: what a hang's signal costs the watched thread when
 * the monitor is exported on D-Bus
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A private bus (GTestDBus), a monitor with automatic groups, a hang
 * monitor (threshold 64 ms) and the export, with one subscriber (as
 * perfmond is, once registered), so that every Hang signal is sent. The
 * loop hangs 100 ms, in a stack some frames deep, every 250 ms, N times
 * (20). Prints, and asserts nothing:
 *  - the export's "hang" handler on the watched thread: the time between a
 *    handler connected before the export and one connected after it, per
 *    hang (median, max);
 *  - the "[perfmon] hang monitor signal" automatic group: its dispatches
 *    and mean CPU time per dispatch (goal of issue 22: each perfmon
 *    dispatch <= 0.2 ms at the 99th percentile, never >= 1 ms).
 *
 *   bench-hang-signal [N]
 */
#include "config.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench-common.h"
#include "perfmon.h"

#define HANG_MS 100
#define PERIOD_MS 250
#define THRESHOLD_MS 64

typedef struct
{
  guint   n_wanted;
  guint   n_hangs;
  gint64  handler_start;
  GArray *handler_us;   /* double */
  GMainLoop *loop;
} Bench;

static G_GNUC_NO_INLINE void
spin (guint depth)
{
  if (depth > 0)
    {
      spin (depth - 1);
      return;
    }
  gint64 end = g_get_monotonic_time () + HANG_MS * 1000;
  while (g_get_monotonic_time () < end)
    ;
}

static gboolean
hang_now (gpointer data)
{
  Bench *bench = data;

  if (bench->n_hangs >= bench->n_wanted)
    return G_SOURCE_CONTINUE;
  spin (12);
  (void) bench;
  return G_SOURCE_CONTINUE;
}

static void
on_hang_first (PerfmonHangMonitor *hang_monitor,
               PerfmonHangReport  *report,
               gpointer            data)
{
  Bench *bench = data;

  bench->handler_start = g_get_monotonic_time ();
}

static void
on_hang_last (PerfmonHangMonitor *hang_monitor,
              PerfmonHangReport  *report,
              gpointer            data)
{
  Bench *bench = data;
  double us = (double) (g_get_monotonic_time () - bench->handler_start);

  g_array_append_val (bench->handler_us, us);
  if (++bench->n_hangs >= bench->n_wanted)
    g_main_loop_quit (bench->loop);
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(GTestDBus) bus = NULL;
  g_autoptr(GDBusConnection) connection = NULL;
  g_autoptr(GDBusConnection) subscriber = NULL;
  g_autoptr(PerfmonMonitor) monitor = NULL;
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *pings_dir = NULL;
  Bench bench = { .n_wanted = 20 };
  GPtrArray *groups;
  double median;
  double max = 0;

  if (argc > 1)
    bench.n_wanted = (guint) MAX (atoi (argv[1]), 1);

  bus = g_test_dbus_new (G_TEST_DBUS_NONE);
  g_test_dbus_up (bus);
  connection = g_dbus_connection_new_for_address_sync (g_test_dbus_get_bus_address (bus),
                                                       G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                       G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                       NULL, NULL, &error);
  g_assert_no_error (error);
  subscriber = g_dbus_connection_new_for_address_sync (g_test_dbus_get_bus_address (bus),
                                                       G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                       G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                       NULL, NULL, &error);
  g_assert_no_error (error);

  pings_dir = g_dir_make_tmp ("perfmon-bench-hang-signal-XXXXXX", &error);
  g_assert_no_error (error);
  monitor = perfmon_monitor_new (g_main_context_default ());
  perfmon_monitor_set_automatic_groups (monitor, TRUE);
  hang_monitor = perfmon_hang_monitor_new (monitor);
  g_object_set (hang_monitor, "pings-dir", pings_dir, NULL);
  perfmon_hang_monitor_set_threshold (hang_monitor, THRESHOLD_MS);
  bench.handler_us = g_array_new (FALSE, FALSE, sizeof (double));
  bench.loop = g_main_loop_new (NULL, FALSE);

  /* Before the export's handler, then after it. */
  g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang_first), &bench);
  if (!perfmon_monitor_export_full (monitor, hang_monitor, connection, PERFMON_EXPORT_FLAGS_NO_REGISTER, &error))
    g_error ("export: %s", error->message);
  g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang_last), &bench);
  if (!perfmon_hang_monitor_start (hang_monitor, &error))
    g_error ("hang monitor: %s", error->message);

  /* The subscriber's call is served by the loop: run it meanwhile. */
  g_dbus_connection_call (subscriber, g_dbus_connection_get_unique_name (connection), PERFMON_MONITOR_OBJECT_PATH,
                          PERFMON_MONITOR_INTERFACE, "Subscribe", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                          NULL, NULL, NULL);
  g_timeout_add (PERIOD_MS, hang_now, &bench);
  g_main_loop_run (bench.loop);

  median = bench_median ((double *) (gpointer) bench.handler_us->data, bench.handler_us->len);
  if (bench.handler_us->len > 0)
    max = g_array_index (bench.handler_us, double, bench.handler_us->len - 1);
  {
    g_autofree char *loadavg = NULL;

    g_file_get_contents ("/proc/loadavg", &loadavg, NULL, NULL);
    g_print ("bench-hang-signal: load average %s", loadavg != NULL ? loadavg : "?\n");
  }
  g_print ("bench-hang-signal: %u hangs of %d ms (threshold %d ms), exported with one subscriber\n",
           bench.n_hangs, HANG_MS, THRESHOLD_MS);
  g_print ("  the export's hang handler on the watched thread: median %.1f us, max %.1f us\n", median, max);

  snapshot = perfmon_monitor_snapshot (monitor);
  groups = perfmon_snapshot_get_groups (snapshot);
  for (guint i = 0; i < groups->len; i++)
    {
      PerfmonGroupStats *stats = g_ptr_array_index (groups, i);

      if (g_str_has_prefix (perfmon_group_stats_get_name (stats), "[perfmon]"))
        g_print ("  group \"%s\": %" G_GUINT64_FORMAT " dispatches, %.1f us CPU per dispatch\n",
                 perfmon_group_stats_get_name (stats), perfmon_group_stats_get_ticks (stats),
                 perfmon_group_stats_get_ticks (stats) > 0
                   ? (double) perfmon_group_stats_get_cpu_time (stats) / (double) perfmon_group_stats_get_ticks (stats)
                   : 0.0);
    }

  perfmon_hang_monitor_stop (hang_monitor);
  perfmon_monitor_unexport (monitor, connection);
  g_array_unref (bench.handler_us);
  g_main_loop_unref (bench.loop);
  g_test_dbus_down (bus);
  return 0;
}
