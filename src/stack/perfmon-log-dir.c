/* perfmon-log-dir.c: the jank log directory and its aging
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-error.h"
#include "perfmon-log-dir-private.h"

/* Aging. The seed keeps at most 10 MB in its watchdog directory and leaves
 * the rest to the user; a desktop program that nobody cleans up after
 * needs the directory to age by itself. So, before a new file is written,
 * if our files and the new one would exceed the limit, ours go, oldest
 * first, one at a time, until the new file fits: the directory never holds
 * more than the limit and aging never deletes more than it must. A new
 * file that could not fit even alone deletes nothing.
 *
 * "Ours" is strict: a regular file (not followed through a symlink) whose
 * whole name is one that perfmon writes, <prefix><YYYYmmddHHMMSS>_<pid>,
 * then optionally _<n>, then .txt or .trace, with one of the caller's
 * prefixes (see _perfmon_log_dir_file_name()). Anything else in the
 * directory, the user's or another program's ("TASK_TIMEOUT_notes.txt"),
 * is neither counted nor touched: the directory may be shared, and a log
 * aging that deleted someone else's file would be far worse than one that
 * overshoots its limit. Oldest means the earliest time in the name, then
 * the smallest sequence number, then the oldest mtime, then the name. */

#define STAMP_LENGTH 14   /* YYYYmmddHHMMSS */

typedef struct
{
  char   *name;
  char    stamp[STAMP_LENGTH + 1];
  guint64 sequence;
  gint64  mtime_ns;
  guint64 size;
} LogFile;

static void
log_file_free (gpointer data)
{
  LogFile *file = data;

  g_free (file->name);
  g_free (file);
}

static int
compare_age (gconstpointer a,
             gconstpointer b)
{
  const LogFile *fa = *(LogFile * const *) a;
  const LogFile *fb = *(LogFile * const *) b;
  int by_stamp = strcmp (fa->stamp, fb->stamp);

  if (by_stamp != 0)
    return by_stamp;
  if (fa->sequence != fb->sequence)
    return fa->sequence < fb->sequence ? -1 : 1;
  if (fa->mtime_ns != fb->mtime_ns)
    return fa->mtime_ns < fb->mtime_ns ? -1 : 1;
  return strcmp (fa->name, fb->name);
}

/* Reads 1 to 10 decimal digits at *@p into @value; advances *@p. */
static gboolean
parse_number (const char **p,
              guint64     *value)
{
  const char *start = *p;

  *value = 0;
  while (g_ascii_isdigit (**p) && *p - start < 10)
    *value = *value * 10 + (guint64) (*(*p)++ - '0');
  return *p > start && !g_ascii_isdigit (**p);
}

/* Whether @name is one perfmon writes with one of @own_prefixes; if so,
 * its time stamp and sequence number go to @file (if not NULL). */
static gboolean
parse_own_name (const char         *name,
                const char * const *own_prefixes,
                LogFile            *file)
{
  for (gsize i = 0; own_prefixes[i] != NULL; i++)
    {
      const char *p = name;
      guint64 pid, sequence = 0;

      if (own_prefixes[i][0] == '\0' || !g_str_has_prefix (name, own_prefixes[i]))
        continue;
      p += strlen (own_prefixes[i]);
      for (guint d = 0; d < STAMP_LENGTH; d++)
        if (!g_ascii_isdigit (p[d]))
          return FALSE;
      if (file != NULL)
        {
          memcpy (file->stamp, p, STAMP_LENGTH);
          file->stamp[STAMP_LENGTH] = '\0';
        }
      p += STAMP_LENGTH;
      if (*p++ != '_' || !parse_number (&p, &pid))
        return FALSE;
      if (*p == '_' && (p++, !parse_number (&p, &sequence)))
        return FALSE;
      if (!g_str_equal (p, PERFMON_LOG_DIR_STACK_SUFFIX) && !g_str_equal (p, PERFMON_LOG_DIR_TRACE_SUFFIX))
        return FALSE;
      if (file != NULL)
        file->sequence = sequence;
      return TRUE;
    }

  return FALSE;
}

