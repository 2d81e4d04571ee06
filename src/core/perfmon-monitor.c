/* perfmon-monitor.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-error.h"
#include "perfmon-automatic-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-dispatch-observer-private.h"
#include "perfmon-group-stats-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-monitor-private.h"
#include "perfmon-process-private.h"
#include "perfmon-snapshot-private.h"

/**
 * PerfmonMonitor:
 *
 * Performance-group accounting for one thread.
 *
 * A monitor charges the code that runs on its thread to performance groups
 * (see [class@Perfmon.Group]). Between [method@Perfmon.Group.enter] and
 * [method@Perfmon.Group.leave] of a compartment it counts cycles of the
 * CPU's cycle counter. A measure of 25 µs or more is charged the CPU time
 * the thread really used in it (its leave reads the thread's CPU clock), a
 * shorter one its length; once per event-loop iteration the monitor commits
 * them, renormalised against the thread's real CPU time in the iteration,
 * so that time a compartment spends sleeping or blocked, even in waits of
 * 50 µs, is not charged as CPU time.
 *
 * A monitor attached to a #GMainContext sees the iterations of that context
 * by itself (it wraps the context's poll function). A monitor without a
 * context relies on the embedder to call
 * [method@Perfmon.Monitor.iteration_done] at the end of each iteration;
 * if its thread runs units of work rather than a loop, marking them with
 * [method@Perfmon.Monitor.work_begin] and [method@Perfmon.Monitor.work_end]
 * lets a [class@Perfmon.HangMonitor] watch it.
 *
 * Threads: everything except the group lookups and
 * [method@Perfmon.Monitor.get_enabled] must be called on the monitor's
 * thread: the first thread that enters a compartment, ends an iteration,
 * begins a unit of work or iterates the monitor's context. Group lookups
 * ([method@Perfmon.Monitor.get_window_group] and friends) may be called from
 * any thread.
 *
 * Since: 0.1
 */

/* Deeper nesting of enter() is counted but not measured. */
#define MAX_NESTING 64
/* How many contexts may have a monitor attached at once; see PollSlot. */
#define N_POLL_SLOTS PERFMON_MONITOR_MAX_CONTEXTS
#define MAX_PENDING_ALERTS 32
#define DEFAULT_ALERT_THRESHOLD_MS 64
#define ALERT_INTERVAL_US G_USEC_PER_SEC

/* How CPU time is measured.
 *
 * The thread CPU clock (CLOCK_THREAD_CPUTIME_ID) is a real system call
 * (no vDSO), 0.35 µs on an idle VM and more under load, while the cycle
 * counter costs a few nanoseconds. So the monitor reads the CPU clock only
 * at the end of stretches of READ_STRETCH_US or more of the cycle counter,
 * where the read costs at most 0.35 / 25 = 1.4 % of the stretch (and a
 * sleep in it, which is what the read is for, costs far more):
 *
 *  - leave() of a measure of READ_STRETCH_US or more (enter never reads);
 *  - the end of an iteration whose busy stretch since the last reading is
 *    READ_STRETCH_US or more;
 *  - the return of a poll that took READ_STRETCH_US or more (it slept);
 *  - the start of an iteration, or enter(), when the last reading is
 *    ANCHOR_MAX_AGE_US old: at most one read per 250 µs of a loop of short
 *    iterations or of short measures;
 *  - the start of the monitor's first iteration, and every
 *    perfmon_monitor_iteration_done() (whose iterations include the
 *    thread's waits between them).
 * So the reads are bounded by one per READ_STRETCH_US of time measured or
 * slept, plus one per ANCHOR_MAX_AGE_US of a busy loop. On a loaded machine
 * a preemption can stretch any measure past READ_STRETCH_US: it reads
 * once then, after it lost the CPU for far longer.
 *
 * A stretch's starting CPU time is estimated from the last reading, "the
 * anchor", plus the cycles since: between the anchor and the start the
 * thread ran only stretches shorter than READ_STRETCH_US and polls that
 * did not sleep, so it was running all along (an estimate that is off can
 * only be early, and is clamped: it may undercharge, never overcharge).
 * It is off when the kernel took the CPU in between, which the monitor
 * cannot see: by less than ANCHOR_MAX_AGE_US, since a longer gap is read
 * at the start. Hence the short maximum age: with 2 ms, a loaded CI
 * machine charged a 2 ms burn 0.6 ms; 250 µs costs a read (0.35 µs) per
 * 250 µs of a busy loop, 0.14 %.
 * CPU times are kept in cycles: a reading is converted once.
 *
 * What is charged: a measure of READ_STRETCH_US or more, the CPU the thread
 * used in it; a shorter one, its length (an error at most its own length,
 * under READ_STRETCH_US). An iteration's thread group: the CPU used from
 * its start to its end, by the same rule. Then the seed's renormalisation:
 * if what the iteration's outermost measures were charged exceeds the
 * iteration's CPU time, every group of the iteration is scaled down to it.
 *
 * Why per measure and not only per iteration, as in the seed (a group's
 * share of the iteration's measured cycles times the iteration's CPU
 * time): a GLib iteration dispatches every ready source, so one add-on
 * that sleeps 0.5 ms and another that burns 0.5 ms often share an
 * iteration, and shares by cycles would charge the sleeper half the
 * burner's CPU. */
#define READ_STRETCH_US 25
/* The histogram's first bucket: only a charge this long is judged. */
#define LONG_ITERATION_US 1000
#define ANCHOR_MAX_AGE_US _PERFMON_MONITOR_ANCHOR_MAX_AGE_US

/* A measure under way: what enter pushed, nothing more. Which groups it
 * charges is worked out at its leave (see charge_measure()); its starting
 * CPU time from the anchor (see set_anchor()). */
typedef struct
{
  PerfmonGroupRecord *compartment;
  guint64             start_cycles;
} Measure;

typedef struct
{
  PerfmonGroup *group;
  guint64       duration_us;
} PendingAlert;

struct _PerfmonMonitor
{
  GObject             parent_instance;

  /* The owner thread's state: read and written there only, without locks.
   *
   * What every iteration touches comes first, the measures with it, so
   * that an iteration touches as few cache lines and pages as it can: on
   * kernels with page-table isolation and a CPU without PCID (common in
   * virtual machines) each poll system call flushes the TLB. */
  gconstpointer       owner;
  gboolean            enabled;
  gboolean            in_iteration;         /* implies enabled */
  guint               depth;
  /* Measures below base_depth are cancelled (a nested loop, disabling):
   * their leave charges nothing. */
  guint               base_depth;
  /* enter's fast path: MAX_NESTING in an iteration, 0 outside one. */
  guint               enter_limit;
  /* leave's fast path: base_depth + 1 (the outermost measure that counts),
   * 0 while enters overflow. */
  guint               lean_depth;
  guint               overflow;
  guint32             iteration;            /* the stamp of executed */
  PerfmonGroupRecord *executed;             /* groups that ran this iteration */
  guint64             measured_cycles;      /* charged to outermost measures */
  double              cycles_per_us;
  double              us_per_cycle;         /* multiplying beats dividing */
  double              cycles_per_ns;
  guint64             iteration_start_cycles;
  gint64              iteration_start_cpu;  /* meant only once the anchor is
                                             * younger than the iteration */
  /* The lean iterations not yet added to the thread group: from
   * span_start_cycles to iteration_start_cycles, iterations
   * span_iteration to iteration (excluded); see fold_span(). */
  guint64             span_start_cycles;
  guint32             span_iteration;
  guint64             anchor_cycles;
  gint64              anchor_cpu;
  guint64             anchor_stale_cycles;  /* from then the anchor is old; 0: none */
  guint64             read_stretch_cycles;
  /* The longest iteration monitor_poll()'s lean path ends:
   * read_stretch_cycles, or 0 once the anchor moved in the iteration. */
  guint64             lean_wall_cycles;
  guint64             long_iteration_cycles;
  guint64             anchor_max_age_cycles;
  guint64             long_dispatch_cycles; /* see note_long_dispatch() */
  guint64             n_cpu_clock_reads;
  PerfmonGroupRecord *thread_record;
  guint               n_pending_alerts;
  PerfmonGroupRecord *dead;                 /* any thread: a lock-free stack */
  PerfmonLoopActivity activity;             /* see perfmon-loop-activity-private.h */
  Measure             measures[MAX_NESTING];

  /* The owner thread's, touched less often. */
  /* Each measure's starting CPU time, in cycles, meant only once the
   * anchor is younger than its start (see set_anchor()); apart, so that a
   * Measure is 16 bytes. */
  gint64              measure_start_cpu[MAX_NESTING];
  gboolean            warned_foreign_poll;
  guint               blocked_depth;
  gint64              blocked_since;
  guint64             alert_threshold_ms;
  guint64             alert_threshold_ns;
  GHashTable         *last_alert_cycles;    /* record → guint64 cycles */
  PendingAlert        pending_alerts[MAX_PENDING_ALERTS];
  GSource            *alert_source;         /* only while alerts wait */
  PerfmonAutomatic   *automatic;            /* see perfmon-automatic.c */
  /* Work outside dispatches; see charge_outside_dispatches(). */
  gboolean            outside_on;           /* automatic groups are on */
  guint32             startup_iteration;    /* begun by _perfmon_monitor_begin_startup(); 0: none */
  PerfmonGroupRecord *outside_record;       /* the automatic table's; NULL until charged */
  PerfmonGroupRecord *startup_record;       /* the same */

  GMainContext       *context;
  char               *thread_name;          /* construct-only */
  int                 poll_slot;
  guint               work_depth;           /* nested work units (no context) */
  gboolean            work_published;       /* the outermost one is published */

  /* Any thread. */
  GMutex              registry_lock;
  GPtrArray          *records;              /* every record not yet freed */
  GHashTable         *windows;              /* guint64 window id → record */
  GHashTable         *addons;               /* add-on id → record */
  /* Bumped (release) by the owner thread before it frees dead records:
   * see _perfmon_monitor_get_reap_count(). */
  guint               n_reaps;
};

enum {
  PROP_0,
  PROP_CONTEXT,
  PROP_THREAD_NAME,
  PROP_ENABLED,
  PROP_ALERT_THRESHOLD,
  PROP_AUTOMATIC_GROUPS,
  PROP_MAX_AUTOMATIC_GROUPS,
  N_PROPS
};

