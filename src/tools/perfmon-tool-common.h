/* perfmon-tool-common.h: what the perfmon tool's subcommands share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Option parsing with the tool's exit codes, error messages, talking to
 * perfmond (through the proxy generated from data/org.perfmon.Daemon1.xml)
 * and to monitored processes (plain GDBus calls on org.perfmon.Monitor1)
 * over D-Bus, and the snapshot table that top, snapshot and diff print.
 *
 * Threads: the tool is single-threaded; all of this runs on its main thread.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "perfmon.h"
#include "perfmon-dbus-daemon.h"
#include "perfmon-names.h"

G_BEGIN_DECLS

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

/* The snapshot in the "v" of a reply of perfmond or of a monitored
 * process. */
PerfmonSnapshot *perfmon_tool_snapshot_from_variant (GVariant   *boxed,
                                                     const char *sender,
                                                     GError    **error);
/* pid 0: the daemon's aggregate of every process. */
PerfmonSnapshot *perfmon_tool_fetch_snapshot (GDBusConnection *bus,
                                              guint            pid,
                                              GError         **error);
/* perfmond, through the proxy gdbus-codegen generates from
 * data/org.perfmon.Daemon1.xml: a new one for each call (see the .c),
 * whose calls time out after PERFMON_TOOL_CALL_TIMEOUT_MS. After a call
 * on it fails, perfmon_tool_explain_daemon_error() turns the error into
 * one that says when perfmond is not running. */
PerfmonDBusDaemon1 *perfmon_tool_daemon_proxy (GDBusConnection *bus,
                                               GError         **error);
void             perfmon_tool_explain_daemon_error (GError **error);
/* perfmond's ListHangs: its "a(susds)" (id, pid, process name, duration in
 * ms, runnable name), newest first. */
GVariant        *perfmon_tool_list_hangs     (GDBusConnection *bus,
                                              GError         **error);
/* perfmond's GetHang: the report of hang @id as JSON, as the process sent
 * it. */
char            *perfmon_tool_get_hang       (GDBusConnection *bus,
                                              const char      *id,
                                              GError         **error);

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
/* What perfmon_tool_print_table_full() leaves out. */
typedef enum
{
  PERFMON_TOOL_TABLE_ALL = 0,
  /* Rows that show nothing in the interval (0.0 % of CPU and of blocked
   * time, no iteration over 1 ms) of perfmon's own groups ("[perfmon] …")
   * and of compartments (automatic groups: one per kind of callback the
   * loop ran); threads, windows and add-ons are always shown. A last line
   * says how many were left out. */
  PERFMON_TOOL_TABLE_HIDE_IDLE = 1 << 0,
} PerfmonToolTableFlags;

/* perfmon_tool_print_table() with @flags; returns how many rows @flags
 * left out. */
guint            perfmon_tool_print_table_full (PerfmonSnapshot      *snapshot,
                                                PerfmonToolTableMode  mode,
                                                guint                 max_rows,
                                                PerfmonToolTableFlags flags);

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

/* @name (a group's, a task's, a hang's runnable) with each "module+0xOFF"
 * in it that the tool's symbolizer can name written as a stack's frame is,
 * "module+0xOFF (function)": the program records only the module's file
 * name and the offset (never symbolizes), the tool looks the module up in
 * /proc/@pid/maps while @pid (0: none) lives, else by file name in the
 * library directories, and reads its symbol table or debug file (by build
 * id, .gnu_debuglink, $PERFMON_DEBUG_DIRS or /usr/lib/debug). */
char            *perfmon_tool_readable_name   (const char *name,
                                               guint       pid);

/* Where the file that holds a name recorded its module @module was
 * loaded from and its build id (either may be left NULL); FALSE if it
 * recorded nothing of @module (src/support/perfmon-names.h). */
typedef PerfmonNamesModuleLookup PerfmonToolModuleLookup;

/* perfmon_tool_readable_name(), the modules first looked up with
 * @lookup (may be NULL): what a snapshot or a task log recorded of them
 * (perfmon_snapshot_lookup_module(), perfmon_task_log_lookup_module()),
 * which names them after @pid has exited, by path and build id. */
char            *perfmon_tool_readable_name_with (const char             *name,
                                                  guint                   pid,
                                                  PerfmonToolModuleLookup lookup,
                                                  gpointer                data);

/* PerfmonToolModuleLookup of a snapshot (@data): its recorded modules. */
gboolean         perfmon_tool_snapshot_module (gpointer     data,
                                               const char  *module,
                                               const char **path,
                                               const char **build_id);

/* @task's name, readable: perfmon_tool_readable_name_with() with the
 * modules that @log recorded for its process. */
char            *perfmon_tool_readable_task_name (PerfmonTaskLog *log,
                                                  PerfmonTask    *task);

/* @name, a name of process @process in @log (a task's, a Chrome trace
 * slice's), readable as perfmon_tool_readable_task_name() makes it. */
char            *perfmon_tool_readable_log_name (PerfmonTaskLog *log,
                                                 guint           process,
                                                 const char     *name);

/* @log's Chrome trace, its task slices' `module+0x…` names made readable
 * as perfmon_tool_readable_log_name() makes them (the program symbolizes
 * nothing; perfmond's /api/trace does the same, src/support). */
char            *perfmon_tool_readable_chrome_trace (PerfmonTaskLog *log);

/* @snapshot's group names, readable: perfmon_tool_readable_name_with()
 * with its recorded modules. */
char            *perfmon_tool_readable_group_name (PerfmonSnapshot *snapshot,
                                                   const char      *name);
/* The symbolizer perfmon_tool_readable_name() uses (by default a new one,
 * with the default debug directories): perfmon symbolize's, with its
 * options. */
void             perfmon_tool_use_symbolizer  (PerfmonSymbolizer *symbolizer);

G_END_DECLS
