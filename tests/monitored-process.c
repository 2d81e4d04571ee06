/* monitored-process.c: a process for perfmond's tests and benchmark
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A GLib program with window and add-on groups, CPU burned in one of them
 * and, on request, a hang. In --mode=normal it exports its monitor with
 * perfmon_monitor_export_full(), which registers it with perfmond (and
 * again whenever perfmond comes back). The other modes serve a small
 * org.perfmon.Monitor1 object of the test's own, which misbehaves the ways
 * perfmond must survive:
 *   stall      blocks its main loop for an hour inside GetSnapshot
 *   exit       dies (SIGKILL) inside GetSnapshot
 *   flood      answers with more groups than perfmond allows, and sends
 *              Alert signals as fast as it can
 *   garbage    answers GetSnapshot with a variant that is not a snapshot
 *   big        answers GetSnapshot with --big-groups window groups (ids from
 *              --window-base) of --name-bytes-long names: a snapshot that is
 *              valid but huge
 *   hang-flood answers GetSnapshot with its real snapshot and sends
 *              --flood-count Hang signals of --hang-bytes each, as fast as
 *              the bus takes them
 *   hang-reports answers GetSnapshot with its real snapshot and
 *              GetHangReports with the "report" of each case of --reports
 *              (tests/hang-reports/cases.json), valid or not
 *   real       answers GetSnapshot with its real snapshot, as a process
 *              of a libperfmon before GetSnapshotBytes does
 *   not-a-snapshot answers with a variant that is not a snapshot, as
 *              garbage does without --bytes
 * With --bytes, these modes answer GetSnapshotBytes instead (garbage: with
 * bytes that are no variant at all), and GetSnapshot with an error.
 *
 * It prints "READY <pid>" on stdout once its monitor is on the bus (in
 * normal mode, registration may still be on its way), and runs until
 * killed or for --seconds.
 */
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <json-glib/json-glib.h>
#include <perfmon.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* GetSnapshotBytes goes between the two halves with --bytes. */
static const char monitor_xml_head[] =
  "<node>"
  "  <interface name='org.perfmon.Monitor1'>"
  "    <method name='GetSnapshot'><arg name='snapshot' type='v' direction='out'/></method>";
static const char monitor_xml[] =
  "    <method name='GetHangReports'>"
  "      <arg name='max_reports' type='u' direction='in'/>"
  "      <arg name='reports' type='as' direction='out'/>"
  "    </method>"
  "    <signal name='Hang'><arg name='report' type='s'/></signal>"
  "    <signal name='Alert'>"
  "      <arg name='group_id' type='t'/><arg name='group_name' type='s'/>"
  "      <arg name='duration_us' type='t'/>"
  "    </signal>"
  "    <property name='Pid' type='u' access='read'/>"
  "    <property name='ProcessName' type='s' access='read'/>"
  "    <property name='ProcessType' type='s' access='read'/>"
  "  </interface>"
  "</node>";

/* With --bytes. */
static const char bytes_method_xml[] =
  "<method name='GetSnapshotBytes'><arg name='snapshot' type='ay' direction='out'/></method>";
/* In the publish-* modes. */
static const char publish_method_xml[] =
  "<method name='Publish'><arg name='region' type='h' direction='in'/>"
  "<arg name='interval_ms' type='u' direction='in'/></method>";


static char *mode = NULL;
static gboolean bytes_only = FALSE;
static int n_windows = 2;
static guint64 window_base = 1;
static char **addons = NULL;
static int n_compartments = 0;
static int burn_ms = 2;
static int tick_ms = 10;
static int hang_threshold_ms = 0;
static int hangs_per_ping = 0;
static int stall_after_ms = 0;
static int stall_ms = 0;
static int early_stall_ms = 0;
static int n_stalls = 1;
static char *pings_dir = NULL;
static char **announce = NULL;
static int seconds = 0;
static gboolean no_register = FALSE;
static int register_delay_ms = 0;
static int big_groups = 9999;
static int name_bytes = 1024;
static int hang_bytes = 250 * 1024;
static int flood_count = 2000;
static GVariant *flood_variant;
static char *reports_path;
static GVariant *big_variant;      /* the big mode's snapshot, built once */

