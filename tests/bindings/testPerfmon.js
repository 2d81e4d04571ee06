// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Tests of the Perfmon API through GJS. Run with GI_TYPELIB_PATH and
// LD_LIBRARY_PATH pointing at the build (tests/bindings/meson.build does
// that). Prints one line per test and exits with status 1 if any fails.
//
// GJS has no thread CPU clock of its own: the tests read the thread's CPU
// time from /proc/thread-self/schedstat and check the charged CPU time to
// within 25 % of what was burned. Where that file is missing they burn wall
// time instead and check that at least half of it was charged (the thread
// may be descheduled). The charge never exceeds the wall time plus 2 ms.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;
imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
const {assert, assertEqual, runTests} = imports.testRunner;

const N_DURATIONS = 10;
const VARIANT_TYPE = '(uxxusttatauasatasauatatatatxa(ssts)at)';

function assertThrowsPerfmon(fn, code, fieldName) {
    let error = null;
    try {
        fn();
    } catch (e) {
        error = e;
    }
    assert(error !== null, `expected a Perfmon error ${code}, nothing was thrown`);
    assert(error instanceof GLib.Error, `expected a GLib.Error, got ${error}`);
    assert(error.matches(Perfmon.error_quark(), code),
        `expected Perfmon error code ${code}, got domain ${error.domain} ` +
        `code ${error.code}: ${error.message}`);
    if (fieldName !== undefined) {
        assert(error.message.includes(fieldName),
            `error message "${error.message}" does not name "${fieldName}"`);
    }
    return error;
}

// The calling thread's CPU time in µs, from the scheduler's statistics, or
// null where the kernel does not provide them.
function threadCpuUs() {
    try {
        const [ok, bytes] = GLib.file_get_contents('/proc/thread-self/schedstat');
        if (ok) {
            const ns = Number(new TextDecoder().decode(bytes).split(' ')[0]);
            if (Number.isFinite(ns))
                return ns / 1000;
        }
    } catch (e) {
    }
    return null;
}

const HAVE_CPU_CLOCK = threadCpuUs() !== null;

// Busy-loops for @ms of this thread's CPU time (of wall time where there is
// no CPU clock). Returns {wall, cpu} in µs; cpu is null without a CPU clock.
function burn(ms) {
    const start = GLib.get_monotonic_time();
    const startCpu = threadCpuUs();
    const clock = startCpu !== null ? () => threadCpuUs() - startCpu
        : () => GLib.get_monotonic_time() - start;
    let x = 0;
    while (clock() < ms * 1000) {
        for (let i = 0; i < 1000; i++)
            x += i;
    }
    return {
        wall: GLib.get_monotonic_time() - start,
        cpu: startCpu !== null ? threadCpuUs() - startCpu : null,
    };
}

function sumBurns(a, b) {
    return {
        wall: a.wall + b.wall,
        cpu: a.cpu !== null && b.cpu !== null ? a.cpu + b.cpu : null,
    };
}

// Checks the CPU time charged for @burned (what burn() returned): within
// 25 % of the thread CPU time burned if it is known, otherwise at least half
// of the wall time; never more than the wall time plus 2 ms.
function assertCpuFor(stats, burned, what) {
    const cpu = stats.get_cpu_time();
    const report = `${what}: ${cpu} µs of CPU charged for a burn of ${burned.wall} µs of wall ` +
        `time and ${burned.cpu === null ? 'unknown' : Math.round(burned.cpu)} µs of CPU time`;
    assert(cpu <= burned.wall + 2000, report);
    if (burned.cpu !== null)
        assert(cpu >= burned.cpu * 0.75 && cpu <= burned.cpu * 1.25, report);
    else
        assert(cpu >= burned.wall * 0.5, report);
}

function statsOf(snapshot, group) {
    return snapshot.lookup(group.id);
}

function gc() {
    System.gc();
    System.gc();
}

