/* perfmon-names.h: names a person can read, for the perfmon tool and
 * perfmond alike
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <perfmon.h>

G_BEGIN_DECLS

/* Where the file that holds a name recorded its module @module was
 * loaded from and its build id (either may be left NULL); FALSE if it
 * recorded nothing of @module. */
typedef gboolean (*PerfmonNamesModuleLookup) (gpointer     data,
                                              const char  *module,
                                              const char **path,
                                              const char **build_id);

/* A task log's process: what the log recorded of its modules, as a
 * PerfmonNamesModuleLookup (perfmon_names_task_log_module()). */
typedef struct
{
  PerfmonTaskLog *log;
  guint           process;
} PerfmonNamesTaskLogModules;

gboolean perfmon_names_task_log_module (gpointer     data,
                                        const char  *module,
                                        const char **path,
                                        const char **build_id);

/* Module file name → path of process @pid (e.g. from its /proc maps), or
 * NULL: the table stays the caller's. Called only for a module that the
 * lookup did not find. */
typedef GHashTable *(*PerfmonNamesModulePaths) (guint pid);

/* @name (a group's, a task's, a hang's runnable) with each "module+0xOFF"
 * in it that @symbolizer can name written as a stack's frame is,
 * "module+0xOFF (function)" (or "(function+0xD)" inside one). The module
 * is looked up first with @lookup (nullable; what a snapshot or a task
 * log recorded), else in @paths_of (nullable) for process @pid, else by
 * its file name. Past @deadline (monotonic µs; 0: none) nothing
 * more is symbolized: the rest stays "module+0xOFF". Newly allocated. */
char *perfmon_names_readable (PerfmonSymbolizer       *symbolizer,
                              const char              *name,
                              PerfmonNamesModuleLookup lookup,
                              gpointer                 data,
                              PerfmonNamesModulePaths  paths_of,
                              guint                    pid,
                              gint64                   deadline);

/* @log's Chrome trace (perfmon_task_log_to_chrome_trace()), its task
 * slices' names made readable by perfmon_names_readable() with the
 * modules @log recorded for each slice's process, then those of
 * @paths_of (nullable) for it, until @deadline (0: none). Newly
 * allocated. */
char *perfmon_names_readable_chrome_trace (PerfmonSymbolizer      *symbolizer,
                                           PerfmonTaskLog         *log,
                                           PerfmonNamesModulePaths paths_of,
                                           gint64                  deadline);

G_END_DECLS
