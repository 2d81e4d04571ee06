/* perfmon-log-dir-private.h: the jank log directory and its aging
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Our jank logs: "MAIN_THREAD_JANK_<YYYYmmddHHMMSS>_<pid>.txt" (stacks) and
 * "MAIN_THREAD_JANK_<unix-ms>_<pid>.trace" (task logs of the tracer's flight
 * recorder). */
#define PERFMON_LOG_DIR_JANK_PREFIX   "MAIN_THREAD_JANK_"
#define PERFMON_LOG_DIR_STACK_SUFFIX  ".txt"
#define PERFMON_LOG_DIR_TRACE_SUFFIX  ".trace"
/* Default size limit of the directory (seed: 10 MB). */
#define PERFMON_LOG_DIR_DEFAULT_LIMIT (G_GUINT64_CONSTANT (10) * 1024 * 1024)

/* Before writing @incoming_bytes into @dir: if our files there (regular
 * files named by _perfmon_log_dir_file_name() with one of @own_prefixes)
 * plus @incoming_bytes exceed @limit_bytes, deletes the oldest of ours, by
 * the time in their names, until they fit (see the .c). @over_limit (may
 * be NULL) is set TRUE if the incoming file cannot fit (then nothing is
 * deleted). A missing @dir is empty. Errors name the path. */
gboolean _perfmon_log_dir_make_room         (const char         *dir,
                                             const char * const *own_prefixes,
                                             guint64             limit_bytes,
                                             guint64             incoming_bytes,
                                             gboolean           *over_limit,
                                             GError            **error);

/* Writes @contents into @dir/@name (mode 0600) through a temporary file
 * renamed into place and synced, creating @dir (0700) if needed. @name
 * must be a plain file name. */
gboolean _perfmon_log_dir_write_atomically  (const char  *dir,
                                             const char  *name,
                                             const char  *contents,
                                             gsize        length,
                                             GError     **error);

/* "<prefix><YYYYmmddHHMMSS>_<pid><suffix>", the time as @time has it. */
/* <prefix><YYYYmmddHHMMSS>_<pid><suffix>, or with _<sequence> before the
 * suffix when @sequence is not 0: the one pattern of perfmon's logs, the
 * only names aging deletes. */
char    *_perfmon_log_dir_file_name         (const char  *prefix,
                                             GDateTime   *time,
                                             guint        pid,
                                             guint        sequence,
                                             const char  *suffix);

/* Ages @dir for @length more bytes, then writes @contents to a new file
 * named by _perfmon_log_dir_file_name() for now and this process, with
 * the first sequence number whose name is free: created exclusively, whole
 * and synced, so two logs of one second never replace each other. Returns
 * its path, or NULL with @error set; *@over_limit (if not NULL) is TRUE
 * when the file was not written because it does not fit @limit_bytes. */
char    *_perfmon_log_dir_write_new         (const char         *dir,
                                             const char * const *own_prefixes,
                                             guint64             limit_bytes,
                                             const char         *prefix,
                                             const char         *suffix,
                                             const char         *contents,
                                             gsize               length,
                                             gboolean           *over_limit,
                                             GError            **error);

G_END_DECLS
