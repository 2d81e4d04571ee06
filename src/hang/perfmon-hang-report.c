/* perfmon-hang-report.c: one hang of a watched thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "perfmon-hang-report-private.h"
#include "perfmon-symbolizer.h"
#include "perfmon-utf8.h"

/**
 * PerfmonHangReport:
 *
 * One hang of a thread watched by a [class@HangMonitor]: how long the
 * thread's loop was stuck in one busy stretch, where (the label stack and
 * the native stack, interleaved), what it was dispatching, and the
 * annotations in force. These are the fields of a hang in the Background
 * Hang Monitor's ping, which [method@HangReport.to_json] writes.
 *
 * A report is immutable: any thread may read it.
 *
 * Since: 0.1
 */

typedef struct
{
  char    *label;          /* a label frame, or NULL for a native frame */
  int      module;         /* index in modules, -1 outside every module */
  guint64  offset;
  char    *symbol;         /* NULL if unknown */
  guint64  symbol_offset;
} StackEntry;

struct _PerfmonHangReport
{
  gatomicrefcount ref_count;

  double      duration_ms;
  char       *thread;
  char       *runnable_name;
  gboolean    runnable_is_addon;   /* kept over the dispatches' names */
  char       *process_type;
  char       *remote_type;
  GPtrArray  *annotation_keys;     /* of char *, in order */
  GHashTable *annotations;         /* key → value */
  GPtrArray  *pseudo_stack;        /* of char *, NULL-terminated */
  GArray     *stack;               /* of StackEntry, outermost first */
  GPtrArray  *module_names;        /* of char *: debug name, breakpad id, ... */
  char       *stack_unavailable;
  GPtrArray  *dispatch_names;      /* of char *, NULL-terminated, longest first */
  GArray     *dispatch_durations;  /* of double, ms */
  char       *script_stack_unavailable;
};

G_DEFINE_BOXED_TYPE (PerfmonHangReport, perfmon_hang_report,
                     perfmon_hang_report_ref, perfmon_hang_report_unref)

/* The longest symbol: its "symbols" entry, "symbol+0x" and 16 hex digits,
 * stays within PERFMON_HANG_REPORT_MAX_STRING_BYTES. */
#define MAX_SYMBOL_BYTES (PERFMON_HANG_REPORT_MAX_STRING_BYTES - 19)

/* @text as the reader takes it: valid UTF-8 of at most @max bytes. */
static char *
bounded_dup (const char *text,
             gsize       max)
{
  g_autofree char *valid = NULL;
  gsize len;

  if (text == NULL)
    return NULL;
  len = _perfmon_utf8_cut (text, strnlen (text, max + 1), max);
  if (g_utf8_validate_len (text, len, NULL))
    return g_strndup (text, len);
  /* Each bad byte becomes U+FFFD, three bytes: cut again. */
  valid = g_utf8_make_valid (text, (gssize) len);
  return g_strndup (valid, _perfmon_utf8_cut (valid, strlen (valid), max));
}

static char *
string_dup (const char *text)
{
  return bounded_dup (text, PERFMON_HANG_REPORT_MAX_STRING_BYTES);
}

static void
stack_entry_clear (gpointer data)
{
  StackEntry *entry = data;

  g_free (entry->label);
  g_free (entry->symbol);
}

PerfmonHangReport *
_perfmon_hang_report_new (const char *thread,
                          const char *runnable_name,
                          const char *process_type,
                          const char *remote_type)
{
  PerfmonHangReport *self = g_new0 (PerfmonHangReport, 1);

  g_atomic_ref_count_init (&self->ref_count);
  self->thread = string_dup (thread != NULL ? thread : "");
  self->runnable_name = string_dup (runnable_name);
  self->process_type = string_dup (process_type != NULL ? process_type : "default");
  self->remote_type = string_dup (remote_type);
  self->annotation_keys = g_ptr_array_new_with_free_func (g_free);
  self->annotations = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  self->pseudo_stack = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (self->pseudo_stack, NULL);
  self->stack = g_array_new (FALSE, TRUE, sizeof (StackEntry));
  g_array_set_clear_func (self->stack, stack_entry_clear);
  self->module_names = g_ptr_array_new_with_free_func (g_free);
  self->dispatch_names = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (self->dispatch_names, NULL);
  self->dispatch_durations = g_array_new (FALSE, FALSE, sizeof (double));

  return self;
}

