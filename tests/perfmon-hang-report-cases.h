/* perfmon-hang-report-cases.h: the hang reports every reader must judge alike
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * tests/hang-reports/cases.json lists reports, each with the field its
 * error must name ("field"), or null for a valid one. The reader
 * (test-hang-report), the ping store (test-ping-store), perfmond and the
 * tool (tests/cli/test_cli_hang_reports.py) and Python (GI) are each
 * checked against the same list.
 */
#pragma once

#include <json-glib/json-glib.h>

/* The cases, as an array of objects {"name", "report", "field"}. */
static inline JsonArray *
hang_report_cases_load (void)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "hang-reports", "cases.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return json_array_ref (json_node_get_array (json_parser_get_root (parser)));
}

/* The field case @i's error must name, or NULL if it is valid. */
static inline const char *
hang_report_case_field (JsonArray *cases,
                        guint      i)
{
  JsonObject *entry = json_array_get_object_element (cases, i);

  return json_object_get_null_member (entry, "field") ? NULL
         : json_object_get_string_member (entry, "field");
}

/* Whether @message names @field at its start: "field: ..." or
 * "field[3]...: ...". */
static inline gboolean
hang_report_error_names (const char *message,
                         const char *field)
{
  gsize n = strlen (field);

  return strncmp (message, field, n) == 0 &&
         (message[n] == ':' || message[n] == '[' || message[n] == '.');
}
