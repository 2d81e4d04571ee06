/* test-addon-rules.c: code locations map to add-ons (issue 24, point 7)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-test-dirs.h"

static void
write_file (const char *dir,
            const char *sub,
            const char *name,
            const char *contents)
{
  g_autofree char *subdir = g_build_filename (dir, sub, NULL);
  g_autofree char *path = g_build_filename (subdir, name, NULL);
  g_autoptr(GError) error = NULL;

  g_assert_cmpint (g_mkdir_with_parents (subdir, 0700), ==, 0);
  g_file_set_contents (path, contents, -1, &error);
  g_assert_no_error (error);
}

/* A fixed add-on: everything under the prefix, at a component boundary. */
static void
test_fixed_prefix (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *id = NULL;
  g_autofree char *name = NULL;
  g_autofree char *inside = NULL;

  perfmon_addon_rule_clear ();
  g_assert_true (perfmon_addon_rule_add ("/opt/plugins/spell/", "spell", "Spell checker", &error));
  g_assert_no_error (error);

  g_assert_true (perfmon_addon_rule_match ("/opt/plugins/spell/lib/check.js", &id, &name, &inside));
  g_assert_cmpstr (id, ==, "spell");
  g_assert_cmpstr (name, ==, "Spell checker");
  g_assert_cmpstr (inside, ==, "spell/lib/check.js");
  g_assert_false (perfmon_addon_rule_match ("/opt/plugins/spellcheck/x.js", NULL, NULL, NULL));
  g_assert_false (perfmon_addon_rule_match ("/opt/plugins/x.js", NULL, NULL, NULL));
  /* ES modules are named by URI. */
  g_assert_true (perfmon_addon_rule_match ("file:///opt/plugins/spell/x.js", NULL, NULL, NULL));
  perfmon_addon_rule_clear ();
  g_assert_false (perfmon_addon_rule_match ("/opt/plugins/spell/x.js", NULL, NULL, NULL));
}

/* One add-on per directory, named by its metadata.json; the longest
 * prefix wins. */
static void
test_per_directory (void)
{
  g_autofree char *dir = test_make_tmp_dir ("perfmon-addon-rules-XXXXXX");
  g_autofree char *file = NULL;
  g_autofree char *uri = NULL;
  g_autofree char *id = NULL;
  g_autofree char *name = NULL;
  g_autofree char *inside = NULL;
  g_autoptr(GError) error = NULL;

  write_file (dir, "burner@perfmon.test", "metadata.json",
              "{\"uuid\": \"burner@perfmon.test\", \"name\": \"CPU Burner\", \"shell-version\": [\"43\"]}");
  write_file (dir, "broken@perfmon.test", "metadata.json", "{ not json");
  write_file (dir, "special@perfmon.test", "metadata.json", "{\"name\": \"Special\"}");

  perfmon_addon_rule_clear ();
  g_assert_true (perfmon_addon_rule_add (dir, NULL, NULL, &error));
  g_assert_no_error (error);

  file = g_build_filename (dir, "burner@perfmon.test", "extension.js", NULL);
  g_assert_true (perfmon_addon_rule_match (file, &id, &name, &inside));
  g_assert_cmpstr (id, ==, "burner@perfmon.test");
  g_assert_cmpstr (name, ==, "CPU Burner");
  g_assert_cmpstr (inside, ==, "burner@perfmon.test/extension.js");
  g_clear_pointer (&id, g_free);
  g_clear_pointer (&name, g_free);

  /* Bad metadata, or a directory that came later: the id is the name. */
  g_clear_pointer (&file, g_free);
  file = g_build_filename (dir, "broken@perfmon.test", "extension.js", NULL);
  uri = g_filename_to_uri (file, NULL, NULL);
  g_assert_true (perfmon_addon_rule_match (uri, &id, &name, NULL));
  g_assert_cmpstr (id, ==, "broken@perfmon.test");
  g_assert_cmpstr (name, ==, "broken@perfmon.test");
  g_clear_pointer (&id, g_free);
  g_clear_pointer (&name, g_free);

  /* A file directly under the prefix is no add-on's. */
  g_clear_pointer (&file, g_free);
  file = g_build_filename (dir, "stray.js", NULL);
  g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));

  /* A more specific rule wins over the per-directory one. */
  g_clear_pointer (&file, g_free);
  file = g_build_filename (dir, "special@perfmon.test", NULL);
  g_assert_true (perfmon_addon_rule_add (file, "override", NULL, &error));
  g_assert_no_error (error);
  g_clear_pointer (&file, g_free);
  file = g_build_filename (dir, "special@perfmon.test", "a.js", NULL);
  g_assert_true (perfmon_addon_rule_match (file, &id, &name, NULL));
  g_assert_cmpstr (id, ==, "override");
  g_assert_cmpstr (name, ==, "override");

  perfmon_addon_rule_clear ();
  test_remove_tree (dir);
}