/* Our files in @dir, oldest first, into @files; their total size into
 * @total. A missing @dir has none. */
static gboolean
list_own_files (const char          *dir,
                const char * const  *own_prefixes,
                GPtrArray           *files,
                guint64             *total,
                GError             **error)
{
  g_autoptr(GDir) handle = NULL;
  g_autoptr(GError) local_error = NULL;
  const char *name;

  *total = 0;

  handle = g_dir_open (dir, 0, &local_error);
  if (handle == NULL)
    {
      if (g_error_matches (local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        return TRUE;
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  while ((name = g_dir_read_name (handle)) != NULL)
    {
      g_autofree char *path = NULL;
      LogFile parsed = { 0, };
      struct stat st;
      LogFile *file;

      if (!parse_own_name (name, own_prefixes, &parsed))
        continue;

      path = g_build_filename (dir, name, NULL);
      /* lstat: a symlink is not ours, whatever it points to, nor a file
       * of another uid that has our name (a shared directory, root aging a
       * user's). A file that vanished meanwhile (another process aging the
       * same directory) is simply not counted. */
      if (lstat (path, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != geteuid ())
        continue;

      file = g_new0 (LogFile, 1);
      *file = parsed;
      file->name = g_strdup (name);
      file->mtime_ns = (gint64) st.st_mtim.tv_sec * G_GINT64_CONSTANT (1000000000) +
                       st.st_mtim.tv_nsec;
      file->size = (guint64) st.st_size;
      *total += file->size;
      g_ptr_array_add (files, file);
    }

  g_ptr_array_sort (files, compare_age);
  return TRUE;
}

gboolean
_perfmon_log_dir_make_room (const char         *dir,
                            const char * const *own_prefixes,
                            guint64             limit_bytes,
                            guint64             incoming_bytes,
                            gboolean           *over_limit,
                            GError            **error)
{
  g_autoptr(GPtrArray) files = NULL;
  guint64 total;

  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (own_prefixes != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (over_limit != NULL)
    *over_limit = incoming_bytes > limit_bytes;
  /* It cannot fit even alone: nothing is deleted for it. */
  if (incoming_bytes > limit_bytes)
    return TRUE;

  files = g_ptr_array_new_with_free_func (log_file_free);
  if (!list_own_files (dir, own_prefixes, files, &total, error))
    return FALSE;

  /* Written so that a huge incoming_bytes cannot wrap the sum. */
  for (guint i = 0; i < files->len && total > limit_bytes - incoming_bytes; i++)
    {
      const LogFile *file = g_ptr_array_index (files, i);
      g_autofree char *path = g_build_filename (dir, file->name, NULL);

      if (g_unlink (path) != 0 && errno != ENOENT)
        {
          int saved_errno = errno;

          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                       "Could not delete old log file “%s”: %s",
                       path, g_strerror (saved_errno));
          if (over_limit != NULL)
            *over_limit = TRUE;
          return FALSE;
        }
      total -= file->size;
    }

  return TRUE;
}

/* The longest run of names _perfmon_log_dir_write_new() tries. */
#define MAX_SEQUENCE 10000

char *
_perfmon_log_dir_write_new (const char         *dir,
                            const char * const *own_prefixes,
                            guint64             limit_bytes,
                            const char         *prefix,
                            const char         *suffix,
                            const char         *contents,
                            gsize               length,
                            gboolean           *over_limit,
                            GError            **error)
{
  g_autoptr(GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *template = NULL;
  gboolean too_big = FALSE;
  char *path = NULL;
  int fd;

  g_return_val_if_fail (dir != NULL, NULL);
  g_return_val_if_fail (prefix != NULL, NULL);
  g_return_val_if_fail (suffix != NULL, NULL);
  g_return_val_if_fail (contents != NULL || length == 0, NULL);

  if (over_limit != NULL)
    *over_limit = TRUE;

  if (!_perfmon_log_dir_make_room (dir, own_prefixes, limit_bytes, length, &too_big, error))
    return NULL;
  if (too_big)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED,
                   "%" G_GSIZE_FORMAT " bytes exceed the log directory's limit of %" G_GUINT64_FORMAT,
                   length, limit_bytes);
      return NULL;
    }
  if (over_limit != NULL)
    *over_limit = FALSE;

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                   "Could not create log directory “%s”: %s", dir, g_strerror (saved_errno));
      return NULL;
    }

  /* Written whole and synced under a name no reader takes for a log, then
   * linked to its name, which fails if the name exists: a reader sees the
   * whole file or none, and no log replaces another. */
  template = g_build_filename (dir, ".perfmon-log-XXXXXX", NULL);
  fd = g_mkstemp_full (template, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 ||
      !g_file_set_contents_full (template, contents, (gssize) length,
                                 G_FILE_SET_CONTENTS_DURABLE, 0600, error))
    {
      int saved_errno = errno;

      if (fd >= 0)
        {
          close (fd);
          g_unlink (template);
        }
      else
        g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                     "Could not create a log file in “%s”: %s", dir, g_strerror (saved_errno));
      return NULL;
    }
  close (fd);

  for (guint sequence = 0; sequence < MAX_SEQUENCE && path == NULL; sequence++)
    {
      g_autofree char *name = _perfmon_log_dir_file_name (prefix, now, (guint) getpid (), sequence, suffix);
      g_autofree char *candidate = g_build_filename (dir, name, NULL);

      if (link (template, candidate) == 0)
        path = g_steal_pointer (&candidate);
      else if (errno != EEXIST)
        {
          int saved_errno = errno;

          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                       "Could not write the log file “%s”: %s", candidate, g_strerror (saved_errno));
          break;
        }
    }
  if (path == NULL && (error == NULL || *error == NULL))
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                 "Could not write a log file in “%s”: %d names of this second are taken",
                 dir, MAX_SEQUENCE);
  g_unlink (template);
  return path;
}

