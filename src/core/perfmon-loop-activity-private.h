/* perfmon-loop-activity-private.h: what a monitored loop is doing, for a watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-futex-private.h"

G_BEGIN_DECLS

/* The busy stretches of a monitored thread's loop, published by the thread
 * for a watchdog on another thread (see perfmon-loop-activity.c). A loop is
 * busy from a poll's return to the next poll's entry, a thread without a
 * loop for each unit of work; a deliberate wait is idle time.
 *
 * The watched thread: _perfmon_loop_activity_busy_begin() and _busy_end()
 * (from the monitor's poll wrapper and work units), _idle_begin() and
 * _idle_end() (deliberate waits). The watchdog: the stretches' ring,
 * _sleep_while_idle() and _sleep_until(), and the dispatch lists.
 *
 * The watched thread pays a few plain stores and one atomic exchange per
 * stretch, and makes a system call only at a busy_begin after an idle time
 * the watchdog slept through (until the thread wakes it, or until a
 * deadline that has not passed yet), at a busy_end the watchdog asked
 * to be woken at (watcher_wants_end, for stretches that begin seldom), and
 * at the end of a dispatch or handler charged exactly that the watchdog
 * waits for (watcher_wants_exact_end: see _perfmon_loop_activity_exact_end()). That
 * is what lets the watchdog sleep without any deadline while the loop
 * waits, yet never miss a busy stretch:
 *
 *   thread, busy_begin:   stretches[n+1].begin = now; n_stretches = n + 1;
 *                         old = exchange (phase, BUSY);
 *                         if old == IDLE_WATCHER_ASLEEP: wake the watchdog
 *   thread, busy_end:     stretches[n].end = now; if phase == BUSY: phase = IDLE;
 *                         if exchange (watcher_wants_end, 0): wake the watchdog
 *   thread, exact_end:    n_exact_ends++;
 *                         if exchange (watcher_wants_exact_end, 0): wake the watchdog
 *                         (at an outermost dispatch's end: at the next dispatch's
 *                         beginning, or busy_end's wake-up stands for it)
 *   watchdog, to sleep:   read wake_seq, CAS phase IDLE → IDLE_WATCHER_ASLEEP,
 *                         and wait on the futex while it stays so (reading
 *                         wake_seq again before each look); at a deadline,
 *                         CAS it back to IDLE
 *   wake the watchdog:    wake_seq++, then FUTEX_WAKE
 *
 * The exchange and the compare-and-swap order the two sides: either the
 * watchdog sees BUSY and does not sleep, or the thread sees ASLEEP and
 * wakes it.
 */

typedef enum
{
  PERFMON_LOOP_IDLE = 0,
  PERFMON_LOOP_BUSY = 1,
  PERFMON_LOOP_IDLE_WATCHER_ASLEEP = 2,
} PerfmonLoopPhase;

/* Recent stretches kept for a trace of the loop; a power of two. */
#define PERFMON_LOOP_RECENT_STRETCHES 256

typedef struct
{
  guint64 begin;   /* _perfmon_clock_cycles() at busy_begin */
  guint64 end;     /* at the next busy_end; 0 while still busy */
} PerfmonLoopStretch;

/* The longest dispatches of a busy stretch, for the hang report that
 * names what took the time. Written by the thread's dispatch hook (see
 * perfmon-automatic.c) for dispatches of PERFMON_LOOP_DISPATCH_MIN_US or
 * more while `watched` is set, read by the watchdog after the stretch
 * ended. A seqlock: the thread makes `seq` odd while it writes; every
 * field is read and written with relaxed atomics. */
#define PERFMON_LOOP_DISPATCHES 8
#define PERFMON_LOOP_DISPATCH_NAME_WORDS 12   /* 96 bytes, NUL included */
#define PERFMON_LOOP_DISPATCH_MIN_US 1000
/* Lists kept, one per recent stretch; a power of two. */
#define PERFMON_LOOP_RECENT_DISPATCH_LISTS 16

