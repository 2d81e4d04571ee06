/* test-aggregate.c: perfmond's merge of the processes' snapshots
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Exact sums on hand-made snapshots; test-daemon checks the same through
 * D-Bus with live processes, where only bounds can be asserted.
 */
#include <perfmon.h>
#include <string.h>

#include "perfmond-aggregate.h"

/* A snapshot of pid @pid with a thread group (id 1), window 7 (id 2),
 * add-on "a@test" (id 3) and a compartment of both (id 4), each with
 * @cpu µs of CPU, @ticks ticks and histogram @d0 ≥ @d1. */
static PerfmonSnapshot *
make_snapshot (guint   pid,
               guint64 cpu,
               guint64 ticks,
               guint64 d0,
               guint64 d1)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL;
  PerfmonSnapshot *snapshot;
/* Counters as strings: the format's way to carry values above 2^63. */
#define GROUP \
    "{\"id\":%u,\"kind\":\"%s\",\"name\":\"%s\",\"window_id\":%u,\"addon_id\":%s," \
    "\"cpu_time\":\"%" G_GUINT64_FORMAT "\",\"blocked_time\":1,\"ticks\":\"%" G_GUINT64_FORMAT "\"," \
    "\"durations\":[\"%" G_GUINT64_FORMAT "\",\"%" G_GUINT64_FORMAT "\",0,0,0,0,0,0,0,0]}"
  g_autofree char *thread = g_strdup_printf (GROUP, 1, "thread", "main", 0, "null", cpu, ticks, d0, d1);
  g_autofree char *window = g_strdup_printf (GROUP, 2, "window", "", 7, "null", cpu, ticks, d0, d1);
  g_autofree char *addon = g_strdup_printf (GROUP, 3, "addon", "A", 0, "\"a@test\"", cpu, ticks, d0, d1);
  g_autofree char *compartment = g_strdup_printf (GROUP, 4, "compartment", "c", 7, "\"a@test\"", cpu, ticks, d0, d1);

  json = g_strdup_printf ("{\"version\":1,\"timestamp\":1000,\"interval\":0,\"pid\":%u,"
                          "\"process_name\":\"p%u\",\"user_time\":10,\"system_time\":5,"
                          "\"groups\":[%s,%s,%s,%s]}", pid, pid, thread, window, addon, compartment);
  snapshot = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  return snapshot;
}

/* perfmond writes the merged snapshot's variant itself, in one go; it
 * must be exactly what the library writes of the same snapshot (in
 * GVariant's normal form, which D-Bus and every reader expect). */
static void
assert_library_form (GVariant        *variant,
                     PerfmonSnapshot *decoded)
{
  g_autoptr(GVariant) again = perfmon_snapshot_to_variant (decoded);

  g_assert_true (g_variant_is_of_type (variant, G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE)));
  g_assert_true (g_variant_is_normal_form (variant));
  g_assert_cmpmem (g_variant_get_data (variant), g_variant_get_size (variant),
                   g_variant_get_data (again), g_variant_get_size (again));
}

static PerfmonSnapshot *
merge (PerfmondAggregator  *aggregator,
       PerfmonSnapshot    **snapshots,
       const guint         *pids,
       guint                n)
{
  guint omitted = 0;
  g_autoptr(GVariant) variant = perfmond_aggregator_merge (aggregator, snapshots, pids, n, 4242, 5000,
                                                           G_MAXSIZE, &omitted);
  g_autoptr(GError) error = NULL;
  PerfmonSnapshot *merged;

  g_assert_nonnull (variant);
  g_assert_cmpuint (omitted, ==, 0);
  merged = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  assert_library_form (variant, merged);
  return merged;
}

static guint
count_kind (PerfmonSnapshot  *snapshot,
            PerfmonGroupKind  kind)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);
  guint n = 0;

  for (guint i = 0; i < groups->len; i++)
    n += perfmon_group_stats_get_kind (g_ptr_array_index (groups, i)) == kind;
  return n;
}

static PerfmonGroupStats *
find_kind (PerfmonSnapshot  *snapshot,
           PerfmonGroupKind  kind)
{
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  for (guint i = 0; i < groups->len; i++)
    if (perfmon_group_stats_get_kind (g_ptr_array_index (groups, i)) == kind)
      return g_ptr_array_index (groups, i);
  g_assert_not_reached ();
}

