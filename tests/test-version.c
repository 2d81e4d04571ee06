/* test-version.c: the version macros follow meson's project version
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon.h"

static void
test_version_macros (void)
{
  g_autofree char *from_parts = g_strdup_printf ("%d.%d.%d", PERFMON_MAJOR_VERSION,
                                                 PERFMON_MINOR_VERSION, PERFMON_MICRO_VERSION);

  /* meson.build's project version, as config.h has it. */
  g_assert_cmpstr (PERFMON_VERSION_S, ==, PACKAGE_VERSION);
  g_assert_cmpstr (from_parts, ==, PACKAGE_VERSION);
  g_assert_cmpint (PERFMON_VERSION_HEX, ==,
                   PERFMON_ENCODE_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION,
                                           PERFMON_MICRO_VERSION));
}

static void
test_check_version (void)
{
  g_assert_true (PERFMON_CHECK_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION,
                                        PERFMON_MICRO_VERSION));
  g_assert_true (PERFMON_CHECK_VERSION (0, 0, 0));
  g_assert_false (PERFMON_CHECK_VERSION (PERFMON_MAJOR_VERSION + 1, 0, 0));
  g_assert_false (PERFMON_CHECK_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION + 1, 0));
  g_assert_false (PERFMON_CHECK_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION,
                                         PERFMON_MICRO_VERSION + 1));
  if (PERFMON_MINOR_VERSION > 0)
    g_assert_true (PERFMON_CHECK_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION - 1, 99));
  /* Usable by the preprocessor, as programs use it. */
#if !PERFMON_CHECK_VERSION (0, 1, 0)
  g_assert_not_reached ();
#endif
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/version/macros", test_version_macros);
  g_test_add_func ("/version/check", test_check_version);
  return g_test_run ();
}
