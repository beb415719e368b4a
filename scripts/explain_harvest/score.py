#!/usr/bin/env python3
"""Scores `torchprobe explain --json` on .jsonl corpora as tests/explain_corpus_test.cpp does, and lists the misses.

Usage: score.py TORCHPROBE FILE.jsonl... [--misses] [--strict]
  right: the kind; for device_mismatch also the devices (in order) and the argument; for the memory kinds the
  confidence. --strict (corpus_device.jsonl): devices and argument for every kind, and the memory numbers.
  Near-misses (near_miss: true) must stay unknown. List misses only for a TUNING file: a held-out file's misses
  are not to be read (tests/fixtures/explain/README.md).
"""
import collections
import json
import subprocess
import sys

tp = sys.argv[1]
files = [a for a in sys.argv[2:] if not a.startswith('--')]
show = '--misses' in sys.argv
strict = '--strict' in sys.argv
total = right = nm_total = nm_wrong = 0
by_kind, by_kind_right = collections.Counter(), collections.Counter()
for path in files:
    for n, line in enumerate(open(path), 1):
        if not line.strip():
            continue
        e = json.loads(line)
        out = subprocess.run([tp, 'explain', '--json', '-'], input=e['text'], capture_output=True, text=True)
        try:
            d = json.loads(out.stdout)
        except ValueError:
            d = {'kind': 'ERROR', 'devices': [], 'argument': None}
        ok, why = d.get('kind') == e['kind'], ''
        if ok and (e['kind'] == 'device_mismatch' or (strict and 'confidence' not in e)):
            if d.get('devices') != e['devices'] or (d.get('argument') or None) != (e.get('argument') or None):
                ok, why = False, f"devices {d.get('devices')} argument {d.get('argument')}"
        if ok and e['kind'].startswith('out_of_memory'):
            if d.get('confidence') != e.get('confidence'):
                ok, why = False, f"confidence {d.get('confidence')}"
            for key in ('requested_bytes', 'total_bytes', 'free_bytes'):
                if strict and e.get(key) is not None and (d.get('memory') or {}).get(key) != e[key]:
                    ok, why = False, f"{key} {(d.get('memory') or {}).get(key)}"
        total += 1
        right += ok
        by_kind[e['kind']] += 1
        by_kind_right[e['kind']] += ok
        if e.get('near_miss'):
            nm_total += 1
            nm_wrong += d.get('kind') != 'unknown'
        if not ok and show:
            last = e['text'].strip().splitlines()[-1][:150] if e['text'].strip() else ''
            print(f"MISS {path}:{n} {e.get('id')} want {e['kind']} {e['devices']} {e.get('argument')} "
                  f"{e.get('confidence')} got {d.get('kind')} {why} | {last}")
print(f"{right}/{total} = {100.0 * right / max(total, 1):.1f}%  near-misses given a known kind: {nm_wrong}/{nm_total}")
for k in sorted(by_kind):
    print(f"  {k:20s} {by_kind_right[k]}/{by_kind[k]}")
