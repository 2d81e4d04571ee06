/* perfmon-group-stats.c: the counters of one group in a snapshot
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-group-stats-private.h"

/**
 * PerfmonGroupStats:
 *
 * The counters of one [class@Perfmon.Group] at the moment a
 * [class@Perfmon.Snapshot] was taken, or their growth between two snapshots
 * (see [method@Perfmon.Snapshot.subtract]).
 *
 * A `PerfmonGroupStats` is immutable and reference counted: it is shared by
 * the snapshots that contain it and may be kept after they are gone, from
 * any thread.
 *
 * Besides the identity of the group (id, kind, name, window and add-on), it
 * holds the CPU time charged to the group, the time the group spent blocked
 * in synchronous cross-process calls, the number of event-loop iterations
 * in which it ran ("ticks") and an exceedance histogram: bucket `i` of
 * [method@Perfmon.GroupStats.get_durations] counts the iterations in which
 * the group's CPU time exceeded 2^i ms. An iteration that exceeds 2^(i+1) ms
 * also exceeds 2^i ms, so the buckets never grow with `i`, and bucket 0 never
 * exceeds the ticks.
 *
 * Since: 0.1
 */

G_DEFINE_BOXED_TYPE (PerfmonGroupStats, perfmon_group_stats,
                     perfmon_group_stats_ref, perfmon_group_stats_unref)

/* One allocation per group, strings included: snapshots of tens of
 * thousands of groups are made, subtracted and freed in one go. */
static PerfmonGroupStats *
group_stats_alloc (const PerfmonGroupStats *counters,
                   const char              *name,
                   const char              *addon_id)
{
  gsize name_size = strlen (name) + 1;
  gsize addon_size = addon_id != NULL ? strlen (addon_id) + 1 : 0;
  PerfmonGroupStats *self = g_malloc (sizeof *self + name_size + addon_size);

  *self = *counters;
  g_atomic_ref_count_init (&self->ref_count);
  self->name = memcpy (self->strings, name, name_size);
  self->addon_id = addon_id != NULL ? memcpy (self->strings + name_size, addon_id, addon_size) : NULL;

  return self;
}

PerfmonGroupStats *
_perfmon_group_stats_new (guint64           id,
                          PerfmonGroupKind  kind,
                          const char       *name,
                          guint64           window_id,
                          const char       *addon_id)
{
  PerfmonGroupStats counters = {
    .id = id,
    .kind = kind,
    .window_id = window_id,
  };

  g_return_val_if_fail (name != NULL, NULL);

  return group_stats_alloc (&counters, name, addon_id);
}

PerfmonGroupStats *
_perfmon_group_stats_copy (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return group_stats_alloc (self, self->name, self->addon_id);
}

/**
 * perfmon_group_stats_ref:
 * @self: a `PerfmonGroupStats`
 *
 * Acquires a reference on @self.
 *
 * Returns: (transfer full): @self
 *
 * Since: 0.1
 */
PerfmonGroupStats *
perfmon_group_stats_ref (PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);

  return self;
}

/**
 * perfmon_group_stats_unref:
 * @self: (transfer full): a `PerfmonGroupStats`
 *
 * Releases a reference on @self; the last one frees it.
 *
 * Since: 0.1
 */
void
perfmon_group_stats_unref (PerfmonGroupStats *self)
{
  g_return_if_fail (self != NULL);

  if (g_atomic_ref_count_dec (&self->ref_count))
    g_free (self);
}

/**
 * perfmon_group_stats_get_id:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the id of the group, unique in its process and never reused.
 *
 * Returns: the id of the group
 *
 * Since: 0.1
 */
guint64
perfmon_group_stats_get_id (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->id;
}

/**
 * perfmon_group_stats_get_kind:
 * @self: a `PerfmonGroupStats`
 *
 * Gets what the group stands for.
 *
 * Returns: the kind of the group
 *
 * Since: 0.1
 */
