/* perfmon-monitor-private.h
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-monitor.h"
#include "perfmon-group-private.h"

G_BEGIN_DECLS

/* Any thread: hands a record whose last holder went to the monitor, which
 * frees it on its own thread. */
void    _perfmon_monitor_bury_record  (PerfmonMonitor     *self,
                                       PerfmonGroupRecord *record);

/* For tests and benchmarks: the number of records not yet freed, dead or
 * alive, and the number of thread CPU clock reads so far. */
guint   _perfmon_monitor_count_records (PerfmonMonitor *self);
guint64 _perfmon_monitor_count_cpu_clock_reads (PerfmonMonitor *self);

G_END_DECLS
