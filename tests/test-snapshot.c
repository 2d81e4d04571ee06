/* test-snapshot.c: PerfmonSnapshot and PerfmonGroupStats
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "perfmon-error.h"
#include "perfmon-group-stats-private.h"
#include "perfmon-snapshot-private.h"
#include "perfmon-snapshot-builder.h"

#define N_DURATIONS PERFMON_N_DURATIONS

/* Helpers */

static PerfmonGroupStats *
make_group (guint64           id,
            PerfmonGroupKind  kind,
            const char       *name,
            guint64           window_id,
            const char       *addon_id,
            guint64           cpu_time,
            guint64           blocked_time,
            guint64           ticks,
            const guint64     durations[N_DURATIONS])
{
  PerfmonGroupStats *stats = _perfmon_group_stats_new (id, kind, name, window_id, addon_id);

  stats->cpu_time = cpu_time;
  stats->blocked_time = blocked_time;
  stats->ticks = ticks;
  memcpy (stats->durations, durations, sizeof stats->durations);

  return stats;
}

/* Takes the NULL-terminated groups. */
static PerfmonSnapshot *
make_snapshot (gint64      timestamp,
               gint64      interval,
               guint       pid,
               const char *process_name,
               guint64     user_time,
               guint64     system_time,
               ...)
{
  GPtrArray *groups = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_group_stats_unref);
  PerfmonGroupStats *stats;
  va_list args;

  va_start (args, system_time);
  while ((stats = va_arg (args, PerfmonGroupStats *)) != NULL)
    g_ptr_array_add (groups, stats);
  va_end (args);

  return _perfmon_snapshot_new (timestamp, 0, interval, pid, process_name,
                                user_time, system_time, groups);
}

static void
assert_durations (const PerfmonGroupStats *stats,
                  const guint64            expected[N_DURATIONS])
{
  gsize n = 0;
  const guint64 *durations = perfmon_group_stats_get_durations (stats, &n);

  g_assert_cmpuint (n, ==, N_DURATIONS);
  for (guint i = 0; i < N_DURATIONS; i++)
    {
      g_test_message ("durations[%u]", i);
      g_assert_cmpuint (durations[i], ==, expected[i]);
    }
}

static void
assert_groups_equal (const PerfmonGroupStats *a,
                     const PerfmonGroupStats *b)
{
  g_assert_cmpuint (perfmon_group_stats_get_id (a), ==, perfmon_group_stats_get_id (b));
  g_assert_cmpint (perfmon_group_stats_get_kind (a), ==, perfmon_group_stats_get_kind (b));
  g_assert_cmpstr (perfmon_group_stats_get_name (a), ==, perfmon_group_stats_get_name (b));
  g_assert_cmpuint (perfmon_group_stats_get_window_id (a), ==, perfmon_group_stats_get_window_id (b));
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (a), ==, perfmon_group_stats_get_addon_id (b));
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (a), ==, perfmon_group_stats_get_cpu_time (b));
  g_assert_cmpuint (perfmon_group_stats_get_blocked_time (a), ==, perfmon_group_stats_get_blocked_time (b));
  g_assert_cmpuint (perfmon_group_stats_get_ticks (a), ==, perfmon_group_stats_get_ticks (b));
  assert_durations (a, perfmon_group_stats_get_durations (b, NULL));
}

static void
assert_snapshots_equal (PerfmonSnapshot *a,
                        PerfmonSnapshot *b)
{
  GPtrArray *groups_a = perfmon_snapshot_get_groups (a);
  GPtrArray *groups_b = perfmon_snapshot_get_groups (b);

  g_assert_cmpint (perfmon_snapshot_get_timestamp (a), ==, perfmon_snapshot_get_timestamp (b));
  g_assert_cmpint (perfmon_snapshot_get_interval (a), ==, perfmon_snapshot_get_interval (b));
  g_assert_cmpuint (perfmon_snapshot_get_pid (a), ==, perfmon_snapshot_get_pid (b));
  g_assert_cmpstr (perfmon_snapshot_get_process_name (a), ==, perfmon_snapshot_get_process_name (b));
  g_assert_cmpuint (perfmon_snapshot_get_user_time (a), ==, perfmon_snapshot_get_user_time (b));
  g_assert_cmpuint (perfmon_snapshot_get_system_time (a), ==, perfmon_snapshot_get_system_time (b));

  g_assert_cmpuint (groups_a->len, ==, groups_b->len);
  for (guint i = 0; i < groups_a->len; i++)
    assert_groups_equal (g_ptr_array_index (groups_a, i), g_ptr_array_index (groups_b, i));
}

static const guint64 durations_a[N_DURATIONS] = { 90, 80, 70, 60, 50, 40, 30, 20, 10, 5 };
static const guint64 durations_b[N_DURATIONS] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 };
static const guint64 durations_zero[N_DURATIONS] = { 0, };

/* A snapshot with awkward values: a window id and counters that do not fit
 * in a JSON integer, no add-on id, a non-ASCII add-on id, names that need
 * escaping. */
static PerfmonSnapshot *
make_awkward_snapshot (void)
{
  const guint64 big_durations[N_DURATIONS] = {
    G_MAXUINT64, G_MAXUINT64 - 1, (guint64) G_MAXINT64 + 1, G_MAXINT64, 1000, 1, 1, 0, 0, 0
  };

  return make_snapshot (G_MAXINT64, 123, G_MAXUINT, "proc \"name\"\n\twith\\escapes \x01 é",
                        (guint64) G_MAXINT64 + 1, G_MAXUINT64,
                        make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                    1000, 10, 100, durations_b),
                        make_group (G_MAXUINT64, PERFMON_GROUP_KIND_WINDOW,
                                    "a \"quoted\"\nwindow title / </script>",
                                    G_MAXUINT64, NULL, G_MAXUINT64, (guint64) G_MAXINT64 + 7,
                                    G_MAXUINT64, big_durations),
                        make_group (3, PERFMON_GROUP_KIND_ADDON, "Grammaire française ✓",
                                    0, "addon-日本語-ünïcödé@example.org",
                                    0, 0, 0, durations_zero),
                        make_group (4, PERFMON_GROUP_KIND_COMPARTMENT, "",
                                    (guint64) G_MAXINT64 + 1, "", 5, 0, 9, durations_b),
                        NULL);
}

/* Getters */

static void
test_group_stats (void)
{
  g_autoptr(PerfmonGroupStats) stats = make_group (7, PERFMON_GROUP_KIND_ADDON, "Ad blocker",
                                                   12, "adblock@example.org",
                                                   1500, 250, 42, durations_b);
  g_autoptr(PerfmonGroupStats) copy = _perfmon_group_stats_copy (stats);
  PerfmonGroupStats *boxed;
  gsize n = 0;

  g_assert_cmpuint (perfmon_group_stats_get_id (stats), ==, 7);
  g_assert_cmpint (perfmon_group_stats_get_kind (stats), ==, PERFMON_GROUP_KIND_ADDON);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "Ad blocker");
  g_assert_cmpuint (perfmon_group_stats_get_window_id (stats), ==, 12);
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (stats), ==, "adblock@example.org");
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, 1500);
  g_assert_cmpuint (perfmon_group_stats_get_blocked_time (stats), ==, 250);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 42);
  assert_durations (stats, durations_b);
  g_assert_nonnull (perfmon_group_stats_get_durations (stats, NULL));
  g_assert_true (perfmon_group_stats_get_durations (stats, &n) ==
                 perfmon_group_stats_get_durations (stats, NULL));
  g_assert_cmpuint (n, ==, N_DURATIONS);

  /* A copy is a distinct, equal object. */
  g_assert_true (copy != stats);
  g_assert_true (copy->name != stats->name);
  assert_groups_equal (copy, stats);

  /* Boxed copy and free are ref and unref. */
  boxed = g_boxed_copy (PERFMON_TYPE_GROUP_STATS, stats);
  g_assert_true (boxed == stats);
  g_boxed_free (PERFMON_TYPE_GROUP_STATS, boxed);
  g_assert_true (perfmon_group_stats_ref (stats) == stats);
  perfmon_group_stats_unref (stats);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "Ad blocker");
}

static void
test_group_stats_no_addon (void)
{
  g_autoptr(PerfmonGroupStats) stats = _perfmon_group_stats_new (1, PERFMON_GROUP_KIND_THREAD,
                                                                 "main", 0, NULL);

  g_assert_null (perfmon_group_stats_get_addon_id (stats));
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, 0);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 0);
  assert_durations (stats, durations_zero);
}

static void
test_getters (void)
{
  g_autoptr(PerfmonSnapshot) snapshot =
    make_snapshot (5000000, 0, 4242, "gedit", 1500000, 250000,
                   make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                               1200000, 30, 5000, durations_a),
                   make_group (2, PERFMON_GROUP_KIND_WINDOW, "Untitled", 77, NULL,
                               300, 0, 20, durations_b),
                   NULL);
  g_autofree char *process_name = NULL;
  GPtrArray *groups;
  gint64 timestamp, interval;
  guint64 user_time, system_time;
  guint pid;

  g_assert_cmpint (perfmon_snapshot_get_timestamp (snapshot), ==, 5000000);
  g_assert_cmpint (perfmon_snapshot_get_interval (snapshot), ==, 0);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, 4242);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (snapshot), ==, "gedit");
  g_assert_cmpuint (perfmon_snapshot_get_user_time (snapshot), ==, 1500000);
  g_assert_cmpuint (perfmon_snapshot_get_system_time (snapshot), ==, 250000);

  groups = perfmon_snapshot_get_groups (snapshot);
  g_assert_cmpuint (groups->len, ==, 2);
  g_assert_cmpuint (perfmon_group_stats_get_id (g_ptr_array_index (groups, 0)), ==, 1);
  g_assert_cmpuint (perfmon_group_stats_get_id (g_ptr_array_index (groups, 1)), ==, 2);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (g_ptr_array_index (groups, 0)), ==, 1200000);
  assert_durations (g_ptr_array_index (groups, 0), durations_a);

  g_object_get (snapshot,
                "timestamp", &timestamp,
                "interval", &interval,
                "pid", &pid,
                "process-name", &process_name,
                "user-time", &user_time,
                "system-time", &system_time,
                NULL);
  g_assert_cmpint (timestamp, ==, 5000000);
  g_assert_cmpint (interval, ==, 0);
  g_assert_cmpuint (pid, ==, 4242);
  g_assert_cmpstr (process_name, ==, "gedit");
  g_assert_cmpuint (user_time, ==, 1500000);
  g_assert_cmpuint (system_time, ==, 250000);

  /* Read-only. */
  g_assert_false (g_object_class_find_property (G_OBJECT_GET_CLASS (snapshot), "pid")->flags &
                  G_PARAM_WRITABLE);
}

