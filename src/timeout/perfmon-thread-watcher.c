/* perfmon-thread-watcher.c: stuck-thread detection for worker threads
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-process-private.h"
#include "perfmon-error.h"
#include "perfmon-stack-capture-private.h"
#include "perfmon-thread-watcher.h"
#include "perfmon-timeout-watchdog-private.h"

/**
 * PerfmonThreadWatcher:
 *
 * Stuck-thread detection for worker threads (HiCollie's stuck detection).
 *
 * A worker thread registers with a watcher
 * (perfmon_thread_watcher_register(), on that thread) and then reports
 * that it is alive with perfmon_thread_watcher_report() at least once per
 * period (3 s by default, 3–15 s allowed), typically once per job or per
 * turn of its loop. A thread that waits for work must wake up to report
 * within the period too (wait with a timeout shorter than it).
 *
 * When a registered thread has not reported for one period, the watcher
 * takes its native stack, writes a log (see perfmon_timeout_set_log_dir())
 * and emits [signal@Perfmon.ThreadWatcher::stuck]; if it still has not
 * reported after two periods, it does so again, escalated. Once the thread
 * reports again, the next silence is reported anew.
 *
 * The checks run on perfmon's timeout watchdog thread, the one that also
 * serves the task timers ([func@Perfmon.timer_set]). A registration ends
 * with perfmon_thread_watcher_unregister() or when the thread exits, and
 * keeps the watcher alive until then.
 *
 * Threads: create the watcher on a thread whose thread-default
 * #GMainContext (at creation) runs: its signals are emitted there.
 * Register, unregister and report on the watched threads.
 *
 * Since: 0.1
 */

typedef struct
{
  gint                  ref_count;    /* atomic */
  PerfmonThreadWatcher *watcher;      /* a reference */
  char                 *name;
  gint64                tid;
  gint64                period_us;
  guint64               last_report;  /* atomic; _perfmon_clock_cycles() */

  /* Under the timeout lock. */
  guint64               seen_report;
  gint64                seen_report_us;  /* seen_report, monotonic */
  guint                 level;           /* 0, 1: stuck told, 2: escalated told */
} ThreadWatch;

struct _PerfmonThreadWatcher
{
  GObject       parent_instance;

  GMainContext *context;
};

