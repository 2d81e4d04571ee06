/* perfmond-upload.c: pings sent to a telemetry server (--upload-url)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each ping file in the pings directories perfmond knows (the default,
 * $XDG_STATE_HOME/perfmon/pings, and each --pings-dir) is sent as
 * Mozilla's HTTP edge server specification says:
 *   POST <base>/submit/telemetry/<docId>/bhr/<appName>/<appVersion>/<channel>/<buildId>
 * with the ping's JSON gzipped (Content-Encoding: gzip) and a Date header.
 * One at a time, oldest first. The file is deleted only after a 2xx; a
 * 5xx, a 429 or no answer is tried again later, waiting twice as long each
 * time (1 s up to 5 min); any other answer means the server will never
 * take it: the file is kept and not sent again. Nothing is sent unless
 * perfmond was given --upload-url.
 *
 * Which files: the directories are scanned at start and every
 * --pings-rescan seconds, and a process's Ping signal is only a hint that
 * makes a file be sent sooner. A lost signal (dropped, sent while perfmond
 * was down or out of descriptors) delays a ping, and never loses it. Only
 * "<name>.json" directly inside a known directory is read, opened without
 * following a link, and only a regular file of perfmond's uid: a process
 * cannot make perfmond read, send or delete anything else.
 */
#include "perfmond-upload.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <perfmon.h>
#include <sys/stat.h>
#include <unistd.h>

/* A ping of 50 hangs is a few hundred KiB at most; the reader takes 8 MiB
 * (perfmon_bhr_ping_new_from_json()). */
#define MAX_PING_BYTES (8 * 1024 * 1024)
#define MAX_QUEUED 1000
/* Files that will never be sent (not a ping, refused by the server) are
 * remembered so that rescans skip them quietly; a bounded memory. */
#define MAX_SKIPPED 10000
#define FIRST_BACKOFF_MS 1000
#define MAX_BACKOFF_MS (5 * 60 * 1000)
/* Warnings: this many a minute, then one that says how many were not. */
#define WARNINGS_PER_MINUTE 5
#define PING_SUFFIX ".json"

struct _PerfmondUploader
{
  char         *base_url;
  char        **dirs;        /* canonical, absolute */
  SoupSession  *session;
  GCancellable *cancellable;
  GQueue        queue;       /* char * paths, oldest first */
  GHashTable   *queued;      /* path → NULL: in the queue */
  GHashTable   *skipped;     /* path → NULL: never sent again (this run) */
  gboolean      busy;
  guint         backoff_ms;
  guint         retry_id;
  guint         rescan_id;
  gint64        warn_window;
  guint         warnings;    /* in warn_window */
  guint64       unsaid;      /* warnings not said since the last one said */
};

static void send_next (PerfmondUploader *self);

/* Repeated warnings (the same bad file at each rescan, a process that
 * announces garbage) are said a few times a minute at most. */
G_GNUC_PRINTF (2, 3) static void
upload_warning (PerfmondUploader *self,
                const char       *format,
                ...)
{
  gint64 now = g_get_monotonic_time ();
  g_autofree char *text = NULL;
  va_list args;

  if (now - self->warn_window >= 60 * G_USEC_PER_SEC)
    {
      self->warn_window = now;
      self->warnings = 0;
    }
  if (self->warnings >= WARNINGS_PER_MINUTE)
    {
      self->unsaid++;
      return;
    }
  self->warnings++;
  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  if (self->unsaid > 0)
    g_warning ("upload: %s (and %" G_GUINT64_FORMAT " warnings not said before it)", text, self->unsaid);
  else
    g_warning ("upload: %s", text);
  self->unsaid = 0;
}

static PerfmondUploader *
uploader_ref (PerfmondUploader *self)
{
  return g_rc_box_acquire (self);
}

