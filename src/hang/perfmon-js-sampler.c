/* perfmon-js-sampler.c: add-on attribution by sampling the JavaScript
 * stack of long dispatches (issue 24, point 4)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Design (doc/addons.md, "Attribution by sampling"). Creation sites
 * (perfmon-js-site.c) charge an add-on exactly for the sources it makes
 * and the handlers it connects. Its code also runs where it made nothing:
 * promise jobs (GjsPromiseJobQueueSource), virtual functions, paint and
 * allocation in the frame clock, D-Bus methods, garbage collection. Those
 * run inside someone else's dispatch, which only the JavaScript stack
 * tells apart.
 *
 * So the hang monitor's watchdog thread, which already follows each busy
 * stretch of the loop with a deadline, samples a stretch that runs
 * PERFMON_JS_SAMPLE_AFTER_MS or more, every PERFMON_JS_SAMPLE_EVERY_MS
 * on average (at random intervals: _perfmon_js_sampler_next_sample_us())
 * until it ends:
 * - it reads the thread's CPU clock (from here: clock_gettime() on the
 *   thread's clock id);
 * - it asks the engine for its stack (_perfmon_js_stack_sample(): the
 *   interrupt callback the hang reports use). The watched thread's only
 *   work is a walk of the engine's saved frames (JS::CaptureCurrentStack(),
 *   which allocates, as the creation sites' walk) that stops at the
 *   innermost frame of an add-on (the engine's whole dump,
 *   JS::FormatStackDump(), only where the saved frames cannot be taken),
 *   and a copy of the name of what it dispatches into a static buffer,
 *   at its next safe point, and only in a stretch already PERFMON_JS_SAMPLE_AFTER_MS long,
 *   at most once per PERFMON_JS_SAMPLE_EVERY_MS: never in a short one;
 * - here, on the watchdog: the frames are parsed, the innermost one that
 *   an add-on rule matches names the add-on (perfmon_addon_rule_match()),
 *   and the CPU time the thread used since the previous sample (for the
 *   first, since the stretch began, scaled from when the watchdog began
 *   following it) goes to that add-on group's sampled CPU time
 *   (_perfmon_monitor_add_sampled_cpu_time(), apart from its exact CPU
 *   time). When two samples in a row disagree (an add-on, then an
 *   exact dispatch or no add-on, or the other way), half of the interval
 *   goes to each (charge_interval()). When the stretch is over, its last part (from the last sample
 *   to its end, at most the CPU time used since) goes where the last
 *   sample went.
 *
 * A dispatch already charged to an add-on exactly (a source or handler of
 * its creation site: _perfmon_js_site_is_exact()) is not sampled: its
 * name, read from the thread's memory first (as a hang's runnable is), or
 * that the engine's answer gives, says so, and the interval charges
 * nothing beyond the half of it that a previous sample's add-on may have
 * run: exact figures are never counted twice. A sample without JavaScript (the thread in native code
 * past the timeout) or without an add-on frame charges nothing either.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <string.h>
#include <unistd.h>

#include "perfmon-addon-rules.h"
#include "perfmon-addon-rules-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-js-sampler-private.h"
#include "perfmon-js-site-private.h"
#include "perfmon-js-stack-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-stack-capture-private.h"

struct _PerfmonJsSampler
{
  PerfmonMonitor *monitor;       /* the hang monitor's, which outlives us */
  GHashTable     *addon_groups;  /* id → PerfmonGroup, held */

  /* What the thread dispatches, read from its memory before a sample. */
  PerfmonCapturedStack *named;
  /* Whether it is charged exactly, as found for the dispatch whose name
   * (perfmon's, inside its group's record) was at @exact_name_address in
   * stretch @exact_index, the monitor's reap count @exact_reaps: while
   * all three stand, the address names the same record, and a sample
   * finds out by reading the address alone. */
  gboolean        exact;
  guint64         exact_name_address;
  guint64         exact_index;
  guint           exact_reaps;
  /* This process, where the engine runs: the main thread's id. The
   * sampler lives on the watchdog thread, which a fork does not copy. */
  gint64          pid;

  /* The followed stretch. */
  gboolean        following;
  gint64          tid;
  guint64         index;
  gint64          start_us;      /* monotonic, when it began */
  gint64          follow_us;     /* when the sampler began following it */
  gint64          follow_cpu_ns; /* the thread's CPU time then */
  guint           n_ticks;       /* samples asked for (or skipped: exact) */
  guint           n_answered;    /* of which located the thread */
  gint64          last_us;       /* the last tick's, monotonic */
  gint64          last_cpu_ns;
  PerfmonGroup   *last_addon;    /* where the last answer went, or NULL */
  gint64          next_us;
  /* The last tick found the thread in something charged exactly: the
   * next sample waits until that ends (the thread says so: see
   * _perfmon_js_sampler_waits_for_exact_end()), @exact_ends being the
   * activity's count of ends read before that tick looked. */
  gboolean        in_exact;
  guint64         exact_ends;
  /* The part of the stretch before the sampler saw it, when it saw it
   * only at the first sample: charged to @unseen_addon at the rate of the
   * next interval. */
  gint64          unseen_us;
  PerfmonGroup   *unseen_addon;
  /* CPU time of intervals whose sample got no answer (the thread in
   * native code, or waiting for a CPU): it goes with the next answer. */
  gint64          carried_ns;
  /* The random state of the samples' schedule: see
   * _perfmon_js_sampler_next_sample_us(). */
  guint32         rng;
};

