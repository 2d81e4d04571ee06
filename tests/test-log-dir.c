/* test-log-dir.c: jank log file names, atomic writes and aging
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-test-dirs.h"
#include "perfmon-log-dir-private.h"

static const char * const own_prefixes[] = { PERFMON_LOG_DIR_JANK_PREFIX, "TASK_TIMEOUT_", NULL };

typedef struct
{
  char *dir;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-log-dir-XXXXXX");
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

/* Creates @dir/@name of @size bytes, modified at @mtime (seconds). */
static void
make_file (const char *dir,
           const char *name,
           gsize       size,
           gint64      mtime)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *contents = g_malloc0 (size + 1);
  g_autoptr(GError) error = NULL;
  struct timespec times[2] = { { mtime, 0 }, { mtime, 0 } };

  memset (contents, 'x', size);
  g_file_set_contents (path, contents, (gssize) size, &error);
  g_assert_no_error (error);
  g_assert_cmpint (utimensat (AT_FDCWD, path, times, 0), ==, 0);
}

static gboolean
exists (const char *dir,
        const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  GStatBuf st;

  return g_lstat (path, &st) == 0;
}

static guint
count_entries (const char *dir)
{
  g_autoptr(GDir) handle = g_dir_open (dir, 0, NULL);
  guint n = 0;

  g_assert_nonnull (handle);
  while (g_dir_read_name (handle) != NULL)
    n++;
  return n;
}

static char *
jank_name (guint i,
           const char *suffix)
{
  return g_strdup_printf (PERFMON_LOG_DIR_JANK_PREFIX "20260101%06u_42%s", i, suffix);
}

static void
make_room (const char *dir,
           guint64     limit,
           guint64     incoming,
           gboolean    expect_over)
{
  g_autoptr(GError) error = NULL;
  gboolean over_limit = !expect_over;

  g_assert_true (_perfmon_log_dir_make_room (dir, own_prefixes, limit, incoming,
                                             &over_limit, &error));
  g_assert_no_error (error);
  g_assert_cmpint (over_limit, ==, expect_over);
}

static void
test_file_name (void)
{
  g_autoptr(GDateTime) time = g_date_time_new_utc (2026, 1, 2, 3, 4, 5.75);
  g_autofree char *stack = _perfmon_log_dir_file_name (PERFMON_LOG_DIR_JANK_PREFIX, time,
                                                        1234, 0, PERFMON_LOG_DIR_STACK_SUFFIX);
  g_autofree char *trace = _perfmon_log_dir_file_name (PERFMON_LOG_DIR_JANK_PREFIX, time,
                                                        G_MAXUINT, 0, PERFMON_LOG_DIR_TRACE_SUFFIX);
  g_autofree char *second = _perfmon_log_dir_file_name (PERFMON_LOG_DIR_JANK_PREFIX, time,
                                                         1234, 2, PERFMON_LOG_DIR_STACK_SUFFIX);

  g_assert_cmpstr (stack, ==, "MAIN_THREAD_JANK_20260102030405_1234.txt");
  g_assert_cmpstr (trace, ==, "MAIN_THREAD_JANK_20260102030405_4294967295.trace");
  g_assert_cmpstr (second, ==, "MAIN_THREAD_JANK_20260102030405_1234_2.txt");
}

static void
test_fits (Fixture       *fixture,
           gconstpointer  data)
{
  for (guint i = 0; i < 10; i++)
    {
      g_autofree char *name = jank_name (i, ".txt");
      make_file (fixture->dir, name, 1000, 1000 + i);
    }

  /* Exactly at the limit still fits. */
  make_room (fixture->dir, 11000, 1000, FALSE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, 10);
}

static void
test_missing_dir (Fixture       *fixture,
                  gconstpointer  data)
{
  g_autofree char *missing = g_build_filename (fixture->dir, "nothing", "here", NULL);

  make_room (missing, 10, 5, FALSE);
}