static void
uploader_clear (PerfmondUploader *self)
{
  g_free (self->base_url);
  g_strfreev (self->dirs);
  g_clear_object (&self->session);
  g_clear_object (&self->cancellable);
  g_queue_clear_full (&self->queue, g_free);
  g_hash_table_unref (self->queued);
  g_hash_table_unref (self->skipped);
}

static void
uploader_unref (PerfmondUploader *self)
{
  g_rc_box_release_full (self, (GDestroyNotify) uploader_clear);
}

char *
perfmond_default_pings_dir (void)
{
  /* PerfmonHangMonitor:pings-dir's default. */
  g_autofree char *path = g_build_filename (g_get_user_state_dir (), "perfmon", "pings", NULL);

  return g_canonicalize_filename (path, NULL);
}

/* The known directory @path is a ping of, or NULL: "<name>.json", a name
 * of no dot first, directly inside one of @dirs. */
const char *
perfmond_pings_dir_of (const char * const *dirs,
                       const char         *path)
{
  g_autofree char *canonical = NULL;
  g_autofree char *dir = NULL;
  g_autofree char *name = NULL;

  if (path == NULL || !g_path_is_absolute (path))
    return NULL;
  canonical = g_canonicalize_filename (path, NULL);
  dir = g_path_get_dirname (canonical);
  name = g_path_get_basename (canonical);
  if (name[0] == '.' || !g_str_has_suffix (name, PING_SUFFIX) || strlen (name) <= strlen (PING_SUFFIX))
    return NULL;
  for (guint i = 0; dirs != NULL && dirs[i] != NULL; i++)
    if (g_str_equal (dirs[i], dir))
      return dirs[i];
  return NULL;
}

static gboolean
rescan (gpointer data)
{
  perfmond_uploader_rescan (data);
  return G_SOURCE_CONTINUE;
}

static gboolean
first_scan (gpointer data)
{
  perfmond_uploader_rescan (data);
  return G_SOURCE_REMOVE;
}

PerfmondUploader *
perfmond_uploader_new (const char         *base_url,
                       const char * const *pings_dirs,
                       guint               rescan_s)
{
  PerfmondUploader *self = g_rc_box_new0 (PerfmondUploader);
  gsize length = strlen (base_url);
  GPtrArray *dirs = g_ptr_array_new ();

  /* The path starts with a slash of its own. */
  while (length > 0 && base_url[length - 1] == '/')
    length--;
  self->base_url = g_strndup (base_url, length);
  for (guint i = 0; pings_dirs != NULL && pings_dirs[i] != NULL; i++)
    g_ptr_array_add (dirs, g_canonicalize_filename (pings_dirs[i], NULL));
  g_ptr_array_add (dirs, NULL);
  self->dirs = (char **) g_ptr_array_free (dirs, FALSE);
  self->session = soup_session_new_with_options ("user-agent", "perfmond", "timeout", 60, NULL);
  self->cancellable = g_cancellable_new ();
  g_queue_init (&self->queue);
  self->queued = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->skipped = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->backoff_ms = FIRST_BACKOFF_MS;
  /* At start (once the main loop runs), and every rescan_s seconds. */
  g_idle_add (first_scan, self);
  self->rescan_id = g_timeout_add_seconds (MAX (rescan_s, 1), rescan, self);
  return self;
}

void
perfmond_uploader_free (PerfmondUploader *self)
{
  if (self == NULL)
    return;
  g_cancellable_cancel (self->cancellable);
  g_clear_handle_id (&self->retry_id, g_source_remove);
  g_clear_handle_id (&self->rescan_id, g_source_remove);
  g_idle_remove_by_data (self);
  uploader_unref (self);
}

static void
enqueue (PerfmondUploader *self,
         const char       *path)
{
  if (g_hash_table_contains (self->queued, path) || g_hash_table_contains (self->skipped, path))
    return;
  /* The next rescan finds the others. */
  if (self->queue.length >= MAX_QUEUED)
    return;
  g_queue_push_tail (&self->queue, g_strdup (path));
  g_hash_table_add (self->queued, g_strdup (path));
}

