/* bench-daemon.c: perfmond's CPU while it polls N processes at 1 Hz, and
 * its memory and CPU under floods
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
 *   _build/tests/bench/bench-daemon [N | floods]
 * (meson sets both for `meson test --benchmark bench-daemon`, which runs
 * 50, 200 and the floods). N is the number of processes (50); `floods`
 * runs each flood of tests/test-daemon.c for a few seconds against a fresh
 * perfmond and prints its peak RSS and CPU: Hang signals of 250 KiB,
 * 8 processes of 9,999 windows of 1 KiB names with GetAggregate calls,
 * 10 such processes under --max-history-mib=1, GetHang with 30 MB ids.
 */
#include <gio/gio.h>
#include <perfmon.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "bench-common.h"
#include "perfmon-test-dirs.h"
#include "perfmon-test-utils.h"

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

static gboolean
name_owned (GDBusConnection *connection)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, "org.freedesktop.DBus",
                                                           "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                           "NameHasOwner", g_variant_new ("(s)", PERFMON_DAEMON_BUS_NAME),
                                                           G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE,
                                                           -1, NULL, NULL);
  gboolean owned = FALSE;

  if (reply != NULL)
    g_variant_get (reply, "(b)", &owned);
  return owned;
}

static guint
count_registered (GDBusConnection *connection)
{
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, PERFMON_DAEMON_BUS_NAME,
                                                           PERFMON_DAEMON_OBJECT_PATH, PERFMON_DAEMON_INTERFACE,
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
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, PERFMON_DAEMON_BUS_NAME,
                                                           PERFMON_DAEMON_OBJECT_PATH, PERFMON_DAEMON_INTERFACE,
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

typedef struct
{
  char            *home;
  GTestDBus       *bus;
  GDBusConnection *connection;
  GSubprocess     *daemon;
  GPid             daemon_pid;
  GPtrArray       *children;
} Bench;

static void
bench_up (Bench              *bench,
          const char * const *options)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;

  bench->home = test_make_tmp_dir ("perfmon-bench-daemon-XXXXXX");
  g_setenv ("XDG_RUNTIME_DIR", bench->home, TRUE);
  g_setenv ("XDG_STATE_HOME", bench->home, TRUE);
  bench->bus = test_private_bus_new ();
  bench->connection = test_bus_connect (bench->bus);
  g_ptr_array_add (argv, (gpointer) g_getenv ("PERFMOND"));
  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) options[i]);
  g_ptr_array_add (argv, NULL);
  bench->daemon = g_subprocess_newv ((const char * const *) argv->pdata,
                                     G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
  g_assert_no_error (error);
  bench->daemon_pid = (GPid) g_ascii_strtoll (g_subprocess_get_identifier (bench->daemon), NULL, 10);
  bench->children = g_ptr_array_new_with_free_func (g_object_unref);
}

static guint
bench_child (Bench              *bench,
             const char * const *options)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  GSubprocess *child;

  g_ptr_array_add (argv, (gpointer) g_getenv ("MONITORED_PROCESS"));
  for (guint i = 0; options != NULL && options[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) options[i]);
  g_ptr_array_add (argv, NULL);
  child = g_subprocess_newv ((const char * const *) argv->pdata, G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error);
  g_assert_no_error (error);
  g_ptr_array_add (bench->children, child);
  return (guint) g_ascii_strtoull (g_subprocess_get_identifier (child), NULL, 10);
}

static void
bench_wait_registered (Bench *bench,
                       guint  n)
{
  gint64 deadline = g_get_monotonic_time () + 180 * G_USEC_PER_SEC;

  while (count_registered (bench->connection) < n && g_get_monotonic_time () < deadline)
    g_usleep (200 * 1000);
}

