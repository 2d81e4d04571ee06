/* perfmon-sysprof-private.h: hangs, long dispatches and group CPU in a Sysprof capture
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-hang-report.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-monitor.h"
#include "perfmon-snapshot.h"

G_BEGIN_DECLS

typedef struct _PerfmonSysprof PerfmonSysprof;

/* Dispatches at least this long become marks (PERFMON_SYSPROF_DISPATCH_MS
 * overrides it, 1…60000). */
#define PERFMON_SYSPROF_DISPATCH_MS 16
/* Counters: groups with a counter of their own; the others are summed
 * into "(other groups)". */
#define PERFMON_SYSPROF_MAX_COUNTERS 64

/* A writer into the capture that Sysprof's recorder (or `perfmon run
 * --sysprof`) gave this process in SYSPROF_TRACE_FD, with a thread of its
 * own ("perfmon-sysprof"); NULL when there is none, or when another hang
 * monitor of the process already writes into it. It marks the
 * dispatches of @monitor's thread of PERFMON_SYSPROF_DISPATCH_MS or more,
 * read from its loop activity's lock-free ring, and takes a snapshot of
 * @monitor once a second at most while its context's loop works (a source
 * on that context). Call it on the monitor's thread. */
PerfmonSysprof *_perfmon_sysprof_new_from_env (PerfmonMonitor      *monitor);
/* Any thread (the watchdog): a hang that began at @start_us (monotonic)
 * becomes a mark of its duration, with its runnable and stack. */
void            _perfmon_sysprof_add_hang     (PerfmonSysprof      *self,
                                               PerfmonHangReport   *report,
                                               gint64               start_us);
/* Any thread: the CPU each group used since the previous snapshot, as
 * counters at the snapshot's time. */
void            _perfmon_sysprof_add_snapshot (PerfmonSysprof      *self,
                                               PerfmonSnapshot     *snapshot);
/* Writes what is queued (and, @on_monitor_thread, a last snapshot's
 * counters), flushes the capture; joins the thread. */
void            _perfmon_sysprof_free         (PerfmonSysprof      *self,
                                               gboolean             on_monitor_thread);

G_END_DECLS
