#!/usr/bin/python3
# ping-receiver.py: a local stand-in for Mozilla's HTTP edge server
#
# (A helper program for the tests, not a test: the assertions are in
# the test that runs it.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Listens on 127.0.0.1 (a free port), prints "PORT <n>", then checks each
# request against the edge server spec (docs.telemetry.mozilla.org, "HTTP
# Edge Server Specification"):
#   POST /submit/telemetry/<docId>/<docType>/<appName>/<appVersion>/<appUpdateChannel>/<appBuildID>
#   a Date header (HTTP date), Content-Encoding: gzip, a body that
#   gunzips to the JSON ping whose "id" is the docId and whose
#   application fields are those of the path.
# It answers 503 to the first request of each docId (the client must come
# back later) and 200 to the next, and prints "OK <docId>" or
# "BAD <reason>" for each request.
#
# With --accept-first it answers 200 at once, and prints
# "OK <docId> <hangId>,<hangId>…", the hangIds of the ping's hangs.

import email.utils
import gzip
import http.server
import json
import sys
import urllib.parse

seen = set()
accept_first = '--accept-first' in sys.argv[1:]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def bad(self, why, status=400):
        print('BAD ' + why, flush=True)
        self.send_response(status)
        self.end_headers()

    def do_GET(self):
        self.bad('GET ' + self.path, 405)

    def do_POST(self):
        parts = self.path.split('/')
        if len(parts) != 9 or parts[1:3] != ['submit', 'telemetry'] or parts[4] != 'bhr':
            return self.bad('path ' + self.path)
        doc_id, app_name, app_version, channel, build_id = \
            [urllib.parse.unquote(p) for p in (parts[3], parts[5], parts[6], parts[7], parts[8])]
        date = self.headers.get('Date')
        if date is None or email.utils.parsedate_to_datetime(date) is None:
            return self.bad('no HTTP Date header')
        if self.headers.get('Content-Encoding') != 'gzip':
            return self.bad('not gzip: %s' % self.headers.get('Content-Encoding'))
        length = int(self.headers.get('Content-Length', '0'))
        try:
            ping = json.loads(gzip.decompress(self.rfile.read(length)))
        except Exception as e:  # noqa: BLE001
            return self.bad('body: %s' % e)
        application = ping.get('application', {})
        if ping.get('id') != doc_id or ping.get('type') != 'bhr':
            return self.bad('docId %s, ping id %s' % (doc_id, ping.get('id')))
        if (application.get('name'), application.get('version'), application.get('channel'),
                application.get('buildId')) != (app_name, app_version, channel, build_id):
            return self.bad('application %s, path %s' % (application, self.path))
        if accept_first:
            hangs = ping.get('payload', {}).get('hangs', [])
            print('OK %s %s' % (doc_id, ','.join(str(h.get('hangId')) for h in hangs)), flush=True)
            self.send_response(200)
            self.end_headers()
            return
        if doc_id not in seen:
            seen.add(doc_id)
            print('RETRY ' + doc_id, flush=True)
            self.send_response(503)
            self.end_headers()
            return
        print('OK ' + doc_id, flush=True)
        self.send_response(200)
        self.end_headers()


server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
print('PORT %d' % server.server_address[1], flush=True)
server.serve_forever()
