/* perfmon-task-log-private.h: reading task logs already in memory
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-task-log.h"

G_BEGIN_DECLS

/* Reads @n_files task log files whose contents are @files; @names name
 * them in error messages. For the fuzz target and for callers that hold a
 * flight recorder's dump in memory. */
PerfmonTaskLog *_perfmon_task_log_new_from_bytes (GBytes * const     *files,
                                                  const char * const *names,
                                                  guint               n_files,
                                                  GError            **error);

G_END_DECLS
