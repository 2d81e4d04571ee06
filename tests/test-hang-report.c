/* test-hang-report.c: a hang report read back from JSON, strictly
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-hang-report-cases.h"

/* A report as the watchdog builds one, with every kind of field. */
static PerfmonHangReport *
build_full_report (void)
{
  PerfmonHangReport *report = _perfmon_hang_report_new ("main", "clock", "tab", "web");

  _perfmon_hang_report_annotate (report, "UserInteracting", "ja \xc3\xa9t\xc3\xa9");
  _perfmon_hang_report_annotate (report, PERFMON_ANNOTATION_UNRECOVERED, "true");
  _perfmon_hang_report_add_label_frame (report, "outer label");
  _perfmon_hang_report_add_pseudo_frame (report, "outer label");
  _perfmon_hang_report_add_native_frame (report, "app", "55679D09BCDEA35B11111111111111110",
                                         0x1a2b, "main", 0x1b);
  _perfmon_hang_report_add_native_frame (report, NULL, NULL, 0x7ffe0010, NULL, 0);
  _perfmon_hang_report_add_label_frame (report, "inner label \"quoted\"\n");
  _perfmon_hang_report_add_pseudo_frame (report, "inner label \"quoted\"\n");
  _perfmon_hang_report_add_native_frame (report, "libglib-2.0.so.0", "0A0B0C0D0E0F10111213141516171819A",
                                         0x40, "g_main_context_dispatch+0x2", 0x40);
  _perfmon_hang_report_add_native_frame (report, "app", "55679D09BCDEA35B11111111111111110",
                                         G_MAXUINT64, "", 0);
  _perfmon_hang_report_add_dispatch (report, "spell-check", 900.25);
  _perfmon_hang_report_add_dispatch (report, "clock", 1e-3);
  _perfmon_hang_report_set_duration (report, 1001.0 / 3.0);
  _perfmon_hang_report_set_script_stack_unavailable (report, "the GIL was not released in time");
  return report;
}

static void
assert_round_trip (PerfmonHangReport *report)
{
  g_autofree char *json = perfmon_hang_report_to_json (report);
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonHangReport) read = perfmon_hang_report_new_from_json (json, -1, &error);
  g_autofree char *again = NULL;

  g_assert_no_error (error);
  g_assert_nonnull (read);
  again = perfmon_hang_report_to_json (read);
  g_assert_cmpstr (again, ==, json);
}

static void
test_round_trip (void)
{
  g_autoptr(PerfmonHangReport) report = build_full_report ();
  g_autofree char *json = perfmon_hang_report_to_json (report);
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonHangReport) read = NULL;
  g_auto(GStrv) stack = NULL;
  g_auto(GStrv) read_stack = NULL;
  g_auto(GStrv) keys = NULL;

  assert_round_trip (report);

  /* And what the getters say, from @length bytes of a longer buffer. */
  {
    g_autofree char *padded = g_strconcat (json, "garbage", NULL);

    read = perfmon_hang_report_new_from_json (padded, (gssize) strlen (json), &error);
  }
  g_assert_no_error (error);
  g_assert_cmpfloat (perfmon_hang_report_get_duration (read), ==, 1001.0 / 3.0);
  g_assert_cmpstr (perfmon_hang_report_get_thread (read), ==, "main");
  g_assert_cmpstr (perfmon_hang_report_get_runnable_name (read), ==, "spell-check");
  g_assert_cmpstr (perfmon_hang_report_get_process_type (read), ==, "tab");
  g_assert_cmpstr (perfmon_hang_report_get_remote_type (read), ==, "web");
  g_assert_cmpstr (perfmon_hang_report_get_annotation (read, "UserInteracting"), ==, "ja \xc3\xa9t\xc3\xa9");
  keys = perfmon_hang_report_dup_annotation_keys (read);
  g_assert_cmpstrv (keys, ((const char * const[]) { "UserInteracting", "Unrecovered", NULL }));
  g_assert_cmpstrv (perfmon_hang_report_get_pseudo_stack (read),
                    ((const char * const[]) { "outer label", "inner label \"quoted\"\n", NULL }));
  g_assert_cmpstrv (perfmon_hang_report_get_dispatch_names (read),
                    ((const char * const[]) { "spell-check", "clock", NULL }));
  g_assert_cmpfloat (perfmon_hang_report_get_dispatch_duration (read, 1), ==, 1e-3);
  stack = perfmon_hang_report_dup_stack (report);
  read_stack = perfmon_hang_report_dup_stack (read);
  g_assert_cmpstrv (read_stack, stack);
  g_assert_null (perfmon_hang_report_get_stack_unavailable_reason (read));
  g_assert_cmpstr (perfmon_hang_report_get_script_stack_unavailable_reason (read), ==,
                   "the GIL was not released in time");
}

