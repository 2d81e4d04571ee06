#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Perfmon.BhrPing through PyGObject, as a script that reads the pings of
a pings directory would: the ping the store writes (write-sample-ping)
read back with its hangs, symbolized, and a file that is no ping refused
with an error naming the field.

Usage: test_bhr_ping.py WRITE-SAMPLE-PING (with the environment that
tests/bindings/meson.build sets up; Debian's /usr/bin/python3).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

WRITE_SAMPLE_PING = sys.argv.pop(1)


class BhrPingTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='test-bhr-ping-py-')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_store_ping(self):
        path = subprocess.run([WRITE_SAMPLE_PING, self.dir], check=True, capture_output=True,
                              text=True, timeout=60).stdout.strip()
        with open(path, encoding='utf-8') as f:
            text = f.read()
        ping = Perfmon.BhrPing.new_from_json(text, -1)
        document = json.loads(text)
        self.assertEqual(ping.get_id(), document['id'])
        self.assertEqual(os.path.basename(path), ping.get_id() + '.json')
        self.assertEqual(ping.get_app_name(), 'write-sample-ping')
        self.assertEqual(ping.get_n_hangs(), 2)
        hangs = [ping.get_hang(i) for i in range(ping.get_n_hangs())]
        self.assertEqual(sorted(h.get_thread() for h in hangs), ['main', 'worker'])
        self.assertEqual([ping.get_hang_id(i) for i in range(2)],
                         [h['hangId'] for h in document['payload']['hangs']])
        # The writer's JSON, read and written again, is the same JSON.
        self.assertEqual(ping.to_json(), text)
        # Symbolized: a new ping, its envelope and frames the same where
        # this machine has no names for them.
        named = ping.symbolize(Perfmon.Symbolizer.new())
        self.assertEqual(named.get_id(), ping.get_id())
        self.assertEqual([named.get_hang(i).dup_stack() for i in range(2)],
                         [h.dup_stack() for h in hangs])

    def test_not_a_ping(self):
        with self.assertRaises(GLib.Error) as raised:
            Perfmon.BhrPing.new_from_json('{"type": "bhr", "version": 4, "id": "' + 'x' * 5000 + '"}', -1)
        self.assertTrue(raised.exception.matches(Perfmon.error_quark(), Perfmon.Error.INVALID_DATA))
        self.assertTrue(raised.exception.message.startswith('id: '), raised.exception.message)
        self.assertNotIn('xxxxxxxx', raised.exception.message)


if __name__ == '__main__':
    unittest.main(verbosity=2)