enum {
  SIGNAL_ALERT,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (PerfmonMonitor, perfmon_monitor, G_TYPE_OBJECT)

/* What identifies the calling thread: the thread pointer where GCC reads
 * it with one load (x86-64: %fs:0, the TCB's address), else the address of
 * a thread-local variable (initial-exec: the library is PIC, and the
 * default model would call __tls_get_addr on every enter). */
#if defined(__x86_64__) || defined(__aarch64__)
# define THREAD_TOKEN() ((gconstpointer) __builtin_thread_pointer ())
#else
static __thread char thread_token __attribute__ ((tls_model ("initial-exec")));
# define THREAD_TOKEN() ((gconstpointer) &thread_token)
#endif

static guint64 last_group_id;

static guint64
next_group_id (void)
{
  return __atomic_add_fetch (&last_group_id, 1, __ATOMIC_RELAXED);
}

static gboolean
claim_thread (PerfmonMonitor *self)
{
  gconstpointer token = THREAD_TOKEN ();

  if (G_LIKELY (self->owner == token))
    return TRUE;

  /* The first thread to use the monitor owns it. */
  return g_atomic_pointer_compare_and_exchange (&self->owner, NULL, token);
}

static inline gboolean
check_thread (PerfmonMonitor *self,
              const char     *function)
{
  if (G_LIKELY (claim_thread (self)))
    return TRUE;

  g_critical ("%s: called from a thread other than the monitor's; ignored", function);
  return FALSE;
}

/* --- records --------------------------------------------------------- */

static PerfmonGroupRecord *
record_new_locked (PerfmonMonitor   *self,
                   PerfmonGroupKind  kind,
                   const char       *name)
{
  gsize name_size = strlen (name) + 1;
  PerfmonGroupRecord *record = g_malloc0 (sizeof (PerfmonGroupRecord) + name_size);

  record->monitor = self;
  record->id = next_group_id ();
  memcpy (record->name, name, name_size);
  record->kind = kind;
  /* Not run in the current iteration, whatever the count: a stamp of 0
   * would be taken for the iteration numbered 0, once the count wraps. */
  record->stamp = __atomic_load_n (&self->iteration, __ATOMIC_RELAXED) - 1;
  record->active = kind != PERFMON_GROUP_KIND_COMPARTMENT;
  record->holders = 1;
  if (kind != PERFMON_GROUP_KIND_COMPARTMENT)
    g_weak_ref_init (&record->group.object, NULL);

  record->registry_index = self->records->len;
  g_ptr_array_add (self->records, record);

  return record;
}

static void
record_free (PerfmonGroupRecord *record)
{
  /* Its name may have been given to the dispatch observer. */
  if (record->kind == PERFMON_GROUP_KIND_COMPARTMENT)
    _perfmon_dispatch_names_changed ();
  if (record->kind != PERFMON_GROUP_KIND_COMPARTMENT)
    g_weak_ref_clear (&record->group.object);
  if (record->kind == PERFMON_GROUP_KIND_ADDON)
    g_free (record->key.addon_id);
  g_free (record);
}

static void
unregister_locked (PerfmonMonitor     *self,
                   PerfmonGroupRecord *record)
{
  guint index = record->registry_index;
  guint last = self->records->len - 1;

  if (index != last)
    {
      PerfmonGroupRecord *moved = g_ptr_array_index (self->records, last);

      self->records->pdata[index] = moved;
      moved->registry_index = index;
    }
  g_ptr_array_set_size (self->records, last);

  /* A later lookup may already have replaced the entry with a new record. */
  if (record->kind == PERFMON_GROUP_KIND_WINDOW &&
      g_hash_table_lookup (self->windows, &record->key.window_id) == record)
    g_hash_table_remove (self->windows, &record->key.window_id);
  else if (record->kind == PERFMON_GROUP_KIND_ADDON &&
           g_hash_table_lookup (self->addons, record->key.addon_id) == record)
    g_hash_table_remove (self->addons, record->key.addon_id);
}

void
_perfmon_monitor_bury_record (PerfmonMonitor     *self,
                              PerfmonGroupRecord *record)
{
  PerfmonGroupRecord *head;

  do
    {
      head = g_atomic_pointer_get (&self->dead);
      record->next_dead = head;
    }
  while (!g_atomic_pointer_compare_and_exchange (&self->dead, head, record));
}

static G_GNUC_NO_INLINE __attribute__ ((cold)) void
free_dead_records (PerfmonMonitor *self)
{
  PerfmonGroupRecord *record = g_atomic_pointer_exchange (&self->dead, NULL);
  PerfmonGroupRecord *next;

  __atomic_fetch_add (&self->n_reaps, 1, __ATOMIC_RELEASE);
  g_mutex_lock (&self->registry_lock);
  for (PerfmonGroupRecord *r = record; r != NULL; r = r->next_dead)
    unregister_locked (self, r);
  g_mutex_unlock (&self->registry_lock);

  for (; record != NULL; record = next)
    {
      next = record->next_dead;
      if (self->last_alert_cycles != NULL)
        g_hash_table_remove (self->last_alert_cycles, record);
      record_free (record);
    }
}

/* Monitor's thread, after a commit: nothing refers to a dead record any
 * more once the executed list has been charged. */
static inline void
reap_dead_records (PerfmonMonitor *self)
{
  if (G_UNLIKELY (g_atomic_pointer_get (&self->dead) != NULL))
    free_dead_records (self);
}

/* Returns a live window record with one hold taken for the caller. */
static PerfmonGroupRecord *
hold_window_record_locked (PerfmonMonitor *self,
                           guint64         window_id,
                           const char     *name)
{
  PerfmonGroupRecord *record = g_hash_table_lookup (self->windows, &window_id);

  if (record != NULL && _perfmon_group_record_try_hold (record))
    return record;

  if (name == NULL)
    {
      char default_name[32];

      g_snprintf (default_name, sizeof default_name, "window %" G_GUINT64_FORMAT, window_id);
      record = record_new_locked (self, PERFMON_GROUP_KIND_WINDOW, default_name);
    }
  else
    record = record_new_locked (self, PERFMON_GROUP_KIND_WINDOW, name);
  record->key.window_id = window_id;
  g_hash_table_replace (self->windows, &record->key.window_id, record);

  return record;
}

static PerfmonGroupRecord *
hold_addon_record_locked (PerfmonMonitor *self,
                          const char     *addon_id,
                          const char     *name)
{
  PerfmonGroupRecord *record = g_hash_table_lookup (self->addons, addon_id);

  if (record != NULL && _perfmon_group_record_try_hold (record))
    return record;

  record = record_new_locked (self, PERFMON_GROUP_KIND_ADDON, name != NULL ? name : addon_id);
  record->key.addon_id = g_strdup (addon_id);
  g_hash_table_replace (self->addons, record->key.addon_id, record);

  return record;
}

/* Returns the group of a held record, consuming the hold. */
static PerfmonGroup *
group_for_held_record_locked (PerfmonGroupRecord *record)
{
  PerfmonGroup *group = g_weak_ref_get (&record->group.object);

  if (group == NULL)
    return _perfmon_group_new (record);   /* the group owns the hold */

  _perfmon_group_record_release (record); /* the group holds it already */
  return group;
}

/* The thread's CPU time, in cycles; a system call: see the top of the
 * file for when. */
static inline gint64
read_cpu_clock (PerfmonMonitor *self)
{
  self->n_cpu_clock_reads++;
  return (gint64) ((double) _perfmon_clock_thread_cpu_ns () * self->cycles_per_ns);
}

/* The CPU time, in cycles, estimated at @cycles (not before the anchor)
 * from the anchor: the thread ran all along since (see the top of the
 * file). */
static inline gint64
cpu_from_anchor (PerfmonMonitor *self,
                 guint64         cycles)
{
  return self->anchor_cpu + (gint64) (cycles - self->anchor_cycles);
}

/* Takes @cpu, a reading of the CPU clock at @cycles, as the anchor.
 *
 * Neither enter nor the lean iteration stores a starting CPU time: as
 * long as the anchor is older than a start, the start's CPU time is
 * worked out from the anchor when it is needed (a long measure's leave, a
 * long iteration's end). So the anchor, before it moves, hands its
 * estimate to the measures and the iteration that began since it was
 * taken; that walks the measures under way, a few at most, once per
 * reading of the CPU clock (a system call anyway). */
static inline void
set_anchor (PerfmonMonitor *self,
            guint64         cycles,
            gint64          cpu)
{
  for (guint i = self->base_depth; i < self->depth; i++)
    {
      Measure *measure = &self->measures[i];

      if (measure->start_cycles >= self->anchor_cycles)
        self->measure_start_cpu[i] = cpu_from_anchor (self, measure->start_cycles);
    }
  if (self->iteration_start_cycles >= self->anchor_cycles)
    self->iteration_start_cpu = cpu_from_anchor (self, self->iteration_start_cycles);

  self->anchor_cycles = cycles;
  self->anchor_cpu = cpu;
  self->anchor_stale_cycles = cycles + self->anchor_max_age_cycles;
  /* The iteration's starting CPU time needs working out now. */
  self->lean_wall_cycles = 0;
}

/* The CPU time at @start, a measure's or the iteration's, whose estimate
 * is @saved if the anchor moved since. */
static inline gint64
start_cpu (PerfmonMonitor *self,
           guint64         start,
           gint64          saved)
{
  return start >= self->anchor_cycles ? cpu_from_anchor (self, start) : saved;
}

static void begin_iteration (PerfmonMonitor *self,
                             guint64         now,
                             gboolean        exact);
static void refresh_anchor  (PerfmonMonitor *self,
                             guint64         now);

/* --- measuring --------------------------------------------------------- */

static inline void
update_lean_depth (PerfmonMonitor *self)
{
  self->lean_depth = self->overflow != 0 ? 0 : self->base_depth + 1;
}

static inline void
set_in_iteration (PerfmonMonitor *self,
                  gboolean        in_iteration)
{
  self->in_iteration = in_iteration;
  self->enter_limit = in_iteration ? MAX_NESTING : 0;
}

/* Charges @record @cycles, for the iteration @iteration too, whose list
 * of groups that ran is *@executed. Locals, not the monitor's fields: with
 * -fno-strict-aliasing every store to a record would make the compiler
 * reload them. */
static inline __attribute__ ((always_inline)) void
charge_record (PerfmonGroupRecord  *record,
               guint32              iteration,
               PerfmonGroupRecord **executed,
               guint64              cycles)
{
  if (record->stamp != iteration)
    {
      record->stamp = iteration;
      record->recent_cycles = cycles;
      record->next_executed = *executed;
      *executed = record;
      record->ticks++;
    }
  else
    record->recent_cycles += cycles;
  record->cpu_time_cycles += cycles;
}

/* Whether a measure of @record's group is under way below @depth (and
 * counts): then that measure charges it, inclusively, and an inner one
 * must not charge it again. */
static gboolean
is_covered (PerfmonMonitor     *self,
            PerfmonGroupRecord *group,
            guint               depth)
{
  for (guint i = self->base_depth; i < depth; i++)
    {
      PerfmonGroupRecord *compartment = self->measures[i].compartment;

      if (compartment == group || compartment->key.parents.window == group ||
          compartment->key.parents.addon == group)
        return TRUE;
    }
  return FALSE;
}

/* Charges @cycles to the active groups of @compartment's measure at
 * @depth (the compartment, its window and add-on groups) that no enclosing
 * measure charges. The thread group is charged whole iterations at
 * commit. */
static G_GNUC_NO_INLINE void
charge_measure (PerfmonMonitor     *self,
                PerfmonGroupRecord *compartment,
                guint               depth,
                guint64             cycles)
{
  /* The compartment last, as in leave_lean(). */
  PerfmonGroupRecord *groups[3] = {
    compartment->key.parents.window, compartment->key.parents.addon, compartment,
  };

  for (guint i = 0; i < G_N_ELEMENTS (groups); i++)
    if (groups[i] != NULL && groups[i]->active &&
        (depth == self->base_depth || !is_covered (self, groups[i], depth)))
      charge_record (groups[i], self->iteration, &self->executed, cycles);

  /* What the iteration's outermost measures were charged, for the
   * renormalisation at commit. */
  if (depth == self->base_depth)
    self->measured_cycles += cycles;
}

/* Pushes a measure of @compartment started at @start: all that enter does
 * (the rare reading of the CPU clock apart). */
static inline __attribute__ ((always_inline)) void
push_measure (PerfmonMonitor     *self,
              guint               depth,
              PerfmonGroupRecord *compartment,
              guint64             start)
{
  Measure *measure = &self->measures[depth];

  measure->compartment = compartment;
  measure->start_cycles = start;
  self->depth = depth + 1;
}

/* The start of a measure at @start when the anchor is ANCHOR_MAX_AGE_US
 * old: a reading of the CPU clock first, so that the measure's start is
 * exact even after a long stretch without one (a long enclosing measure). */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
push_measure_with_new_anchor (PerfmonMonitor     *self,
                              guint               depth,
                              PerfmonGroupRecord *compartment,
                              guint64             start)
{
  refresh_anchor (self, start);
  push_measure (self, depth, compartment, start);
}

static void
_perfmon_monitor_enter (PerfmonMonitor     *self,
                        PerfmonGroupRecord *compartment)
{
  guint64 start;

  if (G_UNLIKELY (!check_thread (self, "perfmon_group_enter")))
    return;

  if (G_UNLIKELY (self->depth == MAX_NESTING))
    {
      self->overflow++;
      update_lean_depth (self);
      return;
    }

  if (G_UNLIKELY (!self->enabled))
    {
      /* Pushed for the balance of leaves, and cancelled. */
      push_measure (self, self->depth, compartment, 0);
      self->base_depth = self->depth;
      update_lean_depth (self);
      return;
    }

  /* Code that runs before the first iteration boundary (a monitor without
   * a context, or work before the loop first polls) starts an iteration. */
  if (G_UNLIKELY (!self->in_iteration))
    begin_iteration (self, _perfmon_clock_cycles (), TRUE);

  start = _perfmon_clock_cycles ();
  if (G_UNLIKELY (start >= self->anchor_stale_cycles))
    push_measure_with_new_anchor (self, self->depth, compartment, start);
  else
    push_measure (self, self->depth, compartment, start);
}

/* The CPU time of @measure, a measure of READ_STRETCH_US or more that
 * ended at @now after @cycles: worth a reading of the CPU clock; see the
 * top of the file. */
static G_GNUC_NO_INLINE __attribute__ ((cold)) guint64
read_measure (PerfmonMonitor *self,
              guint           depth,
              guint64         now,
              guint64         cycles)
{
  /* Worked out before the reading moves the anchor. Exact if the gap
   * between the anchor and the start ran: enter made sure that it is
   * under ANCHOR_MAX_AGE_US, and that every stretch in it long enough to
   * sleep was read; an estimate that is off can only be early, and is
   * clamped: it may undercharge, never overcharge. */
  gint64 start = start_cpu (self, self->measures[depth].start_cycles, self->measure_start_cpu[depth]);
  gint64 cpu_now = read_cpu_clock (self);

  set_anchor (self, now, cpu_now);
  return (guint64) CLAMP (cpu_now - start, 0, (gint64) cycles);
}

/* Every leave but the common case of perfmon_group_leave(); returns the
 * cycles of the measure, 0 if nothing was measured. */
static guint64
_perfmon_monitor_leave (PerfmonMonitor     *self,
                        PerfmonGroupRecord *compartment)
{
  guint64 now = _perfmon_clock_cycles ();
  Measure *measure;
  guint depth;
  guint64 cycles;
  guint64 charged;

  if (G_UNLIKELY (!check_thread (self, "perfmon_group_leave")))
    return 0;

  if (G_UNLIKELY (self->overflow > 0))
    {
      self->overflow--;
      update_lean_depth (self);
      return 0;
    }

  if (G_UNLIKELY (self->depth == 0))
    {
      g_critical ("perfmon_group_leave: “%s” was not entered", compartment->name);
      return 0;
    }

  depth = --self->depth;
  measure = &self->measures[depth];

  if (G_UNLIKELY (measure->compartment != compartment))
    g_critical ("perfmon_group_leave: leaving “%s”, but the innermost compartment entered is “%s”",
                compartment->name, measure->compartment->name);

  /* Monitoring disabled, or cancelled by a nested loop. */
  if (depth < self->base_depth)
    {
      self->base_depth = depth;
      update_lean_depth (self);
      return 0;
    }

  /* A counter that went backwards (the thread moved to a core whose
   * counter lags) gives no time rather than a huge one. */
  cycles = now > measure->start_cycles ? now - measure->start_cycles : 0;
  charged = cycles;
  if (G_UNLIKELY (cycles >= self->read_stretch_cycles))
    charged = read_measure (self, depth, now, cycles);
  charge_measure (self, measure->compartment, depth, charged);
  return cycles;
}

/* The common case of a leave: the outermost measure that counts (@depth,
 * lean_depth), of @record, short (the counter did not go backwards,
 * which would make the difference huge). Charges the compartment and its
 * window and add-on groups, whichever are active, and returns TRUE;
 * FALSE (having done nothing) for any other case. */
static inline __attribute__ ((always_inline)) gboolean
leave_lean (PerfmonMonitor     *self,
            PerfmonGroupRecord *record,
            guint               depth,
            guint64             now,
            guint64            *cycles_out)
{
  Measure *measure;
  PerfmonGroupRecord *window;
  PerfmonGroupRecord *addon;
  PerfmonGroupRecord *executed;
  guint32 iteration;
  guint64 cycles;

  /* lean_depth is never 0 while depth is: 0 only while enters overflow. */
  if (G_UNLIKELY (depth != self->lean_depth))
    return FALSE;
  measure = &self->measures[depth - 1];
  cycles = now - measure->start_cycles;
  if (G_UNLIKELY (measure->compartment != record || cycles >= self->read_stretch_cycles))
    return FALSE;

  self->depth = depth - 1;
  self->measured_cycles += cycles;
  iteration = self->iteration;
  executed = self->executed;
  window = record->key.parents.window;
  addon = record->key.parents.addon;
  /* The compartment last: it heads the list, so that a commit judges it
   * first and its alert comes before its window's and add-on's. */
  if (window != NULL && window->active)
    charge_record (window, iteration, &executed, cycles);
  if (addon != NULL && addon->active)
    charge_record (addon, iteration, &executed, cycles);
  if (record->active)
    charge_record (record, iteration, &executed, cycles);
  self->executed = executed;
  *cycles_out = cycles;
  return TRUE;
}

/* The class of PerfmonGroup, a final type: comparing an instance's class
 * with it is the cheapest exact type check. Groups only come from
 * monitors, so it is set before any group exists (class_init). */
static gpointer group_class;

/* The public entry points of measuring, checked as cheaply as GObject
 * allows. */
static inline gboolean
is_compartment (PerfmonGroup *group)
{
  return group != NULL &&
         ((GTypeInstance *) group)->g_class == group_class &&
         group->compartment != NULL;
}

/**
 * perfmon_group_enter:
 * @compartment: a group of kind %PERFMON_GROUP_KIND_COMPARTMENT
 *
 * Starts running code of @compartment on the calling thread, which must be
 * the monitor's thread. Every active group of the compartment (its window
 * and add-on groups, itself) that no enclosing measure charges is charged
 * the time until the matching [method@Perfmon.Group.leave] (the thread
 * group is charged whole iterations). Calls nest: a compartment that calls
 * into another is charged inclusively, and each group is counted once.
 *
 * Costs a few nanoseconds: a reading of the cycle counter and a push; no
 * lock, no allocation, and no system call unless the monitor's last
 * reading of the thread's CPU clock is 250 µs old (by the cycle counter):
 * then it reads it, one system call, at most once per 250 µs.
 *
 * Since: 0.1
 */
static G_GNUC_NO_INLINE void
enter_slowly (PerfmonGroup *compartment)
{
  g_return_if_fail (is_compartment (compartment));

  _perfmon_monitor_enter (compartment->record->monitor, compartment->record);
}

/* The common case (a compartment, on the monitor's thread, in an
 * iteration, nesting left, a fresh anchor) is a leaf; enter_slowly()
 * takes every other case, checks and all. */
__attribute__ ((hot)) void
perfmon_group_enter (PerfmonGroup *compartment)
{
  PerfmonGroupRecord *record;
  PerfmonMonitor *self;
  guint depth;
  guint64 start;

  if (G_UNLIKELY (!is_compartment (compartment)))
    {
      enter_slowly (compartment);
      return;
    }
  record = compartment->compartment;
  self = record->monitor;
  depth = self->depth;
  /* enter_limit is 0 outside an iteration (and so while disabled). */
  if (G_UNLIKELY (self->owner != THREAD_TOKEN () || depth >= self->enter_limit))
    {
      enter_slowly (compartment);
      return;
    }
  start = _perfmon_clock_cycles ();
  if (G_UNLIKELY (start >= self->anchor_stale_cycles))
    {
      /* A tail call: enter keeps no frame for the rare read. */
      push_measure_with_new_anchor (self, depth, record, start);
      return;
    }
  push_measure (self, depth, record, start);
}

/**
 * perfmon_group_leave:
 * @compartment: the group of the matching [method@Perfmon.Group.enter]
 *
 * Stops running code of @compartment and charges the time since the
 * matching enter to its groups.
 *
 * No lock, no allocation. A measure of 25 µs or more (by the cycle
 * counter) is charged the CPU time the thread really used in it: its leave
 * reads the thread's CPU clock, one system call, which is at most 1.4 %
 * of the measure. A shorter measure makes no system call and is charged
 * its length.
 *
 * Since: 0.1
 */
static G_GNUC_NO_INLINE void
leave_slowly (PerfmonGroup *compartment)
{
  g_return_if_fail (is_compartment (compartment));

  _perfmon_monitor_leave (compartment->record->monitor, compartment->record);
}

/* The common case (the outermost measure, of this compartment, on the
 * monitor's thread, short) is a leaf, as in enter; leave_slowly() takes
 * every other case, reading the counter again. */
__attribute__ ((hot)) void
perfmon_group_leave (PerfmonGroup *compartment)
{
  PerfmonGroupRecord *record;
  PerfmonMonitor *self;
  guint64 now;
  guint64 cycles;

  if (G_UNLIKELY (!is_compartment (compartment)))
    {
      leave_slowly (compartment);
      return;
    }
  now = _perfmon_clock_cycles ();
  record = compartment->compartment;
  self = record->monitor;
  if (G_UNLIKELY (self->owner != THREAD_TOKEN () ||
                  !leave_lean (self, record, self->depth, now, &cycles)))
    leave_slowly (compartment);
}

/* The seed's nested event loop rule: code that spins the loop again from
 * inside a measure ends the outer measures' accounting; their leave() then
 * does nothing, so nothing is counted twice. */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
cancel_measures (PerfmonMonitor *self)
{
  self->base_depth = self->depth;
  update_lean_depth (self);
}

/* Starts a new iteration: every group's recent_* fields go stale. */
static inline void
next_iteration (PerfmonMonitor *self)
{
  self->executed = NULL;
  self->measured_cycles = 0;
  /* Atomic for record_new_locked() on other threads, relaxed. It wraps:
   * see there. The monitor's thread is the only writer, so on x86 one
   * addl, whose store other threads see whole, does it: GCC makes a
   * relaxed atomic store of iteration + 1 a load, an add and a store (2
   * instructions more on every iteration). TSan, which cannot see into
   * the asm, gets the atomic store. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SANITIZE_THREAD__)
  __asm__ ("addl $1, %0" : "+m" (self->iteration));
#else
  __atomic_store_n (&self->iteration, self->iteration + 1, __ATOMIC_RELAXED);
#endif
}

/* Adds the lean iterations since the span began to the thread group: the
 * lean path of monitor_poll() ends an iteration without touching it.
 * Those iterations follow each other without a gap, each shorter than
 * READ_STRETCH_US and without a reading: each used its length, so
 * together they used the span's length. Before any commit and any
 * snapshot. */
static inline void
fold_span (PerfmonMonitor *self)
{
  PerfmonGroupRecord *thread_record = self->thread_record;
  guint32 n = self->iteration - self->span_iteration;

  if (n != 0 && thread_record->active)
    {
      thread_record->cpu_time_cycles += self->iteration_start_cycles - self->span_start_cycles;
      thread_record->ticks += n;
    }
  self->span_start_cycles = self->iteration_start_cycles;
  self->span_iteration = self->iteration;
}

static void
discard_recent (PerfmonMonitor *self)
{
  fold_span (self);
  next_iteration (self);
  self->span_iteration = self->iteration;
}

/* --- alerts ------------------------------------------------------------ */

static void
emit_pending_alerts (PerfmonMonitor *self)
{
  PendingAlert alerts[MAX_PENDING_ALERTS];
  guint n_alerts = self->n_pending_alerts;

  /* Handlers may iterate the loop and queue more: work on a copy. */
  memcpy (alerts, self->pending_alerts, n_alerts * sizeof (PendingAlert));
  self->n_pending_alerts = 0;

  for (guint i = 0; i < n_alerts; i++)
    {
      g_signal_emit (self, signals[SIGNAL_ALERT], 0, alerts[i].group, alerts[i].duration_us);
      g_object_unref (alerts[i].group);
    }
}

static gboolean
on_alert_source (gpointer user_data)
{
  PerfmonMonitor *self = PERFMON_MONITOR (user_data);

  g_clear_pointer (&self->alert_source, g_source_unref);
  emit_pending_alerts (self);

  return G_SOURCE_REMOVE;
}

/* Rare: at most once per group per second. */
static void
queue_alert (PerfmonMonitor     *self,
             PerfmonGroupRecord *record,
             guint64             cpu_ns,
             guint64             now)
{
  gpointer last;
  PerfmonGroup *group;

  if (self->last_alert_cycles == NULL)
    self->last_alert_cycles = g_hash_table_new_full (NULL, NULL, NULL, g_free);

  last = g_hash_table_lookup (self->last_alert_cycles, record);
  if (last != NULL &&
      now - *(guint64 *) last < _perfmon_clock_us_to_cycles (ALERT_INTERVAL_US))
    return;

  if (self->n_pending_alerts == MAX_PENDING_ALERTS)
    return;

  if (record->kind == PERFMON_GROUP_KIND_COMPARTMENT)
    {
      group = record->group.compartment != NULL ? g_object_ref (record->group.compartment) : NULL;
      /* A compartment without an object is an automatic group (its table
       * holds the record): the group that used the CPU, which the alert
       * names, gets one. A record nobody holds any more gets none. */
      if (group == NULL && _perfmon_group_record_try_hold (record))
        group = _perfmon_group_new (record);
    }
  else
    group = g_weak_ref_get (&record->group.object);

  /* A group nobody holds (a window kept only by its compartments) still
   * gets one: alert handlers deserve a group to look at. */
  if (group == NULL && record->kind != PERFMON_GROUP_KIND_COMPARTMENT &&
      _perfmon_group_record_try_hold (record))
    {
      g_mutex_lock (&self->registry_lock);
      group = group_for_held_record_locked (record);
      g_mutex_unlock (&self->registry_lock);
    }

  if (group == NULL)
    return;

  if (last == NULL)
    {
      last = g_new (guint64, 1);
      g_hash_table_insert (self->last_alert_cycles, record, last);
    }
  *(guint64 *) last = now;

  self->pending_alerts[self->n_pending_alerts].group = group;
  self->pending_alerts[self->n_pending_alerts].duration_us = cpu_ns / 1000;
  self->n_pending_alerts++;
}

/* --- committing an iteration ------------------------------------------- */

/* Records a group's CPU time for one iteration in its histogram, and
 * raises an alert if it is due. Only a charge of a millisecond or more can
 * reach the histogram (its first bucket) or an alert (whose threshold is
 * in whole milliseconds). */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
judge_long_charge (PerfmonMonitor     *self,
                   PerfmonGroupRecord *record,
                   guint64             cpu_cycles,
                   guint64             now)
{
  guint64 cpu_ns = (guint64) ((double) cpu_cycles * self->us_per_cycle * 1000.0);

  for (guint i = 0; i < PERFMON_N_DURATIONS && cpu_ns > (G_GUINT64_CONSTANT (1000000) << i); i++)
    {
      if (G_LIKELY (record->durations[i] != G_MAXUINT32))
        record->durations[i]++;
    }

  if (self->alert_threshold_ns != 0 && cpu_ns >= self->alert_threshold_ns)
    queue_alert (self, record, cpu_ns, now);
}

static inline void
judge (PerfmonMonitor     *self,
       PerfmonGroupRecord *record,
       guint64             cpu_cycles,
       guint64             now)
{
  if (G_UNLIKELY (cpu_cycles > self->long_iteration_cycles))
    judge_long_charge (self, record, cpu_cycles, now);
}

/* The groups that ran in an iteration that used a millisecond or more, or
 * whose outermost measures were charged more than it used: if they add up
 * to more than the iteration's CPU time, @iteration_cpu_cycles, each is
 * scaled down to it (the seed's renormalisation); then each is judged. */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
renormalise_executed (PerfmonMonitor *self,
                      guint64         now,
                      guint64         iteration_cpu_cycles)
{
  guint64 measured = self->measured_cycles;
  double scale = measured > iteration_cpu_cycles ? (double) iteration_cpu_cycles / (double) measured : 1.0;

  for (PerfmonGroupRecord *record = self->executed; record != NULL; record = record->next_executed)
    {
      guint64 charged = record->recent_cycles;
      guint64 cpu_cycles = scale < 1.0 ? (guint64) ((double) charged * scale) : charged;

      record->cpu_time_cycles -= MIN (charged - cpu_cycles, record->cpu_time_cycles);
      judge (self, record, cpu_cycles, now);
    }
}

/* --- work outside dispatches ------------------------------------------- */

/* With automatic groups on, what an iteration's thread used outside its
 * outermost measures (@cycles: GLib's own work between dispatches, and
 * code the program runs between two iterations of the loop, such as a
 * GApplication's activate called before its loop first polls) is charged
 * to the automatic group "(outside dispatches)", or "(start-up)" for the
 * iteration that _perfmon_monitor_begin_startup() began; so the thread
 * group is the sum of its compartments. Judged like any group: a long
 * stretch goes into its histogram and raises an alert naming it.
 *
 * Called from commit() only, that is for iterations of READ_STRETCH_US or
 * more (or with a reading of the CPU clock in them): the lean path of
 * monitor_poll() leaves the few microseconds of a short iteration to the
 * thread group alone. No system call; the group is made (a hash lookup
 * and an allocation) the first time only. */
static const char startup_dispatch_name[] = PERFMON_AUTOMATIC_STARTUP_NAME;

static G_GNUC_NO_INLINE __attribute__ ((cold)) void
charge_outside_dispatches (PerfmonMonitor *self,
                           guint64         now,
                           guint64         cycles)
{
  PerfmonGroupRecord **slot = &self->outside_record;
  const char *name = PERFMON_AUTOMATIC_OUTSIDE_NAME;
  PerfmonGroupRecord *record;

  if (self->startup_iteration != 0)
    {
      if (self->startup_iteration == self->iteration)
        {
          slot = &self->startup_record;
          name = PERFMON_AUTOMATIC_STARTUP_NAME;
        }
      self->startup_iteration = 0;
      if (_perfmon_current_dispatch_name == startup_dispatch_name)
        _perfmon_set_dispatch_name (NULL);
    }
  if (cycles == 0)
    return;
  if (*slot == NULL)
    *slot = _perfmon_automatic_special_group (self->automatic, name);
  record = *slot;
  if (!record->active)
    return;
  record->cpu_time_cycles += cycles;
  record->ticks++;
  judge (self, record, cycles, now);
}

/* Ends the iteration at @now that used @iteration_cpu_cycles of the
 * thread's CPU (in cycles). Groups were charged by leave(); the thread
 * group gets the whole iteration.
 *
 * An iteration that used under a millisecond and whose measures were
 * charged no more than it used (always so for an iteration shorter than
 * READ_STRETCH_US: its CPU time is its length, which its measures fit in)
 * is done in constant time, however many groups ran: nothing in it can
 * reach the histogram or an alert. Otherwise the groups that ran are
 * walked. */
static inline void
commit (PerfmonMonitor *self,
        guint64         now,
        guint64         iteration_cpu_cycles)
{
  PerfmonGroupRecord *thread_record = self->thread_record;

  fold_span (self);
  if (G_UNLIKELY (iteration_cpu_cycles > self->long_iteration_cycles ||
                  self->measured_cycles > iteration_cpu_cycles))
    renormalise_executed (self, now, iteration_cpu_cycles);

  if (thread_record->active)
    {
      thread_record->cpu_time_cycles += iteration_cpu_cycles;
      thread_record->ticks++;
      judge (self, thread_record, iteration_cpu_cycles, now);
    }

  if (G_UNLIKELY (__atomic_load_n (&self->outside_on, __ATOMIC_RELAXED)) &&
      (iteration_cpu_cycles > self->measured_cycles || self->startup_iteration != 0))
    charge_outside_dispatches (self, now, iteration_cpu_cycles > self->measured_cycles
                                          ? iteration_cpu_cycles - self->measured_cycles : 0);

  next_iteration (self);
  self->span_iteration = self->iteration;
  reap_dead_records (self);
}

/* Takes a reading of the thread's CPU clock at @now as the anchor. */
static G_GNUC_NO_INLINE void
refresh_anchor (PerfmonMonitor *self,
                guint64         now)
{
  set_anchor (self, now, read_cpu_clock (self));
}

static inline void
begin_iteration (PerfmonMonitor *self,
                 guint64         now,
                 gboolean        exact)
{
  if (exact || G_UNLIKELY (now >= self->anchor_stale_cycles))
    refresh_anchor (self, now);

  set_in_iteration (self, TRUE);
  /* The starting CPU time is worked out from the anchor only if the
   * iteration turns out long; see set_anchor() and end_iteration(). */
  self->iteration_start_cycles = now;
  self->lean_wall_cycles = self->read_stretch_cycles;
  self->span_start_cycles = now;
}

/* The CPU time, in cycles, of the iteration that ends at @now after
 * @wall_cycles, when the anchor moved during it or it lasted
 * READ_STRETCH_US or more: its end is read from the CPU clock if the
 * stretch since the anchor is that long (or for an exact end), estimated
 * from the anchor otherwise. */
static G_GNUC_NO_INLINE __attribute__ ((cold)) guint64
iteration_cpu_cycles (PerfmonMonitor *self,
                      guint64         now,
                      guint64         wall_cycles,
                      gboolean        exact)
{
  gint64 start = start_cpu (self, self->iteration_start_cycles, self->iteration_start_cpu);
  gint64 since_anchor = (gint64) (now - self->anchor_cycles);
  gint64 end_cpu;

  if (exact || since_anchor >= (gint64) self->read_stretch_cycles)
    {
      end_cpu = read_cpu_clock (self);
      set_anchor (self, now, end_cpu);
    }
  else
    end_cpu = self->anchor_cpu + since_anchor;

  /* An estimated start can only be early (it assumes the thread ran),
   * so the result is clamped into what is physically possible. */
  return (guint64) CLAMP (end_cpu - start, 0, (gint64) wall_cycles);
}

static inline void
end_iteration (PerfmonMonitor *self,
               guint64         now,
               gboolean        exact)
{
  guint64 wall_cycles = now > self->iteration_start_cycles ? now - self->iteration_start_cycles : 0;
  guint64 cpu_cycles = wall_cycles;

  if (G_UNLIKELY (self->depth > self->base_depth))
    cancel_measures (self);

  /* A short iteration with no reading in it ran all along. */
  if (G_UNLIKELY (exact || wall_cycles >= self->read_stretch_cycles ||
                  self->anchor_cycles > self->iteration_start_cycles))
    cpu_cycles = iteration_cpu_cycles (self, now, wall_cycles, exact);
  set_in_iteration (self, FALSE);
  commit (self, now, cpu_cycles);
}

static G_GNUC_NO_INLINE void
schedule_alerts (PerfmonMonitor *self)
{
  if (self->n_pending_alerts == 0)
    return;

  if (self->poll_slot < 0)
    {
      emit_pending_alerts (self);
      return;
    }

  /* Called from inside the poll function, before it polls: the alerts are
   * emitted by a dispatch of the context, and the wake-up makes the poll
   * return at once. A source is attached only while alerts wait: an idle
   * source in the context would cost every iteration. */
  if (self->alert_source == NULL)
    {
      self->alert_source = g_idle_source_new ();
      g_source_set_priority (self->alert_source, G_PRIORITY_DEFAULT);
      g_source_set_name (self->alert_source, "[perfmon] alerts");
      g_source_set_callback (self->alert_source, on_alert_source, self, NULL);
      g_source_attach (self->alert_source, self->context);
    }
  g_main_context_wakeup (self->context);
}

/* --- the loop's activity, for a watchdog ------------------------------ */

PerfmonLoopActivity *
_perfmon_monitor_get_loop_activity (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);

  return &self->activity;
}

gboolean
_perfmon_monitor_is_attached (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);

