/* perfmon-bhr-ping-reader.c: a "bhr" ping read back from its JSON form
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one reader of what perfmon-bhr-ping.c writes: perfmond's uploader
 * reads each ping with it before sending it (a file in a pings directory,
 * which any process of the user could have written), and `perfmon
 * symbolize` the pings it names. The input is untrusted: every field is
 * checked, every size bounded, and each hang is read by the hang report's
 * own reader (perfmon-hang-report-reader.c), against the ping's shared
 * "modules" list.
 */
#include "config.h"

#include <string.h>

#include "perfmon-bhr-ping-private.h"
#include "perfmon-error.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-json-private.h"

/* The envelope, "payload", "hangs", and then a hang report's own eight
 * levels at most (perfmon-hang-report-reader.c). */
#define MAX_DEPTH 11
/* "2026-11-28T09:31:52.123Z" and its variants. */
#define MAX_DATE_BYTES 64

/**
 * PerfmonBhrPing:
 *
 * A "bhr" ping read back ([ctor@BhrPing.new_from_json]): the file of
 * Mozilla's Background Hang Reporter format that a [class@HangMonitor]
 * writes under its [property@HangMonitor:pings-dir] every
 * [property@HangMonitor:hangs-per-ping] hangs, and that perfmond sends to
 * a telemetry server. It carries its envelope (ids, creation date, the
 * application) and its hangs, each a [struct@HangReport] with its id.
 *
 * A ping is immutable: any thread may read it.
 *
 * Since: 0.3
 */
struct _PerfmonBhrPing
{
  gatomicrefcount ref_count;

  char       *id;
  char       *client_id;
  char       *creation_date;
  JsonObject *application;       /* the eight strings the writer writes */
  gint64      time_since_last_ping_ms;
  GPtrArray  *hangs;             /* of PerfmonHangReport */
  GPtrArray  *hang_ids;          /* of char * */
};

G_DEFINE_BOXED_TYPE (PerfmonBhrPing, perfmon_bhr_ping, perfmon_bhr_ping_ref, perfmon_bhr_ping_unref)

/* The members of "application", in the writer's order. */
static const char * const application_members[] = {
  "architecture", "buildId", "channel", "name", "platformVersion", "vendor", "version", "xpcomAbi",
};

static gboolean invalid (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* A PERFMON_ERROR_INVALID_DATA error: @format starts with the field. */
static gboolean
invalid (GError     **error,
         const char  *format,
         ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA, message);
  return FALSE;
}

static gboolean
holds_type (JsonNode *node,
            GType     type)
{
  return node != NULL && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type;
}

/* The member @field of @object (named @where in errors) as a string of 1
 * to @max bytes of valid UTF-8. */
static const char *
read_string (JsonObject  *object,
             const char  *field,
             const char  *where,
             gsize        max,
             GError     **error)
{
  JsonNode *node = json_object_get_member (object, field);
  const char *text;
  gsize length;

  if (node == NULL)
    {
      invalid (error, "%s: missing required member", where);
      return NULL;
    }
  if (!holds_type (node, G_TYPE_STRING))
    {
      invalid (error, "%s: expected a string, got %s", where, _perfmon_json_describe_node (node));
      return NULL;
    }
  text = json_node_get_string (node);
  length = strnlen (text, max + 1);
  if (length == 0 || length > max || !g_utf8_validate_len (text, length, NULL))
    {
      invalid (error, "%s: expected a string of 1 to %zu bytes of valid UTF-8", where, max);
      return NULL;
    }
  return text;
}

static JsonObject *
read_object (JsonObject  *object,
             const char  *field,
             const char  *where,
             GError     **error)
{
  JsonNode *node = json_object_get_member (object, field);

  if (node == NULL)
    invalid (error, "%s: missing required member", where);
  else if (!JSON_NODE_HOLDS_OBJECT (node))
    invalid (error, "%s: expected an object, got %s", where, _perfmon_json_describe_node (node));
  else
    return json_node_get_object (node);
  return NULL;
}

