/* perfmon-snapshot-builder.c: a snapshot made from counters
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-error.h"
#include "perfmon-snapshot-builder.h"
#include "perfmon-snapshot-private.h"

/**
 * PerfmonSnapshotBuilder:
 *
 * Makes a [class@Perfmon.Snapshot] from counters that did not come from a
 * [class@Perfmon.Monitor] of this process: sums over several processes,
 * counters kept by a script, test data.
 *
 * Set the snapshot's times and process, add its groups in the order
 * [method@Perfmon.Snapshot.get_groups] will return them, then call
 * [method@Perfmon.SnapshotBuilder.end]. The data is checked as strictly as
 * that of [ctor@Perfmon.Snapshot.new_from_json]: whatever a builder makes
 * reads back from the snapshot's JSON and variant forms.
 *
 * ```c
 * g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
 * const guint64 durations[PERFMON_N_DURATIONS] = { 3, 1, };
 *
 * perfmon_snapshot_builder_set_times (builder, g_get_monotonic_time (), g_get_real_time (), 0);
 * perfmon_snapshot_builder_set_process (builder, getpid (), "merged", 0, 0);
 * perfmon_snapshot_builder_add_group (builder, 1, PERFMON_GROUP_KIND_WINDOW, "Inbox", 12, NULL,
 *                                     4500, 0, 10, durations, PERFMON_N_DURATIONS);
 * snapshot = perfmon_snapshot_builder_end (builder, &error);
 * ```
 *
 * Since: 0.2
 */

struct _PerfmonSnapshotBuilder
{
  GObject               parent_instance;

  PerfmonSnapshotFields fields;
  /* The first argument add_group() could not take, reported by end(). */
  GError               *error;
};

G_DEFINE_FINAL_TYPE (PerfmonSnapshotBuilder, perfmon_snapshot_builder, G_TYPE_OBJECT)

static void
builder_reset (PerfmonSnapshotBuilder *self)
{
  _perfmon_snapshot_fields_clear (&self->fields);
  g_clear_error (&self->error);
  self->fields = (PerfmonSnapshotFields) {
    .groups = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_group_stats_unref),
  };
}

static void
perfmon_snapshot_builder_finalize (GObject *object)
{
  PerfmonSnapshotBuilder *self = PERFMON_SNAPSHOT_BUILDER (object);

  _perfmon_snapshot_fields_clear (&self->fields);
  g_clear_error (&self->error);

  G_OBJECT_CLASS (perfmon_snapshot_builder_parent_class)->finalize (object);
}

static void
perfmon_snapshot_builder_class_init (PerfmonSnapshotBuilderClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = perfmon_snapshot_builder_finalize;
}

static void
perfmon_snapshot_builder_init (PerfmonSnapshotBuilder *self)
{
  builder_reset (self);
}

/**
 * perfmon_snapshot_builder_new:
 *
 * Creates an empty builder: times 0, pid 0 (which
 * [method@Perfmon.SnapshotBuilder.end] refuses: set it), an empty process
 * name and no groups.
 *
 * Returns: (transfer full): a new builder
 *
 * Since: 0.2
 */
PerfmonSnapshotBuilder *
perfmon_snapshot_builder_new (void)
{
  return g_object_new (PERFMON_TYPE_SNAPSHOT_BUILDER, NULL);
}

/**
 * perfmon_snapshot_builder_set_times:
 * @self: a `PerfmonSnapshotBuilder`
 * @timestamp: the monotonic time of the snapshot, in microseconds (see
 *   [method@Perfmon.Snapshot.get_timestamp]); not negative
 * @wall_time: the wall-clock time of @timestamp, in microseconds since
 *   1970-01-01 UTC, or 0 if not known; not negative
 * @interval: 0 for a snapshot of counters at one moment, the time covered
 *   for a difference; not negative
 *
 * Sets the times of the snapshot.
 *
 * Since: 0.2
 */
void
perfmon_snapshot_builder_set_times (PerfmonSnapshotBuilder *self,
                                    gint64                  timestamp,
                                    gint64                  wall_time,
                                    gint64                  interval)
{
  g_return_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self));

  self->fields.timestamp = timestamp;
  self->fields.wall_time = wall_time;
  self->fields.interval = interval;
}

/**
 * perfmon_snapshot_builder_set_process:
 * @self: a `PerfmonSnapshotBuilder`
 * @pid: the id of the process the snapshot describes, at least 1
 * @process_name: (nullable): its name, UTF-8; %NULL for none
 * @user_time: the CPU time it spent in user mode, in microseconds
 * @system_time: the CPU time it spent in the kernel, in microseconds
 *
 * Sets the process the snapshot describes.
 *
 * Since: 0.2
 */
void
perfmon_snapshot_builder_set_process (PerfmonSnapshotBuilder *self,
                                      guint                   pid,
                                      const char             *process_name,
                                      guint64                 user_time,
                                      guint64                 system_time)
{
  g_return_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self));

  self->fields.pid = pid;
  g_free (self->fields.process_name);
  self->fields.process_name = g_strdup (process_name);
  self->fields.user_time = user_time;
  self->fields.system_time = system_time;
}