  /* Without a context the busy stretches are the work units. */
  return self->poll_slot >= 0 || self->context == NULL;
}

/* Once per watched thread. Out of line, taking the monitor: called with
 * &self->activity from monitor_poll(), GCC computes and spills that
 * address on the hot path (2 instructions per iteration, callgrind). */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
adopt_watched_thread (PerfmonMonitor *self)
{
  _perfmon_loop_activity_adopt_thread (&self->activity);
}

/* --- the poll function wrapper ----------------------------------------- */

/* GPollFunc takes no user data, so each attached context gets a trampoline
 * of its own that knows its slot. Slots are never reused while the context
 * still calls their trampoline. */
typedef struct
{
  GMainContext   *context;
  GPollFunc       previous;
  PerfmonMonitor *monitor;   /* atomic; NULL once the monitor is gone */
} PollSlot;

static PollSlot poll_slots[N_POLL_SLOTS];

/* A poll that cannot sleep (timeout 0), of @slot's context. When its poll
 * function is GLib's own g_poll() (which calls poll() with the same
 * arguments: a GPollFD is a struct pollfd on Linux), straight to the
 * kernel on x86-64. glibc's poll() is a cancellation point: once a
 * process has a second thread (the hang monitor's watchdog is one) it
 * brackets the system call with two calls that switch asynchronous
 * cancellation on and off, 45 instructions of an empty dispatch's ~1,250
 * that a program watched by perfmon would pay only because of perfmon's
 * thread (bench-layers, "thread" against "plain"). A poll that cannot
 * block is not where a cancellation waits: a pending one is acted on at
 * the next poll that may sleep, which goes through glibc as before. And
 * one frame fewer spans the system call (see the end of
 * monitor_poll_full()). Sanitizer builds keep libc's poll(), which their
 * interceptors check. */
