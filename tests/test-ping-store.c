/* test-ping-store.c: persisted hang records, their adoption after a crash, and the pings that batch them
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <utime.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon.h"
#include "perfmon-test-dirs.h"
#include "perfmon-ping-store-private.h"
#include "perfmon-hang-report-cases.h"

#define DIR_ENV "PERFMON_TEST_PINGS_DIR"

/* The seed's example, with two modules. */
static const char *hang_a =
  "{\"duration\": 301.5, \"thread\": \"main\", \"runnableName\": \"spell-check\","
  " \"process\": \"default\", \"remoteType\": null,"
  " \"annotations\": [[\"Unrecovered\", \"true\"]],"
  " \"pseudoStack\": [\"outer label\", \"inner label dyn\"],"
  " \"stack\": [\"outer label\", [0, \"1a2b\"], [-1, \"7ffe0010\"], \"inner label dyn\", [1, \"40\"]],"
  " \"modules\": [[\"app\", \"55679D09BCDEA35B11111111111111110\"],"
  "               [\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"]]}";

/* Shares glib with hang_a, at another index, and adds a module. */
static const char *hang_b =
  "{\"duration\": 150, \"thread\": \"worker\", \"runnableName\": \"\","
  " \"process\": \"tab\", \"remoteType\": \"web\", \"annotations\": [],"
  " \"stack\": [[0, \"ff\"], [-1, \"1\"], [1, \"10\"], [0, \"20\"]],"
  " \"modules\": [[\"libglib-2.0.so.0\", \"0A0B0C0D0E0F10111213141516171819A\"],"
  "               [\"libjson-glib-1.0.so.0\", \"FFEEDDCCBBAA99887766554433221100B\"]]}";

/* Same debug name as in hang_a, other breakpad id: another module. */
static const char *hang_c =
  "{\"duration\": 200, \"thread\": \"main\", \"runnableName\": \"x\","
  " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
  " \"stack\": [[0, \"abc\"]],"
  " \"modules\": [[\"app\", \"00000000000000000000000000000000A\"]]}";

typedef struct
{
  char *dir;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-ping-store-XXXXXX");
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

static JsonObject *
parse_object (const char *json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = json_from_string (json, &error);

  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (node));
  return json_object_ref (json_node_get_object (node));
}

/* @hang as the store takes it. */
static PerfmonHangReport *
report_from_object (JsonObject *hang)
{
  g_autoptr(JsonNode) node = json_node_init_object (json_node_alloc (), hang);
  g_autofree char *json = json_to_string (node, FALSE);
  g_autoptr(GError) error = NULL;
  PerfmonHangReport *report = perfmon_hang_report_new_from_json (json, -1, &error);

  g_assert_no_error (error);
  return report;
}

static JsonObject *
load_object (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;

  g_file_get_contents (path, &contents, NULL, &error);
  g_assert_no_error (error);
  return parse_object (contents);
}

static char *
save (PerfmonPingStore *store,
      const char       *id,
      const char       *json)
{
  g_autoptr(GError) error = NULL;
  char *new_id = _perfmon_ping_store_save_hang_json (store, id, json, &error);

  g_assert_no_error (error);
  g_assert_nonnull (new_id);
  return new_id;
}

static char *
write_ping (PerfmonPingStore *store)
{
  g_autoptr(GError) error = NULL;
  PerfmonPingInfo info = { .app_name = "test-ping-store", .app_version = "1.2" };
  char *path = _perfmon_ping_store_write_ping (store, &info, &error);

  g_assert_no_error (error);
  return path;
}

static int
compare_strings (gconstpointer a,
                 gconstpointer b)
{
  return strcmp (*(const char * const *) a, *(const char * const *) b);
}

/* The names in @dir, sorted, as one space-separated string. */
static char *
list_names (const char *dir)
{
  g_autoptr(GDir) handle = g_dir_open (dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  while (handle != NULL && (name = g_dir_read_name (handle)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_strings);
  g_ptr_array_add (names, NULL);
  return g_strjoinv (" ", (char **) names->pdata);
}

static guint
count_entries (const char *dir)
{
  g_autoptr(GDir) handle = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (handle != NULL && g_dir_read_name (handle) != NULL)
    n++;
  return n;
}

static char *
pending_root (const char *dir)
{
  return g_build_filename (dir, PERFMON_PING_STORE_PENDING_DIR, NULL);
}

static void
assert_mode (const char *path,
             guint       mode)
{
  GStatBuf st;

  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpuint (st.st_mode & 0777, ==, mode);
}

static void
test_save_count (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id1 = NULL;
  g_autofree char *id2 = NULL;
  g_autofree char *path = NULL;
  g_autofree char *file = NULL;
  g_autoptr(JsonObject) saved = NULL;
  g_autoptr(JsonObject) hang = parse_object (hang_a);
  g_autoptr(PerfmonHangReport) report = report_from_object (hang);
  g_autofree char *written = perfmon_hang_report_to_json (report);
  g_autoptr(JsonObject) expected = parse_object (written);

  g_assert_no_error (error);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);

  id1 = _perfmon_ping_store_save_hang (store, NULL, report, &error);
  g_assert_no_error (error);
  id2 = save (store, NULL, hang_b);
  g_assert_cmpstr (id1, !=, id2);
  /* Ids sort in the order of saving. */
  g_assert_cmpint (strcmp (id1, id2), <, 0);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 2);

  assert_mode (fixture->dir, 0700);
  assert_mode (_perfmon_ping_store_get_pending_dir (store), 0700);
  file = g_strconcat (id1, ".json", NULL);
  path = g_build_filename (_perfmon_ping_store_get_pending_dir (store), file, NULL);
  assert_mode (path, 0600);

  /* The record as the report writes it, modules and all. */
  saved = load_object (path);
  g_assert_true (json_object_equal (saved, expected));
}

