/* test-snapshot-wall-time.c: snapshots say when they were taken in
 * wall-clock time too
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"

static PerfmonSnapshot *
take_snapshot (gint64 *before,
               gint64 *after)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  PerfmonSnapshot *snapshot;

  *before = g_get_real_time ();
  snapshot = perfmon_monitor_snapshot (monitor);
  *after = g_get_real_time ();
  return snapshot;
}

static void
test_taken_now (void)
{
  gint64 before, after;
  g_autoptr(PerfmonSnapshot) snapshot = take_snapshot (&before, &after);
  gint64 wall_time = 0;

  g_assert_cmpint (perfmon_snapshot_get_wall_time (snapshot), >=, before);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (snapshot), <=, after);
  g_object_get (snapshot, "wall-time", &wall_time, NULL);
  g_assert_cmpint (wall_time, ==, perfmon_snapshot_get_wall_time (snapshot));
}

static void
test_json (void)
{
  gint64 before, after;
  g_autoptr(PerfmonSnapshot) snapshot = take_snapshot (&before, &after);
  g_autofree char *json = perfmon_snapshot_to_json (snapshot);
  g_autoptr(PerfmonSnapshot) copy = NULL;
  g_autoptr(PerfmonSnapshot) old = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *member = g_strdup_printf (",\"wall_time\":%" G_GINT64_FORMAT,
                                             perfmon_snapshot_get_wall_time (snapshot));
  g_autoptr(GString) without = g_string_new (json);
  g_autoptr(GString) negative = g_string_new (json);

  g_assert_nonnull (strstr (json, member));
  copy = perfmon_snapshot_new_from_json (json, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (copy), ==, perfmon_snapshot_get_wall_time (snapshot));

  /* A file written before wall times: 0, not known. */
  g_string_replace (without, member, "", 1);
  old = perfmon_snapshot_new_from_json (without->str, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (old), ==, 0);

  g_string_replace (negative, member, ",\"wall_time\":-5", 1);
  g_assert_null (perfmon_snapshot_new_from_json (negative->str, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "wall_time"));
}

static void
test_variant (void)
{
  gint64 before, after;
  g_autoptr(PerfmonSnapshot) snapshot = take_snapshot (&before, &after);
  g_autoptr(GVariant) variant = perfmon_snapshot_to_variant (snapshot);
  g_autoptr(PerfmonSnapshot) copy = NULL;
  g_autoptr(PerfmonSnapshot) old = NULL;
  g_autoptr(GVariant) old_variant = NULL;
  g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
  g_autoptr(GError) error = NULL;

  g_assert_cmpstr (g_variant_get_type_string (variant), ==, PERFMON_SNAPSHOT_VARIANT_TYPE);
  copy = perfmon_snapshot_new_from_variant (variant, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (copy), ==, perfmon_snapshot_get_wall_time (snapshot));

  /* The form without the wall time, the modules and the sampled CPU
   * times (the last three members), as processes built before them send
   * it, still reads, with 0. */
  for (gsize i = 0; i + 3 < g_variant_n_children (variant); i++)
    g_ptr_array_add (children, g_variant_get_child_value (variant, i));
  old_variant = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
  old = perfmon_snapshot_new_from_variant (old_variant, &error);
  g_assert_no_error (error);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (old), ==, 0);
}

static void
test_subtract (void)
{
  gint64 before, after;
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonSnapshot) older = perfmon_monitor_snapshot (monitor);
  g_autoptr(PerfmonSnapshot) newer = NULL;
  g_autoptr(PerfmonSnapshot) delta = NULL;
  g_autoptr(GError) error = NULL;

  before = g_get_real_time ();
  newer = perfmon_monitor_snapshot (monitor);
  after = g_get_real_time ();
  delta = perfmon_snapshot_subtract (newer, older, &error);
  g_assert_no_error (error);
  /* A difference is dated by its newer end. */
  g_assert_cmpint (perfmon_snapshot_get_wall_time (delta), ==, perfmon_snapshot_get_wall_time (newer));
  g_assert_cmpint (perfmon_snapshot_get_wall_time (delta), >=, before);
  g_assert_cmpint (perfmon_snapshot_get_wall_time (delta), <=, after);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/snapshot/wall-time/taken-now", test_taken_now);
  g_test_add_func ("/snapshot/wall-time/json", test_json);
  g_test_add_func ("/snapshot/wall-time/variant", test_variant);
  g_test_add_func ("/snapshot/wall-time/subtract", test_subtract);
  return g_test_run ();
}
