/* perfmon-addon-rules.c: which add-on a code location belongs to
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One mechanism for every add-on system (doc/addons.md): a rule maps a
 * code location, the path of a script or module, to an add-on. A rule is
 * a path prefix, matched at a path component's boundary, and either
 * - a fixed add-on (id, name): everything under the prefix is that add-on;
 * - or "one add-on per directory": the first component under the prefix
 *   is the add-on's id, as GNOME Shell extensions are laid out
 *   (…/gnome-shell/extensions/UUID/extension.js); the name comes from the
 *   directory's metadata.json ("name"), read when the rule is added, or is
 *   the id for a directory that was not there then.
 * The longest matching prefix wins. Locations may be paths or file:// URIs
 * (GJS names ES modules by URI); other URIs (resource:///) match rules of
 * their own form.
 *
 * The built-in rules of libpeas plugins are fixed rules too, one per
 * plugin found when they are added (see add_peas_plugins()), kept in a
 * table by prefix rather than in the list: a system can hold hundreds of
 * plugins, which neither count towards PERFMON_ADDON_RULES_MAX nor make
 * matching walk them all (a location's parent directories are looked up).
 *
 * The rules are process-wide, behind a mutex: they are consulted when code
 * creates a source or connects a handler, never per dispatch. Adding a
 * per-directory rule reads the metadata files then, on the caller's thread
 * (at set-up, before the watched loop runs): matching never touches a file.
 */
#define _GNU_SOURCE 1  /* dladdr() */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "perfmon-addon-rules.h"
#include "perfmon-addon-rules-private.h"
#include "perfmon-error.h"
#include "perfmon-utf8.h"

#define PREFIX_MAX 4096
#define METADATA_MAX (64 * 1024)
#define SCANNED_MAX 1024
/* libpeas: application directories looked at per base directory (a
 * multiarch library directory holds well over a thousand entries), and
 * plugins kept. */
#define PEAS_APPS_MAX 4096
#define PEAS_PLUGINS_MAX 1024

typedef struct
{
  char       *prefix;     /* no trailing '/' (but "/" itself) */
  char       *addon_id;   /* NULL: one add-on per directory */
  char       *name;
  GHashTable *names;      /* per directory: id → name from metadata.json */
} Rule;

static GMutex lock;
static GPtrArray *rules;      /* of Rule */
static GHashTable *peas_rules; /* prefix → Rule (fixed): libpeas plugins */
static gboolean builtin_added;

static void
rule_free (gpointer data)
{
  Rule *rule = data;

  g_free (rule->prefix);
  g_free (rule->addon_id);
  g_free (rule->name);
  g_clear_pointer (&rule->names, g_hash_table_unref);
  g_free (rule);
}

static char *
cut_name (const char *text)
{
  g_autofree char *valid = g_utf8_make_valid (text, MIN (strlen (text), PERFMON_ADDON_ID_MAX * 4));

  valid[_perfmon_utf8_cut (valid, strlen (valid), PERFMON_ADDON_ID_MAX)] = '\0';
  return g_steal_pointer (&valid);
}

/* The "name" of @directory/metadata.json, or NULL. */
static char *
read_metadata_name (const char *directory)
{
  g_autofree char *path = g_build_filename (directory, "metadata.json", NULL);
  g_autofree char *contents = NULL;
  g_autoptr(JsonParser) parser = NULL;
  gsize length = 0;
  JsonNode *root;
  JsonObject *object;
  const char *name;

  if (!g_file_get_contents (path, &contents, &length, NULL) || length > METADATA_MAX)
    return NULL;
  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, contents, (gssize) length, NULL))
    return NULL;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  object = json_node_get_object (root);
  if (!json_object_has_member (object, "name") ||
      json_node_get_value_type (json_object_get_member (object, "name")) != G_TYPE_STRING)
    return NULL;
  name = json_object_get_string_member (object, "name");
  if (name == NULL || *name == '\0')
    return NULL;
  return cut_name (name);
}

