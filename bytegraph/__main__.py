"""Command line:

    python -m bytegraph demo                      the guided tour of the seeds' examples
    python -m bytegraph run script.py [args]      a torch.compile program, compiled by bytegraph
    python -m bytegraph trace script.py:fn --args "(torch.ones(3),)" --html out.html
    python -m bytegraph report TRACE_DIR [-o OUT] tlparse's report of a BYTEGRAPH_TRACE directory
"""

import argparse
import sys

from bytegraph.viewer import cli as trace_cli


def main(argv=None):
    parser = argparse.ArgumentParser(prog="bytegraph")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="compile the seed examples and show what bytegraph did")
    demo_parser.add_argument("--no-inductor", action="store_true", help="skip the inductor section (slow)")
    demo_parser.add_argument("--bytecode", action="store_true",
                             help="also show the full disassembly of every generated function")
    trace_cli.add_arguments(commands.add_parser("trace", help="trace a function step by step into a page or slides"))
    from bytegraph import report, run

    run.add_arguments(commands.add_parser(
        "run", help="run a script that uses torch.compile, compiled by bytegraph (like `coverage run`)"))
    report.add_arguments(commands.add_parser(
        "report", help="turn the newest compile trace in a BYTEGRAPH_TRACE directory into tlparse's report"))
    args = parser.parse_args(argv)
    if args.command == "demo":
        from bytegraph import demo

        return demo.main((["--no-inductor"] if args.no_inductor else []) + (["--bytecode"] if args.bytecode else []))
    if args.command == "trace":
        return trace_cli.main(args)
    if args.command == "run":
        return run.main(args)
    if args.command == "report":
        return report.main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