static void
skip (PerfmondUploader *self,
      const char       *path)
{
  if (g_hash_table_size (self->skipped) >= MAX_SKIPPED)
    g_hash_table_remove_all (self->skipped);
  g_hash_table_add (self->skipped, g_strdup (path));
}

static char *
dequeue (PerfmondUploader *self)
{
  char *path = g_queue_pop_head (&self->queue);

  g_hash_table_remove (self->queued, path);
  return path;
}

gboolean
perfmond_uploader_add (PerfmondUploader *self,
                       const char       *path)
{
  g_autofree char *canonical = NULL;

  if (perfmond_pings_dir_of ((const char * const *) self->dirs, path) == NULL)
    return FALSE;
  canonical = g_canonicalize_filename (path, NULL);
  enqueue (self, canonical);
  send_next (self);
  return TRUE;
}

typedef struct
{
  char   *path;
  gint64  mtime;
} Found;

static int
compare_found (gconstpointer a,
               gconstpointer b)
{
  const Found *x = a, *y = b;

  if (x->mtime != y->mtime)
    return x->mtime < y->mtime ? -1 : 1;
  return strcmp (x->path, y->path);
}

void
perfmond_uploader_rescan (PerfmondUploader *self)
{
  g_autoptr(GArray) found = g_array_new (FALSE, FALSE, sizeof (Found));

  for (guint i = 0; self->dirs[i] != NULL; i++)
    {
      const char *dir_path = self->dirs[i];
      g_autoptr(GDir) dir = NULL;
      g_autoptr(GError) error = NULL;
      const char *name;
      GStatBuf st;

      if (g_lstat (dir_path, &st) != 0)
        continue;  /* no ping yet */
      if (!S_ISDIR (st.st_mode) || st.st_uid != geteuid ())
        {
          upload_warning (self, "%s is not a directory of ours: not looking for pings in it", dir_path);
          continue;
        }
      dir = g_dir_open (dir_path, 0, &error);
      if (dir == NULL)
        {
          upload_warning (self, "cannot look for pings: %s", error->message);
          continue;
        }
      while ((name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = NULL;
          Found entry;

          if (name[0] == '.' || !g_str_has_suffix (name, PING_SUFFIX))
            continue;
          path = g_build_filename (dir_path, name, NULL);
          if (g_hash_table_contains (self->queued, path) || g_hash_table_contains (self->skipped, path) ||
              g_lstat (path, &st) != 0 || !S_ISREG (st.st_mode))
            continue;
          entry.path = g_steal_pointer (&path);
          entry.mtime = (gint64) st.st_mtim.tv_sec * G_USEC_PER_SEC + st.st_mtim.tv_nsec / 1000;
          g_array_append_val (found, entry);
        }
    }
  g_array_sort (found, compare_found);
  for (guint i = 0; i < found->len; i++)
    {
      Found *entry = &g_array_index (found, Found, i);

      enqueue (self, entry->path);
      g_free (entry->path);
    }
  send_next (self);
}

/* Opens the ping at @path (a canonical path inside a known directory) for
 * reading, never through a link, and checks that it is a regular file of
 * ours of a sane size. Returns the descriptor, or -1 with @error set;
 * @permanent says whether trying again later cannot help. */
static int
open_ping (const char  *path,
           struct stat *st,
           gboolean    *permanent,
           GError     **error)
{
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  int saved_errno = errno;

  *permanent = FALSE;
  if (fd < 0)
    {
      /* ELOOP: a link. EMFILE, ENFILE, ENOMEM: later. */
      *permanent = saved_errno == ELOOP || saved_errno == EACCES || saved_errno == ENXIO;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno), "%s",
                   saved_errno == ELOOP ? "a symbolic link" : g_strerror (saved_errno));
      return -1;
    }
  if (fstat (fd, st) != 0 || !S_ISREG (st->st_mode) || st->st_uid != geteuid () ||
      st->st_size > MAX_PING_BYTES)
    {
      *permanent = TRUE;
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "not a regular file of ours of at most %d bytes", MAX_PING_BYTES);
      close (fd);
      return -1;
    }
  return fd;
}

