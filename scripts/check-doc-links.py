#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/**/*.md (and the explorer's
README): every [text](target) that is not a URL must name an existing file
or directory, and a #fragment must name a heading of the target file
(GitHub's anchor rule: lower case, punctuation dropped, spaces to dashes).
Plain-text mentions of docs/<name>.md must name an existing file too, and
a mention followed by a quoted section name (docs/Runtime.md, "Kernels")
must match the start of one of that file's headings.

Usage: python3 scripts/check-doc-links.py [repo root]; exit 1 on a broken link.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..'))
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'^\s*(```|~~~)')


def markdown_files():
    yield os.path.join(ROOT, 'README.md')
    yield os.path.join(ROOT, 'tools', 'pipeopt-explore', 'README.md')
    for base, _, files in os.walk(os.path.join(ROOT, 'docs')):
        for f in sorted(files):
            if f.endswith('.md'):
                yield os.path.join(base, f)


def anchors(path):
    out, fenced = set(), False
    for line in open(path, encoding='utf-8'):
        if FENCE.match(line):
            fenced = not fenced
        if fenced or not line.startswith('#'):
            continue
        text = line.lstrip('#').strip().lower()
        text = re.sub(r'[^\w\- ]', '', text)
        out.add(text.replace(' ', '-'))
    return out


def links(path):
    fenced = False
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r'`[^`]*`', '', line)  # code spans hold no links
        for m in LINK.finditer(line):
            yield n, m.group(1)


MENTION = re.compile(r'(?<![\w/.])(docs/[\w./-]+\.md)(?:,? \(?"([^"]+)")?')


def headings(path):
    out, fenced = [], False
    for line in open(path, encoding='utf-8'):
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith('#'):
            out.append(line.lstrip('#').strip().strip('`').lower())
    return out


bad = 0
checked = 0
for md in markdown_files():
    if not os.path.exists(md):
        continue
    for n, target in links(md):
        if re.match(r'^[a-z]+:', target):
            continue  # http:, https:, mailto:
        checked += 1
        path, _, frag = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        rel = os.path.relpath(md, ROOT)
        if not os.path.exists(dest):
            print(f'{rel}:{n}: {target}: no such file')
            bad += 1
        elif frag and dest.endswith('.md') and frag not in anchors(dest):
            print(f'{rel}:{n}: {target}: no heading #{frag}')
            bad += 1
    text = open(md, encoding='utf-8').read().replace('\n', ' ')
    text = re.sub(r' +', ' ', text)
    for m in MENTION.finditer(text):
        checked += 1
        dest = os.path.join(ROOT, m.group(1))
        rel = os.path.relpath(md, ROOT)
        if not os.path.exists(dest):
            print(f'{rel}: {m.group(1)}: no such file')
            bad += 1
        elif m.group(2):
            sect = m.group(2).lower().strip('`')
            if not any(h.startswith(sect) or sect in h for h in headings(dest)):
                print(f'{rel}: {m.group(1)} "{m.group(2)}": no such section')
                bad += 1
print(f'check-doc-links: {checked} relative links, {bad} broken')
sys.exit(1 if bad else 0)
