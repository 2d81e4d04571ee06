#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks a ping written by the ping store against data/perfmon-bhr-ping.schema.json.

Usage: test_ping_schema.py WRITE-SAMPLE-PING SCHEMA

Needs Debian's python3-jsonschema; exits 77 (skipped, for meson) without it.
Besides the schema, checks what a schema cannot say: that every native frame
indexes into the ping's one modules list, and that the list has no duplicate.
"""

import copy
import json
import subprocess
import sys
import tempfile
import unittest

try:
    import jsonschema
except ImportError:
    print('jsonschema is not installed: skipping', file=sys.stderr)
    sys.exit(77)

WRITER = None
SCHEMA = None


class PingSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(SCHEMA, encoding='utf-8') as f:
            cls.schema = json.load(f)
        jsonschema.Draft7Validator.check_schema(cls.schema)
        cls.validator = jsonschema.Draft7Validator(cls.schema)
        with tempfile.TemporaryDirectory(prefix='perfmon-ping-schema-') as pings_dir:
            out = subprocess.run([WRITER, pings_dir], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            with open(out.strip(), encoding='utf-8') as f:
                cls.ping = json.load(f)

    def assert_rejected(self, ping, why):
        errors = list(self.validator.iter_errors(ping))
        self.assertTrue(errors, f'the schema accepts a ping with {why}')

    def test_sample_is_valid(self):
        errors = sorted(self.validator.iter_errors(self.ping), key=str)
        self.assertEqual([], [f'{list(e.path)}: {e.message}' for e in errors])

    def test_envelope(self):
        self.assertEqual(self.ping['type'], 'bhr')
        self.assertEqual(self.ping['version'], 4)
        self.assertNotIn('environment', self.ping)
        app = self.ping['application']
        self.assertEqual(app['name'], 'write-sample-ping')
        self.assertEqual(app['vendor'], 'perfmon')
        self.assertTrue(app['version'].startswith('00.'), app['version'])
        self.assertEqual(self.ping['payload']['timeSinceLastPing'], 12345)

    def test_frames_index_shared_modules(self):
        payload = self.ping['payload']
        modules = [tuple(m) for m in payload['modules']]
        self.assertEqual(len(modules), len(set(modules)))
        self.assertEqual(len(modules), 3)
        self.assertEqual(len(payload['hangs']), 2)
        for hang in payload['hangs']:
            for frame in hang.get('stack', []):
                if isinstance(frame, list):
                    self.assertTrue(-1 <= frame[0] < len(modules), frame)
        names = [[modules[f[0]][0] if f[0] >= 0 else None
                  for f in hang['stack'] if isinstance(f, list)]
                 for hang in payload['hangs']]
        self.assertEqual(names, [['app', None, 'libglib-2.0.so.0'],
                                 ['libglib-2.0.so.0', 'libjson-glib-1.0.so.0']])

    def test_rejects_old_doc_type(self):
        ping = copy.deepcopy(self.ping)
        ping['type'] = 'backgroundhangmonitor'
        self.assert_rejected(ping, 'type "backgroundhangmonitor"')

    def test_rejects_string_version(self):
        ping = copy.deepcopy(self.ping)
        ping['version'] = '1.0'
        self.assert_rejected(ping, 'version "1.0"')

    def test_rejects_other_breakage(self):
        cases = {
            'a bare application version': ('application', 'version', '1.2'),
            'a short build id': ('application', 'buildId', '2024'),
            'an unknown application field': ('application', 'extra', 'x'),
            'a non-UUID client id': (None, 'clientId', 'not-a-uuid'),
            'a date without milliseconds': (None, 'creationDate', '2024-01-01T00:00:00Z'),
        }
        for why, (section, key, value) in cases.items():
            ping = copy.deepcopy(self.ping)
            (ping[section] if section else ping)[key] = value
            self.assert_rejected(ping, why)

        ping = copy.deepcopy(self.ping)
        ping['payload']['hangs'][0]['modules'] = []
        self.assert_rejected(ping, 'modules left in a hang')
        ping = copy.deepcopy(self.ping)
        ping['payload']['modules'].append(['a', 'b', 'c'])
        self.assert_rejected(ping, 'a module of three strings')
        ping = copy.deepcopy(self.ping)
        ping['payload']['hangs'][0]['duration'] = -1
        self.assert_rejected(ping, 'a negative duration')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    WRITER, SCHEMA = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
