/* perfmon-timer.c: named task timers (HiCollie's SetTimer)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfmon-enum-types.h"
#include "perfmon-process-private.h"
#include "perfmon-error.h"
#include "perfmon-timeout-watchdog-private.h"
#include "perfmon-timer.h"

/* The seed's rate limit of timeout logs: one per timer name a minute, so
 * a task that times out on every run does not fill the directory with
 * copies of one stack. */
#define LOG_INTERVAL_US (60 * G_USEC_PER_SEC)
/* Names remembered for the rate limit before stale ones are forgotten. */
#define MAX_LOGGED_NAMES 256

/* Ids: the slot in the low bits, the slot's generation above, never 0, so
 * that an id never is 0 and a stale id does not cancel the slot's next
 * timer (until the generation wraps, after 2^25 timers in that slot). */
#define SLOT_BITS 7
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define MAX_GENERATION ((G_MAXUINT >> SLOT_BITS))
G_STATIC_ASSERT (PERFMON_TIMER_MAX_LIVE == 1 << SLOT_BITS);

typedef struct
{
  guint                id;             /* 0: the slot is free */
  PerfmonTimerFlags    flags;
  guint                timeout_ms;
  gint64               deadline_us;    /* monotonic */
  gint64               set_real_us;
  gint64               tid;            /* of the thread that set it */
  char                *name;
  PerfmonTimerCallback callback;
  gpointer             user_data;
  GDestroyNotify       destroy;
} Timer;

/* Under the timeout lock. */
static Timer    timers[PERFMON_TIMER_MAX_LIVE];
static guint    generations[PERFMON_TIMER_MAX_LIVE];
static guint    free_slots[PERFMON_TIMER_MAX_LIVE];
static guint    n_free;
static gboolean slots_ready;

/* The watchdog's only. */
static GHashTable *last_log_us;        /* name → gint64 * (monotonic) */

static void
timer_clear (Timer *timer)
{
  g_free (timer->name);
  if (timer->destroy != NULL)
    timer->destroy (timer->user_data);
}

static gboolean
check_arguments (const char            *name,
                 guint                  timeout_ms,
                 PerfmonTimerFlags      flags,
                 PerfmonTimerCallback   callback,
                 GError               **error)
{
  const guint known = PERFMON_TIMER_FLAG_LOG | PERFMON_TIMER_FLAG_CALLBACK | PERFMON_TIMER_FLAG_RECOVERY;

  if (name == NULL || name[0] == '\0')
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "perfmon_timer_set: name must be a non-empty string");
      return FALSE;
    }
  if (timeout_ms == 0)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_timer_set: timeout_ms of timer “%s” must be at least 1 (got 0)", name);
      return FALSE;
    }
  if ((flags & ~known) != 0)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_timer_set: flags of timer “%s” has unknown bits 0x%x; allowed are "
                   "LOG, CALLBACK and RECOVERY", name, (guint) (flags & ~known));
      return FALSE;
    }
  if ((flags & PERFMON_TIMER_FLAG_CALLBACK) != 0 && callback == NULL)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_timer_set: flags of timer “%s” include CALLBACK but callback is NULL",
                   name);
      return FALSE;
    }
  if ((flags & PERFMON_TIMER_FLAG_CALLBACK) == 0 && callback != NULL)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "perfmon_timer_set: timer “%s” has a callback but its flags lack CALLBACK",
                   name);
      return FALSE;
    }
  return TRUE;
}

/**
 * perfmon_timer_set:
 * @name: what the timer watches, for logs and the callback
 * @timeout_ms: how long the task may take, in milliseconds (at least 1)
 * @flags: what to do if the timer expires
 * @callback: (scope notified) (nullable) (closure user_data) (destroy destroy):
 *   called on the watchdog thread if the timer expires; required with
 *   %PERFMON_TIMER_FLAG_CALLBACK, and only allowed with it
 * @user_data: data for @callback
 * @destroy: (nullable): frees @user_data
 * @error: return location for a #GError
 *
 * Sets a timer around a task, HiCollie's SetTimer: call it before the
 * task, and perfmon_timer_cancel() after it. If the task has not been
 * cancelled within @timeout_ms, the timer expires on the watchdog thread
 * and does what @flags say: %PERFMON_TIMER_FLAG_LOG writes a log with the
 * stack the thread that set the timer has at that moment (the task it is
 * stuck in), %PERFMON_TIMER_FLAG_CALLBACK calls @callback,
 * %PERFMON_TIMER_FLAG_RECOVERY then aborts the process.
 *
 * At most %PERFMON_TIMER_MAX_LIVE timers may be live (set, and neither
 * expired nor cancelled) at once; past that the call fails with
 * %PERFMON_ERROR_LIMIT_REACHED. Bad arguments fail with
 * %PERFMON_ERROR_INVALID_ARGUMENT. On failure @destroy is called at once.
 * Otherwise it is called once the timer is done: by perfmon_timer_cancel()
 * on the cancelling thread, or on the watchdog thread after the callback.
 *
 * Any thread may set timers. The cost is a string copy and a short
 * critical section under a process-wide mutex (no wait for the watchdog),
 * plus one futex wake when the new timer expires before everything the
 * watchdog already waits for. The watchdog thread starts with the first
 * timer and then sleeps until the nearest deadline, or without one while
 * no timer is live.
 *
 * Returns: the timer's id, never 0; 0 on failure
 *
 * Since: 0.1
 */
