/* perfmon-js-site.c: add-on attribution by creation site, for JavaScript
 * (GJS)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Design (doc/addons.md). A GJS program creates sources and connects
 * signal handlers through calls into C, which `perfmon run`'s preload
 * module sees (the ffi calls of GJS reach its interposers: see
 * src/preload/perfmon-preload-typelib.c). At that moment the JavaScript
 * code that asked is on the engine's stack, and the engine's public API
 * describes it (_perfmon_js_stack_here()). So the location is learnt
 * once, at creation, and kept where the per-dispatch path already looks:
 * - a source gets the site's name, "function (file:line)", if it has no
 *   name of its own; its automatic group (one per name) then carries it,
 *   and with an add-on, belongs to the add-on's group
 *   (perfmon_monitor_assign_automatic_group()): each dispatch is charged
 *   to the add-on with no work added to the dispatch;
 * - a handler's closure gets GObject's marshal guards, which enter and
 *   leave a compartment of the add-on's group around each invocation (a
 *   compartment's enter/leave: no lock, no allocation; a CPU-clock read
 *   for a measure of 25 µs or more) and name the runnable.
 *
 * The site is the innermost frame of an add-on if any frame is one: an
 * extension often calls through the shell's JS helpers or GJS's
 * (imports.mainloop, setTimeout), which are then on top. Without an
 * add-on, it is the innermost frame that is no module of GJS's own: the
 * program's code that asked.
 *
 * The name is that of the callback itself, "function (file:line)" where
 * the function is written (issue 24, point 3), read from GJS's closure
 * (stack/perfmon-js-callback.c): in an add-on, if the callback is the
 * add-on's code; else if it is no module of GJS's own (setInterval() hands
 * GLib a function of GJS's timers). Otherwise, or when the closure cannot
 * be read, the site's frame names it: the function that created the
 * source or connected the handler, at that line.
 *
 * Everything here runs on GJS's thread (the main thread), where the tables
 * live; the guards check the thread they run on.
 */
#include "config.h"

#include <string.h>

#include "perfmon-addon-rules.h"
#include "perfmon-addon-rules-private.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-label.h"
#include "perfmon-automatic-private.h"
#include "perfmon-js-callback-private.h"
#include "perfmon-js-site-private.h"
#include "perfmon-js-stack-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-symbolizer.h"
#include "perfmon-utf8.h"

/* Bounded tables: a program's code has finitely many sites, but eval'd
 * code need not. */
#define MAX_ASSIGNED_SITES 4096
#define GUARD_NAME_DEPTH 32
#define GJS_OWN_MODULES "resource:///org/gnome/gjs/"

typedef struct
{
  PerfmonGroup *compartment;   /* held */
  char         *name;          /* the compartment's */
  const char   *label;         /* interned "[add-on ID]": see the hang monitor */
  GThread      *thread;        /* GJS's: the only one measured */
  PerfmonLoopActivity *activity;  /* perfmon run's default monitor's: it lives as long as the process */
} HandlerSite;

static GHashTable *addon_groups;    /* id → PerfmonGroup, held */
static GHashTable *assigned;        /* source site names done */
static GHashTable *handler_sites;   /* name → HandlerSite (never freed) */

/* The names of dispatches (sources' groups) and handler sites charged to
 * an add-on exactly: the sampler of long dispatches skips them (see
 * perfmon-js-sampler.c). Written here on GJS's thread when a site is
 * assigned, read by the watchdog thread. */
static GMutex exact_lock;
static GHashTable *exact_names;
static gint attribution_running;

static __thread const char *outer_names[GUARD_NAME_DEPTH];
static __thread guint guard_depth;

const char *
_perfmon_js_site_status (void)
{
  return _perfmon_js_stack_here_status ();
}

gboolean
_perfmon_js_site_attribution_running (void)
{
  return g_atomic_int_get (&attribution_running) != 0;
}

static void
add_exact (const char *name)
{
  g_mutex_lock (&exact_lock);
  if (exact_names == NULL)
    exact_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_add (exact_names, g_strdup (name));
  g_mutex_unlock (&exact_lock);
}

gboolean
_perfmon_js_site_is_exact (const char *dispatch_name)
{
  gboolean exact;

  g_mutex_lock (&exact_lock);
  exact = exact_names != NULL && g_hash_table_contains (exact_names, dispatch_name);
  g_mutex_unlock (&exact_lock);
  return exact;
}