static void
test_null_process_name (void)
{
  g_autoptr(PerfmonSnapshot) snapshot =
    _perfmon_snapshot_new (1, 0, 0, 1, NULL, 0, 0,
                           g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_group_stats_unref));

  g_assert_cmpstr (perfmon_snapshot_get_process_name (snapshot), ==, "");
  g_assert_cmpuint (perfmon_snapshot_get_groups (snapshot)->len, ==, 0);
}

static void
test_invalid_private_data (void)
{
  const guint64 increasing[N_DURATIONS] = { 1, 2, 0, };
  g_autoptr(PerfmonSnapshot) snapshot = NULL;

  /* The monitor must not produce data that would not read back. */
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_CRITICAL,
                         "*would not read back*groups[0].durations*");
  snapshot = make_snapshot (1, 0, 1, "p", 0, 0,
                            make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                        0, 0, 10, increasing),
                            NULL);
  g_test_assert_expected_messages ();
  g_assert_nonnull (snapshot);
}

static void
test_lookup (void)
{
  g_autoptr(PerfmonSnapshot) snapshot =
    make_snapshot (1000, 0, 10, "p", 0, 0,
                   make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL, 0, 0, 0, durations_zero),
                   make_group (G_MAXUINT64, PERFMON_GROUP_KIND_WINDOW, "w", 5, NULL,
                               0, 0, 0, durations_zero),
                   make_group ((guint64) 1 << 32, PERFMON_GROUP_KIND_ADDON, "a", 0, "a@b",
                               0, 0, 0, durations_zero),
                   NULL);
  GPtrArray *groups = perfmon_snapshot_get_groups (snapshot);

  g_assert_true (perfmon_snapshot_lookup (snapshot, 1) == g_ptr_array_index (groups, 0));
  g_assert_true (perfmon_snapshot_lookup (snapshot, G_MAXUINT64) == g_ptr_array_index (groups, 1));
  g_assert_true (perfmon_snapshot_lookup (snapshot, (guint64) 1 << 32) == g_ptr_array_index (groups, 2));
  g_assert_null (perfmon_snapshot_lookup (snapshot, 0));
  g_assert_null (perfmon_snapshot_lookup (snapshot, 2));
  g_assert_null (perfmon_snapshot_lookup (snapshot, G_MAXUINT64 - 1));
}

/* Subtraction */

static void
test_subtract (void)
{
  const guint64 old_thread[N_DURATIONS] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
  const guint64 new_thread[N_DURATIONS] = { 31, 27, 23, 19, 15, 11, 7, 4, 2, 1 };
  const guint64 delta_thread[N_DURATIONS] = { 21, 18, 15, 12, 9, 6, 3, 1, 0, 0 };
  const guint64 old_window[N_DURATIONS] = { 5, 5, 5, 0, };
  const guint64 new_window[N_DURATIONS] = { 9, 8, 7, 1, 0, };
  const guint64 delta_window[N_DURATIONS] = { 4, 3, 2, 1, 0, };
  const guint64 compartment[N_DURATIONS] = { 3, 2, 1, 1, 1, 1, 1, 1, 1, 1 };
  g_autoptr(PerfmonSnapshot) older =
    make_snapshot (1000000, 0, 99, "app", 5000, 700,
                   make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                               100000, 50, 1000, old_thread),
                   make_group (2, PERFMON_GROUP_KIND_WINDOW, "Window", 2, NULL,
                               40000, 0, 100, old_window),
                   make_group (3, PERFMON_GROUP_KIND_ADDON, "Gone", 0, "gone@example.org",
                               7000, 3, 10, durations_b),
                   NULL);
  g_autoptr(PerfmonSnapshot) newer =
    make_snapshot (4500000, 0, 99, "app", 9000, 1000,
                   make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                               350000, 80, 1500, new_thread),
                   make_group (2, PERFMON_GROUP_KIND_WINDOW, "Window", 2, NULL,
                               40000, 12, 140, new_window),
                   make_group (4, PERFMON_GROUP_KIND_COMPARTMENT, "New", 2, "x@y",
                               2222, 11, 3, compartment),
                   NULL);
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(PerfmonSnapshot) zero = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonGroupStats *stats;
  GPtrArray *groups;

  delta = perfmon_snapshot_subtract (newer, older, &error);
  g_assert_no_error (error);
  g_assert_nonnull (delta);

  g_assert_cmpint (perfmon_snapshot_get_timestamp (delta), ==, 4500000);
  g_assert_cmpint (perfmon_snapshot_get_interval (delta), ==, 3500000);
  g_assert_cmpuint (perfmon_snapshot_get_pid (delta), ==, 99);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (delta), ==, "app");
  g_assert_cmpuint (perfmon_snapshot_get_user_time (delta), ==, 4000);
  g_assert_cmpuint (perfmon_snapshot_get_system_time (delta), ==, 300);

  /* One entry per group of the newer snapshot, in its order. */
  groups = perfmon_snapshot_get_groups (delta);
  g_assert_cmpuint (groups->len, ==, 3);

  stats = g_ptr_array_index (groups, 0);
  g_assert_true (perfmon_snapshot_lookup (delta, 1) == stats);
  g_assert_cmpint (perfmon_group_stats_get_kind (stats), ==, PERFMON_GROUP_KIND_THREAD);
  g_assert_cmpstr (perfmon_group_stats_get_name (stats), ==, "main");
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, 250000);
  g_assert_cmpuint (perfmon_group_stats_get_blocked_time (stats), ==, 30);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 500);
  assert_durations (stats, delta_thread);

  stats = g_ptr_array_index (groups, 1);
  g_assert_true (perfmon_snapshot_lookup (delta, 2) == stats);
  g_assert_cmpint (perfmon_group_stats_get_kind (stats), ==, PERFMON_GROUP_KIND_WINDOW);
  g_assert_cmpuint (perfmon_group_stats_get_window_id (stats), ==, 2);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, 0);
  g_assert_cmpuint (perfmon_group_stats_get_blocked_time (stats), ==, 12);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 40);
  assert_durations (stats, delta_window);

  /* New since the older snapshot: counted from zero. */
  stats = g_ptr_array_index (groups, 2);
  g_assert_true (perfmon_snapshot_lookup (delta, 4) == stats);
  assert_groups_equal (stats, perfmon_snapshot_lookup (newer, 4));
  g_assert_true (stats != perfmon_snapshot_lookup (newer, 4));

  /* Gone from the newer snapshot: dropped. */
  g_assert_null (perfmon_snapshot_lookup (delta, 3));

  /* The operands are untouched. */
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (perfmon_snapshot_lookup (newer, 1)), ==, 350000);
  assert_durations (perfmon_snapshot_lookup (newer, 1), new_thread);
  assert_durations (perfmon_snapshot_lookup (older, 1), old_thread);

  /* A snapshot minus itself is all zeros. */
  zero = perfmon_snapshot_subtract (newer, newer, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_interval (zero), ==, 0);
  g_assert_cmpuint (perfmon_snapshot_get_user_time (zero), ==, 0);
  groups = perfmon_snapshot_get_groups (zero);
  g_assert_cmpuint (groups->len, ==, 3);
  for (guint i = 0; i < groups->len; i++)
    {
      stats = g_ptr_array_index (groups, i);
      g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, 0);
      g_assert_cmpuint (perfmon_group_stats_get_blocked_time (stats), ==, 0);
      g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 0);
      assert_durations (stats, durations_zero);
    }
}

static void
test_subtract_order (void)
{
  g_autoptr(PerfmonSnapshot) older = make_snapshot (1000, 0, 5, "p", 10, 10, NULL);
  g_autoptr(PerfmonSnapshot) newer = make_snapshot (2000, 0, 5, "p", 20, 20, NULL);
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  delta = perfmon_snapshot_subtract (older, newer, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "2000"));
  g_assert_nonnull (strstr (error->message, "1000"));
}

static void
test_subtract_pid (void)
{
  g_autoptr(PerfmonSnapshot) older = make_snapshot (1000, 0, 5, "p", 10, 10, NULL);
  g_autoptr(PerfmonSnapshot) newer = make_snapshot (2000, 0, 6, "p", 20, 20, NULL);
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  delta = perfmon_snapshot_subtract (newer, older, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "pid 5"));
  g_assert_nonnull (strstr (error->message, "pid 6"));
}

typedef struct
{
  guint64     cpu_time;
  guint64     blocked_time;
  guint64     ticks;
  guint64     durations[N_DURATIONS];
  const char *expected;
} BackwardsCase;