#ifdef _PERFMON_MONITOR_DIRECT_POLL
static G_GNUC_NO_INLINE __attribute__ ((cold)) gint
poll_failed (long error)
{
  errno = (int) error;
  return -1;
}
#endif

static inline __attribute__ ((always_inline)) gint
poll_now (GPollFD  *fds,
          guint     n_fds,
          PollSlot *slot)
{
#ifdef _PERFMON_MONITOR_DIRECT_POLL
  if (G_LIKELY (slot->previous == g_poll))
    {
      long ret;

      __asm__ __volatile__ ("syscall"
                            : "=a" (ret)
                            : "0" ((long) SYS_poll), "D" (fds), "S" ((unsigned long) n_fds), "d" (0L)
                            : "rcx", "r11", "memory");
      if (G_UNLIKELY (ret < 0))
        return poll_failed (-ret);   /* out of line: no frame here for it */
      return (gint) ret;
    }
#endif
  return slot->previous (fds, n_fds, 0);
}
static GMutex poll_slots_lock;
/* Bumped (under poll_slots_lock) when a slot is taken or given back. */
gint _perfmon_monitor_context_epoch;

guint
_perfmon_monitor_get_context_epoch (void)
{
  return (guint) g_atomic_int_get (&_perfmon_monitor_context_epoch);
}

PerfmonMonitor *
_perfmon_monitor_find_for_context (GMainContext *context)
{
  for (guint i = 0; i < N_POLL_SLOTS; i++)
    if (g_atomic_pointer_get (&poll_slots[i].context) == context)
      return g_atomic_pointer_get (&poll_slots[i].monitor);
  return NULL;
}

/* The busy stretches are published even while accounting is disabled: a
 * hang watchdog must not take a loop it can no longer see for a hung one. */
static gint
poll_watched_unmeasured (PerfmonMonitor *self,
                         PollSlot       *slot,
                         GPollFD        *fds,
                         guint           n_fds,
                         gint            timeout)
{
  gint ret;

  if (timeout == 0)
    {
      _perfmon_loop_activity_busy_next (&self->activity, _perfmon_clock_cycles ());
      return slot->previous (fds, n_fds, timeout);
    }

  _perfmon_loop_activity_busy_end (&self->activity, _perfmon_clock_cycles ());
  ret = slot->previous (fds, n_fds, timeout);
  _perfmon_loop_activity_busy_begin (&self->activity, _perfmon_clock_cycles ());
  return ret;
}

/* A poll of a context whose monitor does not measure it: disabled, or
 * iterated by a thread other than the monitor's. */
static G_GNUC_NO_INLINE gint
poll_unmeasured (PerfmonMonitor *self,
                 PollSlot       *slot,
                 GPollFD        *fds,
                 guint           n_fds,
                 gint            timeout)
{
  if (!self->enabled)
    {
      set_in_iteration (self, FALSE);
      if (g_atomic_int_get (&self->activity.watched))
        return poll_watched_unmeasured (self, slot, fds, n_fds, timeout);
      return slot->previous (fds, n_fds, timeout);
    }

  if (!self->warned_foreign_poll)
    {
      self->warned_foreign_poll = TRUE;
      g_warning ("The main context of a PerfmonMonitor is iterated by a thread other than "
                 "the monitor's: iterations on that thread are not measured");
    }
  return slot->previous (fds, n_fds, timeout);
}

/* A poll that may sleep: the next iteration starts when it returns, and a
 * wake-up is worth an exact reading of the CPU clock. */
static G_GNUC_NO_INLINE gint
poll_then_begin_iteration (PerfmonMonitor *self,
                           PollSlot       *slot,
                           GPollFD        *fds,
                           guint           n_fds,
                           gint            timeout,
                           guint64         poll_start,
                           gboolean        watched)
{
  gint ret = slot->previous (fds, n_fds, timeout);
  guint64 poll_end = _perfmon_clock_cycles ();

  begin_iteration (self, poll_end, poll_end - poll_start >= self->read_stretch_cycles);
  if (watched)
    _perfmon_loop_activity_busy_begin (&self->activity, poll_end);

  return ret;
}

/* Every poll of a monitored context; monitor_poll() takes the common case
 * itself and calls this for the rest. */
static G_GNUC_NO_INLINE gint
monitor_poll_full (GPollFD  *fds,
                   guint     n_fds,
                   gint      timeout,
                   PollSlot *slot)
{
  PerfmonMonitor *self = g_atomic_pointer_get (&slot->monitor);
  guint64 poll_start;
  gboolean watched;

  if (G_UNLIKELY (self == NULL))
    return slot->previous (fds, n_fds, timeout);

  watched = g_atomic_int_get (&self->activity.watched);
  if (G_UNLIKELY (watched && self->activity.thread_id == 0))
    adopt_watched_thread (self);

  if (G_UNLIKELY (!self->enabled || !claim_thread (self)))
    return poll_unmeasured (self, slot, fds, n_fds, timeout);

  poll_start = _perfmon_clock_cycles ();
  if (self->in_iteration)
    {
      end_iteration (self, poll_start, FALSE);
      if (G_UNLIKELY (self->n_pending_alerts != 0))
        schedule_alerts (self);
    }

  if (timeout != 0)
    {
      if (watched)
        _perfmon_loop_activity_busy_end (&self->activity, poll_start);
      return poll_then_begin_iteration (self, slot, fds, n_fds, timeout, poll_start, watched);
    }

  /* A poll with no timeout cannot sleep: the next iteration starts where
   * this one ended, and the poll's own system call time (thread CPU time
   * too) goes to the thread group. So the next iteration begins before
   * the poll, and the poll is a tail call: on return from a system call
   * a kernel that refills the return stack buffer (a Spectre mitigation)
   * makes the CPU mispredict the return of every frame that spanned it,
   * and one frame of ours would cost ~50 ns per iteration of a busy loop,
   * more than all the monitor's work. tests/bench/bench-accounting measures it. */
  begin_iteration (self, poll_start, FALSE);
  if (watched)
    _perfmon_loop_activity_busy_next (&self->activity, poll_start);

  return poll_now (fds, n_fds, slot);
}

