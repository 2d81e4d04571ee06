/* perfmon-loop-activity.c: the busy stretches of a loop, for a watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The watched thread publishes (busy_begin/busy_end from the monitor's
 * poll wrapper and work units, idle_begin/idle_end for deliberate waits,
 * the longest dispatches from the dispatch hook); the watchdog of hang/
 * reads the ring and sleeps here. The protocol between the two sides is in
 * perfmon-loop-activity-private.h.
 */
#include "config.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-utf8.h"

void
_perfmon_loop_activity_init (PerfmonLoopActivity *activity)
{
  memset (activity, 0, sizeof *activity);
  activity->stretches = g_new0 (PerfmonLoopStretch, PERFMON_LOOP_RECENT_STRETCHES);
  activity->dispatch_lists = g_new0 (PerfmonLoopDispatchList, PERFMON_LOOP_RECENT_DISPATCH_LISTS);
}

/* --- the watched thread's side ----------------------------------------- */

/* The activity that adopted the calling thread, for its deliberate waits. */
static __thread PerfmonLoopActivity *current_activity;
static __thread guint idle_depth;

void
_perfmon_loop_activity_clear (PerfmonLoopActivity *activity)
{
  if (current_activity == activity)
    current_activity = NULL;
  g_clear_pointer (&activity->stretches, g_free);
  g_clear_pointer (&activity->dispatch_lists, g_free);
  g_clear_pointer (&activity->marks, g_free);
}

G_GNUC_NO_INLINE __attribute__ ((cold)) void
_perfmon_loop_activity_adopt_thread (PerfmonLoopActivity *activity)
{
  current_activity = activity;
  if (activity->prepare_thread != NULL)
    activity->prepare_thread ();
  __atomic_store_n (&activity->thread_id, (gint64) syscall (SYS_gettid), __ATOMIC_RELEASE);
}

void
_perfmon_loop_activity_idle_begin (void)
{
  PerfmonLoopActivity *activity = current_activity;

  if (idle_depth++ == 0 && activity != NULL && g_atomic_int_get (&activity->watched))
    _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
}

void
_perfmon_loop_activity_idle_end (void)
{
  PerfmonLoopActivity *activity = current_activity;

  if (idle_depth == 0)
    {
      g_critical ("perfmon_deliberate_wait_end: no deliberate wait was begun on this thread");
      return;
    }
  if (--idle_depth == 0 && activity != NULL && g_atomic_int_get (&activity->watched))
    _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
}

/* --- the watchdog's side ----------------------------------------------- */

gboolean
_perfmon_loop_activity_watch (PerfmonLoopActivity *activity,
                              void               (*prepare_thread) (void))
{
  activity->prepare_thread = prepare_thread;
  if (!g_atomic_int_compare_and_exchange (&activity->watched, FALSE, TRUE))
    return FALSE;
  g_atomic_int_set (&activity->phase, PERFMON_LOOP_IDLE);
  g_atomic_int_set (&activity->stopping, FALSE);
  return TRUE;
}

void
_perfmon_loop_activity_after_fork (PerfmonLoopActivity *activity)
{
  __atomic_store_n (&activity->thread_id,
                    current_activity == activity ? (gint64) syscall (SYS_gettid) : 0,
                    __ATOMIC_RELEASE);
}

void
_perfmon_loop_activity_unwatch (PerfmonLoopActivity *activity)
{
  g_atomic_int_set (&activity->watched, FALSE);
}

void
_perfmon_loop_activity_stop_watcher (PerfmonLoopActivity *activity)
{
  g_atomic_int_set (&activity->stopping, TRUE);
  _perfmon_futex_bump_and_wake (&activity->wake_seq, G_MAXINT);
}

gboolean
_perfmon_loop_activity_watcher_stopping (PerfmonLoopActivity *activity)
{
  return g_atomic_int_get (&activity->stopping);
}

void
_perfmon_loop_activity_sleep_until (PerfmonLoopActivity *activity,
                                    gint64               until_us)
{
  guint seq = _perfmon_futex_read (&activity->wake_seq);

  if (!g_atomic_int_get (&activity->stopping))
    _perfmon_futex_wait_until (&activity->wake_seq, seq, until_us);
}

