"""Command line: `python -m bytegraph demo`."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="bytegraph")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="compile the seed examples and show what bytegraph did")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from bytegraph import demo

        return demo.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
