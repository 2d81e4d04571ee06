/* perfmon-ping-store.c: hang records that survive the process, until a ping sends them
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
/* renameat2() and RENAME_NOREPLACE. */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-bhr-ping-private.h"
#include "perfmon-error.h"
#include "perfmon-hang-report-private.h"
#include "perfmon-log-dir-private.h"
#include "perfmon-ping-store-private.h"

/* Why a store per process instance, with a lock: a hang must reach a ping
 * even if the process dies during it (a permahang is the very hang that
 * kills it), so every record goes to disk the moment it is known. The
 * next start must tell the records of a dead process, which it should send,
 * from those of a live one (a second instance of the same program, sharing
 * the directory), which it must not touch: the live one may still rewrite
 * them. flock() answers exactly that question, since the kernel drops the
 * lock when its holder dies, however it dies. A store's directory is made
 * under a dot name and renamed into place only once its lock is held, so
 * no other store ever sees it unlocked while it is alive. */

#define NEW_DIR_PREFIX  ".new-"
#define HANG_SUFFIX     ".json"
/* Ids are file names: keep them short and free of anything a shell or a
 * path would read specially. */
#define MAX_ID_LENGTH   128
/* pending/corrupt/ keeps the newest this many files for a human. */
#define CORRUPT_MAX_FILES 16
/* Bytes that pending hang records, and finished pings waiting to be sent,
 * may take in a pings directory: a process that hangs in a loop with no
 * one sending its pings fills neither the disk nor the directory. */
#define PENDING_MAX_BYTES ((guint64) 4 * 1024 * 1024)
#define PINGS_MAX_BYTES   ((guint64) 16 * 1024 * 1024)

struct _PerfmonPingStore
{
  /* Saving (the watchdog thread) and writing a ping (often another
   * thread) must not interleave: a ping that read a record and then
   * deleted its file after a replacement would lose the final record. */
  GMutex  mutex;
  char   *dir;
  char   *pending_root;
  char   *pending_dir;
  char   *instance;
  int     lock_fd;
  guint   seq;
  char   *client_id;
  guint64 pending_limit;
  guint64 pings_limit;
};

static gboolean
set_errno_error (GError     **error,
                 int          saved_errno,
                 const char  *what,
                 const char  *path)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
               "%s “%s”: %s", what, path, g_strerror (saved_errno));
  return FALSE;
}

static gboolean
make_dir (const char  *path,
          GError     **error)
{
  if (g_mkdir_with_parents (path, 0700) != 0)
    return set_errno_error (error, errno, "Could not create directory", path);
  return TRUE;
}

static gboolean
is_valid_id (const char *id)
{
  gsize len = strlen (id);

  /* No leading dot (our temporary and hidden names), no separator. */
  if (len == 0 || len > MAX_ID_LENGTH || id[0] == '.' || id[0] == '-')
    return FALSE;
  for (gsize i = 0; i < len; i++)
    if (!g_ascii_isalnum (id[i]) && id[i] != '-' && id[i] != '_')
      return FALSE;
  return TRUE;
}

/* A hang file is "<id>.json"; the temporary files of an atomic write
 * ("<id>.json." and six random characters, from g_mkstemp()) are not. */
static gboolean
is_json_named (const char *name,
               gboolean  (*is_id) (const char *id))
{
  g_autofree char *id = NULL;

  if (!g_str_has_suffix (name, HANG_SUFFIX))
    return FALSE;
  id = g_strndup (name, strlen (name) - strlen (HANG_SUFFIX));
  return is_id (id);
}

static gboolean
is_hang_file_name (const char *name)
{
  return is_json_named (name, is_valid_id);
}

/* A finished ping: "<uuid>.json". */
static gboolean
is_ping_file_name (const char *name)
{
  return is_json_named (name, g_uuid_string_is_valid);
}

/* Moves @src_dir/@name into @dst_dir, never over an existing file: a
 * clash (which our unique names should make impossible) gets a new name,
 * "<stem>-dup<N><suffix>", rather than destroying either file. */