static gboolean
is_digits (const char *text,
           gsize       min,
           gsize       max)
{
  gsize n = 0;

  while (g_ascii_isdigit (text[n]))
    n++;
  return n >= min && n <= max && text[n] == '\0';
}

/* What the pipeline wants of a version: "^[0-9]{2,3}\\." (see
 * _perfmon_ping_map_version()). */
static gboolean
is_ping_version (const char *text)
{
  gsize n = 0;

  while (g_ascii_isdigit (text[n]))
    n++;
  return (n == 2 || n == 3) && text[n] == '.';
}

/* The ping store's record ids: 1 to 128 of [A-Za-z0-9_-], not starting
 * with '-'. */
static gboolean
is_hang_id (const char *text)
{
  gsize n = strlen (text);

  if (n == 0 || n > PERFMON_BHR_PING_MAX_HANG_ID || text[0] == '-')
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (text[i]) && text[i] != '-' && text[i] != '_')
      return FALSE;
  return TRUE;
}

static gboolean
read_envelope (JsonObject      *root,
               PerfmonBhrPing  *ping,
               GError         **error)
{
  JsonNode *version = json_object_get_member (root, "version");
  const char *type, *id, *client_id, *date;
  g_autoptr(GDateTime) parsed = NULL;

  if ((type = read_string (root, "type", "type", PERFMON_BHR_PING_MAX_STRING_BYTES, error)) == NULL)
    return FALSE;
  if (strcmp (type, PERFMON_PING_TYPE) != 0)
    return invalid (error, "type: expected \"" PERFMON_PING_TYPE "\"");
  if (version == NULL)
    return invalid (error, "version: missing required member");
  if (!holds_type (version, G_TYPE_INT64))
    return invalid (error, "version: expected the integer %d, got %s", PERFMON_PING_VERSION,
                    _perfmon_json_describe_node (version));
  if (json_node_get_int (version) != PERFMON_PING_VERSION)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_UNSUPPORTED_VERSION,
                   "version: expected %d, got %" G_GINT64_FORMAT, PERFMON_PING_VERSION,
                   json_node_get_int (version));
      return FALSE;
    }

  if ((id = read_string (root, "id", "id", PERFMON_BHR_PING_MAX_STRING_BYTES, error)) == NULL)
    return FALSE;
  if (!g_uuid_string_is_valid (id))
    return invalid (error, "id: expected a UUID (8-4-4-4-12 hex digits)");
  if ((client_id = read_string (root, "clientId", "clientId", PERFMON_BHR_PING_MAX_STRING_BYTES, error)) == NULL)
    return FALSE;
  if (!g_uuid_string_is_valid (client_id))
    return invalid (error, "clientId: expected a UUID (8-4-4-4-12 hex digits)");
  if ((date = read_string (root, "creationDate", "creationDate", MAX_DATE_BYTES, error)) == NULL)
    return FALSE;
  if ((parsed = g_date_time_new_from_iso8601 (date, NULL)) == NULL)
    return invalid (error, "creationDate: expected an ISO 8601 date and time with its zone");

  ping->id = g_strdup (id);
  ping->client_id = g_strdup (client_id);
  ping->creation_date = g_strdup (date);
  return TRUE;
}

static gboolean
read_application (JsonObject      *root,
                  PerfmonBhrPing  *ping,
                  GError         **error)
{
  JsonObject *application = read_object (root, "application", "application", error);

  if (application == NULL)
    return FALSE;
  ping->application = json_object_new ();
  for (guint i = 0; i < G_N_ELEMENTS (application_members); i++)
    {
      const char *member = application_members[i];
      g_autofree char *where = g_strconcat ("application.", member, NULL);
      const char *value = read_string (application, member, where, PERFMON_BHR_PING_MAX_STRING_BYTES, error);

      if (value == NULL)
        return FALSE;
      if (g_str_equal (member, "buildId") && !is_digits (value, 14, 14))
        return invalid (error, "%s: expected 14 digits (YYYYmmddHHMMSS)", where);
      if ((g_str_equal (member, "version") || g_str_equal (member, "platformVersion")) &&
          !is_ping_version (value))
        return invalid (error, "%s: expected 2 or 3 digits and a dot first", where);
      json_object_set_string_member (ping->application, member, value);
    }
  return TRUE;
}