void
_perfmon_loop_activity_sleep_until_end (PerfmonLoopActivity *activity,
                                        guint64              index,
                                        const guint64       *n_exact_ends,
                                        gint64               until_us)
{
  guint seq = _perfmon_futex_read (&activity->wake_seq);

  /* The count first, then the wishes, then the checks: a wake-up by the
   * thread after the count was read cannot be slept through. If busy_end
   * missed the wish, this sees the stretch over (or, the thread's store
   * not seen yet, sleeps to the deadline, as without); exact_end, fenced,
   * either sees its wish or is seen here. */
  __atomic_store_n (&activity->watcher_wants_end, 1, __ATOMIC_SEQ_CST);
  if (n_exact_ends != NULL)
    __atomic_store_n (&activity->watcher_wants_exact_end, 1, __ATOMIC_SEQ_CST);
  if (!g_atomic_int_get (&activity->stopping) &&
      (n_exact_ends == NULL || __atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST) == *n_exact_ends) &&
      g_atomic_int_get (&activity->phase) == PERFMON_LOOP_BUSY &&
      __atomic_load_n (&activity->n_stretches, __ATOMIC_SEQ_CST) == index)
    _perfmon_futex_wait_until (&activity->wake_seq, seq, until_us);
  if (n_exact_ends != NULL)
    __atomic_store_n (&activity->watcher_wants_exact_end, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&activity->watcher_wants_end, 0, __ATOMIC_RELAXED);
}

gboolean
_perfmon_loop_activity_sleep_while_idle (PerfmonLoopActivity *activity,
                                         gint64               until_us)
{
  guint seq = _perfmon_futex_read (&activity->wake_seq);

  if (g_atomic_int_get (&activity->phase) != PERFMON_LOOP_IDLE ||
      g_atomic_int_compare_and_exchange (&activity->phase, PERFMON_LOOP_IDLE,
                                         PERFMON_LOOP_IDLE_WATCHER_ASLEEP))
    {
      /* The thread sees ASLEEP at its next busy_begin and wakes us, with
       * a deadline (a jank session's next sample) as without: a stretch
       * that began and ended before the deadline would go unseen. Wait
       * while the wish to be woken stands: once the thread took it (and
       * maybe is idle again), look afresh. The count is read before each
       * look: the thread's exchange, and so its wake-up, came after the
       * compare-and-swap above. */
      while (!g_atomic_int_get (&activity->stopping) &&
             g_atomic_int_get (&activity->phase) == PERFMON_LOOP_IDLE_WATCHER_ASLEEP)
        {
          if (!_perfmon_futex_wait_until (&activity->wake_seq, seq, until_us))
            break;
          seq = _perfmon_futex_read (&activity->wake_seq);
        }
      /* The deadline passed: take the wish back, so that the next
       * busy_begin makes no system call for a watchdog already awake.
       * If the thread took it first, it is busy, and it woke us. */
      if (until_us != G_MAXINT64)
        g_atomic_int_compare_and_exchange (&activity->phase, PERFMON_LOOP_IDLE_WATCHER_ASLEEP,
                                           PERFMON_LOOP_IDLE);
      return TRUE;
    }
  return FALSE;   /* the thread began a stretch: the CAS failed */
}

/* --- the longest dispatches of a busy stretch --------------------------- */

