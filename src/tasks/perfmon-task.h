/* perfmon-task.h: one task of a task log
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"
#include "perfmon-source-event.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_TASK (perfmon_task_get_type ())

typedef struct _PerfmonTask PerfmonTask;

PERFMON_AVAILABLE_IN_0_1
GType                   perfmon_task_get_type              (void) G_GNUC_CONST;
PERFMON_AVAILABLE_IN_0_1
PerfmonTask            *perfmon_task_ref                   (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
void                    perfmon_task_unref                 (PerfmonTask *self);

PERFMON_AVAILABLE_IN_0_1
guint64                 perfmon_task_get_id                (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint64                 perfmon_task_get_parent_id         (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_2
guint                   perfmon_task_get_serial            (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_2
char                   *perfmon_task_dup_id_string         (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_2
char                   *perfmon_task_dup_parent_id_string  (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gboolean                perfmon_task_is_root               (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint64                 perfmon_task_get_source_event_id   (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonSourceEventType  perfmon_task_get_source_event_type (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gint64                  perfmon_task_get_dispatch_time     (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint                   perfmon_task_get_dispatch_thread   (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gint64                  perfmon_task_get_begin_time        (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gint64                  perfmon_task_get_end_time          (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gint64                  perfmon_task_get_queueing_time     (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint                   perfmon_task_get_n_runs            (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
gboolean                perfmon_task_get_run               (PerfmonTask *self,
                                                            guint        index,
                                                            gint64      *begin_time,
                                                            gint64      *end_time);
PERFMON_AVAILABLE_IN_0_1
guint                   perfmon_task_get_thread            (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
const char             *perfmon_task_get_thread_name       (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint                   perfmon_task_get_process           (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
const char             *perfmon_task_get_process_name      (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
const char             *perfmon_task_get_name              (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
guint                   perfmon_task_get_n_labels          (PerfmonTask *self);
PERFMON_AVAILABLE_IN_0_1
const char             *perfmon_task_get_label             (PerfmonTask *self,
                                                            guint        index,
                                                            gint64      *time);
PERFMON_AVAILABLE_IN_0_1
const char * const     *perfmon_task_get_labels            (PerfmonTask *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonTask, perfmon_task_unref)

G_END_DECLS
