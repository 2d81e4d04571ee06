/* perfmon-js-callback.c: the JavaScript function behind a GJS callback or
 * signal closure
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Design (issue 24, point 3). A JavaScript callback reaches C as a GJS
 * closure: for a signal, the GClosure GJS connects; for a C callback such
 * as GLib.timeout_add()'s, a libffi closure as the function and GJS's
 * "trampoline", also a GClosure, as its user data. GJS exports nothing
 * that reads the JavaScript function out of either, and SpiderMonkey's
 * public API describes a function once it has one: JS_GetFunctionDisplayId()
 * (its name, or the name the engine guessed), JS_GetFunctionScript() with
 * JS_GetScriptFilename() and JS_GetScriptBaseLineNumber() (where it is).
 *
 * So the function is read where GJS 1.74 and 1.76 (the two GJS releases on
 * mozjs 102, the one engine the functions are looked up for) keep it: a
 * Gjs::Closure (gi/closure.h) is a GClosure followed by the JSContext it
 * belongs to and a GjsMaybeOwned (gjs/jsapi-util-root.h): a JS::Heap
 * pointer to the function object, then a pointer to a
 * JS::PersistentRooted holding it instead when the closure roots it
 * (mozjs 102's PersistentRooted: a linked-list element, next, previous
 * and a flag, then the pointer). Nothing is read before it is known to be
 * such a closure: its finalize notifier is GJS's code, the context field
 * is the current context, and a rooted entry is linked in its list (its
 * neighbours point back at it). Anything else is not described.
 *
 * JS_GetFunctionScript() takes a handle: it is given the closure's own
 * field, which the garbage collector traces and updates (GJS's closures
 * are traced or rooted), never a copy on the C stack that a collection
 * during the compilation of a lazy function would leave stale.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-js-callback-private.h"

typedef struct _JSContext JSContext;
typedef struct _JSObject JSObject;
typedef struct _JSFunction JSFunction;
typedef struct _JSString JSString;
typedef struct _JSScript JSScript;
typedef struct _GjsContext GjsContext;

/* What follows the GClosure in a Gjs::Closure. */
typedef struct
{
  JSContext *cx;
  JSObject  *heap;       /* JS::Heap<JSFunction*> (1.74), <JSObject*> (1.76) */
  void      *root;       /* JS::PersistentRooted<…>*, or NULL */
} GjsClosureTail;

typedef PerfmonJsRoot Rooted;

#define GJS_CLOSURE_TAIL(closure) ((GjsClosureTail *) ((char *) (closure) + sizeof (GClosure)))
#define NAME_MAX_BYTES 256

static struct
{
  GjsContext *(*gjs_current) (void);
  JSContext  *(*gjs_native) (GjsContext *);
  const char *(*implementation_version) (void);
  bool        (*object_is_function) (JSObject *);
  JSFunction *(*object_function) (JSObject *);
  JSString   *(*display_id) (JSFunction *);
  size_t      (*put_escaped_string) (JSContext *, char *, size_t, JSString *, char);
  /* JS::Handle<JSFunction*> is a trivially copied pointer to the location. */
  JSScript   *(*function_script) (JSContext *, JSObject * const *);
  const char *(*script_filename) (JSScript *);
  unsigned    (*script_line) (JSContext *, JSScript *);
  bool        (*is_bound) (JSFunction *);
  JSObject   *(*bound_target) (JSFunction *);
  /* JS::AddPersistentRoot (JS::RootingContext*, JS::RootKind, js::PersistentRootedBase*):
   * a JSContext is a RootingContext (its first base). */
  void        (*add_persistent_root) (JSContext *, gint8, Rooted *);
  bool        (*describe_scripted_caller) (JSContext *, void *, unsigned *, unsigned *);
} api;

/* mozjs 102's JS::RootKind::Object (js/TraceKind.h). */
#define ROOT_KIND_OBJECT 3

static gboolean
resolve (void)
{
  static gsize resolved;
  static gboolean have;

  if (g_once_init_enter (&resolved))
    {
#define RESOLVE(field, name) ((*(void **) &api.field = dlsym (RTLD_DEFAULT, name)) != NULL)
      have = RESOLVE (gjs_current, "gjs_context_get_current") &&
             RESOLVE (gjs_native, "gjs_context_get_native_context") &&
             RESOLVE (implementation_version, "_Z27JS_GetImplementationVersionv") &&
             RESOLVE (object_is_function, "_Z19JS_ObjectIsFunctionP8JSObject") &&
             RESOLVE (object_function, "_Z20JS_GetObjectFunctionP8JSObject") &&
             RESOLVE (display_id, "_Z23JS_GetFunctionDisplayIdP10JSFunction") &&
             RESOLVE (put_escaped_string, "_Z19JS_PutEscapedStringP9JSContextPcmP8JSStringc") &&
             RESOLVE (function_script, "_Z20JS_GetFunctionScriptP9JSContextN2JS6HandleIP10JSFunctionEE") &&
             RESOLVE (script_filename, "_Z20JS_GetScriptFilenameP8JSScript") &&
             RESOLVE (script_line, "_Z26JS_GetScriptBaseLineNumberP9JSContextP8JSScript") &&
             RESOLVE (is_bound, "_Z18JS_IsFunctionBoundP10JSFunction") &&
             RESOLVE (bound_target, "_Z25JS_GetBoundFunctionTargetP10JSFunction") &&
             RESOLVE (describe_scripted_caller,
                      "_ZN2JS22DescribeScriptedCallerEP9JSContextPNS_12AutoFilenameEPjS4_") &&
             RESOLVE (add_persistent_root,
                      "_ZN2JS17AddPersistentRootEPNS_14RootingContextENS_8RootKindEPN2js20PersistentRootedBaseE") &&
             g_str_has_prefix (api.implementation_version (), "JavaScript-C102.");
#undef RESOLVE
      g_once_init_leave (&resolved, 1);
    }
  return have;
}

