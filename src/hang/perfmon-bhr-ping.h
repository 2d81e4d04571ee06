/* perfmon-bhr-ping.h: a "bhr" ping read back
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-hang-report.h"
#include "perfmon-version-macros.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_BHR_PING (perfmon_bhr_ping_get_type ())

typedef struct _PerfmonBhrPing PerfmonBhrPing;

PERFMON_AVAILABLE_IN_0_3
GType               perfmon_bhr_ping_get_type          (void) G_GNUC_CONST;
PERFMON_AVAILABLE_IN_0_3
PerfmonBhrPing     *perfmon_bhr_ping_new_from_json     (const char     *json,
                                                        gssize          length,
                                                        GError        **error);
PERFMON_AVAILABLE_IN_0_3
PerfmonBhrPing     *perfmon_bhr_ping_ref               (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
void                perfmon_bhr_ping_unref             (PerfmonBhrPing *self);

PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_id            (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_client_id     (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_creation_date (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_app_name      (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_app_version   (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_app_channel   (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_app_build_id  (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
gint64              perfmon_bhr_ping_get_time_since_last_ping (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
guint               perfmon_bhr_ping_get_n_hangs       (PerfmonBhrPing *self);
PERFMON_AVAILABLE_IN_0_3
PerfmonHangReport  *perfmon_bhr_ping_get_hang          (PerfmonBhrPing *self,
                                                        guint           index);
PERFMON_AVAILABLE_IN_0_3
const char         *perfmon_bhr_ping_get_hang_id       (PerfmonBhrPing *self,
                                                        guint           index);
PERFMON_AVAILABLE_IN_0_3
char               *perfmon_bhr_ping_to_json           (PerfmonBhrPing *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonBhrPing, perfmon_bhr_ping_unref)

G_END_DECLS