static void
test_replace (Fixture       *fixture,
              gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;
  g_autofree char *again = NULL;
  g_autofree char *ping_path = NULL;
  g_autofree char *path = NULL;
  g_autoptr(JsonObject) final = parse_object (hang_a);
  g_autoptr(PerfmonHangReport) final_report = NULL;
  g_autoptr(JsonObject) saved = NULL;

  g_assert_no_error (error);
  id = save (store, NULL, hang_a);

  /* The permahang ended: the provisional record becomes the final one. */
  json_object_set_double_member (final, "duration", 5000.25);
  json_object_set_array_member (final, "annotations", json_array_new ());
  final_report = report_from_object (final);
  again = _perfmon_ping_store_save_hang (store, id, final_report, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (again, ==, id);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);

  path = g_strdup_printf ("%s/%s.json", _perfmon_ping_store_get_pending_dir (store), id);
  saved = load_object (path);
  g_assert_cmpfloat (json_object_get_double_member (saved, "duration"), ==, 5000.25);
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (saved, "annotations")), ==, 0);

  /* Sent meanwhile: the final record is written anew, to be sent too. */
  ping_path = write_ping (store);
  g_assert_nonnull (ping_path);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);
  g_free (again);
  again = _perfmon_ping_store_save_hang (store, id, final_report, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (again, ==, id);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);
}

static void
assert_frame (JsonArray  *stack,
              guint       i,
              gint64      index,
              const char *offset)
{
  JsonArray *frame = json_array_get_array_element (stack, i);

  g_assert_nonnull (frame);
  g_assert_cmpuint (json_array_get_length (frame), ==, 2);
  g_assert_cmpint (json_array_get_int_element (frame, 0), ==, index);
  g_assert_cmpstr (json_array_get_string_element (frame, 1), ==, offset);
}

static void
assert_module (JsonArray  *modules,
               guint       i,
               const char *name,
               const char *breakpad_id)
{
  JsonArray *module = json_array_get_array_element (modules, i);

  g_assert_cmpuint (json_array_get_length (module), ==, 2);
  g_assert_cmpstr (json_array_get_string_element (module, 0), ==, name);
  g_assert_cmpstr (json_array_get_string_element (module, 1), ==, breakpad_id);
}

static void
test_merge (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id_a = NULL;
  g_autofree char *id_b = NULL;
  g_autofree char *id_c = NULL;
  g_autofree char *path = NULL;
  g_autofree char *again = NULL;
  g_autoptr(JsonObject) ping = NULL;
  JsonObject *payload;
  JsonArray *modules;
  JsonArray *hangs;
  JsonObject *hang;
  JsonArray *stack;

  g_assert_no_error (error);
  id_a = save (store, NULL, hang_a);
  id_b = save (store, NULL, hang_b);
  id_c = save (store, NULL, hang_c);

  path = write_ping (store);
  g_assert_nonnull (path);
  g_assert_true (g_str_has_prefix (path, fixture->dir));
  ping = load_object (path);
  payload = json_object_get_object_member (ping, "payload");
  modules = json_object_get_array_member (payload, "modules");
  hangs = json_object_get_array_member (payload, "hangs");

  /* One entry per [debug name, breakpad id], in order of first use. */
  g_assert_cmpuint (json_array_get_length (modules), ==, 4);
  assert_module (modules, 0, "app", "55679D09BCDEA35B11111111111111110");
  assert_module (modules, 1, "libglib-2.0.so.0", "0A0B0C0D0E0F10111213141516171819A");
  assert_module (modules, 2, "libjson-glib-1.0.so.0", "FFEEDDCCBBAA99887766554433221100B");
  assert_module (modules, 3, "app", "00000000000000000000000000000000A");

  /* Oldest first. */
  g_assert_cmpuint (json_array_get_length (hangs), ==, 3);

  hang = json_array_get_object_element (hangs, 0);
  g_assert_false (json_object_has_member (hang, "modules"));
  g_assert_cmpstr (json_object_get_string_member (hang, "thread"), ==, "main");
  g_assert_cmpfloat (json_object_get_double_member (hang, "duration"), ==, 301.5);
  g_assert_true (json_object_get_null_member (hang, "remoteType"));
  stack = json_object_get_array_member (hang, "stack");
  g_assert_cmpuint (json_array_get_length (stack), ==, 5);
  g_assert_cmpstr (json_array_get_string_element (stack, 0), ==, "outer label");
  assert_frame (stack, 1, 0, "1a2b");
  assert_frame (stack, 2, -1, "7ffe0010");
  g_assert_cmpstr (json_array_get_string_element (stack, 3), ==, "inner label dyn");
  assert_frame (stack, 4, 1, "40");
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (hang, "pseudoStack")), ==, 2);

  hang = json_array_get_object_element (hangs, 1);
  g_assert_false (json_object_has_member (hang, "modules"));
  g_assert_cmpstr (json_object_get_string_member (hang, "thread"), ==, "worker");
  g_assert_cmpstr (json_object_get_string_member (hang, "remoteType"), ==, "web");
  stack = json_object_get_array_member (hang, "stack");
  g_assert_cmpuint (json_array_get_length (stack), ==, 4);
  assert_frame (stack, 0, 1, "ff");
  assert_frame (stack, 1, -1, "1");
  assert_frame (stack, 2, 2, "10");
  assert_frame (stack, 3, 1, "20");

  hang = json_array_get_object_element (hangs, 2);
  stack = json_object_get_array_member (hang, "stack");
  assert_frame (stack, 0, 3, "abc");

  /* Consumed, and nothing more to send. */
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);
  g_assert_cmpuint (count_entries (_perfmon_ping_store_get_pending_dir (store)), ==, 1);
  again = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (again);
}

