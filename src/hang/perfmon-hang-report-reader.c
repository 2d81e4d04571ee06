/* perfmon-hang-report-reader.c: a hang report read back from its JSON form
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one reader of what _perfmon_hang_report_to_json_object() writes: the
 * ping store reads its pending records with it, perfmond the reports of
 * the processes it monitors, `perfmon hangs` those of perfmond. The input
 * is untrusted (a file anyone of the user could have written, a D-Bus
 * signal): every field is checked, every size bounded, and the report is
 * built with the same calls as the watchdog builds it, so that it reads
 * back to the very JSON the writer wrote.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "perfmon-error.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-json-private.h"

/* The format nests three levels (the report, "stack", a native frame);
 * members this version does not know may nest a little deeper. */
#define MAX_DEPTH 8
/* The longest hex offset: 64 bits. */
#define MAX_HEX_DIGITS 16

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
  return JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type;
}

/* @node as a string of the report: valid UTF-8, at most
 * PERFMON_HANG_REPORT_MAX_STRING_BYTES. @field names it in errors, with
 * @index unless it is -1. */
static const char *
read_string (JsonNode    *node,
             const char  *field,
             gint         index,
             GError     **error)
{
  g_autofree char *where = index < 0 ? g_strdup (field) : g_strdup_printf ("%s[%d]", field, index);
  const char *text;
  gsize length;

  if (!holds_type (node, G_TYPE_STRING))
    {
      invalid (error, "%s: expected a string, got %s", where, _perfmon_json_describe_node (node));
      return NULL;
    }
  text = json_node_get_string (node);
  length = strnlen (text, PERFMON_HANG_REPORT_MAX_STRING_BYTES + 1);
  if (length > PERFMON_HANG_REPORT_MAX_STRING_BYTES)
    {
      invalid (error, "%s: expected a string of at most %d bytes", where, PERFMON_HANG_REPORT_MAX_STRING_BYTES);
      return NULL;
    }
  /* json-glib takes escapes that are not JSON, such as "\345", which can
   * make bytes that are not UTF-8. */
  if (!g_utf8_validate_len (text, length, NULL))
    {
      invalid (error, "%s: expected a string of valid UTF-8", where);
      return NULL;
    }
  return text;
}

static const char *
read_string_member (JsonObject  *object,
                    const char  *field,
                    gboolean     nullable,
                    GError     **error)
{
  JsonNode *node = json_object_get_member (object, field);

  if (node == NULL)
    {
      invalid (error, "%s: missing required member", field);
      return NULL;
    }
  if (nullable && JSON_NODE_HOLDS_NULL (node))
    return NULL;
  return read_string (node, field, -1, error);
}

/* A number of ms in [0, PERFMON_HANG_REPORT_MAX_DURATION_MS]: an integer
 * or not. */
static gboolean
read_duration (JsonNode    *node,
               const char  *field,
               double      *value,
               GError     **error)
{
  if (node == NULL)
    return invalid (error, "%s: missing required member", field);
  if (!holds_type (node, G_TYPE_DOUBLE) && !holds_type (node, G_TYPE_INT64))
    return invalid (error, "%s: expected a number of ms >= 0, got %s", field, _perfmon_json_describe_node (node));
  *value = json_node_get_double (node);
  /* NaN fails both tests (json-glib reads 1e400 as infinity). */
  if (!(*value >= 0) || !(*value <= PERFMON_HANG_REPORT_MAX_DURATION_MS))
    return invalid (error, "%s: expected a number of ms in [0, %.0f]", field,
                    PERFMON_HANG_REPORT_MAX_DURATION_MS);
  return TRUE;
}

/* The array @field of @object, of at most @max elements, into @array
 * (NULL if it is absent and not @required). */
