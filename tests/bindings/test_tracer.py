#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the task tracer through PyGObject: what is introspectable of it
(tracer start/stop/dump, source events, labels, the idle and timeout
wrappers). The written file is checked with the format's fixed header
(src/tasks/perfmon-task-format-private.h) and record framing.

Run with Debian's /usr/bin/python3 and the environment that
tests/bindings/meson.build sets up. Exits non-zero if any test fails.
"""

import os
import shutil
import struct
import tempfile
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

HEADER = struct.Struct('=8sIIIIqqQ32s')
RECORD = struct.Struct('=HHIq')
LABEL = 4
DISPATCH = 1
BEGIN = 2
END = 3


def read_records(path):
    """The header fields and the (type, tid, payload) of each record."""
    with open(path, 'rb') as f:
        data = f.read()
    (magic, version, header_size, bom, pid, _start, _offset, dropped,
     _name) = HEADER.unpack_from(data)
    assert magic == b'PMTASKS\0', magic
    assert version == 1 and header_size == HEADER.size == 80
    assert bom == 0x01020304 and pid == os.getpid()
    records = []
    at = header_size
    while at < len(data):
        rtype, size, tid, _time = RECORD.unpack_from(data, at)
        assert size >= RECORD.size and size % 8 == 0 and at + size <= len(data)
        records.append((rtype, tid, data[at + RECORD.size:at + size]))
        at += size
    return dropped, records


def labels(records):
    return {(struct.unpack_from('=Q', payload)[0],
             payload[8:].rstrip(b'\0').decode())
            for rtype, _tid, payload in records if rtype == LABEL}


class TracerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-tracer-py-')
        self.path = os.path.join(self.dir, 'tasks.log')

    def tearDown(self):
        self.assertFalse(Perfmon.tracer_is_active())
        shutil.rmtree(self.dir)

    def test_source_event_and_idle_task(self):
        loop = GLib.MainLoop()
        seen = {}

        def on_idle(data):
            seen['task'] = Perfmon.Task.get_current()
            seen['source_event'] = Perfmon.source_event_get_current()
            Perfmon.Task.add_label_literal('from %s' % data)
            loop.quit()
            return GLib.SOURCE_REMOVE

        Perfmon.tracer_start(self.path)
        self.assertTrue(Perfmon.tracer_is_active())
        event = Perfmon.source_event_begin(Perfmon.SourceEventType.KEY)
        self.assertEqual(event >> 32, os.getpid())
        self.assertEqual(Perfmon.source_event_get_current(),
                         (event, Perfmon.SourceEventType.KEY))
        Perfmon.idle_add(GLib.PRIORITY_DEFAULT_IDLE, on_idle, 'python')
        Perfmon.source_event_end()
        self.assertEqual(Perfmon.source_event_get_current()[0], 0)
        loop.run()
        Perfmon.tracer_stop()

        self.assertNotEqual(seen['task'], 0)
        self.assertEqual(seen['source_event'],
                         (event, Perfmon.SourceEventType.KEY))
        dropped, records = read_records(self.path)
        self.assertEqual(dropped, 0)
        self.assertIn((seen['task'], 'from python'), labels(records))
        dispatch = [p for t, _tid, p in records if t == DISPATCH]
        self.assertEqual(len(dispatch), 1)
        task, parent, source_event, source_type = struct.unpack_from(
            '=QQQI', dispatch[0])
        self.assertEqual((task, parent, source_event, source_type),
                         (seen['task'], seen['task'], event,
                          int(Perfmon.SourceEventType.KEY)))
        self.assertEqual(
            sum(1 for t, _tid, p in records
                if t in (BEGIN, END) and p[:8] == dispatch[0][:8]), 2)

    def test_flight_recorder_dump(self):
        Perfmon.tracer_start_flight_recorder(5)
        Perfmon.Task.add_label_literal('in the flight recorder')
        Perfmon.tracer_dump(self.path)
        Perfmon.tracer_stop()
        _dropped, records = read_records(self.path)
        self.assertIn((0, 'in the flight recorder'), labels(records))

    def test_errors(self):
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.tracer_stop()
        self.assertTrue(cm.exception.matches(Perfmon.error_quark(),
                                             Perfmon.Error.TRACING_STATE))
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.tracer_start_flight_recorder(0)
        self.assertTrue(cm.exception.matches(Perfmon.error_quark(),
                                             Perfmon.Error.INVALID_ARGUMENT))


if __name__ == '__main__':
    unittest.main()
