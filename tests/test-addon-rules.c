/* test-addon-rules.c: code locations map to add-ons (issue 24, point 7)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <unistd.h>

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

/* The built-in rules of libpeas plugins (issue 24, point 7), in the user's
 * and the system's plugin directories of any application
 * (…/APP/plugins): a plugin in a directory of its own is everything under
 * it; plugins side by side in the plugin directory are their module files
 * (libMODULE.so, MODULE.py, the package MODULE/). The id is the .plugin's
 * Module, the name its Name. */
static void
test_builtin_peas (void)
{
  /* The child reads the environment its parent set. */
  g_autofree char *data_home = g_test_subprocess () ? g_strdup (g_get_user_data_dir ())
                                                    : test_make_tmp_dir ("perfmon-addon-peas-XXXXXX");
  g_autofree char *plugins = g_build_filename (data_home, "app", "plugins", NULL);
  g_autofree char *system_plugins = g_build_filename (data_home, "system", "share", "app", "plugins", NULL);
  g_autofree char *linked_app = g_build_filename (data_home, "elsewhere", "linked-app", NULL);
  g_autofree char *linked_plugins = g_build_filename (linked_app, "plugins", NULL);
  g_autofree char *linked = g_build_filename (data_home, "linked-app", NULL);
  g_autofree char *library_app = g_build_filename (data_home, "elsewhere", "library-app", NULL);
  g_autofree char *library_plugins = g_build_filename (library_app, "plugins", NULL);
  g_autofree char *library_link = g_build_filename (data_home, "libapp.so.1", NULL);

  if (!g_test_subprocess ())
    {
      write_file (plugins, "spell", "spell.plugin", "[Plugin]\nModule=spell\nName=Spell checker\n");
      write_file (plugins, "spell", "libspell.so", "");
      write_file (plugins, ".", "flat.plugin", "[Plugin]\nLoader=python3\nModule=flat\nName=Flat one\n");
      write_file (plugins, ".", "flat.py", "");
      write_file (plugins, ".", "cflat.plugin", "[Plugin]\nModule=cflat\n");
      write_file (plugins, ".", "libcflat.so", "");
      write_file (plugins, "pkg", "__init__.py", "");
      write_file (plugins, ".", "pkg.plugin", "[Plugin]\nLoader=python3\nModule=pkg\nName=Package\n");
      /* Bad ones are skipped: no Module, a Module that is a path, no group. */
      write_file (plugins, ".", "nomodule.plugin", "[Plugin]\nName=Nothing\n");
      write_file (plugins, ".", "evil.plugin", "[Plugin]\nModule=../../etc\n");
      write_file (plugins, ".", "junk.plugin", "\xff\xfe not a key file");
      write_file (system_plugins, ".", "sys.plugin", "[Plugin]\nModule=sys\nName=System one\n");
      write_file (system_plugins, ".", "libsys.so", "");
      /* An application directory that is a symbolic link is looked into;
       * a link named like a shared library (a library directory has
       * hundreds, to files) is not. */
      write_file (linked_plugins, ".", "linked.plugin", "[Plugin]\nModule=linked\nName=Linked one\n");
      write_file (linked_plugins, ".", "liblinked.so", "");
      g_assert_no_errno (symlink (linked_app, linked));
      write_file (library_plugins, ".", "libname.plugin", "[Plugin]\nModule=libname\n");
      write_file (library_plugins, ".", "liblibname.so", "");
      g_assert_no_errno (symlink (library_app, library_link));
    }

  if (g_test_subprocess ())
    {
      g_autofree char *file = NULL;
      g_autofree char *id = NULL;
      g_autofree char *name = NULL;
      g_autofree char *inside = NULL;

      perfmon_addon_rule_clear ();
      perfmon_addon_rule_add_builtin ();
      file = g_build_filename (plugins, "spell", "libspell.so", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, &inside));
      g_assert_cmpstr (id, ==, "spell");
      g_assert_cmpstr (name, ==, "Spell checker");
      g_assert_cmpstr (inside, ==, "spell/libspell.so");
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&inside, g_free);
      g_clear_pointer (&file, g_free);

      file = g_build_filename (plugins, "flat.py", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, &inside));
      g_assert_cmpstr (id, ==, "flat");
      g_assert_cmpstr (name, ==, "Flat one");
      g_assert_cmpstr (inside, ==, "flat.py");
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&file, g_free);

      file = g_build_filename (plugins, "libcflat.so", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, NULL));
      g_assert_cmpstr (id, ==, "cflat");
      g_assert_cmpstr (name, ==, "cflat");   /* no Name: the module */
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&file, g_free);

      file = g_build_filename (plugins, "pkg", "__init__.py", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, NULL, NULL));
      g_assert_cmpstr (id, ==, "pkg");
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&file, g_free);

      file = g_build_filename (system_plugins, "libsys.so", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, NULL));
      g_assert_cmpstr (id, ==, "sys");
      g_assert_cmpstr (name, ==, "System one");
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&file, g_free);

      file = g_build_filename (linked, "plugins", "liblinked.so", NULL);
      g_assert_true (perfmon_addon_rule_match (file, &id, &name, NULL));
      g_assert_cmpstr (id, ==, "linked");
      g_assert_cmpstr (name, ==, "Linked one");
      g_clear_pointer (&id, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&file, g_free);
      file = g_build_filename (library_link, "plugins", "liblibname.so", NULL);
      g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));
      g_clear_pointer (&file, g_free);

      /* Other files of the plugin directory belong to no plugin. */
      file = g_build_filename (plugins, "other.py", NULL);
      g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));
      g_clear_pointer (&file, g_free);
      file = g_build_filename (plugins, "flat.pyc", NULL);
      g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));
      g_clear_pointer (&file, g_free);
      file = g_build_filename (data_home, "etc", "x.so", NULL);
      g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));

      /* Cleared like the others, added again on demand. */
      perfmon_addon_rule_clear ();
      g_clear_pointer (&file, g_free);
      file = g_build_filename (plugins, "flat.py", NULL);
      g_assert_false (perfmon_addon_rule_match (file, NULL, NULL, NULL));
      perfmon_addon_rule_add_builtin ();
      g_assert_true (perfmon_addon_rule_match (file, NULL, NULL, NULL));
      perfmon_addon_rule_clear ();
      return;
    }
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);
  {
    g_autofree char *system_data = g_build_filename (data_home, "system", "share", NULL);
    g_autofree char *data_dirs = g_strconcat (system_data, ":/usr/share", NULL);

    g_setenv ("XDG_DATA_DIRS", data_dirs, TRUE);
  }
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
  g_test_add_func ("/addon-rules/builtin-peas", test_builtin_peas);
  g_test_add_func ("/addon-rules/bad-input", test_bad_input);
  g_test_add_func ("/addon-rules/spec", test_spec);
  return g_test_run ();
}
