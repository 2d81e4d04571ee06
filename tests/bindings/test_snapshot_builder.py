#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Perfmon.SnapshotBuilder through PyGObject: a snapshot made from counters
a script has, checked like one read from JSON, and what it serializes to.

Run with Debian's /usr/bin/python3 and the environment that
tests/bindings/meson.build sets up.
"""

import json
import os
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

DURATIONS = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]


class SnapshotBuilderTest(unittest.TestCase):
    def build(self):
        builder = Perfmon.SnapshotBuilder.new()
        builder.set_times(5000000, 1767225600000000, 250)
        builder.set_process(4242, 'gedit', 1500000, 250000)
        builder.add_group(1, Perfmon.GroupKind.THREAD, 'main', 0, None,
                          1200000, 30, 5000, DURATIONS)
        builder.add_group(7, Perfmon.GroupKind.ADDON, 'Ad blocker', 12,
                          'adblock@example.org', 1500, 250, 42, DURATIONS)
        return builder.end()

    def test_build(self):
        snapshot = self.build()
        self.assertEqual(snapshot.get_timestamp(), 5000000)
        self.assertEqual(snapshot.get_wall_time(), 1767225600000000)
        self.assertEqual(snapshot.get_interval(), 250)
        self.assertEqual(snapshot.get_pid(), 4242)
        self.assertEqual(snapshot.get_process_name(), 'gedit')
        self.assertEqual(snapshot.get_user_time(), 1500000)
        self.assertEqual(snapshot.get_system_time(), 250000)
        groups = snapshot.get_groups()
        self.assertEqual([g.get_id() for g in groups], [1, 7])
        addon = snapshot.lookup(7)
        self.assertEqual(addon.get_kind(), Perfmon.GroupKind.ADDON)
        self.assertEqual(addon.get_name(), 'Ad blocker')
        self.assertEqual(addon.get_window_id(), 12)
        self.assertEqual(addon.get_addon_id(), 'adblock@example.org')
        self.assertEqual(addon.get_cpu_time(), 1500)
        self.assertEqual(addon.get_blocked_time(), 250)
        self.assertEqual(addon.get_ticks(), 42)
        self.assertEqual(list(addon.get_durations()), DURATIONS)
        self.assertIsNone(snapshot.lookup(1).get_addon_id())

    def test_serializes_like_any_snapshot(self):
        snapshot = self.build()
        document = json.loads(snapshot.to_json())
        self.assertEqual(document['groups'][1]['kind'], 'addon')
        self.assertEqual(document['groups'][0]['durations'], DURATIONS)
        back = Perfmon.Snapshot.new_from_variant(snapshot.to_variant())
        self.assertEqual(back.to_json(), snapshot.to_json())

    def test_invalid_is_an_error(self):
        builder = Perfmon.SnapshotBuilder.new()
        builder.set_process(1, 'p', 0, 0)
        builder.add_group(1, Perfmon.GroupKind.THREAD, 'main', 0, None,
                          0, 0, 1, DURATIONS)
        with self.assertRaises(GLib.Error) as raised:
            builder.end()
        self.assertTrue(raised.exception.matches(Perfmon.error_quark(),
                                                 Perfmon.Error.INVALID_DATA))
        self.assertIn('groups[0].durations', raised.exception.message)

        builder.set_process(1, 'p', 0, 0)
        builder.add_group(1, Perfmon.GroupKind.THREAD, 'main', 0, None,
                          0, 0, 10, [1, 2])
        with self.assertRaises(GLib.Error) as raised:
            builder.end()
        self.assertIn('expected an array of 10', raised.exception.message)


if __name__ == '__main__':
    unittest.main(verbosity=2)
