/* perfmon-hang-symbolize.c: names for the frames of hang reports, pings and jank stack trees
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The files of hang/ get their frames named here, above the symbolizer
 * (stack/perfmon-symbolizer.c), which knows only modules and functions. A
 * report and a ping are read by their one strict reader
 * (perfmon-hang-report-reader.c, perfmon-bhr-ping-reader.c) and named as
 * objects, then written by their one writer; a jank stack tree is text
 * (stack/perfmon-stack-tree.c writes it, for the jank sampler), named line
 * by line. A task log's functions are named by `perfmon symbolize`
 * (src/tools/perfmon-tool-symbolize.c), on the log the task log reader
 * builds.
 */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include "perfmon-bhr-ping-private.h"
#include "perfmon-error.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-hang-symbolize.h"
#include "perfmon-json-private.h"
#include "perfmon-stack-tree-private.h"
#include "perfmon-symbolizer-private.h"

/* Sniffing JSON input: no deeper than a ping (perfmon-bhr-ping-reader.c),
 * no larger. */
#define SNIFF_MAX_DEPTH 11
#define SNIFF_MAX_BYTES PERFMON_BHR_PING_MAX_JSON_BYTES

typedef struct
{
  PerfmonSymbolizer *symbolizer;
  gint64             deadline_us;
} Namer;

static char *
name_frame (const char *debug_name,
            const char *breakpad_id,
            guint64     offset,
            gboolean    is_return_address,
            guint64    *function_offset,
            gpointer    data)
{
  Namer *namer = data;

  return _perfmon_symbolizer_lookup_until (namer->symbolizer, debug_name, breakpad_id, offset,
                                           is_return_address, namer->deadline_us, function_offset);
}

static gint64
deadline_of (PerfmonSymbolizer *symbolizer)
{
  return g_get_monotonic_time () + (gint64) perfmon_symbolizer_get_time_budget (symbolizer) * 1000;
}

/**
 * perfmon_hang_report_symbolize:
 * @self: a #PerfmonHangReport
 * @symbolizer: the #PerfmonSymbolizer that names the frames
 *
 * Names the native frames of a report that have no name yet (a static
 * function, a program whose symbols were not on the machine that hung), on
 * this machine: from the objects and debug files it has, or debuginfod.
 * Names the report already has are kept. Loading modules stops at the
 * symbolizer's time budget.
 *
 * Returns: (transfer full): a new report, @self with its frames named
 *
 * Since: 0.3
 */
PerfmonHangReport *
perfmon_hang_report_symbolize (PerfmonHangReport *self,
                               PerfmonSymbolizer *symbolizer)
{
  Namer namer;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (symbolizer), NULL);

  namer.symbolizer = symbolizer;
  namer.deadline_us = deadline_of (symbolizer);
  return _perfmon_hang_report_name_frames (self, name_frame, &namer);
}

static PerfmonBhrPing *
symbolize_ping_until (PerfmonBhrPing    *ping,
                      PerfmonSymbolizer *symbolizer,
                      gint64             deadline_us)
{
  g_autoptr(GPtrArray) hangs = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_hang_report_unref);
  Namer namer = { symbolizer, deadline_us };

  for (guint i = 0; i < perfmon_bhr_ping_get_n_hangs (ping); i++)
    g_ptr_array_add (hangs, _perfmon_hang_report_name_frames (perfmon_bhr_ping_get_hang (ping, i),
                                                              name_frame, &namer));
  return _perfmon_bhr_ping_new_with_hangs (ping, hangs);
}

/**
 * perfmon_bhr_ping_symbolize:
 * @self: a #PerfmonBhrPing
 * @symbolizer: the #PerfmonSymbolizer that names the frames
 *
 * Names the native frames of each hang of a ping that have no name yet,
 * as [method@HangReport.symbolize] does, within one time budget.
 *
 * Returns: (transfer full): a new ping, @self with its frames named
 *
 * Since: 0.3
 */
PerfmonBhrPing *
perfmon_bhr_ping_symbolize (PerfmonBhrPing    *self,
                            PerfmonSymbolizer *symbolizer)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (symbolizer), NULL);

  return symbolize_ping_until (self, symbolizer, deadline_of (symbolizer));
}

/* --- text: a report's stack, innermost first ---------------------------- */

static void
append_hang (GString           *text,
             PerfmonHangReport *report)
{
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  const char *runnable = perfmon_hang_report_get_runnable_name (report);
  guint n = g_strv_length (stack);

  g_string_append_printf (text, "Hang of %.0f ms on thread \"%s\", running %s\n",
                          perfmon_hang_report_get_duration (report), perfmon_hang_report_get_thread (report),
                          runnable != NULL ? runnable : "?");
  g_string_append (text, "Stack (innermost first):\n");
  for (guint i = n; i > 0; i--)
    g_string_append_printf (text, "  #%-3u %s\n", n - i, stack[i - 1]);
}

static char *
object_to_text (JsonObject *object)
{
  g_autoptr(JsonNode) node = json_node_new (JSON_NODE_OBJECT);

  json_node_take_object (node, object);
  return json_to_string (node, TRUE);
}

