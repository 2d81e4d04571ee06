/* perfmon-task.c: one task of a task log
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-task-private.h"

/**
 * PerfmonTask:
 *
 * One task of a [class@TaskLog]: a callback that some code dispatched (to
 * an idle or timeout source, a thread pool, another thread's main context)
 * and that later ran, once or several times (a repeating timeout runs once
 * per expiry).
 *
 * Its parent is the task that was running on the dispatching thread, or
 * the task itself when no task was running (the task then starts a chain of
 * its own, for the source event current at the time, see
 * [method@Task.is_root]). A task handling a D-Bus message from another
 * traced process has the sending task as parent.
 *
 * All times are `CLOCK_MONOTONIC` microseconds, the clock of
 * g_get_monotonic_time(), so that tasks of several processes of one boot
 * share a time line.
 *
 * A `PerfmonTask` is immutable and reference counted; any thread may read
 * it.
 *
 * Since: 0.1
 */

G_DEFINE_BOXED_TYPE (PerfmonTask, perfmon_task, perfmon_task_ref, perfmon_task_unref)

static void
label_clear (gpointer data)
{
  PerfmonTaskLabel *label = data;

  g_free (label->text);
}

PerfmonTask *
_perfmon_task_new (guint64 id,
                   guint64 parent_id,
                   guint32 pid)
{
  PerfmonTask *self = g_new0 (PerfmonTask, 1);

  g_atomic_ref_count_init (&self->ref_count);
  self->id = id;
  self->parent_id = parent_id;
  self->pid = pid;
  self->runs = g_array_new (FALSE, FALSE, sizeof (PerfmonTaskRun));
  self->labels = g_array_new (FALSE, FALSE, sizeof (PerfmonTaskLabel));
  g_array_set_clear_func (self->labels, label_clear);

  return self;
}

void
_perfmon_task_seal (PerfmonTask *self)
{
  g_return_if_fail (self->label_texts == NULL);

  self->label_texts = g_new0 (char *, self->labels->len + 1);
  for (guint i = 0; i < self->labels->len; i++)
    self->label_texts[i] = g_array_index (self->labels, PerfmonTaskLabel, i).text;

  if (self->name == NULL)
    self->name = g_strdup ("??");
  if (self->process_name == NULL)
    self->process_name = g_strdup ("");
}

/**
 * perfmon_task_ref:
 * @self: a `PerfmonTask`
 *
 * Acquires a reference on @self.
 *
 * Returns: (transfer full): @self
 *
 * Since: 0.1
 */
PerfmonTask *
perfmon_task_ref (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);

  return self;
}

/**
 * perfmon_task_unref:
 * @self: (transfer full): a `PerfmonTask`
 *
 * Releases a reference on @self; the last one frees it.
 *
 * Since: 0.1
 */
void
perfmon_task_unref (PerfmonTask *self)
{
  g_return_if_fail (self != NULL);

  if (g_atomic_ref_count_dec (&self->ref_count))
    {
      /* label_texts only borrows the labels' strings. */
      g_free (self->label_texts);
      g_array_unref (self->labels);
      g_array_unref (self->runs);
      g_free (self->name);
      g_free (self->process_name);
      g_free (self->thread_name);
      g_free (self);
    }
}

/**
 * perfmon_task_get_id:
 * @self: a `PerfmonTask`
 *
 * Gets the id of the task: unique across the processes of a session, with
 * the pid of the process that dispatched it in the high 32 bits.
 *
 * Returns: the id of the task
 *
 * Since: 0.1
 */
guint64
perfmon_task_get_id (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->id;
}

/**
 * perfmon_task_get_parent_id:
 * @self: a `PerfmonTask`
 *
 * Gets the id of the task that dispatched @self (or sent the D-Bus message
 * @self handles). A task that no other task dispatched is its own parent.
 *
 * Returns: the id of the parent task, or the id of @self
 *
 * Since: 0.1
 */
guint64
perfmon_task_get_parent_id (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->parent_id;
}

/**
 * perfmon_task_get_serial:
 * @self: a `PerfmonTask`
 *
 * Gets the serial of the task in its process: the low 32 bits of its id.
 * With [method@Task.get_process] (the high 32 bits) it names the task
 * exactly in languages whose numbers are doubles: a JavaScript number
 * holds an id exactly only while the pid is below 2^21, and Debian's
 * `pid_max` is 2^22.
 *
 * Returns: the serial of the task, never 0
 *
 * Since: 0.2
 */
guint
perfmon_task_get_serial (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return (guint) (self->id & G_MAXUINT32);
}

/**
 * perfmon_task_dup_id_string:
 * @self: a `PerfmonTask`
 *
 * Gets the id of the task as text, `0x` and its hexadecimal digits, as
 * `perfmon tasks` prints and reads it: exact from any language, for
 * [method@TaskLog.find_task_by_id_string].
 *
 * Returns: (transfer full): the id of the task in hexadecimal
 *
 * Since: 0.2
 */
char *
perfmon_task_dup_id_string (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", self->id);
}

