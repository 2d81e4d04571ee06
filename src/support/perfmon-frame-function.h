/* perfmon-frame-function.h: a stack frame's text reduced to its function
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A stack frame's text as printed ("lib.so+0x1f (func+0x2)",
 * "busy (/tmp/busy.py:7)", "spell check") without what changes from one
 * hang to the next within a function: "lib.so (func)", "busy
 * (/tmp/busy.py)", "spell check". Newly allocated. */
char *perfmon_frame_function (const char *frame);

G_END_DECLS
