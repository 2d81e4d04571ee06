/* perfmon-test-dirs.h: temporary directories of the tests, and tests
 * that need a process of their own
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

/* A new empty directory under the temporary directory; @template as for
 * g_dir_make_tmp(), e.g. "perfmon-ping-store-XXXXXX". */
static inline char *
test_make_tmp_dir (const char *template)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp (template, &error);

  g_assert_no_error (error);
  return dir;
}

/* Removes @path, and what it holds if it is a directory (not through
 * symlinks). A missing @path is fine; failing to remove one is not. */
static inline void
test_remove_tree (const char *path)
{
  GStatBuf st;

  if (g_lstat (path, &st) != 0)
    return;
  if (S_ISDIR (st.st_mode))
    {
      g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          test_remove_tree (child);
        }
      g_assert_cmpint (g_rmdir (path), ==, 0);
    }
  else
    g_assert_cmpint (g_unlink (path), ==, 0);
}

/* For a test whose state is the process's (the jank limits, the tracer's
 * buffer size): in the test, TRUE means the test ran in a process of its
 * own, passed, and the caller is done; FALSE means the caller is that
 * process and runs the test. */
static inline gboolean
test_run_in_own_process (void)
{
  if (g_test_subprocess ())
    return FALSE;
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  return TRUE;
}
