/* perfmond-aggregate.c: the e10s merge of the seed, across processes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Firefox's PerformanceStats.jsm showed one add-on or one web page as one
 * line even when its code ran in several content processes. Here: a window
 * group (same window id) or an add-on group (same add-on id) in several
 * processes is one group of the merged snapshot, whose counters are the
 * sums. Thread and compartment groups belong to one process and stay
 * apart; their names gain the process's name and pid so that a reader can
 * tell them apart.
 *
 * The merged groups need ids unique in the merged snapshot and, so that two
 * aggregates can be subtracted, stable from one merge to the next. Ids are
 * handed out from a counter and remembered per key ("w:WINDOW",
 * "a:ADDON", "t:PID:ID"); a key that a merge no longer sees is forgotten,
 * which keeps the map as small as the last merge.
 */
#include <string.h>

#include "perfmond-aggregate.h"
#include "perfmon-heap-trim.h"

struct _PerfmondAggregator
{
  GHashTable *ids;     /* key (owned char *) → guint64 id in a pointer-size box */
  guint64     next_id;
};

/* A group of the merged snapshot while it is summed. Its strings are
 * borrowed from the processes' snapshots, which outlive the merge: the
 * names of every group of every process (8 × 9,999 windows of 1 KiB names
 * are 80 MiB) are never copied, only those of the groups kept, once, by
 * the builder. A thread group's name gains its process's name and pid
 * then (merged_group_name()). */
typedef struct
{
  guint64           id;
  PerfmonGroupKind  kind;
  const char       *name;
  const char       *process_name;   /* for a thread group's name, or NULL */
  guint             pid;            /* with process_name */
  guint64           window_id;
  const char       *addon_id;
  guint64           cpu_time;
  guint64           blocked_time;
  guint64           sampled_cpu_time;
  guint64           ticks;
  guint64           durations[PERFMON_N_DURATIONS];
} MergedGroup;

#define THREAD_NAME_FORMAT "%s (%s, pid %u)"

static char *
merged_group_name (const MergedGroup *group)
{
  if (group->process_name == NULL)
    return g_strdup (group->name);
  return g_strdup_printf (THREAD_NAME_FORMAT, group->name, group->process_name, group->pid);
}

/* What a group adds to the merged snapshot's variant, about: its
 * counters, its strings and their framing (a thread group's name with
 * " (PROCESS, pid 4294967295)"). */
static gsize
merged_group_bytes (const MergedGroup *group)
{
  gsize bytes = 160 + strlen (group->name) + (group->addon_id != NULL ? strlen (group->addon_id) : 0);

  if (group->process_name != NULL)
    bytes += strlen (group->process_name) + sizeof " (, pid 4294967295)";
  return bytes;
}

/* The most CPU first; ties by id, so that the choice is stable. */
static int
compare_cpu_desc (gconstpointer a,
                  gconstpointer b,
                  gpointer      data)
{
  const MergedGroup *groups = data;
  const MergedGroup *x = &groups[*(const guint *) a], *y = &groups[*(const guint *) b];

  if (x->cpu_time != y->cpu_time)
    return x->cpu_time > y->cpu_time ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Over @max_bytes, keeps the groups with the most CPU that fit (in their
 * order) and returns how many it left out. */
static guint
keep_within (GArray *merged,
             gsize   max_bytes)
{
  MergedGroup *groups = (MergedGroup *) (gpointer) merged->data;
  g_autofree guint *by_cpu = NULL;
  g_autofree guint8 *kept = NULL;
  gsize total = 0;
  guint n_kept = 0;

  for (guint i = 0; i < merged->len; i++)
    total += merged_group_bytes (&groups[i]);
  if (total <= max_bytes)
    return 0;

  by_cpu = g_new (guint, merged->len);
  for (guint i = 0; i < merged->len; i++)
    by_cpu[i] = i;
  g_qsort_with_data (by_cpu, merged->len, sizeof *by_cpu, compare_cpu_desc, groups);
  kept = g_new0 (guint8, merged->len);
  total = 0;
  for (guint i = 0; i < merged->len; i++)
    {
      gsize bytes = merged_group_bytes (&groups[by_cpu[i]]);

      if (total + bytes > max_bytes)
        break;
      total += bytes;
      kept[by_cpu[i]] = TRUE;
    }
  /* Compacted in one pass, in their order. */
  for (guint i = 0; i < merged->len; i++)
    if (kept[i])
      groups[n_kept++] = groups[i];
  total = merged->len - n_kept;
  g_array_set_size (merged, n_kept);
  return (guint) total;
}

/* Counters of long-lived processes are large; a sum that would wrap around
 * would break the histogram's invariants that readers check. */
static inline guint64
add_saturated (guint64 a,
               guint64 b)
{
  guint64 sum;

  return g_uint64_checked_add (&sum, a, b) ? sum : G_MAXUINT64;
}

PerfmondAggregator *
perfmond_aggregator_new (void)
{
  PerfmondAggregator *self = g_new0 (PerfmondAggregator, 1);

  self->ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->next_id = 1;
  return self;
}

void
perfmond_aggregator_free (PerfmondAggregator *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->ids);
  g_free (self);
}