static char *
symbolize_report (PerfmonSymbolizer  *self,
                  const char         *contents,
                  gsize               size,
                  gboolean            json,
                  gint64              deadline_us,
                  GError            **error)
{
  g_autoptr(PerfmonHangReport) report = perfmon_hang_report_new_from_json (contents, (gssize) size, error);
  g_autoptr(PerfmonHangReport) named = NULL;
  Namer namer = { self, deadline_us };
  GString *text;

  if (report == NULL)
    {
      g_prefix_error (error, "not a hang report perfmon wrote: ");
      return NULL;
    }
  named = _perfmon_hang_report_name_frames (report, name_frame, &namer);
  if (json)
    return object_to_text (_perfmon_hang_report_to_json_object (named));
  text = g_string_new (NULL);
  append_hang (text, named);
  return g_string_free (text, FALSE);
}

static char *
symbolize_ping (PerfmonSymbolizer  *self,
                const char         *contents,
                gsize               size,
                gboolean            json,
                gint64              deadline_us,
                GError            **error)
{
  g_autoptr(PerfmonBhrPing) ping = perfmon_bhr_ping_new_from_json (contents, (gssize) size, error);
  g_autoptr(PerfmonBhrPing) named = NULL;
  GString *text;

  if (ping == NULL)
    {
      g_prefix_error (error, "not a ping perfmon wrote: ");
      return NULL;
    }
  named = symbolize_ping_until (ping, self, deadline_us);
  if (json)
    return object_to_text (_perfmon_bhr_ping_to_json_object (named));
  text = g_string_new (NULL);
  for (guint i = 0; i < perfmon_bhr_ping_get_n_hangs (named); i++)
    {
      if (i > 0)
        g_string_append_c (text, '\n');
      append_hang (text, perfmon_bhr_ping_get_hang (named, i));
    }
  return g_string_free (text, FALSE);
}

/* --- jank stack trees ---------------------------------------------------- */

/* A jank stack log (a stack tree, then notes after an empty line) with
 * names: each frame's "(symbol+N)" filled in where the symbolizer finds
 * one, the notes kept; or, as JSON, its frames, each with the dispatch its
 * samples ran in (null if none). @lines: read by the tree's strict reader. */
static char *
symbolize_tree (PerfmonSymbolizer *self,
                GArray            *lines,
                const char        *notes,
                gboolean           json,
                gint64             deadline_us)
{
  GString *out = g_string_new (NULL);
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  const char *dispatch = NULL;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "frames");
  json_builder_begin_array (builder);
  for (guint i = 0; i < lines->len; i++)
    {
      PerfmonStackTreeLine *line = &g_array_index (lines, PerfmonStackTreeLine, i);
      const PerfmonStackTreeLine *next = i + 1 < lines->len ? &g_array_index (lines, PerfmonStackTreeLine, i + 1) : NULL;
      /* A leaf (the innermost frame of its samples) is no return address. */
      gboolean leaf = next == NULL || next->kind == PERFMON_STACK_TREE_LINE_DISPATCH || next->depth <= line->depth;

      if (line->kind == PERFMON_STACK_TREE_LINE_DISPATCH)
        dispatch = line->text;
      if (line->kind == PERFMON_STACK_TREE_LINE_FRAME && line->symbol == NULL && line->path != NULL)
        line->symbol = _perfmon_symbolizer_lookup_until (self, line->path, line->build_id, line->pc, !leaf,
                                                         deadline_us, &line->symbol_offset);
      if (!json)
        {
          _perfmon_stack_tree_append_line (out, line);
          continue;
        }
      if (line->kind == PERFMON_STACK_TREE_LINE_DISPATCH)
        continue;
      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "count");
      json_builder_add_int_value (builder, line->count);
      json_builder_set_member_name (builder, "depth");
      json_builder_add_int_value (builder, line->depth);
      if (line->kind == PERFMON_STACK_TREE_LINE_SCRIPT)
        {
          json_builder_set_member_name (builder, "script");
          json_builder_add_string_value (builder, line->text);
        }
      else
        {
          g_autofree char *hex = g_strdup_printf ("%" G_GINT64_MODIFIER "x", line->pc);
          g_autofree char *symbol = line->symbol != NULL
                                      ? g_strdup_printf ("%s+%" G_GUINT64_FORMAT, line->symbol, line->symbol_offset)
                                      : NULL;

          json_builder_set_member_name (builder, "pc");
          json_builder_add_string_value (builder, hex);
          json_builder_set_member_name (builder, "path");
          json_builder_add_string_value (builder, line->path != NULL ? line->path : "[unknown]");
          json_builder_set_member_name (builder, "symbol");
          if (symbol != NULL)
            json_builder_add_string_value (builder, symbol);
          else
            json_builder_add_null_value (builder);
          json_builder_set_member_name (builder, "buildId");
          if (line->build_id != NULL)
            json_builder_add_string_value (builder, line->build_id);
          else
            json_builder_add_null_value (builder);
        }
      json_builder_set_member_name (builder, "dispatch");
      if (dispatch != NULL)
        json_builder_add_string_value (builder, dispatch);
      else
        json_builder_add_null_value (builder);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  if (json)
    {
      g_autoptr(JsonNode) root = json_builder_get_root (builder);

      g_string_free (out, TRUE);
      return json_to_string (root, TRUE);
    }
  if (notes != NULL)
    {
      g_string_append_c (out, '\n');
      g_string_append (out, notes);
    }
  return g_string_free (out, FALSE);
}


