/* perfmon-js-stack.c: the JavaScript frames of a hung GJS thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-js-callback-private.h"
#include "perfmon-js-stack-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-symbolizer.h"

/* Design.
 *
 * SpiderMonkey keeps its JavaScript stack to itself: it can be walked only
 * on the engine's own thread. GJS's profiler samples it in a SIGPROF
 * handler, through a "profiling stack" that exists only while the profiler
 * runs (instrumentation on from the start, a sample every millisecond
 * written to a capture file): not something to leave on in every program.
 * What the engine does offer any thread is what Firefox's hang watchdog
 * uses: JS_RequestInterruptCallback(). The engine then calls its interrupt
 * callbacks on its own thread at the next safe point (a loop's back edge,
 * a function's entry), where JS::FormatStackDump() may describe the stack.
 *
 * So: on the engine's thread, once, perfmon adds an interrupt callback
 * (JS_AddInterruptCallback() is not thread-safe). At a hang the watchdog
 * raises a request, interrupts, and waits with a timeout. If the thread
 * runs JavaScript it answers within microseconds; if it is stuck in C code
 * it cannot, the report says so and keeps its native stack, and the late
 * answer is dropped. The callback only reads: it returns true (go on).
 *
 * No link with GJS or SpiderMonkey: the functions are looked up with
 * dlsym() in the process, by their C++ names of mozjs 102 (GJS 1.74);
 * another SpiderMonkey means no JavaScript frames, never a wrong call. */

typedef struct _JSContext JSContext;
typedef struct _JSObject JSObject;
typedef struct _JSString JSString;
typedef struct _GjsContext GjsContext;

/* mozjs 102's JS::StackCapture, a mozilla::Variant<JS::AllFrames,
 * JS::MaxFrames, JS::FirstSubsumedFrame>: 24 bytes of storage, then the
 * index of the alternative. */
typedef struct
{
  union
  {
    guint32 max_frames;
    guint8  storage[24];
  } u;
  guint8 tag;
} StackCapture;
#define STACK_CAPTURE_ALL_FRAMES 0
/* JS::SavedFrameSelfHosted::Include, JS::SavedFrameResult::Ok */
#define SAVED_FRAME_INCLUDE_SELF_HOSTED 0
#define SAVED_FRAME_OK 0

static struct
{
  GjsContext *(*gjs_current) (void);
  JSContext  *(*gjs_native) (GjsContext *);
  bool        (*add_interrupt_callback) (JSContext *, bool (*) (JSContext *));
  void        (*request_interrupt) (JSContext *);
  /* JS::UniqueChars JS::FormatStackDump (JSContext*, bool, bool, bool):
   * the smart pointer is returned through a hidden first argument. */
  void        (*format_stack_dump) (char **, JSContext *, bool, bool, bool);
  void        (*js_free) (JSContext *, void *);
  /* Optional: the creation sites of add-on attribution need them. */
  bool        (*describe_scripted_caller) (JSContext *, void *, unsigned *, unsigned *);
  const char *(*implementation_version) (void);
  /* The saved frames of the creation sites' walk (JS::CaptureCurrentStack()
   * and its readers). A JS::Handle or JS::MutableHandle is a pointer to
   * the location; JS::UniqueChars comes back through a hidden first
   * argument. */
  bool        (*capture_current_stack) (JSContext *, void **, StackCapture *);
  int         (*saved_frame_source) (JSContext *, void *, void * const *, JSString **, int);
  int         (*saved_frame_line) (JSContext *, void *, void * const *, unsigned *, int);
  int         (*saved_frame_function) (JSContext *, void *, void * const *, JSString **, int);
  int         (*saved_frame_parent) (JSContext *, void *, void * const *, void **, int);
  void        (*encode_utf8) (char **, JSContext *, JSString * const *);
  size_t      (*put_escaped_string) (JSContext *, char *, size_t, JSString *, char);
  void       *(*current_realm) (JSContext *);
  bool        (*is_exception_pending) (JSContext *);
  void        (*clear_pending_exception) (JSContext *);
} js;

static gboolean have_saved_frames;

static gsize resolved;
static gboolean have_js;

static GMutex lock;
static GCond cond;
static JSContext *registered;      /* the context our callback is on */
static gboolean pending;           /* a request the callback should serve */
static guint64 request_serial;
static guint64 answered_serial;
static char *answer;               /* FormatStackDump's text, g_malloc'd */
/* A sample's request: the files it wants (see _perfmon_js_stack_sample()),
 * and the frame the walk found, when it could walk the saved frames
 * (answer_walked; else the dump's text is the answer). */