static gboolean
read_array_member (JsonObject  *object,
                   const char  *field,
                   gboolean     required,
                   guint        max,
                   JsonArray  **array,
                   GError     **error)
{
  JsonNode *node = json_object_get_member (object, field);

  *array = NULL;
  if (node == NULL)
    return required ? invalid (error, "%s: missing required member", field) : TRUE;
  if (!JSON_NODE_HOLDS_ARRAY (node))
    return invalid (error, "%s: expected an array, got %s", field, _perfmon_json_describe_node (node));
  if (json_array_get_length (json_node_get_array (node)) > max)
    return invalid (error, "%s: expected at most %u elements, got %u", field, max,
                    json_array_get_length (json_node_get_array (node)));
  *array = json_node_get_array (node);
  return TRUE;
}

/* Element @index of @array as [string, string]. */
static gboolean
read_pair (JsonArray   *array,
           const char  *field,
           guint        index,
           const char **first,
           const char **second,
           GError     **error)
{
  JsonNode *node = json_array_get_element (array, index);
  JsonArray *pair;
  g_autofree char *where = g_strdup_printf ("%s[%u]", field, index);

  if (!JSON_NODE_HOLDS_ARRAY (node) || json_array_get_length (pair = json_node_get_array (node)) != 2)
    return invalid (error, "%s: expected [string, string]", where);
  return (*first = read_string (json_array_get_element (pair, 0), where, 0, error)) != NULL &&
         (*second = read_string (json_array_get_element (pair, 1), where, 1, error)) != NULL;
}

static gboolean
is_hex (const char *text)
{
  gsize length = strlen (text);

  if (length == 0 || length > MAX_HEX_DIGITS)
    return FALSE;
  for (gsize i = 0; i < length; i++)
    if (!g_ascii_isxdigit (text[i]))
      return FALSE;
  return TRUE;
}

/* "function+0xhex", as the writer writes a symbol: the function's name
 * into @function (owned by the caller), the offset into @offset. */
static gboolean
parse_symbol (const char  *text,
              char       **function,
              guint64     *offset)
{
  const char *plus = g_strrstr (text, "+0x");

  if (plus == NULL || !is_hex (plus + 3))
    return FALSE;
  *function = g_strndup (text, plus - text);
  *offset = g_ascii_strtoull (plus + 3, NULL, 16);
  return TRUE;
}

static gboolean
read_annotations (JsonObject         *object,
                  PerfmonHangReport  *report,
                  GError            **error)
{
  JsonArray *annotations;

  if (!read_array_member (object, "annotations", TRUE, PERFMON_HANG_REPORT_MAX_ANNOTATIONS,
                          &annotations, error))
    return FALSE;
  for (guint i = 0; i < json_array_get_length (annotations); i++)
    {
      const char *key, *value;

      if (!read_pair (annotations, "annotations", i, &key, &value, error))
        return FALSE;
      /* The writer keeps one value per key. */
      if (perfmon_hang_report_get_annotation (report, key) != NULL)
        return invalid (error, "annotations[%u]: its key is that of an earlier annotation", i);
      _perfmon_hang_report_annotate (report, key, value);
    }
  return TRUE;
}

static gboolean
read_pseudo_stack (JsonObject         *object,
                   PerfmonHangReport  *report,
                   GError            **error)
{
  JsonArray *labels;

  if (!read_array_member (object, "pseudoStack", FALSE, PERFMON_HANG_REPORT_MAX_FRAMES, &labels, error))
    return FALSE;
  for (guint i = 0; labels != NULL && i < json_array_get_length (labels); i++)
    {
      const char *label = read_string (json_array_get_element (labels, i), "pseudoStack", (gint) i, error);

      if (label == NULL)
        return FALSE;
      _perfmon_hang_report_add_pseudo_frame (report, label);
    }
  return TRUE;
}

gboolean
_perfmon_hang_report_read_modules (JsonArray   *modules,
                                   const char  *field,
                                   GError     **error)
{
  for (guint i = 0; i < json_array_get_length (modules); i++)
    {
      const char *debug_name, *breakpad_id;

      if (!read_pair (modules, field, i, &debug_name, &breakpad_id, error))
        return FALSE;
    }
  return TRUE;
}

