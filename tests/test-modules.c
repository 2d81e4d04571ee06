/* test-modules.c: the loaded objects of the process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-modules-private.h"

/* Exported from the test program (it is linked with -rdynamic) so that
 * dladdr() can name it. */
void perfmon_test_exported_function (void);

G_GNUC_NO_INLINE __attribute__ ((used)) void
perfmon_test_exported_function (void)
{
  static volatile int calls;

  calls++;
}

static guint64
function_pc (void (*function) (void))
{
  return (guint64) (gsize) function;
}

static gboolean
is_hex (const char *string,
        gboolean    upper)
{
  for (const char *p = string; *p != '\0'; p++)
    {
      if (!g_ascii_isxdigit (*p))
        return FALSE;
      if (g_ascii_isalpha (*p) && (upper ? !g_ascii_isupper (*p) : !g_ascii_islower (*p)))
        return FALSE;
    }
  return TRUE;
}

static void
assert_breakpad_id (const guint8 *build_id,
                    gsize         length,
                    const char   *expected)
{
  g_autofree char *id = _perfmon_breakpad_id_from_build_id (build_id, length);

  g_assert_cmpstr (id, ==, expected);
  g_assert_cmpuint (strlen (id), ==, PERFMON_BREAKPAD_ID_LENGTH);
}

static void
test_breakpad_id (void)
{
  /* Build id b5381a457906d279073822a5ceb24c4bfef94ddb (20 bytes). The
   * first 16 bytes as a GUID:
   *   b5 38 1a 45 | 79 06 | d2 79 | 07 38 22 a5 ce b2 4c 4b
   * swapped:
   *   45 1a 38 b5 | 06 79 | 79 d2 | 07 38 22 a5 ce b2 4c 4b
   * the last 4 bytes (fe f9 4d db) are dropped, the age "0" appended. */
  static const guint8 full[] = {
    0xb5, 0x38, 0x1a, 0x45, 0x79, 0x06, 0xd2, 0x79, 0x07, 0x38,
    0x22, 0xa5, 0xce, 0xb2, 0x4c, 0x4b, 0xfe, 0xf9, 0x4d, 0xdb,
  };
  /* 5 bytes, zero-padded to 01 02 03 04 | 05 00 | 00 00 | 00 x 8:
   * 04 03 02 01 | 00 05 | 00 00 | 00 x 8. */
  static const guint8 short_id[] = { 0x01, 0x02, 0x03, 0x04, 0x05 };
  /* Exactly 16 bytes 00 11 22 ... ff. */
  static const guint8 exact[] = {
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
  };

  assert_breakpad_id (full, sizeof full, "451A38B5067979D2073822A5CEB24C4B0");
  assert_breakpad_id (short_id, sizeof short_id, "040302010005000000000000000000000");
  assert_breakpad_id (exact, sizeof exact, "33221100554477668899AABBCCDDEEFF0");
  assert_breakpad_id (NULL, 0, "000000000000000000000000000000000");
}

/* The index of the first module whose debug name starts with @prefix. */
static gboolean
find_module (PerfmonModules *modules,
             const char     *prefix,
             guint          *index_out)
{
  for (guint i = 0; i < _perfmon_modules_get_n (modules); i++)
    if (g_str_has_prefix (_perfmon_modules_get_debug_name (modules, i), prefix))
      {
        *index_out = i;
        return TRUE;
      }
  return FALSE;
}

static void
test_self (void)
{
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *basename = NULL;
  guint64 pc = function_pc (perfmon_test_exported_function);
  guint index = G_MAXUINT;
  guint64 offset = G_MAXUINT64;

  g_assert_nonnull (exe);
  basename = g_path_get_basename (exe);

  g_assert_true (_perfmon_modules_lookup (modules, pc, &index, &offset));
  /* The main program comes first. */
  g_assert_cmpuint (index, ==, 0);
  g_assert_cmpstr (_perfmon_modules_get_path (modules, index), ==, exe);
  g_assert_cmpstr (_perfmon_modules_get_debug_name (modules, index), ==, basename);
  g_assert_cmpstr (basename, ==, "test-modules");
  g_assert_cmpuint (offset, <, _perfmon_modules_get_size (modules, index));
  g_assert_cmpuint (_perfmon_modules_get_base (modules, index) + offset, ==, pc);

  /* Either out pointer may be NULL. */
  g_assert_true (_perfmon_modules_lookup (modules, pc, NULL, NULL));
}