typedef struct
{
  guint64 cycles;
  guint64 name[PERFMON_LOOP_DISPATCH_NAME_WORDS];   /* NUL-terminated UTF-8 */
} PerfmonLoopDispatch;

typedef struct
{
  guint               seq;           /* atomic */
  guint               n;             /* kept, longest first */
  guint64             stretch;       /* the stretch's index */
  guint64             n_total;       /* dispatches noted in the stretch */
  PerfmonLoopDispatch dispatches[PERFMON_LOOP_DISPATCHES];
} PerfmonLoopDispatchList;

/* What the watchdog copies out of a list. */
typedef struct
{
  guint64 cycles;
  char    name[PERFMON_LOOP_DISPATCH_NAME_WORDS * 8];
} PerfmonLoopDispatchCopy;

/* Dispatches of at least `mark_min_cycles` (0: none), for a consumer of
 * the loop's marks (hang/'s Sysprof writer) that reads them from its own
 * thread every now and then: a ring the thread writes and never waits on,
 * each slot under its own sequence number (2 × its write count + 2 once
 * written, odd while being written). A reader that falls more than
 * PERFMON_LOOP_MARKS behind loses the oldest, and knows it. */
#define PERFMON_LOOP_MARKS 256

typedef struct
{
  guint64 seq;
  guint64 end;      /* _perfmon_clock_cycles() at the dispatch's end */
  guint64 cycles;   /* its length */
  guint64 name[PERFMON_LOOP_DISPATCH_NAME_WORDS];   /* NUL-terminated UTF-8 */
} PerfmonLoopMark;

typedef struct
{
  guint64 end;
  guint64 cycles;
  char    name[PERFMON_LOOP_DISPATCH_NAME_WORDS * 8];
} PerfmonLoopMarkCopy;

typedef struct
{
  /* The thread's side. `watched` is set before the watchdog starts and
   * cleared after it stopped. */
  gint               watched;        /* atomic gboolean */
  gint               phase;          /* atomic PerfmonLoopPhase */
  guint64            n_stretches;    /* atomic; the current one's index */
  gint64             thread_id;      /* atomic; kernel tid, 0 until adopted */
  /* Set by the watchdog's side before `watched`: called once on the
   * watched thread, at its first watched stretch, before thread_id is set
   * (hang/ prepares the thread for stack captures there). */
  void             (*prepare_thread) (void);
  /* PERFMON_LOOP_RECENT_STRETCHES of them, out of line: the header above
   * shares the monitor's hot page, the ring is touched only when watched. */
  PerfmonLoopStretch *stretches;
  /* PERFMON_LOOP_RECENT_DISPATCH_LISTS of them, out of line too. */
  PerfmonLoopDispatchList *dispatch_lists;
  /* Marks: PERFMON_LOOP_MARKS of them, allocated by the first consumer
   * (_perfmon_loop_activity_set_mark_min_cycles()), then kept. */
  guint64            mark_min_cycles;  /* atomic; 0: no marks */
  guint64            n_marks;          /* atomic: written so far */
  PerfmonLoopMark   *marks;

  /* The watchdog's sleep: an event count, a futex word
   * (perfmon-futex-private.h). The watchdog
   * reads it, then checks what it waits for, then sleeps while it still
   * holds what it read; a wake-up bumps it, then wakes the sleeper. No
   * lock on either side: with a mutex and a GCond, the woken watchdog
   * went back to sleep for the mutex the thread signalled under, and the
   * thread's unlock woke it again, two sleeps and two system calls per
   * wake-up (and GLib 2.74's GCond, signalled after the unlock, lost one
   * under ThreadSanitizer: test-hang-monitor, /hang-monitor/report). */
  guint              wake_seq;       /* atomic; the futex word */
  guint64            n_wakes;        /* atomic: wake-ups the thread sent */
  gint               stopping;       /* atomic gboolean */
  /* Atomic: the watchdog, asleep until a deadline of a stretch of a loop
   * that wakes rarely, would rather be woken when the stretch ends. Read
   * by busy_end only, so only where the loop goes to sleep. */
  gint               watcher_wants_end;
  /* Atomic: the watchdog, asleep while the thread runs something it need
   * not sample (a dispatch or handler charged exactly: see the JS
   * sampler), would rather be woken when that ends. Exchanged by
   * _perfmon_loop_activity_exact_end(), which counts the ends in
   * n_exact_ends (written by the thread only) for the watchdog's check
   * before it sleeps. */
  gint               watcher_wants_exact_end;
  guint64            n_exact_ends;
  /* When the last outermost dispatch counted in n_exact_ends ended
   * (cycles; atomic, stored before the count): a watchdog that learns of
   * the end late knows when the exactly charged part stopped. */
  guint64            last_exact_end;
  /* The thread's own: an outermost dispatch's end took the watchdog's
   * wish, and the wake-up waits for what the thread does next (see
   * _perfmon_loop_activity_dispatch_exact_end()). */
  gboolean           exact_wake_pending;
} PerfmonLoopActivity;