/* "stack" with "symbols" (one per frame, null for a label frame) and
 * "modules" (what native frames index): the report's own, or
 * @shared_modules, already checked, for a hang of a ping. */
static gboolean
read_stack (JsonObject         *object,
            JsonArray          *shared_modules,
            PerfmonHangReport  *report,
            GError            **error)
{
  JsonArray *stack, *symbols, *modules;
  guint n_frames, n_modules;

  if (!read_array_member (object, "stack", FALSE, PERFMON_HANG_REPORT_MAX_FRAMES, &stack, error) ||
      !read_array_member (object, "symbols", FALSE, PERFMON_HANG_REPORT_MAX_FRAMES, &symbols, error))
    return FALSE;
  if (shared_modules != NULL)
    {
      if (json_object_has_member (object, "modules"))
        return invalid (error, "modules: expected none (the hangs of a ping share payload.modules)");
      modules = shared_modules;
    }
  else if (!read_array_member (object, "modules", FALSE, PERFMON_HANG_REPORT_MAX_FRAMES, &modules, error) ||
           /* Checked before any frame refers to them. */
           (modules != NULL && !_perfmon_hang_report_read_modules (modules, "modules", error)))
    return FALSE;
  n_frames = stack != NULL ? json_array_get_length (stack) : 0;
  n_modules = modules != NULL ? json_array_get_length (modules) : 0;
  if (symbols != NULL && json_array_get_length (symbols) != n_frames)
    return invalid (error, "symbols: expected one entry per frame of stack (%u), got %u",
                    n_frames, json_array_get_length (symbols));

  for (guint i = 0; i < n_frames; i++)
    {
      JsonNode *frame = json_array_get_element (stack, i);
      JsonNode *symbol_node = symbols != NULL ? json_array_get_element (symbols, i) : NULL;
      g_autofree char *function = NULL;
      guint64 function_offset = 0;
      JsonArray *native;
      const char *hex;
      gint64 module;

      if (symbol_node != NULL && !JSON_NODE_HOLDS_NULL (symbol_node))
        {
          const char *symbol = read_string (symbol_node, "symbols", (gint) i, error);

          if (symbol == NULL)
            return FALSE;
          if (holds_type (frame, G_TYPE_STRING))
            return invalid (error, "symbols[%u]: expected null for a label frame", i);
          if (!parse_symbol (symbol, &function, &function_offset))
            return invalid (error, "symbols[%u]: expected null or \"function+0xhex offset\" "
                            "(1 to %d hex digits)", i, MAX_HEX_DIGITS);
        }

      if (holds_type (frame, G_TYPE_STRING))
        {
          const char *label = read_string (frame, "stack", (gint) i, error);

          if (label == NULL)
            return FALSE;
          _perfmon_hang_report_add_label_frame (report, label);
          continue;
        }

      if (!JSON_NODE_HOLDS_ARRAY (frame) ||
          json_array_get_length (native = json_node_get_array (frame)) != 2 ||
          !holds_type (json_array_get_element (native, 0), G_TYPE_INT64) ||
          !holds_type (json_array_get_element (native, 1), G_TYPE_STRING) ||
          !is_hex (hex = json_array_get_string_element (native, 1)))
        return invalid (error, "stack[%u]: expected a label string or [module index, \"hex offset\"] "
                        "(1 to %d hex digits)", i, MAX_HEX_DIGITS);
      module = json_array_get_int_element (native, 0);
      if (module < -1 || module >= (gint64) n_modules)
        return invalid (error, "stack[%u]: expected a module index in [-1, %d] (-1: outside every "
                        "module), got %" G_GINT64_FORMAT, i, (int) MIN (n_modules, (guint) G_MAXINT) - 1, module);

      if (module < 0)
        _perfmon_hang_report_add_native_frame (report, NULL, NULL, g_ascii_strtoull (hex, NULL, 16),
                                               function, function_offset);
      else
        {
          JsonArray *pair = json_array_get_array_element (modules, (guint) module);

          _perfmon_hang_report_add_native_frame (report, json_array_get_string_element (pair, 0),
                                                 json_array_get_string_element (pair, 1),
                                                 g_ascii_strtoull (hex, NULL, 16), function, function_offset);
        }
    }
  return TRUE;
}

