/* perfmond-http.c: perfmond's one HTTP server, with its limits
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See perfmond-http.h. A connection is in one of two states: reading a
 * header block (a read is always pending, so that the peer's close is seen
 * at once, even between requests) or writing an answer. One timer per
 * connection: the idle timeout while it waits for the first byte of a
 * request or writes an answer, the header timeout from that first byte to
 * the blank line (and from the accept, for the first request: a connection
 * that says nothing is a slow header too).
 */
#include "perfmond-http.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK 4096
/* RFC 6585; libsoup 3.2 has no name for it. */
#define STATUS_HEADER_FIELDS_TOO_LARGE 431

struct _PerfmondHttpServer
{
  GObject             parent_instance;
  PerfmondHttpLimits  limits;
  GSocketService     *service;
  GSocketAddress     *address;      /* as bound (the port chosen, if 0) */
  GHashTable         *handlers;     /* path → Handler */
  GHashTable         *connections;  /* Connection set */
  char               *token;        /* nullable */
};

G_DEFINE_FINAL_TYPE (PerfmondHttpServer, perfmond_http_server, G_TYPE_OBJECT)

typedef struct
{
  PerfmondHttpHandler func;
  gpointer            user_data;
  PerfmondHttpFlags   flags;
} Handler;

typedef struct
{
  PerfmondHttpServer *server;       /* NULL once closed */
  GSocketConnection  *stream;
  GCancellable       *cancellable;
  GByteArray         *buffer;       /* the header block being read */
  guint8              chunk[READ_CHUNK];
  guint               timeout_id;
  gboolean            in_request;   /* the first byte of a request came */
  GBytes             *answer;       /* being written */
  gboolean            keep_alive;
} Connection;

struct _PerfmondHttpRequest
{
  const char         *method;
  const char         *path;
  GHashTable         *query;        /* nullable */
  SoupMessageHeaders *headers;
  guint               status;       /* 0 until answered */
  char               *content_type;
  GBytes             *body;
  GString            *extra_headers;
};

static void connection_read (Connection *connection);
static void connection_handle (Connection *connection);

static Connection *
connection_ref (Connection *connection)
{
  return g_rc_box_acquire (connection);
}

static void
connection_clear (Connection *connection)
{
  g_clear_object (&connection->stream);
  g_clear_object (&connection->cancellable);
  g_clear_pointer (&connection->buffer, g_byte_array_unref);
  g_clear_pointer (&connection->answer, g_bytes_unref);
}

static void
connection_unref (Connection *connection)
{
  g_rc_box_release_full (connection, (GDestroyNotify) connection_clear);
}

/* Closes the socket now (no lingering, nothing more is read or written)
 * and forgets the connection; pending operations end cancelled and drop
 * their references. */
static void
connection_close (Connection *connection)
{
  PerfmondHttpServer *server = connection->server;

  if (server == NULL)
    return;
  connection->server = NULL;
  g_clear_handle_id (&connection->timeout_id, g_source_remove);
  g_cancellable_cancel (connection->cancellable);
  g_io_stream_close (G_IO_STREAM (connection->stream), NULL, NULL);
  /* Last: the set holds a reference. */
  g_hash_table_remove (server->connections, connection);
}

static gboolean
on_timeout (gpointer user_data)
{
  Connection *connection = user_data;

  connection->timeout_id = 0;
  g_debug ("HTTP: closing a connection that %s", connection->in_request ? "did not finish its header in time"
                                                                        : "stayed idle");
  connection_close (connection);
  return G_SOURCE_REMOVE;
}

static void
connection_set_timeout (Connection *connection,
                        guint       seconds)
{
  g_clear_handle_id (&connection->timeout_id, g_source_remove);
  connection->timeout_id = g_timeout_add_seconds (seconds, on_timeout, connection);
}

static void
on_written (GObject      *source,
            GAsyncResult *result,
            gpointer      user_data)
{
  Connection *connection = user_data;
  g_autoptr(GError) error = NULL;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), result, NULL, &error))
    {
      connection_close (connection);
      connection_unref (connection);
      return;
    }
  if (connection->server == NULL)
    {
      connection_unref (connection);
      return;
    }
  g_clear_pointer (&connection->answer, g_bytes_unref);
  if (!connection->keep_alive)
    connection_close (connection);
  else
    {
      connection->in_request = FALSE;
      connection_set_timeout (connection, connection->server->limits.idle_timeout_s);
      /* A pipelined request may already be in the buffer. */
      if (connection->buffer->len > 0)
        connection_handle (connection);
      else
        connection_read (connection);
    }
  connection_unref (connection);
}

