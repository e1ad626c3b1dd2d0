#!/usr/bin/env python3
"""Run a folder of apply-patch cases against `wield patch apply` and print one
line per case, then a summary.

    scripts/patch-conformance.py CORPUS [--wield PATH] [--only SUBSTRING] [-v]

A case is a folder holding `input/` (the files before), `patch.txt` (`{WS}`
stands for the workspace's absolute path), `expected/` (the exact tree after,
when the case compares trees) and `case.json`:

    expect     "ok" (exit 0) or "fail" (a refusal: exit 1, workspace untouched)
    checks     [{"stdout_contains": S}, {"exists": P}, {"absent": P},
                {"contains": [P, S]}, {"not_contains": [P, S]}, {"eq": [P, S]}]
    run_as     a user to run wield as (needs root; the workspace is given to it)
    readonly   files made 0444 before the run
    note       shown with -v

Cases are found at any depth. Where wield differs from a peer on purpose
(the README's patch section lists each case and why), the case is reported
as DIFFERS rather than FAIL. The exit status is 0 when every other case
passed. This is a development aid: the test suite keeps its own fixtures.
"""

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


# Cases where wield differs on purpose, by case name, with the reason (the
# README's patch section says the same).
DIFFERS_ON_PURPOSE = {
    "scenario_015_failure_after_partial_success_leaves_changes": "all or nothing",
    "tool_uses_crlf_for_new_trailing_newline": "untouched last line keeps having no newline",
    "tool_preserves_untouched_mixed_line_endings": "a replacing line takes the replaced line's ending",
    "seek_trim_match_ignores_leading_and_trailing_whitespace": "uneven indentation offset refused",
    "parse_multiple_patch_blocks": "one patch per call",
    "seekseq_empty_pattern_at_start": "a context-free addition is appended, as Codex does",
    "parse_add_file": "files end with a newline, as Codex writes them",
    "parse_add_multiline": "files end with a newline, as Codex writes them",
    "parse_multi_hunk": "files end with a newline, as Codex writes them",
    "parse_update_write_paths": "files end with a newline, as Codex writes them",
}


def tree(root: Path) -> dict:
    """Every file and directory under root, with its bytes or a marker."""
    out = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".wield"]
        base = Path(dirpath)
        for d in dirnames:
            out[str((base / d).relative_to(root)) + "/"] = None
        for f in filenames:
            p = base / f
            rel = str(p.relative_to(root))
            out[rel] = ("-> " + os.readlink(p)).encode() if p.is_symlink() else p.read_bytes()
    return out


def files_only(t: dict) -> dict:
    """The files of a tree and the directories that hold no file (empty
    directories cannot be told apart from removed ones otherwise)."""
    keep = {k: v for k, v in t.items() if not k.endswith("/")}
    for d in (k for k in t if k.endswith("/")):
        if not any(k.startswith(d) for k in keep):
            keep[d] = None
    return keep


def diff(want: dict, got: dict) -> str:
    lines = []
    for k in sorted(set(want) | set(got)):
        if k not in got:
            lines.append(f"missing {k}")
        elif k not in want:
            lines.append(f"unexpected {k}")
        elif want[k] != got[k]:
            lines.append(f"differs {k}: want {want[k]!r} got {got[k]!r}")
    return "; ".join(lines)


