/* perfmon-tool-common.h: what the perfmon tool's subcommands share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Option parsing with the tool's exit codes, error messages, talking to
 * perfmond and to monitored processes over D-Bus (plain GDBus calls on the
 * interfaces of data/org.perfmon.*.xml: the tool needs no generated code),
 * and the snapshot table that top, snapshot and diff print.
 *
 * Threads: the tool is single-threaded; all of this runs on its main thread.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "perfmon.h"

G_BEGIN_DECLS

#define PERFMON_TOOL_DAEMON_NAME   "org.perfmon.Daemon1"
#define PERFMON_TOOL_DAEMON_PATH       "/org/perfmon/Daemon1"
#define PERFMON_TOOL_DAEMON_INTERFACE  "org.perfmon.Daemon1"
#define PERFMON_TOOL_MONITOR_PATH      "/org/perfmon/Monitor1"
#define PERFMON_TOOL_MONITOR_INTERFACE "org.perfmon.Monitor1"

/* How long the tool waits for one D-Bus reply: a hung daemon must not hang
 * the tool for D-Bus's default 25 s. */
#define PERFMON_TOOL_CALL_TIMEOUT_MS 5000

void             perfmon_tool_error          (const char *format,
                                              ...) G_GNUC_PRINTF (1, 2);

/* Parses @argv (argv[0] is the subcommand) with @context. On a wrong
 * command line prints the error and a hint to stderr and returns FALSE: the
 * subcommand then returns PERFMON_TOOL_EXIT_USAGE. --help prints the help
 * and exits 0 (GOption's own behaviour). */
gboolean         perfmon_tool_parse_options  (GOptionContext *context,
                                              int            *argc,
                                              char         ***argv);
/* For positional-argument errors found after parsing: prints
 * "perfmon: CMD: MESSAGE" and the --help hint, returns the usage code. */
int              perfmon_tool_usage_error    (const char *format,
                                              ...) G_GNUC_PRINTF (1, 2);

/* Parses a strictly positive number of seconds ("1", "0.5"). */
gboolean         perfmon_tool_parse_seconds  (const char *option,
                                              const char *text,
                                              double      min,
                                              double      max,
                                              double     *out);

/* Whether this perfmon is the build tree's: then it runs the build tree's
 * perfmond, demo program and preload module. */
gboolean         perfmon_tool_running_uninstalled (void);

GDBusConnection *perfmon_tool_session_bus    (GError **error);

/* The snapshot of a "(v)" reply of perfmond or of a monitored process. */
PerfmonSnapshot *perfmon_tool_snapshot_from_reply (GVariant   *reply,
                                                   const char *sender,
                                                   GError    **error);
/* pid 0: the daemon's aggregate of every process. */
PerfmonSnapshot *perfmon_tool_fetch_snapshot (GDBusConnection *bus,
                                              guint            pid,
                                              GError         **error);
/* A call on the daemon, with an error that says when it is not running. */
GVariant        *perfmon_tool_call_daemon    (GDBusConnection    *bus,
                                              const char         *method,
                                              GVariant           *parameters,
                                              const GVariantType *reply_type,
                                              GError            **error);

PerfmonSnapshot *perfmon_tool_load_snapshot  (const char *path,
                                              GError    **error);
/* Writes @text to @path atomically, or to stdout when @path is NULL. */
gboolean         perfmon_tool_write_output   (const char *path,
                                              const char *text,
                                              GError    **error);

const char      *perfmon_tool_kind_label     (PerfmonGroupKind kind);

typedef enum
{
  PERFMON_TOOL_TABLE_TIMES,     /* CPU and blocked time in seconds */
  PERFMON_TOOL_TABLE_PERCENT,   /* ... as % of the snapshot's interval */
} PerfmonToolTableMode;

/* The groups sorted by CPU time, most first (a new array holding refs). */
GPtrArray       *perfmon_tool_sorted_groups  (PerfmonSnapshot *snapshot);
/* The table of top, snapshot and diff, as wide as the terminal allows
 * (names are cut to fit), uncut in a file or a pipe unless $COLUMNS is set. */
void             perfmon_tool_print_table    (PerfmonSnapshot     *snapshot,
                                              PerfmonToolTableMode mode,
                                              guint                max_rows);
/* The same as a JSON object: the snapshot's fields plus, per group, the
 * percentages of the interval when @with_percent. */
JsonNode        *perfmon_tool_table_to_json  (PerfmonSnapshot *snapshot,
                                              gboolean         with_percent);

/* "taken at YYYY-MM-DD HH:MM:SS" (local time) and a newline, when the
 * snapshot knows its wall-clock time. */
void             perfmon_tool_print_taken_at (PerfmonSnapshot *snapshot);

/* Deletes @path and everything under it, never following symbolic links. */
void             perfmon_tool_remove_tree    (const char *path);

/* The array @member of @object, or NULL if it is none
 * (perfmon-tool-hangs.c). */
JsonArray       *perfmon_tool_json_get_array (JsonObject *object,
                                              const char *member);

/* The one name shown for a hang without a runnable name
 * (perfmon-tool-hangs.c). */
const char      *perfmon_tool_runnable_name   (const char *runnable);

G_END_DECLS