static GHashTable *
scan_directories (const char *prefix)
{
  GHashTable *names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GDir) dir = g_dir_open (prefix, 0, NULL);
  const char *entry;
  guint seen = 0;

  if (dir == NULL)
    return names;
  while ((entry = g_dir_read_name (dir)) != NULL && seen++ < SCANNED_MAX)
    {
      g_autofree char *path = g_build_filename (prefix, entry, NULL);
      char *name;

      if (!g_utf8_validate (entry, -1, NULL) || strlen (entry) > PERFMON_ADDON_ID_MAX ||
          !g_file_test (path, G_FILE_TEST_IS_DIR))
        continue;
      /* Every directory is an add-on known now, named or not. */
      name = read_metadata_name (path);
      g_hash_table_insert (names, g_strdup (entry), name != NULL ? name : cut_name (entry));
    }
  return names;
}

/* @location as a path if it is a file:// URI, else itself. */
static char *
normalize (const char *location)
{
  if (g_str_has_prefix (location, "file://"))
    {
      char *path = g_filename_from_uri (location, NULL, NULL);

      if (path != NULL)
        return path;
    }
  return g_strdup (location);
}

static gboolean
check_text (const char  *what,
            const char  *text,
            gsize        max,
            GError     **error)
{
  if (text == NULL || *text == '\0' || !g_utf8_validate (text, -1, NULL) || strlen (text) > max)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "“%s” must be non-empty UTF-8 of at most %" G_GSIZE_FORMAT " bytes", what, max);
      return FALSE;
    }
  return TRUE;
}

/**
 * perfmon_addon_rule_add:
 * @prefix: a code location: an absolute path, or a URI such as
 *   `file:///…` or `resource:///…`, of a directory or a file
 * @addon_id: (nullable): the add-on everything under @prefix belongs to,
 *   or %NULL for one add-on per directory directly under @prefix (its id
 *   is the directory's name)
 * @name: (nullable): the add-on's name (for a fixed @addon_id; %NULL: the
 *   id). Ignored without @addon_id: each directory's name is the `name`
 *   of its `metadata.json`, read now, or its id.
 * @error: return location for a #GError
 *
 * Adds a rule that maps code under @prefix to an add-on: sources created
 * and signal handlers connected while that code is on the stack (see
 * `doc/addons.md`) are charged to the add-on's group. @prefix matches at
 * a path component's boundary (`/a/b` matches `/a/b/c.js`, not
 * `/a/bc.js`); the longest matching prefix wins. Any thread.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT
 *   naming the bad parameter, %PERFMON_ERROR_LIMIT_REACHED past
 *   %PERFMON_ADDON_RULES_MAX rules)
 *
 * Since: 0.3
 */
gboolean
perfmon_addon_rule_add (const char  *prefix,
                        const char  *addon_id,
                        const char  *name,
                        GError     **error)
{
  g_autofree char *normal = NULL;
  Rule *rule;
  gsize length;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_text ("prefix", prefix, PREFIX_MAX, error))
    return FALSE;
  normal = normalize (prefix);
  if (normal[0] != '/' && strstr (normal, ":/") == NULL)
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "“prefix” must be an absolute path or a URI");
      return FALSE;
    }
  if (addon_id != NULL && !check_text ("addon_id", addon_id, PERFMON_ADDON_ID_MAX, error))
    return FALSE;
  if (addon_id != NULL && name != NULL && !check_text ("name", name, PERFMON_ADDON_ID_MAX, error))
    return FALSE;

  length = strlen (normal);
  while (length > 1 && normal[length - 1] == '/')
    normal[--length] = '\0';

  rule = g_new0 (Rule, 1);
  rule->prefix = g_steal_pointer (&normal);
  if (addon_id != NULL)
    {
      rule->addon_id = g_strdup (addon_id);
      rule->name = g_strdup (name != NULL ? name : addon_id);
    }
  else
    rule->names = scan_directories (rule->prefix);

  g_mutex_lock (&lock);
  if (rules == NULL)
    rules = g_ptr_array_new_with_free_func (rule_free);
  if (rules->len >= PERFMON_ADDON_RULES_MAX)
    {
      g_mutex_unlock (&lock);
      rule_free (rule);
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED,
                   "the process has %d add-on rules already", PERFMON_ADDON_RULES_MAX);
      return FALSE;
    }
  g_ptr_array_add (rules, rule);
  g_mutex_unlock (&lock);
  return TRUE;
}