/**
 * perfmon_hang_report_ref:
 * @self: a #PerfmonHangReport
 *
 * Acquires a reference on a report.
 *
 * Returns: (transfer full): @self
 *
 * Since: 0.1
 */
PerfmonHangReport *
perfmon_hang_report_ref (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * perfmon_hang_report_unref:
 * @self: (transfer full): a #PerfmonHangReport
 *
 * Releases a reference on a report; the last one frees it.
 *
 * Since: 0.1
 */
void
perfmon_hang_report_unref (PerfmonHangReport *self)
{
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  g_free (self->thread);
  g_free (self->runnable_name);
  g_free (self->process_type);
  g_free (self->remote_type);
  g_ptr_array_unref (self->annotation_keys);
  g_hash_table_unref (self->annotations);
  g_ptr_array_unref (self->pseudo_stack);
  g_array_unref (self->stack);
  g_ptr_array_unref (self->module_names);
  g_free (self->stack_unavailable);
  g_ptr_array_unref (self->dispatch_names);
  g_array_unref (self->dispatch_durations);
  g_free (self->script_stack_unavailable);
  g_free (self);
}

void
_perfmon_hang_report_set_duration (PerfmonHangReport *self,
                                   double             duration_ms)
{
  self->duration_ms = CLAMP (duration_ms, 0.0, PERFMON_HANG_REPORT_MAX_DURATION_MS);
}

void
_perfmon_hang_report_annotate (PerfmonHangReport *self,
                               const char        *key,
                               const char        *value)
{
  g_autofree char *bounded_key = NULL;

  g_return_if_fail (key != NULL);

  key = bounded_key = string_dup (key);
  if (value == NULL)
    {
      if (g_hash_table_remove (self->annotations, key))
        for (guint i = 0; i < self->annotation_keys->len; i++)
          if (g_str_equal (g_ptr_array_index (self->annotation_keys, i), key))
            {
              g_ptr_array_remove_index (self->annotation_keys, i);
              break;
            }
      return;
    }

  if (!g_hash_table_contains (self->annotations, key))
    {
      if (self->annotation_keys->len >= PERFMON_HANG_REPORT_MAX_ANNOTATIONS)
        return;
      g_ptr_array_add (self->annotation_keys, g_strdup (key));
    }
  /* The table's keys are the strings of annotation_keys. */
  for (guint i = 0; i < self->annotation_keys->len; i++)
    {
      const char *stored = g_ptr_array_index (self->annotation_keys, i);

      if (g_str_equal (stored, key))
        {
          g_hash_table_insert (self->annotations, (gpointer) stored, string_dup (value));
          break;
        }
    }
}

void
_perfmon_hang_report_add_pseudo_frame (PerfmonHangReport *self,
                                       const char        *label)
{
  if (self->pseudo_stack->len > PERFMON_HANG_REPORT_MAX_FRAMES)
    return;
  /* Keep the array NULL-terminated for get_pseudo_stack(). */
  self->pseudo_stack->pdata[self->pseudo_stack->len - 1] = string_dup (label);
  g_ptr_array_add (self->pseudo_stack, NULL);
}

void
_perfmon_hang_report_add_label_frame (PerfmonHangReport *self,
                                      const char        *label)
{
  StackEntry entry = { NULL, -1, 0, NULL, 0 };

  if (self->stack->len >= PERFMON_HANG_REPORT_MAX_FRAMES)
    return;
  entry.label = string_dup (label);
  g_array_append_val (self->stack, entry);
}

static int
module_index (PerfmonHangReport *self,
              const char        *debug_name,
              const char        *breakpad_id)
{
  guint n = self->module_names->len / 2;

  for (guint i = 0; i < n; i++)
    if (g_str_equal (g_ptr_array_index (self->module_names, 2 * i), debug_name) &&
        g_str_equal (g_ptr_array_index (self->module_names, 2 * i + 1), breakpad_id))
      return (int) i;

  g_ptr_array_add (self->module_names, string_dup (debug_name));
  g_ptr_array_add (self->module_names, string_dup (breakpad_id));
  return (int) n;
}

void
_perfmon_hang_report_add_native_frame (PerfmonHangReport *self,
                                       const char        *debug_name,
                                       const char        *breakpad_id,
                                       guint64            offset,
                                       const char        *symbol,
                                       guint64            symbol_offset)
{
  StackEntry entry = { NULL, -1, offset, NULL, symbol_offset };

  if (self->stack->len >= PERFMON_HANG_REPORT_MAX_FRAMES)
    return;
  entry.symbol = bounded_dup (symbol, MAX_SYMBOL_BYTES);
  if (debug_name != NULL)
    entry.module = module_index (self, debug_name, breakpad_id != NULL ? breakpad_id : "");
  g_array_append_val (self->stack, entry);
}

void
_perfmon_hang_report_set_stack_unavailable (PerfmonHangReport *self,
                                            const char        *reason)
{
  g_free (self->stack_unavailable);
  self->stack_unavailable = string_dup (reason);
}

void
_perfmon_hang_report_set_script_stack_unavailable (PerfmonHangReport *self,
                                                   const char        *reason)
{
  g_free (self->script_stack_unavailable);
  self->script_stack_unavailable = string_dup (reason);
}

/**
 * perfmon_hang_report_get_duration:
 * @self: a #PerfmonHangReport
 *
 * Gets how long the hang lasted, in wall-clock time.
 *
 * Returns: how long the busy stretch lasted, in milliseconds; for a hang
 *   still going on when the process ended (annotated `Unrecovered`), how
 *   long it had lasted when it was last recorded
 *
 * Since: 0.1
 */
double
perfmon_hang_report_get_duration (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, 0.0);

  return self->duration_ms;
}