static char *
cut (const char *text)
{
  g_autofree char *valid = g_utf8_make_valid (text, -1);

  valid[_perfmon_utf8_cut (valid, strlen (valid), PERFMON_JS_SITE_NAME_MAX)] = '\0';
  return g_steal_pointer (&valid);
}

/* "file:line" of @frame for a name: @file as given (a path in the add-on)
 * or, for a frame of the program, its last component. */
static char *
frame_name (const PerfmonJsFrame *frame,
            const char           *file)
{
  const char *slash;

  if (file == NULL)
    {
      slash = strrchr (frame->file, '/');
      file = slash != NULL ? slash + 1 : frame->file;
    }
  return perfmon_format_script_frame (frame->function, file, frame->line);
}

/* Names the site from the innermost frame of an add-on on the stack,
 * @addon_frame, if any, else from @program, the innermost frame that is no
 * module of GJS's own (see find_site()). FALSE if neither is there; or,
 * with *@unnamed set, if the frame that would name it has no function name
 * from the saved frames (top-level code, or an anonymous function, which
 * the engine's dump tells apart). */
static gboolean
name_frames (const PerfmonJsFrame *addon_frame,
             const PerfmonJsFrame *program,
             const PerfmonJsFrame *callback,
             char                **site_name,
             char                **addon_id,
             char                **addon_name,
             gboolean             *unnamed)
{
  g_autofree char *text = NULL;

  *unnamed = FALSE;
  if (addon_frame != NULL)
    {
      g_autofree char *id = NULL;
      g_autofree char *name = NULL;
      g_autofree char *inside = NULL;
      g_autofree char *callback_id = NULL;
      g_autofree char *callback_inside = NULL;

      if (perfmon_addon_rule_match (addon_frame->file, &id, &name, &inside))
        {
          if (callback != NULL &&
              perfmon_addon_rule_match (callback->file, &callback_id, NULL, &callback_inside) &&
              g_str_equal (callback_id, id))
            text = frame_name (callback, callback_inside);
          else if (addon_frame->function == NULL)
            {
              *unnamed = TRUE;
              return FALSE;
            }
          else
            text = frame_name (addon_frame, inside);
          *site_name = cut (text);
          *addon_id = g_steal_pointer (&id);
          *addon_name = g_steal_pointer (&name);
          return TRUE;
        }
    }
  if (callback != NULL && !g_str_has_prefix (callback->file, GJS_OWN_MODULES))
    {
      /* The program's callback names a site only where the program's code
       * is on the stack, as the walk over the dump has it. */
      if (program == NULL)
        return FALSE;
      text = frame_name (callback, NULL);
    }
  else if (program == NULL)
    return FALSE;
  else if (program->function == NULL)
    {
      *unnamed = TRUE;
      return FALSE;
    }
  else
    text = frame_name (program, NULL);
  *site_name = cut (text);
  *addon_id = NULL;
  *addon_name = NULL;
  return TRUE;
}

/* The innermost frame of an add-on, and the innermost frame before it that
 * is no module of GJS's own, of @frames (JS::FormatStackDump()'s). */
static gboolean
name_site (GPtrArray            *frames,
           const PerfmonJsFrame *callback,
           char                **site_name,
           char                **addon_id,
           char                **addon_name)
{
  const PerfmonJsFrame *program = NULL;
  const char *unmatched = NULL;
  gboolean unnamed;

  for (guint i = 0; i < frames->len; i++)
    {
      const PerfmonJsFrame *frame = g_ptr_array_index (frames, i);

      /* Frames come in runs of one file: a run that is no add-on's is
       * matched once. */
      if ((unmatched == NULL || !g_str_equal (unmatched, frame->file)) &&
          perfmon_addon_rule_match (frame->file, NULL, NULL, NULL))
        return name_frames (frame, program, callback, site_name, addon_id, addon_name, &unnamed);
      unmatched = frame->file;
      if (program == NULL && !g_str_has_prefix (frame->file, GJS_OWN_MODULES))
        program = frame;
    }
  return name_frames (NULL, program, callback, site_name, addon_id, addon_name, &unnamed);
}

gboolean
_perfmon_js_site_is_addon_file (const char *file,
                                gpointer    user_data)
{
  return perfmon_addon_rule_match (file, NULL, NULL, NULL);
}