/* The built-in rules: GNOME Shell extensions, user and system. */
static void
test_builtin_gnome_shell (void)
{
  g_autofree char *data_home = test_make_tmp_dir ("perfmon-addon-data-XXXXXX");
  g_autofree char *extensions = g_build_filename (data_home, "gnome-shell", "extensions", NULL);
  g_autofree char *file = NULL;
  g_autofree char *id = NULL;
  g_autofree char *name = NULL;

  write_file (extensions, "calm@perfmon.test", "metadata.json", "{\"name\": \"Calm one\"}");
  /* g_get_user_data_dir() reads the environment once: a subprocess. */
  if (g_test_subprocess ())
    {
      perfmon_addon_rule_clear ();
      perfmon_addon_rule_add_builtin ();
      perfmon_addon_rule_add_builtin ();   /* once */
      file = g_build_filename (g_get_user_data_dir (), "gnome-shell", "extensions", "calm@perfmon.test",
                               "extension.js", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, NULL));
      g_assert_cmpstr (id, ==, "calm@perfmon.test");
      g_assert_cmpstr (name, ==, "Calm one");
      g_clear_pointer (&id, g_free);
      g_assert_true (perfmon_addon_rule_match ("/usr/share/gnome-shell/extensions/sys@gnome.org/extension.js",
                                               &id, NULL, NULL));
      g_assert_cmpstr (id, ==, "sys@gnome.org");
      g_assert_false (perfmon_addon_rule_match ("resource:///org/gnome/shell/ui/main.js", NULL, NULL, NULL));
      return;
    }
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);
  g_setenv ("XDG_DATA_DIRS", "/usr/local/share:/usr/share", TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  test_remove_tree (data_home);
}

/* Bad input: a clear error naming the field, never a crash. */
static void
test_bad_input (void)
{
  g_autofree char *long_id = g_strnfill (PERFMON_ADDON_ID_MAX + 1, 'x');
  g_autoptr(GError) error = NULL;

  perfmon_addon_rule_clear ();
  g_assert_false (perfmon_addon_rule_add ("relative/dir", "x", NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "prefix"));
  g_clear_error (&error);
  g_assert_false (perfmon_addon_rule_add ("", "x", NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  g_assert_false (perfmon_addon_rule_add ("/a", long_id, NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "addon_id"));
  g_assert_null (strstr (error->message, long_id));
  g_clear_error (&error);
  g_assert_false (perfmon_addon_rule_add ("/a", "x", "\xff\xfe", &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);

  for (guint i = 0; i < PERFMON_ADDON_RULES_MAX; i++)
    {
      g_autofree char *prefix = g_strdup_printf ("/r/%u", i);

      g_assert_true (perfmon_addon_rule_add (prefix, "x", NULL, &error));
      g_assert_no_error (error);
    }
  g_assert_false (perfmon_addon_rule_add ("/r/last", "x", NULL, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED);
  perfmon_addon_rule_clear ();
}

/* `perfmon run --addon-path PREFIX[=NAME]`. */
static void
test_spec (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *id = NULL;

  perfmon_addon_rule_clear ();
  g_assert_true (perfmon_addon_rule_add_spec ("/opt/a=Alpha", &error));
  g_assert_no_error (error);
  g_assert_true (perfmon_addon_rule_add_spec ("/opt/b=c/d", &error));   /* a path, no name */
  g_assert_no_error (error);
  g_assert_true (perfmon_addon_rule_match ("/opt/a/x.js", &id, NULL, NULL));
  g_assert_cmpstr (id, ==, "Alpha");
  g_clear_pointer (&id, g_free);
  g_assert_true (perfmon_addon_rule_match ("/opt/b=c/d/plugin/x.py", &id, NULL, NULL));
  g_assert_cmpstr (id, ==, "plugin");
  g_assert_false (perfmon_addon_rule_add_spec ("/opt/a=", &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  perfmon_addon_rule_clear ();
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/addon-rules/fixed-prefix", test_fixed_prefix);
  g_test_add_func ("/addon-rules/per-directory", test_per_directory);
  g_test_add_func ("/addon-rules/builtin-gnome-shell", test_builtin_gnome_shell);
  g_test_add_func ("/addon-rules/bad-input", test_bad_input);
  g_test_add_func ("/addon-rules/spec", test_spec);
  return g_test_run ();
}