/**
 * perfmon_addon_rule_add_spec:
 * @spec: `PREFIX` or `PREFIX=NAME`, as `perfmon run --addon-path` takes it
 * @error: return location for a #GError
 *
 * Adds the rule @spec describes: `PREFIX=NAME`, everything under PREFIX
 * is the add-on NAME (its id and its name); `PREFIX` alone, one add-on per
 * directory under PREFIX (see [func@Perfmon.addon_rule_add]). The last
 * `=` separates NAME, unless what follows it holds a `/`.
 *
 * Returns: %TRUE, or %FALSE with @error set
 *
 * Since: 0.3
 */
gboolean
perfmon_addon_rule_add_spec (const char  *spec,
                             GError     **error)
{
  const char *equal;
  g_autofree char *prefix = NULL;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_text ("addon-path", spec, PREFIX_MAX + 1 + PERFMON_ADDON_ID_MAX, error))
    return FALSE;
  equal = strrchr (spec, '=');
  if (equal == NULL || strchr (equal, '/') != NULL)
    return perfmon_addon_rule_add (spec, NULL, NULL, error);
  prefix = g_strndup (spec, equal - spec);
  return perfmon_addon_rule_add (prefix, equal + 1, NULL, error);
}

/* libpeas plugins (libpeas 1.x, peas-engine.c and peas-plugin-info.c): an
 * application adds search paths, "module directories", in which libpeas
 * reads every NAME.plugin file (a key file, group [Plugin]: Module, Name,
 * Loader), directly and one level down; the plugin's module lies in the
 * directory of its .plugin: libMODULE.so for the C loader, MODULE.py or
 * the package MODULE/ for the Python loader, MODULE.js, MODULE.lua for the
 * others. Applications put those directories in their library directory
 * (/usr/lib/x86_64-linux-gnu/gedit/plugins) and in the user's data
 * directory (~/.local/share/gedit/plugins): the built-in rules look in
 * APP/plugins under the library directories and the data directories. */

static void
add_peas_rule (GHashTable *table,
               const char *prefix,
               const char *addon_id,
               const char *name)
{
  Rule *rule;

  if (g_hash_table_contains (table, prefix) || g_hash_table_size (table) >= PEAS_PLUGINS_MAX)
    return;
  rule = g_new0 (Rule, 1);
  rule->prefix = g_strdup (prefix);
  rule->addon_id = g_strdup (addon_id);
  rule->name = g_strdup (name);
  g_hash_table_insert (table, rule->prefix, rule);
}

/* The rules of the plugin that @plugin_file describes; @own_dir: its
 * directory is the plugin's alone. */
static void
add_peas_plugin (GHashTable *table,
                 const char *dir,
                 const char *plugin_file,
                 gboolean    own_dir)
{
  /* Before and after the module's name. */
  static const char * const module_files[][2] = {
    { "lib", ".so" }, { "", ".py" }, { "", "" }, { "", ".js" }, { "", ".lua" },
  };
  g_autoptr(GKeyFile) key_file = g_key_file_new ();
  g_autofree char *contents = NULL;
  g_autofree char *module = NULL;
  g_autofree char *plugin_name = NULL;
  g_autofree char *name = NULL;
  gsize length = 0;

  if (!g_file_get_contents (plugin_file, &contents, &length, NULL) || length > METADATA_MAX ||
      !g_key_file_load_from_data (key_file, contents, length, G_KEY_FILE_NONE, NULL))
    return;
  module = g_key_file_get_string (key_file, "Plugin", "Module", NULL);
  /* An id, and a file name in @dir: never a path. */
  if (module == NULL || *module == '\0' || !g_utf8_validate (module, -1, NULL) ||
      strlen (module) > PERFMON_ADDON_ID_MAX || strchr (module, '/') != NULL ||
      g_str_equal (module, ".") || g_str_equal (module, ".."))
    return;
  plugin_name = g_key_file_get_string (key_file, "Plugin", "Name", NULL);
  name = plugin_name != NULL && *plugin_name != '\0' ? cut_name (plugin_name) : g_strdup (module);

  if (own_dir)
    {
      add_peas_rule (table, dir, module, name);
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (module_files); i++)
    {
      g_autofree char *file = g_strconcat (module_files[i][0], module, module_files[i][1], NULL);
      g_autofree char *path = g_build_filename (dir, file, NULL);

      if (g_file_test (path, G_FILE_TEST_EXISTS))
        add_peas_rule (table, path, module, name);
    }
}