static gboolean
in_libgjs (gconstpointer address)
{
  Dl_info info;
  const char *base;

  if (address == NULL || dladdr (address, &info) == 0 || info.dli_fname == NULL)
    return FALSE;
  base = strrchr (info.dli_fname, '/');
  base = base != NULL ? base + 1 : info.dli_fname;
  return g_str_has_prefix (base, "libgjs.so");
}

gboolean
_perfmon_js_callback_is_ffi (gconstpointer func)
{
  Dl_info info;

  return func != NULL && dladdr (func, &info) == 0;
}

/* Whether @closure was made by GJS: a finalize notifier of its is GJS's
 * code (Gjs::Closure::add_finalize_notifier()). Reads only GClosure's
 * public fields. */
static gboolean
made_by_gjs (GClosure *closure)
{
  /* Marshal guards come first, two notifiers each (gclosure.c). */
  guint first = closure->n_guards * 2u;

  if (closure->ref_count == 0 || closure->is_invalid || closure->notifiers == NULL)
    return FALSE;
  for (guint i = 0; i < closure->n_fnotifiers; i++)
    if (in_libgjs ((gconstpointer) closure->notifiers[first + i].notify))
      return TRUE;
  return FALSE;
}

/* Describes the function object at @location, a place the garbage
 * collector updates. */
static gboolean
describe_function (JSContext        *cx,
                   JSObject * const *location,
                   PerfmonJsFrame   *frame)
{
  JSFunction *function;
  JSString *display;
  JSScript *script;
  char name[NAME_MAX_BYTES] = "";
  const char *filename;

  if (*location == NULL || !api.object_is_function (*location))
    return FALSE;
  function = api.object_function (*location);
  /* A wrapper's function has no location of its own to hand over. */
  if (function == NULL || (gpointer) function != (gpointer) *location)
    return FALSE;

  /* this.method.bind(this): the method. Its target is rooted for the call
   * (a JS::PersistentRooted of our own, unlinked after, as its destructor
   * does), being held elsewhere only by the bound function's slot. */
  if (api.is_bound (function))
    {
      Rooted rooted = { NULL, NULL, false, api.bound_target (function) };
      gboolean described;

      if (rooted.ptr == NULL)
        return FALSE;
      _perfmon_js_root (cx, &rooted);
      described = describe_function (cx, (JSObject * const *) &rooted.ptr, frame);
      _perfmon_js_unroot (&rooted);
      return described;
    }

  display = api.display_id (function);
  if (display != NULL)
    api.put_escaped_string (cx, name, sizeof name, display, 0);
  script = api.function_script (cx, location);
  if (script == NULL)
    return FALSE;
  filename = api.script_filename (script);
  /* A native function has no script: GJS's own, or the engine's. */
  if (filename == NULL || g_str_equal (filename, "self-hosted"))
    return FALSE;
  frame->function = g_utf8_make_valid (*name != '\0' ? name : "(anonymous)", -1);
  frame->file = g_utf8_make_valid (filename, -1);
  frame->line = api.script_line (cx, script);
  return TRUE;
}

gboolean
_perfmon_js_callback_describe (GClosure       *closure,
                               PerfmonJsFrame *frame)
{
  GjsContext *gjs;
  JSContext *cx;
  GjsClosureTail *tail;
  JSObject * const *location;

  if (closure == NULL || !resolve () || (pid_t) syscall (SYS_gettid) != getpid ())
    return FALSE;
  gjs = api.gjs_current ();
  if (gjs == NULL || (cx = api.gjs_native (gjs)) == NULL || !made_by_gjs (closure))
    return FALSE;
  tail = GJS_CLOSURE_TAIL (closure);
  if (tail->cx != cx)
    return FALSE;
  if (tail->root != NULL)
    {
      Rooted *rooted = tail->root;

      if (rooted->is_sentinel || rooted->next == NULL || rooted->prev == NULL ||
          rooted->next->prev != rooted || rooted->prev->next != rooted)
        return FALSE;
      location = (JSObject * const *) &rooted->ptr;
    }
  else
    location = &tail->heap;
  return describe_function (cx, location, frame);
}

gboolean
_perfmon_js_script_running (void)
{
  GjsContext *gjs;
  JSContext *cx;

  if (!resolve () || (pid_t) syscall (SYS_gettid) != getpid ())
    return FALSE;
  gjs = api.gjs_current ();
  return gjs != NULL && (cx = api.gjs_native (gjs)) != NULL &&
         api.describe_scripted_caller (cx, NULL, NULL, NULL);
}

gboolean
_perfmon_js_root (gpointer       cx,
                  PerfmonJsRoot *root)
{
  if (!resolve ())
    return FALSE;
  /* An element in no list points at itself (mozilla::LinkedListElement). */
  root->next = root->prev = root;
  root->is_sentinel = false;
  api.add_persistent_root (cx, ROOT_KIND_OBJECT, root);
  return TRUE;
}

void
_perfmon_js_unroot (PerfmonJsRoot *root)
{
  root->prev->next = root->next;
  root->next->prev = root->prev;
  root->next = root->prev = root;
}

void
_perfmon_js_frame_clear (PerfmonJsFrame *frame)
{
  g_clear_pointer (&frame->function, g_free);
  g_clear_pointer (&frame->file, g_free);
  frame->line = 0;
}