static gboolean
matches (const char *pattern,
         const char *text)
{
  return g_regex_match_simple (pattern, text, 0, 0);
}

static void
test_envelope (Fixture       *fixture,
               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autofree char *path2 = NULL;
  g_autofree char *expected_name = NULL;
  g_autofree char *client_id_path = NULL;
  g_autofree char *client_id = NULL;
  g_autofree char *platform_version = _perfmon_ping_map_version (PACKAGE_VERSION);
  g_autoptr(JsonObject) ping = NULL;
  g_autoptr(JsonObject) ping2 = NULL;
  JsonObject *application;
  JsonObject *payload;
  PerfmonPingInfo info = {
    .app_name = "gedit",
    .app_version = "44.2",
    .build_id = "20240102030405",
    .channel = "nightly",
    .time_since_last_ping_ms = 98765,
  };

  g_assert_no_error (error);
  id = save (store, NULL, hang_a);
  path = _perfmon_ping_store_write_ping (store, &info, &error);
  g_assert_no_error (error);
  ping = load_object (path);

  g_assert_cmpstr (json_object_get_string_member (ping, "type"), ==, "bhr");
  g_assert_cmpint (json_object_get_int_member (ping, "version"), ==, 4);
  g_assert_true (g_uuid_string_is_valid (json_object_get_string_member (ping, "id")));
  expected_name = g_strconcat (json_object_get_string_member (ping, "id"), ".json", NULL);
  g_assert_cmpstr (strrchr (path, '/') + 1, ==, expected_name);
  g_assert_true (matches ("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                          json_object_get_string_member (ping, "creationDate")));
  g_assert_false (json_object_has_member (ping, "environment"));
  assert_mode (path, 0600);

  /* The client id is made once, and kept. */
  client_id_path = g_build_filename (fixture->dir, PERFMON_PING_STORE_CLIENT_ID, NULL);
  g_file_get_contents (client_id_path, &client_id, NULL, &error);
  g_assert_no_error (error);
  g_strstrip (client_id);
  g_assert_true (g_uuid_string_is_valid (client_id));
  g_assert_cmpstr (json_object_get_string_member (ping, "clientId"), ==, client_id);

  application = json_object_get_object_member (ping, "application");
  g_assert_cmpuint (json_object_get_size (application), ==, 8);
#if defined(__x86_64__)
  g_assert_cmpstr (json_object_get_string_member (application, "architecture"), ==, "x86-64");
  g_assert_cmpstr (json_object_get_string_member (application, "xpcomAbi"), ==, "x86_64-gcc3");
#elif defined(__aarch64__)
  g_assert_cmpstr (json_object_get_string_member (application, "architecture"), ==, "aarch64");
  g_assert_cmpstr (json_object_get_string_member (application, "xpcomAbi"), ==, "aarch64-gcc3");
#endif
  g_assert_cmpstr (json_object_get_string_member (application, "buildId"), ==, "20240102030405");
  g_assert_cmpstr (json_object_get_string_member (application, "channel"), ==, "nightly");
  g_assert_cmpstr (json_object_get_string_member (application, "name"), ==, "gedit");
  g_assert_cmpstr (json_object_get_string_member (application, "version"), ==, "44.2");
  g_assert_cmpstr (json_object_get_string_member (application, "platformVersion"), ==, platform_version);
  g_assert_cmpstr (json_object_get_string_member (application, "vendor"), ==, "perfmon");

  payload = json_object_get_object_member (ping, "payload");
  g_assert_cmpint (json_object_get_int_member (payload, "timeSinceLastPing"), ==, 98765);

  /* Defaults: the executable's mtime as build id, channel "default". */
  g_free (id);
  id = save (store, NULL, hang_b);
  path2 = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_assert_no_error (error);
  ping2 = load_object (path2);
  application = json_object_get_object_member (ping2, "application");
  g_assert_true (matches ("^[0-9]{14}$", json_object_get_string_member (application, "buildId")));
  g_assert_cmpstr (json_object_get_string_member (application, "channel"), ==, "default");
  g_assert_cmpstr (json_object_get_string_member (application, "version"), ==, "00.0");
  g_assert_cmpstr (json_object_get_string_member (ping2, "clientId"), ==, client_id);
  g_assert_cmpstr (json_object_get_string_member (ping2, "id"), !=,
                   json_object_get_string_member (ping, "id"));
}

static void
test_bad_build_id (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  PerfmonPingInfo info = { .build_id = "2024" };

  g_assert_no_error (error);
  id = save (store, NULL, hang_a);
  path = _perfmon_ping_store_write_ping (store, &info, &error);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "build_id"));
  g_assert_null (path);
  /* Not sent, so not consumed. */
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);
}

static void
test_corrupt_client_id (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *client_id_path = g_build_filename (fixture->dir, PERFMON_PING_STORE_CLIENT_ID, NULL);
  g_autofree char *contents = NULL;
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autoptr(JsonObject) ping = NULL;

  g_file_set_contents (client_id_path, "not a uuid\n", -1, &error);
  g_assert_no_error (error);
  store = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  id = save (store, NULL, hang_a);

  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*does not hold a UUID*");
  path = write_ping (store);
  g_test_assert_expected_messages ();

  ping = load_object (path);
  g_file_get_contents (client_id_path, &contents, NULL, &error);
  g_assert_no_error (error);
  g_strstrip (contents);
  g_assert_true (g_uuid_string_is_valid (contents));
  g_assert_cmpstr (json_object_get_string_member (ping, "clientId"), ==, contents);
}