static gboolean
move_no_replace (const char  *src_dir,
                 const char  *name,
                 const char  *dst_dir,
                 GError     **error)
{
  g_autofree char *src = g_build_filename (src_dir, name, NULL);
  g_autofree char *stem = NULL;
  const char *suffix = g_str_has_suffix (name, HANG_SUFFIX) ? HANG_SUFFIX : "";

  stem = g_strndup (name, strlen (name) - strlen (suffix));

  for (guint attempt = 0; attempt < 1000; attempt++)
    {
      g_autofree char *dst_name = NULL;
      g_autofree char *dst = NULL;

      if (attempt == 0)
        dst_name = g_strdup (name);
      else
        dst_name = g_strdup_printf ("%s-dup%u%s", stem, attempt, suffix);
      dst = g_build_filename (dst_dir, dst_name, NULL);

      if (renameat2 (AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
        return TRUE;
      if (errno == EEXIST)
        continue;
      if (errno == EINVAL || errno == ENOSYS)
        {
          /* A file system without RENAME_NOREPLACE: check, then rename.
           * Racy in theory; only our own, uniquely named files go here. */
          if (g_file_test (dst, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK))
            continue;
          if (g_rename (src, dst) == 0)
            return TRUE;
        }
      return set_errno_error (error, errno, "Could not move", src);
    }

  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
               "Could not move “%s”: too many files of that name in “%s”", src, dst_dir);
  return FALSE;
}

typedef struct
{
  char    *path;
  gint64   mtime;
  guint64  size;
} AgedFile;

static int
compare_newest_first (gconstpointer a,
                      gconstpointer b)
{
  const AgedFile *x = a, *y = b;

  return (x->mtime < y->mtime) - (x->mtime > y->mtime);
}

static void
aged_file_clear (gpointer data)
{
  g_free (((AgedFile *) data)->path);
}

/* Regular files of @dir_path whose names @match accepts, newest first,
 * with their sizes; their total in @total_out. */
static GArray *
list_aged_files (const char  *dir_path,
                 gboolean   (*match) (const char *name),
                 guint64     *total_out)
{
  GArray *files = g_array_new (FALSE, FALSE, sizeof (AgedFile));
  g_autoptr(GDir) dir = g_dir_open (dir_path, 0, NULL);
  const char *name;
  guint64 total = 0;

  g_array_set_clear_func (files, aged_file_clear);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      AgedFile file = { NULL, 0, 0 };
      GStatBuf st;

      if (match != NULL && !match (name))
        continue;
      file.path = g_build_filename (dir_path, name, NULL);
      if (g_lstat (file.path, &st) == 0)
        {
          file.mtime = st.st_mtime;
          file.size = S_ISREG (st.st_mode) ? (guint64) st.st_size : 0;
        }
      total += file.size;
      g_array_append_val (files, file);
    }
  g_array_sort (files, compare_newest_first);
  if (total_out != NULL)
    *total_out = total;
  return files;
}

/* pending/corrupt/ is for a human to look at, not an archive: only the
 * newest CORRUPT_MAX_FILES stay. */
static void
bound_corrupt (const char *corrupt_dir)
{
  g_autoptr(GArray) files = list_aged_files (corrupt_dir, NULL, NULL);

  for (guint i = CORRUPT_MAX_FILES; i < files->len; i++)
    g_unlink (g_array_index (files, AgedFile, i).path);
}

/* Keeps @src_dir/@name for a human to look at, in pending/corrupt/. */
static void
move_to_corrupt (PerfmonPingStore *store,
                 const char       *src_dir,
                 const char       *name,
                 const char       *why)
{
  g_autofree char *corrupt_dir = g_build_filename (store->pending_root,
                                                   PERFMON_PING_STORE_CORRUPT_DIR, NULL);
  g_autofree char *src = g_build_filename (src_dir, name, NULL);
  g_autoptr(GError) error = NULL;

  if (!make_dir (corrupt_dir, &error) ||
      !move_no_replace (src_dir, name, corrupt_dir, &error))
    {
      /* Left where it is: the next ping tries again, still not deleting it. */
      g_warning ("Pending hang file “%s” is unusable (%s) and could not be set aside: %s",
                 src, why, error->message);
      return;
    }
  g_warning ("Pending hang file “%s” is unusable (%s); moved to “%s”",
             src, why, corrupt_dir);
  bound_corrupt (corrupt_dir);
}

