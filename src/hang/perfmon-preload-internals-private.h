/* perfmon-preload-internals-private.h: what libperfmon hands the preload
 * module of `perfmon run`, without exporting it
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * libperfmon exports its public API (perfmon_*) and nothing else: no
 * `_perfmon_*` symbol (the `exported-symbols` test checks it). The preload
 * module (src/preload/), which interposes GLib in programs that know
 * nothing of perfmon, needs a few internals beside that API: the tracer's
 * hooks of its interposers, and two settings of its hang monitor. It
 * exports PERFMON_PRELOAD_RECEIVE_SYMBOL; libperfmon's constructor looks
 * it up (dlsym (RTLD_DEFAULT), once, at load) and hands it a table of
 * those functions. The module is linked with libperfmon, so libperfmon's
 * constructor runs first, before the module's own constructor and before
 * the program's main(); in a process without the module the lookup finds
 * nothing and nothing happens.
 */
#pragma once

#include <gio/gio.h>

#include "perfmon-hang-monitor-private.h"

G_BEGIN_DECLS

/* The module takes a table of this version only (module and library are
 * built and installed together; a mismatch is a broken installation). */
#define PERFMON_PRELOAD_INTERNALS_VERSION 5
#define PERFMON_PRELOAD_RECEIVE_SYMBOL "perfmon_preload_receive_internals"

typedef struct
{
  guint    version;        /* PERFMON_PRELOAD_INTERNALS_VERSION */
  gsize    size;           /* sizeof (PerfmonPreloadInternals) */

  /* tasks/perfmon-interpose-private.h: the interposers' hooks. */
  gboolean (*interpose_pool_new)        (GFunc                 *func,
                                         gpointer              *user_data);
  void     (*interpose_pool_freed)      (GFunc                  pool_func,
                                         gpointer               pool_user_data);
  void     (*interpose_pool_push)       (GThreadPool           *pool,
                                         gpointer               item);
  void     (*interpose_dbus_sent)       (GDBusConnection       *connection,
                                         guint32                serial_before);
  gboolean (*interpose_dbus_call_begin) (gconstpointer          function);
  void     (*interpose_dbus_call_end)   (gboolean               began);
  void     (*interpose_dbus_received)   (GDBusMethodInvocation *invocation);
  void     (*interpose_gtask_run_begin) (GTask                 *task,
                                         GTaskThreadFunc        task_func);
  void     (*interpose_gtask_run_end)   (void);

  /* core/perfmon-monitor-private.h: a GApplication's start-up begins;
   * the monitor's time thresholds stretched, for a benchmark under
   * callgrind (PERFMON_RUN_TIME_DILATION). */
  void     (*monitor_begin_startup)     (PerfmonMonitor        *self);
  void     (*monitor_dilate_time)       (PerfmonMonitor        *self,
                                         guint                  factor);

  /* hang/perfmon-js-site-private.h: JavaScript creation sites, add-ons. */
  void        (*js_site_source_attached)   (PerfmonMonitor *monitor,
                                            GSource        *source,
                                            GMainContext   *context);
  gboolean    (*js_site_handler_connected) (PerfmonMonitor *monitor,
                                            GClosure       *closure);
  const char *(*js_site_status)            (void);

  /* hang/perfmon-hang-monitor-private.h. */
  void     (*hang_monitor_set_step_aside)   (PerfmonHangMonitor             *self,
                                             PerfmonHangMonitorStepAsideFunc func,
                                             gpointer                        data);
  void     (*hang_monitor_set_ongoing_func) (PerfmonHangMonitor     *self,
                                             PerfmonHangOngoingFunc  func,
                                             gpointer                data);

  /* The snapshot's JSON with the modules its "module+0x…" names refer to
   * (stack/'s _perfmon_modules_for_snapshot()): for the summary's
   * checkpoints, on their writer's thread. */
  char    *(*snapshot_to_json_with_modules) (PerfmonSnapshot        *snapshot);

  /* core/perfmon-clock-private.h: the cycle counter's rate, calibrated
   * (or checked) once per process, which the module hands down. */
  double   (*clock_cycles_per_us)           (void);
} PerfmonPreloadInternals;

/* What the module exports as PERFMON_PRELOAD_RECEIVE_SYMBOL: called once,
 * on the main thread, before any constructor of the module ran; keeps
 * @internals (valid as long as the process). */
typedef void (*PerfmonPreloadReceiveFunc) (const PerfmonPreloadInternals *internals);

G_END_DECLS
