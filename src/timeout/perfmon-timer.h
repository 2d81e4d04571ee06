/* perfmon-timer.h: named task timers (HiCollie's SetTimer)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

/**
 * PERFMON_TIMER_MAX_LIVE:
 *
 * How many timers may be set and not yet fired or cancelled at once, in
 * the whole process (the seed's limit).
 *
 * Since: 0.1
 */
#define PERFMON_TIMER_MAX_LIVE 128

/**
 * PerfmonTimerFlags:
 * @PERFMON_TIMER_FLAG_NONE: do nothing when the timer expires (it still
 *   counts towards %PERFMON_TIMER_MAX_LIVE until then).
 * @PERFMON_TIMER_FLAG_LOG: write a log with the stack of the thread that
 *   set the timer to the log directory (see perfmon_timeout_set_log_dir()).
 *   At most one log per timer name a minute.
 * @PERFMON_TIMER_FLAG_CALLBACK: call the timer's callback, on the
 *   watchdog thread.
 * @PERFMON_TIMER_FLAG_RECOVERY: abort the process, after the log and the
 *   callback (when their flags are set too). The log of such a timer is
 *   never skipped by the rate limit.
 *
 * What happens when a timer expires before it is cancelled. The actions
 * run in the order log, callback, recovery.
 *
 * Since: 0.1
 */
typedef enum /*< flags >*/
{
  PERFMON_TIMER_FLAG_NONE     = 0,
  PERFMON_TIMER_FLAG_LOG      = 1 << 0,
  PERFMON_TIMER_FLAG_CALLBACK = 1 << 1,
  PERFMON_TIMER_FLAG_RECOVERY = 1 << 2,
} PerfmonTimerFlags;

/**
 * PerfmonTimerCallback:
 * @id: the timer's id, as perfmon_timer_set() returned it
 * @name: the timer's name
 * @user_data: (closure): the data given to perfmon_timer_set()
 *
 * Called on the watchdog thread when a timer with
 * %PERFMON_TIMER_FLAG_CALLBACK expires. It must be thread-safe, and
 * short: while it runs, no other timer fires and no stuck thread is
 * reported.
 *
 * Since: 0.1
 */
typedef void (*PerfmonTimerCallback) (guint       id,
                                      const char *name,
                                      gpointer    user_data);

PERFMON_AVAILABLE_IN_0_1
guint     perfmon_timer_set           (const char           *name,
                                       guint                 timeout_ms,
                                       PerfmonTimerFlags     flags,
                                       PerfmonTimerCallback  callback,
                                       gpointer              user_data,
                                       GDestroyNotify        destroy,
                                       GError              **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_timer_cancel        (guint                 id);

PERFMON_AVAILABLE_IN_0_1
void      perfmon_timeout_set_log_dir (const char           *dir);
PERFMON_AVAILABLE_IN_0_1
char     *perfmon_timeout_get_log_dir (void);

G_END_DECLS
