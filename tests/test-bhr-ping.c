/* test-bhr-ping.c: a "bhr" ping read back from JSON, strictly
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-bhr-ping-private.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-hang-report-cases.h"
#include "perfmon-ping-store-private.h"
#include "perfmon-test-dirs.h"

/* Two records whose module lists overlap in a different order: in the
 * ping they share one list, and the second's frames are re-indexed. */
static const char * const records[] = {
  "{\"duration\": 301.5, \"thread\": \"main\", \"runnableName\": \"spell-check\","
  " \"process\": \"default\", \"remoteType\": null,"
  " \"annotations\": [[\"Unrecovered\", \"true\"]],"
  " \"pseudoStack\": [\"outer label\", \"inner label dyn\"],"
  " \"stack\": [\"outer label\", [0, \"1a2b\"], [-1, \"7ffe0010\"], \"inner label dyn\", [1, \"40\"]],"
  " \"symbols\": [null, \"main+0x1b\", null, null, null],"
  " \"modules\": [[\"app\", \"55679D09BCDEA35B11111111111111110\"],"
  "               [\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"]]}",
  "{\"duration\": 150, \"thread\": \"worker\", \"runnableName\": \"\","
  " \"process\": \"tab\", \"remoteType\": \"web\", \"annotations\": [],"
  " \"stack\": [[0, \"ff\"], [1, \"10\"]],"
  " \"modules\": [[\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"],"
  "               [\"libjson-glib-1.0.so.0\", \"FFEEDDCCBBAA99887766554433221100B\"]]}",
};

/* A ping as the writer writes it, and each field changed in turn. */
#define HANG "{\"duration\":1.0,\"thread\":\"main\",\"runnableName\":\"x\",\"process\":\"default\"," \
             "\"remoteType\":null,\"annotations\":[],\"pseudoStack\":[],\"stack\":[[0,\"10\"],[-1,\"20\"]]," \
             "\"symbols\":[null,null],\"hangId\":\"h1\"}"
#define APPLICATION "{\"architecture\":\"x86-64\",\"buildId\":\"20260101000000\",\"channel\":\"default\"," \
                    "\"name\":\"app\",\"platformVersion\":\"00.0.3.0\",\"vendor\":\"perfmon\"," \
                    "\"version\":\"00.1\",\"xpcomAbi\":\"x86_64-gcc3\"}"
static const char valid[] =
  "{\"type\":\"bhr\",\"id\":\"0d3a4c8e-6f1b-4a53-9d2e-3f4b5c6d7e8f\","
  "\"creationDate\":\"2026-11-28T09:31:52.123Z\",\"version\":4,"
  "\"application\":" APPLICATION ","
  "\"clientId\":\"11111111-2222-4333-8444-555555555555\","
  "\"payload\":{\"timeSinceLastPing\":12,\"modules\":[[\"libglib-2.0.so.0\",\"0A0B\"]],"
  "\"hangs\":[" HANG "]}}";

/* @valid with its one occurrence of @from replaced by @to. */
static char *
change (const char *from,
        const char *to)
{
  const char *at = strstr (valid, from);

  g_assert_nonnull (at);
  g_assert_null (strstr (at + 1, from));
  return g_strdup_printf ("%.*s%s%s", (int) (at - valid), valid, to, at + strlen (from));
}

static void
assert_rejected_with (const char *json,
                      gssize      length,
                      gint        code,
                      const char *field)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonBhrPing) ping = perfmon_bhr_ping_new_from_json (json, length, &error);

  g_assert_null (ping);
  g_assert_error (error, PERFMON_ERROR, code);
  if (!hang_report_error_names (error->message, field))
    g_error ("“%s” does not name “%s”", error->message, field);
  /* Never the input back: messages stay short. */
  g_assert_cmpuint (strlen (error->message), <, 300);
}

static void
assert_rejected (const char *json,
                 const char *field)
{
  assert_rejected_with (json, -1, PERFMON_ERROR_INVALID_DATA, field);
}

static void
assert_changed_rejected (const char *from,
                         const char *to,
                         const char *field)
{
  g_autofree char *json = change (from, to);

  g_test_message ("%s → %s", from, to);
  assert_rejected (json, field);
}

/* What the ping store writes reads back: its envelope, its hangs as
 * reports (their frames against the shared modules), and the very same
 * JSON. */
