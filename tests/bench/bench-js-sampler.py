#!/usr/bin/python3
# bench-js-sampler.py: what sampling the JavaScript stack of long
# dispatches costs (issue 24, point 4; src/hang/perfmon-js-sampler.c) in a
# GJS program whose extension is busy in promise jobs: its async function
# sleeps 100 ms (a timeout of its own), then six continuations each do a
# fixed amount of work (about 5 ms, calls into GLib): 30 ms dispatches of
# GjsPromiseJobQueueSource, sampled every 5 ms after their first 10.
#
# Under perfmon run, sampling on (the extension installed where GNOME
# Shell's are, a known add-on) and off (PERFMON_RUN_NO_ADDONS=1: no add-on
# known, so no sample is taken; "on" also pays creation-site attribution
# for the extension's one timeout per 100 ms, a stack walk each), in
# interleaved rounds: the CPU time of the watched (main) thread and of the
# hang monitor's watchdog thread ("perfmon-hang"), read by the program
# from /proc/self/task before it quits, and the add-on's sampled CPU from
# the run's summary. Medians, the load quoted. Prints figures, asserts
# nothing. BENCH_SAMPLER_ROUNDS (5) rounds of BENCH_SAMPLER_SECONDS (8).
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROUNDS = int(os.environ.get('BENCH_SAMPLER_ROUNDS', '5'))
SECONDS = float(os.environ.get('BENCH_SAMPLER_SECONDS', '8'))
TOOL = os.environ.get('PERFMON_TOOL', 'perfmon')
UUID = 'busy-promises@perfmon.bench'

PROGRAM = """
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

const decoder = new TextDecoder();
const dir = `${GLib.get_user_data_dir()}/gnome-shell/extensions/%(uuid)s`;
const loop = new GLib.MainLoop(null, false);

// utime + stime of a thread of this process, s.
function threadCpu(tid) {
    const [, bytes] = GLib.file_get_contents(`/proc/self/task/${tid}/stat`);
    const text = decoder.decode(bytes);
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
}

function threads() {
    const cpu = {main: 0, watchdog: 0};
    const pid = decoder.decode(GLib.file_get_contents('/proc/self/stat')[1]).split(' ')[0];
    const tasks = Gio.File.new_for_path('/proc/self/task').enumerate_children('standard::name', 0, null);
    for (let info; (info = tasks.next_file(null)) !== null;) {
        const tid = info.get_name();
        const [, comm] = GLib.file_get_contents(`/proc/self/task/${tid}/comm`);
        const name = decoder.decode(comm).trim();
        if (tid === pid)
            cpu.main = threadCpu(tid);
        else if (name === 'perfmon-hang')
            cpu.watchdog = threadCpu(tid);
    }
    return cpu;
}

import(`file://${dir}/extension.js`).then(extension => {
    extension.enable();
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, %(ms)d, () => {
        try {
            print(JSON.stringify(threads()));
        } finally {
            loop.quit();
        }
        return GLib.SOURCE_REMOVE;
    });
}).catch(error => {
    logError(error);
    loop.quit();
});
loop.run();
"""

EXTENSION = """
import GLib from 'gi://GLib';

// Six promise jobs of fixed work each, the same on and off: calls into
// GLib, as an extension's code makes (the engine answers a sample at its
// next safe point, a function's entry or a loop's back edge).
function work1() {
    let x = 0;
    for (let i = 0; i < %(n)d; i++)
        x += GLib.get_monotonic_time() %% 7;
    return x;
}

function sleep(ms) {
    return new Promise(resolve => GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
        resolve();
        return GLib.SOURCE_REMOVE;
    }));
}

async function work() {
    for (;;) {
        // eslint-disable-next-line no-await-in-loop
        await sleep(100);
        for (let i = 0; i < 6; i++) {
            // eslint-disable-next-line no-await-in-loop
            await Promise.resolve();
            work1();
        }
    }
}

export function enable() {
    work().catch(logError);
}
"""


