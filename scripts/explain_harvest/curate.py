#!/usr/bin/env python3
"""Adds harvested messages to the harvest's halves, keeping the split by project.

Usage: curate.py [--new-heldout] FIXTURE_DIR PART.jsonl...
  FIXTURE_DIR: tests/fixtures/explain (harvest_tuning.jsonl, harvest_heldout.jsonl, corpus_*.jsonl).
  PART.jsonl: new messages, one JSON object a line with text, kind, devices, argument, confidence, near_miss, source,
  project, note (the fields of the halves, without id), each labelled from its text alone.
A new message goes to the side its project is on; a project neither half has goes to the TUNING half (the held-out
half grows only by a fresh harvest split as round one was: whole projects, sides balanced, before any rule is tuned).
Dropped: texts either half or corpus_*.jsonl already holds, duplicates, other stacks' messages (TensorFlow, JAX,
Keras, Paddle, Julia, llama.cpp). Then run relabel.py on both halves.
--new-heldout: a fresh harvest becomes the held-out half. The held-out half so far, worn by being scored (and read,
once its successor exists), joins the tuning half; every message of the parts goes to the new held-out half, and a
part's project that any file already has is an error (whole repositories on one side). FIXTURE_DIR/harvest_next.jsonl
is such a part, kept unscored until it is used so (README.md there); remove it once it is.
"""
import json
import re
import sys

args = sys.argv[1:]
new_heldout = '--new-heldout' in args
args = [a for a in args if a != '--new-heldout']
fixtures, parts = args[0], args[1:]
halves = {side: [json.loads(l) for l in open(f'{fixtures}/harvest_{side}.jsonl') if l.strip()]
          for side in ('tuning', 'heldout')}
side_of = {e['project']: side for side, es in halves.items() for e in es}
seen = {e['text'].strip() for es in halves.values() for e in es}
if new_heldout:
    for part in parts:
        for line in filter(str.strip, open(part)):
            project = json.loads(line)['project'].strip().lower()
            if project in side_of:
                sys.exit(f"curate.py: {part}: project {project} is already in harvest_{side_of[project]}.jsonl")
    halves['tuning'] += halves['heldout']
    halves['heldout'] = []
    side_of = {}
for name in ('corpus_device', 'corpus_memory'):
    seen |= {json.loads(l)['text'].strip() for l in open(f'{fixtures}/{name}.jsonl') if l.strip()}
other_stack = re.compile(r'tensorflow|OOM when allocating tensor|/job:localhost|\bjax\b|jaxlib|\bkeras\b|paddle|'
                         r'CUDAPlace|cutorch|julia|\.jl\b|haskell|darknet|ggml|llama\.cpp|cortex\.cpp|chatglm\.cpp|'
                         r'ctranslate2', re.I)
ids = {e['id'] for es in halves.values() for e in es}
added = {'tuning': 0, 'heldout': 0}
for path in parts:
    for line in open(path):
        if not line.strip():
            continue
        e = json.loads(line)
        text = e['text'].strip()
        e['project'] = e['project'].strip().lower()
        if text in seen or other_stack.search(text) or other_stack.search(e['project']):
            continue
        seen.add(text)
        m = re.search(r'github\.com/([^/]+)/([^/]+)/(?:issues|pull|discussions)/(\d+)', e['source'])
        base = 'h-%s-%s' % (re.sub(r'[^a-z0-9]+', '', (m.group(2) if m else e['project']).lower())[:16],
                            m.group(3) if m else 'x')
        ident, k = base, 1
        while ident in ids:
            k += 1
            ident = f'{base}-{k}'
        ids.add(ident)
        side = 'heldout' if new_heldout else side_of.get(e['project'], 'tuning')
        halves[side].append({'id': ident, 'text': e['text'], 'kind': e['kind'], 'devices': e['devices'],
                             'argument': e['argument'], 'confidence': e['confidence'],
                             'near_miss': bool(e.get('near_miss')), 'source': e['source'], 'project': e['project'],
                             'note': e.get('note', '')})
        added[side] += 1
for side, es in halves.items():
    with open(f'{fixtures}/harvest_{side}.jsonl', 'w') as out:
        for e in es:
            out.write(json.dumps(e, ensure_ascii=False) + '\n')
print(f"added: {added['tuning']} to tuning, {added['heldout']} to held-out "
      f"(now {len(halves['tuning'])} and {len(halves['heldout'])})")
