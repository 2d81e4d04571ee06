/* perfmond-upload.c: pings sent to a telemetry server (--upload-url)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each ping file a process announces (its Ping signal) is sent as
 * Mozilla's HTTP edge server specification says:
 *   POST <base>/submit/telemetry/<docId>/bhr/<appName>/<appVersion>/<channel>/<buildId>
 * with the ping's JSON gzipped (Content-Encoding: gzip) and a Date header.
 * One at a time, oldest first. The file is deleted only after a 2xx; a
 * 5xx, a 429 or no answer is tried again later, waiting twice as long each
 * time (1 s up to 5 min); any other answer means the server will never
 * take it: the file is kept and not sent again. Nothing is sent unless
 * perfmond was given --upload-url.
 */
#include "perfmond-upload.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <unistd.h>

/* A ping of 50 hangs is a few hundred KiB at most. */
#define MAX_PING_BYTES (8 * 1024 * 1024)
#define MAX_QUEUED 1000
#define FIRST_BACKOFF_MS 1000
#define MAX_BACKOFF_MS (5 * 60 * 1000)

struct _PerfmondUploader
{
  char         *base_url;
  SoupSession  *session;
  GCancellable *cancellable;
  GQueue        queue;       /* char * paths, oldest first */
  gboolean      busy;
  guint         backoff_ms;
  guint         retry_id;
};

static void send_next (PerfmondUploader *self);

static PerfmondUploader *
uploader_ref (PerfmondUploader *self)
{
  return g_rc_box_acquire (self);
}

static void
uploader_clear (PerfmondUploader *self)
{
  g_free (self->base_url);
  g_clear_object (&self->session);
  g_clear_object (&self->cancellable);
  g_queue_clear_full (&self->queue, g_free);
}

static void
uploader_unref (PerfmondUploader *self)
{
  g_rc_box_release_full (self, (GDestroyNotify) uploader_clear);
}

PerfmondUploader *
perfmond_uploader_new (const char *base_url)
{
  PerfmondUploader *self = g_rc_box_new0 (PerfmondUploader);
  gsize length = strlen (base_url);

  /* The path starts with a slash of its own. */
  while (length > 0 && base_url[length - 1] == '/')
    length--;
  self->base_url = g_strndup (base_url, length);
  self->session = soup_session_new_with_options ("user-agent", "perfmond", "timeout", 60, NULL);
  self->cancellable = g_cancellable_new ();
  g_queue_init (&self->queue);
  self->backoff_ms = FIRST_BACKOFF_MS;
  return self;
}

void
perfmond_uploader_free (PerfmondUploader *self)
{
  if (self == NULL)
    return;
  g_cancellable_cancel (self->cancellable);
  g_clear_handle_id (&self->retry_id, g_source_remove);
  uploader_unref (self);
}

void
perfmond_uploader_add (PerfmondUploader *self,
                       const char       *path)
{
  if (self->queue.length >= MAX_QUEUED)
    {
      g_warning ("upload: %u pings wait already; not sending %s (the file stays)", MAX_QUEUED, path);
      return;
    }
  g_queue_push_tail (&self->queue, g_strdup (path));
  send_next (self);
}

/* The ping at @path as gzipped bytes, and its URL; NULL with @error set
 * when it is not a ping we may send. */
static GBytes *
prepare (PerfmondUploader  *self,
         const char        *path,
         char             **url,
         GError           **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GConverter) compressor = NULL;
  g_autoptr(GOutputStream) memory = NULL;
  g_autoptr(GOutputStream) gzip = NULL;
  g_autofree char *text = NULL;
  const char *fields[5];
  const char *names[] = { "id", "name", "version", "channel", "buildId" };
  g_auto(GStrv) escaped = g_new0 (char *, 6);
  JsonObject *ping, *application;
  GStatBuf st;
  gsize length;

  /* A regular file of ours (not a link to somebody else's), of a sane
   * size: the path came from a process. */
  if (g_lstat (path, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != geteuid () ||
      st.st_size > MAX_PING_BYTES)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "not a regular file of ours of at most %d bytes", MAX_PING_BYTES);
      return NULL;
    }
  if (!g_file_get_contents (path, &text, &length, error) ||
      !json_parser_load_from_data (parser, text, (gssize) length, error))
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)) ||
      (ping = json_node_get_object (json_parser_get_root (parser))) == NULL ||
      !json_object_has_member (ping, "application") ||
      !JSON_NODE_HOLDS_OBJECT (json_object_get_member (ping, "application")))
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "not a ping: no application object");
      return NULL;
    }
  application = json_object_get_object_member (ping, "application");
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      JsonObject *from = i == 0 ? ping : application;
      JsonNode *node = json_object_get_member (from, names[i]);

      if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING ||
          *(fields[i] = json_node_get_string (node)) == '\0')
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "not a ping: no %s", names[i]);
          return NULL;
        }
      escaped[i] = g_uri_escape_string (fields[i], NULL, FALSE);
    }
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
} Upload;

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
      if (g_unlink (upload->path) != 0)
        g_warning ("upload: sent %s, but cannot delete it: %s", upload->path, g_strerror (errno));
      g_free (g_queue_pop_head (&self->queue));
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
      g_warning ("upload: the server refused %s (%u %s); it is kept and not sent again", upload->path,
                 status, soup_status_get_phrase (status));
      g_free (g_queue_pop_head (&self->queue));
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
      SoupMessage *message;
      Upload *upload;

      body = prepare (self, path, &url, &error);
      message = body != NULL ? soup_message_new (SOUP_METHOD_POST, url) : NULL;
      if (message == NULL)
        {
          g_warning ("upload: not sending %s: %s", path, error != NULL ? error->message : "bad URL");
          g_free (g_queue_pop_head (&self->queue));
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
      self->busy = TRUE;
      soup_session_send_and_read_async (self->session, message, G_PRIORITY_DEFAULT, self->cancellable,
                                        sent, upload);
    }
}