static void
test_oldest_by_name_only_as_needed (Fixture       *fixture,
                                    gconstpointer  data)
{
  /* Modified newest first: the time in the name decides, not mtime. */
  for (guint i = 0; i < 10; i++)
    {
      g_autofree char *name = jank_name (i, i % 2 ? ".txt" : ".trace");
      make_file (fixture->dir, name, 1000, 2000 - i);
    }

  /* 10000 + 2500 > 11000: the two oldest go, no more. */
  make_room (fixture->dir, 11000, 2500, FALSE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, 8);
  for (guint i = 0; i < 10; i++)
    {
      g_autofree char *name = jank_name (i, i % 2 ? ".txt" : ".trace");
      g_assert_cmpint (exists (fixture->dir, name), ==, i >= 2);
    }
}

static void
test_sequence_orders_one_second (Fixture       *fixture,
                                 gconstpointer  data)
{
  make_file (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42_10.txt", 1000, 3000);
  make_file (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42_2.txt", 1000, 2000);
  make_file (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42.txt", 1000, 1000);

  make_room (fixture->dir, 3000, 1000, FALSE);
  g_assert_false (exists (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42.txt"));
  g_assert_true (exists (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42_2.txt"));
  g_assert_true (exists (fixture->dir, "MAIN_THREAD_JANK_20260101000000_42_10.txt"));
}

static void
test_too_big_deletes_nothing (Fixture       *fixture,
                              gconstpointer  data)
{
  for (guint i = 0; i < 4; i++)
    {
      g_autofree char *name = jank_name (i, ".txt");
      make_file (fixture->dir, name, 1000, 1000 + i);
    }

  make_room (fixture->dir, 5000, 6000, TRUE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, 4);
}

/* Three logs in one second: three files, each whole, none replaced. */
static void
test_write_new_unique (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GHashTable) paths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  for (guint i = 0; i < 3; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *contents = g_strdup_printf ("log %u", i);
      g_autofree char *read_back = NULL;
      gboolean over_limit = TRUE;
      char *path = _perfmon_log_dir_write_new (fixture->dir, own_prefixes, 1000,
                                               PERFMON_LOG_DIR_JANK_PREFIX, PERFMON_LOG_DIR_STACK_SUFFIX,
                                               contents, strlen (contents), &over_limit, &error);
      g_autofree char *name = NULL;

      g_assert_no_error (error);
      g_assert_nonnull (path);
      g_assert_false (over_limit);
      name = g_path_get_basename (path);
      g_assert_true (g_str_has_prefix (name, PERFMON_LOG_DIR_JANK_PREFIX));
      g_assert_true (g_file_get_contents (path, &read_back, NULL, NULL));
      g_assert_cmpstr (read_back, ==, contents);
      g_assert_true (g_hash_table_add (paths, path));
    }
  g_assert_cmpuint (count_entries (fixture->dir), ==, 3);

  /* Too big for the limit: not written, over the limit, nothing lost. */
  {
    g_autoptr(GError) error = NULL;
    gboolean over_limit = FALSE;
    char *path = _perfmon_log_dir_write_new (fixture->dir, own_prefixes, 4, "TASK_TIMEOUT_",
                                             PERFMON_LOG_DIR_STACK_SUFFIX, "12345", 5, &over_limit, &error);

    g_assert_null (path);
    g_assert_true (over_limit);
    g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED);
    g_assert_cmpuint (count_entries (fixture->dir), ==, 3);
  }
}

static void
test_same_mtime_by_name (Fixture       *fixture,
                         gconstpointer  data)
{
  for (guint i = 0; i < 4; i++)
    {
      g_autofree char *name = jank_name (3 - i, ".txt");
      make_file (fixture->dir, name, 1000, 5000);
    }

  make_room (fixture->dir, 3000, 0, FALSE);
  for (guint i = 0; i < 4; i++)
    {
      g_autofree char *name = jank_name (i, ".txt");
      g_assert_cmpint (exists (fixture->dir, name), ==, i >= 1);
    }
}

static void
test_others_untouched (Fixture       *fixture,
                       gconstpointer  data)
{
  static const char * const others[] = {
    "notes.txt",
    "MAIN_THREAD_JANK_20260101000000_1.log",
    "MAIN_THREAD_JANK_20260101000000_1.txt.bak",
    "OTHER_20260101000000_1.txt",
    "main_thread_jank_20260101000000_1.txt",
    "TASK_TIMEOUT_my-own-notes.txt",
    "MAIN_THREAD_JANK_20260101000000_1.txt~",
    "MAIN_THREAD_JANK_2026010100000_1.txt",
    "MAIN_THREAD_JANK_20260101000000_x.txt",
    "MAIN_THREAD_JANK_20260101000000_1_.trace",
  };
  g_autofree char *subdir = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_dir.txt", NULL);
  g_autofree char *outside = g_build_filename (fixture->dir, "big.bin", NULL);
  g_autofree char *link = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_link.trace", NULL);

  /* Old and big, but not ours: neither counted nor deleted. */
  for (gsize i = 0; i < G_N_ELEMENTS (others); i++)
    make_file (fixture->dir, others[i], 100000, 1);
  make_file (fixture->dir, "big.bin", 100000, 1);
  g_assert_cmpint (g_mkdir (subdir, 0700), ==, 0);
  make_file (subdir, "MAIN_THREAD_JANK_20260101000000_1.txt", 100, 1);
  g_assert_cmpint (symlink (outside, link), ==, 0);

  for (guint i = 0; i < 4; i++)
    {
      g_autofree char *name = jank_name (i, ".txt");
      make_file (fixture->dir, name, 1000, 1000 + i);
    }

  /* Ours alone fit: nothing happens. */
  make_room (fixture->dir, 5000, 1000, FALSE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, G_N_ELEMENTS (others) + 3 + 4);

  /* Ours must all go for the incoming file: the others stay. */
  make_room (fixture->dir, 5000, 5000, FALSE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, G_N_ELEMENTS (others) + 3);
  for (gsize i = 0; i < G_N_ELEMENTS (others); i++)
    g_assert_true (exists (fixture->dir, others[i]));
  g_assert_true (g_file_test (subdir, G_FILE_TEST_IS_DIR));
  g_assert_true (exists (subdir, "MAIN_THREAD_JANK_20260101000000_1.txt"));
  g_assert_true (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  g_assert_true (g_file_test (outside, G_FILE_TEST_IS_REGULAR));

  /* Nothing of ours left and the file does not fit: still over. */
  make_room (fixture->dir, 5000, 6000, TRUE);
  make_room (fixture->dir, G_MAXUINT64, G_MAXUINT64, FALSE);
}

static void
test_write_atomically (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autofree char *dir = g_build_filename (fixture->dir, "watchdog", "log", NULL);
  g_autofree char *path = g_build_filename (dir, "MAIN_THREAD_JANK_20260101000000_1.txt", NULL);
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  GStatBuf st;
  gsize length;

  g_assert_true (_perfmon_log_dir_write_atomically (dir, "MAIN_THREAD_JANK_20260101000000_1.txt",
                                                    "first", 5, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (dir, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);

  /* Replacing it leaves the new contents and no temporary file. */
  g_assert_true (_perfmon_log_dir_write_atomically (dir, "MAIN_THREAD_JANK_20260101000000_1.txt",
                                                    "second\0bytes", 12, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &contents, &length, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (contents, length, "second\0bytes", 12);
  g_assert_cmpuint (count_entries (dir), ==, 1);

  g_assert_true (_perfmon_log_dir_write_atomically (dir, "empty.txt", "", 0, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_entries (dir), ==, 2);
}

static void
test_bad_name (Fixture       *fixture,
               gconstpointer  data)
{
  static const char * const names[] = { "", ".", "..", "../escape.txt", "a/b.txt" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autoptr(GError) error = NULL;

      g_assert_false (_perfmon_log_dir_write_atomically (fixture->dir, names[i], "x", 1, &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
      g_assert_nonnull (strstr (error->message, "name"));
    }
  g_assert_cmpuint (count_entries (fixture->dir), ==, 0);
}

static void
test_unwritable (Fixture       *fixture,
                 gconstpointer  data)
{
  /* Tests run as root, who may write anywhere: a "directory" under a
   * regular file fails for everybody. */
  g_autofree char *file = g_build_filename (fixture->dir, "plain-file", NULL);
  g_autofree char *dir = g_build_filename (file, "watchdog", NULL);
  g_autoptr(GError) error = NULL;
  gboolean over_limit = TRUE;

  make_file (fixture->dir, "plain-file", 10, 1000);

  g_assert_false (_perfmon_log_dir_write_atomically (dir, "MAIN_THREAD_JANK_1_1.txt",
                                                    "x", 1, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR);
  g_assert_nonnull (strstr (error->message, dir));
  g_clear_error (&error);

  /* A file where the directory should be: the write would fail, and so
   * does aging, naming it. */
  g_assert_false (_perfmon_log_dir_make_room (file, own_prefixes, 100, 1,
                                              &over_limit, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR);
  g_assert_nonnull (strstr (error->message, file));
  g_assert_false (over_limit);
}

/* A file of another uid with our name (the directory is shared, or root
 * ages a user's directory) is not ours: neither counted nor deleted, and
 * neither is a stale temporary of another uid. Run as root, where chown()
 * can make one. */
static void
test_other_uid_untouched (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autofree char *theirs = jank_name (0, ".txt");
  g_autofree char *theirs_path = g_build_filename (fixture->dir, theirs, NULL);
  g_autofree char *timeout_path = g_build_filename (fixture->dir, "TASK_TIMEOUT_20250101000000_1.txt", NULL);
  g_autofree char *temp_path = g_build_filename (fixture->dir, "MAIN_THREAD_JANK_x.txt.ABC123", NULL);

  if (geteuid () != 0)
    {
      g_test_skip ("needs root, to give a file to nobody");
      return;
    }
  make_file (fixture->dir, theirs, 4000, 1);
  make_file (fixture->dir, "TASK_TIMEOUT_20250101000000_1.txt", 4000, 2);
  make_file (fixture->dir, "MAIN_THREAD_JANK_x.txt.ABC123", 10, 3);
  g_assert_cmpint (chown (theirs_path, 65534, 65534), ==, 0);
  g_assert_cmpint (chown (timeout_path, 65534, 65534), ==, 0);
  g_assert_cmpint (chown (temp_path, 65534, 65534), ==, 0);
  for (guint i = 1; i < 3; i++)
    {
      g_autofree char *name = jank_name (i, ".txt");
      make_file (fixture->dir, name, 1000, 1000 + i);
    }

  /* Ours alone (2000 bytes) fit next to 1000 more: nobody's 8000 do not
   * count, and nothing is deleted. */
  make_room (fixture->dir, 3000, 1000, FALSE);
  g_assert_cmpuint (count_entries (fixture->dir), ==, 5);
  /* All of ours must go: nobody's stay. */
  make_room (fixture->dir, 3000, 3000, FALSE);
  g_assert_true (exists (fixture->dir, theirs));
  g_assert_true (exists (fixture->dir, "TASK_TIMEOUT_20250101000000_1.txt"));
  g_assert_cmpuint (count_entries (fixture->dir), ==, 3);
  _perfmon_log_dir_remove_stale_temporaries (fixture->dir, PERFMON_LOG_DIR_JANK_PREFIX, TRUE);
  g_assert_true (exists (fixture->dir, "MAIN_THREAD_JANK_x.txt.ABC123"));
}

#define ADD(path, func) \
  g_test_add ("/log-dir/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/log-dir/file-name", test_file_name);
  ADD ("aging/fits", test_fits);
  ADD ("aging/missing-dir", test_missing_dir);
  ADD ("aging/oldest-by-name-only-as-needed", test_oldest_by_name_only_as_needed);
  ADD ("aging/sequence-orders-one-second", test_sequence_orders_one_second);
  ADD ("aging/too-big-deletes-nothing", test_too_big_deletes_nothing);
  ADD ("write/new-unique", test_write_new_unique);
  ADD ("aging/same-mtime-by-name", test_same_mtime_by_name);
  ADD ("aging/others-untouched", test_others_untouched);
  ADD ("aging/other-uid-untouched", test_other_uid_untouched);
  ADD ("write/atomically", test_write_atomically);
  ADD ("write/bad-name", test_bad_name);
  ADD ("write/unwritable", test_unwritable);

  return g_test_run ();
}