/* Takes @key, which @new_ids keeps. */
static guint64
lookup_id (PerfmondAggregator *self,
           GHashTable         *new_ids,
           char               *key)
{
  guint64 *old = g_hash_table_lookup (self->ids, key);
  guint64 id = old != NULL ? *old : self->next_id++;

  g_hash_table_insert (new_ids, key, g_memdup2 (&id, sizeof id));
  return id;
}

/**
 * perfmond_aggregator_merge:
 * @snapshots: (array length=n_snapshots): the newest snapshot of each process
 * @pids: (array length=n_snapshots): the pid the daemon knows each process by
 * @own_pid: the pid the merged snapshot carries (the daemon's: a valid
 *   snapshot has a pid, and aggregates are only comparable with each other)
 * @timestamp: monotonic µs, the merged snapshot's timestamp
 * @max_bytes: about the most the merged variant may take: over it, the
 *   groups with the least CPU time are left out (a D-Bus reply must stay
 *   well under the bus's 64 MiB array limit)
 * @omitted: (out): how many merged groups were left out
 *
 * Returns: (transfer full) (nullable): a non-floating variant of type
 *   %PERFMON_SNAPSHOT_VARIANT_TYPE, which perfmon_snapshot_new_from_variant()
 *   reads; %NULL only if this function has a bug
 */
GVariant *
perfmond_aggregator_merge (PerfmondAggregator  *self,
                           PerfmonSnapshot    **snapshots,
                           const guint         *pids,
                           guint                n_snapshots,
                           guint                own_pid,
                           gint64               timestamp,
                           gsize                max_bytes,
                           guint               *omitted)
{
  g_autoptr(GHashTable) new_ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  /* The keys are new_ids's, borrowed; freed first. */
  g_autoptr(GHashTable) by_key = g_hash_table_new (g_str_hash, g_str_equal);
  /* One block, given back whole: small blocks freed between the ids'
   * keys, which stay, would be holes the builder's 1 KiB groups do not
   * fit in. The hash table's values are indexes + 1. */
  g_autoptr(GArray) merged = g_array_new (FALSE, TRUE, sizeof (MergedGroup));
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  GVariant *variant;
  guint64 user_time = 0, system_time = 0;

  g_return_val_if_fail (own_pid > 0, NULL);

  for (guint i = 0; i < n_snapshots; i++)
    {
      GPtrArray *stats = perfmon_snapshot_get_groups (snapshots[i]);
      const char *process_name = perfmon_snapshot_get_process_name (snapshots[i]);

      user_time = add_saturated (user_time, perfmon_snapshot_get_user_time (snapshots[i]));
      system_time = add_saturated (system_time, perfmon_snapshot_get_system_time (snapshots[i]));

      for (guint j = 0; j < stats->len; j++)
        {
          const PerfmonGroupStats *s = g_ptr_array_index (stats, j);
          PerfmonGroupKind kind = perfmon_group_stats_get_kind (s);
          const guint64 *durations = perfmon_group_stats_get_durations (s, NULL);
          char *key;
          gpointer index;
          MergedGroup *group;

          if (kind == PERFMON_GROUP_KIND_WINDOW)
            key = g_strdup_printf ("w:%" G_GUINT64_FORMAT, perfmon_group_stats_get_window_id (s));
          else if (kind == PERFMON_GROUP_KIND_ADDON && perfmon_group_stats_get_addon_id (s) != NULL)
            key = g_strdup_printf ("a:%s", perfmon_group_stats_get_addon_id (s));
          else
            key = g_strdup_printf ("t:%u:%" G_GUINT64_FORMAT, pids[i], perfmon_group_stats_get_id (s));

          index = g_hash_table_lookup (by_key, key);
          if (index == NULL)
            {
              g_array_set_size (merged, merged->len + 1);
              group = &g_array_index (merged, MergedGroup, merged->len - 1);
              group->id = lookup_id (self, new_ids, key);
              g_hash_table_insert (by_key, key, GUINT_TO_POINTER (merged->len));
              group->kind = kind;
              group->name = perfmon_group_stats_get_name (s);
              if (key[0] == 't')
                {
                  group->process_name = process_name;
                  group->pid = pids[i];
                }
              group->window_id = perfmon_group_stats_get_window_id (s);
              group->addon_id = perfmon_group_stats_get_addon_id (s);
            }
          else
            {
              group = &g_array_index (merged, MergedGroup, GPOINTER_TO_UINT (index) - 1);
              g_free (key);
              /* Another process may know the window's title. */
              if (group->name[0] == '\0')
                group->name = perfmon_group_stats_get_name (s);
            }

          group->cpu_time = add_saturated (group->cpu_time, perfmon_group_stats_get_cpu_time (s));
          group->blocked_time = add_saturated (group->blocked_time, perfmon_group_stats_get_blocked_time (s));
          group->ticks = add_saturated (group->ticks, perfmon_group_stats_get_ticks (s));
          group->sampled_cpu_time = add_saturated (group->sampled_cpu_time,
                                                   perfmon_group_stats_get_sampled_cpu_time (s));
          for (guint k = 0; k < PERFMON_N_DURATIONS; k++)
            group->durations[k] = add_saturated (group->durations[k], durations[k]);
        }
    }

  g_clear_pointer (&by_key, g_hash_table_unref);
  g_hash_table_unref (self->ids);
  self->ids = g_steal_pointer (&new_ids);

  *omitted = keep_within (merged, max_bytes);

  /* The builder checks the merged snapshot like any snapshot read from
   * outside. */
  perfmon_snapshot_builder_set_times (builder, MAX (timestamp, 0),
                                      /* The wall-clock time of @timestamp. */
                                      MAX (g_get_real_time () - (g_get_monotonic_time () - timestamp), 0),
                                      0);
  perfmon_snapshot_builder_set_process (builder, own_pid, PERFMOND_AGGREGATE_PROCESS_NAME,
                                        user_time, system_time);
  for (guint i = 0; i < merged->len; i++)
    {
      const MergedGroup *group = &g_array_index (merged, MergedGroup, i);
      g_autofree char *name = merged_group_name (group);

      perfmon_snapshot_builder_add_group (builder, group->id, group->kind, name,
                                          group->window_id, group->addon_id, group->cpu_time,
                                          group->blocked_time, group->ticks,
                                          group->durations, PERFMON_N_DURATIONS);
      if (group->sampled_cpu_time != 0)
        perfmon_snapshot_builder_set_sampled_cpu_time (builder, group->sampled_cpu_time);
    }
  /* Before the snapshot and its variant are made: the merge's cost is
   * then theirs, twice the reply, and the ids. */
  g_clear_pointer (&merged, g_array_unref);

  snapshot = perfmon_snapshot_builder_end (builder, &error);
  if (snapshot == NULL)
    {
      /* Sums of valid snapshots are valid (saturating sums keep the
       * histogram's order); this would be a bug here. */
      g_critical ("perfmond: the merged snapshot is invalid: %s", error->message);
      return NULL;
    }

  /* Never more than two copies of the reply at once, and each given back
   * as soon as the next is made: the snapshot's groups, then the
   * variant's tree of strings, then the variant in one block (which GDBus
   * reads to write its message: a last copy). The tree is freed once
   * flattened; without this, GDBus flattened it next to the message. */
  variant = perfmon_snapshot_to_variant (snapshot);
  g_clear_object (&snapshot);
  g_clear_object (&builder);
  _perfmon_heap_trim_now ();
  g_variant_get_data (variant);
  _perfmon_heap_trim_now ();
  return variant;
}

