/* perfmon-bhr-ping.c: Mozilla's "bhr" ping, the envelope of a batch of hang records
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What Mozilla's ingestion pipeline wants around the hangs: the common
 * ping envelope (type, id, creationDate, version, application, clientId)
 * and the Background Hang Reporter payload, whose hangs share one
 * "modules" list. The pending-directory store (perfmon-ping-store.c)
 * decides which records go into a ping and when; this file only shapes
 * them. The one reader of what it writes is perfmon-bhr-ping-reader.c.
 */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "perfmon-bhr-ping-private.h"
#include "perfmon-error.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-process-private.h"
#include "perfmon-utf8.h"

struct _PerfmonBhrPingBuilder
{
  char       *creation_date;
  JsonObject *application;
  JsonArray  *modules;
  JsonArray  *hangs;
  GHashTable *module_indices;   /* "len:debug name breakpad id" → index */
  gint64      time_since_last_ping_ms;
};

char *
_perfmon_ping_map_version (const char *version)
{
  GString *mapped;

  if (version == NULL || *version == '\0')
    return g_strdup ("00.0");

  if (g_ascii_isdigit (version[0]) && g_ascii_isdigit (version[1]) &&
      (version[2] == '.' || (g_ascii_isdigit (version[2]) && version[3] == '.')))
    return g_strdup (version);

  mapped = g_string_new ("00.");
  for (const char *c = version; *c != '\0'; c++)
    g_string_append_c (mapped, (g_ascii_isalnum (*c) || strchr (".+~-", *c) != NULL) ? *c : '_');
  return g_string_free (mapped, FALSE);
}

/* Firefox's names for the target, which the pipeline groups by. */
#if defined(__x86_64__)
# define PING_ARCHITECTURE "x86-64"
# define PING_XPCOM_ABI    "x86_64-gcc3"
#elif defined(__aarch64__)
# define PING_ARCHITECTURE "aarch64"
# define PING_XPCOM_ABI    "aarch64-gcc3"
#elif defined(__i386__)
# define PING_ARCHITECTURE "x86"
# define PING_XPCOM_ABI    "x86-gcc3"
#elif defined(__arm__)
# define PING_ARCHITECTURE "arm"
# define PING_XPCOM_ABI    "arm-eabi-gcc3"
#else
# define PING_ARCHITECTURE "unknown"
# define PING_XPCOM_ABI    "unknown-gcc3"
#endif

static gboolean
is_build_id (const char *text)
{
  gsize i;

  for (i = 0; text[i] != '\0'; i++)
    if (!g_ascii_isdigit (text[i]))
      return FALSE;
  return i == 14;
}

/* What a build id is for (telling builds apart, and their age) is what
 * the executable's mtime gives a program that has none. */
static char *
executable_build_id (void)
{
  g_autoptr(GDateTime) time = NULL;
  GStatBuf st;

  if (g_stat ("/proc/self/exe", &st) == 0)
    time = g_date_time_new_from_unix_utc (st.st_mtime);
  /* Unknown: zeros, which still match the pipeline's "^[0-9]{10}". */
  if (time == NULL)
    return g_strdup ("00000000000000");
  return g_date_time_format (time, "%Y%m%d%H%M%S");
}

static char *
creation_date (void)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
  g_autofree char *seconds = g_date_time_format (now, "%Y-%m-%dT%H:%M:%S");

  return g_strdup_printf ("%s.%03dZ", seconds, g_date_time_get_microsecond (now) / 1000);
}

/* @text as the reader takes it: valid UTF-8 of at most
 * PERFMON_BHR_PING_MAX_STRING_BYTES; NULL and "" are @fallback. */
static char *
ping_string (const char *text,
             const char *fallback)
{
  g_autofree char *valid = NULL;

  if (text == NULL || *text == '\0')
    text = fallback;
  valid = g_utf8_make_valid (text, -1);
  return g_strndup (valid, _perfmon_utf8_cut (valid, strlen (valid), PERFMON_BHR_PING_MAX_STRING_BYTES));
}

static void
set_ping_string (JsonObject *object,
                 const char *member,
                 const char *text,
                 const char *fallback)
{
  g_autofree char *value = ping_string (text, fallback);

  json_object_set_string_member (object, member, value);
}