static GDBusConnection *connection;
static GPtrArray *compartments;   /* PerfmonGroup * */
static GPtrArray *hang_reports;   /* char * JSON, newest last */

static volatile guint64 burn_sink;

static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void
burn_cpu_ms (int ms)
{
  gint64 end = thread_cpu_us () + (gint64) ms * 1000;

  while (thread_cpu_us () < end)
    for (guint i = 0; i < 1000; i++)
      burn_sink += i;
}

static gboolean
work (gpointer data)
{
  /* All the CPU goes to the first compartment (first window, first
   * add-on); the others run empty. */
  for (guint i = 0; i < compartments->len; i++)
    {
      PERFMON_AUTO_ENTER (g_ptr_array_index (compartments, i));
      if (i == 0)
        burn_cpu_ms (burn_ms);
    }
  return G_SOURCE_CONTINUE;
}

static gboolean
stall_once (gpointer data)
{
  g_usleep ((gulong) GPOINTER_TO_INT (data) * 1000);
  return G_SOURCE_REMOVE;
}

/* --stalls: one stall, then the next a stall's length later. */
static gboolean
stall_again (gpointer data)
{
  static int done = 0;

  g_usleep ((gulong) GPOINTER_TO_INT (data) * 1000);
  if (++done >= n_stalls)
    return G_SOURCE_REMOVE;
  g_timeout_add ((guint) GPOINTER_TO_INT (data), stall_again, data);
  return G_SOURCE_REMOVE;
}

/* --announce: Ping signals for paths that are no pings, as a hostile
 * process may send. */
static gboolean
announce_paths (gpointer data)
{
  for (guint i = 0; announce != NULL && announce[i] != NULL; i++)
    g_dbus_connection_emit_signal (connection, NULL, PERFMON_MONITOR_OBJECT_PATH, PERFMON_MONITOR_INTERFACE,
                                   "Ping", g_variant_new ("(s)", announce[i]), NULL);
  return G_SOURCE_CONTINUE;
}

static gboolean
flood_alerts (gpointer data)
{
  for (int i = 0; i < 100; i++)
    g_dbus_connection_emit_signal (connection, NULL, PERFMON_MONITOR_OBJECT_PATH,
                                   PERFMON_MONITOR_INTERFACE, "Alert",
                                   g_variant_new ("(tst)", (guint64) 1, "flood", (guint64) 1000),
                                   NULL);
  return G_SOURCE_CONTINUE;
}

/* A snapshot of 5,000 groups, more than the tests let perfmond take
 * (--max-groups=1000), built once: under ThreadSanitizer, building it at
 * each call, between 10,000 alerts a second, kept the flooder from ever
 * answering within perfmond's --call-timeout, and what is tested is the
 * refusal of the answer. Returns: (transfer full) */
static GVariant *
flood_snapshot (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  GString *json = g_string_new (NULL);

  g_string_append_printf (json, "{\"version\":1,\"timestamp\":%" G_GINT64_FORMAT ",\"interval\":0,"
                          "\"pid\":%d,\"process_name\":\"flood\",\"user_time\":0,\"system_time\":0,"
                          "\"groups\":[", g_get_monotonic_time (), (int) getpid ());
  for (int i = 1; i <= 5000; i++)
    g_string_append_printf (json, "%s{\"id\":%d,\"kind\":\"compartment\",\"name\":\"c\",\"window_id\":0,"
                            "\"addon_id\":null,\"cpu_time\":0,\"blocked_time\":0,\"ticks\":0,"
                            "\"durations\":[0,0,0,0,0,0,0,0,0,0]}", i > 1 ? "," : "", i);
  g_string_append (json, "]}");
  snapshot = perfmon_snapshot_new_from_json (json->str, &error);
  g_assert_no_error (error);
  g_string_free (json, TRUE);
  return perfmon_snapshot_to_variant (snapshot);
}

