/* perfmon-tool.h: the subcommands of the perfmon command-line tool
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * perfmon.c parses the subcommand name and calls one of these with the
 * remaining arguments (argv[0] is the subcommand's name). Each returns the
 * process's exit status:
 *   0  success
 *   1  the operation failed (no daemon, unknown pid, unreadable file, ...)
 *   2  the command line was wrong (unknown option, missing argument)
 * and prints errors a person can read to stderr, prefixed "perfmon: ".
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define PERFMON_TOOL_EXIT_OK     0
#define PERFMON_TOOL_EXIT_FAILED 1
#define PERFMON_TOOL_EXIT_USAGE  2

int perfmon_tool_top      (int argc, char **argv);
int perfmon_tool_snapshot (int argc, char **argv);
int perfmon_tool_diff     (int argc, char **argv);
int perfmon_tool_hangs    (int argc, char **argv);
int perfmon_tool_tasks    (int argc, char **argv);  /* perfmon-tool-tasks.c */
int perfmon_tool_symbolize (int argc, char **argv);
int perfmon_tool_run      (int argc, char **argv);
int perfmon_tool_demo     (int argc, char **argv);
int perfmon_tool_state    (int argc, char **argv);
int perfmon_tool_view     (int argc, char **argv);  /* perfmon-tool-view.c */

G_END_DECLS
