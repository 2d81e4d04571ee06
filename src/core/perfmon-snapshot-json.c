/* perfmon-snapshot-json.c: a snapshot's JSON form, written and read
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The format is described in the documentation of PerfmonSnapshot
 * (perfmon-snapshot.c). As json-glib splits its generator and parser, the
 * writer and the reader are two sections here, sharing only the format.
 */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "perfmon-error.h"
#include "perfmon-json-private.h"
#include "perfmon-snapshot-private.h"

/* A snapshot nests four levels deep; see _perfmon_json_prescan(). */
#define MAX_JSON_DEPTH 128

/* --- Writer -------------------------------------------------------------- */

/* JsonBuilder would build a tree of some 150,000 nodes, with a hash table
 * per group, for a snapshot of 10,000 groups, and take three times the
 * 20 ms budget of snapshot + subtract + to_json. The format is flat and
 * fixed, so it is written straight into one buffer: room for a whole
 * group is made at once (reserve()), then bytes are stored through a
 * pointer, with no check per byte. Reading stays with json-glib, and the
 * fuzz targets check that json-glib reads back exactly what is written
 * here. */

/* The most a number takes: 20 digits and two quotes. */
#define MAX_U64_SIZE 22
/* The most a string takes, per byte of text: "\u001f". */
#define MAX_ESCAPED_SIZE 6

typedef struct
{
  char  *data;
  gsize  length;
  gsize  size;
} Writer;

/* A pointer to room for @n more bytes, where the caller writes and then
 * calls commit(). */
static char *
reserve (Writer *writer,
         gsize   n)
{
  if (writer->size - writer->length < n)
    {
      writer->size = MAX (writer->size * 2, writer->length + n);
      writer->data = g_realloc (writer->data, writer->size);
    }

  return writer->data + writer->length;
}

static void
commit (Writer *writer,
        char   *end)
{
  writer->length = (gsize) (end - writer->data);
}

#define PUT_LITERAL(p, literal) \
  (memcpy ((p), (literal), sizeof (literal) - 1), (p) + sizeof (literal) - 1)

static char *
put_u64_digits (char    *p,
                guint64  value)
{
  char digits[20];
  int n = 0;

  do
    {
      digits[n++] = (char) ('0' + value % 10);
      value /= 10;
    }
  while (value != 0);

  while (n > 0)
    *p++ = digits[--n];

  return p;
}

/* JSON integers of json-glib are signed 64-bit numbers: larger values are
 * written as strings of decimal digits. At most MAX_U64_SIZE bytes. */
static char *
put_u64 (char    *p,
         guint64  value)
{
  if (value <= G_MAXINT64)
    return put_u64_digits (p, value);

  *p++ = '"';
  p = put_u64_digits (p, value);
  *p++ = '"';
  return p;
}

/* @text is valid UTF-8 (checked where groups are made and read): only the
 * characters JSON requires are escaped, as json-glib's generator does. At
 * most 2 + MAX_ESCAPED_SIZE * strlen (@text) bytes. */
static char *
put_string (char       *p,
            const char *text)
{
  static const char hex[] = "0123456789abcdef";

  *p++ = '"';
  for (const char *t = text; *t != '\0'; t++)
    {
      guchar c = (guchar) *t;

      if (G_LIKELY (c >= 0x20 && c != '"' && c != '\\'))
        {
          *p++ = (char) c;
          continue;
        }

      *p++ = '\\';
      switch (c)
        {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
          p = PUT_LITERAL (p, "u00");
          *p++ = hex[c >> 4];
          *p++ = hex[c & 0xf];
          break;
        }
    }
  *p++ = '"';

  return p;
}

static gsize
max_string_size (const char *text)
{
  return 2 + MAX_ESCAPED_SIZE * strlen (text);
}