gboolean
_perfmon_log_dir_write_atomically (const char  *dir,
                                   const char  *name,
                                   const char  *contents,
                                   gsize        length,
                                   GError     **error)
{
  g_autofree char *path = NULL;

  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (name != NULL, FALSE);
  g_return_val_if_fail (contents != NULL || length == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  /* A name with a separator could write outside the directory. */
  if (*name == '\0' || strchr (name, G_DIR_SEPARATOR) != NULL ||
      g_str_equal (name, ".") || g_str_equal (name, ".."))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "name: must be a plain file name, got “%s”", name);
      return FALSE;
    }

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                   "Could not create log directory “%s”: %s",
                   dir, g_strerror (saved_errno));
      return FALSE;
    }

  path = g_build_filename (dir, name, NULL);
  /* CONSISTENT: readers see the old file or the whole new one, never a
   * torn log; DURABLE: a jank report is often followed by a crash or a
   * kill, and should survive it. */
  return _perfmon_log_dir_write_file_atomically (path, contents, length, TRUE, error);
}

static gboolean
write_all (int          fd,
           const char  *contents,
           gsize        length)
{
  while (length > 0)
    {
      gssize n = write (fd, contents, length);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      contents += n;
      length -= (gsize) n;
    }
  return TRUE;
}

gboolean
_perfmon_log_dir_write_file_atomically (const char  *path,
                                        const char  *contents,
                                        gsize        length,
                                        gboolean     durable,
                                        GError     **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *temp = NULL;
  int saved_errno;
  int fd;

  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (contents != NULL || length == 0, FALSE);

  /* Ours, of processes that died mid-write: this is the place that knows
   * the names. */
  _perfmon_log_dir_remove_stale_temporaries (dir, base, FALSE);

  temp = g_strdup_printf ("%s.p%u-XXXXXX", path, (guint) getpid ());
  fd = g_mkstemp_full (temp, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    {
      saved_errno = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                   "Could not create a temporary file next to “%s”: %s",
                   path, g_strerror (saved_errno));
      return FALSE;
    }

  if (!write_all (fd, contents, length) || (durable && fsync (fd) != 0))
    {
      saved_errno = errno != 0 ? errno : EIO;
      close (fd);
      g_unlink (temp);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                   "Could not write “%s”: %s", path, g_strerror (saved_errno));
      return FALSE;
    }
  if (close (fd) != 0 || g_rename (temp, path) != 0)
    {
      saved_errno = errno;
      g_unlink (temp);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
                   "Could not write “%s”: %s", path, g_strerror (saved_errno));
      return FALSE;
    }

  if (durable)
    {
      int dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

      if (dir_fd >= 0)
        {
          fsync (dir_fd);
          close (dir_fd);
        }
    }
  return TRUE;
}