/* Takes over @path, the pending directory of another store, if that store
 * is dead: its lock can be taken. */
static void
adopt_one (PerfmonPingStore *store,
           const char       *path)
{
  g_autofree char *lock_path = g_build_filename (path, PERFMON_PING_STORE_LOCK_FILE, NULL);
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GError) error = NULL;
  const char *name;
  int fd;

  fd = open (lock_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    {
      /* ENOENT: another new store is removing it right now, having taken
       * everything it held; or it is not a store's directory at all. */
      if (errno != ENOENT)
        g_warning ("Could not open lock file “%s”: %s", lock_path, g_strerror (errno));
      return;
    }
  if (flock (fd, LOCK_EX | LOCK_NB) != 0)
    {
      /* EWOULDBLOCK: alive. Anything else: we cannot tell, so hands off. */
      close (fd);
      return;
    }

  /* The lock is held until the directory is gone, so that a second
   * adopter either sees it locked or finds nothing left to take. */
  dir = g_dir_open (path, 0, &error);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      if (g_str_equal (name, PERFMON_PING_STORE_LOCK_FILE))
        continue;

      g_autofree char *file = g_build_filename (path, name, NULL);
      GStatBuf st;

      if (g_lstat (file, &st) != 0)
        continue;
      if (!S_ISREG (st.st_mode))
        {
          /* A link, a directory: never ours, never followed. */
          move_to_corrupt (store, path, name, "not a regular file");
        }
      else if (is_hang_file_name (name))
        {
          g_autoptr(GError) move_error = NULL;

          if (!move_no_replace (path, name, store->pending_dir, &move_error))
            g_warning ("Could not adopt pending hang: %s", move_error->message);
        }
      else if (_perfmon_log_dir_is_temporary_name (name, NULL))
        {
          /* The temporary file of a write the dead process did not
           * finish: that record was never saved (the rename is the
           * commit), so it goes, like the rest of the write. */
          g_unlink (file);
        }
      else
        move_to_corrupt (store, path, name, "not a hang file");
    }
  g_clear_pointer (&dir, g_dir_close);

  if (g_unlink (lock_path) != 0 && errno != ENOENT)
    g_warning ("Could not delete lock file “%s”: %s", lock_path, g_strerror (errno));
  /* Fails if something could not be moved out: then it stays, lockless,
   * and the next adopter skips it; nothing in it is lost. */
  if (g_rmdir (path) != 0 && errno != ENOENT)
    g_warning ("Could not remove pending directory “%s” of a dead process: %s",
               path, g_strerror (errno));
  close (fd);
}

static void
adopt_dead (PerfmonPingStore *store)
{
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GError) error = NULL;
  const char *name;

  dir = g_dir_open (store->pending_root, 0, &error);
  if (dir == NULL)
    {
      g_warning ("Could not look for pending hangs of dead processes: %s", error->message);
      return;
    }

  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      GStatBuf st;

      /* Dot names are stores still being set up (or stranded in setup,
       * which never holds a hang). */
      if (name[0] == '.' ||
          g_str_equal (name, PERFMON_PING_STORE_CORRUPT_DIR) ||
          g_str_equal (name, store->instance))
        continue;

      path = g_build_filename (store->pending_root, name, NULL);
      if (g_lstat (path, &st) != 0 || !S_ISDIR (st.st_mode))
        continue;
      adopt_one (store, path);
    }
}