static void
test_subtract_backwards (void)
{
  /* The older group of each case is valid by itself, and larger than the
   * newer one in exactly one counter. */
  const BackwardsCase cases[] = {
    { 101, 0, 0, { 0, }, "group 8: cpu_time went backwards: 101 in the older snapshot, 100 in the newer one" },
    { 0, 200, 0, { 0, }, "group 8: blocked_time went backwards" },
    { 0, 0, G_MAXUINT64, { 0, }, "group 8: ticks went backwards" },
    { 0, 0, 201, { 201, 0, }, "group 8: durations[0] went backwards" },
    { 0, 0, 101, { 101, 101, 101, 101, 101, 101, 101, 101, 101, 101 },
      "group 8: durations[9] went backwards" },
  };
  const guint64 new_durations[N_DURATIONS] = { 200, 200, 200, 200, 200, 200, 200, 200, 200, 100 };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(PerfmonSnapshot) older = NULL;
      g_autoptr(PerfmonSnapshot) newer = NULL;
      g_autoptr(PerfmonSnapshot) delta = NULL;
      g_autoptr(GError) error = NULL;

      g_test_message ("case %s", cases[i].expected);

      older = make_snapshot (1, 0, 5, "p", 0, 0,
                             make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                         0, 0, 0, durations_zero),
                             make_group (8, PERFMON_GROUP_KIND_WINDOW, "w", 1, NULL,
                                         cases[i].cpu_time, cases[i].blocked_time,
                                         cases[i].ticks, cases[i].durations),
                             NULL);
      newer = make_snapshot (2, 0, 5, "p", 0, 0,
                             make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                         0, 0, 0, durations_zero),
                             make_group (8, PERFMON_GROUP_KIND_WINDOW, "w", 1, NULL,
                                         100, 100, 1000, new_durations),
                             NULL);

      delta = perfmon_snapshot_subtract (newer, older, &error);
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER);
      g_assert_null (delta);
      g_assert_nonnull (strstr (error->message, cases[i].expected));
    }
}

static void
test_subtract_process_time_backwards (void)
{
  g_autoptr(PerfmonSnapshot) older = make_snapshot (1, 0, 5, "p", 10, 10, NULL);
  g_autoptr(PerfmonSnapshot) newer_user = make_snapshot (2, 0, 5, "p", 9, 10, NULL);
  g_autoptr(PerfmonSnapshot) newer_system = make_snapshot (2, 0, 5, "p", 10, 9, NULL);
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  delta = perfmon_snapshot_subtract (newer_user, older, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "user_time"));
  g_clear_error (&error);

  delta = perfmon_snapshot_subtract (newer_system, older, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_ORDER);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "system_time"));
}

static void
test_subtract_inconsistent (void)
{
  const guint64 old_durations[N_DURATIONS] = { 5, 0, };
  const guint64 new_durations[N_DURATIONS] = { 5, 5, 0, };
  g_autoptr(PerfmonSnapshot) older = NULL;
  g_autoptr(PerfmonSnapshot) newer = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  /* Each snapshot is valid, but 5 more iterations over 2 ms and none over
   * 1 ms cannot happen. */
  older = make_snapshot (1, 0, 5, "p", 0, 0,
                         make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                     0, 0, 10, old_durations),
                         NULL);
  newer = make_snapshot (2, 0, 5, "p", 0, 0,
                         make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                     0, 0, 10, new_durations),
                         NULL);
  delta = perfmon_snapshot_subtract (newer, older, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "groups[0].durations"));
  g_clear_error (&error);
  g_clear_object (&older);
  g_clear_object (&newer);

  /* The same id for groups of different kinds. */
  older = make_snapshot (1, 0, 5, "p", 0, 0,
                         make_group (3, PERFMON_GROUP_KIND_WINDOW, "w", 3, NULL,
                                     0, 0, 0, durations_zero),
                         NULL);
  newer = make_snapshot (2, 0, 5, "p", 0, 0,
                         make_group (3, PERFMON_GROUP_KIND_ADDON, "a", 0, "a",
                                     0, 0, 0, durations_zero),
                         NULL);
  delta = perfmon_snapshot_subtract (newer, older, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_SNAPSHOT_MISMATCH);
  g_assert_null (delta);
  g_assert_nonnull (strstr (error->message, "group 3"));
}

/* JSON */

static void
test_json_format (void)
{
  const guint64 durations[N_DURATIONS] = { 40, 12, 3, 1, 0, };
  g_autoptr(PerfmonSnapshot) snapshot =
    make_snapshot (1234567890, 0, 4242, "gedit", 1500000, 250000,
                   make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                               1200000, 0, 5000, durations),
                   make_group (9, PERFMON_GROUP_KIND_ADDON, "Spell", 0, "spell@x",
                               0, 0, 0, durations_zero),
                   make_group (10, PERFMON_GROUP_KIND_WINDOW, "W", G_MAXUINT64, NULL,
                               0, 0, 0, durations_zero),
                   make_group (11, PERFMON_GROUP_KIND_COMPARTMENT, "C", 3, "spell@x",
                               0, 0, 0, durations_zero),
                   NULL);
  g_autofree char *json = perfmon_snapshot_to_json (snapshot);

  /* The format is a contract: key order, names, the u64 string form. */
  g_assert_cmpstr (json, ==,
                   "{\"version\":1,\"timestamp\":1234567890,\"interval\":0,\"pid\":4242,"
                   "\"process_name\":\"gedit\",\"user_time\":1500000,\"system_time\":250000,"
                   "\"groups\":["
                   "{\"id\":1,\"kind\":\"thread\",\"name\":\"main\",\"window_id\":0,"
                   "\"addon_id\":null,\"cpu_time\":1200000,\"blocked_time\":0,\"ticks\":5000,"
                   "\"durations\":[40,12,3,1,0,0,0,0,0,0]},"
                   "{\"id\":9,\"kind\":\"addon\",\"name\":\"Spell\",\"window_id\":0,"
                   "\"addon_id\":\"spell@x\",\"cpu_time\":0,\"blocked_time\":0,\"ticks\":0,"
                   "\"durations\":[0,0,0,0,0,0,0,0,0,0]},"
                   "{\"id\":10,\"kind\":\"window\",\"name\":\"W\","
                   "\"window_id\":\"18446744073709551615\","
                   "\"addon_id\":null,\"cpu_time\":0,\"blocked_time\":0,\"ticks\":0,"
                   "\"durations\":[0,0,0,0,0,0,0,0,0,0]},"
                   "{\"id\":11,\"kind\":\"compartment\",\"name\":\"C\",\"window_id\":3,"
                   "\"addon_id\":\"spell@x\",\"cpu_time\":0,\"blocked_time\":0,\"ticks\":0,"
                   "\"durations\":[0,0,0,0,0,0,0,0,0,0]}]}");
}

static void
test_json_roundtrip (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = make_awkward_snapshot ();
  g_autoptr(PerfmonSnapshot) copy = NULL;
  g_autoptr(PerfmonSnapshot) empty = make_snapshot (0, 0, 1, "", 0, 0, NULL);
  g_autoptr(PerfmonSnapshot) empty_copy = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *json = perfmon_snapshot_to_json (snapshot);
  g_autofree char *json_again = NULL;
  g_autofree char *empty_json = perfmon_snapshot_to_json (empty);

  g_test_message ("%s", json);
  g_assert_true (g_utf8_validate (json, -1, NULL));
  g_assert_nonnull (strstr (json, "\"window_id\":\"18446744073709551615\""));
  g_assert_nonnull (strstr (json, "\"user_time\":\"9223372036854775808\""));
  g_assert_nonnull (strstr (json, "\"addon_id\":null"));

  copy = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  g_assert_nonnull (copy);
  assert_snapshots_equal (snapshot, copy);
  g_assert_cmpuint (perfmon_group_stats_get_window_id (perfmon_snapshot_lookup (copy, G_MAXUINT64)),
                    ==, G_MAXUINT64);
  g_assert_null (perfmon_group_stats_get_addon_id (perfmon_snapshot_lookup (copy, 1)));
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (perfmon_snapshot_lookup (copy, 3)),
                   ==, "addon-日本語-ünïcödé@example.org");
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (perfmon_snapshot_lookup (copy, 4)), ==, "");
  g_assert_cmpstr (perfmon_group_stats_get_name (perfmon_snapshot_lookup (copy, G_MAXUINT64)),
                   ==, "a \"quoted\"\nwindow title / </script>");

  json_again = perfmon_snapshot_to_json (copy);
  g_assert_cmpstr (json, ==, json_again);

  empty_copy = perfmon_snapshot_new_from_json (empty_json, &error);
  g_assert_no_error (error);
  assert_snapshots_equal (empty, empty_copy);
}

static void
test_json_lenient (void)
{
  /* Unknown members are ignored; unsigned members may be strings of digits,
   * whatever their value; members may come in any order. */
  const char *json =
    "{\"groups\":[{\"durations\":[\"3\",2,1,0,0,0,0,0,0,\"0\"],\"ticks\":\"0005\","
    "\"blocked_time\":0,\"cpu_time\":\"18446744073709551615\",\"addon_id\":null,"
    "\"window_id\":\"0\",\"name\":\"main\",\"kind\":\"thread\",\"id\":\"1\","
    "\"future\":{\"nested\":[1,2,{\"a\":null}]}}],"
    "\"system_time\":1,\"user_time\":\"2\",\"process_name\":\"p\",\"pid\":\"4294967295\","
    "\"interval\":0,\"timestamp\":7,\"version\":\"1\",\"also_unknown\":true}";
  const guint64 expected[N_DURATIONS] = { 3, 2, 1, 0, };
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonGroupStats *stats;

  snapshot = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (snapshot), ==, 7);
  g_assert_cmpuint (perfmon_snapshot_get_pid (snapshot), ==, G_MAXUINT);
  g_assert_cmpuint (perfmon_snapshot_get_user_time (snapshot), ==, 2);
  stats = perfmon_snapshot_lookup (snapshot, 1);
  g_assert_nonnull (stats);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (stats), ==, G_MAXUINT64);
  g_assert_cmpuint (perfmon_group_stats_get_ticks (stats), ==, 5);
  assert_durations (stats, expected);
}

/* A valid document; the malformed cases change one member of it. */
static const char valid_json[] =
  "{\"version\":1,\"timestamp\":1000,\"interval\":0,\"pid\":42,\"process_name\":\"p\","
  "\"user_time\":10,\"system_time\":20,\"groups\":["
  "{\"id\":1,\"kind\":\"thread\",\"name\":\"main\",\"window_id\":0,\"addon_id\":null,"
  "\"cpu_time\":100,\"blocked_time\":0,\"ticks\":10,\"durations\":[5,4,3,2,1,0,0,0,0,0]},"
  "{\"id\":2,\"kind\":\"window\",\"name\":\"w\",\"window_id\":3,\"addon_id\":\"a\","
  "\"cpu_time\":50,\"blocked_time\":1,\"ticks\":5,\"durations\":[5,0,0,0,0,0,0,0,0,0]}]}";