/* Allocates the rings; an activity lives as long as its monitor. */
void _perfmon_loop_activity_init  (PerfmonLoopActivity *activity);
void _perfmon_loop_activity_clear (PerfmonLoopActivity *activity);

static inline PerfmonLoopStretch *
_perfmon_loop_activity_stretch (PerfmonLoopActivity *activity,
                                guint64              index)
{
  return &activity->stretches[index & (PERFMON_LOOP_RECENT_STRETCHES - 1)];
}

/* --- the watched thread's side --------------------------------------- */

/* At a busy_begin after an idle time the watchdog slept through: a system
 * call more does not show then. Inline: out of line,
 * GCC computes its argument on the poll wrapper's hot path. The count is
 * bumped before the futex is woken, so that a watchdog about to sleep
 * with the old count does not (see wake_seq). */
static inline void
_perfmon_loop_activity_wake_watcher (PerfmonLoopActivity *activity)
{
  __atomic_fetch_add (&activity->n_wakes, 1, __ATOMIC_RELAXED);
  _perfmon_futex_bump_and_wake (&activity->wake_seq, 1);
}

/* A busy stretch begins at @now_cycles (a poll returned, a unit of work
 * begins). Call it only while `watched` is set, after
 * _perfmon_loop_activity_adopt_thread(). */
static inline void
_perfmon_loop_activity_busy_begin (PerfmonLoopActivity *activity,
                                   guint64              now_cycles)
{
  guint64 n = __atomic_load_n (&activity->n_stretches, __ATOMIC_RELAXED) + 1;
  PerfmonLoopStretch *stretch = _perfmon_loop_activity_stretch (activity, n);

  __atomic_store_n (&stretch->begin, now_cycles, __ATOMIC_RELAXED);
  __atomic_store_n (&stretch->end, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&activity->n_stretches, n, __ATOMIC_RELEASE);
  if (G_UNLIKELY (__atomic_exchange_n (&activity->phase, PERFMON_LOOP_BUSY, __ATOMIC_SEQ_CST) ==
                  PERFMON_LOOP_IDLE_WATCHER_ASLEEP))
    _perfmon_loop_activity_wake_watcher (activity);
}

/* The busy stretch ends at @now_cycles (a poll begins, a unit of work
 * ends). */