/**
 * perfmon_hang_report_get_thread:
 * @self: a #PerfmonHangReport
 *
 * Gets the name of the thread that hung.
 *
 * Returns: the name of the thread that hung
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_thread (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->thread;
}

/**
 * perfmon_hang_report_get_runnable_name:
 * @self: a #PerfmonHangReport
 *
 * The runnable of the seed is the #GSource being dispatched. With
 * automatic groups on, it is the dispatch of the hang's busy stretch that
 * ran longest (see [method@Perfmon.HangReport.get_dispatch_names]), named
 * as its automatic group is.
 *
 * Returns: (nullable): the name of the longest dispatch of the hang with
 *   automatic groups on; else the name (g_source_get_name()) of the source
 *   the thread was dispatching when the hang was caught, "" for a source
 *   without a name, or %NULL if it was not dispatching one or it could not
 *   be told
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_runnable_name (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->runnable_name;
}

void
_perfmon_hang_report_set_addon (PerfmonHangReport *self,
                                const char        *addon_id,
                                const char        *runnable)
{
  _perfmon_hang_report_annotate (self, PERFMON_ANNOTATION_ADDON, addon_id);
  g_free (self->runnable_name);
  self->runnable_name = string_dup (runnable);
  self->runnable_is_addon = TRUE;
}

void
_perfmon_hang_report_add_dispatch (PerfmonHangReport *self,
                                   const char        *name,
                                   double             duration_ms)
{
  if (self->dispatch_durations->len >= PERFMON_HANG_REPORT_MAX_DISPATCHES)
    return;
  if (self->dispatch_durations->len == 0 && !self->runnable_is_addon)
    {
      g_free (self->runnable_name);
      self->runnable_name = string_dup (name);
    }
  g_ptr_array_insert (self->dispatch_names, (gint) self->dispatch_names->len - 1, string_dup (name));
  duration_ms = CLAMP (duration_ms, 0.0, PERFMON_HANG_REPORT_MAX_DURATION_MS);
  g_array_append_val (self->dispatch_durations, duration_ms);
}

/**
 * perfmon_hang_report_get_dispatch_names:
 * @self: a #PerfmonHangReport
 *
 * The dispatches of a millisecond or more that the hang's busy stretch
 * contained, longest first (at most 8), as the automatic groups name them
 * (see [property@Perfmon.Monitor:automatic-groups]); the first is the
 * report's runnable. Empty when automatic groups are off.
 *
 * Returns: (transfer none) (array zero-terminated=1): the dispatches' names
 *
 * Since: 0.2
 */