/* The site of the calling JavaScript code: its name, and the add-on it
 * belongs to (id and name) if a frame of one is on the stack. The
 * JavaScript function the source or handler will call, if @closure is
 * GJS's (a handler's closure; or, with @func, a source's callback, its
 * data: then @func must be a libffi closure), names it when it is the
 * add-on's code (or, outside add-ons, the program's). Looked at only
 * while script runs: C code makes most sources and handlers.
 *
 * The stack is walked on the engine's saved frames, stopping at the first
 * frame of an add-on (_perfmon_js_stack_find_here()); the engine's dump
 * (_perfmon_js_stack_here(), which formats every frame) only where the
 * frame that names the site has no function name there, or where the
 * saved frames cannot be taken. */
static gboolean
find_site (gconstpointer  func,
           GClosure      *closure,
           char         **site_name,
           char         **addon_id,
           char         **addon_name)
{
  g_autoptr(GPtrArray) frames = NULL;
  PerfmonJsFrame described = { NULL, NULL, 0 };
  PerfmonJsFrame addon_frame = { NULL, NULL, 0 };
  PerfmonJsFrame program = { NULL, NULL, 0 };
  const PerfmonJsFrame *callback = NULL;
  gboolean found = FALSE;
  gboolean unnamed = FALSE;

  /* The cheap question first: C code makes most sources. */
  if (!_perfmon_js_script_running ())
    return FALSE;
  if (closure != NULL && (func == NULL || _perfmon_js_callback_is_ffi (func)) &&
      _perfmon_js_callback_describe (closure, &described))
    callback = &described;
  /* No add-on known: no frame of one to look for, and a callback of the
   * program's names the site without a walk of the stack. */
  if (callback != NULL && !g_str_has_prefix (callback->file, GJS_OWN_MODULES) &&
      !_perfmon_addon_rules_any_known ())
    {
      g_autofree char *text = frame_name (callback, NULL);

      *site_name = cut (text);
      *addon_id = NULL;
      *addon_name = NULL;
      _perfmon_js_frame_clear (&described);
      return TRUE;
    }
  /* Script runs: the saved frames fail only where C code called from it
   * left the script's realm (or out of memory), which the dump does not
   * need. */
  if (_perfmon_js_stack_find_here (_perfmon_js_site_is_addon_file, NULL, GJS_OWN_MODULES, &addon_frame, &program))
    found = name_frames (addon_frame.file != NULL ? &addon_frame : NULL,
                         program.file != NULL ? &program : NULL,
                         callback, site_name, addon_id, addon_name, &unnamed);
  else
    unnamed = TRUE;
  _perfmon_js_frame_clear (&addon_frame);
  _perfmon_js_frame_clear (&program);
  if (unnamed)
    {
      frames = g_ptr_array_new_with_free_func (_perfmon_js_frame_free);
      if (_perfmon_js_stack_here (frames))
        found = name_site (frames, callback, site_name, addon_id, addon_name);
    }
  _perfmon_js_frame_clear (&described);
  return found;
}

/* Makes the add-on's group exist with its name, and keeps it. */
static void
hold_addon_group (PerfmonMonitor *monitor,
                  const char     *addon_id,
                  const char     *addon_name)
{
  if (addon_groups == NULL)
    addon_groups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  if (!g_hash_table_contains (addon_groups, addon_id))
    g_hash_table_insert (addon_groups, g_strdup (addon_id),
                         perfmon_monitor_get_addon_group (monitor, addon_id, addon_name));
}