static char *
read_ping (int           fd,
           gsize         size,
           gsize        *length,
           GError      **error)
{
  g_autofree char *text = g_malloc (size + 1);
  gsize done = 0;

  /* No more than fstat() said: a file that grows is not a ping. */
  while (done < size)
    {
      gssize n = read (fd, text + done, size - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int saved_errno = errno;

          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno), "%s",
                       g_strerror (saved_errno));
          return NULL;
        }
      if (n == 0)
        break;
      done += (gsize) n;
    }
  text[done] = '\0';
  *length = done;
  return g_steal_pointer (&text);
}

/* The ping at @path as gzipped bytes, its URL and its file's identity;
 * NULL with @error set when it is not a ping we may send (@permanent:
 * never will be). */
static GBytes *
prepare (PerfmondUploader  *self,
         const char        *path,
         char             **url,
         struct stat       *st,
         gboolean          *permanent,
         GError           **error)
{
  g_autoptr(PerfmonBhrPing) ping = NULL;
  g_autoptr(GConverter) compressor = NULL;
  g_autoptr(GOutputStream) memory = NULL;
  g_autoptr(GOutputStream) gzip = NULL;
  g_autofree char *text = NULL;
  const char *fields[5];
  g_auto(GStrv) escaped = g_new0 (char *, G_N_ELEMENTS (fields) + 1);
  gsize length = 0;
  int fd;

  /* Only what the queue holds, which is only what is in a known
   * directory; checked again here all the same. */
  if (perfmond_pings_dir_of ((const char * const *) self->dirs, path) == NULL)
    {
      *permanent = TRUE;
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "not in a pings directory");
      return NULL;
    }
  fd = open_ping (path, st, permanent, error);
  if (fd < 0)
    return NULL;
  text = read_ping (fd, (gsize) st->st_size, &length, error);
  close (fd);
  if (text == NULL)
    return NULL;
  /* Checked by the ping's one reader: a file that is not a ping we
   * wrote is never sent, and never will be. */
  *permanent = TRUE;
  ping = perfmon_bhr_ping_new_from_json (text, (gssize) length, error);
  if (ping == NULL)
    return NULL;
  fields[0] = perfmon_bhr_ping_get_id (ping);
  fields[1] = perfmon_bhr_ping_get_app_name (ping);
  fields[2] = perfmon_bhr_ping_get_app_version (ping);
  fields[3] = perfmon_bhr_ping_get_app_channel (ping);
  fields[4] = perfmon_bhr_ping_get_app_build_id (ping);
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    escaped[i] = g_uri_escape_string (fields[i], NULL, FALSE);
  *url = g_strdup_printf ("%s/submit/telemetry/%s/bhr/%s/%s/%s/%s", self->base_url, escaped[0],
                          escaped[1], escaped[2], escaped[3], escaped[4]);

  compressor = G_CONVERTER (g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1));
  memory = g_memory_output_stream_new_resizable ();
  gzip = g_converter_output_stream_new (memory, compressor);
  if (!g_output_stream_write_all (gzip, text, length, NULL, NULL, error) ||
      !g_output_stream_close (gzip, NULL, error))
    return NULL;
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (memory));
}

static gboolean
retry (gpointer data)
{
  PerfmondUploader *self = data;

  self->retry_id = 0;
  send_next (self);
  return G_SOURCE_REMOVE;
}

typedef struct
{
  PerfmondUploader *uploader;
  SoupMessage      *message;
  char             *path;
  dev_t             dev;
  ino_t             ino;
} Upload;

