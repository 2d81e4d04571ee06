/* perfmon-js-callback-private.h: the JavaScript function behind a GJS
 * callback or signal closure
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib-object.h>
#include <stdbool.h>

#include "perfmon-js-stack-private.h"

G_BEGIN_DECLS

/* On GJS's thread while script runs (see _perfmon_js_stack_here()): if
 * @closure is one of GJS's closures (a signal handler's, or the
 * trampoline GJS hands C as a callback's user data), fills @frame with the
 * JavaScript function it calls: its name (SpiderMonkey's display name,
 * "bound " dropped) and the file and first line of its script, and returns
 * TRUE. @frame's strings are freed with _perfmon_js_frame_clear(). FALSE,
 * filling nothing, for any other closure, on another thread, or with a GJS
 * or JavaScript engine perfmon does not know. May compile a lazy function
 * (SpiderMonkey's JS_GetFunctionScript()): at creation, never per
 * dispatch. */
gboolean _perfmon_js_callback_describe (GClosure       *closure,
                                        PerfmonJsFrame *frame);

/* Whether @func, a source's callback, is code outside every loaded
 * object: a libffi closure, which is how GJS passes a JavaScript function
 * as a C callback (its user data is then GJS's trampoline, a GClosure).
 * Takes the dynamic linker's lock (dladdr()). */
gboolean _perfmon_js_callback_is_ffi (gconstpointer func);

/* Whether JavaScript runs on the calling thread, GJS's (the engine called
 * into C): JS::DescribeScriptedCaller(), no walk. */
gboolean _perfmon_js_script_running (void);

void     _perfmon_js_frame_clear (PerfmonJsFrame *frame);

/* mozjs 102's JS::PersistentRooted<JSObject*>: a linked-list element
 * (next, previous, a flag), then the pointer the garbage collector traces
 * and updates. */
typedef struct _PerfmonJsRoot PerfmonJsRoot;
struct _PerfmonJsRoot
{
  PerfmonJsRoot *next;
  PerfmonJsRoot *prev;
  bool           is_sentinel;
  void          *ptr;           /* a JSObject*, or NULL */
};

/* On GJS's thread: links @root (its ptr set, or NULL) in the persistent
 * roots of @cx (a JSContext*), as JS::PersistentRooted's constructor
 * does; FALSE, linking nothing, without a known engine. Unlinked with
 * _perfmon_js_unroot(), before @root goes out of scope. */
gboolean _perfmon_js_root (gpointer       cx,
                           PerfmonJsRoot *root);
void     _perfmon_js_unroot (PerfmonJsRoot *root);

G_END_DECLS