/* --- which file ---------------------------------------------------------- */

typedef enum
{
  KIND_NONE,
  KIND_REPORT,
  KIND_PING,
  KIND_OTHER_OBJECT,
} JsonKind;

/* What JSON @contents holds, by its members: the strict readers judge the
 * rest. Not JSON, or deeper or larger than any file of ours: KIND_NONE. */
static JsonKind
sniff_json (const char *contents,
            gsize       size)
{
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *object;
  JsonNode *root;

  if (size > SNIFF_MAX_BYTES || !_perfmon_json_prescan (contents, (gssize) size, SNIFF_MAX_DEPTH, NULL))
    return KIND_NONE;
  parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, contents, (gssize) size, NULL) ||
      (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return KIND_NONE;
  object = json_node_get_object (root);
  if (json_object_has_member (object, "payload") || json_object_has_member (object, "type"))
    return KIND_PING;
  if (json_object_has_member (object, "stack") || json_object_has_member (object, "duration") ||
      json_object_has_member (object, "thread"))
    return KIND_REPORT;
  return KIND_OTHER_OBJECT;
}

/**
 * perfmon_symbolizer_symbolize:
 * @self: a #PerfmonSymbolizer
 * @contents: (array length=length) (element-type guint8): a file perfmon
 *   wrote: a hang report ([method@HangReport.to_json], a saved hang), a
 *   "bhr" ping or a jank stack tree (`MAIN_THREAD_JANK_*` text)
 * @length: the length of @contents, or -1 if it is NUL-terminated text
 * @json: %TRUE for the result as JSON, keeping the input's structure
 * @error: return location for a #GError
 *
 * Names the frames of @contents, the way a symbol server names the frames
 * of Mozilla's pings: on this machine, from the objects and debug files it
 * has (or debuginfod). A report or a ping, read by its strict reader
 * ([ctor@HangReport.new_from_json], [ctor@BhrPing.new_from_json]), gets
 * the "symbols" of each hang filled in (as JSON, as its writer writes it),
 * or its stacks printed innermost first in the one frame format (as
 * text); a stack tree gets "(function+N)" after each frame. Names the
 * input already has are kept. Loading modules stops at the time budget.
 *
 * Returns: (transfer full): the symbolized contents, or %NULL with
 *   @error set (%PERFMON_ERROR_INVALID_DATA) if @contents is none of those,
 *   or a report or a ping that its reader refuses (the message names the
 *   field)
 *
 * Since: 0.2
 */
char *
perfmon_symbolizer_symbolize (PerfmonSymbolizer *self,
                              const char        *contents,
                              gssize             length,
                              gboolean           json,
                              GError           **error)
{
  gint64 deadline_us;
  gsize size;

  g_return_val_if_fail (PERFMON_IS_SYMBOLIZER (self), NULL);
  g_return_val_if_fail (contents != NULL || length == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  deadline_us = deadline_of (self);
  size = length < 0 ? strlen (contents) : (gsize) length;

  /* A task log is binary (see `perfmon symbolize`, which reads them). */
  if (size > 0 && memchr (contents, '\0', size) != NULL)
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                           "binary input: not a hang report, a ping nor a stack tree");
      return NULL;
    }

  if (size > 0 && !g_utf8_validate (contents, size, NULL))
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                           "the input is neither UTF-8 text nor a task log");
      return NULL;
    }

  switch (sniff_json (contents, size))
    {
    case KIND_REPORT:
      return symbolize_report (self, contents, size, json, deadline_us, error);
    case KIND_PING:
      return symbolize_ping (self, contents, size, json, deadline_us, error);
    case KIND_OTHER_OBJECT:
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                           "a JSON object that is neither a hang report (no \"duration\", \"thread\" "
                           "nor \"stack\") nor a ping (no \"type\" nor \"payload\")");
      return NULL;
    case KIND_NONE:
    default:
      break;
    }

  {
    g_autofree char *text = g_strndup (contents, size);
    g_autoptr(GError) tree_error = NULL;
    const char *notes = NULL;
    g_autoptr(GArray) lines = _perfmon_stack_tree_read_text (text, &notes, &tree_error);

    if (lines == NULL || lines->len == 0)
      {
        g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                     "not a hang report, a ping nor a jank stack log (%s)",
                     tree_error != NULL ? tree_error->message : "not a stack tree: no frame before the first empty line");
        return NULL;
      }
    return symbolize_tree (self, lines, notes, json, deadline_us);
  }
}