static void
test_merge (void)
{
  g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
  g_autoptr(PerfmonSnapshot) a = make_snapshot (100, 1000, 10, 3, 1);
  g_autoptr(PerfmonSnapshot) b = make_snapshot (200, 500, 4, 2, 2);
  g_autoptr(PerfmonSnapshot) merged = NULL;
  PerfmonSnapshot *both[] = { a, b };
  const guint pids[] = { 100, 200 };
  PerfmonGroupStats *window, *addon;
  const guint64 *durations;

  merged = merge (aggregator, both, pids, 2);
  g_assert_cmpuint (perfmon_snapshot_get_pid (merged), ==, 4242);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (merged), ==, 5000);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (merged), ==, PERFMOND_AGGREGATE_PROCESS_NAME);
  g_assert_cmpuint (perfmon_snapshot_get_user_time (merged), ==, 20);
  g_assert_cmpuint (perfmon_snapshot_get_system_time (merged), ==, 10);

  /* Threads and compartments per process; window 7 and a@test merged. */
  g_assert_cmpuint (count_kind (merged, PERFMON_GROUP_KIND_THREAD), ==, 2);
  g_assert_cmpuint (count_kind (merged, PERFMON_GROUP_KIND_COMPARTMENT), ==, 2);
  g_assert_cmpuint (count_kind (merged, PERFMON_GROUP_KIND_WINDOW), ==, 1);
  g_assert_cmpuint (count_kind (merged, PERFMON_GROUP_KIND_ADDON), ==, 1);

  window = find_kind (merged, PERFMON_GROUP_KIND_WINDOW);
  g_assert_cmpuint (perfmon_group_stats_get_window_id (window), ==, 7);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (window), ==, 1500);
  g_assert_cmpuint (perfmon_group_stats_get_blocked_time (window), ==, 2);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (window), ==, 14);
  durations = perfmon_group_stats_get_durations (window, NULL);
  g_assert_cmpuint (durations[0], ==, 5);
  g_assert_cmpuint (durations[1], ==, 3);

  addon = find_kind (merged, PERFMON_GROUP_KIND_ADDON);
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (addon), ==, "a@test");
  g_assert_cmpstr (perfmon_group_stats_get_name (addon), ==, "A");
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (addon), ==, 1500);

  /* Per-process groups say whose they are. */
  g_assert_cmpstr (perfmon_group_stats_get_name (find_kind (merged, PERFMON_GROUP_KIND_THREAD)), ==,
                   "main (p100, pid 100)");
}

/* Ids stay with their group from one merge to the next, so that two
 * aggregates subtract; a group no longer seen loses its id. */
static void
test_stable_ids (void)
{
  g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
  g_autoptr(PerfmonSnapshot) a = make_snapshot (100, 1000, 10, 3, 1);
  g_autoptr(PerfmonSnapshot) a_later = make_snapshot (100, 3000, 20, 4, 1);
  g_autoptr(PerfmonSnapshot) b = make_snapshot (200, 500, 4, 2, 2);
  g_autoptr(PerfmonSnapshot) first = NULL;
  g_autoptr(PerfmonSnapshot) second = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(PerfmonSnapshot) alone = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonSnapshot *both[] = { a, b };
  PerfmonSnapshot *both_later[] = { a_later, b };
  const guint pids[] = { 100, 200 };

  first = merge (aggregator, both, pids, 2);
  second = merge (aggregator, both_later, pids, 2);
  delta = perfmon_snapshot_subtract (second, first, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (find_kind (delta, PERFMON_GROUP_KIND_WINDOW)), ==, 2000);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (find_kind (delta, PERFMON_GROUP_KIND_ADDON)), ==, 10);

  /* Process 200 gone: its groups' ids are forgotten, the shared ones kept. */
  alone = merge (aggregator, both_later, pids, 1);
  g_assert_cmpuint (perfmon_snapshot_get_groups (alone)->len, ==, 4);
  g_assert_cmpuint (perfmon_group_stats_get_id (find_kind (alone, PERFMON_GROUP_KIND_WINDOW)), ==,
                    perfmon_group_stats_get_id (find_kind (first, PERFMON_GROUP_KIND_WINDOW)));
}

/* Sums saturate instead of wrapping, so that the merged histogram stays
 * valid for readers. */
static void
test_saturation (void)
{
  g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
  g_autoptr(PerfmonSnapshot) a = make_snapshot (100, G_MAXUINT64 - 1, G_MAXUINT64 - 1, G_MAXUINT64 - 1, 5);
  g_autoptr(PerfmonSnapshot) b = make_snapshot (200, 10, 10, 10, 10);
  g_autoptr(PerfmonSnapshot) merged = NULL;
  PerfmonSnapshot *both[] = { a, b };
  const guint pids[] = { 100, 200 };
  PerfmonGroupStats *window;

  merged = merge (aggregator, both, pids, 2);
  window = find_kind (merged, PERFMON_GROUP_KIND_WINDOW);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (window), ==, G_MAXUINT64);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (window), ==, G_MAXUINT64);
  g_assert_cmpuint (perfmon_group_stats_get_durations (window, NULL)[0], ==, G_MAXUINT64);
  g_assert_cmpuint (perfmon_group_stats_get_durations (window, NULL)[1], ==, 15);
}