/**
 * perfmon_task_dup_parent_id_string:
 * @self: a `PerfmonTask`
 *
 * Gets the id of the task's parent as text, see
 * [method@Task.dup_id_string] and [method@Task.get_parent_id].
 *
 * Returns: (transfer full): the id of the parent task in hexadecimal
 *
 * Since: 0.2
 */
char *
perfmon_task_dup_parent_id_string (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", self->parent_id);
}

/**
 * perfmon_task_is_root:
 * @self: a `PerfmonTask`
 *
 * Tells whether no other task dispatched @self: it was dispatched for a
 * source event or outside any task, and is its own parent.
 *
 * Returns: %TRUE if @self is its own parent
 *
 * Since: 0.1
 */
gboolean
perfmon_task_is_root (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return self->parent_id == self->id;
}

/**
 * perfmon_task_get_source_event_id:
 * @self: a `PerfmonTask`
 *
 * Gets the id of the source event that started the chain of tasks @self
 * belongs to; a task handling a D-Bus message from another traced process
 * has the sending task's source event.
 *
 * Returns: the source event id, or 0 if there was none
 *
 * Since: 0.1
 */
guint64
perfmon_task_get_source_event_id (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->source_event_id;
}

/**
 * perfmon_task_get_source_event_type:
 * @self: a `PerfmonTask`
 *
 * Gets the kind of the source event of @self, see
 * [method@Task.get_source_event_id].
 *
 * Returns: the source event type, %PERFMON_SOURCE_EVENT_UNKNOWN if none
 *
 * Since: 0.1
 */
PerfmonSourceEventType
perfmon_task_get_source_event_type (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, PERFMON_SOURCE_EVENT_UNKNOWN);

  return self->source_event_type;
}

/**
 * perfmon_task_get_dispatch_time:
 * @self: a `PerfmonTask`
 *
 * Gets when @self was dispatched (queued).
 *
 * Returns: the dispatch time, in monotonic microseconds
 *
 * Since: 0.1
 */
gint64
perfmon_task_get_dispatch_time (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->dispatch_ns / 1000;
}

/**
 * perfmon_task_get_dispatch_thread:
 * @self: a `PerfmonTask`
 *
 * Gets the thread that dispatched @self, in the process of
 * [method@Task.get_process].
 *
 * Returns: the thread id (as gettid() gives it) of the dispatching thread
 *
 * Since: 0.1
 */
guint
perfmon_task_get_dispatch_thread (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->dispatch_tid;
}

/**
 * perfmon_task_get_begin_time:
 * @self: a `PerfmonTask`
 *
 * Gets when the first run of @self began; see [method@Task.get_run] for
 * the others.
 *
 * Returns: the begin time in monotonic microseconds, or -1 if @self never
 *   ran
 *
 * Since: 0.1
 */
gint64
perfmon_task_get_begin_time (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, -1);

  if (self->runs->len == 0)
    return -1;

  return g_array_index (self->runs, PerfmonTaskRun, 0).begin_ns / 1000;
}

/**
 * perfmon_task_get_end_time:
 * @self: a `PerfmonTask`
 *
 * Gets when the first run of @self ended.
 *
 * Returns: the end time in monotonic microseconds, or -1 if @self never
 *   ran or the log ends while its first run was going on
 *
 * Since: 0.1
 */
gint64
perfmon_task_get_end_time (PerfmonTask *self)
{
  gint64 end_ns;

  g_return_val_if_fail (self != NULL, -1);

  if (self->runs->len == 0)
    return -1;

  end_ns = g_array_index (self->runs, PerfmonTaskRun, 0).end_ns;

  return end_ns < 0 ? -1 : end_ns / 1000;
}

/**
 * perfmon_task_get_queueing_time:
 * @self: a `PerfmonTask`
 *
 * Gets how long @self waited between when it was due and the beginning of
 * its first run: the time other tasks (see
 * [method@TaskLog.find_blockers]) kept it in its queue. A task is due at
 * its dispatch, a timeout (perfmon_timeout_add()) its interval later: a
 * 10 ms timeout that ran on time queued for about 0 ms, not 10.
 *
 * Returns: the queueing time in microseconds (0 if it ran before it was
 *   due), or -1 if @self never ran
 *
 * Since: 0.1
 */
gint64
perfmon_task_get_queueing_time (PerfmonTask *self)
{
  double queued_ns;

  g_return_val_if_fail (self != NULL, -1);

  if (self->runs->len == 0)
    return -1;

  /* In doubles: a corrupt file's times cannot overflow. */
  queued_ns = (double) g_array_index (self->runs, PerfmonTaskRun, 0).begin_ns - (double) _perfmon_task_due_ns (self);
  return queued_ns <= 0 ? 0 : (gint64) MIN (queued_ns / 1000.0, (double) G_MAXINT64 / 2);
}

gint64
_perfmon_task_due_ns (PerfmonTask *self)
{
  gint64 delay_ns = (gint64) self->delay_ms * 1000000;

  return self->dispatch_ns > G_MAXINT64 - delay_ns ? G_MAXINT64 : self->dispatch_ns + delay_ns;
}