const tests = {
    testGroupKindAndErrorEnums() {
        assertEqual(Perfmon.GroupKind.THREAD, 0, 'THREAD');
        assertEqual(Perfmon.GroupKind.WINDOW, 1, 'WINDOW');
        assertEqual(Perfmon.GroupKind.ADDON, 2, 'ADDON');
        assertEqual(Perfmon.GroupKind.COMPARTMENT, 3, 'COMPARTMENT');
        assertEqual(Perfmon.Error.INVALID_DATA, 0, 'INVALID_DATA');
        assertEqual(Perfmon.Error.UNSUPPORTED_VERSION, 1, 'UNSUPPORTED_VERSION');
        assertEqual(Perfmon.Error.SNAPSHOT_MISMATCH, 2, 'SNAPSHOT_MISMATCH');
        assertEqual(Perfmon.Error.SNAPSHOT_ORDER, 3, 'SNAPSHOT_ORDER');
        assertEqual(GLib.quark_to_string(Perfmon.error_quark()), 'perfmon-error-quark', 'quark');
    },

    testMonitorProperties() {
        const monitor = Perfmon.Monitor.new(null);
        assertEqual(monitor.enabled, true, 'enabled');
        assertEqual(monitor.alert_threshold, 64, 'alert-threshold');
        assertEqual(monitor.context, null, 'context');
        let notified = 0;
        monitor.connect('notify::alert-threshold', () => notified++);
        monitor.alert_threshold = 3;
        assertEqual(monitor.get_alert_threshold(), 3, 'get_alert_threshold');
        assertEqual(notified, 1, 'notifications');
        monitor.enabled = false;
        assertEqual(monitor.get_enabled(), false, 'get_enabled');
        monitor.set_enabled(true);
        assertEqual(monitor.enabled, true, 'enabled again');

        const context = new GLib.MainContext();
        const attached = Perfmon.Monitor.new(context);
        assert(attached.context !== null, 'context of an attached monitor');

        const def = Perfmon.Monitor.get_default();
        assert(def === Perfmon.Monitor.get_default(), 'one default monitor');
        assertEqual(def.get_thread_group().name, 'main thread', 'default thread group name');
    },

    testGroups() {
        const monitor = Perfmon.Monitor.new(null);
        const thread = monitor.get_thread_group();
        assertEqual(thread.kind, Perfmon.GroupKind.THREAD, 'thread kind');
        assertEqual(thread.active, true, 'thread active');
        assertEqual(thread.window_id, 0, 'thread window-id');
        assertEqual(thread.addon_id, null, 'thread addon-id');

        const window = monitor.get_window_group(12, 'Twelve');
        assertEqual(window.kind, Perfmon.GroupKind.WINDOW, 'window kind');
        assertEqual(window.name, 'Twelve', 'window name');
        assertEqual(window.window_id, 12, 'window id');
        assertEqual(window.active, true, 'window active');
        assertEqual(monitor.get_window_group(12, null).id, window.id, 'same window group');

        const addon = monitor.get_addon_group('js@example.org', 'JS');
        assertEqual(addon.kind, Perfmon.GroupKind.ADDON, 'addon kind');
        assertEqual(addon.name, 'JS', 'addon name');
        assertEqual(addon.addon_id, 'js@example.org', 'addon id');
        assertEqual(addon.get_addon_id(), 'js@example.org', 'get_addon_id');

        const compartment = monitor.create_compartment('script', 12, 'js@example.org');
        assertEqual(compartment.kind, Perfmon.GroupKind.COMPARTMENT, 'compartment kind');
        assertEqual(compartment.name, 'script', 'compartment name');
        assertEqual(compartment.window_id, 12, 'compartment window');
        assertEqual(compartment.addon_id, 'js@example.org', 'compartment add-on');
        assertEqual(compartment.active, false, 'compartments start inactive');
        compartment.active = true;
        assertEqual(compartment.get_active(), true, 'set active');

        const ids = [thread, window, addon, compartment].map(g => g.id);
        assertEqual(new Set(ids).size, 4, 'distinct ids');
    },

    testBurnCpu() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('burner', 3, 'burn@example.org');
        const addon = monitor.get_addon_group('burn@example.org', null);
        const window = monitor.get_window_group(3, null);
        const thread = monitor.get_thread_group();

        compartment.enter();
        const burned = burn(20);
        compartment.leave();
        monitor.iteration_done();

        const snapshot = monitor.snapshot();
        for (const group of [addon, window, thread]) {
            const stats = statsOf(snapshot, group);
            assert(stats !== null, `${group.name} in the snapshot`);
            assertCpuFor(stats, burned, group.name);
            assertEqual(stats.get_ticks(), 1, `${group.name} ticks`);
            const durations = stats.get_durations();
            assertEqual(durations.length, N_DURATIONS, 'durations length');
            assert(durations.every(d => typeof d === 'number'), 'durations are numbers');
            if (HAVE_CPU_CLOCK) {
                // 20 ms ± 25 % of CPU: over 1, 2, 4, 8 and 16 ms, not over 32.
                assertEqual(durations, [1, 1, 1, 1, 1, 0, 0, 0, 0, 0], `${group.name} durations`);
            } else {
                // ≥ 10 ms and ≤ 22 ms of CPU: over 1, 2, 4 and 8 ms, not over 32.
                assertEqual(durations.slice(0, 4), [1, 1, 1, 1], `${group.name} durations`);
                assertEqual(durations.slice(5), [0, 0, 0, 0, 0], `${group.name} durations`);
            }
        }

        const inactive = statsOf(snapshot, compartment);
        assertEqual(inactive.get_cpu_time(), 0, 'inactive compartment cpu');
        assertEqual(inactive.get_ticks(), 0, 'inactive compartment ticks');
        assertEqual(inactive.get_durations(), new Array(N_DURATIONS).fill(0), 'inactive durations');
    },

    testSleepIsNotCpu() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('sleeper', 0, 'sleep@example.org');
        const addon = monitor.get_addon_group('sleep@example.org', null);
        compartment.enter();
        GLib.usleep(50000);
        compartment.leave();
        monitor.iteration_done();
        const stats = statsOf(monitor.snapshot(), addon);
        assert(stats.get_cpu_time() < 5000, `slept 50 ms, charged ${stats.get_cpu_time()} µs`);
        assertEqual(stats.get_ticks(), 1, 'ticks');
    },

    testTwoAddonsOneWindow() {
        const monitor = Perfmon.Monitor.new(null);
        const first = monitor.create_compartment('first', 5, 'first@example.org');
        const second = monitor.create_compartment('second', 5, 'second@example.org');
        const window = monitor.get_window_group(5, null);
        const addon1 = monitor.get_addon_group('first@example.org', null);
        const addon2 = monitor.get_addon_group('second@example.org', null);

        // One iteration each: each add-on is charged its own CPU time, the
        // window both.
        first.enter();
        const burned1 = burn(8);
        first.leave();
        monitor.iteration_done();
        second.enter();
        const burned2 = burn(12);
        second.leave();
        monitor.iteration_done();

        const snapshot = monitor.snapshot();
        let w = statsOf(snapshot, window);
        let a1 = statsOf(snapshot, addon1);
        let a2 = statsOf(snapshot, addon2);
        assertEqual(w.get_window_id(), 5, 'window id in stats');
        assertCpuFor(a1, burned1, 'first add-on');
        assertCpuFor(a2, burned2, 'second add-on');
        assertCpuFor(w, sumBurns(burned1, burned2), 'window');
        assert(Math.abs(w.get_cpu_time() - (a1.get_cpu_time() + a2.get_cpu_time())) <= 3,
            `window ${w.get_cpu_time()} µs != ${a1.get_cpu_time()} + ${a2.get_cpu_time()} µs`);
        assertEqual(w.get_ticks(), 2, 'window ticks');

        // Both in one iteration: the iteration's CPU time is shared out by
        // measured time; the window gets both shares, exactly, and one tick.
        first.enter();
        const burned3 = burn(4);
        first.leave();
        second.enter();
        const burned4 = burn(6);
        second.leave();
        monitor.iteration_done();

        const delta = monitor.snapshot().subtract(snapshot);
        w = statsOf(delta, window);
        a1 = statsOf(delta, addon1);
        a2 = statsOf(delta, addon2);
        assert(a1.get_cpu_time() > 0 && a2.get_cpu_time() > 0, 'both add-ons charged');
        assertCpuFor(w, sumBurns(burned3, burned4), 'window, one iteration');
        assert(Math.abs(w.get_cpu_time() - (a1.get_cpu_time() + a2.get_cpu_time())) <= 3,
            `window ${w.get_cpu_time()} µs != ${a1.get_cpu_time()} + ${a2.get_cpu_time()} µs`);
        assertEqual([w.get_ticks(), a1.get_ticks(), a2.get_ticks()], [1, 1, 1], 'ticks');
    },

    testInactiveCompartmentStaysZero() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('idle', 0, null);
        for (let i = 0; i < 3; i++) {
            compartment.enter();
            burn(3);
            compartment.leave();
            monitor.iteration_done();
        }
        const stats = statsOf(monitor.snapshot(), compartment);
        assertEqual(stats.get_cpu_time(), 0, 'cpu');
        assertEqual(stats.get_ticks(), 0, 'ticks');
        assertEqual(stats.get_durations(), new Array(N_DURATIONS).fill(0), 'durations');
    },

    testDefaultMonitorCountsMainLoop() {
        const monitor = Perfmon.Monitor.get_default();
        const thread = monitor.get_thread_group();
        const compartment = monitor.create_compartment('idle work', 21, 'loop@example.org');
        const addon = monitor.get_addon_group('loop@example.org', null);
        const before = monitor.snapshot();

        const loop = new GLib.MainLoop(null, false);
        let idles = 0;
        let burned = null;
        GLib.idle_add(GLib.PRIORITY_DEFAULT_IDLE, () => {
            idles++;
            if (idles === 3) {
                compartment.enter();
                burned = burn(12);
                compartment.leave();
            }
            // The loop ends after the sixth, not after a delay that a
            // loaded machine may spend before the sixth comes.
            if (idles === 6)
                loop.quit();
            return idles < 6;
        });
        loop.run();
        // Finishes the iteration that quit (a snapshot counts finished ones).
        GLib.MainContext.default().iteration(false);

        const delta = monitor.snapshot().subtract(before);
        assertEqual(idles, 6, 'idle dispatches');
        const t = statsOf(delta, thread);
        // One iteration per dispatch at least: what the product promises.
        assert(t.get_ticks() >= 6, `thread group ticked ${t.get_ticks()} times`);
        const a = statsOf(delta, addon);
        assertCpuFor(a, burned, 'add-on in the main loop');
        assertEqual(a.get_ticks(), 1, 'add-on ticks');
    },

    testGroupLifetime() {
        const monitor = Perfmon.Monitor.new(null);
        let compartment = monitor.create_compartment('short-lived', 77, null);
        compartment.enter();
        compartment.leave();
        monitor.iteration_done();

        const windows = monitor.snapshot().get_groups().filter(
            g => g.get_kind() === Perfmon.GroupKind.WINDOW && g.get_window_id() === 77);
        assertEqual(windows.length, 1, 'window groups while the compartment lives');
        const windowId = windows[0].get_id();

        compartment = null;
        gc();

        const later = monitor.snapshot();
        assertEqual(later.lookup(windowId), null, 'window group after the compartment went');
        assertEqual(later.get_groups().map(g => g.get_kind()), [Perfmon.GroupKind.THREAD],
            'groups left');
        assert(monitor.get_window_group(77, null).id !== windowId, 'a new window group');
    },

    testAlert() {
        const monitor = Perfmon.Monitor.new(null);
        monitor.alert_threshold = 5;
        const compartment = monitor.create_compartment('hot', 31, 'hot@example.org');
        const addon = monitor.get_addon_group('hot@example.org', null);
        const window = monitor.get_window_group(31, null);
        const thread = monitor.get_thread_group();
        const alerts = [];
        monitor.connect('alert', (m, group, durationUs) => {
            alerts.push([group.id, group.kind, durationUs]);
        });

        compartment.enter();
        burn(10);
        compartment.leave();
        const firstBefore = GLib.get_monotonic_time();
        monitor.iteration_done();
        const alerted = GLib.get_monotonic_time(); // not before the alerts were raised
        const charged = statsOf(monitor.snapshot(), addon).get_cpu_time();

        assertEqual(alerts.map(a => a[0]).sort((x, y) => x - y),
            [thread.id, window.id, addon.id].sort((x, y) => x - y), 'alerted groups');
        for (const [id, kind, us] of alerts) {
            assert(us >= 5000, `alert duration ${us} µs under the threshold`);
            if (id === addon.id) {
                assertEqual(kind, Perfmon.GroupKind.ADDON, 'add-on alert kind');
                assertEqual(us, charged, 'add-on alert duration');
            }
        }

        // Then iterations of 8 ms of CPU (over the 5 ms threshold): three
        // at once, one a second after the first alerts. The promise: each
        // group alerts at most once a second, and does when an iteration
        // over the threshold comes a second or more after its last alert.
        // The monitor reads its clock inside iteration_done(), so each
        // iteration is bracketed by the times before and after it: an
        // alert provably within a second of the last, or one missing
        // though provably due, fails; a loaded machine (which may stretch
        // the three over a second) changes only which alerts come.
        const SLACK_US = 1000;  // the monitor's cycles-to-µs conversion
        const last = new Map([thread.id, window.id, addon.id].map(id => [id, [firstBefore, alerted]]));
        const iterate = () => {
            compartment.enter();
            const burned = burn(8);
            compartment.leave();
            const seen = alerts.length;
            const before = GLib.get_monotonic_time();
            monitor.iteration_done();
            const after = GLib.get_monotonic_time();
            const fresh = new Set(alerts.slice(seen).map(a => a[0]));
            for (const [id, [lastBefore, lastAfter]] of last) {
                if (fresh.has(id)) {
                    assert(after - lastBefore >= 1000000 - SLACK_US,
                        `group ${id} alerted again within ${after - lastBefore} µs`);
                    last.set(id, [before, after]);
                } else if (burned.cpu !== null) {
                    assert(before - lastAfter < 1000000 + SLACK_US,
                        `group ${id} did not alert ${before - lastAfter} µs after its last alert`);
                }
            }
            return fresh.size;
        };
        for (let i = 0; i < 3; i++)
            iterate();
        const wait = alerted + 1050000 - GLib.get_monotonic_time();
        if (wait > 0)
            GLib.usleep(wait);
        // A second and more after the first alerts (and after any of the
        // three above, on a loaded machine, less than a second ago).
        iterate();
        assert(alerts.length >= 6, `${alerts.length} alerts: none a second later`);
    },

    testSnapshotAndSubtract() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('snap', 4, 'snap@example.org');
        const addon = monitor.get_addon_group('snap@example.org', null);
        compartment.enter();
        burn(3);
        compartment.leave();
        monitor.iteration_done();
        const older = monitor.snapshot();
        compartment.enter();
        const burned = burn(6);
        compartment.leave();
        monitor.iteration_done();
        const newer = monitor.snapshot();

        assert(newer.get_timestamp() > older.get_timestamp(), 'timestamps grow');
        assert(Math.abs(newer.get_timestamp() - GLib.get_monotonic_time()) < 1000000,
            'timestamp is monotonic time');
        assertEqual(newer.get_interval(), 0, 'interval of a live snapshot');
        assert(newer.get_pid() > 0, 'pid');
        assert(newer.get_process_name().length > 0, 'process name');
        assert(newer.get_user_time() + newer.get_system_time() > 0, 'process CPU time');
        assertEqual(newer.get_groups().length, 4, 'groups');
        assertEqual(newer.get_groups()[0].get_kind(), Perfmon.GroupKind.THREAD, 'thread first');
        assertEqual(newer.lookup(0), null, 'lookup of an unknown id');

        const delta = newer.subtract(older);
        assertEqual(delta.get_timestamp(), newer.get_timestamp(), 'delta timestamp');
        assertEqual(delta.get_interval(), newer.get_timestamp() - older.get_timestamp(),
            'delta interval');
        assertEqual(delta.get_user_time(), newer.get_user_time() - older.get_user_time(),
            'delta user time');
        for (const g of newer.get_groups()) {
            const d = delta.lookup(g.get_id());
            const o = older.lookup(g.get_id());
            assertEqual(d.get_cpu_time(), g.get_cpu_time() - o.get_cpu_time(),
                `${g.get_name()} cpu`);
            assertEqual(d.get_ticks(), g.get_ticks() - o.get_ticks(), `${g.get_name()} ticks`);
            assertEqual(d.get_durations(),
                g.get_durations().map((n, i) => n - o.get_durations()[i]),
                `${g.get_name()} durations`);
        }
        const a = statsOf(delta, addon);
        assertCpuFor(a, burned, 'add-on delta');
        assertEqual(a.get_ticks(), 1, 'add-on delta ticks');

        const orderError = assertThrowsPerfmon(() => older.subtract(newer),
            Perfmon.Error.SNAPSHOT_ORDER);
        assertEqual(orderError.code, Perfmon.Error.SNAPSHOT_ORDER, 'error code');

        const doc = JSON.parse(newer.to_json());
        doc.pid = newer.get_pid() + 1;
        const foreign = Perfmon.Snapshot.new_from_json(JSON.stringify(doc));
        assertThrowsPerfmon(() => newer.subtract(foreign), Perfmon.Error.SNAPSHOT_MISMATCH);
    },

    testJsonRoundTrip() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('json', 9, 'json@example.org');
        compartment.enter();
        burn(2);
        compartment.leave();
        monitor.iteration_done();
        const snapshot = monitor.snapshot();

        const text = snapshot.to_json();
        assertEqual(typeof text, 'string', 'to_json type');
        assertEqual(Perfmon.Snapshot.new_from_json(text).to_json(), text, 'JSON round trip');

        const doc = JSON.parse(text);
        assertEqual(Object.keys(doc), ['version', 'timestamp', 'wall_time', 'interval', 'pid',
            'process_name', 'user_time', 'system_time', 'groups'], 'JSON members');
        assertEqual(doc.wall_time, snapshot.get_wall_time(), 'wall time');
        assertEqual(doc.version, 1, 'version');
        assertEqual(doc.groups.map(g => g.kind).sort(),
            ['addon', 'compartment', 'thread', 'window'], 'kinds');

        assertThrowsPerfmon(() => Perfmon.Snapshot.new_from_json('{"version":1}'),
            Perfmon.Error.INVALID_DATA, 'timestamp');
        assertThrowsPerfmon(() => Perfmon.Snapshot.new_from_json('{"version":2}'),
            Perfmon.Error.UNSUPPORTED_VERSION, 'version');
        assertThrowsPerfmon(() => Perfmon.Snapshot.new_from_json('not json'),
            Perfmon.Error.INVALID_DATA);
        const bad = JSON.parse(text);
        bad.groups[1].durations = [1, 2, 3];
        assertThrowsPerfmon(() => Perfmon.Snapshot.new_from_json(JSON.stringify(bad)),
            Perfmon.Error.INVALID_DATA, 'groups[1].durations');
    },

    testVariantRoundTrip() {
        const monitor = Perfmon.Monitor.new(null);
        const compartment = monitor.create_compartment('variant', 10, 'variant@example.org');
        compartment.enter();
        burn(2);
        compartment.leave();
        monitor.iteration_done();
        const snapshot = monitor.snapshot();

        const variant = snapshot.to_variant();
        assert(variant instanceof GLib.Variant, 'to_variant gives a GLib.Variant');
        assertEqual(variant.get_type_string(), VARIANT_TYPE, 'variant type');
        const copy = Perfmon.Snapshot.new_from_variant(variant);
        assert(copy.to_variant().equal(variant), 'variant round trip');
        assertEqual(copy.to_json(), snapshot.to_json(), 'JSON of the variant copy');

        const rebuilt = new GLib.Variant(VARIANT_TYPE, variant.deepUnpack());
        assert(Perfmon.Snapshot.new_from_variant(rebuilt).to_variant().equal(variant),
            'variant rebuilt in JS');

        const [version, , , pid, , , , ids, , names] = variant.deepUnpack();
        assertEqual(version, 1, 'variant version');
        assertEqual(pid, snapshot.get_pid(), 'variant pid');
        assertEqual(ids.length, snapshot.get_groups().length, 'variant groups');
        assertEqual(names.length, ids.length, 'one name per group');

        assertThrowsPerfmon(() => Perfmon.Snapshot.new_from_variant(new GLib.Variant('s', 'no')),
            Perfmon.Error.INVALID_DATA);
        const values = variant.deepUnpack();
        values[0] = 9;
        assertThrowsPerfmon(
            () => Perfmon.Snapshot.new_from_variant(new GLib.Variant(VARIANT_TYPE, values)),
            Perfmon.Error.UNSUPPORTED_VERSION);
    },
    testLabelPushPop() {
        // Bindings get perfmon_label_push_interned() under this name: their
        // strings are temporaries, which the C function must not keep.
        for (let i = 0; i < 100; i++)
            Perfmon.label_push(`gjs-label-${i % 7}`, i % 2 ? null : `dynamic ${i}`);
        System.gc();
        for (let i = 0; i < 100; i++)
            Perfmon.label_pop();
        Perfmon.label_push('outer', null);
        Perfmon.label_push('inner', 'x'.repeat(500));
        Perfmon.label_pop();
        Perfmon.label_pop();
    },
};

runTests(tests);