static void
bench_down (Bench *bench)
{
  for (guint i = 0; i < bench->children->len; i++)
    {
      g_subprocess_force_exit (g_ptr_array_index (bench->children, i));
      g_subprocess_wait (g_ptr_array_index (bench->children, i), NULL, NULL);
    }
  g_ptr_array_unref (bench->children);
  g_subprocess_send_signal (bench->daemon, SIGTERM);
  g_subprocess_wait (bench->daemon, NULL, NULL);
  g_clear_object (&bench->daemon);
  g_dbus_connection_close_sync (bench->connection, NULL, NULL);
  g_clear_object (&bench->connection);
  g_test_dbus_down (bench->bus);
  g_clear_object (&bench->bus);
  test_remove_tree (bench->home);
  g_clear_pointer (&bench->home, g_free);
}

/* A field of /proc/PID/status, in KiB. */
static guint64
status_kib (GPid        pid,
            const char *field)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) pid);
  g_autofree char *text = NULL;
  g_autofree char *key = g_strdup_printf ("\n%s:", field);
  const char *at;

  if (!g_file_get_contents (path, &text, NULL, NULL) || (at = strstr (text, key)) == NULL)
    return 0;
  return g_ascii_strtoull (at + strlen (key), NULL, 10);
}

/* A free loopback port (bound, then released). */
static guint16
free_port (void)
{
  g_autoptr(GSocket) socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GSocketAddress) bound = NULL;

  g_assert_true (g_socket_bind (socket, address, FALSE, NULL));
  bound = g_socket_get_local_address (socket, NULL);
  return g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
}

/* One GET /metrics over a fresh connection; the bytes of the answer, and
 * its time in *ns. */
static gsize
scrape (guint16  port,
        gint64  *ns)
{
  g_autoptr(GSocketClient) client = g_socket_client_new ();
  g_autoptr(GSocketConnection) connection = NULL;
  g_autofree char *request = g_strdup_printf ("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%u\r\n\r\n", port);
  gint64 start = _perfmon_clock_monotonic_ns ();
  char buffer[65536];
  gsize total = 0;
  gssize n;

  connection = g_socket_client_connect_to_host (client, "127.0.0.1", port, NULL, NULL);
  if (connection == NULL)
    return 0;
  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (connection)), request,
                             strlen (request), NULL, NULL, NULL);
  while ((n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (connection)), buffer,
                                   sizeof buffer, NULL, NULL)) > 0)
    total += (gsize) n;
  *ns = _perfmon_clock_monotonic_ns () - start;
  return total;
}

