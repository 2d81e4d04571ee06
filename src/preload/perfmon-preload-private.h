/* perfmon-preload-private.h: the parts of the preload module
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* perfmon-preload-trace.c: "perfmon run --trace". In the constructor, on
 * the main thread: starts recording if PERFMON_RUN_TRACE asks for it. */
void _perfmon_preload_trace_start (gboolean is_command);
/* At exit, on the main thread: the last write, by the trace's thread;
 * without @keep the process's task log is removed. */
void _perfmon_preload_trace_stop  (gboolean keep);

G_END_DECLS
