/* perfmon-tracer-private.h: the task tracer's internals other files use
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-source-event.h"
#include "perfmon-task-format-private.h"

G_BEGIN_DECLS

/* The identity a dispatched task carries to the place it runs: filled by
 * _perfmon_task_dispatch() on the dispatching thread, read by
 * _perfmon_task_enter() on the running one (the queue that carries it
 * between them, a GSource, a GAsyncQueue, a GTask, orders the two). */
typedef struct
{
  guint64 task_id;
  guint64 source_event_id;
  guint32 source_event_type;
} PerfmonTaskIds;

/* What a thread ran before it entered a task, restored when it leaves. */
typedef struct
{
  guint64 task_id;
  guint64 task_source_event_id;
  guint64 source_event_id;
  guint32 task_source_event_type;
  guint32 source_event_type;
} PerfmonTaskContext;

/* The current tracing session, 0 when tracing is off: set by the recorder
 * under its control lock, read on hot paths. Hidden, so that a read is one
 * load and no call. */
G_GNUC_INTERNAL extern guint _perfmon_tracer_session;

/* Hot path, any thread: whether the tracer records. */
static inline gboolean
_perfmon_tracer_is_on (void)
{
  return __atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED) != 0;
}

/* Hot path, any thread: makes @ids a new task dispatched by the calling
 * thread's current task (or, with none, its own parent) under the current
 * source event, and records DISPATCH with @callback as its name. */
void     _perfmon_task_dispatch  (PerfmonTaskIds       *ids,
                                  gconstpointer         callback);
/* The same for a task due @delay_ms after now (a timeout): its queueing
 * time counts from then. */
void     _perfmon_task_dispatch_delayed (PerfmonTaskIds *ids,
                                         gconstpointer   callback,
                                         guint32         delay_ms);
/* Makes @ids a new task with no parent in this process (its own parent),
 * of source event @source_event_id (0: a new one of type
 * PERFMON_SOURCE_EVENT_DBUS, since this is what the D-Bus wrappers use for
 * messages from outside), and records DISPATCH. */
void     _perfmon_task_dispatch_root (PerfmonTaskIds         *ids,
                                      guint64                 source_event_id,
                                      PerfmonSourceEventType  source_event_type,
                                      gconstpointer           callback);
/* Hot path, the thread that runs the task: saves the thread's context in
 * @saved, makes @ids current and records BEGIN. */
void     _perfmon_task_enter     (const PerfmonTaskIds *ids,
                                  PerfmonTaskContext   *saved);
/* Records END of the current task and restores @saved. */
void     _perfmon_task_leave     (const PerfmonTaskContext *saved);

/* Records a DBUS_SEND or DBUS_RECV record for @task_id. Not a hot path
 * (it runs next to a D-Bus message) but follows the same rules. */
void     _perfmon_tracer_record_dbus (PerfmonTaskRecordType type,
                                      guint64               task_id,
                                      const char           *sender,
                                      guint32               serial);

/* Any thread: a task log (header and records) of what the tracer holds
 * from @since_monotonic_us on; a header with no record when the tracer is
 * off. For the jank trace capture. */
GBytes  *_perfmon_tracer_serialize_recent (gint64 since_monotonic_us);

/* Any thread: keeps a flight recorder of the last @seconds running while
 * held (the hang monitor holds it when jank traces may be captured). A
 * session started with perfmon_tracer_start() takes precedence; when it
 * stops, the held flight recorder starts again. */
void     _perfmon_tracer_hold_flight_recorder    (guint seconds);
void     _perfmon_tracer_release_flight_recorder (void);

G_END_DECLS
