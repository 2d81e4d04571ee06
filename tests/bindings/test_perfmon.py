#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the Perfmon API through PyGObject, overrides included.

Run with Debian's /usr/bin/python3 (it has PyGObject) and an environment in
which GI_TYPELIB_PATH, LD_LIBRARY_PATH and PYTHONPATH point at the build and
at introspection/python; tests/bindings/meson.build sets that up. Exits
non-zero if any test fails.
"""

import gc
import json
import os
import time
import unittest

# Any GLib critical (a misused or misbehaving API) aborts the run. GLib reads
# G_DEBUG when it is loaded, so set it before importing gi.
os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

N_DURATIONS = 10
VARIANT_TYPE = '(uxxusttatauasatasauatatatatxa(ssts)at)'


def burn(seconds):
    """Uses @seconds of this thread's CPU time; returns what was used."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass
    return time.thread_time() - start


def stats_of(snapshot, group):
    """The GroupStats of @group (a Perfmon.Group) in @snapshot, or None."""
    return snapshot.lookup(group.props.id)


def stats_by_kind(snapshot, kind):
    return [g for g in snapshot.get_groups() if g.get_kind() == kind]


class PerfmonTestCase(unittest.TestCase):
    def assertWithin(self, value, expected, fraction, msg=None):
        low = expected * (1 - fraction)
        high = expected * (1 + fraction)
        self.assertTrue(low <= value <= high,
                        '%s not within ±%d %% of %s (%s … %s)%s'
                        % (value, fraction * 100, expected, low, high,
                           ': ' + msg if msg else ''))

    def assertPerfmonError(self, cm, code):
        error = cm.exception
        self.assertEqual(error.domain, 'perfmon-error-quark')
        self.assertEqual(error.code, int(code))
        self.assertTrue(error.matches(Perfmon.error_quark(), code),
                        'GLib.Error %r does not match %r' % (error, code))


class TestMonitor(PerfmonTestCase):
    def test_properties(self):
        monitor = Perfmon.Monitor.new(None)
        self.assertTrue(monitor.props.enabled)
        self.assertTrue(monitor.get_enabled())
        self.assertEqual(monitor.props.alert_threshold, 64)
        self.assertEqual(monitor.get_alert_threshold(), 64)
        self.assertIsNone(monitor.props.context)
        self.assertIsNone(monitor.get_context())

        notified = []
        monitor.connect('notify::alert-threshold',
                        lambda obj, pspec: notified.append(pspec.name))
        monitor.props.alert_threshold = 7
        self.assertEqual(monitor.get_alert_threshold(), 7)
        monitor.set_alert_threshold(9)
        self.assertEqual(monitor.props.alert_threshold, 9)
        self.assertEqual(notified, ['alert-threshold', 'alert-threshold'])

        monitor.props.enabled = False
        self.assertFalse(monitor.get_enabled())
        monitor.set_enabled(True)
        self.assertTrue(monitor.props.enabled)

    def test_context(self):
        context = GLib.MainContext.new()
        monitor = Perfmon.Monitor.new(context)
        got = monitor.props.context
        self.assertIsNotNone(got)
        self.assertEqual(hash(got), hash(context))
        self.assertEqual(hash(monitor.get_context()), hash(context))

    def test_default(self):
        monitor = Perfmon.Monitor.get_default()
        self.assertIs(monitor, Perfmon.Monitor.get_default())
        self.assertEqual(hash(monitor.props.context), hash(GLib.MainContext.default()))
        thread = monitor.get_thread_group()
        self.assertEqual(thread.props.name, 'main thread')
        self.assertEqual(thread.props.kind, Perfmon.GroupKind.THREAD)

    def test_groups(self):
        monitor = Perfmon.Monitor.new(None)

        thread = monitor.get_thread_group()
        self.assertIsInstance(thread, Perfmon.Group)
        self.assertEqual(thread.props.kind, Perfmon.GroupKind.THREAD)
        self.assertEqual(thread.get_kind(), Perfmon.GroupKind.THREAD)
        self.assertTrue(thread.props.active)
        self.assertEqual(thread.props.window_id, 0)
        self.assertIsNone(thread.props.addon_id)
        self.assertEqual(monitor.get_thread_group().props.id, thread.props.id)

        window = monitor.get_window_group(11, 'Eleven')
        self.assertEqual(window.props.kind, Perfmon.GroupKind.WINDOW)
        self.assertEqual(window.props.name, 'Eleven')
        self.assertEqual(window.get_name(), 'Eleven')
        self.assertEqual(window.props.window_id, 11)
        self.assertEqual(window.get_window_id(), 11)
        self.assertIsNone(window.props.addon_id)
        self.assertTrue(window.props.active)
        # The same window while it lives: same group, same id.
        self.assertEqual(monitor.get_window_group(11, None).props.id, window.props.id)

        addon = monitor.get_addon_group('addon@example.org', 'Example')
        self.assertEqual(addon.props.kind, Perfmon.GroupKind.ADDON)
        self.assertEqual(addon.props.name, 'Example')
        self.assertEqual(addon.props.addon_id, 'addon@example.org')
        self.assertEqual(addon.get_addon_id(), 'addon@example.org')
        self.assertEqual(addon.props.window_id, 0)
        self.assertTrue(addon.props.active)
        self.assertEqual(monitor.get_addon_group('addon@example.org', None).props.id,
                         addon.props.id)
        self.assertEqual(monitor.get_addon_group('nameless', None).props.name, 'nameless')

        compartment = monitor.create_compartment('script', 11, 'addon@example.org')
        self.assertEqual(compartment.props.kind, Perfmon.GroupKind.COMPARTMENT)
        self.assertEqual(compartment.props.name, 'script')
        self.assertEqual(compartment.props.window_id, 11)
        self.assertEqual(compartment.props.addon_id, 'addon@example.org')
        self.assertFalse(compartment.props.active)
        self.assertFalse(compartment.get_active())
        compartment.props.active = True
        self.assertTrue(compartment.get_active())
        compartment.set_active(False)
        self.assertFalse(compartment.props.active)

        plain = monitor.create_compartment('plain', 0, None)
        self.assertEqual(plain.props.window_id, 0)
        self.assertIsNone(plain.props.addon_id)

        ids = [g.props.id for g in (thread, window, addon, compartment, plain)]
        self.assertEqual(len(set(ids)), len(ids), ids)
        self.assertNotIn(0, ids)

    def test_group_kind_enum(self):
        self.assertEqual(int(Perfmon.GroupKind.THREAD), 0)
        self.assertEqual(int(Perfmon.GroupKind.WINDOW), 1)
        self.assertEqual(int(Perfmon.GroupKind.ADDON), 2)
        self.assertEqual(int(Perfmon.GroupKind.COMPARTMENT), 3)
        self.assertEqual(int(Perfmon.Error.INVALID_DATA), 0)
        self.assertEqual(int(Perfmon.Error.UNSUPPORTED_VERSION), 1)
        self.assertEqual(int(Perfmon.Error.SNAPSHOT_MISMATCH), 2)
        self.assertEqual(int(Perfmon.Error.SNAPSHOT_ORDER), 3)
        self.assertEqual(GLib.quark_to_string(Perfmon.error_quark()), 'perfmon-error-quark')


