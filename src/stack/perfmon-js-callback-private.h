/* perfmon-js-callback-private.h: the JavaScript function behind a GJS
 * callback or signal closure
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib-object.h>

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

G_END_DECLS