PerfmonJsSampler *
_perfmon_js_sampler_new (PerfmonMonitor *monitor)
{
  PerfmonJsSampler *self = g_new0 (PerfmonJsSampler, 1);

  self->monitor = monitor;
  self->addon_groups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  self->named = g_new0 (PerfmonCapturedStack, 1);
  self->rng = g_random_int () | 1;
  self->pid = getpid ();
  return self;
}

void
_perfmon_js_sampler_free (PerfmonJsSampler *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->addon_groups);
  g_free (self->named);
  g_free (self);
}

static void
charge (PerfmonJsSampler *self,
        PerfmonGroup     *addon,
        gint64            cpu_ns)
{
  if (addon != NULL && cpu_ns > 0)
    _perfmon_monitor_add_sampled_cpu_time (self->monitor, addon, (guint64) (cpu_ns + 500) / 1000);
}

/* The interval between two samples, in which the thread used @cpu_ns:
 * the earlier sample went to @previous, the later one to @current (NULL:
 * to no add-on, an exactly charged dispatch or code of no add-on). When
 * they agree, the interval is theirs; when they differ, the change came
 * somewhere in between, as likely in its first half as in its second:
 * half goes to each. Charging it all to one side would count a dispatch
 * that began or ended between two samples too much or too little, each
 * time, always the same way for a loop that dispatches its sources in the
 * same order (a promise job queue before or after an add-on's exactly
 * charged timeouts, in each iteration). */
static void
charge_interval (PerfmonJsSampler *self,
                 PerfmonGroup     *previous,
                 PerfmonGroup     *current,
                 gint64            cpu_ns)
{
  if (previous == current)
    {
      charge (self, current, cpu_ns);
      return;
    }
  charge (self, previous, cpu_ns / 2);
  charge (self, current, cpu_ns - cpu_ns / 2);
}

/* An interval of @wall_us in which the thread used @cpu_ns: the rate at
 * which the unseen start of the stretch is charged, if it waits. */
static void
charge_unseen (PerfmonJsSampler *self,
               gint64            cpu_ns,
               gint64            wall_us)
{
  /* Waits for a sample that answered. */
  if (self->unseen_addon == NULL)
    return;
  if (self->unseen_us > 0 && wall_us > 0)
    charge (self, self->unseen_addon,
            (gint64) ((double) self->unseen_us * 1000.0 * MIN (1.0, (double) cpu_ns / ((double) wall_us * 1000.0))));
  self->unseen_us = 0;
  self->unseen_addon = NULL;
}