static void
run_polling (guint n_processes)
{
  Bench bench = { 0, };
  guint16 metrics_port = free_port ();
  g_autofree char *metrics_option = g_strdup_printf ("--metrics-address=127.0.0.1:%u", metrics_port);
  const char * const daemon_options[] = { metrics_option, NULL };
  double percents[N_WINDOWS_OF_MEASURE];
  gint64 total_ticks = 0, total_ns = 0;
  guint first_pid = 0, history_before, history_after, n_groups;
  long ticks_per_s = sysconf (_SC_CLK_TCK);

  bench_up (&bench, daemon_options);
  for (guint i = 0; i < n_processes; i++)
    {
      g_autofree char *base = g_strdup_printf ("--window-base=%u", 1 + (i % 10) * 5);
      const char * const options[] = { "--windows=5", base, "--addon=a@bench", "--addon=b@bench",
                                        "--addon=c@bench", "--addon=d@bench", "--addon=e@bench",
                                        "--compartments=4", "--burn=0", "--tick=100", NULL };
      guint pid = bench_child (&bench, options);

      if (i == 0)
        first_pid = pid;
    }

  bench_wait_registered (&bench, n_processes);
  g_print ("bench-daemon: %u of %u processes registered\n", count_registered (bench.connection), n_processes);

  /* Let registration and the first polls pass. */
  g_usleep (3 * G_USEC_PER_SEC);
  history_before = count_history (bench.connection, first_pid, &n_groups);

  for (guint w = 0; w < N_WINDOWS_OF_MEASURE; w++)
    {
      gint64 ticks_before = process_cpu_ticks (bench.daemon_pid);
      gint64 start = _perfmon_clock_monotonic_ns ();
      gint64 ticks, ns;

      g_usleep (WINDOW_S * G_USEC_PER_SEC);
      ticks = process_cpu_ticks (bench.daemon_pid) - ticks_before;
      ns = _perfmon_clock_monotonic_ns () - start;
      percents[w] = 100.0 * ((double) ticks / ticks_per_s) / (ns / 1e9);
      total_ticks += ticks;
      total_ns += ns;
      g_print ("bench-daemon: window %u: %.2f %% of one core\n", w + 1, percents[w]);
    }
  history_after = count_history (bench.connection, first_pid, &n_groups);

  g_print ("bench-daemon: %u processes, %u groups each, polled at 1 Hz: "
           "%" G_GUINT64_FORMAT " snapshots of one process kept during the %d s measured\n",
           n_processes, n_groups, (guint64) (history_after - history_before),
           N_WINDOWS_OF_MEASURE * WINDOW_S);
  g_print ("bench-daemon: %u processes: perfmond CPU over %.1f s: %.2f %% of one core (median of %d windows "
           "of %d s: %.2f %%), RSS %" G_GUINT64_FORMAT " KiB; target <= 2 %% of one core at 200\n",
           n_processes, total_ns / 1e9, 100.0 * ((double) total_ticks / ticks_per_s) / (total_ns / 1e9),
           N_WINDOWS_OF_MEASURE, WINDOW_S, bench_median (percents, N_WINDOWS_OF_MEASURE),
           status_kib (bench.daemon_pid, "VmRSS"));

  /* The Prometheus endpoint: GET /metrics, one connection each. */
  {
    double ms[21];
    gsize bytes = 0;

    for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
      {
        gint64 ns = 0;

        bytes = scrape (metrics_port, &ns);
        ms[i] = ns / 1e6;
        g_usleep (50 * 1000);
      }
    g_print ("bench-daemon: %u processes x %u groups: GET /metrics of %" G_GSIZE_FORMAT " bytes: "
             "median %.2f ms over %u scrapes\n", n_processes, n_groups, bytes,
             bench_median (ms, G_N_ELEMENTS (ms)), (guint) G_N_ELEMENTS (ms));
  }
  bench_down (&bench);
}

typedef enum
{
  FLOOD_HANGS,
  FLOOD_AGGREGATE,
  FLOOD_HISTORY,
  FLOOD_STRINGS,
} Flood;