static inline void
_perfmon_loop_activity_busy_end (PerfmonLoopActivity *activity,
                                 guint64              now_cycles)
{
  guint64 n = __atomic_load_n (&activity->n_stretches, __ATOMIC_RELAXED);

  __atomic_store_n (&_perfmon_loop_activity_stretch (activity, n)->end, now_cycles, __ATOMIC_RELAXED);
  /* Only a BUSY phase becomes IDLE: the watchdog never changes BUSY, so
   * this plain store races with nothing, while storing over a phase that
   * is already IDLE_WATCHER_ASLEEP (before the loop's first watched
   * stretch) would lose the watchdog's wish to be woken. */
  if (__atomic_load_n (&activity->phase, __ATOMIC_RELAXED) == PERFMON_LOOP_BUSY)
    __atomic_store_n (&activity->phase, PERFMON_LOOP_IDLE, __ATOMIC_RELEASE);
  /* The watchdog would rather wake now, while the process runs, than at
   * its deadline, after the loop has slept: see watcher_wants_end. If it
   * asks just after this load, it wakes at the deadline, as without. */
  if (G_UNLIKELY (__atomic_load_n (&activity->watcher_wants_end, __ATOMIC_RELAXED)) &&
      __atomic_exchange_n (&activity->watcher_wants_end, 0, __ATOMIC_RELAXED))
    _perfmon_loop_activity_wake_watcher (activity);
  /* A wake-up left pending by a dispatch's end: the watchdog asked for the
   * stretch's end too (and was woken just now), or it woke by itself
   * since, and sees the stretch over when it looks. */
  activity->exact_wake_pending = FALSE;
}

/* Something that may have been charged exactly ended on the watched
 * thread: a dispatch that the monitor left the slow way (25 µs or more:
 * never its lean leave) or a JavaScript handler of an add-on's site.
 * Wakes the watchdog if it sleeps until then
 * (_perfmon_loop_activity_sleep_until_end() with a count). Two locked
 * instructions: the count's store and the wish's exchange are ordered
 * with the watchdog's store of the wish and load of the count, so that
 * either this sees the wish or the watchdog sees the count moved. */
static inline void
_perfmon_loop_activity_exact_end (PerfmonLoopActivity *activity)
{
  guint64 n = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_RELAXED);

  __atomic_store_n (&activity->n_exact_ends, n + 1, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n (&activity->watcher_wants_exact_end, 0, __ATOMIC_SEQ_CST))
    _perfmon_loop_activity_wake_watcher (activity);
}

/* An outermost dispatch that may have been charged exactly ended at
 * @now_cycles (nothing of the loop's encloses it). A watchdog that sleeps
 * until the end is not woken at once: what follows is either another
 * dispatch, whose beginning wakes it
 * (_perfmon_loop_activity_dispatch_begin()), or the stretch's end, which
 * wakes it anyway (the watchdog asked for both), usually microseconds
 * later. So an add-on's dispatch followed by the loop's sleep costs one
 * wake-up of the watchdog, not two in a row (each of them tens of µs of
 * the watched thread on some hypervisors: tests/bench/bench-shell). Work
 * of the loop that is neither (a GSource's check, a non-blocking
 * iteration's caller) is looked at within
 * PERFMON_JS_SAMPLE_EXACT_RECHECK_MS, and from the stamp on, not as
 * exact. Same ordering as _perfmon_loop_activity_exact_end(). */
static inline void
_perfmon_loop_activity_dispatch_exact_end (PerfmonLoopActivity *activity,
                                           guint64              now_cycles)
{
  guint64 n = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_RELAXED);

  __atomic_store_n (&activity->last_exact_end, now_cycles, __ATOMIC_RELAXED);
  __atomic_store_n (&activity->n_exact_ends, n + 1, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n (&activity->watcher_wants_exact_end, 0, __ATOMIC_SEQ_CST))
    activity->exact_wake_pending = TRUE;
}

/* A dispatch begins: delivers the wake-up an outermost dispatch's end
 * left pending. The dispatch hook's hot path pays a load and a branch. */
static inline void
_perfmon_loop_activity_dispatch_begin (PerfmonLoopActivity *activity)
{
  if (G_UNLIKELY (activity->exact_wake_pending))
    {
      activity->exact_wake_pending = FALSE;
      _perfmon_loop_activity_wake_watcher (activity);
    }
}

