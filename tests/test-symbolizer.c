/* test-symbolizer.c: the symbolizer's lookups, frame format and inputs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-modules-private.h"
#include "perfmon-symbolizer-private.h"

G_GNUC_NO_INLINE __attribute__ ((used)) static int
symbolizer_test_static_function (int x)
{
  static volatile int calls;

  calls += x;
  return calls;
}

static void
test_format (void)
{
  g_autofree char *full = perfmon_format_native_frame ("libgtk-4.so.1", 0x478c55, "gtk_widget_snapshot", 0x1a);
  g_autofree char *bare = perfmon_format_native_frame ("libgtk-4.so.1", 0x478c55, NULL, 0);
  g_autofree char *outside = perfmon_format_native_frame (NULL, 0x7f0011223344, NULL, 0);
  g_autofree char *script = perfmon_format_script_frame ("on_timeout", "/app/main.py", 42);
  g_autofree char *no_line = perfmon_format_script_frame ("f", "x.js", 0);
  g_autofree char *no_file = perfmon_format_script_frame ("f", NULL, 3);

  g_assert_cmpstr (full, ==, "libgtk-4.so.1+0x478c55 (gtk_widget_snapshot+0x1a)");
  g_assert_cmpstr (bare, ==, "libgtk-4.so.1+0x478c55");
  g_assert_cmpstr (outside, ==, "0x7f0011223344");
  g_assert_cmpstr (script, ==, "on_timeout (/app/main.py:42)");
  g_assert_cmpstr (no_line, ==, "f (x.js)");
  g_assert_cmpstr (no_file, ==, "f");
}

/* This program's static function, by path, by build id and by breakpad
 * id; a return address names the call's function. */
static void
test_lookup_self (void)
{
  g_autoptr(PerfmonSymbolizer) symbolizer = perfmon_symbolizer_new ();
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
  guint64 pc = (guint64) (gsize) symbolizer_test_static_function;
  guint index;
  guint64 offset, function_offset = 99;
  const char *path, *build_id, *breakpad_id;
  char *name;

  symbolizer_test_static_function (1);
  g_assert_true (_perfmon_modules_lookup (modules, pc + 4, &index, &offset));
  path = _perfmon_modules_get_path (modules, index);
  build_id = _perfmon_modules_get_build_id (modules, index);
  breakpad_id = _perfmon_modules_get_breakpad_id (modules, index);
  g_assert_cmpstr (build_id, !=, "");

  name = perfmon_symbolizer_lookup (symbolizer, path, NULL, offset, FALSE, &function_offset);
  g_assert_cmpstr (name, ==, "symbolizer_test_static_function");
  g_assert_cmpuint (function_offset, ==, 4);
  g_free (name);

  name = perfmon_symbolizer_lookup (symbolizer, path, build_id, offset, TRUE, &function_offset);
  g_assert_cmpstr (name, ==, "symbolizer_test_static_function");
  g_assert_cmpuint (function_offset, ==, 4);
  g_free (name);

  /* The function's first byte as a return address is the call before it:
   * not this function. */
  name = perfmon_symbolizer_lookup (symbolizer, path, build_id, offset - 4, TRUE, NULL);
  g_assert_cmpstr (name, !=, "symbolizer_test_static_function");
  g_free (name);

  /* Only the file name and the breakpad id, as in a ping: the file is
   * found by name in the library directories... which this test program
   * is not in; its path with the breakpad id is. */
  name = perfmon_symbolizer_lookup (symbolizer, path, breakpad_id, offset, FALSE, NULL);
  g_assert_cmpstr (name, ==, "symbolizer_test_static_function");
  g_free (name);

  /* Another build id: the file is not that module. */
  name = perfmon_symbolizer_lookup (symbolizer, path, "0123456789abcdef0123456789abcdef01234567",
                                    offset, FALSE, NULL);
  g_assert_null (name);

  /* A file name alone, without id, is never trusted. */
  name = perfmon_symbolizer_lookup (symbolizer, "test-symbolizer", NULL, offset, FALSE, NULL);
  g_assert_null (name);

  g_assert_cmpuint (perfmon_symbolizer_get_n_cached_modules (symbolizer), >=, 1);
  _perfmon_symbolizer_clear_cache (symbolizer);
  g_assert_cmpuint (perfmon_symbolizer_get_n_cached_modules (symbolizer), ==, 0);
}

