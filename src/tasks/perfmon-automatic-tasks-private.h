/* perfmon-automatic-tasks-private.h: automatic tasks (every GSource
 * dispatch on a monitored context a task while the tracer records)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-dispatch-observer-private.h"

G_BEGIN_DECLS

/* The observer the tracer sets on core/'s per-dispatch hook while a
 * session runs (perfmon-automatic-tasks.c). */
G_GNUC_INTERNAL extern const PerfmonDispatchObserver _perfmon_automatic_task_observer;

G_END_DECLS