PerfmonPingStore *
_perfmon_ping_store_open (const char  *pings_dir,
                          GError     **error)
{
  g_autofree char *new_dir = NULL;
  g_autofree char *lock_path = NULL;
  PerfmonPingStore *store;

  g_return_val_if_fail (pings_dir != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  store = g_new0 (PerfmonPingStore, 1);
  g_mutex_init (&store->mutex);
  store->lock_fd = -1;
  store->pending_limit = PENDING_MAX_BYTES;
  store->pings_limit = PINGS_MAX_BYTES;
  store->dir = g_strdup (pings_dir);
  store->pending_root = g_build_filename (pings_dir, PERFMON_PING_STORE_PENDING_DIR, NULL);
  /* The pid helps a human; the random part keeps a recycled pid, or two
   * stores in one process, apart. */
  store->instance = g_strdup_printf ("%u-%08x%08x", (guint) getpid (),
                                     g_random_int (), g_random_int ());
  store->pending_dir = g_build_filename (store->pending_root, store->instance, NULL);

  if (!make_dir (store->pending_root, error))
    goto fail;
  /* Pings and client-id writes of processes that died mid-write. */
  _perfmon_log_dir_remove_stale_temporaries (pings_dir, NULL, TRUE);

  new_dir = g_strconcat (store->pending_root, G_DIR_SEPARATOR_S,
                         NEW_DIR_PREFIX, store->instance, NULL);
  if (g_mkdir (new_dir, 0700) != 0)
    {
      set_errno_error (error, errno, "Could not create directory", new_dir);
      goto fail;
    }

  lock_path = g_build_filename (new_dir, PERFMON_PING_STORE_LOCK_FILE, NULL);
  store->lock_fd = open (lock_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (store->lock_fd < 0)
    {
      set_errno_error (error, errno, "Could not create lock file", lock_path);
      goto fail_new_dir;
    }
  if (flock (store->lock_fd, LOCK_EX | LOCK_NB) != 0)
    {
      set_errno_error (error, errno, "Could not lock", lock_path);
      goto fail_new_dir;
    }
  if (g_rename (new_dir, store->pending_dir) != 0)
    {
      set_errno_error (error, errno, "Could not rename", new_dir);
      goto fail_new_dir;
    }

  adopt_dead (store);
  return store;

fail_new_dir:
  if (lock_path != NULL)
    g_unlink (lock_path);
  g_rmdir (new_dir);
fail:
  if (store->lock_fd >= 0)
    close (store->lock_fd);
  store->lock_fd = -1;
  _perfmon_ping_store_close (store);
  return NULL;
}

static GPtrArray *
list_hang_files (PerfmonPingStore  *store,
                 GError           **error)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GDir) dir = NULL;
  const char *name;

  dir = g_dir_open (store->pending_dir, 0, error);
  if (dir == NULL)
    return NULL;
  while ((name = g_dir_read_name (dir)) != NULL)
    if (is_hang_file_name (name))
      g_ptr_array_add (names, g_strdup (name));
  return g_steal_pointer (&names);
}

static void
ping_store_free (PerfmonPingStore *store)
{
  g_mutex_clear (&store->mutex);
  g_free (store->dir);
  g_free (store->pending_root);
  g_free (store->pending_dir);
  g_free (store->instance);
  g_free (store->client_id);
  g_free (store);
}

void
_perfmon_ping_store_forget (PerfmonPingStore *store)
{
  if (store == NULL)
    return;
  if (store->lock_fd >= 0)
    close (store->lock_fd);
  ping_store_free (store);
}

void
_perfmon_ping_store_close (PerfmonPingStore *store)
{
  if (store == NULL)
    return;

  if (store->lock_fd >= 0)
    {
      g_autoptr(GPtrArray) names = list_hang_files (store, NULL);

      /* Nothing left to send: tidy up, so that directories of stores that
       * closed cleanly do not pile up. Still holding the lock, so no
       * adopter is inside. */
      if (names != NULL && names->len == 0)
        {
          g_autofree char *lock_path = g_build_filename (store->pending_dir,
                                                         PERFMON_PING_STORE_LOCK_FILE, NULL);
          g_unlink (lock_path);
          g_rmdir (store->pending_dir);
        }
      close (store->lock_fd);
    }

  ping_store_free (store);
}

const char *
_perfmon_ping_store_get_pending_dir (PerfmonPingStore *store)
{
  g_return_val_if_fail (store != NULL, NULL);
  return store->pending_dir;
}

/* Saving. */

static char *
object_to_json (JsonObject *object,
                gsize      *length)
{
  g_autoptr(JsonNode) node = json_node_alloc ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();

  json_node_init_object (node, object);
  json_generator_set_root (generator, node);
  return json_generator_to_data (generator, length);
}

/* Whether a record of @length bytes, replacing @name if it exists, keeps
 * the pending records within store->pending_limit. */
