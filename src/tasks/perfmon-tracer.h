/* perfmon-tracer.h: task tracing, the recording side
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <gio/gio.h>

#include "perfmon-version-macros.h"
#include "perfmon-source-event.h"

G_BEGIN_DECLS

/* Turning tracing on and off: any thread; the calls are serialised. */
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_start                 (const char  *path,
                                                GError     **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_start_flight_recorder (guint        seconds,
                                                GError     **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_dump                  (const char  *path,
                                                GError     **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_stop                  (GError     **error);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_is_active             (void);
PERFMON_AVAILABLE_IN_0_1
gboolean  perfmon_tracer_set_buffer_size       (gsize        bytes,
                                                GError     **error);

/* The calling thread's state: any thread, about itself. */
PERFMON_AVAILABLE_IN_0_1
guint64   perfmon_source_event_begin           (PerfmonSourceEventType type);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_source_event_end             (void);
PERFMON_AVAILABLE_IN_0_1
guint64   perfmon_source_event_get_current     (PerfmonSourceEventType *type);
PERFMON_AVAILABLE_IN_0_1
guint64   perfmon_task_get_current             (void);

PERFMON_AVAILABLE_IN_0_1
void      perfmon_task_add_label               (const char  *format,
                                                ...) G_GNUC_PRINTF (1, 2);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_task_add_label_valist        (const char  *format,
                                                va_list      args) G_GNUC_PRINTF (1, 0);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_task_add_label_literal       (const char  *text);

/* Scope guard: PERFMON_AUTO_TASK_LABEL ("Event [%s]", name); adds the label
 * "Begin Event [...]" now and "End Event [...]" when the enclosing block
 * ends. The text is formatted once, into the guard (on the stack). Hidden
 * from g-ir-scanner: bindings call perfmon_task_add_label(). */
#ifndef __GI_SCANNER__
typedef struct
{
  char text[248];
} PerfmonTaskLabelGuard;

/* The two halves of the guard, for the macro below (C only): see
 * perfmon-tracer.c. */
PERFMON_AVAILABLE_IN_0_3
void perfmon_task_label_guard_begin (PerfmonTaskLabelGuard *guard,
                                     const char            *format,
                                     ...) G_GNUC_PRINTF (2, 3);
PERFMON_AVAILABLE_IN_0_3
void perfmon_task_label_guard_end   (PerfmonTaskLabelGuard *guard);

#define _PERFMON_TASK_LABEL_GUARD_NAME(line) _PERFMON_TASK_LABEL_GUARD_NAME2 (line)
#define _PERFMON_TASK_LABEL_GUARD_NAME2(line) _perfmon_task_label_guard_##line

/**
 * PERFMON_AUTO_TASK_LABEL:
 * @...: a printf() format and its arguments
 *
 * Adds the label "Begin " followed by the formatted text to the current
 * task now, and "End " followed by the same text when the enclosing scope
 * ends, whichever way it ends (the seed's AutoScopedLabel). See
 * perfmon_task_add_label().
 *
 * Since: 0.1
 */
#define PERFMON_AUTO_TASK_LABEL(...) \
  G_GNUC_UNUSED __attribute__ ((cleanup (perfmon_task_label_guard_end))) \
  PerfmonTaskLabelGuard _PERFMON_TASK_LABEL_GUARD_NAME (__LINE__); \
  perfmon_task_label_guard_begin (&_PERFMON_TASK_LABEL_GUARD_NAME (__LINE__), __VA_ARGS__)
#endif /* __GI_SCANNER__ */

G_END_DECLS