/* The column of group ids in PERFMON_SNAPSHOT_VARIANT_TYPE: after the
 * format version, timestamp, interval, pid, process name, and user and
 * system CPU time. It has one entry per group. */
#define SNAPSHOT_VARIANT_GROUP_IDS 7

/* PERFMON_SNAPSHOT_VARIANT_TYPE, or the forms that libperfmon before 0.3
 * and 0.2 send: the same without the sampled CPU times, its last member,
 * and also without the wall time. All are read by
 * perfmon_snapshot_new_from_variant(), so that perfmond takes the
 * snapshots of older processes on the bus. */
static gboolean
is_snapshot_type (GVariant *variant)
{
  const char *type = g_variant_get_type_string (variant);
  const char *current = PERFMON_SNAPSHOT_VARIANT_TYPE;
  gsize length = strlen (current);

  if (g_str_equal (type, current))
    return TRUE;
  /* "(…xat)" without "at", or without "xat". */
  return (strlen (type) == length - 2 || strlen (type) == length - 3) &&
         strncmp (type, current, strlen (type) - 1) == 0 && type[strlen (type) - 1] == ')';
}

PerfmonSnapshot *
perfmond_snapshot_from_reply (GVariant  *variant,
                              guint      max_groups,
                              GError   **error)
{
  g_autoptr(GVariant) groups = NULL;

  g_return_val_if_fail (variant != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!is_snapshot_type (variant))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "expected a snapshot of type %s, got %.*s",
                   PERFMON_SNAPSHOT_VARIANT_TYPE,
                   (int) MIN (strlen (g_variant_get_type_string (variant)), 64),
                   g_variant_get_type_string (variant));
      return NULL;
    }

  /* Counted before decoding: decoding a flood of groups is the cost to
   * avoid. */
  groups = g_variant_get_child_value (variant, SNAPSHOT_VARIANT_GROUP_IDS);
  if (g_variant_n_children (groups) > max_groups)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "%" G_GSIZE_FORMAT " groups, more than the %u allowed (--max-groups)",
                   g_variant_n_children (groups), max_groups);
      return NULL;
    }

  return perfmon_snapshot_new_from_variant (variant, error);
}