void
_perfmon_loop_activity_note_dispatch (PerfmonLoopActivity *activity,
                                      const char          *name,
                                      guint64              cycles)
{
  guint64 index = __atomic_load_n (&activity->n_stretches, __ATOMIC_RELAXED);
  PerfmonLoopDispatchList *list = &activity->dispatch_lists[index & (PERFMON_LOOP_RECENT_DISPATCH_LISTS - 1)];
  guint64 since_begin = _perfmon_clock_cycles () -
    __atomic_load_n (&_perfmon_loop_activity_stretch (activity, index)->begin, __ATOMIC_RELAXED);
  guint seq = list->seq;
  guint n;
  guint at;
  guint64 words[PERFMON_LOOP_DISPATCH_NAME_WORDS] = { 0, };
  gsize length = strlen (name);

  /* A dispatch that spun a nested loop began in an earlier stretch: only
   * its part in this one counts here. */
  cycles = MIN (cycles, since_begin);

  /* A seqlock by the C11 model, without fences (ThreadSanitizer models
   * none): every store after the odd count is a release, so none is seen
   * before it; the reader's loads are acquires. Plain moves on x86. */
  __atomic_store_n (&list->seq, seq + 1, __ATOMIC_RELAXED);

  if (__atomic_load_n (&list->stretch, __ATOMIC_RELAXED) != index)
    {
      __atomic_store_n (&list->stretch, index, __ATOMIC_RELEASE);
      __atomic_store_n (&list->n, 0, __ATOMIC_RELEASE);
      __atomic_store_n (&list->n_total, 0, __ATOMIC_RELEASE);
    }
  n = list->n;
  __atomic_store_n (&list->n_total, list->n_total + 1, __ATOMIC_RELEASE);

  /* Longest first; the shortest falls off a full list. */
  for (at = 0; at < n && list->dispatches[at].cycles >= cycles; at++)
    ;
  if (at < PERFMON_LOOP_DISPATCHES)
    {
      guint last = MIN (n, PERFMON_LOOP_DISPATCHES - 1);

      for (guint i = last; i > at; i--)
        {
          __atomic_store_n (&list->dispatches[i].cycles, list->dispatches[i - 1].cycles, __ATOMIC_RELEASE);
          for (guint w = 0; w < PERFMON_LOOP_DISPATCH_NAME_WORDS; w++)
            __atomic_store_n (&list->dispatches[i].name[w], list->dispatches[i - 1].name[w], __ATOMIC_RELEASE);
        }
      memcpy (words, name, _perfmon_utf8_cut (name, length, sizeof words - 1));
      __atomic_store_n (&list->dispatches[at].cycles, cycles, __ATOMIC_RELEASE);
      for (guint w = 0; w < PERFMON_LOOP_DISPATCH_NAME_WORDS; w++)
        __atomic_store_n (&list->dispatches[at].name[w], words[w], __ATOMIC_RELEASE);
      if (n < PERFMON_LOOP_DISPATCHES)
        __atomic_store_n (&list->n, n + 1, __ATOMIC_RELEASE);
    }

  __atomic_store_n (&list->seq, seq + 2, __ATOMIC_RELEASE);

  /* A mark too: a few stores, only for a dispatch as long as a consumer
   * asked for (a few a second at most). */
  {
    guint64 min_cycles = __atomic_load_n (&activity->mark_min_cycles, __ATOMIC_ACQUIRE);

    if (min_cycles != 0 && cycles >= min_cycles)
      {
        guint64 n_marks = __atomic_load_n (&activity->n_marks, __ATOMIC_RELAXED);
        PerfmonLoopMark *marks = __atomic_load_n (&activity->marks, __ATOMIC_ACQUIRE);
        PerfmonLoopMark *mark = &marks[n_marks & (PERFMON_LOOP_MARKS - 1)];

        __atomic_store_n (&mark->seq, 2 * n_marks + 1, __ATOMIC_RELAXED);
        __atomic_store_n (&mark->end, since_begin + __atomic_load_n (&_perfmon_loop_activity_stretch (
                            activity, index)->begin, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
        __atomic_store_n (&mark->cycles, cycles, __ATOMIC_RELEASE);
        memset (words, 0, sizeof words);
        memcpy (words, name, _perfmon_utf8_cut (name, length, sizeof words - 1));
        for (guint w = 0; w < PERFMON_LOOP_DISPATCH_NAME_WORDS; w++)
          __atomic_store_n (&mark->name[w], words[w], __ATOMIC_RELEASE);
        __atomic_store_n (&mark->seq, 2 * n_marks + 2, __ATOMIC_RELEASE);
        __atomic_store_n (&activity->n_marks, n_marks + 1, __ATOMIC_RELEASE);
      }
  }
}

void
_perfmon_loop_activity_set_mark_min_cycles (PerfmonLoopActivity *activity,
                                            guint64              min_cycles)
{
  /* Allocated once, before any mark is asked for, and kept: the thread
   * may be writing one as this is stopped. */
  if (min_cycles != 0 && activity->marks == NULL)
    __atomic_store_n (&activity->marks, g_new0 (PerfmonLoopMark, PERFMON_LOOP_MARKS), __ATOMIC_RELEASE);
  __atomic_store_n (&activity->mark_min_cycles, min_cycles, __ATOMIC_RELEASE);
}

guint
_perfmon_loop_activity_read_marks (PerfmonLoopActivity *activity,
                                   guint64             *next,
                                   PerfmonLoopMarkCopy *out,
                                   guint                max_out,
                                   guint64             *lost)
{
  guint64 n_marks = __atomic_load_n (&activity->n_marks, __ATOMIC_ACQUIRE);
  PerfmonLoopMark *marks = __atomic_load_n (&activity->marks, __ATOMIC_ACQUIRE);
  guint n = 0;

  *lost = 0;
  if (marks == NULL)
    return 0;
  if (n_marks - *next > PERFMON_LOOP_MARKS)
    {
      *lost = n_marks - PERFMON_LOOP_MARKS - *next;
      *next = n_marks - PERFMON_LOOP_MARKS;
    }
  for (; *next < n_marks && n < max_out; (*next)++)
    {
      PerfmonLoopMark *mark = &marks[*next & (PERFMON_LOOP_MARKS - 1)];
      guint64 words[PERFMON_LOOP_DISPATCH_NAME_WORDS];
      guint64 seq = 2 * *next + 2;

      if (__atomic_load_n (&mark->seq, __ATOMIC_ACQUIRE) != seq)
        {
          (*lost)++;
          continue;
        }
      out[n].end = __atomic_load_n (&mark->end, __ATOMIC_ACQUIRE);
      out[n].cycles = __atomic_load_n (&mark->cycles, __ATOMIC_ACQUIRE);
      for (guint w = 0; w < PERFMON_LOOP_DISPATCH_NAME_WORDS; w++)
        words[w] = __atomic_load_n (&mark->name[w], __ATOMIC_ACQUIRE);
      if (__atomic_load_n (&mark->seq, __ATOMIC_ACQUIRE) != seq)
        {
          (*lost)++;
          continue;
        }
      memcpy (out[n].name, words, sizeof out[n].name);
      out[n].name[sizeof out[n].name - 1] = '\0';
      n++;
    }
  return n;
}

guint
_perfmon_loop_activity_read_dispatches (PerfmonLoopActivity     *activity,
                                        guint64                  index,
                                        PerfmonLoopDispatchCopy *out)
{
  PerfmonLoopDispatchList *list = &activity->dispatch_lists[index & (PERFMON_LOOP_RECENT_DISPATCH_LISTS - 1)];
  guint seq = __atomic_load_n (&list->seq, __ATOMIC_ACQUIRE);
  guint n;

  if (seq & 1 || __atomic_load_n (&list->stretch, __ATOMIC_RELAXED) != index)
    return 0;

  n = MIN (__atomic_load_n (&list->n, __ATOMIC_ACQUIRE), PERFMON_LOOP_DISPATCHES);
  for (guint i = 0; i < n; i++)
    {
      guint64 words[PERFMON_LOOP_DISPATCH_NAME_WORDS];

      out[i].cycles = __atomic_load_n (&list->dispatches[i].cycles, __ATOMIC_ACQUIRE);
      for (guint w = 0; w < PERFMON_LOOP_DISPATCH_NAME_WORDS; w++)
        words[w] = __atomic_load_n (&list->dispatches[i].name[w], __ATOMIC_ACQUIRE);
      memcpy (out[i].name, words, sizeof out[i].name);
      out[i].name[sizeof out[i].name - 1] = '\0';
    }

  if (__atomic_load_n (&list->seq, __ATOMIC_RELAXED) != seq ||
      __atomic_load_n (&list->stretch, __ATOMIC_RELAXED) != index)
    return 0;
  return n;
}
