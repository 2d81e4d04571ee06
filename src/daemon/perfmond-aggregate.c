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
 * handed out from a counter and remembered per key (a window id, an add-on
 * id, or a pid and a group id); a key that a merge no longer sees is
 * forgotten, which keeps them as few as the groups of the last merge.
 *
 * The reply is bounded (GetAggregate's cap), and so is what making it
 * costs: the groups of every process are sorted by key in a table of 32
 * bytes each, their strings read where the processes' snapshots keep them,
 * and the reply is written once, straight into its columns
 * (perfmond_aggregator_merge()).
 */
#include <string.h>

#include "perfmond-aggregate.h"

/* What makes the groups of several processes one merged group. */
typedef enum
{
  KEY_WINDOW,   /* a window group: its window id */
  KEY_ADDON,    /* an add-on group with an add-on id: the add-on id */
  KEY_OWN,      /* any other group, one process's own: the pid and the group's id */
} KeyKind;

typedef struct
{
  guint64     number;     /* KEY_WINDOW: the window id; KEY_OWN: the group's id */
  const char *addon_id;   /* KEY_ADDON */
  guint32     pid;        /* KEY_OWN */
  guint32     kind;       /* KeyKind */
} Key;

/* The id a key had in the last merge. */
typedef struct
{
  Key     key;            /* its addon_id owned */
  guint64 id;
} KnownId;

struct _PerfmondAggregator
{
  KnownId *ids;           /* sorted by key (compare_keys()) */
  gsize    n_ids;
  guint64  next_id;
};

/* A group of one process, as the merge sees it: its key and where it
 * is. 32 bytes, however long the group's strings: the merge reads them
 * where the processes' snapshots keep them. */
typedef struct
{
  Key     key;            /* addon_id borrowed */
  guint32 process;        /* index in the snapshots */
  guint32 group;          /* index in its groups */
} Member;

/* A group of the merged snapshot: the run of members with its key in
 * the sorted members (those of one process first, in its order). */
typedef struct
{
  guint32 first;          /* its first member */
  guint32 n_members;
  guint64 cpu_time;       /* summed */
  guint64 id;
} Run;

/* A string of the reply: a group's name (a process's own group's with
 * its process's name and pid), or an add-on id. */
typedef struct
{
  const char *text;
  const char *process_name;   /* or NULL */
  guint       pid;            /* with process_name */
  gsize       length;         /* without the nul */
} ReplyString;

#define THREAD_NAME_FORMAT "%s (%s, pid %u)"

static int
compare_keys (const Key *a,
              const Key *b)
{
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  if (a->kind == KEY_ADDON)
    return strcmp (a->addon_id, b->addon_id);
  if (a->pid != b->pid)
    return a->pid < b->pid ? -1 : 1;
  return (a->number > b->number) - (a->number < b->number);
}

/* By key, then in the processes' order and each process's order. */
static int
compare_members (gconstpointer a,
                 gconstpointer b,
                 gpointer      data)
{
  const Member *x = a, *y = b;
  int order = compare_keys (&x->key, &y->key);

  if (order != 0)
    return order;
  if (x->process != y->process)
    return x->process < y->process ? -1 : 1;
  return (x->group > y->group) - (x->group < y->group);
}

static const PerfmonGroupStats *
member_stats (PerfmonSnapshot * const *snapshots,
              const Member            *member)
{
  return g_ptr_array_index (perfmon_snapshot_get_groups (snapshots[member->process]), member->group);
}

/* The merged group's name: the first that is not empty (another process
 * may know the window's title), and a process's own group's with whose it
 * is. */
static ReplyString
run_name (PerfmonSnapshot * const *snapshots,
          const Member            *members,
          const Run               *run)
{
  const Member *first = &members[run->first];
  ReplyString name = { perfmon_group_stats_get_name (member_stats (snapshots, first)), NULL, 0, 0 };

  for (guint32 i = 1; i < run->n_members && name.text[0] == '\0'; i++)
    name.text = perfmon_group_stats_get_name (member_stats (snapshots, &members[run->first + i]));
  name.length = strlen (name.text);
  if (first->key.kind == KEY_OWN)
    {
      name.process_name = perfmon_snapshot_get_process_name (snapshots[first->process]);
      name.pid = first->key.pid;
      name.length = (gsize) g_snprintf (NULL, 0, THREAD_NAME_FORMAT, name.text, name.process_name, name.pid);
    }
  return name;
}

/* What a group adds to the reply, about (at least what it adds): its
 * counters (136 bytes), its name, its add-on id and their framing. */
static gsize
run_bytes (PerfmonSnapshot * const *snapshots,
           const Member            *members,
           const Run               *run)
{
  const char *addon_id = perfmon_group_stats_get_addon_id (member_stats (snapshots, &members[run->first]));

  return 168 + run_name (snapshots, members, run).length + (addon_id != NULL ? strlen (addon_id) : 0);
}

/* The most CPU first; ties by id, so that the choice is stable (a group
 * kept before has the smaller id). */
static int
compare_cpu_desc (gconstpointer a,
                  gconstpointer b,
                  gpointer      data)
{
  const Run *runs = data;
  const Run *x = &runs[*(const guint32 *) a], *y = &runs[*(const guint32 *) b];

  if (x->cpu_time != y->cpu_time)
    return x->cpu_time > y->cpu_time ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* In the order the groups first appear (the processes' order, each
 * process's order). */
static int
compare_first_seen (gconstpointer a,
                    gconstpointer b,
                    gpointer      data)
{
  const Member *members = ((gconstpointer *) data)[0];
  const Run *runs = ((gconstpointer *) data)[1];
  const Member *x = &members[runs[*(const guint32 *) a].first];
  const Member *y = &members[runs[*(const guint32 *) b].first];

  if (x->process != y->process)
    return x->process < y->process ? -1 : 1;
  return (x->group > y->group) - (x->group < y->group);
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

  self->next_id = 1;
  return self;
}

static void
known_ids_free (KnownId *ids,
                gsize    n_ids)
{
  for (gsize i = 0; i < n_ids; i++)
    g_free ((char *) ids[i].key.addon_id);
  g_free (ids);
}

void
perfmond_aggregator_free (PerfmondAggregator *self)
{
  if (self == NULL)
    return;
  known_ids_free (self->ids, self->n_ids);
  g_free (self);
}

/* Gives each run (in key order) the id its key had in the last merge, or
 * a new one, and remembers the ids of these keys only, in one block
 * (32 bytes a group, and the add-on ids). */
static void
assign_ids (PerfmondAggregator *self,
            const Member       *members,
            Run                *runs,
            guint32             n_runs)
{
  KnownId *ids = g_new (KnownId, n_runs);
  gsize j = 0;

  for (guint32 i = 0; i < n_runs; i++)
    {
      const Key *key = &members[runs[i].first].key;
      int order = -1;

      while (j < self->n_ids && (order = compare_keys (&self->ids[j].key, key)) < 0)
        j++;
      if (j < self->n_ids && order == 0)
        {
          /* The add-on id moves over. */
          ids[i] = self->ids[j];
          self->ids[j++].key.addon_id = NULL;
        }
      else
        {
          ids[i].key = *key;
          ids[i].key.addon_id = g_strdup (key->addon_id);
          ids[i].id = self->next_id++;
        }
      runs[i].id = ids[i].id;
    }
  known_ids_free (self->ids, self->n_ids);
  self->ids = ids;
  self->n_ids = n_runs;
}

/* Over @max_bytes, marks the groups with the most CPU that fit (in that
 * order); returns how many runs it keeps, their indexes in @kept. */
static guint32
keep_within (PerfmonSnapshot * const *snapshots,
             const Member            *members,
             const Run               *runs,
             guint32                  n_runs,
             gsize                    max_bytes,
             guint32                 *kept)
{
  gsize total = 0;
  guint32 n_kept = 0;

  for (guint32 i = 0; i < n_runs; i++)
    kept[i] = i;
  for (guint32 i = 0; i < n_runs && total <= max_bytes; i++)
    total += run_bytes (snapshots, members, &runs[i]);
  if (total <= max_bytes)
    return n_runs;

  g_qsort_with_data (kept, n_runs, sizeof *kept, compare_cpu_desc, (gpointer) runs);
  total = 0;
  for (; n_kept < n_runs; n_kept++)
    {
      gsize bytes = run_bytes (snapshots, members, &runs[kept[n_kept]]);

      if (total + bytes > max_bytes)
        break;
      total += bytes;
    }
  return n_kept;
}

/* An "as" in GVariant's serialised normal form, written in one block:
 * the strings one after the other, each with its nul, then the end of
 * each as an offset, little-endian, all of the smallest of 1, 2, 4 or 8
 * bytes that can address the whole (GVariant's "Serialisation format",
 * arrays of variable-size elements). g_variant_new_strv() would make a
 * GVariant of each string, a second copy, and flattening them a third. */
static GVariant *
string_array_new (const ReplyString *strings,
                  gsize              n)
{
  gsize body = 0, width, end = 0;
  guint8 *data;

  if (n == 0)
    return g_variant_ref_sink (g_variant_new_strv (NULL, 0));
  for (gsize i = 0; i < n; i++)
    body += strings[i].length + 1;
  for (width = 1; width < 8; width *= 2)
    if (body + width * n <= (G_GUINT64_CONSTANT (1) << (8 * width)) - 1)
      break;

  data = g_malloc (body + width * n);
  for (gsize i = 0; i < n; i++)
    {
      const ReplyString *string = &strings[i];
      guint64 offset;

      if (string->process_name != NULL)
        g_snprintf ((char *) data + end, string->length + 1, THREAD_NAME_FORMAT,
                    string->text, string->process_name, string->pid);
      else
        memcpy (data + end, string->text, string->length);
      end += string->length;
      data[end++] = '\0';
      offset = GUINT64_TO_LE ((guint64) end);
      memcpy (data + body + i * width, &offset, width);
    }
  /* Trusted, as GLib's own: it is in normal form (test-aggregate checks
   * it is byte for byte what GLib writes). GLib 2.74 checks an untrusted
   * array's offsets up to the element read at each read: GDBus took
   * 0.55 s instead of 0.05 s to write 14,000 names of 1 KiB into its
   * message, and ten times that under ThreadSanitizer. */
  return g_variant_ref_sink (g_variant_new_from_data (G_VARIANT_TYPE_STRING_ARRAY, data, body + width * n,
                                                      TRUE, g_free, data));
}

/* A column of fixed-size numbers, taking @data (g_malloc()ed, or NULL
 * when @count is 0). */
static GVariant *
number_column_take (const GVariantType *type,
                    gpointer            data,
                    gsize               count,
                    gsize               element_size)
{
  return g_variant_ref_sink (g_variant_new_from_data (type, data, count * element_size, TRUE, g_free, data));
}

/* PERFMON_SNAPSHOT_VARIANT_TYPE: the header (format version, timestamp,
 * interval, pid, process name, user and system CPU time), then the
 * columns of the groups from the column of their ids on, each with one
 * entry per group, then the wall time and the modules (a merged
 * snapshot, of many processes, has none: the header's empty list), and
 * last one more column, the sampled CPU times. */
#define SNAPSHOT_VARIANT_FIRST_COLUMN 7
#define SNAPSHOT_VARIANT_END_COLUMNS 17
#define SNAPSHOT_VARIANT_SAMPLED_COLUMN 19
#define SNAPSHOT_VARIANT_N_MEMBERS 20

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
 * Memory: what the snapshots hold is read where it is, never copied but
 * into the reply. The merge itself takes 32 bytes a group of every
 * process, and a few more a merged group (its sums, its id), given back
 * before the reply is written; the reply is written once, its strings
 * (which are almost all of it) straight into their column, and flattened
 * into one block, its columns freed then: never more than two copies of
 * it at once. The ids of the last merge stay: 32 bytes a merged group,
 * and the add-on ids.
 *
 * Returns: (transfer full) (nullable): a non-floating variant of type
 *   %PERFMON_SNAPSHOT_VARIANT_TYPE, in serialised form, which
 *   perfmon_snapshot_new_from_variant() reads; %NULL only if this function
 *   has a bug
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
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  g_autoptr(PerfmonSnapshot) empty = NULL;
  g_autoptr(GVariant) header = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree Member *members = NULL;
  g_autofree Run *runs = NULL;
  g_autofree guint32 *kept = NULL;
  g_autofree ReplyString *names = NULL;
  g_autoptr(GArray) addon_ids = NULL;
  g_autoptr(GHashTable) addon_index_of = NULL;
  guint64 *ids, *window_ids, *cpu_times, *blocked_times, *ticks, *durations, *sampled_cpu_times;
  guint32 *kinds, *addon_indexes;
  GVariant *children[SNAPSHOT_VARIANT_N_MEMBERS];
  GVariant *variant;
  guint64 user_time = 0, system_time = 0;
  gsize n_members = 0;
  guint32 n_runs = 0, n_kept;

  g_return_val_if_fail (own_pid > 0, NULL);

  /* The header and the wall time as the library writes them, which checks
   * them: a snapshot without groups. */
  for (guint i = 0; i < n_snapshots; i++)
    {
      user_time = add_saturated (user_time, perfmon_snapshot_get_user_time (snapshots[i]));
      system_time = add_saturated (system_time, perfmon_snapshot_get_system_time (snapshots[i]));
      n_members += perfmon_snapshot_get_groups (snapshots[i])->len;
    }
  perfmon_snapshot_builder_set_times (builder, MAX (timestamp, 0),
                                      /* The wall-clock time of @timestamp. */
                                      MAX (g_get_real_time () - (g_get_monotonic_time () - timestamp), 0),
                                      0);
  perfmon_snapshot_builder_set_process (builder, own_pid, PERFMOND_AGGREGATE_PROCESS_NAME,
                                        user_time, system_time);
  empty = perfmon_snapshot_builder_end (builder, &error);
  if (empty == NULL)
    {
      g_critical ("perfmond: the merged snapshot's header is invalid: %s", error->message);
      return NULL;
    }
  header = perfmon_snapshot_to_variant (empty);
  if (!g_variant_is_of_type (header, G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE)) ||
      g_variant_n_children (header) != SNAPSHOT_VARIANT_N_MEMBERS)
    {
      g_critical ("perfmond: a snapshot variant is not of the type the merge writes");
      return NULL;
    }
  g_return_val_if_fail (n_members < G_MAXUINT32, NULL);

  /* Every group of every process, by key: the merged groups are the runs
   * of one key. */
  members = g_new (Member, n_members);
  n_members = 0;
  for (guint i = 0; i < n_snapshots; i++)
    {
      GPtrArray *stats = perfmon_snapshot_get_groups (snapshots[i]);

      for (guint j = 0; j < stats->len; j++)
        {
          const PerfmonGroupStats *s = g_ptr_array_index (stats, j);
          Member *member = &members[n_members++];

          member->key = (Key) { 0, };
          if (perfmon_group_stats_get_kind (s) == PERFMON_GROUP_KIND_WINDOW)
            {
              member->key.kind = KEY_WINDOW;
              member->key.number = perfmon_group_stats_get_window_id (s);
            }
          else if (perfmon_group_stats_get_kind (s) == PERFMON_GROUP_KIND_ADDON &&
                   perfmon_group_stats_get_addon_id (s) != NULL)
            {
              member->key.kind = KEY_ADDON;
              member->key.addon_id = perfmon_group_stats_get_addon_id (s);
            }
          else
            {
              member->key.kind = KEY_OWN;
              member->key.pid = pids[i];
              member->key.number = perfmon_group_stats_get_id (s);
            }
          member->process = i;
          member->group = j;
        }
    }
  g_qsort_with_data (members, n_members, sizeof *members, compare_members, NULL);

  runs = g_new (Run, MAX (n_members, 1));
  for (guint32 i = 0; i < n_members; i++)
    {
      Run *run;

      if (i == 0 || compare_keys (&members[i - 1].key, &members[i].key) != 0)
        runs[n_runs++] = (Run) { .first = i };
      run = &runs[n_runs - 1];
      run->n_members++;
      run->cpu_time = add_saturated (run->cpu_time,
                                     perfmon_group_stats_get_cpu_time (member_stats (snapshots, &members[i])));
    }
  assign_ids (self, members, runs, n_runs);

  kept = g_new (guint32, MAX (n_runs, 1));
  n_kept = keep_within (snapshots, members, runs, n_runs, max_bytes, kept);
  *omitted = n_runs - n_kept;
  {
    gconstpointer data[] = { members, runs };

    g_qsort_with_data (kept, n_kept, sizeof *kept, compare_first_seen, data);
  }

  /* The columns, one entry per kept group, in the order they first
   * appear. */
  ids = g_new (guint64, n_kept);
  kinds = g_new (guint32, n_kept);
  names = g_new (ReplyString, n_kept);
  window_ids = g_new (guint64, n_kept);
  addon_indexes = g_new (guint32, n_kept);
  cpu_times = g_new (guint64, n_kept);
  blocked_times = g_new (guint64, n_kept);
  ticks = g_new (guint64, n_kept);
  durations = g_new0 (guint64, (gsize) n_kept * PERFMON_N_DURATIONS);
  sampled_cpu_times = g_new (guint64, n_kept);
  addon_ids = g_array_new (FALSE, FALSE, sizeof (ReplyString));
  addon_index_of = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint32 k = 0; k < n_kept; k++)
    {
      const Run *run = &runs[kept[k]];
      const PerfmonGroupStats *first = member_stats (snapshots, &members[run->first]);
      const char *addon_id = perfmon_group_stats_get_addon_id (first);
      guint64 *group_durations = &durations[(gsize) k * PERFMON_N_DURATIONS];

      ids[k] = run->id;
      kinds[k] = (guint32) perfmon_group_stats_get_kind (first);
      names[k] = run_name (snapshots, members, run);
      window_ids[k] = perfmon_group_stats_get_window_id (first);
      addon_indexes[k] = 0;
      if (addon_id != NULL)
        {
          gpointer index;

          /* Each add-on id once, in the order of the groups that first
           * use it (as perfmon_snapshot_to_variant() writes it). */
          if (!g_hash_table_lookup_extended (addon_index_of, addon_id, NULL, &index))
            {
              ReplyString string = { addon_id, NULL, 0, strlen (addon_id) };

              g_array_append_val (addon_ids, string);
              index = GUINT_TO_POINTER (addon_ids->len);
              g_hash_table_insert (addon_index_of, (gpointer) addon_id, index);
            }
          addon_indexes[k] = GPOINTER_TO_UINT (index);
        }
      cpu_times[k] = run->cpu_time;
      blocked_times[k] = ticks[k] = sampled_cpu_times[k] = 0;
      for (guint32 m = 0; m < run->n_members; m++)
        {
          const PerfmonGroupStats *s = member_stats (snapshots, &members[run->first + m]);
          const guint64 *d = perfmon_group_stats_get_durations (s, NULL);

          blocked_times[k] = add_saturated (blocked_times[k], perfmon_group_stats_get_blocked_time (s));
          ticks[k] = add_saturated (ticks[k], perfmon_group_stats_get_ticks (s));
          sampled_cpu_times[k] = add_saturated (sampled_cpu_times[k], perfmon_group_stats_get_sampled_cpu_time (s));
          for (guint b = 0; b < PERFMON_N_DURATIONS; b++)
            group_durations[b] = add_saturated (group_durations[b], d[b]);
        }
    }
  g_clear_pointer (&addon_index_of, g_hash_table_unref);
  g_clear_pointer (&kept, g_free);
  g_clear_pointer (&runs, g_free);
  g_clear_pointer (&members, g_free);

  for (guint i = 0; i < SNAPSHOT_VARIANT_FIRST_COLUMN; i++)
    children[i] = g_variant_get_child_value (header, i);
  children[7] = number_column_take (G_VARIANT_TYPE ("at"), ids, n_kept, sizeof *ids);
  children[8] = number_column_take (G_VARIANT_TYPE ("au"), kinds, n_kept, sizeof *kinds);
  children[9] = string_array_new (names, n_kept);
  g_clear_pointer (&names, g_free);
  children[10] = number_column_take (G_VARIANT_TYPE ("at"), window_ids, n_kept, sizeof *window_ids);
  children[11] = string_array_new ((const ReplyString *) (gconstpointer) addon_ids->data, addon_ids->len);
  g_clear_pointer (&addon_ids, g_array_unref);
  children[12] = number_column_take (G_VARIANT_TYPE ("au"), addon_indexes, n_kept, sizeof *addon_indexes);
  children[13] = number_column_take (G_VARIANT_TYPE ("at"), cpu_times, n_kept, sizeof *cpu_times);
  children[14] = number_column_take (G_VARIANT_TYPE ("at"), blocked_times, n_kept, sizeof *blocked_times);
  children[15] = number_column_take (G_VARIANT_TYPE ("at"), ticks, n_kept, sizeof *ticks);
  children[16] = number_column_take (G_VARIANT_TYPE ("at"), durations, (gsize) n_kept * PERFMON_N_DURATIONS,
                                     sizeof *durations);
  for (guint i = SNAPSHOT_VARIANT_END_COLUMNS; i < SNAPSHOT_VARIANT_SAMPLED_COLUMN; i++)
    children[i] = g_variant_get_child_value (header, i);
  children[SNAPSHOT_VARIANT_SAMPLED_COLUMN] = number_column_take (G_VARIANT_TYPE ("at"), sampled_cpu_times, n_kept,
                                                                  sizeof *sampled_cpu_times);
  variant = g_variant_ref_sink (g_variant_new_tuple (children, G_N_ELEMENTS (children)));
  for (guint i = 0; i < G_N_ELEMENTS (children); i++)
    g_variant_unref (children[i]);

  /* Flattened here, into one block: the columns are freed then. Never
   * more than two copies of the reply at once: the columns and the
   * block, then the block and the message GDBus writes of it. */
  g_variant_get_data (variant);
  return variant;
}