/* monitor_poll() with everything checked but the iteration's length:
 * one of READ_STRETCH_US or more (or an anchor gone stale) is worth a
 * reading of the CPU clock (see the top of the file). Its common case, an
 * iteration under a millisecond with no reading in it yet, is done here
 * with what end_iteration(), commit() and begin_iteration() do then; the
 * rest goes to monitor_poll_full(). A busy loop whose iterations are that
 * long (or run slowly, under valgrind) pays one system call and this per
 * iteration, a few percent of the iteration. */
static G_GNUC_NO_INLINE gint
monitor_poll_read (GPollFD        *fds,
                   guint           n_fds,
                   gint            timeout,
                   PollSlot       *slot,
                   PerfmonMonitor *self,
                   guint64         now)
{
  guint64 wall_cycles = now - self->iteration_start_cycles;
  gint64 start;
  gint64 cpu_now;

  /* A reading in the iteration (its start needs the saved estimate), a
   * long iteration (judged), or a counter that went backwards. */
  if (self->lean_wall_cycles == 0 || wall_cycles > self->long_iteration_cycles)
    return monitor_poll_full (fds, n_fds, timeout, slot);

  start = cpu_from_anchor (self, self->iteration_start_cycles);
  cpu_now = read_cpu_clock (self);
  /* The iterations meet after the reading, so that the next one's length
   * leaves the reading out: a slow one (preempted, or under valgrind)
   * must not make the next one long enough to need another. The
   * reading's value goes to its end: what the thread used after the
   * kernel took it, the tail of one system call, goes to the next
   * iteration, so that they add up to the thread's CPU time. */
  now = _perfmon_clock_cycles ();
  wall_cycles = now - self->iteration_start_cycles;
  /* set_anchor() with no measure under way and an iteration that ends. */
  self->anchor_cycles = now;
  self->anchor_cpu = cpu_now;
  self->anchor_stale_cycles = now + self->anchor_max_age_cycles;
  commit (self, now, (guint64) CLAMP (cpu_now - start, 0, (gint64) wall_cycles));

  /* begin_iteration() with a fresh anchor, still in an iteration. */
  self->iteration_start_cycles = now;
  self->span_start_cycles = now;
  self->lean_wall_cycles = self->read_stretch_cycles;
  if (G_UNLIKELY (self->n_pending_alerts != 0))
    schedule_alerts (self);
  /* The phase is BUSY: monitor_poll() checked it. */
  if (g_atomic_int_get (&self->activity.watched))
    _perfmon_loop_activity_busy_next_in_busy (&self->activity, now);
  return poll_now (fds, n_fds, slot);
}

/* The common case of a busy loop: a poll with no timeout (it cannot
 * sleep) that ends a short iteration, measured on the monitor's thread,
 * with nothing to renormalise, judge, reap, read or alert. It does what
 * monitor_poll_full() does then (end_iteration(), commit() and
 * begin_iteration() reduced to what is left of them when every rare
 * branch is known not taken) and makes only tail calls, so it keeps no
 * frame: six register saves and restores fewer on every iteration.
 * Anything else goes to monitor_poll_full(), which reads the cycle
 * counter again: the rare case pays one read more.
 *
 * Inlined into each trampoline (hot, like enter and leave: the compiler
 * keeps them together in .text.hot, so a monitored iteration touches few
 * code pages), where the slot is a constant: a program uses one or two of
 * the 32 copies. The slot comes last: the poll's arguments stay in their
 * registers to the tail calls. */
static inline __attribute__ ((always_inline)) gint
monitor_poll_lean (GPollFD        *fds,
                   guint           n_fds,
                   gint            timeout,
                   PollSlot       *slot,
                   PerfmonMonitor *self,
                   gboolean        watched)
{
  guint64 now = _perfmon_clock_cycles ();
  /* Unsigned: a counter that went backwards makes it huge. */
  guint64 wall_cycles = now - self->iteration_start_cycles;

  /* end_iteration(): no reading (a short iteration, the anchor older than
   * it: lean_wall_cycles is 0 otherwise); commit(): no renormalisation,
   * nothing to judge (a short iteration is under long_iteration_cycles),
   * and the thread group's share left to fold_span(); begin_iteration():
   * the anchor is fresh. Dead records wait for the next full commit, at
   * most ANCHOR_MAX_AGE_US away. */
  if (G_UNLIKELY (wall_cycles >= self->lean_wall_cycles ||
                  self->measured_cycles > wall_cycles ||
                  now >= self->anchor_stale_cycles))
    return monitor_poll_read (fds, n_fds, timeout, slot, self, now);

  next_iteration (self);
  self->iteration_start_cycles = now;
  /* The phase is BUSY: the caller checked it. */
  if (watched)
    _perfmon_loop_activity_busy_next_in_busy (&self->activity, now);

  /* No frame of ours spans it: see the end of monitor_poll_full(). */
  return poll_now (fds, n_fds, slot);
}

static inline __attribute__ ((always_inline)) gint
monitor_poll (GPollFD  *fds,
              guint     n_fds,
              gint      timeout,
              PollSlot *slot)
{
  PerfmonMonitor *self = g_atomic_pointer_get (&slot->monitor);

  if (G_UNLIKELY (self == NULL))
    return slot->previous (fds, n_fds, timeout);

  /* In an iteration (enter_limit is 0 outside one, and so while disabled)
   * with no measure under way: enter_limit - depth is MAX_NESTING then
   * only. Pending alerts need nothing: the commit that queued them
   * scheduled them. */
  if (G_UNLIKELY (timeout != 0 || self->enter_limit - self->depth != MAX_NESTING ||
                  self->owner != THREAD_TOKEN ()))
    return monitor_poll_full (fds, n_fds, timeout, slot);

  /* Two copies of the lean path, so that neither tests `watched` twice. */
  if (!g_atomic_int_get (&self->activity.watched))
    return monitor_poll_lean (fds, n_fds, timeout, slot, self, FALSE);
  if (G_UNLIKELY (self->activity.thread_id == 0 ||
                  __atomic_load_n (&self->activity.phase, __ATOMIC_RELAXED) != PERFMON_LOOP_BUSY))
    return monitor_poll_full (fds, n_fds, timeout, slot);
  return monitor_poll_lean (fds, n_fds, timeout, slot, self, TRUE);
}

#define POLL_TRAMPOLINE(n) \
  static __attribute__ ((hot)) gint poll_trampoline_##n (GPollFD *fds, guint n_fds, gint timeout) \
  { return monitor_poll (fds, n_fds, timeout, &poll_slots[n]); }

POLL_TRAMPOLINE (0)  POLL_TRAMPOLINE (1)  POLL_TRAMPOLINE (2)  POLL_TRAMPOLINE (3)
POLL_TRAMPOLINE (4)  POLL_TRAMPOLINE (5)  POLL_TRAMPOLINE (6)  POLL_TRAMPOLINE (7)
POLL_TRAMPOLINE (8)  POLL_TRAMPOLINE (9)  POLL_TRAMPOLINE (10) POLL_TRAMPOLINE (11)
POLL_TRAMPOLINE (12) POLL_TRAMPOLINE (13) POLL_TRAMPOLINE (14) POLL_TRAMPOLINE (15)
POLL_TRAMPOLINE (16) POLL_TRAMPOLINE (17) POLL_TRAMPOLINE (18) POLL_TRAMPOLINE (19)
POLL_TRAMPOLINE (20) POLL_TRAMPOLINE (21) POLL_TRAMPOLINE (22) POLL_TRAMPOLINE (23)
POLL_TRAMPOLINE (24) POLL_TRAMPOLINE (25) POLL_TRAMPOLINE (26) POLL_TRAMPOLINE (27)
POLL_TRAMPOLINE (28) POLL_TRAMPOLINE (29) POLL_TRAMPOLINE (30) POLL_TRAMPOLINE (31)

static const GPollFunc poll_trampolines[N_POLL_SLOTS] = {
  poll_trampoline_0,  poll_trampoline_1,  poll_trampoline_2,  poll_trampoline_3,
  poll_trampoline_4,  poll_trampoline_5,  poll_trampoline_6,  poll_trampoline_7,
  poll_trampoline_8,  poll_trampoline_9,  poll_trampoline_10, poll_trampoline_11,
  poll_trampoline_12, poll_trampoline_13, poll_trampoline_14, poll_trampoline_15,
  poll_trampoline_16, poll_trampoline_17, poll_trampoline_18, poll_trampoline_19,
  poll_trampoline_20, poll_trampoline_21, poll_trampoline_22, poll_trampoline_23,
  poll_trampoline_24, poll_trampoline_25, poll_trampoline_26, poll_trampoline_27,
  poll_trampoline_28, poll_trampoline_29, poll_trampoline_30, poll_trampoline_31,
};

static void
attach_to_context (PerfmonMonitor *self)
{
  g_mutex_lock (&poll_slots_lock);
  for (guint i = 0; i < N_POLL_SLOTS; i++)
    {
      PollSlot *slot = &poll_slots[i];

      if (slot->context != NULL)
        continue;

      slot->previous = g_main_context_get_poll_func (self->context);
      g_atomic_pointer_set (&slot->monitor, self);
      g_atomic_pointer_set (&slot->context, self->context);
      g_atomic_int_inc (&_perfmon_monitor_context_epoch);
      g_main_context_set_poll_func (self->context, poll_trampolines[i]);
      self->poll_slot = i;
      break;
    }
  g_mutex_unlock (&poll_slots_lock);

  if (self->poll_slot < 0)
    {
      g_warning ("perfmon_monitor_new: more than %d monitored main contexts; this one is not "
                 "measured automatically, call perfmon_monitor_iteration_done()", N_POLL_SLOTS);
      return;
    }
}

static void
detach_from_context (PerfmonMonitor *self)
{
  if (self->alert_source != NULL)
    {
      g_source_destroy (self->alert_source);
      g_clear_pointer (&self->alert_source, g_source_unref);
    }

  if (self->poll_slot < 0)
    return;

  g_mutex_lock (&poll_slots_lock);
  {
    PollSlot *slot = &poll_slots[self->poll_slot];

    g_atomic_pointer_set (&slot->monitor, NULL);
    g_atomic_int_inc (&_perfmon_monitor_context_epoch);
    /* If someone wrapped our wrapper, it must keep working: the slot stays
     * taken and passes through. */
    if (g_main_context_get_poll_func (self->context) == poll_trampolines[self->poll_slot])
      {
        g_main_context_set_poll_func (self->context, slot->previous);
        g_atomic_pointer_set (&slot->context, NULL);
        slot->previous = NULL;
      }
  }
  g_mutex_unlock (&poll_slots_lock);
  self->poll_slot = -1;
}

/* --- GObject ------------------------------------------------------------ */

static void
perfmon_monitor_constructed (GObject *object)
{
  PerfmonMonitor *self = PERFMON_MONITOR (object);

  G_OBJECT_CLASS (perfmon_monitor_parent_class)->constructed (object);

  if (self->thread_name == NULL)
    {
      static guint n_unnamed;

      self->thread_name = g_strdup_printf ("thread %u", g_atomic_int_add (&n_unnamed, 1) + 1);
    }
  g_mutex_lock (&self->registry_lock);
  self->thread_record = record_new_locked (self, PERFMON_GROUP_KIND_THREAD, self->thread_name);
  g_mutex_unlock (&self->registry_lock);

  if (self->context != NULL)
    attach_to_context (self);
}

static void
perfmon_monitor_finalize (GObject *object)
{
  PerfmonMonitor *self = PERFMON_MONITOR (object);

  detach_from_context (self);
  g_clear_pointer (&self->context, g_main_context_unref);
  g_clear_pointer (&self->thread_name, g_free);

  for (guint i = 0; i < self->n_pending_alerts; i++)
    g_object_unref (self->pending_alerts[i].group);

  /* Every group holds the monitor, so all records but the thread's and
   * the automatic groups' are dead by now. */
  g_clear_pointer (&self->automatic, _perfmon_automatic_free);
  reap_dead_records (self);
  g_warn_if_fail (self->records->len == 1);
  for (guint i = 0; i < self->records->len; i++)
    record_free (g_ptr_array_index (self->records, i));

  g_ptr_array_unref (self->records);
  g_hash_table_unref (self->windows);
  g_hash_table_unref (self->addons);
  g_clear_pointer (&self->last_alert_cycles, g_hash_table_unref);
  g_mutex_clear (&self->registry_lock);
  _perfmon_loop_activity_clear (&self->activity);

  G_OBJECT_CLASS (perfmon_monitor_parent_class)->finalize (object);
}