static const char *
reason (guint status)
{
  const char *phrase = status == STATUS_HEADER_FIELDS_TOO_LARGE ? "Request Header Fields Too Large"
                                                                 : soup_status_get_phrase (status);

  return phrase != NULL ? phrase : "Unknown";
}

/* Sends the answer; the connection reads again (or closes) once it is
 * written. */
static void
connection_send (Connection *connection,
                 guint       status,
                 const char *content_type,
                 GBytes     *body,
                 const char *extra_headers,
                 gboolean    head)
{
  GString *text = g_string_new (NULL);
  gsize body_size = body != NULL ? g_bytes_get_size (body) : 0;

  g_string_append_printf (text, "HTTP/1.1 %u %s\r\n", status, reason (status));
  g_string_append (text, "Server: perfmond\r\n");
  if (content_type != NULL)
    g_string_append_printf (text, "Content-Type: %s\r\n", content_type);
  g_string_append_printf (text, "Content-Length: %" G_GSIZE_FORMAT "\r\n", body_size);
  g_string_append (text, "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n");
  if (extra_headers != NULL)
    g_string_append (text, extra_headers);
  g_string_append (text, connection->keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
  if (body_size > 0 && !head)
    g_string_append_len (text, g_bytes_get_data (body, NULL), (gssize) body_size);

  connection->answer = g_string_free_to_bytes (text);
  connection_set_timeout (connection, connection->server->limits.idle_timeout_s);
  g_output_stream_write_all_async (g_io_stream_get_output_stream (G_IO_STREAM (connection->stream)),
                                   g_bytes_get_data (connection->answer, NULL),
                                   g_bytes_get_size (connection->answer),
                                   G_PRIORITY_DEFAULT, connection->cancellable,
                                   on_written, connection_ref (connection));
}

/* An error answer, and the connection closes after it. */
static void
connection_refuse (Connection *connection,
                   guint       status,
                   const char *extra_headers)
{
  g_autofree char *text = g_strdup_printf ("%u %s\n", status, reason (status));
  g_autoptr(GBytes) body = g_bytes_new (text, strlen (text));

  connection->keep_alive = FALSE;
  g_byte_array_set_size (connection->buffer, 0);
  connection_send (connection, status, "text/plain; charset=utf-8", body, extra_headers, FALSE);
}

/* Constant time in the length of @expected. */
static gboolean
token_equal (const char *given,
             const char *expected)
{
  gsize given_len = strlen (given), expected_len = strlen (expected);
  guint8 diff = given_len != expected_len;

  for (gsize i = 0; i < expected_len; i++)
    diff |= (guint8) (expected[i] ^ given[i < given_len ? i : 0]);
  return diff == 0;
}

/* The token may come as "Authorization: Bearer T" (Prometheus, curl, the
 * page's fetches) or as the query parameter token (the URL that `perfmon
 * view` opens, and the page's assets). */
static gboolean
request_has_token (PerfmondHttpServer  *self,
                   PerfmondHttpRequest *request)
{
  const char *authorization, *query;

  if (self->token == NULL)
    return FALSE;
  authorization = soup_message_headers_get_one (request->headers, "Authorization");
  if (authorization != NULL && g_ascii_strncasecmp (authorization, "Bearer ", 7) == 0 &&
      token_equal (authorization + 7, self->token))
    return TRUE;
  query = perfmond_http_request_get_query (request, "token");
  return query != NULL && token_equal (query, self->token);
}

/* A complete header block is at the start of the buffer, @header_len bytes
 * with its blank line. */
static void
connection_dispatch (Connection *connection,
                     gsize       header_len,
                     gsize       block_len)
{
  PerfmondHttpServer *self = connection->server;
  g_autoptr(SoupMessageHeaders) headers = soup_message_headers_new (SOUP_MESSAGE_HEADERS_REQUEST);
  g_autofree char *method = NULL, *target = NULL;
  g_autofree char *path = NULL;
  SoupHTTPVersion version = SOUP_HTTP_1_0;
  PerfmondHttpRequest request = { 0, };
  const char *question;
  const char *transfer_encoding;
  goffset content_length;
  Handler *handler;
  guint status;

  status = soup_headers_parse_request ((const char *) connection->buffer->data, (int) header_len,
                                       headers, &method, &target, &version);
  g_byte_array_remove_range (connection->buffer, 0, (guint) block_len);
  if (status != SOUP_STATUS_OK)
    {
      connection_refuse (connection, status == SOUP_STATUS_NOT_IMPLEMENTED ? status : SOUP_STATUS_BAD_REQUEST, NULL);
      return;
    }

  if (version == SOUP_HTTP_1_1)
    connection->keep_alive = !soup_message_headers_header_contains (headers, "Connection", "close");
  else
    connection->keep_alive = soup_message_headers_header_contains (headers, "Connection", "keep-alive");

  /* No request has a body here: refuse one before a byte of it is read. */
  transfer_encoding = soup_message_headers_get_one (headers, "Transfer-Encoding");
  content_length = soup_message_headers_get_one (headers, "Content-Length") != NULL
                   ? soup_message_headers_get_content_length (headers) : 0;
  if (transfer_encoding != NULL || content_length != 0 ||
      soup_message_headers_get_one (headers, "Expect") != NULL)
    {
      connection_refuse (connection, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, NULL);
      return;
    }
  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0)
    {
      connection_refuse (connection, SOUP_STATUS_METHOD_NOT_ALLOWED, "Allow: GET, HEAD\r\n");
      return;
    }
  if (target[0] != '/')
    {
      connection_refuse (connection, SOUP_STATUS_BAD_REQUEST, NULL);
      return;
    }

  question = strchr (target, '?');
  path = question != NULL ? g_strndup (target, (gsize) (question - target)) : g_strdup (target);
  request.method = method;
  request.path = path;
  request.query = question != NULL ? soup_form_decode (question + 1) : NULL;
  request.headers = headers;

  /* Exact paths only: nothing is looked up on a file system. */
  handler = g_hash_table_lookup (self->handlers, path);
  if (handler == NULL)
    perfmond_http_request_respond (&request, SOUP_STATUS_NOT_FOUND, "text/plain; charset=utf-8",
                                   g_bytes_new_static ("404 Not Found\n", 14));
  else if ((handler->flags & PERFMOND_HTTP_NEEDS_TOKEN) && !request_has_token (self, &request))
    {
      perfmond_http_request_respond (&request, SOUP_STATUS_UNAUTHORIZED, "text/plain; charset=utf-8",
                                     g_bytes_new_static ("401 Unauthorized: this needs perfmon's token "
                                                         "(see perfmon view --print-url)\n", 70));
      perfmond_http_request_add_header (&request, "WWW-Authenticate", "Bearer");
    }
  else
    {
      handler->func (&request, handler->user_data);
      if (request.status == 0)
        perfmond_http_request_respond (&request, SOUP_STATUS_INTERNAL_SERVER_ERROR, NULL, NULL);
    }

  if (request.status >= 400)
    connection->keep_alive = FALSE;
  connection_send (connection, request.status, request.content_type, request.body,
                   request.extra_headers != NULL ? request.extra_headers->str : NULL,
                   strcmp (method, "HEAD") == 0);

  g_clear_pointer (&request.query, g_hash_table_unref);
  g_free (request.content_type);
  g_clear_pointer (&request.body, g_bytes_unref);
  if (request.extra_headers != NULL)
    g_string_free (request.extra_headers, TRUE);
}

