// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Tests of Perfmon.HangMonitor and Perfmon.HangReport through GJS. Run with
// GI_TYPELIB_PATH and LD_LIBRARY_PATH pointing at the build
// (tests/bindings/meson.build does that). Prints one line per test and exits
// with status 1 if any fails.

imports.gi.versions.Gio = '2.0';
imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {Gio, GLib, Perfmon} = imports.gi;
const System = imports.system;
imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
const {assert, assertEqual, runTests} = imports.testRunner;

const THRESHOLD_MS = 100;
const HANG_MS = 300;
// The report's duration comes from the thread's own timestamps, which may
// start a little after the callback's clock.
const MIN_DURATION_MS = 295;
const SAFETY_TIMEOUT_S = 10;

// The labels of a pseudo stack, without its JavaScript frames
// ("function (file:line)", see testJsStack.js).
function labelsOnly(pseudoStack) {
    return pseudoStack.filter(f => !/ \(.*\.js:\d+\)$/.test(f));
}

// Busy-waits @ms of wall time on this thread.
function spin(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    while (GLib.get_monotonic_time() < end)
        ;
}

function removeTree(file) {
    if (file.query_file_type(Gio.FileQueryInfoFlags.NOFOLLOW_SYMLINKS, null) ===
            Gio.FileType.DIRECTORY) {
        const children = file.enumerate_children('standard::name',
            Gio.FileQueryInfoFlags.NOFOLLOW_SYMLINKS, null);
        let info;
        while ((info = children.next_file(null)) !== null)
            removeTree(children.get_child(info));
        children.close(null);
    }
    file.delete(null);
}

// Runs @fn with a hang monitor watching a fresh context, thread-default
// meanwhile; stops it and cleans up however @fn ends.
function withHangMonitor(fn) {
    const dir = GLib.dir_make_tmp('perfmon-gjs-hang-XXXXXX');
    const context = GLib.MainContext.new();
    context.push_thread_default();
    const monitor = Perfmon.Monitor.new(context);
    const hangMonitor = Perfmon.HangMonitor.new(monitor);
    try {
        hangMonitor.pings_dir = GLib.build_filenamev([dir, 'pings']);
        hangMonitor.log_dir = dir;
        hangMonitor.threshold = THRESHOLD_MS;
        fn({context, monitor, hangMonitor, loop: GLib.MainLoop.new(context, false)});
    } finally {
        hangMonitor.stop();
        context.pop_thread_default();
        removeTree(Gio.File.new_for_path(dir));
    }
}

const tests = {
    testHangReport() {
        withHangMonitor(({context, hangMonitor, loop}) => {
            const reports = [];
            const pings = [];
            hangMonitor.connect('hang', (m, report) => {
                reports.push(report);
                loop.quit();
            });
            hangMonitor.connect('ping', (m, path) => pings.push(path));
            assert(hangMonitor.start(), 'start() returned false');
            assert(hangMonitor.is_running(), 'running after start()');

            const source = GLib.timeout_source_new(50);
            source.set_name('gjs-hang');
            source.set_callback(() => {
                Perfmon.label_push('gjs label', 'dyn');
                try {
                    spin(HANG_MS);
                } finally {
                    Perfmon.label_pop();
                }
                return GLib.SOURCE_REMOVE;
            });
            source.attach(context);

            let timedOut = false;
            const safety = GLib.timeout_source_new_seconds(SAFETY_TIMEOUT_S);
            safety.set_callback(() => {
                timedOut = true;
                loop.quit();
                return GLib.SOURCE_REMOVE;
            });
            safety.attach(context);
            while (reports.length === 0 && !timedOut)
                loop.run();
            safety.destroy();
            assert(!timedOut, `no hang signal within ${SAFETY_TIMEOUT_S} s`);

            assertEqual(reports.length, 1, 'hangs reported');
            const report = reports[0];
            assert(report instanceof Perfmon.HangReport, `a HangReport, got ${report}`);
            assert(report.get_duration() >= MIN_DURATION_MS,
                `duration ${report.get_duration()} ms`);
            assertEqual(report.get_runnable_name(), 'gjs-hang', 'runnable name');
            assertEqual(labelsOnly(report.get_pseudo_stack()), ['gjs label dyn'], 'pseudo stack');
            assertEqual(report.get_process_type(), 'default', 'process type');
            assertEqual(report.get_remote_type(), null, 'remote type');
            const doc = JSON.parse(report.to_json());
            assertEqual(doc.runnableName, 'gjs-hang', 'runnableName in JSON');
            assertEqual(labelsOnly(doc.pseudoStack), ['gjs label dyn'], 'pseudoStack in JSON');

            const path = hangMonitor.flush_ping();
            assertEqual(typeof path, 'string', 'flush_ping() type');
            assert(GLib.file_test(path, GLib.FileTest.IS_REGULAR), `no ping file ${path}`);
            assertEqual(pings, [path], 'ping signals');
            const [, bytes] = GLib.file_get_contents(path);
            const ping = JSON.parse(new TextDecoder().decode(bytes));
            assertEqual(ping.type, 'bhr', 'ping type');
            assertEqual(ping.payload.hangs.map(h => h.runnableName), ['gjs-hang'], 'ping hangs');
            assertEqual(hangMonitor.flush_ping(), null, 'flush_ping() with nothing to send');

            hangMonitor.stop();
            assert(!hangMonitor.is_running(), 'running after stop()');
        });
    },

    testWorkUnitsWithoutContext() {
        // A monitor without a context is watched through its work units.
        withHangMonitor(({context, hangMonitor: unused, loop}) => {
            const monitor = Perfmon.Monitor.new(null);
            const detached = Perfmon.HangMonitor.new(monitor);
            const dir = GLib.dir_make_tmp('perfmon-gjs-units-XXXXXX');
            const reports = [];
            try {
                detached.pings_dir = GLib.build_filenamev([dir, 'pings']);
                detached.log_dir = dir;
                detached.threshold = THRESHOLD_MS;
                detached.connect('hang', (m, report) => {
                    reports.push(report);
                    loop.quit();
                });
                assert(detached.start(), 'start() on a monitor without a context');
                assert(detached.is_running(), 'not running after start()');
                monitor.work_begin();
                spin(HANG_MS);
                monitor.work_end();
                const safety = GLib.timeout_source_new_seconds(SAFETY_TIMEOUT_S);
                safety.set_callback(() => {
                    loop.quit();
                    return GLib.SOURCE_REMOVE;
                });
                safety.attach(context);
                loop.run();
                safety.destroy();
                assertEqual(reports.length, 1, 'hang reports of a long work unit');
            } finally {
                detached.stop();
                removeTree(Gio.File.new_for_path(dir));
            }
        });
    },

    testEventConfigError() {
        withHangMonitor(({hangMonitor}) => {
            let error = null;
            try {
                hangMonitor.set_event_config('MAIN_THREAD_JANK',
                    {log_type: '1', sample_interval: '40'});
            } catch (e) {
                error = e;
            }
            assert(error instanceof GLib.Error, `expected a GLib.Error, got ${error}`);
            assert(error.matches(Perfmon.error_quark(), Perfmon.Error.INVALID_ARGUMENT),
                `unexpected error ${error.domain} ${error.code}: ${error.message}`);
            assert(error.message.includes('sample_interval'),
                `error message "${error.message}" does not name sample_interval`);
            assert(hangMonitor.set_event_config('MAIN_THREAD_JANK', {log_type: '0'}),
                'log_type 0 not applied');
        });
    },
};

runTests(tests);
