/* perfmon-group-private.h: the accounting record behind a PerfmonGroup
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-group.h"
#include "perfmon-monitor.h"
#include "perfmon-group-stats.h"

G_BEGIN_DECLS

/* Why the counters live in a record apart from the GObject: the last
 * reference to a group may go on any thread, at any moment, even between a
 * leave() and the commit that charges the group for it. The record is owned
 * by the monitor and freed only by the monitor, on its own thread, after the
 * commit ("reaping"), so the hot path never touches freed memory and never
 * takes a lock.
 *
 * A record lives while it has holders: its group object (thread, window and
 * add-on groups may lose their object and get a new one from a later lookup,
 * keeping their id) and, for window and add-on records, each compartment
 * that belongs to them. When the last holder goes, the record is marked dead
 * and pushed on the monitor's lock-free dead stack; snapshots skip it. */
typedef struct _PerfmonGroupRecord PerfmonGroupRecord;

struct _PerfmonGroupRecord
{
  /* The first 64 bytes are what enter, leave and a commit touch: kept
   * together so an iteration touches as few cache lines as it can. */
  PerfmonMonitor     *monitor;        /* not a reference */
  /* Memory per group is a budget (256 bytes with its object): kinds that
   * never use a field share its room with kinds that do. */
  union {
    guint64           window_id;      /* WINDOW */
    char             *addon_id;       /* ADDON (owned) */
    struct {
      PerfmonGroupRecord *window;     /* held, or NULL */
      PerfmonGroupRecord *addon;      /* held, or NULL */
    } parents;                        /* COMPARTMENT */
  } key;
  /* Written on the monitor's thread only. */
  PerfmonGroupRecord *next_executed;
  guint64             recent_cycles;   /* charged this iteration */
  guint64             cpu_time_cycles; /* converted at snapshot: commits stay integer */
  guint64             ticks;
  guint8              kind;
  guint8              active;
  guint8              spare;          /* was "acquired": measures no longer mark groups */
  guint8              reserved;
  /* The monitor's iteration in which the group last ran: the recent_*
   * fields and next_executed mean something only while it is current, so
   * a new iteration resets every group at once. */
  guint32             stamp;

  /* Touched by blocked time, lookups and snapshots. */
  gint                holders;        /* atomic; 0 = dead, never revived */
  guint64             id;
  union {
    GWeakRef          object;         /* THREAD, WINDOW, ADDON: looked up */
    PerfmonGroup     *compartment;    /* COMPARTMENT: dies with its object */
  } group;
  PerfmonGroupRecord *next_dead;      /* on the dead stack */
  guint64             blocked_time_us;
  /* ADDON: CPU time estimated by sampling (µs), under the registry lock:
   * see _perfmon_monitor_add_sampled_cpu_time(). */
  guint64             sampled_cpu_us;
  guint32             durations[PERFMON_N_DURATIONS]; /* saturating */
  guint               registry_index;

  char                name[];         /* in the same allocation */
};

G_STATIC_ASSERT (G_STRUCT_OFFSET (PerfmonGroupRecord, holders) == 64);

/* Parents of a compartment, NULL for other kinds. */
#define PERFMON_RECORD_WINDOW(r) ((r)->kind == PERFMON_GROUP_KIND_COMPARTMENT ? (r)->key.parents.window : NULL)
#define PERFMON_RECORD_ADDON(r)  ((r)->kind == PERFMON_GROUP_KIND_COMPARTMENT ? (r)->key.parents.addon : NULL)

static inline gboolean
_perfmon_group_record_is_dead (PerfmonGroupRecord *record)
{
  return g_atomic_int_get (&record->holders) == 0;
}

struct _PerfmonGroup
{
  GObject             parent_instance;
  PerfmonGroupRecord *record;
  /* The record again if it is a compartment's, else NULL: enter and leave
   * check the kind with one load. */
  PerfmonGroupRecord *compartment;
};

/* Holder counting; see above. */
gboolean      _perfmon_group_record_try_hold (PerfmonGroupRecord *record);
void          _perfmon_group_record_release  (PerfmonGroupRecord *record);

/* The record's group object, created for @record, which it holds. */
PerfmonGroup *_perfmon_group_new             (PerfmonGroupRecord *record);

G_END_DECLS
