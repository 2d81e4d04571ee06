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
// Task ids pass 2^53, and JS numbers round them, for pids from 2^21 on
// (Debian's pid_max is 2^22): the log is rewritten as if a process of pid
// LARGE_PID had written it (write-task-log --pid), and the test goes
// through the exact API: ids as text, (pid, serial) pairs, tasks instead
// of ids. The id-number API is checked on a log of this pid when it fits.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Perfmon = '1';
const {GLib, Perfmon} = imports.gi;
const System = imports.system;
imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
const {assert, runTests} = imports.testRunner;

const LARGE_PID = 4000000;

const dir = GLib.dir_make_tmp('perfmon-task-log-gjs-XXXXXX');

function writeLog(name, extraArgs) {
    const path = GLib.build_filenamev([dir, name]);
    const [, out, , status] = GLib.spawn_sync(null, [ARGV[0], path, ...extraArgs], null, 0, null);
    assert(status === 0, 'write-task-log failed');
    const [one, two, three] = new TextDecoder().decode(out).trim().split('\n');
    return {path, log: Perfmon.TaskLog.new_from_file(path), one, two, three};
}

const large = writeLog('large.log', ['--pid', `${LARGE_PID}`]);
const own = writeLog('own.log', []);
const idsOf = tasks => tasks.map(t => t.dup_id_string()).join();

const tests = {
    largeIdsPassJsNumbers() {
        assert(!Number.isSafeInteger(Number.parseInt(large.one, 16)), 'the ids of the large pid pass 2^53');
    },
    exactLookups() {
        const {log, three} = large;
        const task = log.find_task_by_id_string(three);
        assert(task !== null, `no task ${three}`);
        assert(task.dup_id_string() === three, task.dup_id_string());
        assert(task.get_process() === LARGE_PID, `process ${task.get_process()}`);
        assert(task.get_serial() === Number.parseInt(three.slice(-8), 16), `serial ${task.get_serial()}`);
        const bySerial = log.find_task_by_serial(LARGE_PID, task.get_serial());
        assert(bySerial !== null && bySerial.dup_id_string() === three, 'by (pid, serial)');
        assert(log.find_task_by_serial(LARGE_PID, 0xfffffff0) === null, 'unknown serial');
        for (const bad of ['', '0x', '0x0x12', '-1', ' 0x12', '0x12 ', 'task', `${three}0000000000`])
            assert(log.find_task_by_id_string(bad) === null, `"${bad}" found`);
    },
    relations() {
        const {log, one, two, three} = large;
        const first = log.find_task_by_id_string(one);
        const second = log.find_task_by_id_string(two);
        const third = log.find_task_by_id_string(three);
        assert(idsOf(log.get_ancestor_tasks(third)) === [two, one].join(), 'ancestors');
        assert(idsOf(log.get_follower_tasks(first)) === [two, three].join(), 'followers');
        assert(log.get_blocker_tasks(second).length === 0, 'the pool thread ran nothing else');
        assert(log.get_parent(third).dup_id_string() === two, 'parent');
        assert(third.dup_parent_id_string() === two, 'parent id');
        assert(log.get_parent(first) === null, 'a root has no parent');
    },
    task() {
        const {log, one, three} = large;
        const task = log.find_task_by_id_string(three);
        assert(task.get_name() === 'writer_step_three', task.get_name());
        assert(task.get_source_event_type() === Perfmon.SourceEventType.KEY, 'source event');
        assert(log.find_task_by_id_string(one).get_labels().join() === 'the chain starts', 'labels');
        assert(log.get_tasks().length === 3, 'three tasks');
    },
    numberIds() {
        // The id-number API, exact for this process's pid below 2^21.
        const [one, two, three] = [own.one, own.two, own.three].map(id => Number.parseInt(id, 16));
        if (![one, two, three].every(Number.isSafeInteger)) {
            print('# this pid is 2^21 or more: number ids not checked (the exact API is)');
            return;
        }
        const ancestors = own.log.find_ancestors(three);
        assert(ancestors.length === 2 && ancestors[0] === two && ancestors[1] === one, `ancestors ${ancestors}`);
        const followers = own.log.find_followers(one);
        assert(followers.length === 2 && followers[0] === two && followers[1] === three, `followers ${followers}`);
        assert(own.log.find_task(three).get_parent_id() === two, 'parent');
        assert(own.log.find_task(12) === null, 'unknown task found');
    },
    chromeTrace() {
        const events = JSON.parse(large.log.to_chrome_trace()).traceEvents;
        const starts = events.filter(e => e.ph === 's').map(e => e.id).sort();
        const ends = events.filter(e => e.ph === 'f').map(e => e.id).sort();
        // Steps two and three: step one's dispatch, from no task, is left out.
        assert(starts.length === 2 && starts.join() === ends.join(), 'flow ids match');
        assert(events.filter(e => e.ph === 'X').length === 3, 'one slice per run');
    },
};

runTests(tests, () => {
    GLib.unlink(large.path);
    GLib.unlink(own.path);
    GLib.rmdir(dir);
});