/* --big-groups window groups of --name-bytes names, each with a little
 * CPU time. Returns: (transfer full) */
static GVariant *
make_big_snapshot (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *name = g_strnfill ((gsize) MAX (name_bytes, 1), 'n');
  GString *json = g_string_new (NULL);

  g_string_append_printf (json, "{\"version\":1,\"timestamp\":%" G_GINT64_FORMAT ",\"interval\":0,"
                          "\"pid\":%d,\"process_name\":\"big\",\"user_time\":0,\"system_time\":0,"
                          "\"groups\":[", g_get_monotonic_time (), (int) getpid ());
  for (int i = 0; i < big_groups; i++)
    g_string_append_printf (json, "%s{\"id\":%d,\"kind\":\"window\",\"name\":\"%s\",\"window_id\":%"
                            G_GUINT64_FORMAT ",\"addon_id\":null,\"cpu_time\":%d,\"blocked_time\":0,"
                            "\"ticks\":1,\"durations\":[1,0,0,0,0,0,0,0,0,0]}",
                            i > 0 ? "," : "", i + 1, name, window_base + (guint64) i, 1000 + i);
  g_string_append (json, "]}");
  snapshot = perfmon_snapshot_new_from_json (json->str, &error);
  g_assert_no_error (error);
  g_string_free (json, TRUE);
  return perfmon_snapshot_to_variant (snapshot);
}

/* Hang signals as fast as the bus takes them, --flood-count in all. */
static gboolean
flood_hangs (gpointer data)
{
  static int sent;
  static char *pad;

  /* Each one different (at its end), as distinct hangs would be. */
  if (pad == NULL)
    pad = g_strnfill ((gsize) MAX (hang_bytes - 160, 1), 'x');
  for (int i = 0; i < 10 && sent < flood_count; i++, sent++)
    {
      /* Valid reports (perfmond keeps them), padded in a member readers
       * ignore. */
      g_autofree char *json = g_strdup_printf ("{\"duration\":200,\"thread\":\"main\",\"runnableName\":\"flood\","
                                               "\"process\":\"default\",\"remoteType\":null,\"annotations\":[],"
                                               "\"pad\":\"%s\",\"n\":%d}", pad, sent);

      g_dbus_connection_emit_signal (connection, NULL, PERFMON_MONITOR_OBJECT_PATH,
                                     PERFMON_MONITOR_INTERFACE, "Hang",
                                     g_variant_new ("(s)", json), NULL);
    }
  /* Paced by the socket, so that the flood piles up in the daemon, not
   * here. */
  g_dbus_connection_flush_sync (connection, NULL, NULL);
  if (sent < flood_count)
    return G_SOURCE_CONTINUE;
  /* Done: the test waits for our exit. */
  exit (0);
}

/* The publish-* modes: what a hostile or broken process writes in the
 * region perfmond hands it (src/support/perfmon-publish.h), once. Their
 * GetSnapshotBytes answers their real snapshot, so that perfmond's first
 * poll succeeds and it calls Publish. */