static void
run_flood (Flood flood)
{
  static const char * const names[] = {
    "2,000 Hang signals of 250 KiB (--max-signals=1000)",
    "8 processes x 9,999 windows of 1 KiB names, GetAggregate every 0.5 s",
    "10 processes x 9,999 windows of 1 KiB names, --max-history-mib=1",
    "GetHang with a 30 MB id, 10 times",
  };
  const char * const hang_options[] = { "--max-signals=1000", NULL };
  const char * const history_options[] = { "--max-history-mib=1", NULL };
  Bench bench = { 0, };
  long ticks_per_s = sysconf (_SC_CLK_TCK);
  gint64 ticks_before, start, ns;
  guint64 rss_before;
  guint n_children = 0;

  bench_up (&bench, flood == FLOOD_HANGS ? hang_options : flood == FLOOD_HISTORY ? history_options : NULL);
  while (!name_owned (bench.connection))
    g_usleep (50 * 1000);
  rss_before = status_kib (bench.daemon_pid, "VmRSS");
  ticks_before = process_cpu_ticks (bench.daemon_pid);
  start = _perfmon_clock_monotonic_ns ();

  switch (flood)
    {
    case FLOOD_HANGS:
      {
        const char * const options[] = { "--mode=hang-flood", NULL };

        bench_child (&bench, options);
        g_subprocess_wait (g_ptr_array_index (bench.children, 0), NULL, NULL);
        break;
      }
    case FLOOD_AGGREGATE:
    case FLOOD_HISTORY:
      n_children = flood == FLOOD_AGGREGATE ? 8 : 10;
      for (guint i = 0; i < n_children; i++)
        {
          g_autofree char *base = g_strdup_printf ("--window-base=%u", 1 + i * 10000);
          const char * const options[] = { "--mode=big", base, NULL };

          bench_child (&bench, options);
        }
      bench_wait_registered (&bench, n_children);
      for (guint i = 0; i < 10; i++)
        {
          if (flood == FLOOD_AGGREGATE)
            {
              GVariant *reply =
                g_dbus_connection_call_sync (bench.connection, PERFMON_DAEMON_BUS_NAME,
                                             PERFMON_DAEMON_OBJECT_PATH, PERFMON_DAEMON_INTERFACE,
                                             "GetAggregate", NULL, NULL,
                                             G_DBUS_CALL_FLAGS_NO_AUTO_START, 60000, NULL, NULL);

              g_clear_pointer (&reply, g_variant_unref);
            }
          g_usleep (G_USEC_PER_SEC / 2);
        }
      break;
    case FLOOD_STRINGS:
      {
        /* 30 MB: a private bus takes messages of up to 32 MiB. */
        g_autofree char *id = g_strnfill (30 * 1000 * 1000, 'i');

        for (guint i = 0; i < 10; i++)
          {
            GVariant *reply =
              g_dbus_connection_call_sync (bench.connection, PERFMON_DAEMON_BUS_NAME,
                                           PERFMON_DAEMON_OBJECT_PATH, PERFMON_DAEMON_INTERFACE,
                                           "GetHang", g_variant_new ("(s)", id), NULL,
                                           G_DBUS_CALL_FLAGS_NO_AUTO_START, 60000, NULL, NULL);

            g_clear_pointer (&reply, g_variant_unref);
          }
        break;
      }
    }

  ns = _perfmon_clock_monotonic_ns () - start;
  g_print ("bench-daemon: flood: %s: perfmond RSS %" G_GUINT64_FORMAT " KiB before, peak %" G_GUINT64_FORMAT
           " KiB, now %" G_GUINT64_FORMAT " KiB; CPU %.2f s over %.1f s (%.1f %% of one core); %s\n",
           names[flood], rss_before, status_kib (bench.daemon_pid, "VmHWM"),
           status_kib (bench.daemon_pid, "VmRSS"),
           (double) (process_cpu_ticks (bench.daemon_pid) - ticks_before) / ticks_per_s, ns / 1e9,
           100.0 * ((double) (process_cpu_ticks (bench.daemon_pid) - ticks_before) / ticks_per_s) / (ns / 1e9),
           name_owned (bench.connection) ? "still on the bus" : "GONE from the bus");
  bench_down (&bench);
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *uptime = NULL;

  if (g_getenv ("PERFMOND") == NULL || g_getenv ("MONITORED_PROCESS") == NULL)
    {
      g_printerr ("bench-daemon: set PERFMOND and MONITORED_PROCESS (meson does)\n");
      return 1;
    }
  if (g_file_get_contents ("/proc/loadavg", &uptime, NULL, NULL))
    g_print ("bench-daemon: load average at start: %s", uptime);

  if (argc > 1 && g_str_equal (argv[1], "floods"))
    {
      run_flood (FLOOD_HANGS);
      run_flood (FLOOD_AGGREGATE);
      run_flood (FLOOD_HISTORY);
      run_flood (FLOOD_STRINGS);
    }
  else if (argc > 1)
    {
      guint64 n;

      if (!g_ascii_string_to_unsigned (argv[1], 10, 1, 1000, &n, NULL))
        {
          g_printerr ("bench-daemon: expected a number of processes in [1, 1000] or \"floods\", got “%s”\n",
                      argv[1]);
          return 2;
        }
      run_polling ((guint) n);
    }
  else
    {
      run_polling (50);
      run_polling (200);
      run_flood (FLOOD_HANGS);
      run_flood (FLOOD_AGGREGATE);
      run_flood (FLOOD_HISTORY);
      run_flood (FLOOD_STRINGS);
    }
  return 0;
}
