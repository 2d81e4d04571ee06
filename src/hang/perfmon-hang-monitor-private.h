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

/* Stepping aside, for perfmon run's preload module, whose hang monitor
 * watches the default monitor before the program's main(): when the
 * program starts a hang monitor of its own on the same monitor, on the
 * thread that started @self, perfmon_hang_monitor_start() stops @self,
 * calls @func with the program's monitor as @successor, and watches in its
 * place; when the program's monitor stops (perfmon_hang_monitor_stop(),
 * or its last reference goes), @func is called with @successor %NULL
 * (after the last of its signals) and @self is started again. @func runs
 * on that thread. For the preload module alone, which gets it through
 * perfmon-preload-internals-private.h. */
typedef void (*PerfmonHangMonitorStepAsideFunc) (PerfmonHangMonitor *self,
                                                 PerfmonHangMonitor *successor,
                                                 gpointer            data);
void    _perfmon_hang_monitor_set_step_aside (PerfmonHangMonitor             *self,
                                              PerfmonHangMonitorStepAsideFunc func,
                                              gpointer                        data);

/* Told on the watchdog thread when a hang is caught (@report, its stack
 * taken, no duration yet; @start_real_us: when its stretch began, wall
 * clock, g_get_real_time()) and when the hang it told of is over (@report
 * NULL): what a process that is killed while it hangs leaves behind (see
 * `perfmon run`). Set before perfmon_hang_monitor_start(). The function
 * runs on the watchdog thread, never on the watched one: it may write a
 * file. */
typedef void (*PerfmonHangOngoingFunc) (PerfmonHangReport *report,
                                        gint64             start_real_us,
                                        gpointer           data);
void    _perfmon_hang_monitor_set_ongoing_func (PerfmonHangMonitor     *self,
                                                PerfmonHangOngoingFunc  func,
                                                gpointer                data);

/* Whether the watchdog, woken @late_us after a deadline, of which it
 * waited @run_delay_us (-1 if unknown) for a CPU, was stopped rather than
 * delayed by load: see wait_for_deadline(). */
gboolean _perfmon_hang_watchdog_was_stopped (gint64 late_us,
                                             gint64 run_delay_us,
                                             gint64 threshold_us);

G_END_DECLS
