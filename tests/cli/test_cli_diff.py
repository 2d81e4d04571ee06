#!/usr/bin/python3
# test_cli_diff.py: perfmon diff on snapshot files, good and bad
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import unittest

from clitest import CliTestCase


def group(gid, kind, name, cpu, ticks, durations, addon_id=None, window_id=0, blocked=0):
    return {'id': gid, 'kind': kind, 'name': name, 'window_id': window_id,
            'addon_id': addon_id, 'cpu_time': cpu, 'blocked_time': blocked,
            'ticks': ticks, 'durations': durations}


def snapshot(timestamp, groups, pid=4242):
    return {'version': 1, 'timestamp': timestamp, 'interval': 0, 'pid': pid,
            'process_name': 'janky', 'user_time': timestamp // 2,
            'system_time': 0, 'groups': groups}


OLDER = snapshot(1000000, [
    group(1, 'thread', 'main', 400000, 1000, [30, 10, 2, 0, 0, 0, 0, 0, 0, 0]),
    group(2, 'addon', 'Spell checker', 100000, 100, [20, 10, 2, 0, 0, 0, 0, 0, 0, 0],
          addon_id='spellcheck@example.org'),
    group(3, 'window', 'window 1: Inbox', 50000, 300, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
          window_id=1, blocked=1000),
])
NEWER = snapshot(3000000, [
    group(1, 'thread', 'main', 1400000, 1500, [80, 60, 40, 20, 5, 0, 0, 0, 0, 0]),
    group(2, 'addon', 'Spell checker', 900000, 150, [70, 60, 40, 20, 5, 0, 0, 0, 0, 0],
          addon_id='spellcheck@example.org'),
    group(3, 'window', 'window 1: Inbox', 60000, 400, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
          window_id=1, blocked=301000),
    # Appeared in between: counts from zero.
    group(4, 'addon', 'Sync agent', 5000, 10, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
          addon_id='sync@example.org'),
])


