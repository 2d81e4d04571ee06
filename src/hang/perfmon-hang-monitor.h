/* perfmon-hang-monitor.h: the watchdog of one monitored thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"
#include "perfmon-monitor.h"
#include "perfmon-hang-report.h"

G_BEGIN_DECLS

/**
 * PERFMON_HANG_DEFAULT_THRESHOLD_MS:
 *
 * The default [property@HangMonitor:threshold]: the Background Hang
 * Monitor's 128 ms.
 *
 * Since: 0.1
 */
#define PERFMON_HANG_DEFAULT_THRESHOLD_MS 128
/**
 * PERFMON_HANG_DEFAULT_PERMAHANG_THRESHOLD_MS:
 *
 * The default [property@HangMonitor:permahang-threshold], 8192 ms.
 *
 * Since: 0.1
 */
#define PERFMON_HANG_DEFAULT_PERMAHANG_THRESHOLD_MS 8192
/**
 * PERFMON_HANG_DEFAULT_HANGS_PER_PING:
 *
 * The default [property@HangMonitor:hangs-per-ping], 50.
 *
 * Since: 0.1
 */
#define PERFMON_HANG_DEFAULT_HANGS_PER_PING 50

#define PERFMON_TYPE_HANG_MONITOR (perfmon_hang_monitor_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonHangMonitor, perfmon_hang_monitor, PERFMON, HANG_MONITOR, GObject)

PERFMON_AVAILABLE_IN_0_1
PerfmonHangMonitor *perfmon_hang_monitor_new              (PerfmonMonitor     *monitor);

PERFMON_AVAILABLE_IN_0_1
gboolean            perfmon_hang_monitor_start            (PerfmonHangMonitor *self,
                                                           GError            **error);
PERFMON_AVAILABLE_IN_0_1
void                perfmon_hang_monitor_stop             (PerfmonHangMonitor *self);
PERFMON_AVAILABLE_IN_0_1
gboolean            perfmon_hang_monitor_is_running       (PerfmonHangMonitor *self);

PERFMON_AVAILABLE_IN_0_1
PerfmonMonitor     *perfmon_hang_monitor_get_monitor      (PerfmonHangMonitor *self);
PERFMON_AVAILABLE_IN_0_1
guint               perfmon_hang_monitor_get_threshold    (PerfmonHangMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void                perfmon_hang_monitor_set_threshold    (PerfmonHangMonitor *self,
                                                           guint               threshold_ms);
PERFMON_AVAILABLE_IN_0_1
guint               perfmon_hang_monitor_get_permahang_threshold (PerfmonHangMonitor *self);
PERFMON_AVAILABLE_IN_0_1
void                perfmon_hang_monitor_set_permahang_threshold (PerfmonHangMonitor *self,
                                                                  guint               threshold_ms);

PERFMON_AVAILABLE_IN_0_1
gboolean            perfmon_hang_monitor_set_event_config (PerfmonHangMonitor *self,
                                                           const char         *name,
                                                           GHashTable         *params,
                                                           GError            **error);
PERFMON_AVAILABLE_IN_0_1
char               *perfmon_hang_monitor_flush_ping       (PerfmonHangMonitor *self,
                                                           GError            **error);

PERFMON_AVAILABLE_IN_0_1
void                perfmon_annotate                      (const char         *key,
                                                           const char         *value);

PERFMON_AVAILABLE_IN_0_1
void                perfmon_deliberate_wait_begin         (void);
PERFMON_AVAILABLE_IN_0_1
void                perfmon_deliberate_wait_end           (void);

#ifndef __GI_SCANNER__
typedef struct _PerfmonDeliberateWaitGuard PerfmonDeliberateWaitGuard;

static inline PerfmonDeliberateWaitGuard *
_perfmon_deliberate_wait_guard_new (void)
{
  perfmon_deliberate_wait_begin ();
  return (PerfmonDeliberateWaitGuard *) GSIZE_TO_POINTER (1);
}

static inline void
_perfmon_deliberate_wait_guard_free (PerfmonDeliberateWaitGuard *guard)
{
  perfmon_deliberate_wait_end ();
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonDeliberateWaitGuard, _perfmon_deliberate_wait_guard_free)
#endif /* __GI_SCANNER__ */

/**
 * PERFMON_AUTO_DELIBERATE_WAIT:
 *
 * Declares the rest of the enclosing scope a deliberate wait of the
 * calling thread (see perfmon_deliberate_wait_begin()): it ends when the
 * scope ends, whichever way it ends.
 *
 * Since: 0.1
 */
#define PERFMON_AUTO_DELIBERATE_WAIT() \
  G_GNUC_UNUSED g_autoptr(PerfmonDeliberateWaitGuard) _perfmon_deliberate_wait_guard = \
    _perfmon_deliberate_wait_guard_new ()

G_END_DECLS