static gboolean
read_payload (JsonObject      *root,
              PerfmonBhrPing  *ping,
              GError         **error)
{
  JsonObject *payload = read_object (root, "payload", "payload", error);
  g_autoptr(GHashTable) ids = NULL;
  JsonNode *node;
  JsonArray *modules, *hangs;
  gint64 since;

  if (payload == NULL)
    return FALSE;

  node = json_object_get_member (payload, "timeSinceLastPing");
  if (node == NULL)
    return invalid (error, "payload.timeSinceLastPing: missing required member");
  if (!holds_type (node, G_TYPE_INT64) ||
      (since = json_node_get_int (node)) < 0 || since > (gint64) PERFMON_HANG_REPORT_MAX_DURATION_MS)
    return invalid (error, "payload.timeSinceLastPing: expected an integer number of ms in [0, %.0f]",
                    PERFMON_HANG_REPORT_MAX_DURATION_MS);
  ping->time_since_last_ping_ms = since;

  node = json_object_get_member (payload, "modules");
  if (node == NULL)
    return invalid (error, "payload.modules: missing required member");
  if (!JSON_NODE_HOLDS_ARRAY (node))
    return invalid (error, "payload.modules: expected an array, got %s", _perfmon_json_describe_node (node));
  modules = json_node_get_array (node);
  if (!_perfmon_hang_report_read_modules (modules, "payload.modules", error))
    return FALSE;

  node = json_object_get_member (payload, "hangs");
  if (node == NULL)
    return invalid (error, "payload.hangs: missing required member");
  if (!JSON_NODE_HOLDS_ARRAY (node))
    return invalid (error, "payload.hangs: expected an array, got %s", _perfmon_json_describe_node (node));
  hangs = json_node_get_array (node);
  if (json_array_get_length (hangs) > PERFMON_BHR_PING_MAX_HANGS)
    return invalid (error, "payload.hangs: expected at most %d elements, got %u", PERFMON_BHR_PING_MAX_HANGS,
                    json_array_get_length (hangs));

  ids = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < json_array_get_length (hangs); i++)
    {
      JsonNode *element = json_array_get_element (hangs, i);
      g_autofree char *where = g_strdup_printf ("payload.hangs[%u].hangId", i);
      PerfmonHangReport *report;
      JsonObject *hang;
      const char *hang_id;

      if (!JSON_NODE_HOLDS_OBJECT (element))
        return invalid (error, "payload.hangs[%u]: expected an object, got %s", i,
                        _perfmon_json_describe_node (element));
      hang = json_node_get_object (element);
      if ((hang_id = read_string (hang, "hangId", where, PERFMON_BHR_PING_MAX_HANG_ID, error)) == NULL)
        return FALSE;
      if (!is_hang_id (hang_id))
        return invalid (error, "%s: expected 1 to %d of [A-Za-z0-9_-], not starting with '-'", where,
                        PERFMON_BHR_PING_MAX_HANG_ID);
      /* Delivery is at least once, and a receiver drops a hang by its id:
       * one ping carries each once. */
      if (g_hash_table_contains (ids, hang_id))
        return invalid (error, "%s: the id of an earlier hang", where);
      g_hash_table_add (ids, (gpointer) hang_id);

      report = _perfmon_hang_report_read_object (hang, modules, error);
      if (report == NULL)
        {
          g_prefix_error (error, "payload.hangs[%u].", i);
          return FALSE;
        }
      g_ptr_array_add (ping->hangs, report);
      g_ptr_array_add (ping->hang_ids, g_strdup (hang_id));
    }
  return TRUE;
}

