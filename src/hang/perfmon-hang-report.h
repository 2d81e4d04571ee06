/* perfmon-hang-report.h: one hang of a watched thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_HANG_REPORT (perfmon_hang_report_get_type ())

typedef struct _PerfmonHangReport PerfmonHangReport;

PERFMON_AVAILABLE_IN_0_1
GType               perfmon_hang_report_get_type         (void) G_GNUC_CONST;
PERFMON_AVAILABLE_IN_0_2
PerfmonHangReport  *perfmon_hang_report_new_from_json    (const char        *json,
                                                          gssize             length,
                                                          GError           **error);
PERFMON_AVAILABLE_IN_0_1
PerfmonHangReport  *perfmon_hang_report_ref              (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
void                perfmon_hang_report_unref            (PerfmonHangReport *self);

PERFMON_AVAILABLE_IN_0_1
double              perfmon_hang_report_get_duration     (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_thread       (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_runnable_name (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_2
const char * const *perfmon_hang_report_get_dispatch_names (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_2
double              perfmon_hang_report_get_dispatch_duration (PerfmonHangReport *self,
                                                               guint              index);
PERFMON_AVAILABLE_IN_0_3
gboolean            perfmon_hang_report_lookup_module    (PerfmonHangReport  *self,
                                                          const char         *name,
                                                          const char        **breakpad_id);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_process_type (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_remote_type  (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_annotation   (PerfmonHangReport *self,
                                                          const char        *key);
PERFMON_AVAILABLE_IN_0_1
char              **perfmon_hang_report_dup_annotation_keys (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char * const *perfmon_hang_report_get_pseudo_stack (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
char              **perfmon_hang_report_dup_stack        (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
const char         *perfmon_hang_report_get_stack_unavailable_reason (PerfmonHangReport *self);
PERFMON_AVAILABLE_IN_0_1
char               *perfmon_hang_report_to_json          (PerfmonHangReport *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonHangReport, perfmon_hang_report_unref)

PERFMON_AVAILABLE_IN_0_2
const char         *perfmon_hang_report_get_script_stack_unavailable_reason (PerfmonHangReport *self);

G_END_DECLS