guint
perfmon_timer_set (const char            *name,
                   guint                  timeout_ms,
                   PerfmonTimerFlags      flags,
                   PerfmonTimerCallback   callback,
                   gpointer               user_data,
                   GDestroyNotify         destroy,
                   GError               **error)
{
  Timer timer = { 0, };
  guint slot;

  g_return_val_if_fail (error == NULL || *error == NULL, 0);

  if (!check_arguments (name, timeout_ms, flags, callback, error))
    {
      if (destroy != NULL)
        destroy (user_data);
      return 0;
    }

  timer.flags = flags;
  timer.timeout_ms = timeout_ms;
  timer.set_real_us = g_get_real_time ();
  timer.deadline_us = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  timer.tid = _perfmon_timeout_current_tid ();
  timer.name = g_strdup (name);
  timer.callback = callback;
  timer.user_data = user_data;
  timer.destroy = destroy;

  _perfmon_timeout_lock ();
  if (G_UNLIKELY (!slots_ready))
    {
      for (guint i = 0; i < PERFMON_TIMER_MAX_LIVE; i++)
        free_slots[i] = PERFMON_TIMER_MAX_LIVE - 1 - i;
      n_free = PERFMON_TIMER_MAX_LIVE;
      slots_ready = TRUE;
    }
  if (n_free == 0)
    {
      _perfmon_timeout_unlock ();
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED,
                   "perfmon_timer_set: cannot set timer “%s”: %d timers are live already, the "
                   "most a process may have; cancel some first", name, PERFMON_TIMER_MAX_LIVE);
      timer_clear (&timer);
      return 0;
    }
  slot = free_slots[--n_free];
  generations[slot] = generations[slot] % MAX_GENERATION + 1;
  timer.id = generations[slot] << SLOT_BITS | slot;
  timers[slot] = timer;
  _perfmon_timeout_schedule_locked (timer.deadline_us);
  _perfmon_timeout_unlock ();

  return timer.id;
}

/**
 * perfmon_timer_cancel:
 * @id: an id perfmon_timer_set() returned
 *
 * Cancels a timer: the task it watched finished in time. Calls the
 * timer's destroy notify, on the calling thread. Any thread may cancel
 * any timer. Cheap: a short critical section under the process-wide mutex,
 * never a wake-up of the watchdog.
 *
 * Returns: %TRUE if the timer was live; %FALSE if it already expired (its
 *   actions may still be running on the watchdog thread), was cancelled,
 *   or @id is no timer's
 *
 * Since: 0.1
 */
gboolean
perfmon_timer_cancel (guint id)
{
  guint slot = id & SLOT_MASK;
  Timer timer;

  if (id == 0)
    return FALSE;

  _perfmon_timeout_lock ();
  if (timers[slot].id != id)
    {
      _perfmon_timeout_unlock ();
      return FALSE;
    }
  /* The watchdog keeps its deadline: it wakes then, finds nothing due and
   * sleeps on. Cheaper than a wake-up now, and cancelling in time is what
   * timers are for. */
  timer = timers[slot];
  memset (&timers[slot], 0, sizeof timers[slot]);
  free_slots[n_free++] = slot;
  _perfmon_timeout_unlock ();

  timer_clear (&timer);
  return TRUE;
}

/* --- expiry, on the watchdog thread ------------------------------------ */

static gboolean
log_allowed (const char *name,
             gint64      now_us)
{
  gint64 *last;

  if (last_log_us == NULL)
    last_log_us = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

  last = g_hash_table_lookup (last_log_us, name);
  if (last != NULL && now_us - *last < LOG_INTERVAL_US)
    return FALSE;

  if (last == NULL)
    {
      if (g_hash_table_size (last_log_us) >= MAX_LOGGED_NAMES)
        {
          GHashTableIter iter;
          gpointer value;

          g_hash_table_iter_init (&iter, last_log_us);
          while (g_hash_table_iter_next (&iter, NULL, &value))
            if (now_us - *(gint64 *) value >= LOG_INTERVAL_US)
              g_hash_table_iter_remove (&iter);
        }
      /* Still full of names logged within the minute: stop logging new
       * ones rather than grow without bound. */
      if (g_hash_table_size (last_log_us) >= MAX_LOGGED_NAMES)
        return FALSE;
      last = g_new (gint64, 1);
      g_hash_table_insert (last_log_us, g_strdup (name), last);
    }
  *last = now_us;
  return TRUE;
}

