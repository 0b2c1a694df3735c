"""Command line: `python -m bytegraph demo`, `python -m bytegraph trace script.py:fn --html out.html`."""

import argparse
import sys

from bytegraph.viewer import cli as trace_cli


def main(argv=None):
    parser = argparse.ArgumentParser(prog="bytegraph")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="compile the seed examples and show what bytegraph did")
    demo_parser.add_argument("--no-inductor", action="store_true", help="skip the inductor section (slow)")
    trace_cli.add_arguments(commands.add_parser("trace", help="trace a function step by step into a page or slides"))
    args = parser.parse_args(argv)
    if args.command == "demo":
        from bytegraph import demo

        return demo.main(["--no-inductor"] if args.no_inductor else [])
    if args.command == "trace":
        return trace_cli.main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