static JsonObject *
build_application (const PerfmonPingInfo  *info,
                   GError                **error)
{
  g_autoptr(JsonObject) application = json_object_new ();
  g_autofree char *build_id = NULL;
  g_autofree char *version = _perfmon_ping_map_version (info->app_version);
  g_autofree char *platform_version = _perfmon_ping_map_version (PACKAGE_VERSION);
  const char *name = info->app_name;

  if (info->build_id != NULL)
    {
      if (!is_build_id (info->build_id))
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                       "build_id: must be 14 digits (YYYYmmddHHMMSS), got %zu bytes",
                       strlen (info->build_id));
          return NULL;
        }
      build_id = g_strdup (info->build_id);
    }
  else
    build_id = executable_build_id ();

  if (name == NULL)
    name = _perfmon_process_name ();

  json_object_set_string_member (application, "architecture", PING_ARCHITECTURE);
  json_object_set_string_member (application, "buildId", build_id);
  /* The uploader puts name and channel in the URL: never empty. */
  set_ping_string (application, "channel", info->channel, "default");
  set_ping_string (application, "name", name, "unknown");
  set_ping_string (application, "platformVersion", platform_version, "00.0");
  json_object_set_string_member (application, "vendor", "perfmon");
  set_ping_string (application, "version", version, "00.0");
  json_object_set_string_member (application, "xpcomAbi", PING_XPCOM_ABI);
  return g_steal_pointer (&application);
}

/* In a ping, hangs share one "modules" list: merges each record's modules
 * into @modules (the same [debug name, breakpad id] once) and returns the
 * hang as the ping carries it, native frames re-indexed and without
 * "modules". Every other member is kept as it is. */
static JsonObject *
hang_for_ping (JsonObject *hang,
               const char *hang_id,
               JsonArray  *modules,
               GHashTable *module_indices)
{
  JsonObject *out = json_object_new ();
  g_autoptr(GArray) remap = g_array_new (FALSE, FALSE, sizeof (gint64));
  JsonArray *own_modules = NULL;
  g_autoptr(GList) members = NULL;

  if (json_object_has_member (hang, "modules"))
    own_modules = json_object_get_array_member (hang, "modules");

  for (guint i = 0; own_modules != NULL && i < json_array_get_length (own_modules); i++)
    {
      JsonArray *pair = json_array_get_array_element (own_modules, i);
      const char *debug_name = json_array_get_string_element (pair, 0);
      const char *breakpad_id = json_array_get_string_element (pair, 1);
      /* Length-prefixed, so that no name can make two pairs one key. */
      g_autofree char *key = g_strdup_printf ("%zu:%s%s", strlen (debug_name),
                                              debug_name, breakpad_id);
      gpointer value;
      gint64 index;

      if (g_hash_table_lookup_extended (module_indices, key, NULL, &value))
        index = GPOINTER_TO_UINT (value);
      else
        {
          index = json_array_get_length (modules);
          json_array_add_element (modules, json_node_copy (json_array_get_element (own_modules, i)));
          g_hash_table_insert (module_indices, g_steal_pointer (&key),
                               GUINT_TO_POINTER ((guint) index));
        }
      g_array_append_val (remap, index);
    }

  members = json_object_get_members (hang);
  for (GList *l = members; l != NULL; l = l->next)
    {
      const char *member = l->data;

      if (g_str_equal (member, "modules"))
        continue;

      if (g_str_equal (member, "stack"))
        {
          JsonArray *stack = json_object_get_array_member (hang, "stack");
          JsonArray *new_stack = json_array_sized_new (json_array_get_length (stack));

          for (guint i = 0; i < json_array_get_length (stack); i++)
            {
              JsonNode *frame = json_array_get_element (stack, i);
              JsonArray *native;
              JsonArray *new_native;
              gint64 index;

              if (!JSON_NODE_HOLDS_ARRAY (frame))
                {
                  json_array_add_element (new_stack, json_node_copy (frame));
                  continue;
                }
              native = json_node_get_array (frame);
              index = json_array_get_int_element (native, 0);
              /* -1, outside every module, means the same in the ping. */
              if (index >= 0)
                index = g_array_index (remap, gint64, index);
              new_native = json_array_sized_new (2);
              json_array_add_int_element (new_native, index);
              json_array_add_string_element (new_native, json_array_get_string_element (native, 1));
              json_array_add_array_element (new_stack, new_native);
            }
          json_object_set_array_member (out, "stack", new_stack);
          continue;
        }

      if (!g_str_equal (member, "hangId"))
        json_object_set_member (out, member, json_node_copy (json_object_get_member (hang, member)));
    }
  /* Delivery is at least once (see _perfmon_ping_store_write_ping()):
   * the record's id, the same in every ping that carries it, lets a
   * receiver drop a hang it already has. */
  json_object_set_string_member (out, "hangId", hang_id);

  return out;
}