/**
 * perfmon_snapshot_builder_add_group:
 * @self: a `PerfmonSnapshotBuilder`
 * @id: the id of the group, unique in the snapshot
 * @kind: what the group stands for
 * @name: the name of the group, UTF-8
 * @window_id: its window id, 0 for none
 * @addon_id: (nullable): its add-on id, UTF-8, %NULL for none
 * @cpu_time: the CPU time charged to it, in microseconds
 * @blocked_time: the time it spent blocked in synchronous cross-process
 *   calls, in microseconds
 * @ticks: the number of iterations in which it ran
 * @durations: (array length=n_durations): the exceedance histogram:
 *   %PERFMON_N_DURATIONS counters, each at most the one before it, the
 *   first at most @ticks (see [method@Perfmon.GroupStats.get_durations])
 * @n_durations: the length of @durations, %PERFMON_N_DURATIONS
 *
 * Adds a group after those already added. The arguments are checked by
 * [method@Perfmon.SnapshotBuilder.end], which names the first offending
 * one.
 *
 * Since: 0.2
 */
void
perfmon_snapshot_builder_add_group (PerfmonSnapshotBuilder *self,
                                    guint64                 id,
                                    PerfmonGroupKind        kind,
                                    const char             *name,
                                    guint64                 window_id,
                                    const char             *addon_id,
                                    guint64                 cpu_time,
                                    guint64                 blocked_time,
                                    guint64                 ticks,
                                    const guint64          *durations,
                                    gsize                   n_durations)
{
  PerfmonGroupStats *stats;

  g_return_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self));
  g_return_if_fail (name != NULL);
  g_return_if_fail (durations != NULL || n_durations == 0);

  if (n_durations != PERFMON_N_DURATIONS)
    {
      if (self->error == NULL)
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%u]", self->fields.groups->len);
          _perfmon_snapshot_set_field_error (&self->error, prefix, "durations",
                                             "expected an array of %d non-negative integers, got %"
                                             G_GSIZE_FORMAT " elements",
                                             PERFMON_N_DURATIONS, n_durations);
        }
      n_durations = 0;
    }

  stats = _perfmon_group_stats_new (id, kind, name, window_id, addon_id);
  stats->cpu_time = cpu_time;
  stats->blocked_time = blocked_time;
  stats->ticks = ticks;
  if (n_durations != 0)
    memcpy (stats->durations, durations, sizeof stats->durations);
  g_ptr_array_add (self->fields.groups, stats);
}

/**
 * perfmon_snapshot_builder_add_module:
 * @self: a `PerfmonSnapshotBuilder`
 * @name: the module's file name, as `module+0x…` group names use it
 * @path: the file the process loaded, an absolute path
 * @base: the module's load base in the process
 * @build_id: its GNU build id, lowercase hex, or "" if it has none
 *
 * Records a module that group names of the form `module+0xOFFSET` refer
 * to, once (see [method@Perfmon.Snapshot.lookup_module]). The arguments are
 * checked by [method@Perfmon.SnapshotBuilder.end], which names the first
 * offending one, such as `modules[0].build_id`.
 *
 * Since: 0.3
 */
void
perfmon_snapshot_builder_add_module (PerfmonSnapshotBuilder *self,
                                     const char             *name,
                                     const char             *path,
                                     guint64                 base,
                                     const char             *build_id)
{
  g_return_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self));
  g_return_if_fail (name != NULL);
  g_return_if_fail (path != NULL);
  g_return_if_fail (build_id != NULL);

  if (self->fields.modules == NULL)
    self->fields.modules = g_ptr_array_new_with_free_func (_perfmon_recorded_module_free);
  g_ptr_array_add (self->fields.modules, _perfmon_recorded_module_new (name, path, base, build_id));
}

/**
 * perfmon_snapshot_builder_set_sampled_cpu_time:
 * @self: a `PerfmonSnapshotBuilder`
 * @sampled_cpu_time: CPU time charged by sampling, in microseconds (see
 *   [method@Perfmon.GroupStats.get_sampled_cpu_time])
 *
 * Sets the sampled CPU time of the group added last, which must be an
 * add-on group if it is not 0 ([method@Perfmon.SnapshotBuilder.end]
 * checks it).
 *
 * Since: 0.3
 */
void
perfmon_snapshot_builder_set_sampled_cpu_time (PerfmonSnapshotBuilder *self,
                                               guint64                 sampled_cpu_time)
{
  PerfmonGroupStats *stats;

  g_return_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self));
  g_return_if_fail (self->fields.groups->len > 0);

  stats = g_ptr_array_index (self->fields.groups, self->fields.groups->len - 1);
  stats->sampled_cpu_time = sampled_cpu_time;
}

/**
 * perfmon_snapshot_builder_end:
 * @self: a `PerfmonSnapshotBuilder`
 * @error: return location for a #GError
 *
 * Makes the snapshot, after the checks of
 * [ctor@Perfmon.Snapshot.new_from_json]: the pid at least 1, times not
 * negative, kinds valid, strings UTF-8, group ids unique, histograms in
 * order. If one fails, this fails with %PERFMON_ERROR_INVALID_DATA and a
 * message that names the offending member, such as
 * `groups[3].durations`.
 *
 * Either way, @self is empty again afterwards, as
 * [ctor@Perfmon.SnapshotBuilder.new] made it, ready for another snapshot.
 *
 * Returns: (transfer full): the snapshot, or %NULL on error
 *
 * Since: 0.2
 */
PerfmonSnapshot *
perfmon_snapshot_builder_end (PerfmonSnapshotBuilder  *self,
                              GError                 **error)
{
  PerfmonSnapshot *snapshot = NULL;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT_BUILDER (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (self->error != NULL)
    g_propagate_error (error, g_steal_pointer (&self->error));
  else
    snapshot = _perfmon_snapshot_new_checked (&self->fields, error);

  builder_reset (self);

  return snapshot;
}