static void
publish_hostile (GDBusMethodInvocation *invocation)
{
  GUnixFDList *fds = g_dbus_message_get_unix_fd_list (g_dbus_method_invocation_get_message (invocation));
  int fd = fds != NULL ? g_unix_fd_list_get (fds, 0, NULL) : -1;
  struct stat st;
  guint32 *words;

  if (fd < 0 || fstat (fd, &st) != 0 ||
      (words = mmap (NULL, (gsize) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
    g_error ("monitored-process: cannot map the region");
  close (fd);
  /* magic, capacity, sequence, length, generation (u64), data */
  if (g_str_equal (mode, "publish-garbage"))
    {
      memcpy (words + 6, "\xff\x00not a v\x00\x07", 11);
      words[3] = 11;
      words[4] = 1;
      __atomic_store_n (&words[2], 2, __ATOMIC_RELEASE);
    }
  else if (g_str_equal (mode, "publish-overlength"))
    {
      words[3] = words[1] + 1;
      words[4] = 1;
      __atomic_store_n (&words[2], 2, __ATOMIC_RELEASE);
    }
  else  /* publish-torn: a write that never ends */
    {
      words[4] = 1;
      __atomic_store_n (&words[2], 1, __ATOMIC_RELEASE);
    }
  g_dbus_method_invocation_return_value (invocation, NULL);
}

static void
on_method_call (GDBusConnection       *conn,
                const char            *sender,
                const char            *object_path,
                const char            *interface_name,
                const char            *method_name,
                GVariant              *parameters,
                GDBusMethodInvocation *invocation,
                gpointer               user_data)
{
  if (g_str_equal (method_name, "GetSnapshot") && bytes_only)
    g_dbus_method_invocation_return_dbus_error (invocation, "org.freedesktop.DBus.Error.Failed",
                                                "this process answers GetSnapshotBytes only");
  else if (g_str_equal (method_name, "GetSnapshot") || g_str_equal (method_name, "GetSnapshotBytes"))
    {
      g_autoptr(GVariant) flood = NULL;
      GVariant *snapshot = NULL;

      if (g_str_equal (mode, "stall"))
        g_usleep (3600ul * G_USEC_PER_SEC);
      else if (g_str_equal (mode, "exit"))
        kill (getpid (), SIGKILL);
      else if (g_str_equal (mode, "flood"))
        {
          if (flood_variant == NULL)
            flood_variant = g_variant_ref_sink (flood_snapshot ());
          snapshot = flood_variant;
        }
      else if (g_str_equal (mode, "big"))
        {
          if (big_variant == NULL)
            big_variant = g_variant_ref_sink (make_big_snapshot ());
          snapshot = big_variant;
        }
      else if (g_str_equal (mode, "hang-flood") || g_str_equal (mode, "hang-reports") ||
               g_str_equal (mode, "real") || g_str_has_prefix (mode, "publish-"))
        {
          g_autoptr(PerfmonSnapshot) own = perfmon_monitor_snapshot (perfmon_monitor_get_default ());

          snapshot = flood = g_variant_ref_sink (perfmon_snapshot_to_variant (own));
        }
      else if (g_str_equal (mode, "garbage") && g_str_equal (method_name, "GetSnapshotBytes"))
        {
          /* Not even a variant: a length that no "v" has. */
          static const guint8 garbage[] = { 0xff, 0x00, 'n', 'o', 't', ' ', 'a', ' ', 'v', 0x00, 0x07 };

          g_dbus_method_invocation_return_value (invocation,
                                                 g_variant_new ("(@ay)",
                                                                g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE, garbage,
                                                                                           sizeof garbage, 1)));
          return;
        }
      else
        snapshot = g_variant_new ("(sx)", "not a snapshot", (gint64) 42);

      if (g_str_equal (method_name, "GetSnapshotBytes"))
        {
          /* As perfmon-export.c writes it: a little-endian "v". */
          g_autoptr(GVariant) wrapped = g_variant_ref_sink (g_variant_new_variant (snapshot));
          g_autoptr(GBytes) bytes = NULL;

          if (G_BYTE_ORDER == G_BIG_ENDIAN)
            {
              GVariant *swapped = g_variant_byteswap (wrapped);

              g_variant_unref (wrapped);
              wrapped = swapped;
            }
          bytes = g_variant_get_data_as_bytes (wrapped);
          g_dbus_method_invocation_return_value (invocation,
                                                 g_variant_new ("(@ay)",
                                                                g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING,
                                                                                          bytes, TRUE)));
        }
      else
        g_dbus_method_invocation_return_value (invocation, g_variant_new ("(v)", snapshot));
    }
  else if (g_str_equal (method_name, "Publish"))
    publish_hostile (invocation);
  else if (g_str_equal (method_name, "GetHangReports"))
    {
      GVariantBuilder builder;
      guint max;

      g_variant_get (parameters, "(u)", &max);
      g_variant_builder_init (&builder, G_VARIANT_TYPE ("as"));
      for (guint i = hang_reports->len; i > 0 && (max == 0 || hang_reports->len - i < max); i--)
        g_variant_builder_add (&builder, "s", g_ptr_array_index (hang_reports, i - 1));
      g_dbus_method_invocation_return_value (invocation, g_variant_new ("(as)", &builder));
    }
}

static GVariant *
on_get_property (GDBusConnection  *conn,
                 const char       *sender,
                 const char       *object_path,
                 const char       *interface_name,
                 const char       *property_name,
                 GError          **error,
                 gpointer          user_data)
{
  if (g_str_equal (property_name, "Pid"))
    return g_variant_new_uint32 ((guint32) getpid ());
  if (g_str_equal (property_name, "ProcessName"))
    return g_variant_new_string (g_get_prgname ());
  return g_variant_new_string ("test");
}

static void
on_hang (PerfmonHangMonitor *hang_monitor,
         PerfmonHangReport  *report,
         gpointer            data)
{
  char *json = perfmon_hang_report_to_json (report);

  g_ptr_array_add (hang_reports, json);
  g_dbus_connection_emit_signal (connection, NULL, PERFMON_MONITOR_OBJECT_PATH,
                                 PERFMON_MONITOR_INTERFACE, "Hang",
                                 g_variant_new ("(s)", json), NULL);
}

/* Register() waits as long as test-daemon's deadlines (DEADLINE_S): under
 * ThreadSanitizer a perfmond busy with /daemon/aggregate-bounded's big
 * snapshots took more than the former 10 s to answer. */
static gboolean
register_now (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = g_dbus_connection_call_sync (connection, PERFMON_DAEMON_BUS_NAME,
                                                           PERFMON_DAEMON_OBJECT_PATH,
                                                           PERFMON_DAEMON_INTERFACE, "Register",
                                                           NULL, NULL, G_DBUS_CALL_FLAGS_NONE,
                                                           30000, NULL, &error);

  if (reply == NULL)
    {
      g_printerr ("monitored-process: Register: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

static gboolean
register_later (gpointer data)
{
  if (!register_now ())
    exit (1);
  return G_SOURCE_REMOVE;
}

static gboolean
quit (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new (NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusNodeInfo) info = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_autoptr(PerfmonHangMonitor) hang_monitor = NULL;
  PerfmonMonitor *monitor;
  const GDBusInterfaceVTable vtable = { on_method_call, on_get_property, NULL, { 0 } };
  const GOptionEntry entries[] = {
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "normal, stall, exit, flood, garbage, or publish-garbage, publish-overlength, publish-torn", "MODE" },
    { "windows", 0, 0, G_OPTION_ARG_INT, &n_windows, "Window groups", "N" },
    { "window-base", 0, 0, G_OPTION_ARG_INT64, &window_base, "The first window id", "ID" },
    { "addon", 0, 0, G_OPTION_ARG_STRING_ARRAY, &addons, "An add-on id (repeatable)", "ID" },
    { "compartments", 0, 0, G_OPTION_ARG_INT, &n_compartments, "Extra compartments", "N" },
    { "burn", 0, 0, G_OPTION_ARG_INT, &burn_ms, "CPU ms burned every tick in the first window", "MS" },
    { "tick", 0, 0, G_OPTION_ARG_INT, &tick_ms, "Run the compartments every MS (default 10)", "MS" },
    { "hang-threshold", 0, 0, G_OPTION_ARG_INT, &hang_threshold_ms, "Start a hang monitor", "MS" },
    { "hangs-per-ping", 0, 0, G_OPTION_ARG_INT, &hangs_per_ping, "Its hangs-per-ping (0: default)", "N" },
    { "stall-after", 0, 0, G_OPTION_ARG_INT, &stall_after_ms, "When to stall the main loop", "MS" },
    { "stall", 0, 0, G_OPTION_ARG_INT, &stall_ms, "How long to stall it", "MS" },
    { "stalls", 0, 0, G_OPTION_ARG_INT, &n_stalls, "Stall this many times (1), a stall apart", "N" },
    { "pings-dir", 0, 0, G_OPTION_ARG_FILENAME, &pings_dir, "The hang monitor's pings-dir", "DIR" },
    { "announce", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &announce, "Send a Ping signal for PATH every 50 ms", "PATH" },
    { "early-stall", 0, 0, G_OPTION_ARG_INT, &early_stall_ms, "Stall this long first, as a slow start-up would", "MS" },
    { "seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "Exit after this long (0: never)", "S" },
    { "no-register", 0, 0, G_OPTION_ARG_NONE, &no_register, "Do not call Register()", NULL },
    { "register-delay", 0, 0, G_OPTION_ARG_INT, &register_delay_ms, "Call Register() after MS", "MS" },
    { "big-groups", 0, 0, G_OPTION_ARG_INT, &big_groups, "Groups of the big mode (9999)", "N" },
    { "name-bytes", 0, 0, G_OPTION_ARG_INT, &name_bytes, "Name length of the big mode (1024)", "N" },
    { "hang-bytes", 0, 0, G_OPTION_ARG_INT, &hang_bytes, "Size of a flood Hang signal (250 KiB)", "N" },
    { "flood-count", 0, 0, G_OPTION_ARG_INT, &flood_count, "Hang signals of the flood (2000)", "N" },
    { "reports", 0, 0, G_OPTION_ARG_FILENAME, &reports_path, "The cases of the hang-reports mode", "FILE" },
    { "bytes", 0, 0, G_OPTION_ARG_NONE, &bytes_only, "Answer GetSnapshotBytes, not GetSnapshot", NULL },
    { NULL }
  };

  /* Never outlive the test that started us, even when it aborts. */
  prctl (PR_SET_PDEATHSIG, SIGKILL);

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("monitored-process: %s\n", error->message);
      return 2;
    }
  if (mode == NULL)
    mode = g_strdup ("normal");
  g_set_prgname ("monitored-process");
  /* Built before registering: building it takes a while, and a poll must not
   * time out on it. */
  if (g_str_equal (mode, "big"))
    big_variant = g_variant_ref_sink (make_big_snapshot ());


  monitor = perfmon_monitor_get_default ();
  compartments = g_ptr_array_new_with_free_func (g_object_unref);
  hang_reports = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < n_windows; i++)
    {
      g_autofree char *name = g_strdup_printf ("window %d", i + 1);
      const char *addon = addons != NULL && i < (int) g_strv_length (addons) ? addons[i] : NULL;

      perfmon_monitor_get_window_group (monitor, window_base + (guint64) i, name);
      if (addon != NULL)
        perfmon_monitor_get_addon_group (monitor, addon, addon);
      g_ptr_array_add (compartments,
                       perfmon_monitor_create_compartment (monitor, name, window_base + (guint64) i, addon));
    }
  for (int i = 0; i < n_compartments; i++)
    {
      g_autofree char *name = g_strdup_printf ("compartment %d", i + 1);
      PerfmonGroup *group = perfmon_monitor_create_compartment (monitor, name, 0, NULL);

      perfmon_group_set_active (group, TRUE);
      g_ptr_array_add (compartments, group);
    }

  if (hang_threshold_ms > 0)
    {
      hang_monitor = perfmon_hang_monitor_new (monitor);
      perfmon_hang_monitor_set_threshold (hang_monitor, (guint) hang_threshold_ms);
      if (hangs_per_ping > 0)
        g_object_set (hang_monitor, "hangs-per-ping", (guint) hangs_per_ping, NULL);
      if (pings_dir != NULL)
        g_object_set (hang_monitor, "pings-dir", pings_dir, NULL);
      if (!perfmon_hang_monitor_start (hang_monitor, &error))
        {
          g_printerr ("monitored-process: %s\n", error->message);
          return 1;
        }
    }

  if (g_str_equal (mode, "hang-reports"))
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      JsonArray *cases;

      if (reports_path == NULL || !json_parser_load_from_file (parser, reports_path, &error))
        {
          g_printerr ("monitored-process: --reports: %s\n", error != NULL ? error->message : "missing");
          return 2;
        }
      cases = json_node_get_array (json_parser_get_root (parser));
      for (guint i = 0; i < json_array_get_length (cases); i++)
        g_ptr_array_add (hang_reports, g_strdup (json_object_get_string_member (
                                         json_array_get_object_element (cases, i), "report")));
    }

  connection = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
  if (connection == NULL)
    {
      g_printerr ("monitored-process: %s\n", error->message);
      return 1;
    }
  if (g_str_equal (mode, "normal"))
    {
      /* Registering later is the test's business, not the library's. */
      PerfmonExportFlags flags = no_register || register_delay_ms > 0
                                 ? PERFMON_EXPORT_FLAGS_NO_REGISTER : PERFMON_EXPORT_FLAGS_NONE;

      if (!perfmon_monitor_export_full (monitor, hang_monitor, connection, flags, &error))
        {
          g_printerr ("monitored-process: %s\n", error->message);
          return 1;
        }
    }
  else
    {
      gboolean publish = g_str_has_prefix (mode, "publish-");
      g_autofree char *xml = g_strconcat (monitor_xml_head, bytes_only || publish ? bytes_method_xml : "",
                                          publish ? publish_method_xml : "", monitor_xml, NULL);

      info = g_dbus_node_info_new_for_xml (xml, &error);
      g_assert_no_error (error);
      if (g_dbus_connection_register_object (connection, PERFMON_MONITOR_OBJECT_PATH, info->interfaces[0],
                                             &vtable, NULL, NULL, &error) == 0)
        {
          g_printerr ("monitored-process: %s\n", error->message);
          return 1;
        }
      if (hang_monitor != NULL)
        g_signal_connect (hang_monitor, "hang", G_CALLBACK (on_hang), NULL);
      if (!no_register && register_delay_ms == 0 && !register_now ())
        return 1;
    }

  loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add ((guint) MAX (tick_ms, 1), work, NULL);
  if (stall_ms > 0 && n_stalls > 1)
    g_timeout_add ((guint) stall_after_ms, stall_again, GINT_TO_POINTER (stall_ms));
  else if (stall_ms > 0)
    g_timeout_add ((guint) stall_after_ms, stall_once, GINT_TO_POINTER (stall_ms));
  if (announce != NULL)
    g_timeout_add (50, announce_paths, NULL);
  /* What a slow machine does to a start-up: an extra hang first. */
  if (early_stall_ms > 0)
    g_idle_add_full (G_PRIORITY_HIGH, stall_once, GINT_TO_POINTER (early_stall_ms), NULL);
  if (g_str_equal (mode, "flood"))
    g_timeout_add (10, flood_alerts, NULL);
  if (g_str_equal (mode, "hang-flood"))
    g_idle_add (flood_hangs, NULL);
  if (!no_register && register_delay_ms > 0)
    g_timeout_add ((guint) register_delay_ms, register_later, NULL);
  if (seconds > 0)
    g_timeout_add_seconds ((guint) seconds, quit, loop);

  printf ("READY %d\n", (int) getpid ());
  fflush (stdout);

  g_main_loop_run (loop);

  if (hang_monitor != NULL)
    perfmon_hang_monitor_stop (hang_monitor);
  return 0;
}