/**
 * perfmon_bhr_ping_new_from_json:
 * @json: a ping as JSON, as a [class@HangMonitor] writes it under
 *   [property@HangMonitor:pings-dir] (UTF-8 text)
 * @length: the length of @json in bytes, or -1 if it is NUL-terminated
 * @error: return location for a #GError
 *
 * Reads back a "bhr" ping, the file of Mozilla's Background Hang
 * Reporter format that batches hang reports for a telemetry server.
 *
 * The input is checked, strictly: "type" ("bhr"), "version" (4), "id"
 * and "clientId" (UUIDs), "creationDate" (ISO 8601), "application" (the
 * strings "architecture", "buildId" of 14 digits, "channel", "name",
 * "platformVersion" and "version" starting with 2 or 3 digits and a dot,
 * "vendor", "xpcomAbi") and "payload" ("timeSinceLastPing", an integer
 * number of ms in [0, 1e12]; "modules", `[debug name, breakpad id]`
 * strings; "hangs", each a hang report as
 * [ctor@HangReport.new_from_json] reads one, but whose native frames
 * index the shared "modules", with a "hangId" of 1 to 128 of
 * `[A-Za-z0-9_-]`, each id once) are required. Members this version does
 * not know are ignored. Sizes are bounded: the document to 8 MiB and 11
 * levels of nesting, each string of the envelope to 1 KiB, "hangs" to
 * 100000 entries, and each hang as a report is.
 *
 * Returns: (transfer full): the ping, or %NULL with @error set to
 *   %PERFMON_ERROR_INVALID_DATA (or %PERFMON_ERROR_UNSUPPORTED_VERSION
 *   for a "version" other than 4) and a message that starts with the
 *   offending field ("payload.hangs[2].stack[3]: ...") and says what it
 *   allows
 *
 * Since: 0.3
 */
PerfmonBhrPing *
perfmon_bhr_ping_new_from_json (const char  *json,
                                gssize       length,
                                GError     **error)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autoptr(PerfmonBhrPing) ping = NULL;
  JsonObject *root_object;
  JsonNode *root;
  gsize size;

  g_return_val_if_fail (json != NULL || length == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  size = length < 0 ? strnlen (json, PERFMON_BHR_PING_MAX_JSON_BYTES + 1) : (gsize) length;
  if (size > PERFMON_BHR_PING_MAX_JSON_BYTES)
    {
      invalid (error, "(root): expected at most %d bytes", PERFMON_BHR_PING_MAX_JSON_BYTES);
      return NULL;
    }
  if (size > 0 && memchr (json, '\0', size) != NULL)
    {
      invalid (error, "(root): expected JSON text, got a NUL byte");
      return NULL;
    }
  if (size > 0 && !g_utf8_validate_len (json, size, NULL))
    {
      invalid (error, "(root): expected UTF-8 text");
      return NULL;
    }
  if (size > 0 && !_perfmon_json_prescan (json, (gssize) size, MAX_DEPTH, error))
    return NULL;

  parser = json_parser_new_immutable ();
  if (size == 0 || !json_parser_load_from_data (parser, json, (gssize) size, &local_error))
    {
      /* json-glib's message quotes at most a character of the input. */
      invalid (error, "(root): not valid JSON: %s", local_error != NULL ? local_error->message : "empty");
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      invalid (error, "(root): expected an object, got %s",
               root != NULL ? _perfmon_json_describe_node (root) : "an empty document");
      return NULL;
    }
  root_object = json_node_get_object (root);

  ping = g_new0 (PerfmonBhrPing, 1);
  g_atomic_ref_count_init (&ping->ref_count);
  ping->hangs = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  ping->hang_ids = g_ptr_array_new_with_free_func (g_free);
  if (!read_envelope (root_object, ping, error) ||
      !read_application (root_object, ping, error) ||
      !read_payload (root_object, ping, error))
    return NULL;
  return g_steal_pointer (&ping);
}