static void
perfmon_monitor_get_property (GObject    *object,
                              guint       prop_id,
                              GValue     *value,
                              GParamSpec *pspec)
{
  PerfmonMonitor *self = PERFMON_MONITOR (object);

  switch (prop_id)
    {
    case PROP_CONTEXT:
      g_value_set_boxed (value, self->context);
      break;
    case PROP_THREAD_NAME:
      g_value_set_string (value, self->thread_name);
      break;
    case PROP_ENABLED:
      g_value_set_boolean (value, self->enabled);
      break;
    case PROP_ALERT_THRESHOLD:
      g_value_set_uint64 (value, self->alert_threshold_ms);
      break;
    case PROP_AUTOMATIC_GROUPS:
      g_value_set_boolean (value, perfmon_monitor_get_automatic_groups (self));
      break;
    case PROP_MAX_AUTOMATIC_GROUPS:
      g_value_set_uint (value, perfmon_monitor_get_max_automatic_groups (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_monitor_set_property (GObject      *object,
                              guint         prop_id,
                              const GValue *value,
                              GParamSpec   *pspec)
{
  PerfmonMonitor *self = PERFMON_MONITOR (object);

  switch (prop_id)
    {
    case PROP_CONTEXT:
      self->context = g_value_dup_boxed (value);
      break;
    case PROP_THREAD_NAME:
      self->thread_name = g_value_dup_string (value);
      break;
    case PROP_ENABLED:
      perfmon_monitor_set_enabled (self, g_value_get_boolean (value));
      break;
    case PROP_ALERT_THRESHOLD:
      perfmon_monitor_set_alert_threshold (self, g_value_get_uint64 (value));
      break;
    case PROP_AUTOMATIC_GROUPS:
      perfmon_monitor_set_automatic_groups (self, g_value_get_boolean (value));
      break;
    case PROP_MAX_AUTOMATIC_GROUPS:
      perfmon_monitor_set_max_automatic_groups (self, g_value_get_uint (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_monitor_class_init (PerfmonMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  group_class = g_type_class_ref (PERFMON_TYPE_GROUP);

  object_class->constructed = perfmon_monitor_constructed;
  object_class->finalize = perfmon_monitor_finalize;
  object_class->get_property = perfmon_monitor_get_property;
  object_class->set_property = perfmon_monitor_set_property;

  /**
   * PerfmonMonitor:context:
   *
   * The main context whose iterations the monitor observes, or %NULL when
   * the embedder calls [method@Perfmon.Monitor.iteration_done].
   *
   * Since: 0.1
   */
  properties[PROP_CONTEXT] =
    g_param_spec_boxed ("context", NULL, NULL, G_TYPE_MAIN_CONTEXT,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonMonitor:thread-name:
   *
   * The name of the thread group, set at construction; by default
   * "thread N" (the default monitor's is "main thread").
   *
   * Since: 0.1
   */
  properties[PROP_THREAD_NAME] =
    g_param_spec_string ("thread-name", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonMonitor:enabled:
   *
   * Whether the monitor records anything. While disabled, entering and
   * leaving compartments and ending iterations cost next to nothing.
   *
   * Since: 0.1
   */
  properties[PROP_ENABLED] =
    g_param_spec_boolean ("enabled", NULL, NULL, TRUE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonMonitor:alert-threshold:
   *
   * The CPU time, in milliseconds, that a group must use in one iteration
   * for [signal@Perfmon.Monitor::alert] to be emitted; 0 turns alerts off.
   *
   * Since: 0.1
   */
  properties[PROP_ALERT_THRESHOLD] =
    g_param_spec_uint64 ("alert-threshold", NULL, NULL,
                         0, G_MAXUINT64 / 1000000, DEFAULT_ALERT_THRESHOLD_MS,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonMonitor:automatic-groups:
   *
   * Whether each dispatch of a #GSource on the monitor's context is
   * measured as a compartment of its own kind: an automatic group, named
   * after the source's name, else its callback's symbol, else the source's
   * type (see [method@Perfmon.Monitor.get_automatic_group]). Needs a
   * context. Off by default; `perfmon run` turns it on.
   *
   * Since: 0.2
   */
  properties[PROP_AUTOMATIC_GROUPS] =
    g_param_spec_boolean ("automatic-groups", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonMonitor:max-automatic-groups:
   *
   * How many automatic groups the monitor makes at most; dispatches of
   * kinds beyond them are charged to one overflow group,
   * "(other sources)". Lowering it keeps the groups that exist.
   *
   * Since: 0.2
   */
  properties[PROP_MAX_AUTOMATIC_GROUPS] =
    g_param_spec_uint ("max-automatic-groups", NULL, NULL,
                       1, PERFMON_AUTOMATIC_MAX_MAX_GROUPS, PERFMON_AUTOMATIC_DEFAULT_MAX_GROUPS,
                       G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * PerfmonMonitor::alert:
   * @self: the monitor
   * @group: the group that used too much CPU time
   * @duration_us: the CPU time it used in one iteration, in µs
   *
   * Emitted on the monitor's thread after an iteration in which @group
   * used at least [property@Perfmon.Monitor:alert-threshold] of CPU time;
   * at most once per group per second.
   *
   * Since: 0.1
   */
  signals[SIGNAL_ALERT] =
    g_signal_new ("alert",
                  G_TYPE_FROM_CLASS (klass),
                  G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2, PERFMON_TYPE_GROUP, G_TYPE_UINT64);
}

static void
perfmon_monitor_init (PerfmonMonitor *self)
{
  self->enabled = TRUE;
  self->iteration = 1;
  self->span_iteration = 1;
  self->lean_depth = 1;
  self->poll_slot = -1;
  self->cycles_per_us = _perfmon_clock_cycles_per_us ();
  self->us_per_cycle = 1.0 / self->cycles_per_us;
  self->cycles_per_ns = self->cycles_per_us / 1000.0;
  self->read_stretch_cycles = _perfmon_clock_us_to_cycles (READ_STRETCH_US);
  self->long_iteration_cycles = _perfmon_clock_us_to_cycles (LONG_ITERATION_US);
  self->anchor_max_age_cycles = _perfmon_clock_us_to_cycles (ANCHOR_MAX_AGE_US);
  self->long_dispatch_cycles = _perfmon_clock_us_to_cycles (PERFMON_LOOP_DISPATCH_MIN_US);
  self->alert_threshold_ms = DEFAULT_ALERT_THRESHOLD_MS;
  self->alert_threshold_ns = DEFAULT_ALERT_THRESHOLD_MS * 1000000;

  g_mutex_init (&self->registry_lock);
  _perfmon_loop_activity_init (&self->activity);
  self->automatic = _perfmon_automatic_new (self);
  self->records = g_ptr_array_new ();
  self->windows = g_hash_table_new (g_int64_hash, g_int64_equal);
  self->addons = g_hash_table_new (g_str_hash, g_str_equal);
}

/**
 * perfmon_monitor_get_default:
 *
 * Gets the monitor of the main thread, attached to the default main
 * context. Its thread group is named "main thread".
 *
 * Returns: (transfer none): the default monitor
 *
 * Since: 0.1
 */
PerfmonMonitor *
perfmon_monitor_get_default (void)
{
  static PerfmonMonitor *default_monitor;

  if (g_once_init_enter (&default_monitor))
    {
      PerfmonMonitor *monitor = g_object_new (PERFMON_TYPE_MONITOR,
                                              "context", g_main_context_default (),
                                              "thread-name", "main thread",
                                              NULL);

      g_once_init_leave (&default_monitor, monitor);
    }

  return default_monitor;
}

/**
 * perfmon_monitor_new:
 * @context: (nullable): the main context of the thread to monitor, or
 *   %NULL to end iterations with [method@Perfmon.Monitor.iteration_done]
 *
 * Creates a monitor for one thread.
 *
 * Returns: (transfer full): a new monitor
 *
 * Since: 0.1
 */
PerfmonMonitor *
perfmon_monitor_new (GMainContext *context)
{
  return g_object_new (PERFMON_TYPE_MONITOR, "context", context, NULL);
}

/**
 * perfmon_monitor_get_context:
 * @self: a monitor
 *
 * Gets the main context whose iterations the monitor observes.
 *
 * Returns: (transfer none) (nullable): the observed main context
 *
 * Since: 0.1
 */
GMainContext *
perfmon_monitor_get_context (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);

  return self->context;
}

/**
 * perfmon_monitor_get_enabled:
 * @self: a monitor
 *
 * Gets [property@Perfmon.Monitor:enabled].
 *
 * Returns: whether the monitor records anything
 *
 * Since: 0.1
 */
gboolean
perfmon_monitor_get_enabled (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);

  return self->enabled;
}

/**
 * perfmon_monitor_set_enabled:
 * @self: a monitor
 * @enabled: whether to record
 *
 * Starts or stops recording. Disabling drops the measures under way.
 * Call it on the monitor's thread.
 *
 * Since: 0.1
 */
void
perfmon_monitor_set_enabled (PerfmonMonitor *self,
                             gboolean        enabled)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));

  enabled = !!enabled;
  if (self->enabled == enabled)
    return;

  if (!check_thread (self, "perfmon_monitor_set_enabled"))
    return;

  if (!enabled)
    {
      cancel_measures (self);
      discard_recent (self);
      set_in_iteration (self, FALSE);
    }
  self->enabled = enabled;

  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ENABLED]);
}

/**
 * perfmon_monitor_get_alert_threshold:
 * @self: a monitor
 *
 * Gets [property@Perfmon.Monitor:alert-threshold].
 *
 * Returns: the alert threshold, in milliseconds
 *
 * Since: 0.1
 */
guint64
perfmon_monitor_get_alert_threshold (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), 0);

  return self->alert_threshold_ms;
}

/**
 * perfmon_monitor_set_alert_threshold:
 * @self: a monitor
 * @threshold_ms: CPU time in one iteration, in milliseconds, from which a
 *   group raises an alert; 0 turns alerts off
 *
 * Sets [property@Perfmon.Monitor:alert-threshold].
 *
 * Since: 0.1
 */
void
perfmon_monitor_set_alert_threshold (PerfmonMonitor *self,
                                     guint64         threshold_ms)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));
  g_return_if_fail (threshold_ms <= G_MAXUINT64 / 1000000);

  perfmon_monitor_set_alert_threshold_checked (self, threshold_ms, NULL);
}

/**
 * perfmon_monitor_set_alert_threshold_checked: (rename-to perfmon_monitor_set_alert_threshold)
 * @self: a monitor
 * @threshold_ms: CPU time in one iteration, in milliseconds, from which a
 *   group raises an alert (at most 18446744073709, G_MAXUINT64 ns); 0
 *   turns alerts off
 * @error: return location for a #GError
 *
 * Sets [property@Perfmon.Monitor:alert-threshold], as
 * perfmon_monitor_set_alert_threshold() does, with an error for a value
 * out of range instead of a g_critical(). Bindings get this function under
 * the name `set_alert_threshold`, which then raises an exception.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT)
 *
 * Since: 0.3
 */
gboolean
perfmon_monitor_set_alert_threshold_checked (PerfmonMonitor *self,
                                             guint64         threshold_ms,
                                             GError        **error)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (threshold_ms > G_MAXUINT64 / 1000000)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "set_alert_threshold: threshold_ms must be in [0, %" G_GUINT64_FORMAT "] (ms), got %"
                   G_GUINT64_FORMAT, G_MAXUINT64 / 1000000, threshold_ms);
      return FALSE;
    }
  if (self->alert_threshold_ms == threshold_ms)
    return TRUE;

  self->alert_threshold_ms = threshold_ms;
  self->alert_threshold_ns = threshold_ms * 1000000;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ALERT_THRESHOLD]);
  return TRUE;
}

/**
 * perfmon_monitor_get_automatic_groups:
 * @self: a monitor
 *
 * Gets whether automatic groups are on.
 *
 * Returns: whether dispatches on the monitor's context are measured as
 *   automatic groups; see [property@Perfmon.Monitor:automatic-groups]
 *
 * Since: 0.2
 */
gboolean
perfmon_monitor_get_automatic_groups (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);

  return _perfmon_automatic_get_on (self->automatic);
}

/**
 * perfmon_monitor_set_automatic_groups:
 * @self: a monitor with a context
 * @automatic: whether to measure each dispatch as an automatic group
 *
 * Sets [property@Perfmon.Monitor:automatic-groups]: the one call an
 * embedding program makes to have every #GSource dispatch on the
 * monitor's context charged to a group of its own kind, without changing
 * its code. The first call in the process patches the dispatch function
 * of GLib's own source kinds (idle, timeout, child watch, Unix signal,
 * Unix fd, I/O watch); other kinds are seen through
 * [func@Perfmon.automatic_track_source], which `perfmon run` calls for
 * every source created outside GLib.
 *
 * Since: 0.2
 */
void
perfmon_monitor_set_automatic_groups (PerfmonMonitor *self,
                                      gboolean        automatic)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));
  g_return_if_fail (!automatic || self->context != NULL);

  automatic = !!automatic;
  if (_perfmon_automatic_get_on (self->automatic) == automatic)
    return;

  _perfmon_automatic_set_on (self->automatic, automatic);
  /* Read by commit() on the monitor's thread: a plain load there. */
  __atomic_store_n (&self->outside_on, automatic, __ATOMIC_RELAXED);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_AUTOMATIC_GROUPS]);
}

/**
 * perfmon_monitor_get_max_automatic_groups:
 * @self: a monitor
 *
 * Gets the bound on the monitor's automatic groups.
 *
 * Returns: the most automatic groups the monitor makes
 *
 * Since: 0.2
 */
guint
perfmon_monitor_get_max_automatic_groups (PerfmonMonitor *self)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), 0);

  return _perfmon_automatic_get_max_groups (self->automatic);
}

/**
 * perfmon_monitor_set_max_automatic_groups:
 * @self: a monitor
 * @max_groups: the most automatic groups to make, 1 to 65536
 *
 * Sets [property@Perfmon.Monitor:max-automatic-groups].
 *
 * Since: 0.2
 */
