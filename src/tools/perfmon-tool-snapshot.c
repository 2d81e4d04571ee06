/* perfmon-tool-snapshot.c: perfmon snapshot [--pid PID] [--json] [-o FILE]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

/* Straight from a process's org.perfmon.Monitor1, without the daemon. */
static PerfmonSnapshot *
fetch_from_process (GDBusConnection *bus,
                    const char      *bus_name,
                    GError         **error)
{
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GVariant) boxed = NULL;
  g_autoptr(GError) local_error = NULL;

  reply = g_dbus_connection_call_sync (bus, bus_name, PERFMON_MONITOR_OBJECT_PATH, PERFMON_MONITOR_INTERFACE,
                                       "GetSnapshot", NULL, G_VARIANT_TYPE ("(v)"),
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START, PERFMON_TOOL_CALL_TIMEOUT_MS,
                                       NULL, &local_error);
  if (reply == NULL)
    {
      g_dbus_error_strip_remote_error (local_error);
      g_set_error (error, local_error->domain, local_error->code,
                   "%s does not answer as a monitored process: %s", bus_name, local_error->message);
      return NULL;
    }

  boxed = g_variant_get_child_value (reply, 0);
  return perfmon_tool_snapshot_from_variant (boxed, bus_name, error);
}

int
perfmon_tool_snapshot (int    argc,
                       char **argv)
{
  gint64 pid = 0;
  gboolean json = FALSE;
  g_autofree char *output = NULL;
  g_autofree char *bus_name = NULL;
  const GOptionEntry entries[] = {
    { "pid", 'p', 0, G_OPTION_ARG_INT64, &pid, "The process to snapshot (default: all, aggregated by perfmond)", "PID" },
    { "bus-name", 'b', 0, G_OPTION_ARG_STRING, &bus_name,
      "Ask the monitored process with this bus name directly, without perfmond", "NAME" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print JSON, as 'perfmon diff' reads it", NULL },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the JSON snapshot to FILE instead", "FILE" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new (NULL);
  g_autoptr(GDBusConnection) bus = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;

  g_option_context_set_summary (context,
                                "Takes one snapshot of the performance groups of a monitored process\n"
                                "(--pid), or of every process perfmond knows merged by window and\n"
                                "add-on, and prints it as a table or as JSON. Two JSON snapshots of one\n"
                                "process make a 'perfmon diff'.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc != 1)
    return perfmon_tool_usage_error ("unexpected argument '%s'", argv[1]);
  if (pid < 0 || pid > G_MAXUINT32)
    return perfmon_tool_usage_error ("--pid must be a process id in [1, %u], got %" G_GINT64_FORMAT,
                                     G_MAXUINT32, pid);
  if (pid != 0 && bus_name != NULL)
    return perfmon_tool_usage_error ("--pid and --bus-name choose the process twice: give one");
  if (bus_name != NULL && !g_dbus_is_name (bus_name))
    return perfmon_tool_usage_error ("--bus-name: '%s' is not a D-Bus name", bus_name);

  bus = perfmon_tool_session_bus (&error);
  if (bus != NULL)
    snapshot = bus_name != NULL
      ? fetch_from_process (bus, bus_name, &error)
      : perfmon_tool_fetch_snapshot (bus, (guint) pid, &error);
  if (snapshot == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (json || output != NULL)
    {
      g_autofree char *text = perfmon_snapshot_to_json (snapshot);

      if (!perfmon_tool_write_output (output, text, &error))
        {
          perfmon_tool_error ("%s", error->message);
          return PERFMON_TOOL_EXIT_FAILED;
        }
      return PERFMON_TOOL_EXIT_OK;
    }

  g_print ("%s (pid %u): process CPU user %.2f s, system %.2f s\n",
           pid != 0 || bus_name != NULL
             ? perfmon_snapshot_get_process_name (snapshot) : "all processes, merged",
           perfmon_snapshot_get_pid (snapshot),
           (double) perfmon_snapshot_get_user_time (snapshot) / G_USEC_PER_SEC,
           (double) perfmon_snapshot_get_system_time (snapshot) / G_USEC_PER_SEC);
  perfmon_tool_print_taken_at (snapshot);
  g_print ("\n");
  perfmon_tool_print_table (snapshot, PERFMON_TOOL_TABLE_TIMES, 0);
  return PERFMON_TOOL_EXIT_OK;
}