class DiffTest(CliTestCase):
    def write(self, name, value):
        path = self.path(name)
        with open(path, 'w') as f:
            f.write(value if isinstance(value, str) else json.dumps(value))
        return path

    def test_table(self):
        older = self.write('older.json', OLDER)
        newer = self.write('newer.json', NEWER)
        result = self.perfmon('diff', older, newer)
        self.assertExit(result, 0)
        lines = result.stdout.splitlines()
        self.assertIn('2.000 s', lines[0])
        rows = [l for l in lines if l.startswith(('main', 'Spell', 'window', 'Sync'))]
        # Sorted by CPU used in between, most first.
        self.assertEqual([r.split()[0] for r in rows], ['main', 'Spell', 'window', 'Sync'])
        spell = rows[1].split()
        self.assertEqual(spell[3:5], ['0.80', '0.00'])   # CPU s, blocked s
        self.assertEqual(spell[5:10], ['50', '50', '38', '20', '5'])
        for line in lines:
            self.assertLessEqual(len(line), 80, line)

    def long_name_snapshots(self):
        name = 'main thread (python3 1234567)'
        older = snapshot(1000000, [group(1, 'thread', name, 0, 0, [0] * 10)])
        newer = snapshot(2000000, [group(1, 'thread', name, 5000, 3, [1] + [0] * 9)])
        return name, self.write('older.json', older), self.write('newer.json', newer)

    def test_table_uses_the_width(self):
        name, older, newer = self.long_name_snapshots()
        # Not a terminal, no COLUMNS: nothing is cut.
        env = dict(self.env)
        env.pop('COLUMNS', None)
        result = self.perfmon('diff', older, newer, env=env)
        self.assertExit(result, 0)
        self.assertIn(name, result.stdout)
        # A wide terminal shows the whole name...
        env['COLUMNS'] = '150'
        result = self.perfmon('diff', older, newer, env=env)
        self.assertIn(name, result.stdout)
        self.assertTrue(all(len(l) < 150 for l in result.stdout.splitlines()), result.stdout)
        # ...an 80-column one abbreviates it in the middle to fit, keeping
        # its start and its end (the pid, which tells processes apart).
        env['COLUMNS'] = '80'
        result = self.perfmon('diff', older, newer, env=env)
        self.assertNotIn(name, result.stdout)
        self.assertRegex(result.stdout, r'\nmain thr\S*…\S* 1234567\) +thread')
        self.assertTrue(all(len(l) < 80 for l in result.stdout.splitlines()), result.stdout)

    def test_wall_clock_time(self):
        older = dict(OLDER, wall_time=1767225600000000)
        newer = dict(NEWER, wall_time=1767225602000000)   # 2026-01-01 00:00:02 UTC
        env = dict(self.env, TZ='UTC')
        result = self.perfmon('diff', self.write('o.json', older), self.write('n.json', newer), env=env)
        self.assertExit(result, 0)
        self.assertIn('taken at 2026-01-01 00:00:02', result.stdout)
        result = self.perfmon('diff', self.write('o.json', older), self.write('n.json', newer),
                              '--json', env=env)
        self.assertEqual(json.loads(result.stdout)['wall_time'], 1767225602000000)
        # Files from before wall times: nothing to show.
        result = self.perfmon('diff', self.write('o.json', OLDER), self.write('n.json', NEWER), env=env)
        self.assertNotIn('taken at', result.stdout)

    def test_histogram_says_cpu(self):
        _, older, newer = self.long_name_snapshots()
        result = self.perfmon('diff', older, newer)
        self.assertIn('over N ms of CPU', result.stdout)

    def test_json(self):
        older = self.write('older.json', OLDER)
        newer = self.write('newer.json', NEWER)
        result = self.perfmon('diff', '--json', older, newer)
        self.assertExit(result, 0)
        delta = json.loads(result.stdout)
        self.assertEqual(delta['interval'], 2000000)
        groups = {g['id']: g for g in delta['groups']}
        self.assertEqual(groups[2]['cpu_time'], 800000)
        self.assertEqual(groups[2]['durations'][:5], [50, 50, 38, 20, 5])
        self.assertEqual(groups[3]['blocked_time'], 300000)
        self.assertEqual(groups[4]['cpu_time'], 5000)
        # The output is itself a snapshot that diff can read.
        self.write('delta.json', result.stdout)

    def test_corrupt_file(self):
        older = self.write('older.json', OLDER)
        corrupt = self.write('corrupt.json', '{"version": 1, "timestamp": ')
        result = self.perfmon('diff', older, corrupt)
        self.assertExit(result, 1)
        self.assertTrue(result.stderr.startswith('perfmon: '), result.stderr)
        self.assertIn(corrupt, result.stderr)
        self.assertEqual(result.stdout, '')

    def test_bad_field_is_named(self):
        bad = json.loads(json.dumps(NEWER))
        bad['groups'][1]['cpu_time'] = 'lots'
        older = self.write('older.json', OLDER)
        path = self.write('bad-field.json', bad)
        result = self.perfmon('diff', older, path)
        self.assertExit(result, 1)
        self.assertIn(path, result.stderr)
        self.assertIn('cpu_time', result.stderr)

    def test_missing_file(self):
        older = self.write('older.json', OLDER)
        missing = self.path('missing.json')
        result = self.perfmon('diff', older, missing)
        self.assertExit(result, 1)
        self.assertIn(missing, result.stderr)

    def test_wrong_order(self):
        older = self.write('older.json', OLDER)
        newer = self.write('newer.json', NEWER)
        result = self.perfmon('diff', newer, older)
        self.assertExit(result, 1)
        self.assertIn('newer', result.stderr)

    def test_other_process(self):
        older = self.write('older.json', OLDER)
        other = json.loads(json.dumps(NEWER))
        other['pid'] = 99
        path = self.write('other.json', other)
        self.assertExit(self.perfmon('diff', older, path), 1)


if __name__ == '__main__':
    unittest.main(verbosity=2)