static void
test_debug_dirs (void)
{
  g_autoptr(PerfmonSymbolizer) symbolizer = perfmon_symbolizer_new ();
  const char *dirs[] = { "/a", "/b", NULL };
  g_auto(GStrv) got = NULL;

  perfmon_symbolizer_set_debug_dirs (symbolizer, dirs);
  g_assert_cmpstrv (perfmon_symbolizer_get_debug_dirs (symbolizer), dirs);
  g_object_get (symbolizer, "debug-dirs", &got, NULL);
  g_assert_cmpstrv (got, dirs);
  perfmon_symbolizer_set_time_budget (symbolizer, 5);
  g_assert_cmpuint (perfmon_symbolizer_get_time_budget (symbolizer), ==, 5);
}

static void
assert_invalid (PerfmonSymbolizer *symbolizer,
                const char        *contents,
                gssize             length)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *out = perfmon_symbolizer_symbolize (symbolizer, contents, length, FALSE, &error);

  g_assert_null (out);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  /* Never the input echoed back. */
  if (length < 0 && strlen (contents) > 8)
    g_assert_null (strstr (error->message, contents));
}

static char *
symbolize (PerfmonSymbolizer *symbolizer,
           const char        *contents,
           gboolean           json)
{
  g_autoptr(GError) error = NULL;
  char *out = perfmon_symbolizer_symbolize (symbolizer, contents, -1, json, &error);

  g_assert_no_error (error);
  g_assert_nonnull (out);
  return out;
}

#define REQUIRED "\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"x\", \"process\": \"default\"," \
                 " \"remoteType\": null, \"annotations\": []"

/* Inputs that are not what perfmon writes: an error, never a crash.
 * Reports and pings are read by their strict readers, whose errors name
 * the field: odd frames are refused, not left as they are. */
static void
test_bad_input (void)
{
  g_autoptr(PerfmonSymbolizer) symbolizer = perfmon_symbolizer_new ();
  static const char binary[] = "PMTL\0\1\2\3";
  char *out;

  assert_invalid (symbolizer, "", -1);
  assert_invalid (symbolizer, "{}", -1);
  assert_invalid (symbolizer, "[1, 2, 3]", -1);
  assert_invalid (symbolizer, "{\"stack\": 5, \"a long member to not echo\": 1}", -1);
  assert_invalid (symbolizer, "{\"payload\": {\"hangs\": 7}}", -1);
  assert_invalid (symbolizer, binary, sizeof binary);
  assert_invalid (symbolizer, "\xff\xfe not UTF-8 at all, not at all", -1);
  assert_invalid (symbolizer, "#00 pc zzzz /lib/x.so\n", -1);
  assert_invalid (symbolizer, "1 #00 pc 123456789012345678 /lib/x.so\n", -1);

  /* Odd frames in a report, odd hangs in a ping: refused. */
  assert_invalid (symbolizer,
                  "{\"stack\": [[0, \"zz\"], [99, \"10\"], [-5, \"10\"], \"label\", [0], {\"a\": 1}, null,"
                  " [0, \"ffffffffffffffffff\"], [\"0\", \"1\"], [0, \"1\"]],"
                  " \"modules\": [[\"x.so\", \"not an id\"], 3], \"symbols\": 5, \"duration\": \"long\"}", -1);
  assert_invalid (symbolizer, "{" REQUIRED ", \"stack\": [[0, \"zz\"]], \"modules\": [[\"x.so\", \"\"]]}", -1);
  assert_invalid (symbolizer,
                  "{\"type\": \"bhr\", \"payload\": {\"hangs\": [1, {\"stack\": [[0, \"1\"]]}, {}],"
                  " \"modules\": \"no\"}}", -1);

  /* A report: innermost first; the name the report had is kept. */
  out = symbolize (symbolizer,
                   "{" REQUIRED ", \"stack\": [[0, \"1\"], \"a label\"], \"modules\": [[\"x.so\", \"\"]],"
                   " \"symbols\": [\"known+0x4\", null]}",
                   FALSE);
  g_assert_nonnull (strstr (out, "#0   a label\n  #1   x.so+0x1 (known+0x4)\n"));
  g_free (out);

  /* A jank stack log: names kept, unknown files left unnamed, the notes
   * after the empty line kept. */
  out = symbolize (symbolizer,
                   "2 #00 pc 00001000 /nonexistent/lib.so(sym+1)(abcdef0123456789)\n"
                   "    2 #01 pc 00002000 /nonexistent/lib.so(0123456789abcdef)\n"
                   "1 #00 pc 00000010 [unknown]\n"
                   "1 #00 pc 00000010 /no(close\n"
                   "\n"
                   "0 of 3 samples skipped: not a frame\n",
                   FALSE);
  g_assert_cmpstr (out, ==,
                   "2 #00 pc 00001000 /nonexistent/lib.so(sym+1)(abcdef0123456789)\n"
                   "    2 #01 pc 00002000 /nonexistent/lib.so(0123456789abcdef)\n"
                   "1 #00 pc 00000010 [unknown]\n"
                   "1 #00 pc 00000010 /no(close\n"
                   "\n"
                   "0 of 3 samples skipped: not a frame\n");
  g_free (out);
  /* A tree is read by its strict reader: a line that is not the writer's
   * is refused, by its number. */
  {
    g_autoptr(GError) error = NULL;

    out = perfmon_symbolizer_symbolize (symbolizer,
                                        "2 #00 pc 00001000 /nonexistent/lib.so\n"
                                        "    not a frame, and a long line not to echo\n", -1, FALSE, &error);
    g_assert_null (out);
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
    g_assert_nonnull (strstr (error->message, "line 2"));
    g_assert_null (strstr (error->message, "long line"));
  }
  out = symbolize (symbolizer, "1 #00 pc 00001000 /nonexistent/lib.so\n", TRUE);
  g_assert_nonnull (strstr (out, "\"frames\""));
  g_free (out);
}