static PerfmonJsFileWanted request_wanted;
static gpointer request_wanted_data;
static gboolean answer_walked;
static PerfmonJsFrame answer_frame;
/* What the thread dispatched when it answered (a sample's), copied by the
 * callback: no allocation. */
static char answer_dispatch[PERFMON_JS_SAMPLE_DISPATCH_MAX + 1];
/* The engine's thread's CPU clock, set with the callback. */
static clockid_t registered_clock;
static gboolean have_registered_clock;

static gboolean
resolve (void)
{
  if (g_once_init_enter (&resolved))
    {
#define RESOLVE(field, name) ((*(void **) &js.field = dlsym (RTLD_DEFAULT, name)) != NULL)
      have_js = RESOLVE (gjs_current, "gjs_context_get_current") &&
                RESOLVE (gjs_native, "gjs_context_get_native_context") &&
                RESOLVE (add_interrupt_callback, "_Z23JS_AddInterruptCallbackP9JSContextPFbS0_E") &&
                RESOLVE (request_interrupt, "_Z27JS_RequestInterruptCallbackP9JSContext") &&
                RESOLVE (format_stack_dump, "_ZN2JS15FormatStackDumpEP9JSContextbbb") &&
                RESOLVE (js_free, "_Z7JS_freeP9JSContextPv");
      if (have_js)
        {
          (void) RESOLVE (describe_scripted_caller, "_ZN2JS22DescribeScriptedCallerEP9JSContextPNS_12AutoFilenameEPjS4_");
          (void) RESOLVE (implementation_version, "_Z27JS_GetImplementationVersionv");
          have_saved_frames =
            RESOLVE (capture_current_stack,
                     "_ZN2JS19CaptureCurrentStackEP9JSContextNS_13MutableHandleIP8JSObjectEEON7mozilla7"
                     "VariantIJNS_9AllFramesENS_9MaxFramesENS_18FirstSubsumedFrameEEEE") &&
            RESOLVE (saved_frame_source,
                     "_ZN2JS19GetSavedFrameSourceEP9JSContextP12JSPrincipalsNS_6HandleIP8JSObjectEENS_"
                     "13MutableHandleIP8JSStringEENS_20SavedFrameSelfHostedE") &&
            RESOLVE (saved_frame_line,
                     "_ZN2JS17GetSavedFrameLineEP9JSContextP12JSPrincipalsNS_6HandleIP8JSObjectEEPjNS_"
                     "20SavedFrameSelfHostedE") &&
            RESOLVE (saved_frame_function,
                     "_ZN2JS32GetSavedFrameFunctionDisplayNameEP9JSContextP12JSPrincipalsNS_6HandleIP8"
                     "JSObjectEENS_13MutableHandleIP8JSStringEENS_20SavedFrameSelfHostedE") &&
            RESOLVE (saved_frame_parent,
                     "_ZN2JS19GetSavedFrameParentEP9JSContextP12JSPrincipalsNS_6HandleIP8JSObjectEENS_"
                     "13MutableHandleIS6_EENS_20SavedFrameSelfHostedE") &&
            RESOLVE (encode_utf8, "_Z21JS_EncodeStringToUTF8P9JSContextN2JS6HandleIP8JSStringEE") &&
            RESOLVE (put_escaped_string, "_Z19JS_PutEscapedStringP9JSContextPcmP8JSStringc") &&
            RESOLVE (current_realm, "_ZN2JS21GetCurrentRealmOrNullEP9JSContext") &&
            RESOLVE (is_exception_pending, "_Z21JS_IsExceptionPendingP9JSContext") &&
            RESOLVE (clear_pending_exception, "_Z24JS_ClearPendingExceptionP9JSContext");
        }
#undef RESOLVE
      g_once_init_leave (&resolved, 1);
    }
  return have_js;
}