void
_perfmon_js_sampler_end (PerfmonJsSampler *self,
                         gint64            end_us,
                         gint64            cpu_ns)
{
  gint64 tail_us, used_ns;

  self->following = FALSE;
  /* Where no sample answered, nothing says whose the stretch was. */
  if (self->n_answered == 0 || (self->last_addon == NULL && self->unseen_addon == NULL))
    return;
  tail_us = end_us - self->last_us;
  used_ns = CLAMP (cpu_ns - self->last_cpu_ns, 0, MAX (tail_us, 0) * 1000);
  charge (self, self->last_addon, used_ns + self->carried_ns);
  charge_unseen (self, used_ns, tail_us);
}

void
_perfmon_js_sampler_look (PerfmonJsSampler    *self,
                          PerfmonLoopActivity *activity,
                          gboolean             busy,
                          guint64              index)
{
  guint64 end;
  gint64 cpu_ns;

  if (!self->following || (busy && index == self->index))
    return;
  if (__atomic_load_n (&activity->n_stretches, __ATOMIC_ACQUIRE) - self->index >= PERFMON_LOOP_RECENT_STRETCHES / 2)
    {
      self->following = FALSE;
      return;
    }
  /* The stretch's end, from the thread's own timestamp: the watchdog
   * notices it a deadline later, when the thread may be in the next. */
  end = __atomic_load_n (&_perfmon_loop_activity_stretch (activity, self->index)->end, __ATOMIC_ACQUIRE);
  if (end == 0 || !_perfmon_js_stack_thread_cpu_ns (&cpu_ns))
    {
      self->following = FALSE;
      return;
    }
  _perfmon_js_sampler_end (self, _perfmon_clock_cycles_to_monotonic_us (end), cpu_ns);
}

gint64
_perfmon_js_sampler_deadline (PerfmonJsSampler *self,
                              gint64            tid,
                              guint64           index,
                              gint64            start_us)
{
  if (self->following && self->index == index)
    return self->next_us;
  /* The engine runs on the main thread (see _perfmon_js_stack_prepare()).
   * No add-on known (PERFMON_RUN_NO_ADDONS=1, or no extension installed):
   * no sample could name one, and the thread would pay for its stack
   * dumps for nothing. */
  if (tid != self->pid || !_perfmon_js_site_attribution_running () ||
      !_perfmon_addon_rules_any_known () ||
      !_perfmon_js_stack_is_prepared () || !_perfmon_js_stack_thread_cpu_ns (&self->follow_cpu_ns))
    return G_MAXINT64;
  _perfmon_js_sampler_follow (self, tid, index, start_us, g_get_monotonic_time (), self->follow_cpu_ns);
  return self->next_us;
}

void
_perfmon_js_sampler_follow (PerfmonJsSampler *self,
                            gint64            tid,
                            guint64           index,
                            gint64            start_us,
                            gint64            now_us,
                            gint64            cpu_ns)
{
  self->following = TRUE;
  self->tid = tid;
  self->index = index;
  self->start_us = start_us;
  self->follow_us = now_us;
  self->follow_cpu_ns = cpu_ns;
  self->n_ticks = 0;
  self->n_answered = 0;
  self->last_addon = NULL;
  self->unseen_us = 0;
  self->unseen_addon = NULL;
  self->carried_ns = 0;
  self->in_exact = FALSE;
  self->next_us = start_us + PERFMON_JS_SAMPLE_AFTER_MS * 1000;
}

/* The schedule of samples. The engine answers at its next safe point,
 * and a program often has none for a while just before the same point
 * of each of its periods: an async function about to be resumed, whose
 * add-on frames are not on the stack yet (AsyncFunctionNext). Samples due
 * a fixed time after the previous answer, which that point delays, lock
 * onto it when the program's period is about the sampler's (an extension
 * that burns 5 ms between awaits): each answer lands there, without the
 * add-on, and in an optimized build 25-30 % of its CPU went to no one.
 * So the next sample is due a random time after the previous one was
 * asked for, not answered: between half and one and a half
 * PERFMON_JS_SAMPLE_EVERY_MS (on average that), which no program's
 * period follows; and after an answer that came late, not at once. */