char *
_perfmon_log_dir_file_name (const char *prefix,
                            GDateTime  *time,
                            guint       pid,
                            guint       sequence,
                            const char *suffix)
{
  g_autofree char *stamp = NULL;

  g_return_val_if_fail (prefix != NULL, NULL);
  g_return_val_if_fail (time != NULL, NULL);
  g_return_val_if_fail (suffix != NULL, NULL);

  stamp = g_date_time_format (time, "%Y%m%d%H%M%S");
  if (sequence == 0)
    return g_strdup_printf ("%s%s_%u%s", prefix, stamp, pid, suffix);
  return g_strdup_printf ("%s%s_%u_%u%s", prefix, stamp, pid, sequence, suffix);
}

/* The pid in a temporary name of ours, "<name>.p<pid>-XXXXXX", or 0. */
static guint
temporary_name_pid (const char *suffix)
{
  guint64 pid;
  char *end;

  if (suffix[0] != 'p' || !g_ascii_isdigit (suffix[1]))
    return 0;
  pid = g_ascii_strtoull (suffix + 1, &end, 10);
  if (*end != '-' || strlen (end + 1) != 6 || pid == 0 || pid > G_MAXINT)
    return 0;
  return (guint) pid;
}

/* A temporary name of an atomic write of @name_prefix (any name if NULL):
 * ours, "<name>.p<pid>-XXXXXX", or GLib's, "<name>.XXXXXX". */
gboolean
_perfmon_log_dir_is_temporary_name (const char *name,
                                    const char *name_prefix)
{
  const char *dot = strrchr (name, '.');
  gsize len;

  if (dot == NULL || dot == name)
    return FALSE;
  if (name_prefix != NULL &&
      ((gsize) (dot - name) != strlen (name_prefix) || strncmp (name, name_prefix, dot - name) != 0))
    return FALSE;
  if (temporary_name_pid (dot + 1) != 0)
    return TRUE;
  len = strlen (dot + 1);
  if (len != 6)
    return FALSE;
  for (gsize i = 1; i <= 6; i++)
    if (!g_ascii_isalnum (dot[i]))
      return FALSE;
  return TRUE;
}

guint
_perfmon_log_dir_remove_stale_temporaries (const char *dir,
                                           const char *name_prefix,
                                           gboolean    glib_style_too)
{
  g_autoptr(GDir) handle = NULL;
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  const char *name;
  guint n_removed = 0;

  g_return_val_if_fail (dir != NULL, 0);

  handle = g_dir_open (dir, 0, NULL);
  while (handle != NULL && (name = g_dir_read_name (handle)) != NULL)
    {
      g_autofree char *path = NULL;
      GStatBuf st;

      guint pid;

      if (!_perfmon_log_dir_is_temporary_name (name, name_prefix))
        continue;
      path = g_build_filename (dir, name, NULL);
      if (g_lstat (path, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != geteuid ())
        continue;
      /* Ours name their writer: stale once it is gone. GLib's do not:
       * stale once old. */
      pid = temporary_name_pid (strrchr (name, '.') + 1);
      if (pid != 0 ? !(kill ((pid_t) pid, 0) != 0 && errno == ESRCH)
                   : !glib_style_too || now - (gint64) st.st_mtime < PERFMON_LOG_DIR_STALE_TEMP_AGE_S)
        continue;
      if (g_unlink (path) == 0)
        n_removed++;
    }
  return n_removed;
}