/* Over the byte bound, the groups with the least CPU are left out and
 * counted; what is kept is a valid snapshot. */
static void
test_bounded (void)
{
  g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
  g_autoptr(PerfmonSnapshot) a = make_snapshot (100, 1000, 10, 3, 1);
  g_autoptr(PerfmonSnapshot) b = make_snapshot (200, 500, 4, 2, 2);
  PerfmonSnapshot *snapshots[] = { a, b };
  const guint pids[] = { 100, 200 };
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) merged = NULL;
  g_autoptr(GError) error = NULL;
  GPtrArray *groups;
  guint omitted = 0;

  /* Six merged groups (2 threads, window, add-on, 2 compartments); room
   * for about two. */
  variant = perfmond_aggregator_merge (aggregator, snapshots, pids, 2, 4242, 5000, 400, &omitted);
  g_assert_nonnull (variant);
  merged = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  assert_library_form (variant, merged);
  groups = perfmon_snapshot_get_groups (merged);
  g_assert_cmpuint (groups->len, >, 0);
  g_assert_cmpuint (groups->len + omitted, ==, 6);
  g_assert_cmpuint (omitted, >, 0);
  /* The merged window and add-on have 1500 µs, the most. */
  for (guint i = 0; i < groups->len; i++)
    g_assert_cmpuint (perfmon_group_stats_get_cpu_time (g_ptr_array_index (groups, i)), ==, 1500);
}

/* @n groups of each kind with names of @name_bytes bytes (the
 * compartments' and add-ons' ids as long), in process @pid. */
static PerfmonSnapshot *
make_wide_snapshot (guint pid,
                    guint n,
                    gsize name_bytes)
{
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  g_autoptr(GError) error = NULL;
  const guint64 durations[PERFMON_N_DURATIONS] = { 2, 1, };
  PerfmonSnapshot *snapshot;

  perfmon_snapshot_builder_set_times (builder, 1000, 2000, 0);
  perfmon_snapshot_builder_set_process (builder, pid, "wide", 10, 5);
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *name = g_strnfill (name_bytes, 'a' + i % 26);
      g_autofree char *addon_id = g_strdup_printf ("%s@%u", name, i);

      perfmon_snapshot_builder_add_group (builder, 4 * i + 1, PERFMON_GROUP_KIND_THREAD, name, 0, NULL,
                                          i, 1, 3, durations, PERFMON_N_DURATIONS);
      perfmon_snapshot_builder_add_group (builder, 4 * i + 2, PERFMON_GROUP_KIND_WINDOW, i % 2 ? name : "",
                                          i + 1, NULL, i, 1, 3, durations, PERFMON_N_DURATIONS);
      perfmon_snapshot_builder_add_group (builder, 4 * i + 3, PERFMON_GROUP_KIND_ADDON, name, 0, addon_id,
                                          i, 1, 3, durations, PERFMON_N_DURATIONS);
      perfmon_snapshot_builder_add_group (builder, 4 * i + 4, PERFMON_GROUP_KIND_COMPARTMENT, name, i + 1,
                                          addon_id, i, 1, 3, durations, PERFMON_N_DURATIONS);
    }
  snapshot = perfmon_snapshot_builder_end (builder, &error);
  g_assert_no_error (error);
  return snapshot;
}

/* The string columns of every size GVariant frames differently (offsets
 * of 1, 2 and 4 bytes), with and without groups left out: each reply is
 * what the library would write, and holds the sums. */
