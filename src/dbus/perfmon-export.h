/* perfmon-export.h: a monitor served over D-Bus as org.perfmon.Monitor1
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <gio/gio.h>

#include "perfmon-version-macros.h"
#include "perfmon-monitor.h"
#include "perfmon-hang-monitor.h"

G_BEGIN_DECLS

/**
 * PERFMON_MONITOR_OBJECT_PATH:
 *
 * Where [method@Perfmon.Monitor.export] serves `org.perfmon.Monitor1`.
 *
 * Since: 0.1
 */
#define PERFMON_MONITOR_OBJECT_PATH "/org/perfmon/Monitor1"

/**
 * PERFMON_MONITOR_INTERFACE:
 *
 * The D-Bus interface a monitor is exported as.
 *
 * Since: 0.1
 */
#define PERFMON_MONITOR_INTERFACE "org.perfmon.Monitor1"

/**
 * PERFMON_DAEMON_BUS_NAME:
 *
 * The well-known bus name of the perfmond session daemon, which exporting
 * processes register with.
 *
 * Since: 0.1
 */
#define PERFMON_DAEMON_BUS_NAME "org.perfmon.Daemon1"

/**
 * PERFMON_DAEMON_OBJECT_PATH:
 *
 * The object path of the perfmond session daemon.
 *
 * Since: 0.1
 */
#define PERFMON_DAEMON_OBJECT_PATH "/org/perfmon/Daemon1"

/**
 * PERFMON_DAEMON_INTERFACE:
 *
 * The D-Bus interface of the perfmond session daemon.
 *
 * Since: 0.1
 */
#define PERFMON_DAEMON_INTERFACE "org.perfmon.Daemon1"

/**
 * PerfmonExportFlags:
 * @PERFMON_EXPORT_FLAGS_NONE: export, and on a message bus register with
 *   the perfmond daemon (unless the environment variable
 *   `PERFMON_NO_REGISTER` is set to anything but `0` or the empty string).
 * @PERFMON_EXPORT_FLAGS_NO_REGISTER: do not register with the perfmond
 *   daemon: the monitor is served only to whoever calls it.
 *
 * How [method@Perfmon.Monitor.export_full] exports a monitor.
 *
 * Since: 0.1
 */
typedef enum /*< flags >*/
{
  PERFMON_EXPORT_FLAGS_NONE        = 0,
  PERFMON_EXPORT_FLAGS_NO_REGISTER = 1 << 0,
} PerfmonExportFlags;

PERFMON_AVAILABLE_IN_0_1
gboolean perfmon_monitor_export      (PerfmonMonitor     *monitor,
                                      GDBusConnection    *connection,
                                      GError            **error);
PERFMON_AVAILABLE_IN_0_1
gboolean perfmon_monitor_export_full (PerfmonMonitor     *monitor,
                                      PerfmonHangMonitor *hang_monitor,
                                      GDBusConnection    *connection,
                                      PerfmonExportFlags  flags,
                                      GError            **error);
PERFMON_AVAILABLE_IN_0_1
gboolean perfmon_monitor_unexport    (PerfmonMonitor     *monitor,
                                      GDBusConnection    *connection);

G_END_DECLS
