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
 * The rules are process-wide, behind a mutex: they are consulted when code
 * creates a source or connects a handler, never per dispatch. Adding a
 * per-directory rule reads the metadata files then, on the caller's thread
 * (at set-up, before the watched loop runs): matching never touches a file.
 */
#include "config.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "perfmon-addon-rules.h"
#include "perfmon-error.h"
#include "perfmon-utf8.h"

#define PREFIX_MAX 4096
#define METADATA_MAX (64 * 1024)
#define SCANNED_MAX 1024

typedef struct
{
  char       *prefix;     /* no trailing '/' (but "/" itself) */
  char       *addon_id;   /* NULL: one add-on per directory */
  char       *name;
  GHashTable *names;      /* per directory: id → name from metadata.json */
} Rule;

static GMutex lock;
static GPtrArray *rules;      /* of Rule */
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
      name = read_metadata_name (path);
      if (name != NULL)
        g_hash_table_insert (names, g_strdup (entry), name);
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

/**
 * perfmon_addon_rule_add_builtin:
 *
 * Adds the built-in rules, once per process: GNOME Shell extensions, user
 * (`$XDG_DATA_HOME/gnome-shell/extensions/UUID/`) and system
 * (`gnome-shell/extensions/UUID/` in each of `$XDG_DATA_DIRS`), one add-on
 * per extension: its id is its uuid, its name that of its
 * `metadata.json`. Reads those directories now. `perfmon run` adds them in
 * every process it runs.
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
  builtin_added = FALSE;
  g_mutex_unlock (&lock);
}