static gboolean
pending_has_room (PerfmonPingStore  *store,
                  const char        *name,
                  gsize              length,
                  GError           **error)
{
  g_autofree char *path = g_build_filename (store->pending_dir, name, NULL);
  g_autoptr(GArray) files = NULL;
  guint64 total;
  GStatBuf st;

  files = list_aged_files (store->pending_dir, is_hang_file_name, &total);
  if (g_lstat (path, &st) == 0 && S_ISREG (st.st_mode))
    total -= MIN (total, (guint64) st.st_size);
  if (total + length <= store->pending_limit)
    return TRUE;
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC,
               "Pending hangs in “%s” would take %" G_GUINT64_FORMAT " bytes, more than the %"
               G_GUINT64_FORMAT " allowed: not saved until a ping sends them",
               store->pending_dir, total + length, store->pending_limit);
  return FALSE;
}

void
_perfmon_ping_store_set_limits (PerfmonPingStore *store,
                                guint64           pending_bytes,
                                guint64           pings_bytes)
{
  g_return_if_fail (store != NULL);

  g_mutex_lock (&store->mutex);
  store->pending_limit = pending_bytes;
  store->pings_limit = pings_bytes;
  g_mutex_unlock (&store->mutex);
}

char *
_perfmon_ping_store_save_hang (PerfmonPingStore   *store,
                               const char         *id,
                               PerfmonHangReport  *report,
                               GError            **error)
{
  g_autofree char *new_id = NULL;
  g_autofree char *name = NULL;
  g_autofree char *json = NULL;
  g_autoptr(JsonObject) hang = NULL;
  gsize length;
  gboolean ok;

  g_return_val_if_fail (store != NULL, NULL);
  g_return_val_if_fail (report != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (id != NULL && !is_valid_id (id))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "id: “%s” is not a hang record id", id);
      return NULL;
    }

  hang = _perfmon_hang_report_to_json_object (report);
  json = object_to_json (hang, &length);
  /* The one thing of a report that its builder does not bound. */
  if (length > PERFMON_HANG_REPORT_MAX_JSON_BYTES)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "(root): the record takes %" G_GSIZE_FORMAT " bytes, more than the %d "
                   "a hang record may take", length, PERFMON_HANG_REPORT_MAX_JSON_BYTES);
      return NULL;
    }

  g_mutex_lock (&store->mutex);
  if (id == NULL)
    {
      /* The time first, zero-padded: names sort oldest first, across
       * stores too (adopted records keep their names). */
      new_id = g_strdup_printf ("%016" G_GINT64_FORMAT "-%s-%06u",
                                MAX (g_get_real_time (), 0), store->instance, ++store->seq);
      id = new_id;
    }
  name = g_strconcat (id, HANG_SUFFIX, NULL);
  ok = pending_has_room (store, name, length, error) &&
       _perfmon_log_dir_write_atomically (store->pending_dir, name, json, length, error);
  g_mutex_unlock (&store->mutex);

  if (!ok)
    return NULL;
  return new_id != NULL ? g_steal_pointer (&new_id) : g_strdup (id);
}