static void
test_store_ping_reads_back (void)
{
  g_autofree char *dir = g_dir_make_tmp ("test-bhr-ping-XXXXXX", NULL);
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autoptr(PerfmonBhrPing) ping = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *again = NULL;
  /* Freed one by one at the end: g_autofree on an array frees its first
   * element only. */
  char *ids[G_N_ELEMENTS (records)] = { NULL };
  g_auto(GStrv) stack = NULL;
  gsize length;
  PerfmonPingInfo info = {
    .app_name = "test-bhr-ping",
    .app_version = "1.2",
    .channel = "nightly",
    .build_id = "20261128093152",
    .time_since_last_ping_ms = 12345,
  };

  store = _perfmon_ping_store_open (dir, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (records); i++)
    {
      ids[i] = _perfmon_ping_store_save_hang_json (store, NULL, records[i], &error);
      g_assert_no_error (error);
    }
  path = _perfmon_ping_store_write_ping (store, &info, &error);
  g_assert_no_error (error);
  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);

  ping = perfmon_bhr_ping_new_from_json (contents, (gssize) length, &error);
  g_assert_no_error (error);
  g_assert_nonnull (ping);
  g_assert_true (g_str_has_suffix (path, ".json"));
  g_assert_true (strstr (path, perfmon_bhr_ping_get_id (ping)) != NULL);
  g_assert_true (g_uuid_string_is_valid (perfmon_bhr_ping_get_client_id (ping)));
  g_assert_cmpstr (perfmon_bhr_ping_get_app_name (ping), ==, "test-bhr-ping");
  g_assert_cmpstr (perfmon_bhr_ping_get_app_version (ping), ==, "00.1.2");
  g_assert_cmpstr (perfmon_bhr_ping_get_app_channel (ping), ==, "nightly");
  g_assert_cmpstr (perfmon_bhr_ping_get_app_build_id (ping), ==, "20261128093152");
  g_assert_cmpint (perfmon_bhr_ping_get_time_since_last_ping (ping), ==, 12345);
  g_assert_nonnull (perfmon_bhr_ping_get_creation_date (ping));

  g_assert_cmpuint (perfmon_bhr_ping_get_n_hangs (ping), ==, 2);
  for (guint i = 0; i < 2; i++)
    {
      const char *id = perfmon_bhr_ping_get_hang_id (ping, i);

      g_assert_true (g_strcmp0 (id, ids[0]) == 0 || g_strcmp0 (id, ids[1]) == 0);
    }
  /* The worker's hang: its frames name its own modules, through the
   * shared list. */
  for (guint i = 0; i < 2; i++)
    if (g_str_equal (perfmon_hang_report_get_thread (perfmon_bhr_ping_get_hang (ping, i)), "worker"))
      stack = perfmon_hang_report_dup_stack (perfmon_bhr_ping_get_hang (ping, i));
  g_assert_nonnull (stack);
  g_assert_cmpuint (g_strv_length (stack), ==, 2);
  g_assert_cmpstr (stack[0], ==, "libglib-2.0.so.0+0xff");
  g_assert_cmpstr (stack[1], ==, "libjson-glib-1.0.so.0+0x10");

  /* The writer's output is a fixed point of the reader. */
  again = perfmon_bhr_ping_to_json (ping);
  g_assert_cmpstr (again, ==, contents);

  _perfmon_ping_store_close (g_steal_pointer (&store));
  test_remove_tree (dir);
  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    g_free (ids[i]);
}

/* The writer keeps within the reader's bounds: a long or empty
 * application name, channel or version still makes a ping that reads. */
