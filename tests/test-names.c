/* test-names.c: names a person can read (src/support/perfmon-names.c),
 * as the perfmon tool and perfmond's /api/trace both write them
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include "perfmon.h"
#include "perfmon-names.h"

G_GNUC_NO_INLINE __attribute__ ((used)) static int
names_test_static_callback (int x)
{
  static volatile int calls;

  calls += x;
  return calls;
}

static char *self_path;

static gboolean
self_module (gpointer     data,
             const char  *module,
             const char **path,
             const char **build_id)
{
  if (!g_str_equal (module, "test-names"))
    return FALSE;
  *path = self_path;
  *build_id = NULL;
  return TRUE;
}

/* "module+0xOFF" of this program's static function (not exported: only
 * the symbol table names it). */
static char *
static_callback_name (void)
{
  Dl_info info;

  g_assert_true (dladdr ((void *) names_test_static_callback, &info) != 0);
  g_free (self_path);
  /* dli_fname of the program itself is as it was started. */
  self_path = g_file_read_link ("/proc/self/exe", NULL);
  g_assert_nonnull (self_path);
  return g_strdup_printf ("GIdleSource (test-names+0x%" G_GINT64_MODIFIER "x)",
                          (guint64) ((gsize) names_test_static_callback - (gsize) info.dli_fbase));
}

static void
test_names (void)
{
  g_autoptr(PerfmonSymbolizer) symbolizer = perfmon_symbolizer_new ();
  g_autofree char *name = static_callback_name ();
  g_autofree char *readable = NULL;
  g_autofree char *expected = NULL;
  g_autofree char *late = NULL;
  g_autofree char *plain = NULL;

  names_test_static_callback (1);
  /* Named by the module the lookup gives. */
  readable = perfmon_names_readable (symbolizer, name, self_module, NULL, NULL, 0, 0);
  expected = g_strdup_printf ("%.*s (names_test_static_callback))", (int) strlen (name) - 1, name);
  g_assert_cmpstr (readable, ==, expected);
  /* Past the deadline, as written. */
  late = perfmon_names_readable (symbolizer, name, self_module, NULL, NULL, 0, 1);
  g_assert_cmpstr (late, ==, name);
  /* No "module+0x…": as is. */
  plain = perfmon_names_readable (symbolizer, "on_tick", self_module, NULL, NULL, 0, 0);
  g_assert_cmpstr (plain, ==, "on_tick");
  g_clear_pointer (&self_path, g_free);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/names/readable", test_names);
  return g_test_run ();
}