const char * const *
perfmon_hang_report_get_dispatch_names (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return (const char * const *) self->dispatch_names->pdata;
}

/**
 * perfmon_hang_report_lookup_module:
 * @self: a #PerfmonHangReport
 * @name: a module's file name, as runnable and dispatch names use it
 *   before `+0x` (a callback without an exported symbol)
 * @breakpad_id: (out) (optional) (transfer none): where to store the
 *   module's breakpad id ("" if the report has none)
 *
 * Finds the module @name among those the report's native frames are in,
 * so that a symbolizer can name the callback of a runnable or dispatch
 * name of the form `module+0xOFFSET` after the process has exited (the
 * process names it so and never symbolizes): see
 * [method@Perfmon.Symbolizer.lookup], which takes the breakpad id.
 *
 * Returns: %TRUE if a frame of @self is in the module @name
 *
 * Since: 0.3
 */
gboolean
perfmon_hang_report_lookup_module (PerfmonHangReport  *self,
                                   const char         *name,
                                   const char        **breakpad_id)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (name != NULL, FALSE);

  for (guint i = 0; i + 1 < self->module_names->len; i += 2)
    if (g_strcmp0 (g_ptr_array_index (self->module_names, i), name) == 0)
      {
        if (breakpad_id != NULL)
          *breakpad_id = g_ptr_array_index (self->module_names, i + 1);
        return TRUE;
      }
  return FALSE;
}

/**
 * perfmon_hang_report_get_dispatch_duration:
 * @self: a #PerfmonHangReport
 * @index: an index into [method@Perfmon.HangReport.get_dispatch_names]
 *
 * Gets the wall time of one dispatch of the hang's busy stretch.
 *
 * Returns: how long that dispatch took, in ms; 0 for an index past the end
 *
 * Since: 0.2
 */
double
perfmon_hang_report_get_dispatch_duration (PerfmonHangReport *self,
                                           guint              index)
{
  g_return_val_if_fail (self != NULL, 0.0);

  return index < self->dispatch_durations->len ? g_array_index (self->dispatch_durations, double, index) : 0.0;
}

/**
 * perfmon_hang_report_get_process_type:
 * @self: a #PerfmonHangReport
 *
 * Gets the process type the hang monitor was given
 * ([property@Perfmon.HangMonitor:process-type]).
 *
 * Returns: the process type, such as "default", "tab" or "gpu"
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_process_type (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->process_type;
}

/**
 * perfmon_hang_report_get_remote_type:
 * @self: a #PerfmonHangReport
 *
 * Gets the remote type the hang monitor was given
 * ([property@Perfmon.HangMonitor:remote-type]).
 *
 * Returns: (nullable): the remote type; always %NULL unless the process
 *   type is "tab"
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_remote_type (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->remote_type;
}

/**
 * perfmon_hang_report_get_annotation:
 * @self: a #PerfmonHangReport
 * @key: an annotation's name, such as "Unrecovered"
 *
 * Looks up one annotation of the report by its name.
 *
 * Returns: (nullable): the value of the annotation @key, or %NULL
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_annotation (PerfmonHangReport *self,
                                    const char        *key)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (key != NULL, NULL);

  return g_hash_table_lookup (self->annotations, key);
}

/**
 * perfmon_hang_report_dup_annotation_keys:
 * @self: a #PerfmonHangReport
 *
 * Gets the names of the report's annotations (see perfmon_annotate()).
 *
 * Returns: (transfer full) (array zero-terminated=1): the names of the
 *   report's annotations, in the order they were made
 *
 * Since: 0.1
 */