/* The engine's thread, at a safe point. */
static bool
on_interrupt (JSContext *cx)
{
  char *dump = NULL;

  g_mutex_lock (&lock);
  if (pending && cx == registered)
    {
      guint64 serial = request_serial;
      const char *dispatching = _perfmon_current_dispatch_name;
      PerfmonJsFileWanted wanted = request_wanted;
      gpointer wanted_data = request_wanted_data;
      PerfmonJsFrame found = { NULL, NULL, 0 };
      gboolean walked = FALSE;
      gsize n = 0;

      pending = FALSE;
      g_mutex_unlock (&lock);
      /* A sample: the innermost frame of a wanted file, from the saved
       * frames, which are not formatted (callgrind, a shallow promise job:
       * 19,600 instructions against the dump's 23,600; more saved the
       * deeper the stack). A hang report, or where the saved frames
       * cannot be taken: the whole dump. No arguments, locals nor
       * properties: nothing that runs script. */
      if (wanted != NULL)
        walked = _perfmon_js_stack_find_here (wanted, wanted_data, NULL, &found, NULL);
      if (!walked)
        js.format_stack_dump (&dump, cx, false, false, false);
      g_mutex_lock (&lock);
      /* The name is the dispatch's group's (or a handler site's), alive
       * while it runs: copied here, on its thread, under the lock. */
      if (dispatching != NULL)
        while (n < PERFMON_JS_SAMPLE_DISPATCH_MAX && dispatching[n] != '\0')
          {
            answer_dispatch[n] = dispatching[n];
            n++;
          }
      answer_dispatch[n] = '\0';
      g_free (answer);
      answer = g_strdup (dump != NULL ? dump : "");
      _perfmon_js_frame_clear (&answer_frame);
      answer_walked = walked;
      answer_frame = found;
      answered_serial = serial;
      g_cond_broadcast (&cond);
      if (dump != NULL)
        js.js_free (cx, dump);
    }
  g_mutex_unlock (&lock);
  return true;
}

void
_perfmon_js_stack_prepare (void)
{
  GjsContext *gjs;
  JSContext *cx;

  /* GJS runs its context on the process's main thread: registering from
   * any other thread would race with the engine. */
  if ((pid_t) syscall (SYS_gettid) != getpid () || !resolve ())
    return;
  gjs = js.gjs_current ();
  if (gjs == NULL)
    return;
  cx = js.gjs_native (gjs);
  g_mutex_lock (&lock);
  if (cx != NULL && registered == NULL)
    {
      if (js.add_interrupt_callback (cx, on_interrupt))
        {
          registered = cx;
          have_registered_clock = pthread_getcpuclockid (pthread_self (), &registered_clock) == 0;
        }
    }
  g_mutex_unlock (&lock);
}

/* "0 name(args) ["file":line:column]" (FormatStackDump's frame line, the
 * innermost first) split into its function, file and line; FALSE if @line
 * is not one. */
static gboolean
parse_frame_parts (const char  *line,
                   char       **function_out,
                   char       **file_out,
                   guint       *lineno_out)
{
  const char *p = line;
  const char *open, *bracket, *quote_end;
  g_autofree char *function = NULL;

  if (!g_ascii_isdigit (*p))
    return FALSE;
  while (g_ascii_isdigit (*p))
    p++;
  if (*p++ != ' ')
    return FALSE;
  bracket = strstr (p, " [\"");
  if (bracket == NULL)
    return FALSE;
  open = memchr (p, '(', bracket - p);
  function = g_strndup (p, open != NULL ? (gsize) (open - p) : (gsize) (bracket - p));
  quote_end = strstr (bracket + 3, "\":");
  if (quote_end == NULL)
    return FALSE;
  *file_out = g_strndup (bracket + 3, quote_end - (bracket + 3));
  *lineno_out = (guint) g_ascii_strtoull (quote_end + 2, NULL, 10);
  if (g_str_equal (function, "<TOP LEVEL>"))
    {
      g_free (function);
      function = g_strdup ("(top level)");
    }
  *function_out = g_steal_pointer (&function);
  return TRUE;
}

/* The frame of @line as perfmon_format_script_frame() writes it, or NULL. */
static char *
parse_frame (const char *line)
{
  g_autofree char *function = NULL;
  g_autofree char *file = NULL;
  guint lineno = 0;

  if (!parse_frame_parts (line, &function, &file, &lineno))
    return NULL;
  return perfmon_format_script_frame (function, file, lineno);
}

/* See perfmon-js-stack-private.h. */
const char *
_perfmon_js_stack_here_status (void)
{
  static gsize checked;
  static const char *status;

  if (g_once_init_enter (&checked))
    {
      if (!resolve ())
        status = dlsym (RTLD_DEFAULT, "gjs_context_get_current") != NULL
          ? "off: this GJS runs a JavaScript engine other than mozjs 102 (GJS 1.74), which perfmon "
            "does not know"
          : "off: the process runs no GJS";
      else if (js.describe_scripted_caller == NULL || js.implementation_version == NULL ||
               !have_saved_frames ||
               !g_str_has_prefix (js.implementation_version (), "JavaScript-C102."))
        status = "off: the JavaScript engine is not mozjs 102 (GJS 1.74), which perfmon knows";
      else
        status = NULL;
      g_once_init_leave (&checked, 1);
    }
  return status;
}