/**
 * perfmon_task_get_n_runs:
 * @self: a `PerfmonTask`
 *
 * Gets how many times @self ran: 0 if it never did, more than 1 for a
 * repeating source.
 *
 * Returns: the number of runs of @self in the log
 *
 * Since: 0.1
 */
guint
perfmon_task_get_n_runs (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->runs->len;
}

/**
 * perfmon_task_get_run:
 * @self: a `PerfmonTask`
 * @index: which run, from 0 to [method@Task.get_n_runs] - 1, in the order
 *   they ran
 * @begin_time: (out) (optional): where to store when the run began, in
 *   monotonic microseconds
 * @end_time: (out) (optional): where to store when the run ended, in
 *   monotonic microseconds, or -1 if the log ends while it was going on
 *
 * Gets the times of one run of @self.
 *
 * Returns: %TRUE if @index is a run of @self; %FALSE (and nothing stored)
 *   if it is out of range
 *
 * Since: 0.1
 */
gboolean
perfmon_task_get_run (PerfmonTask *self,
                      guint        index,
                      gint64      *begin_time,
                      gint64      *end_time)
{
  const PerfmonTaskRun *run;

  g_return_val_if_fail (self != NULL, FALSE);

  if (index >= self->runs->len)
    return FALSE;

  run = &g_array_index (self->runs, PerfmonTaskRun, index);
  if (begin_time != NULL)
    *begin_time = run->begin_ns / 1000;
  if (end_time != NULL)
    *end_time = run->end_ns < 0 ? -1 : run->end_ns / 1000;

  return TRUE;
}

/**
 * perfmon_task_get_thread:
 * @self: a `PerfmonTask`
 *
 * Gets the thread @self ran on (its first run), in the process of
 * [method@Task.get_process].
 *
 * Returns: the thread id (as gettid() gives it), or 0 if @self never ran
 *
 * Since: 0.1
 */
guint
perfmon_task_get_thread (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  if (self->runs->len == 0)
    return 0;

  return g_array_index (self->runs, PerfmonTaskRun, 0).tid;
}

/**
 * perfmon_task_get_thread_name:
 * @self: a `PerfmonTask`
 *
 * Gets the name of the thread of [method@Task.get_thread].
 *
 * Returns: (nullable): the thread's name, or %NULL if @self never ran or
 *   the log does not name its thread
 *
 * Since: 0.1
 */
const char *
perfmon_task_get_thread_name (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->thread_name;
}

/**
 * perfmon_task_get_process:
 * @self: a `PerfmonTask`
 *
 * Gets the process @self belongs to.
 *
 * Returns: the pid of the process
 *
 * Since: 0.1
 */
guint
perfmon_task_get_process (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->pid;
}

/**
 * perfmon_task_get_process_name:
 * @self: a `PerfmonTask`
 *
 * Gets the name of the process of @self, as its log file gives it (at most
 * 31 bytes).
 *
 * Returns: the name of the process, possibly empty
 *
 * Since: 0.1
 */
const char *
perfmon_task_get_process_name (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->process_name;
}

/**
 * perfmon_task_get_name:
 * @self: a `PerfmonTask`
 *
 * Gets the name of the function @self runs, the symbol the tracer found
 * for it (the C counterpart of the class name that TaskTracer takes from a
 * runnable's vtable). A task the tracer made of a GSource dispatch on its
 * own (no dispatch wrapper) has the source's name instead, else its
 * callback's symbol, else its type.
 *
 * Returns: the name of the task, or "??" if unknown
 *
 * Since: 0.1
 */
const char *
perfmon_task_get_name (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->name;
}

/**
 * perfmon_task_get_n_labels:
 * @self: a `PerfmonTask`
 *
 * Gets how many labels code running as @self added.
 *
 * Returns: the number of labels of @self
 *
 * Since: 0.1
 */
guint
perfmon_task_get_n_labels (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->labels->len;
}

/**
 * perfmon_task_get_label:
 * @self: a `PerfmonTask`
 * @index: which label, from 0 to [method@Task.get_n_labels] - 1, by time
 * @time: (out) (optional): where to store when the label was added, in
 *   monotonic microseconds
 *
 * Gets one label of @self.
 *
 * Returns: (nullable): the text of the label, or %NULL if @index is out of
 *   range
 *
 * Since: 0.1
 */
const char *
perfmon_task_get_label (PerfmonTask *self,
                        guint        index,
                        gint64      *time)
{
  const PerfmonTaskLabel *label;

  g_return_val_if_fail (self != NULL, NULL);

  if (index >= self->labels->len)
    return NULL;

  label = &g_array_index (self->labels, PerfmonTaskLabel, index);
  if (time != NULL)
    *time = label->time_ns / 1000;

  return label->text;
}

/**
 * perfmon_task_get_labels:
 * @self: a `PerfmonTask`
 *
 * Gets the texts of all the labels of @self, by time.
 *
 * Returns: (transfer none) (array zero-terminated=1): the labels
 *
 * Since: 0.1
 */
const char * const *
perfmon_task_get_labels (PerfmonTask *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return (const char * const *) self->label_texts;
}