/* Deletes the sent ping, if the file at its path is still the one sent. */
static void
delete_sent (PerfmondUploader *self,
             Upload           *upload)
{
  struct stat st;

  if (lstat (upload->path, &st) != 0 || st.st_dev != upload->dev || st.st_ino != upload->ino)
    return;
  if (g_unlink (upload->path) != 0)
    upload_warning (self, "sent %s, but cannot delete it: %s", upload->path, g_strerror (errno));
}

static void
sent (GObject      *source,
      GAsyncResult *result,
      gpointer      data)
{
  Upload *upload = data;
  PerfmondUploader *self = upload->uploader;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) answer = soup_session_send_and_read_finish (SOUP_SESSION (source), result, &error);
  guint status = soup_message_get_status (upload->message);

  if (g_cancellable_is_cancelled (self->cancellable))
    goto out;
  self->busy = FALSE;

  if (answer != NULL && SOUP_STATUS_IS_SUCCESSFUL (status))
    {
      g_debug ("upload: %s sent (%u)", upload->path, status);
      delete_sent (self, upload);
      g_free (dequeue (self));
      self->backoff_ms = FIRST_BACKOFF_MS;
      send_next (self);
    }
  else if (answer == NULL || SOUP_STATUS_IS_SERVER_ERROR (status) || status == 429)
    {
      g_message ("upload: %s not sent (%s); again in %u s", upload->path,
                 answer == NULL ? error->message : soup_status_get_phrase (status), self->backoff_ms / 1000);
      self->retry_id = g_timeout_add (self->backoff_ms, retry, self);
      self->backoff_ms = MIN (self->backoff_ms * 2, MAX_BACKOFF_MS);
    }
  else
    {
      upload_warning (self, "the server refused %s (%u %s); it is kept and not sent again", upload->path,
                      status, soup_status_get_phrase (status));
      skip (self, upload->path);
      g_free (dequeue (self));
      send_next (self);
    }

out:
  g_object_unref (upload->message);
  g_free (upload->path);
  g_free (upload);
  uploader_unref (self);
}

static void
send_next (PerfmondUploader *self)
{
  while (!self->busy && self->retry_id == 0 && !g_queue_is_empty (&self->queue))
    {
      const char *path = g_queue_peek_head (&self->queue);
      g_autoptr(GError) error = NULL;
      g_autoptr(GBytes) body = NULL;
      g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
      g_autofree char *url = NULL;
      g_autofree char *date = NULL;
      gboolean permanent = FALSE;
      struct stat st;
      SoupMessage *message;
      Upload *upload;

      body = prepare (self, path, &url, &st, &permanent, &error);
      message = body != NULL ? soup_message_new (SOUP_METHOD_POST, url) : NULL;
      if (message == NULL)
        {
          /* Gone (sent by another perfmond, deleted by its owner): nothing
           * to say. Out of descriptors or memory: the next rescan finds it
           * again. Not a ping of ours: never again. */
          if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            g_debug ("upload: %s is gone", path);
          else
            upload_warning (self, "not sending %s: %s", path, error != NULL ? error->message : "bad URL");
          if (permanent || body != NULL)
            skip (self, path);
          g_free (dequeue (self));
          continue;
        }
      date = soup_date_time_to_string (now, SOUP_DATE_HTTP);
      soup_message_headers_replace (soup_message_get_request_headers (message), "Date", date);
      soup_message_headers_replace (soup_message_get_request_headers (message), "Content-Encoding", "gzip");
      soup_message_set_request_body_from_bytes (message, "application/json; charset=UTF-8", body);

      upload = g_new0 (Upload, 1);
      upload->uploader = uploader_ref (self);
      upload->message = message;
      upload->path = g_strdup (path);
      upload->dev = st.st_dev;
      upload->ino = st.st_ino;
      self->busy = TRUE;
      soup_session_send_and_read_async (self->session, message, G_PRIORITY_DEFAULT, self->cancellable,
                                        sent, upload);
    }
}