typedef struct
{
  const char *raw;       /* the whole document, or NULL to change valid_json: */
  int         group;     /* -1: the root object, else groups[group] */
  const char *member;
  const char *value;     /* new JSON value of @member, or NULL to remove it */
  PerfmonError code;
  const char *path;      /* the message must contain "PATH:" */
  const char *also;      /* and this, if not NULL */
} MalformedJson;

#define ROOT(member, value, code, path) { NULL, -1, member, value, code, path, NULL }
#define GROUP(member, value, code, path) { NULL, 1, member, value, code, path, NULL }
#define RAW(raw, path) { raw, -1, NULL, NULL, PERFMON_ERROR_INVALID_DATA, path, NULL }

static const MalformedJson malformed_json[] = {
  RAW ("not JSON at all", "(root)"),
  RAW ("", "(root)"),
  RAW ("   \n", "(root)"),
  RAW ("{\"version\":1,", "(root)"),
  RAW ("[1, 2, 3]", "(root)"),
  RAW ("42", "(root)"),
  RAW ("\"a string\"", "(root)"),
  RAW ("null", "(root)"),
  RAW ("{\"version\":1} \xff\xfe", "(root)"),
  RAW ("{\"name\":\"\xc3\x28\"}", "(root)"),
  RAW ("/* a comment */ {}", "(root)"),
  RAW ("{'version':1}", "(root)"),
  RAW ("{}", "version"),

  ROOT ("version", NULL, PERFMON_ERROR_INVALID_DATA, "version"),
  ROOT ("timestamp", NULL, PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("interval", NULL, PERFMON_ERROR_INVALID_DATA, "interval"),
  ROOT ("pid", NULL, PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("process_name", NULL, PERFMON_ERROR_INVALID_DATA, "process_name"),
  ROOT ("user_time", NULL, PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("system_time", NULL, PERFMON_ERROR_INVALID_DATA, "system_time"),
  ROOT ("groups", NULL, PERFMON_ERROR_INVALID_DATA, "groups"),

  ROOT ("version", "2", PERFMON_ERROR_UNSUPPORTED_VERSION, "version"),
  ROOT ("version", "0", PERFMON_ERROR_UNSUPPORTED_VERSION, "version"),
  ROOT ("version", "\"2\"", PERFMON_ERROR_UNSUPPORTED_VERSION, "version"),
  ROOT ("version", "-1", PERFMON_ERROR_INVALID_DATA, "version"),
  ROOT ("version", "1.0", PERFMON_ERROR_INVALID_DATA, "version"),
  ROOT ("version", "true", PERFMON_ERROR_INVALID_DATA, "version"),
  ROOT ("timestamp", "-1", PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("timestamp", "1.5", PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("timestamp", "1e3", PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("timestamp", "\"1000\"", PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("timestamp", "null", PERFMON_ERROR_INVALID_DATA, "timestamp"),
  ROOT ("interval", "-5", PERFMON_ERROR_INVALID_DATA, "interval"),
  ROOT ("pid", "0", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("pid", "4294967296", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("pid", "\"18446744073709551615\"", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("pid", "-3", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("pid", "42.0", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("pid", "[42]", PERFMON_ERROR_INVALID_DATA, "pid"),
  ROOT ("process_name", "5", PERFMON_ERROR_INVALID_DATA, "process_name"),
  ROOT ("process_name", "null", PERFMON_ERROR_INVALID_DATA, "process_name"),
  ROOT ("user_time", "\"12a\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\" 12\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"+12\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"-1\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"0x10\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"18446744073709551616\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("user_time", "\"99999999999999999999999\"", PERFMON_ERROR_INVALID_DATA, "user_time"),
  ROOT ("system_time", "{}", PERFMON_ERROR_INVALID_DATA, "system_time"),
  ROOT ("system_time", "-1", PERFMON_ERROR_INVALID_DATA, "system_time"),
  ROOT ("groups", "{}", PERFMON_ERROR_INVALID_DATA, "groups"),
  ROOT ("groups", "null", PERFMON_ERROR_INVALID_DATA, "groups"),
  ROOT ("groups", "[1]", PERFMON_ERROR_INVALID_DATA, "groups[0]"),
  ROOT ("groups", "[null]", PERFMON_ERROR_INVALID_DATA, "groups[0]"),

  GROUP ("id", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].id"),
  GROUP ("kind", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].kind"),
  GROUP ("name", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].name"),
  GROUP ("window_id", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].window_id"),
  GROUP ("addon_id", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].addon_id"),
  GROUP ("cpu_time", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].cpu_time"),
  GROUP ("blocked_time", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].blocked_time"),
  GROUP ("ticks", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].ticks"),
  GROUP ("durations", NULL, PERFMON_ERROR_INVALID_DATA, "groups[1].durations"),
  GROUP ("id", "-1", PERFMON_ERROR_INVALID_DATA, "groups[1].id"),
  GROUP ("kind", "\"gadget\"", PERFMON_ERROR_INVALID_DATA, "groups[1].kind"),
  GROUP ("kind", "\"Thread\"", PERFMON_ERROR_INVALID_DATA, "groups[1].kind"),
  GROUP ("kind", "1", PERFMON_ERROR_INVALID_DATA, "groups[1].kind"),
  GROUP ("name", "null", PERFMON_ERROR_INVALID_DATA, "groups[1].name"),
  GROUP ("name", "[]", PERFMON_ERROR_INVALID_DATA, "groups[1].name"),
  GROUP ("addon_id", "5", PERFMON_ERROR_INVALID_DATA, "groups[1].addon_id"),
  GROUP ("addon_id", "false", PERFMON_ERROR_INVALID_DATA, "groups[1].addon_id"),
  GROUP ("window_id", "-1", PERFMON_ERROR_INVALID_DATA, "groups[1].window_id"),
  GROUP ("cpu_time", "1e3", PERFMON_ERROR_INVALID_DATA, "groups[1].cpu_time"),
  GROUP ("cpu_time", "100.5", PERFMON_ERROR_INVALID_DATA, "groups[1].cpu_time"),
  GROUP ("cpu_time", "\"18446744073709551616\"", PERFMON_ERROR_INVALID_DATA, "groups[1].cpu_time"),
  GROUP ("blocked_time", "\"1 000\"", PERFMON_ERROR_INVALID_DATA, "groups[1].blocked_time"),
  GROUP ("ticks", "\"abc\"", PERFMON_ERROR_INVALID_DATA, "groups[1].ticks"),
  GROUP ("ticks", "null", PERFMON_ERROR_INVALID_DATA, "groups[1].ticks"),
  { NULL, 1, "durations", "[5,0,0,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "got 9 elements" },
  { NULL, 1, "durations", "[5,0,0,0,0,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "got 11 elements" },
  { NULL, 1, "durations", "[]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "got 0 elements" },
  GROUP ("durations", "\"5,0,0\"", PERFMON_ERROR_INVALID_DATA, "groups[1].durations"),
  GROUP ("durations", "{}", PERFMON_ERROR_INVALID_DATA, "groups[1].durations"),
  GROUP ("durations", "[5,0,0,-1,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA, "groups[1].durations[3]"),
  GROUP ("durations", "[null,0,0,0,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA, "groups[1].durations[0]"),
  GROUP ("durations", "[5,0,0,0,0,0,0,0,0,0.5]", PERFMON_ERROR_INVALID_DATA, "groups[1].durations[9]"),
  GROUP ("durations", "[5,0,0,0,0,0,0,0,0,[0]]", PERFMON_ERROR_INVALID_DATA, "groups[1].durations[9]"),
  { NULL, 1, "durations", "[5,4,3,2,1,0,0,0,0,1]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "durations[9]" },
  { NULL, 1, "durations", "[2,3,0,0,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "durations[1]" },
  { NULL, 1, "durations", "[6,0,0,0,0,0,0,0,0,0]", PERFMON_ERROR_INVALID_DATA,
    "groups[1].durations", "ticks" },
  { NULL, 1, "id", "1", PERFMON_ERROR_INVALID_DATA, "groups[1].id", "groups[0]" },
  { NULL, 1, "id", "\"1\"", PERFMON_ERROR_INVALID_DATA, "groups[1].id", "groups[0]" },
};

static char *
mutate_json (const MalformedJson *c)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) root = json_from_string (valid_json, &error);
  JsonObject *object;

  g_assert_no_error (error);

  object = json_node_get_object (root);
  if (c->group >= 0)
    object = json_array_get_object_element (json_object_get_array_member (object, "groups"),
                                            c->group);

  g_assert_true (json_object_has_member (object, c->member));

  if (c->value == NULL)
    {
      json_object_remove_member (object, c->member);
    }
  else
    {
      JsonNode *value = json_from_string (c->value, &error);

      g_assert_no_error (error);
      json_object_set_member (object, c->member, value);
    }

  return json_to_string (root, FALSE);
}

static void
test_json_malformed (void)
{
  g_autoptr(PerfmonSnapshot) valid = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_cmpuint (G_N_ELEMENTS (malformed_json), >=, 25);

  /* Every case fails because of its change only. */
  valid = perfmon_snapshot_new_from_json (valid_json, &error);
  g_assert_no_error (error);
  g_assert_nonnull (valid);

  for (guint i = 0; i < G_N_ELEMENTS (malformed_json); i++)
    {
      const MalformedJson *c = &malformed_json[i];
      g_autofree char *json = c->raw != NULL ? g_strdup (c->raw) : mutate_json (c);
      g_autofree char *expected = g_strconcat (c->path, ":", NULL);
      g_autofree char *escaped = g_strescape (json, NULL);
      g_autoptr(PerfmonSnapshot) snapshot = NULL;

      g_test_message ("case %u: %s", i, escaped);

      snapshot = perfmon_snapshot_new_from_json (json, &error);
      g_assert_null (snapshot);
      g_assert_error (error, PERFMON_ERROR, (gint) c->code);
      g_test_message ("  -> %s", error->message);
      g_assert_nonnull (strstr (error->message, expected));
      if (c->also != NULL)
        g_assert_nonnull (strstr (error->message, c->also));
      g_assert_true (g_utf8_validate (error->message, -1, NULL));
      g_clear_error (&error);
    }
}

static void
test_json_deep_nesting (void)
{
  const gsize depth = 1000000;
  g_autofree char *json = g_malloc (2 * depth + 64);
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) doc = g_string_new (NULL);
  char *p = json;

  /* json-glib would overflow the stack on this; it must never see it. */
  memset (p, '[', depth);
  p += depth;
  memset (p, ']', depth);
  p += depth;
  *p = '\0';

  snapshot = perfmon_snapshot_new_from_json (json, &error);
  g_assert_null (snapshot);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "(root):"));
  g_clear_error (&error);

  /* Unbalanced, in an unknown member, with brackets in strings that must
   * not fool the count either way. */
  p = json + g_snprintf (json, 64, "{\"future\":\"]]]]\\\"]]]]\",\"x\":");
  memset (p, '{', depth / 2);
  p[depth / 2] = '\0';
  snapshot = perfmon_snapshot_new_from_json (json, &error);
  g_assert_null (snapshot);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "(root):"));
  g_assert_nonnull (strstr (error->message, "nested"));
  g_clear_error (&error);

  /* Brackets inside strings do not count. */
  g_string_append (doc, "{\"version\":1,\"timestamp\":0,\"interval\":0,\"pid\":1,\"process_name\":\"");
  for (guint i = 0; i < 1000; i++)
    g_string_append (doc, "[{\\\"");
  g_string_append (doc, "\",\"user_time\":0,\"system_time\":0,\"groups\":[]}");
  snapshot = perfmon_snapshot_new_from_json (doc->str, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (strlen (perfmon_snapshot_get_process_name (snapshot)), ==, 3000);
  g_clear_object (&snapshot);

  /* The limit: 128 levels in all, the root object included. */
  for (guint levels = 127; levels <= 128; levels++)
    {
      g_string_truncate (doc, 0);
      g_string_append (doc, "{\"version\":1,\"timestamp\":0,\"interval\":0,\"pid\":1,"
                       "\"process_name\":\"\",\"user_time\":0,\"system_time\":0,"
                       "\"groups\":[],\"future\":");
      for (guint i = 0; i < levels; i++)
        g_string_append_c (doc, '[');
      for (guint i = 0; i < levels; i++)
        g_string_append_c (doc, ']');
      g_string_append_c (doc, '}');

      snapshot = perfmon_snapshot_new_from_json (doc->str, &error);
      if (levels + 1 <= 128)
        {
          g_assert_no_error (error);
          g_assert_nonnull (snapshot);
        }
      else
        {
          g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
          g_assert_null (snapshot);
        }
      g_clear_object (&snapshot);
      g_clear_error (&error);
    }
}

/* GVariant */

static void
test_variant_roundtrip (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = make_awkward_snapshot ();
  g_autoptr(PerfmonSnapshot) copy = NULL;
  g_autoptr(PerfmonSnapshot) from_bytes = NULL;
  g_autoptr(GVariant) variant = perfmon_snapshot_to_variant (snapshot);
  g_autoptr(GVariant) variant_again = NULL;
  g_autoptr(GVariant) untrusted = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *json = perfmon_snapshot_to_json (snapshot);
  g_autofree char *json_again = NULL;

  g_assert_cmpstr (g_variant_get_type_string (variant), ==, PERFMON_SNAPSHOT_VARIANT_TYPE);
  g_assert_false (g_variant_is_floating (variant));
  g_assert_true (g_variant_is_normal_form (variant));

  copy = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_nonnull (copy);
  assert_snapshots_equal (snapshot, copy);
  g_assert_null (perfmon_group_stats_get_addon_id (perfmon_snapshot_lookup (copy, 1)));
  g_assert_cmpstr (perfmon_group_stats_get_addon_id (perfmon_snapshot_lookup (copy, 4)), ==, "");

  variant_again = perfmon_snapshot_to_variant (copy);
  g_assert_true (g_variant_equal (variant, variant_again));

  json_again = perfmon_snapshot_to_json (copy);
  g_assert_cmpstr (json, ==, json_again);

  /* As received from a peer. */
  untrusted = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE),
                                                            g_variant_get_data_as_bytes (variant),
                                                            FALSE));
  from_bytes = perfmon_snapshot_new_from_variant (untrusted, &error);
  g_assert_no_error (error);
  assert_snapshots_equal (snapshot, from_bytes);

  /* What reads, checks. */
  g_assert_true (perfmon_snapshot_check_variant (variant, &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_snapshot_check_variant (untrusted, &error));
  g_assert_no_error (error);
}

/* The one table of kind names: the public function says what the JSON
 * form writes, for each kind; nothing for a value that is no kind. */
static void
test_kind_names (void)
{
  const guint64 durations[N_DURATIONS] = { 0, };

  for (PerfmonGroupKind kind = PERFMON_GROUP_KIND_THREAD; kind <= PERFMON_GROUP_KIND_COMPARTMENT; kind++)
    {
      g_autoptr(PerfmonSnapshot) snapshot =
        make_snapshot (1, 0, 2, "p", 0, 0, make_group (3, kind, "g", 0, NULL, 0, 0, 0, durations), NULL);
      g_autofree char *json = perfmon_snapshot_to_json (snapshot);
      g_autoptr(JsonNode) root = json_from_string (json, NULL);
      JsonArray *groups = json_object_get_array_member (json_node_get_object (root), "groups");
      JsonObject *group = json_array_get_object_element (groups, 0);

      g_assert_nonnull (perfmon_group_kind_to_string (kind));
      g_assert_cmpstr (perfmon_group_kind_to_string (kind), ==, json_object_get_string_member (group, "kind"));
    }
  g_assert_cmpstr (perfmon_group_kind_to_string (PERFMON_GROUP_KIND_ADDON), ==, "addon");
  g_assert_null (perfmon_group_kind_to_string ((PerfmonGroupKind) (PERFMON_GROUP_KIND_COMPARTMENT + 1)));
  g_assert_null (perfmon_group_kind_to_string ((PerfmonGroupKind) -1));
}

static void
test_variant_values (void)
{
  const guint64 durations[N_DURATIONS] = { 4, 3, 2, 1, 0, };
  g_autoptr(PerfmonSnapshot) snapshot =
    make_snapshot (77, 5, 12, "proc", 3, 4,
                   make_group (6, PERFMON_GROUP_KIND_COMPARTMENT, "c", 8, "ad", 1, 2, 9, durations),
                   NULL);
  g_autoptr(GVariant) variant = perfmon_snapshot_to_variant (snapshot);
  g_autofree char *text = g_variant_print (variant, FALSE);

  g_assert_cmpstr (text, ==,
                   "(1, 77, 5, 12, 'proc', 3, 4, [6], [3], ['c'], [8], ['ad'], [1], [1], [2], [9], "
                   "[4, 3, 2, 1, 0, 0, 0, 0, 0, 0], 0, [], [0])");
}

typedef struct
{
  const char   *type;    /* NULL: PERFMON_SNAPSHOT_VARIANT_TYPE */
  const char   *text;
  PerfmonError  code;
  const char   *path;    /* the message must contain "PATH:" */
  const char   *also;
} MalformedVariant;

/* The header of a snapshot of pid 1 ("p"), then its columns. */
#define V_HEAD "(1, 0, 0, 1, 'p', 0, 0, "
/* One valid group: id 1, the thread group "main". */
#define V_GROUP1 "[1], [0], ['main'], [0], @as [], [0], [10], [0], [5], [3, 2, 1, 0, 0, 0, 0, 0, 0, 0])"
#define V_ZEROS10 "0, 0, 0, 0, 0, 0, 0, 0, 0, 0"

static const MalformedVariant malformed_variants[] = {
  { "(uu)", "(1, 2)", PERFMON_ERROR_INVALID_DATA, "(root)", "got (uu)" },
  /* The array-of-tuples form of earlier versions. */
  { "(uxxustta(tustastttat))",
    "(1, 0, 0, 1, 'p', 0, 0, [(1, 0, 'main', 0, @as [], 0, 0, 0, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0])])",
    PERFMON_ERROR_INVALID_DATA, "(root)", PERFMON_SNAPSHOT_VARIANT_TYPE },
  { "s", "'hello'", PERFMON_ERROR_INVALID_DATA, "(root)", "expected a variant of type" },
  { NULL, "(0, 0, 0, 1, 'p', 0, 0, " V_GROUP1, PERFMON_ERROR_UNSUPPORTED_VERSION, "version", NULL },
  { NULL, "(2, 0, 0, 1, 'p', 0, 0, " V_GROUP1, PERFMON_ERROR_UNSUPPORTED_VERSION, "version", NULL },
  { NULL, "(1, -1, 0, 1, 'p', 0, 0, " V_GROUP1, PERFMON_ERROR_INVALID_DATA, "timestamp", NULL },
  { NULL, "(1, 0, -9223372036854775808, 1, 'p', 0, 0, @at [], @au [], @as [], @at [], @as [], @au [], "
    "@at [], @at [], @at [], @at [])", PERFMON_ERROR_INVALID_DATA, "interval", NULL },
  { NULL, "(1, 0, 0, 0, 'p', 0, 0, " V_GROUP1, PERFMON_ERROR_INVALID_DATA, "pid", NULL },
  { NULL, V_HEAD "[1, 2], [0, 4], ['main', 'x'], [0, 0], @as [], [0, 0], [10, 0], [0, 0], [5, 0], "
    "[3, 2, 1, 0, 0, 0, 0, 0, 0, 0, " V_ZEROS10 "])", PERFMON_ERROR_INVALID_DATA, "groups[1].kind", NULL },
  { NULL, V_HEAD "[2], [4294967295], ['x'], [0], @as [], [0], [0], [0], [0], [" V_ZEROS10 "])",
    PERFMON_ERROR_INVALID_DATA, "groups[0].kind", NULL },
  /* Columns of the wrong length. */
  { NULL, V_HEAD "[2], [1], ['x'], [0], @as [], [0], [0], [0], [0], [0, 0, 0])",
    PERFMON_ERROR_INVALID_DATA, "durations", "expected 10 elements" },
  { NULL, V_HEAD "[2], [1], ['x'], [0], @as [], [0], [0], [0], [0], @at [])",
    PERFMON_ERROR_INVALID_DATA, "durations", "got 0" },
  { NULL, V_HEAD "[2, 3], [1], ['x', 'y'], [0, 0], @as [], [0, 0], [0, 0], [0, 0], [0, 0], "
    "[" V_ZEROS10 ", " V_ZEROS10 "])", PERFMON_ERROR_INVALID_DATA, "kinds", "got 1" },
  { NULL, V_HEAD "[2], [1], ['x'], [0], @as [], [0], [0], [0], @at [], [" V_ZEROS10 "])",
    PERFMON_ERROR_INVALID_DATA, "ticks", "expected 1 elements" },
  /* Histograms. */
  { NULL, V_HEAD "[1, 2], [0, 1], ['main', 'x'], [0, 0], @as [], [0, 0], [10, 0], [0, 0], [5, 9], "
    "[3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0])",
    PERFMON_ERROR_INVALID_DATA, "groups[1].durations", "durations[1]" },
  { NULL, V_HEAD "[2], [1], ['x'], [0], @as [], [0], [0], [0], [2], [3, 0, 0, 0, 0, 0, 0, 0, 0, 0])",
    PERFMON_ERROR_INVALID_DATA, "groups[0].durations", "ticks" },
  { NULL, V_HEAD "[1, 7, 1], [0, 1, 0], ['main', 'x', 'main'], [0, 0, 0], @as [], [0, 0, 0], [0, 0, 0], "
    "[0, 0, 0], [0, 0, 0], [" V_ZEROS10 ", " V_ZEROS10 ", " V_ZEROS10 "])",
    PERFMON_ERROR_INVALID_DATA, "groups[2].id", "groups[0]" },
  /* The add-on table: indexes in range, each entry used, first uses in
   * table order, no entry twice. */
  { NULL, V_HEAD "[2], [2], ['x'], [0], ['a@x'], [2], [0], [0], [0], [" V_ZEROS10 "])",
    PERFMON_ERROR_INVALID_DATA, "groups[0].addon_id", "addon_indexes[0] = 2" },
  { NULL, V_HEAD "[2], [2], ['x'], [0], ['a@x', 'b@x'], [1], [0], [0], [0], [" V_ZEROS10 "])",
    PERFMON_ERROR_INVALID_DATA, "addon_ids", "2 entries, but groups use 1" },
  { NULL, V_HEAD "[2, 3], [2, 2], ['x', 'y'], [0, 0], ['a@x', 'b@x'], [2, 1], [0, 0], [0, 0], [0, 0], "
    "[" V_ZEROS10 ", " V_ZEROS10 "])", PERFMON_ERROR_INVALID_DATA, "groups[0].addon_id", "table order" },
  { NULL, V_HEAD "[2, 3], [2, 2], ['x', 'y'], [0, 0], ['a@x', 'a@x'], [1, 2], [0, 0], [0, 0], [0, 0], "
    "[" V_ZEROS10 ", " V_ZEROS10 "])", PERFMON_ERROR_INVALID_DATA, "addon_ids", "both \"a@x\"" },
};

static void
test_variant_malformed (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (malformed_variants); i++)
    {
      const MalformedVariant *c = &malformed_variants[i];
      /* The texts are of the type without the wall time, which reads too. */
      const char *type = c->type != NULL ? c->type : "(uxxusttatauasatasauatatatat)";
      g_autofree char *expected = g_strconcat (c->path, ":", NULL);
      g_autoptr(PerfmonSnapshot) snapshot = NULL;
      g_autoptr(GVariant) variant = NULL;
      g_autoptr(GError) error = NULL;

      g_test_message ("case %u: %s %s", i, type, c->text);

      variant = g_variant_parse (G_VARIANT_TYPE (type), c->text, NULL, NULL, &error);
      g_assert_no_error (error);
      g_variant_ref_sink (variant);

      snapshot = perfmon_snapshot_new_from_variant (variant, &error);
      g_assert_null (snapshot);
      g_assert_error (error, PERFMON_ERROR, (gint) c->code);
      g_test_message ("  -> %s", error->message);
      g_assert_nonnull (strstr (error->message, expected));
      if (c->also != NULL)
        g_assert_nonnull (strstr (error->message, c->also));

      /* The check without decoding refuses it the same way. */
      {
        g_autoptr(GError) check_error = NULL;

        g_assert_false (perfmon_snapshot_check_variant (variant, &check_error));
        g_assert_error (check_error, PERFMON_ERROR, (gint) c->code);
        g_assert_cmpstr (check_error->message, ==, error->message);
      }
    }
}

static void
check_untrusted_bytes (GBytes *bytes)
{
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(GError) error = NULL;

  variant = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE),
                                                          bytes, FALSE));
  snapshot = perfmon_snapshot_new_from_variant (variant, &error);

  /* The check without decoding agrees, error and all. */
  {
    g_autoptr(GError) check_error = NULL;
    gboolean checked = perfmon_snapshot_check_variant (variant, &check_error);

    g_assert_cmpint (checked, ==, snapshot != NULL);
    if (!checked)
      g_assert_cmpstr (check_error->message, ==, error->message);
  }

  if (snapshot == NULL)
    {
      g_assert_nonnull (error);
      g_assert_true (error->domain == PERFMON_ERROR);
      g_assert_true (error->code == PERFMON_ERROR_INVALID_DATA ||
                     error->code == PERFMON_ERROR_UNSUPPORTED_VERSION);
    }
  else
    {
      g_autoptr(GVariant) back = perfmon_snapshot_to_variant (snapshot);

      g_assert_no_error (error);
      /* Malformed parts of untrusted data read as default values: the
       * snapshot says exactly what GVariant reads. */
      g_assert_true (g_variant_equal (variant, back));
    }
}

static void
test_variant_garbage (void)
{
  g_autoptr(PerfmonSnapshot) snapshot = make_awkward_snapshot ();
  g_autoptr(GVariant) valid = perfmon_snapshot_to_variant (snapshot);
  gsize size = g_variant_get_size (valid);
  const guint8 *data = g_variant_get_data (valid);

  /* Every truncation of a valid snapshot. */
  for (gsize length = 0; length <= size; length++)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (data, length);

      check_untrusted_bytes (bytes);
    }

  /* Random bytes, and a valid snapshot with random bytes changed. */
  for (guint i = 0; i < 2000; i++)
    {
      g_autoptr(GBytes) bytes = NULL;
      gsize length = g_test_rand_int_range (0, 300);
      guint8 *garbage = g_malloc (length + 1);

      for (gsize j = 0; j < length; j++)
        garbage[j] = g_test_rand_int_range (0, 256);
      bytes = g_bytes_new_take (garbage, length);
      check_untrusted_bytes (bytes);
    }

  for (guint i = 0; i < 2000; i++)
    {
      g_autoptr(GBytes) bytes = NULL;
      guint8 *mutated = g_memdup2 (data, size);
      guint n_changes = g_test_rand_int_range (1, 4);

      for (guint j = 0; j < n_changes; j++)
        mutated[g_test_rand_int_range (0, (gint32) size)] = g_test_rand_int_range (0, 256);
      bytes = g_bytes_new_take (mutated, size);
      check_untrusted_bytes (bytes);
    }
}

/* Builder */

static void
test_builder (void)
{
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  g_autoptr(PerfmonSnapshot) built = NULL;
  g_autoptr(PerfmonSnapshot) expected = NULL;
  g_autoptr(PerfmonSnapshot) again = NULL;
  g_autoptr(GError) error = NULL;

  perfmon_snapshot_builder_set_times (builder, 5000000, 1767225600000000, 0);
  perfmon_snapshot_builder_set_process (builder, 4242, "gedit", 1500000, 250000);
  /* Out of id order, with an id above G_MAXINT64: kept as given. */
  perfmon_snapshot_builder_add_group (builder, G_MAXUINT64, PERFMON_GROUP_KIND_ADDON, "Ad blocker", 0,
                                      "adblock@example.org", 1500, 250, 42, durations_b, N_DURATIONS);
  perfmon_snapshot_builder_add_group (builder, 1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                      1200000, 30, 5000, durations_a, N_DURATIONS);
  built = perfmon_snapshot_builder_end (builder, &error);
  g_assert_no_error (error);

  expected = make_snapshot (5000000, 0, 4242, "gedit", 1500000, 250000,
                            make_group (G_MAXUINT64, PERFMON_GROUP_KIND_ADDON, "Ad blocker", 0,
                                        "adblock@example.org", 1500, 250, 42, durations_b),
                            make_group (1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                        1200000, 30, 5000, durations_a),
                            NULL);
  assert_snapshots_equal (built, expected);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (built), ==, 1767225600000000);
  g_assert_true (perfmon_snapshot_lookup (built, G_MAXUINT64) ==
                 g_ptr_array_index (perfmon_snapshot_get_groups (built), 0));
  g_assert_true (perfmon_snapshot_lookup (built, 1) ==
                 g_ptr_array_index (perfmon_snapshot_get_groups (built), 1));
  g_assert_null (perfmon_snapshot_lookup (built, 2));

  /* end() leaves the builder empty, ready for the next snapshot. */
  perfmon_snapshot_builder_set_process (builder, 7, NULL, 0, 0);
  again = perfmon_snapshot_builder_end (builder, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_snapshot_get_groups (again)->len, ==, 0);
  g_assert_cmpint (perfmon_snapshot_get_timestamp (again), ==, 0);
  g_assert_cmpstr (perfmon_snapshot_get_process_name (again), ==, "");
}

static void
assert_module (PerfmonSnapshot *snapshot,
               const char      *name,
               const char      *path,
               guint64          base,
               const char      *build_id)
{
  const char *got_path = NULL, *got_build_id = NULL;
  guint64 got_base = 0;

  g_assert_true (perfmon_snapshot_lookup_module (snapshot, name, &got_path, &got_base, &got_build_id));
  g_assert_cmpstr (got_path, ==, path);
  g_assert_cmpuint (got_base, ==, base);
  g_assert_cmpstr (got_build_id, ==, build_id);
}

/* The modules that "module+0x…" group names refer to: recorded by the
 * builder, kept by the JSON and GVariant forms and by differences, checked
 * strictly by every reader; snapshots without them (before 0.3) read. */
static void
test_modules (void)
{
  const guint64 zeros[N_DURATIONS] = { 0, };
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  g_autoptr(PerfmonSnapshot) built = NULL;
  g_autoptr(PerfmonSnapshot) from_json = NULL;
  g_autoptr(PerfmonSnapshot) from_variant = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(PerfmonSnapshot) bare = NULL;
  g_autoptr(PerfmonSnapshot) old = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(GVariant) old_variant = NULL;
  g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL;
  g_autofree char *bare_json = NULL;
  static const struct {
    const char *name;
    const char *path;
    const char *build_id;
    const char *field;
  } bad[] = {
    { "", "/usr/bin/prog", "", "modules[0].name" },
    { "a/b", "/usr/bin/prog", "", "modules[0].name" },
    { "prog", "usr/bin/prog", "", "modules[0].path" },
    { "prog", "/usr/bin/prog", "ABCD", "modules[0].build_id" },
    { "prog", "/usr/bin/prog", "abc", "modules[0].build_id" },
    { "prog", "/usr/bin/prog", "xyz0", "modules[0].build_id" },
  };

  perfmon_snapshot_builder_set_times (builder, 5000000, 0, 0);
  perfmon_snapshot_builder_set_process (builder, 4242, "prog", 0, 0);
  perfmon_snapshot_builder_add_group (builder, 1, PERFMON_GROUP_KIND_COMPARTMENT,
                                      "GTimeoutSource (prog+0x1270)", 0, NULL, 0, 0, 0, zeros, N_DURATIONS);
  perfmon_snapshot_builder_add_module (builder, "prog", "/usr/bin/prog", 0x5555000, "0123456789abcdef");
  perfmon_snapshot_builder_add_module (builder, "libgio-2.0.so.0", "/usr/lib/libgio-2.0.so.0", 0, "");
  built = perfmon_snapshot_builder_end (builder, &error);
  g_assert_no_error (error);
  assert_module (built, "prog", "/usr/bin/prog", 0x5555000, "0123456789abcdef");
  assert_module (built, "libgio-2.0.so.0", "/usr/lib/libgio-2.0.so.0", 0, "");
  g_assert_false (perfmon_snapshot_lookup_module (built, "other", NULL, NULL, NULL));

  json = perfmon_snapshot_to_json (built);
  g_assert_nonnull (strstr (json, ",\"modules\":[{\"name\":\"prog\",\"path\":\"/usr/bin/prog\",\"base\":89477120,"
                                  "\"build_id\":\"0123456789abcdef\"},"));
  from_json = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  assert_module (from_json, "prog", "/usr/bin/prog", 0x5555000, "0123456789abcdef");
  assert_module (from_json, "libgio-2.0.so.0", "/usr/lib/libgio-2.0.so.0", 0, "");

  variant = perfmon_snapshot_to_variant (built);
  from_variant = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  assert_module (from_variant, "prog", "/usr/bin/prog", 0x5555000, "0123456789abcdef");

  /* A difference has the newer snapshot's names, and so its modules. */
  delta = perfmon_snapshot_subtract (from_variant, from_json, &error);
  g_assert_no_error (error);
  assert_module (delta, "prog", "/usr/bin/prog", 0x5555000, "0123456789abcdef");

  /* Without modules: no member in JSON, as before 0.3, and the 0.2
   * variant (without the last two members, the modules and the sampled CPU
   * times) reads. */
  bare = make_snapshot (1, 0, 7, "p", 0, 0, NULL);
  bare_json = perfmon_snapshot_to_json (bare);
  g_assert_null (strstr (bare_json, "modules"));
  for (gsize i = 0; i + 2 < g_variant_n_children (variant); i++)
    g_ptr_array_add (children, g_variant_get_child_value (variant, i));
  old_variant = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
  old = perfmon_snapshot_new_from_variant (old_variant, &error);
  g_assert_no_error (error);
  g_assert_false (perfmon_snapshot_lookup_module (old, "prog", NULL, NULL, NULL));
  g_assert_cmpuint (perfmon_snapshot_get_groups (old)->len, ==, 1);

  /* Each reader checks them the same way, and names the field. */
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(PerfmonSnapshot) rejected = NULL;

      perfmon_snapshot_builder_set_process (builder, 7, NULL, 0, 0);
      perfmon_snapshot_builder_add_module (builder, bad[i].name, bad[i].path, 0, bad[i].build_id);
      rejected = perfmon_snapshot_builder_end (builder, &error);
      g_assert_null (rejected);
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
      g_assert_nonnull (strstr (error->message, bad[i].field));
      g_clear_error (&error);
    }
  {
    g_autoptr(PerfmonSnapshot) rejected = NULL;
    g_autoptr(GString) twice = g_string_new (json);

    /* A module named twice. */
    g_string_replace (twice, "\"name\":\"libgio-2.0.so.0\"", "\"name\":\"prog\"", 1);
    rejected = perfmon_snapshot_new_from_json (twice->str, &error);
    g_assert_null (rejected);
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
    g_assert_nonnull (strstr (error->message, "modules[1].name"));
    g_clear_error (&error);
  }
  {
    g_autoptr(PerfmonSnapshot) rejected = NULL;
    g_autoptr(GString) wrong = g_string_new (json);

    g_string_replace (wrong, "\"base\":89477120", "\"base\":-1", 1);
    rejected = perfmon_snapshot_new_from_json (wrong->str, &error);
    g_assert_null (rejected);
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
    g_assert_nonnull (strstr (error->message, "modules[0].base"));
  }
}

static void
test_builder_invalid (void)
{
  const guint64 increasing[N_DURATIONS] = { 1, 2, 0, };
  const struct {
    guint64          id2;
    PerfmonGroupKind kind2;
    const char      *name2;
    const guint64   *durations2;
    gsize            n_durations2;
    guint            pid;
    gint64           timestamp;
    const char      *message;
  } cases[] = {
    { 2, PERFMON_GROUP_KIND_WINDOW, "w", durations_b, N_DURATIONS, 1, 1, "groups[1].id: duplicate id 2*" },
    { 3, PERFMON_GROUP_KIND_WINDOW, "w", increasing, N_DURATIONS, 1, 1, "groups[1].durations: durations[1] = 2*" },
    { 3, PERFMON_GROUP_KIND_WINDOW, "w", durations_b, 3, 1, 1, "groups[1].durations: expected*10*got 3*" },
    { 3, (PerfmonGroupKind) 9, "w", durations_b, N_DURATIONS, 1, 1, "groups[1].kind: expected an integer in [0, 3], got 9" },
    { 3, PERFMON_GROUP_KIND_WINDOW, "\xff", durations_b, N_DURATIONS, 1, 1, "groups[1].name: expected a UTF-8 string" },
    { 3, PERFMON_GROUP_KIND_WINDOW, "w", durations_b, N_DURATIONS, 0, 1, "pid: expected an integer in [1, *], got 0" },
    { 3, PERFMON_GROUP_KIND_WINDOW, "w", durations_b, N_DURATIONS, 1, -1, "timestamp: expected a non-negative integer, got -1" },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
      g_autoptr(PerfmonSnapshot) snapshot = NULL;
      g_autoptr(PerfmonSnapshot) next = NULL;
      g_autoptr(GError) error = NULL;

      g_test_message ("case %u: %s", c, cases[c].message);
      perfmon_snapshot_builder_set_times (builder, cases[c].timestamp, 0, 0);
      perfmon_snapshot_builder_set_process (builder, cases[c].pid, "p", 0, 0);
      perfmon_snapshot_builder_add_group (builder, 2, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL,
                                          0, 0, 10, durations_b, N_DURATIONS);
      perfmon_snapshot_builder_add_group (builder, cases[c].id2, cases[c].kind2, cases[c].name2, 5, NULL,
                                          0, 0, 10, cases[c].durations2, cases[c].n_durations2);
      snapshot = perfmon_snapshot_builder_end (builder, &error);
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
      g_assert_null (snapshot);
      g_assert_true (g_pattern_match_simple (cases[c].message, error->message));

      /* A failed end() empties the builder too. */
      g_clear_error (&error);
      perfmon_snapshot_builder_set_process (builder, 1, "p", 0, 0);
      next = perfmon_snapshot_builder_end (builder, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (perfmon_snapshot_get_groups (next)->len, ==, 0);
    }
}

/* Differences are the same whether the groups come in id order (a merge
 * walk) or not (lookups). */
static void
test_subtract_any_order (void)
{
  const guint64 ids_older[] = { 2, 3, 5, 8 };
  const guint64 ids_newer[] = { 1, 2, 5, 8, 9 };
  const guint64 ids_newer_shuffled[] = { 9, 5, 1, 8, 2 };
  g_autoptr(GPtrArray) older_groups = g_ptr_array_new ();
  g_autoptr(GPtrArray) sorted_groups = g_ptr_array_new ();
  g_autoptr(GPtrArray) shuffled_groups = g_ptr_array_new ();
  g_autoptr(PerfmonSnapshot) older = NULL, sorted = NULL, shuffled = NULL;
  g_autoptr(PerfmonSnapshot) delta_sorted = NULL, delta_shuffled = NULL;
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (ids_older); i++)
    g_ptr_array_add (older_groups, make_group (ids_older[i], PERFMON_GROUP_KIND_WINDOW, "w", ids_older[i],
                                               NULL, 10 * ids_older[i], 0, 10, durations_b));
  for (guint i = 0; i < G_N_ELEMENTS (ids_newer); i++)
    g_ptr_array_add (sorted_groups, make_group (ids_newer[i], PERFMON_GROUP_KIND_WINDOW, "w", ids_newer[i],
                                                NULL, 100 * ids_newer[i], 0, 200, durations_a));
  for (guint i = 0; i < G_N_ELEMENTS (ids_newer_shuffled); i++)
    g_ptr_array_add (shuffled_groups, make_group (ids_newer_shuffled[i], PERFMON_GROUP_KIND_WINDOW, "w",
                                                  ids_newer_shuffled[i], NULL, 100 * ids_newer_shuffled[i],
                                                  0, 200, durations_a));

  older = _perfmon_snapshot_new (1, 0, 0, 7, "p", 0, 0, g_ptr_array_ref (older_groups));
  sorted = _perfmon_snapshot_new (2, 0, 0, 7, "p", 0, 0, g_ptr_array_ref (sorted_groups));
  shuffled = _perfmon_snapshot_new (2, 0, 0, 7, "p", 0, 0, g_ptr_array_ref (shuffled_groups));

  delta_sorted = perfmon_snapshot_subtract (sorted, older, &error);
  g_assert_no_error (error);
  delta_shuffled = perfmon_snapshot_subtract (shuffled, older, &error);
  g_assert_no_error (error);

  for (guint i = 0; i < G_N_ELEMENTS (ids_newer); i++)
    {
      guint64 id = ids_newer[i];
      PerfmonGroupStats *a = perfmon_snapshot_lookup (delta_sorted, id);
      PerfmonGroupStats *b = perfmon_snapshot_lookup (delta_shuffled, id);
      gboolean in_older = id == 2 || id == 5 || id == 8;

      g_assert_nonnull (a);
      g_assert_nonnull (b);
      assert_groups_equal (a, b);
      g_assert_cmpuint (perfmon_group_stats_get_cpu_time (a), ==, 100 * id - (in_older ? 10 * id : 0));
      g_assert_cmpuint (perfmon_group_stats_get_ticks (a), ==, in_older ? 190 : 200);
    }
  g_assert_null (perfmon_snapshot_lookup (delta_sorted, 3));
  g_assert_null (perfmon_snapshot_lookup (delta_shuffled, 3));
}

/* An add-on group's CPU time charged by sampling (issue 24, point 4): a
 * figure of its own in every form, apart from the exact cpu_time, and only
 * add-on groups have one. */
static PerfmonSnapshot *
make_sampled_snapshot (gint64    timestamp,
                       guint64   sampled,
                       gboolean  on_thread_group,
                       GError  **error)
{
  g_autoptr(PerfmonSnapshotBuilder) builder = perfmon_snapshot_builder_new ();
  const guint64 durations[PERFMON_N_DURATIONS] = { 0 };

  perfmon_snapshot_builder_set_times (builder, timestamp, 0, 0);
  perfmon_snapshot_builder_set_process (builder, 7, "shell", 0, 0);
  perfmon_snapshot_builder_add_group (builder, 1, PERFMON_GROUP_KIND_THREAD, "main", 0, NULL, 50, 0, 1,
                                      durations, PERFMON_N_DURATIONS);
  if (on_thread_group)
    perfmon_snapshot_builder_set_sampled_cpu_time (builder, sampled);
  perfmon_snapshot_builder_add_group (builder, 2, PERFMON_GROUP_KIND_ADDON, "Promise Burner", 0,
                                      "promise@test", 10, 0, 1, durations, PERFMON_N_DURATIONS);
  if (!on_thread_group)
    perfmon_snapshot_builder_set_sampled_cpu_time (builder, sampled);
  return perfmon_snapshot_builder_end (builder, error);
}

static void
test_sampled_cpu_time (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonSnapshot) older = make_sampled_snapshot (1000, 1000, FALSE, &error);
  g_autoptr(PerfmonSnapshot) snapshot = make_sampled_snapshot (2000, 31000, FALSE, &error);
  g_autoptr(PerfmonSnapshot) from_json = NULL;
  g_autoptr(PerfmonSnapshot) from_variant = NULL;
  g_autoptr(PerfmonSnapshot) from_old_variant = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(PerfmonSnapshot) bad = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(GVariant) old_variant = NULL;
  g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
  g_autofree char *json = NULL;
  g_autofree char *bad_json = NULL;

  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (snapshot, 2)), ==, 31000);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (perfmon_snapshot_lookup (snapshot, 2)), ==, 10);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (snapshot, 1)), ==, 0);

  /* JSON: a member of the add-on group only. */
  json = perfmon_snapshot_to_json (snapshot);
  g_assert_nonnull (strstr (json, "\"sampled_cpu_time\":31000"));
  g_assert_null (strstr (strstr (json, "\"sampled_cpu_time\"") + 1, "\"sampled_cpu_time\""));
  from_json = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  assert_snapshots_equal (snapshot, from_json);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (from_json, 2)), ==, 31000);

  /* The variant: its last column. */
  variant = perfmon_snapshot_to_variant (snapshot);
  from_variant = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (from_variant, 2)), ==, 31000);

  /* A process built before it sends no column: none sampled. */
  for (gsize i = 0; i + 1 < g_variant_n_children (variant); i++)
    g_ptr_array_add (children, g_variant_get_child_value (variant, i));
  old_variant = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
  g_assert_cmpstr (g_variant_get_type_string (old_variant), ==, "(uxxusttatauasatasauatatatatxa(ssts))");
  from_old_variant = perfmon_snapshot_new_from_variant (old_variant, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (from_old_variant, 2)), ==, 0);
  g_assert_cmpuint (perfmon_group_stats_get_cpu_time (perfmon_snapshot_lookup (from_old_variant, 2)), ==, 10);

  /* Deltas. */
  delta = perfmon_snapshot_subtract (snapshot, older, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_group_stats_get_sampled_cpu_time (perfmon_snapshot_lookup (delta, 2)), ==, 30000);

  /* Only an add-on group has any: named in the error. */
  bad = make_sampled_snapshot (1000, 5, TRUE, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "groups[0].sampled_cpu_time"));
  g_assert_null (bad);
  g_clear_error (&error);
  bad_json = g_strdup (json);
  {
    /* The thread group's "blocked_time":0 gains a sampled member. */
    g_autoptr(GString) text = g_string_new (bad_json);

    g_string_replace (text, "\"blocked_time\":0,", "\"blocked_time\":0,\"sampled_cpu_time\":3,", 1);
    bad = perfmon_snapshot_new_from_json (text->str, &error);
  }
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "groups[0].sampled_cpu_time"));
  g_assert_null (bad);
  g_clear_error (&error);

  /* The variant's reader and its checker apply the same rule: sampled CPU
   * time in the thread group's row of the last column. */
  {
    g_autoptr(GPtrArray) members = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
    g_autoptr(GVariant) bad_variant = NULL;
    const guint64 sampled[] = { 3, 31000 };
    gsize n = g_variant_n_children (variant);

    for (gsize i = 0; i + 1 < n; i++)
      g_ptr_array_add (members, g_variant_get_child_value (variant, i));
    g_ptr_array_add (members, g_variant_ref_sink (g_variant_new_fixed_array (G_VARIANT_TYPE_UINT64, sampled,
                                                                             G_N_ELEMENTS (sampled),
                                                                             sizeof (guint64))));
    bad_variant = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) members->pdata, members->len));
    g_assert_false (perfmon_snapshot_check_variant (bad_variant, &error));
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
    g_assert_nonnull (strstr (error->message, "groups[0].sampled_cpu_time"));
    g_clear_error (&error);
    bad = perfmon_snapshot_new_from_variant (bad_variant, &error);
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
    g_assert_nonnull (strstr (error->message, "groups[0].sampled_cpu_time"));
    g_assert_null (bad);
  }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/group-stats/getters", test_group_stats);
  g_test_add_func ("/group-stats/no-addon", test_group_stats_no_addon);
  g_test_add_func ("/snapshot/getters", test_getters);
  g_test_add_func ("/snapshot/kind-names", test_kind_names);
  g_test_add_func ("/snapshot/null-process-name", test_null_process_name);
  g_test_add_func ("/snapshot/invalid-private-data", test_invalid_private_data);
  g_test_add_func ("/snapshot/lookup", test_lookup);
  g_test_add_func ("/snapshot/builder", test_builder);
  g_test_add_func ("/snapshot/builder/invalid", test_builder_invalid);
  g_test_add_func ("/snapshot/modules", test_modules);
  g_test_add_func ("/snapshot/subtract", test_subtract);
  g_test_add_func ("/snapshot/subtract/order", test_subtract_order);
  g_test_add_func ("/snapshot/subtract/any-order", test_subtract_any_order);
  g_test_add_func ("/snapshot/subtract/pid", test_subtract_pid);
  g_test_add_func ("/snapshot/subtract/backwards", test_subtract_backwards);
  g_test_add_func ("/snapshot/subtract/process-time-backwards", test_subtract_process_time_backwards);
  g_test_add_func ("/snapshot/subtract/inconsistent", test_subtract_inconsistent);
  g_test_add_func ("/snapshot/json/format", test_json_format);
  g_test_add_func ("/snapshot/json/roundtrip", test_json_roundtrip);
  g_test_add_func ("/snapshot/json/lenient", test_json_lenient);
  g_test_add_func ("/snapshot/json/malformed", test_json_malformed);
  g_test_add_func ("/snapshot/json/deep-nesting", test_json_deep_nesting);
  g_test_add_func ("/snapshot/variant/roundtrip", test_variant_roundtrip);
  g_test_add_func ("/snapshot/variant/values", test_variant_values);
  g_test_add_func ("/snapshot/variant/malformed", test_variant_malformed);
  g_test_add_func ("/snapshot/variant/garbage", test_variant_garbage);
  g_test_add_func ("/snapshot/sampled-cpu-time", test_sampled_cpu_time);

  return g_test_run ();
}