/* _perfmon_loop_activity_busy_next() when the caller knows the phase is
 * BUSY (the poll wrapper's common case, which checked it): a few plain
 * stores, small enough to inline, so that the wrapper keeps no frame. */
static inline __attribute__ ((always_inline)) void
_perfmon_loop_activity_busy_next_in_busy (PerfmonLoopActivity *activity,
                                          guint64              now_cycles)
{
  guint64 n = __atomic_load_n (&activity->n_stretches, __ATOMIC_RELAXED);
  /* Loaded once: the stores below could alias it, for the compiler. */
  PerfmonLoopStretch *stretches = activity->stretches;
  PerfmonLoopStretch *stretch;

  __atomic_store_n (&stretches[n & (PERFMON_LOOP_RECENT_STRETCHES - 1)].end, now_cycles, __ATOMIC_RELAXED);
  stretch = &stretches[(n + 1) & (PERFMON_LOOP_RECENT_STRETCHES - 1)];
  __atomic_store_n (&stretch->begin, now_cycles, __ATOMIC_RELAXED);
  __atomic_store_n (&stretch->end, 0, __ATOMIC_RELAXED);
  /* Publishes the old stretch's end and the new one's begin. */
  __atomic_store_n (&activity->n_stretches, n + 1, __ATOMIC_RELEASE);
}

/* A poll that cannot sleep (a timeout of 0) ends the busy stretch and
 * begins the next one at @now_cycles, as busy_end and busy_begin would,
 * but the loop never went idle: the phase stays BUSY, which the watchdog
 * never changes, so no locked instruction is needed (busy_begin's
 * exchange costs more than the rest of the monitor's iteration). The
 * watchdog sees the new index and follows it. Before the first watched
 * stretch the phase is not BUSY: then the two calls are made. */
static inline void
_perfmon_loop_activity_busy_next (PerfmonLoopActivity *activity,
                                  guint64              now_cycles)
{
  if (G_UNLIKELY (__atomic_load_n (&activity->phase, __ATOMIC_RELAXED) != PERFMON_LOOP_BUSY))
    {
      _perfmon_loop_activity_busy_end (activity, now_cycles);
      _perfmon_loop_activity_busy_begin (activity, now_cycles);
      return;
    }
  _perfmon_loop_activity_busy_next_in_busy (activity, now_cycles);
}

/* The first time a watchdog sees the calling thread: makes @activity the
 * thread's (for deliberate waits), runs `prepare_thread` and publishes the
 * thread's id. Once per watched thread; before its first busy_begin. */
void _perfmon_loop_activity_adopt_thread (PerfmonLoopActivity *activity);

/* A deliberate wait of the calling thread (perfmon_deliberate_wait_begin()):
 * the outermost idle_begin ends the busy stretch of the activity the thread
 * was adopted by, if watched, and its idle_end begins a new one. They nest;
 * on a thread no watchdog adopted they do nothing. */
void _perfmon_loop_activity_idle_begin (void);
void _perfmon_loop_activity_idle_end   (void);

/* The automatic group name of the dispatch the calling thread runs, or
 * NULL: set by the dispatch hook around each measured dispatch (nested
 * ones restore the outer name), read by a stack capture in a signal
 * handler on the same thread (initial-exec TLS: async-signal-safe), and
 * by the watchdog from another thread (the main thread's directly, so
 * stored atomically: _perfmon_set_dispatch_name()). The name is a
 * record's (freed by the monitor's reap, see
 * _perfmon_monitor_get_reap_count()), a JavaScript handler site's (never
 * freed) or static. */
extern __thread const char *_perfmon_current_dispatch_name __attribute__ ((tls_model ("initial-exec")));

/* The owning thread's store of its dispatch name: a plain move on x86-64
 * and arm64, and no data race for ThreadSanitizer with the watchdog's
 * load. */
