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

/* Writes @contents to @path through a temporary file of mode 0600,
 * "<path>.p<pid>-XXXXXX", renamed into place (readers see the old file or
 * the whole new one); @durable: synced, file and directory. Removes first
 * the temporary files of @path that dead processes left (see below). On
 * error (a full disk) the temporary file is removed too. */
gboolean _perfmon_log_dir_write_file_atomically (const char  *path,
                                                 const char  *contents,
                                                 gsize        length,
                                                 gboolean     durable,
                                                 GError     **error);

/* Seconds after which a temporary file of GLib's (which does not name its
 * writer) is certainly stranded: such a write takes milliseconds. */
#define PERFMON_LOG_DIR_STALE_TEMP_AGE_S 600

/* Deletes from @dir the temporary files that atomic writes left behind
 * when their process died: regular files (a symbolic link is never
 * followed nor touched) named @name_prefix (any name if NULL) and either
 * ".p<pid>-XXXXXX" (ours) whose process is gone, or, with @glib_style_too
 * (only in a directory that is perfmon's own: in a user's directory
 * "<name>.XXXXXX" may well be the user's file), ".XXXXXX" (GLib's) last
 * modified more than PERFMON_LOG_DIR_STALE_TEMP_AGE_S ago. Never the write
 * of a live process. Returns how many were deleted. */
/* Whether @name is the temporary file of an atomic write of @name_prefix
 * (any name if NULL): ours, "<name>.p<pid>-XXXXXX", or GLib's,
 * "<name>.XXXXXX". */
gboolean _perfmon_log_dir_is_temporary_name (const char *name,
                                             const char *name_prefix);
guint    _perfmon_log_dir_remove_stale_temporaries (const char *dir,
                                                    const char *name_prefix,
                                                    gboolean    glib_style_too);

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
