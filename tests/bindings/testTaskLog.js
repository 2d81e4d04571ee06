// SPDX-License-Identifier: LGPL-2.1-or-later
//
// PerfmonTaskLog through GJS, on a log that tests/write-task-log (the real
// tracer) records; its path is ARGV[0]. Run with GI_TYPELIB_PATH and
// LD_LIBRARY_PATH pointing at the build (tests/bindings/meson.build does
// that). Prints one line per test and exits with status 1 if any fails.
//
// write-task-log records idle (one) → thread pool (two) → invoke back (three)
// and prints the three ids in hex, one per line.
//
// Task ids are JS numbers here: exact while the writer's pid is below 2^21;
// above that the test skips (exit status 77).

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;

class AssertionError extends Error {}

function assert(condition, message) {
    if (!condition)
        throw new AssertionError(message || 'assertion failed');
}

const dir = GLib.dir_make_tmp('perfmon-task-log-gjs-XXXXXX');
const path = GLib.build_filenamev([dir, 'tasks.log']);
const [, out, , status] = GLib.spawn_sync(null, [ARGV[0], path], null, 0, null);
assert(status === 0, 'write-task-log failed');
const [one, two, three] = new TextDecoder().decode(out).trim().split('\n').map(id => Number.parseInt(id, 16));
const ids = {one, two, three};
if (![one, two, three].every(Number.isSafeInteger)) {
    print('# skip: task ids of this pid do not fit a JS number exactly');
    System.exit(77);
}
const log = Perfmon.TaskLog.new_from_file(path);

const tests = {
    relations() {
        const ancestors = log.find_ancestors(ids.three);
        assert(ancestors.length === 2 && ancestors[0] === ids.two && ancestors[1] === ids.one,
            `ancestors ${ancestors}`);
        const followers = log.find_followers(ids.one);
        assert(followers.length === 2 && followers[0] === ids.two && followers[1] === ids.three,
            `followers ${followers}`);
        assert(log.find_blockers(ids.two).length === 0, 'the pool thread ran nothing else');
    },
    task() {
        const task = log.find_task(ids.three);
        assert(task.get_name() === 'writer_step_three', task.get_name());
        assert(task.get_parent_id() === ids.two, 'parent');
        assert(task.get_source_event_type() === Perfmon.SourceEventType.KEY, 'source event');
        assert(log.find_task(ids.one).get_labels().join() === 'the chain starts', 'labels');
        assert(log.find_task(12) === null, 'unknown task found');
        assert(log.get_tasks().length === 3, 'three tasks');
    },
    chromeTrace() {
        const events = JSON.parse(log.to_chrome_trace()).traceEvents;
        const starts = events.filter(e => e.ph === 's').map(e => e.id).sort();
        const ends = events.filter(e => e.ph === 'f').map(e => e.id).sort();
        // Steps two and three: step one's dispatch, from no task, is left out.
        assert(starts.length === 2 && starts.join() === ends.join(), 'flow ids match');
        assert(events.filter(e => e.ph === 'X').length === 3, 'one slice per run');
    },
};

let failed = false;
for (const [name, test] of Object.entries(tests)) {
    try {
        test();
        print(`ok ${name}`);
    } catch (e) {
        failed = true;
        print(`FAIL ${name}: ${e}\n${e.stack}`);
    }
}
GLib.unlink(path);
GLib.rmdir(dir);
System.exit(failed ? 1 : 0);