/* The smallest report the watchdog makes, and one with no stack. */
static void
test_round_trip_minimal (void)
{
  g_autoptr(PerfmonHangReport) empty = _perfmon_hang_report_new (NULL, NULL, NULL, NULL);
  g_autoptr(PerfmonHangReport) no_stack = _perfmon_hang_report_new ("worker", "", "default", NULL);

  assert_round_trip (empty);
  _perfmon_hang_report_set_stack_unavailable (no_stack, "the thread did not answer (wchan: futex_wait)");
  _perfmon_hang_report_add_pseudo_frame (no_stack, "label");
  assert_round_trip (no_stack);
}

/* Strings and lists past the reader's limits are cut by the writer, so
 * that every report it writes reads back. */
static void
test_writer_within_limits (void)
{
  g_autoptr(PerfmonHangReport) report = _perfmon_hang_report_new ("main", NULL, NULL, NULL);
  g_autofree char *huge = g_strnfill (PERFMON_HANG_REPORT_MAX_STRING_BYTES + 10, 'x');
  g_autofree char *json = NULL;
  g_autoptr(PerfmonHangReport) read = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) stack = NULL;

  _perfmon_hang_report_annotate (report, "big", huge);
  /* Not UTF-8 (a thread name is bytes): made valid. */
  _perfmon_hang_report_add_label_frame (report, "caf\xe9");
  for (guint i = 0; i < PERFMON_HANG_REPORT_MAX_FRAMES + 5; i++)
    _perfmon_hang_report_add_native_frame (report, NULL, NULL, i, i == 0 ? huge : "f", 0);

  json = perfmon_hang_report_to_json (report);
  read = perfmon_hang_report_new_from_json (json, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (strlen (perfmon_hang_report_get_annotation (read, "big")), ==,
                    PERFMON_HANG_REPORT_MAX_STRING_BYTES);
  g_assert_true (g_utf8_validate (json, -1, NULL));
  stack = perfmon_hang_report_dup_stack (read);
  g_assert_cmpuint (g_strv_length (stack), ==, PERFMON_HANG_REPORT_MAX_FRAMES);
}

static void
assert_rejected (const char *json,
                 gssize      length,
                 const char *field)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonHangReport) report = perfmon_hang_report_new_from_json (json, length, &error);

  g_assert_null (report);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  if (!hang_report_error_names (error->message, field))
    g_error ("“%s” does not name “%s”", error->message, field);
  /* Never the input back: messages stay short. */
  g_assert_cmpuint (strlen (error->message), <, 300);
}

/* Every case of tests/hang-reports/cases.json, judged as listed. */
static void
test_cases (void)
{
  g_autoptr(JsonArray) cases = hang_report_cases_load ();

  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *entry = json_array_get_object_element (cases, i);
      const char *report = json_object_get_string_member (entry, "report");
      const char *field = hang_report_case_field (cases, i);

      g_test_message ("case %s", json_object_get_string_member (entry, "name"));
      if (field != NULL)
        assert_rejected (report, -1, field);
      else
        {
          g_autoptr(GError) error = NULL;
          g_autoptr(PerfmonHangReport) read = perfmon_hang_report_new_from_json (report, -1, &error);

          g_assert_no_error (error);
          assert_round_trip (read);
        }
    }
}