static void
write_group (Writer                  *writer,
             const PerfmonGroupStats *stats)
{
  /* Valid snapshots only hold valid kinds; see validate_group(). */
  const char *kind = perfmon_group_kind_to_string (stats->kind);
  /* The member names and punctuation, then the values. */
  gsize size = 160 + (7 + PERFMON_N_DURATIONS) * MAX_U64_SIZE +
               max_string_size (kind) + max_string_size (stats->name) +
               (stats->addon_id != NULL ? max_string_size (stats->addon_id) : 4);
  char *p = reserve (writer, size);

  p = PUT_LITERAL (p, "{\"id\":");
  p = put_u64 (p, stats->id);
  p = PUT_LITERAL (p, ",\"kind\":");
  p = put_string (p, kind);
  p = PUT_LITERAL (p, ",\"name\":");
  p = put_string (p, stats->name);
  p = PUT_LITERAL (p, ",\"window_id\":");
  p = put_u64 (p, stats->window_id);
  p = PUT_LITERAL (p, ",\"addon_id\":");
  if (stats->addon_id != NULL)
    p = put_string (p, stats->addon_id);
  else
    p = PUT_LITERAL (p, "null");
  p = PUT_LITERAL (p, ",\"cpu_time\":");
  p = put_u64 (p, stats->cpu_time);
  p = PUT_LITERAL (p, ",\"blocked_time\":");
  p = put_u64 (p, stats->blocked_time);
  /* Add-on groups only, and only when not 0: an estimate, apart from the
   * exact cpu_time. */
  if (stats->sampled_cpu_time != 0)
    {
      p = PUT_LITERAL (p, ",\"sampled_cpu_time\":");
      p = put_u64 (p, stats->sampled_cpu_time);
    }
  p = PUT_LITERAL (p, ",\"ticks\":");
  p = put_u64 (p, stats->ticks);
  p = PUT_LITERAL (p, ",\"durations\":[");
  for (guint i = 0; i < PERFMON_N_DURATIONS; i++)
    {
      if (i > 0)
        *p++ = ',';
      p = put_u64 (p, stats->durations[i]);
    }
  p = PUT_LITERAL (p, "]}");

  commit (writer, p);
}

/**
 * perfmon_snapshot_to_json:
 * @self: a `PerfmonSnapshot`
 *
 * Serializes @self to compact JSON, in the format described in
 * [class@Perfmon.Snapshot]. The output depends only on the contents of the
 * snapshot: equal snapshots give identical strings.
 *
 * Returns: (transfer full): a JSON document
 *
 * Since: 0.1
 */
char *
perfmon_snapshot_to_json (PerfmonSnapshot *self)
{
  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  return _perfmon_snapshot_to_json_with_modules (self, self->modules);
}

char *
_perfmon_snapshot_to_json_with_modules (PerfmonSnapshot *self,
                                        GPtrArray       *modules)
{
  Writer writer = { NULL, 0, 0 };
  char *p;

  /* About 190 bytes per group: one allocation, rarely two. 256 bytes
   * per group also keeps a large snapshot from faulting its pages in
   * afresh at every round: glibc serves this buffer with mmap() the first
   * time and, once it is freed, raises its trim threshold to twice its
   * size, above what a snapshot and its difference free (2 x 190 bytes a
   * group). With 192 bytes a group, 100,000 groups cost 9,000 page faults
   * per snapshot + subtract + to_json (the heap given back to the kernel
   * and taken again), with 256 none (bench-accounting figure 6). */
  writer.size = 256 + 256 * (gsize) self->groups->len;
  writer.data = g_malloc (writer.size);

  p = reserve (&writer, 160 + 7 * MAX_U64_SIZE + max_string_size (self->process_name));
  p = PUT_LITERAL (p, "{\"version\":");
  p = put_u64 (p, PERFMON_SNAPSHOT_FORMAT_VERSION);
  p = PUT_LITERAL (p, ",\"timestamp\":");
  p = put_u64 (p, (guint64) self->timestamp);
  /* Not known: not written, as before wall times were. */
  if (self->wall_time != 0)
    {
      p = PUT_LITERAL (p, ",\"wall_time\":");
      p = put_u64 (p, (guint64) self->wall_time);
    }
  p = PUT_LITERAL (p, ",\"interval\":");
  p = put_u64 (p, (guint64) self->interval);
  p = PUT_LITERAL (p, ",\"pid\":");
  p = put_u64 (p, self->pid);
  p = PUT_LITERAL (p, ",\"process_name\":");
  p = put_string (p, self->process_name);
  p = PUT_LITERAL (p, ",\"user_time\":");
  p = put_u64 (p, self->user_time);
  p = PUT_LITERAL (p, ",\"system_time\":");
  p = put_u64 (p, self->system_time);
  p = PUT_LITERAL (p, ",\"groups\":[");
  commit (&writer, p);

  for (guint i = 0; i < self->groups->len; i++)
    {
      if (i > 0)
        {
          p = reserve (&writer, 1);
          *p++ = ',';
          commit (&writer, p);
        }
      write_group (&writer, g_ptr_array_index (self->groups, i));
    }

  /* None recorded: not written, as before modules were. */
  for (guint i = 0; modules != NULL && i < modules->len; i++)
    {
      const PerfmonRecordedModule *module = g_ptr_array_index (modules, i);

      p = reserve (&writer, 64 + MAX_U64_SIZE + max_string_size (module->name) +
                            max_string_size (module->path) + max_string_size (module->build_id));
      p = i == 0 ? PUT_LITERAL (p, "],\"modules\":[{\"name\":") : PUT_LITERAL (p, ",{\"name\":");
      p = put_string (p, module->name);
      p = PUT_LITERAL (p, ",\"path\":");
      p = put_string (p, module->path);
      p = PUT_LITERAL (p, ",\"base\":");
      p = put_u64 (p, module->base);
      p = PUT_LITERAL (p, ",\"build_id\":");
      p = put_string (p, module->build_id);
      *p++ = '}';
      commit (&writer, p);
    }

  p = reserve (&writer, 3);
  p = PUT_LITERAL (p, "]}");
  *p = '\0';
  commit (&writer, p);

  return writer.data;
}