static void
test_empty (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *path = NULL;
  g_autofree char *names = NULL;

  g_assert_no_error (error);
  path = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (path);
  /* No ping, and no client id made for nothing. */
  names = list_names (fixture->dir);
  g_assert_cmpstr (names, ==, PERFMON_PING_STORE_PENDING_DIR);
}

/* A store that dies without closing, in another process, leaves its
 * records to the next store. */
static void
test_crash_recovery (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *dir = NULL;
  g_autofree char *root = NULL;
  g_autofree char *path = NULL;
  g_autofree char *names = NULL;
  g_autoptr(JsonObject) ping = NULL;
  JsonArray *hangs;

  if (g_test_subprocess ())
    {
      PerfmonPingStore *doomed = _perfmon_ping_store_open (g_getenv (DIR_ENV), &error);
      g_autofree char *id = NULL;

      g_assert_no_error (error);
      id = save (doomed, NULL, hang_a);
      /* Dies during the permahang: no close, no exit handlers. */
      _exit (0);
    }

  dir = g_dir_make_tmp ("perfmon-ping-store-XXXXXX", &error);
  g_assert_no_error (error);
  g_setenv (DIR_ENV, dir, TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_unsetenv (DIR_ENV);

  /* The dead one's directory is there, with its record. */
  root = pending_root (dir);
  g_assert_cmpuint (count_entries (root), ==, 1);

  store = _perfmon_ping_store_open (dir, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);
  /* Adopted: only ours is left. */
  names = list_names (root);
  g_assert_cmpstr (names, ==, strrchr (_perfmon_ping_store_get_pending_dir (store), '/') + 1);

  path = write_ping (store);
  g_assert_nonnull (path);
  ping = load_object (path);
  hangs = json_object_get_array_member (json_object_get_object_member (ping, "payload"), "hangs");
  g_assert_cmpuint (json_array_get_length (hangs), ==, 1);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (hangs, 0),
                                                  "runnableName"), ==, "spell-check");

  g_clear_pointer (&store, _perfmon_ping_store_close);
  test_remove_tree (dir);
}

/* A live store's records are its own, even within one process. */
static void
test_live_not_adopted (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) first = _perfmon_ping_store_open (fixture->dir, &error);
  g_autoptr(PerfmonPingStore) second = NULL;
  g_autoptr(PerfmonPingStore) third = NULL;
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autofree char *root = pending_root (fixture->dir);

  g_assert_no_error (error);
  id = save (first, NULL, hang_a);

  second = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (_perfmon_ping_store_get_pending_dir (first), !=,
                   _perfmon_ping_store_get_pending_dir (second));
  g_assert_cmpuint (_perfmon_ping_store_count_pending (second), ==, 0);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (first), ==, 1);

  /* Writing a ping looks for dead stores again: still not this one. */
  path = _perfmon_ping_store_write_ping (second, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (path);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (first), ==, 1);

  /* Once closed (its record unsent), the next store takes it. */
  g_clear_pointer (&first, _perfmon_ping_store_close);
  third = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (third), ==, 1);

  /* A store closed with nothing pending leaves no directory behind. */
  g_clear_pointer (&second, _perfmon_ping_store_close);
  g_assert_cmpuint (count_entries (root), ==, 1);
}

/* A dead store's leftovers that are not hang files, such as the temporary
 * file of a write it did not finish, are set aside, not lost. */
static void
test_adopt_leftovers (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *root = pending_root (fixture->dir);
  g_autofree char *dead = g_build_filename (root, "4242-deadbeefdeadbeef", NULL);
  g_autofree char *lock = g_build_filename (dead, PERFMON_PING_STORE_LOCK_FILE, NULL);
  g_autofree char *record = g_build_filename (dead, "0000000000000001-4242-deadbeefdeadbeef-000001.json", NULL);
  g_autofree char *partial = g_build_filename (dead, "0000000000000002-4242-deadbeefdeadbeef-000002.json.AB12CD", NULL);
  g_autofree char *corrupt = g_build_filename (root, PERFMON_PING_STORE_CORRUPT_DIR, NULL);
  g_autofree char *names = NULL;
  g_autofree char *kept = NULL;
  g_autofree char *kept_path = NULL;

  g_assert_cmpint (g_mkdir_with_parents (dead, 0700), ==, 0);
  g_file_set_contents (lock, "", 0, &error);
  g_assert_no_error (error);
  g_file_set_contents (record, hang_b, -1, &error);
  g_assert_no_error (error);
  g_file_set_contents (partial, "{\"duration\": 1", -1, &error);
  g_assert_no_error (error);

  /* The temporary file of the dead process's unfinished write is not a
   * saved record (the rename is the commit): it is deleted, not kept. */
  store = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);

  g_assert_false (g_file_test (dead, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);
  g_assert_cmpuint (count_entries (corrupt), ==, 0);
  (void) names; (void) kept; (void) kept_path; (void) partial;
}