/* The plugins in @plugins_dir, a module directory of libpeas. */
static void
scan_peas_plugins (GHashTable *table,
                   const char *plugins_dir)
{
  g_autoptr(GDir) dir = g_dir_open (plugins_dir, 0, NULL);
  const char *entry;
  guint seen = 0;

  if (dir == NULL)
    return;
  while ((entry = g_dir_read_name (dir)) != NULL && seen++ < SCANNED_MAX)
    {
      g_autofree char *path = g_build_filename (plugins_dir, entry, NULL);

      if (g_str_has_suffix (entry, ".plugin"))
        {
          if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
            add_peas_plugin (table, plugins_dir, path, FALSE);
        }
      else if (g_file_test (path, G_FILE_TEST_IS_DIR))
        {
          g_autoptr(GDir) subdir = g_dir_open (path, 0, NULL);
          const char *sub_entry;
          guint sub_seen = 0;

          while (subdir != NULL && (sub_entry = g_dir_read_name (subdir)) != NULL && sub_seen++ < SCANNED_MAX)
            if (g_str_has_suffix (sub_entry, ".plugin"))
              {
                g_autofree char *plugin_file = g_build_filename (path, sub_entry, NULL);

                if (g_file_test (plugin_file, G_FILE_TEST_IS_REGULAR))
                  add_peas_plugin (table, path, plugin_file, TRUE);
              }
        }
    }
}

/* Whether @name is a shared library's ("libfoo.so", "libfoo.so.1.2"):
 * in a library directory most entries are symbolic links named so, to
 * the library's file, never an application's directory. */
static gboolean
is_library_name (const char *name)
{
  const char *so = strstr (name, ".so");

  return g_str_has_prefix (name, "lib") && so != NULL && (so[3] == '\0' || so[3] == '.');
}

/* Every BASE/APP/plugins. A library directory holds thousands of files
 * and a few dozen directories: only directories (by the entry's type,
 * when the file system gives it) and symbolic links that are not a
 * library's are looked into. Debian's multiarch directory has some 800
 * such links, each a failed stat() of a start-up that every process of
 * perfmon run pays (tests/bench/bench-run.py, "start-up"). */
static void
scan_peas_applications (GHashTable *table,
                        const char *base)
{
  DIR *dir;
  struct dirent *entry;
  guint seen = 0;

  if (!g_path_is_absolute (base) || !g_utf8_validate (base, -1, NULL) || strlen (base) > PREFIX_MAX)
    return;
  dir = opendir (base);
  if (dir == NULL)
    return;
  while ((entry = readdir (dir)) != NULL && seen++ < PEAS_APPS_MAX)
    {
      g_autofree char *plugins = NULL;

      if (entry->d_name[0] == '.' ||
          (entry->d_type != DT_DIR && entry->d_type != DT_LNK && entry->d_type != DT_UNKNOWN) ||
          (entry->d_type == DT_LNK && is_library_name (entry->d_name)) ||
          !g_utf8_validate (entry->d_name, -1, NULL))
        continue;
      plugins = g_build_filename (base, entry->d_name, "plugins", NULL);
      if (g_file_test (plugins, G_FILE_TEST_IS_DIR))
        scan_peas_plugins (table, plugins);
    }
  closedir (dir);
}

/* The library directory GLib was loaded from (a multiarch one on Debian),
 * or NULL. */
static char *
glib_library_dir (void)
{
  Dl_info info;

  if (dladdr ((gconstpointer) g_main_context_default, &info) == 0 || info.dli_fname == NULL ||
      !g_path_is_absolute (info.dli_fname))
    return NULL;
  return g_path_get_dirname (info.dli_fname);
}

static GHashTable *
find_peas_plugins (void)
{
  GHashTable *table = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, rule_free);
  const char * const *system_dirs = g_get_system_data_dirs ();
  g_autoptr(GPtrArray) bases = g_ptr_array_new_with_free_func (g_free);
  char *glib_dir = glib_library_dir ();

  g_ptr_array_add (bases, g_strdup (g_get_user_data_dir ()));
  for (guint i = 0; system_dirs[i] != NULL; i++)
    g_ptr_array_add (bases, g_strdup (system_dirs[i]));
  if (glib_dir != NULL)
    g_ptr_array_add (bases, glib_dir);
  g_ptr_array_add (bases, g_strdup ("/usr/lib"));
  g_ptr_array_add (bases, g_strdup ("/usr/local/lib"));
  for (guint i = 0; i < bases->len; i++)
    {
      gboolean again = FALSE;

      for (guint j = 0; j < i && !again; j++)
        again = g_str_equal (g_ptr_array_index (bases, i), g_ptr_array_index (bases, j));
      if (!again)
        scan_peas_applications (table, g_ptr_array_index (bases, i));
    }
  return table;
}