/* --- Reader: untrusted input, checked in full ---------------------------- */

static JsonNode *
get_member (JsonObject  *object,
            const char  *prefix,
            const char  *member,
            GError     **error)
{
  JsonNode *node = json_object_get_member (object, member);

  if (node == NULL)
    _perfmon_snapshot_set_field_error (error, prefix, member, "missing required member");

  return node;
}

static gboolean
json_node_holds_type (JsonNode *node,
                      GType     type)
{
  return JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type;
}

/* A non-negative integer, or a string of decimal digits for the values
 * that JSON integers of json-glib cannot hold. */
static gboolean
read_u64 (JsonNode    *node,
          const char  *prefix,
          const char  *member,
          guint64     *value,
          GError     **error)
{
  if (json_node_holds_type (node, G_TYPE_INT64))
    {
      gint64 number = json_node_get_int (node);

      if (number < 0)
        return _perfmon_snapshot_set_field_error (error, prefix, member,
                                "expected a non-negative integer, got %" G_GINT64_FORMAT,
                                number);

      *value = (guint64) number;
      return TRUE;
    }

  if (json_node_holds_type (node, G_TYPE_STRING))
    {
      if (!g_ascii_string_to_unsigned (json_node_get_string (node), 10, 0, G_MAXUINT64,
                                       value, NULL))
        return _perfmon_snapshot_set_field_error (error, prefix, member,
                                "expected a non-negative integer, got a string that is not "
                                "a decimal number in [0, %" G_GUINT64_FORMAT "]",
                                G_MAXUINT64);

      return TRUE;
    }

  return _perfmon_snapshot_set_field_error (error, prefix, member,
                          "expected a non-negative integer, got %s",
                          _perfmon_json_describe_node (node));
}

static gboolean
read_u64_member (JsonObject  *object,
                 const char  *prefix,
                 const char  *member,
                 guint64     *value,
                 GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  return node != NULL && read_u64 (node, prefix, member, value, error);
}

static gboolean
read_i64_member (JsonObject  *object,
                 const char  *prefix,
                 const char  *member,
                 gint64      *value,
                 GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  if (node == NULL)
    return FALSE;

  if (!json_node_holds_type (node, G_TYPE_INT64))
    return _perfmon_snapshot_set_field_error (error, prefix, member, "expected an integer, got %s",
                            _perfmon_json_describe_node (node));

  *value = json_node_get_int (node);

  return TRUE;
}

static gboolean
read_string_member (JsonObject  *object,
                    const char  *prefix,
                    const char  *member,
                    gboolean     nullable,
                    char       **value,
                    GError     **error)
{
  JsonNode *node = get_member (object, prefix, member, error);

  if (node == NULL)
    return FALSE;

  if (nullable && JSON_NODE_HOLDS_NULL (node))
    {
      *value = NULL;
      return TRUE;
    }

  if (!json_node_holds_type (node, G_TYPE_STRING))
    return _perfmon_snapshot_set_field_error (error, prefix, member, "expected a string%s, got %s",
                            nullable ? " or null" : "", _perfmon_json_describe_node (node));

  *value = json_node_dup_string (node);

  return TRUE;
}

