/* perfmon-hang-symbolize.h: names for the frames of hang reports, pings and jank stack trees
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-bhr-ping.h"
#include "perfmon-hang-report.h"
#include "perfmon-symbolizer.h"
#include "perfmon-version-macros.h"

G_BEGIN_DECLS

PERFMON_AVAILABLE_IN_0_3
PerfmonHangReport  *perfmon_hang_report_symbolize      (PerfmonHangReport  *self,
                                                        PerfmonSymbolizer  *symbolizer);
PERFMON_AVAILABLE_IN_0_3
PerfmonBhrPing     *perfmon_bhr_ping_symbolize         (PerfmonBhrPing     *self,
                                                        PerfmonSymbolizer  *symbolizer);

PERFMON_AVAILABLE_IN_0_2
char               *perfmon_symbolizer_symbolize       (PerfmonSymbolizer  *self,
                                                        const char         *contents,
                                                        gssize              length,
                                                        gboolean            json,
                                                        GError            **error);

G_END_DECLS