static void
test_writer_keeps_within_bounds (void)
{
  g_autofree char *long_name = g_strnfill (3 * PERFMON_BHR_PING_MAX_STRING_BYTES, 'n');
  g_autoptr(PerfmonHangReport) report = perfmon_hang_report_new_from_json (records[1], -1, NULL);
  g_autoptr(JsonObject) hang = _perfmon_hang_report_to_json_object (report);
  g_autoptr(PerfmonBhrPing) ping = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = json_node_new (JSON_NODE_OBJECT);
  g_autofree char *json = NULL;
  g_autofree char *id = g_uuid_string_random ();
  PerfmonBhrPingBuilder *builder;
  PerfmonPingInfo info = {
    .app_name = long_name,
    .app_version = "",
    .channel = "",
    .time_since_last_ping_ms = -5,
  };

  builder = _perfmon_bhr_ping_builder_new (&info, &error);
  g_assert_no_error (error);
  _perfmon_bhr_ping_builder_add_hang (builder, hang, "h1");
  json_node_take_object (node, _perfmon_bhr_ping_builder_end (builder, id, id));
  json = json_to_string (node, FALSE);

  ping = perfmon_bhr_ping_new_from_json (json, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (strlen (perfmon_bhr_ping_get_app_name (ping)), ==, PERFMON_BHR_PING_MAX_STRING_BYTES);
  g_assert_cmpstr (perfmon_bhr_ping_get_app_channel (ping), ==, "default");
  g_assert_cmpstr (perfmon_bhr_ping_get_app_version (ping), ==, "00.0");
  g_assert_cmpint (perfmon_bhr_ping_get_time_since_last_ping (ping), ==, 0);
}

/* Each rule, once: the error names the field and what it allows. */
static void
test_rejections (void)
{
  g_autoptr(PerfmonBhrPing) ping = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *big = NULL;
  g_autofree char *deep = NULL;
  g_autofree char *long_name = NULL;
  g_autofree char *many = NULL;
  g_autofree char *opening = g_strnfill (11, '[');
  g_autofree char *closing = g_strnfill (11, ']');
  g_autofree char *letters = g_strnfill (PERFMON_BHR_PING_MAX_STRING_BYTES + 1, 'a');
  g_autofree char *version_5 = change ("\"version\":4", "\"version\":5");

  /* The base case is valid. */
  ping = perfmon_bhr_ping_new_from_json (valid, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_bhr_ping_get_n_hangs (ping), ==, 1);

  /* The document. */
  assert_rejected ("", "(root)");
  assert_rejected ("[]", "(root)");
  assert_rejected ("{\"type\": \"bhr\",", "(root)");
  assert_rejected ("/* */ {}", "(root)");
  assert_rejected ("\xff{}", "(root)");
  assert_rejected_with (valid, sizeof valid, PERFMON_ERROR_INVALID_DATA, "(root)");  /* its NUL */
  big = g_strdup_printf ("{\"pad\":\"%*s\"}", PERFMON_BHR_PING_MAX_JSON_BYTES, "");
  assert_rejected (big, "(root)");
  deep = g_strdup_printf ("{\"a\":%s1%s}", opening, closing);
  assert_rejected (deep, "(root)");

  /* The envelope. */
  assert_changed_rejected ("\"type\":\"bhr\"", "\"type\":\"backgroundhangmonitor\"", "type");
  assert_changed_rejected ("\"type\":\"bhr\",", "", "type");
  assert_changed_rejected ("\"version\":4", "\"version\":\"4\"", "version");
  assert_rejected_with (version_5, -1, PERFMON_ERROR_UNSUPPORTED_VERSION, "version");
  assert_changed_rejected ("\"id\":\"0d3a4c8e-6f1b-4a53-9d2e-3f4b5c6d7e8f\"", "\"id\":\"../../etc/passwd\"", "id");
  assert_changed_rejected ("\"id\":\"0d3a4c8e-6f1b-4a53-9d2e-3f4b5c6d7e8f\"", "\"id\":7", "id");
  assert_changed_rejected ("\"clientId\":\"11111111-2222-4333-8444-555555555555\"", "\"clientId\":\"\"", "clientId");
  assert_changed_rejected ("\"creationDate\":\"2026-11-28T09:31:52.123Z\"", "\"creationDate\":\"yesterday\"",
                           "creationDate");
  assert_changed_rejected ("\"application\":" APPLICATION ",", "", "application");
  assert_changed_rejected ("\"application\":" APPLICATION, "\"application\":[]", "application");
  assert_changed_rejected ("\"buildId\":\"20260101000000\"", "\"buildId\":\"2026\"", "application.buildId");
  assert_changed_rejected ("\"name\":\"app\"", "\"name\":\"\"", "application.name");
  assert_changed_rejected ("\"name\":\"app\"", "\"name\":null", "application.name");
  assert_changed_rejected ("\"channel\":\"default\",", "", "application.channel");
  assert_changed_rejected ("\"version\":\"00.1\"", "\"version\":\"1.0\"", "application.version");
  assert_changed_rejected ("\"platformVersion\":\"00.0.3.0\"", "\"platformVersion\":\"x\"",
                           "application.platformVersion");
  long_name = g_strdup_printf ("\"name\":\"%s\"", letters);
  assert_changed_rejected ("\"name\":\"app\"", long_name, "application.name");

  /* The payload. */
  assert_changed_rejected ("\"payload\":{", "\"payload\":7,\"x\":{", "payload");
  assert_changed_rejected ("\"timeSinceLastPing\":12", "\"timeSinceLastPing\":-1", "payload.timeSinceLastPing");
  assert_changed_rejected ("\"timeSinceLastPing\":12", "\"timeSinceLastPing\":1.5", "payload.timeSinceLastPing");
  assert_changed_rejected ("\"modules\":[[\"libglib-2.0.so.0\",\"0A0B\"]]", "\"modules\":{}", "payload.modules");
  assert_changed_rejected ("\"modules\":[[\"libglib-2.0.so.0\",\"0A0B\"]]", "\"modules\":[[\"x\",1]]",
                           "payload.modules[0]");
  assert_changed_rejected ("\"hangs\":[" HANG "]", "\"hangs\":{}", "payload.hangs");
  assert_changed_rejected ("\"hangs\":[" HANG "]", "\"hangs\":[1]", "payload.hangs[0]");
  assert_changed_rejected ("\"hangs\":[" HANG "]", "\"hangs\":[" HANG "," HANG "]", "payload.hangs[1].hangId");
  assert_changed_rejected ("\"hangId\":\"h1\"", "\"hangId\":\"../h1\"", "payload.hangs[0].hangId");
  assert_changed_rejected (",\"hangId\":\"h1\"", "", "payload.hangs[0].hangId");
  /* Each hang as a report, its frames against the shared modules. */
  assert_changed_rejected ("[[0,\"10\"],[-1,\"20\"]]", "[[1,\"10\"],[-1,\"20\"]]", "payload.hangs[0].stack[0]");
  assert_changed_rejected ("\"thread\":\"main\",", "", "payload.hangs[0].thread");
  assert_changed_rejected ("\"duration\":1.0", "\"duration\":-1", "payload.hangs[0].duration");
  assert_changed_rejected ("\"symbols\":[null,null]", "\"symbols\":[null,null],\"modules\":[]",
                           "payload.hangs[0].modules");
  {
    GString *text = g_string_new ("[");
    g_autofree char *hangs = NULL;

    for (guint i = 0; i <= PERFMON_BHR_PING_MAX_HANGS; i++)
      g_string_append (text, i > 0 ? ",{}" : "{}");
    g_string_append (text, "]");
    hangs = g_string_free (text, FALSE);
    many = change ("[" HANG "]", hangs);
  }
  assert_rejected (many, "payload.hangs");  /* before any hang is read */
}

/* A hang the report's reader refuses is refused in a ping too, with the
 * same field: every invalid case of tests/hang-reports/cases.json that is
 * an object. */
static void
test_hang_report_cases (void)
{
  g_autoptr(JsonArray) cases = hang_report_cases_load ();

  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *entry = json_array_get_object_element (cases, i);
      const char *report = json_object_get_string_member (entry, "report");
      const char *field = hang_report_case_field (cases, i);
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(JsonNode) node = NULL;
      g_autoptr(JsonObject) hang = NULL;
      g_autoptr(GError) error = NULL;
      g_autoptr(PerfmonBhrPing) ping = NULL;
      g_autofree char *hang_text = NULL;
      g_autofree char *modules_text = NULL;
      g_autofree char *json = NULL;
      g_autofree char *prefixed = NULL;

      /* Not JSON, or too deep, or too large for json-glib: the (root)
       * cases, which the ping's document checks see first. */
      if ((field != NULL && g_str_equal (field, "(root)")) ||
          !json_parser_load_from_data (parser, report, -1, NULL) ||
          !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
        continue;
      g_test_message ("case %s", json_object_get_string_member (entry, "name"));
      hang = json_object_ref (json_node_get_object (json_parser_get_root (parser)));
      /* The report's own modules become the ping's. */
      if (json_object_has_member (hang, "modules"))
        {
          node = json_node_copy (json_object_get_member (hang, "modules"));
          json_object_remove_member (hang, "modules");
          modules_text = json_to_string (node, FALSE);
          g_clear_pointer (&node, json_node_unref);
        }
      json_object_set_string_member (hang, "hangId", "h1");
      node = json_node_new (JSON_NODE_OBJECT);
      json_node_set_object (node, hang);
      hang_text = json_to_string (node, FALSE);
      {
        g_autofree char *with_modules = change ("[[\"libglib-2.0.so.0\",\"0A0B\"]]",
                                                modules_text != NULL ? modules_text : "[]");
        const char *at = strstr (with_modules, "\"hangs\":[");

        g_assert_nonnull (at);
        json = g_strdup_printf ("%.*s\"hangs\":[%s]}}", (int) (at - with_modules), with_modules, hang_text);
      }
      /* json-glib writes back the bytes of a bad escape as they are, and
       * a double of 1e17 or more as "1e+17.0": not a bad hang of a ping,
       * but a ping that is not UTF-8, or not JSON. */
      if (!g_utf8_validate (json, -1, NULL) || !json_parser_load_from_data (parser, json, -1, NULL))
        continue;
      ping = perfmon_bhr_ping_new_from_json (json, -1, &error);
      if (field == NULL)
        {
          g_assert_no_error (error);
          continue;
        }
      g_assert_null (ping);
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
      prefixed = g_strconcat (g_str_equal (field, "modules") || g_str_has_prefix (field, "modules[")
                                ? "payload." : "payload.hangs[0].", field, NULL);
      if (!hang_report_error_names (error->message, prefixed))
        g_error ("“%s” does not name “%s”", error->message, prefixed);
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/bhr-ping/store-ping-reads-back", test_store_ping_reads_back);
  g_test_add_func ("/bhr-ping/writer-keeps-within-bounds", test_writer_keeps_within_bounds);
  g_test_add_func ("/bhr-ping/rejections", test_rejections);
  g_test_add_func ("/bhr-ping/hang-report-cases", test_hang_report_cases);
  return g_test_run ();
}
