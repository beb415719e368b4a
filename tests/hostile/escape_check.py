#!/usr/bin/env python3
"""Hostile text for tests/hostile/escape.tsv: plants it in a results file, then checks each output kept it inert.

  escape_check.py plant SRC.json OUT.json   names, host, error messages and a counter-free text field get
                                            newlines, Markdown/HTML, CSV formulas, ESC and XML-forbidden characters
  escape_check.py markdown FILE             no planted heading, HTML tag or link; every table row has its header's columns
  escape_check.py csv FILE                  one record per row, equal column counts, no cell that starts a formula
  escape_check.py xml FILE                  an XML 1.0 parser (expat) accepts it
  escape_check.py terminal FILE             no control character but LF and TAB
  escape_check.py csp FILE                  the dashboard's CSP hashes its one inline script and style, no 'unsafe-inline'
Exit 0 when the check holds; 1 with the offending line otherwise.
"""
import base64
import csv
import hashlib
import json
import re
import sys
import xml.dom.minidom

# Each planted text tries one way out of its context.
HEADING = "\n## injected heading\n"
ROW = "\n| injected | row | x | x | x |\n"
HTML = "<img src=x onerror=alert(1)>[click](javascript:alert(1))"
PIPE = "a|b"
ESC = "\x1b[31mred\x1b]0;title\x07\x9b"
XML_BAD = "\ufffe\uffff\x01"
FORMULA = "=HYPERLINK(\"http://evil\",\"x\")"


def plant(src, out):
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    renames = {"BM_Timing": "BM_Timing" + HEADING + PIPE + ROW + HTML + ESC + XML_BAD,
               "BM_Faster": FORMULA + "/BM_Faster" + ESC,
               "BM_Fails": "@SUM(1)/BM_Fails"}
    # A training model name is one name component: no "/" in what is planted there.
    renames["train_step/net/"] = "train_step/net" + HEADING + PIPE + HTML + ESC + XML_BAD + "/"
    for b in doc["benchmarks"]:
        for key in ("name", "run_name"):
            for old, new in renames.items():
                if b.get(key, "").startswith(old):
                    b[key] = new + b[key][len(old):]
        if b.get("error_occurred"):
            b["error_message"] = "oom" + HEADING + HTML + ESC + XML_BAD + PIPE
    doc["context"]["host_name"] = "=cmd|' /C calc'!A0" + HEADING + ESC
    # json.dumps writes U+FFFE/U+FFFF and C1 as \u escapes: the loader decodes them into the names.
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def fail(what, line):
    print(f"{what}: {line!r}")
    sys.exit(1)


def check_markdown(path):
    text = open(path, encoding="utf-8").read()
    columns = None
    for line in text.split("\n"):
        if re.match(r"\s*#+ injected", line):
            fail("a planted heading", line)
        # Code spans show their text literally; outside them <, [ and ] must be escaped.
        prose = re.sub(r"(?<![\\`])(`+)(?!`).*?(?<!`)\1(?!`)", "", line)
        if re.search(r"(?<!\\)<img|(?<!\\)\]\(javascript", prose):
            fail("planted markup", line)
        if "\x1b" in line or "\x9b" in line or "\x07" in line:
            fail("a control character", line)
        if line.startswith("|"):
            cells = len(re.findall(r"(?<!\\)\|", line))
            if columns is None:
                columns = cells
            elif cells != columns:
                fail(f"a row with {cells - 1} columns in a table of {columns - 1}", line)
        else:
            columns = None
            if "injected" in line and not line.startswith("- ") and not line.startswith("**"):
                fail("planted text starts a line of its own", line)


def check_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    raw_lines = open(path, encoding="utf-8", newline="").read().count("\n")
    width = len(rows[0])
    for row in rows:
        if len(row) != width:
            fail(f"a row of {len(row)} cells, the header has {width}", row)
        for cell in row:
            if cell[:1] in ("=", "+", "@", "\t", "\r") or (cell[:1] == "-" and not re.fullmatch(r"-[0-9.e+-]*", cell)):
                fail("a cell a spreadsheet evaluates", cell)
    if not any("'=HYPERLINK" in cell for row in rows for cell in row):
        fail("the planted formula is not in the file, neutralised", path)
    if raw_lines < len(rows):
        fail("fewer lines than records", path)


def check_xml(path):
    xml.dom.minidom.parse(path)


def check_csp(path):
    """The dashboard's policy admits its one inline script and style by their SHA-256, and nothing inline else."""
    page = open(path, encoding="utf-8").read()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    if "unsafe-inline" in policy:
        fail("'unsafe-inline' in the policy", policy)
    for tag in ("script", "style"):
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S)
        if len(bodies) != 1 or re.search(rf"<{tag}[ >]", page.replace(f"<{tag}>", "", 1)):
            fail(f"not exactly one <{tag}>", len(bodies))
        digest = base64.b64encode(hashlib.sha256(bodies[0].encode("utf-8")).digest()).decode()
        if f"{tag}-src 'sha256-{digest}'" not in policy:
            fail(f"the <{tag}>'s hash sha256-{digest} is not the policy's", policy)


def check_terminal(path):
    for line in open(path, "rb").read().split(b"\n"):
        for byte in line:
            if byte < 0x20 and byte != 0x09 or byte == 0x7F:
                fail("a control character", line)
        if b"\xc2\x9b" in line or re.search(rb"[\x80-\xff]", line) and not _utf8(line):
            fail("a C1 control or a stray byte", line)


def _utf8(line):
    try:
        line.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "plant":
        plant(sys.argv[2], sys.argv[3])
    else:
        checks = {"markdown": check_markdown, "csv": check_csv, "xml": check_xml, "terminal": check_terminal, "csp": check_csp}
        checks[command](sys.argv[2])
