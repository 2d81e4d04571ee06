/* perfmon-task-private.h: how the task log reader builds a PerfmonTask
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-task.h"

G_BEGIN_DECLS

/* Times are kept in the file's nanoseconds; the public getters give µs. */
typedef struct
{
  gint64  begin_ns;
  gint64  end_ns;        /* -1: the file ends while the run is going on */
  guint32 tid;
} PerfmonTaskRun;

typedef struct
{
  gint64  time_ns;
  guint32 tid;
  char   *text;
} PerfmonTaskLabel;

/* The reader fills in a new task, then _perfmon_task_seal() makes it the
 * immutable object the public API hands out; nothing changes it after. */
struct _PerfmonTask
{
  /*< private >*/
  gatomicrefcount         ref_count;

  guint64                 id;
  guint64                 parent_id;      /* == id: a root task */
  guint64                 source_event_id;
  PerfmonSourceEventType  source_event_type;
  guint64                 callback;
  gint64                  dispatch_ns;
  guint32                 delay_ms;       /* due at dispatch_ns + delay_ms */
  guint32                 dispatch_tid;
  guint32                 pid;
  char                   *name;           /* "??" when unknown */
  char                   *process_name;   /* never NULL, maybe empty */
  char                   *thread_name;    /* NULL: unknown */
  GArray                 *runs;           /* of PerfmonTaskRun, by time */
  GArray                 *labels;         /* of PerfmonTaskLabel, by time */
  char                  **label_texts;    /* NULL-terminated, for get_labels */

  /* A D-Bus message from another task caused this one: where and when it
   * was sent, for the Chrome trace's cross-process flow. */
  gboolean                dbus_linked;
  gint64                  dbus_send_ns;
  guint32                 dbus_send_pid;
  guint32                 dbus_send_tid;
};

PerfmonTask *_perfmon_task_new  (guint64      id,
                                 guint64      parent_id,
                                 guint32      pid);
void         _perfmon_task_seal (PerfmonTask *self);

/* When @self was due to run: its dispatch, or a timeout's dispatch plus its
 * interval; saturates rather than overflows. Queueing counts from here. */
gint64       _perfmon_task_due_ns (PerfmonTask *self);

G_END_DECLS
