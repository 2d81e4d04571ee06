/* perfmond-http.h: perfmond's one HTTP server (/metrics, the about:performance page)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A small HTTP/1.1 server for GET and HEAD only, with its limits enforced
 * before anything is buffered: the header block is read into a bounded
 * buffer, a request that announces a body is answered 413 and closed
 * without reading it, a connection that does not finish its header in
 * time or stays idle is closed, a connection is closed as soon as its peer
 * closes, and connections beyond the limit are closed at once. libsoup
 * parses the header block (soup_headers_parse_request()); the server does
 * the rest, so that nothing it does not control buffers a request.
 *
 * Everything runs in the thread-default main context of the thread that
 * created the server.
 */
#pragma once

#include <gio/gio.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

typedef struct
{
  guint max_connections;    /* open at once; more are closed when accepted */
  guint header_timeout_s;   /* from the first byte of a request to its blank line */
  guint idle_timeout_s;     /* between requests, and to write an answer */
  guint max_header_bytes;   /* request line and headers */
} PerfmondHttpLimits;

#define PERFMOND_HTTP_DEFAULT_LIMITS { .max_connections = 64, .header_timeout_s = 10, \
                                       .idle_timeout_s = 60, .max_header_bytes = 8192 }

typedef enum
{
  PERFMOND_HTTP_PUBLIC = 0,
  PERFMOND_HTTP_NEEDS_TOKEN = 1 << 0,
} PerfmondHttpFlags;

typedef struct _PerfmondHttpRequest PerfmondHttpRequest;

const char         *perfmond_http_request_get_method  (PerfmondHttpRequest *request);
const char         *perfmond_http_request_get_path    (PerfmondHttpRequest *request);
const char         *perfmond_http_request_get_query   (PerfmondHttpRequest *request,
                                                       const char          *name);
SoupMessageHeaders *perfmond_http_request_get_headers (PerfmondHttpRequest *request);
void                perfmond_http_request_respond     (PerfmondHttpRequest *request,
                                                       guint                status,
                                                       const char          *content_type,
                                                       GBytes              *body);
void                perfmond_http_request_add_header  (PerfmondHttpRequest *request,
                                                       const char          *name,
                                                       const char          *value);

/* Answers @request with perfmond_http_request_respond() before returning;
 * a handler that does not is answered 500. */
typedef void (*PerfmondHttpHandler) (PerfmondHttpRequest *request,
                                     gpointer             user_data);

#define PERFMOND_TYPE_HTTP_SERVER (perfmond_http_server_get_type ())

G_DECLARE_FINAL_TYPE (PerfmondHttpServer, perfmond_http_server, PERFMOND, HTTP_SERVER, GObject)

PerfmondHttpServer *perfmond_http_server_new         (const PerfmondHttpLimits *limits);
void                perfmond_http_server_set_token   (PerfmondHttpServer       *self,
                                                      const char               *token);
void                perfmond_http_server_add_handler (PerfmondHttpServer       *self,
                                                      const char               *path,
                                                      PerfmondHttpFlags         flags,
                                                      PerfmondHttpHandler       handler,
                                                      gpointer                  user_data);
gboolean            perfmond_http_server_listen      (PerfmondHttpServer       *self,
                                                      GSocketAddress           *address,
                                                      GError                  **error);
char               *perfmond_http_server_get_url     (PerfmondHttpServer       *self,
                                                      const char               *path);
gboolean            perfmond_http_server_is_loopback (PerfmondHttpServer       *self);
guint               perfmond_http_server_get_n_connections (PerfmondHttpServer *self);

char               *perfmond_http_load_token         (GError                  **error);

GSocketAddress     *perfmond_http_parse_address      (const char               *option_name,
                                                      const char               *text,
                                                      GError                  **error);

G_END_DECLS