static char *
format_real_time (gint64 real_us)
{
  g_autoptr(GDateTime) seconds = g_date_time_new_from_unix_local (real_us / G_USEC_PER_SEC);
  g_autoptr(GDateTime) time = g_date_time_add (seconds, real_us % G_USEC_PER_SEC);

  return g_date_time_format_iso8601 (time);
}

static void
write_timer_log (const Timer *timer)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) contents = g_string_new (NULL);
  g_autofree char *flags = g_flags_to_string (PERFMON_TYPE_TIMER_FLAGS, timer->flags);
  g_autofree char *set_at = format_real_time (timer->set_real_us);
  g_autofree char *expired_at = format_real_time (g_get_real_time ());
  g_autofree char *thread = _perfmon_timeout_describe_thread (timer->tid);
  g_autofree char *stack = _perfmon_timeout_capture_stack_text (timer->tid, &error);
  g_autofree char *dir = _perfmon_timeout_dup_log_dir ();
  g_autofree char *path = NULL;

  g_string_append_printf (contents, "Task timeout: %s\n", timer->name);
  g_string_append_printf (contents, "Timer id: %u\n", timer->id);
  g_string_append_printf (contents, "Timeout: %u ms\n", timer->timeout_ms);
  g_string_append_printf (contents, "Flags: %s\n", flags);
  g_string_append_printf (contents, "Set at: %s\n", set_at);
  g_string_append_printf (contents, "Expired at: %s\n", expired_at);
  g_string_append_printf (contents, "Process: %s (pid %d)\n",
                          _perfmon_process_name (), (int) getpid ());
  g_string_append_printf (contents, "Thread that set the timer: %s\n", thread);
  if (stack != NULL)
    g_string_append_printf (contents, "Stack of that thread:\n%s", stack);
  else
    g_string_append_printf (contents, "Stack of that thread unavailable: %s\n", error->message);

  path = _perfmon_timeout_write_log (dir, PERFMON_TIMEOUT_LOG_PREFIX, contents->str);
  if (path != NULL)
    g_debug ("Timer “%s” expired: wrote %s", timer->name, path);
}

static void
expire (Timer *timer)
{
  gboolean recovery = (timer->flags & PERFMON_TIMER_FLAG_RECOVERY) != 0;

  if ((timer->flags & PERFMON_TIMER_FLAG_LOG) != 0 &&
      (log_allowed (timer->name, g_get_monotonic_time ()) || recovery))
    write_timer_log (timer);

  if ((timer->flags & PERFMON_TIMER_FLAG_CALLBACK) != 0)
    timer->callback (timer->id, timer->name, timer->user_data);

  if (recovery)
    {
      g_printerr ("perfmon: task “%s” did not finish within %u ms (timer %u, flag RECOVERY): "
                  "aborting\n", timer->name, timer->timeout_ms, timer->id);
      abort ();
    }

  timer_clear (timer);
}

static int
compare_deadlines (const void *a,
                   const void *b)
{
  const Timer *ta = a;
  const Timer *tb = b;

  return ta->deadline_us < tb->deadline_us ? -1 : ta->deadline_us > tb->deadline_us;
}

gint64
_perfmon_timer_run_due (gint64 now_us)
{
  Timer due[PERFMON_TIMER_MAX_LIVE];
  guint n_due = 0;
  gint64 next_us = G_MAXINT64;

  _perfmon_timeout_lock ();
  for (guint slot = 0; slot < PERFMON_TIMER_MAX_LIVE; slot++)
    {
      Timer *timer = &timers[slot];

      if (timer->id == 0)
        continue;
      if (timer->deadline_us > now_us)
        {
          next_us = MIN (next_us, timer->deadline_us);
          continue;
        }
      /* Expired: no longer live, so it can neither be cancelled nor count
       * towards the limit while its actions run. */
      due[n_due++] = *timer;
      memset (timer, 0, sizeof *timer);
      free_slots[n_free++] = slot;
    }
  _perfmon_timeout_unlock ();

  /* Slots are in no order; timers that expired together act in the order
   * of their deadlines. */
  qsort (due, n_due, sizeof (Timer), compare_deadlines);
  for (guint i = 0; i < n_due; i++)
    expire (&due[i]);

  return next_us;
}
