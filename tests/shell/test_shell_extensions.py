#!/usr/bin/python3
# test_shell_extensions.py: a real GNOME Shell 43 under "perfmon run" with
# four test extensions (issue 24): a CPU burner in a GLib timeout it makes
# itself, one that burns through the shell's JS helpers (imports.mainloop),
# a slow handler of a signal the shell emits (its own GSettings'
# "changed"), a promise-heavy one (async code awaiting resolved promises,
# burning 30 ms every 100 ms in GJS's promise job queue), a calm one. Each
# burner's CPU is charged to its add-on group within 15 % of what it
# measured itself (the promise burner's by sampling the JavaScript stack of
# long dispatches, said to be sampled); the slow handler's hang names its
# extension and its site; the calm one is charged about nothing. Skips only
# where gnome-shell is not installed.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gnome_shell_session import GnomeShellSession, gnome_shell_path  # noqa: E402

SECONDS = float(os.environ.get('PERFMON_SHELL_EXTENSIONS_SECONDS', '20'))

# Measures the CPU it burns with the scheduler's own count, and logs the
# running total after each burn ("perfmon-test UUID burnt US").
BURN = '''
const {GLib} = imports.gi;
const decoder = new TextDecoder();
function threadCpuNs() {
    const [, bytes] = GLib.file_get_contents('/proc/thread-self/schedstat');
    return Number(decoder.decode(bytes).split(' ')[0]);
}
let burnt = 0;
function burn(uuid, ms) {
    const start = threadCpuNs();
    let now = start;
    while (now - start < ms * 1e6)
        now = threadCpuNs();
    burnt += now - start;
    log(`perfmon-test ${uuid} burnt ${Math.round(burnt / 1000)}`);
}
'''


def extension(uuid, name, body):
    return {
        'metadata.json': json.dumps({'uuid': uuid, 'name': name, 'description': 'perfmon test',
                                     'shell-version': ['43']}),
        'extension.js': BURN + body,
    }


BURNER = extension('burner@perfmon.test', 'CPU Burner', '''
let id = 0;
function init() {}
function enable() {
    id = GLib.timeout_add(GLib.PRIORITY_DEFAULT, 200, () => {
        burn('burner@perfmon.test', 20);
        return GLib.SOURCE_CONTINUE;
    });
}
function disable() {
    GLib.source_remove(id);
}
''')

HELPER_BURNER = extension('helper-burner@perfmon.test', 'Helper Burner', '''
const Mainloop = imports.mainloop;
let id = 0;
function init() {}
function enable() {
    id = Mainloop.timeout_add(150, () => {
        burn('helper-burner@perfmon.test', 10);
        return true;
    });
}
function disable() {
    Mainloop.source_remove(id);
}
''')

SLOW_HANDLER = extension('slow-handler@perfmon.test', 'Slow Handler', '''
let handler = 0;
function init() {}
function enable() {
    handler = global.settings.connect('changed::favorite-apps', () => {
        burn('slow-handler@perfmon.test', 300);
    });
}
function disable() {
    global.settings.disconnect(handler);
}
''')

PROMISE_BURNER = extension('promise-burner@perfmon.test', 'Promise Burner', '''
let running = false;
let timer = 0;
function init() {}
function sleep(ms) {
    return new Promise(resolve => {
        timer = GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
            timer = 0;
            resolve();
            return GLib.SOURCE_REMOVE;
        });
    });
}
async function work() {
    while (running) {
        await sleep(70);
        for (let i = 0; i < 6 && running; i++) {
            await Promise.resolve();
            burn('promise-burner@perfmon.test', 5);
        }
    }
}
function enable() {
    running = true;
    work().catch(logError);
}
function disable() {
    running = false;
    if (timer !== 0)
        GLib.source_remove(timer);
}
''')

CALM = extension('calm@perfmon.test', 'Calm', '''
let id = 0;
function init() {}
function enable() {
    id = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, 1, () => GLib.SOURCE_CONTINUE);
}
function disable() {
    GLib.source_remove(id);
}
''')


