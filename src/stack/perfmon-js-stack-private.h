/* perfmon-js-stack-private.h: the JavaScript frames of a hung GJS thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* How long a hang report waits for the JavaScript engine to reach a point
 * where it checks for interrupts (a loop's back edge, a function's entry). */
#define PERFMON_JS_STACK_TIMEOUT_MS 200

/* On the thread that runs GJS's context, the process's main thread (the
 * hang monitor calls it there at the watched loop's first poll):
 * registers the interrupt callback through which the frames are read.
 * Does nothing in a process without GJS, on another thread, or twice. */
void     _perfmon_js_stack_prepare (void);

/* If the process runs GJS and _perfmon_js_stack_prepare() registered the
 * callback: asks the engine for its JavaScript stack, as a watchdog would
 * (JS_RequestInterruptCallback(), which any thread may call), waits at
 * most @timeout_ms for the engine's own thread to write it, and stores its
 * frames, outermost first, each as perfmon_format_script_frame() writes
 * it, in @frames. Returns FALSE with *@reason NULL if the process runs no
 * GJS or the engine runs no script, or with *@reason saying why not. Never from a signal handler. */
gboolean _perfmon_js_stack_capture (guint       timeout_ms,
                                    GPtrArray  *frames,
                                    char      **reason);

/* A frame of the JavaScript stack, innermost first. */
typedef struct
{
  char  *function;
  char  *file;
  guint  line;
} PerfmonJsFrame;

void        _perfmon_js_frame_free (gpointer data);

/* NULL if _perfmon_js_stack_here() can work in this process, else why not
 * ("off: …"): no GJS, or a GJS or JavaScript engine perfmon does not know
 * (it is used only with mozjs 102, GJS 1.74). */
const char *_perfmon_js_stack_here_status (void);

/* On GJS's thread while script runs (the engine called into C): appends
 * the JavaScript frames, innermost first, to @frames (of PerfmonJsFrame,
 * freed with _perfmon_js_frame_free()). FALSE, appending nothing, if no
 * script runs, on another thread, or without a known engine. Allocates
 * and walks the whole stack (JS::FormatStackDump()): for creation sites,
 * never per dispatch. */
gboolean    _perfmon_js_stack_here (GPtrArray *frames);

typedef gboolean (*PerfmonJsFileWanted) (const char *file,
                                         gpointer    user_data);

/* On GJS's thread while script runs: walks the JavaScript stack, innermost
 * first, without formatting it (SpiderMonkey's saved frames, which it
 * keeps and reuses between walks), calling @wanted once per run of frames
 * of one file, and stops at the first frame whose file it wants: that
 * frame in @found. @first_other, if not NULL, gets the innermost frame
 * before it (or of the whole stack, if none is wanted) whose file does
 * not start with @other_than. A frame's function is NULL where the engine
 * has no name for it (top-level code, or a function it could give no
 * name). Both are cleared with _perfmon_js_frame_clear(). FALSE, filling
 * nothing, where _perfmon_js_stack_here() is, where the C code called
 * from script left its realm, or if the engine is out of memory.
 * Allocates (a UTF-8 copy of each run's file; the engine's frames of the
 * stack not taken before): for creation sites and the samples of long
 * dispatches (_perfmon_js_stack_sample()), never per dispatch. */
gboolean    _perfmon_js_stack_find_here (PerfmonJsFileWanted  wanted,
                                         gpointer             user_data,
                                         const char          *other_than,
                                         PerfmonJsFrame      *found,
                                         PerfmonJsFrame      *first_other);

/* Bytes of the dispatch name a sample carries, NUL excluded. */
#define PERFMON_JS_SAMPLE_DISPATCH_MAX 95

/* A sample of a long dispatch, for add-on attribution by sampling (see
 * hang/perfmon-js-sampler.c), from any thread but the engine's: the same
 * request as _perfmon_js_stack_capture(), whose answer the engine's thread
 * writes at its next safe point: a walk of the saved frames that stops at
 * the innermost frame whose file @wanted wants (as
 * _perfmon_js_stack_find_here(), called with @wanted_data), or where that
 * walk cannot be done, a FormatStackDump(); and a copy of the name of
 * what it dispatches (the only work it does for a sample). Waits at most
 * @timeout_ms. Appends to @frames (of PerfmonJsFrame): the wanted frame
 * alone, or none if no frame is wanted; or, from a dump, all the frames,
 * innermost first (none if no script ran). Stores the name of the
 * dispatch the thread ran (its group's, "" if none) in @dispatch_name.
 * FALSE if the engine did not answer in time (the thread runs native
 * code, or waits for a CPU) or is not set up. @wanted runs on the
 * engine's thread, at a safe point. */
gboolean _perfmon_js_stack_sample (guint                timeout_ms,
                                   PerfmonJsFileWanted  wanted,
                                   gpointer             wanted_data,
                                   GPtrArray           *frames,
                                   char                 dispatch_name[PERFMON_JS_SAMPLE_DISPATCH_MAX + 1]);

/* Whether _perfmon_js_stack_prepare() set up the engine's thread. */
gboolean _perfmon_js_stack_is_prepared (void);

/* The CPU time of the engine's thread (set up by
 * _perfmon_js_stack_prepare()), ns, read from any thread. */
gboolean _perfmon_js_stack_thread_cpu_ns (gint64 *cpu_ns);

G_END_DECLS
