/* perfmon.c: the perfmon command-line tool's entry point
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Dispatches "perfmon CMD ARGS…" to perfmon_tool_CMD() with argv[0] = CMD,
 * and answers --help, --version and "help CMD" itself.
 */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "perfmon-tool.h"
#include "perfmon-tool-common.h"

typedef struct
{
  const char *name;
  int       (*run) (int argc, char **argv);
  const char *summary;
} Command;

static const Command commands[] = {
  { "top",      perfmon_tool_top,      "Live table of CPU and blocked time per group" },
  { "snapshot", perfmon_tool_snapshot, "Print one snapshot, as a table or as JSON" },
  { "diff",     perfmon_tool_diff,     "What changed between two snapshot files" },
  { "hangs",    perfmon_tool_hangs,    "List the hangs of the session, show one with its stacks" },
  { "tasks",    perfmon_tool_tasks,    "Analyse a task log: causality, queueing, blockers" },
  { "symbolize", perfmon_tool_symbolize, "Name the frames of reports, pings, stack trees, task logs, snapshots" },
  { "run",      perfmon_tool_run,      "Run an unmodified GLib program under perfmon" },
  { "state",    perfmon_tool_state,    "List or delete what perfmon left on disk (pings, logs)" },
  { "view",     perfmon_tool_view,     "Open the live about:performance page in the browser" },
  { "demo",     perfmon_tool_demo,     "Show perfmon at work on a janky demo program" },
};

static void
print_usage (FILE *out)
{
  fprintf (out,
           "Usage: perfmon COMMAND [OPTION…] [ARG…]\n"
           "\n"
           "Monitor GLib main-loop programs: CPU and jank per group, hangs, tasks.\n"
           "\n"
           "Commands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out,
           "\n"
           "Options:\n"
           "  -h, --help      Show this help\n"
           "  --version       Show the version\n"
           "\n"
           "'perfmon help COMMAND' or 'perfmon COMMAND --help' describes a command.\n"
           "Exit status: 0 success, 1 failure, 2 wrong command line.\n");
}

static const Command *
find_command (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (g_strcmp0 (commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static int
run_command (const Command *command,
             int            argc,
             char         **argv)
{
  g_autofree char *prgname = g_strconcat ("perfmon ", command->name, NULL);

  /* GOption's usage line and our messages name the subcommand. */
  g_set_prgname (prgname);
  return command->run (argc, argv);
}

static int
unknown_command (const char *name)
{
  perfmon_tool_error ("'%s' is not a perfmon command", name);
  g_printerr ("Try 'perfmon --help' for the list of commands.\n");
  return PERFMON_TOOL_EXIT_USAGE;
}

int
main (int   argc,
      char *argv[])
{
  const Command *command;

  setlocale (LC_ALL, "");
  g_set_prgname ("perfmon");

  if (argc < 2)
    {
      print_usage (stderr);
      return PERFMON_TOOL_EXIT_USAGE;
    }

  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 ||
      (strcmp (argv[1], "help") == 0 && argc == 2))
    {
      print_usage (stdout);
      return PERFMON_TOOL_EXIT_OK;
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      g_print ("perfmon %s\n", PACKAGE_VERSION);
      return PERFMON_TOOL_EXIT_OK;
    }
  if (strcmp (argv[1], "help") == 0)
    {
      char *help_argv[] = { argv[2], (char *) "--help", NULL };

      if (argc > 3)
        {
          perfmon_tool_error ("help takes one command name, got %d", argc - 2);
          return PERFMON_TOOL_EXIT_USAGE;
        }
      command = find_command (argv[2]);
      if (command == NULL)
        return unknown_command (argv[2]);
      return run_command (command, 2, help_argv);
    }
  if (argv[1][0] == '-')
    {
      perfmon_tool_error ("unknown option '%s' (options go after the command)", argv[1]);
      g_printerr ("Try 'perfmon --help' for more information.\n");
      return PERFMON_TOOL_EXIT_USAGE;
    }

  command = find_command (argv[1]);
  if (command == NULL)
    return unknown_command (argv[1]);
  return run_command (command, argc - 1, argv + 1);
}