/* The engine's context, if script runs on the calling thread now (it
 * called into C): NULL otherwise, or if the engine is not known. */
static JSContext *
scripted_context (void)
{
  GjsContext *gjs;
  JSContext *cx;

  if (_perfmon_js_stack_here_status () != NULL)
    return NULL;
  /* GJS keeps one current context for the process, run on the main
   * thread: from any other thread, its engine is not ours to walk. */
  if ((pid_t) syscall (SYS_gettid) != getpid ())
    return NULL;
  gjs = js.gjs_current ();
  if (gjs == NULL || (cx = js.gjs_native (gjs)) == NULL)
    return NULL;
  /* The cheap question first: C code attaches most sources. */
  if (!js.describe_scripted_caller (cx, NULL, NULL, NULL))
    return NULL;
  return cx;
}

gboolean
_perfmon_js_stack_here (GPtrArray *frames)
{
  JSContext *cx;
  char *dump = NULL;
  g_auto(GStrv) lines = NULL;

  if ((cx = scripted_context ()) == NULL)
    return FALSE;
  js.format_stack_dump (&dump, cx, false, false, false);
  if (dump == NULL)
    return FALSE;
  lines = g_strsplit (dump, "\n", -1);
  js.js_free (cx, dump);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      PerfmonJsFrame *frame = g_new0 (PerfmonJsFrame, 1);

      if (parse_frame_parts (lines[i], &frame->function, &frame->file, &frame->line))
        g_ptr_array_add (frames, frame);
      else
        g_free (frame);
    }
  return frames->len > 0;
}

/* The UTF-8 text of @str, g_malloc'd; NULL for NULL or if the engine is
 * out of memory (the error it raised then is dropped, unless one was
 * pending before, @had_exception). The engine's encoding is valid UTF-8
 * (a lone surrogate becomes U+FFFD). */
static char *
saved_frame_text (JSContext *cx,
                  JSString  *str,
                  gboolean   had_exception)
{
  char *chars = NULL;
  char *text;

  if (str == NULL)
    return NULL;
  js.encode_utf8 (&chars, cx, &str);
  if (chars == NULL)
    {
      if (!had_exception && js.is_exception_pending (cx))
        js.clear_pending_exception (cx);
      return NULL;
    }
  text = g_strdup (chars);
  js.js_free (cx, chars);
  return text;
}

/* @frame's function and line, with @file, in @out. The function's name
 * is escaped as the engine's dump and a callback's description write it
 * (JS_PutEscapedString(): no quotes, a character outside printable ASCII
 * as an escape), at most NAME_MAX_BYTES. */
#define NAME_MAX_BYTES 256
static void
saved_frame_fill (JSContext        *cx,
                  void * const     *frame,
                  const char       *file,
                  PerfmonJsFrame   *out)
{
  JSString *name = NULL;
  unsigned line = 0;
  char text[NAME_MAX_BYTES] = "";

  if (js.saved_frame_function (cx, NULL, frame, &name, SAVED_FRAME_INCLUDE_SELF_HOSTED) != SAVED_FRAME_OK)
    name = NULL;
  if (js.saved_frame_line (cx, NULL, frame, &line, SAVED_FRAME_INCLUDE_SELF_HOSTED) != SAVED_FRAME_OK)
    line = 0;
  if (name != NULL)
    {
      js.put_escaped_string (cx, text, sizeof text, name, 0);
      out->function = g_utf8_make_valid (text, -1);
    }
  out->file = g_strdup (file);
  out->line = line;
}

/* See perfmon-js-stack-private.h.
 *
 * The stack comes from JS::CaptureCurrentStack(): SpiderMonkey's saved
 * frames, which it keeps (a SavedFrame object per distinct frame, shared
 * by the stacks that have it, and a cache of each script location's line)
 * and marks in the live frames, so that a capture from where one was
 * taken reuses it. What is read is a frame's file (an atom: a run of
 * frames of one file has the same, and is looked at once), and the
 * function and line of the frames handed back alone. Nothing is
 * formatted (JS::FormatStackDump() writes every frame's function, file,
 * line and column, computing each line from the bytecode). The captured
 * frame and its parent are held in persistent roots of our own while
 * read: the capture allocates, and the collector may move objects. */