static void
test_corrupt_pending (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *root = pending_root (fixture->dir);
  g_autofree char *corrupt = g_build_filename (root, PERFMON_PING_STORE_CORRUPT_DIR, NULL);
  g_autofree char *garbage = NULL;
  g_autofree char *incomplete = NULL;
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autofree char *names = NULL;
  g_autofree char *kept = NULL;
  g_autofree char *kept_path = NULL;
  g_autoptr(JsonObject) ping = NULL;
  JsonArray *hangs;

  g_assert_no_error (error);
  garbage = g_build_filename (_perfmon_ping_store_get_pending_dir (store), "0000000000000001-x.json", NULL);
  incomplete = g_build_filename (_perfmon_ping_store_get_pending_dir (store), "0000000000000002-x.json", NULL);
  g_file_set_contents (garbage, "{not json", -1, &error);
  g_assert_no_error (error);
  g_file_set_contents (incomplete, "{\"duration\": 3}", -1, &error);
  g_assert_no_error (error);
  id = save (store, NULL, hang_a);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 3);

  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*0000000000000001-x.json*unusable*");
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*0000000000000002-x.json*unusable*thread*");
  path = write_ping (store);
  g_test_assert_expected_messages ();

  ping = load_object (path);
  hangs = json_object_get_array_member (json_object_get_object_member (ping, "payload"), "hangs");
  g_assert_cmpuint (json_array_get_length (hangs), ==, 1);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);

  names = list_names (corrupt);
  g_assert_cmpstr (names, ==, "0000000000000001-x.json 0000000000000002-x.json");
  kept_path = g_build_filename (corrupt, "0000000000000001-x.json", NULL);
  g_file_get_contents (kept_path, &kept, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (kept, ==, "{not json");

  /* Set aside, not retried: the next ping has nothing to warn about. */
  g_free (path);
  path = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_assert_no_error (error);
  g_assert_null (path);
}

/* Every file under @dir is one of ours, none a temporary left behind by an
 * atomic write (those end in ".XXXXXX" after the real name). */
static void
assert_no_temporaries (const char *dir)
{
  g_autoptr(GDir) handle = g_dir_open (dir, 0, NULL);
  const char *name;

  g_assert_nonnull (handle);
  while ((name = g_dir_read_name (handle)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        assert_no_temporaries (path);
      else if (!g_str_equal (name, PERFMON_PING_STORE_LOCK_FILE) &&
               !g_str_equal (name, PERFMON_PING_STORE_CLIENT_ID))
        g_assert_true (g_str_has_suffix (name, ".json") && strstr (name, ".json.") == NULL);
    }
}

static void
test_no_temporaries (Fixture       *fixture,
                     gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;
  g_autofree char *replaced = NULL;
  g_autofree char *other = NULL;
  g_autofree char *path = NULL;
  g_autofree char *names = NULL;
  g_autofree char *expected = NULL;

  g_assert_no_error (error);
  id = save (store, NULL, hang_a);
  replaced = save (store, id, hang_b);
  other = save (store, NULL, hang_c);
  assert_no_temporaries (fixture->dir);
  names = list_names (_perfmon_ping_store_get_pending_dir (store));
  expected = g_strdup_printf ("%s.json %s.json %s", id, other, PERFMON_PING_STORE_LOCK_FILE);
  g_assert_cmpstr (names, ==, expected);

  path = write_ping (store);
  assert_no_temporaries (fixture->dir);
  g_clear_pointer (&names, g_free);
  names = list_names (fixture->dir);
  g_clear_pointer (&expected, g_free);
  /* list_names() sorts, and the ping's random UUID may sort before or
   * after "client-id". */
  if (g_strcmp0 (strrchr (path, '/') + 1, PERFMON_PING_STORE_CLIENT_ID) < 0)
    expected = g_strdup_printf ("%s %s %s", strrchr (path, '/') + 1,
                                PERFMON_PING_STORE_CLIENT_ID, PERFMON_PING_STORE_PENDING_DIR);
  else
    expected = g_strdup_printf ("%s %s %s", PERFMON_PING_STORE_CLIENT_ID, strrchr (path, '/') + 1,
                                PERFMON_PING_STORE_PENDING_DIR);
  g_assert_cmpstr (names, ==, expected);
}

static void
assert_rejected (PerfmonPingStore *store,
                 const char       *json,
                 const char       *field)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *id = _perfmon_ping_store_save_hang_json (store, NULL, json, &error);

  g_assert_null (id);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  if (!hang_report_error_names (error->message, field))
    g_error ("“%s” does not name “%s”", error->message, field);
}

static void
test_invalid_record (Fixture       *fixture,
                     gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;

  g_assert_no_error (error);

  assert_rejected (store, "{\"thread\": \"main\", \"runnableName\": \"\", \"process\": \"default\","
                   " \"remoteType\": null, \"annotations\": []}", "duration");
  assert_rejected (store, "{\"duration\": 1, \"runnableName\": \"\", \"process\": \"default\","
                   " \"remoteType\": null, \"annotations\": []}", "thread");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"process\": \"default\","
                   " \"remoteType\": null, \"annotations\": []}", "runnableName");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"remoteType\": null, \"annotations\": []}", "process");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"annotations\": []}", "remoteType");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null}", "annotations");

  /* Present, but wrong. */
  assert_rejected (store, "{\"duration\": -1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": []}", "duration");
  assert_rejected (store, "{\"duration\": \"1\", \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": []}", "duration");
  assert_rejected (store, "{\"duration\": 1, \"thread\": 7, \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": []}", "thread");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": 3, \"annotations\": []}", "remoteType");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [[\"a\"]]}",
                   "annotations[0]");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
                   " \"pseudoStack\": [1]}", "pseudoStack[0]");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
                   " \"modules\": [[\"a\", \"b\"]], \"stack\": [\"x\", [1, \"ff\"]]}", "stack[1]");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
                   " \"stack\": [[0, \"ff\"]]}", "stack[0]");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
                   " \"stack\": [[-1, \"xyz\"]]}", "stack[0]");
  assert_rejected (store, "{\"duration\": 1, \"thread\": \"main\", \"runnableName\": \"\","
                   " \"process\": \"default\", \"remoteType\": null, \"annotations\": [],"
                   " \"modules\": [[\"a\", 2]]}", "modules[0]");
  assert_rejected (store, "[1, 2]", "(root)");

  /* An id that could name a file elsewhere. */
  id = _perfmon_ping_store_save_hang_json (store, "../escape", hang_a, &error);
  g_assert_null (id);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);

  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);
}