/* Whether the buffer holds a complete header block; its length. */
static gboolean
find_header_end (GByteArray *buffer,
                 gsize      *header_len,
                 gsize      *block_len)
{
  const guint8 *data = buffer->data;

  for (gsize i = 0; i + 1 < buffer->len; i++)
    {
      if (data[i] != '\n')
        continue;
      if (data[i + 1] == '\n')
        {
          *header_len = i + 1;
          *block_len = i + 2;
          return TRUE;
        }
      if (data[i + 1] == '\r' && i + 2 < buffer->len && data[i + 2] == '\n')
        {
          *header_len = i + 1;
          *block_len = i + 3;
          return TRUE;
        }
    }
  return FALSE;
}

static void
connection_handle (Connection *connection)
{
  gsize header_len, block_len;

  /* Blank lines between requests are allowed (RFC 9112 §2.2). */
  while (connection->buffer->len > 0 &&
         (connection->buffer->data[0] == '\r' || connection->buffer->data[0] == '\n'))
    g_byte_array_remove_index (connection->buffer, 0);

  if (connection->buffer->len > 0 && !connection->in_request)
    {
      connection->in_request = TRUE;
      connection_set_timeout (connection, connection->server->limits.header_timeout_s);
    }

  if (find_header_end (connection->buffer, &header_len, &block_len) &&
      block_len <= connection->server->limits.max_header_bytes)
    connection_dispatch (connection, header_len, block_len);
  else if (connection->buffer->len >= connection->server->limits.max_header_bytes)
    connection_refuse (connection, STATUS_HEADER_FIELDS_TOO_LARGE, NULL);
  else
    connection_read (connection);
}