gint64
_perfmon_js_sampler_next_sample_us (guint32 *rng,
                                    gint64   requested_us,
                                    gint64   done_us)
{
  const gint64 every_us = PERFMON_JS_SAMPLE_EVERY_MS * 1000;
  guint32 x = *rng != 0 ? *rng : 1;
  gint64 interval_us;

  /* xorshift32: the watchdog's own, no lock, no syscall. */
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *rng = x;
  interval_us = every_us / 2 + (gint64) (x % (guint32) every_us);
  return MAX (requested_us + interval_us, done_us + interval_us / 5);
}

/* The add-on of the innermost frame an add-on rule matches, or NULL. */
static PerfmonGroup *
find_addon (PerfmonJsSampler *self,
            GPtrArray        *frames)
{
  for (guint i = 0; i < frames->len; i++)
    {
      const PerfmonJsFrame *frame = g_ptr_array_index (frames, i);
      g_autofree char *id = NULL;
      g_autofree char *name = NULL;
      PerfmonGroup *group;

      if (!perfmon_addon_rule_match (frame->file, &id, &name, NULL))
        continue;
      group = g_hash_table_lookup (self->addon_groups, id);
      if (group == NULL && g_hash_table_size (self->addon_groups) < PERFMON_JS_SAMPLE_MAX_ADDONS)
        {
          group = perfmon_monitor_get_addon_group (self->monitor, id, name);
          g_hash_table_insert (self->addon_groups, g_steal_pointer (&id), group);
        }
      return group;
    }
  return NULL;
}

void
_perfmon_js_sampler_account (PerfmonJsSampler      *self,
                             gint64                 now_us,
                             gint64                 cpu_ns,
                             PerfmonJsSampleOutcome outcome,
                             PerfmonGroup          *addon)
{
  gint64 used_ns = cpu_ns - (self->n_ticks == 0 ? self->follow_cpu_ns : self->last_cpu_ns);

  if (self->n_ticks == 0)
    {
      /* The stretch ran from start_us, the sampler saw it from follow_us:
       * what it used before is estimated at the rate seen since, or, if
       * the sampler saw next to nothing of it (it woke late), at the rate
       * of the next interval. */
      gint64 seen_us = now_us - self->follow_us;
      gint64 unseen_us = self->follow_us - self->start_us;

      if (unseen_us > 0 && seen_us >= PERFMON_JS_SAMPLE_EVERY_MS * 1000 / 5)
        used_ns += (gint64) ((double) unseen_us * 1000.0 * MIN (1.0, (double) used_ns / ((double) seen_us * 1000.0)));
      else if (unseen_us > 0)
        self->unseen_us = unseen_us;
    }
  else
    charge_unseen (self, used_ns, now_us - self->last_us);
  used_ns = MAX (used_ns, 0);

  switch (outcome)
    {
    case PERFMON_JS_SAMPLE_EXACT:
      /* The interval's first part may still be the last answer's add-on;
       * what ran before any answer is nobody's that a sample saw. */
      if (self->n_answered > 0)
        charge_interval (self, self->last_addon, NULL, used_ns + self->carried_ns);
      self->unseen_us = 0;
      self->unseen_addon = NULL;
      self->carried_ns = 0;
      addon = NULL;
      self->n_answered++;
      break;

    case PERFMON_JS_SAMPLE_NO_ANSWER:
      /* The interval goes with the next answer, which splits it with the
       * last one as any interval between two answers: an unanswered
       * sample says nothing of where the thread was. */
      self->carried_ns += used_ns;
      addon = self->last_addon;
      break;

    case PERFMON_JS_SAMPLE_ANSWERED:
    default:
      /* The first answer has no earlier one: the stretch's start is
       * taken to be where it is. */
      charge_interval (self, self->n_answered > 0 ? self->last_addon : addon, addon,
                       used_ns + self->carried_ns);
      self->carried_ns = 0;
      /* The unseen start goes where the first answer says, at the rate
       * of the next interval; or nowhere, if not to an add-on. */
      if (self->unseen_us > 0 && self->unseen_addon == NULL)
        {
          self->unseen_addon = addon;
          if (addon == NULL)
            self->unseen_us = 0;
        }
      self->n_answered++;
      break;
    }

  self->n_ticks++;
  self->last_us = now_us;
  self->last_cpu_ns = cpu_ns;
  self->last_addon = addon;
}