def run_case(case: Path, wield: str, scratch: Path) -> tuple[bool, str]:
    meta = json.loads((case / "case.json").read_text())
    base = Path(tempfile.mkdtemp(dir=scratch))
    ws, home, tmp = base / "ws", base / "home", base / "tmp"
    if (case / "input").is_dir():
        shutil.copytree(case / "input", ws, symlinks=True)
    else:
        ws.mkdir()
    home.mkdir()
    tmp.mkdir()
    patch = (case / "patch.txt").read_text().replace("{WS}", str(ws))
    patch_file = base / "patch.txt"
    patch_file.write_text(patch)
    for rel in meta.get("readonly", []):
        os.chmod(ws / rel, 0o444)

    cmd = [wield, "-C", str(ws), "patch", "apply", str(patch_file)]
    user = meta.get("run_as")
    if user:
        if os.geteuid() != 0:
            return False, f"needs root to run as {user}"
        pw = pwd.getpwnam(user)
        os.chmod(base, 0o755)
        for dirpath, dirnames, filenames in os.walk(base):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, pw.pw_uid, pw.pw_gid)
        cmd = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", *cmd]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TMPDIR": str(tmp),
        "RUST_BACKTRACE": "0",
    }
    before = tree(ws)
    proc = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    stdout, stderr = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    after = tree(ws)
    said = (stdout + stderr).strip().replace("\n", " | ")

    if meta["expect"] == "fail":
        if proc.returncode != 1:
            return False, f"expected a refusal, got exit {proc.returncode}: {said}"
        if before != after:
            return False, f"refused but changed the workspace: {diff(before, after)}"
        return True, f"refused: {said}"

    if proc.returncode != 0:
        return False, f"exit {proc.returncode}: {said}"
    if (case / "expected").is_dir():
        d = diff(files_only(tree(case / "expected")), files_only(after))
        if d:
            return False, d
    for check in meta.get("checks", []):
        (kind, arg), = check.items()
        if kind == "stdout_contains":
            ok = arg in stdout
        elif kind == "exists":
            ok = (ws / arg).exists()
        elif kind == "absent":
            ok = not (ws / arg).exists()
        elif kind == "eq":
            path, text = arg
            ok = (ws / path).is_file() and (ws / path).read_text(errors="replace") == text
        elif kind in ("contains", "not_contains"):
            path, text = arg
            p = ws / path
            present = p.is_file() and text in p.read_text(errors="replace")
            ok = present if kind == "contains" else not present
        else:
            return False, f"unknown check {kind}"
        if not ok:
            return False, f"check failed: {check}"
    return True, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--wield", default=None, help="the wield binary (default: target/debug/wield)")
    ap.add_argument("--only", default="", help="run only cases whose path contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="show what wield said and each case's note")
    args = ap.parse_args()

    root = Path(__file__).resolve().parent.parent
    wield = args.wield or str(root / "target" / "debug" / "wield")
    if not os.access(wield, os.X_OK):
        print(f"no wield binary at {wield}: run `cargo build -p wield-cli` or pass --wield", file=sys.stderr)
        return 2
    cases = sorted(p.parent for p in args.corpus.rglob("case.json") if args.only in str(p.parent))
    if not cases:
        print(f"no cases under {args.corpus}", file=sys.stderr)
        return 2

    failed, differs = [], []
    with tempfile.TemporaryDirectory(prefix="wield-patch-conformance-") as scratch:
        os.chmod(scratch, 0o755)
        for case in cases:
            name = str(case.relative_to(args.corpus))
            try:
                ok, detail = run_case(case, wield, Path(scratch))
            except Exception as e:  # a broken case is reported, not fatal
                ok, detail = False, f"runner error: {e}"
            why = DIFFERS_ON_PURPOSE.get(case.name)
            if ok:
                status = "PASS"
            elif why:
                status = "DIFFERS"
                differs.append(f"{name} ({why})")
            else:
                status = "FAIL"
                failed.append(name)
            if status == "FAIL" or args.verbose:
                print(f"{status} {name}: {detail[:600]}")
                note = json.loads((case / "case.json").read_text()).get("note")
                if note:
                    print(f"     note: {note}")
            else:
                print(f"{status} {name}" + (f": {why}" if status == "DIFFERS" else ""))
    passed = len(cases) - len(failed) - len(differs)
    print(f"\n{passed} of {len(cases)} passed, {len(differs)} differ on purpose, {len(failed)} failed")
    for name in failed:
        print(f"  failed: {name}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
