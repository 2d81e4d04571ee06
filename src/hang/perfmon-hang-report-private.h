/* perfmon-hang-report-private.h: building hang reports
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <json-glib/json-glib.h>

#include "perfmon-hang-report.h"

G_BEGIN_DECLS

/* The annotation that marks a hang still going on when the process ended. */
#define PERFMON_ANNOTATION_UNRECOVERED "Unrecovered"
/* Set on a report that could not be saved under pings-dir (a full disk,
 * too many pending hangs): why. It then reaches no ping. */
#define PERFMON_ANNOTATION_NOT_SAVED "NotSaved"
/* How the hang's native stack was taken: "proc-syscall" (the thread was
 * blocked in a system call, read through /proc without disturbing it),
 * "signal" (it was running in user space and was sent the capture signal)
 * or "none" (no stack: see "stackUnavailable"). */
#define PERFMON_ANNOTATION_STACK_METHOD "StackMethod"
/* "true" when the capture signal, sent to a thread seen running, ended a
 * system call it entered meanwhile with EINTR (see perfmon-stack-capture.c). */
#define PERFMON_ANNOTATION_INTERRUPTED_SYSCALL "StackSignalInterruptedSyscall"
/* The add-on whose code ran when the hang was caught (its id), from the
 * label that add-on attribution pushes around an add-on's handler (see
 * hang/perfmon-js-site.c): "[add-on ID] SITE". */
#define PERFMON_ANNOTATION_ADDON "Addon"
/* Without that label: the add-on of the innermost JavaScript frame of the
 * report's stack that an add-on rule matches (see
 * hang/perfmon-js-sampler.c), an attribution by sampling, not exact. */
#define PERFMON_ANNOTATION_ADDON_SAMPLED "AddonSampled"
#define PERFMON_ADDON_LABEL_PREFIX "[add-on "

/* The limits of a report: perfmon_hang_report_new_from_json() refuses
 * anything larger, and the builder below keeps within them (a longer
 * string is cut at a UTF-8 character, and made valid UTF-8; frames,
 * annotations and dispatches past the limit are dropped), so that every
 * report the watchdog makes reads back. A report is a few KiB. */
#define PERFMON_HANG_REPORT_MAX_JSON_BYTES   (1024 * 1024)
#define PERFMON_HANG_REPORT_MAX_STRING_BYTES (16 * 1024)
/* Of "stack" (and "symbols", "modules") and of "pseudoStack". */
#define PERFMON_HANG_REPORT_MAX_FRAMES       1024
#define PERFMON_HANG_REPORT_MAX_ANNOTATIONS  256
#define PERFMON_HANG_REPORT_MAX_DISPATCHES   64
/* Of "duration" and a dispatch's, in ms (31.7 years): json-glib 1.6 writes
 * a double of 1e17 or more as text no JSON reader takes ("2e+65.0"), so a
 * report read back must not hold one (the ping-pending fuzz target found
 * it). */
#define PERFMON_HANG_REPORT_MAX_DURATION_MS  1e12

/* A report is built by one thread (the watchdog), then frozen: once it is
 * handed out (signal, ping) only the getters are called, from any thread. */
PerfmonHangReport *_perfmon_hang_report_new (const char *thread,
                                             const char *runnable_name,
                                             const char *process_type,
                                             const char *remote_type);

void _perfmon_hang_report_set_duration    (PerfmonHangReport *self,
                                           double             duration_ms);
/* Adds @key = @value, replacing an earlier value of @key (annotations keep
 * the order in which keys were first added); a NULL @value removes @key. */
void _perfmon_hang_report_annotate        (PerfmonHangReport *self,
                                           const char        *key,
                                           const char        *value);
void _perfmon_hang_report_add_pseudo_frame (PerfmonHangReport *self,
                                            const char        *label);
/* The interleaved stack, added OUTERMOST FIRST. */
void _perfmon_hang_report_add_label_frame  (PerfmonHangReport *self,
                                            const char        *label);
/* A native frame in the module @debug_name (with @breakpad_id) at @offset
 * from its base; a NULL @debug_name is a frame outside every module, with
 * @offset the absolute pc. @symbol (may be NULL) is the function's name and
 * @symbol_offset the pc's distance from its start. */
void _perfmon_hang_report_add_native_frame (PerfmonHangReport *self,
                                            const char        *debug_name,
                                            const char        *breakpad_id,
                                            guint64            offset,
                                            const char        *symbol,
                                            guint64            symbol_offset);
/* A dispatch of the hang's busy stretch, added longest first: the first
 * becomes the runnable name. */
/* The hang was caught in @runnable, a handler of add-on @addon_id: the
 * "Addon" annotation, and @runnable stays the runnable name whatever
 * dispatch is added (it ran inside the longest). */
void _perfmon_hang_report_set_addon        (PerfmonHangReport *self,
                                            const char        *addon_id,
                                            const char        *runnable);
void _perfmon_hang_report_add_dispatch     (PerfmonHangReport *self,
                                            const char        *name,
                                            double             duration_ms);
void _perfmon_hang_report_set_stack_unavailable (PerfmonHangReport *self,
                                                 const char        *reason);
void _perfmon_hang_report_set_script_stack_unavailable (PerfmonHangReport *self,
                                                        const char        *reason);

/* The report as the hang record that is persisted and then merged into a
 * ping: the seed's fields (duration, thread, runnableName, process,
 * remoteType, annotations, pseudoStack, stack, with native frames as
 * [index into "modules", "hex offset"]) plus "modules" (the [debug name,
 * breakpad id] pairs the stack refers to), "symbols" (each stack entry's
 * "function+0xoffset", or null), "dispatches" (the longest dispatches of
 * the stretch, [{"name", "duration" in ms}], when automatic groups named
 * them), when no native stack could be taken, "stackUnavailable" (why),
 * and when a Python program's frames could not be read,
 * "scriptStackUnavailable" (why). */
JsonObject *_perfmon_hang_report_to_json_object (PerfmonHangReport *self);

/* Names a native frame: the function at @offset of the module
 * @debug_name (@breakpad_id may be ""), and @offset's distance from its
 * start in @function_offset; NULL if unknown. */
typedef char *(*PerfmonHangFrameNamer) (const char *debug_name,
                                        const char *breakpad_id,
                                        guint64     offset,
                                        gboolean    is_return_address,
                                        guint64    *function_offset,
                                        gpointer    data);

/* A new report, @self with the native frames that have no function yet
 * named by @namer (every frame of the stack but the innermost native one
 * is a return address); the rest is the same. */
PerfmonHangReport *_perfmon_hang_report_name_frames (PerfmonHangReport     *self,
                                                     PerfmonHangFrameNamer  namer,
                                                     gpointer               data);

/* The reader of perfmon_hang_report_new_from_json(), on a parsed object
 * (whose document the caller bounded and prescanned): a report, or NULL
 * with PERFMON_ERROR_INVALID_DATA naming the field. A hang of a ping has
 * no "modules" of its own: its native frames index @shared_modules, which
 * the caller checked with _perfmon_hang_report_read_modules(); NULL for a
 * report. */
PerfmonHangReport *_perfmon_hang_report_read_object (JsonObject  *object,
                                                     JsonArray   *shared_modules,
                                                     GError     **error);
/* Checks that each element of @modules is a [debug name, breakpad id]
 * pair of strings as a report's are; @field names it in errors. */
gboolean _perfmon_hang_report_read_modules (JsonArray   *modules,
                                            const char  *field,
                                            GError     **error);

G_END_DECLS
