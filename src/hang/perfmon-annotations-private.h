/* perfmon-annotations-private.h: the process's annotations (perfmon_annotate())
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-hang-report-private.h"

G_BEGIN_DECLS

/* Adds the annotations in force (set by perfmon_annotate(), declared in
 * perfmon-hang-monitor.h) to @report. Any thread; takes the annotations'
 * lock. */
void _perfmon_annotate_report (PerfmonHangReport *report);

G_END_DECLS