char **
perfmon_hang_report_dup_annotation_keys (PerfmonHangReport *self)
{
  GStrvBuilder *builder;
  char **keys;

  g_return_val_if_fail (self != NULL, NULL);

  builder = g_strv_builder_new ();
  for (guint i = 0; i < self->annotation_keys->len; i++)
    g_strv_builder_add (builder, g_ptr_array_index (self->annotation_keys, i));
  keys = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);
  return keys;
}

/**
 * perfmon_hang_report_get_pseudo_stack:
 * @self: a #PerfmonHangReport
 *
 * The label stack of the hung thread (see perfmon_label_push()), outermost
 * label first, each "label" or "label dynamic".
 *
 * Returns: (transfer none) (array zero-terminated=1): the label stack
 *
 * Since: 0.1
 */
const char * const *
perfmon_hang_report_get_pseudo_stack (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return (const char * const *) self->pseudo_stack->pdata;
}

/**
 * perfmon_hang_report_dup_stack:
 * @self: a #PerfmonHangReport
 *
 * The interleaved stack of the hung thread, outermost frame first, for
 * people: a label (or Python) frame as its text; a native frame as
 * perfmon_format_native_frame() writes it, "module+0xoffset
 * (function+0xdistance)", the function where a symbol table names it, or
 * "0xpc" outside every module. The machine form
 * (module indices and hex offsets) is in [method@HangReport.to_json].
 *
 * Returns: (transfer full) (array zero-terminated=1): the stack
 *
 * Since: 0.1
 */
char **
perfmon_hang_report_dup_stack (PerfmonHangReport *self)
{
  GStrvBuilder *builder;
  char **lines;

  g_return_val_if_fail (self != NULL, NULL);

  builder = g_strv_builder_new ();
  for (guint i = 0; i < self->stack->len; i++)
    {
      const StackEntry *entry = &g_array_index (self->stack, StackEntry, i);
      g_autofree char *line = NULL;

      if (entry->label != NULL)
        line = g_strdup (entry->label);
      else
        line = perfmon_format_native_frame (entry->module < 0 ? NULL
                                              : (const char *) g_ptr_array_index (self->module_names, 2 * entry->module),
                                            entry->offset, entry->symbol, entry->symbol_offset);
      g_strv_builder_add (builder, line);
    }
  lines = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);
  return lines;
}

/**
 * perfmon_hang_report_get_stack_unavailable_reason:
 * @self: a #PerfmonHangReport
 *
 * Gets why the report has no native stack, when it has none.
 *
 * Returns: (nullable): why the report has no native frames (for example
 *   the thread did not answer the signal, with its kernel wait channel), or
 *   %NULL if it has them
 *
 * Since: 0.1
 */
const char *
perfmon_hang_report_get_stack_unavailable_reason (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->stack_unavailable;
}

/**
 * perfmon_hang_report_get_script_stack_unavailable_reason:
 * @self: a #PerfmonHangReport
 *
 * A hang of a thread that runs Python code has its Python frames in the
 * stack and the pseudo stack, each as perfmon_format_script_frame() writes
 * it, "function (file:line)". When they could not be read without
 * stalling the program (the interpreter did not release its GIL in time),
 * the report keeps its native stack and says why here.
 *
 * Returns: (nullable): why the report has no Python frames although the
 *   process runs Python, or %NULL
 *
 * Since: 0.2
 */
const char *
perfmon_hang_report_get_script_stack_unavailable_reason (PerfmonHangReport *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->script_stack_unavailable;
}