gboolean
_perfmon_js_stack_find_here (PerfmonJsFileWanted  wanted,
                             gpointer             user_data,
                             const char          *other_than,
                             PerfmonJsFrame      *found,
                             PerfmonJsFrame      *first_other)
{
  JSContext *cx;
  PerfmonJsRoot frame = { NULL, NULL, false, NULL };
  PerfmonJsRoot parent = { NULL, NULL, false, NULL };
  StackCapture capture;
  JSString *run_source = NULL;
  g_autofree char *run_file = NULL;
  gboolean run_wanted = FALSE;
  gboolean had_exception;
  gboolean captured;

  /* The capture needs a realm (it aborts without one), which script
   * that called into C has, unless the C code left it. */
  if ((cx = scripted_context ()) == NULL || js.current_realm (cx) == NULL)
    return FALSE;
  if (!_perfmon_js_root (cx, &frame))
    return FALSE;
  _perfmon_js_root (cx, &parent);
  had_exception = js.is_exception_pending (cx);
  memset (&capture, 0, sizeof capture);
  capture.tag = STACK_CAPTURE_ALL_FRAMES;
  captured = js.capture_current_stack (cx, &frame.ptr, &capture);
  if (!captured && !had_exception && js.is_exception_pending (cx))
    js.clear_pending_exception (cx);
  /* Script runs, yet no frame: the engine saves none while an exception
   * is pending (or while it saves one already). */
  if (captured && frame.ptr == NULL)
    captured = FALSE;
  while (captured && frame.ptr != NULL)
    {
      JSString *source = NULL;

      /* A frame that cannot be read (the engine out of memory, or a
       * frame it denies) leaves the walk to the dump. */
      if (js.saved_frame_source (cx, NULL, &frame.ptr, &source, SAVED_FRAME_INCLUDE_SELF_HOSTED) !=
          SAVED_FRAME_OK)
        {
          captured = FALSE;
          break;
        }
      /* Frames come in runs of one file: a run is looked at once. */
      if (source != run_source || run_file == NULL)
        {
          g_free (run_file);
          run_file = saved_frame_text (cx, source, had_exception);
          run_source = source;
          run_wanted = run_file != NULL && wanted (run_file, user_data);
          if (run_file == NULL)
            {
              captured = FALSE;
              break;
            }
        }
      if (run_wanted)
        {
          saved_frame_fill (cx, &frame.ptr, run_file, found);
          break;
        }
      if (first_other != NULL && first_other->file == NULL && !g_str_has_prefix (run_file, other_than))
        saved_frame_fill (cx, &frame.ptr, run_file, first_other);
      /* A parent across an asynchronous call is not given: the stack of
       * what runs now ends there, as the engine's own dump does. */
      if (js.saved_frame_parent (cx, NULL, &frame.ptr, &parent.ptr, SAVED_FRAME_INCLUDE_SELF_HOSTED) !=
          SAVED_FRAME_OK)
        break;
      frame.ptr = parent.ptr;
      parent.ptr = NULL;
    }
  _perfmon_js_unroot (&parent);
  _perfmon_js_unroot (&frame);
  if (!captured)
    {
      _perfmon_js_frame_clear (found);
      if (first_other != NULL)
        _perfmon_js_frame_clear (first_other);
    }
  return captured;
}

void
_perfmon_js_frame_free (gpointer data)
{
  PerfmonJsFrame *frame = data;

  g_free (frame->function);
  g_free (frame->file);
  g_free (frame);
}

/* Asks the engine's thread for its stack dump (see the top); TRUE with
 * *@text (g_malloc'd) and @dispatch_out (if not NULL, at least
 * PERFMON_JS_SAMPLE_DISPATCH_MAX + 1 bytes) the name of what it
 * dispatched; FALSE with *@reason NULL (no GJS) or why not. */