/* The reports every reader judges alike: saved, or read back from a
 * pending file, as tests/hang-reports/cases.json says. */
static void
test_cases (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autoptr(JsonArray) cases = hang_report_cases_load ();

  g_assert_no_error (error);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *entry = json_array_get_object_element (cases, i);
      const char *report = json_object_get_string_member (entry, "report");
      const char *field = hang_report_case_field (cases, i);
      g_autofree char *id = NULL;
      g_autofree char *pending = g_build_filename (_perfmon_ping_store_get_pending_dir (store),
                                                   "0000000000000001-case.json", NULL);
      g_autofree char *ping = NULL;

      g_test_message ("case %s", json_object_get_string_member (entry, "name"));
      id = _perfmon_ping_store_save_hang_json (store, NULL, report, &error);
      if (field == NULL)
        {
          g_assert_no_error (error);
          g_assert_nonnull (id);
        }
      else
        {
          g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
          if (!hang_report_error_names (error->message, field))
            g_error ("“%s” does not name “%s”", error->message, field);
          g_clear_error (&error);
        }

      /* The same report found in a pending file: sent, or set aside. */
      g_file_set_contents (pending, report, -1, &error);
      g_assert_no_error (error);
      if (field != NULL)
        g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*0000000000000001-case.json*unusable*");
      ping = write_ping (store);
      g_test_assert_expected_messages ();
      if (field != NULL)
        {
          g_assert_null (ping);
          continue;
        }
      g_assert_nonnull (ping);
      {
        g_autoptr(JsonObject) sent = load_object (ping);
        JsonArray *hangs = json_object_get_array_member (json_object_get_object_member (sent, "payload"),
                                                         "hangs");

        /* The saved one and the pending file. */
        g_assert_cmpuint (json_array_get_length (hangs), ==, 2);
      }
      g_unlink (ping);
    }
}

static void
test_map_version (void)
{
  static const struct { const char *in; const char *out; } cases[] = {
    { NULL, "00.0" },
    { "", "00.0" },
    { "1.2", "00.1.2" },
    { "0.1.0", "00.0.1.0" },
    { "44.2", "44.2" },
    { "115.0.1", "115.0.1" },
    { "1234.5", "00.1234.5" },
    { "12", "00.12" },
    { "3.0 beta/2", "00.3.0_beta_2" },
    { "2.0~rc1+git-abc", "00.2.0~rc1+git-abc" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *mapped = _perfmon_ping_map_version (cases[i].in);

      g_assert_cmpstr (mapped, ==, cases[i].out);
      g_assert_true (matches ("^[0-9]{2,3}\\.", mapped));
    }
}

static void
test_open_error (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("perfmon-ping-store-XXXXXX", &error);
  g_autofree char *file = g_build_filename (dir, "file", NULL);
  g_autofree char *under_file = g_build_filename (file, "pings", NULL);
  PerfmonPingStore *store;

  g_assert_no_error (error);
  g_file_set_contents (file, "", 0, &error);
  g_assert_no_error (error);

  store = _perfmon_ping_store_open (under_file, &error);
  g_assert_null (store);
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR);
  g_assert_nonnull (strstr (error->message, under_file));

  test_remove_tree (dir);
}

/* A full disk, or a client-id that cannot be read or written: pings still
 * go out, and the hangs they carry are deleted. (A directory in the way of
 * client-id makes it unreadable and unwritable without root or a tiny
 * tmpfs.) */
static void
test_client_id_unwritable (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *client_id_path = g_build_filename (fixture->dir, PERFMON_PING_STORE_CLIENT_ID, NULL);
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autofree char *second = NULL;
  g_autoptr(JsonObject) ping = NULL;
  g_autoptr(JsonObject) ping2 = NULL;

  g_assert_cmpint (g_mkdir_with_parents (client_id_path, 0700), ==, 0);
  store = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  id = save (store, NULL, hang_a);

  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*Could not keep the client id*");
  path = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_nonnull (path);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);
  ping = load_object (path);
  g_assert_true (g_uuid_string_is_valid (json_object_get_string_member (ping, "clientId")));

  /* The same id for the process's later pings, without a new warning. */
  g_free (id);
  id = save (store, NULL, hang_b);
  second = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_assert_no_error (error);
  ping2 = load_object (second);
  g_assert_cmpstr (json_object_get_string_member (ping2, "clientId"), ==,
                   json_object_get_string_member (ping, "clientId"));
}

/* A symbolic link planted in a pending directory (of a dead process, or
 * ours) is never read through into a ping; it is set aside. */
