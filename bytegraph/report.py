"""`python -m bytegraph report TRACE_DIR [-o OUT]`: tlparse's HTML report of a compile trace.

Runs the `tlparse` tool (pip install tlparse) on the newest `bytegraph_trace_*.log` in a
BYTEGRAPH_TRACE directory and prints where the report is. Each compiled frame in it links to
its step-by-step viewer page. (tlparse's own `--latest` option does not work in 0.4.3, hence
this command; `tlparse <file.log>` works as well.)
"""

import shutil
import subprocess
import sys
from pathlib import Path


def newest_trace(directory):
    logs = sorted(Path(directory).glob("bytegraph_trace_*.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None


def add_arguments(parser):
    parser.add_argument("trace_dir", help="the directory BYTEGRAPH_TRACE named")
    parser.add_argument("-o", "--out", default=None, help="where to write the report (default: TRACE_DIR/report)")
    parser.add_argument("--open", action="store_true", help="open the report in a browser")


def main(args):
    tlparse = shutil.which("tlparse") or shutil.which("tlparse", path=str(Path(sys.executable).parent))
    if tlparse is None:
        print("bytegraph report: the tlparse tool is not installed (pip install tlparse)", file=sys.stderr)
        return 2
    log = newest_trace(args.trace_dir)
    if log is None:
        print(f"bytegraph report: no bytegraph_trace_*.log in {args.trace_dir}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.trace_dir) / "report"
    command = [tlparse, str(log), "-o", str(out), "--overwrite"] + ([] if args.open else ["--no-browser"])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    print(f"{out / 'index.html'}")
    return 0