def load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def calibrate(tmp):
    """Iterations of work1()'s loop in about 5 ms of this machine's CPU."""
    script = os.path.join(tmp, 'calibrate.js')
    with open(script, 'w') as f:
        f.write("""
import GLib from 'gi://GLib';
// The extension's loop, in a function warmed up as the extension's is.
function work1(n) {
    let x = 0;
    for (let i = 0; i < n; i++)
        x += GLib.get_monotonic_time() % 7;
    return x;
}
const n = 200000;
let best = Infinity;
for (let i = 0; i < 40; i++) {
    const start = GLib.get_monotonic_time();
    work1(n / 20);
    best = Math.min(best, GLib.get_monotonic_time() - start);
}
print(Math.round(n / 20 * 5000 / best));
""")
    return int(subprocess.run(['gjs', '-m', script], stdout=subprocess.PIPE, universal_newlines=True,
                              check=True).stdout.split()[-1])


def one(tmp, sampling):
    summary = os.path.join(tmp, 'summary.json')
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(tmp, 'data'), PERFMON_RUN_NO_EXPORT='1')
    if not sampling:
        env['PERFMON_RUN_NO_ADDONS'] = '1'
    result = subprocess.run([TOOL, 'run', '--summary', summary, '--', 'gjs', '-m', os.path.join(tmp, 'main.js')],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                            timeout=SECONDS * 10 + 60)
    cpu = json.loads(result.stdout.strip().splitlines()[-1])
    with open(summary) as f:
        groups = json.load(f)['snapshot']['groups']
    cpu['sampled'] = sum(g.get('sampled_cpu_time', 0) for g in groups) / 1e6
    return cpu


def main():
    if shutil.which('gjs') is None:
        print('bench-js-sampler: gjs is not installed, nothing measured')
        return
    tmp = tempfile.mkdtemp(prefix='bench-js-sampler-')
    try:
        n = calibrate(tmp)
        extension = os.path.join(tmp, 'data', 'gnome-shell', 'extensions', UUID)
        os.makedirs(extension)
        with open(os.path.join(extension, 'extension.js'), 'w') as f:
            f.write(EXTENSION % {'n': n})
        with open(os.path.join(extension, 'metadata.json'), 'w') as f:
            json.dump({'uuid': UUID, 'name': 'Busy Promises', 'shell-version': ['43']}, f)
        with open(os.path.join(tmp, 'main.js'), 'w') as f:
            f.write(PROGRAM % {'uuid': UUID, 'ms': SECONDS * 1000})
        print('bench-js-sampler: %d rounds of %g s, %d iterations per 5 ms job, load before: %s'
              % (ROUNDS, SECONDS, n, load()))
        results = {True: [], False: []}
        for r in range(ROUNDS):
            for sampling in ((True, False) if r % 2 == 0 else (False, True)):
                results[sampling].append(one(tmp, sampling))
                figures = results[sampling][-1]
                print('  round %d, sampling %-3s: main thread %.2f s, watchdog %.2f s, sampled %.2f s (load %s)'
                      % (r + 1, 'on' if sampling else 'off', figures['main'], figures['watchdog'],
                         figures['sampled'], load()))
        for key, what in (('main', 'the watched thread'), ('watchdog', 'the watchdog thread')):
            on = statistics.median(x[key] for x in results[True])
            off = statistics.median(x[key] for x in results[False])
            print('%s: median %.3f s with sampling, %.3f s without: %+.3f s (%+.1f %%; %+.2f %% of a %g s run)'
                  % (what, on, off, on - off, 100 * (on - off) / off if off else 0, 100 * (on - off) / SECONDS,
                     SECONDS))
        print('sampled CPU with sampling: median %.2f s; load after: %s'
              % (statistics.median(x['sampled'] for x in results[True]), load()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