static void
test_symlink_not_followed (Fixture       *fixture,
                           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *root = pending_root (fixture->dir);
  g_autofree char *dead = g_build_filename (root, "4242-deadbeefdeadbeef", NULL);
  g_autofree char *lock = g_build_filename (dead, PERFMON_PING_STORE_LOCK_FILE, NULL);
  g_autofree char *secret = g_build_filename (fixture->dir, "secret.json", NULL);
  g_autofree char *link1 = g_build_filename (dead, "0000000000000001-4242-x.json", NULL);
  g_autofree char *link2 = NULL;
  g_autofree char *corrupt = g_build_filename (root, PERFMON_PING_STORE_CORRUPT_DIR, NULL);
  g_autofree char *path = NULL;

  /* A valid record: only the link stands between it and a ping. */
  g_file_set_contents (secret, hang_a, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_mkdir_with_parents (dead, 0700), ==, 0);
  g_file_set_contents (lock, "", 0, &error);
  g_assert_no_error (error);
  g_assert_cmpint (symlink (secret, link1), ==, 0);

  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*unusable*");
  store = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  link2 = g_build_filename (_perfmon_ping_store_get_pending_dir (store), "0000000000000002-x.json", NULL);
  g_assert_cmpint (symlink (secret, link2), ==, 0);
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*0000000000000002-x.json*unusable*symbolic link*");
  path = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_null (path);
  g_assert_cmpuint (count_entries (corrupt), ==, 2);
  g_assert_true (g_file_test (secret, G_FILE_TEST_IS_REGULAR));
}

/* pending/corrupt/ keeps only the newest few files. */
static void
test_corrupt_bounded (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *root = pending_root (fixture->dir);
  g_autofree char *corrupt = g_build_filename (root, PERFMON_PING_STORE_CORRUPT_DIR, NULL);
  g_autofree char *path = NULL;

  g_assert_no_error (error);
  for (guint i = 0; i < 40; i++)
    {
      g_autofree char *name = g_strdup_printf ("%016u-x.json", i);
      g_autofree char *file = g_build_filename (_perfmon_ping_store_get_pending_dir (store), name, NULL);

      g_file_set_contents (file, "{not json", -1, &error);
      g_assert_no_error (error);
    }
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*unusable*");
  for (guint i = 1; i < 40; i++)
    g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*unusable*");
  path = _perfmon_ping_store_write_ping (store, NULL, &error);
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_null (path);
  g_assert_cmpuint (count_entries (corrupt), <=, 16);
  g_assert_cmpuint (count_entries (corrupt), >, 0);
}

/* Temporary files of atomic writes whose process died (old ones) are
 * removed at start; a fresh one may be a live sibling's and stays. */