static void
test_library_form (void)
{
  const struct { guint n; gsize name_bytes; gsize max_bytes; } cases[] = {
    { 1, 0, G_MAXSIZE },        /* names of under 256 bytes in all */
    { 3, 5, G_MAXSIZE },
    { 20, 100, G_MAXSIZE },     /* under 64 KiB */
    { 100, 1024, G_MAXSIZE },   /* more */
    { 100, 1024, 100000 },      /* about half of it left out */
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
      g_autoptr(PerfmonSnapshot) a = make_wide_snapshot (100, cases[c].n, cases[c].name_bytes);
      g_autoptr(PerfmonSnapshot) b = make_wide_snapshot (200, cases[c].n, cases[c].name_bytes);
      PerfmonSnapshot *both[] = { a, b };
      const guint pids[] = { 100, 200 };
      g_autoptr(GVariant) variant = NULL;
      g_autoptr(PerfmonSnapshot) merged = NULL;
      g_autoptr(GError) error = NULL;
      GPtrArray *groups;
      guint omitted = 0;

      variant = perfmond_aggregator_merge (aggregator, both, pids, 2, 4242, 5000, cases[c].max_bytes, &omitted);
      g_assert_nonnull (variant);
      merged = perfmon_snapshot_new_from_variant (variant, &error);
      g_assert_no_error (error);
      assert_library_form (variant, merged);
      groups = perfmon_snapshot_get_groups (merged);
      /* Threads and compartments of each process; windows and add-ons
       * merged. */
      g_assert_cmpuint (groups->len + omitted, ==, 6 * cases[c].n);
      g_assert_true (cases[c].max_bytes == G_MAXSIZE ? omitted == 0 : omitted > 0);
      g_assert_cmpuint (g_variant_get_size (variant), <=, cases[c].max_bytes);
      for (guint i = 0; i < groups->len; i++)
        {
          PerfmonGroupStats *group = g_ptr_array_index (groups, i);
          PerfmonGroupKind kind = perfmon_group_stats_get_kind (group);
          guint factor = kind == PERFMON_GROUP_KIND_WINDOW || kind == PERFMON_GROUP_KIND_ADDON ? 2 : 1;

          g_assert_cmpuint (perfmon_group_stats_get_ticks (group), ==, 3 * factor);
          g_assert_cmpuint (perfmon_group_stats_get_durations (group, NULL)[0], ==, 2 * factor);
          if (kind == PERFMON_GROUP_KIND_WINDOW)
            /* The name of the process that knows it. */
            g_assert_cmpuint (strlen (perfmon_group_stats_get_name (group)), ==,
                              perfmon_group_stats_get_window_id (group) % 2 == 0 ? cases[c].name_bytes : 0);
        }
    }
}

static void
test_empty (void)
{
  g_autoptr(PerfmondAggregator) aggregator = perfmond_aggregator_new ();
  g_autoptr(PerfmonSnapshot) merged = merge (aggregator, NULL, NULL, 0);

  g_assert_cmpuint (perfmon_snapshot_get_groups (merged)->len, ==, 0);
}

/* perfmond takes a reply of the current type, and of the type libperfmon
 * before 0.2 sends (without the wall time, the last member); not others. */
static void
test_reply_types (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = make_snapshot (10, 100, 1, 1, 0);
  g_autoptr(GVariant) current = g_variant_ref_sink (perfmon_snapshot_to_variant (snapshot));
  gsize n = g_variant_n_children (current);
  g_autofree GVariant **children = g_new0 (GVariant *, n);
  g_autoptr(GVariant) old = NULL;
  g_autoptr(GVariant) wrong = g_variant_ref_sink (g_variant_new ("(s)", "no"));
  g_autoptr(PerfmonSnapshot) from_current = NULL;
  g_autoptr(PerfmonSnapshot) from_old = NULL;
  g_autoptr(PerfmonSnapshot) from_wrong = NULL;
  g_autoptr(GError) error = NULL;

  for (gsize i = 0; i < n; i++)
    children[i] = g_variant_get_child_value (current, i);
  old = g_variant_ref_sink (g_variant_new_tuple (children, n - 1));
  for (gsize i = 0; i < n; i++)
    g_variant_unref (children[i]);

  from_current = perfmond_snapshot_from_reply (current, 100, &error);
  g_assert_no_error (error);
  g_assert_nonnull (from_current);

  from_old = perfmond_snapshot_from_reply (old, 100, &error);
  g_assert_no_error (error);
  g_assert_nonnull (from_old);
  g_assert_cmpuint (perfmon_snapshot_get_groups (from_old)->len, ==, 4);

  from_wrong = perfmond_snapshot_from_reply (wrong, 100, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_null (from_wrong);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/aggregate/merge", test_merge);
  g_test_add_func ("/aggregate/stable-ids", test_stable_ids);
  g_test_add_func ("/aggregate/saturation", test_saturation);
  g_test_add_func ("/aggregate/empty", test_empty);
  g_test_add_func ("/aggregate/bounded", test_bounded);
  g_test_add_func ("/aggregate/reply-types", test_reply_types);
  g_test_add_func ("/aggregate/library-form", test_library_form);

  return g_test_run ();
}