/**
 * perfmon_bhr_ping_ref:
 * @self: a #PerfmonBhrPing
 *
 * Acquires a reference on a ping.
 *
 * Returns: (transfer full): @self
 *
 * Since: 0.3
 */
PerfmonBhrPing *
perfmon_bhr_ping_ref (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * perfmon_bhr_ping_unref:
 * @self: (transfer full): a #PerfmonBhrPing
 *
 * Releases a reference on a ping; the last one frees it.
 *
 * Since: 0.3
 */
void
perfmon_bhr_ping_unref (PerfmonBhrPing *self)
{
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;
  g_free (self->id);
  g_free (self->client_id);
  g_free (self->creation_date);
  g_clear_pointer (&self->application, json_object_unref);
  g_ptr_array_unref (self->hangs);
  g_ptr_array_unref (self->hang_ids);
  g_free (self);
}

/**
 * perfmon_bhr_ping_get_id:
 * @self: a #PerfmonBhrPing
 *
 * Gets the ping's own id, which the upload URL carries.
 *
 * Returns: the ping's id, a UUID
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_id (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->id;
}

/**
 * perfmon_bhr_ping_get_client_id:
 * @self: a #PerfmonBhrPing
 *
 * Gets the id of the installation that sent the ping: the same for every
 * ping of a pings directory.
 *
 * Returns: the client id, a UUID
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_client_id (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->client_id;
}

/**
 * perfmon_bhr_ping_get_creation_date:
 * @self: a #PerfmonBhrPing
 *
 * Gets when the ping was made.
 *
 * Returns: the ping's "creationDate", an ISO 8601 date and time in UTC
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_creation_date (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->creation_date;
}

static const char *
application_string (PerfmonBhrPing *self,
                    const char     *member)
{
  return json_object_get_string_member (self->application, member);
}

/**
 * perfmon_bhr_ping_get_app_name:
 * @self: a #PerfmonBhrPing
 *
 * Gets the application's name ([property@HangMonitor:app-name]).
 *
 * Returns: "application.name", never empty
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_app_name (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return application_string (self, "name");
}

/**
 * perfmon_bhr_ping_get_app_version:
 * @self: a #PerfmonBhrPing
 *
 * Gets the application's version ([property@HangMonitor:app-version]), as
 * the pipeline wants it: "00." before a version that does not start with
 * 2 or 3 digits and a dot.
 *
 * Returns: "application.version"
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_app_version (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return application_string (self, "version");
}

/**
 * perfmon_bhr_ping_get_app_channel:
 * @self: a #PerfmonBhrPing
 *
 * Gets the application's update channel ([property@HangMonitor:app-channel]).
 *
 * Returns: "application.channel", never empty
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_app_channel (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return application_string (self, "channel");
}

/**
 * perfmon_bhr_ping_get_app_build_id:
 * @self: a #PerfmonBhrPing
 *
 * Gets the application's build id ([property@HangMonitor:app-build-id]).
 *
 * Returns: "application.buildId", 14 digits (YYYYmmddHHMMSS)
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_app_build_id (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return application_string (self, "buildId");
}

/**
 * perfmon_bhr_ping_get_time_since_last_ping:
 * @self: a #PerfmonBhrPing
 *
 * Gets how long the process ran between its previous ping and this one.
 *
 * Returns: "payload.timeSinceLastPing", in ms
 *
 * Since: 0.3
 */
gint64
perfmon_bhr_ping_get_time_since_last_ping (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->time_since_last_ping_ms;
}

/**
 * perfmon_bhr_ping_get_n_hangs:
 * @self: a #PerfmonBhrPing
 *
 * Gets the number of hangs the ping carries.
 *
 * Returns: the length of "payload.hangs"
 *
 * Since: 0.3
 */
guint
perfmon_bhr_ping_get_n_hangs (PerfmonBhrPing *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->hangs->len;
}

/**
 * perfmon_bhr_ping_get_hang:
 * @self: a #PerfmonBhrPing
 * @index: an index below [method@BhrPing.get_n_hangs]
 *
 * Gets one hang of the ping, as a report of its own (its "modules" are
 * those of the ping that its stack uses).
 *
 * Returns: (transfer none): the hang
 *
 * Since: 0.3
 */
PerfmonHangReport *
perfmon_bhr_ping_get_hang (PerfmonBhrPing *self,
                           guint           index)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (index < self->hangs->len, NULL);

  return g_ptr_array_index (self->hangs, index);
}