void
_perfmon_js_site_source_attached (PerfmonMonitor *monitor,
                                  GSource        *source,
                                  GMainContext   *context)
{
  g_autofree char *site_name = NULL;
  g_autofree char *addon_id = NULL;
  g_autofree char *addon_name = NULL;
  GSourceFunc func = NULL;
  gpointer data = NULL;

  if (monitor == NULL)
    return;
  if (G_UNLIKELY (g_atomic_int_get (&attribution_running) == 0))
    g_atomic_int_set (&attribution_running, 1);
  if (source == NULL || !_perfmon_automatic_is_default_name (g_source_get_name (source)))
    return;
  if (context != NULL && context != perfmon_monitor_get_context (monitor))
    return;
  /* A JavaScript callback: a libffi closure, with GJS's trampoline as its
   * data (GLib.timeout_add(), idle_add(), setTimeout()…). */
  if (source->callback_funcs != NULL && source->callback_funcs->get != NULL)
    source->callback_funcs->get (source->callback_data, source, &func, &data);
  if (!find_site ((gconstpointer) func, func != NULL ? data : NULL, &site_name, &addon_id, &addon_name))
    return;

  g_source_set_name (source, site_name);
  if (addon_id == NULL)
    return;
  if (assigned == NULL)
    assigned = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (g_hash_table_contains (assigned, site_name) || g_hash_table_size (assigned) >= MAX_ASSIGNED_SITES)
    return;
  hold_addon_group (monitor, addon_id, addon_name);
  /* Fails past max-automatic-groups: the site's dispatches then go to
   * the overflow group, as any source's would. */
  if (perfmon_monitor_assign_automatic_group (monitor, site_name, 0, addon_id, NULL))
    {
      add_exact (site_name);
      g_hash_table_add (assigned, g_steal_pointer (&site_name));
    }
}

static void
guard_pre (gpointer  data,
           GClosure *closure)
{
  HandlerSite *site = data;

  if (g_thread_self () != site->thread)
    return;
  if (guard_depth < GUARD_NAME_DEPTH)
    {
      outer_names[guard_depth] = _perfmon_current_dispatch_name;
      _perfmon_set_dispatch_name (site->name);
    }
  guard_depth++;
  /* The pseudo stack's frame "[add-on ID] SITE", from which a hang names
   * its add-on and runnable (PERFMON_ANNOTATION_ADDON). */
  perfmon_label_push (site->label, site->name);
  perfmon_group_enter (site->compartment);
}

static void
guard_post (gpointer  data,
            GClosure *closure)
{
  HandlerSite *site = data;

  if (g_thread_self () != site->thread)
    return;
  perfmon_group_leave (site->compartment);
  perfmon_label_pop ();
  guard_depth--;
  if (guard_depth < GUARD_NAME_DEPTH)
    _perfmon_set_dispatch_name (outer_names[guard_depth]);
  /* A watchdog that skips the JS samples of the handler, charged
   * exactly, would rather know it ended (two locked instructions). */
  if (g_atomic_int_get (&site->activity->watched))
    _perfmon_loop_activity_exact_end (site->activity);
}

gboolean
_perfmon_js_site_handler_connected (PerfmonMonitor *monitor,
                                    GClosure       *closure)
{
  g_autofree char *site_name = NULL;
  g_autofree char *addon_id = NULL;
  g_autofree char *addon_name = NULL;
  HandlerSite *site;

  if (monitor != NULL && G_UNLIKELY (g_atomic_int_get (&attribution_running) == 0))
    g_atomic_int_set (&attribution_running, 1);
  /* One pair of guards per closure: never one the program set. */
  if (monitor == NULL || closure == NULL || closure->n_guards != 0 || closure->is_invalid ||
      closure->in_marshal)
    return FALSE;
  /* Only an add-on's handlers are measured on their own. */
  if (!_perfmon_addon_rules_any_known ())
    return FALSE;
  /* GJS connects its own closures: the handler's function names it. */
  if (!find_site (NULL, closure, &site_name, &addon_id, &addon_name) || addon_id == NULL)
    return FALSE;

  if (handler_sites == NULL)
    handler_sites = g_hash_table_new (g_str_hash, g_str_equal);
  site = g_hash_table_lookup (handler_sites, site_name);
  if (site == NULL)
    {
      if (g_hash_table_size (handler_sites) >= PERFMON_JS_SITE_MAX_HANDLER_SITES)
        return FALSE;
      hold_addon_group (monitor, addon_id, addon_name);
      site = g_new0 (HandlerSite, 1);
      site->compartment = perfmon_monitor_create_compartment (monitor, site_name, 0, addon_id);
      perfmon_group_set_active (site->compartment, TRUE);
      site->name = g_strdup (perfmon_group_get_name (site->compartment));
      site->thread = g_thread_self ();
      site->activity = _perfmon_monitor_get_loop_activity (monitor);
      {
        g_autofree char *label = g_strdup_printf (PERFMON_ADDON_LABEL_PREFIX "%s]", addon_id);

        site->label = g_intern_string (label);
      }
      g_hash_table_insert (handler_sites, site->name, site);
      add_exact (site->name);
    }
  g_closure_add_marshal_guards (closure, site, guard_pre, site, guard_post);
  return TRUE;
}