enum {
  SIGNAL_STUCK,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (PerfmonThreadWatcher, perfmon_thread_watcher, G_TYPE_OBJECT)

/* The calling thread's registration, for a report without a lookup.
 * initial-exec: the default model would call __tls_get_addr. */
static __thread ThreadWatch *current_watch __attribute__ ((tls_model ("initial-exec")));

static void on_thread_exit (gpointer data);
/* Ends a registration left at thread exit. */
static GPrivate exit_key = G_PRIVATE_INIT (on_thread_exit);

/* Under the timeout lock: the registrations, each holding a reference. */
static GPtrArray *watches;

static ThreadWatch *
thread_watch_ref (ThreadWatch *watch)
{
  g_atomic_int_inc (&watch->ref_count);
  return watch;
}

static void
thread_watch_unref (ThreadWatch *watch)
{
  if (!g_atomic_int_dec_and_test (&watch->ref_count))
    return;
  g_object_unref (watch->watcher);
  g_free (watch->name);
  g_free (watch);
}

static void
end_registration (ThreadWatch *watch)
{
  gboolean listed;

  _perfmon_timeout_lock ();
  listed = g_ptr_array_remove_fast (watches, watch);
  _perfmon_timeout_unlock ();

  /* Outside the lock: the last reference may finalize the watcher, and
   * whatever that runs may set timers. */
  current_watch = NULL;
  if (listed)
    thread_watch_unref (watch);
  thread_watch_unref (watch);   /* the thread's */
}

static void
on_thread_exit (gpointer data)
{
  end_registration (data);
}

/**
 * perfmon_thread_watcher_new:
 *
 * Creates a watcher whose signals are emitted in the thread-default main
 * context of the calling thread.
 *
 * Returns: (transfer full): a new watcher
 *
 * Since: 0.1
 */
PerfmonThreadWatcher *
perfmon_thread_watcher_new (void)
{
  return g_object_new (PERFMON_TYPE_THREAD_WATCHER, NULL);
}

/**
 * perfmon_thread_watcher_register:
 * @self: a watcher
 * @name: the thread's name in reports and logs
 * @period_ms: how often the thread promises to report, in milliseconds:
 *   0 for %PERFMON_THREAD_WATCH_DEFAULT_PERIOD_MS, otherwise from
 *   %PERFMON_THREAD_WATCH_MIN_PERIOD_MS to %PERFMON_THREAD_WATCH_MAX_PERIOD_MS
 * @error: return location for a #GError
 *
 * Registers the calling thread: from now on it must call
 * perfmon_thread_watcher_report() at least once per @period_ms, or it is
 * reported stuck. Registering counts as a report. A thread registers with
 * one watcher at a time; the registration ends with
 * perfmon_thread_watcher_unregister() or when the thread exits.
 *
 * Fails with %PERFMON_ERROR_INVALID_ARGUMENT for a period out of range, no
 * name, or a thread already registered, and with
 * %PERFMON_ERROR_STACK_UNAVAILABLE if stacks cannot be taken in this
 * process (another handler owns the capture signal).
 *
 * Returns: %TRUE if the thread is registered
 *
 * Since: 0.1
 */
gboolean
perfmon_thread_watcher_register (PerfmonThreadWatcher  *self,
                                 const char            *name,
                                 guint                  period_ms,
                                 GError               **error)
{
  ThreadWatch *watch;

  g_return_val_if_fail (PERFMON_IS_THREAD_WATCHER (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (name == NULL || name[0] == '\0')
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "perfmon_thread_watcher_register: name must be a non-empty string");
      return FALSE;
    }
  if (period_ms == 0)
    period_ms = PERFMON_THREAD_WATCH_DEFAULT_PERIOD_MS;
  if (period_ms < PERFMON_THREAD_WATCH_MIN_PERIOD_MS || period_ms > PERFMON_THREAD_WATCH_MAX_PERIOD_MS)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_thread_watcher_register: period_ms of thread “%s” must be from %d to "
                   "%d ms (or 0 for the default %d ms), got %u",
                   name, PERFMON_THREAD_WATCH_MIN_PERIOD_MS, PERFMON_THREAD_WATCH_MAX_PERIOD_MS,
                   PERFMON_THREAD_WATCH_DEFAULT_PERIOD_MS, period_ms);
      return FALSE;
    }
  if (current_watch != NULL)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_thread_watcher_register: this thread is registered already, as “%s”; "
                   "unregister it first", current_watch->name);
      return FALSE;
    }
  if (!_perfmon_stack_capture_init (error))
    return FALSE;

  watch = g_new0 (ThreadWatch, 1);
  watch->ref_count = 2;   /* the thread's and the list's */
  watch->watcher = g_object_ref (self);
  watch->name = g_strdup (name);
  watch->tid = _perfmon_timeout_current_tid ();
  watch->period_us = (gint64) period_ms * 1000;
  watch->last_report = _perfmon_clock_cycles ();
  watch->seen_report = watch->last_report;
  watch->seen_report_us = g_get_monotonic_time ();

  _perfmon_timeout_lock ();
  if (watches == NULL)
    watches = g_ptr_array_new ();
  g_ptr_array_add (watches, watch);
  _perfmon_timeout_schedule_locked (watch->seen_report_us + watch->period_us);
  _perfmon_timeout_unlock ();

  current_watch = watch;
  g_private_set (&exit_key, watch);
  return TRUE;
}

/**
 * perfmon_thread_watcher_unregister:
 * @self: the watcher the calling thread registered with
 *
 * Ends the calling thread's registration: it is no longer watched.
 *
 * Since: 0.1
 */
