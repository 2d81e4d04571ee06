// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Tests of the task tracer through GJS: source events, labels, the idle
// wrapper and tracer start/stop, checked against the fixed file format
// (src/tasks/perfmon-task-format-private.h). Run with GI_TYPELIB_PATH and
// LD_LIBRARY_PATH pointing at the build (tests/bindings/meson.build does
// that). Prints one line per test and exits with status 1 if any fails.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;
imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
const {assert, runTests} = imports.testRunner;

const LABEL = 4;
const HEADER_SIZE = 80;

// The labels of the task log at @path, as [task id (BigInt), text].
function readLabels(path) {
    const [ok, bytes] = GLib.file_get_contents(path);
    assert(ok, `cannot read ${path}`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const magic = String.fromCharCode(...bytes.slice(0, 7));
    assert(magic === 'PMTASKS', `bad magic ${magic}`);
    assert(view.getUint32(8, true) === 1, 'version');
    assert(view.getUint32(12, true) === HEADER_SIZE, 'header size');
    const labels = [];
    for (let at = HEADER_SIZE; at < bytes.length;) {
        const type = view.getUint16(at, true);
        const size = view.getUint16(at + 2, true);
        assert(size >= 16 && size % 8 === 0 && at + size <= bytes.length, `bad record at ${at}`);
        if (type === LABEL) {
            const text = bytes.slice(at + 24, at + size);
            const end = text.indexOf(0);
            labels.push([view.getBigUint64(at + 16, true),
                new TextDecoder().decode(text.slice(0, end < 0 ? text.length : end))]);
        }
        at += size;
    }
    return labels;
}

const tests = {
    testIdleTaskWithLabel() {
        const dir = GLib.dir_make_tmp('perfmon-gjs-tracer-XXXXXX');
        const path = GLib.build_filenamev([dir, 'tasks.log']);
        const loop = GLib.MainLoop.new(null, false);
        let task = 0;

        Perfmon.tracer_start(path);
        const event = Perfmon.source_event_begin(Perfmon.SourceEventType.CUSTOM);
        assert(event !== 0, 'source event id');
        Perfmon.idle_add(GLib.PRIORITY_DEFAULT_IDLE, () => {
            task = Perfmon.Task.get_current();
            Perfmon.Task.add_label_literal('from gjs');
            loop.quit();
            return GLib.SOURCE_REMOVE;
        });
        Perfmon.source_event_end();
        loop.run();
        Perfmon.tracer_stop();
        assert(!Perfmon.tracer_is_active(), 'still active');

        assert(task !== 0, 'no current task in the idle');
        const labels = readLabels(path);
        assert(labels.length === 1 && labels[0][1] === 'from gjs',
            `labels: ${JSON.stringify(labels.map(l => l[1]))}`);
        assert(labels[0][0] !== 0n, 'label outside a task');
        GLib.unlink(path);
        GLib.rmdir(dir);
    },

    testStopWhenNotTracing() {
        let error = null;
        try {
            Perfmon.tracer_stop();
        } catch (e) {
            error = e;
        }
        assert(error instanceof GLib.Error, `expected a GLib.Error, got ${error}`);
        assert(error.matches(Perfmon.error_quark(), Perfmon.Error.TRACING_STATE),
            `unexpected error ${error.domain} ${error.code}: ${error.message}`);
    },
};

runTests(tests);