void
perfmon_monitor_set_max_automatic_groups (PerfmonMonitor *self,
                                          guint           max_groups)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));
  g_return_if_fail (max_groups >= 1 && max_groups <= PERFMON_AUTOMATIC_MAX_MAX_GROUPS);

  perfmon_monitor_set_max_automatic_groups_checked (self, max_groups, NULL);
}

/**
 * perfmon_monitor_set_max_automatic_groups_checked: (rename-to perfmon_monitor_set_max_automatic_groups)
 * @self: a monitor
 * @max_groups: the most automatic groups to make, 1 to 65536
 * @error: return location for a #GError
 *
 * Sets [property@Perfmon.Monitor:max-automatic-groups], as
 * perfmon_monitor_set_max_automatic_groups() does, with an error for a
 * value out of range instead of a g_critical(). Bindings get this function
 * under the name `set_max_automatic_groups`, which then raises an
 * exception.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT)
 *
 * Since: 0.3
 */
gboolean
perfmon_monitor_set_max_automatic_groups_checked (PerfmonMonitor *self,
                                                  guint           max_groups,
                                                  GError        **error)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (max_groups < 1 || max_groups > PERFMON_AUTOMATIC_MAX_MAX_GROUPS)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "set_max_automatic_groups: max_groups must be in [1, %d], got %u",
                   PERFMON_AUTOMATIC_MAX_MAX_GROUPS, max_groups);
      return FALSE;
    }
  if (_perfmon_automatic_get_max_groups (self->automatic) == max_groups)
    return TRUE;

  _perfmon_automatic_set_max_groups (self->automatic, max_groups);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MAX_AUTOMATIC_GROUPS]);
  return TRUE;
}

/**
 * perfmon_monitor_get_thread_group:
 * @self: a monitor
 *
 * Gets the group of the whole thread: every compartment belongs to it, and
 * it is charged the thread's CPU time of each iteration.
 *
 * Returns: (transfer full): the thread group
 *
 * Since: 0.1
 */
PerfmonGroup *
perfmon_monitor_get_thread_group (PerfmonMonitor *self)
{
  PerfmonGroup *group;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);

  g_mutex_lock (&self->registry_lock);
  g_atomic_int_inc (&self->thread_record->holders);
  group = group_for_held_record_locked (self->thread_record);
  g_mutex_unlock (&self->registry_lock);

  return group;
}

/**
 * perfmon_monitor_get_window_group:
 * @self: a monitor
 * @window_id: the window's id, not 0
 * @name: (nullable): a name for the group (UTF-8), used if it is created
 *   now; %NULL names it after @window_id
 *
 * Looks up the group of a window, creating it if it does not exist. It
 * exists while a caller or a compartment of the window holds it.
 *
 * Returns: (transfer full): the window's group
 *
 * Since: 0.1
 */
PerfmonGroup *
perfmon_monitor_get_window_group (PerfmonMonitor *self,
                                  guint64         window_id,
                                  const char     *name)
{
  PerfmonGroup *group;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);
  g_return_val_if_fail (window_id != 0, NULL);
  g_return_val_if_fail (name == NULL || g_utf8_validate (name, -1, NULL), NULL);

  g_mutex_lock (&self->registry_lock);
  group = group_for_held_record_locked (hold_window_record_locked (self, window_id, name));
  g_mutex_unlock (&self->registry_lock);

  return group;
}

/**
 * perfmon_monitor_get_addon_group:
 * @self: a monitor
 * @addon_id: the add-on's id (UTF-8)
 * @name: (nullable): a name for the group (UTF-8), used if it is created
 *   now; %NULL uses @addon_id
 *
 * Looks up the group of an add-on, creating it if it does not exist. It
 * exists while a caller or a compartment of the add-on holds it.
 *
 * Returns: (transfer full): the add-on's group
 *
 * Since: 0.1
 */
PerfmonGroup *
perfmon_monitor_get_addon_group (PerfmonMonitor *self,
                                 const char     *addon_id,
                                 const char     *name)
{
  PerfmonGroup *group;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);
  g_return_val_if_fail (addon_id != NULL && g_utf8_validate (addon_id, -1, NULL), NULL);
  g_return_val_if_fail (name == NULL || g_utf8_validate (name, -1, NULL), NULL);

  g_mutex_lock (&self->registry_lock);
  group = group_for_held_record_locked (hold_addon_record_locked (self, addon_id, name));
  g_mutex_unlock (&self->registry_lock);

  return group;
}

/**
 * perfmon_monitor_create_compartment:
 * @self: a monitor
 * @name: the compartment's name (UTF-8)
 * @window_id: the window the compartment's code runs for, or 0
 * @addon_id: (nullable): the add-on the compartment's code comes from
 *   (UTF-8)
 *
 * Creates a compartment: a unit of code to enter and leave. It belongs to
 * the thread group, to the group of @window_id (if not 0) and to the group
 * of @addon_id (if given), and keeps those alive. Compartments start
 * inactive: set [property@Perfmon.Group:active] to measure one on its own.
 *
 * Returns: (transfer full): a new compartment
 *
 * Since: 0.1
 */
PerfmonGroup *
perfmon_monitor_create_compartment (PerfmonMonitor *self,
                                    const char     *name,
                                    guint64         window_id,
                                    const char     *addon_id)
{
  PerfmonGroupRecord *record;
  PerfmonGroup *group;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);
  g_return_val_if_fail (name != NULL && g_utf8_validate (name, -1, NULL), NULL);
  g_return_val_if_fail (addon_id == NULL || g_utf8_validate (addon_id, -1, NULL), NULL);

  g_mutex_lock (&self->registry_lock);
  record = record_new_locked (self, PERFMON_GROUP_KIND_COMPARTMENT, name);
  if (window_id != 0)
    record->key.parents.window = hold_window_record_locked (self, window_id, NULL);
  if (addon_id != NULL)
    record->key.parents.addon = hold_addon_record_locked (self, addon_id, NULL);
  group = _perfmon_group_new (record);
  g_mutex_unlock (&self->registry_lock);

  return group;
}

/**
 * perfmon_monitor_iteration_done:
 * @self: a monitor
 *
 * Ends an iteration of the thread's event loop: commits what the groups
 * used since the previous iteration ended. Needed only for a monitor
 * without a context; on one with a context it ends the current iteration
 * early. Reads the thread's CPU clock (a system call) each time.
 *
 * Since: 0.1
 */
void
perfmon_monitor_iteration_done (PerfmonMonitor *self)
{
  guint64 now;

  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!check_thread (self, "perfmon_monitor_iteration_done") || !self->enabled)
    return;

  now = _perfmon_clock_cycles ();
  if (self->in_iteration)
    end_iteration (self, now, TRUE);
  begin_iteration (self, now, FALSE);   /* end_iteration() just read the clock */

  schedule_alerts (self);
}

/**
 * perfmon_monitor_blocked_begin:
 * @self: a monitor
 *
 * Starts a stretch of time in which the thread is blocked in a synchronous
 * call to another process (the seed's CPOW clock). The blocked time is
 * added to the groups of the compartments entered around it. Calls nest;
 * end each with [method@Perfmon.Monitor.blocked_end] before leaving the
 * compartment.
 *
 * Since: 0.1
 */
void
perfmon_monitor_blocked_begin (PerfmonMonitor *self)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!check_thread (self, "perfmon_monitor_blocked_begin"))
    return;

  if (self->blocked_depth++ == 0)
    self->blocked_since = g_get_monotonic_time ();
}

/**
 * perfmon_monitor_blocked_end:
 * @self: a monitor
 *
 * Ends the stretch started by [method@Perfmon.Monitor.blocked_begin]. An
 * end without a begin is a programming error: it is reported with
 * g_critical() and does nothing. Bindings call
 * perfmon_monitor_blocked_end_checked() under this name, and get an
 * exception instead.
 *
 * Since: 0.1
 */
void
perfmon_monitor_blocked_end (PerfmonMonitor *self)
{
  g_autoptr(GError) error = NULL;

  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!check_thread (self, "perfmon_monitor_blocked_end"))
    return;
  if (!perfmon_monitor_blocked_end_checked (self, &error))
    g_critical ("perfmon_monitor_blocked_end: no matching perfmon_monitor_blocked_begin()");
}

/**
 * perfmon_monitor_blocked_end_checked: (rename-to perfmon_monitor_blocked_end)
 * @self: a monitor
 * @error: return location for a #GError
 *
 * Ends the stretch started by [method@Perfmon.Monitor.blocked_begin], as
 * perfmon_monitor_blocked_end() does, with an error when there is no such
 * stretch. Bindings get this function under the name `blocked_end`, which
 * then raises an exception.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT)
 *   when no blocked_begin() is open
 *
 * Since: 0.3
 */
gboolean
perfmon_monitor_blocked_end_checked (PerfmonMonitor *self,
                                     GError        **error)
{
  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_thread (self, "perfmon_monitor_blocked_end"))
    return TRUE;   /* said, with the thread's names */

  if (self->blocked_depth == 0)
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "blocked_end: no matching blocked_begin() on this monitor");
      return FALSE;
    }

  if (--self->blocked_depth == 0)
    {
      guint64 blocked = (guint64) MAX (0, g_get_monotonic_time () - self->blocked_since);

      /* Outside any measure, the only group around is the thread's (a
       * sync call from a plain dispatch, or before any loop runs); inside
       * measures, the thread's and those that the measures under way
       * charge, each once. Here rather than at each leave: enter and
       * leave keep nothing for it. */
      if (self->depth == self->base_depth || self->thread_record->active)
        self->thread_record->blocked_time_us += blocked;
      for (guint i = self->base_depth; i < self->depth; i++)
        {
          PerfmonGroupRecord *compartment = self->measures[i].compartment;
          PerfmonGroupRecord *groups[3] = {
            compartment, compartment->key.parents.window, compartment->key.parents.addon,
          };

          for (guint g = 0; g < G_N_ELEMENTS (groups); g++)
            if (groups[g] != NULL && groups[g]->active && !is_covered (self, groups[g], i))
              groups[g]->blocked_time_us += blocked;
        }
    }
  return TRUE;
}

/* Work units are what a poll wrapper sees of a loop, for threads without
 * one: begin is the poll's return (a busy stretch starts), end the next
 * poll's entry (it ends). A watchdog of the loop activity cannot tell
 * them from a loop's iterations. */
static inline gboolean
check_work_unit_call (PerfmonMonitor *self,
                      const char     *function)
{
  if (G_UNLIKELY (self->context != NULL))
    {
      g_critical ("%s: the monitor has a main context, whose loop already marks its busy "
                  "stretches; work units are for monitors made without one", function);
      return FALSE;
    }
  return check_thread (self, function);
}

/**
 * perfmon_monitor_work_begin:
 * @self: a monitor made without a main context
 *
 * Starts a unit of work on a thread that runs no #GMainContext (a worker
 * pulling jobs from a queue, say): until the matching
 * [method@Perfmon.Monitor.work_end] the thread counts as busy, the way a
 * loop is busy from the return of one poll to the next. A
 * [class@Perfmon.HangMonitor] on @self then reports units of work that run
 * longer than its threshold, with the same thresholds, stacks, jank logs
 * and pings as for a main loop; time between units counts as idle.
 *
 * Call it on the monitor's thread. Units nest: only the outermost counts.
 * Work units do not end accounting iterations: call
 * [method@Perfmon.Monitor.iteration_done] for that.
 *
 * Like the poll wrapper it takes no lock, makes no system call and
 * allocates nothing, except to wake a watchdog that slept through the idle
 * time before the unit (and once per thread, the first time a watchdog
 * sees it).
 *
 * Since: 0.1
 */
void
perfmon_monitor_work_begin (PerfmonMonitor *self)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!check_work_unit_call (self, "perfmon_monitor_work_begin") ||
      self->work_depth++ > 0)
    return;

  /* Whether this unit is published decides whether its end is: a watchdog
   * that starts in the middle of a unit sees the next one. */
  self->work_published = g_atomic_int_get (&self->activity.watched);
  if (!self->work_published)
    return;
  if (G_UNLIKELY (self->activity.thread_id == 0))
    _perfmon_loop_activity_adopt_thread (&self->activity);
  _perfmon_loop_activity_busy_begin (&self->activity, _perfmon_clock_cycles ());
}

/**
 * perfmon_monitor_work_end:
 * @self: a monitor made without a main context
 *
 * Ends the unit of work started by [method@Perfmon.Monitor.work_begin]:
 * the thread is idle until the next one. No lock, no system call, no
 * allocation.
 *
 * Since: 0.1
 */
void
perfmon_monitor_work_end (PerfmonMonitor *self)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!check_work_unit_call (self, "perfmon_monitor_work_end"))
    return;

  if (self->work_depth == 0)
    {
      g_critical ("perfmon_monitor_work_end: no matching perfmon_monitor_work_begin()");
      return;
    }
  if (--self->work_depth > 0 || !self->work_published)
    return;

  self->work_published = FALSE;
  _perfmon_loop_activity_busy_end (&self->activity, _perfmon_clock_cycles ());
}

