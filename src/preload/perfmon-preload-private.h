/* perfmon-preload-private.h: the parts of the preload module
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-preload-internals-private.h"

G_BEGIN_DECLS

/* perfmon-preload-trace.c: "perfmon run --trace". In the constructor, on
 * the main thread: starts recording if PERFMON_RUN_TRACE asks for it. */
G_GNUC_INTERNAL void _perfmon_preload_trace_start (gboolean is_command);
/* At exit, on the main thread: the last write, by the trace's thread;
 * without @keep the process's task log is removed. */
G_GNUC_INTERNAL void _perfmon_preload_trace_stop  (gboolean keep);

/* perfmon-preload.c: what libperfmon handed the module at load, through
 * PERFMON_PRELOAD_RECEIVE_SYMBOL, or NULL (a libperfmon of another
 * version). Set before any constructor of the module runs, read-only
 * after. */
G_GNUC_INTERNAL extern const PerfmonPreloadInternals *_perfmon_preload_internals;

G_END_DECLS