/* PERFMON_SNAPSHOT_VARIANT_TYPE, or the forms that earlier libperfmon
 * sends: the same without the sampled CPU times, its last member, without
 * the modules too (before 0.3), and without the wall time too (before
 * 0.2). All are read by
 * perfmon_snapshot_new_from_variant(), so that perfmond takes the
 * snapshots of older processes on the bus. */
static gboolean
is_snapshot_type (GVariant *variant)
{
  const char *type = g_variant_get_type_string (variant);

  return g_str_equal (type, PERFMON_SNAPSHOT_VARIANT_TYPE) ||
         g_str_equal (type, "(uxxusttatauasatasauatatatatxa(ssts))") ||
         g_str_equal (type, "(uxxusttatauasatasauatatatatx)") ||
         g_str_equal (type, "(uxxusttatauasatasauatatatat)");
}

/* The checks made before anything is decoded. */
static gboolean
check_type_and_groups (GVariant  *variant,
                       guint      max_groups,
                       GError   **error)
{
  g_autoptr(GVariant) groups = NULL;

  if (!is_snapshot_type (variant))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "expected a snapshot of type %s, got %.*s",
                   PERFMON_SNAPSHOT_VARIANT_TYPE,
                   (int) MIN (strlen (g_variant_get_type_string (variant)), 64),
                   g_variant_get_type_string (variant));
      return FALSE;
    }

  /* Counted before decoding: decoding a flood of groups is the cost to
   * avoid. */
  groups = g_variant_get_child_value (variant, SNAPSHOT_VARIANT_FIRST_COLUMN);
  if (g_variant_n_children (groups) > max_groups)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "%" G_GSIZE_FORMAT " groups, more than the %u allowed (--max-groups)",
                   g_variant_n_children (groups), max_groups);
      return FALSE;
    }
  return TRUE;
}

PerfmonSnapshot *
perfmond_snapshot_from_reply (GVariant  *variant,
                              guint      max_groups,
                              GError   **error)
{
  g_return_val_if_fail (variant != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!check_type_and_groups (variant, max_groups, error))
    return NULL;
  return perfmon_snapshot_new_from_variant (variant, error);
}

/* As perfmond_snapshot_from_reply(), without decoding: whether it would
 * give a snapshot. */
gboolean
perfmond_snapshot_check_reply (GVariant  *variant,
                               guint      max_groups,
                               GError   **error)
{
  g_return_val_if_fail (variant != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return check_type_and_groups (variant, max_groups, error) && perfmon_snapshot_check_variant (variant, error);
}