/**
 * perfmon_monitor_snapshot:
 * @self: a monitor
 *
 * Takes a snapshot of every live group's counters, with the process's
 * identity and CPU times. Every counter counts finished iterations: what
 * a group did in the current iteration (taken from a dispatch, the
 * snapshot is in the middle of one) is in the next snapshot, its ticks,
 * CPU time and histogram together, so that the difference of two
 * snapshots is consistent. Call it on the monitor's thread.
 *
 * Returns: (transfer full): a new snapshot
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_monitor_snapshot (PerfmonMonitor *self)
{
  g_autoptr(GPtrArray) groups = NULL;
  struct rusage usage = { 0 };

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);

  if (!check_thread (self, "perfmon_monitor_snapshot"))
    return NULL;

  reap_dead_records (self);
  fold_span (self);

  g_mutex_lock (&self->registry_lock);
  groups = g_ptr_array_new_full (self->records->len, (GDestroyNotify) perfmon_group_stats_unref);
  for (guint i = 0; i < self->records->len; i++)
    {
      PerfmonGroupRecord *record = g_ptr_array_index (self->records, i);
      PerfmonGroupStats *stats;
      guint64 window_id = 0;
      const char *addon_id = NULL;
      guint64 cpu_time_cycles;
      guint64 ticks;

      if (_perfmon_group_record_is_dead (record))
        continue;

      if (record->kind == PERFMON_GROUP_KIND_WINDOW)
        window_id = record->key.window_id;
      else if (record->kind == PERFMON_GROUP_KIND_ADDON)
        addon_id = record->key.addon_id;
      else if (record->kind == PERFMON_GROUP_KIND_COMPARTMENT)
        {
          PerfmonGroupRecord *window = record->key.parents.window;
          PerfmonGroupRecord *addon = record->key.parents.addon;

          window_id = window != NULL ? window->key.window_id : 0;
          addon_id = addon != NULL ? addon->key.addon_id : NULL;
        }

      stats = _perfmon_group_stats_new (record->id, record->kind, record->name, window_id, addon_id);
      cpu_time_cycles = record->cpu_time_cycles;
      ticks = record->ticks;
      /* Finished iterations only, like the histograms (counted at the
       * commit) and the thread group (charged then): a group that ran in
       * the current iteration was charged at its leave, and a commit may
       * still scale that down. The thread group's stamp is never set. */
      if (record->kind != PERFMON_GROUP_KIND_THREAD && record->stamp == self->iteration && ticks > 0)
        {
          cpu_time_cycles -= MIN (record->recent_cycles, cpu_time_cycles);
          ticks--;
        }
      stats->cpu_time = (guint64) ((double) cpu_time_cycles * self->us_per_cycle);
      stats->blocked_time = record->blocked_time_us;
      stats->sampled_cpu_time = record->sampled_cpu_us;
      stats->ticks = ticks;
      for (guint d = 0; d < PERFMON_N_DURATIONS; d++)
        stats->durations[d] = record->durations[d];
      g_ptr_array_add (groups, stats);
    }
  g_mutex_unlock (&self->registry_lock);

  getrusage (RUSAGE_SELF, &usage);

  return _perfmon_snapshot_new (g_get_monotonic_time (), g_get_real_time (),
                                0,
                                (guint) getpid (),
                                _perfmon_process_name (),
                                (guint64) usage.ru_utime.tv_sec * G_USEC_PER_SEC + (guint64) usage.ru_utime.tv_usec,
                                (guint64) usage.ru_stime.tv_sec * G_USEC_PER_SEC + (guint64) usage.ru_stime.tv_usec,
                                g_steal_pointer (&groups));
}

void
_perfmon_monitor_add_sampled_cpu_time (PerfmonMonitor *self,
                                       PerfmonGroup   *addon,
                                       guint64         cpu_us)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));
  g_return_if_fail (PERFMON_IS_GROUP (addon) && addon->record->kind == PERFMON_GROUP_KIND_ADDON);

  g_mutex_lock (&self->registry_lock);
  addon->record->sampled_cpu_us += cpu_us;
  g_mutex_unlock (&self->registry_lock);
}

guint
_perfmon_monitor_count_records (PerfmonMonitor *self)
{
  guint n;

  g_mutex_lock (&self->registry_lock);
  n = self->records->len;
  g_mutex_unlock (&self->registry_lock);

  return n;
}

guint64
_perfmon_monitor_count_cpu_clock_reads (PerfmonMonitor *self)
{
  return self->n_cpu_clock_reads;
}

void
_perfmon_monitor_dilate_time (PerfmonMonitor *self,
                              guint           factor)
{
  g_return_if_fail (PERFMON_IS_MONITOR (self));
  g_return_if_fail (factor >= 1);

  self->read_stretch_cycles *= factor;
  self->long_iteration_cycles *= factor;
  self->anchor_max_age_cycles *= factor;
  self->long_dispatch_cycles *= factor;
  if (self->anchor_stale_cycles != 0)
    self->anchor_stale_cycles = self->anchor_cycles + self->anchor_max_age_cycles;
  if (self->lean_wall_cycles != 0)
    self->lean_wall_cycles = self->read_stretch_cycles;
}

/* --- for the automatic groups (perfmon-automatic.c) -------------------- */

guint
_perfmon_monitor_get_reap_count (PerfmonMonitor *self)
{
  return __atomic_load_n (&self->n_reaps, __ATOMIC_ACQUIRE);
}

PerfmonAutomatic *
_perfmon_monitor_get_automatic (PerfmonMonitor *self)
{
  return self->automatic;
}

gboolean
_perfmon_monitor_claim_thread (PerfmonMonitor *self)
{
  return claim_thread (self);
}

/* A dispatch that ran @cycles: one of a millisecond or more goes into the
 * busy stretch's list of longest dispatches, for a watching hang monitor. */
static G_GNUC_NO_INLINE __attribute__ ((cold)) void
note_long_dispatch (PerfmonMonitor     *self,
                    PerfmonGroupRecord *record,
                    guint64             cycles)
{
  if (g_atomic_int_get (&self->activity.watched))
    _perfmon_loop_activity_note_dispatch (&self->activity, record->name, cycles);
}

/* A dispatch left the slow way ended, its name gone (the caller restored
 * the outer one): a watchdog that waits for the end of a dispatch charged
 * exactly is woken, at once if the dispatch was inside another measure
 * (what encloses it goes on), else when the thread next dispatches or
 * ends the stretch (_perfmon_loop_activity_dispatch_exact_end()). Two
 * locked instructions, for dispatches of READ_STRETCH_US or more (and the
 * rare others off the lean path): a dispatch the watchdog finds running
 * is one of those but by chance. */
static inline void
note_dispatch_end (PerfmonMonitor *self)
{
  if (!g_atomic_int_get (&self->activity.watched))
    return;
  if (self->depth == 0)
    _perfmon_loop_activity_dispatch_exact_end (&self->activity, _perfmon_clock_cycles ());
  else
    _perfmon_loop_activity_exact_end (&self->activity);
}

/* Any dispatch of the hook: enter and leave inline into it (flatten), with
 * the observer, if any, around the dispatch. */
static G_GNUC_NO_INLINE __attribute__ ((flatten)) gboolean
dispatch_measured (PerfmonMonitor      *self,
                   PerfmonGroupRecord  *record,
                   PerfmonDispatchFunc  dispatch,
                   GSource             *source,
                   GSourceFunc          callback,
                   gpointer             user_data)
{
  const PerfmonDispatchObserver *observer = _perfmon_dispatch_get_observer ();
  const char *outer_name = _perfmon_current_dispatch_name;
  gpointer token = NULL;
  gboolean again;
  guint64 cycles;

  _perfmon_loop_activity_dispatch_begin (&self->activity);
  _perfmon_monitor_enter (self, record);
  _perfmon_set_dispatch_name (record->name);
  if (observer != NULL)
    token = observer->dispatch_begin (source, record->name);
  again = dispatch (source, callback, user_data);
  if (observer != NULL)
    observer->dispatch_end (source, token);
  _perfmon_set_dispatch_name (outer_name);
  cycles = _perfmon_monitor_leave (self, record);
  if (G_UNLIKELY (cycles >= self->long_dispatch_cycles))
    note_long_dispatch (self, record, cycles);
  note_dispatch_end (self);
  return again;
}

/* The leave of a dispatch that the lean path entered, when it cannot be
 * lean: a nested loop cancelled it, compartments left unbalanced, the
 * measure is long enough for a reading of the CPU clock, or it is a long
 * dispatch. */
static G_GNUC_NO_INLINE gboolean
leave_dispatch_slowly (PerfmonMonitor     *self,
                       PerfmonGroupRecord *record,
                       gboolean            again)
{
  guint64 cycles = _perfmon_monitor_leave (self, record);

  if (G_UNLIKELY (cycles >= self->long_dispatch_cycles))
    note_long_dispatch (self, record, cycles);
  note_dispatch_end (self);
  return again;
}

/* Runs @dispatch of @source as a measure of @record (an automatic group),
 * with the dispatch's name set for stack captures and the observer, if
 * any, around it; notes a long dispatch for the hang monitor. On the
 * monitor's thread (the hook checked it).
 *
 * The common case (in an iteration, nesting left) takes a lean path: it
 * pushes the measure as perfmon_group_enter() does and, for the outermost
 * short measure left as it began, charges it as perfmon_group_leave()
 * does, with the same Measure, so that compartments entered inside the
 * dispatch nest as always; anything else goes the general way. */
__attribute__ ((hot)) gboolean
_perfmon_monitor_dispatch_in_group (PerfmonMonitor      *self,
                                    PerfmonGroupRecord  *record,
                                    PerfmonDispatchFunc  dispatch,
                                    GSource             *source,
                                    GSourceFunc          callback,
                                    gpointer             user_data)
{
  const PerfmonDispatchObserver *observer;
  const char *outer_name;
  guint depth = self->depth;
  guint64 start;
  guint64 cycles;
  gboolean again;

  if (G_UNLIKELY (depth >= self->enter_limit))
    return dispatch_measured (self, record, dispatch, source, callback, user_data);

  _perfmon_loop_activity_dispatch_begin (&self->activity);
  start = _perfmon_clock_cycles ();
  if (G_UNLIKELY (start >= self->anchor_stale_cycles))
    push_measure_with_new_anchor (self, depth, record, start);
  else
    push_measure (self, depth, record, start);

  outer_name = _perfmon_current_dispatch_name;
  _perfmon_set_dispatch_name (record->name);
  observer = _perfmon_dispatch_peek_observer ();
  if (G_LIKELY (observer == NULL))
    again = dispatch (source, callback, user_data);
  else
    {
      gpointer token = observer->dispatch_begin (source, record->name);

      again = dispatch (source, callback, user_data);
      observer->dispatch_end (source, token);
    }
  _perfmon_set_dispatch_name (outer_name);

  /* Under READ_STRETCH_US, far under a long dispatch. */
  if (G_UNLIKELY (!leave_lean (self, record, self->depth, _perfmon_clock_cycles (), &cycles)))
    return leave_dispatch_slowly (self, record, again);
  return again;
}

/* See perfmon-monitor-private.h. Before the loop first polls, an
 * iteration may be under way already (begun by a measure: a dispatch the
 * program made itself, or a compartment): it becomes the start-up's. The
 * dispatch name is set for stack captures of a hang in it, and cleared at
 * the start-up's commit, which the anchor made stale takes off
 * monitor_poll()'s lean path. */
void
_perfmon_monitor_begin_startup (PerfmonMonitor *self)
{
  guint64 now;

  g_return_if_fail (PERFMON_IS_MONITOR (self));

  if (!self->enabled || self->poll_slot < 0 || !__atomic_load_n (&self->outside_on, __ATOMIC_RELAXED) ||
      self->depth > 0 ||
      self->startup_iteration != 0 || !claim_thread (self))
    return;

  now = _perfmon_clock_cycles ();
  if (!self->in_iteration)
    begin_iteration (self, now, TRUE);
  self->startup_iteration = self->iteration;
  self->anchor_stale_cycles = now;
  _perfmon_set_dispatch_name (startup_dispatch_name);
  if (g_atomic_int_get (&self->activity.watched) &&
      __atomic_load_n (&self->activity.phase, __ATOMIC_RELAXED) != PERFMON_LOOP_BUSY)
    {
      if (self->activity.thread_id == 0)
        adopt_watched_thread (self);
      _perfmon_loop_activity_busy_begin (&self->activity, now);
    }
}

PerfmonGroupRecord *
_perfmon_monitor_new_automatic_record (PerfmonMonitor *self,
                                       const char     *name)
{
  PerfmonGroupRecord *record;

  g_mutex_lock (&self->registry_lock);
  record = record_new_locked (self, PERFMON_GROUP_KIND_COMPARTMENT, name);
  record->active = TRUE;
  g_mutex_unlock (&self->registry_lock);

  return record;
}

void
_perfmon_monitor_set_record_parents (PerfmonMonitor     *self,
                                     PerfmonGroupRecord *record,
                                     guint64             window_id,
                                     const char         *addon_id)
{
  PerfmonGroupRecord *old_window = record->key.parents.window;
  PerfmonGroupRecord *old_addon = record->key.parents.addon;

  g_mutex_lock (&self->registry_lock);
  record->key.parents.window = window_id != 0 ? hold_window_record_locked (self, window_id, NULL) : NULL;
  record->key.parents.addon = addon_id != NULL ? hold_addon_record_locked (self, addon_id, NULL) : NULL;
  g_mutex_unlock (&self->registry_lock);

  /* A measure under way keeps charging the old parents it acquired: they
   * are freed at the next commit at the earliest, after its leave. */
  if (old_window != NULL)
    _perfmon_group_record_release (old_window);
  if (old_addon != NULL)
    _perfmon_group_record_release (old_addon);
}

PerfmonGroup *
_perfmon_monitor_group_for_compartment (PerfmonMonitor     *self,
                                        PerfmonGroupRecord *record)
{
  PerfmonGroup *group = record->group.compartment;

  if (group != NULL)
    return g_object_ref (group);

  g_atomic_int_inc (&record->holders);   /* the new object's */
  return _perfmon_group_new (record);
}