PerfmonBhrPingBuilder *
_perfmon_bhr_ping_builder_new (const PerfmonPingInfo  *info,
                               GError                **error)
{
  static const PerfmonPingInfo default_info = { 0 };
  g_autoptr(PerfmonBhrPingBuilder) ping = g_new0 (PerfmonBhrPingBuilder, 1);

  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (info == NULL)
    info = &default_info;
  ping->creation_date = creation_date ();
  /* The reader's range. */
  ping->time_since_last_ping_ms = CLAMP (info->time_since_last_ping_ms, 0,
                                         (gint64) PERFMON_HANG_REPORT_MAX_DURATION_MS);
  ping->application = build_application (info, error);
  if (ping->application == NULL)
    return NULL;
  ping->modules = json_array_new ();
  ping->hangs = json_array_new ();
  ping->module_indices = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return g_steal_pointer (&ping);
}

PerfmonBhrPingBuilder *
_perfmon_bhr_ping_builder_new_like (PerfmonBhrPing *read)
{
  PerfmonBhrPingBuilder *ping = g_new0 (PerfmonBhrPingBuilder, 1);

  ping->creation_date = g_strdup (perfmon_bhr_ping_get_creation_date (read));
  ping->time_since_last_ping_ms = perfmon_bhr_ping_get_time_since_last_ping (read);
  ping->application = json_object_ref (_perfmon_bhr_ping_get_application (read));
  ping->modules = json_array_new ();
  ping->hangs = json_array_new ();
  ping->module_indices = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return ping;
}

void
_perfmon_bhr_ping_builder_add_hang (PerfmonBhrPingBuilder *ping,
                                    JsonObject            *hang,
                                    const char            *hang_id)
{
  g_return_if_fail (ping != NULL && hang != NULL && hang_id != NULL);

  json_array_add_object_element (ping->hangs,
                                 hang_for_ping (hang, hang_id, ping->modules, ping->module_indices));
}

JsonObject *
_perfmon_bhr_ping_builder_end (PerfmonBhrPingBuilder *ping,
                               const char            *ping_id,
                               const char            *client_id)
{
  JsonObject *envelope = json_object_new ();
  JsonObject *payload = json_object_new ();

  json_object_set_int_member (payload, "timeSinceLastPing", ping->time_since_last_ping_ms);
  json_object_set_array_member (payload, "modules", g_steal_pointer (&ping->modules));
  json_object_set_array_member (payload, "hangs", g_steal_pointer (&ping->hangs));

  /* The common ping envelope as the pipeline's "bhr" v4 schema wants it.
   * "environment" is optional there, but once present it requires build,
   * partner, settings and system sections full of browser facts we do not
   * have: it is left out rather than filled with inventions. */
  json_object_set_string_member (envelope, "type", PERFMON_PING_TYPE);
  json_object_set_string_member (envelope, "id", ping_id);
  json_object_set_string_member (envelope, "creationDate", ping->creation_date);
  json_object_set_int_member (envelope, "version", PERFMON_PING_VERSION);
  json_object_set_object_member (envelope, "application", g_steal_pointer (&ping->application));
  json_object_set_string_member (envelope, "clientId", client_id);
  json_object_set_object_member (envelope, "payload", payload);

  _perfmon_bhr_ping_builder_free (ping);
  return envelope;
}

void
_perfmon_bhr_ping_builder_free (PerfmonBhrPingBuilder *ping)
{
  if (ping == NULL)
    return;
  g_free (ping->creation_date);
  g_clear_pointer (&ping->application, json_object_unref);
  g_clear_pointer (&ping->modules, json_array_unref);
  g_clear_pointer (&ping->hangs, json_array_unref);
  g_clear_pointer (&ping->module_indices, g_hash_table_unref);
  g_free (ping);
}