/* Whether what the followed thread dispatches now is charged exactly. The
 * verdict stands while the thread's name of the dispatch stays at the same
 * address in the same stretch: a sample of a long dispatch then reads
 * that address alone, not the name, nor looks it up. */
static gboolean
dispatch_is_exact (PerfmonJsSampler *self)
{
  guint reaps = _perfmon_monitor_get_reap_count (self->monitor);
  guint64 address = self->exact_index == self->index && self->exact_reaps == reaps
    ? self->exact_name_address : 0;

  /* The count read again after the address: a record freed, and another
   * made at its address, since the verdict moved it. */
  if (!_perfmon_stack_capture_runnable_name_if_moved (self->tid, &address, self->named))
    {
      if (_perfmon_monitor_get_reap_count (self->monitor) == reaps)
        return self->exact;
      address = 0;   /* never the address of a name: reads it afresh */
      _perfmon_stack_capture_runnable_name_if_moved (self->tid, &address, self->named);
    }
  self->exact = self->named->has_runnable_name && _perfmon_js_site_is_exact (self->named->runnable_name);
  self->exact_index = self->index;
  self->exact_reaps = reaps;
  /* Kept only if no record was freed while it was read. */
  self->exact_name_address = _perfmon_monitor_get_reap_count (self->monitor) == reaps ? address : 0;
  return self->exact;
}

void
_perfmon_js_sampler_tick (PerfmonJsSampler *self,
                          guint64           index,
                          gint64            now_us)
{
  g_autoptr(GPtrArray) frames = NULL;
  char dispatch_name[PERFMON_JS_SAMPLE_DISPATCH_MAX + 1];
  PerfmonGroup *addon = NULL;
  PerfmonJsSampleOutcome outcome;
  gint64 cpu_ns;
  guint64 ends;

  if (!self->following || self->index != index || now_us < self->next_us)
    return;
  if (!_perfmon_js_stack_thread_cpu_ns (&cpu_ns))
    {
      self->following = FALSE;
      return;
    }

  frames = g_ptr_array_new_with_free_func (_perfmon_js_frame_free);
  /* Before the thread is looked at: an end after this is one of what the
   * look finds (see _perfmon_js_sampler_waits_for_exact_end()). */
  ends = __atomic_load_n (&_perfmon_monitor_get_loop_activity (self->monitor)->n_exact_ends, __ATOMIC_SEQ_CST);
  /* A dispatch charged exactly is not sampled at all: its name, read
   * from the thread's memory here, spares the thread the stack dump. */
  if (dispatch_is_exact (self))
    outcome = PERFMON_JS_SAMPLE_EXACT;
  else if (!_perfmon_js_stack_sample (PERFMON_JS_SAMPLE_TIMEOUT_MS, _perfmon_js_site_is_addon_file, NULL, frames, dispatch_name))
    outcome = PERFMON_JS_SAMPLE_NO_ANSWER;
  else if (_perfmon_js_site_is_exact (dispatch_name))
    outcome = PERFMON_JS_SAMPLE_EXACT;
  else
    {
      outcome = PERFMON_JS_SAMPLE_ANSWERED;
      addon = find_addon (self, frames);
    }

  _perfmon_js_sampler_account (self, now_us, cpu_ns, outcome, addon);
  /* In something charged exactly, a sample every 5 ms would find the
   * same, each a wake-up of the watchdog (tens of µs in a large process:
   * tests/bench/bench-wakeup): the thread wakes it at the end instead,
   * and a look every PERFMON_JS_SAMPLE_EXACT_RECHECK_MS covers an end it
   * does not tell. */
  self->in_exact = outcome == PERFMON_JS_SAMPLE_EXACT;
  self->exact_ends = ends;
  if (self->in_exact)
    self->next_us = now_us + PERFMON_JS_SAMPLE_EXACT_RECHECK_MS * 1000;
  else
    self->next_us = _perfmon_js_sampler_next_sample_us (&self->rng, now_us, g_get_monotonic_time ());
}

gboolean
_perfmon_js_sampler_waits_for_exact_end (PerfmonJsSampler *self,
                                         guint64           index,
                                         guint64          *n_exact_ends)
{
  if (!self->following || self->index != index || !self->in_exact)
    return FALSE;
  *n_exact_ends = self->exact_ends;
  return TRUE;
}

