/* test-frame-function.c: a stack frame reduced to its function, the one
 * key by which `perfmon hangs` and perfmond's page merge hangs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon.h"
#include "perfmon-frame-function.h"

static void
check (const char *frame,
       const char *expected)
{
  g_autofree char *function = perfmon_frame_function (frame);

  g_assert_cmpstr (function, ==, expected);
}

static void
test_native_frames (void)
{
  g_autofree char *named = perfmon_format_native_frame ("libglib-2.0.so.0", 0x5a1f0, "g_main_loop_run", 0x10);
  g_autofree char *unnamed = perfmon_format_native_frame ("libglib-2.0.so.0", 0x5a1f0, NULL, 0);
  g_autofree char *nowhere = perfmon_format_native_frame (NULL, 0x7f0012345678, NULL, 0);

  /* As perfmon prints them: the offsets go, module and function stay. */
  check (named, "libglib-2.0.so.0 (g_main_loop_run)");
  check (unnamed, "libglib-2.0.so.0");
  /* Outside every module, the address is all there is. */
  check (nowhere, "0x7f0012345678");
  /* Two instructions of one function: one key. */
  {
    g_autofree char *other = perfmon_format_native_frame ("libglib-2.0.so.0", 0x5a2c4, "g_main_loop_run", 0xe4);
    g_autofree char *a = perfmon_frame_function (named);
    g_autofree char *b = perfmon_frame_function (other);

    g_assert_cmpstr (a, ==, b);
  }
}

static void
test_script_frames_and_labels (void)
{
  g_autofree char *python = perfmon_format_script_frame ("busy", "/tmp/busy.py", 7);
  g_autofree char *gjs = perfmon_format_script_frame ("onActivate", "file:///ext/extension.js", 12);
  g_autofree char *no_line = perfmon_format_script_frame ("busy", "/tmp/busy.py", 0);

  check (python, "busy (/tmp/busy.py)");
  check (gjs, "onActivate (file:///ext/extension.js)");
  check (no_line, "busy (/tmp/busy.py)");
  /* Labels stay as they are, digits and colons too. */
  check ("spell check", "spell check");
  check ("[add-on slow@perfmon.test] onActivate (extension.js:12)", "[add-on slow@perfmon.test] onActivate (extension.js)");
  check ("step 3: 12 items", "step 3: 12 items");
  check ("ratio 1:2", "ratio 1:2");
  check ("", "");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/frame-function/native", test_native_frames);
  g_test_add_func ("/frame-function/script-and-labels", test_script_frames_and_labels);
  return g_test_run ();
}
