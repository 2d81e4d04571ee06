/* perfmon-task-log.h: the tasks of one or several task log files
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"
#include "perfmon-task.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_TASK_LOG (perfmon_task_log_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonTaskLog, perfmon_task_log, PERFMON, TASK_LOG, GObject)

PERFMON_AVAILABLE_IN_0_1
PerfmonTaskLog *perfmon_task_log_new_from_file           (const char          *path,
                                                          GError             **error);
PERFMON_AVAILABLE_IN_0_1
PerfmonTaskLog *perfmon_task_log_new_from_files          (const char * const  *paths,
                                                          GError             **error);

PERFMON_AVAILABLE_IN_0_1
GPtrArray      *perfmon_task_log_get_tasks               (PerfmonTaskLog      *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonTask    *perfmon_task_log_find_task               (PerfmonTaskLog      *self,
                                                          guint64              id);
PERFMON_AVAILABLE_IN_0_2
PerfmonTask    *perfmon_task_log_find_task_by_id_string  (PerfmonTaskLog      *self,
                                                          const char          *id);
PERFMON_AVAILABLE_IN_0_2
PerfmonTask    *perfmon_task_log_find_task_by_serial     (PerfmonTaskLog      *self,
                                                          guint                process,
                                                          guint                serial);
PERFMON_AVAILABLE_IN_0_3
gboolean        perfmon_task_log_lookup_module           (PerfmonTaskLog      *self,
                                                          guint                process,
                                                          const char          *name,
                                                          const char         **path,
                                                          guint64             *base,
                                                          const char         **build_id);
PERFMON_AVAILABLE_IN_0_2
PerfmonTask    *perfmon_task_log_get_parent              (PerfmonTaskLog      *self,
                                                          PerfmonTask         *task);
PERFMON_AVAILABLE_IN_0_2
GPtrArray      *perfmon_task_log_get_ancestor_tasks      (PerfmonTaskLog      *self,
                                                          PerfmonTask         *task);
PERFMON_AVAILABLE_IN_0_2
GPtrArray      *perfmon_task_log_get_follower_tasks      (PerfmonTaskLog      *self,
                                                          PerfmonTask         *task);
PERFMON_AVAILABLE_IN_0_2
GPtrArray      *perfmon_task_log_get_blocker_tasks       (PerfmonTaskLog      *self,
                                                          PerfmonTask         *task);
PERFMON_AVAILABLE_IN_0_1
guint64        *perfmon_task_log_find_ancestors          (PerfmonTaskLog      *self,
                                                          guint64              id,
                                                          gsize               *n_ids);
PERFMON_AVAILABLE_IN_0_1
guint64        *perfmon_task_log_find_followers          (PerfmonTaskLog      *self,
                                                          guint64              id,
                                                          gsize               *n_ids);
PERFMON_AVAILABLE_IN_0_1
guint64        *perfmon_task_log_find_blockers           (PerfmonTaskLog      *self,
                                                          guint64              id,
                                                          gsize               *n_ids);
PERFMON_AVAILABLE_IN_0_1
guint64         perfmon_task_log_get_dropped_records     (PerfmonTaskLog      *self);
PERFMON_AVAILABLE_IN_0_1
guint64         perfmon_task_log_get_unmatched_records   (PerfmonTaskLog      *self);
PERFMON_AVAILABLE_IN_0_1
char           *perfmon_task_log_to_chrome_trace         (PerfmonTaskLog      *self);

/**
 * PerfmonTaskLogNameFunc:
 * @process: the process of the slice
 * @name: the slice's name as perfmon_task_log_to_chrome_trace() writes it
 * @user_data: the data passed with the function
 *
 * Gives the name a task run's slice takes in the Chrome trace, e.g. with
 * each `module+0xOFF` in @name symbolized.
 *
 * Returns: (transfer full) (nullable): the name, or %NULL to keep @name
 *
 * Since: 0.3
 */
typedef char *(*PerfmonTaskLogNameFunc) (guint       process,
                                         const char *name,
                                         gpointer    user_data);

PERFMON_AVAILABLE_IN_0_3
char           *perfmon_task_log_to_chrome_trace_named   (PerfmonTaskLog        *self,
                                                          PerfmonTaskLogNameFunc name_func,
                                                          gpointer               user_data);

G_END_DECLS