class TestAccounting(PerfmonTestCase):
    def setUp(self):
        self.monitor = Perfmon.Monitor.new(None)

    def test_burn_cpu(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('burner', 3, 'burn@example.org')
        addon = monitor.get_addon_group('burn@example.org', None)
        window = monitor.get_window_group(3, None)
        thread = monitor.get_thread_group()

        with compartment:
            used_us = burn(0.020) * 1e6
        monitor.iteration_done()

        snapshot = monitor.snapshot()
        for group in (addon, window, thread):
            stats = stats_of(snapshot, group)
            self.assertIsNotNone(stats, group.props.name)
            self.assertWithin(stats.get_cpu_time(), used_us, 0.25, group.props.name)
            self.assertEqual(stats.get_ticks(), 1, group.props.name)
            self.assertEqual(stats.get_blocked_time(), 0, group.props.name)
            self.assertEqual(list(stats.get_durations()), [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
                             '%s: %d µs' % (group.props.name, stats.get_cpu_time()))

        # The compartment is inactive: not measured on its own.
        stats = stats_of(snapshot, compartment)
        self.assertEqual(stats.get_cpu_time(), 0)
        self.assertEqual(stats.get_ticks(), 0)
        self.assertEqual(list(stats.get_durations()), [0] * N_DURATIONS)

    def test_active_compartment(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('measured', 0, None)
        compartment.props.active = True
        with compartment:
            used_us = burn(0.012) * 1e6
        monitor.iteration_done()

        stats = stats_of(monitor.snapshot(), compartment)
        self.assertWithin(stats.get_cpu_time(), used_us, 0.25)
        self.assertEqual(stats.get_ticks(), 1)
        # 12 ms exceeds 1, 2, 4 and 8 ms.
        self.assertEqual(list(stats.get_durations()), [1, 1, 1, 1, 0, 0, 0, 0, 0, 0])

    def test_inactive_compartment_stays_zero(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('idle', 0, None)
        for _ in range(3):
            with compartment:
                burn(0.003)
            monitor.iteration_done()

        snapshot = monitor.snapshot()
        stats = stats_of(snapshot, compartment)
        self.assertEqual(stats.get_cpu_time(), 0)
        self.assertEqual(stats.get_blocked_time(), 0)
        self.assertEqual(stats.get_ticks(), 0)
        self.assertEqual(list(stats.get_durations()), [0] * N_DURATIONS)
        # ... while the thread group saw the CPU.
        self.assertGreaterEqual(stats_of(snapshot, monitor.get_thread_group()).get_cpu_time(),
                                6000)

    def test_sleep_is_not_cpu(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('sleeper', 0, 'sleep@example.org')
        addon = monitor.get_addon_group('sleep@example.org', None)

        with compartment:
            time.sleep(0.050)
        monitor.iteration_done()

        stats = stats_of(monitor.snapshot(), addon)
        self.assertLess(stats.get_cpu_time(), 5000)
        self.assertEqual(stats.get_ticks(), 1)
        self.assertEqual(list(stats.get_durations())[2:], [0] * (N_DURATIONS - 2))

    def test_two_addons_one_window(self):
        monitor = self.monitor
        first = monitor.create_compartment('first', 5, 'first@example.org')
        second = monitor.create_compartment('second', 5, 'second@example.org')
        window = monitor.get_window_group(5, None)
        addon1 = monitor.get_addon_group('first@example.org', None)
        addon2 = monitor.get_addon_group('second@example.org', None)

        # One iteration each: each add-on is charged its own CPU time, the
        # window both.
        with first:
            used1 = burn(0.008) * 1e6
        monitor.iteration_done()
        with second:
            used2 = burn(0.012) * 1e6
        monitor.iteration_done()

        snapshot = monitor.snapshot()
        w = stats_of(snapshot, window)
        a1 = stats_of(snapshot, addon1)
        a2 = stats_of(snapshot, addon2)
        self.assertEqual(w.get_window_id(), 5)
        self.assertWithin(a1.get_cpu_time(), used1, 0.25, 'first add-on')
        self.assertWithin(a2.get_cpu_time(), used2, 0.25, 'second add-on')
        self.assertWithin(w.get_cpu_time(), used1 + used2, 0.25, 'window')
        self.assertLessEqual(abs(w.get_cpu_time() - (a1.get_cpu_time() + a2.get_cpu_time())), 3)
        self.assertEqual(w.get_ticks(), 2)
        self.assertEqual(a1.get_ticks(), 1)
        self.assertEqual(a2.get_ticks(), 1)

        # Both in one iteration: the iteration's CPU time is shared out by
        # measured time (so, under CPU contention, not exactly by each one's
        # CPU time); the window gets both shares, exactly, which add up to
        # what was burned.
        with first:
            used1 = burn(0.004) * 1e6
        with second:
            used2 = burn(0.006) * 1e6
        monitor.iteration_done()

        delta = monitor.snapshot().subtract(snapshot)
        w = stats_of(delta, window)
        a1 = stats_of(delta, addon1)
        a2 = stats_of(delta, addon2)
        self.assertGreater(a1.get_cpu_time(), 0)
        self.assertGreater(a2.get_cpu_time(), 0)
        self.assertWithin(w.get_cpu_time(), used1 + used2, 0.25, 'window, one iteration')
        self.assertLessEqual(abs(w.get_cpu_time() - (a1.get_cpu_time() + a2.get_cpu_time())), 3)
        # Entered twice, one iteration: one tick.
        self.assertEqual(w.get_ticks(), 1)
        self.assertEqual(a1.get_ticks(), 1)
        self.assertEqual(a2.get_ticks(), 1)

        # A second window is charged nothing.
        other = monitor.create_compartment('elsewhere', 6, None)
        stats = [g for g in monitor.snapshot().get_groups()
                 if g.get_kind() == Perfmon.GroupKind.WINDOW and g.get_window_id() == 6]
        self.assertEqual(len(stats), 1)
        self.assertEqual(stats[0].get_cpu_time(), 0)
        del other

    def test_nested_compartments_count_once(self):
        monitor = self.monitor
        outer = monitor.create_compartment('outer', 8, 'nest@example.org')
        inner = monitor.create_compartment('inner', 8, 'nest@example.org')
        addon = monitor.get_addon_group('nest@example.org', None)
        with outer:
            with inner:
                used = burn(0.010) * 1e6
        monitor.iteration_done()
        stats = stats_of(monitor.snapshot(), addon)
        self.assertWithin(stats.get_cpu_time(), used, 0.25)
        self.assertEqual(stats.get_ticks(), 1)

    def test_thread_group_ticks_every_iteration(self):
        monitor = self.monitor
        thread = monitor.get_thread_group()
        monitor.iteration_done()
        before = stats_of(monitor.snapshot(), thread).get_ticks()
        for _ in range(5):
            monitor.iteration_done()
        after = stats_of(monitor.snapshot(), thread)
        self.assertEqual(after.get_ticks() - before, 5)

        # Unmeasured CPU between compartments is the thread's too.
        monitor.iteration_done()
        start = stats_of(monitor.snapshot(), thread).get_cpu_time()
        used = burn(0.010) * 1e6
        monitor.iteration_done()
        grown = stats_of(monitor.snapshot(), thread).get_cpu_time() - start
        self.assertWithin(grown, used, 0.25)

    def test_blocked_time(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('blocking', 0, 'block@example.org')
        addon = monitor.get_addon_group('block@example.org', None)
        with compartment:
            monitor.blocked_begin()
            monitor.blocked_begin()     # calls nest
            time.sleep(0.020)
            monitor.blocked_end()
            monitor.blocked_end()
        monitor.iteration_done()
        stats = stats_of(monitor.snapshot(), addon)
        self.assertGreaterEqual(stats.get_blocked_time(), 20000)
        self.assertLess(stats.get_blocked_time(), 2000000)
        self.assertLess(stats.get_cpu_time(), 5000)

    def test_disabled_records_nothing(self):
        monitor = self.monitor
        compartment = monitor.create_compartment('off', 0, 'off@example.org')
        addon = monitor.get_addon_group('off@example.org', None)
        thread = monitor.get_thread_group()
        monitor.props.enabled = False
        with compartment:
            burn(0.005)
        monitor.iteration_done()
        monitor.iteration_done()
        snapshot = monitor.snapshot()
        for group in (addon, thread):
            stats = stats_of(snapshot, group)
            self.assertEqual(stats.get_cpu_time(), 0, group.props.name)
            self.assertEqual(stats.get_ticks(), 0, group.props.name)

        monitor.props.enabled = True
        with compartment:
            burn(0.002)
        monitor.iteration_done()
        self.assertGreater(stats_of(monitor.snapshot(), addon).get_cpu_time(), 0)


class TestContextManager(PerfmonTestCase):
    def test_override_installed(self):
        self.assertTrue(hasattr(Perfmon.Group, '__enter__'))
        self.assertTrue(hasattr(Perfmon.Group, '__exit__'))
        self.assertEqual(Perfmon.Group.__module__, 'gi.overrides.Perfmon')
        monitor = Perfmon.Monitor.new(None)
        self.assertIsInstance(monitor.create_compartment('c', 0, None), Perfmon.Group)

    def test_with_returns_group(self):
        monitor = Perfmon.Monitor.new(None)
        compartment = monitor.create_compartment('with', 0, 'with@example.org')
        with compartment as entered:
            self.assertIs(entered, compartment)
            burn(0.003)
        monitor.iteration_done()
        addon = monitor.get_addon_group('with@example.org', None)
        self.assertGreater(stats_of(monitor.snapshot(), addon).get_cpu_time(), 1500)

    def test_leaves_on_exception(self):
        monitor = Perfmon.Monitor.new(None)
        compartment = monitor.create_compartment('raises', 0, 'raise@example.org')
        addon = monitor.get_addon_group('raise@example.org', None)

        class Oops(Exception):
            pass

        with self.assertRaises(Oops):
            with compartment:
                used = burn(0.010) * 1e6
                raise Oops()

        # Had the compartment not been left, iteration_done() would cancel
        # the open measure and charge nothing; and a leave() without enter()
        # below would be a critical (fatal here).
        monitor.iteration_done()
        stats = stats_of(monitor.snapshot(), addon)
        self.assertWithin(stats.get_cpu_time(), used, 0.25)
        self.assertEqual(stats.get_ticks(), 1)

        with compartment:
            pass
        monitor.iteration_done()
        self.assertEqual(stats_of(monitor.snapshot(), addon).get_ticks(), 2)


class TestMainLoop(PerfmonTestCase):
    def test_default_monitor_counts_iterations(self):
        monitor = Perfmon.Monitor.get_default()
        thread = monitor.get_thread_group()
        compartment = monitor.create_compartment('idle work', 21, 'loop@example.org')
        addon = monitor.get_addon_group('loop@example.org', None)

        before = monitor.snapshot()
        loop = GLib.MainLoop.new(None, False)
        state = {'idles': 0, 'used': 0.0}

        def on_idle():
            state['idles'] += 1
            if state['idles'] == 3:
                with compartment:
                    state['used'] += burn(0.012)
            return state['idles'] < 6

        def on_timeout():
            loop.quit()
            return GLib.SOURCE_REMOVE

        GLib.idle_add(on_idle)
        GLib.timeout_add(100, on_timeout)
        loop.run()
        # Let the iteration that quit end: one more (non-blocking) poll.
        GLib.MainContext.default().iteration(False)

        after = monitor.snapshot()
        self.assertEqual(state['idles'], 6)
        delta = after.subtract(before)
        thread_delta = stats_of(delta, thread)
        # At least one iteration per idle dispatch and one for the timeout.
        self.assertGreaterEqual(thread_delta.get_ticks(), 7)
        self.assertGreaterEqual(thread_delta.get_cpu_time(), state['used'] * 1e6 * 0.75)

        addon_delta = stats_of(delta, addon)
        self.assertWithin(addon_delta.get_cpu_time(), state['used'] * 1e6, 0.25)
        self.assertEqual(addon_delta.get_ticks(), 1)
        # 12 ms exceeds 1, 2, 4 and 8 ms.
        self.assertEqual(list(addon_delta.get_durations()), [1, 1, 1, 1, 0, 0, 0, 0, 0, 0])

    def test_context_monitor_and_alert_source(self):
        context = GLib.MainContext.new()
        monitor = Perfmon.Monitor.new(context)
        monitor.props.alert_threshold = 5
        compartment = monitor.create_compartment('ctx', 0, 'ctx@example.org')
        addon = monitor.get_addon_group('ctx@example.org', None)
        thread = monitor.get_thread_group()
        alerts = []
        monitor.connect('alert', lambda m, group, us: alerts.append((group.props.id, us)))

        used = []

        def work(*user_data):
            with compartment:
                used.append(burn(0.010))
            return GLib.SOURCE_REMOVE

        source = GLib.idle_source_new()
        source.set_callback(work)
        source.attach(context)
        before = stats_of(monitor.snapshot(), thread).get_ticks()
        for _ in range(5):
            context.iteration(False)

        snapshot = monitor.snapshot()
        self.assertEqual(len(used), 1)
        self.assertWithin(stats_of(snapshot, addon).get_cpu_time(), used[0] * 1e6, 0.25)
        self.assertGreaterEqual(stats_of(snapshot, thread).get_ticks() - before, 3)
        ids = sorted(i for i, _ in alerts)
        self.assertEqual(ids, sorted([addon.props.id, thread.props.id]), alerts)
        for _, us in alerts:
            self.assertGreaterEqual(us, 5000)


class TestLifetime(PerfmonTestCase):
    def test_window_group_vanishes_with_its_compartment(self):
        monitor = Perfmon.Monitor.new(None)
        compartment = monitor.create_compartment('short-lived', 77, 'life@example.org')
        with compartment:
            burn(0.001)
        monitor.iteration_done()

        snapshot = monitor.snapshot()
        windows = [g for g in stats_by_kind(snapshot, Perfmon.GroupKind.WINDOW)
                   if g.get_window_id() == 77]
        addons = [g for g in stats_by_kind(snapshot, Perfmon.GroupKind.ADDON)
                  if g.get_addon_id() == 'life@example.org']
        self.assertEqual(len(windows), 1)
        self.assertEqual(len(addons), 1)
        window_id = windows[0].get_id()
        addon_id = addons[0].get_id()
        compartment_id = compartment.props.id
        self.assertIsNotNone(snapshot.lookup(compartment_id))
        compartment_stats = snapshot.lookup(compartment_id)
        self.assertEqual(compartment_stats.get_window_id(), 77)
        self.assertEqual(compartment_stats.get_addon_id(), 'life@example.org')
        self.assertEqual(compartment_stats.get_name(), 'short-lived')

        del compartment
        gc.collect()

        later = monitor.snapshot()
        self.assertIsNone(later.lookup(window_id))
        self.assertIsNone(later.lookup(addon_id))
        self.assertIsNone(later.lookup(compartment_id))
        self.assertEqual([g for g in later.get_groups() if g.get_window_id() == 77], [])
        # Only the thread group is left.
        self.assertEqual([g.get_kind() for g in later.get_groups()],
                         [Perfmon.GroupKind.THREAD])
        # The old snapshot is immutable.
        self.assertIsNotNone(snapshot.lookup(window_id))

        # A new lookup makes a new group with a new id.
        again = monitor.get_window_group(77, None)
        self.assertNotEqual(again.props.id, window_id)

    def test_held_window_group_outlives_compartment(self):
        monitor = Perfmon.Monitor.new(None)
        window = monitor.get_window_group(78, 'kept')
        window_id = window.props.id
        compartment = monitor.create_compartment('gone', 78, None)
        with compartment:
            burn(0.002)
        monitor.iteration_done()
        del compartment
        gc.collect()

        snapshot = monitor.snapshot()
        stats = snapshot.lookup(window_id)
        self.assertIsNotNone(stats)
        self.assertEqual(stats.get_name(), 'kept')
        self.assertGreater(stats.get_cpu_time(), 0)
        self.assertEqual(monitor.get_window_group(78, None).props.id, window_id)

        del window
        gc.collect()
        self.assertIsNone(monitor.snapshot().lookup(window_id))


class TestAlerts(PerfmonTestCase):
    def test_alert_once_per_group_per_second(self):
        monitor = Perfmon.Monitor.new(None)
        monitor.props.alert_threshold = 5
        compartment = monitor.create_compartment('hot', 31, 'hot@example.org')
        addon = monitor.get_addon_group('hot@example.org', None)
        window = monitor.get_window_group(31, None)
        thread = monitor.get_thread_group()
        alerts = []

        def on_alert(m, group, duration_us):
            self.assertIs(m, monitor)
            self.assertIsInstance(group, Perfmon.Group)
            alerts.append((group.props.id, group.props.kind, duration_us))

        monitor.connect('alert', on_alert)

        with compartment:
            burn(0.010)
        first_before = time.monotonic()
        monitor.iteration_done()
        alerted = time.monotonic()      # not before the alerts were raised
        first = stats_of(monitor.snapshot(), addon).get_cpu_time()

        self.assertEqual(sorted(a[0] for a in alerts),
                         sorted([thread.props.id, window.props.id, addon.props.id]), alerts)
        kinds = {a[0]: a[1] for a in alerts}
        self.assertEqual(kinds[addon.props.id], Perfmon.GroupKind.ADDON)
        self.assertEqual(kinds[window.props.id], Perfmon.GroupKind.WINDOW)
        self.assertEqual(kinds[thread.props.id], Perfmon.GroupKind.THREAD)
        durations = {a[0]: a[2] for a in alerts}
        self.assertEqual(durations[addon.props.id], first)
        for _, _, us in alerts:
            self.assertGreaterEqual(us, 5000)

        # Then iterations of 8 ms of CPU (over the 5 ms threshold): three
        # at once, one a second after the first alerts. The promise: each
        # group alerts at most once a second, and does when an iteration
        # over the threshold comes a second or more after its last alert.
        # The monitor reads its clock inside iteration_done(), so each
        # iteration is bracketed by the times before and after it: an
        # alert provably within a second of the last, or one missing though
        # provably due, fails; a loaded machine (which may stretch the three
        # over a second) changes only which alerts come.
        slack = 0.001   # the monitor's cycles-to-µs conversion
        last = {gid: (first_before, alerted) for gid in (thread.props.id, window.props.id, addon.props.id)}

        def iterate():
            with compartment:
                burn(0.008)
            seen = len(alerts)
            before = time.monotonic()
            monitor.iteration_done()
            after = time.monotonic()
            fresh = {a[0] for a in alerts[seen:]}
            for gid, (last_before, last_after) in list(last.items()):
                if gid in fresh:
                    self.assertGreaterEqual(after - last_before, 1.0 - slack,
                                            'group %d alerted again within a second' % gid)
                    last[gid] = (before, after)
                else:
                    self.assertLess(before - last_after, 1.0 + slack,
                                    'group %d did not alert a second after its last alert' % gid)

        for _ in range(3):
            iterate()
        time.sleep(max(0.0, alerted + 1.05 - time.monotonic()))
        # A second and more after the first alerts (and after any of the
        # three above, on a loaded machine, less than a second ago).
        iterate()
        self.assertGreaterEqual(len(alerts), 6, alerts)

    def test_below_threshold_and_off(self):
        monitor = Perfmon.Monitor.new(None)
        alerts = []
        monitor.connect('alert', lambda m, g, us: alerts.append(us))
        compartment = monitor.create_compartment('warm', 0, 'warm@example.org')
        # Default threshold: 64 ms.
        with compartment:
            burn(0.010)
        monitor.iteration_done()
        self.assertEqual(alerts, [])

        monitor.props.alert_threshold = 0
        with compartment:
            burn(0.010)
        monitor.iteration_done()
        self.assertEqual(alerts, [])


class TestSnapshot(PerfmonTestCase):
    def make_snapshots(self):
        monitor = Perfmon.Monitor.new(None)
        compartment = monitor.create_compartment('snap', 4, 'snap@example.org')
        with compartment:
            burn(0.003)
        monitor.iteration_done()
        older = monitor.snapshot()
        with compartment:
            used = burn(0.006)
        monitor.iteration_done()
        newer = monitor.snapshot()
        return monitor, compartment, older, newer, used

    def test_accessors(self):
        now = GLib.get_monotonic_time()
        monitor, compartment, older, newer, _ = self.make_snapshots()
        self.assertGreaterEqual(older.get_timestamp(), now)
        self.assertLessEqual(newer.get_timestamp(), GLib.get_monotonic_time())
        self.assertGreater(newer.get_timestamp(), older.get_timestamp())
        self.assertEqual(newer.get_interval(), 0)
        self.assertEqual(newer.get_pid(), os.getpid())
        self.assertIsInstance(newer.get_process_name(), str)
        self.assertNotEqual(newer.get_process_name(), '')
        self.assertGreater(newer.get_user_time() + newer.get_system_time(), 0)
        self.assertGreaterEqual(newer.get_user_time(), older.get_user_time())

        groups = newer.get_groups()
        self.assertEqual(len(groups), 4)
        self.assertEqual(groups[0].get_kind(), Perfmon.GroupKind.THREAD)
        self.assertEqual(sorted(int(g.get_kind()) for g in groups), [0, 1, 2, 3])
        for g in groups:
            self.assertIsInstance(g, Perfmon.GroupStats)
            durations = g.get_durations()
            self.assertEqual(len(durations), N_DURATIONS)
            self.assertTrue(all(isinstance(d, int) for d in durations))
            self.assertEqual(newer.lookup(g.get_id()).get_name(), g.get_name())
        self.assertIsNone(newer.lookup(0))
        self.assertIsNone(newer.lookup(2 ** 64 - 1))

        window = stats_by_kind(newer, Perfmon.GroupKind.WINDOW)[0]
        self.assertEqual(window.get_window_id(), 4)
        self.assertIsNone(window.get_addon_id())
        self.assertEqual(window.get_name(), 'window 4')
        addon = stats_by_kind(newer, Perfmon.GroupKind.ADDON)[0]
        self.assertEqual(addon.get_addon_id(), 'snap@example.org')
        self.assertEqual(addon.get_window_id(), 0)
        self.assertEqual(addon.get_ticks(), 2)

    def test_subtract(self):
        monitor, compartment, older, newer, used = self.make_snapshots()
        delta = newer.subtract(older)
        self.assertEqual(delta.get_timestamp(), newer.get_timestamp())
        self.assertEqual(delta.get_interval(), newer.get_timestamp() - older.get_timestamp())
        self.assertGreater(delta.get_interval(), 0)
        self.assertEqual(delta.get_pid(), newer.get_pid())
        self.assertEqual(delta.get_user_time(), newer.get_user_time() - older.get_user_time())
        self.assertEqual(delta.get_system_time(),
                         newer.get_system_time() - older.get_system_time())
        self.assertEqual(len(delta.get_groups()), len(newer.get_groups()))
        for g in newer.get_groups():
            d = delta.lookup(g.get_id())
            o = older.lookup(g.get_id())
            self.assertEqual(d.get_kind(), g.get_kind())
            self.assertEqual(d.get_name(), g.get_name())
            self.assertEqual(d.get_cpu_time(), g.get_cpu_time() - o.get_cpu_time())
            self.assertEqual(d.get_ticks(), g.get_ticks() - o.get_ticks())
            self.assertEqual(d.get_blocked_time(), g.get_blocked_time() - o.get_blocked_time())
            self.assertEqual(list(d.get_durations()),
                             [a - b for a, b in zip(g.get_durations(), o.get_durations())])

        addon = stats_by_kind(delta, Perfmon.GroupKind.ADDON)[0]
        self.assertEqual(addon.get_ticks(), 1)
        self.assertWithin(addon.get_cpu_time(), used * 1e6, 0.25)
        # 6 ms exceeds 1, 2 and 4 ms.
        self.assertEqual(list(addon.get_durations()), [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])

        # A difference with itself is all zeros.
        zero = newer.subtract(newer)
        self.assertEqual(zero.get_interval(), 0)
        for g in zero.get_groups():
            self.assertEqual(g.get_cpu_time(), 0)
            self.assertEqual(g.get_ticks(), 0)
            self.assertEqual(list(g.get_durations()), [0] * N_DURATIONS)

        # Groups born after the older snapshot count from zero; those gone
        # from the newer one are left out.
        late = monitor.create_compartment('late', 0, 'late@example.org')
        with late:
            burn(0.002)
        monitor.iteration_done()
        del compartment
        gc.collect()
        latest = monitor.snapshot()
        d = latest.subtract(older)
        late_addon = [g for g in d.get_groups() if g.get_addon_id() == 'late@example.org'
                      and g.get_kind() == Perfmon.GroupKind.ADDON][0]
        self.assertEqual(late_addon.get_cpu_time(),
                         latest.lookup(late_addon.get_id()).get_cpu_time())
        self.assertEqual([g for g in d.get_groups() if g.get_window_id() == 4], [])
        self.assertEqual(len(d.get_groups()), len(latest.get_groups()))

    def test_subtract_errors(self):
        monitor, compartment, older, newer, _ = self.make_snapshots()

        with self.assertRaises(GLib.Error) as cm:
            older.subtract(newer)
        self.assertPerfmonError(cm, Perfmon.Error.SNAPSHOT_ORDER)

        doc = json.loads(newer.to_json())
        doc['pid'] = newer.get_pid() + 1
        foreign = Perfmon.Snapshot.new_from_json(json.dumps(doc))
        self.assertEqual(foreign.get_pid(), newer.get_pid() + 1)
        with self.assertRaises(GLib.Error) as cm:
            newer.subtract(foreign)
        self.assertPerfmonError(cm, Perfmon.Error.SNAPSHOT_MISMATCH)
        with self.assertRaises(GLib.Error) as cm:
            foreign.subtract(older)
        self.assertPerfmonError(cm, Perfmon.Error.SNAPSHOT_MISMATCH)

        # Same process and time order, but a counter went backwards.
        doc = json.loads(older.to_json())
        doc['timestamp'] = newer.get_timestamp() - 1
        doc['groups'][0]['ticks'] = newer.get_groups()[0].get_ticks() + 100
        bigger = Perfmon.Snapshot.new_from_json(json.dumps(doc))
        with self.assertRaises(GLib.Error) as cm:
            newer.subtract(bigger)
        self.assertPerfmonError(cm, Perfmon.Error.SNAPSHOT_ORDER)
        self.assertIn('ticks', cm.exception.message)

    def test_json_round_trip(self):
        monitor, compartment, older, newer, _ = self.make_snapshots()
        for snapshot in (older, newer, newer.subtract(older)):
            text = snapshot.to_json()
            self.assertIsInstance(text, str)
            copy = Perfmon.Snapshot.new_from_json(text)
            self.assertEqual(copy.to_json(), text)
            self.assertEqual(copy.get_timestamp(), snapshot.get_timestamp())
            self.assertEqual(copy.get_interval(), snapshot.get_interval())
            self.assertEqual(copy.get_pid(), snapshot.get_pid())
            self.assertEqual(copy.get_process_name(), snapshot.get_process_name())
            self.assertEqual(copy.get_user_time(), snapshot.get_user_time())
            self.assertEqual(copy.get_system_time(), snapshot.get_system_time())
            self.assertEqual(len(copy.get_groups()), len(snapshot.get_groups()))
            for a, b in zip(copy.get_groups(), snapshot.get_groups()):
                self.assertEqual(
                    (a.get_id(), a.get_kind(), a.get_name(), a.get_window_id(),
                     a.get_addon_id(), a.get_cpu_time(), a.get_blocked_time(),
                     a.get_ticks(), list(a.get_durations())),
                    (b.get_id(), b.get_kind(), b.get_name(), b.get_window_id(),
                     b.get_addon_id(), b.get_cpu_time(), b.get_blocked_time(),
                     b.get_ticks(), list(b.get_durations())))

        doc = json.loads(newer.to_json())
        self.assertEqual(list(doc), ['version', 'timestamp', 'wall_time', 'interval', 'pid',
                                     'process_name', 'user_time', 'system_time', 'groups'])
        self.assertEqual(doc['wall_time'], newer.get_wall_time())
        self.assertEqual(doc['version'], 1)
        self.assertEqual(doc['pid'], os.getpid())
        self.assertEqual(sorted(g['kind'] for g in doc['groups']),
                         ['addon', 'compartment', 'thread', 'window'])
        for g in doc['groups']:
            self.assertEqual(len(g['durations']), N_DURATIONS)
        addon = [g for g in doc['groups'] if g['kind'] == 'addon'][0]
        self.assertEqual(addon['addon_id'], 'snap@example.org')
        window = [g for g in doc['groups'] if g['kind'] == 'window'][0]
        self.assertIsNone(window['addon_id'])

        # Unsigned values above the signed 64-bit range survive as strings.
        doc['groups'][0]['cpu_time'] = str(2 ** 64 - 1)
        big = Perfmon.Snapshot.new_from_json(json.dumps(doc))
        self.assertEqual(big.get_groups()[0].get_cpu_time(), 2 ** 64 - 1)
        self.assertEqual(Perfmon.Snapshot.new_from_json(big.to_json()).to_json(), big.to_json())

    def test_json_errors(self):
        cases = [
            ('{"version":1}', Perfmon.Error.INVALID_DATA, 'timestamp'),
            ('{"version":2}', Perfmon.Error.UNSUPPORTED_VERSION, 'version'),
            ('{}', Perfmon.Error.INVALID_DATA, 'version'),
            ('[]', Perfmon.Error.INVALID_DATA, None),
            ('{"version":1', Perfmon.Error.INVALID_DATA, None),
        ]
        _, _, _, newer, _ = self.make_snapshots()
        good = json.loads(newer.to_json())

        doc = json.loads(json.dumps(good))
        doc['pid'] = 0
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'pid'))
        doc = json.loads(json.dumps(good))
        doc['timestamp'] = 'soon'
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'timestamp'))
        doc = json.loads(json.dumps(good))
        doc['groups'][1]['durations'] = [0] * 9
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'groups[1].durations'))
        doc = json.loads(json.dumps(good))
        doc['groups'][1]['durations'] = [0, 5, 0, 0, 0, 0, 0, 0, 0, 0]
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'groups[1].durations'))
        doc = json.loads(json.dumps(good))
        doc['groups'][2]['kind'] = 'planet'
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'groups[2].kind'))
        doc = json.loads(json.dumps(good))
        del doc['groups'][0]['ticks']
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'groups[0].ticks'))
        doc = json.loads(json.dumps(good))
        doc['groups'][1]['id'] = doc['groups'][0]['id']
        cases.append((json.dumps(doc), Perfmon.Error.INVALID_DATA, 'groups[1].id'))

        for text, code, field in cases:
            with self.subTest(json=text[:60]):
                with self.assertRaises(GLib.Error) as cm:
                    Perfmon.Snapshot.new_from_json(text)
                self.assertPerfmonError(cm, code)
                if field is not None:
                    self.assertIn(field, cm.exception.message)

        # Unknown members are ignored.
        doc = json.loads(json.dumps(good))
        doc['future'] = {'x': [1, 2]}
        doc['groups'][0]['future'] = True
        self.assertEqual(Perfmon.Snapshot.new_from_json(json.dumps(doc)).to_json(),
                         newer.to_json())

    def test_variant_round_trip(self):
        _, _, older, newer, _ = self.make_snapshots()
        for snapshot in (older, newer, newer.subtract(older)):
            variant = snapshot.to_variant()
            self.assertIsInstance(variant, GLib.Variant)
            self.assertEqual(variant.get_type_string(), VARIANT_TYPE)
            self.assertFalse(variant.is_floating())
            copy = Perfmon.Snapshot.new_from_variant(variant)
            self.assertTrue(copy.to_variant().equal(variant))
            self.assertEqual(copy.to_json(), snapshot.to_json())

            # Built from Python values, from bytes: the same.
            rebuilt = GLib.Variant(VARIANT_TYPE, variant.unpack())
            self.assertTrue(Perfmon.Snapshot.new_from_variant(rebuilt).to_variant().equal(variant))
            from_bytes = GLib.Variant.new_from_bytes(GLib.VariantType.new(VARIANT_TYPE),
                                                     variant.get_data_as_bytes(), False)
            self.assertTrue(Perfmon.Snapshot.new_from_variant(from_bytes).to_variant()
                            .equal(variant))

        (version, timestamp, interval, pid, name, utime, stime, ids, kinds, names, window_ids,
         addon_ids, addon_indexes, cpu_times, blocked_times, ticks, durations, wall_time, modules,
         sampled_cpu_times) = newer.to_variant().unpack()
        self.assertEqual(wall_time, newer.get_wall_time())
        # A monitor's own snapshot: modules are recorded by who exports it.
        self.assertEqual(modules, [])
        self.assertEqual(len(sampled_cpu_times), len(ids))
        self.assertEqual(version, 1)
        self.assertEqual(timestamp, newer.get_timestamp())
        self.assertEqual(pid, os.getpid())
        self.assertEqual(name, newer.get_process_name())
        groups = newer.get_groups()
        self.assertEqual(len(ids), len(groups))
        self.assertEqual(len(durations), 10 * len(groups))
        for i, g in enumerate(groups):
            self.assertEqual(ids[i], g.get_id())
            self.assertEqual(kinds[i], int(g.get_kind()))
            self.assertEqual(names[i], g.get_name())
            self.assertEqual(window_ids[i], g.get_window_id())
            addon_id = addon_ids[addon_indexes[i] - 1] if addon_indexes[i] else None
            self.assertEqual(addon_id, g.get_addon_id())
            self.assertEqual(cpu_times[i], g.get_cpu_time())
            self.assertEqual(blocked_times[i], g.get_blocked_time())
            self.assertEqual(ticks[i], g.get_ticks())
            self.assertEqual(list(durations[10 * i:10 * i + 10]), list(g.get_durations()))

    def test_variant_errors(self):
        _, _, _, newer, _ = self.make_snapshots()
        values = list(newer.to_variant().unpack())

        with self.assertRaises(GLib.Error) as cm:
            Perfmon.Snapshot.new_from_variant(GLib.Variant('s', 'nope'))
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_DATA)

        bad = list(values)
        bad[0] = 7
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.Snapshot.new_from_variant(GLib.Variant(VARIANT_TYPE, tuple(bad)))
        self.assertPerfmonError(cm, Perfmon.Error.UNSUPPORTED_VERSION)

        bad = list(values)
        bad[3] = 0
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.Snapshot.new_from_variant(GLib.Variant(VARIANT_TYPE, tuple(bad)))
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_DATA)
        self.assertIn('pid', cm.exception.message)

        bad = list(values)
        durations = list(bad[16])
        durations[10 + 1] = durations[10] + 1
        bad[16] = durations
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.Snapshot.new_from_variant(GLib.Variant(VARIANT_TYPE, tuple(bad)))
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_DATA)
        self.assertIn('groups[1].durations', cm.exception.message)

        bad = list(values)
        bad[8] = bad[8][:-1]
        with self.assertRaises(GLib.Error) as cm:
            Perfmon.Snapshot.new_from_variant(GLib.Variant(VARIANT_TYPE, tuple(bad)))
        self.assertPerfmonError(cm, Perfmon.Error.INVALID_DATA)
        self.assertIn('kinds', cm.exception.message)