void
_perfmon_js_sampler_check_exact_end (PerfmonJsSampler *self,
                                     guint64           index,
                                     gint64            now_us)
{
  PerfmonLoopActivity *activity = _perfmon_monitor_get_loop_activity (self->monitor);
  guint64 ends;
  gint64 cpu_ns, end_us, since_us, since_cpu_ns, woke_us = now_us;

  if (!self->following || self->index != index || !self->in_exact)
    return;
  ends = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST);
  if (ends == self->exact_ends)
    return;   /* a deadline, or the stretch's end: the tick or the look */
  /* Stored before the count: this end's, or a later one's. */
  end_us = _perfmon_clock_cycles_to_monotonic_us (__atomic_load_n (&activity->last_exact_end, __ATOMIC_RELAXED));
  self->exact_ends = ends;
  /* A nested dispatch ended, or another exact one began. */
  if (dispatch_is_exact (self))
    return;
  if (!_perfmon_js_stack_thread_cpu_ns (&cpu_ns))
    {
      self->following = FALSE;
      return;
    }
  /* Up to now the thread ran what was charged exactly: as a tick that
   * found it so (nothing charged but what a previous answer's add-on may
   * have run before). The next sample comes a random interval later, as
   * after any tick: a sample right at the end would always land between
   * two dispatches. Where the thread went is known to have changed at
   * the interval's start, not somewhere in it: the next answer takes it
   * all, as a stretch's first answer does, not half.
   * An outermost dispatch's end wakes this thread only when the thread
   * goes on to another dispatch or ends its stretch (or not at all, and
   * the recheck finds it), and a loaded machine wakes it late: the exact
   * part ended at the thread's stamp, and what ran since is the next
   * answer's. The thread's CPU time at the stamp is taken at the
   * interval's rate (it ran all along, in its stretch). A stamp outside
   * the interval is an inner dispatch's or handler's end, told at once:
   * none is stamped. */
  since_us = self->n_ticks == 0 ? self->follow_us : self->last_us;
  since_cpu_ns = self->n_ticks == 0 ? self->follow_cpu_ns : self->last_cpu_ns;
  if (end_us > since_us && end_us < now_us && cpu_ns > since_cpu_ns)
    {
      cpu_ns = since_cpu_ns + (gint64) ((double) (cpu_ns - since_cpu_ns) *
                                        (double) (end_us - since_us) / (double) (now_us - since_us));
      now_us = end_us;
    }
  _perfmon_js_sampler_account (self, now_us, cpu_ns, PERFMON_JS_SAMPLE_EXACT, NULL);
  self->n_answered = 0;
  self->in_exact = FALSE;
  self->next_us = _perfmon_js_sampler_next_sample_us (&self->rng, woke_us, woke_us);
}

/* The file of @frame, "function (file:line)" as
 * perfmon_format_script_frame() writes it, or NULL. */
static char *
frame_file (const char *frame)
{
  const char *open = g_strrstr (frame, " (");
  const char *colon;
  gsize length;

  if (open == NULL || !g_str_has_suffix (frame, ")"))
    return NULL;
  open += 2;
  length = strlen (open) - 1;
  colon = g_strrstr_len (open, length, ":");
  if (colon != NULL && colon + 1 < open + length)
    {
      const char *p = colon + 1;

      while (p < open + length && g_ascii_isdigit (*p))
        p++;
      if (p == open + length)
        length = colon - open;
    }
  return g_strndup (open, length);
}

void
_perfmon_js_sampler_note_hang (PerfmonHangReport *report,
                               GPtrArray         *script_frames)
{
  if (perfmon_hang_report_get_annotation (report, PERFMON_ANNOTATION_ADDON) != NULL)
    return;
  for (guint i = script_frames->len; i-- > 0;)
    {
      g_autofree char *file = frame_file (g_ptr_array_index (script_frames, i));
      g_autofree char *id = NULL;

      if (file != NULL && perfmon_addon_rule_match (file, &id, NULL, NULL))
        {
          _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_ADDON_SAMPLED, id);
          return;
        }
    }
}