char *
_perfmon_ping_store_save_hang_json (PerfmonPingStore  *store,
                                    const char        *id,
                                    const char        *json,
                                    GError           **error)
{
  g_autoptr(PerfmonHangReport) report = NULL;

  g_return_val_if_fail (store != NULL, NULL);
  g_return_val_if_fail (json != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  report = perfmon_hang_report_new_from_json (json, -1, error);
  if (report == NULL)
    return NULL;
  return _perfmon_ping_store_save_hang (store, id, report, error);
}

guint
_perfmon_ping_store_count_pending (PerfmonPingStore *store)
{
  g_autoptr(GPtrArray) names = NULL;

  g_return_val_if_fail (store != NULL, 0);

  g_mutex_lock (&store->mutex);
  names = list_hang_files (store, NULL);
  g_mutex_unlock (&store->mutex);
  return names != NULL ? names->len : 0;
}

/* This installation's client id, from @store->dir/client-id, made there if
 * missing. A full disk or an unreadable file must not stop pings (nor the
 * deletion of the hangs they carry): then this process uses an id of its
 * own, for every ping it writes, and says so once. */
static const char *
ensure_client_id (PerfmonPingStore *store)
{
  g_autofree char *path = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *fresh = NULL;
  g_autofree char *line = NULL;
  g_autoptr(GError) local_error = NULL;

  if (store->client_id != NULL)
    return store->client_id;

  path = g_build_filename (store->dir, PERFMON_PING_STORE_CLIENT_ID, NULL);
  if (g_file_get_contents (path, &contents, NULL, &local_error))
    {
      g_strstrip (contents);
      if (g_uuid_string_is_valid (contents))
        return store->client_id = g_steal_pointer (&contents);
      /* Pings with a made-up id would be worse than a new client. */
      g_warning ("“%s” does not hold a UUID; replacing it with a new client id", path);
    }

  fresh = g_uuid_string_random ();
  if (local_error == NULL || g_error_matches (local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
    {
      g_clear_error (&local_error);
      line = g_strconcat (fresh, "\n", NULL);
      _perfmon_log_dir_write_atomically (store->dir, PERFMON_PING_STORE_CLIENT_ID,
                                         line, strlen (line), &local_error);
    }
  if (local_error != NULL)
    g_warning ("Could not keep the client id in “%s” (%s); this process's pings use %s",
               path, local_error->message, fresh);
  return store->client_id = g_steal_pointer (&fresh);
}

typedef struct
{
  char       *name;     /* file name in the pending directory */
  JsonObject *hang;     /* the record, as the reader read it */
} Pending;

static void
pending_clear (gpointer data)
{
  Pending *pending = data;

  g_free (pending->name);
  g_clear_pointer (&pending->hang, json_object_unref);
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return strcmp (*(const char * const *) a, *(const char * const *) b);
}

/* Reads the hang record at @path, never through a symbolic link (a file
 * planted in a pending directory must not make us send what it points to)
 * and never more than a record may take. PERFMON_ERROR_INVALID_DATA: not a
 * regular file, or too large. */
static gboolean
read_record (const char  *path,
             char       **contents_out,
             gsize       *length_out,
             GError     **error)
{
  g_autofree char *contents = NULL;
  struct stat st;
  gsize done = 0;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    {
      if (errno == ELOOP)
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                       "a symbolic link, not followed");
          return FALSE;
        }
      return set_errno_error (error, errno, "Could not open", path);
    }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) || st.st_size > PERFMON_HANG_REPORT_MAX_JSON_BYTES)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                   "not a regular file of at most %d bytes", PERFMON_HANG_REPORT_MAX_JSON_BYTES);
      close (fd);
      return FALSE;
    }

  contents = g_malloc ((gsize) st.st_size + 1);
  while (done < (gsize) st.st_size)
    {
      gssize n = read (fd, contents + done, (gsize) st.st_size - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int saved_errno = errno;

          close (fd);
          return set_errno_error (error, saved_errno, "Could not read", path);
        }
      if (n == 0)
        break;   /* shrunk meanwhile: parse what there is */
      done += (gsize) n;
    }
  close (fd);
  contents[done] = '\0';
  *contents_out = g_steal_pointer (&contents);
  *length_out = done;
  return TRUE;
}

/* Reads our pending hang files, oldest first, into @pendings; sets the
 * unusable ones aside. */
static gboolean
load_pending (PerfmonPingStore  *store,
              GArray            *pendings,
              GError           **error)
{
  g_autoptr(GPtrArray) names = list_hang_files (store, error);

  if (names == NULL)
    return FALSE;
  g_ptr_array_sort (names, compare_names);

  for (guint i = 0; i < names->len; i++)
    {
      const char *name = g_ptr_array_index (names, i);
      g_autofree char *path = g_build_filename (store->pending_dir, name, NULL);
      g_autofree char *contents = NULL;
      g_autoptr(PerfmonHangReport) report = NULL;
      g_autoptr(GError) local_error = NULL;
      gsize length;
      Pending pending;

      if (!read_record (path, &contents, &length, &local_error))
        {
          if (!g_error_matches (local_error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA))
            {
              g_propagate_error (error, g_steal_pointer (&local_error));
              return FALSE;
            }
          move_to_corrupt (store, store->pending_dir, name, local_error->message);
          continue;
        }

      report = perfmon_hang_report_new_from_json (contents, (gssize) length, &local_error);
      if (report == NULL)
        {
          move_to_corrupt (store, store->pending_dir, name, local_error->message);
          continue;
        }

      pending.name = g_strdup (name);
      pending.hang = _perfmon_hang_report_to_json_object (report);
      g_array_append_val (pendings, pending);
    }

  return TRUE;
}

