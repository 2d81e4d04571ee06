/* perfmon-hang-monitor-private.h: what tests and benchmarks see of the watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-hang-monitor.h"
#include "perfmon-jank-config-private.h"

G_BEGIN_DECLS

/* Times the watchdog thread woke up (from a wait with or without a
 * deadline) since the monitor was made. */
guint64 _perfmon_hang_monitor_count_wakeups (PerfmonHangMonitor *self);
/* Hangs finished (reported) since the monitor was made. */
guint64 _perfmon_hang_monitor_count_hangs   (PerfmonHangMonitor *self);
/* For the latest hang: how long after the busy stretch began the watchdog
 * caught it, in µs. */
gint64  _perfmon_hang_monitor_get_last_detection_latency_us (PerfmonHangMonitor *self);

void    _perfmon_hang_monitor_get_jank_config (PerfmonHangMonitor *self,
                                               PerfmonJankConfig  *config);

G_END_DECLS