void
perfmon_thread_watcher_unregister (PerfmonThreadWatcher *self)
{
  ThreadWatch *watch = current_watch;

  g_return_if_fail (PERFMON_IS_THREAD_WATCHER (self));

  if (watch == NULL || watch->watcher != self)
    {
      g_critical ("perfmon_thread_watcher_unregister: the calling thread is not registered "
                  "with this watcher");
      return;
    }

  g_private_set (&exit_key, NULL);
  end_registration (watch);
}

/**
 * perfmon_thread_watcher_report:
 *
 * Tells the watcher of the calling thread that the thread is alive. Does
 * nothing on a thread that is not registered.
 *
 * Costs a thread-local read, a cycle-counter read and a store: no lock, no
 * system call, no allocation.
 *
 * Since: 0.1
 */
void
perfmon_thread_watcher_report (void)
{
  ThreadWatch *watch = current_watch;

  if (G_LIKELY (watch != NULL))
    __atomic_store_n (&watch->last_report, _perfmon_clock_cycles (), __ATOMIC_RELAXED);
}

guint
_perfmon_thread_watcher_count_registrations (void)
{
  guint n;

  _perfmon_timeout_lock ();
  n = watches != NULL ? watches->len : 0;
  _perfmon_timeout_unlock ();
  return n;
}

/* --- the checks, on the watchdog thread -------------------------------- */

typedef struct
{
  PerfmonThreadWatcher *watcher;
  char                 *name;
  gint64                tid;
  gboolean              escalated;
  guint64               silent_ms;
  char                 *stack;
  char                 *log_path;
} Emission;

static void
emission_free (gpointer data)
{
  Emission *emission = data;

  g_object_unref (emission->watcher);
  g_free (emission->name);
  g_free (emission->stack);
  g_free (emission->log_path);
  g_free (emission);
}

static gboolean
emit_stuck (gpointer data)
{
  Emission *emission = data;

  g_signal_emit (emission->watcher, signals[SIGNAL_STUCK], 0,
                 emission->name, emission->tid, emission->escalated, emission->silent_ms,
                 emission->stack, emission->log_path);
  return G_SOURCE_REMOVE;
}

static void
report_stuck (ThreadWatch *watch,
              gboolean     escalated,
              gint64       silent_us)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) contents = g_string_new (NULL);
  g_autoptr(GSource) source = NULL;
  g_autofree char *thread = _perfmon_timeout_describe_thread (watch->tid);
  g_autofree char *dir = _perfmon_timeout_dup_log_dir ();
  Emission *emission = g_new0 (Emission, 1);

  emission->watcher = g_object_ref (watch->watcher);
  emission->name = g_strdup (watch->name);
  emission->tid = watch->tid;
  emission->escalated = escalated;
  emission->silent_ms = (guint64) MAX (silent_us, 0) / 1000;
  emission->stack = _perfmon_timeout_capture_stack_text (watch->tid, &error);

  g_string_append_printf (contents, "Thread stuck: %s\n", watch->name);
  g_string_append_printf (contents, "Level: %s\n", escalated ? "escalated" : "stuck");
  g_string_append_printf (contents, "No report for: %" G_GUINT64_FORMAT " ms (period %" G_GINT64_FORMAT " ms)\n",
                          emission->silent_ms, watch->period_us / 1000);
  g_string_append_printf (contents, "Process: %s (pid %d)\n",
                          _perfmon_process_name (), (int) getpid ());
  g_string_append_printf (contents, "Thread: %s\n", thread);
  if (emission->stack != NULL)
    g_string_append_printf (contents, "Stack:\n%s", emission->stack);
  else
    g_string_append_printf (contents, "Stack unavailable: %s\n", error->message);
  emission->log_path = _perfmon_timeout_write_log (dir, PERFMON_THREAD_STUCK_LOG_PREFIX, contents->str);

  source = g_idle_source_new ();
  g_source_set_name (source, "[perfmon] stuck thread signal");
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_callback (source, emit_stuck, emission, emission_free);
  g_source_attach (source, watch->watcher->context);
}