PerfmonHangReport *
_perfmon_hang_report_name_frames (PerfmonHangReport     *self,
                                  PerfmonHangFrameNamer  namer,
                                  gpointer               data)
{
  PerfmonHangReport *named = _perfmon_hang_report_new (self->thread, self->runnable_name,
                                                       self->process_type, self->remote_type);
  gint innermost = -1;

  named->duration_ms = self->duration_ms;
  for (guint i = 0; i < self->annotation_keys->len; i++)
    {
      const char *key = g_ptr_array_index (self->annotation_keys, i);

      _perfmon_hang_report_annotate (named, key, g_hash_table_lookup (self->annotations, key));
    }
  for (guint i = 0; i + 1 < self->pseudo_stack->len; i++)
    _perfmon_hang_report_add_pseudo_frame (named, g_ptr_array_index (self->pseudo_stack, i));
  for (guint i = 0; i < self->dispatch_durations->len; i++)
    _perfmon_hang_report_add_dispatch (named, g_ptr_array_index (self->dispatch_names, i),
                                       g_array_index (self->dispatch_durations, double, i));
  if (self->stack_unavailable != NULL)
    _perfmon_hang_report_set_stack_unavailable (named, self->stack_unavailable);
  if (self->script_stack_unavailable != NULL)
    _perfmon_hang_report_set_script_stack_unavailable (named, self->script_stack_unavailable);

  /* The stack is outermost first: its last native frame is the innermost,
   * the only one that is not a return address. */
  for (guint i = 0; i < self->stack->len; i++)
    if (g_array_index (self->stack, StackEntry, i).label == NULL)
      innermost = (gint) i;
  for (guint i = 0; i < self->stack->len; i++)
    {
      const StackEntry *entry = &g_array_index (self->stack, StackEntry, i);
      const char *debug_name = entry->module < 0 ? NULL
                               : g_ptr_array_index (self->module_names, 2 * entry->module);
      const char *breakpad_id = entry->module < 0 ? NULL
                                : g_ptr_array_index (self->module_names, 2 * entry->module + 1);
      g_autofree char *function = NULL;
      guint64 function_offset = entry->symbol_offset;

      if (entry->label != NULL)
        {
          _perfmon_hang_report_add_label_frame (named, entry->label);
          continue;
        }
      /* A name the report has is kept; a frame outside every module has
       * none to find. */
      if (entry->symbol == NULL && debug_name != NULL)
        function = namer (debug_name, breakpad_id, entry->offset, (gint) i != innermost, &function_offset, data);
      _perfmon_hang_report_add_native_frame (named, debug_name, breakpad_id, entry->offset,
                                             function != NULL ? function : entry->symbol,
                                             function != NULL ? function_offset : entry->symbol_offset);
    }
  return named;
}

static JsonArray *
string_pair (const char *first,
             const char *second)
{
  JsonArray *pair = json_array_sized_new (2);

  json_array_add_string_element (pair, first);
  json_array_add_string_element (pair, second);
  return pair;
}