static void
on_read (GObject      *source,
         GAsyncResult *result,
         gpointer      user_data)
{
  Connection *connection = user_data;
  g_autoptr(GError) error = NULL;
  gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), result, &error);

  if (connection->server == NULL)
    ;
  else if (n <= 0)
    /* The peer closed (or reset): so do we, now. */
    connection_close (connection);
  else
    {
      g_byte_array_append (connection->buffer, connection->chunk, (guint) n);
      connection_handle (connection);
    }
  connection_unref (connection);
}

static void
connection_read (Connection *connection)
{
  /* Never more than the header limit (and one byte, to see it is
   * exceeded) is buffered. */
  gsize room = connection->server->limits.max_header_bytes + 1 - MIN (connection->buffer->len,
                                                                       connection->server->limits.max_header_bytes);

  g_input_stream_read_async (g_io_stream_get_input_stream (G_IO_STREAM (connection->stream)),
                             connection->chunk, MIN (room, sizeof connection->chunk),
                             G_PRIORITY_DEFAULT, connection->cancellable,
                             on_read, connection_ref (connection));
}

static gboolean
on_incoming (GSocketService    *service,
             GSocketConnection *stream,
             GObject           *source_object,
             gpointer           user_data)
{
  PerfmondHttpServer *self = user_data;
  Connection *connection;

  if (g_hash_table_size (self->connections) >= self->limits.max_connections)
    {
      g_debug ("HTTP: %u connections open, closing a new one", g_hash_table_size (self->connections));
      g_io_stream_close (G_IO_STREAM (stream), NULL, NULL);
      return TRUE;
    }

  connection = g_rc_box_new0 (Connection);
  connection->server = self;
  connection->stream = g_object_ref (stream);
  connection->cancellable = g_cancellable_new ();
  connection->buffer = g_byte_array_new ();
  connection->in_request = TRUE;  /* the header timeout runs from the accept */
  g_hash_table_add (self->connections, connection);
  connection_set_timeout (connection, self->limits.header_timeout_s);
  connection_read (connection);
  return TRUE;
}

static void
perfmond_http_server_dispose (GObject *object)
{
  PerfmondHttpServer *self = PERFMOND_HTTP_SERVER (object);

  if (self->service != NULL)
    {
      g_socket_service_stop (self->service);
      g_socket_listener_close (G_SOCKET_LISTENER (self->service));
      g_signal_handlers_disconnect_by_data (self->service, self);
      g_clear_object (&self->service);
    }
  if (self->connections != NULL)
    {
      GHashTableIter iter;
      gpointer key;
      g_autoptr(GPtrArray) open = g_ptr_array_new ();

      g_hash_table_iter_init (&iter, self->connections);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        g_ptr_array_add (open, key);
      for (guint i = 0; i < open->len; i++)
        connection_close (g_ptr_array_index (open, i));
    }

  G_OBJECT_CLASS (perfmond_http_server_parent_class)->dispose (object);
}

static void
perfmond_http_server_finalize (GObject *object)
{
  PerfmondHttpServer *self = PERFMOND_HTTP_SERVER (object);

  g_clear_object (&self->address);
  g_clear_pointer (&self->handlers, g_hash_table_unref);
  g_clear_pointer (&self->connections, g_hash_table_unref);
  if (self->token != NULL)
    {
      memset (self->token, 0, strlen (self->token));
      g_free (self->token);
    }

  G_OBJECT_CLASS (perfmond_http_server_parent_class)->finalize (object);
}

static void
perfmond_http_server_class_init (PerfmondHttpServerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = perfmond_http_server_dispose;
  object_class->finalize = perfmond_http_server_finalize;
}