class TestLabels(PerfmonTestCase):
    def test_push_pop_balanced(self):
        # Bindings get perfmon_label_push_interned() under this name: their
        # strings are temporaries, which the C function must not keep.
        self.assertEqual(Perfmon.label_push.get_symbol(),
                         'perfmon_label_push_interned')
        for i in range(100):
            Perfmon.label_push('python-label-%d' % (i % 7),
                               None if i % 2 else 'dynamic %d' % i)
        gc.collect()
        for _ in range(100):
            Perfmon.label_pop()
        Perfmon.label_push('outer', None)
        Perfmon.label_push('inner', 'x' * 500)   # truncated, not rejected
        Perfmon.label_pop()
        Perfmon.label_pop()



class TestMisuseRaises(PerfmonTestCase):
    """Calls that are programming errors raise GLib.Error (PERFMON_ERROR,
    INVALID_ARGUMENT) in a binding, naming the call and what it allows,
    instead of a g_critical that Python cannot catch."""

    def setUp(self):
        self.monitor = Perfmon.Monitor.new(None)

    def assertRaisesInvalid(self, call, *needles):
        with self.assertRaises(GLib.Error) as caught:
            call()
        self.assertEqual(caught.exception.domain, GLib.quark_to_string(Perfmon.error_quark()))
        self.assertEqual(caught.exception.code, Perfmon.Error.INVALID_ARGUMENT)
        for needle in needles:
            self.assertIn(needle, caught.exception.message)

    def test_label_pop_empty(self):
        self.assertRaisesInvalid(Perfmon.label_pop, 'label_pop', 'empty')
        Perfmon.label_push('one', None)
        Perfmon.label_pop()
        self.assertRaisesInvalid(Perfmon.label_pop, 'label_pop')

    def test_blocked_end_unmatched(self):
        monitor = self.monitor
        self.assertRaisesInvalid(monitor.blocked_end, 'blocked_end', 'blocked_begin')
        monitor.blocked_begin()
        monitor.blocked_end()
        self.assertRaisesInvalid(monitor.blocked_end, 'blocked_end')

    def test_alert_threshold_range(self):
        monitor = self.monitor
        self.assertRaisesInvalid(lambda: monitor.set_alert_threshold(2 ** 63), 'threshold_ms',
                                 '18446744073709')
        monitor.set_alert_threshold(18446744073709)
        self.assertEqual(monitor.get_alert_threshold(), 18446744073709)
        monitor.set_alert_threshold(0)

    def test_max_automatic_groups_range(self):
        monitor = self.monitor
        self.assertRaisesInvalid(lambda: monitor.set_max_automatic_groups(2 ** 32 - 1), 'max_groups',
                                 '[1, 65536]')
        self.assertRaisesInvalid(lambda: monitor.set_max_automatic_groups(0), 'max_groups')
        monitor.set_max_automatic_groups(65536)
        self.assertEqual(monitor.get_max_automatic_groups(), 65536)

if __name__ == '__main__':
    unittest.main(verbosity=2)