JsonObject *
_perfmon_hang_report_to_json_object (PerfmonHangReport *self)
{
  JsonObject *object = json_object_new ();
  JsonArray *annotations = json_array_new ();
  JsonArray *pseudo_stack = json_array_new ();
  JsonArray *stack = json_array_new ();
  JsonArray *symbols = json_array_new ();
  JsonArray *modules = json_array_new ();

  json_object_set_double_member (object, "duration", self->duration_ms);
  json_object_set_string_member (object, "thread", self->thread);
  /* The ping's schema wants a string: "(unknown)" when there is no name to
   * give. */
  json_object_set_string_member (object, "runnableName",
                                 self->runnable_name != NULL ? self->runnable_name : "(unknown)");
  json_object_set_string_member (object, "process", self->process_type);
  if (self->remote_type != NULL)
    json_object_set_string_member (object, "remoteType", self->remote_type);
  else
    json_object_set_null_member (object, "remoteType");

  for (guint i = 0; i < self->annotation_keys->len; i++)
    {
      const char *key = g_ptr_array_index (self->annotation_keys, i);

      json_array_add_array_element (annotations,
                                    string_pair (key, g_hash_table_lookup (self->annotations, key)));
    }
  json_object_set_array_member (object, "annotations", annotations);

  for (guint i = 0; i + 1 < self->pseudo_stack->len; i++)
    json_array_add_string_element (pseudo_stack, g_ptr_array_index (self->pseudo_stack, i));
  json_object_set_array_member (object, "pseudoStack", pseudo_stack);

  if (self->dispatch_durations->len > 0)
    {
      JsonArray *dispatches = json_array_new ();

      for (guint i = 0; i < self->dispatch_durations->len; i++)
        {
          JsonObject *dispatch = json_object_new ();

          json_object_set_string_member (dispatch, "name", g_ptr_array_index (self->dispatch_names, i));
          json_object_set_double_member (dispatch, "duration",
                                         g_array_index (self->dispatch_durations, double, i));
          json_array_add_object_element (dispatches, dispatch);
        }
      json_object_set_array_member (object, "dispatches", dispatches);
    }

  for (guint i = 0; i < self->stack->len; i++)
    {
      const StackEntry *entry = &g_array_index (self->stack, StackEntry, i);

      if (entry->label != NULL)
        json_array_add_string_element (stack, entry->label);
      else
        {
          JsonArray *frame = json_array_sized_new (2);
          g_autofree char *hex = g_strdup_printf ("%" G_GINT64_MODIFIER "x", entry->offset);

          json_array_add_int_element (frame, entry->module);
          json_array_add_string_element (frame, hex);
          json_array_add_array_element (stack, frame);
        }

      if (entry->symbol != NULL)
        {
          g_autofree char *symbol = g_strdup_printf ("%s+0x%" G_GINT64_MODIFIER "x",
                                                     entry->symbol, entry->symbol_offset);
          json_array_add_string_element (symbols, symbol);
        }
      else
        json_array_add_null_element (symbols);
    }
  json_object_set_array_member (object, "stack", stack);
  json_object_set_array_member (object, "symbols", symbols);

  for (guint i = 0; i + 1 < self->module_names->len; i += 2)
    json_array_add_array_element (modules,
                                  string_pair (g_ptr_array_index (self->module_names, i),
                                               g_ptr_array_index (self->module_names, i + 1)));
  json_object_set_array_member (object, "modules", modules);

  if (self->stack_unavailable != NULL)
    json_object_set_string_member (object, "stackUnavailable", self->stack_unavailable);
  if (self->script_stack_unavailable != NULL)
    json_object_set_string_member (object, "scriptStackUnavailable", self->script_stack_unavailable);

  return object;
}

/**
 * perfmon_hang_report_to_json:
 * @self: a #PerfmonHangReport
 *
 * The report as JSON: the fields of a hang in the Background Hang Monitor
 * ping ("duration", "thread", "runnableName", "process", "remoteType",
 * "annotations", "pseudoStack", "stack"), with the native frames of
 * "stack" as `[module index, "hex offset"]` into the report's own
 * "modules" list of `[debug file name, breakpad id]`; plus "symbols", the
 * function name and offset of each "stack" entry or null, and, when there
 * are no native frames, "stackUnavailable" saying why, and when the
 * Python frames of a Python program could not be read,
 * "scriptStackUnavailable" saying why.
 *
 * Returns: (transfer full): the report as a JSON object
 *
 * Since: 0.1
 */
char *
perfmon_hang_report_to_json (PerfmonHangReport *self)
{
  g_autoptr(JsonNode) node = NULL;

  g_return_val_if_fail (self != NULL, NULL);

  node = json_node_new (JSON_NODE_OBJECT);
  json_node_take_object (node, _perfmon_hang_report_to_json_object (self));
  return json_to_string (node, FALSE);
}