static void
test_stale_temporaries (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *old = g_build_filename (fixture->dir, "0b7ab6b1-3e8c-4ad5-a1b4-3c1b0d5e3a1f.json.Ab12Cd", NULL);
  g_autofree char *fresh = g_build_filename (fixture->dir, "1b7ab6b1-3e8c-4ad5-a1b4-3c1b0d5e3a1f.json.Xy34Zw", NULL);
  struct utimbuf long_ago = { .actime = time (NULL) - 3600, .modtime = time (NULL) - 3600 };

  g_assert_cmpint (g_mkdir_with_parents (fixture->dir, 0700), ==, 0);
  g_file_set_contents (old, "{\"type\": \"bh", -1, &error);
  g_assert_no_error (error);
  g_file_set_contents (fresh, "{\"type\": \"bh", -1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (utime (old, &long_ago), ==, 0);

  store = _perfmon_ping_store_open (fixture->dir, &error);
  g_assert_no_error (error);
  g_assert_false (g_file_test (old, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (fresh, G_FILE_TEST_EXISTS));
}

/* Pending records are bounded in bytes: a save beyond the limit fails and
 * says why; once a ping took them, saving works again. */
static void
test_pending_bounded (Fixture       *fixture,
                      gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *path = NULL;
  guint n_saved = 0;

  g_assert_no_error (error);
  _perfmon_ping_store_set_limits (store, 2000, 1 << 20);
  for (guint i = 0; i < 100; i++)
    {
      g_autofree char *id = _perfmon_ping_store_save_hang_json (store, NULL, hang_a, &error);

      if (id == NULL)
        break;
      n_saved++;
    }
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  g_assert_nonnull (strstr (error->message, "2000"));
  g_clear_error (&error);
  g_assert_cmpuint (n_saved, >, 0);
  g_assert_cmpuint (n_saved, <, 100);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, n_saved);

  path = write_ping (store);
  g_assert_nonnull (path);
  g_free (save (store, NULL, hang_a));
}

/* Finished pings that nobody sends are bounded in bytes: the oldest go,
 * the newest always stays. */
static void
test_pings_bounded (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *last = NULL;
  guint n_pings = 0;
  g_autoptr(GDir) dir = NULL;
  const char *name;

  GStatBuf st;

  g_assert_no_error (error);
  g_free (save (store, NULL, hang_a));
  last = write_ping (store);
  g_assert_cmpint (g_stat (last, &st), ==, 0);
  /* Room for two pings of this size (they all have the same size). */
  _perfmon_ping_store_set_limits (store, 1 << 20, 2 * (guint64) st.st_size + st.st_size / 2);
  for (guint i = 1; i < 6; i++)
    {
      g_free (save (store, NULL, hang_a));
      if (i >= 2)
        g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*were not sent: deleted the 1 oldest*");
      g_free (last);
      last = write_ping (store);
      g_test_assert_expected_messages ();
    }
  dir = g_dir_open (fixture->dir, 0, NULL);
  while ((name = g_dir_read_name (dir)) != NULL)
    if (g_str_has_suffix (name, ".json"))
      n_pings++;
  g_assert_true (g_file_test (last, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (n_pings, ==, 2);
}

/* A crash between writing a ping and deleting its records (kill -9) sends
 * those hangs again: at least once. Both pings carry the same "hangId",
 * which a receiver drops duplicates by. */
static void
test_duplicate_has_same_id (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = _perfmon_ping_store_open (fixture->dir, &error);
  g_autofree char *id = NULL;
  g_autofree char *record = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  g_autoptr(JsonObject) ping1 = NULL;
  g_autoptr(JsonObject) ping2 = NULL;
  JsonObject *hang1, *hang2;

  g_assert_no_error (error);
  id = save (store, NULL, hang_a);
  record = g_strconcat (_perfmon_ping_store_get_pending_dir (store), "/", id, ".json", NULL);
  g_file_get_contents (record, &contents, NULL, &error);
  g_assert_no_error (error);

  first = write_ping (store);
  /* The crash: the record was not deleted. */
  g_file_set_contents (record, contents, -1, &error);
  g_assert_no_error (error);
  second = write_ping (store);

  ping1 = load_object (first);
  ping2 = load_object (second);
  hang1 = json_array_get_object_element (json_object_get_array_member (json_object_get_object_member (ping1, "payload"), "hangs"), 0);
  hang2 = json_array_get_object_element (json_object_get_array_member (json_object_get_object_member (ping2, "payload"), "hangs"), 0);
  g_assert_cmpstr (json_object_get_string_member (hang1, "hangId"), ==, id);
  g_assert_cmpstr (json_object_get_string_member (hang2, "hangId"), ==, id);
}

/* A really full disk: a 64 kB tmpfs (needs root, else skipped). Saving
 * and pinging fail cleanly, leave no temporary file, and work again once
 * there is room. */
static void
test_full_disk (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonPingStore) store = NULL;
  g_autofree char *mnt = g_build_filename (fixture->dir, "tiny", NULL);
  g_autofree char *filler = g_build_filename (mnt, "filler", NULL);
  g_autofree char *pings = g_build_filename (mnt, "pings", NULL);
  g_autofree char *id = NULL;
  g_autofree char *path = NULL;
  g_autoptr(JsonObject) ping = NULL;
  char block[4096] = { 0 };
  FILE *file;

  g_assert_cmpint (g_mkdir_with_parents (mnt, 0700), ==, 0);
  if (mount ("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0700") != 0)
    {
      g_test_skip_printf ("cannot mount a tmpfs (%s): needs root", g_strerror (errno));
      return;
    }

  store = _perfmon_ping_store_open (pings, &error);
  g_assert_no_error (error);
  id = save (store, NULL, hang_a);

  /* Fill it up. */
  file = fopen (filler, "w");
  g_assert_nonnull (file);
  while (fwrite (block, 1, sizeof block, file) == sizeof block && fflush (file) == 0)
    ;
  fclose (file);

  g_assert_null (_perfmon_ping_store_save_hang_json (store, NULL, hang_b, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  g_clear_error (&error);
  /* No room for client-id either: this process uses an id of its own. */
  g_test_expect_message ("Perfmon", G_LOG_LEVEL_WARNING, "*Could not keep the client id*No space*");
  g_assert_null (_perfmon_ping_store_write_ping (store, NULL, &error));
  g_test_assert_expected_messages ();
  g_assert_nonnull (error);
  g_clear_error (&error);
  assert_no_temporaries (pings);
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 1);

  /* Room again: nothing is wedged. */
  g_assert_cmpint (g_unlink (filler), ==, 0);
  g_free (save (store, NULL, hang_b));
  path = write_ping (store);
  g_assert_nonnull (path);
  ping = load_object (path);
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (json_object_get_object_member (ping, "payload"), "hangs")), ==, 2);
  g_assert_true (g_uuid_string_is_valid (json_object_get_string_member (ping, "clientId")));
  g_assert_cmpuint (_perfmon_ping_store_count_pending (store), ==, 0);

  g_clear_pointer (&store, _perfmon_ping_store_close);
  g_assert_cmpint (umount (mnt), ==, 0);
}

#define ADD(path, func) \
  g_test_add ("/ping-store/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  ADD ("save/count", test_save_count);
  ADD ("save/replace", test_replace);
  ADD ("save/invalid-record", test_invalid_record);
  ADD ("save/no-temporaries", test_no_temporaries);
  ADD ("ping/merge-modules", test_merge);
  ADD ("ping/envelope", test_envelope);
  ADD ("ping/bad-build-id", test_bad_build_id);
  ADD ("ping/corrupt-client-id", test_corrupt_client_id);
  ADD ("ping/empty", test_empty);
  ADD ("ping/corrupt-pending", test_corrupt_pending);
  ADD ("adopt/live-not-adopted", test_live_not_adopted);
  ADD ("adopt/leftovers", test_adopt_leftovers);
  ADD ("adopt/symlink-not-followed", test_symlink_not_followed);
  ADD ("ping/client-id-unwritable", test_client_id_unwritable);
  ADD ("ping/corrupt-bounded", test_corrupt_bounded);
  ADD ("save/pending-bounded", test_pending_bounded);
  ADD ("save/full-disk", test_full_disk);
  ADD ("ping/pings-bounded", test_pings_bounded);
  ADD ("ping/duplicate-has-same-id", test_duplicate_has_same_id);
  ADD ("open/stale-temporaries", test_stale_temporaries);
  g_test_add_func ("/ping-store/adopt/crash-recovery", test_crash_recovery);
  g_test_add_func ("/ping-store/map-version", test_map_version);
  ADD ("save/cases", test_cases);
  g_test_add_func ("/ping-store/open-error", test_open_error);

  return g_test_run ();
}
