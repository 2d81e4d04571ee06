// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The JavaScript frames of a hung GJS program, in its hang reports: a hang
// in JavaScript code names the functions, "function (file:line)", in the
// stack and the pseudo stack, of the report, its JSON and the ping; a hang
// in native code called from JavaScript is reported without them, says
// why, keeps its native stack and does not stall the program. Exits 1 if
// a test fails.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;
imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
const {assert, runTests} = imports.testRunner;

const SAFETY_TIMEOUT_S = 20;

function hangInJs() {
    const end = GLib.get_monotonic_time() + 400000;
    while (GLib.get_monotonic_time() < end)
        ;
}

function hangInNativeCode() {
    // g_usleep() sleeps on through the capture's signal.
    GLib.usleep(400000);
}

const dir = GLib.dir_make_tmp('perfmon-gjs-stack-XXXXXX');
const hangMonitor = Perfmon.HangMonitor.new(Perfmon.Monitor.get_default());
hangMonitor.threshold = 100;
hangMonitor.pings_dir = `${dir}/pings`;
hangMonitor.log_dir = dir;
assert(hangMonitor.start(), 'start');

function hang(fn) {
    const loop = new GLib.MainLoop(null, false);
    let report = null;
    const handler = hangMonitor.connect('hang', (m, r) => {
        report = r;
        loop.quit();
    });
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, function onTimeout() {
        fn();
        return GLib.SOURCE_REMOVE;
    });
    const safety = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, SAFETY_TIMEOUT_S, () => {
        loop.quit();
        return GLib.SOURCE_REMOVE;
    });
    loop.run();
    hangMonitor.disconnect(handler);
    assert(report !== null, 'no hang report');
    GLib.source_remove(safety);
    return report;
}

function frameIndex(frames, fn) {
    const pattern = new RegExp(`^${fn} \\((.*):(\\d+)\\)$`);
    return frames.findIndex(f => {
        const m = pattern.exec(f);
        return m && m[1].endsWith('testJsStack.js') && Number(m[2]) > 0;
    });
}

function assertJsFrames(frames, where) {
    const inner = frameIndex(frames, 'hangInJs');
    const outer = frameIndex(frames, 'onTimeout');
    assert(inner >= 0 && outer >= 0 && outer < inner,
        `${where}: no "onTimeout (file:line)" then "hangInJs (file:line)" in ${JSON.stringify(frames)}`);
}

const tests = {
    testJsFrames() {
        const report = hang(hangInJs);
        assert(report.get_script_stack_unavailable_reason() === null,
            `reason: ${report.get_script_stack_unavailable_reason()}`);
        const stack = report.dup_stack();
        assertJsFrames(stack, 'stack');
        // After the engine's frames that run the callback; when none of
        // those is named (the hang was caught in JIT code), after the
        // innermost frame, JIT code with no module.
        const first = stack.findIndex(f => !/\+0x[0-9a-f]+/.test(f) && !/^0x/.test(f));
        assert(first > 0 && /^(libmozjs|0x)/.test(stack[first - 1]), `placed after ${stack[first - 1]}`);
        assertJsFrames(report.get_pseudo_stack(), 'pseudo stack');
        const doc = JSON.parse(report.to_json());
        assertJsFrames(doc.pseudoStack, 'JSON pseudo stack');
        assert(!('scriptStackUnavailable' in doc), 'scriptStackUnavailable in JSON');
        const ping = JSON.parse(new TextDecoder().decode(GLib.file_get_contents(hangMonitor.flush_ping())[1]));
        assertJsFrames(ping.payload.hangs[0].pseudoStack, 'ping');
    },

    testNativeCode() {
        const started = GLib.get_monotonic_time();
        const report = hang(hangInNativeCode);
        assert(GLib.get_monotonic_time() - started < 10000000, 'the program stalled');
        const reason = report.get_script_stack_unavailable_reason();
        assert(reason !== null && reason.includes('safe point'), `reason: ${reason}`);
        assert(report.get_stack_unavailable_reason() === null, 'no native stack');
        assert(report.dup_stack().some(f => f.includes('(g_usleep+0x')), 'g_usleep not in the stack');
        assert(JSON.parse(report.to_json()).scriptStackUnavailable === reason, 'JSON reason');
        // The late interrupt answered nothing and the next hang is named.
        assertJsFrames(hang(hangInJs).dup_stack(), 'stack after a timeout');
    },
};

runTests(tests, () => hangMonitor.stop());