static gboolean
read_kind_member (JsonObject       *object,
                  const char       *prefix,
                  PerfmonGroupKind *kind,
                  GError          **error)
{
  g_autofree char *name = NULL;

  if (!read_string_member (object, prefix, "kind", FALSE, &name, error))
    return FALSE;

  if (_perfmon_snapshot_kind_from_name (name, kind))
    return TRUE;

  return _perfmon_snapshot_set_field_error (error, prefix, "kind",
                          "expected \"thread\", \"window\", \"addon\" or \"compartment\"");
}

static PerfmonGroupStats *
group_from_json (JsonNode  *node,
                 guint      index,
                 GError   **error)
{
  g_autoptr(PerfmonGroupStats) stats = NULL;
  g_autofree char *name = NULL;
  g_autofree char *addon_id = NULL;
  PerfmonGroupKind kind = PERFMON_GROUP_KIND_THREAD;
  guint64 id = 0, window_id = 0;
  JsonObject *object;
  JsonNode *durations_node;
  JsonArray *durations;
  char prefix[32];

  g_snprintf (prefix, sizeof prefix, "groups[%u]", index);

  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      _perfmon_snapshot_set_field_error (error, NULL, prefix, "expected an object, got %s", _perfmon_json_describe_node (node));
      return NULL;
    }

  object = json_node_get_object (node);

  if (!read_u64_member (object, prefix, "id", &id, error) ||
      !read_kind_member (object, prefix, &kind, error) ||
      !read_string_member (object, prefix, "name", FALSE, &name, error) ||
      !read_u64_member (object, prefix, "window_id", &window_id, error) ||
      !read_string_member (object, prefix, "addon_id", TRUE, &addon_id, error))
    return NULL;

  stats = _perfmon_group_stats_new (id, kind, name, window_id, addon_id);

  if (!read_u64_member (object, prefix, "cpu_time", &stats->cpu_time, error) ||
      !read_u64_member (object, prefix, "blocked_time", &stats->blocked_time, error) ||
      !read_u64_member (object, prefix, "ticks", &stats->ticks, error))
    return NULL;
  /* Optional: written for add-on groups that have some (validate_group()
   * checks the kind). */
  if (json_object_has_member (object, "sampled_cpu_time") &&
      !read_u64_member (object, prefix, "sampled_cpu_time", &stats->sampled_cpu_time, error))
    return NULL;

  if (!(durations_node = get_member (object, prefix, "durations", error)))
    return NULL;

  if (!JSON_NODE_HOLDS_ARRAY (durations_node))
    {
      _perfmon_snapshot_set_field_error (error, prefix, "durations",
                       "expected an array of %d non-negative integers, got %s",
                       PERFMON_N_DURATIONS, _perfmon_json_describe_node (durations_node));
      return NULL;
    }

  durations = json_node_get_array (durations_node);

  if (json_array_get_length (durations) != PERFMON_N_DURATIONS)
    {
      _perfmon_snapshot_set_field_error (error, prefix, "durations",
                                         "expected an array of %d non-negative integers, got %u elements",
                                         PERFMON_N_DURATIONS, json_array_get_length (durations));
      return NULL;
    }

  for (guint i = 0; i < PERFMON_N_DURATIONS; i++)
    {
      JsonNode *element = json_array_get_element (durations, i);
      char member[32];

      /* The usual case first: the member's name is for errors only. */
      if (json_node_holds_type (element, G_TYPE_INT64) && json_node_get_int (element) >= 0)
        {
          stats->durations[i] = (guint64) json_node_get_int (element);
          continue;
        }

      g_snprintf (member, sizeof member, "durations[%u]", i);
      if (!read_u64 (element, prefix, member, &stats->durations[i], error))
        return NULL;
    }

  return g_steal_pointer (&stats);
}

/* "modules": an array of objects, each checked as every reader checks
 * them (_perfmon_snapshot_new_checked()). */
