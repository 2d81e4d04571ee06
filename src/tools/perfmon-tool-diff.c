/* perfmon-tool-diff.c: perfmon diff A.json B.json
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

int
perfmon_tool_diff (int    argc,
                   char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print the difference as a JSON snapshot", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("OLDER.json NEWER.json");
  g_autoptr(PerfmonSnapshot) older = NULL;
  g_autoptr(PerfmonSnapshot) newer = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  g_option_context_set_summary (context,
                                "Subtracts two snapshots of one process, as 'perfmon snapshot --json'\n"
                                "writes them, and prints what each group used in between: CPU and\n"
                                "blocked time, and the iterations that used over 1, 2, 4 … 512 ms of CPU.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!perfmon_tool_parse_options (context, &argc, &argv))
    return PERFMON_TOOL_EXIT_USAGE;
  if (argc != 3)
    return perfmon_tool_usage_error ("expected two snapshot files, got %d", argc - 1);

  older = perfmon_tool_load_snapshot (argv[1], &error);
  if (older == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }
  newer = perfmon_tool_load_snapshot (argv[2], &error);
  if (newer == NULL)
    {
      perfmon_tool_error ("%s", error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  delta = perfmon_snapshot_subtract (newer, older, &error);
  if (delta == NULL)
    {
      perfmon_tool_error ("cannot subtract %s from %s: %s", argv[1], argv[2], error->message);
      return PERFMON_TOOL_EXIT_FAILED;
    }

  if (json)
    {
      g_autofree char *text = perfmon_snapshot_to_json (delta);

      g_print ("%s\n", text);
      return PERFMON_TOOL_EXIT_OK;
    }

  g_print ("%s (pid %u): %.3f s between the snapshots\nprocess CPU: user %.2f s, system %.2f s\n",
           perfmon_snapshot_get_pid (delta) != 0
             ? perfmon_snapshot_get_process_name (delta) : "all processes",
           perfmon_snapshot_get_pid (delta),
           (double) perfmon_snapshot_get_interval (delta) / G_USEC_PER_SEC,
           (double) perfmon_snapshot_get_user_time (delta) / G_USEC_PER_SEC,
           (double) perfmon_snapshot_get_system_time (delta) / G_USEC_PER_SEC);
  /* The newer snapshot's. */
  perfmon_tool_print_taken_at (delta);
  g_print ("\n");
  perfmon_tool_print_table (delta, PERFMON_TOOL_TABLE_TIMES, 0);
  return PERFMON_TOOL_EXIT_OK;
}