/**
 * perfmon_addon_rule_add_builtin:
 *
 * Adds the built-in rules, once per process: GNOME Shell extensions, user
 * (`$XDG_DATA_HOME/gnome-shell/extensions/UUID/`) and system
 * (`gnome-shell/extensions/UUID/` in each of `$XDG_DATA_DIRS`), one add-on
 * per extension: its id is its uuid, its name that of its
 * `metadata.json`; and libpeas plugins, in `APP/plugins/` under the
 * user's and the system's data directories and the library directories
 * (`/usr/lib`, GLib's, `/usr/local/lib`), one add-on per `.plugin` file:
 * its id is the plugin's `Module`, its name the plugin's `Name`; a plugin
 * in a directory of its own is everything under it, plugins side by side
 * are their module files (`libMODULE.so`, `MODULE.py`, `MODULE/`,
 * `MODULE.js`, `MODULE.lua`). A C plugin's code is matched by the module
 * its callbacks lie in, a Python plugin's by its callables' files.
 *
 * Reads those directories now. `perfmon run` adds them in every process
 * it runs that has GJS or libpeas (in one that loads libpeas later, as it
 * makes its first engine).
 *
 * Since: 0.3
 */
void
perfmon_addon_rule_add_builtin (void)
{
  const char * const *system_dirs = g_get_system_data_dirs ();
  g_autoptr(GPtrArray) prefixes = g_ptr_array_new_with_free_func (g_free);

  g_mutex_lock (&lock);
  if (builtin_added)
    {
      g_mutex_unlock (&lock);
      return;
    }
  builtin_added = TRUE;
  g_mutex_unlock (&lock);

  g_ptr_array_add (prefixes, g_build_filename (g_get_user_data_dir (), "gnome-shell", "extensions", NULL));
  for (guint i = 0; system_dirs[i] != NULL; i++)
    if (g_path_is_absolute (system_dirs[i]))
      g_ptr_array_add (prefixes, g_build_filename (system_dirs[i], "gnome-shell", "extensions", NULL));
  for (guint i = 0; i < prefixes->len; i++)
    {
      const char *prefix = g_ptr_array_index (prefixes, i);

      /* Paths of the environment: a bad one is skipped, not an error. */
      if (g_utf8_validate (prefix, -1, NULL) && strlen (prefix) <= PREFIX_MAX)
        perfmon_addon_rule_add (prefix, NULL, NULL, NULL);
    }

  {
    GHashTable *peas = find_peas_plugins ();

    g_mutex_lock (&lock);
    g_clear_pointer (&peas_rules, g_hash_table_unref);
    peas_rules = peas;
    g_mutex_unlock (&lock);
  }
}

/* Whether @path lies under @prefix, at a component boundary; the rest
 * after the separator in *@rest. */
static gboolean
under (const char  *path,
       const char  *prefix,
       const char **rest)
{
  gsize length = strlen (prefix);

  if (strncmp (path, prefix, length) != 0)
    return FALSE;
  if (path[length] == '\0')
    {
      *rest = path + length;
      return TRUE;
    }
  if (path[length] == '/' || (length > 0 && prefix[length - 1] == '/'))
    {
      *rest = path + length + (path[length] == '/' ? 1 : 0);
      return TRUE;
    }
  return FALSE;
}

/**
 * perfmon_addon_rule_match:
 * @location: a code location: a script's or module's path, or its URI
 * @addon_id: (out) (optional) (transfer full): the add-on's id
 * @name: (out) (optional) (transfer full): the add-on's name
 * @path_in_addon: (out) (optional) (transfer full): @location as a path
 *   under the add-on, starting with its id (`UUID/extension.js`) for a
 *   per-directory rule, or with the fixed id's last prefix component
 *
 * Finds the add-on that @location belongs to by the rules (see
 * [func@Perfmon.addon_rule_add]). Reads no file. Any thread.
 *
 * Returns: %TRUE if a rule matches
 *
 * Since: 0.3
 */
