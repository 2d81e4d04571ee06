/* perfmon-preload-internals.c: what libperfmon hands the preload module of
 * `perfmon run`, without exporting it (see the header)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include "perfmon-interpose-private.h"
#include "perfmon-js-site-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-preload-internals-private.h"
#include "perfmon-snapshot-private.h"

static char *
snapshot_to_json_with_modules (PerfmonSnapshot *snapshot)
{
  g_autoptr(GPtrArray) modules = _perfmon_modules_for_snapshot (snapshot);

  return _perfmon_snapshot_to_json_with_modules (snapshot, modules);
}

static const PerfmonPreloadInternals internals = {
  .version = PERFMON_PRELOAD_INTERNALS_VERSION,
  .size = sizeof (PerfmonPreloadInternals),
  .interpose_pool_new = _perfmon_interpose_pool_new,
  .interpose_pool_freed = _perfmon_interpose_pool_freed,
  .interpose_pool_push = _perfmon_interpose_pool_push,
  .interpose_dbus_sent = _perfmon_interpose_dbus_sent,
  .interpose_dbus_call_begin = _perfmon_interpose_dbus_call_begin,
  .interpose_dbus_call_end = _perfmon_interpose_dbus_call_end,
  .interpose_dbus_received = _perfmon_interpose_dbus_received,
  .interpose_gtask_run_begin = _perfmon_interpose_gtask_run_begin,
  .interpose_gtask_run_end = _perfmon_interpose_gtask_run_end,
  .monitor_begin_startup = _perfmon_monitor_begin_startup,
  .monitor_dilate_time = _perfmon_monitor_dilate_time,
  .js_site_source_attached = _perfmon_js_site_source_attached,
  .js_site_handler_connected = _perfmon_js_site_handler_connected,
  .js_site_status = _perfmon_js_site_status,
  .hang_monitor_set_step_aside = _perfmon_hang_monitor_set_step_aside,
  .hang_monitor_set_ongoing_func = _perfmon_hang_monitor_set_ongoing_func,
  .snapshot_to_json_with_modules = snapshot_to_json_with_modules,
  .clock_cycles_per_us = _perfmon_clock_cycles_per_us,
};

/* At load, once: one symbol lookup, in every process that loads the
 * library (a few µs). */
__attribute__((constructor))
static void
offer_preload_internals (void)
{
  PerfmonPreloadReceiveFunc receive;
  void *symbol = dlsym (RTLD_DEFAULT, PERFMON_PRELOAD_RECEIVE_SYMBOL);

  if (symbol == NULL)
    return;
  /* POSIX: a function's address from dlsym() converts to a function pointer. */
  memcpy (&receive, &symbol, sizeof receive);
  receive (&internals);
}