/**
 * perfmon_bhr_ping_get_hang_id:
 * @self: a #PerfmonBhrPing
 * @index: an index below [method@BhrPing.get_n_hangs]
 *
 * Gets the id of one hang of the ping: the same in every ping that carries
 * that hang (delivery is at least once), so that a receiver can drop a
 * hang it already has.
 *
 * Returns: the hang's "hangId"
 *
 * Since: 0.3
 */
const char *
perfmon_bhr_ping_get_hang_id (PerfmonBhrPing *self,
                              guint           index)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (index < self->hang_ids->len, NULL);

  return g_ptr_array_index (self->hang_ids, index);
}

PerfmonBhrPing *
_perfmon_bhr_ping_new_with_hangs (PerfmonBhrPing *ping,
                                  GPtrArray      *hangs)
{
  PerfmonBhrPing *self;

  g_return_val_if_fail (hangs->len == ping->hangs->len, NULL);

  self = g_new0 (PerfmonBhrPing, 1);
  g_atomic_ref_count_init (&self->ref_count);
  self->id = g_strdup (ping->id);
  self->client_id = g_strdup (ping->client_id);
  self->creation_date = g_strdup (ping->creation_date);
  self->application = json_object_ref (ping->application);
  self->time_since_last_ping_ms = ping->time_since_last_ping_ms;
  self->hangs = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  for (guint i = 0; i < hangs->len; i++)
    g_ptr_array_add (self->hangs, perfmon_hang_report_ref (g_ptr_array_index (hangs, i)));
  self->hang_ids = g_ptr_array_new_full (ping->hang_ids->len, g_free);
  for (guint i = 0; i < ping->hang_ids->len; i++)
    g_ptr_array_add (self->hang_ids, g_strdup (g_ptr_array_index (ping->hang_ids, i)));
  return self;
}

JsonObject *
_perfmon_bhr_ping_get_application (PerfmonBhrPing *self)
{
  return self->application;
}

JsonObject *
_perfmon_bhr_ping_to_json_object (PerfmonBhrPing *self)
{
  PerfmonBhrPingBuilder *builder = _perfmon_bhr_ping_builder_new_like (self);

  for (guint i = 0; i < self->hangs->len; i++)
    {
      g_autoptr(JsonObject) hang = _perfmon_hang_report_to_json_object (g_ptr_array_index (self->hangs, i));

      _perfmon_bhr_ping_builder_add_hang (builder, hang, g_ptr_array_index (self->hang_ids, i));
    }
  return _perfmon_bhr_ping_builder_end (builder, self->id, self->client_id);
}

/**
 * perfmon_bhr_ping_to_json:
 * @self: a #PerfmonBhrPing
 *
 * The ping as JSON, as the hang monitor writes it: reading what this
 * returns gives a ping whose to_json() is the same text. Members that
 * [ctor@BhrPing.new_from_json] ignored are not kept, and "modules" holds
 * the modules that the hangs use, in the order they first use them.
 *
 * Returns: (transfer full): the ping as a JSON object
 *
 * Since: 0.3
 */
char *
perfmon_bhr_ping_to_json (PerfmonBhrPing *self)
{
  g_autoptr(JsonNode) node = NULL;

  g_return_val_if_fail (self != NULL, NULL);

  node = json_node_new (JSON_NODE_OBJECT);
  json_node_take_object (node, _perfmon_bhr_ping_to_json_object (self));
  return json_to_string (node, FALSE);
}