static void
perfmond_http_server_init (PerfmondHttpServer *self)
{
  self->handlers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->connections = g_hash_table_new_full (NULL, NULL, (GDestroyNotify) connection_unref, NULL);
}

PerfmondHttpServer *
perfmond_http_server_new (const PerfmondHttpLimits *limits)
{
  PerfmondHttpServer *self = g_object_new (PERFMOND_TYPE_HTTP_SERVER, NULL);

  self->limits = *limits;
  self->limits.max_header_bytes = MAX (self->limits.max_header_bytes, 256);
  self->limits.max_connections = MAX (self->limits.max_connections, 1);
  return self;
}

void
perfmond_http_server_set_token (PerfmondHttpServer *self,
                                const char         *token)
{
  g_free (self->token);
  self->token = g_strdup (token);
}

void
perfmond_http_server_add_handler (PerfmondHttpServer  *self,
                                  const char          *path,
                                  PerfmondHttpFlags    flags,
                                  PerfmondHttpHandler  func,
                                  gpointer             user_data)
{
  Handler *handler = g_new0 (Handler, 1);

  handler->func = func;
  handler->user_data = user_data;
  handler->flags = flags;
  g_hash_table_replace (self->handlers, g_strdup (path), handler);
}

gboolean
perfmond_http_server_listen (PerfmondHttpServer  *self,
                             GSocketAddress      *address,
                             GError             **error)
{
  g_autoptr(GSocketAddress) effective = NULL;
  GSocketService *service = g_socket_service_new ();

  /* GLib's default queue of connections not yet accepted is 10: a burst
   * beyond it (a page's requests, several scrapers, or perfmond busy for
   * a moment) has its SYNs dropped and retried a second or more later.
   * The kernel caps SOMAXCONN at net.core.somaxconn; what is queued is
   * accepted, and closed at once beyond max-connections. */
  g_socket_listener_set_backlog (G_SOCKET_LISTENER (service), SOMAXCONN);
  if (!g_socket_listener_add_address (G_SOCKET_LISTENER (service), address, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_TCP, NULL, &effective, error))
    {
      g_object_unref (service);
      return FALSE;
    }
  g_signal_connect (service, "incoming", G_CALLBACK (on_incoming), self);
  g_socket_service_start (service);
  self->service = service;
  self->address = g_steal_pointer (&effective);
  return TRUE;
}

/* http://HOST:PORT/PATH as a browser or Prometheus takes it: IPv6 in
 * brackets, the unspecified address as the loopback one of its family. */
char *
perfmond_http_server_get_url (PerfmondHttpServer *self,
                              const char         *path)
{
  GInetSocketAddress *inet = G_INET_SOCKET_ADDRESS (self->address);
  GInetAddress *address = g_inet_socket_address_get_address (inet);
  g_autoptr(GInetAddress) loopback = NULL;
  g_autofree char *host = NULL;

  if (g_inet_address_get_is_any (address))
    address = loopback = g_inet_address_new_loopback (g_inet_address_get_family (address));
  host = g_inet_address_to_string (address);
  if (g_inet_address_get_family (address) == G_SOCKET_FAMILY_IPV6)
    return g_strdup_printf ("http://[%s]:%u%s", host, g_inet_socket_address_get_port (inet), path);
  return g_strdup_printf ("http://%s:%u%s", host, g_inet_socket_address_get_port (inet), path);
}

gboolean
perfmond_http_server_is_loopback (PerfmondHttpServer *self)
{
  return g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (self->address)));
}

guint
perfmond_http_server_get_n_connections (PerfmondHttpServer *self)
{
  return g_hash_table_size (self->connections);
}

/* "PORT" (on 127.0.0.1) or "IP:PORT" ([…] for IPv6); NULL with @error set,
 * naming @option_name, when @text is neither. */
GSocketAddress *
perfmond_http_parse_address (const char  *option_name,
                             const char  *text,
                             GError     **error)
{
  g_autoptr(GSocketConnectable) connectable = NULL;
  g_autoptr(GInetAddress) address = NULL;
  guint64 port = 0;

  if (g_ascii_string_to_unsigned (text, 10, 1, 65535, &port, NULL))
    address = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  else if ((connectable = g_network_address_parse (text, 0, NULL)) != NULL)
    {
      GNetworkAddress *network = G_NETWORK_ADDRESS (connectable);

      port = g_network_address_get_port (network);
      address = g_inet_address_new_from_string (g_network_address_get_hostname (network));
    }
  if (address == NULL || port == 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--%s: expected PORT (1…65535, on 127.0.0.1) or IP:PORT, got “%.*s”",
                   option_name, (int) MIN (strlen (text), 64), text);
      return NULL;
    }
  return g_inet_socket_address_new (address, (guint16) port);
}