static gboolean
request_dump (guint                timeout_ms,
              PerfmonJsFileWanted  wanted,
              gpointer             wanted_data,
              char               **text_out,
              gboolean            *walked_out,
              PerfmonJsFrame      *frame_out,
              char                *dispatch_out,
              char               **reason)
{
  gint64 deadline_us = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  guint64 serial;
  GjsContext *gjs;
  JSContext *cx;

  *reason = NULL;
  *text_out = NULL;
  if (!resolve () || (gjs = js.gjs_current ()) == NULL)
    return FALSE;

  g_mutex_lock (&lock);
  cx = registered;
  /* A context GJS no longer has current may be on its way out: never
   * interrupt a context that is not the current one. */
  if (cx != NULL && js.gjs_native (gjs) != cx)
    {
      g_mutex_unlock (&lock);
      *reason = g_strdup ("the JavaScript context is not the one that was set up");
      return FALSE;
    }
  if (cx == NULL)
    {
      g_mutex_unlock (&lock);
      *reason = g_strdup ("the JavaScript engine was not set up for it (the hang monitor started "
                          "before GJS and its loop has not run since)");
      return FALSE;
    }
  serial = ++request_serial;
  pending = TRUE;
  request_wanted = wanted;
  request_wanted_data = wanted_data;
  js.request_interrupt (cx);
  while (answered_serial != serial)
    if (!g_cond_wait_until (&cond, &lock, deadline_us))
      break;
  if (answered_serial == serial)
    {
      *text_out = g_steal_pointer (&answer);
      if (walked_out != NULL)
        *walked_out = answer_walked;
      if (frame_out != NULL)
        {
          *frame_out = answer_frame;
          answer_frame = (PerfmonJsFrame) { NULL, NULL, 0 };
        }
      if (dispatch_out != NULL)
        memcpy (dispatch_out, answer_dispatch, sizeof answer_dispatch);
    }
  else
    pending = FALSE;   /* a late interrupt answers nothing */
  g_mutex_unlock (&lock);

  if (*text_out == NULL)
    {
      *reason = g_strdup_printf ("the JavaScript engine did not reach a safe point within %u ms "
                                 "(the thread runs native code)", timeout_ms);
      return FALSE;
    }
  return TRUE;
}

gboolean
_perfmon_js_stack_capture (guint       timeout_ms,
                           GPtrArray  *frames,
                           char      **reason)
{
  g_autofree char *text = NULL;
  g_autoptr(GPtrArray) inner_first = NULL;
  g_auto(GStrv) lines = NULL;

  if (!request_dump (timeout_ms, NULL, NULL, &text, NULL, NULL, NULL, reason))
    return FALSE;

  inner_first = g_ptr_array_new_with_free_func (g_free);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char *frame = parse_frame (lines[i]);

      if (frame != NULL)
        g_ptr_array_add (inner_first, frame);
    }
  /* The engine answered from no script: nothing is missing. */
  if (inner_first->len == 0)
    return FALSE;
  for (guint i = inner_first->len; i-- > 0;)
    g_ptr_array_add (frames, g_strdup (g_ptr_array_index (inner_first, i)));
  return TRUE;
}

gboolean
_perfmon_js_stack_sample (guint                timeout_ms,
                          PerfmonJsFileWanted  wanted,
                          gpointer             wanted_data,
                          GPtrArray           *frames,
                          char                 dispatch_name[PERFMON_JS_SAMPLE_DISPATCH_MAX + 1])
{
  g_autofree char *text = NULL;
  g_autofree char *reason = NULL;
  g_auto(GStrv) lines = NULL;
  PerfmonJsFrame found = { NULL, NULL, 0 };
  gboolean walked = FALSE;

  dispatch_name[0] = '\0';
  if (!request_dump (timeout_ms, wanted, wanted_data, &text, &walked, &found, dispatch_name, &reason))
    return FALSE;
  if (walked)
    {
      /* The frame the walk stopped at, if any: the innermost wanted. */
      if (found.file != NULL)
        {
          PerfmonJsFrame *frame = g_new0 (PerfmonJsFrame, 1);

          *frame = found;
          g_ptr_array_add (frames, frame);
        }
      return TRUE;
    }
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      PerfmonJsFrame *frame = g_new0 (PerfmonJsFrame, 1);

      if (parse_frame_parts (lines[i], &frame->function, &frame->file, &frame->line))
        g_ptr_array_add (frames, frame);
      else
        g_free (frame);
    }
  return TRUE;
}

gboolean
_perfmon_js_stack_thread_cpu_ns (gint64 *cpu_ns)
{
  struct timespec ts;
  gboolean ok;

  g_mutex_lock (&lock);
  ok = have_registered_clock && registered != NULL && clock_gettime (registered_clock, &ts) == 0;
  g_mutex_unlock (&lock);
  if (ok)
    *cpu_ns = (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
  return ok;
}

gboolean
_perfmon_js_stack_is_prepared (void)
{
  gboolean prepared;

  g_mutex_lock (&lock);
  prepared = registered != NULL;
  g_mutex_unlock (&lock);
  return prepared;
}