/* Finished pings wait in store->dir until something sends (and deletes)
 * them; if nothing does, the oldest go once they exceed
 * store->pings_limit bytes. @newest, just written, always stays. */
static void
bound_pings (PerfmonPingStore *store,
             const char       *newest)
{
  g_autoptr(GArray) files = NULL;
  guint64 total;
  guint64 kept = 0;
  guint n_deleted = 0;

  files = list_aged_files (store->dir, is_ping_file_name, &total);
  if (total <= store->pings_limit)
    return;
  for (guint i = 0; i < files->len; i++)
    if (g_str_equal (g_array_index (files, AgedFile, i).path, newest))
      kept = g_array_index (files, AgedFile, i).size;
  for (guint i = 0; i < files->len; i++)
    {
      AgedFile *file = &g_array_index (files, AgedFile, i);

      if (g_str_equal (file->path, newest))
        continue;
      if (kept + file->size <= store->pings_limit)
        kept += file->size;
      else if (g_unlink (file->path) == 0)
        n_deleted++;
    }
  if (n_deleted > 0)
    g_warning ("Pings in “%s” took more than %" G_GUINT64_FORMAT " bytes and were not sent: "
               "deleted the %u oldest", store->dir, store->pings_limit, n_deleted);
}

char *
_perfmon_ping_store_write_ping (PerfmonPingStore       *store,
                                const PerfmonPingInfo  *info,
                                GError                **error)
{
  g_autoptr(PerfmonBhrPingBuilder) bhr = NULL;
  g_autoptr(GArray) pendings = g_array_new (FALSE, FALSE, sizeof (Pending));
  g_autoptr(JsonObject) ping = NULL;
  g_autofree char *ping_id = NULL;
  g_autofree char *name = NULL;
  g_autofree char *json = NULL;
  char *path = NULL;
  gsize length;

  g_return_val_if_fail (store != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_array_set_clear_func (pendings, pending_clear);

  g_mutex_lock (&store->mutex);

  /* A sibling process that died while we ran: its hangs need not wait for
   * the next start. */
  adopt_dead (store);

  if (!load_pending (store, pendings, error) || pendings->len == 0)
    goto out;

  bhr = _perfmon_bhr_ping_builder_new (info, error);
  if (bhr == NULL)
    goto out;
  for (guint i = 0; i < pendings->len; i++)
    {
      const Pending *pending = &g_array_index (pendings, Pending, i);
      g_autofree char *hang_id = g_strndup (pending->name, strlen (pending->name) - strlen (HANG_SUFFIX));

      _perfmon_bhr_ping_builder_add_hang (bhr, pending->hang, hang_id);
    }
  ping_id = g_uuid_string_random ();
  ping = _perfmon_bhr_ping_builder_end (g_steal_pointer (&bhr), ping_id, ensure_client_id (store));

  json = object_to_json (ping, &length);
  name = g_strconcat (ping_id, ".json", NULL);
  if (!_perfmon_log_dir_write_atomically (store->dir, name, json, length, error))
    goto out;
  path = g_build_filename (store->dir, name, NULL);
  bound_pings (store, path);

  /* Only now that the ping is durable. A failure here sends these hangs
   * again in the next ping: a duplicate, not a loss. */
  for (guint i = 0; i < pendings->len; i++)
    {
      g_autofree char *pending_path =
        g_build_filename (store->pending_dir, g_array_index (pendings, Pending, i).name, NULL);

      if (g_unlink (pending_path) != 0 && errno != ENOENT)
        g_warning ("Could not delete pending hang “%s” sent in “%s”: %s",
                   pending_path, path, g_strerror (errno));
    }

out:
  g_mutex_unlock (&store->mutex);
  return path;
}