const char *
perfmond_http_request_get_method (PerfmondHttpRequest *request)
{
  return request->method;
}

const char *
perfmond_http_request_get_path (PerfmondHttpRequest *request)
{
  return request->path;
}

const char *
perfmond_http_request_get_query (PerfmondHttpRequest *request,
                                 const char          *name)
{
  return request->query != NULL ? g_hash_table_lookup (request->query, name) : NULL;
}

SoupMessageHeaders *
perfmond_http_request_get_headers (PerfmondHttpRequest *request)
{
  return request->headers;
}

/* Takes @body. */
void
perfmond_http_request_respond (PerfmondHttpRequest *request,
                               guint                status,
                               const char          *content_type,
                               GBytes              *body)
{
  request->status = status;
  g_free (request->content_type);
  request->content_type = g_strdup (content_type);
  g_clear_pointer (&request->body, g_bytes_unref);
  request->body = body;
}

void
perfmond_http_request_add_header (PerfmondHttpRequest *request,
                                  const char          *name,
                                  const char          *value)
{
  if (request->extra_headers == NULL)
    request->extra_headers = g_string_new (NULL);
  g_string_append_printf (request->extra_headers, "%s: %s\r\n", name, value);
}

/* 32 random bytes, base64url without padding: 43 characters. */
#define TOKEN_LENGTH 43

static gboolean
is_token (const char *text)
{
  if (strlen (text) != TOKEN_LENGTH)
    return FALSE;
  for (const char *p = text; *p != '\0'; p++)
    if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_')
      return FALSE;
  return TRUE;
}

/* The token of an existing file, if it is one of ours: a regular file (not
 * a link) of our uid that only we can read, holding a token. */
static char *
read_token (const char *path)
{
  char buffer[TOKEN_LENGTH + 2] = { 0, };
  struct stat st;
  ssize_t n;
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

  if (fd < 0)
    return NULL;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) || st.st_uid != getuid () || (st.st_mode & 077) != 0)
    {
      close (fd);
      return NULL;
    }
  n = read (fd, buffer, sizeof buffer - 1);
  close (fd);
  if (n <= 0)
    return NULL;
  g_strchomp (buffer);
  return is_token (buffer) ? g_strdup (buffer) : NULL;
}

/**
 * perfmond_http_load_token:
 * @error: where to say why not
 *
 * The token of perfmond's HTTP endpoints, from
 * $XDG_RUNTIME_DIR/perfmon/http-token (0600, in a 0700 directory): the one
 * there if it is valid (so that a restarted perfmond keeps it, and
 * Prometheus's credentials_file stays right), else a new random one,
 * written there atomically.
 *
 * Returns: (transfer full): the token, or %NULL with @error set
 */
char *
perfmond_http_load_token (GError **error)
{
  g_autofree char *dir = g_build_filename (g_get_user_runtime_dir (), "perfmon", NULL);
  g_autofree char *path = g_build_filename (dir, "http-token", NULL);
  g_autofree char *text = NULL;
  guint8 random[32];
  char *token;

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "cannot create %s: %s", dir,
                   g_strerror (saved));
      return NULL;
    }
  {
    struct stat st;

    /* Ours, a directory, and only ours to read. */
    if (lstat (dir, &st) != 0 || !S_ISDIR (st.st_mode) || st.st_uid != getuid () ||
        ((st.st_mode & 077) != 0 && chmod (dir, 0700) != 0))
      {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_PERM,
                     "%s is not a directory of ours that only we can read", dir);
        return NULL;
      }
  }
  token = read_token (path);
  if (token != NULL)
    return token;

  if (getrandom (random, sizeof random, 0) != (ssize_t) sizeof random)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "no random bytes for the HTTP token");
      return NULL;
    }
  text = g_base64_encode (random, sizeof random);
  g_strdelimit (text, "+", '-');
  g_strdelimit (text, "/", '_');
  text[TOKEN_LENGTH] = '\0';  /* drops the "=" */
  memset (random, 0, sizeof random);
  if (!g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error))
    return NULL;
  return g_steal_pointer (&text);
}