gboolean
perfmon_addon_rule_match (const char  *location,
                          char       **addon_id,
                          char       **name,
                          char       **path_in_addon)
{
  g_autofree char *path = NULL;
  const Rule *best = NULL;
  const char *best_rest = NULL;
  g_autofree char *id = NULL;
  g_autofree char *found_name = NULL;
  g_autofree char *inside = NULL;

  g_return_val_if_fail (location != NULL, FALSE);

  path = normalize (location);
  g_mutex_lock (&lock);
  for (guint i = 0; rules != NULL && i < rules->len; i++)
    {
      const Rule *rule = g_ptr_array_index (rules, i);
      const char *rest;

      if (!under (path, rule->prefix, &rest))
        continue;
      /* A per-directory rule needs a directory under it. */
      if (rule->addon_id == NULL && (*rest == '\0' || strchr (rest, '/') == NULL))
        continue;
      if (best == NULL || strlen (rule->prefix) > strlen (best->prefix))
        {
          best = rule;
          best_rest = rest;
        }
    }
  /* libpeas plugins: @path itself, then its parent directories; the
   * first found is the longest. */
  if (peas_rules != NULL && g_hash_table_size (peas_rules) > 0 && path[0] == '/')
    {
      g_autofree char *parent = g_strdup (path);
      char *slash = parent + strlen (parent);

      while (slash != NULL && slash > parent)
        {
          const Rule *rule;
          const char *rest;

          *slash = '\0';
          rule = g_hash_table_lookup (peas_rules, parent);
          if (rule != NULL && (best == NULL || strlen (rule->prefix) > strlen (best->prefix)) &&
              under (path, rule->prefix, &rest))
            {
              best = rule;
              best_rest = rest;
              break;
            }
          if (rule != NULL)
            break;
          slash = strrchr (parent, '/');
        }
    }
  if (best != NULL)
    {
      if (best->addon_id != NULL)
        {
          const char *base = strrchr (best->prefix, '/');

          id = g_strdup (best->addon_id);
          found_name = g_strdup (best->name);
          base = base != NULL && base[1] != '\0' ? base + 1 : best->prefix;
          inside = *best_rest != '\0' ? g_strconcat (base, "/", best_rest, NULL) : g_strdup (base);
        }
      else
        {
          const char *slash = strchr (best_rest, '/');
          g_autofree char *component = g_strndup (best_rest, slash - best_rest);
          const char *known;

          id = cut_name (component);
          known = g_hash_table_lookup (best->names, id);
          found_name = g_strdup (known != NULL ? known : id);
          inside = g_strdup (best_rest);
        }
    }
  g_mutex_unlock (&lock);

  if (best == NULL)
    return FALSE;
  if (addon_id != NULL)
    *addon_id = g_steal_pointer (&id);
  if (name != NULL)
    *name = g_steal_pointer (&found_name);
  if (path_in_addon != NULL)
    *path_in_addon = g_steal_pointer (&inside);
  return TRUE;
}

/* See perfmon-addon-rules-private.h. */
gboolean
_perfmon_addon_rules_any_known (void)
{
  gboolean known = FALSE;

  g_mutex_lock (&lock);
  for (guint i = 0; rules != NULL && i < rules->len && !known; i++)
    {
      const Rule *rule = g_ptr_array_index (rules, i);

      known = rule->addon_id != NULL || g_hash_table_size (rule->names) > 0;
    }
  known = known || (peas_rules != NULL && g_hash_table_size (peas_rules) > 0);
  g_mutex_unlock (&lock);
  return known;
}

/**
 * perfmon_addon_rule_clear:
 *
 * Removes every rule, the built-in ones included (a later
 * [func@Perfmon.addon_rule_add_builtin] adds them again). Groups already
 * charged stay as they are.
 *
 * Since: 0.3
 */
void
perfmon_addon_rule_clear (void)
{
  g_mutex_lock (&lock);
  g_clear_pointer (&rules, g_ptr_array_unref);
  g_clear_pointer (&peas_rules, g_hash_table_unref);
  builtin_added = FALSE;
  g_mutex_unlock (&lock);
}
