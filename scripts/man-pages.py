#!/usr/bin/env python3
"""Man pages (man(7)) of parsa and its subcommands from their --help texts.

Usage: scripts/man-pages.py PARSA_BIN OUT_DIR VERSION COMMAND...

Writes OUT_DIR/parsa.1 (from `parsa help`) and OUT_DIR/parsa-COMMAND.1
(from `parsa COMMAND --help`) for each COMMAND.  The help texts have one
shape (usage lines, paragraphs, "heading:" lines, options as
"  -x, --name ARG   text" with continuation lines indented further), so
the pages are always in step with the program; `make install` installs
them and tests/install/test_install.py renders them with `man -l`.
"""
import os
import re
import subprocess
import sys

OPT = re.compile(r"^  (-\S.*?)(?:\s{2,}(.*))?$")
CMD = re.compile(r"^  (\S+(?: \S+)*?)\s{2,}(.*)$")


def esc(s):
    """Text safe for roff: backslashes, leading dots and quotes, dashes."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def page(name, section_title, version, text, see_also, summary=None):
    lines = text.rstrip("\n").split("\n")
    out = ['.TH %s 1 "" "parsa %s" "%s"' % (name.upper(), version, section_title)]
    i = 0
    usage = []
    while i < len(lines) and (lines[i].startswith("usage:") or
                              (usage and lines[i].startswith(" "))):
        usage.append(lines[i][len("usage:"):].strip() if lines[i].startswith("usage:")
                     else lines[i].strip())
        i += 1
    desc, body = [], []
    while i < len(lines) and not (lines[i].endswith(":") and not lines[i].startswith(" ")) \
            and not lines[i].startswith("  "):
        desc.append(lines[i])
        i += 1
    body = lines[i:]
    if summary is None:
        summary = " ".join(l.strip() for l in desc if l.strip()).split(". ")[0]
        summary = summary.split(": ")[0]
    out.append(".SH NAME")
    out.append("%s \\- %s" % (esc(name), esc(summary.rstrip("."))))
    out.append(".SH SYNOPSIS")
    for u in usage:
        out.append(".B %s" % esc(u.split(" ", 1)[0]))
        if " " in u:
            out[-1] = ".B %s\n%s" % (esc(u.split(" ", 1)[0]), esc(u.split(" ", 1)[1]))
        out.append(".br")
    out.append(".SH DESCRIPTION")
    para = []
    for l in desc + [""]:
        if l.strip():
            para.append(esc(l.strip()))
        elif para:
            out.append(".PP")
            out.extend(para)
            para = []
    if body:
        out.append(".SH OPTIONS" if name != "parsa" else ".SH COMMANDS")
    cur = None
    for l in body:
        if not l.strip():
            cur = None
            continue
        if not l.startswith(" ") and l.endswith(":"):
            out.append(".SS %s" % esc(l[:-1]))
            cur = None
            continue
        if not l.startswith(" "):
            out.append(".PP")
            out.append(esc(l.strip()))
            cur = None
            continue
        m = OPT.match(l) if l.startswith("  -") else None
        if m is None and name == "parsa" and not l.startswith("    "):
            m = CMD.match(l)
        if m:
            out.append(".TP")
            out.append(".B %s" % esc(m.group(1).strip()))
            cur = []
            if m.group(2):
                out.append(esc(m.group(2).strip()))
            continue
        out.append(esc(l.strip()))
    out.append(".SH SEE ALSO")
    out.append(", ".join("\\fB%s\\fR(1)" % esc(s) for s in see_also))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    parsa, outdir, version, cmds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(outdir, exist_ok=True)

    def helptext(args):
        p = subprocess.run([parsa] + args, capture_output=True, text=True)
        if p.returncode != 0 or not p.stdout.strip():
            sys.exit("man-pages: %s %s failed: %s" % (parsa, " ".join(args), p.stderr))
        return p.stdout

    top = helptext(["help"])
    # the command table's one-line helps name the subcommands' pages
    oneline = {}
    for l in top.split("\n"):
        m = CMD.match(l)
        if m:
            oneline[m.group(1).split()[0]] = m.group(2).strip()
    pages = {"parsa": page("parsa", "parsa manual", version, top,
                           ["parsa-" + c for c in cmds])}
    for c in cmds:
        pages["parsa-" + c] = page("parsa-" + c, "parsa manual", version,
                                   helptext([c, "--help"]),
                                   ["parsa"] + ["parsa-" + o for o in cmds if o != c],
                                   oneline.get(c))
    for name, text in pages.items():
        with open(os.path.join(outdir, name + ".1"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
