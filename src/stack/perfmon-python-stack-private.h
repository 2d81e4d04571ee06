/* perfmon-python-stack-private.h: the Python frames of a hung thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* How long a hang report waits for the interpreter to let go of the GIL
 * (it does so every switch interval, 5 ms by default, while it runs Python
 * code). */
#define PERFMON_PYTHON_STACK_TIMEOUT_MS 200

/* The most Python frames a report keeps (the innermost ones). */
#define PERFMON_PYTHON_STACK_MAX_FRAMES 64

/* If this process runs a Python interpreter: reads the Python frames of the
 * thread whose Python ident (pthread_self()) is @thread_ident, outermost
 * first, each as perfmon_format_script_frame() writes it, into @frames
 * (char *), and returns TRUE. Returns FALSE with @frames untouched and
 * *@reason NULL if the process runs no interpreter or the thread no
 * Python code, or with *@reason
 * saying why (the GIL was not released within @timeout_ms, the
 * interpreter is finishing, ...).
 *
 * Never blocks more than @timeout_ms: the GIL is taken by a helper thread,
 * which keeps waiting for it after a timeout (one such wait at most: later
 * calls fail at once until it ends). Call it from a watchdog thread, never
 * from a signal handler nor from the thread being read. */
gboolean _perfmon_python_stack_capture (guint64     thread_ident,
                                        guint       timeout_ms,
                                        GPtrArray  *frames,
                                        char      **reason);

G_END_DECLS