typedef struct
{
  ThreadWatch *watch;
  gboolean     escalated;
  gint64       silent_us;
} Due;

gint64
_perfmon_thread_watcher_run_due (gint64 now_us)
{
  g_autoptr(GArray) due = NULL;
  gint64 next_us = G_MAXINT64;

  _perfmon_timeout_lock ();
  for (guint i = 0; watches != NULL && i < watches->len; i++)
    {
      ThreadWatch *watch = g_ptr_array_index (watches, i);
      guint64 last = __atomic_load_n (&watch->last_report, __ATOMIC_RELAXED);
      gint64 deadline_us;

      if (last != watch->seen_report)
        {
          watch->seen_report = last;
          watch->seen_report_us = _perfmon_clock_cycles_to_monotonic_us (last);
          watch->level = 0;
        }

      /* Stuck after one period of silence, escalated after two; after
       * that, look once a period for the report that ends the silence. */
      deadline_us = watch->level < 2 ? watch->seen_report_us + (watch->level + 1) * watch->period_us
                                     : now_us + watch->period_us;
      if (watch->level < 2 && now_us >= deadline_us)
        {
          Due event = { thread_watch_ref (watch), watch->level == 1, now_us - watch->seen_report_us };

          if (due == NULL)
            due = g_array_new (FALSE, FALSE, sizeof (Due));
          g_array_append_val (due, event);
          watch->level++;
          deadline_us = watch->level < 2 ? watch->seen_report_us + 2 * watch->period_us
                                         : now_us + watch->period_us;
        }
      next_us = MIN (next_us, deadline_us);
    }
  _perfmon_timeout_unlock ();

  for (guint i = 0; due != NULL && i < due->len; i++)
    {
      Due *event = &g_array_index (due, Due, i);

      report_stuck (event->watch, event->escalated, event->silent_us);
      thread_watch_unref (event->watch);
    }

  return next_us;
}

/* --- GObject ------------------------------------------------------------- */

static void
perfmon_thread_watcher_finalize (GObject *object)
{
  PerfmonThreadWatcher *self = PERFMON_THREAD_WATCHER (object);

  g_main_context_unref (self->context);

  G_OBJECT_CLASS (perfmon_thread_watcher_parent_class)->finalize (object);
}

static void
perfmon_thread_watcher_class_init (PerfmonThreadWatcherClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = perfmon_thread_watcher_finalize;

  /**
   * PerfmonThreadWatcher::stuck:
   * @self: the watcher
   * @name: the name the thread registered with
   * @thread_id: the thread's kernel id
   * @escalated: %FALSE after one period without a report, %TRUE after two
   * @silent_ms: how long the thread had not reported, in milliseconds
   * @stack: (nullable): the thread's native stack when it was found
   *   stuck, in the jank seed's format, outermost frame first; %NULL if
   *   it could not be taken (the log says why)
   * @log_path: (nullable) (type filename): the log written, or %NULL if
   *   none could be
   *
   * Emitted, in the thread-default main context of the thread that created
   * the watcher, when a registered thread has not reported for one period
   * (then @escalated is %FALSE) and for two (%TRUE).
   *
   * Since: 0.1
   */
  signals[SIGNAL_STUCK] =
    g_signal_new ("stuck", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                  G_TYPE_NONE, 6,
                  G_TYPE_STRING, G_TYPE_INT64, G_TYPE_BOOLEAN, G_TYPE_UINT64,
                  G_TYPE_STRING, G_TYPE_STRING);
}

static void
perfmon_thread_watcher_init (PerfmonThreadWatcher *self)
{
  self->context = g_main_context_ref_thread_default ();
}