@unittest.skipIf(gnome_shell_path() is None, 'gnome-shell is not installed')
class ShellExtensionsTest(unittest.TestCase):
    def test_extensions_charged_in_gnome_shell(self):
        tmp = tempfile.mkdtemp(prefix='perfmon-shell-ext-')
        summary = os.path.join(tmp, 'summary.json')
        with GnomeShellSession(perfmon_args=['--summary', summary, '--threshold', '250'],
                               extensions=[BURNER, HELPER_BURNER, SLOW_HANDLER, PROMISE_BURNER, CALM]) as shell:
            env = dict(shell.env, DBUS_SESSION_BUS_ADDRESS=shell.session_bus_address)
            time.sleep(SECONDS / 2)
            # The shell's own GSettings emits "changed" in the shell.
            for apps in ("['org.gnome.Nautilus.desktop']", "['firefox-esr.desktop']",
                         "['org.gnome.Terminal.desktop']", "['yelp.desktop']"):
                subprocess.run(['gsettings', 'set', 'org.gnome.shell', 'favorite-apps', apps],
                               env=env, check=True)
                time.sleep(2)
            time.sleep(SECONDS / 2)
            shell_pid = shell.shell_pid
            shell.stop()
        log = shell.log
        burnt = {}
        for uuid, us in re.findall(r'perfmon-test (\S+) burnt (\d+)', log):
            burnt[uuid] = int(us)
        with open(summary) as f:
            processes = json.load(f)['processes']
        process = [p for p in processes if p['pid'] == shell_pid][0]
        groups = process['snapshot']['groups']
        addons = {g['addon_id']: g for g in groups if g['kind'] == 'addon'}
        print('burnt (µs):', burnt)
        print('charged (µs):', {k: v['cpu_time'] for k, v in addons.items()})
        for uuid, name in (('burner@perfmon.test', 'CPU Burner'),
                           ('helper-burner@perfmon.test', 'Helper Burner'),
                           ('slow-handler@perfmon.test', 'Slow Handler')):
            self.assertIn(uuid, addons, (sorted(addons), log[-3000:]))
            self.assertEqual(addons[uuid]['name'], name)
            self.assertGreater(burnt.get(uuid, 0), 100000, burnt)
            self.assertLess(abs(addons[uuid]['cpu_time'] - burnt[uuid]), 0.15 * burnt[uuid],
                            '%s: charged %d µs, burnt %d µs' % (uuid, addons[uuid]['cpu_time'], burnt[uuid]))
        if 'calm@perfmon.test' in addons:
            self.assertLess(addons['calm@perfmon.test']['cpu_time'], 0.001 * SECONDS * 1e6)
            self.assertLess(addons['calm@perfmon.test'].get('sampled_cpu_time', 0), 0.001 * SECONDS * 1e6)

        # The promise burner: its CPU runs in promise jobs, charged by
        # sampling (its own member, sampled_cpu_time), within 15 %; what
        # an add-on is charged exactly is not sampled again.
        sampled = {k: v.get('sampled_cpu_time', 0) for k, v in addons.items()}
        print('sampled (µs):', sampled)
        uuid = 'promise-burner@perfmon.test'
        self.assertIn(uuid, addons, (sorted(addons), log[-3000:]))
        self.assertEqual(addons[uuid]['name'], 'Promise Burner')
        self.assertGreater(burnt.get(uuid, 0), 1000000, burnt)
        self.assertLess(abs(sampled[uuid] - burnt[uuid]), 0.15 * burnt[uuid],
                        '%s: sampled %d µs, burnt %d µs' % (uuid, sampled[uuid], burnt[uuid]))
        self.assertLess(addons[uuid]['cpu_time'], 0.15 * burnt[uuid])
        for other in ('burner@perfmon.test', 'helper-burner@perfmon.test', 'slow-handler@perfmon.test'):
            self.assertLess(sampled[other], 0.15 * burnt[other], sampled)

        # A hang is described as it was caught (its stack, labels and
        # annotations are taken at the threshold): one caught while the
        # slow handler ran names it. On a loaded machine a burner's
        # dispatch may be caught instead when a stretch starts with one
        # (the burners are light, and the threshold above them, to make
        # that rare; the summary keeps the first hangs only): at least one
        # of the four signals' hangs is caught in the handler.
        in_handler = [h for h in process['hangs']
                      if any(f.startswith('[add-on slow-handler@perfmon.test] ') for f in h['pseudoStack'])]
        brief = [(h['runnableName'], h['annotations'], h['pseudoStack'][:2]) for h in process['hangs']]
        self.assertTrue(in_handler, json.dumps(brief, indent=1))
        for hang in in_handler:
            self.assertIn(['Addon', 'slow-handler@perfmon.test'], hang['annotations'])
            self.assertRegex(hang['runnableName'], r'^enable/handler< \(slow-handler@perfmon\.test/extension\.js:\d+\)$')


if __name__ == '__main__':
    unittest.main()