static gboolean
modules_from_json (JsonNode   *node,
                   GPtrArray **modules_out,
                   GError    **error)
{
  g_autoptr(GPtrArray) modules = NULL;
  JsonArray *array;

  if (!JSON_NODE_HOLDS_ARRAY (node))
    return _perfmon_snapshot_set_field_error (error, NULL, "modules", "expected an array, got %s",
                                              _perfmon_json_describe_node (node));
  array = json_node_get_array (node);
  if (json_array_get_length (array) > PERFMON_RECORDED_MODULES_MAX)
    return _perfmon_snapshot_set_field_error (error, NULL, "modules", "expected at most %d modules, got %u",
                                              PERFMON_RECORDED_MODULES_MAX, json_array_get_length (array));
  modules = g_ptr_array_new_with_free_func (_perfmon_recorded_module_free);
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonNode *element = json_array_get_element (array, i);
      g_autofree char *name = NULL;
      g_autofree char *path = NULL;
      g_autofree char *build_id = NULL;
      guint64 base = 0;
      JsonObject *object;
      char prefix[32];

      g_snprintf (prefix, sizeof prefix, "modules[%u]", i);
      if (!JSON_NODE_HOLDS_OBJECT (element))
        return _perfmon_snapshot_set_field_error (error, NULL, prefix, "expected an object, got %s",
                                                  _perfmon_json_describe_node (element));
      object = json_node_get_object (element);
      if (!read_string_member (object, prefix, "name", FALSE, &name, error) ||
          !read_string_member (object, prefix, "path", FALSE, &path, error) ||
          !read_u64_member (object, prefix, "base", &base, error) ||
          !read_string_member (object, prefix, "build_id", FALSE, &build_id, error))
        return FALSE;
      g_ptr_array_add (modules, _perfmon_recorded_module_new (name, path, base, build_id));
    }
  *modules_out = g_steal_pointer (&modules);
  return TRUE;
}

/**
 * perfmon_snapshot_new_from_json:
 * @json: a JSON document, as written by perfmon_snapshot_to_json()
 * @error: return location for a #GError
 *
 * Reads a snapshot back from its JSON form, described in
 * [class@Perfmon.Snapshot].
 *
 * The document is checked: if it is not a valid snapshot, this fails with
 * %PERFMON_ERROR_INVALID_DATA and a message that names the offending
 * member, or with %PERFMON_ERROR_UNSUPPORTED_VERSION if its format version
 * is not 1.
 *
 * Returns: (transfer full): a new snapshot
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_snapshot_new_from_json (const char  *json,
                                GError     **error)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) local_error = NULL;
  g_auto(PerfmonSnapshotFields) fields = { 0, };
  JsonNode *root, *groups_node;
  JsonObject *object;
  JsonArray *groups;
  guint64 version = 0;

  g_return_val_if_fail (json != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!_perfmon_json_prescan (json, -1, MAX_JSON_DEPTH, error))
    return NULL;

  parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, json, -1, &local_error))
    {
      _perfmon_snapshot_set_field_error (error, NULL, "(root)", "not valid JSON: %s", local_error->message);
      return NULL;
    }

  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      _perfmon_snapshot_set_field_error (error, NULL, "(root)", "expected an object, got %s",
                       root != NULL ? _perfmon_json_describe_node (root) : "an empty document");
      return NULL;
    }

  object = json_node_get_object (root);

  /* The version first: another version may have other members. */
  if (!read_u64_member (object, NULL, "version", &version, error) ||
      !_perfmon_snapshot_check_version (version, error))
    return NULL;

  if (!read_i64_member (object, NULL, "timestamp", &fields.timestamp, error) ||
      (json_object_has_member (object, "wall_time") &&
       !read_i64_member (object, NULL, "wall_time", &fields.wall_time, error)) ||
      !read_i64_member (object, NULL, "interval", &fields.interval, error) ||
      !read_u64_member (object, NULL, "pid", &fields.pid, error) ||
      !read_string_member (object, NULL, "process_name", FALSE, &fields.process_name, error) ||
      !read_u64_member (object, NULL, "user_time", &fields.user_time, error) ||
      !read_u64_member (object, NULL, "system_time", &fields.system_time, error))
    return NULL;

  if (!(groups_node = get_member (object, NULL, "groups", error)))
    return NULL;

  if (!JSON_NODE_HOLDS_ARRAY (groups_node))
    {
      _perfmon_snapshot_set_field_error (error, NULL, "groups", "expected an array, got %s",
                       _perfmon_json_describe_node (groups_node));
      return NULL;
    }

  groups = json_node_get_array (groups_node);
  fields.groups = g_ptr_array_new_full (json_array_get_length (groups),
                                        (GDestroyNotify) perfmon_group_stats_unref);

  for (guint i = 0; i < json_array_get_length (groups); i++)
    {
      PerfmonGroupStats *stats = group_from_json (json_array_get_element (groups, i), i, error);

      if (stats == NULL)
        return NULL;

      g_ptr_array_add (fields.groups, stats);
    }

  if (json_object_has_member (object, "modules") &&
      !modules_from_json (json_object_get_member (object, "modules"), &fields.modules, error))
    return NULL;

  return _perfmon_snapshot_new_checked (&fields, error);
}