/* perfmon-process-private.h: the process's name, one way for every file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The name perfmon gives the process in snapshots, logs, jank events,
 * pings and task logs: g_get_prgname() if the program set it, else the
 * base name of its argv[0], else the kernel's name of the process
 * (/proc/self/comm), else "unknown"; never empty. Thread-safe. */
const char *_perfmon_process_name (void);

/* The OS name of thread @tid of this process (/proc/self/task/TID/comm,
 * what pthread_setname_np() set), or its tid in decimal if the thread is
 * gone. Not for a hot path: it reads a file. */
char       *_perfmon_thread_name  (gint64 tid);

G_END_DECLS