/* A report names the frames it can with this program's own symbol table
 * (its static function, which dladdr() cannot name), as an object:
 * perfmon_hang_report_symbolize() gives a new report, the same but for
 * the names, and keeps the names the report had. */
static void
test_symbolize_report_object (void)
{
  g_autoptr(PerfmonSymbolizer) symbolizer = perfmon_symbolizer_new ();
  guint64 pc = (guint64) (gsize) symbolizer_test_static_function;
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();
  guint index;
  guint64 offset;
  const char *path;
  g_autofree char *json = NULL;
  g_autoptr(PerfmonHangReport) report = NULL;
  g_autoptr(PerfmonHangReport) named = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) stack = NULL;
  g_autofree char *expected = NULL;

  g_assert_true (_perfmon_modules_lookup (modules, pc + 4, &index, &offset));
  path = _perfmon_modules_get_path (modules, index);
  /* The module by its path, as a report written elsewhere names it; the
   * frame is a return address, 4 bytes into the function. */
  json = g_strdup_printf ("{" REQUIRED ", \"stack\": [[0, \"%" G_GINT64_MODIFIER "x\"], \"label\", [0, \"1\"]],"
                          " \"symbols\": [null, null, \"kept+0x1\"], \"modules\": [[\"%s\", \"\"]]}",
                          offset, path);
  report = perfmon_hang_report_new_from_json (json, -1, &error);
  g_assert_no_error (error);
  named = perfmon_hang_report_symbolize (report, symbolizer);
  stack = perfmon_hang_report_dup_stack (named);
  expected = g_strdup_printf ("%s+0x%" G_GINT64_MODIFIER "x (symbolizer_test_static_function+0x4)",
                              path, offset);
  g_assert_cmpstr (stack[0], ==, expected);
  g_assert_cmpstr (stack[1], ==, "label");
  g_assert_true (g_str_has_suffix (stack[2], "(kept+0x1)"));
  g_assert_cmpstr (perfmon_hang_report_get_thread (named), ==, "main");
  g_clear_pointer (&stack, g_strfreev);
  /* The report itself is not changed. */
  stack = perfmon_hang_report_dup_stack (report);
  g_assert_null (strchr (stack[0], '('));
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_setenv ("PERFMON_DEBUG_DIRS", "/nonexistent", TRUE);
  g_unsetenv ("DEBUGINFOD_URLS");

  g_test_add_func ("/symbolizer/format", test_format);
  g_test_add_func ("/symbolizer/lookup-self", test_lookup_self);
  g_test_add_func ("/symbolizer/debug-dirs", test_debug_dirs);
  g_test_add_func ("/symbolizer/bad-input", test_bad_input);
  g_test_add_func ("/symbolizer/report-object", test_symbolize_report_object);
  return g_test_run ();
}