static inline void
_perfmon_set_dispatch_name (const char *name)
{
  __atomic_store_n (&_perfmon_current_dispatch_name, name, __ATOMIC_RELAXED);
}

/* The thread's side: notes a dispatch of @cycles named @name (at most
 * PERFMON_LOOP_DISPATCH_NAME_WORDS * 8 - 1 bytes are kept) that ended in
 * the current stretch. Called for long dispatches only: it walks a short
 * sorted list. */
void  _perfmon_loop_activity_note_dispatch (PerfmonLoopActivity *activity,
                                            const char          *name,
                                            guint64              cycles);

/* --- the watchdog's side ----------------------------------------------- */

/* Sleeps while the loop is idle: until the thread's next busy_begin, or
 * @until_us (monotonic; G_MAXINT64: no deadline), or a stop. Wakes up
 * spuriously: look again. Returns FALSE, at once, if the loop was found
 * busy as the watchdog went to sleep. */
gboolean _perfmon_loop_activity_sleep_while_idle (PerfmonLoopActivity *activity,
                                                  gint64               until_us);
/* Sleeps until @until_us or a stop, whatever the loop does. */
void     _perfmon_loop_activity_sleep_until      (PerfmonLoopActivity *activity,
                                                  gint64               until_us);
/* The same, but asks to be woken at the end of the current stretch, which
 * must be @index, too (watcher_wants_end); returns at once if the loop
 * has left it already. busy_end then makes one system call, so ask only
 * for stretches that begin seldom. With @n_exact_ends (the activity's
 * count read before the watchdog found the thread in something charged
 * exactly), also at the next _perfmon_loop_activity_exact_end(), and at
 * once if the count moved already. */
void     _perfmon_loop_activity_sleep_until_end  (PerfmonLoopActivity *activity,
                                                  guint64              index,
                                                  const guint64       *n_exact_ends,
                                                  gint64               until_us);
/* A watchdog starts watching: FALSE if another one watches already. What
 * the thread published before is stale: the watching begins at its next
 * busy_begin. @prepare_thread: see the field. */
gboolean _perfmon_loop_activity_watch            (PerfmonLoopActivity *activity,
                                                  void               (*prepare_thread) (void));
/* Wakes a sleeping watchdog for good: it stops. Then, once it returned,
 * _unwatch() lets the thread stop publishing. */
void     _perfmon_loop_activity_stop_watcher     (PerfmonLoopActivity *activity);
/* In a child forked without exec, called on the thread that forked (the
 * only one there): the watched thread is that one, with its new thread id,
 * if it was the watched one, else none. Cold. */
void _perfmon_loop_activity_after_fork (PerfmonLoopActivity *activity);
void     _perfmon_loop_activity_unwatch          (PerfmonLoopActivity *activity);
gboolean _perfmon_loop_activity_watcher_stopping (PerfmonLoopActivity *activity);

/* The watchdog's side: copies the longest dispatches of stretch @index
 * (longest first) into @out, which has room for PERFMON_LOOP_DISPATCHES;
 * returns how many, 0 if the list was overwritten by a later stretch or is
 * being written. */
/* Any thread: note the dispatches of @min_cycles or more (while the
 * activity is watched) as marks; 0 stops. */
void  _perfmon_loop_activity_set_mark_min_cycles (PerfmonLoopActivity *activity,
                                                  guint64              min_cycles);
/* The consumer's thread: copies the marks from *@next on (at most
 * @max_out), moves *@next past them, and returns how many; *@lost counts
 * those overwritten before they were read. */
guint _perfmon_loop_activity_read_marks (PerfmonLoopActivity *activity,
                                         guint64             *next,
                                         PerfmonLoopMarkCopy *out,
                                         guint                max_out,
                                         guint64             *lost);
guint _perfmon_loop_activity_read_dispatches (PerfmonLoopActivity     *activity,
                                              guint64                  index,
                                              PerfmonLoopDispatchCopy *out);

G_END_DECLS