static void
test_glib (void)
{
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
  guint glib = G_MAXUINT;
  guint index = G_MAXUINT;
  guint64 offset = G_MAXUINT64;
  const char *build_id;
  const char *breakpad_id;
  guint8 raw[20];
  g_autofree char *expected_breakpad_id = NULL;

  g_assert_true (find_module (modules, "libglib-2.0.so", &glib));
  g_assert_true (g_str_has_suffix (_perfmon_modules_get_path (modules, glib), _perfmon_modules_get_debug_name (modules, glib)));
  g_assert_true (g_path_is_absolute (_perfmon_modules_get_path (modules, glib)));

  g_assert_true (_perfmon_modules_lookup (modules, function_pc ((void (*) (void)) g_main_loop_new), &index, &offset));
  g_assert_cmpuint (index, ==, glib);
  g_assert_cmpuint (offset, <, _perfmon_modules_get_size (modules, glib));
  g_assert_cmpuint (offset, >, 0);

  /* Debian links everything with --build-id (SHA-1, 20 bytes). */
  build_id = _perfmon_modules_get_build_id (modules, glib);
  g_assert_cmpuint (strlen (build_id), ==, 40);
  g_assert_true (is_hex (build_id, FALSE));

  for (guint i = 0; i < sizeof raw; i++)
    raw[i] = (guint8) (g_ascii_xdigit_value (build_id[2 * i]) << 4 | g_ascii_xdigit_value (build_id[2 * i + 1]));
  expected_breakpad_id = _perfmon_breakpad_id_from_build_id (raw, sizeof raw);
  breakpad_id = _perfmon_modules_get_breakpad_id (modules, glib);
  g_assert_cmpstr (breakpad_id, ==, expected_breakpad_id);
  g_assert_cmpuint (strlen (breakpad_id), ==, PERFMON_BREAKPAD_ID_LENGTH);
  g_assert_true (is_hex (breakpad_id, TRUE));
  g_assert_true (g_str_has_suffix (breakpad_id, "0"));
}

static void
test_all_modules (void)
{
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();

  g_assert_cmpuint (_perfmon_modules_get_n (modules), >=, 3);
  for (guint i = 0; i < _perfmon_modules_get_n (modules); i++)
    {
      const char *build_id = _perfmon_modules_get_build_id (modules, i);
      const char *breakpad_id = _perfmon_modules_get_breakpad_id (modules, i);

      g_assert_nonnull (_perfmon_modules_get_path (modules, i));
      g_assert_nonnull (_perfmon_modules_get_debug_name (modules, i));
      g_assert_null (strchr (_perfmon_modules_get_debug_name (modules, i), '/'));
      g_assert_nonnull (build_id);
      g_assert_true (is_hex (build_id, FALSE));
      g_assert_cmpuint (strlen (build_id) % 2, ==, 0);
      if (build_id[0] == '\0')
        g_assert_cmpstr (breakpad_id, ==, "");
      else
        g_assert_cmpuint (strlen (breakpad_id), ==, PERFMON_BREAKPAD_ID_LENGTH);
    }
}

static void
test_outside (void)
{
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
  int on_stack = 0;
  g_autofree int *on_heap = g_new0 (int, 1);
  guint index = 12345;
  guint64 offset = 54321;

  g_assert_false (_perfmon_modules_lookup (modules, 0, &index, &offset));
  g_assert_false (_perfmon_modules_lookup (modules, (guint64) (gsize) &on_stack, &index, &offset));
  g_assert_false (_perfmon_modules_lookup (modules, (guint64) (gsize) on_heap, &index, &offset));
  g_assert_false (_perfmon_modules_lookup (modules, G_MAXUINT64, &index, &offset));
  /* Untouched on failure. */
  g_assert_cmpuint (index, ==, 12345);
  g_assert_cmpuint (offset, ==, 54321);
}

static void
test_stable (void)
{
  g_autoptr(PerfmonModules) first = _perfmon_modules_new ();
  g_autoptr(PerfmonModules) second = _perfmon_modules_new ();
  PerfmonModules *ref;

  g_assert_cmpuint (_perfmon_modules_get_n (first), ==, _perfmon_modules_get_n (second));
  for (guint i = 0; i < _perfmon_modules_get_n (first); i++)
    {
      g_assert_cmpstr (_perfmon_modules_get_path (first, i), ==, _perfmon_modules_get_path (second, i));
      g_assert_cmpstr (_perfmon_modules_get_build_id (first, i), ==, _perfmon_modules_get_build_id (second, i));
      g_assert_cmpuint (_perfmon_modules_get_base (first, i), ==, _perfmon_modules_get_base (second, i));
    }

  ref = _perfmon_modules_ref (first);
  g_assert_true (ref == first);
  _perfmon_modules_unref (ref);
  g_assert_cmpuint (_perfmon_modules_get_n (first), >, 0);
}

static void
test_symbolize (void)
{
  guint64 pc = function_pc (perfmon_test_exported_function);
  guint64 offset = G_MAXUINT64;
  char *name;

  name = _perfmon_symbolize (pc, &offset);
  g_assert_cmpstr (name, ==, "perfmon_test_exported_function");
  g_assert_cmpuint (offset, ==, 0);
  g_free (name);

  name = _perfmon_symbolize (pc + 1, &offset);
  g_assert_cmpstr (name, ==, "perfmon_test_exported_function");
  g_assert_cmpuint (offset, ==, 1);
  g_free (name);

  name = _perfmon_symbolize (function_pc ((void (*) (void)) g_main_loop_new) + 4, NULL);
  g_assert_cmpstr (name, ==, "g_main_loop_new");
  g_free (name);

  offset = 777;
  g_assert_null (_perfmon_symbolize (0, &offset));
  g_assert_cmpuint (offset, ==, 777);
  g_assert_null (_perfmon_symbolize ((guint64) (gsize) &offset, &offset));
  g_assert_cmpuint (offset, ==, 777);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/modules/breakpad-id", test_breakpad_id);
  g_test_add_func ("/modules/self", test_self);
  g_test_add_func ("/modules/glib", test_glib);
  g_test_add_func ("/modules/all-modules", test_all_modules);
  g_test_add_func ("/modules/outside", test_outside);
  g_test_add_func ("/modules/stable", test_stable);
  g_test_add_func ("/modules/symbolize", test_symbolize);

  return g_test_run ();
}