PerfmonGroupKind
perfmon_group_stats_get_kind (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, PERFMON_GROUP_KIND_THREAD);

  return self->kind;
}

/**
 * perfmon_group_stats_get_name:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the human-readable name of the group.
 *
 * Returns: (transfer none): the name of the group, possibly empty
 *
 * Since: 0.1
 */
const char *
perfmon_group_stats_get_name (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->name;
}

/**
 * perfmon_group_stats_get_window_id:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the window the group belongs to.
 *
 * Returns: the window id, or 0 if the group belongs to no window
 *
 * Since: 0.1
 */
guint64
perfmon_group_stats_get_window_id (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->window_id;
}

/**
 * perfmon_group_stats_get_addon_id:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the add-on the group belongs to.
 *
 * Returns: (transfer none) (nullable): the add-on id, or %NULL if the group
 *   belongs to no add-on
 *
 * Since: 0.1
 */
const char *
perfmon_group_stats_get_addon_id (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->addon_id;
}

/**
 * perfmon_group_stats_get_cpu_time:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the CPU time charged to the group.
 *
 * Returns: the CPU time, in microseconds
 *
 * Since: 0.1
 */
guint64
perfmon_group_stats_get_cpu_time (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->cpu_time;
}

/**
 * perfmon_group_stats_get_blocked_time:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the time the group spent blocked in synchronous cross-process calls
 * (see [method@Perfmon.Monitor.blocked_begin]).
 *
 * Returns: the blocked time, in microseconds
 *
 * Since: 0.1
 */
guint64
perfmon_group_stats_get_blocked_time (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->blocked_time;
}

/**
 * perfmon_group_stats_get_sampled_cpu_time:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the CPU time charged to an add-on group by sampling, an estimate,
 * apart from its exact CPU time ([method@Perfmon.GroupStats.get_cpu_time],
 * the sum of its compartments' measures).
 *
 * Code of an add-on that runs outside its own compartments (in a GNOME
 * Shell extension: promise jobs, virtual functions, paint and allocation
 * in the frame clock, D-Bus methods, garbage collection) is charged this
 * way: while a dispatch runs long, the JavaScript stack is sampled, and
 * the CPU time between samples goes to the add-on whose code is on it.
 * Dispatches already charged to an add-on exactly are not sampled.
 *
 * Returns: the sampled CPU time, in microseconds; 0 for groups other than
 *   add-on groups
 *
 * Since: 0.3
 */
guint64
perfmon_group_stats_get_sampled_cpu_time (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->sampled_cpu_time;
}

/**
 * perfmon_group_stats_get_ticks:
 * @self: a `PerfmonGroupStats`
 *
 * Gets the number of event-loop iterations in which the group ran.
 *
 * Returns: the number of iterations
 *
 * Since: 0.1
 */
guint64
perfmon_group_stats_get_ticks (const PerfmonGroupStats *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->ticks;
}

/**
 * perfmon_group_stats_get_durations:
 * @self: a `PerfmonGroupStats`
 * @n_durations: (out) (optional): return location for the number of
 *   buckets, always %PERFMON_N_DURATIONS
 *
 * Gets the exceedance histogram of the group: element `i` is the number of
 * iterations in which the group's CPU time exceeded 2^i ms, from 1 ms for
 * element 0 to 512 ms for element 9.
 *
 * Returns: (transfer none) (array length=n_durations): the
 *   %PERFMON_N_DURATIONS buckets, owned by @self
 *
 * Since: 0.1
 */
const guint64 *
perfmon_group_stats_get_durations (const PerfmonGroupStats *self,
                                   gsize                   *n_durations)
{
  if (n_durations != NULL)
    *n_durations = 0;

  g_return_val_if_fail (self != NULL, NULL);

  if (n_durations != NULL)
    *n_durations = PERFMON_N_DURATIONS;

  return self->durations;
}