/* The longest dispatches, [{"name", "duration"}]: the first is the
 * runnable. */
static gboolean
read_dispatches (JsonObject         *object,
                 PerfmonHangReport  *report,
                 const char         *runnable_name,
                 GError            **error)
{
  JsonArray *dispatches;
  /* A hang caught in an add-on's handler is named after the handler, which
   * ran inside the longest dispatch (see _perfmon_hang_report_set_addon()). */
  const char *addon = perfmon_hang_report_get_annotation (report, PERFMON_ANNOTATION_ADDON);

  if (!read_array_member (object, "dispatches", FALSE, PERFMON_HANG_REPORT_MAX_DISPATCHES, &dispatches, error))
    return FALSE;
  if (addon != NULL && runnable_name != NULL)
    _perfmon_hang_report_set_addon (report, addon, runnable_name);
  for (guint i = 0; dispatches != NULL && i < json_array_get_length (dispatches); i++)
    {
      JsonNode *node = json_array_get_element (dispatches, i);
      g_autofree char *name_field = g_strdup_printf ("dispatches[%u].name", i);
      g_autofree char *duration_field = g_strdup_printf ("dispatches[%u].duration", i);
      JsonObject *dispatch;
      JsonNode *name_node;
      const char *name;
      double duration;

      if (!JSON_NODE_HOLDS_OBJECT (node))
        return invalid (error, "dispatches[%u]: expected an object {\"name\", \"duration\"}, got %s", i,
                        _perfmon_json_describe_node (node));
      dispatch = json_node_get_object (node);
      if ((name_node = json_object_get_member (dispatch, "name")) == NULL)
        return invalid (error, "%s: missing required member", name_field);
      if ((name = read_string (name_node, name_field, -1, error)) == NULL)
        return FALSE;
      if (!read_duration (json_object_get_member (dispatch, "duration"), duration_field, &duration, error))
        return FALSE;
      if (i == 0 && addon == NULL && strcmp (name, runnable_name) != 0)
        return invalid (error, "%s: expected the runnableName (the longest dispatch is the runnable)",
                        name_field);
      _perfmon_hang_report_add_dispatch (report, name, duration);
    }
  return TRUE;
}

static gboolean
read_optional_reason (JsonObject         *object,
                      const char         *field,
                      PerfmonHangReport  *report,
                      void              (*set) (PerfmonHangReport *, const char *),
                      GError            **error)
{
  const char *reason;

  if (!json_object_has_member (object, field))
    return TRUE;
  reason = read_string_member (object, field, FALSE, error);
  if (reason == NULL)
    return FALSE;
  set (report, reason);
  return TRUE;
}