#define REQUIRED "\"thread\":\"main\",\"runnableName\":\"x\",\"process\":\"default\"," \
                 "\"remoteType\":null,\"annotations\":[]"

/* Each rule, once. */
static void
test_rejections (void)
{
  g_autofree char *big = NULL;
  g_autofree char *many = NULL;

  assert_rejected ("", -1, "(root)");
  assert_rejected ("{\"duration\": 1,", -1, "(root)");
  assert_rejected ("/* */ {}", -1, "(root)");
  assert_rejected ("{\"duration\":1e400," REQUIRED "}", -1, "duration");
  assert_rejected ("{\"duration\":\"1\"," REQUIRED "}", -1, "duration");
  assert_rejected ("{\"duration\":1,\"thread\":null,\"runnableName\":\"x\",\"process\":\"default\","
                   "\"remoteType\":null,\"annotations\":[]}", -1, "thread");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"pseudoStack\":[\"a\",1]}", -1, "pseudoStack[1]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"pseudoStack\":\"a\"}", -1, "pseudoStack");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"modules\":[[\"a\",2]]}", -1, "modules[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stack\":[[0.0,\"ff\"]],\"modules\":[[\"a\",\"b\"]]}",
                   -1, "stack[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stack\":[[-1,\"12345678123456789\"]]}", -1, "stack[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stack\":[[-1,\"\"]]}", -1, "stack[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stack\":[\"x\"],\"symbols\":[\"f+0x1\"]}", -1, "symbols[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stack\":[[-1,\"1\"]],\"symbols\":[\"f+0xg\"]}", -1, "symbols[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"dispatches\":[{\"name\":\"x\",\"duration\":-2}]}",
                   -1, "dispatches[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"dispatches\":[{\"name\":\"y\",\"duration\":2}]}",
                   -1, "dispatches[0]");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"stackUnavailable\":false}", -1, "stackUnavailable");
  assert_rejected ("{\"duration\":1," REQUIRED ",\"scriptStackUnavailable\":[]}", -1, "scriptStackUnavailable");
  /* A NUL inside the @length bytes. */
  assert_rejected ("{\"duration\":1," REQUIRED "}\0", sizeof ("{\"duration\":1," REQUIRED "}"), "(root)");

  /* The document's size, first. */
  big = g_strdup_printf ("{\"duration\":1," REQUIRED ",\"pad\":\"%*s\"}",
                         PERFMON_HANG_REPORT_MAX_JSON_BYTES, "");
  assert_rejected (big, -1, "(root)");

  /* Annotations: at most PERFMON_HANG_REPORT_MAX_ANNOTATIONS. */
  {
    GString *text = g_string_new ("{\"duration\":1,\"thread\":\"main\",\"runnableName\":\"x\","
                                  "\"process\":\"default\",\"remoteType\":null,\"annotations\":[");

    for (guint i = 0; i <= PERFMON_HANG_REPORT_MAX_ANNOTATIONS; i++)
      g_string_append_printf (text, "%s[\"k%u\",\"v\"]", i > 0 ? "," : "", i);
    g_string_append (text, "]}");
    many = g_string_free (text, FALSE);
  }
  assert_rejected (many, -1, "annotations");
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/hang-report/round-trip", test_round_trip);
  g_test_add_func ("/hang-report/round-trip-minimal", test_round_trip_minimal);
  g_test_add_func ("/hang-report/writer-within-limits", test_writer_within_limits);
  g_test_add_func ("/hang-report/cases", test_cases);
  g_test_add_func ("/hang-report/rejections", test_rejections);

  return g_test_run ();
}