/**
 * perfmon_hang_report_new_from_json:
 * @json: a hang report as JSON, as [method@HangReport.to_json] writes it
 *   (UTF-8 text)
 * @length: the length of @json in bytes, or -1 if it is NUL-terminated
 * @error: return location for a #GError
 *
 * Reads a hang report back from its JSON form, as written by
 * [method@HangReport.to_json]: what a process sent over D-Bus, or a hang
 * record saved for a ping. Reading what to_json() wrote gives a report
 * whose to_json() is the same text.
 *
 * The input is checked, strictly: "duration" (a number of ms in [0, 1e12]),
 * "thread", "runnableName", "process" (strings), "remoteType" (a string or
 * null) and "annotations" (an array of `[key, value]` strings, each key
 * once) are required; "pseudoStack" (strings), "stack" (label strings and
 * `[module index, "hex offset"]` native frames, the index -1 or into
 * "modules"), "symbols" (one per frame of "stack": null, or
 * `"function+0xoffset"` for a native frame), "modules" (`[debug name,
 * breakpad id]` strings), "dispatches" (`{"name", "duration"}`, the first
 * one the runnable), "stackUnavailable" and "scriptStackUnavailable"
 * (strings) may be absent. Members this version does not know are
 * ignored. Sizes are bounded: the document to 1 MiB and 8 levels of
 * nesting, each string to 16 KiB of valid UTF-8, "stack", "symbols",
 * "modules" and "pseudoStack" to 1024 entries, "annotations" to 256 and
 * "dispatches" to 64.
 *
 * Returns: (transfer full): the report, or %NULL with @error set to
 *   %PERFMON_ERROR_INVALID_DATA and a message that starts with the
 *   offending field ("stack[3]: ...") and says what it allows
 *
 * Since: 0.2
 */
PerfmonHangReport *
perfmon_hang_report_new_from_json (const char  *json,
                                   gssize       length,
                                   GError     **error)
{
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) local_error = NULL;
  gsize size;
  JsonNode *root;

  g_return_val_if_fail (json != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  size = length < 0 ? strnlen (json, PERFMON_HANG_REPORT_MAX_JSON_BYTES + 1) : (gsize) length;
  if (size > PERFMON_HANG_REPORT_MAX_JSON_BYTES)
    {
      invalid (error, "(root): expected at most %d bytes", PERFMON_HANG_REPORT_MAX_JSON_BYTES);
      return NULL;
    }
  if (memchr (json, '\0', size) != NULL)
    {
      invalid (error, "(root): expected JSON text, got a NUL byte");
      return NULL;
    }
  if (!g_utf8_validate_len (json, size, NULL))
    {
      invalid (error, "(root): expected UTF-8 text");
      return NULL;
    }
  if (!_perfmon_json_prescan (json, (gssize) size, MAX_DEPTH, error))
    return NULL;

  parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, json, (gssize) size, &local_error))
    {
      /* json-glib's message quotes at most a character of the input. */
      invalid (error, "(root): not valid JSON: %s", local_error->message);
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      invalid (error, "(root): expected an object, got %s",
               root != NULL ? _perfmon_json_describe_node (root) : "an empty document");
      return NULL;
    }
  return _perfmon_hang_report_read_object (json_node_get_object (root), NULL, error);
}

PerfmonHangReport *
_perfmon_hang_report_read_object (JsonObject  *object,
                                  JsonArray   *shared_modules,
                                  GError     **error)
{
  g_autoptr(PerfmonHangReport) report = NULL;
  g_autoptr(GError) local_error = NULL;
  const char *thread, *runnable_name, *process_type, *remote_type;
  double duration;

  if (!read_duration (json_object_get_member (object, "duration"), "duration", &duration, error) ||
      (thread = read_string_member (object, "thread", FALSE, error)) == NULL ||
      (runnable_name = read_string_member (object, "runnableName", FALSE, error)) == NULL ||
      (process_type = read_string_member (object, "process", FALSE, error)) == NULL)
    return NULL;
  remote_type = read_string_member (object, "remoteType", TRUE, &local_error);
  if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  report = _perfmon_hang_report_new (thread, runnable_name, process_type, remote_type);
  _perfmon_hang_report_set_duration (report, duration);
  if (!read_annotations (object, report, error) ||
      !read_pseudo_stack (object, report, error) ||
      !read_stack (object, shared_modules, report, error) ||
      !read_dispatches (object, report, runnable_name, error) ||
      !read_optional_reason (object, "stackUnavailable", report,
                             _perfmon_hang_report_set_stack_unavailable, error) ||
      !read_optional_reason (object, "scriptStackUnavailable", report,
                             _perfmon_hang_report_set_script_stack_unavailable, error))
    return NULL;

  return g_steal_pointer (&report);
}
